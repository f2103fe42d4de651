/* cpu_state.c - CPU kernels for variables, assignments, optimizer updates (the random ops:
 * cpu_random.c).
 *
 * Updates take the variable's lock. They write in place when the variable's tensor is held by
 * nobody else (rill__tensor_exclusive); otherwise they copy first (copy-on-write), so a value a
 * reader or a fetch already holds never changes under it. */
#include "cpu_kernels.h"
#include "loops.h"

#include <math.h>
#include <string.h>

void rill__cpu_variable(rill__kctx *ctx)
{
    /* An uninitialised variable produces no value; a consumer that reads it fails with
     * "Attempting to use uninitialized value" while Assign (a reference input) does not. */
    rill__var *v = ctx->var;
    pthread_mutex_lock(&v->mu);
    if (v->value) rill__kctx_set_output(ctx, 0, rill_tensor_ref(v->value));
    pthread_mutex_unlock(&v->mu);
}

/* The variable behind reference input i, its value made writable (copy-on-write). Called with
 * the variable's lock held. NULL (and ctx failed) when uninitialised. */
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

void rill__cpu_assign(rill__kctx *ctx)
{
    rill__var *v = ctx->vars[0];
    const rill_tensor *x = ctx->inputs[1];
    if (!rill_shape_equal(&x->shape, &v->shape)) {
        char a[96], b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Assign requires shapes of both tensors to match. lhs shape= %s rhs "
                        "shape= %s",
                        rill_shape_str(&v->shape, a, sizeof a),
                        rill_shape_str(&x->shape, b, sizeof b));
        return;
    }
    pthread_mutex_lock(&v->mu);
    /* A big value nobody else holds (a restored tensor, a fresh initial value) becomes the
     * variable's without a copy; readers and updates are copy-on-write, so sharing it with the
     * step's slot until the step ends is safe. A view (a received payload) is copied, so it does
     * not pin the whole message. */
    if (rill_tensor_nbytes(x) >= (64u << 10) && x->dtype != RILL_STRING && !x->buf->parent &&
        rill__tensor_exclusive(x)) {
        rill_tensor_free(v->value);
        v->value = rill_tensor_ref((rill_tensor *)x);
    } else if (v->value && rill__tensor_exclusive(v->value)) {
        memcpy(v->value->buf->data, x->buf->data, rill_tensor_nbytes(x));
    } else {
        rill_tensor_free(v->value);
        v->value = rill_tensor_copy(x);
    }
    rill__kctx_set_output(ctx, 0, rill_tensor_ref(v->value));
    pthread_mutex_unlock(&v->mu);
}

#define ADD_LOOP(T, SIGN)                                                                          \
    do {                                                                                           \
        T *d = (T *)t->buf->data;                                                                  \
        const T *s = (const T *)x->buf->data;                                                      \
        for (int64_t i = 0; i < n; i++) d[i] = (T)(d[i] SIGN s[i]);                                \
    } while (0)

static void assign_add_sub(rill__kctx *ctx, int sign)
{
    rill__var *v = ctx->vars[0];
    const rill_tensor *x = ctx->inputs[1];
    if (!rill_shape_equal(&x->shape, &v->shape)) {
        char a[96], b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s requires shapes of both tensors to match. lhs shape= %s rhs shape= %s",
                        ctx->node->op->name, rill_shape_str(&v->shape, a, sizeof a),
                        rill_shape_str(&x->shape, b, sizeof b));
        return;
    }
    pthread_mutex_lock(&v->mu);
    rill_tensor *t = writable(ctx, v);
    if (t) {
        int64_t n = t->numel;
        switch (t->dtype) {
        case RILL_FLOAT:
            if (sign > 0)
                ADD_LOOP(float, +);
            else
                ADD_LOOP(float, -);
            break;
        case RILL_DOUBLE:
            if (sign > 0)
                ADD_LOOP(double, +);
            else
                ADD_LOOP(double, -);
            break;
        case RILL_INT32:
            if (sign > 0)
                ADD_LOOP(int32_t, +);
            else
                ADD_LOOP(int32_t, -);
            break;
        case RILL_INT64:
            if (sign > 0)
                ADD_LOOP(int64_t, +);
            else
                ADD_LOOP(int64_t, -);
            break;
        case RILL_HALF: {
            rill_half *d = t->buf->data;
            const rill_half *s = x->buf->data;
            for (int64_t i = 0; i < n; i++)
                d[i] = rill_half_from_float(rill_half_to_float(d[i]) +
                                            (float)sign * rill_half_to_float(s[i]));
            break;
        }
        default:
            rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "%s on %s", ctx->node->op->name,
                            rill_dtype_name(t->dtype));
        }
        if (rill__kctx_ok(ctx)) rill__kctx_set_output(ctx, 0, rill_tensor_ref(t));
    }
    pthread_mutex_unlock(&v->mu);
}

