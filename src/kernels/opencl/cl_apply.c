/* cl_apply.c - OpenCL kernels of the dense optimizer updates of src/graph/ops_apply.c:
 * ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdadelta, ApplyFtrl, ApplyFtrlV2,
 * ApplyProximalAdagrad and ApplyProximalGradientDescent, float, double and half.
 *
 * The twins of src/kernels/cpu/cpu_apply.c, under cl_state.c's rules: the hyper-parameters are
 * host-memory inputs read on the host and passed as kernel arguments; the variable and its slots
 * are locked in input order and made writable on the device (copied there when they live
 * elsewhere or someone else holds the value); one work item updates one element of every slot.
 * Half computes in float (ACC) and rounds once per store. */
#include "../cpu/cpu_kernels.h"
#include "cl_kernels.h"

#include <string.h>

const char rill__cl_source_apply[] =
    "#ifdef IS_DOUBLE\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    "ACC ap_sign(ACC x) { return x > (ACC)0 ? (ACC)1 : x < (ACC)0 ? (ACC)-1 : (ACC)0; }\n"
    /* s: var and up to three slots; h: the hyper-parameters in input order. */
    "__kernel void ap_rmsprop(__global T *w, __global T *ms, __global T *mom,\n"
    "                         __global const T *g, ACC lr, ACC rho, ACC momentum, ACC eps, long "
    "n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC gi = LD(g, i), m = LD(ms, i);\n"
    "    m += (gi * gi - m) * ((ACC)1 - rho);\n"
    "    ACC mo = LD(mom, i) * momentum + (gi * lr) / sqrt(m + eps);\n"
    "    ST(ms, i, m);\n"
    "    ST(mom, i, mo);\n"
    "    ST(w, i, LD(w, i) - mo);\n"
    "}\n"
    "__kernel void ap_centered_rmsprop(__global T *w, __global T *mg, __global T *ms,\n"
    "                                  __global T *mom, __global const T *g, ACC lr, ACC rho,\n"
    "                                  ACC momentum, ACC eps, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC gi = LD(g, i), m = LD(ms, i), a = LD(mg, i);\n"
    "    m += (gi * gi - m) * ((ACC)1 - rho);\n"
    "    a += (gi - a) * ((ACC)1 - rho);\n"
    "    ACC mo = LD(mom, i) * momentum + (gi * lr) / sqrt((m - a * a) + eps);\n"
    "    ST(ms, i, m);\n"
    "    ST(mg, i, a);\n"
    "    ST(mom, i, mo);\n"
    "    ST(w, i, LD(w, i) - mo);\n"
    "}\n"
    "__kernel void ap_adadelta(__global T *w, __global T *acc, __global T *upd,\n"
    "                          __global const T *g, ACC lr, ACC rho, ACC eps, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC gi = LD(g, i), a = LD(acc, i) * rho + gi * gi * ((ACC)1 - rho), au = LD(upd, i);\n"
    "    ACC u = sqrt(au + eps) * ((ACC)1 / sqrt(a + eps)) * gi;\n"
    "    ST(acc, i, a);\n"
    "    ST(w, i, LD(w, i) - u * lr);\n"
    "    ST(upd, i, au * rho + u * u * ((ACC)1 - rho));\n"
    "}\n"
    /* One element of FTRL; V1 has no shrinkage (shrink 0: the gradient unchanged). */
    "void ap_ftrl_at(__global T *w, __global T *acc, __global T *lin, __global const T *g,\n"
    "                ACC lr, ACC l1, ACC l2, ACC shrink, ACC p, long i)\n"
    "{\n"
    "    ACC gi = LD(g, i), wi = LD(w, i), a = LD(acc, i), l = LD(lin, i);\n"
    "    ACC gs = shrink != (ACC)0 ? gi + (ACC)2 * shrink * wi : gi;\n"
    "    ACC na = a + gi * gi, an, ao;\n"
    "    if (p == (ACC)-0.5) { an = sqrt(na); ao = sqrt(a); }\n"
    "    else { an = pow(na, -p); ao = pow(a, -p); }\n"
    "    l += gs - (an - ao) / lr * wi;\n"
    "    ACC x = l1 * ap_sign(l) - l, y = an / lr + (ACC)2 * l2;\n"
    "    ST(lin, i, l);\n"
    "    ST(w, i, fabs(l) > l1 ? x / y : (ACC)0);\n"
    "    ST(acc, i, a + gi * gi);\n"
    "}\n"
    "__kernel void ap_ftrl(__global T *w, __global T *acc, __global T *lin, __global const T *g,\n"
    "                      ACC lr, ACC l1, ACC l2, ACC p, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) ap_ftrl_at(w, acc, lin, g, lr, l1, l2, (ACC)0, p, i);\n"
    "}\n"
    "__kernel void ap_ftrl_v2(__global T *w, __global T *acc, __global T *lin,\n"
    "                         __global const T *g, ACC lr, ACC l1, ACC l2, ACC shrink, ACC p,\n"
    "                         long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i < n) ap_ftrl_at(w, acc, lin, g, lr, l1, l2, shrink, p, i);\n"
    "}\n"
    "__kernel void ap_proximal_adagrad(__global T *w, __global T *acc, __global const T *g,\n"
    "                                  ACC lr, ACC l1, ACC l2, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC gi = LD(g, i), a = LD(acc, i) + gi * gi;\n"
    "    ACC rate = lr * ((ACC)1 / sqrt(a));\n"
    "    ACC prox = LD(w, i) - gi * rate, r;\n"
    "    if (l1 > (ACC)0) r = ap_sign(prox) * fmax(fabs(prox) - rate * l1, (ACC)0) /\n"
    "                        ((ACC)1 + l2 * rate);\n"
    "    else r = prox / ((ACC)1 + l2 * rate);\n"
    "    ST(acc, i, a);\n"
    "    ST(w, i, r);\n"
    "}\n"
    "__kernel void ap_proximal_gd(__global T *w, __global const T *g, ACC alpha, ACC l1, ACC l2,\n"
    "                             long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC prox = LD(w, i) - LD(g, i) * alpha, r;\n"
    "    if (l1 > (ACC)0) r = ap_sign(prox) * fmax(fabs(prox) - alpha * l1, (ACC)0) /\n"
    "                        ((ACC)1 + alpha * l2);\n"
    "    else r = prox / ((ACC)1 + alpha * l2);\n"
    "    ST(w, i, r);\n"
    "}\n";

