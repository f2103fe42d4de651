/* session.c - the local session: options, the plan cache and rill_session_run.
 *
 * Plans are cached per (feeds, fetches, targets), keyed by the node ids and output indices in
 * the order given. Lookup hashes the key and compares it; a miss builds a plan under the
 * session lock. Variables live in the session's resource manager. */
#include <rill/session.h>

#include "runtime.h"

#include <stdlib.h>
#include <string.h>

rill_session_options *rill_session_options_new(void)
{
    rill_session_options *o = rill__calloc(1, sizeof *o);
    RILL_CHECK_ALLOC(o);
    return o;
}

void rill_session_options_free(rill_session_options *o)
{
    rill__free(o);
}

void rill_session_options_set_inter_op_threads(rill_session_options *o, int n)
{
    o->inter_op_threads = n < 0 ? 0 : n;
}

void rill_session_options_set_intra_op_threads(rill_session_options *o, int n)
{
    o->intra_op_threads = n < 0 ? 0 : n;
}

void rill_session_options_set_log_device_placement(rill_session_options *o, bool on)
{
    o->log_device_placement = on;
}

void rill_session_options_set_allow_soft_placement(rill_session_options *o, bool on)
{
    o->allow_soft_placement = on;
}

void rill_session_options_set_operation_timeout_ms(rill_session_options *o, int64_t ms)
{
    o->operation_timeout_ms = ms > 0 ? ms : 0;
}

void rill_session_options_set_gpu_allow_growth(rill_session_options *o, bool on)
{
    o->allow_growth = on;
}

void rill_session_options_set_gpu_memory_fraction(rill_session_options *o, double fraction)
{
    o->memory_fraction = fraction;
}

void rill_session_options_set_gpu_visible_device_list(rill_session_options *o, const char *list)
{
    snprintf(o->visible_device_list, sizeof o->visible_device_list, "%s", list ? list : "");
}

void rill_session_options_set_device_filters(rill_session_options *o, const char *const *filters,
                                             int n)
{
    o->ndevice_filters = n > 0 ? n : 0;
    o->long_device_filter = 0;
    for (int i = 0; i < n && i < RILL_MAX_DEVICE_FILTERS; i++) {
        const char *f = filters[i] ? filters[i] : "";
        if (strlen(f) >= sizeof o->device_filters[i] && !o->long_device_filter)
            o->long_device_filter = i + 1;
        snprintf(o->device_filters[i], sizeof o->device_filters[i], "%s", f);
    }
}

void rill_session_options_set_target(rill_session_options *o, const char *target)
{
    snprintf(o->target, sizeof o->target, "%s", target ? target : "");
}

static const rill__remote_ops *remote_ops;

void rill__register_remote(const rill__remote_ops *ops)
{
    remote_ops = ops;
}

typedef struct cached_plan {
    uint64_t hash;
    int64_t *key;
    int nkey;
    rill__plan *plan;
    rill__xgraph xg;
    struct cached_plan *next;
} cached_plan;

#define NBUCKETS 64

struct rill_session {
    rill_graph *graph;
    rill_session_options opts;
    pthread_mutex_t mu;
    cached_plan *buckets[NBUCKETS];
    int nplans;
    rill__resource_mgr *rm;
    rill__node_states *states;
    rill__threadpool *inter;
    rill__threadpool *intra; /* the process's default pool, or the session's own */
    bool own_intra;
    rill__device *const *devs;
    int ndevs;
    rill__placement placement;
    bool own_rm;
    void *remote;       /* a session on a server's target: the distributed master runs it */
    atomic_uint cancel; /* bumped by rill_session_cancel */
};

/* --- the function runner kernels use (kernels/kernel.h): a one-thread session on the body's
 * graph sharing the caller's resource manager --- */
static void *function_open(rill_graph *g, rill__resource_mgr *rm, rill_status *s)
{
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_inter_op_threads(o, 1);
    rill_session_options_set_intra_op_threads(o, 1);
    rill_session *sess = rill__session_new_with_rm(g, o, rm, s);
    rill_session_options_free(o);
    return sess;
}

static rill_code function_run(void *h, double deadline, int64_t timeout_ms, const rill_output *args,
                              rill_tensor *const *in, int nin, const rill_output *outs,
                              rill_tensor **out, int nout, rill_status *s)
{
    rill__deadline d = {deadline, timeout_ms, 0, 0};
    return rill__session_run_until(h, d, args, in, nin, outs, out, nout, NULL, 0, s);
}

