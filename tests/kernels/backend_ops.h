/* tests/kernels/backend_ops.h - runs one kernel on the CPU and on an OpenCL device and compares
 * the results (ggml's test-backend-ops, for rill).
 *
 * Header-only; include it (after nothing, it includes ../test.h) in the one file holding main().
 * A test builds the node under test with the ordinary builders on a graph, so the node carries
 * its attrs and inferred shapes, and hands the harness one host tensor per input:
 *
 *     rill_graph *g = rill_graph_new();
 *     rill_tensor *in[2] = {bo_random(RILL_FLOAT, dims, 2, -1, 1), ...};
 *     rill_output y = rill_add(g, bo_placeholder(g, in[0]), bo_placeholder(g, in[1]), NULL);
 *     bo_check(y.node, in, -1);  // -1: the default NMSE bound for the dtype
 *
 * bo_check then
 *   (a) runs the CPU kernel (rill__kernel_lookup(op, "CPU", dtype)) on the host tensors;
 *   (b) runs the OPENCL kernel on the first OpenCL device with every input copied to the device,
 *       except those the kernel def keeps in host memory (host_memory_inputs), through a kctx
 *       built by hand (outputs zeroed, recycle NULL, a local state slot, host_memory_outputs
 *       from the def);
 *   (c) copies the outputs back and compares them with the CPU's by normalised mean squared
 *       error, sum((cpu - cl)^2) / sum(cpu^2) (integers and bools: exactly); it also checks
 *       where each output lives: host memory when the def says so or the device cannot hold the
 *       dtype (int32 never lives on a GPU), device memory otherwise.
 * When the CPU kernel fails, the OpenCL kernel must fail with the same code (bo_check_error
 * checks a failure explicitly, with part of its message).
 *
 * Reference inputs (variables: the op's ref_inputs bits) are given the same way, as the
 * variable's initial host value (NULL: uninitialised); each backend gets its own rill__var whose
 * value lives on that backend's device (bo_var_new), and the values after the run are compared
 * like outputs.
 *
 * The first call that touches devices must come before anything else enumerates them:
 * bo_device() sets RILL_OPENCL_CPU_AS_GPU=1 first so that PoCL counts as a GPU. Without an
 * OpenCL device bo_check and bo_check_error compare nothing (they only check that the node was
 * built); the test runs what needs no device and then ends with bo_skip_without_device(), which
 * exits 77 (TEST_SKIP) with bo_device()'s reason. */
#ifndef RILL_TESTS_KERNELS_BACKEND_OPS_H
#define RILL_TESTS_KERNELS_BACKEND_OPS_H

#include "../test.h"

#include <rill/rill.h>

#include "device/device.h"
#include "kernels/kernel.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BO_MAX_IO 16

/* --- deterministic random numbers (splitmix64), so every run checks the same values --- */

static uint64_t bo__rng = 0x9E3779B97F4A7C15ull;

static inline void bo_seed(uint64_t s)
{
    bo__rng = s;
}

