/* test_gradients.c - every gradient of the ops in ops_math.c and ops_array.c against central
 * finite differences in double precision (see oc_grad_check in op_check.h).
 *
 * Each case builds y = f(x...) from double placeholders and checks d/dx of sum(w * y), with w a
 * fixed random tensor so that no symmetry hides a wrong gradient. Binary ops run over the
 * broadcasting cases ([2,3] op [3], scalar op [2,3], [2,1] op [1,3], rank 3), which exercises
 * SumToShape; every case runs twice, once with static shapes and once through placeholders of
 * unknown shape, which forces the run-time SumToShape and ReduceGrad paths. Then reductions with
 * axes and keep_dims, MatMul in all transpose combinations, Reshape/ExpandDims/Cast/Identity,
 * chains where an input is used more than once (gradients accumulate through AddN), float and
 * half gradients against the double ones, and rill_gradients' own contract: {NULL, 0} for an x
 * that does not reach y, grad_ys, several ys, and errors.
 */
#include "op_check.h"

#include <string.h>

static const oc_grad_opts STATIC = {0}, UNKNOWN = {.unknown_shapes = true};

/* Runs a case with static shapes and with unknown shapes. */
static void check_both(const char *label, int nx, rill_tensor *const *vals, oc_build_fn f,
                       void *ctx)
{
    char l2[200];
    oc_grad_check(label, nx, vals, f, ctx, STATIC);
    snprintf(l2, sizeof l2, "%s (unknown shapes)", label);
    oc_grad_check(l2, nx, vals, f, ctx, UNKNOWN);
}

static rill_output scalar_like(rill_graph *g, rill_output like, double v)
{
    return rill_const_scalar(g, rill_output_dtype(like), v, NULL);
}

/* --- binary ops with broadcasting --- */

typedef rill_output (*bin_builder)(rill_graph *, rill_output, rill_output, const char *);

static const struct {
    const char *name;
    bin_builder build;
} binops[] = {{"Add", rill_add},
              {"Sub", rill_sub},
              {"Mul", rill_mul},
              {"Div", rill_div},
              {"Maximum", rill_maximum},
              {"Minimum", rill_minimum}};

typedef struct bin_ctx {
    int op;
    bool const_y; /* y is a constant: only x is differentiated */
    rill_tensor *yv;
} bin_ctx;

static rill_output build_binary(rill_graph *g, const rill_output *xs, void *ctx)
{
    bin_ctx *c = ctx;
    rill_output y = c->const_y ? rill_const(g, c->yv, "y") : xs[1];
    return binops[c->op].build(g, xs[0], y, NULL);
}

typedef struct shape_case {
    int ra, rb;
    int64_t a[3], b[3];
} shape_case;

