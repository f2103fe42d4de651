/* executor.c - plans and steps.
 *
 * Building a plan: walk back from the fetches and targets along data and control edges,
 * stopping at fed tensors; check the subgraph for cycles (Kahn's algorithm); pick each node's
 * kernel; number a slot per produced tensor (fed tensors get their own slots, so a node that
 * also produces a fed output can still run); count each slot's consumers so a tensor is
 * released as soon as its last consumer is done (which lets a variable update run in place).
 * A consumer of a variable does not take the value its VariableV2 node produced: it reads the
 * variable when it runs, so an update ordered before it by a control dependency is seen (TF's
 * ref semantics: `with control_dependencies([inc]): identity(v)` reads the incremented value).
 *
 * Running a step: the step state (slots, pending counts, last step's outputs for recycling) is
 * cached on the plan and reused, so a steady-state step of a small graph allocates nothing.
 * The caller thread runs ready nodes from a stack; when several become ready at once, nodes
 * marked expensive go to the inter-op pool, whose workers run the same loop. The step ends when
 * every node has either run or, after an error, been skipped. */
#include "runtime.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct pnode {
    rill_node *node;
    const rill__kernel_def *kernel;
    int ninputs;
    int *in_slot;      /* per input: slot, or -1 for a reference input */
    rill__var **vars;  /* per input: variable of a reference input, else NULL */
    rill__var **reads; /* per input: variable read when this node runs (a data edge from an
                        * unfed VariableV2), else NULL */
    int noutputs;
    int out_base; /* slots [out_base, out_base + noutputs) */
    int *succ;    /* successors (one entry per data or control edge) */
    int nsucc;
    int npred;
    bool expensive;
    bool parks;              /* waits for a peer: its kernel may park (rill__kctx_park) */
    bool is_variable;        /* its output may be NULL (uninitialised) without error */
    rill__var *var;          /* for VariableV2 nodes */
    rill__node_state *state; /* kernel state kept across steps (stable pointer) */
    rill__node_state local_state; /* for nodes that exist only in this plan */
    rill__device *device;
    int nsucc_data;      /* succ[0, nsucc_data) are data edges, the rest control edges */
    bool merge;          /* takes dead inputs (Merge) */
    bool is_switch;      /* a Switch: moved by the executor; may read an uninitialised variable (an error only if the taken side is read) */
    rill__frame *frame;  /* a while loop (_Frame): runs its iteration plan */
    bool unread;         /* an output nothing reads (dropped as soon as the node has run) */
    rill_tensor *value;  /* a constant kernel's value (the node's attribute, borrowed) */
} pnode;

typedef struct step {
    rill__plan *plan;
    unsigned cancel_gen; /* the session's cancel counter when the step began */
    rill__deadline deadline;
    rill_tensor **slots;
    rill_tensor **cache; /* last step's output tensors, for recycling */
    rill_tensor **cache2; /* a loop's iteration plan: those of the step before */
    atomic_int *slot_refs;
    atomic_int *pending;
    int *ready;          /* the caller's stack */
    rill_tensor **inbuf; /* gathered inputs, per node at its own offset */
    atomic_int remaining;
    atomic_bool failed;
    rill_status *status;
    pthread_mutex_t mu; /* guards status and the completion wait */
    pthread_cond_t cv;
    bool done;          /* every node has finished (set under mu by the last one) */
    struct task *tasks; /* one per node, for the pool */
    /* Parked nodes (under mu): per node PARK_* bits; the woken ones, for the step's thread. */
    unsigned char *park;
    int *woken;
    int nwoken;
    /* An asynchronous step (rill__plan_run_async): where its end goes. */
    void (*async_done)(void *arg, rill_code code);
    void *async_arg;
    rill_tensor **async_fetches;
    rill_status *async_status;
    /* Control flow (plans with Switch or loops): per node, its outputs are dead; a control
     * input came from a dead node. */
    unsigned char *dead;
    unsigned char *ctrl_dead;
} step;

enum {
    PARK_STATE = 3,   /* 0: not parked, PARK_PARKED, or PARK_QUEUED (in woken) */
    PARK_PARKED = 1,
    PARK_QUEUED = 2,
    PARK_WAKE = 4,    /* woken while its kernel was still parking */
    PARK_EVER = 8,    /* parked at least once this step (its kernel registered a wait) */
};

typedef struct task {
    step *st;
    int node;
} task;

struct rill__plan {
    pnode *nodes;
    int n;
    int nslots;
    int *slot_consumers;
    int nfeeds;
    int *feed_slot;
    rill_dtype *feed_dtype;
    rill_shape *feed_shape;
    rill_output *feeds;
    int nfetches;
    int *fetch_slot;
    int *roots;
    int nroots;
    int *inbuf_off;
    int inbuf_total;
    rill__node_states *states;
    rill__threadpool *inter;
    rill__threadpool *intra;
    rill__resource_mgr *rm;
    const atomic_uint *cancel;
    bool parks;   /* some node's kernel may park: the step's thread wakes every 50 ms */
    bool blocks;  /* some node may wait on other steps (a queue): a woken node never runs on
                   * its waker's thread (a transport thread must not wait on a queue) */
    bool dead_flow; /* some node may produce a dead tensor (Switch): deadness is tracked */
    bool in_frame;  /* a loop's iteration plan: fetches may be dead */
    bool sync;      /* every node of a step runs on the thread that runs the step (no inter-op
                     * pool, nothing parks): rill__plan_run runs them in order (a loop's
                     * iteration) */
    _Atomic(step *) cached; /* NULL while a step runs on it */
};

static void step_free(step *st);

/* --- plan building --- */

static int feed_index(const rill__plan_args *a, const rill_node *n, int idx)
{
    for (int i = 0; i < a->nfeeds; i++)
        if (a->feeds[i].node == n && a->feeds[i].index == idx) return i;
    return -1;
}

/* Whether every output of n is fed: such a node (a fed Placeholder) never runs, so a control
 * edge from it has nothing to wait for and a target naming it is done. */
static bool fed_whole(const rill__plan_args *a, const rill_node *n)
{
    if (n->noutputs == 0) return false;
    for (int o = 0; o < n->noutputs; o++)
        if (feed_index(a, n, o) < 0) return false;
    return true;
}

static bool is_expensive(const rill_node *n)
{
    const char *op = n->op->name;
    int64_t numel = 0;
    if (strcmp(op, "_Frame") == 0) return true; /* a whole loop */
    for (int i = 0; i < n->noutputs; i++) {
        int64_t e = rill_shape_num_elements(&n->out_shapes[i]);
        if (e > numel) numel = e;
    }
    if (strcmp(op, "MatMul") == 0) return numel < 0 || numel >= 4096;
    /* A push of a big tensor may block on the wire for long: never on a transport thread. */
    if (strcmp(op, "_RemoteSend") == 0 && n->ninputs > 0) {
        int64_t e = rill_shape_num_elements(&n->inputs[0].node->out_shapes[n->inputs[0].index]);
        return e < 0 || e >= (1 << 16);
    }
    return numel >= (1 << 16);
}

