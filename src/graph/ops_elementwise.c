/* ops_elementwise.c - the element-wise math ops, table-driven: unary maps (Abs, Sign, Rsqrt,
 * Floor, Erf, Sin, Lgamma, IsNan, LogicalNot, Elu, ...), broadcasting binary ops (Pow, FloorDiv,
 * FloorMod, Atan2, Xlogy, the comparisons, LogicalAnd/Or, ...), Select and SelectV2, and the
 * gradient helper ops TF has (EluGrad, SeluGrad, Relu6Grad, LeakyReluGrad, SoftplusGrad,
 * SoftsignGrad, RsqrtGrad, ReciprocalGrad), which have gradients of their own so that second
 * derivatives work.
 *
 * Each op is one line of EW_OPS: its name, its kind (unary, binary, helper), the dtypes it takes
 * (TF's CPU registrations), whether it yields bool, and its gradient (NULL: none, the gradient
 * stops, as TF's comparisons, Floor, Round, FloorDiv). The kernels are in
 * kernels/cpu/cpu_elementwise.c and kernels/opencl/cl_elementwise.c. */
#include "graph_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define B(t) (1u << (t))
#define FL   (B(RILL_BFLOAT16) | B(RILL_HALF) | B(RILL_FLOAT) | B(RILL_DOUBLE))
#define SI   (B(RILL_INT8) | B(RILL_INT16) | B(RILL_INT32) | B(RILL_INT64))
#define UI   (B(RILL_UINT8) | B(RILL_UINT16))
#define IN   (SI | UI)
#define NUM  (FL | IN)
#define I32  (B(RILL_INT32) | B(RILL_INT64))
#define BO   B(RILL_BOOL)

enum { K_UN, K_BIN, K_HELP };

/* --- gradient helpers --- */

static rill_output nd(rill_node *n, int i)
{
    return (rill_output){n, i};
}

static rill_output op1(rill_graph *g, const char *op, rill_output x)
{
    return (rill_output){rill__node_create(g, op, NULL, &x, 1, NULL, 0), 0};
}

static rill_output op2(rill_graph *g, const char *op, rill_output x, rill_output y)
{
    rill_output in[] = {x, y};
    return (rill_output){rill__node_create(g, op, NULL, in, 2, NULL, 0), 0};
}

static rill_output op3(rill_graph *g, const char *op, rill_output a, rill_output b, rill_output c)
{
    rill_output in[] = {a, b, c};
    return (rill_output){rill__node_create(g, op, NULL, in, 3, NULL, 0), 0};
}

static rill_output k(rill_graph *g, rill_output like, double v)
{
    return rill__scalar_like(g, rill_output_dtype(like), v);
}

static rill_output mul(rill_graph *g, rill_output a, rill_output b)
{
    return rill_mul(g, a, b, NULL);
}

/* dy summed to the shape of x (nothing added when static shapes already agree). */
static rill_output sum_to(rill_graph *g, rill_output dy, rill_output x)
{
    if (!dy.node) return dy;
    rill_shape xs = rill_output_shape(x), ds = rill_output_shape(dy);
    if (rill_shape_is_fully_defined(&xs) && rill_shape_equal(&xs, &ds)) return dy;
    rill_output in[] = {dy, rill_shape_of(g, x, NULL)};
    return (rill_output){rill__node_create(g, "SumToShape", NULL, in, 2, NULL, 0), 0};
}

#define X0       (n->inputs[0])
#define X1       (n->inputs[1])
#define Y0       nd(n, 0)
#define G        (dy[0])
#define GRAD(nm) static void nm(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)

