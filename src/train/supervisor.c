/* supervisor.c - tf.train.Supervisor (reference §8): start-up, standard services, stop.
 *
 * prepare_or_wait_for_session: the chief restores the latest checkpoint of logdir, or runs the
 * init op when there is none (a cluster restarted from scratch goes on from its checkpoint;
 * ps tasks that outlived their workers already hold the model and are left as they are). Beyond
 * TF: when the ps tasks hold a live, initialized model whose global step is not older than the
 * checkpoint's (a chief restarted while the ps tasks kept training state), the chief goes on
 * from the live model and logs both steps instead of throwing the newer steps away; the option
 * restore_over_live restores the checkpoint anyway, as TF does. The
 * others wait until the model is ready, polling every recovery_wait_secs. Every task then runs
 * its local init op (local variables). The chief with a logdir starts one service thread that
 * saves a checkpoint every save_model_secs, records the summary op every save_summaries_secs
 * with the global steps per second, and flushes the event file. Services run in a sibling
 * session, so a training step that blocks (a sync token) never holds them up. stop() ends the
 * services and queue runners, saves a final checkpoint (the chief; TF's stop does not, which
 * loses up to save_model_secs of training), writes SessionLog STOP and closes the event file.
 *
 * Differences from TF, by choice: recovery_wait_secs defaults to 0.5 s (TF: 30 s, so a worker
 * that comes up first idles half a minute); the graph goes into the event file (a GraphDef for
 * TensorBoard) but no graph.pbtxt or meta graph is written; the graph is not finalized. */
#include <rill/checkpoint.h>
#include <rill/summary.h>
#include <rill/train.h>

#include "../graph/graph_internal.h"
#include "../runtime/runtime.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define MAX_QUEUE_RUNNERS 16

struct rill_supervisor {
    rill_graph *g;
    rill_supervisor_options o;
    char *logdir, *save_path;
    rill_node *init_op, *local_init_op, *ready_op;
    rill_saver *saver;
    bool own_saver;
    rill_output summary_op, global_step;
    rill_summary_writer *writer;
    rill_session *svc_sess; /* the services' sibling session */
    pthread_t svc;
    bool svc_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop_requested;
    rill_status *error; /* the first error a service or queue runner reported */
    rill_queue_runner *qrs[MAX_QUEUE_RUNNERS];
    int nqrs;
    rill_session *sess; /* the session prepare_or_wait_for_session made */
};

static bool uninitialized(const rill_status *s)
{
    return rill_status_code(s) == RILL_FAILED_PRECONDITION &&
           (strstr(rill_status_message(s), "uninitialized") != NULL ||
            strstr(rill_status_message(s), "not initialized") != NULL);
}

static int mkdirs(const char *path)
{
    char *p = rill__strdup(path);
    for (char *c = p + 1; *c; c++) {
        if (*c != '/') continue;
        *c = 0;
        mkdir(p, 0777);
        *c = '/';
    }
    int rc = mkdir(p, 0777) == 0 || errno == EEXIST ? 0 : -1;
    rill__free(p);
    return rc;
}

