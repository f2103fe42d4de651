"""tf.train's helpers (compat/v1/_train_helpers.py, learning_rate_decay.py, _input.py) against
TensorFlow 2.15's compat.v1 run in a subprocess: ExponentialMovingAverage (values, slot names,
checkpoints both ways), the checkpoint state file, checkpoint file helpers, init_from_checkpoint
from a checkpoint TF wrote, SaverDef, write_graph (TF parses it), the schedules, the _join and
maybe_ batchers, LooperThread, basic_train_loop, global_step."""
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import tfref

import rill.compat.v1 as tf

W0 = [0.5, -1.0, 2.0]
C = [1.0, 2.0, -3.0]
FEEDS = [[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]]

# The EMA graph: the same text builds it under rill and under TF.
EMA_GRAPH = """
w = tf.Variable(W0, dtype=tf.float32, name="w")
b = tf.Variable(0.3, name="b")
step = tf.Variable(0, dtype=tf.int64, name="step", trainable=False)
loss = tf.reduce_sum(tf.square(w - tf.constant(C))) + tf.square(b)
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
ema = tf.train.ExponentialMovingAverage(0.99, num_updates=step)
with tf.control_dependencies([train]):
    ema_op = ema.apply([w, b])
p = tf.placeholder(tf.float32, [2], name="p")
ema2 = tf.train.ExponentialMovingAverage(0.8, zero_debias=True, name="ema2")
op2 = ema2.apply([p])
"""


def ema_run(tf, np, W0, C, FEEDS, save_dir=None, restore_from=None):
    """Runs the EMA graph 3 steps; returns what both sides compare."""
    ns = {"tf": tf, "W0": W0, "C": C}
    exec(EMA_GRAPH, ns)
    ema, ema2 = ns["ema"], ns["ema2"]
    w, b, p = ns["w"], ns["b"], ns["p"]
    out = {"vars": sorted(v.op.name for v in tf.global_variables()),
           "restore": sorted(ema.variables_to_restore()),
           "avg_name": [ema.average_name(w), ema.average(b).op.name, ema2.average(p).op.name],
           "moving": sorted(v.op.name for v in tf.moving_average_variables()),
           "steps": []}
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for f in FEEDS:
            s.run([ns["ema_op"], ns["op2"]], {p: f})
            out["steps"].append([s.run(ema.average(w)).tolist(), float(s.run(ema.average(b))),
                                 s.run(ema2.average(p)).tolist()])
        if save_dir:
            tf.train.Saver().save(s, os.path.join(save_dir, "full"))
    return out


DA_CASES = [
    ("plain", "tf.train.AdagradDAOptimizer(0.3, gs)"),
    ("l1l2", "tf.train.AdagradDAOptimizer(0.3, gs, initial_gradient_squared_accumulator_value=0.2, "
             "l1_regularization_strength=0.05, l2_regularization_strength=0.1)"),
]


def da_run(tf, np, expr, sparse):
    """5 steps of AdagradDA on a small quadratic (sparse: through a gather with a repeated
    index); the variable after each step, the slot names, the global step."""
    tf.reset_default_graph()
    gs = tf.train.get_or_create_global_step()
    w = tf.Variable([[0.5, -1.0], [2.0, 0.1], [0.3, 0.3]], dtype=tf.float32, name="w")
    c = tf.constant([[1.0, 2.0], [-3.0, 0.05], [0.0, 1.0]])
    if sparse:
        rows = tf.gather(w, [2, 0, 2])
        loss = tf.reduce_sum(tf.square(rows - tf.gather(c, [2, 0, 2])))
    else:
        loss = tf.reduce_sum(tf.square(w - c))
    opt = eval(expr)
    train = opt.minimize(loss, global_step=gs)
    out = {"w": []}
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for _ in range(5):
            s.run(train)
            out["w"].append(s.run(w).tolist())
        out["gs"] = int(s.run(gs))
    out["vars"] = sorted(v.op.name for v in tf.global_variables())
    return out


