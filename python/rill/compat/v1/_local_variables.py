"""Local variables (tf.GraphKeys.LOCAL_VARIABLES: per task, never saved, initialised by
tf.local_variables_initializer) and the Python-side collections of tensors that tf.metrics and
tf.train's input producers add to (METRIC_VARIABLES, metrics_collections, updates_collections,
QUEUE_RUNNERS) where the front end has no tf.add_to_collection of its own.

The variables are rill's (rill_local_variable): the C library keeps the "local_variables"
collection, which the Saver never saves."""
import numpy as _np

__all__ = ["local_variables", "local_variables_initializer", "initialize_local_variables"]

LOCAL_VARIABLES = "local_variables"
METRIC_VARIABLES = "metric_variables"
QUEUE_RUNNERS = "queue_runners"


def _tf():
    import rill.compat.v1 as tf
    return tf


def _local_variable(shape, dtype, name, initial=0.0, collections=(METRIC_VARIABLES,)):
    """A local variable of shape and dtype filled with initial, in LOCAL_VARIABLES (the C
    library's collection) and the named Python-side collections."""
    tf = _tf()
    g = tf.get_default_graph()
    dt = tf.as_dtype(dtype)
    spec = ("zeros", 0.0, 0.0, 0) if initial == 0 else ("constant", float(initial), 0.0, 0)
    rop = g._g.local_variable(name, dt.enum, [int(d) for d in shape], spec,
                              g._device_for("VariableV2", name))
    v = tf._as_variable(g, rop)
    for c in collections or ():
        add_to_collection(c, v, g)
    return v


def local_variables(scope=None):
    """tf.local_variables: the graph's local variables, in creation order."""
    tf = _tf()
    g = tf.get_default_graph()
    vs = [tf._as_variable(g, r) for r in g._g.collection(LOCAL_VARIABLES)]
    if scope is not None:
        import re
        vs = [v for v in vs if re.match(scope, v.name)]
    return vs


def local_variables_initializer():
    """tf.local_variables_initializer: one op (named init_1 as TF's default is, uniquified)
    running every local variable's initializer; a NoOp when there are none."""
    g = _tf().get_default_graph()
    return g._wrap(g._g.local_variables_initializer(None))


def initialize_local_variables():
    import warnings
    warnings.warn("initialize_local_variables (from tensorflow.python.ops.variables) is "
                  "deprecated: use tf.local_variables_initializer instead.",
                  DeprecationWarning, stacklevel=2)
    return local_variables_initializer()


def add_to_collection(name, value, graph=None):
    """Adds value to the graph's collection name: through tf.add_to_collection when the front
    end has one, else into this module's per-graph store."""
    tf = _tf()
    g = graph or tf.get_default_graph()
    own = getattr(tf, "add_to_collection", None)
    if own is not None and own is not add_to_collection:
        with g.as_default():
            own(name, value)
        return
    if not hasattr(g, "_py_collections"):
        g._py_collections = {}
    g._py_collections.setdefault(name, []).append(value)


def add_to_collections(names, value, graph=None):
    if names is None:
        return
    if isinstance(names, str):
        names = [names]
    for n in dict.fromkeys(names):
        add_to_collection(n, value, graph)


def get_collection(name, graph=None):
    tf = _tf()
    g = graph or tf.get_default_graph()
    own = getattr(tf, "get_collection", None)
    if own is not None and own is not get_collection:
        with g.as_default():
            return list(own(name))
    return list(getattr(g, "_py_collections", {}).get(name, []))


del _np
