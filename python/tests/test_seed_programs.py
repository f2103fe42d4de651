"""The seed's programs, extracted at test time from the seed document (../shared/seed/
000_8011f9f33961f825.txt where the workspace has it, else the copy of it in data/, which a clean
clone on a CI machine has: the programs are never copied out of the document), run on rill with
``python -m rill.run``, in real processes:

- the device program (its snippet has no import line: ``import tensorflow as tf`` is put before
  it, as anyone running it must) prints ``[2. 4. 6.]`` and the placement log on a machine with a
  GPU (PoCL's OpenCL device standing in: RILL_OPENCL_CPU_AS_GPU=1), and without one fails as
  TensorFlow does; with ``/gpu:1`` it raises InvalidArgumentError with TensorFlow's text, with
  and without the GPU;
- the local-server program prints ``b'Hello, distributed TensorFlow!'``.
"""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


SEED = "000_8011f9f33961f825.txt"


def _seed_text():
    for d in [ROOT, *ROOT.parents]:
        p = d / "shared" / "seed" / SEED
        if p.exists():
            return p.read_text(encoding="utf-8")
    return (pathlib.Path(__file__).parent / "data" / SEED).read_text(encoding="utf-8")


def _block(text, first, last):
    """The lines from the first one starting with `first` to the next one equal to `last`."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(first))
    end = next(i for i in range(start, len(lines)) if lines[i].strip() == last)
    return "\n".join(lines[start:end + 1]) + "\n"


def _run(tmp_path, name, source, env_extra=None):
    script = tmp_path / name
    script.write_text(source, encoding="utf-8")
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "rill.run", str(script)], capture_output=True,
                          text=True, timeout=120, env=env, cwd=tmp_path)


def test_device_program(tmp_path):
    src = "import tensorflow as tf\n" + _block(_seed_text(), "# # 通过tf.device", "print(sess.run(c))")
    r = _run(tmp_path, "device.py", src, {"RILL_OPENCL_CPU_AS_GPU": "1"})
    if "available devices are [ /job:localhost/replica:0/task:0/device:CPU:0 ]" in r.stderr:
        pytest.skip("no OpenCL device (PoCL) here to stand in for the GPU")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[2. 4. 6.]"
    # the placement log (rill's C library writes it to stdout): every node and where it went
    log = (r.stdout + r.stderr).splitlines()
    for node, dev in (("a", "CPU:0"), ("b", "CPU:0"), ("add", "GPU:0")):
        assert f"{node}: ({'Add' if node == 'add' else 'Const'}): " \
            f"/job:localhost/replica:0/task:0/device:{dev}" in log, log
    # and without a GPU, TF's error: /gpu:0 names no device here
    r = _run(tmp_path, "device.py", src, {"RILL_OPENCL_CPU_AS_GPU": "0"})
    assert r.returncode != 0 and "InvalidArgumentError" in r.stderr, r.stderr


def test_device_program_gpu1(tmp_path):
    src = "import tensorflow as tf\n" + _block(_seed_text(), "# # 通过tf.device", "print(sess.run(c))")
    src = src.replace("'/gpu:0'", "'/gpu:1'")
    assert "'/gpu:1'" in src
    for gpu, devices in (("0", "[ /job:localhost/replica:0/task:0/device:CPU:0 ]"),
                         ("1", "/job:localhost/replica:0/task:0/device:GPU:0 ]")):
        r = _run(tmp_path, "device1.py", src, {"RILL_OPENCL_CPU_AS_GPU": gpu})
        assert r.returncode != 0
        assert "InvalidArgumentError" in r.stderr, r.stderr
        assert ("Cannot assign a device for operation 'add': Operation was explicitly assigned to "
                "/device:GPU:1 but available devices are") in r.stderr, r.stderr
        if gpu == "0":
            assert devices in r.stderr, r.stderr


def test_local_server_program(tmp_path):
    src = _block(_seed_text(), "import tensorflow as tf", "print(sess.run(c))")
    assert "create_local_server" in src
    r = _run(tmp_path, "local_server.py", src)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "b'Hello, distributed TensorFlow!'"


TRAIN_AND_SAVE = '''
import numpy as np
import tensorflow as tf
global_step = tf.Variable(0, name='global_step', trainable=False)
input = tf.placeholder("float")
label = tf.placeholder("float")
weight = tf.get_variable("weight", [1], tf.float32, initializer=tf.random_normal_initializer())
biase = tf.get_variable("biase", [1], tf.float32, initializer=tf.random_normal_initializer())
loss = tf.square(label - (tf.multiply(input, weight) + biase))
train_op = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=global_step)
saver = tf.train.Saver()
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(2000):
        x = np.random.randn(1)
        sess.run(train_op, {input: x, label: 2 * x + 10 + np.random.randn(1) * 0.33})
    print(saver.save(sess, "./checkpoint/model.ckpt", global_step=global_step))
'''


def test_local_reload_program(tmp_path):
    """local_reload_test.py, verbatim, restores a checkpoint of the seed's model (written here
    by a short training run into ./checkpoint/, as distributed.py's Supervisor writes it) and
    prints the step and the trained values. On real TensorFlow it prints nothing: its
    tf.gfile.Exists is False for a V2 checkpoint prefix (docs/PYTHON.md)."""
    src = _block(_seed_text(), "#local_reload_test.py", "tf.app.run()")
    assert "tf.gfile.Exists(ckpt.model_checkpoint_path)" in src
    (tmp_path / "checkpoint").mkdir()
    r = _run(tmp_path, "train.py", TRAIN_AND_SAVE)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "./checkpoint/model.ckpt-2000"
    r = _run(tmp_path, "local_reload_test.py", src)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0] == "./checkpoint/model.ckpt-2000, global_step = 2000", r.stdout
    w, b = (float(v) for v in lines[1].replace("weight: ", "").replace("biase: ", "").split(", "))
    assert abs(w - 2) < 0.1 and abs(b - 10) < 0.3, lines[1]


def test_the_copy_is_the_seed_document():
    """data/'s copy (for machines without the workspace) is the seed document, byte for byte."""
    copy = (pathlib.Path(__file__).parent / "data" / SEED).read_bytes()
    for d in [ROOT, *ROOT.parents]:
        p = d / "shared" / "seed" / SEED
        if p.exists():
            assert p.read_bytes() == copy
            return
    pytest.skip("the workspace's seed document is not here to compare with")