static void describe_cycle(rill_graph *g, const char *inplan, const int *indeg, int nnodes,
                           bool exec_graph, rill_status *s)
{
    int count = 0;
    char names[512] = "";
    size_t off = 0;
    for (int i = 0; i < nnodes; i++) {
        if (!inplan[i] || indeg[i] <= 0) continue;
        /* Name the user's nodes only, not the transfers the partitioner added. */
        if (exec_graph && !rill_graph_node(g, i)->origin) continue;
        if (count < 4 && off < sizeof names)
            off += (size_t)snprintf(names + off, sizeof names - off, "%s%s", count ? ", " : "",
                                    rill_graph_node(g, i)->name);
        count++;
    }
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Graph is invalid, contains a cycle with %d nodes, including: %s", count,
                    names);
}

rill__plan *rill__plan_new(const rill__plan_args *a, rill_status *s)
{
    rill_graph *g = a->graph;
    /* While loops become _Frame nodes first (the execution graph is this plan's own). */
    if (a->exec_graph && !a->in_frame && !rill__frames_rewrite(g, s)) return NULL;
    int nn = rill_graph_num_nodes(g);
    char *inplan = rill__calloc((size_t)nn + 1, 1);
    int *order = rill__malloc(((size_t)nn + 1) * sizeof *order);
    int *pidx = rill__malloc(((size_t)nn + 1) * sizeof *pidx);
    int *indeg = rill__calloc((size_t)nn + 1, sizeof *indeg);
    RILL_CHECK_ALLOC(inplan);
    RILL_CHECK_ALLOC(order);
    RILL_CHECK_ALLOC(pidx);
    RILL_CHECK_ALLOC(indeg);
    rill__plan *p = NULL;

    /* Validate the arguments. */
    for (int i = 0; i < a->nfeeds; i++) {
        rill_output f = a->feeds[i];
        if (!f.node || f.node->graph != g || f.index < 0 || f.index >= f.node->noutputs) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Feed %d does not name an output of a node in this graph", i);
            goto fail;
        }
        for (int k = 0; k < i; k++)
            if (a->feeds[k].node == f.node && a->feeds[k].index == f.index) {
                rill_status_set(s, RILL_INVALID_ARGUMENT, "%s:%d fed more than once", f.node->name,
                                f.index);
                goto fail;
            }
    }
    for (int i = 0; i < a->nfetches; i++) {
        rill_output f = a->fetches[i];
        if (!f.node || f.node->graph != g || f.index < 0 || f.index >= f.node->noutputs) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Fetch %d does not name an output of a node in this graph%s", i,
                            f.node ? "" : " (empty output: did building it fail?)");
            goto fail;
        }
    }
    for (int i = 0; i < a->ntargets; i++) {
        if (!a->targets[i] || a->targets[i]->graph != g) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Target %d does not name a node in this graph%s", i,
                            a->targets[i] ? "" : " (empty: did building it fail?)");
            goto fail;
        }
    }

    /* Reverse reachability, stopping at fed tensors. */
    int nstack = 0;
    for (int i = 0; i < a->nfetches; i++) {
        rill_node *n = a->fetches[i].node;
        if (feed_index(a, n, a->fetches[i].index) >= 0) continue;
        if (!inplan[n->id]) inplan[n->id] = 1, order[nstack++] = n->id;
    }
    for (int i = 0; i < a->ntargets; i++) {
        rill_node *n = a->targets[i];
        if (!inplan[n->id] && !fed_whole(a, n)) inplan[n->id] = 1, order[nstack++] = n->id;
    }
    int np = 0;
    while (nstack) {
        rill_node *n = rill_graph_node(g, order[--nstack]);
        np++;
        for (int k = 0; k < n->ninputs; k++) {
            rill_output in = n->inputs[k];
            bool ref = rill__bit32(n->op->ref_inputs, k);
            if (!ref && feed_index(a, in.node, in.index) >= 0) continue;
            if (!inplan[in.node->id]) inplan[in.node->id] = 1, order[nstack++] = in.node->id;
        }
        for (int k = 0; k < n->ncontrol; k++) {
            rill_node *c = n->control_inputs[k];
            if (!inplan[c->id] && !fed_whole(a, c)) inplan[c->id] = 1, order[nstack++] = c->id;
        }
    }

    /* Kahn's algorithm over the plan in node-id order (ties broken by creation order). */
    for (int i = 0; i < nn; i++) {
        if (!inplan[i]) continue;
        rill_node *n = rill_graph_node(g, i);
        for (int k = 0; k < n->ninputs; k++) {
            bool ref = rill__bit32(n->op->ref_inputs, k);
            if (!ref && feed_index(a, n->inputs[k].node, n->inputs[k].index) >= 0) continue;
            indeg[i]++;
        }
        for (int k = 0; k < n->ncontrol; k++) indeg[i] += inplan[n->control_inputs[k]->id];
    }
    rill__consumers cons;
    rill__consumers_build(g, &cons);
    int head = 0, tail = 0;
    for (int i = 0; i < nn; i++)
        if (inplan[i] && indeg[i] == 0) order[tail++] = i;
    /* Control successors are not in cons: scan per node (plans are built once, so O(n^2) in
     * the worst case is acceptable, but keep a simple index). */
    int *cstart = rill__calloc((size_t)nn + 2, sizeof *cstart);
    RILL_CHECK_ALLOC(cstart);
    for (int i = 0; i < nn; i++) {
        rill_node *n = rill_graph_node(g, i);
        for (int k = 0; k < n->ncontrol; k++) cstart[n->control_inputs[k]->id + 1]++;
    }
    for (int i = 0; i < nn; i++) cstart[i + 1] += cstart[i];
    int *cnode = rill__malloc(((size_t)cstart[nn] + 1) * sizeof *cnode);
    int *cfill = rill__calloc((size_t)nn + 1, sizeof *cfill);
    RILL_CHECK_ALLOC(cnode);
    RILL_CHECK_ALLOC(cfill);
    for (int i = 0; i < nn; i++) {
        rill_node *n = rill_graph_node(g, i);
        for (int k = 0; k < n->ncontrol; k++) {
            int d = n->control_inputs[k]->id;
            cnode[cstart[d] + cfill[d]++] = i;
        }
    }
    while (head < tail) {
        int id = order[head++];
        for (int e = cons.start[id]; e < cons.start[id + 1]; e++) {
            rill_node *c = cons.node[e];
            if (!inplan[c->id]) continue;
            bool ref = rill__bit32(c->op->ref_inputs, cons.in_index[e]);
            if (!ref && feed_index(a, rill_graph_node(g, id), cons.out_index[e]) >= 0) continue;
            if (--indeg[c->id] == 0) order[tail++] = c->id;
        }
        for (int e = cstart[id]; e < cstart[id + 1]; e++) {
            int c = cnode[e];
            if (inplan[c] && --indeg[c] == 0) order[tail++] = c;
        }
    }
    if (tail < np) {
        describe_cycle(g, inplan, indeg, nn, a->exec_graph, s);
        rill__free(cstart);
        rill__free(cnode);
        rill__free(cfill);
        rill__consumers_free(&cons);
        goto fail;
    }

    /* The plan, in topological order. */
    p = rill__calloc(1, sizeof *p);
    RILL_CHECK_ALLOC(p);
    p->n = np;
    p->nodes = rill__calloc((size_t)(np ? np : 1), sizeof *p->nodes);
    RILL_CHECK_ALLOC(p->nodes);
    for (int i = 0; i < np; i++) pthread_mutex_init(&p->nodes[i].local_state.mu, NULL);
    p->states = a->states;
    p->inter = a->inter_op_pool;
    p->intra = a->intra_op_pool;
    p->rm = a->rm;
    p->cancel = a->cancel;
    p->in_frame = a->in_frame;
    for (int i = 0; i < nn; i++) pidx[i] = -1;
    int nslots = 0;
    for (int i = 0; i < np; i++) {
        pnode *pn = &p->nodes[i];
        pn->node = rill_graph_node(g, order[i]);
        pidx[order[i]] = i;
        pn->noutputs = pn->node->noutputs;
        pn->out_base = nslots;
        nslots += pn->noutputs;
    }
    p->nfeeds = a->nfeeds;
    p->feed_slot = rill__malloc((size_t)(a->nfeeds ? a->nfeeds : 1) * sizeof *p->feed_slot);
    p->feed_dtype = rill__malloc((size_t)(a->nfeeds ? a->nfeeds : 1) * sizeof *p->feed_dtype);
    p->feed_shape = rill__malloc((size_t)(a->nfeeds ? a->nfeeds : 1) * sizeof *p->feed_shape);
    p->feeds = rill__malloc((size_t)(a->nfeeds ? a->nfeeds : 1) * sizeof *p->feeds);
    RILL_CHECK_ALLOC(p->feed_slot);
    RILL_CHECK_ALLOC(p->feed_dtype);
    RILL_CHECK_ALLOC(p->feed_shape);
    RILL_CHECK_ALLOC(p->feeds);
    for (int i = 0; i < a->nfeeds; i++) {
        rill_node *n = a->feeds[i].node;
        p->feeds[i] = a->feed_names ? a->feed_names[i] : a->feeds[i];
        p->feed_slot[i] = nslots++;
        p->feed_dtype[i] = n->out_dtypes[a->feeds[i].index];
        if (strcmp(n->op->name, "Placeholder") == 0) {
            const rill__attr *sa = rill__node_attr(n, "shape");
            p->feed_shape[i] = sa ? sa->v.shape : rill_shape_unknown();
        } else {
            p->feed_shape[i] = n->out_shapes[a->feeds[i].index];
        }
    }
    p->nslots = nslots;
    p->slot_consumers = rill__calloc((size_t)(nslots ? nslots : 1), sizeof *p->slot_consumers);
    RILL_CHECK_ALLOC(p->slot_consumers);
    p->inbuf_off = rill__calloc((size_t)(np ? np : 1), sizeof *p->inbuf_off);
    RILL_CHECK_ALLOC(p->inbuf_off);

    for (int i = 0; i < np && rill_status_ok(s); i++) {
        pnode *pn = &p->nodes[i];
        rill_node *n = pn->node;
        rill_dtype kt = rill__node_kernel_dtype(n);
        pn->device = n->assigned ? n->assigned : rill__cpu_device();
        pn->merge = strcmp(n->op->name, "Merge") == 0;
        pn->is_switch = strcmp(n->op->name, "Switch") == 0;
        if (pn->is_switch) p->dead_flow = true;
        if (strcmp(n->op->name, "_Frame") == 0) {
            static const rill__kernel_def frame_kernel = {.op = "_Frame"};
            pn->kernel = &frame_kernel;
            pn->frame = rill__frame_new(a, n, s);
            if (!pn->frame) break;
        } else {
            pn->kernel = rill__kernel_lookup(n->op->name, pn->device->kernel_key, kt);
        }
        if (pn->kernel && pn->kernel->constant) {
            const rill__attr *va = rill__node_attr(n, "value");
            if (va && va->kind == RILL__ATTR_TENSOR) pn->value = va->v.tensor;
        }
        if (!pn->kernel) {
            char *reg = rill__kernels_registered_for(n->op->name);
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "No OpKernel was registered to support Op '%s' used by node %s with "
                            "these attrs: [T=%s] on %s.\nRegistered kernels:\n%s",
                            n->op->name, n->name, rill_dtype_name(kt), pn->device->name, reg);
            rill__free(reg);
            break;
        }
        pn->ninputs = n->ninputs;
        pn->in_slot = rill__malloc((size_t)(n->ninputs ? n->ninputs : 1) * sizeof *pn->in_slot);
        pn->vars = rill__calloc((size_t)(n->ninputs ? n->ninputs : 1), sizeof *pn->vars);
        pn->reads = rill__calloc((size_t)(n->ninputs ? n->ninputs : 1), sizeof *pn->reads);
        RILL_CHECK_ALLOC(pn->in_slot);
        RILL_CHECK_ALLOC(pn->vars);
        RILL_CHECK_ALLOC(pn->reads);
        p->inbuf_off[i] = p->inbuf_total;
        p->inbuf_total += n->ninputs;
        pn->expensive = is_expensive(n);
        pn->parks = n->op->waits_for_peer;
        if (pn->parks) p->parks = true;
        if (n->op->blocking) p->blocks = true;
        pn->is_variable = strcmp(n->op->name, "VariableV2") == 0;
        if (pn->is_variable) {
            const rill__attr *sa = rill__node_attr(n, "shape");
            rill_shape vs = sa ? sa->v.shape : rill_shape_unknown();
            pn->var = rill__resource_mgr_var(a->rm, n->name, n->out_dtypes[0], &vs, s);
            if (!pn->var) break;
        }
        for (int k = 0; k < n->ninputs; k++) {
            rill_output in = n->inputs[k];
            if (rill__bit32(n->op->ref_inputs, k)) {
                pn->in_slot[k] = -1;
                const rill__attr *sa = rill__node_attr(in.node, "shape");
                rill_shape vs = sa ? sa->v.shape : rill_shape_unknown();
                pn->vars[k] =
                    rill__resource_mgr_var(a->rm, in.node->name, in.node->out_dtypes[0], &vs, s);
                if (!pn->vars[k]) break;
                continue;
            }
            int f = feed_index(a, in.node, in.index);
            if (f < 0 && rill__is_variable(in)) {
                /* Read the variable when this node runs, not when its VariableV2 ran, so that
                 * an update ordered in between (a control dependency) is seen, as TF's ref
                 * reads do. */
                pn->in_slot[k] = -1;
                const rill__attr *sa = rill__node_attr(in.node, "shape");
                rill_shape vs = sa ? sa->v.shape : rill_shape_unknown();
                pn->reads[k] =
                    rill__resource_mgr_var(a->rm, in.node->name, in.node->out_dtypes[0], &vs, s);
                if (!pn->reads[k]) break;
                continue;
            }
            int slot = f >= 0 ? p->feed_slot[f] : p->nodes[pidx[in.node->id]].out_base + in.index;
            pn->in_slot[k] = slot;
            p->slot_consumers[slot]++;
        }
    }
    if (!rill_status_ok(s)) {
        rill__free(cstart);
        rill__free(cnode);
        rill__free(cfill);
        rill__consumers_free(&cons);
        goto fail;
    }

    /* Successor lists (data edges that are not cut by a feed, plus control edges). */
    for (int i = 0; i < np; i++) {
        pnode *pn = &p->nodes[i];
        int id = pn->node->id;
        int cap = (cons.start[id + 1] - cons.start[id]) + (cstart[id + 1] - cstart[id]);
        pn->succ = rill__malloc((size_t)(cap ? cap : 1) * sizeof *pn->succ);
        RILL_CHECK_ALLOC(pn->succ);
        for (int e = cons.start[id]; e < cons.start[id + 1]; e++) {
            rill_node *c = cons.node[e];
            if (!inplan[c->id]) continue;
            bool ref = rill__bit32(c->op->ref_inputs, cons.in_index[e]);
            if (!ref && feed_index(a, pn->node, cons.out_index[e]) >= 0) continue;
            pn->succ[pn->nsucc++] = pidx[c->id];
            p->nodes[pidx[c->id]].npred++;
        }
        pn->nsucc_data = pn->nsucc;
        for (int e = cstart[id]; e < cstart[id + 1]; e++) {
            int c = cnode[e];
            if (!inplan[c]) continue;
            pn->succ[pn->nsucc++] = pidx[c];
            p->nodes[pidx[c]].npred++;
        }
    }
    rill__free(cstart);
    rill__free(cnode);
    rill__free(cfill);
    rill__consumers_free(&cons);
    p->sync = !p->inter && !p->parks;
    p->roots = rill__malloc((size_t)(np ? np : 1) * sizeof *p->roots);
    RILL_CHECK_ALLOC(p->roots);
    for (int i = 0; i < np; i++)
        if (p->nodes[i].npred == 0) p->roots[p->nroots++] = i;

    p->nfetches = a->nfetches;
    p->fetch_slot = rill__malloc((size_t)(a->nfetches ? a->nfetches : 1) * sizeof *p->fetch_slot);
    RILL_CHECK_ALLOC(p->fetch_slot);
    for (int i = 0; i < a->nfetches; i++) {
        rill_output f = a->fetches[i];
        int fi = feed_index(a, f.node, f.index);
        int slot = fi >= 0 ? p->feed_slot[fi] : p->nodes[pidx[f.node->id]].out_base + f.index;
        p->fetch_slot[i] = slot;
        p->slot_consumers[slot]++; /* the fetch holds the tensor to the end of the step */
    }
    for (int i = 0; i < np; i++)
        for (int o = 0; o < p->nodes[i].noutputs; o++)
            if (p->slot_consumers[p->nodes[i].out_base + o] == 0) p->nodes[i].unread = true;
    for (int i = 0; i < np; i++) {
        rill_node *sn = p->nodes[i].node;
        /* Kernel state belongs to the user's node: every plan that runs it shares it. Nodes the
         * partitioner made (transfers, feeds) keep theirs in the plan. */
        p->nodes[i].state = sn->origin ? rill__node_states_get(a->states, sn->origin->id)
                            : a->exec_graph ? &p->nodes[i].local_state
                                            : rill__node_states_get(a->states, sn->id);
        if (!p->nodes[i].state) {
            rill_status_set(s, RILL_RESOURCE_EXHAUSTED, "graph has too many nodes (%d)", nn);
            goto fail;
        }
    }
    rill__free(inplan);
    rill__free(order);
    rill__free(pidx);
    rill__free(indeg);
    return p;

