/* cpu_elementwise.c - CPU kernels of the element-wise ops of graph/ops_elementwise.c, and of
 * Add, Sub, Mul, Div, Maximum, Minimum, Neg and Square on the small integer dtypes (int8, int16,
 * uint8, uint16), which cpu_math.c does not serve.
 *
 * Table-driven: each op is one line naming its element functions in three domains: float (float,
 * and half and bfloat16 widened to float, as TF computes them), double, and int64 (every integer
 * dtype, narrowed back modulo its width, which is what TF's arithmetic in the narrow type gives).
 * Binary ops broadcast as numpy does. Big tensors are sharded over the intra-op pool. Integer
 * division and modulo by zero fail with TF's "Integer division by zero"; integer Pow with a
 * negative exponent with TF's "Integers to negative integer powers are not allowed". */
#define _DEFAULT_SOURCE /* lgamma_r: lgamma writes the global signgam */
#include "cpu_kernels.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define SHARD_MIN (1 << 14)

/* --- element access --- */

static inline float ld_f(rill_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case RILL_HALF:
        return rill_half_to_float(((const rill_half *)p)[i]);
    case RILL_BFLOAT16:
        return rill_bfloat16_to_float(((const rill_bfloat16 *)p)[i]);
    default:
        return ((const float *)p)[i];
    }
}

static inline void st_f(rill_dtype t, void *p, int64_t i, float v)
{
    switch (t) {
    case RILL_HALF:
        ((rill_half *)p)[i] = rill_half_from_float(v);
        break;
    case RILL_BFLOAT16:
        ((rill_bfloat16 *)p)[i] = rill_bfloat16_from_float(v);
        break;
    default:
        ((float *)p)[i] = v;
        break;
    }
}

static inline int64_t ld_i(rill_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case RILL_INT8:
        return ((const int8_t *)p)[i];
    case RILL_INT16:
        return ((const int16_t *)p)[i];
    case RILL_INT32:
        return ((const int32_t *)p)[i];
    case RILL_UINT8:
    case RILL_BOOL:
        return ((const uint8_t *)p)[i];
    case RILL_UINT16:
        return ((const uint16_t *)p)[i];
    default:
        return ((const int64_t *)p)[i];
    }
}

static inline void st_i(rill_dtype t, void *p, int64_t i, int64_t v)
{
    uint64_t u = (uint64_t)v;
    switch (t) {
    case RILL_INT8:
        ((int8_t *)p)[i] = (int8_t)(uint8_t)u;
        break;
    case RILL_INT16:
        ((int16_t *)p)[i] = (int16_t)(uint16_t)u;
        break;
    case RILL_INT32:
        ((int32_t *)p)[i] = (int32_t)(uint32_t)u;
        break;
    case RILL_UINT8:
        ((uint8_t *)p)[i] = (uint8_t)u;
        break;
    case RILL_BOOL:
        ((uint8_t *)p)[i] = v != 0;
        break;
    case RILL_UINT16:
        ((uint16_t *)p)[i] = (uint16_t)u;
        break;
    default:
        ((int64_t *)p)[i] = v;
        break;
    }
}

enum { D_F32, D_F64, D_I64 };

static int domain(rill_dtype t)
{
    if (t == RILL_DOUBLE) return D_F64;
    if (rill_dtype_is_float(t)) return D_F32;
    return D_I64;
}

/* --- special functions (double; float ones go through them too) --- */

static double digamma(double x)
{
    if (isnan(x)) return x;
    if (x == -INFINITY) return NAN;
    if (x <= 0 && x == floor(x)) return NAN;
    double r = 0;
    if (x < 0) { /* reflection: psi(1 - x) - psi(x) = pi cot(pi x) */
        r = -M_PI / tan(M_PI * x);
        x = 1 - x;
    }
    while (x < 10) {
        r -= 1 / x;
        x += 1;
    }
    if (isinf(x)) return r + x;
    double z = 1 / (x * x);
    double p =
        z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132)))));
    return r + log(x) - 0.5 / x - p;
}

/* Hurwitz zeta(s, q) by Euler-Maclaurin summation (Cephes' zeta, as Eigen's). */
static double zeta(double s, double q)
{
    static const double A[] = {12.0,
                               -720.0,
                               30240.0,
                               -1209600.0,
                               47900160.0,
                               -1.8924375803183791606e9,
                               7.47242496e10,
                               -2.950130727918164224e12,
                               1.1646782814350067249e14,
                               -4.5979787224074726105e15,
                               1.8152105401943546773e17,
                               -7.1661652561756670113e18};
    if (s == 1) return INFINITY;
    if (s < 1 || isnan(s) || isnan(q)) return NAN;
    if (q <= 0) {
        if (q == floor(q)) return INFINITY;
        if (s != floor(s)) return NAN;
    }
    double sum = pow(q, -s), a = q, b = 0;
    int i = 0;
    while (i < 9 || a <= 9.0) {
        i++;
        a += 1;
        b = pow(a, -s);
        sum += b;
        if (fabs(b / sum) < DBL_EPSILON) return sum;
    }
    double w = a;
    sum += b * w / (s - 1);
    sum -= 0.5 * b;
    double f = 1, kk = 0;
    for (i = 0; i < 12; i++) {
        f *= s + kk;
        b /= w;
        double t = f * b / A[i];
        sum += t;
        if (fabs(t / sum) < DBL_EPSILON) break;
        kk += 1;
        f *= s + kk;
        b /= w;
        kk += 1;
    }
    return sum;
}

