"""TF 1.x's segment reductions, tensor and variable scatters, sorting, searching and routing
functions over the C ops of src/graph/ops_segment.c and ops_search.c: tf.segment_max,
tf.unsorted_segment_mean, tf.sparse_segment_sum, tf.tensor_scatter_nd_add, tf.scatter_nd_update,
tf.scatter_mul, tf.sort, tf.argsort, tf.setdiff1d, tf.searchsorted, tf.bincount,
tf.histogram_fixed_width, tf.confusion_matrix, tf.dynamic_partition, tf.dynamic_stitch,
tf.unravel_index, tf.random_crop, ...

Where TF's Python composes (unsorted_segment_mean / sqrt_n, sort / argsort over TopKV2,
unique_with_counts, histogram_fixed_width_bins, confusion_matrix over ScatterNd, batch_gather,
batch_scatter_update, random_crop) rill composes the same ops. The
sparse_segment_* functions are a gather followed by a segment reduction (TF has one kernel), so
an out-of-range index reads GatherV2's text ("indices[1] = 5 is not in [0, 3)").

Documented differences: rill needs some sizes when it builds the graph (random_crop's size,
batch_gather's batch dims), as elsewhere in rill (constant inputs are attributes)."""
import collections as _collections
import sys as _sys

import numpy as _np

__all__ = ["segment_mean", "segment_max", "segment_min", "segment_prod", "unsorted_segment_max",
           "unsorted_segment_min", "unsorted_segment_prod", "unsorted_segment_mean",
           "unsorted_segment_sqrt_n", "sparse_segment_sum", "sparse_segment_mean",
           "sparse_segment_sqrt_n", "tensor_scatter_update", "tensor_scatter_add",
           "tensor_scatter_sub", "tensor_scatter_nd_update", "tensor_scatter_nd_add",
           "tensor_scatter_nd_sub", "tensor_scatter_nd_max", "tensor_scatter_nd_min",
           "scatter_nd_update", "scatter_nd_add", "scatter_nd_sub", "scatter_mul", "scatter_div",
           "scatter_max", "scatter_min", "batch_scatter_update", "batch_gather", "sort",
           "argsort", "setdiff1d", "unique_with_counts", "invert_permutation", "searchsorted",
           "bincount", "histogram_fixed_width", "histogram_fixed_width_bins", "confusion_matrix",
           "dynamic_partition", "dynamic_stitch", "parallel_dynamic_stitch", "unravel_index",
           "random_crop"]

# tf.math has these too (added by _install)
_MATH = ["segment_mean", "segment_max", "segment_min", "segment_prod", "unsorted_segment_max",
         "unsorted_segment_min", "unsorted_segment_prod", "unsorted_segment_mean",
         "unsorted_segment_sqrt_n", "invert_permutation", "bincount", "confusion_matrix"]

ListDiff = _collections.namedtuple("ListDiff", ["out", "idx"])
UniqueWithCounts = _collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def _tf():
    return _sys.modules[__package__]


def _g():
    return _tf().get_default_graph()


def _t(x, dtype=None):
    return _tf().convert_to_tensor(x, dtype=dtype)


def _idx(x):
    """An index tensor: int32/int64 kept, Python ints as int32 (TF's default)."""
    tf = _tf()
    if isinstance(x, (tf.Tensor, tf.Variable)):
        return _t(x)
    a = _np.asarray(x)
    if a.dtype.kind not in "iu":
        raise TypeError(f"Value passed to parameter 'indices' has DataType {a.dtype} not in list "
                        "of allowed values: int32, int64")
    keep64 = isinstance(x, (_np.ndarray, _np.generic)) and a.dtype == _np.int64
    return _t(a.astype(_np.int64 if keep64 else _np.int32))


def _num(x):
    """num_segments and similar int scalars: a tensor kept, a Python int as int32."""
    if isinstance(x, (_tf().Tensor, _tf().Variable)):
        return _t(x)
    return _t(_np.asarray(x, dtype=_np.int32))


