"""tf.metrics: every metric after several update batches against numpy references, the same
program on real TensorFlow (its own process) for the values and the local variables' names, the
collections, and tf.local_variables_initializer resetting the counts."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import rill.compat.v1 as tf

# One program for both: run on rill through rill.run, on TensorFlow as it is.
PROG = '# one program for rill and TF: prints JSON of metric values after each update batch\nimport json, sys\nimport numpy as np\nimport tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\nrng = np.random.RandomState(0)\nB, K = 3, 50\nlabels = [rng.randint(0, 2, K) for _ in range(B)]\nprobs = [np.clip(rng.rand(K) * 0.6 + l * 0.35, 0, 1).astype(np.float32) for l in labels]\nweights = [rng.rand(K).astype(np.float32) for _ in range(B)]\nreg_y = [rng.randn(K).astype(np.float32) for _ in range(B)]\nreg_p = [(y + rng.randn(K) * 0.5).astype(np.float32) for y in reg_y]\nL = tf.placeholder(tf.int64, [None]); P = tf.placeholder(tf.float32, [None])\nW = tf.placeholder(tf.float32, [None]); Y = tf.placeholder(tf.float32, [None])\nQ = tf.placeholder(tf.float32, [None])\ncls = tf.cast(tf.greater(P, 0.5), tf.int64) if hasattr(tf, "greater") and sys.argv[1:] == ["tf"] else None\nif cls is None:\n    import rill.compat.v1.metrics as _m\n    cls = tf.cast(_m._gt(P, 0.5), tf.int64)\nm = {\n  "accuracy": tf.metrics.accuracy(L, cls),\n  "accuracy_w": tf.metrics.accuracy(L, cls, weights=W),\n  "mean": tf.metrics.mean(Q),\n  "mean_w": tf.metrics.mean(Q, weights=W),\n  "precision": tf.metrics.precision(L, cls),\n  "recall_w": tf.metrics.recall(L, cls, weights=W),\n  "tp": tf.metrics.true_positives(L, cls), "fp": tf.metrics.false_positives(L, cls),\n  "tn": tf.metrics.true_negatives(L, cls, weights=W), "fn": tf.metrics.false_negatives(L, cls),\n  "mse": tf.metrics.mean_squared_error(Y, Q), "mae_w": tf.metrics.mean_absolute_error(Y, Q, weights=W),\n  "rmse": tf.metrics.root_mean_squared_error(Y, Q),\n  "auc": tf.metrics.auc(L, P), "auc_w": tf.metrics.auc(L, P, weights=W, num_thresholds=50),\n  "auc_pr": tf.metrics.auc(L, P, curve="PR"),\n  "auc_pr_ci": tf.metrics.auc(L, P, curve="PR", summation_method="careful_interpolation"),\n  "auc_min": tf.metrics.auc(L, P, summation_method="minoring"),\n  "auc_maj": tf.metrics.auc(L, P, summation_method="majoring"),\n}\nnames = sorted(v.name for v in tf.local_variables())\nout = {"names": names, "updates": [], "values": []}\nwith tf.Session() as s:\n    s.run(tf.local_variables_initializer())\n    for b in range(B):\n        fd = {L: labels[b], P: probs[b], W: weights[b], Y: reg_y[b], Q: reg_p[b]}\n        out["updates"].append({k: float(s.run(u, fd)) for k, (v, u) in m.items()})\n        out["values"].append({k: float(s.run(v)) for k, (v, u) in m.items()})\nprint(json.dumps(out))\n'


def _run(tmp_path, which):
    path = tmp_path / "metrics_prog.py"
    path.write_text(PROG)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    cmd = ([sys.executable, "-m", "rill.run", str(path)] if which == "rill"
           else [sys.executable, str(path), "tf"])
    if which == "tf":
        env.pop("PYTHONPATH", None)
    else:  # this rill, whatever the working directory
        import rill
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(rill.__file__)))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env,
                       cwd=str(tmp_path))
    if which == "tf" and r.returncode != 0 and "No module named 'tensorflow'" in r.stderr:
        pytest.skip("TensorFlow is not installed here")
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _data():
    rng = np.random.RandomState(0)
    B, K = 3, 50
    labels = [rng.randint(0, 2, K) for _ in range(B)]
    probs = [np.clip(rng.rand(K) * 0.6 + l * 0.35, 0, 1).astype(np.float32) for l in labels]
    weights = [rng.rand(K).astype(np.float32) for _ in range(B)]
    reg_y = [rng.randn(K).astype(np.float32) for _ in range(B)]
    reg_p = [(y + rng.randn(K) * 0.5).astype(np.float32) for y in reg_y]
    return labels, probs, weights, reg_y, reg_p


def _auc_ref(lab, p, w, n, curve="ROC", method="trapezoidal"):
    """AUC from TF's documented construction, in float64."""
    thr = np.array([-1e-7] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + 1e-7])
    pos = p[None, :] > thr[:, None]
    lab = lab[None, :].astype(bool)
    tp = ((lab & pos) * w).sum(1)
    fn = ((lab & ~pos) * w).sum(1)
    tn = ((~lab & ~pos) * w).sum(1)
    fp = ((~lab & pos) * w).sum(1)
    eps = 1e-6
    rec = (tp + eps) / (tp + fn + eps)
    if curve == "ROC":
        x, y = fp / (fp + tn + eps), rec
    else:
        x, y = rec, (tp + eps) / (tp + fp + eps)
    h = {"trapezoidal": (y[:-1] + y[1:]) / 2, "minoring": np.minimum(y[:-1], y[1:]),
         "majoring": np.maximum(y[:-1], y[1:])}[method]
    return float(((x[:-1] - x[1:]) * h).sum())


