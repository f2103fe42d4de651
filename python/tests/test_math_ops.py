"""The element-wise math API (python/rill/compat/v1/_math_ops.py) against TensorFlow.

The same graph-building code runs with rill and, in a subprocess, with TensorFlow's
tensorflow.compat.v1 (the venv's interpreter, the rill source tree off its path); every fetched
value is compared. Gradients go against central finite differences; the small integer dtypes
are fed, fetched, cast and saved to a checkpoint that TF reads back."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tfref

import rill.compat.v1 as tf

# Builds the cases with `tf` (rill's or TensorFlow's) and returns (fetches dict, feed dict).
CASES = r'''
def build(tf, np):
    x = tf.placeholder(tf.float32, [None], name="x")
    xd = tf.placeholder(tf.float64, [None], name="xd")
    p = tf.placeholder(tf.float32, [None], name="p")     # positive
    u = tf.placeholder(tf.float32, [None], name="u")     # in (-1, 1)
    i = tf.constant([7, -7, 5, -5, 0, 9], tf.int32)
    j = tf.constant([2, 2, -3, -3, 4, 9], tf.int32)
    b1 = tf.constant([True, False, True, False])
    b2 = tf.constant([True, True, False, False])
    xv = np.array([-2.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 3.7, 7.0], np.float32)
    pv = np.array([0.1, 0.5, 1.0, 1.5, 2.5, 3.0, 4.2, 7.5, 10.0], np.float32)
    uv = np.array([-0.9, -0.5, -0.1, 0.0, 0.1, 0.3, 0.5, 0.7, 0.95], np.float32)
    f = {}
    for n in ["abs", "sign", "round", "rint", "floor", "ceil", "erf", "erfc", "sin", "cos",
              "tan", "atan", "sinh", "cosh", "asinh", "expm1"]:
        f[n] = getattr(tf, n)(x)
        f["math." + n] = getattr(tf.math, n)(xd)
    for n in ["rsqrt", "reciprocal", "log1p", "lgamma", "digamma", "acosh"]:
        f[n] = getattr(tf, n)(p + 1.0)
    for n in ["asin", "acos", "atanh"]:
        f[n] = getattr(tf, n)(u)
    for n in ["is_nan", "is_inf", "is_finite"]:
        f[n] = getattr(tf, n)(x / (x - 0.5) * (x + 100.0) - x / x)
    for n in ["elu", "selu", "relu6", "leaky_relu", "softplus", "softsign"]:
        f["nn." + n] = getattr(tf.nn, n)(x)
    f["leaky_relu_a"] = tf.nn.leaky_relu(x, alpha=0.05)
    for n in ["pow", "floordiv", "floor_div", "floormod", "mod", "truncatemod", "realdiv",
              "squared_difference", "atan2", "xdivy", "xlogy", "less", "less_equal", "greater",
              "greater_equal", "not_equal", "maximum", "minimum"]:
        fn = getattr(tf, n, None) or getattr(tf.math, n)
        f[n] = fn(p, tf.reverse(p, [0]) - 2.0) if n not in ("pow", "xlogy") else fn(x, p)
    f["pow_int"] = tf.pow(i, tf.abs(j))
    for n in ["floordiv", "floormod", "truncatediv", "truncatemod", "squared_difference",
              "less", "greater_equal", "not_equal"]:
        fn = getattr(tf, n, None) or getattr(tf.math, n)
        f[n + "_int"] = fn(i, tf.where(tf.equal(j, 0), tf.ones_like(j), j))
    f["bcast_pow"] = tf.pow(tf.reshape(p, [9, 1]), tf.constant([0.5, 2.0]))
    f["logical_and"] = tf.logical_and(b1, b2)
    f["logical_or"] = tf.logical_or(b1, b2)
    f["logical_xor"] = tf.logical_xor(b1, b2)
    f["logical_not"] = tf.logical_not(b1)
    f["where"] = tf.where(x > 0, x, -x * 2.0)
    f["where_vec"] = tf.where(tf.constant([True, False, True]), tf.ones([3, 2]), tf.zeros([3, 2]))
    f["where_v2"] = tf.where_v2(tf.reshape(x, [9, 1]) > 0.0, tf.constant([1.0, 2.0]), -1.0)
    f["op_pow"] = x ** 2.0
    f["op_rpow"] = 2.0 ** x
    f["op_mod"] = x % 1.5
    f["op_floordiv"] = x // 1.5
    f["op_abs"] = abs(x)
    f["op_lt"] = x < 0.5
    f["op_le"] = x <= 0.5
    f["op_gt"] = x > 0.5
    f["op_ge"] = x >= 0.5
    f["op_and"] = b1 & b2
    f["op_or"] = b1 | b2
    f["op_xor"] = b1 ^ b2
    f["op_invert"] = ~b1
    f["int_truediv"] = i / tf.constant([2, 4, 3, 8, 5, 9], tf.int32)
    f["int8_truediv"] = tf.constant([7, -7], tf.int8) / tf.constant([2, 4], tf.int8)
    f["cast_f_i8"] = tf.cast(tf.constant([1.7, -1.7, 127.0, -128.9, 0.0]), tf.int8)
    f["cast_f_u8"] = tf.cast(tf.constant([1.7, 255.0, 200.2, 0.0]), tf.uint8)
    f["cast_i_i8"] = tf.cast(tf.constant([1, 127, 128, 255, -129, 300]), tf.int8)
    f["cast_i_u16"] = tf.cast(tf.constant([1, 65535, 65536, -1]), tf.uint16)
    f["cast_f_bool"] = tf.cast(tf.constant([0.0, -0.5, 2.0]), tf.bool)
    f["cast_bf16"] = tf.cast(tf.cast(tf.constant([1.0, 3.14159, -2.5e3, 1e-3]), tf.bfloat16),
                             tf.float32)
    f["i8_add"] = tf.constant([100, -100, 5], tf.int8) + tf.constant([100, -100, 3], tf.int8)
    f["u8_mul"] = tf.constant([16, 3, 255], tf.uint8) * tf.constant([16, 3, 1], tf.uint8)
    f["i16_sub"] = tf.constant([-32768, 5], tf.int16) - tf.constant([1, 7], tf.int16)
    f["i8_abs"] = tf.abs(tf.constant([-128, -3, 4], tf.int8))
    f["i8_max"] = tf.maximum(tf.constant([-128, -3, 4], tf.int8), tf.constant([0], tf.int8))
    f["u16_less"] = tf.less(tf.constant([1, 65535], tf.uint16), tf.constant([2, 2], tf.uint16))
    f["i8_equal"] = tf.equal(tf.constant([1, 2], tf.int8), tf.constant([1, 3], tf.int8))
    return f, {x: xv, xd: xv.astype(np.float64), p: pv, u: uv}
'''

TF_RUNNER = r'''
import json, sys
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
exec(sys.stdin.read())
f, feed = build(tf, np)
with tf.Session() as s:
    out = s.run(f, feed)
print(json.dumps({k: [str(np.asarray(v).dtype), np.asarray(v).astype(np.float64).tolist()]
                  for k, v in out.items()}))
'''

TF_PY = tfref.TF_PY


def _tf_env():
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["CUDA_VISIBLE_DEVICES"] = ""
    return env


need_tf = tfref.need_tf


def _run_tf(src, runner):
    r = subprocess.run([TF_PY, "-c", runner], input=src, env=_tf_env(), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.strip().splitlines()[-1]


@need_tf
def test_every_function_matches_tensorflow():
    ns = {}
    exec(CASES, ns)
    tf.reset_default_graph()
    pv = np.array([0.1, 0.5, 1.0, 1.5, 2.5, 3.0, 4.2, 7.5, 10.0], np.float32)
    # tf.reverse (ReverseV2) belongs to another part: the reversed feed as a constant
    shim = _Shim(tf, pv)
    f, feed = ns["build"](shim, np)
    with tf.Session() as s:
        got = s.run(f, feed)
    want = json.loads(_run_tf(CASES, TF_RUNNER))
    bad = []
    for k, (dt, v) in want.items():
        g = np.asarray(got[k])
        w = np.asarray(v)
        if str(g.dtype) != dt:
            bad.append(f"{k}: dtype {g.dtype} != {dt}")
            continue
        tol = 1e-2 if k == "cast_bf16" else 2e-6 if g.dtype == np.float32 else 1e-12
        if g.shape != w.shape or not np.allclose(g.astype(np.float64), w, rtol=tol, atol=tol,
                                                 equal_nan=True):
            bad.append(f"{k}: rill {g.tolist()} != tf {w.tolist()}")
    assert not bad, "\n".join(bad)


class _Shim:
    """rill's tf with tf.reverse(p, [0]) answered by a constant (the reversed feed of p)."""

    def __init__(self, tfmod, pv):
        self._tf, self._pv = tfmod, pv

    def __getattr__(self, name):
        return getattr(self._tf, name)

    def reverse(self, t, axis):
        return self._tf.constant(self._pv[::-1].copy())


