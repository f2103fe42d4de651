/* ops_index.c - indexing ops: GatherV2, GatherNd, ScatterNd, Where, InTopKV2, TopKV2, Unique,
 * UnsortedSegmentSum, SegmentSum, the in-place ScatterUpdate / ScatterAdd / ScatterSub on
 * variables, IndexedSlicesToDense (rill's sparse gradients), and the candidate samplers
 * (LogUniformCandidateSampler, UniformCandidateSampler, ComputeAccidentalHits) that sampled
 * losses use.
 *
 * Sparse gradients. rill has no IndexedSlices type: the gradient of GatherV2 with respect to
 * params is output 0 of IndexedSlicesToDense(values, indices, dense_shape), whose kernel adds
 * the value rows into zeros at their indices along attr axis (duplicates sum). Every consumer
 * therefore sees a dense tensor; an optimizer that finds its gradient made by such a node with
 * axis 0 and the variable's shape updates only the rows named (src/train/optimizers.c). The
 * values are shaped dense_shape[:axis] + indices.shape + dense_shape[axis+1:], which is exactly
 * what GatherV2 of the dense tensor with those indices gives back.
 *
 * Ops whose output shape depends on a small int input (GatherV2's axis, TopKV2's k, ScatterNd's
 * shape, UnsortedSegmentSum's num_segments) read it at build time when that input is a Const
 * (or, for shapes, a Shape node), as TF's shape functions do, and leave the dims unknown
 * otherwise. Those inputs live in host memory. */
#include "graph_internal.h"

#include <string.h>

/* --- helpers --- */

/* The values of input i when it is a Const (at most cap of them): their count, or -1. */
static int const_ints(const rill_node *n, int i, int64_t *v, int cap)
{
    if (i >= n->ninputs) return -1;
    rill_output o = n->inputs[i];
    if (strcmp(o.node->op->name, "Const") != 0) return -1;
    const rill_tensor *t = rill__node_attr(o.node, "value")->v.tensor;
    if (!rill__is_index_dtype(t->dtype) || t->numel > cap) return -1;
    for (int64_t k = 0; k < t->numel; k++) v[k] = rill_tensor_get_int64(t, k);
    return (int)t->numel;
}

/* The shape an int vector input i stands for: a Const's values, a Shape node's input's static
 * shape, else unknown dims (of known rank when the vector's length is known). */
static rill_shape shape_from_input(const rill_node *n, int i)
{
    int64_t v[RILL_MAX_DIMS];
    int k = const_ints(n, i, v, RILL_MAX_DIMS);
    if (k >= 0) return rill_shape_make(k, v);
    rill_output o = n->inputs[i];
    if (strcmp(o.node->op->name, "Shape") == 0) return rill__in_shape(o.node, 0);
    rill_shape vs = rill__in_shape(n, i);
    rill_shape out = rill_shape_unknown();
    if (vs.rank == 1 && vs.dims[0] >= 0 && vs.dims[0] <= RILL_MAX_DIMS) {
        out.rank = (int)vs.dims[0];
        for (int d = 0; d < out.rank; d++) out.dims[d] = -1;
    }
    return out;
}

static bool append_dims(const rill_node *n, rill_shape *out, const rill_shape *src, int from,
                        int to, rill_status *s)
{
    for (int d = from; d < to; d++) {
        if (out->rank == RILL_MAX_DIMS) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "%s '%s': the result has more than %d dims",
                            n->op->name, n->name, RILL_MAX_DIMS);
            return false;
        }
        out->dims[out->rank++] = src->dims[d];
    }
    return true;
}

/* A constant int64 vector of a fully defined shape, else Shape(x). */
static rill_output shape_tensor(rill_graph *g, rill_output x)
{
    rill_shape s = rill_output_shape(x);
    if (!rill_shape_is_fully_defined(&s)) return rill_shape_of(g, x, NULL);
    int64_t r = s.rank;
    rill_tensor *t = rill_tensor_from_data(RILL_INT64, &r, 1, s.dims);
    rill_output c = rill_const(g, t, "Shape");
    rill_tensor_free(t);
    return c;
}

