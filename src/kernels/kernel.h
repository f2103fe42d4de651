/* kernel.h - the kernel layer's contract: the kernel context, the kernel registry keyed by
 * (op, device type, dtype), variables as kernels see them, and the resource manager that keeps
 * variables and other resources.
 *
 * The executor (runtime layer) fills a rill__kctx per node execution: input tensors, variable
 * resources for reference inputs, the output slots, last step's output buffers to recycle, and a
 * per-session state slot for stateful kernels (random generators). A kernel reports failure with
 * rill__kctx_fail; the executor adds the node's name. */
#ifndef RILL_KERNELS_KERNEL_H
#define RILL_KERNELS_KERNEL_H

#include "../device/device.h"
#include "../graph/graph_internal.h"

#include <pthread.h>

/* A variable: the value tensor behind a VariableV2 node, owned by a resource manager. */
typedef struct rill__var {
    pthread_mutex_t mu;
    char *name;
    rill_dtype dtype;
    rill_shape shape;   /* declared shape */
    rill_tensor *value; /* NULL until initialised */
} rill__var;

typedef struct rill__kctx {
    const rill_node *node;
    rill_tensor *const *inputs;    /* ninputs entries; NULL for reference inputs */
    rill__var *const *vars;        /* ninputs entries; the variable behind each reference input */
    rill__var *var;                /* VariableV2 nodes: the node's own variable */
    rill_tensor **outputs;         /* noutputs entries, to be set by the kernel */
    rill_tensor **recycle;         /* noutputs entries: last step's outputs (may be NULL) */
    rill_tensor **recycle2;        /* the outputs of the step before (a loop's iterations, whose
                                    * last outputs are still held: NULL elsewhere) */
    void **state;                  /* this node's persistent per-session state */
    rill_status *status;           /* NULL until rill__kctx_fail; the executor frees it */
    rill__threadpool *pool;        /* intra-op pool (may be NULL: run inline) */
    rill__device *device;          /* the device the node runs on (CPU:0 for host kernels) */
    uint32_t host_memory_outputs;  /* from the kernel def: outputs allocated in host memory */
    struct rill__resource_mgr *rm; /* the session's resources (queues, accumulators) */
    const atomic_uint *cancel;     /* the session's cancel counter (NULL: never cancelled) */
    unsigned cancel_gen;           /* its value when the step began */
    double deadline;               /* the step's deadline (rill__now_seconds), 0: none */
    int64_t timeout_ms;            /* the timeout it came from, for messages */
    uint64_t step_owner, step_id;  /* a cluster step's master and number (0: a local step) */
    /* Nodes whose op waits for a peer task (_RemoteRecv): a kernel that cannot finish yet calls
     * rill__kctx_park and returns, and has wake(wake_arg) called (from any thread, once) when it
     * can; the executor then runs the kernel again, on the step's own thread. It also runs it
     * again every 50 ms meanwhile (to check the deadline, cancellation, an aborted step), and
     * once with `abandoned` set when the step failed elsewhere: then the kernel only drops what
     * it registered. No thread waits for a parked node. */
    void (*wake)(void *wake_arg);
    void *wake_arg;
    bool parked;
    bool abandoned;
    /* Set by rill__kctx_defer. */
    void *deferred;
    void (*flush)(void **items, int n, rill_status **errors);
} rill__kctx;

/* Does the deferred work of n nodes at once; errors[i] (NULL on entry) gets a status the
 * executor fails node i's step with and frees. */
typedef void (*rill__flush_fn)(void **items, int n, rill_status **errors);

/* Leaves the node's work for later: the executor calls flush once for every item deferred with
 * it on this thread, when the thread runs out of ready nodes or before it runs one that may
 * block, and only then counts the node done. A _RemoteSend gathers the pushes of a step to one
 * task into one message so. The kernel's inputs are released as usual: item holds its own
 * references. */
static inline void rill__kctx_defer(rill__kctx *ctx, void *item, rill__flush_fn flush)
{
    ctx->deferred = item;
    ctx->flush = flush;
}

static inline void rill__kctx_park(rill__kctx *ctx)
{
    ctx->parked = true;
}

