/* test_summary.c - the summary ops (include/rill/summary.h) and TensorFlow's own event file.
 *
 * Ops: ScalarSummary of every dtype (byte-exact protos), HistogramSummary against a direct
 * computation (statistics, bucket counts re-derived from the values, runs of empty buckets
 * collapsed, empty input), MergeSummary and merge_all, names and tags inside name scopes, and
 * their build-time and run-time errors (bad dtypes and shapes, NaN and infinity, duplicate tags,
 * unparseable inputs).
 *
 * TensorFlow's output: tests/interop/data/tf_events/ holds an event file written by real
 * TensorFlow (tests/interop/make_tf_events.py). rill's reader must see its events, and the same
 * graph built in rill must produce byte-identical Summary protos from the same numbers. The
 * event-file writer and reader on their own are tested in test_events.c.
 */
#include "graph/op_check.h"
#include "summary_check.h"

#include <dirent.h>
#include <float.h>
#include <math.h>

/* The numbers tests/interop/make_tf_events.py gave TensorFlow. */
static const float golden_costs[3] = {1.5f, 0.75f, 0.5f};
#define GOLDEN_NW 10
static void golden_weights(int step, float *w)
{
    const float v[GOLDEN_NW] = {-2.5f, -1e-3f, 0, 0, 1e-13f, 0.5f, 1, 3.75f, 100, 0};
    for (int i = 0; i < GOLDEN_NW; i++) w[i] = v[i];
    w[GOLDEN_NW - 1] = 1e6f * (float)step;
}

/* A placeholder-fed vector of doubles as dtype t. */
static rill_tensor *vector_of(rill_dtype t, const double *v, int64_t n)
{
    return oc_tensor(t, &n, 1, v);
}

/* --- ScalarSummary --- */

static void test_scalar_summary(void)
{
    const rill_dtype types[] = {RILL_FLOAT, RILL_DOUBLE, RILL_INT32, RILL_INT64, RILL_HALF};
    for (int ti = 0; ti < 5; ti++) {
        rill_graph *g = rill_graph_new();
        rill_output c = rill_const_scalar(g, types[ti], -7.5, "c");
        rill_output sc = rill_summary_scalar(g, "cost", c);
        if (!CHECK(sc.node)) {
            rill_graph_free(g);
            continue;
        }
        CHECK_EQ_STR(rill_node_name(sc.node), "cost");
        CHECK_EQ_STR(rill_node_op_type(sc.node), "ScalarSummary");
        CHECK_EQ_INT(rill_output_dtype(sc), RILL_STRING);
        CHECK_EQ_INT(rill_output_shape(sc).rank, 0);
        rill_status *s = rill_status_new();
        rill_tensor *out = run1(g, sc, NULL, NULL, 0, s);
        CHECK_EQ_STR(rill_status_message(s), "");
        tvalue v[2];
        if (CHECK_EQ_INT(parse_summary_tensor(out, v, 2), 1)) {
            CHECK_EQ_STR(v[0].tag, "cost");
            CHECK_EQ_INT(v[0].kind, 1);
            bool is_int = types[ti] == RILL_INT32 || types[ti] == RILL_INT64;
            CHECK_NEAR(v[0].simple, is_int ? -7.0 : -7.5, 0);
            tvalues_free(v, 1);
        }
        /* Byte-exact: Summary{Value{tag "cost", simple_value}} as TF serializes it. */
        size_t n = 0;
        const unsigned char *b =
            out ? (const unsigned char *)rill_tensor_get_string(out, 0, &n) : NULL;
        if (CHECK_EQ_INT(n, 13) && b) {
            const unsigned char head[] = {0x0a, 0x0b, 0x0a, 0x04, 'c', 'o', 's', 't', 0x15};
            CHECK(memcmp(b, head, sizeof head) == 0);
        }
        rill_tensor_free(out);
        rill_status_free(s);
        rill_graph_free(g);
    }

    /* Names: the scope's own name, unique, inside outer scopes; the summaries collection. */
    rill_graph *g = rill_graph_new();
    rill_output x = rill_const_float(g, 2.0f, "x");
    rill_output a = rill_summary_scalar(g, "loss", x);
    rill_output b = rill_summary_scalar(g, "loss", x);
    rill_graph_push_name_scope(g, "train");
    rill_output c = rill_summary_scalar(g, "loss", x);
    rill_graph_pop_name_scope(g);
    rill_output d = rill_summary_scalar(g, "bad name!", x);
    rill_output e = rill_summary_scalar(g, "//lead", x);
    if (CHECK(a.node && b.node && c.node && d.node && e.node)) {
        CHECK_EQ_STR(rill_node_name(a.node), "loss");
        CHECK_EQ_STR(rill_node_name(b.node), "loss_1");
        CHECK_EQ_STR(rill_node_name(c.node), "train/loss");
        CHECK_EQ_STR(rill_node_name(d.node), "bad_name_");
        CHECK_EQ_STR(rill_node_name(e.node), "lead");
        rill_node *members[8];
        CHECK_EQ_INT(rill_graph_get_collection(g, RILL_SUMMARIES_COLLECTION, members, 8), 5);
        CHECK(members[0] == a.node && members[2] == c.node);
        rill_status *s = rill_status_new();
        rill_tensor *out = run1(g, c, NULL, NULL, 0, s);
        tvalue v[1];
        if (CHECK_EQ_INT(parse_summary_tensor(out, v, 1), 1)) {
            CHECK_EQ_STR(v[0].tag, "train/loss");
            CHECK_NEAR(v[0].simple, 2.0, 0);
            tvalues_free(v, 1);
        }
        rill_tensor_free(out);
        rill_status_free(s);
    }
    CHECK(rill_graph_ok(g));
    rill_graph_free(g);
}

