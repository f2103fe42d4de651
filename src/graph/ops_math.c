/* ops_math.c - arithmetic op definitions, builders and gradients: the broadcasting binary ops
 * (Add, Sub, Mul, Div, Maximum, Minimum), unary ops (Neg, Square, Sqrt, Exp, Log), AddN, the
 * reductions (Sum, Mean), MatMul, and the helper ops gradients use (SumToShape, ReduceGrad,
 * MaximumGrad, SqrtGrad), which have gradients of their own so that second derivatives work.
 *
 * Broadcast gradients: the gradient of a broadcast input is the incoming gradient summed back to
 * that input's shape. When both shapes are static and equal nothing is added; otherwise
 * SumToShape(dy, Shape(x)) reduces at run time, so placeholders of unknown shape work too. */
#include "graph_internal.h"

#include <string.h>

static const char *const numeric_names =
    "float, double, half, int32, int64, int8, int16, uint8, uint16, bfloat16";

static bool numeric(rill_dtype t)
{
    return t == RILL_FLOAT || t == RILL_DOUBLE || t == RILL_HALF || t == RILL_INT32 ||
           t == RILL_INT64 || t == RILL_INT8 || t == RILL_INT16 || t == RILL_UINT8 ||
           t == RILL_UINT16 || t == RILL_BFLOAT16;
}

bool rill__broadcast_shapes(const rill_node *n, const rill_shape *a, const rill_shape *b,
                            rill_shape *out, rill_status *s)
{
    if (a->rank < 0 || b->rank < 0) {
        *out = rill_shape_unknown();
        return true;
    }
    int rank = a->rank > b->rank ? a->rank : b->rank;
    out->rank = rank;
    for (int i = rank - 1; i >= 0; i--) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        int64_t d;
        if (da == 1)
            d = db;
        else if (db == 1)
            d = da;
        else if (da == -1)
            d = db;
        else if (db == -1)
            d = da;
        else if (da == db)
            d = da;
        else {
            char x[96], y[96];
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Dimensions must be equal, but are %lld and %lld for '%s' (op: '%s') "
                            "with input shapes: %s, %s.",
                            (long long)da, (long long)db, n->name, n->op->name,
                            rill_shape_str(a, x, sizeof x), rill_shape_str(b, y, sizeof y));
            return false;
        }
        out->dims[i] = d;
    }
    return true;
}

/* Input j has input i's dtype (the text names j, the later argument). */
static bool same_dtype(rill_node *n, int i, const char *argi, int j, const char *argj,
                       rill_status *s)
{
    return rill__check_same_dtype(n, j, argj, i, argi, s);
}

static bool check_numeric(rill_node *n, rill_dtype t, bool float_only, rill_status *s)
{
    if (float_only ? !rill_dtype_is_float(t) : !numeric(t)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'T' of %s is not in the list of allowed values: %s; "
                        "NodeDef: '%s'",
                        rill_dtype_name(t), float_only ? "float, double, half" : numeric_names,
                        n->name);
        return false;
    }
    return true;
}

static void binary_shape(rill_node *n, rill_status *s)
{
    if (!same_dtype(n, 0, "x", 1, "y", s)) return;
    if (!check_numeric(n, rill__in_dtype(n, 0), false, s)) return;
    rill_shape a = rill__in_shape(n, 0), b = rill__in_shape(n, 1);
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    rill__broadcast_shapes(n, &a, &b, &n->out_shapes[0], s);
}

