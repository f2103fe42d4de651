/* cpu_math.c - CPU kernels for arithmetic: broadcasting binary ops, unary ops, AddN, the
 * reductions, MatMul (gemm.c: oneDNN), and the gradient helpers.
 *
 * Elementwise loops come in three shapes the compiler vectorises (same shape, scalar left,
 * scalar right) and one general broadcast walk. Big same-shape loops are sharded over the
 * intra-op pool. half is computed in float. */
#include "cpu_kernels.h"
#include "gemm.h"
#include "loops.h"

#include <math.h>
#include <string.h>

#define SHARD_MIN (1 << 15)

/* --- binary ops --- */

enum { OP_ADD = RILL__BIN_ADD, OP_SUB = RILL__BIN_SUB, OP_MUL = RILL__BIN_MUL, OP_DIV = RILL__BIN_DIV, OP_MAX = RILL__BIN_MAX,
       OP_MIN = RILL__BIN_MIN };

typedef struct bin_job {
    int op;
    rill_dtype t;
    const void *a, *b;
    void *o;
    const rill__bcast *bc;
} bin_job;

#define APPLY(op, x, y)                                                                            \
    ((op) == OP_ADD   ? (x) + (y)                                                                  \
     : (op) == OP_SUB ? (x) - (y)                                                                  \
     : (op) == OP_MUL ? (x) * (y)                                                                  \
     : (op) == OP_DIV ? (x) / (y)                                                                  \
     : (op) == OP_MIN ? ((x) < (y) || (x) != (x) ? (x) : (y))                                      \
                      : ((x) > (y) || (x) != (x) ? (x) : (y)))
/* Integers wrap as TF's do (two's complement), through unsigned arithmetic where signed overflow
 * would be undefined; INT_MIN / -1 wraps to INT_MIN. */
#define IAPPLY(op, x, y)                                                                           \
    ((op) == OP_ADD   ? (uint64_t)(x) + (uint64_t)(y)                                              \
     : (op) == OP_SUB ? (uint64_t)(x) - (uint64_t)(y)                                              \
     : (op) == OP_MUL ? (uint64_t)(x) * (uint64_t)(y)                                              \
     : (op) == OP_DIV ? ((y) == -1 ? 0u - (uint64_t)(x) : (uint64_t)((x) / (y)))                   \
     : (op) == OP_MIN ? (uint64_t)((x) < (y) ? (x) : (y))                                          \
                      : (uint64_t)((x) > (y) ? (x) : (y)))

#define SAME_LOOP(T, AP, OPC)                                                                      \
    for (int64_t i = b0; i < e0; i++) o[i] = (T)AP(OPC, a[i], b[i])
#define AS_LOOP(T, AP, OPC)                                                                        \
    for (int64_t i = b0; i < e0; i++) o[i] = (T)AP(OPC, a[0], b[i])
#define BS_LOOP(T, AP, OPC)                                                                        \
    for (int64_t i = b0; i < e0; i++) o[i] = (T)AP(OPC, a[i], b[0])

/* Dispatch on the op so each loop is a straight-line, vectorisable body. */
#define BY_OP(LOOP, T, AP)                                                                         \
    switch (j->op) {                                                                               \
    case OP_ADD:                                                                                   \
        LOOP(T, AP, OP_ADD);                                                                       \
        break;                                                                                     \
    case OP_SUB:                                                                                   \
        LOOP(T, AP, OP_SUB);                                                                       \
        break;                                                                                     \
    case OP_MUL:                                                                                   \
        LOOP(T, AP, OP_MUL);                                                                       \
        break;                                                                                     \
    case OP_DIV:                                                                                   \
        LOOP(T, AP, OP_DIV);                                                                       \
        break;                                                                                     \
    case OP_MIN:                                                                                   \
        LOOP(T, AP, OP_MIN);                                                                       \
        break;                                                                                     \
    default:                                                                                       \
        LOOP(T, AP, OP_MAX);                                                                       \
        break;                                                                                     \
    }

