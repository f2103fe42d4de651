/* test_opencl_nn.c - the neural-network kernels on OpenCL against the CPU kernels.
 *
 * Every op of src/kernels/opencl/cl_nn.c runs in float, double and half through the backend
 * harness (backend_ops.h): the same node and host inputs on the CPU and on the OpenCL device,
 * outputs compared by NMSE and checked to live in device memory. Shapes include sizes that are
 * not multiples of the work-group size, rank-3 inputs, rows of one element, empty batches and
 * logits large enough to overflow a naive softmax. The error cases check that both backends fail
 * with the same code and TensorFlow's message. Without an OpenCL device only the registrations
 * are checked and the test reports itself skipped (exit 77). */
#include "backend_ops.h"

static const rill_dtype float_types[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};

/* NMSE bounds well under the harness's defaults: both backends compute in the same precision, so
 * they differ only in how exp/tanh round (and, for half, in the odd final rounding). */
static double tight(const rill_node *n)
{
    rill_dtype t = n ? rill__node_kernel_dtype(n) : RILL_FLOAT;
    return t == RILL_DOUBLE ? 1e-24 : t == RILL_FLOAT ? 1e-11 : 2e-6;
}

static rill_output node1(rill_graph *g, const char *op, rill_output a)
{
    return (rill_output){rill__node_create(g, op, NULL, &a, 1, NULL, 0), 0};
}

static rill_output node2(rill_graph *g, const char *op, rill_output a, rill_output b)
{
    rill_output in[] = {a, b};
    return (rill_output){rill__node_create(g, op, NULL, in, 2, NULL, 0), 0};
}

/* Runs op on one random input of each shape, every dtype. */
static void check_unary(const char *op, double lo, double hi)
{
    static const int64_t shapes[][3] = {{3, 37, 0}, {129, 65, 0}, {2, 3, 5}, {1, 1, 0}, {0, 4, 0}};
    static const int ranks[] = {2, 2, 3, 2, 2};
    for (int t = 0; t < 3; t++)
        for (int s = 0; s < 5; s++) {
            rill_graph *g = rill_graph_new();
            rill_tensor *in[1] = {bo_random(float_types[t], shapes[s], ranks[s], lo, hi)};
            rill_output y = node1(g, op, bo_placeholder(g, in[0]));
            if (!bo_check(y.node, in, tight(y.node)))
                fprintf(stderr, "  case: %s shape #%d\n", op, s);
            bo_free_all(in, 1);
            rill_graph_free(g);
        }
}

/* Runs a gradient op (a, b) with a in [alo, ahi), b in [-2, 2). */
static void check_binary(const char *op, double alo, double ahi)
{
    static const int64_t shapes[][3] = {{3, 37, 0}, {100, 41, 0}, {2, 3, 5}, {0, 3, 0}};
    static const int ranks[] = {2, 2, 3, 2};
    for (int t = 0; t < 3; t++)
        for (int s = 0; s < 4; s++) {
            rill_graph *g = rill_graph_new();
            rill_tensor *in[2] = {bo_random(float_types[t], shapes[s], ranks[s], alo, ahi),
                                  bo_random(float_types[t], shapes[s], ranks[s], -2, 2)};
            rill_output y = node2(g, op, bo_placeholder(g, in[0]), bo_placeholder(g, in[1]));
            if (!bo_check(y.node, in, tight(y.node)))
                fprintf(stderr, "  case: %s shape #%d\n", op, s);
            bo_free_all(in, 2);
            rill_graph_free(g);
        }
}

static void test_elementwise(void)
{
    check_unary("Relu", -3, 3);
    check_unary("Sigmoid", -12, 12);
    check_unary("Tanh", -6, 6);
    check_binary("ReluGrad", -2, 2);   /* gradients, features */
    check_binary("SigmoidGrad", 0, 1); /* y, dy */
    check_binary("TanhGrad", -1, 1);
}

