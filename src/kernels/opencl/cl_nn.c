/* cl_nn.c - OpenCL kernels for the neural-network ops: BiasAdd, BiasAddGrad, Relu, ReluGrad,
 * Sigmoid, SigmoidGrad, Tanh, TanhGrad, Softmax and the two softmax cross-entropies.
 *
 * Each op is the CPU kernel's twin (src/kernels/cpu/cpu_nn.c): the same input order, outputs,
 * validation and error texts, then one enqueue instead of the loop. The OpenCL C below is built
 * once per dtype with T / ACC / LD / ST (see cl_kernels.h), so a half tensor is
 * read into float, computed in float and rounded once when stored, as the CPU kernel does with
 * its float scratch. Elementwise kernels take one work item per element; BiasAddGrad one per
 * column (summing rows in order, as the CPU does); Softmax and the cross-entropies one per row,
 * each row in three passes (max, sum of exponentials, write) so no intermediate is stored in T.
 *
 * SparseSoftmaxCrossEntropyWithLogits takes its labels in host memory (bit 1 of
 * host_memory_inputs): they are checked on the host, TensorFlow's "Received a label value of
 * ..." error included, then uploaded as they are (int32 or int64) into a temporary device buffer
 * that is released right after the enqueue (OpenCL keeps it alive until the kernel has run).
 *
 * A kernel that succeeds allocates nothing from rill's heap (a warm training step must not; see
 * rill__cl_launch), only its outputs, which the executor recycles. */
#include "../kernel.h"
#include "cl_kernels.h"

#include <string.h>

