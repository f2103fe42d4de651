/* test_elementwise_ops.c - the ops of src/graph/ops_elementwise.c: every unary and binary op on
 * every float dtype against a double reference (libm), the integer ops on every integer dtype
 * they have against exact references (TF's floor/truncate rules, wrapping), comparisons and
 * logical ops, Select and SelectV2, every gradient (and the helper ops' gradients, second
 * derivatives) against finite differences, Cast among the new dtypes, and TF's errors for a
 * wrong dtype, integer division by zero and negative integer powers. */
#include "op_check.h"

#include <string.h>

static const rill_dtype floats[] = {RILL_FLOAT, RILL_DOUBLE, RILL_HALF, RILL_BFLOAT16};

/* v[i] stored in dtype t, read back (what a reference must start from). */
static double stored(rill_dtype t, double v)
{
    rill_tensor *x = rill_tensor_new(t, NULL, 0);
    void *d = rill_tensor_data(x);
    switch (t) {
    case RILL_FLOAT:
        *(float *)d = (float)v;
        break;
    case RILL_DOUBLE:
        *(double *)d = v;
        break;
    case RILL_HALF:
        *(rill_half *)d = rill_half_from_float((float)v);
        break;
    case RILL_BFLOAT16:
        *(rill_bfloat16 *)d = rill_bfloat16_from_float((float)v);
        break;
    case RILL_INT8:
        *(int8_t *)d = (int8_t)v;
        break;
    case RILL_INT16:
        *(int16_t *)d = (int16_t)v;
        break;
    case RILL_INT32:
        *(int32_t *)d = (int32_t)v;
        break;
    case RILL_INT64:
        *(int64_t *)d = (int64_t)v;
        break;
    case RILL_UINT8:
        *(uint8_t *)d = (uint8_t)v;
        break;
    case RILL_UINT16:
        *(uint16_t *)d = (uint16_t)v;
        break;
    case RILL_BOOL:
        *(uint8_t *)d = v != 0;
        break;
    default:
        break;
    }
    double r = rill_tensor_get_double(x, 0);
    rill_tensor_free(x);
    return r;
}

static rill_output konst(rill_graph *g, rill_dtype t, const double *v, int64_t n)
{
    rill_tensor *x = rill_tensor_new(t, &n, 1);
    /* the bytes written directly (not through Cast, which is under test too) */
    void *d = rill_tensor_data(x);
    size_t w = rill_dtype_size(t);
    for (int64_t i = 0; i < n; i++) {
        rill_tensor *e = rill_tensor_new(t, NULL, 0);
        void *ed = rill_tensor_data(e);
        switch (t) {
        case RILL_FLOAT:
            *(float *)ed = (float)v[i];
            break;
        case RILL_DOUBLE:
            *(double *)ed = v[i];
            break;
        case RILL_HALF:
            *(rill_half *)ed = rill_half_from_float((float)v[i]);
            break;
        case RILL_BFLOAT16:
            *(rill_bfloat16 *)ed = rill_bfloat16_from_float((float)v[i]);
            break;
        case RILL_INT8:
            *(int8_t *)ed = (int8_t)v[i];
            break;
        case RILL_INT16:
            *(int16_t *)ed = (int16_t)v[i];
            break;
        case RILL_INT32:
            *(int32_t *)ed = (int32_t)v[i];
            break;
        case RILL_INT64:
            *(int64_t *)ed = (int64_t)v[i];
            break;
        case RILL_UINT8:
            *(uint8_t *)ed = (uint8_t)v[i];
            break;
        case RILL_UINT16:
            *(uint16_t *)ed = (uint16_t)v[i];
            break;
        case RILL_BOOL:
            *(uint8_t *)ed = v[i] != 0;
            break;
        default:
            break;
        }
        memcpy((char *)d + (size_t)i * w, ed, w);
        rill_tensor_free(e);
    }
    rill_output o = rill_const(g, x, NULL);
    rill_tensor_free(x);
    return o;
}

