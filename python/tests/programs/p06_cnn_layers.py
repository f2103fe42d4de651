""" Convolutional Neural Network with tf.layers.

Two convolution layers with max pooling, a dense layer with dropout that is on only
while training (a boolean placeholder), trained on MNIST.
"""
from __future__ import print_function

import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data

mnist = input_data.read_data_sets("MNIST_data/", one_hot=True)

learning_rate = 0.001
num_steps = 300
batch_size = 64
dropout = 0.25

x = tf.placeholder(tf.float32, [None, 784])
y = tf.placeholder(tf.float32, [None, 10])
is_training = tf.placeholder(tf.bool, [])


def conv_net(x, n_classes, dropout, is_training):
    with tf.variable_scope('ConvNet'):
        # MNIST data input is a 1-D vector of 784 features (28*28 pixels)
        # Reshape to match picture format [Height x Width x Channel]
        x = tf.reshape(x, shape=[-1, 28, 28, 1])
        conv1 = tf.layers.conv2d(x, 32, 5, activation=tf.nn.relu)
        conv1 = tf.layers.max_pooling2d(conv1, 2, 2)
        conv2 = tf.layers.conv2d(conv1, 64, 3, activation=tf.nn.relu)
        conv2 = tf.layers.max_pooling2d(conv2, 2, 2)
        fc1 = tf.contrib.layers.flatten(conv2)
        fc1 = tf.layers.dense(fc1, 256)
        fc1 = tf.layers.dropout(fc1, rate=dropout, training=is_training)
        out = tf.layers.dense(fc1, n_classes)
    return out


logits = conv_net(x, 10, dropout, is_training)
print("logits:", logits.shape)
for v in tf.global_variables():
    print(v.name, v.shape)

loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(logits=logits, labels=y))
train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss_op)
correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y, 1))
accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(1, num_steps + 1):
        batch_x, batch_y = mnist.train.next_batch(batch_size)
        sess.run(train_op, feed_dict={x: batch_x, y: batch_y, is_training: True})
        if step % 100 == 0:
            loss = sess.run(loss_op, feed_dict={x: batch_x, y: batch_y, is_training: False})
            print("Step %d, Minibatch Loss= %.4f" % (step, loss))
    print("Optimization Finished!")
    print("Testing Accuracy:", sess.run(accuracy, feed_dict={x: mnist.test.images[:2000],
                                                             y: mnist.test.labels[:2000],
                                                             is_training: False}))
