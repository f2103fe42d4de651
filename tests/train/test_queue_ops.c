/* test_queue_ops.c - TF's queue API in a local session (src/graph/ops_queue.c,
 * src/kernels/cpu/cpu_queue.c):
 *
 *   - a FIFO queue of (float [2], int32) tuples: enqueue_many's rows in order, dequeue, a
 *     dequeue_many of a constant n with its static shape, size; close: an enqueue is CANCELLED
 *     ("FIFOQueue '_N_fifo_queue' is closed."), dequeue_up_to returns what is left, then
 *     dequeue_many is OUT_OF_RANGE with TF's text (requested, current size);
 *   - a random-shuffle queue: a permutation, the same one for the same seeds in another session,
 *     min_after_dequeue holding elements back until close;
 *   - string components;
 *   - an enqueue blocked on a full queue ended by close(cancel_pending_enqueues) from another
 *     thread, and a dequeue blocked on an empty one ended by rill_session_cancel;
 *   - CountUpTo on a local variable: the old values, then OUT_OF_RANGE "Reached limit of 2";
 *   - build errors: a non-string handle, a dequeue without the queue's component types, an
 *     enqueue of the wrong dtype or shape (INVALID_ARGUMENT at run time, TF's texts). */
#include "../test.h"

#include <rill/rill.h>

#include <pthread.h>
#include <string.h>
#include <time.h>

/* A Const of t (rill_const copies it: t is freed here). */
static rill_output konst(rill_graph *g, rill_tensor *t)
{
    rill_output c = rill_const(g, t, NULL);
    rill_tensor_free(t);
    return c;
}

static rill_output make_queue(rill_graph *g, const char *op, const int64_t *types, int nt,
                              const int64_t *shapes, int ns, int64_t capacity, int64_t min_after,
                              int64_t seed)
{
    rill_op_builder *b = rill_op_builder_new(g, op, NULL);
    rill_op_builder_set_ints(b, "component_types", types, nt);
    rill_op_builder_set_ints(b, "shapes", shapes, ns);
    rill_op_builder_set_int(b, "capacity", capacity);
    if (min_after >= 0) {
        rill_op_builder_set_int(b, "min_after_dequeue", min_after);
        rill_op_builder_set_int(b, "seed", seed);
        rill_op_builder_set_int(b, "seed2", seed + 1);
    }
    return (rill_output){rill_op_builder_finish(b), 0};
}

static rill_node *enqueue(rill_graph *g, const char *op, rill_output q, const rill_output *c, int n)
{
    rill_op_builder *b = rill_op_builder_new(g, op, NULL);
    rill_op_builder_add_input(b, q);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, c[i]);
    return rill_op_builder_finish(b);
}

static rill_node *dequeue(rill_graph *g, const char *op, rill_output q, const int64_t *types,
                          int nt, const int64_t *shapes, int ns, int32_t n)
{
    rill_op_builder *b = rill_op_builder_new(g, op, NULL);
    rill_op_builder_add_input(b, q);
    if (n >= 0) rill_op_builder_add_input(b, konst(g, rill_tensor_scalar_int32(n)));
    rill_op_builder_set_ints(b, "component_types", types, nt);
    rill_op_builder_set_ints(b, "shapes", shapes, ns);
    rill_op_builder_set_int(b, "num_outputs", nt);
    return rill_op_builder_finish(b);
}

static rill_node *simple(rill_graph *g, const char *op, rill_output q, bool cancel)
{
    rill_op_builder *b = rill_op_builder_new(g, op, NULL);
    rill_op_builder_add_input(b, q);
    if (cancel) rill_op_builder_set_bool(b, "cancel_pending_enqueues", true);
    return rill_op_builder_finish(b);
}

static rill_code run(rill_session *sess, rill_node *target, rill_output *fetch, rill_tensor **out,
                     int nf, rill_status *s)
{
    return rill_session_run(sess, NULL, NULL, 0, fetch, out, nf, target ? &target : NULL,
                            target ? 1 : 0, s);
}

