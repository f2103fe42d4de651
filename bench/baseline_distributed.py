#!/usr/bin/env python3
"""The seed's distributed.py on TensorFlow 2.x's tf.compat.v1 (graph mode), as the baseline of
bench/bench_sync.sh: the same flags as examples/distributed (the ones bench_sync.sh passes) and
the same output lines ("<task>: training...", "step: N, ...", "final: global_step N, ...,
X steps/s"), so that scripts/local_cluster.sh runs it as every task of a cluster and
bench_sync.sh parses it like rill's workers.

What the seed does, with what TF 2.21 still has:
  tf.train.Server                       -> tf.compat.v1.train.Server (gRPC)
  tf.train.replica_device_setter        -> tf.compat.v1.train.replica_device_setter
  tf.train.GradientDescentOptimizer     -> tf.compat.v1.train.GradientDescentOptimizer
  tf.train.SyncReplicasOptimizer        -> tf.compat.v1.train.SyncReplicasOptimizer with
      replicas_to_aggregate = total_num_replicas = len(worker_hosts) (its replica_id argument
      is gone from TF); get_init_tokens_op / get_chief_queue_runner as in the seed
  tf.initialize_all_variables           -> tf.compat.v1.global_variables_initializer
  tf.train.Supervisor                   -> tf.compat.v1.train.Supervisor (deprecated, still works)
Beyond the seed, as examples/distributed does it:
  - the loop ends at --train_steps (the seed's runs to 1,000,000);
  - in sync mode each worker runs what SyncReplicasOptimizer's session hook runs (chief:
    chief_init_op; others: local_step_init_op) and, when it is done, leaves one token per worker
    in the token queue, so that no worker stays blocked on a token after the others stopped;
  - a worker waits until the ps accepts connections before it starts (see wait_for);
  - the ps stops with exit status 0 on SIGTERM (scripts/local_cluster.sh sends it when the
    workers are done); Supervisor.stop is given a short grace period, as the chief's queue
    runner stays blocked in the accumulators' take_grad once the workers stop sending gradients.
Per step the worker fetches [train_op, loss, global_step] with a feed of one (x, y), as the
seed does. Usage: scripts/local_cluster.sh with RILL_LOCAL_PROGRAM pointing at a wrapper that
runs this file (bench/bench_sync.sh does that)."""
import argparse
import os
import signal
import sys
import time

import numpy as np


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--learning_rate", type=float, default=0.00003)
    p.add_argument("--steps_to_validate", type=int, default=1000)
    p.add_argument("--ps_hosts", default="")
    p.add_argument("--worker_hosts", default="")
    p.add_argument("--job_name", default="")
    p.add_argument("--task_index", type=int, default=0)
    p.add_argument("--issync", type=int, default=0)
    p.add_argument("--train_steps", type=int, default=1000000)
    p.add_argument("--logdir", default="./checkpoint/")
    p.add_argument("--save_model_secs", type=float, default=60)
    return p.parse_args()


