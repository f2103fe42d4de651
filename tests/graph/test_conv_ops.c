/* test_conv_ops.c - the windowed ops (Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter,
 * MaxPool, AvgPool, MaxPoolGrad, AvgPoolGrad) on the CPU.
 *
 * Forward: every op in float and double against a double-precision reference written here as
 * plain loops over the definition (output sizes and SAME padding computed independently of
 * rill's), over shapes with stride 2, SAME and VALID, dilation 2, batches above one, 1x1
 * windows and odd sizes. Gradients: the registered gradients of Conv2D, both backprops, the pools
 * and AvgPoolGrad against central finite differences (oc_grad_check, double). Errors: TensorFlow's
 * texts for bad ranks, attr lengths, batch strides, paddings, depth mismatches and negative
 * output sizes at build time, and the run-time checks on shapes only known when fed. */
#include "op_check.h"

#include <rill/ops.h>
#include <rill/session.h>
#include <rill/train.h>

#include "graph/graph_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* --- reference geometry --- */

typedef struct geo {
    int64_t n, h, w, c; /* input */
    int64_t kh, kw, f;  /* window; f: conv output channels */
    int64_t sh, sw, dh, dw;
    bool same;
    int64_t oh, ow, pt, pl;
} geo;

static void geo_finish(geo *g)
{
    int64_t eh = (g->kh - 1) * g->dh + 1, ew = (g->kw - 1) * g->dw + 1;
    if (g->same) {
        g->oh = (g->h + g->sh - 1) / g->sh;
        g->ow = (g->w + g->sw - 1) / g->sw;
        int64_t ph = (g->oh - 1) * g->sh + eh - g->h, pw = (g->ow - 1) * g->sw + ew - g->w;
        g->pt = ph > 0 ? ph / 2 : 0;
        g->pl = pw > 0 ? pw / 2 : 0;
    } else {
        g->oh = (g->h - eh) / g->sh + 1;
        g->ow = (g->w - ew) / g->sw + 1;
        g->pt = g->pl = 0;
    }
}

#define IX(g, n, y, x, c)     ((((n) * (g)->h + (y)) * (g)->w + (x)) * (g)->c + (c))
#define OX(g, n, y, x, c, ch) ((((n) * (g)->oh + (y)) * (g)->ow + (x)) * (ch) + (c))

/* y = conv(x, w); dx = conv^T(dy, w); dw = sum x dy: all three from one walk over the taps. */
static void conv_ref(const geo *g, const double *x, const double *w, const double *dy, double *y,
                     double *dx, double *dw)
{
    memset(y, 0, sizeof(double) * (size_t)(g->n * g->oh * g->ow * g->f));
    memset(dx, 0, sizeof(double) * (size_t)(g->n * g->h * g->w * g->c));
    memset(dw, 0, sizeof(double) * (size_t)(g->kh * g->kw * g->c * g->f));
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t oy = 0; oy < g->oh; oy++)
            for (int64_t ox = 0; ox < g->ow; ox++)
                for (int64_t ky = 0; ky < g->kh; ky++)
                    for (int64_t kx = 0; kx < g->kw; kx++) {
                        int64_t iy = oy * g->sh - g->pt + ky * g->dh;
                        int64_t ix = ox * g->sw - g->pl + kx * g->dw;
                        if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) continue;
                        for (int64_t c = 0; c < g->c; c++)
                            for (int64_t f = 0; f < g->f; f++) {
                                int64_t wi = ((ky * g->kw + kx) * g->c + c) * g->f + f;
                                int64_t xi = IX(g, n, iy, ix, c), oi = OX(g, n, oy, ox, f, g->f);
                                y[oi] += x[xi] * w[wi];
                                dx[xi] += dy[oi] * w[wi];
                                dw[wi] += x[xi] * dy[oi];
                            }
                    }
}

