/* test_supervisor.c - tf.train.Supervisor in local sessions (src/train/supervisor.c).
 *
 * Real files in a fresh mkdtemp directory, event files read back with rill_event_reader:
 *   - a chief with an empty (not yet existing) logdir runs init_op and the default
 *     local_init_op, opens the event file and logs START; stop() saves model.ckpt-<global step>
 *     and logs CHECKPOINT and STOP;
 *   - a second chief (new graph, new session, same logdir) restores that checkpoint instead of
 *     running init_op (the init values differ from the trained ones), goes on counting steps,
 *     and its saver knows the older checkpoints;
 *   - services: a periodic checkpoint with save_model_secs = 0.3, the summary op and
 *     "global_step/sec" with save_summaries_secs = 0.3 (bounded polls for the files);
 *     rill_supervisor_summary_computed;
 *   - a non-chief whose model never becomes ready gives up after max_wait_secs with TF's text; a
 *     non-chief whose ready op passes runs only the local init op;
 *   - should_stop after request_stop, and an error passed to request_stop coming back from stop.
 */
#include "../test.h"

#include <rill/rill.h>

#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/rill_test_supervisor_XXXXXX";

/* --- helpers --- */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int count_event_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, "events.out.tfevents.", 20) == 0) n++;
    closedir(d);
    return n;
}

/* What an event file holds, in order. */
typedef struct event_log {
    int nevents, nversion;
    int start_at, stop_at, checkpoint_at; /* index of the first of each, -1 if none */
    int ncheckpoints;
    int64_t start_step, checkpoint_step;
    char checkpoint_path[1024];
    /* The last scalar of tag `want`, and whether "global_step/sec" was seen. */
    const char *want;
    bool have_want;
    float want_value;
    int64_t want_step;
    int nwant;
    bool have_rate;
    bool bad; /* the reader reported damage */
} event_log;

static void read_events(const char *path, const char *want, event_log *log)
{
    memset(log, 0, sizeof *log);
    log->want = want;
    log->start_at = log->stop_at = log->checkpoint_at = -1;
    rill_status *s = rill_status_new();
    rill_event *ev = malloc(sizeof *ev);
    rill_event_reader *r = rill_event_reader_new(path, s);
    if (!r) log->bad = true;
    int rc;
    while (r && (rc = rill_event_reader_next(r, ev, s)) == 1) {
        int i = log->nevents++;
        if (ev->kind == RILL_EVENT_FILE_VERSION) log->nversion++;
        if (ev->kind == RILL_EVENT_SESSION_LOG) {
            if (ev->session_log_status == RILL_SESSION_LOG_START && log->start_at < 0) {
                log->start_at = i;
                log->start_step = ev->step;
            } else if (ev->session_log_status == RILL_SESSION_LOG_STOP && log->stop_at < 0) {
                log->stop_at = i;
            } else if (ev->session_log_status == RILL_SESSION_LOG_CHECKPOINT) {
                if (log->checkpoint_at < 0) log->checkpoint_at = i;
                log->ncheckpoints++;
                log->checkpoint_step = ev->step;
                snprintf(log->checkpoint_path, sizeof log->checkpoint_path, "%s",
                         ev->checkpoint_path);
            }
        }
        if (ev->kind == RILL_EVENT_SUMMARY)
            for (int k = 0; k < ev->nvalues; k++) {
                const rill_event_value *v = &ev->values[k];
                if (v->kind != RILL_VALUE_SIMPLE) continue;
                if (strcmp(v->tag, "global_step/sec") == 0) log->have_rate = true;
                if (want && strcmp(v->tag, want) == 0) {
                    log->have_want = true;
                    log->want_value = v->simple_value;
                    log->want_step = ev->step;
                    log->nwant++;
                }
            }
    }
    if (r && rc < 0) log->bad = true;
    rill_event_reader_free(r);
    free(ev);
    rill_status_free(s);
}

/* The model: w (float [2], init 1) trained on sum(w) by gradient descent (lr 0.25), so each
 * step takes 0.25 off each element; a local variable; a scalar summary of sum(w). */
typedef struct model {
    rill_graph *g;
    rill_output gs, w, local, wsum, summary;
    rill_node *train;
    rill_optimizer *gd;
} model;