static rill_output make(rill_graph *g, const char *op, const rill_output *in, int n, double alpha)
{
    rill_op_builder *b = rill_op_builder_new(g, op, NULL);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, in[i]);
    if (alpha >= 0) rill_op_builder_set_float(b, "alpha", alpha);
    return (rill_output){rill_op_builder_finish(b), 0};
}

static double tol_of(rill_dtype t)
{
    return t == RILL_BFLOAT16 ? 2e-2 : t == RILL_HALF ? 4e-3 : t == RILL_FLOAT ? 1e-5 : 1e-12;
}

static bool close_to(double got, double want, rill_dtype t)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= tol_of(t) * (1 + fabs(want));
}

/* --- references --- */
#define SELU_S 1.0507009873554804934193349852946
#define SELU_A 1.6732632423543772848170429916717
static double r_abs(double x)
{
    return fabs(x);
}
static double r_sign(double x)
{
    return x > 0 ? 1 : x < 0 ? -1 : 0;
}
static double r_rsqrt(double x)
{
    return 1 / sqrt(x);
}
static double r_recip(double x)
{
    return 1 / x;
}
static double r_softplus(double x)
{
    return log1p(exp(x));
}
static double r_softsign(double x)
{
    return x / (1 + fabs(x));
}
static double r_elu(double x)
{
    return x < 0 ? expm1(x) : x;
}
static double r_selu(double x)
{
    return x < 0 ? SELU_S * SELU_A * expm1(x) : SELU_S * x;
}
static double r_leaky(double x)
{
    return x > 0 ? x : 0.2 * x;
}
static double r_relu6(double x)
{
    return x < 0 ? 0 : x > 6 ? 6 : x;
}
static double r_lgamma(double x)
{
    return lgamma(x);
}
static double r_digamma(double x) /* numeric derivative of lgamma, fine for a reference */
{
    double h = 1e-5;
    return (lgamma(x + h) - lgamma(x - h)) / (2 * h);
}

typedef struct un_case {
    const char *op;
    double (*ref)(double);
    double lo, hi;
    bool grad;
} un_case;

static const un_case unary[] = {
    {"Abs", r_abs, -3, 3, true},
    {"Sign", r_sign, -3, 3, true},
    {"Rsqrt", r_rsqrt, 0.5, 3, true},
    {"Reciprocal", r_recip, 0.5, 3, true},
    {"Inv", r_recip, 0.5, 3, true},
    {"Round", rint, -3, 3, false},
    {"Rint", rint, -3, 3, false},
    {"Floor", floor, -3, 3, false},
    {"Ceil", ceil, -3, 3, false},
    {"Log1p", log1p, -0.5, 3, true},
    {"Expm1", expm1, -2, 2, true},
    {"Softplus", r_softplus, -3, 3, true},
    {"Softsign", r_softsign, -3, 3, true},
    {"Elu", r_elu, -2, 2, true},
    {"Selu", r_selu, -2, 2, true},
    {"LeakyRelu", r_leaky, -2, 2, true},
    {"Relu6", r_relu6, -2, 8, true},
    {"Erf", erf, -2, 2, true},
    {"Erfc", erfc, -2, 2, true},
    {"Sin", sin, -3, 3, true},
    {"Cos", cos, -3, 3, true},
    {"Tan", tan, -1.2, 1.2, true},
    {"Asin", asin, -0.9, 0.9, true},
    {"Acos", acos, -0.9, 0.9, true},
    {"Atan", atan, -3, 3, true},
    {"Sinh", sinh, -2, 2, true},
    {"Cosh", cosh, -2, 2, true},
    {"Asinh", asinh, -3, 3, true},
    {"Acosh", acosh, 1.2, 4, true},
    {"Atanh", atanh, -0.9, 0.9, true},
    {"Lgamma", r_lgamma, 0.3, 5, true},
    {"Digamma", r_digamma, 0.3, 5, true},
};