/* Max and average pools and their gradients (the first maximum of a window gets its gradient). */
static void pool_ref(const geo *g, const double *x, const double *dy, double *ymax, double *yavg,
                     double *dmax, double *davg)
{
    memset(dmax, 0, sizeof(double) * (size_t)(g->n * g->h * g->w * g->c));
    memset(davg, 0, sizeof(double) * (size_t)(g->n * g->h * g->w * g->c));
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t oy = 0; oy < g->oh; oy++)
            for (int64_t ox = 0; ox < g->ow; ox++)
                for (int64_t c = 0; c < g->c; c++) {
                    double m = 0, s = 0;
                    int64_t best = -1, cnt = 0;
                    for (int64_t ky = 0; ky < g->kh; ky++)
                        for (int64_t kx = 0; kx < g->kw; kx++) {
                            int64_t iy = oy * g->sh - g->pt + ky, ix = ox * g->sw - g->pl + kx;
                            if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) continue;
                            int64_t i = IX(g, n, iy, ix, c);
                            if (best < 0 || x[i] > m) m = x[i], best = i;
                            s += x[i];
                            cnt++;
                        }
                    int64_t o = OX(g, n, oy, ox, c, g->c);
                    ymax[o] = m;
                    yavg[o] = s / (double)cnt;
                    dmax[best] += dy[o];
                    for (int64_t ky = 0; ky < g->kh; ky++)
                        for (int64_t kx = 0; kx < g->kw; kx++) {
                            int64_t iy = oy * g->sh - g->pt + ky, ix = ox * g->sw - g->pl + kx;
                            if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) continue;
                            davg[IX(g, n, iy, ix, c)] += dy[o] / (double)cnt;
                        }
                }
}

/* --- helpers --- */

/* --- forward checks --- */

static const geo conv_cases[] = {
    /* n  h  w  c  kh kw f  sh sw dh dw same */
    {1, 5, 5, 1, 3, 3, 1, 1, 1, 1, 1, false, 0, 0, 0, 0},
    {2, 7, 6, 3, 3, 3, 4, 2, 2, 1, 1, true, 0, 0, 0, 0},
    {2, 9, 8, 2, 3, 2, 3, 1, 1, 2, 2, true, 0, 0, 0, 0},
    {3, 4, 5, 3, 1, 1, 5, 1, 1, 1, 1, false, 0, 0, 0, 0},
    {1, 7, 7, 2, 2, 2, 3, 2, 3, 1, 1, false, 0, 0, 0, 0},
    {2, 6, 5, 2, 1, 1, 2, 2, 2, 1, 1, true, 0, 0, 0, 0},
    {1, 5, 4, 2, 4, 3, 2, 3, 2, 1, 2, true, 0, 0, 0, 0},
    {2, 8, 7, 3, 3, 3, 2, 2, 1, 2, 1, false, 0, 0, 0, 0},
    /* big enough that oneDNN's float path cuts the batch into uneven shards over the threads,
     * and the shards' filter gradients are summed */
    {11, 20, 20, 8, 5, 5, 16, 1, 1, 1, 1, true, 0, 0, 0, 0},
};

