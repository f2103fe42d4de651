"""tf.compat.v1's graph-mode API over rill's C library (``import rill.compat.v1 as tf``).

The graph lives in C (rill._rill.Graph): every op is made by type name with TF's attributes, so
shapes, names, devices and error texts are rill's, which are TensorFlow's. This module adds what
TF's Python adds: the default graph, name scopes, device and control-dependency contexts, Tensor
objects with operators, fetch and feed structures for Session.run, and the error classes.

This is the first part of issue 11: what the seed's device-placement and local-server programs
use. docs/PYTHON.md lists what exists."""
import builtins as _builtins
import contextlib as _contextlib
import threading as _threading

import numpy as _np

from ... import _rill
from . import errors  # noqa: F401  (tf.errors)
from .dtypes import (DType, as_dtype, bool, float16, float32, float64, half,  # noqa: F401
                     int32, int64, string)
from .dtypes import bfloat16, double, int8, int16, uint8, uint16  # noqa: F401,E402

__all__ = []


# --- graphs ---

class Graph:
    """A TF graph: a rill graph plus the Python-side contexts TF keeps per graph."""

    seed = None  # the graph-level random seed (tf.set_random_seed sets it), as TF's Graph.seed

    def __init__(self):
        self._g = _rill.Graph()
        self._device_stack = []
        self._control_stack = []
        self._ops = {}
        self._cf_ctx = None  # the cond branch or loop body being built (control_flow.py)

    # the rill op of each Operation, and back
    def _wrap(self, rop):
        op = self._ops.get(rop)
        if op is None:
            op = Operation(self, rop)
            self._ops[rop] = op
        return op

    def _device_for(self, type, name):
        """The device the device stack gives an op about to be made (innermost last: a string
        replaces, None clears, a function is asked)."""
        device = None
        for d in self._device_stack:
            if d is None:
                device = None
            elif callable(d):
                device = d(_PendingOp(type, name, device))
            else:
                device = d
        if isinstance(device, str) and "//" in device:
            # TF parses device strings by their non-empty "/" parts ("/" + "/cpu:0" is /cpu:0)
            device = "/" + "/".join(p for p in device.split("/") if p)
        return device or None

    def _make(self, type, name, inputs=(), attrs=None, control_inputs=()):
        ctx = self._cf_ctx
        if ctx is not None:
            # inside a cond branch or a loop body (control_flow.py): inputs from outside come
            # in through the context; an op with none from inside waits on its pivot
            inputs = ctx.op_inputs(type, inputs)
            if not any(ctx.holds(t) for t in inputs):
                control_inputs = tuple(control_inputs) + (ctx.pivot,)
        return self._make_raw(type, name, inputs, attrs, control_inputs, ctx)

    def _make_raw(self, type, name, inputs=(), attrs=None, control_inputs=(), ctx=None):
        """_make without the control-flow context's rewriting; the op belongs to ctx."""
        device = self._device_for(type, name)
        deps = [o._op for c in self._control_stack for o in c] + [c._op for c in control_inputs]
        rop = self._g.op(type, name, [t._out for t in inputs], attrs or {}, device, deps)
        op = self._wrap(rop)
        op._origin = _caller_location()
        op._cf_ctx = ctx
        op._cf_made = True
        return op

    def _explain(self, e):
        """e with the Operation it names (TF's [[{{node x}} = ...]]) as e.op, and the file and
        line of the Python code that created that op appended to its message."""
        import re
        m = re.search(r"\{\{node ([^}]+)\}\}", e.message or "")
        if not m:
            return e
        r = self._g.find(m.group(1))
        if r is None:
            return e
        op = self._wrap(r)
        e.op = op
        where = getattr(op, "_origin", None)
        if where and "created at" not in e.message:
            e.message = f"{e.message}\n\nThe op '{op.name}' was created at {where[0]}:{where[1]}"
            e.args = (e.message,)
        return e

    def as_default(self):
        return _default_graph_context(self)

    @_contextlib.contextmanager
    def name_scope(self, name):
        """TF's rules: None or "" is the root scope; a name ending in "/" re-enters that exact
        scope; any other name opens a new, uniquified scope under the current one. Yields the
        scope's full name ("a/b/"), which as an op's name= names the op after its scope."""
        root = name is None or name == ""
        self._g.push_name_scope("/" if root else name)
        try:
            yield "" if root else self._g.name_scope()
        finally:
            self._g.pop_name_scope()

    @_contextlib.contextmanager
    def device(self, spec):
        if isinstance(spec, DeviceSpec):
            spec = spec.to_string()
        self._device_stack.append(spec)
        try:
            yield
        finally:
            self._device_stack.pop()

    @_contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        if control_inputs is None:
            # TF: clears the control dependencies and the control-flow context
            saved, self._control_stack = self._control_stack, []
            saved_cf, self._cf_ctx = self._cf_ctx, None
            try:
                yield
            finally:
                self._control_stack = saved
                self._cf_ctx = saved_cf
            return
        ops = [x.op if isinstance(x, Tensor) else x for x in control_inputs]
        self._control_stack.append(ops)
        try:
            yield
        finally:
            self._control_stack.pop()

    def get_operations(self):
        return [self._wrap(r) for r in self._g.ops()]

    def get_operation_by_name(self, name):
        r = self._g.find(name)
        if r is None:
            raise KeyError(f"The name '{name}' refers to an Operation not in the graph.")
        return self._wrap(r)

    def get_tensor_by_name(self, name):
        opname, _, idx = name.rpartition(":")
        if not opname or not idx.isdigit():
            raise ValueError(f"The name '{name}' looks like an (invalid) Operation name, not a "
                             "Tensor. Tensor names must be of the form \"<op_name>:<output_index>\".")
        return self.get_operation_by_name(opname).outputs[int(idx)]


_PKG_DIR = __import__("os").path.dirname(__import__("os").path.dirname(
    __import__("os").path.dirname(__file__)))


