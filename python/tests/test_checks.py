"""tf.Assert, tf.Print, tf.print, tf.check_numerics, tf.ensure_shape, the tf.assert_* family and
the graph utilities (get_static_value, make_tensor_proto, assign*, variable state, identity_n,
tuple, scopes, make_template, hessians), against TF 2.15's compat.v1 texts and values (the
expected strings below are what TF printed for the same graphs)."""
import subprocess
import sys

import numpy as np
import pytest

import rill.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def _err(sess, fetch, feed=None, cls=tf.errors.InvalidArgumentError):
    with pytest.raises(cls) as e:
        sess.run(fetch, feed)
    return e.value.message.split("\n\t")[0]


def test_assert_summarizes_as_tf():
    x = tf.placeholder(tf.float32, [None])
    a = tf.Assert(tf.reduce_all(x > 0), ["x must be positive", x, tf.constant([1, 2, 3])],
                  summarize=2)
    assert a.type == "Assert" and a.name == "Assert/Assert"
    with tf.Session() as s:
        assert _err(s, a, {x: [1., -2., 3.]}) == \
            "assertion failed: [x must be positive] [1 -2...] [1 2...]"
        s.run(a, {x: [1.]})
        cases = [(np.array([True, False]), "[1 0]"),
                 (np.array([[1.5, 2.25], [3.1, 4]], np.float32), "[[1.5 2.25][3.1...]...]"),
                 (np.array([0.1, 1e-7, 1e20, 1 / 3.]), "[0.1 1e-07 1e+20...]"),
                 (np.arange(10).reshape(2, 5), "[[0 1 2...]...]"),
                 (np.float16([1.5, 0.1]), "[1.5 0.0999755859]"),
                 (np.int64([[[1, 2], [3, 4]], [[5, 6], [7, 8]]]), "[[[1 2][3...]]...]")]
        for v, want in cases:
            a = tf.Assert(False, [v, 'q"x'], summarize=3)
            assert _err(s, a) == f'assertion failed: {want} [q\\"x]'
        a = tf.Assert(False, [np.arange(10)], summarize=-1)
        assert _err(s, a) == "assertion failed: [0 1 2 3 4 5 6 7 8 9]"
        a = tf.Assert(False, [tf.constant(['a"b\n', 'c\x01'])], summarize=3)
        assert _err(s, a) == 'assertion failed: [a\\"b\\n c\\001]'


def test_assert_through_control_dependencies_with_feeds():
    ph = tf.placeholder(tf.float32)
    x = tf.placeholder(tf.float32, [])
    with tf.control_dependencies([tf.assert_positive(ph), ph, x]):
        y = tf.identity(ph) * 2
    with tf.Session() as s:
        assert s.run(y, {ph: 2., x: 1.}) == 4.
        assert s.run([y, ph], {ph: 3., x: 1.}) == [6., 3.]
        assert s.run(ph.op, {ph: 3.}) is None  # a fed placeholder as a target
        msg = _err(s, y, {ph: [1., -1.], x: 0.})
        assert msg == ("assertion failed: [] [Condition x > 0 did not hold element-wise:] "
                       "[x (Placeholder:0) = ] [1 -1]")


