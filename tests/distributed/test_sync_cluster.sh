#!/usr/bin/env bash
# Synchronous training (--issync=1, SyncReplicasOptimizer) on real clusters of processes on
# loopback, each run with a fresh logdir:
#  (a) the issue's done-when: 1 ps + 2 workers (scripts/local_cluster.sh) converge; the logdir
#      holds `checkpoint`, model.ckpt-20000.{index,data-00000-of-00001} and an event file with the
#      scalar `cost` (read with rill-events); local_reload_test restores the workers' final values;
#  (b) global_step advances once per replicas_to_aggregate gradients: every worker ends at exactly
#      train_steps, and the gradients accepted (the workers' steps less those dropped as stale)
#      account for every step, for 2 workers and for 3 (replicas_to_aggregate defaulting to the
#      number of workers);
#  (c) backups: 3 workers with --replicas_to_aggregate=2; one non-chief is killed, and another
#      frozen (SIGSTOP), mid-run; the others still reach train_steps and exit 0, and gradients were
#      dropped as stale;
#  (d) restart recovery: a cluster killed mid-run (every process, SIGKILL) and a fresh one (a new
#      ps, so the variables are gone) on the same logdir: the chief restores the latest checkpoint,
#      training goes on from its step to the new train_steps and the latest checkpoint is there;
#  (e) two ps tasks: each writes its own data shard (.data-0000{0,1}-of-00002), the chief the index;
#      rill-inspect-checkpoint and local_reload_test read the sharded checkpoint, and a restarted
#      two-ps cluster restores it.
# $1 is the build directory.
set -u
B=${1:?build dir}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$HERE
while [ ! -x "$ROOT/scripts/local_cluster.sh" ] && [ "$ROOT" != / ]; do ROOT=$(dirname "$ROOT"); done
P="$B/examples/distributed"
EV="$B/bin/rill-events"
RELOAD="$B/examples/local_reload_test"
export RILL_OPENCL_CPU_AS_GPU=0
. "$(dirname "$0")/../lib.sh" || exit 1  # free_port, wait_exit
fail=0; checks=0
check() { checks=$((checks+1)); if ! eval "$1"; then echo "FAIL: $2"; fail=$((fail+1)); fi; }
T=$(mktemp -d)
bg=()
trap 'for p in "${bg[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
T0=$(date +%s)

