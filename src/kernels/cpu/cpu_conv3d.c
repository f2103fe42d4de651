/* cpu_conv3d.c - CPU kernels of the 3-D windowed ops, NDHWC, float and double: Conv3D,
 * Conv3DBackpropInputV2, Conv3DBackpropFilterV2, MaxPool3D, AvgPool3D, MaxPool3DGrad and
 * AvgPool3DGrad (op definitions in graph/ops_conv3d.c).
 *
 * rill__check_window3d_op (window3d.c, shared with OpenCL) checks what depends on run-time shapes
 * (the shape functions checked the attrs) and gives the geometry (rill__window3d_init). The
 * convolutions are the 2-D ones' scheme (cpu_conv.c) with one more window dimension: Conv3D im2col
 * then one GEMM: the patches [N*OD*OH*OW, KD*KH*KW*C] times the filter viewed as [KD*KH*KW*C, F]
 * give the output in place Conv3DBackpropInputV2   out_backprop times the filter transposed gives
 * the patch gradients, added back into the input's places (col2im) Conv3DBackpropFilterV2  the
 * patches transposed times out_backprop The batch is taken in chunks so the patch buffer stays
 * under CONV3D_SCRATCH_BYTES; im2col is sharded over patch rows, col2im over images, the GEMMs over
 * rows of their product (gemm.c).
 *
 * The pools are direct loops over output positions (forward) or images (gradients, whose
 * scatters stay inside an image), accumulating in double. MaxPool3D gives its window's maximum;
 * MaxPool3DGrad, as TensorFlow's CPU kernel, sends each gradient to every element of its window
 * equal to orig_output (all the ties: unlike MaxPoolGrad's first maximum); AvgPool3D divides by the
 * number of in-bounds elements of each window, as TensorFlow's. */
#include "../../core/core.h"
#include "../kernel.h"
#include "../window3d.h"
#include "gemm.h"

#include <math.h>
#include <string.h>

#define CONV3D_SCRATCH_BYTES ((int64_t)64 << 20)
#define CONV3D_GRAIN         (1 << 15)

/* --- GEMM and patches --- */

/* C = op(A) op(B) for float or double; zeros when k is 0. */
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

typedef struct conv3d_job {
    const rill__window3d *w;
    bool dbl;
    size_t es;
    const char *x; /* im2col: the chunk's first image */
    char *col;     /* [rows, K] */
    char *dx;      /* col2im: the chunk's first image of the input gradient */
} conv3d_job;

static int64_t spatial_out(const rill__window3d *w)
{
    return w->out[0] * w->out[1] * w->out[2];
}

static int64_t spatial_in(const rill__window3d *w)
{
    return w->in[0] * w->in[1] * w->in[2];
}

static int64_t patch_len(const rill__window3d *w)
{
    return w->k[0] * w->k[1] * w->k[2] * w->c;
}

/* The input position of tap t (0..2: depth, row, column) of output o in dimension i: in bounds
 * when 0 <= result < w->in[i]. */
static inline int64_t tap(const rill__window3d *w, int i, int64_t o, int64_t t)
{
    return o * w->s[i] - w->pad[i] + t * w->d[i];
}

/* Output position p of an image as (od, oh, ow). */
static inline void out_pos(const rill__window3d *w, int64_t p, int64_t *o)
{
    o[2] = p % w->out[2];
    o[1] = p / w->out[2] % w->out[1];
    o[0] = p / (w->out[2] * w->out[1]);
}

/* Patch rows [b, e) of the chunk: row r is output position r of the chunk's images. */
static void im2col_range(void *arg, int64_t b, int64_t e)
{
    const conv3d_job *j = arg;
    const rill__window3d *w = j->w;
    size_t cb = (size_t)w->c * j->es;
    int64_t per = spatial_out(w);
    for (int64_t r = b; r < e; r++) {
        int64_t img = r / per, o[3];
        out_pos(w, r % per, o);
        char *dst = j->col + (size_t)(r * patch_len(w)) * j->es;
        for (int64_t kz = 0; kz < w->k[0]; kz++) {
            int64_t iz = tap(w, 0, o[0], kz);
            for (int64_t ky = 0; ky < w->k[1]; ky++) {
                int64_t iy = tap(w, 1, o[1], ky);
                for (int64_t kx = 0; kx < w->k[2]; kx++, dst += cb) {
                    int64_t ix = tap(w, 2, o[2], kx);
                    if (iz < 0 || iz >= w->in[0] || iy < 0 || iy >= w->in[1] || ix < 0 ||
                        ix >= w->in[2])
                        memset(dst, 0, cb);
                    else
                        memcpy(dst,
                               j->x + (size_t)((((img * w->in[0] + iz) * w->in[1] + iy) * w->in[2] +
                                                ix) *
                                               w->c) *
                                          j->es,
                               cb);
                }
            }
        }
    }
}