/* --- HistogramSummary --- */

/* Checks a histogram against the values it was made of. */
static void check_histogram(const char *label, const tvalue *v, const double *x, int64_t n)
{
    double mn = DBL_MAX, mx = -DBL_MAX, sum = 0, sq = 0;
    for (int64_t i = 0; i < n; i++) {
        mn = x[i] < mn ? x[i] : mn;
        mx = x[i] > mx ? x[i] : mx;
        sum += x[i];
        sq += x[i] * x[i];
    }
    bool ok = CHECK_EQ_INT(v->kind, 2);
    ok &= CHECK_NEAR(v->min, mn, 0);
    ok &= CHECK_NEAR(v->max, mx, 0);
    ok &= CHECK_NEAR(v->num, (double)n, 0);
    ok &= CHECK_NEAR(v->sum, sum, 1e-9 * fabs(sum));
    ok &= CHECK_NEAR(v->sum_squares, sq, 1e-9 * sq);
    ok &= CHECK_EQ_INT(v->nlimits, v->ncounts) && CHECK(v->nlimits >= 1);
    if (!ok) {
        fprintf(stderr, "  in %s\n", label);
        return;
    }
    ok &= CHECK_NEAR(v->limits[v->nlimits - 1], DBL_MAX, 0);
    double total = 0;
    for (size_t j = 0; j < v->ncounts; j++) {
        total += v->counts[j];
        if (j) ok &= CHECK(v->limits[j] > v->limits[j - 1]);
        /* A run of empty buckets is one entry: two empty entries never touch. */
        if (j) ok &= CHECK(v->counts[j] > 0 || v->counts[j - 1] > 0);
    }
    ok &= CHECK_NEAR(total, (double)n, 0);
    /* Every value in the emitted bucket [limit[j-1], limit[j]). */
    double *recount = calloc(v->ncounts, sizeof *recount);
    for (int64_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j + 1 < v->ncounts && !(x[i] < v->limits[j])) j++;
        recount[j] += 1;
    }
    for (size_t j = 0; j < v->ncounts; j++) ok &= CHECK_NEAR(recount[j], v->counts[j], 0);
    free(recount);
    if (!ok) fprintf(stderr, "  in %s\n", label);
}

