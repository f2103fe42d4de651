/* loops_isa.c - the CPU kernels' vector loops (see loops.h), compiled once per instruction set
 * with RILL_ISA set to its name (generic, avx2, avx512) and that set's compiler flags.
 *
 * Every function here is named with the set's suffix (F(name) is name_<isa>), static ones too,
 * so that the disassembly of the library shows AVX-512 code only in functions whose name ends in
 * _avx512 (tests/build/test_portable.sh checks it). Nothing here may call a function of another
 * file that is inlined from a header, for the same reason: what this file compiles must be its.
 *
 * How the loops stay vectorised: GCC vectorises loops of unknown length only under a cheap cost
 * model, and under -ftrapping-math will not if-convert a select that feeds arithmetic. So the
 * simple loops run in blocks of 8 (EACH) over restrict pointer parameters; reductions keep a
 * fixed number of partial results, one per lane (float addition is not associative, so the
 * compiler may not reorder one running sum, and a fixed count gives every version the same
 * bits); float exp, sigmoid and tanh are written with vector types, LANES at a time, as
 * polynomials rather than libm calls. double calls libm for exp and tanh. */
#include "loops.h"

#include <math.h>
#include <string.h>

#ifndef RILL_ISA
#error "loops_isa.c is compiled with -DRILL_ISA=<name>"
#endif
#define CAT_(a, b) a##_##b
#define CAT(a, b)  CAT_(a, b)
#define F(name)    CAT(name, RILL_ISA)

/* Lanes of the float vector type: one AVX-512 register, or 8 (two SSE registers, one AVX one). */
#if defined(__AVX512F__)
#define LANES 16
#else
#define LANES 8
#endif
typedef float vf __attribute__((vector_size(LANES * 4)));
typedef int32_t vi __attribute__((vector_size(LANES * 4)));
/* Vectors never cross a function boundary by value (that would change the ABI between builds:
 * GCC's -Wpsabi); helpers take arrays. V(c) is c in every lane. */
#define V(c) ((vf){0} + (c))
/* Lanes of a where mask m (a comparison's result) is set, of b elsewhere. */
#define SELECT(m, a, b) ((vf)(((vi)(a) & (m)) | ((vi)(b) & ~(m))))

/* for (i = B; i < E; i++) BODY, in blocks of 8 (BODY is the rest of the arguments). */
#define EACH(B, E, ...)                                                                            \
    do {                                                                                           \
        int64_t i_ = (B), e_ = (E);                                                                \
        for (; i_ + 8 <= e_; i_ += 8) {                                                            \
            _Pragma("GCC unroll 8") for (int64_t i = i_; i < i_ + 8; i++) __VA_ARGS__;             \
        }                                                                                          \
        for (int64_t i = i_; i < e_; i++) __VA_ARGS__;                                             \
    } while (0)

/* y = e^x, LANES at a time (y may be x): Cephes' expf, about 1 ulp. x = n ln2 + r with
 * |r| <= ln2/2, e^r by a polynomial, 2^n built from exponent bits in two halves so that n = 128
 * still works. Below -87.34 it gives 0, above 88.72 infinity; NaN stays NaN. */
