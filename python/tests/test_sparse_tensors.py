"""tf.SparseTensor and what is built on it (compat/v1/_sparse_ops.py, the C ops of
src/graph/ops_sparse.c): the same graph-building code runs under rill and under TensorFlow 2.15's
compat.v1 (in a subprocess) and the fetched values must agree: sparse_to_dense /
sparse_tensor_to_dense / tf.sparse.to_dense, sparse placeholders fed with SparseTensorValues and
tuples and fetched back, embedding_lookup_sparse and safe_embedding_lookup_sparse (every combiner,
with and without weights, partitioned params, gradients), ctc_greedy_decoder, ctc_unique_labels,
SeparableConv2D with strides (1, 2); TF's errors; and the unigram samplers' expected counts
(exact) and draws (frequencies)."""
import json
import textwrap

import numpy as np
import pytest

import rill.compat.v1 as tf

import tfref

CASES = textwrap.dedent('''
import numpy as np

def to_py(v):
    if hasattr(v, "indices") and hasattr(v, "dense_shape"):
        return {"indices": to_py(v.indices), "values": to_py(v.values),
                "dense_shape": to_py(v.dense_shape)}
    if isinstance(v, (list, tuple)):
        return [to_py(x) for x in v]
    a = np.asarray(v)
    return a.astype(np.float64).tolist() if a.dtype.kind in "fiub" else a.tolist()

def cases(tf):
    rng = np.random.RandomState(3)
    out = {}
    sp = tf.SparseTensor([[0, 1], [1, 0], [1, 2]], [5., 6., 7.], [2, 3])
    out["dense"] = (tf.sparse_tensor_to_dense(sp), {})
    out["dense_default"] = (tf.sparse.to_dense(sp, default_value=-1.), {})
    out["fetch_sparse"] = (sp, {})
    out["s2d_1d"] = (tf.sparse_to_dense([0, 2], [4], 7), {})
    out["s2d_scalar"] = (tf.sparse_to_dense(2, [4], 5., default_value=-1.), {})
    out["s2d_unvalidated"] = (tf.sparse_to_dense([[1, 1], [0, 1]], [2, 3], [1., 2.],
                                                 validate_indices=False), {})
    p = tf.sparse_placeholder(tf.float32, shape=[2, None], name="sp")
    pd = tf.sparse_tensor_to_dense(p)
    out["feed_value"] = (pd, {p: tf.SparseTensorValue([[0, 0], [1, 3]], [1., 2.], [2, 4])})
    out["feed_tuple"] = ([pd, p], {p: ([[0, 0]], [3.], [2, 2])})
    out["static"] = (None, [p.shape.as_list(), sp.shape.as_list(), p.indices.name,
                            p.values.name, p.dense_shape.name, pd.shape.as_list()])
    # embeddings over sparse ids
    params = tf.constant(rng.randn(10, 3))
    parts = [tf.constant(rng.randn(4, 3)), tf.constant(rng.randn(3, 3)),
             tf.constant(rng.randn(3, 3))]
    ids = tf.SparseTensor([[0, 0], [0, 1], [0, 3], [2, 0], [2, 1], [3, 2]],
                          tf.constant([1, 3, 1, 7, 9, 2], tf.int64), [4, 4])
    w = tf.SparseTensor([[0, 0], [0, 1], [0, 3], [2, 0], [2, 1], [3, 2]],
                        tf.constant([0.5, 2., 1., 3., -1., 0.], tf.float64), [4, 4])
    for c in ("sum", "mean", "sqrtn"):
        out["els_" + c] = (tf.nn.embedding_lookup_sparse(params, ids, None, combiner=c), {})
        out["elsw_" + c] = (tf.nn.embedding_lookup_sparse(params, ids, w, combiner=c), {})
        out["elsp_" + c] = (tf.nn.embedding_lookup_sparse(parts, ids, w, combiner=c,
                                                          partition_strategy="div"), {})
        e = tf.nn.embedding_lookup_sparse(params, ids, w, combiner=c)
        out["elsg_" + c] = (tf.convert_to_tensor(tf.gradients(tf.reduce_sum(e * e), params)[0]),
                            {})
    sids = tf.SparseTensor([[0, 0, 0], [0, 0, 1], [0, 2, 0], [1, 0, 0], [1, 1, 1]],
                           tf.constant([1, -1, 4, 6, 2], tf.int64), [2, 3, 2])
    sw = tf.SparseTensor([[0, 0, 0], [0, 0, 1], [0, 2, 0], [1, 0, 0], [1, 1, 1]],
                         tf.constant([2., 1., 0., 1.5, 1.], tf.float64), [2, 3, 2])
    for c in ("sum", "mean", "sqrtn"):
        out["safe_" + c] = (tf.nn.safe_embedding_lookup_sparse(params, sids, None, combiner=c),
                            {})
        out["safew_" + c] = (tf.nn.safe_embedding_lookup_sparse(parts, sids, sw, combiner=c),
                             {})
        out["safed_" + c] = (tf.nn.safe_embedding_lookup_sparse([params], sids, sw, combiner=c,
                                                                default_id=5), {})
    e = tf.nn.safe_embedding_lookup_sparse(parts, sids, sw)
    out["safe_grad"] = ([tf.convert_to_tensor(g) for g in tf.gradients(tf.reduce_sum(e * e), parts)],
                        {})
    # CTC
    x = tf.constant(rng.randn(6, 3, 4).astype(np.float32))
    for m in (True, False):
        dec, lp = tf.nn.ctc_greedy_decoder(x, [6, 4, 0], merge_repeated=m)
        out["ctc_%s" % m] = ([dec[0], lp], {})
    dec, lp = tf.nn.ctc_greedy_decoder(x, [6, 5, 3], blank_index=0)
    out["ctc_blank0"] = ([dec[0], lp], {})
    out["ctc_shape"] = (None, [lp.shape.as_list(), dec[0].indices.shape.as_list()])
    out["unique_labels"] = (list(tf.nn.ctc_unique_labels(
        tf.constant([[3, 4, 4, 3, 0, 7], [1, 1, 2, 5, 2, 1], [0, 0, 0, 0, 0, 0]]))), {})
    # SeparableConv2D with unequal strides (DepthwiseConv2dNative's)
    img = tf.constant(rng.randn(2, 7, 9, 3).astype(np.float32))
    dw = tf.constant(rng.randn(3, 3, 3, 2).astype(np.float32))
    pw = tf.constant(rng.randn(1, 1, 6, 4).astype(np.float32))
    for st, pad in (((1, 2), "SAME"), ((2, 1), "VALID")):
        y = tf.nn.separable_conv2d(img, dw, pw, [1, st[0], st[1], 1], pad)
        out["sep_%d%d" % st] = ([y] + tf.gradients(tf.reduce_sum(y * y), [img, dw]), {})
    lay = tf.layers.SeparableConv2D(4, 3, strides=(1, 2), padding="same",
                                    depthwise_initializer=tf.constant_initializer(0.3),
                                    pointwise_initializer=tf.constant_initializer(-0.2))
    out["sep_layer"] = (lay(img), {})
    return out

def run(tf):
    res = {}
    with tf.Graph().as_default():
        cs = cases(tf)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for k, (f, feed) in cs.items():
                res[k] = feed if f is None else to_py(s.run(f, feed))
    return res
''')

