/* frame.c - while loops in the executor: each loop of an execution graph becomes one _Frame node
 * that runs the loop's body as a plan of its own, once per iteration.
 *
 * A loop in the graph (ops_control_flow.c): Enter nodes bring values in (constant ones are the
 * same on every iteration), a Merge per loop variable, a LoopCond, a Switch per variable on it,
 * NextIteration nodes (each with a control input on its Merge: the back edge) and Exit nodes.
 * rill__frames_rewrite finds every loop's members (what is reachable from its Enters before its
 * Exits, graph/loops.c), adds a _Frame node whose inputs are the loop variables' initial values, then the
 * constant Enters' values, then any other outside tensor the body reads, and points each Exit at
 * the _Frame's output of the same rank. The outer plan then runs the Enters, the _Frame and the
 * Exits; the members run only in the _Frame's own plan, the iteration plan, whose feeds are each
 * Merge (its value and value_index) and the _Frame's other inputs, and whose fetches are the
 * LoopCond, the NextIterations and the Exits' sources.
 *
 * An iteration is one run of that plan: the Merges are fed this iteration's values (value_index
 * 0 on the first iteration, 1 after), the predicate decides each Switch, and on the side not
 * taken everything is dead (src/kernels/control_flow.c): while the loop goes on the Exits'
 * sources are dead and the NextIterations live; on the last run the body is dead and the Exits'
 * sources hold the final values. Iterations run one after another on the thread that runs the
 * _Frame (a loop's iterations depend on each other through their variables; the nodes of one
 * iteration still run in parallel on the intra-op pool): parallel_iterations is taken as 1.
 * Loops nest: an inner loop is a _Frame node of the outer loop's iteration plan. A loop ends its
 * step with an error naming it when the step's deadline passes or the session is cancelled
 * (Ctrl-C) between two iterations. */
#include "runtime.h"

#include <stdlib.h>
#include <string.h>

struct rill__frame {
    char *name;      /* the loop's frame_name, for messages */
    rill__plan *body; /* one iteration */
    int nvars, ninv, nexits;
    rill_tensor *index[2]; /* value_index of the first and of later iterations */
};

static bool is_op(const rill_node *n, const char *op)
{
    return strcmp(n->op->name, op) == 0;
}


static int64_t *push_id(int64_t *v, int *n, int *cap, int64_t x)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        v = rill__realloc(v, (size_t)*cap * sizeof *v);
        RILL_CHECK_ALLOC(v);
    }
    v[(*n)++] = x;
    return v;
}