static void test_bias_add(void)
{
    static const int64_t shapes[][3] = {{4, 7, 0}, {2, 3, 5}, {300, 3, 0}, {1, 130, 0}, {0, 5, 0}};
    static const int ranks[] = {2, 3, 2, 2, 2};
    for (int t = 0; t < 3; t++)
        for (int s = 0; s < 5; s++) {
            int64_t c = shapes[s][ranks[s] - 1];
            rill_graph *g = rill_graph_new();
            rill_tensor *in[2] = {bo_random(float_types[t], shapes[s], ranks[s], -2, 2),
                                  bo_random(float_types[t], &c, 1, -1, 1)};
            rill_output y =
                rill_bias_add(g, bo_placeholder(g, in[0]), bo_placeholder(g, in[1]), NULL);
            if (!bo_check(y.node, in, tight(y.node)))
                fprintf(stderr, "  case: BiasAdd shape #%d\n", s);
            bo_free_all(in, 2);
            rill_graph_free(g);

            g = rill_graph_new();
            rill_tensor *gin[1] = {bo_random(float_types[t], shapes[s], ranks[s], -2, 2)};
            y = node1(g, "BiasAddGrad", bo_placeholder(g, gin[0]));
            if (!bo_check(y.node, gin, tight(y.node)))
                fprintf(stderr, "  case: BiasAddGrad shape #%d\n", s);
            bo_free_all(gin, 1);
            rill_graph_free(g);
        }
}

static void test_softmax(void)
{
    static const int64_t shapes[][3] = {{4, 10, 0}, {10, 0, 0},   {2, 3, 7},
                                        {65, 1, 0}, {3, 1000, 0}, {0, 5, 0}};
    static const int ranks[] = {2, 1, 3, 2, 2, 2};
    for (int t = 0; t < 3; t++)
        for (int s = 0; s < 6; s++)
            for (int big = 0; big < 2; big++) {
                /* big: logits around +-60, whose exponentials overflow float without the max
                 * shift (and half's range long before). */
                rill_graph *g = rill_graph_new();
                rill_tensor *in[1] = {
                    bo_random(float_types[t], shapes[s], ranks[s], big ? 40 : -3, big ? 60 : 3)};
                rill_output y = rill_softmax(g, bo_placeholder(g, in[0]), NULL);
                if (!bo_check(y.node, in, tight(y.node)))
                    fprintf(stderr, "  case: Softmax shape #%d big %d\n", s, big);
                bo_free_all(in, 1);
                rill_graph_free(g);
            }
}

/* Rows of probabilities (each row sums to 1), as double values. */
static rill_tensor *prob_rows(rill_dtype t, int64_t rows, int64_t cols)
{
    int64_t d[2] = {rows, cols};
    double *v = calloc((size_t)(rows * cols + 1), sizeof *v);
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0;
        for (int64_t k = 0; k < cols; k++) sum += v[r * cols + k] = bo_uniform(0, 1);
        for (int64_t k = 0; k < cols; k++) v[r * cols + k] /= sum;
    }
    rill_tensor *x = bo_tensor(t, d, 2, v);
    free(v);
    return x;
}

static void test_softmax_ce(void)
{
    static const int64_t shapes[][2] = {{8, 10}, {67, 3}, {1, 1}, {2, 500}, {0, 4}};
    for (int t = 0; t < 3; t++)
        for (int s = 0; s < 5; s++)
            for (int big = 0; big < 2; big++) {
                rill_graph *g = rill_graph_new();
                rill_tensor *in[2] = {
                    bo_random(float_types[t], shapes[s], 2, big ? -60 : -4, big ? 60 : 4),
                    prob_rows(float_types[t], shapes[s][0], shapes[s][1])};
                /* The builder takes (labels, logits); the op's inputs are (logits, labels). */
                rill_output y = rill_softmax_cross_entropy_with_logits(
                    g, bo_placeholder(g, in[1]), bo_placeholder(g, in[0]), NULL);
                if (!bo_check(y.node, in, tight(y.node)))
                    fprintf(stderr, "  case: SoftmaxCrossEntropyWithLogits shape #%d big %d\n", s,
                            big);
                bo_free_all(in, 2);
                rill_graph_free(g);
            }
}

