/* master.c - a session on a server's target: the master of the cluster's steps.
 *
 * The master places the user's graph over the devices of every task (its own, and those each
 * remote task reports), then for each (feeds, fetches, targets) cuts the needed nodes per task:
 * an edge between tasks becomes a fetch on the producing task and a placeholder on the
 * consuming one; a control edge between tasks makes its source a target of its own task. Each
 * remote piece is registered with its task (graph codec over the transport); the master's own
 * piece runs in a local session sharing the server's variables.
 *
 * A step is at most two round trips per remote task, and one for tasks that need nothing from
 * the master (a ps that only serves reads):
 *   1. pre:  each remote task computes what does not depend on the master (variable reads);
 *   2. the master runs its piece with those values;
 *   3. post: each remote task gets the master's tensors (gradients) and runs the rest (updates);
 *   4. tail: what of the master's piece needs values from step 3 (SyncReplicasOptimizer's
 *      token, a saver's index of the ps tasks' shards) runs last, locally.
 * Remote tasks run in levels that respect the control edges between them (an update on one ps
 * before the global step on another); the tasks of a level are called at once. A remote value that depends on the master's tail, or a
 * remote-to-remote edge whose value depends on the master, is UNIMPLEMENTED (it would need
 * another round trip). Connecting to a task that is not up yet is retried, with a log line
 * naming it every few seconds, until the server's connect deadline: then UNAVAILABLE.
 *
 * Steps run at once: the master's lock covers placement and the table of signatures (built once,
 * then only read); a step's values and deadline are its own (mstep), and each call takes a
 * connection of its own from the task's pool of idle ones (or opens one), so threads sharing a
 * session never wait for each other's steps. A step that runs past its deadline cancels this
 * master's steps on every task (the CANCEL RPC names the master, not the step).
 *
 * Servers publish their tasks here (master.h: target, job and index, cluster, variables,
 * options); the master keeps them by target, renames this process's devices for a task, and
 * never calls a server. */
#include "master.h"

#include <rill/device_name.h>

#include "graph_codec.h"
#include "rpc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A connection to a task, idle in its pool. */
typedef struct conn {
    rill__channel *ch;
    double last_used; /* when it last carried a call */
} conn;

#define POOL_MAX 16 /* idle connections kept per task; more are closed when handed back */

typedef struct task {
    char job[64];
    int index;
    char addr[256];
    bool local;
    /* Idle connections: a call takes one (or connects), so steps running at once never share
     * a connection, and hands it back when it is done. */
    pthread_mutex_t mu;
    conn idle[POOL_MAX];
    int nidle;
} task;

/* One cross-task value in a step: produced by `task` (or fed by the user), consumed elsewhere. */
typedef struct xval {
    rill_node *src;
    int idx;
    int task;      /* producer task, -1 for a user feed */
    int user_feed; /* index into the user's feeds when task == -1 */
    bool post;     /* produced in the producer's post run */
} xval;

typedef struct io {
    int n, cap;
    char **names;      /* remote runs: tensor or node names */
    rill_output *outs; /* local run: outputs */
    rill_node **nodes; /* local run targets */
    int *slot;         /* xval index (feeds/fetches) */
} io;

typedef struct piece {
    rill_graph *g;
    uint64_t handle;       /* remote */
    rill_session *sess;    /* local */
    io pre_fetch, post_feed, post_fetch, targets;
    io tail_feed, tail_fetch, tail_targets; /* local: step 4 */
    bool has_feeds;
} piece;

typedef struct sig {
    int64_t *key;
    int nkey;
    piece *pieces; /* per task */
    xval *vals;
    int nvals, capvals;
    int *user_fetch_slot; /* per user fetch */
    int *order;           /* tasks in the order their remote runs go */
    int *level;           /* per task: runs after every task of a lower level (control edges) */
    struct sig *next;
} sig;

typedef struct master {
    const rill__local_task *local_task; /* the task whose target the session named */
    rill_graph *g;
    rill_session_options opts;
    task *tasks;
    int ntasks, self;
    rill__device *devs;
    rill__device **devp;
    int *dev_task;
    int ndevs;
    rill__placement pl;
    pthread_mutex_t mu;
    sig *sigs;
    pthread_mutex_t sigs_mu; /* the list's links, for master_cancel */
    uint64_t owner;          /* this master's id on the servers (REGISTER, CANCEL) */
    /* Threads that make the calls of one level to several tasks at once: an idle one takes a
     * call, or a new one is made (never a wait for a busy one: its call may be blocked on a
     * step that needs this one to go on). */
    pthread_mutex_t pool_mu;
    pthread_cond_t pool_cv;
    struct caller *idle_callers;
    int ncallers;
    bool pool_stop;
} master;

/* One step in flight: the values crossing tasks (per xval of its signature), its deadline. Steps
 * run at once share nothing else: the master's lock covers placement and the signature table
 * only. */
typedef struct mstep {
    rill_tensor **vals;
    rill__deadline dl;
    bool timed_out; /* a call of this step ran into dl */
} mstep;

/* The tasks of this process, by target: published by their servers (rill__master_add_task). */
#define MAX_LOCAL_TASKS 16
static pthread_mutex_t tasks_mu = PTHREAD_MUTEX_INITIALIZER;
static rill__local_task *local_tasks[MAX_LOCAL_TASKS];

/* The published task answering target, or NULL. */
static const rill__local_task *lookup_task(const char *target)
{
    const rill__local_task *found = NULL;
    pthread_mutex_lock(&tasks_mu);
    for (int i = 0; i < MAX_LOCAL_TASKS && !found; i++)
        if (local_tasks[i] && strcmp(local_tasks[i]->target, target) == 0) found = local_tasks[i];
    pthread_mutex_unlock(&tasks_mu);
    return found;
}

static double now(void)
{
    return rill__now_seconds();
}

/* --- connections --- */

/* A connection to t: an idle one from its pool, or a new one (retried, with a log line naming
 * the task every few seconds, until the server's connect deadline: then UNAVAILABLE). An idle
 * one that has not talked for a while gets a heartbeat first: a peer that hung or went away
 * while nobody called it is found in seconds, not at the step deadline. */
static rill__channel *channel_get(master *m, task *t, rill_status *s)
{
    const rill_server_options *so = &m->local_task->opts;
    for (;;) {
        conn c = {0};
        pthread_mutex_lock(&t->mu);
        if (t->nidle) c = t->idle[--t->nidle];
        pthread_mutex_unlock(&t->mu);
        if (!c.ch) break;
        if (now() - c.last_used <= so->heartbeat_idle_s) return c.ch;
        double hb = so->step_deadline_s < 5 ? so->step_deadline_s : 5;
        if (rill__channel_ping(c.ch, hb, s)) return c.ch;
        rill__log(RILL_LOG_WARNING, "task /job:%s/replica:0/task:%d (%s) missed a heartbeat: %s",
                  t->job, t->index, t->addr, rill_status_message(s));
        rill_status_clear(s);
        rill__channel_close(c.ch);
    }
    rill__tcp_options o;
    rill__local_task_client_options(m->local_task, &o);
    double deadline = now() + so->connect_deadline_s, next_log = now();
    for (;;) {
        rill__channel *ch = rill__tcp_connect(t->addr, &o, 5, s);
        if (ch) return ch;
        if (rill_status_code(s) == RILL_UNAUTHENTICATED || now() >= deadline) break;
        if (now() >= next_log) {
            rill__log(RILL_LOG_INFO, "waiting for task /job:%s/replica:0/task:%d (%s): %s", t->job,
                      t->index, t->addr, rill_status_message(s));
            next_log = now() + 5;
        }
        usleep(200 * 1000);
    }
    if (rill_status_code(s) != RILL_UNAUTHENTICATED)
        rill_status_set(s, RILL_UNAVAILABLE,
                        "task /job:%s/replica:0/task:%d (%s) did not come up within %.0f s", t->job,
                        t->index, t->addr, so->connect_deadline_s);
    return NULL;
}