fail:
    rill__plan_free(p);
    rill__free(inplan);
    rill__free(order);
    rill__free(pidx);
    rill__free(indeg);
    return NULL;
}

void rill__plan_free(rill__plan *p)
{
    if (!p) return;
    for (int i = 0; i < p->n; i++) {
        rill__node_state *ls = &p->nodes[i].local_state;
        if (ls->state && ls->free_fn) ls->free_fn(ls->state);
        pthread_mutex_destroy(&ls->mu);
        rill__free(p->nodes[i].in_slot);
        rill__free(p->nodes[i].vars);
        rill__free(p->nodes[i].reads);
        rill__free(p->nodes[i].succ);
        rill__frame_free(p->nodes[i].frame);
    }
    rill__free(p->nodes);
    rill__free(p->slot_consumers);
    rill__free(p->feed_slot);
    rill__free(p->feed_dtype);
    rill__free(p->feed_shape);
    rill__free(p->feeds);
    rill__free(p->fetch_slot);
    rill__free(p->roots);
    rill__free(p->inbuf_off);
    step_free(atomic_load(&p->cached));
    rill__free(p);
}

int rill__plan_num_nodes(const rill__plan *p)
{
    return p->n;
}

rill_node *rill__plan_node(const rill__plan *p, int i)
{
    return p->nodes[i].node;
}

