/* test_opencl_select.c - ArgMax, Equal and Dropout on OpenCL (src/kernels/opencl/cl_select.c)
 * against a double-precision reference computed here and against the CPU kernels.
 *
 * Through the backend harness (backend_ops.h), every case runs the node's CPU kernel and its
 * OpenCL kernel on the same host inputs:
 *   ArgMax  float, double and half over ranks 1 to 4, every axis (negative too), widths that
 *           straddle the work-group size, empty outputs, ties (values from a small set) and NaN
 *           and infinities: the OpenCL index equals the reference (the first NaN, else the first
 *           maximum) and the CPU's, and lives in device memory (int64).
 *   Equal   float, double, half and int64 with broadcasting in every direction, scalars, empty
 *           outputs, NaN and -0: equal to the reference and the CPU, the bool in host memory;
 *           int32 and bool run the CPU kernel in host memory as before.
 *   Dropout float, double and half, several keep_probs and shapes: y and mask are the CPU's
 *           bits for the same seed, y is x / keep_prob rounded once where the mask keeps and 0
 *           elsewhere, about keep_prob of the elements are kept; keep_prob 1 keeps all.
 * Every error (bad axis, empty axis, incompatible shapes, keep_prob outside (0, 1] or not one
 * value) comes back from OpenCL with the CPU's code and the CPU's exact text.
 *
 * A session then runs the three ops (and Dropout's gradient) under /gpu:0 for three steps: the
 * placement log must put them on GPU:0, and every fetch equals a /cpu:0 session's, bit for bit,
 * step after step (the same elements dropped on either device).
 *
 * Without an OpenCL device only the registrations are checked and the test reports itself
 * skipped (exit 77). */
#include "backend_ops.h"

#include <unistd.h>

static const rill_dtype flt[3] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF};

/* --- helpers --- */

/* Runs n on the CPU and on OpenCL; false (a failed check) when either could not run. */
static bool run_both(const rill_node *n, rill_tensor *const *in, bo_result *cpu, bo_result *cl)
{
    bool ok = bo_run(n, "CPU", rill__cpu_device(), in, cpu);
    return bo_run(n, "OPENCL", bo_device(), in, cl) && ok;
}

/* Both failed with code and the same message (the CPU's words). */
static bool same_error(const bo_result *cpu, const bo_result *cl, rill_code code, const char *text)
{
    bool ok = CHECK_EQ_INT(cpu->code, code);
    ok = CHECK_EQ_INT(cl->code, code) && ok;
    ok = CHECK_EQ_STR(cl->msg, cpu->msg) && ok;
    if (text) ok = CHECK_STR_CONTAINS(cl->msg, text) && ok;
    return ok;
}

/* Output i of both runs has the reference's dtype and shape and its values, exactly (NaN
 * matching NaN), and the OpenCL one lives in host memory exactly when want_host. */
static bool same_values(const bo_result *cpu, const bo_result *cl, int i, const rill_tensor *ref,
                        bool want_host, const char *what)
{
    const rill_tensor *outs[2] = {cpu->out[i], cl->out[i]};
    const char *names[2] = {"CPU", "OpenCL"};
    bool ok = true;
    for (int k = 0; k < 2; k++) {
        const rill_tensor *o = outs[k];
        if (!CHECK(o && o->dtype == ref->dtype && rill_shape_equal(&o->shape, &ref->shape))) {
            fprintf(stderr, "  %s: %s output %d missing or of the wrong dtype or shape\n", what,
                    names[k], i);
            ok = false;
            continue;
        }
        for (int64_t j = 0; j < ref->numel; j++) {
            double a = rill_tensor_get_double(ref, j), b = rill_tensor_get_double(o, j);
            if (a == b || (isnan(a) && isnan(b))) continue;
            CHECK(!"output equals the reference");
            fprintf(stderr, "  %s: %s output %d element %lld is %.17g, reference %.17g\n", what,
                    names[k], i, (long long)j, b, a);
            ok = false;
            break;
        }
    }
    if (!CHECK(cl->out_on_host[i] == want_host)) {
        fprintf(stderr, "  %s: OpenCL output %d in %s memory\n", what, i,
                cl->out_on_host[i] ? "host" : "device");
        ok = false;
    }
    return ok;
}

