/* test_math_ops.c - forward values of every op in src/graph/ops_math.c on the CPU, against a
 * double-precision reference computed here.
 *
 * Binary ops (Add, Sub, Mul, Div, Maximum, Minimum) run on every numeric dtype over numpy broadcasting
 * cases (same shape, scalar on either side, [2,3] with [3], [2,1] with [1,3], rank 3), once with
 * constants (static shapes) and once through placeholders of unknown shape (the run-time
 * broadcast). Then the unary ops, AddN, Sum and Mean over many axis choices, MatMul in all four
 * transpose combinations, and the build-time errors with TensorFlow's texts: the first error
 * sticks on the graph and later builder calls return {NULL, 0} without touching it.
 */
#include "op_check.h"

#include <stdlib.h>
#include <string.h>

/* --- binary ops --- */

enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN, NBINOPS };

typedef rill_output (*bin_builder)(rill_graph *, rill_output, rill_output, const char *);

static const struct {
    const char *op, *default_name;
    bin_builder build;
} binops[] = {
    {"Add", "add", rill_add},
    {"Sub", "sub", rill_sub},
    {"Mul", "mul", rill_mul},
    {"Div", "truediv", rill_div},
    {"Maximum", "Maximum", rill_maximum},
    {"Minimum", "Minimum", rill_minimum},
};

static double ref_binary(int op, rill_dtype t, double x, double y)
{
    switch (op) {
    case B_ADD:
        return x + y;
    case B_SUB:
        return x - y;
    case B_MUL:
        return x * y;
    case B_DIV:
        /* TF's Div truncates for integers, as C does. */
        if (oc_is_int(t)) return (double)((int64_t)x / (int64_t)y);
        return x / y;
    case B_MIN:
        return x < y ? x : y;
    default:
        return x > y ? x : y;
    }
}

typedef struct shape_case {
    int ra, rb;
    int64_t a[4], b[4];
} shape_case;

static const shape_case bcast_cases[] = {
    {2, 2, {2, 3}, {2, 3}},
    {0, 2, {0}, {2, 3}},
    {2, 0, {2, 3}, {0}},
    {2, 1, {2, 3}, {3}},
    {1, 2, {3}, {2, 3}},
    {2, 2, {2, 1}, {1, 3}},
    {3, 2, {2, 1, 4}, {3, 1}},
    {3, 3, {2, 3, 4}, {2, 3, 4}},
    {3, 3, {1, 3, 1}, {2, 1, 4}},
    {0, 0, {0}, {0}},
    {1, 1, {1}, {5}},
    {3, 1, {2, 3, 4}, {4}},
};
#define NBCAST ((int)(sizeof bcast_cases / sizeof bcast_cases[0]))

/* Values for operand `which` (0: x, 1: y) of op in dtype t. */
static void operand_values(int op, int which, rill_dtype t, double *v, int64_t n)
{
    if (op == B_DIV && which == 1) {
        /* Divisors away from zero, of either sign. */
        for (int64_t i = 0; i < n; i++) {
            double m = oc_is_int(t) ? floor(oc_uniform(1, 5)) : oc_round_to(t, oc_uniform(0.5, 2));
            v[i] = oc_next() & 1 ? m : -m;
        }
        return;
    }
    oc_fill_random(t, v, n, oc_is_int(t) ? -9 : -3, oc_is_int(t) ? 9 : 3);
}

