#!/usr/bin/env python3
"""Writes the golden TensorFlow checkpoint that tests/train/test_checkpoint.c reads.

Run once with real TensorFlow (the project's .venv has tensorflow-cpu) and commit the output:

    cd tests/interop/data/tf_ckpt && ../../../../.venv/bin/python ../../make_tf_checkpoint.py

It builds a TF1-style graph (tf.compat.v1, graph mode, reference variables) holding one variable
of each dtype rill has and saves it twice with tf.compat.v1.train.Saver in the V2 format: step 50
(global_step 1200) and step 100 (global_step 1234, the values the test checks). The save path is
relative ("./model.ckpt"), so the `checkpoint` state file holds relative paths, as TF writes them
for a relative directory. No meta graph is written, to keep the files small.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

v1 = tf.compat.v1
v1.disable_eager_execution()
v1.disable_resource_variables()


def build():
    v1.Variable(2.5, dtype=tf.float32, name="weight")
    v1.Variable(10.0, dtype=tf.float32, name="biase")
    step = v1.Variable(1200, dtype=tf.int64, name="global_step")
    with v1.variable_scope("layer"):
        v1.Variable(np.array([[1, 2, 3], [4, 5, 6.5]], np.float32), name="w")
    v1.Variable(np.array([0.1, -2.0, 1e300], np.float64), name="d")
    v1.Variable(np.array([1, -2, 2147483647, -2147483648], np.int32), name="i")
    v1.Variable(np.array([1.5, -0.25], np.float16), name="h")
    v1.Variable(np.array([True, False, True]), name="b")
    v1.Variable(np.array([b"a", b"", b"hello"]), dtype=tf.string, name="s")
    v1.Variable(np.zeros([0], np.float32), name="empty")
    v1.Variable(np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4), name="rank4")
    return step


def main():
    with tf.Graph().as_default():
        step = build()
        saver = v1.train.Saver(write_version=v1.train.SaverDef.V2)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            saver.save(sess, "./model.ckpt", global_step=50, write_meta_graph=False)
            sess.run(step.assign(1234))
            saver.save(sess, "./model.ckpt", global_step=100, write_meta_graph=False)


if __name__ == "__main__":
    main()
