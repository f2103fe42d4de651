/* cpu_select.c - CPU kernels for ArgMax and Equal (accuracy: argmax(logits) == labels) and
 * Dropout. ArgMax and Equal serve every numeric dtype (and bool for Equal) through doubles; on an
 * OpenCL GPU they run here too, with their tensors in host memory, as TF's int-valued kernels do.
 * Dropout draws from the node's seeded generator, so a seeded graph drops the same elements run
 * after run; on a GPU it runs here with host-memory tensors. */
#include "cpu_kernels.h"

#include <math.h>
#include <string.h>

static void argmax_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    int r = x->shape.rank;
    int64_t axis = rill__attr_int(ctx->node, "axis", 0);
    if (r == 0 || axis < -r || axis >= r) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Expected dimension in the range [%d, %d), but got %lld", -r, r,
                        (long long)axis);
        return;
    }
    if (axis < 0) axis += r;
    int64_t len = x->shape.dims[axis], outer = 1, inner = 1;
    if (len == 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Reduction axis %lld is empty in shape with %d dimensions", (long long)axis,
                        r);
        return;
    }
    rill_shape os = {.rank = 0};
    for (int d = 0; d < r; d++) {
        if (d < axis) outer *= x->shape.dims[d];
        if (d > axis) inner *= x->shape.dims[d];
        if (d != axis) os.dims[os.rank++] = x->shape.dims[d];
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_INT64, &os);
    int64_t *o = out->buf->data;
    const float *xf = x->dtype == RILL_FLOAT ? x->buf->data : NULL;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = a * len * inner + i, best = 0;
            double bv = xf ? xf[base] : rill_tensor_get_double(x, base);
            for (int64_t j = 1; j < len; j++) {
                double v = xf ? xf[base + j * inner] : rill_tensor_get_double(x, base + j * inner);
                if (v > bv || (isnan(v) && !isnan(bv))) bv = v, best = j;
            }
            o[a * inner + i] = best;
        }
}

static void equal_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *y = ctx->inputs[1];
    rill__bcast bc;
    if (!rill__check_bcast(ctx, x, y, &bc)) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_BOOL, &bc.out);
    uint8_t *o = out->buf->data;
    int64_t idx[RILL_MAX_DIMS] = {0}, ia = 0, ib = 0;
    for (int64_t i = 0; i < out->numel; i++) {
        o[i] = rill_tensor_get_double(x, ia) == rill_tensor_get_double(y, ib);
        for (int d = bc.rank - 1; d >= 0; d--) {
            ia += bc.a_strides[d];
            ib += bc.b_strides[d];
            if (++idx[d] < bc.out_dims[d]) break;
            ia -= bc.a_strides[d] * bc.out_dims[d];
            ib -= bc.b_strides[d] * bc.out_dims[d];
            idx[d] = 0;
        }
    }
}

static void dropout_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *kp = ctx->inputs[1];
    double keep = rill_tensor_get_double(kp, 0);
    if (kp->numel != 1 || !(keep > 0 && keep <= 1)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "keep_prob must be a scalar tensor or a float in the range (0, 1], got %g",
                        keep);
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    rill_tensor *mask = rill__kctx_alloc_output(ctx, 1, x->dtype, &x->shape);
    rill__rng *r = rill__kctx_rng(ctx);
    for (int64_t i = 0; i < x->numel; i++) {
        double b = floor(keep + rill__rng_uniform(r)); /* 1 with probability keep */
        double m = b / keep;
        if (x->dtype == RILL_FLOAT) {
            ((float *)y->buf->data)[i] =
                (float)(((const float *)x->buf->data)[i] / (float)keep) * (float)b;
            ((float *)mask->buf->data)[i] = (float)m;
        } else {
            double v = rill_tensor_get_double(x, i) / keep * b;
            rill__convert(x->dtype, (char *)y->buf->data + (size_t)i * rill_dtype_size(x->dtype),
                          RILL_DOUBLE, &v, 1);
            rill__convert(x->dtype, (char *)mask->buf->data + (size_t)i * rill_dtype_size(x->dtype),
                          RILL_DOUBLE, &m, 1);
        }
    }
}

#define ANY RILL_DT_INVALID
#define ALL (~0u)
const rill__kernel_def rill__cpu_kernels_select[] = {
    {.op = "ArgMax", .device_type = "CPU", .dtype = ANY, .fn = argmax_kernel},
    {.op = "Equal", .device_type = "CPU", .dtype = ANY, .fn = equal_kernel},
    {.op = "Dropout",
     .device_type = "CPU",
     .dtype = ANY,
     .fn = dropout_kernel,
     .state_free = rill__kctx_rng_free},
#ifdef RILL_HAVE_OPENCL
    {.op = "ArgMax",
     .device_type = "OPENCL",
     .dtype = ANY,
     .fn = argmax_kernel,
     .host_memory_inputs = ALL,
     .host_memory_outputs = ALL},
    {.op = "Equal",
     .device_type = "OPENCL",
     .dtype = ANY,
     .fn = equal_kernel,
     .host_memory_inputs = ALL,
     .host_memory_outputs = ALL},
    {.op = "Dropout",
     .device_type = "OPENCL",
     .dtype = ANY,
     .fn = dropout_kernel,
     .state_free = rill__kctx_rng_free,
     .host_memory_inputs = ALL,
     .host_memory_outputs = ALL},
#endif
    {0},
};
