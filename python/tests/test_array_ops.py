"""Reductions and shape ops (python/rill/compat/v1/_array_ops.py over src/graph/ops_reduce.c and
ops_shape.c): values against numpy, gradients against central finite differences, TF's error
texts and default op names (TF's own, from TensorFlow run in a subprocess where it is
installed)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tfref

import rill.compat.v1 as tf

RNG = np.random.RandomState(7)
A = RNG.uniform(-2, 2, size=(3, 4)).astype(np.float64)


def run(t, feeds=None):
    with tf.Session() as s:
        return s.run(t, feeds or {})


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


VALUE_CASES = [
    ("reduce_max", lambda x: tf.reduce_max(x, 1), lambda a: a.max(1)),
    ("reduce_max keep", lambda x: tf.reduce_max(x, [0], keep_dims=True),
     lambda a: a.max(0, keepdims=True)),
    ("reduce_min", lambda x: tf.reduce_min(x, reduction_indices=0), lambda a: a.min(0)),
    ("reduce_prod", lambda x: tf.reduce_prod(x, -1), lambda a: a.prod(-1)),
    ("reduce_prod all", lambda x: tf.reduce_prod(x), lambda a: a.prod()),
    ("reduce_logsumexp", lambda x: tf.reduce_logsumexp(x, 1),
     lambda a: np.log(np.exp(a).sum(1))),
    ("argmin", lambda x: tf.argmin(x, 1), lambda a: a.argmin(1)),
    ("arg_min int32", lambda x: tf.arg_min(x, 0, output_type=tf.int32), lambda a: a.argmin(0)),
    ("cumsum", lambda x: tf.cumsum(x, 1), lambda a: a.cumsum(1)),
    ("cumsum exclusive reverse", lambda x: tf.cumsum(x, 0, exclusive=True, reverse=True),
     lambda a: np.flip(np.concatenate([np.zeros((1, 4)), np.flip(a, 0).cumsum(0)[:-1]]), 0)),
    ("cumprod", lambda x: tf.cumprod(x, 1), lambda a: a.cumprod(1)),
    ("concat", lambda x: tf.concat([x, 2 * x], 1), lambda a: np.concatenate([a, 2 * a], 1)),
    ("concat -1", lambda x: tf.concat([x, x], -2), lambda a: np.concatenate([a, a], -2)),
    ("stack", lambda x: tf.stack([x, x * 3], axis=1), lambda a: np.stack([a, 3 * a], 1)),
    ("unstack", lambda x: tf.unstack(x, axis=1)[2], lambda a: a[:, 2]),
    ("split", lambda x: tf.split(x, 2, 1)[1], lambda a: np.split(a, 2, 1)[1]),
    ("split sizes", lambda x: tf.split(x, [1, -1, 2], 1)[1], lambda a: a[:, 1:2]),
    ("transpose", lambda x: tf.transpose(x), lambda a: a.T),
    ("transpose perm", lambda x: tf.transpose(tf.reshape(x, [3, 2, 2]), [2, 0, 1]),
     lambda a: a.reshape(3, 2, 2).transpose(2, 0, 1)),
    ("tile", lambda x: tf.tile(x, [2, 3]), lambda a: np.tile(a, [2, 3])),
    ("pad", lambda x: tf.pad(x, [[1, 2], [0, 1]], constant_values=-5),
     lambda a: np.pad(a, [[1, 2], [0, 1]], constant_values=-5)),
    ("pad reflect", lambda x: tf.pad(x, [[2, 1], [3, 3]], mode="reflect"),
     lambda a: np.pad(a, [[2, 1], [3, 3]], mode="reflect")),
    ("pad symmetric", lambda x: tf.pad(x, [[3, 1], [4, 2]], mode="Symmetric"),
     lambda a: np.pad(a, [[3, 1], [4, 2]], mode="symmetric")),
    ("squeeze", lambda x: tf.squeeze(tf.reshape(x, [1, 3, 1, 4]), [2]),
     lambda a: a.reshape(1, 3, 4)),
    ("squeeze all", lambda x: tf.squeeze(tf.reshape(x, [1, 3, 1, 4])), lambda a: a),
    ("reverse", lambda x: tf.reverse(x, [0, 1]), lambda a: a[::-1, ::-1]),
    ("reverse_v2", lambda x: tf.reverse_v2(x, [-1]), lambda a: a[:, ::-1]),
    ("broadcast_to", lambda x: tf.broadcast_to(tf.reduce_max(x, 0, keepdims=True), [2, 3, 4]),
     lambda a: np.broadcast_to(a.max(0, keepdims=True), [2, 3, 4])),
    ("stop_gradient", lambda x: tf.stop_gradient(x), lambda a: a),
    ("size", lambda x: tf.size(x), lambda a: a.size),
    ("rank", lambda x: tf.rank(x), lambda a: a.ndim),
    ("norm", lambda x: tf.norm(x), lambda a: np.linalg.norm(a)),
    ("norm 1", lambda x: tf.norm(x, ord=1, axis=1), lambda a: np.abs(a).sum(1)),
    ("norm inf", lambda x: tf.norm(x, ord=np.inf, axis=0, keepdims=True),
     lambda a: np.abs(a).max(0, keepdims=True)),
    ("count_nonzero", lambda x: tf.count_nonzero(tf.maximum(x, 0.0)), lambda a: (a > 0).sum()),
]


@pytest.mark.parametrize("label,f,ref", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_values(label, f, ref, dtype):
    x = tf.placeholder(dtype, [3, 4])
    y = f(x)
    got = run(y, {x: A})
    want = ref(A.astype(dtype.as_numpy_dtype if hasattr(dtype, "as_numpy_dtype") else
                        np.float64))
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=1e-5 if dtype == tf.float32 else 1e-12, atol=1e-6)
    assert tuple(tf.TensorShape(y.shape).as_list() if y.shape.ndims is not None else ()) == \
        np.shape(want) or y.shape.ndims is None


def test_int_and_bool_reductions():
    x = tf.constant([[3, -1, 7], [2, 9, -4]], dtype=tf.int64)
    np.testing.assert_array_equal(run(tf.reduce_max(x, 1)), [7, 9])
    np.testing.assert_array_equal(run(tf.reduce_prod(x, 0)), [6, -9, -28])
    np.testing.assert_array_equal(run(tf.cumsum(x, 1)), [[3, 2, 9], [2, 11, 7]])
    b = tf.constant([[True, False], [True, True]])
    np.testing.assert_array_equal(run(tf.reduce_any(b, 1)), [True, True])
    np.testing.assert_array_equal(run(tf.reduce_all(b, 1)), [False, True])
    with pytest.raises(TypeError, match="does not match expected type of bool"):
        tf.reduce_all(x)


def test_range_and_one_hot():
    np.testing.assert_array_equal(run(tf.range(5)), np.arange(5))
    np.testing.assert_array_equal(run(tf.range(1, 5, 2)), [1, 3])
    r = tf.range(0.0, 1.0, 0.3)
    assert r.dtype == tf.float32
    np.testing.assert_allclose(run(r), np.arange(0, 1, 0.3), rtol=1e-6)
    assert tf.range(3).dtype == tf.int32
    assert tf.range(3, dtype=tf.int64).dtype == tf.int64
    np.testing.assert_array_equal(run(tf.range(5, 1, -2)), [5, 3])
    oh = tf.one_hot([0, 2, -1, 1], 3, on_value=5.0, off_value=-1.0)
    np.testing.assert_array_equal(run(oh), [[5, -1, -1], [-1, -1, 5], [-1, -1, -1], [-1, 5, -1]])
    oh = tf.one_hot(tf.constant([[1], [0]], dtype=tf.int64), 2, axis=0, dtype=tf.int32)
    assert oh.dtype == tf.int32
    np.testing.assert_array_equal(run(oh), np.eye(2, dtype=np.int32)[[1, 0]].transpose(1, 0)
                                  .reshape(2, 2, 1))


def test_unstack_needs_a_static_dim():
    with pytest.raises(ValueError, match="Cannot infer argument `num` from shape"):
        tf.unstack(tf.placeholder(tf.float32))


def test_tensor_axes_are_a_type_error():
    with pytest.raises(TypeError, match="not a tensor"):
        tf.reduce_max(tf.ones([2, 2]), tf.constant(0))
    with pytest.raises(TypeError, match="not a tensor"):
        tf.transpose(tf.ones([2, 2]), tf.constant([1, 0]))


ERROR_CASES = [
    (lambda: tf.concat([tf.zeros([2, 3]), tf.zeros([4, 5])], 0),
     "Dimension 0 in both shapes must be equal, but are 3 and 5. Shapes are [3] and [5]."),
    (lambda: tf.concat([tf.zeros([2, 3]), tf.zeros([4, 5, 1])], 0),
     "Shape must be rank 2 but is rank 3"),
    (lambda: tf.stack([tf.zeros([2, 3]), tf.zeros([4, 3])]),
     "Dimension 0 in both shapes must be equal, but are 2 and 4. Shapes are [2,3] and [4,3]."),
    (lambda: tf.split(tf.zeros([10]), 3), "Dimension size must be evenly divisible by 3 but is 10"),
    (lambda: tf.split(tf.zeros([10]), [3, 4]),
     "can't split axis of size 10 into pieces of size [3,4]"),
    (lambda: tf.split(tf.zeros([10]), [3, -1, -1]), "size_splits can only have one -1"),
    (lambda: tf.transpose(tf.zeros([2, 3]), [0, 1, 2]), "Dimension must be 2 but is 3"),
    (lambda: tf.tile(tf.zeros([2, 3]), [1, 2, 3]), "Shape must be rank 2 but is rank 3"),
    (lambda: tf.squeeze(tf.zeros([2, 3]), [1]),
     "Can not squeeze dim[1], expected a dimension of 1, got 3"),
    (lambda: tf.squeeze(tf.zeros([2, 3]), [2]), "squeeze_dims[0] not in [-2,2)."),
    (lambda: tf.broadcast_to(tf.zeros([3]), [2, 4]), "Dimensions must be equal, but are 3 and 4"),
    (lambda: tf.reverse(tf.zeros([2, 3]), [2]), "'axis'[0] = 2 is out of valid range [0, 1"),
    (lambda: tf.reduce_max(tf.zeros([2, 3]), 2),
     "Invalid reduction dimension 2 for input with 2 dimensions."),
    (lambda: tf.argmin(tf.zeros([2, 3]), 2), "Dimension (2) must be in the range [-2, 2)"),
    (lambda: tf.range(5, 1, 1), "Requires start <= limit when delta > 0: 5/1"),
    (lambda: tf.range(1, 5, 0), "Requires delta != 0"),
    (lambda: tf.one_hot([1, 2], -1), "must be non-negative but is -1"),
    (lambda: tf.pad(tf.zeros([2, 3]), [[3, 3], [1, 1]], "REFLECT"),
     "paddings must be less than the dimension size: 3, 3 not less than 2"),
]


@pytest.mark.parametrize("f,text", ERROR_CASES, ids=[c[1][:40] for c in ERROR_CASES])
def test_build_errors(f, text):
    # rill raises its build errors as InvalidArgumentError (TF: ValueError, same text)
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)) as e:
        f()
    assert text in str(e.value)


def test_run_time_errors():
    a = tf.placeholder(tf.float32)
    b = tf.placeholder(tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"ConcatOp : Dimensions of inputs should match: shape\[0\] = "
                             r"\[1,2\] vs. shape\[1\] = \[1,3\]"):
        run(tf.concat([a, b], 0), {a: [[1, 2]], b: [[1, 2, 3]]})
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"ConcatOp : Ranks of all input tensors should match"):
        run(tf.concat([a, b], 0), {a: [[1, 2]], b: [1, 2, 3]})
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Shapes of all inputs must match: values\[0\].shape = \[2\] != "
                             r"values\[1\].shape = \[3\]"):
        run(tf.stack([a, b]), {a: [1, 2], b: [1, 2, 3]})
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Can not squeeze dim\[0\]"):
        run(tf.squeeze(a, [0]), {a: [1, 2]})


def numeric_grad(f, a, eps=1e-6):
    """d(sum(w * f(x)))/dx by central differences, w fixed."""
    x = tf.placeholder(tf.float64, a.shape)
    y = f(x)
    w = np.random.RandomState(3).uniform(0.5, 1.5, size=run(y, {x: a}).shape)
    loss = tf.reduce_sum(y * tf.constant(w))
    (g,) = tf.gradients(loss, x)
    with tf.Session() as s:
        got = s.run(g, {x: a})
        want = np.zeros_like(a)
        for i in np.ndindex(*a.shape):
            ap, am = a.copy(), a.copy()
            ap[i] += eps
            am[i] -= eps
            want[i] = (s.run(loss, {x: ap}) - s.run(loss, {x: am})) / (2 * eps)
    return got, want


GRAD_CASES = [
    ("concat", lambda x: tf.concat([x, 2 * x, x[:, :1]], 1)),
    ("stack", lambda x: tf.stack([x, x * x], 2)),
    ("unstack", lambda x: tf.unstack(x)[1] * 3),
    ("split", lambda x: tf.split(x, [1, 3], 1)[1]),
    ("transpose", lambda x: tf.transpose(tf.reshape(x, [2, 3, 2]), [1, 2, 0])),
    ("tile", lambda x: tf.tile(x, [2, 3])),
    ("pad", lambda x: tf.pad(x, [[1, 0], [2, 1]])),
    ("pad reflect", lambda x: tf.pad(x, [[2, 1], [3, 2]], "REFLECT")),
    ("pad symmetric", lambda x: tf.pad(x, [[1, 3], [2, 4]], "SYMMETRIC")),
    ("reverse", lambda x: tf.reverse(x, [1])),
    ("broadcast_to", lambda x: tf.broadcast_to(x[:1], [2, 3, 4])),
    ("squeeze", lambda x: tf.squeeze(tf.reshape(x, [3, 1, 4]))),
    ("reduce_max", lambda x: tf.reduce_max(x, 1)),
    ("reduce_min", lambda x: tf.reduce_min(x, 0, keepdims=True)),
    ("reduce_prod", lambda x: tf.reduce_prod(x, 1)),
    ("reduce_prod all", lambda x: tf.reduce_prod(x)),
    ("reduce_logsumexp", lambda x: tf.reduce_logsumexp(x, 1)),
    ("cumsum", lambda x: tf.cumsum(x, 1, exclusive=True)),
    ("cumprod", lambda x: tf.cumprod(x, 0, reverse=True)),
    ("norm", lambda x: tf.norm(x, axis=1)),
]


@pytest.mark.parametrize("label,f", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients(label, f):
    a = A + np.sign(A) * 0.5  # away from 0 for cumprod's division
    got, want = numeric_grad(f, a)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_max_splits_ties_and_prod_handles_zeros():
    x = tf.constant([[1.0, 3.0, 3.0], [0.0, 2.0, 5.0]], dtype=tf.float64)
    np.testing.assert_allclose(run(tf.gradients(tf.reduce_max(x, 1), x)[0]),
                               [[0, 0.5, 0.5], [0, 0, 1]])
    np.testing.assert_allclose(run(tf.gradients(tf.reduce_prod(x, 1), x)[0]),
                               [[9, 3, 3], [10, 0, 0]])
    assert tf.gradients(tf.stop_gradient(x) * x, x)[0] is not None
    assert tf.gradients(tf.reduce_sum(tf.stop_gradient(x)), x)[0] is None


TF_SCRIPT = r"""
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
x = tf.placeholder(tf.float32, [2, 2])
ts = [tf.concat([x, x], 0), tf.stack([x]), tf.unstack(x)[0], tf.split(x, 2)[0],
      tf.split(x, [1, 1])[0], tf.transpose(x), tf.tile(x, [1, 1]), tf.pad(x, [[1, 1], [1, 1]]),
      tf.pad(x, [[1, 1], [1, 1]], "REFLECT"), tf.squeeze(x), tf.reverse(x, [0]),
      tf.broadcast_to(x, [2, 2]), tf.stop_gradient(x), tf.range(3), tf.one_hot([1], 2),
      tf.size(x), tf.rank(x), tf.reduce_max(x), tf.reduce_prod(x), tf.argmin(x, 0),
      tf.cumsum(x), tf.cumprod(x)]
