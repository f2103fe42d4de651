/* cl_conv3d.c - OpenCL kernels of the 3-D windowed ops, NDHWC, float and double: Conv3D,
 * Conv3DBackpropInputV2, Conv3DBackpropFilterV2, MaxPool3D, AvgPool3D, MaxPool3DGrad and
 * AvgPool3DGrad.
 *
 * Each op is the CPU kernel's twin (src/kernels/cpu/cpu_conv3d.c): the same checks
 * (rill__check_window3d_op, window3d.c), then one enqueue with one work item per output element,
 * written for correctness rather than speed, as cl_conv.c's 2-D ones. Every kernel gathers, so
 * none needs atomics: an input-gradient element sums over the outputs whose window holds it (for
 * MaxPool3DGrad, those whose orig_output it equals), a filter-gradient element over the batch and
 * output positions. The geometry travels as a long16 (n, c, f, in[3], k[3], s[3], d[3]) and a
 * long8 (out[3], pad[3]). The int32 size inputs stay in host memory (host_memory_inputs). */
#include "../window3d.h"
#include "cl_kernels.h"

#include <string.h>

const char rill__cl_source_conv3d[] =
    "#ifdef IS_DOUBLE\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    "#define C3_N g.s0\n"
    "#define C3_C g.s1\n"
    "#define C3_F g.s2\n"
    "#define C3_IN(i) ((i) == 0 ? g.s3 : (i) == 1 ? g.s4 : g.s5)\n"
    "#define C3_K(i) ((i) == 0 ? g.s6 : (i) == 1 ? g.s7 : g.s8)\n"
    "#define C3_S(i) ((i) == 0 ? g.s9 : (i) == 1 ? g.sa : g.sb)\n"
    "#define C3_D(i) ((i) == 0 ? g.sc : (i) == 1 ? g.sd : g.se)\n"
    "#define C3_OUT(i) ((i) == 0 ? h.s0 : (i) == 1 ? h.s1 : h.s2)\n"
    "#define C3_PAD(i) ((i) == 0 ? h.s3 : (i) == 1 ? h.s4 : h.s5)\n"
    /* flat NDHWC index of (n, z, y, x, c) over spatial dims (a, b, e) and channels ch */
    "#define C3_IX(n, z, y, x, c, a, b, e, ch) ((((n) * (a) + (z)) * (b) + (y)) * (e) + (x)) * "
    "(ch) "
    "+ (c)\n"
    /* the output along dimension i whose tap k lands on input p, or -1 */
    "long c3_out_of(long16 g, long8 h, int i, long p, long k)\n"
    "{\n"
    "    long t = p + C3_PAD(i) - k * C3_D(i);\n"
    "    if (t < 0 || t % C3_S(i)) return -1;\n"
    "    t /= C3_S(i);\n"
    "    return t < C3_OUT(i) ? t : -1;\n"
    "}\n"
    /* the outputs along dimension i whose (undilated) window holds input p: [s0, s1] */
    "long2 c3_outs_over(long16 g, long8 h, int i, long p)\n"
    "{\n"
    "    long q = p + C3_PAD(i), s = C3_S(i);\n"
    "    long lo = q - C3_K(i) + 1 <= 0 ? 0 : (q - C3_K(i) + s) / s, hi = q / s;\n"
    "    if (hi > C3_OUT(i) - 1) hi = C3_OUT(i) - 1;\n"
    "    return (long2)(lo, hi);\n"
    "}\n"
    /* the in-bounds window of output o along dimension i: [s0, s1) */
    "long2 c3_window(long16 g, long8 h, int i, long o)\n"
    "{\n"
    "    long s = o * C3_S(i) - C3_PAD(i), e = s + C3_K(i);\n"
    "    return (long2)(s < 0 ? 0 : s, e < C3_IN(i) ? e : C3_IN(i));\n"
    "}\n"
    "__kernel void c3_conv(__global T *y, __global const T *x, __global const T *w, long16 g,\n"
    "                      long8 h, long total)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long f = i % C3_F, p = i / C3_F, ox = p % C3_OUT(2), oy = p / C3_OUT(2) % C3_OUT(1),\n"
    "         oz = p / (C3_OUT(2) * C3_OUT(1)) % C3_OUT(0), n = p / (C3_OUT(2) * C3_OUT(1) * "
    "C3_OUT(0));\n"
    "    ACC s = (ACC)0;\n"
    "    for (long kz = 0; kz < C3_K(0); kz++) {\n"
    "        long iz = oz * C3_S(0) - C3_PAD(0) + kz * C3_D(0);\n"
    "        if (iz < 0 || iz >= C3_IN(0)) continue;\n"
    "        for (long ky = 0; ky < C3_K(1); ky++) {\n"
    "            long iy = oy * C3_S(1) - C3_PAD(1) + ky * C3_D(1);\n"
    "            if (iy < 0 || iy >= C3_IN(1)) continue;\n"
    "            for (long kx = 0; kx < C3_K(2); kx++) {\n"
    "                long ix = ox * C3_S(2) - C3_PAD(2) + kx * C3_D(2);\n"
    "                if (ix < 0 || ix >= C3_IN(2)) continue;\n"
    "                long xb = C3_IX(n, iz, iy, ix, 0, C3_IN(0), C3_IN(1), C3_IN(2), C3_C);\n"
    "                long wb = ((kz * C3_K(1) + ky) * C3_K(2) + kx) * C3_C;\n"
    "                for (long c = 0; c < C3_C; c++)\n"
    "                    s += LD(x, xb + c) * LD(w, (wb + c) * C3_F + f);\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "    ST(y, i, s);\n"
    "}\n"
    "__kernel void c3_bp_input(__global T *dx, __global const T *w, __global const T *dy,\n"
    "                          long16 g, long8 h, long total)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long c = i % C3_C, p = i / C3_C, ix = p % C3_IN(2), iy = p / C3_IN(2) % C3_IN(1),\n"
    "         iz = p / (C3_IN(2) * C3_IN(1)) % C3_IN(0), n = p / (C3_IN(2) * C3_IN(1) * "
    "C3_IN(0));\n"
    "    ACC s = (ACC)0;\n"
    "    for (long kz = 0; kz < C3_K(0); kz++) {\n"
    "        long oz = c3_out_of(g, h, 0, iz, kz);\n"
    "        if (oz < 0) continue;\n"
    "        for (long ky = 0; ky < C3_K(1); ky++) {\n"
    "            long oy = c3_out_of(g, h, 1, iy, ky);\n"
    "            if (oy < 0) continue;\n"
    "            for (long kx = 0; kx < C3_K(2); kx++) {\n"
    "                long ox = c3_out_of(g, h, 2, ix, kx);\n"
    "                if (ox < 0) continue;\n"
    "                long db = C3_IX(n, oz, oy, ox, 0, C3_OUT(0), C3_OUT(1), C3_OUT(2), C3_F);\n"
    "                long wb = (((kz * C3_K(1) + ky) * C3_K(2) + kx) * C3_C + c) * C3_F;\n"
    "                for (long f = 0; f < C3_F; f++) s += LD(dy, db + f) * LD(w, wb + f);\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "    ST(dx, i, s);\n"
    "}\n"
    "__kernel void c3_bp_filter(__global T *dw, __global const T *x, __global const T *dy,\n"
    "                           long16 g, long8 h, long total)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long f = i % C3_F, r = i / C3_F, c = r % C3_C, t = r / C3_C, kx = t % C3_K(2),\n"
    "         ky = t / C3_K(2) % C3_K(1), kz = t / (C3_K(2) * C3_K(1));\n"
    "    ACC s = (ACC)0;\n"
    "    for (long n = 0; n < C3_N; n++)\n"
    "        for (long oz = 0; oz < C3_OUT(0); oz++) {\n"
    "            long iz = oz * C3_S(0) - C3_PAD(0) + kz * C3_D(0);\n"
    "            if (iz < 0 || iz >= C3_IN(0)) continue;\n"
    "            for (long oy = 0; oy < C3_OUT(1); oy++) {\n"
    "                long iy = oy * C3_S(1) - C3_PAD(1) + ky * C3_D(1);\n"
    "                if (iy < 0 || iy >= C3_IN(1)) continue;\n"
    "                for (long ox = 0; ox < C3_OUT(2); ox++) {\n"
    "                    long ix = ox * C3_S(2) - C3_PAD(2) + kx * C3_D(2);\n"
    "                    if (ix < 0 || ix >= C3_IN(2)) continue;\n"
    "                    s += LD(x, C3_IX(n, iz, iy, ix, c, C3_IN(0), C3_IN(1), C3_IN(2), C3_C)) "
    "*\n"
    "                         LD(dy, C3_IX(n, oz, oy, ox, f, C3_OUT(0), C3_OUT(1), C3_OUT(2), "
    "C3_F));\n"
    "                }\n"
    "            }\n"
    "        }\n"
    "    ST(dw, i, s);\n"
    "}\n"
    /* max (first maximum's value) or mean of output i's window */
    "__kernel void c3_pool(__global T *y, __global const T *x, long16 g, long8 h, long total,\n"
    "                      int is_max)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long c = i % C3_C, p = i / C3_C, ox = p % C3_OUT(2), oy = p / C3_OUT(2) % C3_OUT(1),\n"
    "         oz = p / (C3_OUT(2) * C3_OUT(1)) % C3_OUT(0), n = p / (C3_OUT(2) * C3_OUT(1) * "
    "C3_OUT(0));\n"
    "    long2 rz = c3_window(g, h, 0, oz), ry = c3_window(g, h, 1, oy), rx = c3_window(g, h, 2, "
    "ox);\n"
    "    ACC s = (ACC)0;\n"
    "    bool first = true;\n"
    "    for (long z = rz.s0; z < rz.s1; z++)\n"
    "        for (long yy = ry.s0; yy < ry.s1; yy++)\n"
    "            for (long xx = rx.s0; xx < rx.s1; xx++) {\n"
    "                ACC v = LD(x, C3_IX(n, z, yy, xx, c, C3_IN(0), C3_IN(1), C3_IN(2), C3_C));\n"
    "                if (!is_max) s += v;\n"
    "                else if (first || v > s) s = v;\n"
    "                first = false;\n"
    "            }\n"
    "    long cnt = (rz.s1 - rz.s0) * (ry.s1 - ry.s0) * (rx.s1 - rx.s0);\n"
    "    ST(y, i, is_max || cnt == 0 ? s : s / (ACC)cnt);\n"
    "}\n"
    /* dx of input i: over the outputs whose window holds it, dy (MaxPool3DGrad: where x equals
     * orig_output) or dy / the window's count (AvgPool3DGrad: x and yo unused) */
    "__kernel void c3_pool_grad(__global T *dx, __global const T *x, __global const T *yo,\n"
    "                           __global const T *dy, long16 g, long8 h, long total, int is_max)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long c = i % C3_C, p = i / C3_C, ix = p % C3_IN(2), iy = p / C3_IN(2) % C3_IN(1),\n"
    "         iz = p / (C3_IN(2) * C3_IN(1)) % C3_IN(0), n = p / (C3_IN(2) * C3_IN(1) * "
    "C3_IN(0));\n"
    "    long2 rz = c3_outs_over(g, h, 0, iz), ry = c3_outs_over(g, h, 1, iy),\n"
    "          rx = c3_outs_over(g, h, 2, ix);\n"
    "    ACC v = is_max ? LD(x, i) : (ACC)0, s = (ACC)0;\n"
    "    for (long oz = rz.s0; oz <= rz.s1; oz++)\n"
    "        for (long oy = ry.s0; oy <= ry.s1; oy++)\n"
    "            for (long ox = rx.s0; ox <= rx.s1; ox++) {\n"
    "                long o = C3_IX(n, oz, oy, ox, c, C3_OUT(0), C3_OUT(1), C3_OUT(2), C3_C);\n"
    "                if (is_max) {\n"
    "                    if (v == LD(yo, o)) s += LD(dy, o);\n"
    "                } else {\n"
    "                    long2 wz = c3_window(g, h, 0, oz), wy = c3_window(g, h, 1, oy),\n"
    "                          wx = c3_window(g, h, 2, ox);\n"
    "                    s += LD(dy, o) / (ACC)((wz.s1 - wz.s0) * (wy.s1 - wy.s0) *\n"
    "                                           (wx.s1 - wx.s0));\n"
    "                }\n"
    "            }\n"
    "    ST(dx, i, s);\n"
    "}\n";

