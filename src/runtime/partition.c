/* partition.c - builds the execution graph of one (feeds, fetches, targets) from a placed graph
 * (TF's graph_partition.cc, reference §4.1).
 *
 * The nodes the fetches and targets need (stopping at fed tensors) are cloned, in node order,
 * into a private graph, each carrying its device. An edge whose two ends live in different
 * memories (another device, or host memory against device memory for host-memory arguments such
 * as int32 "GPU" kernels) gets a _Send on the producer's device and a _Recv on the consumer's,
 * reused when the same tensor goes to the same place again. Feeds become host placeholders on
 * CPU:0 and fetches are received into host memory: the client talks to CPU:0, as in TF.
 *
 * Each device's nodes form its partition; in one process the executor runs all partitions as one
 * plan, the _Recv taking its _Send's output as input. The distributed runtime reuses this cut
 * with the pair split across processes.
 *
 * On the CPU the clone fuses what TF users write as separate ops, as TF's remapper does
 * (fusion below): MatMul + BiasAdd (+ Relu) become one _FusedMatMul, ReluGrad + the BiasAddGrad
 * of its output one _FusedReluGradBiasAddGrad. Only the execution graph changes: the user's graph,
 * the placement and its log, and the checkpoints are those of the unfused ops, and the results
 * are the same bits (the fused kernels run the same loops in the same order). RILL_NO_FUSION=1
 * turns it off. */
#include "runtime.h"

#include <stdlib.h>
#include <string.h>

atomic_int rill__fusions_made;

typedef struct xfer {
    rill_node *src;
    int index;
    rill__device *dst;
    bool host;
    rill_output recv;
} xfer;

typedef struct builder {
    rill_graph *g;
    const rill__placement *pl;
    const rill__partition_tasks *tasks; /* a master's cut across tasks, or NULL */
    rill_graph *xg;
    rill_node **clone;     /* per original node id */
    rill_output *fed;      /* per original (id, output): feed node output, or {NULL} */
    int *fed_start;        /* index into fed per original node */
    rill__vec xfers;
    int counter;
    rill_status *s;
    /* fusion, per original node id */
    signed char *role;   /* FUSE_* */
    rill_node **partner; /* FINAL: its MatMul; REPLACED: its ReluGrad */
    int *shift;          /* added to output indices of the node's clone */
    rill__ew_groups ew;  /* elementwise groups (fuse_elementwise.c) */
    int *omap;           /* per original (id, output): its _FusedElementwise output + 1, or 0 */
} builder;

enum { FUSE_NONE, FUSE_ABSORBED, FUSE_FINAL, FUSE_HEAD, FUSE_REPLACED };

/* Where the client lives: CPU:0 of this process, or the master's in a cut across tasks. */
static rill__device *client_of(const builder *b)
{
    return b->tasks ? b->tasks->client : rill__cpu_device();
}

static rill__device *dev_of(const builder *b, const rill_node *n)
{
    rill__device *d = b->pl->assigned[n->id];
    return d ? d : client_of(b);
}

static bool host_device(const rill__device *d)
{
    return !d || !d->ops;
}

static const rill__kernel_def *kernel_of(const rill_node *n, const rill__device *d)
{
    return rill__kernel_lookup(n->op->name, d->kernel_key, rill__node_kernel_dtype(n));
}

/* Whether output idx of original node n lives in host memory. */
static bool out_host(const builder *b, const rill_node *n, int idx)
{
    rill__device *d = dev_of(b, n);
    if (host_device(d)) return true;
    const rill__kernel_def *k = kernel_of(n, d);
    return k && rill__bit32(k->host_memory_outputs, idx);
}

static bool in_host(const rill__device *d, const rill_node *n, int k)
{
    if (host_device(d)) return true;
    const rill__kernel_def *kd = kernel_of(n, d);
    return kd && rill__bit32(kd->host_memory_inputs, k);
}

/* The receive on dst that now carries (src, index) (NULL src: a control edge, never reused), for
 * the next consumer there; {NULL, 0} when making it failed. */
static rill_output remember(builder *b, rill_node *src, int index, rill__device *dst, bool host,
                            rill_node *recv)
{
    if (!recv) return (rill_output){NULL, 0};
    recv->assigned = dst;
    xfer *x = rill__malloc(sizeof *x);
    RILL_CHECK_ALLOC(x);
    *x = (xfer){src, index, dst, host, {recv, 0}};
    rill__vec_push(&b->xfers, x);
    return x->recv;
}

/* The next free "<origin>/_<k>/" (exact: see rill__node_create) for a node the builder adds, in
 * name; returns k. The graph may hold such names from an earlier pass already (a piece of a
 * task partitioned again over its devices), so taken ones are skipped. */
