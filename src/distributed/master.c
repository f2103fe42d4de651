/* master.c - a session on a server's target: the master of the cluster's steps.
 *
 * The master places the user's graph over the devices of every task (its own, and those each
 * remote task reports), moves free ops (NoOp, Const) to the task where all their consumers are
 * (settle_free_ops), and for each (feeds, fetches, targets) has the partitioner cut the needed
 * nodes per device, with a _RemoteSend/_RemoteRecv pair on every edge between tasks (a control
 * edge crosses as a pushed empty tensor). Each task's nodes are its part: the remote parts are
 * registered with their tasks once (graph codec over the transport), the master's own part runs
 * in a local session sharing the server's variables. A fetch that a remote task computes and
 * nothing of the master's part needs comes back in that task's RUN reply.
 *
 * A step is one RUN to every task with work, written one after another from the step's thread
 * without waiting (the step id keeps concurrent steps apart); the master's part runs on that
 * thread meanwhile, and the step is done when every task has answered (the replies are read on
 * that thread too). Tensors between tasks are pushed by their producers into the consumers'
 * rendezvous (rendezvous.c). While the master's part waits for a tensor, it reads the replies
 * that came every 50 ms, so a task that failed or went away aborts the step at once; a failed
 * step is aborted on every task (ABORT), and its first real error in task order is the step's.
 * Connecting to a task that is not up yet is retried, with a log line naming it every few
 * seconds, until the server's connect deadline: then UNAVAILABLE.
 *
 * Steps run at once: the master's lock covers placement and the table of signatures (built once,
 * then only read); a step's values and deadline are its own, and each RUN takes a connection of
 * its own from the task's pool of idle ones (or opens one) and holds it until its reply is read.
 * A step that runs past its deadline cancels this master's steps on every task (the CANCEL RPC
 * names the master, not the step).
 *
 * Servers publish their tasks here (master.h: target, job and index, cluster, variables,
 * options); the master keeps them by target, renames this process's devices for a task, and
 * never calls a server. */
#include "master.h"

#include <rill/device_name.h>

#include "graph_codec.h"
#include "rpc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* One task's part of a signature: its partition of the cut, registered with it (remote) or run
 * in a local session sharing the server's variables (the master's own task). */
typedef struct piece {
    rill_graph *g;
    uint64_t handle;      /* remote */
    rill_session *sess;   /* the master's task */
    rill_node **targets;  /* what it runs (a remote RUN names them) */
    int ntargets;
    char **fetch_names;   /* remote: the user's fetches its reply carries ("node:index") */
    int *fetch_pos;       /* where each goes among the user's fetches */
    int nfetch;
    bool work;            /* it has something to run */
} piece;

/* A (feeds, fetches, targets) signature: the cut per task, and where the user's feeds enter and
 * fetches leave the master's piece. Built once, then only read. */
typedef struct sig {
    int64_t *key;
    int nkey;
    piece *pieces; /* per task */
    rill_output *feeds, *fetches; /* the master's piece's */
    int nfeeds, nfetches;
    int *fetch_pos; /* where each of the piece's fetches goes among the user's */
    struct sig *next;
} sig;

typedef struct master {
    rill__client *client; /* a session on another process's server: all the rest is unused */
    rill__local_task *local_task; /* the task whose target the session named */
    rill_graph *g;
    rill_session_options opts;
    task *tasks;
    int ntasks, self;
    rill__device *devs;
    rill__device **devp;
    int *dev_task;
    int ndevs;
    rill__placement pl;
    int settled; /* nodes [0, settled) had their free ops settled (settle_free_ops) */
    pthread_mutex_t mu;
    sig *sigs;
    pthread_mutex_t sigs_mu; /* the list's links, for master_cancel */
    uint64_t owner;          /* this master's id on the servers (REGISTER, CANCEL, steps) */
    rill__rendezvous *rv;    /* its task's, where its own piece's tensors arrive */
    atomic_uint_fast64_t next_step;
} master;

/* The tasks of this process, by target: published by their servers (rill__master_add_task). */
#define MAX_LOCAL_TASKS 16
static pthread_mutex_t tasks_mu = PTHREAD_MUTEX_INITIALIZER;
static rill__local_task *local_tasks[MAX_LOCAL_TASKS];

const char *rill__target_address(const char *target)
{
    if (strncmp(target, "grpc://", 7) == 0 || strncmp(target, "rill://", 7) == 0)
        return target[7] ? target + 7 : NULL;
    return NULL;
}

