/* test_devices_session.c - the whole GPU path through real sessions, against the CPU.
 *
 * Each model is built twice, once with everything under "/cpu:0" and once under "/gpu:0" with
 * soft placement on (so placeholders, and any op without a GPU kernel, fall back to the CPU),
 * then run with the same data from the same constant initial values, and the results compared:
 * the seed's linear regression (500 steps of gradient descent, an int64 global_step), a small
 * 20-16-3 MLP with softmax cross-entropy and Adam (50 steps), fetching a GPU-resident variable
 * and an intermediate GPU tensor, and feeding an intermediate that lives on the GPU. The
 * placement log confirms the GPU build really runs on GPU:0. Finally it reports how many host
 * allocations a steady-state GPU step makes.
 *
 * PoCL's CPU device stands in for a GPU (RILL_OPENCL_CPU_AS_GPU=1, set first). Without any GPU
 * both builds land on the CPU; the comparisons still run and a SKIPPED line says the GPU path
 * was not checked. */
#include <rill/rill.h>

#include "core/core.h"
#include "device/device.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CPU0 "/job:localhost/replica:0/task:0/device:CPU:0"
#define GPU0 "/job:localhost/replica:0/task:0/device:GPU:0"

static bool have_gpu;

/* --- deterministic data: splitmix64, so both builds see the same numbers --- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double uniform(void)
{
    return (double)(next_u64() >> 11) / 9007199254740992.0;
}

static double normal(void)
{
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* --- capturing stdout (the placement log) --- */

typedef struct capture {
    FILE *tmp;
    int saved_fd;
} capture;

static capture capture_begin(void)
{
    capture c = {tmpfile(), -1};
    if (!c.tmp) return c;
    fflush(stdout);
    c.saved_fd = dup(fileno(stdout));
    dup2(fileno(c.tmp), fileno(stdout));
    return c;
}

static char *capture_end(capture c)
{
    if (!c.tmp) return strdup("");
    fflush(stdout);
    dup2(c.saved_fd, fileno(stdout));
    close(c.saved_fd);
    long n = ftell(c.tmp);
    char *text = malloc(n > 0 ? (size_t)n + 1 : 1);
    rewind(c.tmp);
    size_t got = n > 0 ? fread(text, 1, (size_t)n, c.tmp) : 0;
    text[got] = 0;
    fclose(c.tmp);
    return text;
}

/* True when the placement log has the line "<node>: (<op>): <device>". */
static bool placed_on(const char *log, const char *node, const char *op, const char *device)
{
    char line[512];
    snprintf(line, sizeof line, "%s: (%s): %s\n", node, op, device);
    size_t n = strlen(line);
    for (const char *p = log; p && *p;) {
        if (strncmp(p, line, n) == 0) return true;
        const char *eol = strchr(p, '\n');
        p = eol ? eol + 1 : NULL;
    }
    return false;
}

#define CHECK_PLACED(log, node, op, device)                                                        \
    do {                                                                                           \
        if (!CHECK(placed_on((log), (node), (op), (device))))                                      \
            fprintf(stderr, "  wanted '%s: (%s): %s'\n", (node), (op), (device));                  \
    } while (0)

/* A session with soft placement (and the placement log, captured into *log when log is not
 * NULL), which then runs the targets; NULL on failure after reporting it. */
static rill_session *open_and_init(rill_graph *g, rill_node *init, char **log, rill_status *s)
{
    if (!CHECK(rill_graph_ok(g))) {
        fprintf(stderr, "  build failed: %s\n", rill_status_message(rill_graph_status(g)));
        return NULL;
    }
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_allow_soft_placement(o, true);
    rill_session_options_set_log_device_placement(o, log != NULL);
    capture c = capture_begin();
    rill_session *sess = rill_session_new(g, o, s);
    rill_code code = sess ? rill_session_run_targets(sess, &init, 1, s) : RILL_INTERNAL;
    char *text = capture_end(c);
    rill_session_options_free(o);
    if (log)
        *log = text;
    else
        free(text);
    if (!CHECK(sess != NULL) || !CHECK_EQ_INT(code, RILL_OK)) {
        fprintf(stderr, "  session/init failed: %s\n", rill_status_message(s));
        rill_session_free(sess);
        return NULL;
    }
    return sess;
}

