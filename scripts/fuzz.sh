#!/usr/bin/env bash
# Runs every fuzz target of a RILL_FUZZ build for a while on its seed corpus, JOBS at a time,
# and fails if any of them found a crash, a leak, undefined behaviour, a broken invariant or a
# hang (make fuzz; docs/ARCHITECTURE.md, "Fuzzing").
#
#   scripts/fuzz.sh BUILD SECONDS [JOBS] [TARGET...]
#
# Each target starts from a scratch copy of fuzz/corpus/<target> (BUILD/fuzz-run/corpus/<target>:
# what it adds stays out of the repository) and runs for SECONDS. Its log is
# BUILD/fuzz-run/<target>.log; an input that failed is saved as
# BUILD/fuzz-run/<target>-<kind>-<sha1> (kind: crash, leak, timeout, oom) and the end of the log
# is printed. Once its bug is fixed, add the input to fuzz/corpus/<target>/, so that every later
# run starts from it.
set -euo pipefail
build=${1:?usage: scripts/fuzz.sh BUILD SECONDS [JOBS] [TARGET...]}
seconds=${2:?usage: scripts/fuzz.sh BUILD SECONDS [JOBS] [TARGET...]}
jobs=${3:-2}
shift $(($# < 3 ? $# : 3))
root=$(cd "$(dirname "$0")/.." && pwd)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in "$root"/fuzz/fuzz_*.c; do
    t=$(basename "$src" .c)
    targets+=("${t#fuzz_}")
  done
fi
run=$build/fuzz-run
rm -rf "$run"
mkdir -p "$run/corpus"
for t in "${targets[@]}"; do
  test -x "$build/fuzz/fuzz_$t" || { echo "fuzz: $build/fuzz/fuzz_$t is not built" >&2; exit 1; }
  mkdir -p "$run/corpus/$t"
  if [ -d "$root/fuzz/corpus/$t" ]; then
    cp "$root/fuzz/corpus/$t"/* "$run/corpus/$t/" 2>/dev/null || true
  fi
done

# One target: its libFuzzer run, then one summary line. -timeout: an input running 10 s is a
# hang; -rss_limit_mb: one using 2 GiB is a memory bug; -max_len: the largest seed is 2.6 KiB.
one() {
  local t=$1 log=$run/$1.log rc=0
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=8192 -print_final_stats=1 -artifact_prefix="$run/$t-" "$run/corpus/$t" \
      >"$log" 2>&1 || rc=$?
  local execs cov
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  if [ "$rc" -ne 0 ]; then
    printf 'fuzz: %-18s FAILED (exit %d) after %s inputs; log %s\n' "$t" "$rc" "${execs:-?}" "$log"
    tail -n 40 "$log" | sed "s/^/  $t: /"
    return 1
  fi
  printf 'fuzz: %-18s ok: %s inputs in %s s, %s edges covered\n' \
    "$t" "${execs:-?}" "$seconds" "${cov:-?}"
}
export -f one
export build run seconds
echo "fuzz: ${#targets[@]} targets, ${seconds} s each, $jobs at a time"
start=$(date +%s)
status=0
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'one "$@"' _ {} || status=1
echo "fuzz: done in $(($(date +%s) - start)) s"
exit $status
