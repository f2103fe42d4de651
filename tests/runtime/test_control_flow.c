/* test_control_flow.c - Switch, Merge and while loops in the executor, built from the primitives
 * as tf.cond and tf.while_loop build them: the taken branch alone runs (an untaken branch may
 * read an uninitialised variable, and its assignments do not happen), a dead fetch is an error,
 * loops with several variables, invariants and nesting, a runaway loop ends at the deadline and
 * on cancel with its name, a cond's gradient flows through the taken branch only, the
 * TensorArray ops with their errors, and a while loop's gradient against finite differences. */
#include <rill/rill.h>

#include "test.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

static rill_node *op(rill_graph *g, const char *type, const char *name, const rill_output *in,
                     int n)
{
    rill_op_builder *b = rill_op_builder_new(g, type, name);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, in[i]);
    return rill_op_builder_finish(b);
}

static rill_output out(rill_node *n, int i)
{
    return (rill_output){n, i};
}

static rill_output enter(rill_graph *g, rill_output x, const char *frame, bool constant)
{
    rill_op_builder *b = rill_op_builder_new(g, "Enter", NULL);
    rill_op_builder_add_input(b, x);
    rill_op_builder_set_string(b, "frame_name", frame);
    rill_op_builder_set_bool(b, "is_constant", constant);
    return out(rill_op_builder_finish(b), 0);
}

static rill_output binop(rill_graph *g, const char *type, rill_output x, rill_output y)
{
    rill_output in[2] = {x, y};
    return out(op(g, type, NULL, in, 2), 0);
}

static rill_output iconst(rill_graph *g, int v)
{
    return rill_const_scalar(g, RILL_INT32, v, NULL);
}

/* A while loop as tf.while_loop builds it. */
typedef struct loop {
    rill_graph *g;
    const char *frame;
    int n;
    rill_node *merge[4], *sw[4];
    rill_output var[4];  /* the Merges' outputs: what the condition reads */
    rill_output body[4]; /* Identity(Switch:1): what the body reads */
} loop;

static void loop_begin(loop *L, rill_graph *g, const char *frame, int n, const rill_output *init)
{
    L->g = g;
    L->frame = frame;
    L->n = n;
    for (int k = 0; k < n; k++) {
        rill_output e = enter(g, init[k], frame, false);
        L->merge[k] = op(g, "Merge", NULL, &e, 1);
        L->var[k] = out(L->merge[k], 0);
    }
}

static void loop_cond(loop *L, rill_output pred)
{
    rill_output lc = out(op(L->g, "LoopCond", NULL, &pred, 1), 0);
    for (int k = 0; k < L->n; k++) {
        rill_output in[2] = {L->var[k], lc};
        L->sw[k] = op(L->g, "Switch", NULL, in, 2);
        L->body[k] = rill_identity(L->g, out(L->sw[k], 1), NULL);
    }
}

static void loop_end(loop *L, const rill_output *next, rill_output *result)
{
    rill_node *nx[4];
    for (int k = 0; k < L->n; k++) {
        nx[k] = op(L->g, "NextIteration", NULL, &next[k], 1);
        rill_node_add_control_input(nx[k], L->merge[k]);
    }
    for (int k = 0; k < L->n; k++) {
        rill_output s0 = out(L->sw[k], 0);
        rill_node *x = op(L->g, "Exit", NULL, &s0, 1);
        for (int j = 0; j < L->n; j++) rill_node_add_control_input(x, nx[j]);
        result[k] = out(x, 0);
    }
}

static rill_session *session(rill_graph *g, int64_t timeout_ms, rill_status *s)
{
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  build failed: %s\n", rill_status_message(rill_graph_status(g)));
        return NULL;
    }
    rill_session_options *o = rill_session_options_new();
    if (timeout_ms) rill_session_options_set_operation_timeout_ms(o, timeout_ms);
    rill_session *sess = rill_session_new(g, o, s);
    rill_session_options_free(o);
    CHECK(sess != NULL);
    return sess;
}

static rill_tensor *scalar_b(bool v)
{
    return rill_tensor_from_data(RILL_BOOL, NULL, 0, &v);
}

static rill_tensor *scalar_i(int32_t v)
{
    return rill_tensor_from_data(RILL_INT32, NULL, 0, &v);
}

static rill_tensor *scalar_f(float v)
{
    return rill_tensor_from_data(RILL_FLOAT, NULL, 0, &v);
}

static double get(const rill_tensor *t)
{
    return t ? rill_tensor_get_double(t, 0) : -12345;
}

