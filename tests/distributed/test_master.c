/* test_master.c - the distributed runtime in one process over real loopback sockets: servers for
 * a ps and workers, sessions on a worker's target whose variables live on the ps, asynchronous
 * training by two workers at once, the local server, and the errors a user meets (a task that
 * never comes up, a ps that goes away mid-run). */
#include <rill/rill.h>

#include "net.h"
#include "test.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct model {
    rill_graph *g;
    rill_output x, y, w, b, loss, gs;
    rill_node *train, *init;
    rill_replica_device_setter *setter;
    rill_optimizer *opt;
} model;

static void build(model *m, int worker)
{
    rill_status *s = rill_status_new();
    char wd[64];
    snprintf(wd, sizeof wd, "/job:worker/task:%d", worker);
    m->g = rill_graph_new();
    m->setter = rill_replica_device_setter_new(1, NULL, wd, true, RILL_PS_ROUND_ROBIN, s);
    rill_graph_push_device_fn(m->g, rill_replica_device_setter_fn, m->setter);
    m->gs = rill_train_get_or_create_global_step(m->g);
    m->x = rill_placeholder(m->g, RILL_FLOAT, rill_shape_unknown(), "input");
    m->y = rill_placeholder(m->g, RILL_FLOAT, rill_shape_unknown(), "label");
    m->w = rill_get_variable(m->g, "weight", RILL_FLOAT, rill_shape_vector(1),
                             rill_random_normal_initializer(0, 1, 1), true);
    m->b = rill_get_variable(m->g, "biase", RILL_FLOAT, rill_shape_vector(1),
                             rill_random_normal_initializer(0, 1, 2), true);
    rill_output pred = rill_add(m->g, rill_mul(m->g, m->x, m->w, NULL), m->b, NULL);
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

static rill_session *session_on(rill_server *srv, rill_graph *g, rill_status *s)
{
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_target(o, rill_server_target(srv));
    rill_session *sess = rill_session_new(g, o, s);
    rill_session_options_free(o);
    return sess;
}

/* steps of y = 2x + 10; returns the last global step (or -1). */
static int64_t train(rill_session *sess, model *m, int steps, unsigned seed)
{
    rill_status *s = rill_status_new();
    rill_tensor *xv = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    rill_tensor *yv = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    rill_output f[] = {m->x, m->y};
    rill_tensor *fv[] = {xv, yv};
    rill_output fe[] = {m->loss, rill_node_output(m->train, 0)};
    int64_t last = -1;
    for (int i = 0; i < steps; i++) {
        float x = (float)(rand_r(&seed) % 2000) / 1000.0f - 1.0f;
        ((float *)rill_tensor_data(xv))[0] = x;
        ((float *)rill_tensor_data(yv))[0] = 2 * x + 10;
        rill_tensor *out[2];
        if (rill_session_run(sess, f, fv, 2, fe, out, 2, NULL, 0, s) != RILL_OK) {
            fprintf(stderr, "step %d: %s\n", i, rill_status_message(s));
            break;
        }
        last = *(int64_t *)rill_tensor_data(out[1]);
        rill_tensor_free(out[0]);
        rill_tensor_free(out[1]);
    }
    rill_tensor_free(xv);
    rill_tensor_free(yv);
    rill_status_free(s);
    return last;
}

static void read_wb(rill_session *sess, model *m, float *w, float *b)
{
    rill_status *s = rill_status_new();
    rill_output o[] = {m->w, m->b};
    rill_tensor *v[2];
    *w = *b = -999;
    if (CHECK(rill_session_run(sess, NULL, NULL, 0, o, v, 2, NULL, 0, s) == RILL_OK)) {
        *w = *(float *)rill_tensor_data(v[0]);
        *b = *(float *)rill_tensor_data(v[1]);
        rill_tensor_free(v[0]);
        rill_tensor_free(v[1]);
    }
    rill_status_free(s);
}

typedef struct worker_job {
    rill_server *srv;
    model m;
    int steps;
    unsigned seed;
    int64_t last;
} worker_job;

static void *worker_thread(void *arg)
{
    worker_job *j = arg;
    rill_status *s = rill_status_new();
    rill_session *sess = session_on(j->srv, j->m.g, s);
    j->last = sess ? train(sess, &j->m, j->steps, j->seed) : -1;
    rill_session_free(sess);
    rill_status_free(s);
    return NULL;
}

/* 1 ps and 2 workers on loopback ports, in this process. */
typedef struct trio {
    rill_cluster_spec *c;
    rill_server *ps, *w[2];
} trio;

static bool trio_start(trio *t, rill_status *s)
{
    char ps[32], w0[32], w1[32], workers[80];
    snprintf(ps, sizeof ps, "127.0.0.1:%d", test_free_port());
    snprintf(w0, sizeof w0, "127.0.0.1:%d", test_free_port());
    snprintf(w1, sizeof w1, "127.0.0.1:%d", test_free_port());
    snprintf(workers, sizeof workers, "%s,%s", w0, w1);
    memset(t, 0, sizeof *t);
    t->c = rill_cluster_spec_from_hosts(ps, workers, s);
    t->ps = t->c ? rill_server_new(t->c, "ps", 0, NULL, s) : NULL;
    t->w[0] = t->ps ? rill_server_new(t->c, "worker", 0, NULL, s) : NULL;
    t->w[1] = t->w[0] ? rill_server_new(t->c, "worker", 1, NULL, s) : NULL;
    if (!CHECK(t->w[1] != NULL)) fprintf(stderr, "  %s\n", rill_status_message(s));
    return t->w[1] != NULL;
}

static void trio_stop(trio *t)
{
    rill_server_free(t->w[1]);
    rill_server_free(t->w[0]);
    rill_server_free(t->ps);
    rill_cluster_spec_free(t->c);
}

static void test_async_two_workers(void)
{
    rill_status *s = rill_status_new();
    trio tr;
    if (!trio_start(&tr, s)) {
        trio_stop(&tr);
        rill_status_free(s);
        return;
    }
    rill_server *s0 = tr.w[0], *s1 = tr.w[1];
    worker_job j[2] = {{.srv = s0, .steps = 1500, .seed = 1}, {.srv = s1, .steps = 1500, .seed = 2}};
    build(&j[0].m, 0);
    build(&j[1].m, 1);
    /* The chief initialises the variables on the ps. */
    rill_session *chief = session_on(s0, j[0].m.g, s);
    CHECK(chief != NULL);
    CHECK(rill_session_run_targets(chief, &j[0].m.init, 1, s) == RILL_OK);
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, worker_thread, &j[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    float w, b;
    read_wb(chief, &j[0].m, &w, &b);
    printf("async, 2 workers x 1500 steps: weight %f biase %f, last steps %lld %lld\n", w, b,
           (long long)j[0].last, (long long)j[1].last);
    CHECK_NEAR(w, 2.0, 0.1);
    CHECK_NEAR(b, 10.0, 0.3);
    /* Every update was applied on the ps: the global step counts both workers' steps. */
    CHECK(j[0].last == 3000 || j[1].last == 3000);
    /* The variables live on the ps for its whole life: a new session sees them trained. */
    rill_session *again = session_on(s1, j[1].m.g, s);
    read_wb(again, &j[1].m, &w, &b);
    CHECK_NEAR(w, 2.0, 0.1);
    rill_session_free(again);
    /* The ps goes away: the next step names it. */
    rill_server_free(tr.ps);
    tr.ps = NULL;
    rill_tensor *t = NULL;
    rill_code code = rill_session_run(chief, NULL, NULL, 0, &j[0].m.w, &t, 1, NULL, 0, s);
    CHECK(code == RILL_UNAVAILABLE || code == RILL_DEADLINE_EXCEEDED);
    CHECK_STR_CONTAINS(rill_status_message(s), "/job:ps");
    rill_session_free(chief);
    for (int i = 0; i < 2; i++) unbuild(&j[i].m);
    trio_stop(&tr);
    rill_status_free(s);
}

/* Steps run at once on one cluster session: N threads train asynchronously through the same
 * session (Hogwild-style); every step's update reaches the ps, so the global step counts exactly
 * N x steps, and the model converges. Nothing holds a step up for another (each takes a
 * connection of its own from the task's pool; the master's lock covers placement and the
 * signature table only). */
typedef struct shared_job {
    rill_session *sess;
    model *m;
    int steps;
    unsigned seed;
    int64_t last;
} shared_job;

static void *shared_thread(void *arg)
{
    shared_job *j = arg;
    j->last = train(j->sess, j->m, j->steps, j->seed);
    return NULL;
}

static void test_concurrent_steps(void)
{
    enum { NT = 4, STEPS = 400 };
    rill_status *s = rill_status_new();
    char ps[32], w0[32];
    snprintf(ps, sizeof ps, "127.0.0.1:%d", test_free_port());
    snprintf(w0, sizeof w0, "127.0.0.1:%d", test_free_port());
    rill_cluster_spec *c = rill_cluster_spec_from_hosts(ps, w0, s);
    rill_server *sp = c ? rill_server_new(c, "ps", 0, NULL, s) : NULL;
    rill_server *sw = sp ? rill_server_new(c, "worker", 0, NULL, s) : NULL;
    if (!CHECK(sp && sw)) {
        fprintf(stderr, "%s\n", rill_status_message(s));
        goto out;
    }
    model m;
    build(&m, 0);
    rill_session *sess = session_on(sw, m.g, s);
    if (CHECK(sess != NULL) && CHECK(rill_session_run_targets(sess, &m.init, 1, s) == RILL_OK)) {
        shared_job j[NT];
        pthread_t th[NT];
        double t0 = mono_now();
        for (int i = 0; i < NT; i++) {
            j[i] = (shared_job){sess, &m, STEPS, (unsigned)i + 11, -1};
            pthread_create(&th[i], NULL, shared_thread, &j[i]);
        }
        int64_t top = 0;
        for (int i = 0; i < NT; i++) {
            pthread_join(th[i], NULL);
            CHECK(j[i].last > 0);
            if (j[i].last > top) top = j[i].last;
        }
        double took = mono_now() - t0;
        CHECK_EQ_INT(top, NT * STEPS);
        rill_tensor *gv = NULL;
        CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &m.gs, &gv, 1, NULL, 0, s), RILL_OK);
        if (CHECK(gv != NULL)) CHECK_EQ_INT(*(int64_t *)rill_tensor_data(gv), NT * STEPS);
        rill_tensor_free(gv);
        float w, b;
        read_wb(sess, &m, &w, &b);
        printf("%d threads x %d steps on one cluster session: global step %lld in %.2f s, "
               "weight %f biase %f\n",
               NT, STEPS, (long long)top, took, w, b);
        CHECK_NEAR(w, 2.0, 0.1);
        CHECK_NEAR(b, 10.0, 0.3);
    }
    rill_session_free(sess);
    unbuild(&m);
out:
    rill_server_free(sw);
    rill_server_free(sp);
    rill_cluster_spec_free(c);
    rill_status_free(s);
}