static void test_binary_forward(void)
{
    for (int op = 0; op < NBINOPS; op++) {
        for (int di = 0; di < OC_NNUMERIC; di++) {
            rill_dtype t = oc_numeric[di];
            for (int unknown = 0; unknown < 2; unknown++) {
                for (int c = 0; c < NBCAST; c++) {
                    const shape_case *sc = &bcast_cases[c];
                    int64_t od[OC_MAX_DIMS] = {0};
                    int orank = 0;
                    CHECK(oc_bcast_shape(sc->a, sc->ra, sc->b, sc->rb, od, &orank));
                    int64_t na = oc_numel(sc->a, sc->ra), nb = oc_numel(sc->b, sc->rb);
                    int64_t no = oc_numel(od, orank);
                    double xa[64], xb[64], ref[64];
                    operand_values(op, 0, t, xa, na);
                    operand_values(op, 1, t, xb, nb);
                    for (int64_t i = 0; i < no; i++) {
                        double x = xa[oc_bcast_index(i, od, orank, sc->a, sc->ra)];
                        double y = xb[oc_bcast_index(i, od, orank, sc->b, sc->rb)];
                        ref[i] = oc_round_to(t, ref_binary(op, t, x, y));
                    }
                    char label[160];
                    snprintf(label, sizeof label, "%s %s case %d%s", binops[op].op,
                             rill_dtype_name(t), c, unknown ? " (unknown shapes)" : "");
                    rill_graph *g = rill_graph_new();
                    rill_tensor *ta = oc_tensor(t, sc->a, sc->ra, xa);
                    rill_tensor *tb = oc_tensor(t, sc->b, sc->rb, xb);
                    rill_output a, b;
                    if (unknown) {
                        a = rill_placeholder(g, t, rill_shape_unknown(), "a");
                        b = rill_placeholder(g, t, rill_shape_unknown(), "b");
                    } else {
                        a = rill_const(g, ta, "a");
                        b = rill_const(g, tb, "b");
                    }
                    rill_output r = binops[op].build(g, a, b, NULL);
                    if (CHECK(r.node != NULL)) {
                        CHECK_EQ_STR(rill_node_op_type(r.node), binops[op].op);
                        CHECK_EQ_STR(rill_node_name(r.node), binops[op].default_name);
                        CHECK_EQ_INT(rill_output_dtype(r), t);
                        rill_shape s = rill_output_shape(r);
                        rill_shape want =
                            unknown ? rill_shape_unknown() : rill_shape_make(orank, od);
                        if (!CHECK(rill_shape_equal(&s, &want)))
                            fprintf(stderr, "  case: %s\n", label);
                    }
                    rill_session *sess = oc_session(g);
                    rill_output feeds[] = {a, b};
                    rill_tensor *vals[] = {ta, tb};
                    rill_tensor *out = oc_run(sess, r, feeds, vals, unknown ? 2 : 0);
                    oc_check_tensor(label, out, t, od, orank, ref);
                    rill_tensor_free(out);
                    rill_session_free(sess);
                    rill_tensor_free(ta);
                    rill_tensor_free(tb);
                    rill_graph_free(g);
                }
            }
        }
    }
}

/* Outputs big enough that the kernels shard over the intra-op pool: every shard must start its
 * broadcast walk at the right element. */
static void test_binary_large(void)
{
    static const shape_case big[] = {
        {2, 2, {300, 257}, {300, 257}},  {2, 1, {300, 257}, {257}},
        {2, 2, {300, 1}, {1, 257}},      {0, 2, {0}, {300, 257}},
        {3, 2, {2, 150, 257}, {150, 1}}, {2, 3, {1, 257}, {3, 100, 1}},
    };
    const rill_dtype types[] = {RILL_FLOAT, RILL_DOUBLE, RILL_INT32, RILL_INT64};
    const int ops[] = {B_SUB, B_MAX, B_DIV};
    for (int c = 0; c < (int)(sizeof big / sizeof big[0]); c++) {
        const shape_case *sc = &big[c];
        int64_t od[OC_MAX_DIMS] = {0};
        int orank = 0;
        CHECK(oc_bcast_shape(sc->a, sc->ra, sc->b, sc->rb, od, &orank));
        int64_t na = oc_numel(sc->a, sc->ra), nb = oc_numel(sc->b, sc->rb),
                no = oc_numel(od, orank);
        double *xa = malloc(sizeof(double) * (size_t)na), *xb = malloc(sizeof(double) * (size_t)nb);
        double *ref = malloc(sizeof(double) * (size_t)no);
        for (int ti = 0; ti < 4; ti++) {
            rill_dtype t = types[ti];
            for (int k = 0; k < 3; k++) {
                int op = ops[k];
                operand_values(op, 0, t, xa, na);
                operand_values(op, 1, t, xb, nb);
                for (int64_t i = 0; i < no; i++)
                    ref[i] = oc_round_to(
                        t, ref_binary(op, t, xa[oc_bcast_index(i, od, orank, sc->a, sc->ra)],
                                      xb[oc_bcast_index(i, od, orank, sc->b, sc->rb)]));
                rill_graph *g = rill_graph_new();
                rill_tensor *ta = oc_tensor(t, sc->a, sc->ra, xa),
                            *tb = oc_tensor(t, sc->b, sc->rb, xb);
                rill_output r =
                    binops[op].build(g, rill_const(g, ta, NULL), rill_const(g, tb, NULL), NULL);
                char label[96];
                snprintf(label, sizeof label, "large %s %s case %d", binops[op].op,
                         rill_dtype_name(t), c);
                rill_tensor *out = oc_eval(g, r);
                oc_check_tensor(label, out, t, od, orank, ref);
                rill_tensor_free(out);
                rill_tensor_free(ta);
                rill_tensor_free(tb);
                rill_graph_free(g);
            }
        }
        free(xa);
        free(xb);
        free(ref);
    }
}

