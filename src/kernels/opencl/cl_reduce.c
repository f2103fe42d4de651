/* cl_reduce.c - OpenCL kernels of Max, Min, Prod, ArgMin, Cumsum and Cumprod
 * (src/graph/ops_reduce.c; CPU twins in src/kernels/cpu/cpu_reduce.c) for float, double and
 * half, written for correctness rather than speed.
 *
 *   Max, Min, Prod  one work item per output element over cl_common.c's reduce_t (the kept dims
 *                   and the reduced dims with their input strides); Max and Min propagate NaN,
 *                   empty reductions give the identity (-inf, +inf, 1), as on the CPU.
 *   ArgMin          one work item per output element scanning its axis: the first minimum
 *                   wins, the first NaN over any number. An int64 result lives in device
 *                   memory; an int32 one (output_type) cannot, so it is computed into a
 *                   temporary buffer and read back into a host-memory output.
 *   Cumsum/Cumprod  one work item per (outer, inner) row, scanning it in order (exclusive and
 *                   reverse as the attrs say).
 * The other dtypes (int32, ...) and Any / All / ProdGrad keep cpu_reduce.c's host-memory
 * entries (dtype any), which these exact-dtype entries override. */
#include "../array_plan.h"
#include "cl_kernels.h"

#include <assert.h>
#include <string.h>

const char rill__cl_source_reduce[] =
    "#ifdef IS_DOUBLE\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    /* op 0 Max, 1 Min, 2 Prod */
    "__kernel void rd_reduce(__global const T *x, __global T *o, reduce_t r, long count, int op,\n"
    "                        long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long base = reduce_base(&r, i);\n"
    "    ACC a = op == 0 ? (ACC)-INFINITY : op == 1 ? (ACC)INFINITY : (ACC)1;\n"
    "    for (long j = 0; j < count; j++) {\n"
    "        ACC v = LD(x, base + reduce_offset(&r, j));\n"
    "        if (op == 0) {\n"
    "            if (v > a || isnan(v)) a = isnan(a) ? a : v;\n"
    "        } else if (op == 1) {\n"
    "            if (v < a || isnan(v)) a = isnan(a) ? a : v;\n"
    "        } else {\n"
    "            a *= v;\n"
    "        }\n"
    "    }\n"
    "    ST(o, i, a);\n"
    "}\n"
    "long rd_argmin_at(__global const T *x, long len, long inner, long i) {\n"
    "    long a = i / inner, k = i - a * inner;\n"
    "    __global const T *p = x + a * len * inner + k;\n"
    "    ACC bv = LD(p, 0);\n"
    "    long best = 0;\n"
    "    for (long j = 1; j < len; j++) {\n"
    "        ACC v = LD(p, j * inner);\n"
    "        if (v < bv || (isnan(v) && !isnan(bv))) {\n"
    "            bv = v;\n"
    "            best = j;\n"
    "        }\n"
    "    }\n"
    "    return best;\n"
    "}\n"
    "__kernel void rd_argmin(__global const T *x, __global long *o, long len, long inner,\n"
    "                        long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) o[i] = rd_argmin_at(x, len, inner, i);\n"
    "}\n"
    "__kernel void rd_argmin_int(__global const T *x, __global int *o, long len, long inner,\n"
    "                            long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) o[i] = (int)rd_argmin_at(x, len, inner, i);\n"
    "}\n"
    "__kernel void rd_scan(__global const T *x, __global T *y, long len, long inner, int prod,\n"
    "                      int excl, int rev, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long a = i / inner, k = i - a * inner;\n"
    "    ACC acc = prod ? (ACC)1 : (ACC)0;\n"
    "    for (long t = 0; t < len; t++) {\n"
    "        long j = rev ? len - 1 - t : t, off = (a * len + j) * inner + k;\n"
    "        ACC v = LD(x, off);\n"
    "        if (!excl) acc = prod ? acc * v : acc + v;\n"
    "        ST(y, off, acc);\n"
    "        if (excl) acc = prod ? acc * v : acc + v;\n"
    "    }\n"
    "}\n";

static bool on_device(rill__kctx *ctx, int i)
{
    const rill_tensor *t = ctx->inputs[i];
    if (t->buf->dev == ctx->device) return true;
    rill__kctx_fail(ctx, RILL_INTERNAL, "%s: input %d is not in the memory of %s",
                    ctx->node->op->name, i, ctx->device->name);
    return false;
}

static bool dtype_ok(rill__kctx *ctx, rill_dtype t)
{
    if (t != RILL_DOUBLE || ctx->device->fp64) return true;
    rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "%s: %s has no double precision support",
                    ctx->node->op->name, ctx->device->name);
    return false;
}

/* Host mirror of cl_common.c's reduce_t. */
typedef struct rd_reduce_t {
    cl_int nkeep, nred;
    cl_long keep_dims[RILL_MAX_DIMS], keep_strides[RILL_MAX_DIMS];
    cl_long red_dims[RILL_MAX_DIMS], red_strides[RILL_MAX_DIMS];
} rd_reduce_t;
static_assert(sizeof(rd_reduce_t) == 8 + 4 * 8 * RILL_MAX_DIMS, "rd_reduce_t layout");

