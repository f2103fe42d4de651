/* test_index_ops.c - the indexing ops of src/graph/ops_index.c: values against references
 * computed here in double (GatherV2 over axes, GatherNd, ScatterNd, Where, InTopKV2, TopKV2,
 * Unique, UnsortedSegmentSum with dropped negative ids, SegmentSum, IndexedSlicesToDense with
 * repeated indices), every gradient against finite differences (oc_grad_check), TF's error
 * texts for out-of-range indices and bad shapes, and the candidate samplers' draws and
 * expected counts. */
#include "op_check.h"

#include <string.h>

static rill_output int_const(rill_graph *g, rill_dtype t, const int64_t *dims, int rank,
                             const int64_t *v)
{
    int64_t n = oc_numel(dims, rank);
    double d[64];
    for (int64_t i = 0; i < n; i++) d[i] = (double)v[i];
    rill_tensor *x = oc_tensor(t, dims, rank, d);
    rill_output c = rill_const(g, x, "c");
    rill_tensor_free(x);
    return c;
}

static rill_output op(rill_graph *g, const char *type, const rill_output *in, int n,
                      const char *iattr, int64_t iv, int out)
{
    rill_op_builder *b = rill_op_builder_new(g, type, NULL);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, in[i]);
    if (iattr) rill_op_builder_set_int(b, iattr, iv);
    return (rill_output){rill_op_builder_finish(b), out};
}

/* --- GatherV2 --- */

typedef struct gather_case {
    int64_t axis;
    int64_t ix[6];
    int nix;
    int rows; /* > 0: the indices as [rows, nix / rows] */
} gather_case;

static rill_output build_gather(rill_graph *g, const rill_output *xs, void *ctx)
{
    const gather_case *c = ctx;
    int64_t d2[2] = {c->rows, c->rows ? c->nix / c->rows : 0}, d1 = c->nix;
    rill_output in[] = {xs[0], c->rows ? int_const(g, RILL_INT64, d2, 2, c->ix)
                                       : int_const(g, RILL_INT64, &d1, 1, c->ix)};
    return op(g, "GatherV2", in, 2, "axis", c->axis, 0);
}

static void test_gather(void)
{
    const int64_t dims[3] = {4, 3, 5};
    rill_tensor *p = oc_random(dims, 3, -2, 2);
    const double *pv = rill_tensor_data(p);
    for (int64_t axis = -3; axis < 3; axis++) {
        int a = (int)(axis < 0 ? axis + 3 : axis);
        gather_case c = {.axis = axis, .ix = {2, 0, 2, 1}, .nix = 4};
        rill_graph *g = rill_graph_new();
        rill_output y = build_gather(g, (rill_output[]){rill_const(g, p, "p")}, &c);
        rill_tensor *t = oc_eval(g, y);
        int64_t od[3] = {dims[0], dims[1], dims[2]};
        od[a] = 4;
        double ref[80];
        for (int64_t i = 0; i < od[0]; i++)
            for (int64_t j = 0; j < od[1]; j++)
                for (int64_t k = 0; k < od[2]; k++) {
                    int64_t s[3] = {i, j, k};
                    s[a] = c.ix[s[a]];
                    ref[(i * od[1] + j) * od[2] + k] = pv[(s[0] * 3 + s[1]) * 5 + s[2]];
                }
        char lab[64];
        snprintf(lab, sizeof lab, "GatherV2 axis %lld", (long long)axis);
        oc_check_tensor(lab, t, RILL_DOUBLE, od, 3, ref);
        rill_tensor_free(t);
        rill_graph_free(g);
        oc_grad_check(lab, 1, &p, build_gather, &c, (oc_grad_opts){0});
    }
    /* 2-D indices into params of unknown shape: the gradient's values keep indices' shape */
    gather_case c2 = {.axis = 0, .ix = {3, 1, 3, 0, 2, 3}, .nix = 6, .rows = 2};
    oc_grad_check("GatherV2 of unknown shape", 1, &p, build_gather, &c2,
                  (oc_grad_opts){.unknown_shapes = true});
    oc_grad_check("GatherV2 of 2-D indices", 1, &p, build_gather, &c2, (oc_grad_opts){0});
    gather_case c3 = {.axis = -2, .ix = {2, 0, 1, 2}, .nix = 4};
    oc_grad_check("GatherV2 axis -2 of unknown rank", 1, &p, build_gather, &c3,
                  (oc_grad_opts){.unknown_shapes = true});
    /* out of range: TF's text, with the position of the index */
    rill_graph *g = rill_graph_new();
    rill_output in[] = {rill_const(g, p, "p"),
                        int_const(g, RILL_INT32, (int64_t[]){2, 2}, 2, (int64_t[]){0, 1, 3, 7})};
    rill_status *st = rill_status_new();
    rill_output y = op(g, "GatherV2", in, 2, NULL, 0, 0);
    rill_tensor *out = NULL;
    rill_session *s = oc_session(g);
    CHECK_EQ_INT(rill_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, st),
                 RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(st), "indices[1,1] = 7 is not in [0, 4)");
    rill_status_free(st);
    rill_session_free(s);
    /* a bad axis is a build error */
    op(g, "GatherV2", in, 2, "axis", 3, 0);
    oc_check_build_error("GatherV2 axis 3", g, RILL_INVALID_ARGUMENT,
                         "Shape must be at least rank 4 but is rank 3");
    rill_graph_free(g);
    rill_tensor_free(p);
}

