/* rill/ops.h - the op builders.
 *
 * Each builder adds one node to g and returns its first output; shapes and dtypes are inferred at
 * build time and mismatches are recorded on the graph's sticky status (see graph.h). name may be
 * NULL for the op's default name. Binary elementwise ops broadcast as numpy does.
 */
#ifndef RILL_OPS_H
#define RILL_OPS_H

#include <rill/graph.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- constants and inputs --- */
/* A constant holding value (borrowed: the node keeps its own reference). */
rill_output rill_const(rill_graph *g, rill_tensor *value, const char *name);
rill_output rill_const_float(rill_graph *g, float v, const char *name);
rill_output rill_const_scalar(rill_graph *g, rill_dtype t, double v, const char *name);
/* A float32 constant with the given shape; data holds numel floats (copied). */
rill_output rill_const_floats(rill_graph *g, const float *data, const int64_t *dims, int rank,
                              const char *name);
/* A placeholder; shape may be rill_shape_unknown(). Running it without a feed is an error. */
rill_output rill_placeholder(rill_graph *g, rill_dtype t, rill_shape shape, const char *name);

/* --- identity and grouping --- */
rill_output rill_identity(rill_graph *g, rill_output x, const char *name);
rill_node *rill_no_op(rill_graph *g, const char *name);
/* A NoOp with a control input on each of deps (borrowed), as tf.group. */
rill_node *rill_group(rill_graph *g, rill_node *const *deps, int n, const char *name);

/* --- elementwise arithmetic (broadcasting) --- */
rill_output rill_add(rill_graph *g, rill_output x, rill_output y, const char *name);
rill_output rill_sub(rill_graph *g, rill_output x, rill_output y, const char *name);
rill_output rill_mul(rill_graph *g, rill_output x, rill_output y, const char *name);
rill_output rill_div(rill_graph *g, rill_output x, rill_output y, const char *name);
rill_output rill_maximum(rill_graph *g, rill_output x, rill_output y, const char *name);
rill_output rill_minimum(rill_graph *g, rill_output x, rill_output y, const char *name);
/* Sum of n tensors of one shape and dtype. */
rill_output rill_add_n(rill_graph *g, const rill_output *xs, int n, const char *name);

rill_output rill_neg(rill_graph *g, rill_output x, const char *name);
rill_output rill_square(rill_graph *g, rill_output x, const char *name);
rill_output rill_sqrt(rill_graph *g, rill_output x, const char *name);
rill_output rill_exp(rill_graph *g, rill_output x, const char *name);
rill_output rill_log(rill_graph *g, rill_output x, const char *name);

/* --- neural network --- */
rill_output rill_matmul(rill_graph *g, rill_output a, rill_output b, bool transpose_a,
                        bool transpose_b, const char *name);
rill_output rill_bias_add(rill_graph *g, rill_output value, rill_output bias, const char *name);
rill_output rill_relu(rill_graph *g, rill_output x, const char *name);
rill_output rill_sigmoid(rill_graph *g, rill_output x, const char *name);
rill_output rill_tanh(rill_graph *g, rill_output x, const char *name);
/* Softmax over the last axis. */
rill_output rill_softmax(rill_graph *g, rill_output logits, const char *name);
/* Per-row loss [batch] (output 0); output 1 is the backprop [batch, classes]. labels are
 * probabilities of the logits' shape. */
rill_output rill_softmax_cross_entropy_with_logits(rill_graph *g, rill_output labels,
                                                   rill_output logits, const char *name);
/* labels are int32 or int64 class indices [batch]; an index out of range is a run-time error. */
rill_output rill_sparse_softmax_cross_entropy_with_logits(rill_graph *g, rill_output labels,
                                                          rill_output logits, const char *name);

/* --- convolution and pooling (NHWC; float and double) ---
 * strides, ksize and dilations are 4 ints in TensorFlow's NHWC order ([1, sh, sw, 1]; copied);
 * padding is "SAME" (output ceil(in / stride), padded pad_total / 2 before and the rest after)
 * or "VALID" (no padding). Bad attrs or shapes are build errors with TensorFlow's texts. */
/* input [N, H, W, C], filter [KH, KW, C, F] -> [N, OH, OW, F]; dilations NULL: 1s. */
rill_output rill_conv2d(rill_graph *g, rill_output input, rill_output filter, const int strides[4],
                        const char *padding, const int *dilations, const char *name);
