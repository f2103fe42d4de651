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


def test_fetched_arrays_never_alias_session_state():
    """A fetched variable or constant is a copy (writing into it changes nothing in the
    session, as on TF); a computed result is an array over rill's own buffer, writable."""
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(np.ones(4, np.float32))
        c = tf.constant(np.arange(4, dtype=np.float32))
        y = w * 3
    with tf.Session(graph=g) as sess:
        sess.run(w.initializer)
        a, b, r = sess.run([w, c, y])
        a[0] = b[0] = r[0] = 99
        np.testing.assert_array_equal(sess.run(w), [1, 1, 1, 1])
        np.testing.assert_array_equal(sess.run(c), [0, 1, 2, 3])
        np.testing.assert_array_equal(sess.run(y), [3, 3, 3, 3])
        assert r.flags.writeable and r.base is not None  # over rill's buffer, not a copy


def test_large_feeds_are_borrowed_not_copied():
    """A contiguous feed of the placeholder's dtype (from 1 KiB) is used in place: while a step
    fed with it runs, rill holds one more reference to the array itself than it holds to a small
    one, which is copied; the reference goes when the step is done; a fetch of the fed tensor is
    a copy."""
    import sys
    import threading
    import time

    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None])
        total = tf.reduce_sum(x)
        deq = g._make("QueueDequeue", "deq", (), {
            "shared_name": ("string", "borrow_q"), "dtype": ("type", 1), "shape": ("shape", []),
            "timeout_ms": ("int", 30000)}).outputs[0]
        with tf.control_dependencies([total]):
            waited = tf.identity(deq) + total
        vals = tf.placeholder(tf.float32, [None])
        enq = g._make("QueueEnqueueMany", "enq", (vals,), {
            "shared_name": ("string", "borrow_q"), "capacity": ("int", -1),
            "dtype": ("type", 1), "shape": ("shape", [])})
        echo = tf.identity(x)

    def held_while_blocked(arr, want=None):
        """References to arr while a step fed with it waits in the dequeue, beyond the base."""
        base = sys.getrefcount(arr)
        with tf.Session(graph=g) as sess:
            sess.run(enq, {vals: np.array([0.0], np.float32)})
            sess.run(waited, {x: arr})  # once, so the blocked run takes the C fast path
            out = {}
            t = threading.Thread(target=lambda: out.setdefault("v", sess.run(waited, {x: arr})))
            t.start()
            deadline = time.monotonic() + 10
            while sys.getrefcount(arr) == base and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(0.3)  # well into the blocked dequeue
            while want is not None and sys.getrefcount(arr) - base < want and \
                    time.monotonic() < deadline:
                time.sleep(0.01)
            held = sys.getrefcount(arr) - base
            sess.run(enq, {vals: np.array([1.0], np.float32)})
            t.join(10)
            assert out["v"] == arr.size + 1
            e = sess.run(echo, {x: arr})
            assert not np.shares_memory(e, arr)
            e[0] = 5
            assert arr[0] == 1
        assert sys.getrefcount(arr) == base  # released after the steps
        return held

    small = held_while_blocked(np.ones(16, np.float32))
    assert small >= 1  # the feed dict's
    assert held_while_blocked(np.ones(1 << 16, np.float32), small + 1) == small + 1