/* --- steps --- */

static step *step_new(rill__plan *p)
{
    step *st = rill__calloc(1, sizeof *st);
    RILL_CHECK_ALLOC(st);
    size_t ns = (size_t)(p->nslots ? p->nslots : 1), nn = (size_t)(p->n ? p->n : 1);
    st->plan = p;
    st->slots = rill__calloc(ns, sizeof *st->slots);
    st->cache = rill__calloc(ns, sizeof *st->cache);
    if (p->in_frame) {
        st->cache2 = rill__calloc(ns, sizeof *st->cache2);
        RILL_CHECK_ALLOC(st->cache2);
    }
    st->slot_refs = rill__calloc(ns, sizeof *st->slot_refs);
    st->pending = rill__calloc(nn, sizeof *st->pending);
    st->ready = rill__calloc(nn, sizeof *st->ready);
    st->inbuf = rill__calloc((size_t)(p->inbuf_total ? p->inbuf_total : 1), sizeof *st->inbuf);
    st->tasks = rill__calloc(nn, sizeof *st->tasks);
    st->park = rill__calloc(nn, 1);
    st->woken = rill__calloc(nn, sizeof *st->woken);
    st->dead = rill__calloc(nn, 1);
    st->ctrl_dead = rill__calloc(nn, 1);
    RILL_CHECK_ALLOC(st->dead);
    RILL_CHECK_ALLOC(st->ctrl_dead);
    RILL_CHECK_ALLOC(st->park);
    RILL_CHECK_ALLOC(st->woken);
    RILL_CHECK_ALLOC(st->slots);
    RILL_CHECK_ALLOC(st->cache);
    RILL_CHECK_ALLOC(st->slot_refs);
    RILL_CHECK_ALLOC(st->pending);
    RILL_CHECK_ALLOC(st->ready);
    RILL_CHECK_ALLOC(st->inbuf);
    RILL_CHECK_ALLOC(st->tasks);
    for (int i = 0; i < p->n; i++) st->tasks[i] = (task){st, i};
    st->status = rill_status_new();
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    return st;
}