/* Variables split over P = 1, 2 and 4 ps tasks (round robin), one worker: the remote runs of a
 * step's phase go to every ps at once. Training gives the same bits as the same graph trained
 * in a local session (the updates are independent per variable; only where they run changes),
 * and each variable lives on the ps task the setter chose (round robin after the global step). */
enum { SPLIT_VARS = 6, SPLIT_N = 96, SPLIT_STEPS = 60 };

static rill_graph *split_model(int ps_tasks, rill_output *vars, rill_node **train, rill_node **init)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_replica_device_setter *rs =
        ps_tasks ? rill_replica_device_setter_new(ps_tasks, NULL, "/job:worker/task:0", true,
                                                  RILL_PS_ROUND_ROBIN, s)
                 : NULL;
    if (rs) rill_graph_push_device_fn(g, rill_replica_device_setter_fn, rs);
    rill_output gs = rill_train_get_or_create_global_step(g);
    rill_output loss = {NULL, 0};
    for (int i = 0; i < SPLIT_VARS; i++) {
        char name[16];
        snprintf(name, sizeof name, "v%d", i);
        vars[i] = rill_get_variable(g, name, RILL_FLOAT, rill_shape_vector(SPLIT_N),
                                    rill_random_normal_initializer(0, 1, 100 + i), true);
        rill_output t = rill_const_scalar(g, RILL_FLOAT, i - 2.5, NULL);
        rill_output l = rill_sum(g, rill_square(g, rill_sub(g, vars[i], t, NULL), NULL), NULL, -1,
                                 false, NULL);
        loss = loss.node ? rill_add(g, loss, l, NULL) : l;
    }
    rill_optimizer *opt = rill_momentum_optimizer_new(0.01, 0.9, false);
    *train = rill_optimizer_minimize(opt, g, loss, gs, NULL);
    *init = rill_global_variables_initializer(g, NULL);
    if (rs) rill_graph_pop_device(g);
    CHECK(rill_graph_ok(g));
    rill_optimizer_free(opt);
    rill_replica_device_setter_free(rs);
    rill_status_free(s);
    return g;
}

/* Trains the split model; its variables' values after SPLIT_STEPS steps into out (caller frees). */
static bool train_split(rill_session *sess, rill_output *vars, rill_node *train, rill_node *init,
                        rill_tensor **out)
{
    rill_status *s = rill_status_new();
    bool ok = CHECK_EQ_INT(rill_session_run_targets(sess, &init, 1, s), RILL_OK);
    for (int i = 0; ok && i < SPLIT_STEPS; i++)
        ok = CHECK_EQ_INT(rill_session_run_targets(sess, &train, 1, s), RILL_OK);
    if (ok)
        ok = CHECK_EQ_INT(
            rill_session_run(sess, NULL, NULL, 0, vars, out, SPLIT_VARS, NULL, 0, s), RILL_OK);
    if (!ok) fprintf(stderr, "  %s\n", rill_status_message(s));
    rill_status_free(s);
    return ok;
}

static void test_split_over_ps(void)
{
    rill_output lv[SPLIT_VARS];
    rill_node *ltrain, *linit;
    rill_graph *lg = split_model(0, lv, &ltrain, &linit);
    rill_session *local = rill_session_new(lg, NULL, NULL);
    rill_tensor *want[SPLIT_VARS] = {0};
    bool have = CHECK(local != NULL) && train_split(local, lv, ltrain, linit, want);
    static const int ps_counts[] = {1, 2, 4};
    for (int pc = 0; have && pc < 3; pc++) {
        int P = ps_counts[pc];
        rill_status *s = rill_status_new();
        char hosts[256] = "", w0[32];
        for (int i = 0; i < P; i++) {
            size_t n = strlen(hosts);
            snprintf(hosts + n, sizeof hosts - n, "%s127.0.0.1:%d", i ? "," : "", test_free_port());
        }
        snprintf(w0, sizeof w0, "127.0.0.1:%d", test_free_port());
        rill_cluster_spec *c = rill_cluster_spec_from_hosts(hosts, w0, s);
        rill_server *ps[4] = {0}, *sw = NULL;
        bool up = c != NULL;
        for (int i = 0; up && i < P; i++) up = (ps[i] = rill_server_new(c, "ps", i, NULL, s)) != NULL;
        if (up) up = (sw = rill_server_new(c, "worker", 0, NULL, s)) != NULL;
        if (CHECK(up)) {
            rill_output vars[SPLIT_VARS];
            rill_node *train, *init;
            rill_graph *g = split_model(P, vars, &train, &init);
            for (int i = 0; i < SPLIT_VARS; i++) {
                char want_dev[32];
                /* the global step came first: it took task 0 */
                snprintf(want_dev, sizeof want_dev, "/job:ps/task:%d", (i + 1) % P);
                CHECK_EQ_STR(rill_node_requested_device(vars[i].node), want_dev);
            }
            rill_session *sess = session_on(sw, g, s);
            rill_tensor *got[SPLIT_VARS] = {0};
            double t0 = mono_now();
            if (CHECK(sess != NULL) && train_split(sess, vars, train, init, got)) {
                for (int i = 0; i < SPLIT_VARS; i++)
                    if (!CHECK(memcmp(rill_tensor_data(got[i]), rill_tensor_data(want[i]),
                                      SPLIT_N * sizeof(float)) == 0))
                        fprintf(stderr, "  %d ps: v%d differs from the local session's\n", P, i);
                printf("variables over %d ps task(s): %d steps in %.3f s, the local session's bits\n",
                       P, SPLIT_STEPS, mono_now() - t0);
            }
            for (int i = 0; i < SPLIT_VARS; i++) rill_tensor_free(got[i]);
            rill_session_free(sess);
            rill_graph_free(g);
        } else {
            fprintf(stderr, "  %d ps: %s\n", P, rill_status_message(s));
        }
        rill_server_free(sw);
        for (int i = 0; i < P; i++) rill_server_free(ps[i]);
        rill_cluster_spec_free(c);
        rill_status_free(s);
    }
    for (int i = 0; i < SPLIT_VARS; i++) rill_tensor_free(want[i]);
    rill_session_free(local);
    rill_graph_free(lg);
}

static void test_unreachable_ps(void)
{
    rill_status *s = rill_status_new();
    char ps[32], wk[32];
    snprintf(ps, sizeof ps, "127.0.0.1:%d", test_free_port()); /* nothing will listen there */
    snprintf(wk, sizeof wk, "127.0.0.1:%d", test_free_port());
    rill_cluster_spec *c = rill_cluster_spec_from_hosts(ps, wk, s);
    rill_server_options o = {.connect_deadline_s = 1};
    rill_server *sw = rill_server_new(c, "worker", 0, &o, s);
    model m;
    build(&m, 0);
    rill_session *sess = session_on(sw, m.g, s);
    CHECK(sess == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_UNAVAILABLE);
    CHECK_STR_CONTAINS(rill_status_message(s), "task /job:ps/replica:0/task:0");
    CHECK_STR_CONTAINS(rill_status_message(s), ps);
    rill_session_free(sess);
    unbuild(&m);
    rill_server_free(sw);
    rill_cluster_spec_free(c);
    rill_status_free(s);
}

