#!/usr/bin/env bash
# A chief restarted while its ps task kept a live model (issue 13, row 8): real processes of
# examples/distributed on loopback, 1 ps and 1 worker (the chief), asynchronous, one logdir.
#  1. the chief trains to step 1000 and stops: its final checkpoint is model.ckpt-1000;
#  2. a new chief trains on (no periodic checkpoints) past step 4000 and is killed (SIGKILL):
#     the ps holds a live model thousands of steps newer than the latest checkpoint;
#  3. with --restore_over_live, a new chief restores model.ckpt-1000 over it (TF's behaviour,
#     kept behind the flag): the global step goes back to 1000, and it ends at 1500;
#  4. again a chief trains past 4000 and is killed; the latest checkpoint is model.ckpt-1500;
#  5. without the flag, a new chief goes on from the live model: it logs the live step and the
#     checkpoint's, the global step never goes back (the first step it prints is past the last
#     one printed before the kill) and it ends at the new train_steps.
# $1 is the build directory.
set -u
B=${1:?build dir}
. "$(dirname "$0")/../lib.sh"
P="$B/examples/distributed"
[ -x "$P" ] || skip "$P is not built"
export RILL_OPENCL_CPU_AS_GPU=0
T=$(mktemp -d)
D="$T/logdir"
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$T"' EXIT

# A loopback port in 20000-32000 that nothing answers on and this test has not handed out.
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
free_port; PSH="127.0.0.1:$PORT"
free_port; WH="127.0.0.1:$PORT"
"$P" --ps_hosts="$PSH" --worker_hosts="$WH" --job_name=ps --task_index=0 --ps_join_forever \
    >"$T/ps.log" 2>&1 &
PSPID=$!; pids+=($PSPID)

# chief LOG [flags...]: runs the chief in the foreground; its exit code in RC.
chief() {
    local log=$1
    shift
    timeout 120 "$P" --ps_hosts="$PSH" --worker_hosts="$WH" --job_name=worker --task_index=0 \
        --startup_deadline=30 --learning_rate=0.01 --save_model_secs=100000 --logdir="$D" \
        "$@" >"$T/$log" 2>&1
    RC=$?
}
# The last / first step a log printed ("step: N, ..."), or -1.
steps() { grep -h '^step: ' "$1" 2>/dev/null | sed 's/^step: \([0-9]*\),.*/\1/'; }
last_step() { { steps "$1"; echo -1; } | sort -n | tail -1; }
first_step() { { steps "$1" | head -1; } | grep . || echo -1; }
latest() { sed -n 's/^model_checkpoint_path: ".*model.ckpt-\([0-9]*\)"$/\1/p' "$D/checkpoint" 2>/dev/null; }
final_step() { grep '^final:' "$1" | sed -n 's/^final: global_step \([0-9]*\),.*/\1/p'; }
# train_past LOG STEP: a chief trains on with no checkpoints until it printed STEP, then is
# killed; the last step it printed goes in LAST.
train_past() {
    "$P" --ps_hosts="$PSH" --worker_hosts="$WH" --job_name=worker --task_index=0 \
        --startup_deadline=30 --learning_rate=0.01 --save_model_secs=100000 --logdir="$D" \
        --train_steps=100000000 --steps_to_validate=500 >"$T/$1" 2>&1 &
    local pid=$!
    pids+=($pid)
    for _ in $(seq 1200); do
        [ "$(last_step "$T/$1")" -ge "$2" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    LAST=$(last_step "$T/$1")
}

# 1. to step 1000; the final checkpoint.
chief run1.log --train_steps=1000 --steps_to_validate=100
check "[ $RC -eq 0 ] && [ '$(latest)' = 1000 ]" \
  "the first chief ends with model.ckpt-1000 (exit $RC, latest $(latest)): $(tail -3 "$T/run1.log")"

# 2. past step 4000 on the live model, then killed before any checkpoint.
train_past run2.log 4000
check "[ $LAST -ge 4000 ] && [ '$(latest)' = 1000 ]" \
  "a second chief trained to step $LAST past model.ckpt-$(latest) and was killed: $(tail -3 "$T/run2.log")"

# 3. --restore_over_live: the checkpoint wins.
chief run3.log --train_steps=1500 --steps_to_validate=100 --restore_over_live
check "[ $RC -eq 0 ]" "a chief with --restore_over_live exits 0 (got $RC): $(tail -3 "$T/run3.log")"
check "grep -q 'Restoring parameters from $D/model.ckpt-1000\$' '$T/run3.log'" \
  "with --restore_over_live the chief restores model.ckpt-1000: $(grep -i -e restor -e live "$T/run3.log")"
f=$(first_step "$T/run3.log")
check "[ $f -gt 1000 ] && [ $f -le 1100 ]" "and goes on from step 1000 (first step printed: $f)"
fs=$(final_step "$T/run3.log")
check "[ '$fs' = 1500 ] && [ '$(latest)' = 1500 ]" \
  "and ends at step 1500 with model.ckpt-1500 (final ${fs:-?}, latest $(latest))"

# 4. past step 4000 again, killed.
train_past run4.log 4000
L=$LAST
check "[ $L -ge 4000 ] && [ '$(latest)' = 1500 ]" \
  "a fourth chief trained to step $L past model.ckpt-$(latest) and was killed: $(tail -3 "$T/run4.log")"

# 5. no flag: the live model wins, and the chief says so.
N=$((L + 1000))
chief run5.log --train_steps=$N --steps_to_validate=100
check "[ $RC -eq 0 ]" "the restarted chief exits 0 (got $RC): $(tail -3 "$T/run5.log")"
line=$(grep 'live model at global step' "$T/run5.log")
g=$(echo "$line" | sed -n 's/.*live model at global step \([0-9]*\),.*/\1/p')
check "[ -n '$line' ] && [ ${g:-0} -ge $L ] && echo \"\$line\" | grep -q 'model.ckpt-1500 (global step 1500)'" \
  "it logs the live step (>= $L) and the checkpoint's (1500): ${line:-$(grep -i -e restor -e live "$T/run5.log")}"
check "! grep -q 'Restoring parameters' '$T/run5.log'" "it restores nothing: $(grep -i restor "$T/run5.log")"
f=$(first_step "$T/run5.log")
check "[ $f -ge $L ]" "the global step does not go back: first step printed $f, last before the kill $L"
fs=$(final_step "$T/run5.log")
check "[ '$fs' = $N ] && [ '$(latest)' = $N ]" \
  "it ends at step $N with model.ckpt-$N (final ${fs:-?}, latest $(latest))"

kill -TERM "$PSPID" 2>/dev/null
wait "$PSPID"
check "[ $? -eq 0 ]" "the ps stops cleanly: $(tail -2 "$T/ps.log")"
finish
