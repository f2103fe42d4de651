/* bench_devices.c - what each device of this process does with large elementwise ops, a MatMul
 * and host<->device copies, in one run.
 *
 * Devices: CPU:0 and every GPU the device manager sees. RILL_OPENCL_CPU_AS_GPU defaults to 1 so
 * that PoCL's CPU device shows up as a GPU; such a GPU is reported as a PoCL stand-in (it is the
 * same CPU cores behind an OpenCL queue), a GPU-type OpenCL device as real.
 *
 * Ops run through real sessions, the graph pinned to the device with rill_graph_push_device. The
 * inputs are variables initialised on the device (RandomUniform runs there), and the op is run as
 * a target, so its output stays on the device: the timing is the op and the session step, not
 * copies. OpenCL kernels are queued, so each timed step ends with the device's sync. Traffic for
 * Add and Mul counts three tensors (two reads, one write); MatMul counts 2*M*N*K flops.
 *
 * Copies use the device layer directly (rill__devices, ops->copy_to_device/copy_from_device into
 * a buffer from rill__buffer_new_on) and are compared with memcpy of the same size on the host in
 * the same run. GB/s there counts the bytes copied once.
 *
 * Every result is checked once before timing: Add and Mul over every element against the host,
 * MatMul at a few entries against a double-precision dot product, copies by a round trip, so a
 * broken kernel cannot post a fast number. Each figure is the median of 5 repetitions after a
 * warm-up; a repetition runs the step enough times to last ~50 ms. */
#include <rill/rill.h>

#include "core/core.h"
#include "device/device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS              5
#define MAX_DEVS          16
#define ELEMS_DEFAULT     (16 * 1024 * 1024)
#define MATMUL_DEFAULT    1024
#define COPY_BYTES        ((size_t)64 << 20)
#define MATMUL_MAX_STEP_S 5.0  /* 7 steps of this keep the run within ~60 s */
#define REP_SECONDS       0.05 /* a repetition repeats the step to last at least this long */

typedef struct dev_result {
    rill__device *dev;
    bool standin; /* an OpenCL CPU device counted as a GPU */
    double add_gbps, mul_gbps, matmul_gflops;
    int matmul_n;             /* the MatMul size actually used (smaller when the device is slow) */
    double matmul_cpu_gflops; /* CPU:0 at matmul_n, for the ratio */
    double h2d_gbps, d2h_gbps;
    const char *error; /* first failure, or NULL */
} dev_result;

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

static bool dev_sync(rill__device *d, rill_status *s)
{
    return !d->ops || !d->ops->sync || d->ops->sync(d, s);
}

/* One step: run target as the only target, then wait for the device. */
static bool step(rill_session *sess, rill_node *target, rill__device *d, rill_status *s)
{
    return rill_session_run_targets(sess, &target, 1, s) == RILL_OK && dev_sync(d, s);
}

/* Seconds per step of `target`, median of REPS after a warm-up. Returns -1 with s set on
 * failure. */
static double time_target(rill_session *sess, rill_node *target, rill__device *d, rill_status *s)
{
    double t0 = rill__now_seconds();
    if (!step(sess, target, d, s)) return -1;
    double warm = rill__now_seconds() - t0;
    int iters = warm > REP_SECONDS ? 1 : (int)(REP_SECONDS / (warm > 1e-6 ? warm : 1e-6));
    if (iters > 200) iters = 200;
    double t[REPS];
    for (int r = 0; r < REPS; r++) {
        t0 = rill__now_seconds();
        for (int i = 0; i < iters; i++)
            if (!step(sess, target, d, s)) return -1;
        t[r] = (rill__now_seconds() - t0) / iters;
    }
    return median(t, REPS);
}

static void device_spec(const rill__device *d, char *buf, size_t n)
{
    snprintf(buf, n, "/device:%s:%d", d->type, d->id);
}

/* A graph whose nodes all ask for device d. */
static rill_graph *graph_on(rill__device *d)
{
    char spec[64];
    device_spec(d, spec, sizeof spec);
    rill_graph *g = rill_graph_new();
    rill_graph_set_seed(g, 7);
    rill_graph_push_device(g, spec);
    return g;
}

static bool fetch(rill_session *sess, const rill_output *outs, rill_tensor **vals, int n,
                  rill_status *s)
{
    return rill_session_run(sess, NULL, NULL, 0, outs, vals, n, NULL, 0, s) == RILL_OK;
}

