/* cpu_permute.c - CPU kernels of Roll and ReverseSequence (src/graph/ops_permute.c), any dtype,
 * strings too: each result element copies one input element, found by walking the result's
 * coordinates. The checks are the graph layer's rule (rill__permute_check) on the real shapes,
 * plus ReverseSequence's lengths, which only the run knows (TF's texts). On an OpenCL device
 * the same kernels run with their tensors in host memory. */
#include "../../graph/ops_permute.h"
#include "../../graph/ops_shape.h"
#include "cpu_kernels.h"
#include "cpu_permute.h"

#include <string.h>

static void copy_elem(rill_tensor *y, int64_t i, const rill_tensor *x, int64_t j, size_t es)
{
    if (x->dtype == RILL_STRING) {
        size_t len;
        const char *p = rill_tensor_get_string(x, j, &len);
        rill_tensor_set_string(y, i, p, len);
        return;
    }
    memcpy((char *)y->buf->data + (size_t)i * es, (const char *)x->buf->data + (size_t)j * es, es);
}

bool rill__permute_check_run(rill__kctx *ctx, const rill_tensor *x, const rill_tensor *len)
{
    rill_status *s = rill__scratch_status();
    if (!rill__permute_check(ctx->node, x->shape, len ? len->shape : rill_shape_vector(-1), s)) {
        rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
        return false;
    }
    return true;
}

void rill__roll_shifts(const rill_node *n, const rill_shape *x, int64_t *sh)
{
    int ns, na, r = x->rank;
    const int64_t *shift = rill__ints_attr(n, "shift", &ns);
    const int64_t *axis = rill__ints_attr(n, "axis", &na);
    for (int d = 0; d < r; d++) sh[d] = 0;
    for (int i = 0; i < na && i < ns; i++) {
        int a = (int)(axis[i] < 0 ? axis[i] + r : axis[i]);
        sh[a] += shift[i] % (x->dims[a] ? x->dims[a] : 1); /* repeated axes add up, as TF's */
    }
    for (int d = 0; d < r; d++) {
        int64_t k = x->dims[d];
        sh[d] = k ? ((sh[d] % k) + k) % k : 0;
    }
}

static void roll_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    if (!rill__permute_check_run(ctx, x, NULL)) return;
    int r = x->shape.rank;
    int64_t sh[RILL_MAX_DIMS], stride[RILL_MAX_DIMS];
    rill__roll_shifts(ctx->node, &x->shape, sh);
    for (int64_t d = r - 1, st = 1; d >= 0; d--) {
        stride[d] = st;
        st *= x->shape.dims[d];
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y) return;
    size_t es = rill_dtype_size(x->dtype);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t rest = i, src = 0;
        for (int d = r - 1; d >= 0; d--) {
            int64_t n = x->shape.dims[d], c = rest % n;
            rest /= n;
            c -= sh[d];
            if (c < 0) c += n;
            src += c * stride[d];
        }
        copy_elem(y, i, x, src, es);
    }
}

bool rill__reverse_sequence_lengths_ok(rill__kctx *ctx, const rill_tensor *x,
                                       const rill_tensor *len)
{
    const rill_node *n = ctx->node;
    int sd = (int)rill__attr_int(n, "seq_dim", -1), bd = (int)rill__attr_int(n, "batch_dim", 0);
    if (len->numel != x->shape.dims[bd]) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Length of seq_lengths != input.dims(%d), (%lld vs. %lld)", bd,
                        (long long)len->numel, (long long)x->shape.dims[bd]);
        return false;
    }
    for (int64_t b = 0; b < len->numel; b++) {
        int64_t l = rill_tensor_get_int64(len, b);
        if (l < 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "seq_lens(%lld) < 0", (long long)b);
            return false;
        }
        if (l > x->shape.dims[sd]) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "seq_lens(%lld) > input.dims(%d)",
                            (long long)b, sd);
            return false;
        }
    }
    return true;
}

static void reverse_sequence_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *len = ctx->inputs[1];
    if (!rill__permute_check_run(ctx, x, len)) return;
    if (!rill__reverse_sequence_lengths_ok(ctx, x, len)) return;
    const rill_node *n = ctx->node;
    int sd = (int)rill__attr_int(n, "seq_dim", -1), bd = (int)rill__attr_int(n, "batch_dim", 0);
    int r = x->shape.rank;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y) return;
    int64_t stride[RILL_MAX_DIMS];
    for (int64_t d = r - 1, st = 1; d >= 0; d--) {
        stride[d] = st;
        st *= x->shape.dims[d];
    }
    size_t es = rill_dtype_size(x->dtype);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t cs = (i / stride[sd]) % x->shape.dims[sd];
        int64_t cb = (i / stride[bd]) % x->shape.dims[bd];
        int64_t l = rill_tensor_get_int64(len, cb), src = i;
        if (cs < l) src += (l - 1 - 2 * cs) * stride[sd];
        copy_elem(y, i, x, src, es);
    }
}

#define ANY RILL_DT_INVALID
const rill__kernel_def rill__cpu_kernels_permute[] = {
    {.op = "Roll", .device_type = "CPU", .dtype = ANY, .fn = roll_kernel},
    {.op = "ReverseSequence",
     .device_type = "CPU",
     .dtype = ANY,
     .fn = reverse_sequence_kernel,
     .host_memory_inputs = 2},
#ifdef RILL_HAVE_OPENCL
    {.op = "Roll",
     .device_type = "OPENCL",
     .dtype = ANY,
     .fn = roll_kernel,
     .host_memory_inputs = ~0u,
     .host_memory_outputs = ~0u},
    {.op = "ReverseSequence",
     .device_type = "OPENCL",
     .dtype = ANY,
     .fn = reverse_sequence_kernel,
     .host_memory_inputs = ~0u,
     .host_memory_outputs = ~0u},
#endif
    {0},
};
