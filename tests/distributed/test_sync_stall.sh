#!/usr/bin/env bash
# Stalls that name the missing task (issue 13, row 7): synchronous training (examples/distributed
# --issync=1, SyncReplicasOptimizer aggregating every worker's gradients, no backups) on real
# processes on loopback, 1 ps and 4 workers. Mid-run worker 2 is killed (SIGKILL) and worker 3
# frozen (SIGSTOP), so the chief's sync step waits for their gradients and every other worker for
# its token. Within a few seconds:
#  - the chief (its queue runner waits on the accumulators) and worker 1 (its step waits on the
#    token queue) log lines naming the missing tasks (one or both, as they had sent the step's
#    gradients or not), and only those, with whether they answer: the killed one does not (its
#    port is closed), nor does the frozen one (no handshake); and no more often than every few
#    seconds (--stall_report_secs=2 here);
#  - the ps logs it too;
#  - at --sync_timeout the workers fail with an error that names the same tasks ("sync step N
#    waited 16 s for gradients from /job:worker/task:2 and /job:worker/task:3: ...").
# $1 is the build directory.
set -u
B=${1:?build dir}
. "$(dirname "$0")/../lib.sh"
P="$B/examples/distributed"
[ -x "$P" ] || skip "$P is not built"
export RILL_OPENCL_CPU_AS_GPU=0
T=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done; rm -rf "$T"' EXIT

taken=" "
free_port() {
    while :; do
        PORT=$((20000 + (RANDOM * 32768 + RANDOM) % 12001))
        case "$taken" in *" $PORT "*) continue ;; esac
        (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && continue
        taken="$taken$PORT "
        return 0
    done
}
NW=4
SYNC_TIMEOUT=16
free_port; PSH="127.0.0.1:$PORT"
WH=""
for i in $(seq 0 $((NW - 1))); do free_port; WH="$WH${WH:+,}127.0.0.1:$PORT"; done
"$P" --ps_hosts="$PSH" --worker_hosts="$WH" --job_name=ps --task_index=0 --stall_report_secs=2 \
    >"$T/ps.log" 2>&1 &
PSPID=$!; pids+=($PSPID)
W=()
for i in $(seq 0 $((NW - 1))); do
    "$P" --ps_hosts="$PSH" --worker_hosts="$WH" --job_name=worker --task_index="$i" --issync=1 \
        --learning_rate=0.01 --train_steps=100000000 --steps_to_validate=200 --logdir="$T/logdir" \
        --startup_deadline=30 --sync_timeout=$SYNC_TIMEOUT --stall_report_secs=2 \
        >"$T/w$i.log" 2>&1 &
    W[$i]=$!; pids+=($!)
done
last_step() { { grep -h '^step: ' "$@" 2>/dev/null | sed 's/^step: \([0-9]*\),.*/\1/'; echo -1; } | sort -n | tail -1; }
for _ in $(seq 600); do [ "$(last_step "$T/w0.log")" -ge 1000 ] && break; sleep 0.1; done
at=$(last_step "$T/w0.log")
check "[ $at -ge 1000 ]" "the cluster trains synchronously (step $at): $(tail -2 "$T/w0.log")"
kill -KILL "${W[2]}"
kill -STOP "${W[3]}"
t0=$(date +%s.%N)
echo "  (worker 2 killed, worker 3 stopped near global step $at)"

# The stall lines: "... gradients from /job:worker/task:3 (accumulator ...". Which of the two
# is missing depends on whether it had sent the step's gradients when it stopped: one or both.
missing='gradients from /job:worker/task:[23]'
seen() { grep -q "$missing" "$1" 2>/dev/null; }
for _ in $(seq 150); do seen "$T/w0.log" && seen "$T/w1.log" && break; sleep 0.1; done
t1=$(date +%s.%N)
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b - a}')
check "seen '$T/w0.log'" "within $secs s the chief logs the missing tasks: $(grep 'waited' "$T/w0.log" | head -2)"
check "seen '$T/w1.log'" "within $secs s worker 1 (waiting for its token) logs them: $(grep 'waited' "$T/w1.log" | head -1)"
check "awk -v s=$secs 'BEGIN{exit !(s < 10)}'" "the first reports came within 10 s of the stall ($secs s)"

# What a report says, its rate and the ps's own line: some seconds more.
sleep 6
line=$(grep "waiting for a token" "$T/w1.log" | grep "$missing" | tail -1)
who=$(echo "$line" | sed -n 's/.*gradients from \(.*\) (accumulator.*/\1/p')
echo "  (missing: $who)"
check "[ -n '$who' ] && [ -z \"\$(echo '$who' | sed -e 's#/job:worker/task:[23]##g' -e 's/ and //g')\" ]" \
  "worker 1's report names only the stopped workers as missing: ${who:-$line}"
for t in $(echo "$who" | grep -o '/job:worker/task:[23]'); do
    check "echo \"\$line\" | grep -q '$t does not answer'" "and says $t does not answer: $line"
done
sent=$(echo "$line" | sed -n 's/.* it takes, from \([^)]*\)).*/\1/p')
check "echo '$sent' | grep -q /job:worker/task:0 && echo '$sent' | grep -q /job:worker/task:1" \
  "and which workers did send theirs (workers 0 and 1 among them): ${sent:-$line}"
check "grep 'waited' '$T/w0.log' | grep -v 'waiting for a token' | grep \"$missing\" | grep -q '(accumulator'" \
  "the chief's queue runner reports the accumulators' wait: $(grep 'accumulator' "$T/w0.log" | grep -v token | tail -1)"
check "seen '$T/ps.log'" "the ps logs the missing tasks too: $(grep 'waited' "$T/ps.log" | tail -1)"
el=$(awk -v a="$t0" 'BEGIN{"date +%s.%N" | getline b; printf "%.0f", b - a}')
n1=$(grep -c "$missing" "$T/w1.log")
# One waiting step on worker 1, asked every 2 s: about el/2 lines; never one per 50 ms poll.
check "[ $n1 -ge 2 ] && [ $n1 -le $((el / 2 + 2)) ]" "worker 1 reports every 2 s, not per poll ($n1 lines in $el s)"
n0=$(grep -c "$missing" "$T/ps.log")
check "[ $n0 -ge 1 ] && [ $n0 -le $((el / 2 + 2)) ]" "the ps reports at most once per interval ($n0 lines in $el s)"

# At the deadline: the errors name the missing tasks, the same ones.
for i in 0 1; do
    for _ in $(seq $(((SYNC_TIMEOUT + 30) * 10))); do kill -0 "${W[$i]}" 2>/dev/null || break; sleep 0.1; done
done
for i in 0 1; do
    if kill -0 "${W[$i]}" 2>/dev/null; then rc=124; kill -KILL "${W[$i]}"; wait "${W[$i]}" 2>/dev/null
    else wait "${W[$i]}"; rc=$?; fi
    err=$(grep -E '^/job:worker/task:[0-9]+: [a-z ]+: ' "$T/w$i.log" | tail -1)
    check "[ $rc -eq 1 ] && echo \"\$err\" | grep -Eq 'sync step [0-9]+ waited [0-9]+ s for gradients from $who: '" \
      "worker $i fails at the deadline (exit $rc) with an error naming $who: ${err:-$(tail -2 "$T/w$i.log")}"
done
kill -CONT "${W[3]}" 2>/dev/null
kill -KILL "${W[3]}" 2>/dev/null
kill -TERM "$PSPID" 2>/dev/null
wait "$PSPID" 2>/dev/null
finish
