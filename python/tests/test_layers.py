"""tf.layers against TensorFlow 2.15's tf.compat.v1.layers (variable names, shapes,
collections; a reference in a subprocess, tests/tfref.py) and numpy (forward values
from the same weights); training an MLP and a CNN lowers the loss."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tfref

import rill.compat.v1 as tf

TF215 = tfref.TF_PY

BUILD = """
x = tf.placeholder(tf.float32, [None, 8, 8, 3], name="x")
h = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu)
h = tf.layers.max_pooling2d(h, 2, 2)
h = tf.layers.batch_normalization(h, training=True)
h = tf.layers.average_pooling2d(h, 2, 1, padding="SAME")
h = tf.layers.flatten(h)
h = tf.layers.dropout(h, 0.5, training=True)
y = tf.layers.dense(h, 10, kernel_regularizer=lambda w: tf.reduce_sum(tf.square(w)))
y2 = tf.layers.dense(y, 3, use_bias=False)
with tf.variable_scope("foo"):
    y3 = tf.layers.dense(y2, 3)
    y4 = tf.layers.Dense(3, name="named")(y3)
t = tf.layers.conv2d_transpose(tf.placeholder(tf.float32, [None, 4, 4, 2]), 3, 3, strides=2,
                               padding="same")
t2 = tf.layers.conv2d_transpose(tf.placeholder(tf.float32, [2, 4, 4, 2]), 3, 3, strides=2)
out = dict(
    global_vars=[(v.name, v.shape.as_list()) for v in tf.global_variables()],
    trainable=[v.name for v in tf.trainable_variables()],
    update_ops=[o.name for o in tf.get_collection(tf.GraphKeys.UPDATE_OPS)],
    reg=len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)),
    outs=[y.name, y2.name, y3.name],
    shapes=[t.shape.as_list(), t2.shape.as_list()])
