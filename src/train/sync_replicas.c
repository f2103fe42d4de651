/* sync_replicas.c - tf.train.SyncReplicasOptimizer (reference §7) and the queue runner that
 * drives its chief's sync op.
 *
 * The graph, as TF builds it: per variable, a gradient accumulator on the variable's device
 * that keeps only gradients tagged with a local step not older than its own step; a worker's
 * train op applies its gradients there, then takes a token from the token queue on the global
 * step's device (the barrier) and sets its local step to it. The chief's sync op takes the mean
 * of replicas_to_aggregate gradients from each accumulator, applies them with the wrapped
 * optimizer (global_step += 1), and puts tokens_per_step tokens holding the new global step in
 * the queue. Workers beyond replicas_to_aggregate are backups: the slowest gradients of a step
 * arrive after the take and are dropped as stale.
 *
 * Beyond TF: each worker counts its steps whose gradients were dropped (a local variable,
 * rill_sync_replicas_dropped), and every wait has a deadline (rill_sync_replicas_set_timeout). */
#include <rill/train.h>

#include "../graph/graph_internal.h"
#include "../runtime/runtime.h"

#include <string.h>

struct rill_sync_replicas_optimizer {
    rill_optimizer *opt; /* borrowed */
    int replicas_to_aggregate, total_num_replicas, tokens_per_step;
    int64_t timeout_ms;
    rill_graph *g;
    rill_output global_step, local_step, dropped;
    rill_node *train_op, *sync_op, *chief_init_op, *local_step_init_op;
    char *gs_device;
};

rill_sync_replicas_optimizer *rill_sync_replicas_optimizer_new(rill_optimizer *opt,
                                                               int replicas_to_aggregate,
                                                               int total_num_replicas)
{
    if (!opt || replicas_to_aggregate <= 0) return NULL;
    rill_sync_replicas_optimizer *o = rill__calloc(1, sizeof *o);
    RILL_CHECK_ALLOC(o);
    o->opt = opt;
    o->replicas_to_aggregate = replicas_to_aggregate;
    o->total_num_replicas = total_num_replicas > 0 ? total_num_replicas : replicas_to_aggregate;
    o->tokens_per_step = o->total_num_replicas > replicas_to_aggregate ? o->total_num_replicas
                                                                       : replicas_to_aggregate;
    o->timeout_ms = 300 * 1000;
    rill__log(RILL_LOG_INFO, "SyncReplicasV2: replicas_to_aggregate=%d; total_num_replicas=%d",
              o->replicas_to_aggregate, o->total_num_replicas);
    return o;
}

void rill_sync_replicas_optimizer_free(rill_sync_replicas_optimizer *o)
{
    if (!o) return;
    rill__free(o->gs_device);
    rill__free(o);
}

void rill_sync_replicas_set_timeout(rill_sync_replicas_optimizer *o, double seconds)
{
    if (o && seconds > 0) o->timeout_ms = (int64_t)(seconds * 1000);
}

/* The local step and the dropped-steps counter live on this worker: created colocated with a
 * fresh no-op, so a device function does not send them to a ps. */
static void make_local_vars(rill_sync_replicas_optimizer *o, rill_graph *g)
{
    rill_dtype t = rill_output_dtype(o->global_step);
    rill_graph_push_control_dependencies(g, NULL, 0);
    rill_node *anchor = rill_no_op(g, "sync_rep_local_anchor");
    rill_graph_push_colocate_with(g, anchor);
    o->local_step = rill_local_variable(g, t, rill_shape_scalar(), rill_zeros_initializer(),
                                        "sync_rep_local_step");
    o->dropped = rill_local_variable(g, RILL_INT64, rill_shape_scalar(), rill_zeros_initializer(),
                                     "sync_rep_dropped_steps");
    rill_graph_pop_colocate_with(g);
    rill_graph_pop_control_dependencies(g);
}

