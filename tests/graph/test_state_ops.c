/* test_state_ops.c - variables and everything that changes them (src/graph/ops_state.c,
 * src/kernels/cpu/cpu_state.c, src/train/optimizers.c).
 *
 * Variables with every initializer (constant ones exactly, random ones by their statistics and
 * bounds, seeded ones repeating across fresh sessions), rill_variable_from, rill_get_variable
 * with variable scopes and reuse (and TensorFlow's error texts), Assign/AssignAdd/AssignSub on
 * every numeric dtype, the global step, the variable collections, and the optimizers: one and
 * two steps of GradientDescent, Momentum (plain and Nesterov), Adam and Adagrad against updates
 * computed
 * here with TensorFlow's formulas (and Adagrad's positive initial accumulator required), global_step advancing by exactly one per run, the gradients'
 * gate (an update never lets another gradient of the same op see it), and convergence on convex
 * problems.
 */
#include "op_check.h"

#include <string.h>

static rill_tensor *fetch(rill_session *sess, rill_output o)
{
    return oc_run(sess, o, NULL, NULL, 0);
}

static bool init_all(rill_graph *g, rill_session *sess)
{
    rill_node *init = rill_global_variables_initializer(g, NULL);
    return CHECK(init != NULL) && oc_run_targets(sess, &init, 1);
}

/* --- initializers --- */

static void test_constant_initializers(void)
{
    const rill_dtype types[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF, RILL_INT32, RILL_INT64};
    for (int ti = 0; ti < 5; ti++) {
        rill_dtype t = types[ti];
        rill_graph *g = rill_graph_new();
        rill_shape sh = rill_shape_matrix(3, 4);
        rill_output z = rill_variable(g, t, sh, rill_zeros_initializer(), true, "z");
        rill_output o = rill_variable(g, t, sh, rill_ones_initializer(), true, "o");
        double cv = oc_is_int(t) ? -7 : 2.5;
        rill_output c =
            rill_variable(g, t, rill_shape_scalar(), rill_constant_initializer(cv), true, NULL);
        rill_output c3 = rill_variable(g, t, rill_shape_make(3, (int64_t[]){2, 1, 2}),
                                       rill_constant_initializer(cv), false, NULL);
        char label[64];
        snprintf(label, sizeof label, "initializers %s", rill_dtype_name(t));
        if (!CHECK(z.node && o.node && c.node && c3.node)) {
            fprintf(stderr, "  case: %s: %s\n", label, rill_status_message(rill_graph_status(g)));
            rill_graph_free(g);
            continue;
        }
        CHECK_EQ_STR(rill_node_op_type(z.node), "VariableV2");
        CHECK_EQ_STR(rill_node_name(c.node), "Variable");
        CHECK_EQ_STR(rill_node_name(c3.node), "Variable_1");
        CHECK_EQ_INT(rill_output_dtype(z), t);
        rill_shape s = rill_output_shape(z);
        CHECK(rill_shape_equal(&s, &sh));
        rill_node *zi = rill_variable_initializer(z);
        if (CHECK(zi != NULL)) {
            CHECK_EQ_STR(rill_node_name(zi), "z/Assign");
            CHECK_EQ_STR(rill_node_op_type(zi), "Assign");
        }
        if (CHECK(rill_variable_initializer(c) != NULL))
            CHECK_EQ_STR(rill_node_name(rill_variable_initializer(c)), "Variable/Assign");
        rill_session *sess = oc_session(g);
        /* Reading before initialising fails with TF's text. */
        if (sess) {
            rill_status *st = rill_status_new();
            rill_tensor *out = NULL;
            CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &z, &out, 1, NULL, 0, st),
                         RILL_FAILED_PRECONDITION);
            CHECK_STR_CONTAINS(rill_status_message(st), "Attempting to use uninitialized value z");
            CHECK(out == NULL);
            rill_status_free(st);
        }
        /* Each initializer on its own. */
        rill_node *inits[] = {rill_variable_initializer(z), rill_variable_initializer(o),
                              rill_variable_initializer(c), rill_variable_initializer(c3)};
        oc_run_targets(sess, inits, 4);
        double zeros[12] = {0}, ones[12], cs[12];
        for (int i = 0; i < 12; i++) ones[i] = 1, cs[i] = cv;
        rill_tensor *v = fetch(sess, z);
        oc_check_tensor(label, v, t, (int64_t[]){3, 4}, 2, zeros);
        rill_tensor_free(v);
        v = fetch(sess, o);
        oc_check_tensor(label, v, t, (int64_t[]){3, 4}, 2, ones);
        rill_tensor_free(v);
        v = fetch(sess, c);
        oc_check_tensor(label, v, t, NULL, 0, cs);
        rill_tensor_free(v);
        v = fetch(sess, c3);
        oc_check_tensor(label, v, t, (int64_t[]){2, 1, 2}, 3, cs);
        rill_tensor_free(v);
        rill_session_free(sess);
        rill_graph_free(g);
    }
}

typedef struct stats {
    double mean, sd, min, max;
} stats;

static stats stats_of(const rill_tensor *t)
{
    stats s = {0, 0, INFINITY, -INFINITY};
    int64_t n = rill_tensor_num_elements(t);
    for (int64_t i = 0; i < n; i++) {
        double v = rill_tensor_get_double(t, i);
        s.mean += v;
        s.min = fmin(s.min, v);
        s.max = fmax(s.max, v);
    }
    s.mean /= (double)n;
    for (int64_t i = 0; i < n; i++) {
        double d = rill_tensor_get_double(t, i) - s.mean;
        s.sd += d * d;
    }
    s.sd = sqrt(s.sd / (double)(n - 1));
    return s;
}

static bool same_values(const rill_tensor *a, const rill_tensor *b)
{
    return a && b && rill_tensor_nbytes(a) == rill_tensor_nbytes(b) &&
           memcmp(rill_tensor_data(a), rill_tensor_data(b), rill_tensor_nbytes(a)) == 0;
}

/* Runs the initializer of var in a fresh session and returns the value. */
static rill_tensor *fresh_value(rill_graph *g, rill_output var)
{
    rill_session *sess = oc_session(g);
    rill_node *init = rill_variable_initializer(var);
    rill_tensor *v = NULL;
    if (oc_run_targets(sess, &init, 1)) v = fetch(sess, var);
    rill_session_free(sess);
    return v;
}

