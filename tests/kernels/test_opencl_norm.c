/* test_opencl_norm.c - the OpenCL kernels of LRN, LRNGrad, FusedBatchNormV3,
 * FusedBatchNormGradV3 (cl_norm.c) and of DepthwiseConv2dNative and its backprops
 * (cl_depthwise.c) against the CPU's: float, double and half, training and inference, empty
 * statistics, strides, paddings, dilations and depth multipliers; and a run-time error each. */
#include "backend_ops.h"

static rill_node *make(rill_graph *g, const char *op, rill_tensor *const *in, int n,
                       const rill__attr *a, int na)
{
    rill_output x[6];
    for (int i = 0; i < n; i++) x[i] = bo_placeholder(g, in[i]);
    return rill__node_create(g, op, NULL, x, n, a, na);
}

static rill_tensor *sizes(const int64_t *d)
{
    double v[4] = {(double)d[0], (double)d[1], (double)d[2], (double)d[3]};
    return bo_tensor(RILL_INT32, (int64_t[]){4}, 1, v);
}

static void test_lrn(rill_dtype t)
{
    const int64_t d[] = {2, 3, 2, 9};
    rill__attr a[] = {RILL__A_INT("depth_radius", 2), RILL__A_FLOAT("bias", 1.5),
                      RILL__A_FLOAT("alpha", 0.3), RILL__A_FLOAT("beta", 0.75)};
    rill_tensor *in[3] = {bo_random(t, d, 4, -1, 1), bo_random(t, d, 4, -2, 2), NULL};
    rill_graph *g = rill_graph_new();
    bo_check(make(g, "LRN", in + 1, 1, a, 4), in + 1, -1);
    /* LRNGrad(dy, x, y) with y the CPU's LRN of x */
    rill_graph *g2 = rill_graph_new();
    bo_result r;
    rill_node *lrn = make(g2, "LRN", in + 1, 1, a, 4);
    if (bo_run(lrn, "CPU", rill__cpu_device(), in + 1, &r) && r.code == RILL_OK) {
        in[2] = rill_tensor_copy(r.out[0]);
        bo_check(make(g, "LRNGrad", in, 3, a, 4), in, -1);
    }
    bo_result_clear(&r);
    bo_free_all(in, 3);
    rill_graph_free(g);
    rill_graph_free(g2);
}

static void test_bn(rill_dtype t)
{
    const int64_t d[] = {2, 3, 4, 5}, c[] = {5};
    rill_dtype u = t == RILL_DOUBLE ? RILL_DOUBLE : RILL_FLOAT;
    for (int mode = 0; mode < 4; mode++) {
        bool training = mode != 2, empty = mode == 3;
        rill__attr a[] = {RILL__A_BOOL("is_training", training), RILL__A_FLOAT("epsilon", 1e-3),
                          RILL__A_FLOAT("exponential_avg_factor", mode == 1 ? 0.3 : 1.0),
                          RILL__A_TYPE("T", t)};
        rill_tensor *in[6] = {
            bo_random(t, d, 4, -2, 2),
            bo_random(u, c, 1, 0.5, 1.5),
            bo_random(u, c, 1, -1, 1),
            empty ? bo_tensor(u, (int64_t[]){0}, 1, NULL) : bo_random(u, c, 1, -0.5, 0.5),
            empty ? bo_tensor(u, (int64_t[]){0}, 1, NULL) : bo_random(u, c, 1, 0.5, 2),
            NULL};
        rill_graph *g = rill_graph_new();
        if (!bo_check(make(g, "FusedBatchNormV3", in, 5, a, 4), in, -1))
            fprintf(stderr, "  case: FusedBatchNormV3 mode %d\n", mode);
        /* the gradient: dy, x, scale, mean, variance (as reserve spaces), reserve_space_3 */
        rill__attr ga[] = {RILL__A_BOOL("is_training", training), RILL__A_FLOAT("epsilon", 1e-3),
                           RILL__A_TYPE("T", t)};
        rill_tensor *gin[6] = {bo_random(t, d, 4, -1, 1),  rill_tensor_copy(in[0]),
                               rill_tensor_copy(in[1]),    bo_random(u, c, 1, -0.5, 0.5),
                               bo_random(u, c, 1, 0.5, 2), bo_tensor(u, (int64_t[]){0}, 1, NULL)};
        if (!bo_check(make(g, "FusedBatchNormGradV3", gin, 6, ga, 3), gin, -1))
            fprintf(stderr, "  case: FusedBatchNormGradV3 mode %d\n", mode);
        bo_free_all(in, 5);
        bo_free_all(gin, 6);
        rill_graph_free(g);
    }
}