def _op(type, name, inputs, attrs=None):
    return _g()._make(type, name, tuple(inputs), attrs or {})


def _out(type, name, inputs, attrs=None):
    return _op(type, name or type, inputs, attrs).outputs[0]


def _ndims(x):
    s = x.shape
    return None if s.ndims is None else s.ndims


# --- segment reductions ---

def segment_mean(data, segment_ids, name=None):
    return _out("SegmentMean", name, [_t(data), _idx(segment_ids)])


def segment_max(data, segment_ids, name=None):
    return _out("SegmentMax", name, [_t(data), _idx(segment_ids)])


def segment_min(data, segment_ids, name=None):
    return _out("SegmentMin", name, [_t(data), _idx(segment_ids)])


def segment_prod(data, segment_ids, name=None):
    return _out("SegmentProd", name, [_t(data), _idx(segment_ids)])


def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    return _out("UnsortedSegmentMax", name, [_t(data), _idx(segment_ids), _num(num_segments)])


def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    return _out("UnsortedSegmentMin", name, [_t(data), _idx(segment_ids), _num(num_segments)])


def unsorted_segment_prod(data, segment_ids, num_segments, name=None):
    return _out("UnsortedSegmentProd", name, [_t(data), _idx(segment_ids), _num(num_segments)])


def _segment_n(tf, data, ids, num_segments):
    """TF's _unsorted_segment_N: each segment's row count (at least 1), shaped to broadcast
    against the summed data."""
    ones = tf.cast(tf.ones_like(ids), data.dtype)
    n = tf.unsorted_segment_sum(ones, ids, num_segments)
    rd, ri = _ndims(data), _ndims(ids)
    if rd is None or ri is None:
        raise ValueError("unsorted_segment_mean: rill needs the ranks of data and segment_ids")
    n = tf.reshape(n, [-1] + [1] * (rd - ri))
    return tf.maximum(n, tf.cast(1, data.dtype))


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    tf = _tf()
    with tf.name_scope(name or "UnsortedSegmentMean"):
        data, ids = _t(data), _idx(segment_ids)
        n = _segment_n(tf, data, ids, num_segments)
        return tf.unsorted_segment_sum(data, ids, num_segments) / n


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    tf = _tf()
    with tf.name_scope(name or "UnsortedSegmentSqrtN"):
        data, ids = _t(data), _idx(segment_ids)
        n = _segment_n(tf, data, ids, num_segments)
        return tf.unsorted_segment_sum(data, ids, num_segments) / tf.sqrt(n)


def _sparse_segment(kind, data, indices, segment_ids, name, num_segments):
    tf = _tf()
    default = {"sum": "SparseSegmentSum", "mean": "SparseSegmentMean",
               "sqrt_n": "SparseSegmentSqrtN"}[kind]
    if num_segments is not None:
        default += "WithNumSegments"
    with tf.name_scope(name or default):
        data = _t(data)
        ids = _idx(segment_ids)
        rows = tf.gather(data, _idx(indices))

        def seg(x):
            if num_segments is not None:
                return tf.unsorted_segment_sum(x, ids, num_segments)
            return tf.segment_sum(x, ids)
        total = seg(rows)
        if kind == "sum":
            return total
        n = seg(tf.cast(tf.ones_like(ids), data.dtype))
        n = tf.maximum(n, tf.cast(1, data.dtype))
        rd = _ndims(data)
        if rd is None:
            raise ValueError(f"sparse_segment_{kind}: rill needs the rank of data")
        n = tf.reshape(n, [-1] + [1] * (rd - 1))
        return total / (n if kind == "mean" else tf.sqrt(n))


def sparse_segment_sum(data, indices, segment_ids, name=None, num_segments=None,
                       sparse_gradient=False):
    del sparse_gradient  # the gradient is dense in rill either way (same values)
    return _sparse_segment("sum", data, indices, segment_ids, name, num_segments)