within() { awk -v v="$1" -v c="$2" -v d="$3" 'BEGIN{exit !(v > c - d && v < c + d)}'; }
# Field $2 ("global_step", "weight", "local_steps", ...) of the "final:" line in $1.
final_field() { grep '^final:' "$1" | tail -1 | sed -n "s/.* $2 \([-0-9.]*\)[, ].*/\1/p"; }
# start_cluster NAME NWORKERS [worker flags...]: 1 ps and NWORKERS workers of distributed, logs in
# $T/NAME.ps.log and $T/NAME.w<i>.log, pids in PSPID and WPID[i]. Started again on other ports
# when a port was taken between the probe and the bind.
start_cluster() {
    local name=$1 nw=$2 attempt i ps hosts
    shift 2
    for attempt in 1 2 3; do
        free_port; ps="127.0.0.1:$PORT"; hosts=""
        for i in $(seq 0 $((nw - 1))); do free_port; hosts="$hosts${hosts:+,}127.0.0.1:$PORT"; done
        "$P" --ps_hosts="$ps" --worker_hosts="$hosts" --job_name=ps --task_index=0 \
            >"$T/$name.ps.log" 2>&1 &
        PSPID=$!; bg+=($PSPID)
        WPID=()
        for i in $(seq 0 $((nw - 1))); do
            "$P" --ps_hosts="$ps" --worker_hosts="$hosts" --job_name=worker --task_index="$i" \
                --startup_deadline=30 --sync_timeout=60 "$@" >"$T/$name.w$i.log" 2>&1 &
            WPID[$i]=$!; bg+=($!)
        done
        sleep 0.5
        grep -qs "already in use" "$T/$name".*.log || return 0
        echo "  (a port was taken meanwhile; starting $name again)"
        kill -KILL "$PSPID" "${WPID[@]}" 2>/dev/null; wait "$PSPID" "${WPID[@]}" 2>/dev/null
    done
}
# Waits (up to $1 s each) for the workers whose indexes follow, putting their exit codes in WRC[i]
# (124 for one that had to be killed), then stops the ps; PSRC is its exit code.
finish_cluster() {
    local secs=$1 i
    shift
    for i in "$@"; do
        if wait_exit "${WPID[$i]}" "$secs"; then wait "${WPID[$i]}"; WRC[$i]=$?
        else kill -KILL "${WPID[$i]}"; wait "${WPID[$i]}" 2>/dev/null; WRC[$i]=124; fi
    done
    kill -TERM "$PSPID" 2>/dev/null
    if wait_exit "$PSPID" 10; then wait "$PSPID"; PSRC=$?
    else kill -KILL "$PSPID"; wait "$PSPID" 2>/dev/null; PSRC=124; fi
}
# The last step a worker log printed ("step: N, ..."), or -1.
last_step() { { grep -h '^step: ' "$@" 2>/dev/null | sed 's/^step: \([0-9]*\),.*/\1/'; echo -1; } | sort -n | tail -1; }
# check_accounting NAME RTA NW STEPS G0 LOG...: with the workers' final lines (RTA = NW), checks
# that every worker ended at exactly STEPS and that the gradients accepted account for the global
# steps: A = sum(local_steps) - sum(dropped) = RTA * (STEPS - G0) + extra, 0 <= extra <= NW.
# Why: a take (global_step += 1) waits for RTA gradients tagged with the current step and takes
# all there are by then. A gradient is tagged with the token of the worker's previous step, and
# the chief puts tokens_per_step = NW tokens k in the queue after the take that made step k, so at
# most NW gradients carry tag k and the take of k+1 takes exactly RTA = NW. The exception is each
# worker's first step, tagged by its local step init without a token: one gradient more per
# worker, NW in all. At the end a worker stops on a token >= STEPS, so nothing is tagged STEPS and no
# accepted gradient is left untaken.
check_accounting() {
    local name=$1 rta=$2 nw=$3 steps=$4 g0=$5 sl=0 sd=0 f g l d
    shift 5
    for f in "$@"; do
        g=$(final_field "$f" global_step); l=$(final_field "$f" local_steps); d=$(final_field "$f" dropped)
        check "[ '${g:-x}' = '$steps' ]" "$name: $(basename "$f") ends at global step ${g:-?}, not $steps"
        sl=$((sl + ${l:-0})); sd=$((sd + ${d:-0}))
    done
    local a=$((sl - sd)) want=$((rta * (steps - g0)))
    echo "  ($name: $sl steps, $sd dropped, $a accepted for $((steps - g0)) global steps x $rta)"
    check "[ $a -ge $want ] && [ $a -le $((want + nw)) ]" \
      "$name: $a gradients accepted ($sl steps - $sd dropped), want $want (+ at most $nw)"
}

# --- (a) the done-when: 1 ps + 2 workers, synchronous, converge; the logdir has it all ---
D="$T/a"
t0=$(date +%s)
out=$(timeout 170 "$ROOT/scripts/local_cluster.sh" "$B" --issync=1 --learning_rate=0.01 \
      --train_steps=20000 --steps_to_validate=2000 --logdir="$D" --sync_timeout=60 2>&1); rc=$?
echo "$out" | grep -v '^\[worker [01]\] step:' | sed 's/^/  | /' | tail -15
check "[ $rc -eq 0 ]" "(a) local_cluster.sh exits 0 (got $rc)"
check "echo \"\$out\" | grep -q '^local_cluster: ps 0 exited 0$'" "(a) the ps stops cleanly"
check "echo \"\$out\" | grep -q '^\[worker 0\] .*training synchronously (chief)'" "(a) the chief trains synchronously"
for i in 0 1; do
    echo "$out" | sed -n "s/^\[worker $i\] //p" >"$T/a.w$i.log"
    w=$(final_field "$T/a.w$i.log" weight); b=$(final_field "$T/a.w$i.log" biase)
    check "within '${w:-nan}' 2 0.1" "(a) worker $i: weight ${w:-?} within 0.1 of 2"
    check "within '${b:-nan}' 10 0.3" "(a) worker $i: biase ${b:-?} within 0.3 of 10"
done
w0=$(final_field "$T/a.w0.log" weight); b0=$(final_field "$T/a.w0.log" biase)
# In sync mode nothing changes the variables after the last step: both read the same values.
check "[ '$w0 $b0' = '$(final_field "$T/a.w1.log" weight) $(final_field "$T/a.w1.log" biase)' ]" \
  "(a) both workers end with the same weight and biase"
