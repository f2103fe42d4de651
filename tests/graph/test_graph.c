/* test_graph.c - the graph object: node names and their uniquification, name scopes,
 * control-dependency and device scopes, groups, collections, lookup by name, node accessors and
 * the sticky build status. */
#include <rill/rill.h>

#include "test.h"

#include <string.h>

static const char *name_of(rill_output o)
{
    return o.node ? rill_node_name(o.node) : "(null)";
}

static bool has_control_input(const rill_node *n, const rill_node *dep)
{
    for (int i = 0; i < rill_node_num_control_inputs(n); i++)
        if (rill_node_control_input(n, i) == dep) return true;
    return false;
}

static void test_default_names(void)
{
    rill_graph *g = rill_graph_new();
    rill_output a = rill_const_float(g, 1, NULL);
    rill_output b = rill_const_float(g, 2, NULL);
    CHECK_EQ_STR(name_of(a), "Const");
    CHECK_EQ_STR(name_of(b), "Const_1");
    rill_output s0 = rill_add(g, a, b, NULL);
    rill_output s1 = rill_add(g, a, b, NULL);
    rill_output s2 = rill_add(g, s0, s1, NULL);
    CHECK_EQ_STR(name_of(s0), "add");
    CHECK_EQ_STR(name_of(s1), "add_1");
    CHECK_EQ_STR(name_of(s2), "add_2");
    CHECK_EQ_STR(name_of(rill_mul(g, a, b, NULL)), "mul");
    CHECK_EQ_STR(name_of(rill_sub(g, a, b, NULL)), "sub");
    CHECK_EQ_STR(name_of(rill_div(g, a, b, NULL)), "truediv");
    CHECK_EQ_STR(
        name_of(rill_matmul(g, rill_const_floats(g, (float[]){1}, (int64_t[]){1, 1}, 2, NULL),
                            rill_const_floats(g, (float[]){1}, (int64_t[]){1, 1}, 2, NULL), false,
                            false, NULL)),
        "MatMul");
    CHECK_EQ_STR(name_of(rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), NULL)),
                 "Placeholder");
    CHECK_EQ_STR(rill_node_name(rill_no_op(g, NULL)), "NoOp");

    /* Explicit names are made unique the same way. */
    rill_output x0 = rill_identity(g, a, "x");
    rill_output x1 = rill_identity(g, a, "x");
    CHECK_EQ_STR(name_of(x0), "x");
    CHECK_EQ_STR(name_of(x1), "x_1");
    /* A name the counter would produce, taken explicitly, is skipped. */
    rill_output taken = rill_identity(g, a, "add_4");
    CHECK_EQ_STR(name_of(taken), "add_4");
    CHECK_EQ_STR(name_of(rill_add(g, a, b, NULL)), "add_3");
    CHECK_EQ_STR(name_of(rill_add(g, a, b, NULL)), "add_5");
    /* "x_1" explicitly, when taken, becomes "x_1_1". */
    CHECK_EQ_STR(name_of(rill_identity(g, a, "x_1")), "x_1_1");
    CHECK(rill_graph_ok(g));

    /* Invalid names are build errors. */
    rill_output bad = rill_identity(g, a, "bad name!");
    CHECK(bad.node == NULL);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)), "bad name!");
    rill_graph_clear_status(g);
    CHECK(rill_identity(g, a, "/lead").node == NULL);
    rill_graph_clear_status(g);
    /* A trailing '/' asks for that exact, absolute name (TF's name_scope(...) as name). */
    rill_graph_push_name_scope(g, "outer");
    rill_output exact = rill_identity(g, a, "exact/");
    rill_graph_pop_name_scope(g);
    if (CHECK(exact.node != NULL)) CHECK_EQ_STR(rill_node_name(exact.node), "exact");
    CHECK(rill_identity(g, a, "exact/").node == NULL);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_ALREADY_EXISTS);
    rill_graph_clear_status(g);
    CHECK(rill_identity(g, a, "//").node == NULL);
    rill_graph_clear_status(g);
    CHECK(rill_identity(g, a, "").node == NULL);
    rill_graph_clear_status(g);
    CHECK(rill_graph_ok(g));
    rill_graph_free(g);
}