static const shape_case cases[] = {
    {2, 2, {2, 3}, {2, 3}},    {2, 1, {2, 3}, {3}},          {1, 2, {3}, {2, 3}},
    {0, 2, {0}, {2, 3}},       {2, 0, {2, 3}, {0}},          {2, 2, {2, 1}, {1, 3}},
    {3, 2, {2, 1, 4}, {3, 1}}, {3, 3, {2, 3, 1}, {1, 1, 4}}, {2, 2, {1, 1}, {2, 3}},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* Fills a and b for op; for Div keeps b away from zero, for Maximum and Minimum keeps every
 * broadcast pair at least 0.05 apart (no ties within the finite-difference step). */
static void binary_values(int op, const shape_case *sc, rill_tensor **ta, rill_tensor **tb)
{
    int64_t od[OC_MAX_DIMS] = {0};
    int orank = 0;
    CHECK(oc_bcast_shape(sc->a, sc->ra, sc->b, sc->rb, od, &orank));
    for (;;) {
        *ta = oc_random(sc->a, sc->ra, -2, 2);
        *tb = oc_random(sc->b, sc->rb, op == 3 ? 0.5 : -2, 2);
        double *a = rill_tensor_data(*ta), *b = rill_tensor_data(*tb);
        if (op == 3)
            for (int64_t i = 0; i < oc_numel(sc->b, sc->rb); i++)
                if (oc_next() & 1) b[i] = -b[i];
        bool ok = true;
        for (int64_t i = 0; (op == 4 || op == 5) && i < oc_numel(od, orank); i++) {
            double x = a[oc_bcast_index(i, od, orank, sc->a, sc->ra)];
            double y = b[oc_bcast_index(i, od, orank, sc->b, sc->rb)];
            if (fabs(x - y) < 0.05) ok = false;
        }
        if (ok) return;
        rill_tensor_free(*ta);
        rill_tensor_free(*tb);
    }
}

static void test_binary_grads(void)
{
    for (int op = 0; op < (int)(sizeof binops / sizeof *binops); op++) {
        for (int c = 0; c < NCASES; c++) {
            rill_tensor *ta, *tb;
            binary_values(op, &cases[c], &ta, &tb);
            char label[128];
            snprintf(label, sizeof label, "%s case %d", binops[op].name, c);
            bin_ctx ctx = {op, false, NULL};
            check_both(label, 2, (rill_tensor *[]){ta, tb}, build_binary, &ctx);
            /* Only x differentiable; y a constant. */
            bin_ctx cy = {op, true, tb};
            snprintf(label, sizeof label, "%s case %d, y constant", binops[op].name, c);
            check_both(label, 1, &ta, build_binary, &cy);
            rill_tensor_free(ta);
            rill_tensor_free(tb);
        }
    }
}

/* x op x: both partials land on one input and are summed. */
static rill_output build_self_binary(rill_graph *g, const rill_output *xs, void *ctx)
{
    int op = *(int *)ctx;
    return binops[op].build(g, xs[0], xs[0], NULL);
}

static void test_self_binary(void)
{
    for (int op = 0; op < 4; op++) {
        rill_tensor *x = oc_random((int64_t[]){2, 3}, 2, 0.5, 2);
        char label[64];
        snprintf(label, sizeof label, "%s(x, x)", binops[op].name);
        check_both(label, 1, &x, build_self_binary, &op);
        rill_tensor_free(x);
    }
}

/* --- unary ops --- */

typedef rill_output (*un_builder)(rill_graph *, rill_output, const char *);

static const struct {
    const char *name;
    un_builder build;
    double lo, hi;
} unops[] = {{"Neg", rill_neg, -2, 2},    {"Square", rill_square, -2, 2},
             {"Sqrt", rill_sqrt, 0.5, 3}, {"Exp", rill_exp, -2, 2},
             {"Log", rill_log, 0.5, 3},   {"Identity", rill_identity, -2, 2}};

static rill_output build_unary(rill_graph *g, const rill_output *xs, void *ctx)
{
    return unops[*(int *)ctx].build(g, xs[0], NULL);
}

static void test_unary_grads(void)
{
    const int64_t shapes[][3] = {{2, 3, 0}, {5, 0, 0}, {2, 2, 2}};
    const int ranks[] = {2, 1, 3};
    for (int op = 0; op < 6; op++) {
        for (int s = 0; s < 3; s++) {
            rill_tensor *x = oc_random(shapes[s], ranks[s], unops[op].lo, unops[op].hi);
            char label[64];
            snprintf(label, sizeof label, "%s rank %d", unops[op].name, ranks[s]);
            check_both(label, 1, &x, build_unary, &op);
            rill_tensor_free(x);
        }
        /* A scalar. */
        rill_tensor *x = oc_random(NULL, 0, unops[op].lo, unops[op].hi);
        char label[64];
        snprintf(label, sizeof label, "%s scalar", unops[op].name);
        check_both(label, 1, &x, build_unary, &op);
        rill_tensor_free(x);
    }
}

/* --- AddN --- */

static rill_output build_add_n3(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    return rill_add_n(g, (rill_output[]){xs[0], xs[1], xs[2]}, 3, NULL);
}

static rill_output build_add_n_shared(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    /* x0 three times (once through Square), x1 once. */
    return rill_add_n(g, (rill_output[]){xs[0], xs[1], xs[0], rill_square(g, xs[0], NULL)}, 4,
                      NULL);
}

static void test_add_n_grads(void)
{
    int64_t d[] = {3, 2};
    rill_tensor *a = oc_random(d, 2, -1, 1), *b = oc_random(d, 2, -1, 1),
                *c = oc_random(d, 2, -1, 1);
    check_both("AddN(a, b, c)", 3, (rill_tensor *[]){a, b, c}, build_add_n3, NULL);
    check_both("AddN(x, y, x, x^2)", 2, (rill_tensor *[]){a, b}, build_add_n_shared, NULL);
    rill_tensor_free(a);
    rill_tensor_free(b);
    rill_tensor_free(c);
}

/* --- reductions --- */

typedef struct red_ctx {
    bool mean, keep;
    int naxes; /* -1: all */
    int axes[3];
} red_ctx;

static rill_output build_reduce(rill_graph *g, const rill_output *xs, void *ctx)
{
    red_ctx *c = ctx;
    const int *axes = c->naxes < 0 ? NULL : c->axes;
    /* Square first, so the incoming gradient is not constant along the reduced axes' inputs. */
    rill_output x = rill_mul(g, xs[0], xs[0], NULL);
    return c->mean ? rill_mean(g, x, axes, c->naxes, c->keep, NULL)
                   : rill_sum(g, x, axes, c->naxes, c->keep, NULL);
}

static void test_reduce_grads(void)
{
    const red_ctx rc[] = {
        {false, false, -1, {0}},   {false, true, -1, {0}},  {false, false, 1, {0}},
        {false, true, 1, {1}},     {false, false, 1, {-1}}, {false, false, 2, {0, 2}},
        {false, true, 2, {-1, 0}}, {false, false, 0, {0}},  {false, false, 3, {2, 0, 1}},
    };
    int64_t d3[] = {2, 3, 4}, d2[] = {3, 4};
    for (int mean = 0; mean < 2; mean++) {
        for (size_t k = 0; k < sizeof rc / sizeof rc[0]; k++) {
            red_ctx c = rc[k];
            c.mean = mean;
            rill_tensor *x = oc_random(d3, 3, -1, 1);
            char label[64];
            snprintf(label, sizeof label, "%s case %zu (rank 3)", mean ? "Mean" : "Sum", k);
            check_both(label, 1, &x, build_reduce, &c);
            rill_tensor_free(x);
        }
    }
    const red_ctx rc2[] = {
        {false, false, -1, {0}}, {false, false, 1, {0}},   {false, true, 1, {1}},
        {false, false, 1, {-1}}, {false, true, 2, {0, 1}}, {false, false, 0, {0}},
    };
    for (int mean = 0; mean < 2; mean++) {
        for (size_t k = 0; k < sizeof rc2 / sizeof rc2[0]; k++) {
            red_ctx c = rc2[k];
            c.mean = mean;
            rill_tensor *x = oc_random(d2, 2, -1, 1);
            char label[64];
            snprintf(label, sizeof label, "%s case %zu (rank 2)", mean ? "Mean" : "Sum", k);
            check_both(label, 1, &x, build_reduce, &c);
            rill_tensor_free(x);
        }
    }
    /* A reduction of a scalar. */
    red_ctx c = {true, false, -1, {0}};
    rill_tensor *x = oc_random(NULL, 0, -1, 1);
    check_both("Mean of a scalar", 1, &x, build_reduce, &c);
    rill_tensor_free(x);
}

/* --- MatMul --- */

typedef struct mm_ctx {
    bool ta, tb;
} mm_ctx;

static rill_output build_matmul(rill_graph *g, const rill_output *xs, void *ctx)
{
    mm_ctx *c = ctx;
    return rill_matmul(g, xs[0], xs[1], c->ta, c->tb, NULL);
}

static rill_output build_gram(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    /* x x^T + x^T x summed to a scalar-free shape: [2,2] and [3,3], so combine through sums. */
    rill_output a = rill_matmul(g, xs[0], xs[0], false, true, NULL);
    rill_output b = rill_matmul(g, xs[0], xs[0], true, false, NULL);
    return rill_add(g, rill_sum(g, a, NULL, -1, false, NULL),
                    rill_mean(g, b, (int[]){0}, 1, false, NULL), NULL);
}

static void test_matmul_grads(void)
{
    const int64_t sizes[][3] = {{2, 3, 4}, {1, 5, 2}, {3, 1, 3}};
    for (int s = 0; s < 3; s++) {
        int64_t m = sizes[s][0], k = sizes[s][1], n = sizes[s][2];
        for (int ta = 0; ta < 2; ta++) {
            for (int tb = 0; tb < 2; tb++) {
                int64_t ad[] = {ta ? k : m, ta ? m : k}, bd[] = {tb ? n : k, tb ? k : n};
                rill_tensor *a = oc_random(ad, 2, -1, 1), *b = oc_random(bd, 2, -1, 1);
                mm_ctx c = {ta, tb};
                char label[80];
                snprintf(label, sizeof label, "MatMul %lldx%lldx%lld ta=%d tb=%d", (long long)m,
                         (long long)k, (long long)n, ta, tb);
                check_both(label, 2, (rill_tensor *[]){a, b}, build_matmul, &c);
                rill_tensor_free(a);
                rill_tensor_free(b);
            }
        }
    }
    rill_tensor *x = oc_random((int64_t[]){2, 3}, 2, -1, 1);
    check_both("x x^T and x^T x", 1, &x, build_gram, NULL);
    rill_tensor_free(x);
}

/* --- shape ops and Cast --- */

static rill_output build_reshape(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_output r = rill_reshape(g, xs[0], (int64_t[]){3, -1}, 2, NULL);
    /* Something not elementwise after the reshape, so the layout matters. */
    return rill_matmul(g, r, rill_reshape(g, xs[1], (int64_t[]){-1, 2}, 2, NULL), false, false,
                       NULL);
}

static rill_output build_reshape_to(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    return rill_mul(g, rill_reshape_to(g, xs[0], rill_shape_of(g, xs[1], NULL), NULL), xs[1], NULL);
}

static rill_output build_expand(rill_graph *g, const rill_output *xs, void *ctx)
{
    int axis = *(int *)ctx;
    /* [2,3] expanded then broadcast against [2,1,1]/[1,1,3]-like partners via Mul. */
    rill_output e = rill_expand_dims(g, xs[0], axis, NULL);
    return rill_mul(g, e, rill_exp(g, e, NULL), NULL);
}

typedef struct cast_ctx {
    rill_dtype via;
} cast_ctx;

static rill_output build_cast(rill_graph *g, const rill_output *xs, void *ctx)
{
    cast_ctx *c = ctx;
    rill_output f = rill_cast(g, xs[0], c->via, NULL);
    rill_output y = rill_mul(g, f, rill_cast(g, xs[1], c->via, NULL), NULL);
    return rill_cast(g, rill_add(g, y, rill_square(g, f, NULL), NULL), RILL_DOUBLE, NULL);
}

static void test_shape_op_grads(void)
{
    rill_tensor *a = oc_random((int64_t[]){2, 3}, 2, -1, 1),
                *b = oc_random((int64_t[]){4}, 1, -1, 1);
    check_both("Reshape", 2, (rill_tensor *[]){a, b}, build_reshape, NULL);
    rill_tensor *c = oc_random((int64_t[]){3, 2}, 2, -1, 1);
    check_both("Reshape to Shape(other)", 2, (rill_tensor *[]){a, c}, build_reshape_to, NULL);
    for (int axis = -3; axis <= 2; axis++) {
        char label[64];
        snprintf(label, sizeof label, "ExpandDims axis %d", axis);
        check_both(label, 1, &a, build_expand, &axis);
    }
    /* Cast double -> double is exact; through float the finite differences need a big step
     * (the function is quadratic, so the central difference is still exact up to rounding). */
    cast_ctx cd = {RILL_DOUBLE};
    check_both("Cast via double", 2, (rill_tensor *[]){a, a}, build_cast, &cd);
    cast_ctx cf = {RILL_FLOAT};
    oc_grad_opts o = {.h = 1e-2, .rtol = 1e-4, .atol = 1e-4};
    oc_grad_check("Cast via float", 2, (rill_tensor *[]){a, a}, build_cast, &cf, o);
    o.unknown_shapes = true;
    oc_grad_check("Cast via float (unknown shapes)", 2, (rill_tensor *[]){a, a}, build_cast, &cf,
                  o);
    cast_ctx ch = {RILL_HALF};
    oc_grad_opts oh = {.h = 1e-1, .rtol = 2e-2, .atol = 2e-2};
    oc_grad_check("Cast via half", 2, (rill_tensor *[]){a, a}, build_cast, &ch, oh);
    rill_tensor_free(a);
    rill_tensor_free(b);
    rill_tensor_free(c);
}

/* --- chains and shared inputs --- */

static rill_output build_chain1(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    /* x*x + exp(x)*x */
    rill_output x = xs[0];
    return rill_add(g, rill_mul(g, x, x, NULL), rill_mul(g, rill_exp(g, x, NULL), x, NULL), NULL);
}

static rill_output build_chain2(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    /* log(x^2 + 1) / x - sqrt(x^2 + y) */
    rill_output x = xs[0], y = xs[1];
    rill_output x2 = rill_square(g, x, NULL);
    rill_output l = rill_log(g, rill_add(g, x2, scalar_like(g, x, 1), NULL), NULL);
    return rill_sub(g, rill_div(g, l, x, NULL), rill_sqrt(g, rill_add(g, x2, y, NULL), NULL), NULL);
}

static rill_output build_softmax(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    /* exp(x - max) / sum(exp(x - max), axis 1, keep): Div [2,3] by [2,1]. */
    rill_output x = xs[0];
    rill_output e = rill_exp(g, x, NULL);
    return rill_div(g, e, rill_sum(g, e, (int[]){1}, 1, true, NULL), NULL);
}

static rill_output build_variance(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    /* mean((x - mean(x, 0, keep))^2, 0): Sub [4,3] by [1,3]. */
    rill_output x = xs[0];
    rill_output c = rill_sub(g, x, rill_mean(g, x, (int[]){0}, 1, true, NULL), NULL);
    return rill_mean(g, rill_square(g, c, NULL), (int[]){0}, 1, false, NULL);
}

static rill_output build_plus_total(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    /* x + sum(x) * max(x, y): the scalar sum broadcasts back over x. */
    rill_output x = xs[0];
    rill_output t = rill_sum(g, x, NULL, -1, false, NULL);
    return rill_add(g, x, rill_mul(g, t, rill_maximum(g, x, xs[1], NULL), NULL), NULL);
}

static rill_output build_dense(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    /* A two-layer net: mean(square(max(x W1 + b1, 0) W2 - t)) with W1, b1 inputs. */
    rill_output x = xs[0], w1 = xs[1], b1 = xs[2];
    rill_output h = rill_add(g, rill_matmul(g, x, w1, false, false, NULL), b1, NULL);
    h = rill_maximum(g, h, rill_zeros_like(g, h, NULL), NULL);
    rill_output o = rill_matmul(g, h, w1, false, true, NULL);
    return rill_mean(g, rill_square(g, rill_sub(g, o, x, NULL), NULL), (int[]){1}, 1, false, NULL);
}

static void test_chain_grads(void)
{
    rill_tensor *x = oc_random((int64_t[]){2, 3}, 2, 0.5, 2),
                *y = oc_random((int64_t[]){3}, 1, 0.5, 2);
    check_both("x*x + exp(x)*x", 1, &x, build_chain1, NULL);
    check_both("log(x^2+1)/x - sqrt(x^2+y)", 2, (rill_tensor *[]){x, y}, build_chain2, NULL);
    check_both("softmax", 1, &x, build_softmax, NULL);
    rill_tensor *x4 = oc_random((int64_t[]){4, 3}, 2, -1, 1);
    check_both("variance", 1, &x4, build_variance, NULL);
    rill_tensor *z = oc_random((int64_t[]){2, 3}, 2, -1, 1);
    /* Keep max(x, y) away from ties: x is in [0.5, 2], y alternates above and below it. */
    double *zd = rill_tensor_data(z);
    for (int i = 0; i < 6; i++) zd[i] = i % 2 ? 3 + 0.5 * zd[i] : -2 + 0.5 * zd[i];
    check_both("x + sum(x) * max(x, y)", 2, (rill_tensor *[]){x, z}, build_plus_total, NULL);
    /* The dense net: keep pre-activations away from 0 by the choice of seed-independent data. */
    rill_tensor *in = oc_random((int64_t[]){3, 4}, 2, -1, 1),
                *w1 = oc_random((int64_t[]){4, 5}, 2, -1, 1);
    rill_tensor *b1 = oc_random((int64_t[]){5}, 1, -0.5, 0.5);
    check_both("dense net", 3, (rill_tensor *[]){in, w1, b1}, build_dense, NULL);
    rill_tensor_free(in);
    rill_tensor_free(w1);
    rill_tensor_free(b1);
    rill_tensor_free(z);
    rill_tensor_free(x4);
    rill_tensor_free(x);
    rill_tensor_free(y);
}

/* --- float and half gradients against double --- */

typedef struct typed_ctx {
    oc_build_fn f;
    void *ctx;
    rill_dtype t;
    int nx;
} typed_ctx;

static rill_output build_typed(rill_graph *g, const rill_output *xs, void *ctx)
{
    typed_ctx *c = ctx;
    rill_output tx[8];
    for (int i = 0; i < c->nx; i++) tx[i] = rill_cast(g, xs[i], c->t, NULL);
    return rill_cast(g, c->f(g, tx, c->ctx), RILL_DOUBLE, NULL);
}

/* Symbolic gradients of sum(w * f(x)) computed in dtype t compared with the same computed in
 * double, in one graph with a shared w. */
static void compare_typed(const char *label, rill_dtype t, int nx, rill_tensor *const *vals,
                          oc_build_fn f, void *ctx, double tol)
{
    rill_graph *g = rill_graph_new();
    rill_output xs[8] = {{0}}, dd[8], dt[8];
    for (int i = 0; i < nx; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "x%d", i);
        xs[i] = rill_placeholder(g, RILL_DOUBLE, *rill_tensor_shape(vals[i]), nm);
    }
    rill_output yd = f(g, xs, ctx);
    typed_ctx tc = {f, ctx, t, nx};
    rill_output yt = build_typed(g, xs, &tc);
    rill_output w = rill_placeholder(g, RILL_DOUBLE, rill_shape_unknown(), "w");
    rill_output ld = rill_sum(g, rill_mul(g, w, yd, NULL), NULL, -1, false, NULL);
    rill_output lt = rill_sum(g, rill_mul(g, w, yt, NULL), NULL, -1, false, NULL);
    bool ok =
        rill_gradients(g, &ld, 1, xs, nx, NULL, dd) && rill_gradients(g, &lt, 1, xs, nx, NULL, dt);
    if (!CHECK(ok)) {
        fprintf(stderr, "  case: %s: %s\n", label, rill_status_message(rill_graph_status(g)));
        rill_graph_free(g);
        return;
    }
    rill_session *sess = oc_session(g);
    rill_tensor *y = oc_run(sess, yd, xs, vals, nx);
    rill_tensor *wv = NULL;
    if (y) {
        const rill_shape *s = rill_tensor_shape(y);
        wv = oc_random(s->dims, s->rank, -1.5, 1.5);
    }
    rill_output feeds[9];
    rill_tensor *fv[9];
    for (int i = 0; i < nx; i++) feeds[i] = xs[i], fv[i] = vals[i];
    feeds[nx] = w;
    fv[nx] = wv;
    for (int i = 0; wv && i < nx; i++) {
        rill_tensor *a = oc_run(sess, dd[i], feeds, fv, nx + 1),
                    *b = oc_run(sess, dt[i], feeds, fv, nx + 1);
        if (CHECK(a && b) &&
            CHECK_EQ_INT(rill_tensor_num_elements(a), rill_tensor_num_elements(b))) {
            double scale = 0;
            for (int64_t k = 0; k < rill_tensor_num_elements(a); k++)
                scale = fmax(scale, fabs(rill_tensor_get_double(a, k)));
            for (int64_t k = 0; k < rill_tensor_num_elements(a); k++) {
                double ra = rill_tensor_get_double(a, k), rb = rill_tensor_get_double(b, k);
                if (!CHECK_NEAR(rb, ra, tol * (scale + 1))) {
                    fprintf(stderr, "  case: %s (%s) d/dx%d element %lld\n", label,
                            rill_dtype_name(t), i, (long long)k);
                    break;
                }
            }
        }
        rill_tensor_free(a);
        rill_tensor_free(b);
    }
    rill_tensor_free(wv);
    rill_tensor_free(y);
    rill_session_free(sess);
    rill_graph_free(g);
}

