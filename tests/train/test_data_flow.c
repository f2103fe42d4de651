/* test_data_flow.c - gradient accumulators, FIFO queues and SyncReplicasOptimizer in a local
 * session (src/kernels/cpu/cpu_data_flow.c, src/graph/ops_data_flow.c, src/train/sync_replicas.c).
 *
 *   - accumulators (reference §7.2): the mean of the fresh gradients, take advancing the step,
 *     stale gradients dropped (apply returns 0) and counted, set_global_step up and down,
 *     num_accumulated, a shape mismatch, num_required <= 0, a take that times out (naming the
 *     accumulator, keeping what it holds), a take blocked in one thread and released by
 *     gradients applied from another;
 *   - FIFO queues: order of enqueue_many slices (an int64 vector and a float matrix), queue_size,
 *     a bounded queue (an enqueue into a full queue waits: released by a dequeue, ended by a
 *     timeout or by rill_session_cancel), a dequeue blocked in one thread ended by
 *     rill_session_cancel from another (CANCELLED) after which the session works on, and one
 *     ended at the step's deadline (rill_run_options, the operation timeout);
 *   - SyncReplicasOptimizer: TF's graph-building errors and texts, and synchronous training in
 *     one local session with the chief's queue runner: exact global steps and variable values,
 *     without and with initial tokens, and a queue runner stopped while blocked in its take.
 *
 * Threads synchronise on the resources themselves; the only waits are bounded polls for a
 * thread to finish, so a broken wake-up or cancel fails a check instead of hanging the test.
 */
#include "../test.h"

#include <rill/rill.h>

#include "graph/graph_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* --- helpers --- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static bool graph_ok(rill_graph *g)
{
    if (CHECK(rill_graph_ok(g))) return true;
    fprintf(stderr, "  build failed: %s\n", rill_status_message(rill_graph_status(g)));
    return false;
}

static rill_tensor *t_int64(int64_t v)
{
    return rill_tensor_scalar_int64(v);
}

static rill_tensor *t_floats(const float *v, int64_t n)
{
    return rill_tensor_from_data(RILL_FLOAT, &n, 1, v);
}

/* Runs one fetch with feeds; NULL (s set) on failure. */
static rill_tensor *run1(rill_session *sess, const rill_output *feeds, rill_tensor *const *vals,
                         int nfeeds, rill_output fetch, rill_status *s)
{
    rill_tensor *out = NULL;
    if (rill_session_run(sess, feeds, vals, nfeeds, &fetch, &out, 1, NULL, 0, s) != RILL_OK)
        return NULL;
    return out;
}

/* The scalar value of fetch, or -12345 (a failed check) on failure. */
static double fetch_scalar(rill_session *sess, rill_output fetch, rill_status *s)
{
    rill_tensor *t = run1(sess, NULL, NULL, 0, fetch, s);
    if (!CHECK(t != NULL)) {
        fprintf(stderr, "  run failed: %s\n", rill_status_message(s));
        return -12345;
    }
    double v = rill_tensor_get_double(t, 0);
    rill_tensor_free(t);
    return v;
}

static bool run_targets(rill_session *sess, rill_node *n, rill_status *s)
{
    if (CHECK_EQ_INT(rill_session_run_targets(sess, &n, 1, s), RILL_OK)) return true;
    fprintf(stderr, "  run of %s failed: %s\n", n ? rill_node_name(n) : "(null)",
            rill_status_message(s));
    return false;
}

/* A thread running one fetch (or target) in a session; done is set when the run returned. */
typedef struct bg_run {
    rill_session *sess;
    rill_output fetch; /* or */
    rill_node *target;
    rill_output feed;
    rill_tensor *feed_value;
    atomic_bool started, done;
    rill_code code;
    rill_status *s;
    rill_tensor *out;
    pthread_t thread;
} bg_run;

static void *bg_main(void *arg)
{
    bg_run *b = arg;
    atomic_store(&b->started, true);
    b->code = rill_session_run(
        b->sess, b->feed.node ? &b->feed : NULL, b->feed.node ? &b->feed_value : NULL,
        b->feed.node ? 1 : 0, b->fetch.node ? &b->fetch : NULL, b->fetch.node ? &b->out : NULL,
        b->fetch.node ? 1 : 0, b->target ? &b->target : NULL, b->target ? 1 : 0, b->s);
    atomic_store(&b->done, true);
    return NULL;
}

static bool bg_start(bg_run *b)
{
    b->s = rill_status_new();
    if (!CHECK(pthread_create(&b->thread, NULL, bg_main, b) == 0)) {
        rill_status_free(b->s);
        return false;
    }
    while (!atomic_load(&b->started)) sleep_ms(1);
    return true;
}

/* Waits up to ms for the thread to finish; true when it did. */
static bool bg_wait(bg_run *b, int ms)
{
    for (int waited = 0; !atomic_load(&b->done) && waited < ms; waited += 5) sleep_ms(5);
    return atomic_load(&b->done);
}

static void bg_join(bg_run *b)
{
    pthread_join(b->thread, NULL);
    rill_tensor_free(b->out);
    rill_tensor_free(b->feed_value);
    rill_status_free(b->s);
}

/* --- accumulators --- */

typedef struct accum_graph {
    rill_graph *g;
    rill_output ls, grad, any_grad, nreq, new_step;
    rill_output apply, apply_any, take, take_short, num_acc, num_dropped;
    rill_node *set_step;
} accum_graph;

static void build_accum(accum_graph *a, const char *name)
{
    rill_graph *g = a->g = rill_graph_new();
    rill_shape v2 = rill_shape_vector(2);
    a->ls = rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "local_step");
    a->grad = rill_placeholder(g, RILL_FLOAT, v2, "grad");
    a->any_grad = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "any_grad");
    a->nreq = rill_placeholder(g, RILL_INT32, rill_shape_scalar(), "num_required");
    a->new_step = rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "new_step");
    /* The count ops touch the accumulator first: it is created with shape [2]. */
    a->num_acc = rill_accumulator_num_accumulated(g, name, RILL_FLOAT, v2, "num_acc");
    a->num_dropped = rill_accumulator_num_dropped(g, name, RILL_FLOAT, v2, "num_dropped");
    a->apply = rill_accumulator_apply_grad(g, name, a->ls, a->grad, "apply");
    a->apply_any = rill_accumulator_apply_grad(g, name, a->ls, a->any_grad, "apply_any");
    a->take = rill_accumulator_take_grad(g, name, RILL_FLOAT, v2, a->nreq, 30000, "take");
    a->take_short = rill_accumulator_take_grad(g, name, RILL_FLOAT, v2, a->nreq, 150, "take_short");
    a->set_step =
        rill_accumulator_set_global_step(g, name, RILL_FLOAT, v2, a->new_step, "set_step");
}

