/* test_finish.c - jobs that end (rill_server_report_finished, rill_server_join): real servers on
 * loopback in this process. Two workers train on a ps and then report: the ps's join returns only
 * once both have (a second report of the same task does not count twice); join_forever (the
 * option, or RILL_PS_JOIN_FOREVER=1) keeps serving until stopped, and a malformed
 * RILL_PS_JOIN_FOREVER is refused; every ps of a cluster is told; a "chief" job counts as a worker
 * job; a worker that goes away without reporting never counts; reports that name no training task
 * of the cluster, or are malformed, are refused and change nothing; a ps that is not there makes
 * the report fail within its deadline naming the ps; with a cluster secret the report goes
 * through. A worker that starts after another one finished and went away trains with TF's device
 * filters (it fails without them, naming the task that is gone). */
#include "distributed/master.h"
#include "distributed/rpc.h"
#include "distributed/transport.h"
#include "distributed/wire.h"
#include "net.h"
#include "test.h"

#include <rill/rill.h>

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "127.0.0.1:p1,127.0.0.1:p2,..." of n free ports. */
static void hosts(char *out, size_t cap, int n)
{
    size_t k = 0;
    out[0] = 0;
    for (int i = 0; i < n && k < cap; i++)
        k += (size_t)snprintf(out + k, cap - k, "%s127.0.0.1:%d", i ? "," : "", test_free_port());
}

/* --- a ps's join on a thread of its own, watched with deadlines --- */

typedef struct joiner {
    rill_server *srv;
    pthread_t th;
    atomic_bool returned;
    rill_code code;
} joiner;

static void *join_main(void *arg)
{
    joiner *j = arg;
    rill_status *s = rill_status_new();
    j->code = rill_server_join(j->srv, s);
    rill_status_free(s);
    atomic_store(&j->returned, true);
    return NULL;
}

static void join_start(joiner *j, rill_server *srv)
{
    j->srv = srv;
    atomic_init(&j->returned, false);
    j->code = RILL_UNKNOWN;
    pthread_create(&j->th, NULL, join_main, j);
}

/* Whether join returned within secs. */
static bool join_returns_within(joiner *j, double secs)
{
    double end = mono_now() + secs;
    while (!atomic_load(&j->returned) && mono_now() < end) usleep(5 * 1000);
    return atomic_load(&j->returned);
}

/* Stops the server if join still waits, and reaps the thread. */
static void join_end(joiner *j)
{
    if (!atomic_load(&j->returned)) rill_server_stop(j->srv);
    pthread_join(j->th, NULL);
}

/* --- the model the workers train: y = 2x + 10, variables on the ps --- */

typedef struct model {
    rill_graph *g;
    rill_output x, y, w, gs, loss;
    rill_node *train, *init;
    rill_replica_device_setter *setter;
    rill_optimizer *opt;
} model;

static void build(model *m, const char *worker_device)
{
    rill_status *s = rill_status_new();
    m->g = rill_graph_new();
    m->setter =
        rill_replica_device_setter_new(1, NULL, worker_device, true, RILL_PS_ROUND_ROBIN, s);
    rill_graph_push_device_fn(m->g, rill_replica_device_setter_fn, m->setter);
    m->gs = rill_train_get_or_create_global_step(m->g);
    m->x = rill_placeholder(m->g, RILL_FLOAT, rill_shape_unknown(), "input");
    m->y = rill_placeholder(m->g, RILL_FLOAT, rill_shape_unknown(), "label");
    m->w = rill_get_variable(m->g, "weight", RILL_FLOAT, rill_shape_vector(1),
                             rill_random_normal_initializer(0, 1, 1), true);
    rill_output b = rill_get_variable(m->g, "biase", RILL_FLOAT, rill_shape_vector(1),
                                      rill_random_normal_initializer(0, 1, 2), true);
    rill_output pred = rill_add(m->g, rill_mul(m->g, m->x, m->w, NULL), b, NULL);
    m->loss = rill_square(m->g, rill_sub(m->g, m->y, pred, NULL), NULL);
    m->opt = rill_gradient_descent_optimizer_new(0.02);
    m->train = rill_optimizer_minimize(m->opt, m->g, m->loss, m->gs, NULL);
    m->init = rill_global_variables_initializer(m->g, NULL);
    rill_graph_pop_device(m->g);
    CHECK(rill_graph_ok(m->g));
    rill_status_free(s);
}

static void unbuild(model *m)
{
    rill_graph_free(m->g);
    rill_replica_device_setter_free(m->setter);
    rill_optimizer_free(m->opt);
}

