/* test_random_ops.c - the random ops (ops_random.c, cpu_random.c): TensorFlow's exact streams
 * for given (seed, seed2) (values TF 2.21's CPU kernels print), the statistics of every
 * distribution in every dtype (mean and variance within bounds a correct generator misses once
 * in millions), seeded determinism across sessions and a new draw each run, seeds derived from
 * the graph's seed as TF derives them, RandomUniformInt's range and frequencies, Multinomial's
 * frequencies against the softmax probabilities, RandomShuffle as a permutation of rows, and
 * TF's errors for bad bounds, dtypes and shapes. */
#include "test.h"

#include <rill/rill.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A graph on the CPU: TF's streams are the CPU kernels' (the OpenCL kernels of RandomUniform,
 * RandomNormal and TruncatedNormal draw rill's own stream, checked in tests/kernels). */
static rill_graph *cpu_graph(void)
{
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/cpu:0");
    return g;
}

static rill_output shape_const(rill_graph *g, const int64_t *dims, int rank)
{
    int64_t r = rank;
    rill_tensor *t = rill_tensor_from_data(RILL_INT64, &r, 1, dims);
    rill_output o = rill_const(g, t, "shape");
    rill_tensor_free(t);
    return o;
}

/* An op over shape input `dims`, dtype attr t, seeds (seed, seed2) (seed2 < 0: attr absent). */
static rill_output rand_op(rill_graph *g, const char *op, rill_dtype t, const int64_t *dims,
                           int rank, int64_t seed, int64_t seed2)
{
    rill_op_builder *b = rill_op_builder_new(g, op, NULL);
    rill_op_builder_add_input(b, shape_const(g, dims, rank));
    rill_op_builder_set_type(b, "dtype", t);
    rill_op_builder_set_int(b, "seed", seed);
    if (seed2 >= 0) rill_op_builder_set_int(b, "seed2", seed2);
    return rill_node_output(rill_op_builder_finish(b), 0);
}

/* Runs fetch `runs` times in one new session; out[i] the i-th result (caller frees). */
static bool run_n(rill_graph *g, rill_output fetch, rill_tensor **out, int runs)
{
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    bool ok = sess != NULL;
    for (int i = 0; ok && i < runs; i++)
        ok = rill_session_run(sess, NULL, NULL, 0, &fetch, &out[i], 1, NULL, 0, s) == RILL_OK;
    if (!ok) fprintf(stderr, "  run failed: %s\n", rill_status_message(s));
    rill_session_free(sess);
    rill_status_free(s);
    return ok;
}

static rill_tensor *run1(rill_graph *g, rill_output fetch)
{
    rill_tensor *t = NULL;
    return run_n(g, fetch, &t, 1) ? t : NULL;
}

static double elem(const rill_tensor *t, int64_t i)
{
    const void *d = rill_tensor_data(t);
    switch (rill_tensor_dtype(t)) {
    case RILL_FLOAT:
        return ((const float *)d)[i];
    case RILL_DOUBLE:
        return ((const double *)d)[i];
    case RILL_HALF:
        return rill_half_to_float(((const rill_half *)d)[i]);
    case RILL_INT32:
        return ((const int32_t *)d)[i];
    default:
        return (double)((const int64_t *)d)[i];
    }
}

static bool same(const rill_tensor *a, const rill_tensor *b)
{
    return a && b && rill_tensor_num_elements(a) == rill_tensor_num_elements(b) &&
           memcmp(rill_tensor_data(a), rill_tensor_data(b),
                  (size_t)rill_tensor_num_elements(a) * rill_dtype_size(rill_tensor_dtype(a))) == 0;
}

/* TF 2.21: tf.set_random_seed(2); tf.random_normal([8], seed=1) and tf.random_uniform([8],
 * seed=1), both (seed, seed2) = (2, 1); then the same ops' second run. */