static void test_random_initializers(void)
{
    const rill_dtype types[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};
    /* 4096 elements: the sample mean's standard error is sd/64. */
    rill_shape sh = rill_shape_matrix(64, 64);
    for (int ti = 0; ti < 3; ti++) {
        rill_dtype t = types[ti];
        rill_graph *g = rill_graph_new();
        rill_output n = rill_variable(g, t, sh, rill_random_normal_initializer(1, 2, 7), true, "n");
        rill_output tn =
            rill_variable(g, t, sh, rill_truncated_normal_initializer(-1, 0.5, 8), true, "tn");
        rill_output u =
            rill_variable(g, t, sh, rill_random_uniform_initializer(-3, 5, 9), true, "u");
        rill_output u2 =
            rill_variable(g, t, sh, rill_random_uniform_initializer(-3, 5, 10), true, "u2");
        rill_output n0 =
            rill_variable(g, t, sh, rill_random_normal_initializer(0, 1, 0), true, "n0");
        char label[64];
        snprintf(label, sizeof label, "random %s", rill_dtype_name(t));
        if (!CHECK(rill_graph_ok(g))) {
            fprintf(stderr, "  case: %s: %s\n", label, rill_status_message(rill_graph_status(g)));
            rill_graph_free(g);
            continue;
        }
        rill_tensor *vn = fresh_value(g, n), *vt = fresh_value(g, tn), *vu = fresh_value(g, u);
        rill_tensor *vu2 = fresh_value(g, u2);
        if (CHECK(vn && vt && vu && vu2)) {
            CHECK_EQ_INT(rill_tensor_dtype(vn), t);
            CHECK_EQ_INT(rill_tensor_num_elements(vn), 4096);
            stats s = stats_of(vn);
            /* Both checks run (and count) whatever the first gives. */
            int bad = !CHECK_NEAR(s.mean, 1, 0.12);
            bad += !CHECK_NEAR(s.sd, 2, 0.1);
            if (bad)
                fprintf(stderr, "  case: %s normal\n", label);
            s = stats_of(vt);
            /* A normal truncated at two standard deviations has sd 0.8796 of the untruncated. */
            bad = !CHECK_NEAR(s.mean, -1, 0.03);
            bad += !CHECK_NEAR(s.sd, 0.5 * 0.8796, 0.025);
            if (bad)
                fprintf(stderr, "  case: %s truncated\n", label);
            if (!CHECK(s.min >= -1 - 2 * 0.5 - 1e-3 && s.max <= -1 + 2 * 0.5 + 1e-3))
                fprintf(stderr, "  case: %s truncated range [%g, %g]\n", label, s.min, s.max);
            /* In float the bound holds exactly. */
            if (t != RILL_HALF) CHECK(s.min >= -2 && s.max <= 0);
            s = stats_of(vu);
            bad = !CHECK_NEAR(s.mean, 1, 0.15);
            bad += !CHECK_NEAR(s.sd, 8 / sqrt(12), 0.1);
            if (bad)
                fprintf(stderr, "  case: %s uniform\n", label);
            if (!CHECK(s.min >= -3 && s.max <= 5))
                fprintf(stderr, "  case: %s uniform range\n", label);
            if (t != RILL_HALF) CHECK(s.max < 5);
            CHECK(s.min < -2.9 && s.max > 4.9);
            /* Different seeds, different values. */
            CHECK(!same_values(vu, vu2));
        }
        /* A seeded initializer repeats in a fresh session. */
        rill_tensor *vn2 = fresh_value(g, n), *vt2 = fresh_value(g, tn), *vuu = fresh_value(g, u);
        CHECK(same_values(vn, vn2));
        CHECK(same_values(vt, vt2));
        CHECK(same_values(vu, vuu));
        /* Unseeded (no graph seed either): two sessions differ. */
        rill_tensor *a0 = fresh_value(g, n0), *b0 = fresh_value(g, n0);
        CHECK(a0 && b0 && !same_values(a0, b0));
        /* Running the initializer again in one session draws new values. */
        rill_session *sess = oc_session(g);
        rill_node *init = rill_variable_initializer(n);
        rill_tensor *r1 = NULL, *r2 = NULL;
        if (oc_run_targets(sess, &init, 1)) r1 = fetch(sess, n);
        if (oc_run_targets(sess, &init, 1)) r2 = fetch(sess, n);
        CHECK(same_values(r1, vn));
        CHECK(r1 && r2 && !same_values(r1, r2));
        rill_tensor_free(r1);
        rill_tensor_free(r2);
        rill_session_free(sess);
        rill_tensor_free(a0);
        rill_tensor_free(b0);
        rill_tensor_free(vn2);
        rill_tensor_free(vt2);
        rill_tensor_free(vuu);
        rill_tensor_free(vn);
        rill_tensor_free(vt);
        rill_tensor_free(vu);
        rill_tensor_free(vu2);
        rill_graph_free(g);
    }

    /* A graph seed makes unseeded ops repeat across fresh graphs built the same way, and gives
     * each op its own stream. */
    rill_tensor *first[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        rill_graph *g = rill_graph_new();
        rill_graph_set_seed(g, 1234);
        rill_output a = rill_variable(g, RILL_FLOAT, rill_shape_vector(100),
                                      rill_random_normal_initializer(0, 1, 0), true, "a");
        rill_output b = rill_variable(g, RILL_FLOAT, rill_shape_vector(100),
                                      rill_random_normal_initializer(0, 1, 0), true, "b");
        rill_tensor *va = fresh_value(g, a), *vb = fresh_value(g, b);
        CHECK(va && vb && !same_values(va, vb));
        if (k == 0) {
            first[0] = va;
            first[1] = vb;
        } else {
            CHECK(same_values(first[0], va));
            CHECK(same_values(first[1], vb));
            rill_tensor_free(va);
            rill_tensor_free(vb);
        }
        rill_graph_free(g);
    }
    rill_tensor_free(first[0]);
    rill_tensor_free(first[1]);

    /* Random ops refuse integer dtypes and shapes that are not fully defined. */
    rill_graph *g = rill_graph_new();
    CHECK(rill_variable(g, RILL_INT32, rill_shape_vector(3),
                        rill_random_uniform_initializer(0, 5, 1), true, "i")
              .node == NULL);
    oc_check_build_error("random int32", g, RILL_INVALID_ARGUMENT,
                         "Value for attr 'dtype' of int32 is not in the list of allowed values");
    rill_graph_clear_status(g);
    CHECK(rill_random_normal(g, RILL_FLOAT, rill_shape_matrix(-1, 2), 0, 1, 0, NULL).node == NULL);
    oc_check_build_error("random partial shape", g, RILL_INVALID_ARGUMENT,
                         "needs a fully defined shape");
    rill_graph_clear_status(g);
    CHECK(
        rill_variable(g, RILL_FLOAT, rill_shape_matrix(-1, 2), rill_zeros_initializer(), true, "p")
            .node == NULL);
    oc_check_build_error("variable partial shape", g, RILL_INVALID_ARGUMENT,
                         "must have a fully defined shape");
    rill_graph_free(g);
}

/* The random ops on their own (not through a variable). */
static void test_random_ops(void)
{
    rill_graph *g = rill_graph_new();
    rill_output n = rill_random_normal(g, RILL_DOUBLE, rill_shape_vector(5000), -2, 0.5, 3, NULL);
    rill_output u = rill_random_uniform(g, RILL_FLOAT, rill_shape_matrix(50, 100), 10, 11, 4, NULL);
    rill_output tn = rill_truncated_normal(g, RILL_FLOAT, rill_shape_vector(5000), 0, 3, 5, NULL);
    if (CHECK(n.node && u.node && tn.node)) {
        CHECK_EQ_STR(rill_node_name(n.node), "random_normal");
        CHECK_EQ_STR(rill_node_name(u.node), "random_uniform");
        CHECK_EQ_STR(rill_node_name(tn.node), "truncated_normal");
        rill_shape s = rill_output_shape(u), want = rill_shape_matrix(50, 100);
        CHECK(rill_shape_equal(&s, &want));
    }
    rill_session *sess = oc_session(g);
    rill_tensor *vn = fetch(sess, n), *vu = fetch(sess, u), *vt = fetch(sess, tn);
    rill_tensor *vn2 = fetch(sess, n);
    if (CHECK(vn && vu && vt && vn2)) {
        stats s = stats_of(vn);
        CHECK_NEAR(s.mean, -2, 0.03);
        CHECK_NEAR(s.sd, 0.5, 0.025);
        s = stats_of(vu);
        CHECK(s.min >= 10 && s.max < 11);
        CHECK_NEAR(s.mean, 10.5, 0.02);
        s = stats_of(vt);
        CHECK(s.min >= -6 && s.max <= 6);
        CHECK_NEAR(s.sd, 3 * 0.8796, 0.12);
        /* A stateful op draws new values on each run. */
        CHECK(!same_values(vn, vn2));
    }
    rill_tensor_free(vn);
    rill_tensor_free(vn2);
    rill_tensor_free(vu);
    rill_tensor_free(vt);
    rill_session_free(sess);
    rill_graph_free(g);
}

