/* gradients_loop.c - the gradient of a while loop (TF's stack approach, reference §control flow).
 *
 * For a loop v(t+1) = body(v(t), c) run n times (c: what its constant Enters bring in), with
 * gradients g at its Exits, the backward loop runs t = n-1 .. 0 carrying the adjoints a (a(n) =
 * g) and, per differentiable c, a sum: a(t) = d body / d v (at v(t))^T a(t+1), and
 * dc += d body / d c (at v(t))^T a(t+1). Its Exits are the gradients of the loop's initial values
 * and of c.
 *
 * What the backward body needs of iteration t (the inputs and outputs of the forward body's ops)
 * the forward loop writes, each iteration, to a TensorArray per tensor at index t (a counter the
 * forward loop gets as an extra loop variable, with one more carrying the writes' flow), and the
 * backward loop reads back at its own t. The backward body is built by the ordinary gradient
 * functions (rill__gradients over the forward body, from its NextIterations' inputs to its
 * Identities and constant Enters); every input they take from the forward loop is then pointed at
 * that read (or, for a constant Enter, at the backward loop's Enter of the same outside value).
 * The reads are made first (for every tensor of the body), the gradient nodes after them (so the
 * graph stays in creation order), and the forward writes last, for the tensors whose read some
 * gradient node took. Nothing of this runs in a step that fetches no gradient (the extra loop
 * variables have Exits of their own, which only the backward loop needs). Loops nested in the
 * body are not differentiated yet. */
#include "graph_internal.h"

#include <string.h>

static bool is_op(const rill_node *n, const char *op)
{
    return strcmp(n->op->name, op) == 0;
}


static rill_node *mk(rill_graph *g, const char *op, const rill_output *in, int n,
                     const rill__attr *a, int na)
{
    return rill__node_create(g, op, NULL, in, n, a, na);
}

static rill_output enter(rill_graph *g, rill_output x, const char *frame, bool constant)
{
    rill__attr a[2] = {RILL__A_STRING("frame_name", frame), RILL__A_BOOL("is_constant", constant)};
    rill_node *e = mk(g, "Enter", &x, 1, a, 2);
    return e ? rill__out0(e) : (rill_output){NULL, 0};
}

/* One loop variable being built: its Merge, Switch and body input. */
typedef struct var {
    rill_node *merge, *sw;
    rill_output in; /* Identity(Switch:1) */
} var;

static var var_begin(rill_graph *g, rill_output init, const char *frame)
{
    var v = {0};
    rill_output e = enter(g, init, frame, false);
    if (!e.node) return v;
    v.merge = mk(g, "Merge", &e, 1, NULL, 0);
    return v;
}

static void var_switch(rill_graph *g, var *v, rill_output lc)
{
    if (!v->merge) return;
    rill_output in[2] = {rill__out0(v->merge), lc};
    v->sw = mk(g, "Switch", in, 2, NULL, 0);
    if (v->sw) v->in = rill_identity(g, (rill_output){v->sw, 1}, NULL);
}

static rill_node *var_next(rill_graph *g, var *v, rill_output next)
{
    rill_node *nx = next.node ? mk(g, "NextIteration", &next, 1, NULL, 0) : NULL;
    if (nx) rill_node_add_control_input(nx, v->merge);
    return nx;
}

static rill_output var_exit(rill_graph *g, var *v, rill_node *const *nexts, int nn)
{
    if (!v->sw) return (rill_output){NULL, 0};
    rill_output s0 = {v->sw, 0};
    rill_node *x = mk(g, "Exit", &s0, 1, NULL, 0);
    for (int k = 0; x && k < nn; k++) rill_node_add_control_input(x, nexts[k]);
    return x ? rill__out0(x) : (rill_output){NULL, 0};
}

typedef struct stacked {
    rill_output t;    /* the forward tensor */
    rill_output read; /* its value of iteration t in the backward loop */
    rill_node *ta;    /* its TensorArray */
    rill_node *live;  /* with a cond in the body: whether it was live (0) or dead, per iteration */
    bool used;        /* the backward body reads it: the forward loop writes it */
} stacked;

