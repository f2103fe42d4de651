"""Evaluating a classifier with tf.metrics: streaming accuracy, precision,
recall, AUC and mean over batches, with local variables and update ops."""
from __future__ import print_function

import numpy as np
import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data

mnist = input_data.read_data_sets("MNIST_data/", one_hot=False)

x = tf.placeholder(tf.float32, [None, 784])
y = tf.placeholder(tf.int64, [None])

W = tf.Variable(tf.zeros([784, 10]))
b = tf.Variable(tf.zeros([10]))
logits = tf.matmul(x, W) + b
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

predictions = tf.argmax(logits, 1)
# Is it a shoe (classes 5, 7, 9 of Fashion-MNIST; digits 5, 7, 9 of MNIST)?
is_shoe = tf.logical_or(tf.equal(y, 5), tf.logical_or(tf.equal(y, 7), tf.equal(y, 9)))
prob_shoe = tf.reduce_sum(tf.nn.softmax(logits) * tf.constant([0, 0, 0, 0, 0, 1, 0, 1, 0, 1],
                                                              tf.float32), axis=1)
pred_shoe = prob_shoe > 0.5

with tf.name_scope("eval"):
    acc, acc_update = tf.metrics.accuracy(labels=y, predictions=predictions)
    prec, prec_update = tf.metrics.precision(labels=is_shoe, predictions=pred_shoe)
    rec, rec_update = tf.metrics.recall(labels=is_shoe, predictions=pred_shoe)
    auc, auc_update = tf.metrics.auc(labels=is_shoe, predictions=prob_shoe)
    mean_loss, mean_update = tf.metrics.mean(loss)
updates = tf.group(acc_update, prec_update, rec_update, auc_update, mean_update)

print("Local variables:", sorted(v.name for v in tf.local_variables()))

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(300):
        bx, by = mnist.train.next_batch(1000)
        sess.run(train, {x: bx, y: by})
    sess.run(tf.local_variables_initializer())
    for i in range(0, 10000, 1000):
        sess.run(updates, {x: mnist.test.images[i:i + 1000], y: mnist.test.labels[i:i + 1000]})
    a, p, r, u, m = sess.run([acc, prec, rec, auc, mean_loss])
    print("Accuracy: %.4f" % a)
    print("Precision: %.4f" % p)
    print("Recall: %.4f" % r)
    print("AUC: %.4f" % u)
    print("Mean loss: %.4f" % m)
    # Restart the streaming metrics
    sess.run(tf.local_variables_initializer())
    print("After reset:", sess.run(acc))
