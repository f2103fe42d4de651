/* cpu_conv.c - CPU kernels for the windowed ops, NHWC, float and double: Conv2D,
 * Conv2DBackpropInput, Conv2DBackpropFilter, MaxPool, AvgPool, MaxPoolGrad and AvgPoolGrad.
 *
 * Every kernel checks its inputs with rill__check_window_op (checks.c, shared with OpenCL), which
 * also gives the window's geometry (rill__window, graph/ops_conv.c), then computes:
 *   Conv2D                im2col then one GEMM: the patches [N*OH*OW, KH*KW*C] times the filter
 *                         viewed as [KH*KW*C, F] give the output [N*OH*OW, F] in place
 *   Conv2DBackpropInput   out_backprop [N*OH*OW, F] times the filter transposed gives the patch
 *                         gradients, added back into the input's places (col2im)
 *   Conv2DBackpropFilter  the patches transposed times out_backprop
 * The batch is taken in chunks so the patch buffer stays under CONV_SCRATCH_BYTES; a 1x1 window
 * with stride 1 needs no patches (the input is its own patch matrix). im2col is sharded over
 * patch rows, col2im over images (an image's patches only touch that image), the GEMMs over rows
 * of their product (gemm.c).
 *
 * The pools are direct loops: MaxPool and AvgPool over output positions, their gradients over
 * images (scatters stay inside an image). MaxPoolGrad sends each gradient to the first maximum
 * of its window in row-major order, recomputed from orig_input as TensorFlow's CPU kernel does;
 * AvgPool divides by the number of in-bounds elements of each window. Float pools accumulate in
 * double. */
#include "../../core/core.h"
#include "../kernel.h"
#include "gemm.h"
#include "onednn_conv.h"

#include <math.h>
#include <string.h>

/* The most bytes of patches held at once. */
#define CONV_SCRATCH_BYTES ((int64_t)64 << 20)
/* Elements per shard below which splitting costs more than it saves. */
#define CONV_GRAIN (1 << 15)

