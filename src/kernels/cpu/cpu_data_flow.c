/* cpu_data_flow.c - gradient accumulators and FIFO queues (TF's ConditionalAccumulator and
 * FIFOQueue), the parts SyncReplicasOptimizer is made of. See graph/ops_data_flow.c.
 *
 * Accumulator (reference §7.2): a gradient tagged with a local step older than the
 * accumulator's global step is dropped (and counted); a take waits for num_required fresh
 * gradients, returns their mean, and advances the accumulator's step. Waits are slices of
 * 50 ms that check the op's timeout, the step's deadline (RunOptions / operation timeout) and
 * the session's cancellation.
 *
 * Stalls name who is missing (beyond TF, whose errors name only the queue or accumulator): an
 * accumulator knows which task each gradient came from (the task its apply's input was pushed
 * from: the partitioner's _RemoteRecv names it) and counts the current step's per task. The
 * tasks it expects are every task that ever sent it a gradient and every task of the cluster's
 * "worker" and "chief" jobs; those that have not sent one for the step are the missing ones. A
 * take (the chief's sync step) or a dequeue (a worker waiting for its token) that has waited
 * the task's stall interval (5 s) logs them, at most once per interval per process, registers
 * its wait so the task can tell the waiting masters (rill__resource_mgr_waits), and at its
 * deadline fails with an error that names them: "sync step 12 waited 300 s for gradients from
 * /job:worker/task:2: ...". */
#include "cpu_kernels.h"

#include <math.h>
#include <string.h>
#include <time.h>

#define DEFAULT_TIMEOUT_S 300.0

static const char *shared_name(const rill__kctx *ctx)
{
    const rill__attr *a = rill__node_attr(ctx->node, "shared_name");
    return a && a->v.s && a->v.s[0] ? a->v.s : ctx->node->name;
}

static double timeout_s(const rill__kctx *ctx)
{
    int64_t ms = rill__attr_int(ctx->node, "timeout_ms", 0);
    return ms > 0 ? (double)ms / 1000.0 : DEFAULT_TIMEOUT_S;
}

typedef enum { WAIT_ON, WAIT_CANCELLED, WAIT_STEP_DEADLINE, WAIT_TIMEOUT } wait_end;

/* Waits on cv for up to 50 ms; anything but WAIT_ON when the step's deadline or the op's own
 * (deadline) passed or the session was cancelled: the caller fails ctx with fail_wait. */
static wait_end wait_slice(rill__kctx *ctx, pthread_cond_t *cv, pthread_mutex_t *mu,
                           double deadline)
{
    if (rill__kctx_cancelled(ctx)) return WAIT_CANCELLED;
    double now = rill__now_seconds();
    if (ctx->deadline && now >= ctx->deadline) return WAIT_STEP_DEADLINE;
    if (now >= deadline) return WAIT_TIMEOUT;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + 50L * 1000 * 1000;
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(cv, mu, &ts);
    return WAIT_ON;
}

/* Fails ctx for how the wait ended. what names the resource ("Taking 3 gradients from
 * accumulator 'w/grad_accum'"); lead, when not empty, goes first (who is missing). */
static void fail_wait(rill__kctx *ctx, wait_end e, const char *what, const char *lead,
                      const char *tail)
{
    const char *sep = lead && *lead ? ": " : "";
    lead = lead ? lead : "";
    tail = tail ? tail : "";
    if (e == WAIT_CANCELLED)
        rill__kctx_fail(ctx, RILL_CANCELLED, "%s%s%s was cancelled%s", lead, sep, what, tail);
    else if (e == WAIT_STEP_DEADLINE)
        rill__kctx_fail(ctx, RILL_DEADLINE_EXCEEDED,
                        "Timed out waiting for notification: the step's %lld ms deadline "
                        "passed: %s%s%s%s",
                        (long long)ctx->timeout_ms, lead, sep, what, tail);
    else
        rill__kctx_fail(ctx, RILL_DEADLINE_EXCEEDED, "%s%s%s timed out after %g s%s", lead, sep,
                        what, timeout_s(ctx), tail);
}

/* At most one stall line per interval per process, however many kernels wait: a step with a
 * hundred accumulators waiting on one missing worker logs it once. */
static pthread_mutex_t stall_log_mu = PTHREAD_MUTEX_INITIALIZER;
static double stall_log_next;

static bool stall_log_due(double interval)
{
    double now = rill__now_seconds();
    pthread_mutex_lock(&stall_log_mu);
    bool due = now >= stall_log_next;
    if (due) stall_log_next = now + interval * 0.9;
    pthread_mutex_unlock(&stall_log_mu);
    return due;
}

/* The task that node's value came from over the wire ("/job:worker/task:2"): a _RemoteRecv at
 * most depth producers back (a Cast of the local step runs beside the accumulator). */
