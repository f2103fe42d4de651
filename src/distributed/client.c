/* client.c - a session on another process's server: tf.Session("grpc://host:port") or
 * "rill://host:port" from a process where no server of its own answers that target, as TF's
 * client hands its graph to a master (a notebook or a driver process steering a cluster whose
 * workers only serve).
 *
 * The client sends its whole graph to the server (REGISTER_CLIENT, graph codec), which makes a
 * session on its own target there: the master of that task places the graph over the cluster,
 * with the client's ConfigProto (soft placement, device filters, timeout), exactly as for a
 * session of that process. A run is one RUN call: the feeds' values go out from their own
 * buffers, fetches and targets by name, and the fetched tensors come back in the reply. A graph
 * that grew since it was sent (TF programs add ops between runs: a Saver, an initializer) is
 * sent again before the run, under a new handle; the variables live on the servers, so nothing
 * of the model is lost, and the handles sent before are forgotten at close.
 *
 * Connections are the client's own: a handshake names "client:<host>/<pid>/<n>", no cluster
 * (the server admits it to run sessions only), with the secret of RILL_CLUSTER_SECRET_FILE when
 * that is set. A master that is not up yet is waited for (a log line every few seconds) up to
 * the connect deadline; a run waits for its reply up to its timeout (plus a grace, so that the
 * master's own DEADLINE_EXCEEDED comes back first) or, with none, the step deadline; every
 * transport error names the address and the wait. Runs at once use connections of their own
 * (an idle pool); a cancel (rill_session_cancel) is a CANCEL of the client's steps there. */
#include "graph_codec.h"
#include "master.h"
#include "rpc.h"

#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CLIENT_CONNECT_DEADLINE_S 60.0
#define CLIENT_STEP_DEADLINE_S 300.0
#define CLIENT_GRACE_S 10.0
#define CLIENT_POOL 8

struct rill__client {
    char target[256];
    const char *addr; /* in target */
    rill_graph *g;
    rill_session_options opts;
    char *secret;
    rill__identity id;
    uint64_t owner; /* this client's steps on the server (CANCEL names it) */
    pthread_mutex_t mu; /* the registration (a run sends a grown graph under it) */
    uint64_t handle; /* the latest registration, of the graph's first nsent nodes */
    int nsent;
    uint64_t *old; /* earlier registrations, forgotten at close */
    int nold;
    pthread_mutex_t pmu; /* the idle connections */
    rill__channel *idle[CLIENT_POOL];
    int nidle;
};

static double now_s(void)
{
    return rill__now_seconds();
}

/* How long a master that is not up is waited for: the connect deadline, or the session's
 * operation timeout when that is shorter. */
static double connect_deadline(const rill__client *c)
{
    double t = (double)c->opts.operation_timeout_ms / 1000.0;
    return t > 0 && t < CLIENT_CONNECT_DEADLINE_S ? t : CLIENT_CONNECT_DEADLINE_S;
}

static void tcp_options(const rill__client *c, rill__tcp_options *o)
{
    memset(o, 0, sizeof *o);
    if (c->secret) {
        o->secret = c->secret;
        o->secret_len = strlen(c->secret);
    }
    o->identity = c->id;
}

static rill__channel *dial_master(void *arg, double attempt_s, rill_status *s)
{
    rill__client *c = arg;
    rill__tcp_options o;
    tcp_options(c, &o);
    return rill__tcp_connect(c->addr, &o, attempt_s, s);
}

/* A connection to the master: an idle one, or a new one (waiting for a server that is not up
 * yet, up to the connect deadline). NULL with s set, naming the address. */
static rill__channel *conn_get(rill__client *c, rill_status *s)
{
    pthread_mutex_lock(&c->pmu);
    rill__channel *ch = c->nidle ? c->idle[--c->nidle] : NULL;
    pthread_mutex_unlock(&c->pmu);
    /* Between calls a pooled connection carries nothing but the server's close. */
    if (ch && !rill__channel_readable(ch, 0)) return ch;
    rill__channel_close(ch);
    char what[300];
    snprintf(what, sizeof what, "the master at %s", c->target);
    ch = rill__connect_retrying(what, connect_deadline(c), dial_master, c, s);
    if (!ch && rill_status_code(s) != RILL_UNAVAILABLE) {
        char why[1024];
        snprintf(why, sizeof why, "%s", rill_status_message(s));
        rill_status_set(s, rill_status_code(s), "connecting to the master at %s: %s", c->target,
                        why);
    }
    return ch;
}

