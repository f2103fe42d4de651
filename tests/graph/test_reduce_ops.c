/* test_reduce_ops.c - Max, Min, Prod, Any, All, ArgMin, Cumsum, Cumprod (src/graph/ops_reduce.c,
 * src/kernels/cpu/cpu_reduce.c): values in every numeric dtype against double-precision
 * references, with the shape known at build time and learnt at run time; gradients (ties for
 * Max, zeros for Prod) against finite differences; TF's error texts.
 */
#include "op_check.h"

#include <string.h>

typedef struct rcase {
    const char *op;
    int naxes; /* -1: all */
    int64_t axes[3];
    bool keep;
} rcase;

static rill_output reduce_op(rill_graph *g, rill_output x, const rcase *c)
{
    rill_op_builder *b = rill_op_builder_new(g, c->op, NULL);
    rill_op_builder_add_input(b, x);
    if (c->naxes >= 0) rill_op_builder_set_ints(b, "axes", c->axes, c->naxes);
    rill_op_builder_set_bool(b, "keep_dims", c->keep);
    rill_node *n = rill_op_builder_finish(b);
    return (rill_output){n, 0};
}

/* The reference: x [2,3,4] reduced over c's axes. */
static int ref_reduce(const rcase *c, const double *x, double *out, int64_t *od)
{
    const int64_t d[3] = {2, 3, 4};
    bool m[3] = {c->naxes < 0, c->naxes < 0, c->naxes < 0};
    for (int i = 0; i < c->naxes; i++) m[c->axes[i] < 0 ? c->axes[i] + 3 : c->axes[i]] = true;
    int r = 0;
    for (int i = 0; i < 3; i++)
        if (!m[i] || c->keep) od[r++] = m[i] ? 1 : d[i];
    int64_t n = 1;
    for (int i = 0; i < 3; i++)
        if (!m[i]) n *= d[i];
    bool first[24];
    for (int64_t i = 0; i < n; i++) first[i] = true;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int e = 0; e < 4; e++) {
                int64_t o = 0;
                int idx[3] = {a, b, e};
                for (int k = 0; k < 3; k++)
                    if (!m[k]) o = o * d[k] + idx[k];
                double v = x[(a * 3 + b) * 4 + e], *p = &out[o];
                if (first[o]) {
                    *p = v;
                    first[o] = false;
                    continue;
                }
                if (!strcmp(c->op, "Max")) *p = v > *p ? v : *p;
                if (!strcmp(c->op, "Min")) *p = v < *p ? v : *p;
                if (!strcmp(c->op, "Prod")) *p *= v;
                if (!strcmp(c->op, "Any")) *p = *p != 0 || v != 0;
                if (!strcmp(c->op, "All")) *p = *p != 0 && v != 0;
            }
    return r;
}

static const rcase rcases[] = {
    {"Max", 1, {1}, false}, {"Max", 2, {0, 2}, true}, {"Min", -1, {0}, false},
    {"Min", 1, {-1}, true}, {"Prod", 1, {2}, false},  {"Prod", 2, {0, 1}, false},
    {"Any", 1, {1}, false}, {"All", 1, {2}, true},
};

static void test_values(void)
{
    static const int64_t xd[3] = {2, 3, 4};
    double xv[24];
    for (size_t k = 0; k < sizeof rcases / sizeof *rcases; k++) {
        const rcase *c = &rcases[k];
        bool boolean = !strcmp(c->op, "Any") || !strcmp(c->op, "All");
        for (int t = 0; t < (boolean ? 1 : OC_NNUMERIC); t++) {
            rill_dtype dt = boolean ? RILL_BOOL : oc_numeric[t];
            for (int i = 0; i < 24; i++)
                xv[i] = boolean ? (double)(oc_next() % 3 != 0) : floor(oc_uniform(-3, 4));
            double want[24];
            int64_t od[3];
            int orank = ref_reduce(c, xv, want, od);
            for (int known = 0; known < 2; known++) {
                char label[96];
                snprintf(label, sizeof label, "%s #%zu %s %s", c->op, k, rill_dtype_name(dt),
                         known ? "static" : "dynamic");
                rill_graph *g = rill_graph_new();
                rill_output x = rill_placeholder(
                    g, dt, known ? rill_shape_make(3, xd) : rill_shape_unknown(), "x");
                rill_output y = reduce_op(g, x, c);
                if (!CHECK(y.node != NULL)) {
                    fprintf(stderr, "  %s: %s\n", label, rill_status_message(rill_graph_status(g)));
                    rill_graph_free(g);
                    continue;
                }
                rill_tensor *xt = oc_tensor(dt, xd, 3, xv);
                rill_session *s = oc_session(g);
                rill_tensor *out = oc_run(s, y, &x, &xt, 1);
                oc_check_tensor(label, out, dt, od, orank, want);
                rill_tensor_free(out);
                rill_tensor_free(xt);
                rill_session_free(s);
                rill_graph_free(g);
            }
        }
    }
}

