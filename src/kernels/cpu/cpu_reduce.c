/* cpu_reduce.c - CPU kernels for Max, Min, Prod, Any, All, ArgMin, Cumsum, Cumprod and ProdGrad
 * (src/graph/ops_reduce.c), every numeric dtype (Any and All: bool) through doubles.
 *
 * A reduction walks its input once in row-major order and folds each element into the output
 * element it belongs to (the reduced axes dropped from its index), as Sum does in cpu_math.c.
 * Max and Min propagate NaN, as TensorFlow's do; empty reductions give the identity (-inf, +inf,
 * 1, false, true; the dtype's lowest / highest for integers). On an OpenCL device the dtypes
 * without a kernel in cl_reduce.c run here with host-memory tensors. */
#include "cpu_kernels.h"

#include <float.h>
#include <math.h>
#include <string.h>

typedef enum { R_MAX, R_MIN, R_PROD, R_ANY, R_ALL } reducer;

static reducer reducer_of(const char *op)
{
    if (strcmp(op, "Max") == 0) return R_MAX;
    if (strcmp(op, "Min") == 0) return R_MIN;
    if (strcmp(op, "Prod") == 0) return R_PROD;
    if (strcmp(op, "Any") == 0) return R_ANY;
    return R_ALL;
}

static double identity_of(reducer r, rill_dtype t)
{
    switch (r) {
    case R_MAX:
        return t == RILL_INT32   ? (double)INT32_MIN
               : t == RILL_INT64 ? (double)INT64_MIN
                                 : -INFINITY;
    case R_MIN:
        return t == RILL_INT32   ? (double)INT32_MAX
               : t == RILL_INT64 ? 9223372036854774784.0 /* the largest double below 2^63 */
                                 : INFINITY;
    case R_PROD:
    case R_ALL:
        return 1;
    default:
        return 0;
    }
}

/* The output shape of reducing in over mask and the row-major stride of each input dim in the
 * output (0 on reduced dims). */
static rill_shape reduced_shape(const rill_shape *in, const bool *mask, bool keep, int64_t *ostride)
{
    rill_shape out = {.rank = 0};
    for (int d = 0; d < in->rank; d++) {
        if (!mask[d])
            out.dims[out.rank++] = in->dims[d];
        else if (keep)
            out.dims[out.rank++] = 1;
    }
    int64_t s = 1;
    for (int d = in->rank - 1; d >= 0; d--) {
        ostride[d] = mask[d] ? 0 : s;
        if (!mask[d]) s *= in->dims[d];
    }
    return out;
}

static void reduce_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    bool mask[RILL_MAX_DIMS];
    if (!rill__check_axes(ctx, x->shape.rank, mask)) return;
    int64_t ostride[RILL_MAX_DIMS];
    rill_shape os =
        reduced_shape(&x->shape, mask, rill__attr_bool(ctx->node, "keep_dims", false), ostride);
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!out) return;
    reducer r = reducer_of(ctx->node->op->name);
    int64_t on = out->numel;
    double *acc = rill__malloc((size_t)(on ? on : 1) * sizeof *acc);
    RILL_CHECK_ALLOC(acc);
    double id = identity_of(r, x->dtype);
    for (int64_t i = 0; i < on; i++) acc[i] = id;
    int rank = x->shape.rank;
    int64_t idx[RILL_MAX_DIMS] = {0}, o = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        double v = rill_tensor_get_double(x, i), *a = &acc[o];
        switch (r) {
        case R_MAX:
            if (v > *a || isnan(v)) *a = isnan(*a) ? *a : v;
            break;
        case R_MIN:
            if (v < *a || isnan(v)) *a = isnan(*a) ? *a : v;
            break;
        case R_PROD:
            *a *= v;
            break;
        case R_ANY:
            *a = *a != 0 || v != 0;
            break;
        case R_ALL:
            *a = *a != 0 && v != 0;
            break;
        }
        for (int d = rank - 1; d >= 0; d--) {
            o += ostride[d];
            if (++idx[d] < x->shape.dims[d]) break;
            o -= ostride[d] * x->shape.dims[d];
            idx[d] = 0;
        }
    }
    if (x->dtype == RILL_INT64 && (r == R_MAX || r == R_MIN)) {
        /* exact for every int64: redo the fold on integers */
        int64_t *oi = out->buf->data;
        const int64_t *xi = x->buf->data;
        for (int64_t i = 0; i < on; i++) oi[i] = r == R_MAX ? INT64_MIN : INT64_MAX;
        memset(idx, 0, sizeof idx);
        o = 0;
        for (int64_t i = 0; i < x->numel; i++) {
            if (r == R_MAX ? xi[i] > oi[o] : xi[i] < oi[o]) oi[o] = xi[i];
            for (int d = rank - 1; d >= 0; d--) {
                o += ostride[d];
                if (++idx[d] < x->shape.dims[d]) break;
                o -= ostride[d] * x->shape.dims[d];
                idx[d] = 0;
            }
        }
    } else {
        rill__convert(x->dtype, out->buf->data, RILL_DOUBLE, acc, on);
    }
    rill__free(acc);
}

