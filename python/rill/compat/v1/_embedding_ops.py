"""TF 1.x's indexing ops, embeddings and sampled losses over rill's C ops (src/graph/ops_index.c):
tf.gather, gather_nd, scatter_nd, unique, segment sums, scatter_update/add/sub on variables,
tf.nn.top_k / in_top_k, tf.nn.embedding_lookup, tf.nn.nce_loss, tf.nn.sampled_softmax_loss and
the candidate samplers.

Sparse gradients: the gradient of a gather (of an embedding_lookup) is an IndexedSlicesToDense
node; the optimizers update only the rows it names (TF's IndexedSlices, see ops_index.c).

nce_loss and sampled_softmax_loss are TF's: the true and sampled logits concatenated (ConcatV2)
with their labels, then SigmoidCrossEntropyWithLogits summed per row, or the softmax
cross-entropy (SoftmaxCrossEntropyWithLogits) against stop_gradient labels."""
import collections as _collections
import sys as _sys

import numpy as _np

__all__ = ["gather", "gather_nd", "scatter_nd", "unique", "unsorted_segment_sum", "segment_sum",
           "scatter_update", "scatter_add", "scatter_sub"]
# tf.nn names (wired into nn.py)
_NN = ["top_k", "in_top_k", "embedding_lookup", "nce_loss", "sampled_softmax_loss",
       "log_uniform_candidate_sampler", "uniform_candidate_sampler",
       "compute_accidental_hits"]

TopKV2 = _collections.namedtuple("TopKV2", ["values", "indices"])
Unique = _collections.namedtuple("Unique", ["y", "idx"])
CandidateSampler = _collections.namedtuple(
    "CandidateSampler", ["sampled_candidates", "true_expected_count", "sampled_expected_count"])


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
    return _t(a.astype(_np.int64 if a.dtype == _np.int64 else _np.int32))


def _static_int(x, what):
    tf = _tf()
    if isinstance(x, tf.Tensor):
        op = x.op
        if op.type == "Const":
            return None, x
        raise TypeError(f"rill needs {what} as a Python int or a constant, got {x!r}")
    return int(x), None


def _op(type, name, inputs, attrs=None):
    return _g()._make(type, name, tuple(inputs), attrs or {})


# --- gathers and scatters ---

def gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims=0):
    """tf.gather: GatherV2 (validate_indices is ignored, as in TF: indices are always checked)."""
    del validate_indices
    if batch_dims != 0:
        raise ValueError("rill's tf.gather supports batch_dims=0 only")
    p = _t(params)
    ix = _idx(indices)
    attrs = {}
    inputs = [p, ix]
    if axis is not None:
        a, t = _static_int(axis, "axis")
        if t is not None:
            inputs.append(t)
        else:
            attrs["axis"] = ("int", a)
    return _op("GatherV2", name or "GatherV2", inputs, attrs).outputs[0]


def gather_nd(params, indices, name=None, batch_dims=0):
    if batch_dims != 0:
        raise ValueError("rill's tf.gather_nd supports batch_dims=0 only")
    return _op("GatherNd", name or "GatherNd", [_t(params), _idx(indices)]).outputs[0]


def _shape_tensor(shape, like):
    tf = _tf()
    if isinstance(shape, tf.Tensor):
        return shape
    return _t(_np.asarray(shape, dtype=like.dtype.as_numpy_dtype
                          if hasattr(like.dtype, "as_numpy_dtype") else _np.int32))


def scatter_nd(indices, updates, shape, name=None):
    ix = _idx(indices)
    u = _t(updates)
    return _op("ScatterNd", name or "ScatterNd", [ix, u, _shape_tensor(shape, ix)]).outputs[0]


def unique(x, out_idx=None, name=None):
    tf = _tf()
    attrs = {"out_idx": tf._attr_type(out_idx or tf.int32)}
    op = _op("Unique", name or "Unique", [_t(x)], attrs)
    return Unique(op.outputs[0], op.outputs[1])


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    ids = _idx(segment_ids)
    ns = num_segments if isinstance(num_segments, _tf().Tensor) else _t(
        _np.asarray(num_segments, dtype=_np.int32))
    return _op("UnsortedSegmentSum", name or "UnsortedSegmentSum",
               [_t(data), ids, ns]).outputs[0]


