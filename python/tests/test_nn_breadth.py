"""tf.nn's breadth (compat/v1/_nn_breadth.py and the C ops of ops_pool_argmax.c,
ops_dilation.c): values and gradients equal TensorFlow 2.15's compat.v1 (run once in a
subprocess with the venv's TF, the same expressions), plus TF's errors."""
import json
import os
import subprocess

import numpy as np
import pytest
import tfref

import rill.compat.v1 as tf

TF_PY = tfref.TF_PY


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


rng = np.random.RandomState(7)
ARRAYS = {
    "x": rng.randn(2, 5, 6, 3),       # NHWC image
    "x1": rng.randn(2, 7, 3),         # NWC sequence
    "f2": rng.randn(3, 3, 3, 4),      # conv2d filter
    "f1": rng.randn(3, 3, 4),         # conv1d filter
    "f1t": rng.randn(3, 3, 4),        # conv1d_transpose filter [w, out 3, in 4]
    "y1": rng.randn(2, 4, 4),         # conv1d_transpose input (stride 2 of 7)
    "dy": rng.randn(2, 5, 6, 4),      # Conv2D SAME output gradient
    "df": rng.randn(3, 3, 3, 2),      # depthwise filter
    "ddy": rng.randn(2, 5, 6, 6),     # depthwise SAME output gradient
    "m2": rng.randn(4, 5), "w2": rng.randn(5, 3), "b2": rng.randn(3),
    "v1": rng.rand(6), "s1": rng.rand(6),
    "fw": rng.rand(1, 5, 1, 3) + 0.1,
    "tg": np.round(rng.rand(2, 5, 6, 3) * 4),
    "mu": rng.randn(3) * 0.1, "var": rng.rand(3) + 0.5, "be": rng.randn(3), "ga": rng.rand(3) + .5,
}
ARRAYS = {k: np.asarray(v, np.float32) for k, v in ARRAYS.items()}

