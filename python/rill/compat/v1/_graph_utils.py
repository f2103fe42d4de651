"""TF 1.x's graph utilities at the top of tf.*: static values (get_static_value, make_ndarray,
make_tensor_proto), variable state (assign*, count_up_to, is_variable_initialized,
report_uninitialized_variables, ...), grouping (identity_n, tuple), scopes (colocate_with,
container, init_scope, op_scope, variable_op_scope), make_template, hessians, and the switches
TF 1.x programs call (resource variables, control flow v2, tensor equality), which in rill, a
graph-mode TF 1.x, report or keep TF 1.x's behaviour."""
import contextlib as _contextlib
import sys as _sys

import numpy as _np

__all__ = ["get_static_value", "make_ndarray", "make_tensor_proto", "TensorProto",
           "is_tensor", "is_symbolic_tensor", "identity_n", "assign", "assign_add",
           "assign_sub", "count_up_to", "is_variable_initialized",
           "assert_variables_initialized", "report_uninitialized_variables",
           "initialize_variables", "initialize_all_tables", "tables_initializer", "hessians",
           "colocate_with", "container", "init_scope", "op_scope", "variable_op_scope",
           "get_logger", "dimension_at_index", "timestamp", "guarantee_const",
           "convert_to_tensor_or_indexed_slices", "resource_variables_enabled",
           "control_flow_v2_enabled", "executing_eagerly_outside_functions",
           "disable_resource_variables", "disable_tensor_equality", "disable_control_flow_v2",
           "make_template", "RegisterGradient", "no_gradient", "NotDifferentiable",
           "NoGradient", "custom_gradient", "grad_pass_through"]


# tf.print and tf.tuple: served by the package's __getattr__, so that the package's own code
# keeps the builtins print and tuple
BUILTIN_NAMES = {"tuple": lambda: tuple,
                 "print": lambda: __import__(__package__ + "._check_ops", fromlist=["print"]).print}


def _tf():
    return _sys.modules[__package__]


def _g():
    return _tf().get_default_graph()


def _t(x, dtype=None, name=None):
    return _tf().convert_to_tensor(x, dtype=dtype, name=name)


# --- static values ---

# what TF's tensor_util.constant_value folds (Shape, Size, Rank from the static shape; the rest
# when every input folds)
_FOLDABLE = {"Const", "Identity", "Cast", "Pack", "Fill", "Range", "ConcatV2", "Concat",
             "StopGradient", "Equal", "NotEqual", "ExpandDims", "Unpack", "Unstack"}


def _static_shape_value(t):
    """The value of a Shape, Size or Rank output the static shape decides, or None."""
    op = t.op
    x = op.inputs[0] if op.inputs else None
    if x is None:
        return None
    sh = x.shape
    np_dtype = t.dtype.as_numpy_dtype
    if op.type == "Rank":
        return None if sh.ndims is None else _np.asarray(sh.ndims, dtype=np_dtype)
    if not sh.is_fully_defined():
        return None
    if op.type == "Shape":
        return _np.asarray(sh.as_list(), dtype=np_dtype)
    if op.type == "Size":
        return _np.asarray(sh.num_elements(), dtype=np_dtype)
    return None


def get_static_value(tensor, partial=False):
    """tf.get_static_value: the numpy value of tensor when it can be computed when the graph is
    built (constants and what TF's constant_value folds over them), else None."""
    tf = _tf()
    if isinstance(tensor, tf.Variable):
        return None
    if not isinstance(tensor, tf.Tensor):
        return _np.asarray(tensor) if tensor is not None else None
    feeds = {}
    seen = set()
    stack = [tensor]
    while stack:
        t = stack.pop()
        if t._out in seen:
            continue
        seen.add(t._out)
        if t.op.type in ("Shape", "Size", "Rank"):
            v = _static_shape_value(t)
            if v is None:
                return None
            feeds[t] = v
            continue
        if t.op.type not in _FOLDABLE or t.op.control_inputs:
            return None
        stack.extend(t.op.inputs)
    if tensor in feeds:
        return feeds[tensor]
    with tf.Session(graph=tensor.graph) as sess:
        v = sess.run(tensor, feeds)
    return _np.asarray(v)