def _grad_check(build, x0, eps=1e-6, tol=1e-5):
    tf.reset_default_graph()
    x = tf.placeholder(tf.float64, [len(x0)])
    y = tf.reduce_sum(build(x))
    (g,) = tf.gradients(y, [x])
    with tf.Session() as s:
        gv = s.run(g, {x: x0})
        num = np.zeros_like(x0)
        for k in range(len(x0)):
            d = np.zeros_like(x0)
            d[k] = eps
            num[k] = (s.run(y, {x: x0 + d}) - s.run(y, {x: x0 - d})) / (2 * eps)
    np.testing.assert_allclose(gv, num, rtol=tol, atol=tol)


@pytest.mark.parametrize("name,fn,lo,hi", [
    ("pow", lambda x: tf.pow(x, 2.5) + tf.pow(2.0 + 0 * x, x), 0.2, 2.0),
    ("elu", tf.nn.elu, -2.0, 2.0),
    ("selu", tf.nn.selu, -2.0, 2.0),
    ("softplus", tf.nn.softplus, -3.0, 3.0),
    ("softsign", tf.nn.softsign, -3.0, 3.0),
    ("leaky_relu", lambda x: tf.nn.leaky_relu(x, 0.3), -2.0, 2.0),
    ("relu6", tf.nn.relu6, -2.0, 8.0),
    ("erf", tf.erf, -2.0, 2.0),
    ("atan2", lambda x: tf.atan2(x, x * x + 1.0), -2.0, 2.0),
    ("lgamma", tf.lgamma, 0.5, 4.0),
    ("digamma", tf.digamma, 0.5, 4.0),
    ("rsqrt", tf.rsqrt, 0.5, 3.0),
    ("reciprocal", tf.reciprocal, 0.5, 3.0),
    ("where", lambda x: tf.where(x > 0, x * x, 3.0 * x), -2.0, 2.0),
    ("squared_difference", lambda x: tf.squared_difference(x, 0.5 * x * x), -2.0, 2.0),
    ("xlogy", lambda x: tf.xlogy(x, x * x + 1.0), -2.0, 2.0),
    ("floormod", lambda x: tf.floormod(x, 0.7), 0.1, 2.0),
])
def test_gradients_match_finite_differences(name, fn, lo, hi):
    rng = np.random.RandomState(7)
    x0 = rng.uniform(lo, hi, 6)
    if name in ("relu6", "leaky_relu", "floormod"):  # keep off the kinks
        x0 = np.array([-1.3, -0.4, 0.3, 1.1, 5.2, 7.1]) if name != "floormod" else \
            np.array([0.2, 0.5, 0.9, 1.2, 1.6, 1.9])
    _grad_check(fn, x0)


