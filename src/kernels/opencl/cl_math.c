/* cl_math.c - OpenCL kernels for arithmetic and shapes: the broadcasting binary ops, unary ops,
 * AddN, Sum/Mean and their gradient helpers, MatMul, Cast, Fill, ZerosLike/OnesLike, and the
 * metadata ops (Identity, Reshape, ExpandDims, Shape).
 *
 * The first half is the OpenCL C source (rill__cl_source_math), compiled once per dtype with T,
 * ACC, LD and ST (see cl_kernels.h), so one kernel text serves float, double and half. The second
 * half is the host side: each kernel checks shapes as its CPU twin does (same messages), lays out
 * the index structs of cl_common.c, and enqueues under rill__cl_lock.
 *
 * Like TensorFlow, integer tensors do not live on the GPU: int32 and int64 kernels are the CPU
 * functions, registered with every input and output in host memory. The metadata ops reuse the
 * CPU functions too, since they only read shapes: their outputs are views of the input buffer,
 * wherever it lives. */
#include "../cpu/cpu_kernels.h"
#include "cl_kernels.h"

#include <assert.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* OpenCL C                                                                                   */
/* ------------------------------------------------------------------------------------------ */

const char rill__cl_source_math[] =
    /* Binary ops: op 0 add, 1 sub, 2 mul, 3 div, 4 maximum, 5 minimum (a NaN in x wins, as on
     * the CPU). */
    "ACC math_apply(int op, ACC x, ACC y) {\n"
    "    switch (op) {\n"
    "    case 0: return x + y;\n"
    "    case 1: return x - y;\n"
    "    case 2: return x * y;\n"
    "    case 3: return x / y;\n"
    "    case 5: return (x < y || x != x) ? x : y;\n"
    "    default: return (x > y || x != x) ? x : y;\n"
    "    }\n"
    "}\n"
    "__kernel void math_bin_same(__global const T *a, __global const T *b, __global T *o,\n"
    "                            int op, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) ST(o, i, math_apply(op, LD(a, i), LD(b, i)));\n"
    "}\n"
    "__kernel void math_bin_scalar_a(__global const T *a, __global const T *b, __global T *o,\n"
    "                                int op, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) ST(o, i, math_apply(op, LD(a, 0), LD(b, i)));\n"
    "}\n"
    "__kernel void math_bin_scalar_b(__global const T *a, __global const T *b, __global T *o,\n"
    "                                int op, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) ST(o, i, math_apply(op, LD(a, i), LD(b, 0)));\n"
    "}\n"
    "__kernel void math_bin_bcast(__global const T *a, __global const T *b, __global T *o,\n"
    "                             int op, bcast_t bc, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long ia, ib;\n"
    "    bcast_offsets(&bc, i, &ia, &ib);\n"
    "    ST(o, i, math_apply(op, LD(a, ia), LD(b, ib)));\n"
    "}\n"
    /* Unary ops: 0 neg, 1 square, 2 sqrt, 3 exp, 4 log. */
    "__kernel void math_unary(__global const T *x, __global T *o, int op, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC v = LD(x, i), r;\n"
    "    switch (op) {\n"
    "    case 0: r = -v; break;\n"
    "    case 1: r = v * v; break;\n"
    "    case 2: r = sqrt(v); break;\n"
    "    case 3: r = exp(v); break;\n"
    "    default: r = log(v); break;\n"
    "    }\n"
    "    ST(o, i, r);\n"
    "}\n"
    /* AddN over up to 8 inputs at a time; acc: add to what o holds (later chunks). */
    "__kernel void math_addn(__global T *o, int acc, int cnt, __global const T *x0,\n"
    "                        __global const T *x1, __global const T *x2, __global const T *x3,\n"
    "                        __global const T *x4, __global const T *x5, __global const T *x6,\n"
    "                        __global const T *x7, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC s = acc ? LD(o, i) : (ACC)0;\n"
    "    s += LD(x0, i);\n"
    "    if (cnt > 1) s += LD(x1, i);\n"
    "    if (cnt > 2) s += LD(x2, i);\n"
    "    if (cnt > 3) s += LD(x3, i);\n"
    "    if (cnt > 4) s += LD(x4, i);\n"
    "    if (cnt > 5) s += LD(x5, i);\n"
    "    if (cnt > 6) s += LD(x6, i);\n"
    "    if (cnt > 7) s += LD(x7, i);\n"
    "    ST(o, i, s);\n"
    "}\n"
    /* Reductions: one work item per output element, or one work group of MATH_WG (a power of
     * two, the local size) per output element for long or contiguous reductions. The sum is
     * divided by div (1 for Sum, the count for Mean). */
    "#define MATH_WG 64\n"
    "__kernel void math_reduce(__global const T *x, __global T *o, reduce_t r, long count,\n"
    "                          long div, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long base = reduce_base(&r, i);\n"
    "    ACC s = 0;\n"
    "    for (long j = 0; j < count; j++) s += LD(x, base + reduce_offset(&r, j));\n"
    "    ST(o, i, s / (ACC)div);\n"
    "}\n"
    "__kernel void math_reduce_wg(__global const T *x, __global T *o, reduce_t r, long count,\n"
    "                             long div) {\n"
    "    __local ACC part[MATH_WG];\n"
    "    long i = get_group_id(0);\n"
    "    int lid = get_local_id(0), wg = get_local_size(0);\n"
    "    long base = reduce_base(&r, i);\n"
    "    ACC s = 0;\n"
    "    for (long j = lid; j < count; j += wg) s += LD(x, base + reduce_offset(&r, j));\n"
    "    part[lid] = s;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (int h = wg / 2; h > 0; h /= 2) {\n"
    "        if (lid < h) part[lid] += part[lid + h];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (lid == 0) ST(o, i, part[0] / (ACC)div);\n"
    "}\n"
    /* o[i] = x[offset of i] * scale over bc's dims and a_strides (ReduceGrad's broadcast). */
    "__kernel void math_gather_scale(__global const T *x, __global T *o, bcast_t bc, ACC scale,\n"
    "                                long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long ia, ib;\n"
    "    bcast_offsets(&bc, i, &ia, &ib);\n"
    "    ST(o, i, LD(x, ia) * scale);\n"
    "}\n"
    "__kernel void math_maximum_grad(__global const T *dy, __global const T *x,\n"
    "                                __global const T *y, __global T *dx, __global T *dz,\n"
    "                                bcast_t bc, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long ia, ib;\n"
    "    bcast_offsets(&bc, i, &ia, &ib);\n"
    "    ACC g = LD(dy, i);\n"
    "    int left = LD(x, ia) >= LD(y, ib);\n"
    "    ST(dx, i, left ? g : (ACC)0);\n"
    "    ST(dz, i, left ? (ACC)0 : g);\n"
    "}\n"
    "__kernel void math_sqrt_grad(__global const T *y, __global const T *dy, __global T *o,\n"
    "                             long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) ST(o, i, LD(dy, i) * (ACC)0.5 / LD(y, i));\n"
    "}\n"
    /* C[M,N] = op(A) op(B), 16x16 tiles staged in local memory. Work item (get_global_id(0),
     * get_global_id(1)) = (column, row) so neighbouring items touch neighbouring addresses; the
     * tile loads are arranged so that they do too, transposed or not. */
    "#define MATH_TS 16\n"
    "__kernel void math_matmul(__global const T *A, __global const T *B, __global T *C, int M,\n"
    "                          int N, int K, int lda, int ldb, int ta, int tb) {\n"
    "    __local ACC As[MATH_TS][MATH_TS + 1];\n"
    "    __local ACC Bs[MATH_TS][MATH_TS + 1];\n"
    "    int lc = get_local_id(0), lr = get_local_id(1);\n"
    "    int col0 = get_group_id(0) * MATH_TS, row0 = get_group_id(1) * MATH_TS;\n"
    "    ACC acc = 0;\n"
    "    for (int t = 0; t < K; t += MATH_TS) {\n"
    "        if (!ta) {\n"
    "            int r = row0 + lr, k = t + lc;\n"
    "            As[lr][lc] = r < M && k < K ? LD(A, (long)r * lda + k) : (ACC)0;\n"
    "        } else {\n"
    "            int k = t + lr, r = row0 + lc;\n"
    "            As[lc][lr] = r < M && k < K ? LD(A, (long)k * lda + r) : (ACC)0;\n"
    "        }\n"
    "        if (!tb) {\n"
    "            int k = t + lr, c = col0 + lc;\n"
    "            Bs[lr][lc] = k < K && c < N ? LD(B, (long)k * ldb + c) : (ACC)0;\n"
    "        } else {\n"
    "            int c = col0 + lr, k = t + lc;\n"
    "            Bs[lc][lr] = k < K && c < N ? LD(B, (long)c * ldb + k) : (ACC)0;\n"
    "        }\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        for (int k = 0; k < MATH_TS; k++) acc += As[lr][k] * Bs[k][lc];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    int r = row0 + lr, c = col0 + lc;\n"
    "    if (r < M && c < N) ST(C, (long)r * N + c, acc);\n"
    "}\n"
    /* The same without local memory, for devices whose work groups hold fewer than 256 items. */
    "__kernel void math_matmul_naive(__global const T *A, __global const T *B, __global T *C,\n"
    "                                int M, int N, int K, int lda, int ldb, int ta, int tb) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= (long)M * N) return;\n"
    "    int r = (int)(i / N), c = (int)(i % N);\n"
    "    ACC acc = 0;\n"
    "    for (int k = 0; k < K; k++)\n"
    "        acc += LD(A, ta ? (long)k * lda + r : (long)r * lda + k) *\n"
    "               LD(B, tb ? (long)c * ldb + k : (long)k * ldb + c);\n"
    "    ST(C, i, acc);\n"
    "}\n"
    /* Fills and casts. half goes through float, as on the CPU. */
    "__kernel void math_fill_value(__global T *o, ACC v, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) ST(o, i, v);\n"
    "}\n"
    "__kernel void math_fill_from(__global T *o, __global const T *v, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) ST(o, i, LD(v, 0));\n"
    "}\n"
    "__kernel void math_cast_to_float(__global const T *x, __global float *y, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) y[i] = (float)LD(x, i);\n"
    "}\n"
    "__kernel void math_cast_to_half(__global const T *x, __global half *y, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) vstore_half_rte((float)LD(x, i), i, y);\n"
    "}\n"
    "__kernel void math_cast_to_long(__global const T *x, __global long *y, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) y[i] = (long)LD(x, i);\n"
    "}\n"
    "#ifdef cl_khr_fp64\n"
    "__kernel void math_cast_to_double(__global const T *x, __global double *y, long n) {\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) y[i] = (double)LD(x, i);\n"
    "}\n"
    "#endif\n";

