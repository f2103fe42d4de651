"""tf.nn's losses and normalisations (compat/v1/_nn_ops.py over src/graph/ops_loss.c and
ops_norm.c): values and gradients equal TensorFlow's (run once in a subprocess with the venv's
real TF, the same expressions), plus numpy checks and TF's errors."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tfref

import rill.compat.v1 as tf

@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


rng = np.random.RandomState(3)
X = rng.randn(2, 3, 4, 5).astype(np.float32)
L = rng.rand(2, 3, 4, 5).astype(np.float32)
S = (rng.rand(5) + 0.5).astype(np.float32)
O = rng.randn(5).astype(np.float32)
M = (rng.randn(5) * 0.1).astype(np.float32)
V = (rng.rand(5) + 0.5).astype(np.float32)
F = rng.randn(3, 3, 2, 5).astype(np.float32)
Y = rng.randn(2, 3, 4, 5).astype(np.float32)
DF = rng.randn(3, 2, 5, 2).astype(np.float32)
PF = rng.randn(1, 1, 10, 3).astype(np.float32)

# name -> expression over tf, x (X as a constant), l (L), s, o, m, v, f, y; each result and the
# gradient of its sum in x compare with TF's.
CASES = {
    "l2_loss": "tf.nn.l2_loss(x)",
    "log_softmax": "tf.nn.log_softmax(x)",
    "log_softmax_axis": "tf.nn.log_softmax(x, axis=3)",
    "sigmoid_ce": "tf.nn.sigmoid_cross_entropy_with_logits(labels=l, logits=x)",
    "weighted_ce": "tf.nn.weighted_cross_entropy_with_logits(labels=l, logits=x, pos_weight=2.5)",
    "lrn": "tf.nn.lrn(x, depth_radius=2, bias=1.5, alpha=0.3, beta=0.75)",
    "lrn_default": "tf.nn.local_response_normalization(x)",
    "moments_mean": "tf.nn.moments(x, [0, 1, 2])[0]",
    "moments_var": "tf.nn.moments(x, [0, 1, 2])[1]",
    "moments_keep": "tf.nn.moments(x, [1, 2], keep_dims=True)[1]",
    "batch_normalization": "tf.nn.batch_normalization(x, m, v, o, s, 1e-3)",
    "batch_normalization_none": "tf.nn.batch_normalization(x, m, v, None, None, 1e-3)",
    "fused_train_y": "tf.nn.fused_batch_norm(x, s, o)[0]",
    "fused_train_mean": "tf.nn.fused_batch_norm(x, s, o)[1]",
    "fused_train_var": "tf.nn.fused_batch_norm(x, s, o)[2]",
    "fused_avg_var": "tf.nn.fused_batch_norm(x, s, o, m, v, exponential_avg_factor=0.25)[2]",
    "fused_infer_y": "tf.nn.fused_batch_norm(x, s, o, m, v, epsilon=1e-4, is_training=False)[0]",
    "l2_normalize": "tf.nn.l2_normalize(x, axis=3)",
    "l2_normalize_all": "tf.nn.l2_normalize(x)",
    "conv2d_transpose": "tf.nn.conv2d_transpose(y, f, [2, 6, 8, 2], [1, 2, 2, 1], 'SAME')",
    "conv2d_transpose_valid": "tf.nn.conv2d_transpose(y, f, [2, 5, 6, 2], [1, 1, 1, 1], 'VALID')",
    "depthwise_native": "tf.nn.depthwise_conv2d_native(x, df, [1, 1, 1, 1], 'SAME')",
    "depthwise_stride": "tf.nn.depthwise_conv2d(x, df, [1, 2, 2, 1], 'VALID')",
    "depthwise_rate": "tf.nn.depthwise_conv2d(x, df, [1, 1, 1, 1], 'SAME', rate=[2, 2])",
    "separable": "tf.nn.separable_conv2d(x, df, pf, [1, 1, 1, 1], 'SAME')",
    "avg_pool": "tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 1, 2, 1], 'SAME')",
}

SCRIPT = """
import json, sys
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
arrays, cases = json.loads(sys.argv[1])
out = {}
for name, expr in cases.items():
    tf.reset_default_graph()
    env = {k: tf.constant(np.array(a, np.float32)) for k, a in arrays.items()}
    env["tf"] = tf
    r = eval(expr, env)
    wrt = env["y"] if "conv2d_transpose" in expr else env["x"]
    gr = tf.gradients(tf.reduce_sum(r * r), wrt)[0]
    with tf.Session() as s:
        v, gv = s.run([r, gr])
    out[name] = [np.asarray(v).tolist(), np.asarray(gv).tolist()]