static bool build_model(model *m, float init)
{
    memset(m, 0, sizeof *m);
    rill_graph *g = m->g = rill_graph_new();
    m->gs = rill_train_get_or_create_global_step(g);
    m->w = rill_variable(g, RILL_FLOAT, rill_shape_vector(2), rill_constant_initializer(init), true,
                         "w");
    m->local = rill_local_variable(g, RILL_INT32, rill_shape_scalar(), rill_constant_initializer(7),
                                   "local_counter");
    m->wsum = rill_sum(g, m->w, NULL, -1, false, "w_total");
    m->summary = rill_summary_scalar(g, "wsum", m->wsum);
    m->gd = rill_gradient_descent_optimizer_new(0.25);
    m->train = rill_optimizer_minimize(m->gd, g, m->wsum, m->gs, "train");
    if (CHECK(rill_graph_ok(g))) return true;
    fprintf(stderr, "  build failed: %s\n", rill_status_message(rill_graph_status(g)));
    return false;
}

static void free_model(model *m)
{
    rill_optimizer_free(m->gd);
    rill_graph_free(m->g);
}

static double fetch(rill_session *sess, rill_output o, int i)
{
    rill_status *s = rill_status_new();
    rill_tensor *t = NULL;
    double v = -12345;
    if (CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &o, &t, 1, NULL, 0, s), RILL_OK))
        v = rill_tensor_get_double(t, i);
    else
        fprintf(stderr, "  fetch failed: %s\n", rill_status_message(s));
    rill_tensor_free(t);
    rill_status_free(s);
    return v;
}

static void train(rill_session *sess, const model *m, int steps)
{
    rill_status *s = rill_status_new();
    for (int i = 0; i < steps; i++)
        if (!CHECK_EQ_INT(rill_session_run_targets(sess, (rill_node *const *)&m->train, 1, s),
                          RILL_OK)) {
            fprintf(stderr, "  train step failed: %s\n", rill_status_message(s));
            break;
        }
    rill_status_free(s);
}

static rill_supervisor_options chief_options(const char *logdir)
{
    rill_supervisor_options o = RILL_SUPERVISOR_OPTIONS_INIT;
    o.logdir = logdir;
    o.save_model_secs = 0;
    o.save_summaries_secs = 0;
    return o;
}

/* --- tests --- */

