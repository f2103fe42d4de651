/* ops_search.c - index-family ops that search, count, permute or route rows: ListDiff
 * (tf.setdiff1d), InvertPermutation, LowerBound / UpperBound (tf.searchsorted), Bincount,
 * DynamicPartition, DynamicStitch / ParallelDynamicStitch and UnravelIndex.
 *
 * Only DynamicPartition and the stitches are differentiable (TF's data_flow_grad.py): a
 * partition's gradient stitches the partitions' gradients back by the original positions (a
 * Range of data's size partitioned the same way); a stitch's gathers its gradient at each
 * indices input. The others' outputs are integers or counts; TF registers no gradient. */
#include "graph_internal.h"

#include <string.h>

static bool want_rank(rill_node *n, int i, int rank, rill_status *s)
{
    rill_shape x = rill__in_shape(n, i);
    if (x.rank < 0 || x.rank == rank) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Shape must be rank %d but is rank %d for '%s' (op: '%s')", rank, x.rank,
                    n->name, n->op->name);
    return false;
}

static bool want_dtype(rill_node *n, int i, const char *param, bool int64_ok, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, i);
    if (t == RILL_INT32 || (int64_ok && t == RILL_INT64)) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Value passed to parameter '%s' has DataType %s not in list of allowed "
                    "values: %s",
                    param, rill_dtype_name(t), int64_ok ? "int32, int64" : "int32");
    return false;
}

/* --- ListDiff --- */

static void list_diff_shape(rill_node *n, rill_status *s)
{
    if (!want_rank(n, 0, 1, s) || !want_rank(n, 1, 1, s)) return;
    if (rill__in_dtype(n, 0) != rill__in_dtype(n, 1)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input 'y' of 'ListDiff' Op has type %s that does not match type %s of "
                        "argument 'x'.",
                        rill_dtype_name(rill__in_dtype(n, 1)),
                        rill_dtype_name(rill__in_dtype(n, 0)));
        return;
    }
    rill_dtype it = rill__attr_type(n, "out_idx", RILL_INT32);
    if (!rill__is_index_dtype(it)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'out_idx' of %s is not in the list of allowed values: "
                        "int32, int64",
                        rill_dtype_name(it));
        return;
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_dtypes[1] = it;
    n->out_shapes[0] = n->out_shapes[1] = rill_shape_vector(-1);
}

/* --- InvertPermutation --- */

static void invert_permutation_shape(rill_node *n, rill_status *s)
{
    if (!want_dtype(n, 0, "x", true, s) || !want_rank(n, 0, 1, s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

/* --- LowerBound, UpperBound --- */

static void bound_shape(rill_node *n, rill_status *s)
{
    if (!want_rank(n, 0, 2, s) || !want_rank(n, 1, 2, s)) return;
    if (rill__in_dtype(n, 0) != rill__in_dtype(n, 1)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input 'values' of '%s' Op has type %s that does not match type %s of "
                        "argument 'sorted_inputs'.",
                        n->op->name, rill_dtype_name(rill__in_dtype(n, 1)),
                        rill_dtype_name(rill__in_dtype(n, 0)));
        return;
    }
    rill_dtype ot = rill__attr_type(n, "out_type", RILL_INT32);
    if (!rill__is_index_dtype(ot)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'out_type' of %s is not in the list of allowed values: "
                        "int32, int64",
                        rill_dtype_name(ot));
        return;
    }
    rill_shape a = rill__in_shape(n, 0), v = rill__in_shape(n, 1);
    if (a.rank == 2 && v.rank == 2 && a.dims[0] >= 0 && v.dims[0] >= 0 && a.dims[0] != v.dims[0]) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Dimension 0 in both shapes must be equal, but are %lld and %lld for "
                        "'%s' (op: '%s')",
                        (long long)a.dims[0], (long long)v.dims[0], n->name, n->op->name);
        return;
    }
    n->out_dtypes[0] = ot;
    n->out_shapes[0] = v;
}

/* --- Bincount(arr, size, weights) --- */

static void bincount_shape(rill_node *n, rill_status *s)
{
    if (!want_dtype(n, 0, "arr", false, s) || !want_dtype(n, 1, "size", false, s) ||
        !want_rank(n, 1, 0, s))
        return;
    rill_dtype t = rill__in_dtype(n, 2);
    if (t != RILL_INT32 && t != RILL_INT64 && t != RILL_FLOAT && t != RILL_DOUBLE) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value passed to parameter 'weights' has DataType %s not in list of "
                        "allowed values: int32, int64, float32, float64",
                        rill_dtype_name(t));
        return;
    }
    int64_t k = -1;
    rill_output o = n->inputs[1];
    if (strcmp(o.node->op->name, "Const") == 0)
        k = rill_tensor_get_int64(rill__node_attr(o.node, "value")->v.tensor, 0);
    n->out_dtypes[0] = t;
    n->out_shapes[0] = rill_shape_vector(k);
}

