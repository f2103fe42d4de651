/* cpu_queue.c - the kernels of TF's queue API (graph/ops_queue.c): a queue of tuples in the
 * session's resource manager, FIFO or random-shuffle, with TF's semantics and texts.
 *
 * FIFOQueueV2 / RandomShuffleQueueV2 create the queue on their first run in a session (named by
 * shared_name, else "_<n>_<node name>" with n a process-wide counter, as TF names anonymous
 * resources) and output its name as the handle; the other ops look the queue up by it.
 * Waits (an enqueue into a full queue, a dequeue of more than the queue holds) last until the
 * queue can serve them, the queue is closed, the step's deadline passes or the session is
 * cancelled (Session.close, Ctrl-C); timeout_ms > 0 bounds them too. A random-shuffle queue
 * serves a dequeue only while at least min_after_dequeue elements stay behind, until it is
 * closed; it takes uniformly random elements (seed, seed2; both 0: seeded from the clock). */
#include "cpu_kernels.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#define MAXC 64

int rill__queue_components(const rill_node *n, const char *attr, rill_dtype *types,
                           rill_shape *shapes, int cap, bool *has_shapes);

typedef struct queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *name;
    const char *kind; /* "FIFOQueue", "RandomShuffleQueue" */
    bool shuffle;
    int nc;
    rill_dtype types[MAXC];
    rill_shape shapes[MAXC];
    bool has_shapes;
    int64_t capacity; /* < 0: unbounded */
    int64_t min_after;
    rill__rng rng;
    rill_tensor **items; /* cap elements of nc tensors each: a ring (FIFO) or a bag (shuffle) */
    int64_t head, n, cap;
    bool closed;
    unsigned cancel_gen; /* bumped by close(cancel_pending_enqueues=True) */
} queue;

static void queue_free(void *p)
{
    queue *q = p;
    for (int64_t i = 0; i < q->n; i++) {
        int64_t at = q->shuffle ? i : (q->head + i) % q->cap;
        for (int c = 0; c < q->nc; c++) rill_tensor_free(q->items[at * q->nc + c]);
    }
    rill__free(q->items);
    rill__free(q->name);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    rill__free(q);
}

typedef struct make_args {
    const rill_node *node;
    const char *name;
} make_args;

static void *queue_make(void *arg)
{
    make_args *a = arg;
    const rill_node *n = a->node;
    queue *q = rill__calloc(1, sizeof *q);
    RILL_CHECK_ALLOC(q);
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->name = rill__strdup(a->name);
    q->shuffle = strcmp(n->op->name, "RandomShuffleQueueV2") == 0;
    q->kind = q->shuffle ? "RandomShuffleQueue" : "FIFOQueue";
    q->nc = rill__queue_components(n, "component_types", q->types, q->shapes, MAXC, &q->has_shapes);
    q->capacity = rill__attr_int(n, "capacity", -1);
    q->min_after = q->shuffle ? rill__attr_int(n, "min_after_dequeue", 0) : 0;
    uint64_t seed = (uint64_t)rill__attr_int(n, "seed", 0),
             seed2 = (uint64_t)rill__attr_int(n, "seed2", 0);
    if (seed == 0 && seed2 == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)(uintptr_t)q;
    }
    rill__rng_seed(&q->rng, seed * 0x9E3779B97F4A7C15ull ^ seed2);
    return q;
}

static void *queue_absent(void *arg)
{
    (void)arg;
    return NULL;
}

static atomic_int anonymous_queues;

typedef struct handle_state {
    char *name;
} handle_state;

static void handle_state_free(void *p)
{
    handle_state *h = p;
    if (h) rill__free(h->name);
    rill__free(h);
}