# name -> (expression over tf and the arrays as constants, the array the gradient of
# sum(r * r) is taken in, or None)
CASES = {
    "avg_pool1d": ("tf.nn.avg_pool1d(x1, 2, 2, 'SAME')", "x1"),
    "max_pool1d": ("tf.nn.max_pool1d(x1, 3, 1, 'VALID')", "x1"),
    "avg_pool2d": ("tf.nn.avg_pool2d(x, 2, [1, 2], 'SAME')", "x"),
    "max_pool2d": ("tf.nn.max_pool2d(x, [2, 2], 2, 'VALID')", "x"),
    "avg_pool_v2_1d": ("tf.nn.avg_pool_v2(x1, [3], [2], 'VALID')", "x1"),
    "avg_pool_v2_2d": ("tf.nn.avg_pool_v2(x, 3, 1, 'SAME')", "x"),
    "max_pool_v2_1d": ("tf.nn.max_pool_v2(x1, 2, 1, 'SAME')", "x1"),
    "max_pool_v2_2d": ("tf.nn.max_pool_v2(x, [1, 2, 3, 1], [1, 2, 2, 1], 'SAME')", "x"),
    "pool_max": ("tf.nn.pool(x, [2, 2], 'MAX', 'SAME', strides=[2, 1])", "x"),
    "pool_avg_1d": ("tf.nn.pool(x1, [3], 'AVG', 'VALID')", "x1"),
    "conv1d": ("tf.nn.conv1d(x1, f1, 1, 'SAME')", "x1"),
    "conv1d_stride": ("tf.nn.conv1d(x1, f1, 2, 'VALID')", "f1"),
    "conv1d_dilated": ("tf.nn.conv1d(x1, f1, 1, 'SAME', dilations=2)", "x1"),
    "conv1d_transpose": ("tf.nn.conv1d_transpose(y1, f1t, [2, 7, 3], 2, 'SAME')", "y1"),
    "conv1d_transpose_f": ("tf.nn.conv1d_transpose(y1, f1t, [2, 7, 3], 2, 'SAME')", "f1t"),
    "convolution_1d": ("tf.nn.convolution(x1, f1, 'VALID', dilation_rate=[2])", "x1"),
    "convolution_2d": ("tf.nn.convolution(x, f2, 'SAME', strides=[2, 2])", "x"),
    "convolution_2d_rate": ("tf.nn.convolution(x, f2, 'SAME', dilation_rate=[2, 1])", "f2"),
    "conv_transpose_2d": ("tf.nn.conv_transpose(dy, f2, [2, 5, 6, 3], 1, 'SAME')", "dy"),
    "conv_transpose_1d": ("tf.nn.conv_transpose(y1, f1t, [2, 7, 3], 2)", "y1"),
    "bp_filter": ("tf.nn.conv2d_backprop_filter(x, [3, 3, 3, 4], dy, [1, 1, 1, 1], 'SAME')",
                  "x"),
    "bp_input": ("tf.nn.conv2d_backprop_input([2, 5, 6, 3], f2, dy, [1, 1, 1, 1], 'SAME')",
                 "dy"),
    "dw_bp_filter": ("tf.nn.depthwise_conv2d_backprop_filter(x, [3, 3, 3, 2], ddy, "
                     "[1, 1, 1, 1], 'SAME')", "x"),
    "dw_bp_input": ("tf.nn.depthwise_conv2d_backprop_input([2, 5, 6, 3], df, ddy, "
                    "[1, 1, 1, 1], 'SAME')", "ddy"),
    "dwn_bp_filter": ("tf.nn.depthwise_conv2d_native_backprop_filter(x, [3, 3, 3, 2], ddy, "
                      "[1, 1, 1, 1], 'SAME')", "ddy"),
    "dwn_bp_input": ("tf.nn.depthwise_conv2d_native_backprop_input([2, 5, 6, 3], df, ddy, "
                     "[1, 1, 1, 1], 'SAME')", "df"),
    "atrous": ("tf.nn.atrous_conv2d(x, f2, 2, 'SAME')", "x"),
    "atrous_valid": ("tf.nn.atrous_conv2d(x, f2, 2, 'VALID')", "f2"),
    "atrous_transpose": ("tf.nn.atrous_conv2d_transpose(dy, f2, [2, 5, 6, 3], 2, 'SAME')",
                         "dy"),
    "crelu": ("tf.nn.crelu(x)", "x"),
    "crelu_axis": ("tf.nn.crelu(x, axis=1)", "x"),
    "relu_layer": ("tf.nn.relu_layer(m2, w2, b2)", "w2"),
    "silu": ("tf.nn.silu(x)", "x"),
    "swish": ("tf.nn.swish(x)", "x"),
    "silu_beta": ("tf.nn.silu(x, beta=0.5)", "x"),
    "zero_fraction": ("tf.nn.zero_fraction(tf.nn.relu(x))", None),
    "average_loss": ("tf.nn.compute_average_loss(v1)", "v1"),
    "average_loss_w": ("tf.nn.compute_average_loss(v1, sample_weight=s1, global_batch_size=8)",
                       "v1"),
    "scale_reg": ("tf.nn.scale_regularization_loss([v1, s1])", "v1"),
    "suff_count": ("tf.nn.sufficient_statistics(x, [0, 1, 2])[0]", None),
    "suff_mean": ("tf.nn.sufficient_statistics(x, [0, 1, 2])[1]", "x"),
    "suff_var": ("tf.nn.sufficient_statistics(x, [0, 2], shift=mu[0], keepdims=True)[2]", "x"),
    "normalize": ("tf.nn.normalize_moments(*tf.nn.sufficient_statistics(x, [0, 1, 2], "
                  "shift=mu))[1]", "x"),
    "normalize_mean": ("tf.nn.normalize_moments(*tf.nn.sufficient_statistics(x, [1]))[0]", "x"),
    "weighted_mean": ("tf.nn.weighted_moments(x, [0, 1, 2], fw)[0]", "x"),
    "weighted_var": ("tf.nn.weighted_moments(x, [1, 2], fw, keep_dims=True)[1]", "x"),
    "log_poisson": ("tf.nn.log_poisson_loss(tg, x)", "x"),
    "log_poisson_full": ("tf.nn.log_poisson_loss(tg, x, compute_full_loss=True)", "x"),
    "bn_global": ("tf.nn.batch_norm_with_global_normalization(x, mu, var, be, ga, 1e-3, True)",
                  "x"),
    "bn_global_noscale": ("tf.nn.batch_norm_with_global_normalization(x, mu, var, be, ga, 1e-3,"
                          " False)", "x"),
    "argmax_out": ("tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], 'SAME')[0]", "x"),
    "argmax_out_valid": ("tf.nn.max_pool_with_argmax(x, [1, 3, 2, 1], [1, 1, 2, 1], "
                         "'VALID').output", "x"),
    "argmax_idx": ("tf.cast(tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "
                   "'SAME')[1], tf.float32)", None),
    "argmax_idx_batch": ("tf.cast(tf.nn.max_pool_with_argmax(x, [1, 3, 3, 1], [1, 1, 2, 1], "
                         "'VALID', include_batch_in_index=True).argmax, tf.float32)", None),
    "argmax_idx32": ("tf.cast(tf.nn.max_pool_with_argmax(x, [1, 2, 3, 1], [1, 1, 1, 1], "
                     "'SAME', Targmax=tf.int32)[1], tf.float32)", None),
    "dilation": ("tf.nn.dilation2d(x, df[:, :, :, 0], [1, 1, 1, 1], [1, 1, 1, 1], 'SAME')", "x"),
    "dilation_f": ("tf.nn.dilation2d(x, df[:, :, :, 0], [1, 1, 1, 1], [1, 1, 1, 1], 'SAME')",
                   "df"),
    "dilation_rates": ("tf.nn.dilation2d(x, df[:2, :, :, 1], [1, 2, 1, 1], [1, 1, 2, 1], "
                       "'VALID')", "x"),
    "dilation_rates_f": ("tf.nn.dilation2d(x, df[:2, :, :, 1], [1, 1, 2, 1], [1, 2, 1, 1], "
                         "'SAME')", "df"),
    "erosion": ("tf.nn.erosion2d(x, df[:, :2, :, 0], [1, 1, 1, 1], [1, 1, 1, 1], 'SAME')", "x"),
    "erosion_f": ("tf.nn.erosion2d(x, df[:, :2, :, 0], [1, 2, 2, 1], [1, 1, 1, 1], 'VALID')",
                  "df"),
}