bool rill__while_grad(rill_graph *g, rill_node *exit0, const rill__while_grad_cb *cb)
{
    /* The forward loop: Exit <- Switch(Merge, LoopCond) <- Merge <- Enter. */
    rill_node *sw0 = exit0->inputs[0].node;
    if (!is_op(sw0, "Switch") || !is_op(sw0->inputs[0].node, "Merge") ||
        !is_op(sw0->inputs[1].node, "LoopCond") ||
        !is_op(sw0->inputs[0].node->inputs[0].node, "Enter")) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT,
                         "'%s' is not the Exit of a while loop built as tf.while_loop builds one",
                         exit0->name);
        return false;
    }
    rill_node *lc = sw0->inputs[1].node;
    const char *frame = rill__frame_name(sw0->inputs[0].node->inputs[0].node);
    int nn = rill_graph_num_nodes(g);
    rill__consumers cons;
    rill__consumers_build(g, &cons);
    int *depth = rill__calloc((size_t)nn + 1, sizeof *depth), *stack = NULL;
    char *region = rill__calloc((size_t)nn + 1, 1);
    RILL_CHECK_ALLOC(depth);
    RILL_CHECK_ALLOC(region);
    stack = rill__malloc(((size_t)nn + 1) * sizeof *stack);
    RILL_CHECK_ALLOC(stack);
    bool ok = true;

    /* Members: what the loop's Enters reach, along data and control edges, before its Exits. */
    rill_status *ms = rill_status_new();
    if (!rill__loop_members(g, frame, depth, ms)) {
        rill__graph_fail(g, rill_status_code(ms), "%s", rill_status_message(ms));
        ok = false;
    }
    rill_status_free(ms);
    int ns = 0;
    for (int i = 0; ok && i < nn; i++)
        if (depth[i] > 1) {
            rill__graph_fail(g, RILL_UNIMPLEMENTED,
                             "Gradients of a while loop nested in another ('%s' inside '%s') are "
                             "not built yet",
                             rill_graph_node(g, i)->name, frame);
            ok = false;
        }

    /* The loop variables and constant Enters, in creation order. */
    enum { MAXV = 256 };
    rill_node *enters[MAXV], *merges[MAXV], *sws[MAXV], *ids[MAXV], *nexts[MAXV], *exits[MAXV];
    rill_node *consts[MAXV];
    int nv = 0, nc = 0;
    for (int i = 0; ok && i < nn; i++) {
        rill_node *n = rill_graph_node(g, i);
        if (depth[i] != 1 || !is_op(n, "Enter")) continue;
        if (rill__attr_bool(n, "is_constant", false)) {
            if (nc < MAXV) consts[nc++] = n;
            continue;
        }
        if (nv == MAXV) {
            rill__graph_fail(g, RILL_UNIMPLEMENTED, "while loop '%s' has over %d variables", frame,
                             MAXV);
            ok = false;
            break;
        }
        enters[nv] = n;
        merges[nv] = sws[nv] = ids[nv] = nexts[nv] = exits[nv] = NULL;
        for (int e = cons.start[i]; e < cons.start[i + 1]; e++)
            if (is_op(cons.node[e], "Merge")) merges[nv] = cons.node[e];
        rill_node *m = merges[nv];
        for (int j = 0; m && j < nn; j++) {
            rill_node *x = rill_graph_node(g, j);
            if (is_op(x, "NextIteration") && x->ncontrol && x->control_inputs[0] == m) nexts[nv] = x;
        }
        for (int e = m ? cons.start[m->id] : 0; m && e < cons.start[m->id + 1]; e++)
            if (is_op(cons.node[e], "Switch") && cons.node[e]->inputs[1].node == lc)
                sws[nv] = cons.node[e];
        rill_node *s = sws[nv];
        for (int e = s ? cons.start[s->id] : 0; s && e < cons.start[s->id + 1]; e++) {
            rill_node *c = cons.node[e];
            if (is_op(c, "Identity") && cons.out_index[e] == 1) ids[nv] = c;
            if (is_op(c, "Exit") && cons.out_index[e] == 0) exits[nv] = c;
        }
        if (!m || !s || !ids[nv] || !nexts[nv]) {
            rill__graph_fail(g, RILL_INVALID_ARGUMENT,
                             "while loop '%s': loop variable '%s' is not built as tf.while_loop "
                             "builds one (Merge, Switch, Identity, NextIteration)",
                             frame, n->name);
            ok = false;
        }
        nv++;
    }
    if (!ok) goto done;
    for (int k = 0; k < nv; k++)
        if (exits[k]) cb->mark(cb->arg, exits[k]);

    /* The gradients at the Exits; nothing to do when none has one. */
    rill_output dy[MAXV];
    bool diff[MAXV], any = false;
    for (int k = 0; k < nv; k++) {
        diff[k] = rill_dtype_is_float(rill__in_dtype(enters[k], 0));
        dy[k] = diff[k] && exits[k] ? cb->dy(cb->arg, exits[k]) : (rill_output){NULL, 0};
        any = any || dy[k].node;
    }
    if (!any) goto done;

    /* The live variables: those with a gradient at their Exit, and those the next values of
     * live ones read; the region the backward body differentiates: from the live variables'
     * NextIteration inputs back to the Identities and the constant Enters. */
    bool live[MAXV];
    for (int k = 0; k < nv; k++) live[k] = dy[k].node != NULL;
    char *reach = rill__calloc((size_t)nn + 1, 1);
    RILL_CHECK_ALLOC(reach);
    for (bool again = true; again;) {
        again = false;
        for (int k = 0; k < nv; k++) {
            if (!live[k]) continue;
            memset(reach, 0, (size_t)nn);
            ns = 0;
            stack[ns++] = nexts[k]->inputs[0].node->id;
            while (ns) {
                int id = stack[--ns];
                if (reach[id] || depth[id] != 1) continue;
                rill_node *n = rill_graph_node(g, id);
                if (is_op(n, "Enter")) continue;
                reach[id] = 1;
                int v = -1;
                for (int j = 0; j < nv; j++)
                    if (n == ids[j]) v = j;
                if (v >= 0) {
                    if (diff[v] && !live[v]) live[v] = true, again = true;
                    continue;
                }
                region[id] = 1;
                for (int j = 0; j < n->ninputs; j++) stack[ns++] = n->inputs[j].node->id;
            }
        }
    }
    rill__free(reach);
    /* What to stack: the region's tensors and the member tensors it reads (the Identities). */
    stacked *st = NULL;
    int nst = 0, stcap = 0;
    for (int i = 0; i < nn; i++) {
        if (!region[i]) continue;
        rill_node *n = rill_graph_node(g, i);
        for (int pass = 0; pass < 2; pass++) {
            int cnt = pass ? n->ninputs : n->noutputs;
            for (int k = 0; k < cnt; k++) {
                rill_output t = pass ? n->inputs[k] : (rill_output){n, k};
                if (depth[t.node->id] != 1 || is_op(t.node, "Enter")) continue;
                rill_dtype dt = rill_output_dtype(t);
                if (dt == RILL_STRING) continue;
                bool seen = false;
                for (int j = 0; j < nst && !seen; j++)
                    seen = st[j].t.node == t.node && st[j].t.index == t.index;
                if (seen) continue;
                if (nst == stcap) {
                    stcap = stcap ? 2 * stcap : 16;
                    st = rill__realloc(st, (size_t)stcap * sizeof *st);
                    RILL_CHECK_ALLOC(st);
                }
                st[nst++] = (stacked){t, {NULL, 0}, NULL, NULL, false};
            }
        }
    }

    char *scope = rill__asprintf("%s_grad", frame);
    rill_graph_push_name_scope(g, scope);
    rill__free(scope);
    /* Everything made here runs with the forward loop, on its device: a loop runs on one. */
    const char *dev = lc->requested_device && lc->requested_device[0] ? lc->requested_device : NULL;
    if (dev) rill_graph_push_device(g, dev);
    char *bframe = rill__asprintf("%s_grad_%d/while_context", frame, rill_graph_num_nodes(g));

    /* Forward: a counter as one more loop variable (the backward loop counts down from its
     * Exit) and, as another, the flow of the writes of what the backward body reads (made
     * once that is known, below). */
    var cnt = var_begin(g, rill_const_scalar(g, RILL_INT32, 0, NULL), frame);
    var flow = var_begin(g, rill_const_scalar(g, RILL_FLOAT, 0, NULL), frame);
    var_switch(g, &cnt, rill__out0(lc));
    var_switch(g, &flow, rill__out0(lc));
    rill_node *fw_next[2 * MAXV + 2];
    int nfw = 0;
    for (int k = 0; k < nv; k++) fw_next[nfw++] = nexts[k];
    fw_next[nfw++] = var_next(g, &cnt, rill_add(g, cnt.in, rill_const_scalar(g, RILL_INT32, 1, NULL), NULL));
    rill_output count = var_exit(g, &cnt, fw_next, nfw);
    bool has_cond = false; /* a cond inside the body (its tensors may be dead) */
    for (int i = 0; i < nn; i++)
        if (region[i] && is_op(rill_graph_node(g, i), "Switch")) has_cond = true;
    for (int j = 0; j < nst && rill_graph_ok(g); j++) {
        rill_output zero = rill_const_scalar(g, RILL_INT32, 0, NULL);
        rill__attr a[4] = {RILL__A_TYPE("dtype", rill_output_dtype(st[j].t)),
                           RILL__A_SHAPE("element_shape", has_cond ? rill_shape_unknown()
                                                                    : rill_output_shape(st[j].t)),
                           RILL__A_BOOL("dynamic_size", true),
                           RILL__A_BOOL("identical_element_shapes", false)};
        st[j].ta = mk(g, "TensorArrayV3", &zero, 1, a, 4);
        if (has_cond) {
            rill__attr la[3] = {RILL__A_TYPE("dtype", RILL_INT32), RILL__A_BOOL("dynamic_size", true),
                                RILL__A_BOOL("identical_element_shapes", false)};
            st[j].live = mk(g, "TensorArrayV3", &zero, 1, la, 3);
        }
    }

    /* Backward: t from count - 1 down to 0, the adjoints, a sum per constant Enter. */
    var bt = var_begin(g, rill_sub(g, count, rill_const_scalar(g, RILL_INT32, 1, NULL), NULL), bframe);
    var adj[MAXV], acc[MAXV];
    bool has_acc[MAXV];
    for (int k = 0; k < nv; k++)
        adj[k] = live[k] ? var_begin(g, dy[k].node ? dy[k] : rill_zeros_like(g, rill__out0(exits[k] ? exits[k] : enters[k]), NULL), bframe)
                         : (var){0};
    for (int j = 0; j < nc; j++) {
        has_acc[j] = rill_dtype_is_float(rill__in_dtype(consts[j], 0));
        acc[j] = has_acc[j] ? var_begin(g, rill_zeros_like(g, consts[j]->inputs[0], NULL), bframe)
                            : (var){0};
    }
    rill_output ge[2] = {bt.merge ? rill__out0(bt.merge) : (rill_output){NULL, 0},
                         rill_const_scalar(g, RILL_INT32, 0, NULL)};
    rill_node *gen = ge[0].node ? mk(g, "GreaterEqual", ge, 2, NULL, 0) : NULL;
    rill_node *blc = gen ? mk(g, "LoopCond", (rill_output[]){rill__out0(gen)}, 1, NULL, 0) : NULL;
    rill_output blco = blc ? rill__out0(blc) : (rill_output){NULL, 0};
    var_switch(g, &bt, blco);
    for (int k = 0; k < nv; k++)
        if (live[k]) var_switch(g, &adj[k], blco);
    for (int j = 0; j < nc; j++)
        if (has_acc[j]) var_switch(g, &acc[j], blco);
    /* Iteration t's values, and the constant Enters' outside values, inside the backward loop.
     * A read orders after its array's own flow only: the backward loop starts once the forward
     * one has ended (it counts down from the counter's Exit). Reads nothing uses are pruned. */
    for (int j = 0; j < nst && rill_graph_ok(g); j++) {
        rill__attr a[2] = {RILL__A_TYPE("dtype", rill_output_dtype(st[j].t)),
                           RILL__A_SHAPE("element_shape", rill_output_shape(st[j].t))};
        rill_output in[3] = {enter(g, rill__out0(st[j].ta), bframe, true), bt.in,
                             enter(g, (rill_output){st[j].ta, 1}, bframe, true)};
        rill_node *r = mk(g, "TensorArrayReadV3", in, 3, a, 2);
        if (r) st[j].read = rill__out0(r);
        if (r && st[j].live) {
            /* dead again where the forward tensor was: what a dead input kept from running in
             * the forward body must not run in the backward one */
            rill__attr la[2] = {RILL__A_TYPE("dtype", RILL_INT32),
                                RILL__A_SHAPE("element_shape", rill_shape_scalar())};
            rill_output lin[3] = {enter(g, rill__out0(st[j].live), bframe, true), bt.in,
                                  enter(g, (rill_output){st[j].live, 1}, bframe, true)};
            rill_node *lr = mk(g, "TensorArrayReadV3", lin, 3, la, 2);
            rill_output was = lr ? rill_equal(g, rill__out0(lr), rill_const_scalar(g, RILL_INT32, 0, NULL), NULL)
                                 : (rill_output){NULL, 0};
            rill_output sin[2] = {st[j].read, was};
            rill_node *sw = was.node ? mk(g, "Switch", sin, 2, NULL, 0) : NULL;
            st[j].read = sw ? (rill_output){sw, 1} : (rill_output){NULL, 0};
        }
    }
    rill_output cin[MAXV];
    for (int j = 0; j < nc; j++) cin[j] = enter(g, consts[j]->inputs[0], bframe, true);

    /* The backward body: the forward body's gradient, then pointed at iteration t's values. */
    rill_output ys[MAXV], gys[MAXV], xs[2 * MAXV], dx[2 * MAXV];
    int ny = 0, nx = 0;
    for (int k = 0; k < nv; k++)
        if (live[k]) ys[ny] = nexts[k]->inputs[0], gys[ny++] = adj[k].in;
    for (int k = 0; k < nv; k++) xs[nx++] = rill__out0(ids[k]);
    for (int j = 0; j < nc; j++) xs[nx++] = rill__out0(consts[j]);
    int mark = rill_graph_num_nodes(g);
    if (rill_graph_ok(g)) rill__gradients_within(g, ys, ny, xs, nx, gys, dx, false, region, nn);
    int end = rill_graph_num_nodes(g);
    for (int i = mark; i < end && rill_graph_ok(g); i++) {
        rill_node *n = rill_graph_node(g, i);
        for (int k = 0; k < n->ninputs; k++) {
            rill_output in = n->inputs[k];
            if (in.node->id >= nn || depth[in.node->id] != 1) continue;
            bool done = false;
            for (int j = 0; j < nc && !done; j++)
                if (in.node == consts[j]) n->inputs[k] = cin[j], done = true;
            for (int j = 0; j < nst && !done; j++)
                if (st[j].t.node == in.node && st[j].t.index == in.index)
                    n->inputs[k] = st[j].read, st[j].used = done = true;
            if (!done)
                rill__graph_fail(g, RILL_INTERNAL,
                                 "the gradient of while loop '%s' needs '%s:%d' of iteration t, "
                                 "which was not stacked",
                                 frame, in.node->name, in.index);
        }
        int keep = 0;
        for (int c = 0; c < n->ncontrol; c++)
            if (n->control_inputs[c]->id >= nn || depth[n->control_inputs[c]->id] != 1)
                n->control_inputs[keep++] = n->control_inputs[c];
        n->ncontrol = keep;
    }
    /* dx of the Identities and constant Enters: the patched nodes hand them over. */
    for (int k = 0; k < nx; k++)
        if (dx[k].node && dx[k].node->id < nn) {
            /* a forward tensor itself (the body passes a variable through unchanged) */
            bool done = false;
            for (int j = 0; j < nst && !done; j++)
                if (st[j].t.node == dx[k].node && st[j].t.index == dx[k].index)
                    dx[k] = st[j].read, st[j].used = done = true;
        }
    /* Forward: the writes of what the backward body reads, at the counter, in one flow. A
     * tensor of a cond inside the body is dead on the iterations that do not take its branch:
     * a zero is written instead, with whether it was live, so that the flow stays live and the
     * backward read is dead again where the tensor was. */
    rill_output f = flow.in;
    for (int j = 0; j < nst && rill_graph_ok(g); j++) {
        if (!st[j].used) continue;
        rill_output v = st[j].t;
        rill_node *m = NULL;
        if (has_cond) {
            rill_output both[2] = {v, rill_const_scalar(g, rill_output_dtype(v), 0, NULL)};
            m = mk(g, "Merge", both, 2, NULL, 0);
            if (m) v = rill__out0(m);
        }
        rill_output in[4] = {enter(g, rill__out0(st[j].ta), frame, true), cnt.in, v, f};
        rill_node *w = mk(g, "TensorArrayWriteV3", in, 4, NULL, 0);
        if (w) f = rill__out0(w);
        if (m && st[j].live) { /* value_index: 0 where the tensor was live */
            rill_output lin[4] = {enter(g, rill__out0(st[j].live), frame, true), cnt.in,
                                  (rill_output){m, 1}, f};
            rill_node *lw = mk(g, "TensorArrayWriteV3", lin, 4, NULL, 0);
            if (lw) f = rill__out0(lw);
        }
    }
    fw_next[nfw++] = var_next(g, &flow, f);
    rill_output flow_out = var_exit(g, &flow, fw_next, nfw);
    rill_node *bw_next[2 * MAXV + 1];
    int nbw = 0;
    bw_next[nbw++] = var_next(g, &bt, rill_sub(g, bt.in, rill_const_scalar(g, RILL_INT32, 1, NULL), NULL));
    for (int k = 0; k < nv; k++)
        if (live[k])
            bw_next[nbw++] = var_next(g, &adj[k], dx[k].node ? dx[k] : rill_zeros_like(g, adj[k].in, NULL));
    for (int j = 0; j < nc; j++)
        if (has_acc[j]) {
            rill_output d = dx[nv + j];
            bw_next[nbw++] = var_next(g, &acc[j], d.node ? rill_add(g, acc[j].in, d, NULL) : acc[j].in);
        }
    /* The backward loop's results wait for the forward writes' flow, which keeps them (and the
     * whole forward loop) in any step that fetches a gradient. */
    for (int k = 0; k < nv && rill_graph_ok(g); k++)
        if (live[k]) {
            rill_output x = var_exit(g, &adj[k], bw_next, nbw);
            if (x.node && flow_out.node) rill_node_add_control_input(x.node, flow_out.node);
            cb->give(cb->arg, enters[k]->inputs[0], x);
        }
    for (int j = 0; j < nc && rill_graph_ok(g); j++)
        if (has_acc[j] && dx[nv + j].node) {
            rill_output x = var_exit(g, &acc[j], bw_next, nbw);
            if (x.node && flow_out.node) rill_node_add_control_input(x.node, flow_out.node);
            cb->give(cb->arg, consts[j]->inputs[0], x);
        }
    (void)var_exit(g, &bt, bw_next, nbw);
    if (dev) rill_graph_pop_device(g);
    rill_graph_pop_name_scope(g);
    rill__free(bframe);
    rill__free(st);
done:
    rill__free(depth);
    rill__free(region);
    rill__free(stack);
    rill__consumers_free(&cons);
    return ok && rill_graph_ok(g);
}
