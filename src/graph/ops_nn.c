/* ops_nn.c - op definitions, builders and gradients for the neural-network ops: BiasAdd, Relu,
 * Sigmoid, Tanh, Softmax, SoftmaxCrossEntropyWithLogits and SparseSoftmaxCrossEntropyWithLogits,
 * plus the gradient ops they need (BiasAddGrad, ReluGrad, SigmoidGrad, TanhGrad).
 *
 * The ops keep TensorFlow's input order and argument names, so error texts read as TensorFlow's:
 * the cross-entropy ops take (features = logits, labels) although their public builders take
 * (labels, logits) as tf.nn does. Each cross-entropy op has two outputs, the per-row loss and the
 * backprop (softmax - labels) computed in the same pass; the logits gradient reuses the latter.
 * Shape functions check what is known at build time; the kernels check again at run time. */
#include "graph_internal.h"

/* The shape checks (TensorFlow's texts) are shared with the other op files: op_checks.c. */

/* Merges two shapes that must be equal; unknown rank yields to known. */
static bool merge_shapes(const rill_node *n, rill_shape a, rill_shape b, rill_shape *out,
                         rill_status *s)
{
    if (a.rank < 0 || b.rank < 0) {
        *out = a.rank < 0 ? b : a;
        return true;
    }
    if (a.rank != b.rank) {
        char shapes[512];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shapes must be equal rank, but are %d and %d for '%s' (op: '%s') with "
                        "input shapes: %s.",
                        a.rank, b.rank, n->name, n->op->name,
                        rill__input_shapes(n, shapes, sizeof shapes));
        return false;
    }
    *out = a;
    for (int d = 0; d < a.rank; d++)
        if (!rill__merge_dim(n, a.dims[d], b.dims[d], &out->dims[d], s)) return false;
    return true;
}

/* --- shape functions --- */

static void bias_add_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_float(n, 0, "value", true, s) ||
        !rill__check_same_dtype(n, 1, "bias", 0, "value", s) ||
        !rill__check_rank(n, 0, 2, true, s) || !rill__check_rank(n, 1, 1, false, s))
        return;
    rill_shape v = rill__in_shape(n, 0), b = rill__in_shape(n, 1);
    if (v.rank >= 2 && b.rank == 1 &&
        !rill__merge_dim(n, v.dims[v.rank - 1], b.dims[0], &v.dims[v.rank - 1], s))
        return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = v;
}

static void bias_add_grad_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_float(n, 0, "out_backprop", true, s) || !rill__check_rank(n, 0, 2, true, s))
        return;
    rill_shape v = rill__in_shape(n, 0);
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_vector(v.rank >= 2 ? v.dims[v.rank - 1] : -1);
}

static void unary_shape(rill_node *n, const char *param, rill_status *s)
{
    if (!rill__check_float(n, 0, param, true, s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static void relu_shape(rill_node *n, rill_status *s)
{
    unary_shape(n, "features", s);
}

static void x_shape(rill_node *n, rill_status *s)
{
    unary_shape(n, "x", s);
}

static void softmax_shape(rill_node *n, rill_status *s)
{
    if (rill__check_rank(n, 0, 1, true, s)) unary_shape(n, "logits", s);
}

/* Two same-shape, same-dtype inputs named a and b; the output has their shape. */
static void pair_shape(rill_node *n, const char *a, const char *b, rill_status *s)
{
    if (!rill__check_float(n, 0, a, true, s) || !rill__check_same_dtype(n, 1, b, 0, a, s)) return;
    rill_shape out;
    if (!merge_shapes(n, rill__in_shape(n, 0), rill__in_shape(n, 1), &out, s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = out;
}

static void relu_grad_shape(rill_node *n, rill_status *s)
{
    pair_shape(n, "gradients", "features", s);
}

static void y_dy_shape(rill_node *n, rill_status *s)
{
    pair_shape(n, "y", "dy", s);
}

static void softmax_ce_shape(rill_node *n, rill_status *s)
{
    /* features [batch, classes], labels [batch, classes] */
    if (!rill__check_float(n, 0, "features", true, s) ||
        !rill__check_same_dtype(n, 1, "labels", 0, "features", s) ||
        !rill__check_rank(n, 0, 2, false, s) || !rill__check_rank(n, 1, 2, false, s))
        return;
    rill_shape bp;
    if (!merge_shapes(n, rill__in_shape(n, 0), rill__in_shape(n, 1), &bp, s)) return;
    if (bp.rank < 0) bp = rill_shape_matrix(-1, -1);
    n->out_dtypes[0] = n->out_dtypes[1] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_vector(bp.dims[0]);
    n->out_shapes[1] = bp;
}

static void sparse_softmax_ce_shape(rill_node *n, rill_status *s)
{
    /* features [batch, classes], labels [batch] of int32 or int64 */
    if (!rill__check_float(n, 0, "features", true, s)) return;
    rill_dtype lt = rill__in_dtype(n, 1);
    if (lt != RILL_INT32 && lt != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value passed to parameter 'labels' has DataType %s not in list of "
                        "allowed values: int32, int64 (node '%s', op '%s')",
                        rill_dtype_name(lt), n->name, n->op->name);
        return;
    }
    if (!rill__check_rank(n, 0, 2, false, s) || !rill__check_rank(n, 1, 1, false, s)) return;
    rill_shape f = rill__in_shape(n, 0), l = rill__in_shape(n, 1);
    if (f.rank < 0) f = rill_shape_matrix(-1, -1);
    if (l.rank == 1 && !rill__merge_dim(n, f.dims[0], l.dims[0], &f.dims[0], s)) return;
    n->out_dtypes[0] = n->out_dtypes[1] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_vector(f.dims[0]);
    n->out_shapes[1] = f;
}

/* --- builders of the gradient ops (not public: only gradients make them) --- */

static rill_output out0(rill_node *n)
{
    return (rill_output){n, 0};
}

static rill_output op1(rill_graph *g, const char *op, rill_output x, const char *name)
{
    return out0(rill__node_create(g, op, name, &x, 1, NULL, 0));
}

static rill_output op2(rill_graph *g, const char *op, rill_output a, rill_output b,
                       const char *name)
{
    rill_output in[] = {a, b};
    return out0(rill__node_create(g, op, name, in, 2, NULL, 0));
}

/* --- gradients --- */

static void bias_add_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    (void)n;
    dx[0] = dy[0];
    dx[1] = op1(g, "BiasAddGrad", dy[0], NULL);
}

static void relu_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    /* The output is positive exactly where the input is; using it lets x be freed early. */
    dx[0] = op2(g, "ReluGrad", dy[0], out0(n), NULL);
}

/* ReluGrad(g, f) is linear in g with the same mask; its derivative in f is zero almost
 * everywhere (no gradient). */
static void relu_grad_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = op2(g, "ReluGrad", dy[0], n->inputs[1], NULL);
    dx[1] = (rill_output){NULL, 0};
}

static void sigmoid_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = op2(g, "SigmoidGrad", out0(n), dy[0], NULL);
}

