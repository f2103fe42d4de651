#!/usr/bin/env bash
# rill installs like a C library: `cmake --install BUILD --prefix P` lays out the headers, both
# libraries (with a soname), rill.pc, the CMake package and the programs; then a program outside
# rill (consumer.c: trains the seed's model, prints the weight and bias) is built against P four
# ways and run each time:
#   1. pkg-config, shared library     cc consumer.c $(pkg-config --cflags --libs rill)
#   2. pkg-config --static            the archive (-l:librill.a) and --static's Libs.private
#   3. CMake find_package(rill)       rill::rill and rill::rill_static
#   4. CMake add_subdirectory(rill)   from the source tree, with tests/examples/bench off
# The compiler is the build's (RILL_C_COMPILER, set by CMakeLists.txt); a sanitizer build's
# consumers are built with the same sanitizers. $1 is the build directory.
set -u
. "$(dirname "$0")/../lib.sh"
B=$(cd "${1:?usage: test_install.sh BUILD_DIR}" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CC=${RILL_C_COMPILER:-cc}
command -v pkg-config >/dev/null || missing RILL_REQUIRE_DEPS "no pkg-config"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
P="$T/prefix with space"
SAN=""
built_with "$B" RILL_SANITIZE && SAN="-fsanitize=address,undefined"
VERSION=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$B/CMakeCache.txt")

cmake --install "$B" --prefix "$P" >"$T/install.log" 2>&1
rc=$?
check "[ $rc -eq 0 ]" "cmake --install $B --prefix P" || cat "$T/install.log"
L="$P/lib"
[ -d "$L" ] || L=$(dirname "$(find "$P" -name librill.a | head -1)")
for f in include/rill/rill.h include/rill/version.h include/rill/tensor.h; do
    check "[ -f \"\$P/$f\" ]" "installed $f"
done
check "[ -f \"\$L/librill.a\" ] && [ -f \"\$L/librill.so.$VERSION\" ]" "librill.a and librill.so.$VERSION"
check "[ \"\$(readlink \"\$L/librill.so\")\" = librill.so.${VERSION%%.*} ] && [ \"\$(readlink \"\$L/librill.so.${VERSION%%.*}\")\" = librill.so.$VERSION ]" \
    "librill.so -> librill.so.${VERSION%%.*} -> librill.so.$VERSION"
soname=$(readelf -d "$L/librill.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
check "[ \"\$soname\" = librill.so.${VERSION%%.*} ]" "the soname is librill.so.${VERSION%%.*} ($soname)"
needed=$(readelf -d "$L/librill.so.$VERSION" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
check "echo \"\$needed\" | grep -q libdnnl && echo \"\$needed\" | grep -q libsodium && echo \"\$needed\" | grep -q libz" \
    "the shared library carries its dependencies ($needed)"
internal=$(nm -D --defined-only "$L/librill.so.$VERSION" | awk '$3 ~ /^rill__/' | wc -l)
public=$(nm -D --defined-only "$L/librill.so.$VERSION" | awk '$3 ~ /^rill_[a-z]/' | wc -l)
check "[ $internal -eq 0 ] && [ $public -gt 200 ]" "exports the public API only ($public rill_* symbols, $internal internal)"
for f in pkgconfig/rill.pc cmake/rill/rillConfig.cmake cmake/rill/rillConfigVersion.cmake cmake/rill/rillTargets.cmake; do
    check "[ -f \"\$L/$f\" ]" "installed lib/$f"
done
for p in rill-distributed rill-local-reload-test rill-linear-regression rill-info rill-inspect-checkpoint rill-events rill_ops; do
    check "[ -x \"\$P/bin/$p\" ]" "installed bin/$p"
done
# The installed programs run from anywhere (no path into the build tree).
out=$("$P/bin/rill-info" 2>&1)
check "echo \"\$out\" | grep -q \"^rill $VERSION\$\" && echo \"\$out\" | grep -q '^elementwise loops: '" "bin/rill-info runs and says what it chose"
check "! readelf -d \"\$P/bin/rill-distributed\" | grep -q \"\$B\"" "bin/rill-distributed does not refer to the build tree"

# A consumer run: exit 0 and the trained values.
run_consumer() { # run_consumer BINARY WHAT
    local o
    o=$("$1" 2>&1)
    local rc=$?
    echo "  $2: $o"
    # The consumer itself exits non-zero unless weight and bias are within 0.01 of 2 and 10.
    check "[ $rc -eq 0 ] && echo \"\$o\" | grep -q '^rill $VERSION: weight: [0-9.]*, biase: [0-9.]*\$'" "$2 trains the seed's model"
}

export PKG_CONFIG_PATH="$L/pkgconfig"
check "[ \"\$(pkg-config --modversion rill)\" = $VERSION ]" "pkg-config --modversion rill"
# pkg-config quotes what it prints for the shell (the prefix has a space): eval reads it so.
# 1. pkg-config, shared.
eval "\$CC \$SAN -o \"\$T/c_shared\" \"\$SRC/tests/install/consumer.c\" $(pkg-config --cflags --libs rill) -lm -Wl,-rpath,\"\$L\"" 2>"$T/cc1.log"
rc=$?
check "[ $rc -eq 0 ]" "pkg-config: cc consumer.c \$(pkg-config --cflags --libs rill)" || cat "$T/cc1.log"
check "ldd \"\$T/c_shared\" | grep -q \"librill.so.${VERSION%%.*} => \$L\"" "the consumer loads librill.so.${VERSION%%.*} from the prefix"
run_consumer "$T/c_shared" "pkg-config shared"
# 2. pkg-config --static: the archive and what it needs.
static_libs=$(pkg-config --static --libs rill | sed 's/-lrill\b/-l:librill.a/')
eval "\$CC \$SAN -o \"\$T/c_static\" \"\$SRC/tests/install/consumer.c\" $(pkg-config --cflags rill) $static_libs -lm" 2>"$T/cc2.log"
rc=$?
check "[ $rc -eq 0 ]" "pkg-config --static: cc consumer.c \$(pkg-config --cflags rill) $static_libs" || cat "$T/cc2.log"
check "! ldd \"\$T/c_static\" | grep -q librill" "the static consumer needs no librill.so"
run_consumer "$T/c_static" "pkg-config static"

# 3. and 4. CMake.
cmake_consumer() { # cmake_consumer DIR WHAT ARGS...
    local d=$1 what=$2
    shift 2
    CC=$CC cmake -S "$SRC/tests/install/consumer" -B "$d" -DCMAKE_C_FLAGS="$SAN" "$@" >"$d.log" 2>&1 &&
        cmake --build "$d" -j "$(nproc)" >>"$d.log" 2>&1
    local rc=$?
    check "[ $rc -eq 0 ]" "$what: configure and build" || tail -30 "$d.log"
}
cmake_consumer "$T/cm" "CMake find_package(rill)" -DCMAKE_PREFIX_PATH="$P"
run_consumer "$T/cm/consumer_shared" "find_package rill::rill"
run_consumer "$T/cm/consumer_static" "find_package rill::rill_static"
cmake_consumer "$T/sub" "CMake add_subdirectory(rill)" -DRILL_SOURCE="$SRC"
check "[ -f \"\$T/sub/rill/librill.so\" ] && ! ls \"\$T/sub/rill\" | grep -qx 'tests\\|examples\\|bench'" \
    "add_subdirectory builds the library only"
check "! grep -q 'test_tensor\\|fashion_mnist\\|bench_' \"\$T/sub/Makefile\" \"\$T/sub/rill/Makefile\"" \
    "no test, example or benchmark target in the parent project"
run_consumer "$T/sub/consumer_shared" "add_subdirectory rill::rill"
run_consumer "$T/sub/consumer_static" "add_subdirectory rill::rill_static"

finish