/* A chief's life in an empty logdir, then a restarted chief going on from its checkpoint. */
static void test_chief_and_restart(void)
{
    rill_status *s = rill_status_new();
    char logdir[256], path[PATH_MAX], ckpt3[512], ckpt4[512], events[PATH_MAX] = "";
    snprintf(logdir, sizeof logdir, "%s/run1/logs", tmpdir); /* not there yet */
    snprintf(ckpt3, sizeof ckpt3, "%s/model.ckpt-3", logdir);
    snprintf(ckpt4, sizeof ckpt4, "%s/model.ckpt-4", logdir);
    model m;
    rill_supervisor *sv = NULL;
    rill_session *sess = NULL;
    if (!build_model(&m, 1)) goto out;
    rill_supervisor_options o = chief_options(logdir);
    sv = rill_supervisor_new(m.g, &o, s);
    if (!CHECK(sv != NULL)) {
        fprintf(stderr, "  supervisor: %s\n", rill_status_message(s));
        goto out;
    }
    /* The constructor made the logdir and the event file. */
    CHECK_EQ_INT(count_event_files(logdir), 1);
    CHECK(rill_supervisor_saver(sv) != NULL);
    if (CHECK(rill_supervisor_summary_writer(sv) != NULL))
        snprintf(events, sizeof events, "%s",
                 rill_summary_writer_path(rill_supervisor_summary_writer(sv)));
    CHECK(file_exists(events));
    sess = rill_supervisor_prepare_or_wait_for_session(sv, NULL, s);
    if (!CHECK(sess != NULL)) {
        fprintf(stderr, "  prepare: %s\n", rill_status_message(s));
        goto out;
    }
    /* init_op and the default local_init_op ran. */
    CHECK_EQ_INT(fetch(sess, m.gs, 0), 0);
    CHECK(fetch(sess, m.w, 0) == 1 && fetch(sess, m.w, 1) == 1);
    CHECK_EQ_INT(fetch(sess, m.local, 0), 7);
    /* START is in the file already (flushed at start). */
    event_log log;
    read_events(events, NULL, &log);
    CHECK(!log.bad);
    CHECK_EQ_INT(log.nversion, 1);
    CHECK(log.start_at > 0);
    CHECK_EQ_INT(log.start_step, 0);
    CHECK_EQ_INT(log.stop_at, -1);

    train(sess, &m, 3);
    CHECK_EQ_INT(fetch(sess, m.gs, 0), 3);
    CHECK(fetch(sess, m.w, 0) == 0.25);
    CHECK(!rill_supervisor_should_stop(sv));
    CHECK(!rill_checkpoint_exists(ckpt3)); /* no periodic checkpoints */
    if (!CHECK_EQ_INT(rill_supervisor_stop(sv, s), RILL_OK))
        fprintf(stderr, "  stop: %s\n", rill_status_message(s));
    CHECK(rill_supervisor_should_stop(sv));
    /* The final checkpoint, named by the global step, and the state file naming it. */
    snprintf(path, sizeof path, "%s.index", ckpt3);
    CHECK(file_exists(path));
    snprintf(path, sizeof path, "%s.data-00000-of-00001", ckpt3);
    CHECK(file_exists(path));
    char latest[PATH_MAX];
    if (CHECK(rill_latest_checkpoint(logdir, latest, sizeof latest))) CHECK_EQ_STR(latest, ckpt3);
    /* Its contents: the trained values; no local variable. */
    rill_checkpoint_reader *r = rill_checkpoint_reader_new(ckpt3, s);
    if (CHECK(r != NULL)) {
        CHECK(rill_checkpoint_reader_find(r, "local_counter") < 0);
        rill_tensor *t = rill_checkpoint_reader_get_tensor(r, "w", s);
        if (CHECK(t != NULL)) CHECK(rill_tensor_get_double(t, 1) == 0.25);
        rill_tensor_free(t);
        t = rill_checkpoint_reader_get_tensor(r, "global_step", s);
        if (CHECK(t != NULL)) CHECK_EQ_INT(rill_tensor_get_double(t, 0), 3);
        rill_tensor_free(t);
    }
    rill_checkpoint_reader_free(r);
    /* START, then CHECKPOINT at step 3 (path: the save path), then STOP. */
    read_events(events, NULL, &log);
    CHECK(!log.bad);
    CHECK(log.start_at > 0);
    CHECK(log.checkpoint_at > log.start_at);
    CHECK(log.stop_at > log.checkpoint_at);
    CHECK_EQ_INT(log.ncheckpoints, 1);
    CHECK_EQ_INT(log.checkpoint_step, 3);
    snprintf(path, sizeof path, "%s/model.ckpt", logdir);
    CHECK_EQ_STR(log.checkpoint_path, path);
    rill_supervisor_free(sv);
    sv = NULL;
    rill_session_free(sess);
    sess = NULL;
    free_model(&m);

    /* A restarted chief: a new graph whose init value (5) is not the trained one (0.25). */
    if (!build_model(&m, 5)) goto out;
    sv = rill_supervisor_new(m.g, &o, s);
    if (!CHECK(sv != NULL)) goto out;
    sess = rill_supervisor_prepare_or_wait_for_session(sv, NULL, s);
    if (!CHECK(sess != NULL)) {
        fprintf(stderr, "  prepare (restart): %s\n", rill_status_message(s));
        goto out;
    }
    CHECK(fetch(sess, m.w, 0) == 0.25 && fetch(sess, m.w, 1) == 0.25);
    CHECK_EQ_INT(fetch(sess, m.gs, 0), 3);
    CHECK_EQ_INT(fetch(sess, m.local, 0), 7); /* local variables are not saved: initialised */
    /* The saver took over the state file's list. */
    const char *kept[8];
    if (CHECK_EQ_INT(rill_saver_last_checkpoints(rill_supervisor_saver(sv), kept, 8), 1))
        CHECK_EQ_STR(kept[0], ckpt3);
    train(sess, &m, 1);
    CHECK_EQ_INT(fetch(sess, m.gs, 0), 4);
    CHECK(fetch(sess, m.w, 0) == 0);
    if (!CHECK_EQ_INT(rill_supervisor_stop(sv, s), RILL_OK))
        fprintf(stderr, "  stop: %s\n", rill_status_message(s));
    CHECK(rill_checkpoint_exists(ckpt4));
    CHECK(rill_checkpoint_exists(ckpt3)); /* max_to_keep is 5 */
    rill_checkpoint_state *st = rill_get_checkpoint_state(logdir, s);
    if (CHECK(st != NULL)) {
        CHECK_EQ_STR(st->model_checkpoint_path, ckpt4);
        if (CHECK_EQ_INT(st->num_all_model_checkpoint_paths, 2)) {
            CHECK_EQ_STR(st->all_model_checkpoint_paths[0], ckpt3);
            CHECK_EQ_STR(st->all_model_checkpoint_paths[1], ckpt4);
        }
    }
    rill_checkpoint_state_free(st);
    /* The restarted chief logged START at step 3 in its own event file. */
    const char *events2 = rill_summary_writer_path(rill_supervisor_summary_writer(sv));
    if (CHECK(events2 != NULL)) {
        read_events(events2, NULL, &log);
        CHECK(!log.bad);
        CHECK_EQ_INT(log.start_step, 3);
        CHECK(log.stop_at > log.start_at);
        CHECK_EQ_INT(log.checkpoint_step, 4);
    }
out:
    rill_supervisor_free(sv);
    rill_session_free(sess);
    free_model(&m);
    rill_status_free(s);
}

