/* test_conv3d_ops.c - the 3-D windowed ops (Conv3D, Conv3DBackpropInputV2,
 * Conv3DBackpropFilterV2, MaxPool3D, AvgPool3D, MaxPool3DGrad, AvgPool3DGrad) on the CPU.
 *
 * Forward: every op in float and double against a double-precision reference written here as
 * plain loops over the definition (output sizes and SAME padding computed independently of
 * rill's), over shapes with strides, SAME and VALID, dilations, batches above one, 1x1x1 windows
 * and odd sizes; one batch big enough that the kernels cut it into patch chunks. Gradients: the
 * registered gradients of Conv3D, both backprops, the pools and AvgPool3DGrad against central
 * finite differences (oc_grad_check, double). Errors: TensorFlow's texts and classes for bad
 * ranks, attr lengths, batch strides, paddings, data formats, depth mismatches and negative
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
    int64_t n, in[3], c; /* input [N, D, H, W, C] */
    int64_t k[3], f;     /* window; f: conv output channels */
    int64_t s[3], d[3];
    bool same;
    int64_t out[3], pad[3];
} geo;

static void geo_finish(geo *g)
{
    for (int i = 0; i < 3; i++) {
        int64_t eff = (g->k[i] - 1) * g->d[i] + 1;
        if (g->same) {
            g->out[i] = (g->in[i] + g->s[i] - 1) / g->s[i];
            int64_t p = (g->out[i] - 1) * g->s[i] + eff - g->in[i];
            g->pad[i] = p > 0 ? p / 2 : 0;
        } else {
            g->out[i] = (g->in[i] - eff) / g->s[i] + 1;
            g->pad[i] = 0;
        }
    }
}

static int64_t xi(const geo *g, int64_t n, const int64_t *p, int64_t c)
{
    return (((n * g->in[0] + p[0]) * g->in[1] + p[1]) * g->in[2] + p[2]) * g->c + c;
}

static int64_t oi(const geo *g, int64_t n, const int64_t *o, int64_t c, int64_t ch)
{
    return (((n * g->out[0] + o[0]) * g->out[1] + o[1]) * g->out[2] + o[2]) * ch + c;
}

/* Runs the body for every (image, output position, window tap) with the tap in bounds. */
#define FOR_TAPS(g, dil, ...)                                                                      \
    for (int64_t n = 0; n < (g)->n; n++)                                                           \
        for (int64_t o0 = 0; o0 < (g)->out[0]; o0++)                                               \
            for (int64_t o1 = 0; o1 < (g)->out[1]; o1++)                                           \
                for (int64_t o2 = 0; o2 < (g)->out[2]; o2++)                                       \
                    for (int64_t k0 = 0; k0 < (g)->k[0]; k0++)                                     \
                        for (int64_t k1 = 0; k1 < (g)->k[1]; k1++)                                 \
                            for (int64_t k2 = 0; k2 < (g)->k[2]; k2++) {                           \
                                int64_t o[3] = {o0, o1, o2}, kk[3] = {k0, k1, k2}, p[3];           \
                                bool in = true;                                                    \
                                for (int i = 0; i < 3; i++) {                                      \
                                    p[i] = o[i] * (g)->s[i] - (g)->pad[i] + kk[i] * (dil)[i];      \
                                    in = in && p[i] >= 0 && p[i] < (g)->in[i];                     \
                                }                                                                  \
                                if (!in) continue;                                                 \
                                __VA_ARGS__                                                        \
                            }

static void conv_ref(const geo *g, const double *x, const double *w, const double *dy, double *y,
                     double *dx, double *dw)
{
    int64_t ny = g->n * g->out[0] * g->out[1] * g->out[2] * g->f;
    int64_t nx = g->n * g->in[0] * g->in[1] * g->in[2] * g->c;
    int64_t nw = g->k[0] * g->k[1] * g->k[2] * g->c * g->f;
    memset(y, 0, sizeof(double) * (size_t)ny);
    memset(dx, 0, sizeof(double) * (size_t)nx);
    memset(dw, 0, sizeof(double) * (size_t)nw);
    FOR_TAPS(g, g->d, {
        for (int64_t c = 0; c < g->c; c++)
            for (int64_t f = 0; f < g->f; f++) {
                int64_t wi = (((k0 * g->k[1] + k1) * g->k[2] + k2) * g->c + c) * g->f + f;
                int64_t a = xi(g, n, p, c), b = oi(g, n, o, f, g->f);
                y[b] += x[a] * w[wi];
                dx[a] += dy[b] * w[wi];
                dw[wi] += x[a] * dy[b];
            }
    })
}

