/* runtime.h - the runtime layer's internals: per-node kernel state, the placer, the partitioner
 * and the executor (the resource manager is the kernels layer's: kernels/kernel.h).
 *
 * An executor plan is the pruned, topologically checked subgraph for one (feeds, fetches,
 * targets) with a kernel chosen per node and a slot per tensor. Running it reuses one cached
 * step state (slots, pending counts, last step's output buffers), so a steady-state step of a
 * small graph allocates nothing. Nodes run inline on the calling thread; when several are ready,
 * expensive ones go to the inter-op pool. */
#ifndef RILL_RUNTIME_H
#define RILL_RUNTIME_H

#include <rill/device_name.h>
#include <rill/session.h>

#include "../kernels/kernel.h"

/* --- per-node kernel state kept across steps (random generators; node_states.c) ---
 * Entries live in fixed pages that never move, so a plan keeps a pointer to its nodes' entries
 * while another thread builds a plan for a grown graph. Two runs of one stateful kernel at once
 * take turns on the entry's lock. */
typedef struct rill__node_state {
    pthread_mutex_t mu; /* held around kernels that keep state, so concurrent runs take turns */
    void *state;
    rill__state_free_fn free_fn;
} rill__node_state;

#define RILL__STATE_PAGE  256
#define RILL__STATE_PAGES 16384 /* up to 4M nodes */
typedef struct rill__node_states {
    pthread_mutex_t mu;
    rill__node_state *pages[RILL__STATE_PAGES];
} rill__node_states;
void rill__node_states_init(rill__node_states *ns);
/* The entry of node id (its page allocated on first use); NULL beyond the limit. */
rill__node_state *rill__node_states_get(rill__node_states *ns, int id);
void rill__node_states_free(rill__node_states *ns);

/* --- placement (placer.c) --- */
typedef struct rill__placement {
    rill__device **assigned; /* per node id; entries [0, n) are placed */
    int n, cap;
} rill__placement;
/* Places the graph's nodes from pl->n on, keeping earlier assignments; prints TF's
 * "<node>: (<Op>): <device>" lines when log is set. */
bool rill__place(rill_graph *g, rill__placement *pl, rill__device *const *devs, int ndev,
                 bool soft, bool log, rill_status *s);
void rill__placement_free(rill__placement *pl);
/* "Device mapping:" and one line per device with a description (TF's session log). */
void rill__log_device_mapping(rill__device *const *devs, int ndev);

/* --- partitioning (partition.c) ---
 * The execution graph of one (feeds, fetches, targets): the pruned nodes cloned with their
 * devices, a _Send/_Recv pair on every edge that crosses devices or memory types, feeds as
 * host placeholders on CPU:0, fetches delivered to host memory. */
typedef struct rill__xgraph {
    rill_graph *g;
    rill_output *feeds;
    rill_output *fetches;
    rill_node **targets;
    int nfeeds, nfetches, ntargets;
} rill__xgraph;
/* The tasks of a cluster, for a master's cut (NULL in one process): which task a device belongs
 * to, a task's job and index, and the client's device (the master's CPU:0), where feeds enter
 * and fetches leave. In this mode an edge between two tasks becomes a _RemoteSend on the
 * producer's device and a _RemoteRecv on the consumer's (a control edge: a scalar sent after
 * its source ran); edges within a task stay direct, since each task's own session cuts its
 * devices, and nothing is fused (each task's session fuses for its CPU). */
typedef struct rill__partition_tasks {
    int (*task_of)(void *arg, const rill__device *d);
    void (*task_name)(void *arg, int task, const char **job, int *index);
    rill__device *client;
    void *arg;
} rill__partition_tasks;

bool rill__partition(rill_graph *g, const rill__placement *pl, const rill__partition_tasks *tasks,
                     const rill_output *feeds, int nfeeds, const rill_output *fetches,
                     int nfetches, rill_node *const *targets, int ntargets, rill__xgraph *out,
                     rill_status *s);