/* --- GatherV2 --- */

/* The gather axis of a GatherV2 node (attr "axis", or a Const third input), not normalised;
 * false with s set when it cannot be known. */
static bool gather_axis(const rill_node *n, int64_t *axis, rill_status *s)
{
    *axis = rill__attr_int(n, "axis", 0);
    if (n->ninputs < 3) return true;
    int64_t v[1];
    if (const_ints(n, 2, v, 1) != 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "GatherV2 '%s': axis must be a constant int32 or int64 scalar", n->name);
        return false;
    }
    *axis = v[0];
    return true;
}

static void gather_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_index(n, 1, "indices", s)) return;
    if (rill__attr_int(n, "batch_dims", 0) != 0) {
        rill_status_set(s, RILL_UNIMPLEMENTED, "GatherV2 '%s': batch_dims != 0 is not supported",
                        n->name);
        return;
    }
    int64_t axis;
    if (!gather_axis(n, &axis, s)) return;
    rill_shape p = rill__in_shape(n, 0), ix = rill__in_shape(n, 1);
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    if (p.rank < 0 || ix.rank < 0) {
        n->out_shapes[0] = rill_shape_unknown();
        return;
    }
    if (axis < -p.rank || axis >= p.rank) {
        if (axis >= 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Shape must be at least rank %lld but is rank %d for '%s' (op: "
                            "'GatherV2')",
                            (long long)axis + 1, p.rank, n->name);
        } else {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Expected axis in the range [%d, %d), but got %lld", -p.rank, p.rank,
                            (long long)axis);
        }
        return;
    }
    if (axis < 0) axis += p.rank;
    rill_shape out = {.rank = 0};
    if (!append_dims(n, &out, &p, 0, (int)axis, s) || !append_dims(n, &out, &ix, 0, ix.rank, s) ||
        !append_dims(n, &out, &p, (int)axis + 1, p.rank, s))
        return;
    n->out_shapes[0] = out;
}

static rill_output gather(rill_graph *g, rill_output params, rill_output indices, int64_t axis,
                          bool drop_negatives)
{
    rill_output in[] = {params, indices};
    rill__attr a[] = {RILL__A_INT("axis", axis), RILL__A_BOOL("drop_negatives", drop_negatives)};
    return rill__out0(rill__node_create(g, "GatherV2", NULL, in, 2, a, drop_negatives ? 2 : 1));
}

/* drop_negatives: rows of negative indices are left out (the gradient of a gather that gave
 * zeros for them). */
static rill_output indexed_slices_to_dense(rill_graph *g, rill_output values, rill_output indices,
                                           rill_output dense_shape, int64_t axis,
                                           bool drop_negatives)
{
    rill_output in[] = {values, indices, dense_shape};
    rill__attr a[] = {RILL__A_INT("axis", axis), RILL__A_BOOL("drop_negatives", drop_negatives)};
    return rill__out0(
        rill__node_create(g, "IndexedSlicesToDense", NULL, in, 3, a, drop_negatives ? 2 : 1));
}

static void gather_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_status *st = rill_status_new();
    int64_t axis;
    bool ok = gather_axis(n, &axis, st);
    rill_status_free(st);
    for (int i = 0; i < n->ninputs; i++) dx[i] = (rill_output){NULL, 0};
    if (!ok) return;
    rill_output params = n->inputs[0], indices = n->inputs[1];
    rill_shape p = rill_output_shape(params), ix = rill_output_shape(indices);
    if (axis < 0 && p.rank >= 0) axis += p.rank; /* else IndexedSlicesToDense resolves it */
    rill_output values = dy[0];
    /* TF's IndexedSlices for axis 0: values [N, params.shape[1:]...], indices [N]. */
    if (axis == 0 && ix.rank != 1 && p.rank >= 1) {
        bool inner_known = true;
        int64_t dims[RILL_MAX_DIMS];
        dims[0] = -1;
        for (int d = 1; d < p.rank; d++) {
            dims[d] = p.dims[d];
            if (p.dims[d] < 0) inner_known = false;
        }
        if (inner_known) {
            int64_t flat = -1;
            values = rill_reshape(g, values, dims, p.rank, NULL);
            indices = rill_reshape(g, indices, &flat, 1, NULL);
        }
    }
    dx[0] = indexed_slices_to_dense(g, values, indices, shape_tensor(g, params), axis,
                                    rill__attr_bool(n, "drop_negatives", false));
}

