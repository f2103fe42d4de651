/* cpu_fused.c - CPU kernels of the ops the partitioner fuses (runtime/partition.c), float only:
 *   _FusedMatMul(a, b, bias)              MatMul, BiasAdd and, with activation "Relu", Relu, in
 *                                         one pass (gemm.c adds the bias while rows are in cache)
 *   _FusedReluGradBiasAddGrad(g, f)       ReluGrad's output and its BiasAddGrad, in one pass
 * Each gives the bits its ops give one after another: the same loops in the same order. The
 * partitioner fuses only where the ops cannot fail, so these check nothing the ops would. */
#include "../kernel.h"
#include "gemm.h"
#include "loops.h"

#include <string.h>

static void fused_matmul_kernel(rill__kctx *ctx)
{
    const rill_tensor *a = ctx->inputs[0], *b = ctx->inputs[1], *bias = ctx->inputs[2];
    bool ta = rill__attr_bool(ctx->node, "transpose_a", false);
    bool tb = rill__attr_bool(ctx->node, "transpose_b", false);
    const rill__attr *act = rill__node_attr(ctx->node, "activation");
    bool relu = act && strcmp(act->v.s, "Relu") == 0;
    int64_t m, k, n;
    if (!rill__check_matmul(ctx, a, b, &m, &k, &n)) return;
    rill_shape os = rill_shape_matrix(m, n);
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_FLOAT, &os);
    if (!rill__gemm_f32_bias(ctx->pool, ta, tb, m, n, k, a->buf->data, a->shape.dims[1],
                             b->buf->data, b->shape.dims[1], out->buf->data, n, bias->buf->data,
                             relu))
        rill__kctx_fail(ctx, RILL_INTERNAL, "_FusedMatMul: oneDNN's sgemm failed");
}

typedef struct rgb_job {
    const float *g, *f;
    float *d, *db;
    int64_t rows, cols;
} rgb_job;

/* Columns [c0, c1): d = ReluGrad over them, row by row, and db = their sums down the rows, added
 * a row at a time as BiasAddGrad adds them. */
static void rgb_range(void *arg, int64_t c0, int64_t c1)
{
    const rgb_job *j = arg;
    const rill__loops *l = rill__loops_get();
    if (c1 <= c0) return;
    memset(j->db + c0, 0, (size_t)(c1 - c0) * sizeof *j->db);
    for (int64_t r = 0; r < j->rows; r++) {
        int64_t o = r * j->cols;
        l->f32.relu_grad(j->d + o, j->g + o, j->f + o, c0, c1);
        l->f32.accumulate(j->db + c0, j->d + o + c0, c1 - c0);
    }
}

static void fused_relu_grad_bias_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *g = ctx->inputs[0], *f = ctx->inputs[1];
    int64_t c = g->shape.dims[g->shape.rank - 1], rows = c > 0 ? g->numel / c : 0;
    rill_shape vs = rill_shape_vector(c);
    rill_tensor *d = rill__kctx_alloc_output(ctx, 0, RILL_FLOAT, &g->shape);
    rill_tensor *db = rill__kctx_alloc_output(ctx, 1, RILL_FLOAT, &vs);
    rgb_job j = {g->buf->data, f->buf->data, d->buf->data, db->buf->data, rows, c};
    /* Shards over columns, as BiasAddGrad's: a shard still holds a few cache lines of each row. */
    int64_t min_cols = (1 << 16) / (rows > 0 ? rows : 1);
    rill__parallel_for(ctx->pool, c, min_cols > 64 ? min_cols : 64, rgb_range, &j);
}

const rill__kernel_def rill__cpu_kernels_fused[] = {
    {.op = "_FusedMatMul", .device_type = "CPU", .dtype = RILL_FLOAT, .fn = fused_matmul_kernel},
    {.op = "_FusedReluGradBiasAddGrad",
     .device_type = "CPU",
     .dtype = RILL_FLOAT,
     .fn = fused_relu_grad_bias_grad_kernel},
    {0},
};