#define TYPED_RANGE(T, AP)                                                                         \
    static void range_##T(const bin_job *j, int64_t b0, int64_t e0)                                \
    {                                                                                              \
        const T *a = j->a, *b = j->b;                                                              \
        T *o = j->o;                                                                               \
        const rill__bcast *bc = j->bc;                                                             \
        if (bc->same) {                                                                            \
            BY_OP(SAME_LOOP, T, AP)                                                                \
        } else if (bc->a_scalar) {                                                                 \
            BY_OP(AS_LOOP, T, AP)                                                                  \
        } else if (bc->b_scalar) {                                                                 \
            BY_OP(BS_LOOP, T, AP)                                                                  \
        } else {                                                                                   \
            int r = bc->rank;                                                                      \
            int64_t idx[RILL_MAX_DIMS] = {0};                                                      \
            int64_t rem = b0;                                                                      \
            for (int d = r - 1; d >= 0; d--) {                                                     \
                idx[d] = bc->out_dims[d] ? rem % bc->out_dims[d] : 0;                              \
                rem = bc->out_dims[d] ? rem / bc->out_dims[d] : 0;                                 \
            }                                                                                      \
            int64_t ia = 0, ib = 0;                                                                \
            for (int d = 0; d < r; d++) {                                                          \
                ia += idx[d] * bc->a_strides[d];                                                   \
                ib += idx[d] * bc->b_strides[d];                                                   \
            }                                                                                      \
            for (int64_t i = b0; i < e0; i++) {                                                    \
                T x = a[ia], y = b[ib];                                                            \
                o[i] = (T)AP(j->op, x, y);                                                         \
                for (int d = r - 1; d >= 0; d--) {                                                 \
                    ia += bc->a_strides[d];                                                        \
                    ib += bc->b_strides[d];                                                        \
                    if (++idx[d] < bc->out_dims[d]) break;                                         \
                    ia -= bc->a_strides[d] * bc->out_dims[d];                                      \
                    ib -= bc->b_strides[d] * bc->out_dims[d];                                      \
                    idx[d] = 0;                                                                    \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
TYPED_RANGE(float, APPLY) /* the broadcast walk only: the other forms go to loops.h */
TYPED_RANGE(double, APPLY)
TYPED_RANGE(int32_t, IAPPLY)
TYPED_RANGE(int64_t, IAPPLY)

static void bin_range(void *arg, int64_t b0, int64_t e0)
{
    const bin_job *j = arg;
    const rill__bcast *bc = j->bc;
    /* float and double without a broadcast walk: the vector loops for this CPU. */
    int form = bc->same ? RILL__FORM_SAME
               : bc->a_scalar ? RILL__FORM_A_SCALAR
               : bc->b_scalar ? RILL__FORM_B_SCALAR
                              : -1;
    switch (j->t) {
    case RILL_FLOAT:
        if (form >= 0)
            rill__loops_get()->f32.binary(j->op, form, j->o, j->a, j->b, b0, e0);
        else
            range_float(j, b0, e0);
        break;
    case RILL_DOUBLE:
        if (form >= 0)
            rill__loops_get()->f64.binary(j->op, form, j->o, j->a, j->b, b0, e0);
        else
            range_double(j, b0, e0);
        break;
    case RILL_INT32:
        range_int32_t(j, b0, e0);
        break;
    case RILL_INT64:
        range_int64_t(j, b0, e0);
        break;
    default:
        break;
    }
}

/* half: widen both operands to float, compute, narrow. */
static rill_tensor *widen(const rill_tensor *t)
{
    rill_tensor *w = rill_tensor_new(RILL_FLOAT, t->shape.dims, t->shape.rank);
    rill__convert(RILL_FLOAT, w->buf->data, RILL_HALF, t->buf->data, t->numel);
    return w;
}

static bool int_div_by_zero(const rill_tensor *y)
{
    for (int64_t i = 0; i < y->numel; i++)
        if (rill_tensor_get_double(y, i) == 0) return true;
    return false;
}

static void binary_kernel(rill__kctx *ctx, int op)
{
    const rill_tensor *x = ctx->inputs[0], *y = ctx->inputs[1];
    rill__bcast bc;
    if (!rill__check_bcast(ctx, x, y, &bc)) return;
    if (op == OP_DIV && (x->dtype == RILL_INT32 || x->dtype == RILL_INT64) && int_div_by_zero(y)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Integer division by zero");
        return;
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &bc.out);
    if (x->dtype == RILL_HALF) {
        rill_tensor *wx = widen(x), *wy = widen(y);
        rill_tensor *wo = rill_tensor_new(RILL_FLOAT, bc.out.dims, bc.out.rank);
        bin_job j = {op, RILL_FLOAT, wx->buf->data, wy->buf->data, wo->buf->data, &bc};
        bin_range(&j, 0, wo->numel);
        rill__convert(RILL_HALF, out->buf->data, RILL_FLOAT, wo->buf->data, wo->numel);
        rill_tensor_free(wx);
        rill_tensor_free(wy);
        rill_tensor_free(wo);
        return;
    }
    bin_job j = {op, x->dtype, x->buf->data, y->buf->data, out->buf->data, &bc};
    if (out->numel >= 2 * SHARD_MIN && ctx->pool)
        rill__parallel_for(ctx->pool, out->numel, SHARD_MIN, bin_range, &j);
    else
        bin_range(&j, 0, out->numel);
}

void rill__cpu_add(rill__kctx *ctx)
{
    binary_kernel(ctx, OP_ADD);
}
void rill__cpu_sub(rill__kctx *ctx)
{
    binary_kernel(ctx, OP_SUB);
}
void rill__cpu_mul(rill__kctx *ctx)
{
    binary_kernel(ctx, OP_MUL);
}
void rill__cpu_div(rill__kctx *ctx)
{
    binary_kernel(ctx, OP_DIV);
}
void rill__cpu_maximum(rill__kctx *ctx)
{
    binary_kernel(ctx, OP_MAX);
}
void rill__cpu_minimum(rill__kctx *ctx)
{
    binary_kernel(ctx, OP_MIN);
}

/* --- unary ops --- */

enum { U_NEG, U_SQUARE, U_SQRT, U_EXP, U_LOG };

#define UNARY_LOOP(T, EXPR)                                                                        \
    do {                                                                                           \
        const T *a = in;                                                                           \
        T *o = outp;                                                                               \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T v = a[i];                                                                            \
            o[i] = (T)(EXPR);                                                                      \
        }                                                                                          \
    } while (0)

/* Integers wrap as TF's do (two's complement: Neg(INT_MIN) is INT_MIN), through unsigned
 * arithmetic, where signed overflow would be undefined. */
#define FNEG(v) (-(v))
#define FSQ(v) ((v) * (v))
#define INEG(v) (0u - (uint64_t)(v))
#define ISQ(v) ((uint64_t)(v) * (uint64_t)(v))

#define UNARY_ALL(T, SQRT, EXP, LOG, NEG, SQ)                                                      \
    switch (op) {                                                                                  \
    case U_NEG:                                                                                    \
        UNARY_LOOP(T, NEG(v));                                                                     \
        break;                                                                                     \
    case U_SQUARE:                                                                                 \
        UNARY_LOOP(T, SQ(v));                                                                      \
        break;                                                                                     \
    case U_SQRT:                                                                                   \
        UNARY_LOOP(T, SQRT(v));                                                                    \
        break;                                                                                     \
    case U_EXP:                                                                                    \
        UNARY_LOOP(T, EXP(v));                                                                     \
        break;                                                                                     \
    default:                                                                                       \
        UNARY_LOOP(T, LOG(v));                                                                     \
        break;                                                                                     \
    }

#define NOFN(v) (v)

static void unary_run(int op, rill_dtype t, const void *in, void *outp, int64_t n)
{
    switch (t) {
    case RILL_FLOAT:
        UNARY_ALL(float, sqrtf, expf, logf, FNEG, FSQ);
        break;
    case RILL_DOUBLE:
        UNARY_ALL(double, sqrt, exp, log, FNEG, FSQ);
        break;
    case RILL_INT32:
        UNARY_ALL(int32_t, NOFN, NOFN, NOFN, INEG, ISQ);
        break;
    case RILL_INT64:
        UNARY_ALL(int64_t, NOFN, NOFN, NOFN, INEG, ISQ);
        break;
    default:
        break;
    }
}

static void unary_kernel(rill__kctx *ctx, int op)
{
    const rill_tensor *x = ctx->inputs[0];
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (x->dtype == RILL_HALF) {
        rill_tensor *w = widen(x);
        unary_run(op, RILL_FLOAT, w->buf->data, w->buf->data, w->numel);
        rill__convert(RILL_HALF, out->buf->data, RILL_FLOAT, w->buf->data, w->numel);
        rill_tensor_free(w);
        return;
    }
    unary_run(op, x->dtype, x->buf->data, out->buf->data, x->numel);
}

void rill__cpu_neg(rill__kctx *ctx)
{
    unary_kernel(ctx, U_NEG);
}
void rill__cpu_square(rill__kctx *ctx)
{
    unary_kernel(ctx, U_SQUARE);
}
static void sqrt_kernel(rill__kctx *ctx)
{
    unary_kernel(ctx, U_SQRT);
}
static void exp_kernel(rill__kctx *ctx)
{
    unary_kernel(ctx, U_EXP);
}
static void log_kernel(rill__kctx *ctx)
{
    unary_kernel(ctx, U_LOG);
}

/* --- AddN --- */

void rill__cpu_add_n(rill__kctx *ctx)
{
    const rill_tensor *x0 = ctx->inputs[0];
    int n = ctx->node->ninputs;
    for (int i = 1; i < n; i++)
        if (!rill_shape_equal(&ctx->inputs[i]->shape, &x0->shape)) {
            char a[96], b[96];
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Inputs to operation AddN must have the same size and shape.  Input 0: "
                            "%s != input %d: %s",
                            rill_shape_str(&x0->shape, a, sizeof a), i,
                            rill_shape_str(&ctx->inputs[i]->shape, b, sizeof b));
            return;
        }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x0->dtype, &x0->shape);
    int64_t m = x0->numel;
    switch (x0->dtype) {
#define ADDN(T)                                                                                    \
    {                                                                                              \
        T *o = out->buf->data;                                                                     \
        memcpy(o, x0->buf->data, (size_t)m * sizeof(T));                                           \
        for (int k = 1; k < n; k++) {                                                              \
            const T *a = ctx->inputs[k]->buf->data;                                                \
            for (int64_t i = 0; i < m; i++) o[i] += a[i];                                          \
        }                                                                                          \
    }
    case RILL_FLOAT:
        memcpy(out->buf->data, x0->buf->data, (size_t)m * sizeof(float));
        for (int k = 1; k < n; k++)
            rill__loops_get()->f32.accumulate(out->buf->data, ctx->inputs[k]->buf->data, m);
        break;
    case RILL_DOUBLE:
        memcpy(out->buf->data, x0->buf->data, (size_t)m * sizeof(double));
        for (int k = 1; k < n; k++)
            rill__loops_get()->f64.accumulate(out->buf->data, ctx->inputs[k]->buf->data, m);
        break;
    case RILL_INT32:
        ADDN(int32_t) break;
    case RILL_INT64:
        ADDN(int64_t) break;
    case RILL_HALF: {
        float *acc = rill__calloc((size_t)(m ? m : 1), sizeof *acc);
        RILL_CHECK_ALLOC(acc);
        for (int k = 0; k < n; k++)
            for (int64_t i = 0; i < m; i++)
                acc[i] += rill_half_to_float(((const rill_half *)ctx->inputs[k]->buf->data)[i]);
        rill__convert(RILL_HALF, out->buf->data, RILL_FLOAT, acc, m);
        rill__free(acc);
        break;
    }
    default:
        rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "AddN on %s", rill_dtype_name(x0->dtype));
#undef ADDN
    }
}

