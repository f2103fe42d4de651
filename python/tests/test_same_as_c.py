"""A Python program and rill's C example train to the same values with the same seed:
build/examples/linear_regression (the seed's model, data from srand48(seed)) against its
program in rill.compat.v1 (the same graph in the same order, so the same op seeds from
tf.set_random_seed; the same drand48 data), printed line for line alike."""
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

TWIN = r'''
import math, sys
import numpy as np
import tensorflow as tf
seed, lr, steps, every = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
state = ((seed & 0xFFFFFFFF) << 16) | 0x330E  # glibc's srand48


def drand48():
    global state
    state = (0x5DEECE66D * state + 0xB) & 0xFFFFFFFFFFFF
    return state / 281474976710656.0


def randn():  # the example's Box-Muller
    u1, u2 = drand48(), drand48()
    return math.sqrt(-2 * math.log(max(u1, 1e-300))) * math.cos(2 * math.pi * u2)


tf.set_random_seed(seed)
global_step = tf.train.get_or_create_global_step()
input = tf.placeholder(tf.float32, name="input")
label = tf.placeholder(tf.float32, name="label")
weight = tf.get_variable("weight", [1], tf.float32, initializer=tf.random_normal_initializer(0, 1))
biase = tf.get_variable("biase", [1], tf.float32, initializer=tf.random_normal_initializer(0, 1))
loss = tf.square(tf.subtract(label, tf.add(tf.multiply(input, weight), biase)))
train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=global_step)
sess = tf.Session()
sess.run(tf.global_variables_initializer())
x, y = np.zeros(1, np.float32), np.zeros(1, np.float32)
for _ in range(steps):
    x[0] = np.float32(randn())
    y[0] = np.float32(2 * float(x[0]) + randn() * 0.33 + 10)
    loss_v, _ = sess.run([loss, train_op], {input: x, label: y})
    gstep = sess.run(global_step)
    if gstep % every == 0:
        w, b = sess.run([weight, biase])
        print("step: %d, weight: %f, biase: %f, loss: %f" % (gstep, w[0], b[0], loss_v[0]))
'''


def test_python_and_c_train_alike(tmp_path):
    exe = ROOT / "build" / "examples" / "linear_regression"
    if not exe.exists():
        pytest.skip(f"{exe} is not built")
    args = ["7", "0.01", "2000", "250"]
    c = subprocess.run([str(exe), f"--seed={args[0]}", f"--learning_rate={args[1]}",
                        f"--train_steps={args[2]}", f"--steps_to_validate={args[3]}"],
                       capture_output=True, text=True, timeout=120)
    assert c.returncode == 0, c.stderr
    (tmp_path / "twin.py").write_text(TWIN)
    p = subprocess.run([sys.executable, "-m", "rill.run", str(tmp_path / "twin.py"), *args],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    c_lines = [l for l in c.stdout.splitlines() if l.startswith("step: ")]
    p_lines = [l for l in p.stdout.splitlines() if l.startswith("step: ")]
    assert len(c_lines) == 8 and p_lines == c_lines, (c.stdout, p.stdout)
