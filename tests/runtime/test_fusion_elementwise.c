/* test_fusion_elementwise.c - the partitioner's elementwise groups (runtime/fuse_elementwise.c,
 * the _FusedElementwise kernel in kernels/cpu/cpu_fused.c).
 *
 * An LSTM cell as BasicLSTMCell builds it (ConcatV2, MatMul, BiasAdd, Split, the gates' Sigmoids
 * and Tanhs, Muls and Adds), unrolled three steps over a batch of unknown size, its gradient
 * (SigmoidGrad, TanhGrad, AddN, SumToShape, the ConcatV2 of the gate gradients) and gradient
 * descent, trained in a fused session and in one with RILL_NO_FUSION=1: every loss, every fetched
 * state and every variable must be the same bits, on a batch one thread runs and on one the pool
 * splits. Fusion must happen (forward and backward groups every step). Also: a graph where a
 * value leaves a group and comes back (through a Sum) must not fuse into a cycle and must give
 * the unfused bits; a scalar operand on either side; a fetched inner value; and a broadcast the
 * fused kernel does not do is a clear error, not a wrong answer. */
#include "test.h"

#include <rill/rill.h>

#include "runtime/runtime.h"

#include <stdlib.h>
#include <string.h>

#define D     3
#define H     16
#define STEPS 3

typedef struct lstm {
    rill_graph *g;
    rill_output x[STEPS], c0, h0, kernel, bias, loss, c, h;
    rill_node *train, *init;
    rill_optimizer *opt;
} lstm;

static rill_output op2(rill_graph *g, const char *type, rill_output a, rill_output b)
{
    rill_op_builder *ob = rill_op_builder_new(g, type, NULL);
    rill_op_builder_add_input(ob, a);
    rill_op_builder_add_input(ob, b);
    return rill_node_output(rill_op_builder_finish(ob), 0);
}

static void build_lstm(lstm *m)
{
    memset(m, 0, sizeof *m);
    rill_graph *g = m->g = rill_graph_new();
    rill_graph_set_seed(g, 7);
    rill_graph_push_device(g, "/cpu:0");
    for (int t = 0; t < STEPS; t++) m->x[t] = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(-1, D), NULL);
    m->c0 = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(-1, H), "c0");
    m->h0 = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(-1, H), "h0");
    m->kernel = rill_get_variable(g, "kernel", RILL_FLOAT, rill_shape_matrix(D + H, 4 * H),
                                  rill_random_normal_initializer(0, 0.3, 0), true);
    m->bias = rill_get_variable(g, "bias", RILL_FLOAT, rill_shape_vector(4 * H),
                                rill_random_normal_initializer(0, 0.1, 0), true);
    rill_output c = m->c0, h = m->h0, forget = rill_const_float(g, 1.0f, "forget_bias");
    for (int t = 0; t < STEPS; t++) {
        rill_op_builder *ob = rill_op_builder_new(g, "ConcatV2", NULL);
        rill_op_builder_add_input(ob, m->x[t]);
        rill_op_builder_add_input(ob, h);
        rill_op_builder_set_int(ob, "axis", 1);
        rill_output xh = rill_node_output(rill_op_builder_finish(ob), 0);
        rill_output gates = rill_bias_add(g, rill_matmul(g, xh, m->kernel, false, false, NULL), m->bias, NULL);
        ob = rill_op_builder_new(g, "Split", NULL);
        rill_op_builder_add_input(ob, gates);
        rill_op_builder_set_int(ob, "axis", 1);
        rill_op_builder_set_int(ob, "num_split", 4);
        rill_op_builder_set_int(ob, "num_outputs", 4);
        rill_node *sp = rill_op_builder_finish(ob);
        rill_output i = rill_node_output(sp, 0), j = rill_node_output(sp, 1),
                    f = rill_node_output(sp, 2), o = rill_node_output(sp, 3);
        c = rill_add(g, rill_mul(g, c, rill_sigmoid(g, rill_add(g, f, forget, NULL), NULL), NULL),
                     rill_mul(g, rill_sigmoid(g, i, NULL), rill_tanh(g, j, NULL), NULL), NULL);
        h = rill_mul(g, rill_tanh(g, c, NULL), rill_sigmoid(g, o, NULL), NULL);
    }
    m->c = c;
    m->h = h;
    /* 0.3 * sum(c) + sum(h): both states' gradients flow back */
    rill_output lc = rill_sum(g, rill_mul(g, rill_const_float(g, 0.3f, NULL), c, NULL), NULL, -1, false, NULL);
    m->loss = rill_add(g, lc, rill_sum(g, rill_mul(g, h, h, NULL), NULL, -1, false, NULL), "loss");
    m->opt = rill_gradient_descent_optimizer_new(0.05);
    m->train = rill_optimizer_minimize(m->opt, g, m->loss, (rill_output){0}, "train");
    m->init = rill_global_variables_initializer(g, NULL);
    rill_graph_pop_device(g);
    CHECK(rill_graph_ok(g));
}