/* --- reductions ---
 * Sum into a double accumulator per output element: in[i] goes to out[map(i)] where map drops
 * (or keeps as 1) the reduced axes. Mean divides by the reduced count. */

/* Sums src (shape in) over mask into acc (double, zeroed) laid out as the kept dims. */
static void reduce_into(const rill_tensor *src, const bool *mask, double *acc)
{
    int r = src->shape.rank;
    int64_t ostride[RILL_MAX_DIMS], s = 1;
    for (int d = r - 1; d >= 0; d--) {
        ostride[d] = mask[d] ? 0 : s;
        if (!mask[d]) s *= src->shape.dims[d];
    }
    /* Fast path: reduce the inner block of a row-major [outer, inner] split. */
    int64_t idx[RILL_MAX_DIMS] = {0};
    int64_t o = 0;
    for (int64_t i = 0; i < src->numel; i++) {
        acc[o] += rill_tensor_get_double(src, i);
        for (int d = r - 1; d >= 0; d--) {
            o += ostride[d];
            if (++idx[d] < src->shape.dims[d]) break;
            o -= ostride[d] * src->shape.dims[d];
            idx[d] = 0;
        }
    }
}

void rill__cpu_reduce(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    bool mask[RILL_MAX_DIMS];
    if (!rill__check_axes(ctx, x->shape.rank, mask)) return;
    bool keep = rill__attr_bool(ctx->node, "keep_dims", false);
    rill_shape out_shape = {.rank = 0};
    int64_t count = 1;
    for (int d = 0; d < x->shape.rank; d++) {
        if (mask[d]) {
            count *= x->shape.dims[d];
            if (keep) out_shape.dims[out_shape.rank++] = 1;
        } else {
            out_shape.dims[out_shape.rank++] = x->shape.dims[d];
        }
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &out_shape);
    int64_t on = out->numel;
    bool mean = strcmp(ctx->node->op->name, "Mean") == 0;
    /* float fast path: all axes, or the last axis of a matrix. */
    if (x->dtype == RILL_FLOAT && on == 1) {
        double sum = rill__loops_get()->f32.sum(x->buf->data, x->numel);
        ((float *)out->buf->data)[0] = (float)(mean ? sum / (double)(count ? count : 1) : sum);
        return;
    }
    double *acc = rill__calloc((size_t)(on ? on : 1), sizeof *acc);
    RILL_CHECK_ALLOC(acc);
    reduce_into(x, mask, acc);
    if (mean)
        for (int64_t i = 0; i < on; i++) acc[i] /= (double)(count ? count : 1);
    rill__convert(x->dtype, out->buf->data, RILL_DOUBLE, acc, on);
    rill__free(acc);
}

