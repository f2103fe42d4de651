/* test_opencl_math.c - the OpenCL math and array kernels (src/kernels/opencl/cl_math.c) against
 * the CPU kernels, through the backend_ops.h harness.
 *
 * Every op runs for float, double and half over representative shapes: broadcasting in every
 * direction, scalars, empty tensors, odd sizes that straddle the 16x16 MatMul tiles, and
 * 1000x1000 for the elementwise ops, the reductions and MatMul. The integer kernels (the CPU
 * functions, registered with everything in host memory) run for int32 and int64, and every
 * run-time error the CPU kernel reports must come back from OpenCL with the same code.
 * Without an OpenCL device nothing is compared: the test reports itself skipped (exit 77). */
#include "backend_ops.h"

#include <time.h>

static const rill_dtype flt[3] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};
static const rill_dtype ints[2] = {RILL_INT32, RILL_INT64};

/* A shape for a test case. SH(2, 3) is [2,3]; SH0 is a scalar. */
typedef struct sh {
    int rank;
    int64_t d[RILL_MAX_DIMS];
} sh;
#define SH(...)                                                                                    \
    ((sh){.rank = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), .d = {__VA_ARGS__}})
#define SH0 ((sh){.rank = 0})

static rill_tensor *rnd(rill_dtype t, sh s, double lo, double hi)
{
    return bo_random(t, s.d, s.rank, lo, hi);
}

/* An int32 or int64 vector holding a shape's dims (the shape inputs of Reshape, Fill, ...). */
static rill_tensor *dims_tensor(rill_dtype t, sh s)
{
    double v[RILL_MAX_DIMS];
    for (int i = 0; i < s.rank; i++) v[i] = (double)s.d[i];
    int64_t n = s.rank;
    return bo_tensor(t, &n, 1, v);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* --- registrations --- */

static void test_registrations(void)
{
#ifndef RILL_HAVE_OPENCL
    return; /* no OpenCL backend built: nothing registered */
#endif
    static const char *const flt_ops[] = {
        "Add",        "Sub",         "Mul",      "Div",        "Maximum", "Minimum", "Neg",  "Square",
        "Sqrt",       "Exp",         "Log",      "AddN",       "Sum",     "Mean", "SumToShape",
        "ReduceGrad", "MaximumGrad", "SqrtGrad", "MatMul",     "Cast",    "Fill", "ZerosLike",
        "OnesLike",   "Identity",    "Reshape",  "ExpandDims", "Shape",
    };
    static const char *const int_ops[] = {
        "Add",    "Sub",  "Mul",      "Div",        "Maximum",   "Minimum", "Neg",
        "Square", "AddN", "Sum",      "Mean",       "Reshape",   "Shape",
        "Fill",   "Cast", "Identity", "ExpandDims", "ZerosLike", "OnesLike",
    };
    for (size_t i = 0; i < sizeof flt_ops / sizeof *flt_ops; i++)
        for (int j = 0; j < 3; j++) {
            const rill__kernel_def *k = rill__kernel_lookup(flt_ops[i], "OPENCL", flt[j]);
            if (!CHECK(k != NULL && k->dtype == flt[j]))
                fprintf(stderr, "  no OPENCL %s for %s\n", flt_ops[i], rill_dtype_name(flt[j]));
        }
    for (size_t i = 0; i < sizeof int_ops / sizeof *int_ops; i++)
        for (int j = 0; j < 2; j++) {
            const rill__kernel_def *k = rill__kernel_lookup(int_ops[i], "OPENCL", ints[j]);
            if (!CHECK(k != NULL && k->dtype == ints[j] && k->host_memory_inputs == 0xffffffffu &&
                       k->host_memory_outputs == 0xffffffffu))
                fprintf(stderr, "  OPENCL %s for %s: missing or not all host memory\n", int_ops[i],
                        rill_dtype_name(ints[j]));
        }
    /* TensorFlow's host-memory arguments on the GPU. */
    CHECK_EQ_INT(rill__kernel_lookup("Reshape", "OPENCL", RILL_FLOAT)->host_memory_inputs, 2);
    CHECK_EQ_INT(rill__kernel_lookup("Fill", "OPENCL", RILL_FLOAT)->host_memory_inputs, 1);
    CHECK_EQ_INT(rill__kernel_lookup("Shape", "OPENCL", RILL_HALF)->host_memory_outputs, 1);
    CHECK_EQ_INT(rill__kernel_lookup("SumToShape", "OPENCL", RILL_FLOAT)->host_memory_inputs, 2);
    CHECK_EQ_INT(rill__kernel_lookup("ReduceGrad", "OPENCL", RILL_DOUBLE)->host_memory_inputs, 2);
    CHECK_EQ_INT(rill__kernel_lookup("Add", "OPENCL", RILL_FLOAT)->host_memory_inputs, 0);
}

/* --- binary ops --- */

typedef rill_output (*bin_fn)(rill_graph *, rill_output, rill_output, const char *);
static const struct {
    const char *name;
    bin_fn fn;
} bins[] = {
    {"Add", rill_add}, {"Sub", rill_sub},         {"Mul", rill_mul},
    {"Div", rill_div}, {"Maximum", rill_maximum}, {"Minimum", rill_minimum},
};

static void check_bin(int op, rill_dtype t, sh a, sh b)
{
    rill_graph *g = rill_graph_new();
    bool div = bins[op].fn == rill_div;
    rill_tensor *in[2] = {rnd(t, a, -3, 3), rnd(t, b, div ? 0.5 : -3, div ? 2 : 3)};
    rill_output y = bins[op].fn(g, bo_placeholder(g, in[0]), bo_placeholder(g, in[1]), NULL);
    bo_check(y.node, in, -1);
    bo_free_all(in, 2);
    rill_graph_free(g);
}

static void test_binary(void)
{
    const sh pairs[][2] = {
        {SH(2, 3), SH(2, 3)},
        {SH0, SH(4, 5)},
        {SH(4, 5), SH0},
        {SH0, SH0},
        {SH(3, 1), SH(1, 4)},
        {SH(2, 3, 4), SH(3, 1)},
        {SH(5), SH(2, 1, 5)},
        {SH(1, 1), SH(1)},
        {SH(2, 1, 3), SH(2, 4, 1)},
        {SH(1, 3, 1, 5), SH(2, 1, 4, 1)},
        {SH(0, 3), SH(3)},
        {SH(0), SH0},
        {SH(2, 0), SH(1, 0)},
        {SH(1, 37), SH(37)},
        {SH(7), SH(1, 7)},
        {SH(1000, 1000), SH(1000, 1000)},
        {SH(1000, 1000), SH(1000)},
        {SH(1000, 1), SH(1000)},
    };
    for (size_t op = 0; op < sizeof bins / sizeof *bins; op++)
        for (int j = 0; j < 3; j++)
            for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++)
                check_bin((int)op, flt[j], pairs[p][0], pairs[p][1]);
    /* The integer kernels run on the host. */
    for (size_t op = 0; op < sizeof bins / sizeof *bins; op++)
        for (int j = 0; j < 2; j++) {
            check_bin((int)op, ints[j], SH(3, 4), SH(4));
            check_bin((int)op, ints[j], SH0, SH(5));
        }
}