check "[ -f '$D/checkpoint' ]" "(a) $D/checkpoint exists: $(ls "$D" 2>&1)"
check "ls '$D'/model.ckpt-*.index >/dev/null 2>&1" "(a) model.ckpt-*.index in the logdir"
check "ls '$D'/model.ckpt-*.data-00000-of-00001 >/dev/null 2>&1" "(a) model.ckpt-*.data-00000-of-00001 in the logdir"
check "ls '$D'/events.out.tfevents.* >/dev/null 2>&1" "(a) an events.out.tfevents.* file in the logdir"
check "grep -qx 'model_checkpoint_path: \"$D/model.ckpt-20000\"' '$D/checkpoint'" \
  "(a) the latest checkpoint is model.ckpt-20000: $(cat "$D/checkpoint" 2>&1)"
ev=$("$EV" "$D"); rc=$?
check "[ $rc -eq 0 ]" "(a) rill-events reads the logdir (exit $rc)"
check "echo \"\$ev\" | grep -q ' 0 file_version brain.Event:2$'" "(a) the event file starts with its version"
check "echo \"\$ev\" | grep -q ' session_log START$'" "(a) the Supervisor's START"
check "echo \"\$ev\" | grep -q ' 20000 session_log CHECKPOINT $D/model.ckpt$'" "(a) the final checkpoint is logged"
ncost=$(echo "$ev" | grep -c ' summary cost=[-0-9.e+]*$')
check "[ $ncost -ge 1 ]" "(a) the event file holds scalar cost points ($ncost)"
check "echo \"\$ev\" | awk '\$3 == \"summary\" { split(\$4, kv, \"=\"); if (\$2 < 0 || \$2 > 20000 || kv[2] + 0 < 0) exit 1 }'" \
  "(a) cost points have steps in [0, 20000] and non-negative values"
# A late cost should be small: the model has converged.
last_cost=$(echo "$ev" | grep ' summary cost=' | tail -1 | sed 's/.*cost=//')
check "awk -v c='${last_cost:-nan}' 'BEGIN{exit !(c < 5)}'" "(a) the last cost ${last_cost:-?} is small"
rl=$("$RELOAD" --logdir="$D" 2>&1); rc=$?
check "[ $rc -eq 0 ]" "(a) local_reload_test exits 0 (got $rc): $rl"
check "[ \"\$(echo \"\$rl\" | head -1)\" = '$D/model.ckpt-20000, global_step = 20000' ]" \
  "(a) local_reload_test restores model.ckpt-20000: $rl"
check "[ \"\$(echo \"\$rl\" | tail -1)\" = 'weight: $w0, biase: $b0' ]" \
  "(a) local_reload_test prints the workers' final values ($w0, $b0): $rl"
echo "  ((a) done-when: $(($(date +%s) - t0)) s)"

# --- (b) global_step advances once per replicas_to_aggregate gradients ---
check_accounting "(b) 2 workers" 2 2 20000 0 "$T/a.w0.log" "$T/a.w1.log"
t0=$(date +%s)
start_cluster b 3 --issync=1 --learning_rate=0.01 --train_steps=3000 --steps_to_validate=1000 \
    --logdir="$T/b"
finish_cluster 120 0 1 2
check "[ ${WRC[0]} -eq 0 ] && [ ${WRC[1]} -eq 0 ] && [ ${WRC[2]} -eq 0 ] && [ $PSRC -eq 0 ]" \
  "(b) 3 workers and the ps exit 0 (got ${WRC[*]}, ps $PSRC): $(tail -n 2 "$T"/b.*.log)"
check "grep -q 'replicas_to_aggregate=3; total_num_replicas=3' '$T/b.w0.log'" \
  "(b) replicas_to_aggregate defaults to the number of workers: $(grep SyncReplicas "$T/b.w0.log")"
check_accounting "(b) 3 workers" 3 3 3000 0 "$T"/b.w[012].log
echo "  ((b) 3 workers: $(($(date +%s) - t0)) s)"

