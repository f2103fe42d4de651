#!/usr/bin/env bash
# The Fashion-MNIST CNN (examples/fashion_mnist_cnn) on a real cluster on loopback, with the same
# flags as `distributed`: 1 ps and 2 workers (scripts/local_cluster.sh with
# RILL_LOCAL_PROGRAM=fashion_mnist_cnn), asynchronous updates, each worker on its half of the
# training set for a short epoch (20 steps of 100; 10 under the sanitizers). Every process exits
# 0, the chief prints the epoch line with a test accuracy well above chance, and the workers'
# steps all land on the ps's global step. Skipped (77) without Debian's dataset-fashion-mnist,
# or a failure where it is required (tests/lib.sh). $1 is the build directory.
set -u
. "$(dirname "$0")/../lib.sh" || exit 1
B=${1:?build dir}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$HERE
while [ ! -x "$ROOT/scripts/local_cluster.sh" ] && [ "$ROOT" != / ]; do ROOT=$(dirname "$ROOT"); done
export RILL_OPENCL_CPU_AS_GPU=0
need_fashion_mnist

steps=20
built_with "$B" RILL_SANITIZE && steps=10
out=$(RILL_LOCAL_PROGRAM=fashion_mnist_cnn RILL_LOCAL_PS=1 RILL_LOCAL_WORKERS=2 \
      timeout 300 "$ROOT/scripts/local_cluster.sh" "$B" --epochs=1 --batch_size=100 \
      --max_steps_per_epoch=$steps --seed=5 --eval_batch=500 --startup_deadline=60 2>&1); rc=$?
echo "$out" | sed 's/^/  | /'
check "[ $rc -eq 0 ]" "local_cluster.sh exits 0 (got $rc)"
check "echo \"\$out\" | grep -q '^local_cluster: ps 0 exited 0$'" "the ps stops cleanly on SIGTERM"
for i in 0 1; do
    check "echo \"\$out\" | grep -q '^local_cluster: worker $i exited 0: final: global_step [0-9]*'" \
      "worker $i exits 0 with a final line"
    check "echo \"\$out\" | grep -q '^\[worker $i\] .*worker $i of 2 trains on 30000 examples'" \
      "worker $i trains on its half of the training set"
done
check "[ \$(echo \"\$out\" | grep -c '^\[worker 0\] epoch 1: training loss [0-9.]*, test accuracy [0-9.]*%, [0-9]* examples/s$') -eq 1 ]" \
  "the chief prints the epoch line with the test accuracy"
acc=$(echo "$out" | grep '^\[worker 0\] epoch 1:' | sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p')
check "awk -v a='${acc:-0}' 'BEGIN{exit !(a>=40)}'" "the chief's test accuracy ${acc:-?}% >= 40% (chance: 10%)"
g0=$(echo "$out" | sed -n 's/^local_cluster: worker 0 exited 0: final: global_step \([0-9]*\).*/\1/p')
g1=$(echo "$out" | sed -n 's/^local_cluster: worker 1 exited 0: final: global_step \([0-9]*\).*/\1/p')
gmax=$(( ${g0:-0} > ${g1:-0} ? ${g0:-0} : ${g1:-0} ))
check "[ $gmax -eq $((2 * steps)) ]" \
  "the ps's global step counts both workers' steps: ${g0:-?}, ${g1:-?} (want max $((2 * steps)))"
finish