/* cond(p, x * 2, x + 10) with Merge(false, true) as tf.cond makes it. */
static void test_cond_takes_one_branch(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_scalar(), "x");
    rill_output p = rill_placeholder(g, RILL_BOOL, rill_shape_scalar(), "p");
    rill_output in[2] = {x, p};
    rill_node *sw = op(g, "Switch", "cond/Switch", in, 2);
    rill_output t = rill_mul(g, out(sw, 1), rill_const_float(g, 2, NULL), "cond/true");
    rill_output f = rill_add(g, out(sw, 0), rill_const_float(g, 10, NULL), "cond/false");
    rill_output both[2] = {f, t};
    rill_node *m = op(g, "Merge", "cond/Merge", both, 2);
    rill_session *sess = session(g, 0, s);
    rill_output feeds[2] = {x, p};
    rill_output fetch[2] = {out(m, 0), out(m, 1)};
    for (int pass = 0; sess && pass < 2; pass++) {
        rill_tensor *vals[2] = {scalar_f(3), scalar_b(pass == 1)}, *res[2] = {NULL, NULL};
        CHECK_EQ_INT(rill_session_run(sess, feeds, vals, 2, fetch, res, 2, NULL, 0, s), RILL_OK);
        CHECK_NEAR(get(res[0]), pass ? 6 : 13, 0);
        CHECK_EQ_INT(get(res[1]), pass);
        for (int k = 0; k < 2; k++) rill_tensor_free(vals[k]), rill_tensor_free(res[k]);
    }
    /* Fetching the branch not taken is an error naming the tensor. */
    if (sess) {
        rill_tensor *vals[2] = {scalar_f(3), scalar_b(false)}, *res = NULL;
        CHECK_EQ_INT(rill_session_run(sess, feeds, vals, 2, &t, &res, 1, NULL, 0, s),
                     RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), "cond/true:0");
        CHECK(res == NULL);
        for (int k = 0; k < 2; k++) rill_tensor_free(vals[k]);
    }
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

/* The untaken branch reads an uninitialised variable and assigns another: neither happens. */
static void test_untaken_branch_does_nothing(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output p = rill_placeholder(g, RILL_BOOL, rill_shape_scalar(), "p");
    rill_output never = rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_zeros_initializer(),
                                      false, "never");
    rill_output count = rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_zeros_initializer(),
                                      false, "count");
    rill_output in[2] = {never, p};
    rill_node *sw = op(g, "Switch", "cond/Switch", in, 2);
    rill_output read = rill_identity(g, out(sw, 1), "cond/read");
    rill_output pin[2] = {p, p};
    rill_node *psw = op(g, "Switch", "cond/pivot_switch", pin, 2);
    rill_output pivot_t = rill_identity(g, out(psw, 1), "cond/pivot_t");
    rill_output pivot_f = rill_identity(g, out(psw, 0), "cond/pivot_f");
    /* the true branch bumps count (a control input on its pivot), the false one reads 0 */
    rill_graph_push_control_dependencies(g, &pivot_t.node, 1);
    rill_output bump = rill_assign_add(g, count, rill_const_float(g, 1, NULL), "cond/bump");
    rill_graph_pop_control_dependencies(g);
    rill_graph_push_control_dependencies(g, &pivot_f.node, 1);
    rill_output zero = rill_const_float(g, 0, "cond/zero");
    rill_graph_pop_control_dependencies(g);
    rill_output t = rill_add(g, read, bump, "cond/sum");
    rill_output both[2] = {zero, t};
    rill_node *m = op(g, "Merge", "cond/Merge", both, 2);
    rill_node *init = rill_graph_find_node(g, "count/Assign");
    rill_session *sess = session(g, 0, s);
    if (sess) {
        CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, NULL, NULL, 0, &init, 1, s), RILL_OK);
        rill_tensor *pf = scalar_b(false), *res = NULL;
        rill_output fetch = out(m, 0);
        for (int i = 0; i < 3; i++) {
            CHECK_EQ_INT(rill_session_run(sess, &p, &pf, 1, &fetch, &res, 1, NULL, 0, s), RILL_OK);
            CHECK_NEAR(get(res), 0, 0);
            rill_tensor_free(res);
            res = NULL;
        }
        rill_tensor *c = NULL;
        CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &count, &c, 1, NULL, 0, s), RILL_OK);
        CHECK_NEAR(get(c), 0, 0); /* the untaken branch's assign never ran */
        rill_tensor_free(c);
        /* Taken, the uninitialised read is the usual error. */
        rill_tensor *pt = scalar_b(true);
        CHECK_EQ_INT(rill_session_run(sess, &p, &pt, 1, &fetch, &res, 1, NULL, 0, s),
                     RILL_FAILED_PRECONDITION);
        CHECK_STR_CONTAINS(rill_status_message(s), "uninitialized value never");
        rill_tensor_free(pf);
        rill_tensor_free(pt);
    }
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

