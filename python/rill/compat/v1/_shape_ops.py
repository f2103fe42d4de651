"""TF 1.x's clipping, masking, matrix and rearranging functions that TF's own Python composes
from other ops, composed here the same way over rill's C ops: tf.clip_by_norm,
tf.clip_by_global_norm, tf.global_norm, tf.boolean_mask, tf.sequence_mask, tf.eye,
tf.linspace, tf.meshgrid, tf.tensordot, tf.einsum, tf.repeat, tf.matrix_band_part and the
diagonal functions, tf.cross, tf.space_to_depth / depth_to_space, tf.space_to_batch(_nd) /
batch_to_space(_nd), tf.extract_image_patches, tf.broadcast_static_shape, ...; and the
functions over the C ops of src/graph/ops_permute.c (tf.roll, tf.reverse_sequence) and
DivNoNan (tf.div_no_nan). The tf.linalg namespace is here too.

Where TF takes a constant tensor (shift, axis, block_shape, paddings, repeats, ksizes), rill takes
Python ints or lists (a tensor there is a TypeError), as the other modules do. The matrix
functions (band part, diagonals) select with masks built from the static shape (or from Range
ops when it is not known), so their gradients are the selected parts of dy, as TF's kernels'."""
import string as _string
import sys as _sys
import types as _types

import numpy as _np

__all__ = ["clip_by_norm", "clip_by_global_norm", "global_norm", "clip_by_average_norm",
           "boolean_mask", "sequence_mask", "eye", "linspace", "lin_space", "meshgrid",
           "tensordot", "einsum", "div_no_nan", "log_sigmoid", "scalar_mul", "shape_n", "repeat",
           "roll", "saturate_cast", "reverse_sequence", "matrix_band_part", "matrix_diag",
           "matrix_diag_part", "matrix_set_diag", "diag", "diag_part", "trace",
           "matrix_transpose", "cross", "accumulate_n", "space_to_depth", "depth_to_space",
           "space_to_batch", "space_to_batch_nd", "batch_to_space", "batch_to_space_nd",
           "required_space_to_batch_paddings", "broadcast_static_shape",
           "broadcast_dynamic_shape", "parallel_stack", "to_bfloat16", "extract_image_patches",
           "matrix_inverse", "matrix_determinant", "matrix_solve", "cholesky",
           "matrix_triangular_solve", "linalg"]


def _tf():
    return _sys.modules[__package__]


def _g():
    return _tf().get_default_graph()


def _t(x, dtype=None):
    tf = _tf()
    if isinstance(x, tf.Variable):
        x = x.value()
    return tf.convert_to_tensor(x, dtype=dtype)


def _out(op):
    return op.outputs[0]


def _static_ints(v, what, fn):
    tf = _tf()
    if isinstance(v, (tf.Tensor, tf.Variable)):
        raise TypeError(f"{fn}: rill takes {what} as a Python int or list of ints, not a tensor "
                        f"({v!r}); it needs the value when it builds the op")
    return [int(x) for x in _np.atleast_1d(_np.asarray(v, dtype=_np.int64)).ravel()]


def _dims(x):
    """x's static dims (None where unknown), or None when its rank is unknown."""
    d = x.shape._dims
    return None if d is None else [None if v is None else int(v) for v in d]


def _shape_of(x):
    """x's shape as a list of ints where known and scalar int32 tensors where not (or an int32
    Shape tensor when the rank is unknown)."""
    tf = _tf()
    d = _dims(x)
    if d is None:
        return tf.shape(x)
    if all(v is not None for v in d):
        return d
    s = tf.shape(x)
    return [v if v is not None else s[i] for i, v in enumerate(d)]


def _as_shape_tensor(parts):
    """A list of ints and scalar tensors as one int32 vector (a Const when all are ints)."""
    tf = _tf()
    if isinstance(parts, tf.Tensor):
        return parts
    if all(isinstance(p, (int, _np.integer)) for p in parts):
        return [int(p) for p in parts]
    return tf.stack([tf.cast(p, tf.int32) if isinstance(p, tf.Tensor) else
                     tf.constant(int(p), tf.int32) for p in parts])


def _reshape(x, parts, name=None):
    return _tf().reshape(x, _as_shape_tensor(parts), name=name)


def _prod(parts):
    tf = _tf()
    r = 1
    for p in parts:
        r = r * p if isinstance(r, int) and isinstance(p, int) else \
            tf.multiply(tf.cast(r, tf.int32), tf.cast(p, tf.int32))
    return r


def _floating(dt):
    return dt.name in ("float16", "bfloat16", "float32", "float64")


# --- clipping ---

def clip_by_norm(t, clip_norm, axes=None, name=None):
    """t * clip_norm / max(||t||, clip_norm) with the L2 norm over axes (all: None), TF's safe
    form (a zero norm gives t, not NaN, and a zero gradient)."""
    tf = _tf()
    with tf.name_scope(name or "clip_by_norm"):
        t = _t(t)
        cn = _t(clip_norm, t.dtype)
        l2sum = tf.reduce_sum(t * t, axes, keepdims=True)
        pred = tf.greater(l2sum, 0)
        l2sum_safe = tf.where(pred, l2sum, tf.ones_like(l2sum))
        l2norm = tf.where(pred, tf.sqrt(l2sum_safe), l2sum)
        values = tf.truediv(t * cn, tf.maximum(l2norm, cn))
    return tf.identity(values, name=name or "clip_by_norm")


def _grad_values(t):
    tf = _tf()
    if isinstance(t, getattr(tf, "IndexedSlices", ())):
        return t.values
    return _t(t)


def global_norm(t_list, name=None):
    """sqrt(sum of every t's squared L2 norm); None entries are skipped."""
    tf = _tf()
    if not isinstance(t_list, (list, tuple)) or isinstance(t_list, str):
        raise TypeError(f"`t_list` should be a sequence of tensors. Received {type(t_list)}.")
    vals = [_grad_values(t) for t in t_list if t is not None]
    with tf.name_scope(name or "global_norm"):
        half = [tf.nn.l2_loss(v) for v in vals]
        half_sq = tf.reduce_sum(tf.stack(half)) if half else tf.constant(0.0)
        two = tf.constant(2.0, dtype=half_sq.dtype)
    return tf.sqrt(half_sq * two, name="global_norm")


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(each t * clip_norm / max(global_norm, clip_norm), global_norm): every entry NaN when the
    norm is not finite, as TF's."""
    tf = _tf()
    if not isinstance(t_list, (list, tuple)) or isinstance(t_list, str):
        raise TypeError(f"`t_list` should be a sequence of tensors. Received {type(t_list)}.")
    t_list = list(t_list)
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    use_norm = _t(use_norm)
    base = name or "clip_by_global_norm"
    out = []
    with tf.name_scope(base):
        cn = _t(clip_norm, use_norm.dtype)
        one = tf.constant(1.0, dtype=use_norm.dtype)
        scale = cn * tf.minimum(tf.truediv(one, use_norm), tf.truediv(one, cn))
        scale = scale + (use_norm - use_norm)  # NaN when the norm is inf or NaN
        for i, t in enumerate(t_list):
            if t is None:
                out.append(None)
                continue
            if isinstance(t, getattr(tf, "IndexedSlices", ())):
                v = t.values
                out.append(tf.IndexedSlices(tf.identity(v * tf.cast(scale, v.dtype),
                                                        name=f"{base}_{i}"),
                                            t.indices, t.dense_shape))
                continue
            v = _t(t)
            out.append(tf.identity(v * tf.cast(scale, v.dtype), name=f"{base}_{i}"))
    return out, use_norm


