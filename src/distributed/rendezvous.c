/* rendezvous.c - tensors pushed between the tasks of a cluster: a task's rendezvous, and the
 * _RemoteSend and _RemoteRecv kernels (graph/ops_sendrecv.c) that meet in it.
 *
 * Every server keeps one rendezvous in its resource manager, so every session on the task (the
 * registered partitions, and the master's own piece on the master's task) finds it. An entry is
 * keyed by (the master that runs the step, the step's number there, tensor_name). _RemoteSend
 * pushes its input to the consuming task as soon as it has it (ps-lite's shape: the consumer
 * never asks), in a one-way TENSOR message written from the tensors' own buffers and received
 * straight into the buffer the entry keeps. A small tensor is deferred (rill__kctx_defer): what
 * a thread pushes to one task for one step before it runs out of work goes in one message. A
 * big one (64 KiB and up) goes alone, at once, on the sender thread of its task, the node
 * parked until it is written: pushes to different tasks overlap, no compute thread waits on the
 * wire. _RemoteRecv takes its tensor or parks (rill__kctx_park) with a waiter entry that the
 * tensor's arrival wakes: the thread that received it runs the receive and what follows. Each
 * run of a parked receive checks the step's deadline (or the server's step deadline), the
 * session's cancellation and the step's abort (the master's step thread, or a server being
 * freed or cancelled, has them look again: rill__rendezvous_wake_step). A step that failed anywhere is aborted
 * on every task (ABORT request): its entries are freed, its parked receives fail at once, and
 * a tensor that still arrives for it is dropped. The last 256 aborted steps are remembered for
 * that. */
#include "master.h"
#include "rpc.h"

#include <rill/cluster.h>

#include <pthread.h>
#include <string.h>
#include <time.h>

typedef struct rv_item {
    struct rv_item *next;
    uint64_t owner, step;
    char *key;
    rill_tensor *t;
} rv_item;

#define ABORTED_KEPT 256
#define PEER_IDLE 8

typedef struct rv_peer {
    char job[64];
    int index;
    rill__channel *idle[PEER_IDLE];
    double used[PEER_IDLE]; /* when each last pushed */
    int nidle;
} rv_peer;

/* A parked _RemoteRecv: its tensor is put here when it arrives, and wake(wake_arg) has its
 * step run the kernel again (which takes it); an aborted step wakes it too. The kernel removes
 * the entry, whatever the outcome, so a step never ends with one left. */
typedef struct rv_waiter {
    struct rv_waiter *next;
    uint64_t owner, step;
    char *key;
    rill_tensor *got;
    double since; /* when it parked: the server's step deadline counts from here */
    void (*wake)(void *);
    void *wake_arg;
} rv_waiter;

struct rv_job;
struct rv_sender;

typedef struct rill__rendezvous {
    pthread_mutex_t mu;
    struct rv_sender *senders; /* one thread per task that big pushes go to */
    struct rv_job *jobs;       /* big pushes on their way, by step and key */
    rv_item *items;
    rv_waiter *waiters;
    struct {
        uint64_t owner, step;
    } aborted[ABORTED_KEPT];
    int nab, abnext;
    rill__local_task *task;
    pthread_mutex_t pmu; /* the peers' connection pools */
    rv_peer *peers;
    int npeers, cappeers;
} rill__rendezvous;

static void *rv_create(void *arg)
{
    rill__rendezvous *rv = rill__calloc(1, sizeof *rv);
    RILL_CHECK_ALLOC(rv);
    pthread_mutex_init(&rv->mu, NULL);
    pthread_mutex_init(&rv->pmu, NULL);
    rv->task = arg;
    return rv;
}

static void senders_stop(rill__rendezvous *rv);
static void drop_leftovers(rill__rendezvous *rv);

static void rv_free(void *p)
{
    rill__rendezvous *rv = p;
    senders_stop(rv);
    drop_leftovers(rv);
    for (rv_item *it = rv->items; it;) {
        rv_item *nx = it->next;
        rill_tensor_free(it->t);
        rill__free(it->key);
        rill__free(it);
        it = nx;
    }
    for (int i = 0; i < rv->npeers; i++)
        for (int k = 0; k < rv->peers[i].nidle; k++) rill__channel_close(rv->peers[i].idle[k]);
    rill__free(rv->peers);
    pthread_mutex_destroy(&rv->mu);
    pthread_mutex_destroy(&rv->pmu);
    rill__free(rv);
}

