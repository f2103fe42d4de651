#!/usr/bin/env bash
# local_cluster.sh - the seed's distributed.py on one machine: 1 ps and 2 workers on loopback.
#
#   scripts/local_cluster.sh BUILD_DIR [flags for the workers...]
#   scripts/local_cluster.sh build --learning_rate=0.01 --train_steps=20000 --steps_to_validate=2000
#
# Starts BUILD_DIR/examples/distributed (or $RILL_LOCAL_PROGRAM) as every task of a cluster on
# free loopback ports (ports in 20000-32000 that nothing answers on; started again on fresh ports
# when one turns out to be taken), streams the tasks' output prefixed with their names, waits for
# the workers, then for the ps tasks, which exit by themselves once every worker told them it
# finished (a ps still up 10 s later, or after a worker failed, is stopped with SIGTERM and that
# is said), and prints each worker's final line. Exits 0 only when every worker exited 0 and the
# ps exited 0; the logs are kept (and their folder printed) when something failed.
#
# Environment: RILL_LOCAL_PS (ps tasks, default 1), RILL_LOCAL_WORKERS (workers, default 2),
# RILL_LOCAL_HOST (default 127.0.0.1), RILL_LOCAL_PROGRAM (the example every task runs, default
# distributed; e.g. fashion_mnist: scripts/local_cluster.sh build --epochs=5). The program must
# take the cluster flags and print a line starting "final:" when a worker is done.
set -u
B=${1:?usage: scripts/local_cluster.sh BUILD_DIR [flags for the workers...]}
shift
P="$B/examples/${RILL_LOCAL_PROGRAM:-distributed}"
NPS=${RILL_LOCAL_PS:-1}
NW=${RILL_LOCAL_WORKERS:-2}
HOST=${RILL_LOCAL_HOST:-127.0.0.1}
say() { echo "local_cluster: $*"; }

[ -x "$P" ] || { say "$P not found: build first (make build)"; exit 2; }
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/rill-local-cluster.XXXXXX") || exit 2

pids=()   # every task still running
tails=()  # the streams of their output
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${tails[@]}"; do kill "$p" 2>/dev/null; done
}
trap 'cleanup; say "interrupted; logs in $LOGS"; exit 130' INT TERM

# Sets PORT to a port in 20000-32000 that nothing listens on and that this cluster has not
# taken yet (a connect through bash's /dev/tcp succeeds only when something listens).
taken=" "
free_port() {
    local p
    for _ in $(seq 200); do
        p=$((20000 + (RANDOM * 32768 + RANDOM) % 12001))
        case "$taken" in *" $p "*) continue ;; esac
        if ! (exec 3<>"/dev/tcp/$HOST/$p") 2>/dev/null; then
            taken="$taken$p "
            PORT=$p
            return 0
        fi
    done
    say "no free port on $HOST in 20000-32000"
    exit 2
}

# Starts task $2 of job $1 with its output in $LOGS/<job><index>.log and streamed with a prefix.
start_task() {
    local job=$1 i=$2 log="$LOGS/$1$2.log"
    shift 2
    : >"$log" # before the stream below opens it
    "$P" --ps_hosts="$ps_hosts" --worker_hosts="$worker_hosts" --job_name="$job" \
        --task_index="$i" "$@" >"$log" 2>&1 &
    local pid=$!
    pids+=("$pid")
    tail -n +1 -f --pid="$pid" "$log" 2>/dev/null | sed -u "s/^/[$job $i] /" &
    tails+=($!)
}

start=$(date +%s)
for attempt in 1 2 3 4 5; do
    ps_hosts="" worker_hosts="" taken=" " pids=() tails=()
    for i in $(seq 0 $((NPS - 1))); do
        free_port
        ps_hosts="$ps_hosts${ps_hosts:+,}$HOST:$PORT"
    done
    for i in $(seq 0 $((NW - 1))); do
        free_port
        worker_hosts="$worker_hosts${worker_hosts:+,}$HOST:$PORT"
    done
    say "ps $ps_hosts, workers $worker_hosts (logs in $LOGS)"
    for i in $(seq 0 $((NPS - 1))); do start_task ps "$i"; done
    for i in $(seq 0 $((NW - 1))); do start_task worker "$i" "$@"; done
    # A port taken between the probe and the bind shows within a moment: start again elsewhere.
    sleep 0.5
    if ! grep -qs "already in use" "$LOGS"/*.log; then break; fi
    say "a port was taken meanwhile; starting again on other ports"
    cleanup
    wait 2>/dev/null
    rm -f "$LOGS"/*.log
    [ "$attempt" -eq 5 ] && { say "no free ports after 5 attempts"; exit 1; }
done

failed=0
declare -A wrc
for i in $(seq 0 $((NW - 1))); do
    wait "${pids[$((NPS + i))]}"
    wrc[$i]=$?
    [ "${wrc[$i]}" -eq 0 ] || failed=1
done
# Waits up to $2 seconds for process $1 to exit.
wait_gone() {
    for _ in $(seq $(($2 * 10))); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
    ! kill -0 "$1" 2>/dev/null
}
if [ $failed -eq 0 ]; then
    say "workers done; waiting for the ps tasks to exit"
else
    say "a worker failed; stopping the ps tasks (SIGTERM)"
fi
psrc=0
for i in $(seq 0 $((NPS - 1))); do
    pid=${pids[$i]}
    # Every worker that finished told the ps: it exits by itself (a program that does not tell
    # it, or a failed worker, leaves it serving: SIGTERM ends its join).
    if [ $failed -ne 0 ] || ! wait_gone "$pid" 10; then
        [ $failed -eq 0 ] && say "ps $i still up 10 s after the workers finished; stopping it (SIGTERM)"
        kill -TERM "$pid" 2>/dev/null
        if ! wait_gone "$pid" 10; then
            say "ps $i did not stop within 10 s of SIGTERM; killing it"
            kill -KILL "$pid" 2>/dev/null
        fi
    fi
    wait "$pid"
    rc=$?
    say "ps $i exited $rc"
    [ "$rc" -eq 0 ] || psrc=1
done
for t in "${tails[@]}"; do wait "$t" 2>/dev/null; done

for i in $(seq 0 $((NW - 1))); do
    final=$(grep '^final:' "$LOGS/worker$i.log" | tail -1)
    if [ "${wrc[$i]}" -eq 0 ]; then
        say "worker $i exited 0: ${final:-(no final line)}"
    else
        say "worker $i FAILED (exit ${wrc[$i]}); its last lines:"
        tail -5 "$LOGS/worker$i.log" | sed "s/^/    /"
    fi
done
say "$((NPS)) ps + $NW workers in $(($(date +%s) - start)) s"
if [ $failed -ne 0 ] || [ $psrc -ne 0 ]; then
    say "FAILED; logs in $LOGS"
    exit 1
fi
rm -rf "$LOGS"
exit 0
