/* test_dataset2.c - tf.data's later transformations run by the runtime
 * (kernels/cpu/cpu_dataset2.c), each against the elements TensorFlow gives for the same pipeline
 * (python/tests/test_data2.py compares them with TF itself): interleave with a function that
 * returns a dataset; window -> flat_map(batch) -> padded_batch; concatenate, shard, unique and a
 * file cache read back by a later dataset; reduce, single element and cardinality; TF's Philox
 * stream of RandomDataset; choose_from_datasets' selector error; a map function's captured
 * tensor fed at initialisation; TextLine and FixedLengthRecord files (TF's lines and records;
 * test_data2.py checks TFRecord files TF wrote). */
#include <rill/rill.h>

#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static rill_output opn(rill_graph *g, const char *type, const rill_output *in, int n)
{
    rill_op_builder *b = rill_op_builder_new(g, type, NULL);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, in[i]);
    return rill_node_output(rill_op_builder_finish(b), 0);
}

static rill_output range(rill_graph *g, int64_t a, int64_t b)
{
    rill_output in[3] = {i64(g, a), i64(g, b), i64(g, 1)};
    return opn(g, "RangeDataset", in, 3);
}

/* A function op: inputs (then captures), f_args / f_outputs (/ f_captures) and attrs. */
static rill_op_builder *fn_op(rill_graph *g, const char *type, const rill_output *in, int n,
                              const char *arg, const char *out)
{
    rill_op_builder *b = rill_op_builder_new(g, type, NULL);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, in[i]);
    rill_tensor *a = names(&arg, 1), *o = names(&out, 1);
    rill_op_builder_set_tensor(b, "f_args", a);
    rill_op_builder_set_tensor(b, "f_outputs", o);
    rill_tensor_free(a);
    rill_tensor_free(o);
    return b;
}

/* The int64 elements (one component of rank `rank`) of ds, flattened into v (at most cap);
 * their count, or -1 with s set on an error other than the end. */
static int drain(rill_graph *g, rill_output ds, int rank, int64_t *v, int cap, rill_status *s)
{
    rill_output it = opn(g, "OneShotIterator", &ds, 1);
    rill_op_builder *b = rill_op_builder_new(g, "IteratorGetNext", NULL);
    rill_op_builder_add_input(b, it);
    int64_t t = RILL_INT64, sv[8] = {rank, -1, -1, -1, -1, -1, -1, -1}, k = rank + 1;
    rill_op_builder_set_ints(b, "output_types", &t, 1);
    rill_tensor *st = rill_tensor_from_data(RILL_INT64, &k, 1, sv);
    rill_op_builder_set_tensor(b, "output_shapes", st);
    rill_tensor_free(st);
    rill_op_builder_set_int(b, "num_outputs", 1);
    rill_node *next = rill_op_builder_finish(b);
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  %s\n", rill_status_message(rill_graph_status(g)));
        return -1;
    }
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_output f = rill_node_output(next, 0);
    int n = 0;
    for (;;) {
        rill_tensor *e;
        rill_code c = rill_session_run(sess, NULL, NULL, 0, &f, &e, 1, NULL, 0, s);
        if (c == RILL_OUT_OF_RANGE) break;
        if (c != RILL_OK) {
            n = -1;
            break;
        }
        const int64_t *p = rill_tensor_data(e);
        for (int64_t i = 0; i < rill_tensor_num_elements(e) && n < cap; i++) v[n++] = p[i];
        rill_tensor_free(e);
    }
    rill_session_free(sess);
    return n;
}

static void check_seq(const int64_t *got, int n, const int64_t *want, int nw)
{
    if (!CHECK_EQ_INT(n, nw)) return;
    for (int i = 0; i < n; i++) CHECK_EQ_INT(got[i], want[i]);
}

