/* cpu_apply.c - CPU kernels of the dense optimizer updates of src/graph/ops_apply.c:
 * ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdadelta, ApplyFtrl, ApplyFtrlV2,
 * ApplyProximalAdagrad and ApplyProximalGradientDescent, float and double.
 *
 * The rules are cpu_state.c's: an update takes its variables' locks in input order and writes in
 * place when nobody else holds a value, copying it first otherwise (copy-on-write). Each update
 * is TensorFlow's functor (training_ops.cc) written per element in the variable's type, in the
 * same order of operations, so float results match TF's to rounding. Every element is
 * independent: big variables are split over the intra-op pool without changing a bit. */
#include "../kernel.h"
#include "cpu_apply.h"

#include <math.h>
#include <string.h>

#define APPLY_GRAIN (1 << 15)

typedef rill__apply_kind apply_kind;
#define K_RMSPROP          RILL__K_RMSPROP
#define K_CENTERED_RMSPROP RILL__K_CENTERED_RMSPROP
#define K_ADADELTA         RILL__K_ADADELTA
#define K_FTRL             RILL__K_FTRL
#define K_FTRL_V2          RILL__K_FTRL_V2
#define K_PROXIMAL_ADAGRAD RILL__K_PROXIMAL_ADAGRAD
#define K_PROXIMAL_GD      RILL__K_PROXIMAL_GD

typedef struct apply_job {
    apply_kind kind;
    bool f64;
    void *s[4];    /* var, then the slots in input order */
    const void *g; /* the gradient */
    double h[5];   /* the hyper-parameters in input order */
} apply_job;

#define SQRT_T(x)   _Generic((x), float : sqrtf, default : sqrt)(x)
#define POW_T(x, y) _Generic((x), float : powf, default : pow)(x, y)
#define FABS_T(x)   _Generic((x), float : fabsf, default : fabs)(x)
#define SIGN_T(x)   ((x) > 0 ? (T)1 : (x) < 0 ? (T)-1 : (T)0)

/* The FTRL step of one element (TF's ApplyFtrl / ApplyFtrlV2 functors); gs is the gradient with
 * the shrinkage term added (the plain gradient for V1). */
#define FTRL_STEP(T, w, acc, lin, g, gs, lr, l1, l2, p)                                            \
    do {                                                                                           \
        T na = acc + g * g, an, ao;                                                                \
        if (p == (T)-0.5) {                                                                        \
            an = SQRT_T(na);                                                                       \
            ao = SQRT_T(acc);                                                                      \
        } else {                                                                                   \
            an = POW_T(na, -p);                                                                    \
            ao = POW_T(acc, -p);                                                                   \
        }                                                                                          \
        lin += gs - (an - ao) / lr * w;                                                            \
        T x = l1 * SIGN_T(lin) - lin, y = an / lr + (T)2 * l2;                                     \
        w = FABS_T(lin) > l1 ? x / y : (T)0;                                                       \
        acc += g * g;                                                                              \
    } while (0)

