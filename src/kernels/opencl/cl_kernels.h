/* cl_kernels.h - what the OpenCL kernel files share: argument lists and the one launch path
 * (set the arguments, enqueue over n work items, report failures on the kernel context). */
#ifndef RILL_KERNELS_OPENCL_H
#define RILL_KERNELS_OPENCL_H

#include "../../device/opencl/opencl.h"
#include "../kernel.h"

/* One kernel argument: its size and where its value is. */
typedef struct rill__cl_arg {
    size_t size;
    const void *p;
} rill__cl_arg;
#define RILL__CL_ARG(x) ((rill__cl_arg){sizeof(x), &(x)})

/* Sets the arguments of kernel `name` for dtype t and enqueues it over n work items; false (ctx
 * failed) on any error. Nothing allocates unless something fails (a warm training step must not
 * allocate: tests/runtime checks it), so the first attempt passes no status and a failure is
 * asked again for its reason. A failed enqueue queued nothing, so enqueueing again is safe. */
bool rill__cl_launch(rill__kctx *ctx, const char *name, rill_dtype t, const rill__cl_arg *args,
                     int nargs, int64_t n);

/* Records s as ctx's failure (the first one wins; ctx then owns s), or frees it. */
void rill__kctx_fail_with(rill__kctx *ctx, rill_status *s);

#endif