/* ------------------------------------------------------------------------------------------ */
/* host side                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* Host mirrors of cl_common.c's structs. */
typedef struct cl_bcast {
    cl_int rank, pad_;
    cl_long dims[RILL_MAX_DIMS];
    cl_long a_strides[RILL_MAX_DIMS];
    cl_long b_strides[RILL_MAX_DIMS];
} cl_bcast;
static_assert(sizeof(cl_bcast) == 8 + 3 * 8 * RILL_MAX_DIMS, "cl_bcast layout");

typedef struct cl_reduce {
    cl_int nkeep, nred;
    cl_long keep_dims[RILL_MAX_DIMS];
    cl_long keep_strides[RILL_MAX_DIMS];
    cl_long red_dims[RILL_MAX_DIMS];
    cl_long red_strides[RILL_MAX_DIMS];
} cl_reduce;
static_assert(sizeof(cl_reduce) == 8 + 4 * 8 * RILL_MAX_DIMS, "cl_reduce layout");

/* A kernel launch being prepared: the kernel, the next argument index, the first error. The
 * device lock is held from launch_begin to launch_end. Nothing here allocates unless something
 * fails: a training step must not allocate once warm (tests/runtime checks it). */
typedef struct launch {
    rill__kctx *ctx;
    rill__device *dev;
    const char *name;
    cl_kernel k;
    cl_uint narg;
    cl_int err;
} launch;

