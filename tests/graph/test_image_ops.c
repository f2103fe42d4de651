/* test_image_ops.c - the file and image ops (ops_image.c, cpu_image.c): ReadFile/WriteFile round
 * trips through real files (a missing file is NOT_FOUND naming the path), ResizeBilinear and
 * ResizeNearestNeighbor against a double-precision reference of TF's conventions for every
 * combination of align_corners and half_pixel_centers, up- and down-scaling, several dtypes, a
 * fed size, both gradients (ResizeBilinearGrad, ResizeNearestNeighborGrad) against finite
 * differences, and TF's errors. */
#include "op_check.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A Const of dtype t from double values. */
static rill_output cst(rill_graph *g, rill_dtype t, const double *v, const int64_t *dims, int rank,
                       const char *name)
{
    rill_tensor *x = oc_tensor(t, dims, rank, v);
    rill_output o = rill_const(g, x, name);
    rill_tensor_free(x);
    return o;
}

static rill_output size_const(rill_graph *g, int32_t h, int32_t w)
{
    int32_t v[2] = {h, w};
    int64_t two = 2;
    rill_tensor *t = rill_tensor_from_data(RILL_INT32, &two, 1, v);
    rill_output o = rill_const(g, t, "size");
    rill_tensor_free(t);
    return o;
}

static rill_output resize(rill_graph *g, const char *op, rill_output im, rill_output size,
                          bool align, bool half)
{
    rill_op_builder *b = rill_op_builder_new(g, op, NULL);
    rill_op_builder_add_input(b, im);
    rill_op_builder_add_input(b, size);
    rill_op_builder_set_bool(b, "align_corners", align);
    rill_op_builder_set_bool(b, "half_pixel_centers", half);
    return rill_node_output(rill_op_builder_finish(b), 0);
}

/* TF's source coordinate of output index i (see cpu_image.c), in double. */
static double src_coord(int64_t i, int64_t in, int64_t out, bool align, bool half)
{
    double scale = align && out > 1 ? (double)(in - 1) / (double)(out - 1) : (double)in / out;
    return half ? (i + 0.5) * scale - 0.5 : i * scale;
}

static double ref_bilinear(const double *x, int64_t h, int64_t w, int64_t c, int64_t oh, int64_t ow,
                           int64_t b, int64_t i, int64_t j, int64_t k, bool align, bool half)
{
    double sy = src_coord(i, h, oh, align, half), sx = src_coord(j, w, ow, align, half);
    int64_t y0 = (int64_t)floor(sy) > 0 ? (int64_t)floor(sy) : 0;
    int64_t y1 = (int64_t)ceil(sy) < h - 1 ? (int64_t)ceil(sy) : h - 1;
    int64_t x0 = (int64_t)floor(sx) > 0 ? (int64_t)floor(sx) : 0;
    int64_t x1 = (int64_t)ceil(sx) < w - 1 ? (int64_t)ceil(sx) : w - 1;
    double yl = sy - floor(sy), xl = sx - floor(sx);
#define AT(y, xx) x[((b * h + (y)) * w + (xx)) * c + k]
    double top = AT(y0, x0) + (AT(y0, x1) - AT(y0, x0)) * xl;
    double bot = AT(y1, x0) + (AT(y1, x1) - AT(y1, x0)) * xl;
#undef AT
    return top + (bot - top) * yl;
}

static int64_t ref_nearest(int64_t i, int64_t in, int64_t out, bool align, bool half)
{
    double scale = align && out > 1 ? (double)(in - 1) / (double)(out - 1) : (double)in / out;
    double x = half ? (i + 0.5) * scale : i * scale;
    int64_t v = align ? (int64_t)round(x) : (int64_t)floor(x);
    if (v > in - 1) v = in - 1;
    return v < 0 ? 0 : v;
}