static int fresh_name(builder *b, const char *origin_name, char *name, size_t cap)
{
    for (;;) {
        int k = b->counter++;
        snprintf(name, cap, "%s/_%d", origin_name, k);
        /* Taken in the graph being built, or in the one it is built from (whose nodes may be
         * copied in after this one). */
        if (rill_graph_find_node(b->xg, name) || rill_graph_find_node(b->g, name)) continue;
        snprintf(name, cap, "%s/_%d/", origin_name, k);
        return k;
    }
}

/* The _Recv output delivering src to (dst device, host or device memory). */
static rill_output transfer(builder *b, rill_output src, rill__device *src_dev, rill__device *dst,
                            bool host, const char *origin_name)
{
    for (int i = 0; i < b->xfers.n; i++) {
        xfer *x = b->xfers.items[i];
        if (x->src == src.node && x->index == src.index && x->dst == dst && x->host == host)
            return x->recv;
    }
    char tensor_name[512], name[512];
    int k = fresh_name(b, origin_name, name, sizeof name);
    snprintf(tensor_name, sizeof tensor_name, "edge_%d_%s", k, origin_name);
    rill__attr sa[] = {RILL__A_STRING("tensor_name", tensor_name),
                       RILL__A_STRING("send_device", src_dev->name),
                       RILL__A_STRING("recv_device", dst->name)};
    rill_node *send = rill__node_create(b->xg, "_Send", name, &src, 1, sa, 3);
    if (!send) return (rill_output){NULL, 0};
    send->assigned = src_dev;
    fresh_name(b, origin_name, name, sizeof name);
    rill__attr ra[] = {RILL__A_STRING("tensor_name", tensor_name),
                       RILL__A_STRING("send_device", src_dev->name),
                       RILL__A_STRING("recv_device", dst->name), RILL__A_BOOL("host_memory", host)};
    rill_output sout = {send, 0};
    return remember(b, src.node, src.index, dst, host,
                    rill__node_create(b->xg, "_Recv", name, &sout, 1, ra, 4));
}

static int task_of(const builder *b, const rill__device *d)
{
    return b->tasks->task_of(b->tasks->arg, d);
}

/* The _RemoteSend / _RemoteRecv pair that carries src (or, src NULL, a control edge from node
 * ctl) from its task to dst's; the receive's output (reused for the same tensor and device). */
static rill_output remote_transfer(builder *b, rill_output src, rill__device *src_dev,
                                   rill__device *dst, const char *origin_name, rill_node *ctl)
{
    for (int i = 0; src.node && i < b->xfers.n; i++) {
        xfer *x = b->xfers.items[i];
        if (x->src == src.node && x->index == src.index && x->dst == dst && !x->host)
            return x->recv;
    }
    const char *sjob, *rjob;
    int stask, rtask;
    b->tasks->task_name(b->tasks->arg, task_of(b, src_dev), &sjob, &stask);
    b->tasks->task_name(b->tasks->arg, task_of(b, dst), &rjob, &rtask);
    char tensor_name[512], name[512];
    int k = fresh_name(b, origin_name, name, sizeof name);
    snprintf(tensor_name, sizeof tensor_name, "edge_%d_%s", k, origin_name);
    if (!src.node) { /* a control edge: a scalar made once ctl has run */
        rill_tensor *zero = rill_tensor_scalar_int32(0);
        rill__attr ca[] = {RILL__A_TENSOR("value", zero), RILL__A_TYPE("dtype", RILL_INT32)};
        rill_node *c = rill__node_create(b->xg, "Const", name, NULL, 0, ca, 2);
        rill_tensor_free(zero);
        if (!c) return (rill_output){NULL, 0};
        c->assigned = src_dev;
        rill_node_add_control_input(c, ctl);
        src = (rill_output){c, 0};
    }
    rill_dtype dt = src.node->out_dtypes[src.index];
    rill_shape sh = src.node->out_shapes[src.index];
    if (ctl) fresh_name(b, origin_name, name, sizeof name); /* the Const took the first one */
    rill__attr sa[] = {RILL__A_STRING("tensor_name", tensor_name), RILL__A_STRING("send_job", sjob),
                       RILL__A_INT("send_task", stask), RILL__A_STRING("recv_job", rjob),
                       RILL__A_INT("recv_task", rtask)};
    rill_node *send = rill__node_create(b->xg, "_RemoteSend", name, &src, 1, sa, 5);
    if (!send) return (rill_output){NULL, 0};
    send->assigned = src_dev;
    fresh_name(b, origin_name, name, sizeof name);
    rill__attr ra[] = {RILL__A_STRING("tensor_name", tensor_name),
                       RILL__A_TYPE("dtype", dt),
                       RILL__A_SHAPE("shape", sh),
                       RILL__A_STRING("send_job", sjob),
                       RILL__A_INT("send_task", stask),
                       RILL__A_STRING("recv_job", rjob),
                       RILL__A_INT("recv_task", rtask)};
    return remember(b, ctl ? NULL : src.node, src.index, dst, false,
                    rill__node_create(b->xg, "_RemoteRecv", name, NULL, 0, ra, 7));
}

