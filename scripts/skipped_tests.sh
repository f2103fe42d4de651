#!/usr/bin/env bash
# Lists, for each build directory given, the tests ctest skipped (exit 77) and the parts of tests
# that were skipped, with the reasons the tests printed ("SKIPPED: ..."). Reads the JUnit file
# that `make test` has each ctest run write (BUILD/ctest.xml).
set -u
echo
echo "== skipped tests"
any=0
for b in "$@"; do
    f="$b/ctest.xml"
    [ -f "$f" ] || continue
    out=$(awk -v build="$b" '
        function unxml(s) {
            gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&quot;/, "\"", s)
            gsub(/&apos;/, "\047", s); gsub(/&amp;/, "\\&", s); return s
        }
        /<testcase / {
            match($0, /name="[^"]*"/); name = substr($0, RSTART + 6, RLENGTH - 7)
            skipped = ($0 ~ /status="notrun"/); n = 0; next
        }
        /<skipped / { skipped = 1 }
        { line = $0; sub(/^.*<system-out>/, "", line) }
        line ~ /^SKIPPED: / { reasons[++n] = unxml(substr(line, 10)) }
        /<\/testcase>/ {
            if (skipped || n > 0) {
                printf "  %s %s%s\n", build ":", name, skipped ? " (skipped)" : " (ran, parts skipped)"
                for (i = 1; i <= n; i++) printf "      %s\n", reasons[i]
                if (skipped && n == 0) printf "      (no reason printed)\n"
            }
        }' "$f")
    if [ -n "$out" ]; then
        echo "$out"
        any=1
    fi
done
[ "$any" -eq 1 ] || echo "  none"