/* Collapses loop fname (see the file comment). */
static bool rewrite_one(rill_graph *g, const char *fname, int *depth, rill_status *s)
{
    int nn = rill_graph_num_nodes(g);
    rill__consumers cons;
    rill__consumers_build(g, &cons);
    int *cstart = rill__calloc((size_t)nn + 2, sizeof *cstart);
    int *stack = rill__malloc(((size_t)nn + 1) * 4 * sizeof *stack);
    RILL_CHECK_ALLOC(cstart);
    RILL_CHECK_ALLOC(stack);
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
    rill_output *ins = NULL;
    int nin = 0, incap = 0, nvars = 0;
    int64_t *merges = NULL, *nexts = NULL, *exits = NULL, *exit_src = NULL;
    int64_t *ctrl = NULL;
    int nm = 0, mcap = 0, nx = 0, xcap = 0, ne = 0, ecap = 0, nsrc = 0, scap = 0, nc = 0, ccap = 0;
    rill_node *loop_cond = NULL;
    bool ok = rill__loop_members(g, fname, depth, s);

    /* What the loop's ends (its LoopCond, NextIterations and Exits) need is the loop; a member
     * they do not need is outside code reading the loop: only its Exits may be read. */
    char *need = rill__calloc((size_t)nn + 1, 1);
    RILL_CHECK_ALLOC(need);
    int nst = 0;
    for (int i = 0; ok && i < nn; i++) {
        rill_node *n = rill_graph_node(g, i);
        if (depth[i] == 1 &&
            (is_op(n, "Exit") || is_op(n, "NextIteration") || is_op(n, "LoopCond")))
            need[i] = 1, stack[nst++] = i;
    }
    while (nst) {
        rill_node *n = rill_graph_node(g, stack[--nst]);
        for (int k = 0; k < n->ninputs + n->ncontrol; k++) {
            rill_node *in = k < n->ninputs ? n->inputs[k].node : n->control_inputs[k - n->ninputs];
            if (depth[in->id] && !need[in->id]) need[in->id] = 1, stack[nst++] = in->id;
        }
    }
    /* Name the farthest such node (one no member reads) and what it reads of the loop. */
    for (int i = 0; ok && i < nn; i++) {
        rill_node *n = rill_graph_node(g, i);
        if (!depth[i] || need[i]) continue;
        bool sink = true;
        for (int e = cons.start[i]; e < cons.start[i + 1]; e++)
            if (depth[cons.node[e]->id]) sink = false;
        for (int k = 0; sink && k < n->ninputs; k++) {
            rill_node *in = n->inputs[k].node;
            if (!depth[in->id]) continue;
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "'%s' reads '%s' from inside while loop '%s': only the loop's "
                            "results (its Exits) can be used outside it",
                            n->name, in->name, fname);
            ok = false;
            break;
        }
    }
    rill__free(need);
    /* The loop variables (in Enter order), then the constant Enters, then outside tensors. */
    for (int pass = 0; ok && pass < 3; pass++) {
        for (int i = 0; ok && i < nn; i++) {
            rill_node *n = rill_graph_node(g, i);
            if (!depth[i]) continue;
            bool own_enter = is_op(n, "Enter") && depth[i] == 1;
            if (pass < 2 && own_enter &&
                rill__attr_bool(n, "is_constant", false) == (pass == 1)) {
                if (nin == incap) {
                    incap = incap ? 2 * incap : 8;
                    ins = rill__realloc(ins, (size_t)incap * sizeof *ins);
                    RILL_CHECK_ALLOC(ins);
                }
                ins[nin++] = (rill_output){n, 0};
                if (pass == 1) continue;
                nvars++;
                rill_node *m = NULL;
                for (int e = cons.start[i]; e < cons.start[i + 1]; e++)
                    if (is_op(cons.node[e], "Merge")) m = cons.node[e];
                if (!m || m->ninputs != 1) {
                    rill_status_set(s, RILL_INVALID_ARGUMENT,
                                    "Enter '%s' of while loop '%s' feeds no Merge of its own",
                                    n->name, fname);
                    ok = false;
                    break;
                }
                merges = push_id(merges, &nm, &mcap, m->id);
                rill_node *nxt = NULL;
                for (int e = cstart[m->id]; e < cstart[m->id + 1]; e++)
                    if (is_op(rill_graph_node(g, cnode[e]), "NextIteration"))
                        nxt = rill_graph_node(g, cnode[e]);
                if (!nxt) {
                    rill_status_set(s, RILL_INVALID_ARGUMENT,
                                    "Merge '%s' of while loop '%s' has no NextIteration", m->name,
                                    fname);
                    ok = false;
                    break;
                }
                nexts = push_id(nexts, &nx, &xcap, nxt->id);
                continue;
            }
            if (pass != 2 || own_enter) continue;
            if (depth[i] == 1 && is_op(n, "LoopCond")) {
                if (loop_cond) {
                    rill_status_set(s, RILL_INVALID_ARGUMENT,
                                    "while loop '%s' has two LoopConds ('%s', '%s')", fname,
                                    loop_cond->name, n->name);
                    ok = false;
                    break;
                }
                loop_cond = n;
            }
            if (depth[i] == 1 && is_op(n, "Exit")) {
                exits = push_id(exits, &ne, &ecap, i);
                exit_src = push_id(exit_src, &nsrc, &scap, n->inputs[0].node->id);
                exit_src = push_id(exit_src, &nsrc, &scap, n->inputs[0].index);
            }
            const char *op = n->op->name;
            if (strcmp(op, "_Send") == 0 || strcmp(op, "_Recv") == 0 ||
                strcmp(op, "_RemoteSend") == 0 || strcmp(op, "_RemoteRecv") == 0) {
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "while loop '%s' spans devices or tasks: '%s' (%s) moves a tensor "
                                "from %s to %s inside it. rill runs a loop on one device: place "
                                "the loop's ops together (tensors from outside the loop may come "
                                "from anywhere)",
                                fname, n->origin ? n->origin->name : n->name, op,
                                rill__node_attr(n, "send_device")
                                    ? rill__node_attr(n, "send_device")->v.s
                                    : "?",
                                rill__node_attr(n, "recv_device")
                                    ? rill__node_attr(n, "recv_device")->v.s
                                    : "?");
                ok = false;
                break;
            }
            /* Outside tensors the body reads without an Enter. */
            for (int k = 0; k < n->ninputs; k++) {
                rill_output in = n->inputs[k];
                if (depth[in.node->id]) continue;
                bool seen = false;
                for (int j = 0; j < nin; j++)
                    if (ins[j].node == in.node && ins[j].index == in.index) seen = true;
                if (seen) continue;
                if (nin == incap) {
                    incap = incap ? 2 * incap : 8;
                    ins = rill__realloc(ins, (size_t)incap * sizeof *ins);
                    RILL_CHECK_ALLOC(ins);
                }
                ins[nin++] = in;
            }
            /* Control inputs from outside hold back the whole loop. */
            for (int k = 0; k < n->ncontrol; k++)
                if (!depth[n->control_inputs[k]->id])
                    ctrl = push_id(ctrl, &nc, &ccap, n->control_inputs[k]->id);
        }
    }
    if (ok && (!loop_cond || !nvars || !ne)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "while loop '%s' is incomplete (%s): build loops with tf.while_loop",
                        fname, !loop_cond ? "no LoopCond" : !nvars ? "no loop variable" : "no Exit");
        ok = false;
    }
    if (ok) {
        int64_t lc = loop_cond->id;
        rill__attr at[7] = {
            RILL__A_STRING("frame_name", fname),
            RILL__A_INT("num_outputs", ne),
            RILL__A_INT("nvars", nvars),
            RILL__A_INTS("merges", nm, merges),
            RILL__A_INTS("nexts", nx, nexts),
            RILL__A_INTS("loop_cond", 1, &lc),
            RILL__A_INTS("exit_src", nsrc, exit_src),
        };
        char *name = rill__asprintf("%s/_Frame", fname);
        rill_node *f = rill__node_create(g, "_Frame", name, ins, nin, at, 7);
        rill__free(name);
        if (!f) {
            rill_status_copy(s, rill_graph_status(g));
            ok = false;
        } else {
            f->assigned = loop_cond->assigned;
            for (int k = 0; k < nc; k++) rill_node_add_control_input(f, rill_graph_node(g, (int)ctrl[k]));
            for (int k = 0; k < ne; k++) {
                rill_node *x = rill_graph_node(g, (int)exits[k]);
                f->out_dtypes[k] = x->out_dtypes[0];
                f->out_shapes[k] = x->out_shapes[0];
                x->inputs[0] = (rill_output){f, k};
                int keep = 0;
                for (int c = 0; c < x->ncontrol; c++)
                    if (!depth[x->control_inputs[c]->id])
                        x->control_inputs[keep++] = x->control_inputs[c];
                x->ncontrol = keep;
            }
        }
    }
    rill__free(ins);
    rill__free(merges);
    rill__free(nexts);
    rill__free(exits);
    rill__free(exit_src);
    rill__free(ctrl);
    rill__free(cstart);
    rill__free(cnode);
    rill__free(cfill);
    rill__free(stack);
    rill__consumers_free(&cons);
    return ok;
}

