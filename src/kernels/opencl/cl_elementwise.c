/* cl_elementwise.c - OpenCL kernels of the element-wise ops of graph/ops_elementwise.c (CPU
 * twins in src/kernels/cpu/cpu_elementwise.c): the float unary ops, IsNan / IsInf / IsFinite,
 * the float binary ops and gradient helpers, the comparisons, and Select / SelectV2, for float,
 * double and half.
 *
 * Table-driven: each op is one line of EW_UNARY, EW_PRED, EW_BINARY or EW_CMP naming its id and
 * its OpenCL C expression (of x and the alpha attr a for unary ops, of x and y for binary ones);
 * the tables make the OpenCL source (one switch per kernel), the host kernels and the
 * registrations. Expressions are computed in ACC (float for half, as the CPU widens half to
 * float). Binary ops broadcast through cl_common.c's bcast_offsets. bool never lives in device
 * memory: the comparisons and predicates compute into a temporary device buffer that is read
 * back into their host-memory output (as cl_select.c's Equal), and Select's condition (a host
 * input) is uploaded to one. Digamma is the CPU's recurrence and asymptotic series in ACC.
 *
 * The integer and bool dtypes do not live on a GPU: their OpenCL entries (host_kernel) run the
 * CPU kernel with every tensor in host memory, as the other OpenCL tables do for int32. */
#include "../kernel.h"
#include "cl_kernels.h"

#include <assert.h>
#include <string.h>

/* X(id, Name, expr) */
#define EW_UNARY(X)                                                                                \
    X(0, Abs, "fabs(x)")                                                                           \
    X(1, Sign, "x > 0 ? (ACC)1 : x < 0 ? (ACC)-1 : x")                                             \
    X(2, Rsqrt, "(ACC)1 / sqrt(x)")                                                                \
    X(3, Reciprocal, "(ACC)1 / x")                                                                 \
    X(4, Inv, "(ACC)1 / x")                                                                        \
    X(5, Round, "rint(x)")                                                                         \
    X(6, Rint, "rint(x)")                                                                          \
    X(7, Floor, "floor(x)")                                                                        \
    X(8, Ceil, "ceil(x)")                                                                          \
    X(9, Log1p, "log1p(x)")                                                                        \
    X(10, Expm1, "expm1(x)")                                                                       \
    X(11, Softplus, "x > -EW_SP_TH ? x : x < EW_SP_TH ? exp(x) : log1p(exp(x))")                   \
    X(12, Softsign, "x / ((ACC)1 + fabs(x))")                                                      \
    X(13, Elu, "x < 0 ? expm1(x) : x")                                                             \
    X(14, Selu,                                                                                    \
      "x < 0 ? (ACC)(EW_SELU_SCALE * EW_SELU_ALPHA) * expm1(x) : (ACC)EW_SELU_SCALE * x")          \
    X(15, LeakyRelu, "x > 0 ? x : x * a")                                                          \
    X(16, Relu6, "isnan(x) ? x : x < 0 ? (ACC)0 : x > 6 ? (ACC)6 : x")                             \
    X(17, Erf, "erf(x)")                                                                           \
    X(18, Erfc, "erfc(x)")                                                                         \
    X(19, Sin, "sin(x)")                                                                           \
    X(20, Cos, "cos(x)")                                                                           \
    X(21, Tan, "tan(x)")                                                                           \
    X(22, Asin, "asin(x)")                                                                         \
    X(23, Acos, "acos(x)")                                                                         \
    X(24, Atan, "atan(x)")                                                                         \
    X(25, Sinh, "sinh(x)")                                                                         \
    X(26, Cosh, "cosh(x)")                                                                         \
    X(27, Asinh, "asinh(x)")                                                                       \
    X(28, Acosh, "acosh(x)")                                                                       \
    X(29, Atanh, "atanh(x)")                                                                       \
    X(30, Lgamma, "lgamma(x)")                                                                     \
    X(31, Digamma, "ew_digamma(x)")