/* --- DynamicPartition(data, partitions), num_partitions outputs --- */

static void dynamic_partition_shape(rill_node *n, rill_status *s)
{
    if (!want_dtype(n, 1, "partitions", false, s)) return;
    int64_t np = rill__attr_int(n, "num_partitions", -1);
    if (np < 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'num_partitions' of %lld must be at least minimum 1",
                        (long long)np);
        return;
    }
    rill_shape d = rill__in_shape(n, 0), p = rill__in_shape(n, 1);
    rill_shape out = rill_shape_unknown();
    if (d.rank >= 0 && p.rank >= 0) {
        bool ok = p.rank <= d.rank;
        for (int i = 0; ok && i < p.rank; i++)
            if (d.dims[i] >= 0 && p.dims[i] >= 0 && d.dims[i] != p.dims[i]) ok = false;
        if (!ok) {
            char a[96], b[96];
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "data.shape must start with partitions.shape, got data.shape = %s, "
                            "partitions.shape = %s",
                            rill_shape_str(&d, a, sizeof a), rill_shape_str(&p, b, sizeof b));
            return;
        }
        out = (rill_shape){.rank = 1, .dims = {-1}};
        for (int i = p.rank; i < d.rank; i++) out.dims[out.rank++] = d.dims[i];
    }
    for (int i = 0; i < n->noutputs; i++) {
        n->out_dtypes[i] = rill__in_dtype(n, 0);
        n->out_shapes[i] = out;
    }
}

static void dynamic_partition_grad(rill_graph *g, rill_node *n, const rill_output *dy,
                                   rill_output *dx)
{
    dx[0] = dx[1] = (rill_output){NULL, 0};
    int np = n->noutputs;
    if (np > 64) return;
    rill_output data = n->inputs[0], parts = n->inputs[1];
    rill_output size = rill__out0(rill__node_create(g, "Size", NULL, &parts, 1, NULL, 0));
    if (rill_output_dtype(size) != RILL_INT32) size = rill_cast(g, size, RILL_INT32, NULL);
    rill_output rin[] = {rill_const_scalar(g, RILL_INT32, 0, "zero"), size,
                         rill_const_scalar(g, RILL_INT32, 1, "one")};
    rill__attr ra[] = {RILL__A_TYPE("Tidx", RILL_INT32)};
    rill_output range = rill__out0(rill__node_create(g, "Range", NULL, rin, 3, ra, 1));
    rill_output orig = rill_reshape_to(g, range, rill_shape_of(g, parts, NULL), NULL);
    rill_output pin[] = {orig, parts};
    rill__attr pa[] = {RILL__A_INT("num_partitions", np), RILL__A_INT("num_outputs", np)};
    rill_node *pn = rill__node_create(g, "DynamicPartition", NULL, pin, 2, pa, 2);
    if (!pn) return;
    rill_output sin[128];
    for (int i = 0; i < np; i++) {
        sin[i] = (rill_output){pn, i};
        sin[np + i] = dy[i].node ? dy[i] : rill_zeros_like(g, (rill_output){n, i}, NULL);
    }
    rill__attr sa[] = {RILL__A_INT("N", np)};
    rill_output st = rill__out0(rill__node_create(g, "DynamicStitch", NULL, sin, 2 * np, sa, 1));
    dx[0] = rill_reshape_to(g, st, rill_shape_of(g, data, NULL), NULL);
}

/* --- DynamicStitch(indices[N], data[N]) --- */

