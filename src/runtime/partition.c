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
 * with the pair split across processes. */
#include "runtime.h"

#include <string.h>

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
    rill_graph *xg;
    rill_node **clone;     /* per original node id */
    rill_output *fed;      /* per original (id, output): feed node output, or {NULL} */
    int *fed_start;        /* index into fed per original node */
    rill__vec xfers;
    int counter;
    rill_status *s;
} builder;

static rill__device *dev_of(const builder *b, const rill_node *n)
{
    rill__device *d = b->pl->assigned[n->id];
    return d ? d : rill__cpu_device();
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
    return k && (k->host_memory_outputs & (1u << idx));
}

static bool in_host(const rill__device *d, const rill_node *n, int k)
{
    if (host_device(d)) return true;
    const rill__kernel_def *kd = kernel_of(n, d);
    return kd && (kd->host_memory_inputs & (1u << k));
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
    snprintf(tensor_name, sizeof tensor_name, "edge_%d_%s", b->counter, origin_name);
    snprintf(name, sizeof name, "%s/_%d/", origin_name, b->counter++);
    rill__attr sa[] = {RILL__A_STRING("tensor_name", tensor_name),
                       RILL__A_STRING("send_device", src_dev->name),
                       RILL__A_STRING("recv_device", dst->name)};
    rill_node *send = rill__node_create(b->xg, "_Send", name, &src, 1, sa, 3);
    if (!send) return (rill_output){NULL, 0};
    send->assigned = src_dev;
    snprintf(name, sizeof name, "%s/_%d/", origin_name, b->counter++);
    rill__attr ra[] = {RILL__A_STRING("tensor_name", tensor_name),
                       RILL__A_STRING("send_device", src_dev->name),
                       RILL__A_STRING("recv_device", dst->name), RILL__A_BOOL("host_memory", host)};
    rill_output sout = {send, 0};
    rill_node *recv = rill__node_create(b->xg, "_Recv", name, &sout, 1, ra, 4);
    if (!recv) return (rill_output){NULL, 0};
    recv->assigned = dst;
    xfer *x = rill__malloc(sizeof *x);
    RILL_CHECK_ALLOC(x);
    *x = (xfer){src.node, src.index, dst, host, {recv, 0}};
    rill__vec_push(&b->xfers, x);
    return x->recv;
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
        src_dev = rill__cpu_device();
        src_host = true;
    } else {
        src = (rill_output){b->clone[o.node->id], o.index};
        src_dev = dev_of(b, o.node);
        src_host = out_host(b, o.node, o.index);
    }
    bool same = src_host ? host : (!host && src_dev == dst);
    if (same) return src;
    return transfer(b, src, src_dev, dst, host, o.node->name);
}

static void clone_attrs(const rill_node *n, rill__attr *out)
{
    for (int i = 0; i < n->nattrs; i++) out[i] = n->attrs[i];
}

bool rill__partition(rill_graph *g, const rill__placement *pl, const rill_output *feeds,
                     int nfeeds, const rill_output *fetches, int nfetches,
                     rill_node *const *targets, int ntargets, rill__xgraph *out, rill_status *s)
{
    memset(out, 0, sizeof *out);
    int nn = rill_graph_num_nodes(g);
    builder b = {.g = g, .pl = pl, .s = s};
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
        if (is_ph) shape = rill__node_attr(f.node, "shape")->v.shape;
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
        ph->assigned = rill__cpu_device();
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
        if (!need[targets[i]->id]) need[targets[i]->id] = 1, stack[ns++] = targets[i]->id;
    while (ns) {
        rill_node *n = rill_graph_node(g, stack[--ns]);
        for (int k = 0; k < n->ninputs; k++) {
            rill_output in = n->inputs[k];
            bool ref = n->op->ref_inputs & (1u << k);
            if (!ref && b.fed[b.fed_start[in.node->id] + in.index].node) continue;
            if (!need[in.node->id]) need[in.node->id] = 1, stack[ns++] = in.node->id;
        }
        for (int k = 0; k < n->ncontrol; k++) {
            rill_node *c = n->control_inputs[k];
            if (!need[c->id]) need[c->id] = 1, stack[ns++] = c->id;
        }
    }

    /* Clones in node order: every data input is older than its consumer. */
    for (int i = 0; i < nn; i++) {
        if (!need[i]) continue;
        rill_node *n = rill_graph_node(g, i);
        rill__device *d = dev_of(&b, n);
        rill_output inbuf[16], *ins = n->ninputs > 16 ? rill__malloc((size_t)n->ninputs * sizeof *ins) : inbuf;
        RILL_CHECK_ALLOC(ins);
        for (int k = 0; k < n->ninputs; k++) {
            rill_output in = n->inputs[k];
            if (n->op->ref_inputs & (1u << k))
                ins[k] = (rill_output){b.clone[in.node->id], in.index};
            else
                ins[k] = source_for(&b, in, d, in_host(d, n, k));
        }
        rill__attr abuf[16], *attrs = n->nattrs > 16 ? rill__malloc((size_t)n->nattrs * sizeof *attrs) : abuf;
        RILL_CHECK_ALLOC(attrs);
        clone_attrs(n, attrs);
        char name[512];
        snprintf(name, sizeof name, "%s/", n->name);
        rill_node *c = rill_graph_ok(b.xg)
                           ? rill__node_create(b.xg, n->op->name, name, ins, n->ninputs, attrs,
                                               n->nattrs)
                           : NULL;
        if (ins != inbuf) rill__free(ins);
        if (attrs != abuf) rill__free(attrs);
        if (!c) {
            rill_status_copy(s, rill_graph_status(b.xg));
            goto out;
        }
        c->assigned = d;
        c->origin = n;
        c->seed = n->seed;
        c->seed2 = n->seed2;
        b.clone[i] = c;
    }
    /* Control edges (kept direct: one executor runs every local partition). */
    for (int i = 0; i < nn; i++) {
        if (!need[i]) continue;
        rill_node *n = rill_graph_node(g, i);
        for (int k = 0; k < n->ncontrol; k++)
            if (b.clone[n->control_inputs[k]->id])
                rill_node_add_control_input(b.clone[i], b.clone[n->control_inputs[k]->id]);
    }

    out->nfetches = nfetches;
    out->fetches = rill__calloc((size_t)(nfetches ? nfetches : 1), sizeof *out->fetches);
    RILL_CHECK_ALLOC(out->fetches);
    for (int i = 0; i < nfetches; i++)
        out->fetches[i] = source_for(&b, fetches[i], rill__cpu_device(), true);
    out->ntargets = ntargets;
    out->targets = rill__calloc((size_t)(ntargets ? ntargets : 1), sizeof *out->targets);
    RILL_CHECK_ALLOC(out->targets);
    for (int i = 0; i < ntargets; i++) out->targets[i] = b.clone[targets[i]->id];
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
