"""Variables, optimizers and checkpoints through rill.compat.v1: the seed's linear model trains
to its true values, a Saver's checkpoint restores into a fresh graph and is read by real
TensorFlow (in its own process), and the errors are TF's (uninitialized value, get_variable
reuse, no gradients)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import rill.compat.v1 as tf


def _linear_model(lr=0.01):
    g = tf.Graph()
    with g.as_default():
        step = tf.Variable(0, name="global_step", trainable=False)
        x = tf.placeholder("float")
        y = tf.placeholder("float")
        w = tf.get_variable("weight", [1], tf.float32, initializer=tf.random_normal_initializer(seed=1))
        b = tf.get_variable("biase", [1], tf.float32, initializer=tf.random_normal_initializer(seed=2))
        loss = tf.square(y - (tf.multiply(x, w) + b))
        train = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=step)
        init = tf.global_variables_initializer()
    return g, step, x, y, w, b, loss, train, init


def test_trains_and_saves(tmp_path):
    g, step, x, y, w, b, loss, train, init = _linear_model()
    rng = np.random.default_rng(3)
    with g.as_default():
        saver = tf.train.Saver()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        assert sess.run(step) == 0
        for _ in range(3000):
            xv = rng.standard_normal(1)
            sess.run(train, {x: xv, y: 2 * xv + 10 + 0.33 * rng.standard_normal(1)})
        wv, bv, sv = sess.run([w, b, step])
        assert abs(wv[0] - 2) < 0.1 and abs(bv[0] - 10) < 0.3, (wv, bv)
        assert sv == 3000 and sv.dtype == np.int32  # tf.Variable(0) is int32
        prefix = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
    assert prefix == str(tmp_path / "model.ckpt-3000")
    st = tf.train.get_checkpoint_state(str(tmp_path))
    assert st.model_checkpoint_path == prefix
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix

    # a fresh graph restores it
    g2, step2, _, _, w2, b2, _, _, _ = _linear_model()
    with g2.as_default():
        saver2 = tf.train.Saver()
    with tf.Session(graph=g2) as sess:
        saver2.restore(sess, prefix)
        w2v, b2v, s2 = sess.run([w2, b2, step2])
    assert w2v[0] == wv[0] and b2v[0] == bv[0] and s2 == 3000

    # and real TensorFlow reads it (its own process: never import both in one)
    code = ("import sys, tensorflow as tf; r = tf.train.load_checkpoint(sys.argv[1]); "
            "print(r.get_tensor('weight')[0], r.get_tensor('biase')[0], r.get_tensor('global_step'))")
    r = subprocess.run([sys.executable, "-c", code, prefix], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if r.returncode != 0 and "No module named 'tensorflow'" in r.stderr:
        pytest.skip("TensorFlow is not installed here")
    assert r.returncode == 0, r.stderr
    tw, tb, ts = r.stdout.split()
    assert np.float32(tw) == wv[0] and np.float32(tb) == bv[0] and int(ts) == 3000


def test_errors():
    g, step, x, y, w, b, loss, train, init = _linear_model()
    with tf.Session(graph=g) as sess:
        with pytest.raises(tf.errors.FailedPreconditionError) as e:
            sess.run(train, {x: [1.0], y: [1.0]})
        assert "Attempting to use uninitialized value" in e.value.message
        assert e.value.error_code == tf.errors.FAILED_PRECONDITION
        with g.as_default():
            doubled = x * 2.0
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(doubled)  # x not fed
        assert "You must feed a value for placeholder tensor" in e.value.message, e.value.message
    with g.as_default():
        with pytest.raises(ValueError, match="weight"):
            tf.get_variable("weight", [1], tf.float32)
        other = tf.Variable(tf.constant([1.0]), name="other")
        opt = tf.train.GradientDescentOptimizer(0.1)
        gv = opt.compute_gradients(loss, var_list=[w, other])
        assert gv[0][0] is not None and gv[1][0] is None and gv[1][1] is other
        with pytest.raises(ValueError, match="No gradients provided"):
            opt.minimize(loss, var_list=[other])


@pytest.mark.parametrize("name", ["sgd", "momentum", "nesterov", "adam", "adagrad"])
def test_optimizer_updates_match_tf_formulas(name):
    """Three steps of each optimizer on loss = sum((w - c)^2 * x): rill's variables after each
    step equal TF 1.x's update rules computed here in float64 (within float32 rounding)."""
    c = np.array([1.0, -2.0, 0.5])
    xs = [np.array([1.0, 2.0, 0.5]), np.array([0.3, 1.0, 2.0]), np.array([2.0, 0.2, 1.0])]
    lr = 0.1
    make = {"sgd": lambda: tf.train.GradientDescentOptimizer(lr),
            "momentum": lambda: tf.train.MomentumOptimizer(lr, 0.9),
            "nesterov": lambda: tf.train.MomentumOptimizer(lr, 0.9, use_nesterov=True),
            "adam": lambda: tf.train.AdamOptimizer(lr),
            "adagrad": lambda: tf.train.AdagradOptimizer(lr, initial_accumulator_value=0.2)}
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3])
        w = tf.Variable([0.5, 0.5, 0.5], name="w")
        loss = tf.reduce_sum(tf.square(w - c.astype(np.float32)) * x)
        opt = make[name]()
        train = opt.minimize(loss)
        init = tf.global_variables_initializer()
    slot = {"momentum": "w/Momentum", "nesterov": "w/Momentum", "adam": "w/Adam",
            "adagrad": "w/Adagrad"}.get(name)
    if slot:
        g.get_operation_by_name(slot)  # slots are named as TF names them
    W = np.full(3, 0.5)
    acc = np.full(3, 0.2 if name == "adagrad" else 0.0)
    m = np.zeros(3)
    v = np.zeros(3)
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for t, xv in enumerate(xs, 1):
            sess.run(train, {x: xv})
            gr = 2 * (W - c) * xv
            if name == "sgd":
                W = W - lr * gr
            elif name in ("momentum", "nesterov"):
                acc = acc * 0.9 + gr
                W = W - (gr * lr + acc * 0.9 * lr if name == "nesterov" else lr * acc)
            elif name == "adam":
                lr_t = lr * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
                m = 0.9 * m + 0.1 * gr
                v = 0.999 * v + 0.001 * gr * gr
                W = W - lr_t * m / (np.sqrt(v) + 1e-8)
            else:
                acc = acc + gr * gr
                W = W - lr * gr / np.sqrt(acc)
            np.testing.assert_allclose(sess.run(w), W, rtol=1e-5, atol=1e-6, err_msg=f"step {t}")


def test_adagrad_needs_a_positive_accumulator():
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive: 0.0"):
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)
