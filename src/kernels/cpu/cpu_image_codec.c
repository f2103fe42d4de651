/* cpu_image_codec.c - CPU kernels for DecodeJpeg, EncodeJpeg, DecodePng, EncodePng and
 * DecodeImage (op definitions: src/graph/ops_image.c), through libjpeg-turbo and libpng.
 *
 * Neither library may end the process or print: libjpeg's error manager and libpng's error
 * callback longjmp back to the kernel, which fails with TF's text ("Invalid JPEG data or crop
 * window, data size N", "Invalid PNG data, size N"), and their warnings are swallowed (a JPEG that
 * ends early is an error unless try_recover_truncated, as in TF). Images are uint8 (PNG: uint8 or
 * uint16, native byte order) [height, width, channels]. */
#include "cpu_kernels.h"

#include <jpeglib.h>
#include <jerror.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

/* TF's enum values, which rill's dtypes take (rill_dtype RILL_UINT8 / RILL_UINT16 where the
 * element-wise work added them). */
#define U8  ((rill_dtype)4)
#define U16 ((rill_dtype)17)

static const char *attr_string(const rill_node *n, const char *name, const char *def)
{
    const rill__attr *a = rill__node_attr(n, name);
    return a && a->kind == RILL__ATTR_STRING ? a->v.s : def;
}

/* A growable byte buffer. */
typedef struct bytes {
    unsigned char *p;
    size_t n, cap;
} bytes;

static void bytes_put(bytes *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        b->p = rill__realloc(b->p, cap);
        RILL_CHECK_ALLOC(b->p);
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void set_string_output(rill__kctx *ctx, const void *p, size_t n)
{
    rill_tensor *t = rill_tensor_new(RILL_STRING, NULL, 0);
    rill_tensor_set_string(t, 0, p ? p : "", n);
    rill__kctx_set_output(ctx, 0, t);
}

/* --- JPEG --- */

typedef struct jerr {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    bool truncated; /* a "premature end" warning came */
} jerr;

static void jpeg_on_error(j_common_ptr c)
{
    longjmp(((jerr *)c->err)->jb, 1);
}

static void jpeg_on_message(j_common_ptr c, int level)
{
    jerr *e = (jerr *)c->err;
    if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) e->truncated = true;
}

static bool is_jpeg(const unsigned char *p, size_t n)
{
    return n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff;
}

static bool is_png(const unsigned char *p, size_t n)
{
    return n >= 8 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0;
}