/* Locks the device and finds kernel name in dtype t's program. False (ctx failed, unlocked)
 * when it cannot be built. */
static bool launch_begin(launch *l, rill__kctx *ctx, const char *name, rill_dtype t)
{
    l->ctx = ctx;
    l->dev = ctx->device;
    l->name = name;
    l->narg = 0;
    l->err = CL_SUCCESS;
    rill__cl_lock(l->dev);
    l->k = rill__cl_kernel(l->dev, name, t, NULL);
    if (l->k) return true;
    /* Ask again, now with a status, for the reason (the build log). */
    rill_status *s = rill_status_new();
    l->k = rill__cl_kernel(l->dev, name, t, s);
    if (!l->k) {
        rill__cl_unlock(l->dev);
        rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
    }
    rill_status_free(s);
    return l->k != NULL;
}

static void arg(launch *l, size_t size, const void *p)
{
    cl_int e = clSetKernelArg(l->k, l->narg++, size, p);
    if (l->err == CL_SUCCESS) l->err = e;
}

static void arg_mem(launch *l, const rill_tensor *t)
{
    cl_mem m = rill__cl_mem(t);
    arg(l, sizeof m, &m);
}

static void arg_int(launch *l, int64_t v)
{
    cl_int x = (cl_int)v;
    arg(l, sizeof x, &x);
}

static void arg_long(launch *l, int64_t v)
{
    cl_long x = v;
    arg(l, sizeof x, &x);
}

/* A value of the program's ACC type: double for double, float for float and half. */
static void arg_acc(launch *l, rill_dtype t, double v)
{
    if (t == RILL_DOUBLE) {
        cl_double x = v;
        arg(l, sizeof x, &x);
    } else {
        cl_float x = (cl_float)v;
        arg(l, sizeof x, &x);
    }
}

/* Enqueues and unlocks: over n items in groups of `local` (0: up to 64), or, when tile > 0, over
 * a rows x cols range in tile x tile groups. False (ctx failed) on any error. */
static bool launch_end_nd(launch *l, size_t n, size_t rows, size_t cols, size_t tile, size_t local)
{
    cl_int err = l->err;
    const char *what = "set kernel argument";
    if (err == CL_SUCCESS) {
        what = "enqueue";
        cl_command_queue q = rill__cl(l->dev)->queue;
        if (tile && rows && cols) {
            size_t lo[2] = {tile, tile};
            size_t gl[2] = {(rows + tile - 1) / tile * tile, (cols + tile - 1) / tile * tile};
            err = clEnqueueNDRangeKernel(q, l->k, 2, NULL, gl, lo, 0, NULL, NULL);
        } else if (!tile && n) {
            size_t lo = local;
            if (!lo) {
                lo = 64;
                while (lo > rill__cl(l->dev)->max_wg) lo /= 2;
            }
            size_t gl = (n + lo - 1) / lo * lo;
            err = clEnqueueNDRangeKernel(q, l->k, 1, NULL, &gl, &lo, 0, NULL, NULL);
        }
    }
    rill__cl_unlock(l->dev);
    if (err == CL_SUCCESS) return true;
    rill_status *s = rill_status_new();
    rill__cl_check(err, what, s);
    rill__kctx_fail(l->ctx, rill_status_code(s), "%s of kernel %s on %s", rill_status_message(s),
                    l->name, l->dev->name);
    rill_status_free(s);
    return false;
}