static inline void F(exp_v)(float *y, const float *x)
{
    const vf lo = V(-87.3365402f), hi = V(88.7228394f);
    vf v;
    memcpy(&v, x, sizeof v);
    vf xc = SELECT(v > lo, v, lo); /* NaN becomes lo here and is put back at the end */
    xc = SELECT(xc < hi, xc, hi);
    vf n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f; /* round(x / ln2): 1.5 * 2^23 */
    vf r = xc - n * 0.693359375f + n * 2.12194440e-4f;     /* ln2 in two parts */
    vf p = V(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    vf e = p * r * r + r + 1.0f;
    vi ni = __builtin_convertvector(n, vi), n1 = ni >> 1, n2 = ni - n1;
    e = e * (vf)((n1 + 127) << 23) * (vf)((n2 + 127) << 23);
    e = SELECT(v < lo, V(0.0f), e);
    e = SELECT(v > hi, V(INFINITY), e);
    e = SELECT(v == v, e, v);
    memcpy(y, &e, sizeof e);
}

/* y = 1 / (1 + e^-x). */
static inline void F(sigmoid_v)(float *y, const float *x)
{
    vf v;
    float t[LANES];
    memcpy(&v, x, sizeof v);
    v = -v;
    memcpy(t, &v, sizeof v);
    F(exp_v)(t, t);
    memcpy(&v, t, sizeof v);
    v = 1.0f / (1.0f + v);
    memcpy(y, &v, sizeof v);
}

/* y = tanh x: Cephes' tanhf. An odd polynomial below |x| = 0.625 (where 1 - 2/(e^2|x| + 1)
 * would cancel), that formula above; both computed, one selected. */
static inline void F(tanh_v)(float *y, const float *x)
{
    vf v, e;
    float t[LANES];
    memcpy(&v, x, sizeof v);
    vf ax = SELECT(v < 0.0f, -v, v), z = v * v;
    vf small = -5.70498872745e-3f * z + 2.06390887954e-2f;
    small = small * z - 5.37397155531e-2f;
    small = small * z + 1.33314422036e-1f;
    small = small * z - 3.33332819422e-1f;
    small = small * z * v + v;
    e = 2.0f * ax;
    memcpy(t, &e, sizeof e);
    F(exp_v)(t, t);
    memcpy(&e, t, sizeof e);
    vf big = 1.0f - 2.0f / (e + 1.0f);
    vf r = SELECT(ax < 0.625f, small, big);
    /* tanh is odd: the result takes x's sign (so tanh(-0) = -0, which the polynomial loses). */
    r = (vf)(((vi)r & INT32_MAX) | ((vi)v & INT32_MIN));
    memcpy(y, &r, sizeof r);
}

/* y[i] = f(x[i]) for i < n with a LANES-wide f; the last partial block goes through a buffer. */
static inline void F(map_v)(void (*f)(float *, const float *), float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES) f(y + i, x + i);
    if (i < n) {
        /* Element loops, not memcpy: a call per row is the whole cost on rows of 10. */
        float buf[LANES] = {0};
        int rest = (int)(n - i);
        for (int l = 0; l < rest; l++) buf[l] = x[i + l];
        f(buf, buf);
        for (int l = 0; l < rest; l++) y[i + l] = buf[l];
    }
}

static void F(sigmoid_f32)(float *y, const float *x, int64_t b, int64_t e)
{
    if (e > b) F(map_v)(F(sigmoid_v), y + b, x + b, e - b);
}

static void F(tanh_f32)(float *y, const float *x, int64_t b, int64_t e)
{
    if (e > b) F(map_v)(F(tanh_v), y + b, x + b, e - b);
}

static void F(exp_inplace_f32)(float *y, int64_t n)
{
    F(map_v)(F(exp_v), y, y, n);
}

static void F(sigmoid_f64)(double *y, const double *x, int64_t b, int64_t e)
{
    for (int64_t i = b; i < e; i++) y[i] = 1 / (1 + exp(-x[i]));
}

static void F(tanh_f64)(double *y, const double *x, int64_t b, int64_t e)
{
    for (int64_t i = b; i < e; i++) y[i] = tanh(x[i]);
}

static void F(exp_inplace_f64)(double *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = exp(y[i]);
}

#define PARTIALS 16

/* clang-format would take T for a value in these macros ("x *y"). */
/* clang-format off */

