/* cpu_nn.c - CPU kernels for the neural-network ops: BiasAdd, BiasAddGrad, Relu, ReluGrad,
 * Sigmoid, SigmoidGrad, Tanh, TanhGrad, Softmax and the two softmax cross-entropies.
 *
 * Every kernel has the same three steps. It validates its inputs (build-time shapes may have
 * been unknown), allocates its outputs with rill__kctx_alloc_output (recycled across steps) and
 * runs its loop (loops.h: written once per element type, float and double, compiled once per
 * instruction set and chosen at run time; these ops sit on the training fast path: BiasAdd, Relu
 * and their gradients run on every layer of every step). Half tensors are widened into float scratch,
 * computed as float and narrowed back. Tensors big enough to pay for the hand-off are split
 * into element, row or column ranges over the intra-op pool. */
#include "../kernel.h"
#include "loops.h"

#include <math.h>
#include <string.h>

/* Elements per shard below which splitting across threads costs more than it saves. */
#define NN_GRAIN (1 << 16)

/* What a loop works on: raw element pointers of compute type t (float for half tensors). */
typedef struct nn_job {
    rill_dtype t; /* RILL_FLOAT or RILL_DOUBLE */
    const void *in[2];
    void *out[2];
    int64_t rows, cols; /* row-structured ops view their tensors as [rows, cols] */
    const void *labels; /* sparse cross-entropy: int32 or int64 class per row */
    bool labels64;
    /* Half: float scratch standing in for half tensors, and the half outputs to narrow into. */
    float *scratch[4];
    int nscratch;
    rill_tensor *half_out[2];
} nn_job;

static float *scratch_new(nn_job *j, int64_t n)
{
    float *f = rill__malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
    RILL_CHECK_ALLOC(f);
    j->scratch[j->nscratch++] = f;
    return f;
}

/* Points j at the element data of ins and outs; half tensors go through float scratch. */
static void job_init(nn_job *j, const rill_tensor *const *ins, int nin, rill_tensor *const *outs,
                     int nout)
{
    j->t = ins[0]->dtype == RILL_DOUBLE ? RILL_DOUBLE : RILL_FLOAT;
    for (int i = 0; i < nin; i++) {
        if (ins[i]->dtype == RILL_HALF) {
            float *f = scratch_new(j, ins[i]->numel);
            rill__convert(RILL_FLOAT, f, RILL_HALF, ins[i]->buf->data, ins[i]->numel);
            j->in[i] = f;
        } else {
            j->in[i] = ins[i]->buf->data;
        }
    }
    for (int i = 0; i < nout; i++) {
        if (outs[i]->dtype == RILL_HALF) {
            j->out[i] = scratch_new(j, outs[i]->numel);
            j->half_out[i] = outs[i];
        } else {
            j->out[i] = outs[i]->buf->data;
        }
    }
}

/* Narrows half outputs and frees the scratch. */
static void job_finish(nn_job *j)
{
    for (int i = 0; i < 2; i++)
        if (j->half_out[i])
            rill__convert(RILL_HALF, j->half_out[i]->buf->data, RILL_FLOAT, j->out[i],
                          j->half_out[i]->numel);
    for (int i = 0; i < j->nscratch; i++) rill__free(j->scratch[i]);
    j->nscratch = 0;
}

/* Runs fn over items [0, n), each about cost elements of work, sharded over the intra-op pool
 * when there is enough of it. */
static void job_run(rill__kctx *ctx, nn_job *j, int64_t n, int64_t cost, rill__range_fn fn)
{
    int64_t min_per_shard = NN_GRAIN / (cost > 0 ? cost : 1);
    rill__parallel_for(ctx->pool, n, min_per_shard > 0 ? min_per_shard : 1, fn, j);
}

/* --- the loops ---
 * The elementwise and row loops live in loops_isa.c, compiled once per instruction set; the
 * table for this CPU is chosen at run time (loops.h). */

#define LOG_T(x) _Generic((x), float : logf, default : log)(x)

/* Loop F for the element type of pointer p, from the table for this CPU. */
#define NN_T(F, p) _Generic((p), float * : rill__loops_get()->f32.F, double * : rill__loops_get()->f64.F)

