/* cl_norm.c - OpenCL kernels of LRN, LRNGrad, FusedBatchNormV3 and FusedBatchNormGradV3
 * (src/graph/ops_norm.c), the twins of src/kernels/cpu/cpu_norm.c: the same checks and texts,
 * then one enqueue. LRN and LRNGrad take one work item per element (the window's sum of squares
 * recomputed per element: the windows are short); the batch norms one work item per channel,
 * reducing over N, H and W in two passes as the CPU does. The statistics (scale, offset, mean,
 * variance and the outputs but y) are float for float and half, double for double (BN_U). */
#include "cl_kernels.h"

const char rill__cl_source_norm[] =
    "#ifdef IS_DOUBLE\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#define BN_U double\n"
    "#else\n"
    "#define BN_U float\n"
    "#endif\n"
    "ACC nm_norm(__global const T *x, long base, long k, long c, long r, ACC bias, ACC alpha)\n"
    "{\n"
    "    long lo = k - r < 0 ? 0 : k - r, hi = k + r + 1 > c ? c : k + r + 1;\n"
    "    ACC s = (ACC)0;\n"
    "    for (long q = lo; q < hi; q++) { ACC v = LD(x, base + q); s += v * v; }\n"
    "    return bias + alpha * s;\n"
    "}\n"
    "__kernel void nm_lrn(__global T *y, __global const T *x, long n, long c, long r, ACC bias,\n"
    "                     ACC alpha, ACC beta)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long base = i - i % c;\n"
    "    ST(y, i, LD(x, i) * pow(nm_norm(x, base, i % c, c, r, bias, alpha), -beta));\n"
    "}\n"
    "__kernel void nm_lrn_grad(__global T *out, __global const T *dy, __global const T *x,\n"
    "                          __global const T *y, long n, long c, long r, ACC bias, ACC alpha,\n"
    "                          ACC beta)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long k = i % c, base = i - k;\n"
    "    long lo = k - r < 0 ? 0 : k - r, hi = k + r + 1 > c ? c : k + r + 1;\n"
    "    ACC acc = (ACC)0, xk = LD(x, i);\n"
    "    for (long m = lo; m < hi; m++) {\n"
    "        ACC norm = nm_norm(x, base, m, c, r, bias, alpha);\n"
    "        ACC d = (ACC)-2 * alpha * beta * xk * LD(y, base + m) / norm;\n"
    "        if (m == k) d += pow(norm, -beta);\n"
    "        acc += d * LD(dy, base + m);\n"
    "    }\n"
    "    ST(out, i, acc);\n"
    "}\n"
    /* training: 1, f: exponential_avg_factor */
    "__kernel void nm_bn(__global T *y, __global BN_U *bm, __global BN_U *bv, __global BN_U *r1,\n"
    "                    __global BN_U *r2, __global const T *x, __global const BN_U *scale,\n"
    "                    __global const BN_U *offset, __global const BN_U *mean,\n"
    "                    __global const BN_U *var, long rows, long c, int training, ACC eps,\n"
    "                    ACC f)\n"
    "{\n"
    "    long k = get_global_id(0);\n"
    "    if (k >= c) return;\n"
    "    ACC m, v;\n"
    "    if (training) {\n"
    "        m = (ACC)0; v = (ACC)0;\n"
    "        for (long r = 0; r < rows; r++) m += LD(x, r * c + k);\n"
    "        m = rows > 0 ? m / (ACC)rows : (ACC)0;\n"
    "        for (long r = 0; r < rows; r++) { ACC d = LD(x, r * c + k) - m; v += d * d; }\n"
    "        v = rows > 0 ? v / (ACC)rows : (ACC)0;\n"
    "        ACC corr = rows > 1 ? v * (ACC)rows / (ACC)(rows - 1) : v;\n"
    "        if (f == (ACC)1) { bm[k] = m; bv[k] = corr; }\n"
    "        else { bm[k] = ((ACC)1 - f) * mean[k] + f * m;\n"
    "               bv[k] = ((ACC)1 - f) * var[k] + f * corr; }\n"
    "    } else {\n"
    "        m = mean[k]; v = var[k]; bm[k] = m; bv[k] = v;\n"
    "    }\n"
    "    r1[k] = m; r2[k] = v;\n"
    "    ACC a = (ACC)1 / sqrt(v + eps) * (ACC)scale[k], b = offset[k];\n"
    "    for (long r = 0; r < rows; r++) ST(y, r * c + k, (LD(x, r * c + k) - m) * a + b);\n"
    "}\n"
    "__kernel void nm_bn_grad(__global T *dx, __global BN_U *ds, __global BN_U *db,\n"
    "                         __global const T *dy, __global const T *x,\n"
    "                         __global const BN_U *scale, __global const BN_U *mean,\n"
    "                         __global const BN_U *var, long rows, long c, int training, ACC eps)\n"
    "{\n"
    "    long k = get_global_id(0);\n"
    "    if (k >= c) return;\n"
    "    ACC m = mean[k], inv = (ACC)1 / sqrt((ACC)var[k] + eps), sc = scale[k];\n"
    "    ACC sdy = (ACC)0, sdyx = (ACC)0;\n"
    "    for (long r = 0; r < rows; r++) {\n"
    "        ACC g = LD(dy, r * c + k);\n"
    "        sdy += g;\n"
    "        sdyx += g * (LD(x, r * c + k) - m) * inv;\n"
    "    }\n"
    "    db[k] = sdy; ds[k] = sdyx;\n"
    "    ACC mdy = rows > 0 ? sdy / (ACC)rows : (ACC)0, mdyx = rows > 0 ? sdyx / (ACC)rows : "
    "(ACC)0;\n"
    "    for (long r = 0; r < rows; r++) {\n"
    "        ACC g = LD(dy, r * c + k), xs = (LD(x, r * c + k) - m) * inv;\n"
    "        ST(dx, r * c + k, training ? sc * inv * (g - mdy - xs * mdyx) : g * sc * inv);\n"
    "    }\n"
    "}\n";