static bool launch_end(launch *l, size_t n)
{
    return launch_end_nd(l, n, 0, 0, 0, 0);
}

/* Device tensors must be in device memory: a host buffer here means the executor placed an
 * input wrongly, which would otherwise crash inside OpenCL. */
static bool on_device(rill__kctx *ctx, int i)
{
    const rill_tensor *t = ctx->inputs[i];
    if (rill__tensor_on_host(t) || t->buf->dev != ctx->device) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "%s: input %d is not in %s's memory",
                        ctx->node->op->name, i, ctx->device->name);
        return false;
    }
    return true;
}

/* double needs the device's fp64 (placement avoids it; this guards direct calls). */
static bool dtype_ok(rill__kctx *ctx, rill_dtype t)
{
    if (t == RILL_DOUBLE && !ctx->device->fp64) {
        rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "%s: %s has no double precision support",
                        ctx->node->op->name, ctx->device->name);
        return false;
    }
    return true;
}

/* Drops size-1 dims and merges neighbours whose strides are contiguous in both operands. */
static void bcast_collapse(int rank, const int64_t *dims, const int64_t *as, const int64_t *bs,
                           cl_bcast *out)
{
    memset(out, 0, sizeof *out);
    int64_t d[RILL_MAX_DIMS], a[RILL_MAX_DIMS], b[RILL_MAX_DIMS];
    int r = 0; /* collected innermost-first */
    for (int i = rank - 1; i >= 0; i--) {
        if (dims[i] == 1) continue;
        if (r > 0 && as[i] == a[r - 1] * d[r - 1] && bs[i] == b[r - 1] * d[r - 1]) {
            d[r - 1] *= dims[i];
            continue;
        }
        d[r] = dims[i];
        a[r] = as[i];
        b[r] = bs[i];
        r++;
    }
    out->rank = r;
    for (int i = 0; i < r; i++) {
        out->dims[i] = d[r - 1 - i];
        out->a_strides[i] = a[r - 1 - i];
        out->b_strides[i] = b[r - 1 - i];
    }
}

/* Splits shape's dims into kept (!mask) and reduced (mask) lists with their row-major strides,
 * dropping size-1 dims and merging contiguous neighbours. Returns the reduced count. */
static int64_t reduce_layout(const rill_shape *shape, const bool *mask, cl_reduce *r)
{
    memset(r, 0, sizeof *r);
    int64_t stride[RILL_MAX_DIMS], s = 1, count = 1;
    for (int d = shape->rank - 1; d >= 0; d--) {
        stride[d] = s;
        s *= shape->dims[d];
    }
    for (int d = 0; d < shape->rank; d++) {
        int64_t n = shape->dims[d];
        if (mask[d]) count *= n;
        if (n == 1) continue;
        cl_int *cnt = mask[d] ? &r->nred : &r->nkeep;
        cl_long *dims = mask[d] ? r->red_dims : r->keep_dims;
        cl_long *strides = mask[d] ? r->red_strides : r->keep_strides;
        int k = *cnt;
        if (k > 0 && strides[k - 1] == stride[d] * n) {
            dims[k - 1] *= n;
            strides[k - 1] = stride[d];
            continue;
        }
        dims[k] = n;
        strides[k] = stride[d];
        (*cnt)++;
    }
    return count;
}

/* Runs the reduction of x over r into out (count summands each, divided by div). */
static void run_reduce(rill__kctx *ctx, const rill_tensor *x, rill_tensor *out, const cl_reduce *r,
                       int64_t count, int64_t div)
{
    int64_t n = out->numel;
    if (n == 0) return;
    /* A work group per output when the summands are many and contiguous (or there are too few
     * outputs to fill the device); otherwise an item per output, whose neighbours then read
     * neighbouring addresses. */
    size_t wg = 64;
    while (wg > rill__cl(ctx->device)->max_wg) wg /= 2;
    bool contiguous = r->nred >= 1 && r->red_strides[r->nred - 1] == 1;
    bool group = wg > 1 && count >= 64 && (contiguous || n < 4096);
    launch l;
    if (!launch_begin(&l, ctx, group ? "math_reduce_wg" : "math_reduce", x->dtype)) return;
    arg_mem(&l, x);
    arg_mem(&l, out);
    arg(&l, sizeof *r, r);
    arg_long(&l, count);
    arg_long(&l, div ? div : 1);
    if (group) {
        launch_end_nd(&l, (size_t)n * wg, 0, 0, 0, wg);
    } else {
        arg_long(&l, n);
        launch_end(&l, (size_t)n);
    }
}

/* --- binary ops --- */

enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAX, OP_MIN };

