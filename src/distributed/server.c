/* server.c - a task's server (tf.train.Server): binds the task's address, owns its devices and
 * variables (one resource manager for the server's life, shared by every graph registered with
 * it), and answers the worker service (rpc.h): list devices, register a graph partition (a
 * session on it is made at once), run a registered partition, take pushed tensors, forget it.
 *
 * Requests are served inline on the transport's thread, one at a time: a ps applies the
 * updates of several workers in turn, which is what use_locking asks for anyway. A RUN of a
 * part that waits only for other tasks' tensors starts there too and runs asynchronously: it
 * parks, and the thread that ends it (usually this one, when the tensor arrives) answers. A RUN
 * of a part that holds a blocking op (a queue dequeue, an accumulator take:
 * SyncReplicasOptimizer) runs on a thread of its own and answers when done, so that the steps
 * it waits for can reach the server meanwhile; if its client hangs up, the step is cancelled.
 *
 * A server publishes its task to the master (master.h), which runs the sessions that name the
 * server's target; the server uses the master, never the other way round.
 *
 * Jobs that end: a training task that is done sends FINISHED to every ps task
 * (rill_server_report_finished); a ps counts the distinct training tasks of its cluster spec that
 * did, and its join returns once every one of them has been answered, so that the last reporter
 * never sees its ps vanish before the answer. */
#include "graph_codec.h"
#include "master.h"
#include "rpc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sodium.h>
#include <signal.h>
#include <string.h>
#include <time.h>

typedef struct reg_graph {
    uint64_t handle;
    uint64_t owner; /* the master that registered it */
    char task[128]; /* the task whose connection registered it: only it may use the handle */
    uint64_t recv_bytes; /* what its _RemoteRecvs take in one step; UINT64_MAX: unknown shapes */
    rill_graph *g;
    rill_session *sess;
    bool blocking; /* holds an op that may wait on other steps: run off the transport thread */
    bool parks;    /* holds a _RemoteRecv: run asynchronously (it parks, no thread waits) */
    bool client;   /* a client's whole graph, run by this task's master (REGISTER_CLIENT) */
    atomic_int refs;
} reg_graph;

/* A task of the "worker" or "chief" job, as a ps waits for it to finish. */
typedef struct trainer {
    char job[RILL_JOB_NAME_MAX];
    int index;
    bool finished;
} trainer;

struct rill_server {
    rill__local_task self; /* target, job, index, cluster, rm, opts: published to the master */
    char address[256];
    char *secret; /* self.opts.secret */
    char *run_id; /* self.opts.run_id */
    atomic_uint_fast64_t tensor_limit; /* the largest TENSOR payload the graphs may receive */
    rill__tcp_server *tcp;
    rill__rendezvous *rv; /* tensors other tasks push here (rendezvous.c), in self.rm */
    pthread_mutex_t mu;
    rill__vec graphs;
    atomic_bool stopping;
    pthread_mutex_t jmu;
    pthread_cond_t jcv;
    /* The cluster's training tasks and which of them reported they finished; nanswered counts
     * the first reports whose answer went out (all under jmu). */
    trainer *trainers;
    int ntrainers, nfinished, nanswered;
    /* Blocking runs go to a pool that grows when every thread is busy (a run may wait for
     * another: a fixed pool could deadlock) and shrinks after threads idle for a while. */
    int running;  /* blocking runs queued or in flight (under mu) */
    int nthreads, idle;
    bool pool_stop;
    struct blocking_run *jobs, *jobs_tail;
    pthread_cond_t run_cv, job_cv;
};

/* --- the worker service --- */

/* The graph with handle h that task registered, with a reference the caller drops (NULL if
 * none: a handle another task registered is not found either). */
static reg_graph *find_graph(rill_server *srv, uint64_t h, const char *task)
{
    reg_graph *found = NULL;
    pthread_mutex_lock(&srv->mu);
    for (int i = 0; i < srv->graphs.n && !found; i++) {
        reg_graph *r = srv->graphs.items[i];
        if (r->handle == h && strcmp(r->task, task) == 0) found = r;
    }
    if (found) atomic_fetch_add(&found->refs, 1);
    pthread_mutex_unlock(&srv->mu);
    return found;
}

/* The largest TENSOR payload any registered graph takes (under mu): a push carries tensors of
 * one step for one graph. Unknown shapes allow max_payload. */
static void update_tensor_limit(rill_server *srv)
{
    uint64_t lim = 64u << 10; /* a small push is always fine */
    for (int i = 0; i < srv->graphs.n; i++) {
        uint64_t b = ((reg_graph *)srv->graphs.items[i])->recv_bytes;
        if (b == UINT64_MAX) b = srv->self.opts.max_payload;
        if (b > lim) lim = b;
    }
    if (lim > srv->self.opts.max_payload) lim = srv->self.opts.max_payload;
    atomic_store(&srv->tensor_limit, lim);
}

/* What a request may carry (rill__tcp_payload_limit): a pushed TENSOR what the graphs receive; a
 * graph to register or a step's feeds max_payload; the others nothing. */
static uint64_t payload_limit(void *arg, const rill__tcp_request *req)
{
    rill_server *srv = arg;
    rill__mread r = {.p = req->meta, .n = req->meta_len};
    uint32_t op = rill__mread_u32(&r);
    if (r.bad) return 0;
    switch (op) {
    case RILL__RPC_TENSOR: {
        /* The graphs registered here, and the pieces this task's own master runs. */
        uint64_t lim = atomic_load(&srv->tensor_limit), own = atomic_load(&srv->self.own_recv);
        if (own == UINT64_MAX) own = srv->self.opts.max_payload;
        return own > lim && own <= srv->self.opts.max_payload ? own : lim;
    }
    case RILL__RPC_REGISTER:
    case RILL__RPC_REGISTER_CLIENT:
    case RILL__RPC_RUN: return srv->self.opts.max_payload;
    default: return 0;
    }
}

static void graph_unref(reg_graph *r)
{
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1) return;
    rill_session_free(r->sess);
    rill_graph_free(r->g);
    rill__free(r);
}

static void do_get_devices(rill_server *srv, rill__tcp_response *resp)
{
    rill__device devs[64];
    rill_status *s = rill_status_new();
    int n = rill__local_task_devices(&srv->self, devs, 64, s);
    if (n < 0) {
        rill__tcp_response_set_error(resp, rill_status_code(s), "%s", rill_status_message(s));
        rill_status_free(s);
        return;
    }
    rill__mbuf m = {0};
    rill__mbuf_u32(&m, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        rill__mbuf_str(&m, devs[i].name);
        rill__mbuf_str(&m, devs[i].type);
        rill__mbuf_str(&m, devs[i].kernel_key);
    }
    rill__tcp_response_set_meta(resp, m.p, (uint32_t)m.n);
    rill__mbuf_free(&m);
    rill_status_free(s);
}

