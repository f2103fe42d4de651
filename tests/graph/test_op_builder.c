/* test_op_builder.c - any op by its type name (rill_op_builder_*): nodes made this way equal the
 * typed builders' (same op, attrs, inferred shapes, same results bit for bit when run: Add,
 * Conv2D with strides/padding/dilations, Placeholder fed, Const from a tensor freed right
 * after), take the graph's name scope and device, replace an attr set twice, run without the
 * attrs a typed builder always sets (a Placeholder's shape, a summary's tag), and fail with
 * TF's texts: an unknown op type, a known attr of the wrong kind, shapes that do not match. */
#include "test.h"

#include <rill/rill.h>

#include <string.h>

static rill_tensor *run1(rill_graph *g, rill_output o, const rill_output *feeds,
                         rill_tensor *const *vals, int nfeeds)
{
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_tensor *t = NULL;
    if (!CHECK(sess != NULL) ||
        !CHECK(rill_session_run(sess, feeds, vals, nfeeds, &o, &t, 1, NULL, 0, s) == RILL_OK))
        fprintf(stderr, "  %s\n", rill_status_message(s));
    rill_session_free(sess);
    rill_status_free(s);
    return t;
}

static bool same(const rill_tensor *a, const rill_tensor *b)
{
    return a && b && rill_tensor_nbytes(a) == rill_tensor_nbytes(b) &&
           memcmp(rill_tensor_data(a), rill_tensor_data(b), rill_tensor_nbytes(a)) == 0;
}

static rill_tensor *ramp(const int64_t *dims, int rank, float scale)
{
    rill_tensor *t = rill_tensor_new(RILL_FLOAT, dims, rank);
    float *p = rill_tensor_data(t);
    for (int64_t i = 0; i < rill_tensor_num_elements(t); i++) p[i] = scale * (float)((i * 7) % 13 - 6);
    return t;
}

static void test_add_and_scopes(void)
{
    rill_graph *g = rill_graph_new();
    float a[3] = {1, 2, 3};
    int64_t d3 = 3;
    rill_output x = rill_const_floats(g, a, &d3, 1, "a"), y = rill_const_floats(g, a, &d3, 1, "b");
    rill_graph_push_name_scope(g, "scope");
    rill_graph_push_device(g, "/cpu:0");
    rill_op_builder *b = rill_op_builder_new(g, "Add", "sum");
    rill_op_builder_add_input(b, x);
    rill_op_builder_add_input(b, y);
    rill_node *n = rill_op_builder_finish(b);
    rill_graph_pop_device(g);
    rill_graph_pop_name_scope(g);
    rill_output typed = rill_add(g, x, y, "typed");
    if (!CHECK(n != NULL)) {
        fprintf(stderr, "  %s\n", rill_status_message(rill_graph_status(g)));
        rill_graph_free(g);
        return;
    }
    CHECK_EQ_STR(rill_node_name(n), "scope/sum");
    CHECK_EQ_STR(rill_node_op_type(n), "Add");
    CHECK_EQ_STR(rill_node_requested_device(n), "/device:CPU:0");
    rill_shape sh = rill_node_output_shape(n, 0);
    CHECK(rill_shape_equal(&sh, &(rill_shape){1, {3}}));
    CHECK_EQ_INT(rill_node_output_dtype(n, 0), RILL_FLOAT);
    rill_tensor *r = run1(g, rill_node_output(n, 0), NULL, NULL, 0), *t = run1(g, typed, NULL, NULL, 0);
    CHECK(same(r, t));
    if (r) CHECK(((float *)rill_tensor_data(r))[2] == 6.0f);
    rill_tensor_free(r);
    rill_tensor_free(t);
    CHECK(rill_op_exists("Conv2D"));
    CHECK(!rill_op_exists("NoSuchOp"));
    rill_graph_free(g);
}

