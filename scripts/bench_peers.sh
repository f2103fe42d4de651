#!/usr/bin/env bash
# Issue 10's models in rill and in the peers, back to back on the same cores and thread counts:
# the MLP training step (784-512-512-10, batch 256, SGD), the Fashion-MNIST CNN's training
# throughput (batch 100, Adam) and the seed's step, with the ratios rill / peer and rill / the
# GEMM floor measured in the same run (oneDNN, the fastest library bench_gemm found). TensorFlow
# and PyTorch come from the project's virtualenv (`make bench-baselines` adds PyTorch); a missing
# one is reported as skipped. $1 is the build directory.
#
# Then each Fashion-MNIST model trained to the end in each framework, rill's recipe
# (examples/fashion_mnist_main.h: batch 100, Adam lr 0.001 x 0.7 after each epoch, the same
# shuffled batches from --seed=1; bench/baseline_train.py for the peers), with the training
# examples/s and the final test accuracies side by side: speed must not come from computing
# something else. The environment:
#   BENCH_EPOCHS     epochs to train (default 5, the recipe's length; 0 leaves the part out)
#   BENCH_MAX_STEPS  at most this many training steps per epoch (default 0: the whole epoch, 600
#                    steps); for short trials only, their accuracies are not the recipe's
set -u
B=${1:-build}
PY=.venv/bin/python
T=$(nproc)
echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $T cores, $(date -u +%Y-%m-%dT%H:%MZ)"
"$B/bin/rill-info" | sed 's/^/   /'
mlp=$("$B/bench/bench_mlp_step" 40 | grep RESULT)
echo "rill:  $mlp"
rill_mlp=$(echo "$mlp" | sed 's/.*mlp_step_ms=\([0-9.]*\).*/\1/')
floor=$(echo "$mlp" | sed 's/.*gemm_floor_ms=\([0-9.]*\).*/\1/')
# Two short epochs, the second timed: warm, as the baselines time theirs after warm-up steps (the
# first steps make oneDNN's kernels and fault in the step's memory).
cnn=$("$B/examples/fashion_mnist_cnn" --epochs=2 --max_steps_per_epoch=40 --seed=1 --eval_batch=1000 | grep '^epoch 2')
rill_cnn=$(echo "$cnn" | sed 's/.* \([0-9]*\) examples\/s$/\1/')
echo "rill:  cnn_examples_per_s=$rill_cnn ($cnn)"
seed=$("$B/bench/bench_seed_step" 200000 | grep RESULT)
rill_seed=$(echo "$seed" | sed 's/.*seed_step_us=\([0-9.]*\).*/\1/')
echo "rill:  $seed"
# The same step from Python: TF's own program on rill.compat.v1 (make python installs it).
pyseed=$("$PY" bench/baseline_seed_step.py 20000 rill 2>/dev/null | sed -n 's/.*rill_python_seed_step_us=\([0-9.]*\).*/\1/p')
[ -n "$pyseed" ] && echo "rill:  python_seed_step_us=$pyseed (the C step: $rill_seed us)"
# A 16 MiB feed from Python (fed in place on rill) on each framework, with its floors.
for fw in rill tf torch; do
    "$PY" bench/baseline_feed.py "$fw" 16 2>/dev/null | grep -E 'RESULT .*_feed_16mib|skipped' | sed "s/^/$fw: /"
done
for fw in tf torch; do
    [ -x "$PY" ] || { echo "$fw: skipped (no $PY: make venv)"; continue; }
    out=$("$PY" bench/baseline_models.py "$fw" "$T" 40 30 2>/dev/null | grep -E 'RESULT|skipped')
    echo "$fw:   $out" | sed "2,\$s/^/      /"
    m=$(echo "$out" | sed -n 's/.*mlp_step_ms=\([0-9.]*\).*/\1/p')
    c=$(echo "$out" | sed -n 's/.*cnn_examples_per_s=\([0-9.]*\).*/\1/p')
    s=$("$PY" bench/baseline_seed_step.py 20000 "$fw" 2>/dev/null | sed -n 's/.*step_us=\([0-9.]*\).*/\1/p' | head -1)
    [ -n "$m" ] && awk -v r="$rill_mlp" -v p="$m" -v f="$floor" -v fw="$fw" 'BEGIN {
        printf "ratio: MLP step rill/%s %.2f in time (rill %.2f ms, %s %.2f ms); rill/GEMM floor %.2f\n", fw, r / p, r, fw, p, r / f }'
    [ -n "$c" ] && awk -v r="$rill_cnn" -v p="$c" -v fw="$fw" 'BEGIN {
        printf "ratio: CNN examples/s rill/%s %.2f (rill %d, %s %d)\n", fw, r / p, r, fw, p }'
    [ -n "$s" ] && awk -v r="$rill_seed" -v p="$s" -v fw="$fw" 'BEGIN {
        printf "ratio: seed step %s/rill %.0fx (rill %.2f us, %s %.1f us)\n", fw, p / r, r, fw, p }'
    [ -n "$s" ] && [ -n "$pyseed" ] && awk -v r="$pyseed" -v p="$s" -v fw="$fw" 'BEGIN {
        printf "ratio: seed step from Python %s/rill %.0fx (rill %.2f us, %s %.1f us)\n", fw, p / r, r, fw, p }'
