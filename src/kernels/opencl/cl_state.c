/* cl_state.c - OpenCL kernels for variables, assignments, optimizer updates and random ops.
 *
 * A variable placed on an OpenCL device keeps its value in that device's memory. The rules are
 * the CPU kernels' (src/kernels/cpu/cpu_state.c): an update takes the variable's lock and writes
 * in place when the variable's tensor is held by nobody else (rill__tensor_exclusive); otherwise
 * it first copies the value on the device (copy-on-write), so a value a reader or a fetch already
 * holds never changes under it. A value found in host memory (set before the variable moved) is
 * copied to the device the same way. Assign copies on the device when it may overwrite in place
 * and otherwise makes a new device tensor.
 *
 * Optimizer scalars (alpha, lr, momentum, the Adam betas, beta powers and epsilon) are host
 * memory inputs: the kernel reads them on the host and passes them as kernel arguments (Adam's
 * lr_t is computed on the host in double, as the CPU kernel does).
 *
 * int64 variables (the global step) are registered with the CPU kernels and every input and
 * output in host memory, as TensorFlow does with its int64 GPU kernels. int32 variables get no
 * OpenCL kernel at all, so placing one on a GPU fails as in TensorFlow.
 *
 * The random ops generate on the device with Philox-4x32-10: element i of step s is a function
 * of (the node's seed, s, i) only, so results do not depend on the work-group size. The node's
 * seed and step counter live in its per-session state (*ctx->state): each run of the node gets a
 * new step, and a seeded op repeats its sequence in every new session. Normals use Box-Muller;
 * TruncatedNormal redraws values beyond two standard deviations; RandomUniform keeps results in
 * [minval, maxval) after rounding to the output dtype. The numbers differ from the CPU stream.
 *
 * An update that succeeds on an exclusive variable allocates nothing from rill's heap (a warm
 * training step must not; see rill__cl_launch). */
#include "../cpu/cpu_kernels.h"
#include "cl_kernels.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

