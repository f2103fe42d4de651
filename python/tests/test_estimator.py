"""tf.estimator: a linear model trained from numpy_input_fn converges, writes model.ckpt-N and
summaries into model_dir, a second train goes on from the saved step (steps adds to it,
max_steps stops at it), evaluate returns the metrics, loss and global_step and writes
model_dir/eval, predict yields one dict per example, real TensorFlow reads the checkpoint, and
the argument errors are TF's."""
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import rill.compat.v1 as tf

W_TRUE = np.array([[1.0], [-2.0], [3.0]], np.float32)


def _data(n=200):
    rng = np.random.RandomState(0)
    x = rng.rand(n, 3).astype(np.float32)
    return x, x @ W_TRUE + 0.5


def model_fn(features, labels, mode, params):
    w = tf.get_variable("w", [3, 1], tf.float32, initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], tf.float32, initializer=tf.zeros_initializer())
    pred = tf.matmul(features["x"], w) + b
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"y": pred, "twice": pred * 2.0})
    loss = tf.reduce_mean(tf.square(pred - labels))
    opt = tf.train.GradientDescentOptimizer(params["lr"])
    train = opt.minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=train,
        eval_metric_ops={"mae": tf.metrics.mean_absolute_error(labels, pred)})


def _train_input(x, y, **kw):
    return tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=20, shuffle=True, **kw)