/* Defines NAME(void *job, int64_t b, int64_t e), a range function for rill__parallel_for, that
 * runs BODY over [b, e) with T the job's element type and j the job. */
#define NN_RANGE(NAME, ...)                                                                        \
    static void NAME##_f32(const nn_job *j, int64_t b, int64_t e)                                  \
    {                                                                                              \
        typedef float T;                                                                           \
        __VA_ARGS__                                                                                \
    }                                                                                              \
    static void NAME##_f64(const nn_job *j, int64_t b, int64_t e)                                  \
    {                                                                                              \
        typedef double T;                                                                          \
        __VA_ARGS__                                                                                \
    }                                                                                              \
    static void NAME(void *arg, int64_t b, int64_t e)                                              \
    {                                                                                              \
        const nn_job *j = arg;                                                                     \
        if (j->t == RILL_FLOAT)                                                                    \
            NAME##_f32(j, b, e);                                                                   \
        else                                                                                       \
            NAME##_f64(j, b, e);                                                                   \
    }

/* Elementwise: out[0] = F(in[0]) or F(in[0], in[1]), over elements. */
#define NN_UNARY_RANGE(F)                                                                          \
    NN_RANGE(F##_range, {                                                                          \
        T *y = j->out[0];                                                                          \
        NN_T(F, y)(y, j->in[0], b, e);                                                             \
    })
#define NN_BINARY_RANGE(F)                                                                         \
    NN_RANGE(F##_range, {                                                                          \
        T *y = j->out[0];                                                                          \
        NN_T(F, y)(y, j->in[0], j->in[1], b, e);                                                   \
    })
NN_UNARY_RANGE(relu)
NN_BINARY_RANGE(relu_grad) /* in[0] = gradients, in[1] = features */
NN_UNARY_RANGE(sigmoid)
NN_BINARY_RANGE(sigmoid_grad) /* in[0] = y, in[1] = dy */
NN_UNARY_RANGE(tanh)
NN_BINARY_RANGE(tanh_grad)

/* Over rows: in[0] = value [rows, cols], in[1] = bias [cols]. */
NN_RANGE(bias_add_range, {
    const int64_t c = j->cols;
    for (int64_t r = b; r < e; r++) {
        T *y = (T *)j->out[0] + r * c;
        NN_T(add, y)(y, (const T *)j->in[0] + r * c, j->in[1], c);
    }
})

/* Over columns [b, e): out[k] = the sum over rows of in[0][r, k], adding one row at a time (a
 * vectorised pass over the column range each). */
NN_RANGE(bias_add_grad_range, {
    const int64_t c = j->cols;
    T *out = (T *)j->out[0] + b;
    if (e <= b) return;
    memset(out, 0, (size_t)(e - b) * sizeof(T));
    for (int64_t r = 0; r < j->rows; r++)
        NN_T(accumulate, out)(out, (const T *)j->in[0] + r * c + b, e - b);
})

/* Rows of softmax-like ops are taken NN_ROW_CHUNK at a time (their maxima and sums live on
 * the stack). */
#define NN_ROW_CHUNK 64

/* Over rows: softmax of each. */
NN_RANGE(softmax_range, {
    const int64_t c = j->cols;
    T max[NN_ROW_CHUNK], sum[NN_ROW_CHUNK];
    for (int64_t r0 = b; r0 < e; r0 += NN_ROW_CHUNK) {
        int64_t nr = e - r0 < NN_ROW_CHUNK ? e - r0 : NN_ROW_CHUNK;
        T *y = (T *)j->out[0] + r0 * c;
        NN_T(exp_shifted_rows, y)(y, (const T *)j->in[0] + r0 * c, nr, c, max, sum);
        for (int64_t r = 0; r < nr; r++) NN_T(scale, y)(y + r * c, (T)1 / sum[r], c);
    }
})

/* Over rows: in[0] = logits, in[1] = labels (probabilities); out[0] = loss [rows],
 * out[1] = backprop. loss = sum_k labels_k * (logsumexp - x_k), backprop = softmax - labels. */