static double polygamma(double n, double x)
{
    if (n < 0 || n != floor(n) || isnan(n)) return NAN;
    if (n == 0) return digamma(x);
    double fact = tgamma(n + 1); /* (-1)^(n+1) n! zeta(n+1, x) */
    return (fmod(n, 2) == 1 ? 1 : -1) * fact * zeta(n + 1, x);
}

static double lgam(double x)
{
    int sign;
    return lgamma_r(x, &sign);
}

/* --- element functions --- */

#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_ALPHA 1.6732632423543772848170429916717

/* F(name, expr) defines name_f (float) and name_d (double) of x and a (the alpha attr). */
#define F(nm, expr)                                                                                \
    static float nm##_f(float x, float a)                                                          \
    {                                                                                              \
        typedef float T;                                                                           \
        (void)a;                                                                                   \
        return (T)(expr);                                                                          \
    }                                                                                              \
    static double nm##_d(double x, double a)                                                       \
    {                                                                                              \
        typedef double T;                                                                          \
        (void)a;                                                                                   \
        return (T)(expr);                                                                          \
    }
/* FM(name, fname): the libm function fname (float fnamef). */
#define FM(nm, fn)                                                                                 \
    static float nm##_f(float x, float a)                                                          \
    {                                                                                              \
        (void)a;                                                                                   \
        return fn##f(x);                                                                           \
    }                                                                                              \
    static double nm##_d(double x, double a)                                                       \
    {                                                                                              \
        (void)a;                                                                                   \
        return fn(x);                                                                              \
    }
#define I(nm, expr)                                                                                \
    static int64_t nm##_i(int64_t x, int64_t a)                                                    \
    {                                                                                              \
        (void)a;                                                                                   \
        return (expr);                                                                             \
    }

/* Softplus' cut-offs, log(epsilon) + 2 as TF's: x above -threshold is x, below it e^x. */
static inline double sp_threshold(int is_float)
{
    return is_float ? -13.942385152878742 : -34.043653389117154;
}

F(abs, x < 0 ? -x : x == 0 ? (T)0 : x)
I(abs, x < 0 ? (int64_t)(0 - (uint64_t)x) : x)
F(sign, x > 0 ? 1 : x < 0 ? -1 : x)
I(sign, x > 0 ? 1 : x < 0 ? -1 : 0)
F(rsqrt, 1 / sqrt(x))
F(recip, 1 / x)
I(recip, 1 / x)
FM(rint, rint) /* Round and Rint: halves to even (the default rounding mode) */
I(ident, x)
FM(floor, floor)
FM(ceil, ceil)
FM(log1p, log1p)
FM(expm1, expm1)
F(softplus, x > -sp_threshold(sizeof(T) == 4)  ? x
            : x < sp_threshold(sizeof(T) == 4) ? exp(x)
                                               : log1p(exp(x)))
F(softsign, x / (1 + fabs(x)))
F(elu, x < 0 ? expm1(x) : x)
F(selu, x < 0 ? (T)(SELU_SCALE * SELU_ALPHA) * expm1(x) : (T)SELU_SCALE * x)
F(leaky, x > 0 ? x : x * a)
F(relu6, isnan(x) ? x : x<0 ? 0 : x> 6 ? 6 : x)
I(relu6, x<0 ? 0 : x> 6 ? 6 : x)
FM(erf, erf)
FM(erfc, erfc)
FM(sin, sin)
FM(cos, cos)
FM(tan, tan)
FM(asin, asin)
FM(acos, acos)
FM(atan, atan)
FM(sinh, sinh)
FM(cosh, cosh)
FM(asinh, asinh)
FM(acosh, acosh)
FM(atanh, atanh)
F(lgamma, lgam(x))
F(digamma, digamma(x))

static bool isnan_f(float x)
{
    return isnan(x);
}
static bool isnan_d(double x)
{
    return isnan(x);
}
static bool isinf_f(float x)
{
    return isinf(x);
}
static bool isinf_d(double x)
{
    return isinf(x);
}
static bool isfinite_f(float x)
{
    return isfinite(x);
}
static bool isfinite_d(double x)
{
    return isfinite(x);
}
static bool lnot_i(int64_t x)
{
    return !x;
}

typedef struct un_op {
    float (*f)(float, float);
    double (*d)(double, double);
    int64_t (*i)(int64_t, int64_t);
    bool (*pf)(float); /* bool results */
    bool (*pd)(double);
    bool (*pi)(int64_t);
    bool int_nonzero; /* integer input must not hold 0 (Reciprocal) */
} un_op;

