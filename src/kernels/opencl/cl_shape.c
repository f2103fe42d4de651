/* cl_shape.c - OpenCL kernels of the data-movement shape ops (src/graph/ops_shape.c; CPU twins
 * in src/kernels/cpu/cpu_shape.c) for float, double and half, on the plans of array_plan.h.
 *
 *   Transpose, Tile, Pad, MirrorPad, ReverseV2, BroadcastTo
 *       one work item per output element following the index map (rill__map, mirrored as
 *       map_t): it reads the input element the map names, or Pad's constant_values.
 *   ConcatV2, Pack / Split, SplitV, Unpack, ConcatGrad
 *       one enqueue per piece copying its outer rows of width[k] elements to or from column
 *       col[k] of the joined tensor's rows (rill__blocks). ConcatGrad's shape inputs (1..) stay
 *       in host memory: only their shapes are read.
 *   OneHot
 *       the indices (int32 or int64, a host input as integers are on a GPU) are uploaded to a
 *       temporary buffer; one work item per output element. Other index dtypes run the CPU
 *       kernel with a host-memory result.
 * Values are moved through LD / ST (half through float, exact). The other dtypes (int32, bool,
 * strings, ...), TileGrad and MirrorPadGrad keep cpu_shape.c's host-memory entries. */
#include "../array_plan.h"
#include "cl_kernels.h"

#include <assert.h>
#include <string.h>

const char rill__cl_source_shape[] =
    "#ifdef IS_DOUBLE\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    "typedef struct { int rank; int pad_; long n; long base; long count[MAXD]; long in[MAXD];\n"
    "                 long lo[MAXD]; long step[MAXD]; long mode[MAXD]; } map_t;\n"
    /* modes as array_plan.h's: 0 direct, 1 pad, 2 reflect, 3 symmetric, 4 tile */
    "long map_src(const map_t *m, long i) {\n"
    "    long off = m->base;\n"
    "    for (int d = m->rank - 1; d >= 0; d--) {\n"
    "        long n = m->count[d], q = i / n, c = i - q * n - m->lo[d], in = m->in[d];\n"
    "        i = q;\n"
    "        switch (m->mode[d]) {\n"
    "        case 1: if (c < 0 || c >= in) return -1; break;\n"
    "        case 2: c = c < 0 ? -c : c >= in ? 2 * in - 2 - c : c; break;\n"
    "        case 3: c = c < 0 ? -c - 1 : c >= in ? 2 * in - 1 - c : c; break;\n"
    "        case 4: c %= in; break;\n"
    "        default: break;\n"
    "        }\n"
    "        off += c * m->step[d];\n"
    "    }\n"
    "    return off;\n"
    "}\n"
    "__kernel void sh_map(__global const T *x, __global T *o, map_t m, ACC pad, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long s = map_src(&m, i);\n"
    "    ST(o, i, s >= 0 ? LD(x, s) : pad);\n"
    "}\n"
    /* dst[r * dst_stride + dst_col + c] = src[r * src_stride + src_col + c], c < width */
    "__kernel void sh_rows(__global T *dst, __global const T *src, long width, long dst_stride,\n"
    "                      long dst_col, long src_stride, long src_col, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long r = i / width, c = i - r * width;\n"
    "    ST(dst, r * dst_stride + dst_col + c, LD(src, r * src_stride + src_col + c));\n"
    "}\n"
    /* y viewed as [outer, depth, suffix]; the index of (p, q) at ids[p * suffix + q] */
    "#define SH_ONEHOT(NAME, IT)                                                          \\\n"
    "__kernel void NAME(__global const IT *ids, __global T *y, long depth, long suffix,   \\\n"
    "                   ACC on, ACC off, long n) {                                        \\\n"
    "    long i = get_global_id(0);                                                       \\\n"
    "    if (i >= n) return;                                                              \\\n"
    "    long q = i % suffix, t = i / suffix, j = t % depth, p = t / depth;                \\\n"
    "    ST(y, i, (long)ids[p * suffix + q] == j ? on : off);                             \\\n"
    "}\n"
    "SH_ONEHOT(sh_one_hot_int, int)\n"
    "SH_ONEHOT(sh_one_hot_long, long)\n";

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

typedef struct sh_acc {
    union {
        cl_float f;
        cl_double d;
    } v;
    size_t size;
} sh_acc;

static sh_acc acc_of(rill_dtype t, double x)
{
    sh_acc a;
    if (t == RILL_DOUBLE) {
        a.v.d = x;
        a.size = sizeof(cl_double);
    } else {
        a.v.f = (cl_float)x;
        a.size = sizeof(cl_float);
    }
    return a;
}
#define SH_ACC(a) ((rill__cl_arg){(a).size, &(a).v})

/* Host mirror of map_t. */
typedef struct sh_map_t {
    cl_int rank, pad_;
    cl_long n, base;
    cl_long count[RILL_MAX_DIMS], in[RILL_MAX_DIMS], lo[RILL_MAX_DIMS], step[RILL_MAX_DIMS],
        mode[RILL_MAX_DIMS];
} sh_map_t;
static_assert(sizeof(sh_map_t) == 24 + 5 * 8 * RILL_MAX_DIMS, "sh_map_t layout");

static void map_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    rill__map m;
    rill_shape os;
    if (!rill__check_map(ctx, x, NULL, &m, &os)) return;
    if (!dtype_ok(ctx, x->dtype) || !on_device(ctx, 0)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!y || y->numel == 0) return;
    sh_map_t cm = {.rank = m.rank, .n = m.n, .base = m.base};
    for (int d = 0; d < m.rank; d++) {
        cm.count[d] = m.count[d];
        cm.in[d] = m.in[d];
        cm.lo[d] = m.lo[d];
        cm.step[d] = m.step[d];
        cm.mode[d] = m.mode[d];
    }
    /* the pad value rounded to x's dtype as the CPU rounds it */
    double pv = rill__attr_float(ctx->node, "constant_values", 0), pr;
    char elem[8];
    rill__convert(x->dtype, elem, RILL_DOUBLE, &pv, 1);
    rill__convert(RILL_DOUBLE, &pr, x->dtype, elem, 1);
    sh_acc pad = acc_of(x->dtype, pr);
    cl_mem xm = rill__cl_mem(x), ym = rill__cl_mem(y);
    cl_long n = y->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(xm), RILL__CL_ARG(ym), RILL__CL_ARG(cm), SH_ACC(pad),
                           RILL__CL_ARG(n)};
    rill__cl_launch(ctx, "sh_map", x->dtype, args, 5, n);
}