GRAD(abs_grad)
{
    dx[0] = mul(g, G, op1(g, "Sign", X0));
}
GRAD(zeros_grad)
{
    dx[0] = rill_zeros_like(g, X0, NULL);
    (void)dy;
}
GRAD(rsqrt_grad)
{
    dx[0] = op2(g, "RsqrtGrad", Y0, G);
}
GRAD(reciprocal_grad)
{
    dx[0] = op2(g, "ReciprocalGrad", Y0, G);
}
GRAD(log1p_grad)
{
    dx[0] = rill_div(g, G, rill_add(g, k(g, X0, 1), X0, NULL), NULL);
}
GRAD(expm1_grad)
{
    dx[0] = mul(g, G, rill_exp(g, X0, NULL));
}
GRAD(softplus_grad)
{
    dx[0] = op2(g, "SoftplusGrad", G, X0);
}
GRAD(softsign_grad)
{
    dx[0] = op2(g, "SoftsignGrad", G, X0);
}
GRAD(elu_grad)
{
    dx[0] = op2(g, "EluGrad", G, Y0);
}
GRAD(selu_grad)
{
    dx[0] = op2(g, "SeluGrad", G, Y0);
}
GRAD(relu6_grad)
{
    dx[0] = op2(g, "Relu6Grad", G, X0);
}
GRAD(leaky_relu_grad)
{
    rill_output in[] = {G, X0};
    rill__attr a[] = {RILL__A_FLOAT("alpha", rill__attr_float(n, "alpha", 0.2))};
    dx[0] = (rill_output){rill__node_create(g, "LeakyReluGrad", NULL, in, 2, a, 1), 0};
}
/* d erf(x) = 2/sqrt(pi) e^(-x^2) */
static rill_output erf_d(rill_graph *g, rill_output x, double sign)
{
    return mul(g, k(g, x, sign * 1.1283791670955126),
               rill_exp(g, rill_neg(g, rill_square(g, x, NULL), NULL), NULL));
}
GRAD(erf_grad)
{
    dx[0] = mul(g, G, erf_d(g, X0, 1));
}
GRAD(erfc_grad)
{
    dx[0] = mul(g, G, erf_d(g, X0, -1));
}
GRAD(sin_grad)
{
    dx[0] = mul(g, G, op1(g, "Cos", X0));
}
GRAD(cos_grad)
{
    dx[0] = rill_neg(g, mul(g, G, op1(g, "Sin", X0)), NULL);
}
GRAD(tan_grad)
{
    dx[0] = rill_div(g, G, rill_square(g, op1(g, "Cos", X0), NULL), NULL);
}
/* 1 - x^2 */
static rill_output one_minus_sq(rill_graph *g, rill_output x)
{
    return rill_sub(g, k(g, x, 1), rill_square(g, x, NULL), NULL);
}
GRAD(asin_grad)
{
    dx[0] = mul(g, G, op1(g, "Rsqrt", one_minus_sq(g, X0)));
}
GRAD(acos_grad)
{
    dx[0] = rill_neg(g, mul(g, G, op1(g, "Rsqrt", one_minus_sq(g, X0))), NULL);
}
GRAD(atan_grad)
{
    dx[0] = rill_div(g, G, rill_add(g, k(g, X0, 1), rill_square(g, X0, NULL), NULL), NULL);
}
GRAD(sinh_grad)
{
    dx[0] = mul(g, G, op1(g, "Cosh", X0));
}
GRAD(cosh_grad)
{
    dx[0] = mul(g, G, op1(g, "Sinh", X0));
}
GRAD(asinh_grad)
{
    dx[0] = rill_div(g, G, op1(g, "Cosh", Y0), NULL);
}
GRAD(acosh_grad)
{
    dx[0] = rill_div(g, G, op1(g, "Sinh", Y0), NULL);
}
GRAD(atanh_grad)
{
    dx[0] = rill_div(g, G, one_minus_sq(g, X0), NULL);
}
GRAD(lgamma_grad)
{
    dx[0] = mul(g, G, op1(g, "Digamma", X0));
}
GRAD(digamma_grad)
{
    dx[0] = mul(g, G, op2(g, "Polygamma", k(g, X0, 1), X0));
}
/* Polygamma(a, x): d/dx = Polygamma(a + 1, x); a takes none (TF's _PolygammaGrad too). */
GRAD(polygamma_grad)
{
    dx[1] = sum_to(g, mul(g, G, op2(g, "Polygamma", rill_add(g, X0, k(g, X0, 1), NULL), X1)), X1);
}

