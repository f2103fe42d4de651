"""tf.* math/array functions (compat/v1/_ops.py) and tf.nn (compat/v1/nn.py) against numpy:
values, dtypes, static shapes and op types (the C op each wrapper makes), tf.gradients against
finite differences, and TF's error texts for bad shapes."""
import numpy as np
import pytest

import rill.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def run(*ts, feed=None):
    with tf.Session() as s:
        return s.run(list(ts), feed)


def check(t, ref, type=None, dtype=None, rtol=1e-5, atol=1e-6):
    """t's value is ref (numpy), its dtype ref's (or dtype), its static shape ref's, its op's type
    the given one."""
    (v,) = run(t)
    ref = np.asarray(ref)
    if type is not None:
        assert t.op.type == type
    assert t.dtype == tf.as_dtype(dtype if dtype is not None else ref.dtype)
    assert t.shape.as_list() == list(ref.shape)
    v = np.asarray(v)
    assert v.shape == ref.shape
    if ref.dtype.kind == "f":
        np.testing.assert_allclose(v, ref, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(v, ref)
    return v


rng = np.random.RandomState(0)
A = rng.randn(3, 4).astype(np.float32)
B = rng.randn(3, 4).astype(np.float32)
P = (rng.rand(3, 4) + 0.5).astype(np.float32)


# --- reductions ---

@pytest.mark.parametrize("fn,np_fn,type", [(tf.reduce_sum, np.sum, "Sum"),
                                           (tf.reduce_mean, np.mean, "Mean")])
def test_reductions(fn, np_fn, type):
    x = tf.constant(A)
    check(fn(x), np_fn(A), type)
    check(fn(x, 0), np_fn(A, 0), type)
    check(fn(x, axis=-1, keepdims=True), np_fn(A, -1, keepdims=True), type)
    check(fn(x, [0, 1], keep_dims=True), np_fn(A, (0, 1), keepdims=True), type)
    check(fn(x, reduction_indices=[1]), np_fn(A, 1), type)
    with tf.Graph().as_default():
        assert fn(tf.constant(A)).op.name == type and fn(A, name="r").op.name == "r"


def test_reduce_sum_int():
    check(tf.reduce_sum(tf.constant([[1, 2], [3, 4]]), 1), np.array([3, 7], np.int32), "Sum")


# --- selection, comparison, casts ---

def test_argmax():
    x = tf.constant(A)
    check(tf.argmax(x, 1), np.argmax(A, 1), "ArgMax", tf.int64)
    check(tf.argmax(x), np.argmax(A, 0), "ArgMax", tf.int64)
    check(tf.argmax(x, axis=-1), np.argmax(A, -1), "ArgMax", tf.int64)
    check(tf.argmax(x, 1, output_type=tf.int32), np.argmax(A, 1).astype(np.int32), "Cast")
    assert tf.argmax(x, 1).op.name == "ArgMax_4"


def test_equal():
    a = tf.constant([1, 2, 3])
    check(tf.equal(a, tf.constant([1, 0, 3])), np.array([True, False, True]), "Equal", tf.bool)
    check(tf.equal(a, 2), np.array([False, True, False]), "Equal", tf.bool)
    # the accuracy idiom
    acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(tf.constant(A), 1),
                                          tf.argmax(tf.constant(B), 1)), tf.float32))
    check(acc, np.float32(np.mean(np.argmax(A, 1) == np.argmax(B, 1))), "Mean")


def test_cast():
    x = tf.constant([1.7, -2.2, 3.0])
    check(tf.cast(x, tf.int32), np.array([1, -2, 3], np.int32), "Cast")
    check(tf.cast(x, tf.float64), np.array([1.7, -2.2, 3.0], np.float32).astype(np.float64),
          "Cast")
    check(tf.to_float(tf.constant([1, 2])), np.array([1., 2.], np.float32), "Cast")
    check(tf.to_int64(x), np.array([1, -2, 3], np.int64), "Cast")
    assert tf.cast(x, tf.float32) is x
    assert tf.cast(x, tf.int32).op.name == "Cast_2"


# --- shapes ---