static void test_local_server(void)
{
    rill_status *s = rill_status_new();
    rill_server *srv = rill_server_create_local(s);
    if (!CHECK(srv != NULL)) return;
    CHECK(strncmp(rill_server_target(srv), "rill://127.0.0.1:", 17) == 0);
    rill_graph *g = rill_graph_new();
    rill_tensor *hello = rill_tensor_scalar_string("Hello, distributed rill!");
    rill_output c = rill_const(g, hello, "hello");
    rill_tensor_free(hello);
    rill_session *sess = session_on(srv, g, s);
    rill_tensor *out = NULL;
    CHECK(sess && rill_session_run(sess, NULL, NULL, 0, &c, &out, 1, NULL, 0, s) == RILL_OK);
    if (out) {
        size_t len;
        const char *str = rill_tensor_get_string(out, 0, &len);
        CHECK(len == 24 && memcmp(str, "Hello, distributed rill!", 24) == 0);
    }
    rill_tensor_free(out);
    /* A target nobody answers: another process's master is waited for up to the connect
     * deadline, here the operation timeout; one that is no address is no target at all. */
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_target(o, "rill://127.0.0.1:1");
    rill_session_options_set_operation_timeout_ms(o, 300);
    CHECK(rill_session_new(g, o, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_UNAVAILABLE);
    CHECK_STR_CONTAINS(rill_status_message(s),
                       "the master at rill://127.0.0.1:1 did not come up within 0.3 s");
    rill_session_options_set_target(o, "local");
    CHECK(rill_session_new(g, o, s) == NULL);
    CHECK_STR_CONTAINS(rill_status_message(s), "No session factory registered");
    rill_session_options_free(o);
    rill_session_free(sess);
    rill_graph_free(g);
    rill_server_free(srv);
    rill_status_free(s);
}

/* A ps that hangs (alive but silent: SIGSTOP) mid-run is caught by the step deadline, and the
 * error names it; when it resumes, the next step reconnects and goes on. */
static void test_hung_ps(void)
{
    rill_status *s = rill_status_new();
    char ps[32], wk[32];
    snprintf(ps, sizeof ps, "127.0.0.1:%d", test_free_port());
    snprintf(wk, sizeof wk, "127.0.0.1:%d", test_free_port());
    rill_cluster_spec *c = rill_cluster_spec_from_hosts(ps, wk, s);
    pid_t child = fork();
    if (child == 0) {
        rill_status *cs = rill_status_new();
        rill_server *sp = rill_server_new(c, "ps", 0, NULL, cs);
        if (!sp) _exit(3);
        rill_server_join(sp, cs);
        rill_server_free(sp);
        _exit(0);
    }
    rill_server_options o = {.connect_deadline_s = 2, .step_deadline_s = 1, .heartbeat_idle_s = 1};
    rill_server *sw = rill_server_new(c, "worker", 0, &o, s);
    model m;
    build(&m, 0);
    rill_session *sess = sw ? session_on(sw, m.g, s) : NULL;
    if (CHECK(sess != NULL)) {
        CHECK(rill_session_run_targets(sess, &m.init, 1, s) == RILL_OK);
        CHECK(train(sess, &m, 20, 3) == 20);
        kill(child, SIGSTOP);
        double t0 = mono_now();
        rill_tensor *t = NULL;
        rill_code code = rill_session_run(sess, NULL, NULL, 0, &m.w, &t, 1, NULL, 0, s);
        double took = mono_now() - t0;
        CHECK_EQ_INT(code, RILL_DEADLINE_EXCEEDED);
        CHECK_STR_CONTAINS(rill_status_message(s), "/job:ps/replica:0/task:0");
        CHECK(took < 8);
        kill(child, SIGCONT);
        /* The peer is back: the next step reconnects. */
        code = rill_session_run(sess, NULL, NULL, 0, &m.w, &t, 1, NULL, 0, s);
        CHECK_EQ_INT(code, RILL_OK);
        rill_tensor_free(t);
        t = NULL;
        /* Hung while the connection sat idle: the heartbeat before the next call finds it. */
        kill(child, SIGSTOP);
        usleep(1500 * 1000);
        t0 = mono_now();
        code = rill_session_run(sess, NULL, NULL, 0, &m.w, &t, 1, NULL, 0, s);
        took = mono_now() - t0;
        CHECK(code == RILL_UNAVAILABLE || code == RILL_DEADLINE_EXCEEDED);
        CHECK_STR_CONTAINS(rill_status_message(s), "/job:ps/replica:0/task:0");
        CHECK(took < 15);
        kill(child, SIGCONT);
        code = rill_session_run(sess, NULL, NULL, 0, &m.w, &t, 1, NULL, 0, s);
        CHECK_EQ_INT(code, RILL_OK);
        rill_tensor_free(t);
    }
    rill_session_free(sess);
    unbuild(&m);
    rill_server_free(sw);
    kill(child, SIGTERM);
    int st;
    waitpid(child, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    rill_cluster_spec_free(c);
    rill_status_free(s);
}

/* --- clusters of in-process servers: nps ps tasks and one worker ---------------------------- */

typedef struct cluster {
    rill_cluster_spec *spec;
    rill_server *ps[2];
    rill_server *w;
} cluster;

static bool cluster_start_with(cluster *c, int nps, const rill_server_options *o)
{
    rill_status *s = rill_status_new();
    char ps[128] = "", wk[32];
    for (int i = 0; i < nps; i++) {
        size_t k = strlen(ps);
        snprintf(ps + k, sizeof ps - k, "%s127.0.0.1:%d", i ? "," : "", test_free_port());
    }
    snprintf(wk, sizeof wk, "127.0.0.1:%d", test_free_port());
    memset(c, 0, sizeof *c);
    c->spec = rill_cluster_spec_from_hosts(ps, wk, s);
    bool ok = c->spec != NULL;
    for (int i = 0; ok && i < nps; i++) ok = (c->ps[i] = rill_server_new(c->spec, "ps", i, o, s));
    if (ok) ok = (c->w = rill_server_new(c->spec, "worker", 0, o, s)) != NULL;
    if (!CHECK(ok)) fprintf(stderr, "  %s\n", rill_status_message(s));
    rill_status_free(s);
    return ok;
}

static bool cluster_start(cluster *c, int nps)
{
    return cluster_start_with(c, nps, NULL);
}

static void cluster_stop(cluster *c)
{
    rill_server_free(c->w);
    for (int i = 0; i < 2; i++) rill_server_free(c->ps[i]);
    rill_cluster_spec_free(c->spec);
}

/* Fetches float scalars; false (printed) when the step failed. */
static bool fetch_floats(rill_session *sess, const rill_output *feeds, rill_tensor *const *fv,
                         int nf, const rill_output *fetches, float *out, int n)
{
    rill_status *s = rill_status_new();
    rill_tensor *t[8] = {0};
    bool ok = rill_session_run(sess, feeds, fv, nf, fetches, t, n, NULL, 0, s) == RILL_OK;
    if (!ok) fprintf(stderr, "  step failed: %s\n", rill_status_message(s));
    for (int i = 0; i < n; i++) {
        out[i] = ok ? *(float *)rill_tensor_data(t[i]) : -999;
        rill_tensor_free(t[i]);
    }
    rill_status_free(s);
    return ok;
}

static rill_node *init_of(rill_output v)
{
    return rill_variable_initializer(v);
}

/* (a) Values that go back and forth between tasks in one step: a worker node that needs what
 * the ps computes from a fed worker value (the assign back to a worker variable, with a control
 * edge into it), each op running exactly once per step; a chain ps0 -> worker -> ps1; and one
 * ps computing from another's update. */
static void test_tail_step(void)
{
    cluster c;
    if (!cluster_start(&c, 2)) {
        cluster_stop(&c);
        return;
    }
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/job:worker/task:0");
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_scalar(), "x");
    rill_output lv = rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_zeros_initializer(),
                                   false, "local_copy");
    rill_output cnt =
        rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_zeros_initializer(), false, "count");
    rill_output cnt2 = rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_zeros_initializer(),
                                     false, "count2");
    rill_graph_pop_device(g);
    rill_graph_push_device(g, "/job:ps/task:0");
    rill_output v =
        rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_constant_initializer(5), false, "v");
    rill_output u = rill_assign_add(g, v, x, "update"); /* ps0's post run */
    rill_graph_pop_device(g);
    rill_graph_push_device(g, "/job:worker/task:0");
    rill_output a = rill_assign(g, lv, u, "copy_back"); /* the tail */
    rill_output bump = rill_assign_add(g, cnt, rill_const_float(g, 1, "one"), "bump");
    rill_output mark = rill_assign_add(g, cnt2, rill_const_float(g, 1, "one2"), "mark");
    rill_node_add_control_input(a.node, mark.node); /* a control edge into the tail */
    rill_output z = rill_add(g, rill_mul(g, u, rill_const_float(g, 10, "ten"), "u10"), bump, "z");
    rill_graph_pop_device(g);
    rill_graph_push_device(g, "/job:ps/task:1");
    rill_output needs_tail = rill_mul(g, z, rill_const_float(g, 3, "three"), "needs_tail");
    rill_output needs_post = rill_mul(g, u, rill_const_float(g, 2, "two"), "needs_ps0_post");
    rill_graph_pop_device(g);
    rill_node *init = rill_global_variables_initializer(g, NULL);
    if (!CHECK(rill_graph_ok(g))) goto out;
    rill_session *sess = session_on(c.w, g, s);
    if (!CHECK(sess != NULL)) {
        fprintf(stderr, "  %s\n", rill_status_message(s));
        goto out;
    }
    CHECK(rill_session_run_targets(sess, &init, 1, s) == RILL_OK);
    rill_tensor *xv = rill_tensor_scalar_float(0);
    rill_output fetch[] = {z, a, u};
    float want_v = 5;
    for (int step = 1; step <= 3; step++) {
        *(float *)rill_tensor_data(xv) = (float)step;
        want_v += (float)step;
        float got[3];
        if (!CHECK(fetch_floats(sess, &x, &xv, 1, fetch, got, 3))) break;
        CHECK_NEAR(got[0], want_v * 10 + (float)step, 1e-4); /* z: u * 10 + count */
        CHECK_NEAR(got[1], want_v, 1e-4);                    /* copy_back */
        CHECK_NEAR(got[2], want_v, 1e-4);                    /* update */
    }
    rill_output state[] = {lv, cnt, cnt2, v};
    float st[4];
    if (CHECK(fetch_floats(sess, NULL, NULL, 0, state, st, 4))) {
        CHECK_NEAR(st[0], 11, 1e-4); /* the worker's copy of v after the last update */
        CHECK_NEAR(st[1], 3, 1e-4);  /* the bridge ran once per step */
        CHECK_NEAR(st[2], 3, 1e-4);  /* so did the control source of the tail */
        CHECK_NEAR(st[3], 11, 1e-4);
    }
    /* A chain in one step: ps0's update, then the worker's z from it, then ps1 from z; and ps1
     * from ps0's update directly (the staged master refused both: UNIMPLEMENTED). */
    rill_tensor *out = NULL;
    CHECK_EQ_INT(rill_session_run(sess, &x, &xv, 1, &needs_tail, &out, 1, NULL, 0, s), RILL_OK);
    if (CHECK(out != NULL)) CHECK_NEAR(*(float *)rill_tensor_data(out), (14 * 10 + 4) * 3, 1e-4);
    rill_tensor_free(out);
    out = NULL;
    CHECK_EQ_INT(rill_session_run(sess, &x, &xv, 1, &needs_post, &out, 1, NULL, 0, s), RILL_OK);
    if (CHECK(out != NULL)) CHECK_NEAR(*(float *)rill_tensor_data(out), 17 * 2, 1e-4);
    rill_tensor_free(out);
    if (CHECK(fetch_floats(sess, NULL, NULL, 0, state, st, 4))) {
        CHECK_NEAR(st[1], 4, 1e-4);  /* bump ran once more, for needs_tail's z */
        CHECK_NEAR(st[3], 17, 1e-4); /* two more updates of 3 */
    }
    /* and the session goes on */
    *(float *)rill_tensor_data(xv) = 1;
    float got[3];
    if (CHECK(fetch_floats(sess, &x, &xv, 1, fetch, got, 3))) {
        CHECK_NEAR(got[0], 18 * 10 + 5, 1e-4);
        CHECK_NEAR(got[1], 18, 1e-4);
    }
    rill_tensor_free(xv);
    rill_session_free(sess);
