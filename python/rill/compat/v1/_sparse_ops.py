"""Sparse tensors and what is built on them: tf.SparseTensor, tf.SparseTensorValue,
tf.sparse_placeholder, tf.sparse_tensor_to_dense / tf.sparse.to_dense, tf.sparse_to_dense (the C
op SparseToDense, src/graph/ops_sparse.c), tf.nn.embedding_lookup_sparse and
tf.nn.safe_embedding_lookup_sparse, tf.nn.ctc_greedy_decoder (CTCGreedyDecoder) and
tf.nn.ctc_unique_labels, and the unigram candidate samplers (FixedUnigramCandidateSampler,
LearnedUnigramCandidateSampler).

A SparseTensor is three tensors (indices int64 [N, rank], values [N], dense_shape int64 [rank]);
Session.run fetches it as a SparseTensorValue and feeds it from one (or an (indices, values,
dense_shape) tuple).

embedding_lookup_sparse is TF's composition (unique ids, embedding_lookup, then segment sums or
the sparse_segment_* reductions). safe_embedding_lookup_sparse computes what TF's composition
(sparse_reshape, sparse_retain, sparse_fill_empty_rows, embedding_lookup_sparse) computes, with
unsorted segment sums over the rows of the flattened leading dims: ids < 0 (and, unless the
combiner is 'sum', weights <= 0) are dropped, an empty row is zeros or default_id's embedding.
ctc_unique_labels is TF's per-row unique (TF maps it over rows with map_fn) done for all rows at
once with [batch, L, L] comparisons."""
import collections as _collections
import sys as _sys
import types as _types

import numpy as _np

__all__ = ["SparseTensor", "SparseTensorValue", "sparse_placeholder", "sparse_tensor_to_dense",
           "sparse_to_dense"]
_NN = ["embedding_lookup_sparse", "safe_embedding_lookup_sparse", "ctc_greedy_decoder",
       "ctc_unique_labels", "fixed_unigram_candidate_sampler",
       "learned_unigram_candidate_sampler"]

SparseTensorValue = _collections.namedtuple("SparseTensorValue",
                                            ["indices", "values", "dense_shape"])


def _tf():
    return _sys.modules[__package__]


def _t(x, dtype=None, name=None):
    return _tf().convert_to_tensor(x, dtype=dtype, name=name)


class SparseTensor:
    """indices (int64 [N, rank]), values ([N]) and dense_shape (int64 [rank])."""

    def __init__(self, indices, values, dense_shape):
        tf = _tf()
        with tf.name_scope(None, "SparseTensor"):
            self._indices = self._int64(indices, "indices")
            self._values = values if isinstance(values, tf.Tensor) else _t(values, name="values")
            self._dense_shape = self._int64(dense_shape, "dense_shape")
        self._dense_shape_default = None
        if not isinstance(dense_shape, (tf.Tensor, tf.Variable)):  # a known value: TF's shape
            self._dense_shape_default = tf.TensorShape(
                [None if int(d) < 0 else int(d) for d in _np.asarray(dense_shape).reshape(-1)])

    @staticmethod
    def _int64(x, name):
        tf = _tf()
        if isinstance(x, tf.Variable):
            x = x.value()
        if isinstance(x, tf.Tensor):
            if x.dtype != tf.int64:
                raise TypeError(f"Tensor conversion requested dtype int64 for Tensor with dtype "
                                f"{x.dtype.name}: {x!r}")
            return x
        return _t(_np.asarray(x, dtype=_np.int64), name=name)

    @classmethod
    def from_value(cls, sparse_tensor_value):
        if isinstance(sparse_tensor_value, SparseTensor):
            return sparse_tensor_value
        return cls(sparse_tensor_value.indices, sparse_tensor_value.values,
                   sparse_tensor_value.dense_shape)

    @property
    def indices(self):
        return self._indices

    @property
    def values(self):
        return self._values

    @property
    def dense_shape(self):
        return self._dense_shape

    @property
    def op(self):
        return self._values.op

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def graph(self):
        return self._indices.graph

    @property
    def shape(self):
        tf = _tf()
        if self._dense_shape_default is not None:
            return self._dense_shape_default
        ds = self._dense_shape
        n = ds.shape.as_list()[0] if ds.shape.ndims == 1 else None
        return tf.TensorShape(None if n is None else [None] * n)

    def get_shape(self):
        return self.shape

    def eval(self, feed_dict=None, session=None):
        session = session or _tf().get_default_session()
        return session.run(self, feed_dict)

    def consumers(self):
        return []

    def __repr__(self):
        return (f"SparseTensor(indices={self._indices!r}, values={self._values!r}, "
                f"dense_shape={self._dense_shape!r})")