done

# --- Train to the end: rill, TensorFlow, PyTorch, model by model, back to back.
EPOCHS=${BENCH_EPOCHS:-5}
MAXS=${BENCH_MAX_STEPS:-0}
case "$EPOCHS$MAXS" in *[!0-9]*) echo "BENCH_EPOCHS and BENCH_MAX_STEPS must be integers >= 0" >&2; exit 2 ;; esac
[ "$EPOCHS" -gt 0 ] || { echo "== training to the end: left out (BENCH_EPOCHS=0)"; exit 0; }
cap=""
steps="600 steps (the whole training set)"
if [ "$MAXS" -gt 0 ]; then
    cap="--max_steps_per_epoch=$MAXS"
    steps="at most $MAXS steps (BENCH_MAX_STEPS: a trial, not the recipe's accuracy)"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "== trained to the end: $EPOCHS epoch(s) of $steps, batch 100, Adam lr 0.001 x 0.7 per epoch, seed 1, $T threads"
: >"$tmp/rows" # model framework examples/s accuracy, or model framework skipped|failed
# Training examples/s over all epochs (each epoch's examples over its time: with equal epochs
# the harmonic mean of the epochs' rates, baseline_train.py's examples_per_s) and the last
# epoch's test accuracy, from rill's epoch lines.
rill_row() {
    awk -v m="$1" '/^epoch [0-9]+:.*test accuracy/ {
        n++; inv += 1 / $(NF - 1); a = $0; sub(/.*test accuracy /, "", a); sub(/%.*/, "", a); acc = a }
        END { if (n) printf "%s rill %.0f %s\n", m, n / inv, acc; else printf "%s rill failed\n", m }' "$2"
}
for model in mlp cnn; do
    prog=fashion_mnist
    [ "$model" = cnn ] && prog=fashion_mnist_cnn
    # shellcheck disable=SC2086
    "$B/examples/$prog" --epochs="$EPOCHS" --seed=1 $cap 2>"$tmp/err" | tee "$tmp/out" | sed "s/^/   rill  $model: /"
    rill_row "$model" "$tmp/out" >>"$tmp/rows"
    tail -1 "$tmp/rows" | grep -q ' failed$' && tail -3 "$tmp/err" | sed "s/^/   rill  $model: /"
    for fw in tf torch; do
        if [ ! -x "$PY" ]; then
            echo "   $fw: skipped (no $PY: make venv)"
            echo "$model $fw skipped" >>"$tmp/rows"
            continue
        fi
        BENCH_MAX_STEPS=$MAXS "$PY" -u bench/baseline_train.py "$fw" "$model" "$T" "$EPOCHS" 1 2>"$tmp/err" |
            tee "$tmp/out" | grep -v '^RESULT' | sed "s/^/   $(printf '%-5s' "$fw") $model: /"
        r=$(grep '^RESULT' "$tmp/out")
        if [ -n "$r" ]; then
            echo "$r" | sed 's/.*model=\([a-z]*\).*examples_per_s=\([0-9.]*\).*test_accuracy=\([0-9.]*\).*/\1 '"$fw"' \2 \3/' >>"$tmp/rows"
        elif grep -q skipped "$tmp/out"; then
            echo "$model $fw skipped" >>"$tmp/rows"
        else
            echo "$model $fw failed" >>"$tmp/rows"
            tail -3 "$tmp/err" | sed "s/^/   $fw $model: /"
        fi
    done
done
echo "== side by side: training examples/s (all epochs' examples over their training time) and the last epoch's test accuracy"
awk '{ k = $1 " " $2; eps[k] = $3; acc[k] = $4 }
    END {
        printf "   %-5s %-9s %12s %10s %12s %16s\n", "model", "framework", "examples/s", "test acc", "rill/peer", "acc rill-peer"
        split("mlp cnn", ms, " "); split("rill tf torch", fs, " ")
        for (i = 1; i <= 2; i++) for (j = 1; j <= 3; j++) {
            m = ms[i]; f = fs[j]; k = m " " f; r = m " rill"
            if (!(k in eps)) continue
            if (eps[k] == "skipped" || eps[k] == "failed") { printf "   %-5s %-9s %12s\n", m, f, eps[k]; continue }
            if (f == "rill" || eps[r] == "skipped" || eps[r] == "failed")
                printf "   %-5s %-9s %12.0f %9.2f%%\n", m, f, eps[k], acc[k]
            else
                printf "   %-5s %-9s %12.0f %9.2f%% %12.2f %+10.2f points\n", m, f, eps[k], acc[k], eps[r] / eps[k], acc[r] - acc[k]
        }
        for (i = 1; i <= 2; i++) for (j = 2; j <= 3; j++) {
            m = ms[i]; f = fs[j]; k = m " " f; r = m " rill"
            if (!(k in eps) || eps[k] !~ /^[0-9.]+$/ || eps[r] !~ /^[0-9.]+$/ || eps[k] == 0) continue
            printf "ratio: %s epoch examples/s rill/%s %.2f (rill %d, %s %d; test accuracy rill %.2f%%, %s %.2f%%)\n",
                toupper(m), f, eps[r] / eps[k], eps[r], f, eps[k], acc[r], f, acc[k]
        }
    }' "$tmp/rows"
exit 0
