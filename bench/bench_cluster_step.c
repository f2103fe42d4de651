/* bench_cluster_step.c - the seed's step on a cluster (1 ps + 1 worker, loopback, one process):
 * per-step time of a session on the worker's target, whose variables live on the ps, against the
 * floor of two raw TCP round trips (the master makes a pre run and a post run on the ps per
 * step), measured in the same run. */
#include <rill/rill.h>

#include "core/core.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* Raw TCP ping-pong of 8 bytes: the floor of one round trip. */
static void *echo(void *arg)
{
    int fd = *(int *)arg;
    char b[8];
    while (recv(fd, b, 8, MSG_WAITALL) == 8) send(fd, b, 8, 0);
    return NULL;
}

static double raw_rtt(int n)
{
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(l, (struct sockaddr *)&a, sizeof a);
    socklen_t len = sizeof a;
    getsockname(l, (struct sockaddr *)&a, &len);
    listen(l, 1);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    connect(c, (struct sockaddr *)&a, sizeof a);
    int srv = accept(l, NULL, NULL);
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(srv, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_t th;
    pthread_create(&th, NULL, echo, &srv);
    char b[8] = {0};
    double t0 = rill__now_seconds();
    for (int i = 0; i < n; i++) {
        send(c, b, 8, 0);
        recv(c, b, 8, MSG_WAITALL);
    }
    double t = (rill__now_seconds() - t0) / n;
    close(c);
    pthread_join(th, NULL);
    close(srv);
    close(l);
    return t;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 3000;
    rill_status *s = rill_status_new();
    char ps[32], wk[32];
    snprintf(ps, sizeof ps, "127.0.0.1:%d", free_port());
    snprintf(wk, sizeof wk, "127.0.0.1:%d", free_port());
    rill_cluster_spec *c = rill_cluster_spec_from_hosts(ps, wk, s);
    rill_server *sp = rill_server_new(c, "ps", 0, NULL, s);
    rill_server *sw = sp ? rill_server_new(c, "worker", 0, NULL, s) : NULL;
    if (!sw) {
        fprintf(stderr, "servers: %s\n", rill_status_message(s));
        return 1;
    }
    rill_graph *g = rill_graph_new();
    rill_replica_device_setter *r =
        rill_replica_device_setter_new(1, NULL, "/job:worker/task:0", true, RILL_PS_ROUND_ROBIN, s);
    rill_graph_push_device_fn(g, rill_replica_device_setter_fn, r);
    rill_output gs = rill_train_get_or_create_global_step(g);
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "input");
    rill_output y = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "label");
    rill_output w = rill_get_variable(g, "weight", RILL_FLOAT, rill_shape_vector(1),
                                      rill_random_normal_initializer(0, 1, 1), true);
    rill_output b = rill_get_variable(g, "biase", RILL_FLOAT, rill_shape_vector(1),
                                      rill_random_normal_initializer(0, 1, 2), true);
    rill_output loss =
        rill_square(g, rill_sub(g, y, rill_add(g, rill_mul(g, x, w, NULL), b, NULL), NULL), NULL);
    rill_optimizer *opt = rill_gradient_descent_optimizer_new(0.01);
    rill_node *train = rill_optimizer_minimize(opt, g, loss, gs, NULL);
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_graph_pop_device(g);
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_target(o, rill_server_target(sw));
    rill_session *sess = rill_session_new(g, o, s);
    if (!sess || rill_session_run_targets(sess, &init, 1, s) != RILL_OK) {
        fprintf(stderr, "session: %s\n", rill_status_message(s));
        return 1;
    }
    double rtt_before = raw_rtt(steps);
    rill_tensor *xv = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    rill_tensor *yv = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    rill_output f[] = {x, y};
    rill_tensor *fv[] = {xv, yv};
    rill_output fe[] = {loss, rill_node_output(train, 0)};
    rill_tensor *out[2];
    double t0 = 0;
    for (int i = 0; i < steps + 200; i++) {
        if (i == 200) t0 = rill__now_seconds();
        float xx = (float)(i % 200) / 100.0f - 1.0f;
        ((float *)rill_tensor_data(xv))[0] = xx;
        ((float *)rill_tensor_data(yv))[0] = 2 * xx + 10;
        if (rill_session_run(sess, f, fv, 2, fe, out, 2, NULL, 0, s) != RILL_OK) {
            fprintf(stderr, "step: %s\n", rill_status_message(s));
            return 1;
        }
        rill_tensor_free(out[0]);
        rill_tensor_free(out[1]);
    }
    double step = (rill__now_seconds() - t0) / steps;
    /* The VM's loopback latency drifts: take the better of a measurement before and after. */
    double rtt = raw_rtt(steps), rtt0 = rtt_before;
    if (rtt0 < rtt) rtt = rtt0;
    printf("seed step on a cluster (1 ps + 1 worker, loopback): %.1f us/step, %.0f steps/s\n",
           step * 1e6, 1 / step);
    printf("raw TCP round trip %.1f us; floor of two round trips %.1f us; ratio %.2fx\n",
           rtt * 1e6, 2 * rtt * 1e6, step / (2 * rtt));
    printf("RESULT cluster_seed_step_us=%.2f raw_rtt_us=%.2f ratio_vs_2rtt=%.3f\n", step * 1e6,
           rtt * 1e6, step / (2 * rtt));
    rill_tensor_free(xv);
    rill_tensor_free(yv);
    rill_session_free(sess);
    rill_session_options_free(o);
    rill_optimizer_free(opt);
    rill_replica_device_setter_free(r);
    rill_graph_free(g);
    rill_server_free(sw);
    rill_server_free(sp);
    rill_cluster_spec_free(c);
    rill_status_free(s);
    return 0;
}
