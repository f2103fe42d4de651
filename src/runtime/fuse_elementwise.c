/* fuse_elementwise.c - finds the groups of elementwise ops that the partitioner runs as one
 * _FusedElementwise node (runtime/partition.c), and writes each group's program
 * (kernels/cpu/cpu_fused.c runs it).
 *
 * An LSTM step, as BasicLSTMCell builds it, is one MatMul for the four gates and then a dozen
 * elementwise ops on [batch, units] tensors (Split, Add, three Sigmoids, two Tanhs, three Muls,
 * Add), and its gradient as many again (Muls, SigmoidGrad, TanhGrad, AddN, ConcatV2). Run one by
 * one, each op is a kernel call, an output allocation and a pass over memory; fused, the group is
 * one pass over the rows with every intermediate in a row-sized buffer that stays in L1. Nothing
 * here knows about LSTMs: any connected group of these ops on tensors of one shape fuses, so a
 * GRU's cell, a gated unit or a hand-written activation does too.
 *
 * Members: Sigmoid, Tanh, Relu; SigmoidGrad, TanhGrad, ReluGrad; Add, Sub, Mul, Div, Maximum,
 * Minimum on two operands of the group's shape or one of them a scalar; AddN; SumToShape to the
 * group's shape (a gradient's reduction that reduces nothing: checked at run time); Split along the
 * last axis (its outputs are column views of its input, so the split copies nothing) and ConcatV2
 * along the last axis of group values (written in place into the concatenation). All of one shape
 * known at build time but for unknown leading dimensions (the kernel checks those at run time),
 * float, on CPU:0, with no control edge and nothing fed. The kernel calls the same vector loops
 * (loops.h) the ops' own kernels call, element by element in the same order, so the fused results
 * are the unfused ones' bits.
 *
 * A group must stay a valid node: no path may leave it and come back (it would become a cycle),
 * checked with the groups accepted before it taken as single nodes; and every member must be dead
 * exactly when the others are (a node's "liveness label" below), since a fused node runs only
 * when none of its inputs is dead. */
#include "runtime.h"

#include <stdlib.h>
#include <string.h>

/* What role an op can take in a group. */
enum { K_NONE, K_UNARY, K_BINARY, K_GRAD, K_ADDN, K_SPLIT, K_CONCAT, K_SUMTO };

static const struct {
    const char *op;
    int kind, code;
} ew_ops[] = {
    {"Sigmoid", K_UNARY, RILL__EW_SIGMOID},
    {"Tanh", K_UNARY, RILL__EW_TANH},
    {"Relu", K_UNARY, RILL__EW_RELU},
    {"SigmoidGrad", K_GRAD, RILL__EW_SIGMOID_GRAD},
    {"TanhGrad", K_GRAD, RILL__EW_TANH_GRAD},
    {"ReluGrad", K_GRAD, RILL__EW_RELU_GRAD},
    {"Add", K_BINARY, RILL__EW_ADD},
    {"Sub", K_BINARY, RILL__EW_SUB},
    {"Mul", K_BINARY, RILL__EW_MUL},
    {"Div", K_BINARY, RILL__EW_DIV},
    {"Maximum", K_BINARY, RILL__EW_MAX},
    {"Minimum", K_BINARY, RILL__EW_MIN},
    {"AddN", K_ADDN, 0},
    {"Split", K_SPLIT, 0},
    {"ConcatV2", K_CONCAT, 0},
    {"SumToShape", K_SUMTO, 0},
};

static int op_index(const rill_node *n)
{
    for (size_t i = 0; i < sizeof ew_ops / sizeof ew_ops[0]; i++)
        if (strcmp(n->op->name, ew_ops[i].op) == 0) return (int)i;
    return -1;
}

static rill_shape in_shape(const rill_node *n, int k)
{
    return n->inputs[k].node->out_shapes[n->inputs[k].index];
}

