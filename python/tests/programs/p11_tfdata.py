""" TensorFlow Dataset API.

Build an input pipeline with tf.data that feeds a small network: slices of numpy
arrays, shuffled, batched, repeated and prefetched, read through an iterator.
"""
from __future__ import print_function

import numpy as np
import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data

mnist = input_data.read_data_sets("MNIST_data/", one_hot=True)

learning_rate = 0.001
num_steps = 500
batch_size = 128
display_step = 100

# A pipeline of the training set
dataset = tf.data.Dataset.from_tensor_slices((mnist.train.images, mnist.train.labels))
dataset = dataset.repeat()
dataset = dataset.shuffle(buffer_size=1000)
dataset = dataset.batch(batch_size)
dataset = dataset.prefetch(batch_size)
print("types:", dataset.output_types)
print("shapes:", dataset.output_shapes)

iterator = dataset.make_one_shot_iterator()
X, Y = iterator.get_next()

# A small network
W1 = tf.Variable(tf.truncated_normal([784, 128], stddev=0.1))
b1 = tf.Variable(tf.zeros([128]))
W2 = tf.Variable(tf.truncated_normal([128, 10], stddev=0.1))
b2 = tf.Variable(tf.zeros([10]))
logits = tf.matmul(tf.nn.relu(tf.matmul(X, W1) + b1), W2) + b2

loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(logits=logits, labels=Y))
train_op = tf.train.AdamOptimizer(learning_rate=learning_rate).minimize(loss_op)
accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(Y, 1)), tf.float32))

# A dataset of the test set, mapped, through an initializable iterator
test = tf.data.Dataset.from_tensor_slices((mnist.test.images, mnist.test.labels))
test = test.map(lambda x, y: (x * 2.0 - 1.0, y)).batch(1000)
test_it = test.make_initializable_iterator()
tx, ty = test_it.get_next()

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(1, num_steps + 1):
        sess.run(train_op)
        if step % display_step == 0 or step == 1:
            loss, acc = sess.run([loss_op, accuracy])
            print("Step " + str(step) + ", Minibatch Loss= " + "{:.4f}".format(loss) +
                  ", Training Accuracy= " + "{:.3f}".format(acc))
    print("Optimization Finished!")
    # Any tensor can be fed, the iterator's outputs too: the test set through the same network
    print("Testing Accuracy:", sess.run(accuracy, feed_dict={X: mnist.test.images,
                                                             Y: mnist.test.labels}))

    # Count the test batches until the end of the dataset
    sess.run(test_it.initializer)
    n, total = 0, 0.0
    while True:
        try:
            a, b = sess.run([tx, ty])
        except tf.errors.OutOfRangeError:
            break
        n += 1
        total += float(a.sum())
    print("Test batches:", n, "sum of mapped pixels:", round(total, 1))

    # Small deterministic pipelines
    ds = tf.data.Dataset.range(10).map(lambda x: x * x).filter(lambda x: tf.equal(x % 2, 0)).batch(2)
    nxt = ds.make_one_shot_iterator().get_next()
    out = []
    try:
        while True:
            out.append(sess.run(nxt).tolist())
    except tf.errors.OutOfRangeError:
        pass
    print("squares:", out)
    z = tf.data.Dataset.zip((tf.data.Dataset.range(3), tf.data.Dataset.from_tensors([7, 8]).repeat(3)))
    zi = z.make_one_shot_iterator().get_next()
    print("zip:", [tuple(np.asarray(v).tolist() for v in sess.run(zi)) for _ in range(3)])
    t = tf.data.Dataset.range(100).skip(5).take(3).batch(3, drop_remainder=True)
    print("skip/take:", sess.run(t.make_one_shot_iterator().get_next()))
