"""tf.random_* and tf.random.* over rill's C random ops: the values TensorFlow itself gives for the
same seeds (computed by TensorFlow in a subprocess: the streams match bit for bit, second runs
too), TF's seed rules, shapes, names and errors, and the initializers that draw from them."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tfref

import rill.compat.v1 as tf

# Each program prints the fetched values of `outs` (two runs) as JSON; run under TF and rill.
PROGRAM = r'''
import json, numpy as np
import {mod} as tf
{prelude}
tf.set_random_seed(2)
with tf.device("/cpu:0"):  # TF's stream is its CPU kernels' (and rill's)
  outs = [tf.random_normal([1000], seed=1), tf.random_uniform([7]), tf.truncated_normal([9], seed=3),
          tf.random_normal([5], dtype=tf.float64, seed=4),
          tf.random_uniform([5], dtype=tf.float64, seed=5),
          tf.random_uniform([6], 3, 10, dtype=tf.int32, seed=6),
          tf.random_uniform([3], -5, 2**40, dtype=tf.int64, seed=7),
          tf.truncated_normal([5], dtype=tf.float64, seed=8, mean=1, stddev=3),
          tf.multinomial([[0.0, 1.0, 2.0], [1.0, 1.0, -1.0]], 10, seed=9),
          tf.random_shuffle(np.arange(10), seed=10),
          tf.random_uniform([4], -2.0, 3.0, seed=11), tf.random_normal([3], 2.0, 0.5),
          tf.random.normal([2, 3], seed=12), tf.random.uniform([4], maxval=5.0),
          tf.random.truncated_normal([6], stddev=0.1), tf.random.shuffle([[1, 2], [3, 4], [5, 6]]),
          tf.random.categorical([[1.0, 2.0, 3.0]], 5, seed=13)]
with tf.Session() as s:
    a = s.run(outs)
    b = s.run(outs)
print(json.dumps([[np.asarray(x).tolist() for x in a], [np.asarray(x).tolist() for x in b],
                  [o.name for o in outs], [o.dtype.name for o in outs]]))
'''


def _run(mod, prelude, env):
    code = PROGRAM.format(mod=mod, prelude=prelude)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def _tf_env():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return env


def test_values_equal_tensorflows():
    if subprocess.run([sys.executable, "-c", "import importlib.util as u; "
                       "exit(u.find_spec('tensorflow') is None)"], env=_tf_env()).returncode:
        tfref.skip("TensorFlow is not installed in this interpreter")
    ref = _run("tensorflow.compat.v1", "tf.disable_eager_execution()", _tf_env())
    got = _run("rill.compat.v1", "", dict(os.environ))
    assert got[2] == ref[2]  # names
    assert got[3] == ref[3]  # dtypes
    for run in (0, 1):
        for i, (r, g) in enumerate(zip(ref[run], got[run])):
            r, g = np.asarray(r), np.asarray(g)
            assert r.shape == g.shape, (run, i)
            np.testing.assert_array_equal(g, r, err_msg=f"run {run}, output {i} ({ref[2][i]})")


def test_seed_rules():
    g = tf.Graph()
    with g.as_default():
        assert tf.random.get_seed(None) == (None, None)
        assert tf.random.get_seed(5) == (87654321, 5)
        tf.set_random_seed(0)
        assert tf.random.get_seed(0) == (0, 2**31 - 1)  # (0, 0) would mean "no seed"
        tf.set_random_seed(2**31 + 6)
        assert tf.random.get_seed(2**31 + 7) == (7, 8)  # both taken modulo 2**31 - 1
    # an op seed alone gives the same numbers in any graph; none at all differs run to run
    vals = []
    for _ in range(2):
        with tf.Graph().as_default():
            a = tf.random_uniform([20], seed=3)
            b = tf.random_uniform([20])
            with tf.Session() as s:
                vals.append(s.run([a, b]))
    np.testing.assert_array_equal(vals[0][0], vals[1][0])
    assert not np.array_equal(vals[0][1], vals[1][1])
    # a graph seed alone: the k-th such op gets (graph seed, k), whatever ops came between
    with tf.Graph().as_default():
        tf.set_random_seed(9)
        a = tf.random_normal([10])
        tf.constant(1.0)
        b = tf.random_normal([10])
        a2 = tf.random_normal([10], seed=0)
        b2 = tf.random_normal([10], seed=1)
        with tf.Session() as s:
            va, vb, va2, vb2 = s.run([a, b, a2, b2])
    np.testing.assert_array_equal(va, va2)
    np.testing.assert_array_equal(vb, vb2)


def test_statistics_and_shapes():
    with tf.Graph().as_default():
        n = tf.random_normal([200, 300], mean=2.0, stddev=3.0, seed=1)
        u = tf.random_uniform([60000], -1.0, 5.0, dtype=tf.float64, seed=2)
        t = tf.truncated_normal([60000], stddev=0.5, seed=3)
        i = tf.random_uniform([60000], minval=-2, maxval=3, dtype=tf.int64, seed=4)
        m = tf.multinomial(np.log([[0.2, 0.3, 0.5]]), 30000, seed=5, output_dtype=tf.int32)
        sh = tf.random_shuffle(tf.reshape(tf.range(30) if hasattr(tf, "range") else
                                          tf.constant(np.arange(30)), [10, 3]), seed=6)
        assert n.shape.as_list() == [200, 300] and n.dtype == tf.float32
        assert m.shape.as_list() == [1, 30000] and m.dtype == tf.int32
        assert i.dtype == tf.int64
        with tf.Session() as s:
            vn, vu, vt, vi, vm, vs = s.run([n, u, t, i, m, sh])
    assert abs(vn.mean() - 2) < 0.05 and abs(vn.std() - 3) < 0.05
    assert vu.dtype == np.float64 and vu.min() >= -1 and vu.max() < 5
    assert abs(vu.mean() - 2) < 0.05
    assert np.abs(vt).max() < 1.0 and abs(vt.std() - 0.5 * 0.8796) < 0.01
    assert set(np.unique(vi)) == {-2, -1, 0, 1, 2}
    np.testing.assert_allclose(np.bincount(vm[0], minlength=3) / 30000, [0.2, 0.3, 0.5],
                               atol=0.015)
    assert sorted(vs[:, 0].tolist()) == list(range(0, 30, 3))
    assert (vs[:, 1] == vs[:, 0] + 1).all()


def test_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Must specify maxval for integer dtype"):
              tf.random_uniform([3], dtype=tf.int32)
        with pytest.raises(TypeError):
              tf.random_normal([3], bogus=1)
        lo_hi = tf.random_uniform([3], 4, 4, dtype=tf.int32)
        with tf.Session() as s:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Need minval < maxval"):
                s.run(lo_hi)


def test_initializers_and_namespace():
    with tf.Graph().as_default():
        tf.random.set_seed(4)
        v = tf.get_variable("w", [300, 200], initializer=tf.random_normal_initializer(0, 0.5))
        u = tf.get_variable("u", [300, 200],
                            initializer=tf.truncated_normal_initializer(stddev=1.0))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            vv, vu = s.run([v, u])
    assert abs(vv.std() - 0.5) < 0.01 and np.abs(vu).max() < 2
    assert tf.random.normal is not None and tf.random.uniform is not None
    assert tf.random.DEFAULT_GRAPH_SEED == 87654321


# --- images and files ---

IMAGE_PROGRAM = r'''
import json, numpy as np
import {mod} as tf
{prelude}
rng = np.random.RandomState(3)
x = rng.uniform(-5, 5, size=(2, 5, 7, 3)).astype(np.float32)
xi = rng.randint(0, 1000, size=(4, 6, 3)).astype(np.int32)
R = tf.image.ResizeMethod
outs = [tf.image.resize_images(x, [11, 13]), tf.image.resize_images(x, [3, 4]),
        tf.image.resize_images(x[0], [8, 3], align_corners=True),
        tf.image.resize_images(x, [9, 10], method=R.NEAREST_NEIGHBOR),
        tf.image.resize_images(xi, [7, 5], method=R.NEAREST_NEIGHBOR, align_corners=True),
        tf.image.resize_images(xi, [7, 5]),
        tf.image.resize_bilinear(x, [6, 9], half_pixel_centers=True),
        tf.image.resize_nearest_neighbor(x, [6, 9], half_pixel_centers=True),
        tf.image.flip_left_right(x[0]), tf.image.flip_up_down(x), tf.image.flip_left_right(x),
        tf.image.per_image_standardization(x), tf.image.rgb_to_grayscale(x),
        tf.image.central_crop(x[0], 0.5), tf.image.central_crop(x, 0.33),
        tf.image.convert_image_dtype(xi, tf.float32), tf.image.convert_image_dtype(x / 10 + .5, tf.int32)]
with tf.Session() as s:
    vals = s.run(outs)
print(json.dumps([[np.asarray(v).tolist() for v in vals], [o.dtype.name for o in outs]]))
'''


def test_image_values_equal_tensorflows():
    if subprocess.run([sys.executable, "-c", "import importlib.util as u; "
                       "exit(u.find_spec('tensorflow') is None)"], env=_tf_env()).returncode:
        tfref.skip("TensorFlow is not installed in this interpreter")

    def run(mod, prelude, env):
        p = subprocess.run([sys.executable, "-c", IMAGE_PROGRAM.format(mod=mod, prelude=prelude)],
                           capture_output=True, text=True, env=env, timeout=120)
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    ref = run("tensorflow.compat.v1", "tf.disable_eager_execution()", _tf_env())
    got = run("rill.compat.v1", "", dict(os.environ))
    assert got[1] == ref[1]
    for i, (r, g) in enumerate(zip(ref[0], got[0])):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-5, atol=1e-5,
                                   err_msg=f"output {i}")


def test_files_and_gradient(tmp_path):
    path = str(tmp_path / "d" / "blob.bin")
    data = bytes(range(256)) * 10
    with tf.Graph().as_default():
        w = tf.write_file(path, tf.constant(data))
        r = tf.io.read_file(path)
        missing = tf.read_file(str(tmp_path / "none.png"))
        x = tf.constant(np.random.RandomState(0).rand(1, 4, 5, 2).astype(np.float32))
        y = tf.image.resize_images(x, [7, 3])
        (dx,) = tf.gradients(tf.reduce_sum(y * y), [x])
        with tf.Session() as s:
            s.run(w)
            assert s.run(r) == data
            with pytest.raises(tf.errors.NotFoundError, match="none.png"):
                s.run(missing)
            vx, vy, vdx = s.run([x, y, dx])
    assert vdx.shape == vx.shape and np.abs(vdx).sum() > 0
    # d/dx sum(y^2) = R^T (2 y) for the linear resize R: check against a probe direction
    v = np.random.RandomState(1).rand(*vx.shape).astype(np.float32)
    with tf.Graph().as_default():
        yv = tf.image.resize_images(tf.constant(v), [7, 3])
        with tf.Session() as s:
            rv = s.run(yv)
    np.testing.assert_allclose((vdx * v).sum(), (2 * vy * rv).sum(), rtol=1e-4)
    with pytest.raises(ValueError):
        tf.image.central_crop(np.zeros((4, 4, 3), np.float32), 0.0)


CODEC_PROGRAM = r'''
import json, sys, numpy as np
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
d = sys.argv[1]
rng = np.random.RandomState(5)
yy, xx = np.mgrid[0:45, 0:61]
img = np.stack([yy * 5, xx * 4, (yy + xx) * 2], -1).astype(np.uint8)
img16 = (rng.rand(9, 11, 1) * 65535).astype(np.uint16)
with tf.Session() as s:
    jpg, png, png16 = s.run([tf.image.encode_jpeg(img, quality=90), tf.image.encode_png(img),
                             tf.image.encode_png(img16)])
    open(d + "/tf.jpg", "wb").write(jpg)
    open(d + "/tf.png", "wb").write(png)
    open(d + "/tf16.png", "wb").write(png16)
    c = tf.read_file(d + "/tf.jpg")
    outs = [tf.image.decode_jpeg(c), tf.image.decode_jpeg(c, channels=1),
            tf.image.resize_images(tf.image.decode_jpeg(c), [20, 33]),
            tf.image.convert_image_dtype(tf.image.decode_jpeg(c), tf.float32),
            tf.image.decode_png(tf.read_file(d + "/rill.png"))]
    vals = s.run(outs)
np.save(d + "/img.npy", img)
np.save(d + "/img16.npy", img16)
print(json.dumps([v.tolist() for v in vals]))
'''


def test_codecs_against_tensorflow(tmp_path):
    if not hasattr(tf, "uint8"):
        pytest.skip("rill has no uint8 dtype in this build (the element-wise work adds it)")
    if subprocess.run([sys.executable, "-c", "import importlib.util as u; "
                       "exit(u.find_spec('tensorflow') is None)"], env=_tf_env()).returncode:
        tfref.skip("TensorFlow is not installed in this interpreter")
    d = str(tmp_path)
    # rill's PNG first, for TF to decode
    yy, xx = np.mgrid[0:45, 0:61]
    img = np.stack([yy * 5, xx * 4, (yy + xx) * 2], -1).astype(np.uint8)
    with tf.Graph().as_default():
        w = tf.write_file(d + "/rill.png", tf.image.encode_png(tf.constant(img)))
        with tf.Session() as s:
            s.run(w)
    p = subprocess.run([sys.executable, "-c", CODEC_PROGRAM, d], capture_output=True, text=True,
                       env=_tf_env(), timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    ref = [np.asarray(v) for v in json.loads(p.stdout.strip().splitlines()[-1])]
    with tf.Graph().as_default():
        c = tf.read_file(d + "/tf.jpg")
        dj = tf.image.decode_jpeg(c)
        outs = [dj, tf.image.decode_jpeg(c, channels=1), tf.image.resize_images(dj, [20, 33]),
                tf.image.convert_image_dtype(dj, tf.float32),
                tf.image.decode_image(tf.read_file(d + "/tf.png")),
                tf.io.decode_png(tf.read_file(d + "/tf16.png"), dtype=tf.uint16)]
        assert dj.dtype == tf.uint8 and outs[2].dtype == tf.float32
        with tf.Session() as s:
            got = s.run(outs)
    # libjpeg versions may round differently: within 1
    assert got[0].shape == ref[0].shape and np.abs(got[0].astype(int) - ref[0]).max() <= 1
    assert got[1].shape == ref[1].shape and np.abs(got[1].astype(int) - ref[1]).max() <= 1
    if np.array_equal(got[0], ref[0]):  # same decoder output: then resize agrees to 1e-5
        np.testing.assert_allclose(got[2], ref[2], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[3], ref[3], rtol=1e-6)
    np.testing.assert_array_equal(ref[4], img)  # TF reads rill's PNG
    np.testing.assert_array_equal(got[4], np.load(d + "/img.npy"))  # rill reads TF's
    np.testing.assert_array_equal(got[5], np.load(d + "/img16.npy"))
    with tf.Graph().as_default():
        bad = tf.image.decode_jpeg(tf.constant(b"\xff\xd8\xff" + b"x" * 50))
        missing = tf.image.decode_png(tf.read_file(d + "/none.png"))
        with tf.Session() as s:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="Invalid JPEG data or crop window, data size 53"):
                s.run(bad)
            with pytest.raises(tf.errors.NotFoundError, match="none.png"):
                s.run(missing)