static void add_graph(rill_server *srv, const rill__tcp_request *req, uint64_t owner,
                      rill_graph *g, rill_session *sess, bool client, rill__tcp_response *resp,
                      rill_status *s);

static void do_register(rill_server *srv, rill__tcp_request *req, rill__mread *rd,
                        rill__tcp_response *resp)
{
    uint64_t owner = rill__mread_u64(rd);
    rill_status *s = rill_status_new();
    char **devs = NULL;
    rill_graph *g = rill__graph_decode(req->payload, req->payload_len, &devs, s);
    if (!g) {
        rill__tcp_response_set_error(resp, rill_status_code(s), "%s", rill_status_message(s));
        rill_status_free(s);
        return;
    }
    /* Each node asks for its device within this task. */
    for (int i = 0; i < rill_graph_num_nodes(g); i++) {
        rill_node *n = rill_graph_node(g, i);
        char spec[128];
        rill__local_device_spec(devs[i], spec, sizeof spec);
        rill__free(n->requested_device);
        n->requested_device = rill__strdup(spec);
        rill__free(devs[i]);
    }
    rill__free(devs);
    rill_session_options *o = rill_session_options_new();
    rill_session *sess = rill__session_new_with_rm(g, o, srv->self.rm, s);
    rill_session_options_free(o);
    add_graph(srv, req, owner, g, sess, false, resp, s);
    rill_status_free(s);
}

/* Registers g with its session sess (or, sess NULL, answers s's error and frees g). */
static void add_graph(rill_server *srv, const rill__tcp_request *req, uint64_t owner,
                      rill_graph *g, rill_session *sess, bool client, rill__tcp_response *resp,
                      rill_status *s)
{
    if (!sess) {
        rill__tcp_response_set_error(resp, rill_status_code(s), "%s", rill_status_message(s));
        rill_graph_free(g);
        return;
    }
    reg_graph *r = rill__calloc(1, sizeof *r);
    RILL_CHECK_ALLOC(r);
    r->g = g;
    r->sess = sess;
    r->owner = owner;
    r->client = client;
    snprintf(r->task, sizeof r->task, "%s", req->task);
    atomic_init(&r->refs, 1);
    /* A client's steps are the master's: they wait for other tasks, off the transport thread. */
    r->blocking = client;
    for (int i = 0; i < rill_graph_num_nodes(g) && !client; i++)
        if (rill_graph_node(g, i)->op->blocking) r->blocking = true;
        else if (rill_graph_node(g, i)->op->waits_for_peer) r->parks = true;
    pthread_mutex_lock(&srv->mu);
    /* Unguessable (any peer that completed the handshake may send a handle): random, never 0,
     * never one in use. */
    for (bool taken = true; taken;) {
        randombytes_buf(&r->handle, sizeof r->handle);
        taken = r->handle == 0;
        for (int i = 0; i < srv->graphs.n && !taken; i++)
            taken = ((reg_graph *)srv->graphs.items[i])->handle == r->handle;
    }
    r->recv_bytes = client ? 0 : rill__graph_recv_bytes(g);
    rill__vec_push(&srv->graphs, r);
    update_tensor_limit(srv);
    pthread_mutex_unlock(&srv->mu);
    rill__mbuf m = {0};
    rill__mbuf_u64(&m, r->handle);
    rill__tcp_response_set_meta(resp, m.p, (uint32_t)m.n);
    rill__mbuf_free(&m);
}

/* REGISTER_CLIENT (on a pool thread: opening a master asks every task for its devices): a
 * client's whole graph, each node asking for the device it named, and a session on this task's
 * target, whose master places and runs it over the cluster as for a session of this process. */
static void do_register_client(rill_server *srv, rill__tcp_request *req, rill__mread *rd,
                               rill__tcp_response *resp)
{
    uint64_t owner = rill__mread_u64(rd);
    rill_session_options *o = rill_session_options_new();
    uint32_t flags = rill__mread_u32(rd);
    int64_t timeout_ms = (int64_t)rill__mread_u64(rd);
    uint32_t inter = rill__mread_u32(rd), intra = rill__mread_u32(rd);
    uint32_t nfilters = rill__mread_u32(rd);
    rill_status *s = rill_status_new();
    char *filters[RILL_MAX_DEVICE_FILTERS] = {0};
    bool bad = rd->bad || nfilters > RILL_MAX_DEVICE_FILTERS || inter > 4096 || intra > 4096;
    for (uint32_t i = 0; !bad && i < nfilters; i++) bad = !(filters[i] = rill__mread_str(rd));
    if (!bad)
        rill_session_options_set_device_filters(o, (const char *const *)filters, (int)nfilters);
    for (uint32_t i = 0; i < RILL_MAX_DEVICE_FILTERS; i++) rill__free(filters[i]);
    if (bad) {
        rill__tcp_response_set_error(resp, RILL_INVALID_ARGUMENT,
                                     "malformed REGISTER_CLIENT request from %s", req->peer);
        goto out;
    }
    rill_session_options_set_target(o, srv->self.target);
    rill_session_options_set_allow_soft_placement(o, flags & 1);
    rill_session_options_set_log_device_placement(o, (flags & 2) != 0);
    rill_session_options_set_operation_timeout_ms(o, timeout_ms > 0 ? timeout_ms : 0);
    rill_session_options_set_inter_op_threads(o, (int)inter);
    rill_session_options_set_intra_op_threads(o, (int)intra);
    rill_graph *g = rill__graph_decode(req->payload, req->payload_len, NULL, s);
    if (!g) {
        rill__tcp_response_set_error(resp, rill_status_code(s), "%s", rill_status_message(s));
        goto out;
    }
    rill_session *sess = rill_session_new(g, o, s);
    if (sess)
        rill__log(RILL_LOG_INFO, "/job:%s/task:%d: %s (%s) opened a session of %d nodes here",
                  srv->self.job, srv->self.index, req->task, req->peer, rill_graph_num_nodes(g));
    add_graph(srv, req, owner, g, sess, true, resp, s);
out:
    rill_session_options_free(o);
    rill_status_free(s);
}

typedef struct sent {
    rill_tensor **t;
    int n;
    rill__mbuf blob;
} sent;

