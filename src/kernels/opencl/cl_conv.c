/* cl_conv.c - OpenCL kernels for the windowed ops, NHWC, float and double: Conv2D,
 * Conv2DBackpropInput, Conv2DBackpropFilter, MaxPool, AvgPool, MaxPoolGrad and AvgPoolGrad.
 *
 * Each op is the CPU kernel's twin (src/kernels/cpu/cpu_conv.c): the same checks
 * (rill__check_window_op), then one enqueue with one work item per output element, written for
 * correctness rather than speed. Every kernel gathers, so none needs atomics: an input-gradient
 * element sums over the outputs whose window holds it (for MaxPoolGrad, those whose first maximum
 * it is, recomputed from orig_input as the CPU does), a filter-gradient element over the batch
 * and output positions. The window's geometry travels as one long16 (see GEOM below). The int32
 * size inputs of the backprops stay in host memory (host_memory_inputs): only the host reads
 * them. */
#include "../kernel.h"
#include "cl_kernels.h"

#include <string.h>

const char rill__cl_source_conv[] =
    "#ifdef IS_DOUBLE\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    /* g: n, ih, iw, c, kh, kw, f, sh, sw, dh, dw, oh, ow, pt, pl (s0 .. se). */
    "#define CV_N g.s0\n"
    "#define CV_IH g.s1\n"
    "#define CV_IW g.s2\n"
    "#define CV_C g.s3\n"
    "#define CV_KH g.s4\n"
    "#define CV_KW g.s5\n"
    "#define CV_F g.s6\n"
    "#define CV_SH g.s7\n"
    "#define CV_SW g.s8\n"
    "#define CV_DH g.s9\n"
    "#define CV_DW g.sa\n"
    "#define CV_OH g.sb\n"
    "#define CV_OW g.sc\n"
    "#define CV_PT g.sd\n"
    "#define CV_PL g.se\n"
    /* y[n, oy, ox, f] = sum over ky, kx, c of x[n, iy, ix, c] * w[ky, kx, c, f]. */
    "__kernel void cv_conv2d(__global T *y, __global const T *x, __global const T *w, long16 g,\n"
    "                        long total)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long f = i % CV_F, p = i / CV_F, ox = p % CV_OW, oy = p / CV_OW % CV_OH,\n"
    "         n = p / (CV_OW * CV_OH);\n"
    "    ACC s = (ACC)0;\n"
    "    for (long ky = 0; ky < CV_KH; ky++) {\n"
    "        long iy = oy * CV_SH - CV_PT + ky * CV_DH;\n"
    "        if (iy < 0 || iy >= CV_IH) continue;\n"
    "        for (long kx = 0; kx < CV_KW; kx++) {\n"
    "            long ix = ox * CV_SW - CV_PL + kx * CV_DW;\n"
    "            if (ix < 0 || ix >= CV_IW) continue;\n"
    "            long xb = ((n * CV_IH + iy) * CV_IW + ix) * CV_C, wb = (ky * CV_KW + kx) * CV_C;\n"
    "            for (long c = 0; c < CV_C; c++) s += LD(x, xb + c) * LD(w, (wb + c) * CV_F + f);\n"
    "        }\n"
    "    }\n"
    "    ST(y, i, s);\n"
    "}\n"
    /* The output position along one axis whose window tap k lands on input position in, or -1. */
    "long cv_out_of(long in, long k, long stride, long dil, long pad, long out)\n"
    "{\n"
    "    long t = in + pad - k * dil;\n"
    "    if (t < 0 || t % stride) return -1;\n"
    "    t /= stride;\n"
    "    return t < out ? t : -1;\n"
    "}\n"
    /* dx[n, iy, ix, c] = sum over taps (ky, kx) landing there, f, of dy[n, oy, ox, f] w[..]. */
    "__kernel void cv_conv2d_bp_input(__global T *dx, __global const T *w, __global const T *dy,\n"
    "                                 long16 g, long total)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long c = i % CV_C, p = i / CV_C, ix = p % CV_IW, iy = p / CV_IW % CV_IH,\n"
    "         n = p / (CV_IW * CV_IH);\n"
    "    ACC s = (ACC)0;\n"
    "    for (long ky = 0; ky < CV_KH; ky++) {\n"
    "        long oy = cv_out_of(iy, ky, CV_SH, CV_DH, CV_PT, CV_OH);\n"
    "        if (oy < 0) continue;\n"
    "        for (long kx = 0; kx < CV_KW; kx++) {\n"
    "            long ox = cv_out_of(ix, kx, CV_SW, CV_DW, CV_PL, CV_OW);\n"
    "            if (ox < 0) continue;\n"
    "            long db = ((n * CV_OH + oy) * CV_OW + ox) * CV_F;\n"
    "            long wb = ((ky * CV_KW + kx) * CV_C + c) * CV_F;\n"
    "            for (long f = 0; f < CV_F; f++) s += LD(dy, db + f) * LD(w, wb + f);\n"
    "        }\n"
    "    }\n"
    "    ST(dx, i, s);\n"
    "}\n"
    /* dw[ky, kx, c, f] = sum over n, oy, ox of x[n, iy, ix, c] * dy[n, oy, ox, f]. */
    "__kernel void cv_conv2d_bp_filter(__global T *dw, __global const T *x,\n"
    "                                  __global const T *dy, long16 g, long total)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long f = i % CV_F, p = i / CV_F, c = p % CV_C, kx = p / CV_C % CV_KW,\n"
    "         ky = p / (CV_C * CV_KW);\n"
    "    ACC s = (ACC)0;\n"
    "    for (long n = 0; n < CV_N; n++)\n"
    "        for (long oy = 0; oy < CV_OH; oy++) {\n"
    "            long iy = oy * CV_SH - CV_PT + ky * CV_DH;\n"
    "            if (iy < 0 || iy >= CV_IH) continue;\n"
    "            for (long ox = 0; ox < CV_OW; ox++) {\n"
    "                long ix = ox * CV_SW - CV_PL + kx * CV_DW;\n"
    "                if (ix < 0 || ix >= CV_IW) continue;\n"
    "                s += LD(x, ((n * CV_IH + iy) * CV_IW + ix) * CV_C + c) *\n"
    "                     LD(dy, ((n * CV_OH + oy) * CV_OW + ox) * CV_F + f);\n"
    "            }\n"
    "        }\n"
    "    ST(dw, i, s);\n"
    "}\n"
    /* The in-bounds window of output (oy, ox): rows [r.s0, r.s1), columns [r.s2, r.s3). */
    "long4 cv_window(long16 g, long oy, long ox)\n"
    "{\n"
    "    long sy = oy * CV_SH - CV_PT, sx = ox * CV_SW - CV_PL;\n"
    "    return (long4)(max(sy, 0L), min(sy + CV_KH, CV_IH), max(sx, 0L), min(sx + CV_KW, CV_IW));\n"
    "}\n"
    /* The flat index of the first maximum of channel c in output (n, oy, ox)'s window. */
    "long cv_argmax(__global const T *x, long16 g, long n, long oy, long ox, long c)\n"
    "{\n"
    "    long4 r = cv_window(g, oy, ox);\n"
    "    long best = -1;\n"
    "    ACC m = (ACC)0;\n"
    "    for (long iy = r.s0; iy < r.s1; iy++)\n"
    "        for (long ix = r.s2; ix < r.s3; ix++) {\n"
    "            long j = ((n * CV_IH + iy) * CV_IW + ix) * CV_C + c;\n"
    "            ACC v = LD(x, j);\n"
    "            if (best < 0 || v > m) { m = v; best = j; }\n"
    "        }\n"
    "    return best;\n"
    "}\n"
    "__kernel void cv_max_pool(__global T *y, __global const T *x, long16 g, long total)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long c = i % CV_C, p = i / CV_C, ox = p % CV_OW, oy = p / CV_OW % CV_OH,\n"
    "         n = p / (CV_OW * CV_OH);\n"
    "    ST(y, i, LD(x, cv_argmax(x, g, n, oy, ox, c)));\n"
    "}\n"
    "__kernel void cv_avg_pool(__global T *y, __global const T *x, long16 g, long total)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long c = i % CV_C, p = i / CV_C, ox = p % CV_OW, oy = p / CV_OW % CV_OH,\n"
    "         n = p / (CV_OW * CV_OH);\n"
    "    long4 r = cv_window(g, oy, ox);\n"
    "    ACC s = (ACC)0;\n"
    "    for (long iy = r.s0; iy < r.s1; iy++)\n"
    "        for (long ix = r.s2; ix < r.s3; ix++)\n"
    "            s += LD(x, ((n * CV_IH + iy) * CV_IW + ix) * CV_C + c);\n"
    "    ST(y, i, s / (ACC)((r.s1 - r.s0) * (r.s3 - r.s2)));\n"
    "}\n"
    /* The outputs along one axis whose windows hold input position in: [lo, hi]. */
    "long2 cv_outs_over(long in, long k, long stride, long pad, long out)\n"
    "{\n"
    "    long t = in + pad - k + 1;\n"
    "    long lo = t <= 0 ? 0 : (t + stride - 1) / stride;\n"
    "    long hi = min((in + pad) / stride, out - 1);\n"
    "    return (long2)(lo, hi);\n"
    "}\n"
    "__kernel void cv_max_pool_grad(__global T *dx, __global const T *x, __global const T *dy,\n"
    "                               long16 g, long total)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long c = i % CV_C, p = i / CV_C, ix = p % CV_IW, iy = p / CV_IW % CV_IH,\n"
    "         n = p / (CV_IW * CV_IH);\n"
    "    long2 ry = cv_outs_over(iy, CV_KH, CV_SH, CV_PT, CV_OH);\n"
    "    long2 rx = cv_outs_over(ix, CV_KW, CV_SW, CV_PL, CV_OW);\n"
    "    ACC s = (ACC)0;\n"
    "    for (long oy = ry.s0; oy <= ry.s1; oy++)\n"
    "        for (long ox = rx.s0; ox <= rx.s1; ox++)\n"
    "            if (cv_argmax(x, g, n, oy, ox, c) == i)\n"
    "                s += LD(dy, ((n * CV_OH + oy) * CV_OW + ox) * CV_C + c);\n"
    "    ST(dx, i, s);\n"
    "}\n"
    "__kernel void cv_avg_pool_grad(__global T *dx, __global const T *dy, long16 g, long total)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long c = i % CV_C, p = i / CV_C, ix = p % CV_IW, iy = p / CV_IW % CV_IH,\n"
    "         n = p / (CV_IW * CV_IH);\n"
    "    long2 ry = cv_outs_over(iy, CV_KH, CV_SH, CV_PT, CV_OH);\n"
    "    long2 rx = cv_outs_over(ix, CV_KW, CV_SW, CV_PL, CV_OW);\n"
    "    ACC s = (ACC)0;\n"
    "    for (long oy = ry.s0; oy <= ry.s1; oy++)\n"
    "        for (long ox = rx.s0; ox <= rx.s1; ox++) {\n"
    "            long4 r = cv_window(g, oy, ox);\n"
    "            s += LD(dy, ((n * CV_OH + oy) * CV_OW + ox) * CV_C + c) /\n"
    "                 (ACC)((r.s1 - r.s0) * (r.s3 - r.s2));\n"
    "        }\n"
    "    ST(dx, i, s);\n"
    "}\n";