static void decode_jpeg(rill__kctx *ctx, const unsigned char *data, size_t size, int64_t channels)
{
    const rill_node *n = ctx->node;
    int64_t ratio = rill__attr_int(n, "ratio", 1);
    bool fancy = rill__attr_bool(n, "fancy_upscaling", true);
    bool recover = rill__attr_bool(n, "try_recover_truncated", false);
    const char *dct = attr_string(n, "dct_method", "");
    if (channels != 0 && channels != 1 && channels != 3) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "channels must be 0, 1, or 3, got %lld",
                        (long long)channels);
        return;
    }
    if (ratio != 1 && ratio != 2 && ratio != 4 && ratio != 8) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "ratio must be 1, 2, 4, or 8, got %lld",
                        (long long)ratio);
        return;
    }
    if (*dct && strcmp(dct, "INTEGER_FAST") != 0 && strcmp(dct, "INTEGER_ACCURATE") != 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "dct_method must be one of \"\", \"INTEGER_FAST\" or \"INTEGER_ACCURATE\", "
                        "got \"%s\"",
                        dct);
        return;
    }
    struct jpeg_decompress_struct c;
    jerr e = {0};
    c.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = jpeg_on_error;
    e.pub.emit_message = jpeg_on_message;
    unsigned char *volatile row = NULL;
    rill_tensor *volatile out = NULL;
    if (setjmp(e.jb)) {
        jpeg_destroy_decompress(&c);
        rill__free(row);
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Invalid JPEG data or crop window, data size %zu", size);
        return;
    }
    jpeg_create_decompress(&c);
    if (size == 0) longjmp(e.jb, 1);
    jpeg_mem_src(&c, data, (unsigned long)size);
    jpeg_read_header(&c, TRUE);
    int comps = channels ? (int)channels : (c.num_components == 1 ? 1 : 3);
    c.out_color_space = comps == 1 ? JCS_GRAYSCALE : JCS_RGB;
    if (c.jpeg_color_space == JCS_CMYK || c.jpeg_color_space == JCS_YCCK) {
        /* libjpeg cannot go from CMYK to RGB: read CMYK and convert below */
        c.out_color_space = JCS_CMYK;
    }
    c.scale_num = 1;
    c.scale_denom = (unsigned)ratio;
    c.do_fancy_upsampling = fancy ? TRUE : FALSE;
    /* TF's default ("") is the fast integer DCT */
    c.dct_method = strcmp(dct, "INTEGER_ACCURATE") == 0 ? JDCT_ISLOW : JDCT_IFAST;
    jpeg_start_decompress(&c);
    int64_t h = c.output_height, w = c.output_width;
    rill_shape os = {.rank = 3, .dims = {h, w, comps}};
    out = rill__kctx_alloc_output(ctx, 0, U8, &os);
    if (!out) {
        jpeg_destroy_decompress(&c);
        return;
    }
    int got = c.output_components;
    row = rill__malloc((size_t)w * (size_t)got);
    RILL_CHECK_ALLOC(row);
    unsigned char *y = out->buf->data;
    while (c.output_scanline < c.output_height) {
        int64_t r = c.output_scanline;
        JSAMPROW rp = row;
        if (jpeg_read_scanlines(&c, &rp, 1) != 1) break;
        unsigned char *dst = y + (size_t)r * (size_t)w * (size_t)comps;
        if (got == comps) {
            memcpy(dst, row, (size_t)w * (size_t)comps);
            continue;
        }
        /* CMYK (Adobe's inverted, as libjpeg reads it) to RGB or gray */
        for (int64_t j = 0; j < w; j++) {
            const unsigned char *p = row + j * 4;
            unsigned rr = p[0] * p[3] / 255, gg = p[1] * p[3] / 255, bb = p[2] * p[3] / 255;
            if (comps == 3) {
                dst[j * 3] = (unsigned char)rr;
                dst[j * 3 + 1] = (unsigned char)gg;
                dst[j * 3 + 2] = (unsigned char)bb;
            } else {
                dst[j] = (unsigned char)((19595 * rr + 38470 * gg + 7471 * bb + 32768) >> 16);
            }
        }
    }
    bool short_rows = c.output_scanline < c.output_height;
    if (short_rows)
        memset(y + (size_t)c.output_scanline * (size_t)w * (size_t)comps, 0,
               (size_t)(h - c.output_scanline) * (size_t)w * (size_t)comps);
    if ((e.truncated || short_rows) && !recover) longjmp(e.jb, 1);
    if (!short_rows) jpeg_finish_decompress(&c);
    jpeg_destroy_decompress(&c);
    rill__free(row);
}

static void decode_jpeg_kernel(rill__kctx *ctx)
{
    size_t n;
    const char *p = rill_tensor_get_string(ctx->inputs[0], 0, &n);
    decode_jpeg(ctx, (const unsigned char *)p, n, rill__attr_int(ctx->node, "channels", 0));
}

typedef struct jdest {
    struct jpeg_destination_mgr pub;
    bytes *b;
    unsigned char buf[16384];
} jdest;

static void jdest_init(j_compress_ptr c)
{
    jdest *d = (jdest *)c->dest;
    d->pub.next_output_byte = d->buf;
    d->pub.free_in_buffer = sizeof d->buf;
}

