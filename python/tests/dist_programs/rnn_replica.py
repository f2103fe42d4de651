# Between-graph replication of a recurrent model: an LSTM (tf.nn.dynamic_rnn) reads each
# Fashion-MNIST image as 28 rows of 28 pixels on the worker, its weights on the ps through
# replica_device_setter, trained asynchronously with tf.train.MonitoredTrainingSession and a
# StopAtStepHook, as the TF 1.x distributed how-to writes trainers. The loop runs on the worker;
# the weights it reads come from the ps once per step.
import argparse
import sys

import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data

FLAGS = None


def main(_):
    cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                                    "worker": FLAGS.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return
    mnist = input_data.read_data_sets(FLAGS.data_dir, one_hot=True)
    is_chief = FLAGS.task_index == 0
    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % FLAGS.task_index, cluster=cluster)):
        x = tf.placeholder(tf.float32, [None, 28, 28])
        y_ = tf.placeholder(tf.float32, [None, 10])
        cell = tf.nn.rnn_cell.BasicLSTMCell(32)
        outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        logits = tf.layers.dense(state.h, 10)
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)
    print("variables: %s" % ", ".join("%s@%s" % (v.op.name, v.device.split("/")[1])
                                      for v in tf.trainable_variables()))
    hooks = [tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]
    local_step = 0
    config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % FLAGS.task_index])
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief,
                                           hooks=hooks, config=config) as sess:
        while not sess.should_stop():
            batch_xs, batch_ys = mnist.train.next_batch(FLAGS.batch_size)
            _, step, l = sess.run([train_op, global_step, loss],
                                  feed_dict={x: batch_xs.reshape(-1, 28, 28), y_: batch_ys})
            local_step += 1
            if local_step % 50 == 0:
                print("worker %d: local step %d, global step %d, loss %.4f" %
                      (FLAGS.task_index, local_step, step, l))
                sys.stdout.flush()
    print("worker %d: done after %d local steps" % (FLAGS.task_index, local_step))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ps_hosts", type=str, default="")
    parser.add_argument("--worker_hosts", type=str, default="")
    parser.add_argument("--job_name", type=str, default="")
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--data_dir", type=str, default="/tmp/mnist_data")
    parser.add_argument("--train_steps", type=int, default=300)
    parser.add_argument("--batch_size", type=int, default=64)
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