class _Dim:
    def __init__(self, size):
        self.size = size

    def __repr__(self):
        return f"dim {{ size: {self.size} }}"


class _TensorShapeProto:
    def __init__(self, dims):
        self.unknown_rank = dims is None
        self.dim = [] if dims is None else [_Dim(int(d)) for d in dims]


class TensorProto:
    """A tf.TensorProto as make_tensor_proto makes it and make_ndarray reads it: dtype (TF's
    DataType enum), tensor_shape (.dim[i].size), and the values (tensor_content bytes, or
    string_val for strings)."""

    def __init__(self, dtype=0, tensor_shape=None, tensor_content=b"", string_val=None):
        self.dtype = dtype
        self.tensor_shape = tensor_shape or _TensorShapeProto([])
        self.tensor_content = tensor_content
        self.string_val = list(string_val or [])

    def __repr__(self):
        from .dtypes import as_dtype
        return (f"dtype: DT_{as_dtype(self.dtype).name.upper()}\ntensor_shape {{ "
                f"{' '.join(repr(d) for d in self.tensor_shape.dim)} }}\n"
                f"tensor_content: {self.tensor_content!r}")


def make_tensor_proto(values, dtype=None, shape=None, verify_shape=False,
                      allow_broadcast=False):
    """tf.make_tensor_proto: values (a numpy array, a Python list or scalar) as a TensorProto of
    dtype (inferred as TF does: Python floats float32, ints int32) and shape (values broadcast or
    padded with their last element as tf.constant does)."""
    tf = _tf()
    if isinstance(values, TensorProto):
        return values
    if isinstance(values, (tf.Tensor, tf.Variable)):
        raise TypeError(f"Failed to convert elements of {values} to Tensor. Consider casting "
                        "elements to a supported type.")
    dt = tf.as_dtype(dtype) if dtype is not None else None
    if dt is None:
        arr = _np.asarray(values)
        if arr.dtype.kind in "USO":
            dt = tf.string
        elif arr.dtype == _np.float64 and not isinstance(values, (_np.ndarray, _np.generic)):
            dt = tf.float32
        elif arr.dtype == _np.int64 and not isinstance(values, (_np.ndarray, _np.generic)):
            dt = tf.int32
        else:
            dt = tf.as_dtype(arr.dtype)
    if dt == tf.string:
        arr = _np.asarray(values, dtype=object)
    else:
        arr = _np.asarray(values)
        if (dt.is_integer and arr.dtype.kind == "f") or (not dt.is_bool and arr.dtype == bool
                                                         and dt != tf.as_dtype(arr.dtype)):
            raise TypeError(f"Expected {dt.name}, but got {values!r} of type "
                            f"'{type(values).__name__}'.")
        arr = arr.astype(dt.as_numpy_dtype)
    if shape is not None:
        shape = [int(d) for d in shape]
        n = int(_np.prod(shape)) if shape else 1
        if verify_shape and list(arr.shape) != shape:
            raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, got {arr.shape}.")
        if arr.size == n:
            arr = arr.reshape(shape)
        elif arr.size == 1 or (allow_broadcast and arr.size):
            arr = _np.broadcast_to(arr.reshape(()) if arr.size == 1 else arr, shape).copy()
        elif 0 < arr.size < n and not allow_broadcast:
            flat = _np.concatenate([arr.reshape(-1), _np.repeat(arr.reshape(-1)[-1:],
                                                                n - arr.size)])
            arr = flat.reshape(shape)
        else:
            raise ValueError(f"Too many elements provided. Needed at most {n}, but received "
                             f"{arr.size}")
    proto = TensorProto(dtype=dt.enum, tensor_shape=_TensorShapeProto(arr.shape))
    if dt == tf.string:
        proto.string_val = [v if isinstance(v, bytes) else str(v).encode()
                            for v in arr.reshape(-1)]
    else:
        proto.tensor_content = _np.ascontiguousarray(arr).tobytes()
    return proto