static rill_tensor *filled(int64_t rows, int64_t cols, unsigned seed)
{
    rill_tensor *t = rill_tensor_new(RILL_FLOAT, (int64_t[]){rows, cols}, 2);
    float *p = rill_tensor_data(t);
    unsigned s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < rows * cols; i++)
        p[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / 16777216.0f * 2 - 1;
    return t;
}

static bool same(const rill_tensor *a, const rill_tensor *b)
{
    return a && b && rill_tensor_nbytes(a) == rill_tensor_nbytes(b) &&
           memcmp(rill_tensor_data(a), rill_tensor_data(b), rill_tensor_nbytes(a)) == 0;
}

/* Trains for `steps` steps on one batch of `rows`; losses to loss[], the last c and h to out[]. */
static rill_session *train(lstm *m, int rows, int steps, float *loss, rill_tensor **out)
{
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(m->g, NULL, s);
    if (!CHECK(sess != NULL) || !CHECK(rill_session_run_targets(sess, &m->init, 1, s) == RILL_OK)) {
        fprintf(stderr, "  %s\n", rill_status_message(s));
        rill_status_free(s);
        return sess;
    }
    rill_output feeds[STEPS + 2];
    rill_tensor *fv[STEPS + 2];
    for (int t = 0; t < STEPS; t++) feeds[t] = m->x[t], fv[t] = filled(rows, D, (unsigned)t + 1);
    feeds[STEPS] = m->c0, fv[STEPS] = filled(rows, H, 11);
    feeds[STEPS + 1] = m->h0, fv[STEPS + 1] = filled(rows, H, 12);
    for (int i = 0; i < steps; i++) {
        rill_output fetches[] = {m->loss, m->c, m->h};
        rill_tensor *o[3] = {NULL, NULL, NULL};
        if (!CHECK(rill_session_run(sess, feeds, fv, STEPS + 2, fetches, o, 3, &m->train, 1, s) ==
                   RILL_OK))
            fprintf(stderr, "  %s\n", rill_status_message(s));
        loss[i] = o[0] ? *(float *)rill_tensor_data(o[0]) : -1;
        rill_tensor_free(o[0]);
        for (int k = 0; k < 2; k++) {
            if (i == steps - 1)
                out[k] = o[k + 1];
            else
                rill_tensor_free(o[k + 1]);
        }
    }
    for (int t = 0; t < STEPS + 2; t++) rill_tensor_free(fv[t]);
    rill_status_free(s);
    return sess;
}

static rill_tensor *fetch(rill_session *sess, rill_output o)
{
    rill_status *s = rill_status_new();
    rill_tensor *t = NULL;
    if (!CHECK(rill_session_run(sess, NULL, NULL, 0, &o, &t, 1, NULL, 0, s) == RILL_OK))
        fprintf(stderr, "  %s\n", rill_status_message(s));
    rill_status_free(s);
    return t;
}

static void test_lstm_fused_equals_unfused(int rows, int steps)
{
    lstm fm, um;
    build_lstm(&fm);
    build_lstm(&um);
    float lf[8], lu[8];
    rill_tensor *of[2] = {0}, *ou[2] = {0};
    unsetenv("RILL_NO_FUSION");
    int before = atomic_load(&rill__fusions_made);
    rill_session *sf = train(&fm, rows, steps, lf, of);
    int made = atomic_load(&rill__fusions_made) - before;
    setenv("RILL_NO_FUSION", "1", 1);
    rill_session *su = train(&um, rows, steps, lu, ou);
    unsetenv("RILL_NO_FUSION");
    /* Per unrolled step at least one forward and one backward elementwise group, besides the
     * three _FusedMatMuls. */
    printf("LSTM, %d rows: %d fused nodes; loss %.6f -> %.6f\n", rows, made, lf[0], lf[steps - 1]);
    CHECK(made >= 3 * STEPS);
    CHECK(lf[steps - 1] < lf[0]);
    CHECK(memcmp(lf, lu, (size_t)steps * sizeof *lf) == 0);
    CHECK(same(of[0], ou[0]));
    CHECK(same(of[1], ou[1]));
    rill_tensor *a = fetch(sf, fm.kernel), *b = fetch(su, um.kernel);
    CHECK(same(a, b));
    rill_tensor_free(a);
    rill_tensor_free(b);
    a = fetch(sf, fm.bias), b = fetch(su, um.bias);
    CHECK(same(a, b));
    rill_tensor_free(a);
    rill_tensor_free(b);
    for (int k = 0; k < 2; k++) rill_tensor_free(of[k]), rill_tensor_free(ou[k]);
    rill_session_free(sf);
    rill_session_free(su);
    rill_optimizer_free(fm.opt);
    rill_optimizer_free(um.opt);
    rill_graph_free(fm.g);
    rill_graph_free(um.g);
}