def clip_by_average_norm(t, clip_norm, name=None):
    """t * clip_norm / max(||t|| / size(t), clip_norm) (tf.clip_by_average_norm)."""
    tf = _tf()
    with tf.name_scope(name or "clip_by_average_norm"):
        t = _t(t)
        cn = _t(clip_norm, t.dtype)
        n = tf.cast(tf.size(t), tf.float32)  # float32, as TF's (other dtypes fail there too)
        inv = tf.rsqrt(tf.reduce_sum(t * t))
        values = t * cn * tf.minimum(inv * n, tf.truediv(tf.constant(1.0, t.dtype), cn))
    return tf.identity(values, name=name or "clip_by_average_norm")


# --- masks ---

def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    """The entries of tensor where mask (a bool tensor of tensor's dims axis..axis+k) holds,
    along one new dim: Where(mask) gathered from tensor with the mask's dims flattened."""
    tf = _tf()
    with tf.name_scope(name or "boolean_mask"):
        tensor, mask = _t(tensor), _t(mask)
        md = _dims(mask)
        if md is None:
            raise ValueError("Number of mask dimensions must be specified, even if some "
                             "dimensions are None.  E.g. shape=[None] is ok, but shape=None is "
                             "not.")
        if len(md) == 0:
            raise ValueError("mask cannot be scalar.")
        axis = 0 if axis is None else int(axis)
        td = _dims(tensor)
        if td is not None:
            if axis < 0:
                axis += len(td)
            part = td[axis:axis + len(md)]
            if len(part) != len(md) or any(a is not None and b is not None and a != b
                                           for a, b in zip(part, md)):
                raise ValueError(f"Shapes {tf.TensorShape(part)} and {tf.TensorShape(md)} are "
                                 "incompatible")
        shp = _shape_of(tensor)
        if isinstance(shp, tf.Tensor):
            raise ValueError("boolean_mask: rill needs the rank of tensor")
        flat = shp[:axis] + [-1] + shp[axis + len(md):]
        t2 = _reshape(tensor, flat)
        m2 = tf.reshape(mask, [-1])
        idx = tf.squeeze(tf.where(m2), axis=[1])
        return tf.gather(t2, idx, axis=axis)


def sequence_mask(lengths, maxlen=None, dtype=None, name=None):
    """mask[i..., j] = j < lengths[i...], j in [0, maxlen) (default: max(lengths))."""
    tf = _tf()
    dtype = tf.bool if dtype is None else tf.as_dtype(dtype)
    with tf.name_scope(name or "SequenceMask"):
        lengths = _t(lengths)
        if maxlen is None:
            maxlen = tf.reduce_max(lengths)
        else:
            maxlen = _t(maxlen)
            if maxlen.shape.ndims is not None and maxlen.shape.ndims != 0:
                raise ValueError("Argument `maxlen` must be scalar for sequence_mask, received "
                                 f"`maxlen` = {maxlen} with shape '{maxlen.shape}' instead")
        lt = lengths.dtype
        mx = tf.cast(maxlen, lt)
        row = _out(_g()._make("Range", "Range", (tf.constant(0, lt), mx, tf.constant(1, lt)),
                              {"Tidx": tf._attr_type(lt)}))
        result = tf.less(row, tf.expand_dims(lengths, -1))
        if dtype == tf.bool:
            return result
        return tf.cast(result, dtype)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=None, name=None):
    """An identity matrix [batch_shape..., num_rows, num_columns]."""
    tf = _tf()
    dtype = tf.float32 if dtype is None else tf.as_dtype(dtype)
    r = _static_ints(num_rows, "num_rows", "eye")[0]
    c = r if num_columns is None else _static_ints(num_columns, "num_columns", "eye")[0]
    b = [] if batch_shape is None else _static_ints(batch_shape, "batch_shape", "eye")
    if r < 0 or c < 0 or any(v < 0 for v in b):
        raise ValueError("eye: num_rows, num_columns and batch_shape must be non-negative")
    v = _np.broadcast_to(_np.eye(r, c), b + [r, c]).astype(dtype.as_numpy_dtype
                                                          if dtype != tf.bfloat16 else _np.float32)
    with tf.name_scope(name or "eye"):
        if dtype == tf.bfloat16:
            return tf.cast(tf.constant(v), dtype)
        return tf.constant(v, dtype=dtype, name="ones")


def linspace(start, stop, num, name=None, axis=0):
    """num evenly spaced values from start to stop, both included (the last is stop exactly);
    start and stop may be tensors of one shape (the values run along axis)."""
    tf = _tf()
    with tf.name_scope(name or "linspace"):
        start = _t(start)
        if start.dtype.is_integer if hasattr(start.dtype, "is_integer") else False:
            start = tf.cast(start, tf.float64)
        stop = _t(stop, start.dtype)
        n = _static_ints(num, "num", "linspace")
        if len(n) != 1:
            raise ValueError("linspace: num must be a scalar")
        n = n[0]
        if n < 0:
            raise _tf().errors.InvalidArgumentError(
                None, None, f"Requires num > 0: {n}")
        dt = start.dtype
        sd = _dims(start)
        rank = 0 if sd is None else len(sd)
        if axis < 0:
            axis += rank + 1
        if not 0 <= axis <= rank:
            raise ValueError(f"linspace: axis {axis} out of range for rank {rank}")
        i = tf.constant(_np.arange(n), dtype=dt)
        ishape = [1] * (rank + 1)
        ishape[axis] = n
        i = tf.reshape(i, ishape)
        a, b = tf.expand_dims(start, axis), tf.expand_dims(stop, axis)
        if n == 0:
            return a * i  # empty along axis
        if n == 1:
            return a
        step = tf.truediv(b - a, tf.constant(n - 1, dt))
        body = a + step * i  # rows 0..n-1; the last replaced by stop exactly, as TF's kernel
        keep = tf.constant((_np.arange(n) < n - 1).reshape(ishape))
        return tf.where_v2(keep, body, b + tf.zeros_like(body))


lin_space = linspace


def meshgrid(*args, **kwargs):
    """N-D coordinate arrays from 1-D ones; indexing 'xy' (default) swaps the first two dims."""
    tf = _tf()
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        key = list(kwargs)[0]
        raise TypeError(f"'{key}' is an invalid keyword argument for this function")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Argument `indexing` parameter must be either 'xy' or 'ij', got "
                         f"'{indexing}'")
    with tf.name_scope(name):
        ndim = len(args)
        s0 = (1,) * ndim
        if not ndim:
            return []
        xs = [_t(a) for a in args]
        output = [tf.reshape(tf.stack([x]) if x.shape.ndims == 0 else x,
                             list(s0[:i]) + [-1] + list(s0[i + 1:])) for i, x in enumerate(xs)]
        sizes = [_shape_of(tf.reshape(x, [-1]))[0] for x in xs]
        if indexing == "xy" and ndim > 1:
            output[0] = tf.reshape(output[0], [1, -1] + [1] * (ndim - 2))
            output[1] = tf.reshape(output[1], [-1, 1] + [1] * (ndim - 2))
            sizes[0], sizes[1] = sizes[1], sizes[0]
        mult = tf.ones(_as_shape_tensor(sizes), dtype=xs[0].dtype)
        return [o * mult for o in output]