static void test_conv_placeholder_const(void)
{
    rill_graph *g = rill_graph_new();
    /* Placeholder by name, with dtype and shape attrs */
    rill_op_builder *b = rill_op_builder_new(g, "Placeholder", "x");
    rill_op_builder_set_type(b, "dtype", RILL_FLOAT);
    rill_op_builder_set_shape(b, "shape", (rill_shape){4, {2, 9, 8, 3}});
    rill_node *xn = rill_op_builder_finish(b);
    /* Const from a tensor freed right after */
    rill_tensor *wt = ramp((int64_t[]){3, 3, 3, 4}, 4, 0.25f);
    b = rill_op_builder_new(g, "Const", "w");
    rill_op_builder_set_tensor(b, "value", wt);
    rill_op_builder_set_type(b, "dtype", RILL_FLOAT);
    rill_node *wn = rill_op_builder_finish(b);
    rill_tensor *wcopy = rill_tensor_copy(wt);
    rill_tensor_free(wt);
    if (!CHECK(xn && wn)) {
        fprintf(stderr, "  %s\n", rill_status_message(rill_graph_status(g)));
        rill_tensor_free(wcopy);
        rill_graph_free(g);
        return;
    }
    rill_output x = rill_node_output(xn, 0), w = rill_node_output(wn, 0);
    int64_t st[4] = {1, 2, 1, 1}, dl[4] = {1, 1, 2, 1};
    b = rill_op_builder_new(g, "Conv2D", "conv");
    rill_op_builder_add_input(b, x);
    rill_op_builder_add_input(b, w);
    rill_op_builder_set_type(b, "T", RILL_FLOAT);
    rill_op_builder_set_ints(b, "strides", st, 4);
    rill_op_builder_set_string(b, "padding", "VALID");
    rill_op_builder_set_string(b, "padding", "SAME"); /* the last one counts */
    rill_op_builder_set_ints(b, "dilations", dl, 4);
    rill_op_builder_set_string(b, "data_format", "NHWC");
    rill_node *cn = rill_op_builder_finish(b);
    int sti[4] = {1, 2, 1, 1}, dli[4] = {1, 1, 2, 1};
    rill_output typed = rill_conv2d(g, x, rill_const(g, wcopy, NULL), sti, "SAME", dli, "typed");
    if (CHECK(cn != NULL)) {
        rill_shape a = rill_node_output_shape(cn, 0), t = rill_output_shape(typed);
        CHECK(rill_shape_equal(&a, &t));
        CHECK(rill_shape_equal(&a, &(rill_shape){4, {2, 5, 8, 4}}));
        rill_tensor *xv = ramp((int64_t[]){2, 9, 8, 3}, 4, 0.5f);
        rill_tensor *r = run1(g, rill_node_output(cn, 0), &x, &xv, 1);
        rill_tensor *tv = run1(g, typed, &x, &xv, 1);
        CHECK(same(r, tv));
        rill_tensor_free(r);
        rill_tensor_free(tv);
        rill_tensor_free(xv);
    } else {
        fprintf(stderr, "  %s\n", rill_status_message(rill_graph_status(g)));
    }
    rill_tensor_free(wcopy);
    rill_graph_free(g);
}

/* Builds op over two float vectors (of 3 and 3, or 3 and 2 when bad_shapes), with padding = 0
 * (an int, where a string belongs) when bad_kind: finish must fail with code and text. */
static void expect_error(const char *op, bool bad_kind, bool bad_shapes, rill_code code,
                         const char *text)
{
    rill_graph *g = rill_graph_new();
    float a[3] = {1, 2, 3};
    int64_t d3 = 3, d2 = 2;
    rill_op_builder *b = rill_op_builder_new(g, op, "bad");
    rill_op_builder_add_input(b, rill_const_floats(g, a, &d3, 1, NULL));
    rill_op_builder_add_input(b, rill_const_floats(g, a, bad_shapes ? &d2 : &d3, 1, NULL));
    if (bad_kind) rill_op_builder_set_int(b, "padding", 0);
    rill_node *n = rill_op_builder_finish(b);
    CHECK(n == NULL);
    const rill_status *s = rill_graph_status(g);
    CHECK_EQ_INT(rill_status_code(s), code);
    if (!CHECK(strstr(rill_status_message(s), text) != NULL))
        fprintf(stderr, "  got: %s\n  want: %s\n", rill_status_message(s), text);
    rill_graph_free(g);
}

/* Attributes a typed builder always sets may be left out here: a Placeholder without a shape
 * is one of unknown shape and can be fed (the partitioner read its shape attr unchecked: a NULL
 * dereference), and a ScalarSummary without a tag names itself by the node in its errors (its
 * shape function's error read the tag unchecked). */
static void test_optional_attrs(void)
{
    rill_graph *g = rill_graph_new();
    rill_op_builder *b = rill_op_builder_new(g, "Placeholder", "x");
    rill_op_builder_set_type(b, "dtype", RILL_FLOAT);
    rill_node *x = rill_op_builder_finish(b);
    if (!CHECK(x != NULL)) return;
    rill_output y = rill_identity(g, rill_node_output(x, 0), "y");
    rill_output feed = rill_node_output(x, 0);
    rill_tensor *v = rill_tensor_from_data(RILL_FLOAT, (int64_t[]){2}, 1, (float[]){1.5f, -2});
    rill_tensor *got = run1(g, y, &feed, &v, 1);
    CHECK(same(got, v));
    rill_tensor_free(got);
    rill_tensor_free(v);

    b = rill_op_builder_new(g, "ScalarSummary", "untagged");
    rill_op_builder_add_input(b, rill_const_floats(g, (float[]){1, 2}, (int64_t[]){2}, 1, "c"));
    CHECK(rill_op_builder_finish(b) == NULL);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)),
                       "tags and values not the same shape: [] != [2] (tag 'untagged')");
    rill_graph_free(g);
}

int main(void)
{
    test_add_and_scopes();
    test_conv_placeholder_const();
    test_optional_attrs();
    expect_error("NoSuchOp", false, false, RILL_NOT_FOUND, "Op type not registered 'NoSuchOp'");
    expect_error("Conv2D", true, false, RILL_INVALID_ARGUMENT,
                 "Attr 'padding' of op 'Conv2D' (node 'bad') has value of type 'int' when 'string' expected");
    expect_error("Add", false, true, RILL_INVALID_ARGUMENT,
                 "Dimensions must be equal, but are 3 and 2 for 'bad' (op: 'Add')");
    TEST_MAIN_END();
}