/* --- IndexedSlicesToDense --- */

static void slices_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_index(n, 1, "indices", s) || !rill__check_index(n, 2, "dense_shape", s))
        return;
    rill_shape ds = rill__in_shape(n, 2);
    if (ds.rank > 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "IndexedSlicesToDense '%s': dense_shape must be a vector", n->name);
        return;
    }
    rill_shape out = shape_from_input(n, 2);
    int64_t axis = rill__attr_int(n, "axis", 0);
    if (out.rank >= 0 && axis < 0) axis += out.rank; /* negative: from the end */
    if (out.rank >= 0 && (axis < 0 || axis >= out.rank)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "IndexedSlicesToDense '%s': axis %lld is not in [0, %d)", n->name,
                        (long long)axis, out.rank);
        return;
    }
    rill_shape v = rill__in_shape(n, 0), ix = rill__in_shape(n, 1);
    if (out.rank >= 0 && v.rank >= 0 && ix.rank >= 0) {
        bool ok = v.rank == out.rank - 1 + ix.rank;
        for (int d = 0; ok && d < v.rank; d++) {
            int64_t want = d < axis             ? out.dims[d]
                           : d < axis + ix.rank ? ix.dims[d - axis]
                                                : out.dims[d - ix.rank + 1];
            if (want >= 0 && v.dims[d] >= 0 && want != v.dims[d]) ok = false;
        }
        if (!ok) {
            char a[96], b[96], c[96];
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "IndexedSlicesToDense '%s': values.shape %s is not "
                            "dense_shape[:axis] + indices.shape %s + dense_shape[axis+1:] of %s",
                            n->name, rill_shape_str(&v, a, sizeof a),
                            rill_shape_str(&ix, b, sizeof b), rill_shape_str(&out, c, sizeof c));
            return;
        }
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = out;
}

static void slices_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = gather(g, dy[0], n->inputs[1], rill__attr_int(n, "axis", 0),
                   rill__attr_bool(n, "drop_negatives", false));
    dx[1] = dx[2] = (rill_output){NULL, 0};
}

/* --- GatherNd, ScatterNd --- */

static void gather_nd_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_index(n, 1, "indices", s)) return;
    rill_shape p = rill__in_shape(n, 0), ix = rill__in_shape(n, 1);
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    if (p.rank < 0 || ix.rank < 0 || (ix.rank > 0 && ix.dims[ix.rank - 1] < 0)) {
        n->out_shapes[0] = rill_shape_unknown();
        return;
    }
    if (ix.rank < 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be at least rank 1 but is rank 0 for '%s' (op: 'GatherNd')",
                        n->name);
        return;
    }
    int64_t k = ix.dims[ix.rank - 1];
    if (k > p.rank) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "indices.shape[-1] must be <= params.rank, but saw indices shape: %s "
                        "and params shape: %s for '%s' (op: 'GatherNd')",
                        rill_shape_str(&ix, (char[96]){0}, 96),
                        rill_shape_str(&p, (char[96]){0}, 96), n->name);
        return;
    }
    rill_shape out = {.rank = 0};
    if (!append_dims(n, &out, &ix, 0, ix.rank - 1, s) ||
        !append_dims(n, &out, &p, (int)k, p.rank, s))
        return;
    n->out_shapes[0] = out;
}

static void gather_nd_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {n->inputs[1], dy[0], shape_tensor(g, n->inputs[0])};
    dx[0] = rill__out0(rill__node_create(g, "ScatterNd", NULL, in, 3, NULL, 0));
    dx[1] = (rill_output){NULL, 0};
}