/* i = 0; acc = 0; while i < n: acc += i * k; i += 1 (k from outside, once through a constant
 * Enter and once read directly). */
static void build_sum(rill_graph *g, rill_output n, rill_output k, bool k_entered, rill_output *res)
{
    loop L;
    rill_output init[2] = {iconst(g, 0), iconst(g, 0)};
    loop_begin(&L, g, "while/while_context", 2, init);
    rill_output ne = enter(g, n, "while/while_context", true);
    loop_cond(&L, binop(g, "Less", L.var[0], ne));
    rill_output kk = k_entered ? enter(g, k, "while/while_context", true) : k;
    rill_output next[2] = {binop(g, "Add", L.body[0], iconst(g, 1)),
                           binop(g, "Add", L.body[1], binop(g, "Mul", L.body[0], kk))};
    /* the constants of the body above are outside tensors (no pivot): the loop takes them in */
    loop_end(&L, next, res);
}

static void test_while_sum(void)
{
    for (int entered = 0; entered < 2; entered++) {
        rill_graph *g = rill_graph_new();
        rill_status *s = rill_status_new();
        rill_output n = rill_placeholder(g, RILL_INT32, rill_shape_scalar(), "n");
        rill_output k = rill_placeholder(g, RILL_INT32, rill_shape_scalar(), "k");
        rill_output res[2];
        build_sum(g, n, k, entered, res);
        rill_session *sess = session(g, 0, s);
        int ns[] = {0, 1, 10, 1000};
        for (int t = 0; sess && t < 4; t++) {
            rill_output feeds[2] = {n, k};
            rill_tensor *vals[2] = {scalar_i(ns[t]), scalar_i(3)}, *r[2] = {NULL, NULL};
            CHECK_EQ_INT(rill_session_run(sess, feeds, vals, 2, res, r, 2, NULL, 0, s), RILL_OK);
            CHECK_EQ_INT(get(r[0]), ns[t]);
            CHECK_EQ_INT(get(r[1]), 3LL * ns[t] * (ns[t] - 1) / 2);
            for (int j = 0; j < 2; j++) rill_tensor_free(vals[j]), rill_tensor_free(r[j]);
        }
        rill_session_free(sess);
        rill_graph_free(g);
        rill_status_free(s);
    }
}

/* for i < 3: for j < 4: c += 1 -> 12, the inner loop a node of the outer one's body. */
static void test_nested_loops(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    loop O, I;
    rill_output init[2] = {iconst(g, 0), iconst(g, 0)};
    loop_begin(&O, g, "while/while_context", 2, init);
    loop_cond(&O, binop(g, "Less", O.var[0], enter(g, iconst(g, 3), "while/while_context", true)));
    rill_output iinit[2] = {rill_mul(g, O.body[0], iconst(g, 0), NULL), O.body[1]};
    loop_begin(&I, g, "while/while/while_context", 2, iinit);
    rill_output four = enter(g, enter(g, iconst(g, 4), "while/while_context", true),
                             "while/while/while_context", true);
    loop_cond(&I, binop(g, "Less", I.var[0], four));
    rill_output one = enter(g, enter(g, iconst(g, 1), "while/while_context", true),
                            "while/while/while_context", true);
    rill_output inext[2] = {binop(g, "Add", I.body[0], one), binop(g, "Add", I.body[1], one)};
    rill_output ires[2];
    loop_end(&I, inext, ires);
    rill_output onext[2] = {binop(g, "Add", O.body[0], enter(g, iconst(g, 1), "while/while_context", true)),
                            ires[1]};
    rill_output res[2];
    loop_end(&O, onext, res);
    rill_session *sess = session(g, 0, s);
    if (sess) {
        rill_tensor *r[2] = {NULL, NULL};
        CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, res, r, 2, NULL, 0, s), RILL_OK);
        if (!rill_status_ok(s)) fprintf(stderr, "  %s\n", rill_status_message(s));
        CHECK_EQ_INT(get(r[0]), 3);
        CHECK_EQ_INT(get(r[1]), 12);
        rill_tensor_free(r[0]);
        rill_tensor_free(r[1]);
    }
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