/* --- enqueueing --- */

static bool c3_on_device(rill__kctx *ctx, const rill_tensor *t, int i)
{
    if (t && t->buf->dev == ctx->device) return true;
    rill__kctx_fail(ctx, RILL_INTERNAL, "%s: input %d is not in the memory of %s",
                    ctx->node->op->name, i, ctx->device ? ctx->device->name : "(no device)");
    return false;
}

/* Allocates output 0 of dims d and launches kname over it with the device inputs ins (indices
 * into ctx->inputs; -1 repeats the first), the geometry and, when is_max >= 0, that flag. */
static void launch(rill__kctx *ctx, const char *kname, const int64_t *d, const int *ins, int nin,
                   const rill__window3d *w, int is_max)
{
    rill_dtype t = rill__node_kernel_dtype(ctx->node);
    cl_mem mem[3];
    for (int i = 0; i < nin; i++) {
        int k = ins[i] < 0 ? ins[0] : ins[i];
        if (!c3_on_device(ctx, ctx->inputs[k], k)) return;
        mem[i] = rill__cl_mem(ctx->inputs[k]);
    }
    rill_shape os = rill_shape_make(5, d);
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, t, &os);
    if (!y || y->numel == 0) return;
    cl_mem ym = rill__cl_mem(y);
    cl_long16 g;
    cl_long8 h;
    memset(&g, 0, sizeof g);
    memset(&h, 0, sizeof h);
    g.s[0] = w->n, g.s[1] = w->c, g.s[2] = w->f;
    for (int i = 0; i < 3; i++) {
        g.s[3 + i] = w->in[i], g.s[6 + i] = w->k[i], g.s[9 + i] = w->s[i], g.s[12 + i] = w->d[i];
        h.s[i] = w->out[i], h.s[3 + i] = w->pad[i];
    }
    cl_long total = y->numel;
    cl_int flag = is_max;
    rill__cl_arg args[8] = {RILL__CL_ARG(ym)};
    int na = 1;
    for (int i = 0; i < nin; i++) args[na++] = RILL__CL_ARG(mem[i]);
    args[na++] = RILL__CL_ARG(g);
    args[na++] = RILL__CL_ARG(h);
    args[na++] = RILL__CL_ARG(total);
    if (is_max >= 0) args[na++] = RILL__CL_ARG(flag);
    rill__cl_launch(ctx, kname, t, args, na, total);
}