static void test_interleave(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    /* the function: x -> from_tensors(x).repeat(x) */
    rill_output x = rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "fn/x");
    rill_output td = opn(g, "TensorDataset", &x, 1);
    rill_output rin[2] = {td, x};
    rill_identity(g, opn(g, "RepeatDataset", rin, 2), "fn/out");
    rill_output in[3] = {range(g, 1, 6), i64(g, 2), i64(g, 2)};
    rill_op_builder *b = fn_op(g, "InterleaveDataset", in, 3, "fn/x", "fn/out");
    rill_op_builder_set_int(b, "n_components", 1);
    rill_output ds = rill_node_output(rill_op_builder_finish(b), 0);
    int64_t v[32];
    static const int64_t want[] = {1, 2, 2, 3, 3, 3, 4, 4, 5, 5, 4, 4, 5, 5, 5};
    check_seq(v, drain(g, ds, 0, v, 32, s), want, 15);
    rill_graph_free(g);
    rill_status_free(s);
}

static void test_window_padded_batch(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_output win[5] = {range(g, 0, 10), i64(g, 4), i64(g, 3), i64(g, 1),
                          rill_const_scalar(g, RILL_BOOL, 0, NULL)};
    rill_output w = opn(g, "WindowDataset", win, 5);
    /* flat_map(lambda w: w.batch(4)) */
    rill_output wa = rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "fm/w");
    rill_output bin[3] = {wa, i64(g, 4), rill_const_scalar(g, RILL_BOOL, 0, NULL)};
    rill_identity(g, opn(g, "BatchDatasetV2", bin, 3), "fm/out");
    rill_op_builder *b = fn_op(g, "FlatMapDataset", &w, 1, "fm/w", "fm/out");
    rill_op_builder_set_int(b, "n_components", 1);
    rill_output fm = rill_node_output(rill_op_builder_finish(b), 0);
    int64_t m1 = -1, one = 1;
    rill_tensor *ps = rill_tensor_from_data(RILL_INT64, &one, 1, &m1);
    rill_output pin[5] = {fm, i64(g, 3), rill_const(g, ps, NULL), i64(g, -1),
                          rill_const_scalar(g, RILL_BOOL, 0, NULL)};
    rill_tensor_free(ps);
    b = rill_op_builder_new(g, "PaddedBatchDatasetV2", NULL);
    for (int i = 0; i < 5; i++) rill_op_builder_add_input(b, pin[i]);
    rill_op_builder_set_int(b, "N", 1);
    rill_output pb = rill_node_output(rill_op_builder_finish(b), 0);
    int64_t v[32];
    static const int64_t want[] = {0, 1, 2, 3, 3, 4, 5, 6, 6, 7, 8, 9, 9};
    check_seq(v, drain(g, pb, 2, v, 32, s), want, 13);
    rill_graph_free(g);
    rill_status_free(s);
}

static void test_concat_shard_unique_cache(void)
{
    rill_status *s = rill_status_new();
    char dir[] = "/tmp/rill_ds2_XXXXXX";
    if (!CHECK(mkdtemp(dir) != NULL)) return;
    char file[64], made[80];
    snprintf(file, sizeof file, "%s/c", dir);
    snprintf(made, sizeof made, "%s.rill-cache", file);
    for (int pass = 0; pass < 2; pass++) {
        rill_graph *g = rill_graph_new();
        rill_output cin[2] = {range(g, 0, 7), range(g, 3, 9)}; /* 0..6, 3..8 */
        rill_output c = opn(g, "ConcatenateDataset", cin, 2);
        rill_output sin[3] = {c, i64(g, 2), i64(g, 1)}; /* 1 3 5 3 5 7 */
        rill_output sh = opn(g, "ShardDataset", sin, 3);
        rill_output u2[2] = {sh, range(g, 0, 4)}; /* then 0 1 2 3: 1 and 3 repeat */
        rill_output u =
            opn(g, "UniqueDataset", (rill_output[]){opn(g, "ConcatenateDataset", u2, 2)}, 1);
        rill_tensor *fn = rill_tensor_scalar_string(file);
        rill_output fin[2] = {pass ? range(g, 100, 101) : u, rill_const(g, fn, NULL)};
        rill_tensor_free(fn);
        rill_output cached = opn(g, "CacheDataset", fin, 2);
        int64_t v[32];
        static const int64_t want[] = {1, 3, 5, 7, 0, 2};
        check_seq(v, drain(g, cached, 0, v, 32, s), want, 6); /* pass 1 reads the file */
        CHECK(access(made, R_OK) == 0);
        rill_graph_free(g);
    }
    remove(made);
    rmdir(dir);
    rill_status_free(s);
}

