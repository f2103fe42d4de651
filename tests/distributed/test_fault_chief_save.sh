#!/usr/bin/env bash
# The chief killed while it checkpoints (examples/distributed, 1 ps + the chief as real processes
# on loopback, --save_model_secs=0.01: a save is nearly always under way): RUNS times the chief
# is started on the same --logdir and gets SIGKILL at a random moment (the ps serves throughout,
# writing its data shards). After every kill, every checkpoint the logdir's `checkpoint` state
# file lists (model_checkpoint_path and each all_model_checkpoint_paths) exists and loads with
# every tensor (rill-inspect-checkpoint --all_tensors checks each block's CRC), and the global
# step never goes back past the latest: every other restarted chief restores it
# (--restore_over_live), the others go on from the live model the ps kept. Where the
# project's .venv has TensorFlow, TF's own reader loads a copy of every such state (a missing
# .venv skips only that part). A last chief trains to the end and every task exits 0.
# $1 is the build directory.
set -u
. "$(dirname "$0")/../lib.sh" || exit 1
. "$(dirname "$0")/cluster_lib.sh" || exit 1
cluster_init "${1:?build dir}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
INSPECT="$B/bin/rill-inspect-checkpoint"
T0=$(now)
D="$T/logdir"
RUNS=${RUNS:-10}
# the chief is killed 0.1-0.9 s after it starts training
KILL_MIN_MS=100 KILL_SPAN_MS=800

# The prefixes the state file in $1 lists, one per line (model_checkpoint_path first).
listed() {
    sed -n 's/^\(all_\)\{0,1\}model_checkpoint_paths\{0,1\}: "\(.*\)"$/\2/p' "$1/checkpoint" 2>/dev/null | awk '!seen[$0]++'
}
# The step in a prefix's name (model.ckpt-123: 123).
step_of() { echo "${1##*-}"; }

# One ps for every run; the chief alone is started again and again.
cluster_ports 1 1
start_task ps0 ps 0
sleep 0.3
if port_race "$T/ps0.log"; then kill_task ps0 KILL; rm -f "$T/ps0.log"; cluster_ports 1 1; start_task ps0 ps 0; fi
CHIEF=(--issync=0 --learning_rate=0.01 --train_steps=100000000 --steps_to_validate=1000
       --save_model_secs=0.01 --startup_deadline=30 --logdir="$D")
