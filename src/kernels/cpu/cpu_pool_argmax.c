/* cpu_pool_argmax.c - CPU kernels of MaxPoolWithArgmax, MaxPoolGradWithArgmax and
 * MaxPoolGradGradWithArgmax (src/graph/ops_pool_argmax.c), NHWC, float and double.
 *
 * The forward pass keeps the first maximum of each window (a strictly greater value replaces
 * it, as TF's CPU kernel); padding positions are never candidates. The backprop adds grad at the
 * argmax of each output element, the grad-grad gathers there. argmax indices are checked
 * against the input's size (TF's "Invalid argmax"). */
#include "../kernel.h"
#include "../../graph/window_geom.h"

#include <float.h>
#include <string.h>

typedef struct geom {
    int64_t n, h, w, c, oh, ow, kh, kw, sh, sw, pt, pl;
    bool batch_index;
} geom;

static bool geometry(rill__kctx *ctx, const rill_tensor *x, geom *g)
{
    if (x->shape.rank != 4) {
        char b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: input must be 4-dimensional: %s",
                        ctx->node->op->name, rill_shape_str(&x->shape, b, sizeof b));
        return false;
    }
    const rill_node *n = ctx->node;
    const int64_t *k = rill__node_attr(n, "ksize")->v.ints.v;
    const int64_t *st = rill__node_attr(n, "strides")->v.ints.v;
    bool same = strcmp(rill__node_attr(n, "padding")->v.s, "SAME") == 0;
    const rill__attr *bi = rill__node_attr(n, "include_batch_in_index");
    *g = (geom){.n = x->shape.dims[0],
                .h = x->shape.dims[1],
                .w = x->shape.dims[2],
                .c = x->shape.dims[3],
                .kh = k[1],
                .kw = k[2],
                .sh = st[1],
                .sw = st[2],
                .batch_index = bi && bi->kind == RILL__ATTR_BOOL && bi->v.b};
    if (!rill__window_size(g->h, g->kh, g->sh, 1, same, &g->oh, &g->pt) ||
        !rill__window_size(g->w, g->kw, g->sw, 1, same, &g->ow, &g->pl)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s: Computed output size would be negative (input %lldx%lld, window "
                        "%lldx%lld)",
                        n->op->name, (long long)g->h, (long long)g->w, (long long)g->kh,
                        (long long)g->kw);
        return false;
    }
    return true;
}

static double ld(const rill_tensor *t, int64_t i)
{
    return t->dtype == RILL_FLOAT ? ((const float *)t->buf->data)[i]
                                  : ((const double *)t->buf->data)[i];
}

static void st(rill_tensor *t, int64_t i, double v)
{
    if (t->dtype == RILL_FLOAT)
        ((float *)t->buf->data)[i] = (float)v;
    else
        ((double *)t->buf->data)[i] = v;
}

static int64_t ld_idx(const rill_tensor *t, int64_t i)
{
    return t->dtype == RILL_INT32 ? ((const int32_t *)t->buf->data)[i]
                                  : ((const int64_t *)t->buf->data)[i];
}

static void argmax_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    geom g;
    if (!geometry(ctx, x, &g)) return;
    int64_t od[4] = {g.n, g.oh, g.ow, g.c};
    rill_shape os = rill_shape_make(4, od);
    rill_dtype ta = rill__attr_type(ctx->node, "Targmax", RILL_INT64);
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!y) return;
    rill_tensor *am = rill__kctx_alloc_output(ctx, 1, ta, &os);
    if (!am) return;
    for (int64_t b = 0; b < g.n; b++)
        for (int64_t oy = 0; oy < g.oh; oy++)
            for (int64_t ox = 0; ox < g.ow; ox++)
                for (int64_t c = 0; c < g.c; c++) {
                    double best = -DBL_MAX;
                    int64_t arg = -1;
                    for (int64_t ky = 0; ky < g.kh; ky++) {
                        int64_t iy = oy * g.sh - g.pt + ky;
                        if (iy < 0 || iy >= g.h) continue;
                        for (int64_t kx = 0; kx < g.kw; kx++) {
                            int64_t ix = ox * g.sw - g.pl + kx;
                            if (ix < 0 || ix >= g.w) continue;
                            int64_t i = ((b * g.h + iy) * g.w + ix) * g.c + c;
                            double v = ld(x, i);
                            if (arg < 0 || v > best) {
                                best = v;
                                arg = i;
                            }
                        }
                    }
                    int64_t o = ((b * g.oh + oy) * g.ow + ox) * g.c + c;
                    if (arg >= 0 && !g.batch_index) arg -= b * g.h * g.w * g.c;
                    st(y, o, arg >= 0 ? best : -DBL_MAX);
                    if (ta == RILL_INT32)
                        ((int32_t *)am->buf->data)[o] = (int32_t)arg;
                    else
                        ((int64_t *)am->buf->data)[o] = arg;
                }
}