/* A scalar argument of the program's compute type (ACC): double for double, float otherwise. */
typedef struct ap_acc {
    union {
        cl_float f;
        cl_double d;
    } v;
    size_t size;
} ap_acc;

static ap_acc acc_of(rill_dtype t, double x)
{
    ap_acc a;
    if (t == RILL_DOUBLE) {
        a.v.d = x;
        a.size = sizeof(cl_double);
    } else {
        a.v.f = (cl_float)x;
        a.size = sizeof(cl_float);
    }
    return a;
}

/* The value of scalar input i (host memory; a device tensor is read back). */
static bool host_scalar(rill__kctx *ctx, int i, const char *what, double *out)
{
    const rill_tensor *t = ctx->inputs[i];
    if (t->shape.rank != 0) {
        char a[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s is not a scalar: %s", what,
                        rill_shape_str(&t->shape, a, sizeof a));
        return false;
    }
    if (rill__tensor_on_host(t)) {
        *out = rill_tensor_get_double(t, 0);
        return true;
    }
    rill_status *s = rill_status_new();
    rill_tensor *h = rill__tensor_copy_to(t, rill__cpu_device(), s);
    if (!h) {
        rill__kctx_fail_with(ctx, s);
        return false;
    }
    *out = rill_tensor_get_double(h, 0);
    rill_tensor_free(h);
    rill_status_free(s);
    return true;
}

/* v's value made writable on ctx->device (see cl_state.c). Called with its lock held. */
static rill_tensor *writable(rill__kctx *ctx, rill__var *v)
{
    if (!v->value) {
        rill__kctx_fail(ctx, RILL_FAILED_PRECONDITION, "Attempting to use uninitialized value %s",
                        v->name);
        return NULL;
    }
    if (v->value->buf->dev != ctx->device || !rill__tensor_exclusive(v->value)) {
        rill_status *s = rill_status_new();
        rill_tensor *c = rill__tensor_copy_to(v->value, ctx->device, s);
        if (!c) {
            rill__kctx_fail_with(ctx, s);
            return NULL;
        }
        rill_status_free(s);
        rill_tensor_free(v->value);
        v->value = c;
    }
    return v->value;
}

static bool same_shape(rill__kctx *ctx, const rill_tensor *var, const rill_tensor *x,
                       const char *what)
{
    if (!rill_shape_equal(&var->shape, &x->shape) || x->dtype != var->dtype) {
        char a[96], b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "var and %s do not have the same shape%s %s",
                        what, rill_shape_str(&var->shape, a, sizeof a),
                        rill_shape_str(&x->shape, b, sizeof b));
        return false;
    }
    if (x->buf->dev == ctx->device) return true;
    rill__kctx_fail(ctx, RILL_INTERNAL, "%s: %s is not in the memory of %s", ctx->node->op->name,
                    what, ctx->device->name);
    return false;
}

