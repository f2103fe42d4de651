/* cl_array.c - OpenCL kernels for StridedSlice and StridedSliceGrad.
 *
 * The CPU kernels' twins (src/kernels/cpu/cpu_array.c) over the same plan
 * (rill__strided_slice_plan, so the checks and texts are the same): the host turns the plan into
 * slice_t (per input dim the count and the step in elements, and the first element read) and
 * one work item per result element finds its input element. The gradient zeroes dx, then each
 * work item writes its dy element where the slice read it (distinct places: no races). Values
 * are moved, not computed: half goes through float and back, which is exact.
 *
 * float, double and half live in device memory; every other dtype keeps the CPU kernels with
 * host-memory tensors (cpu_array.c registers them for OPENCL with any dtype). */
#include "../kernel.h"
#include "cl_kernels.h"

#include <string.h>

const char rill__cl_source_array[] =
    "typedef struct { int rank; int pad; long first; long count[MAXD]; long step[MAXD]; } "
    "slice_t;\n"
    "long slice_offset(const slice_t *s, long i) {\n"
    "    long off = s->first;\n"
    "    for (int d = s->rank - 1; d >= 0; d--) {\n"
    "        long n = s->count[d], q = i / n;\n"
    "        off += (i - q * n) * s->step[d];\n"
    "        i = q;\n"
    "    }\n"
    "    return off;\n"
    "}\n"
    "__kernel void arr_strided_slice(__global T *y, __global const T *x, slice_t s, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ST(y, i, LD(x, slice_offset(&s, i)));\n"
    "}\n"
    "__kernel void arr_zero(__global T *y, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ST(y, i, (ACC)0);\n"
    "}\n"
    "__kernel void arr_strided_slice_grad(__global T *dx, __global const T *dy, slice_t s, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ST(dx, slice_offset(&s, i), LD(dy, i));\n"
    "}\n";

/* The host mirror of slice_t (cl_common.c's layout rule: ints first, then longs). */
typedef struct cl_slice {
    cl_int rank, pad;
    cl_long first;
    cl_long count[8], step[8];
} cl_slice;

/* The plan of ctx's slice for input x (and dy: the gradient's check) as slice_t; *out the
 * result's shape, *n its element count. */
static bool plan(rill__kctx *ctx, const rill_tensor *x, const rill_tensor *dy, cl_slice *sl,
                 rill_shape *out, cl_long *n)
{
    rill__slice p;
    if (!rill__check_strided_slice(ctx, x, dy, &p)) return false;
    memset(sl, 0, sizeof *sl);
    sl->rank = p.rank;
    sl->first = p.base;
    for (int d = 0; d < p.rank; d++) {
        sl->count[d] = p.count[d];
        sl->step[d] = p.step[d];
    }
    *out = p.out;
    *n = p.n;
    return true;
}

static void strided_slice_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    cl_slice sl;
    rill_shape out;
    cl_long n;
    if (!plan(ctx, x, NULL, &sl, &out, &n)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &out);
    if (!y || n == 0) return;
    cl_mem ym = rill__cl_mem(y), xm = rill__cl_mem(x);
    rill__cl_arg args[] = {RILL__CL_ARG(ym), RILL__CL_ARG(xm), RILL__CL_ARG(sl), RILL__CL_ARG(n)};
    rill__cl_launch(ctx, "arr_strided_slice", x->dtype, args, 4, n);
}

static void strided_slice_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *dy = ctx->inputs[1];
    cl_slice sl;
    rill_shape out;
    cl_long n;
    if (!plan(ctx, x, dy, &sl, &out, &n)) return;
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!dx) return;
    cl_mem dxm = rill__cl_mem(dx), dym = rill__cl_mem(dy);
    cl_long nx = dx->numel;
    rill__cl_arg zargs[] = {RILL__CL_ARG(dxm), RILL__CL_ARG(nx)};
    if (nx && !rill__cl_launch(ctx, "arr_zero", x->dtype, zargs, 2, nx)) return;
    if (n == 0) return;
    rill__cl_arg args[] = {RILL__CL_ARG(dxm), RILL__CL_ARG(dym), RILL__CL_ARG(sl),
                           RILL__CL_ARG(n)};
    rill__cl_launch(ctx, "arr_strided_slice_grad", x->dtype, args, 4, n);
}

#define ARR_K(OP, FN, T)                                                                           \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = T, .fn = FN                                    \
    }
#define ARR_KERNEL(OP, FN)                                                                         \
    ARR_K(OP, FN, RILL_FLOAT), ARR_K(OP, FN, RILL_DOUBLE), ARR_K(OP, FN, RILL_HALF)

const rill__kernel_def rill__opencl_kernels_array[] = {
    ARR_KERNEL("StridedSlice", strided_slice_kernel),
    ARR_KERNEL("StridedSliceGrad", strided_slice_grad_kernel),
    {0},
};
