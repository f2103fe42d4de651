/* generic.c - kernels that work on any device because they only move tensors: _Send and _Recv
 * (the copies between devices), and the OpenCL registrations of NoOp and Const (which keeps a
 * device copy of its value in its per-session state, uploaded once). */
#include "kernel.h"

#include <stdatomic.h>

#include <string.h>

static void send_kernel(rill__kctx *ctx)
{
    rill__kctx_set_output(ctx, 0, rill_tensor_ref(ctx->inputs[0]));
}

/* Copies the input into this node's device memory (or host memory with host_memory set),
 * reusing last step's buffer when nobody else holds it. Copies run on the device's queue. */
static void recv_kernel(rill__kctx *ctx)
{
    const rill_tensor *in = ctx->inputs[0];
    rill__device *dev = ctx->device;
    if (rill__attr_bool(ctx->node, "host_memory", false) || (dev && !dev->ops)) dev = NULL;
    if (in->buf->dev == dev) {
        rill__kctx_set_output(ctx, 0, rill_tensor_ref((rill_tensor *)in));
        return;
    }
    rill_tensor *c = ctx->recycle ? ctx->recycle[0] : NULL;
    rill_tensor *out;
    if (c && c->dtype == in->dtype && c->numel == in->numel && c->buf->dev == dev &&
        rill__tensor_exclusive(c)) {
        rill__tensor_set_shape(c, &in->shape);
        out = rill_tensor_ref(c);
    } else {
        rill__buffer *b = rill__buffer_new_on(dev, in->dtype, in->numel);
        if (!b) {
            rill__kctx_fail(ctx, RILL_RESOURCE_EXHAUSTED, "OOM when receiving %zu bytes on %s",
                            rill_tensor_nbytes(in), dev ? dev->name : "host");
            return;
        }
        out = rill__tensor_wrap(in->dtype, &in->shape, b);
        if (ctx->recycle) rill__recycle_set(&ctx->recycle[0], out);
    }
    rill_status *s = rill__scratch_status();
    if (!rill__tensor_copy_into(out, in, s)) {
        rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
        rill_tensor_free(out);
    } else {
        rill__kctx_set_output(ctx, 0, out);
    }
}

#ifdef RILL_HAVE_OPENCL
static void noop_kernel(rill__kctx *ctx)
{
    (void)ctx;
}

static void free_tensor_state(void *p)
{
    rill_tensor_free(p);
}

static void device_const_kernel(rill__kctx *ctx)
{
    if (!*ctx->state) {
        const rill_tensor *v = rill__node_attr(ctx->node, "value")->v.tensor;
        rill_status *s = rill_status_new();
        rill_tensor *d = rill__tensor_copy_to(v, ctx->device, s);
        if (!d) rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
        rill_status_free(s);
        if (!d) return;
        *ctx->state = d;
    }
    rill__kctx_set_output(ctx, 0, rill_tensor_ref(*ctx->state));
}

static void host_const_kernel(rill__kctx *ctx)
{
    rill__kctx_set_output(ctx, 0, rill_tensor_ref(rill__node_attr(ctx->node, "value")->v.tensor));
}
#endif

static _Atomic(const rill__remote_tensor_ops *) remote_tensors;

void rill__register_remote_tensors(const rill__remote_tensor_ops *ops)
{
    atomic_store(&remote_tensors, ops);
}

static void remote_send_kernel(rill__kctx *ctx)
{
    const rill__remote_tensor_ops *ops = atomic_load(&remote_tensors);
    if (ops)
        ops->send(ctx);
    else
        rill__kctx_fail(ctx, RILL_FAILED_PRECONDITION,
                        "_RemoteSend '%s' runs only on a task of a cluster", ctx->node->name);
}

static void remote_recv_kernel(rill__kctx *ctx)
{
    const rill__remote_tensor_ops *ops = atomic_load(&remote_tensors);
    if (ops)
        ops->recv(ctx);
    else
        rill__kctx_fail(ctx, RILL_FAILED_PRECONDITION,
                        "_RemoteRecv '%s' runs only on a task of a cluster", ctx->node->name);
}

#define ANY RILL_DT_INVALID
const rill__kernel_def rill__generic_kernels[] = {
    {.op = "_Send", .device_type = "CPU", .dtype = ANY, .fn = send_kernel},
    {.op = "_Recv", .device_type = "CPU", .dtype = ANY, .fn = recv_kernel},
    {.op = "_RemoteSend", .device_type = "CPU", .dtype = ANY, .fn = remote_send_kernel},
    {.op = "_RemoteRecv", .device_type = "CPU", .dtype = ANY, .fn = remote_recv_kernel},
#ifdef RILL_HAVE_OPENCL
    {.op = "_RemoteSend", .device_type = "OPENCL", .dtype = ANY, .fn = remote_send_kernel,
     .host_memory_inputs = ~0u},
    {.op = "_RemoteRecv", .device_type = "OPENCL", .dtype = ANY, .fn = remote_recv_kernel,
     .host_memory_outputs = ~0u},
    {.op = "_Send", .device_type = "OPENCL", .dtype = ANY, .fn = send_kernel},
    {.op = "_Recv", .device_type = "OPENCL", .dtype = ANY, .fn = recv_kernel},
    {.op = "NoOp", .device_type = "OPENCL", .dtype = ANY, .fn = noop_kernel},
    {.op = "Const", .device_type = "OPENCL", .dtype = RILL_FLOAT, .fn = device_const_kernel,
     .state_free = free_tensor_state},
    {.op = "Const", .device_type = "OPENCL", .dtype = RILL_DOUBLE, .fn = device_const_kernel,
     .state_free = free_tensor_state},
    {.op = "Const", .device_type = "OPENCL", .dtype = RILL_HALF, .fn = device_const_kernel,
     .state_free = free_tensor_state},
    /* int32/int64 constants stay in host memory, as TF's host-memory int32 kernels. */
    {.op = "Const", .device_type = "OPENCL", .dtype = RILL_INT32, .fn = host_const_kernel,
     .host_memory_outputs = 1},
    {.op = "Const", .device_type = "OPENCL", .dtype = RILL_INT64, .fn = host_const_kernel,
     .host_memory_outputs = 1},
#endif
    {0},
};
