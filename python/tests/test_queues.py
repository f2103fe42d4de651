"""TF's queues and queue-based input on rill: FIFO order, a shuffle queue's permutation and
min_after_dequeue, close -> OutOfRangeError/CancelledError with TF's texts, capacity blocking
and cancel_pending_enqueues, limit_epochs, slice_input_producer's epochs, tf.train.batch and
shuffle_batch shapes, the Coordinator (exceptions, join, grace period), and a program that never
stops its queue runners exiting cleanly."""
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import rill.compat.v1 as tf


def test_fifo_order_and_close():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[2], []])
        assert q.name == "fifo_queue" and q.dtypes == [tf.float32, tf.int32]
        assert [s.as_list() for s in q.shapes] == [[2], []]
        enq = q.enqueue_many([[[1, 2], [3, 4], [5, 6]], [7, 8, 9]])
        one = q.enqueue(([0.5, 0.5], 10))
        d = q.dequeue()
        dm = q.dequeue_many(2)
        du = q.dequeue_up_to(32)
        size, close = q.size(), q.close()
        assert enq.name == "fifo_queue_EnqueueMany" and d[0].name == "fifo_queue_Dequeue:0"
        assert dm[0].shape.as_list() == [2, 2] and du[0].shape.as_list() == [None, 2]
        with pytest.raises(ValueError, match="incompatible"):
            q.enqueue(([1.0, 2.0, 3.0], 1))
        with tf.Session() as s:
            s.run(enq)
            s.run(one)
            assert s.run(size) == 4
            v, i = s.run(d)
            assert v.tolist() == [1, 2] and i == 7
            v, i = s.run(dm)
            assert v.tolist() == [[3, 4], [5, 6]] and i.tolist() == [8, 9]
            s.run(enq)
            s.run(close)
            with pytest.raises(tf.errors.CancelledError, match="FIFOQueue '_[0-9]+_fifo_queue' "
                               "is closed."):
                s.run(one)
            v, i = s.run(du)  # closed: what is left, fewer than asked
            assert i.tolist() == [10, 7, 8, 9]
            with pytest.raises(tf.errors.OutOfRangeError) as e:
                s.run(dm)
            assert "is closed and has insufficient elements (requested 2, current size 0)" \
                in e.value.message


def test_shuffle_queue_is_a_permutation():
    with tf.Graph().as_default():
        q = tf.RandomShuffleQueue(100, 10, tf.int32, shapes=[[]], seed=5)
        enq = q.enqueue_many([list(range(50))])
        d = q.dequeue_many(40)
        rest = q.dequeue_up_to(100)
        close = q.close()
        with tf.Session() as s:
            s.run(enq)
            first = s.run(d).tolist()
            assert first != sorted(first) and len(set(first)) == 40
            # 10 left: min_after_dequeue keeps them until the queue is closed
            with pytest.raises(tf.errors.DeadlineExceededError):
                s.run(q.dequeue(), options=tf.RunOptions(timeout_in_ms=200))
            s.run(close)
            assert sorted(first + s.run(rest).tolist()) == list(range(50))


def test_capacity_blocks_and_cancel_pending():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(2, tf.int32, shapes=[[]])
        enq = q.enqueue_many([[1, 2, 3]])
        cancel = q.close(cancel_pending_enqueues=True)
        with tf.Session() as s:
            err = []

            def run():
                try:
                    s.run(enq)
                except tf.errors.CancelledError as e:
                    err.append(e.message)

            t = threading.Thread(target=run)
            t.start()
            time.sleep(0.3)
            assert t.is_alive()  # waits for room for the third
            s.run(cancel)
            t.join(10)
            assert not t.is_alive() and "Enqueue operation was cancelled" in err[0]


def test_limit_epochs_and_slice_input_producer():
    with tf.Graph().as_default():
        c = tf.train.limit_epochs(tf.constant([1, 2]), num_epochs=2)
        x = np.arange(10, dtype=np.float32).reshape(5, 2)
        xs, ys = tf.train.slice_input_producer([tf.constant(x), tf.constant(np.arange(5))],
                                               num_epochs=3, shuffle=True, seed=1)
        assert xs.shape.as_list() == [2] and ys.shape.as_list() == []
        names = [v.name for v in tf.local_variables()]
        assert "limit_epochs/epochs:0" in names
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            assert s.run(c).tolist() == [1, 2]
            s.run(c)
            with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 2"):
                s.run(c)
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(s, coord)
            rows = []
            with pytest.raises(tf.errors.OutOfRangeError):
                while True:
                    a, b = s.run([xs, ys])
                    assert a.tolist() == x[b].tolist()  # rows stay together
                    rows.append(int(b))
            assert sorted(rows) == sorted(list(range(5)) * 3)
            assert rows[:5] != list(range(5)) or rows[5:10] != list(range(5))
            coord.request_stop()
            coord.join(threads)


