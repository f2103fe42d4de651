/* test_errors.c - what users see when things go wrong: each error's code and message (in
 * TensorFlow's words where users know them), that nothing crashes, and that a session keeps
 * working, variables intact, after a failed run. */
#include <rill/rill.h>

#include "test.h"

#include <math.h>

#include <string.h>

/* Message starts with prefix. */
#define CHECK_PREFIX(msg, prefix)                                                                  \
    do {                                                                                           \
        const char *m_ = (msg);                                                                    \
        if (!CHECK(m_ && strncmp(m_, (prefix), strlen(prefix)) == 0))                              \
            fprintf(stderr, "  message was: %s\n", m_ ? m_ : "(null)");                            \
    } while (0)

static rill_session *session_or_report(rill_graph *g, rill_status *s)
{
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  build failed: %s\n", rill_status_message(rill_graph_status(g)));
        return NULL;
    }
    rill_session *sess = rill_session_new(g, NULL, s);
    CHECK(sess != NULL);
    return sess;
}

/* Runs one fetch expecting failure with code; the fetch slot must come back NULL. */
static void expect_run_error(rill_session *sess, const rill_output *feeds, rill_tensor *const *vals,
                             int nfeeds, rill_output fetch, rill_code code, rill_status *s)
{
    rill_tensor *out = (rill_tensor *)&out; /* garbage the run must overwrite */
    rill_code c = rill_session_run(sess, feeds, vals, nfeeds, &fetch, &out, 1, NULL, 0, s);
    CHECK_EQ_INT(c, code);
    CHECK_EQ_INT(rill_status_code(s), code);
    CHECK(out == NULL);
    if (c == RILL_OK) rill_tensor_free(out);
}

static float fetch_float(rill_session *sess, const rill_output *feeds, rill_tensor *const *vals,
                         int nfeeds, rill_output fetch, rill_status *s)
{
    rill_tensor *out = NULL;
    if (!CHECK_EQ_INT(rill_session_run(sess, feeds, vals, nfeeds, &fetch, &out, 1, NULL, 0, s),
                      RILL_OK)) {
        fprintf(stderr, "  run failed: %s\n", rill_status_message(s));
        return -12345;
    }
    float v = (float)rill_tensor_get_double(out, 0);
    rill_tensor_free(out);
    return v;
}

static void test_missing_feed(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output input = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "input");
    rill_output shaped = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(3), "shaped");
    rill_output partial =
        rill_placeholder(g, RILL_INT32, rill_shape_make(2, (int64_t[]){-1, 4}), "partial");
    rill_output y = rill_square(g, input, "y");
    rill_output z = rill_neg(g, shaped, "z");
    rill_output w = rill_neg(g, partial, "w");
    rill_session *sess = session_or_report(g, s);
    if (!sess) goto out;

    expect_run_error(sess, NULL, NULL, 0, y, RILL_INVALID_ARGUMENT, s);
    CHECK_PREFIX(rill_status_message(s),
                 "You must feed a value for placeholder tensor 'input' with dtype float");
    CHECK_STR_CONTAINS(rill_status_message(s), "input"); /* names the node */
    /* Fetching the placeholder itself is the same error. */
    expect_run_error(sess, NULL, NULL, 0, input, RILL_INVALID_ARGUMENT, s);
    CHECK_PREFIX(rill_status_message(s),
                 "You must feed a value for placeholder tensor 'input' with dtype float");

    expect_run_error(sess, NULL, NULL, 0, z, RILL_INVALID_ARGUMENT, s);
    CHECK_PREFIX(rill_status_message(s),
                 "You must feed a value for placeholder tensor 'shaped' with dtype float and "
                 "shape [3]");
    expect_run_error(sess, NULL, NULL, 0, w, RILL_INVALID_ARGUMENT, s);
    CHECK_PREFIX(rill_status_message(s),
                 "You must feed a value for placeholder tensor 'partial' with dtype int32 and "
                 "shape [?,4]");

    /* Fed, it works; the earlier failures left nothing behind. */
    rill_tensor *two = rill_tensor_scalar_float(2);
    CHECK_NEAR(fetch_float(sess, &input, &two, 1, y, s), 4, 0);
    CHECK(rill_status_ok(s));
    rill_tensor_free(two);
    rill_session_free(sess);
