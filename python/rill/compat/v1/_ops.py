"""TF 1.x's math and array functions (tf.reduce_sum, tf.cast, tf.gradients, ...) over the ops
rill's C library has.

Each function makes the C op by type name with the inputs, in order, and the attrs that the C
typed builder (src/graph/ops_array.c, ops_math.c) passes, so shapes, dtypes and error texts are
the C library's. Default op names are TF's Python ones. Ops the C library lacks (Abs, Max, Min,
Transpose, ConcatV2, StopGradient, ...) have no function here."""
import builtins as _builtins
import sys as _sys

import numpy as _np

__all__ = ["minimum", "clip_by_value", "reduce_sum", "reduce_mean", "argmax", "arg_max", "equal", "cast", "to_float",
           "to_double", "to_int32", "to_int64", "reshape", "expand_dims", "identity",
           "zeros_like", "ones_like", "fill", "zeros", "ones", "shape", "exp", "log", "sqrt",
           "sigmoid", "tanh", "maximum", "div", "add_n", "gradients", "strided_slice", "slice",
           "newaxis"]


def _tf():
    # the package (rill.compat.v1), looked up at call time: this module is imported from its
    # __init__, so the names it uses are defined by then whatever the import order
    return _sys.modules[__package__]


def _g():
    return _tf().get_default_graph()


def _t(x, dtype=None):
    return _tf().convert_to_tensor(x, dtype=dtype)


def _out(op):
    return op.outputs[0]


def _unary(type, x, name):
    x = _t(x)
    return _out(_g()._make(type, name or type, (x,)))


def _binary(type, default, x, y, name):
    tf = _tf()
    if isinstance(x, tf.Variable):
        x = x.value()
    if isinstance(y, tf.Variable):
        y = y.value()
    if isinstance(x, tf.Tensor) and not isinstance(y, tf.Tensor):
        y = _t(y, x.dtype)
    elif isinstance(y, tf.Tensor) and not isinstance(x, tf.Tensor):
        x = _t(x, y.dtype)
    else:
        x, y = _t(x), _t(y)
    return _out(_g()._make(type, name or default, (x, y)))


def _pick(name, a, b):
    if a is not None and b is not None:
        raise ValueError(f"Cannot specify both '{name}' and its deprecated alias.")
    return a if a is not None else b


# --- reductions: attrs "axes" (ints; absent: all axes) and "keep_dims" (bool) ---

def _reduce(type, x, axis, keepdims, name):
    x = _t(x)
    attrs = {}
    if axis is not None:
        if isinstance(axis, _tf().Tensor):
            raise TypeError(f"{type}: rill takes the axes as a list of ints, not a "
                                      "tensor")
        axes = [int(a) for a in _np.atleast_1d(_np.asarray(axis, dtype=_np.int64))]
        attrs["axes"] = ("ints", axes)
    attrs["keep_dims"] = ("bool", bool(keepdims))
    return _out(_g()._make(type, name or type, (x,), attrs))


def reduce_sum(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    axis = _pick("axis", axis, reduction_indices)
    keepdims = _pick("keepdims", keepdims, keep_dims)
    return _reduce("Sum", input_tensor, axis, bool(keepdims), name)


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None):
    axis = _pick("axis", axis, reduction_indices)
    keepdims = _pick("keepdims", keepdims, keep_dims)
    return _reduce("Mean", input_tensor, axis, bool(keepdims), name)


# --- slicing: StridedSlice with begin, end and strides as int-list attrs ---

newaxis = None


def _ints(v, what):
    tf = _tf()
    if isinstance(v, (tf.Tensor, tf.Variable)):
        raise TypeError(f"StridedSlice: rill takes {what} as Python ints, not a tensor")
    return [int(x) for x in _np.atleast_1d(_np.asarray(v, dtype=_np.int64))]


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
    begin, end = _ints(begin, "begin"), _ints(end, "end")
    strides = _ints(strides, "strides") if strides is not None else [1] * len(begin)
    attrs = {"begin": ("ints", begin), "end": ("ints", end), "strides": ("ints", strides),
             "begin_mask": ("int", int(begin_mask)), "end_mask": ("int", int(end_mask)),
             "ellipsis_mask": ("int", int(ellipsis_mask)),
             "new_axis_mask": ("int", int(new_axis_mask)),
             "shrink_axis_mask": ("int", int(shrink_axis_mask))}
    return _out(_g()._make("StridedSlice", name or "strided_slice", (_t(input_),), attrs))


def slice(input_, begin, size, name=None):
    """tf.slice: size[i] elements from begin[i] (-1: all the rest)."""
    begin, size = _ints(begin, "begin"), _ints(size, "size")
    if len(begin) != len(size):
        raise ValueError(f"Expected begin and size arguments to be 1-D tensors of the same "
                         f"size, but got {len(begin)} and {len(size)}")
    end, end_mask = [], 0
    for i, (b, n) in enumerate(zip(begin, size)):
        if n < -1:
            raise ValueError(f"Expected size[{i}] in [-1, ...], but got {n}")
        end.append(b + n if n >= 0 else 0)
        if n == -1:
            end_mask |= 1 << i
    return strided_slice(input_, begin, end, [1] * len(begin), end_mask=end_mask,
                         name=name or "Slice")