static bool same_bytes(const rill_tensor *a, const rill_tensor *b)
{
    return a && b && a->dtype == b->dtype && rill_shape_equal(&a->shape, &b->shape) &&
           memcmp(a->buf->data, b->buf->data, rill_tensor_nbytes(a)) == 0;
}

/* Values for ties and special cases: small integers, with NaN and infinities at rate `special`. */
static rill_tensor *tie_values(rill_dtype t, const int64_t *d, int rank, double special)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= d[i];
    double *v = calloc((size_t)n + 1, sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        double u = bo_uniform(0, 1);
        v[i] = u < special       ? NAN
               : u < 2 * special ? INFINITY
               : u < 3 * special ? -INFINITY
                                 : floor(bo_uniform(-3, 3));
    }
    rill_tensor *x = bo_tensor(t, d, rank, v);
    free(v);
    return x;
}

/* --- registrations --- */

static void test_registrations(void)
{
#ifndef RILL_HAVE_OPENCL
    return; /* no OpenCL backend built: nothing registered (main skips the test) */
#endif
    static const char *const ops[] = {"ArgMax", "Equal", "Dropout"};
    /* What the OpenCL kernels keep in host memory: Equal's bool, Dropout's keep_prob. */
    static const uint32_t host_in[] = {0, 0, 1u << 1}, host_out[] = {0, 1u << 0, 0};
    for (int i = 0; i < 3; i++)
        for (int t = 0; t < 4; t++) {
            rill_dtype dt = t < 3 ? flt[t] : RILL_INT64;
            if (t == 3 && i != 1) continue; /* int64: Equal only */
            const rill__kernel_def *k = rill__kernel_lookup(ops[i], "OPENCL", dt);
            const rill__kernel_def *c = rill__kernel_lookup(ops[i], "CPU", dt);
            if (!CHECK(k && c)) {
                fprintf(stderr, "  no kernel for %s %s\n", ops[i], rill_dtype_name(dt));
                continue;
            }
            /* A real OpenCL kernel: its own dtype entry and function, not the CPU code. */
            CHECK_EQ_INT(k->dtype, dt);
            CHECK(k->fn != c->fn);
            CHECK_EQ_INT(k->host_memory_inputs, host_in[i]);
            CHECK_EQ_INT(k->host_memory_outputs, host_out[i]);
            CHECK((k->state_free != NULL) == (i == 2));
        }
    /* int32 and bool never live in device memory: the CPU kernel, everything in host memory. */
    const rill_dtype host_types[] = {RILL_INT32, RILL_BOOL};
    for (int t = 0; t < 2; t++) {
        const rill__kernel_def *k = rill__kernel_lookup("Equal", "OPENCL", host_types[t]);
        const rill__kernel_def *c = rill__kernel_lookup("Equal", "CPU", host_types[t]);
        if (CHECK(k && c))
            CHECK(k->fn == c->fn && k->host_memory_inputs == UINT32_MAX &&
                  k->host_memory_outputs == UINT32_MAX);
    }
    const rill__kernel_def *k = rill__kernel_lookup("ArgMax", "OPENCL", RILL_INT32);
    CHECK(k && k->host_memory_inputs == UINT32_MAX);
}

/* --- ArgMax --- */