#define EW_PRED(X)                                                                                 \
    X(0, IsNan, "isnan(x)")                                                                        \
    X(1, IsInf, "isinf(x)")                                                                        \
    X(2, IsFinite, "isfinite(x)")

/* x, y: the op's two inputs (the gradient helpers: (y, dy) or (dy, features) as TF's). */
#define EW_BINARY(X)                                                                               \
    X(0, Pow, "pow(x, y)")                                                                         \
    X(1, FloorDiv, "floor(x / y)")                                                                 \
    X(2, FloorMod, "ew_floormod(x, y)")                                                            \
    X(3, TruncateMod, "fmod(x, y)")                                                                \
    X(4, RealDiv, "x / y")                                                                         \
    X(5, SquaredDifference, "(x - y) * (x - y)")                                                   \
    X(6, Atan2, "atan2(x, y)")                                                                     \
    X(7, Xdivy, "x == 0 && !isnan(y) ? (ACC)0 : x / y")                                            \
    X(8, Xlogy, "x == 0 && !isnan(y) ? (ACC)0 : x * log(y)")                                       \
    X(9, RsqrtGrad, "(ACC)-0.5 * y * x * x * x")                                                   \
    X(10, ReciprocalGrad, "-y * x * x")                                                            \
    X(11, InvGrad, "-y * x * x")                                                                   \
    X(12, SoftplusGrad, "x / ((ACC)1 + exp(-y))")                                                  \
    X(13, SoftsignGrad, "x / (((ACC)1 + fabs(y)) * ((ACC)1 + fabs(y)))")                           \
    X(14, EluGrad, "y < 0 ? x * (y + (ACC)1) : x")                                                 \
    X(15, SeluGrad,                                                                                \
      "y < 0 ? x * (y + (ACC)(EW_SELU_SCALE * EW_SELU_ALPHA)) : x * (ACC)EW_SELU_SCALE")           \
    X(16, Relu6Grad, "y > 0 && y < 6 ? x : (ACC)0")                                                \
    X(17, LeakyReluGrad, "y > 0 ? x : x * a")                                                      \
    X(18, DivNoNan, "y == 0 ? (ACC)0 : x / y")

#define EW_CMP(X)                                                                                  \
    X(0, Less, "x < y")                                                                            \
    X(1, LessEqual, "x <= y")                                                                      \
    X(2, Greater, "x > y")                                                                         \
    X(3, GreaterEqual, "x >= y")                                                                   \
    X(4, NotEqual, "x != y")

#define EW_CASE(id, nm, expr) "    case " #id ": return " expr ";\n"