static rill_output build_un(rill_graph *g, const rill_output *xs, void *ctx)
{
    const un_case *c = ctx;
    return make(g, c->op, xs, 1, strcmp(c->op, "LeakyRelu") == 0 ? 0.2 : -1);
}

static void test_unary(void)
{
    enum { N = 40 };
    for (size_t k = 0; k < sizeof unary / sizeof unary[0]; k++) {
        const un_case *c = &unary[k];
        double v[N];
        for (int i = 0; i < N; i++) v[i] = oc_uniform(c->lo, c->hi);
        v[0] = c->lo + 0.01;
        for (size_t d = 0; d < 4; d++) {
            rill_dtype t = floats[d];
            rill_graph *g = rill_graph_new();
            rill_output x = konst(g, t, v, N);
            rill_output y = build_un(g, &x, (void *)c);
            rill_tensor *out = CHECK(rill_graph_ok(g)) ? oc_eval(g, y) : NULL;
            if (!CHECK(out != NULL)) {
                fprintf(stderr, "  %s %s: %s\n", c->op, rill_dtype_name(t),
                        rill_status_message(rill_graph_status(g)));
            } else {
                CHECK_EQ_INT(rill_tensor_dtype(out), t);
                int bad = 0;
                for (int i = 0; i < N; i++) {
                    double want = c->ref(stored(t, v[i]));
                    /* half/bfloat16 results are rounded into their dtype */
                    double got = rill_tensor_get_double(out, i);
                    /* the Digamma reference is a difference quotient: 1e-10 */
                    rill_dtype tt =
                        strcmp(c->op, "Digamma") == 0 && t == RILL_DOUBLE ? RILL_FLOAT : t;
                    if (!close_to(got, want, tt) && bad++ < 2)
                        fprintf(stderr, "%s %s: x=%g got %.9g want %.9g\n", c->op,
                                rill_dtype_name(t), stored(t, v[i]), got, want);
                }
                CHECK_EQ_INT(bad, 0);
            }
            rill_tensor_free(out);
            rill_graph_free(g);
        }
        if (c->grad) {
            int64_t dims[] = {7};
            /* away from kinks: Abs, Relu6, LeakyRelu, Sign */
            double lo = c->lo, hi = c->hi;
            rill_tensor *xv = oc_random(dims, 1, lo, hi);
            double *xd = rill_tensor_data(xv);
            for (int i = 0; i < 7; i++)
                if (fabs(xd[i]) < 0.05 || fabs(xd[i] - 6) < 0.05) xd[i] += 0.2;
            char label[64];
            snprintf(label, sizeof label, "%s gradient", c->op);
            oc_grad_check(label, 1, &xv, build_un, (void *)c,
                          (oc_grad_opts){.rtol = 1e-5, .atol = 1e-6});
            rill_tensor_free(xv);
        }
    }
}

/* Second derivatives through the helper ops (their own gradients). */
static rill_output build_second(rill_graph *g, const rill_output *xs, void *ctx)
{
    rill_output y = build_un(g, xs, ctx);
    rill_output s = rill_sum(g, y, NULL, -1, false, NULL);
    rill_output dx;
    if (!rill_gradients(g, &s, 1, xs, 1, NULL, &dx)) return (rill_output){0};
    return dx;
}

static void test_second_derivatives(void)
{
    static const char *ops[] = {"Rsqrt", "Reciprocal", "Softplus", "Softsign", "Elu",
                                "Selu",  "Sin",        "Atan",     "Lgamma",   "Log1p"};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        const un_case *c = NULL;
        for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++)
            if (strcmp(unary[i].op, ops[k]) == 0) c = &unary[i];
        int64_t dims[] = {5};
        rill_tensor *xv = oc_random(dims, 1, c->lo, c->hi);
        double *xd = rill_tensor_data(xv);
        for (int i = 0; i < 5; i++)
            if (fabs(xd[i]) < 0.05) xd[i] += 0.2;
        char label[64];
        snprintf(label, sizeof label, "%s second derivative", c->op);
        oc_grad_check(label, 1, &xv, build_second, (void *)c,
                      (oc_grad_opts){.rtol = 1e-5, .atol = 1e-6});
        rill_tensor_free(xv);
    }
}

