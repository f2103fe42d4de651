""" Dynamic Recurrent Neural Networks on Fashion-MNIST rows.

Each 28x28 image is read as 28 time steps of 28 pixels by an LSTM in tf.nn.dynamic_rnn (the
published dynamic-RNN examples' shape: [batch, time, input] in, the last output to a dense
layer), trained with Adam from weights drawn with numpy; then a GRU classifier over the same rows with tf.nn.dynamic_rnn and
sequence_length (every image cut to its first 20 rows), trained with plain SGD, and the gradient of a tf.while_loop
checked against finite differences.
"""
from __future__ import print_function

import numpy as np
import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data

mnist = input_data.read_data_sets("MNIST_data/", one_hot=True, seed=1)

learning_rate = 0.01
training_steps = 200
batch_size = 128
display_step = 50
num_input, timesteps, num_hidden, num_classes = 28, 28, 64, 10

X = tf.placeholder("float", [None, timesteps, num_input])
Y = tf.placeholder("float", [None, num_classes])
seqlen = tf.placeholder(tf.int32, [None])

lstm_cell = tf.nn.rnn_cell.BasicLSTMCell(num_hidden, forget_bias=1.0)
outputs, states = tf.nn.dynamic_rnn(lstm_cell, X, dtype=tf.float32)
logits = tf.layers.dense(outputs[:, -1, :], num_classes)
loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=Y))
train_op = tf.train.AdamOptimizer(learning_rate=learning_rate).minimize(loss_op)
accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(Y, 1)), tf.float32))

with tf.variable_scope("gru"):
    gru_out, gru_state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(32), X, dtype=tf.float32,
                                           sequence_length=seqlen)
    gru_logits = tf.layers.dense(gru_state, num_classes)
gru_loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=gru_logits, labels=Y))
gru_train = tf.train.GradientDescentOptimizer(learning_rate=0.5).minimize(gru_loss)
gru_accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(gru_logits, 1), tf.argmax(Y, 1)),
                                      tf.float32))

for v in tf.trainable_variables():
    print(v.name, v.shape.as_list())

test_x = mnist.test.images[:1000].reshape((-1, timesteps, num_input))
test_y = mnist.test.labels[:1000]
rng = np.random.RandomState(7)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    # the same starting weights under any runtime (the variables in creation order)
    for v in tf.trainable_variables():
        sess.run(v.assign(rng.uniform(-0.2, 0.2, v.shape.as_list()).astype(np.float32)))
    first_x = mnist.test.images[:batch_size].reshape((-1, timesteps, num_input))
    print("Initial loss= {:.5f}".format(sess.run(loss_op, feed_dict={
        X: first_x, Y: mnist.test.labels[:batch_size]})))
    for step in range(1, training_steps + 1):
        batch_x, batch_y = mnist.train.next_batch(batch_size)
        batch_x = batch_x.reshape((batch_size, timesteps, num_input))
        sess.run(train_op, feed_dict={X: batch_x, Y: batch_y})
        if step % display_step == 0 or step == 1:
            loss, acc = sess.run([loss_op, accuracy], feed_dict={X: batch_x, Y: batch_y})
            print("Step " + str(step) + ", Minibatch Loss= " + "{:.4f}".format(loss) +
                  ", Training Accuracy= " + "{:.3f}".format(acc))
    print("LSTM Testing Accuracy:", sess.run(accuracy, feed_dict={X: test_x, Y: test_y}))
    lengths = np.full([batch_size], 20, np.int32)
    print("GRU initial loss= {:.5f}".format(sess.run(gru_loss, feed_dict={
        X: first_x, Y: mnist.test.labels[:batch_size], seqlen: lengths})))
    for step in range(1, 101):
        batch_x, batch_y = mnist.train.next_batch(batch_size)
        batch_x = batch_x.reshape((batch_size, timesteps, num_input))
        sess.run(gru_train, feed_dict={X: batch_x, Y: batch_y, seqlen: lengths})
    print("GRU Testing Accuracy:", sess.run(gru_accuracy, feed_dict={
        X: test_x, Y: test_y, seqlen: np.full([1000], 20, np.int32)}))

# the gradient of a while_loop against finite differences
tf.reset_default_graph()
x = tf.placeholder(tf.float64, [3], name="x")
w = tf.constant([[0.5, -0.3, 0.2], [0.1, 0.4, -0.6], [-0.2, 0.3, 0.7]], tf.float64)
_, h = tf.while_loop(lambda i, h: i < 5,
                     lambda i, h: (i + 1, tf.tanh(tf.matmul(tf.expand_dims(h, 0), w)[0] + x)),
                     (tf.constant(0), x))
y = tf.reduce_sum(h * h)
dydx = tf.gradients(y, x)[0]
with tf.Session() as sess:
    x0 = np.array([0.3, -0.8, 0.5])
    g = sess.run(dydx, {x: x0})
    fd = np.zeros(3)
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1e-6
        fd[k] = (sess.run(y, {x: x0 + e}) - sess.run(y, {x: x0 - e})) / 2e-6
    print("while_loop gradient", np.round(g, 6).tolist())
    print("finite differences agree:", bool(np.allclose(g, fd, atol=1e-6)))