static void test_resize_reference(void)
{
    const int64_t B = 2, H = 5, W = 7, C = 3;
    double x[2 * 5 * 7 * 3];
    oc_seed(11);
    for (int i = 0; i < B * H * W * C; i++) x[i] = oc_uniform(-10, 10);
    const int64_t sizes[4][2] = {{11, 13}, {3, 4}, {1, 1}, {5, 14}};
    const rill_dtype types[3] = {RILL_FLOAT, RILL_DOUBLE, RILL_INT32};
    for (int ti = 0; ti < 3; ti++)
        for (int si = 0; si < 4; si++)
            for (int mode = 0; mode < 3; mode++) {
                bool align = mode == 1, half = mode == 2;
                rill_dtype t = types[ti];
                double xi[2 * 5 * 7 * 3];
                for (int i = 0; i < B * H * W * C; i++)
                    xi[i] = t == RILL_INT32 ? round(x[i]) : x[i];
                rill_graph *g = rill_graph_new();
                rill_output im = cst(g, t, xi, (int64_t[]){B, H, W, C}, 4, "im");
                int64_t oh = sizes[si][0], ow = sizes[si][1];
                rill_output bl = resize(g, "ResizeBilinear", im,
                                        size_const(g, (int32_t)oh, (int32_t)ow), align, half);
                rill_output nn = resize(g, "ResizeNearestNeighbor", im,
                                        size_const(g, (int32_t)oh, (int32_t)ow), align, half);
                rill_shape sh = rill_output_shape(bl);
                CHECK(sh.rank == 4 && sh.dims[1] == oh && sh.dims[2] == ow && sh.dims[3] == C);
                CHECK(rill_output_dtype(bl) == RILL_FLOAT && rill_output_dtype(nn) == t);
                rill_session *sess = rill_session_new(g, NULL, NULL);
                rill_tensor *yb = oc_run(sess, bl, NULL, NULL, 0),
                            *yn = oc_run(sess, nn, NULL, NULL, 0);
                double worst = 0;
                int64_t nbad = 0;
                for (int64_t b = 0; yb && yn && b < B; b++)
                    for (int64_t i = 0; i < oh; i++)
                        for (int64_t j = 0; j < ow; j++)
                            for (int64_t k = 0; k < C; k++) {
                                int64_t o = ((b * oh + i) * ow + j) * C + k;
                                double want =
                                    ref_bilinear(xi, H, W, C, oh, ow, b, i, j, k, align, half);
                                double got = ((float *)rill_tensor_data(yb))[o];
                                if (fabs(got - want) > worst) worst = fabs(got - want);
                                int64_t iy = ref_nearest(i, H, oh, align, half),
                                        ix = ref_nearest(j, W, ow, align, half);
                                double wn = xi[((b * H + iy) * W + ix) * C + k];
                                double gn = t == RILL_FLOAT ? ((float *)rill_tensor_data(yn))[o]
                                            : t == RILL_DOUBLE
                                                ? ((double *)rill_tensor_data(yn))[o]
                                                : ((int32_t *)rill_tensor_data(yn))[o];
                                nbad += fabs(gn - (t == RILL_FLOAT ? (float)wn : wn)) > 0;
                            }
                CHECK(yb && yn);
                if (!CHECK(worst < 2e-5))
                    fprintf(stderr, "  %s %lldx%lld mode %d: off by %g\n", rill_dtype_name(t),
                            (long long)oh, (long long)ow, mode, worst);
                CHECK_EQ_INT(nbad, 0);
                rill_tensor_free(yb);
                rill_tensor_free(yn);
                rill_session_free(sess);
                rill_graph_free(g);
            }
}

/* TF 2.21's tf.compat.v1.image.resize_bilinear of [[0, 1, 2], [3, 4, 5]] (1x2x3x1) to 3x4, as
 * printed by TF with the default (legacy) conventions. */