static void test_typed_grads(void)
{
    const rill_dtype types[] = {RILL_FLOAT, RILL_HALF};
    const double tols[] = {1e-5, 3e-2};
    for (int ti = 0; ti < 2; ti++) {
        rill_dtype t = types[ti];
        double tol = tols[ti];
        for (int op = 0; op < 5; op++) {
            for (int c = 0; c < NCASES; c++) {
                rill_tensor *ta, *tb;
                binary_values(op, &cases[c], &ta, &tb);
                bin_ctx ctx = {op, false, NULL};
                char label[64];
                snprintf(label, sizeof label, "%s case %d", binops[op].name, c);
                compare_typed(label, t, 2, (rill_tensor *[]){ta, tb}, build_binary, &ctx, tol);
                rill_tensor_free(ta);
                rill_tensor_free(tb);
            }
        }
        for (int op = 0; op < 6; op++) {
            rill_tensor *x = oc_random((int64_t[]){2, 3}, 2, unops[op].lo, unops[op].hi);
            compare_typed(unops[op].name, t, 1, &x, build_unary, &op, tol);
            rill_tensor_free(x);
        }
        rill_tensor *x = oc_random((int64_t[]){2, 3, 4}, 3, -1, 1);
        red_ctx rs = {false, false, -1, {0}}, rm = {true, true, 2, {0, 2}},
                r1 = {true, false, 1, {1}};
        compare_typed("Sum all", t, 1, &x, build_reduce, &rs, tol);
        compare_typed("Mean keep", t, 1, &x, build_reduce, &rm, tol);
        compare_typed("Mean axis 1", t, 1, &x, build_reduce, &r1, tol);
        rill_tensor_free(x);
        for (int k = 0; k < 4; k++) {
            mm_ctx mc = {k & 1, k >> 1};
            int64_t ad[] = {mc.ta ? 3 : 2, mc.ta ? 2 : 3}, bd[] = {mc.tb ? 4 : 3, mc.tb ? 3 : 4};
            rill_tensor *a = oc_random(ad, 2, -1, 1), *b = oc_random(bd, 2, -1, 1);
            compare_typed("MatMul", t, 2, (rill_tensor *[]){a, b}, build_matmul, &mc, tol);
            rill_tensor_free(a);
            rill_tensor_free(b);
        }
        x = oc_random((int64_t[]){2, 3}, 2, -1, 1);
        compare_typed("softmax", t, 1, &x, build_softmax, NULL, tol);
        rill_tensor_free(x);
    }
}

