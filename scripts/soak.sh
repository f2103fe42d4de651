#!/usr/bin/env bash
# soak.sh - a long run of a cluster under AddressSanitizer with a stranger at the ps's door
# (`make soak`; not part of `make test`).
#
#   scripts/soak.sh [BUILD_DIR]          BUILD_DIR: a RILL_SANITIZE=ON build (default build-asan)
#   SOAK_SECONDS=60 scripts/soak.sh      a short one
#
# 1 ps and SOAK_WORKERS (8) workers of examples/distributed train asynchronously on loopback for
# SOAK_SECONDS (600), while scripts/soak_stranger.py hammers the ps's port: connections closed at
# once, garbage, half handshakes, oversized frame announcements, handshakes of no cluster or
# another wire version, and, claiming to be a task (without a secret the identity is a claim),
# junk requests and pushes, a 4 GiB payload announced, stalled payloads, heartbeats.
#
# A worker stops only at --train_steps, so the workers run in legs on the one ps (which serves
# on, --ps_join_forever, when every worker of a leg has finished): the first leg
# trains a fixed number of steps, and each next one is started (the chief restoring the last
# leg's final checkpoint) with --train_steps set from the rate so far to end at SOAK_SECONDS.
#
# It checks that every task exits 0 (the ps on SIGTERM) and that LeakSanitizer, which runs at
# each exit, found nothing; that no log has an error (an E line, a sanitizer report, a failed
# step); and that the ps's resident memory (VmRSS, sampled every SOAK_SAMPLE_SECONDS, 5) stays
# flat after the warm-up (SOAK_WARMUP_SECONDS: 60, or a quarter of a shorter soak): no sample
# after it more than SOAK_RSS_GROWTH_PCT (20) % above the first one after it. It prints the
# figures: global steps/s, the RSS samples, the stranger's connections by kind, the ps's
# refusals. Exits 0 when every check passed; the logs are kept (and their folder printed) when
# one failed.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib.sh" || exit 2
. "$ROOT/tests/distributed/cluster_lib.sh" || exit 2
cluster_init "${1:-$ROOT/build-asan}"
say() { echo "soak: $*"; }
if [ "$SANITIZED" != 1 ]; then
    say "$B is not a sanitizer build (RILL_SANITIZE=ON), so nothing would check for leaks: make build-asan"
    exit 2
fi
SECONDS_WANTED=${SOAK_SECONDS:-600}
NW=${SOAK_WORKERS:-8}
SAMPLE=${SOAK_SAMPLE_SECONDS:-5}
WARMUP=${SOAK_WARMUP_SECONDS:-60}
[ "$WARMUP" -gt $((SECONDS_WANTED / 4)) ] && [ -z "${SOAK_WARMUP_SECONDS:-}" ] && WARMUP=$((SECONDS_WANTED / 4))
GROWTH=${SOAK_RSS_GROWTH_PCT:-20}
RATE=${SOAK_STRANGER_RATE:-200}
# As `make test` runs the sanitizer build; a small quarantine, so that ASan's own memory (it
# holds freed blocks back to catch a use after free) levels off within the warm-up.
export ASAN_OPTIONS="detect_leaks=1:quarantine_size_mb=16${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$ROOT/tests/lsan.supp:use_tls=0:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
soak_exit() {
    [ "$fail" -eq 0 ] || KEEP_LOGS=1
    cluster_cleanup
}
trap soak_exit EXIT

say "$NW workers for $SECONDS_WANTED s under $(basename "$B") (warm-up $WARMUP s, RSS every $SAMPLE s), the stranger at $RATE connections/s"
T0=$(now)
for attempt in 1 2 3; do
    cluster_ports 1 "$NW"
    rm -f "$T/ps0.log"
    # (the workers finish every leg: the ps serves on until SIGTERM)
    start_task ps0 ps 0 --ps_join_forever
    wait_log 'cluster from flags|already in use' 30 "$T/ps0.log"
    port_race "$T/ps0.log" || break
    kill_task ps0 KILL
