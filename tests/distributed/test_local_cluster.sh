#!/usr/bin/env bash
# Real clusters of processes on loopback: the seed's local server prints its string; 1 ps and 2
# workers (scripts/local_cluster.sh) converge asynchronously and the ps exits 0 by itself after them;
# workers started before their ps wait for it; a worker whose ps is not there fails with
# UNAVAILABLE naming the task and address within its deadline; a port already in use is a
# clear error; a worker that loses its ps mid-run says so and exits non-zero. $1 is the build
# directory. Every run has a fresh --logdir: the default, ./checkpoint/, would make a later run
# restore the step an earlier one reached and train nothing.
set -u
B=${1:?build dir}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$HERE
while [ ! -x "$ROOT/scripts/local_cluster.sh" ] && [ "$ROOT" != / ]; do ROOT=$(dirname "$ROOT"); done
P="$B/examples/distributed"
export RILL_OPENCL_CPU_AS_GPU=0
fail=0; checks=0
check() { checks=$((checks+1)); if ! eval "$1"; then echo "FAIL: $2"; fail=$((fail+1)); fi; }
T=$(mktemp -d)
bg=()
trap 'for p in "${bg[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$T"' EXIT

# A loopback port in 20000-32000 (below the kernel's ephemeral range, so no outgoing
# connection holds it) that nothing answers on, in PORT.
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
within() { awk -v v="$1" -v c="$2" -v d="$3" 'BEGIN{exit !(v > c - d && v < c + d)}'; }

# --- the seed's create_local_server ---
out=$(timeout 20 "$B/examples/local_server" 2>"$T/local_server.err"); rc=$?
check "[ $rc -eq 0 ]" "local_server exits 0 (got $rc): $out"
check "[ \"\$out\" = 'Hello, distributed rill!' ]" "local_server prints the string: $out"

# --- 1 ps + 2 workers converge asynchronously (the issue's done-when) ---
t0=$(date +%s)
out=$(timeout 60 "$ROOT/scripts/local_cluster.sh" "$B" --issync=0 --learning_rate=0.01 \
      --train_steps=20000 --steps_to_validate=2000 --logdir="$T/async" 2>&1); rc=$?
echo "$out" | grep -v '^\[worker [01]\] step:' | sed 's/^/  | /'
check "[ $rc -eq 0 ]" "local_cluster.sh exits 0 (got $rc)"
check "echo \"\$out\" | grep -q '^local_cluster: ps 0 exited 0$'" "the ps exits 0"
check "! echo \"\$out\" | grep -q 'stopping it (SIGTERM)'" "the ps exits by itself once the workers finished"
check "echo \"\$out\" | grep -q '^\[worker 0\] step: [0-9]*, weight: -\?[0-9.]*, biase: -\?[0-9.]*, loss: [0-9.]*$'" \
  "workers print the seed's step lines"
for i in 0 1; do
    line=$(echo "$out" | grep "^local_cluster: worker $i exited 0: final:")
    check "[ -n \"\$line\" ]" "worker $i exits 0 with a final line"
    w=$(echo "$line" | sed -n 's/.*weight \([-0-9.]*\),.*/\1/p')
    b=$(echo "$line" | sed -n 's/.*biase \([-0-9.]*\),.*/\1/p')
    g=$(echo "$line" | sed -n 's/.*global_step \([0-9]*\),.*/\1/p')
    check "within '${w:-nan}' 2 0.1" "worker $i: weight ${w:-?} within 0.1 of 2"
    check "within '${b:-nan}' 10 0.3" "worker $i: biase ${b:-?} within 0.3 of 10"
    check "[ '${g:-0}' -ge 20000 ]" "worker $i: global step ${g:-?} reached 20000"
done
echo "  (async cluster: $(($(date +%s) - t0)) s)"

# --- workers started before their ps wait for it, then train ---
free_port; ps=$PORT; free_port; w0=$PORT; free_port; w1=$PORT
hosts="--ps_hosts=127.0.0.1:$ps --worker_hosts=127.0.0.1:$w0,127.0.0.1:$w1"
"$P" $hosts --job_name=worker --task_index=0 --learning_rate=0.01 --train_steps=2000 \
    --steps_to_validate=1000 --startup_deadline=20 --logdir="$T/early" >"$T/w0.log" 2>&1 & wp0=$!