/* --- binary element functions --- */

#define F2(nm, expr)                                                                               \
    static float nm##_f2(float x, float y)                                                         \
    {                                                                                              \
        typedef float T;                                                                           \
        return (T)(expr);                                                                          \
    }                                                                                              \
    static double nm##_d2(double x, double y)                                                      \
    {                                                                                              \
        typedef double T;                                                                          \
        return (T)(expr);                                                                          \
    }
#define I2(nm, expr)                                                                               \
    static int64_t nm##_i2(int64_t x, int64_t y)                                                   \
    {                                                                                              \
        return (expr);                                                                             \
    }
#define C2(nm, expr)                                                                               \
    static bool nm##_cf(float x, float y)                                                          \
    {                                                                                              \
        return (expr);                                                                             \
    }                                                                                              \
    static bool nm##_cd(double x, double y)                                                        \
    {                                                                                              \
        return (expr);                                                                             \
    }                                                                                              \
    static bool nm##_ci(int64_t x, int64_t y)                                                      \
    {                                                                                              \
        return (expr);                                                                             \
    }

/* Wrapping integer arithmetic (unsigned, so overflow is defined; narrowed later). */
#define UADD(x, y) ((int64_t)((uint64_t)(x) + (uint64_t)(y)))
#define USUB(x, y) ((int64_t)((uint64_t)(x) - (uint64_t)(y)))
#define UMUL(x, y) ((int64_t)((uint64_t)(x) * (uint64_t)(y)))

static int64_t ipow(int64_t x, int64_t y)
{
    uint64_t r = 1, b = (uint64_t)x;
    while (y > 0) {
        if (y & 1) r *= b;
        b *= b;
        y >>= 1;
    }
    return (int64_t)r;
}
/* x / y and x % y with y != 0 (checked first) and INT64_MIN / -1 defined. */
static int64_t tdiv(int64_t x, int64_t y)
{
    return y == -1 ? (int64_t)(0 - (uint64_t)x) : x / y;
}
static int64_t tmod(int64_t x, int64_t y)
{
    return y == -1 ? 0 : x % y;
}
static int64_t floor_div_i(int64_t x, int64_t y)
{
    int64_t q = tdiv(x, y), r = tmod(x, y);
    return (r != 0 && ((r < 0) != (y < 0))) ? q - 1 : q;
}
static int64_t floor_mod_i(int64_t x, int64_t y)
{
    int64_t r = tmod(x, y);
    return (r != 0 && ((y < 0) != (r < 0))) ? r + y : r;
}
static double fmod_floor(double x, double y)
{
    double r = fmod(x, y);
    return (r != 0 && ((y < 0) != (r < 0))) ? r + y : r;
}
static float fmod_floorf(float x, float y)
{
    float r = fmodf(x, y);
    return (r != 0 && ((y < 0) != (r < 0))) ? r + y : r;
}

F2(add, x + y)
I2(add, UADD(x, y))
F2(sub, x - y)
I2(sub, USUB(x, y))
F2(mul, x *y)
I2(mul, UMUL(x, y))
I2(div, tdiv(x, y))
F2(max, x > y || isnan(x) ? x : y)
I2(max, x > y ? x : y)
F2(min, x < y || isnan(x) ? x : y)
I2(min, x < y ? x : y)
F2(pow, pow(x, y))
I2(pow, ipow(x, y))
F2(floordiv, floor(x / y))
I2(floordiv, floor_div_i(x, y))
static float floormod_f2(float x, float y)
{
    return fmod_floorf(x, y);
}
static double floormod_d2(double x, double y)
{
    return fmod_floor(x, y);
}
I2(floormod, floor_mod_i(x, y))
I2(truncdiv, tdiv(x, y))
F2(truncmod, fmod(x, y))
I2(truncmod, tmod(x, y))
F2(realdiv, x / y)
F2(sqdiff, (x - y) * (x - y))
I2(sqdiff, UMUL(USUB(x, y), USUB(x, y)))
F2(atan2, atan2(x, y))
F2(xdivy, x == 0 && !isnan(y) ? 0 : x / y)
F2(xlogy, x == 0 && !isnan(y) ? 0 : x * log(y))
F2(polygamma, polygamma(x, y))
F2(divnonan, y == 0 ? 0 : x / y)
F2(rsqrt_grad, (T)-0.5 * y * x * x * x)
F2(recip_grad, -y *x *x)
F2(softplus_grad, x / (1 + exp(-y)))
F2(softsign_grad, x / ((1 + fabs(y)) * (1 + fabs(y))))
F2(elu_grad, y < 0 ? x * (y + 1) : x)
F2(selu_grad, y < 0 ? x * (y + (T)(SELU_SCALE * SELU_ALPHA)) : x * (T)SELU_SCALE)
F2(relu6_grad, y > 0 && y < 6 ? x : 0)
I2(relu6_grad, y > 0 && y < 6 ? x : 0)
C2(less, x < y)
C2(less_eq, x <= y)
C2(greater, x > y)
C2(greater_eq, x >= y)
C2(not_eq, x != y)
C2(equal, x == y)
static bool land_ci(int64_t x, int64_t y)
{
    return x && y;
}
static bool lor_ci(int64_t x, int64_t y)
{
    return x || y;
}