static void tanh_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = op2(g, "TanhGrad", out0(n), dy[0], NULL);
}

/* SigmoidGrad(y, b) = b*y*(1-y): d/dy = d*b*(1-2y), d/db = SigmoidGrad(y, d). */
static void sigmoid_grad_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output y = n->inputs[0], b = n->inputs[1];
    rill_output gb = rill_mul(g, dy[0], b, NULL);
    rill_output two = rill__scalar_like(g, rill_output_dtype(y), 2.0);
    dx[0] = rill_sub(g, gb, rill_mul(g, rill_mul(g, two, gb, NULL), y, NULL), NULL);
    dx[1] = op2(g, "SigmoidGrad", y, dy[0], NULL);
}

/* TanhGrad(y, b) = b*(1-y^2): d/dy = -2*d*b*y, d/db = TanhGrad(y, d). */
static void tanh_grad_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output y = n->inputs[0], b = n->inputs[1];
    rill_output m2 = rill__scalar_like(g, rill_output_dtype(y), -2.0);
    dx[0] = rill_mul(g, rill_mul(g, rill_mul(g, dy[0], m2, NULL), b, NULL), y, NULL);
    dx[1] = op2(g, "TanhGrad", y, dy[0], NULL);
}

/* dx = (dy - sum(dy * y, last axis)) * y */
static void softmax_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output y = out0(n);
    int last = -1;
    rill_output dot = rill_sum(g, rill_mul(g, dy[0], y, NULL), &last, 1, true, NULL);
    dx[0] = rill_mul(g, rill_sub(g, dy[0], dot, NULL), y, NULL);
}

/* d loss_i / d logits_ij = backprop_ij (output 1), scaled per row by the incoming gradient. The
 * labels get no gradient; gradients reaching the backprop output itself are not propagated. */
static void softmax_ce_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = dx[1] = (rill_output){NULL, 0};
    if (!dy[0].node) return;
    dx[0] = rill_mul(g, rill_expand_dims(g, dy[0], -1, NULL), (rill_output){n, 1}, NULL);
}

/* --- ops that only execution graphs hold: what the partitioner fuses (runtime/partition.c) ---
 * Their inputs were checked as the ops they replace; these set the outputs. */

/* _FusedMatMul(a, b, bias): MatMul then BiasAdd, then the activation attr names ("" or
 * "Relu"). */
static void fused_matmul_shape(rill_node *n, rill_status *s)
{
    (void)s;
    rill_shape a = rill__in_shape(n, 0), b = rill__in_shape(n, 1);
    bool ta = rill__attr_bool(n, "transpose_a", false),
         tb = rill__attr_bool(n, "transpose_b", false);
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_matrix(a.rank == 2 ? a.dims[ta ? 1 : 0] : -1,
                                         b.rank == 2 ? b.dims[tb ? 0 : 1] : -1);
}