rill_supervisor *rill_supervisor_new(rill_graph *g, const rill_supervisor_options *o,
                                     rill_status *s)
{
    rill_supervisor *sv = rill__calloc(1, sizeof *sv);
    RILL_CHECK_ALLOC(sv);
    sv->g = g;
    sv->o = *o;
    pthread_mutex_init(&sv->mu, NULL);
    pthread_cond_init(&sv->cv, NULL);
    sv->error = rill_status_new();
    if (!o->is_chief || o->prepare_only) { /* only a chief keeps these (TF); or hooks do */
        sv->o.save_model_secs = 0;
        sv->o.save_summaries_secs = 0;
    }
    if (o->is_chief && o->logdir && *o->logdir) {
        sv->logdir = rill__strdup(o->logdir);
        size_t n = strlen(sv->logdir);
        while (n > 1 && sv->logdir[n - 1] == '/') sv->logdir[--n] = 0;
        sv->save_path = rill__asprintf("%s/%s", sv->logdir,
                                       o->checkpoint_basename ? o->checkpoint_basename : "model.ckpt");
    }
    sv->global_step = o->global_step.node ? o->global_step : rill_train_get_global_step(g);
    sv->init_op = o->init_op ? o->init_op : rill_global_variables_initializer(g, NULL);
    sv->local_init_op = o->local_init_op ? o->local_init_op : rill_local_variables_initializer(g, NULL);
    sv->ready_op = o->ready_op;
    if (o->saver) {
        sv->saver = o->saver;
    } else if (!o->no_saver && rill_graph_global_variables(g, NULL, 0) > 0) {
        sv->saver = rill_saver_new(g, NULL, 0, 5, 10000, s);
        sv->own_saver = true;
        if (!sv->saver) goto fail;
    }
    if (o->summary_op.node) sv->summary_op = o->summary_op;
    else if (!o->no_summary_op) sv->summary_op = rill_summary_merge_all(g, NULL);
    if (!rill_graph_ok(g)) {
        rill_status_copy(s, rill_graph_status(g));
        goto fail;
    }
    if (sv->logdir) {
        if (mkdirs(sv->logdir) != 0) {
            rill_status_set(s, RILL_PERMISSION_DENIED, "cannot create logdir %s: %s", sv->logdir,
                            strerror(errno));
            goto fail;
        }
        if (!o->prepare_only) {
            sv->writer = rill_summary_writer_new(sv->logdir, NULL, s);
            if (!sv->writer) goto fail;
        }
    }
    return sv;
fail:
    rill_supervisor_free(sv);
    return NULL;
}

/* Whether op says the model is ready. A node whose first output is a string vector is TF's
 * ready op (tf.report_uninitialized_variables): ready when it returns no name; else
 * FAILED_PRECONDITION "Variables not initialized: a, b" (TF's text). Another node is ready when
 * it runs. NULL: every global variable can be read. */
static rill_code ready_by(rill_supervisor *sv, rill_node *op, rill_session *sess, rill_status *s)
{
    if (op && rill_node_num_outputs(op) > 0 &&
        rill_output_dtype((rill_output){op, 0}) == RILL_STRING) {
        rill_output out = {op, 0};
        rill_tensor *names = NULL;
        if (rill_session_run(sess, NULL, NULL, 0, &out, &names, 1, NULL, 0, s) != RILL_OK)
            return rill_status_code(s);
        int64_t n = rill_tensor_num_elements(names);
        if (n > 0) {
            char msg[1024];
            size_t used = 0;
            for (int64_t i = 0; i < n && used + 1 < sizeof msg; i++) {
                size_t len;
                const char *v = rill_tensor_get_string(names, i, &len);
                int w = snprintf(msg + used, sizeof msg - used, "%s%.*s", i ? ", " : "", (int)len,
                                 v ? v : "");
                used += w > 0 ? (size_t)w : 0;
            }
            rill_status_set(s, RILL_FAILED_PRECONDITION, "Variables not initialized: %s", msg);
        }
        rill_tensor_free(names);
        return rill_status_code(s);
    }
    if (op) return rill_session_run_targets(sess, &op, 1, s);
    int n = rill_graph_global_variables(sv->g, NULL, 0);
    if (n == 0) return RILL_OK;
    rill_output *vars = rill__calloc((size_t)n, sizeof *vars);
    rill_tensor **v = rill__calloc((size_t)n, sizeof *v);
    RILL_CHECK_ALLOC(vars);
    RILL_CHECK_ALLOC(v);
    rill_graph_global_variables(sv->g, vars, n);
    rill_code c = rill_session_run(sess, NULL, NULL, 0, vars, v, n, NULL, 0, s);
    for (int i = 0; i < n; i++) rill_tensor_free(v[i]);
    rill__free(v);
    rill__free(vars);
    return c;
}

static rill_code ready(rill_supervisor *sv, rill_session *sess, rill_status *s)
{
    return ready_by(sv, sv->ready_op, sess, s);
}

