/* bench_loops.c - the CPU kernels' vector loops (src/kernels/cpu/loops.h) in every version this
 * CPU runs, against memcpy over the same bytes measured in the same run: what choosing the
 * version at run time is worth. One thread; n floats per call (default 262144, 1 MiB: in L2).
 *
 *   bench_loops [n] [reps] */
#include "core/core.h"
#include "core/cpu.h"
#include "kernels/cpu/loops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float *x, *y, *z, *w, *m, *v;
static int64_t n;
static volatile double sink;

typedef void (*body_fn)(const rill__loops *l);
static void b_add(const rill__loops *l)
{
    l->f32.binary(RILL__BIN_ADD, RILL__FORM_SAME, z, x, y, 0, n);
}
static void b_relu_grad(const rill__loops *l)
{
    l->f32.relu_grad(z, x, y, 0, n);
}
static void b_sigmoid(const rill__loops *l)
{
    l->f32.sigmoid(z, x, 0, n);
}
static void b_tanh(const rill__loops *l)
{
    l->f32.tanh(z, x, 0, n);
}
static void b_sum(const rill__loops *l)
{
    sink = l->f32.sum(x, n);
}
static void b_sgd(const rill__loops *l)
{
    l->f32.sgd(w, x, 1e-6f, n);
}
static void b_adam(const rill__loops *l)
{
    l->f32.adam(w, m, v, x, 0.9f, 0.999f, 1e-8f, 1e-6f, n);
}

/* Best time of reps calls, in seconds. */
static double best_of(body_fn f, const rill__loops *l, int reps)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        f(l);
        double t = now() - t0;
        if (t < best) best = t;
    }
    return best;
}

static double memcpy_time(size_t bytes, int reps)
{
    char *a = malloc(bytes), *b = malloc(bytes);
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        memcpy(b, a, bytes);
        double t = now() - t0;
        if (t < best) best = t;
    }
    sink = b[bytes / 2];
    free(a);
    free(b);
    return best;
}

int main(int argc, char **argv)
{
    n = argc > 1 ? atoll(argv[1]) : 262144;
    int reps = argc > 2 ? atoi(argv[2]) : 200;
    float **bufs[] = {&x, &y, &z, &w, &m, &v};
    for (int i = 0; i < 6; i++) {
        *bufs[i] = rill__aligned_alloc((size_t)n * sizeof(float));
        for (int64_t k = 0; k < n; k++) (*bufs[i])[k] = (float)((k * 7 + i) % 97) / 97.0f - 0.4f;
    }
    for (int64_t k = 0; k < n; k++) v[k] = (float)(k % 13) / 13.0f;
    char feats[512];
    rill__cpu_feature_list(feats, sizeof feats);
    printf("cpu: %s; features: %s\nn = %lld floats (%.1f MiB per array), best of %d, one thread\n",
           rill__cpu()->model, feats, (long long)n, (double)n * 4 / 1048576, reps);
    const struct {
        const char *name;
        body_fn f;
        int arrays; /* arrays read + written per element, for the memcpy comparison */
    } cases[] = {
        {"add (x + y)", b_add, 3},  {"relu_grad", b_relu_grad, 3},
        {"sigmoid", b_sigmoid, 2},  {"tanh", b_tanh, 2},
        {"sum", b_sum, 1},          {"sgd update", b_sgd, 3},
        {"adam update", b_adam, 7},
    };
    /* memcpy of the same bytes moved: a copy reads and writes, so `arrays` arrays of n floats
     * correspond to a memcpy of arrays/2 of them. */
    double mc = memcpy_time((size_t)n * sizeof(float), reps); /* reads 1, writes 1 array */
    printf("memcpy of one array: %.1f GB/s\n\n", 2.0 * (double)n * 4 / mc / 1e9);
    printf("%-12s", "loop");
    for (int i = 0; i < RILL__ISA_COUNT; i++)
        if (rill__loops_for((rill__isa)i)) printf(" %17s", rill__isa_name((rill__isa)i));
    printf("   best/generic  best/memcpy\n");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        printf("%-12s", cases[c].name);
        double tg = 0, tb = 1e30;
        for (int i = 0; i < RILL__ISA_COUNT; i++) {
            const rill__loops *l = rill__loops_for((rill__isa)i);
            if (!l) continue;
            cases[c].f(l); /* warm */
            double t = best_of(cases[c].f, l, reps);
            if (i == RILL__ISA_GENERIC) tg = t;
            if (t < tb) tb = t;
            printf("  %6.3f ns/elem  ", t / (double)n * 1e9);
        }
        double floor_t = mc * cases[c].arrays / 2.0;
        printf("   %5.2fx faster  %5.2fx\n", tg / tb, tb / floor_t);
    }
    printf("\nchosen here: %s\n", rill__loops_get()->isa);
    return 0;
}