/* --- 1. Add and Mul of two n-element float vectors --- */
static bool bench_elementwise(rill__device *d, int64_t n, double *add_gbps, double *mul_gbps,
                              rill_status *s)
{
    bool ok = false;
    rill_tensor *vals[4] = {NULL, NULL, NULL, NULL};
    rill_graph *g = graph_on(d);
    rill_output a = rill_variable(g, RILL_FLOAT, rill_shape_vector(n),
                                  rill_random_uniform_initializer(-1, 1, 1), false, "a");
    rill_output b = rill_variable(g, RILL_FLOAT, rill_shape_vector(n),
                                  rill_random_uniform_initializer(-1, 1, 2), false, "b");
    rill_output sum = rill_add(g, a, b, "add");
    rill_output prod = rill_mul(g, a, b, "mul");
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_session *sess = NULL;
    if (!rill_graph_ok(g)) {
        rill_status_copy(s, rill_graph_status(g));
        goto done;
    }
    sess = rill_session_new(g, NULL, s);
    if (!sess || rill_session_run_targets(sess, &init, 1, s) != RILL_OK) goto done;

    /* Correctness, every element: the device's sums and products of its own inputs. */
    rill_output outs[4] = {a, b, sum, prod};
    if (!fetch(sess, outs, vals, 4, s)) goto done;
    const float *pa = rill_tensor_data(vals[0]), *pb = rill_tensor_data(vals[1]);
    const float *ps = rill_tensor_data(vals[2]), *pp = rill_tensor_data(vals[3]);
    if (pa[0] == pa[n - 1] && pa[1] == pa[n / 2]) {
        rill_status_set(s, RILL_INTERNAL, "initializer gave a constant vector on %s", d->name);
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        if (ps[i] != pa[i] + pb[i] || pp[i] != pa[i] * pb[i]) {
            rill_status_set(s, RILL_INTERNAL,
                            "wrong result on %s at element %lld: %g+%g gave %g, %g*%g gave %g",
                            d->name, (long long)i, pa[i], pb[i], ps[i], pa[i], pb[i], pp[i]);
            goto done;
        }
    }
    for (int i = 0; i < 4; i++) {
        rill_tensor_free(vals[i]);
        vals[i] = NULL;
    }

    double bytes = 3.0 * (double)n * sizeof(float);
    double ta = time_target(sess, sum.node, d, s);
    if (ta < 0) goto done;
    double tm = time_target(sess, prod.node, d, s);
    if (tm < 0) goto done;
    *add_gbps = bytes / ta / 1e9;
    *mul_gbps = bytes / tm / 1e9;
    ok = true;
done:
    for (int i = 0; i < 4; i++) rill_tensor_free(vals[i]);
    rill_session_free(sess);
    rill_graph_free(g);
    return ok;
}

/* --- 2. MatMul n x n x n --- */
/* When the first step (the checked one) takes over max_step_s, stops there with *gflops = 0 so
 * the caller can try a smaller n. */
static bool bench_matmul(rill__device *d, int n, double max_step_s, double *gflops, rill_status *s)
{
    bool ok = false;
    rill_tensor *vals[3] = {NULL, NULL, NULL};
    rill_graph *g = graph_on(d);
    rill_output a = rill_variable(g, RILL_FLOAT, rill_shape_matrix(n, n),
                                  rill_random_uniform_initializer(-1, 1, 3), false, "ma");
    rill_output b = rill_variable(g, RILL_FLOAT, rill_shape_matrix(n, n),
                                  rill_random_uniform_initializer(-1, 1, 4), false, "mb");
    rill_output c = rill_matmul(g, a, b, false, false, "matmul");
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_session *sess = NULL;
    if (!rill_graph_ok(g)) {
        rill_status_copy(s, rill_graph_status(g));
        goto done;
    }
    sess = rill_session_new(g, NULL, s);
    if (!sess || rill_session_run_targets(sess, &init, 1, s) != RILL_OK) goto done;

    double t0 = rill__now_seconds();
    rill_output outs[3] = {a, b, c};
    if (!fetch(sess, outs, vals, 3, s)) goto done;
    double first_step = rill__now_seconds() - t0;
    const float *pa = rill_tensor_data(vals[0]), *pb = rill_tensor_data(vals[1]);
    const float *pc = rill_tensor_data(vals[2]);
    /* Corners, the middle and scattered entries, against a double dot product. */
    srand48(5);
    for (int k = 0; k < 32; k++) {
        int i = k == 0 ? 0 : k == 1 ? n - 1 : k == 2 ? n / 2 : (int)(drand48() * n);
        int j = k == 0 ? 0 : k == 1 ? n - 1 : k == 2 ? n / 3 : (int)(drand48() * n);
        double ref = 0, mag = 0;
        for (int l = 0; l < n; l++) {
            ref += (double)pa[(size_t)i * n + l] * pb[(size_t)l * n + j];
            mag += fabs((double)pa[(size_t)i * n + l] * pb[(size_t)l * n + j]);
        }
        double got = pc[(size_t)i * n + j];
        if (fabs(got - ref) > 1e-5 * mag + 1e-6) {
            rill_status_set(s, RILL_INTERNAL, "wrong MatMul on %s at [%d,%d]: %.7g, expected %.7g",
                            d->name, i, j, got, ref);
            goto done;
        }
    }
    *gflops = 0;
    if (first_step > max_step_s) {
        ok = true;
        goto done;
    }
    double t = time_target(sess, c.node, d, s);
    if (t < 0) goto done;
    *gflops = 2.0 * n * (double)n * n / t / 1e9;
    ok = true;
done:
    for (int i = 0; i < 3; i++) rill_tensor_free(vals[i]);
    rill_session_free(sess);
    rill_graph_free(g);
    return ok;
}