/* Max and average pools and their gradients (every element equal to its window's maximum gets
 * the gradient, as in TensorFlow's MaxPool3DGrad). */
static void pool_ref(const geo *g, const double *x, const double *dy, double *ymax, double *yavg,
                     double *dmax, double *davg)
{
    int64_t ny = g->n * g->out[0] * g->out[1] * g->out[2] * g->c;
    int64_t nx = g->n * g->in[0] * g->in[1] * g->in[2] * g->c;
    int64_t *best = malloc(sizeof(int64_t) * (size_t)ny), *cnt = calloc((size_t)ny, sizeof *cnt);
    for (int64_t i = 0; i < ny; i++) best[i] = -1, yavg[i] = 0;
    memset(dmax, 0, sizeof(double) * (size_t)nx);
    memset(davg, 0, sizeof(double) * (size_t)nx);
    static const int64_t one[3] = {1, 1, 1};
    FOR_TAPS(g, one, {
        for (int64_t c = 0; c < g->c; c++) {
            int64_t a = xi(g, n, p, c), b = oi(g, n, o, c, g->c);
            if (best[b] < 0 || x[a] > x[best[b]]) best[b] = a;
            yavg[b] += x[a];
            cnt[b]++;
        }
    })
    for (int64_t b = 0; b < ny; b++) {
        ymax[b] = x[best[b]];
        yavg[b] /= (double)cnt[b];
    }
    FOR_TAPS(g, one, {
        for (int64_t c = 0; c < g->c; c++) {
            int64_t a = xi(g, n, p, c), b = oi(g, n, o, c, g->c);
            davg[a] += dy[b] / (double)cnt[b];
            if (x[a] == ymax[b]) dmax[a] += dy[b];
        }
    })
    free(best);
    free(cnt);
}

/* --- helpers --- */

/* The window attrs of one op: strides, dilations (convolutions) or ksize (pools), padding. */
typedef struct win {
    int64_t st[5], ex[5];
    int nst, nex;
    const char *pad, *format;
    int64_t sizes[5]; /* the size input of a backprop or AvgPool3DGrad */
} win;

static win win_of(const geo *g, bool pool)
{
    win w = {.nst = 5, .nex = 5, .pad = g->same ? "SAME" : "VALID"};
    w.st[0] = w.st[4] = w.ex[0] = w.ex[4] = 1;
    for (int i = 0; i < 3; i++) w.st[i + 1] = g->s[i], w.ex[i + 1] = pool ? g->k[i] : g->d[i];
    return w;
}

static rill_output op3d(rill_graph *g, const char *op, const rill_output *in, int nin, const win *w,
                        const char *name)
{
    bool pool = strstr(op, "Pool") != NULL;
    rill__attr a[5] = {RILL__A_INTS("strides", w->nst, w->st), RILL__A_STRING("padding", w->pad),
                       RILL__A_TYPE("T", rill_output_dtype(in[nin - 1])),
                       RILL__A_INTS(pool ? "ksize" : "dilations", w->nex, w->ex)};
    int na = 4;
    if (w->format) a[na++] = RILL__A_STRING("data_format", w->format);
    return (rill_output){rill__node_create(g, op, name, in, nin, a, na), 0};
}

/* --- forward checks --- */

