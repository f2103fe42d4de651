#!/usr/bin/env bash
# The Fashion-MNIST MLP trained data-parallel by a real cluster on loopback: 1 ps and 2 workers
# (scripts/local_cluster.sh with RILL_LOCAL_PROGRAM=fashion_mnist), asynchronous updates, each
# worker on its half of the training set. One epoch with batch 100 takes the chief's test
# accuracy to >= 80%; under the sanitizers each worker trains 150 steps (half an epoch) and the
# bar is 75%. Every process exits 0 and the workers' steps all land on the ps's global step.
# Without Debian's dataset-fashion-mnist it is skipped (77), or fails where it is required (CI,
# RILL_REQUIRE_DATA=1: `make test` installs it; tests/lib.sh). $1 is the build directory.
set -u
. "$(dirname "$0")/../lib.sh" || exit 1
B=${1:?build dir}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$HERE
while [ ! -x "$ROOT/scripts/local_cluster.sh" ] && [ "$ROOT" != / ]; do ROOT=$(dirname "$ROOT"); done
P="$B/examples/fashion_mnist"
# The MLP trains on the CPU here: PoCL standing in for a GPU is ~100x slower at MatMul.
export RILL_OPENCL_CPU_AS_GPU=0
need_fashion_mnist
fail=0; checks=0
check() { checks=$((checks+1)); if ! eval "$1"; then echo "FAIL: $2"; fail=$((fail+1)); fi; }

# 30,000 examples per worker: 300 steps of 100 each per epoch.
if grep -q 'RILL_SANITIZE:BOOL=ON' "$B/CMakeCache.txt"; then steps=150; bar=75; else steps=300; bar=80; fi
t0=$(date +%s)
out=$(RILL_LOCAL_PROGRAM=fashion_mnist RILL_LOCAL_PS=1 RILL_LOCAL_WORKERS=2 \
      timeout 300 "$ROOT/scripts/local_cluster.sh" "$B" --epochs=1 --batch_size=100 \
      --max_steps_per_epoch=$steps --seed=11 --startup_deadline=60 2>&1); rc=$?
dt=$(($(date +%s) - t0))
echo "$out" | sed 's/^/  | /'
check "[ $rc -eq 0 ]" "local_cluster.sh exits 0 (got $rc)"
check "echo \"\$out\" | grep -q '^local_cluster: ps 0 exited 0$'" "the ps exits 0"
check "! echo \"\$out\" | grep -q 'stopping it (SIGTERM)'" "the ps exits by itself once the workers finished"
for i in 0 1; do
    check "echo \"\$out\" | grep -q '^local_cluster: worker $i exited 0: final: global_step [0-9]*'" \
      "worker $i exits 0 with a final line"
done
check "echo \"\$out\" | grep -q '^\[worker 0\] .*worker 0 of 2 trains on 30000 examples'" \
  "worker 0 trains on its half of the training set"
check "echo \"\$out\" | grep -q '^\[worker 1\] .*worker 1 of 2 trains on 30000 examples'" \
  "worker 1 trains on its half of the training set"
check "[ \$(echo \"\$out\" | grep -c '^\[worker 0\] epoch 1: training loss [0-9.]*, test accuracy [0-9.]*%, [0-9]* examples/s$') -eq 1 ]" \
  "the chief prints the epoch line with the test accuracy"
check "[ \$(echo \"\$out\" | grep -c '^\[worker 1\] epoch 1: training loss [0-9.]*, [0-9]* examples/s$') -eq 1 ]" \
  "the other worker prints its training loss and examples/s"
acc=$(echo "$out" | grep '^\[worker 0\] epoch 1:' | sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p')
check "awk -v a='${acc:-0}' -v bar=$bar 'BEGIN{exit !(a>=bar)}'" \
  "the chief's test accuracy ${acc:-?}% >= $bar%"
# The worker that reads the global step last does so after both finished: it sees every step.
g0=$(echo "$out" | sed -n 's/^local_cluster: worker 0 exited 0: final: global_step \([0-9]*\).*/\1/p')
g1=$(echo "$out" | sed -n 's/^local_cluster: worker 1 exited 0: final: global_step \([0-9]*\).*/\1/p')
gmax=$(( ${g0:-0} > ${g1:-0} ? ${g0:-0} : ${g1:-0} ))
check "[ $gmax -eq $((2 * steps)) ]" \
  "the ps's global step counts both workers' steps: ${g0:-?}, ${g1:-?} (want max $((2 * steps)))"
echo "  (cluster: $dt s)"

# --- flags ---
help=$("$P" --help); rc=$?
check "[ $rc -eq 0 ]" "--help exits 0"
for f in ps_hosts worker_hosts job_name task_index startup_deadline max_steps_per_epoch; do
    check "echo \"\$help\" | grep -q -- '--$f'" "--help lists --$f"
done
err=$("$P" --ps_hosts=127.0.0.1:1 --worker_hosts=127.0.0.1:2 --job_name=chef 2>&1); rc=$?
check "[ $rc -eq 2 ]" "unknown job: exit 2 (got $rc): $err"

echo "$((checks-fail)) passed, $fail failed"
[ $fail -eq 0 ]