/* Applies {g0, g1} tagged with local step ls: 1 accepted, 0 dropped, -1 failed (s set). */
static int apply(rill_session *sess, const accum_graph *a, int64_t ls, float g0, float g1,
                 rill_status *s)
{
    float gv[2] = {g0, g1};
    rill_output feeds[2] = {a->ls, a->grad};
    rill_tensor *vals[2] = {t_int64(ls), t_floats(gv, 2)};
    rill_tensor *out = run1(sess, feeds, vals, 2, a->apply, s);
    rill_tensor_free(vals[0]);
    rill_tensor_free(vals[1]);
    if (!out) return -1;
    CHECK_EQ_INT(rill_tensor_dtype(out), RILL_INT32);
    int r = *(int32_t *)rill_tensor_data(out);
    rill_tensor_free(out);
    return r;
}

static rill_tensor *take(rill_session *sess, const accum_graph *a, rill_output op, int32_t n,
                         rill_status *s)
{
    rill_tensor *nr = rill_tensor_scalar_int32(n);
    rill_tensor *out = run1(sess, &a->nreq, &nr, 1, op, s);
    rill_tensor_free(nr);
    return out;
}

static bool set_step(rill_session *sess, const accum_graph *a, int64_t step, rill_status *s)
{
    rill_tensor *v = t_int64(step);
    rill_code c = rill_session_run(sess, &a->new_step, &v, 1, NULL, NULL, 0,
                                   (rill_node *const *)&a->set_step, 1, s);
    rill_tensor_free(v);
    return CHECK_EQ_INT(c, RILL_OK);
}

static void check_take(rill_tensor *t, float e0, float e1, rill_status *s)
{
    if (!CHECK(t != NULL)) {
        fprintf(stderr, "  take failed: %s\n", rill_status_message(s));
        return;
    }
    CHECK_EQ_INT(rill_tensor_dtype(t), RILL_FLOAT);
    CHECK_EQ_INT(rill_tensor_rank(t), 1);
    CHECK_EQ_INT(rill_tensor_dim(t, 0), 2);
    CHECK_NEAR(rill_tensor_get_double(t, 0), e0, 1e-6);
    CHECK_NEAR(rill_tensor_get_double(t, 1), e1, 1e-6);
    rill_tensor_free(t);
}

static void test_accumulator_semantics(void)
{
    accum_graph a;
    build_accum(&a, "acc");
    rill_status *s = rill_status_new();
    rill_session *sess = NULL;
    if (!graph_ok(a.g)) goto out;
    sess = rill_session_new(a.g, NULL, s);
    if (!CHECK(sess != NULL)) goto out;

    CHECK_EQ_INT(fetch_scalar(sess, a.num_acc, s), 0);
    CHECK_EQ_INT(fetch_scalar(sess, a.num_dropped, s), 0);
    /* Step 0: three fresh gradients; the take returns their mean. */
    CHECK_EQ_INT(apply(sess, &a, 0, 1, 10, s), 1);
    CHECK_EQ_INT(apply(sess, &a, 0, 2, 20, s), 1);
    CHECK_EQ_INT(apply(sess, &a, 5, 6, -30, s), 1); /* newer than the accumulator: fresh */
    CHECK_EQ_INT(fetch_scalar(sess, a.num_acc, s), 3);
    check_take(take(sess, &a, a.take, 2, s), 3, 0, s); /* (1+2+6)/3, (10+20-30)/3 */
    CHECK_EQ_INT(fetch_scalar(sess, a.num_acc, s), 0);

    /* The take advanced the step to 1: a gradient of local step 0 is stale. */
    CHECK_EQ_INT(apply(sess, &a, 0, 100, 100, s), 0);
    CHECK_EQ_INT(fetch_scalar(sess, a.num_acc, s), 0);
    CHECK_EQ_INT(fetch_scalar(sess, a.num_dropped, s), 1);
    CHECK_EQ_INT(apply(sess, &a, 1, 4, 8, s), 1);
    CHECK_EQ_INT(fetch_scalar(sess, a.num_acc, s), 1);

    /* set_global_step: up to 5 drops a step-3 gradient; back down to 2 accepts it. The count
     * of what is accumulated survives both. */
    if (set_step(sess, &a, 5, s)) {
        CHECK_EQ_INT(apply(sess, &a, 3, 50, 50, s), 0);
        CHECK_EQ_INT(fetch_scalar(sess, a.num_dropped, s), 2);
        CHECK_EQ_INT(fetch_scalar(sess, a.num_acc, s), 1);
    }
    if (set_step(sess, &a, 2, s)) {
        CHECK_EQ_INT(apply(sess, &a, 3, 2, 4, s), 1);
        CHECK_EQ_INT(apply(sess, &a, 1, 9, 9, s), 0); /* still older than 2 */
        CHECK_EQ_INT(fetch_scalar(sess, a.num_acc, s), 2);
        CHECK_EQ_INT(fetch_scalar(sess, a.num_dropped, s), 3);
        /* The accepted step-1 gradient (before the step moved) and the step-3 one. */
        check_take(take(sess, &a, a.take, 2, s), 3, 6, s);
        /* The take moved the step from 2 to 3: step 2 is now stale, step 3 fresh. */
        CHECK_EQ_INT(apply(sess, &a, 2, 1, 1, s), 0);
        CHECK_EQ_INT(apply(sess, &a, 3, 1, 1, s), 1);
        check_take(take(sess, &a, a.take, 1, s), 1, 1, s);
    }

    /* A gradient of another shape is INVALID_ARGUMENT and changes nothing. */
    {
        float gv[3] = {1, 2, 3};
        rill_output feeds[2] = {a.ls, a.any_grad};
        rill_tensor *vals[2] = {t_int64(100), t_floats(gv, 3)};
        rill_tensor *out = run1(sess, feeds, vals, 2, a.apply_any, s);
        CHECK(out == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), "Shape mismatch");
        CHECK_STR_CONTAINS(rill_status_message(s), "acc");
        rill_tensor_free(out);
        rill_tensor_free(vals[0]);
        rill_tensor_free(vals[1]);
        CHECK_EQ_INT(fetch_scalar(sess, a.num_acc, s), 0);
    }

    /* num_required must be positive. */
    rill_tensor *t = take(sess, &a, a.take, 0, s);
    CHECK(t == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "Argument num_required must be positive, but was 0");
    rill_tensor_free(t);
    t = take(sess, &a, a.take, -3, s);
    CHECK(t == NULL);
    CHECK_STR_CONTAINS(rill_status_message(s), "but was -3");
    rill_tensor_free(t);

    /* Too few gradients: the short take runs out of time, naming the accumulator, and what was
     * accumulated stays for a later take. */
    CHECK_EQ_INT(apply(sess, &a, 4, 2, 2, s), 1);
    t = take(sess, &a, a.take_short, 2, s);
    CHECK(t == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_DEADLINE_EXCEEDED);
    CHECK_STR_CONTAINS(rill_status_message(s), "accumulator 'acc'");
    CHECK_STR_CONTAINS(rill_status_message(s), "timed out after 0.15 s");
    CHECK_STR_CONTAINS(rill_status_message(s), "take_short"); /* the node */
    rill_tensor_free(t);
    CHECK_EQ_INT(fetch_scalar(sess, a.num_acc, s), 1);
    CHECK_EQ_INT(apply(sess, &a, 4, 4, 0, s), 1);
    check_take(take(sess, &a, a.take_short, 2, s), 3, 1, s);

