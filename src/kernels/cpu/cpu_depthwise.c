/* cpu_depthwise.c - CPU kernels of DepthwiseConv2dNative and its backprops
 * (src/graph/ops_depthwise.c), NHWC, float, double and half.
 *
 * One pass over the output positions; each product is accumulated in double and each result
 * rounded once. The forward pass computes every output pixel independently (rows of the output
 * split over the intra-op pool); the backprops scatter into a double buffer, then round. */
#include "../kernel.h"

#include <string.h>

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

static bool dims4(rill__kctx *ctx, const rill_tensor *t, const char *what, int64_t *d)
{
    if (t->shape.rank != 4) {
        char b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: %s must be 4-dimensional: %s",
                        ctx->node->op->name, what, rill_shape_str(&t->shape, b, sizeof b));
        return false;
    }
    memcpy(d, t->shape.dims, 4 * sizeof *d);
    return true;
}

static bool size4(rill__kctx *ctx, const rill_tensor *t, const char *what, int64_t *d)
{
    if (t->dtype != RILL_INT32 || t->numel != 4) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: %s must be an int32 vector of 4 sizes",
                        ctx->node->op->name, what);
        return false;
    }
    for (int k = 0; k < 4; k++) {
        d[k] = ((const int32_t *)t->buf->data)[k];
        if (d[k] < 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: %s[%d] = %lld must be >= 0",
                            ctx->node->op->name, what, k, (long long)d[k]);
            return false;
        }
    }
    return true;
}

/* The geometry of the op over input dims x and filter dims f, and the out_backprop check. */
typedef struct dw_job {
    rill__window w;
    int64_t m; /* depth multiplier */
    const rill_tensor *x, *f, *dy;
    rill_tensor *out;
    double *acc;
} dw_job;

static bool geometry(rill__kctx *ctx, const int64_t *x, const int64_t *f, dw_job *j,
                     const rill_tensor *dy)
{
    const char *op = ctx->node->op->name;
    if (f[2] != x[3]) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s: input and filter must have the same depth: %lld vs %lld", op,
                        (long long)x[3], (long long)f[2]);
        return false;
    }
    char err[256];
    if (!rill__window_init(ctx->node, x, f[0], f[1], &j->w, err, sizeof err)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: %s", op, err);
        return false;
    }
    j->m = f[3];
    j->w.f = x[3] * f[3];
    if (!dy) return true;
    int64_t want[4] = {x[0], j->w.oh, j->w.ow, j->w.f};
    rill_shape ws = rill_shape_make(4, want);
    if (rill_shape_equal(&dy->shape, &ws)) return true;
    char a[96], b[96];
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: out_backprop has shape %s, expected %s", op,
                    rill_shape_str(&dy->shape, a, sizeof a), rill_shape_str(&ws, b, sizeof b));
    return false;
}

/* Calls BODY for every (output pixel o, input pixel i, filter tap t, channel c, multiplier m)
 * of output rows [b, e) (row = n * oh + oy): xi = input element, fi = filter element, oi =
 * output element. */
#define DW_LOOP(j, b, e, BODY)                                                                     \
    for (int64_t row = (b); row < (e); row++) {                                                    \
        const rill__window *w_ = &(j)->w;                                                          \
        int64_t n_ = row / w_->oh, oy = row % w_->oh;                                              \
        for (int64_t ox = 0; ox < w_->ow; ox++)                                                    \
            for (int64_t ky = 0; ky < w_->kh; ky++) {                                              \
                int64_t iy = oy * w_->sh - w_->pt + ky * w_->dh;                                   \
                if (iy < 0 || iy >= w_->ih) continue;                                              \
                for (int64_t kx = 0; kx < w_->kw; kx++) {                                          \
                    int64_t ix = ox * w_->sw - w_->pl + kx * w_->dw;                               \
                    if (ix < 0 || ix >= w_->iw) continue;                                          \
                    for (int64_t c = 0; c < w_->c; c++)                                            \
                        for (int64_t mm = 0; mm < (j)->m; mm++) {                                  \
                            int64_t xi = ((n_ * w_->ih + iy) * w_->iw + ix) * w_->c + c;           \
                            int64_t fi = ((ky * w_->kw + kx) * w_->c + c) * (j)->m + mm;           \
                            int64_t oi =                                                           \
                                ((n_ * w_->oh + oy) * w_->ow + ox) * w_->f + c * (j)->m + mm;      \
                            BODY                                                                   \
                        }                                                                          \
                }                                                                                  \
            }                                                                                      \
    }