/* --- rill_gradients' contract --- */

static void test_gradients_api(void)
{
    rill_graph *g = rill_graph_new();
    rill_output a = rill_placeholder(g, RILL_DOUBLE, rill_shape_vector(3), "a");
    rill_output b = rill_placeholder(g, RILL_DOUBLE, rill_shape_vector(3), "b");
    rill_output c = rill_placeholder(g, RILL_DOUBLE, rill_shape_vector(3), "c");
    rill_output y = rill_sum(g, rill_square(g, a, NULL), NULL, -1, false, "y");
    /* b is not connected to y at all; c reaches y2 only through an integer cast. */
    rill_output y2 =
        rill_add(g, y,
                 rill_sum(g, rill_cast(g, rill_cast(g, c, RILL_INT32, NULL), RILL_DOUBLE, NULL),
                          NULL, -1, false, NULL),
                 "y2");
    rill_output dx[3] = {{(rill_node *)1, 7}, {(rill_node *)1, 7}, {(rill_node *)1, 7}};
    CHECK(rill_gradients(g, &y, 1, (rill_output[]){a, b, c}, 3, NULL, dx));
    CHECK(dx[0].node != NULL);
    CHECK(dx[1].node == NULL && dx[1].index == 0);
    CHECK(dx[2].node == NULL && dx[2].index == 0);
    CHECK(rill_graph_ok(g));
    if (dx[0].node) CHECK(strncmp(rill_node_name(dx[0].node), "gradients/", 10) == 0);
    rill_output dy2[2];
    CHECK(rill_gradients(g, &y2, 1, (rill_output[]){c, b}, 2, NULL, dy2));
    CHECK(dy2[0].node == NULL && dy2[1].node == NULL);
    /* The gradient of y with respect to y itself is ones; a second call gets its own scope. */
    rill_output self;
    CHECK(rill_gradients(g, &y, 1, &y, 1, NULL, &self));
    /* grad_ys scales the seed; several ys add up. */
    rill_output seed = rill_const_scalar(g, RILL_DOUBLE, 3, "seed");
    rill_output ga;
    CHECK(rill_gradients(g, &y, 1, &a, 1, &seed, &ga));
    rill_output z = rill_mul(g, a, b, "z");
    rill_output gab[2];
    CHECK(rill_gradients(g, (rill_output[]){y, z}, 2, (rill_output[]){a, b}, 2, NULL, gab));
    CHECK(rill_graph_ok(g));
    rill_session *sess = oc_session(g);
    rill_tensor *av = oc_tensor(RILL_DOUBLE, (int64_t[]){3}, 1, (double[]){1, -2, 0.5});
    rill_tensor *bv = oc_tensor(RILL_DOUBLE, (int64_t[]){3}, 1, (double[]){4, 5, 6});
    rill_output feeds[] = {a, b};
    rill_tensor *vals[] = {av, bv};
    rill_tensor *o = oc_run(sess, dx[0], feeds, vals, 1);
    oc_check_tensor("d sum(a^2)/da", o, RILL_DOUBLE, (int64_t[]){3}, 1, (double[]){2, -4, 1});
    rill_tensor_free(o);
    o = oc_run(sess, self, feeds, vals, 1);
    oc_check_tensor("dy/dy", o, RILL_DOUBLE, NULL, 0, (double[]){1});
    rill_tensor_free(o);
    o = oc_run(sess, ga, feeds, vals, 1);
    oc_check_tensor("grad_ys", o, RILL_DOUBLE, (int64_t[]){3}, 1, (double[]){6, -12, 3});
    rill_tensor_free(o);
    /* d(y + sum(a*b))/da = 2a + b, /db = a. */
    o = oc_run(sess, gab[0], feeds, vals, 2);
    oc_check_tensor("two ys, d/da", o, RILL_DOUBLE, (int64_t[]){3}, 1, (double[]){6, 1, 7});
    rill_tensor_free(o);
    o = oc_run(sess, gab[1], feeds, vals, 2);
    oc_check_tensor("two ys, d/db", o, RILL_DOUBLE, (int64_t[]){3}, 1, (double[]){1, -2, 0.5});
    rill_tensor_free(o);
    rill_tensor_free(av);
    rill_tensor_free(bv);
    rill_session_free(sess);

    /* With respect to an intermediate value, and the same x listed twice. */
    {
        rill_output h = rill_mul(g, a, rill_const_scalar(g, RILL_DOUBLE, 2, NULL), "h");
        rill_output yh = rill_sum(g, rill_mul(g, h, h, NULL), NULL, -1, false, NULL);
        rill_output dh[3];
        CHECK(rill_gradients(g, &yh, 1, (rill_output[]){h, a, h}, 3, NULL, dh));
        rill_session *s2 = oc_session(g);
        rill_tensor *av2 = oc_tensor(RILL_DOUBLE, (int64_t[]){3}, 1, (double[]){1, -2, 0.5});
        for (int k = 0; k < 3; k++) {
            rill_tensor *t = oc_run(s2, dh[k], &a, &av2, 1);
            /* d/dh = 2h = 4a; d/da = 8a */
            double m = k == 1 ? 8 : 4;
            oc_check_tensor("intermediate", t, RILL_DOUBLE, (int64_t[]){3}, 1,
                            (double[]){m * 1, m * -2, m * 0.5});
            rill_tensor_free(t);
        }
        rill_tensor_free(av2);
        rill_session_free(s2);
    }

    /* Integer xs get no gradient. */
    rill_output i = rill_placeholder(g, RILL_INT32, rill_shape_vector(2), "i");
    rill_output yi = rill_sum(g, rill_mul(g, i, i, NULL), NULL, -1, false, NULL);
    rill_output di = {(rill_node *)1, 3};
    CHECK(rill_gradients(g, &yi, 1, &i, 1, NULL, &di));
    CHECK(di.node == NULL);

    /* Errors: an empty y or x is recorded on the graph; after an error every call fails and
     * leaves dx empty. */
    rill_output none = {NULL, 0}, d1 = {(rill_node *)1, 3};
    CHECK(!rill_gradients(g, &none, 1, &a, 1, NULL, &d1));
    CHECK(d1.node == NULL);
    oc_check_build_error("empty y", g, RILL_INVALID_ARGUMENT, "gradients: y 0 is empty");
    d1 = (rill_output){(rill_node *)1, 3};
    CHECK(!rill_gradients(g, &y, 1, &a, 1, NULL, &d1));
    CHECK(d1.node == NULL);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)), "gradients: y 0 is empty");
    rill_graph_clear_status(g);
    CHECK(!rill_gradients(g, &y, 1, &none, 1, NULL, &d1));
    oc_check_build_error("empty x", g, RILL_INVALID_ARGUMENT, "gradients: x 0 is empty");
    rill_graph_free(g);
}