static bool in_float(const rill_node *n, int k)
{
    return n->inputs[k].node->out_dtypes[n->inputs[k].index] == RILL_FLOAT;
}

/* Equal as far as build time knows: the same rank, the last dimension known, every dimension
 * the same number or unknown in both (then the kernel compares them). */
static bool same_static(rill_shape a, rill_shape b)
{
    if (a.rank < 1 || a.rank != b.rank || a.dims[a.rank - 1] <= 0) return false;
    for (int i = 0; i < a.rank; i++)
        if (a.dims[i] != b.dims[i] || (i == a.rank - 1 && a.dims[i] < 0)) return false;
    return true;
}

static bool is_scalar(rill_shape s)
{
    return s.rank == 0;
}

/* Node n's shape in a group (that of the values it makes or reads), or rank -1 when n cannot
 * join one. */
static rill_shape member_shape(const rill_node *n, int kind)
{
    rill_shape none = rill_shape_unknown(), out = n->noutputs ? n->out_shapes[0] : none;
    if (n->noutputs < 1) return none;
    for (int i = 0; i < n->noutputs; i++)
        if (n->out_dtypes[i] != RILL_FLOAT) return none;
    switch (kind) {
    case K_UNARY:
        return n->ninputs == 1 && in_float(n, 0) && same_static(in_shape(n, 0), out) ? out : none;
    case K_GRAD:
        return n->ninputs == 2 && in_float(n, 0) && in_float(n, 1) &&
                       same_static(in_shape(n, 0), out) && same_static(in_shape(n, 1), out)
                   ? out
                   : none;
    case K_BINARY: {
        if (n->ninputs != 2 || !in_float(n, 0) || !in_float(n, 1)) return none;
        rill_shape a = in_shape(n, 0), b = in_shape(n, 1);
        bool ok = (same_static(a, out) && (same_static(b, out) || is_scalar(b))) ||
                  (is_scalar(a) && same_static(b, out));
        return ok ? out : none;
    }
    case K_ADDN:
        for (int k = 0; k < n->ninputs; k++)
            if (!in_float(n, k) || !same_static(in_shape(n, k), out)) return none;
        return out;
    case K_SPLIT: {
        rill_shape in = in_shape(n, 0);
        if (n->ninputs != 1 || !in_float(n, 0) || in.rank < 1 || !same_static(out, out))
            return none;
        int64_t axis = rill__attr_int(n, "axis", 0);
        if (axis < 0) axis += in.rank;
        if (axis != in.rank - 1 || in.dims[axis] != out.dims[axis] * n->noutputs) return none;
        for (int i = 0; i < n->noutputs; i++)
            if (!same_static(n->out_shapes[i], out)) return none;
        for (int i = 0; i < in.rank - 1; i++)
            if (in.dims[i] != out.dims[i]) return none;
        return out;
    }
    case K_SUMTO: /* a gradient's reduction to its operand's shape: none when that is the same */
        return n->ninputs == 2 && in_float(n, 0) && same_static(in_shape(n, 0), out) ? out : none;
    case K_CONCAT: { /* two parts or more; the axis is an attr */
        rill_shape p = in_shape(n, 0);
        int64_t axis = rill__attr_int(n, "axis", 0);
        if (n->ninputs < 2 || p.rank < 1) return none;
        if (axis < 0) axis += p.rank;
        if (axis != p.rank - 1) return none;
        for (int k = 0; k < n->ninputs; k++)
            if (!in_float(n, k) || !same_static(in_shape(n, k), p)) return none;
        return p;
    }
    default:
        return none;
    }
}

typedef struct finder {
    rill_graph *g;
    int nn;
    const char *need;
    int *lab_start; /* per node: index of its outputs' labels */
    int *label;     /* per (node, output) */
    int *cons_start, *cons; /* consumers (data and control) among needed nodes, CSR */
    int *kind;      /* K_* per node; K_NONE: not a candidate */
    int *group_of;  /* the group's index, or -1 */
    int *stamp, mark; /* walk marks */
    int *scratch;   /* a walk's stack */
} finder;

