/* bench_ps_bandwidth.c - a model of MIB MiB split over P ps tasks, one worker pulling and
 * pushing every variable each step: the step time as P grows (bench/bench_ps_bandwidth.sh runs
 * it with each ps in a network namespace behind a rate-limited link).
 *
 *   bench_ps_bandwidth ps     PS_HOSTS WORKER_HOST TASK
 *   bench_ps_bandwidth worker PS_HOSTS WORKER_HOST MIB STEPS
 *
 * The model: 4 float variables per ps task (placed by replica_device_setter's byte-greedy
 * strategy, so every task holds MIB / P), loss = sum of their squares, plain SGD: a step reads
 * every variable on the worker (the gradient 2w needs it: a pull of MIB) and sends its gradient
 * back (a push of MIB). The worker prints one RESULT line with the best step time of STEPS
 * after two warm-up steps, and the ps tasks serve until the worker's step count is reached
 * (the script kills them). */
#include <rill/rill.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *what, const rill_status *s)
{
    fprintf(stderr, "bench_ps_bandwidth: %s: %s\n", what, rill_status_message(s));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 5 || (strcmp(argv[1], "ps") && strcmp(argv[1], "worker")) ||
        (!strcmp(argv[1], "worker") && argc < 6)) {
        fprintf(stderr, "usage: bench_ps_bandwidth ps PS_HOSTS WORKER_HOST TASK\n"
                        "       bench_ps_bandwidth worker PS_HOSTS WORKER_HOST MIB STEPS\n");
        return 2;
    }
    rill_status *s = rill_status_new();
    rill_cluster_spec *c = rill_cluster_spec_from_hosts(argv[2], argv[3], s);
    if (!c) return fail("cluster", s);
    int P = rill_cluster_spec_num_tasks(c, "ps", s);
    if (!strcmp(argv[1], "ps")) {
        rill_server *srv = rill_server_new(c, "ps", atoi(argv[4]), NULL, s);
        if (!srv) return fail("ps server", s);
        printf("serving\n");
        fflush(stdout);
        rill_server_join(srv, s);
        return 0;
    }
    long mib = atol(argv[4]), steps = atol(argv[5]);
    rill_server *srv = rill_server_new(c, "worker", 0, NULL, s);
    if (!srv) return fail("worker server", s);
    rill_graph *g = rill_graph_new();
    rill_replica_device_setter *rs = rill_replica_device_setter_new(
        P, NULL, "/job:worker/task:0", true, RILL_PS_GREEDY_BY_BYTES, s);
    if (!rs) return fail("device setter", s);
    rill_graph_push_device_fn(g, rill_replica_device_setter_fn, rs);
    int nv = 4 * P;
    int64_t per = mib * (1 << 20) / 4 / nv;
    rill_output loss = {NULL, 0};
    for (int i = 0; i < nv; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", i);
        rill_output w = rill_variable(g, RILL_FLOAT, rill_shape_vector(per),
                                      rill_constant_initializer(0.5), true, name);
        rill_output l = rill_sum(g, rill_square(g, w, NULL), NULL, -1, false, NULL);
        loss = loss.node ? rill_add(g, loss, l, NULL) : l;
    }
    rill_optimizer *opt = rill_gradient_descent_optimizer_new(1e-6);
    rill_node *train = rill_optimizer_minimize(opt, g, loss, (rill_output){NULL, 0}, "train");
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_graph_pop_device(g);
    if (!rill_graph_ok(g)) return fail("graph", rill_graph_status(g));
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_target(o, rill_server_target(srv));
    rill_session *sess = rill_session_new(g, o, s);
    if (!sess) return fail("session", s);
    if (rill_session_run_targets(sess, &init, 1, s) != RILL_OK) return fail("init", s);
    double best = 1e30, total = 0;
    for (long i = 0; i < steps + 2; i++) {
        double t0 = now();
        if (rill_session_run_targets(sess, &train, 1, s) != RILL_OK) return fail("step", s);
        double dt = now() - t0;
        if (i >= 2) {
            total += dt;
            if (dt < best) best = dt;
        }
    }
    printf("RESULT ps_bandwidth_mib=%ld ps_tasks=%d step_s=%.4f mean_s=%.4f gbit_s=%.3f\n",
           mib, P, best, total / (double)steps,
           2.0 * (double)mib * 8 * 1.048576e6 / 1e9 / best);
    rill_session_free(sess);
    rill_session_options_free(o);
    rill_optimizer_free(opt);
    rill_replica_device_setter_free(rs);
    rill_graph_free(g);
    rill_server_free(srv);
    rill_cluster_spec_free(c);
    rill_status_free(s);
    return 0;
}