/* --- binary ops --- */
static double r_pow(double x, double y)
{
    return pow(x, y);
}
static double r_floordiv(double x, double y)
{
    return floor(x / y);
}
static double r_floormod(double x, double y)
{
    double r = fmod(x, y);
    return r != 0 && ((y < 0) != (r < 0)) ? r + y : r;
}
static double r_truncmod(double x, double y)
{
    return fmod(x, y);
}
static double r_div(double x, double y)
{
    return x / y;
}
static double r_sqdiff(double x, double y)
{
    return (x - y) * (x - y);
}
static double r_atan2(double x, double y)
{
    return atan2(x, y);
}
static double r_xdivy(double x, double y)
{
    return x == 0 ? 0 : x / y;
}
static double r_xlogy(double x, double y)
{
    return x == 0 ? 0 : x * log(y);
}
static double r_less(double x, double y)
{
    return x < y;
}
static double r_le(double x, double y)
{
    return x <= y;
}
static double r_gt(double x, double y)
{
    return x > y;
}
static double r_ge(double x, double y)
{
    return x >= y;
}
static double r_ne(double x, double y)
{
    return x != y;
}

typedef struct bin_case {
    const char *op;
    double (*ref)(double, double);
    double lo, hi, ylo, yhi;
    bool is_bool, grad;
} bin_case;

static const bin_case binary_cases[] = {
    {"Pow", r_pow, 0.2, 3, -2, 2, false, true},
    {"FloorDiv", r_floordiv, -5, 5, 0.5, 2, false, false},
    {"FloorMod", r_floormod, -5, 5, -2, -0.5, false, true},
    {"TruncateMod", r_truncmod, -5, 5, 0.5, 2, false, false},
    {"RealDiv", r_div, -3, 3, 0.5, 2, false, true},
    {"SquaredDifference", r_sqdiff, -3, 3, -3, 3, false, true},
    {"Atan2", r_atan2, -3, 3, 0.5, 3, false, true},
    {"Xdivy", r_xdivy, -3, 3, 0.5, 3, false, true},
    {"Xlogy", r_xlogy, -3, 3, 0.5, 3, false, true},
    {"Less", r_less, -2, 2, -2, 2, true, false},
    {"LessEqual", r_le, -2, 2, -2, 2, true, false},
    {"Greater", r_gt, -2, 2, -2, 2, true, false},
    {"GreaterEqual", r_ge, -2, 2, -2, 2, true, false},
    {"NotEqual", r_ne, -2, 2, -2, 2, true, false},
};

static rill_output build_bin(rill_graph *g, const rill_output *xs, void *ctx)
{
    const bin_case *c = ctx;
    return make(g, c->op, xs, 2, -1);
}

