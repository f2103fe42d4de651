/* test_depthwise_ops.c - DepthwiseConv2dNative and its backprops (ops_depthwise.c): values
 * against a direct double-precision reference over strides, paddings, dilations and depth
 * multipliers, gradients of all three ops against finite differences, and TF's build errors. */
#include "op_check.h"

#include <string.h>

typedef struct dw_case {
    int64_t x[4], f[4];
    int stride, dil;
    const char *padding;
    int stride_w; /* the column stride when it differs from the row stride (0: the same) */
} dw_case;

static int sw_of(const dw_case *c)
{
    return c->stride_w ? c->stride_w : c->stride;
}

static void attrs(rill_op_builder *b, const dw_case *c, rill_dtype t)
{
    int64_t st[4] = {1, c->stride, sw_of(c), 1}, d[4] = {1, c->dil, c->dil, 1};
    rill_op_builder_set_ints(b, "strides", st, 4);
    rill_op_builder_set_ints(b, "dilations", d, 4);
    rill_op_builder_set_string(b, "padding", c->padding);
    rill_op_builder_set_string(b, "data_format", "NHWC");
    rill_op_builder_set_type(b, "T", t);
}

static rill_output op(rill_graph *g, const char *type, const rill_output *in, int n,
                      const dw_case *c)
{
    rill_op_builder *b = rill_op_builder_new(g, type, NULL);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, in[i]);
    attrs(b, c, rill_output_dtype(in[n - 1]));
    return rill_node_output(rill_op_builder_finish(b), 0);
}

static rill_output build_fwd(rill_graph *g, const rill_output *xs, void *ctx)
{
    return op(g, "DepthwiseConv2dNative", xs, 2, ctx);
}

/* The output dims of case c (TF's SAME / VALID). */
static void out_dims(const dw_case *c, int64_t *o, int64_t *pt, int64_t *pl)
{
    int64_t eh = (c->f[0] - 1) * c->dil + 1, ew = (c->f[1] - 1) * c->dil + 1;
    bool same = strcmp(c->padding, "SAME") == 0;
    o[0] = c->x[0];
    o[1] = same ? (c->x[1] + c->stride - 1) / c->stride : (c->x[1] - eh + c->stride) / c->stride;
    o[2] = same ? (c->x[2] + sw_of(c) - 1) / sw_of(c) : (c->x[2] - ew + sw_of(c)) / sw_of(c);
    o[3] = c->x[3] * c->f[3];
    int64_t nh = (o[1] - 1) * c->stride + eh - c->x[1], nw = (o[2] - 1) * sw_of(c) + ew - c->x[2];
    *pt = same && nh > 0 ? nh / 2 : 0;
    *pl = same && nw > 0 ? nw / 2 : 0;
}

static int64_t sizes_x[4], sizes_f[4];
static const dw_case *cur;

static rill_output build_bp_input(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_tensor *s = rill_tensor_new(RILL_INT32, (int64_t[]){4}, 1);
    for (int i = 0; i < 4; i++) ((int32_t *)rill_tensor_data(s))[i] = (int32_t)sizes_x[i];
    rill_output in[] = {rill_const(g, s, "sizes"), xs[0], xs[1]};
    rill_tensor_free(s);
    return op(g, "DepthwiseConv2dNativeBackpropInput", in, 3, cur);
}

static rill_output build_bp_filter(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_tensor *s = rill_tensor_new(RILL_INT32, (int64_t[]){4}, 1);
    for (int i = 0; i < 4; i++) ((int32_t *)rill_tensor_data(s))[i] = (int32_t)sizes_f[i];
    rill_output in[] = {xs[0], rill_const(g, s, "sizes"), xs[1]};
    rill_tensor_free(s);
    return op(g, "DepthwiseConv2dNativeBackpropFilter", in, 3, cur);
}

