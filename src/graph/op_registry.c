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
extern const rill__op_def rill__ops_random[];
extern const rill__op_def rill__ops_image[];

const rill__op_def *rill__op_lookup(const char *name)
{
    static const rill__op_def *const tables[] = {rill__ops_array, rill__ops_math, rill__ops_nn, rill__ops_conv,
                                                 rill__ops_state, rill__ops_sendrecv, rill__ops_summary, rill__ops_data_flow,
                                                 rill__ops_io, rill__ops_slice, rill__ops_random, rill__ops_image, NULL};
    for (const rill__op_def *const *t = tables; *t; t++)
        for (const rill__op_def *d = *t; d->name; d++)
            if (strcmp(d->name, name) == 0) return d;
    return NULL;
}
