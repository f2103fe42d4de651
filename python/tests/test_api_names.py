"""Names rill.compat.v1 already had that no other test exercised (tools/tf_api_coverage.py
--untested listed them): one script builds and runs each under rill and, in a subprocess, under
TensorFlow 1.x (tensorflow.compat.v1 of TF 2.15), and the printed results must agree."""
import json
import os
import subprocess
import sys

import pytest
import tfref

SCRIPT = r'''
import json, os, sys, tempfile
import numpy as np
mod = sys.argv[1]
if mod == "tf":
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()
    tf.disable_v2_behavior()
    import tf_slim as contrib_layers
else:
    import rill.compat.v1 as tf
    contrib_layers = tf.contrib.layers
out = {}

def put(k, v):
    if isinstance(v, np.ndarray) or isinstance(v, (np.floating, np.integer)):
        v = np.asarray(v).tolist()
    out[k] = v

# --- functions of tf
x = tf.constant([[1.5, -2.0], [3.0, 0.25]])
ints = tf.constant([3, 4, -7])
tf.set_random_seed(11)
with tf.variable_scope("scope"):
    v = tf.get_variable("v", [3], initializer=tf.random_uniform_initializer(-1.0, 1.0, seed=3))
    w = tf.get_variable("w", [2], regularizer=tf.no_regularizer)
    put("scope_name", tf.get_variable_scope().name)
    put("scope_class", type(tf.get_variable_scope()).__name__ == "VariableScope" and
        isinstance(tf.get_variable_scope(), tf.VariableScope))
put("reg_losses", len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)))
put("all_variables", sorted(u.op.name for u in tf.all_variables()))
put("moving_average_variables", [u.op.name for u in tf.moving_average_variables()])
put("dimension_value", [tf.dimension_value(x.shape[0]), tf.dimension_value(3),
                        tf.dimension_value(tf.placeholder(tf.float32, [None, 2]).shape[0])])
put("executing_eagerly", tf.executing_eagerly())
put("dtype", [tf.DType(1) == tf.float32, tf.DType(3).name, tf.as_dtype("int64").size])
put("device_spec", tf.DeviceSpec(job="ps", replica=0, task=1, device_type="CPU",
                                 device_index=0).to_string())
cfg = tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True,
                                               per_process_gpu_memory_fraction=0.5))
put("gpu_options", [cfg.gpu_options.allow_growth,
                    round(cfg.gpu_options.per_process_gpu_memory_fraction, 3)])
fetch = {
    "arg_max": tf.arg_max(x, 1),
    "divide": tf.divide(x, 2.0),
    "truediv": tf.truediv(ints, tf.constant([2, 2, 2])),
    "polygamma": tf.polygamma(tf.constant([1.0, 2.0]), tf.constant([0.5, 3.0])),
    "math_polygamma": tf.math.polygamma(tf.constant([0.0, 1.0]), tf.constant([2.5, 1.5])),
    "math_divide": tf.math.divide(ints, 2),
    "math_truediv": tf.math.truediv(x, x),
    "to_double": tf.to_double(x),
    "to_int32": tf.to_int32(x),
}
put("dtypes", {k: t.dtype.name for k, t in sorted(fetch.items())})
with tf.Session() as s:
    put("default_session", tf.get_default_session() is s)
    s.run(tf.initialize_all_variables())
    s.run(tf.initialize_local_variables())
    s.run(tf.variables_initializer([v]))
    put("v", s.run(v).round(5))
    for k, val in s.run(fetch).items():
        put(k, np.round(val.astype(np.float64), 5))
tf.reset_default_graph()

sess = tf.InteractiveSession()
put("interactive", [tf.get_default_session() is sess, tf.constant(7).eval(),
                    (tf.constant([1.0, 2.0]) * 3).eval().tolist()])
sess.close()
tf.reset_default_graph()

# --- layers classes, add_loss, global step, optimizer base class
img = tf.placeholder(tf.float32, [None, 8, 8, 3])
y = tf.layers.Conv2DTranspose(4, 3, strides=2, padding="same", name="deconv")(img)
p = tf.layers.MaxPooling2D(2, 2, name="maxp")(y)
q = tf.layers.AveragePooling2D(2, 2, padding="same", name="avgp")(p)
bn = tf.layers.BatchNormalization(name="bn")
r = bn(q, training=True)
f = tf.layers.Flatten(name="flat")(r)
put("layer_shapes", [str(t.shape) for t in (y, p, q, r, f)])
put("layer_vars", sorted(u.op.name for u in tf.global_variables()))
put("bn_updates", len(bn.updates))
put("input_spec", tf.layers.InputSpec(ndim=4).ndim)
put("layer_base", isinstance(bn, tf.layers.Layer))
tf.losses.add_loss(tf.constant(2.5))
tf.losses.add_loss(tf.constant(0.5), loss_collection="other")
put("losses", [len(tf.losses.get_losses()), len(tf.get_collection("other"))])
gs = tf.train.create_global_step()
put("global_step", [gs.op.name, gs.dtype.base_dtype.name])
put("optimizer_base", isinstance(tf.train.AdamOptimizer(), tf.train.Optimizer))
put("output_shapes", [str(s) for s in tf.data.get_output_shapes(
    tf.data.Dataset.from_tensor_slices((np.zeros((4, 2), np.float32), np.arange(4))))])
ds = tf.data.Dataset.from_tensor_slices({"a": np.zeros((4, 2), np.float32)})
put("output_types", {k: d.name for k, d in tf.data.get_output_types(ds).items()})
put("output_classes", [c.__name__ for c in tf.data.get_output_classes(
    tf.data.Dataset.range(3)).__mro__[:1]])
put("ds_output_classes", tf.data.Dataset.range(3).output_classes.__name__)

# --- input producers (no shuffling: a deterministic order), image flips on TF's stream
tf.reset_default_graph()
strs = tf.train.string_input_producer(["a", "b", "c"], shuffle=False, num_epochs=2)
rng = tf.train.range_input_producer(4, shuffle=False, num_epochs=1)
inp = tf.train.input_producer(tf.constant([[1, 2], [3, 4]]), shuffle=False, num_epochs=1)
s1, r1, i1 = strs.dequeue(), rng.dequeue(), inp.dequeue()
tf.set_random_seed(5)
im = tf.reshape(tf.range(12.0), [2, 3, 2])
flips = [tf.image.random_flip_left_right(im, seed=s) for s in (1, 2, 3, 4)]
flips += [tf.image.random_flip_up_down(im, seed=s) for s in (1, 2, 3, 4)]
with tf.Session() as s:
    s.run(tf.local_variables_initializer())
    coord = tf.train.Coordinator()
    th = tf.train.start_queue_runners(s, coord=coord)
    put("strings", [s.run(s1).decode() for _ in range(6)])
    put("range", [int(s.run(r1)) for _ in range(4)])
    put("input", [s.run(i1).tolist() for _ in range(2)])
    coord.request_stop()
    coord.join(th)
    put("flips", [a.tolist() for a in s.run(flips)])

# --- checkpoints: list_variables / load_variable
tf.reset_default_graph()
a = tf.Variable([1.0, 2.0], name="a")
b = tf.Variable(np.arange(6, dtype=np.float64).reshape(2, 3), name="sub/b")
d = tempfile.mkdtemp()
with tf.Session() as s:
    s.run(tf.global_variables_initializer())
    path = tf.train.Saver().save(s, os.path.join(d, "m"))
put("list_variables", tf.train.list_variables(path))
put("load_variable", tf.train.load_variable(d, "sub/b").tolist())

# --- initializers on TF's random stream
tf.reset_default_graph()
inits = {n: getattr(tf.initializers, n)(seed=7) for n in (
    "glorot_normal", "glorot_uniform", "he_normal", "he_uniform", "lecun_normal",
    "lecun_uniform", "orthogonal", "uniform_unit_scaling")}
inits["variance_scaling"] = tf.initializers.variance_scaling(2.0, "fan_avg", "uniform", seed=7)
vs = {n: tf.get_variable(n, [4, 3], initializer=i) for n, i in inits.items()}
with tf.Session() as s:
    s.run(tf.global_variables_initializer())
    for n, val in s.run(vs).items():
        put("init_" + n, np.round(val.astype(np.float64), 4))

# --- constant initializers and constants of lists; tf.double/tf.half
tf.reset_default_graph()
errs = []
for f in (lambda: tf.constant([1.0, 2.0, 3.0], shape=[2]),
          lambda: tf.constant([1.0, 2.0], shape=[2, 2], verify_shape=True),
          lambda: tf.get_variable("big", [2], initializer=tf.constant_initializer([1, 2, 3]))):
    try:
        f()
        errs.append("ok")
    except (TypeError, ValueError) as e:
        errs.append([type(e).__name__, str(e)])
put("constant_errors", errs)
cv = tf.get_variable("cv", [2, 3], initializer=tf.constant_initializer([1, 2, 3]))
dk = tf.layers.dense(tf.ones([1, 2]), 2, kernel_initializer=tf.constant_initializer(np.eye(2) * 3))
put("double_half", [tf.double.name, tf.half.name, tf.constant(1, tf.double).dtype.name])
with tf.Session() as s:
    s.run(tf.global_variables_initializer())
    put("constant_init", [a.tolist() for a in s.run([cv, dk, tf.constant([1.0, 2.0], shape=[2, 2])])])

# --- options that once raised: softmax / log_softmax / cross-entropy over another axis,
# bias_add NCHW, dropout's noise_shape (TF's draws: the same seeds)
tf.reset_default_graph()
tf.set_random_seed(4)
z = tf.constant(np.linspace(-2, 3, 24).reshape(2, 3, 4), tf.float32)
lab = tf.nn.softmax(tf.constant(np.cos(np.arange(24.0)).reshape(2, 3, 4), tf.float32), axis=0)
opts = {"softmax0": tf.nn.softmax(z, axis=0), "softmax1": tf.nn.softmax(z, axis=1),
        "log_softmax1": tf.nn.log_softmax(z, axis=-2), "xent0":
        tf.nn.softmax_cross_entropy_with_logits_v2(labels=lab, logits=z, axis=0),
        "bias_nchw": tf.nn.bias_add(tf.reshape(z, [1, 2, 3, 4]), tf.constant([1.0, -1.0]),
                                    data_format="NCHW"),
        "dropout_noise": tf.nn.dropout(z, keep_prob=0.5, noise_shape=[2, 1, 4], seed=9)}
gz = tf.gradients(tf.reduce_sum(opts["xent0"] * 1.5) + tf.reduce_sum(opts["softmax1"] ** 2), z)[0]
with tf.Session() as s:
    for k, val in s.run(dict(opts, grad=gz)).items():
        put(k, np.round(val.astype(np.float64), 5))

# --- tensors where Python numbers were taken: range, fill's dims; empty fetches
tf.reset_default_graph()
n = tf.placeholder(tf.int32, [])
made = [tf.range(n), tf.range(tf.constant(1), n, 2), tf.range(0.5, tf.cast(n, tf.float32)),
        tf.fill([n, 2], 1.5), tf.zeros(tf.stack([n, 1]))]
put("made_names", [t.op.name for t in made[:3]])
with tf.Session() as s:
    put("made", [a.tolist() for a in s.run(made, {n: 4})])
    put("empty_fetches", [s.run([]), s.run({}), list(s.run(()))])

# --- contrib.layers
tf.reset_default_graph()
img = tf.placeholder(tf.float32, [None, 6, 6, 2])
c = contrib_layers.convolution2d(img, 3, [3, 3], scope="c2d")
c = contrib_layers.avg_pool2d(c, [2, 2])
put("contrib_shape", str(c.shape))
ws = [tf.constant([[1.0, -2.0], [3.0, 0.5]]), tf.constant([0.25, -4.0])]
reg = contrib_layers.apply_regularization(contrib_layers.l1_l2_regularizer(0.1, 0.2), ws)
summ = contrib_layers.sum_regularizer([contrib_layers.l1_regularizer(0.3),
                                       contrib_layers.l2_regularizer(0.4)])(ws[0])
with tf.Session() as s:
    put("regularizers", np.round(s.run([reg, summ]), 5).tolist())

# --- errors' codes and classes, logging
put("codes", {n: getattr(tf.errors, n) for n in (
    "OK", "CANCELLED", "UNKNOWN", "ABORTED", "ALREADY_EXISTS", "DATA_LOSS", "INTERNAL",
    "OUT_OF_RANGE", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "UNAUTHENTICATED",
    "UNAVAILABLE")})
put("classes", {n: getattr(tf.errors, n)(None, None, "m").error_code for n in (
    "AbortedError", "DataLossError", "InternalError", "ResourceExhaustedError",
    "UnauthenticatedError", "UnavailableError", "UnknownError")})
put("log_levels", [tf.logging.DEBUG, tf.logging.ERROR])
tf.logging.set_verbosity(tf.logging.DEBUG)
put("verbosity", tf.logging.get_verbosity())
for i in range(3):
    tf.logging.log_first_n(tf.logging.INFO, "first %d", 2, i)
    tf.logging.log_every_n(tf.logging.INFO, "every %d", 2, i)
tf.logging.log_if(tf.logging.WARN, "if %s", True, "yes")
tf.logging.log_if(tf.logging.WARN, "if %s", False, "no")
tf.logging.vlog(1, "vlog %d", 1)
tf.logging.warn("warn %s", "w")
tf.logging.warning("warning %s", "w")
put("status", tf.logging.TaskLevelStatusMessage("ok") is None)
print(json.dumps(out, sort_keys=True, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))
'''