def segment_sum(data, segment_ids, name=None):
    return _op("SegmentSum", name or "SegmentSum", [_t(data), _idx(segment_ids)]).outputs[0]


def _scatter(type, ref, indices, updates, name):
    tf = _tf()
    if not isinstance(ref, tf.Variable):
        raise TypeError(f"'ref' of {type} must be a tf.Variable, got {_type_name(ref)}")
    u = _t(updates, ref.dtype)
    return _op(type, name or type, [ref.value(), _idx(indices), u]).outputs[0]


def _type_name(x):
    return type(x).__name__


def scatter_update(ref, indices, updates, use_locking=True, name=None):
    del use_locking
    return _scatter("ScatterUpdate", ref, indices, updates, name)


def scatter_add(ref, indices, updates, use_locking=False, name=None):
    del use_locking
    return _scatter("ScatterAdd", ref, indices, updates, name)


def scatter_sub(ref, indices, updates, use_locking=False, name=None):
    del use_locking
    return _scatter("ScatterSub", ref, indices, updates, name)


# --- tf.nn: top_k, in_top_k ---

def top_k(input, k=1, sorted=True, name=None):  # noqa: A002  (TF's argument names)
    # rill's TopKV2 always sorts: TF leaves the order unspecified for sorted=False
    kt = k if isinstance(k, _tf().Tensor) else _t(_np.int32(k))
    op = _op("TopKV2", name or "TopKV2", [_t(input), kt], {"sorted": ("bool", True)})
    return TopKV2(op.outputs[0], op.outputs[1])


def in_top_k(predictions, targets, k, name=None):
    t = _idx(targets)
    kt = k if isinstance(k, _tf().Tensor) else _t(_np.asarray(k, dtype=t.dtype.as_numpy_dtype))
    with _tf().name_scope(name or "in_top_k"):  # TF's op: in_top_k/InTopKV2
        return _op("InTopKV2", name or "InTopKV2", [_t(predictions), t, kt]).outputs[0]


# --- embeddings ---

def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """tf.nn.embedding_lookup over one variable (a GatherV2) or a list of them partitioned as
    TF's 'mod' or 'div' strategy (each partition gathered where its ids are, then summed)."""
    del validate_indices
    tf = _tf()
    if max_norm is not None:
        raise ValueError("rill's embedding_lookup does not support max_norm (it needs a "
                         "clip_by_norm rill lacks); pass max_norm=None")
    if isinstance(params, (list, tuple)):
        params = list(params)
    else:
        params = [params]
    if not params:
        raise ValueError("Need at least one param")
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}")
    ids_t = _idx(ids)
    if len(params) == 1:  # TF names the gather as its scope: "embedding_lookup"
        return gather(params[0], ids_t, name=name or "embedding_lookup")
    with tf.name_scope(name or "embedding_lookup"):
        return _partitioned_lookup(params, ids_t, partition_strategy)


def _partitioned_lookup(params, ids, strategy):
    tf = _tf()
    np_ = len(params)
    it = ids.dtype
    npart = _t(_np.asarray(np_, dtype=it.as_numpy_dtype))
    if strategy == "mod":
        p_assign = tf.subtract(ids, tf.multiply(tf.div(ids, npart), npart))
        new_ids = tf.div(ids, npart)
    else:
        dims0 = [int(p.shape[0]) for p in params]
        vocab = sum(dims0)
        ipp, extras = vocab // np_, vocab % np_
        c = lambda v: _t(_np.asarray(v, dtype=it.as_numpy_dtype))  # noqa: E731
        p_assign = tf.maximum(tf.div(ids, c(ipp + 1)),
                              tf.div(tf.subtract(ids, c(extras)), c(max(ipp, 1))))
        is_low = tf.cast(tf.minimum(tf.maximum(tf.subtract(c(extras), p_assign), c(0)), c(1)), it)
        low_id = tf.subtract(ids, tf.multiply(tf.div(ids, c(ipp + 1)), c(ipp + 1)))
        sub = tf.subtract(ids, c(extras))
        high_id = tf.subtract(sub, tf.multiply(tf.div(sub, c(max(ipp, 1))), c(max(ipp, 1))))
        new_ids = tf.add(tf.multiply(is_low, low_id),
                         tf.multiply(tf.subtract(c(1), is_low), high_id))
    parts = []
    for k, p in enumerate(params):
        m = tf.cast(tf.equal(p_assign, _t(_np.asarray(k, dtype=it.as_numpy_dtype))), it)
        local = tf.subtract(tf.add(tf.multiply(new_ids, m), m),
                            _t(_np.asarray(1, dtype=it.as_numpy_dtype)))
        # ids of other partitions are -1: gathered as zeros, no gradient rows
        parts.append(_op("GatherV2", "GatherV2", [_t(p), local],
                         {"axis": ("int", 0), "drop_negatives": ("bool", True)}).outputs[0])
    return tf.add_n(parts) if len(parts) > 1 else parts[0]