static bool source_task(const rill_node *n, int depth, char *out, size_t len)
{
    if (strcmp(n->op->name, "_RemoteRecv") == 0) {
        const rill__attr *j = rill__node_attr(n, "send_job");
        snprintf(out, len, "/job:%s/task:%lld", j && j->v.s ? j->v.s : "?",
                 (long long)rill__attr_int(n, "send_task", 0));
        return true;
    }
    for (int i = 0; depth > 0 && i < n->ninputs; i++)
        if (n->inputs[i].node && source_task(n->inputs[i].node, depth - 1, out, len)) return true;
    return false;
}

/* ------------------------------------------------------------------ accumulators --- */

typedef struct accum {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *name;
    rill_dtype dtype;
    rill_shape shape; /* may be partly unknown until the first gradient */
    int64_t global_step;
    int counter;
    int want; /* what a waiting take needs (0: none waits): appliers wake it only then */
    int64_t dropped;
    double *sum; /* accumulated in double whatever the dtype */
    int64_t numel;
    /* Who sent gradients: every task that ever did (first seen first), and how many each sent
     * for the current step (since the last take). */
    char **from;
    int *got;
    int nfrom;
    /* The current step's stall: when a take first waited for it (0: none has; cleared when a
     * take completes), and how many gradients that take needed. A take that timed out leaves
     * it: the step is still not done, and a worker waiting for its token waits for that. */
    double stalled_since;
    int stall_need;
    int64_t takes;    /* takes completed (the chief's queue runner's steps) */
    double last_take; /* when the last one completed */
    rill__resource_mgr *rm; /* the manager it lives in (its cluster's tasks) */
} accum;

typedef struct accum_args {
    const char *name;
    rill_dtype dtype;
    rill_shape shape;
    rill__resource_mgr *rm;
} accum_args;

static void *accum_new(void *arg)
{
    accum_args *a = arg;
    accum *x = rill__calloc(1, sizeof *x);
    RILL_CHECK_ALLOC(x);
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    x->name = rill__strdup(a->name);
    x->dtype = a->dtype;
    x->shape = a->shape;
    x->numel = -1;
    x->rm = a->rm;
    return x;
}

static void accum_free(void *p)
{
    accum *x = p;
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    rill__free(x->name);
    rill__free(x->sum);
    for (int i = 0; i < x->nfrom; i++) rill__free(x->from[i]);
    rill__free(x->from);
    rill__free(x->got);
    rill__free(x);
}

static accum *get_accum(rill__kctx *ctx)
{
    const rill__attr *sh = rill__node_attr(ctx->node, "shape");
    accum_args a = {shared_name(ctx), rill__attr_type(ctx->node, "dtype", RILL_FLOAT),
                    sh ? sh->v.shape : rill_shape_unknown(), ctx->rm};
    if (!ctx->rm) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "no resource manager for accumulator '%s'", a.name);
        return NULL;
    }
    accum *x = rill__resource_lookup(ctx->rm, "accumulator", a.name, accum_new, &a, accum_free);
    if (x && x->dtype != a.dtype) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "accumulator '%s' holds %s gradients, this op uses %s", a.name,
                        rill_dtype_name(x->dtype), rill_dtype_name(a.dtype));
        return NULL;
    }
    return x;
}

/* The current step's gradient from task src (under x->mu). */
static void count_from(accum *x, const char *src)
{
    int i = 0;
    while (i < x->nfrom && strcmp(x->from[i], src) != 0) i++;
    if (i == x->nfrom) {
        x->from = rill__realloc(x->from, (size_t)(x->nfrom + 1) * sizeof *x->from);
        x->got = rill__realloc(x->got, (size_t)(x->nfrom + 1) * sizeof *x->got);
        RILL_CHECK_ALLOC(x->from);
        RILL_CHECK_ALLOC(x->got);
        x->from[i] = rill__strdup(src);
        x->got[i] = 0;
        x->nfrom++;
    }
    x->got[i]++;
}

/* The missing tasks of x's current step, as a report's task list. */
typedef struct missing {
    accum *x;
    rill__wait_report *r;
} missing;

static bool training_task(const char *task)
{
    return strncmp(task, "/job:worker/", 12) == 0 || strncmp(task, "/job:chief/", 11) == 0;
}

static void add_missing(rill__wait_report *r, const char *task)
{
    for (int i = 0; i < r->ntasks && i < RILL__WAIT_TASKS; i++)
        if (strcmp(r->tasks[i], task) == 0) return;
    if (r->ntasks < RILL__WAIT_TASKS) snprintf(r->tasks[r->ntasks], sizeof r->tasks[0], "%s", task);
    r->ntasks++;
}

static void roster_missing(void *arg, const char *task)
{
    missing *m = arg;
    if (!training_task(task)) return;
    for (int i = 0; i < m->x->nfrom; i++)
        if (strcmp(m->x->from[i], task) == 0) return; /* counted below */
    add_missing(m->r, task);
}