FLAGS_SCRIPT = r'''
import json, sys
if sys.argv[1] == "tf":
    import tensorflow.compat.v1 as tf
else:
    import rill.compat.v1 as tf
fl = tf.flags
out = {}
fv = fl.FlagValues()
fl.DEFINE(fl.FloatParser(lower_bound=0), "lr", 0.5, "rate", flag_values=fv)
fl.DEFINE_flag(fl.BooleanFlag("fast", False, "go fast"), flag_values=fv)
fl.DEFINE_flag(fl.EnumFlag("mode", "a", "mode", ["a", "b"]), flag_values=fv)
fl.DEFINE_flag(fl.MultiFlag(fl.IntegerParser(), fl.ArgumentSerializer(), "n", [1], "ns"),
               flag_values=fv)
fl.DEFINE_multi_integer("ks", [1], "ks", lower_bound=0, flag_values=fv)
fl.DEFINE_multi_float("fs", [0.5], "fs", flag_values=fv)
fl.DEFINE_multi_enum("es", ["x"], ["x", "y"], "es", flag_values=fv)
fl.DEFINE_multi(fl.ListParser(), fl.CsvListSerializer(","), "ls", [], "ls", flag_values=fv)
fl.DEFINE_spaceseplist("words", "p q", "words", flag_values=fv)
fl.DEFINE_string("a1", "x", "a1", flag_values=fv)
fl.DEFINE_string("a2", None, "a2", flag_values=fv)
fl.DEFINE_alias("alias", "a1", flag_values=fv)
fl.DEFINE_integer("req", None, "req", flag_values=fv)
fl.mark_flags_as_required(["req"], flag_values=fv)
fl.register_multi_flags_validator(["lr", "req"], lambda d: d["req"] > d["lr"],
                                  message="req must exceed lr", flag_values=fv)
@fl.multi_flags_validator(["ks", "fs"], message="same lengths", flag_values=fv)
def _same(d):
    return len(d["ks"]) == len(d["fs"])
@fl.validator("a1", message="a1 too long", flag_values=fv)
def _short(v):
    return len(v) < 6
fv(["prog", "--lr=0.25", "--fast", "--mode=b", "--n=3", "--n=4", "--ks=2", "--ks=3",
    "--fs=1.5", "--fs=2", "--es=y", "--ls=u,v", "--words=r s t", "--alias=yy", "--req=9"])
out["values"] = [fv.lr, fv.fast, fv.mode, fv.n, fv.ks, fv.fs, fv.es, fv.ls, fv.words, fv.a1,
                 fv.req]
def err(argv):
    g = fl.FlagValues()
    fl.DEFINE_integer("k", 1, "k", flag_values=g)
    fl.DEFINE_string("s", None, "s", flag_values=g)
    fl.DEFINE_string("t", None, "t", flag_values=g)
    fl.mark_flags_as_mutual_exclusive(["s", "t"], flag_values=g)
    try:
        g(argv)
        return "ok"
    except Exception as e:
        return type(e).__name__
out["errors"] = [err(["p", "--k=x"]), err(["p", "--s=a", "--t=b"]), err(["p", "--s=a"])]
try:
    fv(["prog", "--req=0"])
    out["validator"] = "ok"
except fl.Error as e:
    out["validator"] = [type(e).__name__, str(e)]
out["validation_error"] = issubclass(fl.ValidationError, fl.Error)
h = fl.DEFINE_integer("held", 3, "held", flag_values=fl.FlagValues())
out["holder"] = [isinstance(h, fl.FlagHolder), h.name, h.default]
fl.set_default(h, 5)
out["set_default"] = h.default
out["parsers"] = [fl.BooleanParser().parse("true"), fl.IntegerParser().parse("0x10"),
                  fl.EnumParser(["a", "b"]).parse("b"),
                  fl.WhitespaceSeparatedListParser().parse("a  b"),
                  fl.BaseListParser(",", "comma").parse("a,b"),
                  fl.ListSerializer(";").serialize(["a", "b"]),
                  fl.ArgumentParser().parse("raw")]
out["help_width"] = isinstance(fl.get_help_width(), int)
out["wrap"] = fl.text_wrap("one two three four five six", length=12, indent="  ")
print(json.dumps(out, sort_keys=True, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))
'''

