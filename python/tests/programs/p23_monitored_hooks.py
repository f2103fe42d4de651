# tf.train.MonitoredTrainingSession with the standard hooks and a hook of one's own, as
# TF 1.x tutorials on hooks write it: linear regression to y = 3x + 2, checkpoints and
# summaries into a directory, a restart that resumes from the checkpoint, a NaN that stops
# training with NanLossDuringTrainingError.
import os
import shutil

import numpy as np
import tensorflow as tf

tf.logging.set_verbosity(tf.logging.WARN)
np.random.seed(0)
ckpt_dir = "hooks_ckpt"
shutil.rmtree(ckpt_dir, ignore_errors=True)


class PrintEveryHook(tf.train.SessionRunHook):
    """Fetches the loss every run, prints it every 50 runs, and counts the runs."""

    def __init__(self, loss):
        self.loss = loss

    def begin(self):
        self.runs = 0
        print("hook begin")

    def after_create_session(self, session, coord):
        print("session created, coordinator", type(coord).__name__)

    def before_run(self, run_context):
        return tf.train.SessionRunArgs({"loss": self.loss})

    def after_run(self, run_context, run_values):
        self.runs += 1
        if self.runs % 50 == 0:
            print("run %d loss %.4f" % (self.runs, run_values.results["loss"]))

    def end(self, session):
        print("hook end after %d runs" % self.runs)


def build():
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.placeholder(tf.float32, [None], name="y")
    w = tf.Variable(0.0, name="w")
    b = tf.Variable(0.0, name="b")
    loss = tf.reduce_mean(tf.square(w * x + b - y), name="loss")
    tf.summary.scalar("loss", loss)
    gs = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
    return x, y, w, b, loss, gs, train


def feed(x, y):
    xs = np.random.uniform(-1, 1, 32).astype(np.float32)
    return {x: xs, y: 3 * xs + 2}


x, y, w, b, loss, gs, train = build()
mine = PrintEveryHook(loss)
final = tf.train.FinalOpsHook([w, b])
hooks = [tf.train.StopAtStepHook(last_step=200), tf.train.NanTensorHook(loss), mine, final,
         tf.train.FeedFnHook(lambda: feed(x, y)),
         tf.train.LoggingTensorHook({"w": w}, every_n_iter=100)]
with tf.train.MonitoredTrainingSession(checkpoint_dir=ckpt_dir, hooks=hooks,
                                       save_checkpoint_steps=100,
                                       save_summaries_steps=50) as sess:
    while not sess.should_stop():
        sess.run(train)
print("final w %.3f b %.3f" % tuple(final.final_ops_values))
print("latest", os.path.basename(tf.train.latest_checkpoint(ckpt_dir)))
print("graph.pbtxt written:", os.path.exists(os.path.join(ckpt_dir, "graph.pbtxt")))

# a restart: the chief restores the latest checkpoint and goes on to step 300
x, y, w, b, loss, gs, train = build()
with tf.train.MonitoredTrainingSession(checkpoint_dir=ckpt_dir,
                                       hooks=[tf.train.StopAtStepHook(last_step=300)],
                                       save_checkpoint_steps=100) as sess:
    print("resumed at step", sess.run(gs, feed_dict=feed(x, y)))
    while not sess.should_stop():
        sess.run(train, feed_dict=feed(x, y))
print("latest", os.path.basename(tf.train.latest_checkpoint(ckpt_dir)))

# num_steps counts from where the session starts
x, y, w, b, loss, gs, train = build()
with tf.train.MonitoredTrainingSession(checkpoint_dir=ckpt_dir, save_checkpoint_secs=None,
                                       hooks=[tf.train.StopAtStepHook(num_steps=25)]) as sess:
    n = 0
    while not sess.should_stop():
        sess.run(train, feed_dict=feed(x, y))
        n += 1
print("runs with num_steps=25:", n)

# a NaN loss stops training with NanLossDuringTrainingError
tf.reset_default_graph()
v = tf.Variable(1.0)
bad = tf.sqrt(v - 2.0)
step = tf.train.get_or_create_global_step()
inc = tf.assign_add(step, 1)
try:
    with tf.train.MonitoredTrainingSession(hooks=[tf.train.NanTensorHook(bad)]) as sess:
        while not sess.should_stop():
            sess.run(inc)
except tf.train.NanLossDuringTrainingError as e:
    print("stopped:", e)

# SingularMonitoredSession and its raw session
tf.reset_default_graph()
c = tf.Variable(5.0)
c2 = c * 2  # before the session: a MonitoredSession finalizes the graph
with tf.train.SingularMonitoredSession() as sess:
    print("raw session value", sess.raw_session().run(c))
    print("hook-less run", sess.run(c2))

# the summaries the SummarySaverHook wrote
tags = set()
for f in sorted(os.listdir(ckpt_dir)):
    if f.startswith("events.out.tfevents."):
        for ev in tf.train.summary_iterator(os.path.join(ckpt_dir, f)):
            for val in ev.summary.value:
                tags.add(val.tag)
print("summary tags:", sorted(tags))