/* Hands ch back to t's pool after a call that worked; closes it after one that did not (the
 * next call reconnects), or when the pool is full. */
static void channel_put(task *t, rill__channel *ch, bool ok)
{
    if (!ch) return;
    pthread_mutex_lock(&t->mu);
    if (ok && t->nidle < POOL_MAX) {
        t->idle[t->nidle++] = (conn){ch, now()};
        ch = NULL;
    }
    pthread_mutex_unlock(&t->mu);
    if (ch) rill__channel_close(ch);
}

/* A call to task t within step st's deadline (st NULL: the server's step deadline only); a
 * transport failure names the task. The reply's meta lives in the channel until its next call,
 * so on success the caller holds the channel (*held) while it reads rep and then hands it back
 * with channel_put(t, *held, true): another step must not take it and overwrite the meta. */
static bool call(master *m, task *t, mstep *st, const rill__mbuf *meta, const struct iovec *iov,
                 int niov, rill__reply *rep, rill__channel **held, rill_status *s)
{
    *held = NULL;
    const rill_server_options *so = &m->local_task->opts;
    /* The step's own deadline (RunOptions, operation timeout) bounds the call too. */
    double wait = so->step_deadline_s;
    if (st && st->dl.at) {
        double left = st->dl.at - now();
        if (left <= 0) {
            rill_status_set(s, RILL_DEADLINE_EXCEEDED,
                            "Timed out waiting for notification: the step's %lld ms deadline "
                            "passed before task /job:%s/replica:0/task:%d (%s) was called",
                            (long long)st->dl.timeout_ms, t->job, t->index, t->addr);
            return false;
        }
        if (left < wait) wait = left;
    }
    rill__channel *ch = channel_get(m, t, s);
    if (!ch) return false;
    if (rill__channel_call(ch, RILL__MSG_REQUEST, meta->p, (uint32_t)meta->n, iov, niov, rep, wait,
                           s)) {
        *held = ch;
        return true;
    }
    rill_code c = rill_status_code(s);
    if (c == RILL_DEADLINE_EXCEEDED && st && st->dl.at && now() >= st->dl.at) {
        rill_status_set(s, RILL_DEADLINE_EXCEEDED,
                        "Timed out waiting for notification: the step's %lld ms deadline passed "
                        "while task /job:%s/replica:0/task:%d (%s) ran its part of the step",
                        (long long)st->dl.timeout_ms, t->job, t->index, t->addr);
        st->timed_out = true;
        channel_put(t, ch, false);
        return false;
    }
    bool transport = c == RILL_UNAVAILABLE || c == RILL_DEADLINE_EXCEEDED || c == RILL_DATA_LOSS;
    if (transport) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", rill_status_message(s));
        rill_status_set(s, c, "task /job:%s/replica:0/task:%d (%s): %s", t->job, t->index, t->addr,
                        msg);
    }
    /* An error the task answered with leaves the connection good. */
    channel_put(t, ch, !transport);
    return false;
}

static bool discover(master *m, rill_status *s)
{
    const rill_cluster_spec *c = m->local_task->cluster;
    int cap = 0;
    for (int j = 0; j < rill_cluster_spec_num_jobs(c); j++)
        cap += rill_cluster_spec_num_tasks(c, rill_cluster_spec_job_name(c, j), NULL);
    m->tasks = rill__calloc((size_t)cap + 1, sizeof *m->tasks);
    m->devs = rill__calloc((size_t)(cap + 1) * 64, sizeof *m->devs);
    m->dev_task = rill__calloc((size_t)(cap + 1) * 64, sizeof *m->dev_task);
    RILL_CHECK_ALLOC(m->tasks);
    RILL_CHECK_ALLOC(m->devs);
    RILL_CHECK_ALLOC(m->dev_task);
    for (int j = 0; j < rill_cluster_spec_num_jobs(c); j++) {
        const char *job = rill_cluster_spec_job_name(c, j);
        int nt = rill_cluster_spec_num_tasks(c, job, NULL);
        for (int i = 0; i < nt; i++) {
            task *t = &m->tasks[m->ntasks];
            snprintf(t->job, sizeof t->job, "%s", job);
            t->index = rill_cluster_spec_task_index(c, job, i);
            snprintf(t->addr, sizeof t->addr, "%s",
                     rill_cluster_spec_task_address(c, job, t->index, NULL));
            t->local = strcmp(job, m->local_task->job) == 0 && t->index == m->local_task->index;
            pthread_mutex_init(&t->mu, NULL);
            if (t->local) m->self = m->ntasks;
            m->ntasks++;
        }
    }
    for (int ti = 0; ti < m->ntasks; ti++) {
        task *t = &m->tasks[ti];
        int got;
        if (t->local) {
            got = rill__local_task_devices(m->local_task, m->devs + m->ndevs, 64, s);
            if (got < 0) return false;
        } else {
            rill__mbuf q = {0};
            rill__mbuf_u32(&q, RILL__RPC_GET_DEVICES);
            rill__reply rep = {0};
            rill__channel *ch;
            bool ok = call(m, t, NULL, &q, NULL, 0, &rep, &ch, s);
            rill__mbuf_free(&q);
            if (!ok) return false;
            rill__mread r = {.p = rep.meta, .n = rep.meta_len};
            uint32_t n = rill__mread_u32(&r);
            got = 0;
            for (uint32_t i = 0; i < n && i < 64 && !r.bad; i++) {
                char *name = rill__mread_str(&r), *type = rill__mread_str(&r),
                     *key = rill__mread_str(&r);
                if (name && type && key) {
                    rill__device *d = &m->devs[m->ndevs + got++];
                    snprintf(d->name, sizeof d->name, "%s", name);
                    snprintf(d->type, sizeof d->type, "%s", type);
                    snprintf(d->kernel_key, sizeof d->kernel_key, "%s", key);
                }
                rill__free(name);
                rill__free(type);
                rill__free(key);
            }
            channel_put(t, ch, true);
            if (rep.payload_owned) rill__aligned_free(rep.payload, rep.payload_len);
            if (r.bad) {
                rill_status_set(s, RILL_DATA_LOSS, "task /job:%s/task:%d sent a bad device list",
                                t->job, t->index);
                return false;
            }
        }
        for (int k = 0; k < got; k++) m->dev_task[m->ndevs + k] = ti;
        m->ndevs += got;
    }
    m->devp = rill__calloc((size_t)m->ndevs + 1, sizeof *m->devp);
    RILL_CHECK_ALLOC(m->devp);
    for (int i = 0; i < m->ndevs; i++) m->devp[i] = &m->devs[i];
    return true;
}

static int task_of(const master *m, const rill_node *n)
{
    rill__device *d = m->pl.assigned[n->id];
    return d ? m->dev_task[d - m->devs] : m->self;
}

/* --- cutting a signature into pieces --- */