/* C = op(A) op(B) for float or double; nothing to do for empty products, zeros when k is 0. */
static bool gemm(rill__threadpool *pool, rill_dtype t, bool ta, bool tb, int64_t m, int64_t n,
                 int64_t k, const void *a, int64_t lda, const void *b, int64_t ldb, void *c,
                 int64_t ldc)
{
    if (m == 0 || n == 0) return true;
    if (k == 0) {
        size_t es = rill_dtype_size(t);
        for (int64_t r = 0; r < m; r++)
            memset((char *)c + (size_t)(r * ldc) * es, 0, (size_t)n * es);
        return true;
    }
    if (t == RILL_FLOAT) return rill__gemm_f32(pool, ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
    rill__gemm_f64(pool, ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
    return true;
}

static inline double ld(const void *p, bool dbl, int64_t i)
{
    return dbl ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

static inline void st(void *p, bool dbl, int64_t i, double v)
{
    if (dbl)
        ((double *)p)[i] = v;
    else
        ((float *)p)[i] = (float)v;
}

/* --- patches --- */

typedef struct conv_job {
    const rill__window *w;
    bool dbl;
    size_t es;
    const char *x; /* im2col: the chunk's first image */
    char *col;     /* [rows, K] */
    char *dx;      /* col2im: the chunk's first image of the input gradient */
} conv_job;

/* Patch rows [b, e) of the chunk: row r is output position r of the chunk's images. */
static void im2col_range(void *arg, int64_t b, int64_t e)
{
    const conv_job *j = arg;
    const rill__window *w = j->w;
    size_t cb = (size_t)w->c * j->es;
    int64_t k = w->kh * w->kw * w->c, per = w->oh * w->ow;
    for (int64_t r = b; r < e; r++) {
        int64_t img = r / per, p = r % per, oy = p / w->ow, ox = p % w->ow;
        char *dst = j->col + (size_t)(r * k) * j->es;
        for (int64_t ky = 0; ky < w->kh; ky++) {
            int64_t iy = oy * w->sh - w->pt + ky * w->dh;
            for (int64_t kx = 0; kx < w->kw; kx++, dst += cb) {
                int64_t ix = ox * w->sw - w->pl + kx * w->dw;
                if (iy < 0 || iy >= w->ih || ix < 0 || ix >= w->iw)
                    memset(dst, 0, cb);
                else
                    memcpy(dst, j->x + (size_t)(((img * w->ih + iy) * w->iw + ix) * w->c) * j->es,
                           cb);
            }
        }
    }
}

/* Images [b, e) of the chunk: adds each patch gradient row back into its input places. */
static void col2im_range(void *arg, int64_t b, int64_t e)
{
    const conv_job *j = arg;
    const rill__window *w = j->w;
    int64_t k = w->kh * w->kw * w->c, per = w->oh * w->ow;
    for (int64_t img = b; img < e; img++)
        for (int64_t p = 0; p < per; p++) {
            int64_t oy = p / w->ow, ox = p % w->ow, src = (img * per + p) * k;
            for (int64_t ky = 0; ky < w->kh; ky++) {
                int64_t iy = oy * w->sh - w->pt + ky * w->dh;
                for (int64_t kx = 0; kx < w->kw; kx++, src += w->c) {
                    int64_t ix = ox * w->sw - w->pl + kx * w->dw;
                    if (iy < 0 || iy >= w->ih || ix < 0 || ix >= w->iw) continue;
                    int64_t dst = ((img * w->ih + iy) * w->iw + ix) * w->c;
                    if (j->dbl) {
                        double *d = (double *)j->dx + dst;
                        const double *s = (const double *)j->col + src;
                        for (int64_t c = 0; c < w->c; c++) d[c] += s[c];
                    } else {
                        float *d = (float *)j->dx + dst;
                        const float *s = (const float *)j->col + src;
                        for (int64_t c = 0; c < w->c; c++) d[c] += s[c];
                    }
                }
            }
        }
}

/* A 1x1 window at stride 1: the input is its own patch matrix. */
static bool is_pointwise(const rill__window *w)
{
    return w->kh == 1 && w->kw == 1 && w->sh == 1 && w->sw == 1;
}

/* Images per chunk so that a chunk's patches fit CONV_SCRATCH_BYTES (at least one). */
static int64_t chunk_images(const rill__window *w, size_t es)
{
    int64_t per = w->oh * w->ow * w->kh * w->kw * w->c * (int64_t)es;
    int64_t n = per > 0 ? CONV_SCRATCH_BYTES / per : w->n;
    n = n < 1 ? 1 : n;
    return n < w->n ? n : w->n;
}

/* Fills j->col with the patches of images [b0, b0 + nb) of x. */
static void im2col(rill__kctx *ctx, conv_job *j, const rill_tensor *x, int64_t b0, int64_t nb)
{
    const rill__window *w = j->w;
    j->x = (const char *)x->buf->data + (size_t)(b0 * w->ih * w->iw * w->c) * j->es;
    int64_t k = w->kh * w->kw * w->c;
    int64_t min = CONV_GRAIN / (k > 0 ? k : 1);
    rill__parallel_for(ctx->pool, nb * w->oh * w->ow, min > 0 ? min : 1, im2col_range, j);
}

/* Patch buffers come from the block cache (rill__aligned_alloc keeps freed blocks of 64 KiB and
 * up, by size): a step of the same shapes gets the same pages back instead of faulting in new
 * ones, which cost more than the im2col itself. *bytes is what to free with. */
static void *scratch(int64_t elems, size_t es, size_t *bytes)
{
    *bytes = (size_t)(elems > 0 ? elems : 1) * es;
    void *p = rill__aligned_alloc(*bytes);
    RILL_CHECK_ALLOC(p);
    return p;
}

static void scratch_free(void *p, size_t bytes)
{
    if (p) rill__aligned_free(p, bytes);
}

static void gemm_failed(rill__kctx *ctx)
{
    rill__kctx_fail(ctx, RILL_INTERNAL, "%s: oneDNN's sgemm failed", ctx->node->op->name);
}

/* --- convolution kernels --- */

/* Float through oneDNN's convolutions (onednn_conv.c) where it has tuned kernels for the window:
 * true when done (or failed, reported). */
static bool by_onednn(rill__kctx *ctx, rill__conv_kind kind, const rill__window *w,
                      const rill__conv_args *a)
{
    if (ctx->inputs[kind == RILL__CONV_BACK_FILTER ? 0 : 1]->dtype != RILL_FLOAT) return false;
    char err[256];
    int r = rill__onednn_conv(ctx->pool, kind, w, a, err, sizeof err);
    if (r < 0) rill__kctx_fail(ctx, RILL_INTERNAL, "%s: %s", ctx->node->op->name, err);
    return r != 0;
}

/* Conv2D, and _FusedConv2D's Conv2D + BiasAdd (+ Relu) when bias is given (float only). */
static void conv2d_run(rill__kctx *ctx, const float *bias, bool relu)
{
    rill__window w;
    if (!rill__check_window_op(ctx, &w)) return;
    const rill_tensor *x = ctx->inputs[0], *filt = ctx->inputs[1];
    rill_dtype t = x->dtype;
    rill_shape os = rill_shape_make(4, (int64_t[4]){w.n, w.oh, w.ow, w.f});
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, t, &os);
    if (!y || y->numel == 0) return;
    if (by_onednn(ctx, RILL__CONV_FORWARD, &w,
                  &(rill__conv_args){.x = x->buf->data, .filter = filt->buf->data, .bias = bias,
                                     .relu = relu, .out = y->buf->data}))
        return;
    conv_job j = {.w = &w, .dbl = t == RILL_DOUBLE, .es = rill_dtype_size(t)};
    int64_t k = w.kh * w.kw * w.c, per = w.oh * w.ow, chunk = chunk_images(&w, j.es);
    bool direct = is_pointwise(&w);
    size_t col_bytes = 0;
    if (!direct) j.col = scratch(chunk * per * k, j.es, &col_bytes);
    for (int64_t b0 = 0; b0 < w.n; b0 += chunk) {
        int64_t nb = w.n - b0 < chunk ? w.n - b0 : chunk;
        const void *a = x->buf->data;
        if (direct)
            a = (const char *)a + (size_t)(b0 * per * k) * j.es;
        else
            im2col(ctx, &j, x, b0, nb), a = j.col;
        char *c = (char *)y->buf->data + (size_t)(b0 * per * w.f) * j.es;
        bool ok = bias ? rill__gemm_f32_bias(ctx->pool, false, false, nb * per, w.f, k, a, k,
                                             filt->buf->data, w.f, (float *)c, w.f, bias, relu)
                       : gemm(ctx->pool, t, false, false, nb * per, w.f, k, a, k,
                              filt->buf->data, w.f, c, w.f);
        if (!ok) {
            gemm_failed(ctx);
            break;
        }
    }
    scratch_free(j.col, col_bytes);
}

static void conv2d_kernel(rill__kctx *ctx)
{
    conv2d_run(ctx, NULL, false);
}

/* _FusedConv2D(input, filter, bias): the partitioner fuses only where Conv2D's shapes are known
 * and the bias matches them, so nothing is left to check that the ops would. */
static void fused_conv2d_kernel(rill__kctx *ctx)
{
    const rill__attr *act = rill__node_attr(ctx->node, "activation");
    conv2d_run(ctx, ctx->inputs[2]->buf->data, act && strcmp(act->v.s, "Relu") == 0);
}

static void conv2d_bp_input_kernel(rill__kctx *ctx)
{
    rill__window w;
    if (!rill__check_window_op(ctx, &w)) return;
    const rill_tensor *filt = ctx->inputs[1], *dy = ctx->inputs[2];
    rill_dtype t = filt->dtype;
    rill_shape xs = rill_shape_make(4, (int64_t[4]){w.n, w.ih, w.iw, w.c});
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, t, &xs);
    if (!dx || dx->numel == 0) return;
    if (by_onednn(ctx, RILL__CONV_BACK_INPUT, &w,
                  &(rill__conv_args){.filter = filt->buf->data, .dy = dy->buf->data,
                                     .out = dx->buf->data}))
        return;
    conv_job j = {.w = &w, .dbl = t == RILL_DOUBLE, .es = rill_dtype_size(t)};
    int64_t k = w.kh * w.kw * w.c, per = w.oh * w.ow, chunk = chunk_images(&w, j.es);
    bool direct = is_pointwise(&w);
    size_t col_bytes = 0;
    if (!direct) {
        memset(dx->buf->data, 0, rill_tensor_nbytes(dx));
        j.col = scratch(chunk * per * k, j.es, &col_bytes);
    }
    for (int64_t b0 = 0; b0 < w.n; b0 += chunk) {
        int64_t nb = w.n - b0 < chunk ? w.n - b0 : chunk;
        const char *d = (const char *)dy->buf->data + (size_t)(b0 * per * w.f) * j.es;
        char *img = (char *)dx->buf->data + (size_t)(b0 * w.ih * w.iw * w.c) * j.es;
        if (!gemm(ctx->pool, t, false, true, nb * per, k, w.f, d, w.f, filt->buf->data, w.f,
                  direct ? img : j.col, k)) {
            gemm_failed(ctx);
            break;
        }
        if (direct) continue;
        j.dx = img;
        rill__parallel_for(ctx->pool, nb, 1, col2im_range, &j);
    }
    scratch_free(j.col, col_bytes);
}

static void conv2d_bp_filter_kernel(rill__kctx *ctx)
{
    rill__window w;
    if (!rill__check_window_op(ctx, &w)) return;
    const rill_tensor *x = ctx->inputs[0], *dy = ctx->inputs[2];
    rill_dtype t = x->dtype;
    rill_shape fs = rill_shape_make(4, (int64_t[4]){w.kh, w.kw, w.c, w.f});
    rill_tensor *dw = rill__kctx_alloc_output(ctx, 0, t, &fs);
    if (!dw || dw->numel == 0) return;
    if (by_onednn(ctx, RILL__CONV_BACK_FILTER, &w,
                  &(rill__conv_args){.x = x->buf->data, .dy = dy->buf->data,
                                     .out = dw->buf->data}))
        return;
    conv_job j = {.w = &w, .dbl = t == RILL_DOUBLE, .es = rill_dtype_size(t)};
    int64_t k = w.kh * w.kw * w.c, per = w.oh * w.ow, chunk = chunk_images(&w, j.es);
    bool direct = is_pointwise(&w);
    void *part = NULL;
    if (w.n * per == 0) memset(dw->buf->data, 0, rill_tensor_nbytes(dw));
    size_t col_bytes = 0, part_bytes = 0;
    if (!direct) j.col = scratch(chunk * per * k, j.es, &col_bytes);
    if (chunk < w.n) part = scratch(dw->numel, j.es, &part_bytes);
    for (int64_t b0 = 0; b0 < w.n; b0 += chunk) {
        int64_t nb = w.n - b0 < chunk ? w.n - b0 : chunk;
        const void *a = x->buf->data;
        if (direct)
            a = (const char *)a + (size_t)(b0 * per * k) * j.es;
        else
            im2col(ctx, &j, x, b0, nb), a = j.col;
        const char *d = (const char *)dy->buf->data + (size_t)(b0 * per * w.f) * j.es;
        void *c = b0 == 0 ? dw->buf->data : part;
        if (!gemm(ctx->pool, t, true, false, k, w.f, nb * per, a, k, d, w.f, c, w.f)) {
            gemm_failed(ctx);
            break;
        }
        if (b0 == 0) continue;
        for (int64_t i = 0; i < dw->numel; i++)
            st(dw->buf->data, j.dbl, i, ld(dw->buf->data, j.dbl, i) + ld(part, j.dbl, i));
    }
    scratch_free(part, part_bytes);
    scratch_free(j.col, col_bytes);
}

/* --- pooling --- */

typedef struct pool_job {
    const rill__window *w;
    bool dbl;
    const void *x, *dy;
    void *y;
} pool_job;

/* The in-bounds window rows [*y0, *y1) and columns [*x0, *x1) of output (oy, ox). */
static void window_of(const rill__window *w, int64_t oy, int64_t ox, int64_t *y0, int64_t *y1,
                      int64_t *x0, int64_t *x1)
{
    int64_t sy = oy * w->sh - w->pt, sx = ox * w->sw - w->pl;
    *y0 = sy < 0 ? 0 : sy;
    *y1 = sy + w->kh < w->ih ? sy + w->kh : w->ih;
    *x0 = sx < 0 ? 0 : sx;
    *x1 = sx + w->kw < w->iw ? sx + w->kw : w->iw;
}

/* The flat input index of the first maximum of channel c in output (img, oy, ox)'s window. */
static int64_t argmax_of(const pool_job *j, int64_t img, int64_t oy, int64_t ox, int64_t c)
{
    const rill__window *w = j->w;
    int64_t y0, y1, x0, x1, best = -1;
    double m = -INFINITY;
    window_of(w, oy, ox, &y0, &y1, &x0, &x1);
    for (int64_t iy = y0; iy < y1; iy++)
        for (int64_t ix = x0; ix < x1; ix++) {
            int64_t i = ((img * w->ih + iy) * w->iw + ix) * w->c + c;
            double v = ld(j->x, j->dbl, i);
            if (best < 0 || v > m) m = v, best = i;
        }
    return best;
}

/* Output positions [b, e) (of N*OH*OW), every channel. */
static void max_pool_range(void *arg, int64_t b, int64_t e)
{
    const pool_job *j = arg;
    const rill__window *w = j->w;
    int64_t per = w->oh * w->ow;
    if (!j->dbl) {
        /* float: the window's pixels one after another, every channel at once (contiguous in
         * NHWC, so vectorised); the first maximum's value, as argmax_of picks it. */
        const float *x = j->x;
        float *y = j->y;
        for (int64_t p = b; p < e; p++) {
            int64_t img = p / per, oy = p % per / w->ow, ox = p % w->ow, y0, y1, x0, x1;
            window_of(w, oy, ox, &y0, &y1, &x0, &x1);
            float *restrict out = y + p * w->c;
            bool first = true;
            for (int64_t iy = y0; iy < y1; iy++)
                for (int64_t ix = x0; ix < x1; ix++) {
                    const float *restrict in = x + ((img * w->ih + iy) * w->iw + ix) * w->c;
                    if (first)
                        memcpy(out, in, (size_t)w->c * sizeof *out);
                    else
                        for (int64_t c = 0; c < w->c; c++) {
                            float v = in[c];
                            out[c] = v > out[c] ? v : out[c];
                        }
                    first = false;
                }
        }
        return;
    }
    for (int64_t p = b; p < e; p++) {
        int64_t img = p / per, oy = p % per / w->ow, ox = p % w->ow;
        for (int64_t c = 0; c < w->c; c++)
            st(j->y, j->dbl, p * w->c + c, ld(j->x, j->dbl, argmax_of(j, img, oy, ox, c)));
    }
}

static void avg_pool_range(void *arg, int64_t b, int64_t e)
{
    const pool_job *j = arg;
    const rill__window *w = j->w;
    int64_t per = w->oh * w->ow;
    for (int64_t p = b; p < e; p++) {
        int64_t img = p / per, oy = p % per / w->ow, ox = p % w->ow, y0, y1, x0, x1;
        window_of(w, oy, ox, &y0, &y1, &x0, &x1);
        double inv = 1.0 / (double)((y1 - y0) * (x1 - x0));
        for (int64_t c = 0; c < w->c; c++) {
            double s = 0;
            for (int64_t iy = y0; iy < y1; iy++)
                for (int64_t ix = x0; ix < x1; ix++)
                    s += ld(j->x, j->dbl, ((img * w->ih + iy) * w->iw + ix) * w->c + c);
            st(j->y, j->dbl, p * w->c + c, s * inv);
        }
    }
}

/* Images [b, e): y (the input gradient) is zero; each gradient goes to its window's maximum. */
static void max_pool_grad_range(void *arg, int64_t b, int64_t e)
{
    const pool_job *j = arg;
    const rill__window *w = j->w;
    if (!j->dbl && w->ih * w->iw <= INT32_MAX) {
        /* float: every channel's first maximum found at once, the window's pixels one after
         * another (contiguous channels, as the forward pass; branch-free so it vectorises), then
         * the gradients sent. Pixels are numbered within their image. */
        const int64_t nc = w->c, iw = w->iw;
        float *best = rill__malloc((size_t)(nc > 0 ? nc : 1) * sizeof *best);
        int32_t *at = rill__malloc((size_t)(nc > 0 ? nc : 1) * sizeof *at);
        RILL_CHECK_ALLOC(best);
        RILL_CHECK_ALLOC(at);
        for (int64_t img = b; img < e; img++) {
            const float *x = (const float *)j->x + img * w->ih * iw * nc;
            float *dx = (float *)j->y + img * w->ih * iw * nc;
            const float *dy = (const float *)j->dy + img * w->oh * w->ow * nc;
            for (int64_t oy = 0; oy < w->oh; oy++)
                for (int64_t ox = 0; ox < w->ow; ox++) {
                    int64_t y0, y1, x0, x1;
                    window_of(w, oy, ox, &y0, &y1, &x0, &x1);
                    if (y0 >= y1 || x0 >= x1) continue;
                    int32_t p0 = (int32_t)(y0 * iw + x0);
                    memcpy(best, x + p0 * nc, (size_t)nc * sizeof *best);
                    for (int64_t c = 0; c < nc; c++) at[c] = p0;
                    for (int64_t iy = y0; iy < y1; iy++)
                        for (int64_t ix = iy == y0 ? x0 + 1 : x0; ix < x1; ix++) {
                            int32_t p = (int32_t)(iy * iw + ix);
                            const float *restrict in = x + p * nc;
                            float *restrict bv = best;
                            int32_t *restrict ai = at;
                            for (int64_t c = 0; c < nc; c++) {
                                float v = in[c], m = bv[c];
                                int32_t gt = -(int32_t)(v > m); /* all ones where v is larger */
                                bv[c] = v > m ? v : m;
                                ai[c] = (p & gt) | (ai[c] & ~gt);
                            }
                        }
                    const float *restrict g = dy + (oy * w->ow + ox) * nc;
                    for (int64_t c = 0; c < nc; c++) dx[at[c] * nc + c] += g[c];
                }
        }
        rill__free(best);
        rill__free(at);
        return;
    }
    for (int64_t img = b; img < e; img++)
        for (int64_t oy = 0; oy < w->oh; oy++)
            for (int64_t ox = 0; ox < w->ow; ox++)
                for (int64_t c = 0; c < w->c; c++) {
                    int64_t i = argmax_of(j, img, oy, ox, c);
                    int64_t o = ((img * w->oh + oy) * w->ow + ox) * w->c + c;
                    st(j->y, j->dbl, i, ld(j->y, j->dbl, i) + ld(j->dy, j->dbl, o));
                }
}

/* Images [b, e): each gradient spread evenly over its window's in-bounds elements. */
static void avg_pool_grad_range(void *arg, int64_t b, int64_t e)
{
    const pool_job *j = arg;
    const rill__window *w = j->w;
    for (int64_t img = b; img < e; img++)
        for (int64_t oy = 0; oy < w->oh; oy++)
            for (int64_t ox = 0; ox < w->ow; ox++) {
                int64_t y0, y1, x0, x1;
                window_of(w, oy, ox, &y0, &y1, &x0, &x1);
                double inv = 1.0 / (double)((y1 - y0) * (x1 - x0));
                for (int64_t c = 0; c < w->c; c++) {
                    double g =
                        ld(j->dy, j->dbl, ((img * w->oh + oy) * w->ow + ox) * w->c + c) * inv;
                    for (int64_t iy = y0; iy < y1; iy++)
                        for (int64_t ix = x0; ix < x1; ix++) {
                            int64_t i = ((img * w->ih + iy) * w->iw + ix) * w->c + c;
                            st(j->y, j->dbl, i, ld(j->y, j->dbl, i) + g);
                        }
                }
            }
}

static void pool_kernel(rill__kctx *ctx, rill__range_fn fn)
{
    rill__window w;
    if (!rill__check_window_op(ctx, &w)) return;
    const rill_tensor *x = ctx->inputs[0];
    rill_shape os = rill_shape_make(4, (int64_t[4]){w.n, w.oh, w.ow, w.c});
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!y || y->numel == 0) return;
    pool_job j = {&w, x->dtype == RILL_DOUBLE, x->buf->data, NULL, y->buf->data};
    int64_t cost = w.kh * w.kw * w.c, min = CONV_GRAIN / (cost > 0 ? cost : 1);
    rill__parallel_for(ctx->pool, w.n * w.oh * w.ow, min > 0 ? min : 1, fn, &j);
}