NN_RANGE(softmax_ce_range, {
    const int64_t c = j->cols;
    T max[NN_ROW_CHUNK], sum[NN_ROW_CHUNK];
    for (int64_t r0 = b; r0 < e; r0 += NN_ROW_CHUNK) {
        int64_t nr = e - r0 < NN_ROW_CHUNK ? e - r0 : NN_ROW_CHUNK;
        T *bp0 = (T *)j->out[1] + r0 * c;
        NN_T(exp_shifted_rows, bp0)(bp0, (const T *)j->in[0] + r0 * c, nr, c, max, sum);
        for (int64_t r = 0; r < nr; r++) {
            const T *x = (const T *)j->in[0] + (r0 + r) * c,
                    *p = (const T *)j->in[1] + (r0 + r) * c;
            T *bp = bp0 + r * c, log_sum = LOG_T(sum[r]), inv = (T)1 / sum[r], loss = 0;
            for (int64_t k = 0; k < c; k++) {
                loss += p[k] * (log_sum - (x[k] - max[r]));
                bp[k] = bp[k] * inv - p[k];
            }
            ((T *)j->out[0])[r0 + r] = loss;
        }
    }
})

/* Over rows: in[0] = logits, labels checked to lie in [0, cols). loss = logsumexp - x_label,
 * backprop = softmax - onehot(label). */
NN_RANGE(sparse_softmax_ce_range, {
    const int64_t c = j->cols;
    T max[NN_ROW_CHUNK], sum[NN_ROW_CHUNK];
    for (int64_t r0 = b; r0 < e; r0 += NN_ROW_CHUNK) {
        int64_t nr = e - r0 < NN_ROW_CHUNK ? e - r0 : NN_ROW_CHUNK;
        T *bp0 = (T *)j->out[1] + r0 * c;
        NN_T(exp_shifted_rows, bp0)(bp0, (const T *)j->in[0] + r0 * c, nr, c, max, sum);
        for (int64_t r = 0; r < nr; r++) {
            const T *x = (const T *)j->in[0] + (r0 + r) * c;
            T *bp = bp0 + r * c;
            int64_t label = j->labels64 ? ((const int64_t *)j->labels)[r0 + r]
                                        : ((const int32_t *)j->labels)[r0 + r];
            NN_T(scale, bp)(bp, (T)1 / sum[r], c);
            bp[label] -= 1;
            ((T *)j->out[0])[r0 + r] = LOG_T(sum[r]) - (x[label] - max[r]);
        }
    }
})

/* --- kernels --- */

static bool is_float_dtype(rill_dtype t)
{
    return t == RILL_FLOAT || t == RILL_DOUBLE || t == RILL_HALF;
}

/* Input i must be a float type equal to input 0's. */
static bool check_dtype(rill__kctx *ctx, int i)
{
    rill_dtype t0 = ctx->inputs[0]->dtype, t = ctx->inputs[i]->dtype;
    if (is_float_dtype(t0) && t == t0) return true;
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: input %d has type %s, expected %s",
                    ctx->node->op->name, i, rill_dtype_name(t),
                    rill_dtype_name(is_float_dtype(t0) ? t0 : RILL_FLOAT));
    return false;
}

/* The elements before the last axis. */
static int64_t outer_rows(const rill_tensor *t)
{
    int64_t c = t->shape.dims[t->shape.rank - 1];
    return c > 0 ? t->numel / c : 0;
}