static void test_fifo(void)
{
    rill_graph *g = rill_graph_new();
    int64_t types[] = {RILL_FLOAT, RILL_INT32}, shapes[] = {1, 2, 0};
    rill_output q = make_queue(g, "FIFOQueueV2", types, 2, shapes, 3, 10, -1, 0);
    float fv[] = {1, 2, 3, 4, 5, 6};
    int32_t iv[] = {7, 8, 9};
    int64_t d2[] = {3, 2}, d1[] = {3};
    rill_output comps[] = {konst(g, rill_tensor_from_data(RILL_FLOAT, d2, 2, fv)),
                           konst(g, rill_tensor_from_data(RILL_INT32, d1, 1, iv))};
    rill_node *many = enqueue(g, "QueueEnqueueManyV2", q, comps, 2);
    rill_node *one = dequeue(g, "QueueDequeueV2", q, types, 2, shapes, 3, -1);
    rill_node *two = dequeue(g, "QueueDequeueManyV2", q, types, 2, shapes, 3, 2);
    rill_node *upto = dequeue(g, "QueueDequeueUpToV2", q, types, 2, shapes, 3, 32);
    rill_node *size = simple(g, "QueueSizeV2", q, false);
    rill_node *close = simple(g, "QueueCloseV2", q, false);
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  %s\n", rill_status_message(rill_graph_status(g)));
        rill_graph_free(g);
        return;
    }
    rill_shape sh = rill_output_shape((rill_output){two, 0});
    CHECK(sh.rank == 2 && sh.dims[0] == 2 && sh.dims[1] == 2);
    rill_shape su = rill_output_shape((rill_output){upto, 1});
    CHECK(su.rank == 1 && su.dims[0] == -1);
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    CHECK_EQ_INT(run(sess, many, NULL, NULL, 0, s), RILL_OK);
    rill_tensor *out[2] = {0};
    rill_output f1[] = {{one, 0}, {one, 1}}, f2[] = {{two, 0}, {two, 1}},
                fu[] = {{upto, 0}, {upto, 1}}, fs = {size, 0};
    CHECK_EQ_INT(run(sess, NULL, &fs, out, 1, s), RILL_OK);
    CHECK_EQ_INT(*(int32_t *)rill_tensor_data(out[0]), 3);
    rill_tensor_free(out[0]);
    CHECK_EQ_INT(run(sess, NULL, f1, out, 2, s), RILL_OK);
    CHECK(((float *)rill_tensor_data(out[0]))[1] == 2.0f);
    CHECK_EQ_INT(*(int32_t *)rill_tensor_data(out[1]), 7);
    rill_tensor_free(out[0]);
    rill_tensor_free(out[1]);
    CHECK_EQ_INT(run(sess, NULL, f2, out, 2, s), RILL_OK);
    CHECK(((float *)rill_tensor_data(out[0]))[3] == 6.0f);
    CHECK_EQ_INT(((int32_t *)rill_tensor_data(out[1]))[1], 9);
    rill_tensor_free(out[0]);
    rill_tensor_free(out[1]);
    CHECK_EQ_INT(run(sess, many, NULL, NULL, 0, s), RILL_OK);
    CHECK_EQ_INT(run(sess, close, NULL, NULL, 0, s), RILL_OK);
    CHECK_EQ_INT(run(sess, many, NULL, NULL, 0, s), RILL_CANCELLED);
    CHECK_STR_CONTAINS(rill_status_message(s), "FIFOQueue '_");
    CHECK_STR_CONTAINS(rill_status_message(s), "_fifo_queue' is closed.");
    CHECK_EQ_INT(run(sess, NULL, fu, out, 2, s), RILL_OK);
    CHECK_EQ_INT(rill_tensor_shape(out[1])->dims[0], 3);
    rill_tensor_free(out[0]);
    rill_tensor_free(out[1]);
    CHECK_EQ_INT(run(sess, NULL, f2, out, 2, s), RILL_OUT_OF_RANGE);
    CHECK_STR_CONTAINS(rill_status_message(s),
                       "is closed and has insufficient elements (requested 2, current size 0)");
    rill_session_free(sess);
    rill_status_free(s);
    rill_graph_free(g);
}

