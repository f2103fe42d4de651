# Distributed MNIST driven by a client, TF 0.x style (in-graph replication): the ps and worker
# processes only serve (server.join()); a separate client process, which is no task of the
# cluster, builds one graph with a tower per worker, variables on the ps and the towers'
# gradients averaged, and runs it through tf.Session("grpc://<worker 0>"). After training it
# saves a checkpoint, then a second session restores it and evaluates.
from __future__ import absolute_import, division, print_function

import argparse
import os
import sys

import numpy as np
import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data

parser = argparse.ArgumentParser()
parser.add_argument("--ps_hosts", type=str, default="localhost:2222")
parser.add_argument("--worker_hosts", type=str, default="localhost:2223,localhost:2224")
parser.add_argument("--job_name", type=str, default="client", help="ps, worker or client")
parser.add_argument("--task_index", type=int, default=0)
parser.add_argument("--data_dir", type=str, default="/tmp/mnist-data")
parser.add_argument("--train_steps", type=int, default=300)
parser.add_argument("--batch_size", type=int, default=50)
parser.add_argument("--hidden_units", type=int, default=128)
parser.add_argument("--checkpoint_dir", type=str, default="/tmp/client_driver")
FLAGS, _ = parser.parse_known_args()


def tower(x, y_, weights):
    hid_w, hid_b, sm_w, sm_b = weights
    hid = tf.nn.relu(tf.nn.xw_plus_b(x, hid_w, hid_b))
    logits = tf.nn.xw_plus_b(hid, sm_w, sm_b)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))
    return logits, loss


def main():
    ps_hosts = FLAGS.ps_hosts.split(",")
    worker_hosts = FLAGS.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})

    if FLAGS.job_name in ("ps", "worker"):
        server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
        print("%s %d serving" % (FLAGS.job_name, FLAGS.task_index))
        sys.stdout.flush()
        server.join()
        return

    mnist = input_data.read_data_sets(FLAGS.data_dir, one_hot=True)
    num_workers = len(worker_hosts)
    tf.set_random_seed(1)

    with tf.device("/job:ps/task:0"):
        global_step = tf.Variable(0, name="global_step", trainable=False)
        hid_w = tf.Variable(tf.truncated_normal([784, FLAGS.hidden_units], stddev=1.0 / 28,
                                                seed=2), name="hid_w")
        hid_b = tf.Variable(tf.zeros([FLAGS.hidden_units]), name="hid_b")
        sm_w = tf.Variable(tf.truncated_normal([FLAGS.hidden_units, 10],
                                               stddev=1.0 / np.sqrt(FLAGS.hidden_units), seed=3),
                           name="sm_w")
        sm_b = tf.Variable(tf.zeros([10]), name="sm_b")
    weights = [hid_w, hid_b, sm_w, sm_b]
    opt = tf.train.GradientDescentOptimizer(0.5)

    inputs, tower_grads, losses = [], [], []
    for i in range(num_workers):
        with tf.device("/job:worker/task:%d" % i):
            with tf.name_scope("tower_%d" % i):
                x = tf.placeholder(tf.float32, [None, 784], name="x")
                y_ = tf.placeholder(tf.float32, [None, 10], name="y")
                _, loss = tower(x, y_, weights)
                inputs.append((x, y_))
                losses.append(loss)
                tower_grads.append(opt.compute_gradients(loss, var_list=weights))

    with tf.device("/job:ps/task:0"):
        avg = []
        for grads_and_vars in zip(*tower_grads):
            g = tf.add_n([g for g, _ in grads_and_vars]) / float(num_workers)
            avg.append((g, grads_and_vars[0][1]))
        train_op = opt.apply_gradients(avg, global_step=global_step)
        mean_loss = tf.add_n(losses) / float(num_workers)

    with tf.device("/job:worker/task:0"):
        ex = tf.placeholder(tf.float32, [None, 784], name="eval_x")
        ey = tf.placeholder(tf.float32, [None, 10], name="eval_y")
        logits, _ = tower(ex, ey, weights)
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), tf.argmax(ey, 1)),
                                          tf.float32))

    saver = tf.train.Saver()
    init = tf.global_variables_initializer()
    target = "grpc://" + worker_hosts[0]
    print("client: session on %s" % target)

    with tf.Session(target) as sess:
        sess.run(init)
        for step in range(1, FLAGS.train_steps + 1):
            feed = {}
            for x, y_ in inputs:
                bx, by = mnist.train.next_batch(FLAGS.batch_size)
                feed[x], feed[y_] = bx, by
            _, l, gs = sess.run([train_op, mean_loss, global_step], feed_dict=feed)
            if step % 100 == 0:
                print("step %d: global step %d, loss %.4f" % (step, gs, l))
        acc = sess.run(accuracy, feed_dict={ex: mnist.test.images, ey: mnist.test.labels})
        print("trained accuracy %.4f after %d steps" % (acc, sess.run(global_step)))
        if not os.path.isdir(FLAGS.checkpoint_dir):
            os.makedirs(FLAGS.checkpoint_dir)
        path = saver.save(sess, os.path.join(FLAGS.checkpoint_dir, "model.ckpt"),
                          global_step=global_step)
        print("saved %s" % os.path.basename(path))

    with tf.Session(target) as sess:
        sess.run(init)  # the variables live on the ps: start them over, then restore
        acc0 = sess.run(accuracy, feed_dict={ex: mnist.test.images, ey: mnist.test.labels})
        print("reinitialized accuracy below 0.5: %s" % (acc0 < 0.5))
        saver.restore(sess, tf.train.latest_checkpoint(FLAGS.checkpoint_dir))
        acc2 = sess.run(accuracy, feed_dict={ex: mnist.test.images, ey: mnist.test.labels})
        print("restored accuracy %.4f at global step %d" % (acc2, sess.run(global_step)))


if __name__ == "__main__":
    main()