def test_reshape():
    x = tf.constant(A)
    check(tf.reshape(x, [4, 3]), A.reshape(4, 3), "Reshape")
    check(tf.reshape(x, [-1]), A.reshape(-1), "Reshape")
    check(tf.reshape(x, tf.constant([2, 6])), A.reshape(2, 6), "Reshape")
    check(tf.reshape(x, (2, -1, 2)), A.reshape(2, -1, 2), "Reshape")
    check(tf.reshape(tf.constant([5.0]), []), np.float32(5.0), "Reshape")
    p = tf.placeholder(tf.float32, [None, 4])
    r = tf.reshape(p, [-1, 2, 2])
    assert r.shape.as_list() == [None, 2, 2]
    np.testing.assert_array_equal(run(r, feed={p: A})[0], A.reshape(-1, 2, 2))


def test_expand_dims_shape_identity():
    x = tf.constant(A)
    check(tf.expand_dims(x, 0), A[None], "ExpandDims")
    check(tf.expand_dims(x, -1), A[..., None], "ExpandDims")
    check(tf.expand_dims(x, dim=1), A[:, None], "ExpandDims")
    check(tf.shape(x), np.array([3, 4], np.int32), "Shape")
    check(tf.shape(x, out_type=tf.int64), np.array([3, 4], np.int64), "Shape")
    i = tf.identity(x)
    check(i, A, "Identity")
    assert i.op.name == "Identity"


def test_like_fill_zeros_ones():
    x = tf.constant(A)
    z = check(tf.zeros_like(x), np.zeros_like(A), "ZerosLike")
    check(tf.ones_like(x), np.ones_like(A), "OnesLike")
    assert tf.zeros_like(x).op.name == "zeros_like_1" and tf.ones_like(x).op.name == "ones_like_1"
    check(tf.ones_like(tf.constant([1, 2])), np.ones(2, np.int32), "OnesLike")
    check(tf.fill([2, 3], 7.0), np.full((2, 3), 7.0, np.float32), "Fill")
    check(tf.fill(tf.constant([2]), 4), np.full(2, 4, np.int32), "Fill")
    check(tf.zeros([2, 3]), np.zeros((2, 3), np.float32), "Const")
    check(tf.ones([3], tf.int32), np.ones(3, np.int32), "Const")
    check(tf.zeros([40, 40]), np.zeros((40, 40), np.float32), "Fill")
    check(tf.ones(tf.constant([2, 2]), tf.float64), np.ones((2, 2)), "Fill")
    assert tf.zeros([2]).op.name == "zeros_2" and tf.ones([2]).op.name == "ones_2"
    assert z.dtype == np.float32


# --- elementwise ---

@pytest.mark.parametrize("fn,ref,type,x", [
    (tf.exp, np.exp, "Exp", A), (tf.log, np.log, "Log", P), (tf.sqrt, np.sqrt, "Sqrt", P),
    (tf.sigmoid, lambda v: 1 / (1 + np.exp(-v)), "Sigmoid", A), (tf.tanh, np.tanh, "Tanh", A),
    (tf.nn.sigmoid, lambda v: 1 / (1 + np.exp(-v)), "Sigmoid", A),
    (tf.nn.tanh, np.tanh, "Tanh", A), (tf.nn.relu, lambda v: np.maximum(v, 0), "Relu", A)])
def test_unary(fn, ref, type, x):
    t = fn(tf.constant(x))
    check(t, ref(x).astype(np.float32), type)
    assert t.op.name == type


def test_binary():
    a, b = tf.constant(A), tf.constant(B)
    check(tf.maximum(a, b), np.maximum(A, B), "Maximum")
    check(tf.maximum(a, 0.0), np.maximum(A, 0), "Maximum")
    check(tf.div(a, tf.constant(P)), A / P, "Div")
    check(tf.div(tf.constant([7, -7]), 2), np.array([3, -3], np.int32), "Div")  # Div truncates
    check(tf.add_n([a, b, a]), A + B + A, "AddN")
    assert tf.add_n([a]) is a
    assert tf.maximum(a, b).op.name == "Maximum_2" and tf.div(a, b).op.name == "div_2"


# --- gradients ---