const char rill__cl_source_nn[] =
    "#ifdef IS_DOUBLE\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    /* --- elementwise --- */
    "__kernel void nn_relu(__global T *y, __global const T *x, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC v = LD(x, i);\n"
    "    ST(y, i, v > (ACC)0 ? v : (ACC)0);\n"
    "}\n"
    /* f: the features, or Relu's output (positive at the same places). */
    "__kernel void nn_relu_grad(__global T *d, __global const T *g, __global const T *f, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ST(d, i, LD(f, i) > (ACC)0 ? LD(g, i) : (ACC)0);\n"
    "}\n"
    "__kernel void nn_sigmoid(__global T *y, __global const T *x, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ST(y, i, (ACC)1 / ((ACC)1 + exp(-LD(x, i))));\n"
    "}\n"
    "__kernel void nn_sigmoid_grad(__global T *d, __global const T *y, __global const T *dy,\n"
    "                              long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC yi = LD(y, i);\n"
    "    ST(d, i, LD(dy, i) * yi * ((ACC)1 - yi));\n"
    "}\n"
    "__kernel void nn_tanh(__global T *y, __global const T *x, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ST(y, i, tanh(LD(x, i)));\n"
    "}\n"
    "__kernel void nn_tanh_grad(__global T *d, __global const T *y, __global const T *dy, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC yi = LD(y, i);\n"
    "    ST(d, i, LD(dy, i) * ((ACC)1 - yi * yi));\n"
    "}\n"
    /* --- bias --- */
    "__kernel void nn_bias_add(__global T *y, __global const T *x, __global const T *b, long n,\n"
    "                          long cols)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ST(y, i, LD(x, i) + LD(b, i % cols));\n"
    "}\n"
    "__kernel void nn_bias_add_grad(__global T *out, __global const T *g, long rows, long cols)\n"
    "{\n"
    "    long k = get_global_id(0);\n"
    "    if (k >= cols) return;\n"
    "    ACC s = (ACC)0;\n"
    "    for (long r = 0; r < rows; r++) s += LD(g, r * cols + k);\n"
    "    ST(out, k, s);\n"
    "}\n"
    /* --- softmax family: one work item per row --- */
    /* The largest of row x (NaN is skipped unless first; e^(x - max) is NaN then anyway). */
    "ACC nn_row_max(__global const T *x, long cols)\n"
    "{\n"
    "    ACC m = LD(x, 0);\n"
    "    for (long k = 1; k < cols; k++) {\n"
    "        ACC v = LD(x, k);\n"
    "        m = v > m ? v : m;\n"
    "    }\n"
    "    return m;\n"
    "}\n"
    "ACC nn_row_sum_exp(__global const T *x, long cols, ACC m)\n"
    "{\n"
    "    ACC s = (ACC)0;\n"
    "    for (long k = 0; k < cols; k++) s += exp(LD(x, k) - m);\n"
    "    return s;\n"
    "}\n"
    "__kernel void nn_softmax(__global T *y, __global const T *x, long rows, long cols)\n"
    "{\n"
    "    long r = get_global_id(0);\n"
    "    if (r >= rows) return;\n"
    "    __global const T *xr = x + r * cols;\n"
    "    __global T *yr = y + r * cols;\n"
    "    ACC m = nn_row_max(xr, cols);\n"
    "    ACC inv = (ACC)1 / nn_row_sum_exp(xr, cols, m);\n"
    "    for (long k = 0; k < cols; k++) ST(yr, k, exp(LD(xr, k) - m) * inv);\n"
    "}\n"
    /* loss = sum_k p_k * (logsumexp - x_k), backprop = softmax - p. */
    "__kernel void nn_softmax_ce(__global T *loss, __global T *bp, __global const T *x,\n"
    "                            __global const T *p, long rows, long cols)\n"
    "{\n"
    "    long r = get_global_id(0);\n"
    "    if (r >= rows) return;\n"
    "    __global const T *xr = x + r * cols;\n"
    "    __global const T *pr = p + r * cols;\n"
    "    __global T *br = bp + r * cols;\n"
    "    ACC m = nn_row_max(xr, cols);\n"
    "    ACC sum = nn_row_sum_exp(xr, cols, m);\n"
    "    ACC log_sum = log(sum), inv = (ACC)1 / sum, l = (ACC)0;\n"
    "    for (long k = 0; k < cols; k++) {\n"
    "        ACC xk = LD(xr, k) - m, pk = LD(pr, k);\n"
    "        l += pk * (log_sum - xk);\n"
    "        ST(br, k, exp(xk) * inv - pk);\n"
    "    }\n"
    "    ST(loss, r, l);\n"
    "}\n"
    /* One row of the sparse cross-entropy; label checked on the host to lie in [0, cols). */
    "void nn_sparse_row(__global T *loss, __global T *bp, __global const T *x, long label,\n"
    "                   long r, long cols)\n"
    "{\n"
    "    __global const T *xr = x + r * cols;\n"
    "    __global T *br = bp + r * cols;\n"
    "    ACC m = nn_row_max(xr, cols);\n"
    "    ACC sum = nn_row_sum_exp(xr, cols, m);\n"
    "    ACC inv = (ACC)1 / sum;\n"
    "    for (long k = 0; k < cols; k++)\n"
    "        ST(br, k, exp(LD(xr, k) - m) * inv - (k == label ? (ACC)1 : (ACC)0));\n"
    "    ST(loss, r, log(sum) - (LD(xr, label) - m));\n"
    "}\n"
    "__kernel void nn_sparse_softmax_ce(__global T *loss, __global T *bp, __global const T *x,\n"
    "                                   __global const long *labels, long rows, long cols)\n"
    "{\n"
    "    long r = get_global_id(0);\n"
    "    if (r < rows) nn_sparse_row(loss, bp, x, labels[r], r, cols);\n"
    "}\n"
    "__kernel void nn_sparse_softmax_ce32(__global T *loss, __global T *bp, __global const T *x,\n"
    "                                     __global const int *labels, long rows, long cols)\n"
    "{\n"
    "    long r = get_global_id(0);\n"
    "    if (r < rows) nn_sparse_row(loss, bp, x, labels[r], r, cols);\n"
    "}\n";

/* --- enqueueing --- */

/* Whether t is in ctx->device's memory. Anything else (ctx failed) is a placement bug upstream,
 * reported rather than handed to OpenCL as a bogus handle. */
static bool nn_on_device(rill__kctx *ctx, const rill_tensor *t, const char *what)
{
    if (t && t->buf->dev == ctx->device) return true;
    rill__kctx_fail(ctx, RILL_INTERNAL, "%s: %s is not in the memory of %s", ctx->node->op->name,
                    what, ctx->device ? ctx->device->name : "(no device)");
    return false;
}

/* --- validation (the CPU kernels' checks and texts) --- */

static bool is_float_dtype(rill_dtype t)
{
    return t == RILL_FLOAT || t == RILL_DOUBLE || t == RILL_HALF;
}