/* A gradient through an unknown-shaped broadcast, fed different shapes on successive runs of
 * one session (the SumToShape kernel sees new shapes each time). */
static void test_unknown_shape_reuse(void)
{
    rill_graph *g = rill_graph_new();
    rill_output x = rill_placeholder(g, RILL_DOUBLE, rill_shape_unknown(), "x");
    rill_output b = rill_placeholder(g, RILL_DOUBLE, rill_shape_unknown(), "b");
    rill_output y =
        rill_sum(g, rill_mul(g, rill_add(g, x, b, NULL), x, NULL), NULL, -1, false, NULL);
    rill_output d[2];
    CHECK(rill_gradients(g, &y, 1, (rill_output[]){x, b}, 2, NULL, d));
    rill_session *sess = oc_session(g);
    const int64_t xs[][2] = {{2, 3}, {4, 1}, {1, 5}};
    const int64_t bs[][2] = {{1, 3}, {1, 1}, {3, 1}};
    for (int k = 0; sess && k < 3; k++) {
        rill_tensor *xv = oc_random(xs[k], 2, -1, 1), *bv = oc_random(bs[k], 2, -1, 1);
        /* dy/db = sum over broadcast of x; dy/dx = 2x + b broadcast (x may broadcast too). */
        int64_t od[OC_MAX_DIMS] = {0};
        int orank = 0;
        CHECK(oc_bcast_shape(xs[k], 2, bs[k], 2, od, &orank));
        double refb[16] = {0}, refx[16] = {0};
        const double *xd = rill_tensor_data(xv), *bd = rill_tensor_data(bv);
        for (int64_t i = 0; i < oc_numel(od, 2); i++) {
            int64_t ix = oc_bcast_index(i, od, 2, xs[k], 2),
                    ib = oc_bcast_index(i, od, 2, bs[k], 2);
            refb[ib] += xd[ix];
            refx[ix] += 2 * xd[ix] + bd[ib];
        }
        rill_tensor *o = oc_run(sess, d[0], (rill_output[]){x, b}, (rill_tensor *[]){xv, bv}, 2);
        oc_check_tensor("unknown reuse dx", o, RILL_DOUBLE, xs[k], 2, refx);
        rill_tensor_free(o);
        o = oc_run(sess, d[1], (rill_output[]){x, b}, (rill_tensor *[]){xv, bv}, 2);
        oc_check_tensor("unknown reuse db", o, RILL_DOUBLE, bs[k], 2, refb);
        rill_tensor_free(o);
        rill_tensor_free(xv);
        rill_tensor_free(bv);
    }
    rill_session_free(sess);
    rill_graph_free(g);
}

