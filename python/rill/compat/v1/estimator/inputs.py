"""tf.estimator.inputs: numpy_input_fn (see numpy_io.py)."""
from .numpy_io import numpy_input_fn  # noqa: F401