static void test_histogram_summary(void)
{
    const rill_dtype types[] = {RILL_FLOAT, RILL_DOUBLE, RILL_INT32, RILL_INT64, RILL_HALF};
    enum { N = 5000 };
    double *x = malloc(N * sizeof *x);
    uint64_t st = 12345;
    for (int ti = 0; ti < 5; ti++) {
        rill_dtype t = types[ti];
        for (int i = 0; i < N; i++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            double u = (double)(st >> 11) / 9007199254740992.0;
            double big = t == RILL_HALF ? 1e4 : 1e6; /* half tops out at 65504 */
            double v = (u - 0.3) * (i % 7 == 0 ? big : i % 3 == 0 ? 1e-6 : 10);
            if (i % 11 == 0) v = 0;
            /* The value as the dtype holds it. */
            rill_tensor *one = vector_of(t, &v, 1);
            x[i] = rill_tensor_get_double(one, 0);
            rill_tensor_free(one);
        }
        rill_graph *g = rill_graph_new();
        rill_output ph = rill_placeholder(g, t, rill_shape_unknown(), "x");
        rill_output h = rill_summary_histogram(g, "dist", ph);
        if (!CHECK(h.node)) {
            rill_graph_free(g);
            continue;
        }
        CHECK_EQ_STR(rill_node_op_type(h.node), "HistogramSummary");
        rill_tensor *feed = vector_of(t, x, N);
        rill_status *s = rill_status_new();
        rill_tensor *out = run1(g, h, &ph, &feed, 1, s);
        CHECK_EQ_STR(rill_status_message(s), "");
        tvalue v[1];
        char label[64];
        snprintf(label, sizeof label, "histogram of %s", rill_dtype_name(t));
        if (CHECK_EQ_INT(parse_summary_tensor(out, v, 1), 1)) {
            CHECK_EQ_STR(v[0].tag, "dist");
            check_histogram(label, &v[0], x, N);
            tvalues_free(v, 1);
        }
        rill_tensor_free(out);
        rill_tensor_free(feed);

        /* An empty input: TF's min DBL_MAX, max -DBL_MAX and the single entry (DBL_MAX, 0). */
        rill_tensor *empty = vector_of(t, x, 0);
        out = run1(g, h, &ph, &empty, 1, s);
        if (CHECK_EQ_INT(parse_summary_tensor(out, v, 1), 1)) {
            CHECK_NEAR(v[0].min, DBL_MAX, 0);
            CHECK_NEAR(v[0].max, -DBL_MAX, 0);
            CHECK_NEAR(v[0].num, 0, 0);
            if (CHECK_EQ_INT(v[0].ncounts, 1)) {
                CHECK_NEAR(v[0].limits[0], DBL_MAX, 0);
                CHECK_NEAR(v[0].counts[0], 0, 0);
            }
            tvalues_free(v, 1);
        }
        rill_tensor_free(out);
        rill_tensor_free(empty);

        /* A 2x3 matrix of one value: a single bucket with its empty neighbours. */
        double same[6] = {3, 3, 3, 3, 3, 3};
        rill_tensor *m = rill_tensor_new(t, (int64_t[]){2, 3}, 2);
        rill_tensor *mv = vector_of(t, same, 6);
        memcpy(rill_tensor_data(m), rill_tensor_data(mv), rill_tensor_nbytes(mv));
        out = run1(g, h, &ph, &m, 1, s);
        if (CHECK_EQ_INT(parse_summary_tensor(out, v, 1), 1)) {
            check_histogram("constant matrix", &v[0], same, 6);
            CHECK_EQ_INT(v[0].ncounts, 3);
            tvalues_free(v, 1);
        }
        rill_tensor_free(out);
        rill_tensor_free(m);
        rill_tensor_free(mv);
        rill_status_free(s);
        rill_graph_free(g);
    }
    free(x);

    /* NaN and infinity fail the step, naming the tag. */
    rill_graph *g = rill_graph_new();
    rill_output ph = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(-1), "p");
    rill_graph_push_name_scope(g, "net");
    rill_output h = rill_summary_histogram(g, "w", ph);
    rill_graph_pop_name_scope(g);
    const double bad[2][3] = {{1, NAN, 2}, {1, 2, INFINITY}};
    const char *want[2] = {"Nan in summary histogram for: net/w",
                           "Infinity in summary histogram for: net/w"};
    for (int k = 0; k < 2; k++) {
        rill_tensor *feed = vector_of(RILL_FLOAT, bad[k], 3);
        rill_status *s = rill_status_new();
        rill_tensor *out = run1(g, h, &ph, &feed, 1, s);
        CHECK(out == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), want[k]);
        rill_tensor_free(out);
        rill_tensor_free(feed);
        rill_status_free(s);
    }
    rill_graph_free(g);
}

