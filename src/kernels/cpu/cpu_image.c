/* cpu_image.c - CPU kernels for ReadFile, WriteFile, ResizeBilinear, ResizeBilinearGrad,
 * ResizeNearestNeighbor and ResizeNearestNeighborGrad (op definitions: src/graph/ops_image.c;
 * the codecs: cpu_image_codec.c).
 *
 * The resize kernels follow TF's conventions exactly, in float as TF computes them. Per output
 * coordinate i along an axis of input size in and output size out, the scale is
 * (in - 1) / (out - 1) with align_corners (and out > 1), else in / out; the source coordinate is
 * i * scale, or (i + 0.5) * scale - 0.5 with half_pixel_centers. Bilinear takes
 * lower = max(floor(x), 0), upper = min(ceil(x), in - 1), lerp = x - floor(x) and blends
 * top = tl + (tr - tl) * xl, bottom likewise, top + (bottom - top) * yl. Nearest takes
 * min(floor(i * scale), in - 1) (round with align_corners; with half_pixel_centers the
 * coordinate (i + 0.5) * scale, floored, or rounded under align_corners), at least 0.
 * ResizeBilinearGrad sends each output gradient back to the four pixels with the blend's
 * weights, ResizeNearestNeighborGrad to the one pixel it came from. */
#include "cpu_kernels.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- ReadFile / WriteFile --- */

static void read_file_kernel(rill__kctx *ctx)
{
    size_t plen;
    const char *path = rill_tensor_get_string(ctx->inputs[0], 0, &plen);
    char *p = rill__strndup(path, plen);
    FILE *f = fopen(p, "rb");
    if (!f) {
        int err = errno;
        rill__kctx_fail(ctx, rill__errno_code(err), "%s; %s", p, strerror(err));
        rill__free(p);
        return;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 65536;
            buf = rill__realloc(buf, cap);
            RILL_CHECK_ALLOC(buf);
        }
        size_t k = fread(buf + len, 1, cap - len, f);
        len += k;
        if (k == 0) break;
    }
    bool bad = ferror(f);
    int err = errno;
    fclose(f);
    if (bad) {
        rill__kctx_fail(ctx, rill__errno_code(err), "%s; %s", p, strerror(err));
    } else {
        rill_tensor *t = rill_tensor_new(RILL_STRING, NULL, 0);
        rill_tensor_set_string(t, 0, buf ? buf : "", len);
        rill__kctx_set_output(ctx, 0, t);
    }
    rill__free(buf);
    rill__free(p);
}

