"""Session.run through rill.compat.v1: TF's fetch structures and feed conversions, the C fast
path against the general one (same answers, fresh values each call, any feed_dict order),
strings as bytes, scalars as numpy scalars, and TF's errors for bad fetches and feeds."""
import collections

import numpy as np
import pytest

import rill.compat.v1 as tf


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def test_structures(graph):
    a = tf.constant([1.0, 2.0, 3.0], name="a")
    b = tf.constant(2.0, name="b")
    c = a * b
    s = tf.constant("hi")
    noop = tf.no_op()
    P = collections.namedtuple("P", "x y")
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(c), [2.0, 4.0, 6.0])
        assert sess.run(c).dtype == np.float32
        v = sess.run(b)
        assert isinstance(v, np.float32) and v == 2.0
        assert sess.run(noop) is None
        assert sess.run(s) == b"hi"
        r = sess.run({"c": c, "pair": (a, [b, noop]), "p": P(b, c)})
        np.testing.assert_array_equal(r["c"], [2.0, 4.0, 6.0])
        assert r["pair"][1][0] == 2.0 and r["pair"][1][1] is None and isinstance(r["pair"], tuple)
        assert isinstance(r["p"], P) and r["p"].x == 2.0
        np.testing.assert_array_equal(sess.run("a:0"), [1.0, 2.0, 3.0])
        assert sess.run([c, c])[0] is not None  # the same tensor twice
        t = sess.run((b, b))
        assert isinstance(t, tuple) and t == (2.0, 2.0)


def test_feeds_and_fast_path(graph):
    x = tf.placeholder(tf.float32, shape=[None], name="x")
    n = tf.placeholder(tf.int32, name="n")
    y = x * 2.0
    m = n + 1
    with tf.Session() as sess:
        seen = []
        for i in range(5):  # the first call makes the callable, the rest run in C
            r = sess.run([y, m], feed_dict={x: np.arange(3, dtype=np.float64) + i, n: i})
            seen.append(r)
            np.testing.assert_array_equal(r[0], (np.arange(3) + i) * 2.0)
            assert r[0].dtype == np.float32 and r[1] == i + 1
        assert seen[0][0] is not seen[1][0] and seen[0][0][0] == 0.0  # fresh arrays each step
        # another feed order, Python lists and scalars, a tensor name as the key
        r = sess.run([m, y], feed_dict={n: 7, "x:0": [1, 2]})
        assert r[0] == 8 and list(r[1]) == [2.0, 4.0]
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="You must feed a value for placeholder tensor 'x'"):
            sess.run(y)
        with pytest.raises(TypeError, match="feed cannot be a tf.Tensor"):
            sess.run(y, feed_dict={x: y})
        with pytest.raises(TypeError):
            sess.run(None)
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(y, feed_dict={x: [1.0]})


def test_build_errors(graph):
    a = tf.constant([1.0, 2.0, 3.0])
    b = tf.constant([1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Dimensions must be equal"):
        a + b
    # the graph is still usable after the failed op
    c = a + a
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(c), [2.0, 4.0, 6.0])


def test_scopes_devices_dependencies(graph):
    with tf.name_scope("outer"):
        with tf.device("/cpu:0"):
            a = tf.constant(1.0, name="a")
        v = tf.Variable(3, name="v")
    assert a.op.name == "outer/a" and a.device == "/device:CPU:0"
    assert v.name == "outer/v:0" and v.dtype == tf.int32
    with tf.control_dependencies([a]):
        b = tf.constant(2.0, name="b")
    assert [o.name for o in b.op.control_inputs] == ["outer/a"]
    fn_seen = []

    def fn(op):
        fn_seen.append(op.type)
        return "/cpu:0"

    with tf.device(fn):
        c = tf.constant(5.0)
    assert fn_seen == ["Const"] and c.device == "/device:CPU:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(v) == 3


def test_error_names_the_op_and_where_it_was_made(graph):
    x = tf.placeholder(tf.float32, name="x")
    y = x * 2.0  # the failing op's line
    line = __import__("inspect").currentframe().f_lineno - 1
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(y)
    err = e.value
    assert err.error_code == tf.errors.INVALID_ARGUMENT
    assert err.op is not None and err.op.name == "x"  # the placeholder that was not fed
    assert "You must feed a value for placeholder tensor 'x'" in err.message
    assert f"test_session.py:{line - 1}" in err.message, err.message