/* SumToShape(grad, shape): sums the broadcast dims of grad back to `shape`. */
static bool read_shape(rill__kctx *ctx, const rill_tensor *t, rill_shape *s)
{
    if (t->shape.rank != 1 || t->numel > RILL_MAX_DIMS) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: bad shape input", ctx->node->op->name);
        return false;
    }
    s->rank = (int)t->numel;
    for (int i = 0; i < s->rank; i++) s->dims[i] = rill_tensor_get_int64(t, i);
    return true;
}

void rill__cpu_sum_to_shape(rill__kctx *ctx)
{
    const rill_tensor *g = ctx->inputs[0];
    rill_shape target;
    if (!read_shape(ctx, ctx->inputs[1], &target)) return;
    if (rill_shape_equal(&target, &g->shape)) {
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(ctx->inputs[0]));
        return;
    }
    int r = g->shape.rank, off = r - target.rank;
    bool mask[RILL_MAX_DIMS] = {false};
    if (off < 0) goto bad;
    for (int d = 0; d < r; d++) {
        int64_t td = d >= off ? target.dims[d - off] : 1;
        if (d < off || (td == 1 && g->shape.dims[d] != 1))
            mask[d] = true;
        else if (td != g->shape.dims[d])
            goto bad;
    }
    {
        rill_tensor *out = rill__kctx_alloc_output(ctx, 0, g->dtype, &target);
        int64_t on = out->numel;
        double *acc = rill__calloc((size_t)(on ? on : 1), sizeof *acc);
        RILL_CHECK_ALLOC(acc);
        reduce_into(g, mask, acc);
        rill__convert(g->dtype, out->buf->data, RILL_DOUBLE, acc, on);
        rill__free(acc);
        return;
    }
