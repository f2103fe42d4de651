"""TF 1.x's reductions and array (shape-manipulation) functions: tf.reduce_max, tf.concat,
tf.stack, tf.transpose, tf.pad, tf.one_hot, tf.norm, ... over the C ops of
src/graph/ops_reduce.c and ops_shape.c.

Each function makes the C op by type name (graph._make), so shapes, dtypes and error texts are
the C library's. Where TensorFlow takes a constant tensor input (axis, perm, multiples,
paddings, size_splits, a target shape), rill takes a Python int or list as an attribute; a
tf.Tensor there is a TypeError (documented difference: rill needs the value when it builds the
op). Default op names are TF's Python ones."""
import builtins as _builtins
import sys as _sys

import numpy as _np

__all__ = ["reduce_max", "reduce_min", "reduce_prod", "reduce_any", "reduce_all",
           "reduce_logsumexp", "argmin", "arg_min", "cumsum", "cumprod", "concat", "stack",
           "unstack", "split", "transpose", "tile", "pad", "squeeze", "reverse", "reverse_v2",
           "broadcast_to", "stop_gradient", "one_hot", "size", "rank", "norm",
           "count_nonzero"]

# tf.range is not in __all__: a star import would shadow the builtin inside the package's
# __init__; the package serves it through its module __getattr__ (RANGE_NAMES).
RANGE_NAMES = {"range": "range"}

# The names tf.math also has (merged into a tf.math namespace by whoever builds it).
MATH_NAMES = ["reduce_max", "reduce_min", "reduce_prod", "reduce_any", "reduce_all",
              "reduce_logsumexp", "argmin", "cumsum", "cumprod", "count_nonzero"]


def _tf():
    return _sys.modules[__package__]


def _g():
    return _tf().get_default_graph()


def _t(x, dtype=None):
    return _tf().convert_to_tensor(x, dtype=dtype)


def _out(op):
    return op.outputs[0]


def _pick(name, a, b):
    if a is not None and b is not None:
        raise ValueError(f"Cannot specify both '{name}' and its deprecated alias.")
    return a if a is not None else b


def _ints(v, what, op):
    """v (a Python int or list of ints, or a numpy array) as a list of ints."""
    tf = _tf()
    if isinstance(v, (tf.Tensor, tf.Variable)):
        raise TypeError(f"{op}: rill takes {what} as a Python int or list of ints, not a "
                        f"tensor ({v!r}); it needs the value when it builds the op")
    return [int(x) for x in _np.atleast_1d(_np.asarray(v, dtype=_np.int64)).ravel()]


def _int(v, what, op):
    r = _ints(v, what, op)
    if len(r) != 1:
        raise ValueError(f"{op}: {what} must be a single int, got {v!r}")
    return r[0]


# --- reductions ---

def _reduce(type, x, axis, keepdims, name, boolean=False):
    tf = _tf()
    x = _t(x)
    if boolean and x.dtype != tf.bool:
        raise TypeError(f"Input 'input' of '{type}' Op has type {x.dtype.name} that does not "
                        "match expected type of bool.")
    attrs = {}
    if axis is not None:
        attrs["axes"] = ("ints", _ints(axis, "the axes", type))
    attrs["keep_dims"] = ("bool", bool(keepdims))
    return _out(_g()._make(type, name or type, (x,), attrs))


def _reduction(type, boolean=False):
    def f(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
          keep_dims=None):
        axis = _pick("axis", axis, reduction_indices)
        keepdims = _pick("keepdims", keepdims, keep_dims)
        return _reduce(type, input_tensor, axis, bool(keepdims), name, boolean)
    return f