/* Trains `steps` steps on srv's session (the chief initialises first); the last global step, or
 * -1. The session is closed before returning, as a worker closes its sessions before it reports. */
static int64_t train_filtered(rill_server *srv, const char *worker_device, bool chief, int steps,
                              bool filtered, rill_status *s)
{
    model m;
    build(&m, worker_device);
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_target(o, rill_server_target(srv));
    const char *filters[] = {"/job:ps", worker_device};
    if (filtered) rill_session_options_set_device_filters(o, filters, 2);
    rill_session *sess = rill_session_new(m.g, o, s);
    rill_session_options_free(o);
    int64_t last = -1;
    if (sess && (!chief || CHECK(rill_session_run_targets(sess, &m.init, 1, s) == RILL_OK))) {
        rill_tensor *xv = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
        rill_tensor *yv = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
        rill_output f[] = {m.x, m.y};
        rill_tensor *fv[] = {xv, yv};
        rill_output fe[] = {rill_node_output(m.train, 0), m.loss};
        unsigned seed = 7;
        for (int i = 0; i < steps; i++) {
            float x = (float)(rand_r(&seed) % 2000) / 1000.0f - 1.0f;
            ((float *)rill_tensor_data(xv))[0] = x;
            ((float *)rill_tensor_data(yv))[0] = 2 * x + 10;
            rill_tensor *out[2] = {NULL, NULL};
            if (!CHECK(rill_session_run(sess, f, fv, 2, fe, out, 2, NULL, 0, s) == RILL_OK)) {
                fprintf(stderr, "  step %d: %s\n", i, rill_status_message(s));
                break;
            }
            last = *(int64_t *)rill_tensor_data(out[0]);
            rill_tensor_free(out[0]);
            rill_tensor_free(out[1]);
        }
        rill_tensor_free(xv);
        rill_tensor_free(yv);
    }
    rill_session_free(sess);
    unbuild(&m);
    return last;
}

static int64_t train_on(rill_server *srv, const char *worker_device, bool chief, int steps)
{
    rill_status *s = rill_status_new();
    int64_t last = train_filtered(srv, worker_device, chief, steps, false, s);
    if (!rill_status_ok(s)) fprintf(stderr, "  %s\n", rill_status_message(s));
    rill_status_free(s);
    return last;
}

/* A cluster of nps ps tasks and nw workers on loopback, all in this process. */
typedef struct cluster {
    rill_cluster_spec *spec;
    rill_server *ps[2], *w[2];
    int nps, nw;
} cluster;

static bool cluster_start(cluster *c, int nps, int nw, const rill_server_options *o)
{
    memset(c, 0, sizeof *c);
    c->nps = nps;
    c->nw = nw;
    char ph[128], wh[128];
    hosts(ph, sizeof ph, nps);
    hosts(wh, sizeof wh, nw);
    rill_status *s = rill_status_new();
    c->spec = rill_cluster_spec_from_hosts(ph, wh, s);
    bool ok = c->spec != NULL;
    for (int i = 0; ok && i < nps; i++) ok = (c->ps[i] = rill_server_new(c->spec, "ps", i, o, s));
    for (int i = 0; ok && i < nw; i++) ok = (c->w[i] = rill_server_new(c->spec, "worker", i, o, s));
    if (!CHECK(ok)) fprintf(stderr, "  %s\n", rill_status_message(s));
    rill_status_free(s);
    return ok;
}

static void cluster_stop(cluster *c)
{
    for (int i = 0; i < 2; i++) rill_server_free(c->w[i]);
    for (int i = 0; i < 2; i++) rill_server_free(c->ps[i]);
    rill_cluster_spec_free(c->spec);
}

static rill_code report(rill_server *srv)
{
    rill_status *s = rill_status_new();
    rill_code code = rill_server_report_finished(srv, s);
    if (code != RILL_OK) fprintf(stderr, "  report: %s\n", rill_status_message(s));
    rill_status_free(s);
    return code;
}

/* How long a join that must not return is watched. */
#define STAYS_S 0.3