typedef struct nm_acc {
    union {
        cl_float f;
        cl_double d;
    } v;
    size_t size;
} nm_acc;

static nm_acc acc_of(rill_dtype t, double x)
{
    nm_acc a;
    if (t == RILL_DOUBLE) {
        a.v.d = x;
        a.size = sizeof(cl_double);
    } else {
        a.v.f = (cl_float)x;
        a.size = sizeof(cl_float);
    }
    return a;
}
#define NM_ACC(a) ((rill__cl_arg){(a).size, &(a).v})

static bool on_device(rill__kctx *ctx, int i)
{
    if (ctx->inputs[i]->buf->dev == ctx->device) return true;
    rill__kctx_fail(ctx, RILL_INTERNAL, "%s: input %d is not in the memory of %s",
                    ctx->node->op->name, i, ctx->device->name);
    return false;
}

static bool check_4d(rill__kctx *ctx, int i, const char *what)
{
    const rill_tensor *t = ctx->inputs[i];
    if (t->shape.rank == 4) return on_device(ctx, i);
    char b[96];
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s must be 4-dimensional%s", what,
                    rill_shape_str(&t->shape, b, sizeof b));
    return false;
}

static bool lrn_attrs(rill__kctx *ctx, int64_t c, cl_long *r, nm_acc *a, rill_dtype t)
{
    const rill_node *n = ctx->node;
    *r = rill__attr_int(n, "depth_radius", 5);
    a[0] = acc_of(t, rill__attr_float(n, "bias", 1));
    a[1] = acc_of(t, rill__attr_float(n, "alpha", 1));
    a[2] = acc_of(t, rill__attr_float(n, "beta", 0.5));
    if (c <= 1024) return true;
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "rill's LRN takes at most 1024 channels, got %lld",
                    (long long)c);
    return false;
}

static void lrn_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    cl_long r;
    nm_acc a[3];
    if (!check_4d(ctx, 0, "input") || !lrn_attrs(ctx, x->shape.dims[3], &r, a, x->dtype)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y || x->numel == 0) return;
    cl_mem ym = rill__cl_mem(y), xm = rill__cl_mem(x);
    cl_long n = x->numel, c = x->shape.dims[3];
    rill__cl_arg args[] = {RILL__CL_ARG(ym), RILL__CL_ARG(xm), RILL__CL_ARG(n), RILL__CL_ARG(c),
                           RILL__CL_ARG(r),  NM_ACC(a[0]),     NM_ACC(a[1]),    NM_ACC(a[2])};
    rill__cl_launch(ctx, "nm_lrn", x->dtype, args, 8, n);
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
    cl_long r;
    nm_acc a[3];
    if (!lrn_attrs(ctx, x->shape.dims[3], &r, a, x->dtype)) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!out || x->numel == 0) return;
    cl_mem om = rill__cl_mem(out), dm = rill__cl_mem(dy), xm = rill__cl_mem(x),
           ymm = rill__cl_mem(y);
    cl_long n = x->numel, c = x->shape.dims[3];
    rill__cl_arg args[] = {RILL__CL_ARG(om), RILL__CL_ARG(dm), RILL__CL_ARG(xm), RILL__CL_ARG(ymm),
                           RILL__CL_ARG(n),  RILL__CL_ARG(c),  RILL__CL_ARG(r),  NM_ACC(a[0]),
                           NM_ACC(a[1]),     NM_ACC(a[2])};
    rill__cl_launch(ctx, "nm_lrn_grad", x->dtype, args, 10, n);
}