static int64_t read_step(rill_supervisor *sv, rill_session *sess, rill_status *s)
{
    if (!sv->global_step.node) return -1;
    rill_tensor *t = NULL;
    if (rill_session_run(sess, NULL, NULL, 0, &sv->global_step, &t, 1, NULL, 0, s) != RILL_OK)
        return -1;
    int64_t v = rill_tensor_dtype(t) == RILL_INT32 ? *(int32_t *)rill_tensor_data(t)
                                                   : *(int64_t *)rill_tensor_data(t);
    rill_tensor_free(t);
    return v;
}

/* The global step stored in the checkpoint at prefix (the variable's own value, which may be
 * later than the step in the file's name), or the step its name ends in ("-N"); -1 when neither
 * is known. */
static int64_t checkpoint_step(rill_supervisor *sv, const char *prefix)
{
    int64_t step = -1;
    rill_status *s = rill_status_new();
    rill_checkpoint_reader *r = rill_checkpoint_reader_new(prefix, s);
    rill_tensor *t = r ? rill_checkpoint_reader_get_tensor(r, sv->global_step.node->name, s) : NULL;
    if (t && rill_tensor_num_elements(t) == 1 && rill_tensor_dtype(t) == RILL_INT64)
        step = *(int64_t *)rill_tensor_data(t);
    else if (t && rill_tensor_num_elements(t) == 1 && rill_tensor_dtype(t) == RILL_INT32)
        step = *(int32_t *)rill_tensor_data(t);
    rill_tensor_free(t);
    rill_checkpoint_reader_free(r);
    rill_status_free(s);
    const char *dash = strrchr(prefix, '-');
    if (step < 0 && dash && dash[1]) {
        char *end;
        long long v = strtoll(dash + 1, &end, 10);
        if (!*end && v >= 0) step = v;
    }
    return step;
}

/* Restores latest and takes over the state file's list of kept checkpoints. */
static rill_code restore_latest(rill_supervisor *sv, rill_session *sess, const char *latest,
                                rill_status *s)
{
    if (rill_saver_restore(sv->saver, sess, latest, s) != RILL_OK) return rill_status_code(s);
    rill__log(RILL_LOG_INFO, "Restoring parameters from %s", latest);
    return RILL_OK;
}

static void recover_saver(rill_supervisor *sv)
{
    rill_status *s = rill_status_new();
    rill_checkpoint_state *st = rill_get_checkpoint_state(sv->logdir, s);
    if (st)
        rill_saver_recover_last_checkpoints(sv->saver,
                                            (const char *const *)st->all_model_checkpoint_paths,
                                            st->num_all_model_checkpoint_paths);
    rill_checkpoint_state_free(st);
    rill_status_free(s);
}

/* The chief. With a checkpoint in logdir: restore it, unless the ps tasks hold a live model
 * whose global step is not older than the checkpoint's (a chief restarted while its ps tasks
 * kept the model: restoring would throw away every step since that checkpoint), which it goes
 * on from, saying so; restore_over_live restores anyway. Without one: init, unless the model
 * is ready (the ps tasks kept it). */
