#!/usr/bin/env python3
"""bench_layers.py - issue 19's "no cost for the layer API" and "as fast as the peers": one
training step of the Fashion-MNIST MLP (784-512-512-10, ReLU, batch 128) or of TF's classic CNN
(5x5 conv 32, 2x2 max pool, 5x5 conv 64, 2x2 max pool, dense 1024, dropout 0.4, 10; batch 64),
Adam lr 0.001, fed a batch of the real training images (Debian's dataset-fashion-mnist) by
feed_dict each step, timed as steps/s.

    bench_layers.py MODEL VARIANT [STEPS] [THREADS]
      MODEL    mlp | cnn
      VARIANT  layers  the model in tf.layers (dense, conv2d, max_pooling2d, flatten, dropout)
               hand    the same model written by hand: tf.Variable, tf.matmul, tf.nn.conv2d,
                       tf.nn.bias_add, tf.nn.relu, tf.nn.max_pool, tf.nn.dropout
               ab      both, in one process: alternating chunks (15 of each), the medians and
                       the median ratio layers/hand (and
                       each one's CPU time per step, all threads: less sensitive to neighbours)
               torch   the same model in PyTorch, eager (nn.Linear/Conv2d/MaxPool2d/Dropout)
      STEPS    timed steps per chunk (default, also for "": 100 MLP, 20 CNN); 5 chunks, the median is printed
      THREADS  intra/inter-op threads (default: the CPU count)

`layers` and `hand` are TF 1.x programs (`import tensorflow.compat.v1 as tf`): run them with
TensorFlow's python for TF, under `python -m rill.run` for rill; the program is the same file.
Prints `RESULT model=... variant=... framework=... steps_per_s=...`; scripts/bench_layers.sh
runs the variants interleaved and prints the medians and ratios. The timing is the speed, not
the accuracy (the examples train to accuracy)."""
import gzip
import os
import sys
import time

import numpy as np

