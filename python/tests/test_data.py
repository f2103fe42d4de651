"""tf.data (compat/v1/data.py over the C dataset ops): programs in TF 1.x style. Deterministic
pipelines are compared element by element with TensorFlow's (run in a subprocess with the
venv's interpreter and a clean PYTHONPATH); shuffles by their permutation property and their
seeds' determinism."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tfref

import rill.compat.v1 as tf

TF_PYTHON = tfref.TF_PY

# Each program builds `ds` from the namespace (tf, np) and is run by both.
PROGRAMS = {
    "slices_map_batch": """
x = np.arange(10, dtype=np.float32)
y = np.arange(10, dtype=np.int64) * 3
ds = tf.data.Dataset.from_tensor_slices((x, y)).map(lambda a, b: (a * 2.0, b + 1)).batch(4)
""",
    "dict_drop_repeat": """
feats = {"a": np.arange(12, dtype=np.float32).reshape(6, 2), "b": np.arange(6, dtype=np.int32)}
ds = tf.data.Dataset.from_tensor_slices(feats).batch(4, drop_remainder=True).repeat(3)
""",
    "range_skip_take_filter": """
ds = tf.data.Dataset.range(3, 40, 2).skip(2).filter(lambda v: tf.equal(tf.minimum(v, 15), 15)).take(4)
""",
    "zip_prefetch": """
a = tf.data.Dataset.range(5)
b = tf.data.Dataset.from_tensor_slices(np.arange(7, dtype=np.float32) / 2)
ds = tf.data.Dataset.zip((a, b)).map(lambda i, f: f + tf.cast(i, tf.float32)).prefetch(2)
""",
    "from_tensors_repeat": """
ds = tf.data.Dataset.from_tensors(np.array([1.0, 2.0], dtype=np.float32)).repeat(3).batch(2)
""",
}

DRIVER = r"""
import json, sys
import numpy as np
{imp}
out = {{}}
for name, src in json.loads(sys.argv[1]).items():
    {reset}
    ns = {{"tf": tf, "np": np}}
    exec(src, ns)
    ds = ns["ds"]
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    seq = []
    with tf.Session() as s:
        while True:
            try:
                v = s.run(nxt)
            except tf.errors.OutOfRangeError:
                break
            seq.append(v)
    def plain(v):
        if isinstance(v, dict):
            return {{k: plain(v[k]) for k in sorted(v)}}
        if isinstance(v, (tuple, list)):
            return [plain(e) for e in v]
        return np.asarray(v).tolist()
    def names(v):
        if isinstance(v, dict):
            return {{k: names(v[k]) for k in sorted(v)}}
        if isinstance(v, tuple):
            return [names(e) for e in v]
        return v.name if hasattr(v, "name") else v.as_list()
    out[name] = {{"seq": [plain(v) for v in seq], "types": names(ds.output_types),
                 "shapes": names(ds.output_shapes)}}
