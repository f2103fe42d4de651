/* rill/train.h - symbolic gradients and optimizers.
 *
 * rill_gradients adds the reverse-mode graph of sum(ys) with respect to xs, as tf.gradients.
 * Optimizers follow tf.train: compute_gradients, apply_gradients (which bumps global_step when
 * given one) and minimize. Slot variables are named "<var>/Momentum", "<var>/Adam", "<var>/Adam_1".
 */
#ifndef RILL_TRAIN_H
#define RILL_TRAIN_H

#include <rill/ops.h>
#include <rill/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dx[i] receives d(sum of ys)/d xs[i], or {NULL, 0} when xs[i] does not reach any y (TF's None).
 * grad_ys may be NULL (ones) or ny seed gradients. Errors go to the graph's sticky status;
 * returns false on error. */
bool rill_gradients(rill_graph *g, const rill_output *ys, int ny, const rill_output *xs, int nx,
                    const rill_output *grad_ys, rill_output *dx);

typedef struct rill_optimizer rill_optimizer;

typedef struct rill_grad_and_var {
    rill_output grad; /* {NULL, 0} when the loss does not depend on var */
    rill_output var;
} rill_grad_and_var;

rill_optimizer *rill_gradient_descent_optimizer_new(double learning_rate);
rill_optimizer *rill_momentum_optimizer_new(double learning_rate, double momentum,
                                            bool use_nesterov);
/* TF's defaults: beta1 0.9, beta2 0.999, epsilon 1e-8. */
rill_optimizer *rill_adam_optimizer_new(double learning_rate, double beta1, double beta2,
                                        double epsilon);
/* Takes the learning rate from a scalar tensor (a placeholder fed per step for a schedule, or a
 * variable) instead of the constant given at creation. Borrowed; call before apply_gradients. */
void rill_optimizer_set_learning_rate_tensor(rill_optimizer *o, rill_output lr);
void rill_optimizer_free(rill_optimizer *o);
const char *rill_optimizer_name(const rill_optimizer *o);

/* Gradients of loss for var_list (NULL/0: the trainable variables). Writes up to cap pairs into
 * out and returns the pair count; -1 on error (sticky status set). */
int rill_optimizer_compute_gradients(rill_optimizer *o, rill_graph *g, rill_output loss,
                                     const rill_output *var_list, int nvars, rill_grad_and_var *out,
                                     int cap);
/* The update op: one apply per pair with a gradient, then global_step += 1 when global_step is
 * given. Returns NULL on error. */
rill_node *rill_optimizer_apply_gradients(rill_optimizer *o, rill_graph *g,
                                          const rill_grad_and_var *gv, int n,
                                          rill_output global_step, const char *name);
/* compute_gradients then apply_gradients over the trainable variables. */
rill_node *rill_optimizer_minimize(rill_optimizer *o, rill_graph *g, rill_output loss,
                                   rill_output global_step, const char *name);

/* The start-up half of tf.train.Supervisor.prepare_or_wait_for_session: when every global
 * variable of g is initialized already, returns at once; otherwise the chief runs init_op, and
 * any other task polls (every 0.2 s, a log line every 3 s) until the chief has, up to
 * deadline_s, then DEADLINE_EXCEEDED. *ran_init (may be NULL) says whether this call ran
 * init_op. Any other error (an unreachable task) comes back as it is. */
rill_code rill_session_prepare_variables(rill_session *sess, rill_graph *g, rill_node *init_op,
                                         bool is_chief, double deadline_s, bool *ran_init,
                                         rill_status *s);

/* --- gradient accumulators and FIFO queues (what SyncReplicasOptimizer is made of) ---
 * A resource is named by shared_name and lives on the task its op runs on, like a variable.
 * Waits (take, dequeue, an enqueue into a full queue) last at most timeout_ms (<= 0: 300 s),
 * then DEADLINE_EXCEEDED naming the resource; rill_session_cancel ends them with CANCELLED. */
/* Adds grad unless local_step is older than the accumulator's step (then it is dropped and
 * counted). Returns 1 when accepted, 0 when dropped (int32). */
rill_output rill_accumulator_apply_grad(rill_graph *g, const char *shared_name,
                                        rill_output local_step, rill_output grad, const char *name);
/* Waits for num_required gradients, returns their mean and advances the accumulator's step. */
rill_output rill_accumulator_take_grad(rill_graph *g, const char *shared_name, rill_dtype dtype,
                                       rill_shape shape, rill_output num_required,
                                       int64_t timeout_ms, const char *name);
rill_node *rill_accumulator_set_global_step(rill_graph *g, const char *shared_name,
                                            rill_dtype dtype, rill_shape shape,
                                            rill_output new_global_step, const char *name);
rill_output rill_accumulator_num_accumulated(rill_graph *g, const char *shared_name,
                                             rill_dtype dtype, rill_shape shape, const char *name);
/* Gradients dropped as stale so far (int64). */
rill_output rill_accumulator_num_dropped(rill_graph *g, const char *shared_name, rill_dtype dtype,
                                         rill_shape shape, const char *name);
/* Enqueues the slices of values along dimension 0; capacity < 0: unbounded. */
rill_node *rill_queue_enqueue_many(rill_graph *g, const char *shared_name, int64_t capacity,
                                   rill_output values, const char *name);