void rill__cpu_assign_add(rill__kctx *ctx)
{
    assign_add_sub(ctx, 1);
}

void rill__cpu_assign_sub(rill__kctx *ctx)
{
    assign_add_sub(ctx, -1);
}

static double scalar(const rill_tensor *t)
{
    return rill_tensor_get_double(t, 0);
}

/* Reads another variable-backed input (m, v, accum) made writable, with the shape check done at
 * build time. Lock order: inputs in index order. */
#define LOCK_ALL(n)                                                                                \
    for (int li = 0; li < (n); li++) pthread_mutex_lock(&ctx->vars[li]->mu)
#define UNLOCK_ALL(n)                                                                              \
    for (int li = (n)-1; li >= 0; li--) pthread_mutex_unlock(&ctx->vars[li]->mu)

/* The optimizers' updates: one vectorised pass per variable (loops.h), split over the intra-op
 * pool above UPDATE_GRAIN elements. Every element's update is independent, so the split changes
 * no bit. */
#define UPDATE_GRAIN (1 << 16)

typedef struct update_job {
    int kind; /* 0 sgd, 1 momentum, 2 adam, 3 adagrad */
    bool f64, option; /* momentum: use_nesterov; adagrad: update_slots */
    void *w, *s1, *s2; /* the variable and its slots */
    const void *g;
    double lr, c1, c2, eps; /* momentum: c1 = momentum; adam: c1, c2 = beta1, beta2 */
} update_job;

static void update_range(void *arg, int64_t b, int64_t e)
{
    const update_job *j = arg;
    const rill__loops *l = rill__loops_get();
    int64_t n = e - b;
    if (!j->f64) {
        float *w = (float *)j->w + b, *s1 = j->s1 ? (float *)j->s1 + b : NULL,
              *s2 = j->s2 ? (float *)j->s2 + b : NULL;
        const float *g = (const float *)j->g + b;
        if (j->kind == 0)
            l->f32.sgd(w, g, (float)j->lr, n);
        else if (j->kind == 1)
            l->f32.momentum(w, s1, g, (float)j->lr, (float)j->c1, j->option, n);
        else if (j->kind == 3)
            l->f32.adagrad(w, s1, g, (float)j->lr, j->option, n);
        else
            l->f32.adam(w, s1, s2, g, (float)j->c1, (float)j->c2, (float)j->eps, (float)j->lr, n);
    } else {
        double *w = (double *)j->w + b, *s1 = j->s1 ? (double *)j->s1 + b : NULL,
               *s2 = j->s2 ? (double *)j->s2 + b : NULL;
        const double *g = (const double *)j->g + b;
        if (j->kind == 0)
            l->f64.sgd(w, g, j->lr, n);
        else if (j->kind == 1)
            l->f64.momentum(w, s1, g, j->lr, j->c1, j->option, n);
        else if (j->kind == 3)
            l->f64.adagrad(w, s1, g, j->lr, j->option, n);
        else
            l->f64.adam(w, s1, s2, g, j->c1, j->c2, j->eps, j->lr, n);
    }
}

static void run_update(rill__kctx *ctx, const update_job *j, int64_t n)
{
    if (n >= 2 * UPDATE_GRAIN && ctx->pool)
        rill__parallel_for(ctx->pool, n, UPDATE_GRAIN, update_range, (void *)j);
    else
        update_range((void *)j, 0, n);
}

static void apply_gd_kernel(rill__kctx *ctx)
{
    rill__var *v = ctx->vars[0];
    const rill_tensor *delta = ctx->inputs[2];
    double alpha = scalar(ctx->inputs[1]);
    pthread_mutex_lock(&v->mu);
    rill_tensor *t = writable(ctx, v);
    if (t) {
        update_job j = {.kind = 0, .f64 = t->dtype != RILL_FLOAT, .w = t->buf->data,
                        .g = delta->buf->data, .lr = alpha};
        run_update(ctx, &j, t->numel);
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(t));
    }
    pthread_mutex_unlock(&v->mu);
}

