/* cl_select.c - OpenCL kernels for ArgMax, Equal and Dropout (accuracy and regularisation).
 *
 * Each op is the CPU kernel's twin (src/kernels/cpu/cpu_select.c): the same checks and error
 * texts, then one enqueue, written for correctness rather than speed.
 *
 *   ArgMax   one work item per output element, scanning its axis in order: the first maximum
 *            wins, and the first NaN wins over any number, as on the CPU. int64 output, in
 *            device memory.
 *   Equal    one work item per output element through cl_common.c's bcast_offsets. bool never
 *            lives in device memory (rill__device_holds_dtype), so the output is a host-memory
 *            output: computed into a temporary device buffer and read back before returning.
 *            float, double and half compare as the CPU does (exactly, in their own precision);
 *            int64 compares exactly (the CPU goes through double, which cannot tell apart
 *            integers above 2^53).
 *   Dropout  must drop the elements the CPU kernel drops for the same seed, so that a model
 *            trains alike on either device. The CPU draws one uniform per element, in order,
 *            from the node's xoshiro generator; the host here draws the same sequence from a
 *            generator seeded the same way (rill__kctx_rng), turns each draw into the keep bit
 *            floor(keep_prob + u) in double exactly as the CPU does, and uploads the bits; the
 *            device computes y = x / keep_prob * bit and mask = bit / keep_prob. The quotient
 *            is rounded once to the output's precision (through double where the device has
 *            it: OpenCL lets a float division be 2.5 ulp off), and mask's 1 / keep_prob is
 *            rounded on the host as the CPU rounds it, so y and mask are the CPU's bits.
 *            keep_prob stays in host memory (host_memory_inputs): only the host reads it.
 *
 * dtypes that never live in device memory (int32, bool, ...) keep the CPU kernels of ArgMax and
 * Equal with their tensors in host memory (cpu_select.c registers them for OPENCL with any
 * dtype; the exact-dtype entries below come first in the registry's lookup).
 *
 * A kernel that succeeds allocates nothing from rill's heap once warm (see rill__cl_launch):
 * Dropout's host bits live in its per-session state; the temporary device buffers (Equal's
 * result, Dropout's bits) are OpenCL's, released right after the enqueue (OpenCL keeps them
 * alive until the kernel has run). */
#include "../kernel.h"
#include "cl_kernels.h"

#include <assert.h>
#include <math.h>
#include <string.h>

const char rill__cl_source_select[] =
    "#ifdef IS_DOUBLE\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    /* x viewed as [n / inner, len, inner]; output element i = (a, k) scans x[a, 0..len, k]. */
    "__kernel void sel_argmax(__global long *o, __global const T *x, long len, long inner,\n"
    "                         long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long a = i / inner, k = i - a * inner;\n"
    "    __global const T *p = x + a * len * inner + k;\n"
    "    ACC bv = LD(p, 0);\n"
    "    long best = 0;\n"
    "    for (long j = 1; j < len; j++) {\n"
    "        ACC v = LD(p, j * inner);\n"
    "        if (v > bv || (isnan(v) && !isnan(bv))) {\n"
    "            bv = v;\n"
    "            best = j;\n"
    "        }\n"
    "    }\n"
    "    o[i] = best;\n"
    "}\n"
    "__kernel void sel_equal(__global uchar *o, __global const T *a, __global const T *b,\n"
    "                        bcast_t bc, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long ia, ib;\n"
    "    bcast_offsets(&bc, i, &ia, &ib);\n"
    "    o[i] = LD(a, ia) == LD(b, ib);\n"
    "}\n"
    "__kernel void sel_equal_long(__global uchar *o, __global const long *a,\n"
    "                             __global const long *b, bcast_t bc, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    long ia, ib;\n"
    "    bcast_offsets(&bc, i, &ia, &ib);\n"
    "    o[i] = a[ia] == b[ib];\n"
    "}\n"
    /* bits: the host's keep bits (0 or 1); one: 1 / keep rounded to T on the host. */
    "__kernel void sel_dropout(__global T *y, __global T *mask, __global const T *x,\n"
    "                          __global const uchar *bits, ACC keep, ACC one, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "#if defined(IS_DOUBLE) || !defined(cl_khr_fp64)\n"
    "    ACC q = LD(x, i) / keep;\n"
    "#else\n"
    "    ACC q = (ACC)((double)LD(x, i) / (double)keep);\n"
    "#endif\n"
    "    ST(y, i, q * (ACC)bits[i]);\n"
    "    ST(mask, i, bits[i] ? one : (ACC)0);\n"
    "}\n";

/* --- shared host helpers --- */

/* Input i must be in ctx->device's memory: anything else is a placement bug upstream, reported
 * rather than handed to OpenCL as a bogus handle. */