/* --- second order: the gradient graph is itself differentiated --- */

typedef struct second_ctx {
    oc_build_fn f;
    void *ctx;
    int nx;
} second_ctx;

/* y = d sum(w0 * f(x)) / dx0 for a fixed random w0: checking its gradient checks the gradients
 * of the ops that first-order gradients build. */
static rill_output build_second(rill_graph *g, const rill_output *xs, void *ctx)
{
    second_ctx *c = ctx;
    rill_output y = c->f(g, xs, c->ctx);
    rill_shape s = rill_output_shape(y);
    rill_output w0;
    if (rill_shape_is_fully_defined(&s)) {
        rill_tensor *wt = oc_random(s.dims, s.rank, 0.5, 1.5);
        w0 = rill_const(g, wt, "w0");
        rill_tensor_free(wt);
    } else {
        w0 = rill_const_scalar(g, RILL_DOUBLE, 0.75, "w0");
    }
    rill_output l = rill_sum(g, rill_mul(g, w0, y, NULL), NULL, -1, false, NULL);
    rill_output d[8];
    if (!rill_gradients(g, &l, 1, xs, c->nx, NULL, d)) return (rill_output){NULL, 0};
    /* Combine every first-order gradient so each second-order path is checked. */
    rill_output acc = d[0];
    for (int i = 1; i < c->nx; i++)
        if (d[i].node)
            acc = rill_add(g, rill_sum(g, acc, NULL, -1, false, NULL),
                           rill_sum(g, d[i], NULL, -1, false, NULL), NULL);
    return acc;
}