/* Images [b, e) of the chunk: adds each patch gradient row back into its input places. */
static void col2im_range(void *arg, int64_t b, int64_t e)
{
    const conv3d_job *j = arg;
    const rill__window3d *w = j->w;
    int64_t per = spatial_out(w);
    for (int64_t img = b; img < e; img++)
        for (int64_t p = 0; p < per; p++) {
            int64_t o[3], src = (img * per + p) * patch_len(w);
            out_pos(w, p, o);
            for (int64_t kz = 0; kz < w->k[0]; kz++) {
                int64_t iz = tap(w, 0, o[0], kz);
                for (int64_t ky = 0; ky < w->k[1]; ky++) {
                    int64_t iy = tap(w, 1, o[1], ky);
                    for (int64_t kx = 0; kx < w->k[2]; kx++, src += w->c) {
                        int64_t ix = tap(w, 2, o[2], kx);
                        if (iz < 0 || iz >= w->in[0] || iy < 0 || iy >= w->in[1] || ix < 0 ||
                            ix >= w->in[2])
                            continue;
                        int64_t dst =
                            (((img * w->in[0] + iz) * w->in[1] + iy) * w->in[2] + ix) * w->c;
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
}

/* A 1x1x1 window at stride 1: the input is its own patch matrix. */
static bool is_pointwise(const rill__window3d *w)
{
    for (int i = 0; i < 3; i++)
        if (w->k[i] != 1 || w->s[i] != 1) return false;
    return true;
}

static int64_t chunk_images(const rill__window3d *w, size_t es)
{
    int64_t per = spatial_out(w) * patch_len(w) * (int64_t)es;
    int64_t n = per > 0 ? CONV3D_SCRATCH_BYTES / per : w->n;
    n = n < 1 ? 1 : n;
    return n < w->n ? n : w->n;
}

static void im2col(rill__kctx *ctx, conv3d_job *j, const rill_tensor *x, int64_t b0, int64_t nb)
{
    const rill__window3d *w = j->w;
    j->x = (const char *)x->buf->data + (size_t)(b0 * spatial_in(w) * w->c) * j->es;
    int64_t k = patch_len(w), min = CONV3D_GRAIN / (k > 0 ? k : 1);
    rill__parallel_for(ctx->pool, nb * spatial_out(w), min > 0 ? min : 1, im2col_range, j);
}

/* Patch buffers from the block cache (as cpu_conv.c's). */
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
    rill__kctx_fail(ctx, RILL_INTERNAL, "%s: sgemm failed", ctx->node->op->name);
}

/* --- convolution kernels --- */

static void conv3d_kernel(rill__kctx *ctx)
{
    rill__window3d w;
    if (!rill__check_window3d_op(ctx, RILL__W3_CONV, &w)) return;
    const rill_tensor *x = ctx->inputs[0], *filt = ctx->inputs[1];
    rill_dtype t = x->dtype;
    rill_shape os = rill_shape_make(5, (int64_t[5]){w.n, w.out[0], w.out[1], w.out[2], w.f});
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, t, &os);
    if (!y || y->numel == 0) return;
    conv3d_job j = {.w = &w, .dbl = t == RILL_DOUBLE, .es = rill_dtype_size(t)};
    int64_t k = patch_len(&w), per = spatial_out(&w), chunk = chunk_images(&w, j.es);
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
        if (!gemm(ctx->pool, t, false, false, nb * per, w.f, k, a, k, filt->buf->data, w.f, c,
                  w.f)) {
            gemm_failed(ctx);
            break;
        }
    }
    scratch_free(j.col, col_bytes);
}

static void conv3d_bp_input_kernel(rill__kctx *ctx)
{
    rill__window3d w;
    if (!rill__check_window3d_op(ctx, RILL__W3_BP_INPUT, &w)) return;
    const rill_tensor *filt = ctx->inputs[1], *dy = ctx->inputs[2];
    rill_dtype t = filt->dtype;
    rill_shape xs = rill_shape_make(5, (int64_t[5]){w.n, w.in[0], w.in[1], w.in[2], w.c});
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, t, &xs);
    if (!dx || dx->numel == 0) return;
    conv3d_job j = {.w = &w, .dbl = t == RILL_DOUBLE, .es = rill_dtype_size(t)};
    int64_t k = patch_len(&w), per = spatial_out(&w), chunk = chunk_images(&w, j.es);
    bool direct = is_pointwise(&w);
    size_t col_bytes = 0;
    if (!direct) {
        memset(dx->buf->data, 0, rill_tensor_nbytes(dx));
        j.col = scratch(chunk * per * k, j.es, &col_bytes);
    }
    for (int64_t b0 = 0; b0 < w.n; b0 += chunk) {
        int64_t nb = w.n - b0 < chunk ? w.n - b0 : chunk;
        const char *d = (const char *)dy->buf->data + (size_t)(b0 * per * w.f) * j.es;
        char *img = (char *)dx->buf->data + (size_t)(b0 * spatial_in(&w) * w.c) * j.es;
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

static void conv3d_bp_filter_kernel(rill__kctx *ctx)
{
    rill__window3d w;
    if (!rill__check_window3d_op(ctx, RILL__W3_BP_FILTER, &w)) return;
    const rill_tensor *x = ctx->inputs[0], *dy = ctx->inputs[2];
    rill_dtype t = x->dtype;
    rill_shape fs = rill_shape_make(5, (int64_t[5]){w.k[0], w.k[1], w.k[2], w.c, w.f});
    rill_tensor *dw = rill__kctx_alloc_output(ctx, 0, t, &fs);
    if (!dw || dw->numel == 0) return;
    conv3d_job j = {.w = &w, .dbl = t == RILL_DOUBLE, .es = rill_dtype_size(t)};
    int64_t k = patch_len(&w), per = spatial_out(&w), chunk = chunk_images(&w, j.es);
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
        if (j.dbl)
            for (int64_t i = 0; i < dw->numel; i++)
                ((double *)dw->buf->data)[i] += ((const double *)part)[i];
        else
            for (int64_t i = 0; i < dw->numel; i++)
                ((float *)dw->buf->data)[i] += ((const float *)part)[i];
    }
    scratch_free(part, part_bytes);
    scratch_free(j.col, col_bytes);
}

/* --- pooling --- */

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

typedef struct pool3d_job {
    const rill__window3d *w;
    bool dbl;
    const void *x, *dy, *yo; /* yo: MaxPool3DGrad's orig_output */
    void *y;
} pool3d_job;

/* The in-bounds window of output o: [lo[i], hi[i]) per spatial dimension; its element count. */
static int64_t window_of(const rill__window3d *w, const int64_t *o, int64_t *lo, int64_t *hi)
{
    int64_t n = 1;
    for (int i = 0; i < 3; i++) {
        int64_t s = o[i] * w->s[i] - w->pad[i];
        lo[i] = s < 0 ? 0 : s;
        hi[i] = s + w->k[i] < w->in[i] ? s + w->k[i] : w->in[i];
        n *= hi[i] > lo[i] ? hi[i] - lo[i] : 0;
    }
    return n;
}

static inline int64_t in_index(const rill__window3d *w, int64_t img, int64_t z, int64_t y,
                               int64_t x)
{
    return (((img * w->in[0] + z) * w->in[1] + y) * w->in[2] + x) * w->c;
}

/* The flat input index of the first maximum of channel c in output (img, o)'s window (-1 when
 * the window is empty). */
static int64_t argmax_of(const pool3d_job *j, int64_t img, const int64_t *o, int64_t c)
{
    const rill__window3d *w = j->w;
    int64_t lo[3], hi[3], best = -1;
    double m = -INFINITY;
    window_of(w, o, lo, hi);
    for (int64_t z = lo[0]; z < hi[0]; z++)
        for (int64_t y = lo[1]; y < hi[1]; y++)
            for (int64_t x = lo[2]; x < hi[2]; x++) {
                int64_t i = in_index(w, img, z, y, x) + c;
                double v = ld(j->x, j->dbl, i);
                if (best < 0 || v > m) m = v, best = i;
            }
    return best;
}

/* Output positions [b, e) (of N*OD*OH*OW), every channel. */
static void max_pool3d_range(void *arg, int64_t b, int64_t e)
{
    const pool3d_job *j = arg;
    const rill__window3d *w = j->w;
    int64_t per = spatial_out(w);
    for (int64_t p = b; p < e; p++) {
        int64_t o[3];
        out_pos(w, p % per, o);
        for (int64_t c = 0; c < w->c; c++) {
            int64_t i = argmax_of(j, p / per, o, c);
            st(j->y, j->dbl, p * w->c + c, i < 0 ? 0 : ld(j->x, j->dbl, i));
        }
    }
}

static void avg_pool3d_range(void *arg, int64_t b, int64_t e)
{
    const pool3d_job *j = arg;
    const rill__window3d *w = j->w;
    int64_t per = spatial_out(w);
    for (int64_t p = b; p < e; p++) {
        int64_t img = p / per, o[3], lo[3], hi[3];
        out_pos(w, p % per, o);
        int64_t cnt = window_of(w, o, lo, hi);
        double inv = cnt > 0 ? 1.0 / (double)cnt : 0;
        for (int64_t c = 0; c < w->c; c++) {
            double s = 0;
            for (int64_t z = lo[0]; z < hi[0]; z++)
                for (int64_t y = lo[1]; y < hi[1]; y++)
                    for (int64_t x = lo[2]; x < hi[2]; x++)
                        s += ld(j->x, j->dbl, in_index(w, img, z, y, x) + c);
            st(j->y, j->dbl, p * w->c + c, s * inv);
        }
    }
}

/* Images [b, e): the zeroed input gradient gets each gradient at every element of its window
 * equal to the window's orig_output (TensorFlow's CPU MaxPool3DGrad: ties all get it). */
static void max_pool3d_grad_range(void *arg, int64_t b, int64_t e)
{
    const pool3d_job *j = arg;
    const rill__window3d *w = j->w;
    int64_t per = spatial_out(w);
    for (int64_t img = b; img < e; img++)
        for (int64_t p = 0; p < per; p++) {
            int64_t o[3], lo[3], hi[3];
            out_pos(w, p, o);
            window_of(w, o, lo, hi);
            for (int64_t c = 0; c < w->c; c++) {
                int64_t oi = (img * per + p) * w->c + c;
                double m = ld(j->yo, j->dbl, oi), g = ld(j->dy, j->dbl, oi);
                for (int64_t z = lo[0]; z < hi[0]; z++)
                    for (int64_t y = lo[1]; y < hi[1]; y++)
                        for (int64_t x = lo[2]; x < hi[2]; x++) {
                            int64_t i = in_index(w, img, z, y, x) + c;
                            if (ld(j->x, j->dbl, i) == m)
                                st(j->y, j->dbl, i, ld(j->y, j->dbl, i) + g);
                        }
            }
        }
}

/* Images [b, e): each gradient spread evenly over its window's in-bounds elements. */
static void avg_pool3d_grad_range(void *arg, int64_t b, int64_t e)
{
    const pool3d_job *j = arg;
    const rill__window3d *w = j->w;
    int64_t per = spatial_out(w);
    for (int64_t img = b; img < e; img++)
        for (int64_t p = 0; p < per; p++) {
            int64_t o[3], lo[3], hi[3];
            out_pos(w, p, o);
            int64_t cnt = window_of(w, o, lo, hi);
            if (cnt == 0) continue;
            for (int64_t c = 0; c < w->c; c++) {
                double g = ld(j->dy, j->dbl, (img * per + p) * w->c + c) / (double)cnt;
                for (int64_t z = lo[0]; z < hi[0]; z++)
                    for (int64_t y = lo[1]; y < hi[1]; y++)
                        for (int64_t x = lo[2]; x < hi[2]; x++) {
                            int64_t i = in_index(w, img, z, y, x) + c;
                            st(j->y, j->dbl, i, ld(j->y, j->dbl, i) + g);
                        }
            }
        }
}

static void pool3d_kernel(rill__kctx *ctx, rill__range_fn fn)
{
    rill__window3d w;
    if (!rill__check_window3d_op(ctx, RILL__W3_POOL, &w)) return;
    const rill_tensor *x = ctx->inputs[0];
    rill_shape os = rill_shape_make(5, (int64_t[5]){w.n, w.out[0], w.out[1], w.out[2], w.c});
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!y || y->numel == 0) return;
    pool3d_job j = {&w, x->dtype == RILL_DOUBLE, x->buf->data, NULL, NULL, y->buf->data};
    int64_t cost = w.k[0] * w.k[1] * w.k[2] * w.c, min = CONV3D_GRAIN / (cost > 0 ? cost : 1);
    rill__parallel_for(ctx->pool, w.n * spatial_out(&w), min > 0 ? min : 1, fn, &j);
}

