"""tf.losses and regularization with tf.layers: the loss functions TF users call,
weights, reductions and the collections they fill."""
from __future__ import print_function

import numpy as np
import tensorflow as tf

labels = tf.constant([[0., 1., 0.], [1., 0., 0.], [0., 0., 1.]])
logits = tf.constant([[0.5, 2.0, -1.0], [1.5, 0.1, 0.2], [-0.3, 0.4, 0.9]])
sparse = tf.constant([1, 0, 2])
pred = tf.constant([[0.2], [0.7], [1.4]])
target = tf.constant([[0.0], [1.0], [1.0]])
w = tf.constant([[1.0], [0.5], [2.0]])

losses = {
    'mse': tf.losses.mean_squared_error(target, pred),
    'mse_weighted': tf.losses.mean_squared_error(target, pred, weights=w),
    'abs': tf.losses.absolute_difference(target, pred),
    'huber': tf.losses.huber_loss(target, pred, delta=0.5),
    'log': tf.losses.log_loss(target, tf.sigmoid(pred)),
    'softmax': tf.losses.softmax_cross_entropy(labels, logits),
    'softmax_smooth': tf.losses.softmax_cross_entropy(labels, logits, label_smoothing=0.1),
    'sparse': tf.losses.sparse_softmax_cross_entropy(sparse, logits),
    'sigmoid': tf.losses.sigmoid_cross_entropy(labels, logits),
    'hinge': tf.losses.hinge_loss(labels, logits),
    'none': tf.losses.mean_squared_error(target, pred, reduction=tf.losses.Reduction.NONE,
                                         loss_collection=None),
    'sum': tf.losses.mean_squared_error(target, pred, reduction=tf.losses.Reduction.SUM),
}

x = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3) / 10.)
h = tf.layers.dense(x, 4, kernel_regularizer=tf.contrib.layers.l2_regularizer(0.1),
                    kernel_initializer=tf.constant_initializer(0.5))
out = tf.layers.dense(h, 1, kernel_initializer=tf.ones_initializer())
tf.losses.mean_squared_error(tf.ones([4, 1]), out)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for k in sorted(losses):
        print(k, np.round(sess.run(losses[k]), 5).tolist())
    print("losses collected:", len(tf.get_collection(tf.GraphKeys.LOSSES)))
    print("regularization:", np.round(sess.run(tf.losses.get_regularization_loss()), 5))
    print("total:", np.round(sess.run(tf.losses.get_total_loss()), 5))
