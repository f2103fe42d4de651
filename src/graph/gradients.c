/* gradients.c - symbolic reverse-mode differentiation (tf.gradients).
 *
 * 1. Mark the nodes on a data path from some x to some y (forward reach from xs intersected
 *    with backward reach from ys).
 * 2. Seed each y with its given gradient or ones.
 * 3. Walk marked nodes in reverse creation order (data edges always point to older nodes, so
 *    this is a reverse topological order). For each node with incoming gradients, sum the
 *    partial gradients of each output (AddN) and call the op's gradient function, which builds
 *    the gradient nodes with the public builders; hand each input's part back to its producer.
 * Integer tensors carry no gradient; ops without a gradient function stop the flow (TF's
 * NotDifferentiable). A graph's gradient override (rill_graph_set_gradient_override) is asked
 * first for every node, with or without a gradient function of its own. New nodes go under the
 * name scope "gradients/<node>_grad/".
 *
 * Gating (rill__gradients' gate_gradients, what the optimizers ask for, as TF's GATE_OP): a
 * consumer of a variable reads it when it runs, so without it an update of W (ApplyAdam, fed by
 * dW = MatMul(x^T, dy)) may run before, or after, dx = MatMul(dy, W^T) of the same MatMul reads
 * W: the lower layers' gradients would see this step's update or not, as the scheduler decides.
 * With it, dW is handed on only once dx exists. */
#include "graph_internal.h"

#include <string.h>

typedef struct partials {
    rill__vec *per_output; /* per node: array of noutputs vecs of rill_output* */
} partials;

static void add_partial(rill__vec *v, rill_output o)
{
    rill_output *p = rill__malloc(sizeof *p);
    RILL_CHECK_ALLOC(p);
    *p = o;
    rill__vec_push(v, p);
}

static rill_output sum_partials(rill_graph *g, rill__vec *v)
{
    if (v->n == 0) return (rill_output){NULL, 0};
    if (v->n == 1) return *(rill_output *)v->items[0];
    rill_output *xs = rill__malloc((size_t)v->n * sizeof *xs);
    RILL_CHECK_ALLOC(xs);
    for (int i = 0; i < v->n; i++) xs[i] = *(rill_output *)v->items[i];
    rill_output s = rill_add_n(g, xs, v->n, NULL);
    rill__free(xs);
    return s;
}

static bool differentiable(rill_dtype t)
{
    return rill_dtype_is_float(t);
}

/* TF's control_flow_ops.tuple over the gradients node n hands back (those marked in use):
 * each becomes an Identity with a control input on a NoOp that waits for all of them. Nothing
 * when fewer than two are handed back (TF gates only then). */
static void gate(rill_graph *g, rill_output *dinp, const char *use, int ninputs)
{
    int nuse = 0;
    for (int k = 0; k < ninputs; k++) nuse += use[k];
    if (nuse < 2) return;
    rill_node **deps = rill__malloc((size_t)nuse * sizeof *deps);
    RILL_CHECK_ALLOC(deps);
    int nd = 0;
    for (int k = 0; k < ninputs; k++)
        if (use[k]) deps[nd++] = dinp[k].node;
    rill_graph_push_name_scope(g, "tuple");
    rill_node *all = rill_group(g, deps, nd, "group_deps");
    rill__free(deps);
    if (all) {
        rill_graph_push_control_dependencies(g, &all, 1);
        for (int k = 0; k < ninputs; k++)
            if (use[k]) dinp[k] = rill_identity(g, dinp[k], "control_dependency");
        rill_graph_pop_control_dependencies(g);
    }
    rill_graph_pop_name_scope(g);
}

/* What a while loop's gradient reads and writes of the walk (rill__while_grad_cb). */
typedef struct loop_ctx {
    rill_graph *g;
    rill__vec **grads;
    char *done;
} loop_ctx;

static rill_output loop_dy(void *arg, rill_node *exit)
{
    loop_ctx *c = arg;
    rill__vec *v = c->grads[exit->id];
    return v && differentiable(exit->out_dtypes[0]) ? sum_partials(c->g, &v[0])
                                                    : (rill_output){NULL, 0};
}

static void loop_give(void *arg, rill_output x, rill_output dx)
{
    loop_ctx *c = arg;
    if (!dx.node || !differentiable(rill_output_dtype(x))) return;
    if (!c->grads[x.node->id]) {
        c->grads[x.node->id] = rill__calloc((size_t)x.node->noutputs, sizeof(rill__vec));
        RILL_CHECK_ALLOC(c->grads[x.node->id]);
    }
    add_partial(&c->grads[x.node->id][x.index], dx);
}

