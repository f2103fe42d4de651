#!/usr/bin/env python3
"""The models of issue 10 in the peers, on the same threads as rill: the 784-512-512-10 MLP
training step (batch 256, SGD) and the Fashion-MNIST CNN (conv 32, pool, conv 64, pool, dense
1024, dropout, 10; batch 100, Adam) as training examples/s over STEPS steps, in TensorFlow graph
mode (tf.compat.v1 Session, as the seed's programs are) and PyTorch eager. Random data of the real
shapes: the speed, not the accuracy (the examples train to accuracy). Prints RESULT lines that
scripts/bench_peers.sh sets against rill's. A framework that is not installed is reported as
skipped. Usage: baseline_models.py tf|torch THREADS [MLP_STEPS CNN_STEPS]"""
import sys
import time

import numpy as np

WHICH = sys.argv[1]
THREADS = int(sys.argv[2])
MLP_STEPS = int(sys.argv[3]) if len(sys.argv) > 3 else 40
CNN_STEPS = int(sys.argv[4]) if len(sys.argv) > 4 else 40
rng = np.random.default_rng(1)


def median_time(fn, steps, reps=3):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(steps):
            fn()
        times.append((time.perf_counter() - t0) / steps)
    return sorted(times)[len(times) // 2]


def bench_tf():
    try:
        import tensorflow as tf
    except ImportError as e:
        print(f"tensorflow: skipped ({e})")
        return
    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    cfg = tf1.ConfigProto(intra_op_parallelism_threads=THREADS, inter_op_parallelism_threads=THREADS)

    g = tf1.Graph()
    with g.as_default():
        x = tf1.placeholder(tf.float32, [256, 784])
        y = tf1.placeholder(tf.int32, [256])
        h = x
        for i, (a, b) in enumerate([(784, 512), (512, 512), (512, 10)]):
            w = tf1.get_variable(f"w{i}", [a, b], initializer=tf1.truncated_normal_initializer(stddev=0.05))
            bb = tf1.get_variable(f"b{i}", [b], initializer=tf1.zeros_initializer())
            h = tf.nn.bias_add(tf.matmul(h, w), bb)
            if i < 2:
                h = tf.nn.relu(h)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h))
        train = tf1.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = tf1.global_variables_initializer()
    xv = rng.standard_normal((256, 784)).astype(np.float32)
    yv = rng.integers(0, 10, 256).astype(np.int32)
    with tf1.Session(graph=g, config=cfg) as sess:
        sess.run(init)
        for _ in range(5):
            sess.run([loss, train], {x: xv, y: yv})
        t = median_time(lambda: sess.run([loss, train], {x: xv, y: yv}), MLP_STEPS)
    print(f"RESULT framework=tf mlp_step_ms={t * 1e3:.3f}")

    g = tf1.Graph()
    with g.as_default():
        x = tf1.placeholder(tf.float32, [100, 784])
        y = tf1.placeholder(tf.int32, [100])
        keep = tf1.placeholder(tf.float32, [])
        img = tf.reshape(x, [-1, 28, 28, 1])

        def conv_pool(v, cin, cout, name):
            w = tf1.get_variable(name + "w", [5, 5, cin, cout], initializer=tf1.truncated_normal_initializer(stddev=0.1))
            b = tf1.get_variable(name + "b", [cout], initializer=tf1.constant_initializer(0.1))
            r = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(v, w, [1, 1, 1, 1], "SAME"), b))
            return tf.nn.max_pool2d(r, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")

        p2 = conv_pool(conv_pool(img, 1, 32, "c1"), 32, 64, "c2")
        flat = tf.reshape(p2, [-1, 7 * 7 * 64])
        w3 = tf1.get_variable("w3", [3136, 1024], initializer=tf1.truncated_normal_initializer(stddev=0.02))
        b3 = tf1.get_variable("b3", [1024], initializer=tf1.zeros_initializer())
        fc = tf1.nn.dropout(tf.nn.relu(tf.matmul(flat, w3) + b3), keep_prob=keep)
        w4 = tf1.get_variable("w4", [1024, 10], initializer=tf1.truncated_normal_initializer(stddev=0.03))
        logits = tf.matmul(fc, w4)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = tf1.train.AdamOptimizer(0.001).minimize(loss)
        init = tf1.global_variables_initializer()
    xv = rng.standard_normal((100, 784)).astype(np.float32)
    yv = rng.integers(0, 10, 100).astype(np.int32)
    with tf1.Session(graph=g, config=cfg) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run([loss, train], {x: xv, y: yv, keep: 0.5})
        t = median_time(lambda: sess.run([loss, train], {x: xv, y: yv, keep: 0.5}), CNN_STEPS)
    print(f"RESULT framework=tf cnn_examples_per_s={100 / t:.0f}")


def bench_torch():
    try:
        import torch
    except ImportError as e:
        print(f"torch: skipped ({e})")
        return
    torch.set_num_threads(THREADS)
    nn = torch.nn
    mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(mlp.parameters(), lr=0.01)
    xv = torch.randn(256, 784)
    yv = torch.randint(0, 10, (256,))
    lossf = nn.CrossEntropyLoss()

    def step_mlp():
        opt.zero_grad()
        loss = lossf(mlp(xv), yv)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(5):
        step_mlp()
    print(f"RESULT framework=torch mlp_step_ms={median_time(step_mlp, MLP_STEPS) * 1e3:.3f}")

    cnn = nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 1024), nn.ReLU(), nn.Dropout(0.5), nn.Linear(1024, 10))
    opt = torch.optim.Adam(cnn.parameters(), lr=0.001)
    xv = torch.randn(100, 1, 28, 28)
    yv = torch.randint(0, 10, (100,))

    def step_cnn():
        opt.zero_grad()
        loss = lossf(cnn(xv), yv)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(3):
        step_cnn()
    print(f"RESULT framework=torch cnn_examples_per_s={100 / median_time(step_cnn, CNN_STEPS):.0f}")


if WHICH == "tf":
    bench_tf()
elif WHICH == "torch":
    bench_torch()
else:
    sys.exit("usage: baseline_models.py tf|torch THREADS [MLP_STEPS CNN_STEPS]")