/* Pow(x, y) = z: dx = dy * y * x^(y-1); dy = dy * z * log(x) where x > 0, else 0. */
GRAD(pow_grad)
{
    rill_output x = X0, y = X1, z = Y0;
    rill_output p = op2(g, "Pow", x, rill_sub(g, y, k(g, y, 1), NULL));
    dx[0] = sum_to(g, mul(g, G, mul(g, y, p)), x);
    rill_output pos = op2(g, "Greater", x, rill_zeros_like(g, x, NULL));
    rill_output safe = op3(g, "SelectV2", pos, x, rill_ones_like(g, x, NULL));
    rill_output lg = op3(g, "SelectV2", pos, rill_log(g, safe, NULL), rill_zeros_like(g, x, NULL));
    dx[1] = sum_to(g, mul(g, G, mul(g, z, lg)), y);
}
/* x - floor(x / y) * y: dx = dy, dy = dy * -floor_div(x, y) (TF's _FloorModGrad). */
GRAD(floor_mod_grad)
{
    dx[0] = sum_to(g, G, X0);
    dx[1] = sum_to(g, mul(g, G, rill_neg(g, op2(g, "FloorDiv", X0, X1), NULL)), X1);
}
GRAD(real_div_grad)
{
    rill_output x = X0, y = X1;
    dx[0] = sum_to(g, op2(g, "RealDiv", G, y), x);
    rill_output t = op2(g, "RealDiv", mul(g, G, x), rill_square(g, y, NULL));
    dx[1] = sum_to(g, rill_neg(g, t, NULL), y);
}
GRAD(squared_difference_grad)
{
    rill_output d = mul(g, k(g, X0, 2), mul(g, G, rill_sub(g, X0, X1, NULL)));
    dx[0] = sum_to(g, d, X0);
    dx[1] = sum_to(g, rill_neg(g, d, NULL), X1);
}
/* Atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2). */
GRAD(atan2_grad)
{
    rill_output y = X0, x = X1;
    rill_output r =
        rill_div(g, G, rill_add(g, rill_square(g, x, NULL), rill_square(g, y, NULL), NULL), NULL);
    dx[0] = sum_to(g, mul(g, r, x), y);
    dx[1] = sum_to(g, rill_neg(g, mul(g, r, y), NULL), x);
}
static rill_output nonzero(rill_graph *g, rill_output x)
{
    return rill_cast(g, op2(g, "NotEqual", x, rill_zeros_like(g, x, NULL)), rill_output_dtype(x),
                     NULL);
}
GRAD(xdivy_grad)
{
    rill_output x = X0, y = X1;
    dx[0] = sum_to(g, mul(g, G, op2(g, "Xdivy", nonzero(g, x), y)), x);
    dx[1] = sum_to(g, mul(g, G, op2(g, "Xdivy", rill_neg(g, x, NULL), rill_square(g, y, NULL))), y);
}
GRAD(xlogy_grad)
{
    rill_output x = X0, y = X1;
    dx[0] = sum_to(g, mul(g, G, op2(g, "Xlogy", nonzero(g, x), y)), x);
    dx[1] = sum_to(g, mul(g, G, op2(g, "Xdivy", x, y)), y);
}
/* DivNoNan(x, y) = x / y, 0 where y == 0: dx = div_no_nan(dy, y), dy = dy * div_no_nan(
 * div_no_nan(-x, y), y) (TF's _DivNoNanGrad). */
GRAD(div_no_nan_grad)
{
    rill_output x = X0, y = X1;
    dx[0] = sum_to(g, op2(g, "DivNoNan", G, y), x);
    rill_output t = op2(g, "DivNoNan", op2(g, "DivNoNan", rill_neg(g, x, NULL), y), y);
    dx[1] = sum_to(g, mul(g, G, t), y);
}
/* Select(c, x, y): the gradient goes to x where c holds, to y elsewhere; zeros for the rest. */
GRAD(select_grad)
{
    rill_output z = rill_zeros_like(g, X1, NULL);
    dx[1] = op3(g, "Select", X0, G, z);
    dx[2] = op3(g, "Select", X0, z, G);
}
GRAD(select_v2_grad)
{
    rill_output z = rill_zeros_like(g, G, NULL);
    dx[1] = sum_to(g, op3(g, "SelectV2", X0, G, z), n->inputs[1]);
    dx[2] = sum_to(g, op3(g, "SelectV2", X0, z, G), n->inputs[2]);
}

