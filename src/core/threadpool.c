/* threadpool.c - a fixed pool of worker threads with one FIFO queue, and parallel_for on top.
 *
 * The executor runs small graphs inline on the caller (a hand-off to a sleeping thread costs
 * ~12 us here, more than a whole small step); the pool takes expensive nodes when several are
 * ready, and shards of big elementwise loops and matrix products.
 *
 * Waking a thread that sleeps on a condition variable is a futex call and, on a virtual machine,
 * an interrupt to an idle vCPU: tens of microseconds, paid on both sides of every parallel_for.
 * An LSTM step issues a few thousand of them; sleeping after each one left a quarter of the step
 * in the kernel and made two threads slower than one. So a thread that runs out of work first
 * spins for SPIN_NS watching the queue (as OpenMP's and Eigen's pools do), and only then sleeps;
 * a task is handed to a sleeping thread with a signal only when one sleeps. A parallel_for caller
 * takes back the helper tasks no thread has started by the time it has run out of shards, so it
 * never waits for a thread the OS has not scheduled, and it spins, then sleeps, only for helpers
 * that are running a shard. */
#include "core.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

/* How long an idle thread watches for work before it sleeps: longer than the gap between the
 * parallel loops of one step, far shorter than a scheduler tick. */
#define SPIN_NS 50000

typedef struct task {
    rill__task_fn fn;
    void *arg;
    struct task *next;
} task;