static void test_resize_tf_values(void)
{
    const double x[6] = {0, 1, 2, 3, 4, 5};
    static const float want[12] = {0.0f, 0.75f, 1.5f, 2.0f,  2.0f, 2.75f,
                                   3.5f, 4.0f,  3.0f, 3.75f, 4.5f, 5.0f};
    rill_graph *g = rill_graph_new();
    rill_output im = cst(g, RILL_FLOAT, x, (int64_t[]){1, 2, 3, 1}, 4, "im");
    rill_output y = resize(g, "ResizeBilinear", im, size_const(g, 3, 4), false, false);
    rill_session *sess = rill_session_new(g, NULL, NULL);
    rill_tensor *t = oc_run(sess, y, NULL, NULL, 0);
    CHECK(t && memcmp(rill_tensor_data(t), want, sizeof want) == 0);
    rill_tensor_free(t);
    rill_session_free(sess);
    rill_graph_free(g);
}

static rill_output grad_bilinear(rill_graph *g, const rill_output *xs, void *arg)
{
    const bool *mode = arg;
    /* the op's output is float whatever the input: cast back for the double checker */
    return rill_cast(g, resize(g, "ResizeBilinear", xs[0], size_const(g, 4, 7), mode[0], mode[1]),
                     RILL_DOUBLE, NULL);
}

static rill_output grad_nearest(rill_graph *g, const rill_output *xs, void *arg)
{
    const bool *mode = arg;
    return resize(g, "ResizeNearestNeighbor", xs[0], size_const(g, 5, 3), mode[0], mode[1]);
}

static void test_resize_gradient(void)
{
    for (int m = 0; m < 3; m++) {
        bool mode[2] = {m == 1, m == 2};
        oc_seed(9 + (uint64_t)m);
        const int64_t dims[4] = {2, 3, 5, 2};
        rill_tensor *v = oc_random(dims, 4, -1, 1);
        char label[64];
        snprintf(label, sizeof label, "ResizeNearestNeighbor grad, mode %d", m);
        oc_grad_check(label, 1, &v, grad_nearest, mode, (oc_grad_opts){.h = 0.25});
        rill_tensor_free(v);
    }
    for (int m = 0; m < 3; m++) {
        bool mode[2] = {m == 1, m == 2};
        oc_seed(5 + (uint64_t)m);
        const int64_t dims[4] = {1, 3, 5, 2};
        rill_tensor *v = oc_random(dims, 4, -1, 1);
        char label[64];
        snprintf(label, sizeof label, "ResizeBilinear grad, mode %d", m);
        /* linear in the image: a big step is exact, and swamps the float forward's rounding */
        oc_grad_check(label, 1, &v, grad_bilinear, mode,
                      (oc_grad_opts){.h = 0.25, .rtol = 1e-5, .atol = 1e-6});
        rill_tensor_free(v);
    }
}

static void test_errors(void)
{
    rill_graph *g = rill_graph_new();
    double x[8] = {0};
    rill_output im3 = cst(g, RILL_FLOAT, x, (int64_t[]){2, 2, 2}, 3, "im3");
    resize(g, "ResizeBilinear", im3, size_const(g, 2, 2), false, false);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)),
                       "Shape must be rank 4 but is rank 3");
    rill_graph_free(g);
    g = rill_graph_new();
    rill_output im = cst(g, RILL_FLOAT, x, (int64_t[]){1, 2, 2, 2}, 4, "im");
    resize(g, "ResizeBilinear", im, size_const(g, 2, 2), true, true);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)),
                       "If half_pixel_centers is True, align_corners must be False.");
    rill_graph_free(g);
    /* a fed size: checked at run time */
    g = rill_graph_new();
    im = cst(g, RILL_FLOAT, x, (int64_t[]){1, 2, 2, 2}, 4, "im");
    rill_output sz = rill_placeholder(g, RILL_INT32, rill_shape_vector(2), "sz");
    rill_output y = resize(g, "ResizeNearestNeighbor", im, sz, false, false);
    CHECK(rill_output_shape(y).rank == 4 && rill_output_shape(y).dims[1] == -1);
    rill_session *sess = rill_session_new(g, NULL, NULL);
    int32_t good[2] = {3, 5}, bad[2] = {0, 5};
    int64_t two = 2;
    rill_tensor *fg = rill_tensor_from_data(RILL_INT32, &two, 1, good),
                *fb = rill_tensor_from_data(RILL_INT32, &two, 1, bad);
    rill_tensor *out = oc_run(sess, y, &sz, &fg, 1);
    CHECK(out && rill_tensor_shape(out)->dims[1] == 3 && rill_tensor_shape(out)->dims[2] == 5);
    rill_tensor_free(out);
    rill_status *s = rill_status_new();
    out = NULL;
    CHECK(rill_session_run(sess, &sz, &fb, 1, &y, &out, 1, NULL, 0, s) == RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "output dimensions must be positive");
    rill_status_free(s);
    rill_tensor_free(fg);
    rill_tensor_free(fb);
    rill_session_free(sess);
    rill_graph_free(g);
}