/* --- enqueueing --- */

/* Whether t is in ctx->device's memory (anything else is a placement bug upstream). */
static bool cv_on_device(rill__kctx *ctx, const rill_tensor *t, const char *what)
{
    if (t && t->buf->dev == ctx->device) return true;
    rill__kctx_fail(ctx, RILL_INTERNAL, "%s: %s is not in the memory of %s", ctx->node->op->name,
                    what, ctx->device ? ctx->device->name : "(no device)");
    return false;
}

static cl_long16 geom(const rill__window *w)
{
    cl_long16 g;
    memset(&g, 0, sizeof g);
    const int64_t v[15] = {w->n,  w->ih, w->iw, w->c,  w->kh, w->kw, w->f, w->sh,
                           w->sw, w->dh, w->dw, w->oh, w->ow, w->pt, w->pl};
    for (int i = 0; i < 15; i++) g.s[i] = v[i];
    return g;
}

/* Checks, allocates output 0 of dims d and launches kname over it with the device inputs ins
 * (indices into ctx->inputs). */
static void launch(rill__kctx *ctx, const char *kname, const int64_t *d, const int *ins, int nin,
                   const rill__window *w)
{
    rill_dtype t = rill__node_kernel_dtype(ctx->node);
    cl_mem mem[3];
    for (int i = 0; i < nin; i++) {
        char what[32];
        snprintf(what, sizeof what, "input %d", ins[i]);
        if (!cv_on_device(ctx, ctx->inputs[ins[i]], what)) return;
        mem[i] = rill__cl_mem(ctx->inputs[ins[i]]);
    }
    rill_shape os = rill_shape_make(4, d);
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, t, &os);
    if (!y || y->numel == 0) return;
    cl_mem ym = rill__cl_mem(y);
    cl_long16 g = geom(w);
    cl_long total = y->numel;
    rill__cl_arg args[6] = {RILL__CL_ARG(ym)};
    int na = 1;
    for (int i = 0; i < nin; i++) args[na++] = RILL__CL_ARG(mem[i]);
    args[na++] = RILL__CL_ARG(g);
    args[na++] = RILL__CL_ARG(total);
    rill__cl_launch(ctx, kname, t, args, na, total);
}