/* --- MergeSummary, merge_all --- */

static rill_tensor *summary_tensor(const char *tag, float v)
{
    rill__pbw val = {0}, sum = {0};
    rill__pbw_string(&val, 1, tag);
    rill__pbw_float(&val, 2, v);
    rill__pbw_message(&sum, 1, &val);
    rill_tensor *t = rill_tensor_new(RILL_STRING, NULL, 0);
    rill_tensor_set_string(t, 0, (const char *)sum.p, sum.n);
    rill__pbw_free(&val);
    rill__pbw_free(&sum);
    return t;
}

static void test_merge(void)
{
    rill_graph *g = rill_graph_new();
    CHECK(rill_summary_merge_all(g, NULL).node == NULL);
    CHECK(rill_graph_ok(g));
    rill_output x = rill_const_float(g, 0.25f, "x");
    rill_output w = rill_const_floats(g, (float[]){1, 2, 3, 4}, (int64_t[]){2, 2}, 2, "w");
    rill_summary_scalar(g, "a", x);
    rill_summary_histogram(g, "h", w);
    rill_summary_scalar(g, "b", rill_const_scalar(g, RILL_INT64, 9, NULL));
    rill_output all = rill_summary_merge_all(g, NULL);
    if (CHECK(all.node)) {
        CHECK_EQ_STR(rill_node_name(all.node), "Merge/MergeSummary");
        CHECK_EQ_STR(rill_node_op_type(all.node), "MergeSummary");
        CHECK_EQ_INT(rill_node_num_inputs(all.node), 3);
        rill_status *s = rill_status_new();
        rill_tensor *out = run1(g, all, NULL, NULL, 0, s);
        CHECK_EQ_STR(rill_status_message(s), "");
        tvalue v[4];
        if (CHECK_EQ_INT(parse_summary_tensor(out, v, 4), 3)) {
            CHECK_EQ_STR(v[0].tag, "a");
            CHECK_NEAR(v[0].simple, 0.25, 0);
            CHECK_EQ_STR(v[1].tag, "h");
            check_histogram("merged histogram", &v[1], (double[]){1, 2, 3, 4}, 4);
            CHECK_EQ_STR(v[2].tag, "b");
            CHECK_NEAR(v[2].simple, 9, 0);
            tvalues_free(v, 3);
        }
        rill_tensor_free(out);
        rill_status_free(s);
    }
    /* merge does not join the collection; a named merge is "<name>/<name>" as in TF. */
    rill_output named = rill_summary_merge_all(g, "mine");
    if (CHECK(named.node)) CHECK_EQ_STR(rill_node_name(named.node), "mine/mine");
    CHECK_EQ_INT(rill_graph_get_collection(g, RILL_SUMMARIES_COLLECTION, NULL, 0), 3);
    CHECK(rill_graph_ok(g));

    /* Fed summaries: a vector of two, a duplicate tag, bytes that are no Summary. */
    rill_output p1 = rill_placeholder(g, RILL_STRING, rill_shape_unknown(), "s1");
    rill_output p2 = rill_placeholder(g, RILL_STRING, rill_shape_unknown(), "s2");
    rill_output m = rill_summary_merge(g, (rill_output[]){p1, p2}, 2, NULL);
    if (CHECK(m.node)) {
        CHECK_EQ_STR(rill_node_name(m.node), "Merge_1/MergeSummary");
        rill_tensor *ta = summary_tensor("u", 1), *tb = summary_tensor("v", 2);
        rill_tensor *vec = rill_tensor_new(RILL_STRING, (int64_t[]){2}, 1);
        size_t la, lb;
        const char *sa = rill_tensor_get_string(ta, 0, &la),
                   *sb = rill_tensor_get_string(tb, 0, &lb);
        rill_tensor_set_string(vec, 0, sb, lb);
        rill_tensor_set_string(vec, 1, sa, la);
        rill_tensor *w1 = summary_tensor("w", 3);
        rill_status *s = rill_status_new();
        rill_tensor *out = run1(g, m, (rill_output[]){p1, p2}, (rill_tensor *[]){vec, w1}, 2, s);
        tvalue v[4];
        if (CHECK_EQ_INT(parse_summary_tensor(out, v, 4), 3)) {
            CHECK_EQ_STR(v[0].tag, "v");
            CHECK_EQ_STR(v[1].tag, "u");
            CHECK_EQ_STR(v[2].tag, "w");
            tvalues_free(v, 3);
        }
        rill_tensor_free(out);

        out = run1(g, m, (rill_output[]){p1, p2}, (rill_tensor *[]){vec, ta}, 2, s);
        CHECK(out == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), "Duplicate tag u found in summary inputs");

        rill_tensor *junk = rill_tensor_scalar_string("\x0a\x7f"); /* length past the end */
        rill_status_clear(s);
        out = run1(g, m, (rill_output[]){p1, p2}, (rill_tensor *[]){ta, junk}, 2, s);
        CHECK(out == NULL);
        CHECK_STR_CONTAINS(rill_status_message(s), "Could not parse one of the summary inputs");
        rill_tensor_free(junk);
        rill_tensor_free(ta);
        rill_tensor_free(tb);
        rill_tensor_free(vec);
        rill_tensor_free(w1);
        rill_status_free(s);
    }
    rill_graph_free(g);

    /* The same summary merged twice. */
    g = rill_graph_new();
    rill_output a = rill_summary_scalar(g, "twice", rill_const_float(g, 1, NULL));
    rill_output dup = rill_summary_merge(g, (rill_output[]){a, a}, 2, NULL);
    rill_status *s = rill_status_new();
    rill_tensor *out = run1(g, dup, NULL, NULL, 0, s);
    CHECK(out == NULL);
    CHECK_STR_CONTAINS(rill_status_message(s), "Duplicate tag twice found in summary inputs");
    rill_tensor_free(out);
    rill_status_free(s);
    rill_graph_free(g);
}