class _Log(logging.Handler):
    """The "tensorflow" logger's records at INFO (TF's tf.logging), as text."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())

    @property
    def text(self):
        return "\n".join(self.lines)

    def __enter__(self):
        self._log = logging.getLogger("tensorflow")
        self._level = self._log.level
        self._log.setLevel(logging.INFO)
        self._log.addHandler(self)
        return self

    def __exit__(self, *exc):
        self._log.removeHandler(self)
        self._log.setLevel(self._level)


def test_train_evaluate_predict(tmp_path):
    x, y = _data()
    md = str(tmp_path / "model")
    cfg = tf.estimator.RunConfig(save_checkpoints_steps=100, log_step_count_steps=50,
                                 save_summary_steps=10)
    est = tf.estimator.Estimator(model_fn, model_dir=md, params={"lr": 0.3}, config=cfg)
    assert est.model_dir == md and est.params == {"lr": 0.3}
    with _Log() as caplog:
        est.train(_train_input(x, y, num_epochs=None), steps=250)
    log = caplog.text
    assert "Saving checkpoints for 0 into " + os.path.join(md, "model.ckpt.") in log
    assert "loss = " in log and ", step = 1" in log and "step = 50 (" in log
    assert "global_step/sec: " in log and "Loss for final step: " in log
    assert est.latest_checkpoint() == os.path.join(md, "model.ckpt-250")
    names = sorted(os.listdir(md))
    for s in (0, 100, 200, 250):
        assert f"model.ckpt-{s}.index" in names
    assert any(n.startswith("events.out.tfevents.") for n in names)
    events = [n for n in names if n.startswith("events.out.tfevents.")]
    assert os.path.getsize(os.path.join(md, events[0])) > 200

    # a second train goes on from step 250: steps add to it; max_steps stops at it
    est.train(_train_input(x, y, num_epochs=None), steps=50)
    assert est.latest_checkpoint() == os.path.join(md, "model.ckpt-300")
    with _Log() as caplog:
        est.train(_train_input(x, y, num_epochs=None), max_steps=300)
    assert "Skipping training since max_steps has already saved." in caplog.text

    # the end of the input ends training: 1 epoch of 200 rows in batches of 20 = 10 steps
    est.train(_train_input(x, y, num_epochs=1))
    assert est.latest_checkpoint() == os.path.join(md, "model.ckpt-310")

    ev_in = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=64, num_epochs=1,
                                               shuffle=False)
    res = est.evaluate(ev_in)
    assert set(res) == {"loss", "mae", "global_step"}
    assert res["global_step"] == 310 and res["loss"] < 1e-4 and res["mae"] < 1e-2
    assert os.listdir(os.path.join(md, "eval"))
    res2 = est.evaluate(ev_in, steps=1, name="one")
    assert os.path.isdir(os.path.join(md, "eval_one")) and res2["global_step"] == 310

    pr_in = tf.estimator.inputs.numpy_input_fn({"x": x[:5]}, batch_size=2, shuffle=False)
    preds = list(est.predict(pr_in))
    assert len(preds) == 5 and set(preds[0]) == {"y", "twice"}
    got = np.array([p["y"] for p in preds])
    np.testing.assert_allclose(got, y[:5], atol=1e-2)
    only = list(est.predict(pr_in, predict_keys=["twice"]))
    np.testing.assert_allclose(np.array([p["twice"] for p in only]), 2 * got, rtol=1e-6)
    batches = list(est.predict(pr_in, yield_single_examples=False))
    assert [len(b["y"]) for b in batches] == [2, 2, 1]
    with pytest.raises(ValueError, match="Expected to run at least one output"):
        list(est.predict(pr_in, predict_keys=["nope"]))

    # real TensorFlow reads the checkpoint
    code = ("import sys, tensorflow as tf; r = tf.train.load_checkpoint(sys.argv[1]); "
            "print(r.get_tensor('global_step')); print(*r.get_tensor('w').ravel())")
    r = subprocess.run([sys.executable, "-c", code, est.latest_checkpoint()],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if r.returncode != 0 and "No module named 'tensorflow'" in r.stderr:
        pytest.skip("TensorFlow is not installed here")
    assert r.returncode == 0, r.stderr
    step, ws = r.stdout.strip().splitlines()
    assert int(step) == 310
    np.testing.assert_allclose([float(v) for v in ws.split()], W_TRUE.ravel(), atol=1e-2)


def test_numpy_input_fn_batches():
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    y = np.arange(5, dtype=np.int64)
    with tf.Graph().as_default() as g:
        feats, labels = tf.estimator.inputs.numpy_input_fn(
            {"a": x, "b": x[:, 0]}, y, batch_size=2, num_epochs=2, shuffle=False)()
        assert feats["a"].dtype == tf.float32 and feats["a"].shape.as_list() == [None, 2]
        assert labels.dtype == tf.int64
        assert feats["a"].op.type == "QueueDequeueUpToV2"
        seen = []
        with tf.Session() as s:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(s, coord)
            while True:
                try:
                    seen.append(s.run(labels).tolist())
                except tf.errors.OutOfRangeError as e:
                    assert "is closed and has insufficient elements" in e.message
                    break
            coord.request_stop()
            coord.join(threads)
    # two epochs in order, batches spanning the epoch boundary, the last one short
    assert seen == [[0, 1], [2, 3], [4, 0], [1, 2], [3, 4]]


def test_errors(tmp_path):
    x, y = _data(10)
    with pytest.raises(ValueError, match="shuffle must be provided and explicitly set as boolean"):
        tf.estimator.inputs.numpy_input_fn({"x": x}, y)
    with pytest.raises(ValueError, match="Length of tensors in x and y is mismatched"):
        with tf.Graph().as_default():
            tf.estimator.inputs.numpy_input_fn({"x": x}, y[:3], shuffle=False)()
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path), params={"lr": 0.1})
    inp = _train_input(x, y, num_epochs=None)
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps."):
        est.train(inp, steps=1, max_steps=2)
    with pytest.raises(ValueError, match="Must specify steps > 0, given: 0"):
        est.train(inp, steps=0)
    with pytest.raises(ValueError, match="Missing train_op."):
        tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.TRAIN, loss=tf.constant(1.0))
    with pytest.raises(ValueError, match="Missing predictions."):
        tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.PREDICT)
    with pytest.raises(ValueError, match="Can not provide both save_checkpoints_steps and"):
        tf.estimator.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1)
    assert tf.estimator.RunConfig().save_checkpoints_secs == 600
    assert tf.estimator.RunConfig(save_checkpoints_steps=5).save_checkpoints_secs is None
    assert (tf.estimator.ModeKeys.TRAIN, tf.estimator.ModeKeys.EVAL,
            tf.estimator.ModeKeys.PREDICT) == ("train", "eval", "infer")