TF_SCRIPT = r"""
import json, os, sys
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
args = json.loads(sys.argv[1])
mode, d = args["mode"], args["dir"]
out = {}
exec(args["ema_src"])
if mode == "ref":
    out["ema"] = ema_run(tf, np, args["W0"], args["C"], args["FEEDS"], save_dir=d)
    out["da"] = {k + ("_sparse" if sp else ""): da_run(tf, np, e, sp)
                 for k, e in args["da_cases"] for sp in (False, True)}
    # the checkpoint state texts
    protos = []
    for a in args["protos"]:
        protos.append(str(tf.train.generate_checkpoint_state_proto(*a)))
    out["protos"] = protos
    os.makedirs(os.path.join(d, "st"), exist_ok=True)
    tf.train.update_checkpoint_state(os.path.join(d, "st"), os.path.join(d, "st", "m-2"),
                                     [os.path.join(d, "st", "m-1")], latest_filename="ckstate",
                                     all_model_checkpoint_timestamps=[1.5, 2.25],
                                     last_preserved_timestamp=0.5)
    # a checkpoint for init_from_checkpoint
    tf.reset_default_graph()
    with tf.variable_scope("old"):
        ow = tf.get_variable("w", initializer=tf.constant([[1.0, 2.0], [3.0, 4.0]]))
        ob = tf.get_variable("b", initializer=tf.constant([5.0, 6.0]))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        tf.train.Saver().save(s, os.path.join(d, "init", "m"))
    # schedules
    tf.reset_default_graph()
    st = tf.placeholder(tf.int64, [])
    sched = {}
    for k, e in args["scheds"]:
        sched[k] = eval(e)
    vals = {k: [] for k in sched}
    with tf.Session() as s:
        for i in args["sched_steps"]:
            r = s.run(sched, {st: i})
            for k in r:
                vals[k].append(float(r[k]))
    out["sched"] = vals
    tf.reset_default_graph()
    st = tf.constant(30, tf.int64)
    noisy = tf.train.noisy_linear_cosine_decay(0.5, st, 100)
    with tf.Session() as s:
        out["noisy"] = [float(s.run(noisy)) for _ in range(400)]
else:
    # read what rill wrote
    tf.reset_default_graph()
    ns = {"tf": tf, "W0": args["W0"], "C": args["C"]}
    exec(EMA_GRAPH, ns)
    saver = tf.train.Saver(ns["ema"].variables_to_restore())
    with tf.Session() as s:
        saver.restore(s, os.path.join(d, "rill_full"))
        out["restored"] = [s.run(ns["w"]).tolist(), float(s.run(ns["b"]))]
    out["keys"] = sorted(n for n, _ in tf.train.list_variables(os.path.join(d, "rill_full")))
    gd = tf.GraphDef()
    with open(os.path.join(d, "g.pb"), "rb") as f:
        gd.ParseFromString(f.read())
    from google.protobuf import text_format
    gt = tf.GraphDef()
    with open(os.path.join(d, "g.pbtxt")) as f:
        text_format.Merge(f.read(), gt)
    def nodes(g):
        return [[n.name, n.op, list(n.input), n.device,
                 [[dd.size for dd in sh.dim] if not sh.unknown_rank else None
                  for sh in n.attr["_output_shapes"].list.shape]] for n in g.node]
    out["pb"], out["pbtxt"] = nodes(gd), nodes(gt)
    sd = tf.train.SaverDef()
    with open(os.path.join(d, "saver_def.pb"), "rb") as f:
        sd.ParseFromString(f.read())
    out["saver_def"] = [str(sd), sd.filename_tensor_name, sd.save_tensor_name,
                        sd.restore_op_name, sd.max_to_keep, sd.keep_checkpoint_every_n_hours,
                        sd.version]
    st = tf.train.get_checkpoint_state(os.path.join(d, "rst"), "ckstate")
    out["rill_state"] = [st.model_checkpoint_path, list(st.all_model_checkpoint_paths)]
print(json.dumps(out))
"""

import inspect  # noqa: E402

EMA_SRC = ("EMA_GRAPH = %r\n" % EMA_GRAPH + inspect.getsource(ema_run) +
           inspect.getsource(da_run))