static void *rv_none(void *arg)
{
    (void)arg;
    return NULL;
}

static const rill__remote_tensor_ops remote_ops_impl;

rill__rendezvous *rill__rendezvous_install(rill__local_task *t)
{
    rill__register_remote_tensors(&remote_ops_impl);
    return rill__resource_lookup(t->rm, "rendezvous", "", rv_create, t, rv_free);
}

/* The rendezvous of the task whose resources rm holds; NULL outside a server. */
static rill__rendezvous *rv_of(rill__resource_mgr *rm)
{
    return rm ? rill__resource_lookup(rm, "rendezvous", "", rv_none, NULL, NULL) : NULL;
}

static bool is_aborted(const rill__rendezvous *rv, uint64_t owner, uint64_t step)
{
    for (int i = 0; i < rv->nab; i++)
        if (rv->aborted[i].owner == owner && rv->aborted[i].step == step) return true;
    return false;
}

void rill__rendezvous_put(rill__rendezvous *rv, uint64_t owner, uint64_t step, char **keys,
                          rill_tensor **ts, int n)
{
    pthread_mutex_lock(&rv->mu);
    bool aborted = is_aborted(rv, owner, step);
    for (int i = 0; i < n; i++) {
        rill_tensor *t = ts[i];
        ts[i] = NULL;
        if (aborted) {
            rill_tensor_free(t);
            continue;
        }
        rv_waiter *w = rv->waiters;
        while (w && !(!w->got && w->owner == owner && w->step == step && strcmp(w->key, keys[i]) == 0))
            w = w->next;
        if (w) {
            w->got = t; /* straight to the receive that waits for it */
            w->wake(w->wake_arg);
            continue;
        }
        rv_item *it = rill__malloc(sizeof *it);
        RILL_CHECK_ALLOC(it);
        *it = (rv_item){rv->items, owner, step, keys[i], t};
        keys[i] = NULL;
        rv->items = it;
    }
    pthread_mutex_unlock(&rv->mu);
    rill__run_woken(); /* the receives and what follows them, on this thread */
}

void rill__rendezvous_wake_step(rill__rendezvous *rv, uint64_t owner, uint64_t step)
{
    if (!rv) return;
    pthread_mutex_lock(&rv->mu);
    bool any = false;
    for (rv_waiter *w = rv->waiters; w; w = w->next)
        if ((!owner || w->owner == owner) && (!step || w->step == step)) {
            w->wake(w->wake_arg);
            any = true;
        }
    pthread_mutex_unlock(&rv->mu);
    if (any) rill__run_woken();
}

void rill__rendezvous_abort(rill__rendezvous *rv, uint64_t owner, uint64_t step)
{
    rv_item *drop = NULL;
    pthread_mutex_lock(&rv->mu);
    if (!is_aborted(rv, owner, step)) {
        rv->aborted[rv->abnext].owner = owner;
        rv->aborted[rv->abnext].step = step;
        rv->abnext = (rv->abnext + 1) % ABORTED_KEPT;
        if (rv->nab < ABORTED_KEPT) rv->nab++;
    }
    for (rv_item **pp = &rv->items; *pp;) {
        rv_item *it = *pp;
        if (it->owner == owner && it->step == step) {
            *pp = it->next;
            it->next = drop;
            drop = it;
        } else {
            pp = &it->next;
        }
    }
    for (rv_waiter *w = rv->waiters; w; w = w->next)
        if (w->owner == owner && w->step == step) w->wake(w->wake_arg);
    pthread_mutex_unlock(&rv->mu);
    rill__run_woken();
    while (drop) {
        rv_item *nx = drop->next;
        rill_tensor_free(drop->t);
        rill__free(drop->key);
        rill__free(drop);
        drop = nx;
    }
}

/* The peer's connection pool entry (created on first use; under pmu). */
static rv_peer *peer_of(rill__rendezvous *rv, const char *job, int index)
{
    for (int i = 0; i < rv->npeers; i++)
        if (rv->peers[i].index == index && strcmp(rv->peers[i].job, job) == 0) return &rv->peers[i];
    if (rv->npeers == rv->cappeers) {
        rv->cappeers = rv->cappeers ? 2 * rv->cappeers : 8;
        rv->peers = rill__realloc(rv->peers, (size_t)rv->cappeers * sizeof *rv->peers);
        RILL_CHECK_ALLOC(rv->peers);
    }
    rv_peer *p = &rv->peers[rv->npeers++];
    memset(p, 0, sizeof *p);
    snprintf(p->job, sizeof p->job, "%s", job);
    p->index = index;
    return p;
}