static void function_close(void *h)
{
    rill_session_free(h);
}

static const rill__function_runner function_runner = {function_open, function_run, function_close};

rill_session *rill_session_new(rill_graph *g, const rill_session_options *o, rill_status *s)
{
    return rill__session_new_with_rm(g, o, NULL, s);
}

rill_session *rill__session_new_with_rm(rill_graph *g, const rill_session_options *o,
                                        rill__resource_mgr *rm, rill_status *s)
{
    rill__function_runner_set(&function_runner);
    if (!g) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "rill_session_new: graph is NULL");
        return NULL;
    }
    if (!rill_graph_ok(g)) {
        rill_status_set(s, RILL_FAILED_PRECONDITION,
                        "The graph has a build error, so no session can run it: %s",
                        rill_status_message(rill_graph_status(g)));
        return NULL;
    }
    if (o && o->target[0]) {
        /* A session on a server: the distributed master places and runs it. */
        if (!remote_ops) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "No session factory registered for the given session options: "
                            "{target: \"%s\"} (no server of this process answers it)",
                            o->target);
            return NULL;
        }
        void *m = remote_ops->open(o->target, g, o, s);
        if (!m) return NULL;
        rill_session *sess = rill__calloc(1, sizeof *sess);
        RILL_CHECK_ALLOC(sess);
        sess->graph = g;
        sess->opts = *o;
        sess->remote = m;
        pthread_mutex_init(&sess->mu, NULL);
        return sess;
    }
    rill__device_options dopts = {0};
    if (o) {
        dopts.visible_device_list = o->visible_device_list;
        dopts.per_process_memory_fraction = o->memory_fraction;
        dopts.allow_growth = o->allow_growth;
    }
    rill__device *const *devs;
    int ndevs = rill__devices(&dopts, &devs, s);
    if (ndevs < 0) return NULL;
    if (o && o->log_device_placement) rill__log_device_mapping(devs, ndevs);
    rill_session *sess = rill__calloc(1, sizeof *sess);
    RILL_CHECK_ALLOC(sess);
    sess->devs = devs;
    sess->ndevs = ndevs;
    sess->graph = g;
    if (o) sess->opts = *o;
    pthread_mutex_init(&sess->mu, NULL);
    sess->own_rm = rm == NULL;
    sess->rm = rm ? rm : rill__resource_mgr_new();
    sess->states = rill__malloc(sizeof *sess->states);
    RILL_CHECK_ALLOC(sess->states);
    rill__node_states_init(sess->states);
    int threads = sess->opts.inter_op_threads ? sess->opts.inter_op_threads : rill__num_cores();
    /* The calling thread runs nodes too, so the pool has one thread fewer. */
    if (threads > 1) sess->inter = rill__threadpool_new(threads - 1);
    /* Intra-op: the shared pool (one thread per core) unless another count is asked for. */
    int intra = sess->opts.intra_op_threads;
    if (intra == 0 || intra == rill__num_cores()) {
        sess->intra = rill__default_pool();
    } else {
        sess->own_intra = true;
        sess->intra = intra > 1 ? rill__threadpool_new(intra - 1) : NULL;
    }
    rill_status_clear(s);
    return sess;
}

void rill_session_free(rill_session *sess)
{
    if (!sess) return;
    for (int b = 0; b < NBUCKETS; b++)
        for (cached_plan *c = sess->buckets[b]; c;) {
            cached_plan *nx = c->next;
            rill__plan_free(c->plan);
            rill__xgraph_free(&c->xg);
            rill__free(c->key);
            rill__free(c);
            c = nx;
        }
    rill__threadpool_free(sess->inter);
    if (sess->own_intra) rill__threadpool_free(sess->intra);
    if (sess->states) rill__node_states_free(sess->states);
    rill__free(sess->states);
    if (sess->own_rm) rill__resource_mgr_free(sess->rm);
    if (sess->remote) remote_ops->close(sess->remote);
    rill__placement_free(&sess->placement);
    pthread_mutex_destroy(&sess->mu);
    rill__free(sess);
}

int rill_session_num_plans(const rill_session *sess)
{
    return sess->nplans;
}