print(json.dumps(out))
"""


def _run_tf():
    if not os.path.exists(TF_PYTHON):
        tfref.skip("no TensorFlow interpreter at " + TF_PYTHON)
    src = DRIVER.format(imp="import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()",
                        reset="tf.reset_default_graph()")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    r = subprocess.run([TF_PYTHON, "-c", src, json.dumps(PROGRAMS)], capture_output=True,
                       text=True, env=env, timeout=120)
    if r.returncode != 0:
        tfref.skip("TensorFlow did not run: " + r.stderr[-500:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def _run_rill():
    src = DRIVER.format(imp="import rill.compat.v1 as tf", reset="tf.reset_default_graph()")
    r = subprocess.run([sys.executable, "-c", src, json.dumps(PROGRAMS)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def both():
    return _run_rill(), _run_tf()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_same_elements_as_tf(both, name):
    ours, theirs = both
    assert ours[name]["seq"] == theirs[name]["seq"]
    assert ours[name]["types"] == theirs[name]["types"]
    assert ours[name]["shapes"] == theirs[name]["shapes"]


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def drain(t, sess, feed=None):
    out = []
    while True:
        try:
            out.append(sess.run(t, feed))
        except tf.errors.OutOfRangeError:
            return out


def test_structure_shapes_and_types():
    ds = tf.data.Dataset.from_tensor_slices(
        {"x": np.zeros((8, 3), np.float32), "y": (np.zeros(8, np.int64), np.ones((8, 2)))})
    assert ds.output_types == {"x": tf.float32, "y": (tf.int64, tf.float64)}
    assert ds.output_shapes["x"] == tf.TensorShape([3])
    b = ds.batch(5)
    assert b.output_shapes["x"].as_list() == [None, 3]
    assert ds.batch(5, drop_remainder=True).output_shapes["y"][1].as_list() == [5, 2]
    el = tf.data.make_one_shot_iterator(b).get_next()
    assert set(el) == {"x", "y"} and el["x"].shape.as_list() == [None, 3]
    assert el["x"].op.type == "IteratorGetNext"
    with tf.Session() as s:
        v = s.run(el)
        assert v["x"].shape == (5, 3) and v["y"][1].shape == (5, 2)
        assert s.run(el)["x"].shape == (3, 3)
        with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
            s.run(el)


def test_initializable_iterator_reinit_with_placeholder():
    n = tf.placeholder(tf.int64, [])
    it = tf.data.Dataset.range(n).map(lambda v: v * v).make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as s:
        with pytest.raises(tf.errors.FailedPreconditionError, match="not been initialized"):
            s.run(nxt)
        s.run(it.initializer, {n: 4})
        assert drain(nxt, s) == [0, 1, 4, 9]
        s.run(it.initializer, {n: 2})
        assert drain(nxt, s) == [0, 1]


def test_from_structure_make_initializer():
    a = tf.data.Dataset.from_tensor_slices(np.arange(3, dtype=np.float32))
    b = tf.data.Dataset.from_tensor_slices(np.arange(10, 12, dtype=np.float32))
    it = tf.data.Iterator.from_structure(a.output_types, a.output_shapes)
    nxt = it.get_next()
    ia, ib = it.make_initializer(a), it.make_initializer(b)
    with tf.Session() as s:
        s.run(ia)
        assert drain(nxt, s) == [0, 1, 2]
        s.run(ib)
        assert drain(nxt, s) == [10, 11]


def test_shuffle_permutation_and_seed():
    def epochs(seed, graph_seed=None):
        tf.reset_default_graph()
        if graph_seed is not None:
            tf.set_random_seed(graph_seed)
        ds = tf.data.Dataset.range(50).shuffle(20, seed=seed).repeat(2)
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
        with tf.Session() as s:
            return drain(nxt, s)

    a = epochs(5)
    assert sorted(a[:50]) == list(range(50)) and sorted(a[50:]) == list(range(50))
    assert a[:50] != list(range(50)) and a[:50] != a[50:]  # reshuffled each iteration
    assert epochs(5) == a and epochs(6) != a
    assert epochs(None, graph_seed=3) == epochs(None, graph_seed=3)
    tf.reset_default_graph()
    ds = tf.data.Dataset.range(30).shuffle(10, seed=1, reshuffle_each_iteration=False).repeat(2)
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as s:
        v = drain(nxt, s)
    assert v[:30] == v[30:]


def test_map_error_names_the_op():
    ds = tf.data.Dataset.from_tensor_slices(np.array([5, 1], np.int64)).map(
        lambda i: tf.gather(np.arange(3.0, dtype=np.float32), i))
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="MapDataset"):
            s.run(nxt)


def test_one_shot_refuses_a_captured_placeholder():
    outer = tf.placeholder(tf.float32, [], name="outer")
    ds = tf.data.Dataset.from_tensor_slices(np.ones(3, np.float32)).map(lambda v: v + outer)
    with pytest.raises(ValueError, match=r"Cannot capture a placeholder \(name:outer"):
        tf.data.make_one_shot_iterator(ds)


def test_training_from_dataset():
    rng = np.random.RandomState(0)
    x = rng.randn(64, 3).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(64, seed=1).batch(16).repeat()
    xb, yb = tf.data.make_one_shot_iterator(ds).get_next()
    w = tf.Variable(np.zeros((3, 1), np.float32))
    loss = tf.reduce_mean(tf.square(tf.matmul(xb, w) - yb))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for _ in range(300):
            s.run(train)
        assert s.run(loss) < 1e-4
