/* test_shape_ops.c - the shape ops (src/graph/ops_shape.c, src/kernels/cpu/cpu_shape.c): values
 * of Transpose, Tile, Pad, MirrorPad, ReverseV2, BroadcastTo, ConcatV2, Pack, Unpack, Split and
 * SplitV in every numeric dtype against references computed here by coordinates (numpy's
 * semantics), with static and run-time shapes; Range, OneHot, Size, Rank; every gradient against
 * finite differences; TF's error texts.
 */
#include "op_check.h"

#include <string.h>

/* The case tables name only the attrs each op takes. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

static const int64_t XD[2] = {3, 4};

typedef struct attrs {
    const char *op;
    const char *iname[3];
    int64_t iv[3][8];
    int in[3]; /* ints attrs: name, values, count (0: an int attr iv[k][0]) */
    const char *sname;
    const char *sval;
    int nout;
} attrs;

static rill_node *make(rill_graph *g, const attrs *a, const rill_output *xs, int nx)
{
    rill_op_builder *b = rill_op_builder_new(g, a->op, NULL);
    for (int i = 0; i < nx; i++) rill_op_builder_add_input(b, xs[i]);
    for (int k = 0; k < 3 && a->iname[k]; k++) {
        if (a->in[k])
            rill_op_builder_set_ints(b, a->iname[k], a->iv[k], a->in[k]);
        else
            rill_op_builder_set_int(b, a->iname[k], a->iv[k][0]);
    }
    if (a->sname) rill_op_builder_set_string(b, a->sname, a->sval);
    if (a->nout) rill_op_builder_set_int(b, "num_outputs", a->nout);
    return rill_op_builder_finish(b);
}

/* numpy's x[i] of the result of case k at result coordinate (r, c) of a [3,4] x: */
typedef struct vcase {
    const char *label;
    attrs a;
    int nin;
    int rank;
    int64_t dims[3];
    double want[96];
} vcase;

/* x = 0..11 as [3, 4] (and 100 + x for a second input); results generated with numpy. */
static const vcase vcases[] = {
    {"transpose",
     {"Transpose", {"perm"}, {{1, 0}}, {2}},
     1,
     2,
     {4, 3},
     {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}},
    {"tile [1,2]", {"Tile", {"multiples"}, {{1, 2}}, {2}}, 1, 2, {3, 8}, {0,  1,  2, 3, 0,  1,
                                                                          2,  3,  4, 5, 6,  7,
                                                                          4,  5,  6, 7, 8,  9,
                                                                          10, 11, 8, 9, 10, 11}},
    {"reverse [0]",
     {"ReverseV2", {"axis"}, {{0}}, {1}},
     1,
     2,
     {3, 4},
     {8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3}},
    {"pad [[1,0],[0,1]]",
     {"Pad", {"paddings"}, {{1, 0, 0, 1}}, {4}},
     1,
     2,
     {4, 5},
     {0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 4, 5, 6, 7, 0, 8, 9, 10, 11, 0}},
    {"reflect [[1,1],[2,0]]",
     {"MirrorPad", {"paddings"}, {{1, 1, 2, 0}}, {4}, "mode", "REFLECT"},
     1,
     2,
     {5, 6},
     {6, 5, 4, 5, 6, 7, 2, 1, 0, 1, 2, 3, 6, 5, 4, 5, 6, 7, 10, 9, 8, 9, 10, 11, 6, 5, 4, 5, 6, 7}},
    {"symmetric [[0,2],[1,1]]",
     {"MirrorPad", {"paddings"}, {{0, 2, 1, 1}}, {4}, "mode", "SYMMETRIC"},
     1,
     2,
     {5, 6},
     {0,  0,  1,  2, 3, 3, 4,  4,  5,  6, 7, 7, 8, 8, 9,
      10, 11, 11, 8, 8, 9, 10, 11, 11, 4, 4, 5, 6, 7, 7}},
    {"concat axis 1", {"ConcatV2", {"axis"}, {{1}}}, 2, 2, {3, 8}, {0,   1,   2,   3,   100, 101,
                                                                    102, 103, 4,   5,   6,   7,
                                                                    104, 105, 106, 107, 8,   9,
                                                                    10,  11,  108, 109, 110, 111}},
    {"pack axis 1", {"Pack", {"axis"}, {{1}}}, 2, 3, {3, 2, 4}, {0, 1, 2,  3,  100, 101, 102, 103,
                                                                 4, 5, 6,  7,  104, 105, 106, 107,
                                                                 8, 9, 10, 11, 108, 109, 110, 111}},
};

