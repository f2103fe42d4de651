"""Graph collections (tf.get_collection, tf.add_to_collection, tf.GraphKeys, Graph's collection
methods) and the variable lists built on them (tf.local_variables, tf.model_variables, ...).

A collection holds any Python objects, as TF's. The keys the C library keeps itself
("variables", "trainable_variables", "local_variables", "global_step", "summaries": variable
creation, the Saver, the optimizers' default var_list, the Supervisor and merge_all read them in
C) live in C and are read from there every time, so the C graph and Python never disagree; an
object without a C op (rare in those keys) is kept beside them in Python. Every other key lives
in Python only. Removing a member from a C key rebuilds the C collection (clear, then add back).

The Graph methods (get_collection, get_collection_ref, add_to_collection, add_to_collections,
get_all_collection_keys, clear_collection) are attached to tf.Graph when this module is
imported."""
import re as _re
import sys as _sys

__all__ = ["GraphKeys", "get_collection", "get_collection_ref", "add_to_collection",
           "add_to_collections", "local_variables", "local_variables_initializer",
           "model_variables", "moving_average_variables", "tables_initializer", "initialize_local_variables"]


def _tf():
    return _sys.modules[__package__]


class GraphKeys:
    """TF 1.x's standard collection names (tf.GraphKeys)."""
    GLOBAL_VARIABLES = "variables"
    VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    TRAIN_OP = "train_op"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"
    _SUMMARY_COLLECTION = "_SUMMARY_V2"
    _VARIABLE_COLLECTIONS = [GLOBAL_VARIABLES, LOCAL_VARIABLES, METRIC_VARIABLES,
                             MODEL_VARIABLES, TRAINABLE_VARIABLES, MOVING_AVERAGE_VARIABLES,
                             CONCATENATED_VARIABLES, TRAINABLE_RESOURCE_VARIABLES]
    _STREAMING_MODEL_PORTS = "streaming_model_ports"


# the keys whose members the C library keeps, and what a member's op stands for in Python
_C_VARIABLE_KEYS = ("variables", "trainable_variables", "local_variables", "global_step")
_C_TENSOR_KEYS = ("summaries",)
_C_KEYS = _C_VARIABLE_KEYS + _C_TENSOR_KEYS


def _state(graph):
    """(python collections {key: list}, key order, extras of C keys {key: list})."""
    st = graph.__dict__.get("_collections_state")
    if st is None:
        st = graph.__dict__["_collections_state"] = ({}, [], {})
    return st


def _c_members(graph, key):
    tf = _tf()
    rops = graph._g.collection(key)
    if key in _C_VARIABLE_KEYS:
        return [tf._as_variable(graph, r) for r in rops]
    return [graph._wrap(r).outputs[0] for r in rops]


def _c_op(item):
    """The C op of a Variable, Tensor or Operation; None for anything else."""
    tf = _tf()
    if isinstance(item, tf.Variable):
        return item.op._op
    if isinstance(item, tf.Tensor):
        return item.op._op
    if isinstance(item, tf.Operation):
        return item._op
    return None


def _members(graph, key):
    colls, _, extras = _state(graph)
    if key in _C_KEYS:
        return _c_members(graph, key) + list(extras.get(key, ()))
    return colls.get(key, [])


def _set_members(graph, key, items):
    """Replaces a collection's members (a C key's in C, by clearing and adding back)."""
    colls, order, extras = _state(graph)
    if key in _C_KEYS:
        graph._g.clear_collection(key)
        rest = []
        for it in items:
            r = _c_op(it)
            if r is not None:
                graph._g.add_to_collection(key, r)
            else:
                rest.append(it)
        extras[key] = rest
    else:
        colls[key] = list(items)
    if key not in order:
        order.append(key)


class _CollectionRef(list):
    """get_collection_ref of a key the C library keeps: a list whose changes go to C."""

    def __init__(self, graph, key):
        super().__init__(_members(graph, key))
        self._graph, self._key = graph, key

    def _sync(self):
        _set_members(self._graph, self._key, list(self))


def _writing(name):
    base = getattr(list, name)

    def method(self, *a, **kw):
        r = base(self, *a, **kw)
        self._sync()
        return r
    method.__name__ = name
    return method


