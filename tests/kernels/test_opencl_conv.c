/* test_opencl_conv.c - the windowed kernels on OpenCL against the CPU kernels.
 *
 * Every op of src/kernels/opencl/cl_conv.c (Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter,
 * MaxPool, AvgPool, MaxPoolGrad, AvgPoolGrad) runs in float and double through the backend
 * harness (backend_ops.h): the same node and host inputs on the CPU and on the OpenCL device,
 * outputs compared by NMSE and checked to live in device memory; the int32 size inputs stay in
 * host memory. Shapes cover stride 2, SAME and VALID, dilation 2, batches above one, 1x1 windows
 * and odd sizes. The error cases check that both backends fail alike with the shared run-time
 * checks. Without an OpenCL device only the registrations are checked and the test reports
 * itself skipped (exit 77). */
#include "backend_ops.h"

static const rill_dtype float_types[] = {RILL_FLOAT, RILL_DOUBLE};

/* Both backends sum the same products in different orders. */
static double tight(rill_dtype t)
{
    return t == RILL_DOUBLE ? 1e-24 : 1e-11;
}

typedef struct cv_case {
    int64_t n, h, w, c, kh, kw, f;
    int sh, sw, dh, dw;
    const char *pad;
} cv_case;

static const cv_case conv_cases[] = {
    {1, 5, 5, 1, 3, 3, 1, 1, 1, 1, 1, "VALID"}, {2, 7, 6, 3, 3, 3, 4, 2, 2, 1, 1, "SAME"},
    {2, 9, 8, 2, 3, 2, 3, 1, 1, 2, 2, "SAME"},  {3, 4, 5, 3, 1, 1, 5, 1, 1, 1, 1, "VALID"},
    {1, 7, 7, 2, 2, 2, 3, 2, 3, 1, 1, "VALID"}, {2, 6, 5, 2, 1, 1, 2, 2, 2, 1, 1, "SAME"},
    {1, 5, 4, 2, 4, 3, 2, 3, 2, 1, 2, "SAME"},  {2, 13, 11, 5, 3, 3, 7, 2, 1, 1, 1, "SAME"},
};

/* An int32 [4] host tensor of d. */
static rill_tensor *sizes(const int64_t *d)
{
    int64_t four = 4;
    rill_tensor *t = rill_tensor_new(RILL_INT32, &four, 1);
    for (int i = 0; i < 4; i++) ((int32_t *)rill_tensor_data(t))[i] = (int32_t)d[i];
    return t;
}

static rill_output int_placeholder(rill_graph *g)
{
    return rill_placeholder(g, RILL_INT32, rill_shape_vector(4), NULL);
}

static void test_conv(void)
{
    for (size_t ci = 0; ci < sizeof conv_cases / sizeof *conv_cases; ci++)
        for (int ti = 0; ti < 2; ti++) {
            const cv_case *k = &conv_cases[ci];
            rill_dtype t = float_types[ti];
            int st[4] = {1, k->sh, k->sw, 1}, dl[4] = {1, k->dh, k->dw, 1};
            int64_t xd[4] = {k->n, k->h, k->w, k->c}, wd[4] = {k->kh, k->kw, k->c, k->f};
            rill_graph *g = rill_graph_new();
            rill_tensor *in[3] = {bo_random(t, xd, 4, -1, 1), bo_random(t, wd, 4, -1, 1), NULL};
            rill_output y = rill_conv2d(g, bo_placeholder(g, in[0]), bo_placeholder(g, in[1]), st,
                                        k->pad, dl, NULL);
            if (!bo_check(y.node, in, tight(t))) fprintf(stderr, "  case: Conv2D #%zu\n", ci);
            rill_shape ys = rill_output_shape(y);
            rill_tensor *dy = bo_random(t, ys.dims, 4, -1, 1);
            rill_tensor *bi[3] = {sizes(xd), in[1], dy};
            rill_output b =
                rill_conv2d_backprop_input(g, int_placeholder(g), bo_placeholder(g, in[1]),
                                           bo_placeholder(g, dy), st, k->pad, dl, NULL);
            if (!bo_check(b.node, bi, tight(t)))
                fprintf(stderr, "  case: Conv2DBackpropInput #%zu\n", ci);
            rill_tensor *bf[3] = {in[0], sizes(wd), dy};
            rill_output f =
                rill_conv2d_backprop_filter(g, bo_placeholder(g, in[0]), int_placeholder(g),
                                            bo_placeholder(g, dy), st, k->pad, dl, NULL);
            if (!bo_check(f.node, bf, tight(t)))
                fprintf(stderr, "  case: Conv2DBackpropFilter #%zu\n", ci);
            rill_tensor_free(bi[0]);
            rill_tensor_free(bf[1]);
            rill_tensor_free(dy);
            bo_free_all(in, 2);
            rill_graph_free(g);
        }
}

static const cv_case pool_cases[] = {
    {1, 4, 4, 1, 2, 2, 0, 2, 2, 1, 1, "VALID"}, {2, 5, 7, 3, 3, 3, 0, 2, 2, 1, 1, "SAME"},
    {1, 6, 5, 2, 3, 2, 0, 1, 1, 1, 1, "SAME"},  {2, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, "VALID"},
    {1, 7, 6, 2, 3, 3, 0, 3, 2, 1, 1, "VALID"}, {3, 5, 5, 2, 4, 4, 0, 3, 3, 1, 1, "SAME"},
};