static double xval(int input, int64_t i)
{
    return (double)i + 100.0 * input;
}

static void test_values(void)
{
    double xv[2][12];
    for (int i = 0; i < 12; i++) xv[0][i] = xval(0, i), xv[1][i] = xval(1, i);
    for (size_t k = 0; k < sizeof vcases / sizeof *vcases; k++) {
        const vcase *c = &vcases[k];
        for (int t = 0; t < OC_NNUMERIC; t++) {
            rill_dtype dt = oc_numeric[t];
            for (int known = 0; known < 2; known++) {
                char label[96];
                snprintf(label, sizeof label, "%s %s %s", c->label, rill_dtype_name(dt),
                         known ? "static" : "dynamic");
                rill_graph *g = rill_graph_new();
                rill_output xs[2];
                rill_tensor *xt[2];
                for (int i = 0; i < c->nin; i++) {
                    char nm[16];
                    snprintf(nm, sizeof nm, "x%d", i);
                    xs[i] = rill_placeholder(
                        g, dt, known ? rill_shape_make(2, XD) : rill_shape_unknown(), nm);
                    xt[i] = oc_tensor(dt, XD, 2, xv[i]);
                }
                rill_node *n = make(g, &c->a, xs, c->nin);
                if (CHECK(n != NULL)) {
                    rill_session *s = oc_session(g);
                    rill_tensor *out = NULL;
                    rill_output y = {n, 0};
                    rill_status *st = rill_status_new();
                    rill_session_run(s, xs, xt, c->nin, &y, &out, 1, NULL, 0, st);
                    if (!CHECK(rill_status_code(st) == RILL_OK))
                        fprintf(stderr, "  %s: %s\n", label, rill_status_message(st));
                    else
                        oc_check_tensor(label, out, dt, c->dims, c->rank, c->want);
                    rill_status_free(st);
                    rill_tensor_free(out);
                    rill_session_free(s);
                } else {
                    fprintf(stderr, "  %s: %s\n", label, rill_status_message(rill_graph_status(g)));
                }
                for (int i = 0; i < c->nin; i++) rill_tensor_free(xt[i]);
                rill_graph_free(g);
            }
        }
    }
}