static void loop_mark(void *arg, rill_node *exit)
{
    ((loop_ctx *)arg)->done[exit->id] = 1;
}

bool rill_gradients(rill_graph *g, const rill_output *ys, int ny, const rill_output *xs, int nx,
                    const rill_output *grad_ys, rill_output *dx)
{
    return rill__gradients(g, ys, ny, xs, nx, grad_ys, dx, false);
}

bool rill__gradients(rill_graph *g, const rill_output *ys, int ny, const rill_output *xs, int nx,
                     const rill_output *grad_ys, rill_output *dx, bool gate_gradients)
{
    return rill__gradients_within(g, ys, ny, xs, nx, grad_ys, dx, gate_gradients, NULL, 0);
}

bool rill__gradients_within(rill_graph *g, const rill_output *ys, int ny, const rill_output *xs,
                            int nx, const rill_output *grad_ys, rill_output *dx,
                            bool gate_gradients, const char *only, int nonly)
{
    for (int i = 0; i < nx; i++) dx[i] = (rill_output){NULL, 0};
    if (!rill_graph_ok(g)) return false;
    for (int i = 0; i < ny; i++)
        if (!ys[i].node) {
            rill__graph_fail(g, RILL_INVALID_ARGUMENT, "gradients: y %d is empty", i);
            return false;
        }
    for (int i = 0; i < nx; i++)
        if (!xs[i].node) {
            rill__graph_fail(g, RILL_INVALID_ARGUMENT, "gradients: x %d is empty", i);
            return false;
        }
    int nn = rill_graph_num_nodes(g);
    char *fwd = rill__calloc((size_t)nn + 1, 1), *bwd = rill__calloc((size_t)nn + 1, 1);
    RILL_CHECK_ALLOC(fwd);
    RILL_CHECK_ALLOC(bwd);
    rill__consumers cons;
    rill__consumers_build(g, &cons);

    /* Forward reach from xs, in id order (consumers always have larger ids). */
    for (int i = 0; i < nx; i++) fwd[xs[i].node->id] = 1;
    /* A while loop's body reaches its Exits through the back edge, a NextIteration's control
     * input on its (older) Merge: another pass then, until nothing changes. */
    for (bool again = true; again;) {
        again = false;
        for (int id = 0; id < nn; id++) {
            if (!fwd[id]) continue;
            for (int e = cons.start[id]; e < cons.start[id + 1]; e++) fwd[cons.node[e]->id] = 1;
            rill_node *n = rill_graph_node(g, id);
            if (strcmp(n->op->name, "NextIteration") == 0 && n->ncontrol &&
                !fwd[n->control_inputs[0]->id])
                fwd[n->control_inputs[0]->id] = 1, again = true;
        }
    }
    /* Backward reach from ys. */
    for (int i = 0; i < ny; i++) bwd[ys[i].node->id] = 1;
    for (int id = nn - 1; id >= 0; id--) {
        if (!bwd[id]) continue;
        rill_node *n = rill_graph_node(g, id);
        for (int k = 0; k < n->ninputs; k++) bwd[n->inputs[k].node->id] = 1;
        /* an Exit depends on its loop's body through its control inputs (the NextIterations) */
        if (strcmp(n->op->name, "Exit") == 0)
            for (int k = 0; k < n->ncontrol; k++) bwd[n->control_inputs[k]->id] = 1;
    }

    rill__vec **grads = rill__calloc((size_t)nn + 1, sizeof *grads);
    RILL_CHECK_ALLOC(grads);
    rill_graph_push_name_scope(g, "gradients");
    for (int i = 0; i < ny; i++) {
        rill_node *n = ys[i].node;
        if (!grads[n->id]) {
            grads[n->id] = rill__calloc((size_t)n->noutputs, sizeof(rill__vec));
            RILL_CHECK_ALLOC(grads[n->id]);
        }
        rill_output seed = grad_ys && grad_ys[i].node ? grad_ys[i] : rill_ones_like(g, ys[i], NULL);
        add_partial(&grads[n->id][ys[i].index], seed);
    }

    void *oarg = NULL;
    rill_gradient_override_fn override = rill__graph_gradient_override(g, &oarg);
    char *loop_done = rill__calloc((size_t)nn + 1, 1); /* Exits whose loop has its gradient */
    RILL_CHECK_ALLOC(loop_done);
    loop_ctx lctx = {g, grads, loop_done};
    rill__while_grad_cb lcb = {loop_dy, loop_give, loop_mark, &lctx};
    rill_output dy[16], *dyp = dy, din[16], *dinp = din;
    for (int id = nn - 1; id >= 0 && rill_graph_ok(g); id--) {
        if (!grads[id] || !(fwd[id] && bwd[id])) continue;
        if (only && (id >= nonly || !only[id])) continue;
        rill_node *n = rill_graph_node(g, id);
        if (strcmp(n->op->name, "Exit") == 0) {
            /* a while loop: its gradient is a loop of its own (gradients_loop.c) */
            if (!loop_done[id]) rill__while_grad(g, n, &lcb);
            continue;
        }
        /* asked first whether it takes n (dy NULL), so that nothing is built for a node whose
         * gradient nobody makes */
        bool overridden = override && n->ninputs > 0 && override(oarg, g, n, NULL, NULL);
        if ((!n->op->grad && !overridden) || n->ninputs == 0) continue;
        if (n->noutputs > 16) dyp = rill__malloc((size_t)n->noutputs * sizeof *dyp);
        if (n->ninputs > 16) dinp = rill__malloc((size_t)n->ninputs * sizeof *dinp);
        RILL_CHECK_ALLOC(dyp);
        RILL_CHECK_ALLOC(dinp);
        char *scope = rill__asprintf("%s_grad", n->name);
        rill_graph_push_name_scope(g, scope);
        rill__free(scope);
        bool any = false;
        for (int o = 0; o < n->noutputs; o++) {
            dyp[o] = differentiable(n->out_dtypes[o]) ? sum_partials(g, &grads[id][o])
                                                      : (rill_output){NULL, 0};
            any = any || dyp[o].node;
        }
        for (int k = 0; k < n->ninputs; k++) dinp[k] = (rill_output){NULL, 0};
        if (any) {
            /* Gradient functions expect every output's gradient: fill missing ones with
             * zeros of the output's shape. */
            for (int o = 0; o < n->noutputs; o++)
                if (!dyp[o].node && differentiable(n->out_dtypes[o]))
                    dyp[o] = rill_zeros_like(g, (rill_output){n, o}, NULL);
            if (!(overridden && override(oarg, g, n, dyp, dinp)) && n->op->grad)
                n->op->grad(g, n, dyp, dinp);
        }
        /* The gradients handed back: those of differentiable inputs on a path from an x. */
        char usebuf[16], *use = n->ninputs > 16 ? rill__calloc((size_t)n->ninputs, 1) : usebuf;
        RILL_CHECK_ALLOC(use);
        for (int k = 0; k < n->ninputs; k++) {
            rill_output in = n->inputs[k];
            use[k] = any && dinp[k].node && fwd[in.node->id] &&
                     differentiable(rill_output_dtype(in));
        }
        if (gate_gradients && rill_graph_ok(g)) gate(g, dinp, use, n->ninputs);
        rill_graph_pop_name_scope(g);
        for (int k = 0; k < n->ninputs; k++) {
            rill_output in = n->inputs[k];
            if (!use[k] || !dinp[k].node) continue;
            if (!grads[in.node->id]) {
                grads[in.node->id] = rill__calloc((size_t)in.node->noutputs, sizeof(rill__vec));
                RILL_CHECK_ALLOC(grads[in.node->id]);
            }
            add_partial(&grads[in.node->id][in.index], dinp[k]);
        }
        if (use != usebuf) rill__free(use);
        if (dyp != dy) rill__free(dyp), dyp = dy;
        if (dinp != din) rill__free(dinp), dinp = din;
    }

    for (int i = 0; i < nx && rill_graph_ok(g); i++) {
        rill_node *n = xs[i].node;
        if (grads[n->id] && differentiable(n->out_dtypes[xs[i].index])) {
            dx[i] = sum_partials(g, &grads[n->id][xs[i].index]);
        }
    }
    rill_graph_pop_name_scope(g);

    for (int id = 0; id < nn; id++) {
        if (!grads[id]) continue;
        rill_node *n = rill_graph_node(g, id);
        for (int o = 0; o < n->noutputs; o++) {
            for (int k = 0; k < grads[id][o].n; k++) rill__free(grads[id][o].items[k]);
            rill__vec_free(&grads[id][o]);
        }
        rill__free(grads[id]);
    }
    rill__free(grads);
    rill__free(loop_done);
    rill__consumers_free(&cons);
    rill__free(fwd);
    rill__free(bwd);
    if (!rill_graph_ok(g)) {
        for (int i = 0; i < nx; i++) dx[i] = (rill_output){NULL, 0};
        return false;
    }
    return true;
}