def test_second_derivatives_through_grad_ops():
    tf.reset_default_graph()
    x = tf.placeholder(tf.float64, [4])
    for fn, d2 in [(tf.nn.softplus, lambda v: np.exp(-v) / (1 + np.exp(-v)) ** 2),
                   (tf.rsqrt, lambda v: 0.75 * v ** -2.5),
                   (tf.nn.elu, lambda v: np.where(v < 0, np.exp(v), 0.0))]:
        (g,) = tf.gradients(tf.reduce_sum(fn(x)), [x])
        (h,) = tf.gradients(tf.reduce_sum(g), [x])
        v = np.array([-1.2, 0.4, 1.1, 2.0]) if fn is not tf.rsqrt else np.array([0.5, 1, 2, 3.])
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(h, {x: v}), d2(v), rtol=1e-9)


def test_small_int_dtypes_feed_fetch_cast():
    tf.reset_default_graph()
    for dt, npt in [(tf.int8, np.int8), (tf.uint8, np.uint8), (tf.int16, np.int16),
                    (tf.uint16, np.uint16)]:
        assert tf.as_dtype(npt) is dt and dt.as_numpy_dtype is npt
        assert dt.is_integer and not dt.is_floating and dt.size == np.dtype(npt).itemsize
        assert dt.min == np.iinfo(npt).min and dt.max == np.iinfo(npt).max
        assert tf.as_dtype(dt.name) is dt and dt.base_dtype is dt
        ph = tf.placeholder(dt, [3])
        y = ph + ph
        v = np.array([1, 2, np.iinfo(npt).max], npt)
        with tf.Session() as s:
            out = s.run([y, tf.cast(ph, tf.float32)], {ph: v})
        assert out[0].dtype == npt and out[0].tolist() == (v + v).tolist()
        assert out[1].tolist() == v.astype(np.float32).tolist()
    assert tf.int8.enum == 6 and tf.int16.enum == 5 and tf.uint8.enum == 4
    assert tf.uint16.enum == 17 and tf.bfloat16.enum == 14 and tf.bfloat16.is_floating
    assert tf.bool.is_bool and not tf.bool.is_integer
    with pytest.raises(TypeError):
        tf.bool.min