const char rill__cl_source_elementwise[] =
    "#ifdef IS_DOUBLE\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#define EW_SP_TH -34.043653389117154\n"
    "#else\n"
    "#define EW_SP_TH -13.942385152878742f\n"
    "#endif\n"
    "#define EW_SELU_SCALE 1.0507009873554804934193349852946\n"
    "#define EW_SELU_ALPHA 1.6732632423543772848170429916717\n"
    "#define EW_PI 3.14159265358979323846\n"
    "ACC ew_digamma(ACC x) {\n"
    "    if (isnan(x)) return x;\n"
    "    if (isinf(x) && x < 0) return NAN;\n"
    "    if (x <= 0 && x == floor(x)) return NAN;\n"
    "    ACC r = 0;\n"
    "    if (x < 0) {\n"
    "        r = -(ACC)EW_PI / tan((ACC)EW_PI * x);\n"
    "        x = 1 - x;\n"
    "    }\n"
    "    while (x < 10) {\n"
    "        r -= 1 / x;\n"
    "        x += 1;\n"
    "    }\n"
    "    if (isinf(x)) return r + x;\n"
    "    ACC z = 1 / (x * x);\n"
    "    ACC p = z * ((ACC)(1.0 / 12) - z * ((ACC)(1.0 / 120) - z * ((ACC)(1.0 / 252) -\n"
    "            z * ((ACC)(1.0 / 240) - z * (ACC)(1.0 / 132)))));\n"
    "    return r + log(x) - (ACC)0.5 / x - p;\n"
    "}\n"
    "ACC ew_floormod(ACC x, ACC y) {\n"
    "    ACC r = fmod(x, y);\n"
    "    return (r != 0 && ((y < 0) != (r < 0))) ? r + y : r;\n"
    "}\n"
    "ACC ew_un(int op, ACC x, ACC a) {\n"
    "    switch (op) {\n" EW_UNARY(
        EW_CASE) "    }\n"
                 "    return x;\n"
                 "}\n"
                 "int ew_pr(int op, ACC x) {\n"
                 "    switch (op) {\n" EW_PRED(
                     EW_CASE) "    }\n"
                              "    return 0;\n"
                              "}\n"
                              "ACC ew_bin(int op, ACC x, ACC y, ACC a) {\n"
                              "    switch (op) {\n" EW_BINARY(
                                  EW_CASE) "    }\n"
                                           "    return x;\n"
                                           "}\n"
                                           "int ew_cm(int op, ACC x, ACC y) {\n"
                                           "    switch (op) {\n" EW_CMP(
                                               EW_CASE) "    }\n"
                                                        "    return 0;\n"
                                                        "}\n"
                                                        "__kernel void ew_unary(__global const T "
                                                        "*x, __global T *o, int op, ACC a, long n) "
                                                        "{\n"
                                                        "    long i = get_global_id(0);\n"
                                                        "    if (i < n) ST(o, i, ew_un(op, LD(x, "
                                                        "i), a));\n"
                                                        "}\n"
                                                        "__kernel void ew_pred(__global const T "
                                                        "*x, __global uchar *o, int op, long n) {\n"
                                                        "    long i = get_global_id(0);\n"
                                                        "    if (i < n) o[i] = ew_pr(op, LD(x, i)) "
                                                        "? 1 : 0;\n"
                                                        "}\n"
                                                        "__kernel void ew_binary(__global const T "
                                                        "*a, __global const T *b, __global T *o, "
                                                        "int op,\n"
                                                        "                        ACC alpha, "
                                                        "bcast_t bc, long n) {\n"
                                                        "    long i = get_global_id(0);\n"
                                                        "    if (i >= n) return;\n"
                                                        "    long ia, ib;\n"
                                                        "    bcast_offsets(&bc, i, &ia, &ib);\n"
                                                        "    ST(o, i, ew_bin(op, LD(a, ia), LD(b, "
                                                        "ib), alpha));\n"
                                                        "}\n"
                                                        "__kernel void ew_cmp(__global const T *a, "
                                                        "__global const T *b, __global uchar *o, "
                                                        "int op,\n"
                                                        "                     bcast_t bc, long n) "
                                                        "{\n"
                                                        "    long i = get_global_id(0);\n"
                                                        "    if (i >= n) return;\n"
                                                        "    long ia, ib;\n"
                                                        "    bcast_offsets(&bc, i, &ia, &ib);\n"
                                                        "    o[i] = ew_cm(op, LD(a, ia), LD(b, "
                                                        "ib)) ? 1 : 0;\n"
                                                        "}\n"
                                                        /* Select: output element i reads c, x, y at
                                                           sel_t's strides (0 on broadcast dims). */
                                                        "typedef struct { int rank; long "
                                                        "dims[MAXD]; long c_strides[MAXD]; long "
                                                        "x_strides[MAXD];\n"
                                                        "                 long y_strides[MAXD]; } "
                                                        "sel3_t;\n"
                                                        "__kernel void ew_select(__global const "
                                                        "uchar *c, __global const T *x, __global "
                                                        "const T *y,\n"
                                                        "                        __global T *o, "
                                                        "sel3_t m, long n) {\n"
                                                        "    long i = get_global_id(0);\n"
                                                        "    if (i >= n) return;\n"
                                                        "    long k = i, ic = 0, ix = 0, iy = 0;\n"
                                                        "    for (int d = m.rank - 1; d >= 0; d--) "
                                                        "{\n"
                                                        "        long q = k / m.dims[d], r = k - q "
                                                        "* m.dims[d];\n"
                                                        "        ic += r * m.c_strides[d];\n"
                                                        "        ix += r * m.x_strides[d];\n"
                                                        "        iy += r * m.y_strides[d];\n"
                                                        "        k = q;\n"
                                                        "    }\n"
                                                        "    ST(o, i, c[ic] ? LD(x, ix) : LD(y, "
                                                        "iy));\n"
                                                        "}\n";