# --- contractions ---

def _tensordot_axes(a, b, axes):
    ra, rb = len(a), len(b)
    if isinstance(axes, (int, _np.integer)):
        k = int(axes)
        if k < 0:
            raise ValueError(f"`axes` must be at least 0. Received: {axes}.")
        if k > ra or k > rb:
            raise ValueError(f"`axes` must not be larger than the number of dimensions of "
                             f"tensor {ra if k > ra else rb}.  Received {k}, vs tensor "
                             f"dimensions {ra if k > ra else rb}.")
        return list(range(ra - k, ra)), list(range(k))
    axes = list(axes) if not isinstance(axes, _np.ndarray) else axes.tolist()
    if len(axes) != 2:
        raise ValueError(f"`axes` must be an integer or have length 2. Received {axes}.")
    aa, ba = axes
    aa = [aa] if isinstance(aa, (int, _np.integer)) else list(aa)
    ba = [ba] if isinstance(ba, (int, _np.integer)) else list(ba)
    if len(aa) != len(ba):
        raise ValueError(f"Different number of contraction axes `a` and `b`, {len(aa)} != "
                         f"{len(ba)}.")
    return [int(x) % ra if ra else int(x) for x in aa], [int(x) % rb if rb else int(x)
                                                         for x in ba]


def tensordot(a, b, axes, name=None):
    """sum over a's axes[0] and b's axes[1] of a * b: transposes, reshapes and one MatMul."""
    tf = _tf()
    with tf.name_scope(name or "Tensordot"):
        a, b = _t(a), _t(b)
        if isinstance(axes, (tf.Tensor, tf.Variable)):
            raise TypeError("tensordot: rill takes axes as a Python int or lists of ints")
        sa, sb = _shape_of(a), _shape_of(b)
        if isinstance(sa, tf.Tensor) or isinstance(sb, tf.Tensor):
            raise ValueError("tensordot: rill needs the ranks of a and b")
        aa, ba = _tensordot_axes(sa, sb, axes)
        fa = [i for i in range(len(sa)) if i not in aa]
        fb = [i for i in range(len(sb)) if i not in ba]
        for i, j in zip(aa, ba):
            if isinstance(sa[i], int) and isinstance(sb[j], int) and sa[i] != sb[j]:
                raise ValueError(f"Dimensions must be equal, but are {sa[i]} and {sb[j]} for "
                                 f"'Tensordot/MatMul' (op: 'MatMul')")
        at = tf.transpose(a, fa + aa) if fa + aa != list(range(len(sa))) else a
        bt = tf.transpose(b, ba + fb) if ba + fb != list(range(len(sb))) else b
        am = _reshape(at, [_prod([sa[i] for i in fa]), _prod([sa[i] for i in aa])])
        bm = _reshape(bt, [_prod([sb[i] for i in ba]), _prod([sb[i] for i in fb])])
        ab = tf.matmul(am, bm)
        return _reshape(ab, [sa[i] for i in fa] + [sb[i] for i in fb], name="Tensordot")


def _einsum_parse(equation, n):
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->")
        implicit = False
    else:
        lhs, out, implicit = eq, None, True
    ins = lhs.split(",")
    if len(ins) != n:
        raise ValueError(f"Expected {len(ins)} inputs for equation {equation!r}, got {n}.")
    for s in ins + ([out] if out is not None else []):
        if "." in s:
            raise ValueError(f"einsum: rill does not support ellipses ('...') in {equation!r}")
        for ch in s:
            if ch not in _string.ascii_letters:
                raise ValueError(f"einsum: invalid character {ch!r} in equation {equation!r}")
    for s in ins:
        if len(set(s)) != len(s):
            raise ValueError(f"einsum: rill does not support a label repeated in one operand "
                             f"(a diagonal) in {equation!r}")
    if implicit:
        counts = {}
        for s in ins:
            for ch in s:
                counts[ch] = counts.get(ch, 0) + 1
        out = "".join(sorted(ch for ch, c in counts.items() if c == 1))
    if len(set(out)) != len(out):
        raise ValueError(f"einsum: output subscripts repeat a label in {equation!r}")
    for ch in out:
        if not any(ch in s for s in ins):
            raise ValueError(f"einsum: output label {ch!r} appears in no input of {equation!r}")
    return ins, out


def einsum(equation, *inputs, **kwargs):
    """Einstein summation for equations without ellipses or in-operand repeats: two operands
    contract by transposes, reshapes and a MatMul (batch labels by broadcasting products);
    a label only one operand has (and the output lacks) is summed first."""
    tf = _tf()
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"Invalid keyword arguments for this function: "
                        f"{', '.join(sorted(kwargs))}. Expected: name.")
    if not inputs:
        raise ValueError("einsum: no inputs")
    ins, out = _einsum_parse(equation, len(inputs))
    with tf.name_scope(name or "einsum"):
        xs = [_t(x) for x in inputs]
        for s, x in zip(ins, xs):
            if x.shape.ndims is not None and x.shape.ndims != len(s):
                raise ValueError(f"einsum: operand {s!r} has rank {x.shape.ndims}")
        # sum away labels only one operand has that the output does not keep
        terms = []
        for i, (s, x) in enumerate(zip(ins, xs)):
            others = "".join(t for j, t in enumerate(ins) if j != i) + out
            drop = [k for k, ch in enumerate(s) if ch not in others]
            if drop:
                x = tf.reduce_sum(x, drop)
                s = "".join(ch for k, ch in enumerate(s) if k not in drop)
            terms.append((s, x))
        while len(terms) > 1:
            (s1, x1), (s2, x2) = terms[0], terms[1]
            rest = "".join(t for t, _ in terms[2:]) + out
            terms = [_einsum_pair(s1, x1, s2, x2, rest)] + terms[2:]
        s, x = terms[0]
        if s != out:
            x = tf.transpose(x, [s.index(ch) for ch in out])
        return tf.identity(x, name="Einsum") if x.op.type == "Const" else x


def _einsum_pair(s1, x1, s2, x2, keep):
    """Contracts two operands: labels in both and kept: batch; in both, not kept: summed; in
    one: free. Result labels: batch + free1 + free2."""
    tf = _tf()
    batch = [c for c in s1 if c in s2 and c in keep]
    summed = [c for c in s1 if c in s2 and c not in keep]
    f1 = [c for c in s1 if c not in s2]
    f2 = [c for c in s2 if c not in s1]
    if not batch:
        sh1, sh2 = _shape_of(x1), _shape_of(x2)
        a = tf.transpose(x1, [s1.index(c) for c in f1 + summed]) if f1 + summed != list(s1) \
            else x1
        b = tf.transpose(x2, [s2.index(c) for c in summed + f2]) if summed + f2 != list(s2) \
            else x2
        d1 = {c: sh1[s1.index(c)] for c in s1}
        d2 = {c: sh2[s2.index(c)] for c in s2}
        am = _reshape(a, [_prod([d1[c] for c in f1]), _prod([d1[c] for c in summed])])
        bm = _reshape(b, [_prod([d2[c] for c in summed]), _prod([d2[c] for c in f2])])
        r = _reshape(tf.matmul(am, bm), [d1[c] for c in f1] + [d2[c] for c in f2])
        return "".join(f1 + f2), r
    # with batch labels: line both up as [batch..., free1..., free2..., summed...] and multiply
    full = batch + f1 + f2 + summed

    def lift(s, x):
        perm = [s.index(c) for c in full if c in s]
        x = tf.transpose(x, perm) if perm != list(range(len(s))) else x
        shp = _shape_of(x)
        it = iter(shp)
        return _reshape(x, [next(it) if c in s else 1 for c in full])
    p = tf.multiply(lift(s1, x1), lift(s2, x2))
    if summed:
        p = tf.reduce_sum(p, list(range(len(full) - len(summed), len(full))))
    return "".join(batch + f1 + f2), p