/* --- rill_variable_from --- */

static void test_variable_from(void)
{
    rill_graph *g = rill_graph_new();
    rill_tensor *iv = oc_tensor(RILL_DOUBLE, (int64_t[]){2, 2}, 2, (double[]){1, 2, 3, 4});
    rill_output v1 = rill_variable_from(g, rill_const(g, iv, NULL), true, "v1");
    /* Initial value computed from another variable: run v1's initializer first. */
    rill_output v2 = rill_variable_from(
        g, rill_mul(g, v1, rill_const_scalar(g, RILL_DOUBLE, 2, NULL), NULL), false, NULL);
    rill_output v3 = rill_variable_from(g, rill_const_scalar(g, RILL_INT32, 5, NULL), true, "v3");
    if (CHECK(v1.node && v2.node && v3.node)) {
        CHECK_EQ_INT(rill_output_dtype(v1), RILL_DOUBLE);
        rill_shape s = rill_output_shape(v2), want = rill_shape_matrix(2, 2);
        CHECK(rill_shape_equal(&s, &want));
        CHECK_EQ_INT(rill_output_dtype(v3), RILL_INT32);
        CHECK_EQ_INT(rill_output_shape(v3).rank, 0);
        CHECK_EQ_STR(rill_node_name(v2.node), "Variable");
        CHECK_EQ_STR(rill_node_name(rill_variable_initializer(v1)), "v1/Assign");
    }
    rill_session *sess = oc_session(g);
    rill_node *i1 = rill_variable_initializer(v1), *i2 = rill_variable_initializer(v2);
    rill_node *i3 = rill_variable_initializer(v3);
    oc_run_targets(sess, &i1, 1);
    oc_run_targets(sess, &i2, 1);
    oc_run_targets(sess, &i3, 1);
    rill_tensor *o = fetch(sess, v2);
    oc_check_tensor("variable_from expr", o, RILL_DOUBLE, (int64_t[]){2, 2}, 2,
                    (double[]){2, 4, 6, 8});
    rill_tensor_free(o);
    o = fetch(sess, v3);
    oc_check_tensor("variable_from int", o, RILL_INT32, NULL, 0, (double[]){5});
    rill_tensor_free(o);
    rill_session_free(sess);
    /* The initial value must have a fully defined shape. */
    rill_output p = rill_placeholder(g, RILL_FLOAT, rill_shape_make(1, (int64_t[]){-1}), "p");
    CHECK(rill_variable_from(g, p, true, "vp").node == NULL);
    oc_check_build_error("variable_from partial", g, RILL_INVALID_ARGUMENT,
                         "initial_value of variable 'vp' must have a fully defined shape");
    CHECK(rill_variable_from(g, (rill_output){NULL, 0}, true, NULL).node == NULL);
    rill_tensor_free(iv);
    rill_graph_free(g);
}

/* --- get_variable and variable scopes --- */

static void test_get_variable(void)
{
    rill_graph *g = rill_graph_new();
    rill_shape sh = rill_shape_matrix(2, 2);
    rill_output a = rill_get_variable(g, "a", RILL_FLOAT, sh, rill_ones_initializer(), true);
    if (CHECK(a.node != NULL)) CHECK_EQ_STR(rill_node_name(a.node), "a");

    rill_graph_push_variable_scope(g, "layer", false);
    rill_output w = rill_get_variable(g, "w", RILL_FLOAT, sh, rill_zeros_initializer(), true);
    rill_output add = rill_add(g, w, w, NULL);
    rill_graph_pop_variable_scope(g);
    if (CHECK(w.node && add.node)) {
        CHECK_EQ_STR(rill_node_name(w.node), "layer/w");
        CHECK_EQ_STR(rill_node_name(add.node), "layer/add");
        CHECK_EQ_STR(rill_node_name(rill_variable_initializer(w)), "layer/w/Assign");
    }

    /* Reuse gives back the same variable; ops get a fresh name scope as in TF. */
    rill_graph_push_variable_scope(g, "layer", true);
    rill_output w2 = rill_get_variable(g, "w", RILL_FLOAT, sh, rill_zeros_initializer(), true);
    rill_output add2 = rill_add(g, w2, w2, NULL);
    /* A name scope inside does not change get_variable's names. */
    rill_graph_push_name_scope(g, "inner_ns");
    rill_output w3 = rill_get_variable(g, "w", RILL_FLOAT, sh, rill_zeros_initializer(), true);
    rill_graph_pop_name_scope(g);
    rill_graph_pop_variable_scope(g);
    CHECK(w2.node == w.node && w2.index == 0);
    CHECK(w3.node == w.node);
    if (CHECK(add2.node != NULL)) CHECK_EQ_STR(rill_node_name(add2.node), "layer_1/add");

    /* Nested scopes: names concatenate and reuse is inherited. */
    rill_graph_push_variable_scope(g, "outer", false);
    rill_graph_push_variable_scope(g, "inner", false);
    rill_output v = rill_get_variable(g, "v", RILL_DOUBLE, rill_shape_vector(3),
                                      rill_constant_initializer(3), false);
    rill_graph_pop_variable_scope(g);
    rill_graph_pop_variable_scope(g);
    if (CHECK(v.node != NULL)) CHECK_EQ_STR(rill_node_name(v.node), "outer/inner/v");
    rill_graph_push_variable_scope(g, "outer", true);
    rill_graph_push_variable_scope(g, "inner", false);
    rill_output v2 = rill_get_variable(g, "v", RILL_DOUBLE, rill_shape_vector(3),
                                       rill_constant_initializer(3), false);
    rill_graph_pop_variable_scope(g);
    rill_graph_pop_variable_scope(g);
    CHECK(v2.node == v.node);
    CHECK(rill_graph_ok(g));

    /* Collections: every variable is global; trainable ones are also trainable. */
    rill_output all[8], tr[8];
    int na = rill_graph_global_variables(g, all, 8), nt = rill_graph_trainable_variables(g, tr, 8);
    CHECK_EQ_INT(na, 3);
    CHECK_EQ_INT(nt, 2);
    if (na == 3) {
        CHECK(all[0].node == a.node && all[1].node == w.node && all[2].node == v.node);
    }
    if (nt == 2) CHECK(tr[0].node == a.node && tr[1].node == w.node);
    /* cap smaller than the count: the count is still returned. */
    CHECK_EQ_INT(rill_graph_global_variables(g, all, 1), 3);
    CHECK_EQ_INT(rill_graph_get_collection(g, "variables", NULL, 0), 3);

    rill_session *sess = oc_session(g);
    if (init_all(g, sess)) {
        rill_tensor *o = fetch(sess, add2);
        oc_check_tensor("reused variable", o, RILL_FLOAT, (int64_t[]){2, 2}, 2,
                        (double[]){0, 0, 0, 0});
        rill_tensor_free(o);
        o = fetch(sess, v);
        oc_check_tensor("nested", o, RILL_DOUBLE, (int64_t[]){3}, 1, (double[]){3, 3, 3});
        rill_tensor_free(o);
    }
    rill_session_free(sess);

    /* Errors, each with TF's text. */
    int nodes = rill_graph_num_nodes(g);
    rill_output e = rill_get_variable(g, "a", RILL_FLOAT, sh, rill_ones_initializer(), true);
    CHECK(e.node == NULL && e.index == 0);
    oc_check_build_error("exists", g, RILL_ALREADY_EXISTS,
                         "Variable a already exists, disallowed. Did you mean to set reuse=True "
                         "or reuse=tf.AUTO_REUSE in VarScope?");
    CHECK_EQ_INT(rill_graph_num_nodes(g), nodes);
    /* Sticky: a later valid call returns empty and keeps the first message. */
    CHECK(rill_get_variable(g, "fresh", RILL_FLOAT, sh, rill_ones_initializer(), true).node ==
          NULL);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)), "Variable a already exists");
    rill_graph_clear_status(g);

    rill_graph_push_variable_scope(g, "layer", false);
    CHECK(rill_get_variable(g, "w", RILL_FLOAT, sh, rill_zeros_initializer(), true).node == NULL);
    rill_graph_pop_variable_scope(g);
    oc_check_build_error("exists in scope", g, RILL_ALREADY_EXISTS,
                         "Variable layer/w already exists, disallowed.");
    rill_graph_clear_status(g);

    rill_graph_push_variable_scope(g, "layer", true);
    CHECK(rill_get_variable(g, "missing", RILL_FLOAT, sh, rill_zeros_initializer(), true).node ==
          NULL);
    rill_graph_pop_variable_scope(g);
    oc_check_build_error("missing", g, RILL_NOT_FOUND,
                         "Variable layer/missing does not exist, or was not created with "
                         "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in VarScope?");
    rill_graph_clear_status(g);

    rill_graph_push_variable_scope(g, "layer", true);
    CHECK(
        rill_get_variable(g, "w", RILL_FLOAT, rill_shape_vector(3), rill_zeros_initializer(), true)
            .node == NULL);
    rill_graph_pop_variable_scope(g);
    oc_check_build_error(
        "shape mismatch", g, RILL_INVALID_ARGUMENT,
        "Trying to share variable layer/w, but specified shape [3] and found shape [2,2].");
    rill_graph_clear_status(g);

    rill_const_float(g, 1, "taken");
    CHECK(rill_get_variable(g, "taken", RILL_FLOAT, sh, rill_zeros_initializer(), true).node ==
          NULL);
    oc_check_build_error(
        "op name taken", g, RILL_ALREADY_EXISTS,
        "Variable taken cannot be created: an operation of type Const has that name");
    rill_graph_free(g);
}

