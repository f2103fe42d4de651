#!/usr/bin/env bash
# rill and TensorFlow read each other's checkpoints and event files, checked with the real thing:
# TensorFlow (tensorflow-cpu) and TensorBoard from the project's virtualenv (.venv), made and
# filled here when missing where it is required, as on a fresh machine (`make test` prepares it
# first: `make venv`).
#  (i)  rill -> TF: a synchronous cluster trains into a logdir; tf.train.load_checkpoint reads
#       the weight, biase and global_step that local_reload_test and rill-inspect-checkpoint
#       print, a TF1 Saver restores them into the seed's graph, TensorBoard's EventAccumulator
#       sees the scalar `cost` at the steps rill-events shows, and TF's summary_iterator reads
#       every event as rill-events does;
#  (ii) TF -> rill: the golden files TensorFlow wrote (tests/interop/data/) are read by
#       rill-inspect-checkpoint and rill-events as TF reads them, rill-events reports damage and
#       missing files, and a checkpoint of the seed's model saved here by TF's Saver is restored
#       by local_reload_test.
# $1 is the build directory.
#
# Without a usable virtualenv nothing here can be checked. Failure or skip, decided here:
#  - no .venv at all, where it is not required: SKIPPED (exit 77, tests/lib.sh) with the reason.
#    ctest or this script run by hand on a machine without the venv must not spend minutes on
#    pip and PyPI, and cannot check anything without it;
#  - no .venv where it is required (CI set, or RILL_REQUIRE_VENV=1: `make test` makes the venv
#    before it runs the tests, so a missing one there is a real failure, never a quiet skip): it
#    is made and filled here, and the test FAILS, saying why, when that does not work;
#  - a .venv that exists but lacks TensorFlow or TensorBoard is filled, and FAILS when that does
#    not work, wherever it runs: whoever made the venv meant these checks to run.
set -u
. "$(dirname "$0")/../lib.sh" || exit 1
B=${1:?build dir}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DATA="$HERE/data"
EV="$B/bin/rill-events"
INSPECT="$B/bin/rill-inspect-checkpoint"
RELOAD="$B/examples/local_reload_test"
READ_EVENTS="$HERE/read_rill_events.py"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
export RILL_OPENCL_CPU_AS_GPU=0 TF_CPP_MIN_LOG_LEVEL=3 PYTHONDONTWRITEBYTECODE=1
fail=0; checks=0
check() { checks=$((checks+1)); if ! eval "$1"; then echo "FAIL: $2"; fail=$((fail+1)); fi; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
T0=$(date +%s)
# Without TensorFlow nothing here can be checked: a failure, with the reason (see the top of
# this file for when it is a skip instead).
no_venv() {
    echo "FAIL: no usable TensorFlow virtualenv at $VENV: $1"
    echo "0 passed, 1 failed"
    exit 1
}

# --- the virtualenv: made, and tensorflow-cpu and tensorboard installed, when missing ---
if [ ! -x "$PY" ] && ! required RILL_REQUIRE_VENV; then
    skip "no TensorFlow virtualenv: $PY is missing (make venv creates it; CI or RILL_REQUIRE_VENV=1 make it here and require it)"
fi
if [ ! -x "$PY" ]; then
    echo "interop: creating the virtualenv $VENV (python3 -m venv)"
    command -v python3 >/dev/null || no_venv "python3 is not installed (Debian: apt-get install python3 python3-venv)"
    err=$(python3 -m venv "$VENV" 2>&1) ||
        no_venv "python3 -m venv failed (Debian: apt-get install python3-venv; make venv does it): $err"
fi
want=()
"$PY" -c 'import tensorflow' >/dev/null 2>&1 || want+=(tensorflow-cpu)
"$PY" -c 'import tensorboard.backend.event_processing.event_accumulator' >/dev/null 2>&1 || want+=(tensorboard)
if [ ${#want[@]} -gt 0 ]; then
    echo "interop: installing into $VENV: ${want[*]} (pip, from PyPI)"
    "$PY" -m pip install -q "${want[@]}" 2>&1 | tail -5
    "$PY" -c 'import tensorflow, tensorboard.backend.event_processing.event_accumulator' >"$T/import.err" 2>&1 ||
        no_venv "pip install ${want[*]} did not give importable packages (no network to PyPI?): $(tail -3 "$T/import.err")"
fi
echo "  (TensorFlow $("$PY" -c 'import tensorflow as tf; print(tf.__version__)' 2>/dev/null), TensorBoard $("$PY" -c 'import tensorboard; print(tensorboard.__version__)' 2>/dev/null), $(($(date +%s) - T0)) s)"

# A TF1 view of a checkpoint (prefix or directory): "latest <path>" (directories), "list
# <name> (<DT_...>) [<dims>]" as rill-inspect-checkpoint lists, "str <name> <numpy str, lines
# joined with '|'>",
# "f <name> %f" and "restored weight: %f, biase: %f" from a TF1 Saver restoring the seed's graph.
cat >"$T/tf_read.py" <<'EOF'
import os, sys
import tensorflow as tf
from tensorflow.core.framework import types_pb2
v1 = tf.compat.v1
path = sys.argv[1]
prefix = path
if os.path.isdir(path):
    prefix = tf.train.latest_checkpoint(path)
    print("latest", prefix)
r = tf.train.load_checkpoint(path)
shapes, dtypes = r.get_variable_to_shape_map(), r.get_variable_to_dtype_map()
for k in sorted(shapes):
    print("list %s (%s) [%s]" % (k, types_pb2.DataType.Name(dtypes[k].as_datatype_enum),
                                 ",".join(str(d) for d in shapes[k])))
for k in sorted(shapes):
    v = r.get_tensor(k)
    print("str", k, str(v).replace("\n", "|"))
    if v.size == 1:
        print("f %s %f" % (k, v.reshape(-1)[0]))
if shapes.get("weight") == [1] and shapes.get("biase") == [1] and "global_step" in shapes:
    v1.disable_eager_execution()
    v1.disable_resource_variables()
    with tf.Graph().as_default():
        step = v1.train.get_or_create_global_step()
        w = v1.get_variable("weight", [1], tf.float32)
        b = v1.get_variable("biase", [1], tf.float32)
        with v1.Session() as sess:
            v1.train.Saver().restore(sess, prefix)
            wv, bv, sv = sess.run([w, b, step])
            print("restored weight: %f, biase: %f, global_step %d" % (wv[0], bv[0], sv))
EOF

# --- (i) rill -> TF: a short synchronous cluster run ---
D="$T/rill"
t0=$(date +%s)
out=$(timeout 120 "$ROOT/scripts/local_cluster.sh" "$B" --issync=1 --learning_rate=0.01 \
      --train_steps=2000 --steps_to_validate=1000 --summary_steps=20 --logdir="$D" 2>&1); rc=$?
check "[ $rc -eq 0 ]" "(i) the cluster run exits 0 (got $rc): $(echo "$out" | tail -5)"
echo "  ((i) cluster run: $(($(date +%s) - t0)) s)"
rl=$("$RELOAD" --logdir="$D" 2>&1); rc=$?
check "[ $rc -eq 0 ]" "(i) local_reload_test exits 0 (got $rc): $rl"
w=$(echo "$rl" | sed -n 's/^weight: \([-0-9.]*\), biase: .*/\1/p')
b=$(echo "$rl" | sed -n 's/^weight: .*, biase: \([-0-9.]*\)$/\1/p')
g=$(echo "$rl" | sed -n 's/.*, global_step = \([0-9]*\)$/\1/p')
check "[ -n '$w' ] && [ -n '$b' ] && [ '${g:-x}' = 2000 ]" "(i) local_reload_test prints the values at step 2000: $rl"
tf=$("$PY" "$T/tf_read.py" "$D" 2>"$T/tf.err"); rc=$?
check "[ $rc -eq 0 ]" "(i) TensorFlow reads rill's checkpoint (exit $rc): $(tail -3 "$T/tf.err")"
check "echo \"\$tf\" | grep -qx 'latest $D/model.ckpt-2000'" "(i) tf.train.latest_checkpoint finds model.ckpt-2000: $tf"
check "echo \"\$tf\" | grep -qx 'f weight $w'" "(i) TF reads weight $w: $tf"
check "echo \"\$tf\" | grep -qx 'f biase $b'" "(i) TF reads biase $b: $tf"
check "echo \"\$tf\" | grep -qx 'f global_step 2000.000000'" "(i) TF reads global_step 2000: $tf"
check "echo \"\$tf\" | grep -qx 'restored weight: $w, biase: $b, global_step 2000'" \
  "(i) a TF1 Saver restores rill's checkpoint into the seed's graph: $tf"
check "[ \"\$(echo \"\$tf\" | sed -n 's/^list //p')\" = \"\$("$INSPECT" "$D")\" ]" \
  "(i) TF lists the tensors as rill-inspect-checkpoint does: $(echo "$tf" | grep ^list) vs $("$INSPECT" "$D" 2>&1)"
for k in weight biase global_step; do
    check "[ \"\$(echo \"\$tf\" | sed -n 's/^str $k //p')\" = \"\$("$INSPECT" "$D" --tensor_name=$k | tail -n +2 | paste -sd'|')\" ]" \
      "(i) $k: numpy's str as TF reads it equals rill-inspect-checkpoint's: $(echo "$tf" | grep "^str $k ") vs $("$INSPECT" "$D" --tensor_name=$k 2>&1 | tail -n +2)"
done

F=$(ls "$D"/events.out.tfevents.* 2>/dev/null | head -1)
check "[ -n '$F' ]" "(i) the logdir holds an event file: $(ls "$D")"
"$EV" "${F:-/nonexistent}" >"$T/rill.events"; rc=$?
check "[ $rc -eq 0 ]" "(i) rill-events reads rill's event file (exit $rc)"
awk '$3 == "summary" { for (i = 4; i <= NF; i++) if ($i ~ /^cost=/) print "cost", $2, substr($i, 6) }' \
    "$T/rill.events" >"$T/rill.cost"
"$PY" "$READ_EVENTS" --reader=tensorboard "${F:-/nonexistent}" >"$T/tb.cost" 2>"$T/tb.err"; rc=$?
check "[ $rc -eq 0 ]" "(i) TensorBoard's EventAccumulator reads rill's event file (exit $rc): $(cat "$T/tb.err")"
n=$(wc -l <"$T/rill.cost")
check "[ $n -ge 5 ]" "(i) rill-events shows scalar cost points ($n)"
check "cmp -s '$T/rill.cost' '$T/tb.cost'" \
  "(i) TensorBoard sees cost at the steps and values rill-events shows: $(diff "$T/rill.cost" "$T/tb.cost" | head -5)"
"$PY" "$READ_EVENTS" --events "${F:-/nonexistent}" >"$T/tf.events" 2>"$T/tfev.err"; rc=$?
check "[ $rc -eq 0 ] && cmp -s '$T/rill.events' '$T/tf.events'" \
  "(i) TF's summary_iterator reads every event of rill's file as rill-events does (exit $rc): $(diff "$T/rill.events" "$T/tf.events" | head -5) $(cat "$T/tfev.err")"
check "grep -q ' session_log START$' '$T/tf.events' && grep -q ' 2000 session_log CHECKPOINT $D/model.ckpt$' '$T/tf.events'" \
  "(i) TF sees the Supervisor's START and the final CHECKPOINT"

# --- (ii) TF -> rill: the golden files TensorFlow wrote ---
G="$DATA/tf_ckpt"
tf=$("$PY" "$T/tf_read.py" "$G" 2>"$T/tf.err"); rc=$?
check "[ $rc -eq 0 ]" "(ii) TF reads its golden checkpoint (exit $rc): $(tail -3 "$T/tf.err")"
check "echo \"\$tf\" | grep -qx 'latest $G/model.ckpt-100'" "(ii) the golden latest is model.ckpt-100: $(echo "$tf" | head -1)"
check "[ \"\$(echo \"\$tf\" | sed -n 's/^list //p')\" = \"\$("$INSPECT" "$G")\" ]" \
  "(ii) rill-inspect-checkpoint lists TF's checkpoint as TF does: $("$INSPECT" "$G" 2>&1)"
names=$(echo "$tf" | sed -n 's/^list \([^ ]*\) .*/\1/p')
check "[ \$(echo \"\$names\" | wc -w) -eq 11 ]" "(ii) TF lists the 11 golden tensors: $names"
for k in $names; do
    check "[ \"\$(echo \"\$tf\" | sed -n 's|^str $k ||p')\" = \"\$("$INSPECT" "$G" --tensor_name=$k | tail -n +2 | paste -sd'|')\" ]" \
      "(ii) $k: rill-inspect-checkpoint prints TF's value as numpy does: $(echo "$tf" | grep "^str $k ") vs $("$INSPECT" "$G" --tensor_name=$k 2>&1 | tail -n +2 | paste -sd'|')"
done
check "echo \"\$tf\" | grep -qx 'f global_step 1234.000000' && echo \"\$tf\" | grep -qx 'f weight 2.500000'" \
  "(ii) the golden values: global_step 1234, weight 2.5"

GE=$(ls "$DATA"/tf_events/events.out.tfevents.* | head -1)
"$EV" "$GE" >"$T/golden.events"; rc=$?
check "[ $rc -eq 0 ]" "(ii) rill-events reads TF's golden event file (exit $rc)"
check "[ \"\$(awk '{ \$1 = \"\"; print }' '$T/golden.events')\" = \"\$(printf ' 0 file_version brain.Event:2\n 0 other\n 0 other\n 1 session_log START\n 1 summary cost=1.5 layer1/weights=histo{num=10,min=-2.5,max=1000000,sum=1000102.75}\n 2 summary cost=0.75 layer1/weights=histo{num=10,min=-2.5,max=2000000,sum=2000102.75}\n 3 summary cost=0.5 layer1/weights=histo{num=10,min=-2.5,max=3000000,sum=3000102.75}')\" ]" \
  "(ii) rill-events shows the golden events (version, graph, meta graph, START, cost 1.5 0.75 0.5 at steps 1-3): $(cat "$T/golden.events")"
"$PY" "$READ_EVENTS" --events "$GE" >"$T/golden.tf" 2>"$T/tfev.err"; rc=$?
check "[ $rc -eq 0 ] && cmp -s '$T/golden.events' '$T/golden.tf'" \
  "(ii) rill-events reads TF's file as TF's summary_iterator does: $(diff "$T/golden.events" "$T/golden.tf" | head -5) $(cat "$T/tfev.err")"
# Damage, missing files and the directory form.
mkdir -p "$T/damaged"
cp "$GE" "$T/damaged/events.out.tfevents.1.damaged"
printf '\x55' | dd of="$T/damaged/events.out.tfevents.1.damaged" bs=1 seek=60 conv=notrunc 2>/dev/null
err=$("$EV" "$T/damaged" 2>&1 >/dev/null); rc=$?
check "[ $rc -eq 1 ] && echo \"\$err\" | grep -q 'DATA_LOSS.*events.out.tfevents.1.damaged'" \
  "(ii) a damaged record: exit 1 with DATA_LOSS naming the file (exit $rc): $err"
err=$("$EV" "$T/nothing-here" 2>&1); rc=$?
check "[ $rc -eq 1 ] && echo \"\$err\" | grep -q 'nothing-here'" "(ii) a missing file: exit 1 naming it (exit $rc): $err"
mkdir -p "$T/empty"
err=$("$EV" "$T/empty" 2>&1); rc=$?
check "[ $rc -eq 1 ] && echo \"\$err\" | grep -q 'no events.out.tfevents'" "(ii) a logdir without event files: exit 1 (exit $rc): $err"
out=$("$EV" "$DATA/tf_events"); rc=$?
check "[ $rc -eq 0 ] && [ \"\$(echo \"\$out\" | head -1)\" = '# $GE' ] && [ \"\$(echo \"\$out\" | tail -n +2)\" = \"\$(cat '$T/golden.events')\" ]" \
  "(ii) a logdir: each file's events after a '# <file>' line (exit $rc): $(echo "$out" | head -2)"

# A checkpoint of the seed's model saved by TensorFlow (a TF1 Saver, relative paths as TF writes
# them from the logdir, two saves so that the latest must be picked): local_reload_test restores it.
mkdir -p "$T/tfseed"
cat >"$T/tf_seed.py" <<'EOF'
import tensorflow as tf
v1 = tf.compat.v1
v1.disable_eager_execution()
v1.disable_resource_variables()
with tf.Graph().as_default():
    step = v1.Variable(0, dtype=tf.int64, name="global_step", trainable=False)
    w = v1.Variable([0.5], dtype=tf.float32, name="weight")
    b = v1.Variable([-1.0], dtype=tf.float32, name="biase")
    saver = v1.train.Saver()
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        sess.run([step.assign(3000), w.assign([1.75]), b.assign([8.5])])
        saver.save(sess, "./model.ckpt", global_step=step, write_meta_graph=False)
        sess.run([step.assign(4321), w.assign([2.0123457]), b.assign([9.876543])])
        saver.save(sess, "./model.ckpt", global_step=step, write_meta_graph=False)
        wv, bv = sess.run([w, b])
        print("weight: %f, biase: %f" % (wv[0], bv[0]))
EOF
want=$(cd "$T/tfseed" && "$PY" "$T/tf_seed.py" 2>"$T/seed.err"); rc=$?
check "[ $rc -eq 0 ] && [ -f '$T/tfseed/model.ckpt-4321.index' ]" "(ii) TF saves the seed's model (exit $rc): $(tail -3 "$T/seed.err")"
check "grep -qx 'model_checkpoint_path: \"model.ckpt-4321\"' '$T/tfseed/checkpoint'" \
  "(ii) TF's state file holds relative paths: $(cat "$T/tfseed/checkpoint")"
rl=$("$RELOAD" --logdir="$T/tfseed" 2>&1); rc=$?
check "[ $rc -eq 0 ]" "(ii) local_reload_test restores TF's checkpoint (exit $rc): $rl"
check "[ \"\$rl\" = \"\$(printf '%s\n%s' '$T/tfseed/model.ckpt-4321, global_step = 4321' '$want')\" ]" \
  "(ii) local_reload_test prints TF's values ($want at 4321): $rl"
check "[ \"\$("$INSPECT" "$T/tfseed")\" = \"\$(printf 'biase (DT_FLOAT) [1]\nglobal_step (DT_INT64) []\nweight (DT_FLOAT) [1]')\" ]" \
  "(ii) rill-inspect-checkpoint lists TF's seed checkpoint: $("$INSPECT" "$T/tfseed" 2>&1)"

echo "  (total $(($(date +%s) - T0)) s)"
echo "$((checks-fail)) passed, $fail failed"
[ $fail -eq 0 ]
