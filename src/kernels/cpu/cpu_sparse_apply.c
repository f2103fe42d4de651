/* cpu_sparse_apply.c - CPU kernels for SparseApplyMomentum, SparseApplyAdagrad,
 * _SparseApplyAdam, SparseApplyRMSProp, SparseApplyCenteredRMSProp, SparseApplyAdadelta,
 * SparseApplyFtrl, SparseApplyFtrlV2, SparseApplyProximalAdagrad and
 * SparseApplyProximalGradientDescent (src/graph/ops_sparse_apply.c), float and double.
 *
 * Each first sums the gradient rows of repeated indices (TF's _deduplicate_indexed_slices) into
 * one row per distinct index, in the order the indices first appear, then updates those rows of
 * the variable and its slots in place under their locks (copy-on-write as cpu_state.c).
 * Momentum and Adagrad touch only those rows; Adam decays every row of m and v and updates
 * every row of var, as TF's AdamOptimizer._apply_sparse. The others run the dense updates'
 * element code (cpu_apply.c) over each distinct row. */
#include "cpu_apply.h"
#include "cpu_kernels.h"
#include "cpu_rows.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The distinct indices of ix (int32/int64), in order of first appearance, and the sum of their
 * grad rows. Caller frees rows and uniq with rill__free. */
typedef struct dedup {
    int64_t n;     /* distinct indices */
    int64_t *uniq; /* their values */
    void *rows;    /* n rows of inner elements (grad's dtype) */
} dedup;

/* False (ctx failed, TF's text) when an index is out of [0, limit). */
static bool dedup_rows(rill__kctx *ctx, const rill_tensor *ix, const rill_tensor *grad,
                       int64_t limit, int64_t inner, dedup *d)
{
    int64_t n = ix->numel;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = rill__index_at(ix, i);
        if (v < 0 || v >= limit) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Index %lld at offset %lld in indices is out of range", (long long)v,
                            (long long)i);
            return false;
        }
    }
    if (grad->numel != n * inner) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "grad must be the same size as indices in the first dimension.");
        return false;
    }
    /* slot of each index value: open addressing over the distinct values seen */
    int64_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    int64_t *tab = rill__malloc((size_t)cap * sizeof *tab);
    d->uniq = rill__malloc((size_t)(n ? n : 1) * sizeof *d->uniq);
    size_t es = rill_dtype_size(grad->dtype), row = (size_t)inner * es;
    d->rows = rill__malloc(n ? (size_t)n * row : 1);
    RILL_CHECK_ALLOC(tab && d->uniq && d->rows);
    for (int64_t i = 0; i < cap; i++) tab[i] = -1;
    d->n = 0;
    const char *g = grad->buf->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = rill__index_at(ix, i);
        int64_t s = (int64_t)(((uint64_t)v * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
        while (tab[s] >= 0 && d->uniq[tab[s]] != v) s = (s + 1) & (cap - 1);
        char *dst;
        if (tab[s] < 0) {
            tab[s] = d->n;
            d->uniq[d->n] = v;
            dst = (char *)d->rows + (size_t)d->n++ * row;
            memcpy(dst, g + (size_t)i * row, row);
        } else {
            dst = (char *)d->rows + (size_t)tab[s] * row;
            rill__rows_add(grad->dtype, dst, g + (size_t)i * row, inner, 1);
        }
    }
    rill__free(tab);
    return true;
}

static void dedup_free(dedup *d)
{
    rill__free(d->uniq);
    rill__free(d->rows);
}

#define LOCK_ALL(n)                                                                                \
    for (int li = 0; li < (n); li++) pthread_mutex_lock(&ctx->vars[li]->mu)
#define UNLOCK_ALL(n)                                                                              \
    for (int li = (n)-1; li >= 0; li--) pthread_mutex_unlock(&ctx->vars[li]->mu)

static double scalar(const rill_tensor *t)
{
    return rill_tensor_get_double(t, 0);
}