/* The published task answering target ("grpc://" names a task as "rill://" does), or NULL. */
static rill__local_task *lookup_task(const char *target)
{
    rill__local_task *found = NULL;
    const char *addr = rill__target_address(target);
    pthread_mutex_lock(&tasks_mu);
    for (int i = 0; i < MAX_LOCAL_TASKS && !found; i++) {
        rill__local_task *t = local_tasks[i];
        if (!t) continue;
        const char *own = rill__target_address(t->target);
        if (strcmp(t->target, target) == 0 || (addr && own && strcmp(own, addr) == 0))
            found = t;
    }
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
typedef struct task_dial {
    master *m;
    task *t;
} task_dial;

static rill__channel *dial_task(void *arg, double attempt_s, rill_status *s)
{
    task_dial *d = arg;
    return rill__local_task_connect(d->m->local_task, d->t->addr, attempt_s, s);
}

rill__channel *rill__connect_retrying(const char *what, double deadline_s, rill__dial_fn dial,
                                      void *arg, rill_status *s)
{
    double deadline = now() + deadline_s, next_log = now();
    double attempt = deadline_s < 5 ? deadline_s : 5;
    for (;;) {
        rill__channel *ch = dial(arg, attempt, s);
        if (ch) return ch;
        /* Refused for who the caller is (secret, cluster, run) is final; down or full is not. */
        rill_code code = rill_status_code(s);
        bool transient = code == RILL_UNAVAILABLE || code == RILL_DEADLINE_EXCEEDED ||
                         code == RILL_RESOURCE_EXHAUSTED;
        if (!transient) return NULL;
        if (now() >= deadline) break;
        if (now() >= next_log) {
            rill__log(RILL_LOG_INFO, "waiting for %s: %s", what, rill_status_message(s));
            next_log = now() + 5;
        }
        usleep(200 * 1000);
    }
    char why[1024]; /* the last attempt's error: refused, full, no route... */
    snprintf(why, sizeof why, "%s", rill_status_message(s));
    rill_status_set(s, RILL_UNAVAILABLE, "%s did not come up within %g s: %s", what, deadline_s,
                    why);
    return NULL;
}

static rill__channel *channel_get(master *m, task *t, rill_status *s)
{
    const rill_server_options *so = &m->local_task->opts;
    for (;;) {
        conn c = {0};
        pthread_mutex_lock(&t->mu);
        if (t->nidle) c = t->idle[--t->nidle];
        pthread_mutex_unlock(&t->mu);
        if (!c.ch) break;
        /* Between calls nothing comes on a pooled connection but its peer's close: the task
         * crashed or was restarted since the last call, and its state with it. The step fails
         * at once, naming it (as a call on it would have); the next one connects anew. */
        if (rill__channel_readable(c.ch, 0)) {
            rill__channel_close(c.ch);
            rill_status_set(s, RILL_UNAVAILABLE,
                            "task /job:%s/replica:0/task:%d (%s) closed its connection since the "
                            "last call: it crashed or was restarted",
                            t->job, t->index, t->addr);
            return NULL;
        }
        if (now() - c.last_used > RILL__TCP_POOL_IDLE_S) { /* the server may close it soon */
            rill__channel_close(c.ch);
            continue;
        }
        if (now() - c.last_used <= so->heartbeat_idle_s) return c.ch;
        double hb = so->step_deadline_s < 5 ? so->step_deadline_s : 5;
        if (rill__channel_ping(c.ch, hb, s)) return c.ch;
        rill__log(RILL_LOG_WARNING, "task /job:%s/replica:0/task:%d (%s) missed a heartbeat: %s",
                  t->job, t->index, t->addr, rill_status_message(s));
        rill_status_clear(s);
        rill__channel_close(c.ch);
    }
    char what[400];
    snprintf(what, sizeof what, "task /job:%s/replica:0/task:%d (%s)", t->job, t->index, t->addr);
    task_dial d = {m, t};
    return rill__connect_retrying(what, so->connect_deadline_s, dial_task, &d, s);
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

/* A transport failure's message, prefixed with the task it talked to. */
static void status_name_task(rill_status *s, const task *t)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", rill_status_message(s));
    rill_status_set(s, rill_status_code(s), "task /job:%s/replica:0/task:%d (%s): %s", t->job,
                    t->index, t->addr, msg);
}

/* A call to task t (outside steps: devices, registration) within the server's step deadline;
 * a transport failure names the task. The reply's meta lives in the channel until its next
 * call, so on success the caller holds the channel (*held) while it reads rep and then hands it
 * back with channel_put(t, *held, true): another step must not take it and overwrite the meta. */
static bool call(master *m, task *t, const rill__mbuf *meta, const struct iovec *iov, int niov,
                 rill__reply *rep, rill__channel **held, rill_status *s)
{
    *held = NULL;
    rill__channel *ch = channel_get(m, t, s);
    if (!ch) return false;
    if (rill__channel_call(ch, RILL__MSG_REQUEST, meta->p, (uint32_t)meta->n, iov, niov, rep,
                           m->local_task->opts.step_deadline_s, s)) {
        *held = ch;
        return true;
    }
    rill_code c = rill_status_code(s);
    bool transport = c == RILL_UNAVAILABLE || c == RILL_DEADLINE_EXCEEDED || c == RILL_DATA_LOSS;
    if (transport) status_name_task(s, t);
    /* An error the task answered with leaves the connection good. */
    channel_put(t, ch, !transport);
    return false;
}

/* ConfigProto.device_filters: whether a filter could match a device of task t (its job, replica
 * 0, its index), and whether device d passes them (no filters: everything passes). */
static bool filters_allow_task(const master *m, const task *t)
{
    const rill_session_options *o = &m->opts;
    if (o->ndevice_filters == 0 || t->local) return true;
    for (int i = 0; i < o->ndevice_filters; i++) {
        rill_device_name f;
        rill_device_name_parse(o->device_filters[i], &f, NULL); /* checked in master_open */
        if ((!f.has_job || strcmp(f.job, t->job) == 0) && (!f.has_replica || f.replica == 0) &&
            (!f.has_task || f.task == t->index))
            return true;
    }
    return false;
}

static bool filters_allow_device(const master *m, const rill__device *d)
{
    const rill_session_options *o = &m->opts;
    rill_device_name n;
    if (o->ndevice_filters == 0 || !rill_device_name_parse(d->name, &n, NULL)) return true;
    for (int i = 0; i < o->ndevice_filters; i++) {
        rill_device_name f;
        rill_device_name_parse(o->device_filters[i], &f, NULL);
        if (rill_device_name_matches(&f, &n)) return true;
    }
    return false;
}

/* The filters, checked once: INVALID_ARGUMENT naming the one that is wrong. */
static bool filters_check(const rill_session_options *o, rill_status *s)
{
    if (o->ndevice_filters > RILL_MAX_DEVICE_FILTERS) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%d device filters: at most %d are supported",
                        o->ndevice_filters, RILL_MAX_DEVICE_FILTERS);
        return false;
    }
    if (o->long_device_filter) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "device filter %d is longer than %d characters",
                        o->long_device_filter - 1, RILL_DEVICE_NAME_MAX - 1);
        return false;
    }
    for (int i = 0; i < o->ndevice_filters; i++) {
        rill_status *why = rill_status_new();
        bool ok = rill_device_name_parse(o->device_filters[i], NULL, why);
        if (!ok)
            rill_status_set(s, RILL_INVALID_ARGUMENT, "device filter %d: %s", i,
                            rill_status_message(why));
        rill_status_free(why);
        if (!ok) return false;
    }
    return true;
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
            if (!filters_allow_task(m, t)) continue; /* never contacted */
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
            bool ok = call(m, t, &q, NULL, 0, &rep, &ch, s);
            rill__mbuf_free(&q);
            if (!ok) return false;
            rill__mread r = {.p = rep.meta, .n = rep.meta_len};
            uint32_t n = rill__mread_u32(&r);
            got = 0;
            for (uint32_t i = 0; i < n && i < 64 && !r.bad; i++) {
                char *name = rill__mread_str(&r), *type = rill__mread_str(&r),
                     *key = rill__mread_str(&r);
                if (name && type && key) {
                    rill__device *d = &m->devs[m->ndevs + got];
                    snprintf(d->name, sizeof d->name, "%s", name);
                    snprintf(d->type, sizeof d->type, "%s", type);
                    snprintf(d->kernel_key, sizeof d->kernel_key, "%s", key);
                    if (filters_allow_device(m, d)) got++;
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
    if (m->opts.ndevice_filters) {
        /* Which tasks this session talks to, and so waits for: the others may be down. */
        char line[2048];
        int n = snprintf(line, sizeof line, "session on /job:%s/task:%d uses %d of the cluster's "
                                            "%d tasks (device_filters):",
                         m->local_task->job, m->local_task->index, m->ntasks, cap);
        for (int ti = 0; ti < m->ntasks && n > 0 && (size_t)n < sizeof line; ti++)
            n += snprintf(line + n, sizeof line - (size_t)n, "%s /job:%s/task:%d", ti ? "," : "",
                          m->tasks[ti].job, m->tasks[ti].index);
        rill__log(RILL_LOG_INFO, "%s", line);
    }
    return true;
}

static int task_of_dev(void *arg, const rill__device *d)
{
    const master *m = arg;
    return d >= m->devs && d < m->devs + m->ndevs ? m->dev_task[d - m->devs] : m->self;
}

static void task_name(void *arg, int t, const char **job, int *index)
{
    const master *m = arg;
    *job = m->tasks[t].job;
    *index = m->tasks[t].index;
}

/* A task's CPU:0 (NULL if it has none). */
static rill__device *task_cpu(master *m, int t)
{
    for (int i = 0; i < m->ndevs; i++)
        if (m->dev_task[i] == t && strcmp(m->devs[i].type, "CPU") == 0) return &m->devs[i];
    return NULL;
}

/* The master's CPU:0: where the client's feeds enter and its fetches leave. */
static rill__device *client_device(master *m)
{
    rill__device *d = task_cpu(m, m->self);
    return d ? d : m->ndevs ? &m->devs[0] : rill__cpu_device();
}

static bool free_op(const rill_node *n)
{
    return !n->colocate_with && (strcmp(n->op->name, "NoOp") == 0 || strcmp(n->op->name, "Const") == 0);
}

/* Free ops go where they are used: a NoOp or a Const (nothing to compute, no state) whose
 * consumers (data and control) all sit on one other task moves to that task's CPU. What it
 * waited for now goes straight there, so no message gets longer and one hop goes away: the
 * optimizer's learning-rate constants and its group op sit on the worker (replica_device_setter
 * puts every non-variable op there) between updates that run on the ps and the ps's
 * global-step increment, which would make the seed's step three round trips instead of two. A
 * sink (an init op, a train op the client runs) stays. Only the nodes new in this placement
 * move (a signature built before keeps what it was cut with). */
static void settle_free_ops(master *m)
{
    rill_graph *g = m->g;
    int nn = m->pl.n, nt = m->ntasks;
    if (m->settled >= nn || nt < 2) {
        m->settled = nn;
        return;
    }
    int *cnt = rill__malloc((size_t)nn * (size_t)(nt + 1) * sizeof *cnt);
    RILL_CHECK_ALLOC(cnt);
    for (int pass = 0; pass < 8; pass++) {
        /* cnt[i * (nt + 1) + t]: node i's consumers on task t; [.. + nt]: all of them */
        memset(cnt, 0, (size_t)nn * (size_t)(nt + 1) * sizeof *cnt);
        for (int i = 0; i < nn; i++) {
            rill_node *x = rill_graph_node(g, i);
            int tx = task_of_dev(m, m->pl.assigned[i]);
            for (int k = 0; k < x->ninputs + x->ncontrol; k++) {
                rill_node *y = k < x->ninputs ? x->inputs[k].node : x->control_inputs[k - x->ninputs];
                if (!y || y->id < m->settled || y->id >= nn || !free_op(y)) continue;
                cnt[(size_t)y->id * (nt + 1) + tx]++;
                cnt[(size_t)y->id * (nt + 1) + nt]++;
            }
        }
        bool moved = false;
        for (int i = m->settled; i < nn; i++) {
            rill_node *x = rill_graph_node(g, i);
            const int *c = cnt + (size_t)i * (nt + 1);
            if (!free_op(x) || !c[nt]) continue;
            int tx = task_of_dev(m, m->pl.assigned[i]), to = -1;
            for (int t = 0; t < nt; t++)
                if (c[t] == c[nt]) to = t;
            rill__device *cpu = to >= 0 && to != tx ? task_cpu(m, to) : NULL;
            if (!cpu) continue;
            m->pl.assigned[i] = cpu;
            moved = true;
            if (m->opts.log_device_placement)
                rill__log(RILL_LOG_INFO, "%s: (%s): %s (where all %d of its consumers are)",
                          x->name, x->op->name, cpu->name, c[nt]);
        }
        if (!moved) break;
    }
    rill__free(cnt);
    m->settled = nn;
}

/* --- cutting a signature into pieces --- */

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
        rill__free(p->targets);
        for (int i = 0; i < p->nfetch; i++) rill__free(p->fetch_names[i]);
        rill__free(p->fetch_names);
        rill__free(p->fetch_pos);
    }
    rill__free(sg->pieces);
    rill__free(sg->feeds);
    rill__free(sg->fetches);
    rill__free(sg->fetch_pos);
    rill__free(sg->key);
    rill__free(sg);
}