static void test_conv_forward(void)
{
    for (size_t ci = 0; ci < sizeof conv_cases / sizeof *conv_cases; ci++)
        for (int ti = 0; ti < 2; ti++) {
            rill_dtype t = ti ? RILL_DOUBLE : RILL_FLOAT;
            geo g = conv_cases[ci];
            geo_finish(&g);
            int64_t xd[4] = {g.n, g.h, g.w, g.c}, wd[4] = {g.kh, g.kw, g.c, g.f},
                    yd[4] = {g.n, g.oh, g.ow, g.f};
            int64_t nx = oc_numel(xd, 4), nw = oc_numel(wd, 4), ny = oc_numel(yd, 4);
            double *x = oc_randv(nx, -1, 1, t), *w = oc_randv(nw, -1, 1, t),
                   *dy = oc_randv(ny, -1, 1, t);
            double *y = malloc(sizeof(double) * (size_t)ny),
                   *dx = malloc(sizeof(double) * (size_t)nx),
                   *dw = malloc(sizeof(double) * (size_t)nw);
            conv_ref(&g, x, w, dy, y, dx, dw);
            rill_graph *gr = rill_graph_new();
            rill_tensor *vals[3] = {oc_tensor(t, xd, 4, x), oc_tensor(t, wd, 4, w),
                                    oc_tensor(t, yd, 4, dy)};
            rill_output ph[3];
            for (int i = 0; i < 3; i++)
                ph[i] = rill_placeholder(gr, t, *rill_tensor_shape(vals[i]), NULL);
            int st[4] = {1, (int)g.sh, (int)g.sw, 1}, dl[4] = {1, (int)g.dh, (int)g.dw, 1};
            const char *pad = g.same ? "SAME" : "VALID";
            rill_output yo = rill_conv2d(gr, ph[0], ph[1], st, pad, dl, NULL);
            rill_output bi = rill_conv2d_backprop_input(gr, oc_sizes_const(gr, xd, 4), ph[1], ph[2],
                                                        st, pad, dl, NULL);
            rill_output bf = rill_conv2d_backprop_filter(gr, ph[0], oc_sizes_const(gr, wd, 4),
                                                         ph[2], st, pad, dl, NULL);
            char label[160];
            snprintf(label, sizeof label, "conv case %zu %s", ci, rill_dtype_name(t));
            if (CHECK(rill_graph_ok(gr))) {
                /* static shapes inferred at build time */
                rill_shape ys = rill_output_shape(yo), bis = rill_output_shape(bi),
                           bfs = rill_output_shape(bf);
                CHECK(rill_shape_equal(&ys, &(rill_shape){4, {g.n, g.oh, g.ow, g.f}}));
                CHECK(rill_shape_equal(&bis, rill_tensor_shape(vals[0])));
                CHECK(rill_shape_equal(&bfs, rill_tensor_shape(vals[1])));
                rill_session *s = oc_session(gr);
                rill_tensor *r = oc_run(s, yo, ph, vals, 3);
                oc_check_close(label, r, t, yd, 4, y);
                rill_tensor_free(r);
                r = oc_run(s, bi, ph, vals, 3);
                oc_check_close(label, r, t, xd, 4, dx);
                rill_tensor_free(r);
                r = oc_run(s, bf, ph, vals, 3);
                oc_check_close(label, r, t, wd, 4, dw);
                rill_tensor_free(r);
                rill_session_free(s);
            } else {
                fprintf(stderr, "  %s: %s\n", label, rill_status_message(rill_graph_status(gr)));
            }
            for (int i = 0; i < 3; i++) rill_tensor_free(vals[i]);
            rill_graph_free(gr);
            free(x), free(w), free(dy), free(y), free(dx), free(dw);
        }
}

static const geo pool_cases[] = {
    /* n  h  w  c  kh kw f  sh sw dh dw same */
    {1, 4, 4, 1, 2, 2, 0, 2, 2, 1, 1, false, 0, 0, 0, 0},
    {2, 5, 7, 3, 3, 3, 0, 2, 2, 1, 1, true, 0, 0, 0, 0},
    {1, 6, 5, 2, 3, 2, 0, 1, 1, 1, 1, true, 0, 0, 0, 0},
    {2, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, false, 0, 0, 0, 0},
    {1, 7, 6, 2, 3, 3, 0, 3, 2, 1, 1, false, 0, 0, 0, 0},
    {3, 5, 5, 2, 4, 4, 0, 3, 3, 1, 1, true, 0, 0, 0, 0},
};