reduce_max = _reduction("Max")
reduce_min = _reduction("Min")
reduce_prod = _reduction("Prod")
reduce_any = _reduction("Any", True)
reduce_all = _reduction("All", True)
for _f, _n in ((reduce_max, "reduce_max"), (reduce_min, "reduce_min"),
               (reduce_prod, "reduce_prod"), (reduce_any, "reduce_any"),
               (reduce_all, "reduce_all")):
    _f.__name__ = _f.__qualname__ = _n


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                     keep_dims=None):
    """TF's stable form: m + log(sum(exp(x - m))), m = stop_gradient(max(x)) (0 where infinite)."""
    tf = _tf()
    axis = _pick("axis", axis, reduction_indices)
    keepdims = bool(_pick("keepdims", keepdims, keep_dims))
    x = _t(input_tensor)
    with tf.name_scope(name or "ReduceLogSumExp"):
        m = stop_gradient(reduce_max(x, axis, keepdims=True))
        r = tf.log(tf.reduce_sum(tf.exp(x - m), axis, keepdims=keepdims))
        if not keepdims:
            m = tf.reshape(m, tf.shape(r))
        return tf.add(r, m)


def argmin(input, axis=None, name=None, dimension=None, output_type=None):
    tf = _tf()
    axis = _pick("axis", axis, dimension)
    axis = 0 if axis is None else _int(axis, "the axis", "ArgMin")
    ot = tf.int64 if output_type is None else tf.as_dtype(output_type)
    return _out(_g()._make("ArgMin", name or "ArgMin", (_t(input),),
                           {"axis": ("int", axis), "output_type": tf._attr_type(ot)}))


arg_min = argmin


def _scan(type, x, axis, exclusive, reverse, name):
    return _out(_g()._make(type, name or type, (_t(x),),
                           {"axis": ("int", _int(axis, "the axis", type)),
                            "exclusive": ("bool", bool(exclusive)),
                            "reverse": ("bool", bool(reverse))}))


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    return _scan("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    return _scan("Cumprod", x, axis, exclusive, reverse, name)


def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=None, name=None,
                  reduction_indices=None, keep_dims=None, input=None):
    tf = _tf()
    x = _t(_pick("input", input_tensor, input))
    axis = _pick("axis", axis, reduction_indices)
    keepdims = bool(_pick("keepdims", keepdims, keep_dims))
    dt = tf.int64 if dtype is None else tf.as_dtype(dtype)
    with tf.name_scope(name or "count_nonzero"):
        nz = tf.cast(x, tf.bool)  # a cast to bool is x != 0
        return tf.reduce_sum(tf.cast(nz, dt), axis, keepdims=keepdims)


def _abs(x):
    tf = _tf()
    return tf.abs(x) if hasattr(tf, "abs") else tf.maximum(x, tf.negative(x) if hasattr(
        tf, "negative") else x * -1)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None, keep_dims=None):
    """tf.norm for vector norms: ord 'euclidean' / 2, 1, np.inf over axis (None: all)."""
    tf = _tf()
    keepdims = bool(_pick("keepdims", keepdims, keep_dims))
    if isinstance(axis, (list, tuple)) and len(axis) == 2:
        if ord not in ("euclidean", "fro"):
            raise ValueError(f"'ord' must be a supported matrix norm in ['euclidean', 'fro'], "
                             f"got {ord}")
    elif ord not in ("euclidean", "fro", 1, 2, _np.inf) and not (
            isinstance(ord, float) and ord in (1.0, 2.0, _np.inf)):
        raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
    x = _t(tensor)
    with tf.name_scope(name or "norm"):
        if ord == 1:
            r = tf.reduce_sum(_abs(x), axis, keepdims=keepdims)
        elif ord == _np.inf:
            r = reduce_max(_abs(x), axis, keepdims=keepdims)
        else:
            r = tf.sqrt(tf.reduce_sum(x * x, axis, keepdims=keepdims))
        return r


# --- joining and splitting ---

def concat(values, axis, name="concat"):
    tf = _tf()
    values = [_t(v) for v in (values if isinstance(values, (list, tuple)) else [values])]
    axis = _int(axis, "the axis", "ConcatV2")
    if len(values) == 1:
        # TF: concatenating one tensor is that tensor (an Identity named as the concat)
        return tf.identity(values[0], name=name)
    return _out(_g()._make("ConcatV2", name or "concat", values, {"axis": ("int", axis)}))


