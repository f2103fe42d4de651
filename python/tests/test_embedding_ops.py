"""Indexing ops, embeddings and sampled losses (python/rill/compat/v1/_embedding_ops.py):
values against TensorFlow (run in a subprocess with the venv's real tensorflow) and numpy, TF's
error texts, a word2vec-style nce_loss step whose embedding update touches only the looked-up
rows, and sampled_softmax_loss against a dense softmax when every class is sampled."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tfref

import rill.compat.v1 as tf

TF_PY = tfref.TF_PY


def _run(t, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(t, feed)


def _tf_reference(code):
    """Runs code with real TensorFlow (tf = tensorflow.compat.v1) in a subprocess; it prints a
    JSON value, returned here. Skips when TensorFlow is not there."""
    if not os.path.exists(TF_PY):
        tfref.skip("no TensorFlow venv")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    prog = ("import json, numpy as np\nimport tensorflow.compat.v1 as tf\n"
            "tf.disable_v2_behavior()\n" + code)
    r = subprocess.run([TF_PY, "-c", prog], capture_output=True, text=True, env=env, timeout=120)
    if r.returncode != 0:
        tfref.skip("TensorFlow reference failed: " + r.stderr[-300:])
    return json.loads(r.stdout.strip().splitlines()[-1])


P = np.arange(24, dtype=np.float32).reshape(4, 3, 2)


def test_against_tensorflow():
    tf.reset_default_graph()
    p = tf.constant(P)
    outs = [tf.gather(p, [[3, 1], [0, 3]]), tf.gather(p, [2, 0], axis=1),
            tf.gather(p, [1], axis=-1), tf.gather_nd(p, [[1, 2], [3, 0]]),
            tf.gather_nd(p, [[0, 1, 1]]),
            tf.scatter_nd([[1], [3], [1]], tf.constant([[1., 2.], [3., 4.], [5., 6.]]), [5, 2]),
            tf.nn.top_k(tf.constant([[1., 5., 3., 5.], [0., -1., 2., 7.]]), k=3).values,
            tf.nn.top_k(tf.constant([[1., 5., 3., 5.], [0., -1., 2., 7.]]), k=3).indices,
            tf.nn.in_top_k(tf.constant([[.1, .8, .1], [.5, .2, .3], [.3, .3, .4]]), [1, 2, 0], 2),
            tf.unique(tf.constant([4, 1, 4, 2, 1])).y, tf.unique(tf.constant([4, 1, 4, 2, 1])).idx,
            tf.unsorted_segment_sum(tf.constant([[1., 2.], [3., 4.], [5., 6.]]), [2, 0, 2], 4),
            tf.segment_sum(tf.constant([1., 2., 3., 4.]), [0, 0, 1, 3]),
            tf.gradients(tf.reduce_sum(tf.gather(p, [3, 1, 3]) * 2.0), p)[0],
            tf.gradients(tf.reduce_sum(tf.gather(p, [1, 1], axis=1)), p)[0]]
    mine = [np.asarray(v).tolist() for v in _run(outs)]
    ref = _tf_reference("""
P = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
p = tf.constant(P)
outs = [tf.gather(p, [[3, 1], [0, 3]]), tf.gather(p, [2, 0], axis=1),
        tf.gather(p, [1], axis=-1), tf.gather_nd(p, [[1, 2], [3, 0]]),
        tf.gather_nd(p, [[0, 1, 1]]),
        tf.scatter_nd([[1], [3], [1]], tf.constant([[1., 2.], [3., 4.], [5., 6.]]), [5, 2]),
        tf.nn.top_k(tf.constant([[1., 5., 3., 5.], [0., -1., 2., 7.]]), k=3).values,
        tf.nn.top_k(tf.constant([[1., 5., 3., 5.], [0., -1., 2., 7.]]), k=3).indices,
        tf.nn.in_top_k(tf.constant([[.1, .8, .1], [.5, .2, .3], [.3, .3, .4]]), [1, 2, 0], 2),
        tf.unique(tf.constant([4, 1, 4, 2, 1])).y, tf.unique(tf.constant([4, 1, 4, 2, 1])).idx,
        tf.unsorted_segment_sum(tf.constant([[1., 2.], [3., 4.], [5., 6.]]), [2, 0, 2], 4),
        tf.segment_sum(tf.constant([1., 2., 3., 4.]), [0, 0, 1, 3]),
        tf.convert_to_tensor(tf.gradients(tf.reduce_sum(tf.gather(p, [3, 1, 3]) * 2.0), p)[0]),
        tf.convert_to_tensor(tf.gradients(tf.reduce_sum(tf.gather(p, [1, 1], axis=1)), p)[0])]
with tf.Session() as s:
    print(json.dumps([np.asarray(v).tolist() for v in s.run(outs)]))