static void free_sent(void *arg)
{
    sent *x = arg;
    for (int i = 0; i < x->n; i++) rill_tensor_free(x->t[i]);
    rill__free(x->t);
    rill__mbuf_free(&x->blob);
    rill__free(x);
}

/* One RUN: what it names, read from the request (the feeds are views of its payload). */
typedef struct run_call {
    rill_server *srv;
    reg_graph *rg; /* borrowed */
    rill__tcp_deferred *d; /* an asynchronous run's response */
    rill__deadline step;
    rill__buffer *pay;
    rill_output *feeds, *fetches;
    rill_tensor **fv, **outv;
    rill_node **targets;
    uint32_t nf, nfetch, nt;
    rill_status *s;
} run_call;

static void run_call_free(run_call *rc)
{
    for (uint32_t i = 0; rc->fv && i < rc->nf; i++) rill_tensor_free(rc->fv[i]);
    for (uint32_t i = 0; rc->outv && i < rc->nfetch; i++) rill_tensor_free(rc->outv[i]);
    rill__free(rc->feeds);
    rill__free(rc->fv);
    rill__free(rc->fetches);
    rill__free(rc->outv);
    rill__free(rc->targets);
    rill__buffer_unref(rc->pay);
    rill_status_free(rc->s);
}

/* Reads the RUN request of rg (NULL when the handle is not registered) into rc; false, with the
 * error answered in resp, when it is bad. */
static bool run_parse(run_call *rc, rill__tcp_request *req, rill__mread *r, reg_graph *rg,
                      rill__tcp_response *resp)
{
    rc->rg = rg;
    rc->s = rill_status_new();
    rill_status *s = rc->s;
    uint64_t h = rill__mread_u64(r);
    rc->step.step_owner = rill__mread_u64(r);
    rc->step.step_id = rill__mread_u64(r);
    uint32_t nf = rill__mread_u32(r);
    /* The feeds are views of the request's payload: take it over from the transport. */
    rc->pay = rill__buffer_adopt(req->payload, req->payload_len);
    req->payload = NULL;
    uint64_t off = 0;
    if (!rg) {
        rill__tcp_response_set_error(resp, RILL_NOT_FOUND, "graph handle %llu is not registered",
                                     (unsigned long long)h);
        return false;
    }
    if (r->bad || nf > 4096) goto bad;
    rc->feeds = rill__calloc(nf + 1, sizeof *rc->feeds);
    rc->fv = rill__calloc(nf + 1, sizeof *rc->fv);
    RILL_CHECK_ALLOC(rc->feeds);
    RILL_CHECK_ALLOC(rc->fv);
    rc->nf = nf;
    for (uint32_t i = 0; i < nf; i++) {
        char *name = rill__mread_str(r);
        if (!name) goto bad;
        rc->feeds[i] = rill_graph_find_output(rg->g, name, s);
        rill__free(name);
        if (!rc->feeds[i].node) goto fail;
        rc->fv[i] = rill__mread_tensor(r, rc->pay, req->payload_len, &off, s);
        if (!rc->fv[i]) goto bad;
    }
    uint32_t nfetch = rill__mread_u32(r);
    if (r->bad || nfetch > 4096) goto bad;
    rc->fetches = rill__calloc(nfetch + 1, sizeof *rc->fetches);
    rc->outv = rill__calloc(nfetch + 1, sizeof *rc->outv);
    RILL_CHECK_ALLOC(rc->fetches);
    RILL_CHECK_ALLOC(rc->outv);
    rc->nfetch = nfetch;
    for (uint32_t i = 0; i < nfetch; i++) {
        char *name = rill__mread_str(r);
        if (!name) goto bad;
        rc->fetches[i] = rill_graph_find_output(rg->g, name, s);
        rill__free(name);
        if (!rc->fetches[i].node) goto fail;
    }
    uint32_t nt = rill__mread_u32(r);
    if (r->bad || nt > 4096) goto bad;
    rc->targets = rill__calloc(nt + 1, sizeof *rc->targets);
    RILL_CHECK_ALLOC(rc->targets);
    rc->nt = nt;
    for (uint32_t i = 0; i < nt; i++) {
        char *name = rill__mread_str(r);
        if (!name) goto bad;
        rc->targets[i] = rill_graph_find_node(rg->g, name);
        if (!rc->targets[i])
            rill_status_set(s, RILL_NOT_FOUND, "no node '%s' in the registered graph", name);
        rill__free(name);
        if (!rc->targets[i]) goto fail;
    }
    if (off != req->payload_len) goto bad;
    return true;
bad:
    rill__tcp_response_set_error(resp, RILL_INVALID_ARGUMENT, "malformed RUN request from %s",
                                 req->peer);
    return false;
fail:
    rill__tcp_response_set_error(resp, rill_status_code(s), "%s", rill_status_message(s));
    return false;
}


/* Answers rc's run, which ended with code: its fetches, or its error. */
static void run_respond(run_call *rc, rill_code code, rill__tcp_response *resp)
{
    rill_status *s = rc->s;
    if (code == RILL_OK) {
        rill__mbuf m = {0};
        rill__mbuf_u32(&m, rc->nfetch);
        for (uint32_t i = 0; i < rc->nfetch && code == RILL_OK; i++)
            if (!rill__mbuf_tensor(&m, rc->outv[i], s)) code = rill_status_code(s);
        if (code == RILL_OK) {
            /* The fetched tensors are sent from their own buffers (gathered only past 16
             * pieces); they live until the transport has sent them. */
            sent *x = rill__calloc(1, sizeof *x);
            RILL_CHECK_ALLOC(x);
            x->t = rc->outv;
            x->n = (int)rc->nfetch;
            rc->outv = NULL;
            struct iovec iov[16];
            int niov = rill__payload_iovecs(x->t, x->n, iov, 16, &x->blob);
            rill__tcp_response_set_payload(resp, iov, niov, free_sent, x);
            rill__tcp_response_set_meta(resp, m.p, (uint32_t)m.n);
        }
        rill__mbuf_free(&m);
        if (code == RILL_OK) return;
    }
    rill__tcp_response_set_error(resp, rill_status_code(s), "%s", rill_status_message(s));
}

