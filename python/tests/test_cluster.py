"""A real two-process cluster from Python: a ps task in its own process (tf.train.Server over a
ClusterSpec, then server.join()), the worker here: replica_device_setter puts the variables on
the ps and the rest on the worker, a Session on the worker's target trains the seed's model
with its variables held by the other process, and SIGTERM ends the ps's join() with exit 0."""
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np

import rill.compat.v1 as tf

PS = r'''
import sys
import rill.compat.v1 as tf
cluster = tf.train.ClusterSpec({"ps": [sys.argv[1]], "worker": [sys.argv[2]]})
server = tf.train.Server(cluster, job_name="ps", task_index=0)
print("serving", flush=True)
server.join()
print("join returned", flush=True)  # never: join ends the process
'''


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_ps(forever=False):
    """A ps task serving in its own process (PS above): (the process, the cluster of it and a
    worker task 0 for this process). forever: its join outlives the worker's sv.stop()
    (RILL_PS_JOIN_FOREVER=1, TF's join), for a test that starts a chief again."""
    ps_addr, worker_addr = f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
    env = dict(os.environ, RILL_PS_JOIN_FOREVER="1") if forever else None
    ps = subprocess.Popen([sys.executable, "-c", PS, ps_addr, worker_addr], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert ps.stdout.readline().strip() == "serving"
    except BaseException:
        ps.kill()
        ps.communicate(timeout=30)
        raise
    return ps, tf.train.ClusterSpec({"ps": [ps_addr], "worker": [worker_addr]})


def stop_ps(ps):
    """SIGTERM ends the ps's join() with exit 0; (stdout, stderr)."""
    ps.send_signal(signal.SIGTERM)
    return ps.communicate(timeout=30)


def test_ps_and_worker(tmp_path):
    ps_addr, worker_addr = f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
    ps = subprocess.Popen([sys.executable, "-c", PS, ps_addr, worker_addr], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    try:
        assert ps.stdout.readline().strip() == "serving"
        cluster = tf.train.ClusterSpec({"ps": [ps_addr], "worker": [worker_addr]})
        assert cluster.num_tasks("ps") == 1 and cluster.task_address("worker", 0) == worker_addr
        server = tf.train.Server(cluster, job_name="worker", task_index=0)
        g = tf.Graph()
        with g.as_default(), tf.device(tf.train.replica_device_setter(
                worker_device="/job:worker/task:0", cluster=cluster)):
            step = tf.Variable(0, name="global_step", trainable=False)
            x = tf.placeholder("float")
            y = tf.placeholder("float")
            w = tf.get_variable("weight", [1], tf.float32, initializer=tf.random_normal_initializer())
            b = tf.get_variable("biase", [1], tf.float32, initializer=tf.random_normal_initializer())
            loss = tf.square(y - (tf.multiply(x, w) + b))
            train = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=step)
            init = tf.global_variables_initializer()
        assert w.device == "/job:ps/task:0" and step.device == "/job:ps/task:0"
        assert loss.device == "/job:worker/task:0"
        rng = np.random.default_rng(0)
        with tf.Session(server.target, graph=g) as sess:
            sess.run(init)
            for _ in range(600):
                xv = rng.standard_normal(1)
                sess.run(train, {x: xv, y: 2 * xv + 10})
            wv, bv, sv = sess.run([w, b, step])
        assert sv == 600
        assert abs(wv[0] - 2) < 0.1 and abs(bv[0] - 10) < 0.3, (wv, bv)
    finally:
        t0 = time.time()
        ps.send_signal(signal.SIGTERM)
        out, err = ps.communicate(timeout=30)
    assert ps.returncode == 0, err
    assert "join returned" not in out
    assert time.time() - t0 < 10


def test_threads_share_one_cluster_session():
    """Hogwild from Python: 4 threads train through one Session on the worker's target, the GIL
    released while each step runs; every step's update reaches the ps in the other process, so
    the global step counts exactly 4 x 150, and the model converges."""
    import threading

    ps, cluster = start_ps()
    try:
        server = tf.train.Server(cluster, job_name="worker", task_index=0)
        g = tf.Graph()
        with g.as_default(), tf.device(tf.train.replica_device_setter(
                worker_device="/job:worker/task:0", cluster=cluster)):
            step = tf.train.get_or_create_global_step()
            x = tf.placeholder(tf.float32)
            y = tf.placeholder(tf.float32)
            w = tf.Variable([0.0], name="w")
            b = tf.Variable([0.0], name="b")
            loss = tf.reduce_sum(tf.square(y - (x * w + b)))
            train = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=step)
            init = tf.global_variables_initializer()
        errors = []
        with tf.Session(server.target, graph=g) as sess:
            sess.run(init)

            def work(seed):
                rng = np.random.default_rng(seed)
                try:
                    for _ in range(150):
                        xv = rng.standard_normal(1).astype(np.float32)
                        sess.run(train, {x: xv, y: 2 * xv + 10})
                except Exception as e:  # reported below: a thread's failure fails the test
                    errors.append(e)

            threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            assert not errors, errors
            sv, wv, bv = sess.run([step, w, b])
        assert sv == 600
        assert abs(wv[0] - 2) < 0.1 and abs(bv[0] - 10) < 0.3, (wv, bv)
    finally:
        stop_ps(ps)
    assert ps.returncode == 0


