/* ops_dataset.h - shape helpers shared by tf.data's op definitions (ops_dataset.c, ops_dataset2.c).
 */
#ifndef RILL_GRAPH_OPS_DATASET_H
#define RILL_GRAPH_OPS_DATASET_H

#include "graph_internal.h"

/* Input i is a scalar of dtype want (TF's messages), else s is set. */
bool rill__ds_check_scalar(rill_node *n, int i, rill_dtype want, const char *what, rill_status *s);
/* Output 0: a dataset handle (an int64 scalar). */
void rill__ds_handle_out(rill_node *n);
/* The node names its function: f_args and f_outputs string tensors. */
bool rill__ds_check_fn(rill_node *n, rill_status *s);
/* The outputs are an element's components, from output_types / output_shapes / num_outputs (see
 * ops_dataset.c's file comment). */
void rill__ds_element_outputs(rill_node *n, rill_status *s);

#endif