out:
    rill_session_free(sess);
    rill_graph_free(a.g);
    rill_status_free(s);
}

/* Two sessions on one graph have separate resource managers: separate accumulators. Half and
 * double gradients are averaged in their own dtype. */
static void test_accumulator_dtypes(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output ls = rill_placeholder(g, RILL_INT64, rill_shape_scalar(), "ls");
    rill_output nr = rill_const_scalar(g, RILL_INT32, 2, "two");
    rill_output gd = rill_placeholder(g, RILL_DOUBLE, rill_shape_scalar(), "gd");
    rill_output gh = rill_placeholder(g, RILL_HALF, rill_shape_scalar(), "gh");
    rill_output ad = rill_accumulator_apply_grad(g, "accd", ls, gd, NULL);
    rill_output ah = rill_accumulator_apply_grad(g, "acch", ls, gh, NULL);
    rill_output td =
        rill_accumulator_take_grad(g, "accd", RILL_DOUBLE, rill_shape_scalar(), nr, 10000, NULL);
    rill_output th =
        rill_accumulator_take_grad(g, "acch", RILL_HALF, rill_shape_scalar(), nr, 10000, NULL);
    /* A take of another dtype than the accumulator holds. */
    rill_output tf = rill_accumulator_take_grad(g, "accd", RILL_FLOAT, rill_shape_scalar(), nr, 100,
                                                "wrong_dtype");
    rill_session *sess = NULL, *other = NULL;
    if (!graph_ok(g)) goto out;
    sess = rill_session_new(g, NULL, s);
    other = rill_session_new(g, NULL, s);
    if (!CHECK(sess && other)) goto out;
    const double dv[2] = {0.25, 1e-3};
    const float hv[2] = {1.5f, -0.5f};
    for (int i = 0; i < 2; i++) {
        rill_output f[2] = {ls, gd};
        rill_tensor *v[2] = {t_int64(0), rill_tensor_scalar_double(dv[i])};
        rill_tensor *o = run1(sess, f, v, 2, ad, s);
        CHECK(o != NULL);
        rill_tensor_free(o);
        rill_tensor_free(v[1]);
        rill_half h = rill_half_from_float(hv[i]);
        v[1] = rill_tensor_from_data(RILL_HALF, NULL, 0, &h);
        f[1] = gh;
        o = run1(sess, f, v, 2, ah, s);
        CHECK(o != NULL);
        rill_tensor_free(o);
        rill_tensor_free(v[0]);
        rill_tensor_free(v[1]);
    }
    rill_tensor *o = run1(sess, NULL, NULL, 0, tf, s);
    CHECK(o == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "accd");
    rill_tensor_free(o);
    o = run1(sess, NULL, NULL, 0, td, s);
    if (CHECK(o != NULL)) {
        CHECK_EQ_INT(rill_tensor_dtype(o), RILL_DOUBLE);
        CHECK(rill_tensor_get_double(o, 0) == (0.25 + 1e-3) / 2);
    }
    rill_tensor_free(o);
    o = run1(sess, NULL, NULL, 0, th, s);
    if (CHECK(o != NULL)) {
        CHECK_EQ_INT(rill_tensor_dtype(o), RILL_HALF);
        CHECK_NEAR(rill_tensor_get_double(o, 0), 0.5, 1e-3);
    }
    rill_tensor_free(o);
    /* The other session's accumulator "accd" is empty. */
    rill_output short_take =
        rill_accumulator_take_grad(g, "accd", RILL_DOUBLE, rill_shape_scalar(), nr, 100, "short");
    o = run1(other, NULL, NULL, 0, short_take, s);
    CHECK(o == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_DEADLINE_EXCEEDED);
    rill_tensor_free(o);
out:
    rill_session_free(sess);
    rill_session_free(other);
    rill_graph_free(g);
    rill_status_free(s);
}

/* A take blocked in one thread is released by gradients applied from another thread. */
static void test_take_released_by_apply(void)
{
    accum_graph a;
    build_accum(&a, "acc_threads");
    rill_status *s = rill_status_new();
    rill_session *sess = NULL;
    if (!graph_ok(a.g)) goto out;
    sess = rill_session_new(a.g, NULL, s);
    if (!CHECK(sess != NULL)) goto out;
    bg_run b = {
        .sess = sess, .fetch = a.take, .feed = a.nreq, .feed_value = rill_tensor_scalar_int32(2)};
    if (!bg_start(&b)) goto out;
    /* Without two gradients the take cannot finish, whenever it started. */
    sleep_ms(30);
    CHECK(!atomic_load(&b.done));
    CHECK_EQ_INT(apply(sess, &a, 0, 1, 2, s), 1);
    sleep_ms(30);
    CHECK(!atomic_load(&b.done));
    CHECK_EQ_INT(apply(sess, &a, 0, 3, 6, s), 1);
    /* Not woken: the take's own 30 s timeout ends it and the checks below fail. */
    CHECK(bg_wait(&b, 20000));
    pthread_join(b.thread, NULL);
    if (CHECK_EQ_INT(b.code, RILL_OK)) {
        check_take(b.out, 2, 4, b.s); /* frees it */
        b.out = NULL;
    } else {
        fprintf(stderr, "  take failed: %s\n", rill_status_message(b.s));
    }
    CHECK_EQ_INT(fetch_scalar(sess, a.num_acc, s), 0);
    rill_tensor_free(b.out);
    rill_tensor_free(b.feed_value);
    rill_status_free(b.s);
out:
    rill_session_free(sess);
    rill_graph_free(a.g);
    rill_status_free(s);
}