bool rill__frames_rewrite(rill_graph *g, rill_status *s)
{
    int nn = rill_graph_num_nodes(g);
    /* The loops, by frame name (those collapsed already are marked done). */
    const char **names = NULL;
    char *done = NULL;
    int nf = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < nn; i++) {
            rill_node *n = rill_graph_node(g, i);
            const char *f = is_op(n, pass ? "_Frame" : "Enter") ? rill__frame_name(n) : "";
            if (!*f) continue;
            int k = 0;
            while (k < nf && strcmp(names[k], f) != 0) k++;
            if (k == nf) {
                names = rill__realloc(names, (size_t)(nf + 1) * sizeof *names);
                done = rill__realloc(done, (size_t)(nf + 1));
                RILL_CHECK_ALLOC(names);
                RILL_CHECK_ALLOC(done);
                names[nf] = f;
                done[nf++] = 0;
            }
            if (pass) done[k] = 1;
        }
    bool ok = true;
    int *depth = NULL;
    for (int k = 0; ok && k < nf; k++) {
        if (done[k]) continue;
        /* The graph grows by one node per loop. */
        depth = rill__realloc(depth, (size_t)(rill_graph_num_nodes(g) + 1) * sizeof *depth);
        RILL_CHECK_ALLOC(depth);
        ok = rewrite_one(g, names[k], depth, s);
    }
    rill__free(depth);
    rill__free(names);
    rill__free(done);
    return ok;
}

