"""tf.data.Dataset's later methods (compat/v1/data.py over src/kernels/cpu/cpu_dataset2.c): each
program builds `ds` (and optionally `vals`, tensors evaluated once: reductions, cardinalities)
and is run by TensorFlow 2.15's compat.v1 (in a subprocess with the venv's interpreter and a
clean PYTHONPATH) and by rill; elements, their order, types and shapes must agree."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tfref

import rill.compat.v1 as tf

TF_PYTHON = tfref.TF_PY

PROGRAMS = {
    "concatenate": """
a = tf.data.Dataset.from_tensor_slices((np.arange(3), np.ones((3, 2), np.float32)))
b = tf.data.Dataset.from_tensor_slices((np.arange(10, 12), np.zeros((2, 2), np.float32)))
ds = a.concatenate(b).concatenate(a.take(1))
vals = [ds.cardinality(), a.repeat().concatenate(b).cardinality()]
""",
    "enumerate": """
ds = tf.data.Dataset.from_tensor_slices({"x": np.arange(4.0, dtype=np.float32)}).enumerate(start=5)
""",
    "flat_map": """
ds = tf.data.Dataset.range(5).flat_map(lambda x: tf.data.Dataset.from_tensors(x).repeat(x))
vals = [ds.cardinality()]
""",
    "flat_map_tuple": """
ds = tf.data.Dataset.from_tensor_slices((np.arange(4), np.arange(4) * 10)).flat_map(
    lambda a, b: tf.data.Dataset.from_tensor_slices(tf.stack([a, b, a + b])))
""",
    "interleave_cycle_block": """
ds = tf.data.Dataset.range(1, 6).interleave(
    lambda x: tf.data.Dataset.from_tensors(x).repeat(x), cycle_length=2, block_length=2)
""",
    "interleave_cycle3": """
ds = tf.data.Dataset.range(1, 5).interleave(
    lambda x: tf.data.Dataset.range(10 * x, 10 * x + x), cycle_length=3)
""",
    "interleave_parallel": """
ds = tf.data.Dataset.range(4).interleave(
    lambda x: tf.data.Dataset.range(x, x + 3), cycle_length=2, block_length=1,
    num_parallel_calls=2)
""",
    "unbatch": """
ds = tf.data.Dataset.from_tensor_slices(
    (np.arange(12).reshape(3, 2, 2), np.arange(6.0).reshape(3, 2))).unbatch()
vals = [ds.cardinality(), tf.data.Dataset.range(10).batch(3).unbatch().cardinality()]
""",
    "shard": """
ds = tf.data.Dataset.range(11).shard(3, 1)
vals = [ds.cardinality(), tf.data.Dataset.range(11).shard(3, 2).cardinality()]
""",
    "cache_repeat": """
ds = tf.data.Dataset.range(4).map(lambda x: x * x).cache().repeat(3)
vals = [ds.cardinality()]
""",
    "take_while": """
ds = tf.data.Dataset.range(20).take_while(lambda x: x * x < 30)
vals = [ds.cardinality()]
""",
    "unique": """
ds = tf.data.Dataset.from_tensor_slices(np.array([3, 1, 3, 2, 1, 5, 2], np.int64)).unique()
""",
    "unique_strings": """
ds = tf.data.Dataset.from_tensor_slices(np.array([b"a", b"bb", b"a", b"", b"bb"])).unique()
""",
    "scan": """
ds = tf.data.Dataset.range(6).scan(np.int64(0), lambda s, x: (s + x, s * 10))
vals = [ds.cardinality()]
""",
    "scan_tuple_state": """
ds = tf.data.Dataset.from_tensor_slices(np.arange(5, dtype=np.float32)).scan(
    (np.float32(1), np.int32(0)), lambda s, x: ((s[0] * 2 + x, s[1] + 1), (s[0], s[1])))
""",
    "reduce": """
ds = tf.data.Dataset.range(1)
vals = [tf.data.Dataset.range(10).reduce(np.int64(0), lambda s, x: s + x),
        tf.data.Dataset.from_tensor_slices(np.arange(6.0, dtype=np.float32)).reduce(
            (np.float32(0), np.int64(0)), lambda s, x: (s[0] + x * x, s[1] + 1)),
        tf.data.Dataset.range(0).reduce(np.int64(7), lambda s, x: s + x)]
""",
    "get_single_element": """
