/* cpu_dilation.c - CPU kernels of Dilation2D, Dilation2DBackpropInput and
 * Dilation2DBackpropFilter (src/graph/ops_dilation.c), NHWC, float and double.
 *
 * One walk over the output positions; for each, the best in-bounds tap (input + filter, the
 * first one on ties as TF's kernel). The forward pass writes the maximum; the backprops add
 * out_backprop at the input element or the filter tap that attained it. */
#include "../kernel.h"
#include "../../graph/window_geom.h"

#include <float.h>
#include <string.h>

typedef struct geom {
    int64_t n, h, w, c, fh, fw, oh, ow, sh, sw, rh, rw, pt, pl;
} geom;

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

static bool geometry(rill__kctx *ctx, const rill_tensor *x, const rill_tensor *f,
                     const rill_tensor *dy, geom *g)
{
    const char *op = ctx->node->op->name;
    char a[96], b[96];
    if (x->shape.rank != 4 || f->shape.rank != 3 || x->shape.dims[3] != f->shape.dims[2]) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s: input must be 4-dimensional and filter 3-dimensional with the same "
                        "depth: %s, %s",
                        op, rill_shape_str(&x->shape, a, sizeof a),
                        rill_shape_str(&f->shape, b, sizeof b));
        return false;
    }
    const rill_node *n = ctx->node;
    const int64_t *s = rill__node_attr(n, "strides")->v.ints.v;
    const int64_t *r = rill__node_attr(n, "rates")->v.ints.v;
    bool same = strcmp(rill__node_attr(n, "padding")->v.s, "SAME") == 0;
    *g = (geom){.n = x->shape.dims[0],
                .h = x->shape.dims[1],
                .w = x->shape.dims[2],
                .c = x->shape.dims[3],
                .fh = f->shape.dims[0],
                .fw = f->shape.dims[1],
                .sh = s[1],
                .sw = s[2],
                .rh = r[1],
                .rw = r[2]};
    if (!rill__window_size(g->h, g->fh, g->sh, g->rh, same, &g->oh, &g->pt) ||
        !rill__window_size(g->w, g->fw, g->sw, g->rw, same, &g->ow, &g->pl)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s: Computed output size would be negative (input %s, filter %s)", op,
                        rill_shape_str(&x->shape, a, sizeof a),
                        rill_shape_str(&f->shape, b, sizeof b));
        return false;
    }
    if (!dy) return true;
    rill_shape want = rill_shape_make(4, (int64_t[4]){g->n, g->oh, g->ow, g->c});
    if (rill_shape_equal(&dy->shape, &want)) return true;
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: out_backprop has shape %s, expected %s", op,
                    rill_shape_str(&dy->shape, a, sizeof a), rill_shape_str(&want, b, sizeof b));
    return false;
}

/* The best tap of output (b, oy, ox, c): *xi the input index, *fi the filter index (-1 when no
 * tap is inside the input); returns the value. */
static double best_tap(const geom *g, const rill_tensor *x, const rill_tensor *f, int64_t b,
                       int64_t oy, int64_t ox, int64_t c, int64_t *xi, int64_t *fi)
{
    double best = -DBL_MAX;
    *xi = *fi = -1;
    for (int64_t i = 0; i < g->fh; i++) {
        int64_t iy = oy * g->sh + i * g->rh - g->pt;
        if (iy < 0 || iy >= g->h) continue;
        for (int64_t j = 0; j < g->fw; j++) {
            int64_t ix = ox * g->sw + j * g->rw - g->pl;
            if (ix < 0 || ix >= g->w) continue;
            int64_t xk = ((b * g->h + iy) * g->w + ix) * g->c + c, fk = (i * g->fw + j) * g->c + c;
            double v = ld(x, xk) + ld(f, fk);
            if (*xi < 0 || v > best) {
                best = v;
                *xi = xk;
                *fi = fk;
            }
        }
    }
    return best;
}

#define FOR_OUT(g)                                                                                 \
    for (int64_t b = 0, o = 0; b < (g).n; b++)                                                     \
        for (int64_t oy = 0; oy < (g).oh; oy++)                                                    \
            for (int64_t ox = 0; ox < (g).ow; ox++)                                                \
                for (int64_t c = 0; c < (g).c; c++, o++)

static void dilation_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *f = ctx->inputs[1];
    geom g;
    if (!geometry(ctx, x, f, NULL, &g)) return;
    rill_shape os = rill_shape_make(4, (int64_t[4]){g.n, g.oh, g.ow, g.c});
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!y) return;
    FOR_OUT(g)
    {
        int64_t xi, fi;
        st(y, o, best_tap(&g, x, f, b, oy, ox, c, &xi, &fi));
    }
}

static void backprop_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *f = ctx->inputs[1], *dy = ctx->inputs[2];
    bool input = strcmp(ctx->node->op->name, "Dilation2DBackpropInput") == 0;
    geom g;
    if (!geometry(ctx, x, f, dy, &g)) return;
    const rill_tensor *like = input ? x : f;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &like->shape);
    if (!out) return;
    double *acc = rill__calloc((size_t)(like->numel > 0 ? like->numel : 1), sizeof *acc);
    RILL_CHECK_ALLOC(acc);
    FOR_OUT(g)
    {
        int64_t xi, fi;
        best_tap(&g, x, f, b, oy, ox, c, &xi, &fi);
        if (xi >= 0) acc[input ? xi : fi] += ld(dy, o);
    }
    for (int64_t i = 0; i < like->numel; i++) st(out, i, acc[i]);
    rill__free(acc);
}

#define DK(OP, FN)                                                                                 \
    {.op = OP, .device_type = "CPU", .dtype = RILL_FLOAT, .fn = FN},                               \
    {                                                                                              \
        .op = OP, .device_type = "CPU", .dtype = RILL_DOUBLE, .fn = FN                             \
    }

const rill__kernel_def rill__cpu_kernels_dilation[] = {
    DK("Dilation2D", dilation_kernel),
    DK("Dilation2DBackpropInput", backprop_kernel),
    DK("Dilation2DBackpropFilter", backprop_kernel),
    {0},
};