static const int64_t *ints(const rill_node *n, const char *name, int *count)
{
    const rill__attr *a = rill__node_attr(n, name);
    *count = a ? a->v.ints.n : 0;
    return a ? a->v.ints.v : NULL;
}

rill__frame *rill__frame_new(const rill__plan_args *outer, rill_node *fn, rill_status *s)
{
    rill_graph *g = fn->graph;
    rill__frame *f = rill__calloc(1, sizeof *f);
    RILL_CHECK_ALLOC(f);
    f->name = rill__strdup(rill__frame_name(fn));
    f->nvars = (int)rill__attr_int(fn, "nvars", 0);
    f->ninv = fn->ninputs - f->nvars;
    f->nexits = fn->noutputs;
    int nm, nx, nl, ns;
    const int64_t *merges = ints(fn, "merges", &nm), *nexts = ints(fn, "nexts", &nx);
    const int64_t *lc = ints(fn, "loop_cond", &nl), *src = ints(fn, "exit_src", &ns);
    int nfeeds = 2 * f->nvars + f->ninv, nfetch = 1 + f->nvars + f->nexits;
    rill_output *feeds = rill__malloc((size_t)nfeeds * sizeof *feeds);
    rill_output *fetches = rill__malloc((size_t)nfetch * sizeof *fetches);
    RILL_CHECK_ALLOC(feeds);
    RILL_CHECK_ALLOC(fetches);
    for (int k = 0; k < f->nvars; k++) {
        rill_node *m = rill_graph_node(g, (int)merges[k]);
        feeds[2 * k] = (rill_output){m, 0};
        feeds[2 * k + 1] = (rill_output){m, 1};
        fetches[1 + k] = (rill_output){rill_graph_node(g, (int)nexts[k]), 0};
    }
    for (int k = 0; k < f->ninv; k++) feeds[2 * f->nvars + k] = fn->inputs[f->nvars + k];
    fetches[0] = (rill_output){rill_graph_node(g, (int)lc[0]), 0};
    for (int k = 0; k < f->nexits; k++)
        fetches[1 + f->nvars + k] =
            (rill_output){rill_graph_node(g, (int)src[2 * k]), (int)src[2 * k + 1]};
    (void)nm, (void)nx, (void)nl, (void)ns;
    rill__plan_args a = *outer;
    a.feeds = feeds;
    a.nfeeds = nfeeds;
    a.fetches = fetches;
    a.nfetches = nfetch;
    a.targets = NULL;
    a.ntargets = 0;
    a.feed_names = NULL;
    a.inter_op_pool = NULL; /* an iteration runs on the _Frame's thread (see the file comment) */
    a.in_frame = true;
    f->body = rill__plan_new(&a, s);
    rill__free(feeds);
    rill__free(fetches);
    for (int k = 0; k < 2; k++) {
        f->index[k] = rill_tensor_new(RILL_INT32, NULL, 0);
        *(int32_t *)rill_tensor_data(f->index[k]) = k;
    }
    if (!f->body) {
        rill__frame_free(f);
        return NULL;
    }
    return f;
}