static void reduce_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    bool mask[RILL_MAX_DIMS];
    if (!rill__check_axes(ctx, x->shape.rank, mask)) return;
    if (!dtype_ok(ctx, x->dtype) || !on_device(ctx, 0)) return;
    bool keep = rill__attr_bool(ctx->node, "keep_dims", false);
    rill_shape os = {.rank = 0};
    rd_reduce_t r = {0};
    int64_t st = 1, count = 1, strides[RILL_MAX_DIMS];
    for (int d = x->shape.rank - 1; d >= 0; d--) {
        strides[d] = st;
        st *= x->shape.dims[d];
    }
    for (int d = 0; d < x->shape.rank; d++) {
        if (!mask[d]) {
            os.dims[os.rank++] = x->shape.dims[d];
            r.keep_dims[r.nkeep] = x->shape.dims[d];
            r.keep_strides[r.nkeep++] = strides[d];
        } else {
            if (keep) os.dims[os.rank++] = 1;
            r.red_dims[r.nred] = x->shape.dims[d];
            r.red_strides[r.nred++] = strides[d];
            count *= x->shape.dims[d];
        }
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!out || out->numel == 0) return;
    const char *name = ctx->node->op->name;
    cl_int op = strcmp(name, "Max") == 0 ? 0 : strcmp(name, "Min") == 0 ? 1 : 2;
    cl_mem xm = rill__cl_mem(x), om = rill__cl_mem(out);
    cl_long cn = count, n = out->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(xm), RILL__CL_ARG(om), RILL__CL_ARG(r),
                           RILL__CL_ARG(cn), RILL__CL_ARG(op), RILL__CL_ARG(n)};
    rill__cl_launch(ctx, "rd_reduce", x->dtype, args, 6, n);
}

static void argmin_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    rill_shape os;
    int64_t len, inner;
    if (!rill__check_argmax(ctx, x, &os, &len, &inner)) return;
    if (!dtype_ok(ctx, x->dtype) || !on_device(ctx, 0)) return;
    rill_dtype ot = rill__attr_type(ctx->node, "output_type", RILL_INT64);
    bool host = ot != RILL_INT64;
    if (host) {
        ot = RILL_INT32;
        ctx->host_memory_outputs |= 1u; /* int32 never lives in device memory */
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, ot, &os);
    if (!out || out->numel == 0) return;
    cl_mem xm = rill__cl_mem(x), om;
    cl_int err = CL_SUCCESS;
    if (host) {
        om = clCreateBuffer(rill__cl(ctx->device)->ctx, CL_MEM_READ_WRITE, out->buf->size, NULL,
                            &err);
    } else {
        om = rill__cl_mem(out);
    }
    if (err != CL_SUCCESS) {
        rill_status *s = rill_status_new();
        rill__cl_check(err, "allocate ArgMin's result", s);
        rill__kctx_fail_with(ctx, s);
        return;
    }
    cl_long l = len, in = inner, n = out->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(xm), RILL__CL_ARG(om), RILL__CL_ARG(l), RILL__CL_ARG(in),
                           RILL__CL_ARG(n)};
    bool ok = rill__cl_launch(ctx, host ? "rd_argmin_int" : "rd_argmin", x->dtype, args, 5, n);
    if (host) {
        if (ok) {
            err = clEnqueueReadBuffer(rill__cl(ctx->device)->queue, om, CL_TRUE, 0, out->buf->size,
                                      out->buf->data, 0, NULL, NULL);
            if (err != CL_SUCCESS) {
                rill_status *s = rill_status_new();
                rill__cl_check(err, "read ArgMin's result", s);
                rill__kctx_fail_with(ctx, s);
            }
        }
        clReleaseMemObject(om);
    }
}

static void scan_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    int64_t outer, len, inner;
    if (!rill__check_scan(ctx, x, &outer, &len, &inner)) return;
    if (!dtype_ok(ctx, x->dtype) || !on_device(ctx, 0)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y || x->numel == 0) return;
    cl_int prod = strcmp(ctx->node->op->name, "Cumprod") == 0;
    cl_int excl = rill__attr_bool(ctx->node, "exclusive", false);
    cl_int rev = rill__attr_bool(ctx->node, "reverse", false);
    cl_mem xm = rill__cl_mem(x), ym = rill__cl_mem(y);
    cl_long l = len, in = inner, n = outer * inner;
    rill__cl_arg args[] = {RILL__CL_ARG(xm),  RILL__CL_ARG(ym),   RILL__CL_ARG(l),
                           RILL__CL_ARG(in),  RILL__CL_ARG(prod), RILL__CL_ARG(excl),
                           RILL__CL_ARG(rev), RILL__CL_ARG(n)};
    rill__cl_launch(ctx, "rd_scan", x->dtype, args, 8, n);
}

#define RD_K(OP, FN, T)                                                                            \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = T, .fn = FN                                    \
    }
#define RD_KERNEL(OP, FN)                                                                          \
    RD_K(OP, FN, RILL_FLOAT), RD_K(OP, FN, RILL_DOUBLE), RD_K(OP, FN, RILL_HALF)

const rill__kernel_def rill__opencl_kernels_reduce[] = {
    RD_KERNEL("Max", reduce_kernel),
    RD_KERNEL("Min", reduce_kernel),
    RD_KERNEL("Prod", reduce_kernel),
    RD_KERNEL("ArgMin", argmin_kernel),
    RD_KERNEL("Cumsum", scan_kernel),
    RD_KERNEL("Cumprod", scan_kernel),
    {0},
};