/* _FusedReluGradBiasAddGrad(gradients, features): ReluGrad's output and BiasAddGrad's of it. */
static void fused_relu_grad_bias_grad_shape(rill_node *n, rill_status *s)
{
    (void)s;
    rill_shape v = rill__in_shape(n, 0);
    n->out_dtypes[0] = n->out_dtypes[1] = rill__in_dtype(n, 0);
    n->out_shapes[0] = v;
    n->out_shapes[1] = rill_shape_vector(v.rank >= 1 ? v.dims[v.rank - 1] : -1);
}

/* _FusedElementwise(inputs...): a group of elementwise ops run as one program (graph_internal.h,
 * RILL__EW_*); output k has the group's shape ("shape"), its last dimension times the output's
 * number of parts. */
static void fused_elementwise_shape(rill_node *n, rill_status *s)
{
    const rill__attr *pa = rill__node_attr(n, "program"), *sa = rill__node_attr(n, "shape");
    const int64_t *p = pa && pa->kind == RILL__ATTR_INTS ? pa->v.ints.v : NULL;
    int np = p ? pa->v.ints.n : 0;
    if (!p || !sa || np < RILL__EW_HEADER || p[4] != n->noutputs || sa->v.shape.rank < 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "_FusedElementwise '%s': a malformed program",
                        n->name);
        return;
    }
    int64_t at = RILL__EW_HEADER + 4 * p[2] + 4 * p[3];
    for (int o = 0; o < n->noutputs; o++) {
        if (at >= np || p[at] < 1 || at + 1 + p[at] > np) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "_FusedElementwise '%s': a malformed program", n->name);
            return;
        }
        rill_shape sh = sa->v.shape;
        sh.dims[sh.rank - 1] *= p[at];
        n->out_dtypes[o] = RILL_FLOAT;
        n->out_shapes[o] = sh;
        at += 1 + p[at];
    }
}

const rill__op_def rill__ops_nn[] = {
    {.name = "_FusedMatMul",
     .default_name = "_FusedMatMul",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .shape = fused_matmul_shape},
    {.name = "_FusedReluGradBiasAddGrad",
     .default_name = "_FusedReluGradBiasAddGrad",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 2,
     .shape = fused_relu_grad_bias_grad_shape},
    {.name = "_FusedElementwise",
     .default_name = "_FusedElementwise",
     .min_inputs = 1,
     .max_inputs = -1,
     .noutputs = -1,
     .shape = fused_elementwise_shape},
    {.name = "BiasAdd",
     .default_name = "BiasAdd",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = bias_add_shape,
     .grad = bias_add_grad},
    {.name = "BiasAddGrad",
     .default_name = "BiasAddGrad",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = bias_add_grad_shape},
    {.name = "Relu",
     .default_name = "Relu",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = relu_shape,
     .grad = relu_grad},
    {.name = "ReluGrad",
     .default_name = "ReluGrad",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = relu_grad_shape,
     .grad = relu_grad_grad},
    {.name = "Sigmoid",
     .default_name = "Sigmoid",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = x_shape,
     .grad = sigmoid_grad},
    {.name = "SigmoidGrad",
     .default_name = "SigmoidGrad",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = y_dy_shape,
     .grad = sigmoid_grad_grad},
    {.name = "Tanh",
     .default_name = "Tanh",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = x_shape,
     .grad = tanh_grad},
    {.name = "TanhGrad",
     .default_name = "TanhGrad",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = y_dy_shape,
     .grad = tanh_grad_grad},
    {.name = "Softmax",
     .default_name = "Softmax",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = softmax_shape,
     .grad = softmax_grad},
    {.name = "SoftmaxCrossEntropyWithLogits",
     .default_name = "SoftmaxCrossEntropyWithLogits",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 2,
     .shape = softmax_ce_shape,
     .grad = softmax_ce_grad},
    {.name = "SparseSoftmaxCrossEntropyWithLogits",
     .default_name = "SparseSoftmaxCrossEntropyWithLogits",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 2,
     .shape = sparse_softmax_ce_shape,
     .grad = softmax_ce_grad},
    {0},
};

/* --- public builders --- */

rill_output rill_bias_add(rill_graph *g, rill_output value, rill_output bias, const char *name)
{
    return op2(g, "BiasAdd", value, bias, name);
}

rill_output rill_relu(rill_graph *g, rill_output x, const char *name)
{
    return op1(g, "Relu", x, name);
}

rill_output rill_sigmoid(rill_graph *g, rill_output x, const char *name)
{
    return op1(g, "Sigmoid", x, name);
}

rill_output rill_tanh(rill_graph *g, rill_output x, const char *name)
{
    return op1(g, "Tanh", x, name);
}

rill_output rill_softmax(rill_graph *g, rill_output logits, const char *name)
{
    return op1(g, "Softmax", logits, name);
}

rill_output rill_softmax_cross_entropy_with_logits(rill_graph *g, rill_output labels,
                                                   rill_output logits, const char *name)
{
    return op2(g, "SoftmaxCrossEntropyWithLogits", logits, labels, name);
}

rill_output rill_sparse_softmax_cross_entropy_with_logits(rill_graph *g, rill_output labels,
                                                          rill_output logits, const char *name)
{
    return op2(g, "SparseSoftmaxCrossEntropyWithLogits", logits, labels, name);
}