static void max_pool3d_kernel(rill__kctx *ctx)
{
    pool3d_kernel(ctx, max_pool3d_range);
}

static void avg_pool3d_kernel(rill__kctx *ctx)
{
    pool3d_kernel(ctx, avg_pool3d_range);
}

/* MaxPool3DGrad(orig_input, orig_output, grad) and AvgPool3DGrad(orig_input_shape, grad). */
static void pool3d_grad_kernel(rill__kctx *ctx, bool max)
{
    rill__window3d w;
    if (!rill__check_window3d_op(ctx, max ? RILL__W3_MAX_GRAD : RILL__W3_AVG_GRAD, &w)) return;
    const rill_tensor *dy = ctx->inputs[max ? 2 : 1];
    rill_shape xs = rill_shape_make(5, (int64_t[5]){w.n, w.in[0], w.in[1], w.in[2], w.c});
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, dy->dtype, &xs);
    if (!dx || dx->numel == 0) return;
    memset(dx->buf->data, 0, rill_tensor_nbytes(dx));
    pool3d_job j = {&w,
                    dy->dtype == RILL_DOUBLE,
                    max ? ctx->inputs[0]->buf->data : NULL,
                    dy->buf->data,
                    max ? ctx->inputs[1]->buf->data : NULL,
                    dx->buf->data};
    rill__parallel_for(ctx->pool, w.n, 1, max ? max_pool3d_grad_range : avg_pool3d_grad_range, &j);
}

