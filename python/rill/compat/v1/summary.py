"""tf.summary: scalar, histogram and merge_all make rill's summary ops (their bytes are
TensorFlow's Summary protos); FileWriter writes TensorBoard's event files."""
from ... import _rill


def _tf():
    import rill.compat.v1 as tf
    return tf


def scalar(name, tensor, collections=None, family=None):
    tf = _tf()
    g = tf.get_default_graph()
    return g._wrap(g._g.summary("scalar", name, tf.convert_to_tensor(tensor)._out)).outputs[0]


def histogram(name, values, collections=None, family=None):
    tf = _tf()
    g = tf.get_default_graph()
    return g._wrap(g._g.summary("histogram", name, tf.convert_to_tensor(values)._out)).outputs[0]


def merge_all(key="summaries", scope=None, name=None):
    tf = _tf()
    g = tf.get_default_graph()
    r = g._g.summary_merge_all(name)
    return None if r is None else g._wrap(r).outputs[0]
