"""Graph collections, variable scopes and collections of variables as TF 1.x's; tf.contrib's
layers and framework; the tf.contrib import rule of rill.run; tf.logging's output."""
import os
import subprocess
import sys

import pytest

import rill.compat.v1 as tf


def test_collections_basic_and_scope_regex():
    with tf.Graph().as_default() as g:
        a = tf.constant(1.0, name="a")
        with tf.name_scope("blk"):
            b = tf.constant(2.0, name="b")
        tf.add_to_collection("mine", a)
        tf.add_to_collections(["mine", "other"], b)
        tf.add_to_collection("mine", 42)  # no name: left out when filtering by scope
        assert tf.get_collection("mine") == [a, b, 42]
        assert tf.get_collection("mine", scope="blk") == [b]
        ref = tf.get_collection_ref("other")
        ref.append(a)
        assert g.get_collection("other") == [b, a]
        assert tf.get_collection("missing") == []
        assert {"mine", "other"} <= set(g.get_all_collection_keys())
        g.clear_collection("mine")
        assert g.get_collection("mine") == []
        assert tf.GraphKeys.GLOBAL_VARIABLES == "variables"
        assert tf.GraphKeys.UPDATE_OPS == "update_ops"


def test_variables_in_collections():
    with tf.Graph().as_default() as g:
        v = tf.Variable(1.0, name="v")
        nt = tf.Variable(2.0, name="nt", trainable=False)
        loc = tf.Variable(3.0, name="loc", collections=[tf.GraphKeys.LOCAL_VARIABLES])
        mv = tf.get_variable("mv", [2], collections=[tf.GraphKeys.GLOBAL_VARIABLES,
                                                     tf.GraphKeys.MODEL_VARIABLES])
        lv = tf.get_local_variable("lv", [1], initializer=tf.zeros_initializer())
        assert tf.global_variables() == g.get_collection("variables") == [v, nt, mv]
        # TF: trainable (the default) adds TRAINABLE_VARIABLES to the collections given
        assert tf.trainable_variables() == [v, loc, mv]
        assert tf.local_variables() == [loc, lv]
        assert tf.model_variables() == [mv]
        assert tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, "m") == [mv]
        # removing a variable from the C-kept collection through the ref
        ref = tf.get_collection_ref(tf.GraphKeys.TRAINABLE_VARIABLES)
        ref.remove(v)
        assert tf.trainable_variables() == [loc, mv]
        ref.append(v)
        with tf.Session() as s:
            s.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            assert s.run(loc) == 3.0
            s.run(tf.tables_initializer())


def test_variable_scopes_as_tf():
    with tf.Graph().as_default():
        with tf.variable_scope("a") as sa:
            x = tf.get_variable("x", [1])
            assert sa.name == "a" and sa.original_name_scope == "a/"
        with tf.variable_scope("a", reuse=True):
            assert tf.get_variable("x", [1]) is x
            with pytest.raises(ValueError, match="does not exist"):
                tf.get_variable("y", [1])
            with pytest.raises(ValueError, match="specified shape"):
                tf.get_variable("x", [2])
        with tf.variable_scope(sa, reuse=tf.AUTO_REUSE):
            assert tf.get_variable("x", [1]) is x
            y = tf.get_variable("y", [3])
            assert y.name == "a/y:0"
        with pytest.raises(ValueError, match="already exists"):
            with tf.variable_scope("a"):
                tf.get_variable("x", [1])
        names = []
        for _ in range(2):
            with tf.variable_scope(None, default_name="blk") as sc:
                names.append(sc.name)
        assert names == ["blk", "blk_1"]
        with tf.variable_scope("init", initializer=tf.ones_initializer()):
            o = tf.get_variable("o", [2])
        i = tf.get_variable("i", [2], dtype=tf.int32)  # ints: zeros by default
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            assert list(s.run(o)) == [1, 1] and list(s.run(i)) == [0, 0]


def test_summaries_collection():
    with tf.Graph().as_default():
        s1 = tf.summary.scalar("a", tf.constant(1.0))
        assert tf.get_collection(tf.GraphKeys.SUMMARIES) == [s1]
        assert tf.summary.merge_all() is not None


def test_contrib_layers_names():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 8, 8, 1])
        h = tf.contrib.layers.conv2d(x, 4, 3)
        h = tf.contrib.layers.max_pool2d(h, 2)
        h = tf.contrib.layers.flatten(h)
        h = tf.contrib.layers.fully_connected(h, 5,
                                              weights_regularizer=tf.contrib.layers.l2_regularizer(0.1))
        h = tf.contrib.layers.dropout(h, keep_prob=0.5, is_training=False)
        h = tf.contrib.layers.fully_connected(h, 2, activation_fn=None)
        bn = tf.contrib.layers.batch_norm(h, is_training=True)
        names = [v.name for v in tf.global_variables()]
        assert names == ["Conv/weights:0", "Conv/biases:0", "fully_connected/weights:0",
                         "fully_connected/biases:0", "fully_connected_1/weights:0",
                         "fully_connected_1/biases:0", "BatchNorm/beta:0",
                         "BatchNorm/moving_mean:0", "BatchNorm/moving_variance:0"]
        assert [v.name for v in tf.contrib.framework.get_variables("fully_connected/")] == \
            names[2:4]
        assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2
        assert len(tf.losses.get_regularization_losses()) == 1
        assert tf.contrib.framework.get_or_create_global_step().name == "global_step:0"
        with pytest.raises(AttributeError, match="not part of rill"):
            tf.contrib.slim  # noqa: B018


def _run_script(src, tmp_path):
    p = tmp_path / "prog.py"
    p.write_text(src)
    return subprocess.run([sys.executable, "-m", "rill.run", str(p)], capture_output=True,
                          text=True, timeout=60, env=dict(os.environ))


def test_rill_run_contrib_imports_and_logging(tmp_path):
    r = _run_script(
        "import tensorflow as tf\n"
        "from tensorflow.contrib import layers\n"
        "import tensorflow.contrib.framework as fw\n"
        "tf.logging.set_verbosity(tf.logging.INFO)\n"
        "tf.logging.info('step %d', 7)\n"
        "tf.logging.debug('hidden')\n"
        "print(layers.fully_connected is tf.contrib.layers.fully_connected, fw.get_variables())\n"
        "try:\n"
        "    import tensorflow.contrib.slim\n"
        "except ImportError as e:\n"
        "    print('refused:', e)\n", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "True []" in r.stdout
    assert "refused: rill.run: 'tensorflow.contrib.slim' is not part of" in r.stdout
    assert "INFO:tensorflow:step 7" in r.stderr and "hidden" not in r.stderr
