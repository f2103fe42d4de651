/* test_morph_ops.c - MaxPoolWithArgmax and its backprops (ops_pool_argmax.c), Dilation2D and its
 * backprops (ops_dilation.c): values and argmax indices against a direct double-precision
 * reference over strides, paddings and rates, float against double, gradients against finite
 * differences (the inputs random, so no ties; Dilation2D's backprops, which have no gradient
 * in TF either, are what the forward op's checked gradient runs), and TF's build errors. */
#include "op_check.h"

#include <float.h>
#include <string.h>

/* --- reference geometry (TF's SAME / VALID) --- */

static void dim(int64_t in, int64_t k, int64_t s, int64_t r, bool same, int64_t *o, int64_t *p)
{
    int64_t e = (k - 1) * r + 1;
    *o = same ? (in + s - 1) / s : (in - e) / s + 1;
    int64_t t = (*o - 1) * s + e - in;
    *p = same && t > 0 ? t / 2 : 0;
}

/* --- MaxPoolWithArgmax --- */

typedef struct mp_case {
    int64_t x[4];
    int64_t k[2], s[2];
    const char *padding;
    bool batch_index;
    rill_dtype targmax;
} mp_case;

static rill_node *mp_op(rill_graph *g, const char *type, const rill_output *in, int n,
                        const mp_case *c)
{
    rill_op_builder *b = rill_op_builder_new(g, type, NULL);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, in[i]);
    rill_op_builder_set_ints(b, "ksize", (int64_t[]){1, c->k[0], c->k[1], 1}, 4);
    rill_op_builder_set_ints(b, "strides", (int64_t[]){1, c->s[0], c->s[1], 1}, 4);
    rill_op_builder_set_string(b, "padding", c->padding);
    rill_op_builder_set_bool(b, "include_batch_in_index", c->batch_index);
    rill_op_builder_set_type(b, "Targmax", c->targmax);
    rill_op_builder_set_type(b, "T", rill_output_dtype(in[0]));
    return rill_op_builder_finish(b);
}

static rill_output mp_fwd(rill_graph *g, const rill_output *xs, void *ctx)
{
    return rill_node_output(mp_op(g, "MaxPoolWithArgmax", xs, 1, ctx), 0);
}

static rill_tensor *mp_x;

/* MaxPoolGradWithArgmax(x, grad, argmax of x), in grad. */
static rill_output mp_grad(rill_graph *g, const rill_output *xs, void *ctx)
{
    rill_output x = rill_const(g, mp_x, "x");
    rill_output am = rill_node_output(mp_op(g, "MaxPoolWithArgmax", &x, 1, ctx), 1);
    rill_output in[] = {x, xs[0], am};
    return rill_node_output(mp_op(g, "MaxPoolGradWithArgmax", in, 3, ctx), 0);
}

/* MaxPoolGradGradWithArgmax(x, grad [x's shape], argmax of x), in grad. */
static rill_output mp_grad_grad(rill_graph *g, const rill_output *xs, void *ctx)
{
    rill_output x = rill_const(g, mp_x, "x");
    rill_output am = rill_node_output(mp_op(g, "MaxPoolWithArgmax", &x, 1, ctx), 1);
    rill_output in[] = {x, xs[0], am};
    return rill_node_output(mp_op(g, "MaxPoolGradGradWithArgmax", in, 3, ctx), 0);
}