/* Static shape inference with partly known shapes. */
static void test_binary_partial_shapes(void)
{
    rill_graph *g = rill_graph_new();
    rill_output a = rill_placeholder(g, RILL_FLOAT, rill_shape_make(2, (int64_t[]){-1, 3}), "a");
    rill_output b = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(3), "b");
    rill_output c = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(4, 1), "c");
    rill_shape s = rill_output_shape(rill_add(g, a, b, NULL));
    rill_shape want = rill_shape_make(2, (int64_t[]){-1, 3});
    CHECK(rill_shape_equal(&s, &want));
    s = rill_output_shape(rill_mul(g, a, c, NULL));
    want = rill_shape_matrix(4, 3);
    CHECK(rill_shape_equal(&s, &want));
    s = rill_output_shape(
        rill_sub(g, a, rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), NULL), NULL));
    CHECK_EQ_INT(s.rank, -1);
    /* Default names are made unique within the graph as TF does. */
    rill_output x1 = rill_add(g, b, b, NULL), x2 = rill_add(g, b, b, NULL);
    CHECK_EQ_STR(rill_node_name(x1.node), "add_1");
    CHECK_EQ_STR(rill_node_name(x2.node), "add_2");
    rill_graph_push_name_scope(g, "layer");
    CHECK_EQ_STR(rill_node_name(rill_div(g, b, b, NULL).node), "layer/truediv");
    rill_graph_pop_name_scope(g);
    CHECK(rill_graph_ok(g));
    rill_graph_free(g);
}

/* --- unary ops --- */

enum { U_NEG, U_SQUARE, U_SQRT, U_EXP, U_LOG };

typedef rill_output (*un_builder)(rill_graph *, rill_output, const char *);

static const struct {
    const char *op;
    un_builder build;
    bool float_only;
} unops[] = {
    {"Neg", rill_neg, false}, {"Square", rill_square, false}, {"Sqrt", rill_sqrt, true},
    {"Exp", rill_exp, true},  {"Log", rill_log, true},
};

static double ref_unary(int op, double x)
{
    switch (op) {
    case U_NEG:
        return -x;
    case U_SQUARE:
        return x * x;
    case U_SQRT:
        return sqrt(x);
    case U_EXP:
        return exp(x);
    default:
        return log(x);
    }
}

static void test_unary_forward(void)
{
    for (int op = 0; op < 5; op++) {
        for (int di = 0; di < OC_NNUMERIC; di++) {
            rill_dtype t = oc_numeric[di];
            rill_graph *g = rill_graph_new();
            int64_t dims[] = {2, 3, 2};
            double v[12], ref[12];
            bool positive = op == U_SQRT || op == U_LOG;
            oc_fill_random(t, v, 12,
                           oc_is_int(t) ? -50
                           : positive   ? 0.05
                                        : -3,
                           oc_is_int(t) ? 50 : 3);
            for (int i = 0; i < 12; i++) ref[i] = oc_round_to(t, ref_unary(op, v[i]));
            rill_tensor *x = oc_tensor(t, dims, 3, v);
            rill_output r = unops[op].build(g, rill_const(g, x, "x"), NULL);
            char label[96];
            snprintf(label, sizeof label, "%s %s", unops[op].op, rill_dtype_name(t));
            if (unops[op].float_only && oc_is_int(t)) {
                CHECK(r.node == NULL);
                oc_check_build_error(label, g, RILL_INVALID_ARGUMENT,
                                     "is not in the list of allowed values: float, double, half");
            } else {
                CHECK_EQ_STR(rill_node_name(r.node), unops[op].op);
                rill_shape s = rill_output_shape(r), want = rill_shape_make(3, dims);
                CHECK(rill_shape_equal(&s, &want));
                rill_tensor *out = oc_eval(g, r);
                oc_check_tensor(label, out, t, dims, 3, ref);
                rill_tensor_free(out);
            }
            rill_tensor_free(x);
            rill_graph_free(g);
        }
    }
}

/* exp of a large negative, log of 0, sqrt of 0: IEEE results, no error. */
static void test_unary_edges(void)
{
    rill_graph *g = rill_graph_new();
    double v[] = {0, 1, 4};
    rill_tensor *x = oc_tensor(RILL_DOUBLE, (int64_t[]){3}, 1, v);
    rill_output c = rill_const(g, x, NULL);
    rill_tensor *l = oc_eval(g, rill_log(g, c, NULL));
    rill_tensor *s = oc_eval(g, rill_sqrt(g, c, NULL));
    if (CHECK(l && s)) {
        CHECK(isinf(rill_tensor_get_double(l, 0)) && rill_tensor_get_double(l, 0) < 0);
        CHECK_NEAR(rill_tensor_get_double(l, 1), 0, 0);
        CHECK_NEAR(rill_tensor_get_double(s, 0), 0, 0);
        CHECK_NEAR(rill_tensor_get_double(s, 2), 2, 0);
    }
    rill_tensor_free(l);
    rill_tensor_free(s);
    rill_tensor_free(x);
    rill_graph_free(g);
}

