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
/* TF 1.x's AdagradOptimizer (ApplyAdagrad, no epsilon): accum starts at
 * initial_accumulator_value (TF's default 0.1) and must be positive; NULL when it is not. */
rill_optimizer *rill_adagrad_optimizer_new(double learning_rate,
                                           double initial_accumulator_value);
/* TF 1.x's RMSPropOptimizer (ApplyRMSProp; ApplyCenteredRMSProp when centered): slots "rms"
 * ("<var>/RMSProp", starts at 1), "mg" when centered (zeros) and "momentum" (zeros), named
 * RMSProp, RMSProp_1, RMSProp_2 in that order. TF's defaults: decay 0.9, momentum 0,
 * epsilon 1e-10. */
rill_optimizer *rill_rmsprop_optimizer_new(double learning_rate, double decay, double momentum,
                                           double epsilon, bool centered);
/* TF 1.x's AdadeltaOptimizer (ApplyAdadelta): slots "accum", "accum_update" (zeros), named
 * Adadelta, Adadelta_1. TF's defaults: learning_rate 0.001, rho 0.95, epsilon 1e-8. */
rill_optimizer *rill_adadelta_optimizer_new(double learning_rate, double rho, double epsilon);
/* TF 1.x's FtrlOptimizer (ApplyFtrl; ApplyFtrlV2 when l2_shrinkage > 0): slots "accum"
 * (initial_accumulator_value) and "linear" (zeros), named Ftrl, Ftrl_1. l2 gets beta / (2 lr)
 * added, as TF does. NULL unless learning_rate_power <= 0, initial_accumulator_value >= 0 and
 * l1, l2, l2_shrinkage >= 0. */
rill_optimizer *rill_ftrl_optimizer_new(double learning_rate, double learning_rate_power,
                                        double initial_accumulator_value, double l1, double l2,
                                        double l2_shrinkage, double beta);
/* TF 1.x's ProximalAdagradOptimizer (ApplyProximalAdagrad): slot "accumulator"
 * ("<var>/ProximalAdagrad", initial_accumulator_value, which must be positive: NULL if not). */
rill_optimizer *rill_proximal_adagrad_optimizer_new(double learning_rate,
                                                    double initial_accumulator_value, double l1,
                                                    double l2);
/* TF 1.x's AdagradDAOptimizer (ApplyAdagradDA; SparseApplyAdagradDA for a gather's gradient,
 * repeated rows summed first): slots "gradient_accumulator" ("<var>/AdagradDA", zeros) and
 * "gradient_squared_accumulator" ("<var>/AdagradDA_1", the initial value); the updates read
 * global_step + 1 (an int64 scalar, TF's required argument). NULL without a global step. */
rill_optimizer *rill_adagrad_da_optimizer_new(double learning_rate, rill_output global_step,
                                              double initial_gradient_squared_accumulator_value,
                                              double l1, double l2);
/* TF 1.x's ProximalGradientDescentOptimizer (ApplyProximalGradientDescent), no slots. */
rill_optimizer *rill_proximal_gradient_descent_optimizer_new(double learning_rate, double l1,
                                                             double l2);
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
                                   rill_output values, int64_t timeout_ms, const char *name);
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

/* --- tf.train.Saver: checkpoints in TensorFlow's V2 format (read them: rill/checkpoint.h) --- */
typedef struct rill_saver rill_saver;
/* Saves and restores var_list (NULL or nvars <= 0: every global variable) under their node
 * names. Keeps the newest max_to_keep checkpoints (<= 0: all); older ones are deleted unless
 * keep_checkpoint_every_n_hours (<= 0: never) keeps one per so many hours, and the newest
 * checkpoint whose float values are all finite is never deleted by rotation (beyond TF: it stays
 * as one more when the max_to_keep newer ones hold NaN or Inf; saving such a one logs a warning
 * naming the tensors). Ops go under "save/"; on a cluster each task holding variables writes its
 * own data shard. */
rill_saver *rill_saver_new(rill_graph *g, const rill_output *var_list, int nvars, int max_to_keep,
                           double keep_checkpoint_every_n_hours, rill_status *s);
/* As rill_saver_new, each var_list[i] saved under the checkpoint key names[i] (TF's Saver of a
 * {name: variable} dict; INVALID_ARGUMENT for a key given twice). names NULL: node names. */
rill_saver *rill_saver_new_named(rill_graph *g, const rill_output *var_list,
                                 const char *const *names, int nvars, int max_to_keep,
                                 double keep_checkpoint_every_n_hours, rill_status *s);
void rill_saver_free(rill_saver *sv);
/* Writes "<save_path>-<global_step>" (global_step < 0: save_path) as .index + .data-*, then the
 * `checkpoint` state file of save_path's directory; the prefix goes to prefix_out. TF's errors
 * for a missing parent directory and a save path named "checkpoint". */
rill_code rill_saver_save(rill_saver *sv, rill_session *sess, const char *save_path,
                          int64_t global_step, char *prefix_out, size_t n, rill_status *s);
