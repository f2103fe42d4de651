"""Step deadlines: RunOptions(timeout_in_ms) and ConfigProto(operation_timeout_in_ms) end a step
that waits too long with DeadlineExceededError ("Timed out waiting for notification", naming what
waited) instead of hanging, locally and on a cluster: there, the deadlock TF documents for
SyncReplicasOptimizer (a worker waiting for a token that the chief's queue runner, not running,
never gives) ends at the deadline, naming the ps task."""
import time

import numpy as np
import pytest

import rill.compat.v1 as tf

from test_cluster import start_ps, stop_ps


def _dequeue(g, name="q"):
    return g._make("QueueDequeue", "deq", (), {"shared_name": ("string", name),
                                              "dtype": ("type", 1), "shape": ("shape", []),
                                              "timeout_ms": ("int", 60000)}).outputs[0]


def test_run_options_and_operation_timeout():
    g = tf.Graph()
    with g.as_default():
        deq = _dequeue(g)
        c = tf.constant(2.0)
    with tf.Session(graph=g) as sess:
        t0 = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError) as e:
            sess.run(deq, options=tf.RunOptions(timeout_in_ms=200))
        assert 0.19 <= time.monotonic() - t0 < 5
        assert "Timed out waiting for notification" in e.value.message
        assert "200 ms deadline" in e.value.message and "queue 'q'" in e.value.message
        assert e.value.error_code == tf.errors.DEADLINE_EXCEEDED
        # the same signature again, now through the C fast path, then without options
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(deq, options=tf.RunOptions(timeout_in_ms=100))
        assert sess.run(c, options=tf.RunOptions(timeout_in_ms=100)) == 2.0
    config = tf.ConfigProto(operation_timeout_in_ms=300)
    with tf.Session(graph=g, config=config) as sess:
        t0 = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError, match="300 ms deadline"):
            sess.run([deq, c])
        assert 0.29 <= time.monotonic() - t0 < 5
        # a run's own timeout wins over the session's
        with pytest.raises(tf.errors.DeadlineExceededError, match="150 ms deadline"):
            sess.run({"d": deq}, options=tf.RunOptions(timeout_in_ms=150))


def test_sync_replicas_without_the_chief_times_out():
    ps, cluster = start_ps()
    try:
        server = tf.train.Server(cluster, job_name="worker", task_index=0)
        g = tf.Graph()
        with g.as_default(), tf.device(tf.train.replica_device_setter(
                worker_device="/job:worker/task:0", cluster=cluster)):
            step = tf.train.get_or_create_global_step()
            x = tf.placeholder(tf.float32)
            w = tf.Variable([1.0], name="w")
            loss = tf.reduce_sum(tf.square(w * x - 2.0))
            opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                                 replicas_to_aggregate=1, total_num_replicas=1)
            train = opt.minimize(loss, global_step=step)
            init = tf.global_variables_initializer()
        # No chief queue runner and no init tokens: the step's token dequeue on the ps never
        # returns. TF hangs here; the operation timeout ends it.
        config = tf.ConfigProto(operation_timeout_in_ms=800)
        with tf.Session(server.target, graph=g, config=config) as sess:
            sess.run(init)
            sess.run(opt.local_step_init_op)
            t0 = time.monotonic()
            with pytest.raises(tf.errors.DeadlineExceededError) as e:
                sess.run(train, {x: np.float32(1.0)})
            took = time.monotonic() - t0
            assert 0.79 <= took < 10, took
            assert "800 ms deadline" in e.value.message
            assert "/job:ps/replica:0/task:0" in e.value.message, e.value.message
            # the session works on
            assert sess.run(w)[0] == 1.0
    finally:
        stop_ps(ps)
    assert ps.returncode == 0