static void step_free(step *st)
{
    if (!st) return;
    for (int i = 0; i < st->plan->nslots; i++) {
        rill_tensor_free(st->slots[i]);
        rill__recycle_set(&st->cache[i], NULL);
        if (st->cache2) rill__recycle_set(&st->cache2[i], NULL);
    }
    rill__free(st->cache2);
    rill__free(st->slots);
    rill__free(st->cache);
    rill__free(st->slot_refs);
    rill__free(st->pending);
    rill__free(st->ready);
    rill__free(st->inbuf);
    rill__free(st->tasks);
    rill__free(st->park);
    rill__free(st->woken);
    rill__free(st->dead);
    rill__free(st->ctrl_dead);
    rill_status_free(st->status);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    rill__free(st);
}

static void step_fail(step *st, const rill_status *s, const rill_node *n)
{
    pthread_mutex_lock(&st->mu);
    if (rill_status_ok(st->status)) {
        rill_status_set(st->status, rill_status_code(s), "%s\n\t [[{{node %s}} = %s]]",
                        rill_status_message(s), n->name, n->op->name);
        atomic_store(&st->failed, true);
    }
    pthread_mutex_unlock(&st->mu);
}

static void release_slot(step *st, int slot)
{
    if (atomic_fetch_sub_explicit(&st->slot_refs[slot], 1, memory_order_acq_rel) == 1) {
        rill_tensor *t = st->slots[slot];
        st->slots[slot] = NULL;
        rill_tensor_free(t);
    }
}

static void step_wake(void *arg);

/* The kernel's view of node i in step st. */
static rill__kctx node_ctx(step *st, int i)
{
    rill__plan *p = st->plan;
    pnode *pn = &p->nodes[i];
    return (rill__kctx){
        .node = pn->node,
        .inputs = st->inbuf + p->inbuf_off[i],
        .vars = pn->vars,
        .var = pn->var,
        .outputs = st->slots + pn->out_base,
        .recycle = st->cache + pn->out_base,
        .recycle2 = st->cache2 ? st->cache2 + pn->out_base : NULL,
        .state = &pn->state->state,
        .pool = p->intra,
        .device = pn->device,
        .host_memory_outputs = pn->kernel->host_memory_outputs,
        .rm = p->rm,
        .cancel = p->cancel,
        .cancel_gen = st->cancel_gen,
        .deadline = st->deadline.at,
        .timeout_ms = st->deadline.timeout_ms,
        .step_owner = st->deadline.step_owner,
        .step_id = st->deadline.step_id,
        .wake = step_wake,
        .wake_arg = &st->tasks[i],
    };
}

enum { RAN_DONE, RAN_PARKED, RAN_DEFERRED };

/* Runs node i's kernel (unless the step already failed) and releases its inputs. RAN_PARKED:
 * the kernel parked, the node is not done and runs again when woken. RAN_DEFERRED: it left its
 * work to *flush(*item) (rill__kctx_defer), after which the node is done. */
static int execute(step *st, int i, void **item, rill__flush_fn *flush)
{
    rill__plan *p = st->plan;
    pnode *pn = &p->nodes[i];
    rill_tensor **in = st->inbuf + p->inbuf_off[i];
    if (atomic_load_explicit(&st->failed, memory_order_relaxed)) goto skip;
    /* (a loop's iteration plan: its _Frame looks at the deadline between iterations) */
    if (st->deadline.at && !p->in_frame && rill__now_seconds() >= st->deadline.at) {
        rill_status *e = rill_status_new();
        rill_status_set(e, RILL_DEADLINE_EXCEEDED,
                        "Timed out waiting for notification: the step's %lld ms deadline "
                        "passed before '%s' could start",
                        (long long)st->deadline.timeout_ms, pn->node->name);
        step_fail(st, e, pn->node);
        rill_status_free(e);
        goto skip;
    }
    /* A node with a dead input (or control input) does not run: its outputs are dead. Merge
     * alone takes dead inputs. A parked node was live when it first ran. */
    if (p->dead_flow && !pn->merge && !(pn->parks && (st->park[i] & PARK_EVER))) {
        bool dead = st->ctrl_dead[i];
        for (int k = 0; k < pn->ninputs && !dead; k++)
            dead = pn->in_slot[k] >= 0 && rill__is_dead(st->slots[pn->in_slot[k]]);
        if (dead && pn->parks) {
            rill_status *e = rill_status_new();
            rill_status_set(e, RILL_UNIMPLEMENTED,
                            "'%s' would send a dead tensor (from the untaken branch of a cond) "
                            "to another task: rill does not send dead tensors between tasks; "
                            "place the cond's branches on the task of their inputs",
                            pn->node->origin ? pn->node->origin->name : pn->node->name);
            step_fail(st, e, pn->node);
            rill_status_free(e);
            goto release;
        }
        if (dead) {
            for (int k = 0; k < pn->ninputs; k++) in[k] = NULL;
            for (int o = 0; o < pn->noutputs; o++) st->slots[pn->out_base + o] = rill__dead();
            st->dead[i] = 1;
            goto release;
        }
    }
    /* A parked node runs again on the inputs it gathered the first time. */
    for (int k = 0; k < pn->ninputs && !(pn->parks && (st->park[i] & PARK_EVER)); k++) {
        rill__var *rv = pn->reads[k];
        if (rv) {
            pthread_mutex_lock(&rv->mu);
            in[k] = rill_tensor_ref(rv->value);
            pthread_mutex_unlock(&rv->mu);
            if (!in[k] && !pn->is_switch) {
                rill_status *e = rill_status_new();
                rill_status_set(e, RILL_FAILED_PRECONDITION,
                                "Attempting to use uninitialized value %s", rv->name);
                step_fail(st, e, pn->node);
                rill_status_free(e);
                goto release;
            }
            continue;
        }
        int slot = pn->in_slot[k];
        if (slot < 0) {
            in[k] = NULL;
            continue;
        }
        in[k] = st->slots[slot];
        if (!in[k]) {
            rill_output src = pn->node->inputs[k];
            rill_status *e = rill_status_new();
            if (rill__is_variable(src))
                rill_status_set(e, RILL_FAILED_PRECONDITION,
                                "Attempting to use uninitialized value %s", src.node->name);
            else
                rill_status_set(e, RILL_INTERNAL, "input %d of '%s' (from '%s:%d') is missing", k,
                                pn->node->name, src.node->name, src.index);
            step_fail(st, e, pn->node);
            rill_status_free(e);
            goto release;
        }
    }
    if (pn->is_switch && !in[0]) {
        /* A Switch of an uninitialised variable: an error only if the taken side is read. */
        int taken = *(const bool *)rill_tensor_data(in[1]) ? 1 : 0;
        if (p->slot_consumers[pn->out_base + taken] > 0) {
            rill_status *e = rill_status_new();
            rill_status_set(e, RILL_FAILED_PRECONDITION, "Attempting to use uninitialized value %s",
                            pn->node->inputs[0].node->name);
            step_fail(st, e, pn->node);
            rill_status_free(e);
        } else {
            st->slots[pn->out_base] = rill__dead();
            st->slots[pn->out_base + 1] = rill__dead();
        }
        goto release;
    }
    if (pn->kernel->forwards && in[0]) {
        st->slots[pn->out_base] = rill_tensor_ref(in[0]);
        goto release;
    }
    if (pn->value) {
        st->slots[pn->out_base] = rill_tensor_ref(pn->value);
        goto release;
    }
    if (pn->is_switch && in[0]) {
        /* Switch: the data out on the taken side, the other side dead */
        int taken = *(const bool *)rill_tensor_data(in[1]) ? 1 : 0;
        st->slots[pn->out_base + taken] = rill_tensor_ref(in[0]);
        st->slots[pn->out_base + 1 - taken] = rill__dead();
        goto release;
    }
    {
        rill__kctx ctx = node_ctx(st, i);
        if (pn->frame) {
            rill_status *e = rill_status_new();
            if (!rill__frame_run(pn->frame, in, ctx.outputs, st->deadline, p->cancel,
                                 st->cancel_gen, e)) {
                step_fail(st, e, pn->node);
            }
            rill_status_free(e);
            goto release;
        }
        if (pn->kernel->state_free) {
            pthread_mutex_lock(&pn->state->mu);
            pn->kernel->fn(&ctx);
            if (*ctx.state) pn->state->free_fn = pn->kernel->state_free;
            pthread_mutex_unlock(&pn->state->mu);
        } else {
            pn->kernel->fn(&ctx);
        }
        if (ctx.parked && !ctx.status) return RAN_PARKED; /* inputs kept for the next try */
        if (ctx.deferred && !ctx.status) {
            *item = ctx.deferred;
            *flush = ctx.flush;
        }
        if (!ctx.status && !pn->is_variable) {
            for (int o = 0; o < pn->noutputs; o++)
                if (!ctx.outputs[o]) {
                    rill__kctx_fail(&ctx, RILL_INTERNAL, "kernel produced no output %d", o);
                    break;
                }
        }
        if (ctx.status) {
            step_fail(st, ctx.status, pn->node);
            rill_status_free(ctx.status);
        } else if (pn->merge && rill__is_dead(ctx.outputs[0])) {
            st->dead[i] = 1;
        }
    }
    goto release;
skip:
    /* A node that parked before the step failed drops its registered wait. */
    if (pn->parks && (st->park[i] & PARK_EVER)) {
        rill__kctx ctx = node_ctx(st, i);
        ctx.abandoned = true;
        pn->kernel->fn(&ctx);
        rill_status_free(ctx.status);
    }
release:
    /* Variable reads are dropped (and left NULL for the next step); slots are released. */
    for (int k = 0; k < pn->ninputs; k++) {
        if (pn->reads[k]) {
            rill_tensor_free(in[k]);
            in[k] = NULL;
        } else if (pn->in_slot[k] >= 0) {
            release_slot(st, pn->in_slot[k]);
        }
    }
    for (int o = 0; pn->unread && o < pn->noutputs; o++) {
        int slot = pn->out_base + o;
        if (atomic_load_explicit(&st->slot_refs[slot], memory_order_relaxed) == 0) {
            rill_tensor_free(st->slots[slot]);
            st->slots[slot] = NULL;
        }
    }
    return *item ? RAN_DEFERRED : RAN_DONE;
}

