/* test_check_ops.c - the checks and logging ops (src/graph/ops_check.c): Assert's summaries
 * and text (TF 2.15's, for the same inputs), CheckNumerics' texts and its gradient (finite
 * differences, and the gradient checked for NaN/Inf as TF's _CheckNumericsGrad does),
 * EnsureShape's build-time and run-time errors and its gradient, IdentityN, StringFormat's
 * numpy-like summaries, IsVariableInitialized. */
#include "op_check.h"

#include <string.h>

static rill_output const_bool(rill_graph *g, bool v)
{
    rill_tensor *t = rill_tensor_new(RILL_BOOL, NULL, 0);
    *(bool *)rill_tensor_data(t) = v;
    rill_output o = rill_const(g, t, NULL);
    rill_tensor_free(t);
    return o;
}

static rill_node *make(rill_graph *g, const char *type, const rill_output *in, int n,
                       const char *msg)
{
    rill_op_builder *b = rill_op_builder_new(g, type, NULL);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, in[i]);
    if (msg) rill_op_builder_set_string(b, "message", msg);
    return rill_op_builder_finish(b);
}

/* The error message of running fetch (or target) in a fresh session; caller frees. */
static char *run_error(rill_graph *g, rill_output fetch, rill_node *target)
{
    rill_session *sess = oc_session(g);
    rill_status *s = rill_status_new();
    rill_tensor *out = NULL;
    if (target)
        rill_session_run_targets(sess, &target, 1, s);
    else
        rill_session_run(sess, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, s);
    char *m = rill_status_ok(s) ? NULL : strdup(rill_status_message(s));
    rill_tensor_free(out);
    rill_status_free(s);
    rill_session_free(sess);
    return m;
}

static void test_assert(void)
{
    rill_graph *g = rill_graph_new();
    int64_t d2[] = {2, 2};
    double v[] = {1.5, 2.25, 3.1, 4};
    rill_tensor *t = oc_tensor(RILL_FLOAT, d2, 2, v);
    rill_tensor *str = rill_tensor_scalar_string("q\"x");
    rill_output data[3] = {const_bool(g, false), rill_const(g, t, NULL), rill_const(g, str, NULL)};
    rill_tensor_free(str);
    rill_node *a = make(g, "Assert", data, 3, NULL);
    CHECK(a != NULL);
    char *m = run_error(g, (rill_output){NULL, 0}, a);
    CHECK(m != NULL);
    if (m) CHECK_STR_CONTAINS(m, "assertion failed: [[1.5 2.25][3.1...]...] [q\\\"x]");
    free(m);
    /* a true condition passes; a non-bool one is refused when built */
    rill_output ok[1] = {const_bool(g, true)};
    rill_node *b = make(g, "Assert", ok, 1, NULL);
    CHECK(b != NULL);
    CHECK(run_error(g, (rill_output){NULL, 0}, b) == NULL);
    rill_tensor_free(t);
    rill_graph_free(g);
    g = rill_graph_new();
    rill_output f[1] = {rill_const_float(g, 1.0f, NULL)};
    CHECK(make(g, "Assert", f, 1, NULL) == NULL);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)),
                       "Input 'condition' of 'Assert' Op has type float");
    rill_graph_free(g);
}

static rill_output numerics_fn(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_output c = {make(g, "CheckNumerics", xs, 1, "m"), 0};
    return rill_mul(g, c, rill_tanh(g, c, NULL), NULL);
}

static rill_output ensure_fn(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_op_builder *b = rill_op_builder_new(g, "EnsureShape", NULL);
    rill_op_builder_add_input(b, xs[0]);
    int64_t dims[] = {-1, 3};
    rill_op_builder_set_shape(b, "shape", rill_shape_make(2, dims));
    rill_output e = {rill_op_builder_finish(b), 0};
    return rill_square(g, e, NULL);
}

static rill_output identity_n_fn(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_op_builder *b = rill_op_builder_new(g, "IdentityN", NULL);
    rill_op_builder_add_input(b, xs[0]);
    rill_op_builder_add_input(b, xs[1]);
    rill_op_builder_set_int(b, "num_outputs", 2);
    rill_node *n = rill_op_builder_finish(b);
    return rill_mul(g, (rill_output){n, 0}, rill_exp(g, (rill_output){n, 1}, NULL), NULL);
}