/* Input i must be a float type equal to input 0's, and on the device. */
static bool check_input(rill__kctx *ctx, int i)
{
    rill_dtype t0 = ctx->inputs[0]->dtype, t = ctx->inputs[i]->dtype;
    if (!is_float_dtype(t0) || t != t0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: input %d has type %s, expected %s",
                        ctx->node->op->name, i, rill_dtype_name(t),
                        rill_dtype_name(is_float_dtype(t0) ? t0 : RILL_FLOAT));
        return false;
    }
    char what[32];
    snprintf(what, sizeof what, "input %d", i);
    return nn_on_device(ctx, ctx->inputs[i], what);
}

/* The elements before the last axis. */
static int64_t outer_rows(const rill_tensor *t)
{
    int64_t c = t->shape.dims[t->shape.rank - 1];
    return c > 0 ? t->numel / c : 0;
}

/* --- kernels --- */

static void unary(rill__kctx *ctx, const char *kname)
{
    const rill_tensor *x = ctx->inputs[0];
    if (!check_input(ctx, 0)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y) return;
    cl_mem ym = rill__cl_mem(y), xm = rill__cl_mem(x);
    cl_long n = x->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(ym), RILL__CL_ARG(xm), RILL__CL_ARG(n)};
    rill__cl_launch(ctx, kname, x->dtype, args, 3, n);
}

/* Two inputs of one shape (gradient ops). */
static void binary(rill__kctx *ctx, const char *kname)
{
    const rill_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
    if (!check_input(ctx, 0) || !check_input(ctx, 1)) return;
    if (!rill_shape_equal(&a->shape, &b->shape)) {
        char sa[96], sb[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Inputs to operation %s of type %s must have the same size and shape.  "
                        "Input 0: %s != input 1: %s",
                        ctx->node->name, ctx->node->op->name,
                        rill_shape_str(&a->shape, sa, sizeof sa),
                        rill_shape_str(&b->shape, sb, sizeof sb));
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, a->dtype, &a->shape);
    if (!y) return;
    cl_mem ym = rill__cl_mem(y), am = rill__cl_mem(a), bm = rill__cl_mem(b);
    cl_long n = a->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(ym), RILL__CL_ARG(am), RILL__CL_ARG(bm), RILL__CL_ARG(n)};
    rill__cl_launch(ctx, kname, a->dtype, args, 4, n);
}

static void relu_kernel(rill__kctx *ctx)
{
    unary(ctx, "nn_relu");
}

static void relu_grad_kernel(rill__kctx *ctx)
{
    binary(ctx, "nn_relu_grad"); /* gradients, features */
}

static void sigmoid_kernel(rill__kctx *ctx)
{
    unary(ctx, "nn_sigmoid");
}

static void sigmoid_grad_kernel(rill__kctx *ctx)
{
    binary(ctx, "nn_sigmoid_grad"); /* y, dy */
}

static void tanh_kernel(rill__kctx *ctx)
{
    unary(ctx, "nn_tanh");
}

static void tanh_grad_kernel(rill__kctx *ctx)
{
    binary(ctx, "nn_tanh_grad"); /* y, dy */
}

static void bias_add_kernel(rill__kctx *ctx)
{
    const rill_tensor *v = ctx->inputs[0], *bias = ctx->inputs[1];
    char sv[96], sb[96];
    if (!check_input(ctx, 0) || !check_input(ctx, 1)) return;
    if (v->shape.rank < 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s",
                        rill_shape_str(&v->shape, sv, sizeof sv));
        return;
    }
    if (bias->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Biases must be 1D: %s",
                        rill_shape_str(&bias->shape, sb, sizeof sb));
        return;
    }
    int64_t c = v->shape.dims[v->shape.rank - 1];
    if (bias->shape.dims[0] != c) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Must provide as many biases as the last dimension of the input tensor: "
                        "%s vs. %s",
                        rill_shape_str(&bias->shape, sb, sizeof sb),
                        rill_shape_str(&v->shape, sv, sizeof sv));
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, v->dtype, &v->shape);
    if (!y || v->numel == 0) return;
    cl_mem ym = rill__cl_mem(y), vm = rill__cl_mem(v), bm = rill__cl_mem(bias);
    cl_long n = v->numel, cols = c;
    rill__cl_arg args[] = {RILL__CL_ARG(ym), RILL__CL_ARG(vm), RILL__CL_ARG(bm), RILL__CL_ARG(n),
                           RILL__CL_ARG(cols)};
    rill__cl_launch(ctx, "nn_bias_add", v->dtype, args, 5, n);
}