/* --- build-time errors --- */

static void check_build_error(rill_graph *g, rill_output o, const char *want)
{
    CHECK(o.node == NULL);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)), want);
    rill_graph_clear_status(g);
}

static void test_errors(void)
{
    rill_graph *g = rill_graph_new();
    rill_output bo = rill_const_scalar(g, RILL_BOOL, 1, "bo");
    rill_tensor *xs = rill_tensor_scalar_string("x");
    rill_output str = rill_const(g, xs, "str");
    rill_tensor_free(xs);
    rill_output vec = rill_const_floats(g, (float[]){1, 2}, (int64_t[]){2}, 1, "vec");
    rill_output f = rill_const_float(g, 1, "f");
    CHECK(rill_graph_ok(g));
    check_build_error(g, rill_summary_scalar(g, "s", bo),
                      "Value for attr 'T' of bool is not in the list of allowed values");
    check_build_error(g, rill_summary_histogram(g, "h", str),
                      "Value for attr 'T' of string is not in the list of allowed values");
    check_build_error(g, rill_summary_scalar(g, "s", vec),
                      "tags and values not the same shape: [] != [2] (tag 's");
    check_build_error(g, rill_summary_merge(g, &f, 1, NULL),
                      "Input 'inputs' of 'MergeSummary' Op has type float that does not match "
                      "expected type of string");
    check_build_error(g, rill_summary_merge(g, NULL, 0, NULL),
                      "List argument 'inputs' to 'MergeSummary' Op with length 0 shorter than "
                      "minimum length 1.");
    check_build_error(g, rill_summary_scalar(g, NULL, f), "a summary needs a name");
    check_build_error(g, rill_summary_scalar(g, "///", f), "empty once cleaned");
    /* Nothing failed joined the collection. */
    CHECK_EQ_INT(rill_graph_get_collection(g, RILL_SUMMARIES_COLLECTION, NULL, 0), 0);
    /* Sticky status: a later call does nothing. */
    rill_summary_scalar(g, "s", bo);
    CHECK(rill_summary_scalar(g, "fine", f).node == NULL);
    rill_graph_clear_status(g);

    /* A vector fed where the shape was unknown fails at run time. */
    rill_output ph = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "ph");
    rill_output sc = rill_summary_scalar(g, "late", ph);
    static const double two_values[2] = {1, 2};
    rill_tensor *two = vector_of(RILL_FLOAT, two_values, 2);
    rill_status *s = rill_status_new();
    rill_tensor *out = run1(g, sc, &ph, &two, 1, s);
    CHECK(out == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "tags and values not the same shape: [] != [2]");
    rill_tensor_free(two);
    rill_status_free(s);
    rill_graph_free(g);
}