static void test_check_numerics(void)
{
    int64_t d[] = {2, 3};
    rill_tensor *x = oc_random(d, 2, -2, 2);
    CHECK(oc_grad_check("CheckNumerics", 1, &x, numerics_fn, NULL, (oc_grad_opts){0}));
    CHECK(oc_grad_check("EnsureShape", 1, &x, ensure_fn, NULL, (oc_grad_opts){0}));
    rill_tensor *xy[2] = {x, x};
    CHECK(oc_grad_check("IdentityN", 2, xy, identity_n_fn, NULL, (oc_grad_opts){0}));
    rill_tensor_free(x);

    const double bad[][2] = {{1, NAN}, {INFINITY, 1}, {NAN, -INFINITY}};
    const char *want[] = {"m : Tensor had NaN values", "m : Tensor had Inf values",
                          "m : Tensor had Inf and NaN values"};
    for (int k = 0; k < 3; k++) {
        rill_graph *g = rill_graph_new();
        int64_t d2[] = {2};
        rill_tensor *t = oc_tensor(RILL_FLOAT, d2, 1, bad[k]);
        rill_output c = rill_const(g, t, NULL);
        rill_output y = {make(g, "CheckNumerics", &c, 1, "m"), 0};
        char *m = run_error(g, y, NULL);
        CHECK(m != NULL);
        if (m) CHECK_STR_CONTAINS(m, want[k]);
        free(m);
        rill_tensor_free(t);
        rill_graph_free(g);
    }
    /* the gradient is checked: y = x * 1e38 overflows to Inf only in dy */
    rill_graph *g = rill_graph_new();
    rill_output x0 = rill_const_float(g, 1e30f, NULL);
    rill_output c = {make(g, "CheckNumerics", &x0, 1, "m"), 0};
    rill_output y = rill_square(g, c, NULL), dx;
    rill_output seed = rill_const_float(g, 1e30f, NULL);
    CHECK(rill_gradients(g, &y, 1, &x0, 1, &seed, &dx));
    char *m = run_error(g, dx, NULL);
    CHECK(m != NULL);
    if (m)
        CHECK_STR_CONTAINS(m, "Not a number (NaN) or infinity (Inf) values detected in "
                              "gradient. m : Tensor had Inf values");
    free(m);
    rill_graph_free(g);
}

static void test_ensure_shape_errors(void)
{
    rill_graph *g = rill_graph_new();
    int64_t pd[] = {-1, 2}, want[] = {-1, 3};
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_make(2, pd), "x");
    rill_op_builder *b = rill_op_builder_new(g, "EnsureShape", NULL);
    rill_op_builder_add_input(b, x);
    rill_op_builder_set_shape(b, "shape", rill_shape_make(2, want));
    CHECK(rill_op_builder_finish(b) == NULL);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)),
                       "Dimension 1 in both shapes must be equal, but are 3 and 2. Shapes are "
                       "[?,3] and [?,2].");
    rill_graph_free(g);

    g = rill_graph_new();
    int64_t d[] = {3};
    double v[] = {1, 2, 3};
    rill_tensor *t = oc_tensor(RILL_FLOAT, d, 1, v);
    rill_output c = rill_const(g, t, "c");
    b = rill_op_builder_new(g, "EnsureShape", NULL);
    rill_op_builder_add_input(b, rill_identity(g, c, "ident"));
    int64_t w2[] = {2};
    rill_op_builder_set_shape(b, "shape", rill_shape_make(1, w2));
    rill_node *e = rill_op_builder_finish(b);
    CHECK(e == NULL); /* [3] vs [2] is known when built */
    rill_tensor_free(t);
    rill_graph_free(g);
}

