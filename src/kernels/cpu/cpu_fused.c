/* cpu_fused.c - CPU kernels of the ops the partitioner fuses (runtime/partition.c), float only:
 *   _FusedMatMul(a, b, bias)              MatMul, BiasAdd and, with activation "Relu", Relu, in
 *                                         one pass (gemm.c adds the bias while rows are in cache)
 *   _FusedReluGradBiasAddGrad(g, f)       ReluGrad's output and its BiasAddGrad, in one pass
 *   _FusedElementwise(inputs...)          a group of elementwise ops (fuse_elementwise.c), row
 *                                         by row, each op the loop its own kernel runs
 * Each gives the bits its ops give one after another: the same loops in the same order. The
 * partitioner fuses only where the ops cannot fail, so these check nothing the ops would. */
#include "../kernel.h"
#include "gemm.h"
#include "loops.h"

#include <string.h>

_Static_assert((int)RILL__EW_ADD == (int)RILL__BIN_ADD && (int)RILL__EW_SUB == (int)RILL__BIN_SUB &&
                   (int)RILL__EW_MUL == (int)RILL__BIN_MUL && (int)RILL__EW_DIV == (int)RILL__BIN_DIV &&
                   (int)RILL__EW_MAX == (int)RILL__BIN_MAX && (int)RILL__EW_MIN == (int)RILL__BIN_MIN,
               "the program's binary codes are loops.h's");

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

/* --- _FusedElementwise --- */

typedef struct ew_job {
    const int64_t *prog, *inv, *code, *outs; /* the program's sections */
    int64_t H, nval, ninv, ninstr, nouts, rows;
    const float **in; /* per input: its data */
    const int64_t *in_width;
    float **out;
    const int64_t *out_width;
} ew_job;

/* Rows [r0, r1): every value's row, where it lives, then the instructions in order. A value
 * lives in the first output that holds it (a plain output or a part of a concatenation), else
 * in a scratch row; the other places that hold it get a copy at the end of the row. */