static void test_splits_and_makers(void)
{
    double xv[12];
    for (int i = 0; i < 12; i++) xv[i] = i;
    rill_graph *g = rill_graph_new();
    rill_tensor *xt = oc_tensor(RILL_INT32, XD, 2, xv);
    rill_output x = rill_const(g, xt, "x");
    attrs sv = {"SplitV", {"axis", "size_splits"}, {{1}, {1, -1, 2}}, {0, 3}, .nout = 3};
    rill_node *n = make(g, &sv, &x, 1);
    attrs un = {"Unpack", {"axis", "num"}, {{0}, {3}}, {0, 0}, .nout = 3};
    rill_node *u = make(g, &un, &x, 1);
    attrs sp = {"Split", {"axis", "num_split"}, {{1}, {2}}, {0, 0}, .nout = 2};
    rill_node *p = make(g, &sp, &x, 1);
    if (CHECK(n && u && p)) {
        rill_tensor *a = oc_eval(g, (rill_output){n, 1});
        oc_check_tensor("SplitV piece 1", a, RILL_INT32, (int64_t[2]){3, 1}, 2,
                        (double[3]){1, 5, 9});
        rill_tensor_free(a);
        a = oc_eval(g, (rill_output){u, 2});
        oc_check_tensor("Unpack piece 2", a, RILL_INT32, (int64_t[1]){4}, 1,
                        (double[4]){8, 9, 10, 11});
        rill_tensor_free(a);
        a = oc_eval(g, (rill_output){p, 1});
        oc_check_tensor("Split piece 1", a, RILL_INT32, (int64_t[2]){3, 2}, 2,
                        (double[6]){2, 3, 6, 7, 10, 11});
        rill_tensor_free(a);
    }
    rill_op_builder *b = rill_op_builder_new(g, "Range", NULL);
    rill_op_builder_set_float(b, "start", 5);
    rill_op_builder_set_float(b, "limit", -1);
    rill_op_builder_set_float(b, "delta", -2);
    rill_op_builder_set_type(b, "Tidx", RILL_INT64);
    rill_node *r = rill_op_builder_finish(b);
    rill_tensor *ids = oc_tensor(RILL_INT64, (int64_t[1]){3}, 1, (double[3]){2, -1, 0});
    b = rill_op_builder_new(g, "OneHot", NULL);
    rill_op_builder_add_input(b, rill_const(g, ids, NULL));
    rill_tensor_free(ids);
    rill_op_builder_set_int(b, "depth", 3);
    rill_op_builder_set_float(b, "on_value", 4);
    rill_op_builder_set_int(b, "axis", 0);
    rill_op_builder_set_type(b, "T", RILL_DOUBLE);
    rill_node *oh = rill_op_builder_finish(b);
    b = rill_op_builder_new(g, "Size", NULL);
    rill_op_builder_add_input(b, x);
    rill_node *sz = rill_op_builder_finish(b);
    if (CHECK(r && oh && sz)) {
        rill_tensor *a = oc_eval(g, (rill_output){r, 0});
        oc_check_tensor("Range 5,-1,-2", a, RILL_INT64, (int64_t[1]){3}, 1, (double[3]){5, 3, 1});
        rill_tensor_free(a);
        a = oc_eval(g, (rill_output){oh, 0});
        oc_check_tensor("OneHot axis 0", a, RILL_DOUBLE, (int64_t[2]){3, 3}, 2,
                        (double[9]){0, 0, 4, 0, 0, 0, 4, 0, 0});
        rill_tensor_free(a);
        a = oc_eval(g, (rill_output){sz, 0});
        oc_check_tensor("Size", a, RILL_INT32, NULL, 0, (double[1]){12});
        rill_tensor_free(a);
    }
    rill_tensor_free(xt);
    rill_graph_free(g);
}

/* --- gradients --- */

typedef struct gcase {
    const char *label;
    attrs a;
    int nin;
} gcase;

static const gcase gcases[] = {
    {"Transpose", {"Transpose", {"perm"}, {{1, 0}}, {2}}, 1},
    {"Transpose default", {"Transpose"}, 1},
    {"Tile", {"Tile", {"multiples"}, {{2, 3}}, {2}}, 1},
    {"Pad", {"Pad", {"paddings"}, {{1, 2, 0, 3}}, {4}}, 1},
    {"MirrorPad REFLECT", {"MirrorPad", {"paddings"}, {{2, 1, 3, 2}}, {4}, "mode", "REFLECT"}, 1},
    {"MirrorPad SYMMETRIC",
     {"MirrorPad", {"paddings"}, {{3, 1, 1, 4}}, {4}, "mode", "SYMMETRIC"},
     1},
    {"ReverseV2", {"ReverseV2", {"axis"}, {{1, 0}}, {2}}, 1},
    {"ConcatV2", {"ConcatV2", {"axis"}, {{-1}}}, 2},
    {"Pack", {"Pack", {"axis"}, {{2}}}, 2},
    {"Unpack (piece 1)", {"Unpack", {"axis", "num"}, {{1}, {4}}, {0, 0}, .nout = 4}, 1},
    {"Split (piece 1)", {"Split", {"axis", "num_split"}, {{1}, {2}}, {0, 0}, .nout = 2}, 1},
    {"SplitV (piece 1)", {"SplitV", {"axis", "size_splits"}, {{0}, {1, 2}}, {0, 2}, .nout = 2}, 1},
    {"Squeeze", {"Squeeze"}, 1},
};