# name_scope's rules, as TF 1.x keeps them: what `as` yields, re-entry by a name ending in "/",
# None and "" as the root, default_name, uniquifying, and name=<scope> naming an op after it
NAME_SCOPE_SCRIPT = r"""
import json, sys
if sys.argv[1] == "tf":
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
else:
    import rill.compat.v1 as tf
out = []
x = tf.constant(1.)
with tf.name_scope("foo") as sc:
    out += [sc, tf.identity(x, name=sc).op.name, tf.identity(x).op.name]
with tf.name_scope("foo") as sc:
    out += [sc, tf.identity(x).op.name]
with tf.name_scope("a"):
    with tf.name_scope("b") as sc2:
        out += [sc2, tf.identity(x, name=sc2).op.name]
    with tf.name_scope("foo/") as sc3:
        out += [sc3, tf.identity(x).op.name]
with tf.variable_scope("vs") as vs:
    out += [vs.name, vs.original_name_scope, tf.identity(x).op.name]
out.append(tf.nn.relu_layer(tf.ones([2, 2]), tf.ones([2, 2]), tf.ones([2])).op.name)
with tf.name_scope("q"):
    pass
out += [tf.identity(x, name="q/").op.name, tf.identity(x, name="q").op.name]
with tf.name_scope("outer"):
    for root in (None, ""):
        with tf.name_scope(root) as r:
            out += [r, tf.identity(x).op.name]
    with tf.name_scope(None, "dflt") as r:
        out += [r, tf.identity(x, name="n").op.name]
    with tf.name_scope("inner") as r:
        with tf.name_scope(r) as r2:
            out += [r2, tf.identity(x).op.name]
print(json.dumps({"names": out}))
"""


def _run(script, which):
    if which == "tf":
        out = tfref.run(["-c", script, "tf"])
    else:
        r = subprocess.run([sys.executable, "-c", script, "rill"], capture_output=True, text=True,
                           timeout=240, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
        assert r.returncode == 0, r.stderr[-3000:]
        out = r.stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("script", [SCRIPT, FLAGS_SCRIPT, NAME_SCOPE_SCRIPT],
                         ids=["api", "flags", "name_scope"])
def test_names_match_tensorflow(script):
    ours, theirs = _run(script, "rill"), _run(script, "tf")
    assert sorted(ours) == sorted(theirs)
    bad = {k: (ours[k], theirs[k]) for k in theirs if ours[k] != theirs[k]}
    assert not bad, json.dumps(bad, indent=1)[:6000]