/* The order a shuffle queue of seed gives 0..19 in (dequeue_many 15 then the rest). */
static void shuffled(int64_t seed, int32_t *order)
{
    rill_graph *g = rill_graph_new();
    int64_t types[] = {RILL_INT32}, shapes[] = {0};
    rill_output q = make_queue(g, "RandomShuffleQueueV2", types, 1, shapes, 1, 100, 5, seed);
    int32_t v[20];
    for (int i = 0; i < 20; i++) v[i] = i;
    int64_t d = 20;
    rill_output c = konst(g, rill_tensor_from_data(RILL_INT32, &d, 1, v));
    rill_node *many = enqueue(g, "QueueEnqueueManyV2", q, &c, 1);
    rill_node *take = dequeue(g, "QueueDequeueManyV2", q, types, 1, shapes, 1, 15);
    rill_node *rest = dequeue(g, "QueueDequeueUpToV2", q, types, 1, shapes, 1, 10);
    rill_node *close = simple(g, "QueueCloseV2", q, false);
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    CHECK_EQ_INT(run(sess, many, NULL, NULL, 0, s), RILL_OK);
    rill_tensor *out = NULL;
    rill_output ft = {take, 0}, fr = {rest, 0};
    CHECK_EQ_INT(run(sess, NULL, &ft, &out, 1, s), RILL_OK);
    memcpy(order, rill_tensor_data(out), 15 * sizeof *order);
    rill_tensor_free(out);
    /* 5 left = min_after_dequeue: a dequeue waits (until the step's deadline) */
    rill_run_options ro = {.timeout_ms = 100};
    rill_node *t = rest;
    CHECK_EQ_INT(rill_session_run_with_options(sess, &ro, NULL, NULL, 0, NULL, NULL, 0, &t, 1, s),
                 RILL_DEADLINE_EXCEEDED);
    CHECK_EQ_INT(run(sess, close, NULL, NULL, 0, s), RILL_OK);
    CHECK_EQ_INT(run(sess, NULL, &fr, &out, 1, s), RILL_OK);
    CHECK_EQ_INT(rill_tensor_shape(out)->dims[0], 5);
    memcpy(order + 15, rill_tensor_data(out), 5 * sizeof *order);
    rill_tensor_free(out);
    rill_session_free(sess);
    rill_status_free(s);
    rill_graph_free(g);
}

static void test_shuffle(void)
{
    int32_t a[20], b[20], seen[20] = {0};
    shuffled(7, a);
    shuffled(7, b);
    bool sorted = true;
    for (int i = 0; i < 20; i++) {
        if (a[i] >= 0 && a[i] < 20) seen[a[i]]++;
        sorted = sorted && a[i] == i;
    }
    for (int i = 0; i < 20; i++) CHECK_EQ_INT(seen[i], 1);
    CHECK(!sorted);
    CHECK(memcmp(a, b, sizeof a) == 0);
}

static void test_strings(void)
{
    rill_graph *g = rill_graph_new();
    int64_t types[] = {RILL_STRING}, shapes[] = {0};
    rill_output q = make_queue(g, "FIFOQueueV2", types, 1, shapes, 1, -1, -1, 0);
    int64_t d = 2;
    rill_tensor *v = rill_tensor_new(RILL_STRING, &d, 1);
    rill_tensor_set_string(v, 0, "a.txt", 5);
    rill_tensor_set_string(v, 1, "bb.txt", 6);
    rill_output c = rill_const(g, v, NULL);
    rill_tensor_free(v);
    rill_node *many = enqueue(g, "QueueEnqueueManyV2", q, &c, 1);
    rill_node *two = dequeue(g, "QueueDequeueManyV2", q, types, 1, shapes, 1, 2);
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    CHECK_EQ_INT(run(sess, many, NULL, NULL, 0, s), RILL_OK);
    rill_tensor *out = NULL;
    rill_output f = {two, 0};
    CHECK_EQ_INT(run(sess, NULL, &f, &out, 1, s), RILL_OK);
    size_t len = 0;
    const char *x = out ? rill_tensor_get_string(out, 1, &len) : NULL;
    CHECK(x && len == 6 && memcmp(x, "bb.txt", 6) == 0);
    rill_tensor_free(out);
    rill_session_free(sess);
    rill_status_free(s);
    rill_graph_free(g);
}