/* Gradients of the helpers (inputs (dy, x) or (y, dy)); ddx is the incoming gradient G. */
/* RsqrtGrad(y, b) = -0.5 b y^3: d/dy = -1.5 b y^2 G, d/db = RsqrtGrad(y, G). */
GRAD(rsqrt_grad_grad)
{
    rill_output y = X0, b = X1;
    dx[0] = mul(g, k(g, y, -1.5), mul(g, G, mul(g, b, rill_square(g, y, NULL))));
    dx[1] = op2(g, "RsqrtGrad", y, G);
}
/* ReciprocalGrad(y, b) = -b y^2: d/dy = -2 b y G, d/db = ReciprocalGrad(y, G). */
GRAD(reciprocal_grad_grad)
{
    rill_output y = X0, b = X1;
    dx[0] = mul(g, k(g, y, -2), mul(g, G, mul(g, b, y)));
    dx[1] = op2(g, "ReciprocalGrad", y, G);
}
/* SoftplusGrad(b, x) = b sigmoid(x): d/db = SoftplusGrad(G, x), d/dx = G b s (1 - s). */
GRAD(softplus_grad_grad)
{
    rill_output b = X0, x = X1;
    rill_output s = rill_sigmoid(g, x, NULL);
    dx[0] = op2(g, "SoftplusGrad", G, x);
    dx[1] = mul(g, mul(g, G, b), mul(g, s, rill_sub(g, k(g, x, 1), s, NULL)));
}
/* SoftsignGrad(b, x) = b / (1 + |x|)^2: d/dx = -2 G b sign(x) / (1 + |x|)^3. */
GRAD(softsign_grad_grad)
{
    rill_output b = X0, x = X1;
    rill_output d = rill_add(g, k(g, x, 1), op1(g, "Abs", x), NULL);
    dx[0] = op2(g, "SoftsignGrad", G, x);
    rill_output num = mul(g, k(g, x, -2), mul(g, mul(g, G, b), op1(g, "Sign", x)));
    dx[1] = rill_div(g, num, mul(g, d, rill_square(g, d, NULL)), NULL);
}
/* EluGrad(b, y) = b (y > 0 ? 1 : y + 1): d/db = EluGrad(G, y), d/dy = y < 0 ? G b : 0. */
GRAD(elu_grad_grad)
{
    rill_output b = X0, y = X1;
    rill_output neg = op2(g, "Less", y, rill_zeros_like(g, y, NULL));
    dx[0] = op2(g, "EluGrad", G, y);
    dx[1] = op3(g, "Select", neg, mul(g, G, b), rill_zeros_like(g, y, NULL));
}
/* SeluGrad(b, y) = y > 0 ? b scale : b (y + scale alpha): d/dy = y < 0 ? G b : 0. */
GRAD(selu_grad_grad)
{
    rill_output b = X0, y = X1;
    rill_output neg = op2(g, "Less", y, rill_zeros_like(g, y, NULL));
    dx[0] = op2(g, "SeluGrad", G, y);
    dx[1] = op3(g, "Select", neg, mul(g, G, b), rill_zeros_like(g, y, NULL));
}
/* Relu6Grad and LeakyReluGrad route b by x only: linear in b, constant in x. */
GRAD(relu6_grad_grad)
{
    dx[0] = op2(g, "Relu6Grad", G, X1);
    dx[1] = rill_zeros_like(g, X1, NULL);
}
GRAD(leaky_relu_grad_grad)
{
    rill_output in[] = {G, X1};
    rill__attr a[] = {RILL__A_FLOAT("alpha", rill__attr_float(n, "alpha", 0.2))};
    dx[0] = (rill_output){rill__node_create(g, "LeakyReluGrad", NULL, in, 2, a, 1), 0};
    dx[1] = rill_zeros_like(g, X1, NULL);
}

/* --- the table --- */