def wait_for(hosts, deadline_s=120):
    """Waits until every host:port accepts a TCP connection. A session whose first connection
    to the ps is refused leaves gRPC in its reconnect backoff (1 s growing to 120 s); the ps
    imports TensorFlow as slowly as the workers do, so wait for it before creating the session."""
    import socket

    end = time.monotonic() + deadline_s
    for hp in hosts:
        host, port = hp.rsplit(":", 1)
        while True:
            try:
                socket.create_connection((host, int(port)), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > end:
                    return
                time.sleep(0.05)


def main():
    f = parse()
    task = "/job:%s/task:%d" % (f.job_name, f.task_index)
    if f.job_name == "ps":
        # server.join() blocks in C++ where Python never sees SIGTERM: wait in Python instead.
        signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")  # the deprecation warnings of Supervisor and friends
    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    ps_hosts = f.ps_hosts.split(",")
    worker_hosts = f.worker_hosts.split(",")
    cluster = tf1.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    if f.job_name == "worker":
        wait_for(ps_hosts)
    server = tf1.train.Server(cluster, job_name=f.job_name, task_index=f.task_index)
    if f.job_name == "ps":
        print("%s: serving (tensorflow %s)" % (task, tf.__version__), file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)
    if f.job_name != "worker":
        sys.exit("--job_name must be ps or worker, not %r" % f.job_name)

    nw = len(worker_hosts)
    is_chief = f.task_index == 0
    sync = f.issync == 1
    with tf1.device(tf1.train.replica_device_setter(worker_device=task, cluster=cluster)):
        global_step = tf1.Variable(0, name="global_step", trainable=False, dtype=tf.int64)
        inp = tf1.placeholder(tf.float32, name="input")
        label = tf1.placeholder(tf.float32, name="label")
        weight = tf1.get_variable("weight", [1], tf.float32, initializer=tf1.random_normal_initializer())
        biase = tf1.get_variable("biase", [1], tf.float32, initializer=tf1.random_normal_initializer())
        pred = tf.multiply(inp, weight) + biase
        loss_value = tf.square(label - pred)
        optimizer = tf1.train.GradientDescentOptimizer(f.learning_rate)
        grads_and_vars = optimizer.compute_gradients(loss_value)
        if sync:
            rep_op = tf1.train.SyncReplicasOptimizer(
                optimizer, replicas_to_aggregate=nw, total_num_replicas=nw, use_locking=True)
            train_op = rep_op.apply_gradients(grads_and_vars, global_step=global_step)
            init_token_op = rep_op.get_init_tokens_op()
            release_tokens_op = rep_op.get_init_tokens_op(nw)
            chief_queue_runner = rep_op.get_chief_queue_runner()
        else:
            train_op = optimizer.apply_gradients(grads_and_vars, global_step=global_step)
        init_op = tf1.global_variables_initializer()
        saver = tf1.train.Saver()
        tf1.summary.scalar("cost", tf.reshape(loss_value, []))
        tf1.summary.merge_all()

    sv = tf1.train.Supervisor(is_chief=is_chief, logdir=f.logdir, init_op=init_op, summary_op=None,
                              saver=saver, global_step=global_step,
                              save_model_secs=f.save_model_secs,
                              recovery_wait_secs=0.2,  # default 30 s: non-chiefs poll for the model
                              stop_grace_secs=1)
    with sv.prepare_or_wait_for_session(server.target) as sess:
        if sync:
            sess.run(rep_op.chief_init_op if is_chief else rep_op.local_step_init_op)
            if is_chief:
                sv.start_queue_runners(sess, [chief_queue_runner])
                sess.run(init_token_op)
        print("%s: training%s%s" % (task, " synchronously" if sync else "", " (chief)" if is_chief else ""),
              file=sys.stderr, flush=True)
        step = 0
        local_steps = 0
        start = time.perf_counter()
        while step < f.train_steps:
            train_x = np.random.randn(1)
            train_y = 2 * train_x + np.random.randn(1) * 0.33 + 10
            _, loss_v, step = sess.run([train_op, loss_value, global_step],
                                       feed_dict={inp: train_x, label: train_y})
            local_steps += 1
            if step % f.steps_to_validate == 0:
                w, b = sess.run([weight, biase])
                print("step: %d, weight: %f, biase: %f, loss: %f" % (step, w[0], b[0], loss_v[0]), flush=True)
        elapsed = time.perf_counter() - start
        if sync:
            sess.run(release_tokens_op)
        w, b = sess.run([weight, biase])
        print("final: global_step %d, weight %f, biase %f, local_steps %d, %.0f steps/s"
              % (step, w[0], b[0], local_steps, local_steps / elapsed if elapsed > 0 else 0.0), flush=True)
        sv.request_stop()
    try:
        sv.stop(ignore_live_threads=True)
    except Exception as e:  # the queue runner's thread may report its cancelled take_grad
        print("%s: supervisor stop: %s" % (task, str(e).splitlines()[0]), file=sys.stderr, flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    # The chief's queue runner thread may still be inside a blocked Session.run: leave at once
    # rather than wait for the interpreter to tear the session down under it.
    os._exit(0)


if __name__ == "__main__":
    main()