def test_binary_asserts():
    y = tf.placeholder(tf.int32, [2])
    e = tf.assert_equal(y, tf.constant([1, 2]), message="msg")
    assert e.name == "assert_equal/Assert/Assert"
    less = tf.assert_less(y, 2, data=["hi", y])
    with tf.Session() as s:
        got = _err(s, e, {y: [1, 3]})
        assert got.startswith("assertion failed: [msg] [Condition x == y did not hold "
                              "element-wise:] [x (Placeholder:0) = ] [1 3] [y (")
        assert got.endswith(") = ] [1 2]")
        s.run(e, {y: [1, 2]})
        assert _err(s, less, {y: [1, 3]}) == "assertion failed: [hi] [1 3]"
        s.run(less, {y: [1, 1]})
        for fn, good, bad in [(tf.assert_none_equal, [3, 4], [1, 4]),
                              (tf.assert_less_equal, [1, 2], [1, 3]),
                              (tf.assert_greater, [2, 3], [2, 2]),
                              (tf.assert_greater_equal, [1, 2], [0, 2])]:
            op = fn(y, tf.constant([1, 2]))
            s.run(op, {y: good})
            _err(s, op, {y: bad})
        p = tf.placeholder(tf.float32)
        for fn, good, bad in [(tf.assert_negative, [-1.], [0.]),
                              (tf.assert_non_negative, [0.], [-1.]),
                              (tf.assert_non_positive, [0.], [1.]),
                              (tf.assert_positive, [1.], [0.])]:
            op = fn(p)
            s.run(op, {p: good})
            _err(s, op, {p: bad})
        near = tf.assert_near(p, p + 0.5)
        assert _err(s, near, {p: [1., -1.]}) == (
            'assertion failed: [] [x and y not equal to tolerance rtol = Tensor(\\"assert_near/'
            'rtol:0\\", shape=(), dtype=float32), atol = Tensor(\\"assert_near/atol:0\\", '
            'shape=(), dtype=float32)] [x (Placeholder_1:0) = ] [1 -1] [y (add:0) = ] '
            '[1.5 -0.5]')
        s.run(tf.assert_near(p, p + 1e-7), {p: [1.]})


def test_static_asserts_raise_at_build_time():
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 3]))
    assert e.value.message == ("Condition x == y did not hold element-wise:\nx (Const:0) = \n"
                               "[1 2]\ny (Const_1:0) = \n[1 3]")
    assert tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 2])).type == "Assert"
    y = tf.placeholder(tf.int32, [2])
    with pytest.raises(ValueError, match=r"^Tensor Placeholder:0 must have rank 2.  Received "
                                         r"rank 1, shape \(2,\)$"):
        tf.assert_rank(y, 2)
    assert tf.assert_rank(y, 1).name == "assert_rank_1/static_checks_determined_all_ok"
    with pytest.raises(ValueError, match="must have rank at least 2"):
        tf.assert_rank_at_least(y, 2)
    tf.assert_rank_at_least(y, 1)
    with pytest.raises(ValueError, match=r"must have rank in \(array\(0, dtype=int32\), array\(2, dtype=int32\)\)"):
        tf.assert_rank_in(y, [0, 2])
    tf.assert_rank_in(y, [1, 2])
    with pytest.raises(TypeError, match='Expected "x" to be integer type'):
        tf.assert_integer(tf.constant(1.))
    assert tf.assert_integer(y).type == "NoOp"
    with pytest.raises(TypeError, match="must be of type tf.float32; got tf.int32"):
        tf.assert_type(y, tf.float32)
    with pytest.raises(ValueError, match="Expected scalar shape for Placeholder:0, saw shape"):
        tf.assert_scalar(y)
    assert tf.assert_same_float_dtype([tf.constant(1.)]) == tf.float32
    with pytest.raises(ValueError, match="must be of the same type"):
        tf.assert_same_float_dtype([tf.constant(1.), tf.constant(1., tf.float64)])
    with pytest.raises(ValueError, match="Expected floating point type"):
        tf.assert_same_float_dtype([y])
    with pytest.raises(TypeError):
        tf.assert_proper_iterable(np.zeros(2))
    tf.assert_proper_iterable([1])
    assert tf.is_numeric_tensor(y) and not tf.is_numeric_tensor(tf.constant("a"))


def test_dynamic_rank_assert():
    ph = tf.placeholder(tf.float32)
    e = tf.assert_rank(ph, 2)
    with tf.Session() as s:
        assert _err(s, e, {ph: [1.]}) == ("assertion failed: [] [Tensor Placeholder:0 must "
                                          "have rank] [2] [Received shape: ] [1]")
        s.run(e, {ph: [[1.]]})