static void test_periodic_checkpoint(void)
{
    rill_status *s = rill_status_new();
    char logdir[256], latest[PATH_MAX], base[PATH_MAX];
    snprintf(logdir, sizeof logdir, "%s/run2", tmpdir);
    snprintf(base, sizeof base, "%s/model.ckpt-", logdir);
    model m;
    rill_supervisor *sv = NULL;
    rill_session *sess = NULL;
    if (!build_model(&m, 1)) goto out;
    rill_supervisor_options o = chief_options(logdir);
    o.save_model_secs = 0.3;
    sv = rill_supervisor_new(m.g, &o, s);
    if (!CHECK(sv != NULL)) goto out;
    sess = rill_supervisor_prepare_or_wait_for_session(sv, NULL, s);
    if (!CHECK(sess != NULL)) goto out;
    train(sess, &m, 2);
    bool found = false;
    for (int i = 0; i < 200 && !found; i++) {
        found = rill_latest_checkpoint(logdir, latest, sizeof latest);
        if (!found) sleep_ms(50);
    }
    if (CHECK(found)) {
        /* Saved while training went on: a step between 0 and 2. */
        CHECK(strncmp(latest, base, strlen(base)) == 0);
        long step = strtol(latest + strlen(base), NULL, 10);
        CHECK(step >= 0 && step <= 2);
    }
    CHECK(!rill_supervisor_should_stop(sv));
    CHECK_EQ_INT(rill_supervisor_stop(sv, s), RILL_OK);
    char final[PATH_MAX + 16];
    snprintf(final, sizeof final, "%s2", base);
    if (CHECK(rill_latest_checkpoint(logdir, latest, sizeof latest))) CHECK_EQ_STR(latest, final);
    event_log log;
    read_events(rill_summary_writer_path(rill_supervisor_summary_writer(sv)), NULL, &log);
    CHECK(!log.bad);
    CHECK(log.ncheckpoints >= 2); /* periodic ones and the final one */
    CHECK_EQ_INT(log.checkpoint_step, 2);
    CHECK(log.stop_at > log.checkpoint_at);
out:
    rill_supervisor_free(sv);
    rill_session_free(sess);
    free_model(&m);
    rill_status_free(s);
}