def _caller_location():
    """(file, line) of the first frame outside the rill package: the user's code that made the
    op."""
    import sys
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
        f = f.f_back
    return (f.f_code.co_filename, f.f_lineno) if f is not None else None


class _PendingOp:
    """What a device function sees of an op about to be made: its type, name and the device the
    outer contexts gave it."""

    def __init__(self, type, name, device=None):
        self.type = type
        self.name = name
        self.device = device or ""

    @property
    def node_def(self):
        return NodeDef(name=self.name, op=self.type, device=self.device)


class DeviceSpec:
    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        self.job, self.replica, self.task = job, replica, task
        self.device_type, self.device_index = device_type, device_index

    def to_string(self):
        parts = []
        if self.job is not None:
            parts.append(f"/job:{self.job}")
        if self.replica is not None:
            parts.append(f"/replica:{self.replica}")
        if self.task is not None:
            parts.append(f"/task:{self.task}")
        if self.device_type is not None:
            parts.append(f"/device:{self.device_type}:"
                         f"{'*' if self.device_index is None else self.device_index}")
        return "".join(parts)


_local = _threading.local()
_global_default = [None]


def _graph_stack():
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def get_default_graph():
    st = _graph_stack()
    if st:
        return st[-1]
    if _global_default[0] is None:
        _global_default[0] = Graph()
    return _global_default[0]


def reset_default_graph():
    if _graph_stack():
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs.")
    _global_default[0] = Graph()


@_contextlib.contextmanager
def _default_graph_context(g):
    _graph_stack().append(g)
    try:
        yield g
    finally:
        _graph_stack().pop()


def device(spec):
    return get_default_graph().device(spec)


def set_random_seed(seed):
    """The default graph's seed: every random op without its own seed derives one from it, in
    creation order, as in TF (and as rill's C programs do with rill_graph_set_seed)."""
    g = get_default_graph()
    g._g.set_seed(int(seed))


def name_scope(name, default_name=None, values=None):
    return get_default_graph().name_scope(name if name is not None else default_name)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


# --- operations and tensors ---

class Operation:
    _cf_ctx = None  # the control-flow context the op was made in (control_flow.py)
    _cf_out = None  # {output index: context} where an output belongs to another one

    def __init__(self, graph, rop):
        self._graph = graph
        self._op = rop
        self._outputs = None

    @property
    def name(self):
        return self._op.name

    @property
    def type(self):
        return self._op.type

    @property
    def device(self):
        return self._op.device

    @property
    def graph(self):
        return self._graph

    @property
    def outputs(self):
        if self._outputs is None:
            self._outputs = [Tensor(self, i) for i in range(self._op.num_outputs)]
        return self._outputs

    @property
    def inputs(self):
        return [self._graph._wrap(op).outputs[i] for op, i in self._op.inputs]

    @property
    def control_inputs(self):
        return [self._graph._wrap(op) for op in self._op.control_inputs]

    def run(self, feed_dict=None, session=None):
        (session or get_default_session()).run(self, feed_dict)

    @property
    def node_def(self):
        """The op as a NodeDef (name, op, device, inputs), as device functions read it."""
        ins = [t.name if t.value_index else t.op.name for t in self.inputs]
        ins += ["^" + op.name for op in self.control_inputs]
        return NodeDef(name=self.name, op=self.type, device=self.device, input=ins)

    def __repr__(self):
        return f"<tf.Operation '{self.name}' type={self.type}>"


class NodeDef:
    """tf.NodeDef: the fields of a node that Python code reads (name, op, device, input)."""

    def __init__(self, name="", op="", device="", input=None):
        self.name, self.op, self.device = name, op, device
        self.input = list(input or [])

    def __repr__(self):
        return f"name: {self.name!r} op: {self.op!r}"


