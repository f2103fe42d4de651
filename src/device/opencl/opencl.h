/* opencl.h - the OpenCL device as the kernels layer sees it: its state (cl_device.c), its lock
 * and error reporting. Each OpenCL device has one context and one in-order command queue. The
 * program, its kernels and their launch helpers belong to the kernels layer
 * (src/kernels/opencl/cl_kernels.h).
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
    /* Owned by the kernels layer (kernels/opencl/cl_program.c), which builds and reads them
     * under the lock; the device only keeps the storage. Per dtype: float, double, half. */
    cl_program programs[3];  /* built on first use */
    rill__strmap kernels[3]; /* name -> cl_kernel */
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
/* The cl_mem of a device tensor. */
static inline cl_mem rill__cl_mem(const rill_tensor *t)
{
    return (cl_mem)t->buf->data;
}

#endif