static char *accum_name(const rill_node *var)
{
    return rill__asprintf("%s/grad_accum", var->name);
}

/* tokens_per_step copies of the global step's value, into the token queue. */
static rill_node *enqueue_tokens(rill_sync_replicas_optimizer *o, rill_graph *g, int n,
                                 const char *name)
{
    int32_t dims[1] = {n};
    int64_t one = 1;
    rill_tensor *d = rill_tensor_from_data(RILL_INT32, &one, 1, dims);
    rill_output cnt = rill_const(g, d, NULL);
    rill_tensor_free(d);
    rill_output tokens = rill_fill(g, cnt, o->global_step, NULL);
    return rill_queue_enqueue_many(g, "sync_token_q", -1, tokens, 0, name);
}

rill_node *rill_sync_replicas_apply_gradients(rill_sync_replicas_optimizer *o, rill_graph *g,
                                              const rill_grad_and_var *gv, int n,
                                              rill_output global_step, const char *name)
{
    if (!rill_graph_ok(g)) return NULL;
    if (!global_step.node) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT, "Global step is required to check staleness");
        return NULL;
    }
    int ngrads = 0;
    for (int i = 0; i < n; i++) ngrads += gv[i].grad.node != NULL;
    if (n <= 0 || ngrads == 0) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT, "Must supply at least one variable");
        return NULL;
    }
    o->g = g;
    o->global_step = global_step;
    rill__free(o->gs_device);
    o->gs_device = rill__strdup(global_step.node->requested_device ? global_step.node->requested_device : "");
    make_local_vars(o, g);
    rill_grad_and_var *agg = rill__calloc((size_t)n, sizeof *agg);
    rill_node **applies = rill__calloc((size_t)n + 1, sizeof *applies);
    rill_node **inits = rill__calloc((size_t)n + 2, sizeof *inits);
    RILL_CHECK_ALLOC(agg);
    RILL_CHECK_ALLOC(applies);
    RILL_CHECK_ALLOC(inits);
    int na = 0, ni = 0;
    rill_output first_accepted = {NULL, 0};
    /* TF's local_step_init_op sets the local step; rill's also zeroes its own dropped-steps
     * counter, so that a Supervisor given either init op as its local_init_op (the usual TF 1.x
     * way: local_init_op=opt.chief_init_op) leaves no variable of this optimizer uninitialised. */
    rill_node *step_init[2] = {
        rill_assign(g, o->local_step, global_step, "sync_rep_local_step_assign").node,
        rill_variable_initializer(o->dropped)};
    o->local_step_init_op = rill_group(g, step_init, 2, "sync_rep_local_step_init");
    inits[ni++] = o->local_step_init_op;
    rill_output nr = rill_const_scalar(g, RILL_INT32, o->replicas_to_aggregate, "replicas_to_aggregate");
    for (int i = 0; i < n; i++) {
        agg[i] = gv[i];
        if (!gv[i].grad.node) continue; /* a None gradient passes through */
        rill_node *var = gv[i].var.node;
        char *sn = accum_name(var);
        rill_graph_push_device(g, var->requested_device ? var->requested_device : "");
        /* Accumulators count steps in int64; a global step of another integer type (the seed's
         * tf.Variable(0) is int32) is cast, as TF's ConditionalAccumulator casts it. */
        bool wide = rill_output_dtype(o->local_step) == RILL_INT64;
        rill_output ls = wide ? o->local_step : rill_cast(g, o->local_step, RILL_INT64, NULL);
        rill_output gs = wide ? global_step : rill_cast(g, global_step, RILL_INT64, NULL);
        rill_output acc = rill_accumulator_apply_grad(g, sn, ls, gv[i].grad, NULL);
        rill_output take = rill_accumulator_take_grad(g, sn, rill_output_dtype(gv[i].var),
                                                      rill_output_shape(gv[i].var), nr,
                                                      o->timeout_ms, NULL);
        inits[ni++] = rill_accumulator_set_global_step(g, sn, rill_output_dtype(gv[i].var),
                                                       rill_output_shape(gv[i].var), gs,
                                                       "SetGlobalStep");
        rill_graph_pop_device(g);
        rill__free(sn);
        applies[na++] = acc.node;
        if (!first_accepted.node) first_accepted = acc;
        agg[i].grad = take;
    }
    rill_graph_push_device(g, o->gs_device);
    rill_node *update = rill_optimizer_apply_gradients(o->opt, g, agg, n, global_step, "update_op");
    rill_graph_push_control_dependencies(g, applies, na);
    rill_output token = rill_queue_dequeue(g, "sync_token_q", rill_output_dtype(global_step),
                                           rill_shape_scalar(), o->timeout_ms, NULL);
    rill_graph_pop_control_dependencies(g);
    rill_graph_push_control_dependencies(g, &update, 1);
    o->sync_op = enqueue_tokens(o, g, o->tokens_per_step, "sync_op");
    rill_graph_pop_control_dependencies(g);
    rill_graph_pop_device(g);
    /* Back on the worker: the local step becomes the token; a dropped gradient is counted. */
    rill_output one = rill_const_scalar(g, RILL_INT64, 1, NULL);
    rill_output lost = rill_sub(g, one, rill_cast(g, first_accepted, RILL_INT64, NULL), NULL);
    rill_output count = rill_assign_add(g, o->dropped, lost, NULL);
    /* As TF: the train op is assign(local_step, token); its value is the new global step. */
    rill_graph_push_control_dependencies(g, &count.node, 1);
    o->train_op = rill_assign(g, o->local_step, token, name ? name : "train_op").node;
    rill_graph_pop_control_dependencies(g);
    o->chief_init_op = rill_group(g, inits, ni, "sync_replicas_chief_init");
    rill__free(agg);
    rill__free(applies);
    rill__free(inits);
    return rill_graph_ok(g) ? o->train_op : NULL;
}

