/* bench_gemm.c - sgemm of the candidate CPU matrix libraries on the shapes rill's models need:
 * the 784-512-512-10 MLP at batch 256 (three forward products, three weight gradients X^T dY,
 * two input gradients dY W^T) and 1024^3. Each library is loaded with dlopen (RTLD_LOCAL: each
 * brings its own cblas_sgemm) and runs on the same threads; the kernel or ISA each one chose is
 * printed, since a library that does not know the CPU falls back to generic kernels.
 *
 *   bench_gemm [threads] [lib...]   lib: openblas, blis, dnnl (default: all three)
 *
 * OpenBLAS reads OPENBLAS_CORETYPE when it loads: run again with it set (e.g. SkylakeX) to see a
 * forced kernel. oneDNN runs on its OpenMP threads (OMP_NUM_THREADS is set from `threads`). */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct shape {
    const char *what;
    char ta, tb; /* 'N' or 'T' (row-major, as TF's MatMul transpose_a/transpose_b) */
    int64_t m, n, k;
} shape;

static const shape shapes[] = {
    {"fwd  x[256,784] w1[784,512]", 'N', 'N', 256, 512, 784},
    {"fwd  h[256,512] w2[512,512]", 'N', 'N', 256, 512, 512},
    {"fwd  h[256,512] w3[512,10]", 'N', 'N', 256, 10, 512},
    {"dw1  x^T[784,256] dy[256,512]", 'T', 'N', 784, 512, 256},
    {"dw2  h^T[512,256] dy[256,512]", 'T', 'N', 512, 512, 256},
    {"dw3  h^T[512,256] dy[256,10]", 'T', 'N', 512, 10, 256},
    {"dx2  dy[256,512] w2^T", 'N', 'T', 256, 512, 512},
    {"dx3  dy[256,10] w3^T", 'N', 'T', 256, 512, 10},
    {"1024^3", 'N', 'N', 1024, 1024, 1024},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

/* C = A op B, row-major, alpha 1, beta 0. */
typedef void (*gemm_fn)(void *lib, char ta, char tb, int64_t m, int64_t n, int64_t k,
                        const float *a, const float *b, float *c);

typedef struct lib {
    const char *name;
    void *h;
    gemm_fn gemm;
    char kernel[160];
    void (*cblas)(int, int, int, int, int, int, float, const float *, int, const float *, int,
                  float, float *, int);
    int (*dnnl)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t,
                const float *, int64_t, float, float *, int64_t);
} lib;

enum { CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 };

static void cblas_gemm(void *lp, char ta, char tb, int64_t m, int64_t n, int64_t k,
                       const float *a, const float *b, float *c)
{
    lib *l = lp;
    int lda = ta == 'N' ? (int)k : (int)m, ldb = tb == 'N' ? (int)n : (int)k;
    l->cblas(CblasRowMajor, ta == 'N' ? CblasNoTrans : CblasTrans,
             tb == 'N' ? CblasNoTrans : CblasTrans, (int)m, (int)n, (int)k, 1.0f, a, lda, b, ldb,
             0.0f, c, (int)n);
}

static void dnnl_gemm(void *lp, char ta, char tb, int64_t m, int64_t n, int64_t k,
                      const float *a, const float *b, float *c)
{
    lib *l = lp;
    int64_t lda = ta == 'N' ? k : m, ldb = tb == 'N' ? n : k;
    l->dnnl(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n);
}