TF_MAIN = CASES + textwrap.dedent('''
import json
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
print(json.dumps(run(tf)))
''')


@pytest.fixture(scope="module")
def ref():
    return json.loads(tfref.run(["-c", TF_MAIN]).strip().splitlines()[-1])


@pytest.fixture(scope="module")
def ours():
    ns = {}
    exec(CASES, ns)  # noqa: S102  (the test's own source)
    return ns["run"](tf)


def _close(a, b, path=""):
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), path
        for k in a:
            _close(a[k], b[k], path + "." + k)
        return
    if isinstance(a, list) and any(isinstance(v, (dict, str)) for v in a):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (u, v) in enumerate(zip(a, b)):
            _close(u, v, f"{path}[{i}]")
        return
    try:
        x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    except (ValueError, TypeError):  # ragged: element by element
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (u, v) in enumerate(zip(a, b)):
            _close(u, v, f"{path}[{i}]")
        return
    assert x.shape == y.shape, (path, x.shape, y.shape)
    np.testing.assert_allclose(x, y, rtol=2e-5, atol=2e-5, err_msg=path)


NAMES = ["dense", "dense_default", "fetch_sparse", "s2d_1d", "s2d_scalar", "s2d_unvalidated",
         "feed_value", "feed_tuple", "static"] + \
    [p + c for p in ("els_", "elsw_", "elsp_", "elsg_", "safe_", "safew_", "safed_")
     for c in ("sum", "mean", "sqrtn")] + \
    ["safe_grad", "ctc_True", "ctc_False", "ctc_blank0", "ctc_shape", "unique_labels",
     "sep_12", "sep_21", "sep_layer"]