out:
    rill_graph_free(g);
    rill_status_free(s);
    cluster_stop(&c);
}

/* (b) Remote runs follow the control edges between tasks. The observable: a step stops at the
 * first task that fails, so when an op on ps0 waits (control edge) for an op on ps1 that fails
 * (an uninitialised variable), ps0's op must not have run. Checked in the pre runs and in the
 * post runs (fed values), against the opposite edge, and without an edge (task order: ps0's
 * op runs, then ps1 fails), then with everything initialised. */
static void test_remote_order(void)
{
    cluster c;
    if (!cluster_start(&c, 2)) {
        cluster_stop(&c);
        return;
    }
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/job:worker/task:0");
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_scalar(), "x");
    rill_graph_pop_device(g);
    rill_output v[2], u[2], inc[2], incx[2], bad[2], badx[2], inc_free;
    for (int t = 0; t < 2; t++) {
        char dev[32], name[32];
        snprintf(dev, sizeof dev, "/job:ps/task:%d", t);
        rill_graph_push_device(g, dev);
        snprintf(name, sizeof name, "v%d", t);
        v[t] = rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_zeros_initializer(), false,
                             name);
        snprintf(name, sizeof name, "u%d", t);
        u[t] = rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_zeros_initializer(), false,
                             name);
        rill_output one = rill_const_float(g, 1, NULL);
        snprintf(name, sizeof name, "inc%d", t);
        inc[t] = rill_assign_add(g, v[t], one, name);
        snprintf(name, sizeof name, "inc%dx", t);
        incx[t] = rill_assign_add(g, v[t], x, name);
        snprintf(name, sizeof name, "bad%d", t);
        bad[t] = rill_assign_add(g, u[t], one, name);
        snprintf(name, sizeof name, "bad%dx", t);
        badx[t] = rill_assign_add(g, u[t], x, name);
        if (t == 0) inc_free = rill_assign_add(g, v[0], one, "inc0_free");
        rill_graph_pop_device(g);
    }
    rill_node_add_control_input(inc[0].node, bad[1].node);   /* ps1, then ps0 (pre runs) */
    rill_node_add_control_input(incx[0].node, badx[1].node); /* ps1, then ps0 (post runs) */
    rill_node_add_control_input(inc[1].node, bad[0].node);   /* ps0, then ps1 */
    if (!CHECK(rill_graph_ok(g))) goto out;
    rill_session *sess = session_on(c.w, g, s);
    if (!CHECK(sess != NULL)) goto out;
    rill_node *vinit[] = {init_of(v[0]), init_of(v[1])};
    CHECK(rill_session_run_targets(sess, vinit, 2, s) == RILL_OK);
    rill_output vs[] = {v[0], v[1]};
    float got[4];

    CHECK(rill_session_run_targets(sess, &inc[0].node, 1, s) != RILL_OK);
    CHECK_STR_CONTAINS(rill_status_message(s), "u1");
    if (CHECK(fetch_floats(sess, NULL, NULL, 0, vs, got, 2)))
        CHECK_NEAR(got[0], 0, 0); /* not run */

    rill_tensor *two = rill_tensor_scalar_float(2);
    rill_tensor *out = NULL;
    CHECK(rill_session_run(sess, &x, &two, 1, NULL, &out, 0, &incx[0].node, 1, s) != RILL_OK);
    CHECK_STR_CONTAINS(rill_status_message(s), "u1");
    if (CHECK(fetch_floats(sess, NULL, NULL, 0, vs, got, 2))) CHECK_NEAR(got[0], 0, 0);

    CHECK(rill_session_run_targets(sess, &inc[1].node, 1, s) != RILL_OK);
    CHECK_STR_CONTAINS(rill_status_message(s), "u0");
    if (CHECK(fetch_floats(sess, NULL, NULL, 0, vs, got, 2))) CHECK_NEAR(got[1], 0, 0);

    /* no edge: ps0 goes first and its op runs before ps1 fails (the observable works) */
    rill_node *both[] = {inc_free.node, bad[1].node};
    CHECK(rill_session_run_targets(sess, both, 2, s) != RILL_OK);
    if (CHECK(fetch_floats(sess, NULL, NULL, 0, vs, got, 2))) CHECK_NEAR(got[0], 1, 0);

    rill_node *uinit[] = {init_of(u[0]), init_of(u[1])};
    CHECK(rill_session_run_targets(sess, uinit, 2, s) == RILL_OK);
    CHECK(rill_session_run_targets(sess, &inc[0].node, 1, s) == RILL_OK);
    CHECK(rill_session_run(sess, &x, &two, 1, NULL, &out, 0, &incx[0].node, 1, s) == RILL_OK);
    CHECK(rill_session_run_targets(sess, &inc[1].node, 1, s) == RILL_OK);
    rill_output all[] = {v[0], v[1], u[0], u[1]};
    if (CHECK(fetch_floats(sess, NULL, NULL, 0, all, got, 4))) {
        CHECK_NEAR(got[0], 4, 0); /* 1 + inc0 + 2 */
        CHECK_NEAR(got[1], 1, 0);
        CHECK_NEAR(got[2], 1, 0); /* bad0 once */
        CHECK_NEAR(got[3], 3, 0); /* bad1 + bad1x(2) */
    }
    rill_tensor_free(two);
    rill_session_free(sess);
