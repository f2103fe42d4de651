/* rill/session.h - running a graph.
 *
 * A session runs pruned subgraphs of a graph: what the fetches and targets need, stopping at fed
 * tensors. It prepares a plan once per (feeds, fetches, targets) and caches it, so a steady-state
 * step does no planning and, for small graphs, no allocation. Variables live in the session's
 * resource manager and persist across runs.
 */
#ifndef RILL_SESSION_H
#define RILL_SESSION_H

#include <rill/graph.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rill_session rill_session;
typedef struct rill_session_options rill_session_options;

rill_session_options *rill_session_options_new(void);
void rill_session_options_free(rill_session_options *o);
/* Threads of the inter-op pool; 0 (default) is one per core. */
void rill_session_options_set_inter_op_threads(rill_session_options *o, int n);
/* Threads one op may use (TF's intra_op_parallelism_threads), the calling thread included: the
 * matrix products (oneDNN runs on these, never on threads of its own), the elementwise kernels
 * and the optimizer updates. 0 (default) is one per core, shared by every such session; 1 runs
 * each op on the thread that runs it. Idle threads wait on a condition variable: an idle
 * session uses no CPU. */
void rill_session_options_set_intra_op_threads(rill_session_options *o, int n);
/* Print the device mapping when the session is made and where each node lands when it is
 * placed, to stdout, in TF's format (log_device_placement). */
void rill_session_options_set_log_device_placement(rill_session_options *o, bool on);
/* Let the placer move what cannot run where it was asked (TF's allow_soft_placement): within
 * the same task, the requested type and id are freed. */
void rill_session_options_set_allow_soft_placement(rill_session_options *o, bool on);
/* GPU options (TF's GPUOptions). They are per process: the first session creates the devices,
 * and a later session asking for another visible_device_list fails with ALREADY_EXISTS. */
void rill_session_options_set_gpu_allow_growth(rill_session_options *o, bool on);
void rill_session_options_set_gpu_memory_fraction(rill_session_options *o, double fraction);
/* "1,0": GPU:0 is visible GPU 1 and GPU:1 visible GPU 0. NULL or "" for all, in order. */
void rill_session_options_set_gpu_visible_device_list(rill_session_options *o, const char *list);

/* The deadline of every step that does not set its own (TF's operation_timeout_in_ms): see
 * rill_run_options. 0 (default): none. */
void rill_session_options_set_operation_timeout_ms(rill_session_options *o, int64_t ms);

/* ConfigProto.device_filters: a session on a cluster (rill_session_options_set_target) sees,
 * besides its own task's, only the devices matching one of the n filters ("/job:ps",
 * "/job:worker/task:1", ...): a task no filter can match is never contacted, so a worker whose
 * peers finished and went away can still start its session. n = 0 (default): every task. At
 * most RILL_MAX_DEVICE_FILTERS filters (copied); more, or one that does not parse, make
 * rill_session_new fail with INVALID_ARGUMENT. */
#define RILL_MAX_DEVICE_FILTERS 16
void rill_session_options_set_device_filters(rill_session_options *o, const char *const *filters,
                                             int n);

/* A session on g (borrowed: g must outlive the session; nodes may be added later). options may
 * be NULL and are copied. Returns NULL with s set on failure. */
rill_session *rill_session_new(rill_graph *g, const rill_session_options *options, rill_status *s);
/* Frees the session, its plans and its variables. NULL is a no-op. */
void rill_session_free(rill_session *sess);

/* Runs one step. feed_values are borrowed; each fetch_values[i] receives a new reference the
 * caller frees (NULL on failure). Returns the status code (also in s). Safe to call from several
 * threads at once. */
rill_code rill_session_run(rill_session *sess, const rill_output *feeds,
                           rill_tensor *const *feed_values, int nfeeds, const rill_output *fetches,
                           rill_tensor **fetch_values, int nfetches, rill_node *const *targets,
                           int ntargets, rill_status *s);

/* Options of one step (TF's RunOptions). */
typedef struct rill_run_options {
    /* > 0: the step fails with DEADLINE_EXCEEDED ("Timed out waiting for notification: ...",
     * naming what was still waiting) once it has run this long, and is cancelled: waits (queues,
     * accumulators, other tasks of a cluster) end at the deadline and no node starts after it; a
     * kernel already computing finishes first. <= 0: the session's operation timeout, if any. */
    int64_t timeout_ms;
} rill_run_options;

/* rill_session_run with options (NULL: none). */
rill_code rill_session_run_with_options(rill_session *sess, const rill_run_options *options,
                                        const rill_output *feeds, rill_tensor *const *feed_values,
                                        int nfeeds, const rill_output *fetches,
                                        rill_tensor **fetch_values, int nfetches,
                                        rill_node *const *targets, int ntargets, rill_status *s);

/* Runs targets only (no feeds, no fetches): initializers and the like. */
rill_code rill_session_run_targets(rill_session *sess, rill_node *const *targets, int n,
                                   rill_status *s);

/* Cancels the steps running in this session now, from any thread: a step waiting in a queue
 * dequeue or an accumulator take fails with CANCELLED (on a cluster the tasks running its
 * pieces are told). Later steps are not affected. */
void rill_session_cancel(rill_session *sess);

/* Number of plans in the cache (for tests and tools). */
int rill_session_num_plans(const rill_session *sess);

#ifdef __cplusplus
}
#endif
#endif
