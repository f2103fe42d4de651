# Synchronous replicas where one worker stops early: worker 1 trains --worker_steps global
# steps and leaves its managed_session (sv.stop()); the chief wants --chief_steps. With
# replicas_to_aggregate = 2, the chief's next step can never get its second gradient: on
# TensorFlow the chief waits for its token forever.
import numpy as np
import tensorflow as tf

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "", "")
flags.DEFINE_string("worker_hosts", "", "")
flags.DEFINE_string("job_name", "", "")
flags.DEFINE_integer("task_index", 0, "")
flags.DEFINE_integer("chief_steps", 200, "")
flags.DEFINE_integer("worker_steps", 20, "")
FLAGS = flags.FLAGS


def main(_):
    cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                                    "worker": FLAGS.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
    is_chief = FLAGS.task_index == 0
    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % FLAGS.task_index, cluster=cluster)):
        x = tf.placeholder(tf.float32, [None])
        w = tf.Variable(0.0)
        loss = tf.reduce_mean(tf.square(w * x - 3 * x))
        gs = tf.train.get_or_create_global_step()
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                             replicas_to_aggregate=2, total_num_replicas=2)
        train = opt.minimize(loss, global_step=gs)
        local_init = opt.chief_init_op if is_chief else opt.local_step_init_op
    sv = tf.train.Supervisor(is_chief=is_chief, init_op=tf.global_variables_initializer(),
                             local_init_op=local_init,
                             ready_for_local_init_op=opt.ready_for_local_init_op,
                             recovery_wait_secs=1, global_step=gs)
    want = FLAGS.chief_steps if is_chief else FLAGS.worker_steps
    step = 0
    with sv.managed_session(server.target) as sess:
        if is_chief:
            sess.run(opt.get_init_tokens_op())
            sv.start_queue_runners(sess, [opt.get_chief_queue_runner()])
        while not sv.should_stop() and step < want:
            _, step = sess.run([train, gs], feed_dict={x: np.random.uniform(-1, 1, 8)})
    print("worker %d done at global step %d" % (FLAGS.task_index, step))


if __name__ == "__main__":
    tf.app.run()
