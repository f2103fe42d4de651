/* cpu_norm.c - CPU kernels of LRN, LRNGrad, FusedBatchNormV3 and FusedBatchNormGradV3
 * (src/graph/ops_norm.c), NHWC, float, double and half (the batch norm's statistics are float
 * for float and half, double for double).
 *
 * Elements are read into double and each result rounded once into its tensor's type. LRN works
 * on one pixel's channels at a time (pixels split over the intra-op pool); the batch norms
 * reduce over N, H and W per channel in two passes (mean, then centred squares), as
 * TensorFlow's CPU kernel does, so the variance is not the difference of two large sums. */
#include "../kernel.h"

#include <math.h>

static double ld(const rill_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case RILL_FLOAT:
        return ((const float *)t->buf->data)[i];
    case RILL_DOUBLE:
        return ((const double *)t->buf->data)[i];
    default:
        return rill_half_to_float(((const rill_half *)t->buf->data)[i]);
    }
}

static void st(rill_tensor *t, int64_t i, double v)
{
    switch (t->dtype) {
    case RILL_FLOAT:
        ((float *)t->buf->data)[i] = (float)v;
        break;
    case RILL_DOUBLE:
        ((double *)t->buf->data)[i] = v;
        break;
    default:
        ((rill_half *)t->buf->data)[i] = rill_half_from_float((float)v);
    }
}

static bool check_4d(rill__kctx *ctx, int i, const char *what)
{
    const rill_tensor *t = ctx->inputs[i];
    if (t->shape.rank == 4) return true;
    char b[96];
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s must be 4-dimensional%s", what,
                    rill_shape_str(&t->shape, b, sizeof b));
    return false;
}

/* --- LRN --- */

typedef struct lrn_job {
    const rill_tensor *x, *dy, *y;
    rill_tensor *out;
    int64_t c, r;
    double bias, alpha, beta;
} lrn_job;

static double window_sq(const lrn_job *j, int64_t base, int64_t k)
{
    int64_t lo = k - j->r < 0 ? 0 : k - j->r, hi = k + j->r + 1 > j->c ? j->c : k + j->r + 1;
    double s = 0;
    for (int64_t q = lo; q < hi; q++) {
        double v = ld(j->x, base + q);
        s += v * v;
    }
    return j->bias + j->alpha * s;
}

static void lrn_range(void *arg, int64_t b, int64_t e)
{
    const lrn_job *j = arg;
    for (int64_t p = b; p < e; p++) {
        int64_t base = p * j->c;
        for (int64_t k = 0; k < j->c; k++)
            st(j->out, base + k, ld(j->x, base + k) * pow(window_sq(j, base, k), -j->beta));
    }
}

/* TF's LRNGradOp: out[k] += dy[m] * (delta(k, m) norm[m]^-beta - 2 alpha beta x[k] y[m] /
 * norm[m]) for k in m's window. */
static void lrn_grad_range(void *arg, int64_t b, int64_t e)
{
    const lrn_job *j = arg;
    double acc[1024];
    for (int64_t p = b; p < e; p++) {
        int64_t base = p * j->c;
        for (int64_t k = 0; k < j->c; k++) acc[k] = 0;
        for (int64_t m = 0; m < j->c; m++) {
            double norm = window_sq(j, base, m), g = ld(j->dy, base + m), ym = ld(j->y, base + m);
            int64_t lo = m - j->r < 0 ? 0 : m - j->r,
                    hi = m + j->r + 1 > j->c ? j->c : m + j->r + 1;
            for (int64_t k = lo; k < hi; k++) {
                double d = -2 * j->alpha * j->beta * ld(j->x, base + k) * ym / norm;
                if (k == m) d += pow(norm, -j->beta);
                acc[k] += d * g;
            }
        }
        for (int64_t k = 0; k < j->c; k++) st(j->out, base + k, acc[k]);
    }
}

