#!/usr/bin/env bash
# A backup worker killed during synchronous training (examples/distributed --issync=1
# --replicas_to_aggregate=1 with 2 workers: one gradient per global step, so worker 1 is a
# backup; 1 ps + 2 workers as real processes on loopback): worker 1 gets SIGKILL mid-run and the
# chief still reaches --train_steps, exits 0, and the ps stops cleanly. $1 is the build directory.
set -u
. "$(dirname "$0")/../lib.sh" || exit 1
. "$(dirname "$0")/cluster_lib.sh" || exit 1
cluster_init "${1:?build dir}"
T0=$(now)

STEPS=4000 KILL_AT=1000 V=100
[ "$SANITIZED" = 1 ] && STEPS=3000 KILL_AT=600 V=50
start_cluster 1 2 --issync=1 --replicas_to_aggregate=1 --learning_rate=0.01 \
    --train_steps=$STEPS --steps_to_validate=$V --startup_deadline=30 --sync_timeout=60 \
    --logdir="$T/logdir"

wait_step $KILL_AT 60 "$T/w0.log" "$T/w1.log"
check "[ $? -eq 0 ]" "the cluster trains past step $KILL_AT (at $(last_step "$T"/w*.log))"
check "grep -q 'replicas_to_aggregate=1; total_num_replicas=2' '$T/w0.log'" \
    "1 of 2 replicas aggregated: $(grep SyncReplicas "$T/w0.log")"
at=$(last_step "$T/w0.log" "$T/w1.log")
check "alive w1 && grep -q '^/job:worker/task:1: training synchronously$' '$T/w1.log'" \
    "the backup worker trains when it is killed"
kill_task w1 KILL
check "[ $RC -eq 137 ]" "the backup worker 1 is killed by SIGKILL near global step $at (exit $RC)"
check "! grep -q '^final:' '$T/w1.log'" "worker 1 was killed mid-run"
check "[ $at -lt $STEPS ]" "the kill came before the end ($at < $STEPS)"
t_kill=$(now)

wait_exit w0 120; rc0=$RC
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