const char rill__cl_source_state[] =
    "#ifdef IS_DOUBLE\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    /* --- assignments and optimizer updates, in place on the variable's buffer --- */
    "__kernel void st_assign_add(__global T *w, __global const T *x, ACC sign, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ST(w, i, LD(w, i) + sign * LD(x, i));\n"
    "}\n"
    "__kernel void st_apply_gd(__global T *w, __global const T *delta, ACC alpha, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ST(w, i, LD(w, i) - alpha * LD(delta, i));\n"
    "}\n"
    "__kernel void st_apply_momentum(__global T *w, __global T *accum, __global const T *grad,\n"
    "                                ACC lr, ACC mom, int nesterov, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC g = LD(grad, i);\n"
    "    ACC a = LD(accum, i) * mom + g;\n"
    "    ST(accum, i, a);\n"
    "    ST(w, i, LD(w, i) - (nesterov ? g * lr + a * mom * lr : a * lr));\n"
    "}\n"
    "__kernel void st_apply_adagrad(__global T *w, __global T *accum, __global const T *grad,\n"
    "                               ACC lr, int update_slots, long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC g = LD(grad, i), a = LD(accum, i);\n"
    "    if (update_slots) {\n"
    "        a += g * g;\n"
    "        ST(accum, i, a);\n"
    "    }\n"
    "    ST(w, i, LD(w, i) - lr * g / sqrt(a));\n"
    "}\n"
    "__kernel void st_apply_adam(__global T *w, __global T *m, __global T *v,\n"
    "                            __global const T *grad, ACC lr_t, ACC beta1, ACC beta2, ACC eps,\n"
    "                            long n)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC g = LD(grad, i), mi = LD(m, i), vi = LD(v, i);\n"
    "    mi += (g - mi) * ((ACC)1 - beta1);\n"
    "    vi += (g * g - vi) * ((ACC)1 - beta2);\n"
    "    ST(m, i, mi);\n"
    "    ST(v, i, vi);\n"
    "    ST(w, i, LD(w, i) - lr_t * mi / (sqrt(vi) + eps));\n"
    "}\n"
    /* --- random numbers --- */
    /* Philox-4x32-10 (Salmon et al., SC'11): counter c, key k. */
    "uint4 st_philox(uint4 c, uint2 k)\n"
    "{\n"
    "    for (int r = 0; r < 10; r++) {\n"
    "        uint lo0 = 0xD2511F53u * c.x, hi0 = mul_hi(0xD2511F53u, c.x);\n"
    "        uint lo1 = 0xCD9E8D57u * c.z, hi1 = mul_hi(0xCD9E8D57u, c.z);\n"
    "        c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);\n"
    "        k += (uint2)(0x9E3779B9u, 0xBB67AE85u);\n"
    "    }\n"
    "    return c;\n"
    "}\n"
    /* The four words for element i, draw `attempt`. */
    "uint4 st_draw(long i, uint attempt, ulong key)\n"
    "{\n"
    "    return st_philox((uint4)((uint)i, (uint)((ulong)i >> 32), attempt, 0u),\n"
    "                     (uint2)((uint)key, (uint)(key >> 32)));\n"
    "}\n"
    /* Uniform in [0, 1): 24 random bits for float (and half), 53 for double. */
    "#ifdef IS_DOUBLE\n"
    "#define ST_U01(a, b) ((double)(((ulong)((a) >> 5) << 26) | (ulong)((b) >> 6)) * 0x1p-53)\n"
    "#define ST_TWO_PI 6.283185307179586\n"
    "#define ST_NPAIRS 1\n"
    "#else\n"
    "#define ST_U01(a, b) ((float)((a) >> 8) * 0x1p-24f)\n"
    "#define ST_TWO_PI 6.2831853f\n"
    "#define ST_NPAIRS 2\n"
    "#endif\n"
    /* Standard normals from draw x by Box-Muller: z[0..2*ST_NPAIRS). u1 is in (0, 1]. */
    "void st_normals(uint4 x, ACC *z)\n"
    "{\n"
    "    uint w[4] = {x.x, x.y, x.z, x.w};\n"
    "    for (int p = 0; p < ST_NPAIRS; p++) {\n"
    "#ifdef IS_DOUBLE\n"
    "        ACC u1 = (ACC)1 - ST_U01(w[0], w[1]), u2 = ST_U01(w[2], w[3]);\n"
    "#else\n"
    "        ACC u1 = (ACC)1 - ST_U01(w[2 * p], 0u), u2 = ST_U01(w[2 * p + 1], 0u);\n"
    "#endif\n"
    "        ACC r = sqrt((ACC)-2 * log(u1)), th = ST_TWO_PI * u2;\n"
    "        z[2 * p] = r * cos(th);\n"
    "        z[2 * p + 1] = r * sin(th);\n"
    "    }\n"
    "}\n"
    "__kernel void st_random_normal(__global T *y, long n, ulong key, ACC mean, ACC stddev)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC z[2 * ST_NPAIRS];\n"
    "    st_normals(st_draw(i, 0u, key), z);\n"
    "    ST(y, i, mean + stddev * z[0]);\n"
    "}\n"
    /* Redraws until |z| <= 2 (each draw gives 2 or 4 candidates; 64 draws all failing has
     * probability below 1e-80, and would give the mean). */
    "__kernel void st_truncated_normal(__global T *y, long n, ulong key, ACC mean, ACC stddev)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ACC z[2 * ST_NPAIRS];\n"
    "    for (uint a = 0; a < 64u; a++) {\n"
    "        st_normals(st_draw(i, a, key), z);\n"
    "        for (int j = 0; j < 2 * ST_NPAIRS; j++)\n"
    "            if (fabs(z[j]) <= (ACC)2) {\n"
    "                ST(y, i, mean + stddev * z[j]);\n"
    "                return;\n"
    "            }\n"
    "    }\n"
    "    ST(y, i, mean);\n"
    "}\n"
    "__kernel void st_random_uniform(__global T *y, long n, ulong key, ACC lo, ACC hi)\n"
    "{\n"
    "    long i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    uint4 x = st_draw(i, 0u, key);\n"
    "    ACC v = lo + (hi - lo) * ST_U01(x.x, x.y);\n"
    "    if (v >= hi && hi > lo) v = nextafter(hi, lo);\n"
    "#ifdef IS_HALF\n"
    /* Rounding to nearest half may reach hi: round down instead then. */
    "    vstore_half_rte(v, i, y);\n"
    "    if (vload_half(i, y) >= hi && hi > lo) vstore_half_rtn(v, i, y);\n"
    "#else\n"
    "    ST(y, i, v);\n"
    "#endif\n"
    "}\n";