static void make_queue_kernel(rill__kctx *ctx)
{
    if (!ctx->rm) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "no resource manager for queue '%s'", ctx->node->name);
        return;
    }
    /* Steps of several threads may run this node at once: one makes the name. */
    static pthread_mutex_t state_mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&state_mu);
    handle_state *h = *ctx->state;
    if (!h) {
        h = rill__calloc(1, sizeof *h);
        RILL_CHECK_ALLOC(h);
        const rill__attr *sn = rill__node_attr(ctx->node, "shared_name");
        if (sn && sn->kind == RILL__ATTR_STRING && sn->v.s && sn->v.s[0])
            h->name = rill__strdup(sn->v.s);
        else
            h->name =
                rill__asprintf("_%d_%s", atomic_fetch_add(&anonymous_queues, 1), ctx->node->name);
        *ctx->state = h;
    }
    pthread_mutex_unlock(&state_mu);
    make_args a = {ctx->node, h->name};
    queue *q = rill__resource_lookup(ctx->rm, "queue_v2", h->name, queue_make, &a, queue_free);
    rill_dtype t[MAXC];
    rill_shape sh[MAXC];
    bool has;
    int nc = rill__queue_components(ctx->node, "component_types", t, sh, MAXC, &has);
    bool same =
        q->nc == nc && q->shuffle == (strcmp(ctx->node->op->name, "RandomShuffleQueueV2") == 0);
    for (int i = 0; same && i < nc; i++) same = q->types[i] == t[i];
    if (!same) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Shared queue '%s' has another kind or other component types than "
                        "this op makes",
                        h->name);
        return;
    }
    rill_tensor *out = rill_tensor_scalar_string(h->name);
    RILL_CHECK_ALLOC(out);
    rill__kctx_set_output(ctx, 0, out);
}

static queue *lookup(rill__kctx *ctx)
{
    size_t len = 0;
    const char *name = ctx->inputs[0] && ctx->inputs[0]->numel == 1
                           ? rill_tensor_get_string(ctx->inputs[0], 0, &len)
                           : NULL;
    queue *q = name && ctx->rm
                   ? rill__resource_lookup(ctx->rm, "queue_v2", name, queue_absent, NULL, NULL)
                   : NULL;
    if (!q)
        rill__kctx_fail(ctx, RILL_NOT_FOUND, "Queue '%s' does not exist in this session",
                        name ? name : "?");
    return q;
}

typedef enum { GO, CANCELLED, STEP_DEADLINE, TIMED_OUT } wait_end;

/* Waits on q->cv for up to 50 ms; GO to go on waiting. */
static wait_end wait_slice(rill__kctx *ctx, queue *q, double deadline)
{
    if (rill__kctx_cancelled(ctx)) return CANCELLED;
    double now = rill__now_seconds();
    if (ctx->deadline && now >= ctx->deadline) return STEP_DEADLINE;
    if (deadline > 0 && now >= deadline) return TIMED_OUT;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + 50L * 1000 * 1000;
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&q->cv, &q->mu, &ts);
    return GO;
}

static double op_deadline(const rill__kctx *ctx)
{
    int64_t ms = rill__attr_int(ctx->node, "timeout_ms", 0);
    return ms > 0 ? rill__now_seconds() + (double)ms / 1000.0 : 0;
}

static void fail_wait(rill__kctx *ctx, wait_end e, const char *op, const queue *q)
{
    if (e == CANCELLED)
        rill__kctx_fail(ctx, RILL_CANCELLED, "%s operation was cancelled", op);
    else if (e == STEP_DEADLINE)
        rill__kctx_fail(ctx, RILL_DEADLINE_EXCEEDED,
                        "Timed out waiting for notification: the step's %lld ms deadline "
                        "passed: %sing %s '%s' (%lld elements)",
                        (long long)ctx->timeout_ms, op, q->kind, q->name, (long long)q->n);
    else
        rill__kctx_fail(ctx, RILL_DEADLINE_EXCEEDED, "%s on %s '%s' timed out after %lld ms", op,
                        q->kind, q->name, (long long)rill__attr_int(ctx->node, "timeout_ms", 0));
}

static void grow(queue *q)
{
    int64_t cap = q->cap ? q->cap * 2 : 16;
    rill_tensor **items = rill__calloc((size_t)(cap * q->nc), sizeof *items);
    RILL_CHECK_ALLOC(items);
    for (int64_t i = 0; i < q->n; i++) {
        int64_t at = q->shuffle ? i : (q->head + i) % q->cap;
        memcpy(items + i * q->nc, q->items + at * q->nc, (size_t)q->nc * sizeof *items);
    }
    rill__free(q->items);
    q->items = items;
    q->cap = cap;
    q->head = 0;
}

