/* bench_mlp_step.c - one training step of the 784-512-512-10 ReLU MLP (batch 256, float32,
 * softmax cross-entropy, gradient descent) against its GEMM floor, in one run.
 *
 * The floor is the time oneDNN (the fastest of OpenBLAS, BLIS and oneDNN on these shapes, see
 * bench_gemm) takes for exactly the matrix products the step needs (three forward, three weight
 * gradients, two input gradients), timed here on all cores, the faster of two ways: oneDNN on
 * its own OpenMP threads, and split by rows over rill's pool as MatMul does. The ratio
 * step/floor says what the rest of the runtime costs. */
#include <rill/rill.h>

#include "core/core.h"

#include "kernels/cpu/gemm.h"

#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define B   256
#define IN  784
#define H   512
#define OUT 10

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v[n / 2];
}

static float *randbuf(size_t n)
{
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = (float)(drand48() - 0.5);
    return p;
}

/* The eight GEMMs of one step: m x k times k x n, with the transposes the gradients use. */
typedef struct gemm {
    int ta, tb, m, n, k;
} gemm;

static const gemm step_gemms[] = {
    {0, 0, B, H, IN},  {0, 0, B, H, H}, {0, 0, B, OUT, H}, /* forward */
    {0, 1, B, H, OUT}, {0, 1, B, H, H},                    /* input gradients of layers 3, 2 */
    {1, 0, H, OUT, B}, {1, 0, H, H, B}, {1, 0, IN, H, B},  /* weight gradients */
};

/* One pass of the step's GEMMs; own_threads: oneDNN on its OpenMP threads (one per core), else
 * rill__gemm_f32 over rill's pool. */
static void gemm_pass(bool own_threads, const float *a, const float *b, float *c)
{
    static void (*omp_set)(int);
    if (!omp_set) omp_set = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    for (size_t i = 0; i < sizeof step_gemms / sizeof step_gemms[0]; i++) {
        const gemm *g = &step_gemms[i];
        int lda = g->ta ? g->m : g->k, ldb = g->tb ? g->k : g->n;
        if (own_threads) {
            if (omp_set) omp_set(rill__num_cores());
            dnnl_sgemm(g->ta ? 'T' : 'N', g->tb ? 'T' : 'N', g->m, g->n, g->k, 1.0f, a, lda, b,
                       ldb, 0.0f, c, g->n);
        } else {
            rill__gemm_f32(rill__default_pool(), g->ta, g->tb, g->m, g->n, g->k, a, lda, b, ldb,
                           c, g->n);
        }
    }
}

