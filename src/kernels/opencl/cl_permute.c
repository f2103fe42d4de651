/* cl_permute.c - OpenCL kernels of Roll and ReverseSequence (src/graph/ops_permute.c; CPU twins
 * in src/kernels/cpu/cpu_permute.c) and MatrixBandPart (ops_linalg.c; cpu_linalg.c) for float,
 * double and half.
 *
 *   Roll             one work item per element: it reads the element its dims' shifts (each
 *                    in [0, dim), rill__roll_shifts) bring to it.
 *   ReverseSequence  seq_lengths (a host input, checked there by the CPU's checks) is uploaded
 *                    as longs; one work item per element, reading the mirrored one when its
 *                    position along seq_dim is below its batch entry's length.
 *   MatrixBandPart   one work item per element: a copy, or 0 outside the band.
 * The other dtypes run the CPU kernels in host memory (cpu_permute.c's OPENCL entries); the
 * other matrix ops of ops_linalg.c are host-only (cpu_linalg.c's OPENCL entries). */
#include "../cpu/cpu_linalg.h"
#include "../cpu/cpu_permute.h"
#include "cl_kernels.h"

#include <assert.h>
#include <string.h>

const char rill__cl_source_permute[] =
    "#ifdef IS_DOUBLE\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    "typedef struct { int rank; int pad_; long dims[MAXD]; long shift[MAXD]; } roll_t;\n"
    "__kernel void pm_roll(__global const T *x, __global T *o, roll_t r, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long rest = i, src = 0, st = 1;\n"
    "    for (int d = r.rank - 1; d >= 0; d--) {\n"
    "        long k = r.dims[d], c = rest % k - r.shift[d];\n"
    "        rest /= k;\n"
    "        if (c < 0) c += k;\n"
    "        src += c * st;\n"
    "        st *= k;\n"
    "    }\n"
    "    ST(o, i, LD(x, src));\n"
    "}\n"
    "__kernel void pm_reverse_sequence(__global const T *x, __global T *o,\n"
    "                                  __global const long *len, long seq_n, long seq_st,\n"
    "                                  long batch_n, long batch_st, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long cs = (i / seq_st) % seq_n, l = len[(i / batch_st) % batch_n], src = i;\n"
    "    if (cs < l) src += (l - 1 - 2 * cs) * seq_st;\n"
    "    ST(o, i, LD(x, src));\n"
    "}\n"
    "__kernel void pm_band_part(__global const T *x, __global T *o, long rows, long cols,\n"
    "                           long lo, long up, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long q = i % cols, r = (i / cols) % rows;\n"
    "    bool keep = (lo < 0 || r - q <= lo) && (up < 0 || q - r <= up);\n"
    "    ST(o, i, keep ? LD(x, i) : (ACC)0);\n"
    "}\n";

static bool ready(rill__kctx *ctx, const rill_tensor *x)
{
    if (x->dtype == RILL_DOUBLE && !ctx->device->fp64) {
        rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "%s: %s has no double precision support",
                        ctx->node->op->name, ctx->device->name);
        return false;
    }
    if (x->buf->dev != ctx->device) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "%s: input 0 is not in the memory of %s",
                        ctx->node->op->name, ctx->device->name);
        return false;
    }
    return true;
}

typedef struct pm_roll_t {
    cl_int rank, pad_;
    cl_long dims[RILL_MAX_DIMS], shift[RILL_MAX_DIMS];
} pm_roll_t;
static_assert(sizeof(pm_roll_t) == 8 + 2 * 8 * RILL_MAX_DIMS, "pm_roll_t layout");

static void roll_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    if (!rill__permute_check_run(ctx, x, NULL) || !ready(ctx, x)) return;
    int64_t sh[RILL_MAX_DIMS];
    rill__roll_shifts(ctx->node, &x->shape, sh);
    pm_roll_t r = {.rank = x->shape.rank};
    for (int d = 0; d < r.rank; d++) {
        r.dims[d] = x->shape.dims[d];
        r.shift[d] = sh[d];
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y || y->numel == 0) return;
    cl_mem xm = rill__cl_mem(x), ym = rill__cl_mem(y);
    cl_long n = y->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(xm), RILL__CL_ARG(ym), RILL__CL_ARG(r), RILL__CL_ARG(n)};
    rill__cl_launch(ctx, "pm_roll", x->dtype, args, 4, n);
}