/* --- AddN --- */

static void test_add_n(void)
{
    for (int di = 0; di < OC_NNUMERIC; di++) {
        rill_dtype t = oc_numeric[di];
        for (int n = 1; n <= 4; n++) {
            rill_graph *g = rill_graph_new();
            int64_t dims[] = {3, 2};
            double v[4][6], ref[6] = {0};
            rill_output xs[4];
            rill_tensor *ts[4];
            for (int k = 0; k < n; k++) {
                oc_fill_random(t, v[k], 6, oc_is_int(t) ? -20 : -2, oc_is_int(t) ? 20 : 2);
                ts[k] = oc_tensor(t, dims, 2, v[k]);
                xs[k] = rill_const(g, ts[k], NULL);
                for (int i = 0; i < 6; i++) ref[i] += v[k][i];
            }
            rill_output r = rill_add_n(g, xs, n, n == 1 ? "single" : NULL);
            char label[64];
            snprintf(label, sizeof label, "AddN %s n=%d", rill_dtype_name(t), n);
            if (CHECK(r.node != NULL)) {
                CHECK_EQ_STR(rill_node_op_type(r.node), "AddN");
                CHECK_EQ_INT(rill_node_num_inputs(r.node), n);
            }
            rill_tensor *out = oc_eval(g, r);
            oc_check_tensor(label, out, t, dims, 2, ref);
            rill_tensor_free(out);
            for (int k = 0; k < n; k++) rill_tensor_free(ts[k]);
            rill_graph_free(g);
        }
    }
    /* One input and no name: the input itself, no node added. */
    rill_graph *g = rill_graph_new();
    rill_output x = rill_const_float(g, 2, "x");
    int before = rill_graph_num_nodes(g);
    rill_output r = rill_add_n(g, &x, 1, NULL);
    CHECK(r.node == x.node && r.index == 0);
    CHECK_EQ_INT(rill_graph_num_nodes(g), before);
    /* Placeholders of unknown shape take the first known shape. */
    rill_output p = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), NULL);
    rill_output q = rill_placeholder(g, RILL_FLOAT, rill_shape_make(2, (int64_t[]){-1, 3}), NULL);
    rill_output m = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(2, -1), NULL);
    rill_shape s = rill_output_shape(rill_add_n(g, (rill_output[]){p, q, m}, 3, NULL));
    rill_shape want = rill_shape_matrix(2, 3);
    CHECK(rill_shape_equal(&s, &want));
    CHECK(rill_graph_ok(g));
    rill_graph_free(g);
}

/* --- reductions --- */

/* Sum (or mean) of x (shape dims, rank) over mask, in double; writes out and its shape. */
static void ref_reduce(const double *x, const int64_t *dims, int rank, const bool *mask, bool mean,
                       bool keep, double *out, int64_t *odims, int *orank)
{
    int64_t kept_dims[8];
    int nk = 0;
    *orank = 0;
    int64_t count = 1;
    for (int d = 0; d < rank; d++) {
        if (mask[d]) {
            count *= dims[d];
            if (keep) odims[(*orank)++] = 1;
        } else {
            kept_dims[nk++] = dims[d];
            odims[(*orank)++] = dims[d];
        }
    }
    int64_t on = oc_numel(kept_dims, nk), n = oc_numel(dims, rank);
    for (int64_t i = 0; i < on; i++) out[i] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, oi = 0, stride = 1;
        for (int d = rank - 1; d >= 0; d--) {
            int64_t c = rem % dims[d];
            rem /= dims[d];
            if (!mask[d]) {
                oi += c * stride;
                stride *= dims[d];
            }
        }
        out[oi] += x[i];
    }
    if (mean)
        for (int64_t i = 0; i < on; i++) out[i] /= (double)count;
}

typedef struct axes_case {
    int rank;
    int64_t dims[3];
    int naxes; /* -1: all (axes NULL) */
    int axes[3];
    bool keep;
} axes_case;