PROTOS = [
    ["/abs/dir", "/abs/dir/m-2", ["/abs/dir/m-1"], [1.5, 1700000000.123456789], 3.0],
    ["rel", "rel/m-2", ["rel/m-1", 'a"b\\c\n\u00e9']],
    ["/abs", "/abs/m-3", None, None, None],
    ["rel", "rel/m-1", ["rel/m-1"]],
]

SCHEDS = [
    ("sgdr", "tf.train.cosine_decay_restarts(0.5, st, 10)"),
    ("sgdr_t1", "tf.train.cosine_decay_restarts(0.5, st, 7, t_mul=1.0, m_mul=0.5, alpha=0.1)"),
    ("sgdr_m", "tf.train.cosine_decay_restarts(1.0, st, 5, t_mul=1.5, m_mul=0.7)"),
    ("lincos", "tf.train.linear_cosine_decay(0.5, st, 40)"),
    ("lincos_args", "tf.train.linear_cosine_decay(2.0, st, 40, num_periods=2.0, alpha=0.1, "
                    "beta=0.01)"),
    ("pwc", "tf.train.piecewise_constant_decay(st, [10, 20], [1.0, 0.5, 0.1])"),
]
SCHED_STEPS = [0, 1, 4, 5, 9, 10, 11, 17, 20, 33, 40, 55, 100]


def _run_tf(args):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    py = tfref.TF_PY
    if not os.path.exists(py):
        py = sys.executable
    args = dict(args, ema_src=EMA_SRC, W0=W0, C=C, FEEDS=FEEDS)
    try:
        r = subprocess.run([py, "-c", "EMA_GRAPH = None\n" + TF_SCRIPT, json.dumps(args)],
                           env=env, capture_output=True, text=True, timeout=180)
    except (OSError, subprocess.TimeoutExpired) as e:
        tfref.skip(f"no TensorFlow to compare with: {e}")
    if r.returncode != 0:
        if "No module named 'tensorflow'" in r.stderr:
            tfref.skip("no TensorFlow to compare with")
        raise AssertionError(r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("tfref"))
    out = _run_tf({"mode": "ref", "dir": d, "protos": PROTOS, "scheds": SCHEDS,
                   "sched_steps": SCHED_STEPS, "da_cases": DA_CASES})
    out["dir"] = d
    return out


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


# --- ExponentialMovingAverage ---

def test_ema_same_as_tf(ref, tmp_path):
    got = ema_run(tf, np, W0, C, FEEDS, save_dir=str(tmp_path))
    want = ref["ema"]
    for k in ("vars", "restore", "avg_name", "moving"):
        assert got[k] == want[k], k
    np.testing.assert_allclose(np.array(got["steps"][-1][0]), want["steps"][-1][0], rtol=1e-6)
    for g, w in zip(got["steps"], want["steps"]):
        np.testing.assert_allclose(g[0], w[0], rtol=1e-6)
        np.testing.assert_allclose(g[1], w[1], rtol=1e-6)
        np.testing.assert_allclose(g[2], w[2], rtol=1e-6)  # zero-debiased tensor average


def test_ema_restores_tf_checkpoint_by_average_names(ref):
    """A Saver of variables_to_restore() loads the averages TF saved into the variables."""
    ns = {"tf": tf, "W0": W0, "C": C}
    exec(EMA_GRAPH, ns)
    saver = tf.train.Saver(ns["ema"].variables_to_restore())
    with tf.Session() as s:
        saver.restore(s, os.path.join(ref["dir"], "full"))
        np.testing.assert_allclose(s.run(ns["w"]), ref["ema"]["steps"][-1][0], rtol=1e-6)
        np.testing.assert_allclose(s.run(ns["b"]), ref["ema"]["steps"][-1][1], rtol=1e-6)


def test_ema_errors_and_defaults():
    v = tf.Variable(1, name="iv", trainable=False)
    ema = tf.train.ExponentialMovingAverage(0.5)
    with pytest.raises(TypeError, match="The variables must be half, float, or double: iv:0"):
        ema.apply([v])
    f = tf.Variable(2.0, name="f")
    assert ema.average(f) is None
    assert ema.average_name(f) == "f/ExponentialMovingAverage"
    assert ema.name == "ExponentialMovingAverage"
    op = ema.apply()  # trainable variables
    assert op.name == "ExponentialMovingAverage" and op.type == "NoOp"
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(op)
        assert s.run(ema.average(f)) == pytest.approx(2.0)


