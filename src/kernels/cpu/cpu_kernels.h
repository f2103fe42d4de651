/* cpu_kernels.h - CPU kernel functions that other backends reuse.
 *
 * TensorFlow keeps int32 tensors (and most int64 ones) in host memory even on a GPU, running the
 * CPU kernel there; rill's GPU backends register these functions for their integer dtypes with
 * every input and output in host memory. Reshape, ExpandDims, Identity and Shape read only
 * metadata (Reshape's shape input is host memory), so they serve device tensors unchanged:
 * the output is a view of the input's buffer, wherever it lives. */
#ifndef RILL_KERNELS_CPU_KERNELS_H
#define RILL_KERNELS_CPU_KERNELS_H

#include "../kernel.h"

/* cpu_math.c */
void rill__cpu_add(rill__kctx *ctx);
void rill__cpu_sub(rill__kctx *ctx);
void rill__cpu_mul(rill__kctx *ctx);
void rill__cpu_div(rill__kctx *ctx);
void rill__cpu_maximum(rill__kctx *ctx);
void rill__cpu_minimum(rill__kctx *ctx);
void rill__cpu_neg(rill__kctx *ctx);
void rill__cpu_square(rill__kctx *ctx);
void rill__cpu_add_n(rill__kctx *ctx);
void rill__cpu_reduce(rill__kctx *ctx); /* Sum and Mean */
void rill__cpu_sum_to_shape(rill__kctx *ctx);
void rill__cpu_reduce_grad(rill__kctx *ctx);
void rill__cpu_maximum_grad(rill__kctx *ctx);

/* cpu_array.c */
void rill__cpu_identity(rill__kctx *ctx);
void rill__cpu_reshape(rill__kctx *ctx);
void rill__cpu_expand_dims(rill__kctx *ctx);
void rill__cpu_cast(rill__kctx *ctx);
void rill__cpu_fill(rill__kctx *ctx);
void rill__cpu_zeros_like(rill__kctx *ctx);
void rill__cpu_ones_like(rill__kctx *ctx);
void rill__cpu_shape(rill__kctx *ctx);

/* cpu_state.c: variables and assignments, any dtype (the GPU backends register them for int64
 * in host memory, as TensorFlow keeps the global step). */
void rill__cpu_variable(rill__kctx *ctx);
void rill__cpu_assign(rill__kctx *ctx);
void rill__cpu_assign_add(rill__kctx *ctx);
void rill__cpu_assign_sub(rill__kctx *ctx);

#endif