out:
    rill_graph_free(g);
    rill_status_free(s);
    cluster_stop(&c);
}

/* --- blocking ops: a dequeue in one thread, released or cancelled from another -------------- */

typedef struct dequeuer {
    rill_session *sess;
    rill_output what;
    atomic_int started, done;
    rill_code code;
    char msg[512];
    float val;
} dequeuer;

static void *dequeue_main(void *p)
{
    dequeuer *d = p;
    rill_status *s = rill_status_new();
    rill_tensor *t = NULL;
    atomic_store(&d->started, 1);
    d->code = rill_session_run(d->sess, NULL, NULL, 0, &d->what, &t, 1, NULL, 0, s);
    snprintf(d->msg, sizeof d->msg, "%s", rill_status_message(s));
    d->val = t ? *(float *)rill_tensor_data(t) : -999;
    rill_tensor_free(t);
    rill_status_free(s);
    atomic_store(&d->done, 1);
    return NULL;
}

static void start_dequeue(dequeuer *d, rill_session *sess, rill_output what, pthread_t *th)
{
    memset(d, 0, sizeof *d);
    d->sess = sess;
    d->what = what;
    pthread_create(th, NULL, dequeue_main, d);
    while (!atomic_load(&d->started)) usleep(1000);
    usleep(300 * 1000); /* let the request reach its task (not relied on: see the callers) */
}

/* Waits at most secs for d to finish; true when it did. */
static bool wait_done(dequeuer *d, double secs)
{
    double t_end = mono_now() + secs;
    while (!atomic_load(&d->done) && mono_now() < t_end) usleep(2000);
    return atomic_load(&d->done);
}

static bool enqueue(rill_session *sess, rill_output vals, rill_node *enq, const float *v, int n)
{
    rill_status *s = rill_status_new();
    rill_tensor *t = rill_tensor_new(RILL_FLOAT, (int64_t[]){n}, 1);
    memcpy(rill_tensor_data(t), v, sizeof *v * (size_t)n);
    bool ok = rill_session_run(sess, &vals, &t, 1, NULL, NULL, 0, &enq, 1, s) == RILL_OK;
    if (!ok) fprintf(stderr, "  enqueue: %s\n", rill_status_message(s));
    rill_tensor_free(t);
    rill_status_free(s);
    return ok;
}

typedef struct queue_graph {
    rill_graph *g;
    rill_output vals, deq, local_deq;
    rill_node *enq, *local_enq;
} queue_graph;

static void build_queues(queue_graph *q, int64_t timeout_ms)
{
    q->g = rill_graph_new();
    rill_graph_push_device(q->g, "/job:worker/task:0");
    q->vals = rill_placeholder(q->g, RILL_FLOAT, rill_shape_vector(-1), "vals");
    q->local_deq =
        rill_queue_dequeue(q->g, "lq", RILL_FLOAT, rill_shape_scalar(), timeout_ms, "local_deq");
    q->local_enq = rill_queue_enqueue_many(q->g, "lq", -1, q->vals, 0, "local_enq");
    rill_graph_pop_device(q->g);
    rill_graph_push_device(q->g, "/job:ps/task:0");
    q->deq = rill_queue_dequeue(q->g, "q", RILL_FLOAT, rill_shape_scalar(), timeout_ms, "deq");
    q->enq = rill_queue_enqueue_many(q->g, "q", -1, q->vals, 0, "enq");
    rill_graph_pop_device(q->g);
    CHECK(rill_graph_ok(q->g));
}

/* (c) A dequeue on the ps blocks until another session enqueues; several blocked at once are
 * all served (the ps's pool grows); rill_session_cancel ends a blocked dequeue with CANCELLED
 * through the CANCEL RPC, and the session works afterwards. Also for a dequeue on the master's
 * own task. */
static void test_blocking_queue(void)
{
    cluster c;
    if (!cluster_start(&c, 1)) {
        cluster_stop(&c);
        return;
    }
    rill_status *s = rill_status_new();
    queue_graph q;
    build_queues(&q, 60 * 1000);
    enum { NA = 3 };
    rill_session *a[NA], *b = session_on(c.w, q.g, s);
    for (int i = 0; i < NA; i++) a[i] = session_on(c.w, q.g, s);
    if (!CHECK(b && a[0] && a[1] && a[2])) goto out;
    /* warm up: each signature registered once */
    float one = 1;
    CHECK(enqueue(b, q.vals, q.enq, &one, 1));
    float got;
    CHECK(fetch_floats(a[0], NULL, NULL, 0, &q.deq, &got, 1) && got == 1);

    /* released by an enqueue from another session */
    dequeuer d[NA];
    pthread_t th[NA];
    start_dequeue(&d[0], a[0], q.deq, &th[0]);
    CHECK(!atomic_load(&d[0].done)); /* the queue is empty: it cannot have returned */
    float seven = 7;
    CHECK(enqueue(b, q.vals, q.enq, &seven, 1));
    CHECK(wait_done(&d[0], 30));
    pthread_join(th[0], NULL);
    CHECK_EQ_INT(d[0].code, RILL_OK);
    CHECK_NEAR(d[0].val, 7, 0);

    /* three sessions blocked on the ps at once, released by one enqueue of three */
    for (int i = 0; i < NA; i++) start_dequeue(&d[i], a[i], q.deq, &th[i]);
    for (int i = 0; i < NA; i++) CHECK(!atomic_load(&d[i].done));
    float three[] = {1, 2, 3};
    CHECK(enqueue(b, q.vals, q.enq, three, 3));
    float sum = 0;
    for (int i = 0; i < NA; i++) {
        CHECK(wait_done(&d[i], 30));
        pthread_join(th[i], NULL);
        if (!CHECK_EQ_INT(d[i].code, RILL_OK)) fprintf(stderr, "  %s\n", d[i].msg);
        sum += d[i].val * d[i].val;
    }
    CHECK_NEAR(sum, 14, 0); /* each of 1, 2, 3 once */

    /* cancelled: the CANCEL RPC reaches the ps */
    start_dequeue(&d[0], a[0], q.deq, &th[0]);
    CHECK(!atomic_load(&d[0].done));
    int cancels = 0;
    for (double t0 = mono_now(); !atomic_load(&d[0].done) && mono_now() - t0 < 45;) {
        rill_session_cancel(a[0]);
        cancels++;
        wait_done(&d[0], 5);
    }
    CHECK(atomic_load(&d[0].done));
    pthread_join(th[0], NULL);
    if (!CHECK_EQ_INT(d[0].code, RILL_CANCELLED)) fprintf(stderr, "  %s\n", d[0].msg);
    CHECK_STR_CONTAINS(d[0].msg, "cancel");
    printf("a dequeue on the ps was cancelled after %d cancel(s): %s\n", cancels, d[0].msg);
    /* the session still works */
    float five = 5;
    CHECK(enqueue(b, q.vals, q.enq, &five, 1));
    CHECK(fetch_floats(a[0], NULL, NULL, 0, &q.deq, &got, 1) && got == 5);

    /* a dequeue on the master's own task */
    CHECK(enqueue(b, q.vals, q.local_enq, &one, 1));
    CHECK(fetch_floats(a[1], NULL, NULL, 0, &q.local_deq, &got, 1) && got == 1);
    start_dequeue(&d[1], a[1], q.local_deq, &th[1]);
    CHECK(!atomic_load(&d[1].done));
    cancels = 0;
    for (double t0 = mono_now(); !atomic_load(&d[1].done) && mono_now() - t0 < 45;) {
        rill_session_cancel(a[1]);
        cancels++;
        wait_done(&d[1], 5);
    }
    CHECK(atomic_load(&d[1].done));
    pthread_join(th[1], NULL);
    if (!CHECK_EQ_INT(d[1].code, RILL_CANCELLED)) fprintf(stderr, "  %s\n", d[1].msg);
    printf("a dequeue on the master's task was cancelled after %d cancel(s): %s\n", cancels,
           d[1].msg);
    CHECK(enqueue(b, q.vals, q.local_enq, &five, 1));
    CHECK(fetch_floats(a[1], NULL, NULL, 0, &q.local_deq, &got, 1) && got == 5);
out:
    for (int i = 0; i < NA; i++) rill_session_free(a[i]);
    rill_session_free(b);
    rill_graph_free(q.g);
    rill_status_free(s);
    cluster_stop(&c);
}

