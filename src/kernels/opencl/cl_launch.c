/* cl_launch.c - the launch path every OpenCL kernel file uses (see cl_kernels.h). */
#include "cl_kernels.h"

void rill__kctx_fail_with(rill__kctx *ctx, rill_status *s)
{
    if (!ctx->status)
        ctx->status = s; /* the executor frees it */
    else
        rill_status_free(s);
}

bool rill__cl_launch(rill__kctx *ctx, const char *name, rill_dtype t, const rill__cl_arg *args,
                     int nargs, int64_t n)
{
    rill__device *d = ctx->device;
    rill__cl_lock(d);
    cl_kernel k = rill__cl_kernel(d, name, t, NULL);
    cl_int err = CL_SUCCESS;
    for (int i = 0; k && err == CL_SUCCESS && i < nargs; i++)
        err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].p);
    bool ok = k && err == CL_SUCCESS && rill__cl_run1d(d, k, (size_t)n, NULL);
    rill_status *s = NULL;
    if (!ok) {
        s = rill_status_new();
        if (!k) {
            if (rill__cl_kernel(d, name, t, s))
                rill_status_set(s, RILL_INTERNAL, "OpenCL kernel '%s' is not available", name);
        } else if (err != CL_SUCCESS) {
            rill__cl_check(err, "set kernel argument", s);
        } else {
            ok = rill__cl_run1d(d, k, (size_t)n, s);
        }
    }
    rill__cl_unlock(d);
    if (ok)
        rill_status_free(s);
    else
        rill__kctx_fail_with(ctx, s);
    return ok;
}
