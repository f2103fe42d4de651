/* cpu_data_flow.c - gradient accumulators and FIFO queues (TF's ConditionalAccumulator and
 * FIFOQueue), the parts SyncReplicasOptimizer is made of. See graph/ops_data_flow.c.
 *
 * Accumulator (reference §7.2): a gradient tagged with a local step older than the
 * accumulator's global step is dropped (and counted); a take waits for num_required fresh
 * gradients, returns their mean, and advances the accumulator's step. Waits are slices of
 * 50 ms that check the op's timeout, the step's deadline (RunOptions / operation timeout) and
 * the session's cancellation. */
#include "cpu_kernels.h"

#include <math.h>
#include <string.h>
#include <time.h>

#define DEFAULT_TIMEOUT_S 300.0

static const char *shared_name(const rill__kctx *ctx)
{
    const rill__attr *a = rill__node_attr(ctx->node, "shared_name");
    return a && a->v.s && a->v.s[0] ? a->v.s : ctx->node->name;
}

static double timeout_s(const rill__kctx *ctx)
{
    int64_t ms = rill__attr_int(ctx->node, "timeout_ms", 0);
    return ms > 0 ? (double)ms / 1000.0 : DEFAULT_TIMEOUT_S;
}

/* Waits on cv for up to 50 ms; false (ctx failed) when the deadline passed or the session was
 * cancelled. what names the resource for the message. */
static bool wait_slice(rill__kctx *ctx, pthread_cond_t *cv, pthread_mutex_t *mu, double deadline,
                       const char *what)
{
    if (rill__kctx_cancelled(ctx)) {
        rill__kctx_fail(ctx, RILL_CANCELLED, "%s was cancelled", what);
        return false;
    }
    double now = rill__now_seconds();
    if (ctx->deadline && now >= ctx->deadline) {
        rill__kctx_fail(ctx, RILL_DEADLINE_EXCEEDED,
                        "Timed out waiting for notification: the step's %lld ms deadline "
                        "passed: %s",
                        (long long)ctx->timeout_ms, what);
        return false;
    }
    if (now >= deadline) {
        rill__kctx_fail(ctx, RILL_DEADLINE_EXCEEDED, "%s timed out after %g s", what,
                        timeout_s(ctx));
        return false;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + 50L * 1000 * 1000;
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(cv, mu, &ts);
    return true;
}

/* ------------------------------------------------------------------ accumulators --- */

typedef struct accum {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *name;
    rill_dtype dtype;
    rill_shape shape; /* may be partly unknown until the first gradient */
    int64_t global_step;
    int counter;
    int want; /* what a waiting take needs (0: none waits): appliers wake it only then */
    int64_t dropped;
    double *sum; /* accumulated in double whatever the dtype */
    int64_t numel;
} accum;

typedef struct accum_args {
    const char *name;
    rill_dtype dtype;
    rill_shape shape;
} accum_args;

static void *accum_new(void *arg)
{
    accum_args *a = arg;
    accum *x = rill__calloc(1, sizeof *x);
    RILL_CHECK_ALLOC(x);
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    x->name = rill__strdup(a->name);
    x->dtype = a->dtype;
    x->shape = a->shape;
    x->numel = -1;
    return x;
}

static void accum_free(void *p)
{
    accum *x = p;
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    rill__free(x->name);
    rill__free(x->sum);
    rill__free(x);
}

static accum *get_accum(rill__kctx *ctx)
{
    const rill__attr *sh = rill__node_attr(ctx->node, "shape");
    accum_args a = {shared_name(ctx), rill__attr_type(ctx->node, "dtype", RILL_FLOAT),
                    sh ? sh->v.shape : rill_shape_unknown()};
    if (!ctx->rm) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "no resource manager for accumulator '%s'", a.name);
        return NULL;
    }
    accum *x = rill__resource_lookup(ctx->rm, "accumulator", a.name, accum_new, &a, accum_free);
    if (x && x->dtype != a.dtype) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "accumulator '%s' holds %s gradients, this op uses %s", a.name,
                        rill_dtype_name(x->dtype), rill_dtype_name(a.dtype));
        return NULL;
    }
    return x;
}