typedef struct job {
    rill_session *sess;
    rill_node *target;
    rill_code code;
    char msg[256];
    volatile int done;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    rill_status *s = rill_status_new();
    j->code = run(j->sess, j->target, NULL, NULL, 0, s);
    snprintf(j->msg, sizeof j->msg, "%s", rill_status_message(s));
    rill_status_free(s);
    __atomic_store_n(&j->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static bool wait_done(job *j)
{
    for (int i = 0; i < 500 && !__atomic_load_n(&j->done, __ATOMIC_SEQ_CST); i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return __atomic_load_n(&j->done, __ATOMIC_SEQ_CST);
}

static void test_blocked_and_cancelled(void)
{
    rill_graph *g = rill_graph_new();
    int64_t types[] = {RILL_INT32}, shapes[] = {0};
    rill_output q = make_queue(g, "FIFOQueueV2", types, 1, shapes, 1, 2, -1, 0);
    int32_t v[] = {1, 2, 3};
    int64_t d = 3;
    rill_output c = konst(g, rill_tensor_from_data(RILL_INT32, &d, 1, v));
    rill_node *many = enqueue(g, "QueueEnqueueManyV2", q, &c, 1);
    rill_node *cancel = simple(g, "QueueCloseV2", q, true);
    rill_graph *g2 = rill_graph_new();
    rill_output q2 = make_queue(g2, "FIFOQueueV2", types, 1, shapes, 1, 2, -1, 0);
    rill_node *deq = dequeue(g2, "QueueDequeueV2", q2, types, 1, shapes, 1, -1);
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    job j = {sess, many, RILL_OK, "", 0};
    pthread_t t;
    pthread_create(&t, NULL, run_job, &j);
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    CHECK(!__atomic_load_n(&j.done, __ATOMIC_SEQ_CST)); /* the third element waits for room */
    CHECK_EQ_INT(run(sess, cancel, NULL, NULL, 0, s), RILL_OK);
    CHECK(wait_done(&j));
    pthread_join(t, NULL);
    CHECK_EQ_INT(j.code, RILL_CANCELLED);
    CHECK_STR_CONTAINS(j.msg, "Enqueue operation was cancelled");

    rill_session *sess2 = rill_session_new(g2, NULL, s);
    job k = {sess2, deq, RILL_OK, "", 0};
    pthread_create(&t, NULL, run_job, &k);
    nanosleep(&ts, NULL);
    CHECK(!__atomic_load_n(&k.done, __ATOMIC_SEQ_CST));
    rill_session_cancel(sess2);
    CHECK(wait_done(&k));
    pthread_join(t, NULL);
    CHECK_EQ_INT(k.code, RILL_CANCELLED);
    CHECK_STR_CONTAINS(k.msg, "Dequeue operation was cancelled");
    rill_session_free(sess2);
    rill_session_free(sess);
    rill_status_free(s);
    rill_graph_free(g2);
    rill_graph_free(g);
}

static void test_count_up_to(void)
{
    rill_graph *g = rill_graph_new();
    rill_output v =
        rill_local_variable(g, RILL_INT64, rill_shape_scalar(), rill_zeros_initializer(), "epochs");
    rill_op_builder *b = rill_op_builder_new(g, "CountUpTo", NULL);
    rill_op_builder_add_input(b, v);
    rill_op_builder_set_int(b, "limit", 2);
    rill_output c = {rill_op_builder_finish(b), 0};
    rill_node *init = rill_local_variables_initializer(g, NULL);
    CHECK(rill_graph_ok(g));
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_tensor *out = NULL;
    CHECK_EQ_INT(run(sess, NULL, &c, &out, 1, s), RILL_FAILED_PRECONDITION);
    CHECK_STR_CONTAINS(rill_status_message(s), "Attempting to use uninitialized value epochs");
    CHECK_EQ_INT(run(sess, init, NULL, NULL, 0, s), RILL_OK);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(run(sess, NULL, &c, &out, 1, s), RILL_OK);
        CHECK_EQ_INT(out ? *(int64_t *)rill_tensor_data(out) : -1, i);
        rill_tensor_free(out);
        out = NULL;
    }
    CHECK_EQ_INT(run(sess, NULL, &c, &out, 1, s), RILL_OUT_OF_RANGE);
    CHECK_STR_CONTAINS(rill_status_message(s), "Reached limit of 2");
    rill_session_free(sess);
    rill_status_free(s);
    rill_graph_free(g);
}

static void test_errors(void)
{
    int64_t types[] = {RILL_FLOAT}, shapes[] = {1, 2};
    rill_graph *g = rill_graph_new();
    dequeue(g, "QueueDequeueV2", rill_const_float(g, 1.0f, NULL), types, 1, shapes, 2, -1);
    CHECK_EQ_INT(rill_status_code(rill_graph_status(g)), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)), "Input 'handle' of");
    rill_graph_free(g);

    g = rill_graph_new();
    rill_output q = make_queue(g, "FIFOQueueV2", types, 1, shapes, 2, -1, -1, 0);
    rill_output wrong = rill_const_scalar(g, RILL_INT32, 1, NULL);
    float three[] = {1, 2, 3};
    int64_t d3 = 3;
    rill_output longer = konst(g, rill_tensor_from_data(RILL_FLOAT, &d3, 1, three));
    rill_node *e1 = enqueue(g, "QueueEnqueueV2", q, &wrong, 1);
    rill_node *e2 = enqueue(g, "QueueEnqueueV2", q, &longer, 1);
    CHECK(rill_graph_ok(g));
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    CHECK_EQ_INT(run(sess, e1, NULL, NULL, 0, s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s),
                       "Type mismatch in tuple component 0. Expected float, got int32");
    CHECK_EQ_INT(run(sess, e2, NULL, NULL, 0, s), RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s),
                       "Shape mismatch in tuple component 0. Expected [2], got [3]");
    rill_session_free(sess);
    rill_status_free(s);
    rill_graph_free(g);
}

int main(void)
{
    test_fifo();
    test_shuffle();
    test_strings();
    test_blocked_and_cancelled();
    test_count_up_to();
    test_errors();
    TEST_MAIN_END();
}
