"""Random ops with graph-level and op-level seeds: what repeats, what does not,
and the statistics of each distribution."""
from __future__ import print_function

import numpy as np
import tensorflow as tf

tf.set_random_seed(1234)
a = tf.random_normal([20000], mean=1.0, stddev=2.0, seed=1)
b = tf.random_uniform([20000], minval=-1, maxval=3, seed=2)
c = tf.truncated_normal([20000], stddev=0.5, seed=3)
d = tf.random_uniform([20000], minval=0, maxval=10, dtype=tf.int32, seed=4)
e = tf.multinomial(tf.log([[0.1, 0.2, 0.7]]), 20000, seed=5)
f = tf.random_shuffle(tf.range(10), seed=6)

with tf.Session() as sess:
    va, vb, vc, vd, ve, vf = sess.run([a, b, c, d, e, f])
    va2 = sess.run(a)
    print("normal mean %.1f std %.1f" % (va.mean(), va.std()))
    print("uniform min %.1f max %.1f mean %.1f" % (va.min() * 0 + vb.min(), vb.max(), vb.mean()))
    print("truncated within 2 std:", bool(np.abs(vc).max() <= 1.0), "std %.2f" % vc.std())
    print("uniform int range:", vd.min(), vd.max(), "dtype", vd.dtype)
    print("multinomial frequencies:", np.round(np.bincount(ve[0], minlength=3) / 20000., 1))
    print("shuffle is a permutation:", sorted(vf.tolist()) == list(range(10)))
    print("a second run draws new values:", bool((va != va2).any()))

# The same seeds in a new session repeat the same values
with tf.Session() as sess:
    print("a new session repeats:", bool((sess.run(a) == va).all()))