static rill_tensor *floats(const float *v, const int64_t *dims, int rank)
{
    return rill_tensor_from_data(RILL_FLOAT, dims, rank, v);
}

/* Largest |a[i] - b[i]| over two float tensors of one shape; INFINITY when they differ in
 * shape or either is missing. */
static double max_diff(const rill_tensor *a, const rill_tensor *b)
{
    if (!a || !b || rill_tensor_num_elements(a) != rill_tensor_num_elements(b)) return INFINITY;
    double m = 0;
    for (int64_t i = 0; i < rill_tensor_num_elements(a); i++) {
        double d = fabs(rill_tensor_get_double(a, i) - rill_tensor_get_double(b, i));
        if (!(d <= m)) m = d; /* NaN wins */
    }
    return m;
}

/* ------------------------------------------------------------------------------------------ */
/* (1) The seed's linear regression                                                            */
/* ------------------------------------------------------------------------------------------ */

typedef struct linreg {
    rill_graph *g;
    rill_output input, label, weight, biase, loss, global_step;
    rill_node *train, *init;
    rill_optimizer *opt;
} linreg;

static void linreg_build(linreg *m, const char *device)
{
    memset(m, 0, sizeof *m);
    m->g = rill_graph_new();
    rill_graph *g = m->g;
    rill_graph_push_device(g, device);
    m->global_step = rill_train_get_or_create_global_step(g);
    m->input = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "input");
    m->label = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "label");
    m->weight = rill_get_variable(g, "weight", RILL_FLOAT, rill_shape_vector(1),
                                  rill_constant_initializer(0.3), true);
    m->biase = rill_get_variable(g, "biase", RILL_FLOAT, rill_shape_vector(1),
                                 rill_constant_initializer(-0.2), true);
    rill_output pred = rill_add(g, rill_mul(g, m->input, m->weight, NULL), m->biase, NULL);
    m->loss = rill_square(g, rill_sub(g, m->label, pred, NULL), NULL);
    m->opt = rill_gradient_descent_optimizer_new(0.01);
    m->train = rill_optimizer_minimize(m->opt, g, m->loss, m->global_step, NULL);
    m->init = rill_global_variables_initializer(g, NULL);
    rill_graph_pop_device(g);
}

static void linreg_free(linreg *m)
{
    rill_optimizer_free(m->opt);
    rill_graph_free(m->g);
}

/* Runs `steps` steps on the seed's data (y = 2x + 10 + 0.33 noise) drawn from seed; losses[i]
 * receives step i's loss; *wb the final weight and biase; *gstep the final global step. Returns
 * the host allocations of the last `steps - warmup` steps (0 when warmup >= steps). */