def sparse_segment_mean(data, indices, segment_ids, name=None, num_segments=None,
                        sparse_gradient=False):
    del sparse_gradient
    return _sparse_segment("mean", data, indices, segment_ids, name, num_segments)


def sparse_segment_sqrt_n(data, indices, segment_ids, name=None, num_segments=None,
                          sparse_gradient=False):
    del sparse_gradient
    return _sparse_segment("sqrt_n", data, indices, segment_ids, name, num_segments)


# --- tensor scatters ---

def _tensor_scatter(type, tensor, indices, updates, name):
    t = _t(tensor)
    return _out(type, name, [t, _idx(indices), _t(updates, t.dtype)])


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    return _tensor_scatter("TensorScatterUpdate", tensor, indices, updates, name)


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    return _tensor_scatter("TensorScatterAdd", tensor, indices, updates, name)


def tensor_scatter_nd_sub(tensor, indices, updates, name=None):
    return _tensor_scatter("TensorScatterSub", tensor, indices, updates, name)


def tensor_scatter_nd_max(tensor, indices, updates, name=None):
    return _tensor_scatter("TensorScatterMax", tensor, indices, updates, name)


def tensor_scatter_nd_min(tensor, indices, updates, name=None):
    return _tensor_scatter("TensorScatterMin", tensor, indices, updates, name)


tensor_scatter_update = tensor_scatter_nd_update
tensor_scatter_add = tensor_scatter_nd_add
tensor_scatter_sub = tensor_scatter_nd_sub


# --- scatters on variables ---

def _scatter(type, ref, indices, updates, name):
    tf = _tf()
    if not isinstance(ref, tf.Variable):
        raise TypeError(f"'ref' of {type} must be a tf.Variable, got {type(ref).__name__}")
    return _out(type, name, [ref.value(), _idx(indices), _t(updates, ref.dtype)])


def scatter_nd_update(ref, indices, updates, use_locking=True, name=None):
    del use_locking  # rill's updates always hold the variable's lock
    return _scatter("ScatterNdUpdate", ref, indices, updates, name)


def scatter_nd_add(ref, indices, updates, use_locking=False, name=None):
    del use_locking
    return _scatter("ScatterNdAdd", ref, indices, updates, name)


def scatter_nd_sub(ref, indices, updates, use_locking=False, name=None):
    del use_locking
    return _scatter("ScatterNdSub", ref, indices, updates, name)


def scatter_mul(ref, indices, updates, use_locking=False, name=None):
    del use_locking
    return _scatter("ScatterMul", ref, indices, updates, name)


def scatter_div(ref, indices, updates, use_locking=False, name=None):
    del use_locking
    return _scatter("ScatterDiv", ref, indices, updates, name)


def scatter_max(ref, indices, updates, use_locking=False, name=None):
    del use_locking
    return _scatter("ScatterMax", ref, indices, updates, name)


def scatter_min(ref, indices, updates, use_locking=False, name=None):
    del use_locking
    return _scatter("ScatterMin", ref, indices, updates, name)


def _static_dims(x, what, n):
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is None or any(d is None for d in dims[:n]):
        raise ValueError(f"{what}: rill needs the leading {n} dims of {x.name} when it builds "
                         f"the graph, got shape {x.shape}")
    return dims


def batch_scatter_update(ref, indices, updates, use_locking=True, name=None):
    """TF's: ScatterNdUpdate with the leading dims' coordinates prepended to indices."""
    tf = _tf()
    with tf.name_scope(name or "BatchScatterUpdate"):
        indices = _idx(indices)
        r = _ndims(indices)
        if r is None:
            raise ValueError("batch_gather does not allow indices with unknown shape.")
        dims = _static_dims(indices, "batch_scatter_update", r)
        nd = tf.expand_dims(indices, axis=-1)
        parts = []
        for d in range(r - 1):
            shape = [1] * (r + 1)
            shape[d] = dims[d]
            rng = _np.arange(dims[d]).reshape(shape).astype(indices.dtype.as_numpy_dtype)
            parts.append(_t(rng) * tf.ones_like(nd))
        parts.append(nd)
        final = tf.concat(parts, axis=-1)
        return scatter_nd_update(ref, final, updates, use_locking=use_locking)