def stack(values, axis=0, name="stack"):
    values = [_t(v) for v in values]
    return _out(_g()._make("Pack", name or "stack", values,
                           {"axis": ("int", _int(axis, "the axis", "Pack"))}))


def unstack(value, num=None, axis=0, name="unstack"):
    x = _t(value)
    axis = _int(axis, "the axis", "Unpack")
    if num is None:
        dims = x.shape._dims
        if dims is None:
            raise ValueError(f"Cannot infer argument `num` from shape {x.shape}")
        if not -len(dims) <= axis < len(dims):
            raise ValueError(f"Argument `axis` = {axis} not in range [{-len(dims)}, {len(dims)})")
        num = dims[axis]
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {x.shape}")
    op = _g()._make("Unpack", name or "unstack", (x,),
                    {"num": ("int", int(num)), "axis": ("int", axis),
                     "num_outputs": ("int", int(num))})
    return list(op.outputs)


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    tf = _tf()
    x = _t(value)
    axis = _int(axis, "the axis", "Split")
    if isinstance(num_or_size_splits, (int, _np.integer)):
        k = int(num_or_size_splits)
        op = _g()._make("Split", name or "split", (x,),
                        {"axis": ("int", axis), "num_split": ("int", k),
                         "num_outputs": ("int", k)})
        return list(op.outputs)
    if isinstance(num_or_size_splits, (tf.Tensor, tf.Variable)):
        raise TypeError("SplitV: rill takes size_splits as a Python list of ints, not a tensor")
    sizes = _ints(num_or_size_splits, "size_splits", "SplitV")
    k = len(sizes) if num is None else int(num)
    op = _g()._make("SplitV", name or "split", (x,),
                    {"axis": ("int", axis), "size_splits": ("ints", sizes),
                     "num_split": ("int", k), "num_outputs": ("int", k)})
    return list(op.outputs)


# --- rearranging ---

def transpose(a, perm=None, name="transpose", conjugate=False):
    x = _t(a)
    attrs = {} if perm is None else {"perm": ("ints", _ints(perm, "perm", "Transpose"))}
    return _out(_g()._make("Transpose", name or "transpose", (x,), attrs))


def tile(input, multiples, name=None):
    return _out(_g()._make("Tile", name or "Tile", (_t(input),),
                           {"multiples": ("ints", _ints(multiples, "multiples", "Tile"))}))


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    tf = _tf()
    x = _t(tensor)
    if isinstance(paddings, (tf.Tensor, tf.Variable)):
        raise TypeError("Pad: rill takes paddings as a Python list of [before, after] pairs, "
                        "not a tensor")
    p = _np.asarray(paddings, dtype=_np.int64)
    if p.ndim != 2 or p.shape[1] != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {p.ndim} for 'Pad' (paddings "
                         f"{p.shape}); paddings must be [rank, 2]")
    flat = [int(v) for v in p.ravel()]
    m = str(mode).upper()
    if m == "CONSTANT":
        if isinstance(constant_values, (tf.Tensor, tf.Variable)):
            raise TypeError("Pad: rill takes constant_values as a Python number")
        return _out(_g()._make("Pad", name or "Pad", (x,),
                               {"paddings": ("ints", flat),
                                "constant_values": ("float", float(constant_values))}))
    if m not in ("REFLECT", "SYMMETRIC"):
        raise ValueError(f"Unknown padding mode: {mode}")
    return _out(_g()._make("MirrorPad", name or "MirrorPad", (x,),
                           {"paddings": ("ints", flat), "mode": ("string", m)}))


def squeeze(input, axis=None, name=None, squeeze_dims=None):
    axis = _pick("axis", axis, squeeze_dims)
    attrs = {} if axis is None else {"squeeze_dims": ("ints", _ints(axis, "axis", "Squeeze"))}
    return _out(_g()._make("Squeeze", name or "Squeeze", (_t(input),), attrs))


