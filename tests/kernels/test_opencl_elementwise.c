/* test_opencl_elementwise.c - the OpenCL kernels of the element-wise ops
 * (src/kernels/opencl/cl_elementwise.c) against the CPU's (cpu_elementwise.c): every float
 * unary op, IsNan / IsInf / IsFinite, every float binary op and gradient helper, the
 * comparisons and Select / SelectV2, for float, double and half, over several shapes (odd sizes,
 * scalars, empty tensors, broadcasting both ways), with special values (NaN, infinities, halves,
 * ties) where they matter; the integer and bool entries that run the CPU kernels in host memory;
 * the run-time errors; and a few gradients through a graph placed on /gpu:0 against /cpu:0. */
#include "backend_ops.h"

#include <rill/train.h>

static const rill_dtype flt[3] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};

static rill_node *op(rill_graph *g, const char *type, rill_tensor *const *in, int n,
                     const rill__attr *a, int na)
{
    rill_output x[3];
    for (int i = 0; i < n; i++) x[i] = bo_placeholder(g, in[i]);
    rill_node *nd = rill__node_create(g, type, NULL, x, n, a, na);
    if (!nd) fprintf(stderr, "  %s: %s\n", type, rill_status_message(rill_graph_status(g)));
    return nd;
}

/* Moves every element of t at least m away from zero, keeping its sign. */
static void away_from_zero(rill_tensor *t, double m)
{
    for (int64_t i = 0; i < rill_tensor_num_elements(t); i++) {
        double v = rill_tensor_get_double(t, i);
        if (fabs(v) < m) bo__set(t, i, v < 0 ? v - m : v + m);
    }
}

/* Rounds every element of t to a multiple of q (so that ties, equalities and zeros occur). */
static void quantise(rill_tensor *t, double q)
{
    for (int64_t i = 0; i < rill_tensor_num_elements(t); i++)
        bo__set(t, i, floor(rill_tensor_get_double(t, i) / q) * q);
}

typedef struct un_case {
    const char *op;
    double lo, hi;
} un_case;

static const un_case unary_ops[] = {
    {"Abs", -3, 3},      {"Sign", -3, 3},         {"Rsqrt", 0.1, 4},     {"Reciprocal", 0.2, 3},
    {"Inv", -3, -0.2},   {"Round", -4, 4},        {"Rint", -4, 4},       {"Floor", -4, 4},
    {"Ceil", -4, 4},     {"Log1p", -0.9, 3},      {"Expm1", -3, 3},      {"Softplus", -20, 20},
    {"Softsign", -3, 3}, {"Elu", -3, 3},          {"Selu", -3, 3},       {"LeakyRelu", -3, 3},
    {"Relu6", -2, 8},    {"Erf", -3, 3},          {"Erfc", -3, 3},       {"Sin", -5, 5},
    {"Cos", -5, 5},      {"Tan", -1.4, 1.4},      {"Asin", -0.95, 0.95}, {"Acos", -0.95, 0.95},
    {"Atan", -5, 5},     {"Sinh", -3, 3},         {"Cosh", -3, 3},       {"Asinh", -5, 5},
    {"Acosh", 1.1, 5},   {"Atanh", -0.9, 0.9},    {"Lgamma", 0.1, 6},    {"Lgamma", -2.9, -2.1},
    {"Digamma", 0.1, 6}, {"Digamma", -2.9, -2.1},
};

typedef struct bin_case {
    const char *op;
    double xlo, xhi, ylo, yhi;
    int fix; /* 1: y away from 0, 2: x quantised (zeros), 3: both quantised */
} bin_case;

