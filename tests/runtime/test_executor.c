/* test_executor.c - running graphs in a session: branches, shared inputs, control dependencies,
 * targets and fetches, feeding intermediate tensors (pruning), the plan cache, variables across
 * runs and sessions, zero allocations in a steady-state step, concurrent runs and the inter-op
 * pool against a single-threaded session. */
#include <rill/rill.h>

#include "core/core.h"
#include "test.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static rill_tensor *vec(const float *v, int64_t n)
{
    return rill_tensor_from_data(RILL_FLOAT, &n, 1, v);
}

static float at(const rill_tensor *t, int64_t i)
{
    return t ? (float)rill_tensor_get_double(t, i) : -12345.0f;
}

/* Runs with one fetch and returns it (NULL on failure, after reporting the status). */
static rill_tensor *run1(rill_session *sess, const rill_output *feeds, rill_tensor *const *vals,
                         int nfeeds, rill_output fetch, rill_status *s)
{
    rill_tensor *out = NULL;
    rill_code c = rill_session_run(sess, feeds, vals, nfeeds, &fetch, &out, 1, NULL, 0, s);
    if (!CHECK_EQ_INT(c, RILL_OK)) fprintf(stderr, "  run failed: %s\n", rill_status_message(s));
    return out;
}

static rill_session *new_session(rill_graph *g, rill_status *s)
{
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  build failed: %s\n", rill_status_message(rill_graph_status(g)));
        return NULL;
    }
    rill_session *sess = rill_session_new(g, NULL, s);
    CHECK(sess != NULL);
    return sess;
}

static void test_diamond_and_shared_inputs(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(3), "x");
    /* Diamond: x -> (x + 1, x * 2) -> sum. */
    rill_output left = rill_add(g, x, rill_const_float(g, 1, NULL), "left");
    rill_output right = rill_mul(g, x, rill_const_float(g, 2, NULL), "right");
    rill_output sum = rill_add(g, left, right, "sum");
    /* One tensor (x) consumed by twelve nodes, and the diamond's top reused below. */
    rill_output terms[12];
    for (int i = 0; i < 12; i++)
        terms[i] = rill_mul(g, x, rill_const_float(g, (float)i, NULL), NULL);
    rill_output total = rill_add_n(g, terms, 12, "total");
    rill_output both = rill_add(g, sum, left, "both");
    rill_session *sess = new_session(g, s);
    if (!sess) goto out;

    rill_tensor *xv = vec((float[]){1, 2, 3}, 3);
    rill_output fetches[] = {sum, total, both, left};
    rill_tensor *out[4];
    if (CHECK_EQ_INT(rill_session_run(sess, &x, &xv, 1, fetches, out, 4, NULL, 0, s), RILL_OK)) {
        for (int i = 0; i < 3; i++) {
            float v = (float)(i + 1);
            CHECK_NEAR(at(out[0], i), 3 * v + 1, 0);
            CHECK_NEAR(at(out[1], i), 66 * v, 1e-4);
            CHECK_NEAR(at(out[2], i), 4 * v + 2, 0);
            CHECK_NEAR(at(out[3], i), v + 1, 0);
        }
        for (int i = 0; i < 4; i++) rill_tensor_free(out[i]);
    }
    /* The fed value is borrowed and unchanged. */
    CHECK_NEAR(at(xv, 0), 1, 0);
    CHECK_NEAR(at(xv, 2), 3, 0);

    /* The same tensor fetched twice. */
    rill_output twice[] = {sum, sum};
    if (CHECK_EQ_INT(rill_session_run(sess, &x, &xv, 1, twice, out, 2, NULL, 0, s), RILL_OK)) {
        CHECK(out[0] != NULL && out[1] != NULL);
        CHECK_NEAR(at(out[0], 1), 7, 0);
        CHECK_NEAR(at(out[1], 1), 7, 0);
        rill_tensor_free(out[0]);
        rill_tensor_free(out[1]);
    }
    /* Fetching a fed tensor returns the fed value. */
    rill_tensor *fx = run1(sess, &x, &xv, 1, x, s);
    CHECK_NEAR(at(fx, 2), 3, 0);
    rill_tensor_free(fx);
    /* A fetched tensor is the caller's: later runs never change it. */
    rill_tensor *keep = run1(sess, &x, &xv, 1, sum, s);
    float *xd = rill_tensor_data(xv);
    xd[0] = 100;
    rill_tensor *next = run1(sess, &x, &xv, 1, sum, s);
    CHECK_NEAR(at(keep, 0), 4, 0);
    CHECK_NEAR(at(next, 0), 301, 0);
    rill_tensor_free(keep);
    rill_tensor_free(next);
    rill_tensor_free(xv);
    rill_session_free(sess);