static void unary_shape(rill_node *n, rill_status *s)
{
    bool float_only = strcmp(n->op->name, "Neg") != 0 && strcmp(n->op->name, "Square") != 0;
    if (!check_numeric(n, rill__in_dtype(n, 0), float_only, s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static void add_n_shape(rill_node *n, rill_status *s)
{
    rill_shape sh = rill__in_shape(n, 0);
    for (int i = 1; i < n->ninputs; i++) {
        if (!same_dtype(n, 0, "inputs", i, "inputs", s)) return;
        rill_shape o = rill__in_shape(n, i);
        if (sh.rank < 0) {
            sh = o;
            continue;
        }
        if (o.rank < 0) continue;
        bool ok = o.rank == sh.rank;
        for (int d = 0; ok && d < sh.rank; d++) {
            if (sh.dims[d] < 0)
                sh.dims[d] = o.dims[d];
            else if (o.dims[d] >= 0 && o.dims[d] != sh.dims[d])
                ok = false;
        }
        if (!ok) {
            char x[96], y[96];
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Shapes must be equal rank, and dimensions must match for '%s' (op: "
                            "'AddN') with input shapes: %s, %s.",
                            n->name, rill_shape_str(&sh, x, sizeof x),
                            rill_shape_str(&o, y, sizeof y));
            return;
        }
    }
    if (!check_numeric(n, rill__in_dtype(n, 0), false, s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = sh;
}

/* Normalises the node's axes against rank into mask; false (s set) when out of range. */
static bool reduction_mask(const rill_node *n, int rank, bool *mask, rill_status *s)
{
    const rill__attr *ax = rill__node_attr(n, "axes");
    for (int i = 0; i < RILL_MAX_DIMS; i++) mask[i] = false;
    if (!ax) {
        for (int i = 0; i < rank; i++) mask[i] = true;
        return true;
    }
    for (int k = 0; k < ax->v.ints.n; k++) {
        int64_t a = ax->v.ints.v[k];
        if (a < -rank || a >= rank) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Invalid reduction dimension %lld for input with %d dimensions. for "
                            "'%s' (op: '%s')",
                            (long long)a, rank, n->name, n->op->name);
            return false;
        }
        mask[a < 0 ? a + rank : a] = true;
    }
    return true;
}

static void reduce_shape(rill_node *n, rill_status *s)
{
    if (!check_numeric(n, rill__in_dtype(n, 0), false, s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    rill_shape in = rill__in_shape(n, 0);
    bool keep = rill__attr_bool(n, "keep_dims", false);
    if (in.rank < 0) {
        n->out_shapes[0] = rill_shape_unknown();
        return;
    }
    bool mask[RILL_MAX_DIMS];
    if (!reduction_mask(n, in.rank, mask, s)) return;
    rill_shape out = {.rank = 0};
    for (int i = 0; i < in.rank; i++) {
        if (!mask[i])
            out.dims[out.rank++] = in.dims[i];
        else if (keep)
            out.dims[out.rank++] = 1;
    }
    n->out_shapes[0] = out;
}

static void matmul_shape(rill_node *n, rill_status *s)
{
    if (!same_dtype(n, 0, "a", 1, "b", s)) return;
    if (!check_numeric(n, rill__in_dtype(n, 0), true, s)) return;
    rill_shape a = rill__in_shape(n, 0), b = rill__in_shape(n, 1);
    char x[96], y[96];
    if ((a.rank >= 0 && a.rank != 2) || (b.rank >= 0 && b.rank != 2)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank 2 but is rank %d for '%s' (op: 'MatMul') with input "
                        "shapes: %s, %s.",
                        a.rank >= 0 && a.rank != 2 ? a.rank : b.rank, n->name,
                        rill_shape_str(&a, x, sizeof x), rill_shape_str(&b, y, sizeof y));
        return;
    }
    bool ta = rill__attr_bool(n, "transpose_a", false),
         tb = rill__attr_bool(n, "transpose_b", false);
    int64_t m = a.rank == 2 ? a.dims[ta ? 1 : 0] : -1, ka = a.rank == 2 ? a.dims[ta ? 0 : 1] : -1;
    int64_t kb = b.rank == 2 ? b.dims[tb ? 1 : 0] : -1, nn = b.rank == 2 ? b.dims[tb ? 0 : 1] : -1;
    if (ka >= 0 && kb >= 0 && ka != kb) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Dimensions must be equal, but are %lld and %lld for '%s' (op: 'MatMul') "
                        "with input shapes: %s, %s.",
                        (long long)ka, (long long)kb, n->name, rill_shape_str(&a, x, sizeof x),
                        rill_shape_str(&b, y, sizeof y));
        return;
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_matrix(m, nn);
}

/* SumToShape(grad, shape): output has the shape held by input 1. */
static void shape_from_input1(rill_node *n, rill_status *s)
{
    (void)s;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    rill_output so = n->inputs[1];
    if (strcmp(so.node->op->name, "Shape") == 0)
        n->out_shapes[0] = rill__in_shape(so.node, 0);
    else
        n->out_shapes[0] = rill_shape_unknown();
}

static void maximum_grad_shape(rill_node *n, rill_status *s)
{
    /* dy, x, y -> (dx, dy) in dy's (the broadcast) shape */
    (void)s;
    for (int i = 0; i < 2; i++) {
        n->out_dtypes[i] = rill__in_dtype(n, 0);
        n->out_shapes[i] = rill__in_shape(n, 0);
    }
}

static void sqrt_grad_shape(rill_node *n, rill_status *s)
{
    (void)s;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

/* --- gradients --- */

/* dy summed to the shape of x (nothing added when static shapes already agree). */
static rill_output sum_to(rill_graph *g, rill_output dy, rill_output x)
{
    if (!dy.node) return dy;
    rill_shape xs = rill_output_shape(x), ds = rill_output_shape(dy);
    if (rill_shape_is_fully_defined(&xs) && rill_shape_equal(&xs, &ds)) return dy;
    rill_output in[] = {dy, rill_shape_of(g, x, NULL)};
    return (rill_output){rill__node_create(g, "SumToShape", NULL, in, 2, NULL, 0), 0};
}

static void add_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = sum_to(g, dy[0], n->inputs[0]);
    dx[1] = sum_to(g, dy[0], n->inputs[1]);
}

static void sub_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = sum_to(g, dy[0], n->inputs[0]);
    dx[1] = sum_to(g, rill_neg(g, dy[0], NULL), n->inputs[1]);
}

static void mul_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = sum_to(g, rill_mul(g, dy[0], n->inputs[1], NULL), n->inputs[0]);
    dx[1] = sum_to(g, rill_mul(g, n->inputs[0], dy[0], NULL), n->inputs[1]);
}

static void div_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output x = n->inputs[0], y = n->inputs[1];
    dx[0] = sum_to(g, rill_div(g, dy[0], y, NULL), x);
    /* d(x/y)/dy = -x / y^2 */
    rill_output t = rill_div(g, rill_mul(g, dy[0], x, NULL), rill_square(g, y, NULL), NULL);
    dx[1] = sum_to(g, rill_neg(g, t, NULL), y);
}