def _getitem(tensor, key):
    """tensor[key]: numpy's basic indexing (ints, slices, ..., tf.newaxis) as one StridedSlice,
    as TF's Tensor.__getitem__."""
    if not isinstance(key, tuple):
        key = (key,)
    begin, end, strides = [], [], []
    m = {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0,
         "shrink_axis_mask": 0}
    for i, k in enumerate(key):
        bit = 1 << i
        if k is Ellipsis:
            m["ellipsis_mask"] |= bit
            begin.append(0), end.append(0), strides.append(1)
        elif k is None:
            m["new_axis_mask"] |= bit
            begin.append(0), end.append(0), strides.append(1)
        elif isinstance(k, _builtin_slice):
            for part in (k.start, k.stop, k.step):
                if part is not None and not isinstance(part, (int, _np.integer)):
                    _bad_index(part)
            if k.step == 0:
                raise ValueError("slice step cannot be zero")
            if k.start is None:
                m["begin_mask"] |= bit
            if k.stop is None:
                m["end_mask"] |= bit
            begin.append(int(k.start or 0)), end.append(int(k.stop or 0))
            strides.append(int(k.step if k.step is not None else 1))
        elif isinstance(k, (int, _np.integer)) and not isinstance(k, bool):
            m["shrink_axis_mask"] |= bit
            begin.append(int(k)), end.append(int(k) + 1), strides.append(1)
        else:
            _bad_index(k)
    return strided_slice(tensor, begin, end, strides, **m)


def _bad_index(k):
    raise TypeError("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and "
                    "scalar tf.int32/tf.int64 tensors are valid indices, got " + repr(k) +
                    (" (rill takes Python ints only)" if isinstance(k, _tf().Tensor) else ""))


_builtin_slice = _builtins.slice  # this module's `slice` is tf.slice


# --- selection ---

def argmax(input, axis=None, name=None, dimension=None, output_type=None):
    """ArgMax with attr "axis" (an int; TF's default 0). rill's ArgMax gives int64; an int32
    output_type adds a Cast."""
    tf = _tf()
    axis = _pick("axis", axis, dimension)
    if axis is None:
        axis = 0
    if isinstance(axis, tf.Tensor):
        raise TypeError("ArgMax: rill takes the axis as an int attr, not a tensor")
    x = _t(input)
    r = _out(_g()._make("ArgMax", name or "ArgMax", (x,), {"axis": ("int", int(axis))}))
    if output_type is not None and tf.as_dtype(output_type) != tf.int64:
        r = cast(r, output_type)
    return r


arg_max = argmax


def equal(x, y, name=None):
    return _binary("Equal", "Equal", x, y, name)


# --- casts ---

def cast(x, dtype, name=None):
    tf = _tf()
    dt = tf.as_dtype(dtype)
    x = _t(x)
    if x.dtype == dt:
        return x  # TF: a cast to the same dtype is x itself
    return _out(_g()._make("Cast", name or "Cast", (x,), {"DstT": tf._attr_type(dt)}))


def to_float(x, name="ToFloat"):
    return cast(x, _tf().float32, name=name)


def to_double(x, name="ToDouble"):
    return cast(x, _tf().float64, name=name)


def to_int32(x, name="ToInt32"):
    return cast(x, _tf().int32, name=name)


def to_int64(x, name="ToInt64"):
    return cast(x, _tf().int64, name=name)


# --- shapes ---

def _shape_tensor(shape):
    tf = _tf()
    if isinstance(shape, (tf.Tensor, tf.Variable)):
        return _t(shape)
    if isinstance(shape, tf.TensorShape):
        shape = shape.as_list()
    if isinstance(shape, (list, tuple)) and any(isinstance(d, (tf.Tensor, tf.Variable))
                                                for d in shape):  # TF packs such a list
        return tf.stack([tf.cast(d, tf.int32) if isinstance(d, (tf.Tensor, tf.Variable))
                         else int(d) for d in shape])
    return tf.constant([int(d) for d in shape], dtype=tf.int32, name="shape") \
        if len(list(shape)) else tf.constant(_np.zeros([0], _np.int32), name="shape")


def reshape(tensor, shape, name=None):
    x = _t(tensor)
    s = _shape_tensor(shape)
    return _out(_g()._make("Reshape", name or "Reshape", (x, s)))


def expand_dims(input, axis=None, name=None, dim=None):
    axis = _pick("axis", axis, dim)
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    x = _t(input)
    return _out(_g()._make("ExpandDims", name or "ExpandDims", (x,), {"axis": ("int", int(axis))}))