struct rill__threadpool {
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* workers sleep here for tasks */
    pthread_cond_t done_cv; /* parallel_for callers sleep here for their running helpers */
    task *head, *tail, *free_tasks;
    atomic_int queued;      /* tasks in the queue (changed under mu; spinning threads read it) */
    atomic_bool stop;
    int sleepers;           /* workers waiting on cv (guarded by mu) */
    atomic_int job_waiters; /* parallel_for callers waiting on done_cv */
    int n;
    pthread_t *threads;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spins until done(arg) or SPIN_NS pass; true when done. */
static bool spin_until(bool (*done)(const void *), const void *arg)
{
    uint64_t t0 = 0;
    for (unsigned i = 0;; i++) {
        if (done(arg)) return true;
        cpu_relax();
        if ((i & 63) == 63) {
            uint64_t t = now_ns();
            if (!t0)
                t0 = t;
            else if (t - t0 > SPIN_NS)
                return done(arg);
        }
    }
}

static bool has_work(const void *arg)
{
    const rill__threadpool *p = arg;
    return atomic_load_explicit(&p->queued, memory_order_acquire) > 0 ||
           atomic_load_explicit(&p->stop, memory_order_relaxed);
}

static void *worker(void *arg)
{
    rill__threadpool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        task *t = p->head;
        if (t) {
            p->head = t->next;
            if (!p->head) p->tail = NULL;
            atomic_fetch_sub_explicit(&p->queued, 1, memory_order_relaxed);
            rill__task_fn fn = t->fn;
            void *a = t->arg;
            t->next = p->free_tasks;
            p->free_tasks = t;
            pthread_mutex_unlock(&p->mu);
            fn(a);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        if (atomic_load(&p->stop)) break;
        pthread_mutex_unlock(&p->mu);
        bool work = spin_until(has_work, p);
        pthread_mutex_lock(&p->mu);
        if (work || p->head || atomic_load(&p->stop)) continue;
        p->sleepers++;
        pthread_cond_wait(&p->cv, &p->mu);
        p->sleepers--;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

rill__threadpool *rill__threadpool_new(int nthreads)
{
    rill__threadpool *p = rill__calloc(1, sizeof *p);
    RILL_CHECK_ALLOC(p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    atomic_init(&p->queued, 0);
    atomic_init(&p->stop, false);
    atomic_init(&p->job_waiters, 0);
    p->n = nthreads < 0 ? 0 : nthreads;
    p->threads = rill__calloc((size_t)(p->n ? p->n : 1), sizeof(pthread_t));
    RILL_CHECK_ALLOC(p->threads);
    for (int i = 0; i < p->n; i++) pthread_create(&p->threads[i], NULL, worker, p);
    return p;
}

void rill__threadpool_free(rill__threadpool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n; i++) pthread_join(p->threads[i], NULL);
    for (task *t = p->free_tasks; t;) {
        task *nx = t->next;
        rill__free(t);
        t = nx;
    }
    rill__free(p->threads);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->done_cv);
    rill__free(p);
}

int rill__threadpool_size(const rill__threadpool *p)
{
    return p ? p->n : 0;
}

void rill__threadpool_schedule(rill__threadpool *p, rill__task_fn fn, void *arg)
{
    if (!p || p->n == 0) {
        fn(arg);
        return;
    }
    pthread_mutex_lock(&p->mu);
    task *t = p->free_tasks;
    if (t) {
        p->free_tasks = t->next;
    } else {
        t = rill__malloc(sizeof *t);
        RILL_CHECK_ALLOC(t);
    }
    t->fn = fn;
    t->arg = arg;
    t->next = NULL;
    if (p->tail)
        p->tail->next = t;
    else
        p->head = t;
    p->tail = t;
    atomic_fetch_add_explicit(&p->queued, 1, memory_order_release);
    if (p->sleepers > 0) pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Removes the queued tasks fn(arg) no thread has started; returns how many. */
static int unschedule(rill__threadpool *p, rill__task_fn fn, const void *arg)
{
    int n = 0;
    pthread_mutex_lock(&p->mu);
    task *prev = NULL;
    for (task *t = p->head; t;) {
        task *nx = t->next;
        if (t->fn == fn && t->arg == arg) {
            if (prev)
                prev->next = nx;
            else
                p->head = nx;
            if (p->tail == t) p->tail = prev;
            atomic_fetch_sub_explicit(&p->queued, 1, memory_order_relaxed);
            t->next = p->free_tasks;
            p->free_tasks = t;
            n++;
        } else {
            prev = t;
        }
        t = nx;
    }
    pthread_mutex_unlock(&p->mu);
    return n;
}

typedef struct shard_job {
    rill__range_fn fn;
    void *arg;
    int64_t n, per;
    atomic_int next;
    int nshards;
    atomic_int helpers; /* helper tasks scheduled and not yet finished with the job */
    rill__threadpool *pool;
} shard_job;

static void run_shards(shard_job *j)
{
    for (;;) {
        int i = atomic_fetch_add(&j->next, 1);
        if (i >= j->nshards) return;
        int64_t b = (int64_t)i * j->per, e = b + j->per;
        if (e > j->n) e = j->n;
        if (b > e) b = e; /* rounding can leave the last shards empty */
        j->fn(j->arg, b, e);
    }
}

static void shard_task(void *arg)
{
    shard_job *j = arg;
    rill__threadpool *p = j->pool;
    run_shards(j);
    /* The job lives on the caller's stack: this decrement is the helper's last touch of it. The
     * caller counts itself a waiter before it reads helpers, and this reads the waiters after
     * the decrement (both sequentially consistent), so one of the two sees the other. */
    if (atomic_fetch_sub(&j->helpers, 1) == 1 && atomic_load(&p->job_waiters) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->done_cv);
        pthread_mutex_unlock(&p->mu);
    }
}

static bool helpers_done(const void *arg)
{
    return atomic_load_explicit(&((const shard_job *)arg)->helpers, memory_order_acquire) == 0;
}

void rill__parallel_for(rill__threadpool *p, int64_t n, int64_t min_per_shard, rill__range_fn fn,
                        void *arg)
{
    if (n <= 0) return;
    int workers = rill__threadpool_size(p) + 1;
    if (min_per_shard < 1) min_per_shard = 1;
    int64_t shards = n / min_per_shard;
    if (shards > workers) shards = workers;
    if (shards <= 1) {
        fn(arg, 0, n);
        return;
    }
    shard_job j = {.fn = fn, .arg = arg, .n = n, .nshards = (int)shards, .pool = p};
    j.per = (n + shards - 1) / shards;
    atomic_init(&j.next, 0);
    atomic_init(&j.helpers, (int)shards - 1);
    for (int i = 1; i < shards; i++) rill__threadpool_schedule(p, shard_task, &j);
    run_shards(&j);
    int taken = unschedule(p, shard_task, &j);
    if (taken) atomic_fetch_sub(&j.helpers, taken);
    if (spin_until(helpers_done, &j)) return;
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->job_waiters, 1);
    while (atomic_load(&j.helpers) > 0) pthread_cond_wait(&p->done_cv, &p->mu);
    atomic_fetch_sub(&p->job_waiters, 1);
    pthread_mutex_unlock(&p->mu);
}

int rill__num_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (int)n;
}

static rill__threadpool *default_pool;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void make_default_pool(void)
{
    default_pool = rill__threadpool_new(rill__num_cores() - 1);
}

rill__threadpool *rill__default_pool(void)
{
    pthread_once(&default_once, make_default_pool);
    return default_pool;
}