def make_ndarray(tensor):
    """tf.make_ndarray: the numpy array of a TensorProto."""
    from .dtypes import as_dtype
    if not isinstance(tensor, TensorProto):
        raise TypeError(f"{tensor!r} is not a TensorProto")
    shape = [d.size for d in tensor.tensor_shape.dim]
    dt = as_dtype(tensor.dtype)
    if dt.name == "string":
        return _np.array(tensor.string_val, dtype=object).reshape(shape)
    return _np.frombuffer(tensor.tensor_content, dtype=dt.as_numpy_dtype).copy().reshape(shape)


def is_tensor(x):
    """tf.is_tensor: whether x is a TF tensor type (a Tensor, a Variable, IndexedSlices)."""
    tf = _tf()
    types = (tf.Tensor, tf.Variable) + ((tf.IndexedSlices,) if hasattr(tf, "IndexedSlices")
                                        else ())
    return isinstance(x, types)


def is_symbolic_tensor(tensor):
    """tf.is_symbolic_tensor: every rill tensor is a graph tensor."""
    tf = _tf()
    return isinstance(tensor, (tf.Tensor, tf.Variable))


def convert_to_tensor_or_indexed_slices(value, dtype=None, name=None):
    tf = _tf()
    if hasattr(tf, "IndexedSlices") and isinstance(value, tf.IndexedSlices):
        if dtype is not None and tf.as_dtype(dtype) != value.dtype:
            raise ValueError(f"Tensor conversion requested dtype {tf.as_dtype(dtype).name} for "
                             f"Tensor with dtype {value.dtype.name}: {value!r}")
        return value
    return _t(value, dtype=dtype, name=name)


def dimension_at_index(shape, index):
    """tf.compat.dimension_at_index: dimension index of shape as a Dimension (unknown when the
    rank is)."""
    tf = _tf()
    shape = shape if isinstance(shape, tf.TensorShape) else tf.TensorShape(shape)
    if shape.ndims is None:
        return tf.Dimension(None)
    return tf.Dimension(shape._dims[index])


# --- grouping ---

def identity_n(input, name=None):
    """tf.identity_n: each input, through one IdentityN op."""
    xs = [_t(x) for x in input]
    op = _g()._make("IdentityN", name or "IdentityN", xs, {"num_outputs": ("int", len(xs))})
    return list(op.outputs)


def tuple(tensors, name=None, control_inputs=None):  # noqa: A001  (tf.tuple)
    """tf.tuple: each tensor (None stays None) once all of them (and control_inputs) exist."""
    tf = _tf()
    if control_inputs:
        for c in control_inputs:
            if not isinstance(c, (tf.Operation, tf.Tensor)):
                raise TypeError("'control_inputs' must only contain Operation or Tensor. "
                                f"Received: {c}")
    with tf.name_scope(name or "tuple"):
        gating = [t.op for t in tensors if t is not None]
        if control_inputs:
            gating += [c.op if isinstance(c, tf.Tensor) else c for c in control_inputs]
        gate = tf.group(*gating)
        out = []
        for t in tensors:
            if t is None:
                out.append(None)
                continue
            with tf.control_dependencies([gate]):
                out.append(tf.identity(t, name="control_dependency"))
    return out


# --- variables ---

def _ref(ref, what):
    tf = _tf()
    if isinstance(ref, tf.Variable):
        return ref._value
    if isinstance(ref, tf.Tensor) and ref.op.type == "VariableV2":
        return ref
    raise TypeError(f"'{what}' Op requires that input 'ref' be a mutable tensor (e.g.: a "
                    f"tf.Variable): {ref!r}")


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """tf.assign: ref = value; the variable's value after."""
    if validate_shape is False:
        raise ValueError("tf.assign: validate_shape=False (changing a variable's shape) is not "
                         "supported: rill's variables keep their declared shape")
    r = _ref(ref, "Assign")
    v = _t(value, dtype=r.dtype)
    return _g()._make("Assign", name or "Assign", (r, v),
                      {"use_locking": ("bool", bool(use_locking))}).outputs[0]


