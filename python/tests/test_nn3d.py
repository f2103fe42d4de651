"""tf.nn's and tf.layers' 3-D convolutions and pools (_nn3d_ops.py, _layers3d.py over
src/graph/ops_conv3d.c): values, gradients, variable and op names against TensorFlow 2.15's
compat.v1, which runs the same graph-building script (CASES, written once for both modules) in a
subprocess; then TF's error classes for bad arguments."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tfref

import rill.compat.v1 as tf

TF215 = tfref.TF_PY

# Builds every case with `tf` (rill's compat.v1 or TensorFlow's), runs it, and returns
# {"values": {case: nested list}, "vars": [...], "ops": [...]}.
CASES = r'''
import numpy as np

def build_and_run(tf):
    rng = np.random.RandomState(3)
    def arr(*shape, dtype=np.float32):
        return rng.uniform(-1, 1, size=shape).astype(dtype)
    out, names = {}, {}
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(arr(2, 5, 6, 4, 3, dtype=np.float64))
        convs = [
            ("same_s", arr(2, 3, 2, 3, 4, dtype=np.float64), [1, 2, 1, 2, 1], None, "SAME"),
            ("valid", arr(3, 2, 2, 3, 2, dtype=np.float64), [1, 1, 2, 1, 1], None, "VALID"),
        ]  # TensorFlow's CPU runs no dilated Conv3D: rill's is checked in test_conv3d_ops.c
        for nm, wv, st, dl, pad in convs:
            w = tf.constant(wv)
            y = tf.nn.conv3d(x, w, strides=st, padding=pad)
            out["conv_" + nm] = y
            gx, gw = tf.gradients(tf.reduce_sum(y * y), [x, w])
            out["conv_" + nm + "_dx"], out["conv_" + nm + "_dw"] = gx, gw
            out["bpf_" + nm] = tf.nn.conv3d_backprop_filter(x, list(wv.shape), y, st, pad)
            out["bpf2_" + nm] = tf.nn.conv3d_backprop_filter_v2(
                input=x, filter_sizes=wv.shape, out_backprop=y, strides=st, padding=pad)
        w = tf.constant(arr(2, 3, 2, 3, 4, dtype=np.float64))
        # pools (TensorFlow's MaxPool3D is float32 only)
        xp = tf.constant(arr(2, 5, 6, 7, 3))
        xt = tf.constant(np.round(arr(1, 4, 4, 4, 2) * 1.5))  # ties
        for nm, k, st, pad in [("k2", 2, 2, "VALID"), ("k3s", [2, 3, 2], [1, 2, 3], "SAME"),
                               ("k5", [1, 3, 3, 2, 1], [1, 2, 2, 2, 1], "SAME")]:
            for fn in ("max_pool3d", "avg_pool3d"):
                p = getattr(tf.nn, fn)(xp, ksize=k, strides=st, padding=pad)
                out[fn + "_" + nm] = p
                out[fn + "_" + nm + "_dx"] = tf.gradients(tf.reduce_sum(p * p), xp)[0]
                pt = getattr(tf.nn, fn)(xt, k, st, pad)
                out[fn + "_ties_" + nm + "_dx"] = tf.gradients(tf.reduce_sum(pt * 3.0), xt)[0]
        xn = tf.transpose(xp, [0, 4, 1, 2, 3])
        pn = tf.nn.max_pool3d(xn, [1, 1, 2, 2, 2], [1, 1, 2, 2, 2], "SAME",
                              data_format="NCDHW")
        out["max_pool3d_ncdhw"] = pn
        out["avg_pool3d_ncdhw"] = tf.nn.avg_pool3d(xn, [1, 1, 2, 3, 2], [1, 1, 1, 2, 2],
                                                   "VALID", data_format="NCDHW")
        # layers (constant initializers so both sides hold the same weights)
        xl = tf.constant(arr(2, 4, 5, 6, 3))
        def init(a):
            return lambda shape, dtype=None, partition_info=None: tf.constant(a, dtype=dtype)
        ki, bi = init(arr(3, 3, 3, 3, 4)), init(arr(4))
        l1 = tf.layers.conv3d(xl, 4, 3, padding="same", kernel_initializer=ki,
                              bias_initializer=bi, activation=tf.nn.relu)
        l2 = tf.layers.Conv3D(4, (3, 3, 3), strides=(1, 2, 2), kernel_initializer=ki,
                              name="c3")(xl)
        kt, bt = init(arr(2, 3, 2, 5, 3)), init(arr(5))
        l3 = tf.layers.conv3d_transpose(xl, 5, (2, 3, 2), strides=(2, 1, 2), padding="valid",
                                        kernel_initializer=kt, bias_initializer=bt)
        l4 = tf.layers.Conv3DTranspose(5, (2, 3, 2), strides=2, padding="same",
                                       kernel_initializer=kt, use_bias=False)(xl)
        l5 = tf.layers.max_pooling3d(xl, 2, 2)
        l6 = tf.layers.MaxPooling3D((2, 2, 3), (1, 2, 2), padding="same")(xl)
        l7 = tf.layers.average_pooling3d(xl, (2, 2, 2), 1, name="avg")
        l8 = tf.layers.AveragePooling3D(3, 2, padding="same")(xl)
        for i, l in enumerate([l1, l2, l3, l4, l5, l6, l7, l8]):
            out["layer%d" % (i + 1)] = l
        # after the layers: rill's layer scopes count names their own way once an op has
        # taken a layer's name (layers.py's base, reported).
        # transpose: [2, 3, 6, 2, 4] -> [2, 5, 6, 4, 3]
        v = tf.constant(arr(2, 3, 6, 2, 4, dtype=np.float64))
        t = tf.nn.conv3d_transpose(v, w, [2, 5, 6, 4, 3], [1, 2, 1, 2, 1], "SAME")
        out["tconv"] = t
        out["tconv_dv"], out["tconv_dw"] = tf.gradients(tf.reduce_sum(t * t), [v, w])
        out["tconv_valid"] = tf.nn.conv3d_transpose(
            tf.constant(arr(1, 2, 3, 2, 4, dtype=np.float64)), w, [1, 3, 5, 4, 3],
            strides=[1, 1, 1, 2, 1], padding="VALID")
        loss = tf.reduce_sum(l1 * l1) + tf.reduce_sum(l3 * l3)
        tv = tf.trainable_variables()
        for v, gv in zip(tv, tf.gradients(loss, tv)):
            if gv is not None:
                out["grad_" + v.op.name] = gv
        names = {"vars": [v.name for v in tf.global_variables()],
                 "layer_ops": [t.op.name for t in [l1, l2, l3, l4, l5, l6, l7, l8]],
                 "nn_ops": [out[k].op.name for k in ("conv_same_s", "bpf_same_s", "tconv",
                                                     "max_pool3d_k2", "avg_pool3d_k2")]}
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            keys = sorted(out)
            vals = s.run([out[k] for k in keys])
    return {"values": {k: np.asarray(v).tolist() for k, v in zip(keys, vals)}, **names}
'''


def _tf_reference():
    if not os.path.exists(TF215):
        tfref.skip("no Python with TensorFlow 2.15")
    script = (CASES + "\nimport json, sys\nimport tensorflow.compat.v1 as tf\n"
              "tf.disable_eager_execution()\nprint(json.dumps(build_and_run(tf)))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    try:
        r = subprocess.run([TF215, "-c", script], capture_output=True, text=True, env=env,
                           timeout=180)
    except subprocess.TimeoutExpired:
        tfref.skip("TensorFlow took too long to start")
    if r.returncode != 0:
        pytest.fail("the TensorFlow reference failed: " +
                    "\n".join(l for l in r.stderr.splitlines() if "Error" in l)[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def both():
    ns = {}
    exec(CASES, ns)
    return ns["build_and_run"](tf), _tf_reference()


def test_values_and_gradients_match_tensorflow(both):
    ours, theirs = both
    assert sorted(ours["values"]) == sorted(theirs["values"])
    for k, want in theirs["values"].items():
        got, want = np.asarray(ours["values"][k]), np.asarray(want)
        assert got.shape == want.shape, k
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=k)


def test_names_match_tensorflow(both):
    ours, theirs = both
    assert ours["vars"] == theirs["vars"]
    assert ours["layer_ops"] == theirs["layer_ops"]
    assert ours["nn_ops"] == theirs["nn_ops"]


@pytest.fixture
def fresh_graph():
    with tf.Graph().as_default():
        yield


def test_ncdhw_gradients_are_the_ndhwc_ones_transposed(fresh_graph):
    """TensorFlow's CPU runs no NCDHW convolutions to compare with (its GPU does): rill's NCDHW
    functions transpose around the NDHWC ops, so their values and gradients are the (TF-checked)
    NDHWC ones transposed."""
    rng = np.random.RandomState(5)
    xv, wv = rng.randn(2, 5, 6, 4, 3), rng.randn(2, 3, 2, 3, 4)
    x, w = tf.constant(xv), tf.constant(wv)
    xc = tf.transpose(x, [0, 4, 1, 2, 3])
    y = tf.nn.conv3d(x, w, [1, 2, 1, 1, 1], "SAME")
    yc = tf.nn.conv3d(xc, w, [1, 1, 2, 1, 1], "SAME", data_format="NCDHW")
    p = tf.nn.max_pool3d(x, 2, [1, 1, 2, 2, 1], "SAME")
    pc = tf.nn.max_pool3d(xc, 2, [1, 1, 1, 2, 2], "SAME", data_format="NCDHW")
    d = tf.constant(rng.randn(2, 3, 6, 4, 4))
    t = tf.nn.conv3d_transpose(d, w, [2, 5, 6, 4, 3], [1, 2, 1, 1, 1])
    tc = tf.nn.conv3d_transpose(tf.transpose(d, [0, 4, 1, 2, 3]), w, [2, 3, 5, 6, 4],
                                [1, 1, 2, 1, 1], data_format="NCDHW")
    gs = tf.gradients(tf.reduce_sum(y * y) + tf.reduce_sum(p * p), [x, w])
    gc = tf.gradients(tf.reduce_sum(yc * yc) + tf.reduce_sum(pc * pc), [x, w])
    with tf.Session() as s:
        r = s.run([y, yc, p, pc, t, tc] + gs + gc)
    np.testing.assert_allclose(r[1], r[0].transpose(0, 4, 1, 2, 3), rtol=1e-12)
    np.testing.assert_allclose(r[3], r[2].transpose(0, 4, 1, 2, 3), rtol=1e-12)
    np.testing.assert_allclose(r[5], r[4].transpose(0, 4, 1, 2, 3), rtol=1e-12)
    np.testing.assert_allclose(r[8], r[6], rtol=1e-10)
    np.testing.assert_allclose(r[9], r[7], rtol=1e-10)


def test_errors(fresh_graph):
    # rill raises its build errors as InvalidArgumentError (TF: ValueError, the same text)
    VE = (ValueError, tf.errors.InvalidArgumentError)
    x = tf.placeholder(tf.float32, [1, 4, 4, 4, 2])
    w = tf.placeholder(tf.float32, [2, 2, 2, 2, 3])
    with pytest.raises(VE, match="Shape must be rank 5 but is rank 4"):
        tf.nn.conv3d(tf.placeholder(tf.float32, [4, 4, 4, 2]), w, [1] * 5, "SAME")
    with pytest.raises(VE, match="Depth of input \\(2\\) is not a multiple"):
        tf.nn.conv3d(x, tf.placeholder(tf.float32, [2, 2, 2, 3, 3]), [1] * 5, "SAME")
    with pytest.raises(VE, match="Negative dimension size caused by subtracting 5"):
        tf.nn.conv3d(x, tf.placeholder(tf.float32, [5, 2, 2, 2, 3]), [1] * 5, "VALID")
    with pytest.raises(TypeError, match="Expected list for 'strides'"):
        tf.nn.conv3d(x, w, 1, "SAME")
    with pytest.raises(VE, match="requires the stride attribute to contain 5 values"):
        tf.nn.conv3d(x, w, [1, 1, 1, 1], "SAME")
    with pytest.raises(VE, match="not in the list of allowed values"):
        tf.nn.conv3d(x, w, [1] * 5, "FULL")
    with pytest.raises(ValueError, match="data_format"):
        tf.nn.conv3d(x, w, [1] * 5, "SAME", data_format="NHWC")
    with pytest.raises(tf.errors.UnimplementedError, match="strides in the batch"):
        tf.nn.conv3d(x, w, [2, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="ksize should be of length 1, 3 or 5"):
        tf.nn.max_pool3d(x, [2, 2], 1, "SAME")
    with pytest.raises(tf.errors.UnimplementedError, match="on the depth dimension"):
        tf.nn.avg_pool3d(x, [1, 2, 2, 2, 2], 1, "SAME")
    with pytest.raises(ValueError, match="expected ndim=5"):
        tf.layers.conv3d(tf.placeholder(tf.float32, [1, 4, 4, 2]), 2, 2)
    with pytest.raises(TypeError):
        tf.nn.max_pool3d(x, 2, 2, "SAME", bogus=1)
    # a shape known only when fed: the kernel's check, TF's text
    xu = tf.placeholder(tf.float32)
    y = tf.nn.conv3d(xu, w, [1] * 5, "SAME")
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="input and filter must have the same depth: 3 vs 2"):
            s.run(y, {xu: np.zeros((1, 4, 4, 4, 3), np.float32),
                      w: np.zeros((2, 2, 2, 2, 3), np.float32)})