/* The reference: the first NaN along the axis, else the first maximum. */
static rill_tensor *argmax_ref(const rill_tensor *x, int axis)
{
    int r = x->shape.rank;
    if (axis < 0) axis += r;
    int64_t len = x->shape.dims[axis], outer = 1, inner = 1;
    rill_shape os = {.rank = 0};
    for (int d = 0; d < r; d++) {
        if (d < axis) outer *= x->shape.dims[d];
        if (d > axis) inner *= x->shape.dims[d];
        if (d != axis) os.dims[os.rank++] = x->shape.dims[d];
    }
    rill_tensor *out = rill_tensor_new(RILL_INT64, os.dims, os.rank);
    int64_t *o = rill_tensor_data(out);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t k = 0; k < inner; k++) {
            int64_t base = a * len * inner + k, best = -1;
            for (int64_t j = 0; j < len && best < 0; j++)
                if (isnan(rill_tensor_get_double(x, base + j * inner))) best = j;
            if (best < 0) {
                best = 0;
                for (int64_t j = 1; j < len; j++)
                    if (rill_tensor_get_double(x, base + j * inner) >
                        rill_tensor_get_double(x, base + best * inner))
                        best = j;
            }
            o[a * inner + k] = best;
        }
    return out;
}

static void test_argmax(void)
{
    static const struct {
        int rank;
        int64_t d[4];
    } shapes[] = {
        {1, {7}},       {1, {200}},       {2, {3, 5}},       {2, {65, 3}}, {2, {1, 1}},
        {3, {2, 3, 4}}, {3, {4, 1, 130}}, {4, {2, 3, 2, 5}}, {2, {0, 3}},  {3, {2, 0, 3}},
    };
    for (int t = 0; t < 3; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int axis = -shapes[s].rank; axis < shapes[s].rank; axis++)
                for (int special = 0; special < 2; special++) {
                    int64_t len = shapes[s].d[axis < 0 ? axis + shapes[s].rank : axis];
                    if (len == 0) continue; /* an error: test_argmax_errors */
                    rill_graph *g = rill_graph_new();
                    rill_tensor *in[1] = {
                        tie_values(flt[t], shapes[s].d, shapes[s].rank, special ? 0.05 : 0)};
                    rill_output y = rill_argmax(g, bo_placeholder(g, in[0]), axis, NULL);
                    bo_result cpu, cl;
                    if (CHECK(y.node) && run_both(y.node, in, &cpu, &cl) &&
                        CHECK_EQ_INT(cpu.code, RILL_OK) && CHECK_EQ_INT(cl.code, RILL_OK)) {
                        rill_tensor *ref = argmax_ref(in[0], axis);
                        char what[128];
                        snprintf(what, sizeof what, "ArgMax %s shape #%zu axis %d special %d",
                                 rill_dtype_name(flt[t]), s, axis, special);
                        same_values(&cpu, &cl, 0, ref, false, what);
                        rill_tensor_free(ref);
                    }
                    bo_result_clear(&cpu);
                    bo_result_clear(&cl);
                    bo_free_all(in, 1);
                    rill_graph_free(g);
                }
    /* A row of NaNs and infinities only, and the first NaN after a larger number. */
    double rows[3][4] = {{INFINITY, NAN, INFINITY, NAN},
                         {-INFINITY, -INFINITY, -INFINITY, -INFINITY},
                         {5, 1, NAN, 7}};
    int64_t d[2] = {3, 4};
    for (int t = 0; t < 3; t++) {
        rill_graph *g = rill_graph_new();
        rill_tensor *in[1] = {bo_tensor(flt[t], d, 2, &rows[0][0])};
        rill_output y = rill_argmax(g, bo_placeholder(g, in[0]), 1, NULL);
        bo_result cpu, cl;
        if (run_both(y.node, in, &cpu, &cl) && CHECK_EQ_INT(cl.code, RILL_OK)) {
            int64_t want[3] = {1, 0, 2};
            rill_tensor *ref = rill_tensor_from_data(RILL_INT64, (int64_t[]){3}, 1, want);
            same_values(&cpu, &cl, 0, ref, false, "ArgMax NaN rows");
            rill_tensor_free(ref);
        }
        bo_result_clear(&cpu);
        bo_result_clear(&cl);
        bo_free_all(in, 1);
        rill_graph_free(g);
    }
}