static void scatter_nd_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_index(n, 0, "indices", s) || !rill__check_index(n, 2, "shape", s)) return;
    rill_shape out = shape_from_input(n, 2), ix = rill__in_shape(n, 0), u = rill__in_shape(n, 1);
    n->out_dtypes[0] = rill__in_dtype(n, 1);
    n->out_shapes[0] = out;
    if (out.rank < 0 || ix.rank < 1 || u.rank < 0 || ix.dims[ix.rank - 1] < 0) return;
    int64_t k = ix.dims[ix.rank - 1];
    bool ok = k <= out.rank && u.rank == ix.rank - 1 + out.rank - k;
    for (int d = 0; ok && d < u.rank; d++) {
        int64_t want = d < ix.rank - 1 ? ix.dims[d] : out.dims[d - (ix.rank - 1) + k];
        if (want >= 0 && u.dims[d] >= 0 && want != u.dims[d]) ok = false;
    }
    if (!ok) {
        char a[96], b[96], c[96];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Dimensions mismatch in '%s' (op: 'ScatterNd'): updates.shape must be "
                        "indices.shape[:-1] + shape[indices.shape[-1]:]; got indices.shape %s, "
                        "updates.shape %s, shape %s",
                        n->name, rill_shape_str(&ix, a, sizeof a), rill_shape_str(&u, b, sizeof b),
                        rill_shape_str(&out, c, sizeof c));
    }
}

static void scatter_nd_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {dy[0], n->inputs[0]};
    dx[0] = dx[2] = (rill_output){NULL, 0};
    dx[1] = rill__out0(rill__node_create(g, "GatherNd", NULL, in, 2, NULL, 0));
}

/* --- Where, InTopKV2, TopKV2, Unique --- */

static void where_shape(rill_node *n, rill_status *s)
{
    (void)s;
    rill_shape x = rill__in_shape(n, 0);
    n->out_dtypes[0] = RILL_INT64;
    n->out_shapes[0] = x.rank < 0 ? rill_shape_unknown() : rill_shape_matrix(-1, x.rank);
}

static void in_top_k_shape(rill_node *n, rill_status *s)
{
    rill_shape p = rill__in_shape(n, 0), t = rill__in_shape(n, 1);
    if (rill__in_dtype(n, 0) != RILL_FLOAT) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value passed to parameter 'predictions' has DataType %s not in list of "
                        "allowed values: float32",
                        rill_dtype_name(rill__in_dtype(n, 0)));
        return;
    }
    if (!rill__check_index(n, 1, "targets", s)) return;
    if (n->ninputs > 2 && !rill__check_index(n, 2, "k", s)) return;
    if (p.rank >= 0 && p.rank != 2) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank 2 but is rank %d for '%s' (op: 'InTopKV2')", p.rank,
                        n->name);
        return;
    }
    if (t.rank >= 0 && t.rank != 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank 1 but is rank %d for '%s' (op: 'InTopKV2')", t.rank,
                        n->name);
        return;
    }
    int64_t b = -1;
    if (p.rank == 2 && t.rank == 1 && !rill__merge_dim(n, p.dims[0], t.dims[0], &b, s)) return;
    if (b < 0) b = p.rank == 2 ? p.dims[0] : t.rank == 1 ? t.dims[0] : -1;
    n->out_dtypes[0] = RILL_BOOL;
    n->out_shapes[0] = rill_shape_vector(b);
}

/* TopKV2's k: a Const input 1, or attr k (TopK); -1 when unknown. */
static int64_t top_k_k(const rill_node *n)
{
    int64_t v[1];
    if (n->ninputs > 1) return const_ints(n, 1, v, 1) == 1 ? v[0] : -1;
    return rill__attr_int(n, "k", -1);
}