"""


def _reference():
    if not os.path.exists(TF215):
        tfref.skip("no TF 2.15 reference at " + TF215)
    code = ("import json, tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n" + BUILD +
            "print('JSON' + json.dumps(out))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    r = subprocess.run([TF215, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    line = [l for l in r.stdout.splitlines() if l.startswith("JSON")]
    assert line, r.stderr[-2000:]
    return json.loads(line[0][4:])


def _ours():
    g = tf.Graph()
    ns = {"tf": tf}
    with g.as_default():
        exec(BUILD, ns)
    return json.loads(json.dumps(ns["out"]))


def test_names_shapes_collections_match_tf():
    ref = _reference()
    ours = _ours()
    assert ours["global_vars"] == ref["global_vars"]
    assert ours["trainable"] == ref["trainable"]
    assert ours["reg"] == ref["reg"]
    assert ours["shapes"] == ref["shapes"]
    # TF's update ops under a Python-bool training are the AssignSubs named so
    assert ours["update_ops"] == ["batch_normalization/AssignMovingAvg",
                                  "batch_normalization/AssignMovingAvg_1"]
    assert [o.split(":")[0].rsplit("/", 1)[0] for o in ours["outs"]] == \
        [o.split(":")[0].rsplit("/", 1)[0] for o in ref["outs"]]


def test_layer_object_and_reuse():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4])
        layer = tf.layers.Dense(3, activation=tf.nn.relu)
        a, b = layer(x), layer(x)
        assert a.name == "dense/Relu:0" and b.name == "dense/Relu_1:0"
        assert [v.name for v in layer.variables] == ["dense/kernel:0", "dense/bias:0"]
        assert layer.kernel.name == "dense/kernel:0" and layer.bias.name == "dense/bias:0"
        assert layer.trainable_variables == layer.variables
        tf.layers.dense(x, 3, name="d")
        with pytest.raises(ValueError, match="already exists"):
            tf.layers.dense(x, 3, name="d")
        e = tf.layers.dense(x, 3, name="d", reuse=True)
        assert e.name.startswith("d_2/")
        assert len(tf.global_variables()) == 4
        with pytest.raises(ValueError, match="channels_first"):
            tf.layers.conv2d(tf.placeholder(tf.float32, [1, 3, 4, 4]), 2, 3,
                             data_format="channels_first")
        with pytest.raises(ValueError, match="padding"):
            tf.layers.conv2d(tf.placeholder(tf.float32, [1, 4, 4, 3]), 2, 3, padding="full")


def _run(fetch, feed, init=True):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetch, feed)


def test_forward_values_match_numpy():
    rng = np.random.RandomState(0)
    xv = rng.randn(2, 5, 5, 3).astype(np.float32)
    k = rng.randn(3, 3, 3, 4).astype(np.float32)
    kb = rng.randn(4).astype(np.float32)
    w = rng.randn(4 * 4 * 4, 6).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 5, 5, 3])
        h = tf.layers.conv2d(x, 4, 2, padding="valid", activation=tf.nn.relu,
                             kernel_initializer=tf.constant_initializer(0.0))
        f = tf.layers.flatten(h)
        y = tf.layers.dense(f, 6, activation=tf.nn.sigmoid)
        g = tf.get_default_graph()
        # the weights: given through initializers that are constants
        conv_k = g.get_tensor_by_name("conv2d/kernel:0")
        assert conv_k.shape.as_list() == [2, 2, 3, 4]
    # same graph with the numpy weights as initial values
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 5, 5, 3])
        h = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu,
                             kernel_initializer=lambda shape, dtype=None, partition_info=None:
                             tf.constant(k), bias_initializer=lambda *a, **kw: tf.constant(kb))
        p = tf.layers.max_pooling2d(h, 2, 1)
        f = tf.layers.flatten(p)
        y = tf.layers.dense(f, 6, activation=tf.nn.tanh,
                            kernel_initializer=lambda *a, **kw: tf.constant(w))
        got = _run(y, {x: xv})
    pad = np.pad(xv, ((0, 0), (1, 1), (1, 1), (0, 0)))
    conv = np.zeros((2, 5, 5, 4), np.float64)
    for i in range(5):
        for j in range(5):
            conv[:, i, j] = np.einsum("nhwc,hwco->no", pad[:, i:i + 3, j:j + 3], k)
    conv = np.maximum(conv + kb, 0)
    pool = np.max([conv[:, a:a + 4, b:b + 4] for a in (0, 1) for b in (0, 1)], axis=0)
    ref = np.tanh(pool.reshape(2, -1) @ w)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_conv2d_transpose_matches_numpy():
    rng = np.random.RandomState(1)
    xv = rng.randn(1, 3, 3, 2).astype(np.float32)
    k = rng.randn(3, 3, 4, 2).astype(np.float32)  # [kh, kw, out, in]
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3, 3, 2])
        y = tf.layers.conv2d_transpose(x, 4, 3, strides=2, padding="valid", use_bias=False,
                                       kernel_initializer=lambda *a, **kw: tf.constant(k))
        assert y.shape.as_list() == [None, 7, 7, 4]
        got = _run(y, {x: xv})
    ref = np.zeros((1, 7, 7, 4))
    for i in range(3):
        for j in range(3):
            ref[0, 2 * i:2 * i + 3, 2 * j:2 * j + 3] += np.einsum("c,hwoc->hwo", xv[0, i, j], k)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_batch_normalization_training_and_inference():
    rng = np.random.RandomState(2)
    xv = (rng.randn(16, 3) * 2 + 1).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        training = tf.placeholder(tf.bool, [])
        y = tf.layers.batch_normalization(x, training=training, momentum=0.9)
        ups = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        assert len(ups) == 2
        names = [v.name for v in tf.global_variables()]
        assert names == ["batch_normalization/gamma:0", "batch_normalization/beta:0",
                         "batch_normalization/moving_mean:0",
                         "batch_normalization/moving_variance:0"]
        mm = tf.global_variables()[2]
        mv = tf.global_variables()[3]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            yt, _ = s.run([y, ups], {x: xv, training: True})
            np.testing.assert_allclose(
                yt, (xv - xv.mean(0)) / np.sqrt(xv.var(0) + 1e-3), rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(s.run(mm), 0.1 * xv.mean(0), rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(s.run(mv), 0.9 + 0.1 * xv.var(0), rtol=1e-4)
            m, v = s.run([mm, mv])
            yi, _ = s.run([y, ups], {x: xv, training: False})  # no update when not training
            np.testing.assert_allclose(s.run(mm), m)
            np.testing.assert_allclose(yi, (xv - m) / np.sqrt(v + 1e-3), rtol=1e-4, atol=1e-4)


def test_dropout_training_tensor_and_bool():
    xv = np.ones((50, 40), np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 40])
        t = tf.placeholder(tf.bool, [])
        y = tf.layers.dropout(x, rate=0.5, training=t)
        same = tf.layers.dropout(x, rate=0.5)  # training=False: x itself
        with tf.Session() as s:
            np.testing.assert_array_equal(s.run(y, {x: xv, t: False}), xv)
            d = s.run(y, {x: xv, t: True})
            assert set(np.unique(d)) <= {0.0, 2.0} and 0.3 < (d == 0).mean() < 0.7
            np.testing.assert_array_equal(s.run(same, {x: xv}), xv)


def test_training_mlp_and_cnn_lowers_loss():
    rng = np.random.RandomState(3)
    xv = rng.randn(64, 6, 6, 1).astype(np.float32)
    yv = (xv.reshape(64, -1).sum(1) > 0).astype(np.int64)
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        x = tf.placeholder(tf.float32, [None, 6, 6, 1])
        y = tf.placeholder(tf.int64, [None])
        h = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu)
        h = tf.layers.max_pooling2d(h, 2, 2)
        h = tf.layers.flatten(h)
        h = tf.layers.dense(h, 16, activation=tf.nn.relu)
        logits = tf.layers.dense(h, 2)
        loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
        train = tf.train.AdamOptimizer(0.01).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            first = s.run(loss, {x: xv, y: yv})
            for _ in range(100):
                s.run(train, {x: xv, y: yv})
            last = s.run(loss, {x: xv, y: yv})
    assert last < 0.5 * first, (first, last)


def test_initializers_limits_and_default():
    with tf.Graph().as_default():
        v = tf.get_variable("v", [200, 300])  # glorot uniform: limit sqrt(6 / 500)
        vs = tf.get_variable("vs", [100, 400],
                             initializer=tf.variance_scaling_initializer(2.0, "fan_in",
                                                                         "untruncated_normal"))
        u = tf.get_variable("u", [1000, 10], initializer=tf.uniform_unit_scaling_initializer())
        o = tf.get_variable("o", [5, 5], initializer=tf.orthogonal_initializer())
        tn = tf.get_variable("tn", [300, 300], initializer=tf.glorot_normal_initializer())
        gi = tf.glorot_uniform_initializer()([10, 20])
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            a, b, c, d, e, f = s.run([v, vs, u, o, tn, gi])
    lim = np.sqrt(6 / 500)
    assert a.max() <= lim and a.min() >= -lim and a.max() > 0.9 * lim
    assert abs(b.std() - np.sqrt(2 / 100)) < 0.01
    assert np.abs(c).max() <= np.sqrt(3 / 1000) + 1e-7
    np.testing.assert_allclose(d @ d.T, np.eye(5), atol=1e-5)
    assert abs(e.std() - np.sqrt(1 / 300)) < 0.005
    assert f.shape == (10, 20) and np.abs(f).max() <= np.sqrt(6 / 30)


BN_FUSED = """
import numpy as np
rng = np.random.RandomState(5)
xs = [(rng.randn(4, 3, 3, 2) * 1.5 + 0.7).astype(np.float32) for _ in range(3)]
cv = rng.randn(4, 3, 3, 2).astype(np.float32)
x = tf.placeholder(tf.float32, [4, 3, 3, 2], name="x")
training = tf.placeholder(tf.bool, [], name="training")
y = tf.layers.batch_normalization(
    x, training=training, momentum=0.8, epsilon=1e-3,
    gamma_initializer=tf.constant_initializer(1.5),
    beta_initializer=tf.constant_initializer(0.1))