/* Shapes the build-time check never sees (unknown-shape placeholders) reach the kernels. */
static void test_argmax_errors(void)
{
    static const struct {
        int rank;
        int64_t d[2];
        int axis;
        const char *text;
    } cases[] = {
        {2, {2, 3}, 2, "Expected dimension in the range [-2, 2), but got 2"},
        {2, {2, 3}, -3, "Expected dimension in the range [-2, 2), but got -3"},
        {0, {0}, 0, "Expected dimension in the range [0, 0), but got 0"},
        {2, {2, 0}, 1, "Reduction axis 1 is empty in shape with 2 dimensions"},
        {2, {0, 3}, -2, "Reduction axis 0 is empty in shape with 2 dimensions"},
    };
    for (int t = 0; t < 3; t++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            rill_graph *g = rill_graph_new();
            rill_tensor *in[1] = {bo_random(flt[t], cases[c].d, cases[c].rank, -1, 1)};
            rill_output y = rill_argmax(g, bo_placeholder_any(g, flt[t]), cases[c].axis, NULL);
            bo_result cpu, cl;
            if (CHECK(y.node) && run_both(y.node, in, &cpu, &cl))
                same_error(&cpu, &cl, RILL_INVALID_ARGUMENT, cases[c].text);
            bo_result_clear(&cpu);
            bo_result_clear(&cl);
            bo_free_all(in, 1);
            rill_graph_free(g);
        }
}

/* --- Equal --- */

/* The reference: numpy broadcasting by index arithmetic, compared in double (int64 exactly). */
static rill_tensor *equal_ref(const rill_tensor *a, const rill_tensor *b)
{
    int r = a->shape.rank > b->shape.rank ? a->shape.rank : b->shape.rank;
    int64_t od[RILL_MAX_DIMS], ad[RILL_MAX_DIMS], bd[RILL_MAX_DIMS];
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->shape.rank), ib = i - (r - b->shape.rank);
        ad[i] = ia >= 0 ? a->shape.dims[ia] : 1;
        bd[i] = ib >= 0 ? b->shape.dims[ib] : 1;
        od[i] = ad[i] == 1 ? bd[i] : ad[i];
    }
    rill_tensor *out = rill_tensor_new(RILL_BOOL, od, r);
    uint8_t *o = rill_tensor_data(out);
    for (int64_t i = 0; i < out->numel; i++) {
        int64_t rem = i, ia = 0, ib = 0, sa = 1, sb = 1;
        for (int d = r - 1; d >= 0; d--) {
            int64_t k = rem % od[d];
            rem /= od[d];
            ia += (ad[d] == 1 ? 0 : k) * sa;
            ib += (bd[d] == 1 ? 0 : k) * sb;
            sa *= ad[d];
            sb *= bd[d];
        }
        if (a->dtype == RILL_INT64)
            o[i] = ((const int64_t *)a->buf->data)[ia] == ((const int64_t *)b->buf->data)[ib];
        else
            o[i] = rill_tensor_get_double(a, ia) == rill_tensor_get_double(b, ib);
    }
    return out;
}

/* Values from a small set so that many pairs are equal: -1, 0, -0, 1 and, for float types, NaN;
 * int64 adds large magnitudes (below 2^53, where the CPU's double comparison is exact). */
static rill_tensor *equal_values(rill_dtype t, const int64_t *d, int rank)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= d[i];
    static const double set[] = {-1, 0, -0.0, 1, NAN, 1099511627776.0, -1099511627777.0};
    int count = t == RILL_INT64 ? 7 : 5;
    double *v = calloc((size_t)n + 1, sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        int k = (int)floor(bo_uniform(0, count));
        v[i] = t == RILL_INT64 && k == 4 ? 2 : set[k];
    }
    rill_tensor *x;
    if (t == RILL_INT64) { /* exactly, without bo__set's double detour for the large ones */
        x = rill_tensor_new(t, d, rank);
        for (int64_t i = 0; i < n; i++) ((int64_t *)rill_tensor_data(x))[i] = (int64_t)v[i];
    } else {
        x = bo_tensor(t, d, rank, v);
    }
    free(v);
    return x;
}