static void forward_rows(void *arg, int64_t b, int64_t e)
{
    dw_job *j = arg;
    int64_t per_row = j->w.ow * j->w.f;
    memset(j->acc + b * per_row, 0, (size_t)((e - b) * per_row) * sizeof *j->acc);
    DW_LOOP(j, b, e, { j->acc[oi] += ld(j->x, xi) * ld(j->f, fi); })
    for (int64_t i = b * per_row; i < e * per_row; i++) st(j->out, i, j->acc[i]);
}

static double *scratch(int64_t n)
{
    double *a = rill__calloc((size_t)(n > 0 ? n : 1), sizeof *a);
    RILL_CHECK_ALLOC(a);
    return a;
}

static void depthwise_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *f = ctx->inputs[1];
    int64_t xd[4], fd[4];
    dw_job j = {.x = x, .f = f};
    if (!dims4(ctx, x, "input", xd) || !dims4(ctx, f, "filter", fd) ||
        !geometry(ctx, xd, fd, &j, NULL))
        return;
    int64_t od[4] = {xd[0], j.w.oh, j.w.ow, j.w.f};
    rill_shape os = rill_shape_make(4, od);
    j.out = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!j.out) return;
    j.acc = scratch(j.out->numel);
    rill__parallel_for(ctx->pool, xd[0] * j.w.oh, 4, forward_rows, &j);
    rill__free(j.acc);
}

static void bp_input_kernel(rill__kctx *ctx)
{
    const rill_tensor *f = ctx->inputs[1], *dy = ctx->inputs[2];
    int64_t xd[4], fd[4];
    dw_job j = {.f = f, .dy = dy};
    if (!size4(ctx, ctx->inputs[0], "input_sizes", xd) || !dims4(ctx, f, "filter", fd) ||
        !geometry(ctx, xd, fd, &j, dy))
        return;
    rill_shape os = rill_shape_make(4, xd);
    j.out = rill__kctx_alloc_output(ctx, 0, f->dtype, &os);
    if (!j.out) return;
    double *acc = scratch(j.out->numel);
    DW_LOOP(&j, 0, xd[0] * j.w.oh, { acc[xi] += ld(dy, oi) * ld(f, fi); })
    for (int64_t i = 0; i < j.out->numel; i++) st(j.out, i, acc[i]);
    rill__free(acc);
}

static void bp_filter_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *dy = ctx->inputs[2];
    int64_t xd[4], fd[4];
    dw_job j = {.x = x, .dy = dy};
    if (!dims4(ctx, x, "input", xd) || !size4(ctx, ctx->inputs[1], "filter_sizes", fd) ||
        !geometry(ctx, xd, fd, &j, dy))
        return;
    rill_shape os = rill_shape_make(4, fd);
    j.out = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!j.out) return;
    double *acc = scratch(j.out->numel);
    DW_LOOP(&j, 0, xd[0] * j.w.oh, { acc[fi] += ld(x, xi) * ld(dy, oi); })
    for (int64_t i = 0; i < j.out->numel; i++) st(j.out, i, acc[i]);
    rill__free(acc);
}

#define DK(OP, FN)                                                                                 \
    {.op = OP, .device_type = "CPU", .dtype = RILL_FLOAT, .fn = FN},                               \
        {.op = OP, .device_type = "CPU", .dtype = RILL_DOUBLE, .fn = FN},                          \
    {                                                                                              \
        .op = OP, .device_type = "CPU", .dtype = RILL_HALF, .fn = FN                               \
    }

const rill__kernel_def rill__cpu_kernels_depthwise[] = {
    DK("DepthwiseConv2dNative", depthwise_kernel),
    DK("DepthwiseConv2dNativeBackpropInput", bp_input_kernel),
    DK("DepthwiseConv2dNativeBackpropFilter", bp_filter_kernel),
    {0},
};
