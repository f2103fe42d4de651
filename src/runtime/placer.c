/* placer.c - assigns every node of a graph to a device (TensorFlow's placer, reference §2).
 *
 * 1. Colocation groups (union-find): a node and the variable behind each of its reference
 *    inputs, and explicit colocate_with groups. A group's requested device is the merge of its
 *    members' requests (conflicting job/replica/task is always an error; conflicting type or id
 *    is an error unless soft placement drops it). A reference consumer whose own request
 *    conflicts with its variable's takes the variable's (TF's "Ignoring device specification").
 * 2. A group's candidates: devices matching its request on which every member has a kernel,
 *    sorted by type priority (GPU before CPU) then name. With soft placement and no candidate,
 *    the request's type and id are cleared and the search repeats within the same task.
 * 3. Assignment in node order: a group takes its first candidate; Shape takes its input's
 *    device; generators (no inputs, one output) follow their consumers when those agree.
 * The nodes of a while loop that ask for no device type ask for the CPU (a loop runs on one
 * device, runtime/frame.c).
 * Placement is incremental, like TF's after graph extension: nodes placed by an earlier call
 * keep their devices, and a new node joining their group must fit them. */
#include <rill/device_name.h>

#include "runtime.h"

#include <stdlib.h>
#include <string.h>