class Dimension:
    """tf.Dimension (TF 1.x): one dimension of a TensorShape, its size or None (unknown, "?").
    Compares equal to its int (and to None when unknown), and works as an int where one is
    needed (int(), indexing, range(), numpy shapes); arithmetic with an unknown one is unknown."""

    __slots__ = ("_value",)

    def __init__(self, value):
        if isinstance(value, Dimension):
            value = value._value
        if value is not None:
            v = int(value)
            if v != value:
                raise TypeError(f"Dimension value must be integer or None, got {value!r}")
            if v < 0:
                raise ValueError(f"Dimension {v} must be >= 0")
            value = v
        self._value = value

    @property
    def value(self):
        return self._value

    def __int__(self):
        if self._value is None:
            raise TypeError("int() argument must be a known Dimension, not '?'")
        return self._value

    __index__ = __int__

    def __eq__(self, other):
        o = other._value if isinstance(other, Dimension) else other
        if self._value is None or o is None:
            return None if (self._value is None) != (o is None) else True
        try:
            return self._value == int(o)
        except (TypeError, ValueError):
            return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is None or eq is NotImplemented else not eq

    def __hash__(self):
        return hash(self._value)

    def __bool__(self):
        return bool(self._value)

    def _arith(self, other, fn):
        o = other._value if isinstance(other, Dimension) else other
        if self._value is None or o is None:
            return Dimension(None)
        return Dimension(fn(self._value, int(o)))

    def __add__(self, o):
        return self._arith(o, lambda a, b: a + b)

    __radd__ = __add__

    def __sub__(self, o):
        return self._arith(o, lambda a, b: a - b)

    def __rsub__(self, o):
        return Dimension(o)._arith(self, lambda a, b: a - b)

    def __mul__(self, o):
        return self._arith(o, lambda a, b: a * b)

    __rmul__ = __mul__

    def __floordiv__(self, o):
        return self._arith(o, lambda a, b: a // b)

    def __truediv__(self, o):
        return self.__floordiv__(o)

    def __mod__(self, o):
        return self._arith(o, lambda a, b: a % b)

    def _cmp(self, o, fn):
        o = o._value if isinstance(o, Dimension) else o
        return None if self._value is None or o is None else fn(self._value, o)

    def __lt__(self, o):
        return self._cmp(o, lambda a, b: a < b)

    def __le__(self, o):
        return self._cmp(o, lambda a, b: a <= b)

    def __gt__(self, o):
        return self._cmp(o, lambda a, b: a > b)

    def __ge__(self, o):
        return self._cmp(o, lambda a, b: a >= b)

    def __str__(self):
        return "?" if self._value is None else str(self._value)

    def __repr__(self):
        return f"Dimension({self._value!r})"


class _KnownDimension(int):
    """A known dimension as TensorShape hands it out: an int (so arithmetic, comparisons, `is
    None` tests and numpy take it as one) with TF 1.x's Dimension.value. An unknown one is None."""

    __slots__ = ()

    @property
    def value(self):
        return int(self)

    def __repr__(self):
        return f"Dimension({int(self)})"


def _dim(d):
    return None if d is None else _KnownDimension(d)


def dimension_value(dimension):
    """tf.compat.dimension_value: the int (or None) of a Dimension or an int."""
    return dimension.value if isinstance(dimension, Dimension) else dimension


class TensorShape:
    """tf.TensorShape (TF 1.x): a rank and dimensions, any of them unknown. Indexing gives a
    known dimension as an int that also has TF's .value (shape[1].value), an unknown one as None
    (TF: a Dimension whose value is None); slicing gives a TensorShape, as_list() ints/None."""

    def __init__(self, dims):
        if isinstance(dims, TensorShape):
            dims = dims._dims
        elif dims is not None and not hasattr(dims, "__iter__"):
            dims = [dims]
        self._dims = None if dims is None else [dimension_value(d) if isinstance(d, Dimension)
                                                else None if d is None else int(d) for d in dims]

    @property
    def ndims(self):
        return None if self._dims is None else len(self._dims)

    rank = ndims

    @property
    def dims(self):
        return None if self._dims is None else [_dim(d) for d in self._dims]

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_fully_defined(self):
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_compatible_with(self, other):
        other = other if isinstance(other, TensorShape) else TensorShape(other)
        if self._dims is None or other._dims is None:
            return True
        return len(self._dims) == len(other._dims) and all(
            a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other):
        other = other if isinstance(other, TensorShape) else TensorShape(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        if self._dims is None:
            return TensorShape(other._dims)
        if other._dims is None:
            return TensorShape(self._dims)
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {TensorShape(other)} are incompatible")

    def assert_has_rank(self, rank):
        if self._dims is not None and len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")

    def with_rank(self, rank):
        self.assert_has_rank(rank)
        return self if self._dims is not None else TensorShape([None] * rank)

    def concatenate(self, other):
        other = other if isinstance(other, TensorShape) else TensorShape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter([_dim(d) for d in self._dims])

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __bool__(self):
        return self._dims is not None

    def __getitem__(self, i):
        if self._dims is None:
            return TensorShape(None) if isinstance(i, _builtins.slice) else None
        if isinstance(i, _builtins.slice):
            return TensorShape(self._dims[i])
        return _dim(self._dims[i])

    def __eq__(self, other):
        try:
            other = other if isinstance(other, TensorShape) else TensorShape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(None if self._dims is None else tuple(self._dims))

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return f"({'?' if self._dims[0] is None else self._dims[0]},)"
        return "(" + ", ".join("?" if d is None else str(d) for d in self._dims) + ")"

    def __repr__(self):
        if self._dims is None:
            return "TensorShape(None)"
        return "TensorShape([" + ", ".join(f"Dimension({d})" for d in self._dims) + "])"


class Tensor:
    def __init__(self, op, index):
        self._op_obj = op
        self._index = index
        self._out = (op._op, index)

    @property
    def op(self):
        return self._op_obj

    @property
    def graph(self):
        return self._op_obj.graph

    @property
    def name(self):
        return f"{self._op_obj.name}:{self._index}"

    @property
    def value_index(self):
        return self._index

    @property
    def device(self):
        return self._op_obj.device

    @property
    def dtype(self):
        return as_dtype(self._op_obj._op.output_dtype(self._index))

    @property
    def shape(self):
        return TensorShape(self._op_obj._op.output_shape(self._index))

    def get_shape(self):
        return self.shape

    def eval(self, feed_dict=None, session=None):
        return (session or get_default_session()).run(self, feed_dict)

    def __repr__(self):
        return f"<tf.Tensor '{self.name}' shape={self.shape} dtype={self.dtype.name}>"

    def __hash__(self):
        return hash(self._out)

    def __eq__(self, other):  # TF 1.x: identity
        return self is other

    # operators
    def __add__(self, o):
        return add(self, o)

    def __radd__(self, o):
        return add(o, self)

    def __sub__(self, o):
        return subtract(self, o)

    def __rsub__(self, o):
        return subtract(o, self)

    def __mul__(self, o):
        return multiply(self, o)

    def __rmul__(self, o):
        return multiply(o, self)

    def __truediv__(self, o):
        return truediv(self, o)

    def __rtruediv__(self, o):
        return truediv(o, self)

    def __neg__(self):
        return negative(self)

    def __matmul__(self, o):
        return matmul(self, o)

    # python/rill/compat/v1/_math_ops.py: TF's operators (== and != stay identity in TF 1.x)
    def __pow__(self, o):
        return _math_ops._op_pow(self, o)

    def __rpow__(self, o):
        return _math_ops._op_rpow(self, o)

    def __mod__(self, o):
        return _math_ops._op_mod(self, o)

    def __rmod__(self, o):
        return _math_ops._op_rmod(self, o)

    def __floordiv__(self, o):
        return _math_ops._op_floordiv(self, o)

    def __rfloordiv__(self, o):
        return _math_ops._op_rfloordiv(self, o)

    def __abs__(self):
        return _math_ops.abs(self)

    def __lt__(self, o):
        return _math_ops.less(self, o)

    def __le__(self, o):
        return _math_ops.less_equal(self, o)

    def __gt__(self, o):
        return _math_ops.greater(self, o)

    def __ge__(self, o):
        return _math_ops.greater_equal(self, o)

    def __and__(self, o):
        return _math_ops._op_and(self, o)

    def __rand__(self, o):
        return _math_ops._op_and(o, self)

    def __or__(self, o):
        return _math_ops._op_or(self, o)

    def __ror__(self, o):
        return _math_ops._op_or(o, self)

    def __xor__(self, o):
        return _math_ops._op_xor(self, o)

    def __rxor__(self, o):
        return _math_ops._op_xor(o, self)

    def __invert__(self):
        return _math_ops.logical_not(self, name="LogicalNot")

    def __getitem__(self, key):
        return _ops._getitem(self, key)


def _attr_type(dt):
    return ("type", as_dtype(dt).enum)


def convert_to_tensor(value, dtype=None, name=None):
    if isinstance(value, Variable):
        value = value.value()
    if isinstance(value, Tensor):
        if dtype is not None and as_dtype(dtype) != value.dtype:
            raise ValueError(f"Tensor conversion requested dtype {as_dtype(dtype).name} for "
                             f"Tensor with dtype {value.dtype.name}: {value!r}")
        return value
    return constant(value, dtype=dtype, name=name or "Const")


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    dt = as_dtype(dtype) if dtype is not None else None
    if dt is None:
        arr = _np.asarray(value)
        if arr.dtype.kind in "US" or arr.dtype == object:
            dt = string
        elif arr.dtype == _np.float64 and not isinstance(value, _np.ndarray):
            dt = float32  # TF: Python floats become float32
        elif arr.dtype == _np.int64 and not isinstance(value, _np.ndarray):
            dt = int32  # and Python ints int32
        else:
            dt = as_dtype(arr.dtype)
    if dt == string:
        arr = _np.asarray(value, dtype=object)
    else:
        arr = _np.asarray(value, dtype=dt.as_numpy_dtype)
    if shape is not None:
        shape = [int(d) for d in shape]
        n = int(_np.prod(shape)) if shape else 1
        if verify_shape and list(arr.shape) != shape:
            raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, but got {arr.shape}.")
        if arr.size > n:
            raise ValueError(f"Too many elements provided. Takes at most {n}, but got "
                             f"{arr.size}.")
        if arr.size == n:
            arr = arr.reshape(shape)
        elif arr.size == 1:
            arr = _np.full(shape, arr.reshape(()), dtype=arr.dtype)
        else:  # fewer: TF 1.x repeats the last one
            flat = _np.concatenate([arr.reshape(-1), _np.repeat(arr.reshape(-1)[-1:], n - arr.size)])
            arr = flat.reshape(shape)
    g = get_default_graph()
    op = g._make("Const", name, (), {"value": ("tensor", (arr, dt.enum)), "dtype": _attr_type(dt)})
    return op.outputs[0]


def placeholder(dtype, shape=None, name=None):
    dt = as_dtype(dtype)
    attrs = {"dtype": _attr_type(dt)}
    attrs["shape"] = ("shape", None if shape is None else
                      [None if d is None else int(d) for d in (shape._dims if isinstance(shape, TensorShape) else shape)])
    return get_default_graph()._make("Placeholder", name or "Placeholder", (), attrs).outputs[0]


def placeholder_with_default(input, shape, name=None):
    """The default value, unless a value is fed; shape may be less specific than the default's."""
    x = convert_to_tensor(input)
    attrs = {"shape": ("shape", None if shape is None else [
        None if d is None else int(d)
        for d in (shape._dims if isinstance(shape, TensorShape) else shape)])}
    return get_default_graph()._make("PlaceholderWithDefault", name or "PlaceholderWithDefault",
                                     (x,), attrs).outputs[0]


def _binary(type, default, x, y, name):
    g = get_default_graph()
    x = x.value() if isinstance(x, Variable) else x
    y = y.value() if isinstance(y, Variable) else y
    if isinstance(x, Tensor) and not isinstance(y, Tensor):
        y = convert_to_tensor(y, dtype=x.dtype)
    elif isinstance(y, Tensor) and not isinstance(x, Tensor):
        x = convert_to_tensor(x, dtype=y.dtype)
    else:
        x, y = convert_to_tensor(x), convert_to_tensor(y)
    return g._make(type, name or default, (x, y), {"T": _attr_type(x.dtype)}).outputs[0]


def add(x, y, name=None):
    return _binary("Add", "add", x, y, name)


def subtract(x, y, name=None):
    return _binary("Sub", "sub", x, y, name)


def multiply(x, y, name=None):
    return _binary("Mul", "mul", x, y, name)


def truediv(x, y, name=None):
    # rill's Div is TF's RealDiv on floats (the op TF's `/` makes)
    return _binary("Div", "truediv", x, y, name)


divide = truediv
sub = subtract
mul = multiply


def negative(x, name=None):
    x = convert_to_tensor(x)
    return get_default_graph()._make("Neg", name or "Neg", (x,), {"T": _attr_type(x.dtype)}).outputs[0]


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    a, b = convert_to_tensor(a), convert_to_tensor(b)
    return get_default_graph()._make("MatMul", name or "MatMul", (a, b), {
        "T": _attr_type(a.dtype), "transpose_a": ("bool", transpose_a),
        "transpose_b": ("bool", transpose_b)}).outputs[0]


def no_op(name=None):
    return get_default_graph()._make("NoOp", name or "NoOp")


def group(*inputs, name=None):
    g = get_default_graph()
    ops = [x.op if isinstance(x, Tensor) else x for x in inputs]
    with g.control_dependencies(ops):
        return g._make("NoOp", name or "group_deps")



def square(x, name=None):
    x = convert_to_tensor(x)
    return get_default_graph()._make("Square", name or "Square", (x,),
                                     {"T": _attr_type(x.dtype)}).outputs[0]


# --- variables ---

class _Initializer:
    """An initializer rill's C library knows: (kind, a, b, seed)."""

    def __init__(self, kind, a=0.0, b=0.0, seed=None, dtype=None):
        self.spec = (kind, float(a), float(b), int(seed or 0))
        self.dtype = dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        from .initializers import tensor_from_spec
        return tensor_from_spec(self.spec, shape, dtype or self.dtype or float32)


def zeros_initializer(dtype=None):
    return _Initializer("zeros", dtype=dtype)


def ones_initializer(dtype=None):
    return _Initializer("ones", dtype=dtype)


class _ConstantInitializer:
    """tf.constant_initializer of a list or array: tf.constant(value, dtype, shape) of the
    variable's shape (fewer values repeat the last one, as TF 1.x's constant does)."""

    def __init__(self, value, dtype=None, verify_shape=False):
        self.value, self.dtype, self.verify_shape = _np.asarray(value), dtype, verify_shape

    def __call__(self, shape, dtype=None, partition_info=None, verify_shape=None):
        v = self.verify_shape if verify_shape is None else verify_shape
        return constant(self.value, dtype=dtype or self.dtype or float32, shape=shape,
                        verify_shape=v)


def constant_initializer(value=0, dtype=None, verify_shape=False):
    if _np.ndim(value) == 0 and not isinstance(value, (list, tuple)):
        return _Initializer("constant", value, dtype=dtype)
    return _ConstantInitializer(value, dtype, verify_shape)


def random_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=None):
    return _Initializer("normal", mean, stddev, seed, dtype)


def truncated_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=None):
    return _Initializer("truncated_normal", mean, stddev, seed, dtype)