static void io_add(io *x, const char *name, rill_output out, rill_node *node, int slot)
{
    if (x->n == x->cap) {
        x->cap = x->cap ? x->cap * 2 : 8;
        x->names = rill__realloc(x->names, (size_t)x->cap * sizeof *x->names);
        x->outs = rill__realloc(x->outs, (size_t)x->cap * sizeof *x->outs);
        x->nodes = rill__realloc(x->nodes, (size_t)x->cap * sizeof *x->nodes);
        x->slot = rill__realloc(x->slot, (size_t)x->cap * sizeof *x->slot);
        RILL_CHECK_ALLOC(x->names);
        RILL_CHECK_ALLOC(x->outs);
        RILL_CHECK_ALLOC(x->nodes);
        RILL_CHECK_ALLOC(x->slot);
    }
    x->names[x->n] = rill__strdup(name ? name : "");
    x->outs[x->n] = out;
    x->nodes[x->n] = node;
    x->slot[x->n] = slot;
    x->n++;
}

static void io_free(io *x)
{
    for (int i = 0; i < x->n; i++) rill__free(x->names[i]);
    rill__free(x->names);
    rill__free(x->outs);
    rill__free(x->nodes);
    rill__free(x->slot);
}

static int val_slot(sig *sg, rill_node *src, int idx, int task, int user_feed)
{
    for (int i = 0; i < sg->nvals; i++)
        if (sg->vals[i].src == src && sg->vals[i].idx == idx) return i;
    if (sg->nvals == sg->capvals) {
        sg->capvals = sg->capvals ? sg->capvals * 2 : 16;
        sg->vals = rill__realloc(sg->vals, (size_t)sg->capvals * sizeof *sg->vals);
        RILL_CHECK_ALLOC(sg->vals);
    }
    sg->vals[sg->nvals] = (xval){src, idx, task, user_feed, false};
    return sg->nvals++;
}

static void sig_free(master *m, sig *sg)
{
    if (!sg) return;
    for (int t = 0; sg->pieces && t < m->ntasks; t++) {
        piece *p = &sg->pieces[t];
        if (p->handle) {
            /* Over an idle connection only: a task that went away is not waited for. */
            task *tk = &m->tasks[t];
            rill__channel *ch = NULL;
            pthread_mutex_lock(&tk->mu);
            if (tk->nidle) ch = tk->idle[--tk->nidle].ch;
            pthread_mutex_unlock(&tk->mu);
            if (ch) {
                rill__mbuf q = {0};
                rill__mbuf_u32(&q, RILL__RPC_DEREGISTER);
                rill__mbuf_u64(&q, p->handle);
                rill__reply rep = {0};
                rill_status *s = rill_status_new();
                bool ok = rill__channel_call(ch, RILL__MSG_REQUEST, q.p, (uint32_t)q.n, NULL, 0,
                                             &rep, 5, s);
                if (rep.payload_owned) rill__aligned_free(rep.payload, rep.payload_len);
                rill_status_free(s);
                rill__mbuf_free(&q);
                channel_put(tk, ch, ok);
            }
        }
        rill_session_free(p->sess);
        rill_graph_free(p->g);
        io_free(&p->pre_fetch);
        io_free(&p->post_feed);
        io_free(&p->post_fetch);
        io_free(&p->targets);
        io_free(&p->tail_feed);
        io_free(&p->tail_fetch);
        io_free(&p->tail_targets);
    }
    rill__free(sg->order);
    rill__free(sg->level);
    rill__free(sg->vals);
    rill__free(sg->pieces);
    rill__free(sg->user_fetch_slot);
    rill__free(sg->key);
    rill__free(sg);
}

static char *out_name(const rill_node *n, int idx)
{
    return rill__asprintf("%s:%d", n->name, idx);
}

/* Moves what of the master's piece needs a remote post value to step 4 (the tail): the
 * placeholders of post values and everything after them. Values the tail needs from the rest
 * of the piece are fetched in step 2 and fed in step 4 (bridges), so nothing runs twice; a
 * control edge into the tail from the rest is met by running its source in step 2. */
static bool split_tail(master *m, sig *sg, rill_status *s)
{
    piece *lp = &sg->pieces[m->self];
    int ln = rill_graph_num_nodes(lp->g);
    char *tail = rill__calloc((size_t)ln + 1, 1);
    RILL_CHECK_ALLOC(tail);
    bool any = false;
    for (int k = 0; k < lp->post_feed.n; k++) {
        xval *v = &sg->vals[lp->post_feed.slot[k]];
        if (v->task >= 0 && v->task != m->self && v->post)
            tail[lp->post_feed.outs[k].node->id] = 1, any = true;
    }
    for (bool changed = any; changed;) { /* control edges may point forward: to a fixpoint */
        changed = false;
        for (int i = 0; i < ln; i++) {
            rill_node *n = rill_graph_node(lp->g, i);
            if (tail[i]) continue;
            for (int k = 0; k < n->ninputs && !tail[i]; k++) tail[i] = tail[n->inputs[k].node->id];
            for (int k = 0; k < n->ncontrol && !tail[i]; k++)
                tail[i] = tail[n->control_inputs[k]->id];
            changed |= tail[i];
        }
    }
    if (!any) {
        rill__free(tail);
        return true;
    }
    /* Feeds: post values go to the tail; other placeholders that the tail reads go to both. */
    io keep = {0};
    for (int k = 0; k < lp->post_feed.n; k++) {
        rill_node *ph = lp->post_feed.outs[k].node;
        bool tail_reads = tail[ph->id];
        for (int i = 0; i < ln && !tail_reads; i++) {
            rill_node *n = rill_graph_node(lp->g, i);
            for (int j = 0; tail[i] && j < n->ninputs; j++)
                if (n->inputs[j].node == ph) tail_reads = true;
        }
        if (tail_reads) io_add(&lp->tail_feed, NULL, lp->post_feed.outs[k], NULL, lp->post_feed.slot[k]);
        if (!tail[ph->id]) io_add(&keep, NULL, lp->post_feed.outs[k], NULL, lp->post_feed.slot[k]);
    }
    io_free(&lp->post_feed);
    lp->post_feed = keep;
    /* Fetches and targets of tail nodes move to step 4. */
    io fk = {0}, tk = {0};
    for (int k = 0; k < lp->post_fetch.n; k++) {
        io *to = tail[lp->post_fetch.outs[k].node->id] ? &lp->tail_fetch : &fk;
        io_add(to, NULL, lp->post_fetch.outs[k], NULL, lp->post_fetch.slot[k]);
    }
    for (int k = 0; k < lp->targets.n; k++) {
        io *to = tail[lp->targets.nodes[k]->id] ? &lp->tail_targets : &tk;
        io_add(to, lp->targets.names[k], (rill_output){NULL, 0}, lp->targets.nodes[k], -1);
    }
    io_free(&lp->post_fetch);
    io_free(&lp->targets);
    lp->post_fetch = fk;
    lp->targets = tk;
    /* Bridges and control sources. */
    for (int i = 0; i < ln; i++) {
        rill_node *n = rill_graph_node(lp->g, i);
        if (!tail[i]) continue;
        for (int k = 0; k < n->ninputs; k++) {
            rill_output in = n->inputs[k];
            bool ref = n->op->ref_inputs & (1u << k);
            if (tail[in.node->id] || ref || strcmp(in.node->op->name, "VariableV2") == 0 ||
                strcmp(in.node->op->name, "Placeholder") == 0)
                continue;
            int before = sg->nvals;
            int slot = val_slot(sg, in.node, in.index, m->self, -1);
            if (slot < before) continue;
            io_add(&lp->post_fetch, NULL, in, NULL, slot);
            io_add(&lp->tail_feed, NULL, in, NULL, slot);
        }
        int kept = 0;
        for (int k = 0; k < n->ncontrol; k++) {
            rill_node *c = n->control_inputs[k];
            if (tail[c->id]) n->control_inputs[kept++] = c;
            else io_add(&lp->targets, c->name, (rill_output){NULL, 0}, c, -1);
        }
        n->ncontrol = kept;
    }
    /* A remote task needing a tail value would need another round trip. */
    for (int k = 0; k < lp->tail_fetch.n; k++) {
        int slot = lp->tail_fetch.slot[k];
        for (int t = 0; t < m->ntasks; t++) {
            if (t == m->self) continue;
            for (int j = 0; j < sg->pieces[t].post_feed.n; j++) {
                if (sg->pieces[t].post_feed.slot[j] != slot) continue;
                rill_status_set(s, RILL_UNIMPLEMENTED,
                                "'%s:%d' needs values from the ps tasks' updates and is needed by "
                                "/job:%s/task:%d in the same step: rill runs at most two round "
                                "trips per task and step",
                                sg->vals[slot].src->name, sg->vals[slot].idx, m->tasks[t].job,
                                m->tasks[t].index);
                rill__free(tail);
                return false;
            }
        }
    }
    rill__free(tail);
    return true;
}