out:
    rill_status_free(s);
    rill_graph_free(g);
}

static void test_uninitialized_variable(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output weight = rill_variable(g, RILL_FLOAT, rill_shape_vector(2),
                                       rill_constant_initializer(3), true, "weight");
    rill_output doubled = rill_mul(g, weight, rill_const_float(g, 2, NULL), "doubled");
    rill_output inc = rill_assign_add(
        g, weight, rill_const_floats(g, (float[]){1, 1}, (int64_t[]){2}, 1, NULL), "inc");
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_session *sess = session_or_report(g, s);
    if (!sess) goto out;

    /* A consumer reads it. */
    expect_run_error(sess, NULL, NULL, 0, doubled, RILL_FAILED_PRECONDITION, s);
    CHECK_PREFIX(rill_status_message(s), "Attempting to use uninitialized value weight");
    /* Fetched directly. */
    expect_run_error(sess, NULL, NULL, 0, weight, RILL_FAILED_PRECONDITION, s);
    CHECK_PREFIX(rill_status_message(s), "Attempting to use uninitialized value weight");
    /* Updated in place. */
    expect_run_error(sess, NULL, NULL, 0, inc, RILL_FAILED_PRECONDITION, s);
    CHECK_PREFIX(rill_status_message(s), "Attempting to use uninitialized value weight");
    /* As a target. */
    CHECK_EQ_INT(rill_session_run_targets(sess, &inc.node, 1, s), RILL_FAILED_PRECONDITION);
    CHECK_STR_CONTAINS(rill_status_message(s), "Attempting to use uninitialized value weight");

    CHECK_EQ_INT(rill_session_run_targets(sess, &init, 1, s), RILL_OK);
    CHECK(rill_status_ok(s));
    CHECK_EQ_STR(rill_status_message(s), "");
    CHECK_NEAR(fetch_float(sess, NULL, NULL, 0, doubled, s), 6, 0);
    rill_session_free(sess);
out:
    rill_status_free(s);
    rill_graph_free(g);
}