static uint64_t linreg_train(linreg *m, rill_session *sess, int steps, uint64_t seed, float *losses,
                             float wb[2], int64_t *gstep, int warmup, rill_status *s)
{
    rng_state = seed;
    rill_tensor *x = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    rill_tensor *y = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    float *xp = rill_tensor_data(x), *yp = rill_tensor_data(y);
    rill_output feeds[] = {m->input, m->label};
    rill_tensor *vals[] = {x, y};
    rill_output fetches[] = {m->loss, rill_node_output(m->train, 0)};
    int failures = 0;
    uint64_t before = 0;
    for (int i = 0; i < steps; i++) {
        if (i == warmup) before = rill__alloc_count();
        xp[0] = (float)normal();
        yp[0] = (float)(2 * xp[0] + normal() * 0.33 + 10);
        rill_tensor *out[2] = {NULL, NULL};
        if (rill_session_run(sess, feeds, vals, 2, fetches, out, 2, NULL, 0, s) != RILL_OK) {
            if (failures++ == 0) fprintf(stderr, "  step %d: %s\n", i, rill_status_message(s));
            losses[i] = NAN;
            continue;
        }
        losses[i] = *(float *)rill_tensor_data(out[0]);
        *gstep = *(int64_t *)rill_tensor_data(out[1]);
        rill_tensor_free(out[0]);
        rill_tensor_free(out[1]);
    }
    uint64_t allocs = warmup < steps ? rill__alloc_count() - before : 0;
    CHECK_EQ_INT(failures, 0);
    rill_output vars[] = {m->weight, m->biase};
    rill_tensor *v[2] = {NULL, NULL};
    if (CHECK_EQ_INT(rill_session_run(sess, NULL, NULL, 0, vars, v, 2, NULL, 0, s), RILL_OK)) {
        wb[0] = *(float *)rill_tensor_data(v[0]);
        wb[1] = *(float *)rill_tensor_data(v[1]);
    }
    rill_tensor_free(v[0]);
    rill_tensor_free(v[1]);
    rill_tensor_free(x);
    rill_tensor_free(y);
    return allocs;
}

static void test_linear_regression(void)
{
    enum { STEPS = 500 };
    rill_status *s = rill_status_new();
    linreg cpu, gpu;
    linreg_build(&cpu, "/cpu:0");
    linreg_build(&gpu, "/gpu:0");
    char *log = NULL;
    rill_session *cs = open_and_init(cpu.g, cpu.init, NULL, s);
    rill_session *gs = open_and_init(gpu.g, gpu.init, &log, s);
    if (!cs || !gs) goto out;
    /* Variables (global_step is int64: it has a GPU kernel) and the math on the GPU; the
     * placeholders are fed on the CPU. */
    const char *want = have_gpu ? GPU0 : CPU0;
    CHECK_PLACED(log, "weight", "VariableV2", want);
    CHECK_PLACED(log, "biase", "VariableV2", want);
    CHECK_PLACED(log, "global_step", "VariableV2", want);
    CHECK_PLACED(log, "input", "Placeholder", CPU0);
    CHECK_PLACED(log, "label", "Placeholder", CPU0);
    CHECK_PLACED(log, "Square", "Square", want);

    static float lc[STEPS], lg[STEPS];
    float wc[2] = {NAN, NAN}, wg[2] = {NAN, NAN};
    int64_t gc = -1, gg = -1;
    linreg_train(&cpu, cs, STEPS, 42, lc, wc, &gc, STEPS, s);
    linreg_train(&gpu, gs, STEPS, 42, lg, wg, &gg, STEPS, s);
    CHECK_EQ_INT(gc, STEPS);
    CHECK_EQ_INT(gg, STEPS);
    CHECK_NEAR(wg[0], wc[0], 1e-5);
    CHECK_NEAR(wg[1], wc[1], 1e-5);
    /* It learned something (the seed's y = 2x + 10), on both. */
    CHECK(fabsf(wc[0] - 2) < 0.5f);
    CHECK(wc[1] > 5);
    double worst = 0;
    for (int i = 0; i < STEPS; i++) {
        double d = fabs((double)lc[i] - lg[i]) / (1 + fabs((double)lc[i]));
        if (!(d <= worst)) worst = d;
    }
    if (!CHECK(worst <= 1e-5)) fprintf(stderr, "  worst relative loss difference %g\n", worst);
    fprintf(stderr,
            "note: linear regression after %d steps: weight %.6f vs %.6f, biase %.6f vs %.6f "
            "(CPU vs GPU), worst relative loss difference %.3g\n",
            STEPS, wc[0], wg[0], wc[1], wg[1], worst);

    /* global_step fetched directly: an int64 host tensor. */
    rill_tensor *t = NULL;
    if (CHECK_EQ_INT(rill_session_run(gs, NULL, NULL, 0, &gpu.global_step, &t, 1, NULL, 0, s),
                     RILL_OK)) {
        CHECK_EQ_INT(rill_tensor_dtype(t), RILL_INT64);
        CHECK(rill__tensor_on_host(t));
        CHECK_EQ_INT(*(int64_t *)rill_tensor_data(t), STEPS);
    }
    rill_tensor_free(t);

    /* (5) Host allocations of a steady-state step, reported (not asserted). */
    enum { MORE = 103, WARM = 3 };
    static float more[MORE];
    float w2[2];
    int64_t g2;
    uint64_t ac = linreg_train(&cpu, cs, MORE, 7, more, w2, &g2, WARM, s);
    uint64_t ag = linreg_train(&gpu, gs, MORE, 7, more, w2, &g2, WARM, s);
    fprintf(stderr,
            "note: host allocations per steady-state linear-regression step: CPU %.2f, %s %.2f\n",
            (double)ac / (MORE - WARM), have_gpu ? "GPU" : "GPU (soft-placed on CPU)",
            (double)ag / (MORE - WARM));
out:
    free(log);
    rill_session_free(cs);
    rill_session_free(gs);
    linreg_free(&cpu);
    linreg_free(&gpu);
    rill_status_free(s);
}