static void maximum_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {dy[0], n->inputs[0], n->inputs[1]};
    rill_node *mg = rill__node_create(g, "MaximumGrad", NULL, in, 3, NULL, 0);
    if (!mg) return;
    dx[0] = sum_to(g, (rill_output){mg, 0}, n->inputs[0]);
    dx[1] = sum_to(g, (rill_output){mg, 1}, n->inputs[1]);
}

/* min(x, y) = -max(-x, -y) routes as max with the operands swapped: MaximumGrad(dy, y, x) gives
 * dy where y >= x (x's: x wins ties, as TF's MinimumGrad gives them) and dy where y < x. */
static void minimum_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {dy[0], n->inputs[1], n->inputs[0]};
    rill_node *mg = rill__node_create(g, "MaximumGrad", NULL, in, 3, NULL, 0);
    if (!mg) return;
    dx[0] = sum_to(g, (rill_output){mg, 0}, n->inputs[0]);
    dx[1] = sum_to(g, (rill_output){mg, 1}, n->inputs[1]);
}

static void neg_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    (void)n;
    dx[0] = rill_neg(g, dy[0], NULL);
}

static void square_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output x = n->inputs[0];
    rill_output two = rill__scalar_like(g, rill_output_dtype(x), 2.0);
    dx[0] = rill_mul(g, dy[0], rill_mul(g, two, x, NULL), NULL);
}

static void sqrt_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {(rill_output){n, 0}, dy[0]};
    dx[0] = (rill_output){rill__node_create(g, "SqrtGrad", NULL, in, 2, NULL, 0), 0};
}

static void exp_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = rill_mul(g, dy[0], (rill_output){n, 0}, NULL);
}

static void log_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = rill_div(g, dy[0], n->inputs[0], NULL);
}

static void add_n_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    (void)g;
    for (int i = 0; i < n->ninputs; i++) dx[i] = dy[0];
}

