/* opencl.h - the OpenCL backend's shared pieces, used by the device (cl_device.c) and by the
 * OpenCL kernels (src/kernels/opencl/).
 *
 * Each OpenCL device has one context and one in-order command queue. The kernel sources are
 * compiled once per process and dtype (float, double, half) with these macros defined:
 *   T        the storage type (float, double, half)
 *   ACC      the compute type (float, double, float for half)
 *   LD(p,i)  loads element i of a __global T* as ACC (vload_half for half)
 *   ST(p,i,v) stores ACC v as element i (vstore_half_rte for half)
 * so half works on every OpenCL device: stored as half, computed in float, with no need for
 * cl_khr_fp16. Kernels take an element count and check their global id against it.
 *
 * clSetKernelArg and enqueue are not thread-safe on a shared cl_kernel, so a kernel is used
 * between rill__cl_lock and rill__cl_unlock. */
#ifndef RILL_DEVICE_OPENCL_H
#define RILL_DEVICE_OPENCL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "../device.h"

#include <pthread.h>

typedef struct rill__cl_device {
    cl_platform_id platform;
    cl_device_id id;
    cl_context ctx;
    cl_command_queue queue;
    pthread_mutex_t mu;
    cl_program programs[3]; /* float, double, half; built on first use */
    rill__strmap kernels[3];
    size_t max_wg;
} rill__cl_device;

/* The backend state of an OpenCL device. */
static inline rill__cl_device *rill__cl(rill__device *d)
{
    return (rill__cl_device *)d->impl;
}

void rill__cl_lock(rill__device *d);
void rill__cl_unlock(rill__device *d);
/* Sets s from an OpenCL error code ("<what>: CL_OUT_OF_RESOURCES (-5)"); true when err is
 * CL_SUCCESS. */
bool rill__cl_check(cl_int err, const char *what, rill_status *s);
/* The kernel `name` built for dtype t (float, double or half; anything else uses the float
 * program). Built and cached on first use. Call with the lock held. */
cl_kernel rill__cl_kernel(rill__device *d, const char *name, rill_dtype t, rill_status *s);
/* Enqueues k over n work items (rounded up to a multiple of the work-group size). Call with the
 * lock held, after setting the arguments. n == 0 enqueues nothing. */
bool rill__cl_run1d(rill__device *d, cl_kernel k, size_t n, rill_status *s);
/* 2-D range (rows x cols), rounded up to tile x tile work groups. */
bool rill__cl_run2d(rill__device *d, cl_kernel k, size_t rows, size_t cols, size_t tile,
                    rill_status *s);
/* The cl_mem of a device tensor. */
static inline cl_mem rill__cl_mem(const rill_tensor *t)
{
    return (cl_mem)t->buf->data;
}

/* Every kernel source, concatenated in this order, makes the program. Each file under
 * src/kernels/opencl/ defines one of these as a string. */
extern const char rill__cl_source_common[];
extern const char rill__cl_source_math[];
extern const char rill__cl_source_nn[];
extern const char rill__cl_source_state[];

#endif
