"""The index-family functions of rill.compat.v1._index_ops against TensorFlow 2.15's
tensorflow.compat.v1: each case below is one snippet run by both (TF in a subprocess with a clean
PYTHONPATH), values and gradients compared; then TF's error classes and texts for bad indices."""
import json
import os
import pickle
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import tfref

import rill.compat.v1 as rtf

TF_PYTHON = tfref.TF_PY

_X = "x = tf.constant(np.linspace(-2, 2.5, 12).reshape(6, 2) ** 2 - 1.3, tf.float64)\n"

# Each snippet sets `out`, a list of tensors run in one session (after the variables' init).
CASES = {
    "segment_reductions": _X + """
ids = [0, 0, 1, 3, 3, 3]
ys = [tf.segment_mean(x, ids), tf.segment_max(x, ids), tf.segment_min(x, ids),
      tf.segment_prod(x, ids), tf.math.segment_max(x, ids)]
out = ys + [tf.gradients(tf.reduce_sum(y * y), x)[0] for y in ys[:4]]
""",
    "segment_ints": """
d = tf.constant([4, -7, 9, 2], tf.int32)
out = [tf.segment_max(d, [0, 0, 3, 3]), tf.segment_prod(d, [0, 2, 2, 2]),
       tf.segment_mean(d, [0, 0, 1, 1]), tf.unsorted_segment_min(d, [0, -1, 2, 2], 4),
       tf.unsorted_segment_max(d, [1, 1, -1, 0], 3), tf.unsorted_segment_prod(d, [1, 1, 0, 0], 3)]
""",
    "unsorted_reductions": _X + """
ids = tf.constant([2, -1, 0, 1, 0, 2])
ys = [tf.unsorted_segment_max(x, ids, 3), tf.unsorted_segment_min(x, ids, 3),
      tf.unsorted_segment_prod(x, ids, 3), tf.unsorted_segment_mean(x, ids, 4),
      tf.unsorted_segment_sqrt_n(x, ids, 4), tf.math.unsorted_segment_prod(x, ids, 3),
      tf.unsorted_segment_max(tf.reshape(x, [3, 2, 2]), [[0, 1], [1, 1], [-1, 0]], 2)]
out = ys + [tf.gradients(tf.reduce_sum(y * y), x)[0] for y in ys]
""",
    "prod_zeros": """
x = tf.constant([[0., 1.5], [2, -1], [0.5, 0], [0, 3], [1.25, 0], [2, 0.75]], tf.float64)
y = tf.segment_prod(x, [0, 0, 1, 1, 1, 2])
u = tf.unsorted_segment_prod(x, [0, 0, 1, 1, 1, 2], 3)
out = [y, tf.gradients(tf.reduce_sum(y * [[1., 2]]), x)[0], tf.gradients(tf.reduce_sum(u), x)[0]]
""",
    "sparse_segments": _X + """
ix, ids = [0, 2, 5, 5, 1], [0, 0, 1, 3, 3]
ys = [tf.sparse_segment_sum(x, ix, ids), tf.sparse_segment_mean(x, ix, ids),
      tf.sparse_segment_sqrt_n(x, ix, ids), tf.sparse_segment_sum(x, ix, ids, num_segments=5),
      tf.sparse_segment_mean(x, ix, ids, num_segments=5)]
out = ys + [tf.gradients(tf.reduce_sum(y * y), x)[0] for y in ys]
""",
    "tensor_scatter": _X + """
ix = [[3], [0], [5]]
u = tf.constant(np.linspace(-1, 3, 6).reshape(3, 2) * 3, tf.float64)
ys = [tf.tensor_scatter_nd_update(x, ix, u), tf.tensor_scatter_nd_add(x, ix, u),
      tf.tensor_scatter_nd_sub(x, ix, u), tf.tensor_scatter_nd_max(x, ix, u),
      tf.tensor_scatter_nd_min(x, ix, u), tf.tensor_scatter_update(x, [[1, 1]], [9.]),
      tf.tensor_scatter_add(x, [[2, 0], [2, 0]], [1., 2]), tf.tensor_scatter_sub(x, [[0, 1]], [4.])]
out = ys + [g for y in ys[:5] for g in tf.gradients(tf.reduce_sum(y * y), [x, u])]
""",
    "variable_scatters": """
v = tf.Variable(np.arange(1, 9, dtype=np.float32).reshape(4, 2))
w = tf.Variable(np.arange(1, 9, dtype=np.int32).reshape(4, 2))
ops = [tf.scatter_nd_update(v, [[1, 0], [3, 1]], [10., 20]),
       tf.scatter_nd_add(v, [[0], [0]], [[1., 2], [3, 4]]), tf.scatter_nd_sub(v, [[2, 1]], [5.]),
       tf.scatter_mul(v, [1, 1], [[2., 3], [4, 5]]), tf.scatter_div(v, [3], [[2., 8]]),
       tf.scatter_max(v, [0, 2], [[0., 50], [7, -1]]), tf.scatter_min(v, [2], [[1., 1]]),
       tf.scatter_div(w, [0, 3], [[2, 3], [3, 2]]), tf.scatter_mul(w, [1], 3),
       tf.batch_scatter_update(v, [[1], [0], [0], [1]], [[7.], [8], [9], [10]])]
out = "sequential", ops
""",
    "batch_gather": """
p = tf.constant(np.arange(24.).reshape(2, 3, 4))
out = [tf.batch_gather(p, [[2, 0], [1, 1]]), tf.batch_gather(p, [[[0], [2], [1]], [[1], [1], [0]]]),
       tf.gradients(tf.reduce_sum(tf.batch_gather(p, [[2, 0, 2], [1, 1, 0]]) ** 2), p)[0]]
""",
    "sort": """
a = tf.constant([[3., 1, 2, 1], [0, -5, 4, 4]])
i = tf.constant([[3, -2147483648, 2, 1], [2147483647, 0, 4, -2147483648]])
out = [tf.sort(a), tf.sort(a, direction="DESCENDING"), tf.sort(a, axis=0), tf.argsort(a),
       tf.argsort(a, direction="DESCENDING", stable=True), tf.argsort(a, axis=0), tf.sort(i),
       tf.argsort(i), tf.sort(tf.reshape(tf.range(24.) * -1.5 % 7, [2, 3, 4]), axis=1),
       tf.gradients(tf.reduce_sum(tf.sort(a) * [[1., 2, 3, 4]]), a)[0]]
""",
    "search_count": """
out = [tf.setdiff1d([1, 5, 3, 5, 7], [5, 8]).out, tf.setdiff1d([1., 5, 3], [5.], tf.int64).idx,
       tf.unique_with_counts([4, 1, 4, 4, 2]).y, tf.unique_with_counts([4, 1, 4, 4, 2]).count,
       tf.unique_with_counts([4, 1, 4], tf.int64).idx, tf.invert_permutation([3, 0, 2, 1]),
       tf.math.invert_permutation([0, 1]),
       tf.searchsorted([1., 2, 2, 4], [2., 0, 5, 3]),
       tf.searchsorted([[1., 2, 2, 4], [0, 1, 2, 3]], [[2., 9], [1, 1]], side="right"),
       tf.searchsorted([1, 3], [2, 3], out_type=tf.int64),
       tf.bincount([1, 1, 3, 0]), tf.bincount([1, 1, 3, 0], minlength=6),
       tf.bincount([1, 1, 3, 7], maxlength=4), tf.math.bincount([[1, 2], [2, 2]], dtype=tf.float32),
       tf.bincount([1, 2], weights=[0.5, 2.]), tf.bincount(tf.zeros([0], tf.int32)),
       tf.histogram_fixed_width([-1., 0, 0.3, 1.1, 2, 7], [0., 2.], nbins=5),
       tf.histogram_fixed_width([[0.2, 0.9]], [0., 1.], nbins=3, dtype=tf.int64),
       tf.histogram_fixed_width_bins([-1., 0, 0.3, 1.1, 2, 7], [0., 2.], nbins=5),
       tf.confusion_matrix([0, 1, 2, 1], [0, 2, 2, 1]),
       tf.math.confusion_matrix([0, 1], [1, 1], num_classes=3, weights=[2., 0.5],
                                dtype=tf.float32),
       tf.unravel_index([5, 7, 0], [3, 4]), tf.unravel_index(tf.constant(13, tf.int64),
                                                           tf.constant([2, 3, 4], tf.int64)),
       tf.is_non_decreasing([1, 2, 2]), tf.is_strictly_increasing([1, 2, 2]),
       tf.math.is_strictly_increasing([[1., 2], [3, 4]]), tf.is_non_decreasing([5]),
       tf.is_non_decreasing([3., 1])]
""",
    "partition_stitch": _X + """
parts = tf.dynamic_partition(x, [1, 0, 2, 1, 1, 0], 3)
st = tf.dynamic_stitch([[0, 2], [1, 3]], [[[1., 2], [3, 4]], [[5., 6], [7, 8]]])
st2 = tf.dynamic_stitch([[4, 0], [1, 3, 2]], [x[:2] * 2, x[2:5]])  # TF leaves unnamed rows unset
l = tf.reduce_sum(parts[0] ** 2) + 3 * tf.reduce_sum(parts[1])
out = parts + [st, st2, tf.gradients(l, x)[0], tf.gradients(tf.reduce_sum(st2 ** 2), x)[0],
               tf.dynamic_partition(tf.reshape(x, [3, 2, 2]), [[0, 1], [1, 1], [0, 0]], 2)[1]]
""",
    "random_crop": """
tf.set_random_seed(7)
img = tf.reshape(tf.range(5 * 6 * 3), [5, 6, 3])
out = [tf.random_crop(img, [2, 3, 3], seed=11), tf.random_crop(img, [4, 1, 2], seed=3)]
""",
}


