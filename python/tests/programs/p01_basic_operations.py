'''
Basic Operations example using TensorFlow library.
'''
from __future__ import print_function

import tensorflow as tf

# Basic constant operations
# The value returned by the constructor represents the output
# of the Constant op.
a = tf.constant(2)
b = tf.constant(3)

# Launch the default graph.
with tf.Session() as sess:
    print("a=2, b=3")
    print("Addition with constants: %i" % sess.run(a+b))
    print("Multiplication with constants: %i" % sess.run(a*b))

# Basic Operations with variable as graph input
a = tf.placeholder(tf.int16)
b = tf.placeholder(tf.int16)

add = tf.add(a, b)
mul = tf.multiply(a, b)

with tf.Session() as sess:
    print("Addition with variables: %i" % sess.run(add, feed_dict={a: 2, b: 3}))
    print("Multiplication with variables: %i" % sess.run(mul, feed_dict={a: 2, b: 3}))

# Matrix Multiplication
matrix1 = tf.constant([[3., 3.]])
matrix2 = tf.constant([[2.], [2.]])
product = tf.matmul(matrix1, matrix2)

with tf.Session() as sess:
    result = sess.run(product)
    print(result)

# A few more of the everyday ops
x = tf.constant([[1., -2., 3.], [-4., 5., -6.]])
with tf.Session() as sess:
    print("abs:", sess.run(tf.abs(x)))
    print("pow:", sess.run(tf.pow(x, 2)))
    print("max over rows:", sess.run(tf.reduce_max(x, axis=1)))
    print("min:", sess.run(tf.reduce_min(x)))
    print("argmin:", sess.run(tf.argmin(x, 1)))
    print("transpose:", sess.run(tf.transpose(x)))
    print("concat:", sess.run(tf.concat([x, x], 0)).shape)
    print("stack:", sess.run(tf.stack([x, x], axis=1)).shape)
    print("range:", sess.run(tf.range(0, 10, 3)))
    print("where:", sess.run(tf.where(x > 0, x, tf.zeros_like(x))))
    print("one_hot:", sess.run(tf.one_hot([0, 2], 3)))
    print("gather:", sess.run(tf.gather(x, [1, 0])))
    print("cast:", sess.run(tf.cast(x, tf.int32)))