enum { CHK_NONE, CHK_DIVZ, CHK_NEGPOW };

typedef struct bin_op {
    float (*f)(float, float);
    double (*d)(double, double);
    int64_t (*i)(int64_t, int64_t);
    bool (*cf)(float, float);
    bool (*cd)(double, double);
    bool (*ci)(int64_t, int64_t);
    int check;  /* integer operands: what y must not hold */
    bool alpha; /* LeakyReluGrad: x > 0 ? dy : alpha dy */
} bin_op;

/* --- unary kernel --- */

typedef struct un_job {
    const un_op *op;
    rill_dtype t, ot;
    const void *x;
    void *y;
    float af;
    double ad;
} un_job;

static void un_range(void *arg, int64_t b, int64_t e)
{
    const un_job *j = arg;
    const un_op *op = j->op;
    rill_dtype t = j->t;
    switch (domain(t)) {
    case D_F32:
        if (op->pf) {
            for (int64_t i = b; i < e; i++) ((uint8_t *)j->y)[i] = op->pf(ld_f(t, j->x, i));
        } else if (t == RILL_FLOAT) {
            const float *x = j->x;
            float *y = j->y;
            for (int64_t i = b; i < e; i++) y[i] = op->f(x[i], j->af);
        } else {
            for (int64_t i = b; i < e; i++) st_f(t, j->y, i, op->f(ld_f(t, j->x, i), j->af));
        }
        break;
    case D_F64: {
        const double *x = j->x;
        if (op->pd)
            for (int64_t i = b; i < e; i++) ((uint8_t *)j->y)[i] = op->pd(x[i]);
        else
            for (int64_t i = b; i < e; i++) ((double *)j->y)[i] = op->d(x[i], j->ad);
        break;
    }
    default:
        if (op->pi)
            for (int64_t i = b; i < e; i++) ((uint8_t *)j->y)[i] = op->pi(ld_i(t, j->x, i));
        else
            for (int64_t i = b; i < e; i++) st_i(t, j->y, i, op->i(ld_i(t, j->x, i), 0));
        break;
    }
}

static void run_sharded(rill__kctx *ctx, int64_t n, rill__range_fn fn, void *job)
{
    if (n >= 2 * SHARD_MIN && ctx->pool)
        rill__parallel_for(ctx->pool, n, SHARD_MIN, fn, job);
    else
        fn(job, 0, n);
}

static void unary(rill__kctx *ctx, const un_op *op)
{
    const rill_tensor *x = ctx->inputs[0];
    bool pred = op->pf || op->pd || op->pi;
    if (op->int_nonzero && domain(x->dtype) == D_I64)
        for (int64_t i = 0; i < x->numel; i++)
            if (ld_i(x->dtype, x->buf->data, i) == 0) {
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Integer division by zero");
                return;
            }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, pred ? RILL_BOOL : x->dtype, &x->shape);
    if (!out) return;
    double alpha = rill__attr_float(ctx->node, "alpha", 0.2);
    un_job j = {op,           x->dtype, pred ? RILL_BOOL : x->dtype, x->buf->data, out->buf->data,
                (float)alpha, alpha};
    run_sharded(ctx, x->numel, un_range, &j);
}

/* --- binary kernel --- */

typedef struct bin_job {
    const bin_op *op;
    rill_dtype t;
    const void *a, *b;
    void *o;
    const rill__bcast *bc;
    double alpha;
} bin_job;