/* --- IndexedSlicesToDense: duplicates sum --- */

static rill_output build_slices(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_output in[] = {xs[0], int_const(g, RILL_INT64, (int64_t[]){4}, 1, (int64_t[]){3, 0, 3, 3}),
                        int_const(g, RILL_INT64, (int64_t[]){2}, 1, (int64_t[]){5, 2})};
    return op(g, "IndexedSlicesToDense", in, 3, NULL, 0, 0);
}

static void test_indexed_slices(void)
{
    rill_tensor *v = oc_random((int64_t[]){4, 2}, 2, -1, 1);
    const double *vv = rill_tensor_data(v);
    rill_graph *g = rill_graph_new();
    rill_tensor *t = oc_eval(g, build_slices(g, (rill_output[]){rill_const(g, v, "v")}, NULL));
    double ref[10] = {0};
    const int64_t ix[4] = {3, 0, 3, 3};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++) ref[ix[i] * 2 + j] += vv[i * 2 + j];
    oc_check_tensor("IndexedSlicesToDense", t, RILL_DOUBLE, (int64_t[]){5, 2}, 2, ref);
    rill_tensor_free(t);
    rill_graph_free(g);
    oc_grad_check("IndexedSlicesToDense", 1, &v, build_slices, NULL, (oc_grad_opts){0});
    rill_tensor_free(v);
}

/* --- GatherNd, ScatterNd --- */

static rill_output build_gather_nd(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_output in[] = {
        xs[0], int_const(g, RILL_INT32, (int64_t[]){3, 2}, 2, (int64_t[]){1, 2, 0, 0, 1, 2})};
    return op(g, "GatherNd", in, 2, NULL, 0, 0);
}

static rill_output build_scatter_nd(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_output in[] = {int_const(g, RILL_INT64, (int64_t[]){3, 1}, 2, (int64_t[]){2, 0, 2}), xs[0],
                        int_const(g, RILL_INT64, (int64_t[]){2}, 1, (int64_t[]){4, 3})};
    return op(g, "ScatterNd", in, 3, NULL, 0, 0);
}

static void test_nd(void)
{
    rill_tensor *p = oc_random((int64_t[]){2, 3, 4}, 3, -1, 1);
    const double *pv = rill_tensor_data(p);
    rill_graph *g = rill_graph_new();
    rill_tensor *t = oc_eval(g, build_gather_nd(g, (rill_output[]){rill_const(g, p, "p")}, NULL));
    double ref[12];
    const int64_t tup[3][2] = {{1, 2}, {0, 0}, {1, 2}};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 4; k++) ref[i * 4 + k] = pv[(tup[i][0] * 3 + tup[i][1]) * 4 + k];
    oc_check_tensor("GatherNd", t, RILL_DOUBLE, (int64_t[]){3, 4}, 2, ref);
    rill_tensor_free(t);
    rill_graph_free(g);
    oc_grad_check("GatherNd", 1, &p, build_gather_nd, NULL, (oc_grad_opts){0});
    rill_tensor *u = oc_random((int64_t[]){3, 3}, 2, -1, 1);
    const double *uv = rill_tensor_data(u);
    g = rill_graph_new();
    t = oc_eval(g, build_scatter_nd(g, (rill_output[]){rill_const(g, u, "u")}, NULL));
    double sref[12] = {0};
    const int64_t rows[3] = {2, 0, 2};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) sref[rows[i] * 3 + k] += uv[i * 3 + k];
    oc_check_tensor("ScatterNd", t, RILL_DOUBLE, (int64_t[]){4, 3}, 2, sref);
    rill_tensor_free(t);
    rill_graph_free(g);
    oc_grad_check("ScatterNd", 1, &u, build_scatter_nd, NULL, (oc_grad_opts){0});
    rill_tensor_free(u);
    rill_tensor_free(p);
}

/* --- segment sums --- */

static rill_output build_unsorted(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_output in[] = {xs[0],
                        int_const(g, RILL_INT32, (int64_t[]){4}, 1, (int64_t[]){2, -1, 0, 2}),
                        int_const(g, RILL_INT32, NULL, 0, (int64_t[]){3})};
    return op(g, "UnsortedSegmentSum", in, 3, NULL, 0, 0);
}

