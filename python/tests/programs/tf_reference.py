"""Runs a TF 1.x program on real TensorFlow (2.x, the project's virtualenv) as TF 1.15 ran it:
python tf_reference.py SCRIPT [ARGS...].

The reference side of python/tests/test_programs.py. TensorFlow 2.x still carries TF 1.x's API
as tensorflow.compat.v1; this makes `import tensorflow` resolve to it (with v2 behaviour off) and
puts back the two pieces of TF 1.15 that TF 2.x dropped and published programs import:
  - tensorflow.examples.tutorials.mnist.input_data: rill's own module (pure numpy, the tutorial's
    documented DataSet semantics), since TF 2.x ships none; the programs' data is the same files;
  - tensorflow.contrib.layers / contrib.framework: tf_slim, the maintained copy of TF 1.15's
    contrib.layers and contrib.framework code.
Nothing of the program is changed."""
import importlib.util
import os
import runpy
import sys
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow.compat.v1 as tf  # noqa: E402

tf.disable_v2_behavior()
tf.logging.set_verbosity(tf.logging.WARN)


def _module(name, **attrs):
    m = types.ModuleType(name)
    m.__path__ = []
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def _input_data():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "rill", "compat", "v1", "examples", "tutorials",
                        "mnist", "input_data.py")
    spec = importlib.util.spec_from_file_location("tensorflow.examples.tutorials.mnist.input_data",
                                                  path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _missing(n):
    raise AttributeError(n)


def _contrib():
    import tf_slim
    layers = _module("tensorflow.contrib.layers")
    for n in dir(tf_slim):
        if not n.startswith("_"):
            setattr(layers, n, getattr(tf_slim, n))
    for n in ("xavier_initializer", "xavier_initializer_conv2d", "variance_scaling_initializer"):
        setattr(layers, n, getattr(tf_slim.initializers, n))
    framework = _module("tensorflow.contrib.framework")
    for n in dir(tf_slim):
        if not n.startswith("_"):
            setattr(framework, n, getattr(tf_slim, n))
    # contrib.rnn: TF 1.15 exported the core cells and static unrolls there as well
    rnn = _module("tensorflow.contrib.rnn")
    for n in ("BasicLSTMCell", "BasicRNNCell", "DropoutWrapper", "GRUCell", "LSTMCell",
              "LSTMStateTuple", "MultiRNNCell", "ResidualWrapper", "RNNCell"):
        setattr(rnn, n, getattr(tf.nn.rnn_cell, n))
    rnn.static_rnn = tf.nn.static_rnn
    rnn.static_bidirectional_rnn = tf.nn.static_bidirectional_rnn
    return _module("tensorflow.contrib", layers=layers, framework=framework, rnn=rnn)


sys.modules["tensorflow"] = tf
tf.contrib = _contrib()
mnist = _module("tensorflow.examples.tutorials.mnist")
mnist.__getattr__ = lambda n: _input_data() if n == "input_data" else _missing(n)
tutorials = _module("tensorflow.examples.tutorials", mnist=mnist)
examples = _module("tensorflow.examples", tutorials=tutorials)
tf.examples = examples
compat = _module("tensorflow.compat", v1=tf)

if __name__ == "__main__":
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
    runpy.run_path(sys.argv[0], run_name="__main__")