def test_check_numerics_and_its_gradient():
    x = tf.placeholder(tf.float32, [None])
    c = tf.check_numerics(x, "bad x")
    assert c.op.type == "CheckNumerics" and c.name == "CheckNumerics:0"
    g = tf.gradients(tf.reduce_sum(c * c), x)[0]
    with tf.Session() as s:
        assert _err(s, c, {x: [1., np.nan]}) == "bad x : Tensor had NaN values"
        assert _err(s, c, {x: [1., np.inf]}) == "bad x : Tensor had Inf values"
        assert _err(s, c, {x: [np.inf, np.nan]}) == "bad x : Tensor had Inf and NaN values"
        np.testing.assert_allclose(s.run(g, {x: [1., 2.]}), [2., 4.])
        # the gradient is checked too: a huge x passes forward, but 2x*dy overflows
        assert _err(s, g, {x: [3e38]}) == (
            "Not a number (NaN) or infinity (Inf) values detected in gradient. bad x : Tensor "
            "had Inf values")
        v = tf.verify_tensor_all_finite(x, "v")
        np.testing.assert_array_equal(s.run(v, {x: [1.]}), [1.])
        assert _err(s, v, {x: [np.nan]}) == "v : Tensor had NaN values"
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.check_numerics(tf.constant([1]), "int")


def test_add_check_numerics_ops():
    x = tf.placeholder(tf.float32, [2])
    y = tf.log(x)
    check = tf.add_check_numerics_ops()
    with tf.Session() as s:
        s.run([y, check], {x: [1., 2.]})
        assert _err(s, [y, check], {x: [1., -1.]}) == "Log:0 : Tensor had NaN values"


def test_ensure_shape():
    x = tf.placeholder(tf.float32, [None, 2])
    with pytest.raises(ValueError, match=r"Dimension 1 in both shapes must be equal, but are 3 "
                                         r"and 2. Shapes are \[\?,3\] and \[\?,2\]"):
        tf.ensure_shape(x, [None, 3])
    y = tf.ensure_shape(x, [5, None])
    assert y.op.type == "EnsureShape" and y.shape.as_list() == [5, 2]
    g = tf.gradients(tf.reduce_sum(y * 3.), x)[0]
    with tf.Session() as s:
        assert _err(s, y, {x: np.zeros((3, 2))}) == (
            "Shape of tensor Placeholder [3,2] is not compatible with expected shape [5,?].")
        np.testing.assert_array_equal(s.run(g, {x: np.zeros((5, 2))}), np.full((5, 2), 3.))