@tfref.need_tf
@pytest.mark.parametrize("name", NAMES)
def test_against_tf(ref, ours, name):
    if name == "static":
        assert ours[name] == ref[name]
        return
    _close(ours[name], ref[name], name)


def test_sparse_tensor_object():
    tf.reset_default_graph()
    sp = tf.SparseTensor([[0, 1]], [2.5], [3, 4])
    assert sp.dtype == tf.float32 and sp.indices.dtype == tf.int64
    assert sp.dense_shape.dtype == tf.int64 and sp.graph is tf.get_default_graph()
    assert sp.op is sp.values.op and sp.get_shape().as_list() == [3, 4]
    v = tf.SparseTensorValue([[0]], [1], [2])
    assert v.indices == [[0]] and tf.SparseTensor.from_value(v).dense_shape.dtype == tf.int64
    with tf.Session() as s:
        got = sp.eval(session=s)
    assert isinstance(got, tf.SparseTensorValue) and got.values.tolist() == [2.5]


def test_errors():
    tf.reset_default_graph()
    with pytest.raises(TypeError, match="not in list of allowed values: int32, int64"):
        tf.sparse_to_dense([[0.5, 1.]], [2, 3], [1.])
    with pytest.raises(TypeError, match="does not match type int32 of argument 'sparse_indices'"):
        tf.sparse_to_dense([[0, 1]], tf.constant([2, 3], tf.int64), [1.])
    with pytest.raises(TypeError, match="Expected int32 passed to parameter 'default_value'"):
        tf.sparse_to_dense([[0, 1]], [2, 3], [1, 2], default_value=1.5)
    with pytest.raises(ValueError, match="combiner must be one of"):
        tf.nn.embedding_lookup_sparse(tf.zeros([3, 2]), tf.SparseTensor([[0, 0]], [1], [1, 1]),
                                      None, combiner="max")
    with pytest.raises(TypeError, match="sp_ids must be SparseTensor"):
        tf.nn.embedding_lookup_sparse(tf.zeros([3, 2]), tf.constant([1]), None)
    with tf.Session() as s:
        for ix, text in (([[0, 1], [0, 5]], r"indices\[1\] = \[0,5\] is out of bounds: need 0 "
                                             r"<= index < \[2,3\]"),
                         ([[1, 1], [0, 2]], r"indices\[1\] = \[0,2\] is out of order"),
                         ([[1, 1], [1, 1]], r"indices\[1\] = \[1,1\] is repeated")):
            with pytest.raises(tf.errors.InvalidArgumentError, match=text):
                s.run(tf.sparse_to_dense(ix, [2, 3], [1., 2.]))
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="sparse_values has incorrect shape \\[3\\], should be \\[\\] "
                                 "or \\[2\\]"):
            s.run(tf.sparse_to_dense([[0, 1], [0, 2]], [2, 3], [1., 2., 3.]))
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Must provide either vocab_file or unigrams."):
            s.run(tf.nn.fixed_unigram_candidate_sampler(np.array([[1]]), 1, 2, False, 5))
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="range is 5 must be equal to weights size  4"):
            s.run(tf.nn.fixed_unigram_candidate_sampler(np.array([[1]]), 1, 2, False, 5,
                                                        unigrams=[1, 2, 3, 4]))
        with pytest.raises(tf.errors.FailedPreconditionError, match=r"sequence_length\(0\) <= 2"):
            s.run(tf.nn.ctc_greedy_decoder(np.zeros((2, 1, 3), np.float32), [3])[1])