static const axes_case reduce_cases[] = {
    {3, {2, 3, 4}, -1, {0}, false},   {3, {2, 3, 4}, -1, {0}, true},
    {3, {2, 3, 4}, 1, {0}, false},    {3, {2, 3, 4}, 1, {1}, false},
    {3, {2, 3, 4}, 1, {2}, true},     {3, {2, 3, 4}, 1, {-1}, false},
    {3, {2, 3, 4}, 1, {-3}, true},    {3, {2, 3, 4}, 2, {0, 2}, false},
    {3, {2, 3, 4}, 2, {-1, 0}, true}, {3, {2, 3, 4}, 3, {0, 1, 2}, false},
    {3, {2, 3, 4}, 0, {0}, false},    {2, {2, 3}, 1, {1}, false},
    {2, {2, 3}, 1, {0}, true},        {2, {2, 3}, -1, {0}, false},
    {1, {5}, 1, {0}, false},          {1, {5}, -1, {0}, true},
    {0, {0}, -1, {0}, false},         {2, {1, 1}, 1, {-2}, false},
};
#define NREDUCE ((int)(sizeof reduce_cases / sizeof reduce_cases[0]))

static void test_reductions(void)
{
    for (int mean = 0; mean < 2; mean++) {
        for (int di = 0; di < OC_NNUMERIC; di++) {
            rill_dtype t = oc_numeric[di];
            for (int c = 0; c < NREDUCE; c++) {
                const axes_case *ac = &reduce_cases[c];
                bool mask[8] = {false};
                for (int d = 0; d < ac->rank; d++) mask[d] = ac->naxes < 0;
                for (int k = 0; k < ac->naxes; k++)
                    mask[ac->axes[k] < 0 ? ac->axes[k] + ac->rank : ac->axes[k]] = true;
                int64_t n = oc_numel(ac->dims, ac->rank);
                double x[24], ref[24];
                int64_t od[OC_MAX_DIMS] = {0};
                int orank = 0;
                oc_fill_random(t, x, n, oc_is_int(t) ? -9 : -2, oc_is_int(t) ? 9 : 2);
                ref_reduce(x, ac->dims, ac->rank, mask, mean, ac->keep, ref, od, &orank);
                /* Integer means truncate (TF divides in the integer type). */
                for (int64_t i = 0; i < oc_numel(od, orank); i++) ref[i] = oc_round_to(t, ref[i]);
                char label[96];
                snprintf(label, sizeof label, "%s %s case %d", mean ? "Mean" : "Sum",
                         rill_dtype_name(t), c);
                rill_graph *g = rill_graph_new();
                rill_tensor *tx = oc_tensor(t, ac->dims, ac->rank, x);
                rill_output cx = rill_const(g, tx, "x");
                const int *axes = ac->naxes < 0 ? NULL : ac->axes;
                rill_output r = mean ? rill_mean(g, cx, axes, ac->naxes, ac->keep, NULL)
                                     : rill_sum(g, cx, axes, ac->naxes, ac->keep, NULL);
                if (CHECK(r.node != NULL)) {
                    CHECK_EQ_STR(rill_node_name(r.node), mean ? "Mean" : "Sum");
                    rill_shape s = rill_output_shape(r), want = rill_shape_make(orank, od);
                    if (!CHECK(rill_shape_equal(&s, &want))) fprintf(stderr, "  case: %s\n", label);
                }
                rill_tensor *out = oc_eval(g, r);
                oc_check_tensor(label, out, t, od, orank, ref);
                rill_tensor_free(out);
                /* The same reduction through a placeholder of unknown shape. */
                rill_output p = rill_placeholder(g, t, rill_shape_unknown(), "p");
                rill_output rp = mean ? rill_mean(g, p, axes, ac->naxes, ac->keep, NULL)
                                      : rill_sum(g, p, axes, ac->naxes, ac->keep, NULL);
                if (CHECK(rp.node != NULL)) CHECK_EQ_INT(rill_output_shape(rp).rank, -1);
                rill_session *sess = oc_session(g);
                out = oc_run(sess, rp, &p, &tx, 1);
                oc_check_tensor(label, out, t, od, orank, ref);
                rill_tensor_free(out);
                rill_session_free(sess);
                rill_tensor_free(tx);
                rill_graph_free(g);
            }
        }
    }
}

/* --- MatMul --- */