/* Under x->mu: the tasks expected (every task that ever sent x a gradient, every task of the
 * cluster's worker and chief jobs) that sent none for the current step, into r->tasks. */
static void find_missing(accum *x, rill__wait_report *r)
{
    for (int i = 0; i < x->nfrom; i++)
        if (!x->got[i]) add_missing(r, x->from[i]);
    missing m = {x, r};
    if (x->rm) rill__resource_mgr_each_task(x->rm, roster_missing, &m);
}

/* "/job:worker/task:2 and /job:worker/task:3" (the first few, "and N more" past them). */
static void list_tasks(const rill__wait_report *r, char *out, size_t len)
{
    size_t off = 0;
    int shown = r->ntasks < 4 ? r->ntasks : 3;
    out[0] = 0;
    for (int i = 0; i < shown && off < len; i++) {
        const char *sep = i == 0 ? "" : i == r->ntasks - 1 ? " and " : ", ";
        off += (size_t)snprintf(out + off, len - off, "%s%s", sep, r->tasks[i]);
    }
    if (shown < r->ntasks && off < len)
        snprintf(out + off, len - off, " and %d more", r->ntasks - shown);
}

/* "from A, B" (the tasks that sent gradients for the step), or "" (under x->mu). */
static void list_present(const accum *x, char *out, size_t len)
{
    size_t off = 0;
    out[0] = 0;
    int shown = 0;
    for (int i = 0; i < x->nfrom && off < len; i++) {
        if (!x->got[i]) continue;
        if (shown == 4) {
            snprintf(out + off, len - off, ", ...");
            break;
        }
        off += (size_t)snprintf(out + off, len - off, "%s%s", shown ? ", " : "from ", x->from[i]);
        shown++;
    }
}

/* Under x->mu: the stall of x's take of need gradients that has waited waited s, as a report:
 * its text (what) and the missing tasks. */
static void describe_accum(accum *x, int need, double waited, rill__wait_report *r)
{
    find_missing(x, r);
    char who[512], present[512];
    list_tasks(r, who, sizeof who);
    list_present(x, present, sizeof present);
    if (r->ntasks)
        snprintf(r->what, sizeof r->what,
                 "sync step %lld has waited %.0f s for gradients from %.400s (accumulator "
                 "'%.200s' has %d of the %d it takes%s%.300s)",
                 (long long)x->global_step, waited, who, x->name, x->counter, need,
                 *present ? ", " : "", present);
    else
        snprintf(r->what, sizeof r->what,
                 "sync step %lld has waited %.0f s: accumulator '%.200s' has %d of the %d "
                 "gradients it takes%s%.300s",
                 (long long)x->global_step, waited, x->name, x->counter, need, *present ? ", " : "",
                 present);
}

/* The training tasks of the cluster ("worker" and "chief" jobs): how many, and how many of
 * them told this task they finished. */
typedef struct trainers {
    rill__resource_mgr *rm;
    int n, finished;
    bool has_chief_job;
} trainers;

static void count_trainer(void *arg, const char *task)
{
    trainers *t = arg;
    if (!training_task(task)) return;
    t->n++;
    t->finished += rill__resource_mgr_is_finished(t->rm, task);
    t->has_chief_job |= strncmp(task, "/job:chief/", 11) == 0;
}

/* The chief (TF's: task 0 of the "chief" job, else of "worker"), whose queue runner makes
 * the tokens, told this task it finished: no token will come again. msg gets why. */
static bool chief_finished(rill__resource_mgr *rm, char *msg, size_t len)
{
    trainers t = {rm, 0, 0, false};
    rill__resource_mgr_each_task(rm, count_trainer, &t);
    const char *chief = t.has_chief_job ? "/job:chief/task:0" : "/job:worker/task:0";
    if (t.n == 0 || !rill__resource_mgr_is_finished(rm, chief)) return false;
    snprintf(msg, len,
             "no token will come: the chief %s, whose queue runner makes them, finished training "
             "(told this task so) (TensorFlow would wait here forever)",
             chief);
    return true;
}

/* Under x->mu: whether x's current step can never complete, with `waiting` workers blocked on
 * their tokens: every training task that has not finished (told this task so) and is not
 * waiting for a token could still send one gradient, and with all of those it still would not
 * have need. Only once some task finished: TensorFlow waits forever there (the other workers
 * stopped at the last step and this one's gradient came too late or was stale); rill ends the
 * step with OUT_OF_RANGE, which ends a MonitoredSession's or managed_session's loop as the end
 * of the input does. msg gets why. */