static void add_target(piece *p, rill_node *n)
{
    for (int i = 0; i < p->ntargets; i++)
        if (p->targets[i] == n) return;
    p->targets = rill__realloc(p->targets, (size_t)(p->ntargets + 1) * sizeof *p->targets);
    RILL_CHECK_ALLOC(p->targets);
    p->targets[p->ntargets++] = n;
    p->work = true;
}

/* The fetches of the cut xg that come straight from a remote task's part: the master's piece
 * receives them (a _RemoteRecv) for the fetch alone. For each, its receive and the task's send
 * are skipped (skip[id]) and reply_src[i] / reply_task[i] say what the task's reply carries. */
static void find_reply_fetches(master *m, const rill__xgraph *xg, char *skip, rill_output *reply_src,
                               int *reply_task)
{
    int xn = rill_graph_num_nodes(xg->g);
    for (int i = 0; i < xg->nfetches; i++) {
        rill_node *r = xg->fetches[i].node;
        if (strcmp(r->op->name, "_RemoteRecv") != 0 || task_of_dev(m, r->assigned) != m->self)
            continue;
        const rill__attr *key = rill__node_attr(r, "tensor_name");
        bool used = !key;
        for (int k = 0; k < xg->nfetches && !used; k++)
            used = k != i && xg->fetches[k].node == r;
        rill_node *send = NULL;
        for (int j = 0; j < xn && !used; j++) {
            rill_node *x = rill_graph_node(xg->g, j);
            for (int k = 0; k < x->ninputs && !used; k++) used = x->inputs[k].node == r;
            for (int k = 0; k < x->ncontrol && !used; k++) used = x->control_inputs[k] == r;
            const rill__attr *xk = strcmp(x->op->name, "_RemoteSend") == 0
                                       ? rill__node_attr(x, "tensor_name")
                                       : NULL;
            if (xk && strcmp(xk->v.s, key->v.s) == 0) send = x;
        }
        if (used || !send || send->ncontrol || task_of_dev(m, send->assigned) == m->self) continue;
        if (r->ncontrol) continue;
        skip[r->id] = skip[send->id] = 1;
        reply_src[i] = send->inputs[0];
        reply_task[i] = task_of_dev(m, send->assigned);
    }
}

/* Builds the pieces of one signature: the partitioner cuts the placed graph per task (a
 * _RemoteSend / _RemoteRecv pair on every edge between tasks), each task's nodes go into a graph
 * of its own, registered with the task; the master's is run locally. */