static void conv3d_kernel(rill__kctx *ctx)
{
    rill__window3d w;
    if (!rill__check_window3d_op(ctx, RILL__W3_CONV, &w)) return;
    int64_t d[5] = {w.n, w.out[0], w.out[1], w.out[2], w.f};
    launch(ctx, "c3_conv", d, (int[]){0, 1}, 2, &w, -1);
}

static void conv3d_bp_input_kernel(rill__kctx *ctx)
{
    rill__window3d w;
    if (!rill__check_window3d_op(ctx, RILL__W3_BP_INPUT, &w)) return;
    int64_t d[5] = {w.n, w.in[0], w.in[1], w.in[2], w.c};
    launch(ctx, "c3_bp_input", d, (int[]){1, 2}, 2, &w, -1);
}

static void conv3d_bp_filter_kernel(rill__kctx *ctx)
{
    rill__window3d w;
    if (!rill__check_window3d_op(ctx, RILL__W3_BP_FILTER, &w)) return;
    int64_t d[5] = {w.k[0], w.k[1], w.k[2], w.c, w.f};
    launch(ctx, "c3_bp_filter", d, (int[]){0, 2}, 2, &w, -1);
}

static void pool3d_kernel(rill__kctx *ctx, int is_max)
{
    rill__window3d w;
    if (!rill__check_window3d_op(ctx, RILL__W3_POOL, &w)) return;
    int64_t d[5] = {w.n, w.out[0], w.out[1], w.out[2], w.c};
    launch(ctx, "c3_pool", d, (int[]){0}, 1, &w, is_max);
}