bad : {
    char a[96], b[96];
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "cannot sum a gradient of shape %s to shape %s",
                    rill_shape_str(&g->shape, a, sizeof a), rill_shape_str(&target, b, sizeof b));
}
}

/* ReduceGrad(dy, shape(x)): broadcasts the reduced gradient back to x's shape (/count for
 * Mean). */
void rill__cpu_reduce_grad(rill__kctx *ctx)
{
    const rill_tensor *dy = ctx->inputs[0];
    rill_shape xs;
    if (!read_shape(ctx, ctx->inputs[1], &xs)) return;
    bool mask[RILL_MAX_DIMS];
    if (!rill__check_axes(ctx, xs.rank, mask)) return;
    int64_t count = 1, kept = 1;
    int64_t istride[RILL_MAX_DIMS], s = 1;
    for (int d = xs.rank - 1; d >= 0; d--) {
        istride[d] = mask[d] ? 0 : s;
        if (!mask[d]) s *= xs.dims[d];
        if (mask[d])
            count *= xs.dims[d];
        else
            kept *= xs.dims[d];
    }
    if (kept != dy->numel) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "ReduceGrad: gradient has %lld elements, "
                        "expected %lld",
                        (long long)dy->numel, (long long)kept);
        return;
    }
    bool mean = rill__attr_bool(ctx->node, "mean", false);
    double scale = mean ? 1.0 / (double)(count ? count : 1) : 1.0;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, dy->dtype, &xs);
    if (dy->dtype == RILL_FLOAT && dy->numel == 1) {
        float v = (float)(((const float *)dy->buf->data)[0] * scale);
        float *o = out->buf->data;
        for (int64_t i = 0; i < out->numel; i++) o[i] = v;
        return;
    }
    double *tmp = rill__malloc((size_t)(out->numel ? out->numel : 1) * sizeof *tmp);
    RILL_CHECK_ALLOC(tmp);
    int64_t idx[RILL_MAX_DIMS] = {0}, in = 0;
    for (int64_t i = 0; i < out->numel; i++) {
        tmp[i] = rill_tensor_get_double(dy, in) * scale;
        for (int d = xs.rank - 1; d >= 0; d--) {
            in += istride[d];
            if (++idx[d] < xs.dims[d]) break;
            in -= istride[d] * xs.dims[d];
            idx[d] = 0;
        }
    }
    rill__convert(dy->dtype, out->buf->data, RILL_DOUBLE, tmp, out->numel);
    rill__free(tmp);
}

