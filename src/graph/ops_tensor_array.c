/* ops_tensor_array.c - TF's TensorArray ops (V3): an array of tensors that lives for one step,
 * written and read by index, the way loops collect and hand out their per-iteration values.
 *
 *   TensorArrayV3(size)                        -> (handle, flow)
 *   TensorArrayWriteV3(handle, index, value, flow_in)   -> flow_out
 *   TensorArrayReadV3(handle, index, flow_in)           -> value
 *   TensorArrayGatherV3(handle, indices, flow_in)       -> value ([n] + element shape)
 *   TensorArrayScatterV3(handle, indices, value, flow_in) -> flow_out
 *   TensorArrayConcatV3(handle, flow_in)                -> (value, lengths)
 *   TensorArraySplitV3(handle, value, lengths, flow_in) -> flow_out
 *   TensorArraySizeV3(handle, flow_in)                  -> size (int32)
 *   TensorArrayCloseV3(handle)
 *   TensorArrayGradV3(handle, flow_in)                  -> (grad_handle, flow_out)
 *
 * The handle is an int64 scalar naming the array in this process (kernels/cpu/
 * cpu_tensor_array.c); the flow is a float scalar that orders the ops on one array, as in TF.
 * Attributes as TF's: dtype, element_shape, dynamic_size, clear_after_read,
 * identical_element_shapes, tensor_array_name; a gather may carry num_elements, its static
 * count (what TF's Python sets with set_shape after a stack of an array of known size). */
#include "graph_internal.h"

#include <string.h>

static rill_shape attr_shape(const rill_node *n, const char *name)
{
    const rill__attr *a = rill__node_attr(n, name);
    return a && a->kind == RILL__ATTR_SHAPE ? a->v.shape : rill_shape_unknown();
}

static bool check_in(rill_node *n, int i, rill_dtype want, int rank, const char *what,
                     rill_status *s)
{
    char d[96];
    if (rill__in_dtype(n, i) != want) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s of %s must be %s, got %s", what,
                        rill__node_desc(n, d, sizeof d), rill_dtype_name(want),
                        rill_dtype_name(rill__in_dtype(n, i)));
        return false;
    }
    rill_shape sh = rill__in_shape(n, i);
    if (rank >= 0 && sh.rank >= 0 && sh.rank != rank) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Shape must be rank %d but is rank %d for %s (%s)",
                        rank, sh.rank, rill__node_desc(n, d, sizeof d), what);
        return false;
    }
    return true;
}

static void ta_shape(rill_node *n, rill_status *s)
{
    if (!check_in(n, 0, RILL_INT32, 0, "size", s)) return;
    n->out_dtypes[0] = RILL_INT64;
    n->out_shapes[0] = rill_shape_scalar();
    n->out_dtypes[1] = RILL_FLOAT;
    n->out_shapes[1] = rill_shape_scalar();
}

static void flow_out(rill_node *n)
{
    n->out_dtypes[0] = RILL_FLOAT;
    n->out_shapes[0] = rill_shape_scalar();
}

static void write_shape(rill_node *n, rill_status *s)
{
    if (!check_in(n, 0, RILL_INT64, 0, "handle", s) || !check_in(n, 1, RILL_INT32, 0, "index", s) ||
        !check_in(n, 3, RILL_FLOAT, 0, "flow_in", s))
        return;
    flow_out(n);
}

static void read_shape(rill_node *n, rill_status *s)
{
    if (!check_in(n, 0, RILL_INT64, 0, "handle", s) || !check_in(n, 1, RILL_INT32, 0, "index", s) ||
        !check_in(n, 2, RILL_FLOAT, 0, "flow_in", s))
        return;
    n->out_dtypes[0] = rill__attr_type(n, "dtype", RILL_FLOAT);
    n->out_shapes[0] = attr_shape(n, "element_shape");
}