/* True once the session was cancelled after this step began (rill_session_cancel): a kernel
 * that waits checks it and fails with CANCELLED. */
static inline bool rill__kctx_cancelled(const rill__kctx *ctx)
{
    return ctx->cancel && atomic_load(ctx->cancel) != ctx->cancel_gen;
}

typedef void (*rill__kernel_fn)(rill__kctx *ctx);

/* --- the resource manager (resource_mgr.c): variables by name, shared by every session that
 * uses it, and other named resources --- */
typedef struct rill__resource_mgr rill__resource_mgr;
rill__resource_mgr *rill__resource_mgr_new(void);
/* Frees every variable and resource it holds; NULL is a no-op. */
void rill__resource_mgr_free(rill__resource_mgr *rm);
/* The variable named name, created uninitialised on first lookup. A later lookup with another
 * dtype or shape fails with INVALID_ARGUMENT. Borrowed; lives as long as rm. */
rill__var *rill__resource_mgr_var(rill__resource_mgr *rm, const char *name, rill_dtype t,
                                  const rill_shape *shape, rill_status *s);
/* Named resources other than variables (queues, gradient accumulators), kept for as long as the
 * manager lives: the one of kind and name, made by create(arg) on first lookup; free_fn frees it
 * with the manager. NULL when create fails. */
void *rill__resource_lookup(rill__resource_mgr *rm, const char *kind, const char *name,
                            void *(*create)(void *arg), void *arg, void (*free_fn)(void *));
/* Calls fn(arg, obj) for every resource of kind (in creation order), without holding the
 * manager's lock while fn runs (resources live as long as rm). */
void rill__resource_each(rill__resource_mgr *rm, const char *kind, void (*fn)(void *arg, void *obj),
                         void *arg);

/* --- running a function body from a kernel (a dataset's map or filter function) ---
 * A body is a part of the kernel's own graph: argument outputs fed, result outputs fetched.
 * Running it takes a session, which lives in the runtime, a later layer: the runtime installs
 * its runner here when it makes its first session (rill__function_runner_set), and a kernel
 * asks for it (NULL: no runtime in this process, which cannot happen for a kernel a session
 * runs). */
typedef struct rill__function_runner {
    /* A runner of g's nodes whose variables live in rm (borrowed; both outlive the handle),
     * single-threaded, plans cached per signature. NULL with s set on failure. */
    void *(*open)(rill_graph *g, rill__resource_mgr *rm, rill_status *s);
    /* Feeds args[0..nin) with in (borrowed) and fetches outs[0..nout) into out (new
     * references), under the calling step's deadline (0: none) and timeout (for messages). */
    rill_code (*run)(void *h, double deadline, int64_t timeout_ms, const rill_output *args,
                     rill_tensor *const *in, int nin, const rill_output *outs, rill_tensor **out,
                     int nout, rill_status *s);
    void (*close)(void *h); /* NULL is a no-op */
} rill__function_runner;
void rill__function_runner_set(const rill__function_runner *r);
const rill__function_runner *rill__function_runner_get(void);

/* --- the cluster a server's manager belongs to, as its kernels see it --- */
/* Set by the distributed layer when a server publishes its task: every task of the cluster as
 * "/job:J/task:T" (copied), and how long a blocking kernel waits before it reports what it
 * waits for (0: the default, 5 s, which a local session's manager keeps; < 0: never). */
void rill__resource_mgr_set_cluster(rill__resource_mgr *rm, const char *const *tasks, int n,
                                    double stall_report_s);
/* Calls fn(arg, task) for every task of the cluster (none for a local session). */
void rill__resource_mgr_each_task(rill__resource_mgr *rm, void (*fn)(void *arg, const char *task),
                                  void *arg);
/* Seconds a blocking kernel waits before saying what for, then again at that interval (<= 0:
 * it never says). */
double rill__resource_mgr_stall_report_s(rill__resource_mgr *rm);
/* A training task ("/job:worker/task:1") told this task it finished (the distributed layer
 * calls this on a FINISHED report): a sync step that waits only for finished tasks' gradients
 * can never complete, and ends (cpu_data_flow.c). */
