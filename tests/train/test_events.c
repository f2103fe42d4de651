/* test_events.c - event files: rill_summary_writer and rill_event_reader (rill/summary.h).
 *
 * Writer -> reader round trip (the file name pattern, the version event, steps, wall times,
 * session logs, refused summaries); every truncation of a file (the whole records, then a clean
 * end) and every byte flipped three ways (DATA_LOSS at the damaged record, naming the file and
 * the record's offset); hand-made hostile records with valid checksums; a reader following a
 * file being written; the writer's file deleted under it (a new file takes the events); a write
 * failing part-way (reported, the partial record cut off); two threads writing 1000 events each
 * through one writer. Finally TensorFlow (the project's .venv) reads a file rill wrote, directly
 * and through tests/interop/read_rill_events.py; without the .venv that part is skipped, or fails
 * where test_required("RILL_REQUIRE_VENV") (CI=true, or RILL_REQUIRE_VENV=1).
 */
#include "summary_check.h"

#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/rill_test_events_XXXXXX";

static char *tmp_path(const char *name)
{
    return rill__asprintf("%s/%s", tmpdir, name);
}

static void spill(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!CHECK(f != NULL)) return;
    if (n) CHECK_EQ_INT(fwrite(p, 1, n, f), n);
    fclose(f);
}

