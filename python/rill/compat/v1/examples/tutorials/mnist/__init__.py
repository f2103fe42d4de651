"""tensorflow.examples.tutorials.mnist: input_data (the MNIST files as numpy DataSets)."""
from . import input_data  # noqa: F401
