/* device.h - the device layer: what a device is and how the runtime talks to it.
 *
 * A device is a small vtable (ggml-backend style): allocate and free device memory, copy between
 * host and device, synchronise. Optional slots may be NULL and the core falls back (a NULL
 * alloc means host memory: the CPU device). Buffers remember their device (rill__buffer.dev), so
 * freeing goes back to the right one.
 *
 * The device manager enumerates devices once per process, as TensorFlow does (GPU options are
 * per process): CPU:0 always; GPU:N are CUDA devices (when that backend is built, honouring
 * CUDA_VISIBLE_DEVICES), then OpenCL GPU devices; OpenCL CPU devices such as PoCL appear as GPUs
 * only when RILL_OPENCL_CPU_AS_GPU=1. RILL_VISIBLE_GPUS / the session's visible-device list
 * selects and reorders GPUs. */
#ifndef RILL_DEVICE_DEVICE_H
#define RILL_DEVICE_DEVICE_H

#include "../core/core.h"

typedef struct rill__device rill__device;

typedef struct rill__device_ops {
    /* Device memory of n bytes (NULL on failure). NULL slot: host memory. */
    void *(*alloc)(rill__device *d, size_t n);
    void (*free)(rill__device *d, void *p, size_t n);
    /* Copies n bytes host -> device at byte offset off of dst. Blocking unless the backend can
     * keep src alive (it cannot in general: copies are complete on return). */
    bool (*copy_to_device)(rill__device *d, void *dst, size_t off, const void *src, size_t n,
                           rill_status *s);
    bool (*copy_from_device)(rill__device *d, void *dst, const void *src, size_t off, size_t n,
                             rill_status *s);
    /* device -> device on the same device. */
    bool (*copy_on_device)(rill__device *d, void *dst, const void *src, size_t n, rill_status *s);
    /* Waits for all queued work. */
    bool (*sync)(rill__device *d, rill_status *s);
} rill__device_ops;

struct rill__device {
    char name[128];         /* full name: /job:localhost/replica:0/task:0/device:GPU:0 */
    char type[16];          /* "CPU", "GPU" */
    int id;                 /* N of TYPE:N */
    char kernel_key[16];    /* kernel registry device type: "CPU", "OPENCL", "CUDA" */
    char desc[256];         /* physical_device_desc for the "Device mapping:" log; "" for CPU */
    bool fp16, fp64;        /* dtype support of the hardware */
    size_t memory_bytes;    /* global memory, 0 when unknown */
    size_t memory_limit;    /* per_process_gpu_memory_fraction x memory_bytes; 0: no limit */
    atomic_size_t memory_used; /* bytes allocated through ops->alloc and not yet freed */
    const rill__device_ops *ops;
    void *impl;             /* backend state */
};

/* Device-type priority for placement (TF: GPU 210, CPU 60). */
int rill__device_type_priority(const char *type);

/* Whether a tensor of dtype t can live in this device's memory (GPUs: half/float/double and,
 * for variables, int64; int32 never: it is kept in host memory as in TensorFlow). */
bool rill__device_holds_dtype(const rill__device *d, rill_dtype t);

/* --- the device manager (process-wide) --- */
typedef struct rill__device_options {
    const char *visible_device_list; /* "1,0": GPU:0 = visible 1; NULL/"": all */
    double per_process_memory_fraction; /* 0: no limit; else a cap on each GPU's allocations */
    bool allow_growth; /* accepted; rill's devices always allocate on demand (see docs) */
} rill__device_options;

/* The devices of this process, created on first call with these options (later calls with other
 * options get the same devices, as TF's per-process GPU options; a conflicting list is reported
 * with ALREADY_EXISTS). Returns the count; *devs points at an array owned by the manager. */
int rill__devices(const rill__device_options *o, rill__device *const **devs, rill_status *s);
/* The CPU:0 device. */
rill__device *rill__cpu_device(void);
/* Allocates a buffer for numel elements of t on d (host for CPU). */
rill__buffer *rill__buffer_new_on(rill__device *d, rill_dtype t, int64_t numel);
/* Copies src (any device) into a new tensor on dst_dev. NULL with s set on failure. */
rill_tensor *rill__tensor_copy_to(const rill_tensor *src, rill__device *dst_dev, rill_status *s);
/* Copies the bytes of src into dst (same size; any devices). */
bool rill__tensor_copy_into(rill_tensor *dst, const rill_tensor *src, rill_status *s);
/* The device a tensor lives on (CPU:0 for host memory). */
static inline bool rill__tensor_on_host(const rill_tensor *t)
{
    return t->buf->dev == NULL;
}

/* Backends register their devices here (called by the manager during enumeration). */
#ifdef RILL_HAVE_OPENCL
/* Appends OpenCL devices as GPUs to out (capacity cap); returns how many. */
int rill__opencl_enumerate(rill__device **out, int cap, int first_gpu_id, rill_status *s);
#endif

#endif