static void test_reduce_single_cardinality_random(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_output st = rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "r/s");
    rill_output el = rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "r/x");
    rill_identity(g, rill_add(g, st, rill_mul(g, el, el, NULL), NULL), "r/out");
    rill_output in[2] = {range(g, 0, 10), i64(g, 5)};
    rill_op_builder *b = rill_op_builder_new(g, "ReduceDataset", NULL);
    rill_op_builder_add_input(b, in[0]);
    rill_op_builder_add_input(b, in[1]);
    static const char *const args[] = {"r/s", "r/x"}, *const outs[] = {"r/out"};
    rill_tensor *a = names(args, 2), *o = names(outs, 1);
    rill_op_builder_set_tensor(b, "f_args", a);
    rill_op_builder_set_tensor(b, "f_outputs", o);
    rill_tensor_free(a);
    rill_tensor_free(o);
    int64_t t = RILL_INT64, sv = 0, one = 1;
    rill_op_builder_set_ints(b, "output_types", &t, 1);
    rill_tensor *shp = rill_tensor_from_data(RILL_INT64, &one, 1, &sv);
    rill_op_builder_set_tensor(b, "output_shapes", shp);
    rill_op_builder_set_int(b, "num_outputs", 1);
    rill_op_builder_set_int(b, "n_state", 1);
    rill_node *red = rill_op_builder_finish(b);
    rill_output r2 = range(g, 3, 5);
    b = rill_op_builder_new(g, "DatasetToSingleElement", NULL);
    rill_op_builder_add_input(b, r2);
    rill_op_builder_set_ints(b, "output_types", &t, 1);
    rill_op_builder_set_tensor(b, "output_shapes", shp);
    rill_op_builder_set_int(b, "num_outputs", 1);
    rill_node *single = rill_op_builder_finish(b);
    rill_tensor_free(shp);
    rill_output rep[2] = {r2, i64(g, -1)};
    rill_output card[2] = {
        opn(g, "DatasetCardinality", &r2, 1),
        opn(g, "DatasetCardinality", (rill_output[]){opn(g, "RepeatDataset", rep, 2)}, 1)};
    b = rill_op_builder_new(g, "RandomDataset", NULL);
    rill_op_builder_set_int(b, "seed", 87654321);
    rill_op_builder_set_int(b, "seed2", 4);
    rill_output rnd = rill_node_output(rill_op_builder_finish(b), 0);
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  %s\n", rill_status_message(rill_graph_status(g)));
        goto out;
    }
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_output f[4] = {rill_node_output(red, 0), rill_node_output(single, 0), card[0], card[1]};
    rill_tensor *v[4];
    if (CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, f, v, 1, NULL, 0, s), RILL_OK)) {
        CHECK_EQ_INT(rill_tensor_get_int64(v[0], 0), 5 + 285);
        rill_tensor_free(v[0]);
    }
    CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, f + 1, v, 1, NULL, 0, s),
                 RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "Dataset had more than one element.");
    if (CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, f + 2, v, 2, NULL, 0, s), RILL_OK)) {
        CHECK_EQ_INT(rill_tensor_get_int64(v[0], 0), 2);
        CHECK_EQ_INT(rill_tensor_get_int64(v[1], 0), -1); /* INFINITE */
        rill_tensor_free(v[0]);
        rill_tensor_free(v[1]);
    }
    rill_session_free(sess);
    /* TF: tf.data.Dataset.random(seed=4) */
    rill_output tin[2] = {rnd, i64(g, 3)};
    int64_t r[4];
    static const int64_t want[] = {3128586565LL, 2023892699LL, 452966358LL};
    check_seq(r, drain(g, opn(g, "TakeDataset", tin, 2), 0, r, 4, s), want, 3);