/* --- Assign, AssignAdd, AssignSub --- */

static void test_assign_ops(void)
{
    const rill_dtype types[] = {RILL_FLOAT, RILL_DOUBLE, RILL_INT32, RILL_INT64, RILL_HALF};
    for (int ti = 0; ti < 5; ti++) {
        rill_dtype t = types[ti];
        rill_graph *g = rill_graph_new();
        rill_output v =
            rill_variable(g, t, rill_shape_vector(3), rill_constant_initializer(5), true, "v");
        rill_tensor *a = oc_tensor(t, (int64_t[]){3}, 1, (double[]){1, 2, 3});
        rill_tensor *b = oc_tensor(t, (int64_t[]){3}, 1, (double[]){10, 20, -30});
        rill_output as = rill_assign(g, v, rill_const(g, a, NULL), NULL);
        rill_output ad = rill_assign_add(g, v, rill_const(g, b, NULL), NULL);
        rill_output sb = rill_assign_sub(g, v, rill_const(g, a, NULL), NULL);
        rill_output p = rill_placeholder(g, t, rill_shape_unknown(), "p");
        rill_output ap = rill_assign(g, v, p, "assign_fed");
        char label[64];
        snprintf(label, sizeof label, "assign %s", rill_dtype_name(t));
        if (!CHECK(as.node && ad.node && sb.node && ap.node)) {
            fprintf(stderr, "  case: %s: %s\n", label, rill_status_message(rill_graph_status(g)));
            goto next;
        }
        CHECK_EQ_STR(rill_node_name(as.node), "Assign");
        CHECK_EQ_STR(rill_node_name(ad.node), "AssignAdd");
        CHECK_EQ_STR(rill_node_name(sb.node), "AssignSub");
        CHECK_EQ_INT(rill_output_dtype(ad), t);
        rill_session *sess = oc_session(g);
        /* AssignAdd on an uninitialised variable fails. */
        if (sess) {
            rill_status *st = rill_status_new();
            rill_node *n = ad.node;
            CHECK_EQ_INT(rill_session_run_targets(sess, &n, 1, st), RILL_FAILED_PRECONDITION);
            CHECK_STR_CONTAINS(rill_status_message(st), "Attempting to use uninitialized value v");
            rill_status_free(st);
        }
        init_all(g, sess);
        rill_tensor *before = fetch(sess, v);
        oc_check_tensor(label, before, t, (int64_t[]){3}, 1, (double[]){5, 5, 5});
        rill_tensor *o = fetch(sess, as);
        oc_check_tensor(label, o, t, (int64_t[]){3}, 1, (double[]){1, 2, 3});
        rill_tensor_free(o);
        o = fetch(sess, ad);
        oc_check_tensor(label, o, t, (int64_t[]){3}, 1, (double[]){11, 22, -27});
        rill_tensor *held = o;
        o = fetch(sess, ad);
        oc_check_tensor(label, o, t, (int64_t[]){3}, 1, (double[]){21, 42, -57});
        rill_tensor_free(o);
        /* Values fetched earlier never change under the caller (copy on write). */
        oc_check_tensor("fetched before AssignAdd", held, t, (int64_t[]){3}, 1,
                        (double[]){11, 22, -27});
        oc_check_tensor("fetched before Assign", before, t, (int64_t[]){3}, 1, (double[]){5, 5, 5});
        rill_tensor_free(held);
        rill_tensor_free(before);
        o = fetch(sess, sb);
        oc_check_tensor(label, o, t, (int64_t[]){3}, 1, (double[]){20, 40, -60});
        rill_tensor_free(o);
        o = fetch(sess, v);
        oc_check_tensor(label, o, t, (int64_t[]){3}, 1, (double[]){20, 40, -60});
        rill_tensor_free(o);
        /* Assign from a fed value, and a fed value of the wrong shape. */
        rill_tensor *f = oc_tensor(t, (int64_t[]){3}, 1, (double[]){-1, 0, 1});
        o = oc_run(sess, ap, &p, &f, 1);
        oc_check_tensor(label, o, t, (int64_t[]){3}, 1, (double[]){-1, 0, 1});
        rill_tensor_free(o);
        rill_tensor *bad = oc_tensor(t, (int64_t[]){4}, 1, (double[]){1, 2, 3, 4});
        if (sess) {
            rill_status *st = rill_status_new();
            rill_tensor *out = NULL;
            CHECK_EQ_INT(rill_session_run(sess, &p, &bad, 1, &ap, &out, 1, NULL, 0, st),
                         RILL_INVALID_ARGUMENT);
            CHECK_STR_CONTAINS(
                rill_status_message(st),
                "Assign requires shapes of both tensors to match. lhs shape= [3] rhs shape= [4]");
            CHECK(out == NULL);
            rill_status_free(st);
        }
        o = fetch(sess, v);
        oc_check_tensor("after failed assign", o, t, (int64_t[]){3}, 1, (double[]){-1, 0, 1});
        rill_tensor_free(o);
        rill_tensor_free(bad);
        rill_tensor_free(f);
        rill_session_free(sess);
    next:
        rill_tensor_free(a);
        rill_tensor_free(b);
        rill_graph_free(g);
    }

    /* A graph without variables: the initializer is an empty group that runs. */
    rill_graph *g = rill_graph_new();
    rill_node *init = rill_global_variables_initializer(g, NULL);
    if (CHECK(init != NULL)) {
        CHECK_EQ_STR(rill_node_name(init), "init");
        CHECK_EQ_STR(rill_node_op_type(init), "NoOp");
        rill_session *sess = oc_session(g);
        oc_run_targets(sess, &init, 1);
        rill_session_free(sess);
    }
    rill_graph_free(g);

    /* Build-time errors. */
    g = rill_graph_new();
    rill_output v =
        rill_variable(g, RILL_FLOAT, rill_shape_vector(3), rill_zeros_initializer(), true, "v");
    rill_output c = rill_const_float(g, 1, "c");
    CHECK(rill_assign(g, c, c, NULL).node == NULL);
    oc_check_build_error("assign to const", g, RILL_INVALID_ARGUMENT,
                         "Input 0 of Assign must be a variable, got 'c' (Const)");
    rill_graph_clear_status(g);
    CHECK(rill_assign_add(g, v, rill_const_scalar(g, RILL_DOUBLE, 1, NULL), NULL).node == NULL);
    oc_check_build_error("assign_add dtype", g, RILL_INVALID_ARGUMENT,
                         "Input 'value' of 'AssignAdd' Op has type double that does not match type "
                         "float of argument 'ref'.");
    rill_graph_clear_status(g);
    rill_tensor *four = oc_tensor(RILL_FLOAT, (int64_t[]){4}, 1, (double[]){1, 2, 3, 4});
    CHECK(rill_assign_sub(g, v, rill_const(g, four, NULL), NULL).node == NULL);
    oc_check_build_error("assign_sub shape", g, RILL_INVALID_ARGUMENT,
                         "Shapes must be equal rank, and dimensions must match for 'AssignSub' "
                         "(op: 'AssignSub') with input shapes: [3], [4].");
    /* Sticky. */
    CHECK(rill_assign(g, v, rill_const(g, four, NULL), NULL).node == NULL);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)), "'AssignSub'");
    rill_tensor_free(four);
    rill_graph_clear_status(g);
    /* An identity of a variable is not a variable. */
    CHECK(rill_assign(g, rill_identity(g, v, NULL), v, NULL).node == NULL);
    oc_check_build_error("assign to identity", g, RILL_INVALID_ARGUMENT,
                         "must be a variable, got 'Identity' (Identity)");
    rill_graph_clear_status(g);
    CHECK(rill_variable_initializer(c) == NULL);
    CHECK(rill_variable_initializer((rill_output){NULL, 0}) == NULL);
    rill_graph_free(g);
}

