/* ops_reduce.c - op definitions and gradients for the reductions beyond Sum and Mean: Max, Min,
 * Prod, Any, All (attrs `axes`, an int list, absent: every axis, and `keep_dims`, as Sum and
 * Mean in ops_math.c), ArgMin (ArgMax's twin, attr `axis`), and the scans Cumsum and Cumprod
 * (attrs axis, exclusive, reverse), plus ProdGrad, the helper Prod's gradient runs.
 *
 * Gradients follow TensorFlow's rules, composed from existing ops where TF composes them:
 *   Max/Min: dy split evenly among the elements equal to the result (ties share), built as
 *            indicators = cast(x == broadcast(y)), dx = indicators * broadcast(dy) /
 *            broadcast(sum(indicators)); ReduceGrad (ops_math.c) broadcasts back.
 *   Prod:    dx_i = dy * (product of the other elements of its group), which ProdGrad computes
 *            from prefix and suffix products, so zeros need no special case (TF's cumprod trick).
 *   Cumsum:  the cumsum of dy the other way round (same exclusive).
 *   Cumprod: TF's cumsum(y * dy, reverse = !reverse) / x (x without zeros, as in TF). */
#include "graph_internal.h"

#include <string.h>

static bool numeric(rill_dtype t)
{
    return t == RILL_FLOAT || t == RILL_DOUBLE || t == RILL_HALF || t == RILL_INT32 ||
           t == RILL_INT64;
}

static bool check_type(rill_node *n, bool boolean, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, 0);
    if (boolean) {
        if (t == RILL_BOOL) return true;
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input 'input' of '%s' Op has type %s that does not match expected type "
                        "of bool.",
                        n->op->name, rill_dtype_name(t));
        return false;
    }
    if (numeric(t)) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Value for attr 'T' of %s is not in the list of allowed values: float, "
                    "double, half, int32, int64; NodeDef: '%s'",
                    rill_dtype_name(t), n->name);
    return false;
}

/* The reduction shape rule of Sum and Mean, with their text (ops_math.c). */
static void reduce_shape(rill_node *n, rill_status *s)
{
    bool boolean = strcmp(n->op->name, "Any") == 0 || strcmp(n->op->name, "All") == 0;
    if (!check_type(n, boolean, s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    rill_shape in = rill__in_shape(n, 0);
    bool keep = rill__attr_bool(n, "keep_dims", false);
    if (in.rank < 0) {
        n->out_shapes[0] = rill_shape_unknown();
        return;
    }
    const rill__attr *ax = rill__node_attr(n, "axes");
    bool mask[RILL_MAX_DIMS] = {false};
    if (!ax || ax->kind != RILL__ATTR_INTS) {
        for (int i = 0; i < in.rank; i++) mask[i] = true;
    } else {
        for (int k = 0; k < ax->v.ints.n; k++) {
            int64_t a = ax->v.ints.v[k];
            if (a < -in.rank || a >= in.rank) {
                char shapes[256];
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "Invalid reduction dimension %lld for input with %d dimensions. "
                                "for '%s' (op: '%s') with input shapes: %s.",
                                (long long)a, in.rank, n->name, n->op->name,
                                rill__input_shapes(n, shapes, sizeof shapes));
                return;
            }
            mask[a < 0 ? a + in.rank : a] = true;
        }
    }
    rill_shape out = {.rank = 0};
    for (int i = 0; i < in.rank; i++) {
        if (!mask[i])
            out.dims[out.rank++] = in.dims[i];
        else if (keep)
            out.dims[out.rank++] = 1;
    }
    n->out_shapes[0] = out;
}

static void argmin_shape(rill_node *n, rill_status *s)
{
    if (!check_type(n, false, s)) return;
    rill_shape x = rill__in_shape(n, 0), out = {.rank = -1};
    int64_t axis = rill__attr_int(n, "axis", 0);
    if (x.rank >= 0) {
        if (axis < -x.rank || axis >= x.rank || x.rank == 0) {
            char shapes[256];
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Dimension (%lld) must be in the range [%d, %d), where %d is the "
                            "number of dimensions in the input. for '%s' (op: 'ArgMin') with "
                            "input shapes: %s.",
                            (long long)axis, -x.rank, x.rank, x.rank, n->name,
                            rill__input_shapes(n, shapes, sizeof shapes));
            return;
        }
        if (axis < 0) axis += x.rank;
        out.rank = 0;
        for (int d = 0; d < x.rank; d++)
            if (d != axis) out.dims[out.rank++] = x.dims[d];
    }
    rill_dtype ot = rill__attr_type(n, "output_type", RILL_INT64);
    if (ot != RILL_INT32 && ot != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'output_type' of %s is not in the list of allowed values: "
                        "int32, int64; NodeDef: '%s'",
                        rill_dtype_name(ot), n->name);
        return;
    }
    n->out_dtypes[0] = ot;
    n->out_shapes[0] = out;
}

