#!/usr/bin/env python3
"""bench_lstm.py - issue 21's recurrent bar, on what exists today: the LSTM classifier on
Fashion-MNIST rows (28 steps x 28 inputs, 128 units, batch 128, Adam lr 0.001, the last output
through a dense layer to 10 classes), one training step timed as steps/s.

    bench_lstm.py tf1 [STEPS] [THREADS]     a TF 1.x program (tf.nn.rnn_cell.BasicLSTMCell
                                            unrolled by tf.nn.static_rnn): run it with
                                            TensorFlow's python for TF, under
                                            `python -m rill.run` for rill
    bench_lstm.py tf1-dynamic [STEPS] [THREADS]   the same with tf.nn.dynamic_rnn (a
                                            tf.while_loop over time; its gradient a backward
                                            loop)
    bench_lstm.py torch [STEPS] [THREADS]   the same model in PyTorch (nn.LSTM, eager)

5 chunks of STEPS steps (default 20) after a warm-up chunk; prints the median as
`RESULT framework=... steps_per_s=...`. Fed a batch of the real training images by feed_dict
each step."""
import gzip
import os
import sys
import time

import numpy as np

DIR = os.environ.get("RILL_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
CHUNKS = 5
T, D, H, B, C = 28, 28, 128, 128, 10

if len(sys.argv) < 2 or sys.argv[1] not in ("tf1", "tf1-dynamic", "torch"):
    sys.exit("usage: bench_lstm.py tf1|tf1-dynamic|torch [STEPS] [THREADS]")
VARIANT = sys.argv[1]
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] else 20
THREADS = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else os.cpu_count()


def load():
    with gzip.open(os.path.join(DIR, "train-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, T, D)
    with gzip.open(os.path.join(DIR, "train-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    return x.astype(np.float32) / 255.0, y.astype(np.int64)


X, Y = load()


def batch(i):
    s = (i * B) % (len(X) - B)
    return X[s:s + B], Y[s:s + B]


def timed(step):
    for i in range(STEPS):
        step(i)
    rates = []
    for c in range(CHUNKS):
        t0 = time.perf_counter()
        for i in range(STEPS):
            step((c + 1) * STEPS + i)
        rates.append(STEPS / (time.perf_counter() - t0))
    return sorted(rates)[CHUNKS // 2]


def tf1(dynamic):
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    framework = "rill" if tf.__name__.startswith("rill") else "tensorflow"
    x = tf.placeholder(tf.float32, [None, T, D])
    y = tf.placeholder(tf.int64, [None])
    cell = tf.nn.rnn_cell.BasicLSTMCell(H)
    if dynamic:
        outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        last = outputs[:, -1, :]
    else:
        outputs, _ = tf.nn.static_rnn(cell, tf.unstack(x, T, 1), dtype=tf.float32)
        last = outputs[-1]
    logits = tf.layers.dense(last, C)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.AdamOptimizer(0.001).minimize(loss)
    cfg = tf.ConfigProto(intra_op_parallelism_threads=THREADS,
                         inter_op_parallelism_threads=THREADS)
    with tf.Session(config=cfg) as sess:
        sess.run(tf.global_variables_initializer())

        def step(i):
            bx, by = batch(i)
            sess.run(train, {x: bx, y: by})
        rate = timed(step)
    print("RESULT framework=%s%s steps_per_s=%.2f" % (framework, "-dynamic" if dynamic else "",
                                                        rate))


def torch_program():
    import torch
    torch.set_num_threads(THREADS)
    lstm, dense = torch.nn.LSTM(D, H, batch_first=True), torch.nn.Linear(H, C)
    opt = torch.optim.Adam(list(lstm.parameters()) + list(dense.parameters()), lr=0.001)
    lossf = torch.nn.CrossEntropyLoss()

    def step(i):
        bx, by = batch(i)
        out, _ = lstm(torch.from_numpy(bx))
        loss = lossf(dense(out[:, -1]), torch.from_numpy(by))
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("RESULT framework=torch steps_per_s=%.2f" % timed(step))


if VARIANT.startswith("tf1"):
    tf1(VARIANT == "tf1-dynamic")
else:
    torch_program()