def assign_add(ref, value, use_locking=None, name=None):
    r = _ref(ref, "AssignAdd")
    return _g()._make("AssignAdd", name or "AssignAdd", (r, _t(value, dtype=r.dtype)),
                      {"use_locking": ("bool", bool(use_locking))}).outputs[0]


def assign_sub(ref, value, use_locking=None, name=None):
    r = _ref(ref, "AssignSub")
    return _g()._make("AssignSub", name or "AssignSub", (r, _t(value, dtype=r.dtype)),
                      {"use_locking": ("bool", bool(use_locking))}).outputs[0]


def count_up_to(ref, limit, name=None):
    """tf.count_up_to: the variable's value, then incremented; OutOfRangeError at limit."""
    r = _ref(ref, "CountUpTo")
    return _g()._make("CountUpTo", name or "CountUpTo", (r,),
                      {"limit": ("int", int(limit))}).outputs[0]


def is_variable_initialized(variable):
    """tf.is_variable_initialized: a bool scalar, whether the variable holds a value."""
    return _g()._make("IsVariableInitialized", "IsVariableInitialized",
                      (_ref(variable, "IsVariableInitialized"),)).outputs[0]


def _var_list(var_list):
    tf = _tf()
    if var_list is None:
        var_list = tf.global_variables() + tf.local_variables()
    return list(var_list)


def assert_variables_initialized(var_list=None):
    """tf.assert_variables_initialized: an op that fails (FailedPreconditionError) while any
    variable of var_list (all, when None) is uninitialized; None when there are none."""
    tf = _tf()
    var_list = _var_list(var_list)
    if not var_list:
        return None
    ranks = []
    for v in var_list:
        with colocate_with(v.op):
            # Rank reads the variable: an uninitialized one fails, as in TF
            ranks.append(tf.rank(v.value()))
    return ranks[0] if len(ranks) == 1 else tf.stack(ranks)


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    """tf.report_uninitialized_variables: a 1-D string tensor, the names of the variables of
    var_list (global and local ones, when None) that have no value yet."""
    tf = _tf()
    var_list = _var_list(var_list)
    with tf.name_scope(name):
        if not var_list:
            return tf.constant([], dtype=tf.string)
        inits = tf.stack([is_variable_initialized(v) for v in var_list])
        names = tf.constant([v.op.name for v in var_list])
        # TF's boolean_mask(names, not inits)
        idx = tf.reshape(tf.where(tf.logical_not(inits)), [-1])
        return tf.gather(names, idx)


def initialize_variables(var_list, name="init"):
    """tf.initialize_variables (deprecated for tf.variables_initializer)."""
    return _tf().variables_initializer(var_list, name=name)


def tables_initializer(name="init_all_tables"):
    """tf.tables_initializer: rill has no lookup tables, so TF's no-op group for a graph
    without any."""
    return _tf().no_op(name=name)


initialize_all_tables = tables_initializer


# --- scopes ---

@_contextlib.contextmanager
def colocate_with(op, ignore_existing=False):
    """tf.colocate_with: ops made inside go where op is (its device); ignore_existing drops the
    outer device contexts as TF drops the outer colocation."""
    tf = _tf()
    if op is None:
        yield
        return
    if isinstance(op, tf.Variable):
        op = op.op
    if isinstance(op, tf.Tensor):
        op = op.op
    dev = op.device
    g = _g()
    saved = None
    if ignore_existing:
        saved, g._device_stack = g._device_stack, []
    try:
        if dev:
            with g.device(dev):
                yield
        else:
            yield
    finally:
        if saved is not None:
            g._device_stack = saved


@_contextlib.contextmanager
def container(container_name):
    """tf.container: the resource container of the stateful ops made inside. rill keeps one
    container per session (TF's default ""), so the name only scopes: nothing to change."""
    if not isinstance(container_name, str):
        raise TypeError(f"container name must be a string, got {container_name!r}")
    yield container_name


@_contextlib.contextmanager
def init_scope():
    """tf.init_scope: outside every control-dependency context (graph mode: what else it lifts
    out of, the eager context and function graphs, rill never is in)."""
    with _tf().control_dependencies(None):
        yield


def op_scope(values, name, default_name=None):
    """tf.op_scope (deprecated): name_scope(name, default_name, values)."""
    return _tf().name_scope(name, default_name, values)