static void test_case(const dw_case *c)
{
    int64_t o[4], pt, pl;
    out_dims(c, o, &pt, &pl);
    char lab[128];
    snprintf(lab, sizeof lab, "x [%lld,%lld,%lld,%lld] f [%lld,%lld,%lld,%lld] s%d d%d %s",
             (long long)c->x[0], (long long)c->x[1], (long long)c->x[2], (long long)c->x[3],
             (long long)c->f[0], (long long)c->f[1], (long long)c->f[2], (long long)c->f[3],
             c->stride, c->dil, c->padding);
    rill_tensor *x = oc_random(c->x, 4, -1, 1), *f = oc_random(c->f, 4, -1, 1);
    const double *xv = rill_tensor_data(x), *fv = rill_tensor_data(f);
    int64_t no = oc_numel(o, 4);
    double *ref = calloc((size_t)no, sizeof *ref);
    for (int64_t n = 0; n < o[0]; n++)
        for (int64_t y = 0; y < o[1]; y++)
            for (int64_t xx = 0; xx < o[2]; xx++)
                for (int64_t ch = 0; ch < c->x[3]; ch++)
                    for (int64_t m = 0; m < c->f[3]; m++) {
                        double s = 0;
                        for (int64_t i = 0; i < c->f[0]; i++)
                            for (int64_t k = 0; k < c->f[1]; k++) {
                                int64_t iy = y * c->stride - pt + i * c->dil,
                                        ix = xx * sw_of(c) - pl + k * c->dil;
                                if (iy < 0 || iy >= c->x[1] || ix < 0 || ix >= c->x[2]) continue;
                                s += xv[((n * c->x[1] + iy) * c->x[2] + ix) * c->x[3] + ch] *
                                     fv[((i * c->f[1] + k) * c->f[2] + ch) * c->f[3] + m];
                            }
                        ref[((n * o[1] + y) * o[2] + xx) * o[3] + ch * c->f[3] + m] = s;
                    }
    rill_graph *g = rill_graph_new();
    rill_output in[] = {rill_const(g, x, "x"), rill_const(g, f, "f")};
    rill_output y = build_fwd(g, in, (void *)c);
    rill_shape ys = rill_output_shape(y);
    CHECK(ys.rank == 4 && ys.dims[1] == o[1] && ys.dims[2] == o[2] && ys.dims[3] == o[3]);
    rill_tensor *v = oc_eval(g, y);
    oc_check_tensor(lab, v, RILL_DOUBLE, o, 4, ref);
    rill_tensor_free(v);
    rill_graph_free(g);
    /* float */
    rill_tensor *xf = rill_tensor_new(RILL_FLOAT, c->x, 4),
                *ff = rill_tensor_new(RILL_FLOAT, c->f, 4);
    for (int64_t i = 0; i < rill_tensor_num_elements(x); i++)
        ((float *)rill_tensor_data(xf))[i] = (float)xv[i];
    for (int64_t i = 0; i < rill_tensor_num_elements(f); i++)
        ((float *)rill_tensor_data(ff))[i] = (float)fv[i];
    g = rill_graph_new();
    rill_output inf[] = {rill_const(g, xf, "x"), rill_const(g, ff, "f")};
    v = oc_eval(g, build_fwd(g, inf, (void *)c));
    for (int64_t i = 0; v && i < no; i++)
        if (!CHECK(fabs(rill_tensor_get_double(v, i) - ref[i]) < 1e-5)) break;
    rill_tensor_free(v);
    rill_graph_free(g);
    rill_tensor_free(xf);
    rill_tensor_free(ff);

    rill_tensor *xs[] = {x, f};
    oc_grad_check(lab, 2, xs, build_fwd, (void *)c, (oc_grad_opts){0});
    cur = c;
    memcpy(sizes_x, c->x, sizeof sizes_x);
    memcpy(sizes_f, c->f, sizeof sizes_f);
    rill_tensor *dy = oc_random(o, 4, -1, 1);
    rill_tensor *bi[] = {f, dy}, *bf[] = {x, dy};
    snprintf(lab + strlen(lab), sizeof lab - strlen(lab), " backprops");
    oc_grad_check(lab, 2, bi, build_bp_input, NULL, (oc_grad_opts){0});
    oc_grad_check(lab, 2, bf, build_bp_filter, NULL, (oc_grad_opts){0});
    rill_tensor_free(dy);
    free(ref);
    rill_tensor_free(x);
    rill_tensor_free(f);
}