static rill_output build_sorted(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_output in[] = {xs[0],
                        int_const(g, RILL_INT64, (int64_t[]){4}, 1, (int64_t[]){0, 0, 1, 3})};
    return op(g, "SegmentSum", in, 2, NULL, 0, 0);
}

static void test_segments(void)
{
    rill_tensor *d = oc_random((int64_t[]){4, 2}, 2, -1, 1);
    const double *dv = rill_tensor_data(d);
    rill_graph *g = rill_graph_new();
    rill_tensor *t = oc_eval(g, build_unsorted(g, (rill_output[]){rill_const(g, d, "d")}, NULL));
    double ref[8] = {0};
    const int64_t ids[4] = {2, -1, 0, 2}, sids[4] = {0, 0, 1, 3};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 2 && ids[i] >= 0; k++) ref[ids[i] * 2 + k] += dv[i * 2 + k];
    oc_check_tensor("UnsortedSegmentSum", t, RILL_DOUBLE, (int64_t[]){3, 2}, 2, ref);
    rill_tensor_free(t);
    rill_graph_free(g);
    g = rill_graph_new();
    t = oc_eval(g, build_sorted(g, (rill_output[]){rill_const(g, d, "d")}, NULL));
    memset(ref, 0, sizeof ref);
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 2; k++) ref[sids[i] * 2 + k] += dv[i * 2 + k];
    oc_check_tensor("SegmentSum", t, RILL_DOUBLE, (int64_t[]){4, 2}, 2, ref);
    rill_tensor_free(t);
    rill_graph_free(g);
    oc_grad_check("UnsortedSegmentSum", 1, &d, build_unsorted, NULL, (oc_grad_opts){0});
    oc_grad_check("SegmentSum", 1, &d, build_sorted, NULL, (oc_grad_opts){0});
    rill_tensor_free(d);
}

/* --- TopKV2, InTopKV2, Where, Unique --- */

static rill_output build_top_k(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_output in[] = {xs[0], int_const(g, RILL_INT32, NULL, 0, (int64_t[]){2})};
    return op(g, "TopKV2", in, 2, NULL, 0, 0);
}

static void test_top_k_where_unique(void)
{
    double xv[8] = {1, 5, 3, 5, 0, -1, 2, 7};
    rill_tensor *x = oc_tensor(RILL_DOUBLE, (int64_t[]){2, 4}, 2, xv);
    rill_graph *g = rill_graph_new();
    rill_output v = build_top_k(g, (rill_output[]){rill_const(g, x, "x")}, NULL);
    rill_tensor *tv = oc_eval(g, v), *ti = oc_eval(g, (rill_output){v.node, 1});
    oc_check_tensor("TopKV2 values", tv, RILL_DOUBLE, (int64_t[]){2, 2}, 2, (double[]){5, 5, 7, 2});
    oc_check_tensor("TopKV2 indices (ties: lower first)", ti, RILL_INT32, (int64_t[]){2, 2}, 2,
                    (double[]){1, 3, 3, 2});
    rill_tensor_free(tv);
    rill_tensor_free(ti);
    /* the gradient flows to the chosen elements (distinct values: finite differences hold) */
    double xg[8] = {1, 5, 3, 4, 0, -1, 2, 7};
    rill_tensor *x2 = oc_tensor(RILL_DOUBLE, (int64_t[]){2, 4}, 2, xg);
    oc_grad_check("TopKV2", 1, &x2, build_top_k, NULL, (oc_grad_opts){0});
    rill_tensor_free(x2);
    /* InTopKV2 */
    float pr[6] = {.1f, .8f, .1f, .5f, .2f, .3f};
    rill_output pin[] = {rill_const_floats(g, pr, (int64_t[]){2, 3}, 2, "p"),
                         int_const(g, RILL_INT32, (int64_t[]){2}, 1, (int64_t[]){1, 2}),
                         int_const(g, RILL_INT32, NULL, 0, (int64_t[]){2})};
    rill_tensor *it = oc_eval(g, op(g, "InTopKV2", pin, 3, NULL, 0, 0));
    oc_check_tensor("InTopKV2", it, RILL_BOOL, (int64_t[]){2}, 1, (double[]){1, 1});
    rill_tensor_free(it);
    /* Where */
    rill_tensor *w =
        oc_eval(g, op(g, "Where", (rill_output[]){rill_const(g, x, "x")}, 1, NULL, 0, 0));
    double wref[14] = {0, 0, 0, 1, 0, 2, 0, 3, 1, 1, 1, 2, 1, 3};
    oc_check_tensor("Where", w, RILL_INT64, (int64_t[]){7, 2}, 2, wref);
    rill_tensor_free(w);
    /* Unique */
    rill_output u = op(
        g, "Unique",
        (rill_output[]){int_const(g, RILL_INT64, (int64_t[]){6}, 1, (int64_t[]){4, 1, 4, 2, 1, 9})},
        1, NULL, 0, 0);
    rill_tensor *uy = oc_eval(g, u), *ui = oc_eval(g, (rill_output){u.node, 1});
    oc_check_tensor("Unique y", uy, RILL_INT64, (int64_t[]){4}, 1, (double[]){4, 1, 2, 9});
    oc_check_tensor("Unique idx", ui, RILL_INT32, (int64_t[]){6}, 1, (double[]){0, 1, 0, 2, 1, 3});
    rill_tensor_free(uy);
    rill_tensor_free(ui);
    /* TF's build errors */
    rill_output kin[] = {rill_const(g, x, "x"), int_const(g, RILL_INT32, NULL, 0, (int64_t[]){5})};
    op(g, "TopKV2", kin, 2, NULL, 0, 0);
    oc_check_build_error("TopKV2 k > n", g, RILL_INVALID_ARGUMENT,
                         "input must have last dimension >= k = 5 but is 4");
    rill_graph_free(g);
    rill_tensor_free(x);
}

