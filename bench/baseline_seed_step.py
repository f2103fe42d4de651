#!/usr/bin/env python3
"""The seed's training step in TensorFlow 1.x style (tf.compat.v1 graph + Session, feed_dict)
and in PyTorch (eager autograd + SGD), timed the way bench_seed_step times rill: one (x, y)
sample per step, fetching the loss and the global step. Prints RESULT lines that
scripts/bench.sh turns into ratios against rill. Either framework may be missing: it is then
reported as skipped. `rill` runs the TensorFlow code itself on rill's Python front end
(rill.compat.v1, the program unchanged but for its import): the Python step against TF's and
against rill's C step (bench_seed_step). Usage: baseline_seed_step.py [STEPS] [tf|torch|rill]"""
import sys
import time

import numpy as np

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
WHICH = sys.argv[2] if len(sys.argv) > 2 else "tf"  # tf, torch or rill: one per process
rng = np.random.default_rng(1)
xs = rng.uniform(-1, 1, size=4096).astype(np.float32)
ys = (2 * xs + 10 + (rng.uniform(size=4096) - 0.5) * 0.33).astype(np.float32)


def bench_tf(rill=False):
    try:
        if rill:
            import rill.compat.v1 as tf
            tf.compat = type("compat", (), {"v1": tf})
            tf.__version__ = "rill " + __import__("rill").__version__
        else:
            import tensorflow as tf
    except ImportError as e:
        print(f"{'rill' if rill else 'tensorflow'}: skipped ({e})")
        return
    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    g = tf1.Graph()
    with g.as_default():
        global_step = tf1.train.get_or_create_global_step()
        inp = tf1.placeholder(tf.float32, name="input")
        label = tf1.placeholder(tf.float32, name="label")
        weight = tf1.get_variable("weight", [1], tf.float32, initializer=tf1.random_normal_initializer())
        biase = tf1.get_variable("biase", [1], tf.float32, initializer=tf1.random_normal_initializer())
        pred = tf.multiply(inp, weight) + biase
        loss = tf.square(label - pred)
        train_op = tf1.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=global_step)
        init = tf1.global_variables_initializer()
    cfg = tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    with tf1.Session(graph=g, config=cfg) as sess:
        sess.run(init)
        for i in range(500):
            sess.run([train_op, loss, global_step], {inp: xs[i % 4096 : i % 4096 + 1], label: ys[i % 4096 : i % 4096 + 1]})
        best = None
        for _ in range(3):
            t0 = time.perf_counter()
            for i in range(STEPS):
                j = i % 4096
                sess.run([train_op, loss, global_step], {inp: xs[j : j + 1], label: ys[j : j + 1]})
            dt = (time.perf_counter() - t0) / STEPS
            best = dt if best is None else min(best, dt)
        w, b = sess.run([weight, biase])
    who = "rill_python" if rill else "tf"
    print(f"{'' if rill else 'tensorflow '}{tf.__version__}: {best * 1e6:.2f} us/step (weight {w[0]:.3f}, biase {b[0]:.3f})")
    print(f"RESULT {who}_seed_step_us={best * 1e6:.3f}")


def bench_torch():
    try:
        import torch
    except ImportError as e:
        print(f"torch: skipped ({e})")
        return
    torch.set_num_threads(1)
    w = torch.randn(1, requires_grad=True)
    b = torch.randn(1, requires_grad=True)
    opt = torch.optim.SGD([w, b], lr=0.01)
    tx = torch.from_numpy(xs)
    ty = torch.from_numpy(ys)
    step = 0

    def one(j):
        nonlocal step
        opt.zero_grad()
        loss = torch.square(ty[j : j + 1] - (tx[j : j + 1] * w + b))
        loss.backward()
        opt.step()
        step += 1
        return loss.item()

    for i in range(500):
        one(i % 4096)
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        for i in range(STEPS):
            one(i % 4096)
        dt = (time.perf_counter() - t0) / STEPS
        best = dt if best is None else min(best, dt)
    print(f"torch {torch.__version__}: {best * 1e6:.2f} us/step (weight {w.item():.3f}, biase {b.item():.3f})")
    print(f"RESULT torch_seed_step_us={best * 1e6:.3f}")


{"tf": bench_tf, "torch": bench_torch, "rill": lambda: bench_tf(rill=True)}[WHICH]()