static bool cannot_complete(accum *x, int need, int waiting, char *msg, size_t len)
{
    if (!x->rm || x->counter >= need) return false;
    trainers t = {x->rm, 0, 0, false};
    rill__resource_mgr_each_task(x->rm, count_trainer, &t);
    int can_send = t.n - t.finished - waiting;
    if (t.finished == 0 || x->counter + (can_send > 0 ? can_send : 0) >= need) return false;
    char present[512];
    list_present(x, present, sizeof present);
    snprintf(msg, len,
             "sync step %lld cannot complete: accumulator '%.200s' takes %d gradients and has "
             "%d%s%.300s; %d of the cluster's %d training tasks finished (told this task so) "
             "and %d wait%s for %s token%s, so no more gradients will come (TensorFlow would "
             "wait here forever)",
             (long long)x->global_step, x->name, need, x->counter, *present ? " " : "", present,
             t.finished, t.n, waiting, waiting == 1 ? "s" : "", waiting == 1 ? "its" : "their",
             waiting == 1 ? "" : "s");
    return true;
}

/* A token's wait polls cannot_complete this often, and fails once it held this long (a
 * worker's last gradient may still be on its way when the others' reports come). */
#define FINISHED_POLL_S 0.5
#define FINISHED_GRACE_S 2.0

static double elem(const rill_tensor *t, int64_t i)
{
    const void *p = rill_tensor_data(t);
    switch (t->dtype) {
    case RILL_FLOAT: return ((const float *)p)[i];
    case RILL_DOUBLE: return ((const double *)p)[i];
    case RILL_HALF: return rill_half_to_float(((const rill_half *)p)[i]);
    default: return 0;
    }
}

static bool shape_compatible(const rill_shape *want, const rill_tensor *g)
{
    if (want->rank < 0) return true;
    if (want->rank != g->shape.rank) return false;
    for (int d = 0; d < want->rank; d++)
        if (want->dims[d] >= 0 && want->dims[d] != g->shape.dims[d]) return false;
    return true;
}

static void apply_grad_kernel(rill__kctx *ctx)
{
    accum *x = get_accum(ctx);
    if (!x) return;
    const rill_tensor *ls = ctx->inputs[0], *g = ctx->inputs[1];
    if (g->dtype != RILL_FLOAT && g->dtype != RILL_DOUBLE && g->dtype != RILL_HALF) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "accumulator '%s': %s gradients are not supported",
                        x->name, rill_dtype_name(g->dtype));
        return;
    }
    int64_t local_step = *(const int64_t *)rill_tensor_data(ls);
    int32_t accepted = 0;
    char src[96];
    bool known = source_task(ctx->node->inputs[1].node, 2, src, sizeof src) ||
                 source_task(ctx->node->inputs[0].node, 2, src, sizeof src);
    pthread_mutex_lock(&x->mu);
    if (local_step >= x->global_step) {
        if (!shape_compatible(&x->shape, g) || (x->numel >= 0 && x->numel != g->numel)) {
            char a[96], b[96];
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Shape mismatch: expected shape %s, got %s for accumulator '%s'",
                            rill_shape_str(&x->shape, a, sizeof a),
                            rill_shape_str(&g->shape, b, sizeof b), x->name);
            pthread_mutex_unlock(&x->mu);
            return;
        }
        if (x->numel < 0) {
            x->shape = g->shape;
            x->numel = g->numel;
            x->sum = rill__calloc((size_t)(g->numel ? g->numel : 1), sizeof *x->sum);
            RILL_CHECK_ALLOC(x->sum);
        }
        if (x->counter == 0)
            for (int64_t i = 0; i < g->numel; i++) x->sum[i] = elem(g, i);
        else
            for (int64_t i = 0; i < g->numel; i++) x->sum[i] += elem(g, i);
        x->counter++;
        if (known) count_from(x, src);
        accepted = 1;
        if (x->want && x->counter >= x->want) pthread_cond_broadcast(&x->cv);
    } else {
        x->dropped++;
    }
    pthread_mutex_unlock(&x->mu);
    rill_shape sc = rill_shape_scalar();
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_INT32, &sc);
    if (out) *(int32_t *)rill_tensor_data(out) = accepted;
}

typedef struct take_wait {
    accum *x;
    int need;
} take_wait;

static void describe_take(void *arg, rill__wait_report *r)
{
    take_wait *t = arg;
    pthread_mutex_lock(&t->x->mu);
    double since = t->x->stalled_since;
    describe_accum(t->x, t->need, since ? rill__now_seconds() - since : 0, r);
    pthread_mutex_unlock(&t->x->mu);
}