y2 = tf.layers.batch_normalization(x, training=True, center=False, name="bn2")
y3 = tf.layers.batch_normalization(x, training=False, name="bn3")
loss = tf.reduce_sum(y * cv) + tf.reduce_sum(y2 * cv)
with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
types = sorted({o.type for o in tf.get_default_graph().get_operations()
                if o.type.startswith("FusedBatchNorm")})
with tf.Session() as s:
    s.run(tf.global_variables_initializer())
    ys = []
    for xv in xs:
        ys.append(s.run([y, y2, y3], {x: xv, training: True}))
        s.run(train, {x: xv, training: True})
    ys.append(s.run([y, y2, y3], {x: xs[0], training: False}))
    out = dict(types=types,
               vars={v.name: s.run(v).tolist() for v in tf.global_variables()},
               ys=[[a.tolist() for a in t] for t in ys],
               updates=[o.name for o in tf.get_collection(tf.GraphKeys.UPDATE_OPS)])
"""


def test_batch_normalization_fused_matches_tf():
    ref = None
    if os.path.exists(TF215):
        code = ("import json, tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n" +
                BN_FUSED + "print('JSON' + json.dumps(out))")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["TF_CPP_MIN_LOG_LEVEL"] = "3"
        r = subprocess.run([TF215, "-c", code], capture_output=True, text=True, env=env,
                           timeout=120)
        line = [l for l in r.stdout.splitlines() if l.startswith("JSON")]
        assert line, r.stderr[-2000:]
        ref = json.loads(line[0][4:])
    ns = {"tf": tf}
    with tf.Graph().as_default():
        exec(BN_FUSED, ns)
    got = json.loads(json.dumps(ns["out"]))
    assert "FusedBatchNormV3" in got["types"]
    if ref is None:
        tfref.skip("no TF 2.15 reference at " + TF215)
    assert got["types"] == ref["types"]
    assert got["updates"] == ref["updates"]
    assert sorted(got["vars"]) == sorted(ref["vars"])
    for k in ref["vars"]:
        np.testing.assert_allclose(got["vars"][k], ref["vars"][k], rtol=1e-4, atol=1e-5,
                                   err_msg=k)
    for a, b in zip(got["ys"], ref["ys"]):
        for u, v in zip(a, b):
            np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-4)