static void test_pool_forward(void)
{
    for (size_t ci = 0; ci < sizeof pool_cases / sizeof *pool_cases; ci++)
        for (int ti = 0; ti < 4; ti++) { /* float, double, and both with ties */
            rill_dtype t = ti & 1 ? RILL_DOUBLE : RILL_FLOAT;
            bool ties = ti >= 2;
            geo g = pool_cases[ci];
            geo_finish(&g);
            int64_t xd[4] = {g.n, g.h, g.w, g.c}, yd[4] = {g.n, g.oh, g.ow, g.c};
            int64_t nx = oc_numel(xd, 4), ny = oc_numel(yd, 4);
            double *x = oc_randv(nx, -1, 1, t), *dy = oc_randv(ny, -1, 1, t);
            /* -1, 0 and 1 only: most windows hold their maximum twice or more, and its first
             * place in row-major order gets the gradient */
            for (int64_t i = 0; ties && i < nx; i++) x[i] = (double)lround(x[i] * 1.5);
            double *ym = malloc(sizeof(double) * (size_t)ny),
                   *ya = malloc(sizeof(double) * (size_t)ny),
                   *dm = malloc(sizeof(double) * (size_t)nx),
                   *da = malloc(sizeof(double) * (size_t)nx);
            pool_ref(&g, x, dy, ym, ya, dm, da);
            rill_graph *gr = rill_graph_new();
            rill_tensor *vals[2] = {oc_tensor(t, xd, 4, x), oc_tensor(t, yd, 4, dy)};
            rill_output ph[2] = {rill_placeholder(gr, t, *rill_tensor_shape(vals[0]), NULL),
                                 rill_placeholder(gr, t, *rill_tensor_shape(vals[1]), NULL)};
            int k[4] = {1, (int)g.kh, (int)g.kw, 1}, st[4] = {1, (int)g.sh, (int)g.sw, 1};
            const char *pad = g.same ? "SAME" : "VALID";
            rill_output mp = rill_max_pool(gr, ph[0], k, st, pad, NULL);
            rill_output ap = rill_avg_pool(gr, ph[0], k, st, pad, NULL);
            rill_output mg = rill_max_pool_grad(gr, ph[0], mp, ph[1], k, st, pad, NULL);
            rill_output ag =
                rill_avg_pool_grad(gr, oc_sizes_const(gr, xd, 4), ph[1], k, st, pad, NULL);
            char label[160];
            snprintf(label, sizeof label, "pool case %zu %s%s", ci, rill_dtype_name(t),
                     ties ? " ties" : "");
            if (CHECK(rill_graph_ok(gr))) {
                rill_shape ms = rill_output_shape(mp), as = rill_output_shape(ag);
                CHECK(rill_shape_equal(&ms, &(rill_shape){4, {g.n, g.oh, g.ow, g.c}}));
                CHECK(rill_shape_equal(&as, rill_tensor_shape(vals[0])));
                rill_session *s = oc_session(gr);
                const rill_output outs[4] = {mp, ap, mg, ag};
                const double *refs[4] = {ym, ya, dm, da};
                for (int o = 0; o < 4; o++) {
                    rill_tensor *r = oc_run(s, outs[o], ph, vals, 2);
                    char l2[200];
                    snprintf(l2, sizeof l2, "%s output %d", label, o);
                    oc_check_close(l2, r, t, o < 2 ? yd : xd, 4, refs[o]);
                    rill_tensor_free(r);
                }
                rill_session_free(s);
            } else {
                fprintf(stderr, "  %s: %s\n", label, rill_status_message(rill_graph_status(gr)));
            }
            for (int i = 0; i < 2; i++) rill_tensor_free(vals[i]);
            rill_graph_free(gr);
            free(x), free(dy), free(ym), free(ya), free(dm), free(da);
        }
}

/* A batch big enough that the CPU kernels split it into several patch chunks (64 MiB each):
 * the result must not depend on the chunking. */