def _run(tf, code):
    g = tf.Graph()
    with g.as_default():
        env = {"tf": tf, "np": np}
        exec(code, env)
        out = env["out"]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            if isinstance(out, tuple):  # sequential updates, each fetched after the last
                return [np.asarray(s.run(o)) for o in out[1]]
            return [np.asarray(r) for r in s.run(out)]


_TF_DRIVER = r"""
import os, pickle, sys, json
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
tf.logging.set_verbosity(tf.logging.ERROR)
cases = json.load(open(sys.argv[1]))
res = {}
for k, code in cases.items():
    g = tf.Graph()
    with g.as_default():
        env = {"tf": tf, "np": np}
        exec(code, env)
        out = env["out"]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            if isinstance(out, tuple):
                res[k] = [np.asarray(s.run(o)) for o in out[1]]
            else:
                res[k] = [np.asarray(r) for r in s.run(out)]
pickle.dump(res, open(sys.argv[2], "wb"))
"""


@pytest.fixture(scope="module")
def tf_results():
    if not os.path.exists(TF_PYTHON):
        tfref.skip(f"no TensorFlow interpreter at {TF_PYTHON}")
    with tempfile.TemporaryDirectory() as d:
        cases, outp, drv = (os.path.join(d, n) for n in ("cases.json", "out.pkl", "drv.py"))
        with open(cases, "w") as f:
            json.dump(CASES, f)
        with open(drv, "w") as f:
            f.write(_TF_DRIVER)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        r = subprocess.run([TF_PYTHON, drv, cases, outp], env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        with open(outp, "rb") as f:
            return pickle.load(f)


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_as_tf(case, tf_results):
    got = _run(rtf, CASES[case])
    want = tf_results[case]
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        assert a.shape == b.shape, f"{case}[{i}]: shape {a.shape} vs TF's {b.shape}"
        assert a.dtype == b.dtype, f"{case}[{i}]: dtype {a.dtype} vs TF's {b.dtype}"
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=f"{case}[{i}]")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{case}[{i}]")