static void test_summaries(void)
{
    rill_status *s = rill_status_new();
    char logdir[256];
    snprintf(logdir, sizeof logdir, "%s/run3", tmpdir);
    model m;
    rill_supervisor *sv = NULL;
    rill_session *sess = NULL;
    if (!build_model(&m, 1)) goto out;
    rill_supervisor_options o = chief_options(logdir);
    o.save_summaries_secs = 0.3; /* the summary op: merge_all, which holds "wsum" */
    sv = rill_supervisor_new(m.g, &o, s);
    if (!CHECK(sv != NULL)) goto out;
    sess = rill_supervisor_prepare_or_wait_for_session(sv, NULL, s);
    if (!CHECK(sess != NULL)) goto out;
    const char *events = rill_summary_writer_path(rill_supervisor_summary_writer(sv));
    event_log log = {0};
    for (int i = 0; i < 200; i++) {
        read_events(events, "wsum", &log);
        if (log.have_want && log.have_rate) break;
        sleep_ms(50);
    }
    CHECK(!log.bad);
    CHECK(log.have_want);
    CHECK(log.have_rate);
    CHECK(log.want_value == 2.0f); /* nothing trained yet: sum of {1, 1} */
    CHECK_EQ_INT(log.want_step, 0);

    /* A summary computed by the caller, at a step of its choosing. */
    train(sess, &m, 1);
    rill_tensor *t = NULL;
    if (CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &m.summary, &t, 1, NULL, 0, s), RILL_OK))
        CHECK_EQ_INT(rill_supervisor_summary_computed(sv, t, 42, s), RILL_OK);
    rill_tensor_free(t);
    CHECK_EQ_INT(rill_supervisor_stop(sv, s), RILL_OK);
    read_events(events, "wsum", &log);
    CHECK(!log.bad);
    CHECK_EQ_INT(log.want_step, 42); /* the last one written */
    CHECK(log.want_value == 1.5f);
    CHECK(log.nwant >= 2);
    CHECK(log.stop_at > 0);
out:
    rill_supervisor_free(sv);
    rill_session_free(sess);
    free_model(&m);
    rill_status_free(s);
}

/* A summary of a fed value in the summary op the Supervisor's thread runs without feeds: the
 * session does not start, and the error names the summary and the placeholder; with
 * summary_op=None (no_summary_op) the same graph runs. */
static void test_summary_needing_a_feed(void)
{
    rill_status *s = rill_status_new();
    char logdir[256];
    snprintf(logdir, sizeof logdir, "%s/run_fed", tmpdir);
    model m;
    rill_supervisor *sv = NULL;
    rill_session *sess = NULL;
    if (!build_model(&m, 1)) goto out;
    rill_output lr = rill_placeholder(m.g, RILL_FLOAT, rill_shape_scalar(), "learning_rate");
    rill_summary_scalar(m.g, "lr", rill_mul(m.g, lr, rill_const_float(m.g, 2, NULL), NULL));
    rill_supervisor_options o = chief_options(logdir);
    o.save_summaries_secs = 120; /* TF's default */
    sv = rill_supervisor_new(m.g, &o, s);
    if (!CHECK(sv != NULL)) goto out;
    sess = rill_supervisor_prepare_or_wait_for_session(sv, NULL, s);
    CHECK(sess == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "summary 'lr' needs a value fed for placeholder "
                                               "'learning_rate'");
    CHECK_STR_CONTAINS(rill_status_message(s), "summary_op=None");
    rill_supervisor_free(sv);
    o.no_summary_op = true;
    sv = rill_supervisor_new(m.g, &o, s);
    sess = sv ? rill_supervisor_prepare_or_wait_for_session(sv, NULL, s) : NULL;
    if (CHECK(sess != NULL)) CHECK_EQ_INT(rill_supervisor_stop(sv, s), RILL_OK);
out:
    rill_supervisor_free(sv);
    rill_session_free(sess);
    free_model(&m);
    rill_status_free(s);
}