static rill_code chief_prepare(rill_supervisor *sv, rill_session *sess, rill_status *s)
{
    char latest[4096];
    bool have_ckpt =
        sv->saver && sv->logdir && rill_latest_checkpoint(sv->logdir, latest, sizeof latest);
    if (have_ckpt && sv->o.restore_over_live) {
        if (restore_latest(sv, sess, latest, s) != RILL_OK) return rill_status_code(s);
        recover_saver(sv);
        return RILL_OK;
    }
    rill_status_clear(s);
    bool live = ready(sv, sess, s) == RILL_OK;
    if (!live && !uninitialized(s)) return rill_status_code(s);
    rill_status_clear(s);
    if (have_ckpt) {
        int64_t live_step = -1, ckpt_step = -1;
        if (live && sv->global_step.node) {
            live_step = read_step(sv, sess, s);
            if (!rill_status_ok(s)) return rill_status_code(s);
            ckpt_step = checkpoint_step(sv, latest);
        }
        if (live && live_step >= 0 && live_step >= ckpt_step) {
            rill__log(RILL_LOG_INFO,
                      "the ps tasks hold a live model at global step %lld, not older than the "
                      "latest checkpoint %s (global step %lld): going on from the live model "
                      "(restore_over_live restores the checkpoint instead)",
                      (long long)live_step, latest, (long long)ckpt_step);
            recover_saver(sv);
            return RILL_OK;
        }
        if (live && live_step >= 0)
            rill__log(RILL_LOG_INFO,
                      "the ps tasks hold a live model at global step %lld, older than the latest "
                      "checkpoint %s (global step %lld): restoring the checkpoint",
                      (long long)live_step, latest, (long long)ckpt_step);
        else if (live)
            rill__log(RILL_LOG_INFO,
                      "the ps tasks hold a live model but there is no global step "
                      "to compare with the checkpoint's: restoring %s",
                      latest);
        if (restore_latest(sv, sess, latest, s) != RILL_OK) return rill_status_code(s);
        recover_saver(sv);
        return RILL_OK;
    }
    if (live) {
        rill__log(RILL_LOG_INFO, "the model is already initialized on the ps tasks; going on "
                                 "from it");
        return RILL_OK;
    }
    return rill_session_run_targets(sess, &sv->init_op, 1, s);
}

/* The tasks holding the global variables a not-ready message names (as whole words), as
 * " (on /job:ps/task:0, which answers: it ran the check)" into out ("" when none is placed on
 * a task). */
static void holders(rill_supervisor *sv, const char *msg, char *out, size_t len)
{
    out[0] = 0;
    int n = rill_graph_global_variables(sv->g, NULL, 0);
    rill_output *vars = rill__calloc((size_t)n + 1, sizeof *vars);
    RILL_CHECK_ALLOC(vars);
    rill_graph_global_variables(sv->g, vars, n);
    char tasks[4][96];
    int nt = 0;
    for (int i = 0; i < n; i++) {
        const char *name = rill_node_name(vars[i].node);
        size_t k = strlen(name);
        bool named = false;
        for (const char *p = strstr(msg, name); p && !named; p = strstr(p + 1, name)) {
            char before = p == msg ? ' ' : p[-1], after = p[k];
            named = !(before == '_' || before == '/' || (before >= '0' && before <= '9') ||
                      (before >= 'A' && before <= 'Z') || (before >= 'a' && before <= 'z')) &&
                    !(after == '_' || after == '/' || (after >= '0' && after <= '9') ||
                      (after >= 'A' && after <= 'Z') || (after >= 'a' && after <= 'z'));
        }
        rill_device_name d;
        const char *dev = rill_node_requested_device(vars[i].node);
        if (!named || !dev || !rill_device_name_parse(dev, &d, NULL) || !d.has_job) continue;
        char t[96];
        snprintf(t, sizeof t, "/job:%s/task:%d", d.job, d.has_task ? d.task : 0);
        bool seen = false;
        for (int j = 0; j < nt && !seen; j++) seen = strcmp(tasks[j], t) == 0;
        if (!seen && nt < 4) snprintf(tasks[nt++], sizeof tasks[0], "%s", t);
    }
    rill__free(vars);
    if (!nt) return;
    size_t used = (size_t)snprintf(out, len, " (on ");
    for (int j = 0; j < nt && used < len; j++)
        used += (size_t)snprintf(out + used, len - used, "%s%s", j ? ", " : "", tasks[j]);
    if (used < len)
        snprintf(out + used, len - used, ", which %s: %s)", nt > 1 ? "answer" : "answers",
                 nt > 1 ? "they ran the check" : "it ran the check");
}

/* Whether a readiness check failed on the wire (a task gone or not answering): the wait goes
 * on, saying so, as a ps that restarts while a worker waits is waited for. */
static bool unreachable(const rill_status *s)
{
    return rill_status_code(s) == RILL_UNAVAILABLE || rill_status_code(s) == RILL_DEADLINE_EXCEEDED;
}

/* A non-chief's wait, in the order of TF's SessionManager, polled until it holds or
 * max_wait_secs pass: once ready_for_local_init_op holds (when there is one), the local init
 * op runs, then the model must be ready (the ready op, by default every global variable
 * readable). A local init op that reads a variable not yet initialised is tried again at the
 * next poll, where TF would fail. */