static void gather_shape(rill_node *n, rill_status *s)
{
    if (!check_in(n, 0, RILL_INT64, 0, "handle", s) ||
        !check_in(n, 1, RILL_INT32, 1, "indices", s) || !check_in(n, 2, RILL_FLOAT, 0, "flow_in", s))
        return;
    n->out_dtypes[0] = rill__attr_type(n, "dtype", RILL_FLOAT);
    rill_shape e = attr_shape(n, "element_shape"), ind = rill__in_shape(n, 1);
    if (e.rank < 0 || e.rank + 1 > RILL_MAX_DIMS) {
        n->out_shapes[0] = rill_shape_unknown();
        return;
    }
    rill_shape o = {.rank = e.rank + 1};
    o.dims[0] = ind.rank == 1 ? ind.dims[0] : -1;
    if (o.dims[0] < 0) o.dims[0] = rill__attr_int(n, "num_elements", -1); /* stack(): the size */
    for (int d = 0; d < e.rank; d++) o.dims[d + 1] = e.dims[d];
    n->out_shapes[0] = o;
}

static void scatter_shape(rill_node *n, rill_status *s)
{
    if (!check_in(n, 0, RILL_INT64, 0, "handle", s) ||
        !check_in(n, 1, RILL_INT32, 1, "indices", s) || !check_in(n, 3, RILL_FLOAT, 0, "flow_in", s))
        return;
    flow_out(n);
}

static void concat_shape(rill_node *n, rill_status *s)
{
    if (!check_in(n, 0, RILL_INT64, 0, "handle", s) || !check_in(n, 1, RILL_FLOAT, 0, "flow_in", s))
        return;
    n->out_dtypes[0] = rill__attr_type(n, "dtype", RILL_FLOAT);
    rill_shape e = attr_shape(n, "element_shape_except0");
    if (e.rank >= 0 && e.rank + 1 <= RILL_MAX_DIMS) {
        rill_shape o = {.rank = e.rank + 1};
        o.dims[0] = -1;
        for (int d = 0; d < e.rank; d++) o.dims[d + 1] = e.dims[d];
        n->out_shapes[0] = o;
    } else {
        n->out_shapes[0] = rill_shape_unknown();
    }
    n->out_dtypes[1] = RILL_INT64;
    n->out_shapes[1] = rill_shape_vector(-1);
}

static void split_shape(rill_node *n, rill_status *s)
{
    if (!check_in(n, 0, RILL_INT64, 0, "handle", s) ||
        !check_in(n, 2, RILL_INT64, 1, "lengths", s) || !check_in(n, 3, RILL_FLOAT, 0, "flow_in", s))
        return;
    flow_out(n);
}

static void size_shape(rill_node *n, rill_status *s)
{
    if (!check_in(n, 0, RILL_INT64, 0, "handle", s) || !check_in(n, 1, RILL_FLOAT, 0, "flow_in", s))
        return;
    n->out_dtypes[0] = RILL_INT32;
    n->out_shapes[0] = rill_shape_scalar();
}

static void close_shape(rill_node *n, rill_status *s)
{
    check_in(n, 0, RILL_INT64, 0, "handle", s);
}

static void grad_shape(rill_node *n, rill_status *s)
{
    if (!check_in(n, 0, RILL_INT64, 0, "handle", s) || !check_in(n, 1, RILL_FLOAT, 0, "flow_in", s))
        return;
    n->out_dtypes[0] = RILL_INT64;
    n->out_shapes[0] = rill_shape_scalar();
    n->out_dtypes[1] = RILL_FLOAT;
    n->out_shapes[1] = rill_shape_scalar();
}

/* --- gradients (TF's tensor_array_grad): the gradient of an array is a second array of the same
 * size (TensorArrayGradV3, found by the forward array and `source`, whose writes to one index
 * add up); a read's gradient writes it, a write's gradient reads it, and the flows carry the
 * order. --- */

static rill_node *mk(rill_graph *g, const char *op, const rill_output *in, int n,
                     const rill__attr *a, int na)
{
    return rill__node_create(g, op, NULL, in, n, a, na);
}

/* The gradient array of handle h, ordered after flow. */
static rill_node *grad_array(rill_graph *g, rill_output h, rill_output flow)
{
    rill__attr a[1] = {RILL__A_STRING("source", "gradients")};
    rill_output in[2] = {h, flow};
    return mk(g, "TensorArrayGradV3", in, 2, a, 1);
}

static void read_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_node *ga = grad_array(g, n->inputs[0], n->inputs[2]);
    if (!ga) return;
    rill_output in[4] = {{ga, 0}, n->inputs[1], dy[0], {ga, 1}};
    rill_node *w = mk(g, "TensorArrayWriteV3", in, 4, NULL, 0);
    if (w) dx[2] = rill__out0(w);
}