/* Maximum lets a NaN through from either side, as the CPU kernel does. */
static void test_maximum_nan(void)
{
    for (int j = 0; j < 3; j++) {
        rill_graph *g = rill_graph_new();
        int64_t n = 4;
        double a[4] = {NAN, 1, NAN, -2}, b[4] = {0, NAN, NAN, 3};
        rill_tensor *in[2] = {bo_tensor(flt[j], &n, 1, a), bo_tensor(flt[j], &n, 1, b)};
        rill_output y = rill_maximum(g, bo_placeholder(g, in[0]), bo_placeholder(g, in[1]), NULL);
        bo_check(y.node, in, 0);
        bo_free_all(in, 2);
        rill_graph_free(g);
    }
}

static void test_binary_errors(void)
{
    for (int j = 0; j < 3; j++)
        for (size_t op = 0; op < sizeof bins / sizeof *bins; op++) {
            rill_graph *g = rill_graph_new();
            rill_tensor *in[2] = {rnd(flt[j], SH(2, 3), 1, 2), rnd(flt[j], SH(4), 1, 2)};
            rill_output y =
                bins[op].fn(g, bo_placeholder_any(g, flt[j]), bo_placeholder_any(g, flt[j]), NULL);
            bo_check_error(y.node, in, RILL_INVALID_ARGUMENT, "Incompatible shapes: [2,3] vs. [4]");
            bo_free_all(in, 2);
            rill_graph_free(g);
        }
    for (int j = 0; j < 2; j++) {
        rill_graph *g = rill_graph_new();
        int64_t n = 3;
        double a[3] = {1, 2, 3}, b[3] = {1, 0, 2};
        rill_tensor *in[2] = {bo_tensor(ints[j], &n, 1, a), bo_tensor(ints[j], &n, 1, b)};
        rill_output y = rill_div(g, bo_placeholder(g, in[0]), bo_placeholder(g, in[1]), NULL);
        bo_check_error(y.node, in, RILL_INVALID_ARGUMENT, "Integer division by zero");
        bo_free_all(in, 2);
        rill_graph_free(g);
    }
}

/* --- unary ops --- */

typedef rill_output (*un_fn)(rill_graph *, rill_output, const char *);
static const struct {
    const char *name;
    un_fn fn;
    double lo, hi;
    bool ints;
} uns[] = {
    {"Neg", rill_neg, -3, 3, true},    {"Square", rill_square, -3, 3, true},
    {"Sqrt", rill_sqrt, 0, 4, false},  {"Exp", rill_exp, -4, 4, false},
    {"Log", rill_log, 0.05, 8, false},
};

static void check_un(int op, rill_dtype t, sh s)
{
    rill_graph *g = rill_graph_new();
    rill_tensor *in[1] = {rnd(t, s, uns[op].lo, uns[op].hi)};
    rill_output y = uns[op].fn(g, bo_placeholder(g, in[0]), NULL);
    bo_check(y.node, in, -1);
    bo_free_all(in, 1);
    rill_graph_free(g);
}