static void test_sparse_softmax_ce(void)
{
    static const int64_t shapes[][2] = {{8, 10}, {67, 3}, {1, 1}, {2, 500}, {0, 4}};
    static const rill_dtype label_types[] = {RILL_INT32, RILL_INT64};
    for (int t = 0; t < 3; t++)
        for (int s = 0; s < 5; s++)
            for (int lt = 0; lt < 2; lt++) {
                rill_graph *g = rill_graph_new();
                rill_tensor *in[2] = {
                    bo_random(float_types[t], shapes[s], 2, lt ? -50 : -4, lt ? 50 : 4),
                    bo_random(label_types[lt], shapes[s], 1, 0, (double)shapes[s][1] - 1)};
                rill_output y = rill_sparse_softmax_cross_entropy_with_logits(
                    g, bo_placeholder(g, in[1]), bo_placeholder(g, in[0]), NULL);
                if (!bo_check(y.node, in, tight(y.node)))
                    fprintf(stderr, "  case: SparseSoftmaxCrossEntropyWithLogits shape #%d %s\n", s,
                            rill_dtype_name(label_types[lt]));
                bo_free_all(in, 2);
                rill_graph_free(g);
            }
    /* The labels stay in host memory (checked there); the outputs are on the device. */
    const rill__kernel_def *k =
        rill__kernel_lookup("SparseSoftmaxCrossEntropyWithLogits", "OPENCL", RILL_FLOAT);
    if (CHECK(k != NULL)) CHECK_EQ_INT(k->host_memory_inputs, 1u << 1);
}

/* Placeholders of unknown shape, so run-time shapes reach the kernels' own checks. */
static rill_output unknown(rill_graph *g, rill_dtype t)
{
    return rill_placeholder(g, t, rill_shape_unknown(), NULL);
}