/* ------------------------------------------------------------------------------------------ */
/* (2)-(4) A 20-16-3 MLP with softmax cross-entropy and Adam                                   */
/* ------------------------------------------------------------------------------------------ */

enum { BATCH = 8, IN = 20, HID = 16, OUT = 3 };

typedef struct mlp {
    rill_graph *g;
    rill_output x, y, w1, b1, w2, b2, hidden, logits, loss;
    rill_node *train, *init;
    rill_optimizer *opt;
} mlp;

/* The initial weights, the same for both builds. */
static float init_w1[IN * HID], init_b1[HID], init_w2[HID * OUT], init_b2[OUT];

static void mlp_make_initial_values(void)
{
    rng_state = 1234;
    for (int i = 0; i < IN * HID; i++) init_w1[i] = (float)(normal() * sqrt(2.0 / IN));
    for (int i = 0; i < HID; i++) init_b1[i] = (float)(0.01 * normal());
    for (int i = 0; i < HID * OUT; i++) init_w2[i] = (float)(normal() * sqrt(1.0 / HID));
    for (int i = 0; i < OUT; i++) init_b2[i] = (float)(0.01 * normal());
}

static rill_output var_from(rill_graph *g, const float *v, const int64_t *dims, int rank,
                            const char *name)
{
    char cname[64];
    snprintf(cname, sizeof cname, "%s_init", name);
    return rill_variable_from(g, rill_const_floats(g, v, dims, rank, cname), true, name);
}

static void mlp_build(mlp *m, const char *device)
{
    memset(m, 0, sizeof *m);
    m->g = rill_graph_new();
    rill_graph *g = m->g;
    rill_graph_push_device(g, device);
    m->x = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(BATCH, IN), "x");
    m->y = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(BATCH, OUT), "y");
    m->w1 = var_from(g, init_w1, (int64_t[]){IN, HID}, 2, "w1");
    m->b1 = var_from(g, init_b1, (int64_t[]){HID}, 1, "b1");
    m->w2 = var_from(g, init_w2, (int64_t[]){HID, OUT}, 2, "w2");
    m->b2 = var_from(g, init_b2, (int64_t[]){OUT}, 1, "b2");
    m->hidden = rill_relu(
        g, rill_bias_add(g, rill_matmul(g, m->x, m->w1, false, false, "mm1"), m->b1, "ba1"),
        "hidden");
    m->logits =
        rill_bias_add(g, rill_matmul(g, m->hidden, m->w2, false, false, "mm2"), m->b2, "logits");
    rill_output xent = rill_softmax_cross_entropy_with_logits(g, m->y, m->logits, "xent");
    m->loss = rill_mean(g, xent, NULL, -1, false, "loss");
    m->opt = rill_adam_optimizer_new(0.01, 0.9, 0.999, 1e-8);
    m->train = rill_optimizer_minimize(m->opt, g, m->loss, (rill_output){NULL, 0}, "train");
    m->init = rill_global_variables_initializer(g, NULL);
    rill_graph_pop_device(g);
}