static void max_pool_kernel(rill__kctx *ctx)
{
    pool_kernel(ctx, max_pool_range);
}

static void avg_pool_kernel(rill__kctx *ctx)
{
    pool_kernel(ctx, avg_pool_range);
}

/* MaxPoolGrad(orig_input, orig_output, grad) and AvgPoolGrad(orig_input_shape, grad). */
static void pool_grad_kernel(rill__kctx *ctx, bool max)
{
    rill__window w;
    if (!rill__check_window_op(ctx, &w)) return;
    const rill_tensor *dy = ctx->inputs[max ? 2 : 1];
    rill_shape xs = rill_shape_make(4, (int64_t[4]){w.n, w.ih, w.iw, w.c});
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, dy->dtype, &xs);
    if (!dx || dx->numel == 0) return;
    memset(dx->buf->data, 0, rill_tensor_nbytes(dx));
    pool_job j = {&w, dy->dtype == RILL_DOUBLE, max ? ctx->inputs[0]->buf->data : NULL,
                  dy->buf->data, dx->buf->data};
    rill__parallel_for(ctx->pool, w.n, 1, max ? max_pool_grad_range : avg_pool_grad_range, &j);
}

static void max_pool_grad_kernel(rill__kctx *ctx)
{
    pool_grad_kernel(ctx, true);
}