/* The gradient of Conv2D in its input: input_sizes is an int32 [4] vector (the input's shape). */
rill_output rill_conv2d_backprop_input(rill_graph *g, rill_output input_sizes, rill_output filter,
                                       rill_output out_backprop, const int strides[4],
                                       const char *padding, const int *dilations,
                                       const char *name);
/* The gradient of Conv2D in its filter: filter_sizes is an int32 [4] vector. */
rill_output rill_conv2d_backprop_filter(rill_graph *g, rill_output input, rill_output filter_sizes,
                                        rill_output out_backprop, const int strides[4],
                                        const char *padding, const int *dilations,
                                        const char *name);
/* Max and average over ksize windows; AvgPool divides by the number of in-bounds elements. */
rill_output rill_max_pool(rill_graph *g, rill_output x, const int ksize[4], const int strides[4],
                          const char *padding, const char *name);
rill_output rill_avg_pool(rill_graph *g, rill_output x, const int ksize[4], const int strides[4],
                          const char *padding, const char *name);
/* Their gradients: grad flows to the first maximum of each window (scanned row by row), or
 * evenly over its in-bounds elements. orig_input_shape is an int32 [4] vector. */
rill_output rill_max_pool_grad(rill_graph *g, rill_output orig_input, rill_output orig_output,
                               rill_output grad, const int ksize[4], const int strides[4],
                               const char *padding, const char *name);
rill_output rill_avg_pool_grad(rill_graph *g, rill_output orig_input_shape, rill_output grad,
                               const int ksize[4], const int strides[4], const char *padding,
                               const char *name);

/* --- reductions and shapes --- */
/* Reduces over axes (negative counts from the end); naxes < 0 reduces over all axes. */
rill_output rill_sum(rill_graph *g, rill_output x, const int *axes, int naxes, bool keep_dims,
                     const char *name);
rill_output rill_mean(rill_graph *g, rill_output x, const int *axes, int naxes, bool keep_dims,
                      const char *name);
/* The index (int64) of the largest element along axis (negative counts from the end); the
 * first one on ties. */
rill_output rill_argmax(rill_graph *g, rill_output x, int axis, const char *name);
/* x == y elementwise with numpy broadcasting (bool); not differentiable. */
rill_output rill_equal(rill_graph *g, rill_output x, rill_output y, const char *name);
/* Reshape to dims (one dim may be -1). */
rill_output rill_reshape(rill_graph *g, rill_output x, const int64_t *dims, int rank,
                         const char *name);
/* Reshape to the shape held by an int32/int64 vector tensor. */
rill_output rill_reshape_to(rill_graph *g, rill_output x, rill_output shape, const char *name);
rill_output rill_expand_dims(rill_graph *g, rill_output x, int axis, const char *name);
rill_output rill_cast(rill_graph *g, rill_output x, rill_dtype to, const char *name);
/* A tensor of shape `dims` (int32 vector) filled with the scalar `value`. */
rill_output rill_fill(rill_graph *g, rill_output dims, rill_output value, const char *name);
rill_output rill_zeros_like(rill_graph *g, rill_output x, const char *name);
rill_output rill_ones_like(rill_graph *g, rill_output x, const char *name);
/* x[begin:end:strides] per entry, as tf.strided_slice (numpy's basic indexing): bit i of each
 * mask applies to entry i. begin / end: ignore begin[i] / end[i] (the widest range for the
 * stride's sign); ellipsis: entry i stands for every dim not otherwise named (one at most; none:
 * one at the end); new_axis: insert a dim of 1; shrink_axis: take index begin[i] and drop the dim.
 * Negative indices count from the end; ranges are clamped as Python's. n entries (<= 16). */
typedef struct rill_slice_masks {
    int64_t begin, end, ellipsis, new_axis, shrink_axis;
} rill_slice_masks;
rill_output rill_strided_slice(rill_graph *g, rill_output x, const int64_t *begin,
                               const int64_t *end, const int64_t *strides, int n,
                               const rill_slice_masks *masks, const char *name);
/* The runtime shape of x as an int32 vector. */
rill_output rill_shape_of(rill_graph *g, rill_output x, const char *name);

/* --- random (seed 0 with no graph seed: nondeterministic, as TF) --- */
rill_output rill_random_normal(rill_graph *g, rill_dtype t, rill_shape shape, double mean,
                               double stddev, int64_t seed, const char *name);
rill_output rill_truncated_normal(rill_graph *g, rill_dtype t, rill_shape shape, double mean,
                                  double stddev, int64_t seed, const char *name);
rill_output rill_random_uniform(rill_graph *g, rill_dtype t, rill_shape shape, double minval,
                                double maxval, int64_t seed, const char *name);