static void bin_range(void *arg, int64_t b0, int64_t e0)
{
    const bin_job *j = arg;
    const bin_op *op = j->op;
    const rill__bcast *bc = j->bc;
    rill_dtype t = j->t;
    int dom = domain(t);
    bool cmp = op->cf || op->ci;
    int r = bc->rank;
    int64_t idx[RILL_MAX_DIMS] = {0}, ia = 0, ib = 0;
    bool walk = !bc->same && !bc->a_scalar && !bc->b_scalar;
    if (walk) {
        int64_t rem = b0;
        for (int d = r - 1; d >= 0; d--) {
            idx[d] = bc->out_dims[d] ? rem % bc->out_dims[d] : 0;
            rem = bc->out_dims[d] ? rem / bc->out_dims[d] : 0;
        }
        for (int d = 0; d < r; d++) {
            ia += idx[d] * bc->a_strides[d];
            ib += idx[d] * bc->b_strides[d];
        }
    }
    float af = (float)j->alpha;
    for (int64_t i = b0; i < e0; i++) {
        int64_t xa = walk ? ia : bc->a_scalar ? 0 : i, xb = walk ? ib : bc->b_scalar ? 0 : i;
        switch (dom) {
        case D_F32: {
            float x = ld_f(t, j->a, xa), y = ld_f(t, j->b, xb);
            if (cmp)
                ((uint8_t *)j->o)[i] = op->cf(x, y);
            else if (op->alpha)
                st_f(t, j->o, i, y > 0 ? x : x * af);
            else
                st_f(t, j->o, i, op->f(x, y));
            break;
        }
        case D_F64: {
            double x = ((const double *)j->a)[xa], y = ((const double *)j->b)[xb];
            if (cmp)
                ((uint8_t *)j->o)[i] = op->cd(x, y);
            else if (op->alpha)
                ((double *)j->o)[i] = y > 0 ? x : x * j->alpha;
            else
                ((double *)j->o)[i] = op->d(x, y);
            break;
        }
        default: {
            int64_t x = ld_i(t, j->a, xa), y = ld_i(t, j->b, xb);
            if (cmp)
                ((uint8_t *)j->o)[i] = op->ci(x, y);
            else
                st_i(t, j->o, i, op->i(x, y));
            break;
        }
        }
        if (walk)
            for (int d = r - 1; d >= 0; d--) {
                ia += bc->a_strides[d];
                ib += bc->b_strides[d];
                if (++idx[d] < bc->out_dims[d]) break;
                ia -= bc->a_strides[d] * bc->out_dims[d];
                ib -= bc->b_strides[d] * bc->out_dims[d];
                idx[d] = 0;
            }
    }
}

static void binary(rill__kctx *ctx, const bin_op *op)
{
    const rill_tensor *x = ctx->inputs[0], *y = ctx->inputs[1];
    rill__bcast bc;
    if (!rill__check_bcast(ctx, x, y, &bc)) return;
    if (op->check != CHK_NONE && domain(x->dtype) == D_I64)
        for (int64_t i = 0; i < y->numel; i++) {
            int64_t v = ld_i(y->dtype, y->buf->data, i);
            if (op->check == CHK_DIVZ && v == 0) {
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Integer division by zero");
                return;
            }
            if (op->check == CHK_NEGPOW && v < 0) {
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                                "Integers to negative integer powers are not allowed");
                return;
            }
        }
    bool cmp = op->cf || op->ci;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, cmp ? RILL_BOOL : x->dtype, &bc.out);
    if (!out) return;
    bin_job j = {op,
                 x->dtype,
                 x->buf->data,
                 y->buf->data,
                 out->buf->data,
                 &bc,
                 op->alpha ? rill__attr_float(ctx->node, "alpha", 0.2) : 0};
    run_sharded(ctx, out->numel, bin_range, &j);
}

/* --- Select and SelectV2 --- */

static void copy_elem(void *dst, int64_t i, const void *src, int64_t k, size_t w)
{
    memcpy((char *)dst + (size_t)i * w, (const char *)src + (size_t)k * w, w);
}

static void select_kernel(rill__kctx *ctx)
{
    const rill_tensor *c = ctx->inputs[0], *x = ctx->inputs[1], *y = ctx->inputs[2];
    char a[96], b[96];
    if (!rill_shape_equal(&x->shape, &y->shape)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "'then' and 'else' must have the same size.  but are: %s vs. %s",
                        rill_shape_str(&x->shape, a, sizeof a),
                        rill_shape_str(&y->shape, b, sizeof b));
        return;
    }
    bool same = rill_shape_equal(&c->shape, &x->shape);
    bool scalar = c->shape.rank == 0;
    bool vec = c->shape.rank == 1 && x->shape.rank >= 1 && c->shape.dims[0] == x->shape.dims[0];
    if (!same && !scalar && !vec) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        c->shape.rank == 1 ? "Condition vector size (%lld) must match the first "
                                             "dimension of 'then' (%s)"
                                           : "'cond' (rank %lld) must be a scalar, a vector or "
                                             "have the same shape as 'then' (%s)",
                        (long long)(c->shape.rank == 1 ? c->shape.dims[0] : c->shape.rank),
                        rill_shape_str(&x->shape, a, sizeof a));
        return;
    }
    if (x->dtype == RILL_STRING) {
        rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "Select on strings is not supported");
        return;
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!out) return;
    size_t w = rill_dtype_size(x->dtype);
    const uint8_t *cd = c->buf->data;
    int64_t inner = vec && x->shape.dims[0] ? x->numel / x->shape.dims[0] : 1;
    for (int64_t i = 0; i < x->numel; i++) {
        bool pick = scalar ? cd[0] : vec ? cd[i / inner] : cd[i];
        copy_elem(out->buf->data, i, pick ? x->buf->data : y->buf->data, i, w);
    }
}

