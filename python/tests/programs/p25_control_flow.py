""" Control flow: tf.while_loop and tf.cond as TF 1.x tutorials use them.

A while_loop counter, a loop with two variables and a tensor read from outside, nested loops,
maximum_iterations, a loop whose variable grows (shape_invariants), tf.cond on a placeholder,
tf.case, the gradient of a cond, a cond whose untaken branch would fail, and a small classifier
trained with a `tf.cond` on an is_training flag (dropout only when training).
"""
from __future__ import print_function

import numpy as np
import tensorflow as tf

# --- a while_loop counter ---
i = tf.constant(0)
c = lambda i: tf.less(i, 10)
b = lambda i: tf.add(i, 1)
r = tf.while_loop(c, b, [i])

# --- two loop variables and a tensor from outside the loop ---
x = tf.placeholder(tf.float32, shape=[], name="x")
step, total = tf.while_loop(lambda k, s: k < 5,
                            lambda k, s: (k + 1, s + tf.cast(k, tf.float32) * x),
                            (tf.constant(0), tf.constant(0.0)))

# --- nested loops: 3 x 4 increments ---
def outer_body(k, acc):
    _, inner = tf.while_loop(lambda j, t: j < 4, lambda j, t: (j + 1, t + 1), (0, acc))
    return k + 1, inner
nested = tf.while_loop(lambda k, acc: k < 3, outer_body, (0, 0))

# --- maximum_iterations stops a loop early ---
capped = tf.while_loop(lambda v: v < 100, lambda v: v + 2, [tf.constant(0)],
                       maximum_iterations=7)

# --- a loop variable that grows (shape_invariants) ---
n0 = tf.constant(0)
seq0 = tf.zeros([1, 2])
_, grown = tf.while_loop(lambda n, m: n < 3,
                         lambda n, m: (n + 1, tf.concat([m, tf.ones([1, 2]) * tf.cast(n, tf.float32)], 0)),
                         [n0, seq0],
                         shape_invariants=[n0.get_shape(), tf.TensorShape([None, 2])])

# --- tf.cond on a placeholder, and its gradient ---
flag = tf.placeholder(tf.bool, shape=[], name="flag")
y = tf.cond(flag, lambda: tf.square(x), lambda: 3.0 * x)
dy = tf.gradients(y + x, x)[0]

# --- tf.case ---
k = tf.placeholder(tf.int32, shape=[], name="k")
picked = tf.case([(tf.equal(k, 0), lambda: tf.constant(10.0)),
                  (tf.equal(k, 1), lambda: tf.constant(20.0))],
                 default=lambda: tf.constant(-1.0))

# --- the branch not taken never runs: it reads an uninitialized variable ---
never = tf.Variable(7.0, name="never_initialized")
safe = tf.cond(flag, lambda: never.read_value() * 2.0, lambda: x + 1.0)

print("counter:", r.name, r.get_shape())
print("nested:", [t.name for t in nested])
print("grown:", grown.get_shape())
print("cond:", y.name, "case:", picked.name)

with tf.Session() as sess:
    print("while counter", sess.run(r))
    print("two vars", sess.run([step, total], feed_dict={x: 2.0}))
    print("nested", sess.run(nested))
    print("maximum_iterations", sess.run(capped))
    print("grown", sess.run(grown).tolist())
    for fv in (True, False):
        print("cond", fv, sess.run([y, dy], feed_dict={x: 1.5, flag: fv}))
    print("case", [sess.run(picked, feed_dict={k: v}) for v in (0, 1, 2)])
    print("untaken branch", sess.run(safe, feed_dict={x: 1.0, flag: False}))

# --- an optimizer's update inside a cond, and a cond inside a loop with its gradient ---
tf.reset_default_graph()
x = tf.placeholder(tf.float32, [], name="x")
do_train = tf.placeholder(tf.bool, [], name="do_train")
w = tf.Variable(2.0, name="w")
loss = tf.square(w * x - 1.0)
maybe_train = tf.cond(do_train, lambda: tf.train.GradientDescentOptimizer(0.1).minimize(loss),
                      lambda: tf.no_op())
_, s = tf.while_loop(lambda i, s: i < 3,
                     lambda i, s: (i + 1, tf.cond(i > 0, lambda: s + 1.0, lambda: s * 2.0)),
                     (0, x))
ds = tf.gradients(s, x)[0]
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(maybe_train, {x: 1.0, do_train: False})
    print("w after a step not taken %.5f" % sess.run(w))
    sess.run(maybe_train, {x: 1.0, do_train: True})
    print("w after a step taken %.5f" % sess.run(w))
    print("cond in a loop", sess.run([s, ds], {x: 1.5}))

# --- a classifier with dropout under tf.cond(is_training) ---
tf.reset_default_graph()
tf.set_random_seed(1)
rng = np.random.RandomState(0)
data = rng.randn(512, 10).astype(np.float32)
w_true = rng.randn(10, 3).astype(np.float32)
labels = np.argmax(data.dot(w_true), 1)

xs = tf.placeholder(tf.float32, [None, 10])
ys = tf.placeholder(tf.int64, [None])
is_training = tf.placeholder_with_default(False, shape=[], name="is_training")
w1 = tf.Variable(tf.constant(rng.randn(10, 32).astype(np.float32) * 0.3))
w2 = tf.Variable(tf.constant(rng.randn(32, 3).astype(np.float32) * 0.3))
h = tf.nn.relu(tf.matmul(xs, w1))
h = tf.cond(is_training, lambda: tf.nn.dropout(h, keep_prob=0.8), lambda: h)
logits = tf.matmul(h, w2)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ys, logits=logits))
train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), ys), tf.float32))

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print("initial eval loss %.5f" % sess.run(loss, {xs: data, ys: labels}))
    for s in range(200):
        sess.run(train_op, {xs: data, ys: labels, is_training: True})
    print("eval loss %.3f" % sess.run(loss, {xs: data, ys: labels}))
    print("Accuracy: %.3f" % sess.run(accuracy, {xs: data, ys: labels}))