/* Liveness labels: two nodes with one label are dead in the same runs. 0: never dead (no
 * cond's Switch upstream). A cond Switch's output p gets a label of its own; a loop's Switch (its
 * predicate a LoopCond) passes its input's on, since an iteration runs only while it is live. A
 * node takes its inputs' label when they have at most one nonzero label between them, else a
 * label of its own: it is dead when any of them is, which nothing else need match. */
static void make_labels(finder *f)
{
    int next = 1;
    for (int i = 0; i < f->nn; i++) {
        if (!f->need[i]) continue;
        rill_node *n = rill_graph_node(f->g, i);
        int l = 0;
        bool own = false;
        for (int k = 0; k < n->ninputs + n->ncontrol && !own; k++) {
            const rill_node *src = k < n->ninputs ? n->inputs[k].node : n->control_inputs[k - n->ninputs];
            int idx = k < n->ninputs ? n->inputs[k].index : 0;
            if (src->id >= i) { /* a control edge against node order: label it apart */
                own = true;
                break;
            }
            int sl = f->label[f->lab_start[src->id] + (idx < src->noutputs ? idx : 0)];
            if (sl == 0 || sl == l) continue;
            if (l == 0)
                l = sl;
            else
                own = true;
        }
        /* A loop's Merge (its one input an Enter) is live in every iteration, a cond's Merge
         * when any branch is. */
        bool merge = strcmp(n->op->name, "Merge") == 0;
        bool loop_merge = merge && n->ninputs == 1 && strcmp(n->inputs[0].node->op->name, "Enter") == 0;
        if (loop_merge)
            l = 0;
        else if (own || merge)
            l = next++;
        bool sw = strcmp(n->op->name, "Switch") == 0 && n->ninputs == 2;
        bool loop_switch = sw && strcmp(n->inputs[1].node->op->name, "LoopCond") == 0;
        for (int o = 0; o < n->noutputs; o++)
            f->label[f->lab_start[i] + o] = (sw && !loop_switch) || (loop_switch && o == 0) ? next++ : l;
    }
}

static void make_consumers(finder *f)
{
    f->cons_start = rill__calloc((size_t)f->nn + 2, sizeof *f->cons_start);
    RILL_CHECK_ALLOC(f->cons_start);
    for (int pass = 0; pass < 2; pass++) {
        int *fill = pass ? rill__calloc((size_t)f->nn + 1, sizeof *fill) : NULL;
        for (int i = 0; i < f->nn; i++) {
            if (!f->need[i]) continue;
            rill_node *n = rill_graph_node(f->g, i);
            for (int k = 0; k < n->ninputs + n->ncontrol; k++) {
                int src = k < n->ninputs ? n->inputs[k].node->id : n->control_inputs[k - n->ninputs]->id;
                if (!pass)
                    f->cons_start[src + 1]++;
                else
                    f->cons[f->cons_start[src] + fill[src]++] = i;
            }
        }
        if (!pass) {
            for (int i = 0; i < f->nn; i++) f->cons_start[i + 1] += f->cons_start[i];
            f->cons = rill__malloc(((size_t)f->cons_start[f->nn] + 1) * sizeof *f->cons);
            RILL_CHECK_ALLOC(f->cons);
        }
        rill__free(fill);
    }
}

/* Ops that hand a tensor to a waiter this graph has no edge to (another process, a queue's
 * dequeue in the same step), and the ops that wait. */
static bool hands_off(const rill_node *n)
{
    return strcmp(n->op->name, "_RemoteSend") == 0 || strstr(n->op->name, "Enqueue") != NULL;
}

static bool waits(const rill_node *n)
{
    return strcmp(n->op->name, "_RemoteRecv") == 0 || strstr(n->op->name, "Dequeue") != NULL;
}