/* --- global step --- */

static void test_global_step(void)
{
    rill_graph *g = rill_graph_new();
    rill_output none = rill_train_get_global_step(g);
    CHECK(none.node == NULL && none.index == 0);
    rill_graph_push_name_scope(g, "somewhere");
    rill_output gs = rill_train_get_or_create_global_step(g);
    rill_graph_pop_name_scope(g);
    if (!CHECK(gs.node != NULL)) {
        rill_graph_free(g);
        return;
    }
    CHECK_EQ_STR(rill_node_name(gs.node), "global_step");
    CHECK_EQ_INT(rill_output_dtype(gs), RILL_INT64);
    CHECK_EQ_INT(rill_output_shape(gs).rank, 0);
    CHECK(rill_train_get_or_create_global_step(g).node == gs.node);
    CHECK(rill_train_get_global_step(g).node == gs.node);
    rill_output all[4], tr[4];
    CHECK_EQ_INT(rill_graph_global_variables(g, all, 4), 1);
    CHECK_EQ_INT(rill_graph_trainable_variables(g, tr, 4), 0);
    rill_output inc = rill_assign_add(g, gs, rill_const_scalar(g, RILL_INT64, 1, NULL), NULL);
    rill_session *sess = oc_session(g);
    if (init_all(g, sess)) {
        rill_tensor *o = fetch(sess, gs);
        oc_check_tensor("global step 0", o, RILL_INT64, NULL, 0, (double[]){0});
        rill_tensor_free(o);
        for (int i = 0; i < 3; i++) rill_tensor_free(fetch(sess, inc));
        o = fetch(sess, gs);
        oc_check_tensor("global step 3", o, RILL_INT64, NULL, 0, (double[]){3});
        rill_tensor_free(o);
    }
    rill_session_free(sess);
    rill_graph_free(g);
}

/* --- optimizers --- */

typedef enum { SGD, MOMENTUM, NESTEROV, ADAM, ADAGRAD } opt_kind;

static rill_optimizer *make_opt(opt_kind k)
{
    switch (k) {
    case SGD:
        return rill_gradient_descent_optimizer_new(0.1);
    case MOMENTUM:
        return rill_momentum_optimizer_new(0.05, 0.9, false);
    case NESTEROV:
        return rill_momentum_optimizer_new(0.05, 0.9, true);
    case ADAM:
        return rill_adam_optimizer_new(0.01, 0.9, 0.999, 1e-8);
    default:
        return rill_adagrad_optimizer_new(0.2, 0.1);
    }
}

/* loss = sum((w - c)^2) + 3 * b^2 * sum(w): gradients 2(w - c) + 3 b^2 and 6 b sum(w). */
static void grads_of(const double *w, double b, const double *c, double *gw, double *gb)
{
    double sw = 0;
    for (int i = 0; i < 3; i++) sw += w[i];
    for (int i = 0; i < 3; i++) gw[i] = 2 * (w[i] - c[i]) + 3 * b * b;
    *gb = 6 * b * sw;
}