#define APPLY_BODY(TY)                                                                             \
    do {                                                                                           \
        typedef TY T;                                                                              \
        T *w = j->s[0], *s1 = j->s[1], *s2 = j->s[2], *s3 = j->s[3];                               \
        const T *g = j->g;                                                                         \
        T h0 = (T)j->h[0], h1 = (T)j->h[1], h2 = (T)j->h[2], h3 = (T)j->h[3], h4 = (T)j->h[4];     \
        switch (j->kind) {                                                                         \
        case K_RMSPROP: /* ms, mom; lr, rho, momentum, epsilon */                                  \
            for (int64_t i = b; i < e; i++) {                                                      \
                s1[i] += (g[i] * g[i] - s1[i]) * ((T)1 - h1);                                      \
                s2[i] = s2[i] * h2 + (g[i] * h0) / SQRT_T(s1[i] + h3);                             \
                w[i] -= s2[i];                                                                     \
            }                                                                                      \
            break;                                                                                 \
        case K_CENTERED_RMSPROP: /* mg, ms, mom; lr, rho, momentum, epsilon */                     \
            for (int64_t i = b; i < e; i++) {                                                      \
                s2[i] += (g[i] * g[i] - s2[i]) * ((T)1 - h1);                                      \
                s1[i] += (g[i] - s1[i]) * ((T)1 - h1);                                             \
                T denom = (s2[i] - s1[i] * s1[i]) + h3;                                            \
                s3[i] = s3[i] * h2 + (g[i] * h0) / SQRT_T(denom);                                  \
                w[i] -= s3[i];                                                                     \
            }                                                                                      \
            break;                                                                                 \
        case K_ADADELTA: /* accum, accum_update; lr, rho, epsilon */                               \
            for (int64_t i = b; i < e; i++) {                                                      \
                s1[i] = s1[i] * h1 + g[i] * g[i] * ((T)1 - h1);                                    \
                T u = SQRT_T(s2[i] + h2) * ((T)1 / SQRT_T(s1[i] + h2)) * g[i];                     \
                w[i] -= u * h0;                                                                    \
                s2[i] = s2[i] * h1 + u * u * ((T)1 - h1);                                          \
            }                                                                                      \
            break;                                                                                 \
        case K_FTRL: /* accum, linear; lr, l1, l2, lr_power */                                     \
            for (int64_t i = b; i < e; i++)                                                        \
                FTRL_STEP(T, w[i], s1[i], s2[i], g[i], g[i], h0, h1, h2, h3);                      \
            break;                                                                                 \
        case K_FTRL_V2: /* accum, linear; lr, l1, l2, l2_shrinkage, lr_power */                    \
            for (int64_t i = b; i < e; i++) {                                                      \
                T gs = g[i] + (T)2 * h3 * w[i];                                                    \
                FTRL_STEP(T, w[i], s1[i], s2[i], g[i], gs, h0, h1, h2, h4);                        \
            }                                                                                      \
            break;                                                                                 \
        case K_PROXIMAL_ADAGRAD: /* accum; lr, l1, l2 */                                           \
            for (int64_t i = b; i < e; i++) {                                                      \
                s1[i] += g[i] * g[i];                                                              \
                T rate = h0 * ((T)1 / SQRT_T(s1[i]));                                              \
                T prox = w[i] - g[i] * rate;                                                       \
                if (h1 > 0) {                                                                      \
                    T m = FABS_T(prox) - rate * h1;                                                \
                    w[i] = SIGN_T(prox) * (m > 0 ? m : (T)0) / ((T)1 + h2 * rate);                 \
                } else {                                                                           \
                    w[i] = prox / ((T)1 + h2 * rate);                                              \
                }                                                                                  \
            }                                                                                      \
            break;                                                                                 \
        case K_PROXIMAL_GD: /* alpha, l1, l2 */                                                    \
            for (int64_t i = b; i < e; i++) {                                                      \
                T prox = w[i] - g[i] * h0;                                                         \
                if (h1 > 0) {                                                                      \
                    T m = FABS_T(prox) - h0 * h1;                                                  \
                    w[i] = SIGN_T(prox) * (m > 0 ? m : (T)0) / ((T)1 + h0 * h2);                   \
                } else {                                                                           \
                    w[i] = prox / ((T)1 + h0 * h2);                                                \
                }                                                                                  \
            }                                                                                      \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

static void apply_range(void *arg, int64_t b, int64_t e)
{
    const apply_job *j = arg;
    if (j->f64)
        APPLY_BODY(double);
    else
        APPLY_BODY(float);
}

void rill__cpu_apply_elems(rill__apply_kind kind, bool f64, void *const s[4], const void *g,
                           const double h[5], int64_t n)
{
    apply_job j = {.kind = kind, .f64 = f64, .g = g};
    for (int k = 0; k < 4; k++) j.s[k] = s[k];
    for (int k = 0; k < 5; k++) j.h[k] = h[k];
    apply_range(&j, 0, n);
}

/* The variable behind reference input i made writable (copy-on-write); NULL (ctx failed) when
 * uninitialised. Called with its lock held. */
static rill_tensor *writable(rill__kctx *ctx, rill__var *v)
{
    if (!v->value) {
        rill__kctx_fail(ctx, RILL_FAILED_PRECONDITION, "Attempting to use uninitialized value %s",
                        v->name);
        return NULL;
    }
    if (!rill__tensor_exclusive(v->value)) {
        rill_tensor *c = rill_tensor_copy(v->value);
        rill_tensor_free(v->value);
        v->value = c;
    }
    return v->value;
}

/* TF's texts for a slot or gradient that does not match the variable, and a scalar that is
 * not one. */
static bool same_shape(rill__kctx *ctx, const rill_tensor *var, const rill_tensor *x,
                       const char *what)
{
    if (rill_shape_equal(&var->shape, &x->shape)) return true;
    char a[96], b[96];
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "var and %s do not have the same shape%s %s", what,
                    rill_shape_str(&var->shape, a, sizeof a),
                    rill_shape_str(&x->shape, b, sizeof b));
    return false;
}

static bool is_scalar(rill__kctx *ctx, const rill_tensor *t, const char *what)
{
    if (t->shape.rank == 0) return true;
    char a[96];
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s is not a scalar: %s", what,
                    rill_shape_str(&t->shape, a, sizeof a));
    return false;
}