# --- AdagradDAOptimizer ---

@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name,expr", DA_CASES, ids=[c[0] for c in DA_CASES])
def test_adagrad_da_same_as_tf(ref, name, expr, sparse):
    got = da_run(tf, np, expr, sparse)
    want = ref["da"][name + ("_sparse" if sparse else "")]
    assert got["vars"] == want["vars"]
    assert got["gs"] == want["gs"] == 5
    for g, w in zip(got["w"], want["w"]):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-7)
    if sparse:
        assert any(o.type == "SparseApplyAdagradDA" for o in
                   tf.get_default_graph().get_operations())


def test_adagrad_da_errors():
    gs = tf.train.get_or_create_global_step()
    with pytest.raises(ValueError, match="initial_gradient_squared_accumulator_value must be "
                                         "positive"):
        tf.train.AdagradDAOptimizer(0.1, gs, initial_gradient_squared_accumulator_value=0.0)
    w = tf.Variable([1.0], name="w")
    bad = tf.Variable(0, name="bad_step")  # int32: TF's op takes an int64 step
    with pytest.raises(Exception, match="global_step"):
        tf.train.AdagradDAOptimizer(0.1, bad).minimize(tf.reduce_sum(w * w))


# --- the checkpoint state file ---

def test_generate_checkpoint_state_proto_text(ref):
    for args, want in zip(PROTOS, ref["protos"]):
        args = [list(a) if isinstance(a, list) else a for a in args]
        assert str(tf.train.generate_checkpoint_state_proto(*args)) == want


def test_update_checkpoint_state_file_as_tf(ref, tmp_path):
    d = os.path.join(ref["dir"], "st")
    with open(os.path.join(d, "ckstate")) as f:
        tf_text = f.read()
    mine = str(tmp_path / "st")
    os.makedirs(mine)
    tf.train.update_checkpoint_state(mine, os.path.join(mine, "m-2"), [os.path.join(mine, "m-1")],
                                     latest_filename="ckstate",
                                     all_model_checkpoint_timestamps=[1.5, 2.25],
                                     last_preserved_timestamp=0.5)
    with open(os.path.join(mine, "ckstate")) as f:
        assert f.read() == tf_text.replace(d, mine)
    st = tf.train.get_checkpoint_state(d, "ckstate")
    assert st.model_checkpoint_path == os.path.join(d, "m-2")
    assert st.all_model_checkpoint_paths == [os.path.join(d, "m-1"), os.path.join(d, "m-2")]
    assert st.all_model_checkpoint_timestamps == [1.5, 2.25]
    assert st.last_preserved_timestamp == 0.5
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    with pytest.raises(RuntimeError, match="conflicts with path used for checkpoint state"):
        tf.train.update_checkpoint_state(mine, os.path.join(mine, "checkpoint"))
    with pytest.raises(ValueError, match="Checkpoint timestamps, if provided, must match"):
        tf.train.generate_checkpoint_state_proto(mine, "a", ["a", "b"], [1.0])


# --- checkpoint files ---

def _saved(tmp_path, step=None):
    tf.reset_default_graph()
    tf.Variable([1.0, 2.0], name="v")
    saver = tf.train.Saver(max_to_keep=10)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return [saver.save(s, str(tmp_path / "m"), global_step=i) for i in range(step or 1)]


def test_checkpoint_exists_mtimes_remove(tmp_path):
    p1, p2 = _saved(tmp_path, 2)
    assert tf.train.checkpoint_exists(p1) and tf.train.checkpoint_exists(p2)
    assert not tf.train.checkpoint_exists(str(tmp_path / "nope"))
    mt = tf.train.get_checkpoint_mtimes([p1, str(tmp_path / "nope"), p2])
    assert len(mt) == 2
    assert mt[0] == pytest.approx(os.stat(p1 + ".index").st_mtime, abs=1e-3)
    open(p1 + ".meta", "w").close()
    tf.train.remove_checkpoint(p1)
    assert not tf.train.checkpoint_exists(p1)
    assert not [f for f in os.listdir(tmp_path) if f.startswith(os.path.basename(p1) + ".")]
    assert tf.train.checkpoint_exists(p2)


