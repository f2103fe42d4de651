/* test_permute_ops.c - Roll and ReverseSequence (src/graph/ops_permute.c) and DivNoNan
 * (ops_elementwise.c): values against references computed here, gradients against finite
 * differences (oc_grad_check), TF's error texts for bad shapes, attrs and lengths. */
#include "op_check.h"

#include <string.h>

static rill_output int_const(rill_graph *g, rill_dtype t, const int64_t *v, int64_t n)
{
    double d[16];
    for (int64_t i = 0; i < n; i++) d[i] = (double)v[i];
    rill_tensor *x = oc_tensor(t, &n, 1, d);
    rill_output c = rill_const(g, x, "len");
    rill_tensor_free(x);
    return c;
}

/* --- Roll --- */

typedef struct roll_case {
    int64_t shift[3], axis[3];
    int n;
} roll_case;

static rill_output build_roll(rill_graph *g, const rill_output *xs, void *ctx)
{
    const roll_case *c = ctx;
    rill_op_builder *b = rill_op_builder_new(g, "Roll", NULL);
    rill_op_builder_add_input(b, xs[0]);
    rill_op_builder_set_ints(b, "shift", c->shift, c->n);
    rill_op_builder_set_ints(b, "axis", c->axis, c->n);
    return (rill_output){rill_op_builder_finish(b), 0};
}

static void test_roll(void)
{
    const int64_t dims[3] = {2, 3, 4};
    rill_tensor *x = oc_random(dims, 3, -2, 2);
    const double *xv = rill_tensor_data(x);
    const roll_case cases[] = {
        {.shift = {1}, .axis = {2}, .n = 1},
        {.shift = {-1, 5}, .axis = {0, -1}, .n = 2},
        {.shift = {2, 1, -7}, .axis = {1, 1, 2}, .n = 3}, /* axis 1 twice: the shifts add */
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const roll_case *c = &cases[ci];
        int64_t sh[3] = {0};
        for (int i = 0; i < c->n; i++)
            sh[c->axis[i] < 0 ? c->axis[i] + 3 : c->axis[i]] += c->shift[i];
        double ref[24];
        for (int64_t i = 0; i < 2; i++)
            for (int64_t j = 0; j < 3; j++)
                for (int64_t k = 0; k < 4; k++) {
                    int64_t oi = (((i + sh[0]) % 2) + 2) % 2, oj = (((j + sh[1]) % 3) + 3) % 3,
                            ok = (((k + sh[2]) % 4) + 4) % 4;
                    ref[(oi * 3 + oj) * 4 + ok] = xv[(i * 3 + j) * 4 + k];
                }
        rill_graph *g = rill_graph_new();
        rill_tensor *t =
            oc_eval(g, build_roll(g, (rill_output[]){rill_const(g, x, "x")}, (void *)c));
        char lab[32];
        snprintf(lab, sizeof lab, "Roll case %zu", ci);
        oc_check_tensor(lab, t, RILL_DOUBLE, dims, 3, ref);
        rill_tensor_free(t);
        rill_graph_free(g);
        oc_grad_check(lab, 1, &x, build_roll, (void *)c, (oc_grad_opts){0});
    }
    /* int32 and strings move as they are */
    {
        rill_graph *g = rill_graph_new();
        int64_t v[5] = {1, 2, 3, 4, 5};
        roll_case c = {.shift = {2}, .axis = {0}, .n = 1};
        rill_tensor *t =
            oc_eval(g, build_roll(g, (rill_output[]){int_const(g, RILL_INT32, v, 5)}, &c));
        oc_check_tensor("Roll int32", t, RILL_INT32, (int64_t[]){5}, 1, (double[]){4, 5, 1, 2, 3});
        rill_tensor_free(t);
        rill_graph_free(g);
    }
    /* TF's texts */
    {
        rill_graph *g = rill_graph_new();
        roll_case c = {.shift = {1, 2}, .axis = {0}, .n = 1};
        rill_op_builder *b = rill_op_builder_new(g, "Roll", NULL);
        rill_op_builder_add_input(b, rill_const(g, x, "x"));
        rill_op_builder_set_ints(b, "shift", c.shift, 2);
        rill_op_builder_set_ints(b, "axis", c.axis, 1);
        CHECK(rill_op_builder_finish(b) == NULL);
        oc_check_build_error("Roll sizes", g, RILL_INVALID_ARGUMENT,
                             "Dimension 0 in both shapes must be equal, but are 2 and 1");
        rill_graph_free(g);
        g = rill_graph_new();
        roll_case c2 = {.shift = {1}, .axis = {3}, .n = 1};
        CHECK(build_roll(g, (rill_output[]){rill_const(g, x, "x")}, &c2).node == NULL);
        oc_check_build_error("Roll axis", g, RILL_INVALID_ARGUMENT, "axis 3 is out of range");
        rill_graph_free(g);
    }
    rill_tensor_free(x);
}

