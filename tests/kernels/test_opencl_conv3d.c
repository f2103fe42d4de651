/* test_opencl_conv3d.c - the 3-D windowed kernels on OpenCL against the CPU kernels.
 *
 * Every op of src/kernels/opencl/cl_conv3d.c (Conv3D, Conv3DBackpropInputV2,
 * Conv3DBackpropFilterV2, MaxPool3D, AvgPool3D, MaxPool3DGrad, AvgPool3DGrad) runs in float and
 * double through the backend harness (backend_ops.h): the same node and host inputs on the CPU
 * and on the OpenCL device, outputs compared by NMSE and checked to live in device memory; the
 * int32 size inputs stay in host memory. Shapes cover strides, SAME and VALID, dilations,
 * batches above one, 1x1x1 windows and odd sizes; MaxPool3DGrad also with ties (every tie gets
 * the gradient on both). The error case checks that both backends fail alike with the shared
 * run-time checks (window3d.c). Without an OpenCL device only the registrations are checked and
 * the test reports itself skipped (exit 77). */
#include "backend_ops.h"

#include "graph/graph_internal.h"

static const rill_dtype float_types[] = {RILL_FLOAT, RILL_DOUBLE};

static double tight(rill_dtype t)
{
    return t == RILL_DOUBLE ? 1e-24 : 1e-11;
}

typedef struct c3_case {
    int64_t n, in[3], c, k[3], f, s[3], d[3];
    const char *pad;
} c3_case;

static const c3_case conv_cases[] = {
    {1, {4, 5, 5}, 1, {2, 3, 3}, 1, {1, 1, 1}, {1, 1, 1}, "VALID"},
    {2, {5, 6, 4}, 3, {3, 3, 2}, 4, {2, 2, 1}, {1, 1, 1}, "SAME"},
    {2, {6, 7, 5}, 2, {2, 3, 2}, 3, {1, 1, 1}, {2, 2, 1}, "SAME"},
    {3, {3, 4, 5}, 3, {1, 1, 1}, 5, {1, 1, 1}, {1, 1, 1}, "VALID"},
    {1, {7, 5, 6}, 2, {3, 2, 2}, 2, {2, 3, 2}, {1, 1, 1}, "VALID"},
};

static const c3_case pool_cases[] = {
    {1, {4, 4, 4}, 1, {2, 2, 2}, 0, {2, 2, 2}, {1, 1, 1}, "VALID"},
    {2, {5, 4, 7}, 3, {3, 2, 3}, 0, {2, 1, 2}, {1, 1, 1}, "SAME"},
    {1, {3, 6, 5}, 2, {1, 3, 2}, 0, {1, 1, 1}, {1, 1, 1}, "SAME"},
    {3, {5, 5, 5}, 2, {4, 4, 4}, 0, {3, 3, 3}, {1, 1, 1}, "SAME"},
};

static rill_tensor *sizes(const int64_t *d)
{
    int64_t five = 5;
    rill_tensor *t = rill_tensor_new(RILL_INT32, &five, 1);
    for (int i = 0; i < 5; i++) ((int32_t *)rill_tensor_data(t))[i] = (int32_t)d[i];
    return t;
}

static rill_output int_placeholder(rill_graph *g)
{
    return rill_placeholder(g, RILL_INT32, rill_shape_vector(5), NULL);
}

static rill_node *op3d(rill_graph *g, const char *op, const rill_output *in, int nin,
                       const c3_case *k, rill_dtype t)
{
    bool pool = strstr(op, "Pool") != NULL;
    int64_t st[5] = {1, k->s[0], k->s[1], k->s[2], 1};
    int64_t ex[5] = {1, pool ? k->k[0] : k->d[0], pool ? k->k[1] : k->d[1],
                     pool ? k->k[2] : k->d[2], 1};
    rill__attr a[4] = {RILL__A_INTS("strides", 5, st), RILL__A_STRING("padding", k->pad),
                       RILL__A_TYPE("T", t), RILL__A_INTS(pool ? "ksize" : "dilations", 5, ex)};
    return rill__node_create(g, op, NULL, in, nin, a, 4);
}

static void test_conv(void)
{
    for (size_t ci = 0; ci < sizeof conv_cases / sizeof *conv_cases; ci++)
        for (int ti = 0; ti < 2; ti++) {
            const c3_case *k = &conv_cases[ci];
            rill_dtype t = float_types[ti];
            int64_t xd[5] = {k->n, k->in[0], k->in[1], k->in[2], k->c},
                    wd[5] = {k->k[0], k->k[1], k->k[2], k->c, k->f};
            rill_graph *g = rill_graph_new();
            rill_tensor *in[2] = {bo_random(t, xd, 5, -1, 1), bo_random(t, wd, 5, -1, 1)};
            rill_node *y =
                op3d(g, "Conv3D",
                     (rill_output[]){bo_placeholder(g, in[0]), bo_placeholder(g, in[1])}, 2, k, t);
            if (!bo_check(y, in, tight(t))) fprintf(stderr, "  case: Conv3D #%zu\n", ci);
            rill_shape ys = rill_output_shape((rill_output){y, 0});
            rill_tensor *dy = bo_random(t, ys.dims, 5, -1, 1);
            rill_tensor *bi[3] = {sizes(xd), in[1], dy};
            rill_node *b = op3d(g, "Conv3DBackpropInputV2",
                                (rill_output[]){int_placeholder(g), bo_placeholder(g, in[1]),
                                                bo_placeholder(g, dy)},
                                3, k, t);
            if (!bo_check(b, bi, tight(t)))
                fprintf(stderr, "  case: Conv3DBackpropInputV2 #%zu\n", ci);
            rill_tensor *bf[3] = {in[0], sizes(wd), dy};
            rill_node *f = op3d(g, "Conv3DBackpropFilterV2",
                                (rill_output[]){bo_placeholder(g, in[0]), int_placeholder(g),
                                                bo_placeholder(g, dy)},
                                3, k, t);
            if (!bo_check(f, bf, tight(t)))
                fprintf(stderr, "  case: Conv3DBackpropFilterV2 #%zu\n", ci);
            rill_tensor_free(bi[0]);
            rill_tensor_free(bf[1]);
            rill_tensor_free(dy);
            bo_free_all(in, 2);
            rill_graph_free(g);
        }
}