print(json.dumps([t.op.name for t in ts]))
"""


def test_default_names_match_tensorflow():
    names = lambda x: [t.op.name for t in [  # noqa: E731
        tf.concat([x, x], 0), tf.stack([x]), tf.unstack(x)[0], tf.split(x, 2)[0],
        tf.split(x, [1, 1])[0], tf.transpose(x), tf.tile(x, [1, 1]),
        tf.pad(x, [[1, 1], [1, 1]]), tf.pad(x, [[1, 1], [1, 1]], "REFLECT"), tf.squeeze(x),
        tf.reverse(x, [0]), tf.broadcast_to(x, [2, 2]), tf.stop_gradient(x), tf.range(3),
        tf.one_hot([1], 2), tf.size(x), tf.rank(x), tf.reduce_max(x), tf.reduce_prod(x),
        tf.argmin(x, 0), tf.cumsum(x), tf.cumprod(x)]]
    ours = names(tf.placeholder(tf.float32, [2, 2]))
    py = tfref.TF_PY
    if not os.path.exists(py):
        tfref.skip("no Python with TensorFlow")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        out = subprocess.run([py, "-c", TF_SCRIPT], capture_output=True, text=True, env=env,
                             timeout=120)
    except subprocess.TimeoutExpired:
        tfref.skip("TensorFlow took too long to start")
    if out.returncode != 0:
        tfref.skip("TensorFlow is not importable: " + out.stderr[-200:])
    theirs = json.loads(out.stdout.strip().splitlines()[-1])
    # TF's Python range op is named "range" and so on; one_hot's default is "one_hot"
    assert ours == theirs