static rill_code wait_ready(rill_supervisor *sv, rill_session *sess, rill_status *s)
{
    double start = rill__now_seconds(), next_log = start + 3;
    double poll = sv->o.recovery_wait_secs > 0 ? sv->o.recovery_wait_secs : 0.5;
    double max_wait = sv->o.max_wait_secs > 0 ? sv->o.max_wait_secs : 7200;
    rill_node *rfli = sv->o.ready_for_local_init_op;
    for (;;) {
        rill_code c = rfli ? ready_by(sv, rfli, sess, s) : RILL_OK;
        bool local_ready = c == RILL_OK;
        if (c == RILL_OK && sv->local_init_op)
            c = rill_session_run_targets(sess, &sv->local_init_op, 1, s);
        if (c == RILL_OK) c = ready(sv, sess, s);
        if (c == RILL_OK || !(uninitialized(s) || unreachable(s))) return c;
        /* What is not ready, where it lives and whether that task answers. */
        char where[512] = "";
        if (uninitialized(s)) holders(sv, rill_status_message(s), where, sizeof where);
        else snprintf(where, sizeof where, " (a task does not answer the readiness check)");
        double t = rill__now_seconds();
        if (t - start >= max_wait) {
            char *why = rill__strdup(rill_status_message(s));
            rill_status_set(s, RILL_DEADLINE_EXCEEDED,
                            "Session was not ready after waiting %.0f secs. Not ready%s: %s%s",
                            max_wait, local_ready ? "" : " for local init", why, where);
            rill__free(why);
            return RILL_DEADLINE_EXCEEDED;
        }
        if (t >= next_log) {
            rill__log(RILL_LOG_INFO, "Waiting for model to be ready.  Ready%s: %s%s",
                      local_ready ? "" : " for local init", rill_status_message(s), where);
            next_log = t + 3;
        }
        struct timespec ts = {(time_t)poll, (long)((poll - (double)(time_t)poll) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

static void report(rill_supervisor *sv, const rill_status *e)
{
    pthread_mutex_lock(&sv->mu);
    if (rill_status_ok(sv->error)) rill_status_copy(sv->error, e);
    sv->stop_requested = true;
    pthread_cond_broadcast(&sv->cv);
    pthread_mutex_unlock(&sv->mu);
}

/* A queue runner ended with e: OUT_OF_RANGE (its input ended, or a sync step that can never
 * complete) is a clean stop, as a TF Coordinator's clean_stop_exception_types; else an
 * error. */
static void qr_ended(rill_supervisor *sv, const rill_status *e)
{
    if (rill_status_code(e) != RILL_OUT_OF_RANGE) {
        report(sv, e);
        return;
    }
    rill_supervisor_request_stop(sv, NULL);
}

static rill_code save_checkpoint(rill_supervisor *sv, rill_status *s)
{
    int64_t step = read_step(sv, sv->svc_sess, s);
    if (!rill_status_ok(s)) return rill_status_code(s);
    rill__log(RILL_LOG_INFO, "Saving checkpoint to path %s", sv->save_path);
    char prefix[4096];
    if (rill_saver_save(sv->saver, sv->svc_sess, sv->save_path, step, prefix, sizeof prefix, s) !=
        RILL_OK)
        return rill_status_code(s);
    if (sv->writer)
        rill_summary_writer_add_session_log(sv->writer, RILL_SESSION_LOG_CHECKPOINT, sv->save_path,
                                            step, s);
    return rill_status_code(s);
}

static void record_summaries(rill_supervisor *sv, int64_t *last_step, double *last_t, int *nlog,
                             rill_status *s)
{
    double t = rill__now_seconds();
    int64_t step = read_step(sv, sv->svc_sess, s);
    if (!rill_status_ok(s)) return;
    if (sv->summary_op.node) {
        rill_tensor *sum = NULL;
        if (rill_session_run(sv->svc_sess, NULL, NULL, 0, &sv->summary_op, &sum, 1, NULL, 0, s) !=
            RILL_OK)
            return;
        rill__log(RILL_LOG_INFO, "Recording summary at step %lld.", (long long)step);
        rill_summary_writer_add_summary(sv->writer, sum, step, s);
        rill_tensor_free(sum);
        if (!rill_status_ok(s)) return;
    }
    if (step >= 0 && *last_step >= 0 && t > *last_t) {
        double rate = (double)(step - *last_step) / (t - *last_t);
        char tag[300];
        snprintf(tag, sizeof tag, "%s/sec", sv->global_step.node->name);
        rill_summary_writer_add_scalar(sv->writer, tag, rate, step, s);
        if ((*nlog)++ < 10) rill__log(RILL_LOG_INFO, "%s: %g", tag, rate);
    }
    *last_step = step;
    *last_t = t;
    rill_summary_writer_flush(sv->writer, s);
}

static void *services_main(void *arg)
{
    rill_supervisor *sv = arg;
    rill_status *s = rill_status_new();
    double now = rill__now_seconds();
    double next_ckpt = sv->o.save_model_secs > 0 ? now + sv->o.save_model_secs : 0;
    double next_sum = sv->o.save_summaries_secs > 0 ? now + sv->o.save_summaries_secs : 0;
    int64_t last_step = read_step(sv, sv->svc_sess, s);
    double last_t = now;
    int nlog = 0;
    rill_status_clear(s);
    pthread_mutex_lock(&sv->mu);
    while (!sv->stop_requested) {
        double next = next_ckpt;
        if (next_sum && (!next || next_sum < next)) next = next_sum;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double wait = next ? next - rill__now_seconds() : 3600;
        if (wait > 0) {
            double at = (double)ts.tv_sec + ts.tv_nsec * 1e-9 + wait;
            ts.tv_sec = (time_t)at;
            ts.tv_nsec = (long)((at - (double)ts.tv_sec) * 1e9);
            pthread_cond_timedwait(&sv->cv, &sv->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&sv->mu);
        now = rill__now_seconds();
        if (next_ckpt && now >= next_ckpt) {
            if (save_checkpoint(sv, s) != RILL_OK) report(sv, s);
            next_ckpt = now + sv->o.save_model_secs;
        }
        if (next_sum && now >= next_sum) {
            record_summaries(sv, &last_step, &last_t, &nlog, s);
            if (!rill_status_ok(s)) report(sv, s);
            next_sum = now + sv->o.save_summaries_secs;
        }
        rill_status_clear(s);
        pthread_mutex_lock(&sv->mu);
    }
    pthread_mutex_unlock(&sv->mu);
    rill_status_free(s);
    return NULL;
}

/* The Placeholder (no default) among n's inputs, transitively, or NULL; seen marks nodes. */
static rill_node *needs_feed(rill_node *n, char *seen)
{
    if (seen[n->id]) return NULL;
    seen[n->id] = 1;
    if (strcmp(n->op->name, "Placeholder") == 0) return n;
    for (int i = 0; i < n->ninputs; i++) {
        rill_node *p = needs_feed(n->inputs[i].node, seen);
        if (p) return p;
    }
    for (int i = 0; i < n->ncontrol; i++) {
        rill_node *p = needs_feed(n->control_inputs[i], seen);
        if (p) return p;
    }
    return NULL;
}

/* The summary thread runs the summary op with no feeds: one that needs a placeholder would die
 * there after save_summaries_secs (TF's does, and takes the training with it). Found now, the
 * error names the summary and the placeholder. */
static bool summaries_runnable(rill_supervisor *sv, rill_status *s)
{
    if (!sv->o.is_chief || !sv->logdir || sv->o.prepare_only || sv->o.save_summaries_secs <= 0 ||
        !sv->summary_op.node)
        return true;
    rill_node *top = sv->summary_op.node;
    int nn = rill_graph_num_nodes(sv->g);
    char *seen = rill__calloc((size_t)nn + 1, 1);
    RILL_CHECK_ALLOC(seen);
    rill_node *ph = needs_feed(top, seen), *summary = top;
    /* The summary the placeholder feeds: the merged one's input that reaches it. */
    for (int i = 0; ph && strcmp(top->op->name, "MergeSummary") == 0 && i < top->ninputs; i++) {
        memset(seen, 0, (size_t)nn + 1);
        if (needs_feed(top->inputs[i].node, seen) == ph) {
            summary = top->inputs[i].node;
            break;
        }
    }
    rill__free(seen);
    if (!ph) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "The Supervisor's summary op '%s' cannot run: summary '%s' needs a value fed "
                    "for placeholder '%s', and the summary thread runs it every %g s without "
                    "feeds (TensorFlow's thread fails there later, stopping the training). Give "
                    "the Supervisor summary_op=None and write such summaries with "
                    "sv.summary_computed(sess, sess.run(summary_op, feed_dict=...)), or "
                    "summarize values that need no feed",
                    top->name, summary->name, ph->name, sv->o.save_summaries_secs);
    return false;
}

rill_session *rill_supervisor_prepare_or_wait_for_session(rill_supervisor *sv,
                                                          const rill_session_options *so,
                                                          rill_status *s)
{
    if (!summaries_runnable(sv, s)) return NULL;
    rill_session *sess = rill_session_new(sv->g, so, s);
    if (!sess) return NULL;
    /* The chief: the model restored or initialised, ready_for_local_init_op must hold (TF's
     * text otherwise), the local init op; a non-chief waits (wait_ready). */
    rill_node *rfli = sv->o.ready_for_local_init_op;
    rill_code c = sv->o.is_chief ? chief_prepare(sv, sess, s) : wait_ready(sv, sess, s);
    if (c == RILL_OK && sv->o.is_chief && rfli && ready_by(sv, rfli, sess, s) != RILL_OK) {
        char *e = rill__strdup(rill_status_message(s));
        rill_status_set(s, RILL_FAILED_PRECONDITION,
                        "Init operations did not make model ready for local_init.  Init op: %s, "
                        "error: %s", sv->init_op ? sv->init_op->name : "None", e);
        rill__free(e);
        c = RILL_FAILED_PRECONDITION;
    }
    if (c == RILL_OK && sv->o.is_chief && sv->local_init_op)
        c = rill_session_run_targets(sess, &sv->local_init_op, 1, s);
    if (c == RILL_OK && sv->o.is_chief) {
        rill_status *e = rill_status_new();
        if (ready(sv, sess, e) != RILL_OK) {
            rill_status_set(s, RILL_FAILED_PRECONDITION,
                            "Init operations did not make model ready.  Init op: %s, error: %s",
                            sv->init_op ? sv->init_op->name : "None", rill_status_message(e));
            c = RILL_FAILED_PRECONDITION;
        }
        rill_status_free(e);
    }
    if (c == RILL_OK && sv->o.is_chief && sv->logdir && !sv->o.prepare_only) {
        sv->svc_sess = rill__session_sibling(sess, s);
        if (!sv->svc_sess) c = rill_status_code(s);
    }
    if (c == RILL_OK && sv->svc_sess) {
        int64_t step = read_step(sv, sv->svc_sess, s);
        rill_status_clear(s);
        rill_summary_writer_add_session_log(sv->writer, RILL_SESSION_LOG_START, NULL, step, s);
        rill_status_clear(s);
        /* The graph, for TensorBoard's graph tab (TF's chief writes it at start too). */
        rill_summary_writer_add_graph(sv->writer, sv->g, s);
        rill_status_clear(s);
        rill_summary_writer_flush(sv->writer, s);
        rill_status_clear(s);
        if (pthread_create(&sv->svc, NULL, services_main, sv) == 0) sv->svc_started = true;
    }
    if (c != RILL_OK) {
        rill_session_free(sess);
        return NULL;
    }
    sv->sess = sess;
    return sess;
}

rill_code rill_supervisor_start_queue_runner(rill_supervisor *sv, rill_session *sess,
                                             rill_node *op, rill_status *s)
{
    if (sv->nqrs == MAX_QUEUE_RUNNERS) {
        rill_status_set(s, RILL_RESOURCE_EXHAUSTED, "at most %d queue runners", MAX_QUEUE_RUNNERS);
        return RILL_RESOURCE_EXHAUSTED;
    }
    rill_queue_runner *qr = rill_queue_runner_start(sess, op, s);
    if (!qr) return rill_status_code(s);
    sv->qrs[sv->nqrs++] = qr;
    return RILL_OK;
}

bool rill_supervisor_should_stop(rill_supervisor *sv)
{
    for (int i = 0; i < sv->nqrs; i++) {
        if (rill_queue_runner_running(sv->qrs[i])) continue; /* the common case: no allocation */
        rill_status *e = rill_status_new();
        if (rill_queue_runner_error(sv->qrs[i], e) != RILL_OK) qr_ended(sv, e);
        rill_status_free(e);
    }
    pthread_mutex_lock(&sv->mu);
    bool stop = sv->stop_requested;
    pthread_mutex_unlock(&sv->mu);
    return stop;
}

void rill_supervisor_request_stop(rill_supervisor *sv, const rill_status *error)
{
    if (error && !rill_status_ok(error)) {
        report(sv, error);
        return;
    }
    pthread_mutex_lock(&sv->mu);
    sv->stop_requested = true;
    pthread_cond_broadcast(&sv->cv);
    pthread_mutex_unlock(&sv->mu);
}

rill_code rill_supervisor_summary_computed(rill_supervisor *sv, const rill_tensor *summary,
                                           int64_t step, rill_status *s)
{
    if (!sv->writer) {
        rill_status_set(s, RILL_FAILED_PRECONDITION, "Writing a summary requires a summary writer.");
        return RILL_FAILED_PRECONDITION;
    }
    rill_summary_writer_add_summary(sv->writer, summary, step, s);
    return rill_status_code(s);
}

rill_summary_writer *rill_supervisor_summary_writer(rill_supervisor *sv)
{
    return sv->writer;
}

rill_saver *rill_supervisor_saver(rill_supervisor *sv)
{
    return sv->saver;
}

rill_code rill_supervisor_stop(rill_supervisor *sv, rill_status *s)
{
    rill_supervisor_request_stop(sv, NULL);
    if (sv->svc_started) {
        pthread_join(sv->svc, NULL);
        sv->svc_started = false;
    }
    rill_status *e = rill_status_new();
    for (int i = 0; i < sv->nqrs; i++) {
        if (rill_queue_runner_stop(sv->qrs[i], e) != RILL_OK && rill_status_code(e) != RILL_CANCELLED)
            qr_ended(sv, e);
        rill_status_clear(e);
    }
    sv->nqrs = 0;
    if (sv->svc_sess && sv->saver && rill_status_ok(sv->error) && save_checkpoint(sv, e) != RILL_OK)
        report(sv, e);
    rill_status_free(e);
    if (sv->writer) {
        rill_status *w = rill_status_new();
        rill_summary_writer_add_session_log(sv->writer, RILL_SESSION_LOG_STOP, NULL, -1, w);
        rill_summary_writer_flush(sv->writer, w);
        rill_status_free(w);
    }
    rill_session_free(sv->svc_sess);
    sv->svc_sess = NULL;
    pthread_mutex_lock(&sv->mu);
    rill_status_copy(s, sv->error);
    pthread_mutex_unlock(&sv->mu);
    return rill_status_code(s);
}

void rill_supervisor_free(rill_supervisor *sv)
{
    if (!sv) return;
    if (sv->svc_started || sv->nqrs) {
        rill_status *s = rill_status_new();
        rill_supervisor_stop(sv, s);
        rill_status_free(s);
    }
    rill_session_free(sv->svc_sess);
    rill_summary_writer_free(sv->writer);
    if (sv->own_saver) rill_saver_free(sv->saver);
    rill__free(sv->logdir);
    rill__free(sv->save_path);
    rill_status_free(sv->error);
    pthread_mutex_destroy(&sv->mu);
    pthread_cond_destroy(&sv->cv);
    rill__free(sv);
}