def test_batch_and_shuffle_batch():
    with tf.Graph().as_default():
        x = tf.constant(np.arange(12, dtype=np.float32).reshape(6, 2))
        row, = tf.train.slice_input_producer([x], shuffle=False)
        b = tf.train.batch([row], batch_size=4)
        sb = tf.train.shuffle_batch({"r": row}, batch_size=3, capacity=20, min_after_dequeue=5,
                                    seed=2)
        assert b[0].shape.as_list() == [4, 2] and sb["r"].shape.as_list() == [3, 2]
        queues = tf.train._QUEUE_RUNNERS
        from rill.compat.v1 import _local_variables as lv
        assert len(lv.get_collection(queues)) == 3
        with tf.Session() as s:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(s, coord)
            first = s.run(b)[0]
            assert first.shape == (4, 2) and (first[:, 1] - first[:, 0] == 1).all()
            assert s.run(sb)["r"].shape == (3, 2)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)


def test_coordinator():
    coord = tf.train.Coordinator()
    assert not coord.should_stop()

    def worker():
        with coord.stop_on_exception():
            raise ValueError("boom")

    t = threading.Thread(target=worker)
    coord.register_thread(t)
    t.start()
    with pytest.raises(ValueError, match="boom"):
        coord.join()
    assert coord.should_stop() and coord.joined
    coord.clear_stop()
    assert not coord.should_stop()
    coord.request_stop(tf.errors.OutOfRangeError("end"))  # a clean stop: nothing re-raised
    coord.join()
    coord.clear_stop()
    stuck = threading.Event()
    t = threading.Thread(target=stuck.wait, name="stuck", daemon=True)
    t.start()
    coord.request_stop()
    with pytest.raises(RuntimeError, match="Coordinator stopped with threads still running: "
                                           "stuck"):
        coord.join([t], stop_grace_period_secs=0.2)
    coord.clear_stop()
    coord.request_stop()
    coord.join([t], stop_grace_period_secs=0.1, ignore_live_threads=True)
    stuck.set()
    with pytest.raises(ValueError, match="No default session"):
        tf.train.start_queue_runners()


def test_exit_without_stopping_runners(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text(
        "import tensorflow as tf\n"
        "q = tf.FIFOQueue(4, tf.int32, shapes=[[]])\n"
        "qr = tf.train.QueueRunner(q, [q.enqueue_many([[1, 2, 3]])] * 2)\n"
        "tf.train.add_queue_runner(qr)\n"
        "sess = tf.Session()\n"
        "tf.train.start_queue_runners(sess)\n"
        "print(sess.run(q.dequeue_many(3)))\n")
    r = subprocess.run([sys.executable, "-m", "rill.run", str(prog)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith("[")


def test_runner_errors_reach_the_coordinator():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(4, tf.float32, shapes=[[2]])
        x = tf.placeholder(tf.float32)
        bad = q.enqueue_many([tf.reshape(x, [-1, 2])])  # runs unfed: an InvalidArgumentError
        qr = tf.train.QueueRunner(q, [bad])
        with tf.Session() as s:
            coord = tf.train.Coordinator()
            threads = qr.create_threads(s, coord=coord, start=True)
            with pytest.raises(tf.errors.InvalidArgumentError, match="You must feed a value"):
                coord.join(threads, stop_grace_period_secs=10)


def test_close_cancels_a_blocked_step():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(4, tf.int32, shapes=[[]])
        d = q.dequeue()
        s = tf.Session()
        got = []

        def run():
            try:
                s.run(d)
            except tf.errors.CancelledError as e:
                got.append(e.message)

        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.3)
        t0 = time.time()
        s.close()  # cancels the step the thread waits in, and waits for it
        assert time.time() - t0 < 5
        t.join(5)
        assert not t.is_alive() and "Dequeue operation was cancelled" in got[0]
        with pytest.raises(RuntimeError, match="closed Session"):
            s.run(d)