/* Hands ch back after a call the server answered (ok), else closes it. */
static void conn_put(rill__client *c, rill__channel *ch, bool ok)
{
    if (!ch) return;
    pthread_mutex_lock(&c->pmu);
    if (ok && c->nidle < CLIENT_POOL) {
        c->idle[c->nidle++] = ch;
        ch = NULL;
    }
    pthread_mutex_unlock(&c->pmu);
    rill__channel_close(ch);
}

/* One call to the master within deadline_s. The reply's meta lives in the channel: on success
 * the caller reads it, then hands *held back (conn_put). A transport failure names the master. */
static bool call(rill__client *c, const rill__mbuf *q, const struct iovec *iov, int niov,
                 rill__reply *rep, double deadline_s, rill__channel **held, rill_status *s)
{
    *held = NULL;
    rill__channel *ch = conn_get(c, s);
    if (!ch) return false;
    if (rill__channel_call(ch, RILL__MSG_REQUEST, q->p, (uint32_t)q->n, iov, niov, rep,
                           deadline_s, s)) {
        *held = ch;
        return true;
    }
    rill_code code = rill_status_code(s);
    bool transport = code == RILL_UNAVAILABLE || code == RILL_DEADLINE_EXCEEDED ||
                     code == RILL_DATA_LOSS;
    if (transport) {
        char why[1024];
        snprintf(why, sizeof why, "%s", rill_status_message(s));
        rill_status_set(s, code, "the master at %s (waited up to %.0f s): %s", c->target,
                        deadline_s, why);
    }
    conn_put(c, ch, !transport); /* an error the server answered leaves it good */
    return false;
}

/* Sends the graph as it is now (under c->mu): a new handle for its first nodes. */
static bool send_graph(rill__client *c, rill_status *s)
{
    int nn = rill_graph_num_nodes(c->g);
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (!rill__graph_encode(c->g, &bytes, &len, s)) return false;
    rill__mbuf q = {0};
    rill__mbuf_u32(&q, RILL__RPC_REGISTER_CLIENT);
    rill__mbuf_u64(&q, c->owner);
    rill__mbuf_u32(&q, (c->opts.allow_soft_placement ? 1u : 0u) |
                           (c->opts.log_device_placement ? 2u : 0u));
    rill__mbuf_u64(&q, (uint64_t)(c->opts.operation_timeout_ms > 0 ? c->opts.operation_timeout_ms
                                                                   : 0));
    rill__mbuf_u32(&q, (uint32_t)(c->opts.inter_op_threads > 0 ? c->opts.inter_op_threads : 0));
    rill__mbuf_u32(&q, (uint32_t)(c->opts.intra_op_threads > 0 ? c->opts.intra_op_threads : 0));
    int nf = c->opts.ndevice_filters < RILL_MAX_DEVICE_FILTERS ? c->opts.ndevice_filters
                                                               : RILL_MAX_DEVICE_FILTERS;
    rill__mbuf_u32(&q, (uint32_t)nf);
    for (int i = 0; i < nf; i++) rill__mbuf_str(&q, c->opts.device_filters[i]);
    struct iovec iov = {bytes, len};
    rill__reply rep = {0};
    rill__channel *ch;
    /* Opening the session there asks every task of the cluster for its devices. */
    bool ok = call(c, &q, &iov, 1, &rep, CLIENT_CONNECT_DEADLINE_S + CLIENT_GRACE_S, &ch, s);
    rill__mbuf_free(&q);
    rill__free(bytes);
    if (!ok) {
        if (rill_status_code(s) != RILL_UNAVAILABLE && rill_status_code(s) != RILL_DEADLINE_EXCEEDED) {
            char why[2048];
            snprintf(why, sizeof why, "%s", rill_status_message(s));
            rill_status_set(s, rill_status_code(s), "opening a session on the master at %s: %s",
                            c->target, why);
        }
        return false;
    }
    rill__mread r = {.p = rep.meta, .n = rep.meta_len};
    uint64_t h = rill__mread_u64(&r);
    if (rep.payload_owned) rill__aligned_free(rep.payload, rep.payload_len);
    conn_put(c, ch, !r.bad);
    if (r.bad || h == 0) {
        rill_status_set(s, RILL_DATA_LOSS, "the master at %s sent a malformed REGISTER reply",
                        c->target);
        return false;
    }
    if (c->handle) {
        c->old = rill__realloc(c->old, (size_t)(c->nold + 1) * sizeof *c->old);
        RILL_CHECK_ALLOC(c->old);
        c->old[c->nold++] = c->handle;
    }
    c->handle = h;
    c->nsent = nn;
    return true;
}

