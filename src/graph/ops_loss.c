/* ops_loss.c - op definitions and gradients of L2Loss, LogSoftmax and
 * SigmoidCrossEntropyWithLogits.
 *
 * L2Loss(t) = sum(t^2) / 2, a scalar; LogSoftmax(logits) over the last axis, as TensorFlow's
 * ops. SigmoidCrossEntropyWithLogits(logits, labels) is rill's own fused op (TensorFlow composes
 * tf.nn.sigmoid_cross_entropy_with_logits in Python from Relu, Abs, Exp, Log1p and Select, which
 * rill does not all have): max(x, 0) - x z + log(1 + exp(-|x|)) per element, the numerically
 * stable form TF's Python computes, with its gradient sigmoid(x) - z in the logits and -x in the
 * labels. Kernels: src/kernels/cpu/cpu_loss.c, src/kernels/opencl/cl_loss.c. */
#include "graph_internal.h"

static void l2_loss_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_float(n, 0, "t", true, s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_scalar();
}

static void log_softmax_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_float(n, 0, "logits", true, s) || !rill__check_rank(n, 0, 1, true, s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static void sigmoid_ce_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_float(n, 0, "logits", true, s) ||
        !rill__check_same_dtype(n, 1, "labels", 0, "logits", s))
        return;
    rill_shape a = rill__in_shape(n, 0), b = rill__in_shape(n, 1), out = a;
    if (a.rank >= 0 && b.rank >= 0) {
        bool ok = a.rank == b.rank;
        for (int d = 0; ok && d < a.rank; d++) {
            if (a.dims[d] >= 0 && b.dims[d] >= 0 && a.dims[d] != b.dims[d]) ok = false;
            if (out.dims[d] < 0) out.dims[d] = b.dims[d];
        }
        if (!ok) {
            char sa[96], sb[96];
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "logits and labels must have the same shape (%s vs %s)",
                            rill_shape_str(&a, sa, sizeof sa), rill_shape_str(&b, sb, sizeof sb));
            return;
        }
    } else if (a.rank < 0) {
        out = b;
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = out;
}

/* dx = x * dy (dy a scalar). */
static void l2_loss_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = rill_mul(g, n->inputs[0], dy[0], NULL);
}

/* dx = dy - softmax * sum(dy, last axis); softmax = exp(y). */
static void log_softmax_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    int last = -1;
    rill_output sm = rill_exp(g, (rill_output){n, 0}, NULL);
    rill_output s = rill_sum(g, dy[0], &last, 1, true, NULL);
    dx[0] = rill_sub(g, dy[0], rill_mul(g, sm, s, NULL), NULL);
}

static void sigmoid_ce_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output x = n->inputs[0], z = n->inputs[1];
    dx[0] = rill_mul(g, dy[0], rill_sub(g, rill_sigmoid(g, x, NULL), z, NULL), NULL);
    dx[1] = rill_mul(g, dy[0], rill_neg(g, x, NULL), NULL);
}

const rill__op_def rill__ops_loss[] = {
    {.name = "L2Loss",
     .default_name = "L2Loss",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = l2_loss_shape,
     .grad = l2_loss_grad},
    {.name = "LogSoftmax",
     .default_name = "LogSoftmax",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = log_softmax_shape,
     .grad = log_softmax_grad},
    {.name = "SigmoidCrossEntropyWithLogits",
     .default_name = "logistic_loss",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = sigmoid_ce_shape,
     .grad = sigmoid_ce_grad},
    {0},
};
