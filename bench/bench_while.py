#!/usr/bin/env python3
"""The executor's cost per loop iteration: an empty tf.while_loop (i = i + 1 while i < N) run in
one Session.run, on rill and on TensorFlow (compat.v1) in the same run, each in a process of its
own; and a loop that does a little work (an [8, 64] x [64, 64] matmul and a tanh per iteration,
an RNN step's shape), against TF and against PyTorch's eager Python loop doing the same.

  PYTHONPATH=build/pyroot .venv/bin/python bench/bench_while.py [N] [REPEATS]

Prints µs per iteration (best of REPEATS, after one warm-up run) and the ratios."""
import os
import subprocess
import sys
import time


def tf_module(side):
    if side == "rill":
        import rill.compat.v1 as tf
        return tf
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    return tf


def best(fn, repeats):
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def measure(side, n, repeats):
    if side == "torch":
        import torch
        torch.set_num_threads(os.cpu_count())
        w = torch.full((64, 64), 0.01)
        h0 = torch.ones(8, 64)

        def loop():
            h = h0
            with torch.no_grad():
                for _ in range(n):
                    h = torch.tanh(h @ w)
            return h
        return 0.0, best(loop, repeats) / n * 1e6
    tf = tf_module(side)
    limit = tf.placeholder(tf.int32, [])
    empty = tf.while_loop(lambda i: i < limit, lambda i: i + 1, [tf.constant(0)])
    w = tf.constant([[0.01] * 64] * 64)
    work = tf.while_loop(lambda i, h: i < limit,
                         lambda i, h: (i + 1, tf.tanh(tf.matmul(h, w))),
                         [tf.constant(0), tf.ones([8, 64])])
    with tf.Session() as sess:
        assert sess.run(empty, {limit: 10}) == 10
        e = best(lambda: sess.run(empty, {limit: n}), repeats) / n * 1e6
        k = best(lambda: sess.run(work, {limit: n // 10}), repeats) / (n // 10) * 1e6
    return e, k


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    if os.environ.get("BENCH_SIDE"):
        e, k = measure(os.environ["BENCH_SIDE"], n if os.environ["BENCH_SIDE"] != "torch" else n // 10,
                       repeats)
        print("RESULT %.4f %.4f" % (e, k))
        return
    res = {}
    for side in ("rill", "tf", "torch"):
        env = dict(os.environ, BENCH_SIDE=side)
        p = subprocess.run([sys.executable, __file__, str(n), str(repeats)], env=env,
                           capture_output=True, text=True)
        line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")]
        if p.returncode != 0 or not line:
            print("%s failed:\n%s" % (side, p.stderr[-2000:]))
            continue
        res[side] = [float(v) for v in line[0].split()[1:]]
    r, t = res.get("rill"), res.get("tf")
    if r and t:
        print("empty while_loop, %d iterations: rill %.3f us/iter, TF %.3f us/iter, rill/TF %.3f"
              % (n, r[0], t[0], r[0] / t[0]))
        print("matmul+tanh loop, %d iterations: rill %.2f us/iter, TF %.2f us/iter, rill/TF %.3f"
              % (n // 10, r[1], t[1], r[1] / t[1]))
    if r and res.get("torch"):
        print("matmul+tanh loop: PyTorch eager %.2f us/iter, rill/torch time %.3f"
              % (res["torch"][1], r[1] / res["torch"][1]))


if __name__ == "__main__":
    main()