static bool on_device(rill__kctx *ctx, int i)
{
    const rill_tensor *t = ctx->inputs[i];
    if (t->buf->dev == ctx->device) return true;
    rill__kctx_fail(ctx, RILL_INTERNAL, "%s: input %d is not in the memory of %s",
                    ctx->node->op->name, i, ctx->device->name);
    return false;
}

/* double needs the device's fp64 (placement avoids it; this guards direct calls). */
static bool dtype_ok(rill__kctx *ctx, rill_dtype t)
{
    if (t != RILL_DOUBLE || ctx->device->fp64) return true;
    rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "%s: %s has no double precision support",
                    ctx->node->op->name, ctx->device->name);
    return false;
}

/* Records an OpenCL failure (err != CL_SUCCESS) as ctx's. */
static void fail_cl(rill__kctx *ctx, cl_int err, const char *what)
{
    rill_status *s = rill_status_new();
    rill__cl_check(err, what, s);
    rill__kctx_fail_with(ctx, s);
}

/* A new device buffer of n bytes (OpenCL's, not rill's heap), filled from src when not NULL;
 * NULL with ctx failed. The caller releases it. */
static cl_mem temp_buffer(rill__kctx *ctx, size_t n, const void *src, const char *what)
{
    cl_int err;
    cl_mem_flags f = src ? CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR : CL_MEM_WRITE_ONLY;
    cl_mem m = clCreateBuffer(rill__cl(ctx->device)->ctx, f, n, (void *)src, &err);
    if (err == CL_SUCCESS) return m;
    fail_cl(ctx, err, what);
    return NULL;
}

/* A scalar argument of the program's compute type (ACC): double for double, float otherwise. */
typedef struct sel_acc {
    union {
        cl_float f;
        cl_double d;
    } v;
    size_t size;
} sel_acc;

static sel_acc acc_of(rill_dtype t, double x)
{
    sel_acc a;
    if (t == RILL_DOUBLE) {
        a.v.d = x;
        a.size = sizeof(cl_double);
    } else {
        a.v.f = (cl_float)x;
        a.size = sizeof(cl_float);
    }
    return a;
}
#define SEL_ACC(a) ((rill__cl_arg){(a).size, &(a).v})

/* --- ArgMax --- */

static void argmax_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    rill_shape os;
    int64_t len, inner;
    if (!rill__check_argmax(ctx, x, &os, &len, &inner)) return;
    if (!dtype_ok(ctx, x->dtype) || !on_device(ctx, 0)) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_INT64, &os);
    if (!out || out->numel == 0) return;
    cl_mem om = rill__cl_mem(out), xm = rill__cl_mem(x);
    cl_long l = len, in = inner, n = out->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(om), RILL__CL_ARG(xm), RILL__CL_ARG(l), RILL__CL_ARG(in),
                           RILL__CL_ARG(n)};
    rill__cl_launch(ctx, "sel_argmax", x->dtype, args, 5, n);
}

/* --- Equal --- */

/* Host mirror of cl_common.c's bcast_t (laid out as cl_math.c's cl_bcast). */
typedef struct sel_bcast {
    cl_int rank, pad_;
    cl_long dims[RILL_MAX_DIMS];
    cl_long a_strides[RILL_MAX_DIMS];
    cl_long b_strides[RILL_MAX_DIMS];
} sel_bcast;
static_assert(sizeof(sel_bcast) == 8 + 3 * 8 * RILL_MAX_DIMS, "sel_bcast layout");

static void equal_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *y = ctx->inputs[1];
    rill__bcast bc;
    if (!rill__check_bcast(ctx, x, y, &bc)) return;
    if (!dtype_ok(ctx, x->dtype) || !on_device(ctx, 0) || !on_device(ctx, 1)) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_BOOL, &bc.out); /* host memory */
    if (!out || out->numel == 0) return;
    sel_bcast cb = {.rank = bc.rank};
    for (int d = 0; d < bc.rank; d++) {
        cb.dims[d] = bc.out_dims[d];
        cb.a_strides[d] = bc.a_strides[d];
        cb.b_strides[d] = bc.b_strides[d];
    }
    size_t bytes = (size_t)out->numel;
    cl_mem tmp = temp_buffer(ctx, bytes, NULL, "allocate Equal's result");
    if (!tmp) return;
    cl_mem xm = rill__cl_mem(x), ym = rill__cl_mem(y);
    cl_long n = out->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(tmp), RILL__CL_ARG(xm), RILL__CL_ARG(ym), RILL__CL_ARG(cb),
                           RILL__CL_ARG(n)};
    const char *name = x->dtype == RILL_INT64 ? "sel_equal_long" : "sel_equal";
    if (rill__cl_launch(ctx, name, x->dtype, args, 5, n)) {
        /* A host-memory output must hold its values when the kernel returns. */
        cl_int err = clEnqueueReadBuffer(rill__cl(ctx->device)->queue, tmp, CL_TRUE, 0, bytes,
                                         out->buf->data, 0, NULL, NULL);
        if (err != CL_SUCCESS) fail_cl(ctx, err, "read Equal's result");
    }
    clReleaseMemObject(tmp);
}