/* --- enqueueing --- */


/* A scalar argument of the program's compute type (ACC): double for double, float otherwise. */
typedef struct st_acc {
    union {
        cl_float f;
        cl_double d;
    } v;
    size_t size;
} st_acc;

static st_acc acc_of(rill_dtype t, double x)
{
    st_acc a;
    if (t == RILL_DOUBLE) {
        a.v.d = x;
        a.size = sizeof(cl_double);
    } else {
        a.v.f = (cl_float)x;
        a.size = sizeof(cl_float);
    }
    return a;
}
#define ST_ACC(a) ((rill__cl_arg){(a).size, &(a).v})

/* Input i must be in ctx->device's memory: anything else is a placement bug upstream, reported
 * rather than handed to OpenCL as a bogus handle. */
static bool on_device(rill__kctx *ctx, int i)
{
    const rill_tensor *t = ctx->inputs[i];
    if (t->buf->dev == ctx->device) return true;
    rill__kctx_fail(ctx, RILL_INTERNAL, "%s: input %d is not in the memory of %s",
                    ctx->node->op->name, i, ctx->device->name);
    return false;
}

/* Input i must have the variable's number of elements (the build-time shape check may have
 * seen unknown dims; a short buffer would be read out of bounds on the device). */
static bool same_size(rill__kctx *ctx, const rill_tensor *var, int i, const char *what)
{
    const rill_tensor *t = ctx->inputs[i];
    if (t->numel == var->numel && t->dtype == var->dtype) return on_device(ctx, i);
    char a[96], b[96];
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "var and %s do not have the same shape%s %s", what,
                    rill_shape_str(&var->shape, a, sizeof a),
                    rill_shape_str(&t->shape, b, sizeof b));
    return false;
}

/* The value of scalar input i (host memory; a device tensor is read back). */
static bool host_scalar(rill__kctx *ctx, int i, double *out)
{
    const rill_tensor *t = ctx->inputs[i];
    if (t->numel < 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s: input %d must be a scalar, got %lld "
                        "elements",
                        ctx->node->op->name, i, (long long)t->numel);
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

/* --- variables --- */

/* v's value made writable on ctx->device: copied there when it is in another memory or held by
 * anyone else. Called with the variable's lock held. NULL (and ctx failed) when uninitialised
 * or the copy fails. */
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

static void variable_kernel(rill__kctx *ctx)
{
    /* As on the CPU, an uninitialised variable produces no value. */
    rill__var *v = ctx->var;
    pthread_mutex_lock(&v->mu);
    if (v->value && v->value->buf->dev != ctx->device) {
        rill_status *s = rill_status_new();
        rill_tensor *c = rill__tensor_copy_to(v->value, ctx->device, s);
        if (c) {
            rill_status_free(s);
            rill_tensor_free(v->value);
            v->value = c;
        } else {
            rill__kctx_fail_with(ctx, s);
        }
    }
    if (v->value && rill__kctx_ok(ctx)) rill__kctx_set_output(ctx, 0, rill_tensor_ref(v->value));
    pthread_mutex_unlock(&v->mu);
}

static void assign_kernel(rill__kctx *ctx)
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
    /* In place without allocating (Assign may run every step); a failure is asked again for
     * its reason, and a failed copy may be retried. */
    rill_status *s = NULL;
    bool ok;
    pthread_mutex_lock(&v->mu);
    if (v->value && v->value->buf->dev == ctx->device && v->value->dtype == x->dtype &&
        rill__tensor_exclusive(v->value)) {
        ok = rill__tensor_copy_into(v->value, x, NULL);
        if (!ok) ok = rill__tensor_copy_into(v->value, x, s = rill_status_new());
    } else {
        rill_tensor *c = rill__tensor_copy_to(x, ctx->device, s = rill_status_new());
        ok = c != NULL;
        if (ok) {
            rill_tensor_free(v->value);
            v->value = c;
        }
    }
    if (ok) rill__kctx_set_output(ctx, 0, rill_tensor_ref(v->value));
    pthread_mutex_unlock(&v->mu);
    if (ok)
        rill_status_free(s);
    else
        rill__kctx_fail_with(ctx, s);
}

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
    if (!on_device(ctx, 1)) return;
    pthread_mutex_lock(&v->mu);
    rill_tensor *t = writable(ctx, v);
    if (t && same_size(ctx, t, 1, "value")) {
        cl_mem wm = rill__cl_mem(t), xm = rill__cl_mem(x);
        st_acc sg = acc_of(t->dtype, sign);
        cl_long n = t->numel;
        rill__cl_arg args[] = {RILL__CL_ARG(wm), RILL__CL_ARG(xm), ST_ACC(sg), RILL__CL_ARG(n)};
        if (rill__cl_launch(ctx, "st_assign_add", t->dtype, args, 4, n))
            rill__kctx_set_output(ctx, 0, rill_tensor_ref(t));
    }
    pthread_mutex_unlock(&v->mu);
}