/* --- ReverseSequence --- */

typedef struct rs_case {
    int64_t seq_dim, batch_dim;
    int64_t len[4];
    int nlen;
} rs_case;

static rill_output build_rs(rill_graph *g, const rill_output *xs, void *ctx)
{
    const rs_case *c = ctx;
    rill_op_builder *b = rill_op_builder_new(g, "ReverseSequence", NULL);
    rill_op_builder_add_input(b, xs[0]);
    rill_op_builder_add_input(b, int_const(g, RILL_INT64, c->len, c->nlen));
    rill_op_builder_set_int(b, "seq_dim", c->seq_dim);
    rill_op_builder_set_int(b, "batch_dim", c->batch_dim);
    return (rill_output){rill_op_builder_finish(b), 0};
}

static void test_reverse_sequence(void)
{
    const int64_t dims[3] = {3, 4, 2};
    rill_tensor *x = oc_random(dims, 3, -2, 2);
    const double *xv = rill_tensor_data(x);
    const rs_case cases[] = {
        {.seq_dim = 1, .batch_dim = 0, .len = {4, 0, 2}, .nlen = 3},
        {.seq_dim = 0, .batch_dim = 2, .len = {3, 1}, .nlen = 2},
        {.seq_dim = 1, .batch_dim = 2, .len = {2, 3}, .nlen = 2},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const rs_case *c = &cases[ci];
        double ref[24];
        for (int64_t i = 0; i < 3; i++)
            for (int64_t j = 0; j < 4; j++)
                for (int64_t k = 0; k < 2; k++) {
                    int64_t s[3] = {i, j, k};
                    int64_t l = c->len[s[c->batch_dim]];
                    if (s[c->seq_dim] < l) s[c->seq_dim] = l - 1 - s[c->seq_dim];
                    ref[(i * 4 + j) * 2 + k] = xv[(s[0] * 4 + s[1]) * 2 + s[2]];
                }
        rill_graph *g = rill_graph_new();
        rill_tensor *t = oc_eval(g, build_rs(g, (rill_output[]){rill_const(g, x, "x")}, (void *)c));
        char lab[48];
        snprintf(lab, sizeof lab, "ReverseSequence case %zu", ci);
        oc_check_tensor(lab, t, RILL_DOUBLE, dims, 3, ref);
        rill_tensor_free(t);
        rill_graph_free(g);
        oc_grad_check(lab, 1, &x, build_rs, (void *)c, (oc_grad_opts){0});
        oc_grad_check(lab, 1, &x, build_rs, (void *)c, (oc_grad_opts){.unknown_shapes = true});
    }
    /* TF's texts: at build time, and the lengths at run time */
    struct {
        rs_case c;
        bool run;
        const char *text;
    } bad[] = {
        {{1, 0, {1, 2}, 2}, false, "Dimensions must be equal, but are 3 and 2"},
        {{3, 0, {1, 2, 3}, 3}, false, "seq_dim must be < input rank: 3 vs. 3"},
        {{1, 3, {1, 2, 3}, 3}, false, "batch_dim must be < input rank: 3 vs. 3"},
        {{1, 1, {1, 2, 3}, 3}, false, "must not be the same"},
        {{1, 0, {1, 5, 3}, 3}, true, "seq_lens(1) > input.dims(1)"},
        {{1, 0, {1, -1, 3}, 3}, true, "seq_lens(1) < 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rill_graph *g = rill_graph_new();
        rill_output y = build_rs(g, (rill_output[]){rill_const(g, x, "x")}, &bad[i].c);
        if (!bad[i].run) {
            CHECK(y.node == NULL);
            oc_check_build_error(bad[i].text, g, RILL_INVALID_ARGUMENT, bad[i].text);
        } else {
            rill_session *sess = oc_session(g);
            rill_tensor *out = NULL;
            rill_status *st = rill_status_new();
            rill_session_run(sess, NULL, NULL, 0, &y, &out, 1, NULL, 0, st);
            CHECK_EQ_INT(rill_status_code(st), RILL_INVALID_ARGUMENT);
            CHECK_STR_CONTAINS(rill_status_message(st), bad[i].text);
            rill_tensor_free(out);
            rill_status_free(st);
            rill_session_free(sess);
        }
        rill_graph_free(g);
    }
    rill_tensor_free(x);
}

/* --- DivNoNan --- */

static rill_output build_dnn(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_op_builder *b = rill_op_builder_new(g, "DivNoNan", NULL);
    rill_op_builder_add_input(b, xs[0]);
    rill_op_builder_add_input(b, xs[1]);
    return (rill_output){rill_op_builder_finish(b), 0};
}

static void test_div_no_nan(void)
{
    const rill_dtype dts[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};
    double xv[6] = {1, -2, 0, 3.5, 4, -1}, yv[3] = {2, 0, -0.5};
    for (size_t d = 0; d < 3; d++) {
        rill_graph *g = rill_graph_new();
        rill_tensor *xt = oc_tensor(dts[d], (int64_t[]){2, 3}, 2, xv);
        rill_tensor *yt = oc_tensor(dts[d], (int64_t[]){3}, 1, yv);
        rill_output in[] = {rill_const(g, xt, "x"), rill_const(g, yt, "y")};
        rill_tensor *t = oc_eval(g, build_dnn(g, in, NULL));
        double ref[6];
        for (int i = 0; i < 6; i++) ref[i] = yv[i % 3] == 0 ? 0 : xv[i] / yv[i % 3];
        oc_check_tensor("DivNoNan broadcast", t, dts[d], (int64_t[]){2, 3}, 2, ref);
        rill_tensor_free(t);
        rill_tensor_free(xt);
        rill_tensor_free(yt);
        rill_graph_free(g);
    }
    /* the gradient, y away from 0 (dy is 0 where y is; the check needs y smooth there) */
    rill_tensor *v[2] = {oc_random((int64_t[]){2, 3}, 2, -2, 2),
                         oc_random((int64_t[]){3}, 1, 0.5, 2)};
    oc_grad_check("DivNoNan", 2, v, build_dnn, NULL, (oc_grad_opts){0});
    rill_tensor_free(v[0]);
    rill_tensor_free(v[1]);
    /* where y == 0 both gradients are 0, not NaN */
    {
        rill_graph *g = rill_graph_new();
        rill_tensor *xt = oc_tensor(RILL_DOUBLE, (int64_t[]){2}, 1, (double[]){1, 2});
        rill_tensor *yt = oc_tensor(RILL_DOUBLE, (int64_t[]){2}, 1, (double[]){0, 4});
        rill_output in[] = {rill_const(g, xt, "x"), rill_const(g, yt, "y")};
        rill_output z = build_dnn(g, in, NULL), dx[2];
        CHECK(rill_gradients(g, &z, 1, in, 2, NULL, dx));
        rill_tensor *a = oc_eval(g, dx[0]), *b = oc_eval(g, dx[1]);
        oc_check_tensor("DivNoNan dx at y=0", a, RILL_DOUBLE, (int64_t[]){2}, 1,
                        (double[]){0, 0.25});
        oc_check_tensor("DivNoNan dy at y=0", b, RILL_DOUBLE, (int64_t[]){2}, 1,
                        (double[]){0, -2.0 / 16});
        rill_tensor_free(a);
        rill_tensor_free(b);
        rill_tensor_free(xt);
        rill_tensor_free(yt);
        rill_graph_free(g);
    }
    /* TF's texts: int32 is not among its types; shapes that do not broadcast */
    {
        rill_graph *g = rill_graph_new();
        rill_tensor *xt = oc_tensor(RILL_INT32, (int64_t[]){3}, 1, xv);
        rill_output in[] = {rill_const(g, xt, "x"), rill_const(g, xt, "y")};
        CHECK(build_dnn(g, in, NULL).node == NULL);
        oc_check_build_error("DivNoNan int32", g, RILL_INVALID_ARGUMENT,
                             "Value for attr 'T' of int32 is not in the list of allowed values");
        rill_tensor_free(xt);
        rill_graph_free(g);
    }
}

int main(void)
{
    oc_seed(23);
    test_roll();
    test_reverse_sequence();
    test_div_no_nan();
    TEST_MAIN_END();
}