static void top_k_shape(rill_node *n, rill_status *s)
{
    if (n->ninputs > 1 && rill__in_dtype(n, 1) != RILL_INT32) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value passed to parameter 'k' has DataType %s not in list of allowed "
                        "values: int32",
                        rill_dtype_name(rill__in_dtype(n, 1)));
        return;
    }
    rill_dtype t = rill__in_dtype(n, 0);
    if (t == RILL_BOOL || t == RILL_STRING) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "TopKV2 '%s': input must be a real number type",
                        n->name);
        return;
    }
    rill_shape x = rill__in_shape(n, 0);
    int64_t k = top_k_k(n);
    if (n->ninputs > 1 && rill__in_shape(n, 1).rank > 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank 0 but is rank %d for '%s' (op: 'TopKV2')",
                        rill__in_shape(n, 1).rank, n->name);
        return;
    }
    if (k < 0 && (n->ninputs < 2 || const_ints(n, 1, (int64_t[1]){0}, 1) == 1)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Need k >= 0, got %lld", (long long)k);
        return;
    }
    n->out_dtypes[0] = t;
    n->out_dtypes[1] = RILL_INT32;
    if (x.rank < 0) {
        n->out_shapes[0] = n->out_shapes[1] = rill_shape_unknown();
        return;
    }
    if (x.rank < 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be at least rank 1 but is rank 0 for '%s' (op: 'TopKV2')",
                        n->name);
        return;
    }
    int64_t last = x.dims[x.rank - 1];
    if (k >= 0 && last >= 0 && last < k) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "input must have last dimension >= k = %lld but is %lld for '%s' (op: "
                        "'TopKV2')",
                        (long long)k, (long long)last, n->name);
        return;
    }
    x.dims[x.rank - 1] = k;
    n->out_shapes[0] = n->out_shapes[1] = x;
}

static void top_k_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    for (int i = 0; i < n->ninputs; i++) dx[i] = (rill_output){NULL, 0};
    if (!dy[0].node) return;
    rill_output in[] = {n->inputs[0], (rill_output){n, 1}, dy[0]};
    dx[0] = rill__out0(rill__node_create(g, "_TopKGrad", NULL, in, 3, NULL, 0));
}

static void top_k_grad_shape(rill_node *n, rill_status *s)
{
    if (rill__in_dtype(n, 2) != rill__in_dtype(n, 0) || rill__in_dtype(n, 1) != RILL_INT32) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "_TopKGrad '%s': wants (x, int32 indices, dvalues of x's dtype)", n->name);
        return;
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static void unique_shape(rill_node *n, rill_status *s)
{
    rill_shape x = rill__in_shape(n, 0);
    if (x.rank >= 0 && x.rank != 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank 1 but is rank %d for '%s' (op: 'Unique')", x.rank,
                        n->name);
        return;
    }
    rill_dtype it = rill__attr_type(n, "out_idx", RILL_INT32);
    if (!rill__is_index_dtype(it)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Unique '%s': out_idx must be int32 or int64, got %s", n->name,
                        rill_dtype_name(it));
        return;
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_dtypes[1] = it;
    n->out_shapes[0] = rill_shape_vector(-1);
    n->out_shapes[1] = x.rank == 1 ? x : rill_shape_vector(-1);
}

/* --- segment sums --- */

static void unsorted_segment_sum_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_index(n, 1, "segment_ids", s) || !rill__check_index(n, 2, "num_segments", s) ||
        !rill__check_ids_prefix(n, s))
        return;
    if (rill__in_shape(n, 2).rank > 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank 0 but is rank %d for '%s' (op: 'UnsortedSegmentSum')",
                        rill__in_shape(n, 2).rank, n->name);
        return;
    }
    int64_t v[1];
    int64_t k = const_ints(n, 2, v, 1) == 1 ? v[0] : -1;
    rill_shape d = rill__in_shape(n, 0), ids = rill__in_shape(n, 1);
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    if (d.rank < 0 || ids.rank < 0) {
        n->out_shapes[0] = rill_shape_unknown();
        return;
    }
    rill_shape out = {.rank = 1, .dims = {k}};
    if (!append_dims(n, &out, &d, ids.rank, d.rank, s)) return;
    n->out_shapes[0] = out;
}