def batch_gather(params, indices, name=None):
    """TF's _batch_gather with batch_dims = rank(indices) - 1: the batch dims folded into the
    gathered axis."""
    tf = _tf()
    with tf.name_scope(name or "BatchGather"):
        indices = _idx(indices)
        params = _t(params)
        r = _ndims(indices)
        if r is None:
            raise ValueError("batch_gather does not allow indices with unknown shape.")
        b = r - 1
        if b == 0:
            return tf.gather(params, indices)
        pd = _static_dims(params, "batch_gather", b + 1)
        idims = _static_dims(indices, "batch_gather", b)
        if pd[:b] != idims[:b]:
            raise ValueError(f"batch_gather: params.shape[:{b}] = {pd[:b]} and "
                             f"indices.shape[:{b}] = {idims[:b]} must match")
        nb = int(_np.prod(pd[:b]))
        n = pd[b]
        offs = (_np.arange(nb) * n).reshape(idims[:b] + [1]).astype(
            indices.dtype.as_numpy_dtype)
        flat = tf.reshape(params, [nb * n] + pd[b + 1:])
        return tf.gather(flat, indices + _t(offs))


# --- sorting ---

_DIRECTIONS = ("ASCENDING", "DESCENDING")


def _sort(values, axis, direction, argsort):
    tf = _tf()
    if direction not in _DIRECTIONS:
        raise ValueError(f"{direction} should be one of ASCENDING, DESCENDING")
    if isinstance(axis, (tf.Tensor, tf.Variable)) or _np.ndim(axis) != 0:
        raise ValueError("axis must be a constant scalar")
    axis = int(axis)
    values = _t(values)
    r = _ndims(values)
    if r is None:
        raise ValueError("sort: rill needs the rank of values")
    if not -r <= axis < r:
        raise ValueError(f"axis {axis} is out of range for a tensor of rank {r}")
    if axis < 0:
        axis += r
    x = values
    asc = direction == "ASCENDING"
    if asc:
        # TF negates (integers: -x - 1, which cannot overflow)
        x = tf.negative(x) - 1 if x.dtype.is_integer else tf.negative(x)
    perm = None
    if axis != r - 1:
        perm = list(range(axis)) + [r - 1] + list(range(axis + 1, r - 1)) + [axis]
        x = tf.transpose(x, perm)
    k = x.shape.as_list()[-1]
    if k is None:
        k = tf.shape(x)[-1]
    vals, idx = tf.nn.top_k(x, k)
    out = idx if argsort else vals
    if perm is not None:
        out = tf.transpose(out, perm)
    if asc and not argsort:
        out = tf.negative(out) - 1 if out.dtype.is_integer else tf.negative(out)
    return out


def sort(values, axis=-1, direction="ASCENDING", name=None):
    tf = _tf()
    with tf.name_scope(name or "sort"):
        return _sort(values, axis, direction, False)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """TopKV2 keeps equal values in their order, so every argsort is stable (TF's too)."""
    del stable
    tf = _tf()
    with tf.name_scope(name or "argsort"):
        return _sort(values, axis, direction, True)


# --- searching, counting ---

def setdiff1d(x, y, index_dtype=None, name=None):
    tf = _tf()
    x = _t(x)
    y = _t(y, x.dtype)
    op = _op("ListDiff", name or "ListDiff", [x, y],
             {"out_idx": tf._attr_type(index_dtype or tf.int32)})
    return ListDiff(op.outputs[0], op.outputs[1])


def unique_with_counts(x, out_idx=None, name=None):
    tf = _tf()
    it = tf.as_dtype(out_idx or tf.int32)
    with tf.name_scope(name or "UniqueWithCounts"):
        y, idx = tf.unique(x, out_idx=it)
        count = tf.unsorted_segment_sum(tf.ones_like(idx), idx, tf.size(y, out_type=it))
        return UniqueWithCounts(y, idx, count)


