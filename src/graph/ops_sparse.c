/* ops_sparse.c - SparseToDense (tf.sparse_to_dense, tf.sparse.to_dense), CTCGreedyDecoder
 * (tf.nn.ctc_greedy_decoder, whose outputs are a SparseTensor's three parts) and the unigram
 * candidate samplers FixedUnigramCandidateSampler and LearnedUnigramCandidateSampler (TF's
 * FixedUnigramSampler / UnigramSampler; the other samplers are in ops_index.c).
 *
 * SparseToDense(sparse_indices [N, D] / [N] / [], output_shape [D], sparse_values [N] / [],
 * default_value []): the dense tensor of output_shape, default_value everywhere but at the
 * indices. The output's shape is output_shape's value when it is a Const (as TF's
 * MakeShapeFromShapeTensor), its checks and texts are TF's kernel's (validate_indices: in
 * bounds, lexicographically increasing, no repeats). Gradient (TF's _SparseToDenseGrad):
 * sparse_values get GatherNd(dy, indices) (summed for a scalar value), default_value the sum
 * of dy less that.
 *
 * Kernels: src/kernels/cpu/cpu_sparse.c. */
#include "graph_internal.h"

#include <string.h>

/* The shape an int vector input i stands for: a Const's values, else unknown dims (of known
 * rank when the vector's length is known). */
static rill_shape shape_of_input(const rill_node *n, int i)
{
    rill_output o = n->inputs[i];
    if (strcmp(o.node->op->name, "Const") == 0) {
        const rill_tensor *t = rill__node_attr(o.node, "value")->v.tensor;
        if (rill__is_index_dtype(t->dtype) && t->shape.rank == 1 && t->numel <= RILL_MAX_DIMS) {
            int64_t v[RILL_MAX_DIMS];
            for (int64_t k = 0; k < t->numel; k++) {
                v[k] = rill_tensor_get_int64(t, k);
                if (v[k] < -1) v[k] = -1;
            }
            return rill_shape_make((int)t->numel, v);
        }
    }
    if (strcmp(o.node->op->name, "Shape") == 0) return rill__in_shape(o.node, 0);
    rill_shape vs = rill__in_shape(n, i), out = rill_shape_unknown();
    if (vs.rank == 1 && vs.dims[0] >= 0 && vs.dims[0] <= RILL_MAX_DIMS) {
        out.rank = (int)vs.dims[0];
        for (int d = 0; d < out.rank; d++) out.dims[d] = -1;
    }
    return out;
}

/* --- SparseToDense --- */

static void sparse_to_dense_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_index(n, 0, "sparse_indices", s) ||
        !rill__check_same_dtype(n, 1, "output_shape", 0, "sparse_indices", s) ||
        !rill__check_same_dtype(n, 3, "default_value", 2, "sparse_values", s) ||
        !rill__check_rank(n, 1, 1, false, s))
        return;
    if (rill__in_dtype(n, 2) == RILL_STRING) {
        rill_status_set(s, RILL_UNIMPLEMENTED,
                        "rill's SparseToDense '%s' has no string kernel (sparse_values is string)",
                        n->name);
        return;
    }
    n->out_dtypes[0] = rill__in_dtype(n, 2);
    n->out_shapes[0] = shape_of_input(n, 1);
}

static void sparse_to_dense_grad(rill_graph *g, rill_node *n, const rill_output *dy,
                                 rill_output *dx)
{
    rill_output ix = n->inputs[0];
    rill_shape is = rill_output_shape(ix), vs = rill_output_shape(n->inputs[2]);
    if (is.rank != 2) ix = rill_reshape(g, ix, (int64_t[]){-1, 1}, 2, NULL);
    rill_output in[] = {dy[0], ix};
    rill_output vg = rill__out0(rill__node_create(g, "GatherNd", NULL, in, 2, NULL, 0));
    if (vs.rank == 0) vg = rill_sum(g, vg, NULL, -1, false, NULL);
    dx[0] = dx[1] = (rill_output){NULL, 0};
    dx[2] = vg;
    dx[3] = rill_sub(g, rill_sum(g, dy[0], NULL, -1, false, NULL),
                     rill_sum(g, vg, NULL, -1, false, NULL), NULL);
}

/* --- CTCGreedyDecoder --- */

static void ctc_greedy_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_float(n, 0, "inputs", false, s) || !rill__check_rank(n, 0, 3, false, s) ||
        !rill__check_rank(n, 1, 1, false, s))
        return;
    if (rill__in_dtype(n, 1) != RILL_INT32) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input 'sequence_length' of 'CTCGreedyDecoder' Op has type %s that does "
                        "not match expected type of int32.",
                        rill_dtype_name(rill__in_dtype(n, 1)));
        return;
    }
    rill_shape x = rill__in_shape(n, 0), l = rill__in_shape(n, 1);
    int64_t batch = x.rank == 3 ? x.dims[1] : -1;
    if (!rill__merge_dim(n, batch, l.rank == 1 ? l.dims[0] : -1, &batch, s)) return;
    n->out_dtypes[0] = n->out_dtypes[1] = n->out_dtypes[2] = RILL_INT64;
    n->out_dtypes[3] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_make(2, (int64_t[]){-1, 2});
    n->out_shapes[1] = rill_shape_vector(-1);
    n->out_shapes[2] = rill_shape_vector(2);
    n->out_shapes[3] = rill_shape_make(2, (int64_t[]){batch, 1});
}

/* --- FixedUnigramCandidateSampler, LearnedUnigramCandidateSampler --- */

static void unigram_sampler_shape(rill_node *n, rill_status *s)
{
    rill__sampler_shape(n, s);
    if (!rill_status_ok(s) || strcmp(n->op->name, "FixedUnigramCandidateSampler") != 0) return;
    int64_t shards = rill__attr_int(n, "num_shards", 1), shard = rill__attr_int(n, "shard", 0);
    if (shards < 1 || shard < 0 || rill__attr_int(n, "num_reserved_ids", 0) < 0)
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "FixedUnigramCandidateSampler '%s': num_shards must be >= 1, shard and "
                        "num_reserved_ids >= 0",
                        n->name);
}

const rill__op_def rill__ops_sparse[] = {
    {.name = "SparseToDense",
     .default_name = "SparseToDense",
     .min_inputs = 4,
     .max_inputs = 4,
     .noutputs = 1,
     .shape = sparse_to_dense_shape,
     .grad = sparse_to_dense_grad},
    {.name = "CTCGreedyDecoder",
     .default_name = "CTCGreedyDecoder",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 4,
     .shape = ctc_greedy_shape},
    {.name = "FixedUnigramCandidateSampler",
     .default_name = "FixedUnigramCandidateSampler",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 3,
     .stateful = true,
     .shape = unigram_sampler_shape},
    {.name = "LearnedUnigramCandidateSampler",
     .default_name = "LearnedUnigramCandidateSampler",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 3,
     .stateful = true,
     .shape = unigram_sampler_shape},
    {0},
};