def random_uniform_initializer(minval=0.0, maxval=None, seed=None, dtype=None):
    return _Initializer("uniform", minval, 1.0 if maxval is None else maxval, seed, dtype)



class Variable:
    """tf.Variable (a ref variable, TF 1.x's): an op, its value tensor and its initializer."""

    def __init__(self, initial_value=None, trainable=True, collections=None,
                 validate_shape=True, caching_device=None, name=None, variable_def=None,
                 dtype=None, expected_shape=None, import_scope=None, constraint=None,
                 use_resource=None, synchronization=None, aggregation=None, shape=None,
                 _rop=None, _graph=None):
        if _rop is not None:
            self._graph = _graph
            self._op = _graph._wrap(_rop)
        else:
            g = get_default_graph()
            if callable(initial_value):
                initial_value = initial_value()
            device = g._device_for("VariableV2", name or "Variable")
            with g.device(device) if device else _contextlib.nullcontext():
                init = convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
            rop = g._g.variable_from(init._out, _builtins.bool(trainable), name or "Variable",
                                     device)
            self._graph = g
            self._op = g._wrap(rop)
        self._value = self._op.outputs[0]
        _VARIABLES[self._op._op] = self
        if _rop is None and collections is not None:
            from .graph_collections import _place_variable
            _place_variable(self, collections, trainable)

    @property
    def op(self):
        return self._op

    @property
    def name(self):
        return self._value.name

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def shape(self):
        return self._value.shape

    def get_shape(self):
        return self.shape

    @property
    def graph(self):
        return self._graph

    @property
    def device(self):
        return self._op.device

    @property
    def initializer(self):
        r = self._graph._g.variable_initializer(self._value._out)
        return None if r is None else self._graph._wrap(r)

    def value(self):
        return self._value

    def read_value(self):
        return self._value

    def eval(self, session=None):
        return self._value.eval(session=session)

    def assign(self, value, use_locking=None, name=None, read_value=True):
        from ._graph_utils import assign
        return assign(self, value, use_locking=use_locking, name=name)

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        from ._graph_utils import assign_add
        return assign_add(self, delta, use_locking=use_locking, name=name)

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        from ._graph_utils import assign_sub
        return assign_sub(self, delta, use_locking=use_locking, name=name)

    def load(self, value, session=None):
        """Writes value into the variable (TF's Variable.load: through the initializer's
        feed, no new op per call)."""
        sess = session or get_default_session()
        if sess is None:
            raise ValueError("Either session argument should be provided or default session "
                             "should be established")
        sess.run(self.initializer, {self.initializer.inputs[1]: value})

    def __repr__(self):
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}_ref>"

    # a Variable stands for its value in ops
    _out = property(lambda self: self._value._out)

    def __getattr__(self, item):
        if item.startswith("__"):
            raise AttributeError(item)
        return getattr(self._value, item)

    def __add__(self, o):
        return add(self._value, o)

    def __radd__(self, o):
        return add(o, self._value)

    def __sub__(self, o):
        return subtract(self._value, o)

    def __rsub__(self, o):
        return subtract(o, self._value)

    def __mul__(self, o):
        return multiply(self._value, o)

    def __rmul__(self, o):
        return multiply(o, self._value)

    def __truediv__(self, o):
        return truediv(self._value, o)

    def __rtruediv__(self, o):
        return truediv(o, self._value)

    def __neg__(self):
        return negative(self._value)

    def __getitem__(self, key):
        return _ops._getitem(self._value, key)

    def __matmul__(self, o):
        return matmul(self._value, o)


