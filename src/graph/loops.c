/* loops.c - which nodes belong to a while loop (ops_control_flow.c), for the executor's frames
 * (runtime/frame.c) and the loop's gradient (gradients_loop.c): what the loop's Enters reach
 * along data and control edges before its Exits leave it. */
#include "graph_internal.h"

#include <string.h>

static bool is_op(const rill_node *n, const char *op)
{
    return strcmp(n->op->name, op) == 0;
}

const char *rill__frame_name(const rill_node *n)
{
    const rill__attr *a = rill__node_attr(n, "frame_name");
    return a && a->kind == RILL__ATTR_STRING ? a->v.s : "";
}

bool rill__loop_members(rill_graph *g, const char *frame, int *depth, rill_status *s)
{
    int nn = rill_graph_num_nodes(g);
    rill__consumers cons;
    rill__consumers_build(g, &cons);
    /* control successors, as an index like cons */
    int *cstart = rill__calloc((size_t)nn + 2, sizeof *cstart);
    RILL_CHECK_ALLOC(cstart);
    for (int i = 0; i < nn; i++) {
        rill_node *n = rill_graph_node(g, i);
        for (int k = 0; k < n->ncontrol; k++) cstart[n->control_inputs[k]->id + 1]++;
    }
    for (int i = 0; i < nn; i++) cstart[i + 1] += cstart[i];
    int *cnode = rill__malloc(((size_t)cstart[nn] + 1) * sizeof *cnode);
    int *cfill = rill__calloc((size_t)nn + 1, sizeof *cfill);
    int *stack = rill__malloc(((size_t)nn + 1) * 2 * sizeof *stack);
    RILL_CHECK_ALLOC(cnode);
    RILL_CHECK_ALLOC(cfill);
    RILL_CHECK_ALLOC(stack);
    for (int i = 0; i < nn; i++) {
        rill_node *n = rill_graph_node(g, i);
        for (int k = 0; k < n->ncontrol; k++) {
            int d = n->control_inputs[k]->id;
            cnode[cstart[d] + cfill[d]++] = i;
        }
    }
    int ns = 0;
    for (int i = 0; i < nn; i++) {
        depth[i] = 0;
        rill_node *n = rill_graph_node(g, i);
        if (is_op(n, "Enter") && strcmp(rill__frame_name(n), frame) == 0)
            depth[i] = 1, stack[ns++] = i;
    }
    bool ok = true;
    while (ns && ok) {
        int id = stack[--ns];
        rill_node *n = rill_graph_node(g, id);
        int d = depth[id];
        if (is_op(n, "Exit") && d == 1) continue; /* leaves the loop */
        int next = is_op(n, "Exit") ? d - 1 : d;
        for (int pass = 0; pass < 2 && ok; pass++) {
            int b = pass ? cstart[id] : cons.start[id], e = pass ? cstart[id + 1] : cons.start[id + 1];
            for (int k = b; k < e; k++) {
                int c = pass ? cnode[k] : cons.node[k]->id;
                rill_node *cn = rill_graph_node(g, c);
                int cd = next + (is_op(cn, "Enter") ? 1 : 0);
                if (depth[c] == cd) continue;
                if (depth[c] != 0) {
                    rill_status_set(s, RILL_INVALID_ARGUMENT,
                                    "'%s' is inside while loop '%s' at two depths (%d and %d): "
                                    "a loop's ops must be made inside its body",
                                    cn->name, frame, depth[c], cd);
                    ok = false;
                    break;
                }
                depth[c] = cd;
                stack[ns++] = c;
            }
        }
    }
    rill__free(cstart);
    rill__free(cnode);
    rill__free(cfill);
    rill__free(stack);
    rill__consumers_free(&cons);
    return ok;
}
