/* ops_queue.c - TF's queue API: FIFOQueueV2 and RandomShuffleQueueV2 make a queue of tuples
 * (one tensor per component) and output its handle, a string scalar naming the queue in the
 * session's resource manager; QueueEnqueueV2, QueueEnqueueManyV2, QueueDequeueV2,
 * QueueDequeueManyV2, QueueDequeueUpToV2, QueueCloseV2 and QueueSizeV2 take that handle as
 * input 0. Kernels: kernels/cpu/cpu_queue.c.
 *
 * TF's list attributes are INTS here: component_types holds dtype enums; shapes holds, per
 * component, its rank and then its dims (rank -1: unknown; -1: an unknown dim), and is empty
 * when the queue has no shapes. CountUpTo (tf.train.limit_epochs' counter) is here too. The dequeue
 * ops carry component_types and shapes too (TF reads them off the handle's shape data), and
 * num_outputs = the number of components. */
#include "graph_internal.h"

#include <string.h>

int rill__queue_components(const rill_node *n, const char *attr, rill_dtype *types,
                           rill_shape *shapes, int cap, bool *has_shapes)
{
    const rill__attr *t = rill__node_attr(n, attr);
    const rill__attr *sh = rill__node_attr(n, "shapes");
    int nc = t && t->kind == RILL__ATTR_INTS ? t->v.ints.n : 0;
    if (nc > cap) nc = cap;
    for (int i = 0; i < nc; i++) {
        types[i] = (rill_dtype)t->v.ints.v[i];
        shapes[i] = rill_shape_unknown();
    }
    *has_shapes = false;
    if (!sh || sh->kind != RILL__ATTR_INTS || sh->v.ints.n == 0) return nc;
    const int64_t *v = sh->v.ints.v;
    int len = sh->v.ints.n, p = 0;
    for (int i = 0; i < nc && p < len; i++) {
        int rank = (int)v[p++];
        if (rank < 0 || rank > RILL_MAX_DIMS || p + rank > len) continue;
        shapes[i] = rill_shape_make(rank, v + p);
        p += rank;
    }
    *has_shapes = true;
    return nc;
}

#define MAXC 64

static bool check_handle(rill_node *n, rill_status *s)
{
    if (n->ninputs < 1 || rill__in_dtype(n, 0) == RILL_STRING) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Input 'handle' of '%s' Op has type %s that does not match expected type of "
                    "string (a queue's handle).",
                    n->op->name, rill_dtype_name(rill__in_dtype(n, 0)));
    return false;
}

static void queue_shape(rill_node *n, rill_status *s)
{
    rill_dtype t[MAXC];
    rill_shape sh[MAXC];
    bool has;
    const rill__attr *a = rill__node_attr(n, "component_types");
    int nc = rill__queue_components(n, "component_types", t, sh, MAXC, &has);
    if (nc < 1 || (a && a->v.ints.n > MAXC)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Attr component_types of '%s' (op: '%s') must have between 1 and %d "
                        "types",
                        n->name, n->op->name, MAXC);
        return;
    }
    for (int i = 0; i < nc; i++)
        if (rill_dtype_size(t[i]) == 0 && t[i] != RILL_STRING) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "component %d of queue '%s' has no dtype", i,
                            n->name);
            return;
        }
    if (has)
        for (int i = 0; i < nc; i++)
            if (!rill_shape_is_fully_defined(&sh[i])) {
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "Queue shapes must be fully defined: component %d of '%s'", i,
                                n->name);
                return;
            }
    n->out_dtypes[0] = RILL_STRING;
    n->out_shapes[0] = rill_shape_scalar();
}

static void enqueue_shape(rill_node *n, rill_status *s)
{
    if (!check_handle(n, s)) return;
    bool many = strcmp(n->op->name, "QueueEnqueueManyV2") == 0;
    for (int i = 1; i < n->ninputs; i++) {
        if (many && rill__in_shape(n, i).rank == 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Shape must be at least rank 1 but is rank 0 for '%s' (op: '%s')",
                            n->name, n->op->name);
            return;
        }
    }
}