static void test_equal(void)
{
    static const struct {
        int ra, rb;
        int64_t a[3], b[3];
    } cases[] = {
        {2, 2, {3, 4}, {3, 4}},
        {2, 1, {2, 3}, {3}},
        {1, 2, {3}, {2, 3}},
        {3, 2, {2, 1, 4}, {3, 1}},
        {0, 1, {0}, {5}},
        {1, 0, {5}, {0}},
        {0, 0, {0}, {0}},
        {2, 2, {4, 1}, {1, 5}},
        {2, 1, {0, 3}, {3}},
        {2, 1, {300, 70}, {70}},
        {3, 3, {2, 3, 1}, {1, 3, 5}},
        {1, 1, {130}, {1}},
    };
    const rill_dtype types[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF,
                                RILL_INT64, RILL_INT32,  RILL_BOOL};
    for (int t = 0; t < 6; t++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            rill_dtype dt = types[t];
            rill_graph *g = rill_graph_new();
            bool host = dt == RILL_INT32 || dt == RILL_BOOL; /* 0 and 1 */
            rill_tensor *in[2] = {host ? bo_random(dt, cases[c].a, cases[c].ra, 0, 1)
                                       : equal_values(dt, cases[c].a, cases[c].ra),
                                  host ? bo_random(dt, cases[c].b, cases[c].rb, 0, 1)
                                       : equal_values(dt, cases[c].b, cases[c].rb)};
            rill_output y = rill_equal(g, bo_placeholder(g, in[0]), bo_placeholder(g, in[1]), NULL);
            bo_result cpu, cl;
            if (CHECK(y.node) && run_both(y.node, in, &cpu, &cl) &&
                CHECK_EQ_INT(cpu.code, RILL_OK) && CHECK_EQ_INT(cl.code, RILL_OK)) {
                rill_tensor *ref = equal_ref(in[0], in[1]);
                char what[128];
                snprintf(what, sizeof what, "Equal %s case #%zu", rill_dtype_name(dt), c);
                same_values(&cpu, &cl, 0, ref, true, what);
                rill_tensor_free(ref);
            }
            bo_result_clear(&cpu);
            bo_result_clear(&cl);
            bo_free_all(in, 2);
            rill_graph_free(g);
        }
    /* Incompatible shapes at run time: the CPU's words. */
    for (int t = 0; t < 4; t++) {
        rill_dtype dt = types[t];
        int64_t a[2] = {2, 3}, b[1] = {4};
        rill_graph *g = rill_graph_new();
        rill_tensor *in[2] = {equal_values(dt, a, 2), equal_values(dt, b, 1)};
        rill_output y = rill_equal(g, bo_placeholder_any(g, dt), bo_placeholder_any(g, dt), NULL);
        bo_result cpu, cl;
        if (CHECK(y.node) && run_both(y.node, in, &cpu, &cl))
            same_error(&cpu, &cl, RILL_INVALID_ARGUMENT, "Incompatible shapes: [2,3] vs. [4]");
        bo_result_clear(&cpu);
        bo_result_clear(&cl);
        bo_free_all(in, 2);
        rill_graph_free(g);
    }
}

/* --- Dropout --- */

/* One value of dtype t, as a double (v rounded to t). */
static double round_to(rill_dtype t, double v)
{
    rill_tensor *x = bo_tensor(t, NULL, 0, &v);
    double r = rill_tensor_get_double(x, 0);
    rill_tensor_free(x);
    return r;
}

