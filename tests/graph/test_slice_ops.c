/* test_slice_ops.c - StridedSlice and StridedSliceGrad (src/graph/ops_slice.c,
 * src/kernels/cpu/cpu_array.c).
 *
 * Slices of a [3, 4, 5] tensor holding 0..59, with numpy's results for the same index
 * expressions (shrunk axes, new axes, an ellipsis, negative and reversed strides, clamped and
 * empty ranges) in every numeric dtype and as strings, with the shape known at build time and
 * with the shape learnt only at run time; TF's error texts; gradients against finite
 * differences, StridedSliceGrad's own included.
 */
#include "op_check.h"

#include <string.h>

typedef struct slice_case {
    const char *label; /* the numpy expression */
    int n;
    int64_t begin[4], end[4], strides[4];
    rill_slice_masks m;
    int rank;
    int64_t dims[4];
    double want[60];
} slice_case;

/* Generated with numpy from x = np.arange(60.).reshape(3, 4, 5). */
static const slice_case cases[] = {
    {"x[1]", 1, {1}, {2}, {1}, {0, 0, 0, 0, 1}, 2, {4, 5},
     {20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39}},
    {"x[:, 2]", 2, {0, 2}, {0, 3}, {1, 1}, {1, 1, 0, 0, 2}, 2, {3, 5},
     {10, 11, 12, 13, 14, 30, 31, 32, 33, 34, 50, 51, 52, 53, 54}},
    {"x[..., ::-2]", 2, {0, 0}, {0, 0}, {1, -2}, {2, 2, 1, 0, 0}, 3, {3, 4, 3},
     {4,  2,  0,  9,  7,  5,  14, 12, 10, 19, 17, 15, 24, 22, 20, 29, 27, 25,
      34, 32, 30, 39, 37, 35, 44, 42, 40, 49, 47, 45, 54, 52, 50, 59, 57, 55}},
    {"x[1:, None, -3:-1, 4:0:-3]", 4, {1, 0, -3, 4}, {0, 0, -1, 0}, {1, 1, 1, -3}, {0, 1, 0, 2, 0},
     4, {2, 1, 2, 2}, {29, 26, 34, 31, 49, 46, 54, 51}},
    {"x[-1, ..., None]", 3, {-1, 0, 0}, {0, 0, 0}, {1, 1, 1}, {0, 0, 2, 4, 1}, 3, {4, 5, 1},
     {40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59}},
    {"x[5:9] (empty)", 1, {5}, {9}, {1}, {0, 0, 0, 0, 0}, 3, {0, 4, 5}, {0}},
    {"x[:, ::3, 0]", 3, {0, 0, 0}, {0, 0, 1}, {1, 3, 1}, {3, 3, 0, 0, 4}, 2, {3, 2},
     {0, 15, 20, 35, 40, 55}},
};
#define NCASES (sizeof cases / sizeof *cases)

static rill_output slice_of(rill_graph *g, rill_output x, const slice_case *c)
{
    return rill_strided_slice(g, x, c->begin, c->end, c->strides, c->n, &c->m, NULL);
}

