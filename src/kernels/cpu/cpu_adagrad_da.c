/* cpu_adagrad_da.c - CPU kernels of ApplyAdagradDA and SparseApplyAdagradDA
 * (src/graph/ops_adagrad_da.c), float and double: TF's functors (training_ops.cc).
 *
 * Dense, with g the gradient accumulator, gg the squared one and T the global step:
 *   g += grad; gg += grad^2;
 *   var = -lr * sign(g) * max(|g| - l1 T, 0) / (l2 T lr + sqrt(gg))   (l1 > 0)
 *   var = -lr * g / (l2 T lr + sqrt(gg))                               (otherwise)
 * Sparse, per index in order (a repeated index accumulates twice, as TF's kernel; the
 * optimizer sums repeated rows first), the rows named:
 *   var = -sign(g) * max(|g| / T - l1, 0) / (l2 + sqrt(gg) / (T lr))   (l1 > 0)
 *   var = -(g / T) / (l2 + sqrt(gg) / (T lr))                          (otherwise)
 * which is TF's own form: at T = 0 it is NaN, as TF's. Updates take the three variables'
 * locks in input order and write in place, copying a value someone else holds first
 * (copy-on-write, as cpu_state.c). */
#include "../kernel.h"
#include "cpu_rows.h"

#include <math.h>

#define SQRT_T(x) _Generic((x), float : sqrtf, default : sqrt)(x)
#define FABS_T(x) _Generic((x), float : fabsf, default : fabs)(x)
#define SIGN_T(x) ((x) > 0 ? (T)1 : (x) < 0 ? (T)-1 : (T)0)

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

/* The hyper-parameters lr, l1, l2 (inputs hi..hi+2) and the global step (hi+3). */
static bool hypers(rill__kctx *ctx, int hi, double h[3], int64_t *step)
{
    static const char *const what[] = {"lr", "l1 regularization strength",
                                       "l2 regularization strength", "global_step"};
    for (int k = 0; k < 4; k++)
        if (!is_scalar(ctx, ctx->inputs[hi + k], what[k])) return false;
    for (int k = 0; k < 3; k++) h[k] = rill_tensor_get_double(ctx->inputs[hi + k], 0);
    *step = ((const int64_t *)ctx->inputs[hi + 3]->buf->data)[0];
    return true;
}

