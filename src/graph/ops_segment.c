/* ops_segment.c - the segment reductions and dense/variable scatters that ops_index.c lacks:
 * SegmentMean / SegmentMax / SegmentMin / SegmentProd (sorted ids), UnsortedSegmentMax / Min /
 * Prod (with their shared gradient op _SegmentReduceGrad), TensorScatterUpdate / Add / Sub /
 * Max / Min (out of place, with gradients; _TensorScatterMinMaxGrad for the last two), and the
 * in-place ScatterNdUpdate / Add / Sub and ScatterMul / Div / Max / Min on variables.
 *
 * Gradients follow TF's math_grad.py / array_grad.py: a segment mean's rows share the output's
 * gradient equally; a max or min sends it to the rows equal to the result (split among ties);
 * a product's row gets dy * prod / x, or the product of the other rows where x is 0 (and
 * nothing when its segment has two zeros). _SegmentReduceGrad computes all of these in one
 * kernel from (data, ids, y, dy) rather than the dozen ops TF's Python composes; negative ids
 * of the unsorted ops get no gradient.
 *
 * num_segments is read at build time when it is a Const, as in ops_index.c. */
#include "graph_internal.h"

#include <string.h>

/* The codes of _SegmentReduceGrad's attr "reduce". */
enum { SEG_MEAN = 0, SEG_MAX = 1, SEG_MIN = 2, SEG_PROD = 3 };

static bool check_real(const rill_node *n, int i, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, i);
    if (t == RILL_FLOAT || t == RILL_DOUBLE || t == RILL_HALF || t == RILL_INT32 || t == RILL_INT64)
        return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Value passed to parameter 'data' has DataType %s not in list of allowed "
                    "values: float32, float64, int32, int64, float16",
                    rill_dtype_name(t));
    return false;
}

static int64_t const_int(const rill_node *n, int i)
{
    rill_output o = n->inputs[i];
    if (strcmp(o.node->op->name, "Const") != 0) return -1;
    const rill_tensor *t = rill__node_attr(o.node, "value")->v.tensor;
    if (!rill__is_index_dtype(t->dtype) || t->numel != 1) return -1;
    return rill_tensor_get_int64(t, 0);
}

/* --- segment reductions --- */

static void segment_shape(rill_node *n, rill_status *s)
{
    if (!check_real(n, 0, s) || !rill__check_index(n, 1, "segment_ids", s)) return;
    rill_shape d = rill__in_shape(n, 0), ids = rill__in_shape(n, 1);
    if (ids.rank >= 0 && ids.rank != 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank 1 but is rank %d for '%s' (op: '%s')", ids.rank,
                        n->name, n->op->name);
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

static void unsorted_segment_shape(rill_node *n, rill_status *s)
{
    if (!check_real(n, 0, s) || !rill__check_index(n, 1, "segment_ids", s) ||
        !rill__check_index(n, 2, "num_segments", s) || !rill__check_ids_prefix(n, s))
        return;
    if (rill__in_shape(n, 2).rank > 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank 0 but is rank %d for '%s' (op: '%s')",
                        rill__in_shape(n, 2).rank, n->name, n->op->name);
        return;
    }
    int64_t k = const_int(n, 2);
    rill_shape d = rill__in_shape(n, 0), ids = rill__in_shape(n, 1);
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    if (d.rank < 0 || ids.rank < 0) {
        n->out_shapes[0] = rill_shape_unknown();
        return;
    }
    rill_shape out = {.rank = 1, .dims = {k}};
    for (int i = ids.rank; i < d.rank; i++) out.dims[out.rank++] = d.dims[i];
    n->out_shapes[0] = out;
}

static int reduce_code(const char *op)
{
    if (strstr(op, "Mean")) return SEG_MEAN;
    if (strstr(op, "Max")) return SEG_MAX;
    if (strstr(op, "Min")) return SEG_MIN;
    return SEG_PROD;
}

static void segment_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    for (int i = 0; i < n->ninputs; i++) dx[i] = (rill_output){NULL, 0};
    if (!dy[0].node) return;
    rill_output in[] = {n->inputs[0], n->inputs[1], rill__out0(n), dy[0]};
    rill__attr a[] = {RILL__A_INT("reduce", reduce_code(n->op->name))};
    dx[0] = rill__out0(rill__node_create(g, "_SegmentReduceGrad", NULL, in, 4, a, 1));
}