out:
    rill_graph_free(g);
    rill_status_free(s);
}

static void test_choose_and_capture(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    int64_t sel[] = {0, 1, 1, 0, 3}, d5 = 5;
    rill_tensor *st = rill_tensor_from_data(RILL_INT64, &d5, 1, sel);
    rill_output so = rill_const(g, st, NULL);
    rill_tensor_free(st);
    rill_output din[3] = {opn(g, "TensorSliceDataset", &so, 1), range(g, 0, 5), range(g, 10, 15)};
    rill_output ch = opn(g, "DirectedInterleaveDataset", din, 3);
    int64_t v[8];
    CHECK_EQ_INT(drain(g, ch, 0, v, 8, s), -1);
    CHECK_STR_CONTAINS(rill_status_message(s), "Selector index out of range: 3 >= 2");
    CHECK_EQ_INT(v[0], 0);
    CHECK_EQ_INT(v[1], 10);
    CHECK_EQ_INT(v[3], 1);
    rill_graph_free(g);

    /* map(lambda x: x * p) with p an outer placeholder: p is the op's captured input */
    g = rill_graph_new();
    rill_output p = rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "p");
    rill_output x = rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "fn/x");
    rill_identity(g, rill_mul(g, x, p, NULL), "fn/out");
    rill_output min[2] = {range(g, 0, 3), p};
    rill_op_builder *b = fn_op(g, "MapDataset", min, 2, "fn/x", "fn/out");
    static const char *const caps[] = {"p"};
    rill_tensor *ct = names(caps, 1);
    rill_op_builder_set_tensor(b, "f_captures", ct);
    rill_tensor_free(ct);
    rill_output ds = rill_node_output(rill_op_builder_finish(b), 0);
    rill_output it = opn(g, "IteratorV2", NULL, 0);
    b = rill_op_builder_new(g, "MakeIterator", NULL);
    rill_op_builder_add_input(b, ds);
    rill_op_builder_add_input(b, it);
    rill_node *init = rill_op_builder_finish(b);
    b = rill_op_builder_new(g, "IteratorGetNext", NULL);
    rill_op_builder_add_input(b, it);
    int64_t t = RILL_INT64, zero = 0, one = 1;
    rill_op_builder_set_ints(b, "output_types", &t, 1);
    rill_tensor *shp = rill_tensor_from_data(RILL_INT64, &one, 1, &zero);
    rill_op_builder_set_tensor(b, "output_shapes", shp);
    rill_tensor_free(shp);
    rill_op_builder_set_int(b, "num_outputs", 1);
    rill_node *next = rill_op_builder_finish(b);
    if (!CHECK(rill_graph_ok(g))) goto out;
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_tensor *pv = rill_tensor_scalar_int64(7);
    CHECK_EQ_INT(rill_session_run(sess, &p, &pv, 1, NULL, NULL, 0, &init, 1, s), RILL_OK);
    rill_tensor_free(pv);
    rill_output f = rill_node_output(next, 0);
    for (int i = 0; i < 3; i++) {
        rill_tensor *e;
        if (!CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &f, &e, 1, NULL, 0, s), RILL_OK)) {
            fprintf(stderr, "  %s\n", rill_status_message(s));
            break;
        }
        CHECK_EQ_INT(rill_tensor_get_int64(e, 0), 7 * i);
        rill_tensor_free(e);
    }
    rill_session_free(sess);
out:
    rill_graph_free(g);
    rill_status_free(s);
}

static rill_output str_const(rill_graph *g, const char *v)
{
    rill_tensor *t = rill_tensor_scalar_string(v);
    rill_output o = rill_const(g, t, NULL);
    rill_tensor_free(t);
    return o;
}