static void test_files(void)
{
    char dir[] = "/tmp/rill_image_test_XXXXXX";
    if (!CHECK(mkdtemp(dir) != NULL)) return;
    char path[256], missing[256];
    snprintf(path, sizeof path, "%s/sub/dir/blob.bin", dir);
    snprintf(missing, sizeof missing, "%s/none.jpg", dir);
    char data[3000];
    for (int i = 0; i < 3000; i++) data[i] = (char)(i * 7); /* NUL bytes included */
    rill_graph *g = rill_graph_new();
    rill_tensor *pt = rill_tensor_scalar_string(path), *mt = rill_tensor_scalar_string(missing);
    rill_tensor *ct = rill_tensor_new(RILL_STRING, NULL, 0);
    rill_tensor_set_string(ct, 0, data, sizeof data);
    rill_output p = rill_const(g, pt, "path"), m = rill_const(g, mt, "missing");
    rill_output c = rill_const(g, ct, "contents");
    rill_op_builder *b = rill_op_builder_new(g, "WriteFile", "write");
    rill_op_builder_add_input(b, p);
    rill_op_builder_add_input(b, c);
    rill_node *w = rill_op_builder_finish(b);
    b = rill_op_builder_new(g, "ReadFile", "read");
    rill_op_builder_add_input(b, p);
    rill_output r = rill_node_output(rill_op_builder_finish(b), 0);
    b = rill_op_builder_new(g, "ReadFile", "read_missing");
    rill_op_builder_add_input(b, m);
    rill_output rm = rill_node_output(rill_op_builder_finish(b), 0);
    CHECK(rill_graph_ok(g) && rill_output_dtype(r) == RILL_STRING);
    rill_session *sess = rill_session_new(g, NULL, NULL);
    CHECK(oc_run_targets(sess, &w, 1));
    rill_tensor *got = oc_run(sess, r, NULL, NULL, 0);
    size_t len = 0;
    const char *gs = got ? rill_tensor_get_string(got, 0, &len) : NULL;
    CHECK(gs && len == sizeof data && memcmp(gs, data, len) == 0);
    rill_status *s = rill_status_new();
    rill_tensor *none = NULL;
    CHECK(rill_session_run(sess, NULL, NULL, 0, &rm, &none, 1, NULL, 0, s) == RILL_NOT_FOUND);
    CHECK_STR_CONTAINS(rill_status_message(s), missing);
    rill_status_free(s);
    rill_tensor_free(got);
    rill_session_free(sess);
    rill_graph_free(g);
    rill_tensor_free(pt);
    rill_tensor_free(mt);
    rill_tensor_free(ct);
    unlink(path);
    char sub[256];
    snprintf(sub, sizeof sub, "%s/sub/dir", dir);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    rmdir(sub);
    rmdir(dir);
}

int main(void)
{
    test_resize_reference();
    test_resize_tf_values();
    test_resize_gradient();
    test_errors();
    test_files();
    TEST_MAIN_END();
}