static void take_grad_kernel(rill__kctx *ctx)
{
    accum *x = get_accum(ctx);
    if (!x) return;
    int32_t need = *(const int32_t *)rill_tensor_data(ctx->inputs[0]);
    if (need <= 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Argument num_required must be positive, but was %d", (int)need);
        return;
    }
    char what[300];
    snprintf(what, sizeof what, "Taking %d gradients from accumulator '%s'", (int)need, x->name);
    double start = rill__now_seconds(), deadline = start + timeout_s(ctx);
    double interval = rill__resource_mgr_stall_report_s(ctx->rm);
    double next_report = interval > 0 ? start + interval : INFINITY;
    take_wait tw = {x, need};
    rill__wait w = {
        .owner = ctx->step_owner, .step = ctx->step_id, .describe = describe_take, .arg = &tw};
    rill__resource_mgr_wait_begin(ctx->rm, &w);
    pthread_mutex_lock(&x->mu);
    if (x->counter < need && !x->stalled_since) x->stalled_since = start;
    if (x->counter < need) x->stall_need = need;
    wait_end e = WAIT_ON;
    while (x->counter < need) {
        x->want = need;
        e = wait_slice(ctx, &x->cv, &x->mu, deadline);
        x->want = 0;
        if (e != WAIT_ON) break;
        double now = rill__now_seconds();
        if (now >= next_report && x->counter < need) {
            next_report = now + interval;
            if (stall_log_due(interval)) {
                rill__wait_report r = {0};
                describe_accum(x, need, now - x->stalled_since, &r);
                rill__log(RILL_LOG_WARNING, "%s", r.what);
            }
        }
    }
    if (e != WAIT_ON) {
        /* Who is missing goes first: "sync step 12 waited 300 s for gradients from ...". */
        rill__wait_report r = {0};
        find_missing(x, &r);
        char who[512], lead[700] = "", present[512], tail[700];
        list_tasks(&r, who, sizeof who);
        list_present(x, present, sizeof present);
        if (r.ntasks)
            snprintf(lead, sizeof lead, "sync step %lld waited %.0f s for gradients from %s",
                     (long long)x->global_step, rill__now_seconds() - x->stalled_since, who);
        snprintf(tail, sizeof tail, " (sync step %lld: it has %d of %d%s%s)",
                 (long long)x->global_step, x->counter, (int)need, *present ? ", " : "", present);
        pthread_mutex_unlock(&x->mu);
        rill__resource_mgr_wait_end(ctx->rm, &w);
        fail_wait(ctx, e, what, lead, tail);
        return;
    }
    x->stalled_since = 0;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (out) {
        void *p = rill_tensor_data(out);
        for (int64_t i = 0; i < x->numel; i++) {
            double v = x->sum[i] / x->counter;
            if (x->dtype == RILL_FLOAT) ((float *)p)[i] = (float)v;
            else if (x->dtype == RILL_DOUBLE) ((double *)p)[i] = v;
            else ((rill_half *)p)[i] = rill_half_from_float((float)v);
        }
        x->counter = 0;
        for (int i = 0; i < x->nfrom; i++) x->got[i] = 0;
        x->global_step++;
        x->takes++;
        x->last_take = rill__now_seconds();
    }
    pthread_mutex_unlock(&x->mu);
    rill__resource_mgr_wait_end(ctx->rm, &w);
}

static void set_global_step_kernel(rill__kctx *ctx)
{
    accum *x = get_accum(ctx);
    if (!x) return;
    int64_t step = *(const int64_t *)rill_tensor_data(ctx->inputs[0]);
    pthread_mutex_lock(&x->mu);
    if (step < x->global_step)
        rill__log(RILL_LOG_WARNING,
                  "Attempt to set current_global_step_ to smaller value: current_global_step_ = "
                  "%lld >= %lld = new_global_step (accumulator '%s')",
                  (long long)x->global_step, (long long)step, x->name);
    x->global_step = step;
    pthread_mutex_unlock(&x->mu);
}

static void accum_count_kernel(rill__kctx *ctx)
{
    accum *x = get_accum(ctx);
    if (!x) return;
    bool dropped = strcmp(ctx->node->op->name, "AccumulatorNumDropped") == 0;
    rill_shape sc = rill_shape_scalar();
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, dropped ? RILL_INT64 : RILL_INT32, &sc);
    if (!out) return;
    pthread_mutex_lock(&x->mu);
    if (dropped) *(int64_t *)rill_tensor_data(out) = x->dropped;
    else *(int32_t *)rill_tensor_data(out) = x->counter;
    pthread_mutex_unlock(&x->mu);
}

/* ------------------------------------------------------------------------ queues --- */

typedef struct fifo {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *name;
    rill_dtype dtype;
    int64_t capacity; /* < 0: unbounded */
    rill_tensor **items;
    int64_t head, n, cap;
    /* Dequeuers are served in arrival order (as TF's queues): without it, a fast worker that
     * asks again at once can take every token of a step and starve the others. */
    struct waiter *first, *last;
} fifo;

typedef struct waiter {
    struct waiter *prev, *next;
} waiter;

static void waiter_remove(fifo *q, waiter *w)
{
    if (w->prev) w->prev->next = w->next;
    else q->first = w->next;
    if (w->next) w->next->prev = w->prev;
    else q->last = w->prev;
}