out:
    rill_status_free(s);
    rill_graph_free(g);
}

static void test_control_dependencies_and_targets(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output v =
        rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_zeros_initializer(), false, "v");
    rill_output one = rill_const_float(g, 1, "one");
    rill_output inc = rill_assign_add(g, v, one, "inc");
    /* The read must see the increment: it runs after inc, whatever the data edges say. */
    rill_graph_push_control_dependencies(g, &inc.node, 1);
    rill_output read_after = rill_identity(g, v, "read_after");
    rill_output doubled = rill_mul(g, v, rill_const_float(g, 2, NULL), "doubled");
    rill_graph_pop_control_dependencies(g);
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_session *sess = new_session(g, s);
    if (!sess) goto out;
    CHECK_EQ_INT(rill_session_run_targets(sess, &init, 1, s), RILL_OK);

    for (int step = 1; step <= 3; step++) {
        rill_tensor *r = run1(sess, NULL, NULL, 0, read_after, s);
        CHECK_NEAR(at(r, 0), step, 0);
        rill_tensor_free(r);
    }
    rill_tensor *d = run1(sess, NULL, NULL, 0, doubled, s);
    CHECK_NEAR(at(d, 0), 8, 0); /* inc ran once more: v = 4 */
    rill_tensor_free(d);

    /* Targets run without being fetched; fetches alone do not run unrelated targets. */
    CHECK_EQ_INT(rill_session_run_targets(sess, &inc.node, 1, s), RILL_OK);
    rill_tensor *now = run1(sess, NULL, NULL, 0, v, s);
    CHECK_NEAR(at(now, 0), 5, 0);
    rill_tensor_free(now);
    now = run1(sess, NULL, NULL, 0, v, s);
    CHECK_NEAR(at(now, 0), 5, 0); /* reading v alone runs nothing else */
    rill_tensor_free(now);

    /* A fetch and a target together; the fetched read is ordered after the target by its
     * control dependency. */
    rill_tensor *fv = NULL;
    rill_node *targets[] = {inc.node};
    if (CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &read_after, &fv, 1, targets, 1, s),
                     RILL_OK))
        CHECK_NEAR(at(fv, 0), 6, 0); /* inc runs once per step even when named twice */
    rill_tensor_free(fv);

    /* A NoOp group as a target runs all its members. */
    rill_output w =
        rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_zeros_initializer(), false, "w");
    rill_output incw = rill_assign_add(g, w, one, "incw");
    rill_output incv = rill_assign_add(g, v, one, "incv");
    rill_node *members[] = {incw.node, incv.node};
    rill_node *both = rill_group(g, members, 2, "both");
    rill_node *initw = rill_variable_initializer(w);
    CHECK(rill_graph_ok(g));
    CHECK_EQ_INT(rill_session_run_targets(sess, &initw, 1, s), RILL_OK);
    CHECK_EQ_INT(rill_session_run_targets(sess, &both, 1, s), RILL_OK);
    rill_output wv[] = {w, v};
    rill_tensor *vals[2];
    if (CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, wv, vals, 2, NULL, 0, s), RILL_OK)) {
        CHECK_NEAR(at(vals[0], 0), 1, 0);
        CHECK_NEAR(at(vals[1], 0), 7, 0);
        rill_tensor_free(vals[0]);
        rill_tensor_free(vals[1]);
    }

    /* Chains of control dependencies order side effects: c = v * 10 after two increments. */
    rill_output set5 = rill_assign(g, v, rill_const_float(g, 5, NULL), "set5");
    rill_graph_push_control_dependencies(g, &set5.node, 1);
    rill_output add1 = rill_assign_add(g, v, one, "add1");
    rill_graph_pop_control_dependencies(g);
    rill_graph_push_control_dependencies(g, &add1.node, 1);
    rill_output times10 = rill_mul(g, v, rill_const_float(g, 10, NULL), "times10");
    rill_graph_pop_control_dependencies(g);
    CHECK(rill_graph_ok(g));
    rill_tensor *t10 = run1(sess, NULL, NULL, 0, times10, s);
    CHECK_NEAR(at(t10, 0), 60, 0);
    rill_tensor_free(t10);
    rill_session_free(sess);