static void reverse_sequence_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *len = ctx->inputs[1];
    if (!rill__permute_check_run(ctx, x, len) || !ready(ctx, x)) return;
    if (!rill__tensor_on_host(len)) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "ReverseSequence: seq_lengths must be in host memory");
        return;
    }
    if (!rill__reverse_sequence_lengths_ok(ctx, x, len)) return;
    const rill_node *nd = ctx->node;
    int sd = (int)rill__attr_int(nd, "seq_dim", -1), bd = (int)rill__attr_int(nd, "batch_dim", 0);
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y || y->numel == 0) return;
    cl_long st[RILL_MAX_DIMS];
    cl_long acc = 1;
    for (int d = x->shape.rank - 1; d >= 0; d--) {
        st[d] = acc;
        acc *= x->shape.dims[d];
    }
    cl_long *lv = rill__malloc((size_t)len->numel * sizeof *lv);
    RILL_CHECK_ALLOC(lv);
    for (int64_t b = 0; b < len->numel; b++) lv[b] = rill_tensor_get_int64(len, b);
    cl_int err;
    cl_mem lm = clCreateBuffer(rill__cl(ctx->device)->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                               (size_t)len->numel * sizeof *lv, lv, &err);
    rill__free(lv);
    if (err != CL_SUCCESS) {
        rill_status *s = rill_status_new();
        rill__cl_check(err, "upload ReverseSequence's lengths", s);
        rill__kctx_fail_with(ctx, s);
        return;
    }
    cl_mem xm = rill__cl_mem(x), ym = rill__cl_mem(y);
    cl_long sn = x->shape.dims[sd], ss = st[sd], bn = x->shape.dims[bd], bs = st[bd], n = y->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(xm), RILL__CL_ARG(ym), RILL__CL_ARG(lm), RILL__CL_ARG(sn),
                           RILL__CL_ARG(ss), RILL__CL_ARG(bn), RILL__CL_ARG(bs), RILL__CL_ARG(n)};
    rill__cl_launch(ctx, "pm_reverse_sequence", x->dtype, args, 8, n);
    clReleaseMemObject(lm); /* freed by OpenCL once the kernel has run */
}

static void band_part_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    int64_t rows, cols, lo, up;
    if (!rill__band_part_check(ctx, x, &rows, &cols, &lo, &up) || !ready(ctx, x)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y || y->numel == 0) return;
    cl_mem xm = rill__cl_mem(x), ym = rill__cl_mem(y);
    cl_long r = rows, c = cols, l = lo, u = up, n = y->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(xm), RILL__CL_ARG(ym), RILL__CL_ARG(r), RILL__CL_ARG(c),
                           RILL__CL_ARG(l),  RILL__CL_ARG(u),  RILL__CL_ARG(n)};
    rill__cl_launch(ctx, "pm_band_part", x->dtype, args, 7, n);
}

#define PM_K(OP, FN, T, HIN)                                                                       \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = T, .fn = FN, .host_memory_inputs = HIN         \
    }
#define PM_KERNEL(OP, FN, HIN)                                                                     \
    PM_K(OP, FN, RILL_FLOAT, HIN), PM_K(OP, FN, RILL_DOUBLE, HIN), PM_K(OP, FN, RILL_HALF, HIN)

const rill__kernel_def rill__opencl_kernels_permute[] = {
    PM_KERNEL("Roll", roll_kernel, 0),
    /* seq_lengths (input 1) in host memory */
    PM_KERNEL("ReverseSequence", reverse_sequence_kernel, 2u),
    PM_KERNEL("MatrixBandPart", band_part_kernel, 0),
    {0},
};
