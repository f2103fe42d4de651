/* core.h - internal helpers of the core layer: allocation hook, string helpers, logging, the
 * tensor and buffer internals, the thread pool and a clock. Everything here is rill__-prefixed
 * and not part of the public API. */
#ifndef RILL_CORE_CORE_H
#define RILL_CORE_CORE_H

#include <rill/status.h>
#include <rill/tensor.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* --- allocation: every allocation goes through these so it can be counted (tests check that a
 * steady-state step allocates nothing) --- */
void *rill__malloc(size_t n);
void *rill__calloc(size_t count, size_t n);
void *rill__realloc(void *p, size_t n);
void rill__free(void *p);
/* 64-byte aligned; large blocks get transparent huge pages (first touch costs ~10 us a page
 * on our VMs). Free with rill__aligned_free. */
void *rill__aligned_alloc(size_t n);
void rill__aligned_free(void *p, size_t n);
/* Returns every cached block to the system (the cache keeps freed blocks >= 64 KiB). */
void rill__aligned_trim(void);
/* Returns the cached blocks no allocation took for idle_s seconds (servers call it every few
 * seconds, so that memory a burst left in the cache goes back to the system); the bytes freed. */
size_t rill__aligned_release_idle(double idle_s);
/* The status code for an errno, as TF's file system maps them (ENOENT NOT_FOUND, EACCES
 * PERMISSION_DENIED, ENOSPC RESOURCE_EXHAUSTED, ...; UNAVAILABLE for I/O errors). */
rill_code rill__errno_code(int err);
/* mkdir -p dir; false with s set (naming the directory) when a part cannot be made or is not a
 * directory. */
bool rill__make_dirs(const char *dir, rill_status *s);
char *rill__strdup(const char *s);
char *rill__strndup(const char *s, size_t n);
/* printf into a new string; caller rill__free()s. */
char *rill__asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Number of allocations made through the hooks since start (monotonic). */
uint64_t rill__alloc_count(void);

/* Allocation failure is not a user error; it is reported and the process stops. */
#define RILL_CHECK_ALLOC(p)                                                                        \
    do {                                                                                           \
        if (!(p)) rill__oom(__FILE__, __LINE__);                                                   \
    } while (0)
_Noreturn void rill__oom(const char *file, int line);

/* A cleared status owned by the calling thread, for calls on the per-step path that need
 * somewhere to put an error they rarely have (allocated once per thread). Valid until the
 * thread's next call. */
rill_status *rill__scratch_status(void);

/* --- logging --- */
typedef enum { RILL_LOG_DEBUG, RILL_LOG_INFO, RILL_LOG_WARNING, RILL_LOG_ERROR } rill__log_level;
void rill__log(rill__log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* --- growable pointer array --- */
typedef struct rill__vec {
    void **items;
    int n, cap;
} rill__vec;
void rill__vec_push(rill__vec *v, void *p);
void rill__vec_free(rill__vec *v);

/* --- buffers and tensors --- */
struct rill__device;
typedef struct rill__buffer {
    atomic_int refs;
    void *data; /* host pointer, or the backend's handle (an OpenCL cl_mem) on a device */
    size_t size;
    struct rill__device *dev; /* NULL: host memory */
    /* Frees device memory (set by the device layer for device buffers). */
    void (*dev_free)(struct rill__device *dev, void *data, size_t size);
    rill_dtype dtype; /* RILL_STRING buffers own their strings */
    int64_t nstrings;
    struct rill__buffer *parent; /* a view: data lies inside parent's, which this holds */
    /* Borrowed memory (rill_tensor_new_borrowed): never written in place, never freed by rill;
     * release(release_ctx) runs when the last reference goes. */
    bool foreign;
    void (*release)(void *ctx);
    void *release_ctx;
} rill__buffer;

typedef struct rill__tstring {
    char *ptr;
    size_t len;
} rill__tstring;

struct rill_tensor {
    atomic_int refs;
    /* Of refs, those held by executors' recycle caches (rill__recycle_set), which never read
     * the contents: a tensor they hold is reused only once nobody else holds it. */
    atomic_int recycle_refs;
    rill_dtype dtype;
    rill_shape shape;
    int64_t numel;
    rill__buffer *buf;
};

rill__buffer *rill__buffer_new(rill_dtype t, int64_t numel);
void rill__buffer_unref(rill__buffer *b);
/* Takes ownership of a block from rill__aligned_alloc (size bytes) as a host buffer. */
rill__buffer *rill__buffer_adopt(void *data, size_t size);
/* A host tensor viewing bytes [off, off + nbytes of shape) of parent, without a copy; it holds a
 * reference to parent. */
rill_tensor *rill__tensor_view(rill__buffer *parent, size_t off, rill_dtype t, const rill_shape *s);
/* A tensor header sharing b (takes one buffer reference). */
rill_tensor *rill__tensor_wrap(rill_dtype t, const rill_shape *s, rill__buffer *b);
/* True when this holder is the only one of tensor and buffer: updating in place is invisible to
 * anyone else. */
static inline bool rill__tensor_exclusive(const rill_tensor *t)
{
    return atomic_load_explicit(&t->refs, memory_order_acquire) == 1 &&
           atomic_load_explicit(&t->buf->refs, memory_order_acquire) == 1 && !t->buf->foreign &&
           !(t->buf->parent && t->buf->parent->foreign);
}
/* Puts t (NULL: nothing) in a recycle cache slot, dropping what was there. */
static inline void rill__recycle_set(rill_tensor **slot, rill_tensor *t)
{
    rill_tensor *old = *slot;
    if (t) {
        atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&t->recycle_refs, 1, memory_order_relaxed);
    }
    *slot = t;
    if (old) {
        atomic_fetch_sub_explicit(&old->recycle_refs, 1, memory_order_relaxed);
        rill_tensor_free(old);
    }
}
/* Re-shapes a tensor header in place (numel must not change). */
void rill__tensor_set_shape(rill_tensor *t, const rill_shape *s);