/* The order of the remote runs: a task whose nodes others depend on through control edges
 * goes first (Kahn's algorithm over tasks; ties and cycles in task order). */
static bool order_tasks(master *m, sig *sg, const char *need, rill_status *s)
{
    (void)s;
    int nt = m->ntasks, nn = rill_graph_num_nodes(m->g);
    char *edge = rill__calloc((size_t)nt * (size_t)nt + 1, 1);
    int *indeg = rill__calloc((size_t)nt + 1, sizeof *indeg);
    sg->order = rill__calloc((size_t)nt + 1, sizeof *sg->order);
    char *done = rill__calloc((size_t)nt + 1, 1);
    RILL_CHECK_ALLOC(edge);
    RILL_CHECK_ALLOC(indeg);
    RILL_CHECK_ALLOC(sg->order);
    RILL_CHECK_ALLOC(done);
    for (int i = 0; i < nn; i++) {
        if (!need[i]) continue;
        rill_node *n = rill_graph_node(m->g, i);
        int to = task_of(m, n);
        for (int k = 0; k < n->ncontrol; k++) {
            int from = task_of(m, n->control_inputs[k]);
            if (from == to || from == m->self || to == m->self || edge[from * nt + to]) continue;
            edge[from * nt + to] = 1;
            indeg[to]++;
        }
    }
    sg->level = rill__calloc((size_t)nt + 1, sizeof *sg->level);
    RILL_CHECK_ALLOC(sg->level);
    for (int k = 0; k < nt; k++) {
        int pick = -1;
        for (int t = 0; t < nt && pick < 0; t++)
            if (!done[t] && indeg[t] == 0) pick = t;
        for (int t = 0; t < nt && pick < 0; t++) /* a cycle: task order */
            if (!done[t]) pick = t;
        done[pick] = 1;
        sg->order[k] = pick;
        for (int t = 0; t < nt; t++)
            if (edge[pick * nt + t]) {
                indeg[t]--;
                /* t runs after pick: a level above it (a cycle keeps t where it is) */
                if (!done[t] && sg->level[t] <= sg->level[pick]) sg->level[t] = sg->level[pick] + 1;
            }
    }
    rill__free(edge);
    rill__free(indeg);
    rill__free(done);
    return true;
}

