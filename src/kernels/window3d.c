/* window3d.c - the run-time checks of the 3-D windowed ops (graph/ops_conv3d.c), shared by their
 * CPU (cpu/cpu_conv3d.c) and OpenCL (opencl/cl_conv3d.c) kernels: ranks, the int32 size inputs,
 * depths and the gradients' shapes against the geometry, with TensorFlow's texts. */
#include "window3d.h"

#include <string.h>

static bool dims5(rill__kctx *ctx, const rill_tensor *t, const char *what, int64_t *d)
{
    if (t->shape.rank != 5) {
        char b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: %s must be 5-dimensional: %s",
                        ctx->node->op->name, what, rill_shape_str(&t->shape, b, sizeof b));
        return false;
    }
    for (int i = 0; i < 5; i++) d[i] = t->shape.dims[i];
    return true;
}

/* A size input: int32 [5] in host memory, every size >= 0. */
static bool size5(rill__kctx *ctx, const rill_tensor *t, const char *what, int64_t *d)
{
    const char *op = ctx->node->op->name;
    if (t->dtype != RILL_INT32 || !rill__tensor_on_host(t)) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "%s: %s must be int32 in host memory", op, what);
        return false;
    }
    if (t->shape.rank != 1 || t->numel != 5) {
        char b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s: %s input must be 1-dim with 5 elements, not %s", op, what,
                        rill_shape_str(&t->shape, b, sizeof b));
        return false;
    }
    const int32_t *v = t->buf->data;
    for (int i = 0; i < 5; i++) {
        if (v[i] < 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: %s[%d] = %d must be >= 0", op, what, i,
                            (int)v[i]);
            return false;
        }
        d[i] = v[i];
    }
    return true;
}

/* t (a gradient, or MaxPool3DGrad's orig_output) must be [N, OD, OH, OW, F]; TensorFlow's texts
 * (the backprops' from conv_grad_shape_utils, the pools' from pooling_ops_3d). */
static bool check_out(rill__kctx *ctx, const rill_tensor *t, const char *what,
                      const rill__window3d *w, bool pool)
{
    const char *op = ctx->node->op->name;
    int64_t d[5];
    if (!dims5(ctx, t, what, d)) return false;
    int64_t want[5] = {w->n, w->out[0], w->out[1], w->out[2], w->f};
    if (pool) {
        if (memcmp(d, want, sizeof d) == 0) return true;
        rill_shape ws = rill_shape_make(5, want);
        char a[96], b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Expected %s shape to be %s, but got %s", what,
                        rill_shape_str(&ws, a, sizeof a), rill_shape_str(&t->shape, b, sizeof b));
        return false;
    }
    if (d[0] != w->n) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s: input and %s must have the same batch size", op, what);
        return false;
    }
    for (int i = 0; i < 3; i++)
        if (d[i + 1] != w->out[i]) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "%s: Size of %s doesn't match computed: actual = %lld, computed = "
                            "%lld spatial_dim: %d input: %lld filter: %lld output: %lld stride: "
                            "%lld dilation: %lld",
                            op, what, (long long)d[i + 1], (long long)w->out[i], i + 1,
                            (long long)w->in[i], (long long)w->k[i], (long long)w->out[i],
                            (long long)w->s[i], (long long)w->d[i]);
            return false;
        }
    if (d[4] != w->f) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s: filter and %s must have the same out_depth: %lld vs %lld", op, what,
                        (long long)w->f, (long long)d[4]);
        return false;
    }
    return true;
}

bool rill__check_window3d_op(rill__kctx *ctx, rill__window3d_kind kind, rill__window3d *w)
{
    const char *op = ctx->node->op->name;
    rill_tensor *const *in = ctx->inputs;
    int64_t x[5], f[5] = {0};
    bool ok = kind == RILL__W3_BP_INPUT   ? size5(ctx, in[0], "input_sizes", x)
              : kind == RILL__W3_AVG_GRAD ? size5(ctx, in[0], "orig_input_shape", x)
                                          : dims5(ctx, in[0], "input", x);
    if (ok && kind <= RILL__W3_BP_FILTER) {
        ok = kind == RILL__W3_BP_FILTER ? size5(ctx, in[1], "filter_sizes", f)
                                        : dims5(ctx, in[1], "filter", f);
        if (ok && f[3] != x[4]) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "%s: input and filter must have the same depth: %lld vs %lld", op,
                            (long long)x[4], (long long)f[3]);
            ok = false;
        }
    } else if (ok) {
        const int64_t *k = rill__node_attr(ctx->node, "ksize")->v.ints.v;
        f[0] = k[1], f[1] = k[2], f[2] = k[3], f[4] = x[4];
    }
    if (!ok) return false;
    char err[256];
    if (!rill__window3d_init(ctx->node, x, f, w, err, sizeof err)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: %s", op, err);
        return false;
    }
    w->f = f[4];
    switch (kind) {
    case RILL__W3_BP_INPUT:
    case RILL__W3_BP_FILTER:
        return check_out(ctx, in[2], "out_backprop", w, false);
    case RILL__W3_MAX_GRAD:
        return check_out(ctx, in[1], "orig_output", w, true) &&
               check_out(ctx, in[2], "grad", w, true);
    case RILL__W3_AVG_GRAD:
        return check_out(ctx, in[1], "grad", w, true);
    default:
        return true;
    }
}
