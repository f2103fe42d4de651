/* prepare.c - the start-up half of tf.train.Supervisor.prepare_or_wait_for_session: on a cluster
 * the chief initialises the variables (unless they already are: a restarted chief goes on from
 * the ps tasks' values), and every other task waits until the chief has. */
#include <rill/train.h>

#include "../graph/graph_internal.h"

#include <string.h>
#include <time.h>

static bool uninitialized(const rill_status *s)
{
    return rill_status_code(s) == RILL_FAILED_PRECONDITION &&
           strstr(rill_status_message(s), "uninitialized") != NULL;
}

/* Fetches every variable once: OK when all are initialized. */
static rill_code ready(rill_session *sess, const rill_output *vars, int n, rill_status *s)
{
    if (n == 0) return RILL_OK;
    rill_tensor **v = rill__calloc((size_t)n, sizeof *v);
    RILL_CHECK_ALLOC(v);
    rill_code c = rill_session_run(sess, NULL, NULL, 0, vars, v, n, NULL, 0, s);
    for (int i = 0; i < n; i++) rill_tensor_free(v[i]);
    rill__free(v);
    return c;
}

rill_code rill_session_prepare_variables(rill_session *sess, rill_graph *g, rill_node *init_op,
                                         bool is_chief, double deadline_s, bool *ran_init,
                                         rill_status *s)
{
    if (ran_init) *ran_init = false;
    int n = rill_graph_global_variables(g, NULL, 0);
    rill_output *vars = rill__calloc((size_t)(n ? n : 1), sizeof *vars);
    RILL_CHECK_ALLOC(vars);
    rill_graph_global_variables(g, vars, n);
    rill_code c = ready(sess, vars, n, s);
    if (c == RILL_OK || !uninitialized(s)) goto out;
    if (is_chief) {
        c = rill_session_run_targets(sess, &init_op, 1, s);
        if (c == RILL_OK && ran_init) *ran_init = true;
        goto out;
    }
    double start = rill__now_seconds(), next_log = start + 3;
    for (;;) {
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
        c = ready(sess, vars, n, s);
        if (c == RILL_OK || !uninitialized(s)) break;
        double t = rill__now_seconds();
        if (t - start >= deadline_s) {
            char last[512];
            snprintf(last, sizeof last, "%s", rill_status_message(s));
            rill_status_set(s, RILL_DEADLINE_EXCEEDED,
                            "the chief did not initialize the variables within %.0f s (last: %s)",
                            deadline_s, last);
            c = RILL_DEADLINE_EXCEEDED;
            break;
        }
        if (t >= next_log) {
            rill__log(RILL_LOG_INFO, "waiting for the chief to initialize the variables (%.0f s)",
                      t - start);
            next_log = t + 3;
        }
    }
out:
    rill__free(vars);
    return c;
}