/* The execution-graph output standing for original output o, as seen by a consumer on dst that
 * wants it in host memory (host) or device memory. */
static rill_output source_for(builder *b, rill_output o, rill__device *dst, bool host)
{
    rill_output fed = b->fed[b->fed_start[o.node->id] + o.index];
    rill_output src;
    rill__device *src_dev;
    bool src_host;
    if (fed.node) {
        src = fed;
        src_dev = client_of(b);
        src_host = true;
    } else {
        int m = b->omap ? b->omap[b->fed_start[o.node->id] + o.index] : 0;
        src = (rill_output){b->clone[o.node->id], m ? m - 1 : o.index + b->shift[o.node->id]};
        src_dev = dev_of(b, o.node);
        src_host = out_host(b, o.node, o.index);
    }
    if (b->tasks) /* across tasks only: each task's session cuts its own devices */
        return task_of(b, src_dev) == task_of(b, dst)
                   ? src
                   : remote_transfer(b, src, src_dev, dst, o.node->name, NULL);
    bool same = src_host ? host : (!host && src_dev == dst);
    if (same) return src;
    return transfer(b, src, src_dev, dst, host, o.node->name);
}

/* --- fusion --- */

static bool is_op(const rill_node *n, const char *op)
{
    return n && strcmp(n->op->name, op) == 0;
}

/* Node n runs on CPU:0 in float. */
static bool cpu_float(const builder *b, const rill_node *n)
{
    return dev_of(b, n) == rill__cpu_device() && n->noutputs >= 1 && n->out_dtypes[0] == RILL_FLOAT;
}

static bool nhwc(const rill_node *n)
{
    const rill__attr *a = rill__node_attr(n, "data_format");
    return !a || strcmp(a->v.s, "NHWC") == 0;
}

static bool fed(const builder *b, const rill_node *n)
{
    for (int i = 0; i < n->noutputs; i++)
        if (b->fed[b->fed_start[n->id] + i].node) return true;
    return false;
}

static rill_shape in_shape(const rill_node *n, int k)
{
    return n->inputs[k].node->out_shapes[n->inputs[k].index];
}

/* The MatMul and BiasAdd have shapes known enough at build time that they cannot fail at run
 * time (their inner and bias sizes known and equal): the fused kernel then never has to give
 * their errors. */
static bool static_shapes(const rill_node *mm, const rill_node *bias)
{
    rill_shape a = in_shape(mm, 0), b = in_shape(mm, 1), v = in_shape(bias, 1);
    if (a.rank != 2 || b.rank != 2 || v.rank != 1) return false;
    bool ta = rill__attr_bool(mm, "transpose_a", false), tb = rill__attr_bool(mm, "transpose_b", false);
    int64_t ka = a.dims[ta ? 0 : 1], kb = b.dims[tb ? 1 : 0], n = b.dims[tb ? 0 : 1];
    return ka >= 0 && ka == kb && n >= 0 && v.dims[0] == n;
}

/* Conv2D's attrs that a fused node copies: T, strides, padding, dilations, data_format. */
#define CONV_ATTRS_MAX 8

/* The same for Conv2D: its input's height, width and depth and its whole filter known (only the
 * batch may vary), and the bias as long as the filter's output depth. Conv2D's build-time checks
 * then leave nothing that could fail at run time. */
static bool static_conv_shapes(const rill_node *conv, const rill_node *bias)
{
    rill_shape x = in_shape(conv, 0), f = in_shape(conv, 1), v = in_shape(bias, 1);
    if (x.rank != 4 || f.rank != 4 || v.rank != 1 || !nhwc(conv) || conv->nattrs > CONV_ATTRS_MAX)
        return false;
    for (int i = 0; i < 4; i++)
        if ((i > 0 && x.dims[i] < 0) || f.dims[i] < 0) return false;
    return f.dims[2] == x.dims[3] && v.dims[0] == f.dims[3];
}

/* Marks the fusion groups among the needed nodes. uses[id]: data consumers of output 0 among
 * them (a fetch counts as one more), ctl[id]: whether a needed node waits on it or it is a
 * target. A node is
 * absorbed only when its one consumer is the next op of its group, nothing is fed, and no control
 * edge touches it. */