typedef struct dw_case {
    int64_t x[4], f[4];
    int64_t stride, dil;
    const char *padding;
} dw_case;

static void test_depthwise(rill_dtype t, const dw_case *c)
{
    int64_t st[4] = {1, c->stride, c->stride, 1}, dl[4] = {1, c->dil, c->dil, 1};
    rill__attr a[] = {RILL__A_INTS("strides", 4, st), RILL__A_INTS("dilations", 4, dl),
                      RILL__A_STRING("padding", c->padding), RILL__A_TYPE("T", t)};
    rill_tensor *in[2] = {bo_random(t, c->x, 4, -1, 1), bo_random(t, c->f, 4, -1, 1)};
    rill_graph *g = rill_graph_new();
    rill_node *fwd = make(g, "DepthwiseConv2dNative", in, 2, a, 4);
    bo_check(fwd, in, -1);
    rill_shape os = fwd ? fwd->out_shapes[0] : rill_shape_scalar();
    rill_tensor *dy = bo_random(t, os.dims, os.rank, -1, 1);
    rill_tensor *bi[3] = {sizes(c->x), rill_tensor_copy(in[1]), dy};
    bo_check(make(g, "DepthwiseConv2dNativeBackpropInput", bi, 3, a, 4), bi, -1);
    rill_tensor *bf[3] = {rill_tensor_copy(in[0]), sizes(c->f), rill_tensor_copy(dy)};
    bo_check(make(g, "DepthwiseConv2dNativeBackpropFilter", bf, 3, a, 4), bf, -1);
    /* an out_backprop of the wrong shape (through a placeholder of unknown shape) */
    rill_tensor *bad[3] = {sizes(c->x), rill_tensor_copy(in[1]), bo_random(t, c->x, 4, -1, 1)};
    rill_output xs[3] = {bo_placeholder(g, bad[0]), bo_placeholder(g, bad[1]),
                         bo_placeholder_any(g, t)};
    if (c->x[3] * c->f[3] != c->x[3] || c->stride != 1 || strcmp(c->padding, "SAME") != 0)
        bo_check_error(
            rill__node_create(g, "DepthwiseConv2dNativeBackpropInput", NULL, xs, 3, a, 4), bad,
            RILL_INVALID_ARGUMENT, "out_backprop has shape");
    bo_free_all(in, 2);
    bo_free_all(bi, 3);
    bo_free_all(bf, 3);
    bo_free_all(bad, 3);
    rill_graph_free(g);
}

int main(void)
{
    static const rill_dtype types[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};
    static const dw_case cases[] = {
        {{2, 5, 5, 3}, {3, 3, 3, 2}, 1, 1, "SAME"},
        {{1, 6, 7, 2}, {3, 2, 2, 1}, 2, 1, "SAME"},
        {{2, 6, 6, 2}, {2, 3, 2, 3}, 2, 1, "VALID"},
        {{1, 7, 7, 2}, {3, 3, 2, 1}, 1, 2, "SAME"},
    };
    for (int ti = 0; ti < 3; ti++) {
        test_lrn(types[ti]);
        test_bn(types[ti]);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
            test_depthwise(types[ti], &cases[k]);
    }
    bo_skip_without_device();
    TEST_MAIN_END();
}