/* RUN of rg (borrowed; NULL when the handle is not registered), here and now. */
static void do_run(rill__tcp_request *req, rill__mread *r, reg_graph *rg, rill__tcp_response *resp)
{
    run_call rc = {0};
    if (run_parse(&rc, req, r, rg, resp)) {
        /* A client's RUN carries the run's timeout (ms, 0: none) where a master's names its
         * step: the master here makes the steps. */
        if (rg->client) {
            int64_t ms = (int64_t)rc.step.step_id;
            rc.step = (rill__deadline){ms > 0 ? rill__now_seconds() + (double)ms / 1000.0 : 0,
                                       ms > 0 ? ms : 0, 0, 0};
        }
        rill_code code = rill__session_run_until(rg->sess, rc.step, rc.feeds, rc.fv, (int)rc.nf,
                                                 rc.fetches, rc.outv, (int)rc.nfetch, rc.targets,
                                                 (int)rc.nt, rc.s);
        run_respond(&rc, code, resp);
    }
    run_call_free(&rc);
}

/* --- runs that wait for peers: started here, answered when their last node is done --- */

static void async_done(void *arg, rill_code code)
{
    run_call *rc = arg;
    rill_server *srv = rc->srv;
    run_respond(rc, code, rill__tcp_deferred_response(rc->d));
    rill__tcp_deferred_finish(rc->d); /* rc is released on the server thread after this */
    pthread_mutex_lock(&srv->mu);
    srv->running--;
    pthread_cond_broadcast(&srv->run_cv);
    pthread_mutex_unlock(&srv->mu);
}

/* The client hung up: the step is cancelled, its parked receives woken to see it. */
static void async_hangup(void *arg)
{
    run_call *rc = arg;
    rill_session_cancel(rc->rg->sess);
    rill__rendezvous_abort(rc->srv->rv, rc->step.step_owner, rc->step.step_id);
}

static void async_release(void *arg)
{
    run_call *rc = arg;
    graph_unref(rc->rg);
    run_call_free(rc);
    rill__free(rc);
}

/* A RUN of a graph whose waits are for other tasks' tensors (_RemoteRecv parks: no thread waits
 * for it) starts on this thread and is answered by the thread that ends it: usually this one,
 * when the tensor it waited for arrives here (no hand-off on the way). Takes over the reference
 * to rg. */
static void run_async(rill_server *srv, rill__tcp_request *req, rill__mread *r, reg_graph *rg,
                      rill__tcp_response *resp)
{
    run_call *rc = rill__calloc(1, sizeof *rc);
    RILL_CHECK_ALLOC(rc);
    rc->srv = srv;
    bool ok = run_parse(rc, req, r, rg, resp);
    pthread_mutex_lock(&srv->mu);
    if (ok && srv->pool_stop) {
        rill__tcp_response_set_error(resp, RILL_UNAVAILABLE, "server %s is shutting down",
                                     srv->address);
        ok = false;
    }
    if (ok) srv->running++;
    pthread_mutex_unlock(&srv->mu);
    if (!ok) {
        async_release(rc);
        return;
    }
    rc->d = rill__tcp_response_defer(resp, async_hangup, async_release, rc);
    if (!rill__session_run_async(rg->sess, rc->step, rc->feeds, rc->fv, (int)rc->nf, rc->fetches,
                                 rc->outv, (int)rc->nfetch, rc->targets, (int)rc->nt, rc->s,
                                 async_done, rc))
        async_done(rc, rill_status_code(rc->s));
}

/* --- runs that may block: a thread each, answered through a deferred response --- */

typedef struct blocking_run {
    rill_server *srv;
    reg_graph *rg;
    rill__tcp_deferred *d;
    rill__tcp_request req; /* meta and payload owned */
    char peer[64];
    struct blocking_run *next;
} blocking_run;

static void on_hangup(void *arg)
{
    blocking_run *b = arg;
    if (b->rg) rill_session_cancel(b->rg->sess);
}

static void blocking_run_job(blocking_run *b)
{
    rill__mread r = {.p = b->req.meta, .n = b->req.meta_len};
    if (rill__mread_u32(&r) == RILL__RPC_REGISTER_CLIENT)
        do_register_client(b->srv, &b->req, &r, rill__tcp_deferred_response(b->d));
    else
        do_run(&b->req, &r, b->rg, rill__tcp_deferred_response(b->d));
    if (b->req.payload) rill__aligned_free(b->req.payload, b->req.payload_len);
    rill__free((void *)b->req.meta);
    rill__tcp_deferred_finish(b->d); /* b is released on the server thread after this */
}

#define POOL_IDLE_S 10

static void *pool_main(void *arg)
{
    rill_server *srv = arg;
    pthread_mutex_lock(&srv->mu);
    for (;;) {
        bool timed_out = false;
        while (!srv->jobs && !srv->pool_stop && !timed_out) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += POOL_IDLE_S;
            srv->idle++;
            timed_out = pthread_cond_timedwait(&srv->job_cv, &srv->mu, &ts) == ETIMEDOUT;
            srv->idle--;
        }
        blocking_run *b = srv->jobs;
        if (!b) break; /* stopping, or idle too long */
        srv->jobs = b->next;
        if (!srv->jobs) srv->jobs_tail = NULL;
        pthread_mutex_unlock(&srv->mu);
        blocking_run_job(b);
        pthread_mutex_lock(&srv->mu);
        srv->running--;
        pthread_cond_broadcast(&srv->run_cv);
    }
    srv->nthreads--;
    pthread_cond_broadcast(&srv->run_cv);
    pthread_mutex_unlock(&srv->mu);
    return NULL;
}

/* Queues b for the pool, starting a thread when none is idle for it; false once the server is
 * being freed (its pool takes no more work). */
static const char *pool_submit(rill_server *srv, blocking_run *b)
{
    pthread_mutex_lock(&srv->mu);
    if (srv->pool_stop) {
        pthread_mutex_unlock(&srv->mu);
        return "is shutting down";
    }
    int queued = 0;
    for (blocking_run *j = srv->jobs; j; j = j->next) queued++;
    if (srv->jobs_tail) srv->jobs_tail->next = b;
    else srv->jobs = b;
    srv->jobs_tail = b;
    srv->running++;
    bool spawn = srv->idle <= queued;
    if (spawn) srv->nthreads++;
    pthread_cond_signal(&srv->job_cv);
    pthread_mutex_unlock(&srv->mu);
    if (!spawn) return NULL;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    const char *why = NULL;
    if (pthread_create(&th, &at, pool_main, srv) != 0) {
        rill__log(RILL_LOG_ERROR, "server %s: cannot start a thread for a blocking run",
                  srv->address);
        pthread_mutex_lock(&srv->mu);
        srv->nthreads--;
        /* With no thread at all, nothing would ever run b: take it back and say so. Other
         * threads will get to it otherwise. */
        blocking_run **pp = &srv->jobs, *prev = NULL;
        while (srv->nthreads == 0 && *pp && *pp != b) prev = *pp, pp = &(*pp)->next;
        if (srv->nthreads == 0 && *pp == b) {
            *pp = b->next;
            if (srv->jobs_tail == b) srv->jobs_tail = prev;
            srv->running--;
            pthread_cond_broadcast(&srv->run_cv);
            why = "cannot start a thread for a blocking run";
        }
        pthread_mutex_unlock(&srv->mu);
    }
    pthread_attr_destroy(&at);
    return why;
}

