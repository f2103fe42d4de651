/* cl_index.c - the OpenCL GatherV2 for float, double and half params (the embedding lookup).
 *
 * The indices (int32 or int64) live in host memory (bit 1 of host_memory_inputs): they are
 * checked there with the CPU kernel's text ("indices[1] = 7 is not in [0, 5)"), then uploaded,
 * and one work item per result element copies its element of params. Values are moved, not
 * computed: half goes through float and back, which is exact. With drop_negatives (the gradient
 * of UnsortedSegmentSum) a negative index gives a row of zeros. Every other dtype, and the other
 * indexing ops, run the CPU kernels with host-memory tensors (cpu_index.c). */
#include "../kernel.h"
#include "cl_kernels.h"

#include <stdio.h>
#include <string.h>

const char rill__cl_source_index[] =
    "__kernel void idx_gather(__global T *y, __global const T *p, __global const long *ix,\n"
    "                         long n, long lim, long inner, long total)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= total) return;\n"
    "    long j = i % inner, r = i / inner, k = r % n, o = r / n, v = ix[k];\n"
    "    ST(y, i, v < 0 ? (ACC)0 : LD(p, (o * lim + v) * inner + j));\n"
    "}\n";

static int64_t index_at(const rill_tensor *t, int64_t i)
{
    return t->dtype == RILL_INT32 ? ((const int32_t *)t->buf->data)[i]
                                  : ((const int64_t *)t->buf->data)[i];
}

static void gather_kernel(rill__kctx *ctx)
{
    const rill_tensor *p = ctx->inputs[0], *ix = ctx->inputs[1];
    if (!rill__tensor_on_host(ix) ||
        (ctx->node->ninputs > 2 && !rill__tensor_on_host(ctx->inputs[2]))) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "GatherV2: indices and axis must be in host memory");
        return;
    }
    int64_t axis =
        ctx->node->ninputs > 2 ? index_at(ctx->inputs[2], 0) : rill__attr_int(ctx->node, "axis", 0);
    bool drop = rill__attr_bool(ctx->node, "drop_negatives", false);
    int r = p->shape.rank;
    if (axis < -r || axis >= r) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Expected axis in the range [%d, %d), but got %lld", -r, r,
                        (long long)axis);
        return;
    }
    if (axis < 0) axis += r;
    int a = (int)axis;
    if (r - 1 + ix->shape.rank > RILL_MAX_DIMS) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "GatherV2: the result has more than %d dims",
                        RILL_MAX_DIMS);
        return;
    }
    rill_shape os = {.rank = 0};
    cl_long outer = 1, inner = 1, lim = p->shape.dims[a], n = ix->numel;
    for (int d = 0; d < a; d++) {
        os.dims[os.rank++] = p->shape.dims[d];
        outer *= p->shape.dims[d];
    }
    for (int d = 0; d < ix->shape.rank; d++) os.dims[os.rank++] = ix->shape.dims[d];
    for (int d = a + 1; d < r; d++) {
        os.dims[os.rank++] = p->shape.dims[d];
        inner *= p->shape.dims[d];
    }
    /* checked (and widened to int64) on the host; the CPU kernel's text */
    cl_long *ixl = rill__malloc((size_t)(n ? n : 1) * sizeof *ixl);
    RILL_CHECK_ALLOC(ixl);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = index_at(ix, i);
        if (v < 0 && drop) {
            v = -1; /* a row of zeros (UnsortedSegmentSum's gradient) */
        } else if (v < 0 || v >= lim) {
            char pos[128];
            int64_t c[RILL_MAX_DIMS], f = i;
            for (int d = ix->shape.rank - 1; d >= 0; d--) {
                c[d] = f % ix->shape.dims[d];
                f /= ix->shape.dims[d];
            }
            size_t o = 0;
            pos[o++] = '[';
            for (int d = 0; d < ix->shape.rank && o + 24 < sizeof pos; d++)
                o += (size_t)snprintf(pos + o, sizeof pos - o, "%s%lld", d ? "," : "",
                                      (long long)c[d]);
            snprintf(pos + o, sizeof pos - o, "]");
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "indices%s = %lld is not in [0, %lld)", pos,
                            (long long)v, (long long)lim);
            rill__free(ixl);
            return;
        }
        ixl[i] = v;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, p->dtype, &os);
    cl_long total = outer * n * inner;
    if (!y || total == 0) {
        rill__free(ixl);
        return;
    }
    cl_int err;
    cl_mem im = clCreateBuffer(rill__cl(ctx->device)->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                               (size_t)n * sizeof *ixl, ixl, &err);
    rill__free(ixl);
    if (err != CL_SUCCESS) {
        rill_status *s = rill_status_new();
        rill__cl_check(err, "upload indices", s);
        rill__kctx_fail_with(ctx, s);
        return;
    }
    cl_mem ym = rill__cl_mem(y), pm = rill__cl_mem(p);
    rill__cl_arg args[] = {RILL__CL_ARG(ym),   RILL__CL_ARG(pm),  RILL__CL_ARG(im),
                           RILL__CL_ARG(n),    RILL__CL_ARG(lim), RILL__CL_ARG(inner),
                           RILL__CL_ARG(total)};
    rill__cl_launch(ctx, "idx_gather", p->dtype, args, 7, total);
    clReleaseMemObject(im); /* freed by OpenCL once the kernel has run */
}

#define IDX_K(T)                                                                                   \
    {                                                                                              \
        .op = "GatherV2", .device_type = "OPENCL", .dtype = T, .fn = gather_kernel,                \
        .host_memory_inputs = (1u << 1) | (1u << 2)                                                \
    }

const rill__kernel_def rill__opencl_kernels_index[] = {
    IDX_K(RILL_FLOAT),
    IDX_K(RILL_DOUBLE),
    IDX_K(RILL_HALF),
    {0},
};