/* --- TensorFlow's golden event file --- */

static char *golden_file(void)
{
    char *src = source_dir();
    char *dir = rill__asprintf("%s/tests/interop/data/tf_events", src);
    rill__free(src);
    char *found = NULL;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strncmp(e->d_name, "events.out.tfevents.", 20) == 0 && !found)
            found = rill__asprintf("%s/%s", dir, e->d_name);
    if (d) closedir(d);
    rill__free(dir);
    return found;
}

/* The Summary bytes of the summary event at step, from the raw file. */
static bool golden_summary_at(const unsigned char *p, size_t n, int64_t step, const uint8_t **out,
                              size_t *len)
{
    size_t ends[64], start = 0;
    int k = record_ends(p, n, ends, 64);
    for (int i = 0; i < k; start = ends[i++]) {
        rill__pbr r = rill__pbr_make(p + start + 12, ends[i] - start - 16);
        rill__pbfield f;
        int64_t s = 0;
        const uint8_t *sum = NULL;
        size_t sl = 0;
        while (rill__pbr_next(&r, &f)) {
            if (f.field == 2) s = (int64_t)f.u;
            if (f.field == 5) sum = f.b, sl = f.blen;
        }
        if (sum && s == step) {
            *out = sum;
            *len = sl;
            return true;
        }
    }
    return false;
}