static void test_name_scopes(void)
{
    rill_graph *g = rill_graph_new();
    rill_output c = rill_const_float(g, 1, "c");
    rill_graph_push_name_scope(g, "layer1");
    rill_output a = rill_add(g, c, c, NULL);
    CHECK_EQ_STR(name_of(a), "layer1/add");
    CHECK_EQ_STR(name_of(rill_add(g, c, c, NULL)), "layer1/add_1");
    CHECK_EQ_STR(name_of(rill_identity(g, c, "out")), "layer1/out");
    rill_graph_push_name_scope(g, "dense");
    CHECK_EQ_STR(name_of(rill_add(g, c, c, NULL)), "layer1/dense/add");
    rill_graph_pop_name_scope(g);
    CHECK_EQ_STR(name_of(rill_add(g, c, c, NULL)), "layer1/add_2");
    rill_graph_pop_name_scope(g);
    CHECK_EQ_STR(name_of(rill_add(g, c, c, NULL)), "add");

    /* Entering the same scope again gets a unique one, as tf.name_scope does. */
    rill_graph_push_name_scope(g, "layer1");
    CHECK_EQ_STR(name_of(rill_add(g, c, c, NULL)), "layer1_1/add");
    rill_graph_pop_name_scope(g);
    rill_graph_push_name_scope(g, "layer1");
    CHECK_EQ_STR(name_of(rill_add(g, c, c, NULL)), "layer1_2/add");
    rill_graph_pop_name_scope(g);

    /* Nested uniquification happens inside the parent: "s/t" and "s/t_1". */
    rill_graph_push_name_scope(g, "s");
    rill_graph_push_name_scope(g, "t");
    CHECK_EQ_STR(name_of(rill_identity(g, c, NULL)), "s/t/Identity");
    rill_graph_pop_name_scope(g);
    rill_graph_push_name_scope(g, "t");
    CHECK_EQ_STR(name_of(rill_identity(g, c, NULL)), "s/t_1/Identity");
    rill_graph_pop_name_scope(g);
    rill_graph_pop_name_scope(g);
    rill_graph_push_name_scope(g, "s");
    CHECK_EQ_STR(name_of(rill_identity(g, c, NULL)), "s_1/Identity");
    rill_graph_pop_name_scope(g);

    /* A trailing '/' re-enters an existing scope exactly; "/" is the root. */
    rill_graph_push_name_scope(g, "layer1/");
    CHECK_EQ_STR(name_of(rill_add(g, c, c, NULL)), "layer1/add_3");
    rill_graph_push_name_scope(g, "/");
    CHECK_EQ_STR(name_of(rill_add(g, c, c, NULL)), "add_1");
    rill_graph_pop_name_scope(g);
    rill_graph_push_name_scope(g, "inner");
    CHECK_EQ_STR(name_of(rill_add(g, c, c, NULL)), "layer1/inner/add");
    rill_graph_pop_name_scope(g);
    rill_graph_pop_name_scope(g);
    rill_graph_push_name_scope(g, "s/t/");
    CHECK_EQ_STR(name_of(rill_identity(g, c, NULL)), "s/t/Identity_1");
    rill_graph_pop_name_scope(g);

    /* A scope name and an op name share one namespace. */
    CHECK_EQ_STR(name_of(rill_identity(g, c, "layer1")), "layer1_3");
    /* Popping more than was pushed is harmless. */
    rill_graph_pop_name_scope(g);
    rill_graph_pop_name_scope(g);
    CHECK_EQ_STR(name_of(rill_identity(g, c, "top")), "top");

    /* Lookup of scoped names. */
    CHECK(rill_graph_find_node(g, "layer1/dense/add") != NULL);
    CHECK(rill_graph_find_node(g, "dense/add") == NULL);
    CHECK(rill_graph_ok(g));
    rill_graph_free(g);
}

