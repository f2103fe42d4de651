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