def _references():
    labels, probs, weights, ys, qs = _data()
    out = []
    for b in range(1, len(labels) + 1):
        L = np.concatenate(labels[:b]); P = np.concatenate(probs[:b])
        W = np.concatenate(weights[:b]).astype(np.float64)
        Y = np.concatenate(ys[:b]).astype(np.float64); Q = np.concatenate(qs[:b]).astype(np.float64)
        c = (P > 0.5).astype(np.int64)
        tp = float(((L == 1) & (c == 1)).sum()); fp = float(((L == 0) & (c == 1)).sum())
        tpw = float((((L == 1) & (c == 1)) * W).sum()); fnw = float((((L == 1) & (c == 0)) * W).sum())
        out.append({
            "accuracy": float((c == L).mean()), "accuracy_w": float(((c == L) * W).sum() / W.sum()),
            "mean": float(Q.mean()), "mean_w": float((Q * W).sum() / W.sum()),
            "precision": tp / (tp + fp), "recall_w": tpw / (tpw + fnw),
            "tp": tp, "fp": fp, "tn": float((((L == 0) & (c == 0)) * W).sum()),
            "fn": float(((L == 1) & (c == 0)).sum()),
            "mse": float(((Q - Y) ** 2).mean()), "mae_w": float((abs(Q - Y) * W).sum() / W.sum()),
            "rmse": float(np.sqrt(((Q - Y) ** 2).mean())),
            "auc": _auc_ref(L, P, np.ones_like(W), 200),
            "auc_w": _auc_ref(L, P, W, 50),
            "auc_pr": _auc_ref(L, P, np.ones_like(W), 200, "PR"),
            "auc_min": _auc_ref(L, P, np.ones_like(W), 200, method="minoring"),
            "auc_maj": _auc_ref(L, P, np.ones_like(W), 200, method="majoring"),
        })
    return out


@pytest.fixture(scope="module")
def rill_out(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("rill"), "rill")


def test_against_numpy(rill_out):
    refs = _references()
    for kind in ("updates", "values"):
        for got, want in zip(rill_out[kind], refs):
            for k, v in want.items():
                assert got[k] == pytest.approx(v, rel=2e-5, abs=2e-6), (kind, k)
    # the value after an update is the update's result
    assert rill_out["updates"] == rill_out["values"]


def test_against_tensorflow(rill_out, tmp_path):
    want = _run(tmp_path, "tf")
    assert rill_out["names"] == want["names"]
    for kind in ("updates", "values"):
        for got, ref in zip(rill_out[kind], want[kind]):
            for k in ref:
                assert got[k] == pytest.approx(ref[k], rel=1e-5, abs=1e-6), (kind, k)


def test_variables_collections_and_reset():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None])
        lab = tf.placeholder(tf.int32, [None])
        v, u = tf.metrics.mean(x, metrics_collections=["m"], updates_collections=["u"])
        a, au = tf.metrics.accuracy(lab, lab, name="acc")
        a2, _ = tf.metrics.accuracy(lab, lab)
        a3, _ = tf.metrics.accuracy(lab, lab)
        names = [var.name for var in tf.local_variables()]
        assert names == ["mean/total:0", "mean/count:0", "acc/total:0", "acc/count:0",
                         "accuracy/total:0", "accuracy/count:0", "accuracy_1/total:0",
                         "accuracy_1/count:0"]
        assert tf.global_variables() == [] and tf.trainable_variables() == []
        from rill.compat.v1 import _local_variables as lv
        assert lv.get_collection("m") == [v] and lv.get_collection("u") == [u]
        assert [m.name for m in lv.get_collection("metric_variables")] == names
        assert v.name == "mean/value:0" and u.name == "mean/update_op:0"
        assert a2.name == "accuracy/value:0" and a3.name == "accuracy_1/value:0"
        init = tf.local_variables_initializer()
    with tf.Session(graph=g) as s:
        with pytest.raises(tf.errors.FailedPreconditionError):
            s.run(v)
        s.run(init)
        assert s.run(v) == 0.0  # no values yet: 0, not nan
        assert s.run(u, {x: [1.0, 2.0, 6.0]}) == 3.0
        assert s.run(u, {x: [7.0]}) == 4.0
        s.run(init)
        assert s.run(u, {x: [5.0]}) == 5.0
        assert s.run(au, {lab: [1, 2]}) == 1.0


def test_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="incompatible"):
            tf.metrics.accuracy(tf.constant([1, 2, 3]), tf.constant([1, 2]))
        with pytest.raises(ValueError, match="curve must be either ROC or PR"):
            tf.metrics.auc(tf.constant([1]), tf.constant([0.5]), curve="XY")
        with pytest.raises(ValueError, match="num_thresholds must be > 1"):
            tf.metrics.auc(tf.constant([1]), tf.constant([0.5]), num_thresholds=1)