def test_checkpoints_iterator_yields_then_times_out(tmp_path):
    (p,) = _saved(tmp_path)
    t0 = time.time()
    got = list(tf.train.checkpoints_iterator(str(tmp_path), timeout=0.3))
    assert got == [p]
    assert time.time() - t0 < 5
    calls = []
    got = list(tf.train.checkpoints_iterator(str(tmp_path / "empty"), timeout=0.1,
                                             timeout_fn=lambda: calls.append(1) or len(calls) > 1))
    assert got == [] and len(calls) == 2


# --- init_from_checkpoint ---

def test_init_from_tf_checkpoint_scopes_and_variables(ref):
    ck = os.path.join(ref["dir"], "init")
    with tf.variable_scope("new"):
        w = tf.get_variable("w", shape=[2, 2], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", shape=[2], initializer=tf.zeros_initializer())
    other = tf.Variable([0.0, 0.0], name="other")
    keep = tf.Variable(7.0, name="keep")
    tf.train.init_from_checkpoint(ck, {"old/": "new/"})
    tf.train.init_from_checkpoint(os.path.join(ck, "m"), {"old/b": other})
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(s.run(w), [[1, 2], [3, 4]])
        np.testing.assert_array_equal(s.run(b), [5, 6])
        np.testing.assert_array_equal(s.run(other), [5, 6])
        assert s.run(keep) == 7.0
    with pytest.raises(ValueError, match="Tensor old/x is not found in"):
        tf.train.init_from_checkpoint(ck, {"old/x": other})
    with pytest.raises(ValueError, match=r"Shape of variable keep:0 \(\(\)\) doesn't match with "
                                         r"shape of tensor old/b \(\[2\]\)"):
        tf.train.init_from_checkpoint(ck, {"old/b": keep})
    with pytest.raises(ValueError, match="should map to scope only"):
        tf.train.init_from_checkpoint(ck, {"old/w": "missing"})


# --- global step ---

def test_global_step_and_assert():
    gs = tf.train.get_or_create_global_step()
    tf.train.assert_global_step(gs)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert tf.train.global_step(s, gs) == 0
    with pytest.raises(TypeError, match='Existing "global_step" does not have integer type'):
        tf.train.assert_global_step(tf.Variable(1.0))
    with pytest.raises(TypeError, match='Existing "global_step" is not scalar'):
        tf.train.assert_global_step(tf.Variable([1, 2]))
    with pytest.raises(TypeError, match='must be a Variable or Tensor'):
        tf.train.assert_global_step(3)


# --- schedules ---

def test_schedules_same_as_tf(ref):
    st = tf.placeholder(tf.int64, [])
    sched = {}
    for k, e in SCHEDS:
        sched[k] = eval(e)
    with tf.Session() as s:
        for j, i in enumerate(SCHED_STEPS):
            for k, t in sched.items():
                assert s.run(t, {st: i}) == pytest.approx(ref["sched"][k][j], rel=1e-5,
                                                          abs=1e-7), (k, i)
    with pytest.raises(ValueError, match="global_step is required for cosine decay restarts"):
        tf.train.cosine_decay_restarts(0.1, None, 10)


def test_noisy_linear_cosine_decay_statistics(ref):
    noisy = tf.train.noisy_linear_cosine_decay(0.5, tf.constant(30, tf.int64), 100)
    with tf.Session() as s:
        got = np.array([s.run(noisy) for _ in range(400)])
    want = np.array(ref["noisy"])
    # lr * ((alpha + linear + N(0, var)) * cosine + beta): mean and spread as TF's
    step, lin = 30.0, 0.7
    cos = 0.5 * (1 + np.cos(np.pi * 2 * 0.5 * 0.3))
    mean = 0.5 * (lin * cos + 0.001)
    sd = 0.5 * cos * np.sqrt(1.0 / (1 + step) ** 0.55)
    for x in (got, want):
        assert abs(x.mean() - mean) < 4 * sd / np.sqrt(len(x))
        assert x.std() == pytest.approx(sd, rel=0.15)
    assert len(set(got.tolist())) > 300  # a new draw per run


# --- batching ---

def _drain(fetch, n):
    with tf.Session() as s:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(s, coord=coord)
        out = [s.run(fetch) for _ in range(n)]
        coord.request_stop()
        coord.join(threads)
    return out


def test_batch_join_takes_from_every_list():
    a = tf.train.batch_join([[tf.constant(1), tf.constant(10.0)],
                             [tf.constant(2), tf.constant(20.0)]], batch_size=8)
    (ints, floats), = _drain(a, 1)
    assert set(ints.tolist()) <= {1, 2}
    np.testing.assert_array_equal(floats, ints * 10.0)
    qrs = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    assert len(qrs[-1]._enqueue_ops) == 2
    assert a[0].op.name.startswith("batch_join/")
    with pytest.raises(TypeError, match="Expected types to be consistent: int32 vs. float32"):
        tf.train.batch_join([[tf.constant(1)], [tf.constant(1.0)]], 2)


def test_shuffle_batch_join_dict():
    d = tf.train.shuffle_batch_join([{"x": tf.constant([1, 1])}, {"x": tf.constant([2, 2])}],
                                    batch_size=4, capacity=20, min_after_dequeue=5, seed=3)
    (out,) = _drain(d, 1)
    assert out["x"].shape == (4, 2) and set(out["x"].ravel().tolist()) <= {1, 2}
    assert d["x"].op.name.startswith("shuffle_batch_join/")


def test_maybe_batch_keeps_what_keep_input_says():
    x = tf.range(10)
    b = tf.train.maybe_batch([x], keep_input=tf.equal(x % 2, 0), batch_size=5, enqueue_many=True)
    (got,) = _drain(b, 1)
    np.testing.assert_array_equal(got[0], [0, 2, 4, 6, 8])
    tf.reset_default_graph()
    c = tf.Variable(0, name="c")
    nxt = tf.train.range_input_producer(6, shuffle=False).dequeue()
    b = tf.train.maybe_batch(nxt, keep_input=tf.greater(nxt, 2), batch_size=3)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(s, coord=coord)
        got = s.run(b)
        coord.request_stop()
        coord.join(threads)
    np.testing.assert_array_equal(got, [3, 4, 5])
    del c
    with pytest.raises(ValueError, match="`keep_input` cannot be a vector when"):
        tf.train.maybe_batch([tf.constant(1)], tf.constant([True]), 1)
    with pytest.raises(ValueError, match="`keep_input` must be 0 or 1 dimensions."):
        tf.train.maybe_batch([tf.constant([1])], tf.constant([[True]]), 1, enqueue_many=True)


def test_maybe_shuffle_and_join_variants():
    x = tf.range(8)
    keep = tf.less(x, 4)
    s1 = tf.train.maybe_shuffle_batch([x], 4, capacity=10, min_after_dequeue=0, keep_input=keep,
                                      enqueue_many=True, seed=1)
    j = tf.train.maybe_batch_join([[x], [x + 100]], keep, 8, enqueue_many=True)
    sj = tf.train.maybe_shuffle_batch_join([[x], [x + 100]], 4, 20, 0, keep, enqueue_many=True,
                                           seed=2)
    ((a,), (bb,), (c,)), = _drain([s1, j, sj], 1)
    assert set(a.tolist()) <= {0, 1, 2, 3}  # the runner enqueues the kept rows again and again
    assert set(bb.tolist()) <= {0, 1, 2, 3, 100, 101, 102, 103} and bb.shape == (8,)
    assert set(c.tolist()) <= {0, 1, 2, 3, 100, 101, 102, 103}


# --- loops ---

def test_looper_thread_and_errors():
    coord = tf.train.Coordinator()
    calls = []
    lt = tf.train.LooperThread.loop(coord, 0.01, target=lambda k: calls.append(k), args=(5,))
    time.sleep(0.15)
    coord.request_stop()
    coord.join([lt])
    assert len(calls) >= 3 and set(calls) == {5}
    with pytest.raises(ValueError, match="'coord' argument must be a Coordinator"):
        tf.train.LooperThread(object(), 1)
    with pytest.raises(ValueError, match="require that you also pass 'target'"):
        tf.train.LooperThread(tf.train.Coordinator(), 1, args=(1,))

    class Counting(tf.train.LooperThread):
        n = 0

        def run_loop(self):
            Counting.n += 1
            if Counting.n == 4:
                self._coord.request_stop()

    c2 = tf.train.Coordinator()
    t = Counting(c2, None)
    t.start()
    c2.join([t])
    assert Counting.n == 4


def test_basic_train_loop_runs_until_stop():
    gs = tf.train.get_or_create_global_step()
    inc = tf.train.GradientDescentOptimizer(0.1).minimize(tf.square(tf.Variable(1.0)),
                                                          global_step=gs)
    sv = tf.train.Supervisor(logdir=None, save_model_secs=0, save_summaries_secs=0)
    seen = []

    def step(sess, k):
        sess.run(inc)
        seen.append(int(sess.run(gs)) * k)
        if len(seen) == 3:
            sv.request_stop()

    tf.train.basic_train_loop(sv, step, args=[2])
    assert seen == [2, 4, 6]


# --- SaverDef, write_graph: TF reads what rill wrote ---

def test_tf_reads_rill_files(ref, tmp_path):
    d = str(tmp_path)
    got = ema_run(tf, np, W0, C, FEEDS)
    del got
    tf.reset_default_graph()
    ns = {"tf": tf, "W0": W0, "C": C}
    exec(EMA_GRAPH, ns)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for f in FEEDS:
            s.run([ns["ema_op"], ns["op2"]], {ns["p"]: f})
        tf.train.Saver().save(s, os.path.join(d, "rill_full"))
        want_avg = [s.run(ns["ema"].average(ns["w"])).tolist(),
                    float(s.run(ns["ema"].average(ns["b"])))]
    g = tf.get_default_graph()
    assert tf.train.write_graph(g, d, "g.pb", as_text=False) == os.path.join(d, "g.pb")
    tf.io.write_graph(g, d, "g.pbtxt")
    # SaverDef: its names drive save and restore by hand
    tf.reset_default_graph()
    v = tf.Variable([3.0, 4.0], name="v")
    saver = tf.train.Saver(max_to_keep=3, keep_checkpoint_every_n_hours=2.5)
    sd = saver.as_saver_def()
    assert saver.saver_def == sd
    with open(os.path.join(d, "saver_def.pb"), "wb") as f:
        f.write(sd.SerializeToString())
    gr = tf.get_default_graph()
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        prefix = os.path.join(d, "bysd")
        s.run(gr.get_tensor_by_name(sd.save_tensor_name),
              {gr.get_tensor_by_name(sd.filename_tensor_name): prefix})
        assert tf.train.NewCheckpointReader(prefix).get_tensor("v").tolist() == [3.0, 4.0]
    os.makedirs(os.path.join(d, "rst"))
    tf.train.update_checkpoint_state(os.path.join(d, "rst"), "rel-1", latest_filename="ckstate")

    out = _run_tf({"mode": "read", "dir": d})
    np.testing.assert_allclose(out["restored"][0], want_avg[0], rtol=1e-6)
    np.testing.assert_allclose(out["restored"][1], want_avg[1], rtol=1e-6)
    assert out["keys"] == sorted(ref["ema"]["vars"])
    ops = [[o.name, o.type, [t.op.name if t.value_index == 0 else
                             "%s:%d" % (t.op.name, t.value_index) for t in o.inputs] +
            ["^" + c.name for c in o.control_inputs], o.device,
            [[-1 if x is None else x for x in t.shape.as_list()] for t in o.outputs]]
           for o in g.get_operations()]
    assert out["pb"] == ops
    assert out["pbtxt"] == ops
    assert out["saver_def"][1:] == [sd.filename_tensor_name, sd.save_tensor_name,
                                    sd.restore_op_name, 3, 2.5, 2]
    assert out["saver_def"][0] == str(sd)
    rel = os.path.join(d, "rst", "rel-1")
    assert out["rill_state"] == [rel, [rel]]