static void test_max_pool(const mp_case *c)
{
    bool same = strcmp(c->padding, "SAME") == 0;
    int64_t o[4] = {c->x[0], 0, 0, c->x[3]}, pt, pl;
    dim(c->x[1], c->k[0], c->s[0], 1, same, &o[1], &pt);
    dim(c->x[2], c->k[1], c->s[1], 1, same, &o[2], &pl);
    char lab[128];
    snprintf(
        lab, sizeof lab, "MaxPoolWithArgmax x [%lld,%lld,%lld,%lld] k %lldx%lld s %lldx%lld %s",
        (long long)c->x[0], (long long)c->x[1], (long long)c->x[2], (long long)c->x[3],
        (long long)c->k[0], (long long)c->k[1], (long long)c->s[0], (long long)c->s[1], c->padding);
    rill_tensor *x = oc_random(c->x, 4, -1, 1);
    const double *xv = rill_tensor_data(x);
    int64_t no = oc_numel(o, 4);
    double *ref = calloc((size_t)no, sizeof *ref), *refi = calloc((size_t)no, sizeof *refi);
    for (int64_t n = 0, q = 0; n < o[0]; n++)
        for (int64_t y = 0; y < o[1]; y++)
            for (int64_t xx = 0; xx < o[2]; xx++)
                for (int64_t ch = 0; ch < o[3]; ch++, q++) {
                    double best = -DBL_MAX;
                    int64_t arg = -1;
                    for (int64_t i = 0; i < c->k[0]; i++)
                        for (int64_t j = 0; j < c->k[1]; j++) {
                            int64_t iy = y * c->s[0] - pt + i, ix = xx * c->s[1] - pl + j;
                            if (iy < 0 || iy >= c->x[1] || ix < 0 || ix >= c->x[2]) continue;
                            int64_t flat = ((n * c->x[1] + iy) * c->x[2] + ix) * c->x[3] + ch;
                            if (xv[flat] > best) best = xv[flat], arg = flat;
                        }
                    ref[q] = best;
                    refi[q] =
                        (double)(c->batch_index ? arg : arg - n * c->x[1] * c->x[2] * c->x[3]);
                }
    rill_graph *g = rill_graph_new();
    rill_output xin = rill_const(g, x, "x");
    rill_node *nd = mp_op(g, "MaxPoolWithArgmax", &xin, 1, c);
    rill_shape s0 = rill_output_shape(rill_node_output(nd, 0));
    CHECK(s0.rank == 4 && s0.dims[1] == o[1] && s0.dims[2] == o[2]);
    CHECK(rill_output_dtype(rill_node_output(nd, 1)) == c->targmax);
    rill_tensor *v = oc_eval(g, rill_node_output(nd, 0));
    oc_check_tensor(lab, v, RILL_DOUBLE, o, 4, ref);
    rill_tensor_free(v);
    v = oc_eval(g, rill_node_output(nd, 1));
    oc_check_tensor(lab, v, c->targmax, o, 4, refi);
    rill_tensor_free(v);
    rill_graph_free(g);

    /* float, the same maxima */
    rill_tensor *xf = rill_tensor_new(RILL_FLOAT, c->x, 4);
    for (int64_t i = 0; i < rill_tensor_num_elements(x); i++)
        ((float *)rill_tensor_data(xf))[i] = (float)xv[i];
    g = rill_graph_new();
    xin = rill_const(g, xf, "x");
    v = oc_eval(g, mp_fwd(g, &xin, (void *)c));
    for (int64_t i = 0; v && i < no; i++)
        if (!CHECK(fabs(rill_tensor_get_double(v, i) - ref[i]) < 1e-6)) break;
    rill_tensor_free(v);
    rill_graph_free(g);
    rill_tensor_free(xf);

    rill_tensor *xs[] = {x};
    oc_grad_check(lab, 1, xs, mp_fwd, (void *)c, (oc_grad_opts){0});
    mp_x = x;
    rill_tensor *dy = oc_random(o, 4, -1, 1), *dx = oc_random(c->x, 4, -1, 1);
    oc_grad_check(lab, 1, &dy, mp_grad, (void *)c, (oc_grad_opts){0});
    oc_grad_check(lab, 1, &dx, mp_grad_grad, (void *)c, (oc_grad_opts){0});
    rill_tensor_free(dy);
    rill_tensor_free(dx);
    free(ref);
    free(refi);
    rill_tensor_free(x);
}

/* --- Dilation2D --- */