def _to_sparse(x, what="sp_input"):
    if isinstance(x, SparseTensorValue):
        return SparseTensor.from_value(x)
    if not isinstance(x, SparseTensor):
        raise TypeError(f"Input must be a SparseTensor.")
    return x


def sparse_placeholder(dtype, shape=None, name=None):
    """TF's: placeholders name/values ([None]), name/indices ([None, rank]) and a dense shape
    (a placeholder when shape is None, else a PlaceholderWithDefault of it, -1 for None)."""
    tf = _tf()
    shape_name = (name + "/shape") if name is not None else None
    default_shape_name = (name + "/shape_default") if name is not None else None
    if shape is None:
        rank = None
        dense_shape = tf.placeholder(tf.int64, [rank], shape_name)
        default = None
    else:
        if isinstance(shape, tf.TensorShape):
            shape = shape.as_list()
        dims = [None if d is None or (not isinstance(d, tf.Tensor) and int(d) == -1) else int(d)
                for d in shape]
        rank = len(dims)
        default = tf.TensorShape(dims)
        sv = _t(_np.asarray([-1 if d is None else d for d in dims], _np.int64),
                name=default_shape_name)
        dense_shape = tf.placeholder_with_default(sv, [rank], name=shape_name)
    result = SparseTensor(
        values=tf.placeholder(dtype, [None], (name + "/values") if name is not None else None),
        indices=tf.placeholder(tf.int64, [None, rank],
                               (name + "/indices") if name is not None else None),
        dense_shape=dense_shape)
    result._dense_shape_default = default
    return result


def _s2d(indices, output_shape, values, default_value, validate_indices, name):
    tf = _tf()
    op = tf.get_default_graph()._make(
        "SparseToDense", name or "SparseToDense", [indices, output_shape, values, default_value],
        {"validate_indices": ("bool", bool(validate_indices))})
    return op.outputs[0]


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0,
                    validate_indices=True, name=None):
    tf = _tf()
    ix = sparse_indices if isinstance(sparse_indices, tf.Tensor) else _t(sparse_indices)
    if ix.dtype not in (tf.int32, tf.int64):
        raise TypeError(f"Value passed to parameter 'sparse_indices' has DataType "
                        f"{ix.dtype.name} not in list of allowed values: int32, int64")
    if isinstance(output_shape, tf.Tensor):
        osh = output_shape
        if osh.dtype != ix.dtype:
            raise TypeError(f"Input 'output_shape' of 'SparseToDense' Op has type "
                            f"{osh.dtype.name} that does not match type {ix.dtype.name} of "
                            "argument 'sparse_indices'.")
    else:
        osh = _t(_np.asarray(output_shape, ix.dtype.as_numpy_dtype))
    vals = sparse_values if isinstance(sparse_values, tf.Tensor) else _t(sparse_values)
    if isinstance(default_value, tf.Tensor):
        dv = default_value
        if dv.dtype != vals.dtype:
            raise TypeError(f"Input 'default_value' of 'SparseToDense' Op has type "
                            f"{dv.dtype.name} that does not match type {vals.dtype.name} of "
                            "argument 'sparse_values'.")
    else:
        npdt = vals.dtype.as_numpy_dtype
        a = _np.asarray(default_value)
        if vals.dtype.is_integer and a.dtype.kind == "f" and not _np.all(a == _np.round(a)):
            raise TypeError(f"Expected {vals.dtype.name} passed to parameter 'default_value' of "
                            f"op 'SparseToDense', got {default_value!r} of type "
                            f"'{type(default_value).__name__}' instead. Error: Expected "
                            f"{vals.dtype.name}, but got {default_value!r} of type "
                            f"'{type(default_value).__name__}'.")
        dv = _t(a.astype(npdt))
    return _s2d(ix, osh, vals, dv, validate_indices, name)


