/* cpu_select.c - CPU kernels for ArgMax and Equal (accuracy: argmax(logits) == labels) and
 * Dropout. ArgMax and Equal serve every numeric dtype (and bool for Equal) through doubles; on an
 * OpenCL GPU they run here too for the dtypes that have no OpenCL kernel (int32, bool, ...: see
 * kernels/opencl/cl_select.c), with their tensors in host memory, as TF's int-valued kernels do.
 * Dropout draws from the node's seeded generator, so a seeded graph drops the same elements run
 * after run; cl_select.c draws the same sequence on a GPU. */
#include "cpu_kernels.h"

#include <math.h>
#include <string.h>

static void argmax_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    rill_shape os;
    int64_t len, inner;
    if (!rill__check_argmax(ctx, x, &os, &len, &inner)) return;
    int64_t outer = len * inner > 0 ? x->numel / (len * inner) : 0;
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
    double keep;
    if (!rill__check_keep_prob(ctx, kp, &keep)) return;
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
    /* Any dtype: the registry prefers cl_select.c's exact-dtype kernels. */
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
#endif
    {0},
};