static void select_v2_kernel(rill__kctx *ctx)
{
    const rill_tensor *c = ctx->inputs[0], *x = ctx->inputs[1], *y = ctx->inputs[2];
    rill__bcast bxy, bc;
    if (!rill__check_bcast(ctx, x, y, &bxy)) return;
    if (!rill__bcast_init(&bc, &c->shape, &bxy.out)) {
        char a[96], b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "condition %s and the broadcast shape of then and else %s are not "
                        "broadcastable",
                        rill_shape_str(&c->shape, a, sizeof a),
                        rill_shape_str(&bxy.out, b, sizeof b));
        return;
    }
    if (x->dtype == RILL_STRING) {
        rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "SelectV2 on strings is not supported");
        return;
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &bc.out);
    if (!out) return;
    size_t w = rill_dtype_size(x->dtype);
    const uint8_t *cd = c->buf->data;
    const rill_shape *os = &bc.out;
    for (int64_t i = 0; i < out->numel; i++) {
        /* the flat index of i in each operand, right-aligned, broadcast dims fixed at 0 */
        int64_t rem = i, ic = 0, ix = 0, iy = 0, sc = 1, sx = 1, sy = 1;
        for (int d = os->rank - 1; d >= 0; d--) {
            int64_t coord = rem % os->dims[d];
            rem /= os->dims[d];
            int kc = d - (os->rank - c->shape.rank), kx = d - (os->rank - x->shape.rank),
                ky = d - (os->rank - y->shape.rank);
            if (kc >= 0) {
                if (c->shape.dims[kc] != 1) ic += coord * sc;
                sc *= c->shape.dims[kc];
            }
            if (kx >= 0) {
                if (x->shape.dims[kx] != 1) ix += coord * sx;
                sx *= x->shape.dims[kx];
            }
            if (ky >= 0) {
                if (y->shape.dims[ky] != 1) iy += coord * sy;
                sy *= y->shape.dims[ky];
            }
        }
        if (cd[ic])
            copy_elem(out->buf->data, i, x->buf->data, ix, w);
        else
            copy_elem(out->buf->data, i, y->buf->data, iy, w);
    }
}

/* --- the ops --- */

#define UNF(nm)                                                                                    \
    {                                                                                              \
        .f = nm##_f, .d = nm##_d                                                                   \
    }
#define UNFI(nm, in)                                                                               \
    {                                                                                              \
        .f = nm##_f, .d = nm##_d, .i = in##_i                                                      \
    }
#define UN_KERNEL(fn, ...)                                                                         \
    static void fn(rill__kctx *ctx)                                                                \
    {                                                                                              \
        static const un_op op = __VA_ARGS__;                                                       \
        unary(ctx, &op);                                                                           \
    }
#define BIN_KERNEL(fn, ...)                                                                        \
    static void fn(rill__kctx *ctx)                                                                \
    {                                                                                              \
        static const bin_op op = __VA_ARGS__;                                                      \
        binary(ctx, &op);                                                                          \
    }
#define BF(nm)                                                                                     \
    {                                                                                              \
        .f = nm##_f2, .d = nm##_d2                                                                 \
    }
#define BFI(nm)                                                                                    \
    {                                                                                              \
        .f = nm##_f2, .d = nm##_d2, .i = nm##_i2                                                   \
    }
#define BC(nm)                                                                                     \
    {                                                                                              \
        .cf = nm##_cf, .cd = nm##_cd, .ci = nm##_ci                                                \
    }

UN_KERNEL(k_abs, UNFI(abs, abs))
UN_KERNEL(k_sign, UNFI(sign, sign))
UN_KERNEL(k_rsqrt, UNF(rsqrt))
UN_KERNEL(k_recip, {.f = recip_f, .d = recip_d, .i = recip_i, .int_nonzero = true})
UN_KERNEL(k_round, UNFI(rint, ident))
UN_KERNEL(k_floor, UNF(floor))
UN_KERNEL(k_ceil, UNF(ceil))
UN_KERNEL(k_log1p, UNF(log1p))
UN_KERNEL(k_expm1, UNF(expm1))
UN_KERNEL(k_softplus, UNF(softplus))
UN_KERNEL(k_softsign, UNF(softsign))
UN_KERNEL(k_elu, UNF(elu))
UN_KERNEL(k_selu, UNF(selu))
UN_KERNEL(k_leaky, UNF(leaky))
UN_KERNEL(k_relu6, UNFI(relu6, relu6))
UN_KERNEL(k_erf, UNF(erf))
UN_KERNEL(k_erfc, UNF(erfc))
UN_KERNEL(k_sin, UNF(sin))
UN_KERNEL(k_cos, UNF(cos))
UN_KERNEL(k_tan, UNF(tan))
UN_KERNEL(k_asin, UNF(asin))
UN_KERNEL(k_acos, UNF(acos))
UN_KERNEL(k_atan, UNF(atan))
UN_KERNEL(k_sinh, UNF(sinh))
UN_KERNEL(k_cosh, UNF(cosh))
UN_KERNEL(k_asinh, UNF(asinh))
UN_KERNEL(k_acosh, UNF(acosh))
UN_KERNEL(k_atanh, UNF(atanh))
UN_KERNEL(k_lgamma, UNF(lgamma))
UN_KERNEL(k_digamma, UNF(digamma))
UN_KERNEL(k_isnan, {.pf = isnan_f, .pd = isnan_d})
UN_KERNEL(k_isinf, {.pf = isinf_f, .pd = isinf_d})
UN_KERNEL(k_isfinite, {.pf = isfinite_f, .pd = isfinite_d})
UN_KERNEL(k_lnot, {.pi = lnot_i})
static int64_t neg_i(int64_t x, int64_t a)
{
    (void)a;
    return (int64_t)(0 - (uint64_t)x);
}
static int64_t square_i(int64_t x, int64_t a)
{
    (void)a;
    return UMUL(x, x);
}
UN_KERNEL(k_neg_small, {.i = neg_i})
UN_KERNEL(k_square_small, {.i = square_i})