/* TF's tf.nn.dropout(x, keep_prob, seed): x / keep_prob where floor(keep_prob + u) is 1 (u
 * uniform in [0, 1), drawn anew each step), 0 elsewhere. keep_prob is a scalar of x's type (a
 * placeholder lets one graph train with 0.5 and test with 1); outside (0, 1] a run fails. */
rill_output rill_dropout(rill_graph *g, rill_output x, rill_output keep_prob, int64_t seed,
                         const char *name);

/* --- variables --- */
typedef enum rill_init_kind {
    RILL_INIT_ZEROS,
    RILL_INIT_ONES,
    RILL_INIT_CONSTANT,
    RILL_INIT_RANDOM_NORMAL,
    RILL_INIT_TRUNCATED_NORMAL,
    RILL_INIT_RANDOM_UNIFORM,
} rill_init_kind;

typedef struct rill_initializer {
    rill_init_kind kind;
    double value;          /* CONSTANT */
    double mean, stddev;   /* RANDOM_NORMAL, TRUNCATED_NORMAL */
    double minval, maxval; /* RANDOM_UNIFORM */
    int64_t seed;          /* 0: derive from the graph seed */
} rill_initializer;

rill_initializer rill_zeros_initializer(void);
rill_initializer rill_ones_initializer(void);
rill_initializer rill_constant_initializer(double value);
rill_initializer rill_random_normal_initializer(double mean, double stddev, int64_t seed);
rill_initializer rill_truncated_normal_initializer(double mean, double stddev, int64_t seed);
rill_initializer rill_random_uniform_initializer(double minval, double maxval, int64_t seed);

/* A variable of fully defined shape with its initializer (an Assign named "<name>/Assign").
 * It joins the "variables" collection, and "trainable_variables" when trainable. */
rill_output rill_variable(rill_graph *g, rill_dtype t, rill_shape shape, rill_initializer init,
                          bool trainable, const char *name);
/* tf.Variable(initial_value): dtype and shape come from the value. */
rill_output rill_variable_from(rill_graph *g, rill_output initial_value, bool trainable,
                               const char *name);
/* tf.get_variable: inside variable scope prefix; with reuse off an existing name is
 * ALREADY_EXISTS, with reuse on a missing one is NOT_FOUND (TensorFlow's texts). */
rill_output rill_get_variable(rill_graph *g, const char *name, rill_dtype t, rill_shape shape,
                              rill_initializer init, bool trainable);
/* Variable scopes prefix get_variable names and set reuse; they also push a name scope. */
void rill_graph_push_variable_scope(rill_graph *g, const char *scope, bool reuse);
void rill_graph_pop_variable_scope(rill_graph *g);
/* The initializer Assign of a variable (NULL when var is not a variable). */
rill_node *rill_variable_initializer(rill_output var);
/* Makes init (an op of var's graph) var's initializer, as tf.train.init_from_checkpoint does;
 * false when var is not a variable. */
bool rill_variable_set_initializer(rill_output var, rill_node *init);
/* A group of every variable initializer, named "init" by default. */
rill_node *rill_global_variables_initializer(rill_graph *g, const char *name);
/* A local variable (tf.compat.v1 LOCAL_VARIABLES): per task, never saved, never shared through
 * a ps; initialised by rill_local_variables_initializer (the Supervisor's local_init_op). */
rill_output rill_local_variable(rill_graph *g, rill_dtype t, rill_shape shape,
                                rill_initializer init, const char *name);
rill_node *rill_local_variables_initializer(rill_graph *g, const char *name);
int rill_graph_local_variables(const rill_graph *g, rill_output *out, int cap);
/* Copies up to cap variables into out; returns the count. */
int rill_graph_global_variables(const rill_graph *g, rill_output *out, int cap);
int rill_graph_trainable_variables(const rill_graph *g, rill_output *out, int cap);

/* Stateful updates; var must be a variable output. Each returns the updated value. */
rill_output rill_assign(rill_graph *g, rill_output var, rill_output value, const char *name);
rill_output rill_assign_add(rill_graph *g, rill_output var, rill_output value, const char *name);
rill_output rill_assign_sub(rill_graph *g, rill_output var, rill_output value, const char *name);

/* The int64 scalar "global_step" variable (created on first call, not trainable). */
rill_output rill_train_get_or_create_global_step(rill_graph *g);
/* The global step if one exists, else {NULL, 0}. */
rill_output rill_train_get_global_step(const rill_graph *g);

#ifdef __cplusplus
}
#endif
#endif
