/* test_cpu_loops.c - the CPU kernels' vector loops (src/kernels/cpu/loops.h) in every version
 * this build and CPU can run, against the generic one: the same bits for every function, length
 * (0 to a few hundred, at misaligned starts) and special value (NaN, infinities, -0, overflow
 * and underflow of exp). The generic version is checked against double-precision references,
 * and CRC32C's hardware path against its tables. Versions this CPU cannot run are reported as
 * skipped parts. */
#include "test.h"

#include "core/core.h"
#include "core/cpu.h"
#include "kernels/cpu/loops.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAXN 600
#define PAD  8 /* elements before each buffer's start, for misaligned starts */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double uniform(double lo, double hi)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

/* Inputs with the values that break vector code: NaN, infinities, signed zeros, exp's overflow
 * and underflow thresholds, denormals. */
static void fill(double *x, int n, double lo, double hi)
{
    static const double special[] = {NAN,    INFINITY, -INFINITY, 0.0,   -0.0,   88.7,
                                     88.73,  -87.33,   -87.34,    1e-40, -1e-40, 0.625,
                                     -0.625, 20,       -20,       1e30};
    for (int i = 0; i < n; i++) {
        uint64_t r = (uint64_t)(uniform(0, 1) * 16);
        x[i] = r == 0 ? special[(size_t)uniform(0, 16) % 16] : uniform(lo, hi);
    }
}

/* The same bits, except that any NaN equals any NaN: which NaN an operation returns when both
 * operands are NaN (say inf + -inf meets a NaN input) depends on the order the compiler gives the
 * operands, and a NaN's sign and payload mean nothing here. */
static bool same_bits_f(const float *a, const float *b, int n)
{
    for (int i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) != 0 && !(isnan(a[i]) && isnan(b[i]))) return false;
    return true;
}
static bool same_bits_d(const double *a, const double *b, int n)
{
    for (int i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) != 0 && !(isnan(a[i]) && isnan(b[i]))) return false;
    return true;
}

/* Buffers: x, y, z inputs; o and o_ref outputs (two each for the two-output updates). */
typedef struct bufs {
    float xf[MAXN + PAD], yf[MAXN + PAD], zf[MAXN + PAD], of[4][MAXN + PAD];
    double xd[MAXN + PAD], yd[MAXN + PAD], zd[MAXN + PAD], od[4][MAXN + PAD];
} bufs;
static bufs B;

static void set_inputs(int n, int off, double lo, double hi)
{
    double x[MAXN + PAD], y[MAXN + PAD], z[MAXN + PAD];
    fill(x, n + off, lo, hi);
    fill(y, n + off, lo, hi);
    for (int i = 0; i < n + off; i++) z[i] = uniform(0, 2); /* second moments stay >= 0 */
    for (int i = 0; i < n + off; i++) {
        B.xf[i] = (float)x[i], B.yf[i] = (float)y[i], B.zf[i] = (float)z[i];
        B.xd[i] = x[i], B.yd[i] = y[i], B.zd[i] = z[i];
    }
}

/* Runs CALL(L, o) for the version under test and for generic into two output sets and compares
 * them; label names the function. */
static int mismatches;
static char first_mismatch[160];
static void note(bool same, const char *what, int n, int off)
{
    if (same) return;
    if (!mismatches++)
        snprintf(first_mismatch, sizeof first_mismatch, "%s, n=%d, offset=%d", what, n, off);
}