static int find(int *parent, int x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

static void unite(int *parent, int a, int b)
{
    a = find(parent, a);
    b = find(parent, b);
    if (a == b) return;
    /* The older node stays root: groups report errors in node order. */
    if (a < b)
        parent[b] = a;
    else
        parent[a] = b;
}

static bool has_kernel(const rill_node *n, const rill__device *d)
{
    return rill__kernel_lookup(n->op->name, d->kernel_key, rill__node_kernel_dtype(n)) != NULL;
}

typedef struct group {
    rill_device_name spec;
    bool spec_ok;
    rill__device *fixed; /* a member was placed earlier */
    int ncand;
    rill__device **cand;
    bool done;
} group;

static int cmp_devices(const void *a, const void *b)
{
    const rill__device *x = *(rill__device *const *)a, *y = *(rill__device *const *)b;
    int px = rill__device_type_priority(x->type), py = rill__device_type_priority(y->type);
    if (px != py) return py - px;
    return strcmp(x->name, y->name);
}

static char *device_list(rill__device *const *devs, int n)
{
    rill__device **sorted = rill__malloc((size_t)n * sizeof *sorted);
    RILL_CHECK_ALLOC(sorted);
    memcpy(sorted, devs, (size_t)n * sizeof *sorted);
    /* TF lists them sorted by name. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(sorted[j]->name, sorted[j - 1]->name) < 0; j--) {
            rill__device *t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    size_t cap = 64 + (size_t)n * 160, off = 0;
    char *buf = rill__malloc(cap);
    RILL_CHECK_ALLOC(buf);
    off += (size_t)snprintf(buf + off, cap - off, "[ ");
    for (int i = 0; i < n; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%s", i ? ", " : "", sorted[i]->name);
    snprintf(buf + off, cap - off, " ]");
    rill__free(sorted);
    return buf;
}

/* Devices matching spec on which every member of group root supports its kernel. */
static int candidates(rill_graph *g, const int *parent, int root, const rill_device_name *spec,
                      rill__device *const *sorted, int ndev, rill__device **out, int *nmatch)
{
    int n = 0, nn = rill_graph_num_nodes(g);
    *nmatch = 0;
    for (int d = 0; d < ndev; d++) {
        rill_device_name dn;
        if (!rill_device_name_parse(sorted[d]->name, &dn, NULL)) continue;
        if (!rill_device_name_matches(spec, &dn)) continue;
        (*nmatch)++;
        bool ok = true;
        for (int i = root; i < nn && ok; i++) {
            if (parent[i] != root && find((int *)parent, i) != root) continue;
            ok = has_kernel(rill_graph_node(g, i), sorted[d]);
        }
        if (ok) out[n++] = sorted[d];
    }
    return n;
}

static bool has_details(const rill_device_name *d)
{
    return d->has_job || d->has_replica || d->has_task || d->has_type || d->has_id;
}

/* TF's reference-edge rule (reference §2.2 step 3): a node whose reference input comes from a
 * variable that asked for an incompatible device takes the variable's request instead of its
 * own, so an update built under another device scope (replica_device_setter leaves Assign on
 * the worker) still lands with its variable. */
static bool follow_reference_inputs(const rill_node *n, rill_device_name *dn, bool log,
                                    rill_status *s)
{
    for (int k = 0; k < n->ninputs; k++) {
        if (!rill__bit32(n->op->ref_inputs, k)) continue;
        const rill_node *src = n->inputs[k].node;
        rill_device_name sdn, test = *dn;
        if (!rill_device_name_parse(src->requested_device, &sdn, s)) return false;
        if (!has_details(&sdn) || !has_details(dn)) continue;
        if (rill_device_name_merge(&test, &sdn, false, NULL)) continue;
        if (log) {
            char a[RILL_DEVICE_NAME_MAX], b[RILL_DEVICE_NAME_MAX];
            fprintf(stderr,
                    "Ignoring device specification %s for node '%s' because the input edge from "
                    "'%s' is a reference connection and already has a device field set to %s\n",
                    rill_device_name_str(dn, a, sizeof a), n->name, src->name,
                    rill_device_name_str(&sdn, b, sizeof b));
        }
        *dn = sdn;
    }
    return true;
}

bool rill__place(rill_graph *g, rill__placement *pl, rill__device *const *devs, int ndev,
                 bool soft, bool log, rill_status *s)
{
    int nn = rill_graph_num_nodes(g);
    if (pl->n >= nn) return true;
    if (ndev == 0) {
        rill_status_set(s, RILL_FAILED_PRECONDITION, "No devices are registered");
        return false;
    }
    if (pl->cap < nn) {
        int cap = nn * 2;
        rill__device **a = rill__realloc(pl->assigned, (size_t)cap * sizeof *a);
        RILL_CHECK_ALLOC(a);
        memset(a + pl->cap, 0, (size_t)(cap - pl->cap) * sizeof *a);
        pl->assigned = a;
        pl->cap = cap;
    }
    rill__device **sorted = rill__malloc((size_t)ndev * sizeof *sorted);
    int *parent = rill__malloc((size_t)nn * sizeof *parent);
    group *groups = rill__calloc((size_t)nn, sizeof *groups);
    rill__device **cand = rill__malloc((size_t)nn * (size_t)ndev * sizeof *cand);
    RILL_CHECK_ALLOC(sorted);
    RILL_CHECK_ALLOC(parent);
    RILL_CHECK_ALLOC(groups);
    RILL_CHECK_ALLOC(cand);
    memcpy(sorted, devs, (size_t)ndev * sizeof *sorted);
    qsort(sorted, (size_t)ndev, sizeof *sorted, cmp_devices);
    bool ok = false;
    int *loop_depth = NULL;

    for (int i = 0; i < nn; i++) parent[i] = i;
    for (int i = 0; i < nn; i++) {
        rill_node *n = rill_graph_node(g, i);
        if (n->colocate_with) unite(parent, i, n->colocate_with->id);
        for (int k = 0; k < n->ninputs; k++)
            if (rill__bit32(n->op->ref_inputs, k)) unite(parent, i, n->inputs[k].node->id);
    }
    for (int i = 0; i < nn; i++) parent[i] = find(parent, i);

    /* While loops run on one device (runtime/frame.c): a loop's nodes that ask for no device
     * type run on the CPU. A node's loop depth: an Enter's is its input's plus one, an Exit's
     * its input's minus one, any other node's the deepest of its inputs' (data and control);
     * node ids are in creation order, so one pass does. */
    loop_depth = rill__calloc((size_t)nn + 1, sizeof *loop_depth);
    RILL_CHECK_ALLOC(loop_depth);
    for (int i = 0; i < nn; i++) {
        rill_node *n = rill_graph_node(g, i);
        int d = 0;
        if (strcmp(n->op->name, "Enter") == 0) {
            d = loop_depth[n->inputs[0].node->id] + 1;
        } else if (strcmp(n->op->name, "Exit") == 0) {
            d = loop_depth[n->inputs[0].node->id] - 1;
            if (d < 0) d = 0;
        } else {
            for (int k = 0; k < n->ninputs; k++)
                if (loop_depth[n->inputs[k].node->id] > d) d = loop_depth[n->inputs[k].node->id];
            for (int k = 0; k < n->ncontrol; k++)
                if (loop_depth[n->control_inputs[k]->id] > d) d = loop_depth[n->control_inputs[k]->id];
        }
        loop_depth[i] = d;
    }

    /* Merge each group's requests; note devices fixed by earlier placements. */
    for (int i = 0; i < nn; i++) {
        rill_node *n = rill_graph_node(g, i);
        group *gr = &groups[parent[i]];
        rill_device_name dn;
        if (!rill_device_name_parse(n->requested_device, &dn, s)) goto out;
        bool in_loop = loop_depth[i] > 0 || (strcmp(n->op->name, "Exit") == 0 &&
                                             loop_depth[n->inputs[0].node->id] > 0);
        if (in_loop && !dn.has_type) {
            dn.has_type = true;
            snprintf(dn.type, sizeof dn.type, "CPU");
        }
        if (!follow_reference_inputs(n, &dn, log && i >= pl->n, s)) goto out;
        if (i < pl->n && pl->assigned[i]) gr->fixed = pl->assigned[i];
        if (!gr->spec_ok) {
            gr->spec = dn;
            gr->spec_ok = true;
            continue;
        }
        /* As TF's ColocateNodes(x, y): the later node x first, merged with the group's spec,
         * and the group's first node y second (TF's missing closing quote included). */
        rill_status *ms = rill_status_new();
        rill_device_name merged = dn;
        if (!rill_device_name_merge(&merged, &gr->spec, soft, ms)) {
            rill_node *root = rill_graph_node(g, parent[i]);
            rill_status_set(s, RILL_INVALID_ARGUMENT, "Cannot colocate nodes '%s' and '%s: %s",
                            n->name, root->name, rill_status_message(ms));
            rill_status_free(ms);
            goto out;
        }
        gr->spec = merged;
        rill_status_free(ms);
    }

    /* Candidates per group that has a new member, in node order. */
    for (int i = pl->n; i < nn; i++) {
        int r = parent[i];
        group *gr = &groups[r];
        if (gr->done) continue;
        gr->done = true;
        gr->cand = cand + (size_t)r * (size_t)ndev;
        rill_node *n = rill_graph_node(g, i);
        if (gr->fixed) {
            bool fits = true;
            for (int j = r; j < nn && fits; j++)
                if (parent[j] == r) fits = has_kernel(rill_graph_node(g, j), gr->fixed);
            if (!fits) {
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "Cannot assign a device for operation '%s': Nodes were connected "
                                "by a reference connection (requiring them to be on the same "
                                "device), but the two nodes were assigned two different devices: "
                                "'%s' has no kernel on %s, where its group already runs",
                                n->name, n->name, gr->fixed->name);
                goto out;
            }
            gr->cand[0] = gr->fixed;
            gr->ncand = 1;
            continue;
        }
        int nmatch;
        gr->ncand = candidates(g, parent, r, &gr->spec, sorted, ndev, gr->cand, &nmatch);
        if (gr->ncand == 0 && soft) {
            rill_device_name relaxed = gr->spec;
            rill_device_name_clear_type(&relaxed);
            int m2;
            gr->ncand = candidates(g, parent, r, &relaxed, sorted, ndev, gr->cand, &m2);
        }
        if (gr->ncand > 0) continue;
        char req[256];
        rill_device_name_str(&gr->spec, req, sizeof req);
        if (nmatch == 0 && gr->spec.has_type) {
            char *list = device_list(devs, ndev);
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Cannot assign a device for operation '%s': Operation was explicitly "
                            "assigned to %s but available devices are %s. Make sure the device "
                            "specification refers to a valid device.",
                            n->name, req, list);
            rill__free(list);
        } else if (gr->spec.has_type) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Cannot assign a device for operation '%s': Could not satisfy "
                            "explicit device specification '%s' because no supported kernel for "
                            "%s devices is available.",
                            n->name, req, gr->spec.type);
        } else if (gr->spec.has_job || gr->spec.has_replica || gr->spec.has_task) {
            char *list = device_list(devs, ndev);
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Cannot assign a device for operation '%s': Could not satisfy "
                            "explicit device specification '%s'. The session's devices are %s "
                            "(with ConfigProto.device_filters, those of the tasks they match)",
                            n->name, req, list);
            rill__free(list);
        } else {
            char *reg = rill__kernels_registered_for(n->op->name);
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Cannot assign a device for operation '%s': Node had no OpKernel "
                            "registered to support this operation: Operation was %s and inputs "
                            "were %s\nRegistered kernels:\n%s",
                            n->name, n->op->name,
                            rill_dtype_name(rill__node_kernel_dtype(n)), reg);
            rill__free(reg);
        }
        goto out;
    }

    /* Assignment: groups decide once; generators are deferred to follow their consumers. */
    rill__consumers cons;
    rill__consumers_build(g, &cons);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = pl->n; i < nn; i++) {
            if (pl->assigned[i]) continue;
            rill_node *n = rill_graph_node(g, i);
            group *gr = &groups[parent[i]];
            rill__device *pick = NULL;
            for (int j = parent[i]; j < nn && !pick; j++)
                if (parent[j] == parent[i] && pl->assigned[j]) pick = pl->assigned[j];
            bool generator = n->ninputs == 0 && n->noutputs == 1 && n->op->ref_inputs == 0 &&
                             strcmp(n->op->name, "VariableV2") != 0;
            if (!pick && pass == 0 && generator && parent[i] == i) continue;
            if (!pick && strcmp(n->op->name, "Shape") == 0 && n->ninputs == 1) {
                rill__device *in = pl->assigned[n->inputs[0].node->id];
                for (int c = 0; c < gr->ncand && in; c++)
                    if (gr->cand[c] == in) pick = in;
            }
            if (!pick && generator) {
                rill__device *common = NULL;
                bool agree = true;
                for (int e = cons.start[i]; e < cons.start[i + 1] && agree; e++) {
                    rill__device *cd = pl->assigned[cons.node[e]->id];
                    if (!cd) continue;
                    if (common && common != cd) agree = false;
                    common = cd;
                }
                for (int c = 0; c < gr->ncand && agree && common; c++)
                    if (gr->cand[c] == common) pick = common;
            }
            if (!pick) pick = gr->cand[0];
            pl->assigned[i] = pick;
        }
    }
    rill__consumers_free(&cons);
    if (log)
        for (int i = pl->n; i < nn; i++) {
            rill_node *n = rill_graph_node(g, i);
            printf("%s: (%s): %s\n", n->name, n->op->name, pl->assigned[i]->name);
        }
    if (log) fflush(stdout);
    pl->n = nn;
    ok = true;
out:
    rill__free(loop_depth);
    rill__free(sorted);
    rill__free(parent);
    rill__free(groups);
    rill__free(cand);
    return ok;
}

void rill__placement_free(rill__placement *pl)
{
    rill__free(pl->assigned);
    pl->assigned = NULL;
    pl->n = pl->cap = 0;
}

void rill__log_device_mapping(rill__device *const *devs, int ndev)
{
    int shown = 0;
    for (int i = 0; i < ndev; i++)
        if (devs[i]->desc[0]) shown++;
    if (!shown) {
        printf("Device mapping: no known devices.\n");
    } else {
        printf("Device mapping:\n");
        for (int i = 0; i < ndev; i++)
            if (devs[i]->desc[0]) printf("%s -> %s\n", devs[i]->name, devs[i]->desc);
    }
    fflush(stdout);
}