BIN_KERNEL(k_add, BFI(add))
BIN_KERNEL(k_sub, BFI(sub))
BIN_KERNEL(k_mul, BFI(mul))
BIN_KERNEL(k_div, {.i = div_i2, .check = CHK_DIVZ})
BIN_KERNEL(k_max, BFI(max))
BIN_KERNEL(k_min, BFI(min))
BIN_KERNEL(k_pow, {.f = pow_f2, .d = pow_d2, .i = pow_i2, .check = CHK_NEGPOW})
BIN_KERNEL(k_floordiv, {.f = floordiv_f2, .d = floordiv_d2, .i = floordiv_i2, .check = CHK_DIVZ})
BIN_KERNEL(k_floormod, {.f = floormod_f2, .d = floormod_d2, .i = floormod_i2, .check = CHK_DIVZ})
BIN_KERNEL(k_truncdiv, {.i = truncdiv_i2, .check = CHK_DIVZ})
BIN_KERNEL(k_truncmod, {.f = truncmod_f2, .d = truncmod_d2, .i = truncmod_i2, .check = CHK_DIVZ})
BIN_KERNEL(k_realdiv, BF(realdiv))
BIN_KERNEL(k_sqdiff, BFI(sqdiff))
BIN_KERNEL(k_atan2, BF(atan2))
BIN_KERNEL(k_xdivy, BF(xdivy))
BIN_KERNEL(k_xlogy, BF(xlogy))
BIN_KERNEL(k_polygamma, BF(polygamma))
BIN_KERNEL(k_divnonan, BF(divnonan))
BIN_KERNEL(k_less, BC(less))
BIN_KERNEL(k_less_eq, BC(less_eq))
BIN_KERNEL(k_greater, BC(greater))
BIN_KERNEL(k_greater_eq, BC(greater_eq))
BIN_KERNEL(k_not_eq, BC(not_eq))
BIN_KERNEL(k_equal, BC(equal))
BIN_KERNEL(k_land, {.ci = land_ci})
BIN_KERNEL(k_lor, {.ci = lor_ci})
BIN_KERNEL(k_rsqrt_grad, BF(rsqrt_grad))
BIN_KERNEL(k_recip_grad, BF(recip_grad))
BIN_KERNEL(k_softplus_grad, BF(softplus_grad))
BIN_KERNEL(k_softsign_grad, BF(softsign_grad))
BIN_KERNEL(k_elu_grad, BF(elu_grad))
BIN_KERNEL(k_selu_grad, BF(selu_grad))
BIN_KERNEL(k_relu6_grad, BFI(relu6_grad))
BIN_KERNEL(k_leaky_grad, {.f = add_f2, .d = add_d2, .alpha = true})

#define R(o, t, f) {.op = o, .device_type = "CPU", .dtype = t, .fn = f},
#define R_FL(op, fn)                                                                               \
    R(op, RILL_FLOAT, fn) R(op, RILL_DOUBLE, fn) R(op, RILL_HALF, fn) R(op, RILL_BFLOAT16, fn)
#define R_I32(op, fn) R(op, RILL_INT32, fn) R(op, RILL_INT64, fn)
#define R_SMALL(op, fn)                                                                            \
    R(op, RILL_INT8, fn) R(op, RILL_INT16, fn) R(op, RILL_UINT8, fn) R(op, RILL_UINT16, fn)
#define R_SI(op, fn)  R_I32(op, fn) R(op, RILL_INT8, fn) R(op, RILL_INT16, fn)
#define R_IN(op, fn)  R_I32(op, fn) R_SMALL(op, fn)
#define R_NUM(op, fn) R_FL(op, fn) R_IN(op, fn)