def _run_printing(code):
    import os
    import rill
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(rill.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout, r.stderr


def test_print_and_tf_print():
    out, err = _run_printing("""
import sys, numpy as np
import rill.compat.v1 as tf
x = tf.placeholder(tf.float32, [None, 2])
p = tf.Print(x, [x, "hi"], message="msg: ", summarize=2)
once = tf.Print(x, [x], message="once", first_n=1)
pr = tf.print("a", x, {"k": 1}, [1, 2], output_stream=sys.stdout, summarize=1)
pr2 = tf.print(np.arange(30).reshape(3, 10), tf.constant(np.arange(30).reshape(3, 10)),
               tf.constant(["ab", 'c"d']), tf.constant(True), "s", sep="|", end="!\\n",
               output_stream=sys.stdout)
pr3 = tf.print(tf.constant("plain"))
with tf.Session() as s:
    print(s.run(p, {x: np.ones((2, 2))}).tolist(), flush=True)
    s.run([once], {x: np.ones((1, 2))}); s.run([once], {x: np.ones((1, 2))})
    s.run(pr, {x: np.arange(8).reshape(4, 2)})
    s.run(pr2)
    s.run(pr3)
""")
    assert out == ("[[1.0, 1.0], [1.0, 1.0]]\n"
                   "a [[0 1]\n ...\n [6 7]] {'k': 1} [1, 2]\n"
                   "array([[ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9],\n"
                   "       [10, 11, 12, 13, 14, 15, 16, 17, 18, 19],\n"
                   "       [20, 21, 22, 23, 24, 25, 26, 27, 28, 29]])|"
                   "[[0 1 2 ... 7 8 9]\n [10 11 12 ... 17 18 19]\n [20 21 22 ... 27 28 29]]|"
                   '["ab" "c\\"d"]|1|s!\n')
    assert "msg: [[1 1]...][hi]\n" in err
    assert err.count("once[[1 1]]") == 1
    assert "plain\n" in err
    with pytest.raises(ValueError, match="Unsupported output stream"):
        tf.print("x", output_stream="nowhere")
    with pytest.raises(ValueError, match="Unrecognized keyword arguments"):
        tf.print("x", bogus=1)


def test_tf_print_to_a_file(tmp_path):
    f = tmp_path / "out.txt"
    op = tf.print("v", tf.constant([1.5, 2.]), output_stream="file://" + str(f))
    with tf.Session() as s:
        s.run(op)
        s.run(op)
    assert f.read_text() == "v [1.5 2]\nv [1.5 2]\n"


def test_static_values_and_tensor_protos():
    assert tf.get_static_value(tf.shape(tf.zeros([2, 3]))).tolist() == [2, 3]
    assert tf.get_static_value(tf.constant(3) + 1) is None  # Add: TF does not fold it either
    np.testing.assert_array_equal(
        tf.get_static_value(tf.cast(tf.stack([1, 2]), tf.float32)), [1., 2.])
    assert tf.get_static_value(tf.size(tf.zeros([2, 3]))) == 6
    assert tf.get_static_value(tf.rank(tf.placeholder(tf.float32, [None, 3]))) == 2
    assert tf.get_static_value(tf.shape(tf.placeholder(tf.float32, [None, 3]))) is None
    assert tf.get_static_value(tf.placeholder(tf.float32)) is None
    np.testing.assert_array_equal(tf.get_static_value(tf.fill([2], 7)), [7, 7])
    for v, dt in [([[1, 2], [3, 4]], tf.int32), (np.float64([1.5]), tf.float64),
                  (1.5, tf.float32)]:
        p = tf.make_tensor_proto(v)
        assert p.dtype == dt.as_datatype_enum
        assert [d.size for d in p.tensor_shape.dim] == list(np.shape(v))
        np.testing.assert_array_equal(tf.make_ndarray(p), np.asarray(v, dt.as_numpy_dtype))
    p = tf.make_tensor_proto(3, dtype=tf.int64, shape=[2, 2])
    np.testing.assert_array_equal(tf.make_ndarray(p), np.full((2, 2), 3, np.int64))
    assert tf.make_ndarray(tf.make_tensor_proto(["a", "b"])).tolist() == [b"a", b"b"]
    with pytest.raises(TypeError):
        tf.make_tensor_proto([1.5], dtype=tf.int32)
    assert tf.is_tensor(tf.constant(1)) and not tf.is_tensor(np.zeros(1))
    assert tf.is_symbolic_tensor(tf.constant(1))
    assert tf.dimension_at_index(tf.TensorShape([2, None]), 0).value == 2
    assert tf.dimension_at_index(tf.TensorShape(None), 3).value is None


def test_variables_state():
    v = tf.Variable(1.0, name="v")
    w = tf.Variable(2.0, name="w")
    c = tf.Variable(0, name="c")
    with tf.Session() as s:
        assert s.run(tf.report_uninitialized_variables()).tolist() == [b"v", b"w", b"c"]
        assert not s.run(tf.is_variable_initialized(v))
        with pytest.raises(tf.errors.FailedPreconditionError,
                           match="Attempting to use uninitialized value"):
            s.run(tf.assert_variables_initialized())
        s.run(tf.initialize_variables([v, c]))
        assert s.run(tf.report_uninitialized_variables()).tolist() == [b"w"]
        assert s.run(tf.is_variable_initialized(v))
        s.run(w.initializer)
        s.run(tf.assert_variables_initialized())
        assert s.run(tf.assign(v, 5.)) == 5.
        assert s.run(tf.assign_add(v, 2.)) == 7.
        assert s.run(tf.assign_sub(v, 4.)) == 3.
        up = tf.count_up_to(c, 2)
        assert [s.run(up), s.run(up)] == [0, 1]
        with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 2"):
            s.run(up)
        s.run(tf.initialize_all_tables())
        s.run(tf.tables_initializer())
    with pytest.raises(ValueError, match="validate_shape=False"):
        tf.assign(v, [1., 2.], validate_shape=False)
    with pytest.raises(TypeError):
        tf.assign(tf.constant(1.), 2.)


def test_identity_n_tuple_and_scopes():
    a, b = tf.constant([1., 2.]), tf.constant(3)
    ia, ib = tf.identity_n([a, b])
    assert ia.op.type == "IdentityN" and ia.op is ib.op
    g = tf.gradients(tf.reduce_sum(ia * 2.), a)[0]
    t = tf.tuple([a, None, b])
    assert t[1] is None and t[0].op.type == "Identity"
    with tf.Session() as s:
        assert [x.tolist() for x in s.run([ia, ib, g])] == [[1., 2.], 3, [2., 2.]]
        assert s.run(t[2]) == 3
    ph = tf.placeholder(tf.float32)
    with tf.control_dependencies([ph]):
        with tf.init_scope():
            free = tf.constant(1.)
        dep = tf.constant(2.)
    assert free.op.control_inputs == [] and dep.op.control_inputs == [ph.op]
    with tf.device("/cpu:0"):
        x = tf.constant(1.)
    with tf.colocate_with(x):
        y = tf.identity(x)
    assert y.device == x.device
    with tf.container("c"):
        tf.constant(0)
    with tf.op_scope([a], None, "myop"):
        assert tf.constant(0).name == "myop/Const:0"
    with tf.variable_op_scope([a], None, "vop"):
        assert tf.get_variable("z", [1]).name == "vop/z:0"
    assert tf.get_logger().name == "tensorflow"
    gc = tf.guarantee_const(a)
    with tf.Session() as s:
        assert s.run(gc).tolist() == [1., 2.]
        ts = s.run(tf.timestamp())
    import time
    assert abs(ts - time.time()) < 60
    assert tf.convert_to_tensor_or_indexed_slices(a) is a
    assert not tf.resource_variables_enabled() and not tf.control_flow_v2_enabled()
    assert not tf.executing_eagerly_outside_functions()
    tf.disable_resource_variables()
    tf.disable_tensor_equality()
    tf.disable_control_flow_v2()


def test_make_template_shares_variables():
    def layer(x, scale):
        w = tf.get_variable("w", [2], initializer=tf.constant_initializer(scale))
        return x * w
    t = tf.make_template("lin", layer, scale=3.)
    y1 = t(tf.constant([1., 2.]))
    y2 = t(tf.constant([2., 2.]))
    assert [v.name for v in tf.global_variables()] == ["lin/w:0"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run(y1).tolist() == [3., 6.] and s.run(y2).tolist() == [6., 6.]


def test_hessians_against_tf():
    x = tf.placeholder(tf.float32, [3])
    y = tf.reduce_sum(x * x * x) + x[0] * x[1]
    h = tf.hessians(y, x)[0]
    xv = np.array([1., 2., 3.], np.float32)
    with tf.Session() as s:
        got = s.run(h, {x: xv})
    want = np.diag(6 * xv)
    want[0, 1] = want[1, 0] = 1.
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_register_gradient_and_override_map():
    x = tf.placeholder(tf.float32, [3])

    @tf.RegisterGradient("TestChecksSquareGrad")
    def _grad(op, dy):
        assert op.type == "Square"
        return dy * 10.
    with pytest.raises(KeyError, match="Registering two gradient with name"):
        tf.RegisterGradient("TestChecksSquareGrad")(_grad)
    tf.no_gradient("TestChecksNoGrad")
    g = tf.get_default_graph()
    with g.gradient_override_map({"Square": "TestChecksSquareGrad"}):
        y = tf.square(x)
    y2 = tf.square(x)
    with g.gradient_override_map({"Tanh": "TestChecksNoGrad"}):
        t = tf.tanh(x)
    with g.gradient_override_map({"Tanh": "TestChecksUnregistered"}):
        u = tf.tanh(x)
    g1, = tf.gradients(tf.reduce_sum(y), x)
    g2, = tf.gradients(tf.reduce_sum(y2), x)
    assert tf.gradients(tf.reduce_sum(t), x) == [None]
    with pytest.raises(LookupError, match="No gradient defined for operation 'Tanh_1' "
                                          r"\(op type: TestChecksUnregistered\)"):
        tf.gradients(tf.reduce_sum(u), x)
    # an optimizer's gradients (built in C) take the override too
    v = tf.Variable([1., 2.])
    with g.gradient_override_map({"Square": "TestChecksSquareGrad"}):
        loss = tf.reduce_sum(tf.square(v * 1.))
    step = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    with tf.Session() as s:
        got = s.run([g1, g2], {x: [1., 2., 3.]})
        np.testing.assert_allclose(got[0], [10., 10., 10.])
        np.testing.assert_allclose(got[1], [2., 4., 6.])
        s.run(v.initializer)
        s.run(step)
        np.testing.assert_allclose(s.run(v), [0.9, 1.9], rtol=1e-6)


def test_custom_gradient_and_grad_pass_through():
    x = tf.placeholder(tf.float32, [3])

    @tf.custom_gradient
    def clip_grad(v):
        def grad(dy):
            return tf.clip_by_value(dy, -0.1, 0.1)
        return tf.identity(v), grad
    z = clip_grad(x)
    g3, = tf.gradients(tf.reduce_sum(z * 5.), x)
    pt = tf.grad_pass_through(tf.round)(x)
    g4, = tf.gradients(tf.reduce_sum(pt * 3.), x)

    @tf.custom_gradient
    def scaled(v):
        w = tf.get_variable("w_cg", [], initializer=tf.constant_initializer(2.))

        def grad(dy, variables=None):
            return dy * w, [tf.reduce_sum(dy * v) * 100.]
        return v * w, grad
    sv = scaled(x)
    w = [v for v in tf.global_variables() if v.op.name == "w_cg"][0]
    gx, gw = tf.gradients(tf.reduce_sum(sv), [x, w])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        r = s.run([z, g3, pt, g4, sv, gx, gw], {x: [1., 2.4, 3.]})
    np.testing.assert_allclose(r[0], [1., 2.4, 3.])
    np.testing.assert_allclose(r[1], [0.1, 0.1, 0.1])
    np.testing.assert_allclose(r[2], [1., 2., 3.])
    np.testing.assert_allclose(r[3], [3., 3., 3.])
    np.testing.assert_allclose(r[4], [2., 4.8, 6.])
    np.testing.assert_allclose(r[5], [2., 2., 2.])
    np.testing.assert_allclose(r[6], 640., rtol=1e-6)


def test_monotonic():
    x = tf.placeholder(tf.int32, [None])
    nd, si = tf.is_non_decreasing(x), tf.is_strictly_increasing(x)
    with tf.Session() as s:
        for v, want in [([1, 2, 2, 3], (True, False)), ([1, 2, 3], (True, True)),
                        ([3, 1], (False, False)), ([5], (True, True)), ([], (True, True))]:
            assert tuple(s.run([nd, si], {x: v})) == want, v
        assert s.run(tf.is_non_decreasing([[1., 2.], [2., 3.]]))
    with pytest.raises(TypeError, match="Expected x to be numeric"):
        tf.is_non_decreasing(tf.constant([True, False]))