static sig *build_sig(master *m, const rill_output *feeds, int nfeeds, const rill_output *fetches,
                      int nfetches, rill_node *const *targets, int ntargets, rill_status *s)
{
    rill__partition_tasks tasks = {task_of_dev, task_name, client_device(m), m};
    rill__xgraph xg;
    if (!rill__partition(m->g, &m->pl, &tasks, feeds, nfeeds, fetches, nfetches, targets, ntargets,
                         &xg, s))
        return NULL;
    sig *sg = rill__calloc(1, sizeof *sg);
    RILL_CHECK_ALLOC(sg);
    sg->pieces = rill__calloc((size_t)m->ntasks, sizeof *sg->pieces);
    RILL_CHECK_ALLOC(sg->pieces);
    int xn = rill_graph_num_nodes(xg.g);
    rill_node **clone = rill__calloc((size_t)xn + 1, sizeof *clone);
    int *owner = rill__calloc((size_t)xn + 1, sizeof *owner);
    RILL_CHECK_ALLOC(clone);
    RILL_CHECK_ALLOC(owner);
    bool ok = false;
    /* A fetch that another task computes and nothing of the master's piece uses comes back in
     * that task's RUN reply (read by the step's thread), not pushed into the master's
     * rendezvous (read by its server's thread, then handed over): one hand-off less. */
    char *skip = rill__calloc((size_t)xn + 1, 1);
    rill_output *reply_src = rill__calloc((size_t)xg.nfetches + 1, sizeof *reply_src);
    int *reply_task = rill__calloc((size_t)xg.nfetches + 1, sizeof *reply_task);
    RILL_CHECK_ALLOC(skip);
    RILL_CHECK_ALLOC(reply_src);
    RILL_CHECK_ALLOC(reply_task);
    find_reply_fetches(m, &xg, skip, reply_src, reply_task);
    for (int t = 0; t < m->ntasks; t++) sg->pieces[t].g = rill_graph_new();
    for (int i = 0; i < xn; i++) {
        rill_node *n = rill_graph_node(xg.g, i);
        int t = task_of_dev(m, n->assigned);
        owner[i] = t;
        if (skip[i]) continue;
        piece *p = &sg->pieces[t];
        rill_output ins[64];
        if (n->ninputs > 64) {
            rill_status_set(s, RILL_UNIMPLEMENTED, "node '%s' has more than 64 inputs", n->name);
            goto out;
        }
        for (int k = 0; k < n->ninputs; k++) {
            rill_output in = n->inputs[k];
            if (owner[in.node->id] != t || !clone[in.node->id]) {
                rill_status_set(s, RILL_INTERNAL, "the cut left an edge between tasks: '%s' -> '%s'",
                                in.node->name, n->name);
                goto out;
            }
            ins[k] = (rill_output){clone[in.node->id], in.index};
        }
        char exact[512];
        snprintf(exact, sizeof exact, "%s/", n->name);
        rill__attr attrs[64];
        int na = n->nattrs < 64 ? n->nattrs : 64;
        for (int k = 0; k < na; k++) attrs[k] = n->attrs[k];
        rill_node *c = rill__node_create(p->g, n->op->name, exact, ins, n->ninputs, attrs, na);
        if (!c) {
            rill_status_copy(s, rill_graph_status(p->g));
            goto out;
        }
        c->seed = n->seed;
        c->seed2 = n->seed2;
        char spec[128];
        rill__local_device_spec(n->assigned ? n->assigned->name : "", spec, sizeof spec);
        rill__free(c->requested_device);
        c->requested_device = rill__strdup(spec);
        clone[i] = c;
        /* What a task runs: every push to another task, and the user's targets there. */
        if (strcmp(n->op->name, "_RemoteSend") == 0) add_target(p, c);
    }
    /* Control edges, once every node has its clone (the cut adds a control edge's receive
     * after the node that waits on it). */
    for (int i = 0; i < xn; i++) {
        rill_node *n = rill_graph_node(xg.g, i);
        if (skip[i]) continue;
        for (int k = 0; k < n->ncontrol; k++) {
            rill_node *cin = n->control_inputs[k];
            if (owner[cin->id] != owner[i]) {
                rill_status_set(s, RILL_INTERNAL, "the cut left a control edge between tasks: "
                                "'%s' -> '%s'", cin->name, n->name);
                goto out;
            }
            rill_node_add_control_input(clone[i], clone[cin->id]);
        }
    }
    for (int i = 0; i < xg.ntargets; i++)
        add_target(&sg->pieces[owner[xg.targets[i]->id]], clone[xg.targets[i]->id]);
    /* The user's feeds and fetches are on the master's CPU:0, but for those that come in a
     * reply. */
    sg->nfeeds = xg.nfeeds;
    sg->feeds = rill__calloc((size_t)xg.nfeeds + 1, sizeof *sg->feeds);
    sg->fetches = rill__calloc((size_t)xg.nfetches + 1, sizeof *sg->fetches);
    sg->fetch_pos = rill__calloc((size_t)xg.nfetches + 1, sizeof *sg->fetch_pos);
    RILL_CHECK_ALLOC(sg->feeds);
    RILL_CHECK_ALLOC(sg->fetches);
    RILL_CHECK_ALLOC(sg->fetch_pos);
    for (int i = 0; i < xg.nfeeds; i++)
        sg->feeds[i] = (rill_output){clone[xg.feeds[i].node->id], xg.feeds[i].index};
    for (int i = 0; i < xg.nfetches; i++) {
        rill_output f = xg.fetches[i];
        if (reply_src[i].node) {
            piece *p = &sg->pieces[reply_task[i]];
            p->fetch_names = rill__realloc(p->fetch_names, (size_t)(p->nfetch + 1) * sizeof(char *));
            p->fetch_pos = rill__realloc(p->fetch_pos, (size_t)(p->nfetch + 1) * sizeof(int));
            RILL_CHECK_ALLOC(p->fetch_names);
            RILL_CHECK_ALLOC(p->fetch_pos);
            p->fetch_names[p->nfetch] = rill__asprintf("%s:%d", clone[reply_src[i].node->id]->name,
                                                       reply_src[i].index);
            p->fetch_pos[p->nfetch++] = i;
            p->work = true;
            continue;
        }
        if (owner[f.node->id] != m->self) {
            rill_status_set(s, RILL_INTERNAL, "fetch %d is not on the master's task", i);
            goto out;
        }
        sg->fetch_pos[sg->nfetches] = i;
        sg->fetches[sg->nfetches++] = (rill_output){clone[f.node->id], f.index};
    }
    if (sg->nfetches) sg->pieces[m->self].work = true;
    /* Register the remote pieces; make the local one's session. */
    for (int t = 0; t < m->ntasks; t++) {
        piece *p = &sg->pieces[t];
        if (!rill_graph_ok(p->g)) {
            rill_status_copy(s, rill_graph_status(p->g));
            goto out;
        }
        if (t == m->self) {
            rill_session_options o = m->opts;
            o.target[0] = 0;
            o.log_device_placement = false; /* the master logged the cluster's placement */
            p->sess = rill__session_new_with_rm(p->g, &o, m->local_task->rm, s);
            if (!p->sess) goto out;
            uint64_t want = rill__graph_recv_bytes(p->g),
                     had = atomic_load(&m->local_task->own_recv);
            while (want > had &&
                   !atomic_compare_exchange_weak(&m->local_task->own_recv, &had, want)) {
            }
            continue;
        }
        if (!p->work) continue;
        uint8_t *bytes;
        size_t len;
        if (!rill__graph_encode(p->g, &bytes, &len, s)) goto out;
        rill__mbuf q = {0};
        rill__mbuf_u32(&q, RILL__RPC_REGISTER);
        rill__mbuf_u64(&q, m->owner);
        struct iovec iov = {bytes, len};
        rill__reply rep = {0};
        rill__channel *ch;
        bool okc = call(m, &m->tasks[t], &q, &iov, 1, &rep, &ch, s);
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
    rill__free(clone);
    rill__free(owner);
    rill__free(skip);
    rill__free(reply_src);
    rill__free(reply_task);
    rill__xgraph_free(&xg);
    if (!ok) {
        sig_free(m, sg);
        return NULL;
    }
    return sg;
}

/* --- running --- */

/* One step in flight over the pieces of sg. */
typedef struct step_job {
    master *m;
    sig *sg;
    rill__deadline dl; /* with the step's master and number */
    bool aborted;
    bool timed_out; /* the step's own deadline passed while a task ran its part */
    rill_status *status[256];  /* per task */
    rill__channel *ch[256];    /* per remote task: its RUN, written and not yet answered */
    int nwait;                 /* how many */
    double wait_until;         /* when the replies are given up (deadline or step deadline) */
    double started;            /* when the step began */
    double next_stall;         /* when the tasks still running are asked what for (0: never) */
    double next_tend;          /* when tend_local looks at the master's piece next */
    /* the master's piece: it runs asynchronously, ending on whichever thread (local_done) */
    rill_tensor *const *feed_values;
    rill_tensor **fetch_values;
    rill_tensor *local_out[64];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool local_done;
    rill_code local_code;
} step_job;

static void abort_step(step_job *j);

/* Writes the RUN of task t's piece for the step; its reply is read by take_reply. */
static void send_run(step_job *j, int t)
{
    master *m = j->m;
    piece *p = &j->sg->pieces[t];
    task *tk = &m->tasks[t];
    rill_status *s = j->status[t];
    rill__mbuf q = {0};
    rill__mbuf_u32(&q, RILL__RPC_RUN);
    rill__mbuf_u64(&q, p->handle);
    rill__mbuf_u64(&q, j->dl.step_owner);
    rill__mbuf_u64(&q, j->dl.step_id);
    rill__mbuf_u32(&q, 0); /* feeds: none, the master pushes what a task needs */
    rill__mbuf_u32(&q, (uint32_t)p->nfetch); /* the user's fetches it makes */
    for (int i = 0; i < p->nfetch; i++) rill__mbuf_str(&q, p->fetch_names[i]);
    rill__mbuf_u32(&q, (uint32_t)p->ntargets);
    for (int i = 0; i < p->ntargets; i++) rill__mbuf_str(&q, p->targets[i]->name);
    rill__channel *ch = channel_get(m, tk, s);
    double wait = j->wait_until - now();
    if (ch && wait > 0 && rill__channel_send(ch, q.p, (uint32_t)q.n, NULL, 0, wait, s)) {
        j->ch[t] = ch;
        j->nwait++;
    } else {
        if (ch && rill_status_ok(s))
            rill_status_set(s, RILL_DEADLINE_EXCEEDED,
                            "Timed out waiting for notification: the step's %lld ms deadline "
                            "passed before task /job:%s/replica:0/task:%d (%s) was called",
                            (long long)j->dl.timeout_ms, tk->job, tk->index, tk->addr);
        else if (ch)
            status_name_task(s, tk);
        channel_put(tk, ch, false);
        abort_step(j);
    }
    rill__mbuf_free(&q);
}

/* Reads task t's reply (it is there, or the wait ends at the step's end). */
static void take_reply(step_job *j, int t)
{
    master *m = j->m;
    task *tk = &m->tasks[t];
    rill_status *s = j->status[t];
    rill__channel *ch = j->ch[t];
    j->ch[t] = NULL;
    j->nwait--;
    rill__reply rep = {0};
    double wait = j->wait_until - now();
    bool ok = rill__channel_reply(ch, &rep, wait > 0.001 ? wait : 0.001, s);
    if (ok) {
        /* The fetches it carries are views of the reply's payload (no copy). */
        piece *p = &j->sg->pieces[t];
        rill__mread r = {.p = rep.meta, .n = rep.meta_len};
        uint32_t n = rill__mread_u32(&r);
        uint64_t off = 0;
        rill__buffer *pay = NULL;
        if (rep.payload_owned) {
            pay = rill__buffer_adopt(rep.payload, rep.payload_len);
            rep.payload_owned = false;
        }
        ok = !r.bad && n == (uint32_t)p->nfetch && (pay || !rep.payload_len);
        for (uint32_t i = 0; ok && i < n; i++) {
            rill_tensor *v = rill__mread_tensor(&r, pay, rep.payload_len, &off, s);
            ok = v != NULL;
            if (ok) j->fetch_values[p->fetch_pos[i]] = v;
        }
        rill__buffer_unref(pay);
        if (!ok) {
            rill_status_set(s, RILL_DATA_LOSS, "task /job:%s/task:%d sent a malformed RUN reply",
                            tk->job, tk->index);
            channel_put(tk, ch, false);
            abort_step(j);
            return;
        }
    }
    if (rep.payload_owned) rill__aligned_free(rep.payload, rep.payload_len);
    rill_code c = rill_status_code(s);
    bool transport = !ok && (c == RILL_UNAVAILABLE || c == RILL_DEADLINE_EXCEEDED || c == RILL_DATA_LOSS);
    if (transport) status_name_task(s, tk);
    channel_put(tk, ch, ok || !transport); /* an error the task answered leaves it good */
    if (!ok) abort_step(j);
}

/* Reads the replies that came, waiting at most timeout_ms for one; past the step's end, the
 * tasks still running are given up on (DEADLINE_EXCEEDED naming them) and the step aborted. */
static void take_replies(step_job *j, int timeout_ms)
{
    master *m = j->m;
    struct pollfd fds[256];
    int who[256], n = 0;
    bool ready = false;
    for (int t = 0; t < m->ntasks && t < 256; t++) {
        if (!j->ch[t]) continue;
        int fd = rill__channel_fd(j->ch[t]);
        if (fd < 0) ready = true;
        fds[n] = (struct pollfd){.fd = fd, .events = POLLIN | POLLRDHUP};
        who[n++] = t;
    }
    if (!n) return;
    double left = j->wait_until - now();
    if (left <= 0) {
        for (int k = 0; k < n; k++) {
            task *tk = &m->tasks[who[k]];
            rill_status *s = j->status[who[k]];
            if (j->dl.at && now() >= j->dl.at) {
                rill_status_set(s, RILL_DEADLINE_EXCEEDED,
                                "Timed out waiting for notification: the step's %lld ms deadline "
                                "passed while task /job:%s/replica:0/task:%d (%s) ran its part "
                                "of the step",
                                (long long)j->dl.timeout_ms, tk->job, tk->index, tk->addr);
                j->timed_out = true;
            } else {
                rill_status_set(s, RILL_DEADLINE_EXCEEDED,
                                "task /job:%s/replica:0/task:%d (%s): no reply within the step "
                                "deadline of %.0f s",
                                tk->job, tk->index, tk->addr, m->local_task->opts.step_deadline_s);
            }
            channel_put(tk, j->ch[who[k]], false);
            j->ch[who[k]] = NULL;
            j->nwait--;
        }
        abort_step(j);
        return;
    }
    if (left * 1000 < timeout_ms) timeout_ms = (int)(left * 1000) + 1;
    if (!ready && poll(fds, (nfds_t)n, timeout_ms) <= 0) return;
    for (int k = 0; k < n; k++)
        if (fds[k].fd < 0 || fds[k].revents) take_reply(j, who[k]);
}

/* The master's own piece ended (on the thread that ended it). */
static void local_done(void *arg, rill_code code)
{
    step_job *j = arg;
    pthread_mutex_lock(&j->mu);
    j->local_code = code;
    j->local_done = true;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* Starts the master's own piece (the user's feeds in, its fetches into local_out): it runs on
 * this thread until it waits for a tensor, then on the threads that deliver them, while this
 * one reads the tasks' replies. */
static void start_local(step_job *j)
{
    sig *sg = j->sg;
    piece *p = &sg->pieces[j->m->self];
    if (!rill__session_run_async(p->sess, j->dl, sg->feeds, j->feed_values, sg->nfeeds,
                                 sg->fetches, j->local_out, sg->nfetches, p->targets, p->ntargets,
                                 j->status[j->m->self], local_done, j))
        local_done(j, rill_status_code(j->status[j->m->self]));
}

/* Every 50 ms while the step runs: a failed piece of the master's aborts the step, and its
 * parked receives look again (deadline, cancellation). */
static void tend_local(step_job *j, rill__rendezvous *rv)
{
    double t = now();
    if (t < j->next_tend) return;
    j->next_tend = t + 0.05;
    pthread_mutex_lock(&j->mu);
    bool failed = j->local_done && j->local_code != RILL_OK;
    pthread_mutex_unlock(&j->mu);
    if (failed) abort_step(j);
    rill__rendezvous_wake_step(rv, j->dl.step_owner, j->dl.step_id);
}

/* A part failed: every task drops the step (its waiting receives fail at once, not at their
 * deadline). Once per step. */
static void abort_step(step_job *j)
{
    if (j->aborted) return;
    j->aborted = true;
    master *m = j->m;
    rill__rendezvous_abort(m->rv, j->dl.step_owner, j->dl.step_id);
    for (int t = 0; t < m->ntasks; t++) {
        if (t == m->self || !j->sg->pieces[t].handle) continue;
        /* A task that could not be reached (its RUN failed in the transport) is not waited for:
         * one attempt over an idle connection or a fresh one, with a short deadline. */
        rill_status *ps = j->status[t];
        rill_code pc = ps ? rill_status_code(ps) : RILL_OK;
        if (pc == RILL_UNAVAILABLE || pc == RILL_DEADLINE_EXCEEDED || pc == RILL_DATA_LOSS) continue;
        task *tk = &m->tasks[t];
        rill_status *s = rill_status_new();
        rill__channel *ch = NULL;
        pthread_mutex_lock(&tk->mu);
        if (tk->nidle) ch = tk->idle[--tk->nidle].ch;
        pthread_mutex_unlock(&tk->mu);
        if (!ch) ch = rill__local_task_connect(m->local_task, tk->addr, 1, s);
        if (ch) {
            rill__mbuf q = {0};
            rill__mbuf_u32(&q, RILL__RPC_ABORT);
            rill__mbuf_u64(&q, j->dl.step_owner);
            rill__mbuf_u64(&q, j->dl.step_id);
            rill__reply rep = {0};
            bool ok = rill__channel_call(ch, RILL__MSG_REQUEST, q.p, (uint32_t)q.n, NULL, 0, &rep,
                                         2, s);
            if (rep.payload_owned) rill__aligned_free(rep.payload, rep.payload_len);
            rill__mbuf_free(&q);
            channel_put(tk, ch, ok);
        }
        rill_status_free(s);
    }
}

/* --- stall reports: a step that has waited a while asks the tasks still running what for ---
 * The task answers with what its blocking ops wait for (STATUS: a token, gradients) and the
 * tasks they wait on; those are pinged, and one line says it all. Both go over fresh
 * connections (2 s for STATUS, 1 s per ping, at most 4 pinged), from the step's thread: a
 * report holds it a few seconds at most, and only in a step that has waited already. */

static double stall_every(const master *m)
{
    double v = m->local_task->opts.stall_report_s;
    return v < 0 ? 0 : v > 0 ? v : 5;
}

/* Appends "; T answers heartbeats" or "; T does not answer: why" for task name, pinged within
 * 1 s over a fresh connection (a pooled one could outlive its process). */
static void append_liveness(master *m, const char *name, char *out, size_t len)
{
    size_t off = strlen(out);
    if (off >= len) return;
    /* From the cluster spec: device filters may keep the task out of this session's tasks. */
    rill_device_name dn;
    const rill__local_task *self = m->local_task;
    const char *addr = rill_device_name_parse(name, &dn, NULL) && dn.has_job && dn.has_task
                           ? rill_cluster_spec_task_address(self->cluster, dn.job, dn.task, NULL)
                           : NULL;
    bool me = addr && strcmp(dn.job, self->job) == 0 && dn.task == self->index;
    if (!addr || me) {
        snprintf(out + off, len - off, "; %s is %s", name, me ? "this task" : "not in the cluster");
        return;
    }
    rill_status *s = rill_status_new();
    rill__channel *ch = rill__local_task_connect(m->local_task, addr, 1, s);
    bool ok = ch && rill__channel_ping(ch, 1, s);
    rill__channel_close(ch);
    if (ok)
        snprintf(out + off, len - off, "; %s answers heartbeats", name);
    else
        snprintf(out + off, len - off, "; %s does not answer: %s", name, rill_status_message(s));
    rill_status_free(s);
}

/* Asks task ti what the step waits for there and logs the answer (or that it gave none). */
static void report_stall(step_job *j, int ti, double waited)
{
    master *m = j->m;
    task *tk = &m->tasks[ti];
    rill_status *s = rill_status_new();
    /* A fresh connection: the answer is about the task, not about a pooled socket. */
    rill__tcp_options o;
    rill__local_task_client_options(m->local_task, &o);
    rill__channel *ch = rill__tcp_connect(tk->addr, &o, 2, s);
    rill__mbuf q = {0};
    rill__mbuf_u32(&q, RILL__RPC_STATUS);
    rill__mbuf_u64(&q, j->dl.step_owner);
    rill__mbuf_u64(&q, j->dl.step_id);
    rill__reply rep = {0};
    bool ok =
        ch && rill__channel_call(ch, RILL__MSG_REQUEST, q.p, (uint32_t)q.n, NULL, 0, &rep, 2, s);
    rill__mbuf_free(&q);
    if (!ok) {
        rill__log(RILL_LOG_WARNING,
                  "a step of this task has waited %.0f s for task /job:%s/replica:0/task:%d (%s), "
                  "which does not answer a status request: %s",
                  waited, tk->job, tk->index, tk->addr, rill_status_message(s));
    } else {
        rill__mread r = {.p = rep.meta, .n = rep.meta_len};
        uint32_t n = rill__mread_u32(&r);
        for (uint32_t i = 0; i < n && i < 8 && !r.bad; i++) {
            char *what = rill__mread_str(&r);
            uint32_t ntasks = rill__mread_u32(&r), named = rill__mread_u32(&r);
            char line[3072];
            snprintf(line, sizeof line, "%s", what ? what : "?");
            for (uint32_t k = 0; k < named && k < RILL__WAIT_TASKS && !r.bad; k++) {
                char *name = rill__mread_str(&r);
                if (name && k < 4) append_liveness(m, name, line, sizeof line);
                rill__free(name);
            }
            if (!r.bad)
                rill__log(RILL_LOG_WARNING,
                          "a step of this task has waited %.0f s for task /job:%s/replica:0/"
                          "task:%d: %s%s",
                          waited, tk->job, tk->index, line,
                          ntasks > 4 && named ? " (the others not asked)" : "");
            rill__free(what);
        }
    }
    if (rep.payload_owned) rill__aligned_free(rep.payload, rep.payload_len);
    rill__channel_close(ch);
    rill_status_free(s);
}

/* Every stall_report_s of a step that still waits for tasks: ask them what for. */
static void tend_stall(step_job *j)
{
    double t = now();
    if (!j->next_stall || t < j->next_stall) return;
    j->next_stall = t + stall_every(j->m);
    for (int ti = 0; ti < j->m->ntasks && ti < 256; ti++)
        if (j->ch[ti]) report_stall(j, ti, t - j->started);
}

/* Whether an error is only the echo of another part's failure. */
static bool echo_error(const rill_status *s)
{
    return rill_status_code(s) == RILL_CANCELLED && strstr(rill_status_message(s), "aborted");
}

/* One message to every task with work, written from this thread without waiting between them;
 * then the master's piece runs here, and the step is done when every task has answered (the
 * replies are read here too: no thread hand-off on the way). The first real error in task
 * order is the step's. */
static rill_code run_step(master *m, sig *sg, rill__deadline dl, rill_tensor *const *feed_values,
                          rill_tensor **fetch_values, bool *timed_out, rill_status *s)
{
    static __thread step_job j;
    memset(&j, 0, sizeof j);
    if (sg->nfetches > 64) {
        rill_status_set(s, RILL_UNIMPLEMENTED, "more than 64 fetches on the master's task");
        return RILL_UNIMPLEMENTED;
    }
    pthread_mutex_init(&j.mu, NULL);
    pthread_cond_init(&j.cv, NULL);
    j.local_done = true;
    j.m = m;
    j.sg = sg;
    j.dl = dl;
    j.dl.step_owner = m->owner;
    j.dl.step_id = atomic_fetch_add(&m->next_step, 1) + 1;
    j.feed_values = feed_values;
    j.fetch_values = fetch_values;
    j.wait_until = now() + m->local_task->opts.step_deadline_s;
    j.next_tend = now() + 0.05;
    j.started = now();
    j.next_stall = stall_every(m) > 0 ? j.started + stall_every(m) : 0;
    if (dl.at && dl.at < j.wait_until) j.wait_until = dl.at;
    int parts[256], np = 0;
    bool mine = false;
    for (int t = 0; t < m->ntasks && t < 256; t++)
        if (sg->pieces[t].work && (t == m->self || sg->pieces[t].handle)) {
            parts[np++] = t;
            j.status[t] = rill_status_new();
            mine |= t == m->self;
        }
    for (int k = 0; k < np && !j.aborted; k++)
        if (parts[k] != m->self) send_run(&j, parts[k]);
    rill__rendezvous *rv = m->rv;
    if (mine && !j.aborted) {
        j.local_done = false;
        start_local(&j);
    }
    /* The replies, then the master's piece (ended by now, as a rule: its pushes went out
     * before the tasks could answer). */
    while (j.nwait) {
        take_replies(&j, 50);
        tend_local(&j, rv);
        tend_stall(&j);
    }
    pthread_mutex_lock(&j.mu);
    while (!j.local_done) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long ns = ts.tv_nsec + 50L * 1000 * 1000;
        ts.tv_sec += ns / 1000000000L;
        ts.tv_nsec = ns % 1000000000L;
        if (pthread_cond_timedwait(&j.cv, &j.mu, &ts) == ETIMEDOUT) {
            pthread_mutex_unlock(&j.mu);
            tend_local(&j, rv);
            pthread_mutex_lock(&j.mu);
        }
    }
    pthread_mutex_unlock(&j.mu);
    if (mine && j.local_code == RILL_OK)
        for (int i = 0; i < sg->nfetches; i++) j.fetch_values[sg->fetch_pos[i]] = j.local_out[i];
    if (mine && j.local_code != RILL_OK) abort_step(&j);
    pthread_mutex_destroy(&j.mu);
    pthread_cond_destroy(&j.cv);
    rill_code code = RILL_OK;
    for (int pass = 0; pass < 2 && code == RILL_OK; pass++)
        for (int k = 0; k < np && code == RILL_OK; k++) {
            rill_status *ps = j.status[parts[k]];
            if (!rill_status_ok(ps) && (pass == 1 || !echo_error(ps))) {
                rill_status_copy(s, ps);
                code = rill_status_code(s);
            }
        }
    for (int k = 0; k < np; k++) rill_status_free(j.status[parts[k]]);
    *timed_out = j.timed_out;
    return code;
}