typedef struct fifo_args {
    const char *name;
    rill_dtype dtype;
    int64_t capacity;
} fifo_args;

static void *fifo_new(void *arg)
{
    fifo_args *a = arg;
    fifo *q = rill__calloc(1, sizeof *q);
    RILL_CHECK_ALLOC(q);
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->name = rill__strdup(a->name);
    q->dtype = a->dtype;
    q->capacity = a->capacity;
    return q;
}

static void fifo_free(void *p)
{
    fifo *q = p;
    for (int64_t i = 0; i < q->n; i++) rill_tensor_free(q->items[(q->head + i) % q->cap]);
    rill__free(q->items);
    rill__free(q->name);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    rill__free(q);
}

static fifo *get_fifo(rill__kctx *ctx)
{
    fifo_args a = {shared_name(ctx), rill__attr_type(ctx->node, "dtype", RILL_INT64),
                   rill__attr_int(ctx->node, "capacity", -1)};
    if (!ctx->rm) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "no resource manager for queue '%s'", a.name);
        return NULL;
    }
    fifo *q = rill__resource_lookup(ctx->rm, "queue", a.name, fifo_new, &a, fifo_free);
    if (q && q->dtype != a.dtype) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "queue '%s' holds %s, this op uses %s",
                        a.name, rill_dtype_name(q->dtype), rill_dtype_name(a.dtype));
        return NULL;
    }
    return q;
}

static void fifo_push(fifo *q, rill_tensor *t)
{
    if (q->n == q->cap) {
        int64_t cap = q->cap ? q->cap * 2 : 16;
        rill_tensor **items = rill__calloc((size_t)cap, sizeof *items);
        RILL_CHECK_ALLOC(items);
        for (int64_t i = 0; i < q->n; i++) items[i] = q->items[(q->head + i) % q->cap];
        rill__free(q->items);
        q->items = items;
        q->cap = cap;
        q->head = 0;
    }
    q->items[(q->head + q->n) % q->cap] = t;
    q->n++;
}

static void describe_text(void *arg, rill__wait_report *r)
{
    snprintf(r->what, sizeof r->what, "%s", (const char *)arg);
}

static void enqueue_many_kernel(rill__kctx *ctx)
{
    fifo *q = get_fifo(ctx);
    if (!q) return;
    const rill_tensor *v = ctx->inputs[0];
    if (v->shape.rank < 1 || v->dtype == RILL_STRING) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "enqueue_many to '%s' needs a numeric tensor of rank >= 1", q->name);
        return;
    }
    int64_t count = v->shape.dims[0];
    int64_t per = count ? v->numel / count : 0;
    size_t bytes = (size_t)per * rill_dtype_size(v->dtype);
    rill_shape el = rill_shape_make(v->shape.rank - 1, v->shape.dims + 1);
    char what[300];
    snprintf(what, sizeof what, "Enqueueing into the full queue '%s'", q->name);
    double deadline = rill__now_seconds() + timeout_s(ctx);
    rill__wait w = {
        .owner = ctx->step_owner, .step = ctx->step_id, .describe = describe_text, .arg = what};
    rill__resource_mgr_wait_begin(ctx->rm, &w);
    pthread_mutex_lock(&q->mu);
    for (int64_t i = 0; i < count; i++) {
        wait_end e = WAIT_ON;
        while (q->capacity >= 0 && q->n >= q->capacity && e == WAIT_ON)
            e = wait_slice(ctx, &q->cv, &q->mu, deadline);
        if (e != WAIT_ON) {
            pthread_mutex_unlock(&q->mu);
            rill__resource_mgr_wait_end(ctx->rm, &w);
            fail_wait(ctx, e, what, NULL, NULL);
            return;
        }
        rill_tensor *t = rill_tensor_new_shape(v->dtype, &el);
        RILL_CHECK_ALLOC(t);
        memcpy(rill_tensor_data(t), (const char *)rill_tensor_data(v) + (size_t)i * bytes,
               bytes);
        fifo_push(q, t);
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    rill__resource_mgr_wait_end(ctx->rm, &w);
}

/* The accumulator of the task whose step has stalled longest (NULL: none has): what a token
 * waits for, when the token queue sits beside the accumulators (the global step's ps). */
typedef struct longest {
    accum *x;
    double since;
} longest;

static void find_longest(void *arg, void *obj)
{
    longest *l = arg;
    accum *x = obj;
    pthread_mutex_lock(&x->mu);
    double since = x->stalled_since;
    pthread_mutex_unlock(&x->mu);
    if (since > 0 && (!l->x || since < l->since)) *l = (longest){x, since};
}

typedef struct dequeue_wait {
    rill__resource_mgr *rm;
    const char *queue, *what;
} dequeue_wait;