def variable_op_scope(values, name_or_scope, default_name=None, initializer=None,
                      regularizer=None, caching_device=None, partitioner=None,
                      custom_getter=None, reuse=None, dtype=None, use_resource=None):
    """tf.variable_op_scope (deprecated): variable_scope with values."""
    return _tf().variable_scope(name_or_scope, default_name=default_name, values=values,
                                initializer=initializer, regularizer=regularizer,
                                caching_device=caching_device, partitioner=partitioner,
                                custom_getter=custom_getter, reuse=reuse, dtype=dtype,
                                use_resource=use_resource)


class Template:
    """What make_template returns: func_ in a variable scope made on the first call (or at once,
    create_scope_now_), every later call reusing its variables."""

    def __init__(self, name, func, create_scope_now=False, unique_name=None,
                 custom_getter=None, kwargs=None):
        self._func = func
        self._kwargs = kwargs or {}
        self._name = name
        self._unique_name = unique_name
        self._custom_getter = custom_getter
        self._variable_scope = None
        self._variables_created = False
        if create_scope_now:
            tf = _tf()
            with tf.variable_scope(self._unique_name, self._name,
                                   custom_getter=self._custom_getter) as vs:
                self._variable_scope = vs

    @property
    def name(self):
        return self._name

    @property
    def variable_scope(self):
        return self._variable_scope

    @property
    def variable_scope_name(self):
        return None if self._variable_scope is None else self._variable_scope.name

    def __call__(self, *args, **kwargs):
        tf = _tf()
        kw = dict(self._kwargs)
        kw.update(kwargs)
        if self._variable_scope is None:
            with tf.variable_scope(self._unique_name, self._name,
                                   custom_getter=self._custom_getter) as vs:
                self._variable_scope = vs
                out = self._func(*args, **kw)
            self._variables_created = True
            return out
        if not self._variables_created:
            with tf.variable_scope(self._variable_scope, auxiliary_name_scope=True):
                out = self._func(*args, **kw)
            self._variables_created = True
            return out
        with tf.variable_scope(self._variable_scope, reuse=True):
            return self._func(*args, **kw)


def make_template(name_, func_, create_scope_now_=False, unique_name_=None, custom_getter_=None,
                  **kwargs):
    """tf.make_template: func_ wrapped so that every call shares the variables of the first."""
    if not callable(func_):
        raise ValueError(f"func_ must be callable, got {func_!r}")
    return Template(name_, func_, create_scope_now=create_scope_now_, unique_name=unique_name_,
                    custom_getter=custom_getter_, kwargs=kwargs)


# --- gradients ---

def hessians(ys, xs, name="hessians", colocate_gradients_with_ops=False, gate_gradients=False,
             aggregation_method=None):
    """tf.hessians: for each x, the Hessian of sum(ys) with respect to x, of shape
    x.shape + x.shape (x's shape must be fully defined: rill builds one gradient per element
    where TF loops over them with a while_loop)."""
    tf = _tf()
    xs = list(xs) if isinstance(xs, (list, _builtin_tuple)) else [xs]
    with tf.name_scope(name):
        grads = tf.gradients(ys, xs)
        out = []
        for g, x in zip(grads, xs):
            x = x.value() if isinstance(x, tf.Variable) else x
            if not x.shape.is_fully_defined():
                raise ValueError(f"tf.hessians: {x.name} has shape {x.shape}: rill needs a "
                                 "fully defined shape (TF's while_loop form is not supported)")
            n = x.shape.num_elements()
            if g is None:
                out.append(None)
                continue
            flat = tf.reshape(g, [-1])
            rows = []
            for j in range(n):
                d = tf.gradients(flat[j], x)[0]
                rows.append(tf.zeros_like(x) if d is None else d)
            h = tf.stack(rows)
            out.append(tf.reshape(h, x.shape.as_list() + x.shape.as_list()))
    return out


_builtin_tuple = __builtins__["tuple"] if isinstance(__builtins__, dict) else __builtins__.tuple


# --- misc ---