static void find_fusions(builder *b, const char *need, const rill_output *fetches, int nfetches,
                         rill_node *const *targets, int ntargets)
{
    int nn = rill_graph_num_nodes(b->g);
    int *uses = rill__calloc((size_t)nn + 1, sizeof *uses);
    char *ctl = rill__calloc((size_t)nn + 1, 1);
    RILL_CHECK_ALLOC(uses);
    RILL_CHECK_ALLOC(ctl);
    for (int i = 0; i < nn; i++) {
        if (!need[i]) continue;
        rill_node *n = rill_graph_node(b->g, i);
        for (int k = 0; k < n->ninputs; k++)
            if (n->inputs[k].index == 0) uses[n->inputs[k].node->id]++;
        for (int k = 0; k < n->ncontrol; k++) ctl[n->control_inputs[k]->id] = 1;
    }
    for (int i = 0; i < nfetches; i++)
        if (fetches[i].index == 0) uses[fetches[i].node->id]++;
    for (int i = 0; i < ntargets; i++) ctl[targets[i]->id] = 1; /* a target runs as itself */
    /* A node the next op of its group alone consumes, with no edge of another kind. */
    #define PRIVATE_TO_GROUP(n) (need[(n)->id] && uses[(n)->id] == 1 && !ctl[(n)->id] && \
                                 (n)->ncontrol == 0 && !fed(b, (n)) && cpu_float(b, (n)) && \
                                 b->role[(n)->id] == FUSE_NONE)
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < nn; i++) {
            if (!need[i] || b->role[i] != FUSE_NONE) continue;
            rill_node *f = rill_graph_node(b->g, i);
            if (fed(b, f) || !cpu_float(b, f)) continue;
            /* pass 0: Relu(BiasAdd(MatMul or Conv2D)); pass 1: BiasAdd(...) left over. */
            rill_node *bias = pass == 0 ? (is_op(f, "Relu") ? f->inputs[0].node : NULL) : f;
            if (!is_op(bias, "BiasAdd") || !nhwc(bias) || bias->inputs[0].index != 0) continue;
            if (pass == 0 && (f->inputs[0].index != 0 || !PRIVATE_TO_GROUP(bias))) continue;
            rill_node *mm = bias->inputs[0].node;
            bool shapes_ok = is_op(mm, "MatMul")   ? static_shapes(mm, bias)
                             : is_op(mm, "Conv2D") ? static_conv_shapes(mm, bias)
                                                   : false;
            if (!shapes_ok || !PRIVATE_TO_GROUP(mm)) continue;
            b->role[mm->id] = FUSE_ABSORBED;
            if (pass == 0) b->role[bias->id] = FUSE_ABSORBED;
            b->role[i] = FUSE_FINAL;
            b->partner[i] = mm;
        }
    #undef PRIVATE_TO_GROUP
    /* BiasAddGrad(ReluGrad(g, f)): the ReluGrad may feed others too. */
    for (int i = 0; i < nn; i++) {
        if (!need[i]) continue;
        rill_node *g = rill_graph_node(b->g, i);
        if (!is_op(g, "BiasAddGrad") || !nhwc(g) || g->ncontrol || fed(b, g) || !cpu_float(b, g))
            continue;
        rill_node *rg = g->inputs[0].node;
        if (g->inputs[0].index != 0 || !is_op(rg, "ReluGrad") || b->role[rg->id] != FUSE_NONE ||
            fed(b, rg) || !cpu_float(b, rg) || rg->out_shapes[0].rank < 2)
            continue;
        b->role[rg->id] = FUSE_HEAD;
        b->role[i] = FUSE_REPLACED;
        b->partner[i] = rg;
    }
    rill__free(uses);
    rill__free(ctl);
}

static void clone_attrs(const rill_node *n, rill__attr *out)
{
    for (int i = 0; i < n->nattrs; i++) out[i] = n->attrs[i];
}