/* Steps TF's update rules by hand for STEPS steps and compares with rill after each one. */
static void test_optimizer_steps(opt_kind kind, rill_dtype t)
{
    static const char *names[] = {"GradientDescent", "Momentum", "Momentum", "Adam", "Adagrad"};
    const double w0[] = {0.5, -1, 2}, b0 = 0.7, c[] = {1, 2, -3};
    const int STEPS = 3;
    rill_graph *g = rill_graph_new();
    rill_output gs = rill_train_get_or_create_global_step(g);
    rill_tensor *wt = oc_tensor(t, (int64_t[]){3}, 1, w0);
    rill_tensor *ct = oc_tensor(t, (int64_t[]){3}, 1, c);
    rill_output w = rill_variable_from(g, rill_const(g, wt, NULL), true, "w");
    rill_output b =
        rill_variable(g, t, rill_shape_scalar(), rill_constant_initializer(b0), true, "b");
    rill_output cc = rill_const(g, ct, "c");
    rill_output d = rill_sub(g, w, cc, NULL);
    rill_output l1 = rill_sum(g, rill_square(g, d, NULL), NULL, -1, false, NULL);
    rill_output three = rill_const_scalar(g, t, 3, NULL);
    rill_output l2 = rill_mul(g, rill_mul(g, three, rill_square(g, b, NULL), NULL),
                              rill_sum(g, w, NULL, -1, false, NULL), NULL);
    rill_output loss = rill_add(g, l1, l2, "loss");
    rill_optimizer *opt = make_opt(kind);
    CHECK_EQ_STR(rill_optimizer_name(opt), names[kind]);
    rill_node *train = rill_optimizer_minimize(opt, g, loss, gs, NULL);
    char label[64];
    snprintf(label, sizeof label, "%s%s %s", names[kind], kind == NESTEROV ? " (nesterov)" : "",
             rill_dtype_name(t));
    if (!CHECK(train != NULL)) {
        fprintf(stderr, "  case: %s: %s\n", label, rill_status_message(rill_graph_status(g)));
        goto out;
    }
    /* Slot variables are created, zero-initialised and not trainable. */
    if (kind == MOMENTUM || kind == NESTEROV) {
        CHECK(rill_graph_find_node(g, "w/Momentum") != NULL);
        CHECK(rill_graph_find_node(g, "b/Momentum") != NULL);
    }
    if (kind == ADAGRAD) {
        CHECK(rill_graph_find_node(g, "w/Adagrad") != NULL);
        CHECK(rill_graph_find_node(g, "b/Adagrad") != NULL);
    }
    if (kind == ADAM) {
        CHECK(rill_graph_find_node(g, "w/Adam") != NULL);
        CHECK(rill_graph_find_node(g, "w/Adam_1") != NULL);
        CHECK(rill_graph_find_node(g, "beta1_power") != NULL);
        CHECK(rill_graph_find_node(g, "beta2_power") != NULL);
    }
    rill_output tr[8];
    CHECK_EQ_INT(rill_graph_trainable_variables(g, tr, 8), 2);

    rill_session *sess = oc_session(g);
    if (!init_all(g, sess)) {
        rill_session_free(sess);
        goto out;
    }
    /* Adagrad's accumulators start at its initial value, 0.1. */
    const double acc0 = kind == ADAGRAD ? 0.1 : 0;
    double W[3], B = b0, accw[3] = {acc0, acc0, acc0}, accb = acc0, mw[3] = {0}, vw[3] = {0}, mb = 0, vb = 0;
    for (int i = 0; i < 3; i++) W[i] = oc_round_to(t, w0[i]);
    B = oc_round_to(t, b0);
    /* Adam's beta powers are float variables, advanced by a float multiply. */
    float b1p = 0.9f, b2p = 0.999f;
    const double lr = kind == SGD ? 0.1 : kind == ADAM ? 0.01 : kind == ADAGRAD ? 0.2 : 0.05;
    for (int step = 1; step <= STEPS; step++) {
        double gw[3], gb;
        grads_of(W, B, c, gw, &gb);
        switch (kind) {
        case SGD:
            for (int i = 0; i < 3; i++) W[i] -= lr * gw[i];
            B -= lr * gb;
            break;
        case MOMENTUM:
        case NESTEROV:
            for (int i = 0; i < 3; i++) {
                accw[i] = accw[i] * 0.9 + gw[i];
                W[i] -= kind == NESTEROV ? gw[i] * lr + accw[i] * 0.9 * lr : lr * accw[i];
            }
            accb = accb * 0.9 + gb;
            B -= kind == NESTEROV ? gb * lr + accb * 0.9 * lr : lr * accb;
            break;
        case ADAGRAD:
            for (int i = 0; i < 3; i++) {
                accw[i] += gw[i] * gw[i];
                W[i] -= lr * gw[i] / sqrt(accw[i]);
            }
            accb += gb * gb;
            B -= lr * gb / sqrt(accb);
            break;
        case ADAM: {
            double lr_t = lr * sqrt(1 - (double)b2p) / (1 - (double)b1p);
            for (int i = 0; i < 3; i++) {
                mw[i] = 0.9 * mw[i] + (1 - 0.9) * gw[i];
                vw[i] = 0.999 * vw[i] + (1 - 0.999) * gw[i] * gw[i];
                W[i] -= lr_t * mw[i] / (sqrt(vw[i]) + 1e-8);
            }
            mb = 0.9 * mb + (1 - 0.9) * gb;
            vb = 0.999 * vb + (1 - 0.999) * gb * gb;
            B -= lr_t * mb / (sqrt(vb) + 1e-8);
            b1p *= 0.9f;
            b2p *= 0.999f;
            break;
        }
        }
        rill_tensor *gsv = fetch(sess, rill_node_output(train, 0));
        /* The train op's value is the new global step. */
        oc_check_tensor(label, gsv, RILL_INT64, NULL, 0, (double[]){step});
        rill_tensor_free(gsv);
        rill_tensor *wv = fetch(sess, w), *bv = fetch(sess, b);
        char l2s[96];
        snprintf(l2s, sizeof l2s, "%s step %d", label, step);
        oc_check_tensor(l2s, wv, t, (int64_t[]){3}, 1, W);
        oc_check_tensor(l2s, bv, t, NULL, 0, &B);
        rill_tensor_free(wv);
        rill_tensor_free(bv);
        /* Track rill's rounding in float so later steps compare like with like. */
        if (t == RILL_FLOAT) {
            for (int i = 0; i < 3; i++) W[i] = (float)W[i];
            B = (float)B;
        }
    }
    rill_tensor *gsv = fetch(sess, gs);
    oc_check_tensor(label, gsv, RILL_INT64, NULL, 0, (double[]){STEPS});
    rill_tensor_free(gsv);
    if (kind == ADAM) {
        rill_output b1 = {rill_graph_find_node(g, "beta1_power"), 0};
        rill_tensor *o = fetch(sess, b1);
        oc_check_tensor(label, o, RILL_FLOAT, NULL, 0, (double[]){b1p});
        rill_tensor_free(o);
    }
    rill_session_free(sess);
out:
    rill_optimizer_free(opt);
    rill_tensor_free(wt);
    rill_tensor_free(ct);
    rill_graph_free(g);
}

