"""tf.losses against numpy's formulas (TF 1.x's reductions), the LOSSES and regularization
collections, and the learning-rate schedules."""
import numpy as np
import pytest

import rill.compat.v1 as tf

rng = np.random.RandomState(0)
L = rng.rand(4, 3).astype(np.float32)
P = rng.rand(4, 3).astype(np.float32)
W = np.array([[1.0], [0.0], [2.0], [0.5]], np.float32)


def _eval(t):
    with tf.Session() as s:
        return s.run(t)


def _nonzero_mean(losses, w):
    wb = np.broadcast_to(w, losses.shape)
    return (losses * wb).sum() / (wb != 0).sum()


@pytest.mark.parametrize("name,fn", [
    ("mean_squared_error", lambda l, p: (p - l) ** 2),
    ("absolute_difference", lambda l, p: np.abs(p - l)),
    ("huber_loss", lambda l, p: np.where(np.abs(p - l) <= 1, 0.5 * (p - l) ** 2,
                                         np.abs(p - l) - 0.5)),
    ("log_loss", lambda l, p: -l * np.log(p + 1e-7) - (1 - l) * np.log(1 - p + 1e-7)),
    ("hinge_loss", lambda l, p: np.maximum(0, 1 - (2 * l - 1) * p)),
])
def test_pointwise_losses(name, fn):
    with tf.Graph().as_default():
        f = getattr(tf.losses, name)
        lb = (L > 0.5).astype(np.float32) if name == "hinge_loss" else L
        pr = P * 3 if name == "huber_loss" else P
        plain = f(lb, pr)
        weighted = f(lb, pr, weights=W)
        summed = f(lb, pr, weights=W, reduction=tf.losses.Reduction.SUM)
        mean = f(lb, pr, weights=W, reduction=tf.losses.Reduction.MEAN)
        batch = f(lb, pr, weights=W, reduction=tf.losses.Reduction.SUM_OVER_BATCH_SIZE)
        none = f(lb, pr, weights=W, reduction=tf.losses.Reduction.NONE)
        assert len(tf.get_collection(tf.GraphKeys.LOSSES)) == 6
        got = _eval([plain, weighted, summed, mean, batch, none])
    e = fn(lb, pr)
    wb = np.broadcast_to(W, e.shape)
    np.testing.assert_allclose(got[0], e.mean(), rtol=1e-5)
    np.testing.assert_allclose(got[1], _nonzero_mean(e, W), rtol=1e-5)
    np.testing.assert_allclose(got[2], (e * wb).sum(), rtol=1e-5)
    np.testing.assert_allclose(got[3], (e * wb).sum() / wb.sum(), rtol=1e-5)
    np.testing.assert_allclose(got[4], (e * wb).sum() / e.size, rtol=1e-5)
    np.testing.assert_allclose(got[5], e * wb, rtol=1e-5)


def test_cross_entropies():
    logits = (rng.randn(5, 4) * 3).astype(np.float32)
    onehot = np.eye(4, dtype=np.float32)[[0, 3, 1, 2, 2]]
    multi = (rng.rand(5, 4) > 0.5).astype(np.float32)
    with tf.Graph().as_default():
        sce = tf.losses.softmax_cross_entropy(onehot, logits)
        sce_ls = tf.losses.softmax_cross_entropy(onehot, logits, label_smoothing=0.2)
        sp = tf.losses.sparse_softmax_cross_entropy(np.array([0, 3, 1, 2, 2]), logits)
        sig = tf.losses.sigmoid_cross_entropy(multi, logits)
        sig_ls = tf.losses.sigmoid_cross_entropy(multi, logits, label_smoothing=0.1)
        got = _eval([sce, sce_ls, sp, sig, sig_ls])
    lse = np.log(np.exp(logits).sum(1, keepdims=True))
    logp = logits - lse
    smooth = onehot * 0.8 + 0.2 / 4
    np.testing.assert_allclose(got[0], -(onehot * logp).sum(1).mean(), rtol=1e-5)
    np.testing.assert_allclose(got[1], -(smooth * logp).sum(1).mean(), rtol=1e-5)
    np.testing.assert_allclose(got[2], got[0], rtol=1e-5)

    def sig_ref(z):
        p = 1 / (1 + np.exp(-logits.astype(np.float64)))
        return (-(z * np.log(p) + (1 - z) * np.log(1 - p))).mean()
    np.testing.assert_allclose(got[3], sig_ref(multi), rtol=1e-4)
    np.testing.assert_allclose(got[4], sig_ref(multi * 0.9 + 0.05), rtol=1e-4)


def test_cosine_distance_and_total_loss():
    a = np.array([[1.0, 0.0], [0.6, 0.8]], np.float32)
    b = np.array([[0.0, 1.0], [0.6, 0.8]], np.float32)
    with tf.Graph().as_default():
        cd = tf.losses.cosine_distance(a, b, axis=1)
        w = tf.get_variable("w", [2], initializer=tf.constant_initializer(3.0),
                            regularizer=tf.contrib.layers.l2_regularizer(0.5))
        tf.layers.dense(tf.constant([[1.0, 2.0]]), 1,
                        kernel_regularizer=tf.contrib.layers.l1_regularizer(0.1),
                        kernel_initializer=tf.ones_initializer())
        assert len(tf.losses.get_regularization_losses()) == 2
        assert tf.losses.get_losses() == [cd]
        reg = tf.losses.get_regularization_loss()
        total = tf.losses.get_total_loss()
        no_reg = tf.losses.get_total_loss(add_regularization_losses=False)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got = s.run([cd, reg, total, no_reg])
    # cosine: 1 - sum(a*b) per row = [1, 0], mean 0.5; l2: 0.5 * (9+9)/2 = 4.5; l1: 0.1 * 2
    np.testing.assert_allclose(got, [0.5, 4.7, 5.2, 0.5], rtol=1e-5)
    with tf.Graph().as_default():
        with pytest.raises(ValueError):
            tf.losses.get_total_loss()
        with pytest.raises(ValueError, match="Invalid Reduction"):
            tf.losses.compute_weighted_loss([1.0], reduction="bogus")


def test_learning_rate_schedules():
    with tf.Graph().as_default():
        step = tf.placeholder(tf.int64, [])
        fs = [tf.train.exponential_decay(0.1, step, 10, 0.5),
              tf.train.exponential_decay(0.1, step, 10, 0.5, staircase=True),
              tf.train.piecewise_constant(step, [2, 5], [1.0, 0.5, 0.1]),
              tf.train.polynomial_decay(0.1, step, 10, 0.01, power=2.0),
              tf.train.inverse_time_decay(0.1, step, 10, 0.5, staircase=True),
              tf.train.natural_exp_decay(0.1, step, 10, 0.5),
              tf.train.cosine_decay(0.1, step, 10, alpha=0.1)]
        with tf.Session() as s:
            for n in [0, 2, 3, 5, 7, 15]:
                got = s.run(fs, {step: n})
                m = min(n, 10)
                ref = [0.1 * 0.5 ** (n / 10), 0.1 * 0.5 ** (n // 10),
                       1.0 if n <= 2 else 0.5 if n <= 5 else 0.1,
                       0.09 * (1 - m / 10) ** 2 + 0.01, 0.1 / (1 + 0.5 * (n // 10)),
                       0.1 * np.exp(-0.5 * n / 10),
                       0.1 * (0.9 * 0.5 * (1 + np.cos(np.pi * m / 10)) + 0.1)]
                np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-7, err_msg=str(n))