/* (c2) A step's deadline on a cluster session (RunOptions.timeout_in_ms, the operation timeout):
 * a dequeue blocked on the ps ends with DEADLINE_EXCEEDED naming the ps task at the deadline,
 * the ps is told to stop its part (so it does not take the next value), and the session works on.
 * The same for a dequeue on the master's own task. */
static void test_step_deadline(void)
{
    cluster c;
    if (!cluster_start(&c, 1)) {
        cluster_stop(&c);
        return;
    }
    rill_status *s = rill_status_new();
    queue_graph q;
    build_queues(&q, 60 * 1000);
    rill_session *a = session_on(c.w, q.g, s), *b = session_on(c.w, q.g, s);
    if (!CHECK(a && b)) goto out;
    float one = 1, got = 0;
    CHECK(enqueue(b, q.vals, q.enq, &one, 1));
    CHECK(fetch_floats(a, NULL, NULL, 0, &q.deq, &got, 1) && got == 1);
    rill_run_options ro = {.timeout_ms = 300};
    for (int k = 0; k < 2; k++) {
        rill_output f = k == 0 ? q.deq : q.local_deq;
        rill_tensor *v = NULL;
        double t0 = mono_now();
        rill_code code =
            rill_session_run_with_options(a, &ro, NULL, NULL, 0, &f, &v, 1, NULL, 0, s);
        double took = mono_now() - t0;
        CHECK_EQ_INT(code, RILL_DEADLINE_EXCEEDED);
        CHECK(v == NULL);
        CHECK_STR_CONTAINS(rill_status_message(s), "Timed out waiting for notification");
        CHECK_STR_CONTAINS(rill_status_message(s), "300 ms deadline");
        if (k == 0) CHECK_STR_CONTAINS(rill_status_message(s), "/job:ps/replica:0/task:0");
        if (!CHECK(took >= 0.29 && took < 10))
            fprintf(stderr, "  case %d: ended after %.3f s: %s\n", k, took, rill_status_message(s));
        printf("a dequeue on the %s timed out after %.3f s: %s\n", k ? "master's task" : "ps",
               took, rill_status_message(s));
        rill_tensor_free(v);
    }
    /* The timed-out parts are gone: what is enqueued next is dequeued by the next step. */
    float five = 5, six = 6;
    CHECK(enqueue(b, q.vals, q.enq, &five, 1));
    got = 0;
    CHECK(fetch_floats(a, NULL, NULL, 0, &q.deq, &got, 1));
    CHECK_NEAR(got, 5, 0);
    CHECK(enqueue(b, q.vals, q.local_enq, &six, 1));
    got = 0;
    CHECK(fetch_floats(a, NULL, NULL, 0, &q.local_deq, &got, 1));
    CHECK_NEAR(got, 6, 0);
out:
    rill_session_free(a);
    rill_session_free(b);
    rill_graph_free(q.g);
    rill_status_free(s);
    cluster_stop(&c);
}

/* (d) Freeing a ps while a blocking run of it is in flight cancels the run: the step fails with
 * CANCELLED or UNAVAILABLE, not at the dequeue's two-minute deadline. */
static void test_free_server_with_blocking_run(void)
{
    cluster c;
    if (!cluster_start(&c, 1)) {
        cluster_stop(&c);
        return;
    }
    rill_status *s = rill_status_new();
    queue_graph q;
    build_queues(&q, 120 * 1000);
    rill_session *a = session_on(c.w, q.g, s);
    if (CHECK(a != NULL)) {
        float one = 1, got;
        CHECK(enqueue(a, q.vals, q.enq, &one, 1));
        CHECK(fetch_floats(a, NULL, NULL, 0, &q.deq, &got, 1) && got == 1);
        dequeuer d;
        pthread_t th;
        start_dequeue(&d, a, q.deq, &th);
        CHECK(!atomic_load(&d.done));
        rill_server_free(c.ps[0]);
        c.ps[0] = NULL;
        CHECK(wait_done(&d, 60));
        pthread_join(th, NULL);
        if (!CHECK(d.code == RILL_CANCELLED || d.code == RILL_UNAVAILABLE))
            fprintf(stderr, "  %s: %s\n", rill_code_name(d.code), d.msg);
        printf("the ps was freed under a blocked dequeue: %s\n", d.msg);
    }
    rill_session_free(a);
    rill_graph_free(q.g);
    rill_status_free(s);
    cluster_stop(&c);
}

/* The placements the staged master could not run, on 1 ps + 2 workers, each step checked
 * against the same graph in a local session: model parallelism (layer 1 on worker 0, layer 2 on
 * worker 1, the forward pass crossing one way and the backward pass the other, updates on the
 * ps), in-graph replication (one client, a tower on each worker, the gradients averaged on the
 * ps) and a chain ps -> worker 1 -> ps -> worker 1 in one step. */
typedef struct placed {
    rill_graph *g;
    rill_output x, t, loss, w1, w2, v, xs[2], ts[2], towers, chain;
    rill_node *mp_updates[2], *rep_update, *init;
} placed;

static void on(rill_graph *g, bool placed_, const char *dev)
{
    if (placed_) rill_graph_push_device(g, dev);
}

static void off(rill_graph *g, bool placed_)
{
    if (placed_) rill_graph_pop_device(g);
}

static void build_placed(placed *m, bool pl)
{
    rill_graph *g = m->g = rill_graph_new();
    on(g, pl, "/job:ps/task:0");
    m->w1 = rill_variable(g, RILL_FLOAT, rill_shape_matrix(4, 3),
                          rill_random_normal_initializer(0, 0.5, 7), true, "W1");
    m->w2 = rill_variable(g, RILL_FLOAT, rill_shape_matrix(3, 1),
                          rill_random_normal_initializer(0, 0.5, 8), true, "W2");
    m->v = rill_variable(g, RILL_FLOAT, rill_shape_matrix(2, 1),
                         rill_random_normal_initializer(0, 0.5, 9), true, "V");
    rill_output cv =
        rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_constant_initializer(1.5), false, "c");
    off(g, pl);
    /* model parallelism */
    on(g, pl, "/job:worker/task:0");
    m->x = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(2, 4), "x");
    rill_output h = rill_tanh(g, rill_matmul(g, m->x, m->w1, false, false, "l1"), "h");
    off(g, pl);
    on(g, pl, "/job:worker/task:1");
    m->t = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(2, 1), "t");
    rill_output y = rill_matmul(g, h, m->w2, false, false, "l2");
    m->loss = rill_sum(g, rill_square(g, rill_sub(g, y, m->t, NULL), NULL), NULL, -1, false, "loss");
    rill_output d1[2];
    CHECK(rill_gradients(g, &m->loss, 1, (rill_output[]){m->w2, h}, 2, NULL, d1));
    off(g, pl);
    on(g, pl, "/job:worker/task:0");
    rill_output dw1;
    CHECK(rill_gradients(g, &h, 1, &m->w1, 1, &d1[1], &dw1));
    off(g, pl);
    on(g, pl, "/job:ps/task:0");
    rill_output lr = rill_const_float(g, 0.1f, "lr");
    m->mp_updates[0] = rill_assign_sub(g, m->w1, rill_mul(g, dw1, lr, NULL), "u1").node;
    m->mp_updates[1] = rill_assign_sub(g, m->w2, rill_mul(g, d1[0], lr, NULL), "u2").node;
    rill_node_add_control_input(m->mp_updates[1], d1[1].node); /* dh read W2 before */
    off(g, pl);
    /* in-graph replication */
    rill_output gk[2], lk[2];
    for (int k = 0; k < 2; k++) {
        char dev[32];
        snprintf(dev, sizeof dev, "/job:worker/task:%d", k);
        on(g, pl, dev);
        m->xs[k] = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(2, 2), NULL);
        m->ts[k] = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(2, 1), NULL);
        rill_output e = rill_sub(g, rill_matmul(g, m->xs[k], m->v, false, false, NULL), m->ts[k], NULL);
        lk[k] = rill_sum(g, rill_square(g, e, NULL), NULL, -1, false, NULL);
        CHECK(rill_gradients(g, &lk[k], 1, &m->v, 1, NULL, &gk[k]));
        off(g, pl);
    }
    on(g, pl, "/job:worker/task:0");
    m->towers = rill_add(g, lk[0], lk[1], "towers");
    off(g, pl);
    on(g, pl, "/job:ps/task:0");
    rill_output avg = rill_mul(g, rill_add(g, gk[0], gk[1], NULL), rill_const_float(g, 0.5f, NULL), "avg");
    m->rep_update =
        rill_assign_sub(g, m->v, rill_mul(g, avg, rill_const_float(g, 0.01f, NULL), NULL), "uv").node;
    /* a chain ps -> worker 1 -> ps -> worker 1 */
    rill_output p1 = rill_mul(g, cv, rill_const_float(g, 2, NULL), "p1");
    off(g, pl);
    on(g, pl, "/job:worker/task:1");
    rill_output q1 = rill_add(g, p1, rill_const_float(g, 1, NULL), "q1");
    off(g, pl);
    on(g, pl, "/job:ps/task:0");
    rill_output p2 = rill_mul(g, q1, rill_const_float(g, 3, NULL), "p2");
    off(g, pl);
    on(g, pl, "/job:worker/task:1");
    m->chain = rill_sub(g, p2, rill_const_float(g, 1, NULL), "q2");
    off(g, pl);
    m->init = rill_global_variables_initializer(g, NULL);
    CHECK(rill_graph_ok(g));
}

