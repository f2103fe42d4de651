#!/usr/bin/env bash
# Jobs that end: build/examples/distributed as 1 ps + 2 worker processes on loopback. After
# training, asynchronous and synchronous, the ps exits 0 by itself (saying that all 2 workers
# finished), after the chief's last checkpoint, which its data shard is part of; with
# --ps_join_forever (or RILL_PS_JOIN_FOREVER=1) it serves on until SIGTERM; a worker killed
# mid-run never counts as finished, so the ps serves on. $1 is the build directory.
set -u
B=${1:?build dir}
P="$B/examples/distributed"
export RILL_OPENCL_CPU_AS_GPU=0
fail=0; checks=0
check() { checks=$((checks+1)); if ! eval "$1"; then echo "FAIL: $2"; fail=$((fail+1)); fi; }
T=$(mktemp -d)
bg=()
trap 'for p in "${bg[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$T"' EXIT

# A loopback port in 20000-32000 that nothing answers on, in PORT.
free_port() {
    while :; do
        PORT=$((20000 + (RANDOM * 32768 + RANDOM) % 12001))
        (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || return 0
    done
}
# Waits up to $2 seconds for process $1 to exit; 0 when it did.
wait_exit() {
    for _ in $(seq $(($2 * 10))); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
    return 1
}
# Waits up to $3 seconds for file $1 to hold a line matching $2; 0 when it does.
wait_line() {
    for _ in $(seq $(($3 * 10))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    return 1
}

# SIGTERM to the ps; its exit status (137 when it had to be killed, 10 s later).
stop_ps() {
    kill -TERM $PSP 2>/dev/null
    wait_exit $PSP 10 || kill -KILL $PSP
    wait $PSP
}

# Starts 1 ps ($PS_FLAGS) and 2 workers (the rest of the arguments) in $T/$NAME; PSP, WP0, WP1.
start_cluster() {
    free_port; local ps=$PORT; free_port; local w0=$PORT; free_port; local w1=$PORT
    local hosts="--ps_hosts=127.0.0.1:$ps --worker_hosts=127.0.0.1:$w0,127.0.0.1:$w1"
    mkdir -p "$T/$NAME"
    "$P" $hosts --job_name=ps --task_index=0 ${PS_FLAGS:-} >"$T/$NAME/ps.log" 2>&1 & PSP=$!
    "$P" $hosts --job_name=worker --task_index=0 --logdir="$T/$NAME/ck" "$@" >"$T/$NAME/w0.log" 2>&1 & WP0=$!
    "$P" $hosts --job_name=worker --task_index=1 --logdir="$T/$NAME/ck" "$@" >"$T/$NAME/w1.log" 2>&1 & WP1=$!
    bg+=($PSP $WP0 $WP1)
}

# --- after training the ps exits 0 by itself: asynchronous, then synchronous ---
for sync in 0 1; do
    NAME=sync$sync
    t0=$(date +%s.%N)
    PS_FLAGS="" start_cluster --issync=$sync --learning_rate=0.01 --train_steps=1500 \
        --steps_to_validate=500 --startup_deadline=30
    wait_exit $WP0 90; wait $WP0; rc0=$?
    wait_exit $WP1 90; wait $WP1; rc1=$?
    t1=$(date +%s.%N)
    wait_exit $PSP 10; gone=$?
    t2=$(date +%s.%N)
    [ $gone -eq 0 ] || kill -KILL $PSP
    wait $PSP; rcp=$?
    L="$T/$NAME"
    check "[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]" "issync=$sync: workers exit 0 ($rc0, $rc1): $(tail -n 2 "$L/w0.log" "$L/w1.log")"
    check "grep -q '^final: global_step' '$L/w0.log'" "issync=$sync: the chief prints its final line"
    check "[ $gone -eq 0 ] && [ $rcp -eq 0 ]" "issync=$sync: the ps exits 0 by itself after the workers (gone: $gone, exit $rcp): $(tail -n 3 "$L/ps.log")"
    check "grep -q '^/job:ps/task:0: exiting: all 2 workers finished$' '$L/ps.log'" \
          "issync=$sync: the ps says why it exits: $(tail -n 2 "$L/ps.log")"
    check "grep -q 'all 2 workers of the cluster finished; join returns' '$L/ps.log'" \
          "issync=$sync: the server logs that every worker finished"
    # The chief's last checkpoint is complete: its state file names a step >= 1500 whose index
    # and the ps's data shard are there (the ps was still up when it was written).
    last=$(sed -n 's/^model_checkpoint_path: "\(.*\)"$/\1/p' "$L/ck/checkpoint" 2>/dev/null)
    step=${last##*-}
    check "[ '${step:-0}' -ge 1500 ] && [ -f '${last}.index' -o -f '$L/ck/${last##*/}.index' ]" \
          "issync=$sync: the last checkpoint ($last) is of step >= 1500 with its index"
    check "ls '$L'/ck/model.ckpt-$step.data-00000-of-00001 >/dev/null 2>&1" \
          "issync=$sync: the ps wrote its shard of the last checkpoint: $(ls "$L/ck")"
    echo "  issync=$sync: trained in $(echo "$t1 - $t0" | bc) s; the ps was gone $(echo "$t2 - $t1" | bc) s after the last worker"
done

# --- --ps_join_forever: TensorFlow's join, serve until SIGTERM ---
for how in flag env; do
    NAME=forever_$how
    if [ $how = flag ]; then
        PS_FLAGS="--ps_join_forever" start_cluster --learning_rate=0.01 --train_steps=300
    else
        RILL_PS_JOIN_FOREVER=1 PS_FLAGS="" start_cluster --learning_rate=0.01 --train_steps=300
    fi
    wait_exit $WP0 60; wait $WP0; rc0=$?
    wait_exit $WP1 60; wait $WP1; rc1=$?
    wait_line "$T/$NAME/ps.log" "finished (2 of 2 workers)" 10
    ! wait_exit $PSP 1; up=$?
    stop_ps; rcp=$?
    check "[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]" "join forever ($how): workers exit 0 ($rc0, $rc1)"
    check "grep -q 'finished (2 of 2 workers); serving on (join_forever)' '$T/$NAME/ps.log'" \
          "join forever ($how): the ps heard both workers and serves on: $(tail -n 2 "$T/$NAME/ps.log")"
    check "[ $up -eq 0 ]" "join forever ($how): the ps is still up after every worker finished"
    check "[ $rcp -eq 0 ] && grep -q '^/job:ps/task:0: stopped$' '$T/$NAME/ps.log'" \
          "join forever ($how): SIGTERM stops it with exit 0 (got $rcp): $(tail -n 1 "$T/$NAME/ps.log")"
done

# --- a worker killed mid-run never counts: the ps serves on ---
NAME=killed
PS_FLAGS="" start_cluster --learning_rate=0.01 --train_steps=20000 --steps_to_validate=100000
wait_line "$T/$NAME/w1.log" "training" 30
kill -KILL $WP1; wait $WP1 2>/dev/null
wait_exit $WP0 60; wait $WP0; rc0=$?
wait_line "$T/$NAME/ps.log" "finished (1 of 2 workers)" 10
! wait_exit $PSP 1; up=$?
stop_ps; rcp=$?
check "[ $rc0 -eq 0 ]" "killed worker: the other worker trains on and exits 0 (got $rc0): $(tail -n 1 "$T/$NAME/w0.log")"
check "grep -q '/job:worker/task:0 finished (1 of 2 workers)' '$T/$NAME/ps.log'" \
      "killed worker: the ps heard the worker that finished: $(tail -n 2 "$T/$NAME/ps.log")"
check "[ $up -eq 0 ] && ! grep -q 'task:1 finished' '$T/$NAME/ps.log'" \
      "killed worker: the killed worker never counts; the ps serves on"
check "[ $rcp -eq 0 ]" "killed worker: SIGTERM still stops the ps cleanly (got $rcp)"

echo "$((checks-fail)) passed, $fail failed"
[ $fail -eq 0 ]
