/* test_sparse_ops.c - ops_sparse.c: SparseToDense (values against a direct reference, both
 * gradients against finite differences, TF's run-time texts), CTCGreedyDecoder (values against
 * a direct reference), and the unigram samplers (TF's exact expected counts, the learned one's
 * update after each draw, and the draw's frequencies against the weights). */
#include "op_check.h"

#include <math.h>
#include <string.h>

static rill_tensor *ints(rill_dtype t, const int64_t *dims, int rank, const double *v)
{
    return oc_tensor(t, dims, rank, v);
}

static rill_output s2d(rill_graph *g, rill_output ix, rill_output shape, rill_output vals,
                       rill_output def, bool validate)
{
    rill_op_builder *b = rill_op_builder_new(g, "SparseToDense", NULL);
    rill_op_builder_add_input(b, ix);
    rill_op_builder_add_input(b, shape);
    rill_op_builder_add_input(b, vals);
    rill_op_builder_add_input(b, def);
    rill_op_builder_set_bool(b, "validate_indices", validate);
    return rill_node_output(rill_op_builder_finish(b), 0);
}

/* the indices [[0,1],[1,0],[1,2]] into [2,3] */
static const double IX[] = {0, 1, 1, 0, 1, 2};

static rill_output build_s2d(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_tensor *it = ints(RILL_INT64, (int64_t[]){3, 2}, 2, IX);
    rill_tensor *st = ints(RILL_INT64, (int64_t[]){2}, 1, (double[]){2, 3});
    rill_output ix = rill_const(g, it, "ix"), sh = rill_const(g, st, "shape");
    rill_tensor_free(it);
    rill_tensor_free(st);
    return s2d(g, ix, sh, xs[0], xs[1], true);
}

static void test_sparse_to_dense(void)
{
    rill_graph *g = rill_graph_new();
    rill_tensor *vt = oc_tensor(RILL_FLOAT, (int64_t[]){3}, 1, (double[]){5, 6, 7});
    rill_tensor *dt = oc_tensor(RILL_FLOAT, NULL, 0, (double[]){-1});
    rill_output v = rill_const(g, vt, "v"), d = rill_const(g, dt, "d");
    rill_output y = build_s2d(g, (rill_output[]){v, d}, NULL);
    rill_shape ys = rill_output_shape(y);
    CHECK(ys.rank == 2 && ys.dims[0] == 2 && ys.dims[1] == 3);
    rill_tensor *r = oc_eval(g, y);
    oc_check_tensor("s2d", r, RILL_FLOAT, (int64_t[]){2, 3}, 2, (double[]){-1, 5, -1, 6, -1, 7});
    rill_tensor_free(r);
    /* a scalar value for every index, 1-D indices */
    rill_tensor *i1 = ints(RILL_INT32, (int64_t[]){2}, 1, (double[]){0, 2});
    rill_tensor *s1 = ints(RILL_INT32, (int64_t[]){1}, 1, (double[]){4});
    rill_tensor *v1 = oc_tensor(RILL_INT32, NULL, 0, (double[]){9});
    rill_tensor *d1 = oc_tensor(RILL_INT32, NULL, 0, (double[]){0});
    rill_output y1 = s2d(g, rill_const(g, i1, "i1"), rill_const(g, s1, "s1"),
                         rill_const(g, v1, "v1"), rill_const(g, d1, "d1"), true);
    r = oc_eval(g, y1);
    oc_check_tensor("s2d 1-D", r, RILL_INT32, (int64_t[]){4}, 1, (double[]){9, 0, 9, 0});
    rill_tensor_free(r);
    rill_tensor *gv[] = {oc_tensor(RILL_DOUBLE, (int64_t[]){3}, 1, (double[]){1, 2, 3}),
                         oc_tensor(RILL_DOUBLE, NULL, 0, (double[]){0.5})};
    oc_grad_check("s2d grad", 2, gv, build_s2d, NULL, (oc_grad_opts){0});
    rill_tensor *gs[] = {oc_tensor(RILL_DOUBLE, NULL, 0, (double[]){2}), gv[1]};
    oc_grad_check("s2d grad scalar value", 2, gs, build_s2d, NULL, (oc_grad_opts){0});
    rill_tensor_free(gv[0]);
    rill_tensor_free(gv[1]);
    rill_tensor_free(gs[0]);
    rill_tensor_free(vt);
    rill_tensor_free(dt);
    rill_tensor_free(i1);
    rill_tensor_free(s1);
    rill_tensor_free(v1);
    rill_tensor_free(d1);
    rill_graph_free(g);
}

