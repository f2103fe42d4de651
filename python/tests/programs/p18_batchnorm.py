"""Batch normalisation with tf.layers.batch_normalization: the moving statistics
are updated by the ops in tf.GraphKeys.UPDATE_OPS, run with the train op as the
TF documentation says, and used at inference (training=False)."""
from __future__ import print_function

import numpy as np
import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data

mnist = input_data.read_data_sets("MNIST_data/", one_hot=True)

x = tf.placeholder(tf.float32, [None, 784])
y = tf.placeholder(tf.float32, [None, 10])
training = tf.placeholder_with_default(False, shape=(), name='training')

h = tf.layers.dense(x, 100, use_bias=False)
h = tf.layers.batch_normalization(h, training=training, momentum=0.9)
h = tf.nn.relu(h)
h = tf.layers.dense(h, 100, use_bias=False)
h = tf.layers.batch_normalization(h, training=training, momentum=0.9)
h = tf.nn.relu(h)
logits = tf.layers.dense(h, 10)

loss = tf.losses.softmax_cross_entropy(onehot_labels=y, logits=logits)
update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
print("update ops:", len(update_ops))
with tf.control_dependencies(update_ops):
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss)

accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(y, 1)), tf.float32))
for v in tf.global_variables():
    if 'batch_normalization' in v.name and 'Adam' not in v.name:
        print(v.name, v.shape, "trainable" if v in tf.trainable_variables() else "")

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(1, 401):
        bx, by = mnist.train.next_batch(100)
        sess.run(train_op, {x: bx, y: by, training: True})
        if step % 100 == 0:
            print("Step %d, loss %.4f" % (step, sess.run(loss, {x: bx, y: by})))
    mm = [v for v in tf.global_variables() if v.name.endswith('moving_mean:0')][0]
    print("moving mean moved:", bool(np.abs(sess.run(mm)).sum() > 0))
    print("Test accuracy (inference):", sess.run(accuracy, {x: mnist.test.images,
                                                            y: mnist.test.labels}))