static void scan_shape(rill_node *n, rill_status *s)
{
    if (!check_type(n, false, s)) return;
    rill_shape x = rill__in_shape(n, 0);
    int64_t axis = rill__attr_int(n, "axis", 0);
    if (x.rank >= 0 && (axis < -x.rank || axis >= x.rank || x.rank == 0)) {
        char shapes[256];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "ScanOp: Expected scan axis in the range [%d, %d), but got %lld for '%s' "
                        "(op: '%s') with input shapes: %s.",
                        -x.rank, x.rank, (long long)axis, n->name, n->op->name,
                        rill__input_shapes(n, shapes, sizeof shapes));
        return;
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = x;
}

/* ProdGrad(x, dy): x's dtype and shape. */
static void prod_grad_shape(rill_node *n, rill_status *s)
{
    if (!check_type(n, false, s)) return;
    if (!rill__check_same_dtype(n, 1, "dy", 0, "x", s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

/* --- gradients --- */

/* The node's axes and keep_dims, to build a reduction or ReduceGrad alike. */
static int reduce_attrs(const rill_node *n, rill__attr *a)
{
    const rill__attr *ax = rill__node_attr(n, "axes");
    int na = 0;
    if (ax && ax->kind == RILL__ATTR_INTS)
        a[na++] = RILL__A_INTS("axes", ax->v.ints.n, ax->v.ints.v);
    a[na++] = RILL__A_BOOL("keep_dims", rill__attr_bool(n, "keep_dims", false));
    return na;
}

/* t (shaped as the node's result) broadcast back to the shape of the node's input. */
static rill_output broadcast_back(rill_graph *g, const rill_node *n, rill_output t)
{
    rill__attr a[3];
    int na = reduce_attrs(n, a);
    a[na++] = RILL__A_BOOL("mean", false);
    rill_output in[] = {t, rill_shape_of(g, n->inputs[0], NULL)};
    return (rill_output){rill__node_create(g, "ReduceGrad", NULL, in, 2, a, na), 0};
}

static void max_min_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output x = n->inputs[0];
    rill_dtype t = rill_output_dtype(x);
    rill_output ind =
        rill_cast(g, rill_equal(g, x, broadcast_back(g, n, (rill_output){n, 0}), NULL), t, NULL);
    rill__attr a[2];
    int na = reduce_attrs(n, a);
    rill_output num = {rill__node_create(g, "Sum", NULL, &ind, 1, a, na), 0};
    if (!num.node) return;
    rill_output share = rill_div(g, broadcast_back(g, n, dy[0]), broadcast_back(g, n, num), NULL);
    dx[0] = rill_mul(g, ind, share, NULL);
}

static void prod_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill__attr a[2];
    int na = reduce_attrs(n, a);
    rill_output in[] = {n->inputs[0], dy[0]};
    dx[0] = (rill_output){rill__node_create(g, "ProdGrad", NULL, in, 2, a, na), 0};
}

static rill_output scan(rill_graph *g, const char *op, rill_output x, int64_t axis, bool exclusive,
                        bool reverse)
{
    rill__attr a[] = {RILL__A_INT("axis", axis), RILL__A_BOOL("exclusive", exclusive),
                      RILL__A_BOOL("reverse", reverse)};
    return (rill_output){rill__node_create(g, op, NULL, &x, 1, a, 3), 0};
}

static void cumsum_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = scan(g, "Cumsum", dy[0], rill__attr_int(n, "axis", 0),
                 rill__attr_bool(n, "exclusive", false), !rill__attr_bool(n, "reverse", false));
}

static void cumprod_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output y = {n, 0};
    rill_output t =
        scan(g, "Cumsum", rill_mul(g, y, dy[0], NULL), rill__attr_int(n, "axis", 0),
             rill__attr_bool(n, "exclusive", false), !rill__attr_bool(n, "reverse", false));
    dx[0] = rill_div(g, t, n->inputs[0], NULL);
}

#define REDUCE(nm, gr)                                                                             \
    {                                                                                              \
        .name = nm, .default_name = nm, .min_inputs = 1, .max_inputs = 1, .noutputs = 1,           \
        .shape = reduce_shape, .grad = gr                                                          \
    }
const rill__op_def rill__ops_reduce[] = {
    REDUCE("Max", max_min_grad),
    REDUCE("Min", max_min_grad),
    REDUCE("Prod", prod_grad),
    REDUCE("Any", NULL),
    REDUCE("All", NULL),
    {.name = "ArgMin",
     .default_name = "ArgMin",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = argmin_shape},
    {.name = "Cumsum",
     .default_name = "Cumsum",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = scan_shape,
     .grad = cumsum_grad},
    {.name = "Cumprod",
     .default_name = "Cumprod",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = scan_shape,
     .grad = cumprod_grad},
    {.name = "ProdGrad",
     .default_name = "ProdGrad",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = prod_grad_shape},
    {0},
};