/* --- host helpers --- */

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

static void fail_cl(rill__kctx *ctx, cl_int err, const char *what)
{
    rill_status *s = rill_status_new();
    rill__cl_check(err, what, s);
    rill__kctx_fail_with(ctx, s);
}

/* A device buffer of n bytes (OpenCL's), filled from src when not NULL; the caller releases. */
static cl_mem temp_buffer(rill__kctx *ctx, size_t n, const void *src, const char *what)
{
    cl_int err;
    cl_mem_flags f = src ? CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR : CL_MEM_READ_WRITE;
    cl_mem m = clCreateBuffer(rill__cl(ctx->device)->ctx, f, n, (void *)src, &err);
    if (err == CL_SUCCESS) return m;
    fail_cl(ctx, err, what);
    return NULL;
}

/* Reads tmp back into the host tensor out (a host-memory output must hold its values when the
 * kernel returns), then releases tmp. */
static void read_back(rill__kctx *ctx, cl_mem tmp, rill_tensor *out, bool launched)
{
    if (launched) {
        cl_int err = clEnqueueReadBuffer(rill__cl(ctx->device)->queue, tmp, CL_TRUE, 0,
                                         out->buf->size, out->buf->data, 0, NULL, NULL);
        if (err != CL_SUCCESS) fail_cl(ctx, err, "read a host-memory result");
    }
    clReleaseMemObject(tmp);
}

typedef struct ew_acc {
    union {
        cl_float f;
        cl_double d;
    } v;
    size_t size;
} ew_acc;

static ew_acc acc_of(rill_dtype t, double x)
{
    ew_acc a;
    if (t == RILL_DOUBLE) {
        a.v.d = x;
        a.size = sizeof(cl_double);
    } else {
        a.v.f = (cl_float)x;
        a.size = sizeof(cl_float);
    }
    return a;
}
#define EW_ACC(a) ((rill__cl_arg){(a).size, &(a).v})

typedef struct ew_bcast {
    cl_int rank, pad_;
    cl_long dims[RILL_MAX_DIMS];
    cl_long a_strides[RILL_MAX_DIMS];
    cl_long b_strides[RILL_MAX_DIMS];
} ew_bcast;
static_assert(sizeof(ew_bcast) == 8 + 3 * 8 * RILL_MAX_DIMS, "ew_bcast layout");

typedef struct ew_sel3 {
    cl_int rank, pad_;
    cl_long dims[RILL_MAX_DIMS];
    cl_long c_strides[RILL_MAX_DIMS];
    cl_long x_strides[RILL_MAX_DIMS];
    cl_long y_strides[RILL_MAX_DIMS];
} ew_sel3;
static_assert(sizeof(ew_sel3) == 8 + 4 * 8 * RILL_MAX_DIMS, "ew_sel3 layout");

/* --- the kernels --- */

static void unary(rill__kctx *ctx, int op)
{
    const rill_tensor *x = ctx->inputs[0];
    if (!dtype_ok(ctx, x->dtype) || !on_device(ctx, 0)) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!out || out->numel == 0) return;
    ew_acc a = acc_of(x->dtype, rill__attr_float(ctx->node, "alpha", 0.2));
    cl_mem xm = rill__cl_mem(x), om = rill__cl_mem(out);
    cl_int cop = op;
    cl_long n = out->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(xm), RILL__CL_ARG(om), RILL__CL_ARG(cop), EW_ACC(a),
                           RILL__CL_ARG(n)};
    rill__cl_launch(ctx, "ew_unary", x->dtype, args, 5, n);
}