/* MaximumGrad(dy, x, y) -> (dy where x >= y, dy where x < y), in dy's broadcast shape. */
void rill__cpu_maximum_grad(rill__kctx *ctx)
{
    const rill_tensor *dy = ctx->inputs[0], *x = ctx->inputs[1], *y = ctx->inputs[2];
    rill__bcast bc;
    if (!rill__bcast_init(&bc, &x->shape, &y->shape) || !rill_shape_equal(&bc.out, &dy->shape)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "MaximumGrad: shapes do not match");
        return;
    }
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, dy->dtype, &dy->shape);
    rill_tensor *dz = rill__kctx_alloc_output(ctx, 1, dy->dtype, &dy->shape);
    int r = bc.rank;
    int64_t idx[RILL_MAX_DIMS] = {0}, ia = 0, ib = 0;
    double *gx = rill__malloc((size_t)(dy->numel ? dy->numel : 1) * sizeof *gx);
    double *gz = rill__malloc((size_t)(dy->numel ? dy->numel : 1) * sizeof *gz);
    RILL_CHECK_ALLOC(gx);
    RILL_CHECK_ALLOC(gz);
    for (int64_t i = 0; i < dy->numel; i++) {
        double g = rill_tensor_get_double(dy, i);
        bool left = rill_tensor_get_double(x, ia) >= rill_tensor_get_double(y, ib);
        gx[i] = left ? g : 0;
        gz[i] = left ? 0 : g;
        for (int d = r - 1; d >= 0; d--) {
            ia += bc.a_strides[d];
            ib += bc.b_strides[d];
            if (++idx[d] < bc.out_dims[d]) break;
            ia -= bc.a_strides[d] * bc.out_dims[d];
            ib -= bc.b_strides[d] * bc.out_dims[d];
            idx[d] = 0;
        }
    }
    rill__convert(dy->dtype, dx->buf->data, RILL_DOUBLE, gx, dy->numel);
    rill__convert(dy->dtype, dz->buf->data, RILL_DOUBLE, gz, dy->numel);
    rill__free(gx);
    rill__free(gz);
}

/* SqrtGrad(y, dy) = dy * 0.5 / y */
static void sqrt_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *y = ctx->inputs[0], *dy = ctx->inputs[1];
    if (!rill_shape_equal(&y->shape, &dy->shape)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "SqrtGrad: shapes do not match");
        return;
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, y->dtype, &y->shape);
    if (y->dtype == RILL_FLOAT) {
        const float *a = y->buf->data, *g = dy->buf->data;
        float *o = out->buf->data;
        for (int64_t i = 0; i < y->numel; i++) o[i] = g[i] * 0.5f / a[i];
        return;
    }
    for (int64_t i = 0; i < y->numel; i++) {
        double v = rill_tensor_get_double(dy, i) * 0.5 / rill_tensor_get_double(y, i);
        rill__convert(y->dtype, (char *)out->buf->data + (size_t)i * rill_dtype_size(y->dtype),
                      RILL_DOUBLE, &v, 1);
    }
}