def sparse_tensor_to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    sp = _to_sparse(sp_input)
    tf = _tf()
    if default_value is None:
        dv = tf.zeros([], dtype=sp.dtype)
    else:
        dv = default_value if isinstance(default_value, tf.Tensor) else _t(
            _np.asarray(default_value, sp.dtype.as_numpy_dtype))
    return _s2d(sp.indices, sp.dense_shape, sp.values, dv, validate_indices, name)


def _sparse_to_dense_v2(sp_input, default_value=None, validate_indices=True, name=None):
    """tf.sparse.to_dense."""
    return sparse_tensor_to_dense(sp_input, default_value, validate_indices, name)


# --- embeddings over sparse ids ---

def _div_no_nan(tf, x, y):
    """x / y, 0 where y is 0 (TF's DivNoNan, broadcasting y)."""
    zero = tf.cast(tf.equal(y, tf.zeros_like(y)), y.dtype)
    return x / (y + zero) * (1 - zero)

def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy="mod", name=None,
                            combiner=None, max_norm=None, allow_fast_lookup=False):
    tf = _tf()
    from ._embedding_ops import embedding_lookup
    del allow_fast_lookup  # the same values either way
    if combiner is None:
        combiner = "mean"
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    if not isinstance(params, (list, tuple)):
        params = [params]
    params = list(params)
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError(f"sp_ids must be SparseTensor, got {type(sp_ids)}")
    ignore_weights = sp_weights is None
    if not ignore_weights:
        if not isinstance(sp_weights, SparseTensor):
            raise TypeError(f"sp_weights must be either None or SparseTensor, got "
                            f"{type(sp_weights)}")
        sp_ids.values.get_shape().assert_is_compatible_with(sp_weights.values.get_shape())
        sp_ids.indices.get_shape().assert_is_compatible_with(sp_weights.indices.get_shape())
        sp_ids.dense_shape.get_shape().assert_is_compatible_with(
            sp_weights.dense_shape.get_shape())
    with tf.name_scope(name or "embedding_lookup_sparse"):
        segment_ids = tf.cast(sp_ids.indices[:, 0], tf.int32)
        ids, idx = tf.unique(sp_ids.values)
        embeddings = embedding_lookup(params, ids, partition_strategy=partition_strategy,
                                      max_norm=max_norm)
        if ignore_weights:
            fn = {"sum": tf.sparse_segment_sum, "mean": tf.sparse_segment_mean,
                  "sqrtn": tf.sparse_segment_sqrt_n}[combiner]
            return fn(embeddings, idx, segment_ids)
        weights = sp_weights.values
        embeddings = tf.gather(embeddings, idx)
        if weights.dtype != embeddings.dtype:
            weights = tf.cast(weights, embeddings.dtype)
        nd = embeddings.shape.ndims
        if nd is None:
            raise ValueError("embedding_lookup_sparse: rill needs the rank of params")
        weights = tf.reshape(weights, [-1] + [1] * (nd - 1))
        embeddings = embeddings * weights
        total = tf.segment_sum(embeddings, segment_ids)
        if combiner == "sum":
            return total
        if combiner == "mean":
            return _div_no_nan(tf, total, tf.segment_sum(weights, segment_ids))
        return _div_no_nan(tf, total, tf.sqrt(tf.segment_sum(tf.pow(weights, 2), segment_ids)))