static void test_binary(void)
{
    /* x [3, 4] against y [4]: broadcasting */
    enum { R = 3, C = 4 };
    for (size_t k = 0; k < sizeof binary_cases / sizeof binary_cases[0]; k++) {
        const bin_case *c = &binary_cases[k];
        double xv[R * C], yv[C];
        for (int i = 0; i < R * C; i++) xv[i] = round(oc_uniform(c->lo, c->hi) * 4) / 4;
        for (int i = 0; i < C; i++) yv[i] = round(oc_uniform(c->ylo, c->yhi) * 4) / 4;
        xv[0] = 0; /* Xdivy, Xlogy at 0 */
        if (yv[0] == 0) yv[0] = c->yhi;
        for (size_t d = 0; d < 4; d++) {
            rill_dtype t = floats[d];
            rill_graph *g = rill_graph_new();
            rill_output in[2] = {konst(g, t, xv, R * C), konst(g, t, yv, C)};
            int64_t shape[] = {R, C};
            in[0] = rill_reshape(g, in[0], shape, 2, NULL);
            rill_output y = build_bin(g, in, (void *)c);
            rill_tensor *out = CHECK(rill_graph_ok(g)) ? oc_eval(g, y) : NULL;
            if (!CHECK(out != NULL)) {
                fprintf(stderr, "  %s %s: %s\n", c->op, rill_dtype_name(t),
                        rill_status_message(rill_graph_status(g)));
            } else {
                CHECK_EQ_INT(rill_tensor_dtype(out), c->is_bool ? RILL_BOOL : t);
                CHECK_EQ_INT(rill_tensor_num_elements(out), R * C);
                int bad = 0;
                for (int i = 0; i < R * C; i++) {
                    double want = c->ref(stored(t, xv[i]), stored(t, yv[i % C]));
                    double got = rill_tensor_get_double(out, i);
                    if (!close_to(got, want, c->is_bool ? RILL_DOUBLE : t) && bad++ < 2)
                        fprintf(stderr, "%s %s: %g, %g: got %.9g want %.9g\n", c->op,
                                rill_dtype_name(t), xv[i], yv[i % C], got, want);
                }
                CHECK_EQ_INT(bad, 0);
            }
            rill_tensor_free(out);
            rill_graph_free(g);
        }
        if (c->grad) {
            int64_t xd[] = {2, 3}, yd[] = {3};
            rill_tensor *v[2] = {oc_random(xd, 2, c->lo, c->hi), oc_random(yd, 1, c->ylo, c->yhi)};
            double *a = rill_tensor_data(v[0]);
            if (strcmp(c->op, "Xdivy") == 0 || strcmp(c->op, "Xlogy") == 0)
                for (int i = 0; i < 6; i++)
                    if (fabs(a[i]) < 0.05) a[i] = 0.3;
            char label[64];
            snprintf(label, sizeof label, "%s gradient (broadcast)", c->op);
            oc_grad_check(label, 2, v, build_bin, (void *)c,
                          (oc_grad_opts){.rtol = 1e-5, .atol = 1e-6});
            rill_tensor_free(v[0]);
            rill_tensor_free(v[1]);
        }
    }
}

/* Integer ops on every integer dtype: exact, TF's rounding rules. */
static int64_t floordiv_i(int64_t x, int64_t y)
{
    int64_t q = x / y;
    return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
}
static int64_t floormod_i(int64_t x, int64_t y)
{
    int64_t r = x % y;
    return (r != 0 && ((y < 0) != (r < 0))) ? r + y : r;
}