static void master_cancel(void *mp);

static rill_code master_run(void *mp, rill__deadline dl, const rill_output *feeds,
                            rill_tensor *const *feed_values, int nfeeds,
                            const rill_output *fetches, rill_tensor **fetch_values, int nfetches,
                            rill_node *const *targets, int ntargets, rill_status *s)
{
    master *m = mp;
    if (m->client)
        return rill__client_run(m->client, dl, feeds, feed_values, nfeeds, fetches, fetch_values,
                                nfetches, targets, ntargets, s);
    pthread_mutex_lock(&m->mu);
    if (!rill__place(m->g, &m->pl, m->devp, m->ndevs, m->opts.allow_soft_placement,
                     m->opts.log_device_placement, s)) {
        pthread_mutex_unlock(&m->mu);
        return rill_status_code(s);
    }
    settle_free_ops(m);
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
    bool timed_out = false;
    for (int i = 0; i < nfetches; i++) fetch_values[i] = NULL;
    rill_code code = run_step(m, sg, dl, feed_values, fetch_values, &timed_out, s);
    if (code != RILL_OK)
        for (int i = 0; i < nfetches; i++) rill_tensor_free(fetch_values[i]), fetch_values[i] = NULL;
    /* A task still running its part past the deadline is told to stop (TF cancels the step;
     * here every step of this master then running is cancelled with it). */
    if (timed_out) master_cancel(m);
    return code;
}

