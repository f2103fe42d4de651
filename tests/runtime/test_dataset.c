/* test_dataset.c - tf.data's ops run by the runtime (kernels/cpu/cpu_dataset.c): a pipeline of
 * slices -> map -> shuffle -> batch -> repeat gives the expected elements and then "End of
 * sequence"; an initializable iterator restarts; a map whose body fails names the op; a GetNext
 * waiting on a prefetch ends at the step's deadline naming the iterator. Graphs are built by op
 * type name (rill_op_builder), as the Python front end builds them. */
#include <rill/rill.h>

#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double test_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static rill_output i64(rill_graph *g, int64_t v)
{
    return rill_const_scalar(g, RILL_INT64, (double)v, NULL);
}

static rill_tensor *names(const char *const *v, int n)
{
    int64_t d = n;
    rill_tensor *t = rill_tensor_new(RILL_STRING, &d, 1);
    for (int i = 0; i < n; i++) rill_tensor_set_string(t, i, v[i], strlen(v[i]));
    return t;
}

static rill_output op1(rill_graph *g, const char *type, const rill_output *in, int n)
{
    rill_op_builder *b = rill_op_builder_new(g, type, NULL);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, in[i]);
    return rill_node_output(rill_op_builder_finish(b), 0);
}

/* MapDataset over ds with body f_args -> f_outputs. */
static rill_output map_ds(rill_graph *g, rill_output ds, const char *const *args, int nargs,
                          const char *const *outs, int nouts)
{
    rill_op_builder *b = rill_op_builder_new(g, "MapDataset", NULL);
    rill_op_builder_add_input(b, ds);
    rill_tensor *a = names(args, nargs), *o = names(outs, nouts);
    rill_op_builder_set_tensor(b, "f_args", a);
    rill_op_builder_set_tensor(b, "f_outputs", o);
    rill_tensor_free(a);
    rill_tensor_free(o);
    return rill_node_output(rill_op_builder_finish(b), 0);
}

/* IteratorGetNext with ncomp components of the given dtypes, shapes unknown but rank. */
static rill_node *get_next(rill_graph *g, rill_output it, const rill_dtype *types, const int *ranks,
                           int n)
{
    rill_op_builder *b = rill_op_builder_new(g, "IteratorGetNext", NULL);
    rill_op_builder_add_input(b, it);
    int64_t tv[8], sv[64];
    int k = 0;
    for (int i = 0; i < n; i++) {
        tv[i] = types[i];
        sv[k++] = ranks[i];
        for (int r = 0; r < ranks[i]; r++) sv[k++] = -1;
    }
    rill_op_builder_set_ints(b, "output_types", tv, n);
    int64_t kd = k;
    rill_tensor *st = rill_tensor_from_data(RILL_INT64, &kd, 1, sv);
    rill_op_builder_set_tensor(b, "output_shapes", st);
    rill_tensor_free(st);
    rill_op_builder_set_int(b, "num_outputs", n);
    return rill_op_builder_finish(b);
}

