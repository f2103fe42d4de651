#!/usr/bin/env bash
# A default build runs on any x86-64 CPU: the disassembly of librill.so holds no AVX-512 (EVEX)
# and no AVX (VEX) instruction outside the functions that are chosen at run time, which are the
# ones loops_isa.c compiles per instruction set and names with its suffix (_avx2, _avx512).
# The check is shown to see what it looks for: the _avx512 and _avx2 functions must themselves
# hold such instructions. $1 is the build directory. Skips on a RILL_NATIVE build (compiled for
# the build machine on purpose) and off x86-64.
set -u
. "$(dirname "$0")/../lib.sh"
B=${1:?usage: test_portable.sh BUILD_DIR}

[ "$(uname -m)" = x86_64 ] || skip "not an x86-64 machine ($(uname -m))"
skip_cpu_specific "$B"
command -v objdump >/dev/null || skip "no objdump (binutils)"
LIB="$B/librill.so"
[ -e "$LIB" ] || { echo "FAIL: no $LIB"; echo "0 passed, 1 failed"; exit 1; }

# One line per function: "<name> <evex count> <vex count>". An instruction is EVEX when its first
# byte after legacy prefixes is 0x62 (in 64-bit mode that byte is nothing else) or it names a
# register only AVX-512 has (zmm, k0-k7, xmm/ymm16-31); VEX when that byte is 0xc4 or 0xc5.
report=$(objdump -d -w "$LIB" | awk '
    /^[0-9a-f]+ <.*>:$/ {
        if (fn != "") print fn, evex, vex
        fn = substr($2, 2, length($2) - 3); evex = 0; vex = 0; next
    }
    fn != "" && /^ +[0-9a-f]+:\t/ {
        split($0, part, "\t")
        nb = split(part[2], bytes, " ")
        k = 1
        while (k <= nb && bytes[k] ~ /^(66|67|f2|f3|2e|3e|26|36|64|65|f0)$/) k++
        ins = part[3]
        if (bytes[k] == "62" || ins ~ /%zmm|%k[0-7]|%[xy]mm(1[6-9]|2[0-9]|3[01])/) evex++
        else if (bytes[k] == "c4" || bytes[k] == "c5") vex++
    }
    END { if (fn != "") print fn, evex, vex }')
nfn=$(printf '%s\n' "$report" | wc -l)
check "[ $nfn -gt 1000 ]" "objdump found the library's functions ($nfn)"

bad_evex=$(printf '%s\n' "$report" | awk '$2 > 0 && $1 !~ /_avx512([.].*)?$/ {print "  " $1 " (" $2 ")"}')
bad_vex=$(printf '%s\n' "$report" | awk '$3 > 0 && $1 !~ /_avx(2|512)([.].*)?$/ {print "  " $1 " (" $3 ")"}')
[ -n "$bad_evex" ] && printf 'AVX-512 instructions outside the run-time dispatched functions:\n%s\n' "$bad_evex"
[ -n "$bad_vex" ] && printf 'AVX instructions outside the run-time dispatched functions:\n%s\n' "$bad_vex"
check "[ -z \"\$bad_evex\" ]" "no AVX-512 instruction outside functions named *_avx512"
check "[ -z \"\$bad_vex\" ]" "no AVX instruction outside functions named *_avx2 or *_avx512"

# The detector detects: the dispatched versions are really compiled for their sets.
evex512=$(printf '%s\n' "$report" | awk '$1 ~ /_avx512([.].*)?$/ {s += $2} END {print s + 0}')
vex2=$(printf '%s\n' "$report" | awk '$1 ~ /_avx2([.].*)?$/ {s += $3} END {print s + 0}')
check "[ $evex512 -gt 100 ]" "the _avx512 functions hold AVX-512 instructions ($evex512)"
check "[ $vex2 -gt 100 ]" "the _avx2 functions hold AVX instructions ($vex2)"

finish
