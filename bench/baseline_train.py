#!/usr/bin/env python3
"""rill's Fashion-MNIST recipe (examples/fashion_mnist_main.h) trained to the end in a peer, on
the same threads as rill, so that scripts/bench_peers.sh can set both the speed and the test
accuracy side by side: speed must not come from computing something else.

The recipe, as the example's defaults have it:
  data     the gzipped IDX files in /usr/share/datasets/fashion-mnist; pixels v / 255 as float32
           (rill_idx_read_images), then standardized with the training set's mean and standard
           deviation over all pixels (the example's standardize()), the test set with the same
  mlp      784-512-512-10, ReLU; weights truncated normal (at 2 stddev) with stddev
           sqrt(2 / fan_in) for the hidden layers and sqrt(1 / fan_in) for the output layer,
           biases zero
  cnn      TF's "Deep MNIST": 5x5 conv 32 SAME + bias + ReLU, 2x2 max-pool, 5x5 conv 64, pool,
           dense 1024 + ReLU, dropout (keep 0.5 while training, 1 when testing), dense 10; conv
           weights truncated normal 0.1 and biases 0.1, the dense layers as the MLP's
  training softmax cross-entropy (mean over the batch), Adam (lr 0.001, 0.9, 0.999, 1e-8), the
           learning rate multiplied by 0.7 after each epoch, batch 100, the training set
           reshuffled each epoch (Fisher-Yates with drand48 seeded by srand48(SEED), as the
           example does: the same batches in the same order as rill's --seed=SEED), 600 steps an
           epoch (or BENCH_MAX_STEPS), the loss fetched every step
  testing  the 10,000 test images in runs of 1000, argmax of the logits on the host

Per epoch it prints a line as the example does (mean training loss, test accuracy, training
examples/s timed over the training steps only: batch gathering and the steps, not the shuffle or
the evaluation), then the best accuracy and
  RESULT framework=FW model=M epochs=E steps_per_epoch=S threads=T examples_per_s=X test_accuracy=A
with X the training examples of all epochs over their training time (what the example's
"final:" line reports; with equal epochs, the harmonic mean of the epochs' rates) and A the last
epoch's test accuracy in percent.

TensorFlow runs in graph mode (tf.compat.v1 Session, feed_dict, the learning rate a fed
placeholder as in rill's example); PyTorch eagerly (an nn.Module in NCHW, torch.optim.Adam, the
learning rate set in param_groups each epoch). A framework that is not installed is reported as
skipped. BENCH_MAX_STEPS (default 0: the whole epoch) caps the steps per epoch, for short trials.
Usage: baseline_train.py tf|torch mlp|cnn THREADS EPOCHS [SEED (default 1)]"""
import gzip
import os
import struct
import sys
import time

import numpy as np

USAGE = "usage: baseline_train.py tf|torch mlp|cnn THREADS EPOCHS [SEED]"
if len(sys.argv) < 5 or sys.argv[1] not in ("tf", "torch") or sys.argv[2] not in ("mlp", "cnn"):
    sys.exit(USAGE)
FW, MODEL = sys.argv[1], sys.argv[2]
THREADS, EPOCHS = int(sys.argv[3]), int(sys.argv[4])
SEED = int(sys.argv[5]) if len(sys.argv) > 5 else 1
MAX_STEPS = int(os.environ.get("BENCH_MAX_STEPS", "0") or 0)
DATA_DIR = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
BATCH, HIDDEN, LR, DECAY, KEEP, EVAL_BATCH = 100, 512, 0.001, 0.7, 0.5, 1000


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack(">I", data[:4])[0]
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4 : 4 + 4 * ndim])
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load():
    names = ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
             "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
    tx, ty, ex, ey = (read_idx(os.path.join(DATA_DIR, n)) for n in names)
    # rill_idx_read_images: float32 v / 255 (a float division, rounded once), [n, 784].
    tx = tx.reshape(len(tx), -1).astype(np.float32) / np.float32(255)
    ex = ex.reshape(len(ex), -1).astype(np.float32) / np.float32(255)
    # standardize(): the training set's mean and standard deviation over all its pixels, in double.
    t64 = tx.astype(np.float64)
    mean = t64.mean()
    sd = np.sqrt((t64 * t64).mean() - mean * mean)
    del t64
    tx = ((tx.astype(np.float64) - mean) / sd).astype(np.float32)
    ex = ((ex.astype(np.float64) - mean) / sd).astype(np.float32)
    return tx, ty.astype(np.int32), ex, ey.astype(np.int32)