static void test_pools(void)
{
    for (size_t ci = 0; ci < sizeof pool_cases / sizeof *pool_cases; ci++)
        for (int ti = 0; ti < 4; ti++) { /* float, double, and both with ties */
            const c3_case *k = &pool_cases[ci];
            rill_dtype t = float_types[ti & 1];
            int64_t xd[5] = {k->n, k->in[0], k->in[1], k->in[2], k->c};
            rill_graph *g = rill_graph_new();
            rill_tensor *in[1] = {bo_random(t, xd, 5, -1, 1)};
            if (ti >= 2) /* -1, 0 and 1 only */
                for (int64_t i = 0; i < rill_tensor_num_elements(in[0]); i++) {
                    double v = round(rill_tensor_get_double(in[0], i) * 1.5);
                    if (t == RILL_FLOAT)
                        ((float *)rill_tensor_data(in[0]))[i] = (float)v;
                    else
                        ((double *)rill_tensor_data(in[0]))[i] = v;
                }
            rill_output x = bo_placeholder(g, in[0]);
            rill_node *mp = op3d(g, "MaxPool3D", &x, 1, k, t);
            rill_node *ap = op3d(g, "AvgPool3D", &x, 1, k, t);
            if (!bo_check(mp, in, tight(t))) fprintf(stderr, "  case: MaxPool3D #%zu\n", ci);
            if (!bo_check(ap, in, tight(t))) fprintf(stderr, "  case: AvgPool3D #%zu\n", ci);
            rill_shape ys = rill_output_shape((rill_output){mp, 0});
            rill_tensor *dy = bo_random(t, ys.dims, 5, -1, 1);
            bo_result r;
            if (CHECK(bo_run(mp, "CPU", rill__cpu_device(), in, &r) && r.code == RILL_OK)) {
                rill_tensor *mi[3] = {in[0], r.out[0], dy};
                rill_node *mg =
                    op3d(g, "MaxPool3DGrad",
                         (rill_output[]){x, bo_placeholder(g, r.out[0]), bo_placeholder(g, dy)}, 3,
                         k, t);
                if (!bo_check(mg, mi, tight(t)))
                    fprintf(stderr, "  case: MaxPool3DGrad #%zu%s\n", ci, ti >= 2 ? " ties" : "");
            }
            bo_result_clear(&r);
            rill_tensor *ai[2] = {sizes(xd), dy};
            rill_node *ag =
                op3d(g, "AvgPool3DGrad", (rill_output[]){int_placeholder(g), bo_placeholder(g, dy)},
                     2, k, t);
            if (!bo_check(ag, ai, tight(t))) fprintf(stderr, "  case: AvgPool3DGrad #%zu\n", ci);
            rill_tensor_free(ai[0]);
            rill_tensor_free(dy);
            bo_free_all(in, 1);
            rill_graph_free(g);
        }
}

static void test_errors(void)
{
    const c3_case k = {1, {4, 4, 4}, 2, {2, 2, 2}, 3, {1, 1, 1}, {1, 1, 1}, "VALID"};
    int64_t xd[5] = {1, 4, 4, 4, 2}, wd[5] = {2, 2, 2, 3, 3};
    rill_graph *g = rill_graph_new();
    rill_tensor *in[2] = {bo_random(RILL_FLOAT, xd, 5, -1, 1), bo_random(RILL_FLOAT, wd, 5, -1, 1)};
    rill_node *y =
        op3d(g, "Conv3D",
             (rill_output[]){bo_placeholder_any(g, RILL_FLOAT), bo_placeholder_any(g, RILL_FLOAT)},
             2, &k, RILL_FLOAT);
    bo_check_error(y, in, RILL_INVALID_ARGUMENT,
                   "input and filter must have the same depth: 2 vs 3");
    bo_free_all(in, 2);
    rill_graph_free(g);
}

static void test_registrations(void)
{
#ifndef RILL_HAVE_OPENCL
    return; /* no OpenCL backend built: nothing registered (main skips the test) */
#endif
    static const char *const ops[] = {
        "Conv3D",    "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", "MaxPool3D",
        "AvgPool3D", "MaxPool3DGrad",         "AvgPool3DGrad"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        for (int t = 0; t < 2; t++)
            if (!CHECK(rill__kernel_lookup(ops[i], "OPENCL", float_types[t]) != NULL))
                fprintf(stderr, "  no OPENCL kernel for %s %s\n", ops[i],
                        rill_dtype_name(float_types[t]));
}

int main(void)
{
    if (!getenv("POCL_CACHE_DIR")) setenv("POCL_CACHE_DIR", "/tmp/rill-pocl-cache", 0);
    bo_seed(20261202);
    test_registrations();
    bo_skip_without_device(); /* exits 77 without one */
    test_conv();
    test_pools();
    test_errors();
    TEST_MAIN_END();
}