static void test_values(void)
{
    static const int64_t xd[3] = {3, 4, 5};
    double xv[60];
    for (int i = 0; i < 60; i++) xv[i] = i;
    for (size_t k = 0; k < NCASES; k++) {
        const slice_case *c = &cases[k];
        for (int t = 0; t < OC_NNUMERIC; t++) {
            rill_dtype dt = oc_numeric[t];
            for (int known = 0; known < 2; known++) {
                char label[128];
                snprintf(label, sizeof label, "%s %s, shape %s at build time", c->label,
                         rill_dtype_name(dt), known ? "known" : "unknown");
                rill_graph *g = rill_graph_new();
                rill_tensor *xt = oc_tensor(dt, xd, 3, xv);
                rill_output x = rill_placeholder(
                    g, dt, known ? rill_shape_make(3, xd) : rill_shape_unknown(), "x");
                rill_output y = slice_of(g, x, c);
                if (!CHECK(y.node != NULL)) {
                    fprintf(stderr, "  case: %s: %s\n", label,
                            rill_status_message(rill_graph_status(g)));
                } else {
                    rill_shape st = rill_output_shape(y);
                    if (known) {
                        if (CHECK_EQ_INT(st.rank, c->rank))
                            for (int d = 0; d < c->rank; d++) CHECK_EQ_INT(st.dims[d], c->dims[d]);
                    } else {
                        CHECK_EQ_INT(st.rank, -1);
                    }
                    rill_session *sess = oc_session(g);
                    rill_tensor *out = oc_run(sess, y, &x, &xt, 1);
                    oc_check_tensor(label, out, dt, c->dims, c->rank, c->want);
                    rill_tensor_free(out);
                    rill_session_free(sess);
                }
                rill_tensor_free(xt);
                rill_graph_free(g);
            }
        }
        /* Strings: the same elements, as their decimal text. */
        rill_graph *g = rill_graph_new();
        rill_tensor *xs = rill_tensor_new(RILL_STRING, xd, 3);
        for (int i = 0; i < 60; i++) {
            char b[16];
            snprintf(b, sizeof b, "%d", i);
            rill_tensor_set_string(xs, i, b, strlen(b));
        }
        rill_output y = slice_of(g, rill_const(g, xs, "xs"), c);
        rill_tensor *out = y.node ? oc_eval(g, y) : NULL;
        if (CHECK(out != NULL) && CHECK_EQ_INT(rill_tensor_num_elements(out), oc_numel(c->dims, c->rank)))
            for (int64_t i = 0; i < rill_tensor_num_elements(out); i++) {
                size_t len;
                const char *p = rill_tensor_get_string(out, i, &len);
                char b[16];
                snprintf(b, sizeof b, "%d", (int)c->want[i]);
                if (!CHECK(len == strlen(b) && memcmp(p, b, len) == 0))
                    fprintf(stderr, "  case: %s strings, element %lld\n", c->label, (long long)i);
            }
        rill_tensor_free(out);
        rill_tensor_free(xs);
        rill_graph_free(g);
    }
}

/* A known leading dim, unknown others: what the shape function can say. */
static void test_partial_shapes(void)
{
    rill_graph *g = rill_graph_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(-1, 5), "x");
    /* x[:, 1:4], x[0], x[..., ::2] */
    rill_output a = rill_strided_slice(g, x, (int64_t[]){0, 1}, (int64_t[]){0, 4},
                                       (int64_t[]){1, 1}, 2, &(rill_slice_masks){.begin = 1, .end = 1},
                                       NULL);
    rill_output b = rill_strided_slice(g, x, (int64_t[]){0}, (int64_t[]){1}, (int64_t[]){1}, 1,
                                       &(rill_slice_masks){.shrink_axis = 1}, NULL);
    rill_output c = rill_strided_slice(g, x, (int64_t[]){0, 0}, (int64_t[]){0, 0},
                                       (int64_t[]){1, 2}, 2,
                                       &(rill_slice_masks){.ellipsis = 1, .begin = 2, .end = 2}, NULL);
    if (CHECK(a.node && b.node && c.node)) {
        rill_shape sa = rill_output_shape(a), sb = rill_output_shape(b), sc = rill_output_shape(c);
        CHECK(sa.rank == 2 && sa.dims[0] == -1 && sa.dims[1] == 3);
        CHECK(sb.rank == 1 && sb.dims[0] == 5);
        CHECK(sc.rank == 2 && sc.dims[0] == -1 && sc.dims[1] == 3);
    }
    rill_graph_free(g);
}

static void check_run_error(const char *label, rill_output y, rill_output x, rill_tensor *xv,
                            const char *want)
{
    rill_graph *g = rill_node_graph(y.node);
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_tensor *out = NULL;
    rill_code code = rill_session_run(sess, &x, &xv, 1, &y, &out, 1, NULL, 0, s);
    if (!CHECK_EQ_INT(code, RILL_INVALID_ARGUMENT)) fprintf(stderr, "  case: %s\n", label);
    CHECK_STR_CONTAINS(rill_status_message(s), want);
    rill_tensor_free(out);
    rill_status_free(s);
    rill_session_free(sess);
}