def get_logger():
    """tf.get_logger: the "tensorflow" logger."""
    from . import logging as tf_logging
    return tf_logging.get_logger()


def timestamp(name=None):
    """tf.timestamp: a float64 scalar, the seconds since the epoch when the op runs."""
    return _g()._make("Timestamp", name or "Timestamp").outputs[0]


def guarantee_const(input, name=None):
    """tf.guarantee_const: input, promised constant to the runtime (no gradient flows, as in
    TF)."""
    return _g()._make("GuaranteeConst", name or "GuaranteeConst", (_t(input),)).outputs[0]


def resource_variables_enabled():
    return False


def control_flow_v2_enabled():
    return False


def executing_eagerly_outside_functions():
    return False


def disable_resource_variables():
    """TF 1.x's default (ref variables), which is what rill has."""


def disable_tensor_equality():
    """TF 1.x's default (== is identity on tensors), which is what rill has."""


def disable_control_flow_v2():
    """TF 1.x's default, which is what rill has."""



# --- Python gradient functions: RegisterGradient, NotDifferentiable, gradient_override_map,
# custom_gradient. The C gradient builder asks the hook (rill._rill.set_gradient_hook) about
# every node it differentiates; an op type registered here (or mapped to a registered name by
# gradient_override_map when the op was made) gets its gradient from Python, or none. ---

_GRADIENTS = {}  # op type (or override name) -> fn(op, *grads), or None: not differentiable
_REGISTERED_AT = {}


def _register(fn, op_type):
    if not isinstance(op_type, str):
        raise TypeError("op_type must be a string")
    if op_type in _GRADIENTS:
        raise KeyError(f"Registering two gradient with name '{op_type}'! (Previous registration "
                       f"was in {_REGISTERED_AT[op_type]})")
    f = _sys._getframe(2)
    _REGISTERED_AT[op_type] = f"{f.f_code.co_name} {f.f_code.co_filename}:{f.f_lineno}"
    _GRADIENTS[op_type] = fn
    _install_hook()


class RegisterGradient:
    """tf.RegisterGradient: @tf.RegisterGradient("OpType") on fn(op, *grads) -> one gradient
    (or None) per input; tf.gradients (and the optimizers) use it for ops of that type, or of a
    type gradient_override_map maps to this name."""

    def __init__(self, op_type):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, f):
        _register(f, self._op_type)
        return f


def no_gradient(op_type):
    """tf.no_gradient / tf.NotDifferentiable: no gradient flows through ops of op_type."""
    _register(None, op_type)


NotDifferentiable = no_gradient
NoGradient = no_gradient


def _hook(rgraph, rop, dys):
    tf = _tf()
    g = tf.get_default_graph()
    if g._g is not rgraph:
        g = _GRAPHS.get(id(rgraph))
        if g is None or g._g is not rgraph:
            return None
    op = g._wrap(rop)
    key = getattr(op, "_gradient_op_type", None) or op.type
    if dys is None:  # the question: is op's gradient made here?
        return key in _GRADIENTS or key != op.type
    if key not in _GRADIENTS:
        if key != op.type:
            raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {key}). "
                              "In general every operation must have an associated "
                              "`@tf.RegisterGradient` for correct autodiff, which this op is "
                              "lacking.")
        return None
    fn = _GRADIENTS[key]
    if fn is None:
        return [None] * len(op.inputs)
    grads = [None if d is None else g._wrap(d[0]).outputs[d[1]] for d in dys]
    res = fn(op, *grads)
    if not isinstance(res, (list, _builtin_tuple)):
        res = [res]
    out = []
    for r, x in zip(res, op.inputs):
        if r is None:
            out.append(None)
        else:
            out.append(_t(r, dtype=x.dtype)._out)
    if len(res) != len(op.inputs):
        raise ValueError(f"Num gradients {len(res)} generated for op {op.name} do not match num "
                         f"inputs {len(op.inputs)}")
    return out


_GRAPHS = {}  # id(rill graph) -> the Graph, for gradients built outside its default context
_hook_installed = [False]


def _install_hook():
    if not _hook_installed[0]:
        from ... import _rill
        _rill.set_gradient_hook(_hook)
        _hook_installed[0] = True


