"""rill: a dataflow-graph runtime in C with TensorFlow 1.x's graph-mode API in Python.

``import rill.compat.v1 as tf`` gives that API; ``python -m rill.run SCRIPT`` runs a TF 1.x script
with ``tensorflow`` resolved to rill for that process (docs/PYTHON.md)."""
from . import _rill

__version__ = _rill.__version__