static const bin_case binary_ops[] = {
    {"Pow", 0.1, 3, -2, 2, 0},           {"FloorDiv", -5, 5, -3, 3, 1},
    {"FloorMod", -5, 5, -3, 3, 1},       {"TruncateMod", -5, 5, -3, 3, 1},
    {"RealDiv", -5, 5, -3, 3, 1},        {"SquaredDifference", -3, 3, -3, 3, 0},
    {"Atan2", -3, 3, -3, 3, 0},          {"Xdivy", -2, 2, -3, 3, 2},
    {"Xlogy", -2, 2, 0.1, 3, 2},         {"RsqrtGrad", 0.1, 2, -2, 2, 0},
    {"ReciprocalGrad", -2, 2, -2, 2, 0}, {"InvGrad", -2, 2, -2, 2, 0},
    {"SoftplusGrad", -2, 2, -10, 10, 0}, {"SoftsignGrad", -2, 2, -3, 3, 0},
    {"EluGrad", -2, 2, -1, 3, 0},        {"SeluGrad", -2, 2, -1.7, 3, 0},
    {"Relu6Grad", -2, 2, -2, 8, 3},      {"LeakyReluGrad", -2, 2, -2, 2, 3},
    {"Less", -2, 2, -2, 2, 3},           {"LessEqual", -2, 2, -2, 2, 3},
    {"Greater", -2, 2, -2, 2, 3},        {"GreaterEqual", -2, 2, -2, 2, 3},
    {"NotEqual", -2, 2, -2, 2, 3},
};

static const rill__attr alpha_attr[] = {RILL__A_FLOAT("alpha", 0.3)};

static int nattrs_of(const char *name)
{
    return strncmp(name, "LeakyRelu", 9) == 0 ? 1 : 0;
}

static void test_unary(void)
{
    static const int64_t shapes[][3] = {{2, 3, 4}, {129, 1, 1}, {1, 1, 1}, {0, 3, 1}};
    static const int ranks[] = {3, 1, 0, 2};
    for (size_t o = 0; o < sizeof unary_ops / sizeof *unary_ops; o++)
        for (int s = 0; s < 4; s++)
            for (int ti = 0; ti < 3; ti++) {
                const un_case *u = &unary_ops[o];
                rill_tensor *in[1] = {bo_random(flt[ti], shapes[s], ranks[s], u->lo, u->hi)};
                if (!strcmp(u->op, "Round") || !strcmp(u->op, "Rint") || !strcmp(u->op, "Floor") ||
                    !strcmp(u->op, "Ceil") || !strcmp(u->op, "Sign"))
                    quantise(in[0], 0.5); /* ties and zeros */
                rill_graph *g = rill_graph_new();
                bo_check(op(g, u->op, in, 1, alpha_attr, nattrs_of(u->op)), in,
                         flt[ti] == RILL_HALF ? 2e-5 : 1e-6);
                bo_free_all(in, 1);
                rill_graph_free(g);
            }
}

/* NaN, infinities, signed zeros and ties through the unary ops and the predicates. */
static void test_special(void)
{
    static const double v[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5,
                               1,   -1,       3.25,      7,   -7,   100, 1e-3, 6,   -6,  0.25};
    int64_t n = (int64_t)(sizeof v / sizeof *v);
    static const char *const ops[] = {"Abs",      "Sign",  "Round", "Rint", "Floor", "Ceil",
                                      "Softsign", "Relu6", "Elu",   "Selu", "IsNan", "IsInf",
                                      "IsFinite", "Atan",  "Erf",   "Tanh"};
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
        for (int ti = 0; ti < 3; ti++) {
            rill_tensor *in[1] = {bo_tensor(flt[ti], &n, 1, v)};
            rill_graph *g = rill_graph_new();
            bo_check(op(g, ops[o], in, 1, NULL, 0), in, 1e-6);
            bo_free_all(in, 1);
            rill_graph_free(g);
        }
}

