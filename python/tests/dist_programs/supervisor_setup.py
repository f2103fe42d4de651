# A between-graph trainer set up at module level, as blog posts and setup scripts write it:
# flags, a cluster, a Server, variables on the ps through replica_device_setter, a Supervisor
# and managed_session; a linear model y = 2x + 10 fit with SGD from numpy batches.
import numpy as np
import tensorflow as tf

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("worker_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
flags.DEFINE_integer("task_index", 0, "Index of task within the job")
flags.DEFINE_string("logdir", "/tmp/train_logs", "Where the chief writes checkpoints")
flags.DEFINE_integer("steps", 1000, "Global steps to train")
FLAGS = flags.FLAGS
FLAGS(__import__("sys").argv)

ps_hosts = FLAGS.ps_hosts.split(",")
worker_hosts = FLAGS.worker_hosts.split(",")
cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)

if FLAGS.job_name == "ps":
    server.join()

with tf.device(tf.train.replica_device_setter(
        worker_device="/job:worker/task:%d" % FLAGS.task_index, cluster=cluster)):
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.placeholder(tf.float32, [None], name="y")
    w = tf.Variable(0.0, name="weight")
    b = tf.Variable(0.0, name="bias")
    loss = tf.reduce_mean(tf.square(w * x + b - y))
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=global_step)
    init_op = tf.global_variables_initializer()

sv = tf.train.Supervisor(is_chief=(FLAGS.task_index == 0), logdir=FLAGS.logdir,
                         init_op=init_op, global_step=global_step, save_model_secs=600)

rng = np.random.RandomState(FLAGS.task_index)
with sv.managed_session(server.target) as sess:
    step = 0
    while not sv.should_stop() and step < FLAGS.steps:
        xs = rng.uniform(-1, 1, 32).astype(np.float32)
        _, step, l = sess.run([train_op, global_step, loss], feed_dict={x: xs, y: 2 * xs + 10})
        if step % 200 == 0:
            print("step %d loss %.4f" % (step, l))
    print("worker %d done at step %d: weight %.2f bias %.2f" %
          (FLAGS.task_index, step, sess.run(w), sess.run(b)))
