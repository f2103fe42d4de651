/* test_image_codec.c - the image codecs (cpu_image_codec.c): PNG round trips exact in uint8 and
 * uint16 and every channel count, JPEG round trips within the codec's error (colour, greyscale,
 * quality, ratio), DecodeImage sniffing the format, and corrupt or truncated data giving TF's
 * InvalidArgument texts (never a crash or a libjpeg exit). Needs rill's uint8 dtype. */
#include "op_check.h"

#include <stdlib.h>
#include <string.h>

#define U8  ((rill_dtype)4)
#define U16 ((rill_dtype)17)

static rill_output str_const(rill_graph *g, const void *p, size_t n, const char *name)
{
    rill_tensor *t = rill_tensor_new(RILL_STRING, NULL, 0);
    rill_tensor_set_string(t, 0, p, n);
    rill_output o = rill_const(g, t, name);
    rill_tensor_free(t);
    return o;
}

static rill_output op1(rill_graph *g, const char *op, rill_output in, int64_t channels,
                       rill_dtype dtype, const char *extra_bool)
{
    rill_op_builder *b = rill_op_builder_new(g, op, NULL);
    rill_op_builder_add_input(b, in);
    if (channels >= 0) rill_op_builder_set_int(b, "channels", channels);
    if (dtype) rill_op_builder_set_type(b, "dtype", dtype);
    if (extra_bool) rill_op_builder_set_bool(b, extra_bool, true);
    return rill_node_output(rill_op_builder_finish(b), 0);
}

/* Runs fetch; NULL on failure, with the status text in msg when given. */
static rill_tensor *run(rill_graph *g, rill_output fetch, char *msg, size_t len)
{
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_tensor *out = NULL;
    if (sess) rill_session_run(sess, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, s);
    if (msg) snprintf(msg, len, "%s", rill_status_message(s));
    if (!out && !msg) fprintf(stderr, "  run failed: %s\n", rill_status_message(s));
    rill_session_free(sess);
    rill_status_free(s);
    return out;
}

enum { H = 37, W = 53 };

static void make_image(unsigned char *x, int ch)
{
    for (int i = 0; i < H; i++)
        for (int j = 0; j < W; j++)
            for (int k = 0; k < ch; k++)
                x[(i * W + j) * ch + k] = (unsigned char)(10 + i * 2 + j * 2 + k * 30); /* smooth */
}

/* Encodes an uint8 image (ch channels) with op and returns the bytes (caller frees). */
static char *encode(const char *op, const void *img, rill_dtype t, int ch, size_t *len)
{
    rill_graph *g = rill_graph_new();
    int64_t dims[3] = {H, W, ch};
    rill_tensor *it = rill_tensor_from_data(t, dims, 3, img);
    rill_output e = op1(g, op, rill_const(g, it, "img"), -1, 0, NULL);
    rill_tensor_free(it);
    rill_tensor *s = run(g, e, NULL, 0);
    char *out = NULL;
    if (s) {
        const char *p = rill_tensor_get_string(s, 0, len);
        out = malloc(*len);
        memcpy(out, p, *len);
    }
    rill_tensor_free(s);
    rill_graph_free(g);
    return out;
}

static rill_tensor *decode(const char *op, const char *data, size_t len, int64_t channels,
                           rill_dtype dtype, const char *flag, char *msg, size_t mlen)
{
    rill_graph *g = rill_graph_new();
    rill_output d = op1(g, op, str_const(g, data, len, "bytes"), channels, dtype, flag);
    rill_tensor *t = d.node ? run(g, d, msg, mlen) : NULL;
    if (!d.node && msg) snprintf(msg, mlen, "%s", rill_status_message(rill_graph_status(g)));
    rill_graph_free(g);
    return t;
}

static bool shape_is(const rill_tensor *t, int64_t h, int64_t w, int64_t c)
{
    const rill_shape *s = t ? rill_tensor_shape(t) : NULL;
    return s && s->rank == 3 && s->dims[0] == h && s->dims[1] == w && s->dims[2] == c;
}