static void run_loop(step *st, int first, int *stack, int cap);
static void drain(step *st, int *stack, int n, int cap);

static void pool_task(void *arg)
{
    task *t = arg;
    int local[64];
    run_loop(t->st, t->node, local, 64);
}

/* The parked nodes this thread woke (under the waker's lock), for rill__run_woken; and whether
 * it runs them now (then expensive nodes go to the pool: it may be a transport thread). */
#define TL_WOKEN 64
static __thread struct {
    step *st;
    int node;
} tl_woken[TL_WOKEN];
static __thread int tl_nwoken;
static __thread bool tl_in_wake;

/* A parked node's kernel can go on (any thread, under the waker's lock): the waking thread runs
 * it once it lets go of that lock (rill__run_woken), or the step's thread does. */
static void step_wake(void *arg)
{
    task *t = arg;
    step *st = t->st;
    pthread_mutex_lock(&st->mu);
    unsigned char c = st->park[t->node];
    if ((c & PARK_STATE) == PARK_PARKED) {
        st->park[t->node] = (unsigned char)((c & ~PARK_STATE) | PARK_QUEUED);
        if (tl_nwoken < TL_WOKEN && !st->plan->blocks) {
            tl_woken[tl_nwoken].st = st;
            tl_woken[tl_nwoken++].node = t->node;
        } else {
            st->woken[st->nwoken++] = t->node;
            pthread_cond_broadcast(&st->cv);
        }
    } else if ((c & PARK_STATE) == 0) {
        st->park[t->node] = (unsigned char)(c | PARK_WAKE); /* still parking: see park_node */
    }
    pthread_mutex_unlock(&st->mu);
}

/* Node i's kernel parked: it waits (no thread does) until step_wake, or the 50 ms retry. True
 * when it was woken meanwhile: run it again now. */
static bool park_node(step *st, int i)
{
    pthread_mutex_lock(&st->mu);
    unsigned char c = (unsigned char)(st->park[i] | PARK_EVER);
    bool again = c & PARK_WAKE;
    if (again)
        c = (unsigned char)(c & ~(PARK_WAKE | PARK_STATE));
    else
        c = (unsigned char)((c & ~PARK_STATE) | PARK_PARKED);
    st->park[i] = c;
    pthread_mutex_unlock(&st->mu);
    return again;
}


void rill__run_woken(void)
{
    bool was = tl_in_wake;
    tl_in_wake = true;
    while (tl_nwoken) {
        /* The woken nodes of one step run from one stack, so that what they push to a task
         * goes out together. */
        step *st = tl_woken[tl_nwoken - 1].st;
        int local[64], n = 0;
        pthread_mutex_lock(&st->mu);
        while (tl_nwoken && tl_woken[tl_nwoken - 1].st == st && n < 32) {
            int i = tl_woken[--tl_nwoken].node;
            st->park[i] &= (unsigned char)~PARK_STATE;
            local[n++] = i;
        }
        pthread_mutex_unlock(&st->mu);
        drain(st, local, n, 64);
    }
    tl_in_wake = was;
}

static rill_code step_end(step *st, rill_tensor **fetch_values, rill_status *s);

static void finish_one(step *st)
{
    /* The caller waits for `done` under the lock, never for the counter alone: otherwise it
     * could finish the step and free it (a concurrent run's extra step is freed) while this
     * thread is still about to lock st->mu. An asynchronous step ends here. */
    if (atomic_fetch_sub_explicit(&st->remaining, 1, memory_order_acq_rel) == 1) {
        if (st->async_done) {
            void (*done)(void *, rill_code) = st->async_done;
            void *arg = st->async_arg;
            rill_code code = step_end(st, st->async_fetches, st->async_status);
            done(arg, code);
            return;
        }
        pthread_mutex_lock(&st->mu);
        st->done = true;
        pthread_cond_broadcast(&st->cv);
        pthread_mutex_unlock(&st->mu);
    }
}

