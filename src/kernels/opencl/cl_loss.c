/* cl_loss.c - OpenCL kernels of L2Loss, LogSoftmax and SigmoidCrossEntropyWithLogits
 * (src/graph/ops_loss.c), the twins of src/kernels/cpu/cpu_loss.c: LogSoftmax one work item per
 * row (max, sum of exponentials, write), the cross-entropy one per element, L2Loss one work item
 * summing in order (a scalar loss per step: its cost is the read, not the parallelism). */
#include "cl_kernels.h"

const char rill__cl_source_loss[] =
    "#ifdef IS_DOUBLE\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    "__kernel void ls_l2_loss(__global T *y, __global const T *x, long n)\n"
    "{\n"
    "    if (get_global_id(0) != 0) return;\n"
    "    ACC s = (ACC)0;\n"
    "    for (long i = 0; i < n; i++) { ACC v = LD(x, i); s += v * v; }\n"
    "    ST(y, 0, s / (ACC)2);\n"
    "}\n"
    "__kernel void ls_log_softmax(__global T *y, __global const T *x, long rows, long cols)\n"
    "{\n"
    "    long r = get_global_id(0);\n"
    "    if (r >= rows) return;\n"
    "    __global const T *xr = x + r * cols;\n"
    "    __global T *yr = y + r * cols;\n"
    "    ACC m = LD(xr, 0), s = (ACC)0;\n"
    "    for (long k = 1; k < cols; k++) m = fmax(m, LD(xr, k));\n"
    "    for (long k = 0; k < cols; k++) s += exp(LD(xr, k) - m);\n"
    "    ACC ls = log(s);\n"
    "    for (long k = 0; k < cols; k++) ST(yr, k, LD(xr, k) - m - ls);\n"
    "}\n"
    "__kernel void ls_sigmoid_ce(__global T *y, __global const T *x, __global const T *z, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC a = LD(x, i), b = LD(z, i);\n"
    "    ST(y, i, fmax(a, (ACC)0) - a * b + log1p(exp(-fabs(a))));\n"
    "}\n";

static bool on_device(rill__kctx *ctx, int i)
{
    if (ctx->inputs[i]->buf->dev == ctx->device) return true;
    rill__kctx_fail(ctx, RILL_INTERNAL, "%s: input %d is not in the memory of %s",
                    ctx->node->op->name, i, ctx->device->name);
    return false;
}

static void l2_loss_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    rill_shape sc = rill_shape_scalar();
    if (!on_device(ctx, 0)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &sc);
    if (!y) return;
    cl_mem ym = rill__cl_mem(y), xm = rill__cl_mem(x);
    cl_long n = x->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(ym), RILL__CL_ARG(xm), RILL__CL_ARG(n)};
    rill__cl_launch(ctx, "ls_l2_loss", x->dtype, args, 3, 1);
}

static void log_softmax_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    if (!on_device(ctx, 0)) return;
    if (x->shape.rank < 1) {
        char sx[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "logits must have >= 1 dimension, got %s",
                        rill_shape_str(&x->shape, sx, sizeof sx));
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y) return;
    cl_mem ym = rill__cl_mem(y), xm = rill__cl_mem(x);
    cl_long cols = x->shape.dims[x->shape.rank - 1], rows = cols > 0 ? x->numel / cols : 0;
    rill__cl_arg args[] = {RILL__CL_ARG(ym), RILL__CL_ARG(xm), RILL__CL_ARG(rows),
                           RILL__CL_ARG(cols)};
    rill__cl_launch(ctx, "ls_log_softmax", x->dtype, args, 4, rows);
}

static void sigmoid_ce_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *z = ctx->inputs[1];
    if (!on_device(ctx, 0) || !on_device(ctx, 1)) return;
    if (!rill_shape_equal(&x->shape, &z->shape) || x->dtype != z->dtype) {
        char sa[96], sb[96];
        rill__kctx_fail(
            ctx, RILL_INVALID_ARGUMENT, "logits and labels must have the same shape (%s vs %s)",
            rill_shape_str(&x->shape, sa, sizeof sa), rill_shape_str(&z->shape, sb, sizeof sb));
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y) return;
    cl_mem ym = rill__cl_mem(y), xm = rill__cl_mem(x), zm = rill__cl_mem(z);
    cl_long n = x->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(ym), RILL__CL_ARG(xm), RILL__CL_ARG(zm), RILL__CL_ARG(n)};
    rill__cl_launch(ctx, "ls_sigmoid_ce", x->dtype, args, 4, n);
}

#define LK(OP, FN)                                                                                 \
    {.op = OP, .device_type = "OPENCL", .dtype = RILL_FLOAT, .fn = FN},                            \
        {.op = OP, .device_type = "OPENCL", .dtype = RILL_DOUBLE, .fn = FN},                       \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = RILL_HALF, .fn = FN                            \
    }

const rill__kernel_def rill__opencl_kernels_loss[] = {
    LK("L2Loss", l2_loss_kernel),
    LK("LogSoftmax", log_softmax_kernel),
    LK("SigmoidCrossEntropyWithLogits", sigmoid_ce_kernel),
    {0},
};