static void pred(rill__kctx *ctx, int op)
{
    const rill_tensor *x = ctx->inputs[0];
    if (!dtype_ok(ctx, x->dtype) || !on_device(ctx, 0)) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_BOOL, &x->shape); /* host memory */
    if (!out || out->numel == 0) return;
    cl_mem tmp = temp_buffer(ctx, (size_t)out->numel, NULL, "allocate a bool result");
    if (!tmp) return;
    cl_mem xm = rill__cl_mem(x);
    cl_int cop = op;
    cl_long n = out->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(xm), RILL__CL_ARG(tmp), RILL__CL_ARG(cop), RILL__CL_ARG(n)};
    read_back(ctx, tmp, out, rill__cl_launch(ctx, "ew_pred", x->dtype, args, 4, n));
}

static void binary(rill__kctx *ctx, int op, bool cmp)
{
    const rill_tensor *x = ctx->inputs[0], *y = ctx->inputs[1];
    rill__bcast bc;
    if (!rill__check_bcast(ctx, x, y, &bc)) return;
    if (!dtype_ok(ctx, x->dtype) || !on_device(ctx, 0) || !on_device(ctx, 1)) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, cmp ? RILL_BOOL : x->dtype, &bc.out);
    if (!out || out->numel == 0) return;
    ew_bcast cb = {.rank = bc.rank};
    for (int d = 0; d < bc.rank; d++) {
        cb.dims[d] = bc.out_dims[d];
        cb.a_strides[d] = bc.a_strides[d];
        cb.b_strides[d] = bc.b_strides[d];
    }
    cl_mem xm = rill__cl_mem(x), ym = rill__cl_mem(y);
    cl_int cop = op;
    cl_long n = out->numel;
    if (cmp) {
        cl_mem tmp = temp_buffer(ctx, (size_t)n, NULL, "allocate a bool result");
        if (!tmp) return;
        rill__cl_arg args[] = {RILL__CL_ARG(xm),  RILL__CL_ARG(ym), RILL__CL_ARG(tmp),
                               RILL__CL_ARG(cop), RILL__CL_ARG(cb), RILL__CL_ARG(n)};
        read_back(ctx, tmp, out, rill__cl_launch(ctx, "ew_cmp", x->dtype, args, 6, n));
        return;
    }
    ew_acc a = acc_of(x->dtype, rill__attr_float(ctx->node, "alpha", 0.2));
    cl_mem om = rill__cl_mem(out);
    rill__cl_arg args[] = {RILL__CL_ARG(xm), RILL__CL_ARG(ym), RILL__CL_ARG(om), RILL__CL_ARG(cop),
                           EW_ACC(a),        RILL__CL_ARG(cb), RILL__CL_ARG(n)};
    rill__cl_launch(ctx, "ew_binary", x->dtype, args, 7, n);
}

/* Row-major strides of s laid against an output of rank r, right-aligned; 0 on dims of size 1
 * (broadcast) and on the dims s lacks. */
static void bstrides(const rill_shape *s, int r, cl_long *st)
{
    int64_t k = 1;
    for (int d = r - 1; d >= 0; d--) {
        int j = d - (r - s->rank);
        if (j < 0) {
            st[d] = 0;
            continue;
        }
        st[d] = s->dims[j] == 1 ? 0 : k;
        k *= s->dims[j];
    }
}

static void run_select(rill__kctx *ctx, const rill_shape *os, ew_sel3 *m)
{
    const rill_tensor *c = ctx->inputs[0], *x = ctx->inputs[1], *y = ctx->inputs[2];
    if (!rill__tensor_on_host(c)) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "%s: the condition must be in host memory",
                        ctx->node->op->name);
        return;
    }
    if (!dtype_ok(ctx, x->dtype) || !on_device(ctx, 1) || !on_device(ctx, 2)) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, os);
    if (!out || out->numel == 0) return;
    cl_mem cm = temp_buffer(ctx, c->numel ? (size_t)c->numel : 1,
                            c->numel ? c->buf->data : (const void *)"", "upload a condition");
    if (!cm) return;
    cl_mem xm = rill__cl_mem(x), ym = rill__cl_mem(y), om = rill__cl_mem(out);
    cl_long n = out->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(cm), RILL__CL_ARG(xm), RILL__CL_ARG(ym),
                           RILL__CL_ARG(om), RILL__CL_ARG(*m), RILL__CL_ARG(n)};
    rill__cl_launch(ctx, "ew_select", x->dtype, args, 6, n);
    clReleaseMemObject(cm); /* freed by OpenCL once the kernel has run */
}