""")
    assert len(mine) == len(ref)
    for i, (a, b) in enumerate(zip(mine, ref)):
        assert np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float)), (i, a, b)


def test_errors():
    tf.reset_default_graph()
    p = tf.constant(P)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1,0\] = 7 is not in "
                                                               r"\[0, 4\)"):
        _run(tf.gather(p, [[0], [7]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="segment_ids"):
        _run(tf.unsorted_segment_sum(tf.constant([1., 2.]), [0, 5], 3))
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not index into param shape"):
        _run(tf.gather_nd(p, [[9, 0]]))
    with pytest.raises(Exception, match="at least k columns|last dimension >= k"):
        _run(tf.nn.top_k(tf.constant([1., 2.]), k=3))
    with pytest.raises(TypeError):
        tf.gather(p, [0.5])


def test_names_and_tensor_axis():
    tf.reset_default_graph()
    p = tf.constant(P)
    assert tf.gather(p, [1]).op.name == "GatherV2"
    assert tf.nn.top_k(p[0], 1).values.op.type == "TopKV2"
    assert tf.nn.in_top_k(tf.constant([[1., 2.]]), [1], 1).op.name == "in_top_k/InTopKV2"
    v = tf.Variable(P)
    assert tf.nn.embedding_lookup(v, [0]).op.name == "embedding_lookup"
    g = tf.gather(p, [1, 0], axis=tf.constant(2))
    assert g.shape.as_list() == [4, 3, 2]
    np.testing.assert_array_equal(_run(g), P[:, :, [1, 0]])
    assert tf.math.top_k is tf.nn.top_k
    assert tf.random.log_uniform_candidate_sampler is tf.nn.log_uniform_candidate_sampler


def test_scatter_ops_on_variables():
    tf.reset_default_graph()
    v = tf.Variable(np.zeros((4, 2), np.float32))
    a = tf.scatter_add(v, [1, 1, 3], tf.ones([3, 2]))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(s.run(a), [[0, 0], [2, 2], [0, 0], [1, 1]])
        s.run(tf.scatter_sub(v, [3], [[1., 0.5]]))
        s.run(tf.scatter_update(v, [0], [[7., 8.]]))
        np.testing.assert_array_equal(s.run(v), [[7, 8], [2, 2], [0, 0], [0, 0.5]])


def test_embedding_lookup_partitioned():
    tf.reset_default_graph()
    full = np.arange(14, dtype=np.float32).reshape(7, 2)
    ids = np.array([0, 6, 3, 4, 1, 3], np.int32)
    # mod: row i lives in partition i % 3 at i // 3; div (7 = 3 + 2 + 2): rows 0-2, 3-4, 5-6
    mod = [tf.Variable(full[k::3]) for k in range(3)]
    div = [tf.Variable(full[0:3]), tf.Variable(full[3:5]), tf.Variable(full[5:7])]
    lm = tf.nn.embedding_lookup(mod, ids, partition_strategy="mod")
    ld = tf.nn.embedding_lookup(div, ids, partition_strategy="div")
    g = tf.gradients(tf.reduce_sum(lm), mod)
    rm, rd, gr = _run([lm, ld, g])
    np.testing.assert_array_equal(rm, full[ids])
    np.testing.assert_array_equal(rd, full[ids])
    counts = np.bincount(ids, minlength=7)
    for k in range(3):
        np.testing.assert_array_equal(gr[k][:, 0], counts[k::3])
    with pytest.raises(ValueError, match="max_norm"):
        tf.nn.embedding_lookup(mod[0], ids, max_norm=1.0)


def test_word2vec_nce_step_touches_looked_up_rows():
    tf.reset_default_graph()
    V, D, B, S = 50, 8, 16, 10
    tf.set_random_seed(1)
    emb = tf.Variable(np.random.RandomState(0).uniform(-1, 1, (V, D)).astype(np.float32))
    w = tf.Variable(np.random.RandomState(1).normal(0, 0.1, (V, D)).astype(np.float32))
    b = tf.Variable(np.zeros(V, np.float32))
    x = tf.placeholder(tf.int32, [B])
    y = tf.placeholder(tf.int64, [B, 1])
    loss = tf.reduce_mean(tf.nn.nce_loss(w, b, y, tf.nn.embedding_lookup(emb, x), S, V))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    types = {o.type for o in tf.get_default_graph().get_operations()
             if o.name.startswith("GradientDescent/update_Variable/")}
    assert "ScatterSub" in types  # the embedding's update is sparse
    wtypes = {o.type for o in tf.get_default_graph().get_operations()
              if o.name.startswith("GradientDescent/update_Variable_1/")}
    assert "ScatterSub" in wtypes  # and so is nce's weights' (one lookup of true + sampled)
    rs = np.random.RandomState(2)
    xs = rs.randint(0, 20, B).astype(np.int32)
    ys = ((xs + 1) % V).reshape(B, 1).astype(np.int64)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        e0 = s.run(emb)
        ls = [s.run([loss, train], {x: xs, y: ys})[0] for _ in range(30)]
        e1 = s.run(emb)
    assert ls[-1] < 0.5 * ls[0]
    changed = set(np.where(np.any(e0 != e1, axis=1))[0].tolist())
    assert changed == set(xs.tolist())


def test_candidate_samplers():
    tf.reset_default_graph()
    tc = tf.constant([[1], [3]], dtype=tf.int64)
    lu = tf.nn.log_uniform_candidate_sampler(tc, 1, 20, True, 100, seed=3)
    un = tf.random.uniform_candidate_sampler(tc, 1, 5, False, 10, seed=4)
    a, b = _run([lu, un])
    assert len(set(a.sampled_candidates.tolist())) == 20
    assert a.sampled_candidates.min() >= 0 and a.sampled_candidates.max() < 100
    assert a.true_expected_count.shape == (2, 1) and np.all(a.true_expected_count > 0)
    p1 = np.log(3 / 2) / np.log(101)  # P(class 1) under log-uniform over [0, 100)
    assert a.true_expected_count[0, 0] <= 1 and a.true_expected_count[0, 0] > 20 * p1 * 0.5
    np.testing.assert_allclose(b.sampled_expected_count, 5 / 10, rtol=1e-6)
    hits = tf.nn.compute_accidental_hits(tc, tf.constant([3, 0, 1, 3], tf.int64), num_true=1)
    i, ids, w = _run(list(hits))
    assert sorted(zip(i.tolist(), ids.tolist())) == [(0, 2), (1, 0), (1, 3)]
    assert np.all(w < -1e37)


def test_sampled_softmax_all_classes_equals_dense():
    tf.reset_default_graph()
    C, D, B = 6, 4, 5
    rs = np.random.RandomState(5)
    W, bias, X = rs.normal(size=(C, D)), rs.normal(size=C), rs.normal(size=(B, D))
    lab = rs.randint(0, C, (B, 1))
    w, bb = tf.Variable(W.astype(np.float32)), tf.Variable(bias.astype(np.float32))
    # every class sampled once, expected counts 1: log q = 0, so the sampled logits are the full
    # logits; the true class's sampled copy is an accidental hit and is removed
    sv = (tf.constant(np.arange(C), tf.int64), tf.constant(np.ones((B, 1), np.float32)),
          tf.constant(np.ones(C, np.float32)))
    l = tf.nn.sampled_softmax_loss(w, bb, tf.constant(lab, tf.int64),
                                   tf.constant(X.astype(np.float32)), C, C, sampled_values=sv)
    got = _run(l)
    logits = X @ W.T + bias
    ref = np.log(np.exp(logits).sum(1)) - logits[np.arange(B), lab[:, 0]]
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


def test_sampled_losses_against_tensorflow():
    rs = np.random.RandomState(7)
    C, D, B, S = 12, 5, 4, 6
    W = rs.normal(size=(C, D)).astype(np.float32)
    bias = rs.normal(size=C).astype(np.float32)
    X = rs.normal(size=(B, D)).astype(np.float32)
    lab = np.array([[1], [4], [7], [4]], np.int64)
    samp = np.array([0, 4, 9, 3, 11, 7], np.int64)
    tec = rs.uniform(0.1, 1, (B, 1)).astype(np.float32)
    sec = rs.uniform(0.1, 1, S).astype(np.float32)
    data = {"W": W.tolist(), "b": bias.tolist(), "X": X.tolist(), "lab": lab.tolist(),
            "samp": samp.tolist(), "tec": tec.tolist(), "sec": sec.tolist()}
    code = """