out:
    rill_status_free(s);
    rill_graph_free(g);
}

static void test_feed_intermediate(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(2), "x");
    rill_output a = rill_mul(g, x, rill_const_float(g, 2, NULL), "a");
    rill_output b = rill_add(g, a, rill_const_float(g, 1, NULL), "b");
    rill_output c = rill_add(g, b, a, "c");
    rill_session *sess = new_session(g, s);
    if (!sess) goto out;

    /* Feeding a (not a placeholder) prunes its producer: x need not be fed, and the fed value
     * is used instead of what mul would compute. */
    rill_tensor *av = vec((float[]){10, 20}, 2);
    rill_tensor *bv = run1(sess, &a, &av, 1, b, s);
    CHECK_NEAR(at(bv, 0), 11, 0);
    CHECK_NEAR(at(bv, 1), 21, 0);
    rill_tensor_free(bv);
    rill_tensor *cv = run1(sess, &a, &av, 1, c, s);
    CHECK_NEAR(at(cv, 0), 21, 0);
    CHECK_NEAR(at(cv, 1), 41, 0);
    rill_tensor_free(cv);

    /* Fed x and fed a together: a's feed wins over its producer. */
    rill_tensor *xv = vec((float[]){1, 1}, 2);
    rill_output feeds[] = {x, a};
    rill_tensor *vals[] = {xv, av};
    rill_tensor *both = run1(sess, feeds, vals, 2, b, s);
    CHECK_NEAR(at(both, 0), 11, 0);
    rill_tensor_free(both);

    /* Without the feed, x is required again. */
    rill_tensor *none = NULL;
    CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, &b, &none, 1, NULL, 0, s),
                 RILL_INVALID_ARGUMENT);
    CHECK(none == NULL);
    CHECK_STR_CONTAINS(rill_status_message(s), "placeholder tensor 'x'");
    rill_tensor *normal = run1(sess, &x, &xv, 1, b, s);
    CHECK_NEAR(at(normal, 0), 3, 0);
    rill_tensor_free(normal);

    /* Feeding a constant's output replaces the constant. */
    rill_output k = rill_const_float(g, 7, "k");
    rill_output k2 = rill_mul(g, k, k, "k2");
    rill_tensor *three = rill_tensor_scalar_float(3);
    rill_tensor *kv = run1(sess, &k, &three, 1, k2, s);
    CHECK_NEAR(at(kv, 0), 9, 0);
    rill_tensor_free(kv);
    kv = run1(sess, NULL, NULL, 0, k2, s);
    CHECK_NEAR(at(kv, 0), 49, 0);
    rill_tensor_free(kv);
    rill_tensor_free(three);
    rill_tensor_free(xv);
    rill_tensor_free(av);
    rill_session_free(sess);
out:
    rill_status_free(s);
    rill_graph_free(g);
}

static void test_plan_cache(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "x");
    rill_output y = rill_square(g, x, "y");
    rill_output z = rill_neg(g, y, "z");
    rill_session *sess = new_session(g, s);
    if (!sess) goto out;
    CHECK_EQ_INT(rill_session_num_plans(sess), 0);
    rill_tensor *xv = rill_tensor_scalar_float(3);
    for (int i = 0; i < 10; i++) rill_tensor_free(run1(sess, &x, &xv, 1, y, s));
    CHECK_EQ_INT(rill_session_num_plans(sess), 1);
    rill_tensor *zv = run1(sess, &x, &xv, 1, z, s);
    CHECK_NEAR(at(zv, 0), -9, 0);
    rill_tensor_free(zv);
    CHECK_EQ_INT(rill_session_num_plans(sess), 2);
    for (int i = 0; i < 5; i++) {
        rill_tensor_free(run1(sess, &x, &xv, 1, y, s));
        rill_tensor_free(run1(sess, &x, &xv, 1, z, s));
    }
    CHECK_EQ_INT(rill_session_num_plans(sess), 2);
    /* Another fetch set (two fetches) is another plan. */
    rill_output yz[] = {y, z};
    rill_tensor *out[2];
    if (CHECK_EQ_INT(rill_session_run(sess, &x, &xv, 1, yz, out, 2, NULL, 0, s), RILL_OK)) {
        CHECK_NEAR(at(out[0], 0), 9, 0);
        CHECK_NEAR(at(out[1], 0), -9, 0);
        rill_tensor_free(out[0]);
        rill_tensor_free(out[1]);
    }
    CHECK_EQ_INT(rill_session_num_plans(sess), 3);
    /* Nodes added after the session was made can be run: a new plan. */
    rill_output w = rill_add(g, z, y, "w");
    rill_tensor *wv = run1(sess, &x, &xv, 1, w, s);
    CHECK_NEAR(at(wv, 0), 0, 0);
    rill_tensor_free(wv);
    CHECK_EQ_INT(rill_session_num_plans(sess), 4);
    /* A failed plan is not cached. */
    rill_tensor *bad = NULL;
    rill_output missing = {z.node, 5};
    CHECK(rill_session_run(sess, NULL, NULL, 0, &missing, &bad, 1, NULL, 0, s) != RILL_OK);
    CHECK_EQ_INT(rill_session_num_plans(sess), 4);
    rill_tensor_free(xv);
    rill_session_free(sess);
