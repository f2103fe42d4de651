/* test_fusion.c - the partitioner's fusion (runtime/partition.c): an MLP (MatMul + BiasAdd + Relu,
 * MatMul + BiasAdd with transpose_b, sparse softmax cross-entropy, gradient descent) trained in
 * two sessions from the same seeded start, one fused and one with RILL_NO_FUSION=1: every loss,
 * every fetched activation and every final variable must be the same bits. Batches of 33 rows
 * (one shard) and 1024 rows (the products split over the pool) are both run. Also: fusion really
 * happens on the CPU (and not with RILL_NO_FUSION, nor on a GPU), and fetching an inner tensor
 * keeps it (that signature fuses less). A small CNN (Conv2D + BiasAdd + Relu, max-pool, Conv2D +
 * BiasAdd at stride 2, dense) is held to the same: _FusedConv2D (oneDNN's post-ops) against the
 * three ops one after another, on a batch that one thread runs and one split over the threads. */
#include "test.h"

#include <rill/rill.h>

#include "runtime/runtime.h"

#include <stdlib.h>
#include <string.h>

#define IN  64
#define HID 48
#define OUT 10

typedef struct model {
    rill_graph *g;
    rill_output x, labels, h_pre, h, logits, loss, w1, b1, w2t, b2;
    rill_node *train, *init;
    rill_optimizer *opt;
} model;

static void build(model *m, const char *device)
{
    memset(m, 0, sizeof *m);
    m->g = rill_graph_new();
    rill_graph_set_seed(m->g, 42);
    if (device) rill_graph_push_device(m->g, device);
    m->x = rill_placeholder(m->g, RILL_FLOAT, rill_shape_matrix(-1, IN), "x");
    m->labels = rill_placeholder(m->g, RILL_INT32, rill_shape_vector(-1), "labels");
    m->w1 = rill_get_variable(m->g, "w1", RILL_FLOAT, rill_shape_matrix(IN, HID),
                              rill_random_normal_initializer(0, 0.2, 0), true);
    m->b1 = rill_get_variable(m->g, "b1", RILL_FLOAT, rill_shape_vector(HID),
                              rill_random_normal_initializer(0, 0.1, 0), true);
    /* stored [OUT, HID], used transposed */
    m->w2t = rill_get_variable(m->g, "w2t", RILL_FLOAT, rill_shape_matrix(OUT, HID),
                               rill_random_normal_initializer(0, 0.2, 0), true);
    m->b2 = rill_get_variable(m->g, "b2", RILL_FLOAT, rill_shape_vector(OUT),
                              rill_random_normal_initializer(0, 0.1, 0), true);
    m->h_pre = rill_bias_add(m->g, rill_matmul(m->g, m->x, m->w1, false, false, NULL), m->b1, NULL);
    m->h = rill_relu(m->g, m->h_pre, NULL);
    m->logits =
        rill_bias_add(m->g, rill_matmul(m->g, m->h, m->w2t, false, true, NULL), m->b2, NULL);
    rill_output xent =
        rill_sparse_softmax_cross_entropy_with_logits(m->g, m->labels, m->logits, NULL);
    m->loss = rill_mean(m->g, xent, NULL, -1, false, "loss");
    m->opt = rill_gradient_descent_optimizer_new(0.1);
    m->train = rill_optimizer_minimize(m->opt, m->g, m->loss, (rill_output){0}, "train");
    m->init = rill_global_variables_initializer(m->g, NULL);
    if (device) rill_graph_pop_device(m->g);
}