static void on_release(void *arg)
{
    blocking_run *b = arg;
    graph_unref(b->rg);
    rill__free(b);
}

/* A RUN of a graph that may block goes to the pool, which takes over the reference to rg; so
 * does a REGISTER_CLIENT (rg NULL). */
static void run_off_thread(rill_server *srv, rill__tcp_request *req, reg_graph *rg,
                           rill__tcp_response *resp)
{
    blocking_run *b = rill__calloc(1, sizeof *b);
    RILL_CHECK_ALLOC(b);
    b->srv = srv;
    b->rg = rg;
    uint8_t *meta = rill__malloc(req->meta_len ? req->meta_len : 1);
    RILL_CHECK_ALLOC(meta);
    memcpy(meta, req->meta, req->meta_len);
    b->req = *req;
    b->req.meta = meta;
    snprintf(b->peer, sizeof b->peer, "%s", req->peer);
    b->req.peer = b->peer;
    req->payload = NULL; /* the thread owns it */
    b->d = rill__tcp_response_defer(resp, on_hangup, on_release, b);
    const char *why = pool_submit(srv, b);
    if (why) {
        rill__tcp_response_set_error(rill__tcp_deferred_response(b->d), RILL_UNAVAILABLE,
                                     "server %s %s", srv->address, why);
        if (b->req.payload) rill__aligned_free(b->req.payload, b->req.payload_len);
        rill__free((void *)b->req.meta);
        rill__tcp_deferred_finish(b->d); /* b is released on the server thread after this */
    }
}

static void do_cancel(rill_server *srv, rill__mread *r)
{
    uint64_t owner = rill__mread_u64(r);
    if (r->bad) return;
    pthread_mutex_lock(&srv->mu);
    for (int i = 0; i < srv->graphs.n; i++) {
        reg_graph *rg = srv->graphs.items[i];
        if (rg->owner == owner) rill_session_cancel(rg->sess);
    }
    pthread_mutex_unlock(&srv->mu);
    /* Its parked receives look again, and see the cancellation. */
    rill__rendezvous_wake_step(srv->rv, owner, 0);
}

/* STATUS: what a master's step waits for here (its blocking ops' waits), answered inline:
 * describing a wait takes only the locks of the resources it waits on. */
static void do_status(rill_server *srv, rill__mread *r, rill__tcp_response *resp)
{
    uint64_t owner = rill__mread_u64(r), step = rill__mread_u64(r);
    if (r->bad) {
        rill__tcp_response_set_error(resp, RILL_INVALID_ARGUMENT, "malformed STATUS request");
        return;
    }
    rill__wait_report rep[8];
    int n = rill__resource_mgr_waits(srv->self.rm, owner, step, rep, 8);
    if (n > 8) n = 8;
    rill__mbuf q = {0};
    rill__mbuf_u32(&q, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        int named = rep[i].ntasks < RILL__WAIT_TASKS ? rep[i].ntasks : RILL__WAIT_TASKS;
        rill__mbuf_str(&q, rep[i].what);
        rill__mbuf_u32(&q, (uint32_t)rep[i].ntasks);
        rill__mbuf_u32(&q, (uint32_t)named);
        for (int k = 0; k < named; k++) rill__mbuf_str(&q, rep[i].tasks[k]);
    }
    rill__tcp_response_set_meta(resp, q.p, (uint32_t)q.n);
    rill__mbuf_free(&q);
}

/* TENSOR: tensors another task pushed for one of its steps, into the rendezvous. The tensors
 * are views of the request's payload, which they take over (received once, never copied). */
static void do_tensor(rill_server *srv, rill__tcp_request *req, rill__mread *r,
                      rill__tcp_response *resp)
{
    uint64_t owner = rill__mread_u64(r), step = rill__mread_u64(r);
    uint32_t n = rill__mread_u32(r);
    rill_status *s = rill_status_new();
    rill__buffer *pay = req->payload ? rill__buffer_adopt(req->payload, req->payload_len) : NULL;
    req->payload = NULL;
    uint64_t off = 0;
    char *keys[64] = {0};
    rill_tensor *ts[64] = {0};
    bool ok = !r->bad && n >= 1 && n <= 64;
    for (uint32_t i = 0; ok && i < n; i++) {
        keys[i] = rill__mread_str(r);
        ts[i] = keys[i] && !r->bad ? rill__mread_tensor(r, pay, req->payload_len, &off, s) : NULL;
        ok = ts[i] != NULL;
    }
    if (!ok || off != req->payload_len)
        rill__tcp_response_set_error(resp, RILL_INVALID_ARGUMENT, "malformed TENSOR request from %s",
                                     req->peer);
    else
        rill__rendezvous_put(srv->rv, owner, step, keys, ts, (int)n);
    for (int i = 0; i < 64; i++) {
        rill_tensor_free(ts[i]);
        rill__free(keys[i]);
    }
    rill__buffer_unref(pay);
    rill_status_free(s);
}

static void do_abort(rill_server *srv, rill__mread *r)
{
    uint64_t owner = rill__mread_u64(r), step = rill__mread_u64(r);
    if (!r->bad) rill__rendezvous_abort(srv->rv, owner, step);
}

/* The jobs whose tasks train, report that they finished, and are waited for by a ps's join. */
static bool is_training_job(const char *job)
{
    return strcmp(job, "worker") == 0 || strcmp(job, "chief") == 0;
}

/* The answer to a first FINISHED went out (or its connection dropped): join may return now. */
static void finished_answered(void *arg)
{
    rill_server *srv = arg;
    pthread_mutex_lock(&srv->jmu);
    srv->nanswered++;
    pthread_cond_broadcast(&srv->jcv);
    pthread_mutex_unlock(&srv->jmu);
}

