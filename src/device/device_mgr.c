/* device_mgr.c - the process's devices, buffers on devices and copies between them.
 *
 * Devices are enumerated once per process (TF's GPU options are per process too): CPU:0, then
 * CUDA GPUs (a later backend), then OpenCL GPUs. The first caller's visible-device list fixes the
 * GPU numbering; a later different list is an ALREADY_EXISTS error, since the mapping cannot
 * change under sessions that already use it. */
#include "device.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 64

static rill__device cpu0 = {
    .name = "/job:localhost/replica:0/task:0/device:CPU:0",
    .type = "CPU",
    .id = 0,
    .kernel_key = "CPU",
    .desc = "",
    .fp16 = true,
    .fp64 = true,
};

static pthread_mutex_t mgr_mu = PTHREAD_MUTEX_INITIALIZER;
static bool enumerated;
static rill__device *devices[MAX_DEVICES];
static int ndevices;
static char *visible_list; /* the list the devices were made with */
static rill_status *enum_status;

rill__device *rill__cpu_device(void)
{
    return &cpu0;
}

int rill__device_type_priority(const char *type)
{
    if (strcmp(type, "GPU") == 0) return 210;
    if (strcmp(type, "CPU") == 0) return 60;
    return 50;
}

bool rill__device_holds_dtype(const rill__device *d, rill_dtype t)
{
    if (!d->ops || !d->ops->alloc) return true; /* host memory holds everything */
    switch (t) {
    case RILL_FLOAT: return true;
    case RILL_DOUBLE: return d->fp64;
    case RILL_HALF: return d->fp16;
    case RILL_INT64: return true;
    default: return false;
    }
}

/* Parses "1,0" into a permutation of [0, n). */
static bool parse_visible(const char *list, int n, int *order, int *count, rill_status *s)
{
    *count = 0;
    const char *p = list;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',')) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Could not parse entry in 'visible_device_list': '%.*s'.  "
                            "visible_device_list = %s",
                            (int)strcspn(p, ","), p, list);
            return false;
        }
        if (v < 0 || v >= n) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "'visible_device_list' listed an invalid GPU id '%ld' but visible "
                            "device count is %d",
                            v, n);
            return false;
        }
        for (int i = 0; i < *count; i++)
            if (order[i] == v) {
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "visible_device_list contained a duplicate entry: %s", list);
                return false;
            }
        order[(*count)++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return true;
}

static void enumerate(const rill__device_options *o)
{
    enum_status = rill_status_new();
    devices[ndevices++] = &cpu0;
    rill__device *gpus[MAX_DEVICES];
    int ngpus = 0;
#ifdef RILL_HAVE_OPENCL
    ngpus += rill__opencl_enumerate(gpus + ngpus, MAX_DEVICES - 1 - ngpus, ngpus, enum_status);
#endif
    const char *list = o && o->visible_device_list ? o->visible_device_list : "";
    if (!*list && getenv("RILL_VISIBLE_GPUS")) list = getenv("RILL_VISIBLE_GPUS");
    visible_list = rill__strdup(list);
    int order[MAX_DEVICES], count = ngpus;
    for (int i = 0; i < ngpus; i++) order[i] = i;
    if (*list && !parse_visible(list, ngpus, order, &count, enum_status)) count = 0;
    double fraction = o ? o->per_process_memory_fraction : 0;
    for (int i = 0; i < count; i++) {
        rill__device *d = gpus[order[i]];
        d->id = i;
        if (fraction > 0 && fraction <= 1 && d->memory_bytes)
            d->memory_limit = (size_t)(fraction * (double)d->memory_bytes);
        snprintf(d->name, sizeof d->name, "/job:localhost/replica:0/task:0/device:GPU:%d", i);
        devices[ndevices++] = d;
    }
    enumerated = true;
}