static void unary(rill__kctx *ctx, rill__range_fn fn)
{
    const rill_tensor *x = ctx->inputs[0];
    if (!check_dtype(ctx, 0)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    nn_job j = {0};
    job_init(&j, &x, 1, &y, 1);
    job_run(ctx, &j, x->numel, 1, fn);
    job_finish(&j);
}

/* Two inputs of one shape (gradient ops). */
static void binary(rill__kctx *ctx, rill__range_fn fn)
{
    const rill_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
    if (!check_dtype(ctx, 1)) return;
    if (!rill_shape_equal(&a->shape, &b->shape)) {
        char sa[96], sb[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Inputs to operation %s of type %s must have the same size and shape.  "
                        "Input 0: %s != input 1: %s",
                        ctx->node->name, ctx->node->op->name,
                        rill_shape_str(&a->shape, sa, sizeof sa),
                        rill_shape_str(&b->shape, sb, sizeof sb));
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, a->dtype, &a->shape);
    const rill_tensor *ins[] = {a, b};
    nn_job j = {0};
    job_init(&j, ins, 2, &y, 1);
    job_run(ctx, &j, a->numel, 1, fn);
    job_finish(&j);
}

static void relu_kernel(rill__kctx *ctx)
{
    unary(ctx, relu_range);
}

static void relu_grad_kernel(rill__kctx *ctx)
{
    binary(ctx, relu_grad_range);
}

static void sigmoid_kernel(rill__kctx *ctx)
{
    unary(ctx, sigmoid_range);
}

static void sigmoid_grad_kernel(rill__kctx *ctx)
{
    binary(ctx, sigmoid_grad_range);
}

static void tanh_kernel(rill__kctx *ctx)
{
    unary(ctx, tanh_range);
}

static void tanh_grad_kernel(rill__kctx *ctx)
{
    binary(ctx, tanh_grad_range);
}

static void bias_add_kernel(rill__kctx *ctx)
{
    const rill_tensor *v = ctx->inputs[0], *bias = ctx->inputs[1];
    char sv[96], sb[96];
    if (!check_dtype(ctx, 1)) return;
    if (v->shape.rank < 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s",
                        rill_shape_str(&v->shape, sv, sizeof sv));
        return;
    }
    if (bias->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Biases must be 1D: %s",
                        rill_shape_str(&bias->shape, sb, sizeof sb));
        return;
    }
    int64_t c = v->shape.dims[v->shape.rank - 1];
    if (bias->shape.dims[0] != c) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Must provide as many biases as the last dimension of the input tensor: "
                        "%s vs. %s",
                        rill_shape_str(&bias->shape, sb, sizeof sb),
                        rill_shape_str(&v->shape, sv, sizeof sv));
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, v->dtype, &v->shape);
    const rill_tensor *ins[] = {v, bias};
    nn_job j = {.rows = outer_rows(v), .cols = c};
    job_init(&j, ins, 2, &y, 1);
    job_run(ctx, &j, j.rows, c, bias_add_range);
    job_finish(&j);
}

static void bias_add_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *g = ctx->inputs[0];
    if (!check_dtype(ctx, 0)) return;
    if (g->shape.rank < 2) {
        char sg[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s",
                        rill_shape_str(&g->shape, sg, sizeof sg));
        return;
    }
    int64_t c = g->shape.dims[g->shape.rank - 1];
    rill_shape os = rill_shape_vector(c);
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, g->dtype, &os);
    nn_job j = {.rows = outer_rows(g), .cols = c};
    job_init(&j, &g, 1, &out, 1);
    /* Shards over columns; a shard should still hold a few cache lines of each row. */
    int64_t min_cols = NN_GRAIN / (j.rows > 0 ? j.rows : 1);
    rill__parallel_for(ctx->pool, c, min_cols > 64 ? min_cols : 64, bias_add_grad_range, &j);
    job_finish(&j);
}

static void softmax_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    if (!check_dtype(ctx, 0)) return;
    if (x->shape.rank < 1) {
        char sx[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "logits must have >= 1 dimension, got %s",
                        rill_shape_str(&x->shape, sx, sizeof sx));
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    nn_job j = {.rows = outer_rows(x), .cols = x->shape.dims[x->shape.rank - 1]};
    job_init(&j, &x, 1, &y, 1);
    job_run(ctx, &j, j.rows, j.cols * 4, softmax_range);
    job_finish(&j);
}

/* Allocates the loss [rows] and backprop [rows, cols] outputs. */
static void alloc_ce_outputs(rill__kctx *ctx, const rill_tensor *logits, rill_tensor **outs)
{
    rill_shape ls = rill_shape_vector(logits->shape.dims[0]);
    outs[0] = rill__kctx_alloc_output(ctx, 0, logits->dtype, &ls);
    outs[1] = rill__kctx_alloc_output(ctx, 1, logits->dtype, &logits->shape);
}