static void max_pool3d_kernel(rill__kctx *ctx)
{
    pool3d_kernel(ctx, 1);
}

static void avg_pool3d_kernel(rill__kctx *ctx)
{
    pool3d_kernel(ctx, 0);
}

static void max_pool3d_grad_kernel(rill__kctx *ctx)
{
    rill__window3d w;
    if (!rill__check_window3d_op(ctx, RILL__W3_MAX_GRAD, &w)) return;
    int64_t d[5] = {w.n, w.in[0], w.in[1], w.in[2], w.c};
    launch(ctx, "c3_pool_grad", d, (int[]){0, 1, 2}, 3, &w, 1);
}

/* AvgPool3DGrad(orig_input_shape, grad): grad stands in for the unused x and orig_output. */
static void avg_pool3d_grad_kernel(rill__kctx *ctx)
{
    rill__window3d w;
    if (!rill__check_window3d_op(ctx, RILL__W3_AVG_GRAD, &w)) return;
    int64_t d[5] = {w.n, w.in[0], w.in[1], w.in[2], w.c};
    launch(ctx, "c3_pool_grad", d, (int[]){1, -1, -1}, 3, &w, 0);
}

/* Float and double; HOST_IN: the int32 size input, kept in host memory. */
#define C3_K(OP, FN, T, HOST_IN)                                                                   \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = T, .fn = FN, .host_memory_inputs = HOST_IN     \
    }
#define C3_KERNEL_H(OP, FN, HOST_IN)                                                               \
    C3_K(OP, FN, RILL_FLOAT, HOST_IN), C3_K(OP, FN, RILL_DOUBLE, HOST_IN)

const rill__kernel_def rill__opencl_kernels_conv3d[] = {
    C3_KERNEL_H("Conv3D", conv3d_kernel, 0),
    C3_KERNEL_H("Conv3DBackpropInputV2", conv3d_bp_input_kernel, 1u << 0),
    C3_KERNEL_H("Conv3DBackpropFilterV2", conv3d_bp_filter_kernel, 1u << 1),
    C3_KERNEL_H("MaxPool3D", max_pool3d_kernel, 0),
    C3_KERNEL_H("AvgPool3D", avg_pool3d_kernel, 0),
    C3_KERNEL_H("MaxPool3DGrad", max_pool3d_grad_kernel, 0),
    C3_KERNEL_H("AvgPool3DGrad", avg_pool3d_grad_kernel, 1u << 0),
    {0},
};