rill_node *rill_sync_replicas_minimize(rill_sync_replicas_optimizer *o, rill_graph *g,
                                       rill_output loss, rill_output global_step, const char *name)
{
    int nv = rill_graph_trainable_variables(g, NULL, 0);
    rill_grad_and_var *gv = rill__calloc((size_t)(nv ? nv : 1), sizeof *gv);
    RILL_CHECK_ALLOC(gv);
    int n = rill_optimizer_compute_gradients(o->opt, g, loss, NULL, 0, gv, nv);
    rill_node *r = n < 0 ? NULL : rill_sync_replicas_apply_gradients(o, g, gv, n, global_step, name);
    rill__free(gv);
    return r;
}

static bool applied(const rill_sync_replicas_optimizer *o, const char *what, rill_status *s)
{
    if (o && o->train_op) return true;
    rill_status_set(s, RILL_FAILED_PRECONDITION, "%s should be called after apply_gradients().",
                    what);
    return false;
}

rill_node *rill_sync_replicas_chief_queue_runner_op(const rill_sync_replicas_optimizer *o,
                                                    rill_status *s)
{
    return applied(o, "get_chief_queue_runner()", s) ? o->sync_op : NULL;
}

rill_node *rill_sync_replicas_chief_init_op(const rill_sync_replicas_optimizer *o)
{
    return o ? o->chief_init_op : NULL;
}

rill_node *rill_sync_replicas_local_step_init_op(const rill_sync_replicas_optimizer *o)
{
    return o ? o->local_step_init_op : NULL;
}

rill_output rill_sync_replicas_local_step(const rill_sync_replicas_optimizer *o)
{
    return o ? o->local_step : (rill_output){NULL, 0};
}

rill_output rill_sync_replicas_dropped(const rill_sync_replicas_optimizer *o)
{
    return o ? o->dropped : (rill_output){NULL, 0};
}