# --- element-wise ---

def div_no_nan(x, y, name=None):
    """x / y, 0 where y is 0 (the DivNoNan op)."""
    tf = _tf()
    if isinstance(x, (tf.Tensor, tf.Variable)) and not isinstance(y, (tf.Tensor, tf.Variable)):
        x = _t(x)
        y = _t(y, x.dtype)
    elif isinstance(y, (tf.Tensor, tf.Variable)) and not isinstance(x, (tf.Tensor, tf.Variable)):
        y = _t(y)
        x = _t(x, y.dtype)
    else:
        x, y = _t(x), _t(y)
    if x.dtype != y.dtype:
        raise TypeError(f"`x` and `y` must have the same dtype, got {x.dtype!r} != {y.dtype!r}.")
    return _out(_g()._make("DivNoNan", name or "div_no_nan", (x, y)))


def log_sigmoid(x, name=None):
    """log(1 / (1 + exp(-x))) as -softplus(-x), TF's stable form."""
    tf = _tf()
    with tf.name_scope(name or "LogSigmoid"):
        x = _t(x)
        r = tf.nn.softplus(tf.negative(x))
    return tf.negative(r, name=name or "LogSigmoid")


def scalar_mul(scalar, x, name=None):
    """scalar * x for a 0-D scalar (IndexedSlices: their values scaled)."""
    tf = _tf()
    is_slices = isinstance(x, getattr(tf, "IndexedSlices", ()))
    xt = x.values if is_slices else _t(x)
    s = _t(scalar, xt.dtype)
    if s.shape.ndims != 0:
        raise ValueError(f"The input scalar must be a 0-D value. Received shape {s.shape}.")
    if is_slices:
        return tf.IndexedSlices(tf.multiply(s, xt, name=name or "scalar_mul"), x.indices,
                                x.dense_shape)
    return tf.multiply(s, xt, name=name or "scalar_mul")


def saturate_cast(value, dtype, name=None):
    """value clamped to dtype's range, then cast (no wrap-around)."""
    tf = _tf()
    dtype = tf.as_dtype(dtype)
    with tf.name_scope(name or "saturate_cast"):
        value = _t(value)
        vt = value.dtype
        if vt == tf.bool or dtype == tf.bool:
            return tf.cast(value, dtype)

        def lim(dt):
            if dt.name == "bfloat16":
                return -3.3895313892515355e38, 3.3895313892515355e38
            info = _np.finfo(dt.as_numpy_dtype) if _floating(dt) else \
                _np.iinfo(dt.as_numpy_dtype)
            return float(info.min), float(info.max)
        lo_in, hi_in = lim(vt)
        lo, hi = lim(dtype)
        if lo > lo_in:
            value = tf.maximum(value, _t(_np.asarray(lo).astype(vt.as_numpy_dtype)
                                         if vt != tf.bfloat16 else lo, vt))
        if hi < hi_in:
            top = hi
            if not _floating(vt) and _floating(dtype) is False:
                top = hi
            elif not _floating(vt):
                top = hi
            if not _floating(vt):
                value = tf.minimum(value, _t(int(top), vt))
            else:
                # the largest value of vt that does not exceed hi once cast
                v = _np.asarray(hi, dtype=vt.as_numpy_dtype if vt != tf.bfloat16 else _np.float32)
                if float(v) > hi:
                    v = _np.nextafter(v, v.dtype.type(0))
                value = tf.minimum(value, _t(v, vt))
        return tf.cast(value, dtype)


def shape_n(input, out_type=None, name=None):
    """The Shape of each tensor in input."""
    tf = _tf()
    out_type = tf.int32 if out_type is None else tf.as_dtype(out_type)
    with tf.name_scope(name or "ShapeN"):
        return [tf.shape(_t(x), out_type=out_type) for x in input]


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """The sum of inputs (tensors of one shape and dtype), as AddN."""
    tf = _tf()
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor/IndexedSlices with the "
                         "same dtype and shape")
    inputs = [_t(x) for x in inputs]
    if not all(x.dtype == inputs[0].dtype for x in inputs):
        raise ValueError("inputs must be a list of at least one Tensor/IndexedSlices with the "
                         "same dtype and shape")
    shp = tf.TensorShape(shape) if shape is not None else tf.TensorShape(None)
    for x in inputs:
        if not shp.is_compatible_with(x.shape):
            raise ValueError(f"Shapes {shp} and {x.shape} are incompatible")
        shp = shp.merge_with(x.shape)
    if tensor_dtype is not None and tf.as_dtype(tensor_dtype) != inputs[0].dtype:
        raise TypeError(f"tensor_dtype is {tf.as_dtype(tensor_dtype)!r}, but input is of type "
                        f"{inputs[0].dtype!r}")
    if len(inputs) == 1 and name is None:
        return inputs[0]
    return tf.add_n(inputs, name=name)


def to_bfloat16(x, name="ToBFloat16"):
    tf = _tf()
    return tf.cast(x, tf.bfloat16, name=name)


def parallel_stack(values, name="parallel_stack"):
    """stack(values) (TF runs it as ParallelConcat; the values are the same)."""
    tf = _tf()
    values = [_t(v) for v in values]
    if not values:
        raise ValueError("parallel_stack: values must not be empty")
    if not values[0].shape.is_fully_defined():
        raise ValueError(f"Tensor's shape {values[0].shape} must be fully defined")
    return tf.stack(values, name=name)


# --- rearranging ---

def roll(input, shift, axis, name=None):
    """Elements shifted along axis (the Roll op; shift and axis: Python ints or lists)."""
    s = _static_ints(shift, "shift", "Roll")
    a = _static_ints(axis, "axis", "Roll")
    return _out(_g()._make("Roll", name or "Roll", (_t(input),),
                           {"shift": ("ints", s), "axis": ("ints", a)}))


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None, seq_dim=None,
                     batch_dim=None):
    """The first seq_lengths[b] entries along seq_axis of each batch entry b reversed."""
    tf = _tf()

    def pick(new, old, what):
        if new is not None and old is not None and new != old:
            raise ValueError(f"Cannot specify both '{what}' and its deprecated alias.")
        return new if new is not None else old
    sa = pick(seq_axis, seq_dim, "seq_axis")
    ba = pick(batch_axis, batch_dim, "batch_axis")
    if sa is None:
        raise TypeError("reverse_sequence() missing required argument 'seq_axis'")
    ba = 0 if ba is None else ba
    lens = _t(seq_lengths)
    if lens.dtype not in (tf.int32, tf.int64):
        lens = _t(seq_lengths, tf.int64)
    return _out(_g()._make("ReverseSequence", name or "ReverseSequence", (_t(input), lens),
                           {"seq_dim": ("int", int(sa)), "batch_dim": ("int", int(ba))}))