/* Builds the pieces of one signature. */
static sig *build_sig(master *m, const rill_output *feeds, int nfeeds, const rill_output *fetches,
                      int nfetches, rill_node *const *targets, int ntargets, rill_status *s)
{
    rill_graph *g = m->g;
    int nn = rill_graph_num_nodes(g);
    sig *sg = rill__calloc(1, sizeof *sg);
    RILL_CHECK_ALLOC(sg);
    sg->pieces = rill__calloc((size_t)m->ntasks, sizeof *sg->pieces);
    sg->user_fetch_slot = rill__calloc((size_t)nfetches + 1, sizeof *sg->user_fetch_slot);
    char *need = rill__calloc((size_t)nn + 1, 1);
    int *stack = rill__malloc(((size_t)nn + 1) * sizeof *stack);
    int *fed = rill__malloc(((size_t)nn + 1) * 8 * sizeof *fed); /* feed index per (node, out<8) */
    rill_node **clone = rill__calloc((size_t)nn + 1, sizeof *clone);
    RILL_CHECK_ALLOC(sg->pieces);
    RILL_CHECK_ALLOC(need);
    RILL_CHECK_ALLOC(stack);
    RILL_CHECK_ALLOC(fed);
    RILL_CHECK_ALLOC(clone);
    for (int i = 0; i < nn * 8; i++) fed[i] = -1;
    for (int t = 0; t < m->ntasks; t++) sg->pieces[t].g = rill_graph_new();
    bool ok = false;
    for (int i = 0; i < nfeeds; i++) {
        if (!feeds[i].node || feeds[i].node->graph != g || feeds[i].index >= 8) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "Feed %d is not an output of this graph", i);
            goto out;
        }
        fed[feeds[i].node->id * 8 + feeds[i].index] = i;
    }
    /* What is needed. */
    int ns = 0;
    for (int i = 0; i < nfetches; i++) {
        if (!fetches[i].node || fetches[i].node->graph != g) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "Fetch %d is not an output of this graph", i);
            goto out;
        }
        if (fed[fetches[i].node->id * 8 + fetches[i].index] < 0 && !need[fetches[i].node->id])
            need[fetches[i].node->id] = 1, stack[ns++] = fetches[i].node->id;
    }
    for (int i = 0; i < ntargets; i++) {
        if (!targets[i] || targets[i]->graph != g) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "Target %d is not a node of this graph", i);
            goto out;
        }
        if (!need[targets[i]->id]) need[targets[i]->id] = 1, stack[ns++] = targets[i]->id;
    }
    while (ns) {
        rill_node *n = rill_graph_node(g, stack[--ns]);
        for (int k = 0; k < n->ninputs; k++) {
            rill_output in = n->inputs[k];
            bool ref = n->op->ref_inputs & (1u << k);
            if (!ref && in.index < 8 && fed[in.node->id * 8 + in.index] >= 0) continue;
            if (!need[in.node->id]) need[in.node->id] = 1, stack[ns++] = in.node->id;
        }
        for (int k = 0; k < n->ncontrol; k++)
            if (!need[n->control_inputs[k]->id])
                need[n->control_inputs[k]->id] = 1, stack[ns++] = n->control_inputs[k]->id;
    }
    /* Clone per task; cross-task inputs become placeholders fed by the master. */
    for (int i = 0; i < nn; i++) {
        if (!need[i]) continue;
        rill_node *n = rill_graph_node(g, i);
        int t = task_of(m, n);
        piece *p = &sg->pieces[t];
        rill_output ins[64];
        if (n->ninputs > 64) {
            rill_status_set(s, RILL_UNIMPLEMENTED, "node '%s' has more than 64 inputs", n->name);
            goto out;
        }
        for (int k = 0; k < n->ninputs; k++) {
            rill_output in = n->inputs[k];
            int fi = in.index < 8 ? fed[in.node->id * 8 + in.index] : -1;
            bool ref = n->op->ref_inputs & (1u << k);
            int src_task = fi >= 0 && !ref ? -1 : task_of(m, in.node);
            if (src_task == t) {
                ins[k] = (rill_output){clone[in.node->id], in.index};
                continue;
            }
            /* A value from elsewhere: a placeholder here, named after what it carries. */
            char *pname = rill__asprintf("_recv/%s/%d/", in.node->name, in.index);
            char *exact_name = rill__strndup(pname, strlen(pname) - 1);
            rill_node *ph = rill_graph_find_node(p->g, exact_name);
            rill__free(exact_name);
            if (!ph) {
                rill_shape sh = in.node->out_shapes[in.index];
                rill__attr a[] = {RILL__A_TYPE("dtype", in.node->out_dtypes[in.index]),
                                  RILL__A_SHAPE("shape", sh)};
                ph = rill__node_create(p->g, "Placeholder", pname, NULL, 0, a, 2);
                if (!ph) {
                    rill__free(pname);
                    rill_status_copy(s, rill_graph_status(p->g));
                    goto out;
                }
                rill__free(ph->requested_device);
                ph->requested_device = rill__strdup("/device:CPU:0");
                int slot = val_slot(sg, in.node, in.index, src_task, fi);
                p->has_feeds = true;
                if (t == m->self)
                    io_add(&p->post_feed, NULL, (rill_output){ph, 0}, NULL, slot);
                else
                    io_add(&p->post_feed, ph->name, (rill_output){NULL, 0}, NULL, slot);
                /* The producer hands the value over. */
                if (src_task >= 0) {
                    piece *pp = &sg->pieces[src_task];
                    char *on = out_name(in.node, in.index);
                    if (src_task == m->self)
                        io_add(&pp->post_fetch, NULL, (rill_output){NULL, 0}, in.node, slot);
                    else
                        io_add(&pp->pre_fetch, on, (rill_output){NULL, 0}, NULL, slot);
                    rill__free(on);
                }
            }
            rill__free(pname);
            ins[k] = (rill_output){ph, 0};
        }
        char exact[512];
        snprintf(exact, sizeof exact, "%s/", n->name);
        rill__attr attrs[64];
        for (int k = 0; k < n->nattrs && k < 64; k++) attrs[k] = n->attrs[k];
        rill_node *c = rill__node_create(p->g, n->op->name, exact, ins, n->ninputs, attrs,
                                         n->nattrs < 64 ? n->nattrs : 64);
        if (!c) {
            rill_status_copy(s, rill_graph_status(p->g));
            goto out;
        }
        c->seed = n->seed;
        c->seed2 = n->seed2;
        char spec[128];
        rill__local_device_spec(m->pl.assigned[i]->name, spec, sizeof spec);
        rill__free(c->requested_device);
        c->requested_device = rill__strdup(spec);
        clone[i] = c;
    }
    /* Control edges: within a task as edges; across tasks the source becomes a target. */
    for (int i = 0; i < nn; i++) {
        if (!need[i]) continue;
        rill_node *n = rill_graph_node(g, i);
        for (int k = 0; k < n->ncontrol; k++) {
            rill_node *c = n->control_inputs[k];
            if (!clone[c->id]) continue;
            if (task_of(m, c) == task_of(m, n)) {
                rill_node_add_control_input(clone[i], clone[c->id]);
            } else {
                piece *pp = &sg->pieces[task_of(m, c)];
                io_add(&pp->targets, c->name, (rill_output){NULL, 0}, clone[c->id], -1);
            }
        }
    }
    for (int i = 0; i < ntargets; i++) {
        piece *pp = &sg->pieces[task_of(m, targets[i])];
        io_add(&pp->targets, targets[i]->name, (rill_output){NULL, 0}, clone[targets[i]->id], -1);
    }
    /* User fetches. */
    for (int i = 0; i < nfetches; i++) {
        rill_output f = fetches[i];
        int fi = f.index < 8 ? fed[f.node->id * 8 + f.index] : -1;
        if (fi >= 0) {
            sg->user_fetch_slot[i] = val_slot(sg, f.node, f.index, -1, fi);
            continue;
        }
        int t = task_of(m, f.node);
        int before = sg->nvals;
        int slot = val_slot(sg, f.node, f.index, t, -1);
        sg->user_fetch_slot[i] = slot;
        if (slot < before) continue; /* already handed over */
        piece *pp = &sg->pieces[t];
        if (t == m->self) {
            io_add(&pp->post_fetch, NULL, (rill_output){NULL, 0}, f.node, slot);
        } else {
            char *on = out_name(f.node, f.index);
            io_add(&pp->pre_fetch, on, (rill_output){NULL, 0}, NULL, slot);
            rill__free(on);
        }
    }
    /* Local fetches name clones; remote fetches that depend on a placeholder move to post. */
    for (int t = 0; t < m->ntasks; t++) {
        piece *p = &sg->pieces[t];
        if (!rill_graph_ok(p->g)) {
            rill_status_copy(s, rill_graph_status(p->g));
            goto out;
        }
        if (t == m->self) {
            for (int k = 0; k < p->post_fetch.n; k++) {
                xval *v = &sg->vals[p->post_fetch.slot[k]];
                p->post_fetch.outs[k] = (rill_output){clone[v->src->id], v->idx};
            }
            continue;
        }
        int pn = rill_graph_num_nodes(p->g);
        char *dep = rill__calloc((size_t)pn + 1, 1);
        RILL_CHECK_ALLOC(dep);
        for (int i = 0; i < pn; i++) {
            rill_node *n = rill_graph_node(p->g, i);
            if (strncmp(n->name, "_recv/", 6) == 0) dep[i] = 1;
            for (int k = 0; k < n->ninputs && !dep[i]; k++) dep[i] = dep[n->inputs[k].node->id];
        }
        for (int i = 0; i < pn; i++) { /* control edges may point forward: iterate to a fixpoint */
            rill_node *n = rill_graph_node(p->g, i);
            for (int k = 0; k < n->ncontrol && !dep[i]; k++) dep[i] = dep[n->control_inputs[k]->id];
        }
        for (int k = 0; k < p->pre_fetch.n;) {
            xval *v = &sg->vals[p->pre_fetch.slot[k]];
            if (!dep[clone[v->src->id]->id]) {
                k++;
                continue;
            }
            v->post = true;
            io_add(&p->post_fetch, p->pre_fetch.names[k], (rill_output){NULL, 0}, NULL, p->pre_fetch.slot[k]);
            rill__free(p->pre_fetch.names[k]);
            p->pre_fetch.n--;
            p->pre_fetch.names[k] = p->pre_fetch.names[p->pre_fetch.n];
            p->pre_fetch.slot[k] = p->pre_fetch.slot[p->pre_fetch.n];
        }
        rill__free(dep);
    }
    /* A value made in a post run that anyone but the user needs would need a third trip. */
    for (int t = 0; t < m->ntasks; t++) {
        piece *p = &sg->pieces[t];
        for (int k = 0; k < p->post_feed.n; k++) {
            xval *v = &sg->vals[p->post_feed.slot[k]];
            if (t != m->self && v->task >= 0 && v->task != m->self && v->post) {
                rill_status_set(s, RILL_UNIMPLEMENTED,
                                "'%s:%d' on /job:%s/task:%d depends on this task's values and is "
                                "needed by /job:%s/task:%d in the same step: rill runs at most "
                                "two round trips per task and step",
                                v->src->name, v->idx, m->tasks[v->task].job, m->tasks[v->task].index,
                                m->tasks[t].job, m->tasks[t].index);
                goto out;
            }
        }
    }
    if (!split_tail(m, sg, s) || !order_tasks(m, sg, need, s)) goto out;
    /* Register the remote pieces; make the local one's session. */
    for (int t = 0; t < m->ntasks; t++) {
        piece *p = &sg->pieces[t];
        if (t == m->self) {
            rill_session_options o = m->opts;
            o.target[0] = 0;
            o.log_device_placement = false; /* the master logged the cluster's placement */
            p->sess = rill__session_new_with_rm(p->g, &o, m->local_task->rm, s);
            if (!p->sess) goto out;
            continue;
        }
        if (rill_graph_num_nodes(p->g) == 0) continue;
        uint8_t *bytes;
        size_t len;
        if (!rill__graph_encode(p->g, &bytes, &len, s)) goto out;
        rill__mbuf q = {0};
        rill__mbuf_u32(&q, RILL__RPC_REGISTER);
        rill__mbuf_u64(&q, m->owner);
        struct iovec iov = {bytes, len};
        rill__reply rep = {0};
        rill__channel *ch;
        bool okc = call(m, &m->tasks[t], NULL, &q, &iov, 1, &rep, &ch, s);
        rill__mbuf_free(&q);
        rill__free(bytes);
        if (!okc) goto out;
        rill__mread r = {.p = rep.meta, .n = rep.meta_len};
        p->handle = rill__mread_u64(&r);
        channel_put(&m->tasks[t], ch, true);
        if (rep.payload_owned) rill__aligned_free(rep.payload, rep.payload_len);
    }
    ok = true;
