"""Local variables as tf.metrics and tf.train's input producers make them (in
tf.GraphKeys.LOCAL_VARIABLES: per task, never saved, initialised by
tf.local_variables_initializer), and the collections they add to (METRIC_VARIABLES,
metrics_collections, updates_collections, QUEUE_RUNNERS) through tf.add_to_collection.

The variables are rill's (rill_local_variable): the C library keeps the "local_variables"
collection, which the Saver never saves."""
__all__ = []  # helpers; tf.local_variables & co are graph_collections'.

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


def add_to_collection(name, value, graph=None):
    (graph or _tf().get_default_graph()).add_to_collection(name, value)


def add_to_collections(names, value, graph=None):
    if names is None:
        return
    if isinstance(names, str):
        names = [names]
    for n in dict.fromkeys(names):
        add_to_collection(n, value, graph)


def get_collection(name, graph=None):
    return list((graph or _tf().get_default_graph()).get_collection(name))