/* --- MatMul --- */

static void matmul_kernel(rill__kctx *ctx)
{
    const rill_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
    bool ta = rill__attr_bool(ctx->node, "transpose_a", false);
    bool tb = rill__attr_bool(ctx->node, "transpose_b", false);
    int64_t m, k, n;
    if (!rill__check_matmul(ctx, a, b, &m, &k, &n)) return;
    rill_shape os = rill_shape_matrix(m, n);
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, a->dtype, &os);
    if (m == 0 || n == 0) return;
    if (k == 0) {
        memset(out->buf->data, 0, rill_tensor_nbytes(out));
        return;
    }
    int64_t lda = a->shape.dims[1], ldb = b->shape.dims[1];
    bool ok = true;
    if (a->dtype == RILL_FLOAT) {
        ok = rill__gemm_f32(ctx->pool, ta, tb, m, n, k, a->buf->data, lda, b->buf->data, ldb,
                            out->buf->data, n);
    } else if (a->dtype == RILL_DOUBLE) {
        rill__gemm_f64(ctx->pool, ta, tb, m, n, k, a->buf->data, lda, b->buf->data, ldb,
                       out->buf->data, n);
    } else {
        rill_tensor *wa = widen(a), *wb = widen(b);
        rill_tensor *wo = rill_tensor_new(RILL_FLOAT, os.dims, 2);
        ok = rill__gemm_f32(ctx->pool, ta, tb, m, n, k, wa->buf->data, lda, wb->buf->data, ldb,
                            wo->buf->data, n);
        rill__convert(RILL_HALF, out->buf->data, RILL_FLOAT, wo->buf->data, wo->numel);
        rill_tensor_free(wa);
        rill_tensor_free(wb);
        rill_tensor_free(wo);
    }
    if (!ok)
        rill__kctx_fail(ctx, RILL_INTERNAL, "MatMul: oneDNN's sgemm failed on [%lld, %lld] x [%lld, %lld]",
                        (long long)m, (long long)k, (long long)k, (long long)n);
}

#define K(op_, dt_, fn_)                                                                           \
    {                                                                                              \
        .op = op_, .device_type = "CPU", .dtype = dt_, .fn = fn_                                   \
    }
#define K_NUM(op_, fn_)                                                                            \
    K(op_, RILL_FLOAT, fn_), K(op_, RILL_DOUBLE, fn_), K(op_, RILL_HALF, fn_),                     \
        K(op_, RILL_INT32, fn_), K(op_, RILL_INT64, fn_)
#define K_FLT(op_, fn_) K(op_, RILL_FLOAT, fn_), K(op_, RILL_DOUBLE, fn_), K(op_, RILL_HALF, fn_)
const rill__kernel_def rill__cpu_kernels_math[] = {
    K_NUM("Add", rill__cpu_add),
    K_NUM("Sub", rill__cpu_sub),
    K_NUM("Mul", rill__cpu_mul),
    K_NUM("Div", rill__cpu_div),
    K_NUM("Maximum", rill__cpu_maximum),
    K_NUM("Minimum", rill__cpu_minimum),
    K_NUM("Neg", rill__cpu_neg),
    K_NUM("Square", rill__cpu_square),
    K_FLT("Sqrt", sqrt_kernel),
    K_FLT("Exp", exp_kernel),
    K_FLT("Log", log_kernel),
    K_NUM("AddN", rill__cpu_add_n),
    K_NUM("Sum", rill__cpu_reduce),
    K_NUM("Mean", rill__cpu_reduce),
    K_FLT("MatMul", matmul_kernel),
    K_NUM("SumToShape", rill__cpu_sum_to_shape),
    K_NUM("ReduceGrad", rill__cpu_reduce_grad),
    K_NUM("MaximumGrad", rill__cpu_maximum_grad),
    K_FLT("SqrtGrad", sqrt_grad_kernel),
    {0},
};
