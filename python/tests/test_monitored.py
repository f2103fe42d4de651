"""tf.train's MonitoredSession pieces that the programs (programs/p23_monitored_hooks.py,
dist_programs/mts_replica.py) do not reach by name: Scaffold, the session creators,
MonitoredSession with SessionRunContext/SessionRunValues, CheckpointSaverHook with a
CheckpointSaverListener, SummarySaverHook, StepCounterHook, SecondOrStepTimer,
GlobalStepWaiterHook, hook feed conflicts, and the errors TF gives."""
import os

import numpy as np
import pytest

import rill.compat.v1 as tf


def _model():
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None], name="x")
    w = tf.Variable(1.0, name="w")
    loss = tf.reduce_mean(tf.square(w * x - 2 * x), name="loss")
    tf.summary.scalar("the_loss", loss)
    gs = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
    return x, w, loss, gs, train


def test_timer():
    t = tf.train.SecondOrStepTimer(every_steps=10)
    assert t.should_trigger_for_step(0)
    assert t.update_last_triggered_step(0) == (None, None)
    assert not t.should_trigger_for_step(5) and t.should_trigger_for_step(10)
    elapsed, steps = t.update_last_triggered_step(10)
    assert steps == 10 and elapsed >= 0 and t.last_triggered_step() == 10
    with pytest.raises(ValueError, match="Either every_secs or every_steps"):
        tf.train.SecondOrStepTimer(every_secs=1, every_steps=1)


def test_creators_listener_summaries_and_step_counter(tmp_path):
    x, w, loss, gs, train = _model()
    saves = []

    class Listener(tf.train.CheckpointSaverListener):
        def after_save(self, session, step):
            saves.append(step)

    class Ctx(tf.train.SessionRunHook):
        def before_run(self, run_context):
            assert isinstance(run_context, tf.train.SessionRunContext)
            assert run_context.original_args.fetches is train
            return tf.train.SessionRunArgs(w)

        def after_run(self, run_context, run_values):
            assert isinstance(run_values, tf.train.SessionRunValues)
            self.w = run_values.results

    scaffold = tf.train.Scaffold()
    ck = str(tmp_path / "ck")
    hooks = [tf.train.CheckpointSaverHook(ck, save_steps=5, scaffold=scaffold,
                                          listeners=[Listener()]),
             tf.train.SummarySaverHook(save_steps=4, output_dir=ck, scaffold=scaffold),
             tf.train.StepCounterHook(every_n_steps=5, output_dir=ck),
             tf.train.StopAtStepHook(last_step=12), Ctx()]
    creator = tf.train.ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=ck)
    assert isinstance(creator, tf.train.SessionCreator)
    with tf.train.MonitoredSession(session_creator=creator, hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(train, feed_dict={x: np.ones(4, np.float32)})
    assert saves[0] == 0 and saves[-1] == 12 and 5 in saves and 10 in saves
    assert tf.train.latest_checkpoint(ck).endswith("model.ckpt-12")
    tags = {}
    for f in os.listdir(ck):
        if f.startswith("events.out.tfevents."):
            for ev in tf.train.summary_iterator(os.path.join(ck, f)):
                for v in ev.summary.value:
                    tags.setdefault(v.tag, []).append(ev.step)
    assert tags["the_loss"][0] == 1 and "global_step/sec" in tags, tags
    # a worker's creator on the same (local) graph: the model is there, it returns at once
    tf.reset_default_graph()
    v = tf.Variable(3.0)
    sc = tf.train.Scaffold(init_op=tf.global_variables_initializer())
    sess = tf.train.ChiefSessionCreator(scaffold=sc).create_session()
    assert sess.run(v) == 3.0
    # WorkerSessionCreator waits for a model nobody initialises, then names what is missing
    tf.reset_default_graph()
    tf.Variable(1.0, name="never")
    with pytest.raises(tf.errors.DeadlineExceededError, match="Variables not initialized: never"):
        tf.train.WorkerSessionCreator(max_wait_secs=1).create_session()


def test_waiter_and_feed_conflicts():
    x, w, loss, gs, train = _model()
    waiter = tf.train.GlobalStepWaiterHook(0)

    class Feeder(tf.train.SessionRunHook):
        def before_run(self, run_context):
            return tf.train.SessionRunArgs(None, feed_dict={x: np.ones(2, np.float32)})

    with tf.train.MonitoredSession(hooks=[waiter, Feeder()]) as sess:
        sess.run(train)  # fed by the hook
        # run_step_fn: the step function's run goes through the hooks too (the Feeder feeds)
        assert sess.run_step_fn(lambda ctx: ctx.run_with_hooks(gs)) >= 1
        with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and user"):
            sess.run(train, feed_dict={x: np.ones(2, np.float32)})
    with pytest.raises(ValueError, match="One of num_steps or last_step must be specified"):
        tf.train.StopAtStepHook()
    with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
        tf.train.SummarySaverHook(save_steps=1)
    tf.reset_default_graph()
    tf.Variable(1.0)
    with pytest.raises(RuntimeError, match="Global step should be created to use StopAtStepHook"):
        tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(last_step=1)])


def test_supervisor_summary_needing_a_feed_fails_at_start(tmp_path):
    """Better than TF, whose summary thread dies save_summaries_secs later (stopping the
    training): a merged summary that needs a placeholder fails when the session starts, naming
    the summary and the placeholder; summary_op=None runs the same graph."""
    with tf.Graph().as_default():
        lr = tf.placeholder(tf.float32, [], name="lr")
        tf.summary.scalar("learning_rate", lr)
        inc = tf.assign_add(tf.train.get_or_create_global_step(), 1)
        sv = tf.train.Supervisor(logdir=str(tmp_path / "a"))
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="summary 'learning_rate' needs a value fed for placeholder 'lr'"):
            with sv.managed_session():
                pass
        sv = tf.train.Supervisor(logdir=str(tmp_path / "b"), summary_op=None)
        with sv.managed_session() as sess:
            assert sess.run(inc) == 1