static uint32_t masked_crc(const void *p, size_t n)
{
    uint32_t c = rill__crc32c(0, p, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/* Appends one TFRecord holding data to w. */
static void frame(rill__pbw *w, const void *data, size_t n)
{
    uint8_t h[12], f[4];
    for (int i = 0; i < 8; i++) h[i] = (uint8_t)((uint64_t)n >> (8 * i));
    uint32_t c = masked_crc(h, 8);
    for (int i = 0; i < 4; i++) h[8 + i] = (uint8_t)(c >> (8 * i));
    c = masked_crc(data, n);
    for (int i = 0; i < 4; i++) f[i] = (uint8_t)(c >> (8 * i));
    rill__pbw_raw(w, h, 12);
    rill__pbw_raw(w, data, n);
    rill__pbw_raw(w, f, 4);
}

/* --- writer -> reader --- */

static bool name_matches(const char *path, const char *logdir, const char *suffix, time_t t0,
                         time_t t1, long long *stamp)
{
    size_t ld = strlen(logdir);
    if (strncmp(path, logdir, ld) != 0 || path[ld] != '/') return false;
    const char *b = path + ld + 1;
    if (strncmp(b, "events.out.tfevents.", 20) != 0) return false;
    b += 20;
    for (int i = 0; i < 10; i++)
        if (b[i] < '0' || b[i] > '9') return false;
    *stamp = strtoll(b, NULL, 10);
    if (*stamp < (long long)t0 || *stamp > (long long)t1 || b[10] != '.') return false;
    char host[256] = "";
    gethostname(host, sizeof host);
    host[255] = 0;
    char *want = rill__asprintf("%s%s", host, suffix);
    bool ok = strcmp(b + 11, want) == 0;
    rill__free(want);
    return ok;
}

static void test_round_trip(void)
{
    char *logdir = tmp_path("round/trip/logs"); /* parents created too */
    rill_status *s = rill_status_new();
    time_t t0 = time(NULL);
    rill_summary_writer *w = rill_summary_writer_new(logdir, ".v2", s);
    if (!CHECK(w != NULL)) {
        fprintf(stderr, "  %s\n", rill_status_message(s));
        goto out;
    }
    /* A summary from the ops. */
    rill_graph *g = rill_graph_new();
    rill_output sc = rill_summary_scalar(g, "acc", rill_const_float(g, 0.875f, NULL));
    rill_tensor *sum = run1(g, sc, NULL, NULL, 0, s);
    CHECK(sum != NULL);

    CHECK(rill_summary_writer_add_session_log(w, RILL_SESSION_LOG_START, NULL, 0, s));
    CHECK(rill_summary_writer_add_scalar(w, "loss", 0.5, 1, s));
    CHECK(rill_summary_writer_add_summary(w, sum, 2, s));
    CHECK(rill_summary_writer_add_session_log(w, RILL_SESSION_LOG_CHECKPOINT, "/tmp/x/model.ckpt",
                                              2, s));
    CHECK(rill_summary_writer_add_scalar(w, "loss", -3.25, (int64_t)1 << 40, s));
    CHECK(rill_summary_writer_add_session_log(w, RILL_SESSION_LOG_STOP, NULL, -1, s));
    /* Refused, nothing written. */
    rill_tensor *notsum = rill_tensor_scalar_string("\xff\xff\xff");
    rill_tensor *flt = rill_tensor_scalar_float(1);
    CHECK(!rill_summary_writer_add_summary(w, notsum, 3, s));
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "not a serialized Summary");
    CHECK(!rill_summary_writer_add_summary(w, flt, 3, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "got float []");
    CHECK(!rill_summary_writer_add_scalar(w, "", 1, 3, s));
    CHECK(!rill_summary_writer_add_session_log(w, (rill_session_log_status)7, NULL, 3, s));
    rill_status_clear(s);
    CHECK(rill_summary_writer_flush(w, s));
    time_t t1 = time(NULL);

    char *path = rill__strdup(rill_summary_writer_path(w));
    long long stamp = 0;
    if (!CHECK(name_matches(path, logdir, ".v2", t0, t1, &stamp)))
        fprintf(stderr, "  file name: %s\n", path);
    rill_summary_writer_free(w);

    rill_event_reader *r = rill_event_reader_new(path, s);
    rill_event *ev = malloc(sizeof *ev);
    if (CHECK(r != NULL)) {
        const int kinds[] = {RILL_EVENT_FILE_VERSION, RILL_EVENT_SESSION_LOG, RILL_EVENT_SUMMARY,
                             RILL_EVENT_SUMMARY,      RILL_EVENT_SESSION_LOG, RILL_EVENT_SUMMARY,
                             RILL_EVENT_SESSION_LOG};
        const int64_t steps[] = {0, 0, 1, 2, 2, (int64_t)1 << 40, 0};
        double last = 0;
        for (int i = 0; i < 7; i++) {
            if (!CHECK_EQ_INT(rill_event_reader_next(r, ev, s), 1)) break;
            CHECK_EQ_INT(ev->kind, kinds[i]);
            CHECK_EQ_INT(ev->step, steps[i]);
            CHECK_EQ_INT(ev->has_step, steps[i] != 0);
            CHECK(ev->wall_time >= (double)t0 && ev->wall_time < (double)t1 + 1);
            CHECK(ev->wall_time >= last);
            last = ev->wall_time;
            if (i == 0) {
                CHECK_EQ_STR(ev->file_version, "brain.Event:2");
                CHECK_NEAR(ev->wall_time, (double)stamp, 0); /* whole seconds */
            }
        }
        /* Spot checks of contents, re-reading from the start. */
        rill_event_reader_free(r);
        r = rill_event_reader_new(path, s);
        int i = 0;
        while (rill_event_reader_next(r, ev, s) == 1) {
            if (i == 1) CHECK_EQ_INT(ev->session_log_status, RILL_SESSION_LOG_START);
            if (i == 2) {
                CHECK_EQ_INT(ev->nvalues, 1);
                CHECK_EQ_STR(ev->values[0].tag, "loss");
                CHECK_NEAR(ev->values[0].simple_value, 0.5, 0);
            }
            if (i == 3) {
                CHECK_EQ_STR(ev->values[0].tag, "acc");
                CHECK_NEAR(ev->values[0].simple_value, 0.875, 0);
            }
            if (i == 4) {
                CHECK_EQ_INT(ev->session_log_status, RILL_SESSION_LOG_CHECKPOINT);
                CHECK_EQ_STR(ev->checkpoint_path, "/tmp/x/model.ckpt");
            }
            if (i == 5) CHECK_NEAR(ev->values[0].simple_value, -3.25, 0);
            if (i == 6) CHECK_EQ_INT(ev->session_log_status, RILL_SESSION_LOG_STOP);
            i++;
        }
        CHECK_EQ_INT(i, 7);
        CHECK_EQ_INT(rill_event_reader_next(r, ev, s), 0); /* the end stays the end */
        CHECK(rill_status_ok(s));
    }
    free(ev);
    rill_event_reader_free(r);
    rill__free(path);
    rill_tensor_free(notsum);
    rill_tensor_free(flt);
    rill_tensor_free(sum);
    rill_graph_free(g);

    /* Errors name the path. */
    char *afile = tmp_path("afile");
    spill(afile, "x", 1);
    char *under = rill__asprintf("%s/logs", afile);
    CHECK(rill_summary_writer_new(under, NULL, s) == NULL);
    CHECK(!rill_status_ok(s));
    CHECK_STR_CONTAINS(rill_status_message(s), afile);
    CHECK(rill_summary_writer_new("", NULL, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    char *missing = tmp_path("no_such_file");
    CHECK(rill_event_reader_new(missing, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
    CHECK_STR_CONTAINS(rill_status_message(s), missing);
    CHECK(rill_event_reader_new(tmpdir, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_FAILED_PRECONDITION);
    rill_summary_writer_free(NULL);
    rill_event_reader_free(NULL);
    rill__free(missing);
    rill__free(under);
    rill__free(afile);
out:
    rill_status_free(s);
    rill__free(logdir);
}

/* --- damaged files --- */

/* Reads path to its end; returns the final rc and the number of events before it. */
static int read_to_end(const char *path, int *nevents, rill_status *s)
{
    *nevents = 0;
    rill_event_reader *r = rill_event_reader_new(path, s);
    if (!r) return -2;
    rill_event *ev = malloc(sizeof *ev);
    int rc;
    while ((rc = rill_event_reader_next(r, ev, s)) == 1 && *nevents < 1000) (*nevents)++;
    free(ev);
    rill_event_reader_free(r);
    return rc;
}

/* A small file with every kind of event, written by rill. */
static unsigned char *sample_file(size_t *n)
{
    char *logdir = tmp_path("sample");
    rill_status *s = rill_status_new();
    rill_summary_writer *w = rill_summary_writer_new(logdir, NULL, s);
    unsigned char *bytes = NULL;
    *n = 0;
    if (CHECK(w != NULL)) {
        rill_graph *g = rill_graph_new();
        rill_output h = rill_summary_histogram(
            g, "h", rill_const_floats(g, (float[]){-1, 0, 2.5}, (int64_t[]){3}, 1, NULL));
        rill_tensor *t = run1(g, h, NULL, NULL, 0, s);
        CHECK(rill_summary_writer_add_session_log(w, RILL_SESSION_LOG_START, NULL, 1, s));
        CHECK(rill_summary_writer_add_scalar(w, "loss", 1.25, 1, s));
        CHECK(t && rill_summary_writer_add_summary(w, t, 2, s));
        CHECK(rill_summary_writer_add_session_log(w, RILL_SESSION_LOG_CHECKPOINT, "ck", 2, s));
        char *path = rill__strdup(rill_summary_writer_path(w));
        rill_summary_writer_free(w);
        bytes = slurp(path, n);
        rill__free(path);
        rill_tensor_free(t);
        rill_graph_free(g);
    }
    rill_status_free(s);
    rill__free(logdir);
    return bytes;
}

static void test_corruption(void)
{
    size_t n;
    unsigned char *file = sample_file(&n);
    size_t ends[16];
    int nrec = record_ends(file, n, ends, 16);
    if (!CHECK_EQ_INT(nrec, 5) || !CHECK_EQ_INT(ends[nrec - 1], n)) {
        free(file);
        return;
    }
    char *path = tmp_path("damaged.tfevents");
    rill_status *s = rill_status_new();

    /* Truncated at every length: the complete records, then a clean end. */
    int bad = 0;
    for (size_t len = 0; len < n; len++) {
        spill(path, file, len);
        int whole = 0;
        while (whole < nrec && ends[whole] <= len) whole++;
        int got;
        int rc = read_to_end(path, &got, s);
        if (rc != 0 || got != whole) bad++;
    }
    CHECK_EQ_INT(bad, 0);

    /* Every byte flipped three ways: the records before it, then DATA_LOSS naming the file and
     * the damaged record's offset. */
    bad = 0;
    const unsigned char masks[] = {0x01, 0x80, 0xff};
    for (size_t i = 0; i < n; i++) {
        int k = 0;
        while (ends[k] <= i) k++;
        size_t rec_off = k ? ends[k - 1] : 0;
        char where[64];
        snprintf(where, sizeof where, "byte offset %zu", rec_off);
        for (int m = 0; m < 3; m++) {
            file[i] ^= masks[m];
            spill(path, file, n);
            file[i] ^= masks[m];
            int got;
            int rc = read_to_end(path, &got, s);
            bool ok = rc == -1 && got == k && rill_status_code(s) == RILL_DATA_LOSS &&
                      strstr(rill_status_message(s), path) && strstr(rill_status_message(s), where);
            if (!ok && bad++ < 5)
                fprintf(stderr, "  byte %zu ^ 0x%02x: rc %d after %d events: %s\n", i, masks[m], rc,
                        got, rill_status_message(s));
        }
    }
    CHECK_EQ_INT(bad, 0);

    /* A reader after -1 keeps failing. */
    file[ends[1] + 13] ^= 1;
    spill(path, file, n);
    file[ends[1] + 13] ^= 1;
    rill_event_reader *r = rill_event_reader_new(path, s);
    rill_event *ev = malloc(sizeof *ev);
    CHECK_EQ_INT(rill_event_reader_next(r, ev, s), 1);
    CHECK_EQ_INT(rill_event_reader_next(r, ev, s), 1);
    CHECK_EQ_INT(rill_event_reader_next(r, ev, s), -1);
    CHECK_STR_CONTAINS(rill_status_message(s), "bad data checksum");
    rill_status_clear(s);
    CHECK_EQ_INT(rill_event_reader_next(r, ev, s), -1);
    CHECK_EQ_INT(rill_status_code(s), RILL_DATA_LOSS);
    rill_event_reader_free(r);

    /* Following a file being written: a partial record is "not yet", then it is read. */
    rill_status_clear(s);
    spill(path, file, ends[2] + 7);
    r = rill_event_reader_new(path, s);
    int got = 0;
    while (rill_event_reader_next(r, ev, s) == 1) got++;
    CHECK_EQ_INT(got, 3);
    spill(path, file, n); /* the writer finished it */
    while (rill_event_reader_next(r, ev, s) == 1) got++;
    CHECK_EQ_INT(got, 5);
    CHECK(rill_status_ok(s));
    rill_event_reader_free(r);

    /* Hand-made hostile records with correct checksums. */
    struct {
        const char *what;
        unsigned char bytes[24];
        size_t n;
    } cases[] = {
        {"a truncated varint", {0x10, 0xff}, 2},
        {"a length past the end", {0x1a, 0x7f, 'a'}, 3},
        {"a group wire type", {0x0b}, 1},
        {"field number 0", {0x02, 0x00}, 2},
        /* summary{value{histo{bucket: 5 bytes of packed doubles}}} */
        {"a ragged packed field",
         {0x2a, 0x0b, 0x0a, 0x09, 0x2a, 0x07, 0x3a, 0x05, 1, 2, 3, 4, 5},
         13},
        {"a malformed session log", {0x3a, 0x02, 0x08, 0xff}, 4},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rill__pbw w = {0};
        rill__pbw_raw(&w, file, ends[0]); /* the version event first */
        frame(&w, cases[c].bytes, cases[c].n);
        spill(path, w.p, w.n);
        int rc = read_to_end(path, &got, s);
        if (!CHECK(rc == -1 && got == 1)) fprintf(stderr, "  case: %s\n", cases[c].what);
        CHECK_STR_CONTAINS(rill_status_message(s), "malformed Event proto");
        rill__pbw_free(&w);
    }
    /* Unknown fields, wrong wire types and an empty record are fine; 70 values are counted. */
    rill__pbw w = {0}, sum = {0}, evb = {0};
    for (int i = 0; i < 70; i++) {
        rill__pbw val = {0};
        char tag[16];
        snprintf(tag, sizeof tag, "t%d", i);
        rill__pbw_string(&val, 1, tag);
        rill__pbw_float(&val, 2, (float)i);
        rill__pbw_message(&sum, 1, &val);
        rill__pbw_free(&val);
    }
    rill__pbw_varint(&evb, 1, 5);  /* wall_time with a varint wire type: ignored */
    rill__pbw_varint(&evb, 99, 5); /* unknown */
    rill__pbw_sint(&evb, 2, -4);
    rill__pbw_message(&evb, 5, &sum);
    frame(&w, "", 0);
    frame(&w, evb.p, evb.n);
    spill(path, w.p, w.n);
    r = rill_event_reader_new(path, s);
    if (CHECK_EQ_INT(rill_event_reader_next(r, ev, s), 1)) CHECK_EQ_INT(ev->kind, RILL_EVENT_OTHER);
    if (CHECK_EQ_INT(rill_event_reader_next(r, ev, s), 1)) {
        CHECK_EQ_INT(ev->kind, RILL_EVENT_SUMMARY);
        CHECK_EQ_INT(ev->step, -4);
        CHECK_EQ_INT(ev->nvalues, RILL_EVENT_MAX_VALUES);
        CHECK_EQ_INT(ev->nvalues_omitted, 70 - RILL_EVENT_MAX_VALUES);
        CHECK_EQ_STR(ev->values[63].tag, "t63");
    }
    CHECK_EQ_INT(rill_event_reader_next(r, ev, s), 0);
    rill_event_reader_free(r);
    rill__pbw_free(&w);
    rill__pbw_free(&sum);
    rill__pbw_free(&evb);

    /* A valid length checksum on an absurd length is a record not written yet. */
    uint8_t head[12] = {0, 0, 0, 0, 0, 0, 0, 0x10};
    uint32_t c = masked_crc(head, 8);
    for (int i = 0; i < 4; i++) head[8 + i] = (uint8_t)(c >> (8 * i));
    rill__pbw_raw(&w, head, 12);
    rill__pbw_raw(&w, "abcdef", 6);
    spill(path, w.p, w.n);
    CHECK_EQ_INT(read_to_end(path, &got, s), 0);
    CHECK_EQ_INT(got, 0);
    rill__pbw_free(&w);

    free(ev);
    rill_status_free(s);
    rill__free(path);
    free(file);
}

/* --- the file deleted under the writer --- */

static int count_events(const char *path)
{
    int got;
    rill_status *s = rill_status_new();
    int rc = read_to_end(path, &got, s);
    rill_status_free(s);
    return rc == 0 ? got : -1;
}

static void test_file_disappears(void)
{
    char *logdir = tmp_path("vanish");
    rill_status *s = rill_status_new();
    rill_summary_writer *w = rill_summary_writer_new(logdir, NULL, s);
    if (!CHECK(w != NULL)) goto out;
    CHECK(rill_summary_writer_add_scalar(w, "a", 1, 1, s));
    CHECK(rill_summary_writer_flush(w, s));
    char *first = rill__strdup(rill_summary_writer_path(w));
    CHECK_EQ_INT(count_events(first), 2);

    /* Deleted with events pending: the next flush starts a new file holding them. */
    CHECK(rill_summary_writer_add_scalar(w, "a", 2, 2, s));
    CHECK_EQ_INT(unlink(first), 0);
    CHECK(rill_summary_writer_add_scalar(w, "a", 3, 3, s));
    CHECK(rill_summary_writer_flush(w, s));
    const char *second = rill_summary_writer_path(w);
    CHECK(access(second, R_OK) == 0);
    rill_event_reader *r = rill_event_reader_new(second, s);
    rill_event *ev = malloc(sizeof *ev);
    if (CHECK(r != NULL)) {
        CHECK_EQ_INT(rill_event_reader_next(r, ev, s), 1);
        CHECK_EQ_INT(ev->kind, RILL_EVENT_FILE_VERSION);
        for (int step = 2; step <= 3; step++) {
            CHECK_EQ_INT(rill_event_reader_next(r, ev, s), 1);
            CHECK_EQ_INT(ev->step, step);
        }
        CHECK_EQ_INT(rill_event_reader_next(r, ev, s), 0);
    }
    rill_event_reader_free(r);

    /* Deleted with nothing pending: the next write opens a new file. */
    CHECK_EQ_INT(unlink(second), 0);
    CHECK(rill_summary_writer_flush(w, s));
    CHECK(rill_summary_writer_add_scalar(w, "a", 4, 4, s));
    rill_summary_writer_free(w);
    DIR *d = opendir(logdir);
    int files = 0;
    char *third = NULL;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strncmp(e->d_name, "events.out.tfevents.", 20) == 0) {
            files++;
            third = rill__asprintf("%s/%s", logdir, e->d_name);
        }
    if (d) closedir(d);
    CHECK_EQ_INT(files, 1);
    if (third) CHECK_EQ_INT(count_events(third), 2);
    rill__free(third);
    free(ev);
    rill__free(first);
out:
    rill_status_free(s);
    rill__free(logdir);
}

/* --- a write that fails --- */

/* RLIMIT_FSIZE makes write() fail part-way (EFBIG, with SIGXFSZ ignored): the writer must
 * report it naming the file and cut the partial record off, so that what follows is readable. */
static void test_write_failure(void)
{
    char *logdir = tmp_path("full");
    rill_status *s = rill_status_new();
    rill_summary_writer *w = rill_summary_writer_new(logdir, NULL, s);
    if (!CHECK(w != NULL)) goto out;
    CHECK(rill_summary_writer_add_scalar(w, "a", 1, 1, s));
    CHECK(rill_summary_writer_flush(w, s));
    const char *path = rill_summary_writer_path(w);
    struct stat st;
    CHECK_EQ_INT(stat(path, &st), 0);
    struct rlimit old, small;
    getrlimit(RLIMIT_FSIZE, &old);
    small = old;
    small.rlim_cur = (rlim_t)st.st_size + 60; /* room for one and a half events */
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &small);
    for (int step = 2; step <= 6; step++) CHECK(rill_summary_writer_add_scalar(w, "a", 2, step, s));
    bool flushed = rill_summary_writer_flush(w, s);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    CHECK(!flushed);
    CHECK_STR_CONTAINS(rill_status_message(s), "Failed to flush 5 events to ");
    CHECK_STR_CONTAINS(rill_status_message(s), path);
    struct stat after;
    CHECK_EQ_INT(stat(path, &after), 0);
    CHECK_EQ_INT(after.st_size, st.st_size);
    rill_status_clear(s);
    CHECK(rill_summary_writer_add_scalar(w, "a", 7, 7, s));
    CHECK(rill_summary_writer_flush(w, s));
    CHECK_EQ_INT(count_events(path), 3); /* version, step 1, step 7 */
    rill_summary_writer_free(w);
out:
    rill_status_free(s);
    rill__free(logdir);
}

/* --- two threads --- */

typedef struct writer_arg {
    rill_summary_writer *w;
    const char *tag;
    int failures;
} writer_arg;

static void *writer_thread(void *p)
{
    writer_arg *a = p;
    rill_status *s = rill_status_new();
    for (int i = 1; i <= 1000; i++) {
        if (!rill_summary_writer_add_scalar(a->w, a->tag, i * 0.5, i, s)) a->failures++;
        if (i % 250 == 0 && !rill_summary_writer_flush(a->w, s)) a->failures++;
    }
    rill_status_free(s);
    return NULL;
}

static void test_threads(void)
{
    char *logdir = tmp_path("threads");
    rill_status *s = rill_status_new();
    rill_summary_writer *w = rill_summary_writer_new(logdir, NULL, s);
    if (!CHECK(w != NULL)) goto out;
    writer_arg args[2] = {{w, "thread0", 0}, {w, "thread1", 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, writer_thread, &args[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CHECK_EQ_INT(args[0].failures + args[1].failures, 0);
    char *path = rill__strdup(rill_summary_writer_path(w));
    rill_summary_writer_free(w);

    rill_event_reader *r = rill_event_reader_new(path, s);
    rill_event *ev = malloc(sizeof *ev);
    int64_t next[2] = {1, 1};
    int total = 0, rc = -3, disorder = 0;
    while (r && (rc = rill_event_reader_next(r, ev, s)) == 1) {
        total++;
        if (ev->kind != RILL_EVENT_SUMMARY) continue;
        int t = strcmp(ev->values[0].tag, "thread1") == 0;
        if (ev->step != next[t] || ev->values[0].simple_value != (float)(ev->step * 0.5))
            disorder++;
        next[t] = ev->step + 1;
    }
    CHECK(r && rc == 0);
    CHECK_EQ_INT(total, 2001);
    CHECK_EQ_INT(disorder, 0);
    CHECK_EQ_INT(next[0], 1001);
    CHECK_EQ_INT(next[1], 1001);
    free(ev);
    rill_event_reader_free(r);
    rill__free(path);
out:
    rill_status_free(s);
    rill__free(logdir);
}

/* --- TensorFlow reads rill's file --- */

static char *run_capture(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    size_t cap = 4096, n = 0;
    char *out = malloc(cap);
    size_t k;
    while ((k = fread(out + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (n + 1 == cap) out = realloc(out, cap *= 2);
    }
    out[n] = 0;
    int st = pclose(p);
    if (st != 0) {
        fprintf(stderr, "  `%s` exited with %d:\n%s\n", cmd, st, out);
        free(out);
        return NULL;
    }
    return out;
}

static void test_tensorflow_reads_rill(void)
{
    char *src = source_dir();
    char *py = rill__asprintf("%s/.venv/bin/python", src);
    if (access(py, X_OK) != 0) {
        /* `make test` makes the venv first; there (CI, RILL_REQUIRE_VENV=1) it must exist. */
        if (test_required("RILL_REQUIRE_VENV")) {
            CHECK(!"the project's virtualenv exists");
            fprintf(stderr, "  %s is missing (make venv creates it)\n", py);
        } else {
            TEST_SKIP_PART("TensorFlow reads rill's event file",
                           "%s is missing (make venv creates it)", py);
        }
        goto out;
    }
    char *logdir = tmp_path("for_tf");
    rill_status *s = rill_status_new();
    rill_summary_writer *w = rill_summary_writer_new(logdir, NULL, s);
    char *path = NULL;
    if (CHECK(w != NULL)) {
        rill_graph *g = rill_graph_new();
        rill_output sc = rill_summary_scalar(g, "cost", rill_const_float(g, 1.5f, NULL));
        rill_output h = rill_summary_histogram(
            g, "w", rill_const_floats(g, (float[]){1, 2, 3}, (int64_t[]){3}, 1, NULL));
        rill_output m = rill_summary_merge(g, (rill_output[]){sc, h}, 2, NULL);
        rill_tensor *t = run1(g, m, NULL, NULL, 0, s);
        CHECK(rill_summary_writer_add_session_log(w, RILL_SESSION_LOG_START, NULL, 1, s));
        CHECK(rill_summary_writer_add_scalar(w, "loss", 0.5, 1, s));
        CHECK(rill_summary_writer_add_scalar(w, "loss", 0.25, 2, s));
        CHECK(t && rill_summary_writer_add_summary(w, t, 3, s));
        /* A graph for TensorBoard's graph tab: inputs by index, a control input, a device. */
        rill_graph *gg = rill_graph_new();
        rill_output x = rill_placeholder(gg, RILL_FLOAT, rill_shape_matrix(-1, 2), "x");
        rill_graph_push_device(gg, "/job:ps/task:0");
        rill_output v = rill_variable(gg, RILL_FLOAT, rill_shape_matrix(2, 3),
                                      rill_zeros_initializer(), true, "v");
        rill_graph_pop_device(gg);
        rill_output y = rill_matmul(gg, x, v, false, false, "y");
        rill_node_add_control_input(y.node, rill_identity(gg, x, "after").node);
        CHECK(rill_summary_writer_add_graph(w, gg, s));
        CHECK(!rill_summary_writer_add_graph(w, NULL, s));
        CHECK_STR_CONTAINS(rill_status_message(s), "the graph is NULL");
        rill_status_clear(s);
        rill_graph_free(gg);
        path = rill__strdup(rill_summary_writer_path(w));
        rill_summary_writer_free(w);
        rill_tensor_free(t);
        rill_graph_free(g);
    }
    if (path) {
        /* TF's summary_iterator, directly. */
        char *cmd = rill__asprintf(
            "TF_CPP_MIN_LOG_LEVEL=3 '%s' -c 'import sys, tensorflow as tf\n"
            "for e in tf.compat.v1.train.summary_iterator(sys.argv[1]):\n"
            "  for v in e.summary.value:\n"
            "    print(v.tag, e.step, v.simple_value if v.HasField(\"simple_value\") else "
            "int(v.histo.num))\n' '%s' 2>/dev/null",
            py, path);
        char *out = run_capture(cmd);
        CHECK_EQ_STR(out, "loss 1 0.5\nloss 2 0.25\ncost 3 1.5\nw 3 3\n");
        free(out);
        rill__free(cmd);
        /* The interop script (TensorBoard's reader when installed). */
        cmd = rill__asprintf("'%s' '%s/tests/interop/read_rill_events.py' '%s' 2>/dev/null", py,
                             src, path);
        out = run_capture(cmd);
        CHECK_EQ_STR(out, "loss 1 0.5\nloss 2 0.25\ncost 3 1.5\n");
        free(out);
        rill__free(cmd);
        /* The graph as TensorBoard's EventAccumulator hands it to the graph tab. */
        cmd = rill__asprintf("'%s' '%s/tests/interop/read_rill_events.py' --graph '%s' 2>/dev/null",
                             py, src, path);
        out = run_capture(cmd);
        CHECK_EQ_STR(out, "x Placeholder - - [?,2]\n"
                          "v VariableV2 - /job:ps/task:0 [2,3]\n"
                          "v/Initializer/shape Const - /job:ps/task:0 [2]\n"
                          "v/Initializer/value Const - /job:ps/task:0 []\n"
                          "v/Initializer/Fill Fill v/Initializer/shape,v/Initializer/value "
                          "/job:ps/task:0 [2,3]\n"
                          "v/Assign Assign v,v/Initializer/Fill /job:ps/task:0 [2,3]\n"
                          "y MatMul x,v,^after - [?,3]\n"
                          "after Identity x - [?,2]\n");
        free(out);
        rill__free(cmd);
    }
    rill__free(path);
    rill_status_free(s);
    rill__free(logdir);
out:
    rill__free(py);
    rill__free(src);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* --- writers starting in the same second --- */

/* Three writers on one logdir, one after another (the same second, as a job restarted at once):
 * each gets its own file and keeps its events; none replaces another's (TF 1.x would). */
static void test_same_second(void)
{
    char *logdir = tmp_path("same_second");
    rill_status *s = rill_status_new();
    rill_summary_writer *w[3];
    char *paths[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        w[i] = rill_summary_writer_new(logdir, NULL, s);
        if (!CHECK(w[i] != NULL)) goto out;
        CHECK(rill_summary_writer_add_scalar(w[i], "a", 10 + i, i, s));
        CHECK(rill_summary_writer_flush(w[i], s));
        paths[i] = rill__strdup(rill_summary_writer_path(w[i]));
    }
    for (int i = 0; i < 3; i++) rill_summary_writer_free(w[i]);
    CHECK(strcmp(paths[0], paths[1]) != 0 && strcmp(paths[1], paths[2]) != 0 &&
          strcmp(paths[0], paths[2]) != 0);
    rill_event *ev = malloc(sizeof *ev);
    for (int i = 0; i < 3; i++) {
        rill_event_reader *r = rill_event_reader_new(paths[i], s);
        if (!CHECK(r != NULL)) continue;
        CHECK_EQ_INT(rill_event_reader_next(r, ev, s), 1);
        CHECK_EQ_INT(ev->kind, RILL_EVENT_FILE_VERSION);
        CHECK_EQ_INT(rill_event_reader_next(r, ev, s), 1);
        CHECK_EQ_INT(ev->step, i); /* its own scalar */
        CHECK_EQ_INT(rill_event_reader_next(r, ev, s), 0);
        rill_event_reader_free(r);
    }
    free(ev);
out:
    for (int i = 0; i < 3; i++) rill__free(paths[i]);
    rill_status_free(s);
    rill__free(logdir);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_round_trip();
    test_corruption();
    test_file_disappears();
    test_same_second();
    test_write_failure();
    test_threads();
    test_tensorflow_reads_rill();
    nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    TEST_MAIN_END();
}