static void test_ps_returns_when_both_workers_finished(void)
{
    cluster c;
    if (!cluster_start(&c, 1, 2, NULL)) goto out;
    joiner j;
    join_start(&j, c.ps[0]);
    int total = -1;
    CHECK_EQ_INT(rill_server_finished_tasks(c.ps[0], &total), 0);
    CHECK_EQ_INT(total, 2);
    CHECK(train_on(c.w[0], "/job:worker/task:0", true, 200) >= 200);
    CHECK_EQ_INT(report(c.w[0]), RILL_OK);
    /* The ps recorded it before answering. */
    CHECK_EQ_INT(rill_server_finished_tasks(c.ps[0], NULL), 1);
    CHECK(!join_returns_within(&j, STAYS_S)); /* one worker still to come */
    CHECK_EQ_INT(report(c.w[0]), RILL_OK);    /* a second report of the same task */
    CHECK_EQ_INT(rill_server_finished_tasks(c.ps[0], NULL), 1);
    CHECK(!join_returns_within(&j, STAYS_S));
    /* The other worker still trains on the ps meanwhile, then reports. */
    CHECK(train_on(c.w[1], "/job:worker/task:1", false, 100) >= 300);
    double t0 = mono_now();
    CHECK_EQ_INT(report(c.w[1]), RILL_OK);
    CHECK(join_returns_within(&j, 10));
    printf("join returned %.3f s after the last report\n", mono_now() - t0);
    CHECK_EQ_INT(j.code, RILL_OK);
    CHECK_EQ_INT(rill_server_finished_tasks(c.ps[0], &total), 2);
    join_end(&j);
out:
    cluster_stop(&c);
}

static void test_join_forever(void)
{
    /* The option: every worker reports, and join serves on until stopped. */
    rill_server_options o = {.join_forever = true};
    cluster c;
    if (cluster_start(&c, 1, 2, &o)) {
        joiner j;
        join_start(&j, c.ps[0]);
        CHECK_EQ_INT(report(c.w[0]), RILL_OK);
        CHECK_EQ_INT(report(c.w[1]), RILL_OK);
        CHECK_EQ_INT(rill_server_finished_tasks(c.ps[0], NULL), 2);
        CHECK(!join_returns_within(&j, STAYS_S));
        rill_server_stop(c.ps[0]);
        CHECK(join_returns_within(&j, 5));
        join_end(&j);
    }
    cluster_stop(&c);
    /* RILL_PS_JOIN_FOREVER=1 sets it where the program has no flag for it (Python's seed). */
    setenv("RILL_PS_JOIN_FOREVER", "1", 1);
    if (cluster_start(&c, 1, 1, NULL)) {
        joiner j;
        join_start(&j, c.ps[0]);
        CHECK_EQ_INT(report(c.w[0]), RILL_OK);
        CHECK_EQ_INT(rill_server_finished_tasks(c.ps[0], NULL), 1);
        CHECK(!join_returns_within(&j, STAYS_S));
        join_end(&j);
    }
    cluster_stop(&c);
    /* ... and 0 is the default. */
    setenv("RILL_PS_JOIN_FOREVER", "0", 1);
    if (cluster_start(&c, 1, 1, NULL)) {
        joiner j;
        join_start(&j, c.ps[0]);
        CHECK_EQ_INT(report(c.w[0]), RILL_OK);
        CHECK(join_returns_within(&j, 10));
        join_end(&j);
    }
    cluster_stop(&c);
    /* A malformed value is refused, naming the variable and the value. */
    setenv("RILL_PS_JOIN_FOREVER", "yes", 1);
    rill_status *s = rill_status_new();
    rill_cluster_spec *spec = rill_cluster_spec_from_hosts("127.0.0.1:1", "127.0.0.1:2", s);
    rill_server *srv = rill_server_new(spec, "ps", 0, NULL, s);
    CHECK(srv == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "RILL_PS_JOIN_FOREVER");
    CHECK_STR_CONTAINS(rill_status_message(s), "\"yes\"");
    rill_server_free(srv);
    rill_cluster_spec_free(spec);
    rill_status_free(s);
    unsetenv("RILL_PS_JOIN_FOREVER");
}

static void test_every_ps_is_told(void)
{
    cluster c;
    if (!cluster_start(&c, 2, 1, NULL)) goto out;
    joiner j[2];
    join_start(&j[0], c.ps[0]);
    join_start(&j[1], c.ps[1]);
    CHECK_EQ_INT(report(c.w[0]), RILL_OK);
    CHECK(join_returns_within(&j[0], 10));
    CHECK(join_returns_within(&j[1], 10));
    join_end(&j[0]);
    join_end(&j[1]);
out:
    cluster_stop(&c);
}

