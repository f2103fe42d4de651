/* test_select_ops.c - ArgMax, Equal and Dropout: ArgMax against a reference over shapes, axes
 * (negative too), ties and dtypes, with TF's error for a bad axis; Equal with broadcasting and
 * the accuracy pattern mean(cast(equal(argmax(logits), labels))); Dropout's statistics, scale,
 * mask and gradient, its seeded reproducibility and TF's keep_prob error; and all three on the
 * GPU (PoCL) equal to the CPU. */
#include "test.h"

#include <rill/rill.h>

#include <math.h>
#include <string.h>

static rill_tensor *run1(rill_graph *g, rill_output feed, rill_tensor *fv, rill_output fetch,
                         rill_status *s)
{
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_tensor *out = NULL;
    if (sess)
        rill_session_run(sess, feed.node ? &feed : NULL, feed.node ? &fv : NULL, feed.node ? 1 : 0,
                         &fetch, &out, 1, NULL, 0, s);
    rill_session_free(sess);
    return out;
}

static void test_argmax(void)
{
    const int64_t dims[3] = {3, 4, 5};
    float x[60];
    for (int i = 0; i < 60; i++) x[i] = (float)((i * 37) % 17);
    x[7] = x[2] = 99; /* ties along axis 2 in row (0, 0): the first wins */
    for (int axis = -3; axis < 3; axis++) {
        rill_graph *g = rill_graph_new();
        rill_output c = rill_const_floats(g, x, dims, 3, "x");
        rill_output a = rill_argmax(g, c, axis, NULL);
        rill_status *s = rill_status_new();
        rill_tensor *t = run1(g, (rill_output){0}, NULL, a, s);
        if (!CHECK(t != NULL)) fprintf(stderr, "  %s\n", rill_status_message(s));
        int ax = axis < 0 ? axis + 3 : axis;
        int64_t len = dims[ax], inner = 1, outer = 1;
        for (int d = 0; d < 3; d++) {
            if (d < ax) outer *= dims[d];
            if (d > ax) inner *= dims[d];
        }
        int bad = 0;
        for (int64_t o = 0; t && o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t best = 0;
                for (int64_t j = 1; j < len; j++)
                    if (x[(o * len + j) * inner + i] > x[(o * len + best) * inner + i]) best = j;
                if (((int64_t *)rill_tensor_data(t))[o * inner + i] != best) bad++;
            }
        CHECK(t && rill_tensor_dtype(t) == RILL_INT64 &&
              rill_tensor_num_elements(t) == outer * inner);
        CHECK_EQ_INT(bad, 0);
        rill_tensor_free(t);
        rill_status_free(s);
        rill_graph_free(g);
    }
    /* A bad axis is a build error in TF's words. */
    rill_graph *g = rill_graph_new();
    rill_argmax(g, rill_const_floats(g, x, dims, 3, "x"), 3, "am");
    CHECK(!rill_graph_ok(g));
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)),
                       "Expected dimension in the range [-3, 3), but got 3");
    rill_graph_free(g);
}

/* accuracy = mean(cast(equal(argmax(logits, 1), labels), float)), on /cpu:0 or /gpu:0. */
static double accuracy(const char *device, const float *logits, const int64_t *labels, int rows,
                       int cols)
{
    rill_graph *g = rill_graph_new();
    if (device) rill_graph_push_device(g, device);
    rill_output l = rill_const_floats(g, logits, (int64_t[]){rows, cols}, 2, "logits");
    rill_output y = rill_placeholder(g, RILL_INT64, rill_shape_vector(rows), "labels");
    rill_output eq = rill_equal(g, rill_argmax(g, l, 1, NULL), y, NULL);
    rill_output acc = rill_mean(g, rill_cast(g, eq, RILL_FLOAT, NULL), NULL, -1, false, "acc");
    if (device) rill_graph_pop_device(g);
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_allow_soft_placement(o, true);
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, o, s);
    rill_tensor *yv = rill_tensor_from_data(RILL_INT64, (int64_t[]){rows}, 1, labels), *out = NULL;
    double v = -1;
    if (CHECK(sess != NULL) &&
        CHECK(rill_session_run(sess, &y, &yv, 1, &acc, &out, 1, NULL, 0, s) == RILL_OK))
        v = *(float *)rill_tensor_data(out);
    else
        fprintf(stderr, "  %s\n", rill_status_message(s));
    rill_tensor_free(out);
    rill_tensor_free(yv);
    rill_session_free(sess);
    rill_session_options_free(o);
    rill_status_free(s);
    rill_graph_free(g);
    return v;
}

static void test_equal_accuracy(void)
{
    enum { R = 50, C = 7 };
    float logits[R * C];
    int64_t labels[R];
    int right = 0;
    for (int r = 0; r < R; r++) {
        for (int c = 0; c < C; c++) logits[r * C + c] = (float)((r * 13 + c * 7) % 11);
        int best = 0;
        for (int c = 1; c < C; c++)
            if (logits[r * C + c] > logits[r * C + best]) best = c;
        labels[r] = r % 3 == 0 ? (best + 1) % C : best;
        right += labels[r] == best;
    }
    double cpu = accuracy("/cpu:0", logits, labels, R, C),
           gpu = accuracy("/gpu:0", logits, labels, R, C);
    CHECK_NEAR(cpu, (double)right / R, 1e-6);
    CHECK_NEAR(gpu, cpu, 0);
    /* Broadcasting: a [2, 3] against a [3] row. */
    rill_graph *g = rill_graph_new();
    float a[6] = {1, 2, 3, 1, 5, 3}, b[3] = {1, 5, 3};
    rill_output e = rill_equal(g, rill_const_floats(g, a, (int64_t[]){2, 3}, 2, "a"),
                               rill_const_floats(g, b, (int64_t[]){3}, 1, "b"), NULL);
    rill_status *s = rill_status_new();
    rill_tensor *t = run1(g, (rill_output){0}, NULL, e, s);
    const uint8_t want[6] = {1, 0, 1, 1, 1, 1};
    CHECK(t && rill_tensor_dtype(t) == RILL_BOOL && memcmp(rill_tensor_data(t), want, 6) == 0);
    rill_tensor_free(t);
    rill_status_free(s);
    rill_graph_free(g);
}