/* The key: counts and (id, index) pairs; targets by id. Written into buf (cap entries). */
static int make_key(const rill_output *feeds, int nfeeds, const rill_output *fetches, int nfetches,
                    rill_node *const *targets, int ntargets, int64_t *buf, int cap)
{
    int n = 0;
#define PUT(v)                                                                                     \
    do {                                                                                           \
        if (n < cap) buf[n] = (v);                                                                 \
        n++;                                                                                       \
    } while (0)
    PUT(nfeeds);
    for (int i = 0; i < nfeeds; i++)
        PUT(feeds[i].node ? ((int64_t)feeds[i].node->id << 20) + feeds[i].index : -1);
    PUT(nfetches);
    for (int i = 0; i < nfetches; i++)
        PUT(fetches[i].node ? ((int64_t)fetches[i].node->id << 20) + fetches[i].index : -1);
    PUT(ntargets);
    for (int i = 0; i < ntargets; i++) PUT(targets[i] ? targets[i]->id : -1);
#undef PUT
    return n;
}

static uint64_t hash_key(const int64_t *k, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) h = (h ^ (uint64_t)k[i]) * 1099511628211ull;
    return h;
}

static bool foreign(const rill_session *sess, const rill_output *o, int n)
{
    for (int i = 0; i < n; i++)
        if (o[i].node && o[i].node->graph != sess->graph) return true;
    return false;
}

rill_code rill_session_run(rill_session *sess, const rill_output *feeds,
                           rill_tensor *const *feed_values, int nfeeds, const rill_output *fetches,
                           rill_tensor **fetch_values, int nfetches, rill_node *const *targets,
                           int ntargets, rill_status *s)
{
    return rill_session_run_with_options(sess, NULL, feeds, feed_values, nfeeds, fetches,
                                         fetch_values, nfetches, targets, ntargets, s);
}

rill_code rill_session_run_with_options(rill_session *sess, const rill_run_options *options,
                                        const rill_output *feeds, rill_tensor *const *feed_values,
                                        int nfeeds, const rill_output *fetches,
                                        rill_tensor **fetch_values, int nfetches,
                                        rill_node *const *targets, int ntargets, rill_status *s)
{
    int64_t ms = options && options->timeout_ms > 0 ? options->timeout_ms
                 : sess                             ? sess->opts.operation_timeout_ms
                                                    : 0;
    rill__deadline d = {ms > 0 ? rill__now_seconds() + (double)ms / 1000.0 : 0, ms, 0, 0};
    return rill__session_run_until(sess, d, feeds, feed_values, nfeeds, fetches, fetch_values,
                                   nfetches, targets, ntargets, s);
}

static rill__plan *session_plan(rill_session *sess, const rill_output *feeds, int nfeeds,
                                const rill_output *fetches, int nfetches, rill_node *const *targets,
                                int ntargets, rill_status *s);

rill_code rill__session_run_until(rill_session *sess, rill__deadline d, const rill_output *feeds,
                                  rill_tensor *const *feed_values, int nfeeds,
                                  const rill_output *fetches, rill_tensor **fetch_values,
                                  int nfetches, rill_node *const *targets, int ntargets,
                                  rill_status *s)
{
    rill_status_clear(s);
    /* Every fetch comes back NULL unless the run succeeds, whichever check fails. */
    if (fetch_values)
        for (int i = 0; i < nfetches; i++) fetch_values[i] = NULL;
    if (!sess) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "rill_session_run: session is NULL");
        return RILL_INVALID_ARGUMENT;
    }
    if (nfeeds < 0 || nfetches < 0 || ntargets < 0 || (nfeeds && (!feeds || !feed_values)) ||
        (nfetches && (!fetches || !fetch_values)) || (ntargets && !targets)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "rill_session_run: a non-zero count was given with a NULL array");
        return RILL_INVALID_ARGUMENT;
    }
    if (nfetches + ntargets == 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Must specify at least one target to fetch or execute.");
        return RILL_INVALID_ARGUMENT;
    }
    if (foreign(sess, feeds, nfeeds) || foreign(sess, fetches, nfetches)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "A feed or fetch belongs to another graph than this session's");
        return RILL_INVALID_ARGUMENT;
    }
    if (sess->remote)
        return remote_ops->run(sess->remote, d, feeds, feed_values, nfeeds, fetches, fetch_values,
                               nfetches, targets, ntargets, s);
    rill__plan *p = session_plan(sess, feeds, nfeeds, fetches, nfetches, targets, ntargets, s);
    if (!p) return rill_status_code(s);
    return rill__plan_run(p, feed_values, fetch_values, d, s);
}