static void write_file_kernel(rill__kctx *ctx)
{
    size_t plen, clen;
    const char *path = rill_tensor_get_string(ctx->inputs[0], 0, &plen);
    const char *data = rill_tensor_get_string(ctx->inputs[1], 0, &clen);
    char *p = rill__strndup(path, plen);
    /* TF creates the file's directory first */
    char *slash = strrchr(p, '/');
    if (slash && slash != p) {
        char *dir = rill__strndup(p, (size_t)(slash - p));
        rill_status *s = rill_status_new();
        if (!rill__make_dirs(dir, s))
            rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
        rill_status_free(s);
        rill__free(dir);
        if (!rill__kctx_ok(ctx)) {
            rill__free(p);
            return;
        }
    }
    FILE *f = fopen(p, "wb");
    bool ok = f && fwrite(data, 1, clen, f) == clen;
    int err = errno;
    if (f && fclose(f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (!ok) rill__kctx_fail(ctx, rill__errno_code(err), "%s; %s", p, strerror(err));
    rill__free(p);
}

/* --- resizing --- */

static float scale_of(int64_t in, int64_t out, bool align)
{
    return align && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
}

typedef struct interp {
    int64_t lo, hi;
    float lerp;
} interp;

static void bilinear_weights(int64_t in, int64_t out, float scale, bool half, interp *w)
{
    for (int64_t i = 0; i < out; i++) {
        float x = half ? ((float)i + 0.5f) * scale - 0.5f : (float)i * scale;
        float xf = floorf(x);
        w[i].lo = (int64_t)xf > 0 ? (int64_t)xf : 0;
        int64_t c = (int64_t)ceilf(x);
        w[i].hi = c < in - 1 ? c : in - 1;
        w[i].lerp = x - xf;
    }
}

static float load(const rill_tensor *t, int64_t i)
{
    const void *d = t->buf->data;
    /* the small integer dtypes by TF's enum values (uint8 4, int16 5, int8 6, uint16 17), which
     * rill_dtype has where the element-wise work added them */
    switch ((int)t->dtype) {
    case 4:
        return ((const uint8_t *)d)[i];
    case 5:
        return ((const int16_t *)d)[i];
    case 6:
        return ((const int8_t *)d)[i];
    case 17:
        return ((const uint16_t *)d)[i];
    default:
        break;
    }
    switch (t->dtype) {
    case RILL_FLOAT:
        return ((const float *)d)[i];
    case RILL_DOUBLE:
        return (float)((const double *)d)[i];
    case RILL_HALF:
        return rill_half_to_float(((const rill_half *)d)[i]);
    case RILL_INT32:
        return (float)((const int32_t *)d)[i];
    case RILL_INT64:
        return (float)((const int64_t *)d)[i];
    default:
        return 0;
    }
}

/* The output size from the size input; false (ctx failed) when it is not 2 positive ints. */
static bool out_size(rill__kctx *ctx, int64_t *h, int64_t *w)
{
    const rill_tensor *sz = ctx->inputs[1], *im = ctx->inputs[0];
    char b[96];
    if (im->shape.rank != 4) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "input must be 4-dimensional%s",
                        rill_shape_str(&im->shape, b, sizeof b));
        return false;
    }
    if (sz->shape.rank != 1 || sz->numel != 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "shape_t must be 1-dimensional%s",
                        rill_shape_str(&sz->shape, b, sizeof b));
        return false;
    }
    *h = rill_tensor_get_int64(sz, 0);
    *w = rill_tensor_get_int64(sz, 1);
    if (*h <= 0 || *w <= 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "output dimensions must be positive");
        return false;
    }
    if (im->shape.dims[1] <= 0 || im->shape.dims[2] <= 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "input image must be of non-zero size, got height %lld and width %lld",
                        (long long)im->shape.dims[1], (long long)im->shape.dims[2]);
        return false;
    }
    return true;
}

static void resize_bilinear_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    const rill_tensor *im = ctx->inputs[0];
    int64_t oh, ow;
    if (!out_size(ctx, &oh, &ow)) return;
    bool align = rill__attr_bool(n, "align_corners", false);
    bool half = rill__attr_bool(n, "half_pixel_centers", false);
    int64_t b = im->shape.dims[0], h = im->shape.dims[1], w = im->shape.dims[2],
            c = im->shape.dims[3];
    rill_shape os = {.rank = 4, .dims = {b, oh, ow, c}};
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_FLOAT, &os);
    if (!out) return;
    interp *ys = rill__malloc((size_t)(oh + ow) * sizeof *ys), *xs = ys + oh;
    RILL_CHECK_ALLOC(ys);
    bilinear_weights(h, oh, scale_of(h, oh, align), half, ys);
    bilinear_weights(w, ow, scale_of(w, ow, align), half, xs);
    float *y = out->buf->data;
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t i = 0; i < oh; i++) {
            int64_t r0 = (bi * h + ys[i].lo) * w, r1 = (bi * h + ys[i].hi) * w;
            for (int64_t j = 0; j < ow; j++)
                for (int64_t k = 0; k < c; k++) {
                    float tl = load(im, (r0 + xs[j].lo) * c + k),
                          tr = load(im, (r0 + xs[j].hi) * c + k),
                          bl = load(im, (r1 + xs[j].lo) * c + k),
                          br = load(im, (r1 + xs[j].hi) * c + k);
                    float top = tl + (tr - tl) * xs[j].lerp;
                    float bot = bl + (br - bl) * xs[j].lerp;
                    y[((bi * oh + i) * ow + j) * c + k] = top + (bot - top) * ys[i].lerp;
                }
        }
    rill__free(ys);
}