class Drand48:
    """glibc's srand48/drand48: X' = (0x5DEECE66D X + 0xB) mod 2^48, srand48(s) sets X to
    (s mod 2^32) << 16 | 0x330E, drand48() is X' / 2^48."""

    def __init__(self, seed):
        self.x = ((seed & 0xFFFFFFFF) << 16) | 0x330E

    def __call__(self):
        self.x = (0x5DEECE66D * self.x + 0xB) & 0xFFFFFFFFFFFF
        return self.x / 281474976710656.0


def shuffle(order, rand):
    """The example's Fisher-Yates pass over its (persistent) order."""
    for i in range(len(order) - 1, 0, -1):
        j = int(rand() * (i + 1))
        order[i], order[j] = order[j], order[i]


def train(step, logits_of, set_lr, data):
    """The example's loop. step(xb, yb, lr) runs one training step and returns the loss;
    logits_of(x) returns the test logits of an evaluation batch as numpy; set_lr(lr) is called
    before each epoch (None where the learning rate is fed)."""
    tx, ty, ex, ey = data
    rand = Drand48(SEED)
    order = list(range(len(tx)))
    nbatches = len(tx) // BATCH
    if MAX_STEPS > 0 and nbatches > MAX_STEPS:
        nbatches = MAX_STEPS
    lr = np.float32(LR)
    best = acc = 0.0
    total_examples = total_secs = 0.0
    print(f"Fashion-MNIST: {len(tx)} training and {len(ex)} test images of {tx.shape[1]} pixels; "
          f"batch {BATCH}, adam lr {LR:g}; {FW} {MODEL} on {THREADS} threads, {nbatches} steps an "
          f"epoch", flush=True)
    for epoch in range(1, EPOCHS + 1):
        shuffle(order, rand)
        idx = np.asarray(order, dtype=np.int64)
        if set_lr:
            set_lr(float(lr))
        loss_sum = 0.0
        t0 = time.perf_counter()
        for b in range(nbatches):
            sel = idx[b * BATCH : (b + 1) * BATCH]
            loss_sum += step(tx[sel], ty[sel], lr)  # the gather, as the example's, is timed
        secs = time.perf_counter() - t0
        total_examples += nbatches * BATCH
        total_secs += secs
        lr = np.float32(lr * np.float32(DECAY))
        nevals = len(ex) // EVAL_BATCH * EVAL_BATCH
        correct = 0
        for e0 in range(0, nevals, EVAL_BATCH):
            lg = logits_of(ex[e0 : e0 + EVAL_BATCH])
            correct += int((np.argmax(lg, axis=1) == ey[e0 : e0 + EVAL_BATCH]).sum())
        acc = correct / nevals
        best = max(best, acc)
        print(f"epoch {epoch}: training loss {loss_sum / max(nbatches, 1):.4f}, test accuracy "
              f"{acc * 100:.2f}%, {nbatches * BATCH / secs:.0f} examples/s", flush=True)
    print(f"best test accuracy: {best * 100:.2f}%")
    eps = total_examples / total_secs if total_secs > 0 else 0
    print(f"RESULT framework={FW} model={MODEL} epochs={EPOCHS} steps_per_epoch={nbatches} "
          f"threads={THREADS} examples_per_s={eps:.0f} test_accuracy={acc * 100:.2f}", flush=True)


