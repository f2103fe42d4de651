/* ops_data_flow.c - the ops SyncReplicasOptimizer is made of: gradient accumulators (TF's
 * ConditionalAccumulator) and FIFO queues (the token queue).
 *
 * A resource is named by the op's shared_name attribute and lives in the resource manager of
 * the task the op runs on (a ps), like a variable; TF's handle-producing ops are folded into
 * the ops that use the resource. dtype and shape attributes describe the gradients (or queue
 * elements); the first op to touch a resource creates it with them. Waiting ops (take, dequeue)
 * are `blocking`: they wait at most timeout_ms (0: 300 s), and fail with CANCELLED when their
 * session is cancelled. */
#include "graph_internal.h"

#include <rill/train.h>

#include <string.h>

static bool check_in(rill_node *n, int i, rill_dtype want, const char *what, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, i);
    if (t == want) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Input '%s' of '%s' Op has type %s that does not match expected type of %s.",
                    what, n->op->name, rill_dtype_name(t), rill_dtype_name(want));
    return false;
}

static void apply_grad_shape(rill_node *n, rill_status *s)
{
    if (!check_in(n, 0, RILL_INT64, "local_step", s)) return;
    if (!check_in(n, 1, rill__attr_type(n, "dtype", RILL_FLOAT), "gradient", s)) return;
    n->out_dtypes[0] = RILL_INT32;
    n->out_shapes[0] = rill_shape_scalar();
}

static void take_grad_shape(rill_node *n, rill_status *s)
{
    if (!check_in(n, 0, RILL_INT32, "num_required", s)) return;
    const rill__attr *sh = rill__node_attr(n, "shape");
    n->out_dtypes[0] = rill__attr_type(n, "dtype", RILL_FLOAT);
    n->out_shapes[0] = sh ? sh->v.shape : rill_shape_unknown();
}

static void set_step_shape(rill_node *n, rill_status *s)
{
    check_in(n, 0, RILL_INT64, "new_global_step", s);
}

static void count_shape(rill_node *n, rill_status *s)
{
    (void)s;
    n->out_dtypes[0] = strcmp(n->op->name, "AccumulatorNumDropped") == 0 ? RILL_INT64 : RILL_INT32;
    n->out_shapes[0] = rill_shape_scalar();
}

static void enqueue_many_shape(rill_node *n, rill_status *s)
{
    if (!check_in(n, 0, rill__attr_type(n, "dtype", RILL_INT64), "components", s)) return;
    rill_shape sh = rill__in_shape(n, 0);
    if (sh.rank == 0)
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be at least rank 1 but is rank 0 for '%s' (op: '%s')", n->name,
                        n->op->name);
}

static void dequeue_shape(rill_node *n, rill_status *s)
{
    (void)s;
    const rill__attr *sh = rill__node_attr(n, "shape");
    n->out_dtypes[0] = rill__attr_type(n, "dtype", RILL_INT64);
    n->out_shapes[0] = sh ? sh->v.shape : rill_shape_unknown();
}

const rill__op_def rill__ops_data_flow[] = {
    {.name = "AccumulatorApplyGradient",
     .default_name = "AccumulatorApplyGradient",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .stateful = true,
     .shape = apply_grad_shape,
     .type_attr = "dtype"},
    {.name = "AccumulatorTakeGradient",
     .default_name = "AccumulatorTakeGradient",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .stateful = true,
     .blocking = true,
     .shape = take_grad_shape,
     .type_attr = "dtype"},
    {.name = "AccumulatorSetGlobalStep",
     .default_name = "AccumulatorSetGlobalStep",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 0,
     .stateful = true,
     .shape = set_step_shape,
     .type_attr = "dtype"},
    {.name = "AccumulatorNumAccumulated",
     .default_name = "AccumulatorNumAccumulated",
     .noutputs = 1,
     .stateful = true,
     .shape = count_shape,
     .type_attr = "dtype"},
    {.name = "AccumulatorNumDropped",
     .default_name = "AccumulatorNumDropped",
     .noutputs = 1,
     .stateful = true,
     .shape = count_shape,
     .type_attr = "dtype"},
    {.name = "QueueEnqueueMany",
     .default_name = "QueueEnqueueMany",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 0,
     .stateful = true,
     .blocking = true,
     .shape = enqueue_many_shape,
     .type_attr = "dtype"},
    {.name = "QueueDequeue",
     .default_name = "QueueDequeue",
     .noutputs = 1,
     .stateful = true,
     .blocking = true,
     .shape = dequeue_shape,
     .type_attr = "dtype"},
    {.name = "QueueSize",
     .default_name = "QueueSize",
     .noutputs = 1,
     .stateful = true,
     .shape = count_shape,
     .type_attr = "dtype"},
    {0},
};