/* Runs the three checks' steps on sess; out gets every fetched float, in order. */
static int run_placed(rill_session *sess, placed *m, float *out)
{
    rill_status *s = rill_status_new();
    int n = 0;
    if (rill_session_run_targets(sess, &m->init, 1, s) != RILL_OK) {
        fprintf(stderr, "  init: %s\n", rill_status_message(s));
        rill_status_free(s);
        return 0;
    }
    float xv[8] = {0.5f, -1, 2, 0.25f, 1, 0.5f, -0.5f, 1.5f}, tv[2] = {1, -1};
    float xs[2][4] = {{1, 2, 3, 4}, {-1, 0.5f, 2, -2}}, ts[2][2] = {{1, 0}, {0.5f, 2}};
    rill_tensor *x = rill_tensor_new(RILL_FLOAT, (int64_t[]){2, 4}, 2);
    rill_tensor *t = rill_tensor_new(RILL_FLOAT, (int64_t[]){2, 1}, 2);
    memcpy(rill_tensor_data(x), xv, sizeof xv);
    memcpy(rill_tensor_data(t), tv, sizeof tv);
    rill_tensor *xk[2], *tk[2];
    for (int k = 0; k < 2; k++) {
        xk[k] = rill_tensor_new(RILL_FLOAT, (int64_t[]){2, 2}, 2);
        tk[k] = rill_tensor_new(RILL_FLOAT, (int64_t[]){2, 1}, 2);
        memcpy(rill_tensor_data(xk[k]), xs[k], sizeof xs[k]);
        memcpy(rill_tensor_data(tk[k]), ts[k], sizeof ts[k]);
    }
    for (int step = 0; step < 4; step++) {
        rill_tensor *o[1] = {0};
        rill_output f1[] = {m->x, m->t};
        rill_tensor *v1[] = {x, t};
        if (rill_session_run(sess, f1, v1, 2, &m->loss, o, 1, m->mp_updates, 2, s) != RILL_OK)
            break;
        out[n++] = *(float *)rill_tensor_data(o[0]);
        rill_tensor_free(o[0]);
        rill_output f2[] = {m->xs[0], m->ts[0], m->xs[1], m->ts[1]};
        rill_tensor *v2[] = {xk[0], tk[0], xk[1], tk[1]};
        if (rill_session_run(sess, f2, v2, 4, &m->towers, o, 1, &m->rep_update, 1, s) != RILL_OK)
            break;
        out[n++] = *(float *)rill_tensor_data(o[0]);
        rill_tensor_free(o[0]);
        if (rill_session_run(sess, NULL, NULL, 0, &m->chain, o, 1, NULL, 0, s) != RILL_OK) break;
        out[n++] = *(float *)rill_tensor_data(o[0]);
        rill_tensor_free(o[0]);
    }
    rill_output vars[] = {m->w1, m->w2, m->v};
    rill_tensor *vt[3] = {0};
    if (n == 12 && rill_session_run(sess, NULL, NULL, 0, vars, vt, 3, NULL, 0, s) == RILL_OK)
        for (int i = 0; i < 3; i++) {
            const float *d = rill_tensor_data(vt[i]);
            for (int64_t e = 0; e < rill_tensor_num_elements(vt[i]); e++) out[n++] = d[e];
            rill_tensor_free(vt[i]);
        }
    if (!rill_status_ok(s)) fprintf(stderr, "  step: %s\n", rill_status_message(s));
    rill_tensor_free(x);
    rill_tensor_free(t);
    for (int k = 0; k < 2; k++) rill_tensor_free(xk[k]), rill_tensor_free(tk[k]);
    rill_status_free(s);
    return n;
}

static void test_any_placement(void)
{
    rill_status *s = rill_status_new();
    trio tr;
    bool up = trio_start(&tr, s);
    placed local, cl;
    build_placed(&local, false);
    build_placed(&cl, true);
    float want[64], got[64];
    rill_session *ls = rill_session_new(local.g, NULL, s);
    int nw = ls ? run_placed(ls, &local, want) : 0;
    CHECK_EQ_INT(nw, 12 + 12 + 3 + 2);
    rill_session *cs = up ? session_on(tr.w[0], cl.g, s) : NULL;
    if (CHECK(cs != NULL)) {
        int ng = run_placed(cs, &cl, got);
        if (CHECK_EQ_INT(ng, nw)) {
            int same = 0;
            for (int i = 0; i < ng; i++) same += got[i] == want[i];
            CHECK_EQ_INT(same, ng); /* the same bits: only where the ops ran changed */
            CHECK_NEAR(got[2], 11, 1e-6); /* the chain: (1.5 * 2 + 1) * 3 - 1 */
            CHECK(got[9] < got[0]);       /* model-parallel training lowers its loss */
            CHECK(got[10] < got[1]);      /* so does the replicated one */
            printf("any placement: model parallel loss %g -> %g, towers %g -> %g, chain %g; "
                   "bit-equal to a local session\n",
                   got[0], got[9], got[1], got[10], got[2]);
        }
    } else {
        fprintf(stderr, "  %s\n", rill_status_message(s));
    }
    rill_session_free(cs);
    rill_session_free(ls);
    rill_graph_free(cl.g);
    rill_graph_free(local.g);
    trio_stop(&tr);
    rill_status_free(s);
}

/* A ps freed while its part of a step is parked on its transport thread, waiting for a tensor
 * the worker has not sent (the worker's own part is blocked on a dequeue): the server frees at
 * once (the parked receive is woken and sees the cancellation), and the step, released, fails
 * naming what it lost instead of hanging. */
static void test_free_server_with_parked_run(void)
{
    cluster c;
    if (!cluster_start(&c, 1)) {
        cluster_stop(&c);
        return;
    }
    rill_status *s = rill_status_new();
    queue_graph q;
    build_queues(&q, 120 * 1000);
    rill_graph_push_device(q.g, "/job:ps/task:0");
    rill_output on_ps = rill_identity(q.g, q.local_deq, "on_ps");
    rill_graph_pop_device(q.g);
    rill_session *a = session_on(c.w, q.g, s), *b = session_on(c.w, q.g, s);
    if (CHECK(a && b)) {
        float one = 1, got;
        CHECK(enqueue(b, q.vals, q.local_enq, &one, 1));
        CHECK(fetch_floats(a, NULL, NULL, 0, &on_ps, &got, 1) && got == 1);
        dequeuer d;
        pthread_t th;
        start_dequeue(&d, a, on_ps, &th);
        CHECK(!atomic_load(&d.done));
        double t0 = mono_now();
        rill_server_free(c.ps[0]);
        c.ps[0] = NULL;
        double took = mono_now() - t0;
        CHECK(took < 10);
        CHECK(enqueue(b, q.vals, q.local_enq, &one, 1));
        CHECK(wait_done(&d, 60));
        pthread_join(th, NULL);
        if (!CHECK(d.code == RILL_CANCELLED || d.code == RILL_UNAVAILABLE))
            fprintf(stderr, "  %s: %s\n", rill_code_name(d.code), d.msg);
        CHECK(strstr(d.msg, "ps") != NULL);
        printf("the ps was freed in %.2f s under a parked part of a step: %s\n", took, d.msg);
    }
    rill_session_free(a);
    rill_session_free(b);
    rill_graph_free(q.g);
    rill_status_free(s);
    cluster_stop(&c);
}

/* A ps that answers with only an empty tensor (no payload at all) or with strings and an empty
 * tensor. */