static rill_output build_grad_case(rill_graph *g, const rill_output *xs, void *ctx)
{
    const gcase *c = ctx;
    rill_output in[2] = {xs[0], c->nin > 1 ? xs[1] : xs[0]};
    if (!strcmp(c->a.op, "Squeeze")) in[0] = rill_expand_dims(g, xs[0], 1, NULL);
    rill_node *n = make(g, &c->a, in, c->nin);
    return (rill_output){n, c->a.nout ? 1 : 0};
}

static rill_output build_broadcast(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_op_builder *b = rill_op_builder_new(g, "BroadcastTo", NULL);
    rill_op_builder_add_input(b, xs[0]);
    rill_op_builder_set_shape(b, "shape", rill_shape_make(3, (int64_t[3]){2, 3, 4}));
    return (rill_output){rill_op_builder_finish(b), 0};
}

/* TileGrad and MirrorPadGrad have gradients too (second derivatives): d/dx of grad(sum(w*f)). */
static rill_output build_second(rill_graph *g, const rill_output *xs, void *ctx)
{
    rill_output y = build_grad_case(g, xs, ctx), dx;
    rill_output sq = rill_mul(g, y, y, NULL);
    if (!rill_gradients(g, &sq, 1, xs, 1, NULL, &dx)) return (rill_output){NULL, 0};
    return dx;
}

static void test_gradients(void)
{
    rill_tensor *x[2] = {oc_random(XD, 2, -1, 1), oc_random(XD, 2, -1, 1)};
    for (size_t k = 0; k < sizeof gcases / sizeof *gcases; k++)
        for (int unknown = 0; unknown < 2; unknown++) {
            char label[64];
            snprintf(label, sizeof label, "grad %s%s", gcases[k].label,
                     unknown ? " (dynamic)" : "");
            oc_grad_check(label, gcases[k].nin, x, build_grad_case, (void *)&gcases[k],
                          (oc_grad_opts){.unknown_shapes = unknown});
        }
    rill_tensor *row = oc_random((int64_t[2]){3, 1}, 2, -1, 1);
    oc_grad_check("grad BroadcastTo", 1, &row, build_broadcast, NULL, (oc_grad_opts){0});
    oc_grad_check("second derivative Tile", 1, x, build_second, (void *)&gcases[2],
                  (oc_grad_opts){.rtol = 1e-5});
    oc_grad_check("second derivative MirrorPad", 1, x, build_second, (void *)&gcases[4],
                  (oc_grad_opts){.rtol = 1e-5});
    oc_grad_check("second derivative ConcatV2", 2, x, build_second, (void *)&gcases[7],
                  (oc_grad_opts){.rtol = 1e-5});
    rill_tensor_free(row);
    rill_tensor_free(x[0]);
    rill_tensor_free(x[1]);
}

/* --- errors --- */

static void expect_error(const attrs *a, int nin, const int64_t (*dims)[3], const int *ranks,
                         const char *text)
{
    rill_graph *g = rill_graph_new();
    rill_output xs[2];
    for (int i = 0; i < nin; i++)
        xs[i] = rill_placeholder(g, RILL_FLOAT, rill_shape_make(ranks[i], dims[i]), NULL);
    rill_node *n = make(g, a, xs, nin);
    CHECK(n == NULL);
    const char *m = rill_status_message(rill_graph_status(g));
    if (!CHECK(strstr(m, text) != NULL)) fprintf(stderr, "  got: %s\n  want: %s\n", m, text);
    rill_graph_free(g);
}