static boolean jdest_empty(j_compress_ptr c)
{
    jdest *d = (jdest *)c->dest;
    bytes_put(d->b, d->buf, sizeof d->buf);
    d->pub.next_output_byte = d->buf;
    d->pub.free_in_buffer = sizeof d->buf;
    return TRUE;
}

static void jdest_term(j_compress_ptr c)
{
    jdest *d = (jdest *)c->dest;
    bytes_put(d->b, d->buf, sizeof d->buf - d->pub.free_in_buffer);
}

static void encode_jpeg_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    const rill_tensor *im = ctx->inputs[0];
    char sb[96];
    if (im->shape.rank != 3) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "image must be 3-dimensional%s",
                        rill_shape_str(&im->shape, sb, sizeof sb));
        return;
    }
    int64_t h = im->shape.dims[0], w = im->shape.dims[1], ch = im->shape.dims[2];
    const char *format = attr_string(n, "format", "");
    int64_t want = strcmp(format, "grayscale") == 0 ? 1 : strcmp(format, "rgb") == 0 ? 3 : ch;
    if (*format && strcmp(format, "grayscale") != 0 && strcmp(format, "rgb") != 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "format must be '', grayscale or rgb, got %s",
                        format);
        return;
    }
    if (ch != want || (ch != 1 && ch != 3)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "image must have 1 or 3 channels (as format says), got %s",
                        rill_shape_str(&im->shape, sb, sizeof sb));
        return;
    }
    int64_t quality = rill__attr_int(n, "quality", 95);
    if (quality < 0 || quality > 100) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "quality must be in [0,100], got %lld",
                        (long long)quality);
        return;
    }
    if (h <= 0 || w <= 0 || h > 65535 || w > 65535) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "image must be non-empty and at most 65535 pixels a side, got %s",
                        rill_shape_str(&im->shape, sb, sizeof sb));
        return;
    }
    struct jpeg_compress_struct c;
    jerr e = {0};
    c.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = jpeg_on_error;
    e.pub.emit_message = jpeg_on_message;
    bytes b = {0};
    jdest d = {.b = &b};
    if (setjmp(e.jb)) {
        jpeg_destroy_compress(&c);
        rill__free(b.p);
        rill__kctx_fail(ctx, RILL_INTERNAL, "JPEG encoding failed");
        return;
    }
    jpeg_create_compress(&c);
    d.pub.init_destination = jdest_init;
    d.pub.empty_output_buffer = jdest_empty;
    d.pub.term_destination = jdest_term;
    c.dest = &d.pub;
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = (int)ch;
    c.in_color_space = ch == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, (int)quality, TRUE);
    if (rill__attr_bool(n, "optimize_size", false)) c.optimize_coding = TRUE;
    if (rill__attr_bool(n, "progressive", false)) jpeg_simple_progression(&c);
    if (!rill__attr_bool(n, "chroma_downsampling", true) && ch == 3)
        for (int i = 0; i < c.num_components; i++)
            c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
    const char *unit = attr_string(n, "density_unit", "in");
    c.density_unit = strcmp(unit, "cm") == 0 ? 2 : 1;
    c.X_density = (UINT16)rill__attr_int(n, "x_density", 300);
    c.Y_density = (UINT16)rill__attr_int(n, "y_density", 300);
    c.write_JFIF_header = TRUE;
    jpeg_start_compress(&c, TRUE);
    const unsigned char *x = im->buf->data;
    while (c.next_scanline < c.image_height) {
        JSAMPROW rp = (JSAMPROW)(x + (size_t)c.next_scanline * (size_t)w * (size_t)ch);
        jpeg_write_scanlines(&c, &rp, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    set_string_output(ctx, b.p, b.n);
    rill__free(b.p);
}

/* --- PNG --- */

typedef struct png_src {
    const unsigned char *p;
    size_t n, at;
    jmp_buf jb;
} png_src;

static void png_on_error(png_structp png, png_const_charp msg)
{
    (void)msg;
    png_src *s = png_get_error_ptr(png);
    longjmp(s->jb, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static void png_read_mem(png_structp png, png_bytep out, png_size_t n)
{
    png_src *s = png_get_io_ptr(png);
    if (n > s->n - s->at) png_error(png, "read past the end");
    memcpy(out, s->p + s->at, n);
    s->at += n;
}

static void decode_png(rill__kctx *ctx, const unsigned char *data, size_t size, int64_t channels,
                       rill_dtype dt)
{
    if (channels < 0 || channels > 4) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "channels must be 0, 1, 2, 3, or 4, got %lld",
                        (long long)channels);
        return;
    }
    if (dt != U8 && dt != U16) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "dtype must be uint8 or uint16, got %s",
                        rill_dtype_name(dt));
        return;
    }
    png_src src = {.p = data, .n = size};
    png_structp png = NULL;
    png_infop info = NULL;
    png_bytep *volatile rows = NULL;
    if (!is_png(data, size)) goto bad;
    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_on_error, png_on_warning);
    if (!png) goto bad;
    info = png_create_info_struct(png);
    if (!info) goto bad;
    if (setjmp(src.jb)) goto bad;
    png_set_read_fn(png, &src, png_read_mem);
    png_read_info(png, info);
    int depth = png_get_bit_depth(png, info), color = png_get_color_type(png, info);
    png_set_expand(png); /* palette -> RGB, gray < 8 bits -> 8, tRNS -> alpha */
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    bool alpha = (color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS);
    bool gray = !(color & PNG_COLOR_MASK_COLOR);
    int file_ch = (gray ? 1 : 3) + (alpha ? 1 : 0);
    int ch = channels ? (int)channels : file_ch;
    bool want_alpha = ch == 2 || ch == 4, want_gray = ch <= 2;
    if (dt == U8 && depth == 16) png_set_scale_16(png);
    if (dt == U16) {
        if (depth < 16) png_set_expand_16(png);
        png_set_swap(png); /* big-endian in the file */
    }
    if (want_gray && !gray) png_set_rgb_to_gray_fixed(png, 1, -1, -1);
    if (!want_gray && gray) png_set_gray_to_rgb(png);
    if (alpha && !want_alpha) png_set_strip_alpha(png);
    if (!alpha && want_alpha) png_set_add_alpha(png, dt == U16 ? 0xffff : 0xff, PNG_FILLER_AFTER);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int64_t h = png_get_image_height(png, info), w = png_get_image_width(png, info);
    if ((int64_t)png_get_rowbytes(png, info) != w * ch * (dt == U16 ? 2 : 1)) goto bad;
    rill_shape os = {.rank = 3, .dims = {h, w, ch}};
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, dt, &os);
    if (!out) {
        png_destroy_read_struct(&png, &info, NULL);
        return;
    }
    rows = rill__malloc((size_t)(h ? h : 1) * sizeof *rows);
    RILL_CHECK_ALLOC(rows);
    size_t stride = (size_t)(w * ch) * (dt == U16 ? 2 : 1);
    for (int64_t i = 0; i < h; i++) rows[i] = (png_bytep)out->buf->data + (size_t)i * stride;
    png_read_image(png, rows);
    png_destroy_read_struct(&png, &info, NULL);
    rill__free(rows);
    return;
