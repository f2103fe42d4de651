/* test_opencl_array.c - StridedSlice and StridedSliceGrad on OpenCL (src/kernels/opencl/
 * cl_array.c) against the CPU kernels, through the backend harness (backend_ops.h).
 *
 * Slices with every kind of entry (indices that drop a dim, new axes, an ellipsis, negative and
 * reversed strides, clamped and empty ranges) of tensors whose element counts straddle the
 * work-group size, in float, double and half: the OpenCL result equals the CPU's exactly (values
 * are moved, not computed), and so does the gradient (zeros with dy written where the slice
 * read). A slice that only fails at run time (an index out of bounds of a shape unknown when it
 * was built) fails on OpenCL with the CPU's text. int32 slices run the CPU kernel in host memory.
 * A session under /gpu:0 (no soft placement, so the ops must be on the GPU) computes a slice and
 * its gradient equal to a /cpu:0 session's, bit for bit.
 *
 * Without an OpenCL device only the registrations are checked and the test reports itself
 * skipped (exit 77). */
#include "backend_ops.h"

static const rill_dtype flt[3] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};

typedef struct spec {
    const char *label;
    int rank;
    int64_t dims[4];
    int n;
    int64_t begin[4], end[4], strides[4];
    rill_slice_masks m;
} spec;

static const spec specs[] = {
    {"x[1]", 3, {3, 7, 11}, 1, {1}, {2}, {1}, {.shrink_axis = 1}},
    {"x[:, 2]", 3, {3, 7, 11}, 2, {0, 2}, {0, 3}, {1, 1}, {.begin = 1, .end = 1, .shrink_axis = 2}},
    {"x[..., ::-2]", 3, {3, 7, 11}, 2, {0, 0}, {0, 0}, {1, -2}, {.begin = 2, .end = 2, .ellipsis = 1}},
    {"x[1:, None, -3:-1, 9:0:-3]", 3, {3, 7, 11}, 4, {1, 0, -3, 9}, {0, 0, -1, 0}, {1, 1, 1, -3},
     {.end = 1, .new_axis = 2}},
    {"x[-1, ..., None]", 3, {3, 7, 11}, 3, {-1, 0, 0}, {0, 0, 0}, {1, 1, 1},
     {.ellipsis = 2, .new_axis = 4, .shrink_axis = 1}},
    {"x[5:9] (empty)", 3, {3, 7, 11}, 1, {5}, {9}, {1}, {0}},
    {"x[2:300:3] of 1000", 1, {1000}, 1, {2}, {300}, {3}, {0}},
    {"x[::-1, 3] of [129, 5]", 2, {129, 5}, 2, {0, 3}, {0, 4}, {-1, 1},
     {.begin = 1, .end = 1, .shrink_axis = 2}},
};
#define NSPECS (sizeof specs / sizeof *specs)

static rill_output slice_of(rill_graph *g, rill_output x, const spec *c)
{
    return rill_strided_slice(g, x, c->begin, c->end, c->strides, c->n, &c->m, NULL);
}

static void test_registrations(void)
{
#ifndef RILL_HAVE_OPENCL
    return; /* no OpenCL backend built: nothing registered (main skips the test) */
#endif
    static const char *const ops[] = {"StridedSlice", "StridedSliceGrad"};
    for (int i = 0; i < 2; i++) {
        for (int t = 0; t < 3; t++) {
            const rill__kernel_def *k = rill__kernel_lookup(ops[i], "OPENCL", flt[t]);
            if (CHECK(k != NULL)) {
                CHECK_EQ_INT(k->host_memory_inputs, 0);
                CHECK_EQ_INT(k->host_memory_outputs, 0);
            }
        }
        /* int32 never lives on the GPU: the CPU kernel, in host memory */
        const rill__kernel_def *k = rill__kernel_lookup(ops[i], "OPENCL", RILL_INT32);
        if (CHECK(k != NULL)) {
            CHECK(k->fn == rill__kernel_lookup(ops[i], "CPU", RILL_INT32)->fn);
            CHECK_EQ_INT(k->host_memory_inputs, ~0u);
        }
    }
}

