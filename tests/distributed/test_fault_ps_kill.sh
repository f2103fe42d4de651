#!/usr/bin/env bash
# The ps killed during asynchronous training (examples/distributed --issync=0, 1 ps + 2 workers
# as real processes on loopback, the chief checkpointing every 0.2 s):
#  (a) the ps gets SIGKILL at a random moment mid-run: both workers fail at once (exit 1, each
#      within a few seconds; the time each took is printed) with an error naming the ps task and
#      its address;
#  (b) the whole cluster started again on the same ports with the same --logdir goes on from the
#      latest checkpoint: the chief restores it, the global step goes on from the step it holds
#      (not from 0) to the new --train_steps, and every task exits 0.
# $1 is the build directory.
set -u
. "$(dirname "$0")/../lib.sh" || exit 1
. "$(dirname "$0")/cluster_lib.sh" || exit 1
cluster_init "${1:?build dir}"
T0=$(now)
D="$T/logdir"
# How long a worker may take to notice (an upper bound for slow machines: a ps that dies closes
# its connections, and the workers' steps see it at once; measured here: well under 0.1 s).
NOTICE_S=5

# --- (a) the ps dies mid-run ---
start_cluster 1 2 --issync=0 --learning_rate=0.01 --train_steps=100000000 --steps_to_validate=500 \
    --save_model_secs=0.2 --startup_deadline=30 --logdir="$D"
ck=0
for _ in $(seq 600); do
    ck=$(sed -n 's/^model_checkpoint_path: ".*model.ckpt-\([0-9]*\)"$/\1/p' "$D/checkpoint" 2>/dev/null)
    [ "${ck:-0}" -gt 1000 ] && break
    sleep 0.05
done
check "[ '${ck:-0}' -gt 1000 ]" "the chief checkpointed past step 1000 (latest: ${ck:-none})"
wait_log '^/job:worker/task:1: training$' 30 "$T/w1.log"
check "[ $? -eq 0 ]" "worker 1 trains too"
sleep "0.$((RANDOM % 10))" # a random moment of a step
check "alive w0 && alive w1" "both workers train when the ps is killed"
t_kill=$(now)
kill_task ps0 KILL
# Each worker's exit time, polled every 10 ms for up to 60 s.
declare -A took=()
for _ in $(seq 6000); do
    for w in w0 w1; do
        [ -z "${took[$w]:-}" ] && ! alive $w && took[$w]=$(elapsed "$t_kill" 3)
    done
    [ -n "${took[w0]:-}" ] && [ -n "${took[w1]:-}" ] && break
    sleep 0.01
done
for w in w0 w1; do
    reap $w 1
    check "[ $RC -eq 1 ]" "$w exits 1 after losing the ps (got $RC)"
    check "awk -v t='${took[$w]:-999}' -v m=$NOTICE_S 'BEGIN{exit !(t <= m)}'" \
        "$w gives up within $NOTICE_S s of the ps's death (took ${took[$w]:-more than 60} s)"
    check "grep -q '/job:ps/replica:0/task:0 ($PS_HOSTS)' '$T/$w.log'" \
        "$w's error names the ps task and its address: $(grep -E 'training step|: [A-Z_]+: ' "$T/$w.log" | tail -1)"
done
echo "  (the workers gave up ${took[w0]:-?} s and ${took[w1]:-?} s after the ps was killed)"

# The checkpoint to go on from: the latest one when the ps died, and the step stored in it (a
# checkpoint is named after the global step read just before the save; other steps go on
# meanwhile, so it may hold a later one).
C=$(sed -n 's/^model_checkpoint_path: ".*model.ckpt-\([0-9]*\)"$/\1/p' "$D/checkpoint" 2>/dev/null)
C=${C:-0}
S=$("$B/bin/rill-inspect-checkpoint" "$D" --tensor_name=global_step 2>&1 | tail -1)
check "[ '$S' -ge '$C' ] 2>/dev/null" "the latest checkpoint model.ckpt-$C loads (global_step $S)"
[ "$S" -ge 0 ] 2>/dev/null || S=$C

# --- (b) the whole cluster started again on the logdir goes on from there ---
N2=$((S + 3000))
for f in ps0 w0 w1; do mv "$T/$f.log" "$T/$f-first.log"; done
WFLAGS=(--issync=0 --learning_rate=0.01 --train_steps="$N2" --steps_to_validate=100
        --startup_deadline=30 --logdir="$D")
start_task ps0 ps 0
start_task w0 worker 0 "${WFLAGS[@]}"
start_task w1 worker 1 "${WFLAGS[@]}"
sleep 0.5
if port_race "$T"/ps0.log "$T"/w[01].log; then
    echo "  (a port was taken meanwhile; the cluster starts again on other ports)"
    for f in ps0 w0 w1; do kill_task $f KILL; done
    start_cluster 1 2 "${WFLAGS[@]}"
fi
reap w0 120; rc0=$RC
reap w1 120; rc1=$RC
reap ps0 30; rcp=$RC # it ends by itself once both workers have finished
check "[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && [ $rcp -eq 0 ]" \
    "the restarted cluster finishes: the workers exit 0, then the ps by itself (got $rc0, $rc1, ps $rcp)"
check "grep -q 'Restoring parameters from $D/model.ckpt-$C\$' '$T/w0.log'" \
    "the chief restores model.ckpt-$C: $(grep -i restor "$T/w0.log")"
first=$({ first_step "$T/w0.log"; first_step "$T/w1.log"; } | grep -v '^-1$' | sort -n | head -1)
check "[ '${first:-0}' -ge $S ]" "training goes on from step $S, not from 0 (first step printed: ${first:-none})"
for w in w0 w1; do
    g=$(final_field "$T/$w.log" global_step)
    check "[ '${g:-0}' -ge $N2 ]" "$w reaches global step $N2 (got ${g:-?})"
done
check "grep -qx 'model_checkpoint_path: \"$D/model.ckpt-[0-9]*\"' '$D/checkpoint' &&
       [ \$(sed -n 's/^model_checkpoint_path: \".*-\([0-9]*\)\"$/\1/p' '$D/checkpoint') -ge $N2 ]" \
    "the latest checkpoint is past step $N2: $(head -1 "$D/checkpoint")"
check "! grep -h -E 'ERROR|FAIL|UNAVAILABLE|DEADLINE' '$T/w0.log' '$T/w1.log'" "no errors in the restarted workers' logs"
echo "  (ps killed after checkpoint $C, restored at step $S, trained on to $N2; $(elapsed "$T0") s)"
cluster_finish