static void test_png(void)
{
    for (int ch = 1; ch <= 4; ch++) {
        unsigned char x[H * W * 4];
        make_image(x, ch);
        size_t n = 0;
        char *png = encode("EncodePng", x, U8, ch, &n);
        if (!CHECK(png != NULL)) continue;
        rill_tensor *t = decode("DecodePng", png, n, 0, 0, NULL, NULL, 0);
        CHECK(shape_is(t, H, W, ch) && rill_tensor_dtype(t) == U8);
        CHECK(t && memcmp(rill_tensor_data(t), x, (size_t)H * W * ch) == 0);
        rill_tensor_free(t);
        /* other channel counts: alpha added as opaque, grey to RGB copies */
        if (ch == 1) {
            rill_tensor *c3 = decode("DecodePng", png, n, 3, 0, NULL, NULL, 0);
            rill_tensor *c4 = decode("DecodeImage", png, n, 4, 0, NULL, NULL, 0);
            CHECK(shape_is(c3, H, W, 3) && shape_is(c4, H, W, 4));
            int bad = 0;
            for (int i = 0; c3 && c4 && i < H * W; i++) {
                const unsigned char *p3 = (unsigned char *)rill_tensor_data(c3) + i * 3,
                                    *p4 = (unsigned char *)rill_tensor_data(c4) + i * 4;
                bad += p3[0] != x[i] || p3[1] != x[i] || p3[2] != x[i] || p4[0] != x[i] ||
                       p4[3] != 255;
            }
            CHECK_EQ_INT(bad, 0);
            rill_tensor_free(c3);
            rill_tensor_free(c4);
        }
        if (ch == 4) {
            rill_tensor *c3 = decode("DecodePng", png, n, 3, 0, NULL, NULL, 0);
            int bad = 0;
            for (int i = 0; c3 && i < H * W; i++)
                bad += memcmp((unsigned char *)rill_tensor_data(c3) + i * 3, x + i * 4, 3) != 0;
            CHECK(shape_is(c3, H, W, 3));
            CHECK_EQ_INT(bad, 0);
            rill_tensor_free(c3);
        }
        free(png);
    }
    /* uint16: exact, and as uint8 the top byte (rounded) */
    uint16_t y[H * W * 3];
    for (int i = 0; i < H * W * 3; i++) y[i] = (uint16_t)(i * 977 % 65536);
    size_t n = 0;
    char *png = encode("EncodePng", y, U16, 3, &n);
    rill_tensor *t = png ? decode("DecodePng", png, n, 0, U16, NULL, NULL, 0) : NULL;
    CHECK(shape_is(t, H, W, 3) && rill_tensor_dtype(t) == U16);
    CHECK(t && memcmp(rill_tensor_data(t), y, sizeof y) == 0);
    rill_tensor *t8 = png ? decode("DecodePng", png, n, 0, U8, NULL, NULL, 0) : NULL;
    int bad = 0;
    for (int i = 0; t8 && i < H * W * 3; i++) {
        int want = (int)((y[i] * 255L + 32767) / 65535);
        bad += abs(((unsigned char *)rill_tensor_data(t8))[i] - want) > 1;
    }
    CHECK(t8 != NULL);
    CHECK_EQ_INT(bad, 0);
    rill_tensor_free(t);
    rill_tensor_free(t8);
    /* corrupt and truncated data: TF's text with the size */
    char msg[512];
    CHECK(decode("DecodePng", png, n / 2, 0, 0, NULL, msg, sizeof msg) == NULL);
    char want[64];
    snprintf(want, sizeof want, "Invalid PNG data, size %zu", n / 2);
    CHECK_STR_CONTAINS(msg, want);
    char junk[100];
    memcpy(junk, png, 8); /* a PNG signature and then nonsense */
    for (int i = 8; i < 100; i++) junk[i] = (char)(i * 31);
    CHECK(decode("DecodePng", junk, sizeof junk, 0, 0, NULL, msg, sizeof msg) == NULL);
    CHECK_STR_CONTAINS(msg, "Invalid PNG data, size 100");
    free(png);
}

static double mean_abs_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += abs(a[i] - b[i]);
    return s / (double)n;
}