/* The flat input index of argmax element o (of batch b), checked. */
static bool input_index(rill__kctx *ctx, const geom *g, const rill_tensor *am, int64_t o,
                        int64_t *i)
{
    int64_t per = g->h * g->w * g->c, b = o / (g->oh * g->ow * g->c);
    int64_t a = ld_idx(am, o);
    *i = g->batch_index ? a : a + b * per;
    if (a < 0 || *i < b * per || *i >= (b + 1) * per) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Received argmax %lld at position %lld outside the input of batch %lld "
                        "(node '%s')",
                        (long long)a, (long long)o, (long long)b, ctx->node->name);
        return false;
    }
    return true;
}

static bool check_like(rill__kctx *ctx, const rill_tensor *t, const char *what,
                       const rill_shape *want)
{
    if (rill_shape_equal(&t->shape, want)) return true;
    char a[96], b[96];
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: %s has shape %s, expected %s",
                    ctx->node->op->name, what, rill_shape_str(&t->shape, a, sizeof a),
                    rill_shape_str(want, b, sizeof b));
    return false;
}

static void grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *dy = ctx->inputs[1], *am = ctx->inputs[2];
    geom g;
    if (!geometry(ctx, x, &g)) return;
    rill_shape os = rill_shape_make(4, (int64_t[4]){g.n, g.oh, g.ow, g.c});
    if (!check_like(ctx, dy, "grad", &os) || !check_like(ctx, am, "argmax", &os)) return;
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!dx) return;
    double *acc = rill__calloc((size_t)(x->numel > 0 ? x->numel : 1), sizeof *acc);
    RILL_CHECK_ALLOC(acc);
    for (int64_t o = 0; o < os.dims[0] * g.oh * g.ow * g.c; o++) {
        int64_t i;
        if (!input_index(ctx, &g, am, o, &i)) goto out;
        acc[i] += ld(dy, o);
    }
    for (int64_t i = 0; i < x->numel; i++) st(dx, i, acc[i]);
out:
    rill__free(acc);
}

static void grad_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *d = ctx->inputs[1], *am = ctx->inputs[2];
    geom g;
    if (!geometry(ctx, x, &g)) return;
    rill_shape os = rill_shape_make(4, (int64_t[4]){g.n, g.oh, g.ow, g.c});
    if (!check_like(ctx, d, "grad", &x->shape) || !check_like(ctx, am, "argmax", &os)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!y) return;
    for (int64_t o = 0; o < y->numel; o++) {
        int64_t i;
        if (!input_index(ctx, &g, am, o, &i)) return;
        st(y, o, ld(d, i));
    }
}

#define AK(OP, FN)                                                                                 \
    {.op = OP, .device_type = "CPU", .dtype = RILL_FLOAT, .fn = FN},                               \
    {                                                                                              \
        .op = OP, .device_type = "CPU", .dtype = RILL_DOUBLE, .fn = FN                             \
    }

const rill__kernel_def rill__cpu_kernels_pool_argmax[] = {
    AK("MaxPoolWithArgmax", argmax_kernel),
    AK("MaxPoolGradWithArgmax", grad_kernel),
    AK("MaxPoolGradGradWithArgmax", grad_grad_kernel),
    {0},
};