static void test_feed_mismatches(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(3), "x");
    rill_output m = rill_placeholder(g, RILL_FLOAT, rill_shape_make(2, (int64_t[]){-1, 2}), "m");
    rill_output y = rill_neg(g, x, "y");
    rill_output my = rill_neg(g, m, "my");
    rill_output mid = rill_square(g, y, "mid");
    rill_session *sess = session_or_report(g, s);
    if (!sess) goto out;

    rill_tensor *ints = rill_tensor_from_data(RILL_INT32, (int64_t[]){3}, 1, (int32_t[]){1, 2, 3});
    expect_run_error(sess, &x, &ints, 1, y, RILL_INVALID_ARGUMENT, s);
    CHECK_STR_CONTAINS(rill_status_message(s), "'x:0'");
    CHECK_STR_CONTAINS(rill_status_message(s), "int32");
    CHECK_STR_CONTAINS(rill_status_message(s), "float");

    rill_tensor *four = rill_tensor_new(RILL_FLOAT, (int64_t[]){4}, 1);
    expect_run_error(sess, &x, &four, 1, y, RILL_INVALID_ARGUMENT, s);
    CHECK_STR_CONTAINS(rill_status_message(s), "'x:0'");
    CHECK_STR_CONTAINS(rill_status_message(s), "[4]");
    CHECK_STR_CONTAINS(rill_status_message(s), "[3]");
    /* Wrong rank, and a wrong known dim of a partly known shape. */
    rill_tensor *mat = rill_tensor_new(RILL_FLOAT, (int64_t[]){1, 3}, 2);
    expect_run_error(sess, &x, &mat, 1, y, RILL_INVALID_ARGUMENT, s);
    CHECK_STR_CONTAINS(rill_status_message(s), "'x:0'");
    expect_run_error(sess, &m, &mat, 1, my, RILL_INVALID_ARGUMENT, s);
    CHECK_STR_CONTAINS(rill_status_message(s), "'m:0'");
    CHECK_STR_CONTAINS(rill_status_message(s), "[?,2]");
    rill_tensor *ok52 = rill_tensor_new(RILL_FLOAT, (int64_t[]){5, 2}, 2);
    rill_tensor *out = NULL;
    CHECK_EQ_INT(rill_session_run(sess, &m, &ok52, 1, &my, &out, 1, NULL, 0, s), RILL_OK);
    CHECK(out && rill_tensor_dim(out, 0) == 5);
    rill_tensor_free(out);

    /* Feeding an intermediate tensor checks it against the inferred shape. */
    expect_run_error(sess, &y, &four, 1, mid, RILL_INVALID_ARGUMENT, s);
    CHECK_STR_CONTAINS(rill_status_message(s), "'y:0'");
    /* A NULL value, and the same tensor fed twice. */
    rill_tensor *null_val = NULL;
    expect_run_error(sess, &x, &null_val, 1, y, RILL_INVALID_ARGUMENT, s);
    CHECK_STR_CONTAINS(rill_status_message(s), "'x:0'");
    rill_tensor *three = rill_tensor_new(RILL_FLOAT, (int64_t[]){3}, 1);
    rill_output twice[] = {x, x};
    rill_tensor *vals[] = {three, three};
    expect_run_error(sess, twice, vals, 2, y, RILL_INVALID_ARGUMENT, s);
    CHECK_STR_CONTAINS(rill_status_message(s), "x:0 fed more than once");
    /* A feed index past the node's outputs. */
    rill_output bad_index = {x.node, 1};
    expect_run_error(sess, &bad_index, &three, 1, y, RILL_INVALID_ARGUMENT, s);

    rill_tensor_free(ints);
    rill_tensor_free(four);
    rill_tensor_free(mat);
    rill_tensor_free(ok52);
    rill_tensor_free(three);
    rill_session_free(sess);
out:
    rill_status_free(s);
    rill_graph_free(g);
}