static int cmp_f(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static void test_pipeline(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    float xs[10];
    int64_t ys[10];
    for (int i = 0; i < 10; i++) xs[i] = (float)i, ys[i] = 100 + i;
    int64_t d10 = 10;
    rill_output x = rill_const_floats(g, xs, &d10, 1, "x");
    rill_tensor *yt = rill_tensor_from_data(RILL_INT64, &d10, 1, ys);
    rill_output y = rill_const(g, yt, "y");
    rill_tensor_free(yt);
    rill_output ins[2] = {x, y};
    rill_output ds = op1(g, "TensorSliceDataset", ins, 2);
    /* the map body: (a, b) -> (a * 2, b) */
    rill_output a = rill_placeholder(g, RILL_FLOAT, rill_shape_scalar(), "fn/a");
    rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "fn/b");
    rill_identity(g, rill_mul(g, a, rill_const_float(g, 2, NULL), NULL), "fn/out");
    static const char *const args[] = {"fn/a", "fn/b"}, *const outs[] = {"fn/out", "fn/b"};
    ds = map_ds(g, ds, args, 2, outs, 2);
    rill_op_builder *b = rill_op_builder_new(g, "ShuffleDataset", NULL);
    rill_op_builder_add_input(b, ds);
    rill_op_builder_add_input(b, i64(g, 4));
    rill_op_builder_set_int(b, "seed", 7);
    ds = rill_node_output(rill_op_builder_finish(b), 0);
    rill_output bargs[3] = {ds, i64(g, 3), rill_const_scalar(g, RILL_BOOL, 0, NULL)};
    ds = op1(g, "BatchDatasetV2", bargs, 3);
    rill_output rargs[2] = {ds, i64(g, 2)};
    ds = op1(g, "RepeatDataset", rargs, 2);
    rill_output it = op1(g, "OneShotIterator", &ds, 1);
    static const rill_dtype types[] = {RILL_FLOAT, RILL_INT64};
    static const int ranks[] = {1, 1};
    rill_node *next = get_next(g, it, types, ranks, 2);
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  %s\n", rill_status_message(rill_graph_status(g)));
        goto out;
    }
    CHECK_EQ_INT(rill_node_output_shape(next, 0).rank, 1);
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_output fetch[2] = {rill_node_output(next, 0), rill_node_output(next, 1)};
    float epoch[2][10];
    int n[2] = {0, 0};
    static const int sizes[] = {3, 3, 3, 1, 3, 3, 3, 1};
    for (int step = 0; step < 8; step++) {
        rill_tensor *v[2];
        if (!CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, fetch, v, 2, NULL, 0, s),
                          RILL_OK)) {
            fprintf(stderr, "  %s\n", rill_status_message(s));
            break;
        }
        CHECK_EQ_INT(rill_tensor_dim(v[0], 0), sizes[step]);
        const float *fx = rill_tensor_data(v[0]);
        const int64_t *fy = rill_tensor_data(v[1]);
        for (int64_t i = 0; i < rill_tensor_dim(v[0], 0); i++) {
            CHECK(fy[i] == 100 + (int64_t)(fx[i] / 2)); /* components stay together */
            epoch[step / 4][n[step / 4]++] = fx[i];
        }
        rill_tensor_free(v[0]);
        rill_tensor_free(v[1]);
    }
    bool differ = false;
    for (int e = 0; e < 2; e++) {
        CHECK_EQ_INT(n[e], 10);
        float sorted[10];
        memcpy(sorted, epoch[e], sizeof sorted);
        qsort(sorted, 10, sizeof *sorted, cmp_f);
        for (int i = 0; i < 10; i++) CHECK(sorted[i] == 2.0f * (float)i); /* a permutation */
    }
    for (int i = 0; i < 10; i++) differ |= epoch[0][i] != epoch[1][i];
    CHECK(differ); /* reshuffled each iteration */
    rill_tensor *v[2];
    CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, fetch, v, 2, NULL, 0, s), RILL_OUT_OF_RANGE);
    CHECK_STR_CONTAINS(rill_status_message(s), "End of sequence");
    rill_session_free(sess);

    /* the same seed gives the same order in a new session */
    sess = rill_session_new(g, NULL, s);
    rill_tensor *w[2];
    CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, fetch, w, 2, NULL, 0, s), RILL_OK);
    for (int i = 0; i < 3; i++) CHECK(((const float *)rill_tensor_data(w[0]))[i] == epoch[0][i]);
    rill_tensor_free(w[0]);
    rill_tensor_free(w[1]);
    rill_session_free(sess);
out:
    rill_graph_free(g);
    rill_status_free(s);
}

static void test_initializable(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_output stop = rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "stop");
    rill_output rin[3] = {i64(g, 0), stop, i64(g, 1)};
    rill_output ds = op1(g, "RangeDataset", rin, 3);
    rill_output it = op1(g, "IteratorV2", NULL, 0);
    rill_output mk[2] = {ds, it};
    rill_node *init = rill_node_output(NULL, 0).node;
    {
        rill_op_builder *b = rill_op_builder_new(g, "MakeIterator", NULL);
        rill_op_builder_add_input(b, mk[0]);
        rill_op_builder_add_input(b, mk[1]);
        init = rill_op_builder_finish(b);
    }
    static const rill_dtype types[] = {RILL_INT64};
    static const int ranks[] = {0};
    rill_node *next = get_next(g, it, types, ranks, 1);
    if (!CHECK(rill_graph_ok(g))) goto out;
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_output f = rill_node_output(next, 0);
    rill_tensor *v;
    CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &f, &v, 1, NULL, 0, s),
                 RILL_FAILED_PRECONDITION);
    CHECK_STR_CONTAINS(rill_status_message(s), "iterator has not been initialized");
    for (int64_t lim = 3; lim >= 2; lim--) {
        rill_tensor *lv = rill_tensor_scalar_int64(lim);
        CHECK_EQ_INT(rill_session_run(sess, &stop, &lv, 1, NULL, NULL, 0, &init, 1, s), RILL_OK);
        rill_tensor_free(lv);
        for (int64_t i = 0; i < lim; i++) {
            CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &f, &v, 1, NULL, 0, s), RILL_OK);
            if (v) CHECK(rill_tensor_get_int64(v, 0) == i);
            rill_tensor_free(v);
        }
        CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &f, &v, 1, NULL, 0, s),
                     RILL_OUT_OF_RANGE);
    }
    rill_session_free(sess);
out:
    rill_graph_free(g);
    rill_status_free(s);
}

/* A map body that needs a feed nobody gives fails, and the error names the MapDataset. */
static void test_map_error(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_output rin[3] = {i64(g, 0), i64(g, 5), i64(g, 1)};
    rill_output ds = op1(g, "RangeDataset", rin, 3);
    rill_output p = rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "fn/x");
    rill_output outer = rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "outer");
    rill_identity(g, rill_add(g, p, outer, NULL), "fn/out");
    static const char *const args[] = {"fn/x"}, *const outs[] = {"fn/out"};
    ds = map_ds(g, ds, args, 1, outs, 1);
    rill_output it = op1(g, "OneShotIterator", &ds, 1);
    static const rill_dtype types[] = {RILL_INT64};
    static const int ranks[] = {0};
    rill_node *next = get_next(g, it, types, ranks, 1);
    if (!CHECK(rill_graph_ok(g))) goto out;
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_output f = rill_node_output(next, 0);
    rill_tensor *v;
    CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &f, &v, 1, NULL, 0, s),
                 RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "MapDataset");
    CHECK_STR_CONTAINS(rill_status_message(s), "outer");
    rill_session_free(sess);