/* The fused node standing for the group ending at n (role FINAL or HEAD), on CPU:0. */
static rill_node *make_fused(builder *b, rill_node *n)
{
    rill__device *cpu = rill__cpu_device();
    char name[512];
    snprintf(name, sizeof name, "%s/", n->name);
    if (b->role[n->id] == FUSE_HEAD) {
        rill_output ins[2] = {source_for(b, n->inputs[0], cpu, true),
                              source_for(b, n->inputs[1], cpu, true)};
        return rill__node_create(b->xg, "_FusedReluGradBiasAddGrad", name, ins, 2, NULL, 0);
    }
    rill_node *mm = b->partner[n->id], *bias = is_op(n, "Relu") ? n->inputs[0].node : n;
    rill_output ins[3] = {source_for(b, mm->inputs[0], cpu, true),
                          source_for(b, mm->inputs[1], cpu, true),
                          source_for(b, bias->inputs[1], cpu, true)};
    const char *act = is_op(n, "Relu") ? "Relu" : "";
    if (is_op(mm, "Conv2D")) { /* Conv2D's attrs, and the activation */
        rill__attr a[CONV_ATTRS_MAX + 1];
        clone_attrs(mm, a);
        a[mm->nattrs] = RILL__A_STRING("activation", act);
        return rill__node_create(b->xg, "_FusedConv2D", name, ins, 3, a, mm->nattrs + 1);
    }
    rill__attr a[] = {RILL__A_BOOL("transpose_a", rill__attr_bool(mm, "transpose_a", false)),
                      RILL__A_BOOL("transpose_b", rill__attr_bool(mm, "transpose_b", false)),
                      RILL__A_STRING("activation", act)};
    return rill__node_create(b->xg, "_FusedMatMul", name, ins, 3, a, 3);
}


/* Marks the elementwise groups (fuse_elementwise.c) among the needed nodes no other fusion took:
 * on CPU:0, not fed, no control edge either way, not a target. */
static void find_ew_groups(builder *b, const char *need, const rill_output *fetches, int nfetches,
                           rill_node *const *targets, int ntargets)
{
    int nn = rill_graph_num_nodes(b->g);
    char *ok = rill__calloc((size_t)nn + 1, 1);
    RILL_CHECK_ALLOC(ok);
    for (int i = 0; i < nn; i++) {
        rill_node *n = rill_graph_node(b->g, i);
        ok[i] = need[i] && b->role[i] == FUSE_NONE && n->ncontrol == 0 && !fed(b, n) &&
                cpu_float(b, n);
    }
    for (int i = 0; i < nn; i++) {
        if (!need[i]) continue;
        rill_node *n = rill_graph_node(b->g, i);
        for (int k = 0; k < n->ncontrol; k++) ok[n->control_inputs[k]->id] = 0;
    }
    for (int i = 0; i < ntargets; i++) ok[targets[i]->id] = 0;
    rill__ew_find(b->g, need, ok, fetches, nfetches, &b->ew);
    rill__free(ok);
    if (!b->ew.n) return;
    b->omap = rill__calloc((size_t)b->fed_start[nn] + 1, sizeof *b->omap);
    RILL_CHECK_ALLOC(b->omap);
    for (int gi = 0; gi < b->ew.n; gi++) {
        const rill__ew_group *G = &b->ew.g[gi];
        for (int o = 0; o < G->nouts; o++)
            b->omap[b->fed_start[G->outs[o].node->id] + G->outs[o].index] = o + 1;
    }
}

/* Whether tensor o's clone (or feed) exists yet. */
static bool have(const builder *b, rill_output o)
{
    return b->fed[b->fed_start[o.node->id] + o.index].node || b->clone[o.node->id];
}

static bool have_inputs(const builder *b, const rill_node *n)
{
    for (int k = 0; k < n->ninputs; k++)
        if (!have(b, n->inputs[k])) return false;
    return true;
}

/* The _FusedElementwise node of group gi, on CPU:0, named after its last member. */
static rill_node *make_ew(builder *b, int gi)
{
    const rill__ew_group *G = &b->ew.g[gi];
    rill__device *cpu = rill__cpu_device();
    rill_output *ins = rill__malloc((size_t)G->ninputs * sizeof *ins);
    RILL_CHECK_ALLOC(ins);
    for (int k = 0; k < G->ninputs; k++) ins[k] = source_for(b, G->inputs[k], cpu, true);
    rill_node *last = rill_graph_node(b->g, G->members[G->nmembers - 1]);
    char name[512];
    snprintf(name, sizeof name, "%s/", last->name);
    rill__attr a[] = {RILL__A_INT("num_outputs", G->nouts),
                      RILL__A_INTS("program", G->nprog, G->prog),
                      RILL__A_SHAPE("shape", G->shape)};
    rill_node *c = rill_graph_ok(b->xg) ? rill__node_create(b->xg, "_FusedElementwise", name, ins,
                                                             G->ninputs, a, 3)
                                        : NULL;
    rill__free(ins);
    if (!c) return NULL;
    c->assigned = cpu;
    c->origin = last;
    for (int m = 0; m < G->nmembers; m++) b->clone[G->members[m]] = c;
    atomic_fetch_add(&rill__fusions_made, 1);
    return c;
}

/* Clones node i (or the fusion it belongs to): 1 when done, 0 when an input is not cloned yet,
 * -1 on error (b->s set). */