/* Runs an update: nslots reference inputs after var (inputs 1..nslots), the gradient input gi,
 * the scalars at inputs hi[0..nh). names: the inputs' names for errors. */
static void apply(rill__kctx *ctx, apply_kind kind, int nslots, int gi, const int *hi, int nh,
                  const char *const *names)
{
    apply_job j = {.kind = kind};
    for (int k = 0; k < nh; k++) {
        if (!is_scalar(ctx, ctx->inputs[hi[k]], names[hi[k]])) return;
        j.h[k] = rill_tensor_get_double(ctx->inputs[hi[k]], 0);
    }
    const rill_tensor *grad = ctx->inputs[gi];
    int nlocked = 0;
    for (; nlocked <= nslots; nlocked++) pthread_mutex_lock(&ctx->vars[nlocked]->mu);
    rill_tensor *t[4] = {0};
    bool ok = true;
    for (int k = 0; ok && k <= nslots; k++) {
        t[k] = writable(ctx, ctx->vars[k]);
        ok = t[k] && (k == 0 || same_shape(ctx, t[0], t[k], names[k]));
    }
    if (ok && same_shape(ctx, t[0], grad, names[gi])) {
        j.f64 = t[0]->dtype == RILL_DOUBLE;
        for (int k = 0; k <= nslots; k++) j.s[k] = t[k]->buf->data;
        j.g = grad->buf->data;
        int64_t n = t[0]->numel;
        if (n >= 2 * APPLY_GRAIN && ctx->pool)
            rill__parallel_for(ctx->pool, n, APPLY_GRAIN, apply_range, &j);
        else
            apply_range(&j, 0, n);
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(t[0]));
    }
    while (nlocked-- > 0) pthread_mutex_unlock(&ctx->vars[nlocked]->mu);
}

static void rmsprop_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "ms",       "mom",     "lr",
                                        "rho", "momentum", "epsilon", "grad"};
    apply(ctx, K_RMSPROP, 2, 7, (const int[]){3, 4, 5, 6}, 4, names);
}

static void centered_rmsprop_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "mg",       "ms",      "mom", "lr",
                                        "rho", "momentum", "epsilon", "grad"};
    apply(ctx, K_CENTERED_RMSPROP, 3, 8, (const int[]){4, 5, 6, 7}, 4, names);
}

static void adadelta_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "accum",   "accum_update", "lr",
                                        "rho", "epsilon", "grad"};
    apply(ctx, K_ADADELTA, 2, 6, (const int[]){3, 4, 5}, 3, names);
}

static void ftrl_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "accum", "linear", "grad",
                                        "lr",  "l1",    "l2",     "lr_power"};
    apply(ctx, K_FTRL, 2, 3, (const int[]){4, 5, 6, 7}, 4, names);
}

static void ftrl_v2_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "accum", "linear",       "grad",    "lr",
                                        "l1",  "l2",    "l2_shrinkage", "lr_power"};
    apply(ctx, K_FTRL_V2, 2, 3, (const int[]){4, 5, 6, 7, 8}, 5, names);
}

static void proximal_adagrad_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "accum", "lr", "l1", "l2", "grad"};
    apply(ctx, K_PROXIMAL_ADAGRAD, 1, 5, (const int[]){2, 3, 4}, 3, names);
}

static void proximal_gd_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "alpha", "l1", "l2", "delta"};
    apply(ctx, K_PROXIMAL_GD, 0, 4, (const int[]){1, 2, 3}, 3, names);
}

#define AK(OP, FN)                                                                                 \
    {.op = OP, .device_type = "CPU", .dtype = RILL_FLOAT, .fn = FN},                               \
    {                                                                                              \
        .op = OP, .device_type = "CPU", .dtype = RILL_DOUBLE, .fn = FN                             \
    }

const rill__kernel_def rill__cpu_kernels_apply[] = {
    AK("ApplyRMSProp", rmsprop_kernel),
    AK("ApplyCenteredRMSProp", centered_rmsprop_kernel),
    AK("ApplyAdadelta", adadelta_kernel),
    AK("ApplyFtrl", ftrl_kernel),
    AK("ApplyFtrlV2", ftrl_v2_kernel),
    AK("ApplyProximalAdagrad", proximal_adagrad_kernel),
    AK("ApplyProximalGradientDescent", proximal_gd_kernel),
    {0},
};