static void binary(rill__kctx *ctx, int op)
{
    const rill_tensor *x = ctx->inputs[0], *y = ctx->inputs[1];
    rill__bcast bc;
    if (!rill__check_bcast(ctx, x, y, &bc)) return;
    if (!dtype_ok(ctx, x->dtype) || !on_device(ctx, 0) || !on_device(ctx, 1)) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &bc.out);
    if (!out || out->numel == 0) return;
    cl_bcast cb;
    bcast_collapse(bc.rank, bc.out_dims, bc.a_strides, bc.b_strides, &cb);
    /* Same shape (also after dropping 1s, or both one element), one scalar side, or the
     * general strided walk. */
    bool same = bc.same || (bc.a_scalar && bc.b_scalar) ||
                (cb.rank == 1 && cb.a_strides[0] == 1 && cb.b_strides[0] == 1);
    const char *name = same          ? "math_bin_same"
                       : bc.a_scalar ? "math_bin_scalar_a"
                       : bc.b_scalar ? "math_bin_scalar_b"
                                     : "math_bin_bcast";
    launch l;
    if (!launch_begin(&l, ctx, name, x->dtype)) return;
    arg_mem(&l, x);
    arg_mem(&l, y);
    arg_mem(&l, out);
    arg_int(&l, op);
    if (strcmp(name, "math_bin_bcast") == 0) arg(&l, sizeof cb, &cb);
    arg_long(&l, out->numel);
    launch_end(&l, (size_t)out->numel);
}

static void add_kernel(rill__kctx *ctx)
{
    binary(ctx, OP_ADD);
}
static void sub_kernel(rill__kctx *ctx)
{
    binary(ctx, OP_SUB);
}
static void mul_kernel(rill__kctx *ctx)
{
    binary(ctx, OP_MUL);
}
static void div_kernel(rill__kctx *ctx)
{
    binary(ctx, OP_DIV);
}
static void maximum_kernel(rill__kctx *ctx)
{
    binary(ctx, OP_MAX);
}
static void minimum_kernel(rill__kctx *ctx)
{
    binary(ctx, OP_MIN);
}

/* --- unary ops --- */

enum { U_NEG, U_SQUARE, U_SQRT, U_EXP, U_LOG };

static void unary(rill__kctx *ctx, int op)
{
    const rill_tensor *x = ctx->inputs[0];
    if (!dtype_ok(ctx, x->dtype) || !on_device(ctx, 0)) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!out || out->numel == 0) return;
    launch l;
    if (!launch_begin(&l, ctx, "math_unary", x->dtype)) return;
    arg_mem(&l, x);
    arg_mem(&l, out);
    arg_int(&l, op);
    arg_long(&l, out->numel);
    launch_end(&l, (size_t)out->numel);
}

static void neg_kernel(rill__kctx *ctx)
{
    unary(ctx, U_NEG);
}
static void square_kernel(rill__kctx *ctx)
{
    unary(ctx, U_SQUARE);
}
static void sqrt_kernel(rill__kctx *ctx)
{
    unary(ctx, U_SQRT);
}
static void exp_kernel(rill__kctx *ctx)
{
    unary(ctx, U_EXP);
}
static void log_kernel(rill__kctx *ctx)
{
    unary(ctx, U_LOG);
}

/* --- AddN: eight inputs per launch, later launches adding to the output --- */

static void add_n_kernel(rill__kctx *ctx)
{
    const rill_tensor *x0 = ctx->inputs[0];
    int n = ctx->node->ninputs;
    for (int i = 1; i < n; i++)
        if (!rill_shape_equal(&ctx->inputs[i]->shape, &x0->shape)) {
            char a[96], b[96];
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Inputs to operation AddN must have the same size and shape.  Input 0: "
                            "%s != input %d: %s",
                            rill_shape_str(&x0->shape, a, sizeof a), i,
                            rill_shape_str(&ctx->inputs[i]->shape, b, sizeof b));
            return;
        }
    if (!dtype_ok(ctx, x0->dtype)) return;
    for (int i = 0; i < n; i++)
        if (!on_device(ctx, i)) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x0->dtype, &x0->shape);
    if (!out || out->numel == 0) return;
    for (int first = 0; first < n; first += 8) {
        int cnt = n - first < 8 ? n - first : 8;
        launch l;
        if (!launch_begin(&l, ctx, "math_addn", x0->dtype)) return;
        arg_mem(&l, out);
        arg_int(&l, first > 0);
        arg_int(&l, cnt);
        for (int j = 0; j < 8; j++) arg_mem(&l, ctx->inputs[first + (j < cnt ? j : 0)]);
        arg_long(&l, out->numel);
        if (!launch_end(&l, (size_t)out->numel)) return;
    }
}

/* --- reductions --- */

static void reduce_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    bool mask[RILL_MAX_DIMS];
    if (!rill__check_axes(ctx, x->shape.rank, mask)) return;
    if (!dtype_ok(ctx, x->dtype) || !on_device(ctx, 0)) return;
    bool keep = rill__attr_bool(ctx->node, "keep_dims", false);
    rill_shape os = {.rank = 0};
    for (int d = 0; d < x->shape.rank; d++) {
        if (!mask[d])
            os.dims[os.rank++] = x->shape.dims[d];
        else if (keep)
            os.dims[os.rank++] = 1;
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!out) return;
    cl_reduce r;
    int64_t count = reduce_layout(&x->shape, mask, &r);
    bool mean = strcmp(ctx->node->op->name, "Mean") == 0;
    run_reduce(ctx, x, out, &r, count, mean ? count : 1);
}

