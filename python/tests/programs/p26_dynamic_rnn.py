""" Dynamic RNNs, TensorArray and the functional ops as TF 1.x tutorials use them.

An LSTM over a batch of sequences of different lengths (tf.nn.dynamic_rnn with sequence_length),
a bidirectional GRU (tf.nn.bidirectional_dynamic_rnn), a time-major run with an initial state,
the cells' variables as TF names them, their outputs for given weights; then TensorArray writes,
reads, stack, split/concat and a TensorArray filled in a while_loop; tf.map_fn, tf.scan,
tf.foldl and tf.foldr.
"""
from __future__ import print_function

import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
x = tf.constant(rng.randn(3, 5, 4).astype(np.float32))
cell = tf.nn.rnn_cell.BasicLSTMCell(6)
out, st = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, sequence_length=[5, 3, 1])
(of, ob), (sf, sb) = tf.nn.bidirectional_dynamic_rnn(
    tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.GRUCell(3), x, dtype=tf.float32,
    sequence_length=[5, 3, 1])
tm_cell = tf.nn.rnn_cell.BasicRNNCell(2)
tm_out, tm_state = tf.nn.dynamic_rnn(tm_cell, tf.transpose(x, [1, 0, 2]), time_major=True,
                                     initial_state=tf.ones([3, 2]), scope="time_major")
print("shapes", out.shape, st.c.shape, of.shape, ob.shape, tm_out.shape)
for v in tf.trainable_variables():
    print(v.name, v.shape.as_list())

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for v in tf.trainable_variables():
        sess.run(v.assign(rng.uniform(-0.5, 0.5, v.shape.as_list()).astype(np.float32)))
    o, s, a, b, t = sess.run([out, st, of, ob, tm_state])
    print("lstm outputs", np.round(o, 5).tolist())
    print("lstm state", np.round(s.h, 5).tolist())
    print("bidirectional", np.round(a[1], 5).tolist(), np.round(b[1], 5).tolist())
    print("time major", np.round(t, 5).tolist())

tf.reset_default_graph()
ta = tf.TensorArray(tf.float32, size=3)
ta = ta.write(0, [1.0, 2.0]).write(1, [3.0, 4.0]).write(2, [5.0, 6.0])
stacked = ta.stack()
kept = tf.TensorArray(tf.float32, size=2, clear_after_read=False).write(0, 3.0).write(1, 4.0)
r1 = kept.read(1)
r1_again = kept.read(1)
m = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3))
squares = tf.map_fn(lambda v: v * v, m)
pairs = tf.map_fn(lambda v: (v[0], v[1] + v[2]), m, dtype=(tf.float32, tf.float32))
running = tf.scan(lambda a, v: a + v, m)
backwards = tf.scan(lambda a, v: a * 2.0 + v, m, initializer=tf.zeros([3]), reverse=True)
total = tf.foldl(lambda a, v: a + v, m)
folded = tf.foldr(lambda a, v: a * 0.5 + v, m, initializer=tf.zeros([3]))


def body(i, t):
    return i + 1, t.write(i, tf.cast(i, tf.float32) * 2.0)


_, grown = tf.while_loop(lambda i, t: i < 5, body,
                         (0, tf.TensorArray(tf.float32, size=0, dynamic_size=True)))
values, count = grown.stack(), grown.size()
cat = tf.TensorArray(tf.float32, size=2, infer_shape=False).split(
    tf.constant([1., 2., 3., 4., 5.]), [2, 3]).concat()
print("static shapes", stacked.shape, squares.shape, running.shape, values.shape)
with tf.Session() as sess:
    print("stack", sess.run(stacked).tolist(), "read", sess.run([r1, r1_again]))
    print("map_fn", sess.run(squares).tolist())
    print("map_fn pairs", [p.tolist() for p in sess.run(pairs)])
    print("scan", sess.run(running).tolist())
    print("scan reverse", sess.run(backwards).tolist())
    print("foldl", sess.run(total).tolist(), "foldr", sess.run(folded).tolist())
    print("grown", sess.run([values, count]))
    print("split/concat", sess.run(cat).tolist())
    try:
        sess.run(tf.TensorArray(tf.float32, size=1).read(0))
    except tf.errors.InvalidArgumentError as e:
        print("unwritten read fails:", "Could not read from TensorArray index 0." in e.message)
    print("unwritten read, known shape:", sess.run(tf.TensorArray(tf.float32, size=2, element_shape=[2]).read(1)).tolist())
    try:
        sess.run(tf.TensorArray(tf.float32, size=1).write(0, 1.0).write(0, 2.0).flow)
    except tf.errors.InvalidArgumentError as e:
        print("second write fails:", "already been written to" in e.message)