int rill__devices(const rill__device_options *o, rill__device *const **devs, rill_status *s)
{
    if (o && (o->per_process_memory_fraction < 0 || o->per_process_memory_fraction > 1)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "per_process_gpu_memory_fraction must be in [0, 1], got %g",
                        o->per_process_memory_fraction);
        return -1;
    }
    pthread_mutex_lock(&mgr_mu);
    if (!enumerated) enumerate(o);
    const char *list = o && o->visible_device_list ? o->visible_device_list : NULL;
    if (list && *list && strcmp(list, visible_list) != 0) {
        rill_status_set(s, RILL_ALREADY_EXISTS,
                        "GPU devices were already created with visible_device_list '%s'; GPU "
                        "options are per process and cannot change to '%s'",
                        visible_list, list);
        pthread_mutex_unlock(&mgr_mu);
        return -1;
    }
    if (!rill_status_ok(enum_status)) {
        rill_status_copy(s, enum_status);
        pthread_mutex_unlock(&mgr_mu);
        return -1;
    }
    *devs = devices;
    int n = ndevices;
    pthread_mutex_unlock(&mgr_mu);
    return n;
}

static void device_free(rill__device *d, void *p, size_t n)
{
    atomic_fetch_sub(&d->memory_used, n);
    d->ops->free(d, p, n);
}

rill__buffer *rill__buffer_new_on(rill__device *d, rill_dtype t, int64_t numel)
{
    if (!d || !d->ops || !d->ops->alloc || t == RILL_STRING) return rill__buffer_new(t, numel);
    rill__buffer *b = rill__malloc(sizeof *b);
    RILL_CHECK_ALLOC(b);
    atomic_init(&b->refs, 1);
    b->dtype = t;
    b->nstrings = 0;
    b->size = (size_t)numel * rill_dtype_size(t);
    b->dev = d;
    b->parent = NULL;
    b->foreign = false;
    b->release = NULL;
    b->dev_free = device_free;
    /* TF's per_process_gpu_memory_fraction: a cap on what this process holds on the device. */
    size_t used = atomic_fetch_add(&d->memory_used, b->size) + b->size;
    b->data = d->memory_limit && used > d->memory_limit ? NULL : d->ops->alloc(d, b->size);
    if (!b->data) {
        atomic_fetch_sub(&d->memory_used, b->size);
        rill__free(b);
        return NULL;
    }
    return b;
}

bool rill__tensor_copy_into(rill_tensor *dst, const rill_tensor *src, rill_status *s)
{
    size_t n = rill_tensor_nbytes(src);
    if (n != rill_tensor_nbytes(dst) || src->dtype != dst->dtype) {
        rill_status_set(s, RILL_INTERNAL, "copy between tensors of different sizes");
        return false;
    }
    if (n == 0) return true;
    rill__device *sd = src->buf->dev, *dd = dst->buf->dev;
    if (src->dtype == RILL_STRING) {
        for (int64_t i = 0; i < src->numel; i++) {
            size_t len;
            const char *p = rill_tensor_get_string(src, i, &len);
            rill_tensor_set_string(dst, i, p, len);
        }
        return true;
    }
    if (!sd && !dd) {
        memcpy(dst->buf->data, src->buf->data, n);
        return true;
    }
    if (!sd) return dd->ops->copy_to_device(dd, dst->buf->data, 0, src->buf->data, n, s);
    if (!dd) return sd->ops->copy_from_device(sd, dst->buf->data, src->buf->data, 0, n, s);
    if (sd == dd) return sd->ops->copy_on_device(sd, dst->buf->data, src->buf->data, n, s);
    /* Two devices: through the host. */
    void *tmp = rill__aligned_alloc(n);
    RILL_CHECK_ALLOC(tmp);
    bool ok = sd->ops->copy_from_device(sd, tmp, src->buf->data, 0, n, s) &&
              dd->ops->copy_to_device(dd, dst->buf->data, 0, tmp, n, s);
    rill__aligned_free(tmp, n);
    return ok;
}

rill_tensor *rill__tensor_copy_to(const rill_tensor *src, rill__device *dst_dev, rill_status *s)
{
    rill__buffer *b = rill__buffer_new_on(dst_dev, src->dtype, src->numel);
    if (!b) {
        rill_status_set(s, RILL_RESOURCE_EXHAUSTED, "OOM when allocating tensor of %zu bytes on %s",
                        rill_tensor_nbytes(src), dst_dev ? dst_dev->name : "host");
        return NULL;
    }
    rill_tensor *t = rill__tensor_wrap(src->dtype, &src->shape, b);
    if (!rill__tensor_copy_into(t, src, s)) {
        rill_tensor_free(t);
        return NULL;
    }
    return t;
}