print(json.dumps(out))
"""

ARRAYS = {"x": X, "l": L, "s": S, "o": O, "m": M, "v": V, "f": F, "y": Y, "df": DF, "pf": PF}


@pytest.fixture(scope="module")
def tf_ref():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    py = tfref.TF_PY
    if not os.path.exists(py):
        py = sys.executable
    arg = json.dumps([{k: a.tolist() for k, a in ARRAYS.items()}, CASES])
    try:
        r = subprocess.run([py, "-c", SCRIPT, arg], env=env, capture_output=True, text=True,
                           timeout=180)
    except (OSError, subprocess.TimeoutExpired) as e:
        tfref.skip(f"no TensorFlow to compare with: {e}")
    if r.returncode != 0:
        tfref.skip(f"no TensorFlow to compare with: {r.stderr[-400:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_as_tf(tf_ref, name):
    tf.reset_default_graph()
    env = {k: tf.constant(a) for k, a in ARRAYS.items()}
    env["tf"] = tf
    r = eval(CASES[name], env)
    wrt = env["y"] if "conv2d_transpose" in CASES[name] else env["x"]
    gr = tf.gradients(tf.reduce_sum(tf.square(r)), [wrt])[0]
    with tf.Session() as s:
        v, gv = s.run([r, gr])
    want, want_g = tf_ref[name]
    assert list(np.shape(v)) == list(np.shape(want))
    assert r.shape.as_list() == list(np.shape(want))
    np.testing.assert_allclose(v, want, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(gv, want_g, rtol=1e-4, atol=1e-4)


def test_op_types_and_names():
    x = tf.constant(X)
    assert tf.nn.l2_loss(x).op.type == "L2Loss"
    assert tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant(L), logits=x).op.name == \
        "logistic_loss"
    assert tf.nn.lrn(x).op.type == "LRN"
    m, v = tf.nn.moments(x, [0, 1, 2])
    assert v.op.name == "moments/variance" and m.shape.as_list() == [5]
    y, m, v = tf.nn.fused_batch_norm(x, tf.constant(S), tf.constant(O))
    assert y.op.type == "FusedBatchNormV3" and m.shape.as_list() == [5]
    assert tf.nn.conv2d_transpose(tf.constant(Y), tf.constant(F), [2, 6, 8, 2], [1, 2, 2, 1]
                                  ).op.type == "Conv2DBackpropInput"


def test_errors():
    x = tf.constant(X)
    with pytest.raises(ValueError, match="Only call `sigmoid_cross_entropy_with_logits` with "
                                         "named arguments"):
        tf.nn.sigmoid_cross_entropy_with_logits(x, x)
    with pytest.raises(ValueError, match="logits and labels must have the same shape"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant(S), logits=x)
    with pytest.raises(ValueError, match="must be a 1D tensor when is_training is False"):
        tf.nn.fused_batch_norm(x, tf.constant(S), tf.constant(O), is_training=False)
    with pytest.raises(TypeError):
        tf.nn.l2_loss(x, bogus=1)
    with pytest.raises(Exception, match="rank"):
        tf.nn.lrn(tf.constant(S))


def test_half_and_double():
    for dt in (np.float16, np.float64):
        x = tf.constant(X.astype(dt))
        (v,) = tf.Session().run([tf.nn.l2_loss(x)])
        np.testing.assert_allclose(v, np.sum(X.astype(np.float64) ** 2) / 2,
                                   rtol=1e-2 if dt == np.float16 else 1e-6)
