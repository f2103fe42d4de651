/* cpu_nn.c - CPU kernels for the neural-network ops: BiasAdd, BiasAddGrad, Relu, ReluGrad,
 * Sigmoid, SigmoidGrad, Tanh, TanhGrad, Softmax and the two softmax cross-entropies.
 *
 * Every kernel has the same three steps. It validates its inputs' shapes (build-time shapes may
 * have been unknown), allocates its outputs with rill__kctx_alloc_output (recycled across
 * steps) and runs a plain loop. Each loop is written once, in a macro over the element type T,
 * and instantiated for float and double: straight-line code with restrict pointers that GCC
 * vectorises (these ops sit on the training fast path: BiasAdd, Relu and their gradients run
 * on every layer of every step). Half tensors are widened into float scratch, computed as float
 * and narrowed back. Tensors big enough to pay for the hand-off are split into row ranges over
 * the intra-op pool. */
#include "../kernel.h"

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

/* Defines NAME(void *job, int64_t b, int64_t e) running BODY over [b, e) with T the element type
 * and j the job. */
#define NN_LOOP(NAME, ...)                                                                         \
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

#define EXP_T(x) _Generic((x), float: expf, default: exp)(x)
#define LOG_T(x) _Generic((x), float: logf, default: log)(x)
#define TANH_T(x) _Generic((x), float: tanhf, default: tanh)(x)

/* --- elementwise loops: in[0], in[1] -> out[0], over elements --- */

NN_LOOP(relu_loop, {
    const T *restrict x = j->in[0];
    T *restrict y = j->out[0];
    for (int64_t i = b; i < e; i++) y[i] = x[i] > 0 ? x[i] : (T)0;
})

/* in[0] = gradients, in[1] = features (or Relu's output: positive at the same places). */
NN_LOOP(relu_grad_loop, {
    const T *restrict g = j->in[0], *restrict f = j->in[1];
    T *restrict d = j->out[0];
    for (int64_t i = b; i < e; i++) d[i] = f[i] > 0 ? g[i] : (T)0;
})

NN_LOOP(sigmoid_loop, {
    const T *restrict x = j->in[0];
    T *restrict y = j->out[0];
    for (int64_t i = b; i < e; i++) y[i] = (T)1 / ((T)1 + EXP_T(-x[i]));
})

/* in[0] = y, in[1] = dy */
NN_LOOP(sigmoid_grad_loop, {
    const T *restrict y = j->in[0], *restrict dy = j->in[1];
    T *restrict d = j->out[0];
    for (int64_t i = b; i < e; i++) d[i] = dy[i] * y[i] * ((T)1 - y[i]);
})

NN_LOOP(tanh_loop, {
    const T *restrict x = j->in[0];
    T *restrict y = j->out[0];
    for (int64_t i = b; i < e; i++) y[i] = TANH_T(x[i]);
})

NN_LOOP(tanh_grad_loop, {
    const T *restrict y = j->in[0], *restrict dy = j->in[1];
    T *restrict d = j->out[0];
    for (int64_t i = b; i < e; i++) d[i] = dy[i] * ((T)1 - y[i] * y[i]);
})

/* --- row loops: [rows, cols] tensors, over rows --- */

/* in[0] = value, in[1] = bias [cols] */
NN_LOOP(bias_add_loop, {
    const int64_t c = j->cols;
    const T *restrict bias = j->in[1];
    for (int64_t r = b; r < e; r++) {
        const T *restrict x = (const T *)j->in[0] + r * c;
        T *restrict y = (T *)j->out[0] + r * c;
        for (int64_t k = 0; k < c; k++) y[k] = x[k] + bias[k];
    }
})

/* Over columns [b, e): out[k] = sum over rows of in[0][r, k]; rows added in order, each one a
 * vectorised pass over the column range. */
NN_LOOP(bias_add_grad_loop, {
    const int64_t c = j->cols;
    T *restrict out = j->out[0];
    for (int64_t k = b; k < e; k++) out[k] = 0;
    for (int64_t r = 0; r < j->rows; r++) {
        const T *restrict g = (const T *)j->in[0] + r * c;
        for (int64_t k = b; k < e; k++) out[k] += g[k];
    }
})

/* Numerically stable: exp(x - max(x)) / sum. */
NN_LOOP(softmax_loop, {
    const int64_t c = j->cols;
    for (int64_t r = b; r < e; r++) {
        const T *restrict x = (const T *)j->in[0] + r * c;
        T *restrict y = (T *)j->out[0] + r * c;
        T m = x[0];
        for (int64_t k = 1; k < c; k++) m = x[k] > m ? x[k] : m;
        T sum = 0;
        for (int64_t k = 0; k < c; k++) {
            y[k] = EXP_T(x[k] - m);
            sum += y[k];
        }
        T inv = (T)1 / sum;
        for (int64_t k = 0; k < c; k++) y[k] *= inv;
    }
})

/* in[0] = logits, in[1] = labels (probabilities); out[0] = loss [rows], out[1] = backprop.
 * loss = sum_k labels_k * (logsumexp - x_k), backprop = softmax - labels. */
NN_LOOP(softmax_ce_loop, {
    const int64_t c = j->cols;
    for (int64_t r = b; r < e; r++) {
        const T *restrict x = (const T *)j->in[0] + r * c;
        const T *restrict p = (const T *)j->in[1] + r * c;
        T *restrict bp = (T *)j->out[1] + r * c;
        T m = x[0];
        for (int64_t k = 1; k < c; k++) m = x[k] > m ? x[k] : m;
        T sum = 0;
        for (int64_t k = 0; k < c; k++) {
            bp[k] = EXP_T(x[k] - m);
            sum += bp[k];
        }
        T lse = LOG_T(sum), inv = (T)1 / sum, loss = 0;
        for (int64_t k = 0; k < c; k++) {
            loss += p[k] * (lse - (x[k] - m));
            bp[k] = bp[k] * inv - p[k];
        }
        ((T *)j->out[0])[r] = loss;
    }
})

