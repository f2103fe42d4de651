"""tf.estimator: Estimator, EstimatorSpec, ModeKeys, RunConfig and tf.estimator.inputs'
numpy_input_fn, over rill's Session, Saver and FileWriter (see estimator.py)."""
from .estimator import Estimator, EstimatorSpec, ModeKeys, RunConfig  # noqa: F401
from . import inputs  # noqa: F401
