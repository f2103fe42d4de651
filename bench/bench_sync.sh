#!/usr/bin/env bash
# bench_sync.sh - the seed's model (examples/distributed) trained synchronously and
# asynchronously on a local cluster, 1 ps with 2 and with 4 workers, in one run.
#
#   bench/bench_sync.sh BUILD_DIR [WORKER_COUNTS...]     (default: 2 4)
#
# Each configuration runs scripts/local_cluster.sh once with a fresh --logdir (a logdir holding a
# checkpoint would make the Supervisor go on from it and train nothing) and --save_model_secs
# large, so no periodic checkpoint falls inside the timing. Steps: $BENCH_ASYNC_STEPS (default
# 100000) asynchronous, $BENCH_SYNC_STEPS (default 15000) synchronous, each several seconds here.
#
# Reported per configuration:
#   global    global steps per second of the cluster, from the timestamps of the "step: N" lines
#             (every N/40 steps) printed while all workers were training: (N_last - N_first) /
#             (t_last - t_first). Startup (workers join at different times) is left out.
#   workers   each worker's own "final: ... R steps/s" (its steps / its training loop's time;
#             in async mode the chief also trains alone while the others start) and their sum;
#   dropped   the workers' steps whose gradients came too late and were dropped (sync mode).
# In sync mode a global step takes one gradient from every worker, so global ~= per worker; in
# async mode every worker step is a global step, so global ~= the sum of the workers.
#
# TensorFlow baseline, in the same run: bench/baseline_distributed.py (the seed's distributed.py
# on tf.compat.v1: tf.train.Server over gRPC, replica_device_setter, SyncReplicasOptimizer,
# Supervisor) as every task of the same local_cluster.sh cluster, right after rill's run of each
# configuration, measured the same way; then rill/TF of the global steps/s. Steps:
# $BENCH_TF_ASYNC_STEPS (default 2000) and $BENCH_TF_SYNC_STEPS (default 800), several seconds
# each here; a TF run that takes over $BENCH_TF_TIMEOUT s (default 240, startup included) is
# stopped and reported as failed. Python: $BENCH_PY (default .venv/bin/python); without
# tensorflow there the TF part is skipped with a note; BENCH_TF=0 skips it too.
set -uo pipefail
B=${1:?usage: bench/bench_sync.sh BUILD_DIR [WORKER_COUNTS...]}
shift
COUNTS=("$@")
[ ${#COUNTS[@]} -gt 0 ] || COUNTS=(2 4)
ASYNC_STEPS=${BENCH_ASYNC_STEPS:-100000}
SYNC_STEPS=${BENCH_SYNC_STEPS:-15000}
HERE=$(cd "$(dirname "$0")/.." && pwd)
TF_ASYNC_STEPS=${BENCH_TF_ASYNC_STEPS:-2000}
TF_SYNC_STEPS=${BENCH_TF_SYNC_STEPS:-800}
TF_TIMEOUT=${BENCH_TF_TIMEOUT:-240}
PY=${BENCH_PY:-$HERE/.venv/bin/python}

# The TF baseline runs through local_cluster.sh as RILL_LOCAL_PROGRAM=tf_distributed of a build
# dir of its own that holds only a wrapper (examples/tf_distributed) around the Python program.
TFB=""
if [ "${BENCH_TF:-1}" = 0 ]; then
    TF_NOTE="skipped: BENCH_TF=0"
elif [ ! -x "$PY" ]; then
    TF_NOTE="skipped: no $PY (make venv installs tensorflow-cpu into .venv)"
elif ! "$PY" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("tensorflow") is None)' 2>/dev/null; then
    TF_NOTE="skipped: no tensorflow in $PY (make venv installs tensorflow-cpu)"
else
    TFB=$(mktemp -d "${TMPDIR:-/tmp}/rill-bench-sync-tf.XXXXXX")
    trap 'rm -rf "$TFB"' EXIT
    mkdir "$TFB/examples"
    printf '#!/bin/sh\nTF_CPP_MIN_LOG_LEVEL=3 exec "%s" -u "%s" "$@"\n' "$PY" \
        "$HERE/bench/baseline_distributed.py" >"$TFB/examples/tf_distributed"
    chmod +x "$TFB/examples/tf_distributed"
    TF_NOTE="tensorflow $("$PY" -c 'import importlib.metadata as m; print(m.version("tensorflow-cpu"))' 2>/dev/null ||
        "$PY" -c 'import importlib.metadata as m; print(m.version("tensorflow"))' 2>/dev/null)"
