/* ops_control_flow.c - the control-flow primitives tf.cond and tf.while_loop are made of
 * (reference §control flow; the executor's side is src/runtime/frame.c).
 *
 *   Switch(data, pred)      -> (output_false, output_true): data goes out on one, the other is
 *                              dead (a tensor on an untaken branch; nothing consuming it runs).
 *   Merge(inputs...)        -> (output, value_index): the first live input and its index.
 *   Enter(data)             -> data inside the while loop `frame_name` (is_constant: the same
 *                              value on every iteration; shape: the loop's shape invariant).
 *   Exit(data)              -> a loop variable's final value, outside the loop.
 *   NextIteration(data)     -> a loop variable's value for the next iteration.
 *   LoopCond(pred)          -> whether the loop goes on.
 *
 * rill's graphs stay acyclic: a loop's Merge has its Enter as its one input, and the back edge
 * (NextIteration -> Merge in TF's graphs) is a control input of the NextIteration on its Merge;
 * each Exit has control inputs on the loop's NextIterations, so that pruning from an Exit keeps
 * the whole loop. Every graph pass (pruning, placement, gradients, the graph codec) therefore
 * sees a DAG; only the executor reads these edges as a loop.
 *
 * Gradients: Switch -> Merge of the two branches' gradients (the live one wins); Merge ->
 * Switch of the gradient on the taken index (value_index), so a cond's gradient flows through
 * the taken branch only. A while loop's gradient is a backward loop (gradients_loop.c), which
 * rill__gradients builds when it reaches the loop's Exits. */
#include "graph_internal.h"

#include <string.h>

static void switch_shape(rill_node *n, rill_status *s)
{
    rill_shape p = rill__in_shape(n, 1);
    char d[96];
    if (rill__in_dtype(n, 1) != RILL_BOOL) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input 'pred' of %s must be bool, got %s", rill__node_desc(n, d, sizeof d),
                        rill_dtype_name(rill__in_dtype(n, 1)));
        return;
    }
    if (p.rank > 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Shape must be rank 0 but is rank %d for %s",
                        p.rank, rill__node_desc(n, d, sizeof d));
        return;
    }
    for (int o = 0; o < 2; o++) {
        n->out_dtypes[o] = rill__in_dtype(n, 0);
        n->out_shapes[o] = rill__in_shape(n, 0);
    }
}

/* The shape every input could have: the common dims, -1 where they differ. */
static void merge_shape(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, 0);
    rill_shape sh = rill__in_shape(n, 0);
    for (int k = 1; k < n->ninputs; k++) {
        if (rill__in_dtype(n, k) != t) {
            char d[96];
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Inputs to %s must have one dtype: input 0 is %s, input %d is %s",
                            rill__node_desc(n, d, sizeof d), rill_dtype_name(t), k,
                            rill_dtype_name(rill__in_dtype(n, k)));
            return;
        }
        rill_shape o = rill__in_shape(n, k);
        if (sh.rank < 0) continue;
        if (o.rank != sh.rank) {
            sh = rill_shape_unknown();
            continue;
        }
        for (int d = 0; d < sh.rank; d++)
            if (sh.dims[d] != o.dims[d]) sh.dims[d] = -1;
    }
    n->out_dtypes[0] = t;
    n->out_shapes[0] = sh;
    n->out_dtypes[1] = RILL_INT32;
    n->out_shapes[1] = rill_shape_scalar();
}

static void enter_shape(rill_node *n, rill_status *s)
{
    const rill__attr *fa = rill__node_attr(n, "frame_name");
    if (!fa || fa->kind != RILL__ATTR_STRING || !fa->v.s[0]) {
        char d[96];
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s needs a frame_name",
                        rill__node_desc(n, d, sizeof d));
        return;
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    const rill__attr *sa = rill__node_attr(n, "shape");
    n->out_shapes[0] = sa && sa->kind == RILL__ATTR_SHAPE ? sa->v.shape : rill__in_shape(n, 0);
}

static void pass_shape(rill_node *n, rill_status *s)
{
    (void)s;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static void loop_cond_shape(rill_node *n, rill_status *s)
{
    if (rill__in_dtype(n, 0) != RILL_BOOL || rill__in_shape(n, 0).rank > 0) {
        char d[96];
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Input of %s must be a bool scalar",
                        rill__node_desc(n, d, sizeof d));
        return;
    }
    n->out_dtypes[0] = RILL_BOOL;
    n->out_shapes[0] = rill_shape_scalar();
}

/* A loop collapsed for the executor (src/runtime/frame.c makes them in execution graphs only):
 * inputs are the loop's entered values, outputs its exits. */
static void frame_shape(rill_node *n, rill_status *s)
{
    (void)n;
    (void)s;
}

static void switch_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    (void)n;
    /* Of the two gradients, the one of the untaken branch is dead (a missing one is zeros of
     * a dead output, so dead too): the Merge hands on the live one. */
    rill_output both[2] = {dy[0], dy[1]};
    rill_node *m = rill__node_create(g, "Merge", "cond_grad", both, 2, NULL, 0);
    dx[0] = m ? rill__out0(m) : (rill_output){NULL, 0};
}

static void merge_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output idx = {n, 1};
    if (n->ninputs == 2) {
        rill_output in[2] = {dy[0], rill_cast(g, idx, RILL_BOOL, NULL)};
        rill_node *sw = rill__node_create(g, "Switch", "cond_grad", in, 2, NULL, 0);
        if (!sw) return;
        dx[0] = (rill_output){sw, 0};
        dx[1] = (rill_output){sw, 1};
        return;
    }
    for (int k = 0; k < n->ninputs; k++) {
        rill_output in[2] = {dy[0],
                             rill_equal(g, idx, rill_const_scalar(g, RILL_INT32, k, NULL), NULL)};
        rill_node *sw = rill__node_create(g, "Switch", "cond_grad", in, 2, NULL, 0);
        if (!sw) return;
        dx[k] = (rill_output){sw, 1};
    }
}

const rill__op_def rill__ops_control_flow[] = {
    {.name = "Switch", .default_name = "Switch", .min_inputs = 2, .max_inputs = 2, .noutputs = 2,
     .shape = switch_shape, .grad = switch_grad},
    {.name = "Merge", .default_name = "Merge", .min_inputs = 1, .max_inputs = -1, .noutputs = 2,
     .shape = merge_shape, .grad = merge_grad},
    {.name = "Enter", .default_name = "Enter", .min_inputs = 1, .max_inputs = 1, .noutputs = 1,
     .shape = enter_shape},
    {.name = "Exit", .default_name = "Exit", .min_inputs = 1, .max_inputs = 1, .noutputs = 1,
     .shape = pass_shape},
    {.name = "NextIteration", .default_name = "NextIteration", .min_inputs = 1, .max_inputs = 1,
     .noutputs = 1, .shape = pass_shape},
    {.name = "LoopCond", .default_name = "LoopCond", .min_inputs = 1, .max_inputs = 1,
     .noutputs = 1, .shape = loop_cond_shape},
    {.name = "_Frame", .default_name = "_Frame", .min_inputs = 0, .max_inputs = -1,
     .noutputs = -1, .stateful = true, .shape = frame_shape},
    {0},
};