out:
    rill_status_free(s);
    rill_graph_free(g);
}

static void test_variables_and_sessions(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output counter = rill_variable(g, RILL_INT32, rill_shape_scalar(),
                                        rill_constant_initializer(10), false, "counter");
    rill_output step =
        rill_assign_add(g, counter, rill_const_scalar(g, RILL_INT32, 1, NULL), "step");
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_session *s1 = new_session(g, s);
    rill_session *s2 = new_session(g, s);
    if (!s1 || !s2) goto out;
    CHECK(s1 != s2);
    CHECK_EQ_INT(rill_session_run_targets(s1, &init, 1, s), RILL_OK);
    CHECK_EQ_INT(rill_session_run_targets(s2, &init, 1, s), RILL_OK);
    for (int i = 1; i <= 5; i++) {
        rill_tensor *t = run1(s1, NULL, NULL, 0, step, s);
        CHECK_EQ_INT((int)rill_tensor_get_double(t, 0), 10 + i); /* persists across runs */
        rill_tensor_free(t);
    }
    rill_tensor *t2 = run1(s2, NULL, NULL, 0, step, s);
    CHECK_EQ_INT((int)rill_tensor_get_double(t2, 0), 11); /* s2's variable is its own */
    rill_tensor_free(t2);
    rill_tensor *t1 = run1(s1, NULL, NULL, 0, counter, s);
    CHECK_EQ_INT((int)rill_tensor_get_double(t1, 0), 15);
    rill_tensor_free(t1);

    /* A fetched variable value is a snapshot: later updates do not change it. */
    rill_tensor *snap = run1(s1, NULL, NULL, 0, counter, s);
    rill_tensor_free(run1(s1, NULL, NULL, 0, step, s));
    CHECK_EQ_INT((int)rill_tensor_get_double(snap, 0), 15);
    rill_tensor_free(snap);

    /* Re-running the initializer resets. */
    CHECK_EQ_INT(rill_session_run_targets(s1, &init, 1, s), RILL_OK);
    t1 = run1(s1, NULL, NULL, 0, counter, s);
    CHECK_EQ_INT((int)rill_tensor_get_double(t1, 0), 10);
    rill_tensor_free(t1);

    /* A third session starts uninitialised. */
    rill_session *s3 = new_session(g, s);
    rill_tensor *u = NULL;
    CHECK_EQ_INT(rill_session_run(s3, NULL, NULL, 0, &counter, &u, 1, NULL, 0, s),
                 RILL_FAILED_PRECONDITION);
    rill_session_free(s3);
out:
    rill_session_free(s1);
    rill_session_free(s2);
    rill_status_free(s);
    rill_graph_free(g);
}