d = json.loads('%s')
f = lambda k, t=np.float32: tf.constant(np.array(d[k], t))
sv = (f("samp", np.int64), f("tec"), f("sec"))
outs = []
for hits in (False, True):
    outs.append(tf.nn.nce_loss(f("W"), f("b"), f("lab", np.int64), f("X"), %d, %d,
                               sampled_values=sv, remove_accidental_hits=hits))
    outs.append(tf.nn.sampled_softmax_loss(f("W"), f("b"), f("lab", np.int64), f("X"), %d, %d,
                                           sampled_values=sv, remove_accidental_hits=hits))
with tf.Session() as s:
    print(json.dumps([v.tolist() for v in s.run(outs)]))
""" % (json.dumps(data), S, C, S, C)
    ref = _tf_reference(code)
    tf.reset_default_graph()
    w, b = tf.Variable(W), tf.Variable(bias)
    sv = (tf.constant(samp), tf.constant(tec), tf.constant(sec))
    outs = []
    for hits in (False, True):
        outs.append(tf.nn.nce_loss(w, b, tf.constant(lab), tf.constant(X), S, C,
                                   sampled_values=sv, remove_accidental_hits=hits))
        outs.append(tf.nn.sampled_softmax_loss(w, b, tf.constant(lab), tf.constant(X), S, C,
                                               sampled_values=sv, remove_accidental_hits=hits))
    got = _run(outs)
    for i, (a, r) in enumerate(zip(got, ref)):
        np.testing.assert_allclose(a, np.asarray(r), rtol=1e-4, atol=1e-4, err_msg=str(i))