/* Runs `first` and then whatever becomes ready, depth first. */
/* The nodes whose kernels deferred their work (rill__kctx_defer) on this thread: done together
 * when the thread runs out of ready nodes, or before it runs one that may block. */
#define TL_DEFERRED 64
static __thread struct {
    step *st;
    int node;
    void *item;
    rill__flush_fn flush;
} tl_def[TL_DEFERRED];
static __thread int tl_ndef;

/* Node i is done: what became ready goes on the stack (or to the pool), and it counts. */
static void complete(step *st, int i, int *stack, int *np, int cap)
{
    rill__plan *p = st->plan;
    pnode *pn = &p->nodes[i];
    int n = *np, newly = 0;
    if (p->dead_flow && st->dead[i])
        for (int k = pn->nsucc_data; k < pn->nsucc; k++) st->ctrl_dead[pn->succ[k]] = 1;
    for (int k = 0; k < pn->nsucc; k++) {
        int c = pn->succ[k];
        if (atomic_fetch_sub_explicit(&st->pending[c], 1, memory_order_acq_rel) != 1) continue;
        bool offload = p->inter && p->nodes[c].expensive && (newly > 0 || n > 0 || tl_in_wake);
        if (offload || n == cap) {
            rill__threadpool_schedule(p->inter, pool_task, &st->tasks[c]);
        } else {
            stack[n++] = c;
        }
        newly++;
    }
    *np = n;
    finish_one(st);
}

/* Does the deferred work of this thread, each flush function once for all its items, and
 * completes those nodes: st's onto the stack, another step's on a stack of its own. */
static void flush_deferred(step *st, int *stack, int *np, int cap)
{
    while (tl_ndef) {
        int n = tl_ndef;
        struct {
            step *st;
            int node;
        } done[TL_DEFERRED];
        void *items[TL_DEFERRED];
        rill_status *err[TL_DEFERRED];
        rill__flush_fn fn = tl_def[0].flush;
        int m = 0, keep = 0;
        for (int k = 0; k < n; k++) {
            if (tl_def[k].flush == fn) {
                done[m].st = tl_def[k].st;
                done[m].node = tl_def[k].node;
                items[m] = tl_def[k].item;
                err[m++] = NULL;
            } else {
                tl_def[keep++] = tl_def[k];
            }
        }
        tl_ndef = keep;
        fn(items, m, err);
        for (int k = 0; k < m; k++) {
            step *ds = done[k].st;
            if (err[k]) {
                step_fail(ds, err[k], ds->plan->nodes[done[k].node].node);
                rill_status_free(err[k]);
            }
            if (ds == st) {
                complete(st, done[k].node, stack, np, cap);
            } else {
                int local[64], ln = 0;
                complete(ds, done[k].node, local, &ln, 64);
                drain(ds, local, ln, 64);
            }
        }
    }
}

/* Runs what is on the stack and whatever becomes ready, depth first. */
static void drain(step *st, int *stack, int n, int cap)
{
    rill__plan *p = st->plan;
    const int *ndef = &tl_ndef; /* (one lookup of the thread's variable) */
    for (;;) {
        if (!n) {
            if (!*ndef) break;
            flush_deferred(st, stack, &n, cap);
            continue;
        }
        int i = stack[--n];
        pnode *pn = &p->nodes[i];
        /* Deferred writes go out before anything that may wait for them. */
        if (*ndef && pn->node->op->blocking) {
            stack[n++] = i;
            flush_deferred(st, stack, &n, cap);
            continue;
        }
        void *item = NULL;
        rill__flush_fn flush = NULL;
        int r = execute(st, i, &item, &flush);
        if (r == RAN_PARKED) {
            if (park_node(st, i)) stack[n++] = i;
            continue;
        }
        if (r == RAN_DEFERRED) {
            if (tl_ndef == TL_DEFERRED) flush_deferred(st, stack, &n, cap);
            tl_def[tl_ndef].st = st;
            tl_def[tl_ndef].node = i;
            tl_def[tl_ndef].item = item;
            tl_def[tl_ndef++].flush = flush;
            continue;
        }
        complete(st, i, stack, &n, cap);
    }
}

static void run_loop(step *st, int first, int *stack, int cap)
{
    stack[0] = first;
    drain(st, stack, 1, cap);
}

static pnode *slot_producer(rill__plan *p, int slot)
{
    for (int i = 0; i < p->n; i++)
        if (slot >= p->nodes[i].out_base && slot < p->nodes[i].out_base + p->nodes[i].noutputs)
            return &p->nodes[i];
    return NULL;
}

static bool check_feed(const rill__plan *p, int i, const rill_tensor *t, rill_status *s)
{
    const rill_output f = p->feeds[i];
    if (!t) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "The value fed for '%s:%d' is NULL", f.node->name,
                        f.index);
        return false;
    }
    if (t->dtype != p->feed_dtype[i]) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Cannot feed value of dtype %s for Tensor '%s:%d', which has dtype %s",
                        rill_dtype_name(t->dtype), f.node->name, f.index,
                        rill_dtype_name(p->feed_dtype[i]));
        return false;
    }
    const rill_shape *want = &p->feed_shape[i];
    bool ok = want->rank < 0;
    if (!ok && want->rank == t->shape.rank) {
        ok = true;
        for (int d = 0; d < want->rank; d++)
            if (want->dims[d] >= 0 && want->dims[d] != t->shape.dims[d]) ok = false;
    }
    if (!ok) {
        char a[96], b[96];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Cannot feed value of shape %s for Tensor '%s:%d', which has shape '%s'",
                        rill_shape_str(&t->shape, a, sizeof a), f.node->name, f.index,
                        rill_shape_str(want, b, sizeof b));
        return false;
    }
    return true;
}

/* A step of p with these feeds, ready to start; NULL (s set) when a feed is bad. */
static step *step_begin(rill__plan *p, rill_tensor *const *feed_values, rill_tensor **fetch_values,
                        rill__deadline d, rill_status *s)
{
    for (int i = 0; i < p->nfetches; i++) fetch_values[i] = NULL;
    for (int i = 0; i < p->nfeeds; i++)
        if (!check_feed(p, i, feed_values[i], s)) return NULL;

    step *st = atomic_exchange_explicit(&p->cached, NULL, memory_order_acquire);
    if (!st) st = step_new(p);

    rill_status_clear(st->status);
    atomic_store(&st->failed, false);
    st->cancel_gen = p->cancel ? atomic_load(p->cancel) : 0;
    st->deadline = d;
    for (int i = 0; i < p->nslots; i++)
        atomic_store_explicit(&st->slot_refs[i], p->slot_consumers[i], memory_order_relaxed);
    for (int i = 0; i < p->nfeeds; i++) {
        int slot = p->feed_slot[i];
        if (p->slot_consumers[slot] > 0) st->slots[slot] = rill_tensor_ref(feed_values[i]);
    }
    st->done = false;
    if (p->parks) memset(st->park, 0, (size_t)p->n);
    if (p->dead_flow) {
        memset(st->dead, 0, (size_t)p->n);
        memset(st->ctrl_dead, 0, (size_t)p->n);
    }
    st->nwoken = 0;
    st->async_done = NULL;
    return st;
}

