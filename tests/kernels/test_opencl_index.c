/* test_opencl_index.c - GatherV2 on OpenCL (src/kernels/opencl/cl_index.c) and the row-wise
 * variable updates (cl_sparse_apply.c: ScatterUpdate/Add/Sub, SparseApplyMomentum,
 * SparseApplyAdagrad, _SparseApplyAdam) against the CPU kernels, through the backend harness
 * (backend_ops.h). GatherV2: float, double and half params, axis 0, 1 and -1, int32 and int64
 * indices of several ranks, sizes straddling the work-group size, negative indices dropped;
 * the result equals the CPU's exactly (values are moved, not computed). The updates: repeated
 * indices (summed), scalar updates, variables compared after the update. An index out of range
 * fails on OpenCL with the CPU's text. int32 params run the CPU kernel in host memory.
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
    static const char *const upd[] = {"ScatterUpdate",      "ScatterAdd",
                                      "ScatterSub",         "SparseApplyMomentum",
                                      "SparseApplyAdagrad", "_SparseApplyAdam"};
    for (int i = 0; i < 6; i++)
        for (int t = 0; t < 2; t++) CHECK(rill__kernel_lookup(upd[i], "OPENCL", flt[t]) != NULL);
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

static rill_output var_node(rill_graph *g, const char *name, const rill_tensor *v)
{
    rill__attr a[] = {RILL__A_TYPE("dtype", rill_tensor_dtype(v)),
                      RILL__A_SHAPE("shape", *rill_tensor_shape(v))};
    return (rill_output){rill__node_create(g, "VariableV2", name, NULL, 0, a, 2), 0};
}

/* A node of op over in[0..n): the op's reference inputs become variables, the rest
 * placeholders. */
static rill_node *update_node(rill_graph *g, const char *op, rill_tensor *const *in, int n,
                              const char *battr, bool bv)
{
    static const char *const names[] = {"var", "slot_1", "slot_2"};
    const rill__op_def *def = rill__op_lookup(op);
    rill_output x[12];
    for (int i = 0; i < n; i++)
        x[i] =
            (def->ref_inputs & (1u << i)) ? var_node(g, names[i], in[i]) : bo_placeholder(g, in[i]);
    rill__attr a[] = {RILL__A_BOOL(battr ? battr : "unused", bv)};
    return rill__node_create(g, op, NULL, x, n, a, battr ? 1 : 0);
}

static rill_tensor *scalar_of(rill_dtype t, double v)
{
    rill_tensor *x = bo_random(t, NULL, 0, 0, 1);
    rill_tensor *s = rill_tensor_from_data(RILL_DOUBLE, NULL, 0, &v);
    rill__convert(t, rill_tensor_data(x), RILL_DOUBLE, rill_tensor_data(s), 1);
    rill_tensor_free(s);
    return x;
}

static void test_scatters(void)
{
    static const char *const ops[] = {"ScatterUpdate", "ScatterAdd", "ScatterSub"};
    static const int64_t rows[][2] = {{7, 3}, {300, 17}};
    for (int o = 0; o < 3; o++)
        for (int t = 0; t < 3; t++)
            for (int r = 0; r < 2; r++)
                for (int sc = 0; sc < 2; sc++) {
                    int64_t nix = 2 * rows[r][0] / 3;
                    rill_tensor *in[3] = {
                        bo_random(flt[t], rows[r], 2, -2, 2),
                        indices(RILL_INT64, &nix, 1, rows[r][0] / 2),
                        sc ? scalar_of(flt[t], 0.75)
                           : bo_random(flt[t], (int64_t[]){nix, rows[r][1]}, 2, -2, 2)};
                    rill_graph *g = rill_graph_new();
                    if (!bo_check(update_node(g, ops[o], in, 3, NULL, false), in, -1))
                        fprintf(stderr, "  case: %s %s rows #%d scalar %d\n", ops[o],
                                rill_dtype_name(flt[t]), r, sc);
                    bo_free_all(in, 3);
                    rill_graph_free(g);
                }
    rill_graph *g = rill_graph_new();
    rill_tensor *in[3] = {bo_random(RILL_FLOAT, (int64_t[]){5, 2}, 2, -1, 1),
                          rill_tensor_from_data(RILL_INT32, (int64_t[]){2}, 1, (int32_t[]){1, 5}),
                          bo_random(RILL_FLOAT, (int64_t[]){2, 2}, 2, -1, 1)};
    bo_check_error(update_node(g, "ScatterAdd", in, 3, NULL, false), in, RILL_INVALID_ARGUMENT,
                   "indices[1] = 5 is not in [0, 5)");
    bo_free_all(in, 3);
    rill_graph_free(g);
}

