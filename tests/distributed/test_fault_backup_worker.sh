#!/usr/bin/env bash
# A backup worker killed during synchronous training (examples/distributed --issync=1
# --replicas_to_aggregate=1 with 2 workers: one gradient per global step, so worker 1 is a
# backup; 1 ps + 2 workers as real processes on loopback): worker 1 gets SIGKILL mid-run and the
# chief still reaches --train_steps, exits 0, and the ps, which serves on (the
# killed backup never finished), stops cleanly on SIGTERM. $1 is the build directory.
set -u
. "$(dirname "$0")/../lib.sh" || exit 1
. "$(dirname "$0")/cluster_lib.sh" || exit 1
cluster_init "${1:?build dir}"
T0=$(now)

# The kill comes early (the steps go on while this script looks), the end well after it.
STEPS=12000 KILL_AT=500 V=100
start_cluster 1 2 --issync=1 --replicas_to_aggregate=1 --learning_rate=0.01 \
    --train_steps=$STEPS --steps_to_validate=$V --startup_deadline=30 --sync_timeout=60 \
    --logdir="$T/logdir"

# Worker 1 itself has printed a step past KILL_AT: it is training (a non-chief starts only once
# the chief has initialised the model).
wait_step $KILL_AT 60 "$T/w1.log"; reached=$?
alive w1; up=$?
kill_task w1 KILL
at=$(last_step "$T/w0.log" "$T/w1.log")
check "[ $reached -eq 0 ]" "the backup worker trains past step $KILL_AT (at $(last_step "$T/w1.log"))"
check "[ $up -eq 0 ] && [ $RC -eq 137 ] && grep -q '^/job:worker/task:1: training synchronously$' '$T/w1.log'" \
    "the backup worker 1 is killed by SIGKILL while it trains, near global step $at (exit $RC)"
check "! grep -q '^final:' '$T/w1.log' && [ $at -lt $STEPS ]" "worker 1 was killed mid-run (near step $at of $STEPS)"
check "grep -q 'replicas_to_aggregate=1; total_num_replicas=2' '$T/w0.log'" \
    "1 of 2 replicas aggregated: $(grep SyncReplicas "$T/w0.log")"
t_kill=$(now)

reap w0 120; rc0=$RC
stop_ps ps0; rcp=$RC
check "[ $rc0 -eq 0 ]" "the chief exits 0 without its backup (got $rc0, $(elapsed "$t_kill") s after the kill)"
check "[ $rcp -eq 0 ]" "the ps stops cleanly on SIGTERM (got $rcp)"
g0=$(final_field "$T/w0.log" global_step)
check "[ '${g0:-x}' = $STEPS ]" "the chief reaches global step $STEPS (got ${g0:-?})"
check "[ $(last_step "$T/w0.log") -gt $at ]" "training went on after the kill (the chief printed step $(last_step "$T/w0.log"))"
check "grep -qx 'model_checkpoint_path: \"$T/logdir/model.ckpt-$STEPS\"' '$T/logdir/checkpoint'" \
    "the final checkpoint is model.ckpt-$STEPS: $(head -1 "$T/logdir/checkpoint" 2>&1)"
check "! grep -E 'ERROR|FAIL|UNAVAILABLE|DEADLINE' '$T/w0.log'" "no errors in the chief's log"
echo "  (backup killed at step $at; $(elapsed "$T0") s)"
cluster_finish