out:
    rill__free(need);
    rill__free(stack);
    rill__free(fed);
    rill__free(clone);
    if (!ok) {
        sig_free(m, sg);
        return NULL;
    }
    return sg;
}

/* --- running --- */

/* RUN on a remote task: feeds from slots, fetched values into slots. */
static bool run_remote(master *m, sig *sg, mstep *st, int t, const io *feeds, const io *fetches,
                       const io *targets, rill_status *s)
{
    rill__mbuf q = {0};
    rill__mbuf_u32(&q, RILL__RPC_RUN);
    rill__mbuf_u64(&q, sg->pieces[t].handle);
    rill__mbuf_u32(&q, feeds ? (uint32_t)feeds->n : 0);
    int nf = feeds ? feeds->n : 0;
    struct iovec iovs[16];
    rill__mbuf blob = {0};
    rill_tensor **fv = rill__calloc((size_t)nf + 1, sizeof *fv);
    RILL_CHECK_ALLOC(fv);
    bool ok = false;
    int niov = 0;
    for (int i = 0; i < nf; i++) {
        fv[i] = st->vals[feeds->slot[i]];
        rill__mbuf_str(&q, feeds->names[i]);
        if (!fv[i] || !rill__mbuf_tensor(&q, fv[i], s)) {
            if (!fv[i]) rill_status_set(s, RILL_INTERNAL, "no value for '%s'", feeds->names[i]);
            goto out;
        }
    }
    niov = rill__payload_iovecs(fv, nf, iovs, 16, &blob);
    rill__mbuf_u32(&q, fetches ? (uint32_t)fetches->n : 0);
    for (int i = 0; fetches && i < fetches->n; i++) rill__mbuf_str(&q, fetches->names[i]);
    rill__mbuf_u32(&q, targets ? (uint32_t)targets->n : 0);
    for (int i = 0; targets && i < targets->n; i++) rill__mbuf_str(&q, targets->names[i]);
    rill__reply rep = {0};
    rill__channel *ch;
    if (!call(m, &m->tasks[t], st, &q, iovs, niov, &rep, &ch, s)) goto out;
    rill__mread r = {.p = rep.meta, .n = rep.meta_len};
    uint32_t n = rill__mread_u32(&r);
    uint64_t off = 0;
    ok = !r.bad && fetches && n == (uint32_t)fetches->n;
    /* The fetched tensors are views of the reply's payload (no copy). */
    rill__buffer *pay = NULL;
    if (rep.payload_owned) {
        pay = rill__buffer_adopt(rep.payload, rep.payload_len);
        rep.payload_owned = false;
    } else if (rep.payload_len) {
        ok = false;
    }
    for (uint32_t i = 0; ok && i < n; i++) {
        rill_tensor *v = rill__mread_tensor(&r, pay, rep.payload_len, &off, s);
        if (!v) {
            ok = false;
            break;
        }
        rill_tensor_free(st->vals[fetches->slot[i]]);
        st->vals[fetches->slot[i]] = v;
    }
    /* A reply that did not parse leaves the stream in doubt: the connection is closed. */
    channel_put(&m->tasks[t], ch, ok);
    if (!ok && rill_status_ok(s))
        rill_status_set(s, RILL_DATA_LOSS, "task /job:%s/task:%d sent a malformed RUN reply",
                        m->tasks[t].job, m->tasks[t].index);
    rill__buffer_unref(pay);
out:
    rill__mbuf_free(&q);
    rill__mbuf_free(&blob);
    rill__free(fv);
    return ok;
}

/* Runs the master's piece with feeds from slots, fetched values into slots. */
static rill_code run_local(mstep *st, piece *lp, const io *feeds, const io *fetches,
                           const io *targets, rill_status *s)
{
    rill_tensor **fv = rill__calloc((size_t)feeds->n + 1, sizeof *fv);
    rill_tensor **out = rill__calloc((size_t)fetches->n + 1, sizeof *out);
    RILL_CHECK_ALLOC(fv);
    RILL_CHECK_ALLOC(out);
    for (int i = 0; i < feeds->n; i++) fv[i] = st->vals[feeds->slot[i]];
    rill_code code = rill__session_run_until(lp->sess, st->dl, feeds->outs, fv, feeds->n,
                                             fetches->outs, out, fetches->n, targets->nodes,
                                             targets->n, s);
    for (int i = 0; code == RILL_OK && i < fetches->n; i++) {
        rill_tensor_free(st->vals[fetches->slot[i]]);
        st->vals[fetches->slot[i]] = out[i];
    }
    rill__free(fv);
    rill__free(out);
    return code;
}

/* The remote runs of one phase (pre or post) of step st: level by level, the tasks of a level
 * at once (one on this thread, the others on the master's pool), so P ps tasks cost one round
 * trip's time, not P. The first failure in task order is the step's. */
typedef struct phase_job {
    master *m;
    sig *sg;
    mstep *st;
    bool post;
    int tasks[256];
    rill_status *status[256];
} phase_job;

static void run_one(phase_job *j, int k)
{
    int t = j->tasks[k];
    piece *p = &j->sg->pieces[t];
    if (!j->post) {
        bool all_now = !p->has_feeds;
        run_remote(j->m, j->sg, j->st, t, NULL, &p->pre_fetch, all_now ? &p->targets : NULL,
                   j->status[k]);
    } else {
        run_remote(j->m, j->sg, j->st, t, &p->post_feed, &p->post_fetch, &p->targets,
                   j->status[k]);
    }
}

/* A thread of the master's pool and the call it was given. */
typedef struct caller {
    struct caller *next; /* in the idle list */
    master *m;
    pthread_t th;
    pthread_cond_t cv;
    phase_job *job; /* NULL: waiting */
    int k;
    int *left; /* calls of the level still running, under pool_mu; pool_cv when it reaches 0 */
} caller;