static void select_kernel(rill__kctx *ctx)
{
    const rill_tensor *c = ctx->inputs[0], *x = ctx->inputs[1], *y = ctx->inputs[2];
    char a[96], b[96];
    if (!rill_shape_equal(&x->shape, &y->shape)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "'then' and 'else' must have the same size.  but are: %s vs. %s",
                        rill_shape_str(&x->shape, a, sizeof a),
                        rill_shape_str(&y->shape, b, sizeof b));
        return;
    }
    bool same = rill_shape_equal(&c->shape, &x->shape);
    bool scalar = c->shape.rank == 0;
    bool vec = c->shape.rank == 1 && x->shape.rank >= 1 && c->shape.dims[0] == x->shape.dims[0];
    if (!same && !scalar && !vec) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        c->shape.rank == 1 ? "Condition vector size (%lld) must match the first "
                                             "dimension of 'then' (%s)"
                                           : "'cond' (rank %lld) must be a scalar, a vector or "
                                             "have the same shape as 'then' (%s)",
                        (long long)(c->shape.rank == 1 ? c->shape.dims[0] : c->shape.rank),
                        rill_shape_str(&x->shape, a, sizeof a));
        return;
    }
    ew_sel3 m = {.rank = x->shape.rank};
    for (int d = 0; d < m.rank; d++) m.dims[d] = x->shape.dims[d];
    bstrides(&x->shape, m.rank, m.x_strides);
    bstrides(&x->shape, m.rank, m.y_strides);
    if (same) {
        bstrides(&x->shape, m.rank, m.c_strides);
    } else if (vec && !scalar) {
        m.c_strides[0] = 1;
    }
    /* dims of size 1 read index 0 anyway: bstrides' zeros there are harmless */
    run_select(ctx, &x->shape, &m);
}

static void select_v2_kernel(rill__kctx *ctx)
{
    const rill_tensor *c = ctx->inputs[0], *x = ctx->inputs[1], *y = ctx->inputs[2];
    rill__bcast bxy, bc;
    if (!rill__check_bcast(ctx, x, y, &bxy)) return;
    if (!rill__bcast_init(&bc, &c->shape, &bxy.out)) {
        char a[96], b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "condition %s and the broadcast shape of then and else %s are not "
                        "broadcastable",
                        rill_shape_str(&c->shape, a, sizeof a),
                        rill_shape_str(&bxy.out, b, sizeof b));
        return;
    }
    const rill_shape *os = &bc.out;
    ew_sel3 m = {.rank = os->rank};
    for (int d = 0; d < m.rank; d++) m.dims[d] = os->dims[d];
    bstrides(&c->shape, m.rank, m.c_strides);
    bstrides(&x->shape, m.rank, m.x_strides);
    bstrides(&y->shape, m.rank, m.y_strides);
    run_select(ctx, os, &m);
}

/* The CPU kernel of ctx's op and dtype, run with every tensor in host memory. */
static void host_kernel(rill__kctx *ctx)
{
    const rill__kernel_def *k =
        rill__kernel_lookup(ctx->node->op->name, "CPU", rill__node_kernel_dtype(ctx->node));
    if (!k) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "%s: no CPU kernel for %s", ctx->node->op->name,
                        rill_dtype_name(rill__node_kernel_dtype(ctx->node)));
        return;
    }
    k->fn(ctx);
}

#define EW_UN_FN(id, nm, expr)                                                                     \
    static void k_un_##nm(rill__kctx *ctx)                                                         \
    {                                                                                              \
        unary(ctx, id);                                                                            \
    }
#define EW_PR_FN(id, nm, expr)                                                                     \
    static void k_pr_##nm(rill__kctx *ctx)                                                         \
    {                                                                                              \
        pred(ctx, id);                                                                             \
    }