out:
    rill_graph_free(g);
    rill_status_free(s);
}

/* A prefetch whose producer waits (its map body dequeues from an empty queue): GetNext ends at
 * the step's deadline with an error that names the iterator. */
static void test_prefetch_deadline(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_output rin[3] = {i64(g, 0), i64(g, 5), i64(g, 1)};
    rill_output ds = op1(g, "RangeDataset", rin, 3);
    rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "fn/x");
    rill_op_builder *b = rill_op_builder_new(g, "QueueDequeue", "fn/dequeue");
    rill_op_builder_set_type(b, "dtype", RILL_INT64);
    rill_op_builder_set_string(b, "shared_name", "empty_queue");
    rill_op_builder_set_int(b, "timeout_ms", 1500);
    rill_op_builder_finish(b);
    static const char *const args[] = {"fn/x"}, *const outs[] = {"fn/dequeue"};
    ds = map_ds(g, ds, args, 1, outs, 1);
    rill_output pin[2] = {ds, i64(g, 2)};
    ds = op1(g, "PrefetchDataset", pin, 2);
    rill_output it = op1(g, "OneShotIterator", &ds, 1);
    static const rill_dtype types[] = {RILL_INT64};
    static const int ranks[] = {-1};
    rill_node *next = get_next(g, it, types, ranks, 1);
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  %s\n", rill_status_message(rill_graph_status(g)));
        goto out;
    }
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_output f = rill_node_output(next, 0);
    rill_tensor *v;
    rill_run_options ro = {.timeout_ms = 200};
    double t0 = test_now();
    CHECK_EQ_INT(rill_session_run_with_options(sess, &ro, NULL, NULL, 0, &f, &v, 1, NULL, 0, s),
                 RILL_DEADLINE_EXCEEDED);
    CHECK(test_now() - t0 < 1.2);
    CHECK_STR_CONTAINS(rill_status_message(s), "iterator 'OneShotIterator'");
    /* the producer's own wait ends (the dequeue's timeout): its error comes next */
    CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &f, &v, 1, NULL, 0, s),
                 RILL_DEADLINE_EXCEEDED);
    CHECK_STR_CONTAINS(rill_status_message(s), "MapDataset");
    rill_session_free(sess);
out:
    rill_graph_free(g);
    rill_status_free(s);
}

/* Zip, take, skip, filter-free pieces and batch with drop_remainder. */
static void test_zip_take_skip(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_output r1[3] = {i64(g, 0), i64(g, 10), i64(g, 1)};
    rill_output r2[3] = {i64(g, 100), i64(g, 0), i64(g, -10)};
    rill_output z[2] = {op1(g, "RangeDataset", r1, 3), op1(g, "RangeDataset", r2, 3)};
    rill_output ds = op1(g, "ZipDataset", z, 2);
    rill_output sk[2] = {ds, i64(g, 2)};
    ds = op1(g, "SkipDataset", sk, 2);
    rill_output tk[2] = {ds, i64(g, 7)};
    ds = op1(g, "TakeDataset", tk, 2);
    rill_output bt[3] = {ds, i64(g, 2), rill_const_scalar(g, RILL_BOOL, 1, NULL)};
    ds = op1(g, "BatchDatasetV2", bt, 3);
    rill_output it = op1(g, "OneShotIterator", &ds, 1);
    static const rill_dtype types[] = {RILL_INT64, RILL_INT64};
    static const int ranks[] = {1, 1};
    rill_node *next = get_next(g, it, types, ranks, 2);
    if (!CHECK(rill_graph_ok(g))) goto out;
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_output f[2] = {rill_node_output(next, 0), rill_node_output(next, 1)};
    /* elements (2,80) .. (8,20): 7 of them, batches of 2 with the last one dropped */
    for (int step = 0; step < 3; step++) {
        rill_tensor *v[2];
        if (!CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, f, v, 2, NULL, 0, s), RILL_OK))
            break;
        for (int i = 0; i < 2; i++) {
            int64_t k = 2 + step * 2 + i;
            CHECK(rill_tensor_get_int64(v[0], i) == k);
            CHECK(rill_tensor_get_int64(v[1], i) == 100 - 10 * k);
        }
        rill_tensor_free(v[0]);
        rill_tensor_free(v[1]);
    }
    rill_tensor *v[2];
    CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, f, v, 2, NULL, 0, s), RILL_OUT_OF_RANGE);
    rill_session_free(sess);
out:
    rill_graph_free(g);
    rill_status_free(s);
}

int main(void)
{
    test_pipeline();
    test_initializable();
    test_map_error();
    test_prefetch_deadline();
    test_zip_take_skip();
    TEST_MAIN_END();
}