static void test_binary(void)
{
    static const struct {
        int ra, rb;
        int64_t a[3], b[3];
    } shapes[] = {
        {3, 3, {2, 3, 4}, {2, 3, 4}}, {3, 1, {2, 3, 4}, {4}},
        {3, 3, {5, 1, 3}, {1, 7, 1}}, {0, 2, {0}, {3, 5}},
        {2, 0, {33, 17}, {0}},        {1, 1, {1}, {129}},
        {2, 2, {33, 17}, {33, 1}},    {2, 3, {0, 3}, {2, 1, 3}},
        {2, 2, {13, 11}, {13, 11}},   {1, 1, {0}, {0}},
    };
    for (size_t o = 0; o < sizeof binary_ops / sizeof *binary_ops; o++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int ti = 0; ti < 3; ti++) {
                const bin_case *b = &binary_ops[o];
                /* the gradient helpers take equal shapes */
                if (strstr(b->op, "Grad") &&
                    (shapes[s].ra != shapes[s].rb ||
                     memcmp(shapes[s].a, shapes[s].b, sizeof shapes[s].a) != 0))
                    continue;
                rill_tensor *in[2] = {
                    bo_random(flt[ti], shapes[s].a, shapes[s].ra, b->xlo, b->xhi),
                    bo_random(flt[ti], shapes[s].b, shapes[s].rb, b->ylo, b->yhi)};
                if (b->fix == 1) away_from_zero(in[1], 0.5);
                if (b->fix >= 2) quantise(in[0], 0.5);
                if (b->fix == 3) quantise(in[1], 0.5);
                rill_graph *g = rill_graph_new();
                bo_check(op(g, b->op, in, 2, alpha_attr, nattrs_of(b->op)), in,
                         flt[ti] == RILL_HALF ? 2e-5 : 1e-6);
                bo_free_all(in, 2);
                rill_graph_free(g);
            }
    /* special values on both sides */
    static const double x[] = {NAN, 1, INFINITY, -INFINITY, 0, 0, 2, -2, 0, 3};
    static const double y[] = {1, NAN, 2, 2, NAN, 0, INFINITY, -3, 2, 3};
    int64_t n = 10;
    static const char *const ops[] = {"Less",     "LessEqual", "Greater", "GreaterEqual",
                                      "NotEqual", "Xdivy",     "Xlogy",   "SquaredDifference",
                                      "FloorMod", "Pow"};
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
        for (int ti = 0; ti < 3; ti++) {
            rill_tensor *in[2] = {bo_tensor(flt[ti], &n, 1, x), bo_tensor(flt[ti], &n, 1, y)};
            rill_graph *g = rill_graph_new();
            bo_check(op(g, ops[o], in, 2, NULL, 0), in, 1e-6);
            bo_free_all(in, 2);
            rill_graph_free(g);
        }
}

static void test_select(void)
{
    for (int ti = 0; ti < 3; ti++) {
        /* Select: the same shape, a scalar, a vector over the first dim */
        static const int64_t xs[3] = {5, 3, 7}, cs_vec[1] = {5};
        rill_tensor *c3 = bo_random(RILL_BOOL, xs, 3, 0, 1),
                    *cv = bo_random(RILL_BOOL, cs_vec, 1, 0, 1);
        rill_tensor *cs = bo_random(RILL_BOOL, NULL, 0, 0, 1);
        rill_tensor *conds[3] = {c3, cv, cs};
        for (int k = 0; k < 3; k++) {
            rill_tensor *in[3] = {conds[k], bo_random(flt[ti], xs, 3, -2, 2),
                                  bo_random(flt[ti], xs, 3, -2, 2)};
            rill_graph *g = rill_graph_new();
            bo_check(op(g, "Select", in, 3, NULL, 0), in, 0);
            rill_tensor_free(in[1]);
            rill_tensor_free(in[2]);
            rill_graph_free(g);
        }
        bo_free_all(conds, 3);
        /* SelectV2 broadcasting all three */
        static const struct {
            int rc, rx, ry;
            int64_t c[3], x[3], y[3];
        } v2[] = {
            {2, 2, 2, {3, 1}, {1, 4}, {3, 4}},
            {0, 3, 1, {0}, {2, 3, 5}, {5}},
            {3, 2, 0, {2, 3, 5}, {3, 5}, {0}},
            {1, 3, 3, {9}, {4, 1, 9}, {1, 2, 1}},
        };
        for (size_t k = 0; k < sizeof v2 / sizeof *v2; k++) {
            rill_tensor *in[3] = {bo_random(RILL_BOOL, v2[k].c, v2[k].rc, 0, 1),
                                  bo_random(flt[ti], v2[k].x, v2[k].rx, -2, 2),
                                  bo_random(flt[ti], v2[k].y, v2[k].ry, -2, 2)};
            rill_graph *g = rill_graph_new();
            bo_check(op(g, "SelectV2", in, 3, NULL, 0), in, 0);
            bo_free_all(in, 3);
            rill_graph_free(g);
        }
    }
}