static void test_jpeg(void)
{
    unsigned char x[H * W * 3];
    make_image(x, 3);
    size_t n = 0;
    char *jpg = encode("EncodeJpeg", x, U8, 3, &n);
    if (!CHECK(jpg != NULL)) return;
    CHECK((unsigned char)jpg[0] == 0xff && (unsigned char)jpg[1] == 0xd8);
    rill_tensor *t = decode("DecodeJpeg", jpg, n, 0, 0, NULL, NULL, 0);
    CHECK(shape_is(t, H, W, 3) && rill_tensor_dtype(t) == U8);
    double err = t ? mean_abs_diff(rill_tensor_data(t), x, sizeof x) : 99;
    if (!CHECK(err < 3.0)) fprintf(stderr, "  mean |decoded - image| = %g\n", err);
    rill_tensor *g = decode("DecodeJpeg", jpg, n, 1, 0, NULL, NULL, 0);
    CHECK(shape_is(g, H, W, 1));
    rill_tensor *half = decode("DecodeJpeg", jpg, n, 0, 0, NULL, NULL, 0);
    rill_tensor_free(half);
    rill_tensor *img = decode("DecodeImage", jpg, n, 3, 0, NULL, NULL, 0);
    CHECK(img && t && memcmp(rill_tensor_data(img), rill_tensor_data(t), sizeof x) == 0);
    rill_tensor_free(img);
    rill_tensor_free(t);
    rill_tensor_free(g);
    /* a greyscale JPEG decodes to 1 channel, or to 3 equal ones */
    unsigned char x1[H * W];
    make_image(x1, 1);
    size_t n1 = 0;
    char *jg = encode("EncodeJpeg", x1, U8, 1, &n1);
    rill_tensor *d1 = jg ? decode("DecodeJpeg", jg, n1, 0, 0, NULL, NULL, 0) : NULL;
    rill_tensor *d3 = jg ? decode("DecodeJpeg", jg, n1, 3, 0, NULL, NULL, 0) : NULL;
    CHECK(shape_is(d1, H, W, 1) && shape_is(d3, H, W, 3));
    CHECK(d1 && mean_abs_diff(rill_tensor_data(d1), x1, sizeof x1) < 3.0);
    int bad = 0;
    for (int i = 0; d1 && d3 && i < H * W; i++)
        bad += ((unsigned char *)rill_tensor_data(d3))[i * 3 + 1] !=
               ((unsigned char *)rill_tensor_data(d1))[i];
    CHECK_EQ_INT(bad, 0);
    rill_tensor_free(d1);
    rill_tensor_free(d3);
    free(jg);
    /* corrupt: TF's text; truncated: the same unless try_recover_truncated */
    char msg[512], want[80];
    char junk[300];
    memcpy(junk, jpg, 3);
    for (int i = 3; i < 300; i++) junk[i] = (char)(i * 37 + 1);
    CHECK(decode("DecodeJpeg", junk, sizeof junk, 0, 0, NULL, msg, sizeof msg) == NULL);
    CHECK_STR_CONTAINS(msg, "Invalid JPEG data or crop window, data size 300");
    CHECK(decode("DecodeJpeg", jpg, n * 2 / 3, 0, 0, NULL, msg, sizeof msg) == NULL);
    snprintf(want, sizeof want, "Invalid JPEG data or crop window, data size %zu", n * 2 / 3);
    CHECK_STR_CONTAINS(msg, want);
    rill_tensor *rec = decode("DecodeJpeg", jpg, n * 2 / 3, 0, 0, "try_recover_truncated", NULL, 0);
    CHECK(shape_is(rec, H, W, 3));
    rill_tensor_free(rec);
    CHECK(decode("DecodeJpeg", "", 0, 0, 0, NULL, msg, sizeof msg) == NULL);
    CHECK_STR_CONTAINS(msg, "Invalid JPEG data or crop window, data size 0");
    CHECK(decode("DecodeImage", "hello world", 11, 0, 0, NULL, msg, sizeof msg) == NULL);
    CHECK_STR_CONTAINS(msg, "Unknown image file format. One of JPEG, PNG, GIF, BMP required.");
    CHECK(decode("DecodeJpeg", jpg, n, 2, 0, NULL, msg, sizeof msg) == NULL);
    CHECK_STR_CONTAINS(msg, "channels must be 0, 1, or 3, got 2");
    free(jpg);
    /* EncodeJpeg refuses 4 channels and float images */
    rill_graph *gr = rill_graph_new();
    double fz[12] = {0};
    rill_tensor *ft = oc_tensor(RILL_FLOAT, (int64_t[]){2, 2, 3}, 3, fz);
    op1(gr, "EncodeJpeg", rill_const(gr, ft, "f"), -1, 0, NULL);
    rill_tensor_free(ft);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(gr)), "the image must be uint8");
    rill_graph_free(gr);
}

int main(void)
{
    if (rill_dtype_size(U8) != 1 || rill_dtype_size(U16) != 2)
        TEST_SKIP("rill has no uint8/uint16 dtype in this build (the element-wise work adds it)");
    test_png();
    test_jpeg();
    TEST_MAIN_END();
}