static void test_control_dependencies(void)
{
    rill_graph *g = rill_graph_new();
    rill_output x = rill_const_float(g, 1, "x");
    rill_node *a = rill_no_op(g, "a");
    rill_node *b = rill_no_op(g, "b");
    rill_node *c = rill_no_op(g, "c");

    rill_output before = rill_identity(g, x, "before");
    CHECK_EQ_INT(rill_node_num_control_inputs(before.node), 0);

    rill_graph_push_control_dependencies(g, &a, 1);
    rill_output in_a = rill_identity(g, x, "in_a");
    CHECK_EQ_INT(rill_node_num_control_inputs(in_a.node), 1);
    CHECK(rill_node_control_input(in_a.node, 0) == a);
    CHECK(rill_node_control_input(in_a.node, 1) == NULL);
    CHECK(rill_node_control_input(in_a.node, -1) == NULL);

    /* Nested frames add up. */
    rill_node *bc[] = {b, c};
    rill_graph_push_control_dependencies(g, bc, 2);
    rill_output in_abc = rill_identity(g, x, "in_abc");
    CHECK_EQ_INT(rill_node_num_control_inputs(in_abc.node), 3);
    CHECK(has_control_input(in_abc.node, a));
    CHECK(has_control_input(in_abc.node, b));
    CHECK(has_control_input(in_abc.node, c));

    /* n == 0 clears the outer frames, as tf.control_dependencies(None). */
    rill_graph_push_control_dependencies(g, NULL, 0);
    rill_output cleared = rill_identity(g, x, "cleared");
    CHECK_EQ_INT(rill_node_num_control_inputs(cleared.node), 0);
    /* ...and frames pushed inside a clearing one still apply. */
    rill_graph_push_control_dependencies(g, &c, 1);
    rill_output only_c = rill_identity(g, x, "only_c");
    CHECK_EQ_INT(rill_node_num_control_inputs(only_c.node), 1);
    CHECK(has_control_input(only_c.node, c));
    rill_graph_pop_control_dependencies(g);
    rill_graph_pop_control_dependencies(g);

    /* A dependency named in two frames is recorded once. */
    rill_graph_push_control_dependencies(g, &a, 1);
    rill_output dup = rill_identity(g, x, "dup");
    CHECK_EQ_INT(rill_node_num_control_inputs(dup.node), 3);
    rill_graph_pop_control_dependencies(g);

    rill_graph_pop_control_dependencies(g);
    CHECK_EQ_INT(rill_node_num_control_inputs(rill_identity(g, x, "in_a_again").node), 1);
    rill_graph_pop_control_dependencies(g);
    CHECK_EQ_INT(rill_node_num_control_inputs(rill_identity(g, x, "after").node), 0);
    rill_graph_pop_control_dependencies(g); /* extra pops are harmless */

    /* Variables' initializers ignore the surrounding control scope (they must run alone). */
    rill_graph_push_control_dependencies(g, &a, 1);
    rill_output v =
        rill_variable(g, RILL_FLOAT, rill_shape_vector(2), rill_zeros_initializer(), true, "v");
    rill_node *init = rill_variable_initializer(v);
    CHECK(v.node && !has_control_input(v.node, a)); /* tf.Variable uses init_scope */
    if (CHECK(init != NULL)) {
        CHECK_EQ_STR(rill_node_name(init), "v/Assign");
        CHECK(!has_control_input(init, a));
    }
    rill_graph_pop_control_dependencies(g);

    /* Control inputs added after the fact. */
    rill_node_add_control_input(before.node, b);
    rill_node_add_control_input(before.node, b);
    CHECK_EQ_INT(rill_node_num_control_inputs(before.node), 1);
    rill_node_add_control_input(NULL, b);
    rill_node_add_control_input(before.node, NULL);
    CHECK(rill_graph_ok(g));

    /* An empty dependency (an earlier failed call) is a build error. */
    rill_node *none = NULL;
    rill_graph_push_control_dependencies(g, &none, 1);
    CHECK(!rill_graph_ok(g));
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    rill_graph_pop_control_dependencies(g);
    rill_graph_clear_status(g);

    /* A control input from another graph is refused. */
    rill_graph *g2 = rill_graph_new();
    rill_node *other = rill_no_op(g2, "other");
    rill_node_add_control_input(before.node, other);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)), "different graphs");
    CHECK_EQ_INT(rill_node_num_control_inputs(before.node), 1);
    rill_graph_free(g2);
    rill_graph_free(g);
}