static const geo conv_cases[] = {
    /* n  in         c  k          f  s          d          same */
    {1, {4, 5, 5}, 1, {2, 3, 3}, 1, {1, 1, 1}, {1, 1, 1}, false, {0}, {0}},
    {2, {5, 6, 4}, 3, {3, 3, 2}, 4, {2, 2, 1}, {1, 1, 1}, true, {0}, {0}},
    {2, {6, 7, 5}, 2, {2, 3, 2}, 3, {1, 1, 1}, {2, 2, 1}, true, {0}, {0}},
    {3, {3, 4, 5}, 3, {1, 1, 1}, 5, {1, 1, 1}, {1, 1, 1}, false, {0}, {0}},
    {1, {7, 5, 6}, 2, {3, 2, 2}, 2, {2, 3, 2}, {1, 1, 1}, false, {0}, {0}},
    {2, {4, 4, 4}, 2, {1, 1, 1}, 3, {2, 2, 2}, {1, 1, 1}, true, {0}, {0}},
    {1, {6, 6, 5}, 2, {3, 3, 3}, 2, {1, 2, 1}, {2, 1, 2}, false, {0}, {0}},
    /* enough patches (in double) that the kernels cut the batch into chunks of 64 MiB */
    {12, {16, 16, 16}, 8, {3, 3, 3}, 4, {1, 1, 1}, {1, 1, 1}, true, {0}, {0}},
};