static void test_errors(void)
{
    for (int t = 0; t < 3; t++) {
        rill_dtype ft = float_types[t];
        /* Labels out of range, int32 and int64, above and below. */
        for (int lt = 0; lt < 2; lt++) {
            rill_dtype ltype = lt ? RILL_INT64 : RILL_INT32;
            int64_t ld[2] = {3, 10};
            double bad_hi[3] = {1, 12, 4}, bad_lo[3] = {-1, 0, 0};
            rill_graph *g = rill_graph_new();
            rill_tensor *in[2] = {bo_random(ft, ld, 2, -1, 1), bo_tensor(ltype, ld, 1, bad_hi)};
            rill_output y = rill_sparse_softmax_cross_entropy_with_logits(
                g, bo_placeholder(g, in[1]), bo_placeholder(g, in[0]), NULL);
            bo_check_error(y.node, in, RILL_INVALID_ARGUMENT,
                           "Received a label value of 12 which is outside the valid range of "
                           "[0, 10).  Label values: 1 12 4");
            rill_tensor_free(in[1]);
            in[1] = bo_tensor(ltype, ld, 1, bad_lo);
            bo_check_error(y.node, in, RILL_INVALID_ARGUMENT,
                           "Received a label value of -1 which is outside the valid range of "
                           "[0, 10)");
            bo_free_all(in, 2);
            rill_graph_free(g);
        }
        /* No classes. */
        {
            int64_t d[2] = {2, 0};
            rill_graph *g = rill_graph_new();
            rill_tensor *in[2] = {bo_random(ft, d, 2, -1, 1), bo_random(ft, d, 2, 0, 1)};
            rill_output y =
                rill_softmax_cross_entropy_with_logits(g, unknown(g, ft), unknown(g, ft), NULL);
            bo_check_error(y.node, in, RILL_INVALID_ARGUMENT,
                           "Must have at least one class, but got logits shape [2,0]");
            bo_free_all(in, 2);
            rill_graph_free(g);
        }
        /* Mismatched shapes. */
        {
            int64_t a[2] = {2, 3}, b[2] = {3, 2}, c[1] = {4};
            rill_graph *g = rill_graph_new();
            rill_tensor *in[2] = {bo_random(ft, a, 2, -1, 1), bo_random(ft, c, 1, -1, 1)};
            rill_output y = rill_bias_add(g, unknown(g, ft), unknown(g, ft), NULL);
            bo_check_error(y.node, in, RILL_INVALID_ARGUMENT,
                           "Must provide as many biases as the last dimension of the input "
                           "tensor: [4] vs. [2,3]");
            rill_tensor *in1[2] = {bo_random(ft, c, 1, -1, 1), bo_random(ft, c, 1, -1, 1)};
            bo_check_error(y.node, in1, RILL_INVALID_ARGUMENT,
                           "Input tensor must be at least 2D: [4]");
            rill_output r = node2(g, "ReluGrad", unknown(g, ft), unknown(g, ft));
            rill_tensor *in2[2] = {bo_random(ft, a, 2, -1, 1), bo_random(ft, b, 2, -1, 1)};
            bo_check_error(r.node, in2, RILL_INVALID_ARGUMENT,
                           "must have the same size and shape.  Input 0: [2,3] != input 1: [3,2]");
            rill_output ce =
                rill_softmax_cross_entropy_with_logits(g, unknown(g, ft), unknown(g, ft), NULL);
            bo_check_error(ce.node, in2, RILL_INVALID_ARGUMENT,
                           "logits and labels must be same size: logits_size=[2,3] "
                           "labels_size=[3,2]");
            rill_output sm = rill_softmax(g, unknown(g, ft), NULL);
            rill_tensor *scalar[1] = {bo_random(ft, NULL, 0, -1, 1)};
            bo_check_error(sm.node, scalar, RILL_INVALID_ARGUMENT,
                           "logits must have >= 1 dimension, got []");
            bo_free_all(in, 2);
            bo_free_all(in1, 2);
            bo_free_all(in2, 2);
            bo_free_all(scalar, 1);
            rill_graph_free(g);
        }
    }
}

static void test_registrations(void)
{
#ifndef RILL_HAVE_OPENCL
    return; /* no OpenCL backend built: nothing registered (main skips the test) */
#endif
    static const char *const ops[] = {"BiasAdd",
                                      "BiasAddGrad",
                                      "Relu",
                                      "ReluGrad",
                                      "Sigmoid",
                                      "SigmoidGrad",
                                      "Tanh",
                                      "TanhGrad",
                                      "Softmax",
                                      "SoftmaxCrossEntropyWithLogits",
                                      "SparseSoftmaxCrossEntropyWithLogits"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        for (int t = 0; t < 3; t++)
            if (!CHECK(rill__kernel_lookup(ops[i], "OPENCL", float_types[t]) != NULL))
                fprintf(stderr, "  no OPENCL kernel for %s %s\n", ops[i],
                        rill_dtype_name(float_types[t]));
        CHECK(rill__kernel_lookup(ops[i], "OPENCL", RILL_INT32) == NULL);
    }
}

int main(void)
{
    if (!getenv("POCL_CACHE_DIR")) setenv("POCL_CACHE_DIR", "/tmp/rill-pocl-cache", 0);
    bo_seed(20240611);
    test_registrations();
    bo_skip_without_device(); /* exits 77 without one */
    test_elementwise();
    test_bias_add();
    test_softmax();
    test_softmax_ce();
    test_sparse_softmax_ce();
    test_errors();
    TEST_MAIN_END();
}