static void bias_add_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *g = ctx->inputs[0];
    if (!check_input(ctx, 0)) return;
    if (g->shape.rank < 2) {
        char sg[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s",
                        rill_shape_str(&g->shape, sg, sizeof sg));
        return;
    }
    int64_t c = g->shape.dims[g->shape.rank - 1];
    rill_shape os = rill_shape_vector(c);
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, g->dtype, &os);
    if (!out) return;
    cl_mem om = rill__cl_mem(out), gm = rill__cl_mem(g);
    cl_long rows = outer_rows(g), cols = c;
    rill__cl_arg args[] = {RILL__CL_ARG(om), RILL__CL_ARG(gm), RILL__CL_ARG(rows),
                           RILL__CL_ARG(cols)};
    rill__cl_launch(ctx, "nn_bias_add_grad", g->dtype, args, 4, cols);
}

static void softmax_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    if (!check_input(ctx, 0)) return;
    if (x->shape.rank < 1) {
        char sx[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "logits must have >= 1 dimension, got %s",
                        rill_shape_str(&x->shape, sx, sizeof sx));
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y) return;
    cl_mem ym = rill__cl_mem(y), xm = rill__cl_mem(x);
    cl_long rows = outer_rows(x), cols = x->shape.dims[x->shape.rank - 1];
    rill__cl_arg args[] = {RILL__CL_ARG(ym), RILL__CL_ARG(xm), RILL__CL_ARG(rows),
                           RILL__CL_ARG(cols)};
    rill__cl_launch(ctx, "nn_softmax", x->dtype, args, 4, rows);
}

/* Allocates the loss [rows] and backprop [rows, cols] outputs; false (ctx failed) on OOM. */
static bool alloc_ce_outputs(rill__kctx *ctx, const rill_tensor *logits, rill_tensor **outs)
{
    rill_shape ls = rill_shape_vector(logits->shape.dims[0]);
    outs[0] = rill__kctx_alloc_output(ctx, 0, logits->dtype, &ls);
    if (!outs[0]) return false;
    outs[1] = rill__kctx_alloc_output(ctx, 1, logits->dtype, &logits->shape);
    return outs[1] != NULL;
}

static bool check_classes(rill__kctx *ctx, const rill_tensor *logits)
{
    if (logits->shape.dims[1] > 0 || logits->shape.dims[0] == 0) return true;
    char sl[96];
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                    "Must have at least one class, but got logits shape %s",
                    rill_shape_str(&logits->shape, sl, sizeof sl));
    return false;
}

static void softmax_ce_kernel(rill__kctx *ctx)
{
    const rill_tensor *logits = ctx->inputs[0], *labels = ctx->inputs[1];
    char sl[96], sp[96];
    if (!check_input(ctx, 0) || !check_input(ctx, 1)) return;
    if (logits->shape.rank != 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "logits must be 2-dimensional, got %s",
                        rill_shape_str(&logits->shape, sl, sizeof sl));
        return;
    }
    if (!rill_shape_equal(&logits->shape, &labels->shape)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "logits and labels must be same size: logits_size=%s labels_size=%s",
                        rill_shape_str(&logits->shape, sl, sizeof sl),
                        rill_shape_str(&labels->shape, sp, sizeof sp));
        return;
    }
    rill_tensor *outs[2];
    if (!check_classes(ctx, logits) || !alloc_ce_outputs(ctx, logits, outs)) return;
    cl_mem lm = rill__cl_mem(outs[0]), bm = rill__cl_mem(outs[1]);
    cl_mem xm = rill__cl_mem(logits), pm = rill__cl_mem(labels);
    cl_long rows = logits->shape.dims[0], cols = logits->shape.dims[1];
    rill__cl_arg args[] = {RILL__CL_ARG(lm), RILL__CL_ARG(bm),   RILL__CL_ARG(xm),
                           RILL__CL_ARG(pm), RILL__CL_ARG(rows), RILL__CL_ARG(cols)};
    rill__cl_launch(ctx, "nn_softmax_ce", logits->dtype, args, 6, rows);
}