static void test_tf_stream(void)
{
    static const float normal[8] = {
        1.188279390335083f,   -1.2064299583435059f,  0.04821338132023811f, 1.0647926330566406f,
        0.23481535911560059f, -0.47096121311187744f, 0.2812858521938324f,  0.5448442101478577f};
    static const float uniform[8] = {
        0.23841547966003418f, 0.37620627880096436f, 0.566627025604248f,  0.007201552391052246f,
        0.8706881999969482f,  0.426388144493103f,   0.8286242485046387f, 0.07584965229034424f};
    const int64_t n8 = 8;
    rill_graph *g = cpu_graph();
    rill_output rn = rand_op(g, "RandomStandardNormal", RILL_FLOAT, &n8, 1, 2, 1);
    rill_output ru = rand_op(g, "RandomUniform", RILL_FLOAT, &n8, 1, 2, 1);
    CHECK(rill_graph_ok(g));
    rill_tensor *a = run1(g, rn), *b = run1(g, ru);
    int bad = 0;
    for (int i = 0; a && b && i < 8; i++)
        bad += ((float *)rill_tensor_data(a))[i] != normal[i] ||
               ((float *)rill_tensor_data(b))[i] != uniform[i];
    CHECK(a && b);
    CHECK_EQ_INT(bad, 0);
    for (int i = 0; bad && i < 8; i++)
        fprintf(stderr, "  [%d] %.9g %.9g\n", i, ((float *)rill_tensor_data(a))[i],
                ((float *)rill_tensor_data(b))[i]);
    rill_tensor_free(a);
    rill_tensor_free(b);
    /* the first 8 of a longer draw are the same numbers: elements map to fixed counters */
    const int64_t n1000 = 1000;
    rill_output big = rand_op(g, "RandomStandardNormal", RILL_FLOAT, &n1000, 1, 2, 1);
    rill_tensor *c = run1(g, big);
    CHECK(c && memcmp(rill_tensor_data(c), normal, sizeof normal) == 0);
    rill_tensor_free(c);
    rill_graph_free(g);
}

typedef struct stats {
    double mean, var, min, max;
} stats;

static stats stats_of(const rill_tensor *t)
{
    stats st = {0, 0, INFINITY, -INFINITY};
    int64_t n = rill_tensor_num_elements(t);
    for (int64_t i = 0; i < n; i++) {
        double v = elem(t, i);
        st.mean += v;
        if (v < st.min) st.min = v;
        if (v > st.max) st.max = v;
    }
    st.mean /= (double)n;
    for (int64_t i = 0; i < n; i++) st.var += (elem(t, i) - st.mean) * (elem(t, i) - st.mean);
    st.var /= (double)(n - 1);
    return st;
}

static void test_statistics(void)
{
    /* 2e5 draws: the mean's standard error is var^0.5 / 447; bounds at about 6 of them */
    const int64_t dims[2] = {400, 500};
    const rill_dtype types[3] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};
    /* variance of N(0,1) truncated to (-2, 2) */
    const double tvar = 1 - 4 * exp(-2) / sqrt(2 * M_PI) / erf(2 / sqrt(2));
    for (int k = 0; k < 3; k++) {
        rill_graph *g = cpu_graph();
        rill_output n = rand_op(g, "RandomStandardNormal", types[k], dims, 2, 7, 3);
        rill_output u = rand_op(g, "RandomUniform", types[k], dims, 2, 7, 4);
        rill_output tn = rand_op(g, "TruncatedNormal", types[k], dims, 2, 7, 5);
        CHECK(rill_output_shape(n).rank == 2 && rill_output_shape(n).dims[1] == 500);
        rill_tensor *a = run1(g, n), *b = run1(g, u), *c = run1(g, tn);
        if (!CHECK(a && b && c)) continue;
        CHECK(rill_tensor_dtype(a) == types[k] && rill_tensor_num_elements(a) == 200000);
        stats sn = stats_of(a), su = stats_of(b), st = stats_of(c);
        CHECK_NEAR(sn.mean, 0, 0.015);
        CHECK_NEAR(sn.var, 1, 0.02);
        CHECK(sn.min < -3.5 && sn.max > 3.5);
        CHECK_NEAR(su.mean, 0.5, 0.004);
        CHECK_NEAR(su.var, 1.0 / 12, 0.002);
        CHECK(su.min >= 0 && su.max < 1);
        CHECK_NEAR(st.mean, 0, 0.012);
        CHECK_NEAR(st.var, tvar, 0.015);
        /* half rounds values next to 2 up to 2 */
        double lim = types[k] == RILL_HALF ? 2.0001 : 2;
        CHECK(st.min > -lim && st.max < lim && st.min < -1.95 && st.max > 1.95);
        rill_tensor_free(a);
        rill_tensor_free(b);
        rill_tensor_free(c);
        rill_graph_free(g);
    }
    /* rill's RandomNormal / RandomUniform (shape, mean/stddev or range as attrs) */
    rill_graph *g = cpu_graph();
    rill_shape sh = {.rank = 1, .dims = {100000}};
    rill_output n = rill_random_normal(g, RILL_FLOAT, sh, 3.0, 0.5, 11, NULL);
    rill_output u = rill_random_uniform(g, RILL_DOUBLE, sh, -2.0, 6.0, 12, NULL);
    rill_output tn = rill_truncated_normal(g, RILL_FLOAT, sh, -1.0, 2.0, 13, NULL);
    rill_tensor *a = run1(g, n), *b = run1(g, u), *c = run1(g, tn);
    if (CHECK(a && b && c)) {
        stats sn = stats_of(a), su = stats_of(b), st = stats_of(c);
        CHECK_NEAR(sn.mean, 3.0, 0.01);
        CHECK_NEAR(sn.var, 0.25, 0.01);
        CHECK_NEAR(su.mean, 2.0, 0.05);
        CHECK_NEAR(su.var, 64.0 / 12, 0.1);
        CHECK(su.min >= -2 && su.max < 6);
        CHECK_NEAR(st.mean, -1.0, 0.03);
        CHECK_NEAR(st.var, 4 * tvar, 0.08);
        CHECK(st.min > -5 && st.max < 3);
    }
    rill_tensor_free(a);
    rill_tensor_free(b);
    rill_tensor_free(c);
    rill_graph_free(g);
}