/* When the graph has an op that waits for a hand-off: from_recv[i], node i depends on such an
 * op; to_send[i], a hand-off depends on node i (over data and control edges). Both stay NULL
 * otherwise. */
static void remote_paths(finder *f, char **from_recv, char **to_send)
{
    bool any = false;
    for (int i = 0; i < f->nn && !any; i++) any = f->need[i] && waits(rill_graph_node(f->g, i));
    if (!any) return;
    char *fr = rill__calloc((size_t)f->nn + 1, 1), *ts = rill__calloc((size_t)f->nn + 1, 1);
    int *stack = rill__malloc(((size_t)f->nn + 1) * sizeof *stack);
    RILL_CHECK_ALLOC(fr);
    RILL_CHECK_ALLOC(ts);
    RILL_CHECK_ALLOC(stack);
    int ns = 0;
    for (int i = 0; i < f->nn; i++)
        if (f->need[i] && waits(rill_graph_node(f->g, i))) fr[i] = 1, stack[ns++] = i;
    while (ns) { /* forward, over consumers */
        int v = stack[--ns];
        for (int c = f->cons_start[v]; c < f->cons_start[v + 1]; c++)
            if (!fr[f->cons[c]]) fr[f->cons[c]] = 1, stack[ns++] = f->cons[c];
    }
    for (int i = 0; i < f->nn; i++)
        if (f->need[i] && hands_off(rill_graph_node(f->g, i))) ts[i] = 1, stack[ns++] = i;
    while (ns) { /* backward, over inputs */
        rill_node *n = rill_graph_node(f->g, stack[--ns]);
        for (int k = 0; k < n->ninputs + n->ncontrol; k++) {
            int x = k < n->ninputs ? n->inputs[k].node->id : n->control_inputs[k - n->ninputs]->id;
            if (f->need[x] && !ts[x]) ts[x] = 1, stack[ns++] = x;
        }
    }
    rill__free(stack);
    *from_recv = fr;
    *to_send = ts;
}

/* Groups as they grow: members in node order. */
typedef struct grow {
    int n, cap, minid;
    int *m;
} grow;

/* Whether tensor-producing node u is reachable from group gi: a walk back from u over data and
 * control inputs, no further than the group's first node, in which a node of another group
 * stands for all of that group (the fused node will wait for all its inputs). A walk that
 * grows past a bound answers yes: the node then just stays out of the group. */
static bool reaches(finder *f, grow *groups, int u, int gi)
{
    enum { BUDGET = 4096 };
    int *stack = f->scratch, ns = 0, visits = 0;
    int mark = ++f->mark;
    stack[ns++] = u;
    f->stamp[u] = mark;
    while (ns) {
        int v = stack[--ns];
        if (f->group_of[v] == gi) return true;
        if (++visits > BUDGET) return true;
        int other = f->group_of[v];
        int nexp = other >= 0 ? groups[other].n : 1;
        for (int e = 0; e < nexp; e++) {
            int w = other >= 0 ? groups[other].m[e] : v;
            rill_node *n = rill_graph_node(f->g, w);
            for (int k = 0; k < n->ninputs + n->ncontrol; k++) {
                int x = k < n->ninputs ? n->inputs[k].node->id : n->control_inputs[k - n->ninputs]->id;
                /* a walk from the group only meets later nodes, but a grown group's members
                 * stand for each other, whatever their place */
                if ((x < groups[gi].minid && f->group_of[x] < 0) || f->stamp[x] == mark ||
                    !f->need[x])
                    continue;
                f->stamp[x] = mark;
                if (ns >= f->nn) return true;
                stack[ns++] = x;
            }
        }
    }
    return false;
}

/* Node i may join group gi: no input of i outside the group is reachable from it (else the
 * fused node would wait on itself). */