static void test_unary(void)
{
    const sh shapes[] = {SH0, SH(7), SH(3, 4, 5), SH(0, 2), SH(1000, 1000)};
    for (size_t op = 0; op < sizeof uns / sizeof *uns; op++) {
        for (int j = 0; j < 3; j++)
            for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
                check_un((int)op, flt[j], shapes[s]);
        if (uns[op].ints)
            for (int j = 0; j < 2; j++) check_un((int)op, ints[j], SH(3, 4));
    }
    /* log(0) = -inf, sqrt(-1) = NaN on both. */
    for (int j = 0; j < 3; j++) {
        rill_graph *g = rill_graph_new();
        int64_t n = 3;
        double v[3] = {0, -1, 4};
        rill_tensor *in[1] = {bo_tensor(flt[j], &n, 1, v)};
        bo_check(rill_log(g, bo_placeholder(g, in[0]), NULL).node, in, -1);
        bo_check(rill_sqrt(g, bo_placeholder(g, in[0]), NULL).node, in, -1);
        bo_free_all(in, 1);
        rill_graph_free(g);
    }
}

/* --- AddN --- */

static void check_add_n(rill_dtype t, int n, sh s)
{
    rill_graph *g = rill_graph_new();
    rill_tensor *in[BO_MAX_IO] = {0};
    rill_output xs[BO_MAX_IO];
    for (int i = 0; i < n; i++) {
        in[i] = rnd(t, s, -2, 2);
        xs[i] = bo_placeholder(g, in[i]);
    }
    /* rill_add_n hands back a lone input unchanged: build AddN itself. */
    rill_node *node = rill__node_create(g, "AddN", NULL, xs, n, NULL, 0);
    bo_check(node, in, -1);
    bo_free_all(in, n);
    rill_graph_free(g);
}

static void test_add_n(void)
{
    const int counts[] = {1, 2, 3, 8, 9, 16};
    const sh shapes[] = {SH0, SH(3, 5), SH(0, 4), SH(1000, 1000)};
    for (int j = 0; j < 3; j++)
        for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
            for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
                if (shapes[s].rank == 2 && shapes[s].d[0] == 1000 && counts[c] > 3) continue;
                check_add_n(flt[j], counts[c], shapes[s]);
            }
    for (int j = 0; j < 2; j++) check_add_n(ints[j], 3, SH(2, 3));
    /* Shapes that disagree at run time. */
    for (int j = 0; j < 3; j++) {
        rill_graph *g = rill_graph_new();
        rill_tensor *in[3] = {rnd(flt[j], SH(2, 3), 0, 1), rnd(flt[j], SH(2, 3), 0, 1),
                              rnd(flt[j], SH(3, 2), 0, 1)};
        rill_output xs[3];
        for (int i = 0; i < 3; i++) xs[i] = bo_placeholder_any(g, flt[j]);
        rill_node *node = rill__node_create(g, "AddN", NULL, xs, 3, NULL, 0);
        bo_check_error(node, in, RILL_INVALID_ARGUMENT, "Input 0: [2,3] != input 2: [3,2]");
        bo_free_all(in, 3);
        rill_graph_free(g);
    }
}

/* --- Sum and Mean --- */

static void check_reduce(bool mean, rill_dtype t, sh s, const int *axes, int naxes, bool keep,
                         double lo, double hi)
{
    rill_graph *g = rill_graph_new();
    rill_tensor *in[1] = {rnd(t, s, lo, hi)};
    rill_output x = bo_placeholder(g, in[0]);
    rill_output y =
        mean ? rill_mean(g, x, axes, naxes, keep, NULL) : rill_sum(g, x, axes, naxes, keep, NULL);
    bo_check(y.node, in, -1);
    bo_free_all(in, 1);
    rill_graph_free(g);
}

static void test_reductions(void)
{
    static const struct {
        sh s;
        int naxes; /* -1: all axes (no attr) */
        int axes[4];
    } cases[] = {
        {SH(2, 3, 4), -1, {0}},
        {SH(2, 3, 4), 1, {0}},
        {SH(2, 3, 4), 1, {1}},
        {SH(2, 3, 4), 1, {2}},
        {SH(2, 3, 4), 2, {0, 2}},
        {SH(2, 3, 4), 1, {-1}},
        {SH(2, 3, 4), 2, {1, 2}},
        {SH(2, 3, 4), 3, {0, 1, 2}},
        {SH(2, 3, 4), 0, {0}},
        {SH(5, 1, 7), 1, {1}},
        {SH(3, 200), 1, {1}},
        {SH(300, 5), 1, {0}},
        {SH(2, 3, 4, 5), 2, {1, 3}},
        {SH0, -1, {0}},
        {SH(7), -1, {0}},
        {SH(0, 3), 1, {0}},
        {SH(0, 3), 1, {1}},
        {SH(0, 3), -1, {0}},
        {SH(1000, 1000), -1, {0}},
        {SH(1000, 1000), 1, {0}},
        {SH(1000, 1000), 1, {1}},
    };
    for (int mean = 0; mean < 2; mean++)
        for (int j = 0; j < 3; j++)
            for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
                for (int keep = 0; keep < 2; keep++)
                    check_reduce(mean, flt[j], cases[c].s,
                                 cases[c].naxes < 0 ? NULL : cases[c].axes, cases[c].naxes, keep, 0,
                                 1);
    for (int mean = 0; mean < 2; mean++)
        for (int j = 0; j < 2; j++) {
            int ax[1] = {1};
            check_reduce(mean, ints[j], SH(3, 4), ax, 1, false, -5, 5);
            check_reduce(mean, ints[j], SH(3, 4), NULL, -1, true, -5, 5);
        }
    /* An axis out of range, caught at run time when the rank was unknown at build time. */
    for (int mean = 0; mean < 2; mean++)
        for (int j = 0; j < 3; j++) {
            rill_graph *g = rill_graph_new();
            rill_tensor *in[1] = {rnd(flt[j], SH(2, 3), 0, 1)};
            int ax[1] = {2};
            rill_output x = bo_placeholder_any(g, flt[j]);
            rill_output y =
                mean ? rill_mean(g, x, ax, 1, false, NULL) : rill_sum(g, x, ax, 1, false, NULL);
            bo_check_error(y.node, in, RILL_INVALID_ARGUMENT, "Invalid reduction dimension");
            bo_free_all(in, 1);
            rill_graph_free(g);
        }
}