# --- candidate samplers ---

def _sampler(type, true_classes, num_true, num_sampled, unique, range_max, seed, name):
    tc = _t(true_classes)
    attrs = {"num_true": ("int", int(num_true)), "num_sampled": ("int", int(num_sampled)),
             "unique": ("bool", bool(unique)), "range_max": ("int", int(range_max)),
             "seed": ("int", int(seed or 0))}
    op = _op(type, name or type, [tc], attrs)
    return CandidateSampler(op.outputs[0], op.outputs[1], op.outputs[2])


def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                  seed=None, name=None):
    return _sampler("LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                    range_max, seed, name)


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None,
                              name=None):
    return _sampler("UniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                    range_max, seed, name)


def compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None, name=None):
    del seed
    op = _op("ComputeAccidentalHits", name or "ComputeAccidentalHits",
             [_t(true_classes), _t(sampled_candidates)], {"num_true": ("int", int(num_true))})
    return op.outputs[0], op.outputs[1], op.outputs[2]


# --- sampled losses ---

def _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true,
                            sampled_values, subtract_log_q, remove_accidental_hits,
                            partition_strategy, name, seed):
    """TF's _compute_sampled_logits, as two logits tensors (true [B, num_true] and sampled
    [B, S]) instead of their concatenation."""
    tf = _tf()
    if isinstance(weights, tf.Variable):
        weights = [weights]
    if isinstance(biases, tf.Variable):
        biases = [biases]
    x = _t(inputs)
    lab = _t(labels)
    if lab.dtype != tf.int64:
        lab = tf.cast(lab, tf.int64)
    with tf.name_scope(name or "compute_sampled_logits"):
        if sampled_values is None:
            sampled_values = log_uniform_candidate_sampler(
                true_classes=lab, num_true=num_true, num_sampled=num_sampled, unique=True,
                range_max=num_classes, seed=seed)
        sampled, true_expected, sampled_expected = (_t(v) for v in sampled_values)
        dim = int(x.shape[-1])
        labels_flat = tf.reshape(lab, [-1])
        n_true = labels_flat.shape[0] if labels_flat.shape.ndims == 1 else None
        n_samp = sampled.shape[0] if sampled.shape.ndims == 1 else None
        if n_true is not None and n_samp is not None and int(n_true) >= 0 and int(n_samp) >= 0:
            # one lookup of [true; sampled] ids, as TF: one sparse gradient per variable
            n_true, n_samp = int(n_true), int(n_samp)
            all_ids = tf.concat([labels_flat, tf.cast(sampled, tf.int64)], 0)
            all_w = embedding_lookup(weights, all_ids, partition_strategy=partition_strategy)
            all_b = embedding_lookup(biases, all_ids, partition_strategy=partition_strategy)
            first = _t(_np.arange(n_true, dtype=_np.int64))
            rest = _t(_np.arange(n_true, n_true + n_samp, dtype=_np.int64))
            true_w, sampled_w = gather(all_w, first), gather(all_w, rest)
            true_b, sampled_b = gather(all_b, first), gather(all_b, rest)
        else:
            true_w = embedding_lookup(weights, labels_flat, partition_strategy=partition_strategy)
            sampled_w = embedding_lookup(weights, sampled, partition_strategy=partition_strategy)
            true_b = embedding_lookup(biases, labels_flat, partition_strategy=partition_strategy)
            sampled_b = embedding_lookup(biases, sampled, partition_strategy=partition_strategy)
        # true logits: row-wise dot of inputs with their num_true weight rows
        true_w = tf.reshape(true_w, [-1, num_true, dim])
        xe = tf.expand_dims(x, 1)
        true_logits = tf.reduce_sum(tf.multiply(xe, true_w), axis=[2])
        true_logits = tf.add(true_logits, tf.reshape(true_b, [-1, num_true]))
        sampled_logits = tf.add(tf.matmul(x, sampled_w, transpose_b=True), sampled_b)
        if remove_accidental_hits:
            hit_rows, hit_cols, hit_w = compute_accidental_hits(lab, sampled, num_true=num_true)
            idx = _stack2(tf, hit_rows, hit_cols)
            shape = tf.shape(sampled_logits)
            sampled_logits = tf.add(sampled_logits, scatter_nd(idx, hit_w, tf.cast(
                shape, tf.int64)))
        if subtract_log_q:
            true_logits = tf.subtract(true_logits, tf.log(true_expected))
            sampled_logits = tf.subtract(sampled_logits, tf.log(sampled_expected))
        return true_logits, sampled_logits