/* X(name, kind, dtypes, bool output, gradient) */
#define EW_OPS(X)                                                                                  \
    X("Abs", K_UN, FL | SI, 0, abs_grad)                                                           \
    X("Sign", K_UN, FL | I32, 0, zeros_grad)                                                       \
    X("Rsqrt", K_UN, FL, 0, rsqrt_grad)                                                            \
    X("Reciprocal", K_UN, FL | I32, 0, reciprocal_grad)                                            \
    X("Inv", K_UN, FL | I32, 0, reciprocal_grad)                                                   \
    X("Round", K_UN, FL | I32, 0, NULL)                                                            \
    X("Rint", K_UN, FL, 0, NULL)                                                                   \
    X("Floor", K_UN, FL, 0, NULL)                                                                  \
    X("Ceil", K_UN, FL, 0, NULL)                                                                   \
    X("Log1p", K_UN, FL, 0, log1p_grad)                                                            \
    X("Expm1", K_UN, FL, 0, expm1_grad)                                                            \
    X("Softplus", K_UN, FL, 0, softplus_grad)                                                      \
    X("Softsign", K_UN, FL, 0, softsign_grad)                                                      \
    X("Elu", K_UN, FL, 0, elu_grad)                                                                \
    X("Selu", K_UN, FL, 0, selu_grad)                                                              \
    X("LeakyRelu", K_UN, FL, 0, leaky_relu_grad)                                                   \
    X("Relu6", K_UN, FL | IN, 0, relu6_grad)                                                       \
    X("Erf", K_UN, FL, 0, erf_grad)                                                                \
    X("Erfc", K_UN, FL, 0, erfc_grad)                                                              \
    X("Sin", K_UN, FL, 0, sin_grad)                                                                \
    X("Cos", K_UN, FL, 0, cos_grad)                                                                \
    X("Tan", K_UN, FL, 0, tan_grad)                                                                \
    X("Asin", K_UN, FL, 0, asin_grad)                                                              \
    X("Acos", K_UN, FL, 0, acos_grad)                                                              \
    X("Atan", K_UN, FL, 0, atan_grad)                                                              \
    X("Sinh", K_UN, FL, 0, sinh_grad)                                                              \
    X("Cosh", K_UN, FL, 0, cosh_grad)                                                              \
    X("Asinh", K_UN, FL, 0, asinh_grad)                                                            \
    X("Acosh", K_UN, FL, 0, acosh_grad)                                                            \
    X("Atanh", K_UN, FL, 0, atanh_grad)                                                            \
    X("Lgamma", K_UN, FL, 0, lgamma_grad)                                                          \
    X("Digamma", K_UN, FL, 0, digamma_grad)                                                        \
    X("IsNan", K_UN, FL, 1, NULL)                                                                  \
    X("IsInf", K_UN, FL, 1, NULL)                                                                  \
    X("IsFinite", K_UN, FL, 1, NULL)                                                               \
    X("LogicalNot", K_UN, BO, 1, NULL)                                                             \
    X("Pow", K_BIN, FL | I32, 0, pow_grad)                                                         \
    X("FloorDiv", K_BIN, NUM, 0, NULL)                                                             \
    X("FloorMod", K_BIN, NUM, 0, floor_mod_grad)                                                   \
    X("TruncateDiv", K_BIN, IN, 0, NULL)                                                           \
    X("TruncateMod", K_BIN, FL | I32, 0, NULL)                                                     \
    X("RealDiv", K_BIN, FL, 0, real_div_grad)                                                      \
    X("SquaredDifference", K_BIN, FL | I32, 0, squared_difference_grad)                            \
    X("Atan2", K_BIN, FL, 0, atan2_grad)                                                           \
    X("Xdivy", K_BIN, FL, 0, xdivy_grad)                                                           \
    X("Xlogy", K_BIN, FL, 0, xlogy_grad)                                                           \
    X("Polygamma", K_BIN, B(RILL_FLOAT) | B(RILL_DOUBLE), 0, polygamma_grad)                       \
    X("Less", K_BIN, NUM, 1, NULL)                                                                 \
    X("LessEqual", K_BIN, NUM, 1, NULL)                                                            \
    X("Greater", K_BIN, NUM, 1, NULL)                                                              \
    X("GreaterEqual", K_BIN, NUM, 1, NULL)                                                         \
    X("NotEqual", K_BIN, NUM | BO, 1, NULL)                                                        \
    X("LogicalAnd", K_BIN, BO, 1, NULL)                                                            \
    X("LogicalOr", K_BIN, BO, 1, NULL)                                                             \
    X("RsqrtGrad", K_HELP, FL, 0, rsqrt_grad_grad)                                                 \
    X("ReciprocalGrad", K_HELP, FL, 0, reciprocal_grad_grad)                                       \
    X("InvGrad", K_HELP, FL, 0, reciprocal_grad_grad)                                              \
    X("SoftplusGrad", K_HELP, FL, 0, softplus_grad_grad)                                           \
    X("SoftsignGrad", K_HELP, FL, 0, softsign_grad_grad)                                           \
    X("EluGrad", K_HELP, FL, 0, elu_grad_grad)                                                     \
    X("SeluGrad", K_HELP, FL, 0, selu_grad_grad)                                                   \
    X("Relu6Grad", K_HELP, FL | IN, 0, relu6_grad_grad)                                            \
    X("LeakyReluGrad", K_HELP, FL, 0, leaky_relu_grad_grad)                                        \
    X("DivNoNan", K_BIN, FL, 0, div_no_nan_grad)

