/* test_master.c - the distributed runtime in one process over real loopback sockets: servers for
 * a ps and workers, sessions on a worker's target whose variables live on the ps, asynchronous
 * training by two workers at once, the local server, and the errors a user meets (a task that
 * never comes up, a ps that goes away mid-run). */
#include <rill/rill.h>

#include "test.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
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

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(fd, (struct sockaddr *)&a, sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
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

static void test_async_two_workers(void)
{
    rill_status *s = rill_status_new();
    char ps[32], w0[32], w1[32], workers[80];
    snprintf(ps, sizeof ps, "127.0.0.1:%d", free_port());
    snprintf(w0, sizeof w0, "127.0.0.1:%d", free_port());
    snprintf(w1, sizeof w1, "127.0.0.1:%d", free_port());
    snprintf(workers, sizeof workers, "%s,%s", w0, w1);
    rill_cluster_spec *c = rill_cluster_spec_from_hosts(ps, workers, s);
    rill_server *sp = rill_server_new(c, "ps", 0, NULL, s);
    rill_server *s0 = rill_server_new(c, "worker", 0, NULL, s);
    rill_server *s1 = rill_server_new(c, "worker", 1, NULL, s);
    if (!CHECK(sp && s0 && s1)) {
        fprintf(stderr, "%s\n", rill_status_message(s));
        return;
    }
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
    rill_server_free(sp);
    sp = NULL;
    rill_tensor *t = NULL;
    rill_code code = rill_session_run(chief, NULL, NULL, 0, &j[0].m.w, &t, 1, NULL, 0, s);
    CHECK(code == RILL_UNAVAILABLE || code == RILL_DEADLINE_EXCEEDED);
    CHECK_STR_CONTAINS(rill_status_message(s), "/job:ps");
    rill_session_free(chief);
    for (int i = 0; i < 2; i++) unbuild(&j[i].m);
    rill_server_free(s0);
    rill_server_free(s1);
    rill_cluster_spec_free(c);
    rill_status_free(s);
}

static void test_unreachable_ps(void)
{
    rill_status *s = rill_status_new();
    char ps[32], wk[32];
    snprintf(ps, sizeof ps, "127.0.0.1:%d", free_port()); /* nothing will listen there */
    snprintf(wk, sizeof wk, "127.0.0.1:%d", free_port());
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
    /* A target nobody answers. */
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_target(o, "rill://127.0.0.1:1");
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
    snprintf(ps, sizeof ps, "127.0.0.1:%d", free_port());
    snprintf(wk, sizeof wk, "127.0.0.1:%d", free_port());
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

int main(void)
{
    setenv("RILL_OPENCL_CPU_AS_GPU", "0", 1);
    test_local_server();
    test_unreachable_ps();
    test_async_two_workers();
    test_hung_ps();
    TEST_MAIN_END();
}