static void test_dropout(void)
{
    static const struct {
        int rank;
        int64_t d[2];
    } shapes[] = {{1, {4000}}, {2, {3, 129}}, {0, {0}}, {1, {0}}, {2, {1, 1}}};
    static const double keeps[] = {0.5, 0.3, 0.9, 1.0};
    for (int t = 0; t < 3; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int k = 0; k < 4; k++) {
                rill_dtype dt = flt[t];
                double keep = round_to(dt, keeps[k]); /* keep_prob has x's dtype */
                rill_graph *g = rill_graph_new();
                rill_graph_set_seed(g, 1234 + (int64_t)s);
                rill_tensor *in[2] = {bo_random(dt, shapes[s].d, shapes[s].rank, -4, 4),
                                      bo_tensor(dt, NULL, 0, &keep)};
                rill_output y =
                    rill_dropout(g, bo_placeholder(g, in[0]), bo_placeholder(g, in[1]), 7, NULL);
                char what[128];
                snprintf(what, sizeof what, "Dropout %s shape #%zu keep_prob %g",
                         rill_dtype_name(dt), s, keep);
                bo_result cpu, cl;
                if (!CHECK(y.node) || !run_both(y.node, in, &cpu, &cl) ||
                    !CHECK_EQ_INT(cpu.code, RILL_OK) || !CHECK_EQ_INT(cl.code, RILL_OK))
                    goto next;
                /* The CPU's bits: the same elements dropped, the same values. */
                for (int o = 0; o < 2; o++)
                    if (!CHECK(same_bytes(cpu.out[o], cl.out[o])))
                        fprintf(stderr, "  %s: output %d differs from the CPU's\n", what, o);
                /* The reference: x / keep rounded once where kept, 0 elsewhere; mask 1 / keep
                 * (rounded to the dtype) or 0. */
                const rill_tensor *x = in[0], *yo = cl.out[0], *m = cl.out[1];
                if (!CHECK(yo && m && !cl.out_on_host[0] && !cl.out_on_host[1])) goto next;
                double one = round_to(dt, 1.0 / keep);
                int64_t n = x->numel, kept = 0, bad = 0;
                for (int64_t i = 0; i < n; i++) {
                    double xi = rill_tensor_get_double(x, i), mi = rill_tensor_get_double(m, i);
                    double yi = rill_tensor_get_double(yo, i);
                    bool on = mi != 0;
                    kept += on;
                    if ((on && mi != one) || yi != (on ? round_to(dt, xi / keep) : 0)) bad++;
                }
                if (!CHECK_EQ_INT(bad, 0))
                    fprintf(stderr, "  %s: %lld bad\n", what, (long long)bad);
                if (keep == 1.0) {
                    CHECK_EQ_INT(kept, n);
                } else if (n >= 1000) { /* keep_prob of them, within 5 standard deviations */
                    double sd = sqrt(keep * (1 - keep) / (double)n);
                    if (!CHECK(fabs((double)kept / (double)n - keep) < 5 * sd))
                        fprintf(stderr, "  %s: kept %lld of %lld\n", what, (long long)kept,
                                (long long)n);
                }
            next:
                bo_result_clear(&cpu);
                bo_result_clear(&cl);
                bo_free_all(in, 2);
                rill_graph_free(g);
            }
}

static void test_dropout_errors(void)
{
    const double bad[] = {0, 1.5, -0.5, NAN};
    const char *text[] = {"got 0", "got 1.5", "got -0.5", "got nan"};
    for (int t = 0; t < 3; t++) {
        rill_dtype dt = flt[t];
        int64_t d[1] = {10};
        for (int b = 0; b < 5; b++) {
            rill_graph *g = rill_graph_new();
            rill_tensor *in[2] = {bo_random(dt, d, 1, -1, 1), NULL};
            rill_output kp;
            if (b < 4) {
                in[1] = bo_tensor(dt, NULL, 0, &bad[b]);
                kp = bo_placeholder(g, in[1]);
            } else { /* two values, past the build-time check on an unknown shape */
                double two[2] = {0.7, 0.5};
                in[1] = bo_tensor(dt, (int64_t[]){2}, 1, two);
                kp = bo_placeholder_any(g, dt);
            }
            rill_output y = rill_dropout(g, bo_placeholder(g, in[0]), kp, 0, NULL);
            bo_result cpu, cl;
            if (CHECK(y.node) && run_both(y.node, in, &cpu, &cl))
                same_error(&cpu, &cl, RILL_INVALID_ARGUMENT,
                           "keep_prob must be a scalar tensor or a float in the range (0, 1], got");
            if (b < 4) CHECK_STR_CONTAINS(cl.msg, text[b]);
            bo_result_clear(&cpu);
            bo_result_clear(&cl);
            bo_free_all(in, 2);
            rill_graph_free(g);
        }
    }
}