/* Runs kernel kname over the variable: nslots slots after var (inputs 1..nslots), the gradient
 * input gi, the scalars at hi[0..nh) (host memory), passed after the tensors; then n. */
static void apply(rill__kctx *ctx, const char *kname, int nslots, int gi, const int *hi, int nh,
                  const char *const *names)
{
    double h[5];
    for (int k = 0; k < nh; k++)
        if (!host_scalar(ctx, hi[k], names[hi[k]], &h[k])) return;
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
        rill_dtype dt = t[0]->dtype;
        cl_mem m[5];
        ap_acc a[5];
        rill__cl_arg args[12];
        int na = 0;
        for (int k = 0; k <= nslots; k++) {
            m[k] = rill__cl_mem(t[k]);
            args[na++] = RILL__CL_ARG(m[k]);
        }
        m[nslots + 1] = rill__cl_mem(grad);
        args[na++] = RILL__CL_ARG(m[nslots + 1]);
        for (int k = 0; k < nh; k++) {
            a[k] = acc_of(dt, h[k]);
            args[na++] = (rill__cl_arg){a[k].size, &a[k].v};
        }
        cl_long n = t[0]->numel;
        args[na++] = RILL__CL_ARG(n);
        if (rill__cl_launch(ctx, kname, dt, args, na, n))
            rill__kctx_set_output(ctx, 0, rill_tensor_ref(t[0]));
    }
    while (nlocked-- > 0) pthread_mutex_unlock(&ctx->vars[nlocked]->mu);
}

static void rmsprop_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "ms",       "mom",     "lr",
                                        "rho", "momentum", "epsilon", "grad"};
    apply(ctx, "ap_rmsprop", 2, 7, (const int[]){3, 4, 5, 6}, 4, names);
}

static void centered_rmsprop_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "mg",       "ms",      "mom", "lr",
                                        "rho", "momentum", "epsilon", "grad"};
    apply(ctx, "ap_centered_rmsprop", 3, 8, (const int[]){4, 5, 6, 7}, 4, names);
}

static void adadelta_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "accum",   "accum_update", "lr",
                                        "rho", "epsilon", "grad"};
    apply(ctx, "ap_adadelta", 2, 6, (const int[]){3, 4, 5}, 3, names);
}

static void ftrl_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "accum", "linear", "grad",
                                        "lr",  "l1",    "l2",     "lr_power"};
    apply(ctx, "ap_ftrl", 2, 3, (const int[]){4, 5, 6, 7}, 4, names);
}

static void ftrl_v2_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "accum", "linear",       "grad",    "lr",
                                        "l1",  "l2",    "l2_shrinkage", "lr_power"};
    apply(ctx, "ap_ftrl_v2", 2, 3, (const int[]){4, 5, 6, 7, 8}, 5, names);
}

static void proximal_adagrad_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "accum", "lr", "l1", "l2", "grad"};
    apply(ctx, "ap_proximal_adagrad", 1, 5, (const int[]){2, 3, 4}, 3, names);
}

static void proximal_gd_kernel(rill__kctx *ctx)
{
    static const char *const names[] = {"var", "alpha", "l1", "l2", "delta"};
    apply(ctx, "ap_proximal_gd", 0, 4, (const int[]){1, 2, 3}, 3, names);
}

#define AP_K(OP, FN, T, HOST_IN)                                                                   \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = T, .fn = FN, .host_memory_inputs = HOST_IN     \
    }
#define AP_KERNEL(OP, FN, HOST_IN)                                                                 \
    AP_K(OP, FN, RILL_FLOAT, HOST_IN), AP_K(OP, FN, RILL_DOUBLE, HOST_IN),                         \
        AP_K(OP, FN, RILL_HALF, HOST_IN)

const rill__kernel_def rill__opencl_kernels_apply[] = {
    AP_KERNEL("ApplyRMSProp", rmsprop_kernel, 0x78u),
    AP_KERNEL("ApplyCenteredRMSProp", centered_rmsprop_kernel, 0xF0u),
    AP_KERNEL("ApplyAdadelta", adadelta_kernel, 0x38u),
    AP_KERNEL("ApplyFtrl", ftrl_kernel, 0xF0u),
    AP_KERNEL("ApplyFtrlV2", ftrl_v2_kernel, 0x1F0u),
    AP_KERNEL("ApplyProximalAdagrad", proximal_adagrad_kernel, 0x1Cu),
    AP_KERNEL("ApplyProximalGradientDescent", proximal_gd_kernel, 0x0Eu),
    {0},
};