fi

# Prefixes each line with the time it arrived (bash's $EPOCHREALTIME: no process per line).
stamp() {
    local line
    while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done
}

# run_one WORKERS ISSYNC STEPS [tf]: prints "global_rate per_worker_rates... | sum | dropped" or
# "FAILED ...". With "tf": the TensorFlow baseline, stopped after $TF_TIMEOUT s.
run_one() {
    local nw=$1 sync=$2 steps=$3 impl=${4:-rill} logdir out rc
    local bdir=$B prog=distributed limit=()
    if [ "$impl" = tf ]; then bdir=$TFB prog=tf_distributed limit=(timeout -k 10 "$TF_TIMEOUT"); fi
    logdir=$(mktemp -d "${TMPDIR:-/tmp}/rill-bench-sync.XXXXXX")
    out=$(mktemp "${TMPDIR:-/tmp}/rill-bench-sync-out.XXXXXX")
    RILL_LOCAL_WORKERS=$nw RILL_LOCAL_PS=1 RILL_LOCAL_PROGRAM=$prog "${limit[@]}" \
        "$HERE/scripts/local_cluster.sh" "$bdir" \
        --issync="$sync" --train_steps="$steps" --steps_to_validate=$((steps / 40)) \
        --logdir="$logdir" --save_model_secs=1000000 2>&1 | stamp >"$out"
    rc=${PIPESTATUS[0]}
    rm -rf "$logdir"
    if [ "$rc" -ne 0 ]; then
        if [ "$impl" = tf ] && [ "$rc" -eq 124 ]; then
            echo "FAILED (timed out after $TF_TIMEOUT s; its last lines:)"
        else
            echo "FAILED (local_cluster.sh exited $rc; its last lines:)"
        fi
        tail -5 "$out" | cut -d' ' -f2- | sed 's/^/    /'
        rm -f "$out"
        return
    fi
    awk -v nw="$nw" '
        # "<t> [worker i] /job:worker/task:i: training..." marks the start of a worker loop.
        $2 == "[worker" && /: training/ && !/final:/ { start[$3] = $1 }
        $2 == "[worker" && $4 == "step:" { n = $5 + 0; t[++ns] = $1; s[ns] = n }
        $2 == "[worker" && $4 == "final:" {
            w = $3; sub(/\]/, "", w)
            rate[w] = $(NF - 1); nf++
            for (i = 5; i < NF; i++) if ($i == "dropped") { d = $(i + 1); sub(/,/, "", d); dropped += d }
        }
        END {
            all = 0
            for (k in start) if (start[k] > all) all = start[k]
            n1 = -1
            for (i = 1; i <= ns; i++) {
                if (t[i] < all) continue
                if (n1 < 0 || s[i] < n1 || (s[i] == n1 && t[i] < t1)) { n1 = s[i]; t1 = t[i] }
                if (s[i] > n2 || (s[i] == n2 && t[i] > t2)) { n2 = s[i]; t2 = t[i] }
            }
            g = (n1 >= 0 && t2 > t1) ? (n2 - n1) / (t2 - t1) : -1
            line = sprintf("%.0f", g); sum = 0
            for (i = 0; i < nw; i++) { line = line " " rate[i]; sum += rate[i] }
            printf "%s | %d | %d\n", line, sum, dropped
        }' "$out"
    rm -f "$out"
}