static void test_device_scopes(void)
{
    rill_graph *g = rill_graph_new();
    rill_output x = rill_const_float(g, 1, "x");
    CHECK_EQ_STR(rill_node_requested_device(x.node), "");
    rill_graph_push_device(g, "/job:ps/task:0/device:CPU:0");
    rill_output on_ps = rill_identity(g, x, "on_ps");
    CHECK_EQ_STR(rill_node_requested_device(on_ps.node), "/job:ps/task:0/device:CPU:0");
    /* An inner fully specified device wins. */
    rill_graph_push_device(g, "/job:worker/replica:0/task:1/device:CPU:0");
    rill_output inner = rill_identity(g, x, "inner");
    CHECK_EQ_STR(rill_node_requested_device(inner.node),
                 "/job:worker/replica:0/task:1/device:CPU:0");
    rill_graph_pop_device(g);
    CHECK_EQ_STR(rill_node_requested_device(rill_identity(g, x, "again").node),
                 "/job:ps/task:0/device:CPU:0");
    rill_graph_pop_device(g);
    CHECK_EQ_STR(rill_node_requested_device(rill_identity(g, x, "none").node), "");
    rill_graph_pop_device(g); /* extra pops are harmless */

    /* The spec is copied. */
    char spec[32];
    strcpy(spec, "/device:CPU:0");
    rill_graph_push_device(g, spec);
    strcpy(spec, "/device:GPU:9");
    CHECK_EQ_STR(rill_node_requested_device(rill_identity(g, x, "copied").node), "/device:CPU:0");
    rill_graph_pop_device(g);
    CHECK(rill_graph_ok(g));
    rill_graph_free(g);
}