/* --- the kernels --- */

static double slice_deadline(const rill__kctx *ctx, const rill__rendezvous *rv, double start)
{
    double d = start + rv->task->opts.step_deadline_s;
    return ctx->deadline && ctx->deadline < d ? ctx->deadline : d;
}

/* Tensors of at least this many bytes are pushed alone, at once. */
#define PUSH_ALONE (64 << 10)

/* A pushed tensor waiting for its thread's flush (push_flush). */
typedef struct push_item {
    rill__rendezvous *rv;
    const char *job, *key, *addr; /* borrowed from the node and the cluster (key and job: own
                                   * copies once owned) */
    int index;
    uint64_t owner, step;
    double deadline;
    rill_tensor *t;
    bool owned; /* job and key are its own: it may outlive its node (a sender thread's) */
} push_item;

/* Makes it->job and it->key its own: a push handed to a sender thread may be written after its
 * step ended and its graph was freed (an orphan push, or a node that no longer waits). */
static void item_own(push_item *it)
{
    if (it->owned) return;
    it->job = rill__strdup(it->job);
    it->key = rill__strdup(it->key);
    it->owned = true;
}

static void item_free(push_item *it)
{
    if (!it) return;
    rill_tensor_free(it->t);
    if (it->owned) {
        rill__free((void *)it->job);
        rill__free((void *)it->key);
    }
    rill__free(it);
}

/* Pushes items[from, to) (one step, one task) in one TENSOR message from their own buffers.
 * With pooled_only, it uses only a pooled connection: when the peer has none it sends nothing,
 * sets no error and returns false (the caller hands the items to the task's sender thread). */
static bool push_group(push_item **items, int from, int to, rill_status **errors, bool pooled_only)
{
    push_item *a = items[from];
    rill__rendezvous *rv = a->rv;
    int n = to - from;
    rill_status *s = rill_status_new();
    rill__mbuf q = {0}, blob = {0};
    rill__mbuf_u32(&q, RILL__RPC_TENSOR);
    rill__mbuf_u64(&q, a->owner);
    rill__mbuf_u64(&q, a->step);
    rill__mbuf_u32(&q, (uint32_t)n);
    rill_tensor *ts[64];
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        ts[i] = items[from + i]->t;
        rill__mbuf_str(&q, items[from + i]->key);
        ok = rill__mbuf_tensor(&q, ts[i], s);
    }
    struct iovec iov[16];
    int niov = ok ? rill__payload_iovecs(ts, n, iov, 16, &blob) : 0;
    /* A pooled connection may lead to a process that is gone: the peer task was restarted at
     * the same address (a chief restarted over a live ps). Its socket then reads EOF, and a
     * push on it would vanish without an error (the first write after the peer's FIN
     * succeeds), so an idle connection that is readable is dropped, with the rest of the
     * peer's pool; one that fails as closed or reset is dropped so too and the push goes again,
     * once, on a fresh connection (nothing of it reached a live receiver). */
    for (int attempt = 0; ok && attempt < 2; attempt++) {
        rill__channel *ch = NULL, *stale[PEER_IDLE];
        int nstale = 0;
        pthread_mutex_lock(&rv->pmu);
        rv_peer *p = peer_of(rv, a->job, a->index);
        while (p->nidle && !ch) {
            ch = p->idle[--p->nidle];
            if (rill__now_seconds() - p->used[p->nidle] > RILL__TCP_POOL_IDLE_S) {
                rill__channel_close(ch); /* the server closes one idle this long: never use it */
                ch = NULL;
            } else if (rill__channel_readable(ch, 0)) {
                stale[nstale++] = ch;
                ch = NULL;
                while (p->nidle) stale[nstale++] = p->idle[--p->nidle];
            }
        }
        pthread_mutex_unlock(&rv->pmu);
        for (int i = 0; i < nstale; i++) rill__channel_close(stale[i]);
        bool pooled = ch != NULL;
        if (nstale)
            rill__log(RILL_LOG_INFO,
                      "/job:%s/replica:0/task:%d (%s) closed %d pooled "
                      "connection%s (restarted?): pushing on a fresh one",
                      a->job, a->index, a->addr, nstale, nstale == 1 ? "" : "s");
        if (!ch && pooled_only) {
            rill__mbuf_free(&q);
            rill__mbuf_free(&blob);
            rill_status_free(s);
            return false;
        }
        if (!ch) {
            ch = rill__local_task_connect(rv->task, a->addr, rv->task->opts.connect_deadline_s, s);
            ok = ch != NULL;
            if (!ok) break;
        }
        double wait = a->deadline - rill__now_seconds();
        /* One way: the receiving task's _RemoteRecv reports a tensor that never came. */
        ok = wait > 0 && rill__channel_push(ch, q.p, (uint32_t)q.n, iov, niov, wait, s);
        if (wait <= 0) rill_status_set(s, RILL_DEADLINE_EXCEEDED, "the step's deadline passed");
        pthread_mutex_lock(&rv->pmu);
        p = peer_of(rv, a->job, a->index);
        if (ok && p->nidle < PEER_IDLE) {
            p->used[p->nidle] = rill__now_seconds();
            p->idle[p->nidle++] = ch;
            ch = NULL;
        }
        pthread_mutex_unlock(&rv->pmu);
        rill__channel_close(ch);
        if (ok || !pooled || rill_status_code(s) != RILL_UNAVAILABLE) break;
        rill_status_clear(s);
        ok = true;
    }
    for (int i = 0; !ok && i < n; i++) {
        errors[from + i] = rill_status_new();
        rill_status_set(errors[from + i], rill_status_code(s),
                        "sending '%s' of step %llu to /job:%s/replica:0/task:%d (%s): %s",
                        items[from + i]->key, (unsigned long long)a->step, a->job, a->index,
                        a->addr, rill_status_message(s));
    }
    rill__mbuf_free(&q);
    rill__mbuf_free(&blob);
    rill_status_free(s);
    return true;
}