const rill__kernel_def rill__cpu_kernels_elementwise[] = {
    R_FL("Abs", k_abs) R_SI("Abs", k_abs) R_FL("Sign", k_sign) R_I32("Sign", k_sign) R_FL(
        "Rsqrt", k_rsqrt) R_FL("Reciprocal", k_recip) R_I32("Reciprocal", k_recip)
        R_FL("Inv", k_recip) R_I32("Inv", k_recip) R_FL("Round", k_round) R_I32(
            "Round", k_round) R_FL("Rint", k_round) R_FL("Floor", k_floor) R_FL("Ceil", k_ceil)
            R_FL("Log1p", k_log1p) R_FL("Expm1", k_expm1) R_FL("Softplus", k_softplus) R_FL(
                "Softsign", k_softsign) R_FL("Elu", k_elu) R_FL("Selu", k_selu) R_FL("LeakyRelu",
                                                                                     k_leaky)
                R_NUM("Relu6", k_relu6) R_FL("Erf", k_erf) R_FL("Erfc", k_erfc) R_FL(
                    "Sin", k_sin) R_FL("Cos", k_cos) R_FL("Tan", k_tan)
                    R_FL("Asin", k_asin) R_FL("Acos", k_acos) R_FL("Atan", k_atan) R_FL(
                        "Sinh",
                        k_sinh) R_FL("Cosh", k_cosh)
                        R_FL("Asinh", k_asinh) R_FL("Acosh", k_acosh) R_FL("Atanh", k_atanh) R_FL(
                            "Lgamma",
                            k_lgamma) R_FL("Digamma", k_digamma) R_FL("IsNan", k_isnan)
                            R_FL("IsInf", k_isinf) R_FL("IsFinite", k_isfinite)
                                R("LogicalNot", RILL_BOOL, k_lnot) R_FL("Pow", k_pow) R_I32(
                                    "Pow",
                                    k_pow) R_NUM("FloorDiv",
                                                 k_floordiv) R_NUM("FloorMod",
                                                                   k_floormod) R_IN("TruncateDiv",
                                                                                    k_truncdiv)
                                    R_FL("TruncateMod",
                                         k_truncmod) R_I32("TruncateMod", k_truncmod)
                                        R_FL("RealDiv", k_realdiv) R_FL(
                                            "SquaredDifference",
                                            k_sqdiff) R_I32("SquaredDifference", k_sqdiff)
                                            R_FL("Atan2", k_atan2) R_FL("Xdivy", k_xdivy) R_FL(
                                                "Xlogy",
                                                k_xlogy) R("Polygamma", RILL_FLOAT, k_polygamma)
                                                R("Polygamma", RILL_DOUBLE, k_polygamma) R_NUM(
                                                    "Less",
                                                    k_less) R_NUM("LessEqual", k_less_eq)
                                                    R_NUM("Greater",
                                                          k_greater) R_NUM("GreaterEqual",
                                                                           k_greater_eq) R_NUM("Not"
                                                                                               "Equ"
                                                                                               "al",
                                                                                               k_not_eq)
                                                        R("NotEqual", RILL_BOOL, k_not_eq) R(
                                                            "LogicalAnd",
                                                            RILL_BOOL,
                                                            k_land) R("LogicalOr", RILL_BOOL, k_lor)
                                                            R_FL("RsqrtGrad", k_rsqrt_grad) R_FL(
                                                                "ReciprocalGrad", k_recip_grad)
                                                                R_FL("InvGrad", k_recip_grad) R_FL(
                                                                    "SoftplusGrad",
                                                                    k_softplus_grad) R_FL("Softsign"
                                                                                          "Grad",
                                                                                          k_softsign_grad)
                                                                    R_FL("EluGrad", k_elu_grad) R_FL(
                                                                        "SeluGrad",
                                                                        k_selu_grad)
                                                                        R_NUM("Relu6Grad",
                                                                              k_relu6_grad)
                                                                            R_FL("LeakyReluGrad",
                                                                                 k_leaky_grad){
                                                                                .op = "Select",
                                                                                .device_type =
                                                                                    "CPU",
                                                                                .dtype =
                                                                                    RILL_DT_INVALID,
                                                                                .fn =
                                                                                    select_kernel},
    {.op = "SelectV2", .device_type = "CPU", .dtype = RILL_DT_INVALID, .fn = select_v2_kernel},
    R_FL("DivNoNan", k_divnonan)
    /* the arithmetic cpu_math.c serves for float, double, half, int32 and int64, on the small
     * integer dtypes (and bfloat16), and Equal exactly on them (cpu_select.c's goes through
     * doubles) */
    R_SMALL("Add", k_add) R_SMALL("Sub", k_sub) R_SMALL("Mul", k_mul) R_SMALL("Div", k_div)
        R_SMALL("Maximum", k_max) R_SMALL("Minimum", k_min) R_SMALL("Neg", k_neg_small)
            R_SMALL("Square", k_square_small) R_SMALL("Equal", k_equal)
                R("Add", RILL_BFLOAT16, k_add) R("Sub", RILL_BFLOAT16, k_sub)
                    R("Mul", RILL_BFLOAT16, k_mul) R("Maximum", RILL_BFLOAT16, k_max)
                        R("Minimum", RILL_BFLOAT16, k_min) R("Equal", RILL_BFLOAT16, k_equal){0},
};