/* The string elements of ds, joined by '|' into buf; -1 on an error (s set). */
static int drain_strings(rill_graph *g, rill_output ds, char *buf, size_t cap, rill_status *s)
{
    rill_output it = opn(g, "OneShotIterator", &ds, 1);
    rill_op_builder *b = rill_op_builder_new(g, "IteratorGetNext", NULL);
    rill_op_builder_add_input(b, it);
    int64_t t = RILL_STRING, sv = 0, one = 1;
    rill_op_builder_set_ints(b, "output_types", &t, 1);
    rill_tensor *st = rill_tensor_from_data(RILL_INT64, &one, 1, &sv);
    rill_op_builder_set_tensor(b, "output_shapes", st);
    rill_tensor_free(st);
    rill_op_builder_set_int(b, "num_outputs", 1);
    rill_node *next = rill_op_builder_finish(b);
    if (!CHECK(rill_graph_ok(g))) return -1;
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_output f = rill_node_output(next, 0);
    int n = 0;
    buf[0] = 0;
    for (;;) {
        rill_tensor *e;
        rill_code c = rill_session_run(sess, NULL, NULL, 0, &f, &e, 1, NULL, 0, s);
        if (c == RILL_OUT_OF_RANGE) break;
        if (c != RILL_OK) {
            n = -1;
            break;
        }
        size_t len, at = strlen(buf);
        const char *p = rill_tensor_get_string(e, 0, &len);
        snprintf(buf + at, cap - at, "%s%.*s", n ? "|" : "", (int)len, p);
        n++;
        rill_tensor_free(e);
    }
    rill_session_free(sess);
    return n;
}

static void test_readers(void)
{
    rill_status *s = rill_status_new();
    char dir[] = "/tmp/rill_rd_XXXXXX";
    if (!CHECK(mkdtemp(dir) != NULL)) return;
    char t1[64], t2[64], fb[64];
    snprintf(t1, sizeof t1, "%s/t1.txt", dir);
    snprintf(t2, sizeof t2, "%s/t2.txt", dir);
    snprintf(fb, sizeof fb, "%s/f.bin", dir);
    FILE *f = fopen(t1, "wb");
    fputs("one\r\ntwo\n\nfour", f);
    fclose(f);
    f = fopen(t2, "wb");
    fputs("five\n", f);
    fclose(f);
    f = fopen(fb, "wb");
    fputs("HHabcdefghijklF", f);
    fclose(f);
    char buf[256];
    rill_graph *g = rill_graph_new();
    const char *const files[] = {t1, t2};
    rill_tensor *ft = names(files, 2);
    rill_output tin[3] = {rill_const(g, ft, NULL), str_const(g, ""), i64(g, 1024)};
    rill_tensor_free(ft);
    CHECK_EQ_INT(drain_strings(g, opn(g, "TextLineDataset", tin, 3), buf, sizeof buf, s), 5);
    CHECK(strcmp(buf, "one|two||four|five") == 0);
    rill_graph_free(g);
    for (int bad = 0; bad < 2; bad++) {
        g = rill_graph_new();
        rill_tensor *fn = rill_tensor_scalar_string(fb);
        rill_output fin[6] = {rill_const(g, fn, NULL), i64(g, bad ? 0 : 2), i64(g, bad ? 4 : 3),
                              i64(g, bad ? 0 : 1),     i64(g, 1024),        str_const(g, "")};
        rill_tensor_free(fn);
        int n = drain_strings(g, opn(g, "FixedLengthRecordDatasetV2", fin, 6), buf, sizeof buf, s);
        if (bad) {
            CHECK_EQ_INT(n, -1);
            CHECK_STR_CONTAINS(rill_status_message(s), "has body length 15 bytes, which is not an "
                                                       "exact multiple of the record length (4");
        } else {
            CHECK_EQ_INT(n, 4);
            CHECK(strcmp(buf, "abc|def|ghi|jkl") == 0);
        }
        rill_graph_free(g);
    }
    remove(t1);
    remove(t2);
    remove(fb);
    rmdir(dir);
    rill_status_free(s);
}