static void test_build_errors(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output a = rill_const_floats(g, (float[]){1, 2, 3, 4, 5, 6}, (int64_t[]){2, 3}, 2, "a");
    rill_output b = rill_const_floats(g, (float[]){1, 2, 3, 4, 5, 6}, (int64_t[]){2, 3}, 2, "b");
    rill_output i = rill_const_scalar(g, RILL_INT32, 1, "i");

    /* Shape mismatch, in TF's words. */
    CHECK(rill_matmul(g, a, b, false, false, "mm").node == NULL);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    CHECK_EQ_STR(rill_status_message(rill_graph_status(g)),
                 "Dimensions must be equal, but are 3 and 2 for 'mm' (op: 'MatMul') with input "
                 "shapes: [2,3], [2,3].");
    rill_graph_clear_status(g);
    CHECK(rill_add(g, a, rill_const_floats(g, (float[]){1, 2}, (int64_t[]){2}, 1, NULL), "bad")
              .node == NULL);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    CHECK_PREFIX(rill_status_message(rill_graph_status(g)), "Dimensions must be equal");
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)), "'bad'");
    rill_graph_clear_status(g);

    /* Dtype mismatch. */
    CHECK(rill_add(g, a, i, "mixed").node == NULL);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    CHECK_EQ_STR(rill_status_message(rill_graph_status(g)),
                 "Input 'y' of 'Add' Op has type int32 that does not match type float of "
                 "argument 'x'.");
    rill_graph_clear_status(g);
    /* A float-only op on integers. */
    CHECK(rill_sqrt(g, i, NULL).node == NULL);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    rill_graph_clear_status(g);
    /* Assigning to something that is not a variable. */
    CHECK(rill_assign(g, a, b, NULL).node == NULL);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)), "must be a variable");
    rill_graph_clear_status(g);

    /* A session on a graph whose build failed. */
    CHECK(rill_add(g, a, i, NULL).node == NULL);
    rill_session *sess = rill_session_new(g, NULL, s);
    CHECK(sess == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_FAILED_PRECONDITION);
    CHECK_STR_CONTAINS(rill_status_message(s), "does not match type");
    CHECK(rill_session_new(NULL, NULL, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    rill_status_free(s);
    rill_graph_free(g);
}

static void test_bad_run_arguments(void)
{
    rill_graph *g = rill_graph_new();
    rill_graph *other = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output c = rill_const_float(g, 2, "c");
    rill_output y = rill_square(g, c, "y");
    rill_output oc = rill_const_float(other, 3, "c");
    rill_output ox = rill_placeholder(other, RILL_FLOAT, rill_shape_scalar(), "x");
    rill_session *sess = session_or_report(g, s);
    if (!sess) goto out;

    /* Unknown names. */
    rill_output missing = rill_graph_find_output(g, "nope:0", s);
    CHECK(missing.node == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
    CHECK_EQ_STR(rill_status_message(s),
                 "The name 'nope:0' refers to a Tensor which does not exist. The operation, "
                 "'nope', does not exist in the graph.");
    /* ...and what such a lookup returns, used as a fetch. */
    expect_run_error(sess, NULL, NULL, 0, missing, RILL_INVALID_ARGUMENT, s);
    CHECK_STR_CONTAINS(rill_status_message(s), "empty output");
    /* An index past the outputs. */
    expect_run_error(sess, NULL, NULL, 0, (rill_output){y.node, 1}, RILL_INVALID_ARGUMENT, s);
    CHECK_STR_CONTAINS(rill_status_message(s), "Fetch 0");

    /* Fetches and feeds from another graph. */
    expect_run_error(sess, NULL, NULL, 0, oc, RILL_INVALID_ARGUMENT, s);
    CHECK_STR_CONTAINS(rill_status_message(s), "another graph");
    rill_tensor *v = rill_tensor_scalar_float(1);
    expect_run_error(sess, &ox, &v, 1, y, RILL_INVALID_ARGUMENT, s);
    CHECK_STR_CONTAINS(rill_status_message(s), "another graph");
    rill_node *foreign_target = oc.node;
    CHECK_EQ_INT(rill_session_run_targets(sess, &foreign_target, 1, s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "Target 0");
    rill_node *null_target = NULL;
    CHECK_EQ_INT(rill_session_run_targets(sess, &null_target, 1, s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "Target 0");

    /* Nothing to do. */
    CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, NULL, NULL, 0, NULL, 0, s),
                 RILL_INVALID_ARGUMENT);
    CHECK_EQ_STR(rill_status_message(s), "Must specify at least one target to fetch or execute.");
    CHECK_EQ_INT(rill_session_run_targets(sess, NULL, 0, s), RILL_INVALID_ARGUMENT);
    /* Counts without arrays, negative counts, no session. */
    CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, NULL, NULL, 1, NULL, 0, s),
                 RILL_INVALID_ARGUMENT);
    CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &y, NULL, 1, NULL, 0, s),
                 RILL_INVALID_ARGUMENT);
    CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, -1, &y, NULL, 0, NULL, 0, s),
                 RILL_INVALID_ARGUMENT);
    rill_tensor *out = NULL;
    CHECK_EQ_INT(rill_session_run(NULL, NULL, NULL, 0, &y, &out, 1, NULL, 0, s),
                 RILL_INVALID_ARGUMENT);

    /* None of that disturbed the session. */
    CHECK_NEAR(fetch_float(sess, NULL, NULL, 0, y, s), 4, 0);
    rill_tensor_free(v);
    rill_session_free(sess);
out:
    rill_status_free(s);
    rill_graph_free(other);
    rill_graph_free(g);
}