/* Runs SparseToDense over fed indices; checks the run's error text. */
static void s2d_error(const char *label, const int64_t *idims, int irank, const double *iv,
                      int64_t nshape, const double *sv, bool validate, int64_t nvals,
                      const char *text)
{
    rill_graph *g = rill_graph_new();
    rill_output ix = rill_placeholder(g, RILL_INT64, rill_shape_unknown(), "ix");
    rill_tensor *st = ints(RILL_INT64, (int64_t[]){nshape}, 1, sv);
    double ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    rill_tensor *vt = oc_tensor(RILL_FLOAT, (int64_t[]){nvals}, 1, ones);
    rill_tensor *dt = oc_tensor(RILL_FLOAT, NULL, 0, (double[]){0});
    rill_output y = s2d(g, ix, rill_const(g, st, "s"), rill_const(g, vt, "v"),
                        rill_const(g, dt, "d"), validate);
    rill_session *sess = oc_session(g);
    rill_tensor *it = ints(RILL_INT64, idims, irank, iv), *out = NULL;
    rill_status *s = rill_status_new();
    rill_code c = rill_session_run(sess, &ix, &it, 1, &y, &out, 1, NULL, 0, s);
    if (!CHECK_EQ_INT(c, RILL_INVALID_ARGUMENT) ||
        !CHECK_STR_CONTAINS(rill_status_message(s), text))
        fprintf(stderr, "  case: %s\n", label);
    rill_tensor_free(out);
    rill_status_free(s);
    rill_tensor_free(it);
    rill_tensor_free(st);
    rill_tensor_free(vt);
    rill_tensor_free(dt);
    rill_session_free(sess);
    rill_graph_free(g);
}

static void test_sparse_to_dense_errors(void)
{
    const int64_t d22[] = {2, 2};
    const double shape[] = {2, 3};
    s2d_error("bounds", d22, 2, (double[]){0, 1, 0, 5}, 2, shape, true, 2,
              "indices[1] = [0,5] is out of bounds: need 0 <= index < [2,3]");
    s2d_error("order", d22, 2, (double[]){1, 1, 0, 2}, 2, shape, true, 2,
              "indices[1] = [0,2] is out of order. Many sparse ops require sorted indices.");
    s2d_error("repeat", d22, 2, (double[]){1, 1, 1, 1}, 2, shape, true, 2,
              "indices[1] = [1,1] is repeated");
    s2d_error("bounds unvalidated", d22, 2, (double[]){0, 1, 0, 5}, 2, shape, false, 2,
              "Indices are not valid (out of bounds).  Shape: [2,3]");
    s2d_error("values", d22, 2, (double[]){0, 1, 0, 2}, 2, shape, true, 3,
              "sparse_values has incorrect shape [3], should be [] or [2]");
    s2d_error("output_shape", d22, 2, (double[]){0, 1, 0, 2}, 3, (double[]){2, 3, 4}, true, 2,
              "output_shape has incorrect number of elements: 3 should be: 2");
    s2d_error("rank", (int64_t[]){1, 1, 2}, 3, (double[]){0, 1}, 2, shape, true, 1,
              "sparse_indices should be a scalar, vector, or matrix, got shape [1,1,2]");
}