/* A shape held by a host int32/int64 vector (SumToShape's and ReduceGrad's input 1). */
static bool read_shape(rill__kctx *ctx, const rill_tensor *t, rill_shape *s)
{
    if (t->shape.rank != 1 || t->numel > RILL_MAX_DIMS || !rill__tensor_on_host(t)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: bad shape input", ctx->node->op->name);
        return false;
    }
    s->rank = (int)t->numel;
    for (int i = 0; i < s->rank; i++) s->dims[i] = rill_tensor_get_int64(t, i);
    return true;
}

static void sum_to_shape_kernel(rill__kctx *ctx)
{
    const rill_tensor *g = ctx->inputs[0];
    rill_shape target;
    if (!read_shape(ctx, ctx->inputs[1], &target)) return;
    if (rill_shape_equal(&target, &g->shape)) {
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(ctx->inputs[0]));
        return;
    }
    int r = g->shape.rank, off = r - target.rank;
    bool mask[RILL_MAX_DIMS] = {false};
    bool bad = off < 0;
    for (int d = 0; d < r && !bad; d++) {
        int64_t td = d >= off ? target.dims[d - off] : 1;
        if (d < off || (td == 1 && g->shape.dims[d] != 1))
            mask[d] = true;
        else if (td != g->shape.dims[d])
            bad = true;
    }
    if (bad) {
        char a[96], b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "cannot sum a gradient of shape %s to shape %s",
                        rill_shape_str(&g->shape, a, sizeof a),
                        rill_shape_str(&target, b, sizeof b));
        return;
    }
    if (!dtype_ok(ctx, g->dtype) || !on_device(ctx, 0)) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, g->dtype, &target);
    if (!out) return;
    cl_reduce rd;
    int64_t count = reduce_layout(&g->shape, mask, &rd);
    run_reduce(ctx, g, out, &rd, count, 1);
}

/* ReduceGrad(dy, shape(x)): dy broadcast back over the reduced axes (/count for Mean). */
static void reduce_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *dy = ctx->inputs[0];
    rill_shape xs;
    if (!read_shape(ctx, ctx->inputs[1], &xs)) return;
    bool mask[RILL_MAX_DIMS];
    if (!rill__check_axes(ctx, xs.rank, mask)) return;
    int64_t count = 1, kept = 1, s = 1;
    int64_t istride[RILL_MAX_DIMS], zero[RILL_MAX_DIMS] = {0};
    for (int d = xs.rank - 1; d >= 0; d--) {
        istride[d] = mask[d] ? 0 : s;
        if (mask[d]) {
            count *= xs.dims[d];
        } else {
            s *= xs.dims[d];
            kept *= xs.dims[d];
        }
    }
    if (kept != dy->numel) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "ReduceGrad: gradient has %lld elements, "
                        "expected %lld",
                        (long long)dy->numel, (long long)kept);
        return;
    }
    if (!dtype_ok(ctx, dy->dtype) || !on_device(ctx, 0)) return;
    bool mean = rill__attr_bool(ctx->node, "mean", false);
    double scale = mean ? 1.0 / (double)(count ? count : 1) : 1.0;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, dy->dtype, &xs);
    if (!out || out->numel == 0) return;
    cl_bcast cb;
    bcast_collapse(xs.rank, xs.dims, istride, zero, &cb);
    launch l;
    if (!launch_begin(&l, ctx, "math_gather_scale", dy->dtype)) return;
    arg_mem(&l, dy);
    arg_mem(&l, out);
    arg(&l, sizeof cb, &cb);
    arg_acc(&l, dy->dtype, scale);
    arg_long(&l, out->numel);
    launch_end(&l, (size_t)out->numel);
}

/* MaximumGrad(dy, x, y) -> (dy where x >= y, dy where x < y). */
static void maximum_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *dy = ctx->inputs[0], *x = ctx->inputs[1], *y = ctx->inputs[2];
    rill__bcast bc;
    if (!rill__bcast_init(&bc, &x->shape, &y->shape) || !rill_shape_equal(&bc.out, &dy->shape)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "MaximumGrad: shapes do not match");
        return;
    }
    if (!dtype_ok(ctx, dy->dtype)) return;
    for (int i = 0; i < 3; i++)
        if (!on_device(ctx, i)) return;
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, dy->dtype, &dy->shape);
    rill_tensor *dz = dx ? rill__kctx_alloc_output(ctx, 1, dy->dtype, &dy->shape) : NULL;
    if (!dz || dy->numel == 0) return;
    cl_bcast cb;
    bcast_collapse(bc.rank, bc.out_dims, bc.a_strides, bc.b_strides, &cb);
    launch l;
    if (!launch_begin(&l, ctx, "math_maximum_grad", dy->dtype)) return;
    arg_mem(&l, dy);
    arg_mem(&l, x);
    arg_mem(&l, y);
    arg_mem(&l, dx);
    arg_mem(&l, dz);
    arg(&l, sizeof cb, &cb);
    arg_long(&l, dy->numel);
    launch_end(&l, (size_t)dy->numel);
}