DIR = os.environ.get("RILL_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
CHUNKS = 5

if len(sys.argv) < 3 or sys.argv[1] not in ("mlp", "cnn") or \
        sys.argv[2] not in ("layers", "hand", "ab", "torch"):
    sys.exit("usage: bench_layers.py mlp|cnn layers|hand|ab|torch [STEPS] [THREADS]")
MODEL, VARIANT = sys.argv[1], sys.argv[2]
STEPS = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else (100 if MODEL == "mlp" else 20)
THREADS = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else os.cpu_count()
BATCH = 128 if MODEL == "mlp" else 64


def load():
    with gzip.open(os.path.join(DIR, "train-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(os.path.join(DIR, "train-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    return x.astype(np.float32) / 255.0, y.astype(np.int64)


X, Y = load()
PERM = np.random.RandomState(0).permutation(len(X))


def batch(i):
    k = (i * BATCH) % (len(X) - BATCH)
    idx = PERM[k:k + BATCH]
    return X[idx], Y[idx]


def timed(step, warm):
    for i in range(warm):  # plans, buffers, the kernels' first calls
        step(i)
    rates = []
    i = warm
    for _ in range(CHUNKS):
        t0 = time.perf_counter()
        for _ in range(STEPS):
            step(i)
            i += 1
        rates.append(STEPS / (time.perf_counter() - t0))
    return sorted(rates)[CHUNKS // 2]


# ----------------------------------------------------------------- TF 1.x (rill or TF) ----

def tf_session(tf, variant):
    """A session with the model of VARIANT (layers | hand) in its own graph, and its step."""
    g = tf.Graph()
    with g.as_default():
        train, x, y = tf_model(tf, variant)
        init = tf.global_variables_initializer()
    cfg = tf.ConfigProto(intra_op_parallelism_threads=THREADS,
                         inter_op_parallelism_threads=THREADS)
    sess = tf.Session(graph=g, config=cfg)
    sess.run(init)

    def step(i):
        xb, yb = batch(i)
        sess.run(train, {x: xb, y: yb})
    return sess, step


def tf_model(tf, variant):
    x = tf.placeholder(tf.float32, [None, 784], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    if variant == "layers":
        if MODEL == "mlp":
            h = tf.layers.dense(x, 512, activation=tf.nn.relu)
            h = tf.layers.dense(h, 512, activation=tf.nn.relu)
            logits = tf.layers.dense(h, 10)
        else:
            img = tf.reshape(x, [-1, 28, 28, 1])
            c1 = tf.layers.conv2d(img, 32, [5, 5], padding="same", activation=tf.nn.relu)
            p1 = tf.layers.max_pooling2d(c1, pool_size=[2, 2], strides=2)
            c2 = tf.layers.conv2d(p1, 64, [5, 5], padding="same", activation=tf.nn.relu)
            p2 = tf.layers.max_pooling2d(c2, pool_size=[2, 2], strides=2)
            flat = tf.layers.flatten(p2)
            d = tf.layers.dense(flat, 1024, activation=tf.nn.relu)
            d = tf.layers.dropout(d, rate=0.4, training=True)
            logits = tf.layers.dense(d, 10)
    else:
        rng = np.random.RandomState(1)

        def var(shape, stddev):  # initial values from numpy: the step's speed is the point
            return tf.Variable((rng.randn(*shape) * stddev).astype(np.float32))

        def dense(h, n_in, n_out, relu):
            w, b = var([n_in, n_out], np.sqrt(2.0 / n_in)), tf.Variable(np.zeros(n_out, np.float32))
            z = tf.nn.bias_add(tf.matmul(h, w), b)
            return tf.nn.relu(z) if relu else z

        def conv_pool(v, cin, cout):
            w, b = var([5, 5, cin, cout], 0.1), tf.Variable(np.full(cout, 0.1, np.float32))
            r = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(v, w, [1, 1, 1, 1], "SAME"), b))
            return tf.nn.max_pool(r, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")

        if MODEL == "mlp":
            logits = dense(dense(dense(x, 784, 512, True), 512, 512, True), 512, 10, False)
        else:
            p2 = conv_pool(conv_pool(tf.reshape(x, [-1, 28, 28, 1]), 1, 32), 32, 64)
            flat = tf.reshape(p2, [-1, 7 * 7 * 64])
            d = tf.nn.dropout(dense(flat, 3136, 1024, True), rate=0.4)
            logits = dense(d, 1024, 10, False)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    return tf.train.AdamOptimizer(0.001).minimize(loss), x, y


def tf_program():
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    framework = "rill" if tf.__name__.startswith("rill") else "tf"
    warm = 10 if MODEL == "mlp" else 5
    if VARIANT != "ab":
        sess, step = tf_session(tf, VARIANT)
        rate = timed(step, warm)
        sess.close()
        return framework, rate
    # Both models open in one process, timed in alternating chunks: the layer API's cost
    # without the noise between processes.
    (sl, layers), (sh, hand) = tf_session(tf, "layers"), tf_session(tf, "hand")
    for i in range(warm):
        layers(i)
        hand(i)
    rl, rh, ratios, cpu = [], [], [], {"layers": [], "hand": []}
    i = warm
    for _ in range(3 * CHUNKS):
        for step, out, name in ((layers, rl, "layers"), (hand, rh, "hand")):
            t0, c0 = time.perf_counter(), time.process_time()
            for k in range(STEPS):
                step(i + k)
            out.append(STEPS / (time.perf_counter() - t0))
            cpu[name].append((time.process_time() - c0) / STEPS)
        ratios.append(rl[-1] / rh[-1])
        i += STEPS
    sl.close()
    sh.close()

    def med(v):
        return sorted(v)[len(v) // 2]
    print(f"RESULT model={MODEL} variant=layers framework={framework} in_process=1 "
          f"steps_per_s={med(rl):.2f}")
    print(f"RESULT model={MODEL} variant=hand framework={framework} in_process=1 "
          f"steps_per_s={med(rh):.2f}")
    print(f"RESULT model={MODEL} ratio_layers_over_hand={med(ratios):.3f} "
          f"range={min(ratios):.3f}-{max(ratios):.3f} framework={framework} "
          f"cpu_ms_per_step_layers={med(cpu['layers']) * 1e3:.3f} "
          f"cpu_ms_per_step_hand={med(cpu['hand']) * 1e3:.3f}")
    sys.exit(0)


# ---------------------------------------------------------------------------- PyTorch ----

def torch_program():
    import torch
    from torch import nn
    torch.set_num_threads(THREADS)
    torch.manual_seed(1)
    if MODEL == "mlp":
        net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                            nn.Linear(512, 10))
        shape = (-1, 784)
    else:
        net = nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(3136, 1024), nn.ReLU(), nn.Dropout(0.4), nn.Linear(1024, 10))
        shape = (-1, 1, 28, 28)
    net.train()
    opt = torch.optim.Adam(net.parameters(), lr=0.001)
    lossf = nn.CrossEntropyLoss()

    def step(i):
        xb, yb = batch(i)
        opt.zero_grad()
        loss = lossf(net(torch.from_numpy(xb).reshape(shape)), torch.from_numpy(yb))
        loss.backward()
        opt.step()

    return "torch", timed(step, 10 if MODEL == "mlp" else 5)


def main():
    try:
        fw, rate = torch_program() if VARIANT == "torch" else tf_program()
    except ImportError as e:
        print(f"{VARIANT}: skipped ({e})")
        return
    print(f"RESULT model={MODEL} variant={VARIANT} framework={fw} batch={BATCH} "
          f"threads={THREADS} steps_per_s={rate:.2f}")


if __name__ == "__main__":
    main()