static void compare_versions(const rill__loops *L, const rill__loops *G)
{
    mismatches = 0;
    for (int n = 0; n <= MAXN; n += n < 40 ? 1 : 37) {
        for (int off = 0; off < 3; off++) {
            set_inputs(n, off, -30, 30);
            float *xf = B.xf + off, *yf = B.yf + off, *zf = B.zf + off;
            double *xd = B.xd + off, *yd = B.yd + off, *zd = B.zd + off;
#define BOTH(FN, ...)                                                                              \
    do {                                                                                           \
        const rill__loops *V_[2] = {L, G};                                                         \
        for (int v_ = 0; v_ < 2; v_++) {                                                           \
            float *of = B.of[v_] + off;                                                            \
            double *od = B.od[v_] + off;                                                           \
            memset(B.of[v_], 0, sizeof B.of[v_]);                                                  \
            memset(B.od[v_], 0, sizeof B.od[v_]);                                                  \
            const rill__loops *l_ = V_[v_];                                                        \
            __VA_ARGS__;                                                                           \
        }                                                                                          \
        note(same_bits_f(B.of[0], B.of[1], MAXN + PAD), FN " f32", n, off);                        \
        note(same_bits_d(B.od[0], B.od[1], MAXN + PAD), FN " f64", n, off);                        \
    } while (0)
            for (int op = RILL__BIN_ADD; op <= RILL__BIN_MIN; op++)
                for (int form = RILL__FORM_SAME; form <= RILL__FORM_B_SCALAR; form++) {
                    BOTH("binary", l_->f32.binary(op, form, of, xf, yf, 0, n);
                         l_->f64.binary(op, form, od, xd, yd, 0, n));
                    /* A range inside the arrays, as the intra-op shards call it. */
                    if (n > 4)
                        BOTH("binary range", l_->f32.binary(op, form, of, xf, yf, 2, n - 1);
                             l_->f64.binary(op, form, od, xd, yd, 2, n - 1));
                }
            BOTH("relu", l_->f32.relu(of, xf, 0, n); l_->f64.relu(od, xd, 0, n));
            BOTH("relu_grad", l_->f32.relu_grad(of, xf, yf, 0, n);
                 l_->f64.relu_grad(od, xd, yd, 0, n));
            BOTH("sigmoid", l_->f32.sigmoid(of, xf, 0, n); l_->f64.sigmoid(od, xd, 0, n));
            BOTH("sigmoid_grad", l_->f32.sigmoid_grad(of, xf, yf, 0, n);
                 l_->f64.sigmoid_grad(od, xd, yd, 0, n));
            BOTH("tanh", l_->f32.tanh(of, xf, 0, n); l_->f64.tanh(od, xd, 0, n));
            BOTH("tanh_grad", l_->f32.tanh_grad(of, xf, yf, 0, n);
                 l_->f64.tanh_grad(od, xd, yd, 0, n));
            BOTH("add", l_->f32.add(of, xf, yf, n); l_->f64.add(od, xd, yd, n));
            BOTH("accumulate", memcpy(of, yf, (size_t)n * 4); l_->f32.accumulate(of, xf, n);
                 memcpy(od, yd, (size_t)n * 8); l_->f64.accumulate(od, xd, n));
            BOTH("scale", memcpy(of, xf, (size_t)n * 4); l_->f32.scale(of, 0.37f, n);
                 memcpy(od, xd, (size_t)n * 8); l_->f64.scale(od, 0.37, n));
            for (int act = 0; act < 2; act++)
                BOTH("bias_act", memcpy(of, xf, (size_t)n * 4); l_->f32.bias_act(of, yf, act, n);
                     memcpy(od, xd, (size_t)n * 8); l_->f64.bias_act(od, yd, act, n));
            BOTH("sum", of[0] = (float)l_->f32.sum(xf, n); od[0] = l_->f64.sum(xd, n));
            BOTH("sgd", memcpy(of, xf, (size_t)n * 4); l_->f32.sgd(of, yf, 0.01f, n);
                 memcpy(od, xd, (size_t)n * 8); l_->f64.sgd(od, yd, 0.01, n));
            for (int nest = 0; nest < 2; nest++)
                BOTH("momentum", memcpy(of, xf, (size_t)n * 4);
                     memcpy(B.of[v_ + 2] + off, zf, (size_t)n * 4);
                     l_->f32.momentum(of, B.of[v_ + 2] + off, yf, 0.1f, 0.9f, nest, n);
                     memcpy(od, xd, (size_t)n * 8); memcpy(B.od[v_ + 2] + off, zd, (size_t)n * 8);
                     l_->f64.momentum(od, B.od[v_ + 2] + off, yd, 0.1, 0.9, nest, n));
            /* Adam: w in o, m in x's copy, v in z's copy (all updated). */
            BOTH("adam", memcpy(of, xf, (size_t)n * 4);
                 memcpy(B.of[v_ + 2] + off, zf, (size_t)n * 4); float mf[MAXN];
                 memcpy(mf, yf, (size_t)n * 4);
                 l_->f32.adam(of, mf, B.of[v_ + 2] + off, xf, 0.9f, 0.999f, 1e-8f, 0.001f, n);
                 memcpy(od, xd, (size_t)n * 8); memcpy(B.od[v_ + 2] + off, zd, (size_t)n * 8);
                 double md[MAXN]; memcpy(md, yd, (size_t)n * 8);
                 l_->f64.adam(od, md, B.od[v_ + 2] + off, xd, 0.9, 0.999, 1e-8, 0.001, n));
            note(same_bits_f(B.of[2], B.of[3], MAXN + PAD), "momentum/adam slots f32", n, off);
            if (n >= 1) {
                int rows = n >= 10 ? n / 10 : 1, cols = n / rows;
                float maxf[MAXN], sumf[MAXN];
                double maxd[MAXN], sumd[MAXN];
                BOTH("exp_shifted_rows", l_->f32.exp_shifted_rows(of, xf, rows, cols, maxf, sumf);
                     l_->f64.exp_shifted_rows(od, xd, rows, cols, maxd, sumd);
                     of[rows * cols] = sumf[rows - 1]; od[rows * cols] = sumd[rows - 1]);
            }
#undef BOTH
        }
    }
}

