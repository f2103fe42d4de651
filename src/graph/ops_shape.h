/* ops_shape.h - the shape rules of the shape ops (ops_shape.c), shared with their kernels
 * (src/kernels/cpu/cpu_shape.c, opencl/cl_shape.c), which apply them to the real shapes at run
 * time. Each sets s (TensorFlow's text) and returns false when the rule fails; -1 dims and
 * unknown ranks pass and give -1 / unknown results. */
#ifndef RILL_GRAPH_OPS_SHAPE_H
#define RILL_GRAPH_OPS_SHAPE_H

#include "graph_internal.h"

/* The ints attr `name` (NULL when absent or of another kind), its length in *cnt. */
const int64_t *rill__ints_attr(const rill_node *n, const char *name, int *cnt);

/* Transpose, Tile, TileGrad, Pad, MirrorPad, MirrorPadGrad, ReverseV2, BroadcastTo, Squeeze:
 * the result's shape for input shape in (the gradients: the forward result's). */
bool rill__shape_op_out(const rill_node *n, rill_shape in, rill_shape *out, rill_status *s);

/* ConcatV2 (axis attr) of k pieces: the joined shape; runtime picks the kernels' texts
 * ("ConcatOp : ..."). Pack passes its inputs' shapes with the new dim of 1 already in. */
bool rill__concat_rule(const rill_node *n, const rill_shape *shapes, int k, int64_t axis,
                       bool runtime, rill_shape *out, rill_status *s);

/* Split, SplitV, Unpack, ConcatGrad: the k = num_outputs pieces' shapes of splitting in along
 * the node's axis (Unpack's pieces keep the dim: the kernel drops it); like: ConcatGrad's
 * inputs 1.. shapes. */
bool rill__split_rule(const rill_node *n, rill_shape in, const rill_shape *like, int k,
                      rill_shape *outs, rill_status *s);

/* Range: start, limit, delta from the attrs or the three scalar inputs (in: their values at run
 * time; NULL at build time: Consts only); false when one is not known. */
bool rill__range_values(const rill_node *n, const rill_tensor *const *in, double *v, bool *known);
/* Range's element count for v = {start, limit, delta} (TF's texts when they do not make one). */
bool rill__range_count(const rill_node *n, const double *v, int64_t *count, rill_status *s);

#endif