static int64_t inner_of(const rill_tensor *var)
{
    int64_t p = 1;
    for (int d = 1; d < var->shape.rank; d++) p *= var->shape.dims[d];
    return p;
}

/* --- Momentum: accum = accum * momentum + g; var -= lr * accum (Nesterov: lr * g + lr *
 * momentum * accum), on the rows named. --- */
#define MOMENTUM_ROWS(T)                                                                           \
    do {                                                                                           \
        T *w = var->buf->data, *a = acc->buf->data;                                                \
        const T *g = d.rows;                                                                       \
        T tlr = (T)lr, tm = (T)mom;                                                                \
        for (int64_t r = 0; r < d.n; r++) {                                                        \
            T *wr = w + d.uniq[r] * inner, *ar = a + d.uniq[r] * inner;                            \
            const T *gr = g + r * inner;                                                           \
            for (int64_t j = 0; j < inner; j++) {                                                  \
                ar[j] = ar[j] * tm + gr[j];                                                        \
                if (nesterov)                                                                      \
                    wr[j] -= gr[j] * tlr + ar[j] * tm * tlr;                                       \
                else                                                                               \
                    wr[j] -= ar[j] * tlr;                                                          \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static void sparse_momentum_kernel(rill__kctx *ctx)
{
    const rill_tensor *grad = ctx->inputs[3], *ix = ctx->inputs[4];
    double lr = scalar(ctx->inputs[2]), mom = scalar(ctx->inputs[5]);
    bool nesterov = rill__attr_bool(ctx->node, "use_nesterov", false);
    LOCK_ALL(2);
    rill_tensor *var = rill__var_writable(ctx, ctx->vars[0]);
    rill_tensor *acc = var ? rill__var_writable(ctx, ctx->vars[1]) : NULL;
    dedup d = {0};
    int64_t inner = var ? inner_of(var) : 0;
    if (acc && dedup_rows(ctx, ix, grad, var->shape.dims[0], inner, &d)) {
        if (var->dtype == RILL_FLOAT)
            MOMENTUM_ROWS(float);
        else
            MOMENTUM_ROWS(double);
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(var));
    }
    dedup_free(&d);
    UNLOCK_ALL(2);
}

/* --- Adagrad: accum += g * g (unless update_slots is false); var -= lr * g / sqrt(accum). --- */
#define ADAGRAD_ROWS(T, SQRT)                                                                      \
    do {                                                                                           \
        T *w = var->buf->data, *a = acc->buf->data;                                                \
        const T *g = d.rows;                                                                       \
        T tlr = (T)lr;                                                                             \
        for (int64_t r = 0; r < d.n; r++) {                                                        \
            T *wr = w + d.uniq[r] * inner, *ar = a + d.uniq[r] * inner;                            \
            const T *gr = g + r * inner;                                                           \
            for (int64_t j = 0; j < inner; j++) {                                                  \
                if (update_slots) ar[j] += gr[j] * gr[j];                                          \
                wr[j] -= tlr * gr[j] / SQRT(ar[j]);                                                \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static void sparse_adagrad_kernel(rill__kctx *ctx)
{
    const rill_tensor *grad = ctx->inputs[3], *ix = ctx->inputs[4];
    double lr = scalar(ctx->inputs[2]);
    bool update_slots = rill__attr_bool(ctx->node, "update_slots", true);
    LOCK_ALL(2);
    rill_tensor *var = rill__var_writable(ctx, ctx->vars[0]);
    rill_tensor *acc = var ? rill__var_writable(ctx, ctx->vars[1]) : NULL;
    dedup d = {0};
    int64_t inner = var ? inner_of(var) : 0;
    if (acc && dedup_rows(ctx, ix, grad, var->shape.dims[0], inner, &d)) {
        if (var->dtype == RILL_FLOAT)
            ADAGRAD_ROWS(float, sqrtf);
        else
            ADAGRAD_ROWS(double, sqrt);
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(var));
    }
    dedup_free(&d);
    UNLOCK_ALL(2);
}

/* --- Adam, as TF's _apply_sparse_shared: m = m * beta1 + scatter((1 - beta1) * g),
 * v = v * beta2 + scatter((1 - beta2) * g * g), var -= lr_t * m / (sqrt(v) + epsilon) with
 * lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t), every row. --- */
#define ADAM_ROWS(T, SQRT)                                                                         \
    do {                                                                                           \
        T *w = var->buf->data, *mm = m->buf->data, *vv = v->buf->data;                             \
        const T *g = d.rows;                                                                       \
        T b1 = (T)beta1, b2 = (T)beta2, e = (T)eps, tlr = (T)lr_t;                                 \
        for (int64_t i = 0; i < var->numel; i++) {                                                 \
            mm[i] *= b1;                                                                           \
            vv[i] *= b2;                                                                           \
        }                                                                                          \
        for (int64_t r = 0; r < d.n; r++) {                                                        \
            T *mr = mm + d.uniq[r] * inner, *vr = vv + d.uniq[r] * inner;                          \
            const T *gr = g + r * inner;                                                           \
            for (int64_t j = 0; j < inner; j++) {                                                  \
                mr[j] += gr[j] * (1 - b1);                                                         \
                vr[j] += gr[j] * gr[j] * (1 - b2);                                                 \
            }                                                                                      \
        }                                                                                          \
        for (int64_t i = 0; i < var->numel; i++) w[i] -= tlr * mm[i] / (SQRT(vv[i]) + e);          \
    } while (0)

static void sparse_adam_kernel(rill__kctx *ctx)
{
    double b1p = scalar(ctx->inputs[3]), b2p = scalar(ctx->inputs[4]);
    double lr = scalar(ctx->inputs[5]), beta1 = scalar(ctx->inputs[6]);
    double beta2 = scalar(ctx->inputs[7]), eps = scalar(ctx->inputs[8]);
    const rill_tensor *grad = ctx->inputs[9], *ix = ctx->inputs[10];
    double lr_t = lr * sqrt(1 - b2p) / (1 - b1p);
    LOCK_ALL(3);
    rill_tensor *var = rill__var_writable(ctx, ctx->vars[0]);
    rill_tensor *m = var ? rill__var_writable(ctx, ctx->vars[1]) : NULL;
    rill_tensor *v = m ? rill__var_writable(ctx, ctx->vars[2]) : NULL;
    dedup d = {0};
    int64_t inner = var ? inner_of(var) : 0;
    if (v && dedup_rows(ctx, ix, grad, var->shape.dims[0], inner, &d)) {
        if (var->dtype == RILL_FLOAT)
            ADAM_ROWS(float, sqrtf);
        else
            ADAM_ROWS(double, sqrt);
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(var));
    }
    dedup_free(&d);
    UNLOCK_ALL(3);
}

/* --- the sparse twins of cpu_apply.c's updates: nslots slots after var, grad at gi, indices
 * at ii, the hyper-parameters at hi[0..nh). Each distinct row of the summed gradient updates
 * that row of var and its slots with the dense element code. --- */
static void sparse_rows(rill__kctx *ctx, rill__apply_kind kind, int nslots, int gi, int ii,
                        const int *hi, int nh, const char *const *names)
{
    double h[5] = {0};
    for (int k = 0; k < nh; k++) h[k] = scalar(ctx->inputs[hi[k]]);
    const rill_tensor *grad = ctx->inputs[gi], *ix = ctx->inputs[ii];
    LOCK_ALL(nslots + 1);
    rill_tensor *t[4] = {0};
    bool ok = true;
    for (int k = 0; ok && k <= nslots; k++) {
        t[k] = rill__var_writable(ctx, ctx->vars[k]);
        ok = t[k] != NULL;
        if (ok && k > 0 && !rill_shape_equal(&t[0]->shape, &t[k]->shape)) {
            char a[96], b[96];
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "var and %s do not have the same shape%s %s", names[k],
                            rill_shape_str(&t[0]->shape, a, sizeof a),
                            rill_shape_str(&t[k]->shape, b, sizeof b));
            ok = false;
        }
    }
    dedup d = {0};
    int64_t inner = ok ? inner_of(t[0]) : 0;
    if (ok && dedup_rows(ctx, ix, grad, t[0]->shape.dims[0], inner, &d)) {
        bool f64 = t[0]->dtype == RILL_DOUBLE;
        size_t row = (size_t)inner * rill_dtype_size(t[0]->dtype);
        for (int64_t r = 0; r < d.n; r++) {
            void *s[4] = {0};
            for (int k = 0; k <= nslots; k++)
                s[k] = (char *)t[k]->buf->data + (size_t)d.uniq[r] * row;
            rill__cpu_apply_elems(kind, f64, s, (const char *)d.rows + (size_t)r * row, h, inner);
        }
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(t[0]));
    }
    dedup_free(&d);
    UNLOCK_ALL(nslots + 1);
}

static void sparse_rmsprop_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "ms", "mom"};
    sparse_rows(ctx, RILL__K_RMSPROP, 2, 7, 8, (const int[]){3, 4, 5, 6}, 4, names);
}