static double elem(const rill_tensor *t, int64_t i)
{
    const void *p = rill_tensor_data(t);
    switch (t->dtype) {
    case RILL_FLOAT: return ((const float *)p)[i];
    case RILL_DOUBLE: return ((const double *)p)[i];
    case RILL_HALF: return rill_half_to_float(((const rill_half *)p)[i]);
    default: return 0;
    }
}

static bool shape_compatible(const rill_shape *want, const rill_tensor *g)
{
    if (want->rank < 0) return true;
    if (want->rank != g->shape.rank) return false;
    for (int d = 0; d < want->rank; d++)
        if (want->dims[d] >= 0 && want->dims[d] != g->shape.dims[d]) return false;
    return true;
}

static void apply_grad_kernel(rill__kctx *ctx)
{
    accum *x = get_accum(ctx);
    if (!x) return;
    const rill_tensor *ls = ctx->inputs[0], *g = ctx->inputs[1];
    if (g->dtype != RILL_FLOAT && g->dtype != RILL_DOUBLE && g->dtype != RILL_HALF) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "accumulator '%s': %s gradients are not supported",
                        x->name, rill_dtype_name(g->dtype));
        return;
    }
    int64_t local_step = *(const int64_t *)rill_tensor_data(ls);
    int32_t accepted = 0;
    pthread_mutex_lock(&x->mu);
    if (local_step >= x->global_step) {
        if (!shape_compatible(&x->shape, g) || (x->numel >= 0 && x->numel != g->numel)) {
            char a[96], b[96];
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Shape mismatch: expected shape %s, got %s for accumulator '%s'",
                            rill_shape_str(&x->shape, a, sizeof a),
                            rill_shape_str(&g->shape, b, sizeof b), x->name);
            pthread_mutex_unlock(&x->mu);
            return;
        }
        if (x->numel < 0) {
            x->shape = g->shape;
            x->numel = g->numel;
            x->sum = rill__calloc((size_t)(g->numel ? g->numel : 1), sizeof *x->sum);
            RILL_CHECK_ALLOC(x->sum);
        }
        if (x->counter == 0)
            for (int64_t i = 0; i < g->numel; i++) x->sum[i] = elem(g, i);
        else
            for (int64_t i = 0; i < g->numel; i++) x->sum[i] += elem(g, i);
        x->counter++;
        accepted = 1;
        if (x->want && x->counter >= x->want) pthread_cond_broadcast(&x->cv);
    } else {
        x->dropped++;
    }
    pthread_mutex_unlock(&x->mu);
    rill_shape sc = rill_shape_scalar();
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_INT32, &sc);
    if (out) *(int32_t *)rill_tensor_data(out) = accepted;
}