void rill__resource_mgr_task_finished(rill__resource_mgr *rm, const char *task);
bool rill__resource_mgr_is_finished(rill__resource_mgr *rm, const char *task);

/* --- what the blocking kernels of a task wait for ---
 * A kernel that blocks (a take, a dequeue, an enqueue into a full queue) registers its wait
 * for as long as it lasts, so that the task can tell a master whose step has waited a while
 * what that step waits for here (the distributed layer's STATUS request) and which tasks it
 * waits on (a gradient accumulator: the workers whose gradients have not come). */
#define RILL__WAIT_TASKS 8
typedef struct rill__wait_report {
    char what[1024];                  /* "sync step 12 has waited 6 s for gradients from ..." */
    char tasks[RILL__WAIT_TASKS][96]; /* the first tasks it waits on ("/job:worker/task:2") */
    int ntasks;                       /* how many it waits on (may exceed RILL__WAIT_TASKS) */
} rill__wait_report;

typedef struct rill__wait {
    uint64_t owner, step; /* the step it belongs to (rill__kctx.step_owner, step_id) */
    /* Fills r (zeroed) with what the wait is for now; called from any thread while the wait is
     * registered, under the registry's lock (a leaf but for the locks describe takes). */
    void (*describe)(void *arg, rill__wait_report *r);
    void *arg;
    struct rill__wait *prev, *next;
} rill__wait;

/* Registers w (borrowed until wait_end) / withdraws it. Neither may be called holding a lock
 * that w's describe takes. */
void rill__resource_mgr_wait_begin(rill__resource_mgr *rm, rill__wait *w);
void rill__resource_mgr_wait_end(rill__resource_mgr *rm, rill__wait *w);
/* Describes the registered waits of step (owner, step) (step 0: every step of owner) into
 * out[0..cap); returns how many there are. */
int rill__resource_mgr_waits(rill__resource_mgr *rm, uint64_t owner, uint64_t step,
                             rill__wait_report *out, int cap);

/* The kernels of _RemoteSend and _RemoteRecv (generic.c) call these, which the distributed
 * layer (src/distributed/rendezvous.c) registers when a server starts; before that they fail. */
typedef struct rill__remote_tensor_ops {
    void (*send)(rill__kctx *ctx);
    void (*recv)(rill__kctx *ctx);
} rill__remote_tensor_ops;
void rill__register_remote_tensors(const rill__remote_tensor_ops *ops);

/* Frees a kernel's per-session state. */
typedef void (*rill__state_free_fn)(void *state);

typedef struct rill__kernel_def {
    const char *op;          /* op name */
    const char *device_type; /* "CPU", "GPU" */
    rill_dtype dtype;        /* RILL_DT_INVALID: any dtype */
    rill__kernel_fn fn;
    rill__state_free_fn state_free;
    uint32_t host_memory_inputs;  /* bit i: input i lives in host memory */
    uint32_t host_memory_outputs; /* bit i: output i lives in host memory */
    bool forwards; /* its one output is its input 0, unchanged: the executor hands the
                    * reference on without calling fn (Identity, Enter, NextIteration, ...) */
    bool constant; /* its one output is its node's "value" attribute (a host Const): the same */
} rill__kernel_def;

/* The kernel for (op, device type, dtype), or NULL. */
const rill__kernel_def *rill__kernel_lookup(const char *op, const char *device_type,
                                            rill_dtype dtype);
/* "  device='CPU'; T in [DT_FLOAT]" lines for error messages; caller frees. */
char *rill__kernels_registered_for(const char *op);

/* The dead tensor (control_flow.c): what a slot holds on a branch a Switch did not take. A node
 * with a dead input (or a control input from a dead node) does not run and its outputs are dead;
 * only Merge sees dead inputs. Holders take references as of any tensor (it is never freed). */
extern rill_tensor rill__dead_tensor;
static inline bool rill__is_dead(const rill_tensor *t)
{
    return t == &rill__dead_tensor;
}
static inline rill_tensor *rill__dead(void)
{
    return rill_tensor_ref(&rill__dead_tensor);
}

/* An output tensor of the given dtype and shape on the node's device (host memory for
 * host-memory outputs), recycled from last step when nobody else holds that buffer. The slot
 * owns it; the returned pointer is borrowed. NULL (ctx failed) when device memory runs out. */