/* Copies outer rows of width elements from src (rows of src_stride, at src_col) to dst. */
static bool copy_rows(rill__kctx *ctx, rill_dtype t, const rill_tensor *dst, int64_t dst_stride,
                      int64_t dst_col, const rill_tensor *src, int64_t src_stride, int64_t src_col,
                      int64_t outer, int64_t width)
{
    if (outer * width == 0) return true;
    cl_mem dm = rill__cl_mem(dst), sm = rill__cl_mem(src);
    cl_long w = width, ds = dst_stride, dc = dst_col, ss = src_stride, sc = src_col,
            n = outer * width;
    rill__cl_arg args[] = {RILL__CL_ARG(dm), RILL__CL_ARG(sm), RILL__CL_ARG(w),  RILL__CL_ARG(ds),
                           RILL__CL_ARG(dc), RILL__CL_ARG(ss), RILL__CL_ARG(sc), RILL__CL_ARG(n)};
    return rill__cl_launch(ctx, "sh_rows", t, args, 8, n);
}

static void join_kernel(rill__kctx *ctx)
{
    rill__blocks b;
    if (!rill__check_blocks(ctx, &b)) return;
    rill_dtype t = ctx->inputs[0]->dtype;
    bool ok = dtype_ok(ctx, t);
    for (int i = 0; ok && i < b.n; i++) ok = on_device(ctx, i);
    rill_tensor *y = ok ? rill__kctx_alloc_output(ctx, 0, t, &b.whole) : NULL;
    for (int i = 0; y && i < b.n; i++)
        if (!copy_rows(ctx, t, y, b.total, b.col[i], ctx->inputs[i], b.width[i], 0, b.outer,
                       b.width[i]))
            break;
    rill__blocks_free(&b);
}

static void split_kernel(rill__kctx *ctx)
{
    rill__blocks b;
    if (!rill__check_blocks(ctx, &b)) return;
    const rill_tensor *x = ctx->inputs[0];
    if (dtype_ok(ctx, x->dtype) && on_device(ctx, 0))
        for (int i = 0; i < b.n; i++) {
            rill_tensor *y = rill__kctx_alloc_output(ctx, i, x->dtype, &b.shapes[i]);
            if (!y || !copy_rows(ctx, x->dtype, y, b.width[i], 0, x, b.total, b.col[i], b.outer,
                                 b.width[i]))
                break;
        }
    rill__blocks_free(&b);
}

