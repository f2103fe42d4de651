/* test_client.c - sessions on another process's server (client.c): this process starts no
 * server; a forked child serves a ps and a worker on loopback (as `server.join()` processes do),
 * and sessions named "grpc://<worker>" and "rill://<worker>" run their graphs on that worker's
 * master: training with the variables on the ps, a graph grown between runs, string feeds (a
 * Saver's checkpoint written and restored there), concurrent runs, a cancelled run, the errors
 * a user meets (a missing feed, a wrong shape, a master that is not there, a wrong secret), and
 * a client connection that tries more than running sessions. */
#include <rill/rill.h>

#include "distributed/master.h"
#include "distributed/rpc.h"
#include "net.h"
#include "test.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char ps_addr[32], wk_addr[32];
static const char *SECRET = "0123456789abcdef0123456789abcdef-client-test";

/* The child: a ps and a worker of one cluster, serving until killed (with_secret: both demand
 * SECRET). */
static pid_t serve_again(bool with_secret);

static pid_t serve(bool with_secret)
{
    snprintf(ps_addr, sizeof ps_addr, "127.0.0.1:%d", test_free_port());
    snprintf(wk_addr, sizeof wk_addr, "127.0.0.1:%d", test_free_port());
    return serve_again(with_secret);
}

/* The same, at the addresses of the last serve(). */
static pid_t serve_again(bool with_secret)
{
    pid_t pid = fork();
    if (pid == 0) {
        rill_status *s = rill_status_new();
        rill_cluster_spec *c = rill_cluster_spec_from_hosts(ps_addr, wk_addr, s);
        rill_server_options o = {.secret = with_secret ? SECRET : NULL};
        rill_server *ps = c ? rill_server_new(c, "ps", 0, &o, s) : NULL;
        rill_server *w = ps ? rill_server_new(c, "worker", 0, &o, s) : NULL;
        if (!w) {
            fprintf(stderr, "child: %s\n", rill_status_message(s));
            _exit(3);
        }
        for (;;) pause();
    }
    return pid;
}

static void unserve(pid_t pid)
{
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
}

static rill_session *client_session(rill_graph *g, const char *scheme, int64_t timeout_ms,
                                    rill_status *s)
{
    char target[64];
    snprintf(target, sizeof target, "%s://%s", scheme, wk_addr);
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_target(o, target);
    if (timeout_ms) rill_session_options_set_operation_timeout_ms(o, timeout_ms);
    rill_session *sess = rill_session_new(g, o, s);
    rill_session_options_free(o);
    return sess;
}

typedef struct model {
    rill_graph *g;
    rill_output x, y, w, b, loss, gs;
    rill_node *train, *init;
    rill_replica_device_setter *setter;
    rill_optimizer *opt;
} model;

