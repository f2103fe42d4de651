/* test_opencl_permute.c - Roll, ReverseSequence (src/kernels/opencl/cl_permute.c) and DivNoNan
 * (cl_elementwise.c) on OpenCL against the CPU kernels, through the backend harness
 * (backend_ops.h): float, double and half; Roll over one and several axes (negative, repeated,
 * larger than the dim), sizes straddling the work-group size; ReverseSequence along several
 * (seq_dim, batch_dim) pairs with int32 and int64 lengths (0 and the full length included), a
 * length out of range failing with the CPU's text; DivNoNan with zeros in y, broadcasting and
 * NaN / inf; MatrixBandPart over several bands (one past the rows failing with the CPU's text).
 * int32 runs the CPU kernels in host memory. Without an OpenCL device only the
 * registrations are checked and the test reports itself skipped (exit 77). */
#include "backend_ops.h"

static const rill_dtype flt[3] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};

static void test_registrations(void)
{
#ifndef RILL_HAVE_OPENCL
    return;
#endif
    for (int t = 0; t < 3; t++) {
        const rill__kernel_def *k = rill__kernel_lookup("ReverseSequence", "OPENCL", flt[t]);
        if (CHECK(k != NULL)) CHECK_EQ_INT(k->host_memory_inputs, 1u << 1);
        k = rill__kernel_lookup("Roll", "OPENCL", flt[t]);
        if (CHECK(k != NULL)) CHECK_EQ_INT(k->host_memory_inputs, 0);
        CHECK(rill__kernel_lookup("DivNoNan", "OPENCL", flt[t]) != NULL);
        k = rill__kernel_lookup("MatrixBandPart", "OPENCL", flt[t]);
        if (CHECK(k != NULL)) CHECK_EQ_INT(k->host_memory_outputs, 0);
    }
    const rill__kernel_def *k = rill__kernel_lookup("Roll", "OPENCL", RILL_INT32);
    if (CHECK(k != NULL)) CHECK_EQ_INT(k->host_memory_inputs, ~0u);
}

static rill_node *roll_node(rill_graph *g, rill_tensor *x, const int64_t *shift,
                            const int64_t *axis, int n)
{
    rill_op_builder *b = rill_op_builder_new(g, "Roll", "roll");
    rill_op_builder_add_input(b, bo_placeholder(g, x));
    rill_op_builder_set_ints(b, "shift", shift, n);
    rill_op_builder_set_ints(b, "axis", axis, n);
    return rill_op_builder_finish(b);
}