/* TF_CONFIG's "chief" job trains too: the ps waits for it as for a worker. */
static void test_chief_job_counts(void)
{
    rill_status *s = rill_status_new();
    char ph[32], ch[32], wh[32];
    hosts(ph, sizeof ph, 1);
    hosts(ch, sizeof ch, 1);
    hosts(wh, sizeof wh, 1);
    const char *pa[] = {ph}, *ca[] = {ch}, *wa[] = {wh};
    rill_cluster_spec *spec = rill_cluster_spec_new();
    rill_cluster_spec_add_job(spec, "ps", pa, 1, s);
    rill_cluster_spec_add_job(spec, "chief", ca, 1, s);
    rill_cluster_spec_add_job(spec, "worker", wa, 1, s);
    rill_server *ps = rill_server_new(spec, "ps", 0, NULL, s);
    rill_server *chief = ps ? rill_server_new(spec, "chief", 0, NULL, s) : NULL;
    rill_server *w = chief ? rill_server_new(spec, "worker", 0, NULL, s) : NULL;
    if (CHECK(w != NULL)) {
        joiner j;
        join_start(&j, ps);
        int total = -1;
        rill_server_finished_tasks(ps, &total);
        CHECK_EQ_INT(total, 2);
        CHECK_EQ_INT(report(w), RILL_OK);
        CHECK(!join_returns_within(&j, STAYS_S));
        CHECK_EQ_INT(report(chief), RILL_OK);
        CHECK(join_returns_within(&j, 10));
        join_end(&j);
    } else {
        fprintf(stderr, "  %s\n", rill_status_message(s));
    }
    rill_server_free(w);
    rill_server_free(chief);
    rill_server_free(ps);
    rill_cluster_spec_free(spec);
    rill_status_free(s);
}

/* A worker that goes away (crashes, fails) says nothing: the ps serves on. */
static void test_worker_gone_never_counts(void)
{
    cluster c;
    if (!cluster_start(&c, 1, 2, NULL)) goto out;
    joiner j;
    join_start(&j, c.ps[0]);
    CHECK(train_on(c.w[1], "/job:worker/task:1", true, 20) >= 20);
    rill_server_free(c.w[1]);
    c.w[1] = NULL;
    CHECK_EQ_INT(report(c.w[0]), RILL_OK);
    CHECK_EQ_INT(rill_server_finished_tasks(c.ps[0], NULL), 1);
    CHECK(!join_returns_within(&j, STAYS_S));
    join_end(&j);
out:
    cluster_stop(&c);
}

/* FINISHED as a peer could send it by hand: the ps's answer, or its error in s. */
/* FINISHED for job:index, sent by task `as` (job:index) of c. */
static bool send_finished(const rill_cluster_spec *c, const char *as, const char *addr,
                          const char *job, int index, bool truncated, rill_status *s)
{
    rill__tcp_options o = {0};
    char asjob[64];
    int asindex = 0;
    sscanf(as, "%63[^:]:%d", asjob, &asindex);
    o.identity = rill__cluster_identity(c, asjob, asindex);
    memset(o.identity.run, 0, sizeof o.identity.run); /* not the chief's run: none */
    rill__channel *ch = rill__tcp_connect(addr, &o, 5, s);
    if (!ch) return false;
    rill__mbuf m = {0};
    rill__mbuf_u32(&m, RILL__RPC_FINISHED);
    if (!truncated) {
        rill__mbuf_str(&m, job);
        rill__mbuf_u32(&m, (uint32_t)index);
    }
    rill__reply rep = {0};
    bool ok = rill__channel_call(ch, RILL__MSG_REQUEST, m.p, (uint32_t)m.n, NULL, 0, &rep, 5, s);
    if (rep.payload_owned) rill__aligned_free(rep.payload, rep.payload_len);
    rill__mbuf_free(&m);
    rill__channel_close(ch);
    return ok;
}