/* --- 3. host<->device copies, and memcpy as the baseline --- */
static void *host_block(size_t n, unsigned char fill)
{
    void *p = rill__aligned_alloc(n);
    RILL_CHECK_ALLOC(p);
    memset(p, fill, n); /* touch every page before timing */
    return p;
}

static double memcpy_gbps(size_t n)
{
    unsigned char *src = host_block(n, 1), *dst = host_block(n, 2);
    memcpy(dst, src, n);
    double t[REPS];
    for (int r = 0; r < REPS; r++) {
        src[r] = (unsigned char)r; /* keep the copies from being merged */
        double t0 = rill__now_seconds();
        memcpy(dst, src, n);
        t[r] = rill__now_seconds() - t0;
    }
    volatile unsigned char sink = dst[REPS / 2];
    (void)sink;
    rill__aligned_free(src, n);
    rill__aligned_free(dst, n);
    return (double)n / median(t, REPS) / 1e9;
}

static bool bench_copies(rill__device *d, size_t n, double *h2d, double *d2h, rill_status *s)
{
    bool ok = false;
    unsigned char *src = host_block(n, 0), *back = host_block(n, 0);
    for (size_t i = 0; i < n; i++) src[i] = (unsigned char)(i * 2654435761u >> 13);
    rill__buffer *buf = rill__buffer_new_on(d, RILL_FLOAT, (int64_t)(n / sizeof(float)));
    if (!buf) {
        rill_status_set(s, RILL_RESOURCE_EXHAUSTED, "cannot allocate %zu bytes on %s", n, d->name);
        goto done;
    }
    /* The warm-up round trip is the correctness check. */
    if (!d->ops->copy_to_device(d, buf->data, 0, src, n, s) ||
        !d->ops->copy_from_device(d, back, buf->data, 0, n, s) || !dev_sync(d, s))
        goto done;
    if (memcmp(src, back, n) != 0) {
        rill_status_set(s, RILL_INTERNAL, "host->device->host round trip changed the bytes on %s",
                        d->name);
        goto done;
    }
    double th[REPS], td[REPS];
    for (int r = 0; r < REPS; r++) {
        double t0 = rill__now_seconds();
        if (!d->ops->copy_to_device(d, buf->data, 0, src, n, s) || !dev_sync(d, s)) goto done;
        th[r] = rill__now_seconds() - t0;
        t0 = rill__now_seconds();
        if (!d->ops->copy_from_device(d, back, buf->data, 0, n, s) || !dev_sync(d, s)) goto done;
        td[r] = rill__now_seconds() - t0;
    }
    *h2d = (double)n / median(th, REPS) / 1e9;
    *d2h = (double)n / median(td, REPS) / 1e9;
    ok = true;
done:
    if (buf) rill__buffer_unref(buf);
    rill__aligned_free(src, n);
    rill__aligned_free(back, n);
    return ok;
}

static const char *short_name(const rill__device *d, char *buf, size_t n)
{
    snprintf(buf, n, "%s:%d", d->type, d->id);
    return buf;
}