def reverse_v2(tensor, axis, name=None):
    return _out(_g()._make("ReverseV2", name or "ReverseV2", (_t(tensor),),
                           {"axis": ("ints", _ints(axis, "axis", "ReverseV2"))}))


reverse = reverse_v2


def broadcast_to(input, shape, name=None):
    tf = _tf()
    if isinstance(shape, tf.TensorShape):
        shape = shape.as_list()
    return _out(_g()._make("BroadcastTo", name or "BroadcastTo", (_t(input),),
                           {"shape": ("shape", _ints(shape, "shape", "BroadcastTo")
                                      if _np.ndim(shape) else [])}))


def stop_gradient(input, name=None):
    return _out(_g()._make("StopGradient", name or "StopGradient", (_t(input),)))


# --- making ---

def range(start, limit=None, delta=1, dtype=None, name="range"):
    tf = _tf()
    if limit is None:
        start, limit = 0, start
    vals = [start, limit, delta]
    tensors = any(isinstance(v, (tf.Tensor, tf.Variable)) for v in vals)
    if dtype is not None:
        dt = tf.as_dtype(dtype)
    else:
        # TF's inference: the widest of the arguments' dtypes in int32 < int64 < float32 < float64
        inferred = []
        for v in vals:
            if isinstance(v, (tf.Tensor, tf.Variable)):
                inferred.append(v.dtype.base_dtype)
            elif isinstance(v, (float, _np.floating)):
                inferred.append(tf.float64 if isinstance(v, _np.float64) and
                                not isinstance(v, float) else tf.float32)
            elif isinstance(v, _np.int64) or (isinstance(v, int) and
                                              not -2**31 <= v < 2**31):
                inferred.append(tf.int64)
            else:
                inferred.append(tf.int32)
        order = [tf.int32, tf.int64, tf.float32, tf.float64]
        dt = _builtins.max(inferred, key=order.index)
    if tensors:  # start, limit and delta as inputs (the C op's other form), cast as TF does
        # (TF's casts sit in the scope "range/"; here beside it, so that the op is "range" too)
        ins = tuple(v if v.dtype.base_dtype == dt else tf.cast(v, dt)
                    for v in (_t(x) for x in vals))
        return _out(_g()._make("Range", name or "range", ins, {"Tidx": tf._attr_type(dt)}))
    return _out(_g()._make("Range", name or "range", (),
                           {"start": ("float", float(start)), "limit": ("float", float(limit)),
                            "delta": ("float", float(delta)), "Tidx": tf._attr_type(dt)}))


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    tf = _tf()
    x = _t(indices)
    if isinstance(depth, (tf.Tensor, tf.Variable)):
        raise TypeError("one_hot: rill takes depth as a Python int, not a tensor")
    dt = tf.as_dtype(dtype) if dtype is not None else tf.float32
    for v in (on_value, off_value):
        if isinstance(v, (tf.Tensor, tf.Variable)):
            raise TypeError("one_hot: rill takes on_value and off_value as Python numbers")
    on = 1 if on_value is None else on_value
    off = 0 if off_value is None else off_value
    return _out(_g()._make("OneHot", name or "one_hot", (x,),
                           {"depth": ("int", int(depth)), "on_value": ("float", float(on)),
                            "off_value": ("float", float(off)),
                            "axis": ("int", -1 if axis is None else int(axis)),
                            "T": tf._attr_type(dt)}))


def size(input, name=None, out_type=None):
    tf = _tf()
    dt = tf.int32 if out_type is None else tf.as_dtype(out_type)
    return _out(_g()._make("Size", name or "Size", (_t(input),), {"out_type": tf._attr_type(dt)}))


def rank(input, name=None):
    return _out(_g()._make("Rank", name or "Rank", (_t(input),)))
