/* test_opencl_index.c - GatherV2 on OpenCL (src/kernels/opencl/cl_index.c) against the CPU
 * kernel, through the backend harness (backend_ops.h): float, double and half params, axis 0,
 * 1 and -1, int32 and int64 indices of several ranks, sizes straddling the work-group size; the
 * result equals the CPU's exactly (values are moved, not computed). An index out of range fails
 * on OpenCL with the CPU's text. int32 params run the CPU kernel in host memory.
 *
 * Without an OpenCL device only the registrations are checked and the test reports itself
 * skipped (exit 77). */
#include "backend_ops.h"

static const rill_dtype flt[3] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};

static rill_tensor *indices(rill_dtype t, const int64_t *dims, int rank, int64_t lim)
{
    rill_tensor *x = rill_tensor_new(t, dims, rank);
    for (int64_t i = 0; i < rill_tensor_num_elements(x); i++) {
        int64_t v = (int64_t)bo_uniform(0, (double)lim);
        if (t == RILL_INT32)
            ((int32_t *)rill_tensor_data(x))[i] = (int32_t)v;
        else
            ((int64_t *)rill_tensor_data(x))[i] = v;
    }
    return x;
}

static rill_node *gather_node(rill_graph *g, rill_tensor *const *in, int64_t axis)
{
    rill_op_builder *b = rill_op_builder_new(g, "GatherV2", "gather");
    rill_op_builder_add_input(b, bo_placeholder(g, in[0]));
    rill_op_builder_add_input(b, bo_placeholder(g, in[1]));
    rill_op_builder_set_int(b, "axis", axis);
    return rill_op_builder_finish(b);
}

static void test_registrations(void)
{
#ifndef RILL_HAVE_OPENCL
    return;
#endif
    for (int t = 0; t < 3; t++) {
        const rill__kernel_def *k = rill__kernel_lookup("GatherV2", "OPENCL", flt[t]);
        if (CHECK(k != NULL)) CHECK_EQ_INT(k->host_memory_inputs, (1u << 1) | (1u << 2));
    }
    const rill__kernel_def *k = rill__kernel_lookup("GatherV2", "OPENCL", RILL_INT32);
    if (CHECK(k != NULL)) CHECK_EQ_INT(k->host_memory_inputs, ~0u);
}

static void test_gather(void)
{
    static const struct {
        int rank;
        int64_t dims[3];
        int irank;
        int64_t idims[2];
        int64_t axis;
    } cases[] = {
        {2, {50, 16}, 1, {37}, 0},       {2, {1000, 3}, 2, {7, 9}, 0}, {3, {4, 130, 5}, 1, {11}, 1},
        {3, {3, 4, 300}, 2, {2, 3}, -1}, {1, {20}, 0, {0}, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int t = 0; t < 3; t++)
            for (int it = 0; it < 2; it++) {
                rill_graph *g = rill_graph_new();
                int a = (int)(cases[c].axis < 0 ? cases[c].axis + cases[c].rank : cases[c].axis);
                rill_tensor *in[2] = {bo_random(flt[t], cases[c].dims, cases[c].rank, -4, 4),
                                      indices(it ? RILL_INT64 : RILL_INT32, cases[c].idims,
                                              cases[c].irank, cases[c].dims[a])};
                bo_check(gather_node(g, in, cases[c].axis), in, 0);
                bo_free_all(in, 2);
                rill_graph_free(g);
            }
    /* drop_negatives: negative indices give rows of zeros */
    {
        rill_graph *g = rill_graph_new();
        rill_tensor *in[2] = {
            bo_random(RILL_FLOAT, (int64_t[]){6, 70}, 2, -1, 1),
            rill_tensor_from_data(RILL_INT64, (int64_t[]){4}, 1, (int64_t[]){2, -1, 5, -3})};
        rill_op_builder *b = rill_op_builder_new(g, "GatherV2", "gather");
        rill_op_builder_add_input(b, bo_placeholder(g, in[0]));
        rill_op_builder_add_input(b, bo_placeholder(g, in[1]));
        rill_op_builder_set_bool(b, "drop_negatives", true);
        bo_check(rill_op_builder_finish(b), in, 0);
        bo_free_all(in, 2);
        rill_graph_free(g);
    }
    /* int32 params: the CPU kernel in host memory */
    rill_graph *g = rill_graph_new();
    rill_tensor *in[2] = {bo_random(RILL_INT32, (int64_t[]){9, 4}, 2, -50, 50),
                          indices(RILL_INT64, (int64_t[]){5}, 1, 9)};
    bo_check(gather_node(g, in, 0), in, 0);
    bo_free_all(in, 2);
    rill_graph_free(g);
}

static void test_errors(void)
{
    rill_graph *g = rill_graph_new();
    rill_tensor *in[2] = {
        bo_random(RILL_FLOAT, (int64_t[]){5, 3}, 2, -1, 1),
        rill_tensor_from_data(RILL_INT32, (int64_t[]){2, 2}, 2, (int32_t[]){0, 1, 4, 7})};
    bo_check_error(gather_node(g, in, 0), in, RILL_INVALID_ARGUMENT,
                   "indices[1,1] = 7 is not in [0, 5)");
    bo_free_all(in, 2);
    rill_graph_free(g);
}

int main(void)
{
    if (!getenv("POCL_CACHE_DIR")) setenv("POCL_CACHE_DIR", "/tmp/rill-pocl-cache", 0);
    bo_seed(20261202);
    test_registrations();
    bo_skip_without_device(); /* exits 77 without one */
    test_gather();
    test_errors();
    TEST_MAIN_END();
}