/* --- builders --- */

static rill_node *make(rill_graph *g, const char *op, const char *name, const rill_output *in,
                       int nin, const char *shared_name, rill_dtype dtype, rill_shape shape,
                       int64_t extra, const char *extra_name)
{
    rill__attr a[4] = {RILL__A_STRING("shared_name", shared_name), RILL__A_TYPE("dtype", dtype),
                       RILL__A_SHAPE("shape", shape), RILL__A_INT(extra_name, extra)};
    return rill__node_create(g, op, name, in, nin, a, extra_name ? 4 : 3);
}

rill_output rill_accumulator_apply_grad(rill_graph *g, const char *shared_name, rill_output local_step,
                                        rill_output grad, const char *name)
{
    rill_output in[2] = {local_step, grad};
    rill_dtype t = grad.node ? grad.node->out_dtypes[grad.index] : RILL_FLOAT;
    rill_shape sh = grad.node ? grad.node->out_shapes[grad.index] : rill_shape_unknown();
    rill_node *n = make(g, "AccumulatorApplyGradient", name, in, 2, shared_name, t, sh, 0, NULL);
    return (rill_output){n, 0};
}

rill_output rill_accumulator_take_grad(rill_graph *g, const char *shared_name, rill_dtype dtype,
                                       rill_shape shape, rill_output num_required,
                                       int64_t timeout_ms, const char *name)
{
    rill_node *n = make(g, "AccumulatorTakeGradient", name, &num_required, 1, shared_name, dtype,
                        shape, timeout_ms, "timeout_ms");
    return (rill_output){n, 0};
}

rill_node *rill_accumulator_set_global_step(rill_graph *g, const char *shared_name, rill_dtype dtype,
                                            rill_shape shape, rill_output new_global_step,
                                            const char *name)
{
    return make(g, "AccumulatorSetGlobalStep", name, &new_global_step, 1, shared_name, dtype,
                shape, 0, NULL);
}

rill_output rill_accumulator_num_accumulated(rill_graph *g, const char *shared_name,
                                             rill_dtype dtype, rill_shape shape, const char *name)
{
    rill_node *n = make(g, "AccumulatorNumAccumulated", name, NULL, 0, shared_name, dtype, shape,
                        0, NULL);
    return (rill_output){n, 0};
}

rill_output rill_accumulator_num_dropped(rill_graph *g, const char *shared_name, rill_dtype dtype,
                                         rill_shape shape, const char *name)
{
    rill_node *n =
        make(g, "AccumulatorNumDropped", name, NULL, 0, shared_name, dtype, shape, 0, NULL);
    return (rill_output){n, 0};
}

rill_node *rill_queue_enqueue_many(rill_graph *g, const char *shared_name, int64_t capacity,
                                   rill_output values, int64_t timeout_ms, const char *name)
{
    rill_dtype t = values.node ? values.node->out_dtypes[values.index] : RILL_INT64;
    rill_shape el = rill_shape_unknown();
    if (values.node && values.node->out_shapes[values.index].rank > 0) {
        rill_shape v = values.node->out_shapes[values.index];
        el = rill_shape_make(v.rank - 1, v.dims + 1);
    }
    rill__attr a[5] = {RILL__A_STRING("shared_name", shared_name), RILL__A_TYPE("dtype", t),
                       RILL__A_SHAPE("shape", el), RILL__A_INT("capacity", capacity),
                       RILL__A_INT("timeout_ms", timeout_ms)};
    return rill__node_create(g, "QueueEnqueueMany", name, &values, 1, a, 5);
}

rill_output rill_queue_dequeue(rill_graph *g, const char *shared_name, rill_dtype dtype,
                               rill_shape shape, int64_t timeout_ms, const char *name)
{
    rill_node *n = make(g, "QueueDequeue", name, NULL, 0, shared_name, dtype, shape, timeout_ms,
                        "timeout_ms");
    return (rill_output){n, 0};
}

rill_output rill_queue_size(rill_graph *g, const char *shared_name, rill_dtype dtype,
                            const char *name)
{
    rill_node *n =
        make(g, "QueueSize", name, NULL, 0, shared_name, dtype, rill_shape_unknown(), 0, NULL);
    return (rill_output){n, 0};
}
