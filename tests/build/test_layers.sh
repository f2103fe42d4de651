#!/usr/bin/env bash
# The layers hold: each folder under src/ depends only on the layers before it in the order of
# docs/ARCHITECTURE.md's "Layers" table (read from there, so the table and this check cannot
# drift apart; a folder under src/ that the table does not list fails).
#
#   includes  every #include "..." in src/**/*.c and *.h is resolved as the compiler does (the
#             including file's folder first, then src/; include/ is the public API, open to all)
#             and must not name a header of a later layer.
#   symbols   with $1 (the build directory) holding the library's objects, every symbol an
#             object uses must not be defined by an object of a later layer: this catches what
#             includes cannot, such as a header declaring a function that a later layer defines,
#             or an extern declaration in a .c file. One rule inside a layer is checked the same
#             way: the server uses the master (distributed/master.h), never the other way round.
#
# Prints each offence (file:line, the two layers), then "N passed, M failed" over the files
# checked; exits 1 on any offence. Runs from any directory.
set -u
set -f
B=${1:-}
if [ -n "$B" ]; then B=$(cd "$B" && pwd) || exit 1; fi # relative to the caller's directory
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT" || exit 1

# --- the layer order, from the table ---
mapfile -t LAYERS < <(awk '/^## / {in_t = ($0 == "## Layers"); next}
    in_t && match($0, /^\| `[a-z_]+\/` \|/) {print substr($0, 4, RLENGTH - 7)}' \
    docs/ARCHITECTURE.md)
if [ "${#LAYERS[@]}" -lt 2 ]; then
    echo "FAIL: no layer order found in docs/ARCHITECTURE.md's \"## Layers\" table"
    echo "0 passed, 1 failed"
    exit 1
fi
declare -A RANK
for i in "${!LAYERS[@]}"; do RANK[${LAYERS[$i]}]=$i; done
echo "layer order: ${LAYERS[*]}"

declare -A BAD=() # file -> 1 once it has an offence
nfail=0
offence() { # file, message...
    [ -n "${BAD[$1]+x}" ] || nfail=$((nfail + 1))
    BAD[$1]=1
    shift
    echo "FAIL: $*"
}

# The layer of a path under src/ in LAYER; false when it has none.
layer_of() {
    LAYER=
    case $1 in src/*/*) ;; *) return 1 ;; esac
    local rest=${1#src/}
    LAYER=${rest%%/*}
    [ -n "${RANK[$LAYER]+x}" ]
}

# Normalises a relative path ("a/b/../c" -> "a/c") into REPLY; false when it climbs out of ROOT.
normalise() {
    local IFS=/ part
    local -a out=()
    for part in $1; do
        case $part in
        '' | .) ;;
        ..)
            [ "${#out[@]}" -gt 0 ] || return 1
            out=("${out[@]:0:${#out[@]}-1}")
            ;;
        *) out+=("$part") ;;
        esac
    done
    REPLY="${out[*]}"
}

mapfile -t FILES < <(find src -type f \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort)

for d in $(find src -mindepth 1 -maxdepth 1 -type d | LC_ALL=C sort); do
    [ -n "${RANK[${d#src/}]+x}" ] ||
        offence "$d" "$d/ is not a layer of docs/ARCHITECTURE.md's Layers table (${LAYERS[*]})"
done

# --- includes ---
for f in "${FILES[@]}"; do
    if ! layer_of "$f"; then
        offence "$f" "$f: not inside a layer folder"
        continue
    fi
    mine=$LAYER
    dir=${f%/*}
    while IFS= read -r hit; do
        line=${hit%%:*}
        inc=${hit#*:}
        inc=${inc#*\"}
        inc=${inc%%\"*}
        target=
        if normalise "$dir/$inc" && [ -f "$REPLY" ]; then
            target=$REPLY
        elif normalise "src/$inc" && [ -f "$REPLY" ]; then
            target=$REPLY
        elif normalise "include/$inc" && [ -f "$REPLY" ]; then
            continue # the public API
        else
            offence "$f" "$f:$line: #include \"$inc\" names no file of the tree"
            continue
        fi
        if ! layer_of "$target"; then
            offence "$f" "$f:$line: #include \"$inc\" ($target) is outside every layer"
        elif [ "${RANK[$LAYER]}" -gt "${RANK[$mine]}" ]; then
            offence "$f" "$f:$line: $mine includes $LAYER ($target), a later layer"
        fi
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
done

# --- symbols (needs the build directory's objects) ---
# The library's objects are <build>/CMakeFiles/<target>.dir/src/<path>.c.o, whatever the target
# is called; per source the newest object counts (an older one is left from another
# configuration), and only sources still in the tree (an object left behind by a moved file is
# ignored) whose object is not older than the source.
declare -A OBJ=()
if [ -z "$B" ]; then
    echo "note: no build directory given: symbols not checked"
elif ! command -v nm >/dev/null; then
    echo "note: no nm: symbols not checked"
else
    declare -A INTREE=()
    for f in "${FILES[@]}"; do INTREE[$f]=1; done
    while read -r _ o; do
        f=src/${o#*.dir/src/}
        f=${f%.o}
        [ -n "${INTREE[$f]+x}" ] || continue
        if [ "$o" -ot "$f" ]; then
            echo "note: $o is older than $f: its symbols not checked (build first)"
            continue
        fi
        OBJ[$f]=$o
    done < <(find "$B/CMakeFiles" -path '*.dir/src/*' -name '*.c.o' -printf '%T@ %p\n' 2>/dev/null |
        LC_ALL=C sort -n)
    [ "${#OBJ[@]}" -gt 0 ] ||
        echo "note: no objects of the library under $B/CMakeFiles: symbols not checked"
fi
if [ "${#OBJ[@]}" -gt 0 ]; then
    # "<source> <D|U> <symbol>" for every object.
    syms=$(for f in "${!OBJ[@]}"; do
        nm -P -g --defined-only "${OBJ[$f]}" | awk -v f="$f" '{print f, "D", $1}'
        nm -P -u "${OBJ[$f]}" | awk -v f="$f" '{print f, "U", $1}'
    done)
    # One line per use of a symbol defined elsewhere: "<user> <definer> <symbol>".
    while read -r user definer sym; do
        layer_of "$user" || continue # already reported: outside every layer
        ul=$LAYER
        layer_of "$definer" || continue
        dl=$LAYER
        if [ "${RANK[$dl]}" -gt "${RANK[$ul]}" ]; then
            offence "$user" "$user: $ul uses $sym of $dl ($definer), a later layer"
        elif [ "$user" = src/distributed/master.c ] &&
            [ "$definer" = src/distributed/server.c ]; then
            offence "$user" "$user: the master uses $sym of the server ($definer);" \
                "the server uses the master, not the other way round"
        fi
    done < <(awk '$2 == "D" {def[$3] = $1; next} {use[NR] = $0}
        END {for (i in use) {split(use[i], u, " "); if ((u[3] in def) && def[u[3]] != u[1])
                 print u[1], def[u[3]], u[3]}}' <<<"$syms" | LC_ALL=C sort)
fi

npass=0
for f in "${FILES[@]}"; do [ -n "${BAD[$f]+x}" ] || npass=$((npass + 1)); done
echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