static void batch(int rows, int seed, rill_tensor **x, rill_tensor **labels)
{
    *x = rill_tensor_new(RILL_FLOAT, (int64_t[]){rows, IN}, 2);
    *labels = rill_tensor_new(RILL_INT32, (int64_t[]){rows}, 1);
    float *xp = rill_tensor_data(*x);
    int32_t *lp = rill_tensor_data(*labels);
    unsigned s = (unsigned)seed * 2654435761u + 1;
    for (int i = 0; i < rows * IN; i++)
        xp[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / 16777216.0f - 0.5f;
    for (int i = 0; i < rows; i++) lp[i] = (int32_t)((s = s * 1103515245u + 12345u) >> 16) % OUT;
}

static bool same(const rill_tensor *a, const rill_tensor *b)
{
    return a && b && rill_tensor_nbytes(a) == rill_tensor_nbytes(b) &&
           memcmp(rill_tensor_data(a), rill_tensor_data(b), rill_tensor_nbytes(a)) == 0;
}

/* Trains m in a new session for `steps` steps on batches of `rows`; returns the session. The
 * losses go to loss[], the last step's h (Relu's output) to *h. */
static rill_session *train(model *m, const rill_session_options *o, int rows, int steps,
                           float *loss, rill_tensor **h)
{
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(m->g, o, s);
    if (!CHECK(sess != NULL) || !CHECK(rill_session_run_targets(sess, &m->init, 1, s) == RILL_OK)) {
        fprintf(stderr, "  %s\n", rill_status_message(s));
        rill_status_free(s);
        return sess;
    }
    rill_output feeds[] = {m->x, m->labels};
    for (int i = 0; i < steps; i++) {
        rill_tensor *fv[2];
        batch(rows, 0, &fv[0], &fv[1]); /* one batch: its loss must fall */
        rill_output fetches[] = {m->loss, m->h};
        rill_tensor *out[2] = {NULL, NULL};
        if (!CHECK(rill_session_run(sess, feeds, fv, 2, fetches, out, 2, &m->train, 1, s) ==
                   RILL_OK))
            fprintf(stderr, "  %s\n", rill_status_message(s));
        loss[i] = out[0] ? *(float *)rill_tensor_data(out[0]) : -1;
        rill_tensor_free(out[0]);
        if (i == steps - 1)
            *h = out[1];
        else
            rill_tensor_free(out[1]);
        rill_tensor_free(fv[0]);
        rill_tensor_free(fv[1]);
    }
    rill_status_free(s);
    return sess;
}

static rill_tensor *fetch(rill_session *sess, rill_output o)
{
    rill_status *s = rill_status_new();
    rill_tensor *t = NULL;
    if (!CHECK(rill_session_run(sess, NULL, NULL, 0, &o, &t, 1, NULL, 0, s) == RILL_OK))
        fprintf(stderr, "  %s\n", rill_status_message(s));
    rill_status_free(s);
    return t;
}

static void test_fused_equals_unfused(int rows, int steps)
{
    model fm, um;
    build(&fm, "/cpu:0"); /* with a GPU present, TF's placement would put these ops on it */
    build(&um, "/cpu:0");
    float lf[16], lu[16];
    rill_tensor *hf = NULL, *hu = NULL;
    int before = atomic_load(&rill__fusions_made);
    unsetenv("RILL_NO_FUSION");
    rill_session *sf = train(&fm, NULL, rows, steps, lf, &hf);
    int made = atomic_load(&rill__fusions_made) - before;
    setenv("RILL_NO_FUSION", "1", 1);
    before = atomic_load(&rill__fusions_made);
    rill_session *su = train(&um, NULL, rows, steps, lu, &hu);
    CHECK_EQ_INT(atomic_load(&rill__fusions_made) - before, 0); /* off means off */
    unsetenv("RILL_NO_FUSION");
    /* Two forward groups and one backward group (the second layer's ReluGrad has no BiasAddGrad
     * after it: its bias gradient comes from the loss side) in the training signature. */
    CHECK(made >= 3);
    printf("rows %d: %d fused nodes; loss %.6f -> %.6f\n", rows, made, lf[0], lf[steps - 1]);
    CHECK(lf[steps - 1] < lf[0]);
    CHECK(memcmp(lf, lu, (size_t)steps * sizeof *lf) == 0);
    CHECK(same(hf, hu));
    rill_output vars[] = {fm.w1, fm.b1, fm.w2t, fm.b2}, uvars[] = {um.w1, um.b1, um.w2t, um.b2};
    for (int i = 0; i < 4; i++) {
        rill_tensor *a = fetch(sf, vars[i]), *b = fetch(su, uvars[i]);
        if (!CHECK(same(a, b))) fprintf(stderr, "  variable %d differs (rows %d)\n", i, rows);
        rill_tensor_free(a);
        rill_tensor_free(b);
    }
    /* Fetching the BiasAdd before the Relu keeps it (that signature leaves layer 1 unfused). */
    rill_tensor *xv, *lv;
    batch(rows, 99, &xv, &lv);
    rill_output fetches[] = {fm.h_pre, fm.h}, ufetches[] = {um.h_pre, um.h};
    rill_tensor *fo[2], *uo[2];
    rill_status *s = rill_status_new();
    CHECK(rill_session_run(sf, &fm.x, &xv, 1, fetches, fo, 2, NULL, 0, s) == RILL_OK);
    CHECK(rill_session_run(su, &um.x, &xv, 1, ufetches, uo, 2, NULL, 0, s) == RILL_OK);
    CHECK(same(fo[0], uo[0]));
    CHECK(same(fo[1], uo[1]));
    for (int i = 0; i < 2; i++) rill_tensor_free(fo[i]), rill_tensor_free(uo[i]);
    rill_status_free(s);
    rill_tensor_free(xv);
    rill_tensor_free(lv);
    rill_tensor_free(hf);
    rill_tensor_free(hu);
    rill_session_free(sf);
    rill_session_free(su);
    rill_optimizer_free(fm.opt);
    rill_optimizer_free(um.opt);
    rill_graph_free(fm.g);
    rill_graph_free(um.g);
}

/* On a GPU nothing is fused (the fused kernels are the CPU's), and training still works. */
static void test_not_on_gpu(void)
{
    model m;
    build(&m, "/gpu:0");
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_allow_soft_placement(o, true);
    float loss[4];
    rill_tensor *h = NULL;
    int before = atomic_load(&rill__fusions_made);
    rill_session *sess = train(&m, o, 33, 4, loss, &h);
    int made = atomic_load(&rill__fusions_made) - before;
    rill__device *const *devs;
    int ndev = rill__devices(NULL, &devs, NULL);
    bool gpu = false;
    for (int i = 0; i < ndev; i++) gpu = gpu || strcmp(devs[i]->type, "GPU") == 0;
    if (gpu)
        CHECK_EQ_INT(made, 0);
    else
        TEST_SKIP_PART("the GPU case",
                       "no GPU device (RILL_OPENCL_CPU_AS_GPU=1 with PoCL gives one)");
    CHECK(loss[3] < loss[0]);
    rill_tensor_free(h);
    rill_session_free(sess);
    rill_session_options_free(o);
    rill_optimizer_free(m.opt);
    rill_graph_free(m.g);
}

/* --- the CNN --- */

#define CH  12 /* input height and width */
#define CC  3  /* input channels */

typedef struct cnn {
    rill_graph *g;
    rill_output x, labels, c1, loss, vars[6];
    rill_node *train, *init;
    rill_optimizer *opt;
} cnn;

static rill_output var4(rill_graph *g, const char *name, int64_t a, int64_t b, int64_t c,
                        int64_t d)
{
    return rill_get_variable(g, name, RILL_FLOAT, rill_shape_make(4, (int64_t[]){a, b, c, d}),
                             rill_random_normal_initializer(0, 0.3, 0), true);
}

static void build_cnn(cnn *m)
{
    memset(m, 0, sizeof *m);
    rill_graph *g = m->g = rill_graph_new();
    rill_graph_set_seed(g, 7);
    rill_graph_push_device(g, "/cpu:0");
    m->x = rill_placeholder(g, RILL_FLOAT, rill_shape_make(4, (int64_t[]){-1, CH, CH, CC}), "x");
    m->labels = rill_placeholder(g, RILL_INT32, rill_shape_vector(-1), "labels");
    m->vars[0] = var4(g, "k1", 3, 3, CC, 8);
    m->vars[1] = rill_get_variable(g, "kb1", RILL_FLOAT, rill_shape_vector(8),
                                   rill_random_normal_initializer(0, 0.1, 0), true);
    m->vars[2] = var4(g, "k2", 3, 3, 8, 16);
    m->vars[3] = rill_get_variable(g, "kb2", RILL_FLOAT, rill_shape_vector(16),
                                   rill_random_normal_initializer(0, 0.1, 0), true);
    m->vars[4] = rill_get_variable(g, "wd", RILL_FLOAT, rill_shape_matrix(3 * 3 * 16, OUT),
                                   rill_random_normal_initializer(0, 0.1, 0), true);
    m->vars[5] = rill_get_variable(g, "bd", RILL_FLOAT, rill_shape_vector(OUT),
                                   rill_zeros_initializer(), true);
    int one[4] = {1, 1, 1, 1}, two[4] = {1, 2, 2, 1};
    m->c1 = rill_relu(g, rill_bias_add(g, rill_conv2d(g, m->x, m->vars[0], one, "SAME", NULL, NULL),
                                       m->vars[1], NULL),
                      NULL);
    rill_output p1 = rill_max_pool(g, m->c1, two, two, "SAME", NULL); /* 6x6x8 */
    rill_output c2 = rill_bias_add(g, rill_conv2d(g, p1, m->vars[2], two, "SAME", NULL, NULL),
                                   m->vars[3], NULL); /* 3x3x16, no Relu */
    rill_output flat = rill_reshape(g, c2, (int64_t[]){-1, 3 * 3 * 16}, 2, NULL);
    rill_output logits =
        rill_bias_add(g, rill_matmul(g, flat, m->vars[4], false, false, NULL), m->vars[5], NULL);
    m->loss = rill_mean(g, rill_sparse_softmax_cross_entropy_with_logits(g, m->labels, logits, NULL),
                        NULL, -1, false, "loss");
    m->opt = rill_adam_optimizer_new(0.01, 0.9, 0.999, 1e-8);
    m->train = rill_optimizer_minimize(m->opt, g, m->loss, (rill_output){0}, "train");
    m->init = rill_global_variables_initializer(g, NULL);
    rill_graph_pop_device(g);
}

static void cnn_batch(int rows, rill_tensor **x, rill_tensor **labels)
{
    *x = rill_tensor_new(RILL_FLOAT, (int64_t[]){rows, CH, CH, CC}, 4);
    *labels = rill_tensor_new(RILL_INT32, (int64_t[]){rows}, 1);
    float *xp = rill_tensor_data(*x);
    int32_t *lp = rill_tensor_data(*labels);
    unsigned s = 12345;
    for (int i = 0; i < rows * CH * CH * CC; i++)
        xp[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / 16777216.0f - 0.5f;
    for (int i = 0; i < rows; i++) lp[i] = (int32_t)((s = s * 1103515245u + 12345u) >> 16) % OUT;
}

/* Trains a fresh CNN `steps` steps, fused or not; losses to loss[], the first Relu's output of
 * the last step to *c1, the variables after to vars[]. */
static void train_cnn(bool fuse, int rows, int steps, float *loss, rill_tensor **c1,
                      rill_tensor **vars)
{
    if (fuse)
        unsetenv("RILL_NO_FUSION");
    else
        setenv("RILL_NO_FUSION", "1", 1);
    cnn m;
    build_cnn(&m);
    rill_status *s = rill_status_new();
    rill_session *sess = rill_session_new(m.g, NULL, s);
    CHECK(sess && rill_session_run_targets(sess, &m.init, 1, s) == RILL_OK);
    rill_tensor *fv[2];
    cnn_batch(rows, &fv[0], &fv[1]);
    rill_output feeds[] = {m.x, m.labels}, fetches[] = {m.loss, m.c1};
    for (int i = 0; i < steps; i++) {
        rill_tensor *out[2] = {NULL, NULL};
        if (!CHECK(rill_session_run(sess, feeds, fv, 2, fetches, out, 2, &m.train, 1, s) ==
                   RILL_OK))
            fprintf(stderr, "  %s\n", rill_status_message(s));
        loss[i] = out[0] ? *(float *)rill_tensor_data(out[0]) : -1;
        rill_tensor_free(out[0]);
        if (i == steps - 1)
            *c1 = out[1];
        else
            rill_tensor_free(out[1]);
    }
    for (int i = 0; i < 6; i++) vars[i] = fetch(sess, m.vars[i]);
    rill_tensor_free(fv[0]);
    rill_tensor_free(fv[1]);
    rill_status_free(s);
    rill_session_free(sess);
    rill_optimizer_free(m.opt);
    rill_graph_free(m.g);
    unsetenv("RILL_NO_FUSION");
}

static void test_cnn_fused_equals_unfused(int rows, int steps)
{
    float lf[16], lu[16];
    rill_tensor *cf = NULL, *cu = NULL, *vf[6], *vu[6];
    int before = atomic_load(&rill__fusions_made);
    train_cnn(true, rows, steps, lf, &cf, vf);
    int made = atomic_load(&rill__fusions_made) - before;
    train_cnn(false, rows, steps, lu, &cu, vu);
    /* Conv2D + BiasAdd + Relu, Conv2D + BiasAdd, MatMul + BiasAdd, and the first layer's
     * ReluGrad + BiasAddGrad in the training signature. */
    CHECK(made >= 4);
    printf("cnn rows %d: %d fused nodes; loss %.6f -> %.6f\n", rows, made, lf[0], lf[steps - 1]);
    CHECK(lf[steps - 1] < lf[0]);
    if (!CHECK(memcmp(lf, lu, (size_t)steps * sizeof *lf) == 0))
        for (int i = 0; i < steps; i++) fprintf(stderr, "  step %d: %.9g vs %.9g\n", i, lf[i], lu[i]);
    CHECK(same(cf, cu));
    for (int i = 0; i < 6; i++) {
        if (!CHECK(same(vf[i], vu[i]))) fprintf(stderr, "  variable %d differs (rows %d)\n", i, rows);
        rill_tensor_free(vf[i]);
        rill_tensor_free(vu[i]);
    }
    rill_tensor_free(cf);
    rill_tensor_free(cu);
}

int main(void)
{
    test_fused_equals_unfused(33, 12);
    test_fused_equals_unfused(1024, 4);
    test_cnn_fused_equals_unfused(5, 10);
    test_cnn_fused_equals_unfused(300, 3);
    test_not_on_gpu();
    TEST_MAIN_END();
}
