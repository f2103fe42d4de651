/* cl_kernels.h - what the OpenCL kernel files share: the kernel sources that make the program,
 * the program's kernels and launch helpers (cl_program.c), argument lists and the one launch
 * path (set the arguments, enqueue over n work items, report failures on the kernel context).
 *
 * The kernel sources are compiled once per process, device and dtype (float, double, half) with
 * these macros defined:
 *   T        the storage type (float, double, half)
 *   ACC      the compute type (float, double, float for half)
 *   LD(p,i)  loads element i of a __global T* as ACC (vload_half for half)
 *   ST(p,i,v) stores ACC v as element i (vstore_half_rte for half)
 * so half works on every OpenCL device: stored as half, computed in float, with no need for
 * cl_khr_fp16. Kernels take an element count and check their global id against it. */
#ifndef RILL_KERNELS_OPENCL_H
#define RILL_KERNELS_OPENCL_H

#include "../../device/opencl/opencl.h"
#include "../kernel.h"

/* Every kernel source, concatenated in this order, makes the program. Each file of this folder
 * with kernels defines one of these as a string. */
extern const char rill__cl_source_common[];
extern const char rill__cl_source_math[];
extern const char rill__cl_source_nn[];
extern const char rill__cl_source_state[];
extern const char rill__cl_source_conv[];
extern const char rill__cl_source_conv3d[];
extern const char rill__cl_source_select[];
extern const char rill__cl_source_array[];
extern const char rill__cl_source_apply[];
extern const char rill__cl_source_loss[];
extern const char rill__cl_source_norm[];
extern const char rill__cl_source_depthwise[];
extern const char rill__cl_source_index[];
extern const char rill__cl_source_sparse_apply[];
extern const char rill__cl_source_elementwise[];
extern const char rill__cl_source_reduce[];
extern const char rill__cl_source_shape[];
extern const char rill__cl_source_permute[];

/* The kernel `name` built for dtype t (float, double or half; anything else uses the float
 * program). Built and cached on first use. Call with the lock held. */
cl_kernel rill__cl_kernel(rill__device *d, const char *name, rill_dtype t, rill_status *s);
/* Enqueues k over n work items (rounded up to a multiple of the work-group size). Call with the
 * lock held, after setting the arguments. n == 0 enqueues nothing. */
bool rill__cl_run1d(rill__device *d, cl_kernel k, size_t n, rill_status *s);
/* 2-D range (rows x cols), rounded up to tile x tile work groups. */
bool rill__cl_run2d(rill__device *d, cl_kernel k, size_t rows, size_t cols, size_t tile,
                    rill_status *s);

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