static void test_matmul(void)
{
    const rill_dtype types[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};
    const int64_t sizes[][3] = {{2, 3, 4}, {4, 1, 3}, {5, 7, 2}, {1, 1, 1}, {3, 3, 3}};
    for (int ti = 0; ti < 3; ti++) {
        rill_dtype t = types[ti];
        for (int si = 0; si < 5; si++) {
            int64_t m = sizes[si][0], k = sizes[si][1], n = sizes[si][2];
            double A[64], B[64], ref[64];
            oc_fill_random(t, A, m * k, -2, 2);
            oc_fill_random(t, B, k * n, -2, 2);
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double s = 0;
                    for (int64_t p = 0; p < k; p++) s += A[i * k + p] * B[p * n + j];
                    ref[i * n + j] = s;
                }
            for (int ta = 0; ta < 2; ta++) {
                for (int tb = 0; tb < 2; tb++) {
                    /* Store the operands transposed when the op is told to transpose them. */
                    double As[64], Bs[64];
                    for (int64_t i = 0; i < m; i++)
                        for (int64_t p = 0; p < k; p++)
                            As[ta ? p * m + i : i * k + p] = A[i * k + p];
                    for (int64_t p = 0; p < k; p++)
                        for (int64_t j = 0; j < n; j++)
                            Bs[tb ? j * k + p : p * n + j] = B[p * n + j];
                    int64_t ad[2] = {ta ? k : m, ta ? m : k}, bd[2] = {tb ? n : k, tb ? k : n};
                    rill_graph *g = rill_graph_new();
                    rill_tensor *xa = oc_tensor(t, ad, 2, As), *xb = oc_tensor(t, bd, 2, Bs);
                    rill_output r = rill_matmul(g, rill_const(g, xa, NULL), rill_const(g, xb, NULL),
                                                ta, tb, NULL);
                    char label[96];
                    snprintf(label, sizeof label, "MatMul %s %lldx%lldx%lld ta=%d tb=%d",
                             rill_dtype_name(t), (long long)m, (long long)k, (long long)n, ta, tb);
                    if (CHECK(r.node != NULL)) {
                        CHECK_EQ_STR(rill_node_name(r.node), "MatMul");
                        rill_shape s = rill_output_shape(r), want = rill_shape_matrix(m, n);
                        if (!CHECK(rill_shape_equal(&s, &want)))
                            fprintf(stderr, "  case: %s\n", label);
                    }
                    rill_tensor *out = oc_eval(g, r);
                    int64_t od[] = {m, n};
                    if (t == RILL_HALF && out) {
                        /* Accumulated in float, rounded to half once: 1e-2 of the term sizes. */
                        for (int64_t i = 0; i < m * n; i++)
                            if (!CHECK_NEAR(rill_tensor_get_double(out, i), ref[i],
                                            1e-2 * (1 + fabs(ref[i]))))
                                fprintf(stderr, "  case: %s\n", label);
                    } else {
                        oc_check_tensor(label, out, t, od, 2, ref);
                    }
                    rill_tensor_free(out);
                    rill_tensor_free(xa);
                    rill_tensor_free(xb);
                    rill_graph_free(g);
                }
            }
        }
    }
    /* A bigger product through placeholders of unknown shape, float against double. */
    rill_graph *g = rill_graph_new();
    int64_t m = 33, k = 65, n = 17;
    double *A = malloc(sizeof(double) * (size_t)(m * k)),
           *B = malloc(sizeof(double) * (size_t)(k * n));
    double *ref = malloc(sizeof(double) * (size_t)(m * n));
    oc_fill_random(RILL_FLOAT, A, m * k, -1, 1);
    oc_fill_random(RILL_FLOAT, B, k * n, -1, 1);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++) s += A[i * k + p] * B[p * n + j];
            ref[i * n + j] = s;
        }
    rill_tensor *xa = oc_tensor(RILL_FLOAT, (int64_t[]){m, k}, 2, A);
    rill_tensor *xb = oc_tensor(RILL_FLOAT, (int64_t[]){k, n}, 2, B);
    rill_output pa = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "a");
    rill_output pb = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(-1, n), "b");
    rill_output r = rill_matmul(g, pa, pb, false, false, NULL);
    rill_shape s = rill_output_shape(r), want = rill_shape_matrix(-1, n);
    CHECK(rill_shape_equal(&s, &want));
    rill_session *sess = oc_session(g);
    rill_tensor *out = oc_run(sess, r, (rill_output[]){pa, pb}, (rill_tensor *[]){xa, xb}, 2);
    if (CHECK(out != NULL))
        for (int64_t i = 0; i < m * n; i++)
            if (!CHECK_NEAR(rill_tensor_get_double(out, i), ref[i], 1e-4)) break;
    rill_tensor_free(out);
    rill_session_free(sess);
    rill_tensor_free(xa);
    rill_tensor_free(xb);
    free(A);
    free(B);
    free(ref);
    rill_graph_free(g);
}

/* --- errors --- */