static void test_determinism(void)
{
    const int64_t n = 64;
    rill_graph *g = cpu_graph();
    rill_output a = rand_op(g, "RandomStandardNormal", RILL_FLOAT, &n, 1, 5, 9);
    rill_output b = rand_op(g, "RandomStandardNormal", RILL_FLOAT, &n, 1, 5, 10);
    rill_output c = rand_op(g, "RandomStandardNormal", RILL_FLOAT, &n, 1, 0, 0); /* unseeded */
    rill_tensor *a1[2] = {0}, *a2[2] = {0}, *b1 = run1(g, b), *c1 = run1(g, c), *c2 = run1(g, c);
    CHECK(run_n(g, a, a1, 2) && run_n(g, a, a2, 2));
    CHECK(same(a1[0], a2[0]) && same(a1[1], a2[1])); /* every session repeats the sequence */
    CHECK(a1[0] && a1[1] && !same(a1[0], a1[1]));    /* and each run draws anew */
    CHECK(b1 && !same(a1[0], b1));                   /* another seed, other numbers */
    CHECK(c1 && c2 && !same(c1, c2));                /* (0, 0): seeded by the OS */
    for (int i = 0; i < 2; i++) {
        rill_tensor_free(a1[i]);
        rill_tensor_free(a2[i]);
    }
    rill_tensor_free(b1);
    rill_tensor_free(c1);
    rill_tensor_free(c2);
    rill_graph_free(g);
}

/* TF's get_seed: op seed only -> (87654321, op seed); graph seed -> (graph seed, op seed), or
 * (graph seed, k) for the k-th op (from 0) that took the graph's seed. */
static void test_derived_seeds(void)
{
    const int64_t n = 16;
    rill_graph *g = cpu_graph();
    rill_output only_op = rand_op(g, "RandomUniform", RILL_FLOAT, &n, 1, 42, -1);
    rill_output explicit_ = rand_op(g, "RandomUniform", RILL_FLOAT, &n, 1, 87654321, 42);
    rill_graph_set_seed(g, 3);
    rill_output first = rand_op(g, "RandomUniform", RILL_FLOAT, &n, 1, 0, -1);
    rill_output second = rand_op(g, "RandomUniform", RILL_FLOAT, &n, 1, 0, -1);
    rill_output with_op = rand_op(g, "RandomUniform", RILL_FLOAT, &n, 1, 8, -1);
    rill_output e0 = rand_op(g, "RandomUniform", RILL_FLOAT, &n, 1, 3, 0);
    rill_output e1 = rand_op(g, "RandomUniform", RILL_FLOAT, &n, 1, 3, 1);
    rill_output e8 = rand_op(g, "RandomUniform", RILL_FLOAT, &n, 1, 3, 8);
    rill_output fs[8] = {only_op, explicit_, first, second, with_op, e0, e1, e8};
    rill_tensor *t[8];
    for (int i = 0; i < 8; i++) t[i] = run1(g, fs[i]);
    CHECK(same(t[0], t[1]));
    CHECK(same(t[2], t[5]));
    CHECK(same(t[3], t[6]));
    CHECK(same(t[4], t[7]));
    CHECK(!same(t[2], t[3]));
    for (int i = 0; i < 8; i++) rill_tensor_free(t[i]);
    rill_graph_free(g);
}