/* SqrtGrad(y, dy) = dy * 0.5 / y */
static void sqrt_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *y = ctx->inputs[0], *dy = ctx->inputs[1];
    if (!rill_shape_equal(&y->shape, &dy->shape)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "SqrtGrad: shapes do not match");
        return;
    }
    if (!dtype_ok(ctx, y->dtype) || !on_device(ctx, 0) || !on_device(ctx, 1)) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, y->dtype, &y->shape);
    if (!out || out->numel == 0) return;
    launch l;
    if (!launch_begin(&l, ctx, "math_sqrt_grad", y->dtype)) return;
    arg_mem(&l, y);
    arg_mem(&l, dy);
    arg_mem(&l, out);
    arg_long(&l, out->numel);
    launch_end(&l, (size_t)out->numel);
}

/* --- MatMul --- */

/* Writes v into every element of out. */
static void fill_value(rill__kctx *ctx, rill_tensor *out, double v)
{
    if (out->numel == 0) return;
    launch l;
    if (!launch_begin(&l, ctx, "math_fill_value", out->dtype)) return;
    arg_mem(&l, out);
    arg_acc(&l, out->dtype, v);
    arg_long(&l, out->numel);
    launch_end(&l, (size_t)out->numel);
}

static void matmul_kernel(rill__kctx *ctx)
{
    const rill_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
    bool ta = rill__attr_bool(ctx->node, "transpose_a", false);
    bool tb = rill__attr_bool(ctx->node, "transpose_b", false);
    int64_t m, k, n;
    if (!rill__check_matmul(ctx, a, b, &m, &k, &n)) return;
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || a->shape.dims[1] > INT32_MAX ||
        b->shape.dims[1] > INT32_MAX) {
        rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "MatMul: dimensions above 2^31 on %s",
                        ctx->device->name);
        return;
    }
    if (!dtype_ok(ctx, a->dtype) || !on_device(ctx, 0) || !on_device(ctx, 1)) return;
    rill_shape os = rill_shape_matrix(m, n);
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, a->dtype, &os);
    if (!out || m == 0 || n == 0) return;
    if (k == 0) {
        fill_value(ctx, out, 0);
        return;
    }
    bool tiled = rill__cl(ctx->device)->max_wg >= 256;
    launch l;
    if (!launch_begin(&l, ctx, tiled ? "math_matmul" : "math_matmul_naive", a->dtype)) return;
    arg_mem(&l, a);
    arg_mem(&l, b);
    arg_mem(&l, out);
    arg_int(&l, m);
    arg_int(&l, n);
    arg_int(&l, k);
    arg_int(&l, a->shape.dims[1]);
    arg_int(&l, b->shape.dims[1]);
    arg_int(&l, ta);
    arg_int(&l, tb);
    if (tiled) /* dimension 0 runs along the columns */
        launch_end_nd(&l, 0, (size_t)n, (size_t)m, 16, 0);
    else
        launch_end(&l, (size_t)(m * n));
}

/* --- Cast, Fill, ZerosLike, OnesLike --- */

static void cast_kernel(rill__kctx *ctx)
{
    const rill_tensor *in = ctx->inputs[0];
    rill_dtype to = rill__attr_type(ctx->node, "DstT", RILL_FLOAT);
    if (to == in->dtype) {
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(ctx->inputs[0]));
        return;
    }
    if (!dtype_ok(ctx, in->dtype) || !dtype_ok(ctx, to) || !on_device(ctx, 0)) return;
    const char *name = to == RILL_FLOAT    ? "math_cast_to_float"
                       : to == RILL_HALF   ? "math_cast_to_half"
                       : to == RILL_DOUBLE ? "math_cast_to_double"
                       : to == RILL_INT64  ? "math_cast_to_long"
                                           : NULL;
    if (!name) {
        /* A dtype the device does not hold (int32, bool): convert in host memory. */
        rill_status *s = rill_status_new();
        rill_tensor *h = rill__tensor_copy_to(in, rill__cpu_device(), s);
        if (!h) {
            rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
            rill_status_free(s);
            return;
        }
        rill_status_free(s);
        rill_tensor *out = rill_tensor_new_shape(to, &in->shape);
        RILL_CHECK_ALLOC(out);
        rill__convert(to, out->buf->data, in->dtype, h->buf->data, in->numel);
        rill_tensor_free(h);
        rill__kctx_set_output(ctx, 0, out);
        return;
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, to, &in->shape);
    if (!out || out->numel == 0) return;
    launch l;
    if (!launch_begin(&l, ctx, name, in->dtype)) return;
    arg_mem(&l, in);
    arg_mem(&l, out);
    arg_long(&l, out->numel);
    launch_end(&l, (size_t)out->numel);
}

/* Fill(dims in host memory, value on the device). */
static void fill_kernel(rill__kctx *ctx)
{
    const rill_tensor *dims = ctx->inputs[0], *val = ctx->inputs[1];
    if (dims->shape.rank != 1 || dims->numel > RILL_MAX_DIMS || val->numel != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Fill: dims must be a vector of at most %d sizes and value a scalar",
                        RILL_MAX_DIMS);
        return;
    }
    rill_shape s = {.rank = (int)dims->numel};
    for (int i = 0; i < s.rank; i++) {
        s.dims[i] = rill_tensor_get_int64(dims, i);
        if (s.dims[i] < 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Fill: dims[%d] = %lld must be >= 0", i,
                            (long long)s.dims[i]);
            return;
        }
    }
    if (!dtype_ok(ctx, val->dtype) || !on_device(ctx, 1)) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, val->dtype, &s);
    if (!out || out->numel == 0) return;
    launch l;
    if (!launch_begin(&l, ctx, "math_fill_from", val->dtype)) return;
    arg_mem(&l, out);
    arg_mem(&l, val);
    arg_long(&l, out->numel);
    launch_end(&l, (size_t)out->numel);
}