static void test_integer_ops(void)
{
    static const rill_dtype ints[] = {RILL_INT8,  RILL_INT16, RILL_INT32,
                                      RILL_INT64, RILL_UINT8, RILL_UINT16};
    const double xs[] = {7, -7, 5, -5, 0, 9, 100, -100};
    const double ys[] = {2, 2, -3, -3, 4, 9, 7, 7};
    for (size_t d = 0; d < 6; d++) {
        rill_dtype t = ints[d];
        bool uns = t == RILL_UINT8 || t == RILL_UINT16;
        double x[8], y[8];
        for (int i = 0; i < 8; i++) {
            x[i] = uns ? fabs(xs[i]) : xs[i];
            y[i] = uns ? fabs(ys[i]) : ys[i];
        }
        static const char *ops[] = {"FloorDiv", "FloorMod", "TruncateDiv", "Less",
                                    "NotEqual", "Add",      "Mul",         "Maximum",
                                    "Relu6",    "Abs",      "Equal"};
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
            if (strcmp(ops[k], "Abs") == 0 && uns) continue;
            rill_graph *g = rill_graph_new();
            rill_output in[2] = {konst(g, t, x, 8), konst(g, t, y, 8)};
            bool un = strcmp(ops[k], "Relu6") == 0 || strcmp(ops[k], "Abs") == 0;
            rill_output o = make(g, ops[k], in, un ? 1 : 2, -1);
            rill_tensor *out = CHECK(rill_graph_ok(g)) ? oc_eval(g, o) : NULL;
            if (!CHECK(out != NULL)) {
                fprintf(stderr, "  %s %s: %s\n", ops[k], rill_dtype_name(t),
                        rill_status_message(rill_graph_status(g)));
                rill_graph_free(g);
                continue;
            }
            for (int i = 0; i < 8; i++) {
                int64_t a = (int64_t)x[i], b = (int64_t)y[i], w;
                switch (k) {
                case 0:
                    w = floordiv_i(a, b);
                    break;
                case 1:
                    w = floormod_i(a, b);
                    break;
                case 2:
                    w = a / b;
                    break;
                case 3:
                    w = a < b;
                    break;
                case 4:
                    w = a != b;
                    break;
                case 5:
                    w = a + b;
                    break;
                case 6:
                    w = a * b;
                    break;
                case 7:
                    w = a > b ? a : b;
                    break;
                case 8:
                    w = a < 0 ? 0 : a > 6 ? 6 : a;
                    break;
                case 9:
                    w = a < 0 ? -a : a;
                    break;
                default:
                    w = a == b;
                    break;
                }
                double want = (k == 3 || k == 4 || k == 10) ? (double)w : stored(t, (double)w);
                if (!CHECK(rill_tensor_get_double(out, i) == want))
                    fprintf(stderr, "  %s %s: %lld, %lld: got %g want %g\n", ops[k],
                            rill_dtype_name(t), (long long)a, (long long)b,
                            rill_tensor_get_double(out, i), want);
            }
            rill_tensor_free(out);
            rill_graph_free(g);
        }
        /* division by zero */
        rill_graph *g = rill_graph_new();
        double z[2] = {1, 0};
        rill_output in[2] = {konst(g, t, z, 2), konst(g, t, z, 2)};
        rill_output o = make(g, "FloorDiv", in, 2, -1);
        rill_session *sess = oc_session(g);
        rill_status *s = rill_status_new();
        rill_tensor *out = NULL;
        rill_session_run(sess, NULL, NULL, 0, &o, &out, 1, NULL, 0, s);
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(rill_status_message(s), "Integer division by zero");
        rill_tensor_free(out);
        rill_status_free(s);
        rill_session_free(sess);
        rill_graph_free(g);
    }
    /* integer Pow: exact, and TF's error for a negative exponent */
    rill_graph *g = rill_graph_new();
    double b[3] = {3, -2, 7}, e[3] = {4, 3, 0}, en[1] = {-1};
    rill_output in[2] = {konst(g, RILL_INT32, b, 3), konst(g, RILL_INT32, e, 3)};
    rill_output p = make(g, "Pow", in, 2, -1);
    rill_tensor *out = oc_eval(g, p);
    CHECK(out && rill_tensor_get_double(out, 0) == 81 && rill_tensor_get_double(out, 1) == -8 &&
          rill_tensor_get_double(out, 2) == 1);
    rill_tensor_free(out);
    rill_output in2[2] = {konst(g, RILL_INT32, b, 1), konst(g, RILL_INT32, en, 1)};
    rill_output pn = make(g, "Pow", in2, 2, -1);
    rill_session *sess = oc_session(g);
    rill_status *s = rill_status_new();
    rill_session_run(sess, NULL, NULL, 0, &pn, &out, 1, NULL, 0, s);
    CHECK_STR_CONTAINS(rill_status_message(s),
                       "Integers to negative integer powers are not allowed");
    rill_status_free(s);
    rill_session_free(sess);
    rill_graph_free(g);
}