static void test_errors(void)
{
    rill_graph *g = rill_graph_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(3, 4), "x");
    int64_t z[2] = {0, 0}, one[2] = {1, 1};
    CHECK(rill_strided_slice(g, x, z, z, (int64_t[]){1, 0}, 2, NULL, NULL).node == NULL);
    oc_check_build_error("zero stride", g, RILL_INVALID_ARGUMENT, "strides[1] must be non-zero");
    rill_graph_clear_status(g);
    CHECK(rill_strided_slice(g, x, (int64_t[]){3}, (int64_t[]){4}, one, 1,
                             &(rill_slice_masks){.shrink_axis = 1}, NULL)
              .node == NULL);
    oc_check_build_error("shrink out of bounds", g, RILL_INVALID_ARGUMENT,
                         "slice index 3 of dimension 0 out of bounds.");
    rill_graph_clear_status(g);
    CHECK(rill_strided_slice(g, x, (int64_t[]){0, 0, 0}, (int64_t[]){1, 1, 1},
                             (int64_t[]){1, 1, 1}, 3, &(rill_slice_masks){.shrink_axis = 7}, NULL)
              .node == NULL);
    oc_check_build_error("too many indices", g, RILL_INVALID_ARGUMENT,
                         "Index out of range using input dim 2; input has only 2 dims");
    rill_graph_clear_status(g);
    CHECK(rill_strided_slice(g, x, z, z, one, 2, &(rill_slice_masks){.ellipsis = 3}, NULL).node ==
          NULL);
    oc_check_build_error("two ellipses", g, RILL_INVALID_ARGUMENT,
                         "Multiple ellipses in slice spec not allowed");
    rill_graph_clear_status(g);
    CHECK(rill_strided_slice(g, x, NULL, NULL, NULL, 1, NULL, NULL).node == NULL);
    rill_graph_clear_status(g);
    /* Out of bounds only at run time: the shape was unknown when the slice was built. */
    rill_output u = rill_placeholder(g, RILL_DOUBLE, rill_shape_unknown(), "u");
    rill_output y = rill_strided_slice(g, u, (int64_t[]){-4}, (int64_t[]){-3}, one, 1,
                                       &(rill_slice_masks){.shrink_axis = 1}, "y");
    if (CHECK(y.node != NULL)) {
        rill_tensor *v = oc_random((int64_t[]){3, 4}, 2, -1, 1);
        check_run_error("shrink at run time", y, u, v, "slice index -4 of dimension 0 out of bounds.");
        rill_tensor_free(v);
    }
    rill_graph_free(g);
}

static rill_output build_slice(rill_graph *g, const rill_output *xs, void *p)
{
    return slice_of(g, xs[0], p);
}

/* StridedSliceGrad(x, dy) as a function of dy, x a constant (it only gives the shape). */
typedef struct grad_ctx {
    const slice_case *c;
    rill_tensor *x;
} grad_ctx;

static rill_output build_slice_grad(rill_graph *g, const rill_output *xs, void *p)
{
    grad_ctx *gc = p;
    rill_output x = rill_const(g, gc->x, "x");
    rill_output l = rill_sum(g, rill_mul(g, slice_of(g, x, gc->c), xs[0], NULL), NULL, -1, false,
                             NULL);
    rill_output dx;
    if (!rill_gradients(g, &l, 1, &x, 1, NULL, &dx)) return (rill_output){NULL, 0};
    return dx; /* StridedSliceGrad(x, dy) */
}

static void test_gradients(void)
{
    static const int64_t xd[3] = {3, 4, 5};
    for (size_t k = 0; k < NCASES; k++) {
        const slice_case *c = &cases[k];
        rill_tensor *x = oc_random(xd, 3, -1, 1);
        char label[96];
        snprintf(label, sizeof label, "StridedSlice grad %s", c->label);
        oc_grad_check(label, 1, &x, build_slice, (void *)c, (oc_grad_opts){0});
        snprintf(label, sizeof label, "StridedSlice grad %s, shapes at run time", c->label);
        oc_grad_check(label, 1, &x, build_slice, (void *)c, (oc_grad_opts){.unknown_shapes = true});
        if (c->rank > 0 && c->dims[0] > 0) {
            /* the second derivative flows through StridedSliceGrad's own gradient */
            rill_tensor *d = oc_random(c->dims, c->rank, -1, 1);
            grad_ctx gc = {c, x};
            snprintf(label, sizeof label, "StridedSliceGrad grad %s", c->label);
            oc_grad_check(label, 1, &d, build_slice_grad, &gc, (oc_grad_opts){0});
            rill_tensor_free(d);
        }
        rill_tensor_free(x);
    }
}

int main(void)
{
    test_values();
    test_partial_shapes();
    test_errors();
    test_gradients();
    TEST_MAIN_END();
}