static rill_output attr_op(rill_graph *g, const char *op, rill_output x, int64_t axis, bool excl,
                           bool rev, rill_dtype ot)
{
    rill_op_builder *b = rill_op_builder_new(g, op, NULL);
    rill_op_builder_add_input(b, x);
    rill_op_builder_set_int(b, "axis", axis);
    if (!strcmp(op, "ArgMin")) {
        rill_op_builder_set_type(b, "output_type", ot);
    } else {
        rill_op_builder_set_bool(b, "exclusive", excl);
        rill_op_builder_set_bool(b, "reverse", rev);
    }
    return (rill_output){rill_op_builder_finish(b), 0};
}

static void test_scans_and_argmin(void)
{
    static const int64_t xd[2] = {3, 4};
    double xv[12];
    for (int t = 0; t < OC_NNUMERIC; t++) {
        rill_dtype dt = oc_numeric[t];
        for (int i = 0; i < 12; i++) xv[i] = floor(oc_uniform(-3, 4));
        for (int v = 0; v < 8; v++) {
            bool prod = v & 1, excl = v & 2, rev = v & 4;
            double want[12];
            for (int r = 0; r < 3; r++) {
                double acc = prod ? 1 : 0;
                for (int k = 0; k < 4; k++) {
                    int j = rev ? 3 - k : k;
                    double e = xv[r * 4 + j];
                    if (!excl) acc = prod ? acc * e : acc + e;
                    want[r * 4 + j] = acc;
                    if (excl) acc = prod ? acc * e : acc + e;
                }
            }
            char label[96];
            snprintf(label, sizeof label, "%s excl=%d rev=%d %s", prod ? "Cumprod" : "Cumsum", excl,
                     rev, rill_dtype_name(dt));
            rill_graph *g = rill_graph_new();
            rill_tensor *xt = oc_tensor(dt, xd, 2, xv);
            rill_output y = attr_op(g, prod ? "Cumprod" : "Cumsum", rill_const(g, xt, "x"), -1,
                                    excl, rev, RILL_INT64);
            rill_tensor *out = oc_eval(g, y);
            oc_check_tensor(label, out, dt, xd, 2, want);
            rill_tensor_free(out);
            rill_tensor_free(xt);
            rill_graph_free(g);
        }
        /* ArgMin along axis 0, first of ties */
        double want[4];
        for (int j = 0; j < 4; j++) {
            int best = 0;
            for (int r = 1; r < 3; r++)
                if (xv[r * 4 + j] < xv[best * 4 + j]) best = r;
            want[j] = best;
        }
        rill_dtype ots[2] = {RILL_INT32, RILL_INT64};
        for (int o = 0; o < 2; o++) {
            rill_graph *g = rill_graph_new();
            rill_tensor *xt = oc_tensor(dt, xd, 2, xv);
            rill_output y = attr_op(g, "ArgMin", rill_const(g, xt, "x"), 0, 0, 0, ots[o]);
            rill_tensor *out = oc_eval(g, y);
            int64_t od[1] = {4};
            oc_check_tensor("ArgMin", out, ots[o], od, 1, want);
            rill_tensor_free(out);
            rill_tensor_free(xt);
            rill_graph_free(g);
        }
    }
}

static rill_output build_reduce(rill_graph *g, const rill_output *xs, void *ctx)
{
    return reduce_op(g, xs[0], ctx);
}

static rill_output build_scan(rill_graph *g, const rill_output *xs, void *ctx)
{
    const int *v = ctx;
    return attr_op(g, v[0] ? "Cumprod" : "Cumsum", xs[0], v[1], v[2], v[3], RILL_INT64);
}