/* n elements of src from index from into dst from index at (strings one by one). */
static void copy_rows(rill_tensor *dst, int64_t at, const rill_tensor *src, int64_t from, int64_t n)
{
    if (src->dtype == RILL_STRING) {
        for (int64_t j = 0; j < n; j++) {
            size_t len = 0;
            const char *str = rill_tensor_get_string(src, from + j, &len);
            RILL_CHECK_ALLOC(rill_tensor_set_string(dst, at + j, str, len) == 0 ? dst : NULL);
        }
        return;
    }
    size_t sz = rill_dtype_size(src->dtype);
    memcpy((char *)rill_tensor_data(dst) + (size_t)at * sz,
           (const char *)rill_tensor_data(src) + (size_t)from * sz, (size_t)n * sz);
}

/* Element e of each component (row e of its first dim when many), copied into the queue. */
static void push(queue *q, rill_tensor *const *comps, bool many, int64_t e)
{
    if (q->n == q->cap) grow(q);
    int64_t at = q->shuffle ? q->n : (q->head + q->n) % q->cap;
    for (int c = 0; c < q->nc; c++) {
        const rill_tensor *v = comps[c];
        rill_shape el = many ? rill_shape_make(v->shape.rank - 1, v->shape.dims + 1) : v->shape;
        rill_tensor *t = rill_tensor_new_shape(v->dtype, &el);
        RILL_CHECK_ALLOC(t);
        copy_rows(t, 0, v, e * t->numel, t->numel);
        q->items[at * q->nc + c] = t;
    }
    q->n++;
}

/* Takes one element (its nc tensors into out). */
static void pop(queue *q, rill_tensor **out)
{
    int64_t at;
    if (q->shuffle) {
        at = (int64_t)(rill__rng_next(&q->rng) % (uint64_t)q->n);
    } else {
        at = q->head;
        q->head = (q->head + 1) % q->cap;
    }
    memcpy(out, q->items + at * q->nc, (size_t)q->nc * sizeof *out);
    if (q->shuffle && at != q->n - 1)
        memcpy(q->items + at * q->nc, q->items + (q->n - 1) * q->nc, (size_t)q->nc * sizeof *out);
    q->n--;
}

static const char *shape_text(const rill_shape *s, char *buf, size_t len)
{
    return rill_shape_str(s, buf, len);
}

/* The components of an enqueue checked against the queue: count, dtypes, shapes, and for many
 * one first dimension for all (*count). */
static bool check_components(rill__kctx *ctx, const queue *q, bool many, int64_t *count)
{
    int given = ctx->node->ninputs - 1;
    if (given != q->nc) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s '%s' holds %d components; the enqueue gives %d", q->kind, q->name,
                        q->nc, given);
        return false;
    }
    *count = 1;
    for (int c = 0; c < q->nc; c++) {
        const rill_tensor *v = ctx->inputs[c + 1];
        char a[96], b[96];
        if (v->dtype != q->types[c]) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Type mismatch in tuple component %d. Expected %s, got %s", c,
                            rill_dtype_name(q->types[c]), rill_dtype_name(v->dtype));
            return false;
        }
        rill_shape el = v->shape;
        if (many) {
            if (v->shape.rank < 1) {
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                                "Shape must be at least rank 1 but is rank 0 (component %d)", c);
                return false;
            }
            if (c == 0) *count = v->shape.dims[0];
            if (v->shape.dims[0] != *count) {
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                                "Shape mismatch in tuple component %d. Expected first dimension "
                                "%lld, got %lld",
                                c, (long long)*count, (long long)v->shape.dims[0]);
                return false;
            }
            el = rill_shape_make(v->shape.rank - 1, v->shape.dims + 1);
        }
        if (q->has_shapes && !rill_shape_equal(&el, &q->shapes[c])) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Shape mismatch in tuple component %d. Expected %s, got %s", c,
                            shape_text(&q->shapes[c], a, sizeof a), shape_text(&el, b, sizeof b));
            return false;
        }
    }
    return true;
}