_VARIABLES = {}


def _as_variable(graph, rop):
    v = _VARIABLES.get(rop)
    return v if v is not None else Variable(_rop=rop, _graph=graph)


from .variables import (AUTO_REUSE, VariableScope, get_local_variable,  # noqa: E402,F401
                        get_variable, get_variable_scope, no_regularizer, variable_scope)


def global_variables():
    g = get_default_graph()
    return [_as_variable(g, r) for r in g._g.collection("variables")]


all_variables = global_variables


def trainable_variables():
    g = get_default_graph()
    return [_as_variable(g, r) for r in g._g.collection("trainable_variables")]


def global_variables_initializer():
    g = get_default_graph()
    return g._wrap(g._g.global_variables_initializer("init"))


def initialize_all_variables():
    import warnings
    warnings.warn("initialize_all_variables (from tensorflow.python.ops.variables) is "
                  "deprecated: use tf.global_variables_initializer instead.",
                  DeprecationWarning, stacklevel=2)
    return global_variables_initializer()


def variables_initializer(var_list, name="init"):
    return group(*[v.initializer for v in var_list], name=name)

# --- sessions ---

class GPUOptions:
    def __init__(self, allow_growth=False, per_process_gpu_memory_fraction=0.0,
                 visible_device_list=""):
        self.allow_growth = allow_growth
        self.per_process_gpu_memory_fraction = per_process_gpu_memory_fraction
        self.visible_device_list = visible_device_list


