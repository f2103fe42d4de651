/* checks.c - the run-time argument checks every backend's kernel of an op shares, so the CPU and
 * the OpenCL kernels of one op fail with the same code and TensorFlow's words. */
#include "kernel.h"

#include <math.h>
#include <string.h>

bool rill__check_bcast(rill__kctx *ctx, const rill_tensor *x, const rill_tensor *y, rill__bcast *bc)
{
    if (rill__bcast_init(bc, &x->shape, &y->shape)) return true;
    char a[96], b[96];
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                    rill_shape_str(&x->shape, a, sizeof a), rill_shape_str(&y->shape, b, sizeof b));
    return false;
}

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

/* --- windowed ops --- */

/* t must be rank 4; its dims into d. */
static bool dims4(rill__kctx *ctx, const rill_tensor *t, const char *what, int64_t *d)
{
    if (t->shape.rank != 4) {
        char b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: %s must be 4-dimensional: %s",
                        ctx->node->op->name, what, rill_shape_str(&t->shape, b, sizeof b));
        return false;
    }
    for (int i = 0; i < 4; i++) d[i] = t->shape.dims[i];
    return true;
}

/* A size input: int32 [4] in host memory, every size >= 0. */
static bool size4(rill__kctx *ctx, const rill_tensor *t, const char *what, int64_t *d)
{
    const char *op = ctx->node->op->name;
    if (t->dtype != RILL_INT32 || !rill__tensor_on_host(t)) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "%s: %s must be int32 in host memory", op, what);
        return false;
    }
    if (t->shape.rank != 1 || t->numel != 4) {
        char b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s: %s input must be 1-dim with 4 elements, not %s", op, what,
                        rill_shape_str(&t->shape, b, sizeof b));
        return false;
    }
    const int32_t *v = t->buf->data;
    for (int i = 0; i < 4; i++) {
        if (v[i] < 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: %s[%d] = %d must be >= 0", op, what,
                            i, (int)v[i]);
            return false;
        }
        d[i] = v[i];
    }
    return true;
}

/* dy (a backprop's gradient, or MaxPoolGrad's orig_output) must be [N, OH, OW, F]. */
static bool check_out(rill__kctx *ctx, const rill_tensor *t, const char *what,
                      const rill__window *w)
{
    const char *op = ctx->node->op->name;
    int64_t d[4];
    if (!dims4(ctx, t, what, d)) return false;
    if (d[0] != w->n) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s: input and %s must have the same batch size", op, what);
        return false;
    }
    const int64_t in[2] = {w->ih, w->iw}, k[2] = {w->kh, w->kw}, o[2] = {w->oh, w->ow},
                  st[2] = {w->sh, w->sw}, dl[2] = {w->dh, w->dw};
    for (int i = 0; i < 2; i++)
        if (d[i + 1] != o[i]) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "%s: Size of %s doesn't match computed: actual = %lld, computed = "
                            "%lld spatial_dim: %d input: %lld filter: %lld output: %lld stride: "
                            "%lld dilation: %lld",
                            op, what, (long long)d[i + 1], (long long)o[i], i + 1,
                            (long long)in[i], (long long)k[i], (long long)o[i], (long long)st[i],
                            (long long)dl[i]);
            return false;
        }
    if (d[3] != w->f) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s: filter and %s must have the same out_depth: %lld vs %lld", op, what,
                        (long long)w->f, (long long)d[3]);
        return false;
    }
    return true;
}

bool rill__check_window_op(rill__kctx *ctx, rill__window *w)
{
    const char *op = ctx->node->op->name;
    rill_tensor *const *in = ctx->inputs;
    int64_t x[4], f[4] = {0};
    bool fused = strcmp(op, "_FusedConv2D") == 0; /* Conv2D's checks, its inputs first */
    bool conv = fused || strncmp(op, "Conv2D", 6) == 0, ok;
    if (fused || strcmp(op, "Conv2D") == 0 || strcmp(op, "Conv2DBackpropFilter") == 0 ||
        strcmp(op, "MaxPool") == 0 || strcmp(op, "AvgPool") == 0 || strcmp(op, "MaxPoolGrad") == 0)
        ok = dims4(ctx, in[0], "input", x);
    else
        ok = size4(ctx, in[0], conv ? "input_sizes" : "orig_input_shape", x);
    if (ok && conv) {
        ok = strcmp(op, "Conv2DBackpropFilter") == 0 ? size4(ctx, in[1], "filter_sizes", f)
                                                     : dims4(ctx, in[1], "filter", f);
        if (ok && f[2] != x[3]) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "%s: input and filter must have the same depth: %lld vs %lld", op,
                            (long long)x[3], (long long)f[2]);
            ok = false;
        }
    } else if (ok) {
        const int64_t *k = rill__node_attr(ctx->node, "ksize")->v.ints.v;
        f[0] = k[1], f[1] = k[2], f[3] = x[3];
    }
    if (!ok) return false;
    char err[256];
    if (!rill__window_init(ctx->node, x, f[0], f[1], w, err, sizeof err)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: %s", op, err);
        return false;
    }
    w->f = f[3];
    if (strcmp(op, "Conv2DBackpropInput") == 0 || strcmp(op, "Conv2DBackpropFilter") == 0)
        return check_out(ctx, in[2], "out_backprop", w);
    if (strcmp(op, "MaxPoolGrad") == 0)
        return check_out(ctx, in[1], "orig_output", w) && check_out(ctx, in[2], "grad", w);
    if (strcmp(op, "AvgPoolGrad") == 0) return check_out(ctx, in[1], "grad", w);
    return true;
}

bool rill__check_argmax(rill__kctx *ctx, const rill_tensor *x, rill_shape *os, int64_t *len,
                        int64_t *inner)
{
    int r = x->shape.rank;
    int64_t axis = rill__attr_int(ctx->node, "axis", 0);
    if (r == 0 || axis < -r || axis >= r) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Expected dimension in the range [%d, %d), but got %lld", -r, r,
                        (long long)axis);
        return false;
    }
    if (axis < 0) axis += r;
    *len = x->shape.dims[axis];
    if (*len == 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Reduction axis %lld is empty in shape with %d dimensions", (long long)axis,
                        r);
        return false;
    }
    *inner = 1;
    os->rank = 0;
    for (int d = 0; d < r; d++) {
        if (d > axis) *inner *= x->shape.dims[d];
        if (d != axis) os->dims[os->rank++] = x->shape.dims[d];
    }
    return true;
}

bool rill__check_keep_prob(rill__kctx *ctx, const rill_tensor *kp, double *keep)
{
    *keep = kp->numel > 0 ? rill_tensor_get_double(kp, 0) : NAN;
    if (kp->numel == 1 && *keep > 0 && *keep <= 1) return true;
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                    "keep_prob must be a scalar tensor or a float in the range (0, 1], got %g",
                    *keep);
    return false;
}

bool rill__check_strided_slice(rill__kctx *ctx, const rill_tensor *x, const rill_tensor *dy,
                               rill__slice *sl)
{
    rill_status *s = rill__scratch_status();
    if (!rill__strided_slice_plan(ctx->node, x->shape, sl, s)) {
        rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
        return false;
    }
    if (dy && dy->numel != sl->n) {
        char a[96], b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "StridedSliceGrad: dy has shape %s, the slice's result %s",
                        rill_shape_str(&dy->shape, a, sizeof a),
                        rill_shape_str(&sl->out, b, sizeof b));
        return false;
    }
    return true;
}