static void test_group_and_collections(void)
{
    rill_graph *g = rill_graph_new();
    rill_node *a = rill_no_op(g, "a");
    rill_node *b = rill_no_op(g, "b");
    rill_node *ab[] = {a, b};
    rill_node *grp = rill_group(g, ab, 2, NULL);
    if (CHECK(grp != NULL)) {
        CHECK_EQ_STR(rill_node_name(grp), "group_deps");
        CHECK_EQ_STR(rill_node_op_type(grp), "NoOp");
        CHECK_EQ_INT(rill_node_num_inputs(grp), 0);
        CHECK_EQ_INT(rill_node_num_outputs(grp), 0);
        CHECK_EQ_INT(rill_node_num_control_inputs(grp), 2);
        CHECK(has_control_input(grp, a) && has_control_input(grp, b));
    }
    rill_node *named = rill_group(g, ab, 2, "train");
    CHECK(named && strcmp(rill_node_name(named), "train") == 0);
    rill_node *grp2 = rill_group(g, ab, 1, NULL);
    CHECK(grp2 && strcmp(rill_node_name(grp2), "group_deps_1") == 0);
    rill_node *empty = rill_group(g, NULL, 0, "empty");
    CHECK(empty && rill_node_num_control_inputs(empty) == 0);
    rill_node *with_null[] = {a, NULL};
    CHECK(rill_group(g, with_null, 2, NULL) == NULL);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    rill_graph_clear_status(g);

    /* Collections keep insertion order; get returns the count even past cap. */
    rill_node *out[4] = {0};
    CHECK_EQ_INT(rill_graph_get_collection(g, "mine", out, 4), 0);
    rill_graph_add_to_collection(g, "mine", a);
    rill_graph_add_to_collection(g, "mine", b);
    rill_graph_add_to_collection(g, "mine", grp);
    rill_graph_add_to_collection(g, "other", b);
    rill_graph_add_to_collection(g, "mine", NULL); /* ignored */
    CHECK_EQ_INT(rill_graph_get_collection(g, "mine", out, 4), 3);
    CHECK(out[0] == a && out[1] == b && out[2] == grp);
    out[0] = out[1] = NULL;
    CHECK_EQ_INT(rill_graph_get_collection(g, "mine", out, 1), 3);
    CHECK(out[0] == a && out[1] == NULL);
    CHECK_EQ_INT(rill_graph_get_collection(g, "mine", NULL, 0), 3);
    CHECK_EQ_INT(rill_graph_get_collection(g, "other", out, 4), 1);
    CHECK(out[0] == b);

    /* Variables join "variables", and "trainable_variables" when trainable. */
    rill_output w =
        rill_variable(g, RILL_FLOAT, rill_shape_matrix(2, 2), rill_ones_initializer(), true, "w");
    rill_output steps =
        rill_variable(g, RILL_INT32, rill_shape_scalar(), rill_zeros_initializer(), false, "steps");
    CHECK(rill_graph_ok(g));
    rill_output vars[4];
    CHECK_EQ_INT(rill_graph_global_variables(g, vars, 4), 2);
    CHECK(vars[0].node == w.node && vars[1].node == steps.node);
    CHECK_EQ_INT(rill_graph_trainable_variables(g, vars, 4), 1);
    CHECK(vars[0].node == w.node);
    CHECK_EQ_INT(rill_graph_get_collection(g, "variables", out, 4), 2);
    rill_node *init = rill_global_variables_initializer(g, NULL);
    if (CHECK(init != NULL)) {
        CHECK_EQ_STR(rill_node_name(init), "init");
        CHECK_EQ_INT(rill_node_num_control_inputs(init), 2);
        CHECK(has_control_input(init, rill_variable_initializer(w)));
        CHECK(has_control_input(init, rill_variable_initializer(steps)));
    }
    CHECK(rill_variable_initializer(rill_node_output(a, 0)) == NULL);
    CHECK_EQ_STR(rill_node_op_type(w.node), "VariableV2");
    CHECK_EQ_INT(rill_output_dtype(w), RILL_FLOAT);
    rill_shape ws = rill_output_shape(w);
    CHECK(rill_shape_equal(&ws, &(rill_shape){.rank = 2, .dims = {2, 2}}));
    rill_graph_free(g);
}