static void test_non_chief(void)
{
    rill_status *s = rill_status_new();
    model m;
    rill_supervisor *sv = NULL;
    rill_session *sess = NULL;
    if (!build_model(&m, 1)) goto out;
    /* Nobody initialises this session's variables: give up after max_wait_secs. */
    rill_supervisor_options o = RILL_SUPERVISOR_OPTIONS_INIT;
    o.is_chief = false;
    o.max_wait_secs = 1;
    o.recovery_wait_secs = 0.1;
    sv = rill_supervisor_new(m.g, &o, s);
    if (!CHECK(sv != NULL)) goto out;
    CHECK(rill_supervisor_summary_writer(sv) == NULL);
    sess = rill_supervisor_prepare_or_wait_for_session(sv, NULL, s);
    CHECK(sess == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_DEADLINE_EXCEEDED);
    CHECK_STR_CONTAINS(rill_status_message(s), "Session was not ready after waiting 1 secs.");
    CHECK_STR_CONTAINS(rill_status_message(s), "uninitialized value");
    rill_session_free(sess);
    sess = NULL;
    rill_supervisor_free(sv);

    /* A ready op that passes: the non-chief runs its local init op, never init_op. */
    o.ready_op = rill_no_op(m.g, "always_ready");
    sv = rill_supervisor_new(m.g, &o, s);
    if (!CHECK(sv != NULL)) goto out;
    sess = rill_supervisor_prepare_or_wait_for_session(sv, NULL, s);
    if (!CHECK(sess != NULL)) goto out;
    CHECK_EQ_INT(fetch(sess, m.local, 0), 7);
    rill_tensor *t = NULL;
    CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &m.w, &t, 1, NULL, 0, s),
                 RILL_FAILED_PRECONDITION);
    CHECK_STR_CONTAINS(rill_status_message(s), "uninitialized value w");
    rill_tensor_free(t);
    /* A non-chief writes no summaries. */
    t = rill_tensor_scalar_string("");
    CHECK_EQ_INT(rill_supervisor_summary_computed(sv, t, 1, s), RILL_FAILED_PRECONDITION);
    CHECK_STR_CONTAINS(rill_status_message(s), "Writing a summary requires a summary writer.");
    rill_tensor_free(t);
    CHECK_EQ_INT(rill_supervisor_stop(sv, s), RILL_OK);
out:
    rill_supervisor_free(sv);
    rill_session_free(sess);
    free_model(&m);
    rill_status_free(s);
}

/* A string vector constant: a stand-in for tf.report_uninitialized_variables's answer. */
static rill_node *names_const(rill_graph *g, const char *const *names, int n, const char *name)
{
    int64_t d[1] = {n};
    rill_tensor *t = rill_tensor_new(RILL_STRING, d, 1);
    for (int i = 0; i < n; i++) rill_tensor_set_string(t, i, names[i], strlen(names[i]));
    rill_output o = rill_const(g, t, name);
    rill_tensor_free(t);
    return o.node;
}

/* Ready ops that are string tensors (TF's): ready when they name nothing; and
 * ready_for_local_init_op gating the local init op. */