static rill_output uniform_int(rill_graph *g, rill_dtype t, const int64_t *dims, int rank,
                               double lo, double hi, int64_t seed)
{
    rill_op_builder *b = rill_op_builder_new(g, "RandomUniformInt", "rui");
    rill_op_builder_add_input(b, shape_const(g, dims, rank));
    rill_op_builder_add_input(b, rill_const_scalar(g, t, lo, "lo"));
    rill_op_builder_add_input(b, rill_const_scalar(g, t, hi, "hi"));
    rill_op_builder_set_int(b, "seed", seed);
    rill_op_builder_set_int(b, "seed2", 1);
    return rill_node_output(rill_op_builder_finish(b), 0);
}

static void test_uniform_int(void)
{
    const int64_t n = 70000;
    for (int k = 0; k < 2; k++) {
        rill_dtype t = k ? RILL_INT64 : RILL_INT32;
        rill_graph *g = cpu_graph();
        rill_output o = uniform_int(g, t, &n, 1, -3, 4, 6);
        CHECK(rill_output_dtype(o) == t);
        rill_tensor *r = run1(g, o);
        if (!CHECK(r != NULL)) continue;
        int64_t count[7] = {0}, out = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t v = (int64_t)elem(r, i);
            if (v < -3 || v >= 4)
                out++;
            else
                count[v + 3]++;
        }
        CHECK_EQ_INT(out, 0);
        for (int i = 0; i < 7; i++) CHECK_NEAR((double)count[i] / (double)n, 1.0 / 7, 0.006);
        rill_tensor_free(r);
        rill_graph_free(g);
    }
    /* TF's values: tf.random_uniform([6], 3, 10, dtype=tf.int32) with seeds (2, 6) */
    rill_graph *g = cpu_graph();
    const int64_t six = 6;
    rill_op_builder *b = rill_op_builder_new(g, "RandomUniformInt", "tfint");
    rill_op_builder_add_input(b, shape_const(g, &six, 1));
    rill_op_builder_add_input(b, rill_const_scalar(g, RILL_INT32, 3, "lo"));
    rill_op_builder_add_input(b, rill_const_scalar(g, RILL_INT32, 10, "hi"));
    rill_op_builder_set_int(b, "seed", 2);
    rill_op_builder_set_int(b, "seed2", 6);
    rill_tensor *r = run1(g, rill_node_output(rill_op_builder_finish(b), 0));
    static const int32_t want[6] = {3, 9, 5, 8, 7, 4};
    CHECK(r && memcmp(rill_tensor_data(r), want, sizeof want) == 0);
    if (r && memcmp(rill_tensor_data(r), want, sizeof want) != 0)
        for (int i = 0; i < 6; i++)
            fprintf(stderr, "  [%d] %d\n", i, ((int32_t *)rill_tensor_data(r))[i]);
    rill_tensor_free(r);
    rill_graph_free(g);
    /* minval >= maxval: TF's error at run time */
    g = cpu_graph();
    rill_output o = uniform_int(g, RILL_INT32, &six, 1, 5, 5, 1);
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    rill_tensor *t = NULL;
    CHECK(rill_session_run(sess, NULL, NULL, 0, &o, &t, 1, NULL, 0, s) == RILL_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(rill_status_message(s), "Need minval < maxval, got 5 >= 5");
    rill_session_free(sess);
    rill_status_free(s);
    rill_graph_free(g);
    /* float bounds: not an allowed Tout */
    g = cpu_graph();
    uniform_int(g, RILL_FLOAT, &six, 1, 0, 1, 1);
    CHECK(!rill_graph_ok(g));
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)), "attr 'Tout'");
    rill_graph_free(g);
}

static rill_output multinomial(rill_graph *g, const float *logits, int64_t rows, int64_t cols,
                               int num_samples, rill_dtype out)
{
    rill_op_builder *b = rill_op_builder_new(g, "Multinomial", NULL);
    rill_op_builder_add_input(b, rill_const_floats(g, logits, (int64_t[]){rows, cols}, 2, "l"));
    rill_op_builder_add_input(b, rill_const_scalar(g, RILL_INT32, num_samples, "n"));
    rill_op_builder_set_type(b, "output_dtype", out);
    rill_op_builder_set_int(b, "seed", 4);
    rill_op_builder_set_int(b, "seed2", 2);
    return rill_node_output(rill_op_builder_finish(b), 0);
}