static bool lrn_job_init(rill__kctx *ctx, lrn_job *j, const rill_tensor *x)
{
    const rill_node *n = ctx->node;
    j->c = x->shape.dims[3];
    j->r = rill__attr_int(n, "depth_radius", 5);
    j->bias = rill__attr_float(n, "bias", 1);
    j->alpha = rill__attr_float(n, "alpha", 1);
    j->beta = rill__attr_float(n, "beta", 0.5);
    if (j->c > 1024) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "rill's LRN takes at most 1024 channels, got %lld", (long long)j->c);
        return false;
    }
    return true;
}

static void lrn_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    if (!check_4d(ctx, 0, "input")) return;
    lrn_job j = {.x = x};
    if (!lrn_job_init(ctx, &j, x)) return;
    j.out = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!j.out || j.c == 0) return;
    rill__parallel_for(ctx->pool, x->numel / j.c, 256, lrn_range, &j);
}

static void lrn_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *dy = ctx->inputs[0], *x = ctx->inputs[1], *y = ctx->inputs[2];
    if (!check_4d(ctx, 0, "input_grads") || !check_4d(ctx, 1, "input_image") ||
        !check_4d(ctx, 2, "output_image"))
        return;
    if (!rill_shape_equal(&dy->shape, &x->shape) || !rill_shape_equal(&y->shape, &x->shape)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "input_grads, input_image, and out_image should have the same shape");
        return;
    }
    lrn_job j = {.x = x, .dy = dy, .y = y};
    if (!lrn_job_init(ctx, &j, x)) return;
    j.out = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!j.out || j.c == 0) return;
    rill__parallel_for(ctx->pool, x->numel / j.c, 64, lrn_grad_range, &j);
}

/* --- batch norm --- */

static bool check_vec(rill__kctx *ctx, int i, const char *what, int64_t c, bool may_be_empty)
{
    const rill_tensor *t = ctx->inputs[i];
    if (t->shape.rank == 1 && (t->shape.dims[0] == c || (may_be_empty && t->numel == 0)))
        return true;
    char b[96];
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                    "%s must have the same number of elements as the channels of x, got %lld "
                    "and %lld (%s)",
                    what, (long long)t->numel, (long long)c,
                    rill_shape_str(&t->shape, b, sizeof b));
    return false;
}

static rill_tensor *out_vec(rill__kctx *ctx, int i, rill_dtype u, int64_t c)
{
    rill_shape s = rill_shape_vector(c);
    return rill__kctx_alloc_output(ctx, i, u, &s);
}

static void fused_bn_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    const rill_tensor *x = ctx->inputs[0], *scale = ctx->inputs[1], *offset = ctx->inputs[2];
    const rill_tensor *mean = ctx->inputs[3], *var = ctx->inputs[4];
    if (!check_4d(ctx, 0, "input")) return;
    bool training = rill__attr_bool(n, "is_training", true);
    double eps = rill__attr_float(n, "epsilon", 1e-4);
    double f = rill__attr_float(n, "exponential_avg_factor", 1.0);
    int64_t c = x->shape.dims[3], rows = c > 0 ? x->numel / c : 0;
    bool empty_ok = training && f == 1.0;
    if (!check_vec(ctx, 1, "scale", c, false) || !check_vec(ctx, 2, "offset", c, false) ||
        !check_vec(ctx, 3, "mean", c, empty_ok) || !check_vec(ctx, 4, "variance", c, empty_ok))
        return;
    rill_dtype u = scale->dtype;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    rill_tensor *bm = y ? out_vec(ctx, 1, u, c) : NULL, *bv = bm ? out_vec(ctx, 2, u, c) : NULL;
    rill_tensor *r1 = bv ? out_vec(ctx, 3, u, c) : NULL, *r2 = r1 ? out_vec(ctx, 4, u, c) : NULL;
    rill_tensor *r3 = r2 ? out_vec(ctx, 5, u, 0) : NULL;
    if (!r3) return;
    for (int64_t k = 0; k < c; k++) {
        double m, v;
        if (training) {
            m = 0, v = 0;
            for (int64_t r = 0; r < rows; r++) m += ld(x, r * c + k);
            m = rows > 0 ? m / (double)rows : 0;
            for (int64_t r = 0; r < rows; r++) {
                double d = ld(x, r * c + k) - m;
                v += d * d;
            }
            v = rows > 0 ? v / (double)rows : 0;
            double corrected = rows > 1 ? v * (double)rows / (double)(rows - 1) : v;
            if (f == 1.0) {
                st(bm, k, m);
                st(bv, k, corrected);
            } else {
                st(bm, k, (1 - f) * ld(mean, k) + f * m);
                st(bv, k, (1 - f) * ld(var, k) + f * corrected);
            }
        } else {
            m = ld(mean, k), v = ld(var, k);
            st(bm, k, m);
            st(bv, k, v);
        }
        st(r1, k, m);
        st(r2, k, v);
        double a = 1 / sqrt(v + eps) * ld(scale, k), b = ld(offset, k);
        for (int64_t r = 0; r < rows; r++) st(y, r * c + k, (ld(x, r * c + k) - m) * a + b);
    }
}