static void test_empty_and_string_fetches(void)
{
    cluster c;
    if (!cluster_start(&c, 1)) {
        cluster_stop(&c);
        return;
    }
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/job:ps/task:0");
    rill_tensor *e = rill_tensor_new(RILL_FLOAT, (int64_t[]){0}, 1);
    rill_output empty = rill_const(g, e, "empty");
    rill_tensor_free(e);
    rill_tensor *str = rill_tensor_new(RILL_STRING, (int64_t[]){2}, 1);
    rill_tensor_set_string(str, 0, "a\0b", 3);
    rill_tensor_set_string(str, 1, "", 0);
    rill_output strs = rill_const(g, str, "strs");
    rill_tensor_free(str);
    rill_output f = rill_const_float(g, 2.5f, "f");
    rill_graph_pop_device(g);
    /* fed on the worker, used on the ps: the request's feeds are strings and an empty tensor */
    rill_graph_push_device(g, "/job:worker/task:0");
    rill_output fe = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(-1), "fed_empty");
    rill_output fs = rill_placeholder(g, RILL_STRING, rill_shape_vector(-1), "fed_strings");
    rill_graph_pop_device(g);
    rill_graph_push_device(g, "/job:ps/task:0");
    rill_output back_e = rill_identity(g, fe, "back_empty");
    rill_output back_s = rill_identity(g, fs, "back_strings");
    rill_graph_pop_device(g);
    rill_session *sess = session_on(c.w, g, s);
    if (CHECK(sess != NULL)) {
        rill_output sets[3][3] = {{empty}, {strs, empty}, {empty, strs, f}};
        int ns[3] = {1, 2, 3};
        for (int k = 0; k < 3; k++) {
            rill_tensor *out[3] = {0};
            rill_code code = rill_session_run(sess, NULL, NULL, 0, sets[k], out, ns[k], NULL, 0, s);
            if (!CHECK_EQ_INT(code, RILL_OK)) fprintf(stderr, "  %s\n", rill_status_message(s));
            for (int i = 0; code == RILL_OK && i < ns[k]; i++) {
                if (sets[k][i].node == empty.node) {
                    CHECK(rill_tensor_rank(out[i]) == 1 && rill_tensor_dim(out[i], 0) == 0);
                } else if (sets[k][i].node == strs.node) {
                    size_t l0, l1;
                    const char *p0 = rill_tensor_get_string(out[i], 0, &l0);
                    rill_tensor_get_string(out[i], 1, &l1);
                    CHECK(l0 == 3 && memcmp(p0, "a\0b", 3) == 0 && l1 == 0);
                } else {
                    CHECK_NEAR(*(float *)rill_tensor_data(out[i]), 2.5, 0);
                }
            }
            for (int i = 0; i < ns[k]; i++) rill_tensor_free(out[i]);
        }
        rill_tensor *fv[2] = {rill_tensor_new(RILL_FLOAT, (int64_t[]){0}, 1),
                              rill_tensor_new(RILL_STRING, (int64_t[]){3}, 1)};
        rill_tensor_set_string(fv[1], 0, "x\0y", 3);
        rill_tensor_set_string(fv[1], 2, "last", 4);
        rill_output feeds[] = {fe, fs}, fetches[] = {back_e, back_s};
        rill_tensor *out[2] = {0};
        rill_code code = rill_session_run(sess, feeds, fv, 2, fetches, out, 2, NULL, 0, s);
        if (!CHECK_EQ_INT(code, RILL_OK)) fprintf(stderr, "  %s\n", rill_status_message(s));
        if (code == RILL_OK) {
            CHECK(rill_tensor_rank(out[0]) == 1 && rill_tensor_dim(out[0], 0) == 0);
            size_t l0, l1, l2;
            const char *p0 = rill_tensor_get_string(out[1], 0, &l0);
            rill_tensor_get_string(out[1], 1, &l1);
            const char *p2 = rill_tensor_get_string(out[1], 2, &l2);
            CHECK(l0 == 3 && memcmp(p0, "x\0y", 3) == 0 && l1 == 0);
            CHECK(l2 == 4 && memcmp(p2, "last", 4) == 0);
        }
        for (int i = 0; i < 2; i++) rill_tensor_free(out[i]), rill_tensor_free(fv[i]);
    }
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
    cluster_stop(&c);
}

/* Blocking runs keep arriving while the ps is freed (a worker retrying its step): the free
 * returns, every step in flight fails cleanly, and nothing runs on the freed server. */
typedef struct hammer {
    rill_session *sess;
    queue_graph *q;
    atomic_int stop, runs;
    rill_code last;
} hammer;

static void *hammer_main(void *p)
{
    hammer *h = p;
    rill_status *s = rill_status_new();
    rill_tensor *t = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    *(float *)rill_tensor_data(t) = 1;
    while (!atomic_load(&h->stop)) {
        h->last = rill_session_run(h->sess, &h->q->vals, &t, 1, NULL, NULL, 0, &h->q->enq, 1, s);
        atomic_fetch_add(&h->runs, 1);
    }
    rill_tensor_free(t);
    rill_status_free(s);
    return NULL;
}

static void test_free_server_under_blocking_runs(void)
{
    for (int round = 0; round < 8; round++) {
        cluster c;
        rill_server_options o = {.connect_deadline_s = 0.5};
        if (!cluster_start_with(&c, 1, &o)) {
            cluster_stop(&c);
            return;
        }
        rill_status *s = rill_status_new();
        queue_graph q;
        build_queues(&q, 5 * 1000);
        enum { NH = 3 };
        hammer h[NH];
        pthread_t th[NH];
        for (int i = 0; i < NH; i++) {
            memset(&h[i], 0, sizeof h[i]);
            h[i].q = &q;
            h[i].sess = session_on(c.w, q.g, s);
            CHECK(h[i].sess != NULL);
            pthread_create(&th[i], NULL, hammer_main, &h[i]);
        }
        double t0 = mono_now();
        for (int i = 0; i < NH; i++)
            while (atomic_load(&h[i].runs) < 20 && mono_now() - t0 < 30) usleep(1000);
        rill_server_free(c.ps[0]);
        c.ps[0] = NULL;
        usleep(100 * 1000);
        for (int i = 0; i < NH; i++) {
            atomic_store(&h[i].stop, 1);
            pthread_join(th[i], NULL);
            CHECK(h[i].last != RILL_OK);
            rill_session_free(h[i].sess);
        }
        rill_graph_free(q.g);
        rill_status_free(s);
        cluster_stop(&c);
    }
}

/* Two tasks that push to each other for the first time at once, each from its server's own
 * thread (where a step's part runs when the tensor it waited for arrives): ps0 gets x and sends
 * x + 1 to ps1 while ps1 gets x and sends 2x to ps0. When such a push connected there, each
 * handshake waited for the other server's thread, which waited in its own: the step stalled
 * until the connect deadline (1 ps + 2 workers of a Python program did so once in four runs).
 * Fresh clusters, so that every round's pushes are first contacts. */
static void test_first_pushes_both_ways(void)
{
    rill_server_options o = {.connect_deadline_s = 3, .step_deadline_s = 20};
    for (int round = 0; round < 12; round++) {
        cluster c;
        if (!cluster_start_with(&c, 2, &o)) {
            cluster_stop(&c);
            return;
        }
        rill_status *s = rill_status_new();
        rill_graph *g = rill_graph_new();
        rill_graph_push_device(g, "/job:worker/task:0");
        rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_scalar(), "x");
        rill_graph_pop_device(g);
        rill_graph_push_device(g, "/job:ps/task:0");
        rill_output a = rill_add(g, x, rill_const_float(g, 1, NULL), "a");
        rill_graph_pop_device(g);
        rill_graph_push_device(g, "/job:ps/task:1");
        rill_output b = rill_mul(g, x, rill_const_float(g, 2, NULL), "b");
        rill_output cc = rill_mul(g, a, rill_const_float(g, 3, NULL), "c"); /* ps0 -> ps1 */
        rill_graph_pop_device(g);
        rill_graph_push_device(g, "/job:ps/task:0");
        rill_output d = rill_mul(g, b, rill_const_float(g, 4, NULL), "d"); /* ps1 -> ps0 */
        rill_graph_pop_device(g);
        rill_session *sess = CHECK(rill_graph_ok(g)) ? session_on(c.w, g, s) : NULL;
        if (CHECK(sess != NULL)) {
            rill_tensor *xv = rill_tensor_scalar_float(5);
            rill_output f[] = {cc, d};
            float got[2];
            double t0 = mono_now();
            if (CHECK(fetch_floats(sess, &x, &xv, 1, f, got, 2))) {
                CHECK_NEAR(got[0], 18, 0);
                CHECK_NEAR(got[1], 40, 0);
            }
            CHECK(mono_now() - t0 < 2.5);
            rill_tensor_free(xv);
        }
        rill_session_free(sess);
        rill_graph_free(g);
        rill_status_free(s);
        cluster_stop(&c);
    }
}

int main(void)
{
    setenv("RILL_OPENCL_CPU_AS_GPU", "0", 1);
    test_local_server();
    test_unreachable_ps();
    test_async_two_workers();
    test_concurrent_steps();
    test_split_over_ps();
    test_hung_ps();
    test_tail_step();
    test_first_pushes_both_ways();
    test_any_placement();
    test_remote_order();
    test_empty_and_string_fetches();
    test_blocking_queue();
    test_step_deadline();
    test_free_server_with_blocking_run();
    test_free_server_with_parked_run();
    test_free_server_under_blocking_runs();
    TEST_MAIN_END();
}