static void test_cycle(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output c = rill_const_float(g, 1, "c");
    rill_output a = rill_identity(g, c, "a");
    rill_output b = rill_identity(g, a, "b");
    rill_output d = rill_identity(g, b, "d");
    rill_output outside = rill_neg(g, c, "outside");
    rill_node_add_control_input(a.node, d.node); /* a -> b -> d -> (control) a */
    CHECK(rill_graph_ok(g));                     /* not detected at build time */
    rill_session *sess = session_or_report(g, s);
    if (!sess) goto out;
    expect_run_error(sess, NULL, NULL, 0, d, RILL_INVALID_ARGUMENT, s);
    CHECK_PREFIX(rill_status_message(s), "Graph is invalid, contains a cycle");
    CHECK_STR_CONTAINS(rill_status_message(s), "3 nodes");
    CHECK_EQ_INT(rill_session_num_plans(sess), 0);
    /* Parts of the graph outside the cycle still run. */
    CHECK_NEAR(fetch_float(sess, NULL, NULL, 0, outside, s), -1, 0);
    /* A node that depends on itself. */
    rill_node *self = rill_no_op(g, "self");
    rill_node_add_control_input(self, self);
    CHECK_EQ_INT(rill_session_run_targets(sess, &self, 1, s), RILL_INVALID_ARGUMENT);
    CHECK_PREFIX(rill_status_message(s), "Graph is invalid, contains a cycle");
    rill_session_free(sess);
out:
    rill_status_free(s);
    rill_graph_free(g);
}