static void test_multinomial(void)
{
    const double p[2][4] = {{0.1, 0.2, 0.3, 0.4}, {0.5, 0.0, 0.25, 0.25}};
    float logits[8];
    for (int i = 0; i < 8; i++) {
        double v = p[i / 4][i % 4];
        logits[i] = v > 0 ? (float)log(v) + 3.0f : -INFINITY; /* any shift: softmax */
    }
    const int ns = 40000;
    rill_graph *g = cpu_graph();
    rill_output o = multinomial(g, logits, 2, 4, ns, RILL_INT32);
    rill_shape sh = rill_output_shape(o);
    CHECK(sh.rank == 2 && sh.dims[0] == 2 && sh.dims[1] == ns &&
          rill_output_dtype(o) == RILL_INT32);
    rill_tensor *r = run1(g, o);
    if (CHECK(r != NULL)) {
        for (int row = 0; row < 2; row++) {
            int64_t count[4] = {0};
            for (int j = 0; j < ns; j++) count[(int)elem(r, row * ns + j)]++;
            for (int c = 0; c < 4; c++) CHECK_NEAR((double)count[c] / ns, p[row][c], 0.012);
            CHECK_EQ_INT(count[row == 1 ? 1 : 0] == 0, row == 1); /* -inf: never drawn */
        }
    }
    rill_tensor_free(r);
    rill_graph_free(g);
    /* TF: tf.multinomial([[0., 1., 2.], [1., 1., -1.]], 10) with seeds (2, 9) */
    const float l2[6] = {0, 1, 2, 1, 1, -1};
    static const int64_t want[20] = {2, 1, 2, 2, 2, 2, 1, 2, 2, 2, 0, 1, 1, 0, 0, 1, 1, 1, 1, 0};
    g = cpu_graph();
    rill_op_builder *b = rill_op_builder_new(g, "Multinomial", NULL);
    rill_op_builder_add_input(b, rill_const_floats(g, l2, (int64_t[]){2, 3}, 2, "l"));
    rill_op_builder_add_input(b, rill_const_scalar(g, RILL_INT32, 10, "n"));
    rill_op_builder_set_int(b, "seed", 2);
    rill_op_builder_set_int(b, "seed2", 9);
    r = run1(g, rill_node_output(rill_op_builder_finish(b), 0));
    CHECK(r && rill_tensor_dtype(r) == RILL_INT64 &&
          memcmp(rill_tensor_data(r), want, sizeof want) == 0);
    if (r && memcmp(rill_tensor_data(r), want, sizeof want) != 0)
        for (int i = 0; i < 20; i++) fprintf(stderr, " %lld", (long long)elem(r, i));
    rill_tensor_free(r);
    rill_graph_free(g);
    /* logits must be a matrix */
    g = cpu_graph();
    b = rill_op_builder_new(g, "Multinomial", "m");
    rill_op_builder_add_input(b, rill_const_floats(g, l2, (int64_t[]){6}, 1, "l"));
    rill_op_builder_add_input(b, rill_const_scalar(g, RILL_INT32, 10, "n"));
    rill_op_builder_finish(b);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)),
                       "Shape must be rank 2 but is rank 1 for 'm' (op: 'Multinomial')");
    rill_graph_free(g);
}