/* --- queues --- */

static void test_queue_order(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output iv = rill_placeholder(g, RILL_INT64, rill_shape_vector(4), "ints");
    rill_node *enq_i = rill_queue_enqueue_many(g, "qi", -1, iv, 0, "enq_i");
    rill_output deq_i = rill_queue_dequeue(g, "qi", RILL_INT64, rill_shape_scalar(), 1000, "deq_i");
    rill_output size_i = rill_queue_size(g, "qi", RILL_INT64, "size_i");
    const float mv[6] = {1, 2, 3, 4, 5, 6};
    rill_output m = rill_const_floats(g, mv, (int64_t[]){3, 2}, 2, "m");
    rill_node *enq_f = rill_queue_enqueue_many(g, "qf", -1, m, 0, "enq_f");
    rill_output deq_f =
        rill_queue_dequeue(g, "qf", RILL_FLOAT, rill_shape_vector(2), 1000, "deq_f");
    rill_output size_f = rill_queue_size(g, "qf", RILL_FLOAT, "size_f");
    rill_output deq_short =
        rill_queue_dequeue(g, "qi", RILL_INT64, rill_shape_scalar(), 100, "deq_short");
    rill_session *sess = NULL;
    if (!graph_ok(g)) goto out;
    sess = rill_session_new(g, NULL, s);
    if (!CHECK(sess != NULL)) goto out;

    CHECK_EQ_INT(fetch_scalar(sess, size_i, s), 0);
    const int64_t a[4] = {10, 20, 30, 40}, b[4] = {-1, -2, -3, -4};
    rill_tensor *ta = rill_tensor_from_data(RILL_INT64, (int64_t[]){4}, 1, a);
    rill_tensor *tb = rill_tensor_from_data(RILL_INT64, (int64_t[]){4}, 1, b);
    CHECK_EQ_INT(rill_session_run(sess, &iv, &ta, 1, NULL, NULL, 0, &enq_i, 1, s), RILL_OK);
    CHECK_EQ_INT(fetch_scalar(sess, size_i, s), 4);
    CHECK_EQ_INT(rill_session_run(sess, &iv, &tb, 1, NULL, NULL, 0, &enq_i, 1, s), RILL_OK);
    CHECK_EQ_INT(fetch_scalar(sess, size_i, s), 8);
    rill_tensor_free(ta);
    rill_tensor_free(tb);
    for (int i = 0; i < 8; i++) {
        rill_tensor *t = run1(sess, NULL, NULL, 0, deq_i, s);
        if (!CHECK(t != NULL)) break;
        CHECK_EQ_INT(rill_tensor_dtype(t), RILL_INT64);
        CHECK_EQ_INT(rill_tensor_rank(t), 0);
        CHECK_EQ_INT(*(int64_t *)rill_tensor_data(t), i < 4 ? a[i] : b[i - 4]);
        rill_tensor_free(t);
        CHECK_EQ_INT(fetch_scalar(sess, size_i, s), 7 - i);
    }
    /* Empty: a dequeue with a short timeout says which queue. */
    rill_tensor *t = run1(sess, NULL, NULL, 0, deq_short, s);
    CHECK(t == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_DEADLINE_EXCEEDED);
    CHECK_STR_CONTAINS(rill_status_message(s), "queue 'qi'");
    rill_tensor_free(t);

    /* A [3,2] matrix enqueues its three rows. */
    CHECK_EQ_INT(rill_session_run_targets(sess, &enq_f, 1, s), RILL_OK);
    CHECK_EQ_INT(fetch_scalar(sess, size_f, s), 3);
    for (int i = 0; i < 3; i++) {
        t = run1(sess, NULL, NULL, 0, deq_f, s);
        if (!CHECK(t != NULL)) break;
        CHECK_EQ_INT(rill_tensor_dtype(t), RILL_FLOAT);
        CHECK_EQ_INT(rill_tensor_rank(t), 1);
        CHECK_EQ_INT(rill_tensor_dim(t, 0), 2);
        CHECK(rill_tensor_get_double(t, 0) == mv[2 * i]);
        CHECK(rill_tensor_get_double(t, 1) == mv[2 * i + 1]);
        rill_tensor_free(t);
    }
    CHECK_EQ_INT(fetch_scalar(sess, size_f, s), 0);
    /* The int64 queue is separate and empty. */
    CHECK_EQ_INT(fetch_scalar(sess, size_i, s), 0);
out:
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

static void test_bounded_queue(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output two = rill_placeholder(g, RILL_INT64, rill_shape_vector(-1), "values");
    rill_node *enq = rill_queue_enqueue_many(g, "qb", 2, two, 0, "enq");
    rill_output deq = rill_queue_dequeue(g, "qb", RILL_INT64, rill_shape_scalar(), 1000, "deq");
    rill_output size = rill_queue_size(g, "qb", RILL_INT64, "size");
    /* The public builder has no timeout for an enqueue (it waits up to 300 s): this node is the
     * same op with a 150 ms timeout. */
    rill__attr at[] = {RILL__A_STRING("shared_name", "qb"), RILL__A_TYPE("dtype", RILL_INT64),
                       RILL__A_SHAPE("shape", rill_shape_scalar()), RILL__A_INT("capacity", 2),
                       RILL__A_INT("timeout_ms", 150)};
    rill_node *enq_short = rill__node_create(g, "QueueEnqueueMany", "enq_short", &two, 1, at, 5);
    rill_session *sess = NULL;
    if (!graph_ok(g)) goto out;
    sess = rill_session_new(g, NULL, s);
    if (!CHECK(sess != NULL)) goto out;

    const int64_t v12[2] = {1, 2}, v3 = 3, v4 = 4;
    rill_tensor *t12 = rill_tensor_from_data(RILL_INT64, (int64_t[]){2}, 1, v12);
    rill_tensor *t3 = rill_tensor_from_data(RILL_INT64, (int64_t[]){1}, 1, &v3);
    rill_tensor *t4 = rill_tensor_from_data(RILL_INT64, (int64_t[]){1}, 1, &v4);
    CHECK_EQ_INT(rill_session_run(sess, &two, &t12, 1, NULL, NULL, 0, &enq, 1, s), RILL_OK);
    CHECK_EQ_INT(fetch_scalar(sess, size, s), 2);
    /* Full: an enqueue waits, then runs out of time naming the queue. */
    CHECK_EQ_INT(rill_session_run(sess, &two, &t3, 1, NULL, NULL, 0, &enq_short, 1, s),
                 RILL_DEADLINE_EXCEEDED);
    CHECK_STR_CONTAINS(rill_status_message(s), "full queue 'qb' timed out after 0.15 s");
    CHECK_EQ_INT(fetch_scalar(sess, size, s), 2);

    /* An enqueue blocked on the full queue in another thread goes in when a dequeue makes room. */
    bg_run b = {.sess = sess, .target = enq, .feed = two, .feed_value = rill_tensor_ref(t3)};
    if (bg_start(&b)) {
        sleep_ms(30);
        CHECK(!atomic_load(&b.done)); /* the queue is full: it cannot have finished */
        CHECK_EQ_INT(fetch_scalar(sess, deq, s), 1);
        CHECK(bg_wait(&b, 20000));
        bg_join(&b);
        CHECK_EQ_INT(b.code, RILL_OK);
        CHECK_EQ_INT(fetch_scalar(sess, size, s), 2);
    }
    /* Blocked again (the queue holds 2, 3); rill_session_cancel ends it with CANCELLED. */
    bg_run c = {.sess = sess, .target = enq, .feed = two, .feed_value = rill_tensor_ref(t4)};
    if (bg_start(&c)) {
        /* A cancel only reaches steps already running: repeat until the thread is out. */
        for (int i = 0; i < 1000 && !atomic_load(&c.done); i++) {
            rill_session_cancel(sess);
            bg_wait(&c, 10);
        }
        if (!CHECK(atomic_load(&c.done))) fetch_scalar(sess, deq, s); /* make room */
        pthread_join(c.thread, NULL);
        CHECK_EQ_INT(c.code, RILL_CANCELLED);
        CHECK_STR_CONTAINS(rill_status_message(c.s), "'qb'");
        rill_tensor_free(c.feed_value);
        rill_status_free(c.s);
    }
    CHECK_EQ_INT(fetch_scalar(sess, deq, s), 2);
    CHECK_EQ_INT(fetch_scalar(sess, deq, s), 3);
    CHECK_EQ_INT(fetch_scalar(sess, size, s), 0);
    rill_tensor_free(t12);
    rill_tensor_free(t3);
    rill_tensor_free(t4);
out:
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

/* rill_session_cancel from another thread ends a dequeue blocked on an empty queue with
 * CANCELLED; later runs of the session (the same plan included) are not affected. */
static void test_cancel_blocked_dequeue(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output deq = rill_queue_dequeue(g, "qc", RILL_INT64, rill_shape_scalar(), 30000, "deq");
    rill_output v = rill_const_scalar(g, RILL_INT64, 0, NULL);
    rill_output one =
        rill_reshape(g, rill_const_scalar(g, RILL_INT64, 77, NULL), (int64_t[]){1}, 1, NULL);
    rill_node *enq = rill_queue_enqueue_many(g, "qc", -1, one, 0, "enq");
    rill_output plus = rill_add(g, v, rill_const_scalar(g, RILL_INT64, 5, NULL), "plus");
    rill_session *sess = NULL;
    if (!graph_ok(g)) goto out;
    sess = rill_session_new(g, NULL, s);
    if (!CHECK(sess != NULL)) goto out;

    for (int round = 0; round < 2; round++) {
        bg_run b = {.sess = sess, .fetch = deq};
        if (!bg_start(&b)) break;
        for (int i = 0; i < 1000 && !atomic_load(&b.done); i++) {
            rill_session_cancel(sess);
            bg_wait(&b, 10);
        }
        if (!CHECK(atomic_load(&b.done))) {
            fprintf(stderr, "  rill_session_cancel did not end the blocked dequeue\n");
            rill_session_run_targets(sess, &enq, 1, s); /* release it */
        }
        pthread_join(b.thread, NULL);
        CHECK_EQ_INT(b.code, RILL_CANCELLED);
        CHECK_STR_CONTAINS(rill_status_message(b.s), "queue 'qc'");
        CHECK_STR_CONTAINS(rill_status_message(b.s), "cancelled");
        CHECK(b.out == NULL);
        rill_tensor_free(b.out);
        rill_status_free(b.s);
    }
    /* The session works on: another plan, then the cancelled dequeue itself. */
    CHECK_EQ_INT(fetch_scalar(sess, plus, s), 5);
    CHECK_EQ_INT(rill_session_run_targets(sess, &enq, 1, s), RILL_OK);
    CHECK_EQ_INT(fetch_scalar(sess, deq, s), 77);
out:
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
}

/* A step's deadline (rill_run_options.timeout_ms, the session's operation timeout): a dequeue
 * blocked on an empty queue ends with TF's DEADLINE_EXCEEDED text naming the queue, at the
 * deadline (not at the op's own 30 s), and the session works on; a step that finishes in time is
 * unaffected; an explicit timeout overrides the session's. */
static void test_step_deadline(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output deq = rill_queue_dequeue(g, "qd", RILL_INT64, rill_shape_scalar(), 30000, "deq");
    rill_output one =
        rill_reshape(g, rill_const_scalar(g, RILL_INT64, 41, NULL), (int64_t[]){1}, 1, NULL);
    rill_node *enq = rill_queue_enqueue_many(g, "qd", -1, one, 0, "enq");
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_operation_timeout_ms(o, 300);
    rill_session *plain = NULL, *timed = NULL;
    if (!graph_ok(g)) goto out;
    plain = rill_session_new(g, NULL, s);
    timed = rill_session_new(g, o, s);
    if (!CHECK(plain && timed)) goto out;
    rill_run_options ro = {.timeout_ms = 200};
    for (int k = 0; k < 3; k++) {
        /* 0: RunOptions on a plain session; 1: the session's operation timeout; 2: both, the
         * run's 200 ms winning over the session's 300 ms. */
        rill_session *sess = k == 0 ? plain : timed;
        rill_tensor *v = NULL;
        double t0 = now_s();
        rill_code c = rill_session_run_with_options(sess, k == 1 ? NULL : &ro, NULL, NULL, 0,
                                                    &deq, &v, 1, NULL, 0, s);
        double took = now_s() - t0;
        CHECK_EQ_INT(c, RILL_DEADLINE_EXCEEDED);
        CHECK(v == NULL);
        CHECK_STR_CONTAINS(rill_status_message(s), "Timed out waiting for notification");
        CHECK_STR_CONTAINS(rill_status_message(s), k == 1 ? "300 ms deadline" : "200 ms deadline");
        CHECK_STR_CONTAINS(rill_status_message(s), "queue 'qd'");
        if (!CHECK(took >= 0.19 && took < 5))
            fprintf(stderr, "  case %d: the step ended after %.3f s\n", k, took);
    }
    /* In time: unaffected. The session works on after its timeouts. */
    CHECK_EQ_INT(rill_session_run_targets(timed, &enq, 1, s), RILL_OK);
    rill_tensor *v = NULL;
    CHECK_EQ_INT(rill_session_run_with_options(timed, &ro, NULL, NULL, 0, &deq, &v, 1, NULL, 0, s),
                 RILL_OK);
    if (CHECK(v != NULL)) CHECK_EQ_INT(rill_tensor_get_double(v, 0), 41);
    rill_tensor_free(v);
out:
    rill_session_free(plain);
    rill_session_free(timed);
    rill_session_options_free(o);
    rill_graph_free(g);
    rill_status_free(s);
}

/* --- SyncReplicasOptimizer --- */

static void test_sync_replicas_build_errors(void)
{
    rill_status *s = rill_status_new();
    rill_optimizer *gd = rill_gradient_descent_optimizer_new(0.1);

    CHECK(rill_sync_replicas_optimizer_new(gd, 0, 0) == NULL);
    CHECK(rill_sync_replicas_optimizer_new(NULL, 1, 1) == NULL);
    rill_sync_replicas_optimizer_free(NULL);

    /* No global step. */
    {
        rill_graph *g = rill_graph_new();
        rill_output w =
            rill_variable(g, RILL_FLOAT, rill_shape_vector(2), rill_ones_initializer(), true, "w");
        rill_output loss = rill_sum(g, w, NULL, -1, false, "loss");
        rill_sync_replicas_optimizer *o = rill_sync_replicas_optimizer_new(gd, 1, 1);
        CHECK(rill_sync_replicas_minimize(o, g, loss, (rill_output){NULL, 0}, NULL) == NULL);
        CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)),
                           "Global step is required to check staleness");
        /* Nothing was built: the sync op and init tokens still want apply_gradients. */
        CHECK(rill_sync_replicas_chief_queue_runner_op(o, s) == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_FAILED_PRECONDITION);
        rill_sync_replicas_optimizer_free(o);
        rill_graph_free(g);
    }
    /* No gradients at all, or only None gradients. */
    for (int k = 0; k < 2; k++) {
        rill_graph *g = rill_graph_new();
        rill_output gs = rill_train_get_or_create_global_step(g);
        rill_output w =
            rill_variable(g, RILL_FLOAT, rill_shape_vector(2), rill_ones_initializer(), true, "w");
        rill_grad_and_var gv = {{NULL, 0}, w};
        rill_sync_replicas_optimizer *o = rill_sync_replicas_optimizer_new(gd, 2, 0);
        CHECK(rill_sync_replicas_apply_gradients(o, g, &gv, k, gs, NULL) == NULL);
        CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)),
                           "Must supply at least one variable");
        rill_sync_replicas_optimizer_free(o);
        rill_graph_free(g);
    }
    /* Before apply_gradients. */
    {
        rill_sync_replicas_optimizer *o = rill_sync_replicas_optimizer_new(gd, 2, 2);
        CHECK(rill_sync_replicas_chief_queue_runner_op(o, s) == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_FAILED_PRECONDITION);
        CHECK_STR_CONTAINS(rill_status_message(s), "should be called after apply_gradients().");
        rill_status_clear(s);
        CHECK(rill_sync_replicas_get_init_tokens_op(o, -1, s) == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_FAILED_PRECONDITION);
        CHECK_STR_CONTAINS(rill_status_message(s),
                           "get_init_tokens_op() should be called after apply_gradients().");
        CHECK(rill_sync_replicas_chief_init_op(o) == NULL);
        rill_sync_replicas_optimizer_free(o);
    }
    /* Tokens: 3 to aggregate from 1 replica needs 2 tokens to start. */
    {
        rill_graph *g = rill_graph_new();
        rill_output gs = rill_train_get_or_create_global_step(g);
        rill_output w =
            rill_variable(g, RILL_FLOAT, rill_shape_vector(2), rill_ones_initializer(), true, "w");
        rill_output loss = rill_sum(g, rill_square(g, w, NULL), NULL, -1, false, "loss");
        rill_sync_replicas_optimizer *o = rill_sync_replicas_optimizer_new(gd, 3, 1);
        rill_node *train = rill_sync_replicas_minimize(o, g, loss, gs, NULL);
        if (graph_ok(g) && CHECK(train != NULL)) {
            CHECK_EQ_STR(rill_node_name(train), "train_op");
            CHECK(rill_sync_replicas_get_init_tokens_op(o, 1, s) == NULL);
            CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
            CHECK_STR_CONTAINS(rill_status_message(s),
                               "Too few tokens to finish the first step: 1 (given) vs 2 (needed)");
            rill_status_clear(s);
            CHECK(rill_sync_replicas_get_init_tokens_op(o, 0, s) == NULL);
            CHECK_STR_CONTAINS(rill_status_message(s), "0 (given) vs 2 (needed)");
            rill_status_clear(s);
            rill_node *two = rill_sync_replicas_get_init_tokens_op(o, 2, s);
            CHECK(two != NULL);
            rill_node *sync = rill_sync_replicas_chief_queue_runner_op(o, s);
            if (CHECK(sync != NULL)) CHECK_EQ_STR(rill_node_name(sync), "sync_op");
            CHECK(rill_sync_replicas_chief_init_op(o) != NULL);
            CHECK(rill_sync_replicas_local_step_init_op(o) != NULL);
            rill_output ls = rill_sync_replicas_local_step(o);
            if (CHECK(ls.node != NULL)) {
                CHECK_EQ_STR(rill_node_name(ls.node), "sync_rep_local_step");
                CHECK_EQ_INT(rill_output_dtype(ls), RILL_INT64);
            }
            /* The local step and dropped counter are local variables, never saved. */
            rill_output locals[8];
            int nl = rill_graph_local_variables(g, locals, 8);
            CHECK_EQ_INT(nl, 2);
            rill_output globals[8];
            int ng = rill_graph_global_variables(g, globals, 8);
            CHECK_EQ_INT(ng, 2); /* global_step and w */
            CHECK(graph_ok(g));
        }
        rill_sync_replicas_optimizer_free(o);
        rill_graph_free(g);
    }
    rill_optimizer_free(gd);
    rill_status_free(s);
}