static void test_run_time_errors(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output a = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "a");
    rill_output b = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "b");
    rill_output mm = rill_matmul(g, a, b, false, false, "mm");
    rill_output r = rill_reshape(g, a, (int64_t[]){4}, 1, "r");
    rill_output r2 = rill_reshape(g, a, (int64_t[]){-1, 4}, 2, "r2");
    rill_output n = rill_placeholder(g, RILL_INT32, rill_shape_unknown(), "n");
    rill_output dd = rill_placeholder(g, RILL_INT32, rill_shape_unknown(), "dd");
    rill_output q = rill_div(g, n, dd, "q");
    rill_output sum = rill_add(g, a, b, "sum");
    rill_output v =
        rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_constant_initializer(5), false, "v");
    rill_output inc = rill_assign_add(g, v, rill_const_float(g, 1, NULL), "inc");
    rill_output logits = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "logits");
    rill_output labels = rill_placeholder(g, RILL_INT32, rill_shape_unknown(), "labels");
    rill_output ce = rill_sparse_softmax_cross_entropy_with_logits(g, labels, logits, "ce");
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_session *sess = session_or_report(g, s);
    if (!sess) goto out;
    CHECK_EQ_INT(rill_session_run_targets(sess, &init, 1, s), RILL_OK);
    CHECK_NEAR(fetch_float(sess, NULL, NULL, 0, inc, s), 6, 0);

    rill_tensor *t23 = rill_tensor_new(RILL_FLOAT, (int64_t[]){2, 3}, 2);
    rill_tensor *t23b = rill_tensor_new(RILL_FLOAT, (int64_t[]){2, 3}, 2);
    memset(rill_tensor_data(t23), 0, 24);
    memset(rill_tensor_data(t23b), 0, 24);
    rill_output ab[] = {a, b};
    rill_tensor *abv[] = {t23, t23b};
    expect_run_error(sess, ab, abv, 2, mm, RILL_INVALID_ARGUMENT, s);
    CHECK_PREFIX(rill_status_message(s), "Matrix size-incompatible: In[0]: [2,3], In[1]: [2,3]");
    CHECK_STR_CONTAINS(rill_status_message(s), "mm"); /* names the node */

    /* Incompatible shapes for an elementwise op. */
    rill_tensor *t4 = rill_tensor_new(RILL_FLOAT, (int64_t[]){4}, 1);
    rill_tensor *abv2[] = {t23, t4};
    expect_run_error(sess, ab, abv2, 2, sum, RILL_INVALID_ARGUMENT, s);
    CHECK_PREFIX(rill_status_message(s), "Incompatible shapes: [2,3] vs. [4]");

    expect_run_error(sess, &a, &t23, 1, r, RILL_INVALID_ARGUMENT, s);
    CHECK_PREFIX(rill_status_message(s), "Input to reshape is a tensor with 6 values, but the "
                                         "requested shape [4] has 4");
    expect_run_error(sess, &a, &t23, 1, r2, RILL_INVALID_ARGUMENT, s);
    CHECK_PREFIX(rill_status_message(s), "Input to reshape is a tensor with 6 values");

    rill_tensor *num = rill_tensor_from_data(RILL_INT32, (int64_t[]){2}, 1, (int32_t[]){7, 8});
    rill_tensor *den = rill_tensor_from_data(RILL_INT32, (int64_t[]){2}, 1, (int32_t[]){2, 0});
    rill_output nd[] = {n, dd};
    rill_tensor *ndv[] = {num, den};
    expect_run_error(sess, nd, ndv, 2, q, RILL_INVALID_ARGUMENT, s);
    CHECK_PREFIX(rill_status_message(s), "Integer division by zero");
    ((int32_t *)rill_tensor_data(den))[1] = 4;
    rill_tensor *qv = NULL;
    if (CHECK_EQ_INT(rill_session_run(sess, nd, ndv, 2, &q, &qv, 1, NULL, 0, s), RILL_OK)) {
        CHECK_EQ_INT((int)rill_tensor_get_double(qv, 0), 3);
        CHECK_EQ_INT((int)rill_tensor_get_double(qv, 1), 2);
    }
    rill_tensor_free(qv);

    /* Labels out of range. */
    rill_tensor *lg = rill_tensor_new(RILL_FLOAT, (int64_t[]){2, 3}, 2);
    memset(rill_tensor_data(lg), 0, 24);
    rill_tensor *lb = rill_tensor_from_data(RILL_INT32, (int64_t[]){2}, 1, (int32_t[]){1, 3});
    rill_output ll[] = {logits, labels};
    rill_tensor *llv[] = {lg, lb};
    expect_run_error(sess, ll, llv, 2, ce, RILL_INVALID_ARGUMENT, s);
    CHECK_PREFIX(rill_status_message(s), "Received a label value of 3 which is outside the valid "
                                         "range of [0, 3).");
    ((int32_t *)rill_tensor_data(lb))[1] = -1;
    expect_run_error(sess, ll, llv, 2, ce, RILL_INVALID_ARGUMENT, s);
    CHECK_PREFIX(rill_status_message(s), "Received a label value of -1");
    ((int32_t *)rill_tensor_data(lb))[1] = 2;
    rill_tensor *cev = NULL;
    if (CHECK_EQ_INT(rill_session_run(sess, ll, llv, 2, &ce, &cev, 1, NULL, 0, s), RILL_OK))
        CHECK_NEAR(rill_tensor_get_double(cev, 0), 1.0986123, 1e-5); /* log(3) */
    rill_tensor_free(cev);

    /* A step that fails part-way with other fetches: every fetch comes back NULL. */
    rill_output fetches[] = {v, mm};
    rill_tensor *outs[2] = {(rill_tensor *)&outs, (rill_tensor *)&outs};
    CHECK_EQ_INT(rill_session_run(sess, ab, abv, 2, fetches, outs, 2, NULL, 0, s),
                 RILL_INVALID_ARGUMENT);
    CHECK(outs[0] == NULL && outs[1] == NULL);

    /* After all that, the session runs and the variable kept its value. */
    CHECK_NEAR(fetch_float(sess, NULL, NULL, 0, v, s), 6, 0);
    CHECK_NEAR(fetch_float(sess, NULL, NULL, 0, inc, s), 7, 0);
    memset(rill_tensor_data(t4), 0, 16);
    rill_tensor *t32 = rill_tensor_new(RILL_FLOAT, (int64_t[]){3, 2}, 2);
    memset(rill_tensor_data(t32), 0, 24);
    rill_tensor *abv3[] = {t23, t32};
    rill_tensor *mmv = NULL;
    if (CHECK_EQ_INT(rill_session_run(sess, ab, abv3, 2, &mm, &mmv, 1, NULL, 0, s), RILL_OK)) {
        CHECK_EQ_INT(rill_tensor_dim(mmv, 0), 2);
        CHECK_EQ_INT(rill_tensor_dim(mmv, 1), 2);
    }
    rill_tensor_free(mmv);
    /* A failure in a step that also updates: the update that ran stays (as in TF). */
    rill_node *targets[] = {inc.node};
    CHECK_EQ_INT(rill_session_run(sess, ab, abv, 2, &mm, &mmv, 1, targets, 1, s),
                 RILL_INVALID_ARGUMENT);
    float after = fetch_float(sess, NULL, NULL, 0, v, s);
    CHECK(after == 7 || after == 8);

    rill_tensor_free(t23);
    rill_tensor_free(t23b);
    rill_tensor_free(t4);
    rill_tensor_free(t32);
    rill_tensor_free(num);
    rill_tensor_free(den);
    rill_tensor_free(lg);
    rill_tensor_free(lb);
    rill_session_free(sess);
