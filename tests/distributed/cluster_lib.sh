# shellcheck shell=bash
# tests/distributed/cluster_lib.sh - what the fault tests (test_fault_*.sh) and scripts/soak.sh
# share: clusters of examples/distributed as real processes on loopback, started, killed and
# restarted one task at a time, every wait bounded. Source it after tests/lib.sh:
#     . "$(dirname "$0")/../lib.sh"; . "$(dirname "$0")/cluster_lib.sh"
# then call cluster_init BUILD. Not a test itself (ctest registers only test_*.sh).
#
# Tasks are named by their log: start_task NAME JOB INDEX FLAGS... runs the task with its output
# in $T/NAME.log and its pid in PID[NAME]; every task started is killed (SIGKILL) at exit and
# $T removed, so no process outlives the test. Ports come from lib.sh's free_port.

# cluster_init BUILD: P (the program), T (a fresh folder), SANITIZED (1 in a RILL_SANITIZE
# build), the exit trap.
cluster_init() {
    B=$1
    P="$B/examples/distributed"
    export RILL_OPENCL_CPU_AS_GPU=0
    [ -x "$P" ] || { echo "FAIL: $P is not built"; exit 1; }
    SANITIZED=0
    built_with "$B" RILL_SANITIZE && SANITIZED=1
    T=$(mktemp -d "${TMPDIR:-/tmp}/rill-fault.XXXXXX")
    declare -gA PID=()
    trap cluster_cleanup EXIT
}

cluster_cleanup() {
    local p
    for p in "${PID[@]}"; do kill -KILL "$p" 2>/dev/null; done
    for p in "${PID[@]}"; do { wait "$p"; } 2>/dev/null; done
    [ -n "${KEEP_LOGS:-}" ] && { echo "logs kept in $T"; return; }
    rm -rf "$T"
}

# cluster_ports NPS NW [HOST]: PS_HOSTS and WORKER_HOSTS on free ports (HOST: 127.0.0.1).
cluster_ports() {
    local i h=${3:-127.0.0.1}
    PS_HOSTS="" WORKER_HOSTS=""
    for i in $(seq 1 "$1"); do free_port; PS_HOSTS="$PS_HOSTS${PS_HOSTS:+,}$h:$PORT"; done
    for i in $(seq 1 "$2"); do free_port; WORKER_HOSTS="$WORKER_HOSTS${WORKER_HOSTS:+,}$h:$PORT"; done
}

# start_task NAME JOB INDEX [FLAGS...]: task INDEX of JOB in the background, output in
# $T/NAME.log (appended to when NAME is started again), pid in PID[NAME]. RUN_PREFIX (an array,
# e.g. (ip netns exec ns)) goes before the program.
start_task() {
    local name=$1 job=$2 i=$3
    shift 3
    "${RUN_PREFIX[@]}" "$P" --ps_hosts="$PS_HOSTS" --worker_hosts="$WORKER_HOSTS" --job_name="$job" \
        --task_index="$i" "$@" >>"$T/$name.log" 2>&1 &
    PID[$name]=$!
}

# port_race LOG...: 0 when a task's log says its port was taken between the probe and the bind
# (the caller then kills the tasks and starts them again on other ports).
port_race() { grep -qs "already in use" "$@"; }

# start_cluster NPS NW [WORKER FLAGS...]: NPS ps tasks (ps0, ps1, ...) and NW workers (w0, w1,
# ...) on free loopback ports, the workers with the flags given (WFLAGS keeps them, for a
# restart). Started again on other ports when a port was taken meanwhile.
start_cluster() {
    local nps=$1 nw=$2 attempt i
    shift 2
    WFLAGS=("$@")
    for attempt in 1 2 3; do
        cluster_ports "$nps" "$nw"
        for i in $(seq 0 $((nps - 1))); do rm -f "$T/ps$i.log"; start_task "ps$i" ps "$i"; done
        for i in $(seq 0 $((nw - 1))); do rm -f "$T/w$i.log"; start_task "w$i" worker "$i" "$@"; done
        sleep 0.5
        port_race "$T"/ps*.log "$T"/w*.log || return 0
        echo "  (a port was taken meanwhile; starting the cluster again)"
        for i in $(seq 0 $((nps - 1))); do kill_task "ps$i" KILL; done
        for i in $(seq 0 $((nw - 1))); do kill_task "w$i" KILL; done
    done
}