static void test_predicates_logical_select(void)
{
    rill_graph *g = rill_graph_new();
    double v[4] = {NAN, INFINITY, -1, 0};
    rill_output x = konst(g, RILL_FLOAT, v, 4);
    rill_output f[3] = {make(g, "IsNan", &x, 1, -1), make(g, "IsInf", &x, 1, -1),
                        make(g, "IsFinite", &x, 1, -1)};
    const double want[3][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 1}};
    for (int k = 0; k < 3; k++) {
        rill_tensor *t = oc_eval(g, f[k]);
        CHECK(t && rill_tensor_dtype(t) == RILL_BOOL);
        for (int i = 0; t && i < 4; i++) CHECK(rill_tensor_get_double(t, i) == want[k][i]);
        rill_tensor_free(t);
    }
    double a[4] = {1, 1, 0, 0}, b[4] = {1, 0, 1, 0};
    rill_output in[2] = {konst(g, RILL_BOOL, a, 4), konst(g, RILL_BOOL, b, 4)};
    rill_output l[3] = {make(g, "LogicalAnd", in, 2, -1), make(g, "LogicalOr", in, 2, -1),
                        make(g, "LogicalNot", in, 1, -1)};
    const double lw[3][4] = {{1, 0, 0, 0}, {1, 1, 1, 0}, {0, 0, 1, 1}};
    for (int k = 0; k < 3; k++) {
        rill_tensor *t = oc_eval(g, l[k]);
        for (int i = 0; t && i < 4; i++) CHECK(rill_tensor_get_double(t, i) == lw[k][i]);
        rill_tensor_free(t);
    }
    /* Select with a vector condition over rows; SelectV2 broadcasting a column condition */
    double c2[2] = {1, 0}, xv[6] = {1, 2, 3, 4, 5, 6}, yv[6] = {-1, -2, -3, -4, -5, -6};
    int64_t sh[] = {2, 3};
    rill_output sel_in[3] = {konst(g, RILL_BOOL, c2, 2),
                             rill_reshape(g, konst(g, RILL_INT32, xv, 6), sh, 2, NULL),
                             rill_reshape(g, konst(g, RILL_INT32, yv, 6), sh, 2, NULL)};
    rill_output sel = make(g, "Select", sel_in, 3, -1);
    rill_tensor *t = oc_eval(g, sel);
    const double sw[6] = {1, 2, 3, -4, -5, -6};
    for (int i = 0; t && i < 6; i++) CHECK(rill_tensor_get_double(t, i) == sw[i]);
    rill_tensor_free(t);
    int64_t col[] = {2, 1};
    rill_output v2_in[3] = {rill_reshape(g, sel_in[0], col, 2, NULL), sel_in[1],
                            konst(g, RILL_INT32, (double[]){0}, 1)};
    rill_output v2 = make(g, "SelectV2", v2_in, 3, -1);
    t = oc_eval(g, v2);
    const double vw[6] = {1, 2, 3, 0, 0, 0};
    for (int i = 0; t && i < 6; i++) CHECK(rill_tensor_get_double(t, i) == vw[i]);
    rill_tensor_free(t);
    CHECK(rill_graph_ok(g));
    rill_graph_free(g);
}

static rill_output build_select(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_output zero = rill_zeros_like(g, xs[0], NULL);
    rill_output in[3] = {make(g, "Greater", (rill_output[]){xs[0], zero}, 2, -1), xs[0], xs[1]};
    return rill_mul(g, make(g, "Select", in, 3, -1), xs[1], NULL);
}

static rill_output build_select_v2(rill_graph *g, const rill_output *xs, void *ctx)
{
    (void)ctx;
    rill_output zero = rill_zeros_like(g, xs[1], NULL);
    rill_output in[3] = {make(g, "Greater", (rill_output[]){xs[1], zero}, 2, -1), xs[0], xs[1]};
    return make(g, "SelectV2", in, 3, -1);
}