def run_tf(get_data):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow as tf
    except ImportError as e:
        print(f"tf: skipped ({e})")
        return
    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    cfg = tf1.ConfigProto(intra_op_parallelism_threads=THREADS, inter_op_parallelism_threads=THREADS)
    g = tf1.Graph()
    with g.as_default():
        tf1.set_random_seed(SEED)
        x = tf1.placeholder(tf.float32, [None, 784], name="images")
        y = tf1.placeholder(tf.int32, [None], name="labels")

        def dense(v, fan_in, fan_out, relu, name):
            with tf1.variable_scope(name):
                std = np.sqrt((2.0 if relu else 1.0) / fan_in)
                w = tf1.get_variable("weights", [fan_in, fan_out],
                                     initializer=tf1.truncated_normal_initializer(stddev=std))
                b = tf1.get_variable("biases", [fan_out], initializer=tf1.zeros_initializer())
                out = tf.nn.bias_add(tf.matmul(v, w), b)
                return tf.nn.relu(out) if relu else out

        def conv_pool(v, cin, cout, name):
            with tf1.variable_scope(name):
                w = tf1.get_variable("weights", [5, 5, cin, cout],
                                     initializer=tf1.truncated_normal_initializer(stddev=0.1))
                b = tf1.get_variable("biases", [cout], initializer=tf1.constant_initializer(0.1))
                h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(v, w, [1, 1, 1, 1], "SAME"), b))
                return tf.nn.max_pool2d(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")

        keep = None
        if MODEL == "cnn":
            keep = tf1.placeholder(tf.float32, [], name="keep_prob")
            img = tf.reshape(x, [-1, 28, 28, 1])
            flat = tf.reshape(conv_pool(conv_pool(img, 1, 32, "conv1"), 32, 64, "conv2"), [-1, 3136])
            fc = tf.nn.dropout(dense(flat, 3136, 1024, True, "fc1"), rate=1 - keep)
            logits = dense(fc, 1024, 10, False, "softmax_linear")
        else:
            h1 = dense(x, 784, HIDDEN, True, "hidden1")
            logits = dense(dense(h1, HIDDEN, HIDDEN, True, "hidden2"), HIDDEN, 10, False,
                           "softmax_linear")
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        lr = tf1.placeholder(tf.float32, [], name="learning_rate")
        gs = tf1.train.get_or_create_global_step()
        opt = tf1.train.AdamOptimizer(learning_rate=lr, beta1=0.9, beta2=0.999, epsilon=1e-8)
        train_op = opt.minimize(loss, global_step=gs)
        init = tf1.global_variables_initializer()
    g.finalize()
    with tf1.Session(graph=g, config=cfg) as sess:
        sess.run(init)

        def step(xb, yb, lrv):
            feed = {x: xb, y: yb, lr: lrv}
            if keep is not None:
                feed[keep] = KEEP
            return float(sess.run([loss, train_op], feed)[0])

        def logits_of(xb):
            return sess.run(logits, {x: xb, keep: 1.0} if keep is not None else {x: xb})

        train(step, logits_of, None, get_data())


def run_torch(get_data):
    try:
        import torch
    except ImportError as e:
        print(f"torch: skipped ({e})")
        return
    torch.set_num_threads(THREADS)
    torch.manual_seed(SEED)
    nn = torch.nn

    def linear(fan_in, fan_out, relu):
        m = nn.Linear(fan_in, fan_out)
        std = float(np.sqrt((2.0 if relu else 1.0) / fan_in))
        nn.init.trunc_normal_(m.weight, 0.0, std, -2 * std, 2 * std)
        nn.init.zeros_(m.bias)
        return m

    def conv(cin, cout):
        m = nn.Conv2d(cin, cout, 5, padding=2)  # 5x5, stride 1, SAME
        nn.init.trunc_normal_(m.weight, 0.0, 0.1, -0.2, 0.2)
        nn.init.constant_(m.bias, 0.1)
        return m

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden1 = linear(784, HIDDEN, True)
            self.hidden2 = linear(HIDDEN, HIDDEN, True)
            self.softmax_linear = linear(HIDDEN, 10, False)

        def forward(self, x):
            return self.softmax_linear(torch.relu(self.hidden2(torch.relu(self.hidden1(x)))))

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = conv(1, 32), conv(32, 64)
            self.fc1 = linear(3136, 1024, True)
            self.dropout = nn.Dropout(1 - KEEP)
            self.softmax_linear = linear(1024, 10, False)

        def forward(self, x):
            x = x.view(-1, 1, 28, 28)
            x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
            x = nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
            x = self.dropout(torch.relu(self.fc1(torch.flatten(x, 1))))
            return self.softmax_linear(x)

    model = CNN() if MODEL == "cnn" else MLP()
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=(0.9, 0.999), eps=1e-8)
    lossf = nn.CrossEntropyLoss()

    def set_lr(lrv):
        for group in opt.param_groups:
            group["lr"] = lrv

    def step(xb, yb, lrv):
        model.train()
        opt.zero_grad()
        loss = lossf(model(torch.from_numpy(xb)), torch.from_numpy(yb).long())
        loss.backward()
        opt.step()
        return loss.item()

    def logits_of(xb):
        model.eval()
        with torch.no_grad():
            return model(torch.from_numpy(xb)).numpy()

    train(step, logits_of, set_lr, get_data())


if __name__ == "__main__":
    if not all(os.path.exists(os.path.join(DATA_DIR, n)) for n in
               ("train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz")):
        print(f"{FW}: skipped (no Fashion-MNIST in {DATA_DIR}: make deps)")
        sys.exit(0)
    (run_tf if FW == "tf" else run_torch)(load)  # the data is read once the framework imports