prev=-1 last_ckpt=""  # the latest checkpoint (and its step) after the previous kill
saves=0     # checkpoints seen listed, all runs
bad=0       # listed checkpoints that did not load
for k in $(seq 1 "$RUNS"); do
    over=()
    [ $((k % 2)) -eq 1 ] && over=(--restore_over_live)
    start_task "c$k" worker 0 "${CHIEF[@]}" "${over[@]}"
    if ! wait_log '^/job:worker/task:0: training \(chief\)' 60 "$T/c$k.log"; then
        check false "run $k: the chief starts training"
        break
    fi
    # A random moment while it trains and saves.
    ms=$((KILL_MIN_MS + RANDOM % KILL_SPAN_MS))
    sleep "$(awk -v m=$ms 'BEGIN{printf "%.3f", m / 1000}')"
    alive "c$k"; up=$?
    kill_task "c$k" KILL
    check "[ $up -eq 0 ] && [ $RC -eq 137 ]" "run $k: the chief is killed while it trains, $ms ms in (exit $RC)"
    check "alive ps0" "run $k: the ps serves on"
    # Every checkpoint the state file lists is there and loads.
    check "[ -s '$D/checkpoint' ]" "run $k: the state file is there"
    n=0 nbad=0 why=""
    while IFS= read -r p; do
        n=$((n + 1))
        out=$("$INSPECT" "$p" --all_tensors 2>&1); rc=$?
        if [ $rc -ne 0 ] || ! echo "$out" | grep -q '^tensor_name:  *global_step'; then
            nbad=$((nbad + 1))
            why="$why $(basename "$p") (exit $rc: $(echo "$out" | tail -1));"
        fi
    done < <(listed "$D")
    check "[ $n -gt 0 ] && [ $nbad -eq 0 ]" "run $k: the $n checkpoints listed exist and load${why:+; not:$why}"
    bad=$((bad + nbad))
    saves=$((saves + n))
    latest=$(listed "$D" | head -1)
    check "[ -n '$latest' ]" "run $k: the state file names a latest checkpoint ($n listed)"
    s=$(step_of "${latest:--1}")
    # The chief restored the latest checkpoint, so it only saves steps after it.
    check "[ '$s' -ge $prev ]" "run $k: the latest checkpoint (step $s) is not older than the one before the run ($prev)"
    if [ "$k" -gt 1 ] && [ "$prev" -ge 0 ]; then
        if [ ${#over[@]} -gt 0 ]; then
            check "grep -q 'Restoring parameters from $last_ckpt\$' '$T/c$k.log'" \
                "run $k: the chief restores the latest checkpoint: $(grep -i restor "$T/c$k.log")"
        else
            check "grep -q 'going on from the live model' '$T/c$k.log'" \
                "run $k: the chief goes on from the ps's live model: $(grep -i 'live model' "$T/c$k.log")"
        fi
    fi
    prev=$s last_ckpt=$latest
    # A copy of this state for TensorFlow's reader, with the paths moved.
    mkdir -p "$T/snap$k"
    while IFS= read -r p; do cp "$p".* "$T/snap$k/" 2>/dev/null; done < <(listed "$D")
    sed "s|\"$D/|\"$T/snap$k/|" "$D/checkpoint" >"$T/snap$k/checkpoint"
    # How often it saved: the state file's timestamps of the checkpoints it lists.
    every=$(sed -n 's/^all_model_checkpoint_timestamps: //p' "$D/checkpoint" |
            awk 'NR == 1 {a = $1} {b = $1; n = NR} END {if (n > 1) printf "%.0f", (b - a) / (n - 1) * 1000; else print "?"}')
    echo "  (run $k: killed $ms ms in; $n checkpoints listed, the latest at step $s, one every $every ms)"
done
echo "  ($saves listed checkpoints checked after $RUNS kills, $bad did not load)"
# What the kills interrupted: files of saves no state file came to list (a kill between the
# files and the state), and temporary files of a write cut short. Left there, as TF leaves them.
orphans=$(ls "$D" | sed -n 's/^\(model\.ckpt-[0-9]*\)\..*/\1/p' | sort -u |
          while read -r p; do listed "$D" | grep -qx "$D/$p" || echo "$p"; done | wc -l)
left=$(find "$D" -name '*.tempstate*' | wc -l)
echo "  (left by the kills: $orphans checkpoints no state lists, $left temporary files)"

# TensorFlow reads every state copied above and every checkpoint it lists.
PY="$ROOT/.venv/bin/python"
if [ -x "$PY" ] && "$PY" -c 'import tensorflow' >/dev/null 2>&1; then
    out=$(TF_CPP_MIN_LOG_LEVEL=3 "$PY" - "$T"/snap* 2>&1 <<'EOF'
import sys
import tensorflow as tf
n = 0
for d in sys.argv[1:]:
    st = tf.train.get_checkpoint_state(d)
    assert st is not None, d + ": no checkpoint state"
    for p in list(st.all_model_checkpoint_paths) + [st.model_checkpoint_path]:
        r = tf.train.load_checkpoint(p)
        for name in r.get_variable_to_shape_map():
            r.get_tensor(name)
        n += 1
print("tf read", n)
EOF
    ); rc=$?
    check "[ $rc -eq 0 ] && echo \"\$out\" | grep -q '^tf read [1-9]'" \
        "TensorFlow's reader loads every listed checkpoint of every state: $(echo "$out" | grep '^tf read' || echo "$out" | tail -3)"
elif required RILL_REQUIRE_VENV; then
    check false "TensorFlow's reader: no TensorFlow in $ROOT/.venv (required here: CI or RILL_REQUIRE_VENV=1; make venv)"
else
    echo "SKIPPED: TensorFlow's reader: no TensorFlow in $ROOT/.venv (make venv; CI or RILL_REQUIRE_VENV=1 require it); rill-inspect-checkpoint checked them"
fi

# A last chief goes on from the latest checkpoint to the end.
END=$((prev + 2000))
start_task last worker 0 --issync=0 --learning_rate=0.01 --train_steps=$END --steps_to_validate=500 \
    --save_model_secs=0.01 --startup_deadline=30 --logdir="$D"
reap last 120; rcl=$RC
reap ps0 30; rcp=$RC # it ends by itself once its one worker has finished
check "[ $rcl -eq 0 ] && [ $rcp -eq 0 ]" "a last chief trains to step $END and exits 0, then the ps by itself (got $rcl, ps $rcp)"
g=$(final_field "$T/last.log" global_step)
check "[ '${g:-0}' -ge $END ]" "the last chief reaches global step $END (got ${g:-?})"
check "grep -qx 'model_checkpoint_path: \"$D/model.ckpt-$END\"' '$D/checkpoint'" \
    "its final checkpoint is model.ckpt-$END: $(head -1 "$D/checkpoint")"
echo "  ($(elapsed "$T0") s)"
cluster_finish