/* The sync step a token waits for, when one has stalled here (a take waited for it and it is
 * not done): r gets its text and missing tasks, *waited the step's wait so far, *step its
 * number. False when no step has stalled on this task. */
static bool describe_sync_step(rill__resource_mgr *rm, rill__wait_report *r, double *waited,
                               int64_t *step)
{
    longest l = {0};
    rill__resource_each(rm, "accumulator", find_longest, &l);
    if (!l.x) return false;
    pthread_mutex_lock(&l.x->mu);
    bool waits = l.x->stalled_since > 0;
    if (waits) {
        *waited = rill__now_seconds() - l.x->stalled_since;
        *step = l.x->global_step;
        describe_accum(l.x, l.x->stall_need, *waited, r);
    }
    pthread_mutex_unlock(&l.x->mu);
    return waits;
}

/* Whether the sync step that has stalled longest here can never complete with `waiting`
 * workers waiting for tokens (why: the text). */
static bool sync_step_cannot_complete(rill__resource_mgr *rm, int waiting, char *why, size_t len)
{
    if (chief_finished(rm, why, len)) return true;
    longest l = {0};
    rill__resource_each(rm, "accumulator", find_longest, &l);
    if (!l.x) return false;
    pthread_mutex_lock(&l.x->mu);
    bool hopeless = l.x->stalled_since > 0 &&
                    cannot_complete(l.x, l.x->stall_need, waiting, why, len);
    pthread_mutex_unlock(&l.x->mu);
    return hopeless;
}

static void first_accum(void *arg, void *obj)
{
    accum **x = arg;
    if (!*x) *x = obj;
}

/* For a wait on the token queue with no sync step stalled here: whether the chief's queue
 * runner (the only taker from the accumulators, and maker of the tokens) takes at all. out gets
 * the text when an accumulator lives here and no take waits on it; false otherwise. */
static bool describe_no_take(rill__resource_mgr *rm, const char *queue, char *out, size_t len)
{
    if (strcmp(queue, "sync_token_q") != 0) return false;
    accum *x = NULL;
    rill__resource_each(rm, "accumulator", first_accum, &x);
    if (!x) return false;
    pthread_mutex_lock(&x->mu);
    bool idle = x->want == 0 && x->stalled_since == 0;
    char present[512];
    list_present(x, present, sizeof present);
    if (idle && x->takes == 0)
        snprintf(out, len,
                 "the chief's queue runner has not started: nothing has taken gradients from "
                 "accumulator '%.200s' yet (it holds %d for sync step %lld%s%.300s)",
                 x->name, x->counter, (long long)x->global_step, *present ? ", " : "", present);
    else if (idle)
        snprintf(out, len,
                 "the chief's queue runner takes no more: its last take from accumulator "
                 "'%.200s' was %.0f s ago (it holds %d gradients for sync step %lld%s%.300s)",
                 x->name, rill__now_seconds() - x->last_take, x->counter,
                 (long long)x->global_step, *present ? ", " : "", present);
    pthread_mutex_unlock(&x->mu);
    return idle;
}

static void describe_dequeue(void *arg, rill__wait_report *r)
{
    dequeue_wait *d = arg;
    double waited;
    int64_t step;
    rill__wait_report sync = {0};
    if (!describe_sync_step(d->rm, &sync, &waited, &step)) {
        char idle[1000];
        if (describe_no_take(d->rm, d->queue, idle, sizeof idle))
            snprintf(r->what, sizeof r->what, "waiting for a token from queue '%.200s': %.700s",
                     d->queue, idle);
        else
            snprintf(r->what, sizeof r->what, "%s", d->what);
        return;
    }
    *r = sync;
    snprintf(r->what, sizeof r->what, "waiting for a token from queue '%.200s': %.700s", d->queue,
             sync.what);
}

