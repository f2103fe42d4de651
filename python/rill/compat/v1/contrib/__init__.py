"""tf.contrib: only contrib.layers and contrib.framework (thin maps onto tf.layers, the
initializers and tf.train) and contrib.rnn (the core cells); any other submodule is a clear
error, as `import tensorflow.contrib.x` is under rill.run."""
from . import framework, layers, rnn  # noqa: F401

__all__ = ["layers", "framework", "rnn"]


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"rill: 'tf.contrib.{name}' is not part of rill's TensorFlow API "
                         "(tf.contrib.layers, tf.contrib.framework and tf.contrib.rnn are); see "
                         "docs/PYTHON.md")