def _fd(f, x, eps=1e-3):
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def test_gradients_vs_finite_differences():
    X = rng.randn(2, 3)
    W = rng.randn(3, 2)
    C = rng.randn(2, 2)

    def f_np(x, w):
        h = np.tanh(x @ w)
        return np.sum(h * C) + np.mean(np.exp(0.5 * x)) + np.sum(np.maximum(x, 0.1) ** 2)

    x = tf.placeholder(tf.float64, [2, 3])
    w = tf.placeholder(tf.float64, [3, 2])
    y = (tf.reduce_sum(tf.tanh(tf.matmul(x, w)) * tf.constant(C)) +
         tf.reduce_mean(tf.exp(x * 0.5)) + tf.reduce_sum(tf.square(tf.maximum(x, 0.1))))
    gx, gw = tf.gradients(y, [x, w])
    assert gx.dtype == tf.float64 and gx.shape.as_list() == [2, 3]
    assert gw.shape.as_list() == [3, 2]
    vx, vw, vy = run(gx, gw, y, feed={x: X, w: W})
    np.testing.assert_allclose(vy, f_np(X, W), rtol=1e-10)
    np.testing.assert_allclose(vx, _fd(lambda v: f_np(v, W), X), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(vw, _fd(lambda v: f_np(X, v), W), rtol=1e-5, atol=1e-6)


def test_gradients_nn_and_grad_ys():
    X = rng.randn(4, 3)
    L = np.eye(3)[[0, 2, 1, 1]]
    b = rng.randn(3)

    def f_np(x):
        z = x + b
        z = z - z.max(1, keepdims=True)
        return np.sum(-np.sum(L * (z - np.log(np.exp(z).sum(1, keepdims=True))), 1))

    x = tf.placeholder(tf.float64, [4, 3])
    loss = tf.reduce_sum(tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=tf.constant(L), logits=tf.nn.bias_add(x, tf.constant(b))))
    (g,) = tf.gradients(loss, x)
    np.testing.assert_allclose(run(g, feed={x: X})[0], _fd(f_np, X), rtol=1e-5, atol=1e-6)
    # grad_ys scales; an x that y does not depend on gets None
    u = tf.placeholder(tf.float64, [4, 3])
    g2, gu = tf.gradients([loss], [x, u], grad_ys=[tf.constant(3.0, tf.float64)])
    assert gu is None
    np.testing.assert_allclose(run(g2, feed={x: X})[0], 3 * _fd(f_np, X), rtol=1e-5, atol=1e-6)


def test_gradients_conv_pool():
    X = rng.randn(1, 4, 4, 2)
    F = rng.randn(2, 2, 2, 3)

    def f_np(x):
        return np.sum(np.sin(np.arange(27).reshape(1, 3, 3, 3)) * _conv_np(x, F, 1, "VALID"))

    x = tf.placeholder(tf.float64, [1, 4, 4, 2])
    y = tf.reduce_sum(tf.constant(np.sin(np.arange(27).reshape(1, 3, 3, 3))) *
                      tf.nn.conv2d(x, tf.constant(F), [1, 1, 1, 1], "VALID"))
    (g,) = tf.gradients(y, x)
    np.testing.assert_allclose(run(g, feed={x: X})[0], _fd(f_np, X), rtol=1e-5, atol=1e-6)


# --- tf.nn ---

def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_softmax_bias_add_xw_plus_b():
    x = tf.constant(A)
    check(tf.nn.softmax(x), _softmax(A), "Softmax")
    check(tf.nn.softmax(x, axis=-1), _softmax(A), "Softmax")
    bias = rng.randn(4).astype(np.float32)
    t = tf.nn.bias_add(x, tf.constant(bias))
    check(t, A + bias, "BiasAdd")
    assert t.op.name == "BiasAdd"
    w = rng.randn(4, 2).astype(np.float32)
    b2 = rng.randn(2).astype(np.float32)
    t = tf.nn.xw_plus_b(x, tf.constant(w), tf.constant(b2))
    check(t, A @ w + b2, "BiasAdd", rtol=1e-5, atol=1e-5)
    assert t.op.name == "xw_plus_b" and t.op.inputs[0].op.type == "MatMul"


