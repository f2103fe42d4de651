/* ops_sendrecv.c - _Send and _Recv, the pair the partitioner puts on every edge that crosses a
 * device or memory boundary (TF's graph_partition.cc). Attributes: tensor_name (unique per
 * transfer), send_device, recv_device; _Recv also host_memory (deliver into host memory).
 * Inside one process the _Recv takes its _Send's output as input, so the executor orders them.
 *
 * Between the tasks of a cluster the cut puts _RemoteSend (input: the tensor; no output) on the
 * producing task and _RemoteRecv (no input; output: the tensor) on the consuming one, with the
 * same tensor_name; send_job/send_task and recv_job/recv_task name the two tasks, and the
 * _RemoteRecv carries the tensor's dtype and shape. The sender pushes the tensor to the other
 * task as soon as it is computed, into the rendezvous of that task keyed by (the step's master,
 * step number, tensor_name), where the _RemoteRecv takes it (src/distributed/rendezvous.c). */
#include "graph_internal.h"

static void pass_through_shape(rill_node *n, rill_status *s)
{
    (void)s;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static void remote_send_shape(rill_node *n, rill_status *s)
{
    (void)n;
    (void)s;
}

static void remote_recv_shape(rill_node *n, rill_status *s)
{
    (void)s;
    const rill__attr *sh = rill__node_attr(n, "shape");
    n->out_dtypes[0] = rill__attr_type(n, "dtype", RILL_DT_INVALID);
    n->out_shapes[0] = sh && sh->kind == RILL__ATTR_SHAPE ? sh->v.shape : rill_shape_unknown();
}

const rill__op_def rill__ops_sendrecv[] = {
    {.name = "_Send", .default_name = "_Send", .min_inputs = 1, .max_inputs = 1, .noutputs = 1,
     .stateful = true, .shape = pass_through_shape},
    {.name = "_Recv", .default_name = "_Recv", .min_inputs = 1, .max_inputs = 1, .noutputs = 1,
     .stateful = true, .shape = pass_through_shape},
    {.name = "_RemoteSend", .default_name = "_RemoteSend", .min_inputs = 1, .max_inputs = 1,
     .noutputs = 0, .stateful = true, .waits_for_peer = true, .shape = remote_send_shape},
    {.name = "_RemoteRecv", .default_name = "_RemoteRecv", .noutputs = 1, .stateful = true,
     .waits_for_peer = true, .shape = remote_recv_shape, .type_attr = "dtype"},
    {0},
};