# --- (c) backups: 3 workers aggregating 2; stopping one does not stop training ---
for how in KILL STOP; do
    t0=$(date +%s)
    n=c$how
    start_cluster "$n" 3 --issync=1 --replicas_to_aggregate=2 --learning_rate=0.01 \
        --train_steps=20000 --steps_to_validate=500 --logdir="$T/$n"
    for _ in $(seq 600); do [ "$(last_step "$T/$n.w0.log")" -ge 2000 ] && break; sleep 0.1; done
    at=$(last_step "$T/$n".w[012].log)
    kill -"$how" "${WPID[2]}"; krc=$?
    [ "$how" = KILL ] && { wait "${WPID[2]}"; } 2>/dev/null
    echo "  ($n: SIG$how to worker 2 near global step $at)"
    check "[ $krc -eq 0 ] && [ $at -ge 2000 ] && [ $at -lt 20000 ]" \
      "($n) worker 2 stopped mid-run (kill exit $krc, near step $at): $(tail -n 2 "$T/$n.w2.log")"
    finish_cluster 120 0 1
    kill -KILL "${WPID[2]}" 2>/dev/null; wait "${WPID[2]}" 2>/dev/null
    check "[ ${WRC[0]} -eq 0 ] && [ ${WRC[1]} -eq 0 ] && [ $PSRC -eq 0 ]" \
      "($n) the other workers and the ps exit 0 (got ${WRC[0]} ${WRC[1]}, ps $PSRC): $(tail -n 3 "$T/$n.w0.log" "$T/$n.w1.log")"
    check "grep -q 'replicas_to_aggregate=2; total_num_replicas=3' '$T/$n.w0.log'" \
      "($n) 2 of 3 replicas aggregated: $(grep SyncReplicas "$T/$n.w0.log")"
    dsum=0
    for i in 0 1; do
        g=$(final_field "$T/$n.w$i.log" global_step); d=$(final_field "$T/$n.w$i.log" dropped)
        check "[ '${g:-x}' = 20000 ]" "($n) worker $i reaches global step 20000 (got ${g:-?})"
        dsum=$((dsum + ${d:-0}))
    done
    check "[ $dsum -gt 0 ]" "($n) gradients of backups were dropped as stale ($dsum by workers 0 and 1)"
    check "! grep -q '^final:' '$T/$n.w2.log'" "($n) worker 2 did not finish"
    w=$(final_field "$T/$n.w0.log" weight); b=$(final_field "$T/$n.w0.log" biase)
    check "within '${w:-nan}' 2 0.1 && within '${b:-nan}' 10 0.3" "($n) converged anyway: weight ${w:-?}, biase ${b:-?}"
    echo "  ((c) SIG$how: $(($(date +%s) - t0)) s, $dsum dropped)"
done

# --- (d) restart recovery: kill the whole cluster mid-run, start a fresh one on the logdir ---
t0=$(date +%s)
D="$T/d"
start_cluster d1 2 --issync=1 --learning_rate=0.01 --train_steps=100000000 \
    --steps_to_validate=100000000 --save_model_secs=0.5 --logdir="$D"
# Until the chief has saved a checkpoint past step 1000 (it saves every 0.5 s).
ck=0
for _ in $(seq 600); do
    ck=$(sed -n 's/^model_checkpoint_path: ".*model.ckpt-\([0-9]*\)"$/\1/p' "$D/checkpoint" 2>/dev/null)
    [ "${ck:-0}" -gt 1000 ] && break
    sleep 0.1
done
kill -KILL "$PSPID" "${WPID[@]}" 2>/dev/null; wait "$PSPID" "${WPID[@]}" 2>/dev/null
# The checkpoint to go on from: the latest one when everything died.
C=$(sed -n 's/^model_checkpoint_path: ".*model.ckpt-\([0-9]*\)"$/\1/p' "$D/checkpoint" 2>/dev/null)
C=${C:-0}
check "[ $C -gt 1000 ]" "(d) the first cluster saved a checkpoint past step 1000 before it was killed (got $C)"
check "! grep -q '^final:' '$T/d1.w0.log'" "(d) the first cluster was killed mid-run"
# The step stored in it: a checkpoint is named after the global step read just before the save,
# and the other workers' steps go on meanwhile (as in TF), so it may hold a later step.
S=$("$B/bin/rill-inspect-checkpoint" "$D" --tensor_name=global_step | tail -1)
S=${S:-0}
check "[ $S -ge $C ] && [ $S -lt $((C + 1000)) ]" "(d) model.ckpt-$C holds global_step $S"
N2=$((S + 3000))
out=$(timeout 170 "$ROOT/scripts/local_cluster.sh" "$B" --issync=1 --learning_rate=0.01 \
      --train_steps=$N2 --steps_to_validate=1 --logdir="$D" --sync_timeout=60 2>&1); rc=$?
echo "$out" | grep -v '^\[worker [01]\] step:' | sed 's/^/  | /' | tail -8
check "[ $rc -eq 0 ]" "(d) the restarted cluster exits 0 (got $rc)"
check "echo \"\$out\" | grep -q '^\[worker 0\] .*Restoring parameters from $D/model.ckpt-$C$'" \
  "(d) the chief restores model.ckpt-$C: $(echo "$out" | grep -i restor)"