static void max_pool3d_grad_kernel(rill__kctx *ctx)
{
    pool3d_grad_kernel(ctx, true);
}

static void avg_pool3d_grad_kernel(rill__kctx *ctx)
{
    pool3d_grad_kernel(ctx, false);
}

/* Float and double; the int32 size inputs are host tensors on the CPU anyway. */
#define CONV3D_K(OP, FN, T)                                                                        \
    {                                                                                              \
        .op = OP, .device_type = "CPU", .dtype = T, .fn = FN                                       \
    }
#define CONV3D_KERNEL(OP, FN) CONV3D_K(OP, FN, RILL_FLOAT), CONV3D_K(OP, FN, RILL_DOUBLE)

const rill__kernel_def rill__cpu_kernels_conv3d[] = {
    CONV3D_KERNEL("Conv3D", conv3d_kernel),
    CONV3D_KERNEL("Conv3DBackpropInputV2", conv3d_bp_input_kernel),
    CONV3D_KERNEL("Conv3DBackpropFilterV2", conv3d_bp_filter_kernel),
    CONV3D_KERNEL("MaxPool3D", max_pool3d_kernel),
    CONV3D_KERNEL("AvgPool3D", avg_pool3d_kernel),
    CONV3D_KERNEL("MaxPool3DGrad", max_pool3d_grad_kernel),
    CONV3D_KERNEL("AvgPool3DGrad", avg_pool3d_grad_kernel),
    {0},
};
