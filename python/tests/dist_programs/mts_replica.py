# Between-graph replication with tf.train.MonitoredTrainingSession, as the TF 1.x distributed
# how-to and the trainers that follow it write it: a softmax-regression-plus-hidden-layer model
# on the MNIST tutorial's input_data, variables on the ps through replica_device_setter, a
# StopAtStepHook, --sync_replicas through SyncReplicasOptimizer.make_session_run_hook, and
# device_filters so that a worker talks only to the ps and itself.
import argparse
import sys

import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data

FLAGS = None


def main(_):
    ps_hosts = FLAGS.ps_hosts.split(",")
    worker_hosts = FLAGS.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)

    if FLAGS.job_name == "ps":
        server.join()
    elif FLAGS.job_name == "worker":
        mnist = input_data.read_data_sets(FLAGS.data_dir, one_hot=True)
        is_chief = FLAGS.task_index == 0
        with tf.device(tf.train.replica_device_setter(
                worker_device="/job:worker/task:%d" % FLAGS.task_index, cluster=cluster)):
            x = tf.placeholder(tf.float32, [None, 784])
            y_ = tf.placeholder(tf.float32, [None, 10])
            w1 = tf.Variable(tf.truncated_normal([784, 128], stddev=0.1), name="w1")
            b1 = tf.Variable(tf.zeros([128]), name="b1")
            w2 = tf.Variable(tf.truncated_normal([128, 10], stddev=0.1), name="w2")
            b2 = tf.Variable(tf.zeros([10]), name="b2")
            hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
            logits = tf.matmul(hidden, w2) + b2
            loss = tf.reduce_mean(
                tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))
            correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y_, 1))
            accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
            tf.summary.scalar("loss", loss)
            global_step = tf.train.get_or_create_global_step()
            opt = tf.train.AdamOptimizer(1e-3)
            if FLAGS.sync_replicas:
                opt = tf.train.SyncReplicasOptimizer(opt,
                                                     replicas_to_aggregate=len(worker_hosts),
                                                     total_num_replicas=len(worker_hosts))
            train_op = opt.minimize(loss, global_step=global_step)

        hooks = [tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]
        if FLAGS.sync_replicas:
            hooks.append(opt.make_session_run_hook(is_chief))
        config = tf.ConfigProto(allow_soft_placement=True,
                                device_filters=["/job:ps",
                                                "/job:worker/task:%d" % FLAGS.task_index])
        local_step = 0
        with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief,
                                               checkpoint_dir=FLAGS.checkpoint_dir if is_chief else None,
                                               hooks=hooks, config=config,
                                               save_checkpoint_secs=None,
                                               save_checkpoint_steps=FLAGS.train_steps // 2) as sess:
            while not sess.should_stop():
                batch_xs, batch_ys = mnist.train.next_batch(FLAGS.batch_size)
                _, step, l = sess.run([train_op, global_step, loss],
                                      feed_dict={x: batch_xs, y_: batch_ys})
                local_step += 1
                if local_step % 100 == 0:
                    print("worker %d: local step %d, global step %d, loss %.4f" %
                          (FLAGS.task_index, local_step, step, l))
                    sys.stdout.flush()
        print("worker %d: done after %d local steps" % (FLAGS.task_index, local_step))
        # evaluate the trained model from the chief's last checkpoint, as a separate session
        if is_chief:
            tf.reset_default_graph()
            print("checkpoint: %s" % tf.train.latest_checkpoint(FLAGS.checkpoint_dir).split("/")[-1])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.register("type", "bool", lambda v: v.lower() == "true")
    parser.add_argument("--ps_hosts", type=str, default="")
    parser.add_argument("--worker_hosts", type=str, default="")
    parser.add_argument("--job_name", type=str, default="")
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--data_dir", type=str, default="/tmp/mnist_data")
    parser.add_argument("--checkpoint_dir", type=str, default="/tmp/train_logs")
    parser.add_argument("--train_steps", type=int, default=1000)
    parser.add_argument("--batch_size", type=int, default=100)
    parser.add_argument("--sync_replicas", type="bool", nargs="?", const=True, default=False)
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