def test_cross_entropies():
    lab = _softmax(B)
    ref = -np.sum(lab * np.log(_softmax(A)), 1)
    for fn in (tf.nn.softmax_cross_entropy_with_logits,
               tf.nn.softmax_cross_entropy_with_logits_v2):
        t = fn(labels=tf.constant(lab), logits=tf.constant(A))
        check(t, ref.astype(np.float32), "SoftmaxCrossEntropyWithLogits", rtol=1e-5, atol=1e-5)
        assert t.op.inputs[0].op.type == "Const" and t.op.name.startswith(
            "SoftmaxCrossEntropyWithLogits")
    idx = np.array([3, 0, 1])
    ref = -np.log(_softmax(A)[np.arange(3), idx])
    for dt in (tf.int32, tf.int64):
        t = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant(idx, dt),
                                                           logits=tf.constant(A))
        check(t, ref.astype(np.float32), "SparseSoftmaxCrossEntropyWithLogits", atol=1e-5)
    with pytest.raises(ValueError, match="Only call `softmax_cross_entropy_with_logits`"):
        tf.nn.softmax_cross_entropy_with_logits(tf.constant(lab), tf.constant(A))
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in list of allowed values"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([0., 1., 2.]),
                                                       logits=tf.constant(A))


def _pad_same(n, k, s):
    out = -(-n // s)
    total = max((out - 1) * s + k - n, 0)
    return out, total // 2, total - total // 2


def _conv_np(x, f, s, padding):
    n, h, w, c = x.shape
    kh, kw, _, o = f.shape
    if padding == "SAME":
        oh, t, b = _pad_same(h, kh, s)
        ow, l, r = _pad_same(w, kw, s)
        x = np.pad(x, [(0, 0), (t, b), (l, r), (0, 0)])
    else:
        oh, ow = (h - kh) // s + 1, (w - kw) // s + 1
    y = np.zeros((n, oh, ow, o), x.dtype)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * s:i * s + kh, j * s:j * s + kw, :]
            y[:, i, j, :] = np.tensordot(patch, f, axes=([1, 2, 3], [0, 1, 2]))
    return y


def _pool_np(x, k, s, padding, op):
    n, h, w, c = x.shape
    if padding == "SAME":
        oh, t, _ = _pad_same(h, k, s)
        ow, l, _ = _pad_same(w, k, s)
    else:
        oh, ow, t, l = (h - k) // s + 1, (w - k) // s + 1, 0, 0
    y = np.zeros((n, oh, ow, c), x.dtype)
    for i in range(oh):
        for j in range(ow):
            r0, c0 = max(i * s - t, 0), max(j * s - l, 0)
            r1, c1 = min(i * s - t + k, h), min(j * s - l + k, w)
            y[:, i, j, :] = op(x[:, r0:r1, c0:c1, :], axis=(1, 2))  # padding not counted
    return y


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_pools(padding, stride):
    X = rng.randn(2, 5, 6, 3).astype(np.float32)
    F = rng.randn(3, 2, 3, 4).astype(np.float32)
    x = tf.constant(X)
    t = tf.nn.conv2d(x, tf.constant(F), strides=[1, stride, stride, 1], padding=padding)
    check(t, _conv_np(X, F, stride, padding), "Conv2D", rtol=1e-4, atol=1e-4)
    t = tf.nn.conv2d(x, filters=tf.constant(F), strides=stride, padding=padding,
                     dilations=[1, 1, 1, 1], data_format="NHWC")
    check(t, _conv_np(X, F, stride, padding), "Conv2D", rtol=1e-4, atol=1e-4)
    t = tf.nn.max_pool(x, ksize=[1, 3, 3, 1], strides=[1, stride, stride, 1], padding=padding)
    check(t, _pool_np(X, 3, stride, padding, np.max), "MaxPool")
    t = tf.nn.avg_pool(x, ksize=2, strides=stride, padding=padding)
    check(t, _pool_np(X, 2, stride, padding, np.mean), "AvgPool", rtol=1e-5, atol=1e-6)
    assert t.op.name.startswith("AvgPool")