def invert_permutation(x, name=None):
    return _out("InvertPermutation", name, [_idx(x)])


def searchsorted(sorted_sequence, values, side="left", out_type=None, name=None):
    tf = _tf()
    if side not in ("left", "right"):
        raise ValueError("Argument `side` must be either 'right' or 'left'. Received: `side` = "
                         f"'{side}'.")
    seq = _t(sorted_sequence)
    vals = _t(values, seq.dtype)
    ot = tf.as_dtype(out_type or tf.int32)
    with tf.name_scope(name or "searchsorted"):
        n = seq.shape.as_list()[-1] if seq.shape.ndims else None
        m = vals.shape.as_list()[-1] if vals.shape.ndims else None
        seq2 = tf.reshape(seq, [-1, n if n is not None else tf.shape(seq)[-1]])
        vals2 = tf.reshape(vals, [-1, m if m is not None else tf.shape(vals)[-1]])
        out = _out("UpperBound" if side == "right" else "LowerBound", None, [seq2, vals2],
                   {"out_type": tf._attr_type(ot)})
        vs = vals.shape
        return tf.reshape(out, vs.as_list() if vs.is_fully_defined() else tf.shape(vals))


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=None):
    """TF's bincount_v1: the counts (or summed weights) of each value of arr; values at or above
    maxlength are dropped, negative ones are an error."""
    tf = _tf()
    dt = tf.as_dtype(dtype or tf.int32)
    with tf.name_scope("bincount"):
        arr = _t(arr)
        if not arr.dtype.is_integer or arr.dtype != tf.int32:
            arr = tf.cast(arr, tf.int32)
        nonempty = tf.cast(tf.size(arr) > 0, tf.int32)
        size = nonempty * (tf.reduce_max(arr) + 1)
        if minlength is not None:
            size = tf.maximum(_t(minlength, tf.int32), size)
        if maxlength is not None:
            size = tf.minimum(_t(maxlength, tf.int32), size)
        flat = tf.reshape(arr, [-1])
        if weights is None:
            w = _t(_np.zeros([0], dt.as_numpy_dtype))
        else:
            w = tf.reshape(_t(weights), [-1])
        return _out("Bincount", "DenseBincount", [flat, size, w])


def histogram_fixed_width_bins(values, value_range, nbins=100, dtype=None, name=None):
    tf = _tf()
    with tf.name_scope(name or "histogram_fixed_width_bins"):
        values = _t(values)
        shape = values.shape
        flat = tf.reshape(values, [-1])
        vr = _t(value_range, values.dtype)
        nb = tf.cast(_t(nbins, tf.int32), values.dtype)
        scaled = tf.truediv(flat - vr[0], vr[1] - vr[0], name="scaled_values")
        ix = tf.floor(nb * scaled, name="indices")
        ix = tf.cast(tf.clip_by_value(ix, tf.cast(0, values.dtype), nb - 1), tf.int32)
        return tf.reshape(ix, shape.as_list() if shape.is_fully_defined() else tf.shape(values))


def histogram_fixed_width(values, value_range, nbins=100, dtype=None, name=None):
    tf = _tf()
    dt = tf.as_dtype(dtype or tf.int32)
    with tf.name_scope(name or "histogram_fixed_width"):
        bins = tf.reshape(histogram_fixed_width_bins(values, value_range, nbins), [-1])
        ones = tf.cast(tf.ones_like(bins), dt)
        return tf.unsorted_segment_sum(ones, bins, _num(nbins))