static void fill_like(rill__kctx *ctx, double v)
{
    const rill_tensor *in = ctx->inputs[0];
    if (!dtype_ok(ctx, in->dtype)) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, in->dtype, &in->shape);
    if (out) fill_value(ctx, out, v);
}

static void zeros_like_kernel(rill__kctx *ctx)
{
    fill_like(ctx, 0.0);
}

static void ones_like_kernel(rill__kctx *ctx)
{
    fill_like(ctx, 1.0);
}

/* ------------------------------------------------------------------------------------------ */
/* registrations                                                                              */
/* ------------------------------------------------------------------------------------------ */

#define ALL 0xffffffffu
#define K(op_, dt_, fn_, hin_, hout_)                                                              \
    {                                                                                              \
        .op = op_, .device_type = "OPENCL", .dtype = dt_, .fn = fn_, .host_memory_inputs = hin_,   \
        .host_memory_outputs = hout_                                                               \
    }
/* float, double and half on the device, with these host-memory inputs and outputs. */
#define K_FLT(op_, fn_, hin_, hout_)                                                               \
    K(op_, RILL_FLOAT, fn_, hin_, hout_), K(op_, RILL_DOUBLE, fn_, hin_, hout_),                   \
        K(op_, RILL_HALF, fn_, hin_, hout_)
/* int32 and int64: the CPU kernel, everything in host memory. */
#define K_INT(op_, cpu_fn_)                                                                        \
    K(op_, RILL_INT32, cpu_fn_, ALL, ALL), K(op_, RILL_INT64, cpu_fn_, ALL, ALL)

const rill__kernel_def rill__opencl_kernels_math[] = {
    K_FLT("Add", add_kernel, 0, 0),
    K_INT("Add", rill__cpu_add),
    K_FLT("Sub", sub_kernel, 0, 0),
    K_INT("Sub", rill__cpu_sub),
    K_FLT("Mul", mul_kernel, 0, 0),
    K_INT("Mul", rill__cpu_mul),
    K_FLT("Div", div_kernel, 0, 0),
    K_INT("Div", rill__cpu_div),
    K_FLT("Maximum", maximum_kernel, 0, 0),
    K_INT("Maximum", rill__cpu_maximum),
    K_FLT("Minimum", minimum_kernel, 0, 0),
    K_INT("Minimum", rill__cpu_minimum),
    K_FLT("Neg", neg_kernel, 0, 0),
    K_INT("Neg", rill__cpu_neg),
    K_FLT("Square", square_kernel, 0, 0),
    K_INT("Square", rill__cpu_square),
    K_FLT("Sqrt", sqrt_kernel, 0, 0),
    K_FLT("Exp", exp_kernel, 0, 0),
    K_FLT("Log", log_kernel, 0, 0),
    K_FLT("AddN", add_n_kernel, 0, 0),
    K_INT("AddN", rill__cpu_add_n),
    K_FLT("Sum", reduce_kernel, 0, 0),
    K_INT("Sum", rill__cpu_reduce),
    K_FLT("Mean", reduce_kernel, 0, 0),
    K_INT("Mean", rill__cpu_reduce),
    K_FLT("SumToShape", sum_to_shape_kernel, 2, 0),
    K_FLT("ReduceGrad", reduce_grad_kernel, 2, 0),
    K_FLT("MaximumGrad", maximum_grad_kernel, 0, 0),
    K_FLT("SqrtGrad", sqrt_grad_kernel, 0, 0),
    K_FLT("MatMul", matmul_kernel, 0, 0),
    K_FLT("Cast", cast_kernel, 0, 0),
    K_INT("Cast", rill__cpu_cast),
    K_FLT("Fill", fill_kernel, 1, 0),
    K_INT("Fill", rill__cpu_fill),
    K_FLT("ZerosLike", zeros_like_kernel, 0, 0),
    K_INT("ZerosLike", rill__cpu_zeros_like),
    K_FLT("OnesLike", ones_like_kernel, 0, 0),
    K_INT("OnesLike", rill__cpu_ones_like),
    K_FLT("Identity", rill__cpu_identity, 0, 0),
    K_INT("Identity", rill__cpu_identity),
    K_FLT("PlaceholderWithDefault", rill__cpu_identity, 0, 0),
    K_INT("PlaceholderWithDefault", rill__cpu_identity),
    K_FLT("Reshape", rill__cpu_reshape, 2, 0),
    K_INT("Reshape", rill__cpu_reshape),
    K_FLT("ExpandDims", rill__cpu_expand_dims, 0, 0),
    K_INT("ExpandDims", rill__cpu_expand_dims),
    K_FLT("Shape", rill__cpu_shape, 0, 1),
    K_INT("Shape", rill__cpu_shape),
    {0},
};