static void segment_reduce_grad_shape(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, 0);
    if (t != RILL_FLOAT && t != RILL_DOUBLE && t != RILL_HALF) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "_SegmentReduceGrad '%s': gradients need a floating-point data, got %s",
                        n->name, rill_dtype_name(t));
        return;
    }
    if (!rill__check_index(n, 1, "segment_ids", s)) return;
    n->out_dtypes[0] = t;
    n->out_shapes[0] = rill__in_shape(n, 0);
}

/* --- TensorScatterUpdate / Add / Sub / Max / Min --- */

static void tensor_scatter_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_index(n, 1, "indices", s)) return;
    rill_dtype tt = rill__in_dtype(n, 0), ut = rill__in_dtype(n, 2);
    if (tt != ut) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input 'updates' of '%s' Op has type %s that does not match type %s of "
                        "argument 'tensor'.",
                        n->op->name, rill_dtype_name(ut), rill_dtype_name(tt));
        return;
    }
    rill_shape t = rill__in_shape(n, 0), ix = rill__in_shape(n, 1), u = rill__in_shape(n, 2);
    n->out_dtypes[0] = tt;
    n->out_shapes[0] = t;
    if (t.rank < 0 || ix.rank < 1 || u.rank < 0 || ix.dims[ix.rank - 1] < 0) return;
    int64_t k = ix.dims[ix.rank - 1];
    bool ok = k <= t.rank && u.rank == ix.rank - 1 + t.rank - k;
    for (int d = 0; ok && d < u.rank; d++) {
        int64_t want = d < ix.rank - 1 ? ix.dims[d] : t.dims[d - (ix.rank - 1) + k];
        if (want >= 0 && u.dims[d] >= 0 && want != u.dims[d]) ok = false;
    }
    if (!ok) {
        char a[96], b[96], c[96];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Dimensions mismatch in '%s' (op: '%s'): updates.shape must be "
                        "indices.shape[:-1] + tensor.shape[indices.shape[-1]:]; got "
                        "indices.shape %s, updates.shape %s, tensor.shape %s",
                        n->name, n->op->name, rill_shape_str(&ix, a, sizeof a),
                        rill_shape_str(&u, b, sizeof b), rill_shape_str(&t, c, sizeof c));
    }
}

static rill_output gather_nd(rill_graph *g, rill_output params, rill_output indices)
{
    rill_output in[] = {params, indices};
    return rill__out0(rill__node_create(g, "GatherNd", NULL, in, 2, NULL, 0));
}

static void tensor_scatter_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = dx[1] = dx[2] = (rill_output){NULL, 0};
    if (!dy[0].node) return;
    const char *op = n->op->name;
    rill_output ix = n->inputs[1];
    if (strcmp(op, "TensorScatterUpdate") == 0) {
        /* the overwritten elements of tensor get nothing */
        rill_output in[] = {dy[0], ix, rill_zeros_like(g, n->inputs[2], NULL)};
        dx[0] = rill__out0(rill__node_create(g, "TensorScatterUpdate", NULL, in, 3, NULL, 0));
        dx[2] = gather_nd(g, dy[0], ix);
    } else if (strcmp(op, "TensorScatterAdd") == 0) {
        dx[0] = rill_identity(g, dy[0], NULL);
        dx[2] = gather_nd(g, dy[0], ix);
    } else if (strcmp(op, "TensorScatterSub") == 0) {
        dx[0] = rill_identity(g, dy[0], NULL);
        dx[2] = rill_neg(g, gather_nd(g, dy[0], ix), NULL);
    } else {
        rill_output in[] = {n->inputs[0], ix, n->inputs[2], rill__out0(n), dy[0]};
        rill_node *gn = rill__node_create(g, "_TensorScatterMinMaxGrad", NULL, in, 5, NULL, 0);
        dx[0] = (rill_output){gn, 0};
        dx[2] = (rill_output){gn, 1};
    }
}

static void tensor_scatter_minmax_grad_shape(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, 0);
    if (t != RILL_FLOAT && t != RILL_DOUBLE && t != RILL_HALF) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "_TensorScatterMinMaxGrad '%s': gradients need a floating-point tensor, "
                        "got %s",
                        n->name, rill_dtype_name(t));
        return;
    }
    n->out_dtypes[0] = n->out_dtypes[1] = t;
    n->out_shapes[0] = rill__in_shape(n, 0);
    n->out_shapes[1] = rill__in_shape(n, 2);
}

/* --- in-place scatters on variables --- */