static bool load(lib *l, const char *name, int threads)
{
    memset(l, 0, sizeof *l);
    l->name = name;
    if (strcmp(name, "openblas") == 0) {
        l->h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
        if (!l->h) return false;
        void (*set)(int) = (void (*)(int))dlsym(l->h, "openblas_set_num_threads");
        char *(*core)(void) = (char *(*)(void))dlsym(l->h, "openblas_get_corename");
        if (set) set(threads);
        snprintf(l->kernel, sizeof l->kernel, "core %s%s", core ? core() : "?",
                 getenv("OPENBLAS_CORETYPE") ? " (OPENBLAS_CORETYPE)" : " (detected)");
    } else if (strcmp(name, "blis") == 0) {
        l->h = dlopen("/usr/lib/x86_64-linux-gnu/blis-pthread/libblis.so.4", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
        if (!l->h) return false;
        void (*set)(int64_t) = (void (*)(int64_t))dlsym(l->h, "bli_thread_set_num_threads");
        int (*arch)(void) = (int (*)(void))dlsym(l->h, "bli_arch_query_id");
        char *(*arch_name)(int) = (char *(*)(int))dlsym(l->h, "bli_arch_string");
        if (set) set(threads);
        snprintf(l->kernel, sizeof l->kernel, "arch %s", arch && arch_name ? arch_name(arch()) : "?");
    } else if (strcmp(name, "dnnl") == 0) {
        char t[16];
        snprintf(t, sizeof t, "%d", threads);
        setenv("OMP_NUM_THREADS", t, 1);
        l->h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
        if (!l->h) return false;
        l->dnnl = (int (*)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t,
                           const float *, int64_t, float, float *, int64_t))dlsym(l->h, "dnnl_sgemm");
        int (*isa)(void) = (int (*)(void))dlsym(l->h, "dnnl_get_effective_cpu_isa");
        int v = isa ? isa() : -1;
        const char *n = v == 0x3e7 ? "avx512_core_amx" : v == 0xe7 ? "avx512_core_bf16"
                        : v == 0x67 ? "avx512_core_vnni" : v == 0x27 ? "avx512_core"
                        : v == 0x407 ? "avx2_vnni" : v == 0x7 ? "avx2" : v == 0x3 ? "avx"
                        : v == 0x1 ? "sse41" : "?";
        snprintf(l->kernel, sizeof l->kernel, "isa %s", n);
        l->gemm = dnnl_gemm;
        return l->dnnl != NULL;
    } else {
        return false;
    }
    l->cblas = (void (*)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int))dlsym(l->h, "cblas_sgemm");
    l->gemm = cblas_gemm;
    return l->cblas != NULL;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    const char *all[] = {"openblas", "blis", "dnnl"};
    const char **names = argc > 2 ? (const char **)argv + 2 : all;
    int nlib = argc > 2 ? argc - 2 : 3;
    float *a = malloc(sizeof(float) << 20), *b = malloc(sizeof(float) << 20),
          *c = malloc(sizeof(float) << 20);
    for (int64_t i = 0; i < (int64_t)1 << 20; i++) {
        a[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
        b[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    }
    printf("sgemm, %d threads; GFLOP/s (2mnk / best of the runs); MLP step = the 8 products of "
           "one training step\n",
           threads);
    for (int li = 0; li < nlib; li++) {
        lib l;
        if (!load(&l, names[li], threads)) {
            printf("\n%s: not available (%s)\n", names[li], dlerror() ? dlerror() : "missing symbol");
            continue;
        }
        printf("\n%s, %s\n", l.name, l.kernel);
        double step = 0, step_flops = 0, worst_err = 0;
        for (int s = 0; s < NSHAPES; s++) {
            const shape *sh = &shapes[s];
            int reps = sh->m * sh->n * sh->k > 100000000 ? 5 : 40;
            l.gemm(&l, sh->ta, sh->tb, sh->m, sh->n, sh->k, a, b, c); /* warm */
            double best = 1e30;
            for (int r = 0; r < reps; r++) {
                double t0 = now();
                l.gemm(&l, sh->ta, sh->tb, sh->m, sh->n, sh->k, a, b, c);
                double t = now() - t0;
                if (t < best) best = t;
            }
            /* Spot-check 64 entries against a double-precision dot product. */
            for (int q = 0; q < 64; q++) {
                int64_t i = (q * 37) % sh->m, j = (q * 101) % sh->n;
                double d = 0;
                for (int64_t p = 0; p < sh->k; p++) {
                    float av = sh->ta == 'N' ? a[i * sh->k + p] : a[p * sh->m + i];
                    float bv = sh->tb == 'N' ? b[p * sh->n + j] : b[j * sh->k + p];
                    d += (double)av * bv;
                }
                double e = (c[i * sh->n + j] - d) / (1 + (d < 0 ? -d : d));
                if (e < 0) e = -e;
                if (e > worst_err) worst_err = e;
            }
            double flops = 2.0 * (double)sh->m * (double)sh->n * (double)sh->k;
            printf("  %-32s %c%c %7.1f GFLOP/s  %8.3f ms\n", sh->what, sh->ta, sh->tb,
                   flops / best / 1e9, best * 1e3);
            if (s < NSHAPES - 1) {
                step += best;
                step_flops += flops;
            }
        }
        printf("  MLP step's GEMMs: %.3f ms, %.1f GFLOP/s; worst relative error %.1e\n",
               step * 1e3, step_flops / step / 1e9, worst_err);
        printf("RESULT lib=%s kernel=\"%s\" mlp_gemm_ms=%.3f mlp_gflops=%.1f\n", l.name, l.kernel,
               step * 1e3, step_flops / step / 1e9);
    }
    free(a);
    free(b);
    free(c);
    return 0;
}