static void take_grad_kernel(rill__kctx *ctx)
{
    accum *x = get_accum(ctx);
    if (!x) return;
    int32_t need = *(const int32_t *)rill_tensor_data(ctx->inputs[0]);
    if (need <= 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Argument num_required must be positive, but was %d", (int)need);
        return;
    }
    char what[300];
    snprintf(what, sizeof what, "Taking %d gradients from accumulator '%s'", (int)need, x->name);
    double deadline = rill__now_seconds() + timeout_s(ctx);
    pthread_mutex_lock(&x->mu);
    while (x->counter < need) {
        x->want = need;
        bool ok = wait_slice(ctx, &x->cv, &x->mu, deadline, what);
        x->want = 0;
        if (!ok) {
            pthread_mutex_unlock(&x->mu);
            return;
        }
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (out) {
        void *p = rill_tensor_data(out);
        for (int64_t i = 0; i < x->numel; i++) {
            double v = x->sum[i] / x->counter;
            if (x->dtype == RILL_FLOAT) ((float *)p)[i] = (float)v;
            else if (x->dtype == RILL_DOUBLE) ((double *)p)[i] = v;
            else ((rill_half *)p)[i] = rill_half_from_float((float)v);
        }
        x->counter = 0;
        x->global_step++;
    }
    pthread_mutex_unlock(&x->mu);
}

static void set_global_step_kernel(rill__kctx *ctx)
{
    accum *x = get_accum(ctx);
    if (!x) return;
    int64_t step = *(const int64_t *)rill_tensor_data(ctx->inputs[0]);
    pthread_mutex_lock(&x->mu);
    if (step < x->global_step)
        rill__log(RILL_LOG_WARNING,
                  "Attempt to set current_global_step_ to smaller value: current_global_step_ = "
                  "%lld >= %lld = new_global_step (accumulator '%s')",
                  (long long)x->global_step, (long long)step, x->name);
    x->global_step = step;
    pthread_mutex_unlock(&x->mu);
}

static void accum_count_kernel(rill__kctx *ctx)
{
    accum *x = get_accum(ctx);
    if (!x) return;
    bool dropped = strcmp(ctx->node->op->name, "AccumulatorNumDropped") == 0;
    rill_shape sc = rill_shape_scalar();
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, dropped ? RILL_INT64 : RILL_INT32, &sc);
    if (!out) return;
    pthread_mutex_lock(&x->mu);
    if (dropped) *(int64_t *)rill_tensor_data(out) = x->dropped;
    else *(int32_t *)rill_tensor_data(out) = x->counter;
    pthread_mutex_unlock(&x->mu);
}

/* ------------------------------------------------------------------------ queues --- */

typedef struct fifo {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *name;
    rill_dtype dtype;
    int64_t capacity; /* < 0: unbounded */
    rill_tensor **items;
    int64_t head, n, cap;
    /* Dequeuers are served in arrival order (as TF's queues): without it, a fast worker that
     * asks again at once can take every token of a step and starve the others. */
    struct waiter *first, *last;
} fifo;

typedef struct waiter {
    struct waiter *prev, *next;
} waiter;

static void waiter_remove(fifo *q, waiter *w)
{
    if (w->prev) w->prev->next = w->next;
    else q->first = w->next;
    if (w->next) w->next->prev = w->prev;
    else q->last = w->prev;
}

typedef struct fifo_args {
    const char *name;
    rill_dtype dtype;
    int64_t capacity;
} fifo_args;

static void *fifo_new(void *arg)
{
    fifo_args *a = arg;
    fifo *q = rill__calloc(1, sizeof *q);
    RILL_CHECK_ALLOC(q);
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->name = rill__strdup(a->name);
    q->dtype = a->dtype;
    q->capacity = a->capacity;
    return q;
}

static void fifo_free(void *p)
{
    fifo *q = p;
    for (int64_t i = 0; i < q->n; i++) rill_tensor_free(q->items[(q->head + i) % q->cap]);
    rill__free(q->items);
    rill__free(q->name);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    rill__free(q);
}

static fifo *get_fifo(rill__kctx *ctx)
{
    fifo_args a = {shared_name(ctx), rill__attr_type(ctx->node, "dtype", RILL_INT64),
                   rill__attr_int(ctx->node, "capacity", -1)};
    if (!ctx->rm) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "no resource manager for queue '%s'", a.name);
        return NULL;
    }
    fifo *q = rill__resource_lookup(ctx->rm, "queue", a.name, fifo_new, &a, fifo_free);
    if (q && q->dtype != a.dtype) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "queue '%s' holds %s, this op uses %s",
                        a.name, rill_dtype_name(q->dtype), rill_dtype_name(a.dtype));
        return NULL;
    }
    return q;
}

