/* cl_device.c - OpenCL devices: enumeration, contexts and queues, memory, copies, the lock.
 *
 * GPU-type OpenCL devices always become rill GPUs. CPU-type devices (PoCL) become GPUs only with
 * RILL_OPENCL_CPU_AS_GPU=1: that is how tests and CI drive the whole GPU path (separate device
 * memory, a queue, copies, dtype limits) without a GPU. The kernel program is built from the
 * kernels layer's sources by src/kernels/opencl/cl_program.c, not here. */
#include "opencl.h"

#include <stdlib.h>
#include <string.h>

static const char *cl_err_name(cl_int e)
{
    switch (e) {
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_ARG_INDEX: return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_ARG_VALUE: return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    default: return "CL_ERROR";
    }
}

bool rill__cl_check(cl_int err, const char *what, rill_status *s)
{
    if (err == CL_SUCCESS) return true;
    rill_status_set(s, err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES
                           ? RILL_RESOURCE_EXHAUSTED
                           : RILL_INTERNAL,
                    "OpenCL %s: %s (%d)", what, cl_err_name(err), (int)err);
    return false;
}

void rill__cl_lock(rill__device *d)
{
    pthread_mutex_lock(&rill__cl(d)->mu);
}

void rill__cl_unlock(rill__device *d)
{
    pthread_mutex_unlock(&rill__cl(d)->mu);
}

static void *cl_alloc(rill__device *d, size_t n)
{
    cl_int err;
    /* Zero-byte buffers are invalid in OpenCL: keep one byte. */
    cl_mem m = clCreateBuffer(rill__cl(d)->ctx, CL_MEM_READ_WRITE, n ? n : 1, NULL, &err);
    return err == CL_SUCCESS ? (void *)m : NULL;
}

static void cl_free(rill__device *d, void *p, size_t n)
{
    (void)d;
    (void)n;
    if (p) clReleaseMemObject((cl_mem)p);
}

static bool cl_to_device(rill__device *d, void *dst, size_t off, const void *src, size_t n,
                         rill_status *s)
{
    if (!n) return true;
    cl_int err = clEnqueueWriteBuffer(rill__cl(d)->queue, (cl_mem)dst, CL_TRUE, off, n, src, 0,
                                      NULL, NULL);
    return rill__cl_check(err, "copy to device", s);
}

static bool cl_from_device(rill__device *d, void *dst, const void *src, size_t off, size_t n,
                           rill_status *s)
{
    if (!n) return true;
    cl_int err = clEnqueueReadBuffer(rill__cl(d)->queue, (cl_mem)src, CL_TRUE, off, n, dst, 0,
                                     NULL, NULL);
    return rill__cl_check(err, "copy from device", s);
}

static bool cl_on_device(rill__device *d, void *dst, const void *src, size_t n, rill_status *s)
{
    if (!n) return true;
    cl_int err = clEnqueueCopyBuffer(rill__cl(d)->queue, (cl_mem)src, (cl_mem)dst, 0, 0, n, 0,
                                     NULL, NULL);
    return rill__cl_check(err, "copy on device", s);
}

static bool cl_sync(rill__device *d, rill_status *s)
{
    return rill__cl_check(clFinish(rill__cl(d)->queue), "finish", s);
}

static const rill__device_ops cl_ops = {
    .alloc = cl_alloc,
    .free = cl_free,
    .copy_to_device = cl_to_device,
    .copy_from_device = cl_from_device,
    .copy_on_device = cl_on_device,
    .sync = cl_sync,
};

int rill__opencl_enumerate(rill__device **out, int cap, int first_gpu_id, rill_status *s)
{
    (void)s; /* a machine without OpenCL simply has no OpenCL devices */
    const char *env = getenv("RILL_OPENCL_CPU_AS_GPU");
    bool cpu_as_gpu = env && strcmp(env, "1") == 0;
    cl_uint np = 0;
    if (clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0) return 0;
    cl_platform_id plats[16];
    if (np > 16) np = 16;
    if (clGetPlatformIDs(np, plats, NULL) != CL_SUCCESS) return 0;
    int n = 0;
    for (cl_uint p = 0; p < np && n < cap; p++) {
        cl_uint nd = 0;
        cl_device_id ids[16];
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, ids, &nd) != CL_SUCCESS) continue;
        for (cl_uint i = 0; i < nd && n < cap; i++) {
            cl_device_type type;
            clGetDeviceInfo(ids[i], CL_DEVICE_TYPE, sizeof type, &type, NULL);
            bool gpu = type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR);
            if (!gpu && !(cpu_as_gpu && (type & CL_DEVICE_TYPE_CPU))) continue;
            cl_int err;
            cl_context ctx = clCreateContext(NULL, 1, &ids[i], NULL, NULL, &err);
            if (err != CL_SUCCESS) continue;
            cl_command_queue q = clCreateCommandQueue(ctx, ids[i], 0, &err);
            if (err != CL_SUCCESS) {
                clReleaseContext(ctx);
                continue;
            }
            rill__device *d = rill__calloc(1, sizeof *d);
            rill__cl_device *c = rill__calloc(1, sizeof *c);
            RILL_CHECK_ALLOC(d);
            RILL_CHECK_ALLOC(c);
            c->platform = plats[p];
            c->id = ids[i];
            c->ctx = ctx;
            c->queue = q;
            pthread_mutex_init(&c->mu, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof c->max_wg, &c->max_wg,
                            NULL);
            if (c->max_wg == 0) c->max_wg = 1;
            char name[128] = "", vendor[128] = "", version[128] = "", ext[4096] = "";
            clGetDeviceInfo(ids[i], CL_DEVICE_NAME, sizeof name - 1, name, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_VENDOR, sizeof vendor - 1, vendor, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_VERSION, sizeof version - 1, version, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL);
            cl_ulong mem = 0;
            clGetDeviceInfo(ids[i], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
            d->impl = c;
            d->ops = &cl_ops;
            d->id = first_gpu_id + n;
            snprintf(d->type, sizeof d->type, "GPU");
            snprintf(d->kernel_key, sizeof d->kernel_key, "OPENCL");
            snprintf(d->name, sizeof d->name, "/job:localhost/replica:0/task:0/device:GPU:%d",
                     d->id);
            /* The description may be cut to fit; %.Ns keeps GCC's truncation check quiet. */
            snprintf(d->desc, sizeof d->desc, "device: %d, name: %.80s, vendor: %.40s, %.60s%s",
                     d->id, name, vendor, version,
                     gpu ? "" : " (OpenCL CPU device used as a GPU)");
            d->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
            d->fp16 = true; /* stored as half, computed in float: kernels/opencl/cl_kernels.h */
            d->memory_bytes = (size_t)mem;
            out[n++] = d;
        }
    }
    return n;
}