static void test_golden(void)
{
    char *path = golden_file();
    if (!CHECK(path != NULL)) return;
    rill_status *s = rill_status_new();
    rill_event_reader *r = rill_event_reader_new(path, s);
    rill_event *ev = malloc(sizeof *ev);
    if (!CHECK(r != NULL)) goto out;
    /* Version, graph, meta graph, START at 1, then the merged summary at steps 1..3. */
    if (CHECK_EQ_INT(rill_event_reader_next(r, ev, s), 1)) {
        CHECK_EQ_INT(ev->kind, RILL_EVENT_FILE_VERSION);
        CHECK_EQ_STR(ev->file_version, "brain.Event:2");
        CHECK(ev->wall_time > 1.5e9 && ev->wall_time == floor(ev->wall_time));
    }
    int others = 0, summaries = 0, logs = 0, rc;
    while ((rc = rill_event_reader_next(r, ev, s)) == 1) {
        if (ev->kind == RILL_EVENT_OTHER) others++;
        if (ev->kind == RILL_EVENT_SESSION_LOG) {
            logs++;
            CHECK_EQ_INT(ev->session_log_status, RILL_SESSION_LOG_START);
            CHECK_EQ_INT(ev->step, 1);
            CHECK(summaries == 0);
        }
        if (ev->kind != RILL_EVENT_SUMMARY) continue;
        summaries++;
        CHECK(ev->has_step);
        CHECK_EQ_INT(ev->step, summaries);
        if (!CHECK_EQ_INT(ev->nvalues, 2)) continue;
        CHECK_EQ_STR(ev->values[0].tag, "cost");
        CHECK_EQ_INT(ev->values[0].kind, RILL_VALUE_SIMPLE);
        CHECK_NEAR(ev->values[0].simple_value, golden_costs[summaries - 1], 0);
        CHECK_EQ_STR(ev->values[1].tag, "layer1/weights");
        CHECK_EQ_INT(ev->values[1].kind, RILL_VALUE_HISTO);
        CHECK_NEAR(ev->values[1].histo_num, 10, 0);
        CHECK_NEAR(ev->values[1].histo_min, -2.5, 0);
        CHECK_NEAR(ev->values[1].histo_max, 1e6 * summaries, 0);
        CHECK_NEAR(ev->values[1].histo_bucket_total, 10, 0);
        CHECK_EQ_INT(ev->values[1].histo_nbuckets, 17);
    }
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(others, 2);
    CHECK_EQ_INT(logs, 1);
    CHECK_EQ_INT(summaries, 3);

    /* The same graph in rill gives TF's bytes. */
    size_t n;
    unsigned char *raw = slurp(path, &n);
    rill_graph *g = rill_graph_new();
    rill_output cost = rill_placeholder(g, RILL_FLOAT, rill_shape_scalar(), "cost_in");
    rill_output w = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(-1), "w_in");
    rill_summary_scalar(g, "cost", cost);
    rill_graph_push_name_scope(g, "layer1");
    rill_output h = rill_summary_histogram(g, "weights", w);
    rill_graph_pop_name_scope(g);
    rill_output merged = rill_summary_merge_all(g, NULL);
    if (CHECK(merged.node) && CHECK(h.node)) {
        CHECK_EQ_STR(rill_node_name(h.node), "layer1/weights");
        CHECK_EQ_STR(rill_node_name(merged.node), "Merge/MergeSummary");
        for (int step = 1; step <= 3; step++) {
            float wv[GOLDEN_NW];
            golden_weights(step, wv);
            rill_tensor *fc = rill_tensor_scalar_float(golden_costs[step - 1]);
            rill_tensor *fw = rill_tensor_from_data(RILL_FLOAT, (int64_t[]){GOLDEN_NW}, 1, wv);
            rill_tensor *out =
                run1(g, merged, (rill_output[]){cost, w}, (rill_tensor *[]){fc, fw}, 2, s);
            const uint8_t *want = NULL;
            size_t wlen = 0, glen = 0;
            const char *got = out ? rill_tensor_get_string(out, 0, &glen) : NULL;
            if (CHECK(got) && CHECK(golden_summary_at(raw, n, step, &want, &wlen))) {
                CHECK_EQ_INT(glen, wlen);
                if (!CHECK(glen == wlen && memcmp(got, want, wlen) == 0))
                    fprintf(stderr, "  rill's summary at step %d differs from TensorFlow's\n",
                            step);
            }
            rill_tensor_free(out);
            rill_tensor_free(fc);
            rill_tensor_free(fw);
        }
    }
    rill_graph_free(g);
    free(raw);
out:
    free(ev);
    rill_event_reader_free(r);
    rill_status_free(s);
    rill__free(path);
}

int main(void)
{
    test_scalar_summary();
    test_histogram_summary();
    test_merge();
    test_errors();
    test_golden();
    TEST_MAIN_END();
}