static bool can_join(finder *f, grow *groups, int i, int gi)
{
    rill_node *n = rill_graph_node(f->g, i);
    for (int k = 0; k < n->ninputs; k++) {
        int u = n->inputs[k].node->id;
        if (f->group_of[u] != gi && (u >= groups[gi].minid || f->group_of[u] >= 0) &&
            reaches(f, groups, u, gi))
            return false;
    }
    return true;
}

static void grow_add(grow *G, int id)
{
    if (G->n == G->cap) {
        G->cap = G->cap ? 2 * G->cap : 8;
        G->m = rill__realloc(G->m, (size_t)G->cap * sizeof *G->m);
        RILL_CHECK_ALLOC(G->m);
    }
    if (!G->n) G->minid = id;
    G->m[G->n++] = id;
}

/* --- the program ---
 * prog: [H, nvalues, ninput_values, ninstructions, noutputs,
 *        ninput_values x (value, input, column offset, scalar),
 *        ninstructions x (code, dst, a, b),
 *        noutputs x (nparts, part values...)] */

typedef struct progbuf {
    int64_t *v;
    int n, cap;
} progbuf;

static void emit(progbuf *p, int64_t x)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->v = rill__realloc(p->v, (size_t)p->cap * sizeof *p->v);
        RILL_CHECK_ALLOC(p->v);
    }
    p->v[p->n++] = x;
}

/* The values: one per (member, output); external inputs get theirs as they are met. */
typedef struct valmap {
    int *first;        /* per member position: its outputs' first value */
    rill_output *ext;  /* per external value: the tensor */
    int *ext_val, next, next_ext;
    int *ext_input, *ext_off, *ext_scalar;
    rill_output *inputs; /* the fused node's inputs (distinct tensors) */
    int ninputs;
} valmap;