static void mlp_free(mlp *m)
{
    rill_optimizer_free(m->opt);
    rill_graph_free(m->g);
}

/* Batch `step`: inputs from the generator, labels one-hot of a fixed rule on the inputs. */
static void make_batch(int step, float *x, float *y)
{
    rng_state = 5000 + (uint64_t)step;
    for (int i = 0; i < BATCH; i++) {
        double score[OUT] = {0};
        for (int j = 0; j < IN; j++) {
            x[i * IN + j] = (float)normal();
            score[j % OUT] += x[i * IN + j];
        }
        int best = 0;
        for (int k = 1; k < OUT; k++)
            if (score[k] > score[best]) best = k;
        for (int k = 0; k < OUT; k++) y[i * OUT + k] = k == best ? 1.0f : 0.0f;
    }
}

static void mlp_train(mlp *m, rill_session *sess, int steps, float *losses, rill_status *s)
{
    float xb[BATCH * IN], yb[BATCH * OUT];
    int failures = 0;
    for (int i = 0; i < steps; i++) {
        make_batch(i, xb, yb);
        rill_tensor *xv = floats(xb, (int64_t[]){BATCH, IN}, 2);
        rill_tensor *yv = floats(yb, (int64_t[]){BATCH, OUT}, 2);
        rill_output feeds[] = {m->x, m->y};
        rill_tensor *vals[] = {xv, yv};
        rill_tensor *lv = NULL;
        if (rill_session_run(sess, feeds, vals, 2, &m->loss, &lv, 1, &m->train, 1, s) != RILL_OK) {
            if (failures++ == 0) fprintf(stderr, "  step %d: %s\n", i, rill_status_message(s));
            losses[i] = NAN;
        } else {
            losses[i] = *(float *)rill_tensor_data(lv);
        }
        rill_tensor_free(lv);
        rill_tensor_free(xv);
        rill_tensor_free(yv);
    }
    CHECK_EQ_INT(failures, 0);
}

/* Fetches n outputs (feeding x with batch `step` when step >= 0); out[i] NULL on failure. */
static void fetch_all(mlp *m, rill_session *sess, const rill_output *fetches, int n,
                      rill_tensor **out, int step, rill_status *s)
{
    float xb[BATCH * IN], yb[BATCH * OUT];
    rill_tensor *xv = NULL;
    if (step >= 0) {
        make_batch(step, xb, yb);
        xv = floats(xb, (int64_t[]){BATCH, IN}, 2);
    }
    rill_code c = rill_session_run(sess, step >= 0 ? &m->x : NULL, step >= 0 ? &xv : NULL,
                                   step >= 0 ? 1 : 0, fetches, out, n, NULL, 0, s);
    if (!CHECK_EQ_INT(c, RILL_OK)) fprintf(stderr, "  fetch: %s\n", rill_status_message(s));
    rill_tensor_free(xv);
}

/* relu(x @ w + b) or x @ w + b on the host, in double. */
static void host_dense(const float *x, const rill_tensor *w, const rill_tensor *b, int rows, int in,
                       int out, bool relu, float *y)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < out; j++) {
            double acc = rill_tensor_get_double(b, j);
            for (int k = 0; k < in; k++)
                acc += (double)x[i * in + k] * rill_tensor_get_double(w, (int64_t)k * out + j);
            y[i * out + j] = (float)(relu && acc < 0 ? 0 : acc);
        }
}