static void ew_rows(void *arg, int64_t r0, int64_t r1)
{
    const ew_job *j = arg;
    const rill__loops *l = rill__loops_get();
    int64_t H = j->H, nval = j->nval;
    /* One block for the shard's bookkeeping and scratch rows: on the stack for the groups an
     * RNN cell makes (a step allocates nothing), from the heap beyond that. */
    size_t n_scratch = (size_t)(nval * H) * sizeof(float), n_ptr = (size_t)nval * sizeof(float *),
           n_home = (size_t)nval * sizeof(int), n_form = (size_t)j->ninstr;
    size_t bytes = n_scratch + n_ptr + 2 * n_home + n_form + 1;
    _Alignas(64) char stack_block[32768];
    char *block = bytes <= sizeof stack_block ? stack_block : rill__malloc(bytes);
    RILL_CHECK_ALLOC(block);
    const float **ptr = (const float **)block; /* pointers first: each part stays aligned */
    float *scratch = (float *)(block + n_ptr);
    int *home_out = (int *)(block + n_ptr + n_scratch), *home_part = home_out + nval;
    signed char *form = (signed char *)(block + n_scratch + n_ptr + 2 * n_home);
    for (int64_t v = 0; v < nval; v++) home_out[v] = -1;
    for (int64_t i = 0; i < j->ninstr; i++) {
        const int64_t *c = j->code + 4 * i;
        form[i] = RILL__FORM_SAME;
        for (int64_t e = 0; e < j->ninv; e++) {
            const int64_t *d = j->inv + 4 * e;
            if (d[3] == 1 && d[0] == c[2]) form[i] = RILL__FORM_A_SCALAR;
            if (d[3] == 1 && d[0] == c[3]) form[i] = RILL__FORM_B_SCALAR;
        }
    }
    const int64_t *o = j->outs;
    for (int64_t k = 0; k < j->nouts; k++) {
        for (int64_t p = 0; p < o[0]; p++)
            if (home_out[o[1 + p]] < 0) home_out[o[1 + p]] = (int)k, home_part[o[1 + p]] = (int)p;
        o += 1 + o[0];
    }
    for (int64_t r = r0; r < r1; r++) {
        for (int64_t e = 0; e < j->ninv; e++) {
            const int64_t *d = j->inv + 4 * e; /* value, input, offset, kind */
            if (d[3] == 2) continue;
            ptr[d[0]] = d[3] ? j->in[d[1]] : j->in[d[1]] + r * j->in_width[d[1]] + d[2];
        }
        for (int64_t i = 0; i < j->ninstr; i++) {
            const int64_t *c = j->code + 4 * i; /* code, dst, a, b */
            if (c[0] == RILL__EW_VIEW) {
                ptr[c[1]] = ptr[c[2]];
                continue;
            }
            int64_t v = c[1];
            float *y = home_out[v] >= 0 ? j->out[home_out[v]] + r * j->out_width[home_out[v]] +
                                              (int64_t)home_part[v] * H
                                        : scratch + v * H;
            ptr[v] = y;
            const float *a = ptr[c[2]], *b = c[3] >= 0 ? ptr[c[3]] : NULL;
            switch (c[0]) {
            case RILL__EW_SIGMOID:
                l->f32.sigmoid(y, a, 0, H);
                break;
            case RILL__EW_TANH:
                l->f32.tanh(y, a, 0, H);
                break;
            case RILL__EW_RELU:
                l->f32.relu(y, a, 0, H);
                break;
            case RILL__EW_SIGMOID_GRAD:
                l->f32.sigmoid_grad(y, a, b, 0, H);
                break;
            case RILL__EW_TANH_GRAD:
                l->f32.tanh_grad(y, a, b, 0, H);
                break;
            case RILL__EW_RELU_GRAD:
                l->f32.relu_grad(y, a, b, 0, H);
                break;
            case RILL__EW_COPY:
                if (y != a) memcpy(y, a, (size_t)H * sizeof *y);
                break;
            case RILL__EW_ACCUMULATE:
                l->f32.accumulate(y, a, H);
                break;
            default: /* binary; a scalar operand is one float */
                l->f32.binary((int)c[0], form[i], y, a, b, 0, H);
            }
        }
        /* the places a value has besides its home */
        o = j->outs;
        for (int64_t k = 0; k < j->nouts; k++) {
            for (int64_t p = 0; p < o[0]; p++) {
                float *dst = j->out[k] + r * j->out_width[k] + p * H;
                if (dst != ptr[o[1 + p]]) memcpy(dst, ptr[o[1 + p]], (size_t)H * sizeof *dst);
            }
            o += 1 + o[0];
        }
    }
    if (block != stack_block) rill__free(block);
}