static void one_hot_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    const rill_tensor *x = ctx->inputs[0];
    int64_t depth = rill__attr_int(n, "depth", -1), axis = rill__attr_int(n, "axis", -1);
    int r = x->shape.rank;
    if (x->dtype != RILL_INT32 && x->dtype != RILL_INT64) {
        /* the CPU kernel, its result in host memory */
        const rill__kernel_def *k =
            rill__kernel_lookup("OneHot", "CPU", rill__node_kernel_dtype(n));
        ctx->host_memory_outputs |= 1u;
        if (k) k->fn(ctx);
        return;
    }
    if (depth < 0 || axis < -1 || axis > r || r + 1 > RILL_MAX_DIMS) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "OneHot: depth %lld must be >= 0 and axis %lld in [-1, %d]",
                        (long long)depth, (long long)axis, r);
        return;
    }
    if (!rill__tensor_on_host(x)) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "OneHot: the indices must be in host memory");
        return;
    }
    if (axis < 0) axis = r;
    rill_shape os = {.rank = r + 1};
    for (int d = 0, j = 0; d < os.rank; d++) os.dims[d] = d == axis ? depth : x->shape.dims[j++];
    rill_dtype t = rill__attr_type(n, "T", RILL_FLOAT);
    if (!dtype_ok(ctx, t)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, t, &os);
    if (!y || y->numel == 0) return;
    int64_t suffix = 1;
    for (int d = (int)axis; d < r; d++) suffix *= x->shape.dims[d];
    double onv = rill__attr_float(n, "on_value", 1), offv = rill__attr_float(n, "off_value", 0);
    double onr, offr;
    char elem[8];
    rill__convert(t, elem, RILL_DOUBLE, &onv, 1);
    rill__convert(RILL_DOUBLE, &onr, t, elem, 1);
    rill__convert(t, elem, RILL_DOUBLE, &offv, 1);
    rill__convert(RILL_DOUBLE, &offr, t, elem, 1);
    cl_int err;
    cl_mem ids = clCreateBuffer(rill__cl(ctx->device)->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                x->buf->size, x->buf->data, &err);
    if (err != CL_SUCCESS) {
        rill_status *s = rill_status_new();
        rill__cl_check(err, "upload OneHot's indices", s);
        rill__kctx_fail_with(ctx, s);
        return;
    }
    sh_acc on = acc_of(t, onr), off = acc_of(t, offr);
    cl_mem ym = rill__cl_mem(y);
    cl_long dp = depth, sf = suffix, cn = y->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(ids), RILL__CL_ARG(ym), RILL__CL_ARG(dp), RILL__CL_ARG(sf),
                           SH_ACC(on),        SH_ACC(off),      RILL__CL_ARG(cn)};
    rill__cl_launch(ctx, x->dtype == RILL_INT64 ? "sh_one_hot_long" : "sh_one_hot_int", t, args, 7,
                    cn);
    clReleaseMemObject(ids); /* freed by OpenCL once the kernel has run */
}

#define SH_K(OP, FN, T, HIN, HOUT)                                                                 \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = T, .fn = FN, .host_memory_inputs = HIN,        \
        .host_memory_outputs = HOUT                                                                \
    }
#define SH_KERNEL(OP, FN, HIN)                                                                     \
    SH_K(OP, FN, RILL_FLOAT, HIN, 0), SH_K(OP, FN, RILL_DOUBLE, HIN, 0),                           \
        SH_K(OP, FN, RILL_HALF, HIN, 0)

const rill__kernel_def rill__opencl_kernels_shape[] = {
    SH_KERNEL("Transpose", map_kernel, 0),
    SH_KERNEL("Tile", map_kernel, 0),
    SH_KERNEL("Pad", map_kernel, 0),
    SH_KERNEL("MirrorPad", map_kernel, 0),
    SH_KERNEL("ReverseV2", map_kernel, 0),
    SH_KERNEL("BroadcastTo", map_kernel, 0),
    SH_KERNEL("ConcatV2", join_kernel, 0),
    SH_KERNEL("Pack", join_kernel, 0),
    SH_KERNEL("Split", split_kernel, 0),
    SH_KERNEL("SplitV", split_kernel, 0),
    SH_KERNEL("Unpack", split_kernel, 0),
    /* the shape inputs (1..) in host memory */
    SH_KERNEL("ConcatGrad", split_kernel, ~1u),
    /* the indices (input 0) in host memory */
    SH_KERNEL("OneHot", one_hot_kernel, 1u),
    {0},
};