static void *caller_main(void *arg)
{
    caller *c = arg;
    master *m = c->m;
    pthread_mutex_lock(&m->pool_mu);
    for (;;) {
        while (!c->job && !m->pool_stop) pthread_cond_wait(&c->cv, &m->pool_mu);
        if (!c->job) break;
        phase_job *j = c->job;
        int k = c->k;
        pthread_mutex_unlock(&m->pool_mu);
        run_one(j, k);
        pthread_mutex_lock(&m->pool_mu);
        c->job = NULL;
        if (--*c->left == 0) pthread_cond_broadcast(&m->pool_cv);
        c->next = m->idle_callers;
        m->idle_callers = c;
    }
    pthread_mutex_unlock(&m->pool_mu);
    return NULL;
}

/* Runs call k of j on a pool thread (under pool_mu). False when no thread could be made: the
 * caller then runs it itself. */
static bool dispatch(master *m, phase_job *j, int k, int *left)
{
    caller *c = m->idle_callers;
    if (c) {
        m->idle_callers = c->next;
    } else {
        c = rill__calloc(1, sizeof *c);
        RILL_CHECK_ALLOC(c);
        c->m = m;
        pthread_cond_init(&c->cv, NULL);
        if (pthread_create(&c->th, NULL, caller_main, c) != 0) {
            pthread_cond_destroy(&c->cv);
            rill__free(c);
            return false;
        }
        m->ncallers++;
    }
    c->job = j;
    c->k = k;
    c->left = left;
    pthread_cond_signal(&c->cv);
    return true;
}

/* Stops and frees the pool (every caller is idle: no step runs). */
static void pool_free(master *m)
{
    pthread_mutex_lock(&m->pool_mu);
    m->pool_stop = true;
    caller *list = m->idle_callers;
    for (caller *c = list; c; c = c->next) pthread_cond_signal(&c->cv);
    m->idle_callers = NULL;
    pthread_mutex_unlock(&m->pool_mu);
    while (list) {
        caller *nx = list->next;
        pthread_join(list->th, NULL);
        pthread_cond_destroy(&list->cv);
        rill__free(list);
        list = nx;
    }
    pthread_cond_destroy(&m->pool_cv);
    pthread_mutex_destroy(&m->pool_mu);
}

/* Whether task t has a remote run in this phase. */
static bool has_run(const master *m, const sig *sg, int t, bool post)
{
    const piece *p = &sg->pieces[t];
    if (t == m->self || !p->handle) return false;
    if (post) return p->has_feeds;
    return p->pre_fetch.n || (!p->has_feeds && p->targets.n);
}

/* RILL_MASTER_SERIAL=1: call the tasks of a level one after another, as the master did before
 * (bench/bench_ps_bandwidth.sh measures both in one run). */
static bool serial_calls(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("RILL_MASTER_SERIAL");
        v = e && *e == '1';
    }
    return v;
}

static rill_code run_phase(master *m, sig *sg, mstep *st, bool post, rill_status *s)
{
    static __thread phase_job j; /* 4 KiB: off the stack, one per thread; the task and status
                                  * slots are written before they are read, so only these are set */
    j.m = m;
    j.sg = sg;
    j.st = st;
    j.post = post;
    int top = 0;
    for (int t = 0; t < m->ntasks; t++)
        if (sg->level[t] > top) top = sg->level[t];
    for (int lv = 0; lv <= top; lv++) {
        int n = 0;
        for (int k = 0; k < m->ntasks && n < 256; k++) {
            int t = sg->order[k];
            if (sg->level[t] == lv && has_run(m, sg, t, post)) j.tasks[n++] = t;
        }
        if (n == 0) continue;
        if (serial_calls()) { /* the benchmarks' baseline: one task after another */
            for (int k = 0; k < n; k++) {
                j.status[k] = s;
                run_one(&j, k);
                if (!rill_status_ok(s)) return rill_status_code(s);
            }
            continue;
        }
        if (n == 1) {
            j.status[0] = s;
            run_one(&j, 0);
            if (!rill_status_ok(s)) return rill_status_code(s);
            continue;
        }
        for (int k = 0; k < n; k++) j.status[k] = rill_status_new();
        /* Calls 1..n-1 on the pool, call 0 here, then wait for the others. */
        int left = 0;
        pthread_mutex_lock(&m->pool_mu);
        for (int k = 1; k < n; k++) {
            left++;
            if (!dispatch(m, &j, k, &left)) {
                left--;
                pthread_mutex_unlock(&m->pool_mu);
                run_one(&j, k);
                pthread_mutex_lock(&m->pool_mu);
            }
        }
        pthread_mutex_unlock(&m->pool_mu);
        run_one(&j, 0);
        pthread_mutex_lock(&m->pool_mu);
        while (left > 0) pthread_cond_wait(&m->pool_cv, &m->pool_mu);
        pthread_mutex_unlock(&m->pool_mu);
        rill_code code = RILL_OK;
        for (int k = 0; k < n; k++) {
            if (code == RILL_OK && !rill_status_ok(j.status[k])) {
                rill_status_copy(s, j.status[k]);
                code = rill_status_code(s);
            }
            rill_status_free(j.status[k]);
        }
        if (code != RILL_OK) return code;
    }
    return RILL_OK;
}

static void master_cancel(void *mp);

static rill_code master_run(void *mp, rill__deadline dl, const rill_output *feeds,
                            rill_tensor *const *feed_values, int nfeeds,
                            const rill_output *fetches, rill_tensor **fetch_values, int nfetches,
                            rill_node *const *targets, int ntargets, rill_status *s)
{
    master *m = mp;
    pthread_mutex_lock(&m->mu);
    if (!rill__place(m->g, &m->pl, m->devp, m->ndevs, m->opts.allow_soft_placement,
                     m->opts.log_device_placement, s)) {
        pthread_mutex_unlock(&m->mu);
        return rill_status_code(s);
    }
    /* The signature key: node ids and output indices, in order. */
    int nkey = 3 + 2 * nfeeds + 2 * nfetches + ntargets;
    int64_t *key = rill__malloc((size_t)nkey * sizeof *key);
    RILL_CHECK_ALLOC(key);
    int k = 0;
    key[k++] = nfeeds;
    for (int i = 0; i < nfeeds; i++) key[k++] = feeds[i].node ? feeds[i].node->id : -1, key[k++] = feeds[i].index;
    key[k++] = nfetches;
    for (int i = 0; i < nfetches; i++) key[k++] = fetches[i].node ? fetches[i].node->id : -1, key[k++] = fetches[i].index;
    key[k++] = ntargets;
    for (int i = 0; i < ntargets; i++) key[k++] = targets[i] ? targets[i]->id : -1;
    sig *sg = m->sigs;
    while (sg && !(sg->nkey == nkey && memcmp(sg->key, key, (size_t)nkey * sizeof *key) == 0)) sg = sg->next;
    if (!sg) {
        sg = build_sig(m, feeds, nfeeds, fetches, nfetches, targets, ntargets, s);
        if (!sg) {
            rill__free(key);
            pthread_mutex_unlock(&m->mu);
            return rill_status_code(s);
        }
        sg->key = key;
        sg->nkey = nkey;
        pthread_mutex_lock(&m->sigs_mu);
        sg->next = m->sigs;
        m->sigs = sg;
        pthread_mutex_unlock(&m->sigs_mu);
    } else {
        rill__free(key);
    }
    /* The step itself runs without the lock: a signature, once built, is only read. */
    pthread_mutex_unlock(&m->mu);
    mstep step = {.dl = dl}, *st = &step;
    st->vals = rill__calloc((size_t)sg->nvals + 1, sizeof *st->vals);
    RILL_CHECK_ALLOC(st->vals);
    rill_code code = RILL_OK;
    for (int i = 0; i < sg->nvals; i++)
        if (sg->vals[i].task < 0) st->vals[i] = rill_tensor_ref(feed_values[sg->vals[i].user_feed]);
    /* 1. pre runs */
    code = run_phase(m, sg, st, false, s);
    /* 2. the master's own piece */
    piece *lp = &sg->pieces[m->self];
    if (code == RILL_OK && (lp->post_fetch.n || lp->targets.n))
        code = run_local(st, lp, &lp->post_feed, &lp->post_fetch, &lp->targets, s);
    /* 3. post runs */
    if (code == RILL_OK) code = run_phase(m, sg, st, true, s);
    /* 4. the master's tail */
    if (code == RILL_OK && (lp->tail_fetch.n || lp->tail_targets.n))
        code = run_local(st, lp, &lp->tail_feed, &lp->tail_fetch, &lp->tail_targets, s);
    for (int i = 0; i < nfetches; i++) {
        fetch_values[i] = code == RILL_OK ? rill_tensor_ref(st->vals[sg->user_fetch_slot[i]]) : NULL;
        if (code == RILL_OK && !fetch_values[i]) {
            rill_status_set(s, RILL_INTERNAL, "fetch %d was not produced", i);
            code = RILL_INTERNAL;
        }
    }
    if (code != RILL_OK)
        for (int i = 0; i < nfetches; i++) rill_tensor_free(fetch_values[i]), fetch_values[i] = NULL;
    for (int i = 0; i < sg->nvals; i++) rill_tensor_free(st->vals[i]);
    rill__free(st->vals);
    /* A task still running its part past the deadline is told to stop (TF cancels the step;
     * here every step of this master then running is cancelled with it). */
    if (st->timed_out) master_cancel(m);
    return code;
}

