/* ops_permute.h - the shape rule of Roll and ReverseSequence (ops_permute.c), shared with their
 * kernels (src/kernels/cpu/cpu_permute.c), which apply it to the real shapes at run time. */
#ifndef RILL_GRAPH_OPS_PERMUTE_H
#define RILL_GRAPH_OPS_PERMUTE_H

#include "graph_internal.h"

/* Roll (attrs shift, axis) or ReverseSequence (attrs seq_dim, batch_dim; len: seq_lengths'
 * shape) on an input of shape x: false with s set (TF's text) when they do not fit. */
bool rill__permute_check(const rill_node *n, rill_shape x, rill_shape len, rill_status *s);

#endif