static void fifo_push(fifo *q, rill_tensor *t)
{
    if (q->n == q->cap) {
        int64_t cap = q->cap ? q->cap * 2 : 16;
        rill_tensor **items = rill__calloc((size_t)cap, sizeof *items);
        RILL_CHECK_ALLOC(items);
        for (int64_t i = 0; i < q->n; i++) items[i] = q->items[(q->head + i) % q->cap];
        rill__free(q->items);
        q->items = items;
        q->cap = cap;
        q->head = 0;
    }
    q->items[(q->head + q->n) % q->cap] = t;
    q->n++;
}

static void enqueue_many_kernel(rill__kctx *ctx)
{
    fifo *q = get_fifo(ctx);
    if (!q) return;
    const rill_tensor *v = ctx->inputs[0];
    if (v->shape.rank < 1 || v->dtype == RILL_STRING) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "enqueue_many to '%s' needs a numeric tensor of rank >= 1", q->name);
        return;
    }
    int64_t count = v->shape.dims[0];
    int64_t per = count ? v->numel / count : 0;
    size_t bytes = (size_t)per * rill_dtype_size(v->dtype);
    rill_shape el = rill_shape_make(v->shape.rank - 1, v->shape.dims + 1);
    char what[300];
    snprintf(what, sizeof what, "Enqueueing into the full queue '%s'", q->name);
    double deadline = rill__now_seconds() + timeout_s(ctx);
    pthread_mutex_lock(&q->mu);
    for (int64_t i = 0; i < count; i++) {
        while (q->capacity >= 0 && q->n >= q->capacity)
            if (!wait_slice(ctx, &q->cv, &q->mu, deadline, what)) {
                pthread_mutex_unlock(&q->mu);
                return;
            }
        rill_tensor *t = rill_tensor_new_shape(v->dtype, &el);
        RILL_CHECK_ALLOC(t);
        memcpy(rill_tensor_data(t), (const char *)rill_tensor_data(v) + (size_t)i * bytes,
               bytes);
        fifo_push(q, t);
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
}

static void dequeue_kernel(rill__kctx *ctx)
{
    fifo *q = get_fifo(ctx);
    if (!q) return;
    char what[300];
    snprintf(what, sizeof what, "Dequeueing from queue '%s' (empty: is the chief's queue runner "
                                "running?)",
             q->name);
    double deadline = rill__now_seconds() + timeout_s(ctx);
    pthread_mutex_lock(&q->mu);
    waiter me = {q->last, NULL};
    if (q->last) q->last->next = &me;
    else q->first = &me;
    q->last = &me;
    while (q->n == 0 || q->first != &me)
        if (!wait_slice(ctx, &q->cv, &q->mu, deadline, what)) {
            waiter_remove(q, &me);
            pthread_cond_broadcast(&q->cv); /* the next in line may be served now */
            pthread_mutex_unlock(&q->mu);
            return;
        }
    waiter_remove(q, &me);
    rill_tensor *t = q->items[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    rill__kctx_set_output(ctx, 0, t);
}

static void queue_size_kernel(rill__kctx *ctx)
{
    fifo *q = get_fifo(ctx);
    if (!q) return;
    rill_shape sc = rill_shape_scalar();
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_INT32, &sc);
    if (!out) return;
    pthread_mutex_lock(&q->mu);
    *(int32_t *)rill_tensor_data(out) = (int32_t)q->n;
    pthread_mutex_unlock(&q->mu);
}

#define K(op_, fn_)                                                                                \
    {                                                                                              \
        .op = op_, .device_type = "CPU", .dtype = RILL_DT_INVALID, .fn = fn_                       \
    }

const rill__kernel_def rill__cpu_kernels_data_flow[] = {
    K("AccumulatorApplyGradient", apply_grad_kernel),
    K("AccumulatorTakeGradient", take_grad_kernel),
    K("AccumulatorSetGlobalStep", set_global_step_kernel),
    K("AccumulatorNumAccumulated", accum_count_kernel),
    K("AccumulatorNumDropped", accum_count_kernel),
    K("QueueEnqueueMany", enqueue_many_kernel),
    K("QueueDequeue", dequeue_kernel),
    K("QueueSize", queue_size_kernel),
    {0},
};