static void resize_bilinear_grad_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    const rill_tensor *dy = ctx->inputs[0], *im = ctx->inputs[1];
    if (dy->shape.rank != 4 || im->shape.rank != 4 || dy->shape.dims[0] != im->shape.dims[0] ||
        dy->shape.dims[3] != im->shape.dims[3]) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "ResizeBilinearGrad: grads and original_image must be 4-D with the same "
                        "batch and channels");
        return;
    }
    bool align = rill__attr_bool(n, "align_corners", false);
    bool half = rill__attr_bool(n, "half_pixel_centers", false);
    int64_t b = im->shape.dims[0], h = im->shape.dims[1], w = im->shape.dims[2],
            c = im->shape.dims[3], oh = dy->shape.dims[1], ow = dy->shape.dims[2];
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, im->dtype, &im->shape);
    if (!out || oh == 0 || ow == 0 || out->numel == 0) {
        if (out) memset(out->buf->data, 0, (size_t)out->numel * rill_dtype_size(im->dtype));
        return;
    }
    interp *ys = rill__malloc((size_t)(oh + ow) * sizeof *ys), *xs = ys + oh;
    double *acc = rill__calloc((size_t)out->numel, sizeof *acc);
    RILL_CHECK_ALLOC(ys);
    RILL_CHECK_ALLOC(acc);
    bilinear_weights(h, oh, scale_of(h, oh, align), half, ys);
    bilinear_weights(w, ow, scale_of(w, ow, align), half, xs);
    const float *g = dy->buf->data;
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t i = 0; i < oh; i++) {
            float yl = ys[i].lerp, iy = 1.0f - yl;
            int64_t r0 = (bi * h + ys[i].lo) * w, r1 = (bi * h + ys[i].hi) * w;
            for (int64_t j = 0; j < ow; j++) {
                float xl = xs[j].lerp, ix = 1.0f - xl;
                for (int64_t k = 0; k < c; k++) {
                    float v = g[((bi * oh + i) * ow + j) * c + k];
                    acc[(r0 + xs[j].lo) * c + k] += v * iy * ix;
                    acc[(r0 + xs[j].hi) * c + k] += v * iy * xl;
                    acc[(r1 + xs[j].lo) * c + k] += v * yl * ix;
                    acc[(r1 + xs[j].hi) * c + k] += v * yl * xl;
                }
            }
        }
    for (int64_t i = 0; i < out->numel; i++) {
        if (im->dtype == RILL_DOUBLE)
            ((double *)out->buf->data)[i] = acc[i];
        else if (im->dtype == RILL_HALF)
            ((rill_half *)out->buf->data)[i] = rill_half_from_float((float)acc[i]);
        else
            ((float *)out->buf->data)[i] = (float)acc[i];
    }
    rill__free(acc);
    rill__free(ys);
}

static int64_t nearest_index(int64_t i, int64_t in, float scale, bool align, bool half)
{
    float x = half ? ((float)i + 0.5f) * scale : (float)i * scale;
    int64_t v = align ? (int64_t)roundf(x) : (int64_t)floorf(x);
    if (v > in - 1) v = in - 1;
    return v < 0 ? 0 : v;
}