typedef struct sync_model {
    rill_graph *g;
    rill_optimizer *gd;
    rill_sync_replicas_optimizer *sync;
    rill_output gs, w, grad;
    rill_node *train, *sync_op, *chief_init, *tokens;
} sync_model;

#define LR 0.125

/* w: float[2] = {1, -2}, its gradient fed through a placeholder; replicas_to_aggregate = 1. */
static bool build_sync(sync_model *m, int num_tokens, rill_status *s)
{
    memset(m, 0, sizeof *m);
    rill_graph *g = m->g = rill_graph_new();
    m->gs = rill_train_get_or_create_global_step(g);
    const float w0[2] = {1, -2};
    m->w = rill_variable_from(g, rill_const_floats(g, w0, (int64_t[]){2}, 1, NULL), true, "w");
    m->grad = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(2), "grad");
    m->gd = rill_gradient_descent_optimizer_new(LR);
    m->sync = rill_sync_replicas_optimizer_new(m->gd, 1, 1);
    /* Every wait is bounded: a lost wake-up fails a check rather than hanging. */
    rill_sync_replicas_set_timeout(m->sync, 20);
    rill_grad_and_var gv = {m->grad, m->w};
    m->train = rill_sync_replicas_apply_gradients(m->sync, g, &gv, 1, m->gs, "train");
    m->tokens = rill_sync_replicas_get_init_tokens_op(m->sync, num_tokens, s);
    m->sync_op = rill_sync_replicas_chief_queue_runner_op(m->sync, s);
    m->chief_init = rill_sync_replicas_chief_init_op(m->sync);
    return graph_ok(g) && CHECK(m->train && m->tokens && m->sync_op && m->chief_init);
}

