"""bench_data_pipeline.py - the Fashion-MNIST 784-512-512-10 ReLU MLP trained for N steps (batch
128, SGD) fed by tf.data (slices -> shuffle -> batch -> repeat -> prefetch, run in C) and by
feed_dict (numpy batches of a permutation): both sessions open in one process, timed in
alternating chunks of STEPS steps (ROUNDS of each, default 9 x 50), printing the medians and the
median ratio. The issue asks that the tf.data step be no slower than the feed_dict one.

    PYTHONPATH=build/pyroot python bench/bench_data_pipeline.py [STEPS [ROUNDS]] [--prefetch N]
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


def feed_pipeline(x, y):
    """A session training the MLP on numpy batches of a permutation through feed_dict."""
    g = tf.Graph()
    with g.as_default():
        xp = tf.placeholder(tf.float32, [None, 784])
        yp = tf.placeholder(tf.int64, [None])
        _, train = model(xp, yp)
        init = tf.global_variables_initializer()
    perm = np.random.RandomState(0).permutation(len(x))
    s = tf.Session(graph=g)
    s.run(init)

    def step(i):
        k = (i * BATCH) % (len(x) - BATCH)
        idx = perm[k:k + BATCH]
        s.run(train, {xp: x[idx], yp: y[idx]})
    return s, step


def data_pipeline(x, y, prefetch):
    """A session training the MLP on tf.data's batches (slices, shuffle, batch, repeat, prefetch)."""
    g = tf.Graph()
    with g.as_default():
        ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(10000, seed=0).batch(BATCH)
        ds = ds.repeat()
        if prefetch:
            ds = ds.prefetch(prefetch)
        xb, yb = tf.data.make_one_shot_iterator(ds).get_next()
        _, train = model(xb, yb)
        init = tf.global_variables_initializer()
    s = tf.Session(graph=g)
    s.run(init)
    return s, lambda i: s.run(train)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    steps = int(args[0]) if args else 50
    rounds = int(args[1]) if len(args) > 1 else 9
    prefetch = 1
    if "--prefetch" in sys.argv:
        prefetch = int(sys.argv[sys.argv.index("--prefetch") + 1])
    x, y = load()
    (fs, feed), (ds, data) = feed_pipeline(x, y), data_pipeline(x, y, prefetch)
    for i in range(10):  # warm-up: plans, buffers, the shuffle buffer's first fill
        feed(i)
        data(i)
    # Interleaved, chunk by chunk (A B A B ...): a noisy neighbour slows both alike.
    tf_, td, ratios = [], [], []
    i = 10
    for _ in range(rounds):
        for fn, out in ((feed, tf_), (data, td)):
            t0 = time.perf_counter()
            for k in range(steps):
                fn(i + k)
            out.append((time.perf_counter() - t0) / steps)
        ratios.append(td[-1] / tf_[-1])
        i += steps
    fs.close()
    ds.close()

    def med(v):
        return sorted(v)[len(v) // 2]
    print(f"feed_dict: {med(tf_) * 1e3:.3f} ms/step (median of {rounds} chunks of {steps} steps)")
    print(f"tf.data (prefetch {prefetch}): {med(td) * 1e3:.3f} ms/step")
    print(f"ratio tf.data / feed_dict: {med(ratios):.3f} (median of the chunk pairs' ratios; "
          f"{min(ratios):.3f}-{max(ratios):.3f})")


if __name__ == "__main__":
    main()