static void assign_add_kernel(rill__kctx *ctx)
{
    assign_add_sub(ctx, 1);
}

static void assign_sub_kernel(rill__kctx *ctx)
{
    assign_add_sub(ctx, -1);
}

/* --- optimizer updates --- */

/* Lock order: reference inputs in index order. */
#define LOCK_ALL(n)                                                                                \
    for (int li = 0; li < (n); li++) pthread_mutex_lock(&ctx->vars[li]->mu)
#define UNLOCK_ALL(n)                                                                              \
    for (int li = (n)-1; li >= 0; li--) pthread_mutex_unlock(&ctx->vars[li]->mu)

static void apply_gd_kernel(rill__kctx *ctx)
{
    double alpha;
    if (!host_scalar(ctx, 1, &alpha)) return;
    rill__var *v = ctx->vars[0];
    const rill_tensor *delta = ctx->inputs[2];
    pthread_mutex_lock(&v->mu);
    rill_tensor *t = writable(ctx, v);
    if (t && same_size(ctx, t, 2, "delta")) {
        cl_mem wm = rill__cl_mem(t), dm = rill__cl_mem(delta);
        st_acc a = acc_of(t->dtype, alpha);
        cl_long n = t->numel;
        rill__cl_arg args[] = {RILL__CL_ARG(wm), RILL__CL_ARG(dm), ST_ACC(a), RILL__CL_ARG(n)};
        if (rill__cl_launch(ctx, "st_apply_gd", t->dtype, args, 4, n))
            rill__kctx_set_output(ctx, 0, rill_tensor_ref(t));
    }
    pthread_mutex_unlock(&v->mu);
}

/* The updates of a variable with one slot (Momentum, Adagrad): inputs var, accum, lr (host),
 * grad; kernel `name` takes (w, accum, grad, lr, extra..., n). */
static void one_slot_update(rill__kctx *ctx, const char *name, double lr, const rill__cl_arg *extra,
                            int nextra)
{
    const rill_tensor *grad = ctx->inputs[3];
    LOCK_ALL(2);
    rill_tensor *var = writable(ctx, ctx->vars[0]);
    rill_tensor *acc = var ? writable(ctx, ctx->vars[1]) : NULL;
    if (var && acc && same_size(ctx, var, 3, "grad")) {
        if (acc->numel != var->numel) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "var and accum do not have the same shape");
        } else {
            cl_mem wm = rill__cl_mem(var), am = rill__cl_mem(acc), gm = rill__cl_mem(grad);
            st_acc l = acc_of(var->dtype, lr);
            cl_long n = var->numel;
            rill__cl_arg args[8] = {RILL__CL_ARG(wm), RILL__CL_ARG(am), RILL__CL_ARG(gm), ST_ACC(l)};
            for (int i = 0; i < nextra; i++) args[4 + i] = extra[i];
            args[4 + nextra] = RILL__CL_ARG(n);
            if (rill__cl_launch(ctx, name, var->dtype, args, 5 + nextra, n))
                rill__kctx_set_output(ctx, 0, rill_tensor_ref(var));
        }
    }
    UNLOCK_ALL(2);
}