/* FINISHED: a training task is done with this task. Only the first report of a task counts. */
static void do_finished(rill_server *srv, rill__tcp_request *req, rill__mread *r,
                        rill__tcp_response *resp)
{
    char *job = rill__mread_str(r);
    uint32_t index = rill__mread_u32(r);
    if (!job || r->bad || r->off != r->n) {
        rill__tcp_response_set_error(resp, RILL_INVALID_ARGUMENT,
                                     "malformed FINISHED request from %s", req->peer);
        rill__free(job);
        return;
    }
    /* A task reports for itself only: the task its connection proved (named) it is. */
    char claimed[RILL_JOB_NAME_MAX + 48];
    snprintf(claimed, sizeof claimed, "/job:%.64s/replica:0/task:%u", job, index);
    if (strcmp(claimed, req->task) != 0) {
        rill__tcp_response_set_error(resp, RILL_PERMISSION_DENIED,
                                     "%s (from %s) cannot report that %s finished",
                                     req->task[0] ? req->task : "a client naming no task",
                                     req->peer, claimed);
        rill__free(job);
        return;
    }
    trainer *t = NULL;
    pthread_mutex_lock(&srv->jmu);
    for (int i = 0; i < srv->ntrainers && !t; i++)
        if (strcmp(srv->trainers[i].job, job) == 0 && (uint32_t)srv->trainers[i].index == index)
            t = &srv->trainers[i];
    bool first = t && !t->finished;
    if (first) {
        t->finished = true;
        srv->nfinished++;
        char name[96];
        snprintf(name, sizeof name, "/job:%s/task:%u", job, index);
        rill__resource_mgr_task_finished(srv->self.rm, name);
    }
    int n = srv->nfinished, total = srv->ntrainers;
    pthread_mutex_unlock(&srv->jmu);
    if (!t) {
        rill__tcp_response_set_error(
            resp, RILL_INVALID_ARGUMENT,
            "/job:%.64s/task:%u (from %s) is not a task of the \"worker\" or \"chief\" job in the "
            "cluster of /job:%s/task:%d: its report that it finished does not count",
            job, index, req->peer, srv->self.job, srv->self.index);
    } else if (first) {
        rill__log(RILL_LOG_INFO,
                  "server /job:%s/task:%d: /job:%s/task:%u finished (%d of %d workers)%s",
                  srv->self.job, srv->self.index, job, index, n, total,
                  n == total && srv->self.opts.join_forever ? "; serving on (join_forever)" : "");
        /* No bytes: the callback says when the answer has gone out. */
        rill__tcp_response_set_payload(resp, NULL, 0, finished_answered, srv);
    }
    rill__free(job);
}

static void do_deregister(rill_server *srv, rill__tcp_request *req, rill__mread *r,
                          rill__tcp_response *resp)
{
    uint64_t h = rill__mread_u64(r);
    pthread_mutex_lock(&srv->mu);
    for (int i = 0; i < srv->graphs.n; i++) {
        reg_graph *rg = srv->graphs.items[i];
        if (rg->handle != h || strcmp(rg->task, req->task) != 0) continue;
        srv->graphs.items[i] = srv->graphs.items[--srv->graphs.n];
        update_tensor_limit(srv);
        pthread_mutex_unlock(&srv->mu);
        graph_unref(rg);
        return;
    }
    pthread_mutex_unlock(&srv->mu);
    rill__tcp_response_set_error(resp, RILL_NOT_FOUND, "graph handle %llu is not registered",
                                 (unsigned long long)h);
}

static void handle(void *arg, rill__tcp_request *req, rill__tcp_response *resp)
{
    rill_server *srv = arg;
    rill__mread r = {.p = req->meta, .n = req->meta_len};
    uint32_t op = rill__mread_u32(&r);
    /* A client that is no task of the cluster (client.c) runs sessions, nothing else. */
    if (!r.bad && rill__is_client_identity(req->task) && op != RILL__RPC_REGISTER_CLIENT &&
        op != RILL__RPC_RUN && op != RILL__RPC_DEREGISTER && op != RILL__RPC_CANCEL) {
        rill__tcp_response_set_error(resp, RILL_PERMISSION_DENIED,
                                     "%s (%s) is no task of the cluster: a client may only run "
                                     "sessions here (request %u refused)",
                                     req->task, req->peer, op);
        return;
    }
    switch (r.bad ? 0 : op) {
    case RILL__RPC_GET_DEVICES: do_get_devices(srv, resp); break;
    case RILL__RPC_REGISTER_CLIENT: run_off_thread(srv, req, NULL, resp); break;
    case RILL__RPC_REGISTER: do_register(srv, req, &r, resp); break;
    case RILL__RPC_RUN: {
        rill__mread peek = r;
        reg_graph *rg = find_graph(srv, rill__mread_u64(&peek), req->task);
        if (rg && rg->blocking) {
            run_off_thread(srv, req, rg, resp);
        } else if (rg && rg->parks) {
            run_async(srv, req, &r, rg, resp);
        } else {
            do_run(req, &r, rg, resp);
            graph_unref(rg);
        }
        break;
    }
    case RILL__RPC_CANCEL: do_cancel(srv, &r); break;
    case RILL__RPC_TENSOR: do_tensor(srv, req, &r, resp); break;
    case RILL__RPC_ABORT: do_abort(srv, &r); break;
    case RILL__RPC_DEREGISTER: do_deregister(srv, req, &r, resp); break;
    case RILL__RPC_STATUS: do_status(srv, &r, resp); break;
    case RILL__RPC_FINISHED: do_finished(srv, req, &r, resp); break;
    default:
        rill__tcp_response_set_error(resp, RILL_UNIMPLEMENTED, "unknown request %u from %s", op,
                                     req->peer);
    }
}

/* --- lifecycle --- */

char *rill_cluster_secret_read(const char *path, rill_status *s)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) {
        rill_status_set(s, RILL_NOT_FOUND, "cannot read the cluster secret file '%s': %s",
                        path ? path : "(null)", strerror(errno));
        return NULL;
    }
    char line[1024];
    size_t n = fgets(line, sizeof line, f) ? strcspn(line, "\r\n") : 0;
    fclose(f);
    line[n] = 0;
    if (n < 32) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "the cluster secret in '%s' has %zu characters: at least 32 are needed "
                        "(make one with rill-keygen)",
                        path, n);
        return NULL;
    }
    char *out = malloc(n + 1);
    RILL_CHECK_ALLOC(out);
    memcpy(out, line, n + 1);
    return out;
}