void rill__xgraph_free(rill__xgraph *x);
/* Groups of elementwise ops one _FusedElementwise runs (fuse_elementwise.c). */
typedef struct rill__ew_group {
    int nmembers;
    int *members; /* node ids, ascending */
    int ninputs;
    rill_output *inputs; /* the fused node's inputs */
    int nouts;
    rill_output *outs; /* the member outputs it gives, in order */
    int64_t *prog;     /* graph_internal.h, RILL__EW_* */
    int nprog;
    rill_shape shape; /* of every value (the members' shape) */
} rill__ew_group;
typedef struct rill__ew_groups {
    int n;
    rill__ew_group *g;
    int *group_of; /* per node id: its group, or -1 */
} rill__ew_groups;
/* The groups among need[] nodes that eligible[] allows (on CPU:0, nothing fed, no control edge,
 * not in another fusion); fetches count as readers outside every group. */
void rill__ew_find(rill_graph *g, const char *need, const char *eligible,
                   const rill_output *fetches, int nfetches, rill__ew_groups *out);
void rill__ew_groups_free(rill__ew_groups *x);

/* Fused nodes made by rill__partition since the process started (tests see fusion happen). */
extern atomic_int rill__fusions_made;

/* --- sessions (session.c) --- */
struct rill_session_options {
    int inter_op_threads;
    int intra_op_threads;
    bool log_device_placement;
    bool allow_soft_placement;
    bool allow_growth;
    double memory_fraction;
    char visible_device_list[128];
    char target[256];
    int64_t operation_timeout_ms;
    int ndevice_filters;    /* as set: more than RILL_MAX_DEVICE_FILTERS is an error at open */
    int long_device_filter; /* 1 + the index of a filter too long to keep, or 0 */
    char device_filters[RILL_MAX_DEVICE_FILTERS][RILL_DEVICE_NAME_MAX];
};

/* A step's deadline: at (rill__now_seconds; 0: none) and the timeout it came from (messages);
 * and, for a step of a cluster, who runs it (the master's id) and its number there: the keys of
 * the tensors its tasks push to each other (_RemoteSend / _RemoteRecv). */
typedef struct rill__deadline {
    double at;
    int64_t timeout_ms;
    uint64_t step_owner, step_id;
} rill__deadline;

/* rill_session_run under deadline d (not the session's operation timeout). */
rill_code rill__session_run_until(rill_session *sess, rill__deadline d, const rill_output *feeds,
                                  rill_tensor *const *feed_values, int nfeeds,
                                  const rill_output *fetches, rill_tensor **fetch_values,
                                  int nfetches, rill_node *const *targets, int ntargets,
                                  rill_status *s);
/* The same without waiting (rill__plan_run_async): done(arg, code) runs once the step ended,
 * on the thread that ended it, with fetch_values and s filled. False (s set, done never called)
 * when it could not start. A local session only. */
bool rill__session_run_async(rill_session *sess, rill__deadline d, const rill_output *feeds,
                             rill_tensor *const *feed_values, int nfeeds,
                             const rill_output *fetches, rill_tensor **fetch_values, int nfetches,
                             rill_node *const *targets, int ntargets, rill_status *s,
                             void (*done)(void *arg, rill_code code), void *arg);

/* A local session whose variables live in rm (borrowed; e.g. a server's, shared by every
 * session it runs). rm NULL: the session owns a new one. */
rill_session *rill__session_new_with_rm(rill_graph *g, const rill_session_options *o,
                                        rill__resource_mgr *rm, rill_status *s);

/* A session on sess's graph that shares its variables (a local session: the same resource
 * manager; a cluster session: a master of its own on the same servers), so that a thread can
 * block in it (a queue runner) without holding up sess. */
rill_session *rill__session_sibling(rill_session *sess, rill_status *s);

/* Sessions on a server's target are run by the distributed layer, which registers these hooks
 * when a server starts (the runtime layer does not depend on it). */