static void reduce_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    const rill__attr *ax = rill__node_attr(n, "axes");
    rill__attr a[3];
    int na = 0;
    if (ax) a[na++] = RILL__A_INTS("axes", ax->v.ints.n, ax->v.ints.v);
    a[na++] = RILL__A_BOOL("keep_dims", rill__attr_bool(n, "keep_dims", false));
    a[na++] = RILL__A_BOOL("mean", strcmp(n->op->name, "Mean") == 0);
    rill_output in[] = {dy[0], rill_shape_of(g, n->inputs[0], NULL)};
    dx[0] = (rill_output){rill__node_create(g, "ReduceGrad", NULL, in, 2, a, na), 0};
}

static void matmul_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    bool ta = rill__attr_bool(n, "transpose_a", false),
         tb = rill__attr_bool(n, "transpose_b", false);
    rill_output a = n->inputs[0], b = n->inputs[1], d = dy[0];
    if (!ta && !tb) {
        dx[0] = rill_matmul(g, d, b, false, true, NULL);
        dx[1] = rill_matmul(g, a, d, true, false, NULL);
    } else if (!ta && tb) {
        dx[0] = rill_matmul(g, d, b, false, false, NULL);
        dx[1] = rill_matmul(g, d, a, true, false, NULL);
    } else if (ta && !tb) {
        dx[0] = rill_matmul(g, b, d, false, true, NULL);
        dx[1] = rill_matmul(g, a, d, false, false, NULL);
    } else {
        dx[0] = rill_matmul(g, b, d, true, true, NULL);
        dx[1] = rill_matmul(g, d, a, true, true, NULL);
    }
}

/* Gradients of the gradient helpers, so that gradient graphs can be differentiated again
 * (second derivatives), as TF's _SumToShape/_SqrtGradGrad/... do. */

/* SumToShape sums broadcast dims away; its adjoint broadcasts back: zeros_like(grad) + ddy
 * (the target shape is right-aligned with 1s where summed, so numpy broadcasting restores it). */
static void sum_to_shape_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = rill_add(g, rill_zeros_like(g, n->inputs[0], NULL), dy[0], NULL);
}

/* ReduceGrad broadcasts dy over the reduced axes (/count for Mean); its adjoint is the same
 * reduction with the same keep_dims. */
static void reduce_grad_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    const rill__attr *ax = rill__node_attr(n, "axes");
    int axes[RILL_MAX_DIMS], naxes = -1;
    if (ax) {
        naxes = ax->v.ints.n;
        for (int i = 0; i < naxes; i++) axes[i] = (int)ax->v.ints.v[i];
    }
    bool keep = rill__attr_bool(n, "keep_dims", false);
    if (rill__attr_bool(n, "mean", false))
        dx[0] = rill_mean(g, dy[0], ax ? axes : NULL, naxes, keep, NULL);
    else
        dx[0] = rill_sum(g, dy[0], ax ? axes : NULL, naxes, keep, NULL);
}

/* SqrtGrad(y, b) = 0.5 b / y: d/dy = -(grad / y) * out, d/db = 0.5 grad / y = SqrtGrad(y, grad). */
static void sqrt_grad_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output y = n->inputs[0];
    dx[0] = rill_neg(g, rill_mul(g, rill_div(g, dy[0], y, NULL), (rill_output){n, 0}, NULL), NULL);
    rill_output in[] = {y, dy[0]};
    dx[1] = (rill_output){rill__node_create(g, "SqrtGrad", NULL, in, 2, NULL, 0), 0};
}

/* MaximumGrad(dy, x, y) routes dy to one side or the other: the gradient of dy routes each
 * output's gradient back the same way; x and y only choose the route (no gradient). */
static void maximum_grad_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in0[] = {dy[0], n->inputs[1], n->inputs[2]};
    rill_output in1[] = {dy[1], n->inputs[1], n->inputs[2]};
    rill_node *a = rill__node_create(g, "MaximumGrad", NULL, in0, 3, NULL, 0);
    rill_node *b = rill__node_create(g, "MaximumGrad", NULL, in1, 3, NULL, 0);
    if (!a || !b) return;
    dx[0] = rill_add(g, (rill_output){a, 0}, (rill_output){b, 1}, NULL);
}