static void enqueue(rill__kctx *ctx, bool many)
{
    queue *q = lookup(ctx);
    if (!q) return;
    int64_t count;
    if (!check_components(ctx, q, many, &count)) return;
    double deadline = op_deadline(ctx);
    pthread_mutex_lock(&q->mu);
    unsigned gen = q->cancel_gen;
    if (q->closed) {
        pthread_mutex_unlock(&q->mu);
        rill__kctx_fail(ctx, RILL_CANCELLED, "%s '%s' is closed.", q->kind, q->name);
        return;
    }
    for (int64_t i = 0; i < count; i++) {
        wait_end e = GO;
        while (q->capacity >= 0 && q->n >= q->capacity && e == GO && q->cancel_gen == gen)
            e = wait_slice(ctx, q, deadline);
        if (q->cancel_gen != gen) e = CANCELLED;
        if (e != GO) {
            pthread_mutex_unlock(&q->mu);
            fail_wait(ctx, e, "Enqueue", q);
            return;
        }
        push(q, ctx->inputs + 1, many, i);
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
}

static void enqueue_kernel(rill__kctx *ctx)
{
    enqueue(ctx, false);
}

static void enqueue_many_kernel(rill__kctx *ctx)
{
    enqueue(ctx, true);
}

/* Dequeues k elements (k < 0: one, unbatched); up_to: fewer once the queue is closed. */
static void dequeue(rill__kctx *ctx, int64_t k, bool up_to)
{
    queue *q = lookup(ctx);
    if (!q) return;
    bool batched = k >= 0;
    int64_t want = batched ? k : 1;
    if (batched && !q->has_shapes) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s's DequeueMany and DequeueUpTo require the components to have "
                        "specified shapes.",
                        q->kind);
        return;
    }
    if (ctx->node->noutputs != q->nc) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s '%s' holds %d components; the dequeue expects %d", q->kind, q->name,
                        q->nc, ctx->node->noutputs);
        return;
    }
    double deadline = op_deadline(ctx);
    pthread_mutex_lock(&q->mu);
    wait_end e = GO;
    for (;;) {
        int64_t keep = q->closed ? 0 : q->min_after;
        if (q->n >= want + keep) break;
        if (q->closed) {
            if (up_to && q->n > 0) {
                want = q->n;
                break;
            }
            int64_t size = q->n;
            pthread_mutex_unlock(&q->mu);
            rill__kctx_fail(ctx, RILL_OUT_OF_RANGE,
                            "%s '%s' is closed and has insufficient elements (requested %lld, "
                            "current size %lld)",
                            q->kind, q->name, (long long)want, (long long)size);
            return;
        }
        e = wait_slice(ctx, q, deadline);
        if (e != GO) break;
    }
    if (e != GO) {
        pthread_mutex_unlock(&q->mu);
        fail_wait(ctx, e, "Dequeue", q);
        return;
    }
    rill_tensor *el[MAXC];
    if (!batched) {
        pop(q, el);
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);
        for (int c = 0; c < q->nc; c++) rill__kctx_set_output(ctx, c, el[c]);
        return;
    }
    rill_tensor *out[MAXC];
    for (int c = 0; c < q->nc; c++) {
        int64_t d[RILL_MAX_DIMS];
        d[0] = want;
        for (int i = 0; i < q->shapes[c].rank; i++) d[i + 1] = q->shapes[c].dims[i];
        rill_shape s = rill_shape_make(q->shapes[c].rank + 1, d);
        out[c] = rill__kctx_alloc_output(ctx, c, q->types[c], &s);
        if (!out[c]) {
            pthread_mutex_unlock(&q->mu);
            return;
        }
    }
    for (int64_t i = 0; i < want; i++) {
        pop(q, el);
        for (int c = 0; c < q->nc; c++) {
            copy_rows(out[c], i * el[c]->numel, el[c], 0, el[c]->numel);
            rill_tensor_free(el[c]);
        }
    }
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static void dequeue_kernel(rill__kctx *ctx)
{
    dequeue(ctx, -1, false);
}