static void build(model *m)
{
    rill_status *s = rill_status_new();
    m->g = rill_graph_new();
    m->setter = rill_replica_device_setter_new(1, NULL, "/job:worker/task:0", true,
                                               RILL_PS_ROUND_ROBIN, s);
    rill_graph_push_device_fn(m->g, rill_replica_device_setter_fn, m->setter);
    m->gs = rill_train_get_or_create_global_step(m->g);
    m->x = rill_placeholder(m->g, RILL_FLOAT, rill_shape_vector(4), "x");
    m->y = rill_placeholder(m->g, RILL_FLOAT, rill_shape_vector(4), "y");
    m->w = rill_get_variable(m->g, "weight", RILL_FLOAT, rill_shape_vector(1),
                             rill_random_normal_initializer(0, 1, 1), true);
    m->b = rill_get_variable(m->g, "bias", RILL_FLOAT, rill_shape_vector(1),
                             rill_random_normal_initializer(0, 1, 2), true);
    rill_output pred = rill_add(m->g, rill_mul(m->g, m->x, m->w, NULL), m->b, NULL);
    m->loss = rill_mean(m->g, rill_square(m->g, rill_sub(m->g, m->y, pred, NULL), NULL),
                               NULL, 0, false, NULL);
    m->opt = rill_gradient_descent_optimizer_new(0.05);
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

/* steps of y = 2x + 10 in batches of 4; returns the last global step (or -1). */
static int64_t train(rill_session *sess, model *m, int steps, unsigned seed, float *last_loss)
{
    rill_status *s = rill_status_new();
    rill_tensor *xv = rill_tensor_new(RILL_FLOAT, (int64_t[]){4}, 1);
    rill_tensor *yv = rill_tensor_new(RILL_FLOAT, (int64_t[]){4}, 1);
    rill_output f[] = {m->x, m->y};
    rill_tensor *fv[] = {xv, yv};
    rill_output fe[] = {m->loss, rill_node_output(m->train, 0)}; /* the step it made */
    int64_t last = -1;
    for (int i = 0; i < steps; i++) {
        for (int k = 0; k < 4; k++) {
            float x = (float)(rand_r(&seed) % 2000) / 1000.0f - 1.0f;
            ((float *)rill_tensor_data(xv))[k] = x;
            ((float *)rill_tensor_data(yv))[k] = 2 * x + 10;
        }
        rill_tensor *out[2];
        if (rill_session_run(sess, f, fv, 2, fe, out, 2, &m->train, 1, s) != RILL_OK) {
            fprintf(stderr, "  step %d: %s\n", i, rill_status_message(s));
            last = -1;
            break;
        }
        if (last_loss) *last_loss = *(float *)rill_tensor_data(out[0]);
        last = *(int64_t *)rill_tensor_data(out[1]);
        rill_tensor_free(out[0]);
        rill_tensor_free(out[1]);
    }
    rill_tensor_free(xv);
    rill_tensor_free(yv);
    rill_status_free(s);
    return last;
}

static float fetch_float(rill_session *sess, rill_output o)
{
    rill_status *s = rill_status_new();
    rill_tensor *t = NULL;
    float v = -999;
    if (CHECK(rill_session_run(sess, NULL, NULL, 0, &o, &t, 1, NULL, 0, s) == RILL_OK))
        v = *(float *)rill_tensor_data(t);
    else
        fprintf(stderr, "  fetch: %s\n", rill_status_message(s));
    rill_tensor_free(t);
    rill_status_free(s);
    return v;
}

typedef struct runner {
    rill_session *sess;
    model *m;
    unsigned seed;
    int64_t last;
} runner;

static void *run_thread(void *arg)
{
    runner *r = arg;
    r->last = train(r->sess, r->m, 50, r->seed, NULL);
    return NULL;
}

static void test_train_on_remote_master(void)
{
    pid_t child = serve(false);
    rill_status *s = rill_status_new();
    model m;
    build(&m);
    rill_session *sess = client_session(m.g, "grpc", 0, s);
    if (!CHECK(sess != NULL)) {
        fprintf(stderr, "  %s\n", rill_status_message(s));
        goto out;
    }
    CHECK(rill_session_run_targets(sess, &m.init, 1, s) == RILL_OK);
    float loss = -1;
    CHECK(train(sess, &m, 300, 7, &loss) == 300);
    CHECK(loss >= 0 && loss < 0.05);
    CHECK_NEAR(fetch_float(sess, m.w), 2.0, 0.1);
    CHECK_NEAR(fetch_float(sess, m.b), 10.0, 0.1);

    /* A second session, "rill://", sees the same variables (they live on the ps). */
    rill_session *other = client_session(m.g, "rill", 0, s);
    if (CHECK(other != NULL)) {
        CHECK_NEAR(fetch_float(other, m.b), fetch_float(sess, m.b), 0);
        /* Runs at once from two threads of one session, and one of the other. */
        runner r[3] = {{sess, &m, 1, 0}, {sess, &m, 2, 0}, {other, &m, 3, 0}};
        pthread_t th[3];
        for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, run_thread, &r[i]);
        for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
        for (int i = 0; i < 3; i++) CHECK(r[i].last > 300 && r[i].last <= 450);
        rill_tensor *gs = NULL;
        CHECK(rill_session_run(sess, NULL, NULL, 0, &m.gs, &gs, 1, NULL, 0, s) == RILL_OK);
        if (CHECK(gs != NULL)) CHECK(*(int64_t *)rill_tensor_data(gs) == 450);
        rill_tensor_free(gs);
        rill_session_free(other);
    }

    /* The graph grows between runs: the new op is sent before the run that needs it, and the
     * trained variables are still there. */
    rill_output tripled = rill_mul(m.g, m.b, rill_const_float(m.g, 3, NULL), "tripled");
    CHECK_NEAR(fetch_float(sess, tripled), 3 * fetch_float(sess, m.b), 1e-5);

    /* A missing feed and a feed of the wrong shape: the master's errors, as for a local session. */
    rill_tensor *out = NULL;
    CHECK(rill_session_run(sess, NULL, NULL, 0, &m.loss, &out, 1, NULL, 0, s) ==
          RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "You must feed a value for placeholder tensor");
    rill_tensor *bad = rill_tensor_new(RILL_FLOAT, (int64_t[]){3}, 1);
    rill_tensor *good = rill_tensor_new(RILL_FLOAT, (int64_t[]){4}, 1);
    memset(rill_tensor_data(bad), 0, 12);
    memset(rill_tensor_data(good), 0, 16);
    rill_output f[] = {m.x, m.y};
    rill_tensor *fv[] = {bad, good};
    CHECK(rill_session_run(sess, f, fv, 2, &m.loss, &out, 1, NULL, 0, s) == RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "shape");
    rill_tensor_free(bad);
    rill_tensor_free(good);

    /* A Saver: its prefix is a string feed; the save ops run where the variables are. */
    char dir[] = "/tmp/rill_client_ckpt_XXXXXX";
    if (CHECK(mkdtemp(dir) != NULL)) {
        rill_saver *sv = rill_saver_new(m.g, NULL, 0, 5, 0, s);
        char path[128], prefix[256] = "";
        snprintf(path, sizeof path, "%s/model.ckpt", dir);
        float b_saved = fetch_float(sess, m.b);
        if (CHECK(sv != NULL) &&
            CHECK(rill_saver_save(sv, sess, path, 450, prefix, sizeof prefix, s) == RILL_OK)) {
            CHECK_STR_CONTAINS(prefix, "model.ckpt-450");
            CHECK(train(sess, &m, 20, 9, NULL) == 470);
            CHECK(rill_saver_restore(sv, sess, prefix, s) == RILL_OK);
            CHECK_NEAR(fetch_float(sess, m.b), b_saved, 0);
        } else {
            fprintf(stderr, "  saver: %s\n", rill_status_message(s));
        }
        rill_saver_free(sv);
        char cmd[160];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        CHECK(system(cmd) == 0);
    }
    rill_session_free(sess);
out:
    unbuild(&m);
    rill_status_free(s);
    unserve(child);
}

