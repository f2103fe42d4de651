/* cpu_pool_half.c - CPU kernels of AvgPool and AvgPoolGrad for half tensors (cpu_conv.c has
 * float and double). Computed in float and rounded once per element, as the other half CPU
 * kernels do; TF's average excludes the padding (count = the window's elements inside the
 * input). The geometry and its checks are rill__check_window_op's, shared with cpu_conv.c. */
#include "../kernel.h"

#include <string.h>

/* The window of output (n, oy, ox): rows [y0, y1), columns [x0, x1) of the input. */
static void bounds(const rill__window *w, int64_t oy, int64_t ox, int64_t *y0, int64_t *y1,
                   int64_t *x0, int64_t *x1)
{
    *y0 = oy * w->sh - w->pt, *x0 = ox * w->sw - w->pl;
    *y1 = *y0 + w->kh < w->ih ? *y0 + w->kh : w->ih;
    *x1 = *x0 + w->kw < w->iw ? *x0 + w->kw : w->iw;
    if (*y0 < 0) *y0 = 0;
    if (*x0 < 0) *x0 = 0;
}

static void avg_pool_half_kernel(rill__kctx *ctx)
{
    rill__window w;
    if (!rill__check_window_op(ctx, &w)) return;
    const rill_half *x = ctx->inputs[0]->buf->data;
    rill_shape os = rill_shape_make(4, (int64_t[4]){w.n, w.oh, w.ow, w.c});
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, RILL_HALF, &os);
    if (!y) return;
    rill_half *yd = y->buf->data;
    for (int64_t n = 0; n < w.n; n++)
        for (int64_t oy = 0; oy < w.oh; oy++)
            for (int64_t ox = 0; ox < w.ow; ox++) {
                int64_t y0, y1, x0, x1;
                bounds(&w, oy, ox, &y0, &y1, &x0, &x1);
                float cnt = (float)((y1 - y0) * (x1 - x0));
                for (int64_t c = 0; c < w.c; c++) {
                    float s = 0;
                    for (int64_t iy = y0; iy < y1; iy++)
                        for (int64_t ix = x0; ix < x1; ix++)
                            s += rill_half_to_float(x[((n * w.ih + iy) * w.iw + ix) * w.c + c]);
                    yd[((n * w.oh + oy) * w.ow + ox) * w.c + c] =
                        rill_half_from_float(cnt > 0 ? s / cnt : 0);
                }
            }
}

static void avg_pool_grad_half_kernel(rill__kctx *ctx)
{
    rill__window w;
    if (!rill__check_window_op(ctx, &w)) return;
    const rill_half *dy = ctx->inputs[1]->buf->data;
    rill_shape xs = rill_shape_make(4, (int64_t[4]){w.n, w.ih, w.iw, w.c});
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, RILL_HALF, &xs);
    if (!dx) return;
    float *acc = rill__calloc((size_t)(dx->numel > 0 ? dx->numel : 1), sizeof *acc);
    RILL_CHECK_ALLOC(acc);
    for (int64_t n = 0; n < w.n; n++)
        for (int64_t oy = 0; oy < w.oh; oy++)
            for (int64_t ox = 0; ox < w.ow; ox++) {
                int64_t y0, y1, x0, x1;
                bounds(&w, oy, ox, &y0, &y1, &x0, &x1);
                float cnt = (float)((y1 - y0) * (x1 - x0));
                if (cnt <= 0) continue;
                for (int64_t c = 0; c < w.c; c++) {
                    float g = rill_half_to_float(dy[((n * w.oh + oy) * w.ow + ox) * w.c + c]) / cnt;
                    for (int64_t iy = y0; iy < y1; iy++)
                        for (int64_t ix = x0; ix < x1; ix++)
                            acc[((n * w.ih + iy) * w.iw + ix) * w.c + c] += g;
                }
            }
    rill_half *d = dx->buf->data;
    for (int64_t i = 0; i < dx->numel; i++) d[i] = rill_half_from_float(acc[i]);
    rill__free(acc);
}

const rill__kernel_def rill__cpu_kernels_pool_half[] = {
    {.op = "AvgPool", .device_type = "CPU", .dtype = RILL_HALF, .fn = avg_pool_half_kernel},
    {.op = "AvgPoolGrad",
     .device_type = "CPU",
     .dtype = RILL_HALF,
     .fn = avg_pool_grad_half_kernel},
    {0},
};