done
check "alive ps0" "the ps of $NW workers starts: $(grep -v 'cluster from' "$T/ps0.log" | tail -n 1)" || exit 1
spec=$(sed -n 's/^\/job:ps\/task:0: cluster from flags: //p' "$T/ps0.log")
pspid=${PID[ps0]}

# The ps's RSS (kB) and the global step, every SAMPLE s: "seconds rss_kb step".
(
    while kill -0 "$pspid" 2>/dev/null; do
        rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pspid/status" 2>/dev/null)
        [ -n "$rss" ] && echo "$(elapsed "$T0") $rss $(last_step "$T"/w*.log)"
        sleep "$SAMPLE"
    done
) >"$T/rss.txt" 2>/dev/null &
PID[sampler]=$!
python3 "$ROOT/scripts/soak_stranger.py" "$PS_HOSTS" --seconds $((SECONDS_WANTED + 60)) \
    --rate "$RATE" --spec "$spec" --task "/job:worker/replica:0/task:$((NW - 1))" \
    >"$T/stranger.out" 2>&1 &
PID[stranger]=$!

# The legs.
FLAGS=(--issync=0 --learning_rate=0.001 --steps_to_validate=1000 --startup_deadline=60
       --logdir="$T/logdir")
leg=0 target=$((1000 * NW)) g=0 g_leg=0 t_train=$(now) wrc_bad=0
while :; do
    leg=$((leg + 1))
    t_leg=$(now)
    for i in $(seq 0 $((NW - 1))); do start_task "w$i-l$leg" worker "$i" "${FLAGS[@]}" --train_steps=$target; done
    left=$(awk -v a="$T0" -v n="$(now)" -v s="$SECONDS_WANTED" 'BEGIN{printf "%d", s - (n - a)}')
    limit=$((left > 60 ? 2 * left + 120 : 240))
    for i in $(seq 0 $((NW - 1))); do
        reap "w$i-l$leg" "$limit"
        [ "$RC" -eq 0 ] || { wrc_bad=$((wrc_bad + 1)); say "leg $leg: worker $i exited $RC"; }
        limit=60 # the others end with the first
    done
    g=$(final_field "$T/w0-l$leg.log" global_step)
    g=${g:-0}
    say "leg $leg: to global step $target in $(elapsed "$t_leg") s (the chief ended at ${g})"
    [ "$wrc_bad" -eq 0 ] || break
    # This leg's rate sets the next leg's end at SOAK_SECONDS; a leg shorter than 10 s is not
    # worth starting.
    left=$(awk -v a="$T0" -v n="$(now)" -v s="$SECONDS_WANTED" 'BEGIN{printf "%d", s - (n - a)}')
    [ "$left" -ge 10 ] || break
    rate=$(awk -v g="$g" -v g0="$g_leg" -v a="$t_leg" -v n="$(now)" 'BEGIN{printf "%d", (g - g0) / (n - a)}')
    g_leg=$g
    target=$((g + rate * left))
    [ "$target" -gt "$g" ] || break
done
t_done=$(now)
train_s=$(awk -v a="$t_train" -v b="$t_done" 'BEGIN{printf "%.0f", b - a}')
kill -TERM "${PID[stranger]}" 2>/dev/null
reap stranger 30
kill -TERM "$pspid" 2>/dev/null
reap ps0 120; psrc=$RC # LeakSanitizer's scan at exit takes a while
reap sampler $((SAMPLE + 10)) # it ends with the ps