static void test_bad_reports(void)
{
    cluster c;
    if (!cluster_start(&c, 1, 1, NULL)) goto out;
    rill_status *s = rill_status_new();
    /* Only training tasks report. */
    CHECK_EQ_INT(rill_server_report_finished(c.ps[0], s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "/job:ps/task:0");
    const char *addr = rill_cluster_spec_task_address(c.spec, "ps", 0, NULL);
    /* A task reports only for itself; a task that does not train, a truncated request. */
    CHECK(!send_finished(c.spec, "worker:0", addr, "worker", 7, false, s));
    CHECK_EQ_INT(rill_status_code(s), RILL_PERMISSION_DENIED);
    CHECK_STR_CONTAINS(rill_status_message(s), "cannot report that /job:worker/replica:0/task:7");
    CHECK(!send_finished(c.spec, "ps:0", addr, "worker", 0, false, s));
    CHECK_EQ_INT(rill_status_code(s), RILL_PERMISSION_DENIED);
    CHECK(!send_finished(c.spec, "ps:0", addr, "ps", 0, false, s));
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK(!send_finished(c.spec, "worker:0", addr, NULL, 0, true, s));
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "malformed FINISHED");
    CHECK_EQ_INT(rill_server_finished_tasks(c.ps[0], NULL), 0);
    /* The real one still counts. */
    CHECK(send_finished(c.spec, "worker:0", addr, "worker", 0, false, s));
    CHECK_EQ_INT(rill_server_finished_tasks(c.ps[0], NULL), 1);
    rill_status_free(s);
out:
    cluster_stop(&c);
}

static void test_ps_not_there(void)
{
    char ph[32], wh[32];
    hosts(ph, sizeof ph, 1); /* nothing will listen there */
    hosts(wh, sizeof wh, 1);
    rill_status *s = rill_status_new();
    rill_cluster_spec *spec = rill_cluster_spec_from_hosts(ph, wh, s);
    rill_server_options o = {.connect_deadline_s = 1};
    rill_server *w = rill_server_new(spec, "worker", 0, &o, s);
    if (CHECK(w != NULL)) {
        double t0 = mono_now();
        rill_code code = rill_server_report_finished(w, s);
        double dt = mono_now() - t0;
        printf("report to a ps that is not there: %.2f s: %s\n", dt, rill_status_message(s));
        CHECK(code == RILL_UNAVAILABLE || code == RILL_DEADLINE_EXCEEDED);
        CHECK_STR_CONTAINS(rill_status_message(s), "/job:ps/task:0");
        CHECK_STR_CONTAINS(rill_status_message(s), ph);
        CHECK(dt < 5);
    }
    rill_server_free(w);
    rill_cluster_spec_free(spec);
    rill_status_free(s);
}

static void test_with_a_secret(void)
{
    rill_server_options o = {.secret = "0123456789abcdef0123456789abcdef-finish"};
    cluster c;
    if (!cluster_start(&c, 1, 1, &o)) goto out;
    joiner j;
    join_start(&j, c.ps[0]);
    /* A stranger's report is refused at the handshake and does not count. */
    rill_status *s = rill_status_new();
    CHECK(!send_finished(c.spec, "worker:0", rill_cluster_spec_task_address(c.spec, "ps", 0, NULL),
                         "worker", 0, false, s));
    CHECK_EQ_INT(rill_status_code(s), RILL_UNAUTHENTICATED);
    CHECK_EQ_INT(rill_server_finished_tasks(c.ps[0], NULL), 0);
    rill_status_free(s);
    CHECK_EQ_INT(report(c.w[0]), RILL_OK);
    CHECK(join_returns_within(&j, 10));
    join_end(&j);
out:
    cluster_stop(&c);
}

/* A worker that starts after another one finished and went away: without device filters its
 * session looks for every task and fails naming the one that is gone; with TF's filters
 * ("/job:ps" and itself) it trains. Bad filters are refused. */