# alive NAME: the task is still running.
alive() { [ -n "${PID[$1]:-}" ] && kill -0 "${PID[$1]}" 2>/dev/null; }

# reap NAME SECS: waits up to SECS (may be fractional) for the task to exit and puts its exit
# status in RC; 124 (and the task killed) when it did not. A task reaped is dropped from PID:
# its pid may soon be another process's, which the cleanup must not kill.
reap() {
    local pid=${PID[$1]:-} end
    [ -n "$pid" ] || { RC=127; return 0; }
    end=$(awk -v n="$(now)" -v s="$2" 'BEGIN{printf "%.3f", n + s}')
    while kill -0 "$pid" 2>/dev/null; do
        awk -v n="$(now)" -v e="$end" 'BEGIN{exit !(n >= e)}' && break
        sleep 0.05
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null
        { wait "$pid"; } 2>/dev/null
        RC=124
    else
        { wait "$pid"; } 2>/dev/null
        RC=$?
    fi
    unset "PID[$1]"
    return 0
}

# kill_task NAME SIG: sends SIG and, for KILL, reaps the task (RC 137).
kill_task() {
    [ -n "${PID[$1]:-}" ] || return 0
    # (bash reports a job killed by a signal on stderr when it reaps it: not here)
    {
        kill -"$2" "${PID[$1]}"
        [ "$2" = KILL ] && reap "$1" 10
    } 2>/dev/null
    return 0
}

# stop_ps NAME: SIGTERM and up to 10 s to stop, for a ps that serves on (a worker was killed, so
# not every worker finished); its exit status in RC. (A ps that ends by itself once every worker
# has finished is reaped instead: a SIGTERM while it exits would kill it.)
stop_ps() {
    [ -n "${PID[$1]:-}" ] && kill -TERM "${PID[$1]}" 2>/dev/null
    reap "$1" 10
}

# now: seconds since the epoch, to the millisecond.
now() { date +%s.%N | cut -c1-14; }
# elapsed T0 [DECIMALS]: seconds since T0 (from now), with one decimal or DECIMALS.
elapsed() { awk -v a="$1" -v b="$(now)" -v d="${2:-1}" 'BEGIN{printf "%.*f", d, b - a}'; }

# last_step LOG...: the highest global step the logs printed ("step: N, ..."), or -1.
last_step() {
    { grep -h '^step: ' "$@" 2>/dev/null | sed 's/^step: \([0-9]*\),.*/\1/'; echo -1; } | sort -n | tail -1
}
# first_step LOG: the first global step the log printed, or -1.
first_step() {
    local s
    s=$(grep -m1 '^step: ' "$1" 2>/dev/null | sed 's/^step: \([0-9]*\),.*/\1/')
    echo "${s:--1}"
}
# wait_step N SECS LOG...: waits up to SECS for a log to show global step >= N; 0 when one did.
wait_step() {
    local n=$1 secs=$2 _
    shift 2
    for _ in $(seq $((secs * 20))); do
        [ "$(last_step "$@")" -ge "$n" ] && return 0
        sleep 0.05
    done
    return 1
}
# wait_log PATTERN SECS LOG: waits up to SECS for an (extended) regex to show in LOG.
wait_log() {
    local _
    for _ in $(seq $(($2 * 20))); do
        grep -Eqs "$1" "$3" && return 0
        sleep 0.05
    done
    return 1
}
# final_field LOG FIELD: FIELD (global_step, weight, local_steps, dropped...) of LOG's "final:".
final_field() { grep '^final:' "$1" 2>/dev/null | tail -1 | sed -n "s/.* $2 \([-0-9.]*\)[, ].*/\1/p"; }

# show_logs: every task's log (its last 40 lines), for a failed test.
show_logs() {
    local f
    for f in "$T"/*.log; do
        [ -f "$f" ] || continue
        echo "--- $(basename "$f" .log) (last 40 lines):"
        grep -v '^step: ' "$f" | tail -n 40 | sed 's/^/  | /'
    done
}

# cluster_finish: prints the logs when a check failed, then the summary (lib.sh's finish).
cluster_finish() {
    [ "$fail" -eq 0 ] || show_logs
    finish
}