first=$(echo "$out" | sed -n 's/^\[worker [01]\] step: \([0-9]*\),.*/\1/p' | sort -n | head -1)
# The first token a worker gets holds the restored step: the first two are the chief's init
# tokens, put in the queue before any step can end.
check "[ '${first:-x}' = $S ]" "(d) training goes on from step $S (first step printed: ${first:-none})"
for i in 0 1; do
    g=$(echo "$out" | sed -n "s/^local_cluster: worker $i exited 0: final: global_step \([0-9]*\),.*/\1/p")
    check "[ '${g:-x}' = $N2 ]" "(d) worker $i ends at global step $N2 (got ${g:-?})"
done
check "grep -qx 'model_checkpoint_path: \"$D/model.ckpt-$N2\"' '$D/checkpoint'" \
  "(d) the latest checkpoint is model.ckpt-$N2: $(cat "$D/checkpoint" 2>&1)"
rl=$("$RELOAD" --logdir="$D" 2>&1)
check "[ \"\$(echo \"\$rl\" | head -1)\" = '$D/model.ckpt-$N2, global_step = $N2' ]" \
  "(d) local_reload_test restores model.ckpt-$N2: $rl"
ev=$("$EV" "$D"); rc=$?
check "[ $rc -eq 0 ]" "(d) rill-events reads both runs' event files (exit $rc)"
check "[ \$(echo \"\$ev\" | grep -c '^# ') -ge 2 ]" "(d) an event file per run"
check "echo \"\$ev\" | grep -q '^[0-9.]* $S session_log START$'" \
  "(d) the restarted Supervisor logs START at step $S: $(echo "$ev" | grep START)"
echo "  ((d) restart: $(($(date +%s) - t0)) s)"

# --- (e) two ps tasks: a sharded checkpoint, one data file per ps ---
D="$T/e"
t0=$(date +%s)
out=$(RILL_LOCAL_PS=2 timeout 120 "$ROOT/scripts/local_cluster.sh" "$B" --issync=1 \
      --learning_rate=0.01 --train_steps=3000 --steps_to_validate=1000 --logdir="$D" \
      --sync_timeout=60 2>&1); rc=$?
check "[ $rc -eq 0 ]" "(e) 2 ps + 2 workers exit 0 (got $rc): $(echo "$out" | tail -5)"
for k in 0 1; do
    check "[ -s '$D/model.ckpt-3000.data-0000$k-of-00002' ]" "(e) ps shard $k wrote its data file: $(ls "$D")"
done
check "[ -s '$D/model.ckpt-3000.index' ] && [ ! -e '$D/model.ckpt-3000.data-00000-of-00001' ]" \
  "(e) one index, no single-shard data file: $(ls "$D")"
insp=$("$B/bin/rill-inspect-checkpoint" "$D/model.ckpt-3000" 2>&1)
for v in 'biase (DT_FLOAT) \[1\]' 'global_step (DT_INT64) \[\]' 'weight (DT_FLOAT) \[1\]'; do
    check "echo \"\$insp\" | grep -qx '$v'" "(e) the sharded checkpoint lists $v: $insp"
done
rl=$("$RELOAD" --logdir="$D" 2>&1)
w0=$(echo "$out" | sed -n 's/^local_cluster: worker 0 exited 0: final: .*weight \([-0-9.]*\),.*/\1/p')
check "echo \"\$rl\" | grep -q '^weight: ${w0:-x},'" "(e) local_reload_test reads the shards (worker 0 weight ${w0:-?}): $rl"
out=$(RILL_LOCAL_PS=2 timeout 120 "$ROOT/scripts/local_cluster.sh" "$B" --issync=1 \
      --learning_rate=0.01 --train_steps=4000 --steps_to_validate=1000 --logdir="$D" \
      --sync_timeout=60 2>&1); rc=$?
check "[ $rc -eq 0 ]" "(e) a restarted 2-ps cluster exits 0 (got $rc): $(echo "$out" | grep -v '^\[worker [0-9]\] step:' | tail -40)"
check "echo \"\$out\" | grep -q 'Restoring parameters from $D/model.ckpt-3000'" \
  "(e) the restarted chief restores the sharded checkpoint: $(echo "$out" | grep -i restor)"
check "grep -qx 'model_checkpoint_path: \"$D/model.ckpt-4000\"' '$D/checkpoint'" \
  "(e) the latest checkpoint is model.ckpt-4000"
echo "  ((e) two ps: $(($(date +%s) - t0)) s)"

echo "  (total $(($(date +%s) - T0)) s)"
echo "$((checks-fail)) passed, $fail failed"
[ $fail -eq 0 ]