static void test_select_gradients(void)
{
    int64_t d[] = {2, 3}, r[] = {3};
    rill_tensor *v[2] = {oc_random(d, 2, -1, 1), oc_random(d, 2, -1, 1)};
    oc_grad_check("Select gradient", 2, v, build_select, NULL, (oc_grad_opts){0});
    rill_tensor_free(v[1]);
    v[1] = oc_random(r, 1, -1, 1);
    rill_tensor *w[2] = {oc_random(r, 1, -1, 1), oc_random(d, 2, -1, 1)};
    oc_grad_check("SelectV2 gradient (broadcast)", 2, w, build_select_v2, NULL, (oc_grad_opts){0});
    rill_tensor_free(v[0]);
    rill_tensor_free(v[1]);
    rill_tensor_free(w[0]);
    rill_tensor_free(w[1]);
}

static void test_cast_and_errors(void)
{
    rill_graph *g = rill_graph_new();
    double v[6] = {1.7, -1.7, 300, -129.5, 255.9, NAN};
    rill_output x = konst(g, RILL_FLOAT, v, 6);
    struct {
        rill_dtype to;
        double want[6];
    } cases[] = {
        {RILL_INT8, {1, -1, 44, 127, -1, 0}},     {RILL_UINT8, {1, 255, 44, 127, 255, 0}},
        {RILL_INT16, {1, -1, 300, -129, 255, 0}}, {RILL_UINT16, {1, 65535, 300, 65407, 255, 0}},
        {RILL_BOOL, {1, 1, 1, 1, 1, 1}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        rill_output c = rill_cast(g, x, cases[k].to, NULL);
        rill_tensor *t = oc_eval(g, c);
        if (!CHECK(t != NULL)) continue;
        CHECK_EQ_INT(rill_tensor_dtype(t), cases[k].to);
        for (int i = 0; i < 5; i++)
            if (!CHECK(rill_tensor_get_double(t, i) == cases[k].want[i]))
                fprintf(stderr, "  Cast to %s of %g: got %g\n", rill_dtype_name(cases[k].to), v[i],
                        rill_tensor_get_double(t, i));
        if (cases[k].to == RILL_BOOL) CHECK(rill_tensor_get_double(t, 5) == 1);
        rill_tensor_free(t);
    }
    CHECK(strcmp(rill_dtype_name(RILL_BFLOAT16), "bfloat16") == 0);
    CHECK_EQ_INT(rill_dtype_size(RILL_UINT16), 2);
    CHECK(stored(RILL_BFLOAT16, 1.00390625) == 1.0); /* ties to even */
    CHECK(isnan(stored(RILL_BFLOAT16, NAN)));
    rill_graph_free(g);

    g = rill_graph_new();
    double iv[2] = {1, 2};
    rill_output xi = konst(g, RILL_INT32, iv, 2);
    make(g, "Sin", &xi, 1, -1);
    oc_check_build_error("Sin of int32", g, RILL_INVALID_ARGUMENT,
                         "Value for attr 'T' of int32 is not in the list of allowed values: "
                         "bfloat16, half, float, double");
    rill_graph_free(g);
    g = rill_graph_new();
    rill_output in[2] = {konst(g, RILL_FLOAT, iv, 2), konst(g, RILL_INT32, iv, 2)};
    make(g, "Pow", in, 2, -1);
    CHECK(!rill_graph_ok(g));
    rill_graph_free(g);
    g = rill_graph_new();
    rill_output bin[2] = {konst(g, RILL_FLOAT, iv, 2), konst(g, RILL_FLOAT, iv, 2)};
    make(g, "LogicalAnd", bin, 2, -1);
    oc_check_build_error("LogicalAnd of float", g, RILL_INVALID_ARGUMENT, "allowed values: bool");
    rill_graph_free(g);
}

int main(void)
{
    test_unary();
    test_second_derivatives();
    test_binary();
    test_integer_ops();
    test_predicates_logical_select();
    test_select_gradients();
    test_cast_and_errors();
    TEST_MAIN_END();
}