static void test_conv_forward(void)
{
    for (size_t ci = 0; ci < sizeof conv_cases / sizeof *conv_cases; ci++)
        for (int ti = 0; ti < 2; ti++) {
            rill_dtype t = ti ? RILL_DOUBLE : RILL_FLOAT;
            geo g = conv_cases[ci];
            geo_finish(&g);
            int64_t xd[5] = {g.n, g.in[0], g.in[1], g.in[2], g.c},
                    wd[5] = {g.k[0], g.k[1], g.k[2], g.c, g.f},
                    yd[5] = {g.n, g.out[0], g.out[1], g.out[2], g.f};
            int64_t nx = oc_numel(xd, 5), nw = oc_numel(wd, 5), ny = oc_numel(yd, 5);
            double *x = oc_randv(nx, -1, 1, t), *w = oc_randv(nw, -1, 1, t),
                   *dy = oc_randv(ny, -1, 1, t);
            double *y = malloc(sizeof(double) * (size_t)ny),
                   *dx = malloc(sizeof(double) * (size_t)nx),
                   *dw = malloc(sizeof(double) * (size_t)nw);
            conv_ref(&g, x, w, dy, y, dx, dw);
            rill_graph *gr = rill_graph_new();
            rill_tensor *vals[3] = {oc_tensor(t, xd, 5, x), oc_tensor(t, wd, 5, w),
                                    oc_tensor(t, yd, 5, dy)};
            rill_output ph[3];
            for (int i = 0; i < 3; i++)
                ph[i] = rill_placeholder(gr, t, *rill_tensor_shape(vals[i]), NULL);
            win wa = win_of(&g, false);
            rill_output yo = op3d(gr, "Conv3D", (rill_output[]){ph[0], ph[1]}, 2, &wa, NULL);
            rill_output bi =
                op3d(gr, "Conv3DBackpropInputV2",
                     (rill_output[]){oc_sizes_const(gr, xd, 5), ph[1], ph[2]}, 3, &wa, NULL);
            rill_output bf =
                op3d(gr, "Conv3DBackpropFilterV2",
                     (rill_output[]){ph[0], oc_sizes_const(gr, wd, 5), ph[2]}, 3, &wa, NULL);
            char label[160];
            snprintf(label, sizeof label, "conv3d case %zu %s", ci, rill_dtype_name(t));
            if (CHECK(rill_graph_ok(gr))) {
                rill_shape ys = rill_output_shape(yo), bis = rill_output_shape(bi),
                           bfs = rill_output_shape(bf);
                CHECK(rill_shape_equal(&ys, &(rill_shape){5, {yd[0], yd[1], yd[2], yd[3], yd[4]}}));
                CHECK(rill_shape_equal(&bis, rill_tensor_shape(vals[0])));
                CHECK(rill_shape_equal(&bfs, rill_tensor_shape(vals[1])));
                rill_session *s = oc_session(gr);
                const rill_output outs[3] = {yo, bi, bf};
                const int64_t *dims[3] = {yd, xd, wd};
                const double *refs[3] = {y, dx, dw};
                for (int o = 0; o < 3; o++) {
                    rill_tensor *r = oc_run(s, outs[o], ph, vals, 3);
                    char l2[200];
                    snprintf(l2, sizeof l2, "%s output %d", label, o);
                    oc_check_close(l2, r, t, dims[o], 5, refs[o]);
                    rill_tensor_free(r);
                }
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
    /* n  in         c  k          f  s          d          same */
    {1, {4, 4, 4}, 1, {2, 2, 2}, 0, {2, 2, 2}, {1, 1, 1}, false, {0}, {0}},
    {2, {5, 4, 7}, 3, {3, 2, 3}, 0, {2, 1, 2}, {1, 1, 1}, true, {0}, {0}},
    {1, {3, 6, 5}, 2, {1, 3, 2}, 0, {1, 1, 1}, {1, 1, 1}, true, {0}, {0}},
    {2, {3, 3, 3}, 1, {1, 1, 1}, 0, {1, 1, 1}, {1, 1, 1}, false, {0}, {0}},
    {3, {5, 5, 5}, 2, {4, 4, 4}, 0, {3, 3, 3}, {1, 1, 1}, true, {0}, {0}},
};

static void test_pool_forward(void)
{
    for (size_t ci = 0; ci < sizeof pool_cases / sizeof *pool_cases; ci++)
        for (int ti = 0; ti < 4; ti++) { /* float, double, and both with ties */
            rill_dtype t = ti & 1 ? RILL_DOUBLE : RILL_FLOAT;
            bool ties = ti >= 2;
            geo g = pool_cases[ci];
            geo_finish(&g);
            int64_t xd[5] = {g.n, g.in[0], g.in[1], g.in[2], g.c},
                    yd[5] = {g.n, g.out[0], g.out[1], g.out[2], g.c};
            int64_t nx = oc_numel(xd, 5), ny = oc_numel(yd, 5);
            double *x = oc_randv(nx, -1, 1, t), *dy = oc_randv(ny, -1, 1, t);
            /* -1, 0 and 1 only: windows hold their maximum more than once, and every place of
             * it gets the gradient */
            for (int64_t i = 0; ties && i < nx; i++) x[i] = (double)lround(x[i] * 1.5);
            double *ym = malloc(sizeof(double) * (size_t)ny),
                   *ya = malloc(sizeof(double) * (size_t)ny),
                   *dm = malloc(sizeof(double) * (size_t)nx),
                   *da = malloc(sizeof(double) * (size_t)nx);
            pool_ref(&g, x, dy, ym, ya, dm, da);
            rill_graph *gr = rill_graph_new();
            rill_tensor *vals[2] = {oc_tensor(t, xd, 5, x), oc_tensor(t, yd, 5, dy)};
            rill_output ph[2] = {rill_placeholder(gr, t, *rill_tensor_shape(vals[0]), NULL),
                                 rill_placeholder(gr, t, *rill_tensor_shape(vals[1]), NULL)};
            win wa = win_of(&g, true);
            rill_output mp = op3d(gr, "MaxPool3D", ph, 1, &wa, NULL);
            rill_output ap = op3d(gr, "AvgPool3D", ph, 1, &wa, NULL);
            rill_output mg =
                op3d(gr, "MaxPool3DGrad", (rill_output[]){ph[0], mp, ph[1]}, 3, &wa, NULL);
            rill_output ag = op3d(gr, "AvgPool3DGrad",
                                  (rill_output[]){oc_sizes_const(gr, xd, 5), ph[1]}, 2, &wa, NULL);
            char label[160];
            snprintf(label, sizeof label, "pool3d case %zu %s%s", ci, rill_dtype_name(t),
                     ties ? " ties" : "");
            if (CHECK(rill_graph_ok(gr))) {
                rill_shape ms = rill_output_shape(mp), as = rill_output_shape(ag);
                CHECK(rill_shape_equal(&ms, &(rill_shape){5, {yd[0], yd[1], yd[2], yd[3], yd[4]}}));
                CHECK(rill_shape_equal(&as, rill_tensor_shape(vals[0])));
                rill_session *s = oc_session(gr);
                const rill_output outs[4] = {mp, ap, mg, ag};
                const double *refs[4] = {ym, ya, dm, da};
                for (int o = 0; o < 4; o++) {
                    rill_tensor *r = oc_run(s, outs[o], ph, vals, 2);
                    char l2[200];
                    snprintf(l2, sizeof l2, "%s output %d", label, o);
                    oc_check_close(l2, r, t, o < 2 ? yd : xd, 5, refs[o]);
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

/* --- gradients --- */

typedef struct grad_ctx {
    win w;
    const char *op;
} grad_ctx;

static rill_output build_one(rill_graph *g, const rill_output *xs, void *arg)
{
    grad_ctx *c = arg;
    if (strcmp(c->op, "Conv3D") == 0) return op3d(g, c->op, xs, 2, &c->w, NULL);
    if (strcmp(c->op, "Conv3DBackpropInputV2") == 0)
        return op3d(g, c->op, (rill_output[]){oc_sizes_const(g, c->w.sizes, 5), xs[0], xs[1]}, 3,
                    &c->w, NULL);
    if (strcmp(c->op, "Conv3DBackpropFilterV2") == 0)
        return op3d(g, c->op, (rill_output[]){xs[0], oc_sizes_const(g, c->w.sizes, 5), xs[1]}, 3,
                    &c->w, NULL);
    if (strcmp(c->op, "AvgPool3DGrad") == 0)
        return op3d(g, c->op, (rill_output[]){oc_sizes_const(g, c->w.sizes, 5), xs[0]}, 2, &c->w,
                    NULL);
    return op3d(g, c->op, xs, 1, &c->w, NULL);
}

static void test_gradients(void)
{
    oc_grad_opts o = {.rtol = 1e-5, .atol = 1e-7};
    static const geo cc[] = {
        {2, {4, 3, 4}, 2, {2, 2, 3}, 3, {2, 1, 2}, {1, 1, 1}, true, {0}, {0}},
        {1, {5, 4, 4}, 2, {2, 2, 2}, 2, {1, 1, 1}, {2, 1, 2}, false, {0}, {0}},
    };
    for (size_t i = 0; i < sizeof cc / sizeof *cc; i++) {
        geo g = cc[i];
        geo_finish(&g);
        grad_ctx c = {win_of(&g, false), "Conv3D"};
        int64_t xd[5] = {g.n, g.in[0], g.in[1], g.in[2], g.c},
                wd[5] = {g.k[0], g.k[1], g.k[2], g.c, g.f},
                yd[5] = {g.n, g.out[0], g.out[1], g.out[2], g.f};
        rill_tensor *v[2] = {oc_random(xd, 5, -1, 1), oc_random(wd, 5, -1, 1)};
        rill_tensor *d = oc_random(yd, 5, -1, 1);
        char label[64];
        snprintf(label, sizeof label, "Conv3D grad case %zu", i);
        oc_grad_check(label, 2, v, build_one, &c, o);
        c.op = "Conv3DBackpropInputV2";
        memcpy(c.w.sizes, xd, sizeof xd);
        snprintf(label, sizeof label, "Conv3DBackpropInputV2 grad case %zu", i);
        oc_grad_check(label, 2, (rill_tensor *[]){v[1], d}, build_one, &c, o);
        c.op = "Conv3DBackpropFilterV2";
        memcpy(c.w.sizes, wd, sizeof wd);
        snprintf(label, sizeof label, "Conv3DBackpropFilterV2 grad case %zu", i);
        oc_grad_check(label, 2, (rill_tensor *[]){v[0], d}, build_one, &c, o);
        rill_tensor_free(v[0]);
        rill_tensor_free(v[1]);
        rill_tensor_free(d);
    }
    static const geo pc[] = {
        {1, {4, 5, 5}, 2, {2, 3, 3}, 0, {2, 2, 2}, {1, 1, 1}, true, {0}, {0}},
        {2, {3, 4, 5}, 1, {2, 2, 2}, 0, {1, 1, 2}, {1, 1, 1}, false, {0}, {0}},
    };
    for (size_t i = 0; i < sizeof pc / sizeof *pc; i++) {
        geo g = pc[i];
        geo_finish(&g);
        grad_ctx c = {win_of(&g, true), "MaxPool3D"};
        int64_t xd[5] = {g.n, g.in[0], g.in[1], g.in[2], g.c},
                yd[5] = {g.n, g.out[0], g.out[1], g.out[2], g.c};
        memcpy(c.w.sizes, xd, sizeof xd);
        rill_tensor *x = oc_random(xd, 5, -1, 1), *d = oc_random(yd, 5, -1, 1);
        char label[64];
        snprintf(label, sizeof label, "MaxPool3D grad case %zu", i);
        oc_grad_check(label, 1, &x, build_one, &c, o);
        c.op = "AvgPool3D";
        snprintf(label, sizeof label, "AvgPool3D grad case %zu", i);
        oc_grad_check(label, 1, &x, build_one, &c, o);
        c.op = "AvgPool3DGrad";
        snprintf(label, sizeof label, "AvgPool3DGrad grad case %zu", i);
        oc_grad_check(label, 1, &d, build_one, &c, o);
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

static void build_error(const char *label, const char *op, const int64_t *xd, int xr,
                        const int64_t *wd, int wr, win w, rill_code code, const char *text)
{
    rill_output in[2];
    rill_graph *g = g_new(&in[0], xd, xr, wd ? &in[1] : NULL, wd, wr);
    op3d(g, op, in, wd ? 2 : 1, &w, "c");
    oc_check_build_error(label, g, code, text);
    rill_graph_free(g);
}

/* Feeds x and w (float, shapes xd and wd) to op over unknown-shape placeholders; checks the
 * run's error. */
static void run_error(const char *label, const char *op, const int64_t *xd, const int64_t *wd,
                      win w, const char *text)
{
    rill_graph *g = rill_graph_new();
    rill_output ph[3] = {rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "x"),
                         rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "w")};
    bool mpg = strcmp(op, "MaxPool3DGrad") == 0;
    if (mpg) ph[2] = ph[1], ph[1] = op3d(g, "MaxPool3D", ph, 1, &w, NULL);
    rill_output y = op3d(g, op, ph, mpg ? 3 : 2, &w, "c");
    rill_session *s = oc_session(g);
    rill_tensor *vals[2] = {rill_tensor_new(RILL_FLOAT, xd, 5), rill_tensor_new(RILL_FLOAT, wd, 5)};
    memset(rill_tensor_data(vals[0]), 0, rill_tensor_num_elements(vals[0]) * sizeof(float));
    memset(rill_tensor_data(vals[1]), 0, rill_tensor_num_elements(vals[1]) * sizeof(float));
    rill_output feeds[2] = {ph[0], mpg ? ph[2] : ph[1]};
    rill_tensor *out = NULL;
    rill_status *st = rill_status_new();
    rill_code c = rill_session_run(s, feeds, vals, 2, &y, &out, 1, NULL, 0, st);
    if (!CHECK_EQ_INT(c, RILL_INVALID_ARGUMENT) ||
        !CHECK_STR_CONTAINS(rill_status_message(st), text))
        fprintf(stderr, "  case: %s\n", label);
    rill_tensor_free(out);
    rill_status_free(st);
    rill_session_free(s);
    rill_tensor_free(vals[0]), rill_tensor_free(vals[1]);
    rill_graph_free(g);
}

static void test_errors(void)
{
    const int64_t x5[5] = {1, 4, 4, 4, 2}, x4[4] = {4, 4, 4, 2}, w5[5] = {2, 2, 2, 2, 3},
                  w5c[5] = {2, 2, 2, 3, 3}, w5g[5] = {2, 2, 2, 1, 3}, w5big[5] = {5, 2, 2, 2, 3};
    const win c1 = {{1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}, 5, 5, "SAME", NULL, {0}};
    const win p2 = {{1, 1, 1, 1, 1}, {1, 2, 2, 2, 1}, 5, 5, "VALID", NULL, {0}};
    win w;

    build_error("conv rank", "Conv3D", x4, 4, w5, 5, c1, RILL_INVALID_ARGUMENT,
                "Shape must be rank 5 but is rank 4 for 'c' (op: 'Conv3D') with input shapes: "
                "[4,4,4,2], [2,2,2,2,3].");
    build_error("conv depth", "Conv3D", x5, 5, w5c, 5, c1, RILL_INVALID_ARGUMENT,
                "Depth of input (2) is not a multiple of input depth of filter (3)");
    build_error("conv groups", "Conv3D", x5, 5, w5g, 5, c1, RILL_INVALID_ARGUMENT,
                "input and filter must have the same depth: 2 vs 1");
    w = c1, w.pad = "FOO";
    build_error("conv padding", "Conv3D", x5, 5, w5, 5, w, RILL_INVALID_ARGUMENT,
                "Value for attr 'padding' of \"FOO\" is not in the list of allowed values: "
                "\"SAME\", \"VALID\"");
    w = c1, w.st[0] = 2;
    build_error("conv batch stride", "Conv3D", x5, 5, w5, 5, w, RILL_UNIMPLEMENTED,
                "Current implementation does not yet support strides in the batch and depth "
                "dimensions.");
    w = c1, w.st[2] = 0;
    build_error("conv zero stride", "Conv3D", x5, 5, w5, 5, w, RILL_INVALID_ARGUMENT,
                "Stride must be > 0, but got 0");
    w = c1, w.ex[4] = 2;
    build_error("conv depth dilation", "Conv3D", x5, 5, w5, 5, w, RILL_INVALID_ARGUMENT,
                "Current implementation does not yet support dilations rates in the batch and "
                "depth dimensions.");
    w = c1, w.ex[1] = 0;
    build_error("conv zero dilation", "Conv3D", x5, 5, w5, 5, w, RILL_INVALID_ARGUMENT,
                "Dilation rate must be >= 1, but got 0");
    w = c1, w.nst = 4;
    build_error("conv strides length", "Conv3D", x5, 5, w5, 5, w, RILL_INVALID_ARGUMENT,
                "Conv3D requires the stride attribute to contain 5 values, but got: 4");
    w = c1, w.pad = "VALID";
    build_error("conv negative", "Conv3D", x5, 5, w5big, 5, w, RILL_INVALID_ARGUMENT,
                "Negative dimension size caused by subtracting 5 from 4 for 'c' (op: 'Conv3D')");
    w = c1, w.format = "NCDHW";
    build_error("conv NCDHW", "Conv3D", x5, 5, w5, 5, w, RILL_UNIMPLEMENTED, "data_format NCDHW");
    w = c1, w.format = "NHWC";
    build_error("conv format", "Conv3D", x5, 5, w5, 5, w, RILL_INVALID_ARGUMENT,
                "Attr 'data_format' of 'Conv3D' Op passed string 'NHWC' not in: \"NDHWC\", "
                "\"NCDHW\".");

    build_error("pool rank", "MaxPool3D", x4, 4, NULL, 0, p2, RILL_INVALID_ARGUMENT,
                "Shape must be rank 5 but is rank 4 for 'c' (op: 'MaxPool3D')");
    w = p2, w.nex = 4;
    build_error("pool ksize length", "MaxPool3D", x5, 5, NULL, 0, w, RILL_INVALID_ARGUMENT,
                "MaxPool3D requires the ksize attribute to contain 5 values, but got: 4");
    w = p2, w.ex[0] = 2;
    build_error("pool batch", "AvgPool3D", x5, 5, NULL, 0, w, RILL_UNIMPLEMENTED,
                "Pooling is not yet supported on the batch dimension.");
    w = p2, w.ex[4] = 2;
    build_error("pool depth", "AvgPool3D", x5, 5, NULL, 0, w, RILL_UNIMPLEMENTED,
                "Pooling is not yet supported on the depth dimension.");
    w = p2, w.ex[1] = 0;
    build_error("pool zero ksize", "MaxPool3D", x5, 5, NULL, 0, w, RILL_INVALID_ARGUMENT,
                "Sliding window ksize for dimension 1 was zero.");
    w = p2, w.ex[1] = 5;
    build_error("pool negative", "MaxPool3D", x5, 5, NULL, 0, w, RILL_INVALID_ARGUMENT,
                "Negative dimension size caused by subtracting 5 from 4");

    /* Run time: shapes known only when fed. */
    run_error("conv run depth", "Conv3D", x5, w5c, c1,
              "input and filter must have the same depth: 2 vs 3");
    const int64_t dy_bad[5] = {1, 2, 3, 3, 2};
    run_error("max pool grad shape", "MaxPool3DGrad", x5, dy_bad, p2,
              "Expected grad shape to be [1,3,3,3,2], but got [1,2,3,3,2]");
}

int main(void)
{
    oc_seed(20261202);
    test_conv_forward();
    test_pool_forward();
    test_gradients();
    test_errors();
    TEST_MAIN_END();
}
