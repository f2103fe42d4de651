/* ops_sendrecv.c - _Send and _Recv, the pair the partitioner puts on every edge that crosses a
 * device or memory boundary (TF's graph_partition.cc). Attributes: tensor_name (unique per
 * transfer), send_device, recv_device; _Recv also host_memory (deliver into host memory).
 * Inside one process the _Recv takes its _Send's output as input, so the executor orders them;
 * across processes (the distributed runtime) the pair meets in a rendezvous instead. */
#include "graph_internal.h"

static void pass_through_shape(rill_node *n, rill_status *s)
{
    (void)s;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

const rill__op_def rill__ops_sendrecv[] = {
    {.name = "_Send", .default_name = "_Send", .min_inputs = 1, .max_inputs = 1, .noutputs = 1,
     .stateful = true, .shape = pass_through_shape},
    {.name = "_Recv", .default_name = "_Recv", .min_inputs = 1, .max_inputs = 1, .noutputs = 1,
     .stateful = true, .shape = pass_through_shape},
    {0},
};