/* The labels (host memory, checked, at least one) copied into a new device buffer, int32 or
 * int64 as they are; NULL with ctx failed. The caller releases it. The copy is made when the
 * buffer is created, so nothing waits for the queue. */
static cl_mem upload_labels(rill__kctx *ctx, const rill_tensor *labels)
{
    cl_int err;
    cl_mem m = clCreateBuffer(rill__cl(ctx->device)->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                              rill_tensor_nbytes(labels), labels->buf->data, &err);
    if (err == CL_SUCCESS) return m;
    rill_status *s = rill_status_new();
    rill__cl_check(err, "upload labels", s);
    rill__kctx_fail_with(ctx, s);
    return NULL;
}

static void sparse_softmax_ce_kernel(rill__kctx *ctx)
{
    const rill_tensor *logits = ctx->inputs[0], *labels = ctx->inputs[1];
    if (!check_input(ctx, 0)) return;
    if (labels->dtype != RILL_INT32 && labels->dtype != RILL_INT64) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "labels must be int32 or int64, got %s",
                        rill_dtype_name(labels->dtype));
        return;
    }
    if (!rill__tensor_on_host(labels)) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "%s: labels must be in host memory",
                        ctx->node->op->name);
        return;
    }
    if (!rill__check_sparse_xent_shapes(ctx, logits, labels)) return;
    if (!check_classes(ctx, logits) || !rill__check_labels(ctx, labels, logits->shape.dims[1]))
        return;
    rill_tensor *outs[2];
    if (!alloc_ce_outputs(ctx, logits, outs)) return;
    cl_long rows = logits->shape.dims[0], cols = logits->shape.dims[1];
    if (rows == 0) return;
    cl_mem lab = upload_labels(ctx, labels);
    if (!lab) return;
    cl_mem lm = rill__cl_mem(outs[0]), bm = rill__cl_mem(outs[1]), xm = rill__cl_mem(logits);
    rill__cl_arg args[] = {RILL__CL_ARG(lm),  RILL__CL_ARG(bm),   RILL__CL_ARG(xm),
                           RILL__CL_ARG(lab), RILL__CL_ARG(rows), RILL__CL_ARG(cols)};
    rill__cl_launch(ctx,
                    labels->dtype == RILL_INT64 ? "nn_sparse_softmax_ce" : "nn_sparse_softmax_ce32",
                    logits->dtype, args, 6, rows);
    clReleaseMemObject(lab); /* freed by OpenCL once the kernel has run */
}

/* Each op registered for float, double and half (half is stored as half, computed in float). */
#define NN_K(OP, FN, T, HOST_IN)                                                                   \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = T, .fn = FN, .host_memory_inputs = HOST_IN     \
    }
#define NN_KERNEL_H(OP, FN, HOST_IN)                                                               \
    NN_K(OP, FN, RILL_FLOAT, HOST_IN), NN_K(OP, FN, RILL_DOUBLE, HOST_IN),                         \
        NN_K(OP, FN, RILL_HALF, HOST_IN)
#define NN_KERNEL(OP, FN) NN_KERNEL_H(OP, FN, 0)

const rill__kernel_def rill__opencl_kernels_nn[] = {
    NN_KERNEL("BiasAdd", bias_add_kernel),
    NN_KERNEL("BiasAddGrad", bias_add_grad_kernel),
    NN_KERNEL("Relu", relu_kernel),
    NN_KERNEL("ReluGrad", relu_grad_kernel),
    NN_KERNEL("Sigmoid", sigmoid_kernel),
    NN_KERNEL("SigmoidGrad", sigmoid_grad_kernel),
    NN_KERNEL("Tanh", tanh_kernel),
    NN_KERNEL("TanhGrad", tanh_grad_kernel),
    NN_KERNEL("Softmax", softmax_kernel),
    NN_KERNEL("SoftmaxCrossEntropyWithLogits", softmax_ce_kernel),
    /* labels (input 1) in host memory: checked there, then uploaded. */
    NN_KERNEL_H("SparseSoftmaxCrossEntropyWithLogits", sparse_softmax_ce_kernel, 1u << 1),
    {0},
};