static void unsorted_segment_sum_grad(rill_graph *g, rill_node *n, const rill_output *dy,
                                      rill_output *dx)
{
    /* Negative ids were dropped: their rows get no gradient (TF's _GatherDropNegatives). */
    dx[0] = gather(g, dy[0], n->inputs[1], 0, true);
    dx[1] = dx[2] = (rill_output){NULL, 0};
}

static void segment_sum_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_index(n, 1, "segment_ids", s)) return;
    rill_shape d = rill__in_shape(n, 0), ids = rill__in_shape(n, 1);
    if (ids.rank >= 0 && ids.rank != 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank 1 but is rank %d for '%s' (op: 'SegmentSum')", ids.rank,
                        n->name);
        return;
    }
    if (!rill__check_ids_prefix(n, s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    if (d.rank < 1) {
        n->out_shapes[0] = rill_shape_unknown();
        return;
    }
    d.dims[0] = -1;
    n->out_shapes[0] = d;
}

static void segment_sum_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = gather(g, dy[0], n->inputs[1], 0, false);
    dx[1] = (rill_output){NULL, 0};
}

/* --- ScatterUpdate, ScatterAdd, ScatterSub --- */

static void scatter_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_index(n, 1, "indices", s)) return;
    rill_dtype vt = rill__in_dtype(n, 0), ut = rill__in_dtype(n, 2);
    if (ut != vt) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input 'updates' of '%s' Op has type %s that does not match type %s of "
                        "argument 'ref'.",
                        n->op->name, rill_dtype_name(ut), rill_dtype_name(vt));
        return;
    }
    rill_shape r = rill__in_shape(n, 0), ix = rill__in_shape(n, 1), u = rill__in_shape(n, 2);
    if (r.rank >= 0 && ix.rank >= 0 && u.rank > 0) {
        bool ok = r.rank >= 1 && u.rank == ix.rank + r.rank - 1;
        for (int d = 0; ok && d < u.rank; d++) {
            int64_t want = d < ix.rank ? ix.dims[d] : r.dims[d - ix.rank + 1];
            if (want >= 0 && u.dims[d] >= 0 && want != u.dims[d]) ok = false;
        }
        if (!ok) {
            char a[96], b[96], c[96];
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Shapes must be equal rank, and dimensions must match for '%s' (op: "
                            "'%s'): must have updates.shape = indices.shape + params.shape[1:] "
                            "or updates.shape = [], got updates.shape %s, indices.shape %s, "
                            "params.shape %s",
                            n->name, n->op->name, rill_shape_str(&u, a, sizeof a),
                            rill_shape_str(&ix, b, sizeof b), rill_shape_str(&r, c, sizeof c));
            return;
        }
    }
    n->out_dtypes[0] = vt;
    n->out_shapes[0] = r;
}

/* --- candidate samplers --- */

void rill__sampler_shape(rill_node *n, rill_status *s)
{
    int64_t num_true = rill__attr_int(n, "num_true", 1);
    int64_t num_sampled = rill__attr_int(n, "num_sampled", -1);
    int64_t range_max = rill__attr_int(n, "range_max", -1);
    if (rill__in_dtype(n, 0) != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value passed to parameter 'true_classes' has DataType %s not in list of "
                        "allowed values: int64",
                        rill_dtype_name(rill__in_dtype(n, 0)));
        return;
    }
    if (num_true < 1 || num_sampled < 1 || range_max < 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s '%s': num_true, num_sampled and range_max must be >= 1 (got %lld, "
                        "%lld, %lld)",
                        n->op->name, n->name, (long long)num_true, (long long)num_sampled,
                        (long long)range_max);
        return;
    }
    if (rill__attr_bool(n, "unique", false) && num_sampled > range_max) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Sampler's range is too small.");
        return;
    }
    rill_shape t = rill__in_shape(n, 0);
    if (t.rank >= 0 && t.rank != 2) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "true_classes must be a matrix");
        return;
    }
    if (t.rank == 2 && t.dims[1] >= 0 && t.dims[1] != num_true) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "true_classes must have num_true columns, expected: %lld was: %lld",
                        (long long)num_true, (long long)t.dims[1]);
        return;
    }
    n->out_dtypes[0] = RILL_INT64;
    n->out_dtypes[1] = n->out_dtypes[2] = RILL_FLOAT;
    n->out_shapes[0] = n->out_shapes[2] = rill_shape_vector(num_sampled);
    n->out_shapes[1] = rill_shape_matrix(t.rank == 2 ? t.dims[0] : -1, num_true);
}