static void master_close(void *mp)
{
    master *m = mp;
    if (!m) return;
    for (sig *sg = m->sigs; sg;) {
        sig *nx = sg->next;
        sig_free(m, sg);
        sg = nx;
    }
    pool_free(m);
    for (int t = 0; t < m->ntasks; t++) {
        for (int i = 0; i < m->tasks[t].nidle; i++) rill__channel_close(m->tasks[t].idle[i].ch);
        pthread_mutex_destroy(&m->tasks[t].mu);
    }
    rill__placement_free(&m->pl);
    rill__free(m->tasks);
    rill__free(m->devs);
    rill__free(m->devp);
    rill__free(m->dev_task);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->sigs_mu);
    rill__free(m);
}

static void *master_open(const char *target, rill_graph *g, const rill_session_options *o,
                         rill_status *s)
{
    const rill__local_task *lt = lookup_task(target);
    if (!lt) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "No session factory registered for the given session options: {target: "
                        "\"%s\"}: no server of this process answers it",
                        target);
        return NULL;
    }
    master *m = rill__calloc(1, sizeof *m);
    RILL_CHECK_ALLOC(m);
    m->local_task = lt;
    m->g = g;
    m->opts = *o;
    m->owner = rill__random_seed() ^ (uint64_t)(uintptr_t)m;
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->sigs_mu, NULL);
    pthread_mutex_init(&m->pool_mu, NULL);
    pthread_cond_init(&m->pool_cv, NULL);
    if (!discover(m, s)) {
        master_close(m);
        return NULL;
    }
    if (o->log_device_placement) {
        rill__device *const *devs = m->devp;
        rill__log_device_mapping(devs, m->ndevs);
    }
    return m;
}

/* Cancels this master's steps on its own task and on every remote task, over connections of its
 * own (the step's thread holds the master's; this may run on any thread while it waits). */
static void master_cancel(void *mp)
{
    master *m = mp;
    /* The master's own pieces run in local sessions of their own. */
    pthread_mutex_lock(&m->sigs_mu);
    for (sig *sg = m->sigs; sg; sg = sg->next) rill_session_cancel(sg->pieces[m->self].sess);
    pthread_mutex_unlock(&m->sigs_mu);
    rill__tcp_options o;
    rill__local_task_client_options(m->local_task, &o);
    for (int t = 0; t < m->ntasks; t++) {
        if (m->tasks[t].local) continue;
        rill_status *s = rill_status_new();
        rill__channel *ch = rill__tcp_connect(m->tasks[t].addr, &o, 5, s);
        if (ch) {
            rill__mbuf q = {0};
            rill__mbuf_u32(&q, RILL__RPC_CANCEL);
            rill__mbuf_u64(&q, m->owner);
            rill__reply rep = {0};
            rill__channel_call(ch, RILL__MSG_REQUEST, q.p, (uint32_t)q.n, NULL, 0, &rep, 5, s);
            if (rep.payload_owned) rill__aligned_free(rep.payload, rep.payload_len);
            rill__mbuf_free(&q);
            rill__channel_close(ch);
        }
        rill_status_free(s);
    }
}

static const rill__remote_ops master_ops = {
    .open = master_open,
    .run = master_run,
    .close = master_close,
    .cancel = master_cancel,
};

/* --- the tasks of this process, by target --- */

void rill__master_add_task(rill__local_task *t)
{
    pthread_mutex_lock(&tasks_mu);
    for (int i = 0; i < MAX_LOCAL_TASKS; i++)
        if (!local_tasks[i]) {
            local_tasks[i] = t;
            break;
        }
    pthread_mutex_unlock(&tasks_mu);
    rill__register_remote(&master_ops);
}

void rill__master_remove_task(rill__local_task *t)
{
    pthread_mutex_lock(&tasks_mu);
    for (int i = 0; i < MAX_LOCAL_TASKS; i++)
        if (local_tasks[i] == t) local_tasks[i] = NULL;
    pthread_mutex_unlock(&tasks_mu);
}

void rill__local_task_client_options(const rill__local_task *t, rill__tcp_options *o)
{
    memset(o, 0, sizeof *o);
    if (t->opts.secret) {
        o->secret = t->opts.secret;
        o->secret_len = strlen(t->opts.secret);
    }
}

void rill__local_device_spec(const char *full, char *out, size_t len)
{
    rill_device_name n;
    if (!rill_device_name_parse(full, &n, NULL)) {
        snprintf(out, len, "%s", "");
        return;
    }
    n.has_job = n.has_replica = n.has_task = false;
    rill_device_name_str(&n, out, len);
}

int rill__local_task_devices(const rill__local_task *t, rill__device *out, int cap,
                             rill_status *s)
{
    rill__device *const *devs;
    int n = rill__devices(NULL, &devs, s);
    if (n < 0) return -1;
    int k = 0;
    for (int i = 0; i < n && k < cap; i++, k++) {
        out[k] = (rill__device){0};
        snprintf(out[k].name, sizeof out[k].name, "/job:%s/replica:0/task:%d/device:%s:%d",
                 t->job, t->index, devs[i]->type, devs[i]->id);
        snprintf(out[k].type, sizeof out[k].type, "%s", devs[i]->type);
        snprintf(out[k].kernel_key, sizeof out[k].kernel_key, "%s", devs[i]->kernel_key);
        out[k].id = devs[i]->id;
    }
    return k;
}