static int clone_node(builder *b, int i)
{
    rill_node *n = rill_graph_node(b->g, i);
    rill_status *s = b->s;
    int gi = b->ew.group_of ? b->ew.group_of[i] : -1;
    if (gi >= 0) {
        const rill__ew_group *G = &b->ew.g[gi];
        for (int k = 0; k < G->ninputs; k++)
            if (!have(b, G->inputs[k])) return 0;
        if (make_ew(b, gi)) return 1;
        rill_status_copy(s, rill_graph_status(b->xg));
        return -1;
    }
    if (b->role[i] == FUSE_ABSORBED) return 1;
    if (b->role[i] == FUSE_REPLACED) { /* BiasAddGrad: output 1 of its ReluGrad's fused node */
        if (!b->clone[b->partner[i]->id]) return 0;
        b->clone[i] = b->clone[b->partner[i]->id];
        b->shift[i] = 1;
        return 1;
    }
    if (b->role[i] == FUSE_FINAL || b->role[i] == FUSE_HEAD) {
        if (b->role[i] == FUSE_FINAL) {
            rill_node *mm = b->partner[i], *bias = is_op(n, "Relu") ? n->inputs[0].node : n;
            if (!have_inputs(b, mm) || !have(b, bias->inputs[1])) return 0;
        } else if (!have_inputs(b, n)) {
            return 0;
        }
        rill_node *c = rill_graph_ok(b->xg) ? make_fused(b, n) : NULL;
        if (!c) {
            rill_status_copy(s, rill_graph_status(b->xg));
            return -1;
        }
        c->assigned = rill__cpu_device();
        c->origin = n;
        b->clone[i] = c;
        atomic_fetch_add(&rill__fusions_made, 1);
        return 1;
    }
    if (!have_inputs(b, n)) return 0;
    rill__device *d = dev_of(b, n);
    rill_output inbuf[16], *ins = n->ninputs > 16 ? rill__malloc((size_t)n->ninputs * sizeof *ins) : inbuf;
    RILL_CHECK_ALLOC(ins);
    for (int k = 0; k < n->ninputs; k++) {
        rill_output in = n->inputs[k];
        if (rill__bit32(n->op->ref_inputs, k))
            ins[k] = (rill_output){b->clone[in.node->id], in.index};
        else
            ins[k] = source_for(b, in, d, in_host(d, n, k));
    }
    rill__attr abuf[16], *attrs = n->nattrs > 16 ? rill__malloc((size_t)n->nattrs * sizeof *attrs) : abuf;
    RILL_CHECK_ALLOC(attrs);
    clone_attrs(n, attrs);
    char name[512];
    snprintf(name, sizeof name, "%s/", n->name);
    rill_node *c = rill_graph_ok(b->xg)
                       ? rill__node_create(b->xg, n->op->name, name, ins, n->ninputs, attrs,
                                           n->nattrs)
                       : NULL;
    if (ins != inbuf) rill__free(ins);
    if (attrs != abuf) rill__free(attrs);
    if (!c) {
        rill_status_copy(s, rill_graph_status(b->xg));
        return -1;
    }
    c->assigned = d;
    c->origin = n;
    c->seed = n->seed;
    c->seed2 = n->seed2;
    b->clone[i] = c;
    return 1;
}

/* The feed that stands for n when every output of n is fed (a fed Placeholder), else NULL: such
 * a node never runs, so a control edge from it is dropped and a target naming it is its feed
 * (which the executor does not run either). */