static bool same_group(const push_item *a, const push_item *b)
{
    return a->rv == b->rv && a->owner == b->owner && a->step == b->step && a->index == b->index &&
           strcmp(a->job, b->job) == 0;
}

/* A big push on its way: written by the sender thread of its task, which then wakes the parked
 * _RemoteSend, whose kernel runs again and takes the outcome. */
typedef struct rv_job {
    struct rv_job *next;  /* in its sender's queue */
    struct rv_job *lnext; /* in rv->jobs */
    push_item *it;
    bool done, dropped; /* dropped: the node no longer waits (its step failed): freed when done */
    bool orphan;        /* a deferred push no node waits for: freed when done, a failure logged */
    rill_status *err;
    void (*wake)(void *);
    void *wake_arg;
} rv_job;

/* The thread that writes the big pushes to one task, one after another: pushes to different
 * tasks go at once, and no compute thread waits on the wire. */
typedef struct rv_sender {
    struct rv_sender *next;
    rill__rendezvous *rv;
    char job[RILL_JOB_NAME_MAX]; /* its own copy: a push's job is its node's attribute, freed
                                  * with its graph while the sender lives on */
    int index;
    pthread_t th;
    pthread_cond_t cv;
    rv_job *head, *tail;
    bool stop;
} rv_sender;

static void job_free(rv_job *j)
{
    item_free(j->it);
    rill_status_free(j->err);
    rill__free(j);
}

static void unlink_job(rill__rendezvous *rv, rv_job *j)
{
    for (rv_job **pp = &rv->jobs; *pp; pp = &(*pp)->lnext)
        if (*pp == j) {
            *pp = j->lnext;
            return;
        }
}

static void *sender_main(void *arg)
{
    rv_sender *sd = arg;
    rill__rendezvous *rv = sd->rv;
    pthread_mutex_lock(&rv->mu);
    for (;;) {
        while (!sd->head && !sd->stop) pthread_cond_wait(&sd->cv, &rv->mu);
        rv_job *j = sd->head;
        if (!j) break;
        sd->head = j->next;
        if (!sd->head) sd->tail = NULL;
        pthread_mutex_unlock(&rv->mu);
        rill_status *err = NULL;
        push_group(&j->it, 0, 1, &err, false);
        if (j->orphan) {
            if (err) rill__log(RILL_LOG_WARNING, "%s", rill_status_message(err));
            rill_status_free(err);
            job_free(j);
            pthread_mutex_lock(&rv->mu);
            continue;
        }
        pthread_mutex_lock(&rv->mu);
        j->done = true;
        j->err = err;
        if (j->dropped) {
            unlink_job(rv, j);
            job_free(j);
            continue;
        }
        j->wake(j->wake_arg);
        pthread_mutex_unlock(&rv->mu);
        rill__run_woken();
        pthread_mutex_lock(&rv->mu);
    }
    pthread_mutex_unlock(&rv->mu);
    return NULL;
}

