""" Recurrent Neural Network.

A Recurrent Neural Network (LSTM) implementation example using TensorFlow library: each
28x28 image is read as 28 time steps of 28 pixels (TensorFlow-Examples' recurrent_network.py,
with tf.contrib.rnn's static_rnn). Then the cells' variables, as TF names them, and the cells'
outputs for given weights and inputs.
"""
from __future__ import print_function

import numpy as np
import tensorflow as tf
from tensorflow.contrib import rnn

# Import MNIST data
from tensorflow.examples.tutorials.mnist import input_data
mnist = input_data.read_data_sets("MNIST_data/", one_hot=True)

# Training Parameters
learning_rate = 0.01
training_steps = 300
batch_size = 128
display_step = 100

# Network Parameters
num_input = 28  # MNIST data input (img shape: 28*28)
timesteps = 28  # timesteps
num_hidden = 64  # hidden layer num of features
num_classes = 10  # MNIST total classes (0-9 digits)

# tf Graph input
X = tf.placeholder("float", [None, timesteps, num_input])
Y = tf.placeholder("float", [None, num_classes])

# Define weights
weights = {
    'out': tf.Variable(tf.random_normal([num_hidden, num_classes]))
}
biases = {
    'out': tf.Variable(tf.random_normal([num_classes]))
}


def RNN(x, weights, biases):
    # Prepare data shape to match `rnn` function requirements
    # Current data input shape: (batch_size, timesteps, n_input)
    # Required shape: 'timesteps' tensors list of shape (batch_size, n_input)

    # Unstack to get a list of 'timesteps' tensors of shape (batch_size, n_input)
    x = tf.unstack(x, timesteps, 1)

    # Define a lstm cell with tensorflow
    lstm_cell = rnn.BasicLSTMCell(num_hidden, forget_bias=1.0)

    # Get lstm cell output
    outputs, states = rnn.static_rnn(lstm_cell, x, dtype=tf.float32)

    # Linear activation, using rnn inner loop last output
    return tf.matmul(outputs[-1], weights['out']) + biases['out']


logits = RNN(X, weights, biases)
prediction = tf.nn.softmax(logits)

# Define loss and optimizer
loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(
    logits=logits, labels=Y))
optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)
train_op = optimizer.minimize(loss_op)

# Evaluate model (with test logits, for dropout to be disabled)
correct_pred = tf.equal(tf.argmax(prediction, 1), tf.argmax(Y, 1))
accuracy = tf.reduce_mean(tf.cast(correct_pred, tf.float32))

# Initialize the variables (i.e. assign their default value)
init = tf.global_variables_initializer()

# Start training
with tf.Session() as sess:

    # Run the initializer
    sess.run(init)

    for step in range(1, training_steps + 1):
        batch_x, batch_y = mnist.train.next_batch(batch_size)
        # Reshape data to get 28 seq of 28 elements
        batch_x = batch_x.reshape((batch_size, timesteps, num_input))
        # Run optimization op (backprop)
        sess.run(train_op, feed_dict={X: batch_x, Y: batch_y})
        if step % display_step == 0 or step == 1:
            # Calculate batch loss and accuracy
            loss, acc = sess.run([loss_op, accuracy], feed_dict={X: batch_x,
                                                                 Y: batch_y})
            print("Step " + str(step) + ", Minibatch Loss= " +
                  "{:.4f}".format(loss) + ", Training Accuracy= " +
                  "{:.3f}".format(acc))

    print("Optimization Finished!")

    # Calculate accuracy for 2000 mnist test images
    test_len = 2000
    test_data = mnist.test.images[:test_len].reshape((-1, timesteps, num_input))
    test_label = mnist.test.labels[:test_len]
    print("Testing Accuracy:",
          sess.run(accuracy, feed_dict={X: test_data, Y: test_label}))

# The other cells: their variables' names and shapes, and their outputs for given weights.
with tf.Graph().as_default():
    xs = [tf.placeholder(tf.float32, [None, 5], name="x%d" % t) for t in range(3)]
    stack = rnn.MultiRNNCell([rnn.GRUCell(4),
                              rnn.LSTMCell(6, use_peepholes=True, num_proj=3, cell_clip=2.0)])
    outs, state = rnn.static_rnn(stack, xs, dtype=tf.float32)
    fw, bw = rnn.BasicRNNCell(2), rnn.BasicLSTMCell(3)
    bi_outs, st_fw, st_bw = rnn.static_bidirectional_rnn(fw, bw, xs, dtype=tf.float32)
    lengths = tf.placeholder(tf.int32, [None], name="lengths")
    with tf.variable_scope("masked"):
        m_outs, m_state = tf.nn.static_rnn(tf.nn.rnn_cell.BasicRNNCell(3), xs, dtype=tf.float32,
                                           sequence_length=lengths)
    for v in tf.trainable_variables():
        print(v.name, v.get_shape().as_list())
    print("outputs", outs[-1].get_shape().as_list(), bi_outs[0].get_shape().as_list())
    rng = np.random.RandomState(7)
    with tf.Session() as sess:
        for v in tf.trainable_variables():
            sess.run(v.assign(rng.uniform(-0.5, 0.5, v.get_shape().as_list()).astype(np.float32)))
        feed = {x: rng.uniform(-1, 1, (4, 5)).astype(np.float32) for x in xs}
        feed[lengths] = np.array([3, 1, 0, 2], np.int32)
        o, s, b, sf, sb, mo, ms = sess.run([outs, state, bi_outs, st_fw, st_bw, m_outs, m_state],
                                           feed_dict=feed)
        print("multi output %.5f" % float(np.sum(o[-1])))
        print("gru state %.5f, lstm c %.5f, lstm h %.5f" % (float(np.sum(s[0])),
                                                           float(np.sum(s[1].c)),
                                                           float(np.sum(s[1].h))))
        print("bidirectional %.5f %.5f" % (float(np.sum(b[0])), float(np.sum(b[-1]))))
        print("states %.5f %.5f %.5f" % (float(np.sum(sf)), float(np.sum(sb.c)),
                                         float(np.sum(sb.h))))
        print("masked outputs", " ".join("%.5f" % float(np.sum(x)) for x in mo))
        print("masked rows zero:", bool(np.all(mo[0][2] == 0)), bool(np.all(mo[2][1] == 0)))
        print("masked state %.5f" % float(np.sum(ms)))