static void apply_momentum_kernel(rill__kctx *ctx)
{
    double lr = scalar(ctx->inputs[2]), mom = scalar(ctx->inputs[4]);
    bool nesterov = rill__attr_bool(ctx->node, "use_nesterov", false);
    const rill_tensor *grad = ctx->inputs[3];
    LOCK_ALL(2);
    rill_tensor *var = writable(ctx, ctx->vars[0]);
    rill_tensor *acc = var ? writable(ctx, ctx->vars[1]) : NULL;
    if (var && acc) {
        update_job j = {.kind = 1, .f64 = var->dtype != RILL_FLOAT, .option = nesterov,
                        .w = var->buf->data, .s1 = acc->buf->data, .g = grad->buf->data,
                        .lr = lr, .c1 = mom};
        run_update(ctx, &j, var->numel);
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(var));
    }
    UNLOCK_ALL(2);
}

/* var, accum, lr, grad; update_slots false leaves accum as it is (TF's attr). */
static void apply_adagrad_kernel(rill__kctx *ctx)
{
    double lr = scalar(ctx->inputs[2]);
    bool update_slots = rill__attr_bool(ctx->node, "update_slots", true);
    const rill_tensor *grad = ctx->inputs[3];
    LOCK_ALL(2);
    rill_tensor *var = writable(ctx, ctx->vars[0]);
    rill_tensor *acc = var ? writable(ctx, ctx->vars[1]) : NULL;
    if (var && acc) {
        update_job j = {.kind = 3, .f64 = var->dtype != RILL_FLOAT, .option = update_slots,
                        .w = var->buf->data, .s1 = acc->buf->data, .g = grad->buf->data,
                        .lr = lr};
        run_update(ctx, &j, var->numel);
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(var));
    }
    UNLOCK_ALL(2);
}

static void apply_adam_kernel(rill__kctx *ctx)
{
    double b1p = scalar(ctx->inputs[3]), b2p = scalar(ctx->inputs[4]);
    double lr = scalar(ctx->inputs[5]), beta1 = scalar(ctx->inputs[6]);
    double beta2 = scalar(ctx->inputs[7]), eps = scalar(ctx->inputs[8]);
    const rill_tensor *grad = ctx->inputs[9];
    double lr_t = lr * sqrt(1 - b2p) / (1 - b1p);
    LOCK_ALL(3);
    rill_tensor *var = writable(ctx, ctx->vars[0]);
    rill_tensor *m = var ? writable(ctx, ctx->vars[1]) : NULL;
    rill_tensor *v = m ? writable(ctx, ctx->vars[2]) : NULL;
    if (var && m && v) {
        update_job j = {.kind = 2, .f64 = var->dtype != RILL_FLOAT, .w = var->buf->data,
                        .s1 = m->buf->data, .s2 = v->buf->data, .g = grad->buf->data,
                        .lr = lr_t, .c1 = beta1, .c2 = beta2, .eps = eps};
        run_update(ctx, &j, var->numel);
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(var));
    }
    UNLOCK_ALL(3);
}

#define K(op_, dt_, fn_)                                                                           \
    {                                                                                              \
        .op = op_, .device_type = "CPU", .dtype = dt_, .fn = fn_                                   \
    }
const rill__kernel_def rill__cpu_kernels_state[] = {
    K("VariableV2", RILL_DT_INVALID, rill__cpu_variable),
    K("Assign", RILL_DT_INVALID, rill__cpu_assign),
    K("AssignAdd", RILL_DT_INVALID, rill__cpu_assign_add),
    K("AssignSub", RILL_DT_INVALID, rill__cpu_assign_sub),
    K("ApplyGradientDescent", RILL_FLOAT, apply_gd_kernel),
    K("ApplyGradientDescent", RILL_DOUBLE, apply_gd_kernel),
    K("ApplyMomentum", RILL_FLOAT, apply_momentum_kernel),
    K("ApplyMomentum", RILL_DOUBLE, apply_momentum_kernel),
    K("ApplyAdam", RILL_FLOAT, apply_adam_kernel),
    K("ApplyAdam", RILL_DOUBLE, apply_adam_kernel),
    K("ApplyAdagrad", RILL_FLOAT, apply_adagrad_kernel),
    K("ApplyAdagrad", RILL_DOUBLE, apply_adagrad_kernel),
    {0},
};