SCRIPT = """
import json, sys
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
arrays, cases = json.loads(sys.stdin.read())
out = {}
for name, (expr, wrt) in cases.items():
    print(name, file=sys.stderr, flush=True)
    tf.reset_default_graph()
    env = {k: tf.constant(np.array(a, np.float32)) for k, a in arrays.items()}
    env["tf"] = tf
    r = eval(expr, env)
    fetch = [r]
    if wrt:
        fetch.append(tf.gradients(tf.reduce_sum(r * r), env[wrt])[0])
    with tf.Session() as s:
        v = s.run(fetch)
    out[name] = [np.asarray(a).tolist() for a in v]
print(json.dumps(out))
"""


def run_tf(script, payload):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    if not os.path.exists(TF_PY):
        tfref.skip("no TensorFlow to compare with")
    r = subprocess.run([TF_PY, "-c", script], input=json.dumps(payload), env=env,
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"TensorFlow reference failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def tf_ref():
    return run_tf(SCRIPT, [{k: a.tolist() for k, a in ARRAYS.items()}, CASES])


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_as_tf(tf_ref, name):
    expr, wrt = CASES[name]
    env = {k: tf.constant(a) for k, a in ARRAYS.items()}
    env["tf"] = tf
    r = eval(expr, env)
    fetch = [r]
    if wrt:
        fetch.append(tf.gradients(tf.reduce_sum(tf.square(r)), [env[wrt]])[0])
    with tf.Session() as s:
        got = s.run(fetch)
    want = tf_ref[name]
    assert list(np.shape(got[0])) == list(np.shape(want[0]))
    if r.shape.ndims is not None:
        assert r.shape.is_compatible_with(np.shape(want[0]))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)
    if wrt:
        np.testing.assert_allclose(got[1], want[1], rtol=1e-3, atol=1e-3)