/* The seed's model: pred = x*w + b, loss = square(y - pred), gradient descent. */
static void test_steady_state_allocates_nothing(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output gs = rill_train_get_or_create_global_step(g);
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "input");
    rill_output y = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "label");
    rill_output w = rill_get_variable(g, "weight", RILL_FLOAT, rill_shape_vector(1),
                                      rill_constant_initializer(0.5), true);
    rill_output b = rill_get_variable(g, "biase", RILL_FLOAT, rill_shape_vector(1),
                                      rill_constant_initializer(-0.5), true);
    rill_output pred = rill_add(g, rill_mul(g, x, w, NULL), b, NULL);
    rill_output loss = rill_square(g, rill_sub(g, y, pred, NULL), NULL);
    rill_optimizer *opt = rill_gradient_descent_optimizer_new(0.01);
    rill_node *train = rill_optimizer_minimize(opt, g, loss, gs, NULL);
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_session *sess = new_session(g, s);
    if (!sess || !CHECK(train != NULL)) goto out;
    CHECK_EQ_INT(rill_session_run_targets(sess, &init, 1, s), RILL_OK);

    rill_tensor *xv = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    rill_tensor *yv = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    float *xp = rill_tensor_data(xv), *yp = rill_tensor_data(yv);
    rill_output feeds[] = {x, y};
    rill_tensor *vals[] = {xv, yv};
    int failures = 0;
    float first_loss = 0, last_loss = 0;
    uint64_t before = 0;
    for (int i = 0; i < 103; i++) {
        if (i == 3) before = rill__alloc_count(); /* after a few warm-up steps */
        xp[0] = (float)((i % 7) - 3) / 3.0f;
        yp[0] = 2 * xp[0] + 10;
        rill_tensor *lv = NULL;
        if (rill_session_run(sess, feeds, vals, 2, &loss, &lv, 1, &train, 1, s) != RILL_OK) {
            failures++;
            continue;
        }
        if (i == 0) first_loss = *(float *)rill_tensor_data(lv);
        last_loss = *(float *)rill_tensor_data(lv);
        rill_tensor_free(lv);
    }
    uint64_t allocs = rill__alloc_count() - before;
    CHECK_EQ_INT(failures, 0);
    CHECK_EQ_INT(allocs, 0);
    CHECK(last_loss < first_loss);                 /* it trains */
    CHECK_EQ_INT(rill_session_num_plans(sess), 2); /* init, and the step */

    rill_tensor *step = run1(sess, NULL, NULL, 0, gs, s);
    CHECK_EQ_INT((int64_t)rill_tensor_get_double(step, 0), 103);
    rill_tensor_free(step);
    rill_tensor_free(xv);
    rill_tensor_free(yv);
out:
    rill_session_free(sess);
    rill_optimizer_free(opt);
    rill_status_free(s);
    rill_graph_free(g);
}

/* --- concurrency --- */

typedef struct worker_arg {
    rill_session *sess;
    rill_output x, y, z;
    int id;
    int errors;
    int wrong;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *a = p;
    rill_status *s = rill_status_new();
    rill_tensor *xv = rill_tensor_new(RILL_FLOAT, (int64_t[]){4, 8}, 2);
    float *xd = rill_tensor_data(xv);
    for (int it = 0; it < 200; it++) {
        float base = (float)(a->id * 1000 + it);
        for (int i = 0; i < 32; i++) xd[i] = base + (float)i;
        /* Alternate between two fetch sets so plans are shared and built concurrently. */
        rill_output fetches[] = {a->y, a->z};
        rill_tensor *out[2] = {NULL, NULL};
        int nf = it % 3 == 0 ? 2 : 1;
        if (rill_session_run(a->sess, &a->x, &xv, 1, fetches, out, nf, NULL, 0, s) != RILL_OK) {
            a->errors++;
            continue;
        }
        /* y = x * 2 + 1 elementwise, z = sum over rows of y: [8] */
        for (int i = 0; i < 32; i++)
            if (((float *)rill_tensor_data(out[0]))[i] != (base + (float)i) * 2 + 1) a->wrong++;
        if (nf == 2)
            for (int j = 0; j < 8; j++) {
                float want = 0;
                for (int r = 0; r < 4; r++) want += (base + (float)(r * 8 + j)) * 2 + 1;
                if (((float *)rill_tensor_data(out[1]))[j] != want) a->wrong++;
            }
        rill_tensor_free(out[0]);
        rill_tensor_free(out[1]);
    }
    rill_tensor_free(xv);
    rill_status_free(s);
    return NULL;
}

static void test_concurrent_runs(void)
{
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(4, 8), "x");
    rill_output y = rill_add(g, rill_mul(g, x, rill_const_float(g, 2, NULL), NULL),
                             rill_const_float(g, 1, NULL), "y");
    rill_output z = rill_sum(g, y, (int[]){0}, 1, false, "z");
    rill_session *sess = new_session(g, s);
    if (!sess) goto out;
    enum { NT = 8 };
    pthread_t th[NT];
    worker_arg args[NT];
    for (int i = 0; i < NT; i++) {
        args[i] = (worker_arg){.sess = sess, .x = x, .y = y, .z = z, .id = i};
        pthread_create(&th[i], NULL, worker, &args[i]);
    }
    int errors = 0, wrong = 0;
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        errors += args[i].errors;
        wrong += args[i].wrong;
    }
    CHECK_EQ_INT(errors, 0);
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(rill_session_num_plans(sess), 2);
    rill_session_free(sess);