static void test_roll(void)
{
    static const struct {
        int rank;
        int64_t dims[3];
        int n;
        int64_t shift[3], axis[3];
    } cases[] = {
        {1, {300}, 1, {7}, {0}},
        {2, {5, 70}, 2, {-3, 101}, {0, 1}},
        {3, {3, 4, 33}, 3, {1, 2, -40}, {-1, 1, 2}},
        {3, {2, 3, 4}, 2, {2, 5}, {1, 1}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int t = 0; t < 4; t++) {
            rill_dtype dt = t < 3 ? flt[t] : RILL_INT32;
            rill_tensor *in[1] = {bo_random(dt, cases[c].dims, cases[c].rank, -5, 5)};
            rill_graph *g = rill_graph_new();
            bo_check(roll_node(g, in[0], cases[c].shift, cases[c].axis, cases[c].n), in, 0);
            bo_free_all(in, 1);
            rill_graph_free(g);
        }
}

static rill_node *rs_node(rill_graph *g, rill_tensor *const *in, int64_t sd, int64_t bd)
{
    rill_op_builder *b = rill_op_builder_new(g, "ReverseSequence", "rs");
    rill_op_builder_add_input(b, bo_placeholder(g, in[0]));
    rill_op_builder_add_input(b, bo_placeholder(g, in[1]));
    rill_op_builder_set_int(b, "seq_dim", sd);
    rill_op_builder_set_int(b, "batch_dim", bd);
    return rill_op_builder_finish(b);
}

static void test_reverse_sequence(void)
{
    static const struct {
        int64_t dims[3], sd, bd;
    } cases[] = {{{4, 50, 3}, 1, 0}, {{9, 5, 6}, 0, 2}, {{3, 7, 40}, 2, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int t = 0; t < 4; t++)
            for (int lt = 0; lt < 2; lt++) {
                rill_dtype dt = t < 3 ? flt[t] : RILL_INT32;
                int64_t nb = cases[c].dims[cases[c].bd], ns = cases[c].dims[cases[c].sd];
                double lv[64];
                for (int64_t i = 0; i < nb; i++)
                    lv[i] = i == 0 ? 0 : i == 1 ? (double)ns : floor(bo_uniform(0, (double)ns + 1));
                rill_tensor *in[2] = {bo_random(dt, cases[c].dims, 3, -5, 5),
                                      bo_tensor(lt ? RILL_INT64 : RILL_INT32, &nb, 1, lv)};
                rill_graph *g = rill_graph_new();
                bo_check(rs_node(g, in, cases[c].sd, cases[c].bd), in, 0);
                bo_free_all(in, 2);
                rill_graph_free(g);
            }
    int64_t dims[2] = {3, 4}, nb = 3;
    rill_tensor *in[2] = {bo_random(RILL_FLOAT, dims, 2, -1, 1),
                          bo_tensor(RILL_INT64, &nb, 1, (double[]){1, 5, 2})};
    rill_graph *g = rill_graph_new();
    bo_check_error(rs_node(g, in, 1, 0), in, RILL_INVALID_ARGUMENT, "seq_lens(1) > input.dims(1)");
    bo_free_all(in, 2);
    rill_graph_free(g);
}

static rill_node *binary(rill_graph *g, const char *op, rill_tensor *const *in)
{
    rill_op_builder *b = rill_op_builder_new(g, op, "z");
    rill_op_builder_add_input(b, bo_placeholder(g, in[0]));
    rill_op_builder_add_input(b, bo_placeholder(g, in[1]));
    return rill_op_builder_finish(b);
}

static void test_div_no_nan(void)
{
    int64_t xd[2] = {37, 9}, yd[1] = {9};
    for (int t = 0; t < 3; t++) {
        rill_tensor *in[2] = {bo_random(flt[t], xd, 2, -3, 3), bo_random(flt[t], yd, 1, -2, 2)};
        for (int i = 0; i < 9; i += 3) bo__set(in[1], i, 0); /* some zeros */
        rill_graph *g = rill_graph_new();
        bo_check(binary(g, "DivNoNan", in), in, flt[t] == RILL_HALF ? 2e-5 : 1e-6);
        bo_free_all(in, 2);
        rill_graph_free(g);
    }
    static const double x[] = {NAN, 1, INFINITY, -INFINITY, 0, 0, 2, -2, NAN, 3};
    static const double y[] = {0, NAN, 2, 0, NAN, 0, INFINITY, -3, 2, 0};
    int64_t n = 10;
    for (int t = 0; t < 3; t++) {
        rill_tensor *in[2] = {bo_tensor(flt[t], &n, 1, x), bo_tensor(flt[t], &n, 1, y)};
        rill_graph *g = rill_graph_new();
        bo_check(binary(g, "DivNoNan", in), in, 1e-6);
        bo_free_all(in, 2);
        rill_graph_free(g);
    }
}

static void test_band_part(void)
{
    static const int64_t bands[][2] = {{0, 0}, {2, 0}, {-1, 1}, {1, -1}, {-1, -1}, {40, 3}};
    int64_t dims[3] = {3, 37, 29};
    for (size_t b = 0; b < sizeof bands / sizeof *bands; b++)
        for (int t = 0; t < 3; t++) {
            rill_tensor *in[1] = {bo_random(flt[t], dims, 3, -3, 3)};
            rill_graph *g = rill_graph_new();
            rill_op_builder *ob = rill_op_builder_new(g, "MatrixBandPart", "band");
            rill_op_builder_add_input(ob, bo_placeholder(g, in[0]));
            rill_op_builder_set_int(ob, "num_lower", bands[b][0]);
            rill_op_builder_set_int(ob, "num_upper", bands[b][1]);
            rill_node *n = rill_op_builder_finish(ob);
            if (bands[b][0] > dims[1])
                bo_check_error(
                    n, in, RILL_INVALID_ARGUMENT,
                    "num_lower must be negative or less or equal to number of rows (37)");
            else
                bo_check(n, in, 0);
            bo_free_all(in, 1);
            rill_graph_free(g);
        }
}

int main(void)
{
    if (!getenv("POCL_CACHE_DIR")) setenv("POCL_CACHE_DIR", "/tmp/rill-pocl-cache", 0);
    bo_seed(20261203);
    test_registrations();
    bo_skip_without_device(); /* exits 77 without one */
    test_roll();
    test_reverse_sequence();
    test_div_no_nan();
    test_band_part();
    TEST_MAIN_END();
}