static void accidental_hits_shape(rill_node *n, rill_status *s)
{
    rill_shape t = rill__in_shape(n, 0), c = rill__in_shape(n, 1);
    int64_t num_true = rill__attr_int(n, "num_true", 1);
    if (rill__in_dtype(n, 0) != RILL_INT64 || rill__in_dtype(n, 1) != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "ComputeAccidentalHits '%s': true_classes and sampled_candidates must be "
                        "int64",
                        n->name);
        return;
    }
    if (t.rank >= 0 && t.rank != 2) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "true_classes must be a matrix");
        return;
    }
    if (t.rank == 2 && t.dims[1] >= 0 && t.dims[1] != num_true) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "true_classes must have num_true columns, expected: %lld was: %lld",
                        (long long)num_true, (long long)t.dims[1]);
        return;
    }
    if (c.rank >= 0 && c.rank != 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "sampled_candidates must be a vector");
        return;
    }
    n->out_dtypes[0] = RILL_INT32;
    n->out_dtypes[1] = RILL_INT64;
    n->out_dtypes[2] = RILL_FLOAT;
    n->out_shapes[0] = n->out_shapes[1] = n->out_shapes[2] = rill_shape_vector(-1);
}

const rill__op_def rill__ops_index[] = {
    {.name = "GatherV2",
     .default_name = "GatherV2",
     .min_inputs = 2,
     .max_inputs = 3,
     .noutputs = 1,
     .shape = gather_shape,
     .grad = gather_grad},
    {.name = "IndexedSlicesToDense",
     .default_name = "IndexedSlicesToDense",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .shape = slices_shape,
     .grad = slices_grad},
    {.name = "GatherNd",
     .default_name = "GatherNd",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = gather_nd_shape,
     .grad = gather_nd_grad},
    {.name = "ScatterNd",
     .default_name = "ScatterNd",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .shape = scatter_nd_shape,
     .grad = scatter_nd_grad},
    {.name = "Where",
     .default_name = "Where",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = where_shape},
    {.name = "InTopKV2",
     .default_name = "in_top_k",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .shape = in_top_k_shape},
    {.name = "TopKV2",
     .default_name = "TopKV2",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 2,
     .shape = top_k_shape,
     .grad = top_k_grad},
    {.name = "_TopKGrad",
     .default_name = "TopKGrad",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .shape = top_k_grad_shape},
    {.name = "Unique",
     .default_name = "Unique",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 2,
     .shape = unique_shape},
    {.name = "UnsortedSegmentSum",
     .default_name = "UnsortedSegmentSum",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .shape = unsorted_segment_sum_shape,
     .grad = unsorted_segment_sum_grad},
    {.name = "SegmentSum",
     .default_name = "SegmentSum",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = segment_sum_shape,
     .grad = segment_sum_grad},
    {.name = "ScatterUpdate",
     .default_name = "ScatterUpdate",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 1,
     .shape = scatter_shape},
    {.name = "ScatterAdd",
     .default_name = "ScatterAdd",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 1,
     .shape = scatter_shape},
    {.name = "ScatterSub",
     .default_name = "ScatterSub",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 1,
     .shape = scatter_shape},
    {.name = "LogUniformCandidateSampler",
     .default_name = "LogUniformCandidateSampler",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 3,
     .stateful = true,
     .shape = rill__sampler_shape},
    {.name = "UniformCandidateSampler",
     .default_name = "UniformCandidateSampler",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 3,
     .stateful = true,
     .shape = rill__sampler_shape},
    {.name = "ComputeAccidentalHits",
     .default_name = "ComputeAccidentalHits",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 3,
     .shape = accidental_hits_shape},
    {0},
};