/* Queues j for its task's sender (made on first use; under rv->mu). False when no thread could
 * be made. */
static bool sender_queue(rill__rendezvous *rv, rv_job *j)
{
    rv_sender *sd = rv->senders;
    while (sd && !(sd->index == j->it->index && strcmp(sd->job, j->it->job) == 0)) sd = sd->next;
    if (!sd) {
        sd = rill__calloc(1, sizeof *sd);
        RILL_CHECK_ALLOC(sd);
        *sd = (rv_sender){.rv = rv, .index = j->it->index};
        snprintf(sd->job, sizeof sd->job, "%s", j->it->job);
        pthread_cond_init(&sd->cv, NULL);
        if (pthread_create(&sd->th, NULL, sender_main, sd) != 0) {
            pthread_cond_destroy(&sd->cv);
            rill__free(sd);
            return false;
        }
        sd->next = rv->senders;
        rv->senders = sd;
    }
    if (sd->tail) sd->tail->next = j;
    else sd->head = j;
    sd->tail = j;
    pthread_cond_signal(&sd->cv);
    return true;
}

/* The pushes a thread gathered: one message per (step, task), up to 64 tensors each. */
static void push_flush(void **vitems, int n, rill_status **errors)
{
    push_item **items = (push_item **)vitems;
    /* Order them by group, keeping each group's order (a stable insertion sort: n is small). */
    for (int i = 1; i < n; i++) {
        int j = i;
        while (j > 0 && !same_group(items[j - 1], items[i])) j--;
        if (j == i || j == 0) continue;
        push_item *x = items[i];
        rill_status *e = errors[i];
        memmove(items + j + 1, items + j, (size_t)(i - j) * sizeof *items);
        memmove(errors + j + 1, errors + j, (size_t)(i - j) * sizeof *errors);
        items[j] = x;
        errors[j] = e;
    }
    /* On a server's own thread (a step run where its request or tensor arrived) a push never
     * connects: the handshake waits for the peer's server thread, which may itself be in a
     * push that waits for this one's (two tasks that push to each other for the first time at
     * once stalled so until the connect deadline). A group without a pooled connection goes to
     * its task's sender thread instead, which connects; nothing waits for it there, as nothing
     * waits for a deferred push: the receiver's _RemoteRecv reports a tensor that never came,
     * and the sender logs why. */
    bool pooled_only = rill__tcp_on_server_thread();
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && j - i < 64 && same_group(items[i], items[j])) j++;
        if (!push_group(items, i, j, errors, pooled_only)) {
            rill__rendezvous *rv = items[i]->rv;
            pthread_mutex_lock(&rv->mu);
            for (int k = i; k < j; k++) {
                rv_job *job = rill__calloc(1, sizeof *job);
                RILL_CHECK_ALLOC(job);
                job->it = items[k];
                item_own(job->it);
                job->orphan = true;
                if (sender_queue(rv, job)) {
                    items[k] = NULL;
                } else {
                    rill__free(job);
                    errors[k] = rill_status_new();
                    rill_status_set(errors[k], RILL_RESOURCE_EXHAUSTED,
                                    "no thread to push '%s' to /job:%s/task:%d", items[k]->key,
                                    items[k]->job, items[k]->index);
                }
            }
            pthread_mutex_unlock(&rv->mu);
        }
        i = j;
    }
    for (int i = 0; i < n; i++) item_free(items[i]);
}

static void senders_stop(rill__rendezvous *rv)
{
    pthread_mutex_lock(&rv->mu);
    rv_sender *list = rv->senders;
    rv->senders = NULL;
    for (rv_sender *sd = list; sd; sd = sd->next) {
        sd->stop = true;
        pthread_cond_signal(&sd->cv);
    }
    pthread_mutex_unlock(&rv->mu);
    while (list) {
        rv_sender *nx = list->next;
        pthread_join(list->th, NULL);
        pthread_cond_destroy(&list->cv);
        rill__free(list);
        list = nx;
    }
}

