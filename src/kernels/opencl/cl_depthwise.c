/* cl_depthwise.c - OpenCL kernels of DepthwiseConv2dNative and its backprops
 * (src/graph/ops_depthwise.c), the twins of src/kernels/cpu/cpu_depthwise.c. Every kernel
 * gathers: one work item per output element (forward), per input element (BackpropInput: the
 * output positions whose window covers it) and per filter element (BackpropFilter: a sum over
 * the batch and the output positions), so nothing is scattered or atomically added. The size
 * inputs (input_sizes, filter_sizes) live in host memory. */
#include "cl_kernels.h"

#include <string.h>

const char rill__cl_source_depthwise[] =
    "#ifdef IS_DOUBLE\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    /* g: n ih iw c kh kw m oh ow sh sw dh dw pt pl */
    "#define DW_G long n, long ih, long iw, long c, long kh, long kw, long m, long oh, long ow,"
    " long sh, long sw, long dh, long dw, long pt, long pl\n"
    "__kernel void dw_fwd(__global T *y, __global const T *x, __global const T *f, DW_G)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    long oc = c * m;\n"
    "    if (i >= n * oh * ow * oc) return;\n"
    "    long ch = i % oc, ox = i / oc % ow, oy = i / oc / ow % oh, b = i / oc / ow / oh;\n"
    "    long cc = ch / m, mm = ch % m;\n"
    "    ACC s = (ACC)0;\n"
    "    for (long ky = 0; ky < kh; ky++) {\n"
    "        long iy = oy * sh - pt + ky * dh;\n"
    "        if (iy < 0 || iy >= ih) continue;\n"
    "        for (long kx = 0; kx < kw; kx++) {\n"
    "            long ix = ox * sw - pl + kx * dw;\n"
    "            if (ix < 0 || ix >= iw) continue;\n"
    "            s += LD(x, ((b * ih + iy) * iw + ix) * c + cc) *\n"
    "                 LD(f, ((ky * kw + kx) * c + cc) * m + mm);\n"
    "        }\n"
    "    }\n"
    "    ST(y, i, s);\n"
    "}\n"
    "__kernel void dw_bp_input(__global T *dx, __global const T *f, __global const T *dy, DW_G)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n * ih * iw * c) return;\n"
    "    long cc = i % c, ix = i / c % iw, iy = i / c / iw % ih, b = i / c / iw / ih;\n"
    "    ACC s = (ACC)0;\n"
    "    for (long ky = 0; ky < kh; ky++) {\n"
    "        long ty = iy + pt - ky * dh;\n"
    "        if (ty < 0 || ty % sh) continue;\n"
    "        long oy = ty / sh;\n"
    "        if (oy >= oh) continue;\n"
    "        for (long kx = 0; kx < kw; kx++) {\n"
    "            long tx = ix + pl - kx * dw;\n"
    "            if (tx < 0 || tx % sw) continue;\n"
    "            long ox = tx / sw;\n"
    "            if (ox >= ow) continue;\n"
    "            for (long mm = 0; mm < m; mm++)\n"
    "                s += LD(dy, ((b * oh + oy) * ow + ox) * c * m + cc * m + mm) *\n"
    "                     LD(f, ((ky * kw + kx) * c + cc) * m + mm);\n"
    "        }\n"
    "    }\n"
    "    ST(dx, i, s);\n"
    "}\n"
    "__kernel void dw_bp_filter(__global T *df, __global const T *x, __global const T *dy, DW_G)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= kh * kw * c * m) return;\n"
    "    long mm = i % m, cc = i / m % c, kx = i / m / c % kw, ky = i / m / c / kw;\n"
    "    ACC s = (ACC)0;\n"
    "    for (long b = 0; b < n; b++)\n"
    "        for (long oy = 0; oy < oh; oy++) {\n"
    "            long iy = oy * sh - pt + ky * dh;\n"
    "            if (iy < 0 || iy >= ih) continue;\n"
    "            for (long ox = 0; ox < ow; ox++) {\n"
    "                long ix = ox * sw - pl + kx * dw;\n"
    "                if (ix < 0 || ix >= iw) continue;\n"
    "                s += LD(x, ((b * ih + iy) * iw + ix) * c + cc) *\n"
    "                     LD(dy, ((b * oh + oy) * ow + ox) * c * m + cc * m + mm);\n"
    "            }\n"
    "        }\n"
    "    ST(df, i, s);\n"
    "}\n";

static bool dims4(rill__kctx *ctx, int i, const char *what, int64_t *d)
{
    const rill_tensor *t = ctx->inputs[i];
    if (t->shape.rank != 4) {
        char b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: %s must be 4-dimensional: %s",
                        ctx->node->op->name, what, rill_shape_str(&t->shape, b, sizeof b));
        return false;
    }
    if (t->buf->dev != ctx->device) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "%s: %s is not in the memory of %s",
                        ctx->node->op->name, what, ctx->device->name);
        return false;
    }
    memcpy(d, t->shape.dims, 4 * sizeof *d);
    return true;
}