static void free_sync(sync_model *m)
{
    rill_sync_replicas_optimizer_free(m->sync);
    rill_optimizer_free(m->gd);
    rill_graph_free(m->g);
}

/* Starts the chief: variables, local variables, chief init, the queue runner, the tokens. */
static rill_queue_runner *start_chief(sync_model *m, rill_session *sess, rill_status *s)
{
    if (!run_targets(sess, rill_global_variables_initializer(m->g, NULL), s) ||
        !run_targets(sess, rill_local_variables_initializer(m->g, NULL), s) ||
        !run_targets(sess, m->chief_init, s))
        return NULL;
    rill_queue_runner *qr = rill_queue_runner_start(sess, m->sync_op, s);
    if (!CHECK(qr != NULL)) return NULL;
    CHECK(rill_queue_runner_running(qr));
    run_targets(sess, m->tokens, s);
    return qr;
}

/* Runs the train op with gradient {g0, g1}; the new local step, or -1. */
static int64_t train_step(sync_model *m, rill_session *sess, float g0, float g1, rill_status *s)
{
    float gv[2] = {g0, g1};
    rill_tensor *t = t_floats(gv, 2);
    rill_tensor *out = run1(sess, &m->grad, &t, 1, (rill_output){m->train, 0}, s);
    rill_tensor_free(t);
    if (!CHECK(out != NULL)) {
        fprintf(stderr, "  train step failed: %s\n", rill_status_message(s));
        return -1;
    }
    int64_t v = *(int64_t *)rill_tensor_data(out);
    rill_tensor_free(out);
    return v;
}