/* Restores every variable of the saver from prefix (NOT_FOUND "Key <name> not found in
 * checkpoint" for a missing one; DATA_LOSS for a corrupt file). */
rill_code rill_saver_restore(rill_saver *sv, rill_session *sess, const char *prefix,
                             rill_status *s);
/* Takes over the list of kept checkpoints (oldest first), as after a restart. Whether they are
 * all-finite is read from their files only when rotation needs to know. */
void rill_saver_recover_last_checkpoints(rill_saver *sv, const char *const *paths, int n);
/* The kept checkpoints, oldest first (borrowed); returns the count. */
int rill_saver_last_checkpoints(const rill_saver *sv, const char **out, int cap);
/* The prefix placeholder ("save/filename") its ops read. */
rill_output rill_saver_filename_tensor(const rill_saver *sv);

/* --- tf.train.Supervisor (see src/train/supervisor.c) --- */
typedef struct rill_supervisor_options {
    bool is_chief;
    const char *logdir;              /* NULL: no checkpoints, no event file */
    rill_node *init_op;              /* NULL: rill_global_variables_initializer */
    rill_node *local_init_op;        /* NULL: rill_local_variables_initializer */
    /* A node with a string output (tf.report_uninitialized_variables) is ready when it
     * returns no name; another node when it runs. NULL: every global variable readable. */
    rill_node *ready_op;
    /* The local init op runs once this is ready (a non-chief waits; a chief fails with TF's
     * text). NULL: once every global variable is readable. */
    rill_node *ready_for_local_init_op;
    rill_saver *saver;               /* NULL: a Saver of every global variable ... */
    bool no_saver;                   /* ... unless this is set (TF: saver=None) */
    rill_output summary_op;          /* {NULL}: rill_summary_merge_all ... */
    bool no_summary_op;              /* ... unless this is set (TF: summary_op=None) */
    rill_output global_step;         /* {NULL}: the graph's global step */
    double save_model_secs;          /* <= 0: no periodic checkpoints [600] */
    double save_summaries_secs;      /* <= 0: no periodic summaries [120] */
    double recovery_wait_secs;       /* a waiting task polls this often [0.5; TF: 30] */
    double max_wait_secs;            /* [7200] */
    const char *checkpoint_basename; /* [model.ckpt] */
    /* The chief restores the latest checkpoint even when the ps tasks hold a live model with a
     * global step newer than the checkpoint's (TF's behaviour). By default [false] it goes on
     * from the live model and logs both steps. */
    bool restore_over_live;
    /* Prepares sessions only (tf.train.MonitoredSession's session creators): the chief restores
     * from logdir or initialises, the others wait, as above; no event file, no services, no
     * checkpoint at stop (the hooks write those). */
    bool prepare_only;
} rill_supervisor_options;
#define RILL_SUPERVISOR_OPTIONS_INIT                                                               \
    {.is_chief = true, .save_model_secs = 600, .save_summaries_secs = 120,                         \
     .recovery_wait_secs = 0.5, .max_wait_secs = 7200, .checkpoint_basename = "model.ckpt"}

typedef struct rill_supervisor rill_supervisor;
struct rill_summary_writer;
/* Builds the default ops it needs into g and, for a chief with a logdir, opens the event file
 * (creating logdir). */
rill_supervisor *rill_supervisor_new(rill_graph *g, const rill_supervisor_options *o,
                                     rill_status *s);
/* A session on g (so may be NULL or name a server's target), prepared: the chief restores the
 * latest checkpoint of logdir (unless the ps tasks hold a live model whose global step is not
 * older: see restore_over_live) or runs init_op, the others wait until the model is ready
 * (DEADLINE_EXCEEDED "Session was not ready after waiting N secs."); then local_init_op. The
 * chief with a logdir starts the standard services. The caller frees the session after stop. */
rill_session *rill_supervisor_prepare_or_wait_for_session(rill_supervisor *sv,
                                                          const rill_session_options *so,
                                                          rill_status *s);
/* sv.start_queue_runners(sess, [qr]) for one op (SyncReplicasOptimizer's chief queue runner). */
rill_code rill_supervisor_start_queue_runner(rill_supervisor *sv, rill_session *sess,
                                             rill_node *op, rill_status *s);
/* True after request_stop, stop, or an error in a service or queue runner. */
bool rill_supervisor_should_stop(rill_supervisor *sv);
void rill_supervisor_request_stop(rill_supervisor *sv, const rill_status *error);
/* Writes a summary (a string tensor from a summary op) to the event file at step. */
rill_code rill_supervisor_summary_computed(rill_supervisor *sv, const rill_tensor *summary,
                                           int64_t step, rill_status *s);
struct rill_summary_writer *rill_supervisor_summary_writer(rill_supervisor *sv);
rill_saver *rill_supervisor_saver(rill_supervisor *sv);
/* Stops the services and queue runners, saves a final checkpoint (chief with a logdir), writes
 * SessionLog STOP; returns the first error a service or queue runner hit. */
rill_code rill_supervisor_stop(rill_supervisor *sv, rill_status *s);
void rill_supervisor_free(rill_supervisor *sv);

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