ds = tf.data.Dataset.range(1)
vals = [tf.data.Dataset.from_tensors((np.int32(4), np.array([1.5, 2.5], np.float32)))
        .get_single_element()]
""",
    "window_flat_map_batch": """
ds = tf.data.Dataset.range(10).window(4, shift=3).flat_map(lambda w: w.batch(4))
vals = [tf.data.Dataset.range(10).window(4, shift=3).cardinality(),
        tf.data.Dataset.range(10).window(4, 3, 2, drop_remainder=True).cardinality()]
""",
    "window_stride_drop": """
ds = tf.data.Dataset.range(12).window(3, shift=2, stride=2, drop_remainder=True).flat_map(
    lambda w: w.batch(3))
""",
    "window_tuple": """
ds = tf.data.Dataset.from_tensor_slices((np.arange(7), np.arange(7) * 2.0)).window(3).flat_map(
    lambda a, b: tf.data.Dataset.zip((a.batch(3), b.batch(3))))
""",
    "padded_batch": """
w = tf.data.Dataset.range(9).window(4, shift=2).flat_map(lambda w: w.batch(4))
ds = w.padded_batch(3)
vals = [ds.cardinality(), w.padded_batch(3, drop_remainder=True).cardinality()]
""",
    "padded_batch_shapes_values": """
w = tf.data.Dataset.range(9).window(3, shift=2).flat_map(lambda w: w.batch(3))
ds = tf.data.Dataset.zip((w, w.map(lambda v: tf.cast(v, tf.float32)))).padded_batch(
    2, padded_shapes=([5], [None]), padding_values=(np.int64(-1), np.float32(0.5)),
    drop_remainder=True)
""",
    "choose_from_datasets": """
choice = tf.data.Dataset.from_tensor_slices(np.array([0, 1, 2, 1, 0, 0, 2], np.int64))
ds = tf.data.Dataset.choose_from_datasets(
    [tf.data.Dataset.range(3), tf.data.Dataset.range(10, 20), tf.data.Dataset.range(100, 101)],
    choice, stop_on_empty_dataset=False)
""",
    "choose_stop_on_empty": """
choice = tf.data.Dataset.from_tensor_slices(np.array([0, 1, 1, 1, 0], np.int64))
ds = tf.data.Dataset.choose_from_datasets(
    [tf.data.Dataset.range(3), tf.data.Dataset.range(10, 12)], choice)
""",
    "counter": """
ds = tf.data.Dataset.counter(3, 2).take(4)
vals = [tf.data.Dataset.counter().cardinality()]
""",
    "counter_float": """
ds = tf.data.Dataset.counter(1, -0.5, dtype=tf.float32).take(3)
""",
    "apply_options": """
opts = tf.data.Options()
opts.experimental_deterministic = True
ds = tf.data.Dataset.range(6).apply(lambda d: d.filter(lambda x: x % 2 > 0)).with_options(opts)
vals = [ds.cardinality()]
""",
    "cardinality_basic": """
ds = tf.data.Dataset.range(1)
r = tf.data.Dataset.range(3, 40, 4)
vals = [r.cardinality(), r.repeat().cardinality(), r.repeat(3).take(5).cardinality(),
        r.skip(3).batch(2).cardinality(), r.filter(lambda x: x > 3).cardinality(),
        r.shuffle(3).map(lambda x: x).prefetch(1).cardinality(),
        tf.data.Dataset.zip((r, r.repeat())).cardinality(),
        tf.data.Dataset.range(10, 0, -3).cardinality(), r.take(-1).skip(-1).cardinality()]
""",
    "ignore_errors": """
ds = tf.data.Dataset.from_tensor_slices(np.array([0, 5, 1, 7, 2], np.int64)).map(
    lambda i: tf.gather(np.arange(3.0, dtype=np.float32) * 2, i)).ignore_errors()
""",
    "random_seeded": """
ds = tf.data.Dataset.random(seed=4).take(5)
vals = [tf.data.Dataset.random(seed=1).cardinality()]
""",
    "random_graph_seed": """
tf.set_random_seed(7)
ds = tf.data.Dataset.zip((tf.data.Dataset.random(), tf.data.Dataset.random(seed=3))).take(3)
""",
    "rebatch": """
ds = tf.data.Dataset.range(10).batch(4).rebatch(3)
""",
    "rebatch_drop": """
ds = tf.data.Dataset.range(11).batch(4, drop_remainder=True).rebatch(3, drop_remainder=True)
""",
    "group_by_window": """
