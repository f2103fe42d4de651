/* control_flow.c - the kernels of Switch, Merge, Enter, Exit, NextIteration and LoopCond, on
 * every device: they only move references (a predicate and Merge's value_index live in host
 * memory). The executor moves them itself for the forwarding ones and for Switch (whose entry
 * here has no function: the executor sends the data out on the taken side, a dead tensor on the
 * other). The executor gives them what the rest never sees: Merge takes dead inputs, and a Switch
 * of an uninitialised variable is an error only when its taken side is read (src/runtime/executor.c, frame.c). */
#include "kernel.h"

/* The dead tensor: one immortal value every dead slot points to (each holder takes a reference,
 * so the count never reaches zero). */
rill_tensor rill__dead_tensor = {.refs = 1 << 30, .dtype = RILL_BOOL};

static void pass_kernel(rill__kctx *ctx)
{
    rill__kctx_set_output(ctx, 0, rill_tensor_ref(ctx->inputs[0]));
}

static void merge_kernel(rill__kctx *ctx)
{
    for (int k = 0; k < ctx->node->ninputs; k++) {
        if (rill__is_dead(ctx->inputs[k])) continue;
        rill_tensor *idx = rill__kctx_alloc_output(ctx, 1, RILL_INT32, &(rill_shape){.rank = 0});
        if (!idx) return;
        *(int32_t *)rill_tensor_data(idx) = k;
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(ctx->inputs[k]));
        return;
    }
    rill__kctx_set_output(ctx, 0, rill__dead());
    rill__kctx_set_output(ctx, 1, rill__dead());
}

#define ANY RILL_DT_INVALID
#define CF_KERNELS(dev)                                                                      \
    {.op = "Switch", .device_type = dev, .dtype = ANY, .host_memory_inputs = 2},            \
        {.op = "Merge", .device_type = dev, .dtype = ANY, .fn = merge_kernel,                \
         .host_memory_outputs = 2},                                                          \
        {.op = "Enter", .device_type = dev, .dtype = ANY, .fn = pass_kernel,             \
         .forwards = true},                \
        {.op = "Exit", .device_type = dev, .dtype = ANY, .fn = pass_kernel,             \
         .forwards = true},                 \
        {.op = "NextIteration", .device_type = dev, .dtype = ANY, .fn = pass_kernel,             \
         .forwards = true},        \
        {.op = "LoopCond", .device_type = dev, .dtype = ANY, .fn = pass_kernel,              \
         .host_memory_inputs = 1, .host_memory_outputs = 1, .forwards = true}

const rill__kernel_def rill__control_flow_kernels[] = {
    CF_KERNELS("CPU"),
#ifdef RILL_HAVE_OPENCL
    CF_KERNELS("OPENCL"),
#endif
    {0},
};