echo "bench_sync: examples/distributed (the seed's model) via scripts/local_cluster.sh, 1 ps;"
echo "  async ${ASYNC_STEPS} steps, sync ${SYNC_STEPS} steps; $(nproc) cores for all tasks"
if [ -n "$TFB" ]; then
    echo "  TF baseline: bench/baseline_distributed.py on $TF_NOTE (gRPC), same cluster layout;"
    echo "  async ${TF_ASYNC_STEPS} steps, sync ${TF_SYNC_STEPS} steps, each right after rill's run"
    IMPLS=(rill tf)
else
    echo "  TF baseline $TF_NOTE"
    IMPLS=(rill)
fi
printf '%-5s %-8s %-6s %14s  %-34s %10s %8s\n' impl workers mode "global steps/s" \
    "per-worker steps/s (own loop)" "sum" "dropped"
declare -A G
for nw in "${COUNTS[@]}"; do
    for mode in async sync; do
        for impl in "${IMPLS[@]}"; do
            issync=0 steps=$ASYNC_STEPS
            [ "$mode" = sync ] && issync=1 steps=$SYNC_STEPS
            if [ "$impl" = tf ]; then
                steps=$TF_ASYNC_STEPS
                [ "$mode" = sync ] && steps=$TF_SYNC_STEPS
            fi
            r=$(run_one "$nw" "$issync" "$steps" "$impl")
            case "$r" in
            FAILED*)
                printf '%-5s %-8s %-6s %s\n' "$impl" "$nw" "$mode" "$r"
                G[$impl$nw$mode]=-1
                continue
                ;;
            esac
            g=${r%% *}
            rest=${r#* }
            per=${rest%% | *}
            dropped=${rest##* | }
            rest=${rest% | *}
            sum=${rest##* | }
            [ "$impl" = tf ] && dropped=n/a
            [ "$mode" = async ] && dropped=-
            G[$impl$nw$mode]=$g
            printf '%-5s %-8s %-6s %14s  %-34s %10s %8s\n' "$impl" "$nw" "$mode" "$g" \
                "$(echo $per | tr ' ' ',')" "$sum" "$dropped"
        done
    done
done
for nw in "${COUNTS[@]}"; do
    for impl in "${IMPLS[@]}"; do
        a=${G[$impl${nw}async]} s=${G[$impl${nw}sync]}
        if [ "${a:--1}" -gt 0 ] && [ "${s:--1}" -gt 0 ]; then
            awk -v nw="$nw" -v a="$a" -v s="$s" -v impl="$impl" 'BEGIN {
                printf "%-4s %s workers: sync/async global steps/s = %.3f (%.1fx fewer steps/s in sync)\n",
                    impl, nw, s / a, a / s }'
        else
            printf '%-4s %s workers: sync/async: no ratio (a run failed)\n' "$impl" "$nw"
        fi
    done
done
if [ -n "$TFB" ]; then
    for nw in "${COUNTS[@]}"; do
        for mode in async sync; do
            r=${G[rill$nw$mode]} t=${G[tf$nw$mode]}
            if [ "${r:--1}" -gt 0 ] && [ "${t:--1}" -gt 0 ]; then
                awk -v nw="$nw" -v m="$mode" -v r="$r" -v t="$t" 'BEGIN {
                    printf "rill/TF %s workers %-5s: %s / %s global steps/s = %.1fx\n", nw, m, r, t, r / t }'
            else
                printf 'rill/TF %s workers %-5s: no ratio (a run failed)\n' "$nw" "$mode"
            fi
        done
    done
fi
echo "global: steps/s of the cluster while all workers train (from the step lines' timestamps)."
echo "sync: one global step = one gradient from each worker, so global ~= each worker's rate;"
echo "async: each worker step is a global step, so global ~= the sum of the workers."
echo "sum: the workers' steps/s added up (in sync mode: the gradients/s the ps takes in)."
echo "dropped: worker steps whose gradients SyncReplicasOptimizer dropped as stale (sync only;"
echo "  n/a for TF, whose accumulators drop stale gradients without counting them)."
echo "tf: the seed's distributed.py on tf.compat.v1 (gRPC, Supervisor, SyncReplicasOptimizer),"
echo "  per step a feed of one (x, y) and a fetch of [train_op, loss, global_step] from Python."
