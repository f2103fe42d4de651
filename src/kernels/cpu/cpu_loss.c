/* cpu_loss.c - CPU kernels of L2Loss, LogSoftmax and SigmoidCrossEntropyWithLogits
 * (src/graph/ops_loss.c), float, double and half.
 *
 * Elements are read into double and results rounded once into the tensor's type, so float and
 * half results are the correctly rounded values of the double computation (TensorFlow sums
 * L2Loss in float: its result may differ in the last bits). Rows of LogSoftmax are independent
 * and split over the intra-op pool. */
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

static void l2_loss_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    rill_shape sc = rill_shape_scalar();
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &sc);
    if (!y) return;
    double s = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        double v = ld(x, i);
        s += v * v;
    }
    st(y, 0, s / 2);
}

typedef struct rows_job {
    const rill_tensor *x;
    rill_tensor *y;
    int64_t cols;
} rows_job;

static void log_softmax_rows(void *arg, int64_t b, int64_t e)
{
    const rows_job *j = arg;
    int64_t c = j->cols;
    for (int64_t r = b; r < e; r++) {
        double m = -INFINITY, s = 0;
        for (int64_t k = 0; k < c; k++) m = fmax(m, ld(j->x, r * c + k));
        for (int64_t k = 0; k < c; k++) s += exp(ld(j->x, r * c + k) - m);
        double ls = log(s);
        for (int64_t k = 0; k < c; k++) st(j->y, r * c + k, ld(j->x, r * c + k) - m - ls);
    }
}

static void log_softmax_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    if (x->shape.rank < 1) {
        char sx[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "logits must have >= 1 dimension, got %s",
                        rill_shape_str(&x->shape, sx, sizeof sx));
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y) return;
    rows_job j = {x, y, x->shape.dims[x->shape.rank - 1]};
    int64_t rows = j.cols > 0 ? x->numel / j.cols : 0;
    int64_t per = (1 << 14) / (j.cols > 0 ? j.cols : 1);
    rill__parallel_for(ctx->pool, rows, per > 0 ? per : 1, log_softmax_rows, &j);
}

static void sigmoid_ce_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *z = ctx->inputs[1];
    if (!rill_shape_equal(&x->shape, &z->shape) || x->dtype != z->dtype) {
        char sa[96], sb[96];
        rill__kctx_fail(
            ctx, RILL_INVALID_ARGUMENT, "logits and labels must have the same shape (%s vs %s)",
            rill_shape_str(&x->shape, sa, sizeof sa), rill_shape_str(&z->shape, sb, sizeof sb));
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y) return;
    for (int64_t i = 0; i < x->numel; i++) {
        double a = ld(x, i), b = ld(z, i);
        st(y, i, fmax(a, 0) - a * b + log1p(exp(-fabs(a))));
    }
}

#define LK(OP, FN)                                                                                 \
    {.op = OP, .device_type = "CPU", .dtype = RILL_FLOAT, .fn = FN},                               \
        {.op = OP, .device_type = "CPU", .dtype = RILL_DOUBLE, .fn = FN},                          \
    {                                                                                              \
        .op = OP, .device_type = "CPU", .dtype = RILL_HALF, .fn = FN                               \
    }

const rill__kernel_def rill__cpu_kernels_loss[] = {
    LK("L2Loss", l2_loss_kernel),
    LK("LogSoftmax", log_softmax_kernel),
    LK("SigmoidCrossEntropyWithLogits", sigmoid_ce_kernel),
    {0},
};
