# tests/lib.sh - what the script tests (tests/<layer>/test_*.sh) share; each sources it with
#     . "$(dirname "$0")/../lib.sh"
# before it defines its own checks and counters (fail, checks).
#
# Skipping is honest, as in tests/test.h: ctest runs every test with SKIP_RETURN_CODE 77, so a
# script that cannot run here prints one line "SKIPPED: <reason>" and exits 77, and ctest reports
# it as skipped rather than passed. A prerequisite that `make test` provides (the project's
# .venv, Debian's Fashion-MNIST) is a failure instead where it is required: under CI, or with
# RILL_REQUIRE_VENV=1 / RILL_REQUIRE_DATA=1 (see `missing`).

# skip REASON: this test cannot run here. Prints "SKIPPED: REASON" and the summary line and exits
# 77, or 1 when a check has already failed (a skip never hides a failure).
skip() {
    local c=${checks:-0} f=${fail:-0}
    echo "SKIPPED: $1"
    echo "$((c - f)) passed, $f failed, 1 skipped"
    [ "$f" -eq 0 ] && exit 77
    exit 1
}

# required VAR: true when a prerequisite that `make test` provides must be here: CI is set (to
# anything but "", "0" or "false"), or the variable named VAR is "1".
required() {
    case "${CI:-}" in "" | 0 | false) ;; *) return 0 ;; esac
    [ "${!1:-}" = 1 ]
}

# missing VAR REASON: a prerequisite that `make test` provides is not here. A failure ("FAIL:
# REASON", exit 1) where `required VAR`, else a skip with REASON.
missing() {
    if required "$1"; then
        local c=${checks:-0} f=${fail:-0}
        echo "FAIL: $2 (required here: CI or $1=1 is set)"
        echo "$((c - f)) passed, $((f + 1)) failed"
        exit 1
    fi
    skip "$2 ($1=1 makes this a failure)"
}

# check COND WHAT: evaluates COND and counts it, printing "ok: WHAT" or "FAIL: WHAT". (Older
# scripts define a quieter check of their own after sourcing this file.)
fail=0
checks=0
check() {
    checks=$((checks + 1))
    if eval "$1"; then
        echo "ok: $2"
        return 0
    fi
    echo "FAIL: $2"
    fail=$((fail + 1))
    return 1
}

# finish: the summary line ("N passed, M failed"), then exit 0, or 1 when a check failed.
finish() {
    echo "$((checks - fail)) passed, $fail failed"
    [ "$fail" -eq 0 ] && exit 0
    exit 1
}

# built_with BUILD VAR: the build directory's CMakeCache has the option VAR set to one of CMake's
# true values (ON, 1, TRUE, YES, Y, in any case).
built_with() {
    grep -Eqi "^$2:BOOL=(ON|1|TRUE|YES|Y)\$" "$1/CMakeCache.txt" 2>/dev/null
}

# skip_cpu_specific BUILD: skips a test of the portable build on a build compiled for one CPU on
# purpose (RILL_NATIVE, or a -march in CMAKE_C_FLAGS).
skip_cpu_specific() {
    built_with "$1" RILL_NATIVE && skip "a RILL_NATIVE build is compiled for this machine's CPU on purpose"
    local march
    march=$(sed -n 's/^CMAKE_C_FLAGS:STRING=.*\(-march=[^ ]*\).*/\1/p' "$1/CMakeCache.txt" 2>/dev/null)
    [ -z "$march" ] || skip "CMAKE_C_FLAGS chooses a CPU ($march) on purpose"
}

# need_fashion_mnist: Debian's dataset-fashion-mnist is installed, or the test is skipped (a
# failure where it is required: `missing`).
need_fashion_mnist() {
    [ -f /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz ] ||
        missing RILL_REQUIRE_DATA "Fashion-MNIST is not installed in /usr/share/datasets/fashion-mnist; make installs Debian's dataset-fashion-mnist"
}

# free_port: sets PORT to a loopback port in 20000-32000 that nothing answers on and that this
# script has not handed out before (a connect through bash's /dev/tcp succeeds only when
# something listens).
_taken_ports=" "
free_port() {
    while :; do
        PORT=$((20000 + (RANDOM * 32768 + RANDOM) % 12001))
        case "$_taken_ports" in *" $PORT "*) continue ;; esac
        (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && continue
        _taken_ports="$_taken_ports$PORT "
        return 0
    done
}

# wait_exit PID SECONDS: waits up to SECONDS for process PID to exit; 0 when it did.
wait_exit() {
    local i
    for i in $(seq $(($2 * 10))); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
    return 1
}