ds = tf.data.Dataset.range(17).group_by_window(lambda x: x % 3, lambda k, w: w.batch(4),
                                               window_size=4)
""",
    "group_by_window_size_func": """
ds = tf.data.Dataset.range(10).group_by_window(
    lambda x: x % 2, lambda k, w: w.map(lambda v: v + 100 * k), window_size_func=lambda k: k + 2)
""",
    "group_by_window_tuple": """
ds = tf.data.Dataset.from_tensor_slices((np.arange(9), np.arange(9) * 1.5)).group_by_window(
    lambda a, b: a // 4, lambda k, w: w.batch(3), window_size=3)
""",
    "bucket_by_sequence_length": """
w = tf.data.Dataset.range(12).window(5, 2).flat_map(lambda w: w.batch(5))
ds = w.bucket_by_sequence_length(lambda x: tf.shape(x)[0], [3, 5], [2, 2, 3])
""",
    "bucket_no_padding": """
w = tf.data.Dataset.range(14).window(4, 1, drop_remainder=True).flat_map(lambda w: w.batch(4))
ds = w.bucket_by_sequence_length(lambda x: tf.shape(x)[0], [4], [3, 4], no_padding=True)
""",
    "sample_from_datasets": """
ds = tf.data.Dataset.sample_from_datasets(
    [tf.data.Dataset.range(0, 100), tf.data.Dataset.range(100, 200),
     tf.data.Dataset.range(200, 300)], [0.5, 0.2, 0.3], seed=5).take(40)
""",
    "sample_uniform_exhaust": """
ds = tf.data.Dataset.sample_from_datasets([tf.data.Dataset.range(0, 5),
                                           tf.data.Dataset.range(100, 103)], seed=1)
""",
    "sample_stop_on_empty_zero_weight": """
ds = tf.data.Dataset.sample_from_datasets(
    [tf.data.Dataset.range(0, 5), tf.data.Dataset.range(100, 103), tf.data.Dataset.range(9, 10)],
    [0.3, 0.7, 0.0], seed=2, stop_on_empty_dataset=True)
""",
    "sample_weights_dataset": """
w = tf.data.Dataset.from_tensors(np.array([0.9, 0.1], np.float32)).repeat()
ds = tf.data.Dataset.sample_from_datasets([tf.data.Dataset.range(0, 30),
                                           tf.data.Dataset.range(100, 130)], w, seed=7).take(25)
""",
    "map_legacy": """
ds = tf.data.Dataset.range(6).map_with_legacy_function(lambda x: x * 3) \\
    .filter_with_legacy_function(lambda x: x % 2 == 0)
""",
}

DRIVER = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
{imp}
out = {{}}
for name, src in json.loads(sys.argv[1]).items():
    {reset}
    ns = {{"tf": tf, "np": np}}
    try:
        exec(src, ns)
    except Exception as e:
        out[name] = {{"error": type(e).__name__ + ": " + str(e)}}
        continue
    ds = ns["ds"]
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    seq = []
    def plain(v):
        if isinstance(v, dict):
            return {{k: plain(v[k]) for k in sorted(v)}}
        if isinstance(v, (tuple, list)):
            return [plain(e) for e in v]
        v = np.asarray(v)
        if v.dtype == object or v.dtype.kind == "S":
            return [x.decode() if isinstance(x, bytes) else x for x in v.ravel().tolist()]
        return v.tolist()
    with tf.Session() as s:
        while True:
            try:
                v = s.run(nxt)
            except tf.errors.OutOfRangeError:
                break
            seq.append(v)
        vals = [plain(v) for v in s.run(ns["vals"])] if ns.get("vals") else []
    def names(v):
        if isinstance(v, dict):
            return {{k: names(v[k]) for k in sorted(v)}}
        if isinstance(v, tuple):
            return [names(e) for e in v]
        return v.name if hasattr(v, "name") else v.as_list()
    out[name] = {{"seq": [plain(v) for v in seq], "types": names(tf.data.get_output_types(ds)),
                 "shapes": names(tf.data.get_output_shapes(ds)), "vals": vals}}
print(json.dumps(out))
"""


def _run(python, imp, env):
    src = DRIVER.format(imp=imp, reset="tf.reset_default_graph()")
    r = subprocess.run([python, "-c", src, json.dumps(PROGRAMS)], capture_output=True, text=True,
                       env=env, timeout=240)
    return r


@pytest.fixture(scope="module")
def both():
    if not os.path.exists(TF_PYTHON):
        tfref.skip("no TensorFlow interpreter at " + TF_PYTHON)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    t = _run(TF_PYTHON, "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()", env)
    if t.returncode != 0:
        tfref.skip("TensorFlow did not run: " + t.stderr[-3000:])
    r = _run(sys.executable, "import rill.compat.v1 as tf", dict(os.environ))
    assert r.returncode == 0, r.stderr
    return (json.loads(r.stdout.strip().splitlines()[-1]),
            json.loads(t.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_same_as_tf(both, name):
    ours, theirs = both
    assert "error" not in theirs[name], theirs[name]
    assert ours[name] == theirs[name]


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


def test_map_captures_an_outer_placeholder():
    p = tf.placeholder(tf.int64, [], name="p")
    ds = tf.data.Dataset.range(3).map(lambda v: v + p).flat_map(
        lambda v: tf.data.Dataset.from_tensors(v).map(lambda w: w * p))
    it = ds.make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as s:
        s.run(it.initializer, {p: 10})
        assert drain(nxt, s) == [100, 110, 120]
        s.run(it.initializer, {p: 2})
        assert drain(nxt, s) == [4, 6, 8]
    with pytest.raises(ValueError, match="Cannot capture a placeholder"):
        tf.data.make_one_shot_iterator(ds)


def test_map_reads_a_variable():
    v = tf.Variable(np.array(5, np.int64))
    ds = tf.data.Dataset.range(2).map(lambda x: x + v)
    it = ds.make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(it.initializer)
        assert drain(nxt, s) == [5, 6]


def test_cache_file(tmp_path):
    calls = tf.Variable(np.array(0, np.int64))
    fn = str(tmp_path / "c")
    ds = tf.data.Dataset.range(4).map(lambda x: x * 2 + tf.cast(0 * calls, tf.int64)).cache(fn)
    it = ds.make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(it.initializer)
        assert drain(nxt, s) == [0, 2, 4, 6]
    assert any(p.name.startswith("c") for p in tmp_path.iterdir())
    tf.reset_default_graph()
    # a later dataset of that name reads the file, not its input
    ds = tf.data.Dataset.range(100, 101).cache(fn)
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as s:
        assert drain(nxt, s) == [0, 2, 4, 6]


def test_cache_partial_then_full_in_memory():
    ds = tf.data.Dataset.range(5).cache()
    it = ds.make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as s:
        s.run(it.initializer)
        assert s.run(nxt) == 0
        s.run(it.initializer)
        assert drain(nxt, s) == [0, 1, 2, 3, 4]


def test_errors_as_tf():
    with pytest.raises(TypeError, match="does not support type"):
        tf.data.Dataset.range(3).map(lambda x: tf.cast(x, tf.float32)).unique()
    with pytest.raises(TypeError, match="must return a `Dataset`"):
        tf.data.Dataset.range(3).flat_map(lambda x: x)
    with pytest.raises(TypeError, match="Incompatible dataset elements"):
        tf.data.Dataset.range(3).concatenate(
            tf.data.Dataset.from_tensor_slices(np.ones(2, np.float32)))
    with pytest.raises(TypeError, match="scalar `tf.int64`"):
        tf.data.Dataset.choose_from_datasets(
            [tf.data.Dataset.range(2)], tf.data.Dataset.from_tensor_slices(np.zeros(2, np.int32)))
    with pytest.raises(ValueError, match="should not be empty"):
        tf.data.Dataset.choose_from_datasets([], tf.data.Dataset.range(1))
    with pytest.raises(TypeError, match="must return a `tf.data.Dataset`"):
        tf.data.Dataset.range(3).apply(lambda d: 3)
    with pytest.raises(TypeError, match="tf.data.Options"):
        tf.data.Dataset.range(3).with_options({})
    with pytest.raises(RuntimeError, match="only supported in eager mode"):
        tf.data.Dataset.range(3).as_numpy_iterator()
    with pytest.raises(RuntimeError, match="Python-style iteration in eager mode"):
        iter(tf.data.Dataset.range(3))
    with pytest.raises(RuntimeError, match="Python-style iteration in eager mode"):
        tf.data.NumpyIterator(tf.data.Dataset.range(3))
    with pytest.raises(TypeError, match="new state must match"):
        tf.data.Dataset.range(3).scan(np.int64(0), lambda s, x: (tf.cast(s, tf.float32), x))
    with pytest.raises(AttributeError):
        tf.data.Options().no_such_option = 1
    bad = {
        "Index must be between 0 and 2": tf.data.Dataset.range(5).shard(3, 3),
        "Number of shards must be greater than zero": tf.data.Dataset.range(5).shard(0, 0),
        "Window size must be greater than zero": tf.data.Dataset.range(5).window(0),
        "cycle_length must be greater than zero": tf.data.Dataset.range(5).interleave(
            lambda x: tf.data.Dataset.from_tensors(x), cycle_length=0),
    }
    for msg, ds in bad.items():
        with tf.Session() as s:
            with pytest.raises(tf.errors.InvalidArgumentError, match=msg):
                s.run(ds.make_initializable_iterator().initializer)
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Dataset was empty."):
            s.run(tf.data.Dataset.range(0).get_single_element())
        with pytest.raises(tf.errors.InvalidArgumentError, match="more than one element"):
            s.run(tf.data.Dataset.range(2).get_single_element())
        choice = tf.data.Dataset.from_tensor_slices(np.array([0, 3], np.int64))
        nxt = tf.data.make_one_shot_iterator(tf.data.Dataset.choose_from_datasets(
            [tf.data.Dataset.range(5)], choice)).get_next()
        assert s.run(nxt) == 0
        with pytest.raises(tf.errors.InvalidArgumentError, match="Selector index out of range"):
            s.run(nxt)
        w = tf.data.Dataset.range(5).window(3).flat_map(lambda w: w.batch(3))
        nxt = tf.data.make_one_shot_iterator(w.padded_batch(2, padded_shapes=[2])).get_next()
        with pytest.raises(tf.errors.InvalidArgumentError, match="pad to a smaller size"):
            s.run(nxt)


def test_specs_and_options():
    ds = tf.data.Dataset.from_tensor_slices((np.zeros((4, 3), np.float32), np.arange(4)))
    spec = ds.element_spec
    assert spec[0].shape.as_list() == [3] and spec[0].dtype == tf.float32
    assert repr(spec[1]) == "TensorSpec(shape=(), dtype=tf.int64, name=None)"
    w = ds.window(2)
    assert isinstance(w.element_spec[0], tf.data.DatasetSpec)
    assert repr(w.element_spec[0]) == (
        "DatasetSpec(TensorSpec(shape=(3,), dtype=tf.float32, name=None), TensorShape([]))")
    o = tf.data.Options()
    o.threading.private_threadpool_size = 2
    o2 = tf.data.Options()
    o2.experimental_deterministic = False
    d = ds.with_options(o).map(lambda a, b: a).with_options(o2)
    got = d.options()
    assert got.threading.private_threadpool_size == 2
    assert got.experimental_deterministic is False
    assert tf.data.INFINITE_CARDINALITY == -1 and tf.data.UNKNOWN_CARDINALITY == -2


def test_list_files_no_match_is_tfs_assertion(tmp_path):
    pattern = str(tmp_path / "*.none")
    ds = tf.data.Dataset.list_files(pattern)
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            s.run(tf.data.make_initializable_iterator(ds).initializer)
    # TF 2.15's text (its Assert op in list_files)
    assert f"assertion failed: [No files matched pattern: {pattern}]" in e.value.message


def test_list_files_shuffled_and_seeded(tmp_path):
    names = sorted(str(tmp_path / f"f{i}") for i in range(20))
    for n in names:
        open(n, "w").close()

    def once(seed):
        tf.reset_default_graph()
        ds = tf.data.Dataset.list_files(str(tmp_path / "f*"), seed=seed).repeat(2)
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
        with tf.Session() as s:
            return [v.decode() for v in drain(nxt, s)]

    a = once(3)
    assert sorted(a[:20]) == names and sorted(a[20:]) == names and a[:20] != names
    assert a == once(3) and a != once(4)


READERS = r"""
import json, os, sys
d = sys.argv[1]
progs = {
    "tfrecord": lambda: tf.data.TFRecordDataset([d + "/a.tfrecord", d + "/b.tfrecord"]),
    "tfrecord_gzip": lambda: tf.data.TFRecordDataset(d + "/a.gz.tfrecord", "GZIP"),
    "tfrecord_zlib": lambda: tf.data.TFRecordDataset(d + "/a.zlib.tfrecord",
                                                     compression_type="ZLIB"),
    "tfrecord_parallel": lambda: tf.data.TFRecordDataset(
        [d + "/a.tfrecord", d + "/b.tfrecord"], num_parallel_reads=2),
    "text": lambda: tf.data.TextLineDataset([d + "/t1.txt", d + "/t2.txt"]),
    "text_gzip": lambda: tf.data.TextLineDataset(d + "/t.txt.gz", compression_type="GZIP"),
    "fixed": lambda: tf.data.FixedLengthRecordDataset(d + "/f.bin", 3, header_bytes=2,
                                                      footer_bytes=1),
    "fixed_bad": lambda: tf.data.FixedLengthRecordDataset(d + "/f.bin", 4),
    "truncated": lambda: tf.data.TFRecordDataset(d + "/trunc.tfrecord"),
    "corrupt": lambda: tf.data.TFRecordDataset(d + "/corrupt.tfrecord"),
    "missing": lambda: tf.data.TFRecordDataset(d + "/nope.tfrecord"),
    "list_files": lambda: tf.data.Dataset.list_files(d + "/*.t*", shuffle=False),
}
out = {}
for name, make in progs.items():
    tf.reset_default_graph()
    nxt = tf.data.make_one_shot_iterator(make()).get_next()
    seq, err = [], None
    with tf.Session() as s:
        while True:
            try:
                seq.append(s.run(nxt).decode("latin-1"))
            except tf.errors.OutOfRangeError:
                break
            except tf.errors.OpError as e:
                m = e.message.splitlines()
                err = [type(e).__name__] + [x for x in m if x.strip() and "Graph execution" not in x
                                            and "node" not in x and "Detected" not in x
                                            and 'File "' not in x and "Node:" not in x][:1]
                break
    out[name] = [seq, err]
print(json.dumps(out))
"""


def test_readers_as_tf(tmp_path):
    if not os.path.exists(TF_PYTHON):
        tfref.skip("no TensorFlow interpreter")
    import gzip
    d = str(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    write = r"""
import sys
import tensorflow as tf
d = sys.argv[1]
for name, opt, recs in [("a", None, [b"", b"x", b"hello" * 50]), ("b", None, [b"b0", b"b1", b"b2"]),
                        ("a.gz", "GZIP", [b"g%d" % i for i in range(40)]),
                        ("a.zlib", "ZLIB", [b"z%d" % i * i for i in range(30)])]:
    with tf.io.TFRecordWriter(d + "/" + name + ".tfrecord", opt) as w:
        for r in recs:
            w.write(r)
"""
    w = subprocess.run([TF_PYTHON, "-c", write, d], capture_output=True, text=True, env=env,
                       timeout=120)
    if w.returncode != 0:
        tfref.skip("TensorFlow did not run: " + w.stderr[-300:])
    raw = (tmp_path / "b.tfrecord").read_bytes()
    (tmp_path / "trunc.tfrecord").write_bytes(raw[:-3])
    bad = bytearray(raw)
    bad[13] ^= 1  # the first record's data
    (tmp_path / "corrupt.tfrecord").write_bytes(bytes(bad))
    (tmp_path / "t1.txt").write_bytes(b"one\r\ntwo\n\nfour")
    (tmp_path / "t2.txt").write_bytes(b"five\n")
    with gzip.open(tmp_path / "t.txt.gz", "wb") as f:
        f.write(b"".join(b"line %d\n" % i for i in range(100)))
    (tmp_path / "f.bin").write_bytes(b"HH" + b"abcdefghijkl" + b"F")
    t = subprocess.run([TF_PYTHON, "-c", "import tensorflow.compat.v1 as tf\n"
                        "tf.disable_v2_behavior()\n" + READERS, d], capture_output=True, text=True,
                       env=env, timeout=120)
    assert t.returncode == 0, t.stderr[-2000:]
    r = subprocess.run([sys.executable, "-c", "import rill.compat.v1 as tf\n" + READERS, d],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    theirs = json.loads(t.stdout.strip().splitlines()[-1])
    ours = json.loads(r.stdout.strip().splitlines()[-1])
    for name in theirs:
        assert ours[name][0] == theirs[name][0], name
        if theirs[name][1] is None:
            assert ours[name][1] is None, (name, ours[name][1])
        else:
            assert ours[name][1][0] == theirs[name][1][0], (name, ours[name], theirs[name])
            assert theirs[name][1][1].strip().startswith(ours[name][1][1].strip()[:40]), (
                name, ours[name], theirs[name])
