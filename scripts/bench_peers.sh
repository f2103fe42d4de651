#!/usr/bin/env bash
# Issue 10's models in rill and in the peers, back to back on the same cores and thread counts:
# the MLP training step (784-512-512-10, batch 256, SGD), the Fashion-MNIST CNN's training
# throughput (batch 100, Adam) and the seed's step, with the ratios rill / peer and rill / the
# GEMM floor measured in the same run (oneDNN, the fastest library bench_gemm found). TensorFlow
# and PyTorch come from the project's virtualenv (`make bench-baselines` adds PyTorch); a missing
# one is reported as skipped. $1 is the build directory.
set -u
B=${1:-build}
PY=.venv/bin/python
T=$(nproc)
echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $T cores, $(date -u +%Y-%m-%dT%H:%MZ)"
"$B/bin/rill-info" | sed 's/^/   /'
mlp=$("$B/bench/bench_mlp_step" 40 | grep RESULT)
echo "rill:  $mlp"
rill_mlp=$(echo "$mlp" | sed 's/.*mlp_step_ms=\([0-9.]*\).*/\1/')
floor=$(echo "$mlp" | sed 's/.*gemm_floor_ms=\([0-9.]*\).*/\1/')
cnn=$("$B/examples/fashion_mnist_cnn" --epochs=1 --max_steps_per_epoch=60 --seed=1 --eval_batch=1000 | grep '^epoch 1')
rill_cnn=$(echo "$cnn" | sed 's/.* \([0-9]*\) examples\/s$/\1/')
echo "rill:  cnn_examples_per_s=$rill_cnn ($cnn)"
seed=$("$B/bench/bench_seed_step" 200000 | grep RESULT)
rill_seed=$(echo "$seed" | sed 's/.*seed_step_us=\([0-9.]*\).*/\1/')
echo "rill:  $seed"
for fw in tf torch; do
    [ -x "$PY" ] || { echo "$fw: skipped (no $PY: make venv)"; continue; }
    out=$("$PY" bench/baseline_models.py "$fw" "$T" 40 30 2>/dev/null | grep -E 'RESULT|skipped')
    echo "$fw:   $out" | sed "2,\$s/^/      /"
    m=$(echo "$out" | sed -n 's/.*mlp_step_ms=\([0-9.]*\).*/\1/p')
    c=$(echo "$out" | sed -n 's/.*cnn_examples_per_s=\([0-9.]*\).*/\1/p')
    s=$("$PY" bench/baseline_seed_step.py 20000 "$fw" 2>/dev/null | sed -n 's/.*step_us=\([0-9.]*\).*/\1/p' | head -1)
    [ -n "$m" ] && awk -v r="$rill_mlp" -v p="$m" -v f="$floor" -v fw="$fw" 'BEGIN {
        printf "ratio: MLP step rill/%s %.2f in time (rill %.2f ms, %s %.2f ms); rill/GEMM floor %.2f\n", fw, r / p, r, fw, p, r / f }'
    [ -n "$c" ] && awk -v r="$rill_cnn" -v p="$c" -v fw="$fw" 'BEGIN {
        printf "ratio: CNN examples/s rill/%s %.2f (rill %d, %s %d)\n", fw, r / p, r, fw, p }'
    [ -n "$s" ] && awk -v r="$rill_seed" -v p="$s" -v fw="$fw" 'BEGIN {
        printf "ratio: seed step %s/rill %.0fx (rill %.2f us, %s %.1f us)\n", fw, p / r, r, fw, p }'
done
exit 0