#define EW_BIN_FN(id, nm, expr)                                                                    \
    static void k_bin_##nm(rill__kctx *ctx)                                                        \
    {                                                                                              \
        binary(ctx, id, false);                                                                    \
    }
#define EW_CMP_FN(id, nm, expr)                                                                    \
    static void k_cmp_##nm(rill__kctx *ctx)                                                        \
    {                                                                                              \
        binary(ctx, id, true);                                                                     \
    }
EW_UNARY(EW_UN_FN)
EW_PRED(EW_PR_FN)
EW_BINARY(EW_BIN_FN)
EW_CMP(EW_CMP_FN)

#define ALL (~0u)
#define R(op_, t_, fn_, hin, hout)                                                                 \
    {.op = op_,                                                                                    \
     .device_type = "OPENCL",                                                                      \
     .dtype = t_,                                                                                  \
     .fn = fn_,                                                                                    \
     .host_memory_inputs = hin,                                                                    \
     .host_memory_outputs = hout},
#define R3(op, fn, hin, hout)                                                                      \
    R(op, RILL_FLOAT, fn, hin, hout)                                                               \
    R(op, RILL_DOUBLE, fn, hin, hout) R(op, RILL_HALF, fn, hin, hout)
#define RHOST(op, t)             R(op, t, host_kernel, ALL, ALL)
#define EW_UN_REG(id, nm, expr)  R3(#nm, k_un_##nm, 0, 0)
#define EW_PR_REG(id, nm, expr)  R3(#nm, k_pr_##nm, 0, 1u)
#define EW_BIN_REG(id, nm, expr) R3(#nm, k_bin_##nm, 0, 0)
#define EW_CMP_REG(id, nm, expr)                                                                   \
    R3(#nm, k_cmp_##nm, 0, 1u) RHOST(#nm, RILL_INT32) RHOST(#nm, RILL_INT64)

/* clang-format off */
const rill__kernel_def rill__opencl_kernels_elementwise[] = {
    EW_UNARY(EW_UN_REG)
    EW_PRED(EW_PR_REG)
    EW_BINARY(EW_BIN_REG)
    EW_CMP(EW_CMP_REG)
    /* the condition (input 0) in host memory */
    R3("Select", select_kernel, 1u, 0)
    R3("SelectV2", select_v2_kernel, 1u, 0)
    /* bool and the integers stay in host memory */
    RHOST("NotEqual", RILL_BOOL)
    RHOST("LogicalAnd", RILL_BOOL)
    RHOST("LogicalOr", RILL_BOOL)
    RHOST("LogicalNot", RILL_BOOL)
    RHOST("Select", RILL_INT32) RHOST("Select", RILL_INT64) RHOST("Select", RILL_BOOL)
    RHOST("SelectV2", RILL_INT32) RHOST("SelectV2", RILL_INT64) RHOST("SelectV2", RILL_BOOL)
    RHOST("Reciprocal", RILL_INT32) RHOST("Reciprocal", RILL_INT64)
    RHOST("Inv", RILL_INT32) RHOST("Inv", RILL_INT64)
    RHOST("Round", RILL_INT32) RHOST("Round", RILL_INT64)
    RHOST("Abs", RILL_INT32) RHOST("Abs", RILL_INT64)
    RHOST("Sign", RILL_INT32) RHOST("Sign", RILL_INT64)
    RHOST("Relu6", RILL_INT32) RHOST("Relu6", RILL_INT64)
    RHOST("Pow", RILL_INT32) RHOST("Pow", RILL_INT64)
    RHOST("FloorDiv", RILL_INT32) RHOST("FloorDiv", RILL_INT64)
    RHOST("FloorMod", RILL_INT32) RHOST("FloorMod", RILL_INT64)
    RHOST("TruncateDiv", RILL_INT32) RHOST("TruncateDiv", RILL_INT64)
    RHOST("TruncateMod", RILL_INT32) RHOST("TruncateMod", RILL_INT64)
    RHOST("SquaredDifference", RILL_INT32) RHOST("SquaredDifference", RILL_INT64)
    {0},
};
/* clang-format on */