static void dequeue_kernel(rill__kctx *ctx)
{
    fifo *q = get_fifo(ctx);
    if (!q) return;
    char what[300];
    snprintf(what, sizeof what, "Dequeueing from queue '%s' (empty: is the chief's queue runner "
                                "running?)",
             q->name);
    double start = rill__now_seconds(), deadline = start + timeout_s(ctx);
    double interval = rill__resource_mgr_stall_report_s(ctx->rm);
    double next_report = interval > 0 ? start + interval : INFINITY;
    dequeue_wait dw = {ctx->rm, q->name, what};
    rill__wait w = {
        .owner = ctx->step_owner, .step = ctx->step_id, .describe = describe_dequeue, .arg = &dw};
    rill__resource_mgr_wait_begin(ctx->rm, &w);
    pthread_mutex_lock(&q->mu);
    waiter me = {q->last, NULL};
    if (q->last) q->last->next = &me;
    else q->first = &me;
    q->last = &me;
    wait_end e = WAIT_ON;
    double next_poll = start + FINISHED_POLL_S, hopeless_since = 0;
    char why[1500];
    while (q->n == 0 || q->first != &me) {
        e = wait_slice(ctx, &q->cv, &q->mu, deadline);
        if (e != WAIT_ON) break;
        double now = rill__now_seconds();
        if (now >= next_poll && strcmp(q->name, "sync_token_q") == 0) {
            /* SyncReplicasOptimizer's token queue (src/train/sync_replicas.c names it): the
             * sync step this token waits for may never complete (cannot_complete); the
             * accumulators' locks are taken outside the queue's. */
            next_poll = now + FINISHED_POLL_S;
            int waiting = 0;
            for (waiter *wt = q->first; wt; wt = wt->next) waiting++;
            pthread_mutex_unlock(&q->mu);
            bool hopeless = sync_step_cannot_complete(ctx->rm, waiting, why, sizeof why);
            pthread_mutex_lock(&q->mu);
            if (!hopeless) {
                hopeless_since = 0;
            } else if (!hopeless_since) {
                hopeless_since = now;
            } else if (now - hopeless_since >= FINISHED_GRACE_S && (q->n == 0 || q->first != &me)) {
                waiter_remove(q, &me);
                pthread_cond_broadcast(&q->cv);
                pthread_mutex_unlock(&q->mu);
                rill__resource_mgr_wait_end(ctx->rm, &w);
                rill__log(RILL_LOG_WARNING, "ending a step waiting for a token from queue '%s': %s",
                          q->name, why);
                rill__kctx_fail(ctx, RILL_OUT_OF_RANGE, "waiting for a token from queue '%s': %s",
                                q->name, why);
                return;
            }
        }
        if (now < next_report) continue;
        next_report = now + interval;
        /* What the token waits for: the accumulators' locks are taken outside the queue's. */
        pthread_mutex_unlock(&q->mu);
        rill__wait_report r = {0};
        double waited;
        int64_t step;
        char idle[1000];
        if (describe_sync_step(ctx->rm, &r, &waited, &step) && stall_log_due(interval))
            rill__log(RILL_LOG_WARNING, "waiting %.0f s for a token from queue '%s': %s",
                      now - start, q->name, r.what);
        else if (describe_no_take(ctx->rm, q->name, idle, sizeof idle) && stall_log_due(interval))
            rill__log(RILL_LOG_WARNING, "waiting %.0f s for a token from queue '%s': %s",
                      now - start, q->name, idle);
        pthread_mutex_lock(&q->mu);
    }
    if (e != WAIT_ON) {
        waiter_remove(q, &me);
        pthread_cond_broadcast(&q->cv); /* the next in line may be served now */
        pthread_mutex_unlock(&q->mu);
        rill__resource_mgr_wait_end(ctx->rm, &w);
        rill__wait_report r = {0};
        double waited = 0;
        char lead[700] = "", who[512];
        int64_t step;
        if (describe_sync_step(ctx->rm, &r, &waited, &step)) {
            if (r.ntasks) {
                list_tasks(&r, who, sizeof who);
                snprintf(lead, sizeof lead, "sync step %lld waited %.0f s for gradients from %s",
                         (long long)step, waited, who);
                snprintf(what, sizeof what, "Dequeueing from queue '%s'", q->name); /* no guess */
            }
        } else if (describe_no_take(ctx->rm, q->name, lead, sizeof lead)) {
            snprintf(what, sizeof what, "Dequeueing from queue '%s'", q->name);
        }
        fail_wait(ctx, e, what, lead, NULL);
        return;
    }
    waiter_remove(q, &me);
    rill_tensor *t = q->items[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    rill__resource_mgr_wait_end(ctx->rm, &w);
    rill__kctx_set_output(ctx, 0, t);
}

static void queue_size_kernel(rill__kctx *ctx)
{
    fifo *q = get_fifo(ctx);
    if (!q) return;
    rill_shape sc = rill_shape_scalar();
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_INT32, &sc);
    if (!out) return;
    pthread_mutex_lock(&q->mu);
    *(int32_t *)rill_tensor_data(out) = (int32_t)q->n;
    pthread_mutex_unlock(&q->mu);
}

#define K(op_, fn_)                                                                                \
    {                                                                                              \
        .op = op_, .device_type = "CPU", .dtype = RILL_DT_INVALID, .fn = fn_                       \
    }

const rill__kernel_def rill__cpu_kernels_data_flow[] = {
    K("AccumulatorApplyGradient", apply_grad_kernel),
    K("AccumulatorTakeGradient", take_grad_kernel),
    K("AccumulatorSetGlobalStep", set_global_step_kernel),
    K("AccumulatorNumAccumulated", accum_count_kernel),
    K("AccumulatorNumDropped", accum_count_kernel),
    K("QueueEnqueueMany", enqueue_many_kernel),
    K("QueueDequeue", dequeue_kernel),
    K("QueueSize", queue_size_kernel),
    {0},
};