static void test_gradients(void)
{
    static const int64_t xd[3] = {2, 3, 4};
    double xv[24];
    for (int i = 0; i < 24; i++) xv[i] = oc_uniform(0.5, 2) * (i % 2 ? 1 : -1);
    xv[5] = xv[6] = 3; /* a tie for Max over axis 2 (row [1..]: elements 4..7) */
    xv[1] = 0;         /* a zero for Prod */
    rill_tensor *x = oc_tensor(RILL_DOUBLE, xd, 3, xv);
    for (size_t k = 0; k < 6; k++) {
        for (int unknown = 0; unknown < 2; unknown++) {
            char label[64];
            snprintf(label, sizeof label, "grad %s #%zu%s", rcases[k].op, k,
                     unknown ? " (dynamic)" : "");
            oc_grad_check(label, 1, &x, build_reduce, (void *)&rcases[k],
                          (oc_grad_opts){.unknown_shapes = unknown});
        }
    }
    /* the tie: dy split evenly (TF's rule), not a finite-difference question */
    rcase c = {"Max", 1, {2}, false};
    rill_graph *g = rill_graph_new();
    rill_output xo = rill_const(g, x, "x");
    rill_output y = reduce_op(g, xo, &c), dx;
    CHECK(rill_gradients(g, &y, 1, &xo, 1, NULL, &dx));
    rill_tensor *gt = oc_eval(g, dx);
    if (CHECK(gt != NULL)) {
        CHECK(fabs(rill_tensor_get_double(gt, 5) - 0.5) < 1e-12);
        CHECK(fabs(rill_tensor_get_double(gt, 6) - 0.5) < 1e-12);
    }
    rill_tensor_free(gt);
    rill_graph_free(g);
    xv[1] = 0.7;
    rill_tensor *x2 = oc_tensor(RILL_DOUBLE, xd, 3, xv);
    for (int v = 0; v < 8; v++) {
        int sv[4] = {v & 1, v & 2 ? 1 : -2, (v >> 1) & 1, (v >> 2) & 1};
        char label[64];
        snprintf(label, sizeof label, "grad %s axis %d excl %d rev %d",
                 sv[0] ? "Cumprod" : "Cumsum", sv[1], sv[2], sv[3]);
        oc_grad_check(label, 1, &x2, build_scan, sv, (oc_grad_opts){0});
    }
    rill_tensor_free(x);
    rill_tensor_free(x2);
}

static void expect_build_error(rill_output y, rill_graph *g, const char *text)
{
    CHECK(y.node == NULL);
    const char *m = rill_status_message(rill_graph_status(g));
    if (!CHECK(strstr(m, text) != NULL)) fprintf(stderr, "  got: %s\n  want: %s\n", m, text);
}

static void test_errors(void)
{
    static const int64_t xd[2] = {2, 3};
    rill_graph *g = rill_graph_new();
    rcase c = {"Max", 1, {2}, false};
    expect_build_error(
        reduce_op(g, rill_placeholder(g, RILL_FLOAT, rill_shape_make(2, xd), "x"), &c), g,
        "Invalid reduction dimension 2 for input with 2 dimensions.");
    rill_graph_free(g);
    g = rill_graph_new();
    rcase a = {"Any", -1, {0}, false};
    expect_build_error(
        reduce_op(g, rill_placeholder(g, RILL_FLOAT, rill_shape_make(2, xd), "x"), &a), g,
        "Input 'input' of 'Any' Op has type float that does not match expected "
        "type of bool.");
    rill_graph_free(g);
    g = rill_graph_new();
    expect_build_error(attr_op(g, "ArgMin",
                               rill_placeholder(g, RILL_FLOAT, rill_shape_make(2, xd), "x"), 2, 0,
                               0, RILL_INT64),
                       g, "Dimension (2) must be in the range [-2, 2)");
    rill_graph_free(g);
    /* run time: the shape learnt only then */
    g = rill_graph_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "x");
    rill_output y = reduce_op(g, x, &c);
    rill_session *s = oc_session(g);
    rill_tensor *xt = oc_tensor(RILL_FLOAT, xd, 2, (double[6]){0});
    rill_tensor *out = NULL;
    rill_status *st = rill_status_new();
    rill_session_run(s, &x, &xt, 1, &y, &out, 1, NULL, 0, st);
    CHECK(rill_status_code(st) == RILL_INVALID_ARGUMENT);
    rill_status_free(st);
    rill_tensor_free(out);
    rill_tensor_free(xt);
    rill_session_free(s);
    rill_graph_free(g);
}

int main(void)
{
    test_values();
    test_scans_and_argmin();
    test_gradients();
    test_errors();
    TEST_MAIN_END();
}