static void fused_bn_grad_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    const rill_tensor *dy = ctx->inputs[0], *x = ctx->inputs[1], *scale = ctx->inputs[2];
    const rill_tensor *mean = ctx->inputs[3], *var = ctx->inputs[4];
    if (!check_4d(ctx, 0, "y_backprop") || !check_4d(ctx, 1, "x")) return;
    if (!rill_shape_equal(&dy->shape, &x->shape)) {
        char a[96], b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "x and y_backprop must have same shape, but x has shape %s and "
                        "y_backprop has shape %s",
                        rill_shape_str(&x->shape, a, sizeof a),
                        rill_shape_str(&dy->shape, b, sizeof b));
        return;
    }
    bool training = rill__attr_bool(n, "is_training", true);
    double eps = rill__attr_float(n, "epsilon", 1e-4);
    int64_t c = x->shape.dims[3], rows = c > 0 ? x->numel / c : 0;
    if (!check_vec(ctx, 2, "scale", c, false) || !check_vec(ctx, 3, "reserve_space_1", c, false) ||
        !check_vec(ctx, 4, "reserve_space_2", c, false))
        return;
    rill_dtype u = scale->dtype;
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    rill_tensor *ds = dx ? out_vec(ctx, 1, u, c) : NULL, *db = ds ? out_vec(ctx, 2, u, c) : NULL;
    rill_tensor *r4 = db ? out_vec(ctx, 3, u, 0) : NULL, *r5 = r4 ? out_vec(ctx, 4, u, 0) : NULL;
    if (!r5) return;
    for (int64_t k = 0; k < c; k++) {
        double m = ld(mean, k), inv = 1 / sqrt(ld(var, k) + eps), sc = ld(scale, k);
        double sdy = 0, sdyx = 0;
        for (int64_t r = 0; r < rows; r++) {
            double g = ld(dy, r * c + k);
            sdy += g;
            sdyx += g * (ld(x, r * c + k) - m) * inv;
        }
        st(db, k, sdy);
        st(ds, k, sdyx);
        double mdy = rows > 0 ? sdy / (double)rows : 0, mdyx = rows > 0 ? sdyx / (double)rows : 0;
        for (int64_t r = 0; r < rows; r++) {
            double g = ld(dy, r * c + k), xs = (ld(x, r * c + k) - m) * inv;
            st(dx, r * c + k, training ? sc * inv * (g - mdy - xs * mdyx) : g * sc * inv);
        }
    }
}

#define NK(OP, FN)                                                                                 \
    {.op = OP, .device_type = "CPU", .dtype = RILL_FLOAT, .fn = FN},                               \
        {.op = OP, .device_type = "CPU", .dtype = RILL_DOUBLE, .fn = FN},                          \
    {                                                                                              \
        .op = OP, .device_type = "CPU", .dtype = RILL_HALF, .fn = FN                               \
    }

const rill__kernel_def rill__cpu_kernels_norm[] = {
    NK("LRN", lrn_kernel),
    NK("LRNGrad", lrn_grad_kernel),
    NK("FusedBatchNormV3", fused_bn_kernel),
    NK("FusedBatchNormGradV3", fused_bn_grad_kernel),
    {0},
};