static void dequeue_shape(rill_node *n, rill_status *s)
{
    if (!check_handle(n, s)) return;
    rill_dtype t[MAXC];
    rill_shape sh[MAXC];
    bool has;
    int nc = rill__queue_components(n, "component_types", t, sh, MAXC, &has);
    if (nc != n->noutputs) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "'%s' (op: '%s') has %d outputs for %d component types", n->name,
                        n->op->name, n->noutputs, nc);
        return;
    }
    /* DequeueMany's batch: n when it is a constant */
    int64_t batch = -1;
    bool batched = strcmp(n->op->name, "QueueDequeueV2") != 0;
    if (batched && n->ninputs > 1) {
        if (rill__in_dtype(n, 1) != RILL_INT32) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Input 'n' of '%s' Op has type %s that does not match expected type "
                            "of int32.",
                            n->op->name, rill_dtype_name(rill__in_dtype(n, 1)));
            return;
        }
        const rill_node *c = n->inputs[1].node;
        const rill__attr *v =
            c && strcmp(c->op->name, "Const") == 0 ? rill__node_attr(c, "value") : NULL;
        if (strcmp(n->op->name, "QueueDequeueManyV2") == 0 && v && v->v.tensor &&
            v->v.tensor->numel == 1)
            batch = *(const int32_t *)rill_tensor_data(v->v.tensor);
    }
    for (int i = 0; i < nc; i++) {
        n->out_dtypes[i] = t[i];
        if (!batched || sh[i].rank < 0) {
            n->out_shapes[i] = batched ? rill_shape_unknown() : sh[i];
            continue;
        }
        int64_t d[RILL_MAX_DIMS];
        d[0] = batch;
        for (int k = 0; k < sh[i].rank && k + 1 < RILL_MAX_DIMS; k++) d[k + 1] = sh[i].dims[k];
        n->out_shapes[i] = rill_shape_make(sh[i].rank + 1, d);
    }
}

static void close_shape(rill_node *n, rill_status *s)
{
    check_handle(n, s);
}

static void size_shape(rill_node *n, rill_status *s)
{
    if (!check_handle(n, s)) return;
    n->out_dtypes[0] = RILL_INT32;
    n->out_shapes[0] = rill_shape_scalar();
}

/* CountUpTo(ref, limit): the epoch counter of tf.train.limit_epochs. */
static void count_up_to_shape(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, 0);
    rill_shape sh = rill__in_shape(n, 0);
    if (t != RILL_INT32 && t != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'T' of %s is not in the list of allowed values: int32, "
                        "int64\n\t; NodeDef: {{node %s}}",
                        rill_dtype_name(t), n->name);
        return;
    }
    if (sh.rank > 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank 0 but is rank %d for '%s' (op: 'CountUpTo')", sh.rank,
                        n->name);
        return;
    }
    n->out_dtypes[0] = t;
    n->out_shapes[0] = rill_shape_scalar();
}

const rill__op_def rill__ops_queue[] = {
    {.name = "CountUpTo",
     .default_name = "CountUpTo",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 1,
     .shape = count_up_to_shape},
    {.name = "FIFOQueueV2",
     .default_name = "fifo_queue",
     .noutputs = 1,
     .stateful = true,
     .shape = queue_shape},
    {.name = "RandomShuffleQueueV2",
     .default_name = "random_shuffle_queue",
     .noutputs = 1,
     .stateful = true,
     .shape = queue_shape},
    {.name = "QueueEnqueueV2",
     .default_name = "QueueEnqueueV2",
     .min_inputs = 2,
     .max_inputs = -1,
     .noutputs = 0,
     .stateful = true,
     .blocking = true,
     .shape = enqueue_shape},
    {.name = "QueueEnqueueManyV2",
     .default_name = "QueueEnqueueManyV2",
     .min_inputs = 2,
     .max_inputs = -1,
     .noutputs = 0,
     .stateful = true,
     .blocking = true,
     .shape = enqueue_shape},
    {.name = "QueueDequeueV2",
     .default_name = "QueueDequeueV2",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = -1,
     .stateful = true,
     .blocking = true,
     .shape = dequeue_shape},
    {.name = "QueueDequeueManyV2",
     .default_name = "QueueDequeueManyV2",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = -1,
     .stateful = true,
     .blocking = true,
     .shape = dequeue_shape},
    {.name = "QueueDequeueUpToV2",
     .default_name = "QueueDequeueUpToV2",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = -1,
     .stateful = true,
     .blocking = true,
     .shape = dequeue_shape},
    {.name = "QueueCloseV2",
     .default_name = "QueueCloseV2",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 0,
     .stateful = true,
     .shape = close_shape},
    {.name = "QueueSizeV2",
     .default_name = "QueueSizeV2",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .stateful = true,
     .shape = size_shape},
    {0},
};