/* --- samplers --- */

static void test_samplers(void)
{
    rill_graph *g = rill_graph_new();
    rill_graph_set_seed(g, 7);
    rill_output tc = int_const(g, RILL_INT64, (int64_t[]){2, 1}, 2, (int64_t[]){1, 3});
    rill_op_builder *b = rill_op_builder_new(g, "LogUniformCandidateSampler", NULL);
    rill_op_builder_add_input(b, tc);
    rill_op_builder_set_int(b, "num_true", 1);
    rill_op_builder_set_int(b, "num_sampled", 30);
    rill_op_builder_set_int(b, "range_max", 40);
    rill_op_builder_set_bool(b, "unique", true);
    rill_node *n = rill_op_builder_finish(b);
    rill_session *s = oc_session(g);
    /* one step: each run draws anew */
    rill_output f[2] = {{n, 0}, {n, 2}};
    rill_tensor *got[2] = {NULL, NULL};
    rill_status *st = rill_status_new();
    CHECK_EQ_INT(rill_session_run(s, NULL, NULL, 0, f, got, 2, NULL, 0, st), RILL_OK);
    rill_status_free(st);
    rill_tensor *c = got[0], *se = got[1];
    if (CHECK(c && se)) {
        bool seen[40] = {0}, distinct = true, in_range = true, counts_ok = true;
        const int64_t *cv = rill_tensor_data(c);
        for (int i = 0; i < 30; i++) {
            if (cv[i] < 0 || cv[i] >= 40) {
                in_range = false;
                continue;
            }
            if (seen[cv[i]]) distinct = false;
            seen[cv[i]] = true;
            double e = rill_tensor_get_double(se, i),
                   p = log((cv[i] + 2.0) / (cv[i] + 1.0)) / log(41);
            /* unique sampling: 1 - (1-p)^tries with tries >= 30, at most 1 */
            if (!(e >= -expm1(30 * log1p(-p)) * (1 - 1e-5) - 1e-6 && e <= 1 + 1e-6))
                counts_ok = false;
        }
        CHECK(distinct);
        CHECK(in_range);
        CHECK(counts_ok);
    }
    rill_tensor_free(c);
    rill_tensor_free(se);
    rill_session_free(s);
    /* accidental hits */
    rill_output in[] = {tc, int_const(g, RILL_INT64, (int64_t[]){4}, 1, (int64_t[]){3, 0, 1, 3})};
    rill_op_builder *h = rill_op_builder_new(g, "ComputeAccidentalHits", NULL);
    rill_op_builder_add_input(h, in[0]);
    rill_op_builder_add_input(h, in[1]);
    rill_op_builder_set_int(h, "num_true", 1);
    rill_node *hn = rill_op_builder_finish(h);
    rill_tensor *hi = oc_eval(g, (rill_output){hn, 0}), *hid = oc_eval(g, (rill_output){hn, 1});
    oc_check_tensor("ComputeAccidentalHits indices", hi, RILL_INT32, (int64_t[]){3}, 1,
                    (double[]){0, 1, 1});
    oc_check_tensor("ComputeAccidentalHits ids", hid, RILL_INT64, (int64_t[]){3}, 1,
                    (double[]){2, 0, 3});
    rill_tensor_free(hi);
    rill_tensor_free(hid);
    rill_graph_free(g);
}

int main(void)
{
    oc_seed(19);
    test_gather();
    test_indexed_slices();
    test_nd();
    test_segments();
    test_top_k_where_unique();
    test_samplers();
    TEST_MAIN_END();
}