/* Runs the roots and what follows them on this thread (the first expensive ones beyond the
 * first root go to the pool). */
static void step_start(step *st)
{
    rill__plan *p = st->plan;
    for (int i = 0; i < p->n; i++)
        atomic_store_explicit(&st->pending[i], p->nodes[i].npred, memory_order_relaxed);
    atomic_store(&st->remaining, p->n);
    int n = 0;
    st->ready[n++] = p->roots[0]; /* runs last */
    for (int r = 1; r < p->nroots; r++) {
        int c = p->roots[r];
        if (p->inter && p->nodes[c].expensive)
            rill__threadpool_schedule(p->inter, pool_task, &st->tasks[c]);
        else
            st->ready[n++] = c;
    }
    drain(st, st->ready, n, p->n);
}

bool rill__plan_run_async(rill__plan *p, rill_tensor *const *feed_values, rill_tensor **fetch_values,
                          rill__deadline d, rill_status *s, void (*done)(void *arg, rill_code code),
                          void *arg)
{
    step *st = step_begin(p, feed_values, fetch_values, d, s);
    if (!st) return false;
    st->async_done = done;
    st->async_arg = arg;
    st->async_fetches = fetch_values;
    st->async_status = s;
    if (p->n == 0) {
        done(arg, step_end(st, fetch_values, s));
        return true;
    }
    /* This may be a transport thread: expensive nodes go to the pool. */
    bool was = tl_in_wake;
    tl_in_wake = true;
    step_start(st);
    tl_in_wake = was;
    return true;
}

/* A synchronous plan's step (every node runs on this thread: no inter-op pool, nothing parks)
 * runs its nodes one after another in the plan's topological order: what the ready stack would
 * do on one thread, without counting each node's inputs down. A deferred node's work is done at
 * once. */
static void run_in_order(step *st)
{
    rill__plan *p = st->plan;
    for (int i = 0; i < p->n; i++) {
        void *item = NULL;
        rill__flush_fn flush = NULL;
        if (execute(st, i, &item, &flush) == RAN_DEFERRED) {
            rill_status *err = NULL;
            flush(&item, 1, &err);
            if (err) {
                step_fail(st, err, p->nodes[i].node);
                rill_status_free(err);
            }
        }
        pnode *pn = &p->nodes[i];
        if (p->dead_flow && st->dead[i])
            for (int k = pn->nsucc_data; k < pn->nsucc; k++) st->ctrl_dead[pn->succ[k]] = 1;
    }
}

rill_code rill__plan_run(rill__plan *p, rill_tensor *const *feed_values, rill_tensor **fetch_values,
                         rill__deadline d, rill_status *s)
{
    step *st = step_begin(p, feed_values, fetch_values, d, s);
    if (!st) return rill_status_code(s);
    if (p->n > 0 && p->sync) {
        run_in_order(st);
    } else if (p->n > 0) {
        step_start(st);
        /* Wait for the rest, running the parked nodes that were woken (and every 50 ms all of
         * them, to see a deadline, a cancellation or an aborted step). */
        pthread_mutex_lock(&st->mu);
        while (!st->done) {
            if (st->nwoken) {
                int i = st->woken[--st->nwoken];
                st->park[i] &= (unsigned char)~PARK_STATE;
                pthread_mutex_unlock(&st->mu);
                run_loop(st, i, st->ready, p->n);
                pthread_mutex_lock(&st->mu);
                continue;
            }
            if (!p->parks) {
                pthread_cond_wait(&st->cv, &st->mu);
                continue;
            }
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long ns = ts.tv_nsec + 50L * 1000 * 1000;
            ts.tv_sec += ns / 1000000000L;
            ts.tv_nsec = ns % 1000000000L;
            if (pthread_cond_timedwait(&st->cv, &st->mu, &ts) != ETIMEDOUT) continue;
            for (int i = 0; i < p->n; i++)
                if ((st->park[i] & PARK_STATE) == PARK_PARKED) {
                    st->park[i] = (unsigned char)((st->park[i] & ~PARK_STATE) | PARK_QUEUED);
                    st->woken[st->nwoken++] = i;
                }
        }
        pthread_mutex_unlock(&st->mu);
    }

    return step_end(st, fetch_values, s);
}

/* The step's fetches into fetch_values, its status into s; st goes back to the plan's cache. */
static rill_code step_end(step *st, rill_tensor **fetch_values, rill_status *s)
{
    rill__plan *p = st->plan;
    rill_code code = rill_status_code(st->status);
    for (int i = 0; i < p->nfetches; i++) {
        int slot = p->fetch_slot[i];
        if (code == RILL_OK) {
            if (st->slots[slot] && rill__is_dead(st->slots[slot]) && !p->in_frame) {
                pnode *src = slot_producer(p, slot);
                /* the user's tensor: behind the transfers to the client, as the user named it */
                rill_output t = {src ? src->node : NULL, src ? slot - src->out_base : 0};
                while (t.node && (strcmp(t.node->op->name, "_Recv") == 0 ||
                                  strcmp(t.node->op->name, "_Send") == 0))
                    t = t.node->inputs[0];
                const char *name = !t.node ? "?" : t.node->origin ? t.node->origin->name
                                                                  : t.node->name;
                rill_status_set(st->status, RILL_INVALID_ARGUMENT,
                                "Retval[%d] does not have value: '%s:%d' is on a branch of a "
                                "cond that was not taken",
                                i, name, t.index);
                code = RILL_INVALID_ARGUMENT;
            } else if (!st->slots[slot]) {
                pnode *src = slot_producer(p, slot);
                if (src && src->is_variable) {
                    rill_status_set(st->status, RILL_FAILED_PRECONDITION,
                                    "Attempting to use uninitialized value %s", src->node->name);
                    code = RILL_FAILED_PRECONDITION;
                } else {
                    rill_status_set(st->status, RILL_INTERNAL, "fetch %d was not produced", i);
                    code = RILL_INTERNAL;
                }
            } else {
                fetch_values[i] = rill_tensor_ref(st->slots[slot]);
            }
        }
    }
    if (code != RILL_OK)
        for (int i = 0; i < p->nfetches; i++) {
            rill_tensor_free(fetch_values[i]);
            fetch_values[i] = NULL;
        }
    /* Drop what the fetches held (and anything an error left behind). */
    for (int i = 0; i < p->nslots; i++) {
        if (st->slots[i]) {
            rill_tensor_free(st->slots[i]);
            st->slots[i] = NULL;
        }
    }
    rill_status_copy(s, st->status);

    step *none = NULL;
    if (atomic_compare_exchange_strong_explicit(&p->cached, &none, st, memory_order_release,
                                                memory_order_relaxed))
        st = NULL;
    step_free(st);
    return code;
}
