"""tf.summary.FileWriter: summaries from the summary ops and hand-built tf.Summary values, a
SessionLog and the graph go into an event file that TensorBoard's own reader (its own process)
reads back as written; the background thread flushes every flush_secs; a closed writer refuses
work until reopen(), which starts a new file."""
import pathlib
import subprocess
import sys
import time

import numpy as np
import pytest

import rill.compat.v1 as tf

ROOT = pathlib.Path(__file__).resolve().parents[2]
READER = ROOT / "tests" / "interop" / "read_rill_events.py"


def _read(path, *opts):
    r = subprocess.run([sys.executable, str(READER), *opts, str(path)], capture_output=True,
                       text=True, timeout=300)
    if "No module named 'tensorflow'" in r.stderr:
        pytest.skip("TensorFlow is not installed here")
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.splitlines()


def _events(logdir):
    return sorted(p for p in pathlib.Path(logdir).iterdir()
                  if p.name.startswith("events.out.tfevents."))


def test_file_writer_round_trip(tmp_path):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(np.ones((3, 2), np.float32), name="w")
        loss = tf.reduce_mean(tf.matmul(x, w), name="mean")
        tf.summary.scalar("loss", loss)
        tf.summary.histogram("w", w)
        merged = tf.summary.merge_all()
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        writer = tf.summary.FileWriter(str(tmp_path / "logs"), sess.graph)
        assert writer.get_logdir() == str(tmp_path / "logs")
        sess.run(init)
        for step in range(3):
            s = sess.run(merged, {x: np.full((2, 3), step, np.float32)})
            assert isinstance(s, bytes)
            writer.add_summary(s, step)
        writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="accuracy",
                                                              simple_value=0.75)]), 7)
        writer.add_session_log(tf.SessionLog(status=tf.SessionLog.CHECKPOINT,
                                             checkpoint_path="/ck/model.ckpt-7"), 7)
        writer.close()
        writer.close()  # a second close is harmless, as in TF
    (ev,) = _events(tmp_path / "logs")
    assert _read(ev) == ["loss 0 0", "loss 1 3", "loss 2 6", "accuracy 7 0.75"]
    lines = _read(ev, "--events")
    kinds = [l.split(" ", 2)[2].split()[0] for l in lines]
    assert kinds == ["file_version", "other", "summary", "summary", "summary", "summary",
                     "session_log"], lines
    assert lines[-1].endswith("session_log CHECKPOINT /ck/model.ckpt-7")
    assert "w_1=histo{num=6," in lines[2]  # "w" is the variable's name: TF's tag is w_1 too
    nodes = {l.split()[0]: l.split()[1:] for l in _read(ev, "--graph")}
    assert nodes["mean"][0] == "Mean" and nodes["x"] == ["Placeholder", "-", "-", "[?,3]"]
    assert nodes["MatMul"][1] == "x,w"


def test_flush_secs_and_reopen(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path), flush_secs=0.2)
    (ev,) = _events(tmp_path)
    size = ev.stat().st_size
    writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="a", simple_value=1)]), 1)
    deadline = time.monotonic() + 10
    while ev.stat().st_size == size and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ev.stat().st_size > size, "the background thread never flushed"
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        writer.add_summary(tf.Summary(), 2)
    time.sleep(1.1)  # a new second: the new file gets its own name
    writer.reopen()
    writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="a", simple_value=2)]), 2)
    writer.flush()
    files = _events(tmp_path)
    assert len(files) == 2
    assert _read(files[0]) == ["a 1 1"] and _read(files[1]) == ["a 2 2"]
    writer.close()


def test_bad_summaries_are_refused(tmp_path):
    with tf.summary.FileWriter(str(tmp_path)) as writer:
        with pytest.raises(tf.errors.InvalidArgumentError, match="not a serialized Summary"):
            writer.add_summary(b"\xff\xff\xff", 1)
        with pytest.raises(TypeError, match="tag and simple_value"):
            tf.Summary.Value(tag="img", image=b"")
    (ev,) = _events(tmp_path)
    assert _read(ev, "--events")[1:] == []  # nothing but the version event was written