void rill__frame_free(rill__frame *f)
{
    if (!f) return;
    rill__plan_free(f->body);
    rill_tensor_free(f->index[0]);
    rill_tensor_free(f->index[1]);
    rill__free(f->name);
    rill__free(f);
}

/* The loop's name for messages: its frame name without TF's "/while_context". */
static int loop_name_len(const rill__frame *f)
{
    size_t n = strlen(f->name), w = strlen("/while_context");
    return (int)(n > w && strcmp(f->name + n - w, "/while_context") == 0 ? n - w : n);
}

static void deadline_passed(const rill__frame *f, long long iter, rill__deadline d, rill_status *s)
{
    rill_status_set(s, RILL_DEADLINE_EXCEEDED,
                    "while loop '%.*s' had run %lld iterations when the step's %lld ms deadline "
                    "passed: does its condition ever become false?",
                    loop_name_len(f), f->name, iter, (long long)d.timeout_ms);
}

bool rill__frame_run(rill__frame *f, rill_tensor *const *in, rill_tensor **out, rill__deadline d,
                     const atomic_uint *cancel, unsigned cancel_gen, rill_status *s)
{
    int nfeeds = 2 * f->nvars + f->ninv, nfetch = 1 + f->nvars + f->nexits;
    rill_tensor *local[64], **buf = nfeeds + nfetch + f->nvars <= 64
                                       ? local
                                       : rill__malloc((size_t)(nfeeds + nfetch + f->nvars) *
                                                      sizeof *buf);
    RILL_CHECK_ALLOC(buf);
    rill_tensor **feeds = buf, **fetch = buf + nfeeds, **vals = fetch + nfetch;
    for (int k = 0; k < f->nvars; k++) vals[k] = rill_tensor_ref(in[k]);
    for (int k = 0; k < f->ninv; k++) feeds[2 * f->nvars + k] = in[f->nvars + k];
    bool ok = true;
    for (long long iter = 0;; iter++) {
        /* the clock every 16 iterations (an iteration may take well under a microsecond) */
        if (d.at && (iter & 15) == 0 && rill__now_seconds() >= d.at) {
            deadline_passed(f, iter, d, s);
            ok = false;
            break;
        }
        if (cancel && atomic_load(cancel) != cancel_gen) {
            rill_status_set(s, RILL_CANCELLED,
                            "while loop '%.*s' was cancelled after %lld iterations",
                            loop_name_len(f), f->name, iter);
            ok = false;
            break;
        }
        for (int k = 0; k < f->nvars; k++) {
            feeds[2 * k] = vals[k];
            feeds[2 * k + 1] = f->index[iter > 0];
        }
        if (rill__plan_run(f->body, feeds, fetch, d, s) != RILL_OK) {
            if (rill_status_code(s) == RILL_DEADLINE_EXCEEDED)
                deadline_passed(f, iter, d, s);
            ok = false;
            break;
        }
        bool go = *(const bool *)rill_tensor_data(fetch[0]);
        rill_tensor_free(fetch[0]);
        for (int k = 0; k < f->nvars; k++) {
            rill_tensor_free(vals[k]);
            vals[k] = fetch[1 + k];
        }
        if (!go) {
            for (int k = 0; k < f->nexits; k++) out[k] = fetch[1 + f->nvars + k];
            break;
        }
        for (int k = 0; k < f->nexits; k++) rill_tensor_free(fetch[1 + f->nvars + k]);
    }
    for (int k = 0; k < f->nvars; k++) rill_tensor_free(vals[k]);
    if (buf != local) rill__free(buf);
    return ok;
}