static void test_errors(void)
{
    const int64_t d23_45[2][3] = {{2, 3}, {4, 5}}, d23_43[2][3] = {{2, 3}, {4, 3}};
    const int r22[2] = {2, 2};
    attrs concat0 = {"ConcatV2", {"axis"}, {{0}}};
    expect_error(&concat0, 2, d23_45, r22,
                 "Dimension 0 in both shapes must be equal, but are 3 and 5. Shapes are [3] and "
                 "[5]. for 'concat' (op: 'ConcatV2') with input shapes: [2,3], [4,5].");
    attrs concat2 = {"ConcatV2", {"axis"}, {{2}}};
    expect_error(&concat2, 2, d23_43, r22, "Shape must be at least rank 3 but is rank 2");
    attrs pack = {"Pack", {"axis"}, {{0}}};
    expect_error(&pack, 2, d23_43, r22,
                 "Dimension 0 in both shapes must be equal, but are 2 and 4. Shapes are [2,3] "
                 "and [4,3].");
    attrs tr = {"Transpose", {"perm"}, {{0, 1, 2}}, {3}};
    expect_error(&tr, 1, d23_43, r22, "Dimension must be 2 but is 3");
    attrs tr2 = {"Transpose", {"perm"}, {{1, 1}}, {2}};
    expect_error(&tr2, 1, d23_43, r22, "0 is missing from {1,1}.");
    attrs tile = {"Tile", {"multiples"}, {{1, 2, 3}}, {3}};
    expect_error(&tile, 1, d23_43, r22, "Shape must be rank 2 but is rank 3");
    attrs sq = {"Squeeze", {"squeeze_dims"}, {{1}}, {1}};
    expect_error(&sq, 1, d23_43, r22, "Can not squeeze dim[1], expected a dimension of 1, got 3");
    attrs split = {"Split", {"axis", "num_split"}, {{1}, {2}}, {0, 0}, .nout = 2};
    expect_error(&split, 1, d23_43, r22, "Dimension size must be evenly divisible by 2 but is 3");
    attrs splitv = {"SplitV", {"axis", "size_splits"}, {{1}, {-1, -1}}, {0, 2}, .nout = 2};
    expect_error(&splitv, 1, d23_43, r22, "size_splits can only have one -1");
    attrs rev = {"ReverseV2", {"axis"}, {{2}}, {1}};
    expect_error(&rev, 1, d23_43, r22, "'axis'[0] = 2 is out of valid range [0, 1");
    attrs mp = {"MirrorPad", {"paddings"}, {{2, 2, 0, 0}}, {4}, "mode", "REFLECT"};
    expect_error(&mp, 1, d23_43, r22,
                 "paddings must be less than the dimension size: 2, 2 not less than 2");
    /* run time: ConcatOp's texts */
    rill_graph *g = rill_graph_new();
    rill_output xs[2] = {rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "a"),
                         rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "b")};
    rill_node *n = make(g, &concat0, xs, 2);
    rill_tensor *v[2] = {oc_tensor(RILL_FLOAT, (int64_t[2]){1, 2}, 2, (double[2]){0}),
                         oc_tensor(RILL_FLOAT, (int64_t[2]){1, 3}, 2, (double[3]){0})};
    rill_session *s = oc_session(g);
    rill_output y = {n, 0};
    rill_tensor *out = NULL;
    rill_status *st = rill_status_new();
    rill_session_run(s, xs, v, 2, &y, &out, 1, NULL, 0, st);
    if (!CHECK(strstr(rill_status_message(st), "ConcatOp : Dimensions of inputs should match: "
                                               "shape[0] = [1,2] vs. shape[1] = [1,3]")))
        fprintf(stderr, "  got: %s\n", rill_status_message(st));
    rill_status_free(st);
    rill_tensor_free(out);
    rill_tensor_free(v[0]);
    rill_tensor_free(v[1]);
    rill_session_free(s);
    rill_graph_free(g);
}

int main(void)
{
    test_values();
    test_splits_and_makers();
    test_gradients();
    test_errors();
    TEST_MAIN_END();
}
