/* threadpool.c - a fixed pool of worker threads with one FIFO queue, and parallel_for on top.
 *
 * The executor runs small graphs inline on the caller (a hand-off costs ~12 us here, more than a
 * whole small step); the pool takes expensive nodes when several are ready, and shards of big
 * elementwise loops. */
#include "core.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct task {
    rill__task_fn fn;
    void *arg;
    struct task *next;
} task;

struct rill__threadpool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    task *head, *tail, *free_tasks;
    bool stop;
    int n;
    pthread_t *threads;
};

static void *worker(void *arg)
{
    rill__threadpool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stop) pthread_cond_wait(&p->cv, &p->mu);
        if (!p->head) break;
        task *t = p->head;
        p->head = t->next;
        if (!p->head) p->tail = NULL;
        rill__task_fn fn = t->fn;
        void *a = t->arg;
        t->next = p->free_tasks;
        p->free_tasks = t;
        pthread_mutex_unlock(&p->mu);
        fn(a);
        pthread_mutex_lock(&p->mu);
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
    p->stop = true;
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
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

typedef struct shard_job {
    rill__range_fn fn;
    void *arg;
    int64_t n, per;
    atomic_int next;
    int nshards;
    atomic_int done;
    int helpers; /* scheduled helper tasks that have not yet left the job (guarded by mu) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
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
        if (atomic_fetch_add(&j->done, 1) + 1 == j->nshards) {
            pthread_mutex_lock(&j->mu);
            pthread_cond_broadcast(&j->cv);
            pthread_mutex_unlock(&j->mu);
        }
    }
}

static void shard_task(void *arg)
{
    shard_job *j = arg;
    run_shards(j);
    /* The job lives on the caller's stack: the caller waits until every helper has left it,
     * including helpers that start after the other threads took all the shards. */
    pthread_mutex_lock(&j->mu);
    if (--j->helpers == 0) pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
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
    shard_job j = {.fn = fn, .arg = arg, .n = n, .nshards = (int)shards};
    j.helpers = (int)shards - 1;
    j.per = (n + shards - 1) / shards;
    atomic_init(&j.next, 0);
    atomic_init(&j.done, 0);
    pthread_mutex_init(&j.mu, NULL);
    pthread_cond_init(&j.cv, NULL);
    for (int i = 1; i < shards; i++) rill__threadpool_schedule(p, shard_task, &j);
    run_shards(&j);
    pthread_mutex_lock(&j.mu);
    while (atomic_load(&j.done) < j.nshards || j.helpers > 0) pthread_cond_wait(&j.cv, &j.mu);
    pthread_mutex_unlock(&j.mu);
    pthread_mutex_destroy(&j.mu);
    pthread_cond_destroy(&j.cv);
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