/* u = sigmoid(x); r = sum(u) (not fusible); v = tanh(u * r) - 2 + 3 / x: v's Mul reads u from the
 * group and r, which depends on the group, so it cannot join u's group (a cycle); scalars on
 * both sides of a Sub and a Div; u fetched too. */
static void run_detour(bool fuse, rill_tensor **out)
{
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/cpu:0");
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(-1, 8), "x");
    rill_output u = rill_sigmoid(g, rill_relu(g, x, NULL), NULL);
    rill_output r = rill_sum(g, u, NULL, -1, false, NULL);
    rill_output v = rill_tanh(g, rill_mul(g, u, r, NULL), NULL);
    v = rill_sub(g, v, rill_const_float(g, 2, NULL), NULL);
    v = rill_add(g, v, op2(g, "Div", rill_const_float(g, 3, NULL), x), NULL);
    rill_graph_pop_device(g);
    if (fuse)
        unsetenv("RILL_NO_FUSION");
    else
        setenv("RILL_NO_FUSION", "1", 1);
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_tensor *xv = filled(5, 8, 3);
    rill_output fetches[] = {u, v};
    int before = atomic_load(&rill__fusions_made);
    if (!CHECK(sess && rill_session_run(sess, &x, &xv, 1, fetches, out, 2, NULL, 0, s) == RILL_OK))
        fprintf(stderr, "  %s\n", rill_status_message(s));
    if (fuse) CHECK(atomic_load(&rill__fusions_made) - before >= 2); /* {Relu, Sigmoid}, {Mul, ...} */
    unsetenv("RILL_NO_FUSION");
    rill_tensor_free(xv);
    rill_session_free(sess);
    rill_status_free(s);
    rill_graph_free(g);
}

static void test_detour(void)
{
    rill_tensor *f[2] = {0}, *u[2] = {0};
    run_detour(true, f);
    run_detour(false, u);
    CHECK(same(f[0], u[0]));
    CHECK(same(f[1], u[1]));
    for (int k = 0; k < 2; k++) rill_tensor_free(f[k]), rill_tensor_free(u[k]);
}

/* Two placeholders of shape [?, 4] fed [1, 4] and [3, 4]: the unfused Mul broadcasts; the fused
 * group does not, and says so. */
static void test_broadcast_is_an_error(void)
{
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/cpu:0");
    rill_output a = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(-1, 4), "a");
    rill_output b = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(-1, 4), "b");
    rill_output y = rill_tanh(g, rill_mul(g, rill_sigmoid(g, a, NULL), b, NULL), NULL);
    rill_graph_pop_device(g);
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_tensor *av = filled(1, 4, 1), *bv = filled(3, 4, 2), *out = NULL;
    rill_output feeds[] = {a, b};
    rill_tensor *fv[] = {av, bv};
    CHECK(rill_session_run(sess, feeds, fv, 2, &y, &out, 1, NULL, 0, s) == RILL_INVALID_ARGUMENT);
    CHECK(strstr(rill_status_message(s), "Incompatible shapes: [1,4] vs. [3,4]") != NULL);
    CHECK(strstr(rill_status_message(s), "fused") != NULL);
    printf("a broadcast in a fused group: %s\n", rill_status_message(s));
    setenv("RILL_NO_FUSION", "1", 1);
    rill_session *su = rill_session_new(g, NULL, s);
    CHECK(rill_session_run(su, feeds, fv, 2, &y, &out, 1, NULL, 0, s) == RILL_OK);
    if (CHECK(out != NULL)) CHECK_EQ_INT(rill_tensor_shape(out)->dims[0], 3);
    unsetenv("RILL_NO_FUSION");
    rill_tensor_free(out);
    rill_tensor_free(av);
    rill_tensor_free(bv);
    rill_session_free(sess);
    rill_session_free(su);
    rill_status_free(s);
    rill_graph_free(g);
}

int main(void)
{
    test_lstm_fused_equals_unfused(5, 4);
    test_lstm_fused_equals_unfused(900, 2); /* rows split over the pool */
    test_detour();
    test_broadcast_is_an_error();
    TEST_MAIN_END();
}