def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None,
                                 combiner="mean", default_id=None, name=None,
                                 partition_strategy="div", max_norm=None,
                                 allow_fast_lookup=False):
    tf = _tf()
    from ._embedding_ops import embedding_lookup
    del allow_fast_lookup
    if embedding_weights is None:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    if not isinstance(embedding_weights, (list, tuple)):
        embedding_weights = [embedding_weights]
    embedding_weights = list(embedding_weights)
    if not embedding_weights:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    sparse_ids = _to_sparse(sparse_ids)
    if sparse_weights is not None:
        sparse_weights = _to_sparse(sparse_weights)
    with tf.name_scope(name or "embedding_lookup"):
        rank = sparse_ids.dense_shape.shape.as_list()[0] if \
            sparse_ids.dense_shape.shape.ndims == 1 else None
        if rank is None:
            raise ValueError("safe_embedding_lookup_sparse: rill needs the rank of sparse_ids")
        ds = sparse_ids.dense_shape
        # rows of the flattened leading dims
        row = sparse_ids.indices[:, rank - 2]
        stride = ds[rank - 2]
        for d in range(rank - 3, -1, -1):
            row = row + sparse_ids.indices[:, d] * stride
            stride = stride * ds[d]
        nrows = stride
        ids = sparse_ids.values
        valid = tf.greater_equal(ids, tf.zeros_like(ids))
        if sparse_weights is not None:
            w = sparse_weights.values
            if combiner != "sum":
                valid = tf.logical_and(valid, tf.greater(w, tf.zeros_like(w)))
        p0 = tf.convert_to_tensor(embedding_weights[0]) if not isinstance(
            embedding_weights[0], (tf.Tensor, tf.Variable)) else embedding_weights[0]
        edt = p0.dtype
        vf = tf.cast(valid, edt)
        w = vf if sparse_weights is None else tf.cast(sparse_weights.values, edt) * vf
        safe_ids = tf.where(valid, ids, tf.zeros_like(ids))
        emb = embedding_lookup(embedding_weights, safe_ids, partition_strategy=partition_strategy,
                               max_norm=max_norm)
        nd = emb.shape.ndims
        if nd is None:
            raise ValueError("safe_embedding_lookup_sparse: rill needs the rank of the weights")
        wb = tf.reshape(w, [-1] + [1] * (nd - 1))
        total = tf.unsorted_segment_sum(emb * wb, row, nrows)
        count = tf.unsorted_segment_sum(vf, row, nrows)
        if combiner == "sum":
            result = total
        else:
            den = tf.unsorted_segment_sum(w if combiner == "mean" else w * w, row, nrows)
            if combiner == "sqrtn":
                den = tf.sqrt(den)
            result = _div_no_nan(tf, total, tf.reshape(den, [-1] + [1] * (nd - 1)))
        empty = tf.equal(count, tf.zeros_like(count))
        empty_b = tf.logical_and(tf.reshape(empty, [-1] + [1] * (nd - 1)),
                                 tf.ones_like(result, dtype=tf.bool))
        if default_id is None:
            fill = tf.zeros_like(result)
        else:
            d_ids = tf.fill(tf.reshape(tf.cast(nrows, tf.int32), [1]),
                            tf.constant(int(default_id), ids.dtype))
            fill = embedding_lookup(embedding_weights, d_ids,
                                    partition_strategy=partition_strategy, max_norm=max_norm)
        result = tf.where(empty_b, fill, result)
        lead = tf.cast(ds[:rank - 1], tf.int32)
        out = tf.reshape(result, tf.concat([lead, tf.shape(result)[1:]], 0))
        return out


# --- CTC ---

def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True, blank_index=None):
    tf = _tf()
    x = _t(inputs)
    sl = _t(sequence_length)
    attrs = {"merge_repeated": ("bool", bool(merge_repeated))}
    if blank_index is not None:
        attrs["blank_index"] = ("int", int(blank_index))
    op = tf.get_default_graph()._make("CTCGreedyDecoder", "CTCGreedyDecoder", [x, sl], attrs)
    ix, val, shp, logp = op.outputs
    return [SparseTensor(ix, val, shp)], logp