typedef struct ew_info {
    const char *name;
    int kind;
    uint32_t dtypes;
    bool out_bool;
} ew_info;

#define INFO(nm, kd, dt, ob, gr) {nm, kd, dt, ob},
static const ew_info infos[] = {EW_OPS(INFO){0}};

static const ew_info *info_of(const char *name)
{
    for (const ew_info *e = infos; e->name; e++)
        if (strcmp(e->name, name) == 0) return e;
    return NULL;
}

/* "bfloat16, half, float, double, int8, ...": the dtypes of mask, as TF lists them. */
static const char *dtype_list(uint32_t mask, char *buf, size_t n)
{
    static const rill_dtype order[] = {RILL_BFLOAT16, RILL_HALF,   RILL_FLOAT, RILL_DOUBLE,
                                       RILL_INT8,     RILL_INT16,  RILL_INT32, RILL_INT64,
                                       RILL_UINT8,    RILL_UINT16, RILL_BOOL};
    size_t off = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (mask & B(order[i]))
            off += (size_t)snprintf(buf + off, off < n ? n - off : 0, "%s%s", off ? ", " : "",
                                    rill_dtype_name(order[i]));
    return buf;
}

/* TF's text for a dtype outside an op's list. */
static bool check_dtype(const rill_node *n, rill_dtype t, uint32_t mask, rill_status *s)
{
    if ((unsigned)t < 32 && (mask & B(t))) return true;
    char b[160];
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Value for attr 'T' of %s is not in the list of allowed values: %s\n\t; "
                    "NodeDef: {{node %s}}; Op<name=%s>",
                    rill_dtype_name(t), dtype_list(mask, b, sizeof b), n->name, n->op->name);
    return false;
}

static void ew_shape(rill_node *n, rill_status *s)
{
    const ew_info *e = info_of(n->op->name);
    rill_dtype t = rill__in_dtype(n, 0);
    if (e->kind != K_UN && !rill__check_same_dtype(n, 1, "y", 0, "x", s)) return;
    if (!check_dtype(n, t, e->dtypes, s)) return;
    n->out_dtypes[0] = e->out_bool ? RILL_BOOL : t;
    rill_shape a = rill__in_shape(n, 0);
    if (e->kind == K_BIN) {
        rill_shape b = rill__in_shape(n, 1);
        rill__broadcast_shapes(n, &a, &b, &n->out_shapes[0], s);
        return;
    }
    if (e->kind == K_HELP) { /* both the same shape: the known one */
        rill_shape b = rill__in_shape(n, 1);
        if (a.rank < 0) a = b;
        if (a.rank >= 0 && b.rank >= 0) {
            bool ok = a.rank == b.rank;
            for (int i = 0; ok && i < a.rank; i++)
                ok = rill__merge_dim(n, a.dims[i], b.dims[i], &a.dims[i], s);
            if (!ok) {
                if (rill_status_ok(s)) {
                    char x[200];
                    rill_status_set(s, RILL_INVALID_ARGUMENT,
                                    "Shapes must be equal rank, but are %d and %d for '%s' (op: "
                                    "'%s') with input shapes: %s.",
                                    a.rank, b.rank, n->name, n->op->name,
                                    rill__input_shapes(n, x, sizeof x));
                }
                return;
            }
        }
    }
    n->out_shapes[0] = a;
}