static void put_name(rill__mbuf *q, rill_output o)
{
    char name[1100];
    snprintf(name, sizeof name, "%s:%d", rill_node_name(o.node), o.index);
    rill__mbuf_str(q, name);
}

/* One RUN; *handle_out gets the handle it named. */
static rill_code run_once(rill__client *c, rill__deadline d, const rill_output *feeds,
                          rill_tensor *const *feed_values, int nfeeds, const rill_output *fetches,
                          rill_tensor **fetch_values, int nfetches, rill_node *const *targets,
                          int ntargets, uint64_t *handle_out, rill_status *s)
{
    for (int i = 0; i < nfetches; i++) fetch_values[i] = NULL;
    if (nfeeds > 4096 || nfetches > 4096 || ntargets > 4096) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "a run on another process's master takes at most 4096 feeds, fetches "
                        "and targets each");
        return RILL_INVALID_ARGUMENT;
    }
    pthread_mutex_lock(&c->mu);
    bool ok = rill_graph_num_nodes(c->g) == c->nsent || send_graph(c, s);
    uint64_t handle = c->handle;
    pthread_mutex_unlock(&c->mu);
    *handle_out = handle;
    if (!ok) return rill_status_code(s);
    int64_t ms = d.timeout_ms > 0 ? d.timeout_ms : 0;
    double wait = CLIENT_STEP_DEADLINE_S;
    if (d.at > 0) {
        wait = d.at - now_s();
        if (wait <= 0) {
            rill_status_set(s, RILL_DEADLINE_EXCEEDED,
                            "Timed out waiting for notification: the run's %lld ms deadline passed "
                            "before it was sent to the master at %s",
                            (long long)ms, c->target);
            return RILL_DEADLINE_EXCEEDED;
        }
        ms = (int64_t)(wait * 1000) > 0 ? (int64_t)(wait * 1000) : 1;
        wait += CLIENT_GRACE_S;
    }
    rill__mbuf q = {0}, blob = {0};
    rill__mbuf_u32(&q, RILL__RPC_RUN);
    rill__mbuf_u64(&q, handle);
    rill__mbuf_u64(&q, 0);
    rill__mbuf_u64(&q, (uint64_t)ms);
    rill__mbuf_u32(&q, (uint32_t)nfeeds);
    ok = true;
    for (int i = 0; i < nfeeds && ok; i++) {
        put_name(&q, feeds[i]);
        ok = rill__mbuf_tensor(&q, feed_values[i], s);
    }
    rill__mbuf_u32(&q, (uint32_t)nfetches);
    for (int i = 0; i < nfetches; i++) put_name(&q, fetches[i]);
    rill__mbuf_u32(&q, (uint32_t)ntargets);
    for (int i = 0; i < ntargets; i++) rill__mbuf_str(&q, rill_node_name(targets[i]));
    struct iovec iov[16];
    int niov = ok ? rill__payload_iovecs(feed_values, nfeeds, iov, 16, &blob) : 0;
    rill__reply rep = {0};
    rill__channel *ch = NULL;
    if (ok) ok = call(c, &q, iov, niov, &rep, wait, &ch, s);
    rill__mbuf_free(&q);
    rill__mbuf_free(&blob);
    if (!ok) {
        if (rep.payload_owned) rill__aligned_free(rep.payload, rep.payload_len);
        return rill_status_code(s);
    }
    /* The fetches are views of the reply's payload (no copy). */
    rill__mread r = {.p = rep.meta, .n = rep.meta_len};
    uint32_t n = rill__mread_u32(&r);
    rill__buffer *pay = rep.payload_owned ? rill__buffer_adopt(rep.payload, rep.payload_len) : NULL;
    uint64_t off = 0;
    ok = !r.bad && n == (uint32_t)nfetches && (pay || !rep.payload_len);
    for (uint32_t i = 0; ok && i < n; i++) {
        fetch_values[i] = rill__mread_tensor(&r, pay, rep.payload_len, &off, s);
        ok = fetch_values[i] != NULL;
    }
    rill__buffer_unref(pay);
    conn_put(c, ch, ok);
    if (!ok) {
        for (int i = 0; i < nfetches; i++) rill_tensor_free(fetch_values[i]), fetch_values[i] = NULL;
        rill_status_set(s, RILL_DATA_LOSS, "the master at %s sent a malformed RUN reply",
                        c->target);
        return RILL_DATA_LOSS;
    }
    rill_status_clear(s);
    return RILL_OK;
}