def repeat(input, repeats, axis=None, name=None):
    """Each element (along axis; None: of the flattened input) repeated repeats times (an int,
    or one count per element)."""
    tf = _tf()
    r = _static_ints(repeats, "repeats", "repeat")
    with tf.name_scope(name or "Repeat"):
        x = _t(input)
        if axis is None:
            x = tf.reshape(x, [-1])
            axis = 0
        d = _dims(x)
        if d is None:
            raise ValueError("repeat: rill needs the rank of input")
        axis = int(axis)
        if not -len(d) <= axis < len(d):
            raise ValueError(f"axis={axis} out of bounds: expected {-len(d)}<=axis<{len(d)}")
        axis %= len(d)
        n = d[axis]
        if _np.ndim(repeats) == 0 or len(r) == 1:
            if n is None:
                # one count for all: expand, tile, merge
                e = tf.expand_dims(x, axis + 1)
                t = tf.tile(e, [1] * (axis + 1) + [r[0]] + [1] * (len(d) - axis - 1))
                shp = _shape_of(x)
                return _reshape(t, shp[:axis] + [-1] + shp[axis + 1:])
            r = r * n
        if n is not None and len(r) != n:
            raise tf.errors.InvalidArgumentError(
                None, None, f"Dimensions {n} and {len(r)} are not compatible")
        if any(v < 0 for v in r):
            raise ValueError("repeat: repeats must be non-negative")
        idx = _np.repeat(_np.arange(len(r)), r).astype(_np.int32)
        return tf.gather(x, tf.constant(idx, tf.int32), axis=axis)


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """The last two dims of a swapped."""
    tf = _tf()
    with tf.name_scope(name or "matrix_transpose"):
        a = _t(a)
        nd = a.shape.ndims
        if nd is None:
            raise ValueError("matrix_transpose: rill needs the rank of a")
        if nd < 2:
            raise ValueError(f"Argument `a` should be a (batch) matrix with rank >= 2.  Received "
                             f"`a` = {a} with shape: {a.shape}")
        perm = list(range(nd - 2)) + [nd - 1, nd - 2]
    return tf.transpose(a, perm, name=name or "matrix_transpose")


def cross(a, b, name=None):
    """The cross product of the 3-vectors along the last dim."""
    tf = _tf()
    a, b = _t(a), _t(b)
    for x in (a, b):
        d = _dims(x)
        if d is not None and (not d or (d[-1] is not None and d[-1] != 3)):
            raise ValueError(f"Dimension must be 3 but is {d[-1] if d else 'scalar'} for "
                             f"'{name or 'Cross'}' (op: 'Cross') with input shapes: "
                             f"{a.shape}, {b.shape}.")
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"Dimension 0 in both shapes must be equal for '{name or 'Cross'}' "
                         f"(op: 'Cross') with input shapes: {a.shape}, {b.shape}.")
    with tf.name_scope(name or "Cross"):
        a0, a1, a2 = tf.unstack(a, 3, axis=-1)
        b0, b1, b2 = tf.unstack(b, 3, axis=-1)
        c = [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0]
    return tf.stack(c, axis=-1, name=name or "Cross")


# --- matrices: band parts and diagonals ---

def _mn(x, what):
    """x's last two dims (ints or scalar tensors) and x's rank."""
    tf = _tf()
    d = _dims(x)
    if d is None:
        raise ValueError(f"{what}: rill needs the rank of its input")
    if len(d) < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {len(d)} for '{what}'")
    s = _shape_of(x)
    return s[-2], s[-1], len(d)


def _index_grid(m, n):
    """(rows, cols): int64 [m, 1] and [1, n] index tensors (Consts when m, n are ints)."""
    tf = _tf()

    def rng(k):
        if isinstance(k, int):
            return tf.constant(_np.arange(k, dtype=_np.int64))
        return _out(_g()._make("Range", "Range", (tf.constant(0, tf.int64),
                                                  tf.cast(k, tf.int64),
                                                  tf.constant(1, tf.int64)),
                               {"Tidx": tf._attr_type(tf.int64)}))
    return tf.expand_dims(rng(m), 1), tf.expand_dims(rng(n), 0)


def matrix_band_part(input, num_lower, num_upper, name=None):
    """Entries (i, j) of each inner matrix kept where (num_lower < 0 or i - j <= num_lower) and
    (num_upper < 0 or j - i <= num_upper), zero elsewhere (the MatrixBandPart op)."""
    lo = _static_ints(num_lower, "num_lower", "MatrixBandPart")[0]
    up = _static_ints(num_upper, "num_upper", "MatrixBandPart")[0]
    return _out(_g()._make("MatrixBandPart", name or "MatrixBandPart", (_t(input),),
                           {"num_lower": ("int", lo), "num_upper": ("int", up)}))


# --- linear algebra (src/graph/ops_linalg.c) ---

def _float_input(x, op, param="input"):
    tf = _tf()
    x = _t(x)
    if x.dtype not in (tf.float16, tf.float32, tf.float64):
        raise TypeError(f"Value passed to parameter '{param}' has DataType {x.dtype.name} not in "
                        "list of allowed values: float64, float32, float16")
    return x


def matrix_inverse(input, adjoint=False, name=None):
    """The inverse of each inner square matrix (of its adjoint when adjoint)."""
    x = _float_input(input, "MatrixInverse")
    return _out(_g()._make("MatrixInverse", name or "MatrixInverse", (x,),
                           {"adjoint": ("bool", bool(adjoint))}))


def matrix_determinant(input, name=None):
    x = _float_input(input, "MatrixDeterminant")
    return _out(_g()._make("MatrixDeterminant", name or "MatrixDeterminant", (x,)))


def matrix_solve(matrix, rhs, adjoint=False, name=None):
    """X with matrix X = rhs (adjoint(matrix) X = rhs when adjoint), per batch entry."""
    a = _float_input(matrix, "MatrixSolve", "matrix")
    b = _t(rhs, a.dtype)
    return _out(_g()._make("MatrixSolve", name or "MatrixSolve", (a, b),
                           {"adjoint": ("bool", bool(adjoint))}))


def cholesky(input, name=None):
    """The lower Cholesky factor of each inner symmetric positive definite matrix (its lower
    triangle is read)."""
    x = _float_input(input, "Cholesky")
    return _out(_g()._make("Cholesky", name or "Cholesky", (x,)))


def matrix_triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """X with T X = rhs, T matrix's lower (or upper) triangle (adjoint: T^T X = rhs)."""
    tf = _tf()
    with tf.name_scope(name or "triangular_solve"):
        a = _float_input(matrix, "MatrixTriangularSolve", "matrix")
        b = _t(rhs, a.dtype)
        return _out(_g()._make("MatrixTriangularSolve", "MatrixTriangularSolve", (a, b),
                               {"lower": ("bool", bool(lower)),
                                "adjoint": ("bool", bool(adjoint))}))


def _logdet(matrix, name=None):
    """log(det(matrix)) of Hermitian positive definite matrices: 2 * sum(log(diag(chol)))."""
    tf = _tf()
    with tf.name_scope(name or "logdet"):
        c = cholesky(matrix)
        return 2.0 * tf.reduce_sum(tf.log(matrix_diag_part(c)), axis=[-1])


def _adjoint(matrix, name=None):
    return matrix_transpose(matrix, name=name or "adjoint")