static void test_slices(void)
{
    for (size_t k = 0; k < NSPECS; k++) {
        const spec *c = &specs[k];
        for (int t = 0; t < 3; t++) {
            rill_graph *g = rill_graph_new();
            rill_tensor *x = bo_random(flt[t], c->dims, c->rank, -4, 4);
            rill_output y = slice_of(g, bo_placeholder(g, x), c);
            if (!bo_check(y.node, &x, 0))
                fprintf(stderr, "  case: %s %s\n", c->label, rill_dtype_name(flt[t]));
            if (y.node) {
                const rill_shape ys = rill_output_shape(y);
                rill_tensor *in[2] = {x, bo_random(flt[t], ys.dims, ys.rank, -4, 4)};
                rill_output xs = bo_placeholder(g, x);
                rill_output dy = bo_placeholder(g, in[1]);
                rill_output dx;
                rill_output l = rill_sum(g, rill_mul(g, slice_of(g, xs, c), dy, NULL), NULL, -1,
                                         false, NULL);
                if (CHECK(rill_gradients(g, &l, 1, &xs, 1, NULL, &dx)) && CHECK(dx.node != NULL) &&
                    CHECK_EQ_STR(rill_node_op_type(dx.node), "StridedSliceGrad")) {
                    /* the harness feeds the node's two inputs (x, and what flows into y) */
                    if (!bo_check(dx.node, in, 0))
                        fprintf(stderr, "  case: grad %s %s\n", c->label, rill_dtype_name(flt[t]));
                }
                rill_tensor_free(in[1]);
            }
            rill_tensor_free(x);
            rill_graph_free(g);
        }
    }
}

static void test_errors(void)
{
    for (int t = 0; t < 3; t++) {
        rill_graph *g = rill_graph_new();
        rill_output y = rill_strided_slice(g, bo_placeholder_any(g, flt[t]), (int64_t[]){-9},
                                           (int64_t[]){-8}, (int64_t[]){1}, 1,
                                           &(rill_slice_masks){.shrink_axis = 1}, NULL);
        rill_tensor *x = bo_random(flt[t], (int64_t[]){4, 2}, 2, -1, 1);
        bo_check_error(y.node, &x, RILL_INVALID_ARGUMENT,
                       "slice index -9 of dimension 0 out of bounds.");
        rill_tensor_free(x);
        rill_graph_free(g);
    }
}

/* y = x[1:, ::-2] and d(sum(y^2))/dx, every node under dev; the two fetched, host copies. */
static bool run_session(const char *dev, rill_tensor *x, rill_tensor **out)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_graph_push_device(g, dev);
    rill_output xo = rill_const(g, x, "x");
    rill_output y = rill_strided_slice(g, xo, (int64_t[]){1, 0}, (int64_t[]){0, 0},
                                       (int64_t[]){1, -2}, 2,
                                       &(rill_slice_masks){.begin = 2, .end = 3}, "y");
    rill_output l = rill_sum(g, rill_square(g, y, NULL), NULL, -1, false, "l");
    rill_output dx;
    bool ok = CHECK(rill_gradients(g, &l, 1, &xo, 1, NULL, &dx));
    rill_graph_pop_device(g);
    rill_session *sess = ok ? rill_session_new(g, NULL, s) : NULL;
    rill_output f[2] = {y, dx};
    ok = ok && CHECK(sess != NULL) &&
         CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, f, out, 2, NULL, 0, s), RILL_OK);
    if (!ok) fprintf(stderr, "  %s: %s\n", dev, rill_status_message(s));
    rill_session_free(sess);
    rill_status_free(s);
    rill_graph_free(g);
    return ok;
}

static void test_session(void)
{
    rill_tensor *x = bo_random(RILL_FLOAT, (int64_t[]){6, 9}, 2, -1, 1);
    rill_tensor *cpu[2] = {NULL, NULL}, *gpu[2] = {NULL, NULL};
    if (run_session("/cpu:0", x, cpu) && run_session("/gpu:0", x, gpu))
        for (int i = 0; i < 2; i++) {
            rill_tensor *a = bo_to_host(cpu[i]), *b = bo_to_host(gpu[i]);
            if (CHECK(a && b) && CHECK_EQ_INT(rill_tensor_nbytes(a), rill_tensor_nbytes(b)))
                CHECK(memcmp(rill_tensor_data(a), rill_tensor_data(b), rill_tensor_nbytes(a)) == 0);
            rill_tensor_free(a);
            rill_tensor_free(b);
        }
    bo_free_all(cpu, 2);
    bo_free_all(gpu, 2);
    rill_tensor_free(x);
}

int main(void)
{
    if (!getenv("POCL_CACHE_DIR")) setenv("POCL_CACHE_DIR", "/tmp/rill-pocl-cache", 0);
    bo_seed(20261201);
    test_registrations();
    bo_skip_without_device(); /* exits 77 without one */
    test_slices();
    test_errors();
    test_session();
    TEST_MAIN_END();
}