typedef struct dl_case {
    int64_t x[4], f[3];
    int64_t s[2], r[2];
    const char *padding;
} dl_case;

static rill_output dl_op(rill_graph *g, const char *type, const rill_output *in, int n,
                         const dl_case *c)
{
    rill_op_builder *b = rill_op_builder_new(g, type, NULL);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, in[i]);
    rill_op_builder_set_ints(b, "strides", (int64_t[]){1, c->s[0], c->s[1], 1}, 4);
    rill_op_builder_set_ints(b, "rates", (int64_t[]){1, c->r[0], c->r[1], 1}, 4);
    rill_op_builder_set_string(b, "padding", c->padding);
    rill_op_builder_set_type(b, "T", rill_output_dtype(in[0]));
    return rill_node_output(rill_op_builder_finish(b), 0);
}

static rill_output dl_fwd(rill_graph *g, const rill_output *xs, void *ctx)
{
    return dl_op(g, "Dilation2D", xs, 2, ctx);
}

static void test_dilation(const dl_case *c)
{
    bool same = strcmp(c->padding, "SAME") == 0;
    int64_t o[4] = {c->x[0], 0, 0, c->x[3]}, pt, pl;
    dim(c->x[1], c->f[0], c->s[0], c->r[0], same, &o[1], &pt);
    dim(c->x[2], c->f[1], c->s[1], c->r[1], same, &o[2], &pl);
    char lab[128];
    snprintf(lab, sizeof lab,
             "Dilation2D x [%lld,%lld,%lld,%lld] f %lldx%lld s %lldx%lld r %lldx%lld %s",
             (long long)c->x[0], (long long)c->x[1], (long long)c->x[2], (long long)c->x[3],
             (long long)c->f[0], (long long)c->f[1], (long long)c->s[0], (long long)c->s[1],
             (long long)c->r[0], (long long)c->r[1], c->padding);
    rill_tensor *x = oc_random(c->x, 4, -1, 1), *f = oc_random(c->f, 3, -1, 1);
    const double *xv = rill_tensor_data(x), *fv = rill_tensor_data(f);
    int64_t no = oc_numel(o, 4);
    double *ref = calloc((size_t)no, sizeof *ref);
    for (int64_t n = 0, q = 0; n < o[0]; n++)
        for (int64_t y = 0; y < o[1]; y++)
            for (int64_t xx = 0; xx < o[2]; xx++)
                for (int64_t ch = 0; ch < o[3]; ch++, q++) {
                    double best = -DBL_MAX;
                    for (int64_t i = 0; i < c->f[0]; i++)
                        for (int64_t j = 0; j < c->f[1]; j++) {
                            int64_t iy = y * c->s[0] + i * c->r[0] - pt,
                                    ix = xx * c->s[1] + j * c->r[1] - pl;
                            if (iy < 0 || iy >= c->x[1] || ix < 0 || ix >= c->x[2]) continue;
                            double v = xv[((n * c->x[1] + iy) * c->x[2] + ix) * c->x[3] + ch] +
                                       fv[(i * c->f[1] + j) * c->f[2] + ch];
                            if (v > best) best = v;
                        }
                    ref[q] = best;
                }
    rill_graph *g = rill_graph_new();
    rill_output in[] = {rill_const(g, x, "x"), rill_const(g, f, "f")};
    rill_output y = dl_fwd(g, in, (void *)c);
    rill_shape ys = rill_output_shape(y);
    CHECK(ys.rank == 4 && ys.dims[1] == o[1] && ys.dims[2] == o[2] && ys.dims[3] == o[3]);
    rill_tensor *v = oc_eval(g, y);
    oc_check_tensor(lab, v, RILL_DOUBLE, o, 4, ref);
    rill_tensor_free(v);
    rill_graph_free(g);

    rill_tensor *xs[] = {x, f};
    oc_grad_check(lab, 2, xs, dl_fwd, (void *)c, (oc_grad_opts){0});
    free(ref);
    rill_tensor_free(x);
    rill_tensor_free(f);
}