static void stop_chief(rill_queue_runner *qr, rill_status *s)
{
    /* The queue runner is blocked in its take (no gradient is coming): stop cancels it. */
    CHECK(rill_queue_runner_running(qr));
    CHECK_EQ_INT(rill_queue_runner_error(qr, s), RILL_OK);
    if (!CHECK_EQ_INT(rill_queue_runner_stop(qr, s), RILL_OK))
        fprintf(stderr, "  queue runner: %s\n", rill_status_message(s));
}

/* No initial tokens: each step waits for the chief's update of its own gradient, so every
 * gradient is applied, one update per step. */
static void test_sync_training_exact(void)
{
    rill_status *s = rill_status_new();
    sync_model m;
    rill_session *sess = NULL;
    if (!build_sync(&m, 0, s)) goto out;
    /* 0 tokens (enough when no replica is missing) is a no-op. */
    CHECK_EQ_STR(rill_node_name(m.tokens), "no_init_tokens");
    CHECK_EQ_STR(rill_node_op_type(m.tokens), "NoOp");
    sess = rill_session_new(m.g, NULL, s);
    if (!CHECK(sess != NULL)) goto out;
    rill_queue_runner *qr = start_chief(&m, sess, s);
    if (!qr) goto out;
    const int N = 12;
    double w0 = 1, w1 = -2;
    for (int i = 1; i <= N; i++) {
        float g0 = (float)i * 0.5f, g1 = (float)(i % 3) - 1.0f;
        /* The train op's value is the token: the global step after this step's update. */
        if (!CHECK_EQ_INT(train_step(&m, sess, g0, g1, s), i)) break;
        CHECK_EQ_INT(fetch_scalar(sess, m.gs, s), i);
        w0 -= LR * g0;
        w1 -= LR * g1;
    }
    rill_tensor *w = run1(sess, NULL, NULL, 0, m.w, s);
    if (CHECK(w != NULL)) {
        CHECK_NEAR(rill_tensor_get_double(w, 0), w0, 1e-5);
        CHECK_NEAR(rill_tensor_get_double(w, 1), w1, 1e-5);
    }
    rill_tensor_free(w);
    CHECK_EQ_INT(fetch_scalar(sess, m.gs, s), N);
    CHECK_EQ_INT(fetch_scalar(sess, rill_sync_replicas_local_step(m.sync), s), N);
    CHECK_EQ_INT(fetch_scalar(sess, rill_sync_replicas_dropped(m.sync), s), 0);
    stop_chief(qr, s);
    /* Every gradient was taken. */
    rill_output nacc = rill_accumulator_num_accumulated(m.g, "w/grad_accum", RILL_FLOAT,
                                                        rill_shape_vector(2), NULL);
    CHECK_EQ_INT(fetch_scalar(sess, nacc, s), 0);
out:
    rill_session_free(sess);
    free_sync(&m);
    rill_status_free(s);
}