class ConfigProto:
    def __init__(self, log_device_placement=False, allow_soft_placement=False, gpu_options=None,
                 intra_op_parallelism_threads=0, inter_op_parallelism_threads=0,
                 operation_timeout_in_ms=0, device_count=None, device_filters=None):
        self.log_device_placement = log_device_placement
        # a session on a cluster sees only the devices these match, and its own task's
        self.device_filters = list(device_filters or [])
        self.allow_soft_placement = allow_soft_placement
        self.gpu_options = gpu_options or GPUOptions()
        self.intra_op_parallelism_threads = intra_op_parallelism_threads
        self.inter_op_parallelism_threads = inter_op_parallelism_threads
        self.operation_timeout_in_ms = operation_timeout_in_ms
        self.device_count = device_count or {}


class RunOptions:
    def __init__(self, timeout_in_ms=0, trace_level=0):
        self.timeout_in_ms = timeout_in_ms
        self.trace_level = trace_level


_session_local = _threading.local()


def get_default_session():
    st = getattr(_session_local, "stack", None)
    return st[-1] if st else None


class _FetchMapper:
    """TF's fetch structures: a tensor, an op (-> None), a tensor name, lists, tuples, dicts and
    namedtuples, nested. flat() lists the unique tensors and ops to run; build(values) puts the
    fetched arrays back into the structure."""

    def __init__(self, graph, fetches):
        self.tensors, self.ops = [], []
        self._tindex, self._oindex = {}, {}
        self.structure = self._map(graph, fetches)

    def _map(self, graph, f):
        if isinstance(f, (list, tuple)):
            items = [self._map(graph, x) for x in f]
            if hasattr(f, "_fields"):
                return ("namedtuple", type(f), items)
            return ("list" if isinstance(f, list) else "tuple", items)
        if isinstance(f, dict):
            return ("dict", type(f), [(k, self._map(graph, v)) for k, v in f.items()])
        if isinstance(f, str):
            f = graph.get_tensor_by_name(f) if ":" in f else graph.get_operation_by_name(f)
        if isinstance(f, _sparse_ops.SparseTensor):  # fetched as a SparseTensorValue
            return ("sparse", [self._map(graph, x) for x in (f.indices, f.values, f.dense_shape)])
        if isinstance(f, Variable):
            f = f.value()
        if isinstance(f, Tensor):
            if f.graph is not graph:
                raise ValueError(f"Fetch argument {f!r} cannot be interpreted as a Tensor. "
                                 f"(Tensor {f!r} is not an element of this graph.)")
            key = f._out
            if key not in self._tindex:
                self._tindex[key] = len(self.tensors)
                self.tensors.append(f)
            return ("tensor", self._tindex[key])
        if isinstance(f, Operation):
            if f._op not in self._oindex:
                self._oindex[f._op] = len(self.ops)
                self.ops.append(f)
            return ("op",)
        if f is None:
            raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
        raise TypeError(f"Fetch argument {f!r} has invalid type {type(f)}, must be a string or "
                        "Tensor. (Can not convert a {type(f).__name__} into a Tensor or "
                        "Operation.)")

    def build(self, values, s=None):
        s = self.structure if s is None else s
        kind = s[0]
        if kind == "tensor":
            v = values[s[1]]
            return v[()] if isinstance(v, _np.ndarray) and v.ndim == 0 else v
        if kind == "op":
            return None
        if kind == "list":
            return [self.build(values, x) for x in s[1]]
        if kind == "tuple":
            return tuple(self.build(values, x) for x in s[1])
        if kind == "namedtuple":
            return s[1](*[self.build(values, x) for x in s[2]])
        if kind == "sparse":
            return _sparse_ops.SparseTensorValue(*[self.build(values, x) for x in s[1]])
        return s[1]((k, self.build(values, v)) for k, v in s[2])


class _StepLimitReached(errors.OutOfRangeError):
    """The OutOfRangeError a Supervisor's session raises at RILL_TRAIN_STEPS."""


def _flat_layout(mapper):
    """(kind, [fetch index or -1 per element]) when the fetches are one tensor or op, or a flat
    list or tuple of them (what C builds: kind 0 list, 1 tuple, 2 one value); else None."""
    st = mapper.structure

    def elem(e):
        return e[1] if e[0] == "tensor" else -1 if e[0] == "op" else None

    if st[0] in ("tensor", "op"):
        return 2, [elem(st)]
    if st[0] in ("list", "tuple"):
        idx = [elem(e) for e in st[1]]
        if all(i is not None for i in idx):
            return (0 if st[0] == "list" else 1), idx
    return None


def _sparse_feeds(feed_dict):
    """feed_dict with each SparseTensor key replaced by its indices, values and dense_shape, fed
    from a SparseTensorValue or an (indices, values, dense_shape) tuple."""
    out = {}
    for k, v in feed_dict.items():
        if not isinstance(k, _sparse_ops.SparseTensor):
            out[k] = v
            continue
        if not (isinstance(v, tuple) and len(v) == 3):
            raise TypeError(f"The value of a SparseTensor feed must be a SparseTensorValue or a "
                            f"tuple (indices, values, dense_shape), got {v!r}")
        ix, vals, shp = v
        ix = _np.asarray(ix, _np.int64)
        if ix.size == 0:  # no entries: [0, rank]
            ix = ix.reshape(0, _np.asarray(shp).size)
        out[k.indices] = ix
        out[k.values] = vals
        out[k.dense_shape] = _np.asarray(shp, _np.int64)
    return out