static void apply_momentum_kernel(rill__kctx *ctx)
{
    double lr, mom;
    if (!host_scalar(ctx, 2, &lr) || !host_scalar(ctx, 4, &mom)) return;
    cl_int nesterov = rill__attr_bool(ctx->node, "use_nesterov", false);
    st_acc m = acc_of(rill__node_kernel_dtype(ctx->node), mom);
    rill__cl_arg extra[] = {ST_ACC(m), RILL__CL_ARG(nesterov)};
    one_slot_update(ctx, "st_apply_momentum", lr, extra, 2);
}

static void apply_adagrad_kernel(rill__kctx *ctx)
{
    double lr;
    if (!host_scalar(ctx, 2, &lr)) return;
    cl_int update_slots = rill__attr_bool(ctx->node, "update_slots", true);
    rill__cl_arg extra[] = {RILL__CL_ARG(update_slots)};
    one_slot_update(ctx, "st_apply_adagrad", lr, extra, 1);
}

static void apply_adam_kernel(rill__kctx *ctx)
{
    double b1p, b2p, lr, beta1, beta2, eps;
    if (!host_scalar(ctx, 3, &b1p) || !host_scalar(ctx, 4, &b2p) || !host_scalar(ctx, 5, &lr) ||
        !host_scalar(ctx, 6, &beta1) || !host_scalar(ctx, 7, &beta2) || !host_scalar(ctx, 8, &eps))
        return;
    const rill_tensor *grad = ctx->inputs[9];
    double lr_t = lr * sqrt(1 - b2p) / (1 - b1p);
    LOCK_ALL(3);
    rill_tensor *var = writable(ctx, ctx->vars[0]);
    rill_tensor *m = var ? writable(ctx, ctx->vars[1]) : NULL;
    rill_tensor *v = m ? writable(ctx, ctx->vars[2]) : NULL;
    if (var && m && v && same_size(ctx, var, 9, "grad")) {
        if (m->numel != var->numel || v->numel != var->numel) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "var, m and v do not have the same shape");
        } else {
            cl_mem wm = rill__cl_mem(var), mm = rill__cl_mem(m), vm = rill__cl_mem(v);
            cl_mem gm = rill__cl_mem(grad);
            rill_dtype t = var->dtype;
            st_acc l = acc_of(t, lr_t), b1 = acc_of(t, beta1), b2 = acc_of(t, beta2),
                   e = acc_of(t, eps);
            cl_long n = var->numel;
            rill__cl_arg args[] = {RILL__CL_ARG(wm), RILL__CL_ARG(mm), RILL__CL_ARG(vm), RILL__CL_ARG(gm), ST_ACC(l),
                             ST_ACC(b1), ST_ACC(b2), ST_ACC(e),  RILL__CL_ARG(n)};
            if (rill__cl_launch(ctx, "st_apply_adam", t, args, 9, n))
                rill__kctx_set_output(ctx, 0, rill_tensor_ref(var));
        }
    }
    UNLOCK_ALL(3);
}

/* --- random ops --- */

/* A random node's per-session state: its seed and how many times it has run. */
typedef struct cl_rng {
    uint64_t seed;
    atomic_uint_fast64_t step;
} cl_rng;

