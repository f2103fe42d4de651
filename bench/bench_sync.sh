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
set -uo pipefail
B=${1:?usage: bench/bench_sync.sh BUILD_DIR [WORKER_COUNTS...]}
shift
COUNTS=("$@")
[ ${#COUNTS[@]} -gt 0 ] || COUNTS=(2 4)
ASYNC_STEPS=${BENCH_ASYNC_STEPS:-100000}
SYNC_STEPS=${BENCH_SYNC_STEPS:-15000}
HERE=$(cd "$(dirname "$0")/.." && pwd)

# Prefixes each line with the time it arrived (bash's $EPOCHREALTIME: no process per line).
stamp() {
    local line
    while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done
}

# run_one WORKERS ISSYNC STEPS: prints "global_rate per_worker_rates... | sum | dropped" or
# "FAILED ...".
run_one() {
    local nw=$1 sync=$2 steps=$3 logdir out rc
    logdir=$(mktemp -d "${TMPDIR:-/tmp}/rill-bench-sync.XXXXXX")
    out=$(mktemp "${TMPDIR:-/tmp}/rill-bench-sync-out.XXXXXX")
    RILL_LOCAL_WORKERS=$nw RILL_LOCAL_PS=1 "$HERE/scripts/local_cluster.sh" "$B" \
        --issync="$sync" --train_steps="$steps" --steps_to_validate=$((steps / 40)) \
        --logdir="$logdir" --save_model_secs=1000000 2>&1 | stamp >"$out"
    rc=${PIPESTATUS[0]}
    rm -rf "$logdir"
    if [ "$rc" -ne 0 ]; then
        echo "FAILED (local_cluster.sh exited $rc; its last lines:)"
        tail -5 "$out" | cut -d' ' -f2- | sed 's/^/    /'
        rm -f "$out"
        return
    fi
    awk -v nw="$nw" '
        # "<t> [worker i] /job:worker/task:i: training..." marks the start of a worker loop.
        $2 == "[worker" && / training/ && !/final:/ { start[$3] = $1 }
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
printf '%-8s %-6s %14s  %-34s %10s %8s\n' workers mode "global steps/s" "per-worker steps/s (own loop)" \
    "sum" "dropped"
declare -A G
for nw in "${COUNTS[@]}"; do
    for mode in async sync; do
        if [ "$mode" = sync ]; then r=$(run_one "$nw" 1 "$SYNC_STEPS"); else r=$(run_one "$nw" 0 "$ASYNC_STEPS"); fi
        case "$r" in
        FAILED*)
            printf '%-8s %-6s %s\n' "$nw" "$mode" "$r"
            G[$nw$mode]=-1
            continue
            ;;
        esac
        g=${r%% *}
        rest=${r#* }
        per=${rest%% | *}
        dropped=${rest##* | }
        rest=${rest% | *}
        sum=${rest##* | }
        G[$nw$mode]=$g
        printf '%-8s %-6s %14s  %-34s %10s %8s\n' "$nw" "$mode" "$g" "$(echo $per | tr ' ' ',')" \
            "$sum" "$dropped"
    done
done
for nw in "${COUNTS[@]}"; do
    a=${G[${nw}async]} s=${G[${nw}sync]}
    if [ "${a:--1}" -gt 0 ] && [ "${s:--1}" -gt 0 ]; then
        awk -v nw="$nw" -v a="$a" -v s="$s" 'BEGIN {
            printf "%s workers: sync/async global steps/s = %.3f (%.1fx fewer steps/s in sync)\n", nw, s / a, a / s }'
    fi
done
echo "global: steps/s of the cluster while all workers train (from the step lines' timestamps)."
echo "sync: one global step = one gradient from each worker, so global ~= each worker's rate;"
echo "async: each worker step is a global step, so global ~= the sum of the workers."
echo "sum: the workers' steps/s added up (in sync mode: the gradients/s the ps takes in)."
echo "dropped: worker steps whose gradients SyncReplicasOptimizer dropped as stale (sync only)."