def test_conv_dilations_and_errors():
    X = rng.randn(1, 5, 5, 1).astype(np.float32)
    F = rng.randn(2, 2, 1, 1).astype(np.float32)
    Fd = np.zeros((3, 3, 1, 1), np.float32)
    Fd[::2, ::2] = F  # a 2x2 filter dilated by 2 is this 3x3 one
    t = tf.nn.conv2d(tf.constant(X), tf.constant(F), [1, 1, 1, 1], "VALID",
                     dilations=[1, 2, 2, 1])
    check(t, _conv_np(X, Fd, 1, "VALID"), "Conv2D", rtol=1e-5, atol=1e-5)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Value for attr 'padding' of \"FULL\" is not in the list"):
        tf.nn.conv2d(tf.constant(X), tf.constant(F), [1, 1, 1, 1], "FULL")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid data format string: NCHW"):
        tf.nn.max_pool(tf.constant(X), [1, 2, 2, 1], [1, 1, 1, 1], "VALID", data_format="NCHW")


def test_dropout():
    X = (rng.rand(50, 40) + 1).astype(np.float32)
    x = tf.constant(X)
    t = tf.nn.dropout(x, 0.5, seed=7)
    assert t.op.type == "Dropout" and t.op.name == "dropout"
    assert t.dtype == tf.float32 and t.shape.as_list() == [50, 40]
    kp = tf.placeholder(tf.float32, [])
    t2 = tf.nn.dropout(x, keep_prob=kp, seed=7)
    t3 = tf.nn.dropout(x, rate=0.75, seed=1)
    with tf.Session() as s:
        v = s.run(t)
        kept = v != 0
        np.testing.assert_allclose(v[kept], X[kept] / 0.5, rtol=1e-6)
        assert 0.4 < kept.mean() < 0.6
        np.testing.assert_allclose(s.run(t2, {kp: 1.0}), X)
        v3 = s.run(t3)
        kept = v3 != 0
        np.testing.assert_allclose(v3[kept], X[kept] / 0.25, rtol=1e-6)
        assert 0.18 < kept.mean() < 0.32
        with pytest.raises(tf.errors.InvalidArgumentError, match="keep_prob must be"):
            s.run(t2, {kp: 1.5})
    with pytest.raises(ValueError, match="keep_prob must be a scalar tensor or a float"):
        tf.nn.dropout(x, 0.0)


# --- errors: TF's texts, from the C library's shape functions ---

def test_shape_errors():
    a = tf.constant(np.ones((2, 3), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Dimensions must be equal"):
        tf.matmul(a, a)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot reshape a tensor with 6 "
                       "elements to shape \\[4\\]"):
        tf.reshape(a, [4])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.add_n([a, tf.constant(np.ones((3, 2), np.float32))])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.nn.bias_add(a, tf.constant([1.0, 2.0]))
    # the failed op is not in the graph: the next one gets the name
    assert tf.reshape(a, [6]).op.name == "Reshape"


def test_minimum_and_clip_by_value():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [5])
        y = tf.constant([0.0, 1.0, 2.0, 3.0, 4.0])
        m = tf.minimum(x, y)
        c = tf.clip_by_value(x, -1.0, 1.0)
        dm, dc = tf.gradients(tf.reduce_sum(m) + tf.reduce_sum(c), [x])[0], None
    assert m.op.type == "Minimum"
    xv = np.array([-2.0, 1.0, 3.0, 0.5, np.nan], np.float32)
    with tf.Session(graph=g) as sess:
        mv, cv, gv = sess.run([m, c, dm], {x: xv})
    np.testing.assert_array_equal(mv[:4], np.minimum(xv, [0, 1, 2, 3, 4])[:4])
    assert np.isnan(mv[4])  # a NaN in x wins, as Maximum's
    np.testing.assert_array_equal(cv[:4], [-1.0, 1.0, 1.0, 0.5])
    # d/dx: Minimum passes where x <= y (ties to x), clip passes inside [-1, 1] (ties to x)
    np.testing.assert_array_equal(gv[:4], [1 + 0, 1 + 1, 0 + 0, 1 + 1])


# --- slicing: Tensor.__getitem__, tf.strided_slice, tf.slice against numpy ---

