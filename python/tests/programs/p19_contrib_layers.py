"""A CNN built with tf.contrib.layers, regularised with an l2 regularizer,
trained on the total loss from tf.losses."""
from __future__ import print_function

import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data

mnist = input_data.read_data_sets("MNIST_data/", one_hot=True)

x = tf.placeholder(tf.float32, [None, 784])
y_ = tf.placeholder(tf.float32, [None, 10])
keep_prob = tf.placeholder(tf.float32)

regularizer = tf.contrib.layers.l2_regularizer(scale=1e-4)
images = tf.reshape(x, [-1, 28, 28, 1])
net = tf.contrib.layers.conv2d(images, 16, [5, 5], weights_regularizer=regularizer)
net = tf.contrib.layers.max_pool2d(net, [2, 2])
net = tf.contrib.layers.conv2d(net, 32, [5, 5], weights_regularizer=regularizer)
net = tf.contrib.layers.max_pool2d(net, [2, 2])
net = tf.contrib.layers.flatten(net)
net = tf.contrib.layers.fully_connected(net, 128,
                                        weights_initializer=tf.contrib.layers.xavier_initializer(),
                                        weights_regularizer=regularizer)
net = tf.nn.dropout(net, keep_prob)
logits = tf.contrib.layers.fully_connected(net, 10, activation_fn=None)

tf.losses.softmax_cross_entropy(onehot_labels=y_, logits=logits)
total_loss = tf.losses.get_total_loss()
print("regularization losses:", len(tf.losses.get_regularization_losses()))
global_step = tf.contrib.framework.get_or_create_global_step()
train_step = tf.train.AdamOptimizer(1e-3).minimize(total_loss, global_step=global_step)
correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y_, 1))
accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))

for v in tf.trainable_variables():
    print(v.name, v.shape)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(300):
        batch = mnist.train.next_batch(64)
        if i % 100 == 0:
            print("step %d, training accuracy %g" % (i, accuracy.eval(
                feed_dict={x: batch[0], y_: batch[1], keep_prob: 1.0})))
        train_step.run(feed_dict={x: batch[0], y_: batch[1], keep_prob: 0.5})
    print("global step:", sess.run(global_step))
    print("test accuracy %g" % accuracy.eval(feed_dict={
        x: mnist.test.images[:2000], y_: mnist.test.labels[:2000], keep_prob: 1.0}))