/* --- Dropout --- */

/* A Dropout node's per-session state: its generator and the host buffer of keep bits. */
typedef struct dropout_state {
    void *rng;     /* rill__kctx_rng's state: the CPU kernel's generator, seeded alike */
    uint8_t *bits; /* cap bytes */
    size_t cap;
} dropout_state;

static void dropout_state_free(void *p)
{
    dropout_state *st = p;
    if (!st) return;
    rill__kctx_rng_free(st->rng);
    rill__free(st->bits);
    rill__free(st);
}

/* ctx's state, made on first use, with room for n bits. */
static dropout_state *dropout_state_of(rill__kctx *ctx, size_t n)
{
    dropout_state *st = *ctx->state;
    if (!st) {
        st = rill__calloc(1, sizeof *st);
        RILL_CHECK_ALLOC(st);
        *ctx->state = st;
    }
    if (st->cap < n) {
        rill__free(st->bits);
        st->bits = rill__malloc(n);
        RILL_CHECK_ALLOC(st->bits);
        st->cap = n;
    }
    return st;
}

static void dropout_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *kp = ctx->inputs[1];
    if (!rill__tensor_on_host(kp)) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "%s: keep_prob must be in host memory",
                        ctx->node->op->name);
        return;
    }
    double keep;
    if (!rill__check_keep_prob(ctx, kp, &keep)) return;
    if (!dtype_ok(ctx, x->dtype) || !on_device(ctx, 0)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    rill_tensor *mask = y ? rill__kctx_alloc_output(ctx, 1, x->dtype, &x->shape) : NULL;
    if (!mask || x->numel == 0) return;
    size_t n = (size_t)x->numel;
    dropout_state *st = dropout_state_of(ctx, n);
    /* The CPU kernel's draws: rill__kctx_rng on a context whose state slot is ours. */
    rill__kctx rc = *ctx;
    rc.state = &st->rng;
    rill__rng *r = rill__kctx_rng(&rc);
    for (size_t i = 0; i < n; i++)
        st->bits[i] = (uint8_t)floor(keep + rill__rng_uniform(r)); /* 1 with probability keep */
    /* The mask's 1 / keep rounded to x's dtype as the CPU rounds it (exact in ACC after). */
    double one = 1.0 / keep, one_t;
    char elem[8];
    rill__convert(x->dtype, elem, RILL_DOUBLE, &one, 1);
    rill__convert(RILL_DOUBLE, &one_t, x->dtype, elem, 1);
    cl_mem bits = temp_buffer(ctx, n, st->bits, "upload Dropout's keep bits");
    if (!bits) return;
    cl_mem ym = rill__cl_mem(y), mm = rill__cl_mem(mask), xm = rill__cl_mem(x);
    sel_acc k = acc_of(x->dtype, keep), o = acc_of(x->dtype, one_t);
    cl_long cn = x->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(ym), RILL__CL_ARG(mm), RILL__CL_ARG(xm), RILL__CL_ARG(bits),
                           SEL_ACC(k),       SEL_ACC(o),       RILL__CL_ARG(cn)};
    rill__cl_launch(ctx, "sel_dropout", x->dtype, args, 7, cn);
    clReleaseMemObject(bits); /* freed by OpenCL once the kernel has run */
}

/* --- registrations --- */

#define SEL_K(OP, FN, T, HOST_IN, HOST_OUT, FREE)                                                  \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = T, .fn = FN, .state_free = FREE,               \
        .host_memory_inputs = HOST_IN, .host_memory_outputs = HOST_OUT                             \
    }
#define SEL_KERNEL(OP, FN, HOST_IN, HOST_OUT, FREE)                                                \
    SEL_K(OP, FN, RILL_FLOAT, HOST_IN, HOST_OUT, FREE),                                            \
        SEL_K(OP, FN, RILL_DOUBLE, HOST_IN, HOST_OUT, FREE),                                       \
        SEL_K(OP, FN, RILL_HALF, HOST_IN, HOST_OUT, FREE)

const rill__kernel_def rill__opencl_kernels_select[] = {
    SEL_KERNEL("ArgMax", argmax_kernel, 0, 0, NULL),
    /* the bool output (output 0) in host memory */
    SEL_KERNEL("Equal", equal_kernel, 0, 1u << 0, NULL),
    SEL_K("Equal", equal_kernel, RILL_INT64, 0, 1u << 0, NULL),
    /* keep_prob (input 1) in host memory */
    SEL_KERNEL("Dropout", dropout_kernel, 1u << 1, 0, dropout_state_free),
    {0},
};
