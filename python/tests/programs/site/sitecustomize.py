"""On PYTHONPATH for both sides of python/tests/test_programs.py: seeds numpy's global generator
from PROGRAM_NUMPY_SEED before the program starts, so that a program drawing its initial values or
data with numpy (unseeded, as published) draws the same ones under TensorFlow and under rill."""
import os

if os.environ.get("PROGRAM_NUMPY_SEED"):
    import numpy

    numpy.random.seed(int(os.environ["PROGRAM_NUMPY_SEED"]))