static void master_close(void *mp)
{
    master *m = mp;
    if (!m) return;
    if (m->client) {
        rill__client_close(m->client);
        rill__free(m);
        return;
    }
    for (sig *sg = m->sigs; sg;) {
        sig *nx = sg->next;
        sig_free(m, sg);
        sg = nx;
    }
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
    rill__local_task *lt = lookup_task(target);
    if (!lt && rill__target_address(target)) {
        /* Another process's server: its master runs the graph (TF's client/master split). */
        rill__client *c = rill__client_open(target, g, o, s);
        if (!c) return NULL;
        master *m = rill__calloc(1, sizeof *m);
        RILL_CHECK_ALLOC(m);
        m->client = c;
        return m;
    }
    if (!lt) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "No session factory registered for the given session options: {target: "
                        "\"%s\"}: no server of this process answers it, and it names no "
                        "\"grpc://host:port\" or \"rill://host:port\" of another's",
                        target);
        return NULL;
    }
    master *m = rill__calloc(1, sizeof *m);
    RILL_CHECK_ALLOC(m);
    m->local_task = lt;
    m->g = g;
    m->opts = *o;
    m->owner = rill__random_seed() ^ (uint64_t)(uintptr_t)m;
    m->rv = rill__rendezvous_install((rill__local_task *)lt);
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->sigs_mu, NULL);
    if (!filters_check(o, s) || !discover(m, s)) {
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
    if (m->client) {
        rill__client_cancel(m->client);
        return;
    }
    /* The master's own pieces run in local sessions of their own. */
    pthread_mutex_lock(&m->sigs_mu);
    for (sig *sg = m->sigs; sg; sg = sg->next) rill_session_cancel(sg->pieces[m->self].sess);
    pthread_mutex_unlock(&m->sigs_mu);
    for (int t = 0; t < m->ntasks; t++) {
        if (m->tasks[t].local) continue;
        rill_status *s = rill_status_new();
        rill__send_cancel(rill__local_task_connect(m->local_task, m->tasks[t].addr, 5, s),
                          m->owner);
        rill_status_free(s);
    }
}