static bool batch_arg(rill__kctx *ctx, int64_t *k)
{
    const rill_tensor *n = ctx->inputs[1];
    *k = n->numel == 1 ? *(const int32_t *)rill_tensor_data(n) : -1;
    if (*k >= 0) return true;
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                    "Dequeue operation requested %lld elements: it must be a non-negative scalar",
                    (long long)*k);
    return false;
}

static void dequeue_many_kernel(rill__kctx *ctx)
{
    int64_t k;
    if (batch_arg(ctx, &k)) dequeue(ctx, k, false);
}

static void dequeue_up_to_kernel(rill__kctx *ctx)
{
    int64_t k;
    if (batch_arg(ctx, &k)) dequeue(ctx, k, true);
}

static void close_kernel(rill__kctx *ctx)
{
    queue *q = lookup(ctx);
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    if (rill__attr_bool(ctx->node, "cancel_pending_enqueues", false)) q->cancel_gen++;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static void size_kernel(rill__kctx *ctx)
{
    queue *q = lookup(ctx);
    if (!q) return;
    rill_shape sc = rill_shape_scalar();
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_INT32, &sc);
    if (!out) return;
    pthread_mutex_lock(&q->mu);
    *(int32_t *)rill_tensor_data(out) = (int32_t)q->n;
    pthread_mutex_unlock(&q->mu);
}

/* CountUpTo: the variable's value, incremented; OutOfRange once it reached limit. The new
 * value is a new tensor (a fetched old one may still be read). */
static void count_up_to_kernel(rill__kctx *ctx)
{
    rill__var *v = ctx->vars[0];
    int64_t limit = rill__attr_int(ctx->node, "limit", 0);
    pthread_mutex_lock(&v->mu);
    if (!v->value) {
        pthread_mutex_unlock(&v->mu);
        rill__kctx_fail(ctx, RILL_FAILED_PRECONDITION, "Attempting to use uninitialized value %s",
                        v->name);
        return;
    }
    bool i64 = v->value->dtype == RILL_INT64;
    int64_t before = i64 ? *(const int64_t *)rill_tensor_data(v->value)
                         : *(const int32_t *)rill_tensor_data(v->value);
    if (before >= limit) {
        pthread_mutex_unlock(&v->mu);
        rill__kctx_fail(ctx, RILL_OUT_OF_RANGE, "Reached limit of %lld", (long long)limit);
        return;
    }
    rill_shape sc = rill_shape_scalar();
    rill_tensor *next = rill_tensor_new_shape(v->value->dtype, &sc);
    RILL_CHECK_ALLOC(next);
    if (i64)
        *(int64_t *)rill_tensor_data(next) = before + 1;
    else
        *(int32_t *)rill_tensor_data(next) = (int32_t)(before + 1);
    rill_tensor *old = v->value;
    v->value = next;
    pthread_mutex_unlock(&v->mu);
    rill_tensor_free(old);
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, next->dtype, &sc);
    if (!out) return;
    if (i64)
        *(int64_t *)rill_tensor_data(out) = before;
    else
        *(int32_t *)rill_tensor_data(out) = (int32_t)before;
}

#define K(op_, fn_)                                                                                \
    {                                                                                              \
        .op = op_, .device_type = "CPU", .dtype = RILL_DT_INVALID, .fn = fn_                       \
    }

const rill__kernel_def rill__cpu_kernels_queue[] = {
    {.op = "FIFOQueueV2",
     .device_type = "CPU",
     .dtype = RILL_DT_INVALID,
     .fn = make_queue_kernel,
     .state_free = handle_state_free},
    {.op = "RandomShuffleQueueV2",
     .device_type = "CPU",
     .dtype = RILL_DT_INVALID,
     .fn = make_queue_kernel,
     .state_free = handle_state_free},
    K("QueueEnqueueV2", enqueue_kernel),
    K("QueueEnqueueManyV2", enqueue_many_kernel),
    K("QueueDequeueV2", dequeue_kernel),
    K("QueueDequeueManyV2", dequeue_many_kernel),
    K("QueueDequeueUpToV2", dequeue_up_to_kernel),
    K("QueueCloseV2", close_kernel),
    K("QueueSizeV2", size_kernel),
    K("CountUpTo", count_up_to_kernel),
    {0},
};