static void test_errors(void)
{
    dl_case c = {{1, 4, 4, 3}, {2, 2, 2}, {1, 1}, {1, 1}, "SAME"};
    rill_graph *g = rill_graph_new();
    rill_output x =
        rill_placeholder(g, RILL_FLOAT, rill_shape_make(4, (int64_t[]){1, 4, 4, 3}), "x");
    rill_output f = rill_placeholder(g, RILL_FLOAT, rill_shape_make(3, (int64_t[]){2, 2, 2}), "f");
    CHECK(dl_fwd(g, (rill_output[]){x, f}, &c).node == NULL);
    oc_check_build_error("depth", g, RILL_INVALID_ARGUMENT, "Dimensions must be equal");
    rill_graph_free(g);

    /* 2 - 4 + 1 < 0 (TF's Dilation2D lets 2 - 3 + 1 = 0 through: an empty output) */
    c = (dl_case){{1, 2, 2, 1}, {4, 4, 1}, {1, 1}, {1, 1}, "VALID"};
    g = rill_graph_new();
    x = rill_placeholder(g, RILL_FLOAT, rill_shape_make(4, (int64_t[]){1, 2, 2, 1}), "x");
    f = rill_placeholder(g, RILL_FLOAT, rill_shape_make(3, (int64_t[]){4, 4, 1}), "f");
    CHECK(dl_fwd(g, (rill_output[]){x, f}, &c).node == NULL);
    oc_check_build_error("negative", g, RILL_INVALID_ARGUMENT,
                         "Computed output size would be negative");
    rill_graph_free(g);

    mp_case m = {{1, 4, 4, 1}, {2, 2}, {2, 2}, "FULL", false, RILL_INT64};
    g = rill_graph_new();
    x = rill_placeholder(g, RILL_FLOAT, rill_shape_make(4, (int64_t[]){1, 4, 4, 1}), "x");
    CHECK(mp_op(g, "MaxPoolWithArgmax", &x, 1, &m) == NULL);
    oc_check_build_error("padding", g, RILL_INVALID_ARGUMENT, "Value for attr 'padding'");
    rill_graph_free(g);

    m = (mp_case){{1, 4, 4, 1}, {2, 2}, {2, 2}, "SAME", false, RILL_FLOAT};
    g = rill_graph_new();
    x = rill_placeholder(g, RILL_FLOAT, rill_shape_make(4, (int64_t[]){1, 4, 4, 1}), "x");
    CHECK(mp_op(g, "MaxPoolWithArgmax", &x, 1, &m) == NULL);
    oc_check_build_error("Targmax", g, RILL_INVALID_ARGUMENT, "Value for attr 'Targmax'");
    rill_graph_free(g);
}

int main(void)
{
    static const mp_case mps[] = {
        {{2, 5, 6, 3}, {2, 2}, {2, 2}, "SAME", false, RILL_INT64},
        {{1, 6, 5, 2}, {3, 2}, {1, 2}, "VALID", true, RILL_INT64},
        {{2, 4, 4, 2}, {3, 3}, {2, 1}, "SAME", true, RILL_INT32},
    };
    for (size_t i = 0; i < sizeof mps / sizeof mps[0]; i++) test_max_pool(&mps[i]);
    static const dl_case dls[] = {
        {{2, 5, 6, 3}, {3, 3, 3}, {1, 1}, {1, 1}, "SAME"},
        {{1, 7, 6, 2}, {2, 3, 2}, {2, 1}, {1, 2}, "VALID"},
        {{1, 6, 7, 1}, {2, 2, 1}, {1, 2}, {2, 1}, "SAME"},
    };
    for (size_t i = 0; i < sizeof dls / sizeof dls[0]; i++) test_dilation(&dls[i]);
    test_errors();
    TEST_MAIN_END();
}