typedef struct rill__remote_ops {
    /* A master for target, or NULL with s set (INVALID_ARGUMENT when no server answers it). */
    void *(*open)(const char *target, rill_graph *g, const rill_session_options *o,
                  rill_status *s);
    rill_code (*run)(void *master, rill__deadline d, const rill_output *feeds,
                     rill_tensor *const *feed_values, int nfeeds, const rill_output *fetches,
                     rill_tensor **fetch_values, int nfetches, rill_node *const *targets,
                     int ntargets, rill_status *s);
    void (*close)(void *master);
    /* Cancels the steps in flight (another thread may call it while run blocks). */
    void (*cancel)(void *master);
} rill__remote_ops;
void rill__register_remote(const rill__remote_ops *ops);

/* --- executor --- */
typedef struct rill__plan rill__plan;

typedef struct rill__plan_args {
    rill_graph *graph;
    const rill_output *feeds;
    int nfeeds;
    const rill_output *fetches;
    int nfetches;
    rill_node *const *targets;
    int ntargets;
    bool exec_graph;         /* graph is an execution graph from rill__partition */
    const rill_output *feed_names; /* the user's tensors the feeds stand for (messages) */
    rill__resource_mgr *rm;
    rill__node_states *states;
    rill__threadpool *inter_op_pool; /* may be NULL */
    rill__threadpool *intra_op_pool; /* may be NULL */
    const atomic_uint *cancel;       /* the session's cancel counter (may be NULL) */
    bool in_frame; /* the iteration plan of a while loop (frame.c): its loops are collapsed
                    * already, and a fetch may be dead */
} rill__plan_args;

/* Prunes, checks and prepares. NULL with s set on failure (cycle, missing kernel, ...). */
rill__plan *rill__plan_new(const rill__plan_args *a, rill_status *s);
void rill__plan_free(rill__plan *p);
/* Runs one step: feed_values borrowed, fetch_values receive new references. */
/* rill__plan_run without waiting: the step starts on this thread and ends on whichever thread
 * finishes its last node, which fills fetch_values (kept by the caller until then) and s, and
 * then calls done(arg, code). No thread looks at a parked node meanwhile: a deadline, a
 * cancellation or an abort reaches it only through its wake (the caller sees to that). False,
 * with s set and done never called, when a feed is bad. */
bool rill__plan_run_async(rill__plan *p, rill_tensor *const *feed_values, rill_tensor **fetch_values,
                          rill__deadline d, rill_status *s, void (*done)(void *arg, rill_code code),
                          void *arg);
/* Runs the parked nodes (rill__kctx_park) this thread woke through their wake callbacks, now
 * that it holds no lock the kernels need: the waker of a parked node calls it after letting go
 * of the lock it held while waking (the rendezvous). */
void rill__run_woken(void);
rill_code rill__plan_run(rill__plan *p, rill_tensor *const *feed_values, rill_tensor **fetch_values,
                         rill__deadline d, rill_status *s);
int rill__plan_num_nodes(const rill__plan *p);
rill_node *rill__plan_node(const rill__plan *p, int i);

/* --- while loops (frame.c) --- */
typedef struct rill__frame rill__frame;
/* Collapses every while loop of execution graph g into a _Frame node (see frame.c). */
bool rill__frames_rewrite(rill_graph *g, rill_status *s);
/* The iteration plan of _Frame node n, built with outer's arguments. */
rill__frame *rill__frame_new(const rill__plan_args *outer, rill_node *n, rill_status *s);
void rill__frame_free(rill__frame *f);
/* Runs the loop on its inputs in (borrowed) into out (new references); false with s set when
 * an iteration failed, the deadline passed or the session was cancelled. */
bool rill__frame_run(rill__frame *f, rill_tensor *const *in, rill_tensor **out, rill__deadline d,
                     const atomic_uint *cancel, unsigned cancel_gen, rill_status *s);

#endif