static void test_conv_chunked(void)
{
    geo g = {40, 64, 64, 8, 3, 3, 4, 1, 1, 1, 1, true, 0, 0, 0, 0};
    geo_finish(&g);
    int64_t xd[4] = {g.n, g.h, g.w, g.c}, wd[4] = {g.kh, g.kw, g.c, g.f},
            yd[4] = {g.n, g.oh, g.ow, g.f};
    int64_t nx = oc_numel(xd, 4), nw = oc_numel(wd, 4), ny = oc_numel(yd, 4);
    double *x = oc_randv(nx, -1, 1, RILL_DOUBLE), *w = oc_randv(nw, -1, 1, RILL_DOUBLE),
           *dy = oc_randv(ny, -1, 1, RILL_DOUBLE);
    double *y = malloc(sizeof(double) * (size_t)ny), *dx = malloc(sizeof(double) * (size_t)nx),
           *dw = malloc(sizeof(double) * (size_t)nw);
    conv_ref(&g, x, w, dy, y, dx, dw);
    rill_graph *gr = rill_graph_new();
    rill_tensor *vals[3] = {oc_tensor(RILL_DOUBLE, xd, 4, x), oc_tensor(RILL_DOUBLE, wd, 4, w),
                            oc_tensor(RILL_DOUBLE, yd, 4, dy)};
    rill_output ph[3];
    for (int i = 0; i < 3; i++)
        ph[i] = rill_placeholder(gr, RILL_DOUBLE, *rill_tensor_shape(vals[i]), NULL);
    int st[4] = {1, 1, 1, 1};
    rill_output yo = rill_conv2d(gr, ph[0], ph[1], st, "SAME", NULL, NULL);
    rill_output bi = rill_conv2d_backprop_input(gr, oc_sizes_const(gr, xd, 4), ph[1], ph[2], st,
                                                "SAME", NULL, NULL);
    rill_output bf = rill_conv2d_backprop_filter(gr, ph[0], oc_sizes_const(gr, wd, 4), ph[2], st,
                                                 "SAME", NULL, NULL);
    rill_session *s = oc_session(gr);
    rill_tensor *r = oc_run(s, yo, ph, vals, 3);
    oc_check_close("chunked conv2d", r, RILL_DOUBLE, yd, 4, y);
    rill_tensor_free(r);
    r = oc_run(s, bi, ph, vals, 3);
    oc_check_close("chunked backprop input", r, RILL_DOUBLE, xd, 4, dx);
    rill_tensor_free(r);
    r = oc_run(s, bf, ph, vals, 3);
    oc_check_close("chunked backprop filter", r, RILL_DOUBLE, wd, 4, dw);
    rill_tensor_free(r);
    rill_session_free(s);
    for (int i = 0; i < 3; i++) rill_tensor_free(vals[i]);
    rill_graph_free(gr);
    free(x), free(w), free(dy), free(y), free(dx), free(dw);
}

/* --- gradients --- */

typedef struct win_ctx {
    int st[4], k[4], dl[4];
    const char *pad;
    int64_t sizes[4]; /* the backprops' size input */
} win_ctx;

static rill_output build_conv(rill_graph *g, const rill_output *xs, void *p)
{
    win_ctx *c = p;
    return rill_conv2d(g, xs[0], xs[1], c->st, c->pad, c->dl, NULL);
}

static rill_output build_bp_input(rill_graph *g, const rill_output *xs, void *p)
{
    win_ctx *c = p;
    return rill_conv2d_backprop_input(g, oc_sizes_const(g, c->sizes, 4), xs[0], xs[1], c->st,
                                      c->pad, c->dl, NULL);
}

static rill_output build_bp_filter(rill_graph *g, const rill_output *xs, void *p)
{
    win_ctx *c = p;
    return rill_conv2d_backprop_filter(g, xs[0], oc_sizes_const(g, c->sizes, 4), xs[1], c->st,
                                       c->pad, c->dl, NULL);
}

static rill_output build_max_pool(rill_graph *g, const rill_output *xs, void *p)
{
    win_ctx *c = p;
    return rill_max_pool(g, xs[0], c->k, c->st, c->pad, NULL);
}