def _batch_matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
                  a_is_sparse=False, b_is_sparse=False, name=None):
    """tf.linalg.matmul: MatMul for matrices, BatchMatMul for batches of them (the same batch
    dims)."""
    tf = _tf()
    if a_is_sparse or b_is_sparse:
        raise ValueError("matmul: rill has no sparse matmul (a_is_sparse / b_is_sparse)")
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    ta, tb = bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b)
    a, b = _t(a), _t(b)
    if (a.shape.ndims or 0) <= 2 and (b.shape.ndims or 0) <= 2 and a.shape.ndims is not None \
            and b.shape.ndims is not None:
        return tf.matmul(a, b, transpose_a=ta, transpose_b=tb, name=name)
    return _out(_g()._make("BatchMatMul", name or "MatMul", (a, b),
                           {"adj_x": ("bool", ta), "adj_y": ("bool", tb)}))


def _no_k(k, fn):
    kk = _static_ints(k, "k", fn)
    if kk != [0]:
        raise ValueError(f"{fn}: rill supports only the main diagonal (k=0), got k={k}")


def matrix_diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0,
                align="RIGHT_LEFT"):
    """[..., n] diagonals -> [..., n, n] matrices with them on the main diagonal."""
    tf = _tf()
    _no_k(k, "matrix_diag")
    if align not in ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"):
        raise ValueError(f"matrix_diag: bad align {align!r}")
    with tf.name_scope(name or "diag"):
        d = _t(diagonal)
        dd = _dims(d)
        if dd is None or not dd:
            raise ValueError("Shape must be at least rank 1 for 'MatrixDiag'")
        n = _shape_of(d)[-1]
        rows = n if num_rows in (-1, None) else int(num_rows)
        cols = n if num_cols in (-1, None) else int(num_cols)
        if isinstance(n, int) and (rows < n or cols < n or (rows != n and cols != n)):
            raise tf.errors.InvalidArgumentError(
                None, None, f"The number of rows and columns must be at least the diagonal's "
                f"length ({n}) and one of them equal to it: got {rows}, {cols}")
        pv = _t(padding_value, d.dtype)
        if isinstance(n, int):
            if cols > n:
                d = tf.pad(d, [[0, 0]] * (len(dd) - 1) + [[0, cols - n]])
            mask = tf.constant(_np.eye(rows, cols, dtype=bool))
        else:
            i, j = _index_grid(n, n)
            mask = tf.equal(i, j)
        return tf.where_v2(mask, tf.expand_dims(d, -2), pv)


def matrix_diag_part(input, name="diag_part", k=0, padding_value=0, align="RIGHT_LEFT"):
    """[..., m, n] matrices -> their main diagonals [..., min(m, n)]."""
    tf = _tf()
    _no_k(k, "matrix_diag_part")
    with tf.name_scope(name or "diag_part"):
        x = _t(input)
        m, n, r = _mn(x, "MatrixDiagPart")
        if not (isinstance(m, int) and isinstance(n, int)):
            raise ValueError("matrix_diag_part: rill needs the static matrix dims")
        q = min(m, n)
        xs = x[..., :q, :q] if (m, n) != (q, q) else x
        mask = tf.constant(_np.eye(q, dtype=bool))
        return tf.reduce_sum(tf.where_v2(mask, xs, tf.zeros_like(xs)), -1)


def matrix_set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT"):
    """input with its main diagonals replaced by diagonal [..., min(m, n)]."""
    tf = _tf()
    _no_k(k, "matrix_set_diag")
    with tf.name_scope(name or "set_diag"):
        x = _t(input)
        d = _t(diagonal, x.dtype)
        m, n, _ = _mn(x, "MatrixSetDiag")
        if not (isinstance(m, int) and isinstance(n, int)):
            raise ValueError("matrix_set_diag: rill needs the static matrix dims")
        q = min(m, n)
        dd = _dims(d)
        if dd is not None and dd and dd[-1] is not None and dd[-1] != q:
            raise ValueError(f"Dimensions must be equal, but are {q} and {dd[-1]} for "
                             f"'MatrixSetDiag'")
        full = matrix_diag(d, num_rows=m, num_cols=n) if (m, n) != (q, q) else matrix_diag(d)
        mask = tf.constant(_np.eye(m, n, dtype=bool))
        return tf.where_v2(mask, full, x)


def diag(diagonal, name=None):
    """A rank-2k tensor with diagonal (rank k) on its diagonal: out[i.., i..] = diagonal[i..]."""
    tf = _tf()
    with tf.name_scope(name or "Diag"):
        d = _t(diagonal)
        dd = _dims(d)
        if dd is None or any(v is None for v in dd):
            raise ValueError("diag: rill needs the static shape of diagonal")
        if not dd:
            raise ValueError(f"Shape must be at least rank 1 but is rank 0 for "
                             f"'{name or 'Diag'}' (op: 'Diag') with input shapes: [].")
        flat = tf.reshape(d, [-1])
        return tf.reshape(matrix_diag(flat), dd + dd)


def diag_part(input, name=None):
    """The inverse of diag: a rank-2k tensor's diagonal (rank k)."""
    tf = _tf()
    with tf.name_scope(name or "DiagPart"):
        x = _t(input)
        dd = _dims(x)
        if dd is None or any(v is None for v in dd):
            raise ValueError("diag_part: rill needs the static shape of input")
        if not dd or len(dd) % 2:
            raise ValueError(f"Input must have even rank <= 8, input rank is {len(dd)} for "
                             f"'{name or 'DiagPart'}' (op: 'DiagPart')")
        h = len(dd) // 2
        if dd[:h] != dd[h:]:
            raise ValueError(f"Dimensions must be equal: the first half of the shape {dd} must "
                             f"equal the second for '{name or 'DiagPart'}' (op: 'DiagPart')")
        k = int(_np.prod(dd[:h]))
        return tf.reshape(matrix_diag_part(tf.reshape(x, [k, k])), dd[:h])


def trace(x, name=None):
    """The sum of each inner matrix's main diagonal."""
    tf = _tf()
    with tf.name_scope(name or "Trace"):
        p = matrix_diag_part(_t(x))
    return tf.reduce_sum(p, [-1], name=name or "Trace")


# --- space / depth / batch ---

def _static_dims(x, fn):
    d = _dims(x)
    if d is None or any(v is None for v in d):
        raise ValueError(f"{fn}: rill needs the static shape of its input, got {x.shape}")
    return d


def _block(block_size, fn):
    b = _static_ints(block_size, "block_size", fn)[0]
    if b < 2:
        raise ValueError(f"Value for attr 'block_size' of {b} must be at least minimum 2")
    return b


