/* ops_linalg.c - op definitions, shape rules and gradients of the batched matrix ops: BatchMatMul
 * (x [..., m, k] times y [..., k, n], the same batch dims, adj_x / adj_y), MatrixBandPart (attrs
 * num_lower, num_upper), MatrixInverse, MatrixDeterminant, MatrixSolve, Cholesky,
 * MatrixTriangularSolve and the gradient helper CholeskyGrad. All take half, float and double
 * (the kernels, kernels/cpu/cpu_linalg.c, compute in double) over any leading batch dims.
 *
 * As elsewhere in rill, MatrixBandPart's num_lower and num_upper (TF: scalar tensor inputs) are
 * attrs. The gradients are TF's (linalg_grad.py, math_grad.py):
 *   BatchMatMul     products of dz with the other operand, by the four adjoint cases
 *   MatrixBandPart  the same band of dy
 *   MatrixInverse   -Y^T dY Y^T (Y the inverse; adjoint swaps the transposes)
 *   MatrixDeterminant  dy * det * inverse(A)^T
 *   MatrixSolve     dB = solve(A^T, dX), dA = -dB X^T (adjoint: dA = -X dB^T)
 *   MatrixTriangularSolve  as MatrixSolve, dA kept to A's triangle
 *   Cholesky        CholeskyGrad(L, dL): Phi(L^T dL) solved against L on both sides and
 *                   symmetrised (TF's formula); CholeskyGrad has no gradient itself. */
#include "graph_internal.h"

#include <stdio.h>
#include <string.h>

static bool float_dtype(const rill_node *n, int i, const char *param, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, i);
    if (t == RILL_HALF || t == RILL_FLOAT || t == RILL_DOUBLE) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Value passed to parameter '%s' has DataType %s not in list of allowed values: "
                    "float64, float32, float16 (node '%s', op '%s')",
                    param, rill_dtype_name(t), n->name, n->op->name);
    return false;
}

/* Input i is [..., r, c] (at least rank 2); square: r == c. */
static bool matrix_input(const rill_node *n, int i, bool square, rill_shape *out, rill_status *s)
{
    char sh[256];
    rill_shape x = rill__in_shape(n, i);
    *out = x;
    if (x.rank < 0) return true;
    if (x.rank < 2) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be at least rank 2 but is rank %d for '%s' (op: '%s') with "
                        "input shapes: %s.",
                        x.rank, n->name, n->op->name, rill__input_shapes(n, sh, sizeof sh));
        return false;
    }
    int64_t r = x.dims[x.rank - 2], c = x.dims[x.rank - 1];
    if (square && r >= 0 && c >= 0 && r != c) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Dimensions must be equal, but are %lld and %lld for '%s' (op: '%s') with "
                        "input shapes: %s.",
                        (long long)r, (long long)c, n->name, n->op->name,
                        rill__input_shapes(n, sh, sizeof sh));
        return false;
    }
    if (square && out->dims[x.rank - 1] < 0) out->dims[x.rank - 1] = r;
    if (square && out->dims[x.rank - 2] < 0) out->dims[x.rank - 2] = c;
    return true;
}

static bool dims_equal(const rill_node *n, int64_t a, int64_t b, int64_t *out, rill_status *s)
{
    if (a >= 0 && b >= 0 && a != b) {
        char sh[256];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Dimensions must be equal, but are %lld and %lld for '%s' (op: '%s') with "
                        "input shapes: %s.",
                        (long long)a, (long long)b, n->name, n->op->name,
                        rill__input_shapes(n, sh, sizeof sh));
        return false;
    }
    *out = a >= 0 ? a : b;
    return true;
}

/* The batch dims of a and b (all but the last two) must agree; out gets them. */
static bool same_batch(const rill_node *n, rill_shape a, rill_shape b, rill_shape *out,
                       rill_status *s)
{
    if (a.rank < 0 || b.rank < 0) {
        *out = a.rank >= 0 ? a : b;
        return true;
    }
    if (a.rank != b.rank) {
        char sh[256];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shapes must be equal rank, but are %d and %d for '%s' (op: '%s') with "
                        "input shapes: %s.",
                        a.rank, b.rank, n->name, n->op->name, rill__input_shapes(n, sh, sizeof sh));
        return false;
    }
    *out = a;
    for (int d = 0; d < a.rank - 2; d++)
        if (!dims_equal(n, a.dims[d], b.dims[d], &out->dims[d], s)) return false;
    return true;
}