ERRORS = [
    ("tf.unsorted_segment_max([1., 2, 3], [0, 7, 1], 5)",
     "segment_ids[1] = 7 is out of range [0, 5)"),
    ("tf.unsorted_segment_prod([[1., 2], [3, 4]], [[0, 7], [1, 1]], 5)",
     "segment_ids[0,1] = 7 is out of range [0, 5)"),
    ("tf.segment_max([1., 2, 3], [0, 2, 1])", "segment ids are not increasing"),
    ("tf.segment_min([1., 2, 3], [-1, 0, 1])",
     "Segment id -1 out of range [0, 2), possibly because 'segment_ids' input is not sorted."),
    ("tf.tensor_scatter_nd_update(tf.zeros([4]), [[1], [7]], [1., 2])",
     "indices[1] = [7] does not index into shape [4]"),
    ("tf.tensor_scatter_nd_add(tf.zeros([4, 3]), [[1, 0], [2, 7]], [1., 2])",
     "indices[1] = [2, 7] does not index into shape [4,3]"),
    ("tf.invert_permutation([0, 0, 1])", "0 is duplicated in the input."),
    ("tf.invert_permutation([0, 5, 1])", "5 is not between 0 and 3"),
    ("tf.dynamic_partition([1., 2, 3], [0, 3, 1], 2)[0]", "partitions[1] = 3 is not in [0, 2)"),
    ("tf.unravel_index([1, 30], [3, 4])", "index is out of bound as with dims"),
    ("tf.bincount(tf.constant([1, -1, 2]))", "Input arr must be non-negative!"),
    ("tf.searchsorted([[1., 2, 3]], tf.placeholder_with_default([[1.], [2.]], [None, 1]))",
     "Leading dim_size of both tensors must match."),
    ("tf.sparse_segment_sum([1., 2, 3], [0, 1], [1, 0])", "segment ids are not increasing"),
]


@pytest.mark.parametrize("expr,text", ERRORS)
def test_errors(expr, text):
    tf = rtf
    with tf.Graph().as_default():
        y = eval(expr)
        with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError) as e:
            s.run(y)
    assert text in str(e.value)


def test_variable_scatter_errors():
    tf = rtf
    with tf.Graph().as_default():
        v = tf.Variable(tf.zeros([4]))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 7 is not "
                               r"in \[0, 4\)"):
                s.run(tf.scatter_mul(v, [1, 7], [1., 2]))
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"indices\[1\] = \[7\] does not index into shape \[4\]"):
                s.run(tf.scatter_nd_add(v, [[1], [7]], [1., 2]))


def test_build_errors():
    tf = rtf
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="should be one of ASCENDING, DESCENDING"):
            tf.sort([1., 2], direction="UP")
        with pytest.raises(ValueError, match="Argument `side` must be either 'right' or 'left'"):
            tf.searchsorted([1., 2], [1.], side="middle")
        # rill raises its build errors as InvalidArgumentError (TF: ValueError, same text)
        with pytest.raises((ValueError, tf.errors.InvalidArgumentError),
                           match="Shape must be rank 1 but is rank 2"):
            tf.setdiff1d([[1]], [1])
        with pytest.raises(TypeError):
            tf.segment_max([1., 2], [0, 0], nme="x")