/* --- through a session --- */

typedef struct capture {
    FILE *tmp;
    int saved_fd;
} capture;

static capture capture_begin(void)
{
    capture c = {tmpfile(), -1};
    if (!c.tmp) return c;
    fflush(stdout);
    c.saved_fd = dup(fileno(stdout));
    dup2(fileno(c.tmp), fileno(stdout));
    return c;
}

/* Restores stdout and returns what was written to it (caller frees; never NULL). */
static char *capture_end(capture c)
{
    if (!c.tmp) return strdup("");
    fflush(stdout);
    dup2(c.saved_fd, fileno(stdout));
    close(c.saved_fd);
    long n = ftell(c.tmp);
    char *text = malloc(n > 0 ? (size_t)n + 1 : 1);
    rewind(c.tmp);
    size_t got = n > 0 ? fread(text, 1, (size_t)n, c.tmp) : 0;
    text[got] = 0;
    fclose(c.tmp);
    return text;
}

enum { S_ROWS = 16, S_COLS = 10, S_STEPS = 3, S_FETCHES = 6 };

/* Runs ArgMax, Equal (int64 and broadcast float), Dropout and Dropout's gradient for S_STEPS
 * steps with every node under device spec dev (soft placement: the placeholders and the rest go
 * where they can). out[step][fetch] are host copies (caller frees); *log the placement log
 * (caller frees). False (a failed check) when the session fails. */
static bool run_session(const char *dev, rill_tensor *out[S_STEPS][S_FETCHES], char **log)
{
    rill_graph *g = rill_graph_new();
    rill_graph_set_seed(g, 17);
    rill_graph_push_device(g, dev);
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(S_ROWS, S_COLS), "x");
    rill_output lab = rill_placeholder(g, RILL_INT64, rill_shape_vector(S_ROWS), "labels");
    rill_output row = rill_placeholder(g, RILL_FLOAT, rill_shape_vector(S_COLS), "row");
    rill_output kp = rill_placeholder(g, RILL_FLOAT, rill_shape_scalar(), "keep_prob");
    rill_output w = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(S_ROWS, S_COLS), "w");
    rill_output am = rill_argmax(g, x, 1, "am");
    rill_output eq = rill_equal(g, am, lab, "eq");
    rill_output eqf = rill_equal(g, x, row, "eqf");
    rill_output drop = rill_dropout(g, x, kp, 3, "drop");
    rill_output l = rill_sum(g, rill_mul(g, drop, w, NULL), NULL, -1, false, "l");
    rill_output dx = {NULL, 0};
    CHECK(rill_gradients(g, &l, 1, &x, 1, NULL, &dx));
    rill_graph_pop_device(g);

    bo_seed(99);
    int64_t xd[2] = {S_ROWS, S_COLS}, rd[1] = {S_COLS}, ld[1] = {S_ROWS};
    rill_tensor *xv = tie_values(RILL_FLOAT, xd, 2, 0.02), *rv = tie_values(RILL_FLOAT, rd, 1, 0);
    rill_tensor *lv = bo_random(RILL_INT64, ld, 1, 0, S_COLS - 1);
    rill_tensor *wv = bo_random(RILL_FLOAT, xd, 2, -2, 2);
    rill_tensor *kv = rill_tensor_scalar_float(0.6f);
    rill_output feeds[] = {x, lab, row, kp, w};
    rill_tensor *fv[] = {xv, lv, rv, kv, wv};
    rill_output fetches[S_FETCHES] = {am, eq, eqf, drop, {drop.node, 1}, dx};

    rill_status *s = rill_status_new();
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_allow_soft_placement(o, true);
    rill_session_options_set_log_device_placement(o, true);
    bool ok = CHECK(rill_graph_ok(g));
    capture c = capture_begin();
    rill_session *sess = ok ? rill_session_new(g, o, s) : NULL;
    ok = ok && sess;
    for (int step = 0; ok && step < S_STEPS; step++) {
        ok = rill_session_run(sess, feeds, fv, 5, fetches, out[step], S_FETCHES, NULL, 0, s) ==
             RILL_OK;
        if (step == 0) *log = capture_end(c);
    }
    if (!sess || !ok) {
        if (!sess) *log = capture_end(c);
        CHECK(!"the session ran");
        fprintf(stderr, "  %s: %s\n", dev, rill_status_message(s));
    }
    rill_session_free(sess);
    rill_session_options_free(o);
    rill_status_free(s);
    rill_tensor *fed[] = {xv, rv, lv, wv, kv};
    bo_free_all(fed, 5);
    rill_graph_free(g);
    return ok;
}