static void test_late_worker_with_device_filters(void)
{
    rill_server_options o = {.connect_deadline_s = 1};
    cluster c;
    if (!cluster_start(&c, 1, 2, &o)) goto out;
    rill_status *s = rill_status_new();
    CHECK(train_filtered(c.w[0], "/job:worker/task:0", true, 50, true, s) >= 50);
    CHECK_EQ_INT(report(c.w[0]), RILL_OK);
    rill_server_free(c.w[0]); /* worker 0 is done and gone */
    c.w[0] = NULL;
    const char *gone = rill_cluster_spec_task_address(c.spec, "worker", 0, NULL);
    CHECK(train_filtered(c.w[1], "/job:worker/task:1", false, 10, false, s) < 0);
    CHECK_EQ_INT(rill_status_code(s), RILL_UNAVAILABLE);
    CHECK_STR_CONTAINS(rill_status_message(s), gone);
    rill_status_clear(s);
    CHECK(train_filtered(c.w[1], "/job:worker/task:1", false, 10, true, s) >= 60);
    if (!rill_status_ok(s)) fprintf(stderr, "  %s\n", rill_status_message(s));
    /* A node on a task the filters leave out fails at the first run, naming it and the task. */
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/job:worker/task:0");
    rill_output on_gone = rill_const_float(g, 1, "on_worker0");
    rill_graph_pop_device(g);
    rill_session_options *fo = rill_session_options_new();
    rill_session_options_set_target(fo, rill_server_target(c.w[1]));
    const char *filters[] = {"/job:ps", "/job:worker/task:1"};
    rill_session_options_set_device_filters(fo, filters, 2);
    rill_session *fs = rill_session_new(g, fo, s);
    if (CHECK(fs != NULL)) {
        rill_tensor *t = NULL;
        CHECK_EQ_INT(rill_session_run(fs, NULL, NULL, 0, &on_gone, &t, 1, NULL, 0, s),
                     RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), "'on_worker0'");
        CHECK_STR_CONTAINS(rill_status_message(s), "'/job:worker/task:0'");
        CHECK_STR_CONTAINS(rill_status_message(s), "/job:worker/replica:0/task:1/device:CPU:0");
        CHECK_STR_CONTAINS(rill_status_message(s), "device_filters");
    }
    rill_session_free(fs);
    rill_session_options_free(fo);
    rill_graph_free(g);
    /* Filters that do not parse, or too many. */
    model m;
    build(&m, "/job:worker/task:1");
    rill_session_options *so = rill_session_options_new();
    rill_session_options_set_target(so, rill_server_target(c.w[1]));
    const char *bad[] = {"/job:ps", "/jobb:worker"};
    rill_session_options_set_device_filters(so, bad, 2);
    rill_session *sess = rill_session_new(m.g, so, s);
    CHECK(sess == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "device filter 1: Malformed device specification");
    const char *many[RILL_MAX_DEVICE_FILTERS + 1];
    for (int i = 0; i <= RILL_MAX_DEVICE_FILTERS; i++) many[i] = "/job:ps";
    rill_session_options_set_device_filters(so, many, RILL_MAX_DEVICE_FILTERS + 1);
    sess = rill_session_new(m.g, so, s);
    CHECK(sess == NULL);
    CHECK_STR_CONTAINS(rill_status_message(s), "at most 16 are supported");
    rill_session_free(sess);
    rill_session_options_free(so);
    unbuild(&m);
    rill_status_free(s);
out:
    cluster_stop(&c);
}

/* A non-chief whose chief never initialises the model waits for it, and says what is not
 * ready, which task holds it and that this task answers (it ran the check); the ps is there, so
 * what is missing is the chief's init. */
static void test_non_chief_names_what_it_waits_for(void)
{
    cluster c;
    if (!cluster_start(&c, 1, 2, NULL)) goto out;
    rill_status *s = rill_status_new();
    model m;
    build(&m, "/job:worker/task:1");
    rill_supervisor_options o = RILL_SUPERVISOR_OPTIONS_INIT;
    o.is_chief = false;
    o.max_wait_secs = 1;
    o.recovery_wait_secs = 0.2;
    rill_supervisor *sv = rill_supervisor_new(m.g, &o, s);
    rill_session_options *so = rill_session_options_new();
    rill_session_options_set_target(so, rill_server_target(c.w[1]));
    rill_session *sess = sv ? rill_supervisor_prepare_or_wait_for_session(sv, so, s) : NULL;
    CHECK(sess == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_DEADLINE_EXCEEDED);
    CHECK_STR_CONTAINS(rill_status_message(s), "Not ready: ");
    CHECK_STR_CONTAINS(rill_status_message(s), "uninitialized value");
    CHECK_STR_CONTAINS(rill_status_message(s),
                       "(on /job:ps/task:0, which answers: it ran the check)");
    rill_session_options_free(so);
    rill_supervisor_free(sv);
    unbuild(&m);
    rill_status_free(s);
out:
    cluster_stop(&c);
}

int main(void)
{
    /* The CPU only: with PoCL standing in for a GPU, this model's training step fails today
     * ("Duplicate node name in graph: 'weight/_0'", the partitioner; examples/distributed fails
     * so too), which is not what this test is about. */
    setenv("RILL_OPENCL_CPU_AS_GPU", "0", 1);
    unsetenv("RILL_PS_JOIN_FOREVER");
    unsetenv("RILL_CLUSTER_SECRET_FILE");
    test_ps_returns_when_both_workers_finished();
    test_join_forever();
    test_every_ps_is_told();
    test_chief_job_counts();
    test_worker_gone_never_counts();
    test_bad_reports();
    test_ps_not_there();
    test_with_a_secret();
    test_late_worker_with_device_filters();
    test_non_chief_names_what_it_waits_for();
    TEST_MAIN_END();
}