static int member_pos(const rill__ew_group *G, int id)
{
    int lo = 0, hi = G->nmembers - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (G->members[mid] == id) return mid;
        if (G->members[mid] < id)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* A new input-value entry for tensor o (kind 0 rows, 1 a scalar, 2 a shape check), reading the
 * fused node's input that is o, added when it is not one yet. */
static int add_ext(valmap *vm, rill_output o, int off, int kind, int val)
{
    int input = -1;
    for (int i = 0; i < vm->ninputs && input < 0; i++)
        if (vm->inputs[i].node == o.node && vm->inputs[i].index == o.index) input = i;
    if (input < 0) {
        input = vm->ninputs++;
        vm->inputs[input] = o;
    }
    int e = vm->next_ext++;
    vm->ext[e] = o;
    vm->ext_off[e] = off;
    vm->ext_input[e] = input;
    vm->ext_scalar[e] = kind;
    return vm->ext_val[e] = val;
}

/* The value of tensor o read by a member: a member's own, or an external one (column offset off
 * into it: a Split's outputs). */
static int value_of(valmap *vm, const rill__ew_group *G, rill_output o, int off)
{
    int p = member_pos(G, o.node->id);
    if (p >= 0) return vm->first[p] + o.index;
    for (int e = 0; e < vm->next_ext; e++)
        if (vm->ext[e].node == o.node && vm->ext[e].index == o.index && vm->ext_off[e] == off &&
            vm->ext_val[e] >= 0)
            return vm->ext_val[e];
    return add_ext(vm, o, off, is_scalar(o.node->out_shapes[o.index]), vm->next++);
}

/* An input the kernel only compares with the group's shape (SumToShape's target). */
static void shape_check(valmap *vm, rill_output o)
{
    add_ext(vm, o, 0, 2, -1);
}

static void build_program(finder *f, rill__ew_group *G, const rill_output *fetches, int nfetches)
{
    int nin = 0, nval = 0;
    for (int m = 0; m < G->nmembers; m++) {
        rill_node *n = rill_graph_node(f->g, G->members[m]);
        nin += n->ninputs;
        nval += n->noutputs;
    }
    valmap vm = {0};
    vm.first = rill__malloc((size_t)G->nmembers * sizeof *vm.first);
    vm.ext = rill__malloc(((size_t)nin + 1) * sizeof *vm.ext);
    vm.ext_val = rill__malloc(((size_t)nin + 1) * sizeof *vm.ext_val);
    vm.ext_input = rill__malloc(((size_t)nin + 1) * sizeof *vm.ext_input);
    vm.ext_off = rill__malloc(((size_t)nin + 1) * sizeof *vm.ext_off);
    vm.ext_scalar = rill__malloc(((size_t)nin + 1) * sizeof *vm.ext_scalar);
    vm.inputs = rill__malloc(((size_t)nin + 1) * sizeof *vm.inputs);
    RILL_CHECK_ALLOC(vm.first);
    RILL_CHECK_ALLOC(vm.ext);
    RILL_CHECK_ALLOC(vm.ext_val);
    RILL_CHECK_ALLOC(vm.ext_input);
    RILL_CHECK_ALLOC(vm.ext_off);
    RILL_CHECK_ALLOC(vm.ext_scalar);
    RILL_CHECK_ALLOC(vm.inputs);
    for (int m = 0; m < G->nmembers; m++) {
        vm.first[m] = vm.next;
        vm.next += rill_graph_node(f->g, G->members[m])->noutputs;
    }
    int64_t H = G->shape.dims[G->shape.rank - 1];
    progbuf code = {0}, outs = {0};
    int ninstr = 0;
    /* Instructions in node order (inputs before consumers). */
    for (int m = 0; m < G->nmembers; m++) {
        rill_node *n = rill_graph_node(f->g, G->members[m]);
        int kind = f->kind[n->id], code_op = ew_ops[op_index(n)].code, dst = vm.first[m];
        if (kind == K_SPLIT) { /* its outputs are views: made values, no code */
            for (int o = 0; o < n->noutputs; o++) {
                int v = value_of(&vm, G, n->inputs[0], (int)(o * H));
                /* alias: this output's value is that view (a copy instruction would cost a
                 * pass); record it as a move the kernel resolves to a pointer */
                emit(&code, RILL__EW_VIEW), emit(&code, dst + o), emit(&code, v), emit(&code, -1);
                ninstr++;
            }
            continue;
        }
        if (kind == K_CONCAT) continue; /* an output made of its parts, below */
        if (kind == K_SUMTO) { /* the value itself; the kernel checks the shape is its own */
            emit(&code, RILL__EW_VIEW), emit(&code, dst), emit(&code, value_of(&vm, G, n->inputs[0], 0)),
                emit(&code, -1);
            ninstr++;
            shape_check(&vm, n->inputs[1]);
            continue;
        }
        if (kind == K_ADDN) {
            emit(&code, RILL__EW_COPY), emit(&code, dst), emit(&code, value_of(&vm, G, n->inputs[0], 0)),
                emit(&code, -1);
            ninstr++;
            for (int k = 1; k < n->ninputs; k++) {
                emit(&code, RILL__EW_ACCUMULATE), emit(&code, dst),
                    emit(&code, value_of(&vm, G, n->inputs[k], 0)), emit(&code, -1);
                ninstr++;
            }
            continue;
        }
        emit(&code, code_op);
        emit(&code, dst);
        emit(&code, value_of(&vm, G, n->inputs[0], 0));
        emit(&code, n->ninputs > 1 ? value_of(&vm, G, n->inputs[1], 0) : -1);
        ninstr++;
    }
    /* Outputs: every member output read outside the group (or fetched). */
    int nouts = 0;
    G->outs = rill__malloc(((size_t)nval + 1) * sizeof *G->outs);
    RILL_CHECK_ALLOC(G->outs);
    for (int m = 0; m < G->nmembers; m++) {
        rill_node *n = rill_graph_node(f->g, G->members[m]);
        for (int o = 0; o < n->noutputs; o++) {
            bool outside = false;
            for (int c = f->cons_start[n->id]; c < f->cons_start[n->id + 1] && !outside; c++) {
                rill_node *u = rill_graph_node(f->g, f->cons[c]);
                if (f->group_of[u->id] == f->group_of[n->id]) continue;
                for (int k = 0; k < u->ninputs; k++)
                    if (u->inputs[k].node == n && u->inputs[k].index == o) outside = true;
            }
            for (int i = 0; i < nfetches && !outside; i++)
                if (fetches[i].node == n && fetches[i].index == o) outside = true;
            if (!outside) continue;
            G->outs[nouts++] = (rill_output){n, o};
            if (f->kind[n->id] == K_CONCAT) {
                emit(&outs, n->ninputs);
                for (int k = 0; k < n->ninputs; k++) emit(&outs, value_of(&vm, G, n->inputs[k], 0));
            } else {
                emit(&outs, 1);
                emit(&outs, vm.first[m] + o);
            }
        }
    }
    G->nouts = nouts;
    progbuf p = {0};
    emit(&p, H), emit(&p, vm.next), emit(&p, vm.next_ext), emit(&p, ninstr), emit(&p, nouts);
    for (int e = 0; e < vm.next_ext; e++)
        emit(&p, vm.ext_val[e]), emit(&p, vm.ext_input[e]), emit(&p, vm.ext_off[e]),
            emit(&p, vm.ext_scalar[e]);
    for (int i = 0; i < code.n; i++) emit(&p, code.v[i]);
    for (int i = 0; i < outs.n; i++) emit(&p, outs.v[i]);
    G->prog = p.v;
    G->nprog = p.n;
    G->inputs = vm.inputs;
    G->ninputs = vm.ninputs;
    rill__free(code.v);
    rill__free(outs.v);
    rill__free(vm.first);
    rill__free(vm.ext);
    rill__free(vm.ext_val);
    rill__free(vm.ext_input);
    rill__free(vm.ext_off);
    rill__free(vm.ext_scalar);
}

void rill__ew_find(rill_graph *g, const char *need, const char *eligible,
                   const rill_output *fetches, int nfetches, rill__ew_groups *out)
{
    memset(out, 0, sizeof *out);
    finder f = {.g = g, .nn = rill_graph_num_nodes(g), .need = need};
    int nn = f.nn;
    out->group_of = rill__malloc(((size_t)nn + 1) * sizeof *out->group_of);
    f.kind = rill__calloc((size_t)nn + 1, sizeof *f.kind);
    f.lab_start = rill__calloc((size_t)nn + 2, sizeof *f.lab_start);
    f.stamp = rill__calloc((size_t)nn + 1, sizeof *f.stamp);
    rill_shape *shape = rill__malloc(((size_t)nn + 1) * sizeof *shape);
    RILL_CHECK_ALLOC(out->group_of);
    RILL_CHECK_ALLOC(f.kind);
    RILL_CHECK_ALLOC(f.lab_start);
    RILL_CHECK_ALLOC(f.stamp);
    RILL_CHECK_ALLOC(shape);
    f.group_of = out->group_of;
    int ncand = 0;
    for (int i = 0; i < nn; i++) {
        rill_node *n = rill_graph_node(g, i);
        f.lab_start[i + 1] = f.lab_start[i] + n->noutputs;
        out->group_of[i] = -1;
        int oi = op_index(n);
        if (!need[i] || !eligible[i]) continue;
        if (oi < 0) continue;
        shape[i] = member_shape(n, ew_ops[oi].kind);
        if (shape[i].rank < 1) continue;
        f.kind[i] = ew_ops[oi].kind;
        ncand++;
    }
    if (ncand < 2) goto done;
    f.label = rill__calloc((size_t)f.lab_start[nn] + 1, sizeof *f.label);
    RILL_CHECK_ALLOC(f.label);
    make_labels(&f);
    make_consumers(&f);
    /* In node order, each candidate joins the group of a candidate it reads (the same shape and
     * label) when that makes no cycle, else starts one. */
    grow *groups = rill__calloc((size_t)ncand + 1, sizeof *groups);
    f.scratch = rill__malloc(((size_t)nn + 1) * sizeof *f.scratch);
    RILL_CHECK_ALLOC(groups);
    RILL_CHECK_ALLOC(f.scratch);
    int ngrow = 0;
    for (int i = 0; i < nn; i++) {
        if (!f.kind[i]) continue;
        rill_node *n = rill_graph_node(g, i);
        int li = f.label[f.lab_start[i]], chosen = -1;
        int nparts = f.kind[i] == K_SUMTO ? 1 : n->ninputs;
        for (int k = 0; k < nparts && chosen < 0 && f.kind[i] != K_SPLIT; k++) {
            rill_output in = n->inputs[k];
            int m = in.node->id, gm = f.group_of[m];
            if (!f.kind[m] || f.kind[m] == K_CONCAT || gm < 0) continue;
            if (f.label[f.lab_start[m] + in.index] != li || !same_static(shape[m], shape[i]))
                continue;
            if (can_join(&f, groups, i, gm)) chosen = gm;
        }
        if (chosen < 0) chosen = ngrow++;
        grow_add(&groups[chosen], i);
        f.group_of[i] = chosen;
    }
    /* A path can leave through a _RemoteSend (or an enqueue) and come back through a
     * _RemoteRecv (or a dequeue) with no edge this graph can see: a group that depends on such
     * a wait and that such a hand-off depends on stays unfused. */
    char *from_recv = NULL, *to_send = NULL;
    remote_paths(&f, &from_recv, &to_send);
    /* The groups with two members or more that compute. */
    out->g = rill__calloc((size_t)ngrow + 1, sizeof *out->g);
    RILL_CHECK_ALLOC(out->g);
    for (int gi = 0; gi < ngrow; gi++) {
        grow *G = &groups[gi];
        int compute = 0;
        for (int m = 0; m < G->n; m++)
            compute += f.kind[G->m[m]] != K_SPLIT && f.kind[G->m[m]] != K_CONCAT;
        bool reads_remote = false, read_remotely = false;
        for (int m = 0; m < G->n && from_recv; m++) {
            reads_remote |= from_recv[G->m[m]] != 0;
            read_remotely |= to_send[G->m[m]] != 0;
        }
        if (compute < 2 || (reads_remote && read_remotely)) {
            for (int m = 0; m < G->n; m++) f.group_of[G->m[m]] = -1;
            continue;
        }
        rill__ew_group *E = &out->g[out->n];
        E->members = G->m;
        E->nmembers = G->n;
        G->m = NULL;
        E->shape = shape[E->members[0]];
        for (int m = 0; m < E->nmembers; m++) f.group_of[E->members[m]] = out->n;
        out->n++;
    }
    for (int gi = 0; gi < ngrow; gi++) rill__free(groups[gi].m);
    rill__free(groups);
    rill__free(from_recv);
    rill__free(to_send);
    for (int gi = 0; gi < out->n; gi++) build_program(&f, &out->g[gi], fetches, nfetches);
done:
    rill__free(f.kind);
    rill__free(f.lab_start);
    rill__free(f.label);
    rill__free(f.cons_start);
    rill__free(f.cons);
    rill__free(f.stamp);
    rill__free(f.scratch);
    rill__free(shape);
}

void rill__ew_groups_free(rill__ew_groups *x)
{
    for (int i = 0; i < x->n; i++) {
        rill__free(x->g[i].members);
        rill__free(x->g[i].inputs);
        rill__free(x->g[i].outs);
        rill__free(x->g[i].prog);
    }
    rill__free(x->g);
    rill__free(x->group_of);
    memset(x, 0, sizeof *x);
}