/* The integer and bool entries (the CPU kernels in host memory), and the run-time errors. */
static void test_host_and_errors(void)
{
    static const int64_t d[2] = {4, 5};
    static const char *const int_ops[] = {
        "Less",     "GreaterEqual", "NotEqual",          "FloorDiv",
        "FloorMod", "TruncateMod",  "SquaredDifference", "Pow"};
    for (int it = 0; it < 2; it++) {
        rill_dtype t = it ? RILL_INT64 : RILL_INT32;
        for (size_t o = 0; o < sizeof int_ops / sizeof *int_ops; o++) {
            rill_tensor *in[2] = {bo_random(t, d, 2, -5, 5), bo_random(t, d, 2, 1, 4)};
            rill_graph *g = rill_graph_new();
            bo_check(op(g, int_ops[o], in, 2, NULL, 0), in, 0);
            bo_free_all(in, 2);
            rill_graph_free(g);
        }
        static const char *const un[] = {"Abs", "Sign", "Relu6"};
        for (int o = 0; o < 3; o++) {
            rill_tensor *in[1] = {bo_random(t, d, 2, -9, 9)};
            rill_graph *g = rill_graph_new();
            bo_check(op(g, un[o], in, 1, NULL, 0), in, 0);
            bo_free_all(in, 1);
            rill_graph_free(g);
        }
        rill_tensor *in[3] = {bo_random(RILL_BOOL, d, 2, 0, 1), bo_random(t, d, 2, -9, 9),
                              bo_random(t, d, 2, -9, 9)};
        rill_graph *g = rill_graph_new();
        bo_check(op(g, "Select", in, 3, NULL, 0), in, 0);
        bo_check(op(g, "SelectV2", in, 3, NULL, 0), in, 0);
        /* division by zero */
        rill_tensor *z[2] = {bo_random(t, d, 2, -5, 5), bo_tensor(t, d, 2, NULL)};
        bo_check_error(op(g, "FloorDiv", z, 2, NULL, 0), z, RILL_INVALID_ARGUMENT,
                       "Integer division by zero");
        bo_free_all(z, 2);
        bo_free_all(in, 3);
        rill_graph_free(g);
    }
    static const char *const lg[] = {"LogicalAnd", "LogicalOr", "NotEqual"};
    for (int o = 0; o < 3; o++) {
        rill_tensor *in[2] = {bo_random(RILL_BOOL, d, 2, 0, 1), bo_random(RILL_BOOL, d, 2, 0, 1)};
        rill_graph *g = rill_graph_new();
        bo_check(op(g, lg[o], in, 2, NULL, 0), in, 0);
        if (o == 0) bo_check(op(g, "LogicalNot", in, 1, NULL, 0), in, 0);
        bo_free_all(in, 2);
        rill_graph_free(g);
    }
    /* shapes learnt at run time */
    rill_tensor *in[3] = {bo_random(RILL_FLOAT, (int64_t[]){2, 3}, 2, -1, 1),
                          bo_random(RILL_FLOAT, (int64_t[]){3, 2}, 2, -1, 1),
                          bo_random(RILL_BOOL, (int64_t[]){4}, 1, 0, 1)};
    rill_graph *g = rill_graph_new();
    rill_output x[3] = {bo_placeholder_any(g, RILL_FLOAT), bo_placeholder_any(g, RILL_FLOAT),
                        bo_placeholder_any(g, RILL_BOOL)};
    bo_check_error(rill__node_create(g, "Atan2", NULL, x, 2, NULL, 0), in, RILL_INVALID_ARGUMENT,
                   "Incompatible shapes");
    bo_check_error(rill__node_create(g, "Less", NULL, x, 2, NULL, 0), in, RILL_INVALID_ARGUMENT,
                   "Incompatible shapes");
    rill_output sx[3] = {x[2], x[0], x[1]};
    rill_tensor *sin_[3] = {in[2], in[0], in[1]};
    bo_check_error(rill__node_create(g, "Select", NULL, sx, 3, NULL, 0), sin_,
                   RILL_INVALID_ARGUMENT, "'then' and 'else' must have the same size");
    rill_output sx2[3] = {x[2], x[0], x[0]};
    rill_tensor *sin2[3] = {in[2], in[0], in[0]};
    bo_check_error(rill__node_create(g, "Select", NULL, sx2, 3, NULL, 0), sin2,
                   RILL_INVALID_ARGUMENT, "Condition vector size (4)");
    bo_check_error(rill__node_create(g, "SelectV2", NULL, sx2, 3, NULL, 0), sin2,
                   RILL_INVALID_ARGUMENT, "not broadcastable");
    bo_free_all(in, 3);
    rill_graph_free(g);
}

