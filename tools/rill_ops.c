/* rill_ops.c - lists every op this build of rill knows (the registry's own list, rill__op_each)
 * and, for each, the kernels registered per device type and dtype (what the placer can choose
 * from). `rill_ops MatMul` shows one op; `rill_ops --version` prints the version and the code paths
 * chosen for this CPU. */
#include <rill/rill.h>

#include "graph/graph_internal.h"
#include "kernels/kernel.h"

#include <stdio.h>
#include <string.h>

typedef struct listing {
    int argc;
    char **argv;
    int shown;
} listing;

/* Prints op d and its kernels when no names were given or d is one of them. */
static void show(const rill__op_def *d, void *arg)
{
    listing *l = arg;
    bool want = l->argc < 2;
    for (int i = 1; i < l->argc; i++) want = want || strcmp(l->argv[i], d->name) == 0;
    if (!want) return;
    char *k = rill__kernels_registered_for(d->name);
    char maxin[16];
    snprintf(maxin, sizeof maxin, "%d", d->max_inputs);
    printf("%s: inputs %d..%s, outputs %d%s%s\n%s", d->name, d->min_inputs,
           d->max_inputs < 0 ? "n" : maxin, d->noutputs, d->stateful ? ", stateful" : "",
           d->grad ? ", differentiable" : "", k);
    rill__free(k);
    l->shown++;
}

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
    listing l = {argc, argv, 0};
    int total = rill__op_each(show, &l);
    if (argc < 2) printf("%d ops\n", total);
    if (argc > 1 && l.shown == 0) {
        fprintf(stderr, "%s: no such op\n", argv[0]);
        return 1;
    }
    return 0;
}
