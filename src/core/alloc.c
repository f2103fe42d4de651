/* alloc.c - the allocation hook, small string helpers, logging, vectors and clocks.
 *
 * Every allocation in rill goes through rill__malloc and friends so that tests can count them:
 * a steady-state step of a small graph must allocate nothing. */
#include "core.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static atomic_uint_fast64_t alloc_count;

uint64_t rill__alloc_count(void)
{
    return atomic_load_explicit(&alloc_count, memory_order_relaxed);
}

void *rill__malloc(size_t n)
{
    atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed);
    return malloc(n ? n : 1);
}

void *rill__calloc(size_t count, size_t n)
{
    atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed);
    return calloc(count ? count : 1, n ? n : 1);
}

void *rill__realloc(void *p, size_t n)
{
    atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed);
    return realloc(p, n ? n : 1);
}

void rill__free(void *p)
{
    free(p);
}

#define HUGE_THRESHOLD (2u << 20)
#define POOL_MIN       (64u << 10)    /* blocks from here up are cached when freed */
#define POOL_MAX_BYTES (512ull << 20) /* at most this much sits in the cache */
#define POOL_BUCKETS   256

/* Freed tensor buffers of 64 KiB and up are kept, by exact rounded size, for the next step that
 * needs the same size. A training step allocates the same shapes every time; without the cache
 * each big buffer would be a fresh mmap whose first touch costs ~10 us per 4 KiB page here. */
typedef struct pool_block {
    struct pool_block *next;
    size_t size;
    double freed_at; /* when it went into the cache (rill__aligned_release_idle) */
} pool_block;

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pool_block *pool[POOL_BUCKETS];
static size_t pool_bytes;

static size_t round_size(size_t n)
{
    size_t sz = (n + 63) & ~(size_t)63;
    if (sz == 0) sz = 64;
    if (sz >= POOL_MIN) sz = (sz + 4095) & ~(size_t)4095;
    if (sz >= HUGE_THRESHOLD) sz = (sz + HUGE_THRESHOLD - 1) & ~(size_t)(HUGE_THRESHOLD - 1);
    return sz;
}

static size_t bucket_of(size_t sz)
{
    return (sz >> 12) * 0x9e3779b1u % POOL_BUCKETS;
}

void *rill__aligned_alloc(size_t n)
{
    size_t sz = round_size(n);
    if (sz >= POOL_MIN) {
        pthread_mutex_lock(&pool_mu);
        for (pool_block **pp = &pool[bucket_of(sz)]; *pp; pp = &(*pp)->next) {
            if ((*pp)->size != sz) continue;
            pool_block *b = *pp;
            *pp = b->next;
            pool_bytes -= sz;
            pthread_mutex_unlock(&pool_mu);
            return b;
        }
        pthread_mutex_unlock(&pool_mu);
    }
    atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed);
    if (sz >= HUGE_THRESHOLD) {
        /* Align big blocks to 2 MiB so the kernel can back them with huge pages. */
        void *p = aligned_alloc(HUGE_THRESHOLD, sz);
        if (p) madvise(p, sz, MADV_HUGEPAGE);
        return p;
    }
    return aligned_alloc(64, sz);
}

void rill__aligned_free(void *p, size_t n)
{
    if (!p) return;
    size_t sz = round_size(n);
    if (sz >= POOL_MIN) {
        pthread_mutex_lock(&pool_mu);
        if (pool_bytes + sz <= POOL_MAX_BYTES) {
            pool_block *b = p;
            b->size = sz;
            b->freed_at = rill__now_seconds();
            b->next = pool[bucket_of(sz)];
            pool[bucket_of(sz)] = b;
            pool_bytes += sz;
            pthread_mutex_unlock(&pool_mu);
            return;
        }
        pthread_mutex_unlock(&pool_mu);
    }
    free(p);
}

size_t rill__aligned_release_idle(double idle_s)
{
    double before = rill__now_seconds() - idle_s;
    pool_block *gone = NULL;
    size_t n = 0;
    pthread_mutex_lock(&pool_mu);
    for (int i = 0; i < POOL_BUCKETS && pool_bytes > 0; i++) {
        for (pool_block **pp = &pool[i]; *pp;) {
            pool_block *b = *pp;
            if (b->freed_at > before) {
                pp = &b->next;
                continue;
            }
            *pp = b->next;
            pool_bytes -= b->size;
            n += b->size;
            b->next = gone;
            gone = b;
        }
    }
    pthread_mutex_unlock(&pool_mu);
    while (gone) { /* freed outside the lock: munmap can take a while */
        pool_block *next = gone->next;
        free(gone);
        gone = next;
    }
    return n;
}

void rill__aligned_trim(void)
{
    pthread_mutex_lock(&pool_mu);
    for (int i = 0; i < POOL_BUCKETS; i++) {
        while (pool[i]) {
            pool_block *b = pool[i];
            pool[i] = b->next;
            free(b);
        }
    }
    pool_bytes = 0;
    pthread_mutex_unlock(&pool_mu);
}

_Noreturn void rill__oom(const char *file, int line)
{
    fprintf(stderr, "rill: out of memory at %s:%d\n", file, line);
    abort();
}

char *rill__strdup(const char *s)
{
    if (!s) s = "";
    return rill__strndup(s, strlen(s));
}

char *rill__strndup(const char *s, size_t n)
{
    char *d = rill__malloc(n + 1);
    RILL_CHECK_ALLOC(d);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

char *rill__asprintf(const char *fmt, ...)
{
    char small[256];
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0) n = 0;
    char *s = rill__malloc((size_t)n + 1);
    RILL_CHECK_ALLOC(s);
    if ((size_t)n < sizeof small)
        memcpy(s, small, (size_t)n + 1);
    else
        vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

void rill__log(rill__log_level lvl, const char *fmt, ...)
{
    static const char tag[] = {'D', 'I', 'W', 'E'};
    const char *min = getenv("RILL_LOG_LEVEL");
    if (min && lvl < (rill__log_level)atoi(min)) return;
    if (!min && lvl == RILL_LOG_DEBUG) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    char line[2048];
    int off =
        snprintf(line, sizeof line, "%c%02d%02d %02d:%02d:%02d.%06ld] ", tag[lvl], tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + off, sizeof line - (size_t)off, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}

void rill__vec_push(rill__vec *v, void *p)
{
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 8;
        void **items = rill__realloc(v->items, (size_t)cap * sizeof *items);
        RILL_CHECK_ALLOC(items);
        v->items = items;
        v->cap = cap;
    }
    v->items[v->n++] = p;
}

void rill__vec_free(rill__vec *v)
{
    rill__free(v->items);
    v->items = NULL;
    v->n = v->cap = 0;
}

double rill__now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