def test_bfloat16_is_refused_at_the_numpy_border():
    tf.reset_default_graph()
    ph = tf.placeholder(tf.bfloat16, [2])
    y = tf.cast(ph, tf.float32)
    b = tf.cast(tf.constant([1.0, 2.0]), tf.bfloat16)
    with tf.Session() as s:
        with pytest.raises(TypeError, match="bfloat16"):
            s.run(y, {ph: np.array([1.0, 2.0], np.float32)})
        with pytest.raises(TypeError, match="bfloat16"):
            s.run(b)
        assert s.run(tf.cast(b, tf.float32) * 2.0).tolist() == [2.0, 4.0]


def test_errors_are_tensorflows():
    tf.reset_default_graph()
    # rill's build errors are InvalidArgumentError (TF's C++ shape-function text)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in the list of allowed values"):
        tf.sin(tf.constant([1, 2]))
    with pytest.raises(ValueError, match="x and y must both be non-None"):
        tf.where(tf.constant([True]), tf.constant([1.0]))
    a = tf.floordiv(tf.constant([1, 2]), tf.constant([1, 0]))
    p = tf.pow(tf.constant([2, 2]), tf.constant([1, -1]))
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
            s.run(a)
        with pytest.raises(tf.errors.InvalidArgumentError, match="negative integer powers"):
            s.run(p)
    with pytest.raises(TypeError):
        tf.abs(tf.constant(1.0), bogus=1)


CKPT_READER = r'''
import sys, json
import tensorflow.compat.v1 as tf
r = tf.train.load_checkpoint(sys.argv[1])
v = r.get_tensor("v8")
print(json.dumps([str(v.dtype), v.tolist(), str(r.get_variable_to_dtype_map()["v8"])]))
'''


@need_tf
def test_int8_checkpoint_read_by_tensorflow(tmp_path):
    tf.reset_default_graph()
    v = tf.Variable(np.array([-128, -1, 0, 7, 127], np.int8), name="v8")
    saver = tf.train.Saver()
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        path = saver.save(s, str(tmp_path / "model"))
    r = subprocess.run([TF_PY, "-c", CKPT_READER, path], env=_tf_env(), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    dt, vals, tfdt = json.loads(r.stdout.strip().splitlines()[-1])
    assert dt == "int8" and vals == [-128, -1, 0, 7, 127] and "int8" in tfdt
    tf.reset_default_graph()
    w = tf.Variable(np.zeros(5, np.int8), name="v8")
    with tf.Session() as s:
        tf.train.Saver().restore(s, path)
        assert s.run(w).tolist() == [-128, -1, 0, 7, 127]


def test_math_namespace_and_names():
    tf.reset_default_graph()
    x = tf.constant([1.0, -2.0])
    assert tf.math.exp is tf.exp and tf.math.add is tf.add and tf.math.abs is tf.abs
    assert tf.math.floormod is tf.floormod and tf.math.logical_xor is tf.logical_xor
    assert tf.floordiv(x, x).op.name == "floordiv" and tf.pow(x, x).op.type == "Pow"
    # names are unique regardless of case, as in TF: "Pow" above makes this "pow_1"
    assert (x ** 2).op.name == "pow_1" and (x % 2.0).op.name == "mod"
    assert tf.where(x > 0, x, x).op.type == "Select"
    assert tf.where_v2(x > 0, x, 0.0).op.type == "SelectV2"
    assert tf.logical_xor(x > 0, x < 0).op.name == "LogicalXor"
    assert (x == x) is True and x.__eq__(tf.constant(1.0)) is False  # identity, as TF 1.x