# --- the checks ---
check "[ $wrc_bad -eq 0 ]" "every worker of the $leg legs exits 0 ($wrc_bad did not)"
check "[ $psrc -eq 0 ]" "the ps stops cleanly on SIGTERM and LeakSanitizer finds nothing at its exit (exit $psrc)"
bad_logs=$(grep -l Sanitizer "$T"/*.log 2>/dev/null | xargs -r -n1 basename | tr '\n' ' ')
check "[ -z '$bad_logs' ]" "no sanitizer report in any log${bad_logs:+: $bad_logs}"
# (the ps's warnings are its refusals of the stranger: counted below)
errs=$(grep -H -E '^E[0-9]{4} |runtime error|FAIL|UNAVAILABLE|DEADLINE_EXCEEDED|INTERNAL|DATA_LOSS' "$T"/*.log |
       grep -v '^[^:]*/ps0\.log:W' | head -5)
check "[ -z \"\$errs\" ]" "no error in any log${errs:+: $errs}"
# Figures.
steps_s=$(awk -v g="$g" -v s="$train_s" 'BEGIN{printf "%.0f", (s > 0 ? g / s : 0)}')
say "training: global step $g in $train_s s over $leg legs: $steps_s global steps/s ($NW workers)"
say "$(tail -n 1 "$T/stranger.out")"
refusals=$(sed -n 's/.*(\([0-9]*\) refusals since the last line like this)/\1/p' "$T/ps0.log" | awk '{n += $1} END {print n + 0}')
say "the ps logged $(grep -c '^W' "$T/ps0.log") warnings about the stranger, counting $refusals refusals; kinds:"
sed -n 's/^W[0-9.: ]*\] server [^:]*:[0-9]*: \(refused [0-9.:]*: \)\{0,1\}//p' "$T/ps0.log" |
    sed 's/ ([0-9]* refusals since the last line like this)$//; s/({[^}]*})/({spec})/g;
         s/[0-9][0-9]*-byte/N-byte/; s/127\.0\.0\.1:[0-9]*/ADDR/g' | sort | uniq -c | sort -rn | head -8 | sed 's/^/      /'
conns=$(sed -n 's/^stranger: \([0-9]*\) connections.*/\1/p' "$T/stranger.out")
check "[ '${conns:-0}' -gt 0 ]" "the stranger connected (${conns:-0} connections)"
say "the ps's RSS (MB) every $SAMPLE s: seconds=MB (global step)"
awk '{printf "  %5.0fs=%.1f (%s)%s", $1, $2 / 1024, $3, NR % 6 == 0 ? "\n" : ""} END {if (NR % 6) print ""}' "$T/rss.txt"
read -r base peak nafter < <(awk -v w="$WARMUP" '$1 >= w {if (!n) b = $2; if ($2 > p) p = $2; n++} END {print b + 0, p + 0, n + 0}' "$T/rss.txt")
growth=$(awk -v b="$base" -v p="$peak" 'BEGIN{printf "%.1f", (b > 0 ? (p - b) * 100 / b : 0)}')
say "RSS after the warm-up: first $((base / 1024)) MB, peak $((peak / 1024)) MB (+$growth %), $nafter samples"
check "[ $nafter -ge 2 ]" "at least 2 RSS samples after the warm-up ($nafter)"
check "awk -v g=$growth -v m=$GROWTH 'BEGIN{exit !(g <= m)}'" "the ps's RSS stays flat after the warm-up: +$growth % (at most $GROWTH %)"
say "$(elapsed "$T0") s in all"
if [ "$fail" -ne 0 ]; then
    say "FAILED; logs in $T. The ps's last lines (its warnings left out), and the logs with errors:"
    grep -v '^W' "$T/ps0.log" | tail -n 20 | sed 's/^/  | /'
    for f in $(grep -l -E '^E[0-9]{4} |Sanitizer|runtime error|FAIL|UNAVAILABLE|DEADLINE_EXCEEDED' "$T"/w*.log 2>/dev/null | head -3); do
        echo "--- $(basename "$f"):"; tail -n 30 "$f" | sed 's/^/  | /'
    done
fi
[ "$fail" -eq 0 ] && say PASSED
finish