out:
    rill_status_free(s);
    rill_graph_free(g);
}

/* Sixteen independent 96x96 MatMuls (expensive enough for the inter-op pool) that all become
 * ready at once, when their shared input is produced: the executor keeps one on the calling
 * thread and hands the others to the pool. */
static void fill_random(float *data, int n, unsigned *seed)
{
    for (int i = 0; i < n; i++) {
        *seed = *seed * 1103515245u + 12345u;
        data[i] = (float)((*seed >> 16) % 1000) / 500.0f - 1.0f;
    }
}

static rill_output wide_graph(rill_graph *g, rill_output *parts, int nparts)
{
    const int n = 96;
    float *data = malloc(sizeof(float) * (size_t)(n * n));
    unsigned seed = 12345;
    fill_random(data, n * n, &seed);
    /* Created first, so its Const is the root the caller runs last. */
    rill_output shared = rill_identity(
        g, rill_const_floats(g, data, (int64_t[]){n, n}, 2, "shared_value"), "shared");
    for (int p = 0; p < nparts; p++) {
        fill_random(data, n * n, &seed);
        rill_output b = rill_const_floats(g, data, (int64_t[]){n, n}, 2, NULL);
        parts[p] = rill_relu(g, rill_matmul(g, shared, b, false, p % 2 == 1, NULL), NULL);
    }
    free(data);
    return rill_add_n(g, parts, nparts, "total");
}

static void test_inter_op_pool_matches_single_thread(void)
{
    enum { NP = 16 };
    rill_graph *g = rill_graph_new();
    rill_status *s = rill_status_new();
    rill_output parts[NP];
    rill_output total = wide_graph(g, parts, NP);
    if (!CHECK(rill_graph_ok(g))) goto out;
    rill_session_options *one = rill_session_options_new();
    rill_session_options_set_inter_op_threads(one, 1);
    rill_session_options *many = rill_session_options_new();
    rill_session_options_set_inter_op_threads(many, 8);
    rill_session *s1 = rill_session_new(g, one, s);
    rill_session *s8 = rill_session_new(g, many, s);
    rill_session_options_free(one);
    rill_session_options_free(many);
    if (!CHECK(s1 && s8)) goto done;

    rill_output fetches[NP + 1];
    for (int i = 0; i < NP; i++) fetches[i] = parts[i];
    fetches[NP] = total;
    rill_tensor *ref[NP + 1], *got[NP + 1];
    if (!CHECK_EQ_INT(rill_session_run(s1, NULL, NULL, 0, fetches, ref, NP + 1, NULL, 0, s),
                      RILL_OK))
        goto done;
    for (int rep = 0; rep < 5; rep++) {
        if (!CHECK_EQ_INT(rill_session_run(s8, NULL, NULL, 0, fetches, got, NP + 1, NULL, 0, s),
                          RILL_OK))
            break;
        int diff = 0;
        for (int i = 0; i <= NP; i++) {
            int64_t n = rill_tensor_num_elements(ref[i]);
            if (n != rill_tensor_num_elements(got[i]) ||
                memcmp(rill_tensor_data(ref[i]), rill_tensor_data(got[i]), (size_t)n * 4) != 0)
                diff++;
            rill_tensor_free(got[i]);
        }
        CHECK_EQ_INT(diff, 0);
    }
    /* Only the sum, too (intermediates released as the step goes). */
    rill_tensor *t = run1(s8, NULL, NULL, 0, total, s);
    if (t) CHECK(memcmp(rill_tensor_data(t), rill_tensor_data(ref[NP]), 96 * 96 * 4) == 0);
    rill_tensor_free(t);
    for (int i = 0; i <= NP; i++) rill_tensor_free(ref[i]);
done:
    rill_session_free(s1);
    rill_session_free(s8);
out:
    rill_status_free(s);
    rill_graph_free(g);
}

int main(void)
{
    test_diamond_and_shared_inputs();
    test_control_dependencies_and_targets();
    test_feed_intermediate();
    test_plan_cache();
    test_variables_and_sessions();
    test_steady_state_allocates_nothing();
    test_concurrent_runs();
    test_inter_op_pool_matches_single_thread();
    TEST_MAIN_END();
}
