/* rendezvous.c - tensors pushed between the tasks of a cluster: a task's rendezvous, and the
 * _RemoteSend and _RemoteRecv kernels (graph/ops_sendrecv.c) that meet in it.
 *
 * Every server keeps one rendezvous in its resource manager, so every session on the task (the
 * registered partitions, and the master's own piece on the master's task) finds it. An entry is
 * keyed by (the master that runs the step, the step's number there, tensor_name). _RemoteSend
 * pushes its input to the consuming task as soon as it has it — a TENSOR request over a
 * connection of the sending task's own pool to that task, the bytes written from the tensor's
 * buffer and received straight into the buffer the entry keeps (ps-lite's shape: the consumer
 * never asks) — and _RemoteRecv takes it, waiting in 50 ms slices that check the step's
 * deadline (or the server's step deadline), the session's cancellation and the step's abort.
 * A step that failed anywhere is aborted on every task (ABORT request): its entries are freed,
 * its waiting _RemoteRecvs fail at once, and a tensor that still arrives for it is dropped. The
 * last 256 aborted steps are remembered for that. */
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

typedef struct rv_watch {
    struct rv_watch *next;
    uint64_t owner, step;
    void (*fn)(void *);
    void *arg;
} rv_watch;

typedef struct rill__rendezvous {
    pthread_mutex_t mu;
    rv_watch *watches;
    pthread_cond_t cv;
    rv_item *items;
    rv_waiter *waiters;
    struct {
        uint64_t owner, step;
    } aborted[ABORTED_KEPT];
    int nab, abnext;
    const rill__local_task *task;
    pthread_mutex_t pmu; /* the peers' connection pools */
    rv_peer *peers;
    int npeers, cappeers;
} rill__rendezvous;

static void *rv_create(void *arg)
{
    rill__rendezvous *rv = rill__calloc(1, sizeof *rv);
    RILL_CHECK_ALLOC(rv);
    pthread_mutex_init(&rv->mu, NULL);
    pthread_cond_init(&rv->cv, NULL);
    pthread_mutex_init(&rv->pmu, NULL);
    rv->task = arg;
    return rv;
}

static void rv_free(void *p)
{
    rill__rendezvous *rv = p;
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
    pthread_cond_destroy(&rv->cv);
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

void rill__rendezvous_put(rill__rendezvous *rv, uint64_t owner, uint64_t step, const char *key,
                          rill_tensor *t)
{
    pthread_mutex_lock(&rv->mu);
    if (is_aborted(rv, owner, step)) {
        pthread_mutex_unlock(&rv->mu);
        rill_tensor_free(t);
        return;
    }
    for (rv_waiter *w = rv->waiters; w; w = w->next)
        if (!w->got && w->owner == owner && w->step == step && strcmp(w->key, key) == 0) {
            w->got = t; /* straight to the receive that waits for it */
            w->wake(w->wake_arg);
            pthread_mutex_unlock(&rv->mu);
            rill__run_woken(); /* the receive and what follows it, on this thread */
            return;
        }
    rv_item *it = rill__malloc(sizeof *it);
    RILL_CHECK_ALLOC(it);
    *it = (rv_item){rv->items, owner, step, rill__strdup(key), t};
    rv->items = it;
    pthread_mutex_unlock(&rv->mu);
}

void rill__rendezvous_watch(rill__rendezvous *rv, uint64_t owner, uint64_t step,
                            void (*fn)(void *arg), void *arg)
{
    rv_watch *drop = NULL;
    pthread_mutex_lock(&rv->mu);
    if (fn) {
        rv_watch *w = rill__malloc(sizeof *w);
        RILL_CHECK_ALLOC(w);
        *w = (rv_watch){rv->watches, owner, step, fn, arg};
        rv->watches = w;
    } else {
        for (rv_watch **pp = &rv->watches; *pp; pp = &(*pp)->next)
            if ((*pp)->owner == owner && (*pp)->step == step) {
                drop = *pp;
                *pp = drop->next;
                break;
            }
    }
    pthread_mutex_unlock(&rv->mu);
    rill__free(drop);
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
    rill_status *s = rill_status_new();
    rill__mbuf q = {0}, blob = {0};
    rill__mbuf_u32(&q, RILL__RPC_TENSOR);
    rill__mbuf_u64(&q, ctx->step_owner);
    rill__mbuf_u64(&q, ctx->step_id);
    rill__mbuf_str(&q, key->v.s);
    rill_tensor *t = ctx->inputs[0];
    struct iovec iov[16];
    int niov = 0;
    bool ok = rill__mbuf_tensor(&q, t, s);
    if (ok) niov = rill__payload_iovecs(&t, 1, iov, 16, &blob);
    rill__channel *ch = NULL;
    if (ok) {
        pthread_mutex_lock(&rv->pmu);
        rv_peer *p = peer_of(rv, job->v.s, index);
        if (p->nidle) ch = p->idle[--p->nidle];
        pthread_mutex_unlock(&rv->pmu);
        if (!ch) {
            rill__tcp_options o;
            rill__local_task_client_options(rv->task, &o);
            ch = rill__tcp_connect(addr, &o, rv->task->opts.connect_deadline_s, s);
            ok = ch != NULL;
        }
    }
    if (ok) {
        double wait = slice_deadline(ctx, rv, rill__now_seconds()) - rill__now_seconds();
        /* One way: the receiving task's _RemoteRecv reports a tensor that never came. */
        ok = wait > 0 && rill__channel_push(ch, q.p, (uint32_t)q.n, iov, niov, wait, s);
        if (wait <= 0) rill_status_set(s, RILL_DEADLINE_EXCEEDED, "the step's deadline passed");
        pthread_mutex_lock(&rv->pmu);
        rv_peer *p = peer_of(rv, job->v.s, index);
        if (ok && p->nidle < PEER_IDLE) {
            p->idle[p->nidle++] = ch;
            ch = NULL;
        }
        pthread_mutex_unlock(&rv->pmu);
        rill__channel_close(ch);
    }
    if (!ok)
        rill__kctx_fail(ctx, rill_status_code(s),
                        "sending '%s' of step %llu to /job:%s/replica:0/task:%d (%s): %s",
                        key->v.s, (unsigned long long)ctx->step_id, job->v.s, index, addr,
                        rill_status_message(s));
    rill__mbuf_free(&q);
    rill__mbuf_free(&blob);
    rill_status_free(s);
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
    bool watched = false;
    pthread_mutex_lock(&rv->mu);
again:;
    rv_waiter **wp = &rv->waiters;
    while (*wp && !((*wp)->owner == ctx->step_owner && (*wp)->step == ctx->step_id &&
                    strcmp((*wp)->key, key->v.s) == 0))
        wp = &(*wp)->next;
    rv_waiter *me = *wp;
    if (me && !me->got && !ctx->abandoned && !watched) {
        /* A retry with nothing come: the master's watch of this step, if it runs here. */
        watched = true;
        for (rv_watch *w = rv->watches; w; w = w->next)
            if (w->owner == ctx->step_owner && w->step == ctx->step_id) {
                void (*fn)(void *) = w->fn;
                void *arg = w->arg;
                pthread_mutex_unlock(&rv->mu);
                fn(arg);
                pthread_mutex_lock(&rv->mu);
                goto again;
            }
    }
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
                        "step %llu was %s while waiting for tensor '%s' from "
                        "/job:%s/replica:0/task:%d",
                        (unsigned long long)ctx->step_id, why, key->v.s, job->v.s, index);
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