static bool size4(rill__kctx *ctx, int i, const char *what, int64_t *d)
{
    const rill_tensor *t = ctx->inputs[i];
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

/* The CPU's geometry checks (cpu_depthwise.c), then the 15 geometry arguments into g. */
static bool geometry(rill__kctx *ctx, const int64_t *x, const int64_t *f, const rill_tensor *dy,
                     cl_long *g)
{
    const char *op = ctx->node->op->name;
    if (f[2] != x[3]) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s: input and filter must have the same depth: %lld vs %lld", op,
                        (long long)x[3], (long long)f[2]);
        return false;
    }
    rill__window w;
    char err[256];
    if (!rill__window_init(ctx->node, x, f[0], f[1], &w, err, sizeof err)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: %s", op, err);
        return false;
    }
    if (dy) {
        int64_t want[4] = {x[0], w.oh, w.ow, x[3] * f[3]};
        rill_shape ws = rill_shape_make(4, want);
        if (!rill_shape_equal(&dy->shape, &ws)) {
            char a[96], b[96];
            rill__kctx_fail(
                ctx, RILL_INVALID_ARGUMENT, "%s: out_backprop has shape %s, expected %s", op,
                rill_shape_str(&dy->shape, a, sizeof a), rill_shape_str(&ws, b, sizeof b));
            return false;
        }
    }
    cl_long v[15] = {w.n,  w.ih, w.iw, w.c,  w.kh, w.kw, f[3], w.oh,
                     w.ow, w.sh, w.sw, w.dh, w.dw, w.pt, w.pl};
    memcpy(g, v, sizeof v);
    return true;
}

static void launch(rill__kctx *ctx, const char *name, rill_dtype t, cl_mem a, cl_mem b, cl_mem c,
                   cl_long *g, int64_t n)
{
    rill__cl_arg args[18] = {RILL__CL_ARG(a), RILL__CL_ARG(b), RILL__CL_ARG(c)};
    for (int i = 0; i < 15; i++) args[3 + i] = RILL__CL_ARG(g[i]);
    rill__cl_launch(ctx, name, t, args, 18, n);
}

static void depthwise_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *f = ctx->inputs[1];
    int64_t xd[4], fd[4];
    cl_long g[15];
    if (!dims4(ctx, 0, "input", xd) || !dims4(ctx, 1, "filter", fd) ||
        !geometry(ctx, xd, fd, NULL, g))
        return;
    int64_t od[4] = {xd[0], g[7], g[8], xd[3] * fd[3]};
    rill_shape os = rill_shape_make(4, od);
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!y || y->numel == 0) return;
    launch(ctx, "dw_fwd", x->dtype, rill__cl_mem(y), rill__cl_mem(x), rill__cl_mem(f), g, y->numel);
}

static void bp_input_kernel(rill__kctx *ctx)
{
    const rill_tensor *f = ctx->inputs[1], *dy = ctx->inputs[2];
    int64_t xd[4], fd[4], dd[4];
    cl_long g[15];
    if (!size4(ctx, 0, "input_sizes", xd) || !dims4(ctx, 1, "filter", fd) ||
        !dims4(ctx, 2, "out_backprop", dd) || !geometry(ctx, xd, fd, dy, g))
        return;
    rill_shape os = rill_shape_make(4, xd);
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, f->dtype, &os);
    if (!dx || dx->numel == 0) return;
    launch(ctx, "dw_bp_input", f->dtype, rill__cl_mem(dx), rill__cl_mem(f), rill__cl_mem(dy), g,
           dx->numel);
}

static void bp_filter_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *dy = ctx->inputs[2];
    int64_t xd[4], fd[4], dd[4];
    cl_long g[15];
    if (!dims4(ctx, 0, "input", xd) || !size4(ctx, 1, "filter_sizes", fd) ||
        !dims4(ctx, 2, "out_backprop", dd) || !geometry(ctx, xd, fd, dy, g))
        return;
    rill_shape os = rill_shape_make(4, fd);
    rill_tensor *df = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!df || df->numel == 0) return;
    launch(ctx, "dw_bp_filter", x->dtype, rill__cl_mem(df), rill__cl_mem(x), rill__cl_mem(dy), g,
           df->numel);
}

#define DK(OP, FN, HOST)                                                                           \
    {.op = OP,                                                                                     \
     .device_type = "OPENCL",                                                                      \
     .dtype = RILL_FLOAT,                                                                          \
     .fn = FN,                                                                                     \
     .host_memory_inputs = HOST},                                                                  \
        {.op = OP,                                                                                 \
         .device_type = "OPENCL",                                                                  \
         .dtype = RILL_DOUBLE,                                                                     \
         .fn = FN,                                                                                 \
         .host_memory_inputs = HOST},                                                              \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = RILL_HALF, .fn = FN,                           \
        .host_memory_inputs = HOST                                                                 \
    }

const rill__kernel_def rill__opencl_kernels_depthwise[] = {
    DK("DepthwiseConv2dNative", depthwise_kernel, 0),
    DK("DepthwiseConv2dNativeBackpropInput", bp_input_kernel, 1u),
    DK("DepthwiseConv2dNativeBackpropFilter", bp_filter_kernel, 2u),
    {0},
};