/* The device the placement log gives node ("<node>: (<Op>): <device>"), "" when none. */
static const char *placed_on(const char *log, const char *node, char *buf, size_t len)
{
    char head[128];
    snprintf(head, sizeof head, "%s: (", node);
    buf[0] = 0;
    for (const char *p = log; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, head, strlen(head)) == 0) {
            const char *dev = strstr(p, "): ");
            const char *end = strchr(p, '\n');
            if (!dev) break;
            dev += 3;
            size_t n = end ? (size_t)(end - dev) : strlen(dev);
            snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), dev);
            break;
        }
    return buf;
}

static void test_session(void)
{
    rill_tensor *cpu[S_STEPS][S_FETCHES] = {{0}}, *gpu[S_STEPS][S_FETCHES] = {{0}};
    char *cpu_log = NULL, *gpu_log = NULL;
    static const char *const names[S_FETCHES] = {"ArgMax",      "Equal (int64)",  "Equal (float)",
                                                 "Dropout's y", "Dropout's mask", "dx"};
    if (run_session("/cpu:0", cpu, &cpu_log) && run_session("/gpu:0", gpu, &gpu_log)) {
        static const char *const nodes[] = {"am", "eq", "eqf", "drop"};
        for (int i = 0; i < 4; i++) {
            char where[256];
            placed_on(gpu_log, nodes[i], where, sizeof where);
            if (!CHECK(strstr(where, "device:GPU:0") != NULL))
                fprintf(stderr, "  %s placed on '%s'\n", nodes[i], where);
        }
        for (int step = 0; step < S_STEPS; step++)
            for (int f = 0; f < S_FETCHES; f++)
                if (!CHECK(same_bytes(cpu[step][f], gpu[step][f])))
                    fprintf(stderr, "  step %d: %s on /gpu:0 differs from /cpu:0\n", step,
                            names[f]);
        /* A new mask each step (the generator goes on), the same one on either device. */
        CHECK(!same_bytes(gpu[0][4], gpu[1][4]));
    }
    for (int step = 0; step < S_STEPS; step++) bo_free_all(cpu[step], S_FETCHES);
    for (int step = 0; step < S_STEPS; step++) bo_free_all(gpu[step], S_FETCHES);
    free(cpu_log);
    free(gpu_log);
}

int main(void)
{
    if (!getenv("POCL_CACHE_DIR")) setenv("POCL_CACHE_DIR", "/tmp/rill-pocl-cache", 0);
    bo_seed(20240612);
    test_registrations();
    bo_skip_without_device(); /* exits 77 without one */
    test_argmax();
    test_argmax_errors();
    test_equal();
    test_dropout();
    test_dropout_errors();
    test_session();
    TEST_MAIN_END();
}