static bool check_classes(rill__kctx *ctx, const rill_tensor *logits)
{
    if (logits->shape.dims[1] > 0 || logits->shape.dims[0] == 0) return true;
    char sl[96];
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                    "Must have at least one class, but got logits shape %s",
                    rill_shape_str(&logits->shape, sl, sizeof sl));
    return false;
}

static void softmax_ce_kernel(rill__kctx *ctx)
{
    const rill_tensor *logits = ctx->inputs[0], *labels = ctx->inputs[1];
    char sl[96], sp[96];
    if (!check_dtype(ctx, 1)) return;
    if (logits->shape.rank != 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "logits must be 2-dimensional, got %s",
                        rill_shape_str(&logits->shape, sl, sizeof sl));
        return;
    }
    if (!rill_shape_equal(&logits->shape, &labels->shape)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "logits and labels must be same size: logits_size=%s labels_size=%s",
                        rill_shape_str(&logits->shape, sl, sizeof sl),
                        rill_shape_str(&labels->shape, sp, sizeof sp));
        return;
    }
    if (!check_classes(ctx, logits)) return;
    rill_tensor *outs[2];
    alloc_ce_outputs(ctx, logits, outs);
    const rill_tensor *ins[] = {logits, labels};
    nn_job j = {.rows = logits->shape.dims[0], .cols = logits->shape.dims[1]};
    job_init(&j, ins, 2, outs, 2);
    job_run(ctx, &j, j.rows, j.cols * 6, softmax_ce_range);
    job_finish(&j);
}

static void sparse_softmax_ce_kernel(rill__kctx *ctx)
{
    const rill_tensor *logits = ctx->inputs[0], *labels = ctx->inputs[1];
    if (!check_dtype(ctx, 0)) return;
    if (labels->dtype != RILL_INT32 && labels->dtype != RILL_INT64) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "labels must be int32 or int64, got %s",
                        rill_dtype_name(labels->dtype));
        return;
    }
    if (!rill__check_sparse_xent_shapes(ctx, logits, labels)) return;
    if (!check_classes(ctx, logits) || !rill__check_labels(ctx, labels, logits->shape.dims[1]))
        return;
    rill_tensor *outs[2];
    alloc_ce_outputs(ctx, logits, outs);
    nn_job j = {.rows = logits->shape.dims[0],
                .cols = logits->shape.dims[1],
                .labels = labels->buf->data,
                .labels64 = labels->dtype == RILL_INT64};
    job_init(&j, &logits, 1, outs, 2);
    job_run(ctx, &j, j.rows, j.cols * 4, sparse_softmax_ce_range);
    job_finish(&j);
}

/* Each op registered for float, double and half (half computes in float). */
#define NN_K(OP, FN, T)                                                                            \
    {                                                                                              \
        .op = OP, .device_type = "CPU", .dtype = T, .fn = FN                                       \
    }
#define NN_KERNEL(OP, FN)                                                                          \
    NN_K(OP, FN, RILL_FLOAT), NN_K(OP, FN, RILL_DOUBLE), NN_K(OP, FN, RILL_HALF)

const rill__kernel_def rill__cpu_kernels_nn[] = {
    NN_KERNEL("BiasAdd", bias_add_kernel),
    NN_KERNEL("BiasAddGrad", bias_add_grad_kernel),
    NN_KERNEL("Relu", relu_kernel),
    NN_KERNEL("ReluGrad", relu_grad_kernel),
    NN_KERNEL("Sigmoid", sigmoid_kernel),
    NN_KERNEL("SigmoidGrad", sigmoid_grad_kernel),
    NN_KERNEL("Tanh", tanh_kernel),
    NN_KERNEL("TanhGrad", tanh_grad_kernel),
    NN_KERNEL("Softmax", softmax_kernel),
    NN_KERNEL("SoftmaxCrossEntropyWithLogits", softmax_ce_kernel),
    NN_KERNEL("SparseSoftmaxCrossEntropyWithLogits", sparse_softmax_ce_kernel),
    {0},
};