def ctc_unique_labels(labels, name=None):
    """(y int64 [batch, L]: each row's unique labels in first-seen order, zero-padded;
    idx int32 [batch, L]: each label's position in y), as TF's per-row unique."""
    tf = _tf()
    with tf.name_scope(name or "ctc_unique_labels"):
        lab = _t(labels, name="labels")
        eq = tf.equal(tf.expand_dims(lab, 2), tf.expand_dims(lab, 1))  # [B, i, j]
        r = tf.cumsum(tf.cast(tf.ones_like(lab[0]), tf.int32)) - 1  # 0 .. L-1
        before = tf.less(tf.expand_dims(r, 0), tf.expand_dims(r, 1))  # [i, j]: j < i
        seen = tf.reduce_any(tf.logical_and(eq, tf.expand_dims(before, 0)), axis=2)
        first = tf.cast(tf.logical_not(seen), tf.int32)  # [B, L]
        pos = tf.cumsum(first, axis=1) - 1  # y position of a first occurrence
        firstpos = tf.argmax(tf.cast(eq, tf.int32), axis=2, output_type=tf.int32)
        onehot = tf.cast(tf.equal(tf.expand_dims(firstpos, 2), tf.reshape(r, [1, 1, -1])),
                         tf.int32)  # [B, i, j]
        idx = tf.reduce_sum(onehot * tf.expand_dims(pos, 1), axis=2)
        # y[b, m] = the label whose first occurrence has position m
        sel = tf.logical_and(tf.equal(tf.expand_dims(pos, 1), tf.reshape(r, [1, -1, 1])),
                             tf.expand_dims(tf.cast(first, tf.bool), 1))  # [B, m, i]
        y = tf.reduce_sum(tf.cast(sel, tf.int64) * tf.expand_dims(tf.cast(lab, tf.int64), 1),
                          axis=2)
        return y, idx


# --- unigram candidate samplers ---

def _unigram_sampler(type, true_classes, num_true, num_sampled, unique, range_max, seed, name,
                     extra=None):
    from ._embedding_ops import CandidateSampler
    tf = _tf()
    tc = _t(true_classes) if isinstance(true_classes, (tf.Tensor, tf.Variable)) else _t(
        _np.asarray(true_classes, _np.int64))
    attrs = {"num_true": ("int", int(num_true)), "num_sampled": ("int", int(num_sampled)),
             "unique": ("bool", bool(unique)), "range_max": ("int", int(range_max)),
             "seed": ("int", int(seed or 0))}
    attrs.update(extra or {})
    op = tf.get_default_graph()._make(type, name or type, [tc], attrs)
    return CandidateSampler(op.outputs[0], op.outputs[1], op.outputs[2])


def fixed_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                    vocab_file="", distortion=1.0, num_reserved_ids=0,
                                    num_shards=1, shard=0, unigrams=(), seed=None, name=None):
    extra = {"vocab_file": ("string", vocab_file or ""),
             "distortion": ("float", float(distortion)),
             "num_reserved_ids": ("int", int(num_reserved_ids)),
             "num_shards": ("int", int(num_shards)), "shard": ("int", int(shard)),
             "unigrams": ("tensor", (_np.asarray(list(unigrams), _np.float32).reshape(-1),
                                     _tf().float32.enum))}
    return _unigram_sampler("FixedUnigramCandidateSampler", true_classes, num_true, num_sampled,
                            unique, range_max, seed, name, extra)


def learned_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                      seed=None, name=None):
    return _unigram_sampler("LearnedUnigramCandidateSampler", true_classes, num_true,
                            num_sampled, unique, range_max, seed, name)


def _install(tf):
    """tf.sparse (to_dense, SparseTensor, SparseTensorValue, placeholder), tf.nn's names and
    tf.random's samplers."""
    sp = getattr(tf, "sparse", None)
    if sp is None:
        sp = _types.SimpleNamespace()
        tf.sparse = sp
    sp.SparseTensor = SparseTensor
    sp.to_dense = _sparse_to_dense_v2
    sp.placeholder = sparse_placeholder
    for n in ("sum", "mean", "sqrt_n"):  # tf.sparse.segment_sum is tf.sparse_segment_sum
        if hasattr(tf, "sparse_segment_" + n):
            setattr(sp, "segment_" + n, getattr(tf, "sparse_segment_" + n))
    from . import nn
    for n in _NN:
        setattr(nn, n, globals()[n])
    rnd = getattr(tf, "random", None)
    if rnd is not None:
        rnd.fixed_unigram_candidate_sampler = fixed_unigram_candidate_sampler
        rnd.learned_unigram_candidate_sampler = learned_unigram_candidate_sampler