static void test_shuffle(void)
{
    enum { ROWS = 50, COLS = 3 };
    float x[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++) x[i] = (float)i;
    rill_graph *g = cpu_graph();
    rill_op_builder *b = rill_op_builder_new(g, "RandomShuffle", NULL);
    rill_op_builder_add_input(b, rill_const_floats(g, x, (int64_t[]){ROWS, COLS}, 2, "x"));
    rill_op_builder_set_int(b, "seed", 1);
    rill_op_builder_set_int(b, "seed2", 2);
    rill_output o = rill_node_output(rill_op_builder_finish(b), 0);
    rill_tensor *r[2] = {0};
    CHECK(run_n(g, o, r, 2));
    for (int k = 0; k < 2 && r[k]; k++) {
        const float *y = rill_tensor_data(r[k]);
        bool seen[ROWS] = {0}, rows_whole = true;
        int moved = 0;
        for (int i = 0; i < ROWS; i++) {
            int src = (int)y[i * COLS] / COLS;
            seen[src] = true;
            moved += src != i;
            for (int c = 0; c < COLS; c++) rows_whole &= y[i * COLS + c] == (float)(src * COLS + c);
        }
        int nseen = 0;
        for (int i = 0; i < ROWS; i++) nseen += seen[i];
        CHECK(rows_whole);
        CHECK_EQ_INT(nseen, ROWS);
        CHECK(moved > ROWS / 2);
    }
    CHECK(r[0] && r[1] && !same(r[0], r[1]));
    rill_tensor_free(r[0]);
    rill_tensor_free(r[1]);
    rill_graph_free(g);
    /* TF: tf.random_shuffle(np.arange(10)) with seeds (2, 10) */
    int64_t v[10];
    for (int i = 0; i < 10; i++) v[i] = i;
    static const int64_t want[10] = {6, 5, 7, 0, 1, 2, 9, 8, 3, 4};
    g = cpu_graph();
    int64_t ten = 10;
    rill_tensor *vt = rill_tensor_from_data(RILL_INT64, &ten, 1, v);
    b = rill_op_builder_new(g, "RandomShuffle", NULL);
    rill_op_builder_add_input(b, rill_const(g, vt, "v"));
    rill_tensor_free(vt);
    rill_op_builder_set_int(b, "seed", 2);
    rill_op_builder_set_int(b, "seed2", 10);
    rill_tensor *t = run1(g, rill_node_output(rill_op_builder_finish(b), 0));
    CHECK(t && memcmp(rill_tensor_data(t), want, sizeof want) == 0);
    if (t && memcmp(rill_tensor_data(t), want, sizeof want) != 0)
        for (int i = 0; i < 10; i++) fprintf(stderr, " %lld", (long long)elem(t, i));
    rill_tensor_free(t);
    rill_graph_free(g);
}

static void test_errors(void)
{
    const int64_t n = 4;
    rill_graph *g = cpu_graph();
    rand_op(g, "RandomStandardNormal", RILL_INT32, &n, 1, 1, 1);
    CHECK(!rill_graph_ok(g));
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)),
                       "Value for attr 'dtype' of int32 is not in the list of allowed values");
    rill_graph_free(g);
    g = cpu_graph();
    rill_op_builder *b = rill_op_builder_new(g, "RandomUniform", "ru");
    rill_op_builder_add_input(b, rill_const_scalar(g, RILL_FLOAT, 3, "s"));
    rill_op_builder_set_type(b, "dtype", RILL_FLOAT);
    rill_op_builder_finish(b);
    CHECK_STR_CONTAINS(rill_status_message(rill_graph_status(g)),
                       "Value for attr 'T' of float is not in the list of allowed values");
    rill_graph_free(g);
    /* a shape fed at run time: the output's shape comes from the fed value (on any device) */
    g = rill_graph_new();
    rill_output ph = rill_placeholder(g, RILL_INT32, rill_shape_vector(2), "dims");
    b = rill_op_builder_new(g, "RandomUniform", "ru");
    rill_op_builder_add_input(b, ph);
    rill_op_builder_set_type(b, "dtype", RILL_FLOAT);
    rill_output o = rill_node_output(rill_op_builder_finish(b), 0);
    rill_shape sh = rill_output_shape(o);
    CHECK(sh.rank == 2 && sh.dims[0] == -1);
    int32_t dv[2] = {3, 5};
    int64_t two = 2;
    rill_tensor *fv = rill_tensor_from_data(RILL_INT32, &two, 1, dv), *out = NULL;
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(g, NULL, s);
    CHECK(rill_session_run(sess, &ph, &fv, 1, &o, &out, 1, NULL, 0, s) == RILL_OK);
    CHECK(out && rill_tensor_shape(out)->rank == 2 && rill_tensor_shape(out)->dims[1] == 5);
    dv[1] = -1;
    rill_tensor *fv2 = rill_tensor_from_data(RILL_INT32, &two, 1, dv), *out2 = NULL;
    CHECK(rill_session_run(sess, &ph, &fv2, 1, &o, &out2, 1, NULL, 0, s) == RILL_INVALID_ARGUMENT);
    rill_tensor_free(fv);
    rill_tensor_free(fv2);
    rill_tensor_free(out);
    rill_session_free(sess);
    rill_status_free(s);
    rill_graph_free(g);
}

int main(void)
{
    test_tf_stream();
    test_statistics();
    test_determinism();
    test_derived_seeds();
    test_uniform_int();
    test_multinomial();
    test_shuffle();
    test_errors();
    TEST_MAIN_END();
}