/* What steps that never finished left (a server freed under them). */
static void drop_leftovers(rill__rendezvous *rv)
{
    while (rv->jobs) {
        rv_job *j = rv->jobs;
        rv->jobs = j->lnext;
        job_free(j);
    }
    while (rv->waiters) {
        rv_waiter *w = rv->waiters;
        rv->waiters = w->next;
        rill_tensor_free(w->got);
        rill__free(w->key);
        rill__free(w);
    }

}

/* A big push: handed to its task's sender, the node parked until it is written (then the error,
 * if any, is the node's). */
static void big_push(rill__kctx *ctx, rill__rendezvous *rv, const push_item *proto)
{
    pthread_mutex_lock(&rv->mu);
    rv_job *j = rv->jobs;
    while (j && !(j->it->owner == proto->owner && j->it->step == proto->step &&
                  strcmp(j->it->key, proto->key) == 0))
        j = j->lnext;
    if (!j) {
        if (ctx->abandoned) {
            pthread_mutex_unlock(&rv->mu);
            return;
        }
        j = rill__calloc(1, sizeof *j);
        RILL_CHECK_ALLOC(j);
        j->it = rill__malloc(sizeof *j->it);
        RILL_CHECK_ALLOC(j->it);
        *j->it = *proto;
        j->it->t = rill_tensor_ref(ctx->inputs[0]);
        item_own(j->it);
        j->wake = ctx->wake;
        j->wake_arg = ctx->wake_arg;
        if (!sender_queue(rv, j)) {
            pthread_mutex_unlock(&rv->mu);
            job_free(j);
            rill__kctx_fail(ctx, RILL_RESOURCE_EXHAUSTED, "no thread to push '%s' to /job:%s/task:%d",
                            proto->key, proto->job, proto->index);
            return;
        }
        j->lnext = rv->jobs;
        rv->jobs = j;
        pthread_mutex_unlock(&rv->mu);
        rill__kctx_park(ctx);
        return;
    }
    if (!j->done) {
        if (ctx->abandoned) j->dropped = true;
        pthread_mutex_unlock(&rv->mu);
        if (!ctx->abandoned) rill__kctx_park(ctx);
        return;
    }
    unlink_job(rv, j);
    pthread_mutex_unlock(&rv->mu);
    if (j->err && !ctx->abandoned)
        rill__kctx_fail(ctx, rill_status_code(j->err), "%s", rill_status_message(j->err));
    job_free(j);
}

/* Pushes its input to the consuming task, from the tensor's own buffer: a small one gathered
 * with the other pushes this thread makes to that task for the step before it runs out of work
 * (rill__kctx_defer), in one message; a big one at once. */
static void remote_send_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    rill__rendezvous *rv = rv_of(ctx->rm);
    const rill__attr *key = rill__node_attr(n, "tensor_name"), *job = rill__node_attr(n, "recv_job");
    int index = (int)rill__attr_int(n, "recv_task", 0);
    if (!rv || !key || !job) {
        rill__kctx_fail(ctx, RILL_FAILED_PRECONDITION,
                        "_RemoteSend '%s' runs only on a task of a cluster", n->name);
        return;
    }
    const char *addr = rill_cluster_spec_task_address(rv->task->cluster, job->v.s, index, NULL);
    if (!addr) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "_RemoteSend '%s': no task /job:%s/task:%d",
                        n->name, job->v.s, index);
        return;
    }
    push_item proto = {rv,
                       job->v.s,
                       key->v.s,
                       addr,
                       index,
                       ctx->step_owner,
                       ctx->step_id,
                       slice_deadline(ctx, rv, rill__now_seconds()),
                       NULL,
                       false};
    /* A big tensor goes alone, at once, on its task's sender thread: gathering gains it
     * nothing, its consumer can start on it while the next one is on the wire, and pushes to
     * different tasks go at once. */
    if (ctx->abandoned || rill_tensor_nbytes(ctx->inputs[0]) >= PUSH_ALONE) {
        big_push(ctx, rv, &proto);
        return;
    }
    push_item *it = rill__malloc(sizeof *it);
    RILL_CHECK_ALLOC(it);
    *it = proto;
    it->t = rill_tensor_ref(ctx->inputs[0]);
    rill__kctx_defer(ctx, it, push_flush);
}