static void test_mlp_adam(void)
{
    enum { STEPS = 50 };
    rill_status *s = rill_status_new();
    mlp_make_initial_values();
    mlp cpu, gpu;
    mlp_build(&cpu, "/cpu:0");
    mlp_build(&gpu, "/gpu:0");
    char *log = NULL;
    rill_session *cs = open_and_init(cpu.g, cpu.init, NULL, s);
    rill_session *gs = open_and_init(gpu.g, gpu.init, &log, s);
    if (!cs || !gs) goto out;
    const char *want = have_gpu ? GPU0 : CPU0;
    CHECK_PLACED(log, "w1", "VariableV2", want);
    CHECK_PLACED(log, "w1/Adam", "VariableV2", want); /* slots live with their variable */
    CHECK_PLACED(log, "w1/Adam_1", "VariableV2", want);
    CHECK_PLACED(log, "mm1", "MatMul", want);
    CHECK_PLACED(log, "hidden", "Relu", want);
    CHECK_PLACED(log, "xent", "SoftmaxCrossEntropyWithLogits", want);
    CHECK_PLACED(log, "x", "Placeholder", CPU0);

    /* (2) The same 50 Adam steps on both. */
    static float lc[STEPS], lg[STEPS];
    mlp_train(&cpu, cs, STEPS, lc, s);
    mlp_train(&gpu, gs, STEPS, lg, s);
    double worst = 0;
    for (int i = 0; i < STEPS; i++) {
        double d = fabs((double)lc[i] - lg[i]);
        if (!(d <= worst)) worst = d;
    }
    if (!CHECK(worst <= 1e-4)) fprintf(stderr, "  worst loss difference %g\n", worst);
    fprintf(stderr, "note: MLP/Adam loss %.5f -> %.5f, worst CPU/GPU loss difference %.3g\n", lc[0],
            lc[STEPS - 1], worst);
    CHECK(lc[STEPS - 1] < lc[0]); /* it trains */
    rill_output weights[] = {cpu.w1, cpu.b1, cpu.w2, cpu.b2};
    rill_output gweights[] = {gpu.w1, gpu.b1, gpu.w2, gpu.b2};
    rill_tensor *wc[4] = {NULL}, *wg[4] = {NULL};
    fetch_all(&cpu, cs, weights, 4, wc, -1, s);
    fetch_all(&gpu, gs, gweights, 4, wg, -1, s);
    for (int i = 0; i < 4; i++) {
        double d = max_diff(wc[i], wg[i]);
        if (!CHECK(d <= 1e-4)) fprintf(stderr, "  weight %d differs by %g\n", i, d);
        /* (3) A GPU-resident variable comes back as a host tensor of the right shape. */
        CHECK(wg[i] && rill__tensor_on_host(wg[i]));
        CHECK(wg[i] && rill_tensor_dtype(wg[i]) == RILL_FLOAT);
    }
    CHECK(wg[0] && rill_tensor_dim(wg[0], 0) == IN && rill_tensor_dim(wg[0], 1) == HID);
    /* The variables moved from their initial values. */
    CHECK(wg[0] && fabs(rill_tensor_get_double(wg[0], 0) - init_w1[0]) > 1e-4);

    /* (3) An intermediate GPU tensor (hidden) and the logits, fetched: host tensors equal to
     * the CPU build's and to the host's own arithmetic on the fetched weights. */
    rill_output ci[] = {cpu.hidden, cpu.logits}, gi[] = {gpu.hidden, gpu.logits};
    rill_tensor *hc[2] = {NULL}, *hg[2] = {NULL};
    fetch_all(&cpu, cs, ci, 2, hc, STEPS + 1, s);
    fetch_all(&gpu, gs, gi, 2, hg, STEPS + 1, s);
    CHECK(max_diff(hc[0], hg[0]) <= 1e-4);
    CHECK(max_diff(hc[1], hg[1]) <= 1e-4);
    CHECK(hg[0] && rill__tensor_on_host(hg[0]));
    CHECK(hg[0] && rill_tensor_dim(hg[0], 0) == BATCH && rill_tensor_dim(hg[0], 1) == HID);
    if (wg[0] && wg[1] && hg[0]) {
        float xb[BATCH * IN], yb[BATCH * OUT], h[BATCH * HID];
        make_batch(STEPS + 1, xb, yb);
        host_dense(xb, wg[0], wg[1], BATCH, IN, HID, true, h);
        double d = 0;
        for (int i = 0; i < BATCH * HID; i++) {
            double e = fabs(h[i] - rill_tensor_get_double(hg[0], i));
            if (!(e <= d)) d = e;
        }
        if (!CHECK(d <= 1e-4)) fprintf(stderr, "  hidden vs host arithmetic: %g\n", d);
    }

    /* (4) Feeding an intermediate that lives on the GPU: hidden replaced by a host tensor, the
     * rest (on the GPU) computed from it. */
    float hf[BATCH * HID];
    rng_state = 99;
    for (int i = 0; i < BATCH * HID; i++) hf[i] = (float)fabs(normal());
    rill_tensor *hv = floats(hf, (int64_t[]){BATCH, HID}, 2);
    rill_tensor *lcpu = NULL, *lgpu = NULL;
    CHECK_EQ_INT(rill_session_run(cs, &cpu.hidden, &hv, 1, &cpu.logits, &lcpu, 1, NULL, 0, s),
                 RILL_OK);
    if (!CHECK_EQ_INT(rill_session_run(gs, &gpu.hidden, &hv, 1, &gpu.logits, &lgpu, 1, NULL, 0, s),
                      RILL_OK))
        fprintf(stderr, "  feeding hidden: %s\n", rill_status_message(s));
    CHECK(max_diff(lcpu, lgpu) <= 1e-4);
    if (lgpu && wg[2] && wg[3]) {
        float lo[BATCH * OUT];
        host_dense(hf, wg[2], wg[3], BATCH, HID, OUT, false, lo);
        double d = 0;
        for (int i = 0; i < BATCH * OUT; i++) {
            double e = fabs(lo[i] - rill_tensor_get_double(lgpu, i));
            if (!(e <= d)) d = e;
        }
        if (!CHECK(d <= 1e-4)) fprintf(stderr, "  logits from fed hidden: %g\n", d);
        CHECK(rill__tensor_on_host(lgpu));
    }
    /* Feeding it did not disturb the variables: the loss is what it was. */
    rill_tensor *after[1] = {NULL};
    fetch_all(&gpu, gs, gi + 1, 1, after, STEPS + 1, s);
    CHECK(max_diff(after[0], hg[1]) <= 1e-6);
    /* A feed of the wrong shape for the intermediate is refused. */
    rill_tensor *bad = floats(hf, (int64_t[]){HID, BATCH}, 2);
    rill_tensor *none = NULL;
    CHECK(rill_session_run(gs, &gpu.hidden, &bad, 1, &gpu.logits, &none, 1, NULL, 0, s) != RILL_OK);
    CHECK(none == NULL);
    rill_tensor_free(bad);
    rill_tensor_free(after[0]);
    rill_tensor_free(hv);
    rill_tensor_free(lcpu);
    rill_tensor_free(lgpu);
    for (int i = 0; i < 2; i++) {
        rill_tensor_free(hc[i]);
        rill_tensor_free(hg[i]);
    }
    for (int i = 0; i < 4; i++) {
        rill_tensor_free(wc[i]);
        rill_tensor_free(wg[i]);
    }
out:
    free(log);
    rill_session_free(cs);
    rill_session_free(gs);
    mlp_free(&cpu);
    mlp_free(&gpu);
    rill_status_free(s);
}

int main(void)
{
    setenv("RILL_OPENCL_CPU_AS_GPU", "1", 1);
    rill_status *s = rill_status_new();
    rill__device *const *devs;
    int ndev = rill__devices(NULL, &devs, s);
    if (!CHECK(ndev >= 1)) fprintf(stderr, "  devices: %s\n", rill_status_message(s));
    for (int i = 0; i < ndev; i++)
        if (strcmp(devs[i]->type, "GPU") == 0) have_gpu = true;
    rill_status_free(s);
    if (!have_gpu)
        TEST_SKIP_PART("the GPU path",
                       "no GPU device (no OpenCL device, even with RILL_OPENCL_CPU_AS_GPU=1): "
                       "both builds run on the CPU");
    test_linear_regression();
    test_mlp_adam();
    TEST_MAIN_END();
}