static void test_errors(void)
{
    dw_case c = {{1, 4, 4, 3}, {2, 2, 3, 1}, 1, 1, "SAME", 0};
    rill_graph *g = rill_graph_new();
    rill_output x =
        rill_placeholder(g, RILL_FLOAT, rill_shape_make(4, (int64_t[]){1, 4, 4, 3}), "x");
    rill_output f =
        rill_placeholder(g, RILL_FLOAT, rill_shape_make(4, (int64_t[]){2, 2, 2, 1}), "f");
    CHECK(build_fwd(g, (rill_output[]){x, f}, &c).node == NULL);
    oc_check_build_error("depth", g, RILL_INVALID_ARGUMENT, "Dimensions must be equal");
    rill_graph_free(g);
    g = rill_graph_new();
    x = rill_placeholder(g, RILL_FLOAT, rill_shape_make(4, (int64_t[]){1, 4, 4, 3}), "x");
    f = rill_placeholder(g, RILL_FLOAT, rill_shape_make(4, (int64_t[]){2, 2, 3, 1}), "f");
    /* unequal row and column strides build (TF 2.15 accepts them): [1, 2, 4, 3] */
    rill_op_builder *b = rill_op_builder_new(g, "DepthwiseConv2dNative", NULL);
    rill_op_builder_add_input(b, x);
    rill_op_builder_add_input(b, f);
    rill_op_builder_set_ints(b, "strides", (int64_t[]){1, 2, 1, 1}, 4);
    rill_op_builder_set_string(b, "padding", "SAME");
    rill_node *nd = rill_op_builder_finish(b);
    CHECK(nd != NULL);
    if (nd) {
        rill_shape os = rill_output_shape(rill_node_output(nd, 0));
        CHECK(os.rank == 4 && os.dims[1] == 2 && os.dims[2] == 4 && os.dims[3] == 3);
    }
    rill_graph_free(g);
    c.padding = "FULL";
    g = rill_graph_new();
    x = rill_placeholder(g, RILL_FLOAT, rill_shape_make(4, (int64_t[]){1, 4, 4, 3}), "x");
    f = rill_placeholder(g, RILL_FLOAT, rill_shape_make(4, (int64_t[]){2, 2, 3, 1}), "f");
    CHECK(build_fwd(g, (rill_output[]){x, f}, &c).node == NULL);
    oc_check_build_error("padding", g, RILL_INVALID_ARGUMENT, "Value for attr 'padding'");
    rill_graph_free(g);
}

int main(void)
{
    static const dw_case cases[] = {
        {{2, 5, 5, 3}, {3, 3, 3, 2}, 1, 1, "SAME", 0},
        {{1, 6, 7, 2}, {3, 2, 2, 1}, 2, 1, "SAME", 0},
        {{2, 6, 6, 2}, {2, 3, 2, 3}, 2, 1, "VALID", 0},
        {{1, 7, 7, 2}, {3, 3, 2, 1}, 1, 2, "SAME", 0},
        {{1, 7, 6, 1}, {2, 2, 1, 2}, 1, 2, "VALID", 0},
        {{1, 6, 7, 2}, {3, 2, 2, 2}, 1, 1, "SAME", 2},
        {{2, 7, 6, 2}, {2, 3, 2, 1}, 2, 1, "VALID", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) test_case(&cases[i]);
    test_errors();
    TEST_MAIN_END();
}