/* A loop whose condition never turns false. */
static rill_output build_runaway(rill_graph *g)
{
    loop L;
    rill_output init = iconst(g, 0);
    loop_begin(&L, g, "spin/while_context", 1, &init);
    loop_cond(&L, binop(g, "GreaterEqual", L.var[0], iconst(g, 0)));
    rill_output next = binop(g, "Mul", L.body[0], iconst(g, 1));
    rill_output res;
    loop_end(&L, &next, &res);
    return res;
}

static void test_runaway_deadline(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output res = build_runaway(g);
    rill_session *sess = session(g, 300, s);
    if (sess) {
        rill_tensor *r = NULL;
        CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &res, &r, 1, NULL, 0, s),
                     RILL_DEADLINE_EXCEEDED);
        CHECK_STR_CONTAINS(rill_status_message(s), "while loop 'spin'");
        CHECK_STR_CONTAINS(rill_status_message(s), "300 ms");
        CHECK(r == NULL);
    }
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

typedef struct {
    rill_session *sess;
    rill_output res;
    rill_code code;
    char msg[512];
} spin_arg;

static void *spin(void *p)
{
    spin_arg *a = p;
    rill_status *s = rill_status_new();
    rill_tensor *r = NULL;
    a->code = rill_session_run(a->sess, NULL, NULL, 0, &a->res, &r, 1, NULL, 0, s);
    snprintf(a->msg, sizeof a->msg, "%s", rill_status_message(s));
    rill_tensor_free(r);
    rill_status_free(s);
    return NULL;
}

static void test_runaway_cancel(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    spin_arg a = {.res = build_runaway(g)};
    a.sess = session(g, 0, s);
    if (a.sess) {
        pthread_t th;
        pthread_create(&th, NULL, spin, &a);
        usleep(100 * 1000);
        rill_session_cancel(a.sess);
        pthread_join(th, NULL);
        CHECK_EQ_INT(a.code, RILL_CANCELLED);
        CHECK_STR_CONTAINS(a.msg, "while loop 'spin' was cancelled after");
    }
    rill_session_free(a.sess);
    rill_graph_free(g);
    rill_status_free(s);
}

/* d/dx cond(p, x * x, 3 * x): 2x where taken, 3 otherwise, and the finite difference. */
static void test_cond_gradient(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_scalar(), "x");
    rill_output p = rill_placeholder(g, RILL_BOOL, rill_shape_scalar(), "p");
    rill_output in[2] = {x, p};
    rill_node *sw = op(g, "Switch", "cond/Switch", in, 2);
    rill_output t = rill_square(g, out(sw, 1), "cond/sq");
    rill_output f = rill_mul(g, out(sw, 0), rill_const_float(g, 3, NULL), "cond/three");
    rill_output both[2] = {f, t};
    rill_node *m = op(g, "Merge", "cond/Merge", both, 2);
    rill_output y = rill_add(g, out(m, 0), x, "y"); /* x also outside the cond */
    rill_output dx;
    CHECK(rill_gradients(g, &y, 1, &x, 1, NULL, &dx));
    rill_session *sess = session(g, 0, s);
    for (int pass = 0; sess && pass < 2; pass++) {
        float xv = 1.5f, h = 1e-2f;
        rill_output feeds[2] = {x, p};
        rill_tensor *vals[2] = {scalar_f(xv), scalar_b(pass)}, *r = NULL;
        CHECK_EQ_INT(rill_session_run(sess, feeds, vals, 2, &dx, &r, 1, NULL, 0, s), RILL_OK);
        double fd[2];
        for (int side = 0; side < 2; side++) {
            rill_tensor *v2[2] = {scalar_f(xv + (side ? h : -h)), scalar_b(pass)}, *ry = NULL;
            CHECK_EQ_INT(rill_session_run(sess, feeds, v2, 2, &y, &ry, 1, NULL, 0, s), RILL_OK);
            fd[side] = get(ry);
            rill_tensor_free(ry);
            rill_tensor_free(v2[0]);
            rill_tensor_free(v2[1]);
        }
        CHECK_NEAR(get(r), pass ? 2 * xv + 1 : 4, 1e-6);
        CHECK_NEAR(get(r), (fd[1] - fd[0]) / (2 * h), 1e-2);
        rill_tensor_free(r);
        rill_tensor_free(vals[0]);
        rill_tensor_free(vals[1]);
    }
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