rill_node *rill_sync_replicas_get_init_tokens_op(rill_sync_replicas_optimizer *o, int num_tokens,
                                                 rill_status *s)
{
    if (!applied(o, "get_init_tokens_op()", s)) return NULL;
    int need = o->replicas_to_aggregate - o->total_num_replicas;
    if (num_tokens == -1) num_tokens = o->replicas_to_aggregate;
    else if (num_tokens < need) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Too few tokens to finish the first step: %d (given) vs %d (needed)",
                        num_tokens, need);
        return NULL;
    }
    rill_graph *g = o->g;
    rill_graph_push_control_dependencies(g, NULL, 0);
    rill_node *op;
    if (num_tokens <= 0) {
        op = rill_no_op(g, "no_init_tokens");
    } else {
        rill_graph_push_device(g, o->gs_device);
        op = enqueue_tokens(o, g, num_tokens, "init_tokens");
        rill_graph_pop_device(g);
    }
    rill_graph_pop_control_dependencies(g);
    if (!op) rill_status_copy(s, rill_graph_status(g));
    return op;
}

/* ------------------------------------------------------------------ queue runner --- */

struct rill_queue_runner {
    rill_session *sess; /* a sibling of the user's session */
    rill_node *op;
    pthread_t thread;
    atomic_bool stop, running;
    rill_status *error; /* what stopped the thread, if not a request */
    int64_t steps;
};

static void *qr_main(void *arg)
{
    rill_queue_runner *qr = arg;
    rill_status *s = rill_status_new();
    while (!atomic_load(&qr->stop)) {
        if (rill_session_run_targets(qr->sess, &qr->op, 1, s) == RILL_OK) {
            qr->steps++;
            continue;
        }
        if (!atomic_load(&qr->stop)) {
            rill__log(RILL_LOG_ERROR, "queue runner for '%s' stopped: %s", qr->op->name,
                      rill_status_message(s));
            rill_status_copy(qr->error, s);
        }
        break;
    }
    rill_status_free(s);
    atomic_store(&qr->running, false);
    return NULL;
}

rill_queue_runner *rill_queue_runner_start(rill_session *sess, rill_node *op, rill_status *s)
{
    if (!sess || !op) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "a queue runner needs a session and an op");
        return NULL;
    }
    rill_queue_runner *qr = rill__calloc(1, sizeof *qr);
    RILL_CHECK_ALLOC(qr);
    qr->sess = rill__session_sibling(sess, s);
    if (!qr->sess) {
        rill__free(qr);
        return NULL;
    }
    qr->op = op;
    qr->error = rill_status_new();
    atomic_store(&qr->running, true);
    if (pthread_create(&qr->thread, NULL, qr_main, qr) != 0) {
        rill_status_set(s, RILL_RESOURCE_EXHAUSTED, "cannot start a queue runner thread");
        rill_session_free(qr->sess);
        rill_status_free(qr->error);
        rill__free(qr);
        return NULL;
    }
    return qr;
}

bool rill_queue_runner_running(const rill_queue_runner *qr)
{
    return qr && atomic_load(&qr->running);
}

rill_code rill_queue_runner_error(const rill_queue_runner *qr, rill_status *s)
{
    if (!qr || atomic_load(&qr->running)) return RILL_OK;
    rill_status_copy(s, qr->error);
    return rill_status_code(s);
}

rill_code rill_queue_runner_stop(rill_queue_runner *qr, rill_status *s)
{
    if (!qr) return RILL_OK;
    atomic_store(&qr->stop, true);
    for (int i = 0; atomic_load(&qr->running); i++) {
        if (i % 50 == 0) rill_session_cancel(qr->sess); /* again each second, in case a step began */
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    pthread_join(qr->thread, NULL);
    rill_status_copy(s, qr->error);
    rill_code c = rill_status_code(s);
    rill_session_free(qr->sess);
    rill_status_free(qr->error);
    rill__free(qr);
    return c;
}