"$P" $hosts --job_name=worker --task_index=1 --learning_rate=0.01 --train_steps=2000 \
    --steps_to_validate=1000 --startup_deadline=20 --logdir="$T/early" >"$T/w1.log" 2>&1 & wp1=$!
bg+=($wp0 $wp1)
sleep 1.5
"$P" $hosts --job_name=ps --task_index=0 >"$T/ps.log" 2>&1 & pp=$!
bg+=($pp)
wait_exit $wp0 30; wait $wp0; rc0=$?
wait_exit $wp1 30; wait $wp1; rc1=$?
kill -TERM $pp; wait_exit $pp 10; wait $pp; rcp=$?
check "[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]" "workers started first train once the ps is up (exits $rc0, $rc1): $(tail -n 2 "$T/w0.log" "$T/w1.log")"
check "grep -q '^final: global_step' '$T/w0.log'" "worker 0 started first prints its final line"
check "[ $rcp -eq 0 ]" "ps exits 0 on SIGTERM (got $rcp): $(tail -n 2 "$T/ps.log")"

# --- a ps that is not there: UNAVAILABLE naming the task and address, within the deadline ---
free_port; dead=$PORT; free_port; w=$PORT
t0=$(date +%s)
err=$(timeout 30 "$P" --ps_hosts=127.0.0.1:$dead --worker_hosts=127.0.0.1:$w --job_name=worker \
      --task_index=0 --train_steps=10 --startup_deadline=2 --logdir="$T/unreachable" 2>&1); rc=$?
dt=$(($(date +%s) - t0))
check "[ $rc -eq 1 ]" "unreachable ps: exit 1 (got $rc): $err"
check "[ $dt -le 10 ]" "unreachable ps: gave up in $dt s with a 2 s deadline"
check "echo \"\$err\" | grep -q 'UNAVAILABLE'" "unreachable ps: UNAVAILABLE: $err"
check "echo \"\$err\" | grep -Eq '/job:ps(/replica:0)?/task:0'" "unreachable ps: names the task: $err"
check "echo \"\$err\" | grep -q \"127.0.0.1:$dead\"" "unreachable ps: names the address: $err"

# --- a port already in use is a clear error ---
free_port; ps=$PORT; free_port; w=$PORT
hosts="--ps_hosts=127.0.0.1:$ps --worker_hosts=127.0.0.1:$w"
"$P" $hosts --job_name=ps --task_index=0 >"$T/ps1.log" 2>&1 & pp=$!
bg+=($pp)
for _ in $(seq 100); do grep -q 'Started server' "$T/ps1.log" && break; sleep 0.1; done
check "kill -0 $pp 2>/dev/null" "the ps started: $(tail -n 2 "$T/ps1.log")"
err=$(timeout 10 "$P" $hosts --job_name=ps --task_index=0 2>&1); rc=$?
check "[ $rc -eq 1 ]" "second ps on the same port: exit 1 (got $rc): $err"
check "echo \"\$err\" | grep -q 'already in use'" "second ps on the same port: 'already in use': $err"

# --- a worker that loses its ps mid-run says so and exits non-zero ---
"$P" $hosts --job_name=worker --task_index=0 --learning_rate=0.01 --train_steps=100000000 \
    --steps_to_validate=1000000 --logdir="$T/lost" >"$T/lost.log" 2>&1 & wp=$!
bg+=($wp)
for _ in $(seq 100); do grep -q 'training' "$T/lost.log" && break; sleep 0.1; done
sleep 0.5
kill -KILL $pp; wait $pp 2>/dev/null
wait_exit $wp 20; exited=$?
wait $wp; rc=$?
check "[ $exited -eq 0 ] && [ $rc -eq 1 ]" "worker that lost its ps exits 1 (exited: $exited, rc $rc): $(tail -n 2 "$T/lost.log")"
check "grep -Eq '/job:ps(/replica:0)?/task:0' '$T/lost.log'" "worker that lost its ps names it: $(tail -n 2 "$T/lost.log")"