/* Malformed loops and reading a loop from outside are refused when the step is planned. */
static void test_malformed_loops(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    loop L;
    rill_output init = iconst(g, 0);
    loop_begin(&L, g, "w/while_context", 1, &init);
    loop_cond(&L, binop(g, "Less", L.var[0], iconst(g, 5)));
    rill_output next = binop(g, "Add", L.body[0], iconst(g, 1));
    rill_output res;
    loop_end(&L, &next, &res);
    rill_output leak = rill_add(g, next, iconst(g, 0), "leak"); /* reads the body from outside */
    rill_session *sess = session(g, 0, s);
    if (sess) {
        rill_tensor *r = NULL;
        CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &leak, &r, 1, NULL, 0, s),
                     RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s),
                           "'leak' reads 'add' from inside while loop 'w/while_context'");
        /* the loop itself still runs */
        CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &res, &r, 1, NULL, 0, s), RILL_OK);
        CHECK_EQ_INT(get(r), 5);
        rill_tensor_free(r);
    }
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}


/* TensorArray ops: writes and reads by index, gather, the errors TF gives, a forged handle. */
static rill_node *ta_op(rill_graph *g, const char *type, const rill_output *in, int n,
                        rill_dtype dt)
{
    rill_op_builder *b = rill_op_builder_new(g, type, NULL);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, in[i]);
    if (dt != RILL_DT_INVALID) rill_op_builder_set_type(b, "dtype", dt);
    return rill_op_builder_finish(b);
}

static void test_tensor_array(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output size = iconst(g, 2);
    rill_node *ta = ta_op(g, "TensorArrayV3", &size, 1, RILL_FLOAT);
    rill_output h = out(ta, 0), flow = out(ta, 1);
    rill_output i0 = iconst(g, 0), i1 = iconst(g, 1), i2 = iconst(g, 2);
    rill_output w0in[4] = {h, i0, rill_const_float(g, 1.5f, NULL), flow};
    rill_output f1 = out(ta_op(g, "TensorArrayWriteV3", w0in, 4, RILL_DT_INVALID), 0);
    rill_output w1in[4] = {h, i1, rill_const_float(g, 2.5f, NULL), f1};
    rill_output f2 = out(ta_op(g, "TensorArrayWriteV3", w1in, 4, RILL_DT_INVALID), 0);
    int32_t idx[2] = {1, 0};
    int64_t two = 2;
    rill_tensor *it = rill_tensor_from_data(RILL_INT32, &two, 1, idx);
    rill_output ind = rill_const(g, it, NULL);
    rill_tensor_free(it);
    rill_output gin[3] = {h, ind, f2};
    rill_output gathered = out(ta_op(g, "TensorArrayGatherV3", gin, 3, RILL_FLOAT), 0);
    rill_output szin[2] = {h, f2};
    rill_output sz = out(ta_op(g, "TensorArraySizeV3", szin, 2, RILL_DT_INVALID), 0);
    /* the errors: a third write past a fixed size, a second write, an int read of floats */
    rill_output w2in[4] = {h, i2, rill_const_float(g, 1, NULL), f2};
    rill_output past = out(ta_op(g, "TensorArrayWriteV3", w2in, 4, RILL_DT_INVALID), 0);
    rill_output again_in[4] = {h, i0, rill_const_float(g, 1, NULL), f2};
    rill_output again = out(ta_op(g, "TensorArrayWriteV3", again_in, 4, RILL_DT_INVALID), 0);
    rill_output rin[3] = {h, i0, f2};
    rill_output wrong = out(ta_op(g, "TensorArrayReadV3", rin, 3, RILL_INT32), 0);
    /* a handle that names no array */
    int64_t forged_id = 987654321;
    rill_tensor *ft = rill_tensor_from_data(RILL_INT64, NULL, 0, &forged_id);
    rill_output forged = rill_const(g, ft, NULL);
    rill_tensor_free(ft);
    rill_output fin[3] = {forged, i0, flow};
    rill_output bad = out(ta_op(g, "TensorArrayReadV3", fin, 3, RILL_FLOAT), 0);
    rill_session *sess = session(g, 0, s);
    if (sess) {
        rill_output fetch[2] = {gathered, sz};
        rill_tensor *r[2] = {NULL, NULL};
        CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, fetch, r, 2, NULL, 0, s), RILL_OK);
        CHECK_EQ_INT(r[0] ? rill_tensor_num_elements(r[0]) : 0, 2);
        CHECK_NEAR(r[0] ? rill_tensor_get_double(r[0], 0) : 0, 2.5, 0);
        CHECK_NEAR(r[0] ? rill_tensor_get_double(r[0], 1) : 0, 1.5, 0);
        CHECK_EQ_INT(get(r[1]), 2);
        rill_tensor_free(r[0]);
        rill_tensor_free(r[1]);
        struct {
            rill_output fetch;
            rill_code code;
            const char *text;
        } cases[] = {
            {past, RILL_INVALID_ARGUMENT, "array is not resizeable and size is: 2"},
            {again, RILL_INVALID_ARGUMENT, "because it has already been written to"},
            {wrong, RILL_INVALID_ARGUMENT, "TensorArray dtype is float but Op requested dtype int32"},
            {bad, RILL_NOT_FOUND, "names no TensorArray"},
        };
        for (int c = 0; c < 4; c++) {
            rill_tensor *x = NULL;
            CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &cases[c].fetch, &x, 1, NULL, 0, s),
                         cases[c].code);
            CHECK_STR_CONTAINS(rill_status_message(s), cases[c].text);
            rill_tensor_free(x);
        }
    }
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