bool rill__session_run_async(rill_session *sess, rill__deadline d, const rill_output *feeds,
                             rill_tensor *const *feed_values, int nfeeds,
                             const rill_output *fetches, rill_tensor **fetch_values, int nfetches,
                             rill_node *const *targets, int ntargets, rill_status *s,
                             void (*done)(void *arg, rill_code code), void *arg)
{
    rill_status_clear(s);
    for (int i = 0; i < nfetches; i++) fetch_values[i] = NULL;
    if (sess->remote || nfetches + ntargets == 0) {
        rill_status_set(s, RILL_INTERNAL, "an asynchronous run needs a local session and work");
        return false;
    }
    rill__plan *p = session_plan(sess, feeds, nfeeds, fetches, nfetches, targets, ntargets, s);
    return p && rill__plan_run_async(p, feed_values, fetch_values, d, s, done, arg);
}

/* The plan of this (feeds, fetches, targets), made and cached on first use; NULL with s set. */
static rill__plan *session_plan(rill_session *sess, const rill_output *feeds, int nfeeds,
                                const rill_output *fetches, int nfetches, rill_node *const *targets,
                                int ntargets, rill_status *s)
{
    int64_t kbuf[64];
    int nkey = make_key(feeds, nfeeds, fetches, nfetches, targets, ntargets, kbuf, 64);
    int64_t *key = kbuf;
    if (nkey > 64) {
        key = rill__malloc((size_t)nkey * sizeof *key);
        RILL_CHECK_ALLOC(key);
        make_key(feeds, nfeeds, fetches, nfetches, targets, ntargets, key, nkey);
    }
    uint64_t h = hash_key(key, nkey);

    pthread_mutex_lock(&sess->mu);
    cached_plan *c = sess->buckets[h % NBUCKETS];
    while (c && !(c->hash == h && c->nkey == nkey &&
                  memcmp(c->key, key, (size_t)nkey * sizeof *key) == 0))
        c = c->next;
    if (!c) {
        /* Place what is new in the graph (earlier nodes keep their devices), cut the needed
         * part into partitions, and plan them. */
        rill__xgraph xg;
        rill__plan *p = NULL;
        if (rill__place(sess->graph, &sess->placement, sess->devs, sess->ndevs,
                        sess->opts.allow_soft_placement, sess->opts.log_device_placement, s) &&
            rill__partition(sess->graph, &sess->placement, NULL, feeds, nfeeds, fetches, nfetches,
                            targets, ntargets, &xg, s)) {
            rill__plan_args a = {
                .graph = xg.g,
                .feeds = xg.feeds,
                .nfeeds = xg.nfeeds,
                .fetches = xg.fetches,
                .nfetches = xg.nfetches,
                .targets = xg.targets,
                .ntargets = xg.ntargets,
                .exec_graph = true,
                .feed_names = feeds,
                .rm = sess->rm,
                .states = sess->states,
                .inter_op_pool = sess->inter,
                .intra_op_pool = sess->intra,
                .cancel = &sess->cancel,
            };
            p = rill__plan_new(&a, s);
            if (!p) rill__xgraph_free(&xg);
        }
        if (!p) {
            pthread_mutex_unlock(&sess->mu);
            if (key != kbuf) rill__free(key);
            return NULL;
        }
        c = rill__calloc(1, sizeof *c);
        RILL_CHECK_ALLOC(c);
        c->hash = h;
        c->nkey = nkey;
        c->key = rill__malloc((size_t)nkey * sizeof *key);
        RILL_CHECK_ALLOC(c->key);
        memcpy(c->key, key, (size_t)nkey * sizeof *key);
        c->plan = p;
        c->xg = xg;
        c->next = sess->buckets[h % NBUCKETS];
        sess->buckets[h % NBUCKETS] = c;
        sess->nplans++;
    }
    pthread_mutex_unlock(&sess->mu);
    if (key != kbuf) rill__free(key);
    return c->plan;
}

rill_code rill_session_run_targets(rill_session *sess, rill_node *const *targets, int n,
                                   rill_status *s)
{
    return rill_session_run(sess, NULL, NULL, 0, NULL, NULL, 0, targets, n, s);
}

rill_session *rill__session_sibling(rill_session *sess, rill_status *s)
{
    if (sess->remote) return rill_session_new(sess->graph, &sess->opts, s);
    rill_session_options o = sess->opts;
    o.log_device_placement = false;
    return rill__session_new_with_rm(sess->graph, &o, sess->rm, s);
}

void rill_session_cancel(rill_session *sess)
{
    if (!sess) return;
    atomic_fetch_add(&sess->cancel, 1);
    if (sess->remote && remote_ops->cancel) remote_ops->cancel(sess->remote);
}