/* After the first error: later builders return {NULL, 0} and the status stays as it was. */
static void check_sticky(rill_graph *g, rill_output ok_input)
{
    char before[512];
    snprintf(before, sizeof before, "%s", rill_status_message(rill_graph_status(g)));
    rill_code code = rill_status_code(rill_graph_status(g));
    int nodes = rill_graph_num_nodes(g);
    rill_output r = rill_add(g, ok_input, ok_input, NULL);
    CHECK(r.node == NULL && r.index == 0);
    r = rill_matmul(g, ok_input, ok_input, true, false, NULL);
    CHECK(r.node == NULL);
    r = rill_sum(g, ok_input, NULL, -1, false, NULL);
    CHECK(r.node == NULL);
    r = rill_const_float(g, 1, NULL);
    CHECK(r.node == NULL);
    r = rill_add(g, (rill_output){NULL, 0}, ok_input, NULL);
    CHECK(r.node == NULL);
    CHECK_EQ_INT(rill_graph_num_nodes(g), nodes);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), code);
    CHECK_EQ_STR(rill_status_message(rill_graph_status(g)), before);
}

static void test_build_errors(void)
{
    /* Incompatible broadcast. */
    rill_graph *g = rill_graph_new();
    rill_output a = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(2, 3), "a");
    rill_output b = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(4), "b");
    int nodes = rill_graph_num_nodes(g);
    rill_output r = rill_add(g, a, b, NULL);
    CHECK(r.node == NULL && r.index == 0);
    CHECK_EQ_INT(rill_graph_num_nodes(g), nodes);
    oc_check_build_error("add [2,3] [4]", g, RILL_INVALID_ARGUMENT,
                         "Dimensions must be equal, but are 3 and 4 for 'add' (op: 'Add') with "
                         "input shapes: [2,3], [4].");
    check_sticky(g, a);
    /* clear_status lets building go on, and the failed name was never taken. */
    rill_graph_clear_status(g);
    CHECK(rill_graph_ok(g));
    r = rill_add(g, a, a, NULL);
    if (CHECK(r.node != NULL)) CHECK_EQ_STR(rill_node_name(r.node), "add");
    rill_graph_free(g);

    /* dtype mismatch. */
    g = rill_graph_new();
    a = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(2, 3), "a");
    rill_output d = rill_placeholder(g, RILL_DOUBLE, rill_shape_matrix(2, 3), "d");
    r = rill_mul(g, a, d, NULL);
    CHECK(r.node == NULL);
    oc_check_build_error("mul float double", g, RILL_INVALID_ARGUMENT,
                         "Input 'y' of 'Mul' Op has type double that does not match type float of "
                         "argument 'x'.");
    check_sticky(g, a);
    rill_graph_free(g);

    /* Rank-3 broadcast mismatch in the middle axis. */
    g = rill_graph_new();
    a = rill_placeholder(g, RILL_INT32, rill_shape_make(3, (int64_t[]){2, 3, 4}), "a");
    b = rill_placeholder(g, RILL_INT32, rill_shape_make(2, (int64_t[]){5, 1}), "b");
    CHECK(rill_maximum(g, a, b, "mx").node == NULL);
    oc_check_build_error("maximum [2,3,4] [5,1]", g, RILL_INVALID_ARGUMENT,
                         "Dimensions must be equal, but are 3 and 5 for 'mx' (op: 'Maximum')");
    rill_graph_free(g);

    /* MatMul inner dimensions, ranks, dtypes. */
    g = rill_graph_new();
    a = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(2, 3), "a");
    b = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(4, 5), "b");
    CHECK(rill_matmul(g, a, b, false, false, NULL).node == NULL);
    oc_check_build_error("matmul [2,3] [4,5]", g, RILL_INVALID_ARGUMENT,
                         "Dimensions must be equal, but are 3 and 4 for 'MatMul' (op: 'MatMul') "
                         "with input shapes: [2,3], [4,5].");
    check_sticky(g, a);
    rill_graph_clear_status(g);
    /* With transpose_a the inner size is 2. */
    CHECK(rill_matmul(g, a, b, true, false, NULL).node == NULL);
    oc_check_build_error("matmul^T [2,3] [4,5]", g, RILL_INVALID_ARGUMENT,
                         "Dimensions must be equal, but are 2 and 4");
    rill_graph_clear_status(g);
    CHECK(rill_matmul(g, a, rill_placeholder(g, RILL_FLOAT, rill_shape_vector(3), "v"), false,
                      false, NULL)
              .node == NULL);
    oc_check_build_error("matmul rank", g, RILL_INVALID_ARGUMENT,
                         "Shape must be rank 2 but is rank 1");
    rill_graph_clear_status(g);
    rill_output i1 = rill_placeholder(g, RILL_INT32, rill_shape_matrix(2, 2), "i1");
    CHECK(rill_matmul(g, i1, i1, false, false, NULL).node == NULL);
    oc_check_build_error("matmul int32", g, RILL_INVALID_ARGUMENT,
                         "Value for attr 'T' of int32 is not in the list of allowed values");
    rill_graph_free(g);

    /* Reductions: axis out of range. */
    g = rill_graph_new();
    a = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(2, 3), "a");
    CHECK(rill_sum(g, a, (int[]){2}, 1, false, NULL).node == NULL);
    oc_check_build_error("sum axis 2", g, RILL_INVALID_ARGUMENT,
                         "Invalid reduction dimension 2 for input with 2 dimensions");
    rill_graph_clear_status(g);
    CHECK(rill_mean(g, a, (int[]){-3}, 1, true, NULL).node == NULL);
    oc_check_build_error("mean axis -3", g, RILL_INVALID_ARGUMENT,
                         "Invalid reduction dimension -3 for input with 2 dimensions");
    rill_graph_free(g);

    /* AddN of different shapes and dtypes. */
    g = rill_graph_new();
    a = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(2, 3), "a");
    b = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(3, 2), "b");
    CHECK(rill_add_n(g, (rill_output[]){a, b}, 2, NULL).node == NULL);
    oc_check_build_error("addn shapes", g, RILL_INVALID_ARGUMENT,
                         "Shapes must be equal rank, and dimensions must match for 'AddN' (op: "
                         "'AddN') with input shapes: [2,3], [3,2].");
    rill_graph_clear_status(g);
    d = rill_placeholder(g, RILL_DOUBLE, rill_shape_matrix(2, 3), "d");
    CHECK(rill_add_n(g, (rill_output[]){a, a, d}, 3, NULL).node == NULL);
    oc_check_build_error("addn dtypes", g, RILL_INVALID_ARGUMENT, "that does not match type float");
    rill_graph_free(g);

    /* Non-numeric inputs. */
    g = rill_graph_new();
    rill_output s = rill_placeholder(g, RILL_STRING, rill_shape_scalar(), "s");
    CHECK(rill_add(g, s, s, NULL).node == NULL);
    oc_check_build_error("add string", g, RILL_INVALID_ARGUMENT,
                         "Value for attr 'T' of string is not in the list of allowed values: "
                         "float, double, half, int32, int64");
    rill_graph_free(g);
}