def test_fixed_unigram_sampler(tmp_path):
    """TF's exact expected counts (the values TF 2.15 gives for these arguments) and the
    draw's frequencies; a vocab file's last column; shards and reserved ids."""
    tf.reset_default_graph()
    tc = np.array([[1], [2]], np.int64)
    vocab = tmp_path / "v.txt"
    vocab.write_text("a,1\nb,2\n\nc,x,3\nd,4\ne,5\n")
    a = tf.nn.fixed_unigram_candidate_sampler(tc, 1, 3, False, 6, unigrams=[1, 2, 3, 4],
                                              num_reserved_ids=2)
    b = tf.nn.fixed_unigram_candidate_sampler(tc, 1, 3, False, 3, unigrams=[1, 2, 3, 4, 5, 6],
                                              num_shards=2, shard=1)
    c = tf.random.fixed_unigram_candidate_sampler(tc, 1, 3, False, 5, vocab_file=str(vocab),
                                                  distortion=0.5)
    big = tf.nn.fixed_unigram_candidate_sampler(tc, 1, 40000, False, 5, unigrams=[1, 2, 3, 4, 5],
                                                distortion=0.75, seed=3)
    u = tf.nn.fixed_unigram_candidate_sampler(tc, 1, 4, True, 5, unigrams=[1, 2, 3, 4, 5],
                                              seed=3)
    assert a[0].op.type == "FixedUnigramCandidateSampler"
    with tf.Session() as s:
        ra, rb, rc, rbig, ru = s.run([a, b, c, big, u])
    np.testing.assert_array_equal(ra[1], np.float32([[0], [0.3]]))
    assert set(ra[0]) <= {2, 3, 4, 5}
    np.testing.assert_array_equal(ra[2], np.float32(ra[0] - 1) / np.float32(10) * np.float32(3))
    np.testing.assert_array_equal(rb[1], np.float32([[1.], [1.5]]))
    np.testing.assert_allclose(rc[1], [[0.5061408], [0.6198933]], rtol=1e-6)
    w = np.arange(1, 6) ** 0.75
    freq = np.bincount(rbig[0], minlength=5) / 40000.
    assert np.all(np.abs(freq - w / w.sum()) < 5 * np.sqrt(w / w.sum() / 40000.))
    assert len(set(ru[0])) == 4
    # unique: TF's count -expm1(tries * log1p(-p)) for one number of tries >= 4
    p = np.float32(np.arange(1, 6) / 15.)
    tries = [t for t in range(4, 400) if np.allclose(
        -np.expm1(np.float32(t) * np.log1p(-p[ru[0]])), ru[2], rtol=1e-6)]
    assert tries, ru


def test_learned_unigram_sampler():
    """TF's UnigramSampler: weights 1 at first, each true class one more after each step (the
    values TF 2.15 gives); tf.random's alias."""
    tf.reset_default_graph()
    tc = np.array([[1], [2]], np.int64)
    s1 = tf.nn.learned_unigram_candidate_sampler(tc, 1, 3, False, 5, seed=1)
    assert tf.random.learned_unigram_candidate_sampler is tf.nn.learned_unigram_candidate_sampler
    want = [[0.6, 0.6], [0.8571429, 0.8571429], [1., 1.]]
    with tf.Session() as s:
        for step in range(3):
            got = s.run(s1)
            np.testing.assert_allclose(got[1].ravel(), want[step], rtol=1e-6)
            assert np.all((got[0] >= 0) & (got[0] < 5))
