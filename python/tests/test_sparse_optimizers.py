"""Sparse updates of tf.train's RMSProp (plain and centered), Adadelta, Ftrl (V1 and V2),
ProximalAdagrad and ProximalGradientDescent: an embedding trained through
tf.nn.embedding_lookup with repeated ids gets TF's Sparse* op (SparseApplyRMSProp, ...) and,
after 4 steps with different ids, TF's values (TF 2.15 in a subprocess); rows never looked up
keep their initial values."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tfref

import rill.compat.v1 as tf

EMB0 = (np.arange(18, dtype=np.float32).reshape(6, 3) * 0.1 - 0.8).tolist()
W = [[0.5, -0.2, 1.0], [1.5, 0.3, -0.7], [-1.0, 2.0, 0.25], [0.8, 0.8, -0.1]]
IDS = [[1, 3, 1, 4], [4, 1, 4, 4], [3, 3, 1, 0], [1, 4, 3, 1]]  # rows 2 and 5 never

CASES = [
    ("rmsprop", "tf.train.RMSPropOptimizer(0.05)", "SparseApplyRMSProp"),
    ("rmsprop_mom", "tf.train.RMSPropOptimizer(0.05, decay=0.8, momentum=0.5, epsilon=1e-6)",
     "SparseApplyRMSProp"),
    ("rmsprop_centered", "tf.train.RMSPropOptimizer(0.05, momentum=0.3, centered=True)",
     "SparseApplyCenteredRMSProp"),
    ("adadelta", "tf.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6)",
     "SparseApplyAdadelta"),
    ("ftrl", "tf.train.FtrlOptimizer(0.3, l1_regularization_strength=0.05, "
             "l2_regularization_strength=0.1)", "SparseApplyFtrl"),
    ("ftrl_pow", "tf.train.FtrlOptimizer(0.3, learning_rate_power=-0.7, "
                 "initial_accumulator_value=0.2)", "SparseApplyFtrl"),
    ("ftrl_shrink", "tf.train.FtrlOptimizer(0.3, l2_regularization_strength=0.1, "
                    "l2_shrinkage_regularization_strength=0.2)", "SparseApplyFtrlV2"),
    ("prox_adagrad", "tf.train.ProximalAdagradOptimizer(0.3, l1_regularization_strength=0.05, "
                     "l2_regularization_strength=0.1)", "SparseApplyProximalAdagrad"),
    ("prox_gd", "tf.train.ProximalGradientDescentOptimizer(0.1, l1_regularization_strength=0.5, "
                "l2_regularization_strength=0.2)", "SparseApplyProximalGradientDescent"),
]

BODY = """
def run_case(expr):
    tf.reset_default_graph()
    emb = tf.Variable(EMB0, dtype=tf.float32, name="emb")
    ids = tf.placeholder(tf.int32, [4], name="ids")
    loss = tf.reduce_sum(tf.constant(W) * tf.nn.embedding_lookup(emb, ids))
    train = eval(expr).minimize(loss)
    # TF 2.15's graph variables are resource variables: ResourceSparseApply... there
    types = sorted({op.type[8:] if op.type.startswith("Resource") else op.type
                    for op in tf.get_default_graph().get_operations()
                    if op.type.startswith(("Sparse", "Apply", "ResourceSparse", "ResourceApply"))})
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for step in IDS:
            s.run(train, {ids: step})
        return {"emb": s.run(emb).tolist(), "types": types}
"""

SCRIPT = """
import json, sys
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
EMB0, W, IDS, cases = json.loads(sys.argv[1])
""" + BODY + """
print(json.dumps({name: run_case(expr) for name, expr, _ in cases}))
"""

exec(BODY)  # run_case under rill


@pytest.fixture(scope="module")
def tf_ref():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    py = tfref.TF_PY
    if not os.path.exists(py):
        py = sys.executable
    try:
        r = subprocess.run([py, "-c", SCRIPT, json.dumps([EMB0, W, IDS, CASES])], env=env,
                           capture_output=True, text=True, timeout=180)
    except (OSError, subprocess.TimeoutExpired) as e:
        tfref.skip(f"no TensorFlow to compare with: {e}")
    if r.returncode != 0:
        tfref.skip(f"no TensorFlow to compare with: {r.stderr[-300:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name,expr,op", CASES, ids=[c[0] for c in CASES])
def test_sparse_update_matches_tf(tf_ref, name, expr, op):
    got = run_case(expr)
    ref = tf_ref[name]
    assert op in got["types"] and op in ref["types"]
    assert not any(t.startswith("Apply") for t in got["types"])  # no dense update of emb
    emb = np.array(got["emb"])
    np.testing.assert_allclose(emb, np.array(ref["emb"]), rtol=2e-5, atol=2e-6)
    for r in (2, 5):  # never looked up: untouched
        np.testing.assert_array_equal(emb[r], np.array(EMB0, dtype=np.float32)[r])