rill_server *rill_server_new(const rill_cluster_spec *cluster, const char *job, int task_index,
                             const rill_server_options *opts, rill_status *s)
{
    if (!cluster || !job) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "rill_server_new: cluster and job are required");
        return NULL;
    }
    const char *addr = rill_cluster_spec_task_address(cluster, job, task_index, s);
    if (!addr) return NULL;
    rill_server *srv = rill__calloc(1, sizeof *srv);
    RILL_CHECK_ALLOC(srv);
    rill__local_task *self = &srv->self;
    self->cluster = rill_cluster_spec_copy(cluster);
    snprintf(self->job, sizeof self->job, "%s", job);
    self->index = task_index;
    if (opts) self->opts = *opts;
    if (self->opts.connect_deadline_s <= 0) self->opts.connect_deadline_s = 60;
    if (self->opts.step_deadline_s <= 0) self->opts.step_deadline_s = 300;
    if (self->opts.heartbeat_idle_s <= 0) self->opts.heartbeat_idle_s = 10;
    const char *forever = getenv("RILL_PS_JOIN_FOREVER");
    if (!self->opts.join_forever && forever && *forever) {
        if (strcmp(forever, "1") != 0 && strcmp(forever, "0") != 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Invalid value for environment variable RILL_PS_JOIN_FOREVER: \"%s\" "
                            "(expected 1: serve until stopped, or 0: until every worker finished)",
                            forever);
            rill_cluster_spec_free(self->cluster);
            rill__free(srv);
            return NULL;
        }
        self->opts.join_forever = strcmp(forever, "1") == 0;
    }
    if (opts && opts->secret) {
        srv->secret = rill__strdup(opts->secret);
    } else if (getenv("RILL_CLUSTER_SECRET_FILE") && *getenv("RILL_CLUSTER_SECRET_FILE")) {
        char *sec = rill_cluster_secret_read(getenv("RILL_CLUSTER_SECRET_FILE"), s);
        if (!sec) {
            char msg[1200];
            snprintf(msg, sizeof msg, "%s", rill_status_message(s));
            rill_status_set(s, rill_status_code(s), "RILL_CLUSTER_SECRET_FILE: %s", msg);
            rill_cluster_spec_free(self->cluster);
            rill__free(srv);
            return NULL;
        }
        srv->secret = rill__strdup(sec);
        free(sec);
    }
    self->opts.secret = srv->secret;
    if (opts && opts->run_id) srv->run_id = rill__strdup(opts->run_id);
    self->opts.run_id = srv->run_id;
    self->opts.run_id_file = NULL; /* read once, below */
    if (self->opts.max_payload == 0) self->opts.max_payload = UINT64_C(1) << 30;
    if (self->opts.encrypt && !self->opts.secret) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "encryption needs a cluster secret (rill_server_options.secret or "
                        "RILL_CLUSTER_SECRET_FILE)");
        rill__free(srv->secret);
        rill__free(srv->run_id);
        rill_cluster_spec_free(self->cluster);
        rill__free(srv);
        return NULL;
    }
    pthread_mutex_init(&self->id_mu, NULL);
    self->opts.run_id_file = opts ? opts->run_id_file : NULL;
    rill__local_task_identity_init(self);
    self->opts.run_id_file = NULL;
    atomic_init(&srv->tensor_limit, UINT64_C(64) << 10);
    for (int j = 0; j < rill_cluster_spec_num_jobs(self->cluster); j++) {
        const char *jn = rill_cluster_spec_job_name(self->cluster, j);
        if (!is_training_job(jn)) continue;
        int nt = rill_cluster_spec_num_tasks(self->cluster, jn, NULL);
        srv->trainers =
            rill__realloc(srv->trainers, (size_t)(srv->ntrainers + nt + 1) * sizeof *srv->trainers);
        RILL_CHECK_ALLOC(srv->trainers);
        for (int i = 0; i < nt; i++) {
            trainer *t = &srv->trainers[srv->ntrainers++];
            snprintf(t->job, sizeof t->job, "%s", jn);
            t->index = rill_cluster_spec_task_index(self->cluster, jn, i);
            t->finished = false;
        }
    }
    pthread_mutex_init(&srv->mu, NULL);
    pthread_mutex_init(&srv->jmu, NULL);
    pthread_cond_init(&srv->run_cv, NULL);
    pthread_cond_init(&srv->job_cv, NULL);
    pthread_cond_init(&srv->jcv, NULL);
    self->rm = rill__resource_mgr_new();
    srv->rv = rill__rendezvous_install(self);
    /* Enumerate the devices here, on the caller's thread: OpenCL implementations (PoCL's LLVM)
     * may set up per-thread state such as an alternate signal stack on the first call, which the
     * transport thread must not own when it exits. */
    rill__device *const *devs;
    if (rill__devices(NULL, &devs, s) < 0) {
        rill_server_free(srv);
        return NULL;
    }
    rill__tcp_options to;
    rill__local_task_client_options(self, &to);
    to.admit = rill__local_task_admit;
    to.payload_limit = payload_limit;
    to.arg = srv;
    /* Room for every task of the cluster (each holds up to max_per_task) and some to spare. */
    int ntasks = 0;
    for (int j = 0; j < rill_cluster_spec_num_jobs(cluster); j++)
        ntasks += rill_cluster_spec_num_tasks(cluster, rill_cluster_spec_job_name(cluster, j), NULL);
    to.max_per_task = 64;
    to.max_connections = 64 * ntasks + 128 > 256 ? 64 * ntasks + 128 : 256;
    to.max_payload = self->opts.max_payload;
    srv->tcp = rill__tcp_server_new(addr, &to, handle, srv, s);
    if (!srv->tcp) {
        rill_server_free(srv);
        return NULL;
    }
    char host[256];
    int port;
    if (!rill_address_parse(addr, true, host, sizeof host, &port, NULL)) snprintf(host, sizeof host, "127.0.0.1");
    snprintf(srv->address, sizeof srv->address, "%.200s:%d",
             strcmp(host, "localhost") == 0 ? "127.0.0.1" : host, rill__tcp_server_port(srv->tcp));
    snprintf(self->target, sizeof self->target, "rill://%s", srv->address);
    rill__master_add_task(self);
    rill__log(RILL_LOG_INFO, "Started server with target: %s (/job:%s/task:%d)", self->target,
              self->job, self->index);
    rill_status_clear(s);
    return srv;
}