/* Errors that only the run can see: integer division by zero and run-time broadcasting. */
static void test_run_errors(void)
{
    rill_graph *g = rill_graph_new();
    rill_tensor *z = oc_tensor(RILL_INT32, (int64_t[]){2}, 1, (double[]){1, 0});
    rill_output q = rill_div(g, rill_const(g, z, NULL), rill_const(g, z, NULL), NULL);
    rill_output pa = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "pa");
    rill_output pb = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "pb");
    rill_output sum = rill_add(g, pa, pb, NULL);
    rill_session *sess = oc_session(g);
    rill_status *s = rill_status_new();
    rill_tensor *out = NULL;
    if (sess) {
        CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &q, &out, 1, NULL, 0, s),
                     RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), "Integer division by zero");
        CHECK(out == NULL);
        rill_tensor *va = rill_tensor_new(RILL_FLOAT, (int64_t[]){2, 3}, 2);
        rill_tensor *vb = rill_tensor_new(RILL_FLOAT, (int64_t[]){4}, 1);
        memset(rill_tensor_data(va), 0, rill_tensor_nbytes(va));
        memset(rill_tensor_data(vb), 0, rill_tensor_nbytes(vb));
        CHECK_EQ_INT(rill_session_run(sess, (rill_output[]){pa, pb}, (rill_tensor *[]){va, vb}, 2,
                                      &sum, &out, 1, NULL, 0, s),
                     RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), "Incompatible shapes: [2,3] vs. [4]");
        CHECK(out == NULL);
        /* Unfed placeholder. */
        CHECK_EQ_INT(rill_session_run(sess, &pa, &va, 1, &sum, &out, 1, NULL, 0, s),
                     RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s),
                           "You must feed a value for placeholder tensor 'pb' with dtype float");
        rill_tensor_free(out);
        rill_tensor_free(va);
        rill_tensor_free(vb);
    }
    rill_status_free(s);
    rill_session_free(sess);
    rill_tensor_free(z);
    rill_graph_free(g);
}

int main(void)
{
    test_binary_forward();
    test_binary_large();
    test_binary_partial_shapes();
    test_unary_forward();
    test_unary_edges();
    test_add_n();
    test_reductions();
    test_matmul();
    test_build_errors();
    test_run_errors();
    TEST_MAIN_END();
}
