#!/usr/bin/env python3
"""A client driving a cluster: the seed's linear model (y = 2x + 10, variables on the ps, the
step on worker 0) run step after step from a process that is no task of the cluster, through
tf.Session("grpc://<worker 0>"), on rill and on TensorFlow in the same run; and, for rill, the
same step from the worker's own process (its in-process master) as the floor the client's extra
hop is measured against.

  PYTHONPATH=build/pyroot .venv/bin/python bench/bench_client.py [STEPS] [REPEATS]

Each side's ps and worker run in processes of their own (server.join()); the client times
STEPS steps of sess.run([train_op, loss], feed_dict={x, y}) after 200 warm-up steps, best of
REPEATS. Prints µs/step and the ratios."""
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def tf_module(side):
    if side == "rill":
        import rill.compat.v1 as tf
        return tf
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    return tf


def cluster_of(tf, hosts):
    ps, worker = hosts.split(";")
    return tf.train.ClusterSpec({"ps": [ps], "worker": [worker]})


def serve(side, job, hosts):
    tf = tf_module(side)
    server = tf.train.Server(cluster_of(tf, hosts), job_name=job, task_index=0)
    print("serving", flush=True)
    if job == "worker" and os.environ.get("BENCH_IN_PROCESS"):
        print("us/step %s" % drive(tf, server.target, int(os.environ["BENCH_STEPS"]),
                                   int(os.environ["BENCH_REPEATS"])), flush=True)
        return
    server.join()


def drive(tf, target, steps, repeats):
    """Best µs/step of `repeats` runs of `steps` steps."""
    import numpy as np
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(worker_device="/job:worker/task:0",
                                                      ps_device="/job:ps/task:0", ps_tasks=1)):
            gs = tf.train.get_or_create_global_step()
            x = tf.placeholder(tf.float32, [1], name="x")
            y = tf.placeholder(tf.float32, [1], name="y")
            w = tf.Variable(tf.zeros([1]), name="weight")
            b = tf.Variable(tf.zeros([1]), name="biase")
            loss = tf.reduce_mean(tf.square(y - (x * w + b)))
            train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=gs)
            init = tf.global_variables_initializer()
    rng = np.random.default_rng(1)
    xs = rng.uniform(-1, 1, size=(steps + 200, 1)).astype(np.float32)
    with tf.Session(target, graph=g) as sess:
        sess.run(init)
        for i in range(200):
            sess.run([train, loss], feed_dict={x: xs[i], y: 2 * xs[i] + 10})
        best = None
        for _ in range(repeats):
            t0 = time.perf_counter()
            for i in range(steps):
                sess.run([train, loss], feed_dict={x: xs[i], y: 2 * xs[i] + 10})
            us = (time.perf_counter() - t0) / steps * 1e6
            best = us if best is None else min(best, us)
    return best


def env_of(side):
    env = dict(os.environ)
    if side == "tf":
        for k in ("LD_PRELOAD", "PYTHONPATH"):
            env.pop(k, None)
    else:
        env["RILL_OPENCL_CPU_AS_GPU"] = "0"
        env.setdefault("PYTHONPATH", os.path.join(ROOT, "build", "pyroot"))
    return env


def run_side(side, steps, repeats, in_process=False):
    ps_port, w_port = free_ports(2)
    hosts = "127.0.0.1:%d;127.0.0.1:%d" % (ps_port, w_port)
    env = env_of(side)
    if in_process:
        env.update(BENCH_IN_PROCESS="1", BENCH_STEPS=str(steps), BENCH_REPEATS=str(repeats))
    me = os.path.abspath(__file__)
    ps = subprocess.Popen([sys.executable, me, "serve", side, "ps", hosts], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    wk = subprocess.Popen([sys.executable, me, "serve", side, "worker", hosts], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        ps.stdout.readline()
        wk.stdout.readline()
        if in_process:
            line = wk.stdout.readline()
            return float(line.split()[-1])
        out = subprocess.run([sys.executable, me, "client", side, hosts, str(steps),
                              str(repeats)], env=env, capture_output=True, text=True, timeout=900)
        if out.returncode != 0:
            raise SystemExit("%s client failed:\n%s" % (side, out.stderr[-3000:]))
        return float(out.stdout.split()[-1])
    finally:
        for p in (ps, wk):
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "client":
        side, hosts, steps, repeats = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        tf = tf_module(side)
        print("us/step %.1f" % drive(tf, "grpc://" + hosts.split(";")[1], steps, repeats))
        return
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    rill_client = run_side("rill", steps, repeats)
    rill_local = run_side("rill", steps, repeats, in_process=True)
    tf_client = run_side("tf", steps, repeats)
    print("client step, 1 ps + 1 worker on loopback, %d steps, best of %d (µs/step)" %
          (steps, repeats))
    print("  rill, client process (grpc:// target)   %8.1f" % rill_client)
    print("  rill, the worker's own process          %8.1f" % rill_local)
    print("  TensorFlow, client process (grpc://)    %8.1f" % tf_client)
    print("  TF / rill (client)                      %8.2fx" % (tf_client / rill_client))
    print("  rill client / rill in-process           %8.2fx" % (rill_client / rill_local))


if __name__ == "__main__":
    main()