/* --- gradients through a graph on /gpu:0 --- */

enum { G_FETCHES = 4 };

/* y = sum(w * f(x)) for a chain of element-wise ops; fetches y, dy/dx, dy/dw and a Select. */
static bool run_grad_graph(const char *dev, rill_tensor **out)
{
    rill_graph *g = rill_graph_new();
    int64_t dims[2] = {6, 7};
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(6, 7), "x");
    rill_output w = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(7), "w");
    rill_graph_push_device(g, dev);
    rill_output ins[2];
    ins[0] = x;
    rill_output e = {rill__node_create(g, "Elu", NULL, ins, 1, NULL, 0), 0};
    ins[0] = e;
    rill_output sp = {rill__node_create(g, "Softplus", NULL, ins, 1, NULL, 0), 0};
    ins[0] = x;
    rill_output ss = {rill__node_create(g, "Softsign", NULL, ins, 1, NULL, 0), 0};
    ins[0] = ss;
    rill_output lr = {rill__node_create(g, "LeakyRelu", NULL, ins, 1, alpha_attr, 1), 0};
    ins[0] = x;
    rill_output r6 = {rill__node_create(g, "Relu6", NULL, ins, 1, NULL, 0), 0};
    ins[0] = sp;
    ins[1] = w;
    rill_output sd = {rill__node_create(g, "SquaredDifference", NULL, ins, 2, NULL, 0), 0};
    ins[0] = x;
    ins[1] = w;
    rill_output less = {rill__node_create(g, "Less", NULL, ins, 2, NULL, 0), 0};
    rill_output sel3[3] = {less, lr, r6};
    rill_output sel = {rill__node_create(g, "SelectV2", NULL, sel3, 3, NULL, 0), 0};
    ins[0] = rill_add(g, sd, sel, NULL);
    rill_output at = {rill__node_create(g, "Atan", NULL, ins, 1, NULL, 0), 0};
    rill_output l = rill_sum(g, at, NULL, -1, false, "l");
    rill_output xs[2] = {x, w}, dx[2] = {{NULL, 0}, {NULL, 0}};
    CHECK(rill_gradients(g, &l, 1, xs, 2, NULL, dx));
    rill_graph_pop_device(g);
    bo_seed(7);
    rill_tensor *xv = bo_random(RILL_FLOAT, dims, 2, -8, 8),
                *wv = bo_random(RILL_FLOAT, dims + 1, 1, -2, 2);
    rill_output feeds[2] = {x, w};
    rill_tensor *fv[2] = {xv, wv};
    rill_output fetches[G_FETCHES] = {l, dx[0], dx[1], sel};
    rill_status *s = rill_status_new();
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_allow_soft_placement(o, true);
    bool ok = CHECK(rill_graph_ok(g));
    rill_session *sess = ok ? rill_session_new(g, o, s) : NULL;
    ok = ok && sess &&
         rill_session_run(sess, feeds, fv, 2, fetches, out, G_FETCHES, NULL, 0, s) == RILL_OK;
    if (!CHECK(ok)) fprintf(stderr, "  %s: %s\n", dev, rill_status_message(s));
    rill_session_free(sess);
    rill_session_options_free(o);
    rill_status_free(s);
    bo_free_all(fv, 2);
    rill_graph_free(g);
    return ok;
}

static void test_gradients(void)
{
    rill_tensor *cpu[G_FETCHES] = {0}, *gpu[G_FETCHES] = {0};
    if (run_grad_graph("/cpu:0", cpu) && run_grad_graph("/gpu:0", gpu))
        for (int f = 0; f < G_FETCHES; f++) {
            rill_tensor *h = bo_to_host(gpu[f]);
            bo__compare("gradient graph", "fetch", cpu[f], h, 1e-9);
            rill_tensor_free(h);
        }
    bo_free_all(cpu, G_FETCHES);
    bo_free_all(gpu, G_FETCHES);
}

int main(void)
{
    if (!getenv("POCL_CACHE_DIR")) setenv("POCL_CACHE_DIR", "/tmp/rill-pocl-cache", 0);
    bo_seed(20240619);
    bo_device();
    test_unary();
    test_special();
    test_binary();
    test_select();
    test_host_and_errors();
    bo_skip_without_device();
    test_gradients();
    TEST_MAIN_END();
}