#define DENSE(TY)                                                                                  \
    do {                                                                                           \
        typedef TY T;                                                                              \
        T *w = t[0]->buf->data, *ga = t[1]->buf->data, *gg = t[2]->buf->data;                      \
        const T *g = grad->buf->data;                                                              \
        T lr = (T)h[0], l1 = (T)h[1], l2 = (T)h[2], gs = (T)step;                                  \
        for (int64_t i = 0; i < n; i++) {                                                          \
            ga[i] += g[i];                                                                         \
            gg[i] += g[i] * g[i];                                                                  \
            T den = l2 * gs * lr + SQRT_T(gg[i]);                                                  \
            if (l1 > 0) {                                                                          \
                T m = FABS_T(ga[i]) - l1 * gs;                                                     \
                w[i] = (T)-1 * lr * SIGN_T(ga[i]) * (m > 0 ? m : (T)0) / den;                      \
            } else {                                                                               \
                w[i] = (T)-1 * lr * ga[i] / den;                                                   \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static void apply_adagrad_da_kernel(rill__kctx *ctx)
{
    double h[3];
    int64_t step;
    if (!hypers(ctx, 4, h, &step)) return;
    const rill_tensor *grad = ctx->inputs[3];
    for (int k = 0; k < 3; k++) pthread_mutex_lock(&ctx->vars[k]->mu);
    rill_tensor *t[3] = {0};
    bool ok = true;
    static const char *const names[] = {"var", "gradient_accumulator",
                                        "gradient_squared_accumulator"};
    for (int k = 0; ok && k < 3; k++) {
        t[k] = writable(ctx, ctx->vars[k]);
        ok = t[k] && (k == 0 || same_shape(ctx, t[0], t[k], names[k]));
    }
    if (ok && same_shape(ctx, t[0], grad, "grad")) {
        int64_t n = t[0]->numel;
        if (t[0]->dtype == RILL_DOUBLE)
            DENSE(double);
        else
            DENSE(float);
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(t[0]));
    }
    for (int k = 2; k >= 0; k--) pthread_mutex_unlock(&ctx->vars[k]->mu);
}

#define SPARSE(TY)                                                                                 \
    do {                                                                                           \
        typedef TY T;                                                                              \
        T *w = t[0]->buf->data, *ga = t[1]->buf->data, *gg = t[2]->buf->data;                      \
        const T *g = grad->buf->data;                                                              \
        T lr = (T)h[0], l1 = (T)h[1], l2 = (T)h[2], gs = (T)step, gs_lr = gs * lr;                 \
        for (int64_t i = 0; i < nidx; i++) {                                                       \
            int64_t r = rill__index_at(ix, i);                                                     \
            T *wr = w + r * inner, *ar = ga + r * inner, *qr = gg + r * inner;                     \
            const T *gr = g + i * inner;                                                           \
            for (int64_t j = 0; j < inner; j++) {                                                  \
                ar[j] += gr[j];                                                                    \
                qr[j] += gr[j] * gr[j];                                                            \
                T den = l2 + SQRT_T(qr[j]) / gs_lr;                                                \
                if (l1 > 0) {                                                                      \
                    T m = FABS_T(ar[j]) / gs - l1;                                                 \
                    wr[j] = (T)-1 * SIGN_T(ar[j]) * (m > 0 ? m : (T)0) / den;                      \
                } else {                                                                           \
                    wr[j] = (T)-1 * (ar[j] / gs) / den;                                            \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static void sparse_apply_adagrad_da_kernel(rill__kctx *ctx)
{
    double h[3];
    int64_t step;
    if (!hypers(ctx, 5, h, &step)) return;
    const rill_tensor *grad = ctx->inputs[3], *ix = ctx->inputs[4];
    if (ix->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "indices must be one-dimensional");
        return;
    }
    for (int k = 0; k < 3; k++) pthread_mutex_lock(&ctx->vars[k]->mu);
    rill_tensor *t[3] = {0};
    bool ok = true;
    static const char *const names[] = {"var", "gradient_accumulator",
                                        "gradient_squared_accumulator"};
    for (int k = 0; ok && k < 3; k++) {
        t[k] = writable(ctx, ctx->vars[k]);
        ok = t[k] && (k == 0 || same_shape(ctx, t[0], t[k], names[k]));
    }
    int64_t nidx = ix->numel, inner = 1;
    if (ok && t[0]->shape.rank < 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "var must be at least 1 dimensional");
        ok = false;
    }
    if (ok) {
        for (int d = 1; d < t[0]->shape.rank; d++) inner *= t[0]->shape.dims[d];
        bool gok = grad->shape.rank == t[0]->shape.rank;
        for (int d = 1; gok && d < grad->shape.rank; d++)
            gok = grad->shape.dims[d] == t[0]->shape.dims[d];
        if (!gok) {
            char a[96], b[96];
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "var and grad must match in all dimensions but the first: %s %s",
                            rill_shape_str(&t[0]->shape, a, sizeof a),
                            rill_shape_str(&grad->shape, b, sizeof b));
            ok = false;
        } else if (grad->shape.dims[0] != nidx) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "grad must be the same size as indices in the first dimension.");
            ok = false;
        }
    }
    for (int64_t i = 0; ok && i < nidx; i++) {
        int64_t r = rill__index_at(ix, i);
        if (r < 0 || r >= t[0]->shape.dims[0]) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Index %lld at offset %lld in indices is out of range", (long long)r,
                            (long long)i);
            ok = false;
        }
    }
    if (ok) {
        if (t[0]->dtype == RILL_DOUBLE)
            SPARSE(double);
        else
            SPARSE(float);
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(t[0]));
    }
    for (int k = 2; k >= 0; k--) pthread_mutex_unlock(&ctx->vars[k]->mu);
}

#define K(OP, DT, FN)                                                                              \
    {                                                                                              \
        .op = OP, .device_type = "CPU", .dtype = DT, .fn = FN                                      \
    }

const rill__kernel_def rill__cpu_kernels_adagrad_da[] = {
    K("ApplyAdagradDA", RILL_FLOAT, apply_adagrad_da_kernel),
    K("ApplyAdagradDA", RILL_DOUBLE, apply_adagrad_da_kernel),
    K("SparseApplyAdagradDA", RILL_FLOAT, sparse_apply_adagrad_da_kernel),
    K("SparseApplyAdagradDA", RILL_DOUBLE, sparse_apply_adagrad_da_kernel),
    {0},
};