def _random_index(r, rank):
    """A numpy basic index for an array of this rank: ints, slices (any signs, steps, bounds
    past the ends), at most one Ellipsis and newaxis entries."""
    key, dims_left, ellipsis = [], rank, False
    while dims_left > 0 or (r.random() < 0.2 and len(key) < 6):
        c = r.random()
        if c < 0.12 and not ellipsis:
            key.append(Ellipsis)
            ellipsis = True
            dims_left = r.integers(0, dims_left + 1)
            continue
        if c < 0.22:
            key.append(None)
            continue
        if dims_left == 0:
            break
        if c < 0.4:
            key.append(int(r.integers(-3, 3)))
        else:
            pick = lambda: None if r.random() < 0.3 else int(r.integers(-7, 8))
            step = None if r.random() < 0.4 else int(r.choice([-3, -2, -1, 1, 2, 3]))
            key.append(slice(pick(), pick(), step))
        dims_left -= 1
    return tuple(key)


def test_getitem_matches_numpy():
    r = np.random.default_rng(11)
    x = r.standard_normal((4, 3, 5)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        xt = tf.constant(x)
        xu = tf.placeholder(tf.float32)  # the shape only known at run time
        keys, known, unknown = [], [], []
        while len(keys) < 150:
            key = _random_index(r, 3)
            try:
                want = x[key]
            except IndexError:
                continue
            keys.append((key, want))
            y = xt[key]
            assert y.shape.as_list() == list(want.shape), key
            known.append(y)
            unknown.append(xu[key])
    with tf.Session(graph=g) as sess:
        got_k = sess.run(known)
        got_u = sess.run(unknown, {xu: x})
    for (key, want), a, b in zip(keys, got_k, got_u):
        np.testing.assert_array_equal(a, want, err_msg=str(key))
        np.testing.assert_array_equal(b, want, err_msg=str(key))
        assert a.dtype == np.float32


def test_slice_ops_and_dtypes():
    x = np.arange(24).reshape(2, 3, 4)
    for dt in (np.int32, np.int64, np.float64, np.float16):
        t = tf.constant(x.astype(dt))
        got = run(t[:, ::-1, 1], tf.slice(t, [1, 0, 1], [-1, 2, 3]),
                  tf.strided_slice(t, [0, 0], [2, 3], [1, 2], shrink_axis_mask=1))
        np.testing.assert_array_equal(got[0], x[:, ::-1, 1].astype(dt))
        np.testing.assert_array_equal(got[1], x[1:, 0:2, 1:4].astype(dt))
        np.testing.assert_array_equal(got[2], x[0, 0:3:2].astype(dt))
    s = tf.constant(np.array([b"a", b"bc", b"d"], dtype=object))
    assert list(run(s[::-2])[0]) == [b"d", b"a"]
    v = tf.Variable(np.arange(6, dtype=np.float32))
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v[2:4]), [2, 3])


def test_slice_gradients_vs_finite_differences():
    X = rng.randn(3, 4, 5)
    C = rng.randn(2, 1, 2, 2)
    key = (slice(1, None), None, slice(-3, -1), slice(4, 0, -3))
    x = tf.placeholder(tf.float64, [3, 4, 5])
    y = tf.reduce_sum(tf.square(x[key]) * tf.constant(C)) + tf.reduce_sum(x[1, :, 2])
    (gx,) = tf.gradients(y, [x])

    def f(v):
        return np.sum(v[key] ** 2 * C) + np.sum(v[1, :, 2])

    (vx,) = run(gx, feed={x: X})
    np.testing.assert_allclose(vx, _fd(f, X), rtol=1e-5, atol=1e-6)


def test_slice_errors():
    t = tf.constant(np.ones((3, 4), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="slice index 3 of dimension 0 out of bounds."):
        t[3]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Index out of range using input dim 2; input has only 2 dims"):
        t[0, 0, 0]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        t[::0]
    with pytest.raises(TypeError, match="Only integers, slices"):
        t[1.5]
    with pytest.raises(TypeError, match="Only integers, slices"):
        t[tf.constant(1)]
    with pytest.raises(ValueError, match="Expected begin and size"):
        tf.slice(t, [0], [1, 1])
    u = tf.placeholder(tf.float32)
    y = u[5]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="slice index 5 of dimension 0 out of bounds."):
            sess.run(y, {u: np.ones((3,), np.float32)})