def _stack2(tf, rows, cols):
    """[n, 2] int64 indices (rows, cols) from two [n] vectors: TF's sparse_indices concat."""
    r = tf.reshape(tf.cast(rows, tf.int64), [-1, 1])
    c = tf.reshape(tf.cast(cols, tf.int64), [-1, 1])
    return tf.concat([r, c], 1, name="sparse_indices")


def _logits_and_labels(tf, true_logits, sampled_logits, num_true):
    """TF's out_logits and out_labels: [true, sampled] logits, labels 1/num_true and 0."""
    logits = tf.concat([true_logits, sampled_logits], 1)
    labels = tf.concat([tf.ones_like(true_logits) / num_true, tf.zeros_like(sampled_logits)], 1)
    return logits, labels


def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
             sampled_values=None, remove_accidental_hits=False, partition_strategy="mod",
             name="nce_loss"):
    """tf.nn.nce_loss: per-example loss [batch], the sigmoid cross-entropy of the true logits
    against 1 (summed over num_true) plus that of the sampled logits against 0."""
    tf = _tf()
    with tf.name_scope(name or "nce_loss"):
        true_logits, sampled_logits = _compute_sampled_logits(
            weights, biases, labels, inputs, num_sampled, num_classes, num_true,
            sampled_values, True, remove_accidental_hits, partition_strategy, None, None)
        logits, labels = _logits_and_labels(tf, true_logits, sampled_logits, num_true)
        losses = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                         name="sampled_losses")
        return tf.reduce_sum(losses, axis=1)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
                         sampled_values=None, remove_accidental_hits=True,
                         partition_strategy="mod", name="sampled_softmax_loss", seed=None):
    """tf.nn.sampled_softmax_loss: per-example softmax cross-entropy over [true, sampled] logits
    with labels 1/num_true on the true ones."""
    tf = _tf()
    with tf.name_scope(name or "sampled_softmax_loss"):
        true_logits, sampled_logits = _compute_sampled_logits(
            weights, biases, labels, inputs, num_sampled, num_classes, num_true,
            sampled_values, True, remove_accidental_hits, partition_strategy, None, seed)
        logits, labels = _logits_and_labels(tf, true_logits, sampled_logits, num_true)
        labels = tf.stop_gradient(labels, name="labels_stop_gradient")
        return tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)


def _install(tf):
    """tf.random.*_candidate_sampler and tf.math.top_k / in_top_k aliases, added to those
    namespaces when they exist (made as simple namespaces when they do not)."""
    import types
    aliases = {"random": ["log_uniform_candidate_sampler", "uniform_candidate_sampler"],
               "math": ["top_k", "in_top_k", "unsorted_segment_sum", "segment_sum"]}
    for ns, names in aliases.items():
        space = getattr(tf, ns, None)
        if space is None:
            space = types.SimpleNamespace()
            setattr(tf, ns, space)
        for n in names:
            setattr(space, n, globals()[n])