static void resize_nearest_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    const rill_tensor *im = ctx->inputs[0];
    int64_t oh, ow;
    if (!out_size(ctx, &oh, &ow)) return;
    bool align = rill__attr_bool(n, "align_corners", false);
    bool half = rill__attr_bool(n, "half_pixel_centers", false);
    int64_t b = im->shape.dims[0], h = im->shape.dims[1], w = im->shape.dims[2],
            c = im->shape.dims[3];
    rill_shape os = {.rank = 4, .dims = {b, oh, ow, c}};
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, im->dtype, &os);
    if (!out) return;
    float sy = scale_of(h, oh, align), sx = scale_of(w, ow, align);
    size_t es = rill_dtype_size(im->dtype);
    const char *x = im->buf->data;
    char *y = out->buf->data;
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t i = 0; i < oh; i++) {
            int64_t iy = nearest_index(i, h, sy, align, half);
            for (int64_t j = 0; j < ow; j++) {
                int64_t ix = nearest_index(j, w, sx, align, half);
                memcpy(y + (size_t)(((bi * oh + i) * ow + j) * c) * es,
                       x + (size_t)(((bi * h + iy) * w + ix) * c) * es, (size_t)c * es);
            }
        }
}

static void resize_nearest_grad_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    const rill_tensor *dy = ctx->inputs[0], *sz = ctx->inputs[1];
    if (dy->shape.rank != 4 || sz->shape.rank != 1 || sz->numel != 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "ResizeNearestNeighborGrad: grads must be 4-D and size a vector of 2");
        return;
    }
    int64_t h = rill_tensor_get_int64(sz, 0), w = rill_tensor_get_int64(sz, 1);
    if (h <= 0 || w <= 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "output dimensions must be positive");
        return;
    }
    bool align = rill__attr_bool(n, "align_corners", false);
    bool half = rill__attr_bool(n, "half_pixel_centers", false);
    int64_t b = dy->shape.dims[0], oh = dy->shape.dims[1], ow = dy->shape.dims[2],
            c = dy->shape.dims[3];
    rill_shape os = {.rank = 4, .dims = {b, h, w, c}};
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, dy->dtype, &os);
    if (!out) return;
    double *acc = rill__calloc((size_t)(out->numel ? out->numel : 1), sizeof *acc);
    RILL_CHECK_ALLOC(acc);
    /* the forward's source pixel of each output pixel: the image is h x w, the output oh x ow */
    float sy = scale_of(h, oh, align), sx = scale_of(w, ow, align);
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t i = 0; i < oh; i++) {
            int64_t iy = nearest_index(i, h, sy, align, half);
            for (int64_t j = 0; j < ow; j++) {
                int64_t ix = nearest_index(j, w, sx, align, half);
                for (int64_t k = 0; k < c; k++) {
                    int64_t at = ((bi * oh + i) * ow + j) * c + k;
                    acc[((bi * h + iy) * w + ix) * c + k] +=
                        dy->dtype == RILL_DOUBLE ? ((const double *)dy->buf->data)[at]
                                                 : load(dy, at);
                }
            }
        }
    for (int64_t i = 0; i < out->numel; i++) {
        if (dy->dtype == RILL_DOUBLE)
            ((double *)out->buf->data)[i] = acc[i];
        else if (dy->dtype == RILL_HALF)
            ((rill_half *)out->buf->data)[i] = rill_half_from_float((float)acc[i]);
        else
            ((float *)out->buf->data)[i] = (float)acc[i];
    }
    rill__free(acc);
}

#define IK(op_, fn_, host_in)                                                                      \
    {                                                                                              \
        .op = op_, .device_type = "CPU", .fn = fn_, .host_memory_inputs = host_in                  \
    }

const rill__kernel_def rill__cpu_kernels_image[] = {
    IK("ReadFile", read_file_kernel, 1),
    IK("WriteFile", write_file_kernel, 3),
    IK("ResizeBilinear", resize_bilinear_kernel, 2),
    IK("ResizeBilinearGrad", resize_bilinear_grad_kernel, 0),
    IK("ResizeNearestNeighbor", resize_nearest_kernel, 2),
    IK("ResizeNearestNeighborGrad", resize_nearest_grad_kernel, 2),
    {0},
};