/* Select(condition, t, e): t and e the same shape; condition a scalar, the same shape or a
 * vector as long as t's first dim (TF 1.x's Select). */
static void select_shape(rill_node *n, rill_status *s)
{
    if (rill__in_dtype(n, 0) != RILL_BOOL) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value passed to parameter 'condition' has DataType %s not in list of "
                        "allowed values: bool (node '%s', op '%s')",
                        rill_dtype_name(rill__in_dtype(n, 0)), n->name, n->op->name);
        return;
    }
    if (!rill__check_same_dtype(n, 2, "e", 1, "t", s)) return;
    rill_shape c = rill__in_shape(n, 0), x = rill__in_shape(n, 1), y = rill__in_shape(n, 2);
    char buf[300];
    rill_shape out = x.rank >= 0 ? x : y;
    if (x.rank >= 0 && y.rank >= 0) {
        bool ok = x.rank == y.rank;
        for (int i = 0; ok && i < x.rank; i++) {
            if (x.dims[i] >= 0 && y.dims[i] >= 0 && x.dims[i] != y.dims[i]) ok = false;
            out.dims[i] = x.dims[i] >= 0 ? x.dims[i] : y.dims[i];
        }
        if (!ok) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Shapes must be equal rank, and dimensions must match for '%s' (op: "
                            "'Select') with input shapes: %s.",
                            n->name, rill__input_shapes(n, buf, sizeof buf));
            return;
        }
    }
    if (c.rank > 0 && out.rank >= 0) {
        bool ok;
        if (c.rank == 1 && out.rank != 1)
            ok = out.rank >= 1 && (c.dims[0] < 0 || out.dims[0] < 0 || c.dims[0] == out.dims[0]);
        else {
            ok = c.rank == out.rank;
            for (int i = 0; ok && i < c.rank; i++)
                ok = c.dims[i] < 0 || out.dims[i] < 0 || c.dims[i] == out.dims[i];
        }
        if (!ok) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Shapes must be equal rank, and dimensions must match for '%s' (op: "
                            "'Select') with input shapes: %s.",
                            n->name, rill__input_shapes(n, buf, sizeof buf));
            return;
        }
    }
    n->out_dtypes[0] = rill__in_dtype(n, 1);
    n->out_shapes[0] = out;
}

/* SelectV2(condition, t, e): the three broadcast together. */
static void select_v2_shape(rill_node *n, rill_status *s)
{
    if (rill__in_dtype(n, 0) != RILL_BOOL) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value passed to parameter 'condition' has DataType %s not in list of "
                        "allowed values: bool (node '%s', op '%s')",
                        rill_dtype_name(rill__in_dtype(n, 0)), n->name, n->op->name);
        return;
    }
    if (!rill__check_same_dtype(n, 2, "e", 1, "t", s)) return;
    rill_shape c = rill__in_shape(n, 0), x = rill__in_shape(n, 1), y = rill__in_shape(n, 2), xy;
    if (!rill__broadcast_shapes(n, &x, &y, &xy, s)) return;
    if (!rill__broadcast_shapes(n, &c, &xy, &n->out_shapes[0], s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 1);
}

#define DEF(nm, kd, dt, ob, gr)                                                                    \
    {.name = nm,                                                                                   \
     .default_name = nm,                                                                           \
     .min_inputs = (kd) == K_UN ? 1 : 2,                                                           \
     .max_inputs = (kd) == K_UN ? 1 : 2,                                                           \
     .noutputs = 1,                                                                                \
     .shape = ew_shape,                                                                            \
     .grad = gr},
const rill__op_def rill__ops_elementwise[] = {
    EW_OPS(DEF){.name = "Select",
                .default_name = "Select",
                .min_inputs = 3,
                .max_inputs = 3,
                .noutputs = 1,
                .shape = select_shape,
                .grad = select_grad},
    {.name = "SelectV2",
     .default_name = "SelectV2",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .shape = select_v2_shape,
     .grad = select_v2_grad},
    {0},
};