def test_restarted_chief_keeps_the_live_model(tmp_path, capfd):
    """A chief restarted while the ps task (another process) kept a model newer than the latest
    checkpoint goes on from the live model instead of restoring over it (rill beyond TF), and
    says so; Supervisor(restore_over_live=True) restores the checkpoint, as TF does."""
    ps, cluster = start_ps(forever=True)
    try:
        server = tf.train.Server(cluster, job_name="worker", task_index=0)
        logdir = str(tmp_path / "logdir")

        def chief(**kw):
            """A fresh graph of the model and a chief Supervisor's session on it."""
            g = tf.Graph()
            with g.as_default(), tf.device(tf.train.replica_device_setter(
                    worker_device="/job:worker/task:0", cluster=cluster)):
                step = tf.train.get_or_create_global_step()
                w = tf.Variable([0.0], name="w")
                loss = tf.reduce_sum(tf.square(w - 3.0))
                train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=step)
                sv = tf.train.Supervisor(is_chief=True, init_op=tf.global_variables_initializer(),
                                         global_step=step, save_model_secs=0,
                                         save_summaries_secs=0, **kw)
            return sv, sv.prepare_or_wait_for_session(server.target), step, train

        sv, sess, step, train = chief(logdir=logdir)  # initializes
        for _ in range(50):
            sess.run(train)
        sv.stop()  # the final checkpoint: model.ckpt-50
        assert tf.train.latest_checkpoint(logdir).endswith("model.ckpt-50")
        sv, sess, step, train = chief(logdir=None)  # on from the live model, no checkpoints
        for _ in range(100):
            sess.run(train)
        assert sess.run(step) == 150

        capfd.readouterr()
        sv, sess, step, train = chief(logdir=logdir)
        assert sess.run(step) == 150  # the live model, not model.ckpt-50
        err = capfd.readouterr().err
        assert "live model at global step 150" in err and "model.ckpt-50 (global step 50)" in err, err
        sv, sess, step, train = chief(logdir=logdir, restore_over_live=True)
        assert sess.run(step) == 50  # the checkpoint, over the live model
    finally:
        out, err = stop_ps(ps)
    assert ps.returncode == 0, err


PS_SECRET = r'''
import sys
import rill.compat.v1 as tf
cluster = tf.train.ClusterSpec({"ps": [sys.argv[1]], "worker": [sys.argv[2]]})
server = tf.train.Server(cluster, job_name="ps", task_index=0, cluster_secret_file=sys.argv[3],
                         encrypt=True)
print("serving", flush=True)
server.join()
'''


def test_secret_and_encryption(tmp_path):
    """tf.train.Server's cluster_secret_file and encrypt: a worker with the ps's secret trains
    over encrypted frames; one without it, or with another, is refused before anything runs,
    and the error says why."""
    key, other = tmp_path / "cluster.key", tmp_path / "other.key"
    for f in (key, other):
        f.write_text(os.urandom(32).hex() + "\n")
        f.chmod(0o600)
    ps_addr, worker_addr = f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
    ps = subprocess.Popen([sys.executable, "-c", PS_SECRET, ps_addr, worker_addr, str(key)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert ps.stdout.readline().strip() == "serving"
        cluster = tf.train.ClusterSpec({"ps": [ps_addr], "worker": [worker_addr]})

        def train(server):
            g = tf.Graph()
            with g.as_default(), tf.device(tf.train.replica_device_setter(
                    worker_device="/job:worker/task:0", cluster=cluster)):
                step = tf.train.get_or_create_global_step()
                w = tf.Variable([0.0], name="w")
                loss = tf.reduce_sum(tf.square(w - 3.0))
                up = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
                init = tf.global_variables_initializer()
            with tf.Session(server.target, graph=g) as sess:
                sess.run(init)
                for _ in range(5):
                    sess.run(up)
                return sess.run(step), w.device

        for secret in (None, str(other)):
            server = tf.train.Server(cluster, job_name="worker", task_index=0,
                                     cluster_secret_file=secret)
            try:
                train(server)
                raise AssertionError("a worker without the ps's secret was let in")
            except tf.errors.OpError as e:
                assert "cluster secret" in str(e), str(e)
            del server
        server = tf.train.Server(cluster, job_name="worker", task_index=0,
                                 cluster_secret_file=str(key))
        wv, dev = train(server)
        assert wv == 5 and dev == "/job:ps/task:0"
    finally:
        out, err = stop_ps(ps)
    assert ps.returncode == 0, err