static void argmin_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    rill_shape os;
    int64_t len, inner;
    if (!rill__check_argmax(ctx, x, &os, &len, &inner)) return;
    rill_dtype ot = rill__attr_type(ctx->node, "output_type", RILL_INT64);
    int64_t outer = len * inner > 0 ? x->numel / (len * inner) : 0;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, ot, &os);
    if (!out) return;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = a * len * inner + i, best = 0;
            double bv = rill_tensor_get_double(x, base);
            for (int64_t j = 1; j < len; j++) {
                double v = rill_tensor_get_double(x, base + j * inner);
                if (v < bv || (isnan(v) && !isnan(bv))) bv = v, best = j;
            }
            if (ot == RILL_INT32)
                ((int32_t *)out->buf->data)[a * inner + i] = (int32_t)best;
            else
                ((int64_t *)out->buf->data)[a * inner + i] = best;
        }
}

bool rill__check_scan(rill__kctx *ctx, const rill_tensor *x, int64_t *outer, int64_t *len,
                      int64_t *inner)
{
    int r = x->shape.rank;
    int64_t axis = rill__attr_int(ctx->node, "axis", 0);
    if (r == 0 || axis < -r || axis >= r) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "ScanOp: Expected scan axis in the range [%d, %d), but got %lld", -r, r,
                        (long long)axis);
        return false;
    }
    if (axis < 0) axis += r;
    *outer = 1;
    *inner = 1;
    for (int d = 0; d < r; d++) {
        if (d < axis) *outer *= x->shape.dims[d];
        if (d > axis) *inner *= x->shape.dims[d];
    }
    *len = x->shape.dims[axis];
    return true;
}

static void scan_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    int64_t outer, len, inner;
    if (!rill__check_scan(ctx, x, &outer, &len, &inner)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y || x->numel == 0) return;
    bool prod = strcmp(ctx->node->op->name, "Cumprod") == 0;
    bool excl = rill__attr_bool(ctx->node, "exclusive", false);
    bool rev = rill__attr_bool(ctx->node, "reverse", false);
    bool i64 = x->dtype == RILL_INT64; /* exact integer sums and products */
    size_t es = rill_dtype_size(x->dtype);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t i = 0; i < inner; i++) {
            double acc = prod ? 1 : 0;
            int64_t iacc = prod ? 1 : 0;
            for (int64_t k = 0; k < len; k++) {
                int64_t j = rev ? len - 1 - k : k, off = (a * len + j) * inner + i;
                double v = rill_tensor_get_double(x, off);
                int64_t iv = i64 ? ((const int64_t *)x->buf->data)[off] : 0;
                if (!excl) {
                    acc = prod ? acc * v : acc + v;
                    iacc = prod ? (int64_t)((uint64_t)iacc * (uint64_t)iv)
                                : (int64_t)((uint64_t)iacc + (uint64_t)iv);
                }
                if (i64)
                    ((int64_t *)y->buf->data)[off] = iacc;
                else
                    rill__convert(x->dtype, (char *)y->buf->data + (size_t)off * es, RILL_DOUBLE,
                                  &acc, 1);
                if (excl) {
                    acc = prod ? acc * v : acc + v;
                    iacc = prod ? (int64_t)((uint64_t)iacc * (uint64_t)iv)
                                : (int64_t)((uint64_t)iacc + (uint64_t)iv);
                }
            }
        }
}