# --- flags as the seed's ---
help=$("$P" --help); rc=$?
check "[ $rc -eq 0 ]" "--help exits 0"
for f in learning_rate steps_to_validate ps_hosts worker_hosts job_name task_index issync \
         train_steps logdir; do
    check "echo \"\$help\" | grep -q -- '--$f'" "--help lists --$f"
done
err=$("$P" --ps_hosts=127.0.0.1:1 --worker_hosts=127.0.0.1:2 --job_name=chef 2>&1); rc=$?
check "[ $rc -eq 2 ]" "unknown job: exit 2 (got $rc): $err"
for bad in 4294967296 -1; do
    err=$("$P" --ps_hosts=127.0.0.1:1 --worker_hosts=127.0.0.1:2 --job_name=worker \
          --task_index=$bad 2>&1); rc=$?
    check "[ $rc -eq 2 ] && echo \"\$err\" | grep -q -- '--task_index must be between 0 and'" \
          "--task_index=$bad is refused, not wrapped to another task (exit $rc): $err"
done

# --- a cluster secret: a stranger without it is refused, a member with it trains ---
K="$T/secret"
"$B/bin/rill-keygen" "$K"
check "[ \"\$(stat -c %a '$K')\" = 600 ] && [ \$(head -c 64 '$K' | tr -d '0-9a-f' | wc -c) -eq 0 ]" \
      "rill-keygen writes 64 hex characters, mode 0600"
"$B/bin/rill-keygen" "$K" 2>/dev/null; rc=$?
check "[ $rc -ne 0 ]" "rill-keygen never overwrites a secret (exit $rc)"
free_port; ps=$PORT; free_port; w0=$PORT
hosts="--ps_hosts=127.0.0.1:$ps --worker_hosts=127.0.0.1:$w0"
RILL_CLUSTER_SECRET_FILE="$K" "$P" $hosts --job_name=ps --task_index=0 >"$T/sps.log" 2>&1 &
spp=$!
bg+=($spp)
sleep 0.5
err=$(timeout 30 "$P" $hosts --job_name=worker --task_index=0 --train_steps=100 \
      --startup_deadline=5 --logdir="$T/stranger" 2>&1); rc=$?
check "[ $rc -ne 0 ] && echo \"\$err\" | grep -q UNAUTHENTICATED" \
      "a worker without the secret is refused (exit $rc): $(echo "$err" | tail -n 1)"
timeout 60 "$P" $hosts --job_name=worker --task_index=0 --cluster_secret_file="$K" \
    --learning_rate=0.01 --train_steps=500 --steps_to_validate=500 --startup_deadline=20 \
    --logdir="$T/member" >"$T/sw.log" 2>&1; rc=$?
check "[ $rc -eq 0 ] && grep -q '^final: global_step' '$T/sw.log'" \
      "a worker with the secret trains (exit $rc): $(tail -n 1 "$T/sw.log")"
kill -TERM $spp 2>/dev/null
wait $spp 2>/dev/null
echo "short" >"$T/short"
err=$("$P" $hosts --job_name=worker --task_index=0 --cluster_secret_file="$T/short" 2>&1); rc=$?
check "[ $rc -eq 2 ] && echo \"\$err\" | grep -q 'at least 32'" "a too short secret is refused (exit $rc): $err"

# --- two jobs under Slurm on one node: the port collision says how to move one (RILL_BASE_PORT) ---
bp=$((30000 + RANDOM % 20000))
SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_JOB_NODELIST=localhost SLURM_TASKS_PER_NODE=2 RILL_BASE_PORT=$bp \
    "$P" >"$T/slurm_ps.log" 2>&1 &
sp=$!
sleep 1
err=$(SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_JOB_NODELIST=localhost SLURM_TASKS_PER_NODE=2 \
      RILL_BASE_PORT=$bp timeout 20 "$P" 2>&1); rc=$?
kill "$sp" 2>/dev/null
wait "$sp" 2>/dev/null
check "[ $rc -ne 0 ] && echo \"\$err\" | grep -q 'already in use' && echo \"\$err\" | grep -q RILL_BASE_PORT" \
      "a second Slurm job on the same ports names RILL_BASE_PORT (exit $rc): $err"
echo "$((checks-fail)) passed, $fail failed"
[ $fail -eq 0 ]
