/* cl_program.c - the OpenCL program and its kernels: building the program from every kernel
 * source of this folder (listed in cl_kernels.h), the per-dtype kernel cache, and the 1-D and
 * 2-D launch helpers.
 *
 * The program is compiled lazily, once per device and dtype (float, double, half), with the T,
 * ACC, LD and ST macros of cl_kernels.h; set POCL_CACHE_DIR to keep PoCL's compiled kernels
 * between processes. The program and kernel storage sits in the device's struct
 * (rill__cl_device: programs, kernels), but only this file fills and reads it: the device layer
 * knows nothing of kernel sources. */
#include "cl_kernels.h"

static int dtype_slot(rill_dtype t)
{
    return t == RILL_DOUBLE ? 1 : t == RILL_HALF ? 2 : 0;
}

static bool build_program(rill__device *d, int slot, rill_status *s)
{
    rill__cl_device *c = rill__cl(d);
    static const char *const defs[3] = {
        "-DT=float -DACC=float -DLD(p,i)=((p)[i]) -DST(p,i,v)=((p)[i]=(v)) -DIS_FLOAT=1",
        "-DT=double -DACC=double -DLD(p,i)=((p)[i]) -DST(p,i,v)=((p)[i]=(v)) -DIS_DOUBLE=1",
        ("-DT=half -DACC=float -DLD(p,i)=vload_half((i),(p)) "
         "-DST(p,i,v)=vstore_half_rte((v),(i),(p)) -DIS_HALF=1"),
    };
    const char *srcs[] = {rill__cl_source_common, rill__cl_source_math, rill__cl_source_nn,
                          rill__cl_source_state, rill__cl_source_conv, rill__cl_source_select,
                          rill__cl_source_array, rill__cl_source_apply, rill__cl_source_loss,
                          rill__cl_source_norm, rill__cl_source_depthwise,
                          rill__cl_source_index, rill__cl_source_sparse_apply,
                          rill__cl_source_elementwise, rill__cl_source_reduce,
                          rill__cl_source_shape, rill__cl_source_permute,
                          rill__cl_source_conv3d};
    cl_int err;
    cl_program p = clCreateProgramWithSource(c->ctx, (cl_uint)(sizeof srcs / sizeof *srcs), srcs, NULL, &err);
    if (!rill__cl_check(err, "create program", s)) return false;
    char opts[512];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 %s", defs[slot]);
    err = clBuildProgram(p, 1, &c->id, opts, NULL, NULL);
    if (err != CL_SUCCESS) {
        size_t len = 0;
        clGetProgramBuildInfo(p, c->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
        char *log = rill__malloc(len + 1);
        RILL_CHECK_ALLOC(log);
        clGetProgramBuildInfo(p, c->id, CL_PROGRAM_BUILD_LOG, len, log, NULL);
        log[len] = 0;
        rill_status_set(s, RILL_INTERNAL, "OpenCL program build failed on %s (%s):\n%.4000s",
                        d->name, opts, log);
        rill__free(log);
        clReleaseProgram(p);
        return false;
    }
    c->programs[slot] = p;
    return true;
}

cl_kernel rill__cl_kernel(rill__device *d, const char *name, rill_dtype t, rill_status *s)
{
    rill__cl_device *c = rill__cl(d);
    int slot = dtype_slot(t);
    cl_kernel k = rill__strmap_get(&c->kernels[slot], name);
    if (k) return k;
    if (!c->programs[slot] && !build_program(d, slot, s)) return NULL;
    cl_int err;
    k = clCreateKernel(c->programs[slot], name, &err);
    char what[160];
    snprintf(what, sizeof what, "kernel '%s'", name);
    if (!rill__cl_check(err, what, s)) return NULL;
    rill__strmap_put(&c->kernels[slot], name, k);
    return k;
}

bool rill__cl_run1d(rill__device *d, cl_kernel k, size_t n, rill_status *s)
{
    if (!n) return true;
    size_t local = 64;
    if (local > rill__cl(d)->max_wg) local = rill__cl(d)->max_wg;
    size_t global = (n + local - 1) / local * local;
    cl_int err =
        clEnqueueNDRangeKernel(rill__cl(d)->queue, k, 1, NULL, &global, &local, 0, NULL, NULL);
    return rill__cl_check(err, "enqueue", s);
}

bool rill__cl_run2d(rill__device *d, cl_kernel k, size_t rows, size_t cols, size_t tile,
                    rill_status *s)
{
    if (!rows || !cols) return true;
    size_t local[2] = {tile, tile};
    size_t global[2] = {(rows + tile - 1) / tile * tile, (cols + tile - 1) / tile * tile};
    cl_int err =
        clEnqueueNDRangeKernel(rill__cl(d)->queue, k, 2, NULL, global, local, 0, NULL, NULL);
    return rill__cl_check(err, "enqueue", s);
}
