/* ops_norm.c - op definitions and gradients of the normalisations: LRN and LRNGrad (local
 * response normalisation across channels), FusedBatchNormV3 and FusedBatchNormGradV3 (NHWC).
 *
 * LRN's attrs are TensorFlow's: depth_radius (5), bias (1), alpha (1), beta (0.5); the input is
 * 4-D and each element is divided by (bias + alpha * sum of squares over the 2 r + 1 channels
 * around it) ^ beta. LRNGrad(input_grads, input_image, output_image) is its gradient.
 *
 * FusedBatchNormV3(x, scale, offset, mean, variance), attrs epsilon (0.0001),
 * exponential_avg_factor (1), is_training (true), data_format "NHWC": six outputs, y,
 * batch_mean, batch_variance (the running statistics: in training the batch's mean and its
 * Bessel-corrected variance, mixed into the given ones by exponential_avg_factor when it is not
 * 1; in inference the given ones), reserve_space_1 and _2 (the batch's mean and biased variance,
 * or the given ones in inference: what the gradient needs) and reserve_space_3 (empty). In
 * training with exponential_avg_factor 1, mean and variance may be empty (tf.nn passes []).
 * FusedBatchNormGradV3(y_backprop, x, scale, reserve_space_1, reserve_space_2,
 * reserve_space_3) gives x_backprop, scale_backprop, offset_backprop and two empty outputs.
 * Kernels: src/kernels/cpu/cpu_norm.c. */
#include "graph_internal.h"

#include <string.h>

static bool check_nhwc(const rill_node *n, rill_status *s)
{
    const rill__attr *df = rill__node_attr(n, "data_format");
    if (!df || (df->kind == RILL__ATTR_STRING && strcmp(df->v.s, "NHWC") == 0)) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "rill runs %s in data_format NHWC only, got %s (node '%s')", n->op->name,
                    df->kind == RILL__ATTR_STRING ? df->v.s : "?", n->name);
    return false;
}

static void lrn_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_float(n, 0, "input", true, s) || !rill__check_rank(n, 0, 4, false, s)) return;
    int64_t r = rill__attr_int(n, "depth_radius", 5);
    if (r < 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "depth_radius = %lld is negative (node '%s')",
                        (long long)r, n->name);
        return;
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
    if (n->out_shapes[0].rank < 0)
        n->out_shapes[0] = rill_shape_make(4, (int64_t[4]){-1, -1, -1, -1});
}

static void lrn_grad_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_float(n, 0, "input_grads", true, s) ||
        !rill__check_same_dtype(n, 1, "input_image", 0, "input_grads", s) ||
        !rill__check_same_dtype(n, 2, "output_image", 0, "input_grads", s))
        return;
    for (int i = 0; i < 3; i++)
        if (!rill__check_rank(n, i, 4, false, s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 1);
    if (n->out_shapes[0].rank < 0) n->out_shapes[0] = rill__in_shape(n, 0);
    if (n->out_shapes[0].rank < 0)
        n->out_shapes[0] = rill_shape_make(4, (int64_t[4]){-1, -1, -1, -1});
}

/* Input i is a vector (of the channels' count where that is known: *c merges it). Empty is
 * allowed when may_be_empty. */
static bool check_channels(const rill_node *n, int i, const char *what, int64_t *c,
                           bool may_be_empty, rill_status *s)
{
    if (!rill__check_rank(n, i, 1, false, s)) return false;
    rill_shape sh = rill__in_shape(n, i);
    if (sh.rank != 1 || sh.dims[0] < 0) return true;
    if (may_be_empty && sh.dims[0] == 0) return true;
    if (*c >= 0 && sh.dims[0] != *c) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s must have the same number of elements as the channels of x, got %lld "
                        "and %lld (node '%s')",
                        what, (long long)sh.dims[0], (long long)*c, n->name);
        return false;
    }
    *c = sh.dims[0];
    return true;
}

static void fused_bn_shape(rill_node *n, rill_status *s)
{
    static const char *const names[] = {"x", "scale", "offset", "mean", "variance"};
    if (!rill__check_float(n, 0, "x", true, s) || !rill__check_rank(n, 0, 4, false, s) ||
        !check_nhwc(n, s))
        return;
    rill_dtype u = rill__in_dtype(n, 0) == RILL_DOUBLE ? RILL_DOUBLE : RILL_FLOAT;
    bool training = rill__attr_bool(n, "is_training", true);
    bool avg = rill__attr_float(n, "exponential_avg_factor", 1.0) != 1.0;
    rill_shape x = rill__in_shape(n, 0);
    int64_t c = x.rank == 4 ? x.dims[3] : -1;
    for (int i = 1; i < 5; i++) {
        if (rill__in_dtype(n, i) != u) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Input '%s' of '%s' Op has type %s that does not match expected type "
                            "of %s.",
                            names[i], n->op->name, rill_dtype_name(rill__in_dtype(n, i)),
                            rill_dtype_name(u));
            return;
        }
        if (!check_channels(n, i, names[i], &c, i >= 3 && training && !avg, s)) return;
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = x.rank == 4 ? x : rill_shape_make(4, (int64_t[4]){-1, -1, -1, c});
    n->out_shapes[0].dims[3] = c;
    for (int i = 1; i < 5; i++) {
        n->out_dtypes[i] = u;
        n->out_shapes[i] = rill_shape_vector(c);
    }
    n->out_dtypes[5] = u;
    n->out_shapes[5] = rill_shape_vector(0);
}