static void sparse_centered_rmsprop_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "mg", "ms", "mom"};
    sparse_rows(ctx, RILL__K_CENTERED_RMSPROP, 3, 8, 9, (const int[]){4, 5, 6, 7}, 4, names);
}

static void sparse_adadelta_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "accum", "accum_update"};
    sparse_rows(ctx, RILL__K_ADADELTA, 2, 6, 7, (const int[]){3, 4, 5}, 3, names);
}

static void sparse_ftrl_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "accum", "linear"};
    sparse_rows(ctx, RILL__K_FTRL, 2, 3, 4, (const int[]){5, 6, 7, 8}, 4, names);
}

static void sparse_ftrl_v2_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "accum", "linear"};
    sparse_rows(ctx, RILL__K_FTRL_V2, 2, 3, 4, (const int[]){5, 6, 7, 8, 9}, 5, names);
}

static void sparse_proximal_adagrad_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "accum"};
    sparse_rows(ctx, RILL__K_PROXIMAL_ADAGRAD, 1, 5, 6, (const int[]){2, 3, 4}, 3, names);
}

static void sparse_proximal_gd_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var"};
    sparse_rows(ctx, RILL__K_PROXIMAL_GD, 0, 4, 5, (const int[]){1, 2, 3}, 3, names);
}

