"""bench_data_pipeline.py - the Fashion-MNIST 784-512-512-10 ReLU MLP trained for N steps (batch
128, SGD) fed by tf.data (slices -> shuffle -> batch -> repeat -> prefetch, run in C) and by
feed_dict (numpy batches of a permutation), printing both mean step times and their ratio.
The issue asks that the tf.data step be no slower than the feed_dict one.

    PYTHONPATH=build/pyroot python bench/bench_data_pipeline.py [steps] [--prefetch N]
Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist)."""
import gzip
import os
import sys
import time

import numpy as np

import rill.compat.v1 as tf

DIR = os.environ.get("RILL_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
BATCH = 128


def load():
    with gzip.open(os.path.join(DIR, "train-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(os.path.join(DIR, "train-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    return (x.astype(np.float32) / 255.0), y.astype(np.int64)


def model(xb, yb):
    rng = np.random.RandomState(1)

    def dense(h, n_in, n_out, act):
        w = tf.Variable((rng.randn(n_in, n_out) * np.sqrt(2.0 / n_in)).astype(np.float32))
        b = tf.Variable(np.zeros(n_out, np.float32))
        z = tf.nn.bias_add(tf.matmul(h, w), b)
        return tf.nn.relu(z) if act else z

    h = dense(dense(xb, 784, 512, True), 512, 512, True)
    logits = dense(h, 512, 10, False)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=logits))
    return loss, tf.train.GradientDescentOptimizer(0.05).minimize(loss)


def time_steps(sess, step, steps, feed=None):
    for i in range(10):  # warm-up: plans, buffers, the shuffle buffer's first fill
        step(i)
    t0 = time.perf_counter()
    for i in range(steps):
        step(i)
    return (time.perf_counter() - t0) / steps


def bench_feed(x, y, steps):
    tf.reset_default_graph()
    xp = tf.placeholder(tf.float32, [None, 784])
    yp = tf.placeholder(tf.int64, [None])
    loss, train = model(xp, yp)
    perm = np.random.RandomState(0).permutation(len(x))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())

        def step(i):
            k = (i * BATCH) % (len(x) - BATCH)
            idx = perm[k:k + BATCH]
            s.run(train, {xp: x[idx], yp: y[idx]})
        return time_steps(s, step, steps)


def bench_data(x, y, steps, prefetch):
    tf.reset_default_graph()
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(10000, seed=0).batch(BATCH).repeat()
    if prefetch:
        ds = ds.prefetch(prefetch)
    xb, yb = tf.data.make_one_shot_iterator(ds).get_next()
    loss, train = model(xb, yb)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return time_steps(s, lambda i: s.run(train), steps)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    steps = int(args[0]) if args else 200
    prefetch = 1
    if "--prefetch" in sys.argv:
        prefetch = int(sys.argv[sys.argv.index("--prefetch") + 1])
    x, y = load()
    feed = bench_feed(x, y, steps)
    data = bench_data(x, y, steps, prefetch)
    print(f"feed_dict: {feed * 1e3:.3f} ms/step")
    print(f"tf.data (prefetch {prefetch}): {data * 1e3:.3f} ms/step")
    print(f"ratio tf.data / feed_dict: {data / feed:.3f}")


if __name__ == "__main__":
    main()