rill_output rill_queue_dequeue(rill_graph *g, const char *shared_name, rill_dtype dtype,
                               rill_shape shape, int64_t timeout_ms, const char *name);
rill_output rill_queue_size(rill_graph *g, const char *shared_name, rill_dtype dtype,
                            const char *name);

/* --- tf.train.SyncReplicasOptimizer (see src/train/sync_replicas.c) --- */
typedef struct rill_sync_replicas_optimizer rill_sync_replicas_optimizer;
/* Wraps opt (borrowed, must outlive it). total_num_replicas <= 0 means replicas_to_aggregate;
 * more replicas than that are backups. NULL when replicas_to_aggregate <= 0. */
rill_sync_replicas_optimizer *rill_sync_replicas_optimizer_new(rill_optimizer *opt,
                                                               int replicas_to_aggregate,
                                                               int total_num_replicas);
void rill_sync_replicas_optimizer_free(rill_sync_replicas_optimizer *o);
/* How long a worker waits for its token and the chief for gradients [300 s]. */
void rill_sync_replicas_set_timeout(rill_sync_replicas_optimizer *o, double seconds);
/* The worker's train op (TF's texts for a missing global step or no gradients). */
rill_node *rill_sync_replicas_apply_gradients(rill_sync_replicas_optimizer *o, rill_graph *g,
                                              const rill_grad_and_var *gv, int n,
                                              rill_output global_step, const char *name);
rill_node *rill_sync_replicas_minimize(rill_sync_replicas_optimizer *o, rill_graph *g,
                                       rill_output loss, rill_output global_step,
                                       const char *name);
/* The chief's sync op, which its queue runner runs in a loop (FAILED_PRECONDITION before
 * apply_gradients, as TF's ValueError). */
rill_node *rill_sync_replicas_chief_queue_runner_op(const rill_sync_replicas_optimizer *o,
                                                    rill_status *s);
/* num_tokens tokens (-1: replicas_to_aggregate) holding the global step; 0 gives a no-op. */
rill_node *rill_sync_replicas_get_init_tokens_op(rill_sync_replicas_optimizer *o, int num_tokens,
                                                 rill_status *s);
/* The chief's init: local step := global step, and each accumulator's step := global step. */
rill_node *rill_sync_replicas_chief_init_op(const rill_sync_replicas_optimizer *o);
/* Another worker's init: local step := global step. */
rill_node *rill_sync_replicas_local_step_init_op(const rill_sync_replicas_optimizer *o);
rill_output rill_sync_replicas_local_step(const rill_sync_replicas_optimizer *o);
/* This worker's steps whose gradients arrived too late and were dropped (a local int64). */
rill_output rill_sync_replicas_dropped(const rill_sync_replicas_optimizer *o);

/* --- tf.train.QueueRunner with one op --- */
typedef struct rill_queue_runner rill_queue_runner;
/* A thread that runs op again and again, in a session of its own that shares sess's graph and
 * variables (so that it can block without holding up sess), until stopped or a step fails. */
rill_queue_runner *rill_queue_runner_start(rill_session *sess, rill_node *op, rill_status *s);
bool rill_queue_runner_running(const rill_queue_runner *qr);
/* The error that ended the thread (OK while it runs). */
rill_code rill_queue_runner_error(const rill_queue_runner *qr, rill_status *s);
/* Cancels the step in flight, joins and frees; returns the error that had ended it, if any. */
rill_code rill_queue_runner_stop(rill_queue_runner *qr, rill_status *s);

/* --- tf.train.replica_device_setter --- */
typedef enum rill_ps_strategy {
    RILL_PS_ROUND_ROBIN,     /* TF's default: ps tasks in turn, in variable creation order */
    RILL_PS_GREEDY_BY_BYTES, /* the ps task holding the fewest bytes so far */
} rill_ps_strategy;

typedef struct rill_replica_device_setter rill_replica_device_setter;

/* A device function state for rill_graph_push_device_fn(g, rill_replica_device_setter_fn, r):
 * variables go to "<ps_device>/task:N" (N by strategy), every other op to worker_device; fields
 * set by inner device scopes win (merge_devices). ps_device NULL means "/job:ps", worker_device
 * NULL "/job:worker". ps_tasks <= 0 returns NULL with s OK (TF returns None: push NULL as a
 * barrier). A malformed device string is INVALID_ARGUMENT. Caller frees. */
rill_replica_device_setter *rill_replica_device_setter_new(int ps_tasks, const char *ps_device,
                                                           const char *worker_device,
                                                           bool merge_devices,
                                                           rill_ps_strategy strategy,
                                                           rill_status *s);
void rill_replica_device_setter_free(rill_replica_device_setter *r);
/* The device function (arg is the setter). The returned string is owned by the setter and valid
 * until its next call. */
const char *rill_replica_device_setter_fn(void *arg, const rill_node *n);
/* Bytes of variables assigned to ps task so far (-1 for a bad task). */
int64_t rill_replica_device_setter_task_bytes(const rill_replica_device_setter *r, int task);

#ifdef __cplusplus
}
#endif
#endif