typedef struct canceller {
    rill_session *sess;
    double after;
} canceller;

static void *cancel_thread(void *arg)
{
    canceller *c = arg;
    usleep((useconds_t)(c->after * 1e6));
    rill_session_cancel(c->sess);
    return NULL;
}

/* A run blocked on the ps (a dequeue from an empty queue) is cancelled from another thread, and
 * a run with a timeout ends DEADLINE_EXCEEDED: neither waits for the step deadline. */
static void test_cancel_and_timeout(void)
{
    pid_t child = serve(false);
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/job:ps/task:0");
    rill_output deq = rill_queue_dequeue(g, "q", RILL_FLOAT, rill_shape_scalar(), -1, "deq");
    rill_graph_pop_device(g);
    rill_session *sess = client_session(g, "grpc", 0, s);
    if (CHECK(sess != NULL)) {
        canceller c = {sess, 0.5};
        pthread_t th;
        pthread_create(&th, NULL, cancel_thread, &c);
        rill_tensor *out = NULL;
        double t0 = mono_now();
        rill_code code = rill_session_run(sess, NULL, NULL, 0, &deq, &out, 1, NULL, 0, s);
        pthread_join(th, NULL);
        CHECK_EQ_INT(code, RILL_CANCELLED);
        CHECK(mono_now() - t0 < 10);
        rill_session_free(sess);
    }
    sess = client_session(g, "grpc", 400, s);
    if (CHECK(sess != NULL)) {
        rill_tensor *out = NULL;
        double t0 = mono_now();
        CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &deq, &out, 1, NULL, 0, s),
                     RILL_DEADLINE_EXCEEDED);
        CHECK(mono_now() - t0 < 10);
        rill_session_free(sess);
    }
    rill_graph_free(g);
    rill_status_free(s);
    unserve(child);
}

/* No server at the address: UNAVAILABLE naming it, after the connect deadline (here the
 * session's operation timeout, which bounds it). */