/* The loops written once for both element types; S is the type's suffix (f32, f64). */
#define DEFINE_LOOPS(T, S)                                                                         \
    static void F(binary_##S)(int op, int form, T *restrict o, const T *restrict a,                \
                              const T *restrict b, int64_t b0, int64_t e0)                         \
    {                                                                                              \
        /* One straight loop per (op, form), each vectorisable. */                                 \
        switch (op * 3 + form) {                                                                   \
        BIN_CASES(T, RILL__BIN_ADD, x + y)                                                         \
        BIN_CASES(T, RILL__BIN_SUB, x - y)                                                         \
        BIN_CASES(T, RILL__BIN_MUL, x * y)                                                         \
        BIN_CASES(T, RILL__BIN_DIV, x / y)                                                         \
        BIN_CASES(T, RILL__BIN_MAX, (x > y || x != x) ? x : y)                                     \
        BIN_CASES(T, RILL__BIN_MIN, (x < y || x != x) ? x : y)                                     \
        default:                                                                                   \
            break;                                                                                 \
        }                                                                                          \
    }                                                                                              \
    static void F(relu_##S)(T *restrict y, const T *restrict x, int64_t b, int64_t e)              \
    {                                                                                              \
        EACH(b, e, y[i] = x[i] > 0 ? x[i] : (T)0);                                                 \
    }                                                                                              \
    /* g[i] is loaded before the select: a load on one branch only keeps GCC from vectorising. */  \
    static void F(relu_grad_##S)(T *restrict d, const T *restrict g, const T *restrict f,          \
                                 int64_t b, int64_t e)                                             \
    {                                                                                              \
        EACH(b, e, {                                                                               \
            T gi = g[i];                                                                           \
            d[i] = f[i] > 0 ? gi : (T)0;                                                           \
        });                                                                                        \
    }                                                                                              \
    static void F(sigmoid_grad_##S)(T *restrict d, const T *restrict y, const T *restrict dy,      \
                                    int64_t b, int64_t e)                                          \
    {                                                                                              \
        EACH(b, e, d[i] = dy[i] * y[i] * ((T)1 - y[i]));                                           \
    }                                                                                              \
    static void F(tanh_grad_##S)(T *restrict d, const T *restrict y, const T *restrict dy,         \
                                 int64_t b, int64_t e)                                             \
    {                                                                                              \
        EACH(b, e, d[i] = dy[i] * ((T)1 - y[i] * y[i]));                                           \
    }                                                                                              \
    static void F(add_##S)(T *restrict y, const T *restrict x, const T *restrict v, int64_t n)     \
    {                                                                                              \
        EACH(0, n, y[i] = x[i] + v[i]);                                                            \
    }                                                                                              \
    static void F(accumulate_##S)(T *restrict acc, const T *restrict x, int64_t n)                 \
    {                                                                                              \
        EACH(0, n, acc[i] += x[i]);                                                                \
    }                                                                                              \
    static void F(scale_##S)(T *restrict y, T s, int64_t n)                                        \
    {                                                                                              \
        EACH(0, n, y[i] *= s);                                                                     \
    }                                                                                              \
    static void F(bias_act_##S)(T *restrict y, const T *restrict v, bool relu, int64_t n)          \
    {                                                                                              \
        if (relu)                                                                                  \
            EACH(0, n, {                                                                           \
                T x = y[i] + v[i];                                                                 \
                y[i] = x > 0 ? x : (T)0;                                                           \
            });                                                                                    \
        else                                                                                       \
            EACH(0, n, y[i] = y[i] + v[i]);                                                        \
    }                                                                                              \
    static void F(shift_##S)(T *restrict y, const T *restrict x, T s, int64_t n)                   \
    {                                                                                              \
        EACH(0, n, y[i] = x[i] - s);                                                               \
    }                                                                                              \
    /* The largest of x[0..n), n >= 1 (NaN is skipped unless first; then e^(x - max) is NaN        \
     * anyway, so NaN logits still give NaN). */                                                   \
    static T F(row_max_##S)(const T *restrict x, int64_t n)                                        \
    {                                                                                              \
        T lane[8], m = x[0];                                                                       \
        int64_t i = 0;                                                                             \
        for (int l = 0; l < 8; l++) lane[l] = x[0];                                                \
        for (; i + 8 <= n; i += 8)                                                                 \
            for (int l = 0; l < 8; l++) lane[l] = x[i + l] > lane[l] ? x[i + l] : lane[l];         \
        for (; i < n; i++) m = x[i] > m ? x[i] : m;                                                \
        for (int l = 0; l < 8; l++) m = lane[l] > m ? lane[l] : m;                                 \
        return m;                                                                                  \
    }                                                                                              \
    static T F(row_sum_##S)(const T *restrict x, int64_t n)                                        \
    {                                                                                              \
        T lane[8] = {0}, sum = 0;                                                                  \
        int64_t i = 0;                                                                             \
        for (; i + 8 <= n; i += 8)                                                                 \
            for (int l = 0; l < 8; l++) lane[l] += x[i + l];                                       \
        for (; i < n; i++) sum += x[i];                                                            \
        for (int l = 0; l < 8; l++) sum += lane[l];                                                \
        return sum;                                                                                \
    }                                                                                              \
    /* The exp runs once over the whole block, so short rows (10 classes) still fill the lanes.    \
     * No term exceeds 1, so nothing overflows. */                                                 \
    static void F(exp_shifted_rows_##S)(T *restrict y, const T *restrict x, int64_t rows,          \
                                        int64_t n, T *restrict max, T *restrict sum)               \
    {                                                                                              \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            max[r] = F(row_max_##S)(x + r * n, n);                                                 \
            F(shift_##S)(y + r * n, x + r * n, max[r], n);                                         \
        }                                                                                          \
        F(exp_inplace_##S)(y, rows * n);                                                           \
        for (int64_t r = 0; r < rows; r++) sum[r] = F(row_sum_##S)(y + r * n, n);                  \
    }                                                                                              \
    static double F(sum_##S)(const T *restrict x, int64_t n)                                       \
    {                                                                                              \
        double lane[PARTIALS] = {0}, sum = 0;                                                      \
        int64_t i = 0;                                                                             \
        for (; i + PARTIALS <= n; i += PARTIALS)                                                   \
            for (int l = 0; l < PARTIALS; l++) lane[l] += x[i + l];                                \
        for (; i < n; i++) sum += x[i];                                                            \
        double total = 0;                                                                          \
        for (int l = 0; l < PARTIALS; l++) total += lane[l];                                       \
        return total + sum;                                                                        \
    }                                                                                              \
    static void F(sgd_##S)(T *restrict w, const T *restrict d, T lr, int64_t n)                    \
    {                                                                                              \
        EACH(0, n, w[i] -= lr * d[i]);                                                             \
    }                                                                                              \
    static void F(momentum_##S)(T *restrict w, T *restrict a, const T *restrict g, T l, T m,       \
                                bool nesterov, int64_t n)                                          \
    {                                                                                              \
        if (nesterov)                                                                              \
            EACH(0, n, {                                                                           \
                a[i] = a[i] * m + g[i];                                                            \
                w[i] -= g[i] * l + a[i] * m * l;                                                   \
            });                                                                                    \
        else                                                                                       \
            EACH(0, n, {                                                                           \
                a[i] = a[i] * m + g[i];                                                            \
                w[i] -= a[i] * l;                                                                  \
            });                                                                                    \
    }                                                                                              \
    /* For float the square root and the division are computed in double, then rounded. */         \
    static void F(adam_##S)(T *restrict w, T *restrict mm, T *restrict vv, const T *restrict g,    \
                            T b1, T b2, T e, T l, int64_t n)                                       \
    {                                                                                              \
        EACH(0, n, {                                                                               \
            mm[i] += (g[i] - mm[i]) * (1 - b1);                                                    \
            vv[i] += (g[i] * g[i] - vv[i]) * (1 - b2);                                             \
            w[i] -= l * mm[i] / (sqrt(vv[i]) + e);                                                 \
        });                                                                                        \
    }                                                                                              \
    static void F(adagrad_##S)(T *restrict w, T *restrict a, const T *restrict g, T l,            \
                               bool update_slots, int64_t n)                                       \
    {                                                                                              \
        if (update_slots)                                                                          \
            EACH(0, n, {                                                                           \
                a[i] += g[i] * g[i];                                                               \
                w[i] -= l * g[i] / sqrt(a[i]);                                                     \
            });                                                                                    \
        else                                                                                       \
            EACH(0, n, w[i] -= l * g[i] / sqrt(a[i]));                                             \
    }

#define BIN_CASES(T, OP, EXPR)                                                                     \
    case OP * 3 + RILL__FORM_SAME:                                                                 \
        EACH(b0, e0, {                                                                             \
            T x = a[i], y = b[i];                                                                  \
            o[i] = (T)(EXPR);                                                                      \
        });                                                                                        \
        break;                                                                                     \
    case OP * 3 + RILL__FORM_A_SCALAR: {                                                           \
        const T x = a[0];                                                                          \
        EACH(b0, e0, {                                                                             \
            T y = b[i];                                                                            \
            o[i] = (T)(EXPR);                                                                      \
        });                                                                                        \
        break;                                                                                     \
    }                                                                                              \
    case OP * 3 + RILL__FORM_B_SCALAR: {                                                           \
        const T y = b[0];                                                                          \
        EACH(b0, e0, {                                                                             \
            T x = a[i];                                                                            \
            o[i] = (T)(EXPR);                                                                      \
        });                                                                                        \
        break;                                                                                     \
    }

/* clang-format on */

DEFINE_LOOPS(float, f32)
DEFINE_LOOPS(double, f64)

#define TABLE(S)                                                                                   \
    {                                                                                              \
        .binary = F(binary_##S), .relu = F(relu_##S), .relu_grad = F(relu_grad_##S),               \
        .sigmoid = F(sigmoid_##S), .sigmoid_grad = F(sigmoid_grad_##S), .tanh = F(tanh_##S),       \
        .tanh_grad = F(tanh_grad_##S), .add = F(add_##S), .accumulate = F(accumulate_##S),         \
        .scale = F(scale_##S), .bias_act = F(bias_act_##S),                                        \
        .exp_shifted_rows = F(exp_shifted_rows_##S), .sum = F(sum_##S), .sgd = F(sgd_##S),         \
        .momentum = F(momentum_##S), .adam = F(adam_##S), .adagrad = F(adagrad_##S),                   \
    }

#define STR_(x) #x
#define STR(x)  STR_(x)

const rill__loops F(rill__loops) = {
    .isa = STR(RILL_ISA),
    .f32 = TABLE(f32),
    .f64 = TABLE(f64),
};