static void write_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_node *ga = grad_array(g, n->inputs[0], dy[0]);
    if (!ga) return;
    rill__attr a[2] = {RILL__A_TYPE("dtype", rill__in_dtype(n, 2)),
                       RILL__A_SHAPE("element_shape", rill__in_shape(n, 2))};
    rill_output in[3] = {{ga, 0}, n->inputs[1], {ga, 1}};
    rill_node *r = mk(g, "TensorArrayReadV3", in, 3, a, 2);
    if (r) dx[2] = rill__out0(r);
    dx[3] = dy[0];
}

static void gather_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_node *ga = grad_array(g, n->inputs[0], n->inputs[2]);
    if (!ga) return;
    rill_output in[4] = {{ga, 0}, n->inputs[1], dy[0], {ga, 1}};
    rill_node *sc = mk(g, "TensorArrayScatterV3", in, 4, NULL, 0);
    if (sc) dx[2] = rill__out0(sc);
}

static void scatter_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_node *ga = grad_array(g, n->inputs[0], dy[0]);
    if (!ga) return;
    rill_shape v = rill__in_shape(n, 2), e = rill_shape_unknown();
    if (v.rank >= 1) {
        e.rank = v.rank - 1;
        for (int d = 0; d < e.rank; d++) e.dims[d] = v.dims[d + 1];
    }
    rill__attr a[2] = {RILL__A_TYPE("dtype", rill__in_dtype(n, 2)), RILL__A_SHAPE("element_shape", e)};
    rill_output in[3] = {{ga, 0}, n->inputs[1], {ga, 1}};
    rill_node *gt = mk(g, "TensorArrayGatherV3", in, 3, a, 2);
    if (gt) dx[2] = rill__out0(gt);
    dx[3] = dy[0];
}

static void concat_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_node *ga = grad_array(g, n->inputs[0], n->inputs[1]);
    if (!ga) return;
    rill_output in[4] = {{ga, 0}, dy[0], {n, 1}, {ga, 1}};
    rill_node *sp = mk(g, "TensorArraySplitV3", in, 4, NULL, 0);
    if (sp) dx[1] = rill__out0(sp);
}

static void split_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_node *ga = grad_array(g, n->inputs[0], dy[0]);
    if (!ga) return;
    rill_shape v = rill__in_shape(n, 1), e = rill_shape_unknown();
    if (v.rank >= 1) {
        e.rank = v.rank - 1;
        for (int d = 0; d < e.rank; d++) e.dims[d] = v.dims[d + 1];
    }
    rill__attr a[2] = {RILL__A_TYPE("dtype", rill__in_dtype(n, 1)),
                       RILL__A_SHAPE("element_shape_except0", e)};
    rill_output in[2] = {{ga, 0}, {ga, 1}};
    rill_node *c = mk(g, "TensorArrayConcatV3", in, 2, a, 2);
    if (c) dx[1] = rill__out0(c);
    dx[3] = dy[0];
}

#define TA_OP(nm, def, in, out, fn, gr)                                                      \
    {.name = nm, .default_name = def, .min_inputs = in, .max_inputs = in, .noutputs = out,   \
     .stateful = true, .shape = fn, .grad = gr, .type_attr = "dtype"}

const rill__op_def rill__ops_tensor_array[] = {
    TA_OP("TensorArrayV3", "TensorArray", 1, 2, ta_shape, NULL),
    TA_OP("TensorArrayWriteV3", "TensorArrayWrite", 4, 1, write_shape, write_grad),
    TA_OP("TensorArrayReadV3", "TensorArrayRead", 3, 1, read_shape, read_grad),
    TA_OP("TensorArrayGatherV3", "TensorArrayGather", 3, 1, gather_shape, gather_grad),
    TA_OP("TensorArrayScatterV3", "TensorArrayScatter", 4, 1, scatter_shape, scatter_grad),
    TA_OP("TensorArrayConcatV3", "TensorArrayConcat", 2, 2, concat_shape, concat_grad),
    TA_OP("TensorArraySplitV3", "TensorArraySplit", 4, 1, split_shape, split_grad),
    TA_OP("TensorArraySizeV3", "TensorArraySize", 2, 1, size_shape, NULL),
    TA_OP("TensorArrayCloseV3", "TensorArrayClose", 1, 0, close_shape, NULL),
    TA_OP("TensorArrayGradV3", "TensorArrayGrad", 2, 2, grad_shape, NULL),
    {0},
};