static bool check_updates_dtype(rill_node *n, rill_status *s)
{
    rill_dtype vt = rill__in_dtype(n, 0), ut = rill__in_dtype(n, 2);
    if (ut == vt) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Input 'updates' of '%s' Op has type %s that does not match type %s of "
                    "argument 'ref'.",
                    n->op->name, rill_dtype_name(ut), rill_dtype_name(vt));
    return false;
}

static void scatter_nd_ref_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_index(n, 1, "indices", s) || !check_updates_dtype(n, s)) return;
    rill_shape r = rill__in_shape(n, 0), ix = rill__in_shape(n, 1), u = rill__in_shape(n, 2);
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = r;
    if (r.rank < 0 || ix.rank < 1 || u.rank < 0 || ix.dims[ix.rank - 1] < 0) return;
    int64_t k = ix.dims[ix.rank - 1];
    bool ok = k <= r.rank && u.rank == ix.rank - 1 + r.rank - k;
    for (int d = 0; ok && d < u.rank; d++) {
        int64_t want = d < ix.rank - 1 ? ix.dims[d] : r.dims[d - (ix.rank - 1) + k];
        if (want >= 0 && u.dims[d] >= 0 && want != u.dims[d]) ok = false;
    }
    if (!ok) {
        char a[96], b[96], c[96];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Dimensions mismatch in '%s' (op: '%s'): updates.shape must be "
                        "indices.shape[:-1] + ref.shape[indices.shape[-1]:]; got indices.shape "
                        "%s, updates.shape %s, ref.shape %s",
                        n->name, n->op->name, rill_shape_str(&ix, a, sizeof a),
                        rill_shape_str(&u, b, sizeof b), rill_shape_str(&r, c, sizeof c));
    }
}

static void scatter_ref_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_index(n, 1, "indices", s) || !check_updates_dtype(n, s)) return;
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
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = r;
}

#define SEG(nm, ni, shp)                                                                           \
    {                                                                                              \
        .name = nm, .default_name = nm, .min_inputs = ni, .max_inputs = ni, .noutputs = 1,         \
        .shape = shp, .grad = segment_grad                                                         \
    }
#define TSCAT(nm)                                                                                  \
    {                                                                                              \
        .name = nm, .default_name = nm, .min_inputs = 3, .max_inputs = 3, .noutputs = 1,           \
        .shape = tensor_scatter_shape, .grad = tensor_scatter_grad                                 \
    }
#define REFSCAT(nm, shp)                                                                           \
    {                                                                                              \
        .name = nm, .default_name = nm, .min_inputs = 3, .max_inputs = 3, .noutputs = 1,           \
        .stateful = true, .ref_inputs = 1, .shape = shp                                            \
    }

const rill__op_def rill__ops_segment[] = {
    SEG("SegmentMean", 2, segment_shape),
    SEG("SegmentMax", 2, segment_shape),
    SEG("SegmentMin", 2, segment_shape),
    SEG("SegmentProd", 2, segment_shape),
    SEG("UnsortedSegmentMax", 3, unsorted_segment_shape),
    SEG("UnsortedSegmentMin", 3, unsorted_segment_shape),
    SEG("UnsortedSegmentProd", 3, unsorted_segment_shape),
    {.name = "_SegmentReduceGrad",
     .default_name = "SegmentReduceGrad",
     .min_inputs = 4,
     .max_inputs = 4,
     .noutputs = 1,
     .shape = segment_reduce_grad_shape},
    TSCAT("TensorScatterUpdate"),
    TSCAT("TensorScatterAdd"),
    TSCAT("TensorScatterSub"),
    TSCAT("TensorScatterMax"),
    TSCAT("TensorScatterMin"),
    {.name = "_TensorScatterMinMaxGrad",
     .default_name = "TensorScatterMinMaxGrad",
     .min_inputs = 5,
     .max_inputs = 5,
     .noutputs = 2,
     .shape = tensor_scatter_minmax_grad_shape},
    REFSCAT("ScatterNdUpdate", scatter_nd_ref_shape),
    REFSCAT("ScatterNdAdd", scatter_nd_ref_shape),
    REFSCAT("ScatterNdSub", scatter_nd_ref_shape),
    REFSCAT("ScatterMul", scatter_ref_shape),
    REFSCAT("ScatterDiv", scatter_ref_shape),
    REFSCAT("ScatterMax", scatter_ref_shape),
    REFSCAT("ScatterMin", scatter_ref_shape),
    {0},
};