static void dynamic_stitch_shape(rill_node *n, rill_status *s)
{
    int k = n->ninputs / 2;
    if (n->ninputs % 2 || k < 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s '%s' takes N indices and N data inputs, got %d inputs", n->op->name,
                        n->name, n->ninputs);
        return;
    }
    rill_dtype t = rill__in_dtype(n, k);
    for (int i = 0; i < k; i++) {
        if (!want_dtype(n, i, "indices", false, s)) return;
        if (rill__in_dtype(n, k + i) != t) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Tensors in list passed to 'data' of '%s' Op have types that don't "
                            "all match: %s and %s",
                            n->op->name, rill_dtype_name(t),
                            rill_dtype_name(rill__in_dtype(n, k + i)));
            return;
        }
    }
    rill_shape out = rill_shape_unknown();
    for (int i = 0; i < k; i++) {
        rill_shape ix = rill__in_shape(n, i), d = rill__in_shape(n, k + i);
        if (ix.rank < 0 || d.rank < 0) continue;
        bool ok = ix.rank <= d.rank;
        for (int j = 0; ok && j < ix.rank; j++)
            if (ix.dims[j] >= 0 && d.dims[j] >= 0 && ix.dims[j] != d.dims[j]) ok = false;
        if (!ok) {
            char a[96], b[96];
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Dimensions must be equal for '%s' (op: '%s'): data[%d].shape = %s "
                            "does not start with indices[%d].shape = %s",
                            n->name, n->op->name, i, rill_shape_str(&d, a, sizeof a), i,
                            rill_shape_str(&ix, b, sizeof b));
            return;
        }
        if (out.rank < 0) {
            out = (rill_shape){.rank = 1, .dims = {-1}};
            for (int j = ix.rank; j < d.rank; j++) out.dims[out.rank++] = d.dims[j];
        }
    }
    n->out_dtypes[0] = t;
    n->out_shapes[0] = out;
}

static void dynamic_stitch_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    int k = n->ninputs / 2;
    for (int i = 0; i < n->ninputs; i++) dx[i] = (rill_output){NULL, 0};
    if (!dy[0].node) return;
    for (int i = 0; i < k; i++) {
        rill_output in[] = {dy[0], n->inputs[i]};
        rill__attr a[] = {RILL__A_INT("axis", 0)};
        dx[k + i] = rill__out0(rill__node_create(g, "GatherV2", NULL, in, 2, a, 1));
    }
}

/* --- UnravelIndex(indices, dims) --- */

static void unravel_index_shape(rill_node *n, rill_status *s)
{
    if (!want_dtype(n, 0, "indices", true, s) || !want_dtype(n, 1, "dims", true, s)) return;
    if (rill__in_dtype(n, 0) != rill__in_dtype(n, 1)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input 'dims' of 'UnravelIndex' Op has type %s that does not match type "
                        "%s of argument 'indices'.",
                        rill_dtype_name(rill__in_dtype(n, 1)),
                        rill_dtype_name(rill__in_dtype(n, 0)));
        return;
    }
    rill_shape ix = rill__in_shape(n, 0), d = rill__in_shape(n, 1);
    if (!want_rank(n, 1, 1, s)) return;
    if (ix.rank > 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be at most rank 1 but is rank %d for '%s' (op: "
                        "'UnravelIndex')",
                        ix.rank, n->name);
        return;
    }
    int64_t nd = d.rank == 1 ? d.dims[0] : -1;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    if (ix.rank < 0)
        n->out_shapes[0] = rill_shape_unknown();
    else if (ix.rank == 0)
        n->out_shapes[0] = rill_shape_vector(nd);
    else
        n->out_shapes[0] = rill_shape_matrix(nd, ix.dims[0]);
}

const rill__op_def rill__ops_search[] = {
    {.name = "ListDiff",
     .default_name = "ListDiff",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 2,
     .shape = list_diff_shape},
    {.name = "InvertPermutation",
     .default_name = "InvertPermutation",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = invert_permutation_shape},
    {.name = "LowerBound",
     .default_name = "LowerBound",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = bound_shape},
    {.name = "UpperBound",
     .default_name = "UpperBound",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = bound_shape},
    {.name = "Bincount",
     .default_name = "Bincount",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .shape = bincount_shape},
    {.name = "DynamicPartition",
     .default_name = "DynamicPartition",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = -1,
     .shape = dynamic_partition_shape,
     .grad = dynamic_partition_grad},
    {.name = "DynamicStitch",
     .default_name = "DynamicStitch",
     .min_inputs = 2,
     .max_inputs = -1,
     .noutputs = 1,
     .shape = dynamic_stitch_shape,
     .grad = dynamic_stitch_grad},
    {.name = "ParallelDynamicStitch",
     .default_name = "ParallelDynamicStitch",
     .min_inputs = 2,
     .max_inputs = -1,
     .noutputs = 1,
     .shape = dynamic_stitch_shape,
     .grad = dynamic_stitch_grad},
    {.name = "UnravelIndex",
     .default_name = "UnravelIndex",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = unravel_index_shape},
    {0},
};