static rill_output build_avg_pool(rill_graph *g, const rill_output *xs, void *p)
{
    win_ctx *c = p;
    return rill_avg_pool(g, xs[0], c->k, c->st, c->pad, NULL);
}

static rill_output build_avg_pool_grad(rill_graph *g, const rill_output *xs, void *p)
{
    win_ctx *c = p;
    return rill_avg_pool_grad(g, oc_sizes_const(g, c->sizes, 4), xs[0], c->k, c->st, c->pad, NULL);
}

static void test_gradients(void)
{
    oc_grad_opts o = {.rtol = 1e-5, .atol = 1e-7};
    /* Conv2D: SAME stride 2, VALID dilation 2, 1x1, with a batch of 2. */
    static const geo cc[] = {
        {1, 5, 5, 2, 3, 3, 2, 2, 2, 1, 1, true, 0, 0, 0, 0},
        {2, 6, 5, 1, 2, 2, 2, 1, 1, 2, 2, false, 0, 0, 0, 0},
        {2, 3, 3, 2, 1, 1, 3, 1, 1, 1, 1, true, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cc / sizeof *cc; i++) {
        geo g = cc[i];
        geo_finish(&g);
        win_ctx c = {{1, (int)g.sh, (int)g.sw, 1},
                     {0},
                     {1, (int)g.dh, (int)g.dw, 1},
                     g.same ? "SAME" : "VALID",
                     {0}};
        int64_t xd[4] = {g.n, g.h, g.w, g.c}, wd[4] = {g.kh, g.kw, g.c, g.f},
                yd[4] = {g.n, g.oh, g.ow, g.f};
        rill_tensor *v[2] = {oc_random(xd, 4, -1, 1), oc_random(wd, 4, -1, 1)};
        char label[64];
        snprintf(label, sizeof label, "Conv2D grad case %zu", i);
        oc_grad_check(label, 2, v, build_conv, &c, o);
        if (i == 0) {
            /* the backprops' own gradients (in filter and out_backprop; x and out_backprop) */
            rill_tensor *d = oc_random(yd, 4, -1, 1);
            memcpy(c.sizes, xd, sizeof xd);
            rill_tensor *bi[2] = {v[1], d};
            oc_grad_check("Conv2DBackpropInput grad", 2, bi, build_bp_input, &c, o);
            memcpy(c.sizes, wd, sizeof wd);
            rill_tensor *bf[2] = {v[0], d};
            oc_grad_check("Conv2DBackpropFilter grad", 2, bf, build_bp_filter, &c, o);
            rill_tensor_free(d);
        }
        rill_tensor_free(v[0]);
        rill_tensor_free(v[1]);
    }
    static const geo pc[] = {
        {1, 5, 5, 2, 3, 3, 0, 2, 2, 1, 1, true, 0, 0, 0, 0},
        {2, 4, 5, 1, 2, 2, 0, 1, 2, 1, 1, false, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof pc / sizeof *pc; i++) {
        geo g = pc[i];
        geo_finish(&g);
        win_ctx c = {{1, (int)g.sh, (int)g.sw, 1},
                     {1, (int)g.kh, (int)g.kw, 1},
                     {1, 1, 1, 1},
                     g.same ? "SAME" : "VALID",
                     {g.n, g.h, g.w, g.c}};
        int64_t xd[4] = {g.n, g.h, g.w, g.c}, yd[4] = {g.n, g.oh, g.ow, g.c};
        rill_tensor *x = oc_random(xd, 4, -1, 1), *d = oc_random(yd, 4, -1, 1);
        char label[64];
        snprintf(label, sizeof label, "MaxPool grad case %zu", i);
        oc_grad_check(label, 1, &x, build_max_pool, &c, o);
        snprintf(label, sizeof label, "AvgPool grad case %zu", i);
        oc_grad_check(label, 1, &x, build_avg_pool, &c, o);
        snprintf(label, sizeof label, "AvgPoolGrad grad case %zu", i);
        oc_grad_check(label, 1, &d, build_avg_pool_grad, &c, o);
        rill_tensor_free(x);
        rill_tensor_free(d);
    }
}

/* --- errors --- */

static rill_graph *g_new(rill_output *x, const int64_t *xd, int xr, rill_output *w,
                         const int64_t *wd, int wr)
{
    rill_graph *g = rill_graph_new();
    *x = rill_placeholder(g, RILL_FLOAT, rill_shape_make(xr, xd), "x");
    if (w) *w = rill_placeholder(g, RILL_FLOAT, rill_shape_make(wr, wd), "w");
    return g;
}

/* A node of op with inputs in and the given attrs (for attrs the public builders cannot
 * express). */
static void raw(rill_graph *g, const char *op, const rill_output *in, int nin, const int64_t *st,
                int nst, const int64_t *k, int nk, const char *pad)
{
    rill__attr a[4] = {RILL__A_INTS("strides", nst, st), RILL__A_STRING("padding", pad),
                       RILL__A_TYPE("T", RILL_FLOAT)};
    int na = 3;
    if (k) a[na++] = RILL__A_INTS("ksize", nk, k);
    rill__node_create(g, op, "op", in, nin, a, na);
}

static void test_errors(void)
{
    const int64_t x4[4] = {1, 5, 5, 3}, x3[3] = {5, 5, 3}, w4[4] = {3, 3, 3, 2},
                  w4b[4] = {3, 3, 4, 2};
    const int s1[4] = {1, 1, 1, 1}, k2[4] = {1, 2, 2, 1};
    rill_output x, w;
    rill_graph *g;

    g = g_new(&x, x3, 3, &w, w4, 4);
    rill_conv2d(g, x, w, s1, "SAME", NULL, "c");
    oc_check_build_error("conv rank", g, RILL_INVALID_ARGUMENT,
                         "Shape must be rank 4 but is rank 3 for 'c' (op: 'Conv2D') with input "
                         "shapes: [5,5,3], [3,3,3,2].");
    rill_graph_free(g);

    g = g_new(&x, x4, 4, &w, w4b, 4);
    rill_conv2d(g, x, w, s1, "SAME", NULL, "c");
    oc_check_build_error("conv depth", g, RILL_INVALID_ARGUMENT,
                         "Dimensions must be equal, but are 3 and 4 for 'c' (op: 'Conv2D') with "
                         "input shapes: [1,5,5,3], [3,3,4,2].");
    rill_graph_free(g);

    g = g_new(&x, x4, 4, &w, w4, 4);
    rill_conv2d(g, x, w, s1, "FOO", NULL, "c");
    oc_check_build_error("conv padding", g, RILL_INVALID_ARGUMENT,
                         "Value for attr 'padding' of \"FOO\" is not in the list of allowed "
                         "values: \"SAME\", \"VALID\"");
    rill_graph_free(g);

    g = g_new(&x, x4, 4, &w, w4, 4);
    rill_conv2d(g, x, w, (const int[4]){2, 1, 1, 1}, "SAME", NULL, "c");
    oc_check_build_error("conv batch stride", g, RILL_INVALID_ARGUMENT,
                         "Current implementation does not yet support strides in the batch and "
                         "depth dimensions.");
    rill_graph_free(g);

    g = g_new(&x, x4, 4, &w, w4, 4);
    rill_conv2d(g, x, w, s1, "SAME", (const int[4]){1, 1, 1, 2}, "c");
    oc_check_build_error("conv depth dilation", g, RILL_INVALID_ARGUMENT,
                         "Current implementation does not yet support dilations in the batch and "
                         "depth dimensions.");
    rill_graph_free(g);

    g = g_new(&x, x4, 4, &w, w4, 4);
    raw(g, "Conv2D", (rill_output[]){x, w}, 2, (const int64_t[3]){1, 1, 1}, 3, NULL, 0, "SAME");
    oc_check_build_error("conv strides length", g, RILL_INVALID_ARGUMENT,
                         "Conv2D requires the stride attribute to contain 4 values, but got: 3");
    rill_graph_free(g);

    {
        const int64_t xs[4] = {1, 1, 5, 3};
        g = g_new(&x, xs, 4, &w, w4, 4);
        rill_conv2d(g, x, w, s1, "VALID", NULL, "c");
        oc_check_build_error("conv negative output", g, RILL_INVALID_ARGUMENT,
                             "Computed output size would be negative: -1 [input_size: 1, "
                             "effective_filter_size: 3, stride: 1]");
        rill_graph_free(g);
    }

    g = g_new(&x, x3, 3, NULL, NULL, 0);
    rill_max_pool(g, x, k2, s1, "VALID", "p");
    oc_check_build_error("pool rank", g, RILL_INVALID_ARGUMENT,
                         "Shape must be rank 4 but is rank 3 for 'p' (op: 'MaxPool')");
    rill_graph_free(g);

    g = g_new(&x, x4, 4, NULL, NULL, 0);
    raw(g, "MaxPool", &x, 1, (const int64_t[4]){1, 1, 1, 1}, 4, (const int64_t[3]){1, 2, 2}, 3,
        "VALID");
    oc_check_build_error("pool ksize length", g, RILL_INVALID_ARGUMENT,
                         "MaxPool requires the ksize attribute to contain 4 values, but got: 3");
    rill_graph_free(g);

    g = g_new(&x, x4, 4, NULL, NULL, 0);
    raw(g, "AvgPool", &x, 1, (const int64_t[2]){1, 1}, 2, (const int64_t[4]){1, 2, 2, 1}, 4,
        "VALID");
    oc_check_build_error("pool strides length", g, RILL_INVALID_ARGUMENT,
                         "AvgPool requires the stride attribute to contain 4 values, but got: 2");
    rill_graph_free(g);

    g = g_new(&x, x4, 4, NULL, NULL, 0);
    rill_avg_pool(g, x, (const int[4]){2, 2, 2, 1}, s1, "VALID", "p");
    oc_check_build_error("pool batch ksize", g, RILL_UNIMPLEMENTED,
                         "Pooling is not yet supported on the batch dimension.");
    rill_graph_free(g);

    g = g_new(&x, x4, 4, NULL, NULL, 0);
    rill_max_pool(g, x, k2, s1, "same", "p");
    oc_check_build_error("pool padding", g, RILL_INVALID_ARGUMENT,
                         "Value for attr 'padding' of \"same\" is not in the list of allowed "
                         "values: \"SAME\", \"VALID\"");
    rill_graph_free(g);

    /* Run time: shapes known only when fed. */
    g = rill_graph_new();
    x = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "x");
    w = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "w");
    rill_output y = rill_conv2d(g, x, w, s1, "VALID", NULL, "c");
    rill_session *s = oc_session(g);
    rill_tensor *fx = rill_tensor_new(RILL_FLOAT, x4, 4), *fw = rill_tensor_new(RILL_FLOAT, w4b, 4);
    rill_output feeds[2] = {x, w};
    rill_tensor *vals[2] = {fx, fw}, *out = NULL;
    rill_status *st = rill_status_new();
    rill_code c = rill_session_run(s, feeds, vals, 2, &y, &out, 1, NULL, 0, st);
    CHECK_EQ_INT(c, RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(st),
                       "input and filter must have the same depth: 3 vs 4");
    rill_tensor_free(out);
    rill_status_free(st);
    rill_session_free(s);
    rill_tensor_free(fx), rill_tensor_free(fw);
    rill_graph_free(g);
}

int main(void)
{
    oc_seed(20240611);
    test_conv_forward();
    test_pool_forward();
    test_conv_chunked();
    test_gradients();
    test_errors();
    TEST_MAIN_END();
}