/* --- gradient helpers --- */

static rill_node *sum_to_shape_node(rill_graph *g, rill_tensor *const *in)
{
    rill_output xs[2] = {bo_placeholder_any(g, in[0]->dtype), bo_placeholder(g, in[1])};
    return rill__node_create(g, "SumToShape", NULL, xs, 2, NULL, 0);
}

static void test_sum_to_shape(void)
{
    static const struct {
        sh g, target;
    } cases[] = {
        {SH(2, 3, 4), SH(3, 4)},    {SH(2, 3, 4), SH(1, 4)},    {SH(2, 3, 4), SH(2, 1, 4)},
        {SH(2, 3, 4), SH(4)},       {SH(2, 3, 4), SH0},         {SH(2, 3, 4), SH(2, 3, 4)},
        {SH(2, 3, 4), SH(1, 1, 1)}, {SH(2, 3, 4), SH(2, 3, 1)}, {SH(0, 3), SH(3)},
        {SH(5, 0), SH(1, 0)},       {SH(1000, 1000), SH(1000)}, {SH(1000, 1000), SH(1000, 1)},
    };
    for (int j = 0; j < 3; j++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            for (int it = 0; it < 2; it++) {
                rill_graph *g = rill_graph_new();
                rill_tensor *in[2] = {rnd(flt[j], cases[c].g, -1, 1),
                                      dims_tensor(it ? RILL_INT64 : RILL_INT32, cases[c].target)};
                bo_check(sum_to_shape_node(g, in), in, -1);
                bo_free_all(in, 2);
                rill_graph_free(g);
            }
    for (int j = 0; j < 3; j++) {
        rill_graph *g = rill_graph_new();
        rill_tensor *in[2] = {rnd(flt[j], SH(2, 3), -1, 1), dims_tensor(RILL_INT32, SH(4))};
        bo_check_error(sum_to_shape_node(g, in), in, RILL_INVALID_ARGUMENT,
                       "cannot sum a gradient of shape [2,3] to shape [4]");
        bo_free_all(in, 2);
        rill_graph_free(g);
        g = rill_graph_new();
        in[0] = rnd(flt[j], SH(3), -1, 1);
        in[1] = dims_tensor(RILL_INT32, SH(2, 3));
        bo_check_error(sum_to_shape_node(g, in), in, RILL_INVALID_ARGUMENT, "cannot sum");
        bo_free_all(in, 2);
        rill_graph_free(g);
        g = rill_graph_new();
        int64_t two[2] = {1, 1};
        in[0] = rnd(flt[j], SH(3), -1, 1);
        in[1] = bo_tensor(RILL_INT32, two, 2, NULL);
        bo_check_error(sum_to_shape_node(g, in), in, RILL_INVALID_ARGUMENT, "bad shape input");
        bo_free_all(in, 2);
        rill_graph_free(g);
    }
}

static rill_node *reduce_grad_node(rill_graph *g, rill_tensor *const *in, const int64_t *axes,
                                   int naxes, bool keep, bool mean)
{
    rill__attr a[3];
    int na = 0;
    if (naxes >= 0) a[na++] = RILL__A_INTS("axes", naxes, axes);
    a[na++] = RILL__A_BOOL("keep_dims", keep);
    a[na++] = RILL__A_BOOL("mean", mean);
    rill_output xs[2] = {bo_placeholder_any(g, in[0]->dtype), bo_placeholder(g, in[1])};
    return rill__node_create(g, "ReduceGrad", NULL, xs, 2, a, na);
}

static void test_reduce_grad(void)
{
    static const struct {
        sh dy, x;
        int naxes;
        int64_t axes[3];
        bool keep;
    } cases[] = {
        {SH(2, 4), SH(2, 3, 4), 1, {1}, false},    {SH(2, 1, 4), SH(2, 3, 4), 1, {1}, true},
        {SH0, SH(2, 3, 4), -1, {0}, false},        {SH(1, 1, 1), SH(2, 3, 4), -1, {0}, true},
        {SH(3), SH(2, 3, 4), 2, {0, -1}, false},   {SH(2, 3, 4), SH(2, 3, 4), 0, {0}, false},
        {SH(3), SH(0, 3), 1, {0}, false},          {SH(0), SH(0, 3), 1, {1}, false},
        {SH(1000), SH(1000, 1000), 1, {1}, false}, {SH0, SH(1000, 1000), -1, {0}, false},
    };
    for (int j = 0; j < 3; j++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            for (int mean = 0; mean < 2; mean++) {
                rill_graph *g = rill_graph_new();
                rill_tensor *in[2] = {rnd(flt[j], cases[c].dy, -1, 1),
                                      dims_tensor(RILL_INT32, cases[c].x)};
                bo_check(
                    reduce_grad_node(g, in, cases[c].axes, cases[c].naxes, cases[c].keep, mean), in,
                    -1);
                bo_free_all(in, 2);
                rill_graph_free(g);
            }
    for (int j = 0; j < 3; j++) {
        rill_graph *g = rill_graph_new();
        int64_t ax[1] = {1};
        rill_tensor *in[2] = {rnd(flt[j], SH(5), -1, 1), dims_tensor(RILL_INT32, SH(2, 3, 4))};
        bo_check_error(reduce_grad_node(g, in, ax, 1, false, false), in, RILL_INVALID_ARGUMENT,
                       "ReduceGrad: gradient has 5 elements, expected 8");
        rill_graph_free(g);
        g = rill_graph_new();
        ax[0] = 3;
        bo_check_error(reduce_grad_node(g, in, ax, 1, false, false), in, RILL_INVALID_ARGUMENT,
                       "Invalid reduction dimension");
        bo_free_all(in, 2);
        rill_graph_free(g);
    }
}

static rill_node *maximum_grad_node(rill_graph *g, rill_tensor *const *in)
{
    rill_output xs[3];
    for (int i = 0; i < 3; i++) xs[i] = bo_placeholder_any(g, in[i]->dtype);
    return rill__node_create(g, "MaximumGrad", NULL, xs, 3, NULL, 0);
}

static void test_maximum_grad(void)
{
    static const struct {
        sh x, y;
    } cases[] = {
        {SH(2, 3), SH(2, 3)},       {SH(2, 3), SH(3)}, {SH0, SH(4, 5)},
        {SH(3, 1), SH(1, 4)},       {SH0, SH0},        {SH(0, 3), SH(3)},
        {SH(1000, 1000), SH(1000)},
    };
    for (int j = 0; j < 3; j++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            rill__bcast bc;
            rill_shape xs = rill_shape_make(cases[c].x.rank, cases[c].x.d);
            rill_shape ys = rill_shape_make(cases[c].y.rank, cases[c].y.d);
            rill__bcast_init(&bc, &xs, &ys);
            rill_graph *g = rill_graph_new();
            rill_tensor *in[3] = {bo_random(flt[j], bc.out.dims, bc.out.rank, -1, 1),
                                  rnd(flt[j], cases[c].x, -1, 1), rnd(flt[j], cases[c].y, -1, 1)};
            bo_check(maximum_grad_node(g, in), in, -1);
            bo_free_all(in, 3);
            rill_graph_free(g);
        }
    /* Ties go left. */
    for (int j = 0; j < 3; j++) {
        rill_graph *g = rill_graph_new();
        int64_t n = 3;
        double one[3] = {1, 1, 1}, x[3] = {1, 2, 3}, y[3] = {1, 3, 2};
        rill_tensor *in[3] = {bo_tensor(flt[j], &n, 1, one), bo_tensor(flt[j], &n, 1, x),
                              bo_tensor(flt[j], &n, 1, y)};
        bo_check(maximum_grad_node(g, in), in, 0);
        bo_free_all(in, 3);
        rill_graph_free(g);
    }
    for (int j = 0; j < 3; j++) {
        rill_graph *g = rill_graph_new();
        rill_tensor *in[3] = {rnd(flt[j], SH(2, 3), -1, 1), rnd(flt[j], SH(2, 3), -1, 1),
                              rnd(flt[j], SH(4), -1, 1)};
        bo_check_error(maximum_grad_node(g, in), in, RILL_INVALID_ARGUMENT,
                       "MaximumGrad: shapes do not match");
        rill_tensor_free(in[2]);
        in[2] = rnd(flt[j], SH(3), -1, 1);
        rill_tensor_free(in[0]);
        in[0] = rnd(flt[j], SH(3), -1, 1); /* dy not in the broadcast shape */
        bo_check_error(maximum_grad_node(g, in), in, RILL_INVALID_ARGUMENT,
                       "MaximumGrad: shapes do not match");
        bo_free_all(in, 3);
        rill_graph_free(g);
    }
}

static void test_sqrt_grad(void)
{
    const sh shapes[] = {SH0, SH(7), SH(3, 4, 5), SH(0, 2), SH(1000, 1000)};
    for (int j = 0; j < 3; j++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            rill_graph *g = rill_graph_new();
            rill_tensor *in[2] = {rnd(flt[j], shapes[s], 0.25, 4), rnd(flt[j], shapes[s], -1, 1)};
            rill_output xs[2] = {bo_placeholder(g, in[0]), bo_placeholder(g, in[1])};
            bo_check(rill__node_create(g, "SqrtGrad", NULL, xs, 2, NULL, 0), in, -1);
            bo_free_all(in, 2);
            rill_graph_free(g);
        }
    for (int j = 0; j < 3; j++) {
        rill_graph *g = rill_graph_new();
        rill_tensor *in[2] = {rnd(flt[j], SH(2, 3), 1, 2), rnd(flt[j], SH(3), 1, 2)};
        rill_output xs[2] = {bo_placeholder_any(g, flt[j]), bo_placeholder_any(g, flt[j])};
        bo_check_error(rill__node_create(g, "SqrtGrad", NULL, xs, 2, NULL, 0), in,
                       RILL_INVALID_ARGUMENT, "SqrtGrad: shapes do not match");
        bo_free_all(in, 2);
        rill_graph_free(g);
    }
}

/* --- MatMul --- */

static void check_matmul(rill_dtype t, int64_t m, int64_t k, int64_t n, bool ta, bool tb)
{
    rill_graph *g = rill_graph_new();
    sh a = ta ? SH(k, m) : SH(m, k), b = tb ? SH(n, k) : SH(k, n);
    rill_tensor *in[2] = {rnd(t, a, -1, 1), rnd(t, b, -1, 1)};
    rill_output y =
        rill_matmul(g, bo_placeholder(g, in[0]), bo_placeholder(g, in[1]), ta, tb, NULL);
    /* half: the CPU rounds the inputs' float product once; long dot products in float on the
     * device differ from OpenBLAS's order by a few float ulps before that rounding. */
    bo_check(y.node, in, -1);
    bo_free_all(in, 2);
    rill_graph_free(g);
}

static void test_matmul(void)
{
    static const int64_t sizes[][3] = {
        {1, 1, 1},     {3, 5, 7}, {17, 33, 20}, {16, 16, 16}, {64, 64, 64}, {1, 100, 1},
        {100, 1, 100}, {0, 4, 5}, {4, 0, 5},    {4, 5, 0},    {31, 47, 15},
    };
    for (int j = 0; j < 3; j++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            for (int tr = 0; tr < 4; tr++)
                check_matmul(flt[j], sizes[s][0], sizes[s][1], sizes[s][2], tr & 1, tr & 2);
    double t0 = now();
    for (int j = 0; j < 3; j++) check_matmul(flt[j], 1000, 1000, 1000, false, false);
    check_matmul(RILL_FLOAT, 1000, 1000, 1000, true, false);
    check_matmul(RILL_FLOAT, 1000, 1000, 1000, false, true);
    check_matmul(RILL_FLOAT, 1000, 1000, 1000, true, true);
    printf("MatMul 1000x1000x1000 cases: %.2f s\n", now() - t0);
    for (int j = 0; j < 3; j++) {
        rill_graph *g = rill_graph_new();
        rill_tensor *in[2] = {rnd(flt[j], SH(2, 3), -1, 1), rnd(flt[j], SH(4, 2), -1, 1)};
        rill_output y = rill_matmul(g, bo_placeholder_any(g, flt[j]), bo_placeholder_any(g, flt[j]),
                                    false, false, NULL);
        bo_check_error(y.node, in, RILL_INVALID_ARGUMENT,
                       "Matrix size-incompatible: In[0]: [2,3], In[1]: [4,2]");
        bo_free_all(in, 2);
        in[0] = rnd(flt[j], SH(2, 3, 1), -1, 1);
        in[1] = rnd(flt[j], SH(3, 2), -1, 1);
        bo_check_error(y.node, in, RILL_INVALID_ARGUMENT, "must be matrices, got ranks 3 and 2");
        bo_free_all(in, 2);
        rill_graph_free(g);
    }
}

/* --- Cast, Fill, ZerosLike, OnesLike --- */

static void check_cast(rill_dtype from, rill_dtype to, sh s, double lo, double hi)
{
    rill_graph *g = rill_graph_new();
    rill_tensor *in[1] = {rnd(from, s, lo, hi)};
    /* Exact: every conversion rounds to nearest even (through float for half) or truncates
     * toward zero, on both backends. */
    bo_check(rill_cast(g, bo_placeholder(g, in[0]), to, NULL).node, in, 0);
    bo_free_all(in, 1);
    rill_graph_free(g);
}

static void test_cast(void)
{
    const rill_dtype all[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF,
                              RILL_INT32, RILL_INT64,  RILL_BOOL};
    const sh shapes[] = {SH0, SH(3, 4), SH(0, 5), SH(1000, 1000)};
    for (int j = 0; j < 3; j++)
        for (size_t k = 0; k < sizeof all / sizeof *all; k++)
            for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
                check_cast(flt[j], all[k], shapes[s], -100, 100);
    for (int j = 0; j < 2; j++)
        for (size_t k = 0; k < sizeof all / sizeof *all; k++)
            check_cast(ints[j], all[k], SH(3, 4), -1000, 1000);
}

static void test_fill(void)
{
    const sh shapes[] = {SH0, SH(3), SH(2, 3), SH(0, 4), SH(1000, 1000)};
    const rill_dtype vals[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF, RILL_INT32, RILL_INT64};
    for (size_t v = 0; v < sizeof vals / sizeof *vals; v++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int it = 0; it < 2; it++) {
                rill_graph *g = rill_graph_new();
                rill_tensor *in[2] = {dims_tensor(it ? RILL_INT64 : RILL_INT32, shapes[s]),
                                      rnd(vals[v], SH0, -7, 7)};
                rill_output y =
                    rill_fill(g, bo_placeholder(g, in[0]), bo_placeholder(g, in[1]), NULL);
                bo_check(y.node, in, 0);
                bo_free_all(in, 2);
                rill_graph_free(g);
            }
    for (int j = 0; j < 3; j++) {
        rill_graph *g = rill_graph_new();
        rill_tensor *in[2] = {dims_tensor(RILL_INT32, SH(2, -3)), rnd(flt[j], SH0, 0, 1)};
        rill_output y = rill_fill(g, bo_placeholder(g, in[0]), bo_placeholder_any(g, flt[j]), NULL);
        bo_check_error(y.node, in, RILL_INVALID_ARGUMENT, "Fill: dims[1] = -3 must be >= 0");
        rill_tensor_free(in[1]);
        in[1] = rnd(flt[j], SH(2), 0, 1);
        bo_check_error(y.node, in, RILL_INVALID_ARGUMENT, "value a scalar");
        bo_free_all(in, 2);
        rill_graph_free(g);
    }
}

static void test_fill_like(void)
{
    const sh shapes[] = {SH0, SH(3, 4), SH(0, 2), SH(1000, 1000)};
    const rill_dtype all[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF, RILL_INT32, RILL_INT64};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            rill_graph *g = rill_graph_new();
            rill_tensor *in[1] = {rnd(all[k], shapes[s], -5, 5)};
            rill_output x = bo_placeholder(g, in[0]);
            bo_check(rill_zeros_like(g, x, NULL).node, in, 0);
            bo_check(rill_ones_like(g, x, NULL).node, in, 0);
            bo_free_all(in, 1);
            rill_graph_free(g);
        }
}

/* --- Identity, Reshape, ExpandDims, Shape --- */

/* Runs the OPENCL kernel of n on device copies of the inputs (host-memory ones stay) and checks
 * that output 0 is a view of input 0's buffer. */
static void check_view(const rill_node *n, rill_tensor *const *inputs)
{
    rill__device *dev = bo_device();
    if (!dev) return;
    const rill__kernel_def *k =
        rill__kernel_lookup(n->op->name, "OPENCL", rill__node_kernel_dtype(n));
    if (!CHECK(k != NULL)) return;
    rill_status *s = rill_status_new();
    rill_tensor *in[2] = {0}, *out[1] = {0};
    for (int i = 0; i < n->ninputs; i++)
        in[i] = (k->host_memory_inputs & (1u << i)) ? rill_tensor_ref(inputs[i])
                                                    : rill__tensor_copy_to(inputs[i], dev, s);
    void *state = NULL;
    rill__kctx ctx = {.node = n,
                      .inputs = in,
                      .outputs = out,
                      .state = &state,
                      .device = dev,
                      .host_memory_outputs = k->host_memory_outputs};
    k->fn(&ctx);
    if (CHECK(ctx.status == NULL) && CHECK(out[0] != NULL)) {
        CHECK(out[0]->buf == in[0]->buf);
        CHECK(!rill__tensor_on_host(out[0]) || rill__tensor_on_host(in[0]));
    }
    rill_status_free(ctx.status);
    rill_tensor_free(out[0]);
    bo_free_all(in, n->ninputs);
    rill_status_free(s);
}

static void test_views(void)
{
    const rill_dtype all[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF, RILL_INT32, RILL_INT64};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++) {
        rill_dtype t = all[k];
        /* Identity */
        {
            rill_graph *g = rill_graph_new();
            rill_tensor *in[1] = {rnd(t, SH(3, 4), -5, 5)};
            rill_output y = rill_identity(g, bo_placeholder(g, in[0]), NULL);
            bo_check(y.node, in, 0);
            check_view(y.node, in);
            bo_free_all(in, 1);
            rill_graph_free(g);
        }
        /* Reshape, with -1 and to a scalar */
        static const struct {
            sh from, to;
        } rs[] = {
            {SH(2, 3, 4), SH(6, 4)}, {SH(2, 3, 4), SH(-1, 2)}, {SH(1), SH0},
            {SH(0, 3), SH(3, 0)},    {SH(1000, 1000), SH(-1)},
        };
        for (size_t r = 0; r < sizeof rs / sizeof *rs; r++)
            for (int it = 0; it < 2; it++) {
                rill_graph *g = rill_graph_new();
                rill_tensor *in[2] = {rnd(t, rs[r].from, -5, 5),
                                      dims_tensor(it ? RILL_INT64 : RILL_INT32, rs[r].to)};
                rill_output y =
                    rill_reshape_to(g, bo_placeholder(g, in[0]), bo_placeholder(g, in[1]), NULL);
                bo_check(y.node, in, 0);
                check_view(y.node, in);
                bo_free_all(in, 2);
                rill_graph_free(g);
            }
        /* ExpandDims */
        const int axes[] = {0, 1, 2, -1, -3};
        for (size_t a = 0; a < sizeof axes / sizeof *axes; a++) {
            rill_graph *g = rill_graph_new();
            rill_tensor *in[1] = {rnd(t, SH(3, 4), -5, 5)};
            rill_output y = rill_expand_dims(g, bo_placeholder(g, in[0]), axes[a], NULL);
            bo_check(y.node, in, 0);
            check_view(y.node, in);
            bo_free_all(in, 1);
            rill_graph_free(g);
        }
        /* Shape, int32 and int64 */
        const sh shapes[] = {SH0, SH(3, 4), SH(0, 2, 5)};
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int it = 0; it < 2; it++) {
                rill_graph *g = rill_graph_new();
                rill_tensor *in[1] = {rnd(t, shapes[s], -5, 5)};
                rill__attr at[] = {RILL__A_TYPE("out_type", it ? RILL_INT64 : RILL_INT32)};
                rill_output x = bo_placeholder(g, in[0]);
                bo_check(rill__node_create(g, "Shape", NULL, &x, 1, at, 1), in, 0);
                bo_free_all(in, 1);
                rill_graph_free(g);
            }
    }
    /* Run-time errors, with shapes unknown at build time. */
    for (int j = 0; j < 3; j++) {
        rill_graph *g = rill_graph_new();
        rill_tensor *in[2] = {rnd(flt[j], SH(2, 3), 0, 1), dims_tensor(RILL_INT32, SH(4, 2))};
        rill_output y = rill_reshape_to(g, bo_placeholder_any(g, flt[j]),
                                        bo_placeholder_any(g, RILL_INT32), NULL);
        bo_check_error(y.node, in, RILL_INVALID_ARGUMENT,
                       "Input to reshape is a tensor with 6 values, but the requested shape "
                       "[4,2] has 8");
        rill_tensor_free(in[1]);
        in[1] = dims_tensor(RILL_INT32, SH(-1, 4));
        bo_check_error(y.node, in, RILL_INVALID_ARGUMENT, "cannot be reshaped with a -1");
        rill_tensor_free(in[1]);
        in[1] = dims_tensor(RILL_INT32, SH(-2, 3));
        bo_check_error(y.node, in, RILL_INVALID_ARGUMENT, "Reshape: size 0 is -2");
        bo_free_all(in, 2);
        rill_graph_free(g);

        g = rill_graph_new();
        in[0] = rnd(flt[j], SH(2, 3), 0, 1);
        y = rill_expand_dims(g, bo_placeholder_any(g, flt[j]), 4, NULL);
        bo_check_error(y.node, in, RILL_INVALID_ARGUMENT, "ExpandDims: axis out of range");
        bo_free_all(in, 1);
        rill_graph_free(g);
    }
}