static void test_find(void)
{
    rill_graph *g = rill_graph_new();
    rill_output c = rill_const_float(g, 1, "c");
    rill_output sum = rill_add(g, c, c, NULL);
    rill_graph_push_name_scope(g, "scope");
    rill_output scoped = rill_identity(g, sum, "y");
    rill_graph_pop_name_scope(g);
    rill_status *s = rill_status_new();

    CHECK(rill_graph_find_node(g, "add") == sum.node);
    CHECK(rill_graph_find_node(g, "scope/y") == scoped.node);
    CHECK(rill_graph_find_node(g, "x") == NULL);
    CHECK(rill_graph_find_node(g, "add:0") == NULL);

    rill_status_set(s, RILL_INTERNAL, "stale");
    rill_output o = rill_graph_find_output(g, "add", s);
    CHECK(o.node == sum.node && o.index == 0);
    CHECK(rill_status_ok(s)); /* success clears the status */
    o = rill_graph_find_output(g, "add:0", s);
    CHECK(o.node == sum.node && o.index == 0 && rill_status_ok(s));
    o = rill_graph_find_output(g, "scope/y:0", s);
    CHECK(o.node == scoped.node && rill_status_ok(s));

    o = rill_graph_find_output(g, "x:0", s);
    CHECK(o.node == NULL && o.index == 0);
    CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
    CHECK_EQ_STR(rill_status_message(s),
                 "The name 'x:0' refers to a Tensor which does not exist. The operation, 'x', "
                 "does not exist in the graph.");
    o = rill_graph_find_output(g, "x", s);
    CHECK(o.node == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
    CHECK_STR_CONTAINS(rill_status_message(s), "The operation, 'x', does not exist in the graph.");

    /* An index past the outputs. */
    o = rill_graph_find_output(g, "add:1", s);
    CHECK(o.node == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
    CHECK_EQ_STR(rill_status_message(s),
                 "The name 'add:1' refers to a Tensor which does not exist. The operation, "
                 "'add', exists but only has 1 outputs.");
    rill_node *noop = rill_no_op(g, "nothing");
    o = rill_graph_find_output(g, "nothing:0", s);
    CHECK(o.node == NULL && rill_status_code(s) == RILL_NOT_FOUND);
    (void)noop;

    /* Malformed tensor names. */
    const char *bad[] = {"add:", "add:x", "add:-1", "add:1x", "add:0:0"};
    for (int i = 0; i < (int)(sizeof bad / sizeof *bad); i++) {
        o = rill_graph_find_output(g, bad[i], s);
        CHECK(o.node == NULL);
        CHECK_EQ_INT(rill_status_code(s), i == 4 ? RILL_NOT_FOUND : RILL_INVALID_ARGUMENT);
    }
    o = rill_graph_find_output(g, "add:x", s);
    CHECK_STR_CONTAINS(rill_status_message(s), "'add:x' looks like a Tensor name");

    /* Lookup by index. */
    CHECK_EQ_INT(rill_graph_num_nodes(g), 4);
    CHECK(rill_graph_node(g, 0) == c.node);
    CHECK(rill_graph_node(g, 3) == noop);
    CHECK(rill_graph_node(g, 4) == NULL);
    CHECK(rill_graph_node(g, -1) == NULL);
    rill_status_free(s);
    rill_graph_free(g);
}

static void test_accessors_and_shapes(void)
{
    rill_graph *g = rill_graph_new();
    rill_output a = rill_placeholder(g, RILL_FLOAT, rill_shape_make(2, (int64_t[]){-1, 3}), "a");
    rill_output w = rill_const_floats(g, (float[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
                                      (int64_t[]){3, 4}, 2, "w");
    rill_output m = rill_matmul(g, a, w, false, false, NULL);
    CHECK(rill_graph_ok(g));
    CHECK_EQ_STR(rill_node_op_type(m.node), "MatMul");
    CHECK_EQ_INT(rill_node_num_inputs(m.node), 2);
    CHECK(rill_node_input(m.node, 0).node == a.node);
    CHECK(rill_node_input(m.node, 1).node == w.node);
    CHECK(rill_node_input(m.node, 2).node == NULL);
    CHECK_EQ_INT(rill_node_num_outputs(m.node), 1);
    CHECK_EQ_INT(rill_node_output_dtype(m.node, 0), RILL_FLOAT);
    CHECK_EQ_INT(rill_node_output_dtype(m.node, 1), RILL_DT_INVALID);
    rill_shape ms = rill_node_output_shape(m.node, 0);
    char buf[64];
    CHECK_EQ_STR(rill_shape_str(&ms, buf, sizeof buf), "[?,4]");
    CHECK_EQ_INT(rill_node_output_shape(m.node, 5).rank, -1);
    CHECK(rill_node_graph(m.node) == g);

    /* Broadcasting at build time. */
    rill_output col = rill_const_floats(g, (float[]){1, 2}, (int64_t[]){2, 1}, 2, NULL);
    rill_output row = rill_const_floats(g, (float[]){1, 2, 3}, (int64_t[]){3}, 1, NULL);
    rill_shape bs = rill_output_shape(rill_add(g, col, row, NULL));
    CHECK_EQ_STR(rill_shape_str(&bs, buf, sizeof buf), "[2,3]");
    rill_output u = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "u");
    rill_shape us = rill_output_shape(rill_square(g, u, NULL));
    CHECK_EQ_INT(us.rank, -1);

    rill_output none = rill_node_output(NULL, 3);
    CHECK(none.node == NULL && none.index == 0);
    CHECK_EQ_INT(rill_output_dtype(none), RILL_DT_INVALID);
    CHECK_EQ_INT(rill_output_shape(none).rank, -1);
    rill_output second = rill_node_output(m.node, 0);
    CHECK(second.node == m.node && second.index == 0);
    rill_graph_free(g);
    rill_graph_free(NULL);
}

static void test_sticky_status(void)
{
    rill_graph *g = rill_graph_new();
    rill_output f = rill_const_float(g, 1, "f");
    rill_output i = rill_const_scalar(g, RILL_INT32, 2, "i");
    CHECK(rill_graph_ok(g));
    int before = rill_graph_num_nodes(g);

    /* The first error is recorded and the node is not added. */
    rill_output bad = rill_add(g, f, i, NULL);
    CHECK(bad.node == NULL && bad.index == 0);
    CHECK(!rill_graph_ok(g));
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)), "int32");
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)), "float");
    CHECK_EQ_INT(rill_graph_num_nodes(g), before);
    char first[512];
    snprintf(first, sizeof first, "%s", rill_status_message(rill_graph_status(g)));

    /* Later builders are no-ops that return empty outputs, even valid ones... */
    rill_output ok_later = rill_add(g, f, f, NULL);
    CHECK(ok_later.node == NULL);
    CHECK(rill_no_op(g, NULL) == NULL);
    CHECK(rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_zeros_initializer(), true, "v")
              .node == NULL);
    /* ...and failing ones do not overwrite the first error. */
    CHECK(rill_matmul(g, f, f, false, false, NULL).node == NULL);
    CHECK_EQ_STR(rill_status_message(rill_graph_status(g)), first);
    CHECK_EQ_INT(rill_graph_num_nodes(g), before);

    /* After clearing, building goes on; the failed node never took its name. */
    rill_graph_clear_status(g);
    CHECK(rill_graph_ok(g));
    CHECK_EQ_STR(rill_status_message(rill_graph_status(g)), "");
    rill_output good = rill_add(g, f, f, NULL);
    CHECK_EQ_STR(name_of(good), "add");

    /* Builders accept {NULL, 0} inputs (an earlier failure) by recording an error. */
    rill_output empty = {NULL, 0};
    CHECK(rill_add(g, empty, f, NULL).node == NULL);
    CHECK(!rill_graph_ok(g));
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)), "empty");
    rill_graph_clear_status(g);

    /* Build-time shape errors name the node. */
    rill_output m23 = rill_const_floats(g, (float[]){1, 2, 3, 4, 5, 6}, (int64_t[]){2, 3}, 2, "m");
    rill_output v2 = rill_const_floats(g, (float[]){1, 2}, (int64_t[]){2}, 1, "v");
    CHECK(rill_add(g, m23, v2, "bcast").node == NULL);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)), "bcast");
    rill_graph_clear_status(g);

    /* An input from another graph. */
    rill_graph *g2 = rill_graph_new();
    rill_output foreign = rill_const_float(g2, 1, "foreign");
    CHECK(rill_add(g, f, foreign, NULL).node == NULL);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)), "another graph");
    rill_graph_clear_status(g);
    /* An output index out of range. */
    CHECK(rill_identity(g, (rill_output){f.node, 3}, NULL).node == NULL);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_OUT_OF_RANGE);
    rill_graph_clear_status(g);

    /* A session refuses a graph whose build failed. */
    CHECK(rill_add(g, f, i, NULL).node == NULL);
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    CHECK(sess == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_FAILED_PRECONDITION);
    rill_status_free(s);
    rill_graph_free(g2);
    rill_graph_free(g);
}

int main(void)
{
    test_default_names();
    test_name_scopes();
    test_control_dependencies();
    test_device_scopes();
    test_group_and_collections();
    test_find();
    test_accessors_and_shapes();
    test_sticky_status();
    TEST_MAIN_END();
}