static void test_ctc_greedy(void)
{
    /* T 4, B 2, C 3 (blank 2) */
    int64_t T = 4, B = 2, C = 3;
    double x[24];
    for (int i = 0; i < 24; i++) x[i] = oc_uniform(-1, 1);
    rill_graph *g = rill_graph_new();
    rill_tensor *xt = oc_tensor(RILL_FLOAT, (int64_t[]){T, B, C}, 3, x);
    rill_tensor *lt = oc_tensor(RILL_INT32, (int64_t[]){B}, 1, (double[]){4, 3});
    for (int merge = 0; merge < 2; merge++) {
        rill_op_builder *b = rill_op_builder_new(g, "CTCGreedyDecoder", NULL);
        rill_op_builder_add_input(b, rill_const(g, xt, "x"));
        rill_op_builder_add_input(b, rill_const(g, lt, "len"));
        rill_op_builder_set_bool(b, "merge_repeated", merge);
        rill_node *n = rill_op_builder_finish(b);
        rill_session *sess = oc_session(g);
        rill_output f[4] = {rill_node_output(n, 0), rill_node_output(n, 1), rill_node_output(n, 2),
                            rill_node_output(n, 3)};
        rill_tensor *o[4] = {0};
        rill_status *s = rill_status_new();
        CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, f, o, 4, NULL, 0, s), RILL_OK);
        /* the reference */
        double ri[16], rv[8], lp[2];
        int64_t k = 0, maxlen = 0;
        const double lens[] = {4, 3};
        for (int64_t bb = 0; bb < B; bb++) {
            int64_t prev = C - 1, cnt = 0;
            lp[bb] = 0;
            for (int64_t t = 0; t < (int64_t)lens[bb]; t++) {
                int64_t best = 0;
                for (int64_t c = 1; c < C; c++)
                    if ((float)x[(t * B + bb) * C + c] > (float)x[(t * B + bb) * C + best])
                        best = c;
                lp[bb] -= (float)x[(t * B + bb) * C + best];
                if (best != C - 1 && !(merge && best == prev)) {
                    ri[2 * k] = (double)bb;
                    ri[2 * k + 1] = (double)cnt++;
                    rv[k++] = (double)best;
                }
                prev = best;
            }
            if (cnt > maxlen) maxlen = cnt;
        }
        oc_check_tensor("ctc indices", o[0], RILL_INT64, (int64_t[]){k, 2}, 2, ri);
        oc_check_tensor("ctc values", o[1], RILL_INT64, (int64_t[]){k}, 1, rv);
        oc_check_tensor("ctc shape", o[2], RILL_INT64, (int64_t[]){2}, 1,
                        (double[]){2, (double)maxlen});
        oc_check_tensor("ctc log prob", o[3], RILL_FLOAT, (int64_t[]){2, 1}, 2, lp);
        for (int i = 0; i < 4; i++) rill_tensor_free(o[i]);
        rill_status_free(s);
        rill_session_free(sess);
    }
    rill_tensor_free(xt);
    rill_tensor_free(lt);
    rill_graph_free(g);
}

static rill_node *sampler(rill_graph *g, const char *type, rill_output tc, int64_t ns, bool uniq,
                          int64_t range, const rill_tensor *unigrams, double distortion,
                          int64_t reserved, int64_t shards, int64_t shard)
{
    rill_op_builder *b = rill_op_builder_new(g, type, NULL);
    rill_op_builder_add_input(b, tc);
    rill_op_builder_set_int(b, "num_true", 1);
    rill_op_builder_set_int(b, "num_sampled", ns);
    rill_op_builder_set_bool(b, "unique", uniq);
    rill_op_builder_set_int(b, "range_max", range);
    rill_op_builder_set_int(b, "seed", 7);
    if (unigrams) {
        rill_op_builder_set_tensor(b, "unigrams", (rill_tensor *)unigrams);
        rill_op_builder_set_float(b, "distortion", distortion);
        rill_op_builder_set_int(b, "num_reserved_ids", reserved);
        rill_op_builder_set_int(b, "num_shards", shards);
        rill_op_builder_set_int(b, "shard", shard);
    }
    return rill_op_builder_finish(b);
}

static void run3(rill_session *sess, rill_node *n, rill_tensor **o)
{
    rill_output f[3] = {rill_node_output(n, 0), rill_node_output(n, 1), rill_node_output(n, 2)};
    rill_status *s = rill_status_new();
    if (!CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, f, o, 3, NULL, 0, s), RILL_OK))
        fprintf(stderr, "  %s\n", rill_status_message(s));
    rill_status_free(s);
}

