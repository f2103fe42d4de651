"""tf.train's RMSProp, Adadelta, Ftrl, ProximalAdagrad and ProximalGradientDescent optimizers
(compat/v1/_optimizers.py over src/train/optimizers.c): 5 steps on a small quadratic equal
TensorFlow's (run in a subprocess with the venv's real TF) to 1e-5; slot names; TF's errors."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tfref

import rill.compat.v1 as tf

W0 = [0.5, -1.0, 2.0, 0.1]
C = [1.0, 2.0, -3.0, 0.05]

# (name, constructor expression over `tf`): the same text runs under rill and under TF.
CASES = [
    ("rmsprop", "tf.train.RMSPropOptimizer(0.05)"),
    ("rmsprop_mom", "tf.train.RMSPropOptimizer(0.05, decay=0.8, momentum=0.5, epsilon=1e-6)"),
    ("rmsprop_centered", "tf.train.RMSPropOptimizer(0.05, momentum=0.3, centered=True)"),
    ("adadelta", "tf.train.AdadeltaOptimizer(1.0)"),
    ("adadelta_args", "tf.train.AdadeltaOptimizer(0.5, rho=0.9, epsilon=1e-6)"),
    ("ftrl", "tf.train.FtrlOptimizer(0.3)"),
    ("ftrl_l1l2", "tf.train.FtrlOptimizer(0.3, l1_regularization_strength=0.05, "
                  "l2_regularization_strength=0.1)"),
    ("ftrl_pow", "tf.train.FtrlOptimizer(0.3, learning_rate_power=-0.7, "
                 "initial_accumulator_value=0.2, l1_regularization_strength=0.01)"),
    ("ftrl_shrink", "tf.train.FtrlOptimizer(0.3, l2_regularization_strength=0.1, "
                    "l2_shrinkage_regularization_strength=0.2)"),
    ("ftrl_beta", "tf.train.FtrlOptimizer(0.3, beta=0.5)"),
    ("prox_adagrad", "tf.train.ProximalAdagradOptimizer(0.3)"),
    ("prox_adagrad_l1", "tf.train.ProximalAdagradOptimizer(0.3, l1_regularization_strength=0.5, "
                        "l2_regularization_strength=0.1)"),
    ("prox_gd", "tf.train.ProximalGradientDescentOptimizer(0.1, l2_regularization_strength=0.2)"),
    ("prox_gd_l1", "tf.train.ProximalGradientDescentOptimizer(0.1, "
                   "l1_regularization_strength=1.5, l2_regularization_strength=0.2)"),
]

SCRIPT = """
import json, sys
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
W0, C, cases = json.loads(sys.argv[1])
out = {}
for name, expr in cases:
    tf.reset_default_graph()
    w = tf.Variable(W0, dtype=tf.float32, name="w")
    loss = tf.reduce_sum(tf.square(w - tf.constant(C)))
    opt = eval(expr)
    train = opt.minimize(loss)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        vals = []
        for _ in range(5):
            s.run(train)
            vals.append(s.run(w).tolist())
        slots = sorted(v.op.name for v in tf.global_variables() if v.op.name != "w")
    out[name] = {"w": vals, "slots": slots}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def tf_ref():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    py = tfref.TF_PY
    if not os.path.exists(py):
        py = sys.executable
    try:
        r = subprocess.run([py, "-c", SCRIPT, json.dumps([W0, C, CASES])], env=env,
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        tfref.skip(f"no TensorFlow to compare with: {e}")
    if r.returncode != 0:
        tfref.skip(f"no TensorFlow to compare with: {r.stderr[-300:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name,expr", CASES, ids=[c[0] for c in CASES])
def test_same_as_tf(tf_ref, name, expr):
    tf.reset_default_graph()
    w = tf.Variable(W0, dtype=tf.float32, name="w")
    loss = tf.reduce_sum(tf.square(w - tf.constant(C)))
    opt = eval(expr)
    train = opt.minimize(loss)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        got = []
        for _ in range(5):
            s.run(train)
            got.append(s.run(w).tolist())
    np.testing.assert_allclose(got, tf_ref[name]["w"], rtol=1e-5, atol=1e-5)
    slots = sorted(v.op.name for v in tf.global_variables() if v.op.name != "w")
    assert slots == tf_ref[name]["slots"]


def test_lr_tensor():
    w = tf.Variable([1.5, -0.5], name="w")
    lr = tf.placeholder(tf.float32, [])
    train = tf.train.RMSPropOptimizer(lr).minimize(tf.reduce_sum(tf.square(w)))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(train, {lr: 0.1})
        v = s.run(w)
    ms = 1 + (np.square([3.0, -1.0]) - 1) * 0.1
    np.testing.assert_allclose(v, [1.5, -0.5] - 0.1 * np.array([3.0, -1.0]) / np.sqrt(ms + 1e-10),
                               rtol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="learning_rate_power 0.500000 needs to be negative"):
        tf.train.FtrlOptimizer(0.1, learning_rate_power=0.5)
    with pytest.raises(ValueError, match="initial_accumulator_value -1.000000 needs to be"):
        tf.train.FtrlOptimizer(0.1, initial_accumulator_value=-1.0)
    with pytest.raises(ValueError, match="l1_regularization_strength"):
        tf.train.FtrlOptimizer(0.1, l1_regularization_strength=-1.0)
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive: 0.0"):
        tf.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(TypeError):
        tf.train.RMSPropOptimizer(0.1, bogus=1)