static double gemm_floor(int iters, double *flops_out, double *t_own, double *t_split)
{
    size_t big = (size_t)IN * H;
    float *a = randbuf(big > (size_t)B * IN ? big : (size_t)B * IN), *b = randbuf(big),
          *c = randbuf(big);
    double flops = 0;
    for (size_t i = 0; i < sizeof step_gemms / sizeof step_gemms[0]; i++)
        flops += 2.0 * step_gemms[i].m * step_gemms[i].n * step_gemms[i].k;
    *flops_out = flops;
    for (int way = 0; way < 2; way++) {
        gemm_pass(way == 0, a, b, c); /* warm */
        double t0 = rill__now_seconds();
        for (int it = 0; it < iters; it++) gemm_pass(way == 0, a, b, c);
        double t = (rill__now_seconds() - t0) / iters;
        *(way == 0 ? t_own : t_split) = t;
    }
    free(a);
    free(b);
    free(c);
    return *t_own < *t_split ? *t_own : *t_split;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 40;
    int reps = 5;
    srand48(7);
    rill_graph *g = rill_graph_new();
    rill_graph_set_seed(g, 7);
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(B, IN), "x");
    rill_output y = rill_placeholder(g, RILL_INT32, rill_shape_vector(B), "y");
    int64_t sizes[] = {IN, H, H, OUT};
    rill_output h = x;
    for (int l = 0; l < 3; l++) {
        char wn[32], bn[32];
        snprintf(wn, sizeof wn, "w%d", l);
        snprintf(bn, sizeof bn, "b%d", l);
        rill_output w = rill_variable(g, RILL_FLOAT, rill_shape_matrix(sizes[l], sizes[l + 1]),
                                      rill_truncated_normal_initializer(0, 0.05, 0), true, wn);
        rill_output b = rill_variable(g, RILL_FLOAT, rill_shape_vector(sizes[l + 1]),
                                      rill_zeros_initializer(), true, bn);
        h = rill_bias_add(g, rill_matmul(g, h, w, false, false, NULL), b, NULL);
        if (l < 2) h = rill_relu(g, h, NULL);
    }
    rill_output loss = rill_mean(g, rill_sparse_softmax_cross_entropy_with_logits(g, y, h, NULL),
                                 NULL, -1, false, NULL);
    rill_optimizer *opt = rill_gradient_descent_optimizer_new(0.01);
    rill_node *train = rill_optimizer_minimize(opt, g, loss, (rill_output){NULL, 0}, NULL);
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_status *s = rill_status_new();
    rill_session_options *so = rill_session_options_new();
    if (getenv("RILL_INTER_OP"))
        rill_session_options_set_inter_op_threads(so, atoi(getenv("RILL_INTER_OP")));
    rill_session *sess = rill_graph_ok(g) ? rill_session_new(g, so, s) : NULL;
    rill_session_options_free(so);
    if (!sess || rill_session_run_targets(sess, &init, 1, s) != RILL_OK) {
        fprintf(stderr, "setup failed: %s %s\n", rill_status_message(rill_graph_status(g)),
                rill_status_message(s));
        return 1;
    }
    rill_tensor *xv = rill_tensor_new(RILL_FLOAT, (int64_t[]){B, IN}, 2);
    rill_tensor *yv = rill_tensor_new(RILL_INT32, (int64_t[]){B}, 1);
    float *xp = rill_tensor_data(xv);
    int32_t *yp = rill_tensor_data(yv);
    for (int i = 0; i < B * IN; i++) xp[i] = (float)drand48();
    for (int i = 0; i < B; i++) yp[i] = (int32_t)(lrand48() % OUT);
    rill_output feeds[] = {x, y};
    rill_tensor *fv[] = {xv, yv};
    rill_tensor *lv;
    double t_step[8], t_floor[8], t_own[8], t_split[8], flops = 0;
    float first_loss = 0, last_loss = 0;
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < 3; i++) { /* warm-up */
            rill_session_run(sess, feeds, fv, 2, &loss, &lv, 1, &train, 1, s);
            if (r == 0 && i == 0) first_loss = *(float *)rill_tensor_data(lv);
            rill_tensor_free(lv);
        }
        double t0 = rill__now_seconds();
        for (int i = 0; i < iters; i++) {
            if (rill_session_run(sess, feeds, fv, 2, &loss, &lv, 1, &train, 1, s) != RILL_OK) {
                fprintf(stderr, "step failed: %s\n", rill_status_message(s));
                return 1;
            }
            last_loss = *(float *)rill_tensor_data(lv);
            rill_tensor_free(lv);
        }
        t_step[r] = (rill__now_seconds() - t0) / iters;
        t_floor[r] = gemm_floor(iters, &flops, &t_own[r], &t_split[r]);
    }
    double ts = median(t_step, reps), tf = median(t_floor, reps);
    double to = median(t_own, reps), tsp = median(t_split, reps);
    printf("MLP 784-512-512-10, batch %d, float32, SGD; gemm: %s\n", B, rill__gemm_info());
    printf("loss %.4f -> %.4f over the run (same batch: must fall)\n", first_loss, last_loss);
    printf("training step           %8.3f ms  (%.1f GFLOP/s of GEMM work)\n", ts * 1e3,
           flops / ts * 1e-9);
    printf("GEMM floor (oneDNN)     %8.3f ms  (%.1f GFLOP/s, %.2f GFLOP per step; own threads "
           "%.3f ms, split over rill's pool %.3f ms)\n",
           tf * 1e3, flops / tf * 1e-9, flops * 1e-9, to * 1e3, tsp * 1e3);
    printf("ratio step/floor        %8.2f x\n", ts / tf);
    printf("RESULT mlp_step_ms=%.3f gemm_floor_ms=%.3f ratio=%.3f\n", ts * 1e3, tf * 1e3, ts / tf);
    rill_tensor_free(xv);
    rill_tensor_free(yv);
    rill_session_free(sess);
    rill_status_free(s);
    rill_optimizer_free(opt);
    rill_graph_free(g);
    return 0;
}