static void test_dropout(void)
{
    enum { N = 100000 };
    rill_graph *g = rill_graph_new();
    rill_graph_set_seed(g, 11);
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(N), "x");
    rill_output kp = rill_placeholder(g, RILL_FLOAT, rill_shape_scalar(), "keep_prob");
    rill_output y = rill_dropout(g, x, kp, 0, "drop");
    rill_output w = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(N), "w");
    rill_output l = rill_sum(g, rill_mul(g, y, w, NULL), NULL, -1, false, "l");
    rill_output dx;
    CHECK(rill_gradients(g, &l, 1, &x, 1, NULL, &dx));
    rill_output mask = {y.node, 1};
    rill_status *s = rill_status_new();
    rill_session *a = rill_session_new(g, NULL, s), *b = rill_session_new(g, NULL, s);
    rill_tensor *xv = rill_tensor_new(RILL_FLOAT, (int64_t[]){N}, 1);
    rill_tensor *wv = rill_tensor_new(RILL_FLOAT, (int64_t[]){N}, 1);
    for (int i = 0; i < N; i++) {
        ((float *)rill_tensor_data(xv))[i] = (float)(i % 97) - 40.5f;
        ((float *)rill_tensor_data(wv))[i] = (float)(i % 13) - 6;
    }
    rill_output feeds[] = {x, kp, w}, fetches[] = {y, mask, dx};
    for (int k = 0; k < 2; k++) {
        float keep = k == 0 ? 0.5f : 1.0f;
        rill_tensor *kv = rill_tensor_scalar_float(keep);
        rill_tensor *fv[] = {xv, kv, wv}, *o1[3] = {0}, *o2[3] = {0}, *o3[3] = {0};
        CHECK(rill_session_run(a, feeds, fv, 3, fetches, o1, 3, NULL, 0, s) == RILL_OK);
        CHECK(rill_session_run(a, feeds, fv, 3, fetches, o2, 3, NULL, 0, s) == RILL_OK);
        CHECK(rill_session_run(b, feeds, fv, 3, fetches, o3, 3, NULL, 0, s) == RILL_OK);
        if (!o1[0] || !o2[0] || !o3[0]) {
            fprintf(stderr, "  %s\n", rill_status_message(s));
            break;
        }
        const float *xs = rill_tensor_data(xv), *ws = rill_tensor_data(wv);
        const float *y1 = rill_tensor_data(o1[0]), *m1 = rill_tensor_data(o1[1]),
                    *d1 = rill_tensor_data(o1[2]);
        int zeros = 0, bad_scale = 0, bad_mask = 0, bad_grad = 0;
        for (int i = 0; i < N; i++) {
            bool kept = m1[i] != 0;
            zeros += !kept;
            if (kept && y1[i] != xs[i] / keep) bad_scale++;
            if (!kept && y1[i] != 0) bad_scale++;
            if (m1[i] != 0 && m1[i] != 1 / keep) bad_mask++;
            if (d1[i] != ws[i] * m1[i]) bad_grad++;
        }
        if (k == 0)
            CHECK(fabs((double)zeros / N - 0.5) < 0.01); /* 0.5 +- 6 sigma */
        else
            CHECK_EQ_INT(zeros, 0); /* keep_prob 1 keeps everything */
        CHECK_EQ_INT(bad_scale, 0);
        CHECK_EQ_INT(bad_mask, 0);
        CHECK_EQ_INT(bad_grad, 0);
        /* A new mask each step; the same sequence in another session of the seeded graph. */
        if (k == 0) CHECK(memcmp(m1, rill_tensor_data(o2[1]), sizeof(float) * N) != 0);
        CHECK(memcmp(m1, rill_tensor_data(o3[1]), sizeof(float) * N) == 0);
        for (int i = 0; i < 3; i++)
            rill_tensor_free(o1[i]), rill_tensor_free(o2[i]), rill_tensor_free(o3[i]);
        rill_tensor_free(kv);
    }
    /* keep_prob outside (0, 1]: TF's words. */
    for (int k = 0; k < 2; k++) {
        rill_tensor *kv = rill_tensor_scalar_float(k == 0 ? 0.0f : 1.5f), *fv[] = {xv, kv, wv},
                    *o[1] = {0};
        CHECK(rill_session_run(a, feeds, fv, 3, fetches, o, 1, NULL, 0, s) ==
              RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s),
                           "keep_prob must be a scalar tensor or a float in the range (0, 1], got");
        rill_tensor_free(kv);
    }
    /* Build errors: an int x, a vector keep_prob. */
    rill_graph *g2 = rill_graph_new();
    rill_dropout(g2, rill_placeholder(g2, RILL_INT32, rill_shape_vector(3), "xi"),
                 rill_const_float(g2, 0.5f, "k"), 0, NULL);
    CHECK(!rill_graph_ok(g2));
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g2)),
                       "x has to be a floating point tensor");
    rill_graph_free(g2);
    rill_tensor_free(xv);
    rill_tensor_free(wv);
    rill_session_free(a);
    rill_session_free(b);
    rill_status_free(s);
    rill_graph_free(g);
}

int main(void)
{
    test_argmax();
    test_equal_accuracy();
    test_dropout();
    TEST_MAIN_END();
}
