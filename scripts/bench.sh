#!/usr/bin/env bash
# Runs the benchmarks of bench/ from build dir $1 and prints their results with the machine.
# The numbers that docs/BENCHMARKS.md records come from here.
set -euo pipefail
B=${1:-build}
echo "== machine"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
echo "kernel: $(uname -r); OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}"
echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo); ${TMPDIR:-/tmp} on: $(df -T "${TMPDIR:-/tmp}" | awk 'NR == 2 {print $2 " (" $1 ")"}')"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "== seed graph step vs hand-written loop"
"$B/bench/bench_seed_step" 200000
echo
echo "== sgemm: OpenBLAS, BLIS and oneDNN on the MLP's shapes and 1024^3"
"$B/bench/bench_gemm" "$(nproc)"
echo
echo "== the vector loops, each version against generic and memcpy"
"$B/bench/bench_loops"
echo
echo "== MLP training step vs GEMM floor"
"$B/bench/bench_mlp_step" 40
echo
echo "== the seed's step in TensorFlow and PyTorch (same script, same machine)"
PY=.venv/bin/python
if [ -x "$PY" ]; then
  for fw in tf torch; do
    TF_CPP_MIN_LOG_LEVEL=3 "$PY" bench/baseline_seed_step.py 20000 $fw 2>&1 | grep -v -E '^(WARNING|I0000|W0000|E0000)'
  done
else
  echo "skipped: no .venv (make bench-baselines installs tensorflow-cpu and torch into it)"
fi
echo
echo "== devices: elementwise, MatMul and copies per device"
mkdir -p "$B/pocl-cache"
RILL_OPENCL_CPU_AS_GPU=1 POCL_CACHE_DIR="$B/pocl-cache" "$B/bench/bench_devices"
echo
echo "== transport: rill's TCP channel against raw TCP on loopback (same run)"
"$B/bench/bench_transport"
echo
echo "== the seed's step on a cluster (1 ps + 1 worker on loopback) against two raw TCP round trips"
RILL_OPENCL_CPU_AS_GPU=0 "$B/bench/bench_cluster_step" 3000 2>&1 | grep -v '^I[0-9]'
echo
echo "== parameter-server bandwidth: 64 MiB over 1, 2, 4 ps tasks in network namespaces behind 1 Gbit/s links, parallel and serial calls (same run; needs root)"
RILL_OPENCL_CPU_AS_GPU=0 bench/bench_ps_bandwidth.sh "$B" 64 3
echo
echo "== synchronous vs asynchronous training: the seed's model, 1 ps + 2 and 4 workers, rill and TensorFlow (same run)"
RILL_OPENCL_CPU_AS_GPU=0 bench/bench_sync.sh "$B" 2 4
echo
echo "== checkpoints: rill_saver_save/restore against write()+fsync and read() of the same bytes (same run)"
"$B/bench/bench_checkpoint" --mib=256 --reps=5
echo
"$B/bench/bench_checkpoint" --mib=1024 --reps=3
echo
echo "-- the same 256 MiB as 1024 variables of 256 KiB"
"$B/bench/bench_checkpoint" --mib=256 --var_kib=256 --reps=3