out:
    rill_status_free(s);
    rill_graph_free(g);
}

/* Shapes that come from tensors (a step's feeds, a graph from the wire) at int64's edge: the
 * int64 values were read through a double, and INT64_MAX turned into 2^63, which no int64 holds
 * (undefined behaviour, found by fuzz_rpc's review). Now they are read exactly and refused. */
static void test_huge_shape_values(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output a = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "a");
    rill_output sh = rill_placeholder(g, RILL_INT64, rill_shape_unknown(), "sh");
    rill_output r = rill_reshape_to(g, a, sh, "r");
    rill_output f = rill_fill(g, sh, rill_const_float(g, 1, NULL), "f");
    rill_session *sess = session_or_report(g, s);
    if (!sess) goto out;
    rill_tensor *av = rill_tensor_new(RILL_FLOAT, (int64_t[]){2, 3}, 2);
    memset(rill_tensor_data(av), 0, 24);
    rill_tensor *shv = rill_tensor_new(RILL_INT64, (int64_t[]){2}, 1);
    ((int64_t *)rill_tensor_data(shv))[0] = INT64_MAX;
    ((int64_t *)rill_tensor_data(shv))[1] = 2;
    CHECK(rill_tensor_get_int64(shv, 0) == INT64_MAX); /* exact, not through a double */
    rill_output feeds[] = {a, sh};
    rill_tensor *vals[] = {av, shv};
    expect_run_error(sess, feeds, vals, 2, r, RILL_INVALID_ARGUMENT, s);
    expect_run_error(sess, feeds + 1, vals + 1, 1, f, RILL_INVALID_ARGUMENT, s);
    rill_tensor *big = rill_tensor_new(RILL_DOUBLE, (int64_t[]){3}, 1);
    double *b = rill_tensor_data(big);
    b[0] = 1e300, b[1] = -1e300, b[2] = NAN;
    CHECK(rill_tensor_get_int64(big, 0) == INT64_MAX && rill_tensor_get_int64(big, 1) == INT64_MIN &&
          rill_tensor_get_int64(big, 2) == 0);
    rill_tensor_free(big);
    rill_tensor_free(av);
    rill_tensor_free(shv);
    rill_session_free(sess);
out:
    rill_graph_free(g);
    rill_status_free(s);
}

int main(void)
{
    test_missing_feed();
    test_uninitialized_variable();
    test_feed_mismatches();
    test_build_errors();
    test_bad_run_arguments();
    test_cycle();
    test_run_time_errors();
    test_huge_shape_values();
    TEST_MAIN_END();
}
