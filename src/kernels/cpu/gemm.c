/* gemm.c - the CPU's matrix products: C = A op B, row-major, as MatMul needs them.
 *
 * float goes to oneDNN's dnnl_sgemm, the library TensorFlow and PyTorch use on CPUs: it picks
 * its kernels by CPU features (never a generic fallback on a CPU it does not know, as OpenBLAS
 * 0.3.21 does on recent Xeons), and on the MLP's shapes it beat OpenBLAS and BLIS here
 * (docs/BENCHMARKS.md, bench/bench_gemm.c). oneDNN's own threads (OpenMP) are not used: each
 * call runs on one thread, and a product is split by rows of C over rill's intra-op pool, so
 * every thread that works is rill's, bounded by its thread counts, and none spins when idle.
 * double has no oneDNN routine; it runs here, blocked, on the same rows split. */
#include "gemm.h"

#include "../../core/core.h"
#include "loops.h"

#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Below this much work (multiply-adds) per shard, splitting costs more than it saves. */
#define GEMM_SHARD_MIN (1 << 20)

/* oneDNN's OpenMP runtime reads the calling thread's nthreads ICV: set to 1 before every call
 * (a store to thread-local state; the program may change it between calls). libgomp is there
 * (oneDNN needs it); it is looked up, not linked, so that rill names no OpenMP runtime itself. */
static void (*omp_set_threads)(int);
static pthread_once_t omp_once = PTHREAD_ONCE_INIT;

static void find_omp(void)
{
    omp_set_threads = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
}

void rill__onednn_one_thread(void)
{
    pthread_once(&omp_once, find_omp);
    if (omp_set_threads) omp_set_threads(1);
}

typedef struct gemm_job {
    bool ta, tb;
    int64_t n, k;
    const void *a, *b;
    void *c;
    int64_t lda, ldb, ldc;
    bool f64;
    bool failed;
    const float *bias; /* float: then C's rows += bias, and max(C, 0) when relu */
    bool relu;
} gemm_job;

/* Rows [r0, r1) of C: A's rows (or, transposed, its columns) r0.. against all of B. */
static void sgemm_rows(const gemm_job *j, int64_t r0, int64_t r1, bool *failed)
{
    rill__onednn_one_thread();
    const float *a = (const float *)j->a + (j->ta ? r0 : r0 * j->lda);
    dnnl_status_t st =
        dnnl_sgemm(j->ta ? 'T' : 'N', j->tb ? 'T' : 'N', r1 - r0, j->n, j->k, 1.0f, a, j->lda, j->b,
                   j->ldb, 0.0f, (float *)j->c + r0 * j->ldc, j->ldc);
    if (st != dnnl_success) *failed = true;
}

/* double: C rows r0..r1 = sum over p of A[i, p] B[p, :], in blocks of 64 along k so a block of
 * B stays in cache; the inner loop runs along a row of B (vectorised). */
static void dgemm_rows(const gemm_job *j, int64_t r0, int64_t r1)
{
    const double *A = j->a, *B = j->b;
    double *C = j->c;
    int64_t n = j->n, k = j->k;
    double *bt = NULL; /* B^T made row-major once per shard when transposed */
    if (j->tb) {
        bt = rill__malloc((size_t)(k * n > 0 ? k * n : 1) * sizeof *bt);
        RILL_CHECK_ALLOC(bt);
        for (int64_t p = 0; p < k; p++)
            for (int64_t q = 0; q < n; q++) bt[p * n + q] = B[q * j->ldb + p];
    }
    const double *Bm = bt ? bt : B;
    int64_t ldb = bt ? n : j->ldb;
    for (int64_t i = r0; i < r1; i++) memset(C + i * j->ldc, 0, (size_t)n * sizeof *C);
    for (int64_t p0 = 0; p0 < k; p0 += 64) {
        int64_t p1 = p0 + 64 < k ? p0 + 64 : k;
        for (int64_t i = r0; i < r1; i++) {
            double *restrict c = C + i * j->ldc;
            for (int64_t p = p0; p < p1; p++) {
                double av = j->ta ? A[p * j->lda + i] : A[i * j->lda + p];
                const double *restrict b = Bm + p * ldb;
                for (int64_t q = 0; q < n; q++) c[q] += av * b[q];
            }
        }
    }
    rill__free(bt);
}