static void test_no_master(void)
{
    snprintf(wk_addr, sizeof wk_addr, "127.0.0.1:%d", test_free_port());
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_const_float(g, 1, "one");
    double t0 = mono_now();
    rill_session *sess = client_session(g, "grpc", 1500, s);
    CHECK(sess == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_UNAVAILABLE);
    CHECK_STR_CONTAINS(rill_status_message(s), wk_addr);
    CHECK(mono_now() - t0 < 10);
    rill_session_free(sess);
    /* Not a target of either kind. */
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_target(o, "http://localhost:1");
    CHECK(rill_session_new(g, o, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "grpc://host:port");
    rill_session_options_free(o);
    rill_graph_free(g);
    rill_status_free(s);
}

/* Servers with a secret: a client without it is refused at once; with it (the file
 * RILL_CLUSTER_SECRET_FILE names, as for servers) it runs. */
static void test_secret(void)
{
    pid_t child = serve(true);
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/job:ps/task:0");
    rill_output v = rill_add(g, rill_const_float(g, 2, NULL), rill_const_float(g, 3, NULL), "v");
    rill_graph_pop_device(g);
    unsetenv("RILL_CLUSTER_SECRET_FILE");
    double t0 = mono_now();
    rill_session *sess = client_session(g, "grpc", 0, s);
    CHECK(sess == NULL);
    CHECK(rill_status_code(s) == RILL_UNAUTHENTICATED || rill_status_code(s) == RILL_PERMISSION_DENIED);
    CHECK_STR_CONTAINS(rill_status_message(s), wk_addr);
    CHECK(mono_now() - t0 < 20);
    char file[] = "/tmp/rill_client_secret_XXXXXX";
    int fd = mkstemp(file);
    if (CHECK(fd >= 0)) {
        CHECK(write(fd, SECRET, strlen(SECRET)) == (ssize_t)strlen(SECRET));
        close(fd);
        setenv("RILL_CLUSTER_SECRET_FILE", file, 1);
        sess = client_session(g, "grpc", 0, s);
        if (CHECK(sess != NULL)) CHECK_NEAR(fetch_float(sess, v), 5, 0);
        else fprintf(stderr, "  %s\n", rill_status_message(s));
        rill_session_free(sess);
        unsetenv("RILL_CLUSTER_SECRET_FILE");
        unlink(file);
    }
    rill_graph_free(g);
    rill_status_free(s);
    unserve(child);
}

/* A connection naming itself a client may run sessions only: pushing a tensor into the task's
 * rendezvous or reporting a task finished is refused, naming the client. */
static void test_client_may_only_run(void)
{
    pid_t child = serve(false);
    rill_status *s = rill_status_new();
    rill__tcp_options o = {0};
    snprintf(o.identity.task, sizeof o.identity.task, RILL__CLIENT_PREFIX "test");
    rill__channel *ch = NULL;
    for (int i = 0; i < 100 && !ch; i++) {
        ch = rill__tcp_connect(wk_addr, &o, 2, s);
        if (!ch) usleep(50 * 1000);
    }
    if (CHECK(ch != NULL)) {
        rill__mbuf q = {0};
        rill__mbuf_u32(&q, RILL__RPC_FINISHED);
        rill__mbuf_str(&q, "worker");
        rill__mbuf_u32(&q, 0);
        rill__reply rep = {0};
        CHECK(!rill__channel_call(ch, RILL__MSG_REQUEST, q.p, (uint32_t)q.n, NULL, 0, &rep, 5, s));
        CHECK_EQ_INT(rill_status_code(s), RILL_PERMISSION_DENIED);
        CHECK_STR_CONTAINS(rill_status_message(s), "client:test");
        CHECK_STR_CONTAINS(rill_status_message(s), "may only run sessions");
        rill__mbuf_free(&q);
        rill__channel_close(ch);
    }
    rill_status_free(s);
    unserve(child);
}

/* The cluster's processes restart at their addresses: the session's next run finds its graph
 * forgotten there, sends it again and runs (the model starts over: the ps restarted too). */
static void test_master_restarted(void)
{
    pid_t child = serve(false);
    rill_status *s = rill_status_new();
    model m;
    build(&m);
    rill_session *sess = client_session(m.g, "grpc", 0, s);
    if (CHECK(sess != NULL)) {
        CHECK(rill_session_run_targets(sess, &m.init, 1, s) == RILL_OK);
        CHECK(train(sess, &m, 20, 5, NULL) == 20);
        unserve(child);
        child = serve_again(false);
        CHECK(rill_session_run_targets(sess, &m.init, 1, s) == RILL_OK);
        if (!rill_status_ok(s)) fprintf(stderr, "  %s\n", rill_status_message(s));
        CHECK(train(sess, &m, 10, 5, NULL) == 10);
        rill_session_free(sess);
    }
    unbuild(&m);
    rill_status_free(s);
    unserve(child);
}

int main(void)
{
    setenv("RILL_OPENCL_CPU_AS_GPU", "0", 1);
    test_train_on_remote_master();
    test_cancel_and_timeout();
    test_no_master();
    test_secret();
    test_client_may_only_run();
    test_master_restarted();
    TEST_MAIN_END();
}
