/* checks.c - the run-time argument checks every backend's kernel of an op shares, so the CPU and
 * the OpenCL kernels of one op fail with the same code and TensorFlow's words. */
#include "kernel.h"

bool rill__check_matmul(rill__kctx *ctx, const rill_tensor *a, const rill_tensor *b, int64_t *m,
                        int64_t *k, int64_t *n)
{
    bool ta = rill__attr_bool(ctx->node, "transpose_a", false);
    bool tb = rill__attr_bool(ctx->node, "transpose_b", false);
    if (a->shape.rank != 2 || b->shape.rank != 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "In[0] and In[1] must be matrices, got ranks %d and %d", a->shape.rank,
                        b->shape.rank);
        return false;
    }
    *m = a->shape.dims[ta ? 1 : 0];
    *k = a->shape.dims[ta ? 0 : 1];
    *n = b->shape.dims[tb ? 0 : 1];
    if (*k != b->shape.dims[tb ? 1 : 0]) {
        char x[96], y[96];
        rill__kctx_fail(
            ctx, RILL_INVALID_ARGUMENT, "Matrix size-incompatible: In[0]: %s, In[1]: %s",
            rill_shape_str(&a->shape, x, sizeof x), rill_shape_str(&b->shape, y, sizeof y));
        return false;
    }
    return true;
}

bool rill__check_labels(rill__kctx *ctx, const rill_tensor *labels, int64_t classes)
{
    int64_t n = labels->numel, bad = -1;
    bool is64 = labels->dtype == RILL_INT64;
    const int32_t *l32 = labels->buf->data;
    const int64_t *l64 = labels->buf->data;
    for (int64_t i = 0; i < n && bad < 0; i++) {
        int64_t v = is64 ? l64[i] : l32[i];
        if (v < 0 || v >= classes) bad = i;
    }
    if (bad < 0) return true;
    char list[1024];
    size_t off = 0;
    for (int64_t i = 0; i < n && off < sizeof list - 32; i++)
        off += (size_t)snprintf(list + off, sizeof list - off, "%s%lld", i ? " " : "",
                                (long long)(is64 ? l64[i] : l32[i]));
    if (off >= sizeof list - 32) snprintf(list + off, sizeof list - off, "...");
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                    "Received a label value of %lld which is outside the valid range of [0, "
                    "%lld).  Label values: %s",
                    (long long)(is64 ? l64[bad] : l32[bad]), (long long)classes, list);
    return false;
}

bool rill__check_axes(rill__kctx *ctx, int rank, bool *mask)
{
    const rill__attr *ax = rill__node_attr(ctx->node, "axes");
    for (int i = 0; i < RILL_MAX_DIMS; i++) mask[i] = ax == NULL && i < rank;
    if (!ax) return true;
    for (int k = 0; k < ax->v.ints.n; k++) {
        int64_t a = ax->v.ints.v[k];
        if (a < -rank || a >= rank) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Invalid reduction dimension (%lld for input with %d dimension(s)",
                            (long long)a, rank);
            return false;
        }
        mask[a < 0 ? a + rank : a] = true;
    }
    return true;
}

bool rill__check_sparse_xent_shapes(rill__kctx *ctx, const rill_tensor *logits,
                                    const rill_tensor *labels)
{
    char sl[96], sp[96];
    if (logits->shape.rank != 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "logits must be 2-D, but got shape %s",
                        rill_shape_str(&logits->shape, sl, sizeof sl));
        return false;
    }
    if (labels->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "labels must be 1-D, but got shape %s",
                        rill_shape_str(&labels->shape, sp, sizeof sp));
        return false;
    }
    if (labels->shape.dims[0] != logits->shape.dims[0]) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "logits and labels must have the same first dimension, got logits shape "
                        "%s and labels shape %s",
                        rill_shape_str(&logits->shape, sl, sizeof sl),
                        rill_shape_str(&labels->shape, sp, sizeof sp));
        return false;
    }
    return true;
}
