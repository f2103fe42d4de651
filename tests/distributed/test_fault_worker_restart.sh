#!/usr/bin/env bash
# A worker killed mid-training and started again (asynchronous training, examples/distributed
# --issync=0; 1 ps + 2 workers as real processes on loopback): worker 1 gets SIGKILL while the
# cluster trains; the chief goes on meanwhile; worker 1 started again with the same flags
# rejoins (it trains from the cluster's global step, not from 0) and training finishes: the chief,
# the restarted worker and the ps (by itself, once both have finished) all exit 0. $1 is the
# build directory.
set -u
. "$(dirname "$0")/../lib.sh" || exit 1
. "$(dirname "$0")/cluster_lib.sh" || exit 1
cluster_init "${1:?build dir}"
T0=$(now)

# STEPS leaves the chief alone for several seconds after the kill, time enough for the restarted
# worker to come up and train (a sanitized build trains this model about as fast).
STEPS=60000 KILL_AT=3000 V=500
[ "$SANITIZED" = 1 ] && STEPS=40000
start_cluster 1 2 --issync=0 --learning_rate=0.01 --train_steps=$STEPS --steps_to_validate=$V \
    --startup_deadline=30 --logdir="$T/logdir"

# Worker 1 itself has printed a step past KILL_AT: it is training (a non-chief starts only once
# the chief has initialised the model).
wait_step $KILL_AT 60 "$T/w1.log"; reached=$?
alive w1; up=$?
kill_task w1 KILL
at=$(last_step "$T/w0.log" "$T/w1.log")
check "[ $reached -eq 0 ]" "worker 1 trains past step $KILL_AT (at $(last_step "$T/w1.log"))"
check "[ $up -eq 0 ] && [ $RC -eq 137 ]" "worker 1 is killed by SIGKILL near global step $at (exit $RC)"
check "! grep -q '^final:' '$T/w1.log' && [ $at -lt $STEPS ]" "worker 1 was killed mid-run (near step $at of $STEPS)"
mv "$T/w1.log" "$T/w1-killed.log"

# The chief goes on alone while worker 1 is down.
sleep 0.5
check "alive w0 && [ \$(last_step '$T/w0.log') -gt $at ]" \
    "the chief goes on while worker 1 is down (step $(last_step "$T/w0.log") > $at)"
back=$(last_step "$T/w0.log")
start_task w1 worker 1 "${WFLAGS[@]}"
t_restart=$(now)
wait_log '^/job:worker/task:1: training' 30 "$T/w1.log"
check "[ $? -eq 0 ]" "the restarted worker 1 trains again ($(elapsed "$t_restart") s after its start)"

reap w0 120; rc0=$RC
reap w1 120; rc1=$RC
# The restarted worker's finish counts for task 1 (the killed one told nobody): the ps ends by
# itself once both have finished.
reap ps0 30; rcp=$RC
check "[ $rc0 -eq 0 ]" "the chief exits 0 (got $rc0)"
check "[ $rc1 -eq 0 ]" "the restarted worker 1 exits 0 (got $rc1)"
check "[ $rcp -eq 0 ] && grep -q 'all 2 workers finished' '$T/ps0.log'" \
    "the ps exits 0 by itself once the chief and the restarted worker finished (got $rcp): $(tail -n 2 "$T/ps0.log")"
g0=$(final_field "$T/w0.log" global_step)
g1=$(final_field "$T/w1.log" global_step)
l1=$(final_field "$T/w1.log" local_steps)
check "[ '${g0:-0}' -ge $STEPS ]" "the chief reaches global step $STEPS (got ${g0:-?})"
check "[ '${g1:-0}' -ge $STEPS ]" "the restarted worker reaches global step $STEPS (got ${g1:-?})"
check "[ '${l1:-0}' -gt 0 ]" "the restarted worker ran steps of its own (${l1:-?})"
f1=$(first_step "$T/w1.log")
check "[ $f1 -ge $back ]" "the restarted worker goes on from the cluster's step (its first: $f1; the chief was at $back), not from 0"
w=$(final_field "$T/w0.log" weight); b=$(final_field "$T/w0.log" biase)
check "awk -v w='${w:-nan}' -v b='${b:-nan}' 'BEGIN{exit !(w > 1.5 && w < 2.5 && b > 8 && b < 12)}'" \
    "training went on to a model near y = 2x + 10 (weight ${w:-?}, biase ${b:-?})"
check "! grep -h -E 'ERROR|FAIL|UNAVAILABLE|DEADLINE' '$T/w0.log' '$T/w1.log'" \
    "no errors in the chief's or the restarted worker's log"
echo "  (worker killed at step $at, restarted when the chief was at $back; $(elapsed "$T0") s)"
cluster_finish