static void fused_bn_grad_shape(rill_node *n, rill_status *s)
{
    static const char *const names[] = {
        "y_backprop", "x", "scale", "reserve_space_1", "reserve_space_2", "reserve_space_3"};
    if (!rill__check_float(n, 0, "y_backprop", true, s) ||
        !rill__check_same_dtype(n, 1, "x", 0, "y_backprop", s) ||
        !rill__check_rank(n, 0, 4, false, s) || !rill__check_rank(n, 1, 4, false, s) ||
        !check_nhwc(n, s))
        return;
    rill_dtype u = rill__in_dtype(n, 0) == RILL_DOUBLE ? RILL_DOUBLE : RILL_FLOAT;
    rill_shape x = rill__in_shape(n, 1);
    if (x.rank < 0) x = rill__in_shape(n, 0);
    int64_t c = x.rank == 4 ? x.dims[3] : -1;
    for (int i = 2; i < 6; i++) {
        if (rill__in_dtype(n, i) != u) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Input '%s' of '%s' Op has type %s that does not match expected type "
                            "of %s.",
                            names[i], n->op->name, rill_dtype_name(rill__in_dtype(n, i)),
                            rill_dtype_name(u));
            return;
        }
        if (i < 5 && !check_channels(n, i, names[i], &c, false, s)) return;
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = x.rank == 4 ? x : rill_shape_make(4, (int64_t[4]){-1, -1, -1, c});
    for (int i = 1; i < 5; i++) n->out_dtypes[i] = u;
    n->out_shapes[1] = n->out_shapes[2] = rill_shape_vector(c);
    n->out_shapes[3] = n->out_shapes[4] = rill_shape_vector(0);
}

/* --- gradients --- */

/* The attrs named in names that n has, into a; returns how many. */
static int copy_attrs(const rill_node *n, const char *const *names, int nn, rill__attr *a)
{
    int na = 0;
    for (int i = 0; i < nn; i++) {
        const rill__attr *x = rill__node_attr(n, names[i]);
        if (x) a[na++] = *x;
    }
    return na;
}

static void lrn_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    static const char *const names[] = {"depth_radius", "bias", "alpha", "beta"};
    rill__attr a[4];
    int na = copy_attrs(n, names, 4, a);
    rill_output in[] = {dy[0], n->inputs[0], {n, 0}};
    dx[0] = (rill_output){rill__node_create(g, "LRNGrad", NULL, in, 3, a, na), 0};
}

/* dx, dscale, doffset from FusedBatchNormGradV3 over the reserve spaces (in inference they are
 * the given mean and variance); mean and variance get none, as in TensorFlow. */
static void fused_bn_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    static const char *const names[] = {"epsilon", "data_format", "is_training"};
    dx[0] = dx[1] = dx[2] = dx[3] = dx[4] = (rill_output){NULL, 0};
    if (!dy[0].node) return;
    rill__attr a[4];
    int na = copy_attrs(n, names, 3, a);
    a[na++] = RILL__A_TYPE("T", rill_output_dtype(n->inputs[0]));
    rill_output in[] = {dy[0], n->inputs[0], n->inputs[1], {n, 3}, {n, 4}, {n, 5}};
    rill_node *gn = rill__node_create(g, "FusedBatchNormGradV3", NULL, in, 6, a, na);
    dx[0] = (rill_output){gn, 0};
    dx[1] = (rill_output){gn, 1};
    dx[2] = (rill_output){gn, 2};
}

const rill__op_def rill__ops_norm[] = {
    {.name = "LRN",
     .default_name = "LRN",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = lrn_shape,
     .grad = lrn_grad},
    {.name = "LRNGrad",
     .default_name = "LRNGrad",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .shape = lrn_grad_shape},
    {.name = "FusedBatchNormV3",
     .default_name = "FusedBatchNormV3",
     .min_inputs = 5,
     .max_inputs = 5,
     .noutputs = 6,
     .shape = fused_bn_shape,
     .grad = fused_bn_grad},
    {.name = "FusedBatchNormGradV3",
     .default_name = "FusedBatchNormGradV3",
     .min_inputs = 6,
     .max_inputs = 6,
     .noutputs = 5,
     .shape = fused_bn_grad_shape},
    {0},
};