static void test_ready_ops(void)
{
    rill_status *s = rill_status_new();
    model m;
    rill_supervisor *sv = NULL;
    rill_session *sess = NULL;
    if (!build_model(&m, 1)) goto out;
    const char *w[] = {"w", "b"};
    rill_node *never = names_const(m.g, w, 2, "not_ready"), *now = names_const(m.g, w, 0, "ready");
    rill_supervisor_options o = RILL_SUPERVISOR_OPTIONS_INIT;
    o.is_chief = false;
    o.max_wait_secs = 1;
    o.recovery_wait_secs = 0.1;
    /* A ready op naming variables never becomes ready: the deadline's error names them. */
    o.ready_op = never;
    sv = rill_supervisor_new(m.g, &o, s);
    if (!CHECK(sv != NULL)) goto out;
    CHECK(rill_supervisor_prepare_or_wait_for_session(sv, NULL, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_DEADLINE_EXCEEDED);
    CHECK_STR_CONTAINS(rill_status_message(s), "Session was not ready after waiting 1 secs. "
                                               "Not ready: Variables not initialized: w, b");
    rill_supervisor_free(sv);
    /* One naming nothing is ready: the local init op ran, w still has no value. */
    o.ready_op = now;
    sv = rill_supervisor_new(m.g, &o, s);
    if (!CHECK(sv != NULL)) goto out;
    sess = rill_supervisor_prepare_or_wait_for_session(sv, NULL, s);
    if (!CHECK(sess != NULL)) goto out;
    CHECK_EQ_INT(fetch(sess, m.local, 0), 7);
    rill_session_free(sess);
    sess = NULL;
    rill_supervisor_free(sv);
    /* ready_for_local_init_op that never holds: no local init, and the error says so. */
    o.ready_op = now;
    o.ready_for_local_init_op = never;
    sv = rill_supervisor_new(m.g, &o, s);
    if (!CHECK(sv != NULL)) goto out;
    CHECK(rill_supervisor_prepare_or_wait_for_session(sv, NULL, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_DEADLINE_EXCEEDED);
    CHECK_STR_CONTAINS(rill_status_message(s),
                       "Not ready for local init: Variables not initialized: w, b");
    rill_supervisor_free(sv);
    /* A chief whose init leaves ready_for_local_init_op unsatisfied fails with TF's text. */
    o.is_chief = true;
    sv = rill_supervisor_new(m.g, &o, s);
    if (!CHECK(sv != NULL)) goto out;
    CHECK(rill_supervisor_prepare_or_wait_for_session(sv, NULL, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_FAILED_PRECONDITION);
    CHECK_STR_CONTAINS(rill_status_message(s), "Init operations did not make model ready for "
                                               "local_init.  Init op: init");
    CHECK_STR_CONTAINS(rill_status_message(s), "error: Variables not initialized: w, b");
    rill_supervisor_free(sv);
    /* ... and one it satisfies runs the local init op (the default ready op: a chief whose
     * ready op holds already would take the model as live and not initialise it). */
    o.ready_for_local_init_op = now;
    o.ready_op = NULL;
    sv = rill_supervisor_new(m.g, &o, s);
    if (!CHECK(sv != NULL)) goto out;
    sess = rill_supervisor_prepare_or_wait_for_session(sv, NULL, s);
    if (!CHECK(sess != NULL)) goto out;
    CHECK_EQ_INT(fetch(sess, m.local, 0), 7);
    CHECK(fetch(sess, m.w, 0) == 1);
out:
    rill_supervisor_free(sv);
    rill_session_free(sess);
    free_model(&m);
    rill_status_free(s);
}

static void test_request_stop(void)
{
    rill_status *s = rill_status_new();
    model m;
    rill_supervisor *sv = NULL;
    rill_session *sess = NULL;
    if (!build_model(&m, 1)) goto out;
    /* No logdir: no checkpoints, no event file. */
    rill_supervisor_options o = chief_options(NULL);
    sv = rill_supervisor_new(m.g, &o, s);
    if (!CHECK(sv != NULL)) goto out;
    sess = rill_supervisor_prepare_or_wait_for_session(sv, NULL, s);
    if (!CHECK(sess != NULL)) goto out;
    CHECK(fetch(sess, m.w, 0) == 1);
    CHECK_EQ_INT(fetch(sess, m.local, 0), 7);
    CHECK(!rill_supervisor_should_stop(sv));
    CHECK(!rill_supervisor_should_stop(sv)); /* asking does not change it */
    rill_supervisor_request_stop(sv, NULL);
    CHECK(rill_supervisor_should_stop(sv));
    CHECK_EQ_INT(rill_supervisor_stop(sv, s), RILL_OK);
    CHECK(rill_supervisor_should_stop(sv));
    rill_supervisor_free(sv);
    sv = NULL;
    rill_session_free(sess);
    sess = NULL;

    /* An error passed to request_stop is what stop returns. */
    sv = rill_supervisor_new(m.g, &o, s);
    if (!CHECK(sv != NULL)) goto out;
    sess = rill_supervisor_prepare_or_wait_for_session(sv, NULL, s);
    if (!CHECK(sess != NULL)) goto out;
    rill_status *e = rill_status_new();
    rill_status_set(e, RILL_ABORTED, "worker 3 went away");
    rill_supervisor_request_stop(sv, e);
    rill_status_free(e);
    CHECK(rill_supervisor_should_stop(sv));
    CHECK_EQ_INT(rill_supervisor_stop(sv, s), RILL_ABORTED);
    CHECK_STR_CONTAINS(rill_status_message(s), "worker 3 went away");
out:
    rill_supervisor_free(sv);
    rill_session_free(sess);
    free_model(&m);
    rill_status_free(s);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_chief_and_restart();
    test_periodic_checkpoint();
    test_summaries();
    test_non_chief();
    test_ready_ops();
    test_summary_needing_a_feed();
    test_request_stop();
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    TEST_MAIN_END();
}