#define K(op_, dt_, fn_)                                                                           \
    {                                                                                              \
        .op = op_, .device_type = "CPU", .dtype = dt_, .fn = fn_                                   \
    }
const rill__kernel_def rill__cpu_kernels_sparse_apply[] = {
    K("SparseApplyMomentum", RILL_FLOAT, sparse_momentum_kernel),
    K("SparseApplyMomentum", RILL_DOUBLE, sparse_momentum_kernel),
    K("SparseApplyAdagrad", RILL_FLOAT, sparse_adagrad_kernel),
    K("SparseApplyAdagrad", RILL_DOUBLE, sparse_adagrad_kernel),
    K("_SparseApplyAdam", RILL_FLOAT, sparse_adam_kernel),
    K("_SparseApplyAdam", RILL_DOUBLE, sparse_adam_kernel),
#define KFD(op_, fn_) K(op_, RILL_FLOAT, fn_), K(op_, RILL_DOUBLE, fn_)
    KFD("SparseApplyRMSProp", sparse_rmsprop_kernel),
    KFD("SparseApplyCenteredRMSProp", sparse_centered_rmsprop_kernel),
    KFD("SparseApplyAdadelta", sparse_adadelta_kernel),
    KFD("SparseApplyFtrl", sparse_ftrl_kernel),
    KFD("SparseApplyFtrlV2", sparse_ftrl_v2_kernel),
    KFD("SparseApplyProximalAdagrad", sparse_proximal_adagrad_kernel),
    KFD("SparseApplyProximalGradientDescent", sparse_proximal_gd_kernel),
#undef KFD
    {0},
};
