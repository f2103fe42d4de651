"""TensorFlow-compatible APIs over rill (``rill.compat.v1``: tf.compat.v1's graph mode)."""