static void ratio(char *buf, size_t n, double x, double base)
{
    if (x > 0 && base > 0)
        snprintf(buf, n, "%.2fx", x / base);
    else
        snprintf(buf, n, "-");
}

int main(int argc, char **argv)
{
    /* Optional sizes for quick runs: bench_devices [elements] [matmul_n]. */
    int64_t elems = argc > 1 ? atoll(argv[1]) : ELEMS_DEFAULT;
    int mm_n = argc > 2 ? atoi(argv[2]) : MATMUL_DEFAULT;
    if (elems < 16 || mm_n < 4) {
        fprintf(stderr, "usage: %s [elements >= 16] [matmul_n >= 4]\n", argv[0]);
        return 2;
    }
    setenv("RILL_OPENCL_CPU_AS_GPU", "1", 0);
    double t_start = rill__now_seconds();

    rill_status *s = rill_status_new();
    rill__device *const *devs;
    int ndev = rill__devices(NULL, &devs, s);
    if (ndev < 1) {
        fprintf(stderr, "no devices: %s\n", rill_status_message(s));
        return 1;
    }
    if (ndev > MAX_DEVS) ndev = MAX_DEVS;

    printf("devices (RILL_OPENCL_CPU_AS_GPU=%s):\n", getenv("RILL_OPENCL_CPU_AS_GPU"));
    dev_result res[MAX_DEVS];
    memset(res, 0, sizeof res);
    int nreal = 0;
    for (int i = 0; i < ndev; i++) {
        char nm[32];
        res[i].dev = devs[i];
        res[i].standin = strstr(devs[i]->desc, "used as a GPU") != NULL;
        bool gpu = strcmp(devs[i]->type, "GPU") == 0;
        nreal += gpu && !res[i].standin;
        printf("  %-6s %-6s %s\n", short_name(devs[i], nm, sizeof nm),
               !gpu             ? "host"
               : res[i].standin ? "PoCL"
                                : "real",
               gpu ? devs[i]->desc : "the host's cores (rill's CPU kernels, OpenBLAS MatMul)");
    }
    if (ndev == 1)
        printf("  (no GPU: only CPU:0 is measured)\n");
    else if (nreal == 0)
        printf(
            "  no real GPU: every GPU above is PoCL running on the same CPU cores, so its ratios "
            "compare two CPU code paths, not a GPU with the CPU\n");
    /* Other processes on the cores (a parallel build, tests) move every number here. */
    FILE *la = fopen("/proc/loadavg", "r");
    double load = -1;
    if (la) {
        if (fscanf(la, "%lf", &load) != 1) load = -1;
        fclose(la);
    }
    if (load >= 0)
        printf("load average %.2f on %d cores%s\n", load, rill__num_cores(),
               load > 0.5 * rill__num_cores() ? ": the machine is busy, expect noisy numbers" : "");
    printf("sizes: Add/Mul %lld float32 elements, MatMul %dx%dx%d float32, copies %zu MiB\n",
           (long long)elems, mm_n, mm_n, mm_n, COPY_BYTES >> 20);
    fflush(stdout);

    int cpu_mm_n = 0; /* CPU:0's MatMul size and GFLOP/s, for the ratios */
    double cpu_mm_gflops = 0;
    int failures = 0;
    for (int i = 0; i < ndev; i++) {
        dev_result *r = &res[i];
        rill__device *d = r->dev;
        char nm[32];
        short_name(d, nm, sizeof nm);
        rill_status_clear(s);
        if (!bench_elementwise(d, elems, &r->add_gbps, &r->mul_gbps, s)) goto fail;
        /* MatMul: when one step takes over MATMUL_MAX_STEP_S (a slow kernel on few cores), the
         * 5+1 timed steps would blow the time budget, so it is measured at half the size, and
         * CPU:0 again at that size so that the ratio stays like for like. */
        for (r->matmul_n = mm_n;; r->matmul_n /= 2) {
            double limit = r->matmul_n >= 256 ? MATMUL_MAX_STEP_S : 1e9;
            if (!bench_matmul(d, r->matmul_n, limit, &r->matmul_gflops, s)) goto fail;
            if (r->matmul_gflops > 0) break;
            printf("  %s: one %dx%dx%d MatMul step took over %.0f s; measuring at %d instead\n", nm,
                   r->matmul_n, r->matmul_n, r->matmul_n, MATMUL_MAX_STEP_S, r->matmul_n / 2);
        }
        if (i == 0) {
            cpu_mm_n = r->matmul_n;
            cpu_mm_gflops = r->matmul_gflops;
        }
        r->matmul_cpu_gflops = cpu_mm_gflops;
        if (i > 0 && r->matmul_n != cpu_mm_n &&
            !bench_matmul(devs[0], r->matmul_n, 1e9, &r->matmul_cpu_gflops, s))
            goto fail;
        if (strcmp(d->type, "GPU") == 0) {
            if (!bench_copies(d, COPY_BYTES, &r->h2d_gbps, &r->d2h_gbps, s)) goto fail;
        }
        printf("measured %s (%.1f s so far)\n", nm, rill__now_seconds() - t_start);
        fflush(stdout);
        continue;
    fail:
        failures++;
        r->error = rill__strdup(rill_status_message(s));
        printf("FAILED on %s: %s\n", nm, r->error);
        fflush(stdout);
    }
    double mc = memcpy_gbps(COPY_BYTES);

    dev_result *cpu = &res[0];
    printf("\n%-7s %-5s | %9s %6s | %9s %6s | %16s %6s | %9s %6s | %9s %6s\n", "device", "kind",
           "add GB/s", "vs CPU", "mul GB/s", "vs CPU", "MatMul GFLOP/s", "vs CPU", "h2d GB/s",
           "vs cpy", "d2h GB/s", "vs cpy");
    for (int i = 0; i < ndev; i++) {
        dev_result *r = &res[i];
        char nm[32], mm[32], ra[16], rm[16], rg[16], rh[16] = "", rd[16] = "", h[16] = "-",
                                                     dh[16] = "-";
        bool gpu = strcmp(r->dev->type, "GPU") == 0;
        const char *kind = !gpu ? "host" : r->standin ? "PoCL" : "real";
        short_name(r->dev, nm, sizeof nm);
        if (r->error) {
            printf("%-7s %-5s | failed: %s\n", nm, kind, r->error);
            continue;
        }
        ratio(ra, sizeof ra, r->add_gbps, cpu->add_gbps);
        ratio(rm, sizeof rm, r->mul_gbps, cpu->mul_gbps);
        snprintf(mm, sizeof mm, "%.1f (n=%d)", r->matmul_gflops, r->matmul_n);
        ratio(rg, sizeof rg, r->matmul_gflops, r->matmul_cpu_gflops);
        if (gpu) {
            snprintf(h, sizeof h, "%.2f", r->h2d_gbps);
            snprintf(dh, sizeof dh, "%.2f", r->d2h_gbps);
            ratio(rh, sizeof rh, r->h2d_gbps, mc);
            ratio(rd, sizeof rd, r->d2h_gbps, mc);
        }
        printf("%-7s %-5s | %9.2f %6s | %9.2f %6s | %16s %6s | %9s %6s | %9s %6s\n", nm, kind,
               r->add_gbps, ra, r->mul_gbps, rm, mm, rg, h, rh, dh, rd);
    }
    printf("host memcpy of %zu MiB, one thread: %.2f GB/s (bytes copied per second; the copies' "
           "baseline)\n",
           COPY_BYTES >> 20, mc);
    printf("\n");
    for (int i = 0; i < ndev; i++) {
        dev_result *r = &res[i];
        char nm[32];
        short_name(r->dev, nm, sizeof nm);
        if (r->error) {
            printf("RESULT device=%s error=1\n", nm);
            continue;
        }
        printf("RESULT device=%s op=add_%lld gbps=%.3f\n", nm, (long long)elems, r->add_gbps);
        printf("RESULT device=%s op=mul_%lld gbps=%.3f\n", nm, (long long)elems, r->mul_gbps);
        printf("RESULT device=%s op=matmul_%d gflops=%.3f\n", nm, r->matmul_n, r->matmul_gflops);
        if (strcmp(r->dev->type, "GPU") == 0) {
            printf("RESULT device=%s op=copy_h2d_64MiB gbps=%.3f\n", nm, r->h2d_gbps);
            printf("RESULT device=%s op=copy_d2h_64MiB gbps=%.3f\n", nm, r->d2h_gbps);
        }
    }
    printf("RESULT device=host op=memcpy_64MiB gbps=%.3f\n", mc);
    printf("total %.1f s\n", rill__now_seconds() - t_start);
    for (int i = 0; i < ndev; i++) rill__free((void *)res[i].error);
    rill_status_free(s);
    return failures ? 1 : 0;
}
