/* test_cpu_gemm.c - the CPU's matrix products (src/kernels/cpu/gemm.c) against a double-precision
 * reference: float (oneDNN) and double (rill's own loop), every transpose combination, shapes
 * from 1x1x1 to ones big enough to be split by rows over the intra-op pool (with the pool and
 * without), strides wider than the matrices, and empty inner dimensions. */
#include "test.h"

#include "core/core.h"
#include "kernels/cpu/gemm.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static uint64_t rng = 0x2545f4914f6cdd1dull;
static double uniform(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1;
}

/* C[m, n] = op(A) op(B) in double, A stored [m, k] (or [k, m] when ta) with row stride lda. */
static void reference(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double *a,
                      int64_t lda, const double *b, int64_t ldb, double *c)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++)
                s +=
                    (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
            c[i * n + j] = s;
        }
}

static void one_case(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int pad, bool pool)
{
    int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    int64_t lda = ac + pad, ldb = bc + pad, ldc = n + pad;
    size_t na = (size_t)(ar * lda + 1), nb = (size_t)(br * ldb + 1), nc = (size_t)(m * ldc + 1);
    double *ad = malloc(na * sizeof *ad), *bd = malloc(nb * sizeof *bd);
    double *ref = malloc((size_t)(m * n + 1) * sizeof *ref), *cd = malloc(nc * sizeof *cd);
    float *af = malloc(na * sizeof *af), *bf = malloc(nb * sizeof *bf),
          *cf = malloc(nc * sizeof *cf);
    for (size_t i = 0; i < na; i++) af[i] = (float)(ad[i] = (float)uniform());
    for (size_t i = 0; i < nb; i++) bf[i] = (float)(bd[i] = (float)uniform());
    for (size_t i = 0; i < nc; i++) cf[i] = 1234.5f, cd[i] = 1234.5; /* overwritten: beta is 0 */
    reference(ta, tb, m, n, k, ad, lda, bd, ldb, ref);
    rill__threadpool *p = pool ? rill__default_pool() : NULL;
    bool ok = rill__gemm_f32(p, ta, tb, m, n, k, af, lda, bf, ldb, cf, ldc);
    rill__gemm_f64(p, ta, tb, m, n, k, ad, lda, bd, ldb, cd, ldc);
    double worst_f = 0, worst_d = 0;
    bool pad_kept = true;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double r = ref[i * n + j], tol = 1 + fabs(r);
            worst_f = fmax(worst_f, fabs(cf[i * ldc + j] - r) / tol);
            worst_d = fmax(worst_d, fabs(cd[i * ldc + j] - r) / tol);
        }
        for (int64_t j = n; j < ldc && i < m - 1; j++)
            pad_kept = pad_kept && cf[i * ldc + j] == 1234.5f && cd[i * ldc + j] == 1234.5;
    }
    char label[128];
    snprintf(label, sizeof label, "%c%c m=%lld n=%lld k=%lld pad=%d pool=%d", ta ? 'T' : 'N',
             tb ? 'T' : 'N', (long long)m, (long long)n, (long long)k, pad, pool);
    /* float: k products of numbers below 1 in magnitude, each rounded: ~k * 2^-24 at worst. */
    bool good = CHECK(ok);
    good = CHECK(worst_f <= 4e-7 * (double)(k + 1)) && good;
    good = CHECK(worst_d <= 1e-14 * (double)(k + 1)) && good;
    good = CHECK(pad_kept) && good;
    if (!good)
        fprintf(stderr, "  case %s: float error %.3g, double error %.3g\n", label, worst_f,
                worst_d);
    free(ad), free(bd), free(ref), free(cd), free(af), free(bf), free(cf);
}

int main(void)
{
    const int64_t shapes[][3] = {{1, 1, 1},     {7, 5, 3},      {3, 7, 0},       {16, 1, 300},
                                 {300, 70, 90}, {256, 512, 64}, {1000, 10, 600}, {64, 513, 257}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (int pool = 0; pool < 2; pool++)
                one_case(t & 1, t & 2, shapes[s][0], shapes[s][1], shapes[s][2], (int)(s % 3) * 5,
                         pool);
    printf("gemm: %s\n", rill__gemm_info());
    CHECK_STR_CONTAINS(rill__gemm_info(), "oneDNN");
    TEST_MAIN_END();
}