def space_to_depth(input, block_size, name=None, data_format="NHWC"):
    """Each block_size x block_size spatial block moved into the depth dim."""
    tf = _tf()
    b = _block(block_size, "SpaceToDepth")
    if data_format != "NHWC":
        raise ValueError(f"SpaceToDepth: rill supports data_format NHWC only, got "
                         f"{data_format!r}")
    with tf.name_scope(name or "SpaceToDepth"):
        x = _t(input)
        n, h, w, c = _static_dims4(x, "SpaceToDepth")
        for v in (h, w):
            if v % b:
                raise ValueError(f"Dimension size must be evenly divisible by {b} but is {v} "
                                 f"for '{name or 'SpaceToDepth'}' (op: 'SpaceToDepth') with "
                                 f"input shapes: {x.shape}.")
        y = tf.reshape(x, [n, h // b, b, w // b, b, c])
        y = tf.transpose(y, [0, 1, 3, 2, 4, 5])
        return tf.reshape(y, [n, h // b, w // b, b * b * c])


def _static_dims4(x, fn):
    d = _static_dims(x, fn)
    if len(d) != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {len(d)} for '{fn}' (op: '{fn}') "
                         f"with input shapes: {x.shape}.")
    return d


def depth_to_space(input, block_size, name=None, data_format="NHWC"):
    """The inverse of space_to_depth: depth moved into block_size x block_size blocks."""
    tf = _tf()
    b = _block(block_size, "DepthToSpace")
    if data_format != "NHWC":
        raise ValueError(f"DepthToSpace: rill supports data_format NHWC only, got "
                         f"{data_format!r}")
    with tf.name_scope(name or "DepthToSpace"):
        x = _t(input)
        n, h, w, c = _static_dims4(x, "DepthToSpace")
        if c % (b * b):
            raise ValueError(f"Dimension size must be evenly divisible by {b * b} but is {c} for "
                             f"'{name or 'DepthToSpace'}' (op: 'DepthToSpace') with input "
                             f"shapes: {x.shape}.")
        y = tf.reshape(x, [n, h, w, b, b, c // (b * b)])
        y = tf.transpose(y, [0, 1, 3, 2, 4, 5])
        return tf.reshape(y, [n, h * b, w * b, c // (b * b)])


def _pairs(v, m, what, fn):
    a = _np.asarray(_static_ints(v, what, fn) if _np.size(v) else [], _np.int64)
    if a.size != 2 * m:
        raise ValueError(f"{fn}: {what} must have shape [{m}, 2], got {_np.shape(v)}")
    return a.reshape(m, 2)


def space_to_batch_nd(input, block_shape, paddings, name=None):
    """Spatial dims 1..M zero-padded, cut into block_shape blocks, the blocks moved into the
    batch dim."""
    tf = _tf()
    bs = _static_ints(block_shape, "block_shape", "SpaceToBatchND")
    m = len(bs)
    with tf.name_scope(name or "SpaceToBatchND"):
        x = _t(input)
        d = _static_dims(x, "SpaceToBatchND")
        if len(d) < m + 1:
            raise ValueError(f"input rank should be >= {m + 1} instead of {len(d)}")
        p = _pairs(paddings, m, "paddings", "SpaceToBatchND")
        if (p < 0).any() or any(v < 1 for v in bs):
            raise ValueError("SpaceToBatchND: paddings must be non-negative and block_shape "
                             "positive")
        padded = [d[1 + i] + int(p[i, 0]) + int(p[i, 1]) for i in range(m)]
        for i in range(m):
            if padded[i] % bs[i]:
                raise ValueError(f"padded_shape[{i}]={padded[i]} is not divisible by "
                                 f"block_shape[{i}]={bs[i]}")
        rest = d[1 + m:]
        y = x
        if p.any():
            y = tf.pad(x, [[0, 0]] + p.tolist() + [[0, 0]] * len(rest))
        shp = [d[0]]
        for i in range(m):
            shp += [padded[i] // bs[i], bs[i]]
        y = tf.reshape(y, shp + rest)
        perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + \
            list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
        y = tf.transpose(y, perm)
        return tf.reshape(y, [d[0] * int(_np.prod(bs))] +
                          [padded[i] // bs[i] for i in range(m)] + rest)


def batch_to_space_nd(input, block_shape, crops, name=None):
    """The inverse of space_to_batch_nd: batch blocks moved back into the spatial dims, then
    cropped."""
    tf = _tf()
    bs = _static_ints(block_shape, "block_shape", "BatchToSpaceND")
    m = len(bs)
    with tf.name_scope(name or "BatchToSpaceND"):
        x = _t(input)
        d = _static_dims(x, "BatchToSpaceND")
        if len(d) < m + 1:
            raise ValueError(f"input rank should be >= {m + 1} instead of {len(d)}")
        c = _pairs(crops, m, "crops", "BatchToSpaceND")
        if (c < 0).any() or any(v < 1 for v in bs):
            raise ValueError("BatchToSpaceND: crops must be non-negative and block_shape "
                             "positive")
        prod = int(_np.prod(bs))
        if d[0] % prod:
            raise ValueError(f"Input batch dimension ({d[0]}) is not divisible by product of "
                             f"block sizes ({prod})")
        nb = d[0] // prod
        sp = d[1:1 + m]
        rest = d[1 + m:]
        for i in range(m):
            if c[i, 0] + c[i, 1] > sp[i] * bs[i]:
                raise ValueError(f"Negative output dimension size caused by too large crops at "
                                 f"dimension {i + 1}")
        y = tf.reshape(x, bs + [nb] + sp + rest)
        perm = [m]
        for i in range(m):
            perm += [m + 1 + i, i]
        perm += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
        y = tf.transpose(y, perm)
        full = [sp[i] * bs[i] for i in range(m)]
        y = tf.reshape(y, [nb] + full + rest)
        if c.any():
            begin = [0] + [int(c[i, 0]) for i in range(m)] + [0] * len(rest)
            size = [-1] + [full[i] - int(c[i, 0] + c[i, 1]) for i in range(m)] + \
                [-1] * len(rest)
            y = tf.slice(y, begin, size)
        return y


def space_to_batch(input, paddings, block_size=None, name=None, block_shape=None):
    if block_size is None:
        block_size = block_shape
    if block_size is None:
        raise TypeError("space_to_batch() missing required argument 'block_size'")
    b = _block(block_size, "SpaceToBatch")
    return space_to_batch_nd(input, [b, b], paddings, name=name or "SpaceToBatchND")


def batch_to_space(input, crops, block_size, name=None, block_shape=None):
    if block_size is None:
        block_size = block_shape
    b = _block(block_size, "BatchToSpace")
    return batch_to_space_nd(input, [b, b], crops, name=name or "BatchToSpaceND")


def required_space_to_batch_paddings(input_shape, block_shape, base_paddings=None, name=None):
    """(paddings, crops) that make input_shape + base_paddings divisible by block_shape (int32
    constants, from the static values)."""
    tf = _tf()
    ishape = _np.asarray(_static_ints(input_shape, "input_shape",
                                      "required_space_to_batch_paddings"))
    bs = _np.asarray(_static_ints(block_shape, "block_shape", "required_space_to_batch_paddings"))
    if ishape.shape != bs.shape:
        raise ValueError(f"Shapes {list(ishape.shape)} and {list(bs.shape)} are incompatible")
    m = len(bs)
    if base_paddings is None:
        base = _np.zeros((m, 2), _np.int64)
    else:
        base = _pairs(base_paddings, m, "base_paddings", "required_space_to_batch_paddings")
    start, end0 = base[:, 0], base[:, 1]
    full = ishape + start + end0
    extra = (bs - full % bs) % bs
    pad = _np.stack([start, end0 + extra], 1).astype(_np.int32)
    crops = _np.stack([_np.zeros_like(extra), extra], 1).astype(_np.int32)
    with tf.name_scope(name or "required_space_to_batch_paddings"):
        return (tf.constant(pad, tf.int32, name="paddings"),
                tf.constant(crops, tf.int32, name="crops"))


def extract_image_patches(images, ksizes=None, strides=None, rates=None, padding=None, name=None,
                          sizes=None):
    """[batch, out_rows, out_cols, kh * kw * depth]: each output position's kh x kw patch
    (dilated by rates, strided by strides; SAME pads with zeros as convolutions do), gathered
    from the flattened image."""
    tf = _tf()
    if ksizes is None:
        ksizes = sizes
    elif sizes is not None:
        raise ValueError("Cannot specify both 'ksizes' and its deprecated alias 'sizes'.")
    if ksizes is None or strides is None or rates is None or padding is None:
        raise TypeError("extract_image_patches() needs ksizes, strides, rates and padding")
    ks = _static_ints(ksizes, "ksizes", "ExtractImagePatches")
    st = _static_ints(strides, "strides", "ExtractImagePatches")
    rt = _static_ints(rates, "rates", "ExtractImagePatches")
    for nm, v in (("ksizes", ks), ("strides", st), ("rates", rt)):
        if len(v) != 4 or v[0] != 1 or v[3] != 1:
            raise tf.errors.InvalidArgumentError(
                None, None, f"{nm} must be 4-D with [1, ?, ?, 1]" if len(v) == 4 else
                f"Attr {nm} has {len(v)} values, must be 4")
    pad = str(padding).upper()
    if pad not in ("SAME", "VALID"):
        raise ValueError(f"padding must be SAME or VALID, got {padding!r}")
    with tf.name_scope(name or "ExtractImagePatches"):
        x = _t(images)
        d = _dims(x)
        if d is None or len(d) != 4:
            raise ValueError(f"Shape must be rank 4 for 'ExtractImagePatches', got {x.shape}")
        b, h, w, c = d
        if h is None or w is None or c is None:
            raise ValueError("extract_image_patches: rill needs the static rows, cols and depth")
        kh, kw = ks[1], ks[2]
        ekh, ekw = (kh - 1) * rt[1] + 1, (kw - 1) * rt[2] + 1
        if pad == "VALID":
            oh, ow = (h - ekh) // st[1] + 1, (w - ekw) // st[2] + 1
            pt = pl = 0
        else:
            oh, ow = -(-h // st[1]), -(-w // st[2])
            pt = max((oh - 1) * st[1] + ekh - h, 0) // 2
            pl = max((ow - 1) * st[2] + ekw - w, 0) // 2
        oh, ow = max(oh, 0), max(ow, 0)
        # index into [h * w + 1] (the last: a zero row for outside positions)
        rr = _np.arange(oh)[:, None, None, None] * st[1] - pt + \
            _np.arange(kh)[None, None, :, None] * rt[1]
        cc = _np.arange(ow)[None, :, None, None] * st[2] - pl + \
            _np.arange(kw)[None, None, None, :] * rt[2]
        inside = (rr >= 0) & (rr < h) & (cc >= 0) & (cc < w)
        idx = _np.where(inside, rr * w + cc, h * w).astype(_np.int32)  # [oh, ow, kh, kw]
        flat = _reshape(x, [_shape_of(x)[0], h * w, c])
        zrow = tf.zeros_like(flat[:, :1, :])
        flat = tf.concat([flat, zrow], 1)
        g = tf.gather(flat, tf.constant(idx.reshape(-1)), axis=1)
        return _reshape(g, [_shape_of(x)[0], oh, ow, kh * kw * c])


# --- broadcast shapes ---

def broadcast_static_shape(shape_x, shape_y):
    """The TensorShape numpy broadcasting gives two TensorShapes."""
    tf = _tf()
    a, b = tf.TensorShape(shape_x), tf.TensorShape(shape_y)
    if a.ndims is None or b.ndims is None:
        return tf.TensorShape(None)
    da, db = [x for x in a.as_list()], [x for x in b.as_list()]
    n = max(len(da), len(db))
    da, db = [1] * (n - len(da)) + da, [1] * (n - len(db)) + db
    out = []
    for x, y in zip(da, db):
        if x is None or y is None:
            k = x if y is None else y
            out.append(None if k is None or k == 1 else k)
        elif x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        else:
            raise ValueError(f"Incompatible shapes for broadcasting. Two shapes are compatible "
                             f"if for each dimension pair they are either equal or one of them "
                             f"is 1. Received: {a} and {b}.")
    return tf.TensorShape(out)


def broadcast_dynamic_shape(shape_x, shape_y):
    """The shape (an int vector) numpy broadcasting gives two shape vectors: each pair of dims
    gives the other one where one is 1. Shapes that do not broadcast fail at run time with
    TF's 'Incompatible shapes' (an Add of two zero-filled tensors of the two shapes checks)."""
    tf = _tf()
    sx, sy = _t(shape_x), _t(shape_y)
    if sx.dtype not in (tf.int32, tf.int64) or sx.dtype != sy.dtype:
        raise TypeError(f"broadcast_dynamic_shape: both shapes must be int32 or int64 of one "
                        f"dtype, got {sx.dtype.name} and {sy.dtype.name}")
    nx, ny = _dims(sx), _dims(sy)
    if nx is None or ny is None or len(nx) != 1 or len(ny) != 1 or None in (nx[0], ny[0]):
        raise ValueError("broadcast_dynamic_shape: rill needs the lengths of the shape vectors")
    with tf.name_scope("BroadcastArgs"):
        n = max(nx[0], ny[0])
        one = tf.ones([n], sx.dtype)
        px = tf.concat([one[:n - nx[0]], sx], 0) if nx[0] < n else sx
        py = tf.concat([one[:n - ny[0]], sy], 0) if ny[0] < n else sy
        r = tf.where_v2(tf.equal(px, 1), py, px)
        # the check: x + y of zero-filled int8 tensors of both shapes
        chk = tf.add(tf.fill(sx, tf.constant(0, tf.int8)), tf.fill(sy, tf.constant(0, tf.int8)))
        with tf.control_dependencies([chk.op]):
            return tf.identity(r, name="BroadcastArgs")


# --- tf.linalg ---

def _band_part(input, num_lower, num_upper, name=None):
    return matrix_band_part(input, num_lower, num_upper, name=name)


linalg = _types.SimpleNamespace(
    band_part=_band_part, diag=matrix_diag, diag_part=matrix_diag_part,
    set_diag=matrix_set_diag, trace=trace, transpose=matrix_transpose,
    matrix_transpose=matrix_transpose, cross=cross, tensordot=tensordot, einsum=einsum,
    eye=eye, tensor_diag=diag, tensor_diag_part=diag_part, global_norm=global_norm,
    inv=matrix_inverse, det=matrix_determinant, solve=matrix_solve, cholesky=cholesky,
    triangular_solve=matrix_triangular_solve, logdet=_logdet, adjoint=_adjoint,
    matmul=_batch_matmul)


def _install(tf):
    """The names tf.linalg and tf.math take from the package (norm, l2_normalize) and
    tf.math's additions: divide_no_nan."""
    linalg.norm = tf.norm
    linalg.l2_normalize = tf.nn.l2_normalize
    m = tf.math
    for n, f in (("divide_no_nan", div_no_nan), ("log_sigmoid", log_sigmoid),
                 ("scalar_mul", scalar_mul), ("accumulate_n", accumulate_n)):
        if not hasattr(type(m), n) and n not in vars(m):
            setattr(m, n, f)