static void test_apply_gradients(void)
{
    rill_graph *g = rill_graph_new();
    rill_output gs = rill_train_get_or_create_global_step(g);
    rill_output w = rill_variable(g, RILL_DOUBLE, rill_shape_vector(2),
                                  rill_constant_initializer(1), true, "w");
    rill_output u = rill_variable(g, RILL_DOUBLE, rill_shape_vector(2),
                                  rill_constant_initializer(1), true, "u");
    rill_output loss = rill_sum(g, rill_square(g, w, NULL), NULL, -1, false, NULL);
    rill_optimizer *opt = rill_gradient_descent_optimizer_new(0.25);
    rill_grad_and_var gv[4];
    int n = rill_optimizer_compute_gradients(opt, g, loss, NULL, 0, gv, 4);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK(gv[0].var.node == w.node && gv[0].grad.node != NULL);
        /* u does not affect the loss: no gradient (TF's None). */
        CHECK(gv[1].var.node == u.node && gv[1].grad.node == NULL);
    }
    /* var_list restricts the variables. */
    rill_grad_and_var one[1];
    CHECK_EQ_INT(rill_optimizer_compute_gradients(opt, g, loss, &w, 1, one, 1), 1);
    rill_node *step = rill_optimizer_apply_gradients(opt, g, gv, n, gs, "train");
    rill_node *nostep = rill_optimizer_apply_gradients(opt, g, gv, n, (rill_output){NULL, 0}, NULL);
    if (CHECK(step && nostep)) {
        /* TF names this op exactly "train": its name scope's own name. */
        CHECK_EQ_STR(rill_node_name(step), "train");
        CHECK_EQ_STR(rill_node_op_type(nostep), "NoOp");
    }
    rill_session *sess = oc_session(g);
    if (init_all(g, sess)) {
        for (int i = 1; i <= 4; i++) {
            rill_tensor *o = fetch(sess, rill_node_output(step, 0));
            oc_check_tensor("apply_gradients step", o, RILL_INT64, NULL, 0, (double[]){i});
            rill_tensor_free(o);
        }
        /* Without a global step the update runs and the step stays. */
        oc_run_targets(sess, &nostep, 1);
        rill_tensor *o = fetch(sess, gs);
        oc_check_tensor("global step after 4+1", o, RILL_INT64, NULL, 0, (double[]){4});
        rill_tensor_free(o);
        /* w *= (1 - 2 * 0.25) five times; u untouched. */
        o = fetch(sess, w);
        double v = pow(0.5, 5);
        oc_check_tensor("w", o, RILL_DOUBLE, (int64_t[]){2}, 1, (double[]){v, v});
        rill_tensor_free(o);
        o = fetch(sess, u);
        oc_check_tensor("u", o, RILL_DOUBLE, (int64_t[]){2}, 1, (double[]){1, 1});
        rill_tensor_free(o);
    }
    rill_session_free(sess);

    /* No gradient at all is an error, as in TF. */
    rill_grad_and_var empty = {{NULL, 0}, u};
    CHECK(rill_optimizer_apply_gradients(opt, g, &empty, 1, gs, NULL) == NULL);
    oc_check_build_error("no gradients", g, RILL_INVALID_ARGUMENT,
                         "No gradients provided for any variable.");
    rill_graph_clear_status(g);
    /* A loss with no trainable variables. */
    rill_graph *g2 = rill_graph_new();
    rill_output x = rill_placeholder(g2, RILL_FLOAT, rill_shape_scalar(), "x");
    CHECK(rill_optimizer_minimize(opt, g2, rill_square(g2, x, NULL), (rill_output){NULL, 0},
                                  NULL) == NULL);
    oc_check_build_error("no variables", g2, RILL_INVALID_ARGUMENT, "No variables to optimize.");
    rill_graph_free(g2);
    rill_optimizer_free(opt);
    rill_graph_free(g);
}

/* compute_gradients gates as TF's GATE_OP. Consumers read a variable when they run, so without
 * the gate the update of w2 (whose gradient, x w1, is ready first) could run before
 * dh = dy w2^T read w2, and w1 would get this step's w2 or not as the schedule decides. Here
 * loss = x w1 w2 with x = 1, w1 = 1, w2 = 2 and SGD at rate 1: dw1 = x w2 = 2 and dw2 = x w1 = 1,
 * so w1 = -1 and w2 = 1 after one step (0 for w1 had dw1 seen the new w2), with one inter-op
 * thread (the inline order) and with several, every time. */
static void test_gated_gradients(void)
{
    rill_graph *g = rill_graph_new();
    rill_output x = rill_const_scalar(g, RILL_DOUBLE, 1, "x");
    rill_output x2 = rill_reshape(g, x, (int64_t[]){1, 1}, 2, NULL);
    rill_output w1 = rill_variable(g, RILL_DOUBLE, rill_shape_matrix(1, 1),
                                   rill_constant_initializer(1), true, "w1");
    rill_output w2 = rill_variable(g, RILL_DOUBLE, rill_shape_matrix(1, 1),
                                   rill_constant_initializer(2), true, "w2");
    rill_output y = rill_matmul(g, rill_matmul(g, x2, w1, false, false, NULL), w2, false, false,
                                NULL);
    rill_output loss = rill_sum(g, y, NULL, -1, false, NULL);
    rill_optimizer *opt = rill_gradient_descent_optimizer_new(1);
    rill_node *train = rill_optimizer_minimize(opt, g, loss, (rill_output){NULL, 0}, "train");
    rill_node *init = rill_global_variables_initializer(g, NULL);
    if (!CHECK(train && init)) {
        rill_optimizer_free(opt);
        rill_graph_free(g);
        return;
    }
    /* The gate: w2's gradient is an Identity waiting on a NoOp that waits on both gradients of
     * the MatMul (TF's names: gradients/<op>_grad/tuple/{group_deps,control_dependency}). */
    rill_node *gate = rill_graph_find_node(g, "gradients/MatMul_1_grad/tuple/group_deps");
    rill_node *dw2 = rill_graph_find_node(g, "gradients/MatMul_1_grad/tuple/control_dependency_1");
    if (CHECK(gate && dw2)) {
        CHECK_EQ_STR(rill_node_op_type(gate), "NoOp");
        CHECK_EQ_INT(rill_node_num_control_inputs(gate), 2);
        CHECK_EQ_STR(rill_node_op_type(dw2), "Identity");
        CHECK(rill_node_num_control_inputs(dw2) == 1 && rill_node_control_input(dw2, 0) == gate);
    }
    /* tf.gradients itself does not gate (TF's default gate_gradients=False). */
    rill_output dx[2];
    rill_output xs[2] = {w1, w2};
    CHECK(rill_gradients(g, &loss, 1, xs, 2, NULL, dx));
    CHECK(dx[1].node && strcmp(rill_node_op_type(dx[1].node), "MatMul") == 0);
    rill_status *s = rill_status_new();
    for (int inter = 1; inter <= 3; inter++)
        for (int rep = 0; rep < 10; rep++) {
            rill_session_options *so = rill_session_options_new();
            rill_session_options_set_inter_op_threads(so, inter);
            rill_session *sess = rill_session_new(g, so, s);
            rill_session_options_free(so);
            if (!CHECK(sess)) break;
            if (oc_run_targets(sess, &init, 1) && oc_run_targets(sess, &train, 1)) {
                rill_tensor *a = fetch(sess, w1), *b = fetch(sess, w2);
                oc_check_tensor("w1 after a gated step", a, RILL_DOUBLE, (int64_t[]){1, 1}, 2,
                                (double[]){-1});
                oc_check_tensor("w2 after a gated step", b, RILL_DOUBLE, (int64_t[]){1, 1}, 2,
                                (double[]){1});
                rill_tensor_free(a);
                rill_tensor_free(b);
            }
            rill_session_free(sess);
        }
    rill_status_free(s);
    rill_optimizer_free(opt);
    rill_graph_free(g);
}

/* Two Adam optimizers in one graph keep their own beta powers (TF creates beta1_power and
 * beta1_power_1): running one must not change the other's bias correction. */