def _session_options(config, target=""):
    """The C session's options from a ConfigProto and a target."""
    gpu = config.gpu_options
    opts = {"log_device_placement": int(_builtins.bool(config.log_device_placement)),
            "allow_soft_placement": int(_builtins.bool(config.allow_soft_placement)),
            "intra_op_threads": int(config.intra_op_parallelism_threads),
            "inter_op_threads": int(config.inter_op_parallelism_threads),
            "operation_timeout_ms": int(config.operation_timeout_in_ms or 0),
            "gpu_allow_growth": int(_builtins.bool(gpu.allow_growth)),
            "gpu_memory_fraction": float(gpu.per_process_gpu_memory_fraction or 0),
            "gpu_visible_device_list": gpu.visible_device_list or None,
            "device_filters": [str(f) for f in getattr(config, "device_filters", None) or []]}
    if target:
        opts["target"] = target if isinstance(target, str) else target.decode()
        # The session (and a Supervisor's) keeps this process's server of that target alive
        # until it is freed: a program that drops its Server first (main's locals go in the
        # order they were made) still saves its last checkpoint on a live server.
        srv = train._SERVERS.get(opts["target"])
        if srv is not None:
            opts["server"] = srv._srv
    return opts


class Session:
    def __init__(self, target="", graph=None, config=None):
        self._graph = graph or get_default_graph()
        self._config = config or ConfigProto()
        c = self._config
        opts = _session_options(c, target)
        self._sess = _rill.Session(self._graph._g, opts)
        self._closed = False

    @classmethod
    def _adopt(cls, graph, rsess, config, supervisor):
        """A Session over a _rill.Session that a Supervisor prepared."""
        self = cls.__new__(cls)
        self._graph, self._config, self._sess, self._closed = graph, config, rsess, False
        self._supervisor = supervisor
        import os
        limit = os.environ.get("RILL_TRAIN_STEPS") if supervisor is not None else None
        self._step_limit = int(limit) if limit else None
        return self

    @property
    def graph(self):
        return self._graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if getattr(self, "_step_limit", None) is not None:
            self._check_step_limit()
        # The per-step path, in C: a signature (the fetch elements and the feed keys, by
        # identity) seen before runs without any Python frame.
        timeout = int(options.timeout_in_ms or 0) if options is not None else 0
        try:
            r = self._sess.run_fast(fetches, feed_dict, timeout)
            if r is not NotImplemented:
                return r
            return self._run_slow(fetches, feed_dict if feed_dict is not None else {}, timeout)
        except errors.OpError as e:
            raise self._graph._explain(e) from None

    def _run_slow(self, fetches, feed_dict, timeout_ms=0):
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        mapper = _FetchMapper(self._graph, fetches)
        if not mapper.tensors and not mapper.ops:  # an empty structure: TF returns it, empty
            return mapper.build([])
        if any(isinstance(k, _sparse_ops.SparseTensor) for k in feed_dict):
            feed_dict = _sparse_feeds(feed_dict)  # its three tensors, fed apart
            sparse_feed = True
        else:
            sparse_feed = False
        feed_keys, feed_tensors = [], []
        for k in feed_dict:
            t = self._graph.get_tensor_by_name(k) if isinstance(k, str) else k
            if isinstance(t, Variable):
                t = t.value()
            if not isinstance(t, Tensor):
                raise TypeError(f"Cannot interpret feed_dict key as Tensor: {k!r}")
            if t.graph is not self._graph:
                raise ValueError(f"Cannot interpret feed_dict key as Tensor: Tensor {t!r} is "
                                 "not an element of this graph.")
            v = feed_dict[k]
            if isinstance(v, (Tensor, Variable)):
                raise TypeError("The value of a feed cannot be a tf.Tensor object. Acceptable "
                                "feed values include Python scalars, strings, lists, numpy "
                                "ndarrays, or TensorHandles.")
            feed_keys.append(k)
            feed_tensors.append(t)
        layout = None if sparse_feed else _flat_layout(mapper)
        if layout is None:  # nested or dict fetches (or sparse feeds): built here
            call = self._sess.make_callable([t._out for t in mapper.tensors],
                                            [t._out for t in feed_tensors],
                                            [o._op for o in mapper.ops])
            return mapper.build(call(*[feed_dict[k] for k in feed_keys], timeout_ms=timeout_ms))
        kind, idx = layout
        call = self._sess.make_callable([t._out for t in mapper.tensors],
                                        [t._out for t in feed_tensors],
                                        [o._op for o in mapper.ops], tuple(feed_keys),
                                        tuple(idx), kind)
        # the session keeps the fetches and keys alive, so their identities stay theirs
        self._sess.cache_put(fetches, tuple(feed_keys), call)
        return call.run_dict(feed_dict, timeout_ms)

    def _check_step_limit(self):
        step = self._supervisor.global_step
        if step is None:
            return
        value = self._sess.run_fast(step, None)
        if value is NotImplemented:
            value = self._run_slow(step, {})
        if int(value) >= self._step_limit:
            raise _StepLimitReached(
                f"RILL_TRAIN_STEPS={self._step_limit}: the global step reached the limit")

    def close(self):
        if not self._closed:
            self._closed = True
            self._sess.close()

    def as_default(self):
        return _session_context(self)

    def __enter__(self):
        self._ctx = _session_context(self)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)
        self.close()
        # RILL_TRAIN_STEPS's stop is a request to stop, as managed_session takes one; any other
        # error goes on, as from TF's session
        return isinstance(exc[1], _StepLimitReached)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class InteractiveSession(Session):
    """TF's InteractiveSession: a Session that makes itself the default session when made (so
    that Tensor.eval() and Operation.run() need no `with`), until close()."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        self._default = _session_context(self)
        self._default.__enter__()

    def close(self):
        d, self._default = getattr(self, "_default", None), None
        if d is not None:
            d.__exit__(None, None, None)
        super().close()


@_contextlib.contextmanager
def _session_context(sess):
    st = getattr(_session_local, "stack", None)
    if st is None:
        st = _session_local.stack = []
    st.append(sess)
    try:
        yield sess
    finally:
        st.pop()


# --- v2 behaviour switches that TF 1.x programs call: accepted, rill is graph mode only ---

def disable_v2_behavior():
    pass


def disable_eager_execution():
    pass


def executing_eagerly():
    return False


from . import train  # noqa: E402,F401  (tf.train)
from . import app, flags, gfile  # noqa: E402,F401  (tf.app, tf.app.flags = tf.flags, tf.gfile)
from ._ops import *  # noqa: E402,F401,F403  (math, array, reductions, tf.gradients)
from ._array_ops import *  # noqa: E402,F401,F403  (reductions, shape ops: tf.concat, tf.stack, ...)


def __getattr__(name):  # tf.range without shadowing the builtin range in this module
    from . import _array_ops
    if name in _array_ops.RANGE_NAMES:
        return getattr(_array_ops, _array_ops.RANGE_NAMES[name])
    _gu = __import__("sys").modules.get(__name__ + "._graph_utils")
    if _gu is not None and name in _gu.BUILTIN_NAMES:  # tf.print, tf.tuple
        return _gu.BUILTIN_NAMES[name]()
    if name in ("enable_v2_behavior", "enable_eager_execution"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}: rill runs TF 1.x's "
                             "graph mode only (there is no eager execution to enable)")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


from . import _math_ops  # noqa: E402
from ._math_ops import *  # noqa: E402,F401,F403  (element-wise math, tf.where, tf.math)
from . import nn  # noqa: E402,F401  (tf.nn)
from ._embedding_ops import *  # noqa: E402,F401,F403  (tf.gather, tf.unique, tf.scatter_add, ...)
from . import summary  # noqa: E402,F401  (tf.summary)
from .summary import SessionLog, Summary  # noqa: E402,F401  (tf.Summary, tf.SessionLog)
from ._random_ops import *  # noqa: E402,F401,F403  (tf.random_normal, ..., tf.random, set_random_seed)
import types as _types  # noqa: E402

io = _types.SimpleNamespace(gfile=gfile.io_gfile)
from .graph_collections import *  # noqa: E402,F401,F403  (tf.get_collection, tf.GraphKeys, ...)
from .initializers import *  # noqa: E402,F401,F403  (glorot, variance scaling, ...)
from . import layers, losses, contrib, logging  # noqa: E402,F401  (tf.layers, ...)
from . import learning_rate_decay as _lrd  # noqa: E402
_lrd._install(train)  # tf.train.exponential_decay, ...
graph_collections._install(Graph)
initializers = initializers._namespace()  # noqa: F811  (tf.initializers)
from . import data  # noqa: E402,F401  (tf.data)
from . import _embedding_ops as _emb  # noqa: E402
_emb._install(__import__("sys").modules[__name__])  # tf.random.*_candidate_sampler, tf.math.top_k, ...
from . import metrics  # noqa: E402,F401  (tf.metrics)
from . import estimator  # noqa: E402,F401  (tf.estimator)
from ._queues import FIFOQueue, RandomShuffleQueue, QueueBase  # noqa: E402,F401  (tf.FIFOQueue)
from .train import start_queue_runners, add_queue_runner  # noqa: E402,F401  (tf.start_queue_runners)
from . import image  # noqa: E402,F401  (tf.image)
from .image import read_file, write_file  # noqa: E402,F401  (tf.read_file, tf.write_file)
io.read_file, io.write_file = read_file, write_file  # tf.io.read_file, tf.io.write_file
for _n in ("decode_jpeg", "encode_jpeg", "decode_png", "encode_png", "decode_image"):
    setattr(io, _n, getattr(image, _n))  # tf.io.decode_jpeg, ...
from . import _nn_breadth as _nnb  # noqa: E402
_nnb._install(__import__("sys").modules[__name__])  # tf.conv2d_backprop_filter_v2, ..._input_v2
from ._index_ops import *  # noqa: E402,F401,F403  (tf.segment_max, tf.tensor_scatter_nd_add, tf.sort, ...)
from . import _index_ops as _idxops  # noqa: E402
_idxops._install(__import__("sys").modules[__name__])  # tf.math.segment_max, ...
from ._shape_ops import *  # noqa: E402,F401,F403  (clip_by_norm, boolean_mask, einsum, roll, tf.linalg, ...)
from . import _shape_ops as _shp  # noqa: E402
_shp._install(__import__("sys").modules[__name__])  # tf.math.divide_no_nan, tf.linalg.norm
from . import _sparse_ops  # noqa: E402  (tf.SparseTensor, tf.sparse_to_dense, tf.sparse.*, ...)
from ._sparse_ops import *  # noqa: E402,F401,F403
from .control_flow import (cond, case, while_loop, TensorArray, map_fn, scan,  # noqa: E402,F401
                           foldl, foldr)  # (tf.cond, tf.while_loop, tf.TensorArray, tf.map_fn, ...)
_sparse_ops._install(__import__("sys").modules[__name__])  # tf.sparse, tf.nn.*_sparse, ctc_*
from ._string_ops import *  # noqa: E402,F401,F403  (tf.as_string, tf.string_join, tf.strings, ...)
from . import _string_ops as _strops  # noqa: E402
_strops._install(__import__("sys").modules[__name__])
from ._check_ops import *  # noqa: E402,F401,F403  (tf.Assert, tf.print, tf.assert_equal, ...)
math.is_non_decreasing, math.is_strictly_increasing = is_non_decreasing, is_strictly_increasing  # noqa: F405,E501
from ._graph_utils import *  # noqa: E402,F401,F403  (tf.get_static_value, tf.assign, ...)
_graph_utils._install(Graph)  # Graph.gradient_override_map  # noqa: F821