/* Kernels fail cleanly instead of crashing: double on a device without fp64 (placement avoids
 * it; the kernel guards direct use), and a device kernel handed a host tensor. */
static void test_guards(void)
{
    rill__device *dev = bo_device();
    if (!dev) return;
    rill_graph *g = rill_graph_new();
    rill_tensor *in[2] = {rnd(RILL_DOUBLE, SH(3), 0, 1), rnd(RILL_DOUBLE, SH(3), 0, 1)};
    rill_output y = rill_add(g, bo_placeholder(g, in[0]), bo_placeholder(g, in[1]), NULL);
    bool fp64 = dev->fp64;
    dev->fp64 = false;
    bo_result r;
    if (CHECK(bo_run(y.node, "OPENCL", dev, in, &r))) {
        CHECK_EQ_INT(r.code, RILL_UNIMPLEMENTED);
        CHECK_STR_CONTAINS(r.msg, "no double precision support");
    }
    bo_result_clear(&r);
    dev->fp64 = fp64;

    /* Host tensors straight into the OpenCL kernel. */
    const rill__kernel_def *k = rill__kernel_lookup("Add", "OPENCL", RILL_DOUBLE);
    rill_tensor *out[1] = {0};
    void *state = NULL;
    rill__kctx ctx = {.node = y.node, .inputs = in, .outputs = out, .state = &state, .device = dev};
    k->fn(&ctx);
    if (CHECK(ctx.status != NULL)) {
        CHECK_EQ_INT(rill_status_code(ctx.status), RILL_INTERNAL);
        CHECK_STR_CONTAINS(rill_status_message(ctx.status), "input 0 is not in");
    }
    rill_status_free(ctx.status);
    rill_tensor_free(out[0]);
    bo_free_all(in, 2);
    rill_graph_free(g);
}

#define TIMED(f)                                                                                   \
    do {                                                                                           \
        double t_ = now();                                                                         \
        f();                                                                                       \
        printf("%-20s %6.2f s\n", #f, now() - t_);                                                 \
    } while (0)

int main(void)
{
    bo_device(); /* before anything else enumerates devices */
    double t0 = now();
    TIMED(test_registrations);
    TIMED(test_binary);
    TIMED(test_maximum_nan);
    TIMED(test_binary_errors);
    TIMED(test_unary);
    TIMED(test_add_n);
    TIMED(test_reductions);
    TIMED(test_sum_to_shape);
    TIMED(test_reduce_grad);
    TIMED(test_maximum_grad);
    TIMED(test_sqrt_grad);
    TIMED(test_matmul);
    TIMED(test_cast);
    TIMED(test_fill);
    TIMED(test_fill_like);
    TIMED(test_views);
    TIMED(test_guards);
    printf("total %.2f s\n", now() - t0);
    /* Without a device only the registrations and the graph building were checked. */
    bo_skip_without_device();
    TEST_MAIN_END();
}