static void avg_pool_grad_kernel(rill__kctx *ctx)
{
    pool_grad_kernel(ctx, false);
}

/* Float and double; the int32 size inputs are host tensors on the CPU anyway. */
#define CONV_K(OP, FN, T)                                                                          \
    {                                                                                              \
        .op = OP, .device_type = "CPU", .dtype = T, .fn = FN                                       \
    }
#define CONV_KERNEL(OP, FN) CONV_K(OP, FN, RILL_FLOAT), CONV_K(OP, FN, RILL_DOUBLE)

const rill__kernel_def rill__cpu_kernels_conv[] = {
    CONV_K("_FusedConv2D", fused_conv2d_kernel, RILL_FLOAT),
    CONV_KERNEL("Conv2D", conv2d_kernel),
    CONV_KERNEL("Conv2DBackpropInput", conv2d_bp_input_kernel),
    CONV_KERNEL("Conv2DBackpropFilter", conv2d_bp_filter_kernel),
    CONV_KERNEL("MaxPool", max_pool_kernel),
    CONV_KERNEL("AvgPool", avg_pool_kernel),
    CONV_KERNEL("MaxPoolGrad", max_pool_grad_kernel),
    CONV_KERNEL("AvgPoolGrad", avg_pool_grad_kernel),
    {0},
};