/* Uniform in [lo, hi). */
static inline double bo_uniform(double lo, double hi)
{
    uint64_t z = (bo__rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (hi - lo) * ((double)(z >> 11) * (1.0 / 9007199254740992.0));
}

/* --- host tensors --- */

static inline void bo__set(rill_tensor *t, int64_t i, double v)
{
    void *d = rill_tensor_data(t);
    switch (rill_tensor_dtype(t)) {
    case RILL_FLOAT:
        ((float *)d)[i] = (float)v;
        break;
    case RILL_DOUBLE:
        ((double *)d)[i] = v;
        break;
    case RILL_HALF:
        ((rill_half *)d)[i] = rill_half_from_float((float)v);
        break;
    case RILL_INT32:
        ((int32_t *)d)[i] = (int32_t)v;
        break;
    case RILL_INT64:
        ((int64_t *)d)[i] = (int64_t)v;
        break;
    case RILL_BOOL:
        ((uint8_t *)d)[i] = v != 0;
        break;
    default:
        break;
    }
}

/* A host tensor whose elements are v[i] converted to t (v may be NULL: zeros). Caller frees. */
__attribute__((noinline, unused)) static rill_tensor *bo_tensor(rill_dtype t, const int64_t *dims,
                                                                int rank, const double *v)
{
    rill_tensor *x = rill_tensor_new(t, dims, rank);
    if (!x) return NULL;
    int64_t n = rill_tensor_num_elements(x);
    for (int64_t i = 0; i < n; i++) bo__set(x, i, v ? v[i] : 0);
    return x;
}

/* A host tensor of uniform values in [lo, hi) (integer dtypes: whole numbers in [lo, hi]).
 * Caller frees. */
__attribute__((noinline, unused)) static rill_tensor *bo_random(rill_dtype t, const int64_t *dims,
                                                                int rank, double lo, double hi)
{
    rill_tensor *x = rill_tensor_new(t, dims, rank);
    if (!x) return NULL;
    int64_t n = rill_tensor_num_elements(x);
    bool integer = t == RILL_INT32 || t == RILL_INT64 || t == RILL_BOOL;
    for (int64_t i = 0; i < n; i++)
        bo__set(x, i, integer ? floor(bo_uniform(lo, hi + 1)) : bo_uniform(lo, hi));
    return x;
}

/* A placeholder with x's dtype and shape (x is only read). */
static inline rill_output bo_placeholder(rill_graph *g, const rill_tensor *x)
{
    return rill_placeholder(g, rill_tensor_dtype(x), *rill_tensor_shape(x), NULL);
}

/* A placeholder of dtype t and unknown shape: lets a test feed shapes that the op's build-time
 * shape check would reject, to reach the kernels' run-time checks. */
static inline rill_output bo_placeholder_any(rill_graph *g, rill_dtype t)
{
    return rill_placeholder(g, t, rill_shape_unknown(), NULL);
}

static inline void bo_free_all(rill_tensor **ts, int n)
{
    for (int i = 0; i < n; i++) {
        rill_tensor_free(ts[i]);
        ts[i] = NULL;
    }
}

/* --- devices --- */

/* Why bo_device() found no OpenCL device ("" until it has looked, or when it found one). */
static char bo__no_device[512];

/* The first OpenCL device (a rill GPU whose kernel key is "OPENCL"), or NULL with the reason in
 * bo__no_device. Sets RILL_OPENCL_CPU_AS_GPU=1 before the devices are enumerated. */
static __attribute__((unused)) rill__device *bo_device(void)
{
    static bool done;
    static rill__device *dev;
    if (done) return dev;
    done = true;
    setenv("RILL_OPENCL_CPU_AS_GPU", "1", 1);
#ifndef RILL_HAVE_OPENCL
    snprintf(bo__no_device, sizeof bo__no_device,
             "rill was built without OpenCL (CMake found no OpenCL headers and library)");
    return NULL;
#endif
    rill__device *const *devs = NULL;
    rill_status *s = rill_status_new();
    int n = rill__devices(NULL, &devs, s);
    if (n < 0)
        snprintf(bo__no_device, sizeof bo__no_device, "device enumeration failed: %s",
                 rill_status_message(s));
    for (int i = 0; i < n && !dev; i++)
        if (strcmp(devs[i]->kernel_key, "OPENCL") == 0) dev = devs[i];
    if (n >= 0 && !dev)
        snprintf(bo__no_device, sizeof bo__no_device,
                 "no OpenCL device (no OpenCL platform: Debian's pocl-opencl-icd gives one)");
    if (dev) printf("OpenCL device: %s (%s)\n", dev->name, dev->desc);
    rill_status_free(s);
    return dev;
}

/* Ends a test that found no OpenCL device: SKIPPED with the reason, exit 77 (1 when a check that
 * needed no device failed). Returns when there is a device. */
static __attribute__((unused)) void bo_skip_without_device(void)
{
    if (!bo_device()) TEST_SKIP("%s", bo__no_device);
}

/* A host copy of t (t itself, with a new reference, when it is already in host memory).
 * NULL (and a failed check) when the copy fails. */
static inline rill_tensor *bo_to_host(rill_tensor *t)
{
    if (!t) return NULL;
    if (rill__tensor_on_host(t)) return rill_tensor_ref(t);
    rill_status *s = rill_status_new();
    rill_tensor *h = rill__tensor_copy_to(t, rill__cpu_device(), s);
    if (!CHECK(h != NULL)) fprintf(stderr, "  copy to host: %s\n", rill_status_message(s));
    rill_status_free(s);
    return h;
}

/* --- variables --- */

/* A variable named name of dtype t and shape s whose value is a copy of value (NULL:
 * uninitialised) on dev (NULL or CPU:0: host memory). Free with bo_var_free. */
static inline rill__var *bo_var_new(const char *name, rill_dtype t, const rill_shape *s,
                                    const rill_tensor *value, rill__device *dev)
{
    rill__var *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    pthread_mutex_init(&v->mu, NULL);
    v->name = rill__strdup(name);
    v->dtype = t;
    v->shape = *s;
    if (value) {
        rill_status *st = rill_status_new();
        v->value = rill__tensor_copy_to(value, dev ? dev : rill__cpu_device(), st);
        if (!CHECK(v->value != NULL)) fprintf(stderr, "  %s\n", rill_status_message(st));
        rill_status_free(st);
    }
    return v;
}

static inline void bo_var_free(rill__var *v)
{
    if (!v) return;
    rill_tensor_free(v->value);
    rill__free(v->name);
    pthread_mutex_destroy(&v->mu);
    free(v);
}

/* --- running one kernel --- */

typedef struct bo_result {
    bool ran;                          /* a kernel was found and called */
    rill_code code;                    /* RILL_OK or the kernel's failure */
    char msg[512];                     /* the failure's message */
    int nout;                          /* the node's output count */
    rill_tensor *out[BO_MAX_IO];       /* host copies of the outputs (NULL: slot left empty) */
    bool out_on_host[BO_MAX_IO];       /* where the kernel put each output */
    rill_tensor *var_value[BO_MAX_IO]; /* host copies of reference inputs' values after the run */
} bo_result;

static inline void bo_result_clear(bo_result *r)
{
    for (int i = 0; i < BO_MAX_IO; i++) {
        rill_tensor_free(r->out[i]);
        rill_tensor_free(r->var_value[i]);
    }
    memset(r, 0, sizeof *r);
}

/* Runs n's kernel for device_type ("CPU" or "OPENCL") on dev with the host inputs copied where
 * the kernel def wants them; fills r (clear it with bo_result_clear). False when there is no
 * such kernel or the setup failed (a failed check says which). */
static __attribute__((unused)) bool bo_run(const rill_node *n, const char *device_type,
                                           rill__device *dev, rill_tensor *const *inputs,
                                           bo_result *r)
{
    memset(r, 0, sizeof *r);
    rill_dtype kt = rill__node_kernel_dtype(n);
    const rill__kernel_def *k = rill__kernel_lookup(n->op->name, device_type, kt);
    if (!CHECK(k != NULL)) {
        fprintf(stderr, "  no %s kernel for %s with dtype %s\n", device_type, n->op->name,
                rill_dtype_name(kt));
        return false;
    }
    if (!CHECK(n->ninputs <= BO_MAX_IO && n->noutputs <= BO_MAX_IO)) return false;
    bool on_device = dev && dev->ops && dev->ops->alloc;
    rill_tensor *in[BO_MAX_IO] = {0};
    rill__var *vars[BO_MAX_IO] = {0};
    rill_tensor *outs[BO_MAX_IO] = {0};
    void *state = NULL;
    bool ok = true;
    rill_status *s = rill_status_new();
    for (int i = 0; i < n->ninputs && ok; i++) {
        bool host = !on_device || (k->host_memory_inputs & (1u << i));
        if (n->op->ref_inputs & (1u << i)) {
            rill_output src = n->inputs[i];
            rill_dtype t = src.node->out_dtypes[src.index];
            rill_shape vs =
                inputs[i] ? *rill_tensor_shape(inputs[i]) : src.node->out_shapes[src.index];
            host = host || !rill__device_holds_dtype(dev, t);
            vars[i] = bo_var_new(src.node->name, t, &vs, inputs[i], host ? NULL : dev);
            ok = vars[i] != NULL;
            continue;
        }
        if (!CHECK(inputs[i] != NULL)) {
            fprintf(stderr, "  %s: input %d is NULL\n", n->op->name, i);
            ok = false;
            break;
        }
        in[i] = host ? rill_tensor_ref(inputs[i]) : rill__tensor_copy_to(inputs[i], dev, s);
        if (!CHECK(in[i] != NULL)) {
            fprintf(stderr, "  copy of input %d to %s: %s\n", i, dev->name, rill_status_message(s));
            ok = false;
        }
    }
    if (ok) {
        rill__kctx ctx = {
            .node = n,
            .inputs = in,
            .vars = vars,
            .var = NULL,
            .outputs = outs,
            .recycle = NULL,
            .state = &state,
            .status = NULL,
            .pool = NULL,
            .device = dev ? dev : rill__cpu_device(),
            .host_memory_outputs = k->host_memory_outputs,
        };
        k->fn(&ctx);
        r->ran = true;
        r->nout = n->noutputs;
        if (ctx.status) {
            r->code = rill_status_code(ctx.status);
            snprintf(r->msg, sizeof r->msg, "%s", rill_status_message(ctx.status));
            rill_status_free(ctx.status);
        }
        /* Surface errors of queued work before reading anything back. */
        if (on_device && dev->ops->sync && !dev->ops->sync(dev, s)) {
            CHECK(!"device sync failed");
            fprintf(stderr, "  %s on %s: %s\n", n->op->name, dev->name, rill_status_message(s));
            ok = false;
        }
        for (int i = 0; i < n->noutputs && ok; i++) {
            if (!outs[i]) continue;
            r->out_on_host[i] = rill__tensor_on_host(outs[i]);
            r->out[i] = bo_to_host(outs[i]);
        }
        for (int i = 0; i < n->ninputs && ok; i++)
            if (vars[i] && vars[i]->value) r->var_value[i] = bo_to_host(vars[i]->value);
        if (state && k->state_free) k->state_free(state);
    }
    for (int i = 0; i < BO_MAX_IO; i++) {
        rill_tensor_free(in[i]);
        rill_tensor_free(outs[i]);
        bo_var_free(vars[i]);
    }
    rill_status_free(s);
    return ok;
}

/* --- comparing --- */

/* The NMSE bound bo_check uses for a dtype when given a negative bound. */
static inline double bo_default_nmse(rill_dtype t)
{
    return t == RILL_HALF ? 1e-5 : 1e-7;
}

/* sum((ref - got)^2) / sum(ref^2) over equal-shaped tensors (sum((ref - got)^2) alone when ref
 * is all zeros). Positions where both are NaN, or both the same infinity, count as equal; a NaN
 * or infinity on one side only gives INFINITY. */
static __attribute__((unused)) double bo_nmse(const rill_tensor *ref, const rill_tensor *got)
{
    double num = 0, den = 0;
    int64_t n = rill_tensor_num_elements(ref);
    for (int64_t i = 0; i < n; i++) {
        double a = rill_tensor_get_double(ref, i), b = rill_tensor_get_double(got, i);
        if (isnan(a) || isnan(b)) {
            if (isnan(a) && isnan(b)) continue;
            return INFINITY;
        }
        if (isinf(a) || isinf(b)) {
            if (a == b) continue;
            return INFINITY;
        }
        num += (a - b) * (a - b);
        den += a * a;
    }
    return den > 0 ? num / den : num;
}

/* "op 'Add' (add_3) dtype float, inputs [2,3] [3]" for failure reports. */
static __attribute__((unused)) const char *
bo_describe(const rill_node *n, rill_tensor *const *inputs, char *buf, size_t len)
{
    size_t off = (size_t)snprintf(buf, len, "op '%s' (%s) dtype %s, inputs", n->op->name, n->name,
                                  rill_dtype_name(rill__node_kernel_dtype(n)));
    for (int i = 0; i < n->ninputs && off < len; i++) {
        char sh[96];
        if (inputs[i])
            off +=
                (size_t)snprintf(buf + off, len - off, " %s:%s", rill_dtype_name(inputs[i]->dtype),
                                 rill_shape_str(&inputs[i]->shape, sh, sizeof sh));
        else
            off += (size_t)snprintf(buf + off, len - off, " (none)");
    }
    return buf;
}

/* Compares one host tensor pair; what names it ("output 0", "variable of input 0"). */
static __attribute__((unused)) bool bo__compare(const char *desc, const char *what,
                                                const rill_tensor *ref, const rill_tensor *got,
                                                double max_nmse)
{
    if (!CHECK(got != NULL)) {
        fprintf(stderr, "  %s: OpenCL produced no %s\n", desc, what);
        return false;
    }
    if (!CHECK(ref->dtype == got->dtype)) {
        fprintf(stderr, "  %s: %s dtype %s on CPU, %s on OpenCL\n", desc, what,
                rill_dtype_name(ref->dtype), rill_dtype_name(got->dtype));
        return false;
    }
    if (!CHECK(rill_shape_equal(&ref->shape, &got->shape))) {
        char a[96], b[96];
        fprintf(stderr, "  %s: %s shape %s on CPU, %s on OpenCL\n", desc, what,
                rill_shape_str(&ref->shape, a, sizeof a), rill_shape_str(&got->shape, b, sizeof b));
        return false;
    }
    if (!rill_dtype_is_float(ref->dtype)) {
        int64_t n = ref->numel, bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (rill_tensor_get_double(ref, i) != rill_tensor_get_double(got, i)) bad = i;
        if (!CHECK(bad < 0)) {
            fprintf(stderr, "  %s: %s element %lld is %.17g on CPU, %.17g on OpenCL\n", desc, what,
                    (long long)bad, rill_tensor_get_double(ref, bad),
                    rill_tensor_get_double(got, bad));
            return false;
        }
        return true;
    }
    double e = bo_nmse(ref, got);
    if (!CHECK(e <= max_nmse)) {
        fprintf(stderr, "  %s: %s NMSE %.3g > %.3g", desc, what, e, max_nmse);
        for (int64_t i = 0; i < ref->numel; i++) {
            double a = rill_tensor_get_double(ref, i), b = rill_tensor_get_double(got, i);
            if (a != b && !(isnan(a) && isnan(b))) {
                fprintf(stderr, "; first difference at %lld: %.9g (CPU) vs %.9g (OpenCL)",
                        (long long)i, a, b);
                break;
            }
        }
        fprintf(stderr, "\n");
        return false;
    }
    return true;
}

/* Runs n on the CPU and on OpenCL with these host inputs and compares (see the file comment).
 * max_nmse < 0: bo_default_nmse of the node's dtype or the output's, whichever is looser. True when
 * they agree or there is no OpenCL device. */
static __attribute__((unused)) bool bo_check(const rill_node *n, rill_tensor *const *inputs,
                                             double max_nmse)
{
    if (!CHECK(n != NULL)) {
        fprintf(stderr, "  the node under test was not built\n");
        return false;
    }
    rill__device *dev = bo_device();
    if (!dev) return true;
    char desc[512];
    bo_describe(n, inputs, desc, sizeof desc);
    rill_dtype kt = rill__node_kernel_dtype(n);
    bo_result cpu, cl;
    bool ok = bo_run(n, "CPU", rill__cpu_device(), inputs, &cpu);
    ok = ok && bo_run(n, "OPENCL", dev, inputs, &cl);
    if (!ok) {
        fprintf(stderr, "  %s\n", desc);
        goto done;
    }
    if (cpu.code != RILL_OK || cl.code != RILL_OK) {
        if (!CHECK_EQ_INT(cl.code, cpu.code)) {
            fprintf(stderr, "  %s\n  CPU: %s\n  OpenCL: %s\n", desc, cpu.code ? cpu.msg : "ok",
                    cl.code ? cl.msg : "ok");
            ok = false;
        }
        goto done;
    }
    const rill__kernel_def *k = rill__kernel_lookup(n->op->name, "OPENCL", kt);
    for (int i = 0; i < n->noutputs; i++) {
        char what[64];
        snprintf(what, sizeof what, "output %d", i);
        if (!cpu.out[i]) continue; /* nothing to compare (VariableV2 uninitialised) */
        double lim = max_nmse >= 0 ? max_nmse
                                   : fmax(bo_default_nmse(kt), bo_default_nmse(cpu.out[i]->dtype));
        if (!bo__compare(desc, what, cpu.out[i], cl.out[i], lim)) {
            ok = false;
            continue;
        }
        bool want_host = (k->host_memory_outputs & (1u << i)) ||
                         !rill__device_holds_dtype(dev, cl.out[i]->dtype);
        if (!CHECK(cl.out_on_host[i] == want_host)) {
            fprintf(stderr, "  %s: %s is in %s memory, expected %s memory\n", desc, what,
                    cl.out_on_host[i] ? "host" : "device", want_host ? "host" : "device");
            ok = false;
        }
    }
    for (int i = 0; i < n->ninputs; i++) {
        if (!cpu.var_value[i]) continue;
        char what[64];
        snprintf(what, sizeof what, "variable of input %d", i);
        double lim = max_nmse >= 0
                         ? max_nmse
                         : fmax(bo_default_nmse(kt), bo_default_nmse(cpu.var_value[i]->dtype));
        ok = bo__compare(desc, what, cpu.var_value[i], cl.var_value[i], lim) && ok;
    }
done:
    bo_result_clear(&cpu);
    bo_result_clear(&cl);
    return ok;
}

/* Both backends must fail on these inputs with this code, OpenCL's message containing substr
 * (NULL: any message). True when they do or there is no OpenCL device. */
static __attribute__((unused)) bool bo_check_error(const rill_node *n, rill_tensor *const *inputs,
                                                   rill_code code, const char *substr)
{
    if (!CHECK(n != NULL)) {
        fprintf(stderr, "  the node under test was not built\n");
        return false;
    }
    rill__device *dev = bo_device();
    if (!dev) return true;
    char desc[512];
    bo_describe(n, inputs, desc, sizeof desc);
    bo_result cpu, cl;
    bool ok = bo_run(n, "CPU", rill__cpu_device(), inputs, &cpu);
    ok = ok && bo_run(n, "OPENCL", dev, inputs, &cl);
    if (ok) {
        bool c1 = CHECK_EQ_INT(cpu.code, code);
        bool c2 = CHECK_EQ_INT(cl.code, code);
        bool c3 = !substr || CHECK_STR_CONTAINS(cl.msg, substr);
        ok = c1 && c2 && c3;
        if (!ok)
            fprintf(stderr, "  %s\n  CPU: %s\n  OpenCL: %s\n", desc, cpu.code ? cpu.msg : "ok",
                    cl.code ? cl.msg : "ok");
    } else {
        fprintf(stderr, "  %s\n", desc);
    }
    bo_result_clear(&cpu);
    bo_result_clear(&cl);
    return ok;
}

#endif
