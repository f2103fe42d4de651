/* test_threads.c - one set of threads: a session's intra_op and inter_op thread counts bound
 * every thread that works, the matrix library's included (oneDNN's OpenMP team is never used:
 * no thread appears beyond the session's pools however big the product or convolution), the
 * products and the convolution give the
 * same answer with 1 thread and with several, and an idle session uses no CPU (nothing spins
 * after a step: /proc's thread list and getrusage). */
#include "test.h"

#include <rill/rill.h>

#include <dirent.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int threads_now(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

static double cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
           (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

#define N 384

typedef struct net {
    rill_graph *g;
    rill_output x, y, loss;
    rill_node *train, *init;
    rill_optimizer *opt;
} net;

/* Two layers big enough that every product and the updates are split over the pool. */
static void build(net *m)
{
    m->g = rill_graph_new();
    rill_graph_set_seed(m->g, 5);
    rill_graph_push_device(m->g, "/cpu:0");
    m->x = rill_placeholder(m->g, RILL_FLOAT, rill_shape_matrix(N, N), "x");
    rill_output w1 = rill_get_variable(m->g, "w1", RILL_FLOAT, rill_shape_matrix(N, N),
                                       rill_random_normal_initializer(0, 0.05, 0), true);
    rill_output b1 = rill_get_variable(m->g, "b1", RILL_FLOAT, rill_shape_vector(N),
                                       rill_random_normal_initializer(0, 0.05, 0), true);
    rill_output w2 = rill_get_variable(m->g, "w2", RILL_FLOAT, rill_shape_matrix(N, N),
                                       rill_random_normal_initializer(0, 0.05, 0), true);
    rill_output h = rill_relu(
        m->g, rill_bias_add(m->g, rill_matmul(m->g, m->x, w1, false, false, NULL), b1, NULL), NULL);
    m->y = rill_matmul(m->g, h, w2, false, true, NULL);
    /* and a convolution (oneDNN's primitives, split by images): x as 9 images of 32x32x16 */
    rill_output img = rill_reshape(m->g, m->x, (int64_t[]){9, 32, 32, 16}, 4, NULL);
    rill_output k = rill_get_variable(m->g, "k", RILL_FLOAT,
                                      rill_shape_make(4, (int64_t[]){3, 3, 16, 16}),
                                      rill_random_normal_initializer(0, 0.05, 0), true);
    int one[4] = {1, 1, 1, 1};
    rill_output c = rill_conv2d(m->g, img, k, one, "SAME", NULL, NULL);
    m->loss = rill_add(m->g, rill_mean(m->g, rill_square(m->g, m->y, NULL), NULL, -1, false, NULL),
                       rill_mean(m->g, rill_square(m->g, c, NULL), NULL, -1, false, NULL), "loss");
    m->opt = rill_gradient_descent_optimizer_new(0.01);
    m->train = rill_optimizer_minimize(m->opt, m->g, m->loss, (rill_output){0}, "train");
    m->init = rill_global_variables_initializer(m->g, NULL);
    rill_graph_pop_device(m->g);
}

/* Runs `steps` training steps with the given thread counts; returns the last loss, and the
 * number of threads the process gained while the session existed (-1 on failure). */
static double run(net *m, int intra, int inter, int steps, int *gained, double *idle_cpu)
{
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_intra_op_threads(o, intra);
    rill_session_options_set_inter_op_threads(o, inter);
    rill_status *s = rill_status_new();
    int before = threads_now();
    rill_session *sess = rill_session_new(m->g, o, s);
    double loss = NAN;
    rill_tensor *xv = rill_tensor_new(RILL_FLOAT, (int64_t[]){N, N}, 2);
    float *xp = rill_tensor_data(xv);
    for (int i = 0; i < N * N; i++) xp[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
    if (!CHECK(sess != NULL) || !CHECK(rill_session_run_targets(sess, &m->init, 1, s) == RILL_OK))
        goto out;
    for (int i = 0; i < steps; i++) {
        rill_tensor *lv = NULL;
        if (!CHECK(rill_session_run(sess, &m->x, &xv, 1, &m->loss, &lv, 1, &m->train, 1, s) ==
                   RILL_OK)) {
            fprintf(stderr, "  %s\n", rill_status_message(s));
            goto out;
        }
        loss = *(float *)rill_tensor_data(lv);
        rill_tensor_free(lv);
    }
    *gained = threads_now() - before;
    /* Idle: what the process burns in the half second after the steps. */
    sleep_ms(50);
    double c0 = cpu_seconds();
    sleep_ms(500);
    *idle_cpu = cpu_seconds() - c0;
out:
    rill_tensor_free(xv);
    rill_session_free(sess);
    rill_session_options_free(o);
    rill_status_free(s);
    return loss;
}

int main(void)
{
    net m;
    build(&m);
    int g1 = -1, g3 = -1, gd = -1, gw = -1;
    double idle1 = 1, idle3 = 1, idled = 1, idlew = 1;
    /* The first session of a process also starts what lives as long as the process (the device
     * manager's, and PoCL's own threads): counted once, before the sessions measured. */
    run(&m, 1, 1, 1, &gw, &idlew);
    printf("the process's first session started %d threads that outlive it\n", gw);
    double l1 = run(&m, 1, 1, 5, &g1, &idle1);
    double l3 = run(&m, 3, 2, 5, &g3, &idle3);
    double ld = run(&m, 0, 0, 5, &gd, &idled);
    printf("threads gained: intra 1 / inter 1: %d; intra 3 / inter 2: %d; defaults: %d\n", g1, g3,
           gd);
    printf("CPU used in 0.5 s idle: %.4f s, %.4f s, %.4f s\n", idle1, idle3, idled);
    printf("loss after 5 steps: %.9g, %.9g, %.9g\n", l1, l3, ld);
    /* intra 1, inter 1: no pool at all. intra 3, inter 2: 2 + 1 threads and nothing else. */
    CHECK_EQ_INT(g1, 0);
    CHECK_EQ_INT(g3, 3);
    /* Defaults: one per core in each pool, less the calling thread; the intra-op pool is the
     * process's, made on first use (here) and kept. */
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    CHECK_EQ_INT(gd, 2 * (cores - 1));
    /* Thread counts change how a product is split, not what it is. */
    CHECK_NEAR(l1, l3, 1e-5 * fabs(l1));
    CHECK_NEAR(l1, ld, 1e-5 * fabs(l1));
    CHECK(isfinite(l1));
    /* Nothing spins when idle (a spinning thread would burn ~0.5 s here). */
    CHECK(idle1 < 0.05);
    CHECK(idle3 < 0.05);
    CHECK(idled < 0.05);
    rill_optimizer_free(m.opt);
    rill_graph_free(m.g);
    TEST_MAIN_END();
}