rill_server *rill_server_create_local(rill_status *s)
{
    rill_cluster_spec *c = rill_cluster_spec_local();
    rill_server *srv = rill_server_new(c, "local", 0, NULL, s);
    rill_cluster_spec_free(c);
    if (srv) {
        /* The local task's own address is its bound port. */
        rill_cluster_spec *real = rill_cluster_spec_new();
        const char *a[] = {srv->address};
        rill_cluster_spec_add_job(real, "local", a, 1, NULL);
        pthread_mutex_lock(&srv->self.id_mu);
        rill_cluster_spec *old = srv->self.cluster;
        srv->self.cluster = real;
        rill__local_task_identity_init(&srv->self);
        pthread_mutex_unlock(&srv->self.id_mu);
        rill_cluster_spec_free(old);
    }
    return srv;
}

const char *rill_server_target(const rill_server *srv)
{
    return srv->self.target;
}

const char *rill_server_job(const rill_server *srv)
{
    return srv->self.job;
}

int rill_server_task_index(const rill_server *srv)
{
    return srv->self.index;
}

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
    (void)sig;
    got_signal = 1;
}

rill_code rill_server_join(rill_server *srv, rill_status *s)
{
    struct sigaction sa = {0}, old_term, old_int;
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGINT, &sa, &old_int);
    pthread_mutex_lock(&srv->jmu);
    bool all_finished = false;
    while (!atomic_load(&srv->stopping) && !got_signal) {
        all_finished =
            !srv->self.opts.join_forever && srv->ntrainers > 0 && srv->nanswered == srv->ntrainers;
        if (all_finished) break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&srv->jcv, &srv->jmu, &ts);
    }
    pthread_mutex_unlock(&srv->jmu);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGINT, &old_int, NULL);
    if (all_finished)
        rill__log(RILL_LOG_INFO,
                  "server /job:%s/task:%d: all %d workers of the cluster finished; "
                  "join returns",
                  srv->self.job, srv->self.index, srv->ntrainers);
    else
        rill__log(RILL_LOG_INFO, "server /job:%s/task:%d stopping", srv->self.job, srv->self.index);
    rill_status_clear(s);
    return RILL_OK;
}

rill_code rill_server_report_finished(rill_server *srv, rill_status *s)
{
    rill_status_clear(s);
    rill__local_task *self = &srv->self;
    if (!is_training_job(self->job)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "rill_server_report_finished: /job:%s/task:%d is not a task of the "
                        "\"worker\" or \"chief\" job: only those report that they finished",
                        self->job, self->index);
        return RILL_INVALID_ARGUMENT;
    }
    const rill_cluster_spec *c = self->cluster;
    int nps = rill_cluster_spec_has_job(c, "ps") ? rill_cluster_spec_num_tasks(c, "ps", NULL) : 0;
    rill__mbuf m = {0};
    rill__mbuf_u32(&m, RILL__RPC_FINISHED);
    rill__mbuf_str(&m, self->job);
    rill__mbuf_u32(&m, (uint32_t)self->index);
    double limit = self->opts.connect_deadline_s < 10 ? self->opts.connect_deadline_s : 10;
    rill_code code = RILL_OK;
    int nfailed = 0;
    char why[2048] = "";
    size_t wn = 0;
    rill_status *e = rill_status_new();
    for (int i = 0; i < nps; i++) {
        int idx = rill_cluster_spec_task_index(c, "ps", i);
        const char *addr = rill_cluster_spec_task_address(c, "ps", idx, NULL);
        double end = rill__now_seconds() + limit;
        rill__channel *ch = rill__local_task_connect(self, addr, limit, e);
        rill__reply rep = {0};
        double left = end - rill__now_seconds();
        bool ok = ch && rill__channel_call(ch, RILL__MSG_REQUEST, m.p, (uint32_t)m.n, NULL, 0, &rep,
                                           left > 0.001 ? left : 0.001, e);
        if (rep.payload_owned) rill__aligned_free(rep.payload, rep.payload_len);
        rill__channel_close(ch);
        if (ok) continue;
        if (code == RILL_OK) code = rill_status_code(e);
        nfailed++;
        if (wn < sizeof why)
            wn += (size_t)snprintf(why + wn, sizeof why - wn, "%s/job:ps/task:%d (%s): %s",
                                   nfailed > 1 ? "; " : "", idx, addr, rill_status_message(e));
        rill_status_clear(e);
    }
    rill_status_free(e);
    rill__mbuf_free(&m);
    if (nfailed)
        rill_status_set(s, code,
                        "could not tell %d of %d ps tasks that /job:%s/task:%d finished (they will "
                        "not end by themselves): %s",
                        nfailed, nps, self->job, self->index, why);
    return code;
}

int rill_server_finished_tasks(rill_server *srv, int *total)
{
    pthread_mutex_lock(&srv->jmu);
    int n = srv->nfinished;
    if (total) *total = srv->ntrainers;
    pthread_mutex_unlock(&srv->jmu);
    return n;
}

void rill_server_stop(rill_server *srv)
{
    atomic_store(&srv->stopping, true);
    pthread_cond_broadcast(&srv->jcv);
}

void rill_server_free(rill_server *srv)
{
    if (!srv) return;
    rill__master_remove_task(&srv->self);
    /* Blocking runs in flight are cancelled and finish before the transport goes. */
    pthread_mutex_lock(&srv->mu);
    srv->pool_stop = true;
    pthread_cond_broadcast(&srv->job_cv);
    while (srv->running > 0 || srv->nthreads > 0) {
        for (int i = 0; i < srv->graphs.n; i++)
            rill_session_cancel(((reg_graph *)srv->graphs.items[i])->sess);
        pthread_mutex_unlock(&srv->mu);
        rill__rendezvous_wake_step(srv->rv, 0, 0); /* parked receives see it */
        pthread_mutex_lock(&srv->mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&srv->run_cv, &srv->mu, &ts);
    }
    pthread_mutex_unlock(&srv->mu);
    rill__tcp_server_free(srv->tcp);
    for (int i = 0; i < srv->graphs.n; i++) graph_unref(srv->graphs.items[i]);
    rill__vec_free(&srv->graphs);
    rill__resource_mgr_free(srv->self.rm);
    rill_cluster_spec_free(srv->self.cluster);
    rill__free(srv->secret);
    rill__free(srv->run_id);
    pthread_mutex_destroy(&srv->self.id_mu);
    rill__free(srv->trainers);
    pthread_mutex_destroy(&srv->mu);
    pthread_mutex_destroy(&srv->jmu);
    pthread_cond_destroy(&srv->jcv);
    pthread_cond_destroy(&srv->run_cv);
    pthread_cond_destroy(&srv->job_cv);
    rill__free(srv);
}