/* Takes the tensor of (ctx's step, key) if it arrived; otherwise parks (rill__kctx_park) with
 * a waiter entry that the tensor's arrival or the step's abort wakes. Each run also checks the
 * step's deadline (or the server's step deadline, from the first park), the session's
 * cancellation and an abort; an abandoned run only drops the entry. */
static void remote_recv_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    rill__rendezvous *rv = rv_of(ctx->rm);
    const rill__attr *key = rill__node_attr(n, "tensor_name"), *job = rill__node_attr(n, "send_job");
    int index = (int)rill__attr_int(n, "send_task", 0);
    if (!rv || !key || !job || !ctx->wake) {
        if (!ctx->abandoned)
            rill__kctx_fail(ctx, RILL_FAILED_PRECONDITION,
                            "_RemoteRecv '%s' runs only on a task of a cluster", n->name);
        return;
    }
    double now = rill__now_seconds();
    rill_tensor *got = NULL;
    pthread_mutex_lock(&rv->mu);
    rv_waiter **wp = &rv->waiters;
    while (*wp && !((*wp)->owner == ctx->step_owner && (*wp)->step == ctx->step_id &&
                    strcmp((*wp)->key, key->v.s) == 0))
        wp = &(*wp)->next;
    rv_waiter *me = *wp;
    if (!me) {
        for (rv_item **pp = &rv->items; *pp; pp = &(*pp)->next) {
            rv_item *it = *pp;
            if (it->owner == ctx->step_owner && it->step == ctx->step_id &&
                strcmp(it->key, key->v.s) == 0) {
                *pp = it->next;
                got = it->t;
                rill__free(it->key);
                rill__free(it);
                break;
            }
        }
    } else {
        got = me->got;
    }
    double since = me ? me->since : now, deadline = slice_deadline(ctx, rv, since);
    const char *why = got || ctx->abandoned                      ? NULL
                      : is_aborted(rv, ctx->step_owner, ctx->step_id) ? "aborted"
                      : rill__kctx_cancelled(ctx)                  ? "cancelled"
                      : now >= deadline                            ? "deadline"
                                                                   : NULL;
    if (!got && !why && !ctx->abandoned) {
        if (!me) {
            me = rill__malloc(sizeof *me);
            RILL_CHECK_ALLOC(me);
            *me = (rv_waiter){rv->waiters, ctx->step_owner, ctx->step_id, rill__strdup(key->v.s),
                              NULL,           now,         ctx->wake,   ctx->wake_arg};
            rv->waiters = me;
        }
        pthread_mutex_unlock(&rv->mu);
        rill__kctx_park(ctx);
        return;
    }
    if (me) {
        *wp = me->next;
        rill__free(me->key);
        rill__free(me);
    }
    pthread_mutex_unlock(&rv->mu);
    if (ctx->abandoned) {
        rill_tensor_free(got);
        return;
    }
    if (why && why[0] == 'd') {
        rill__kctx_fail(ctx, RILL_DEADLINE_EXCEEDED,
                        "Timed out waiting for notification: tensor '%s' of step %llu "
                        "from /job:%s/replica:0/task:%d did not arrive within %.3g s",
                        key->v.s, (unsigned long long)ctx->step_id, job->v.s, index,
                        deadline - since);
        return;
    }
    if (why) {
        rill__kctx_fail(ctx, RILL_CANCELLED,
                        "step %llu was %s on /job:%s/replica:0/task:%d while waiting for "
                        "tensor '%s' from /job:%s/replica:0/task:%d",
                        (unsigned long long)ctx->step_id, why, rv->task->job, rv->task->index,
                        key->v.s, job->v.s, index);
        return;
    }
    if (got->dtype != n->out_dtypes[0]) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "tensor '%s' from /job:%s/task:%d is %s, not %s",
                        key->v.s, job->v.s, index, rill_dtype_name(got->dtype),
                        rill_dtype_name(n->out_dtypes[0]));
        rill_tensor_free(got);
        return;
    }
    rill__kctx_set_output(ctx, 0, got);
}

static const rill__remote_tensor_ops remote_ops_impl = {remote_send_kernel, remote_recv_kernel};