static void conv2d_kernel(rill__kctx *ctx)
{
    rill__window w;
    if (!rill__check_window_op(ctx, &w)) return;
    launch(ctx, "cv_conv2d", (int64_t[4]){w.n, w.oh, w.ow, w.f}, (int[]){0, 1}, 2, &w);
}

static void conv2d_bp_input_kernel(rill__kctx *ctx)
{
    rill__window w;
    if (!rill__check_window_op(ctx, &w)) return;
    launch(ctx, "cv_conv2d_bp_input", (int64_t[4]){w.n, w.ih, w.iw, w.c}, (int[]){1, 2}, 2, &w);
}

static void conv2d_bp_filter_kernel(rill__kctx *ctx)
{
    rill__window w;
    if (!rill__check_window_op(ctx, &w)) return;
    launch(ctx, "cv_conv2d_bp_filter", (int64_t[4]){w.kh, w.kw, w.c, w.f}, (int[]){0, 2}, 2, &w);
}

static void max_pool_kernel(rill__kctx *ctx)
{
    rill__window w;
    if (!rill__check_window_op(ctx, &w)) return;
    launch(ctx, "cv_max_pool", (int64_t[4]){w.n, w.oh, w.ow, w.c}, (int[]){0}, 1, &w);
}

static void avg_pool_kernel(rill__kctx *ctx)
{
    rill__window w;
    if (!rill__check_window_op(ctx, &w)) return;
    launch(ctx, "cv_avg_pool", (int64_t[4]){w.n, w.oh, w.ow, w.c}, (int[]){0}, 1, &w);
}