static void cl_rng_free(void *p)
{
    rill__free(p);
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The Philox key of this run: a bijection of the step for a given seed, so steps never repeat
 * a key. Seeded as rill__kctx_rng (the node's seeds, or the OS when unseeded). */
static uint64_t next_key(rill__kctx *ctx)
{
    if (!*ctx->state) {
        cl_rng *r = rill__malloc(sizeof *r);
        RILL_CHECK_ALLOC(r);
        const rill_node *n = ctx->node;
        r->seed = (n->seed || n->seed2)
                      ? (uint64_t)n->seed * 0x9e3779b97f4a7c15ull ^ (uint64_t)n->seed2
                      : rill__random_seed();
        atomic_init(&r->step, 0);
        *ctx->state = r;
    }
    cl_rng *r = *ctx->state;
    uint64_t step = atomic_fetch_add(&r->step, 1);
    return mix64(r->seed + step * 0x9E3779B97F4A7C15ull);
}

static void random_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    rill_dtype t = n->out_dtypes[0];
    rill_shape sh = n->out_shapes[0];
    if (n->ninputs > 0) { /* TF's form: the shape as input 0, in host memory */
        const rill_tensor *st = ctx->inputs[0];
        if (st->shape.rank != 1 || st->numel > RILL_MAX_DIMS) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "shape must be a vector of at most %d dims",
                            RILL_MAX_DIMS);
            return;
        }
        sh = (rill_shape){.rank = (int)st->numel};
        for (int i = 0; i < sh.rank; i++) {
            sh.dims[i] = rill_tensor_get_int64(st, i);
            if (sh.dims[i] < 0) {
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Dimension %d must be >= 0, got %lld",
                                i, (long long)sh.dims[i]);
                return;
            }
        }
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, t, &sh);
    if (!out) return;
    const char *op = n->op->name;
    const char *kname = strcmp(op, "RandomNormal") == 0      ? "st_random_normal"
                        : strcmp(op, "TruncatedNormal") == 0 ? "st_truncated_normal"
                                                             : "st_random_uniform";
    cl_ulong key = next_key(ctx);
    st_acc a = acc_of(t, rill__attr_float(n, "a", 0)), b = acc_of(t, rill__attr_float(n, "b", 1));
    cl_mem ym = rill__cl_mem(out);
    cl_long count = out->numel;
    rill__cl_arg args[] = {RILL__CL_ARG(ym), RILL__CL_ARG(count), RILL__CL_ARG(key), ST_ACC(a), ST_ACC(b)};
    rill__cl_launch(ctx, kname, t, args, 5, count);
}

/* Float types on the device; int64 with the CPU kernel in host memory (see the file comment). */
#define ST_K(OP, FN, T, HOST_IN)                                                                   \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = T, .fn = FN, .host_memory_inputs = HOST_IN     \
    }
#define ST_KERNEL_H(OP, FN, HOST_IN)                                                               \
    ST_K(OP, FN, RILL_FLOAT, HOST_IN), ST_K(OP, FN, RILL_DOUBLE, HOST_IN),                         \
        ST_K(OP, FN, RILL_HALF, HOST_IN)
#define ST_HOST_INT64(OP, FN)                                                                      \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = RILL_INT64, .fn = FN,                          \
        .host_memory_inputs = UINT32_MAX, .host_memory_outputs = UINT32_MAX                        \
    }
#define ST_RANDOM(OP, T)                                                                           \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = T, .fn = random_kernel,                        \
        .state_free = cl_rng_free, .host_memory_inputs = 1                                         \
    }
#define ST_RANDOM_ALL(OP)                                                                          \
    ST_RANDOM(OP, RILL_FLOAT), ST_RANDOM(OP, RILL_DOUBLE), ST_RANDOM(OP, RILL_HALF)

const rill__kernel_def rill__opencl_kernels_state[] = {
    ST_KERNEL_H("VariableV2", variable_kernel, 0),
    ST_KERNEL_H("Assign", assign_kernel, 0),
    ST_KERNEL_H("AssignAdd", assign_add_kernel, 0),
    ST_KERNEL_H("AssignSub", assign_sub_kernel, 0),
    ST_HOST_INT64("VariableV2", rill__cpu_variable),
    ST_HOST_INT64("Assign", rill__cpu_assign),
    ST_HOST_INT64("AssignAdd", rill__cpu_assign_add),
    ST_HOST_INT64("AssignSub", rill__cpu_assign_sub),
    /* var, alpha (host), delta */
    ST_KERNEL_H("ApplyGradientDescent", apply_gd_kernel, 1u << 1),
    /* var, accum, lr (host), grad, momentum (host) */
    ST_KERNEL_H("ApplyMomentum", apply_momentum_kernel, 1u << 2 | 1u << 4),
    /* var, accum, lr (host), grad */
    ST_KERNEL_H("ApplyAdagrad", apply_adagrad_kernel, 1u << 2),
    /* var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon (host), grad */
    ST_KERNEL_H("ApplyAdam", apply_adam_kernel, 0x3Fu << 3),
    ST_RANDOM_ALL("RandomNormal"),
    ST_RANDOM_ALL("TruncatedNormal"),
    ST_RANDOM_ALL("RandomUniform"),
    {0},
};