static const rill__remote_ops master_ops = {
    .open = master_open,
    .run = master_run,
    .close = master_close,
    .cancel = master_cancel,
};

/* Sessions on a target work from a process that serves nothing too (a client): the hooks are
 * registered when the library loads. A static link keeps this file through rill_static's
 * --undefined=rill__master_anchor (CMakeLists.txt). */
const int rill__master_anchor = 1;

__attribute__((constructor)) static void register_master_ops(void)
{
    rill__register_remote(&master_ops);
}

/* --- the tasks of this process, by target --- */

void rill__master_add_task(rill__local_task *t)
{
    /* The task's kernels learn their cluster's tasks (a sync step's accumulators name the
     * workers whose gradients have not come) and how soon a wait is reported. */
    const rill_cluster_spec *c = t->cluster;
    rill__vec names = {0};
    for (int jb = 0; c && jb < rill_cluster_spec_num_jobs(c); jb++) {
        const char *job = rill_cluster_spec_job_name(c, jb);
        int nt = rill_cluster_spec_num_tasks(c, job, NULL);
        for (int i = 0; i < nt; i++)
            rill__vec_push(&names, rill__asprintf("/job:%s/task:%d", job,
                                                  rill_cluster_spec_task_index(c, job, i)));
    }
    rill__resource_mgr_set_cluster(t->rm, (const char *const *)names.items, names.n,
                                   t->opts.stall_report_s);
    for (int i = 0; i < names.n; i++) rill__free(names.items[i]);
    rill__vec_free(&names);
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

/* Bytes of a tensor of dtype and shape; UINT64_MAX when not fully known. */
static uint64_t shape_bytes(rill_dtype dt, rill_shape sh)
{
    size_t esz = rill_dtype_size(dt);
    if (sh.rank < 0 || esz == 0) return UINT64_MAX;
    uint64_t n = esz;
    for (int d = 0; d < sh.rank; d++) {
        if (sh.dims[d] < 0 || (sh.dims[d] > 0 && n > UINT64_MAX / (uint64_t)sh.dims[d]))
            return UINT64_MAX;
        n *= (uint64_t)sh.dims[d];
    }
    return n;
}

uint64_t rill__graph_recv_bytes(const rill_graph *g)
{
    uint64_t total = 0;
    for (int i = 0; i < rill_graph_num_nodes(g) && total != UINT64_MAX; i++) {
        rill_node *n = rill_graph_node((rill_graph *)g, i);
        if (strcmp(n->op->name, "_RemoteRecv") != 0) continue;
        uint64_t b = shape_bytes(n->out_dtypes[0], n->out_shapes[0]);
        total = b == UINT64_MAX || total + b < b ? UINT64_MAX : total + b;
    }
    return total;
}

/* --- who a task is on the wire --- */

static void run_hex(const uint8_t run[16], char out[17])
{
    for (int i = 0; i < 8; i++) snprintf(out + 2 * i, 3, "%02x", run[i]);
}

static bool all_zero(const uint8_t *p, size_t n)
{
    uint8_t acc = 0;
    for (size_t i = 0; i < n; i++) acc |= p[i];
    return acc == 0;
}

/* The run id of a job id string: 16 bytes of its hash (never all zero). */
static void run_of(const char *job_id, uint8_t run[16])
{
    crypto_generichash(run, 16, (const uint8_t *)job_id, strlen(job_id),
                       (const uint8_t *)"rill run id.....", 16);
    if (all_zero(run, 16)) run[0] = 1;
}

void rill__local_task_identity_init(rill__local_task *t)
{
    static const char *const launcher_ids[] = {"RILL_JOB_ID", "SLURM_JOB_ID", "PMIX_NAMESPACE",
                                               "OMPI_MCA_ess_base_jobid"};
    char spec[8192];
    size_t n = rill_cluster_spec_to_string(t->cluster, spec, sizeof spec);
    char *big = n < sizeof spec ? NULL : rill__malloc(n + 1);
    if (big) rill_cluster_spec_to_string(t->cluster, big, n + 1);
    crypto_generichash(t->id.cluster, 32, (const uint8_t *)(big ? big : spec), n, NULL, 0);
    rill__free(big);
    snprintf(t->id.task, sizeof t->id.task, "/job:%s/replica:0/task:%d", t->job, t->index);
    /* The chief: task 0 of "chief", else of "worker", else the first task of the first job. */
    const char *cj = rill_cluster_spec_has_job(t->cluster, "chief")    ? "chief"
                     : rill_cluster_spec_has_job(t->cluster, "worker") ? "worker"
                     : rill_cluster_spec_num_jobs(t->cluster) > 0
                         ? rill_cluster_spec_job_name(t->cluster, 0)
                         : t->job;
    int ci = rill_cluster_spec_task_index(t->cluster, cj, 0);
    snprintf(t->chief_name, sizeof t->chief_name, "/job:%s/replica:0/task:%d", cj, ci);
    t->chief_addr = rill_cluster_spec_task_address(t->cluster, cj, ci, NULL);
    t->chief = strcmp(t->job, cj) == 0 && t->index == ci;
    const char *job_id = t->opts.run_id && *t->opts.run_id ? t->opts.run_id : NULL;
    const char *from = "the run_id option";
    for (size_t i = 0; !job_id && i < sizeof launcher_ids / sizeof *launcher_ids; i++) {
        const char *v = getenv(launcher_ids[i]);
        if (v && *v) job_id = v, from = launcher_ids[i];
    }
    t->run_known = true;
    if (job_id) {
        run_of(job_id, t->id.run);
        snprintf(t->run_from, sizeof t->run_from, "%s=%s", from, job_id);
    } else if (t->chief) {
        char made[33] = "", kept[64] = "";
        const char *file = t->opts.run_id_file && *t->opts.run_id_file ? t->opts.run_id_file : NULL;
        FILE *f = file ? fopen(file, "r") : NULL;
        if (f) {
            if (fgets(kept, sizeof kept, f)) kept[strcspn(kept, "\r\n")] = 0;
            fclose(f);
        }
        if (kept[0]) {
            run_of(kept, t->id.run);
            snprintf(t->run_from, sizeof t->run_from, "kept in %s", file);
        } else {
            uint8_t r[16];
            randombytes_buf(r, sizeof r);
            for (int i = 0; i < 16; i++) snprintf(made + 2 * i, 3, "%02x", r[i]);
            run_of(made, t->id.run);
            snprintf(t->run_from, sizeof t->run_from, "made by this task, the chief, at its start");
            if (file && strrchr(file, '/')) { /* its directory (a logdir) may not be there yet */
                char *dir = rill__strndup(file, (size_t)(strrchr(file, '/') - file));
                if (*dir) rill__make_dirs(dir, rill__scratch_status());
                rill__free(dir);
            }
            int fd = file ? open(file, O_WRONLY | O_CREAT | O_EXCL, 0600) : -1;
            if (fd >= 0) {
                dprintf(fd, "%s\n", made);
                close(fd);
            } else if (file) {
                rill__log(RILL_LOG_WARNING, "cannot keep the run id in %s: %s (a restarted "
                          "chief will not rejoin this run)", file, strerror(errno));
            }
        }
    } else {
        memset(t->id.run, 0, 16);
        t->run_known = false;
        snprintf(t->run_from, sizeof t->run_from, "not known yet");
    }
}

rill__identity rill__cluster_identity(const rill_cluster_spec *c, const char *job, int index)
{
    rill__local_task t = {.cluster = (rill_cluster_spec *)c, .index = index};
    snprintf(t.job, sizeof t.job, "%s", job);
    rill__local_task_identity_init(&t);
    return t.id;
}

/* t has no run id yet: takes run, which came from `from`. */
static void adopt_run(rill__local_task *t, const uint8_t run[16], const char *from)
{
    if (all_zero(run, 16)) return;
    pthread_mutex_lock(&t->id_mu);
    if (!t->run_known) {
        memcpy(t->id.run, run, 16);
        t->run_known = true;
        char hex[17];
        run_hex(run, hex);
        snprintf(t->run_from, sizeof t->run_from, "adopted from %s", from);
        rill__log(RILL_LOG_INFO, "/job:%s/task:%d joined run %s (%s)", t->job, t->index, hex,
                  t->run_from);
    }
    pthread_mutex_unlock(&t->id_mu);
}

bool rill__is_client_identity(const char *task)
{
    return strncmp(task, RILL__CLIENT_PREFIX, strlen(RILL__CLIENT_PREFIX)) == 0;
}

bool rill__local_task_admit(void *arg, const rill__identity *c, uint8_t run[16], rill_status *why)
{
    rill__local_task *t = arg;
    /* A client (a notebook, a driver process) names no cluster: it may run sessions on this
     * task's master, which the request handler enforces. The secret, if any, it proved. */
    if (all_zero(c->cluster, 32) && rill__is_client_identity(c->task)) {
        pthread_mutex_lock(&t->id_mu);
        memcpy(run, t->id.run, 16);
        pthread_mutex_unlock(&t->id_mu);
        return true;
    }
    char spec[600];
    size_t n = rill_cluster_spec_to_string(t->cluster, spec, sizeof spec);
    if (n >= sizeof spec) snprintf(spec + sizeof spec - 5, 5, "...}");
    pthread_mutex_lock(&t->id_mu);
    bool same = memcmp(c->cluster, t->id.cluster, 32) == 0;
    pthread_mutex_unlock(&t->id_mu);
    if (!same) {
        if (all_zero(c->cluster, 32))
            rill_status_set(why, RILL_PERMISSION_DENIED,
                            "only tasks of this cluster (%s) may connect, and the client named "
                            "no cluster",
                            spec);
        else
            rill_status_set(why, RILL_FAILED_PRECONDITION,
                            "the client (%s) is a task of another cluster: its cluster spec is "
                            "not this task's (%s)",
                            c->task[0] ? c->task : "no task", spec);
        return false;
    }
    rill_device_name dn;
    int ntasks = 0;
    if (!c->task[0] || !rill_device_name_parse(c->task, &dn, NULL) || !dn.has_job ||
        !dn.has_task || rill_cluster_spec_task_address(t->cluster, dn.job, dn.task, NULL) == NULL)
        ntasks = -1;
    if (ntasks < 0) {
        rill_status_set(why, RILL_PERMISSION_DENIED,
                        "the client names no task of this cluster (%s): '%s'", spec, c->task);
        return false;
    }
    char theirs[17], ours[17];
    pthread_mutex_lock(&t->id_mu);
    bool ok = true;
    if (t->run_known && !all_zero(c->run, 16) && memcmp(c->run, t->id.run, 16) != 0) {
        run_hex(c->run, theirs);
        run_hex(t->id.run, ours);
        rill_status_set(why, RILL_FAILED_PRECONDITION,
                        "%s (%s) belongs to another run of this cluster: its run is %s, and this "
                        "task (/job:%s/task:%d) serves run %s (%s). Is an earlier job still "
                        "running on these ports? The tasks of one job must share a run id: "
                        "give them the same RILL_JOB_ID (Slurm and mpirun give one), or restart "
                        "the whole cluster",
                        c->task, "its run id differs", theirs, t->job, t->index, ours,
                        t->run_from);
        ok = false;
    }
    bool adopt = ok && !t->run_known && !all_zero(c->run, 16);
    if (ok) memcpy(run, t->run_known ? t->id.run : c->run, 16);
    pthread_mutex_unlock(&t->id_mu);
    if (adopt) adopt_run(t, c->run, c->task); /* unless another client's came first */
    return ok;
}

void rill__local_task_client_options(const rill__local_task *t, rill__tcp_options *o)
{
    memset(o, 0, sizeof *o);
    if (t->opts.secret) {
        o->secret = t->opts.secret;
        o->secret_len = strlen(t->opts.secret);
    }
    o->encrypt = t->opts.encrypt;
    pthread_mutex_lock((pthread_mutex_t *)&t->id_mu);
    o->identity = t->id;
    pthread_mutex_unlock((pthread_mutex_t *)&t->id_mu);
}

rill__channel *rill__local_task_connect(rill__local_task *t, const char *addr, double deadline_s,
                                        rill_status *s)
{
    rill__tcp_options o;
    pthread_mutex_lock(&t->id_mu);
    bool known = t->run_known;
    pthread_mutex_unlock(&t->id_mu);
    bool to_chief = t->chief_addr && strcmp(addr, t->chief_addr) == 0;
    bool from_anyone = to_chief;
    if (!known && !to_chief && t->chief_addr) {
        /* From the chief, not from whoever answers first: a task of another job still serving
         * on these ports would hand it its own run. */
        rill__local_task_client_options(t, &o);
        rill__channel *ch = rill__tcp_connect(t->chief_addr, &o, deadline_s, s);
        rill_code code = ch ? RILL_OK : rill_status_code(s);
        if (ch) {
            adopt_run(t, rill__channel_peer_run(ch), t->chief_name);
            rill__channel_close(ch);
        } else if (code == RILL_UNAVAILABLE || code == RILL_DEADLINE_EXCEEDED) {
            /* The chief is gone (it finished before this task started): the run is the one the
             * task it connects to serves. Ambiguous (another job's task would do the same), so
             * said out loud, with how to make it not. */
            rill__log(RILL_LOG_WARNING,
                      "/job:%s/task:%d: the chief %s (%s) does not answer (%s); joining the run "
                      "of the task at %s instead. Give the tasks of a job one run id "
                      "(RILL_JOB_ID, --run_id) to make sure it is this job's",
                      t->job, t->index, t->chief_name, t->chief_addr, rill_status_message(s), addr);
            rill_status_clear(s);
            from_anyone = true;
        } else {
            char why[1024];
            snprintf(why, sizeof why, "%s", rill_status_message(s));
            rill_status_set(s, code,
                            "learning the run id from the chief %s (%s) before connecting to "
                            "%s: %s",
                            t->chief_name, t->chief_addr, addr, why);
            return NULL;
        }
    }
    rill__local_task_client_options(t, &o);
    rill__channel *ch = rill__tcp_connect(addr, &o, deadline_s, s);
    if (ch && !known && from_anyone) adopt_run(t, rill__channel_peer_run(ch), addr);
    return ch;
}

void rill__send_cancel(rill__channel *ch, uint64_t owner)
{
    if (!ch) return;
    rill_status *s = rill_status_new();
    rill__mbuf q = {0};
    rill__mbuf_u32(&q, RILL__RPC_CANCEL);
    rill__mbuf_u64(&q, owner);
    rill__reply rep = {0};
    rill__channel_call(ch, RILL__MSG_REQUEST, q.p, (uint32_t)q.n, NULL, 0, &rep, 5, s);
    if (rep.payload_owned) rill__aligned_free(rep.payload, rep.payload_len);
    rill__mbuf_free(&q);
    rill__channel_close(ch);
    rill_status_free(s);
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