static void max_pool_grad_kernel(rill__kctx *ctx)
{
    rill__window w;
    if (!rill__check_window_op(ctx, &w)) return;
    launch(ctx, "cv_max_pool_grad", (int64_t[4]){w.n, w.ih, w.iw, w.c}, (int[]){0, 2}, 2, &w);
}

static void avg_pool_grad_kernel(rill__kctx *ctx)
{
    rill__window w;
    if (!rill__check_window_op(ctx, &w)) return;
    launch(ctx, "cv_avg_pool_grad", (int64_t[4]){w.n, w.ih, w.iw, w.c}, (int[]){1}, 1, &w);
}

/* Float and double; HOST_IN: the int32 size input, kept in host memory. */
#define CV_K(OP, FN, T, HOST_IN)                                                                   \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = T, .fn = FN, .host_memory_inputs = HOST_IN     \
    }
#define CV_KERNEL_H(OP, FN, HOST_IN) CV_K(OP, FN, RILL_FLOAT, HOST_IN), CV_K(OP, FN, RILL_DOUBLE, HOST_IN)
#define CV_KERNEL(OP, FN)            CV_KERNEL_H(OP, FN, 0)

const rill__kernel_def rill__opencl_kernels_conv[] = {
    CV_KERNEL("Conv2D", conv2d_kernel),
    CV_KERNEL_H("Conv2DBackpropInput", conv2d_bp_input_kernel, 1u << 0),
    CV_KERNEL_H("Conv2DBackpropFilter", conv2d_bp_filter_kernel, 1u << 1),
    CV_KERNEL("MaxPool", max_pool_kernel),
    CV_KERNEL("AvgPool", avg_pool_kernel),
    CV_KERNEL("MaxPoolGrad", max_pool_grad_kernel),
    CV_KERNEL_H("AvgPoolGrad", avg_pool_grad_kernel, 1u << 0),
    {0},
};