/* --- thread pool --- */
typedef struct rill__threadpool rill__threadpool;
typedef void (*rill__task_fn)(void *arg);
rill__threadpool *rill__threadpool_new(int nthreads);
void rill__threadpool_free(rill__threadpool *p);
int rill__threadpool_size(const rill__threadpool *p);
void rill__threadpool_schedule(rill__threadpool *p, rill__task_fn fn, void *arg);
/* Runs fn(arg, begin, end) over [0, n) in up to size+1 shards (the caller runs one) and waits. */
typedef void (*rill__range_fn)(void *arg, int64_t begin, int64_t end);
void rill__parallel_for(rill__threadpool *p, int64_t n, int64_t min_per_shard, rill__range_fn fn,
                        void *arg);
/* The process-wide pool for intra-op work (created on first use, one thread per core less one). */
rill__threadpool *rill__default_pool(void);
int rill__num_cores(void);

/* --- clocks --- */
double rill__now_seconds(void); /* monotonic */

/* --- random numbers: Philox-free, counter-based splitmix/xoshiro256** --- */
typedef struct rill__rng {
    uint64_t s[4];
} rill__rng;
void rill__rng_seed(rill__rng *r, uint64_t seed);
uint64_t rill__rng_next(rill__rng *r);
double rill__rng_uniform(rill__rng *r); /* [0, 1) */
double rill__rng_normal(rill__rng *r);
uint64_t rill__random_seed(void); /* from the OS clock and a counter */

/* --- CRC32C (Castagnoli), for the checkpoint and event file formats ---
 * Extends crc (0 to start) with n bytes: rill__crc32c(rill__crc32c(0, a), b) is the CRC of a
 * followed by b. Uses the SSE4.2 crc32 instruction where the CPU has it (chosen at run time). */
uint32_t rill__crc32c(uint32_t crc, const void *data, size_t n);
/* The "masked" CRC that TF/LevelDB files store (a CRC of data that embeds CRCs is weak):
 * rotate right by 15 and add a constant; unmask undoes it. */
static inline uint32_t rill__crc32c_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
static inline uint32_t rill__crc32c_unmask(uint32_t masked)
{
    uint32_t rot = masked - 0xa282ead8u;
    return (rot >> 17) | (rot << 15);
}

/* --- string-keyed hash map (open addressing); keys are copied, values borrowed --- */
typedef struct rill__strmap {
    char **keys;
    void **vals;
    size_t cap, n;
} rill__strmap;
void *rill__strmap_get(const rill__strmap *m, const char *key);
/* Inserts or replaces. */
void rill__strmap_put(rill__strmap *m, const char *key, void *val);
void rill__strmap_free(rill__strmap *m);

#endif