def confusion_matrix(labels, predictions, num_classes=None, dtype=None, name=None, weights=None):
    """TF's: ScatterNd of ones (or weights) at [label, prediction]. A label or prediction out of
    range is ScatterNd's InvalidArgumentError."""
    tf = _tf()
    dt = tf.as_dtype(dtype or tf.int32)
    with tf.name_scope(name or "confusion_matrix"):
        labels, predictions = _t(labels), _t(predictions)
        lr, pr = _ndims(labels), _ndims(predictions)
        if lr is not None and pr is not None and lr - pr == 1 and labels.shape[-1] == 1:
            labels = tf.squeeze(labels, [-1])
        elif lr is not None and pr is not None and pr - lr == 1 and predictions.shape[-1] == 1:
            predictions = tf.squeeze(predictions, [-1])
        predictions = tf.cast(predictions, tf.int64)
        labels = tf.cast(labels, tf.int64)
        if num_classes is None:
            n = tf.maximum(tf.reduce_max(predictions), tf.reduce_max(labels)) + 1
        else:
            n = tf.cast(_t(num_classes), tf.int64)
        if weights is not None:
            weights = tf.cast(_t(weights), dt)
        shape = tf.stack([n, n])
        indices = tf.stack([labels, predictions], axis=1)
        values = tf.cast(tf.ones_like(predictions), dt) if weights is None else weights
        return tf.scatter_nd(indices, values, shape)


# --- routing ---

def dynamic_partition(data, partitions, num_partitions, name=None):
    tf = _tf()
    k = int(num_partitions)
    op = _op("DynamicPartition", name or "DynamicPartition", [_t(data), _t(partitions, tf.int32)],
             {"num_partitions": ("int", k), "num_outputs": ("int", k)})
    return list(op.outputs)


def _stitch(type, indices, data, name):
    tf = _tf()
    if len(indices) != len(data) or not indices:
        raise ValueError(f"List argument 'indices' to '{type}' Op with length {len(indices)} "
                         f"must match length {len(data)} of argument 'data'.")
    ix = [_t(i, tf.int32) for i in indices]
    ds = [_t(d) for d in data]
    if len({d.dtype for d in ds}) > 1:
        raise TypeError(f"Tensors in list passed to 'data' of '{type}' Op have types "
                        f"[{', '.join(d.dtype.name for d in ds)}] that don't all match.")
    return _out(type, name, ix + ds, {"N": ("int", len(ix))})


def dynamic_stitch(indices, data, name=None):
    return _stitch("DynamicStitch", list(indices), list(data), name)


def parallel_dynamic_stitch(indices, data, name=None):
    return _stitch("ParallelDynamicStitch", list(indices), list(data), name)


def unravel_index(indices, dims, name=None):
    ix = _idx(indices)
    return _out("UnravelIndex", name, [ix, _t(dims, ix.dtype)])


def random_crop(value, size, seed=None, name=None):
    """TF's: a uniform int32 offset per dim (random_uniform's stream and seeds, % the room
    left), then the slice, here one gather per dim (rill's slices take constant begins)."""
    tf = _tf()
    with tf.name_scope(name or "random_crop"):
        value = _t(value, None)
        if isinstance(size, (tf.Tensor, tf.Variable)):
            raise TypeError("random_crop: rill takes size as a Python list of ints")
        sz = [int(s) for s in _np.asarray(size).ravel()]
        vs = value.shape.as_list() if value.shape.ndims is not None else None
        if vs is not None:
            if len(vs) != len(sz):
                raise ValueError(f"Dimensions must be equal, but are {len(vs)} and {len(sz)}")
            if any(d is not None and d < s for d, s in zip(vs, sz)):
                raise tf.errors.InvalidArgumentError(f"Need value.shape >= size, got {vs} {sz}")
        shape = tf.shape(value)
        limit = shape - _t(_np.asarray(sz, _np.int32)) + 1
        offset = tf.random_uniform([len(sz)], dtype=tf.int32, maxval=2**31 - 1,
                                   seed=seed) % limit
        out = value
        for d, s in enumerate(sz):
            rows = offset[d] + _t(_np.arange(s, dtype=_np.int32))
            out = tf.gather(out, rows, axis=d)
        return out


def _install(tf):
    """The tf.math aliases."""
    for n in _MATH:
        setattr(tf.math, n, globals()[n])