/* The generic version against double-precision references (the ISA versions equal it). */
static void test_generic_accuracy(void)
{
    const rill__loops *G = rill__loops_for(RILL__ISA_GENERIC);
    if (!CHECK(G != NULL)) return;
    CHECK_EQ_STR(G->isa, "generic");
    enum { N = 4001 };
    static float x[N], y[N];
    double worst_sig = 0, worst_tanh = 0, worst_exp = 0;
    for (int i = 0; i < N; i++) x[i] = (float)(-20 + 40.0 * i / (N - 1));
    G->f32.sigmoid(y, x, 0, N);
    for (int i = 0; i < N; i++) {
        double ref = 1 / (1 + exp(-(double)x[i]));
        worst_sig = fmax(worst_sig, fabs(y[i] - ref) / ref);
    }
    G->f32.tanh(y, x, 0, N);
    for (int i = 0; i < N; i++) {
        double ref = tanh((double)x[i]);
        worst_tanh = fmax(worst_tanh, fabs(y[i] - ref) / fmax(fabs(ref), 1e-30));
    }
    float mx, sm;
    for (int i = 0; i < N; i++) x[i] = (float)(-80 + 80.0 * i / (N - 1)); /* x - max in [-80, 0] */
    G->f32.exp_shifted_rows(y, x, 1, N, &mx, &sm);
    CHECK_EQ_INT((long long)mx, 0);
    for (int i = 0; i < N; i++) {
        double ref = exp((double)x[i]);
        worst_exp = fmax(worst_exp, fabs(y[i] - ref) / ref);
    }
    CHECK(worst_sig < 4e-7);
    CHECK(worst_tanh < 4e-7);
    CHECK(worst_exp < 4e-7);
    /* NaN stays NaN; the ends saturate. */
    float sp[8] = {NAN, INFINITY, -INFINITY, 100, -100, 0, -0.0f, 1e-30f}, out[8];
    G->f32.tanh(out, sp, 0, 8);
    CHECK(isnan(out[0]));
    CHECK(out[1] == 1 && out[2] == -1 && out[3] == 1 && out[4] == -1 && out[5] == 0);
    CHECK(signbit(out[6]));
    G->f32.sigmoid(out, sp, 0, 8);
    CHECK(isnan(out[0]));
    CHECK(out[1] == 1 && out[2] == 0 && out[3] == 1 && out[4] < 1e-30 && out[5] == 0.5f);
    /* Maximum propagates NaN from either side. */
    float a[2] = {NAN, 1}, b[2] = {1, NAN};
    G->f32.binary(RILL__BIN_MAX, RILL__FORM_SAME, out, a, b, 0, 2);
    CHECK(isnan(out[0]) && isnan(out[1]));
    G->f32.binary(RILL__BIN_MIN, RILL__FORM_SAME, out, a, b, 0, 2); /* Minimum too */
    CHECK(isnan(out[0]) && isnan(out[1]));
    /* sum over 16 partials equals the plain sum for integers. */
    for (int i = 0; i < 1000; i++) x[i] = (float)(i % 7);
    double s = G->f32.sum(x, 1000), ref = 0;
    for (int i = 0; i < 1000; i++) ref += x[i];
    CHECK(s == ref);
}

static void test_versions(void)
{
    const rill__loops *G = rill__loops_for(RILL__ISA_GENERIC);
    const rill__loops *chosen = rill__loops_get();
    CHECK(chosen != NULL);
    CHECK_EQ_STR(chosen->isa, rill__isa_name(rill__isa_chosen()));
    int compared = 0;
    for (int i = RILL__ISA_AVX2; i < RILL__ISA_COUNT; i++) {
        const rill__loops *L = rill__loops_for((rill__isa)i);
        if (!L) {
            TEST_SKIP_PART(rill__isa_name((rill__isa)i), "this build or this CPU cannot run it");
            continue;
        }
        CHECK_EQ_STR(L->isa, rill__isa_name((rill__isa)i));
        CHECK(L != G && L->f32.sigmoid != G->f32.sigmoid); /* a real second version */
        compare_versions(L, G);
        if (mismatches)
            fprintf(stderr, "%s differs from generic first at %s\n", L->isa, first_mismatch);
        CHECK_EQ_INT(mismatches, 0);
        compared++;
    }
    printf("compared %d vector versions with the generic one\n", compared);
}

static void test_crc_paths(void)
{
    uint8_t *buf = malloc(70000);
    if (!CHECK(buf != NULL)) return;
    for (int i = 0; i < 70000; i++) buf[i] = (uint8_t)(i * 2654435761u >> 13);
    CHECK_EQ_INT(rill__crc32c_tables(0, "123456789", 9), 0xE3069283u);
    int bad = 0;
    for (size_t n = 0; n < 70000; n = n < 64 ? n + 1 : n * 3 + 7)
        for (size_t off = 0; off < 8; off += 3)
            if (n + off <= 70000 &&
                rill__crc32c(5, buf + off, n) != rill__crc32c_tables(5, buf + off, n))
                bad++;
    CHECK_EQ_INT(bad, 0);
    if (!rill__cpu()->sse42)
        TEST_SKIP_PART("crc32c sse4.2 path",
                       "the CPU has no SSE4.2; the tables were compared with themselves");
    else
        CHECK_STR_CONTAINS(rill__crc32c_path(), "sse4.2");
    free(buf);
}

int main(void)
{
    char feats[512];
    rill__cpu_feature_list(feats, sizeof feats);
    printf("cpu: %s; features: %s; chosen: %s\n", rill__cpu()->model, feats,
           rill__isa_name(rill__isa_chosen()));
    test_generic_accuracy();
    test_versions();
    test_crc_paths();
    TEST_MAIN_END();
}
