/* op_registry.c - the registry of op definitions. Each op file exports a table terminated by an
 * entry with a NULL name; lookup scans them (op definitions are looked up at build time and plan
 * time only, never per step). */
#include "graph_internal.h"

#include <string.h>

extern const rill__op_def rill__ops_array[];
extern const rill__op_def rill__ops_math[];
extern const rill__op_def rill__ops_nn[];
extern const rill__op_def rill__ops_conv[];
extern const rill__op_def rill__ops_state[];
extern const rill__op_def rill__ops_sendrecv[];
extern const rill__op_def rill__ops_summary[];
extern const rill__op_def rill__ops_data_flow[];
extern const rill__op_def rill__ops_io[];
extern const rill__op_def rill__ops_slice[];
extern const rill__op_def rill__ops_dataset[];
extern const rill__op_def rill__ops_dataset2[];
extern const rill__op_def rill__ops_reduce[];
extern const rill__op_def rill__ops_shape[];
extern const rill__op_def rill__ops_elementwise[];
extern const rill__op_def rill__ops_apply[];
extern const rill__op_def rill__ops_loss[];
extern const rill__op_def rill__ops_norm[];
extern const rill__op_def rill__ops_depthwise[];
extern const rill__op_def rill__ops_index[];
extern const rill__op_def rill__ops_sparse_apply[];
extern const rill__op_def rill__ops_queue[];
extern const rill__op_def rill__ops_random[];
extern const rill__op_def rill__ops_image[];
extern const rill__op_def rill__ops_pool_argmax[];
extern const rill__op_def rill__ops_dilation[];
extern const rill__op_def rill__ops_segment[];
extern const rill__op_def rill__ops_search[];
extern const rill__op_def rill__ops_permute[];
extern const rill__op_def rill__ops_linalg[];
extern const rill__op_def rill__ops_sparse[];
extern const rill__op_def rill__ops_conv3d[];
extern const rill__op_def rill__ops_adagrad_da[];
extern const rill__op_def rill__ops_string[];
extern const rill__op_def rill__ops_check[];
extern const rill__op_def rill__ops_control_flow[];
extern const rill__op_def rill__ops_tensor_array[];

/* One table a line (a new op file appends its own). */
static const rill__op_def *const *op_tables(void)
{
    // clang-format off
    static const rill__op_def *const tables[] = {
        rill__ops_array,
        rill__ops_math,
        rill__ops_nn,
        rill__ops_conv,
        rill__ops_state,
        rill__ops_sendrecv,
        rill__ops_control_flow,
        rill__ops_tensor_array,
        rill__ops_summary,
        rill__ops_data_flow,
        rill__ops_io,
        rill__ops_slice,
        rill__ops_dataset,
        rill__ops_reduce,
        rill__ops_shape,
        rill__ops_elementwise,
        rill__ops_apply,
        rill__ops_loss,
        rill__ops_norm,
        rill__ops_depthwise,
        rill__ops_index,
        rill__ops_sparse_apply,
        rill__ops_queue,
        rill__ops_random,
        rill__ops_image,
        rill__ops_pool_argmax,
        rill__ops_dilation,
        rill__ops_segment,
        rill__ops_search,
        rill__ops_permute,
        rill__ops_linalg,
        rill__ops_sparse,
        rill__ops_conv3d,
        rill__ops_adagrad_da,
        rill__ops_string,
        rill__ops_dataset2,
        rill__ops_check,
        NULL,
    };
    // clang-format on
    return tables;
}

const rill__op_def *rill__op_lookup(const char *name)
{
    for (const rill__op_def *const *t = op_tables(); *t; t++)
        for (const rill__op_def *d = *t; d->name; d++)
            if (strcmp(d->name, name) == 0) return d;
    return NULL;
}

int rill__op_each(void (*fn)(const rill__op_def *def, void *arg), void *arg)
{
    int n = 0;
    for (const rill__op_def *const *t = op_tables(); *t; t++)
        for (const rill__op_def *d = *t; d->name; d++, n++)
            if (fn) fn(d, arg);
    return n;
}
