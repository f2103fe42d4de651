#!/usr/bin/env python3
"""A large feed from Python: sess.run(tf.reduce_sum(x), {x: a}) with a a float32 numpy array of
SIZE_MIB MiB (16 by default), in TensorFlow 1.x style (tf.compat.v1 graph + Session), the same
code on rill (rill.compat.v1: the array is fed in place, no copy), and in PyTorch
(torch.from_numpy(a).sum(), no copy either). The floors, measured in the same process: numpy's
sum of the same array (the arithmetic alone) and one memcpy of it (what a copying feed adds).
Prints RESULT lines; one framework per process. Usage: baseline_feed.py [tf|torch|rill] [SIZE_MIB]
"""
import sys
import time

import numpy as np

WHICH = sys.argv[1] if len(sys.argv) > 1 else "rill"
MIB = int(sys.argv[2]) if len(sys.argv) > 2 else 16
a = np.random.default_rng(1).standard_normal(MIB * (1 << 20) // 4).astype(np.float32)


def best_of(fn, reps):
    fn()
    best = None
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        dt = (time.perf_counter() - t0) / reps
        best = dt if best is None else min(best, dt)
    return best


def floors():
    dst = np.empty_like(a)
    copy = best_of(lambda: np.copyto(dst, a), 20)
    s = best_of(lambda: a.sum(), 20)
    print(f"RESULT feed_floor_memcpy_us={copy * 1e6:.1f}")
    print(f"RESULT feed_floor_numpy_sum_us={s * 1e6:.1f}")


def bench_tf(rill=False):
    try:
        if rill:
            import rill.compat.v1 as tf1
        else:
            import tensorflow as tf
            tf1 = tf.compat.v1
            tf1.disable_eager_execution()
    except ImportError as e:
        print(f"{'rill' if rill else 'tensorflow'}: skipped ({e})")
        return
    g = tf1.Graph()
    with g.as_default():
        x = tf1.placeholder(tf1.float32, [None])
        total = tf1.reduce_sum(x)
    with tf1.Session(graph=g) as sess:
        got = sess.run(total, {x: a})
        assert abs(got - a.sum(dtype=np.float64)) < 1e-2 * max(1.0, abs(got)), got
        t = best_of(lambda: sess.run(total, {x: a}), 20)
    print(f"RESULT {'rill_python' if rill else 'tf'}_feed_{MIB}mib_us={t * 1e6:.1f}")


def bench_torch():
    try:
        import torch
    except ImportError as e:
        print(f"torch: skipped ({e})")
        return
    t = best_of(lambda: torch.from_numpy(a).sum().item(), 20)
    print(f"RESULT torch_feed_{MIB}mib_us={t * 1e6:.1f}")


floors()
{"tf": bench_tf, "torch": bench_torch, "rill": lambda: bench_tf(rill=True)}[WHICH]()