static void test_pools(void)
{
    for (size_t ci = 0; ci < sizeof pool_cases / sizeof *pool_cases; ci++)
        for (int ti = 0; ti < 2; ti++) {
            const cv_case *k = &pool_cases[ci];
            rill_dtype t = float_types[ti];
            int st[4] = {1, k->sh, k->sw, 1}, ks[4] = {1, (int)k->kh, (int)k->kw, 1};
            int64_t xd[4] = {k->n, k->h, k->w, k->c};
            rill_graph *g = rill_graph_new();
            rill_tensor *in[1] = {bo_random(t, xd, 4, -1, 1)};
            rill_output x = bo_placeholder(g, in[0]);
            rill_output mp = rill_max_pool(g, x, ks, st, k->pad, NULL);
            rill_output ap = rill_avg_pool(g, x, ks, st, k->pad, NULL);
            if (!bo_check(mp.node, in, tight(t))) fprintf(stderr, "  case: MaxPool #%zu\n", ci);
            if (!bo_check(ap.node, in, tight(t))) fprintf(stderr, "  case: AvgPool #%zu\n", ci);
            /* orig_output computed on the host: the CPU's MaxPool of x */
            rill_shape ys = rill_output_shape(mp);
            rill_tensor *dy = bo_random(t, ys.dims, 4, -1, 1);
            bo_result r;
            if (CHECK(bo_run(mp.node, "CPU", rill__cpu_device(), in, &r) && r.code == RILL_OK)) {
                rill_tensor *mi[3] = {in[0], r.out[0], dy};
                rill_output mg = rill_max_pool_grad(g, x, bo_placeholder(g, r.out[0]),
                                                    bo_placeholder(g, dy), ks, st, k->pad, NULL);
                if (!bo_check(mg.node, mi, tight(t)))
                    fprintf(stderr, "  case: MaxPoolGrad #%zu\n", ci);
            }
            bo_result_clear(&r);
            rill_tensor *ai[2] = {sizes(xd), dy};
            rill_output ag = rill_avg_pool_grad(g, int_placeholder(g), bo_placeholder(g, dy), ks,
                                                st, k->pad, NULL);
            if (!bo_check(ag.node, ai, tight(t))) fprintf(stderr, "  case: AvgPoolGrad #%zu\n", ci);
            rill_tensor_free(ai[0]);
            rill_tensor_free(dy);
            bo_free_all(in, 1);
            rill_graph_free(g);
        }
}

static void test_errors(void)
{
    const int s1[4] = {1, 1, 1, 1};
    int64_t xd[4] = {1, 5, 5, 3}, wd[4] = {3, 3, 4, 2}, dd[4] = {1, 4, 3, 2}, wok[4] = {3, 3, 3, 2};
    rill_graph *g = rill_graph_new();
    rill_tensor *in[2] = {bo_random(RILL_FLOAT, xd, 4, -1, 1), bo_random(RILL_FLOAT, wd, 4, -1, 1)};
    rill_output y = rill_conv2d(g, bo_placeholder_any(g, RILL_FLOAT),
                                bo_placeholder_any(g, RILL_FLOAT), s1, "VALID", NULL, NULL);
    bo_check_error(y.node, in, RILL_INVALID_ARGUMENT,
                   "input and filter must have the same depth: 3 vs 4");
    rill_tensor *bi[3] = {sizes(xd), bo_random(RILL_FLOAT, wok, 4, -1, 1),
                          bo_random(RILL_FLOAT, dd, 4, -1, 1)};
    rill_output b =
        rill_conv2d_backprop_input(g, int_placeholder(g), bo_placeholder_any(g, RILL_FLOAT),
                                   bo_placeholder_any(g, RILL_FLOAT), s1, "VALID", NULL, NULL);
    bo_check_error(b.node, bi, RILL_INVALID_ARGUMENT,
                   "Conv2DBackpropInput: Size of out_backprop doesn't match computed: actual = 4, "
                   "computed = 3");
    bo_free_all(in, 2);
    bo_free_all(bi, 3);
    rill_graph_free(g);
}

static void test_registrations(void)
{
#ifndef RILL_HAVE_OPENCL
    return; /* no OpenCL backend built: nothing registered (main skips the test) */
#endif
    static const char *const ops[] = {
        "Conv2D",  "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool",
        "AvgPool", "MaxPoolGrad",         "AvgPoolGrad"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        for (int t = 0; t < 2; t++)
            if (!CHECK(rill__kernel_lookup(ops[i], "OPENCL", float_types[t]) != NULL))
                fprintf(stderr, "  no OPENCL kernel for %s %s\n", ops[i],
                        rill_dtype_name(float_types[t]));
}

int main(void)
{
    if (!getenv("POCL_CACHE_DIR")) setenv("POCL_CACHE_DIR", "/tmp/rill-pocl-cache", 0);
    bo_seed(20240612);
    test_registrations();
    bo_skip_without_device(); /* exits 77 without one */
    test_conv();
    test_pools();
    test_errors();
    TEST_MAIN_END();
}