/* ArgMax(x) along attr axis (negative from the end): the index of the first largest, int64. */
static void argmax_shape(rill_node *n, rill_status *s)
{
    if (!check_numeric(n, rill__in_dtype(n, 0), false, s)) return;
    rill_shape x = rill__in_shape(n, 0), out = {.rank = -1};
    int64_t axis = rill__attr_int(n, "axis", 0);
    if (x.rank >= 0) {
        if (axis < -x.rank || axis >= x.rank || x.rank == 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Expected dimension in the range [%d, %d), but got %lld", -x.rank,
                            x.rank, (long long)axis);
            return;
        }
        if (axis < 0) axis += x.rank;
        out.rank = 0;
        for (int d = 0; d < x.rank; d++)
            if (d != axis) out.dims[out.rank++] = x.dims[d];
    }
    n->out_dtypes[0] = RILL_INT64;
    n->out_shapes[0] = out;
}

/* Equal(x, y): elementwise x == y with numpy broadcasting, bool. */
static void equal_shape(rill_node *n, rill_status *s)
{
    if (!same_dtype(n, 0, "x", 1, "y", s)) return;
    rill_dtype t = rill__in_dtype(n, 0);
    if (t != RILL_BOOL && !check_numeric(n, t, false, s)) return;
    rill_shape a = rill__in_shape(n, 0), b = rill__in_shape(n, 1);
    n->out_dtypes[0] = RILL_BOOL;
    rill__broadcast_shapes(n, &a, &b, &n->out_shapes[0], s);
}

#define BIN(nm, dn, gr)                                                                            \
    {                                                                                              \
        .name = nm, .default_name = dn, .min_inputs = 2, .max_inputs = 2, .noutputs = 1,           \
        .shape = binary_shape, .grad = gr                                                          \
    }
#define UN(nm, dn, gr)                                                                             \
    {                                                                                              \
        .name = nm, .default_name = dn, .min_inputs = 1, .max_inputs = 1, .noutputs = 1,           \
        .shape = unary_shape, .grad = gr                                                           \
    }
const rill__op_def rill__ops_math[] = {
    {.name = "ArgMax", .default_name = "ArgMax", .min_inputs = 1, .max_inputs = 1, .noutputs = 1,
     .shape = argmax_shape},
    {.name = "Equal", .default_name = "Equal", .min_inputs = 2, .max_inputs = 2, .noutputs = 1,
     .shape = equal_shape},
    BIN("Add", "add", add_grad),
    BIN("Sub", "sub", sub_grad),
    BIN("Mul", "mul", mul_grad),
    BIN("Div", "truediv", div_grad),
    BIN("Maximum", "Maximum", maximum_grad),
    BIN("Minimum", "Minimum", minimum_grad),
    UN("Neg", "Neg", neg_grad),
    UN("Square", "Square", square_grad),
    UN("Sqrt", "Sqrt", sqrt_grad),
    UN("Exp", "Exp", exp_grad),
    UN("Log", "Log", log_grad),
    {.name = "AddN",
     .default_name = "AddN",
     .min_inputs = 1,
     .max_inputs = -1,
     .noutputs = 1,
     .shape = add_n_shape,
     .grad = add_n_grad},
    {.name = "Sum",
     .default_name = "Sum",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = reduce_shape,
     .grad = reduce_grad},
    {.name = "Mean",
     .default_name = "Mean",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = reduce_shape,
     .grad = reduce_grad},
    {.name = "MatMul",
     .default_name = "MatMul",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = matmul_shape,
     .grad = matmul_grad},
    {.name = "SumToShape",
     .default_name = "SumToShape",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = shape_from_input1,
     .grad = sum_to_shape_grad},
    {.name = "ReduceGrad",
     .default_name = "ReduceGrad",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = shape_from_input1,
     .grad = reduce_grad_grad},
    {.name = "MaximumGrad",
     .default_name = "MaximumGrad",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 2,
     .shape = maximum_grad_shape,
     .grad = maximum_grad_grad},
    {.name = "SqrtGrad",
     .default_name = "SqrtGrad",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = sqrt_grad_shape,
     .grad = sqrt_grad_grad},
    {0},
};

/* --- builders --- */