static void gemm_range(void *arg, int64_t r0, int64_t r1)
{
    gemm_job *j = arg;
    if (j->f64) {
        dgemm_rows(j, r0, r1);
    } else {
        bool failed = false;
        sgemm_rows(j, r0, r1, &failed);
        if (failed) j->failed = true; /* a bool set to true by any shard: no torn value */
        if (j->bias) {                /* while the rows are still in cache */
            const rill__loops *l = rill__loops_get();
            for (int64_t i = r0; i < r1; i++)
                l->f32.bias_act((float *)j->c + i * j->ldc, j->bias, j->relu, j->n);
        }
    }
}

static bool run(rill__threadpool *pool, gemm_job *j, int64_t m)
{
    if (m <= 0 || j->n <= 0) return true;
    if (j->k <= 0) { /* an empty sum: zeros (oneDNN leaves C alone) */
        size_t es = j->f64 ? sizeof(double) : sizeof(float);
        for (int64_t i = 0; i < m; i++)
            memset((char *)j->c + (size_t)(i * j->ldc) * es, 0, (size_t)j->n * es);
        return true;
    }
    int64_t per_row = j->n * j->k > 0 ? j->n * j->k : 1;
    int64_t min_rows = GEMM_SHARD_MIN / per_row;
    if (min_rows < 8) min_rows = 8; /* whole register blocks of rows */
    if (pool)
        rill__parallel_for(pool, m, min_rows, gemm_range, j);
    else
        gemm_range(j, 0, m);
    return !j->failed;
}

bool rill__gemm_f32(rill__threadpool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc)
{
    gemm_job j = {ta, tb, n, k, a, b, c, lda, ldb, ldc, false, false, NULL, false};
    return run(pool, &j, m);
}

bool rill__gemm_f32_bias(rill__threadpool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                         const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                         int64_t ldc, const float *bias, bool relu)
{
    gemm_job j = {ta, tb, n, k, a, b, c, lda, ldb, ldc, false, false, bias, relu};
    if (j.k <= 0 && m > 0 && n > 0) { /* zeros, then the bias (and Relu) as the shards would */
        run(pool, &j, m);
        for (int64_t i = 0; i < m; i++) rill__loops_get()->f32.bias_act(c + i * ldc, bias, relu, n);
        return true;
    }
    return run(pool, &j, m);
}

void rill__gemm_f64(rill__threadpool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                    const double *a, int64_t lda, const double *b, int64_t ldb, double *c,
                    int64_t ldc)
{
    gemm_job j = {ta, tb, n, k, a, b, c, lda, ldb, ldc, true, false, NULL, false};
    run(pool, &j, m);
}

static const char *isa_name(dnnl_cpu_isa_t isa)
{
    switch (isa) {
    case dnnl_cpu_isa_sse41:
        return "sse41";
    case dnnl_cpu_isa_avx:
        return "avx";
    case dnnl_cpu_isa_avx2:
        return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
        return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core:
        return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
        return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
        return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
        return "avx512_core_amx";
    default:
        return "other";
    }
}

static char info[160];
static pthread_once_t info_once = PTHREAD_ONCE_INIT;

static void make_info(void)
{
    const dnnl_version_t *v = dnnl_version();
    snprintf(info, sizeof info, "oneDNN %d.%d.%d (dnnl_sgemm), isa %s, on rill's intra-op threads",
             v->major, v->minor, v->patch, isa_name(dnnl_get_effective_cpu_isa()));
}

const char *rill__gemm_info(void)
{
    pthread_once(&info_once, make_info);
    return info;
}