/* ProdGrad(x, dy): dx_i = dy(group of i) * the product of the other elements of i's group,
 * from prefix and suffix products over the group (exact with zeros). */
static void prod_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *dy = ctx->inputs[1];
    bool mask[RILL_MAX_DIMS];
    if (!rill__check_axes(ctx, x->shape.rank, mask)) return;
    int64_t ostride[RILL_MAX_DIMS];
    rill_shape os = reduced_shape(&x->shape, mask, false, ostride);
    int64_t on = rill_shape_num_elements(&os), count = on ? x->numel / on : 0;
    if (dy->numel != on) {
        char a[96], b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "ProdGrad: dy has shape %s, the product %s",
                        rill_shape_str(&dy->shape, a, sizeof a), rill_shape_str(&os, b, sizeof b));
        return;
    }
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!dx || x->numel == 0) return;
    /* the members of each group, in order: group o's k-th member at members[o * count + k] */
    int64_t *members = rill__malloc((size_t)x->numel * sizeof *members);
    int64_t *fill = rill__calloc((size_t)on, sizeof *fill);
    double *pre = rill__malloc((size_t)(count + 1) * sizeof *pre), *g = NULL;
    g = rill__malloc((size_t)x->numel * sizeof *g);
    RILL_CHECK_ALLOC(members && fill && pre && g);
    int rank = x->shape.rank;
    int64_t idx[RILL_MAX_DIMS] = {0}, o = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        members[o * count + fill[o]++] = i;
        for (int d = rank - 1; d >= 0; d--) {
            o += ostride[d];
            if (++idx[d] < x->shape.dims[d]) break;
            o -= ostride[d] * x->shape.dims[d];
            idx[d] = 0;
        }
    }
    for (int64_t q = 0; q < on; q++) {
        const int64_t *m = members + q * count;
        pre[0] = 1;
        for (int64_t k = 0; k < count; k++) pre[k + 1] = pre[k] * rill_tensor_get_double(x, m[k]);
        double suf = 1, d = rill_tensor_get_double(dy, q);
        for (int64_t k = count - 1; k >= 0; k--) {
            g[m[k]] = d * pre[k] * suf;
            suf *= rill_tensor_get_double(x, m[k]);
        }
    }
    rill__convert(x->dtype, dx->buf->data, RILL_DOUBLE, g, x->numel);
    rill__free(members);
    rill__free(fill);
    rill__free(pre);
    rill__free(g);
}

#define ANY RILL_DT_INVALID
#define ALL (~0u)
#define K(op_, fn_)                                                                                \
    {                                                                                              \
        .op = op_, .device_type = "CPU", .dtype = ANY, .fn = fn_                                   \
    }
#ifdef RILL_HAVE_OPENCL
/* Any dtype on an OpenCL device, in host memory: cl_reduce.c's exact-dtype kernels win. */
#define KH(op_, fn_)                                                                               \
    {                                                                                              \
        .op = op_, .device_type = "OPENCL", .dtype = ANY, .fn = fn_, .host_memory_inputs = ALL,    \
        .host_memory_outputs = ALL                                                                 \
    }
#endif
const rill__kernel_def rill__cpu_kernels_reduce[] = {
    K("Max", reduce_kernel),
    K("Min", reduce_kernel),
    K("Prod", reduce_kernel),
    K("Any", reduce_kernel),
    K("All", reduce_kernel),
    K("ArgMin", argmin_kernel),
    K("Cumsum", scan_kernel),
    K("Cumprod", scan_kernel),
    K("ProdGrad", prod_grad_kernel),
#ifdef RILL_HAVE_OPENCL
    KH("Max", reduce_kernel),
    KH("Min", reduce_kernel),
    KH("Prod", reduce_kernel),
    KH("Any", reduce_kernel),
    KH("All", reduce_kernel),
    KH("ArgMin", argmin_kernel),
    KH("Cumsum", scan_kernel),
    KH("Cumprod", scan_kernel),
    KH("ProdGrad", prod_grad_kernel),
#endif
    {0},
};
