"""tensorflow.examples.tutorials.mnist.input_data on Debian's Fashion-MNIST files (MNIST's
layout and names): shapes, dtypes, ranges, one-hot labels, the validation split, next_batch's
epochs and its shuffling (the same batches as TF's documented construction computed here with
numpy), RILL_MNIST_DIR, the import through rill.run, and the missing-file error."""
import gzip
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import rill.compat.v1 as tf
from rill.compat.v1.examples.tutorials.mnist import input_data

SRC = "/usr/share/datasets/fashion-mnist"
FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")

pytestmark = pytest.mark.skipif(not all(os.path.isfile(os.path.join(SRC, f)) for f in FILES),
                                reason="Debian's dataset-fashion-mnist is not installed")


def _raw():
    with gzip.open(os.path.join(SRC, FILES[0])) as f:
        img = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(os.path.join(SRC, FILES[1])) as f:
        lab = np.frombuffer(f.read(), np.uint8, offset=8)
    return img, lab


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("mnist")
    for f in FILES:
        os.symlink(os.path.join(SRC, f), d / f)
    return str(d)


def test_shapes_dtypes_split(data_dir, capsys):
    m = input_data.read_data_sets(data_dir, one_hot=True)
    out = capsys.readouterr().out
    assert out.count("Extracting ") == 4 and os.path.join(data_dir, FILES[0]) in out
    assert isinstance(m, input_data.Datasets)
    assert m.train.images.shape == (55000, 784) and m.train.images.dtype == np.float32
    assert m.validation.num_examples == 5000 and m.test.num_examples == 10000
    assert m.train.labels.shape == (55000, 10) and m.train.labels.dtype == np.float64
    assert m.train.images.min() == 0.0 and m.train.images.max() == 1.0
    assert (m.train.labels.sum(1) == 1).all()
    img, lab = _raw()
    np.testing.assert_array_equal(m.validation.images, img[:5000] * np.float32(1 / 255))
    np.testing.assert_array_equal(m.validation.labels.argmax(1), lab[:5000])
    np.testing.assert_array_equal(m.train.labels.argmax(1), lab[5000:])
    u = input_data.read_data_sets(data_dir, dtype="uint8", reshape=False, validation_size=100)
    assert u.train.images.shape == (59900, 28, 28, 1) and u.train.images.dtype == np.uint8
    assert u.train.images.max() == 255 and u.train.labels.dtype == np.uint8
    np.testing.assert_array_equal(u.train.labels, lab[100:])
    with pytest.raises(ValueError, match="Validation size should be between 0 and 60000. "
                                         "Received: 60001."):
        input_data.read_data_sets(data_dir, validation_size=60001)
    with pytest.raises(TypeError, match="Invalid image dtype"):
        input_data.read_data_sets(data_dir, dtype="int32")


def test_next_batch_epochs_and_seed(data_dir):
    img, lab = _raw()
    n = 60000 - 1000
    m = input_data.read_data_sets(data_dir, validation_size=1000, seed=7)
    # TF: numpy's global state seeded with the seed; the first batch shuffles, and so does
    # every epoch's end
    rng = np.random.RandomState(7)
    order = rng.permutation(n)
    ref_lab = lab[1000:][order]
    xs, ys = m.train.next_batch(50000)
    np.testing.assert_array_equal(ys, ref_lab[:50000])
    np.testing.assert_array_equal(xs, img[1000:][order][:50000] * np.float32(1 / 255))
    assert m.train.epochs_completed == 0
    xs, ys = m.train.next_batch(10000)  # 9000 left, then 1000 of the next epoch
    assert m.train.epochs_completed == 1 and len(ys) == 10000
    order2 = rng.permutation(n)
    np.testing.assert_array_equal(ys, np.concatenate([ref_lab[50000:], lab[1000:][order][order2][:1000]]))
    # the same seed again gives the same batches; shuffle=False keeps the file's order
    m2 = input_data.read_data_sets(data_dir, validation_size=1000, seed=7)
    np.testing.assert_array_equal(m2.train.next_batch(100)[1], ref_lab[:100])
    np.testing.assert_array_equal(m2.validation.next_batch(100, shuffle=False)[1], lab[:100])
    # tf.set_random_seed seeds it when read_data_sets has no seed
    with tf.Graph().as_default():
        tf.set_random_seed(11)
        m4 = input_data.read_data_sets(data_dir, validation_size=1000)
    np.testing.assert_array_equal(m4.train.next_batch(100)[1],
                                  lab[1000:][np.random.RandomState(11).permutation(n)][:100])
    fake = input_data.read_data_sets("", fake_data=True, one_hot=True)
    fx, fy = fake.train.next_batch(3, fake_data=True)
    assert np.array(fx).shape == (3, 784) and fy[0] == [1] + [0] * 9


def test_missing_files_and_env(tmp_path, data_dir, monkeypatch):
    monkeypatch.delenv("RILL_MNIST_DIR", raising=False)
    with pytest.raises(FileNotFoundError) as e:
        input_data.read_data_sets(str(tmp_path))
    msg = str(e.value)
    assert os.path.join(str(tmp_path), FILES[0]) in msg
    assert "rill never downloads" in msg and "RILL_MNIST_DIR" in msg
    assert "dataset-fashion-mnist" in msg and SRC in msg
    assert e.value.filename == os.path.join(str(tmp_path), FILES[0])
    monkeypatch.setenv("RILL_MNIST_DIR", data_dir)
    m = input_data.read_data_sets(str(tmp_path / "absent"), validation_size=0)
    assert m.train.num_examples == 60000
    partial = tmp_path / "partial"
    partial.mkdir()
    shutil.copy(os.path.join(SRC, FILES[0]), partial / FILES[0])
    monkeypatch.setenv("RILL_MNIST_DIR", str(partial))
    with pytest.raises(FileNotFoundError, match="which lacks train-labels-idx1-ubyte.gz"):
        input_data.read_data_sets(str(tmp_path))
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in FILES:
        os.symlink(os.path.join(SRC, FILES[1] if f == FILES[0] else f), bad / f)
    with pytest.raises(ValueError, match="Invalid magic number 2049 in MNIST image file"):
        input_data.read_data_sets(str(bad))


def test_import_through_rill_run(tmp_path, data_dir):
    prog = tmp_path / "p.py"
    prog.write_text(
        "from tensorflow.examples.tutorials.mnist import input_data\n"
        "import tensorflow.examples.tutorials.mnist.input_data as again\n"
        "import tensorflow as tf\n"
        "assert again is input_data\n"
        f"m = input_data.read_data_sets({data_dir!r}, one_hot=True)\n"
        "x, y = m.train.next_batch(100)\n"
        "print(x.shape, y.shape, tf.float32)\n")
    r = subprocess.run([sys.executable, "-m", "rill.run", str(prog)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "(100, 784) (100, 10)" in r.stdout
    bad = tmp_path / "q.py"
    bad.write_text("import tensorflow.examples.tutorials.nothing\n")
    r = subprocess.run([sys.executable, "-m", "rill.run", str(bad)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0 and "is not part of rill's TensorFlow API" in r.stderr