static rill_node *fed_whole(const builder *b, const rill_node *n)
{
    if (n->noutputs == 0) return NULL;
    for (int o = 0; o < n->noutputs; o++)
        if (!b->fed[b->fed_start[n->id] + o].node) return NULL;
    return b->fed[b->fed_start[n->id]].node;
}
bool rill__partition(rill_graph *g, const rill__placement *pl, const rill__partition_tasks *tasks,
                     const rill_output *feeds, int nfeeds, const rill_output *fetches,
                     int nfetches, rill_node *const *targets, int ntargets, rill__xgraph *out,
                     rill_status *s)
{
    memset(out, 0, sizeof *out);
    int nn = rill_graph_num_nodes(g);
    builder b = {.g = g, .pl = pl, .tasks = tasks, .s = s};
    b.clone = rill__calloc((size_t)nn + 1, sizeof *b.clone);
    b.fed_start = rill__calloc((size_t)nn + 1, sizeof *b.fed_start);
    RILL_CHECK_ALLOC(b.clone);
    RILL_CHECK_ALLOC(b.fed_start);
    for (int i = 0; i < nn; i++)
        b.fed_start[i + 1] = b.fed_start[i] + rill_graph_node(g, i)->noutputs;
    b.fed = rill__calloc((size_t)b.fed_start[nn] + 1, sizeof *b.fed);
    char *need = rill__calloc((size_t)nn + 1, 1);
    int *stack = rill__malloc(((size_t)nn + 1) * sizeof *stack);
    RILL_CHECK_ALLOC(b.fed);
    RILL_CHECK_ALLOC(need);
    RILL_CHECK_ALLOC(stack);
    b.role = rill__calloc((size_t)nn + 1, 1);
    b.partner = rill__calloc((size_t)nn + 1, sizeof *b.partner);
    b.shift = rill__calloc((size_t)nn + 1, sizeof *b.shift);
    RILL_CHECK_ALLOC(b.role);
    RILL_CHECK_ALLOC(b.partner);
    RILL_CHECK_ALLOC(b.shift);
    b.xg = rill_graph_new();
    bool ok = false;

    for (int i = 0; i < nfeeds; i++)
        if (!feeds[i].node || feeds[i].node->graph != g || feeds[i].index < 0 ||
            feeds[i].index >= feeds[i].node->noutputs) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Feed %d does not name an output of a node in this graph", i);
            goto out;
        }
    for (int i = 0; i < nfetches; i++)
        if (!fetches[i].node || fetches[i].node->graph != g || fetches[i].index < 0 ||
            fetches[i].index >= fetches[i].node->noutputs) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Fetch %d does not name an output of a node in this graph%s", i,
                            fetches[i].node ? "" : " (empty output: did building it fail?)");
            goto out;
        }
    for (int i = 0; i < ntargets; i++)
        if (!targets[i] || targets[i]->graph != g) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Target %d does not name a node in this graph%s", i,
                            targets[i] ? "" : " (empty: did building it fail?)");
            goto out;
        }

    /* Feeds: host placeholders on CPU:0, named after what they replace. */
    out->nfeeds = nfeeds;
    out->feeds = rill__calloc((size_t)(nfeeds ? nfeeds : 1), sizeof *out->feeds);
    RILL_CHECK_ALLOC(out->feeds);
    for (int i = 0; i < nfeeds; i++) {
        rill_output f = feeds[i];
        rill_output *slot = &b.fed[b.fed_start[f.node->id] + f.index];
        if (slot->node) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "%s:%d fed more than once", f.node->name,
                            f.index);
            goto out;
        }
        bool is_ph = strcmp(f.node->op->name, "Placeholder") == 0;
        rill_shape shape = f.node->out_shapes[f.index];
        if (is_ph) {
            /* The shape it was declared with; a Placeholder built without one has none. */
            const rill__attr *sa = rill__node_attr(f.node, "shape");
            shape = sa ? sa->v.shape : rill_shape_unknown();
        }
        char name[512];
        if (is_ph)
            snprintf(name, sizeof name, "%s/", f.node->name);
        else
            snprintf(name, sizeof name, "%s/_feed_%d/", f.node->name, f.index);
        rill__attr a[] = {RILL__A_TYPE("dtype", f.node->out_dtypes[f.index]),
                          RILL__A_SHAPE("shape", shape)};
        rill_node *ph = rill__node_create(b.xg, "Placeholder", name, NULL, 0, a, 2);
        if (!ph) {
            rill_status_copy(s, rill_graph_status(b.xg));
            goto out;
        }
        ph->assigned = client_of(&b);
        ph->origin = is_ph ? f.node : NULL;
        *slot = (rill_output){ph, 0};
        out->feeds[i] = *slot;
    }

    /* What the fetches and targets need, stopping at fed tensors (reference inputs always). */
    int ns = 0;
    for (int i = 0; i < nfetches; i++) {
        rill_output f = fetches[i];
        if (b.fed[b.fed_start[f.node->id] + f.index].node) continue;
        if (!need[f.node->id]) need[f.node->id] = 1, stack[ns++] = f.node->id;
    }
    for (int i = 0; i < ntargets; i++)
        if (!need[targets[i]->id] && !fed_whole(&b, targets[i]))
            need[targets[i]->id] = 1, stack[ns++] = targets[i]->id;
    while (ns) {
        rill_node *n = rill_graph_node(g, stack[--ns]);
        for (int k = 0; k < n->ninputs; k++) {
            rill_output in = n->inputs[k];
            bool ref = rill__bit32(n->op->ref_inputs, k);
            if (!ref && b.fed[b.fed_start[in.node->id] + in.index].node) continue;
            if (!need[in.node->id]) need[in.node->id] = 1, stack[ns++] = in.node->id;
        }
        for (int k = 0; k < n->ncontrol; k++) {
            rill_node *c = n->control_inputs[k];
            if (!need[c->id] && !fed_whole(&b, c)) need[c->id] = 1, stack[ns++] = c->id;
        }
    }

    const char *nofuse = getenv("RILL_NO_FUSION");
    bool fuse = !tasks && (!nofuse || strcmp(nofuse, "1") != 0);
    if (fuse) {
        find_fusions(&b, need, fetches, nfetches, targets, ntargets);
        find_ew_groups(&b, need, fetches, nfetches, targets, ntargets);
    }

    /* Clones in node order: every data input is older than its consumer. A node reading a
     * fused group's output may come before the group's last input: it waits for a later pass
     * (the groups were chosen so that no path leaves one and returns). */
    char *done = rill__calloc((size_t)nn + 1, 1);
    RILL_CHECK_ALLOC(done);
    int left = 0;
    for (int i = 0; i < nn; i++) left += need[i] != 0;
    for (bool progress = true; left && progress;) {
        progress = false;
        for (int i = 0; i < nn; i++) {
            if (!need[i] || done[i]) continue;
            int r = clone_node(&b, i);
            if (r < 0) {
                rill__free(done);
                goto out;
            }
            if (r == 0) continue;
            int gi = b.ew.group_of ? b.ew.group_of[i] : -1;
            if (gi >= 0) { /* the whole group is cloned */
                for (int m = 0; m < b.ew.g[gi].nmembers; m++) done[b.ew.g[gi].members[m]] = 1;
                left -= b.ew.g[gi].nmembers;
            } else {
                done[i] = 1;
                left--;
            }
            progress = true;
        }
    }
    rill__free(done);
    if (left) {
        rill_status_set(s, RILL_INTERNAL, "partition: %d nodes could not be ordered after fusion",
                        left);
        goto out;
    }
    /* Control edges (kept direct: one executor runs every local partition). Absorbed nodes have
     * none; a replaced one's go to the node that stands for it. */
    for (int i = 0; i < nn; i++) {
        if (!need[i] || b.role[i] == FUSE_ABSORBED || b.role[i] == FUSE_REPLACED) continue;
        if (b.ew.group_of && b.ew.group_of[i] >= 0) continue; /* members have none */
        rill_node *n = rill_graph_node(g, i);
        for (int k = 0; k < n->ncontrol; k++) {
            rill_node *c = n->control_inputs[k];
            if (!b.clone[c->id]) continue;
            /* a fed node's value is there when the step starts: nothing to wait for */
            if (tasks && task_of(&b, dev_of(&b, c)) != task_of(&b, dev_of(&b, n))) {
                rill_output r = remote_transfer(&b, (rill_output){NULL, 0}, dev_of(&b, c),
                                                dev_of(&b, n), c->name, b.clone[c->id]);
                if (!r.node) break;
                rill_node_add_control_input(b.clone[i], r.node);
            } else {
                rill_node_add_control_input(b.clone[i], b.clone[c->id]);
            }
        }
    }

    out->nfetches = nfetches;
    out->fetches = rill__calloc((size_t)(nfetches ? nfetches : 1), sizeof *out->fetches);
    RILL_CHECK_ALLOC(out->fetches);
    for (int i = 0; i < nfetches; i++)
        out->fetches[i] = source_for(&b, fetches[i], client_of(&b), true);
    out->ntargets = ntargets;
    out->targets = rill__calloc((size_t)(ntargets ? ntargets : 1), sizeof *out->targets);
    RILL_CHECK_ALLOC(out->targets);
    for (int i = 0; i < ntargets; i++)
        out->targets[i] =
            b.clone[targets[i]->id] ? b.clone[targets[i]->id] : fed_whole(&b, targets[i]);
    if (!rill_graph_ok(b.xg)) {
        rill_status_copy(s, rill_graph_status(b.xg));
        goto out;
    }
    out->g = b.xg;
    b.xg = NULL;
    ok = true;
out:
    if (!ok) rill__xgraph_free(out);
    rill_graph_free(b.xg);
    for (int i = 0; i < b.xfers.n; i++) rill__free(b.xfers.items[i]);
    rill__vec_free(&b.xfers);
    rill__free(b.clone);
    rill__free(b.fed);
    rill__free(b.fed_start);
    rill__free(b.role);
    rill__free(b.partner);
    rill__free(b.shift);
    rill__free(b.omap);
    rill__ew_groups_free(&b.ew);
    rill__free(need);
    rill__free(stack);
    return ok;
}

void rill__xgraph_free(rill__xgraph *x)
{
    rill_graph_free(x->g);
    rill__free(x->feeds);
    rill__free(x->fetches);
    rill__free(x->targets);
    memset(x, 0, sizeof *x);
}