rill_code rill__client_run(rill__client *c, rill__deadline d, const rill_output *feeds,
                           rill_tensor *const *feed_values, int nfeeds, const rill_output *fetches,
                           rill_tensor **fetch_values, int nfetches, rill_node *const *targets,
                           int ntargets, rill_status *s)
{
    uint64_t handle = 0;
    rill_code code = run_once(c, d, feeds, feed_values, nfeeds, fetches, fetch_values, nfetches,
                              targets, ntargets, &handle, s);
    /* The master's process was restarted at its address and forgot the graph: send it again
     * (the variables, on the ps tasks, are where they were) and run once more. */
    if (code == RILL_NOT_FOUND && strstr(rill_status_message(s), "is not registered")) {
        pthread_mutex_lock(&c->mu);
        if (c->handle == handle) {
            c->handle = 0; /* forgotten there: nothing to drop at close */
            c->nsent = 0;
        }
        pthread_mutex_unlock(&c->mu);
        rill__log(RILL_LOG_INFO, "the master at %s forgot this session's graph (restarted?): "
                                 "sending it again", c->target);
        code = run_once(c, d, feeds, feed_values, nfeeds, fetches, fetch_values, nfetches, targets,
                        ntargets, &handle, s);
    }
    return code;
}

rill__client *rill__client_open(const char *target, rill_graph *g, const rill_session_options *o,
                                rill_status *s)
{
    const char *addr = rill__target_address(target);
    if (!addr || strlen(target) >= sizeof ((rill__client *)0)->target) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "target '%s' is not \"grpc://host:port\" or \"rill://host:port\"", target);
        return NULL;
    }
    rill__client *c = rill__calloc(1, sizeof *c);
    RILL_CHECK_ALLOC(c);
    snprintf(c->target, sizeof c->target, "%s", target);
    c->addr = c->target + (addr - target);
    c->g = g;
    c->opts = *o;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->pmu, NULL);
    const char *file = getenv("RILL_CLUSTER_SECRET_FILE");
    if (file && *file) {
        char *sec = rill_cluster_secret_read(file, s);
        if (!sec) {
            rill__client_close(c);
            return NULL;
        }
        c->secret = rill__strdup(sec);
        sodium_memzero(sec, strlen(sec));
        free(sec);
    }
    randombytes_buf(&c->owner, sizeof c->owner);
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    static atomic_int seq;
    snprintf(c->id.task, sizeof c->id.task, RILL__CLIENT_PREFIX "%s/%d/%d", host, (int)getpid(),
             atomic_fetch_add(&seq, 1));
    pthread_mutex_lock(&c->mu);
    bool ok = send_graph(c, s);
    pthread_mutex_unlock(&c->mu);
    if (!ok) {
        rill__client_close(c);
        return NULL;
    }
    return c;
}

void rill__client_cancel(rill__client *c)
{
    rill_status *s = rill_status_new();
    rill__tcp_options o;
    tcp_options(c, &o);
    /* A connection of its own: the runs hold theirs. */
    rill__send_cancel(rill__tcp_connect(c->addr, &o, 5, s), c->owner);
    rill_status_free(s);
}

void rill__client_close(rill__client *c)
{
    if (!c) return;
    /* The server forgets the graphs (best effort, briefly: it may be gone already). */
    uint64_t hs[1 + 64];
    int nh = 0;
    if (c->handle) hs[nh++] = c->handle;
    for (int i = 0; i < c->nold && nh < 65; i++) hs[nh++] = c->old[i];
    if (nh) {
        rill_status *s = rill_status_new();
        rill__channel *ch = c->nidle ? c->idle[--c->nidle] : NULL;
        if (!ch) {
            rill__tcp_options o;
            tcp_options(c, &o);
            ch = rill__tcp_connect(c->addr, &o, 2, s);
        }
        for (int i = 0; ch && i < nh; i++) {
            rill__mbuf q = {0};
            rill__mbuf_u32(&q, RILL__RPC_DEREGISTER);
            rill__mbuf_u64(&q, hs[i]);
            rill__reply rep = {0};
            bool ok = rill__channel_call(ch, RILL__MSG_REQUEST, q.p, (uint32_t)q.n, NULL, 0, &rep,
                                         2, s);
            if (rep.payload_owned) rill__aligned_free(rep.payload, rep.payload_len);
            rill__mbuf_free(&q);
            if (!ok && rill_status_code(s) != RILL_NOT_FOUND) break;
        }
        rill__channel_close(ch);
        rill_status_free(s);
    }
    for (int i = 0; i < c->nidle; i++) rill__channel_close(c->idle[i]);
    rill__free(c->old);
    if (c->secret) {
        sodium_memzero(c->secret, strlen(c->secret));
        rill__free(c->secret);
    }
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->pmu);
    rill__free(c);
}