/* One initial token (TF's default, replicas_to_aggregate): the first step does not wait, so the
 * second step's gradient, still tagged with local step 0, either joins the first in the
 * accumulator or arrives after the chief's take and is dropped. Either way the global step ends
 * one behind the steps run, and w moved by exactly one gradient per update. */
static void test_sync_training_with_token(void)
{
    rill_status *s = rill_status_new();
    sync_model m;
    rill_session *sess = NULL;
    if (!build_sync(&m, -1, s)) goto out;
    CHECK_EQ_STR(rill_node_op_type(m.tokens), "QueueEnqueueMany");
    sess = rill_session_new(m.g, NULL, s);
    if (!CHECK(sess != NULL)) goto out;
    rill_queue_runner *qr = start_chief(&m, sess, s);
    if (!qr) goto out;
    const int N = 8;
    CHECK_EQ_INT(train_step(&m, sess, 2, -4, s), 0); /* the initial token holds step 0 */
    for (int i = 2; i <= N; i++) CHECK_EQ_INT(train_step(&m, sess, 2, -4, s), i - 1);
    stop_chief(qr, s);
    CHECK_EQ_INT(fetch_scalar(sess, m.gs, s), N - 1);
    rill_tensor *w = run1(sess, NULL, NULL, 0, m.w, s);
    if (CHECK(w != NULL)) {
        CHECK_NEAR(rill_tensor_get_double(w, 0), 1 - LR * 2 * (N - 1), 1e-5);
        CHECK_NEAR(rill_tensor_get_double(w, 1), -2 + LR * 4 * (N - 1), 1e-5);
    }
    rill_tensor_free(w);
    double dropped = fetch_scalar(sess, rill_sync_replicas_dropped(m.sync), s);
    CHECK(dropped == 0 || dropped == 1);
    rill_output nd =
        rill_accumulator_num_dropped(m.g, "w/grad_accum", RILL_FLOAT, rill_shape_vector(2), NULL);
    CHECK_EQ_INT(fetch_scalar(sess, nd, s), dropped);
out:
    rill_session_free(sess);
    free_sync(&m);
    rill_status_free(s);
}

/* A worker step with no chief running waits for its token until the timeout. */
static void test_sync_no_chief_times_out(void)
{
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_output gs = rill_train_get_or_create_global_step(g);
    rill_output w =
        rill_variable(g, RILL_FLOAT, rill_shape_vector(2), rill_zeros_initializer(), true, "w");
    rill_output grad = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(2), "grad");
    rill_optimizer *gd = rill_gradient_descent_optimizer_new(LR);
    rill_sync_replicas_optimizer *o = rill_sync_replicas_optimizer_new(gd, 1, 1);
    rill_sync_replicas_set_timeout(o, 0.2);
    rill_grad_and_var gv = {grad, w};
    rill_node *train = rill_sync_replicas_apply_gradients(o, g, &gv, 1, gs, NULL);
    rill_session *sess = NULL;
    if (!graph_ok(g) || !CHECK(train != NULL)) goto out;
    sess = rill_session_new(g, NULL, s);
    if (!CHECK(sess != NULL)) goto out;
    run_targets(sess, rill_global_variables_initializer(g, NULL), s);
    run_targets(sess, rill_local_variables_initializer(g, NULL), s);
    float gv0[2] = {1, 1};
    rill_tensor *t = t_floats(gv0, 2);
    rill_tensor *out = run1(sess, &grad, &t, 1, (rill_output){train, 0}, s);
    CHECK(out == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_DEADLINE_EXCEEDED);
    CHECK_STR_CONTAINS(rill_status_message(s), "queue 'sync_token_q'");
    CHECK_STR_CONTAINS(rill_status_message(s), "timed out after 0.2 s");
    /* Better than "is it running?": it says that nothing has taken gradients yet. */
    CHECK_STR_CONTAINS(rill_status_message(s),
                       "the chief's queue runner has not started: nothing has taken gradients "
                       "from accumulator 'w/grad_accum' yet (it holds 1 for sync step 0");
    rill_tensor_free(out);
    /* The gradient went into the accumulator before the wait. */
    rill_output nacc =
        rill_accumulator_num_accumulated(g, "w/grad_accum", RILL_FLOAT, rill_shape_vector(2), NULL);
    CHECK_EQ_INT(fetch_scalar(sess, nacc, s), 1);
    /* The chief's op runs once (takes it, makes a token) and then no more: the step that got
     * the token ends, the next one waits for a taker that took 0 s ago and does not again. */
    rill_node *chief = rill_sync_replicas_chief_queue_runner_op(o, s);
    if (CHECK(chief != NULL)) {
        run_targets(sess, chief, s);
        out = run1(sess, &grad, &t, 1, (rill_output){train, 0}, s);
        CHECK(out != NULL);
        rill_tensor_free(out);
        out = run1(sess, &grad, &t, 1, (rill_output){train, 0}, s);
        CHECK(out == NULL);
        CHECK_STR_CONTAINS(rill_status_message(s),
                           "the chief's queue runner takes no more: its last take from "
                           "accumulator 'w/grad_accum' was 0 s ago (it holds 1 gradients for "
                           "sync step 1");
        rill_tensor_free(out);
    }
    rill_tensor_free(t);
out:
    rill_session_free(sess);
    rill_sync_replicas_optimizer_free(o);
    rill_optimizer_free(gd);
    rill_graph_free(g);
    rill_status_free(s);
}

int main(void)
{
    test_accumulator_semantics();
    test_accumulator_dtypes();
    test_take_released_by_apply();
    test_queue_order();
    test_bounded_queue();
    test_cancel_blocked_dequeue();
    test_step_deadline();
    test_sync_replicas_build_errors();
    test_sync_training_exact();
    test_sync_training_with_token();
    test_sync_no_chief_times_out();
    TEST_MAIN_END();
}