for _m in ("append", "extend", "insert", "remove", "pop", "clear", "__setitem__",
           "__delitem__", "__iadd__", "sort", "reverse"):
    setattr(_CollectionRef, _m, _writing(_m))


def _filter(items, scope):
    if scope is None:
        return list(items)
    rx = _re.compile(scope)
    out = []
    for it in items:
        try:
            if rx.match(it.name):
                out.append(it)
        except AttributeError:  # TF: an item without a name is left out when filtering
            pass
    return out


# --- tf.Graph's methods ---

def _graph_add_to_collection(self, name, value):
    colls, order, extras = _state(self)
    if name in _C_KEYS:
        r = _c_op(value)
        if r is not None:
            self._g.add_to_collection(name, r)
        else:
            extras.setdefault(name, []).append(value)
    else:
        colls.setdefault(name, []).append(value)
    if name not in order:
        order.append(name)


def _graph_add_to_collections(self, names, value):
    if isinstance(names, str):
        names = (names,)
    for n in set(names):  # TF: a name given twice adds once
        _graph_add_to_collection(self, n, value)


def _graph_get_collection(self, name, scope=None):
    return _filter(_members(self, name), scope)


def _graph_get_collection_ref(self, name):
    colls, order, _ = _state(self)
    if name not in order:
        order.append(name)
    if name in _C_KEYS:
        return _CollectionRef(self, name)
    return colls.setdefault(name, [])


def _graph_get_all_collection_keys(self):
    _, order, _ = _state(self)
    keys = [k for k in order if _members(self, k)]
    for k in _C_KEYS:  # members the C library added
        if k not in keys and self._g.collection(k):
            keys.append(k)
    return keys


def _graph_clear_collection(self, name):
    colls, order, extras = _state(self)
    if name in _C_KEYS:
        self._g.clear_collection(name)
        extras.pop(name, None)
    colls.pop(name, None)
    if name in order:
        order.remove(name)


def _install(Graph):
    Graph.add_to_collection = _graph_add_to_collection
    Graph.add_to_collections = _graph_add_to_collections
    Graph.get_collection = _graph_get_collection
    Graph.get_collection_ref = _graph_get_collection_ref
    Graph.get_all_collection_keys = _graph_get_all_collection_keys
    Graph.clear_collection = _graph_clear_collection


# --- the module functions (on the default graph) ---

def get_collection(key, scope=None):
    return _tf().get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return _tf().get_default_graph().get_collection_ref(key)


def add_to_collection(name, value):
    _tf().get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    _tf().get_default_graph().add_to_collections(names, value)


# --- variables in collections ---

def _place_variable(var, collections, trainable):
    """A new variable's collections as TF's tf.Variable sets them: `collections` (default
    [GLOBAL_VARIABLES]) plus TRAINABLE_VARIABLES when trainable. The C library has already put
    it in "variables" (and "trainable_variables" when trainable): what is not asked for is taken
    out, the rest added."""
    if collections is None:
        return
    g = var.graph
    want = list(collections)
    if trainable and GraphKeys.TRAINABLE_VARIABLES not in want:
        want.append(GraphKeys.TRAINABLE_VARIABLES)
    rop = var.op._op
    for key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.TRAINABLE_VARIABLES):
        if key not in want:
            members = [r for r in g._g.collection(key) if r != rop]
            g._g.clear_collection(key)
            for r in members:
                g._g.add_to_collection(key, r)
    for key in dict.fromkeys(want):
        if key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.TRAINABLE_VARIABLES):
            continue
        g.add_to_collection(key, var)


def local_variables(scope=None):
    return get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope=None):
    return get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope=None):
    return get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def local_variables_initializer():
    """A group of the local variables' initializers (TF names it "init", made unique)."""
    tf = _tf()
    vs = local_variables()
    if vs:
        return tf.variables_initializer(vs, name="init")
    return tf.no_op(name="init")


def tables_initializer(name="init_all_tables"):
    """The TABLE_INITIALIZERS collection as a group (a NoOp when empty, as TF)."""
    tf = _tf()
    inits = get_collection(GraphKeys.TABLE_INITIALIZERS)
    return tf.group(*inits, name=name) if inits else tf.no_op(name=name)


initialize_local_variables = local_variables_initializer