static bool check_vec(rill__kctx *ctx, int i, const char *what, int64_t c, bool may_be_empty)
{
    const rill_tensor *t = ctx->inputs[i];
    if (t->shape.rank == 1 && (t->shape.dims[0] == c || (may_be_empty && t->numel == 0)))
        return t->numel == 0 || on_device(ctx, i);
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

/* A buffer for an empty input (OpenCL has no zero-sized buffers): any other argument of the
 * right kind; the kernel does not read it. */
static cl_mem mem_or(const rill_tensor *t, cl_mem other)
{
    return t->numel ? rill__cl_mem(t) : other;
}

static void fused_bn_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    const rill_tensor *x = ctx->inputs[0], *scale = ctx->inputs[1], *offset = ctx->inputs[2];
    const rill_tensor *mean = ctx->inputs[3], *var = ctx->inputs[4];
    if (!check_4d(ctx, 0, "input")) return;
    cl_int training = rill__attr_bool(n, "is_training", true);
    double f = rill__attr_float(n, "exponential_avg_factor", 1.0);
    cl_long c = x->shape.dims[3], rows = c > 0 ? x->numel / c : 0;
    bool empty_ok = training && f == 1.0;
    if (!check_vec(ctx, 1, "scale", c, false) || !check_vec(ctx, 2, "offset", c, false) ||
        !check_vec(ctx, 3, "mean", c, empty_ok) || !check_vec(ctx, 4, "variance", c, empty_ok))
        return;
    rill_dtype u = scale->dtype;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    rill_tensor *bm = y ? out_vec(ctx, 1, u, c) : NULL, *bv = bm ? out_vec(ctx, 2, u, c) : NULL;
    rill_tensor *r1 = bv ? out_vec(ctx, 3, u, c) : NULL, *r2 = r1 ? out_vec(ctx, 4, u, c) : NULL;
    rill_tensor *r3 = r2 ? out_vec(ctx, 5, u, 0) : NULL;
    if (!r3 || c == 0 || x->numel == 0) return;
    cl_mem m[10] = {rill__cl_mem(y),
                    rill__cl_mem(bm),
                    rill__cl_mem(bv),
                    rill__cl_mem(r1),
                    rill__cl_mem(r2),
                    rill__cl_mem(x),
                    rill__cl_mem(scale),
                    rill__cl_mem(offset),
                    0,
                    0};
    m[8] = mem_or(mean, m[6]);
    m[9] = mem_or(var, m[6]);
    nm_acc e = acc_of(x->dtype, rill__attr_float(n, "epsilon", 1e-4)), fa = acc_of(x->dtype, f);
    rill__cl_arg args[15];
    for (int i = 0; i < 10; i++) args[i] = RILL__CL_ARG(m[i]);
    args[10] = RILL__CL_ARG(rows);
    args[11] = RILL__CL_ARG(c);
    args[12] = RILL__CL_ARG(training);
    args[13] = NM_ACC(e);
    args[14] = NM_ACC(fa);
    rill__cl_launch(ctx, "nm_bn", x->dtype, args, 15, c);
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
    cl_int training = rill__attr_bool(n, "is_training", true);
    cl_long c = x->shape.dims[3], rows = c > 0 ? x->numel / c : 0;
    if (!check_vec(ctx, 2, "scale", c, false) || !check_vec(ctx, 3, "reserve_space_1", c, false) ||
        !check_vec(ctx, 4, "reserve_space_2", c, false))
        return;
    rill_dtype u = scale->dtype;
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    rill_tensor *ds = dx ? out_vec(ctx, 1, u, c) : NULL, *db = ds ? out_vec(ctx, 2, u, c) : NULL;
    rill_tensor *r4 = db ? out_vec(ctx, 3, u, 0) : NULL, *r5 = r4 ? out_vec(ctx, 4, u, 0) : NULL;
    if (!r5 || c == 0 || x->numel == 0) return;
    cl_mem m[8] = {rill__cl_mem(dx), rill__cl_mem(ds),    rill__cl_mem(db),   rill__cl_mem(dy),
                   rill__cl_mem(x),  rill__cl_mem(scale), rill__cl_mem(mean), rill__cl_mem(var)};
    nm_acc e = acc_of(x->dtype, rill__attr_float(n, "epsilon", 1e-4));
    rill__cl_arg args[12];
    for (int i = 0; i < 8; i++) args[i] = RILL__CL_ARG(m[i]);
    args[8] = RILL__CL_ARG(rows);
    args[9] = RILL__CL_ARG(c);
    args[10] = RILL__CL_ARG(training);
    args[11] = NM_ACC(e);
    rill__cl_launch(ctx, "nm_bn_grad", x->dtype, args, 12, c);
}

#define NK(OP, FN)                                                                                 \
    {.op = OP, .device_type = "OPENCL", .dtype = RILL_FLOAT, .fn = FN},                            \
        {.op = OP, .device_type = "OPENCL", .dtype = RILL_DOUBLE, .fn = FN},                       \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = RILL_HALF, .fn = FN                            \
    }

const rill__kernel_def rill__opencl_kernels_norm[] = {
    NK("LRN", lrn_kernel),
    NK("LRNGrad", lrn_grad_kernel),
    NK("FusedBatchNormV3", fused_bn_kernel),
    NK("FusedBatchNormGradV3", fused_bn_grad_kernel),
    {0},
};