static void test_two_adams(void)
{
    rill_graph *g = rill_graph_new();
    rill_output a =
        rill_variable(g, RILL_DOUBLE, rill_shape_scalar(), rill_constant_initializer(1), true, "a");
    rill_output b =
        rill_variable(g, RILL_DOUBLE, rill_shape_scalar(), rill_constant_initializer(1), true, "b");
    rill_optimizer *oa = rill_adam_optimizer_new(0.1, 0.9, 0.999, 1e-8);
    rill_optimizer *ob = rill_adam_optimizer_new(0.1, 0.9, 0.999, 1e-8);
    rill_grad_and_var ga[1], gb[1];
    rill_output la = rill_square(g, a, NULL),
                lb = rill_mul(g, rill_square(g, b, NULL),
                              rill_const_scalar(g, RILL_DOUBLE, 3, NULL), NULL);
    CHECK_EQ_INT(rill_optimizer_compute_gradients(oa, g, la, &a, 1, ga, 1), 1);
    CHECK_EQ_INT(rill_optimizer_compute_gradients(ob, g, lb, &b, 1, gb, 1), 1);
    rill_node *ta = rill_optimizer_apply_gradients(oa, g, ga, 1, (rill_output){NULL, 0}, "adam_a");
    rill_node *tb = rill_optimizer_apply_gradients(ob, g, gb, 1, (rill_output){NULL, 0}, "adam_b");
    CHECK(rill_graph_find_node(g, "beta1_power") != NULL);
    CHECK(rill_graph_find_node(g, "beta1_power_1") != NULL);
    CHECK(rill_graph_find_node(g, "beta2_power_1") != NULL);
    /* The same optimizer applied again in this graph shares its beta powers, as in TF. */
    int before = rill_graph_get_collection(g, "variables", NULL, 0);
    rill_node *ta2 =
        rill_optimizer_apply_gradients(oa, g, ga, 1, (rill_output){NULL, 0}, "adam_a2");
    CHECK(ta2 != NULL);
    CHECK_EQ_INT(rill_graph_get_collection(g, "variables", NULL, 0), before);
    rill_session *sess = oc_session(g);
    if (CHECK(ta && tb) && init_all(g, sess)) {
        /* b steps twice first, then a steps once: a's first step must use t = 1. */
        oc_run_targets(sess, &tb, 1);
        oc_run_targets(sess, &tb, 1);
        oc_run_targets(sess, &ta, 1);
        /* Step 1 of Adam moves by lr * m / sqrt(v) with m = 0.1 g, v = 0.001 g^2 and
         * lr_t = lr sqrt(1 - 0.999) / (1 - 0.9): exactly lr (up to eps). */
        rill_tensor *o = fetch(sess, a);
        float b1 = 0.9f, b2 = 0.999f;
        double lr_t = 0.1 * sqrt(1 - (double)b2) / (1 - (double)b1);
        double want = 1 - lr_t * 0.1 * 2 / (sqrt(0.001 * 4) + 1e-8);
        oc_check_tensor("Adam a after b's steps", o, RILL_DOUBLE, NULL, 0, &want);
        rill_tensor_free(o);
    }
    rill_session_free(sess);
    rill_optimizer_free(oa);
    rill_optimizer_free(ob);
    rill_graph_free(g);
}

/* Linear least squares with each optimizer: converges to the exact solution. */
static void test_convergence(void)
{
    /* y = 2 x0 - 3 x1 + 0.5, exactly, on 8 points. */
    double X[16], Y[8];
    for (int i = 0; i < 8; i++) {
        X[2 * i] = oc_uniform(-1, 1);
        X[2 * i + 1] = oc_uniform(-1, 1);
        Y[i] = 2 * X[2 * i] - 3 * X[2 * i + 1] + 0.5;
    }
    const int steps[] = {400, 300, 300, 1500, 1500};
    for (int k = 0; k < 5; k++) {
        rill_graph *g = rill_graph_new();
        rill_output gs = rill_train_get_or_create_global_step(g);
        rill_tensor *xt = oc_tensor(RILL_FLOAT, (int64_t[]){8, 2}, 2, X),
                    *yt = oc_tensor(RILL_FLOAT, (int64_t[]){8, 1}, 2, Y);
        rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(-1, 2), "x");
        rill_output y = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(-1, 1), "y");
        rill_output W = rill_get_variable(g, "W", RILL_FLOAT, rill_shape_matrix(2, 1),
                                          rill_random_normal_initializer(0, 1, 42), true);
        rill_output b = rill_get_variable(g, "b", RILL_FLOAT, rill_shape_vector(1),
                                          rill_zeros_initializer(), true);
        rill_output pred = rill_add(g, rill_matmul(g, x, W, false, false, NULL), b, NULL);
        rill_output loss =
            rill_mean(g, rill_square(g, rill_sub(g, pred, y, NULL), NULL), NULL, -1, false, NULL);
        rill_optimizer *opt = k == 0   ? rill_gradient_descent_optimizer_new(0.5)
                              : k == 1 ? rill_momentum_optimizer_new(0.1, 0.9, false)
                              : k == 2 ? rill_momentum_optimizer_new(0.1, 0.9, true)
                              : k == 3 ? rill_adam_optimizer_new(0.05, 0.9, 0.999, 1e-8)
                                       : rill_adagrad_optimizer_new(0.5, 0.1);
        rill_node *train = rill_optimizer_minimize(opt, g, loss, gs, NULL);
        rill_session *sess = oc_session(g);
        char label[64];
        snprintf(label, sizeof label, "convergence %s", rill_optimizer_name(opt));
        if (CHECK(train != NULL) && init_all(g, sess)) {
            rill_output feeds[] = {x, y};
            rill_tensor *vals[] = {xt, yt};
            rill_status *st = rill_status_new();
            double first = NAN, last = NAN;
            for (int s = 0; s < steps[k]; s++) {
                rill_tensor *lv = NULL;
                rill_output fl = loss;
                if (rill_session_run(sess, feeds, vals, 2, &fl, &lv, 1, &train, 1, st) != RILL_OK) {
                    CHECK(false);
                    fprintf(stderr, "  case: %s: %s\n", label, rill_status_message(st));
                    break;
                }
                if (s == 0) first = rill_tensor_get_double(lv, 0);
                last = rill_tensor_get_double(lv, 0);
                rill_tensor_free(lv);
            }
            rill_status_free(st);
            if (!CHECK(last < 1e-6 && last < first))
                fprintf(stderr, "  case: %s: loss %g -> %g\n", label, first, last);
            rill_tensor *wv = fetch(sess, W), *bv = fetch(sess, b), *gv = fetch(sess, gs);
            if (CHECK(wv && bv && gv)) {
                int bad = !CHECK_NEAR(rill_tensor_get_double(wv, 0), 2, 2e-3);
                bad += !CHECK_NEAR(rill_tensor_get_double(wv, 1), -3, 2e-3);
                bad += !CHECK_NEAR(rill_tensor_get_double(bv, 0), 0.5, 2e-3);
                if (bad)
                    fprintf(stderr, "  case: %s\n", label);
                CHECK_EQ_INT(rill_tensor_get_double(gv, 0), steps[k]);
            }
            rill_tensor_free(wv);
            rill_tensor_free(bv);
            rill_tensor_free(gv);
        }
        rill_session_free(sess);
        rill_optimizer_free(opt);
        rill_tensor_free(xt);
        rill_tensor_free(yt);
        rill_graph_free(g);
    }
}

int main(void)
{
    test_constant_initializers();
    test_random_initializers();
    test_random_ops();
    test_variable_from();
    test_get_variable();
    test_assign_ops();
    test_global_step();
    /* TF: "initial_accumulator_value must be positive". */
    CHECK(rill_adagrad_optimizer_new(0.1, 0) == NULL);
    CHECK(rill_adagrad_optimizer_new(0.1, -1) == NULL);
    for (int k = SGD; k <= ADAGRAD; k++) {
        test_optimizer_steps((opt_kind)k, RILL_DOUBLE);
        test_optimizer_steps((opt_kind)k, RILL_FLOAT);
    }
    test_apply_gradients();
    test_gated_gradients();
    test_two_adams();
    test_convergence();
    TEST_MAIN_END();
}