/* in[0] = logits; labels already checked to lie in [0, cols). loss = logsumexp - x_label,
 * backprop = softmax - onehot(label). */
NN_LOOP(sparse_softmax_ce_loop, {
    const int64_t c = j->cols;
    for (int64_t r = b; r < e; r++) {
        const T *restrict x = (const T *)j->in[0] + r * c;
        T *restrict bp = (T *)j->out[1] + r * c;
        int64_t label = j->labels64 ? ((const int64_t *)j->labels)[r]
                                    : ((const int32_t *)j->labels)[r];
        T m = x[0];
        for (int64_t k = 1; k < c; k++) m = x[k] > m ? x[k] : m;
        T sum = 0;
        for (int64_t k = 0; k < c; k++) {
            bp[k] = EXP_T(x[k] - m);
            sum += bp[k];
        }
        T inv = (T)1 / sum;
        for (int64_t k = 0; k < c; k++) bp[k] *= inv;
        bp[label] -= 1;
        ((T *)j->out[0])[r] = LOG_T(sum) - (x[label] - m);
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
    unary(ctx, relu_loop);
}

static void relu_grad_kernel(rill__kctx *ctx)
{
    binary(ctx, relu_grad_loop);
}

static void sigmoid_kernel(rill__kctx *ctx)
{
    unary(ctx, sigmoid_loop);
}

static void sigmoid_grad_kernel(rill__kctx *ctx)
{
    binary(ctx, sigmoid_grad_loop);
}

static void tanh_kernel(rill__kctx *ctx)
{
    unary(ctx, tanh_loop);
}

static void tanh_grad_kernel(rill__kctx *ctx)
{
    binary(ctx, tanh_grad_loop);
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
    job_run(ctx, &j, j.rows, c, bias_add_loop);
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
    rill__parallel_for(ctx->pool, c, min_cols > 64 ? min_cols : 64, bias_add_grad_loop, &j);
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
    job_run(ctx, &j, j.rows, j.cols * 4, softmax_loop);
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
    job_run(ctx, &j, j.rows, j.cols * 6, softmax_ce_loop);
    job_finish(&j);
}

/* Fails naming the first label outside [0, classes), listing the labels as TensorFlow does. */
static bool check_labels(rill__kctx *ctx, const rill_tensor *labels, int64_t classes)
{
    int64_t n = labels->numel, bad = -1;
    bool is64 = labels->dtype == RILL_INT64;
    const int32_t *l32 = labels->buf->data;
    const int64_t *l64 = labels->buf->data;
    for (int64_t i = 0; i < n && bad < 0; i++) {
        int64_t v = is64 ? l64[i] : l32[i];
        if (v < 0 || v >= classes) bad = i;
    }
    if (bad < 0) return true;
    char list[1024];
    size_t off = 0;
    for (int64_t i = 0; i < n && off < sizeof list - 32; i++)
        off += (size_t)snprintf(list + off, sizeof list - off, "%s%lld", i ? " " : "",
                                (long long)(is64 ? l64[i] : l32[i]));
    if (off >= sizeof list - 32) snprintf(list + off, sizeof list - off, "...");
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                    "Received a label value of %lld which is outside the valid range of [0, "
                    "%lld).  Label values: %s",
                    (long long)(is64 ? l64[bad] : l32[bad]), (long long)classes, list);
    return false;
}

static void sparse_softmax_ce_kernel(rill__kctx *ctx)
{
    const rill_tensor *logits = ctx->inputs[0], *labels = ctx->inputs[1];
    char sl[96], sp[96];
    if (!check_dtype(ctx, 0)) return;
    if (labels->dtype != RILL_INT32 && labels->dtype != RILL_INT64) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "labels must be int32 or int64, got %s",
                        rill_dtype_name(labels->dtype));
        return;
    }
    if (logits->shape.rank != 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "logits must be 2-D, but got shape %s",
                        rill_shape_str(&logits->shape, sl, sizeof sl));
        return;
    }
    if (labels->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "labels must be 1-D, but got shape %s",
                        rill_shape_str(&labels->shape, sp, sizeof sp));
        return;
    }
    if (labels->shape.dims[0] != logits->shape.dims[0]) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "logits and labels must have the same first dimension, got logits shape "
                        "%s and labels shape %s",
                        rill_shape_str(&logits->shape, sl, sizeof sl),
                        rill_shape_str(&labels->shape, sp, sizeof sp));
        return;
    }
    if (!check_classes(ctx, logits) || !check_labels(ctx, labels, logits->shape.dims[1])) return;
    rill_tensor *outs[2];
    alloc_ce_outputs(ctx, logits, outs);
    nn_job j = {.rows = logits->shape.dims[0],
                .cols = logits->shape.dims[1],
                .labels = labels->buf->data,
                .labels64 = labels->dtype == RILL_INT64};
    job_init(&j, &logits, 1, outs, 2);
    job_run(ctx, &j, j.rows, j.cols * 4, sparse_softmax_ce_loop);
    job_finish(&j);
}

/* Each op registered for float, double and half (half computes in float). */
#define NN_KERNEL(OP, FN)                                                                          \
    {.op = OP, .device_type = "CPU", .dtype = RILL_FLOAT, .fn = FN},                               \
        {.op = OP, .device_type = "CPU", .dtype = RILL_DOUBLE, .fn = FN},                          \
        {.op = OP, .device_type = "CPU", .dtype = RILL_HALF, .fn = FN}

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
