/* rill_ops.c - lists the ops this build of rill knows and, for each, the kernels registered per
 * device type and dtype (what the placer can choose from). `rill_ops MatMul` shows one op;
 * `rill_ops --version` prints the version and the code paths chosen for this CPU. */
#include <rill/rill.h>

#include "graph/graph_internal.h"
#include "kernels/kernel.h"

#include <stdio.h>
#include <string.h>

extern const rill__op_def rill__ops_array[], rill__ops_math[], rill__ops_nn[], rill__ops_state[];

int main(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: %s [OP...] | --version\nLists registered ops with their kernels; --version "
               "prints the library version, the CPU and the code paths chosen for it.\n",
               argv[0]);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        fputs(rill_runtime_info(), stdout);
        return 0;
    }
    const rill__op_def *tables[] = {rill__ops_array, rill__ops_math, rill__ops_nn, rill__ops_state};
    int shown = 0;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (const rill__op_def *d = tables[t]; d->name; d++) {
            bool want = argc < 2;
            for (int i = 1; i < argc; i++) want = want || strcmp(argv[i], d->name) == 0;
            if (!want) continue;
            char *k = rill__kernels_registered_for(d->name);
            char maxin[16];
            snprintf(maxin, sizeof maxin, "%d", d->max_inputs);
            printf("%s: inputs %d..%s, outputs %d%s%s\n%s", d->name, d->min_inputs,
                   d->max_inputs < 0 ? "n" : maxin, d->noutputs, d->stateful ? ", stateful" : "",
                   d->grad ? ", differentiable" : "", k);
            rill__free(k);
            shown++;
        }
    if (argc > 1 && shown == 0) {
        fprintf(stderr, "%s: no such op\n", argv[0]);
        return 1;
    }
    return 0;
}