def _install(Graph):
    """Graph.gradient_override_map, and ops made under it marked with their override."""
    make = Graph._make

    def _make(self, type, name, inputs=(), attrs=None, control_inputs=()):
        op = make(self, type, name, inputs, attrs, control_inputs)
        stack = getattr(self, "_gradient_override_stack", None)
        if stack:
            for m in reversed(stack):
                if type in m:
                    op._gradient_op_type = m[type]
                    break
        return op

    @_contextlib.contextmanager
    def gradient_override_map(self, op_type_map):
        """Graph.gradient_override_map: ops of a type in op_type_map made inside take their
        gradient from the function registered (RegisterGradient) under the mapped name."""
        if not isinstance(op_type_map, dict):
            raise TypeError("op_type_map must be a dictionary mapping strings to strings")
        for k, v in op_type_map.items():
            if not (isinstance(k, str) and isinstance(v, str)):
                raise TypeError("op_type_map must be a dictionary mapping strings to strings")
        _GRAPHS[id(self._g)] = self
        _install_hook()
        if not hasattr(self, "_gradient_override_stack"):
            self._gradient_override_stack = []
        self._gradient_override_stack.append(dict(op_type_map))
        try:
            yield
        finally:
            self._gradient_override_stack.pop()

    Graph._make = _make
    Graph.gradient_override_map = gradient_override_map


_custom_count = [0]


def custom_gradient(f=None):
    """tf.custom_gradient: @tf.custom_gradient on f(*xs) -> (y, grad_fn): y, whose gradient
    with respect to xs is grad_fn(*dys) (TF's graph-mode form: an IdentityN over ys and xs whose
    gradient is grad_fn). Variables f creates get theirs from grad_fn(*dys, variables=[...]),
    which then returns (input_grads, variable_grads)."""
    if f is None:
        return custom_gradient

    def decorated(*args, **kwargs):
        tf = _tf()
        if kwargs:
            raise ValueError("The custom_gradient decorator currently supports keywords "
                             "arguments only when eager execution is enabled.")
        _custom_count[0] += 1
        name = "CustomGradient-%d" % _custom_count[0]
        args = [_t(a) for a in args]
        before = set(id(v) for v in tf.trainable_variables())
        result, grad_fn = f(*args)
        variables = [v for v in tf.trainable_variables() if id(v) not in before]
        flat = list(result) if isinstance(result, (list, _builtin_tuple)) else [result]
        flat = [_t(r) for r in flat]
        nres = len(flat)

        def internal_grad_fn(unused_op, *result_grads):
            if variables:
                input_grads, var_grads = grad_fn(*result_grads[:nres], variables=variables)
                if len(var_grads) != len(variables):
                    raise ValueError("Must return gradient for each variable from "
                                     "@custom_gradient grad_fn.")
            else:
                input_grads = grad_fn(*result_grads[:nres])
                var_grads = []
            if not isinstance(input_grads, (list, _builtin_tuple)):
                input_grads = [input_grads]
            if len(input_grads) != len(args):
                raise ValueError(f"custom_gradient function expected to return {len(args)} "
                                 f"gradients but returned {len(input_grads)} instead.")
            return [None] * nres + list(input_grads) + list(var_grads)

        RegisterGradient(name)(internal_grad_fn)
        g = tf.get_default_graph()
        with g.gradient_override_map({"IdentityN": name}):
            outs = identity_n(flat + args + [v.value() for v in variables])
        outs = outs[:nres]
        if isinstance(result, (list, _builtin_tuple)):
            return type(result)(outs)
        return outs[0]
    decorated.__name__ = getattr(f, "__name__", "custom_gradient")
    decorated.__doc__ = getattr(f, "__doc__", None)
    return decorated


def grad_pass_through(f):
    """tf.grad_pass_through: f, whose gradient is the identity (each output's gradient goes to
    the input of the same position)."""
    @custom_gradient
    def _pass(*args):
        def grad(*dys, variables=None):
            if variables is not None:
                return list(dys), [None] * len(variables)
            return list(dys)
        return f(*args), grad
    return _pass