/* d/dx of h after 6 iterations of h = tanh(h * w + x) (h0 = x; w outside the loop), from
 * rill_gradients' backward loop, against finite differences; and d/dw. */
static void test_while_gradient(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output x = rill_placeholder(g, RILL_DOUBLE, rill_shape_scalar(), "x");
    rill_output w = rill_placeholder(g, RILL_DOUBLE, rill_shape_scalar(), "w");
    loop L;
    rill_output init[2] = {iconst(g, 0), x};
    loop_begin(&L, g, "while/while_context", 2, init);
    loop_cond(&L, binop(g, "Less", L.var[0], enter(g, iconst(g, 6), "while/while_context", true)));
    rill_output we = enter(g, w, "while/while_context", true);
    rill_output xe = enter(g, x, "while/while_context", true);
    rill_output next[2] = {binop(g, "Add", L.body[0], enter(g, iconst(g, 1), "while/while_context", true)),
                           rill_tanh(g, binop(g, "Add", binop(g, "Mul", L.body[1], we), xe), NULL)};
    rill_output res[2];
    loop_end(&L, next, res);
    rill_output y = rill_mul(g, res[1], res[1], "y");
    rill_output xs[2] = {x, w}, dx[2];
    CHECK(rill_gradients(g, &y, 1, xs, 2, NULL, dx));
    rill_session *sess = session(g, 0, s);
    if (sess) {
        double x0 = 0.4, w0 = 0.9, h = 1e-6;
        rill_output feeds[2] = {x, w};
        rill_tensor *v[2] = {rill_tensor_from_data(RILL_DOUBLE, NULL, 0, &x0),
                             rill_tensor_from_data(RILL_DOUBLE, NULL, 0, &w0)};
        rill_tensor *r[2] = {NULL, NULL};
        CHECK_EQ_INT(rill_session_run(sess, feeds, v, 2, dx, r, 2, NULL, 0, s), RILL_OK);
        if (!rill_status_ok(s)) fprintf(stderr, "  %s\n", rill_status_message(s));
        for (int k = 0; k < 2; k++) {
            double f[2];
            for (int side = 0; side < 2; side++) {
                double p[2] = {x0, w0};
                p[k] += side ? h : -h;
                rill_tensor *pv[2] = {rill_tensor_from_data(RILL_DOUBLE, NULL, 0, &p[0]),
                                      rill_tensor_from_data(RILL_DOUBLE, NULL, 0, &p[1])};
                rill_tensor *ry = NULL;
                CHECK_EQ_INT(rill_session_run(sess, feeds, pv, 2, &y, &ry, 1, NULL, 0, s), RILL_OK);
                f[side] = get(ry);
                rill_tensor_free(ry);
                rill_tensor_free(pv[0]);
                rill_tensor_free(pv[1]);
            }
            CHECK_NEAR(get(r[k]), (f[1] - f[0]) / (2 * h), 1e-6);
            rill_tensor_free(r[k]);
        }
        rill_tensor_free(v[0]);
        rill_tensor_free(v[1]);
    }
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

int main(void)
{
    test_cond_takes_one_branch();
    test_untaken_branch_does_nothing();
    test_while_sum();
    test_nested_loops();
    test_runaway_deadline();
    test_runaway_cancel();
    test_cond_gradient();
    test_malformed_loops();
    test_tensor_array();
    test_while_gradient();
    return test__end();
}
