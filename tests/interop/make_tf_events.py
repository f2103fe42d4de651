#!/usr/bin/env python3
"""make_tf_events.py - writes the golden TensorBoard event file that rill's tests read.

Real TensorFlow (tf.compat.v1, graph mode) writes a small event file, exactly as a TF1 training
script would: tf.summary.scalar("cost"), tf.summary.histogram("weights") inside the name scope
"layer1", merge_all, a FileWriter with the graph, SessionLog START at step 1 and the merged
summary at steps 1, 2 and 3. The file is then renamed so that its host part reads "golden" (the
time stamp stays the one TF wrote) and put in tests/interop/data/tf_events/, replacing the old one.

The values are fixed here and repeated in tests/train/test_summary.c, which checks that rill reads
them back and that rill's own histogram of the same numbers is byte-identical to TF's.

Run once with the project's virtualenv:  .venv/bin/python tests/interop/make_tf_events.py
"""
import glob
import os
import shutil
import socket
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1

# Also written into tests/train/test_summary.c: keep them in step.
COSTS = [1.5, 0.75, 0.5]  # the scalar "cost" at steps 1, 2, 3


def weights(step):
    """The values histogrammed at a step (float32, as TF's default)."""
    return [-2.5, -1e-3, 0.0, 0.0, 1e-13, 0.5, 1.0, 3.75, 100.0, 1e6 * step]


def write(logdir):
    graph = tf.Graph()
    with graph.as_default():
        cost = tf1.placeholder(tf.float32, [], name="cost_in")
        w = tf1.placeholder(tf.float32, [None], name="w_in")
        tf1.summary.scalar("cost", cost)
        with tf1.name_scope("layer1"):
            tf1.summary.histogram("weights", w)
        merged = tf1.summary.merge_all()
        with tf1.Session(graph=graph) as sess:
            writer = tf1.summary.FileWriter(logdir, graph=graph)
            writer.add_session_log(tf1.SessionLog(status=tf1.SessionLog.START), global_step=1)
            for step in (1, 2, 3):
                s = sess.run(merged, {cost: COSTS[step - 1], w: weights(step)})
                writer.add_summary(s, global_step=step)
            writer.close()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = os.path.join(here, "data", "tf_events")
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        write(tmp)
        files = glob.glob(os.path.join(tmp, "events.out.tfevents.*"))
        if len(files) != 1:
            sys.exit("expected one event file, got %r" % files)
        name = os.path.basename(files[0])
        host = socket.gethostname()
        if host and host in name:
            name = name.replace(host, "golden")
        for old in glob.glob(os.path.join(out_dir, "events.out.tfevents.*")):
            os.remove(old)
        dest = os.path.join(out_dir, name)
        shutil.copyfile(files[0], dest)
    size = os.path.getsize(dest)
    print("wrote %s (%d bytes) with TensorFlow %s" % (dest, size, tf.__version__))
    if size > 10 * 1024:
        sys.exit("the golden file should stay under 10 KiB")


if __name__ == "__main__":
    main()
