#!/usr/bin/env bash
# The default build runs on older CPUs and picks their code paths: under QEMU's user-mode
# emulator (Debian's qemu-user) the programs run as on
#   qemu64   the x86-64 baseline: no SSE4.2, no AVX    -> generic loops, CRC32C by tables
#   Nehalem  x86-64-v2 (SSE4.2, POPCNT)               -> generic loops, CRC32C by crc32
#   Haswell  x86-64-v3 (AVX2, FMA)                    -> avx2 loops
# For each: rill-info says what it found and chose, the seed's model trains, and the vector-loop
# test (every usable version against the generic one, CRC32C's paths) passes on that CPU. QEMU's
# emulator has no AVX-512, so the avx512 path is checked natively (tests/kernels/test_cpu_loops).
# $1 is the build directory.
set -u
. "$(dirname "$0")/../lib.sh"
B=${1:?usage: test_cpus.sh BUILD_DIR}
[ "$(uname -m)" = x86_64 ] || skip "not an x86-64 machine ($(uname -m))"
skip_cpu_specific "$B"
built_with "$B" RILL_SANITIZE &&
    skip "the sanitizers' runtimes do not run under QEMU's user-mode emulator"
# The CPU paths are the subject: no PoCL "GPU" (its LLVM would compile for the host, not the
# emulated CPU).
export RILL_OPENCL_CPU_AS_GPU=0
QEMU=$(command -v qemu-x86_64) || missing RILL_REQUIRE_DEPS "no qemu-x86_64 (Debian's qemu-user; make installs it)"

emu() { # emu CPU PROGRAM ARGS...: runs under QEMU, its warnings about unemulated features dropped
    local cpu=$1
    shift
    timeout 300 "$QEMU" -cpu "$cpu" "$@" 2> >(grep -v "TCG doesn't support requested feature" >&2)
}

results=""
for spec in "qemu64 generic tables" "Nehalem generic sse4.2" "Haswell avx2 sse4.2"; do
    set -- $spec
    cpu=$1 loops=$2 crc=$3
    info=$(emu "$cpu" "$B/bin/rill-info")
    rc=$?
    echo "$info" | sed "s/^/  [$cpu] /"
    check "[ $rc -eq 0 ] && echo \"\$info\" | grep -q '^elementwise loops: $loops '" "$cpu: rill-info runs and chose the $loops loops"
    check "echo \"\$info\" | grep -q '^crc32c: .*$crc'" "$cpu: CRC32C by $crc"
    case $cpu in
    qemu64) check "! echo \"\$info\" | grep -q 'features:.*sse4.2'" "$cpu: no SSE4.2 found" ;;
    Haswell) check "echo \"\$info\" | grep -q 'features:.*avx2' && ! echo \"\$info\" | grep -q avx512f" \
        "$cpu: AVX2 found, no AVX-512" ;;
    esac
    out=$(emu "$cpu" "$B/examples/linear_regression" --learning_rate=0.01 --train_steps=3000 \
        --steps_to_validate=3000 --seed=7 2>&1)
    rc=$?
    last=$(echo "$out" | tail -1)
    echo "  [$cpu] $last"
    w=$(echo "$last" | sed -n 's/.*weight: \([-0-9.]*\).*/\1/p')
    b=$(echo "$last" | sed -n 's/.*biase: \([-0-9.]*\).*/\1/p')
    check "[ $rc -eq 0 ] && awk -v w='$w' -v b='$b' 'BEGIN {exit !(w != \"\" && (w - 2)^2 < 0.04 && (b - 10)^2 < 0.09)}'" \
        "$cpu: the seed's model trains (weight $w, biase $b)"
    results="$results$w $b
"
    out=$(emu "$cpu" "$B/tests/test_cpu_loops" 2>&1)
    rc=$?
    check "[ $rc -eq 0 ] || [ $rc -eq 77 ]" "$cpu: test_cpu_loops passes ($(echo "$out" | tail -1))"
    [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || echo "$out" | tail -20
done

# Every version gives the same bits, so the model trains to the same values on every CPU.
n=$(printf '%s' "$results" | sort -u | wc -l)
check "[ $n -eq 1 ]" "the same weight and bias on every CPU"

finish