static rill_output bin(rill_graph *g, const char *op, rill_output x, rill_output y,
                       const char *name)
{
    rill_output in[] = {x, y};
    return (rill_output){rill__node_create(g, op, name, in, 2, NULL, 0), 0};
}

static rill_output un(rill_graph *g, const char *op, rill_output x, const char *name)
{
    return (rill_output){rill__node_create(g, op, name, &x, 1, NULL, 0), 0};
}

rill_output rill_add(rill_graph *g, rill_output x, rill_output y, const char *name)
{
    return bin(g, "Add", x, y, name);
}

rill_output rill_sub(rill_graph *g, rill_output x, rill_output y, const char *name)
{
    return bin(g, "Sub", x, y, name);
}

rill_output rill_mul(rill_graph *g, rill_output x, rill_output y, const char *name)
{
    return bin(g, "Mul", x, y, name);
}

rill_output rill_div(rill_graph *g, rill_output x, rill_output y, const char *name)
{
    return bin(g, "Div", x, y, name);
}

rill_output rill_maximum(rill_graph *g, rill_output x, rill_output y, const char *name)
{
    return bin(g, "Maximum", x, y, name);
}

rill_output rill_minimum(rill_graph *g, rill_output x, rill_output y, const char *name)
{
    return bin(g, "Minimum", x, y, name);
}

rill_output rill_argmax(rill_graph *g, rill_output x, int axis, const char *name)
{
    rill__attr at[] = {RILL__A_INT("axis", axis)};
    return (rill_output){rill__node_create(g, "ArgMax", name, &x, 1, at, 1), 0};
}

rill_output rill_equal(rill_graph *g, rill_output x, rill_output y, const char *name)
{
    return bin(g, "Equal", x, y, name);
}

rill_output rill_neg(rill_graph *g, rill_output x, const char *name)
{
    return un(g, "Neg", x, name);
}

rill_output rill_square(rill_graph *g, rill_output x, const char *name)
{
    return un(g, "Square", x, name);
}

rill_output rill_sqrt(rill_graph *g, rill_output x, const char *name)
{
    return un(g, "Sqrt", x, name);
}

rill_output rill_exp(rill_graph *g, rill_output x, const char *name)
{
    return un(g, "Exp", x, name);
}

rill_output rill_log(rill_graph *g, rill_output x, const char *name)
{
    return un(g, "Log", x, name);
}

rill_output rill_add_n(rill_graph *g, const rill_output *xs, int n, const char *name)
{
    if (n == 1 && !name) return xs[0];
    return (rill_output){rill__node_create(g, "AddN", name, xs, n, NULL, 0), 0};
}

static rill_output reduce(rill_graph *g, const char *op, rill_output x, const int *axes, int naxes,
                          bool keep_dims, const char *name)
{
    rill__attr a[2];
    int na = 0;
    int64_t ax[RILL_MAX_DIMS];
    if (naxes > RILL_MAX_DIMS) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT, "%s: %d axes given, at most %d", op, naxes,
                         RILL_MAX_DIMS);
        return (rill_output){NULL, 0};
    }
    if (naxes >= 0 && axes) {
        for (int i = 0; i < naxes; i++) ax[i] = axes[i];
        a[na++] = RILL__A_INTS("axes", naxes, ax);
    }
    a[na++] = RILL__A_BOOL("keep_dims", keep_dims);
    return (rill_output){rill__node_create(g, op, name, &x, 1, a, na), 0};
}

rill_output rill_sum(rill_graph *g, rill_output x, const int *axes, int naxes, bool keep_dims,
                     const char *name)
{
    return reduce(g, "Sum", x, axes, naxes, keep_dims, name);
}

rill_output rill_mean(rill_graph *g, rill_output x, const int *axes, int naxes, bool keep_dims,
                      const char *name)
{
    return reduce(g, "Mean", x, axes, naxes, keep_dims, name);
}

rill_output rill_matmul(rill_graph *g, rill_output a, rill_output b, bool transpose_a,
                        bool transpose_b, const char *name)
{
    rill__attr at[] = {RILL__A_BOOL("transpose_a", transpose_a),
                       RILL__A_BOOL("transpose_b", transpose_b)};
    rill_output in[] = {a, b};
    return (rill_output){rill__node_create(g, "MatMul", name, in, 2, at, 2), 0};
}