bad:
    png_destroy_read_struct(png ? &png : NULL, info ? &info : NULL, NULL);
    rill__free(rows);
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Invalid PNG data, size %zu", size);
}

static void decode_png_kernel(rill__kctx *ctx)
{
    size_t n;
    const char *p = rill_tensor_get_string(ctx->inputs[0], 0, &n);
    decode_png(ctx, (const unsigned char *)p, n, rill__attr_int(ctx->node, "channels", 0),
               ctx->node->out_dtypes[0]);
}

static void png_write_mem(png_structp png, png_bytep p, png_size_t n)
{
    bytes_put(png_get_io_ptr(png), p, n);
}

static void png_flush_mem(png_structp png)
{
    (void)png;
}

static void encode_png_kernel(rill__kctx *ctx)
{
    const rill_tensor *im = ctx->inputs[0];
    char sb[96];
    if (im->shape.rank != 3) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "image must be 3-dimensional%s",
                        rill_shape_str(&im->shape, sb, sizeof sb));
        return;
    }
    int64_t h = im->shape.dims[0], w = im->shape.dims[1], ch = im->shape.dims[2];
    if (ch < 1 || ch > 4) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "image must have 1, 2, 3, or 4 channels, got %lld", (long long)ch);
        return;
    }
    if (h <= 0 || w <= 0 || h > 0x7fffffff || w > 0x7fffffff) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "image must be non-empty, got %s",
                        rill_shape_str(&im->shape, sb, sizeof sb));
        return;
    }
    int64_t level = rill__attr_int(ctx->node, "compression", -1);
    if (level < -1 || level > 9) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "compression should be in [-1,9], got %lld",
                        (long long)level);
        return;
    }
    bool wide = im->dtype == U16;
    png_src err = {0};
    bytes b = {0};
    png_structp png =
        png_create_write_struct(PNG_LIBPNG_VER_STRING, &err, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    png_bytep *volatile rows = NULL;
    if (!png || !info || setjmp(err.jb)) {
        png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
        rill__free(rows);
        rill__free(b.p);
        rill__kctx_fail(ctx, RILL_INTERNAL, "PNG encoding failed");
        return;
    }
    static const int types[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                 PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
    png_set_write_fn(png, &b, png_write_mem, png_flush_mem);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, wide ? 16 : 8, types[ch],
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (level >= 0) png_set_compression_level(png, (int)level);
    png_write_info(png, info);
    if (wide) png_set_swap(png);
    rows = rill__malloc((size_t)h * sizeof *rows);
    RILL_CHECK_ALLOC(rows);
    size_t stride = (size_t)(w * ch) * (wide ? 2 : 1);
    for (int64_t i = 0; i < h; i++) rows[i] = (png_bytep)im->buf->data + (size_t)i * stride;
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    rill__free(rows);
    set_string_output(ctx, b.p, b.n);
    rill__free(b.p);
}

/* DecodeImage: the format from the first bytes (TF's decode_image). */
static void decode_image_kernel(rill__kctx *ctx)
{
    size_t n;
    const unsigned char *p = (const unsigned char *)rill_tensor_get_string(ctx->inputs[0], 0, &n);
    int64_t channels = rill__attr_int(ctx->node, "channels", 0);
    rill_dtype dt = ctx->node->out_dtypes[0];
    if (is_jpeg(p, n)) {
        if (dt != U8) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "JPEG images take dtype uint8, got %s",
                            rill_dtype_name(dt));
            return;
        }
        if (channels == 4 || channels == 2) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "channels must be 0, 1, or 3 for JPEG, got %lld", (long long)channels);
            return;
        }
        decode_jpeg(ctx, p, n, channels);
    } else if (is_png(p, n)) {
        decode_png(ctx, p, n, channels, dt);
    } else if (n >= 3 && memcmp(p, "GIF", 3) == 0) {
        rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "GIF images are not supported by rill");
    } else if (n >= 2 && memcmp(p, "BM", 2) == 0) {
        rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "BMP images are not supported by rill");
    } else {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Unknown image file format. One of JPEG, PNG, GIF, BMP required.");
    }
}

#define CK(op_, fn_)                                                                               \
    {                                                                                              \
        .op = op_, .device_type = "CPU", .fn = fn_, .host_memory_inputs = 1                        \
    }

const rill__kernel_def rill__cpu_kernels_image_codec[] = {
    CK("DecodeJpeg", decode_jpeg_kernel),   CK("EncodeJpeg", encode_jpeg_kernel),
    CK("DecodePng", decode_png_kernel),     CK("EncodePng", encode_png_kernel),
    CK("DecodeImage", decode_image_kernel), {0},
};