/* group_by_window(key x // 3, window 2, reduce w.batch(2)) over range(7), as TF:
 * [0 1] [3 4], then at the end the groups left by key: [2] [5] [6] */
static void test_group_by_window(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_output x = rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "k/x");
    rill_output kin[2] = {x, i64(g, 3)};
    rill_identity(g, opn(g, "FloorDiv", kin, 2), "k/out");
    rill_output w = rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "r/w");
    rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "r/k");
    rill_output bin[3] = {w, i64(g, 2), rill_const_scalar(g, RILL_BOOL, 0, NULL)};
    rill_identity(g, opn(g, "BatchDatasetV2", bin, 3), "r/out");
    rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "w/k");
    rill_identity(g, i64(g, 2), "w/out");
    rill_output r = range(g, 0, 7);
    rill_op_builder *b = rill_op_builder_new(g, "GroupByWindowDataset", NULL);
    rill_op_builder_add_input(b, r);
    static const char *const attrs[][2] = {{"key_args", "k/x"},
                                           {"key_outputs", "k/out"},
                                           {"reduce_outputs", "r/out"},
                                           {"wsize_args", "w/k"},
                                           {"wsize_outputs", "w/out"}};
    for (int i = 0; i < 5; i++) {
        rill_tensor *t = names(&attrs[i][1], 1);
        rill_op_builder_set_tensor(b, attrs[i][0], t);
        rill_tensor_free(t);
    }
    static const char *const rargs[] = {"r/k", "r/w"};
    rill_tensor *t = names(rargs, 2);
    rill_op_builder_set_tensor(b, "reduce_args", t);
    rill_tensor_free(t);
    rill_op_builder_set_int(b, "n_components", 1);
    rill_output ds = rill_node_output(rill_op_builder_finish(b), 0);
    int64_t v[16];
    static const int64_t want[] = {0, 1, 3, 4, 2, 5, 6};
    check_seq(v, drain(g, ds, 1, v, 16, s), want, 7);
    rill_graph_free(g);
    rill_status_free(s);
}

/* StatelessMultinomial (sample_from_datasets' selector) against TF 2.15's
 * tf.raw_ops.StatelessMultinomial(logits, 8, seed=[3, 4]) */
static void test_stateless_multinomial(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    float lv[6] = {0, 1, 2, 2, 0, -1};
    int64_t ld[2] = {2, 3}, sv[2] = {3, 4}, two = 2;
    rill_output lo = rill_const_floats(g, lv, ld, 2, NULL);
    rill_tensor *st = rill_tensor_from_data(RILL_INT64, &two, 1, sv);
    rill_output in[3] = {lo, rill_const_scalar(g, RILL_INT32, 8, NULL), rill_const(g, st, NULL)};
    rill_tensor_free(st);
    rill_output m = opn(g, "StatelessMultinomial", in, 3);
    if (!CHECK(rill_graph_ok(g))) goto out;
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_tensor *v;
    if (CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &m, &v, 1, NULL, 0, s), RILL_OK)) {
        static const int64_t want[] = {2, 2, 1, 2, 2, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        const int64_t *p = rill_tensor_data(v);
        CHECK_EQ_INT(rill_tensor_num_elements(v), 16);
        for (int i = 0; i < 16; i++) CHECK_EQ_INT(p[i], want[i]);
        rill_tensor_free(v);
    }
    rill_session_free(sess);
out:
    rill_graph_free(g);
    rill_status_free(s);
}

int main(void)
{
    test_stateless_multinomial();
    test_group_by_window();
    test_readers();
    test_interleave();
    test_window_padded_batch();
    test_concat_shard_unique_cache();
    test_reduce_single_cardinality_random();
    test_choose_and_capture();
    TEST_MAIN_END();
}