rill_tensor *rill__kctx_alloc_output(rill__kctx *ctx, int i, rill_dtype t, const rill_shape *s);
/* Sets output i to t, transferring the caller's reference. */
void rill__kctx_set_output(rill__kctx *ctx, int i, rill_tensor *t);
/* Records an error (the first one wins). */
void rill__kctx_fail(rill__kctx *ctx, rill_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline bool rill__kctx_ok(const rill__kctx *ctx)
{
    return ctx->status == NULL;
}

/* The random generator of this node instance: seeded from the node's seeds (or the OS when
 * unseeded) on first use, then carried across steps in ctx->state. */
rill__rng *rill__kctx_rng(rill__kctx *ctx);
/* state_free for kernels that use rill__kctx_rng. */
void rill__kctx_rng_free(void *state);

/* Shared run-time checks (checks.c): the CPU and device kernels of an op fail alike.
 * MatMul: both rank 2 and inner sizes equal (transpose attrs read from the node); sets the
 * product's m, k, n. Labels (host memory, int32/int64): all in [0, classes). */
bool rill__check_matmul(rill__kctx *ctx, const rill_tensor *a, const rill_tensor *b, int64_t *m,
                        int64_t *k, int64_t *n);
bool rill__check_labels(rill__kctx *ctx, const rill_tensor *labels, int64_t classes);
/* Broadcasting binary ops: bc for x op y, or "Incompatible shapes: [2,3] vs. [4]". */
struct rill__bcast;
bool rill__check_bcast(rill__kctx *ctx, const rill_tensor *x, const rill_tensor *y,
                       struct rill__bcast *bc);
/* ArgMax's checks (TF's texts): the axis attr (negative from the end) in range of x's rank and
 * not empty. Sets the output shape, the axis' length and the elements after it (x viewed as
 * [outer, len, inner]). */
bool rill__check_argmax(rill__kctx *ctx, const rill_tensor *x, rill_shape *os, int64_t *len,
                        int64_t *inner);
/* Dropout's keep_prob (a host tensor): one value in (0, 1], returned in *keep. */
bool rill__check_keep_prob(rill__kctx *ctx, const rill_tensor *kp, double *keep);
/* StridedSlice's plan for input x (rill__strided_slice_plan, its errors on ctx); with dy (the
 * gradient), also that dy has as many elements as the slice's result. */
struct rill__slice;
bool rill__check_strided_slice(rill__kctx *ctx, const rill_tensor *x, const rill_tensor *dy,
                               struct rill__slice *sl);
/* Reductions: the node's "axes" as a mask over rank dims (all when absent). */
bool rill__check_axes(rill__kctx *ctx, int rank, bool *mask);
/* Sparse softmax cross-entropy: logits [batch, classes], labels [batch]. */
bool rill__check_sparse_xent_shapes(rill__kctx *ctx, const rill_tensor *logits,
                                    const rill_tensor *labels);

/* The windowed ops (Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter, MaxPool, AvgPool,
 * MaxPoolGrad, AvgPoolGrad): checks ctx's inputs (ranks, the int32 [4] size inputs, which live in
 * host memory, and every shape against the geometry the node's attrs give) and fills w (w->f:
 * Conv2D's output channels, the pools' c). */
bool rill__check_window_op(rill__kctx *ctx, rill__window *w);

/* Converts n elements between numeric dtypes. */
void rill__convert(rill_dtype to, void *dst, rill_dtype from, const void *src, int64_t n);

/* Broadcast iteration helper for binary elementwise kernels: strides of a and b over the output
 * shape (0 on broadcast dims). Returns false when shapes are incompatible. */
typedef struct rill__bcast {
    rill_shape out;
    int rank;
    int64_t out_dims[RILL_MAX_DIMS];
    int64_t a_strides[RILL_MAX_DIMS];
    int64_t b_strides[RILL_MAX_DIMS];
    bool same;     /* a and b have the output's shape */
    bool a_scalar; /* a has one element */
    bool b_scalar;
} rill__bcast;
bool rill__bcast_init(rill__bcast *bc, const rill_shape *a, const rill_shape *b);

#endif