static void test_sparse_apply(void)
{
    static const int64_t dims[][2] = {{9, 4}, {200, 33}};
    for (int k = 0; k < 4; k++)
        for (int t = 0; t < 2; t++)
            for (int s = 0; s < 2; s++) {
                rill_dtype ft = flt[t];
                int64_t n = dims[s][0] / 2 + 3;
                rill_tensor *var = bo_random(ft, dims[s], 2, -1, 1);
                rill_tensor *slot = bo_random(ft, dims[s], 2, 0.1, 1);
                rill_tensor *slot2 = bo_random(ft, dims[s], 2, 0.1, 1);
                rill_tensor *grad = bo_random(ft, (int64_t[]){n, dims[s][1]}, 2, -1, 1);
                rill_tensor *ix = indices(s ? RILL_INT64 : RILL_INT32, &n, 1, dims[s][0] / 2);
                rill_tensor *in[11];
                int nin;
                const char *op;
                if (k < 2) { /* momentum, Nesterov */
                    rill_tensor *x[] = {var,  slot, scalar_of(ft, 0.1),
                                        grad, ix,   scalar_of(ft, 0.9)};
                    memcpy(in, x, sizeof x);
                    nin = 6;
                    op = "SparseApplyMomentum";
                } else if (k == 2) {
                    rill_tensor *x[] = {var, slot, scalar_of(ft, 0.1), grad, ix};
                    memcpy(in, x, sizeof x);
                    nin = 5;
                    op = "SparseApplyAdagrad";
                } else {
                    rill_tensor *x[] = {var,
                                        slot,
                                        slot2,
                                        scalar_of(ft, 0.9 * 0.9),
                                        scalar_of(ft, 0.999 * 0.999),
                                        scalar_of(ft, 0.01),
                                        scalar_of(ft, 0.9),
                                        scalar_of(ft, 0.999),
                                        scalar_of(ft, 1e-7),
                                        grad,
                                        ix};
                    memcpy(in, x, sizeof x);
                    nin = 11;
                    op = "_SparseApplyAdam";
                }
                if (k != 3) rill_tensor_free(slot2);
                rill_graph *g = rill_graph_new();
                rill_node *node =
                    update_node(g, op, in, nin, k < 2 ? "use_nesterov" : NULL, k == 1);
                if (!bo_check(node, in, ft == RILL_FLOAT ? 1e-10 : 1e-24))
                    fprintf(stderr, "  case: %s%s %s shape #%d\n", op, k == 1 ? " (Nesterov)" : "",
                            rill_dtype_name(ft), s);
                bo_free_all(in, nin);
                rill_graph_free(g);
            }
    /* an index out of range: the CPU's text */
    rill_graph *g = rill_graph_new();
    rill_tensor *in[5] = {bo_random(RILL_FLOAT, (int64_t[]){4, 2}, 2, -1, 1),
                          bo_random(RILL_FLOAT, (int64_t[]){4, 2}, 2, 0.1, 1),
                          scalar_of(RILL_FLOAT, 0.1),
                          bo_random(RILL_FLOAT, (int64_t[]){2, 2}, 2, -1, 1),
                          rill_tensor_from_data(RILL_INT64, (int64_t[]){2}, 1, (int64_t[]){0, 9})};
    bo_check_error(update_node(g, "SparseApplyAdagrad", in, 5, NULL, false), in,
                   RILL_INVALID_ARGUMENT, "Index 9 at offset 1 in indices is out of range");
    bo_free_all(in, 5);
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
    test_scatters();
    test_sparse_apply();
    TEST_MAIN_END();
}
