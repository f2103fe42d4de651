"""Learning-rate schedules and the other optimizers: exponential decay with a
global step, piecewise constant, and RMSProp / Momentum / Adagrad / Adadelta /
Ftrl on the same regression problem."""
from __future__ import print_function

import numpy as np
import tensorflow as tf

rng = np.random.RandomState(42)
X_data = rng.rand(256, 3).astype(np.float32)
y_data = X_data.dot(np.array([[1.5], [-2.0], [0.5]], np.float32)) + 0.3

results = {}
for name in ['GradientDescent', 'Momentum', 'RMSProp', 'Adagrad', 'Adadelta', 'Ftrl', 'Adam']:
    tf.reset_default_graph()
    X = tf.placeholder(tf.float32, [None, 3])
    Y = tf.placeholder(tf.float32, [None, 1])
    W = tf.Variable(tf.zeros([3, 1]), name='W')
    b = tf.Variable(tf.zeros([1]), name='b')
    loss = tf.reduce_mean(tf.square(tf.matmul(X, W) + b - Y))
    global_step = tf.Variable(0, trainable=False, name='global_step')
    lr = tf.train.exponential_decay(0.1, global_step, 100, 0.96, staircase=True)
    opt = {'GradientDescent': lambda: tf.train.GradientDescentOptimizer(lr),
           'Momentum': lambda: tf.train.MomentumOptimizer(lr, 0.9),
           'RMSProp': lambda: tf.train.RMSPropOptimizer(0.01),
           'Adagrad': lambda: tf.train.AdagradOptimizer(0.5),
           'Adadelta': lambda: tf.train.AdadeltaOptimizer(10.0),
           'Ftrl': lambda: tf.train.FtrlOptimizer(0.5),
           'Adam': lambda: tf.train.AdamOptimizer(0.05)}[name]()
    train = opt.minimize(loss, global_step=global_step)
    slots = sorted(v.name for v in tf.global_variables() if v.name.startswith('W/'))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(300):
            sess.run(train, {X: X_data, Y: y_data})
        l, w, s, r = sess.run([loss, W, global_step, lr], {X: X_data, Y: y_data})
    print("%-15s loss %.6f W %s step %d lr %.6f slots %s" % (name, l, np.round(w.ravel(), 4), s, r, slots))

tf.reset_default_graph()
step = tf.placeholder(tf.int32, [])
pc = tf.train.piecewise_constant(step, [100, 200], [1.0, 0.5, 0.1])
pd = tf.train.polynomial_decay(0.1, step, 1000, 0.01, power=0.5)
with tf.Session() as sess:
    print("piecewise:", [float(sess.run(pc, {step: s})) for s in (0, 100, 150, 201)])
    print("polynomial:", [round(float(sess.run(pd, {step: s})), 6) for s in (0, 500, 2000)])