static rill_output build_sq_max(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    /* square(max(x, y)): MaximumGrad's incoming gradient depends on x. */
    return rill_square(g, rill_maximum(g, xs[0], xs[1], NULL), NULL);
}

static rill_output build_x_sum_x(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    /* x * mean(x, 1, keep) * sum(x): ReduceGrad's incoming gradient depends on x. */
    rill_output m = rill_mean(g, xs[0], (int[]){1}, 1, true, NULL);
    return rill_mul(g, rill_mul(g, xs[0], m, NULL), rill_sum(g, xs[0], NULL, -1, false, NULL),
                    NULL);
}

static rill_output build_sqrt_chain(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    /* sqrt(x) * x: SqrtGrad's incoming gradient depends on x. */
    return rill_mul(g, rill_sqrt(g, xs[0], NULL), xs[0], NULL);
}

static void test_second_order(void)
{
    rill_tensor *x = oc_random((int64_t[]){2, 3}, 2, 0.5, 2),
                *y = oc_random((int64_t[]){2, 3}, 2, 0.5, 2);
    const int unary[] = {1, 2, 3, 4}; /* Square, Sqrt, Exp, Log */
    for (int k = 0; k < 4; k++) {
        int op = unary[k];
        second_ctx c = {build_unary, &op, 1};
        char label[64];
        snprintf(label, sizeof label, "second order %s", unops[op].name);
        check_both(label, 1, &x, build_second, &c);
    }
    /* Mul and Div are not linear; over every broadcasting case the second derivative goes
     * through SumToShape. */
    for (int op = 2; op <= 3; op++) {
        for (int sc = 0; sc < NCASES; sc++) {
            bin_ctx bc = {op, false, NULL};
            second_ctx c = {build_binary, &bc, 2};
            char label[64];
            snprintf(label, sizeof label, "second order %s case %d", binops[op].name, sc);
            rill_tensor *ta, *tb;
            binary_values(op, &cases[sc], &ta, &tb);
            check_both(label, 2, (rill_tensor *[]){ta, tb}, build_second, &c);
            rill_tensor_free(ta);
            rill_tensor_free(tb);
        }
    }
    red_ctx rc = {true, true, 1, {1}};
    second_ctx c = {build_reduce, &rc, 1};
    check_both("second order Mean keep", 1, &x, build_second, &c);
    c = (second_ctx){build_x_sum_x, NULL, 1};
    check_both("second order x * mean(x) * sum(x)", 1, &x, build_second, &c);
    c = (second_ctx){build_sqrt_chain, NULL, 1};
    check_both("second order sqrt(x) * x", 1, &x, build_second, &c);
    c = (second_ctx){build_softmax, NULL, 1};
    check_both("second order softmax", 1, &x, build_second, &c);
    mm_ctx mc = {false, true};
    c = (second_ctx){build_matmul, &mc, 2};
    check_both("second order MatMul", 2, (rill_tensor *[]){x, y}, build_second, &c);
    rill_tensor *z = oc_random((int64_t[]){3}, 1, -1, 1);
    double *zd = rill_tensor_data(z);
    zd[0] = 3, zd[1] = 0, zd[2] = 1.3; /* above, below and between x's values (0.5..2) */
    const double *xd = rill_tensor_data(x);
    for (int i = 0; i < 6; i++)
        if (fabs(xd[i] - 1.3) < 0.05) zd[2] = 1.2;
    c = (second_ctx){build_sq_max, NULL, 2};
    check_both("second order square(max(x, y))", 2, (rill_tensor *[]){x, z}, build_second, &c);
    rill_tensor_free(z);

    /* A linear function has no second derivative: rill_gradients says so with {NULL, 0}, as
     * TF's None. */
    rill_graph *g = rill_graph_new();
    rill_output a = rill_placeholder(g, RILL_DOUBLE, rill_shape_matrix(2, 3), "a");
    rill_output b = rill_placeholder(g, RILL_DOUBLE, rill_shape_vector(3), "b");
    rill_output l =
        rill_sum(g, rill_sub(g, rill_add(g, a, b, NULL), rill_identity(g, b, NULL), NULL), NULL, -1,
                 false, NULL);
    rill_output d1[2], d2[2];
    CHECK(rill_gradients(g, &l, 1, (rill_output[]){a, b}, 2, NULL, d1));
    rill_output s1 = rill_add(g, rill_sum(g, d1[0], NULL, -1, false, NULL),
                              rill_sum(g, d1[1], NULL, -1, false, NULL), NULL);
    CHECK(rill_gradients(g, &s1, 1, (rill_output[]){a, b}, 2, NULL, d2));
    CHECK(d2[0].node == NULL && d2[1].node == NULL);
    rill_graph_free(g);
    rill_tensor_free(x);
    rill_tensor_free(y);
}

int main(void)
{
    test_binary_grads();
    test_self_binary();
    test_unary_grads();
    test_add_n_grads();
    test_reduce_grads();
    test_matmul_grads();
    test_shape_op_grads();
    test_chain_grads();
    test_typed_grads();
    test_gradients_api();
    test_unknown_shape_reuse();
    test_second_order();
    TEST_MAIN_END();
}