static void test_samplers(void)
{
    rill_graph *g = rill_graph_new();
    rill_tensor *tct = oc_tensor(RILL_INT64, (int64_t[]){2, 1}, 2, (double[]){1, 2});
    rill_output tc = rill_const(g, tct, "tc");
    /* unigrams [1..4] after 2 reserved ids, range 6: TF's values 0 and 0.3 (3 draws) */
    rill_tensor *uni = oc_tensor(RILL_FLOAT, (int64_t[]){4}, 1, (double[]){1, 2, 3, 4});
    rill_node *fx = sampler(g, "FixedUnigramCandidateSampler", tc, 3, false, 6, uni, 1, 2, 1, 0);
    /* shard 1 of 2 of [1..6], range 3: weights 2, 4, 6 */
    rill_tensor *uni6 = oc_tensor(RILL_FLOAT, (int64_t[]){6}, 1, (double[]){1, 2, 3, 4, 5, 6});
    rill_node *fs = sampler(g, "FixedUnigramCandidateSampler", tc, 3, false, 3, uni6, 1, 0, 2, 1);
    rill_node *big =
        sampler(g, "FixedUnigramCandidateSampler", tc, 20000, false, 6, uni, 0.5, 2, 1, 0);
    rill_node *ln = sampler(g, "LearnedUnigramCandidateSampler", tc, 3, false, 5, NULL, 0, 0, 0, 0);
    rill_session *sess = oc_session(g);
    rill_tensor *o[3] = {0};
    run3(sess, fx, o);
    oc_check_tensor("fixed true", o[1], RILL_FLOAT, (int64_t[]){2, 1}, 2, (double[]){0, 0.3f});
    for (int i = 0; o[0] && i < 3; i++) {
        int64_t v = ((int64_t *)rill_tensor_data(o[0]))[i];
        CHECK(v >= 2 && v < 6);
        CHECK(((float *)rill_tensor_data(o[2]))[i] == (float)(v - 1) / 10.0f * 3.0f);
    }
    for (int i = 0; i < 3; i++) rill_tensor_free(o[i]);
    run3(sess, fs, o);
    oc_check_tensor("shard true", o[1], RILL_FLOAT, (int64_t[]){2, 1}, 2, (double[]){1, 1.5});
    for (int i = 0; i < 3; i++) rill_tensor_free(o[i]);
    /* frequencies of sqrt(1..4) over ids 2..5 */
    run3(sess, big, o);
    if (o[0]) {
        double cnt[6] = {0}, tot = 1 + sqrt(2) + sqrt(3) + 2;
        for (int i = 0; i < 20000; i++) cnt[((int64_t *)rill_tensor_data(o[0]))[i]]++;
        CHECK(cnt[0] == 0 && cnt[1] == 0);
        for (int k = 2; k < 6; k++) {
            double p = sqrt(k - 1.0) / tot, sd = sqrt(20000 * p * (1 - p));
            if (!CHECK(fabs(cnt[k] - 20000 * p) < 5 * sd))
                fprintf(stderr, "  id %d: %g draws, expected %g\n", k, cnt[k], 20000 * p);
        }
    }
    for (int i = 0; i < 3; i++) rill_tensor_free(o[i]);
    /* learned: uniform first, then true classes 1 and 2 weigh one more each step */
    const double want[3][2] = {{0.6f, 0.6f}, {3 * (2 / 7.0f), 3 * (2 / 7.0f)}, {1, 1}};
    for (int step = 0; step < 3; step++) {
        run3(sess, ln, o);
        oc_check_tensor("learned true", o[1], RILL_FLOAT, (int64_t[]){2, 1}, 2, want[step]);
        for (int i = 0; i < 3; i++) rill_tensor_free(o[i]);
    }
    rill_session_free(sess);
    /* TF's texts */
    rill_node *bad = sampler(g, "FixedUnigramCandidateSampler", tc, 3, false, 5, uni, 1, 0, 1, 0);
    sess = oc_session(g);
    rill_output f[3] = {rill_node_output(bad, 0), rill_node_output(bad, 1),
                        rill_node_output(bad, 2)};
    rill_status *s = rill_status_new();
    CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, f, o, 3, NULL, 0, s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "range is 5 must be equal to weights size  4");
    rill_status_free(s);
    rill_session_free(sess);
    rill_tensor_free(tct);
    rill_tensor_free(uni);
    rill_tensor_free(uni6);
    rill_graph_free(g);
}

int main(void)
{
    oc_seed(19);
    test_sparse_to_dense();
    test_sparse_to_dense_errors();
    test_ctc_greedy();
    test_samplers();
    TEST_MAIN_END();
}