static void fused_elementwise_kernel(rill__kctx *ctx)
{
    const rill__attr *pa = rill__node_attr(ctx->node, "program");
    const int64_t *p = pa->v.ints.v;
    ew_job j = {.prog = p, .H = p[0], .nval = p[1], .ninv = p[2], .ninstr = p[3], .nouts = p[4]};
    j.inv = p + RILL__EW_HEADER;
    j.code = j.inv + 4 * j.ninv;
    j.outs = j.code + 4 * j.ninstr;
    int nin = ctx->node->ninputs;
    const float *inbuf[16];
    int64_t wbuf[16], owbuf[16];
    float *obuf[16];
    j.in = nin > 16 ? rill__malloc((size_t)nin * sizeof *j.in) : inbuf;
    int64_t *in_width = nin > 16 ? rill__malloc((size_t)nin * sizeof *in_width) : wbuf;
    j.out = j.nouts > 16 ? rill__malloc((size_t)j.nouts * sizeof *j.out) : obuf;
    int64_t *out_width = j.nouts > 16 ? rill__malloc((size_t)j.nouts * sizeof *out_width) : owbuf;
    RILL_CHECK_ALLOC(j.in);
    RILL_CHECK_ALLOC(in_width);
    RILL_CHECK_ALLOC(j.out);
    RILL_CHECK_ALLOC(out_width);
    j.in_width = in_width;
    j.out_width = out_width;
    /* The rows every row input has, and the leading dimensions the outputs take from the first. */
    const rill_tensor *lead = NULL;
    j.rows = -1;
    for (int k = 0; k < nin; k++) {
        const rill_tensor *t = ctx->inputs[k];
        j.in[k] = t->buf->data;
        in_width[k] = 0;
        bool rows_in = false;
        for (int64_t e = 0; e < j.ninv; e++)
            if (j.inv[4 * e + 1] == k && j.inv[4 * e + 3] == 0) rows_in = true;
        if (!rows_in) continue;
        int64_t w = t->shape.rank >= 1 ? t->shape.dims[t->shape.rank - 1] : 0;
        int64_t rows = w > 0 ? t->numel / w : -1;
        bool same_lead = !lead || (t->shape.rank == lead->shape.rank &&
                                   memcmp(t->shape.dims, lead->shape.dims,
                                          (size_t)(t->shape.rank - 1) * sizeof(int64_t)) == 0);
        if (w <= 0 || w % j.H != 0 || !same_lead || (j.rows >= 0 && rows != j.rows)) {
            char a[96], b[96];
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Incompatible shapes: %s vs. %s (in the elementwise ops fused as %s)",
                            rill_shape_str(lead ? &lead->shape : &t->shape, a, sizeof a),
                            rill_shape_str(&t->shape, b, sizeof b), ctx->node->name);
            goto out;
        }
        in_width[k] = w;
        j.rows = rows;
        if (!lead) lead = t;
    }
    if (!lead) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "%s: no input of the group's shape", ctx->node->name);
        goto out;
    }
    /* A SumToShape's target must be the group's shape: a fused group does not broadcast. */
    for (int64_t e = 0; e < j.ninv; e++) {
        if (j.inv[4 * e + 3] != 2) continue;
        const rill_tensor *t = ctx->inputs[j.inv[4 * e + 1]];
        bool same = t->numel == lead->shape.rank;
        for (int d = 0; same && d < lead->shape.rank; d++)
            same = (int64_t)rill_tensor_get_double(t, d) ==
                   (d == lead->shape.rank - 1 ? j.H : lead->shape.dims[d]);
        if (!same) {
            char a[96];
            rill__kctx_fail(ctx, RILL_UNIMPLEMENTED,
                            "%s: a gradient here reduces a %s tensor to another shape (a "
                            "broadcast at run time), which the fused elementwise ops do not do; "
                            "RILL_NO_FUSION=1 runs them one by one",
                            ctx->node->name, rill_shape_str(&lead->shape, a, sizeof a));
            goto out;
        }
    }
    const int64_t *o = j.outs;
    for (int64_t k = 0; k < j.nouts; k++) {
        rill_shape sh = lead->shape;
        sh.dims[sh.rank - 1] = j.H * o[0];
        rill_tensor *t = rill__kctx_alloc_output(ctx, (int)k, RILL_FLOAT, &sh);
        if (!t) goto out;
        j.out[k] = t->buf->data;
        out_width[k] = j.H * o[0];
        o += 1 + o[0];
    }
    /* Shards of rows, each about 32K elements of work. */
    int64_t cost = j.H * (j.ninstr > 0 ? j.ninstr : 1);
    int64_t min_rows = (1 << 15) / (cost > 0 ? cost : 1);
    rill__parallel_for(ctx->pool, j.rows, min_rows > 0 ? min_rows : 1, ew_rows, &j);
out:
    if (j.in != inbuf) rill__free((void *)j.in);
    if (in_width != wbuf) rill__free(in_width);
    if (j.out != obuf) rill__free(j.out);
    if (out_width != owbuf) rill__free(out_width);
}

const rill__kernel_def rill__cpu_kernels_fused[] = {
    {.op = "_FusedMatMul", .device_type = "CPU", .dtype = RILL_FLOAT, .fn = fused_matmul_kernel},
    {.op = "_FusedReluGradBiasAddGrad",
     .device_type = "CPU",
     .dtype = RILL_FLOAT,
     .fn = fused_relu_grad_bias_grad_kernel},
    {.op = "_FusedElementwise", /* float values; a shape input may be an integer */
     .device_type = "CPU",
     .dtype = RILL_DT_INVALID,
     .fn = fused_elementwise_kernel},
    {0},
};