static void linalg_shape(rill_node *n, rill_status *s)
{
    const char *op = n->op->name;
    bool two = n->ninputs == 2;
    if (!float_dtype(n, 0, two ? "matrix" : "input", s)) return;
    if (two && !rill__check_same_dtype(n, 1, "rhs", 0, "matrix", s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    bool band = strcmp(op, "MatrixBandPart") == 0, bmm = strcmp(op, "BatchMatMul") == 0;
    bool helper = strcmp(op, "CholeskyGrad") == 0;
    rill_shape a, b, out;
    if (!matrix_input(n, 0, !band && !bmm, &a, s)) return;
    if (!two) {
        if (strcmp(op, "MatrixDeterminant") == 0 && a.rank >= 0) {
            out = a;
            out.rank -= 2;
            n->out_shapes[0] = out;
        } else
            n->out_shapes[0] = a;
        return;
    }
    if (!matrix_input(n, 1, helper, &b, s) || !same_batch(n, a, b, &out, s)) return;
    if (out.rank < 0) {
        n->out_shapes[0] = out;
        return;
    }
    int r = out.rank;
    if (helper) { /* both [..., n, n] */
        if (!dims_equal(n, a.dims[r - 1], b.dims[r - 1], &out.dims[r - 1], s)) return;
        out.dims[r - 2] = out.dims[r - 1];
    } else if (bmm) {
        bool ax = rill__attr_bool(n, "adj_x", false), ay = rill__attr_bool(n, "adj_y", false);
        int64_t m = a.dims[r - (ax ? 1 : 2)], ka = a.dims[r - (ax ? 2 : 1)];
        int64_t kb = b.dims[r - (ay ? 1 : 2)], nn = b.dims[r - (ay ? 2 : 1)], k;
        if (!dims_equal(n, ka, kb, &k, s)) return;
        out.dims[r - 2] = m;
        out.dims[r - 1] = nn;
    } else { /* the solves: matrix [..., n, n], rhs [..., n, k] */
        if (!dims_equal(n, a.dims[r - 1], b.dims[r - 2], &out.dims[r - 2], s)) return;
        out.dims[r - 1] = b.dims[r - 1];
    }
    n->out_shapes[0] = out;
}

/* --- gradients --- */

static rill_output node_out(rill_node *n)
{
    return (rill_output){n, 0};
}

static rill_output bmm(rill_graph *g, rill_output x, rill_output y, bool ax, bool ay)
{
    rill_output in[] = {x, y};
    rill__attr a[] = {RILL__A_BOOL("adj_x", ax), RILL__A_BOOL("adj_y", ay)};
    return node_out(rill__node_create(g, "BatchMatMul", NULL, in, 2, a, 2));
}

static rill_output neg(rill_graph *g, rill_output x)
{
    return rill_neg(g, x, NULL);
}

static void bmm_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    bool ax = rill__attr_bool(n, "adj_x", false), ay = rill__attr_bool(n, "adj_y", false);
    rill_output x = n->inputs[0], y = n->inputs[1], dz = dy[0];
    if (!ax && !ay) {
        dx[0] = bmm(g, dz, y, false, true);
        dx[1] = bmm(g, x, dz, true, false);
    } else if (!ax && ay) {
        dx[0] = bmm(g, dz, y, false, false);
        dx[1] = bmm(g, dz, x, true, false);
    } else if (ax && !ay) {
        dx[0] = bmm(g, y, dz, false, true);
        dx[1] = bmm(g, x, dz, false, false);
    } else {
        dx[0] = bmm(g, y, dz, true, true);
        dx[1] = bmm(g, dz, x, true, true);
    }
}

static rill_output band(rill_graph *g, rill_output x, int64_t lo, int64_t up)
{
    rill__attr a[] = {RILL__A_INT("num_lower", lo), RILL__A_INT("num_upper", up)};
    return node_out(rill__node_create(g, "MatrixBandPart", NULL, &x, 1, a, 2));
}

static void band_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = band(g, dy[0], rill__attr_int(n, "num_lower", -1), rill__attr_int(n, "num_upper", -1));
}

static void inverse_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    bool adj = rill__attr_bool(n, "adjoint", false);
    rill_output y = node_out(n);
    rill_output t = bmm(g, dy[0], y, adj, !adj);
    dx[0] = neg(g, bmm(g, y, t, !adj, false));
}

static void determinant_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output a = n->inputs[0];
    rill__attr at[] = {RILL__A_BOOL("adjoint", true)};
    rill_output inv_t = node_out(rill__node_create(g, "MatrixInverse", NULL, &a, 1, at, 1));
    rill_output m = rill_mul(g, dy[0], node_out(n), NULL);
    m = rill_expand_dims(g, rill_expand_dims(g, m, -1, NULL), -1, NULL);
    dx[0] = rill_mul(g, m, inv_t, NULL);
}

static rill_output solve(rill_graph *g, const char *op, rill_output a, rill_output b,
                         const rill__attr *attrs, int nattrs)
{
    rill_output in[] = {a, b};
    return node_out(rill__node_create(g, op, NULL, in, 2, attrs, nattrs));
}

static void solve_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    bool tri = strcmp(n->op->name, "MatrixTriangularSolve") == 0;
    bool adj = rill__attr_bool(n, "adjoint", false), lower = rill__attr_bool(n, "lower", true);
    rill__attr a[] = {RILL__A_BOOL("adjoint", !adj), RILL__A_BOOL("lower", lower)};
    rill_output x = node_out(n);
    rill_output db = solve(g, n->op->name, n->inputs[0], dy[0], a, tri ? 2 : 1);
    rill_output da = adj ? neg(g, bmm(g, x, db, false, true)) : neg(g, bmm(g, db, x, false, true));
    if (tri) da = lower ? band(g, da, -1, 0) : band(g, da, 0, -1);
    dx[0] = da;
    dx[1] = db;
}

static void cholesky_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {node_out(n), dy[0]};
    dx[0] = node_out(rill__node_create(g, "CholeskyGrad", NULL, in, 2, NULL, 0));
}

#define LINALG(nm, nin, gr)                                                                        \
    {                                                                                              \
        .name = nm, .default_name = nm, .min_inputs = nin, .max_inputs = nin, .noutputs = 1,       \
        .shape = linalg_shape, .grad = gr                                                          \
    }
const rill__op_def rill__ops_linalg[] = {
    LINALG("BatchMatMul", 2, bmm_grad),
    LINALG("MatrixBandPart", 1, band_grad),
    LINALG("MatrixInverse", 1, inverse_grad),
    LINALG("MatrixDeterminant", 1, determinant_grad),
    LINALG("MatrixSolve", 2, solve_grad),
    LINALG("MatrixTriangularSolve", 2, solve_grad),
    LINALG("Cholesky", 1, cholesky_grad),
    LINALG("CholeskyGrad", 2, NULL),
    {0},
};