static void test_string_format_and_variables(void)
{
    rill_graph *g = rill_graph_new();
    int64_t d[] = {3, 10};
    double v[30];
    for (int i = 0; i < 30; i++) v[i] = i;
    rill_tensor *t = oc_tensor(RILL_INT32, d, 2, v);
    rill_output c = rill_const(g, t, NULL);
    rill_op_builder *b = rill_op_builder_new(g, "StringFormat", NULL);
    rill_op_builder_add_input(b, c);
    rill_op_builder_set_string(b, "template", "t: {}!");
    rill_node *f = rill_op_builder_finish(b);
    CHECK(f != NULL);
    rill_tensor *s = oc_eval(g, (rill_output){f, 0});
    if (CHECK(s != NULL)) {
        size_t len = 0;
        const char *str = rill_tensor_get_string(s, 0, &len);
        CHECK_EQ_STR(str, "t: [[0 1 2 ... 7 8 9]\n [10 11 12 ... 17 18 19]\n [20 21 22 ... 27 28 "
                          "29]]!");
    }
    rill_tensor_free(s);
    /* a placeholder count that differs from the inputs' */
    b = rill_op_builder_new(g, "StringFormat", NULL);
    rill_op_builder_add_input(b, c);
    rill_op_builder_set_string(b, "template", "{} {}");
    CHECK(rill_op_builder_finish(b) == NULL);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)),
                       "num placeholders in template and num inputs must match: 2 vs. 1");
    rill_tensor_free(t);
    rill_graph_free(g);

    g = rill_graph_new();
    rill_output var = rill_variable_from(g, rill_const_float(g, 2.0f, NULL), true, "v");
    rill_output init = {make(g, "IsVariableInitialized", &var, 1, NULL), 0};
    rill_session *sess = oc_session(g);
    rill_tensor *r = oc_run(sess, init, NULL, NULL, 0);
    if (CHECK(r != NULL)) CHECK(!*(bool *)rill_tensor_data(r));
    rill_tensor_free(r);
    rill_node *vi = rill_variable_initializer(var);
    CHECK(oc_run_targets(sess, &vi, 1));
    r = oc_run(sess, init, NULL, NULL, 0);
    if (CHECK(r != NULL)) CHECK(*(bool *)rill_tensor_data(r));
    rill_tensor_free(r);
    rill_session_free(sess);
    rill_graph_free(g);
}

/* The gradient override: Square's gradient replaced by 3 * dy, Tanh's stopped, the rest the
 * ops' own. */
static int override_calls;
static bool square_override(void *arg, rill_graph *g, rill_node *n, const rill_output *dy,
                            rill_output *dx)
{
    (void)arg;
    if (!dy) /* the question: only Square and Tanh are made here */
        return strcmp(rill_node_op_type(n), "Square") == 0 ||
               strcmp(rill_node_op_type(n), "Tanh") == 0;
    override_calls++;
    if (strcmp(rill_node_op_type(n), "Square") == 0) {
        dx[0] = rill_mul(g, dy[0], rill_const_float(g, 3.0f, NULL), NULL);
        return true;
    }
    if (strcmp(rill_node_op_type(n), "Tanh") == 0) {
        dx[0] = (rill_output){NULL, 0};
        return true;
    }
    return false;
}

static void test_gradient_override(void)
{
    rill_graph *g = rill_graph_new();
    rill_output x = rill_const_float(g, 2.0f, NULL);
    rill_output y = rill_add(g, rill_square(g, x, NULL), rill_exp(g, x, NULL), NULL);
    rill_output t = rill_tanh(g, x, NULL), dx, dt;
    rill_graph_set_gradient_override(g, square_override, NULL);
    CHECK(rill_gradients(g, &y, 1, &x, 1, NULL, &dx));
    CHECK_EQ_INT(override_calls, 1); /* Square only */
    CHECK(rill_gradients(g, &t, 1, &x, 1, NULL, &dt));
    CHECK(dt.node == NULL);
    rill_tensor *r = oc_eval(g, dx);
    if (CHECK(r != NULL)) CHECK_NEAR(*(float *)rill_tensor_data(r), 3.0 + exp(2.0), 1e-5);
    rill_tensor_free(r);
    rill_graph_set_gradient_override(g, NULL, NULL);
    CHECK(rill_gradients(g, &y, 1, &x, 1, NULL, &dx));
    r = oc_eval(g, dx);
    if (CHECK(r != NULL)) CHECK_NEAR(*(float *)rill_tensor_data(r), 4.0 + exp(2.0), 1e-5);
    rill_tensor_free(r);
    rill_graph_free(g);
}

int main(void)
{
    test_gradient_override();
    test_assert();
    test_check_numerics();
    test_ensure_shape_errors();
    test_string_format_and_variables();
    TEST_MAIN_END();
}
