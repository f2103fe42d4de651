#!/usr/bin/env bash
# Issue 19's benchmark bars, in one run: the tf.layers MLP and CNN on rill against the same models
# written by hand on rill (tf.Variable + tf.matmul / tf.nn.conv2d), against TensorFlow running the
# very same tf.layers program (tf.compat.v1), and against PyTorch (eager, the same model, batch and
# optimizer); then the tf.data pipeline against feed_dict for the MLP (bench/bench_data_pipeline.py).
# Training steps/s on Fashion-MNIST (Debian's dataset-fashion-mnist), Adam, batch 128 (MLP) and 64
# (CNN). Every process measures one variant (5 chunks, their median); the variants run
# interleaved, round after round (A B C D A B C D ...), and the table gives the medians over the
# rounds, so that a noisy neighbour on a shared machine hits them all alike.
#
#   scripts/bench_layers.sh [ROUNDS]     (default 5; `make bench-layers`)
# The environment:
#   RILL_PY   a python that imports rill (default .venv/bin/python, after `make python`; for a
#             development tree: RILL_PY=/work/venv215/bin/python PYTHONPATH=build/pyroot)
#   TF_PY     a python with TensorFlow 2.15 (default .venv/bin/python)
#   TORCH_PY  a python with PyTorch (default .venv/bin/python, after `make bench-baselines`)
#   BENCH_THREADS  threads for every framework (default: nproc)
#   TORCH_WAIT     PyTorch's OMP_WAIT_POLICY (default PASSIVE: with libgomp's default spinning, a
#                  2-thread PyTorch step on a 2-CPU machine that other processes also use ran 10x
#                  slower than with PASSIVE; TensorFlow and rill run with their defaults)
# A framework that cannot be imported is reported as skipped.
set -u
ROUNDS=${1:-5}
RILL_PY=${RILL_PY:-.venv/bin/python}
TF_PY=${TF_PY:-.venv/bin/python}
TORCH_PY=${TORCH_PY:-.venv/bin/python}
T=${BENCH_THREADS:-$(nproc)}
TORCH_WAIT=${TORCH_WAIT:-PASSIVE}
here=$(cd "$(dirname "$0")/.." && pwd)
prog=$here/bench/bench_layers.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, $T threads each, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$TF_PY" -c 'import tensorflow as tf; print("   TensorFlow", tf.__version__)' 2>/dev/null | grep -v '^$' || echo "   TensorFlow: not importable by $TF_PY"
"$TORCH_PY" -c 'import torch; print("   PyTorch", torch.__version__)' 2>/dev/null || echo "   PyTorch: not importable by $TORCH_PY"

run() { # model variant-name -> appends "model variant steps/s" (or skipped) to rows
    local m=$1 v=$2 out
    case $v in
        rill-layers) out=$("$RILL_PY" -m rill.run "$prog" "$m" layers "" "$T" 2>"$tmp/err") ;;
        rill-hand) out=$("$RILL_PY" -m rill.run "$prog" "$m" hand "" "$T" 2>"$tmp/err") ;;
        tf-layers) out=$("$TF_PY" "$prog" "$m" layers "" "$T" 2>"$tmp/err") ;;
        tf-hand) out=$("$TF_PY" "$prog" "$m" hand "" "$T" 2>"$tmp/err") ;;
        torch) out=$(OMP_WAIT_POLICY=$TORCH_WAIT "$TORCH_PY" "$prog" "$m" torch "" "$T" 2>"$tmp/err") ;;
    esac
    local r
    r=$(echo "$out" | sed -n 's/.*steps_per_s=\([0-9.]*\).*/\1/p')
    if [ -n "$r" ]; then
        echo "$m $v $r" >>"$tmp/rows"
        printf '   %s %-12s %8.2f steps/s\n' "$m" "$v" "$r"
    else
        echo "$m $v skipped" >>"$tmp/rows"
        printf '   %s %-12s skipped: %s\n' "$m" "$v" "$(echo "$out" "$(tail -1 "$tmp/err")" | tail -1)"
    fi
}

# An empty STEPS argument means the program's default: bench_layers.py reads "" as that.
VARIANTS="rill-layers rill-hand tf-layers tf-hand torch"
: >"$tmp/rows"
for r in $(seq "$ROUNDS"); do
    echo "== round $r of $ROUNDS"
    for m in mlp cnn; do
        for v in $VARIANTS; do run "$m" "$v"; done
    done
done

echo "== medians over $ROUNDS rounds: training steps/s (MLP batch 128, CNN batch 64, Adam)"
awk -v vs="$VARIANTS" '
    function median(k,    n, i, j, t, a) {
        n = split(vals[k], a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    $3 != "skipped" { vals[$1 " " $2] = vals[$1 " " $2] " " $3 }
    END {
        nv = split(vs, v, " ")
        printf "   %-5s", "model"; for (i = 1; i <= nv; i++) printf " %12s", v[i]; printf "\n"
        split("mlp cnn", ms, " ")
        for (mi = 1; mi <= 2; mi++) {
            m = ms[mi]; printf "   %-5s", m
            for (i = 1; i <= nv; i++) {
                k = m " " v[i]
                if (k in vals) { med[k] = median(k); printf " %12.2f", med[k] } else printf " %12s", "skipped"
            }
            printf "\n"
        }
        for (mi = 1; mi <= 2; mi++) {
            m = ms[mi]; r = m " rill-layers"
            if (!(r in med)) continue
            for (i = 2; i <= nv; i++) {
                k = m " " v[i]
                if (k in med && med[k] > 0)
                    printf "ratio: %s steps/s rill-layers/%s %.2f (%.2f vs %.2f)\n", toupper(m), v[i], med[r] / med[k], med[r], med[k]
            }
        }
    }' "$tmp/rows"

# The layer API's cost without the noise between processes: both models in one rill process,
# timed in alternating chunks (bench_layers.py MODEL ab).
echo "== tf.layers against hand-written in one process (rill, 15 alternating chunks of each)"
for m in mlp cnn; do
    "$RILL_PY" -m rill.run "$prog" "$m" ab "" "$T" 2>"$tmp/err" | grep ratio | sed 's/^RESULT /   /' ||
        echo "   $m: failed: $(tail -1 "$tmp/err")"
done

# The tf.data pipeline against feed_dict, on rill: ABAB inside one process (two sessions).
echo "== tf.data against feed_dict (MLP, batch 128, SGD), rill"
"$RILL_PY" "$here/bench/bench_data_pipeline.py" 2>&1 | tail -4 | sed 's/^/   /'
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit 0