def test_backprop_v2(tf_ref):
    """tf.conv2d_backprop_*_v2 take the filter (input) itself for its shape: the values of the
    v1 calls with that shape (TF 2.15 crashes running Conv2DBackpropFilterV2 in a graph on the
    CPU, so the reference is the v1 op's)."""
    x, f, dy = (tf.constant(ARRAYS[k]) for k in ("x", "f2", "dy"))
    a = tf.conv2d_backprop_filter_v2(x, f, dy, [1, 1, 1, 1], "SAME")
    b = tf.conv2d_backprop_input_v2(x, f, dy, [1, 1, 1, 1], "SAME")
    assert a.shape.as_list() == [3, 3, 3, 4] and b.shape.as_list() == [2, 5, 6, 3]
    with tf.Session() as s:
        va, vb = s.run([a, b])
    np.testing.assert_allclose(va, tf_ref["bp_filter"][0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(vb, tf_ref["bp_input"][0], rtol=1e-4, atol=1e-4)


def test_all_candidate_sampler():
    """TF 2.15 gives [0 .. 5], ones [3, 2] and ones [6] (AllCandidateSampler)."""
    tc = tf.constant(np.array([[1, 2], [3, 4], [0, 5]], np.int64))
    for fn in (tf.nn.all_candidate_sampler, tf.random.all_candidate_sampler):
        r = fn(tc, 2, 6, True, seed=3)
        assert r.sampled_candidates.dtype == tf.int64
        assert r.true_expected_count.shape.as_list() == [3, 2]
        with tf.Session() as s:
            a, b, c = s.run(list(r))
        np.testing.assert_array_equal(a, np.arange(6))
        np.testing.assert_array_equal(b, np.ones((3, 2), np.float32))
        np.testing.assert_array_equal(c, np.ones(6, np.float32))
    with pytest.raises(TypeError, match="int64"):
        tf.nn.all_candidate_sampler(tf.constant([[1]]), 1, 2, True)


def test_collapse_repeated():
    """TF 2.15's values for these labels and lengths (run once, written here)."""
    labels = np.array([[1, 1, 2, 2, 3, 0], [4, 4, 4, 5, 5, 5], [7, 8, 8, 9, 9, 9]], np.int32)
    a, b = tf.nn.collapse_repeated(tf.constant(labels), tf.constant([5, 6, 4]))
    with tf.Session() as s:
        va, vb = s.run([a, b])
    np.testing.assert_array_equal(va, [[1, 2, 3], [4, 5, 0], [7, 8, 9]])
    np.testing.assert_array_equal(vb, [3, 2, 3])
    a, b = tf.nn.collapse_repeated(tf.constant([[2, 2, 2, 2]]), tf.constant([2]))
    with tf.Session() as s:
        va, vb = s.run([a, b])
    np.testing.assert_array_equal(va, [[2]])
    np.testing.assert_array_equal(vb, [1])


def test_errors():
    x = tf.constant(ARRAYS["x"])
    with pytest.raises(ValueError, match="rate 0 cannot be less than one"):
        tf.nn.atrous_conv2d(x, tf.constant(ARRAYS["f2"]), 0, "SAME")
    with pytest.raises(ValueError, match="Invalid pooling_type"):
        tf.nn.pool(x, [2, 2], "MIN", "SAME")
    with pytest.raises(ValueError, match="must have the same shape"):
        tf.nn.log_poisson_loss(tf.zeros([3]), tf.zeros([4]))
    with pytest.raises(ValueError, match="dilation_rate"):
        tf.nn.pool(x, [2, 2], "MAX", "SAME", dilation_rate=[2, 2])
    with pytest.raises(ValueError, match="EXPLICIT"):
        tf.nn.conv2d_backprop_input([2, 5, 6, 3], tf.constant(ARRAYS["f2"]),
                                    tf.constant(ARRAYS["dy"]), [1, 1, 1, 1], "SAME",
                                    explicit_paddings=[0] * 8)
    with pytest.raises(TypeError):
        tf.nn.crelu(x, bogus=1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="data format"):
        tf.nn.avg_pool2d(x, 2, 2, "SAME", data_format="NCHW")


# --- tf.layers: Conv1D, pooling 1-D, SeparableConv1D/2D (compat/v1/_layers_breadth.py) ---

LARRAYS = {
    "x1": ARRAYS["x1"], "x": ARRAYS["x"],
    "k1": rng.randn(3, 3, 4), "b4": rng.randn(4), "k1s": rng.randn(2, 3, 4),
    "dw2": rng.randn(3, 3, 3, 2), "pw2": rng.randn(1, 1, 6, 5), "b5": rng.randn(5),
    "dw1": rng.randn(3, 3, 2), "pw1": rng.randn(1, 6, 5),
}
LARRAYS = {k: np.asarray(v, np.float32) for k, v in LARRAYS.items()}

# name -> (expression over tf, K (an initializer giving an array) and the arrays; the
# gradient of sum(r * r) is taken in the input, x1 or x)
LCASES = {
    "conv1d": ("tf.layers.conv1d(x1, 4, 3, padding='same', kernel_initializer=K('k1'), "
               "bias_initializer=K('b4'))", "x1"),
    "conv1d_class": ("tf.layers.Conv1D(4, 2, strides=2, kernel_initializer=K('k1s'), "
                     "bias_initializer=K('b4'), activation=tf.nn.relu)(x1)", "x1"),
    "conv1d_causal": ("tf.layers.conv1d(x1, 4, 3, padding='causal', dilation_rate=2, "
                      "kernel_initializer=K('k1'), use_bias=False, name='causal')", "x1"),
    "max_pooling1d": ("tf.layers.max_pooling1d(x1, 2, 2)", "x1"),
    "average_pooling1d": ("tf.layers.average_pooling1d(x1, 3, 1, padding='same')", "x1"),
    "MaxPooling1D": ("tf.layers.MaxPooling1D(3, 2, padding='same')(x1)", "x1"),
    "AveragePooling1D": ("tf.layers.AveragePooling1D(2, 1)(x1)", "x1"),
    "separable_conv2d": ("tf.layers.separable_conv2d(x, 5, 3, padding='same', "
                         "depth_multiplier=2, depthwise_initializer=K('dw2'), "
                         "pointwise_initializer=K('pw2'), bias_initializer=K('b5'))", "x"),
    "SeparableConv2D": ("tf.layers.SeparableConv2D(5, (3, 3), strides=(2, 2), "
                        "depth_multiplier=2, depthwise_initializer=K('dw2'), "
                        "pointwise_initializer=K('pw2'), bias_initializer=K('b5'))(x)", "x"),
    "separable_conv1d": ("tf.layers.separable_conv1d(x1, 5, 3, dilation_rate=2, "
                         "padding='same', depth_multiplier=2, depthwise_initializer=K('dw1'), "
                         "pointwise_initializer=K('pw1'), bias_initializer=K('b5'))", "x1"),
    "SeparableConv1D": ("tf.layers.SeparableConv1D(5, 3, strides=2, depth_multiplier=2, "
                        "depthwise_initializer=K('dw1'), pointwise_initializer=K('pw1'), "
                        "use_bias=False, name='sep')(x1)", "x1"),
}

LSCRIPT = """
import json, sys
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
arrays, cases = json.loads(sys.stdin.read())
out = {}
for name, (expr, wrt) in cases.items():
    print(name, file=sys.stderr, flush=True)
    tf.reset_default_graph()
    env = {k: tf.constant(np.array(a, np.float32)) for k, a in arrays.items()}
    env["tf"] = tf
    env["K"] = lambda n: (lambda shape, dtype=None, partition_info=None:
                          tf.constant(np.array(arrays[n], np.float32)))
    r = eval(expr, env)
    g = tf.gradients(tf.reduce_sum(r * r), env[wrt])[0]
    names = sorted([v.name, v.shape.as_list()] for v in tf.global_variables())
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        v = s.run([r, g])
    out[name] = [np.asarray(a).tolist() for a in v] + [names]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def tf_layers_ref():
    return run_tf(LSCRIPT, [{k: a.tolist() for k, a in LARRAYS.items()}, LCASES])


@pytest.mark.parametrize("name", sorted(LCASES))
def test_layers_same_as_tf(tf_layers_ref, name):
    expr, wrt = LCASES[name]
    env = {k: tf.constant(a) for k, a in LARRAYS.items()}
    env["tf"] = tf
    env["K"] = lambda n: (lambda shape, dtype=None, partition_info=None:
                          tf.constant(LARRAYS[n]))
    r = eval(expr, env)
    g = tf.gradients(tf.reduce_sum(tf.square(r)), [env[wrt]])[0]
    names = sorted([v.name, v.shape.as_list()] for v in tf.global_variables())
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        got = s.run([r, g])
    want = tf_layers_ref[name]
    assert names == want[2]
    assert r.shape.as_list() == list(np.shape(want[0]))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-3, atol=1e-3)