def shape(input, name=None, out_type=None):
    tf = _tf()
    x = _t(input)
    dt = tf.int32 if out_type is None else tf.as_dtype(out_type)
    return _out(_g()._make("Shape", name or "Shape", (x,), {"out_type": tf._attr_type(dt)}))


def identity(input, name=None):
    return _unary("Identity", input, name)


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    x = _t(tensor)
    if dtype is not None and _tf().as_dtype(dtype) != x.dtype:
        return zeros(shape(x), dtype=dtype, name=name)
    return _out(_g()._make("ZerosLike", name or "zeros_like", (x,)))


def ones_like(tensor, dtype=None, name=None, optimize=True):
    x = _t(tensor)
    if dtype is not None and _tf().as_dtype(dtype) != x.dtype:
        return ones(shape(x), dtype=dtype, name=name)
    return _out(_g()._make("OnesLike", name or "ones_like", (x,)))


def fill(dims, value, name=None):
    tf = _tf()
    d = _shape_tensor(dims)
    v = _t(value)
    return _out(_g()._make("Fill", name or "Fill", (d, v), {"T": tf._attr_type(v.dtype)}))


def _filled(value, shape, dtype, name):
    tf = _tf()
    dt = tf.as_dtype(dtype)
    if isinstance(shape, (tf.Tensor, tf.Variable)):
        return fill(shape, tf.constant(value, dtype=dt), name=name)
    if isinstance(shape, tf.TensorShape):
        shape = shape.as_list()
    shape = [int(d) for d in (shape if isinstance(shape, (list, tuple)) else
                              _np.atleast_1d(shape))]
    # TF: a known shape makes a Const of the value (a Fill past 1000 elements)
    if int(_np.prod(shape)) < 1000:
        return tf.constant(_np.full(shape, value, dtype=dt.as_numpy_dtype), dtype=dt, name=name)
    return fill(shape, tf.constant(value, dtype=dt), name=name)


def zeros(shape, dtype=None, name=None):
    return _filled(0, shape, dtype or _tf().float32, name or "zeros")


def ones(shape, dtype=None, name=None):
    return _filled(1, shape, dtype or _tf().float32, name or "ones")


# --- elementwise math ---

def exp(x, name=None):
    return _unary("Exp", x, name)


def log(x, name=None):
    return _unary("Log", x, name)


def sqrt(x, name=None):
    return _unary("Sqrt", x, name)


def sigmoid(x, name=None):
    return _unary("Sigmoid", x, name)


def tanh(x, name=None):
    return _unary("Tanh", x, name)


def maximum(x, y, name=None):
    return _binary("Maximum", "Maximum", x, y, name)


def minimum(x, y, name=None):
    return _binary("Minimum", "Minimum", x, y, name)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """tf.clip_by_value: maximum(minimum(t, max), min), as TF builds it (its gradient passes
    where t is inside the range, and to t on a tie)."""
    tf = _tf()
    with tf.name_scope(name or "clip_by_value"):
        t = tf.convert_to_tensor(t)
        return maximum(minimum(t, clip_value_max), clip_value_min)


def div(x, y, name=None):
    """tf.div: op Div. On integers rill's Div truncates toward zero (the Div op's C semantics);
    TF 1.x's tf.div floors there (it makes FloorDiv, which rill lacks)."""
    return _binary("Div", "div", x, y, name)


def add_n(inputs, name=None):
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor/IndexedSlices with the "
                         "same dtype and shape")
    xs = [_t(x) for x in inputs]
    if len(xs) == 1 and name is None:
        return xs[0]  # as TF (and rill_add_n)
    return _out(_g()._make("AddN", name or "AddN", xs))


# --- gradients ---

def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False,
              gate_gradients=False, aggregation_method=None, stop_gradients=None):
    """tf.gradients: d(sum ys)/d x for each x, a Tensor or None where ys do not depend on x."""
    tf = _tf()
    g = _g()
    single = lambda v: v if isinstance(v, (list, tuple)) else [v]  # noqa: E731
    ys = [_t(y) for y in single(ys)]
    xs = [x.value() if isinstance(x, tf.Variable) else _t(x) for x in single(xs)]
    gy = None
    if grad_ys is not None:
        gl = single(grad_ys)
        if len(gl) != len(ys):
            raise ValueError(f"Passed {len(gl)} grad_ys for {len(ys)} ys")
        gy = [_t(v, y.dtype) if v is not None else None for v, y in zip(gl, ys)]
        if any(v is None for v in gy):
            gy = [v if v is not None else ones_like(y) for v, y in zip(gy, ys)]
        gy = [v._out for v in gy]
    res = g._g.gradients([y._out for y in ys], [x._out for x in xs], gy)
    return [None if r is None else g._wrap(r[0]).outputs[r[1]] for r in res]
