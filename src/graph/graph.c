/* graph.c - the graph object: nodes, names and scopes, the sticky status, collections, lookup.
 *
 * Nodes are created only through rill__node_create, which names them (scope prefix + unique
 * suffix), attaches the control-dependency and device scopes, copies attributes and runs the
 * op's shape function. A failure leaves the graph unchanged except for its status. */
#include "graph_internal.h"

#include <rill/device_name.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct ctrl_frame {
    rill_node **deps;
    int n;
    bool clear; /* ignore outer frames */
} ctrl_frame;

/* One tf.device scope: a parsed spec, a device function, or a barrier (tf.device(None)). */
typedef struct dev_frame {
    enum { DEV_SPEC, DEV_FN, DEV_BARRIER } kind;
    rill_device_name spec;
    rill_device_fn fn;
    void *arg;
} dev_frame;

typedef struct var_scope {
    char *prefix; /* "outer/inner/" */
    bool reuse;
} var_scope;

typedef struct collection {
    char *key;
    rill__vec members;
} collection;

struct rill_graph {
    rill__vec nodes;
    rill__strmap by_name;
    rill__strmap name_counts; /* used names -> (void*)(intptr_t)next suffix */
    rill_status *status;
    rill__vec name_scopes; /* char* full prefixes "a/b/" */
    rill__vec ctrl;        /* ctrl_frame* */
    rill__vec devices;     /* dev_frame* */
    rill__vec colocate;    /* rill_node* */
    rill__vec var_scopes;  /* var_scope* */
    rill__vec collections; /* collection* */
    bool has_seed;
    int64_t seed;
    int64_t last_op_seed;
    rill_gradient_override_fn grad_override; /* rill_graph_set_gradient_override */
    void *grad_override_arg;
};

void rill_graph_set_gradient_override(rill_graph *g, rill_gradient_override_fn fn, void *arg)
{
    g->grad_override = fn;
    g->grad_override_arg = arg;
}

rill_gradient_override_fn rill__graph_gradient_override(const rill_graph *g, void **arg)
{
    *arg = g->grad_override_arg;
    return g->grad_override;
}

rill_graph *rill_graph_new(void)
{
    rill_graph *g = rill__calloc(1, sizeof *g);
    RILL_CHECK_ALLOC(g);
    g->status = rill_status_new();
    return g;
}

static void node_free(rill_node *n)
{
    if (!n) return;
    for (int i = 0; i < n->nattrs; i++) {
        rill__attr *a = &n->attrs[i];
        if (a->kind == RILL__ATTR_TENSOR) rill_tensor_free(a->v.tensor);
        if (a->kind == RILL__ATTR_STRING) rill__free((void *)a->v.s);
        if (a->kind == RILL__ATTR_INTS) rill__free((void *)a->v.ints.v);
    }
    rill__free(n->attrs);
    rill__free(n->name);
    rill__free(n->inputs);
    rill__free(n->control_inputs);
    rill__free(n->out_dtypes);
    rill__free(n->out_shapes);
    rill__free(n->requested_device);
    rill__free(n);
}

void rill_graph_free(rill_graph *g)
{
    if (!g) return;
    for (int i = 0; i < g->nodes.n; i++) node_free(g->nodes.items[i]);
    rill__vec_free(&g->nodes);
    rill__strmap_free(&g->by_name);
    rill__strmap_free(&g->name_counts);
    rill_status_free(g->status);
    for (int i = 0; i < g->name_scopes.n; i++) rill__free(g->name_scopes.items[i]);
    rill__vec_free(&g->name_scopes);
    for (int i = 0; i < g->ctrl.n; i++) {
        ctrl_frame *f = g->ctrl.items[i];
        rill__free(f->deps);
        rill__free(f);
    }
    rill__vec_free(&g->ctrl);
    for (int i = 0; i < g->devices.n; i++) rill__free(g->devices.items[i]);
    rill__vec_free(&g->devices);
    rill__vec_free(&g->colocate);
    for (int i = 0; i < g->var_scopes.n; i++) {
        var_scope *v = g->var_scopes.items[i];
        rill__free(v->prefix);
        rill__free(v);
    }
    rill__vec_free(&g->var_scopes);
    for (int i = 0; i < g->collections.n; i++) {
        collection *c = g->collections.items[i];
        rill__free(c->key);
        rill__vec_free(&c->members);
        rill__free(c);
    }
    rill__vec_free(&g->collections);
    rill__free(g);
}

const rill_status *rill_graph_status(const rill_graph *g)
{
    return g->status;
}

rill_status *rill__graph_status_mut(rill_graph *g)
{
    return g->status;
}

bool rill_graph_ok(const rill_graph *g)
{
    return rill_status_ok(g->status);
}

void rill_graph_clear_status(rill_graph *g)
{
    rill_status_clear(g->status);
}

void rill__graph_fail(rill_graph *g, rill_code code, const char *fmt, ...)
{
    if (!rill_status_ok(g->status)) return;
    va_list ap;
    va_start(ap, fmt);
    rill_status_setv(g->status, code, fmt, ap);
    va_end(ap);
}

void rill_graph_set_seed(rill_graph *g, int64_t seed)
{
    g->has_seed = true;
    g->seed = seed; /* the ops' counter goes on, as TF's does */
}

/* --- names --- */

static const char *scope_prefix(const rill_graph *g)
{
    return g->name_scopes.n ? g->name_scopes.items[g->name_scopes.n - 1] : "";
}

/* base if unused, else base_1, base_2, ... (TF's unique_name). Caller frees. As TF, names are
 * told apart without regard to case ("loss" after a scope "Loss" is "loss_1": TensorBoard and
 * file systems that fold case would mix them up), though each keeps the case it was given. */
static char *unique_name(rill_graph *g, const char *base)
{
    char *key = rill__strdup(base);
    RILL_CHECK_ALLOC(key);
    for (char *p = key; *p; p++)
        if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
    intptr_t next = (intptr_t)rill__strmap_get(&g->name_counts, key);
    if (next == 0 && !rill__strmap_get(&g->by_name, base)) {
        rill__strmap_put(&g->name_counts, key, (void *)(intptr_t)1);
        rill__free(key);
        return rill__strdup(base);
    }
    if (next == 0) next = 1;
    for (;; next++) {
        char *cand = rill__asprintf("%s_%ld", base, (long)next);
        char *ckey = rill__asprintf("%s_%ld", key, (long)next);
        if (!rill__strmap_get(&g->by_name, cand) && !rill__strmap_get(&g->name_counts, ckey)) {
            rill__strmap_put(&g->name_counts, key, (void *)(intptr_t)(next + 1));
            rill__strmap_put(&g->name_counts, ckey, (void *)(intptr_t)1);
            rill__free(ckey);
            rill__free(key);
            return cand;
        }
        rill__free(cand);
        rill__free(ckey);
    }
}

static bool valid_name(const char *s)
{
    if (!*s) return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == '-' || c == '/';
        if (!ok) return false;
    }
    return s[0] != '/' && s[strlen(s) - 1] != '/';
}

void rill_graph_push_name_scope(rill_graph *g, const char *scope)
{
    /* A scope ending in '/' is taken as an exact, absolute prefix (TF's re-entry rule); "/"
     * alone is the root. */
    size_t len = scope ? strlen(scope) : 0;
    if (len && scope[len - 1] == '/') {
        rill__vec_push(&g->name_scopes, rill__strdup(len == 1 ? "" : scope));
        return;
    }
    char *base = rill__asprintf("%s%s", scope_prefix(g), scope ? scope : "");
    char *uniq = (scope && *scope) ? unique_name(g, base) : rill__strdup(base);
    char *full = rill__asprintf("%s%s", uniq, (scope && *scope) ? "/" : "");
    rill__free(base);
    rill__free(uniq);
    rill__vec_push(&g->name_scopes, full);
}

void rill_graph_pop_name_scope(rill_graph *g)
{
    if (g->name_scopes.n) rill__free(g->name_scopes.items[--g->name_scopes.n]);
}

void rill_graph_push_control_dependencies(rill_graph *g, rill_node *const *deps, int n)
{
    ctrl_frame *f = rill__calloc(1, sizeof *f);
    RILL_CHECK_ALLOC(f);
    f->clear = n == 0;
    if (n > 0) {
        f->deps = rill__malloc((size_t)n * sizeof *f->deps);
        RILL_CHECK_ALLOC(f->deps);
        for (int i = 0; i < n; i++) {
            if (!deps[i]) {
                rill__graph_fail(g, RILL_INVALID_ARGUMENT,
                                 "control dependency %d is empty (an earlier call failed?)", i);
                continue;
            }
            f->deps[f->n++] = deps[i];
        }
    }
    rill__vec_push(&g->ctrl, f);
}

void rill_graph_pop_control_dependencies(rill_graph *g)
{
    if (!g->ctrl.n) return;
    ctrl_frame *f = g->ctrl.items[--g->ctrl.n];
    rill__free(f->deps);
    rill__free(f);
}

static void push_frame(rill_graph *g, dev_frame f)
{
    dev_frame *p = rill__malloc(sizeof *p);
    RILL_CHECK_ALLOC(p);
    *p = f;
    rill__vec_push(&g->devices, p);
}

void rill_graph_push_device(rill_graph *g, const char *spec)
{
    dev_frame f = {.kind = spec ? DEV_SPEC : DEV_BARRIER};
    rill_status *s = rill_status_new();
    if (spec && !rill_device_name_parse(spec, &f.spec, s)) {
        if (rill_graph_ok(g)) rill_status_copy(g->status, s);
        memset(&f.spec, 0, sizeof f.spec); /* the frame is still pushed so pops pair up */
    }
    rill_status_free(s);
    push_frame(g, f);
}

void rill_graph_push_device_fn(rill_graph *g, rill_device_fn fn, void *arg)
{
    push_frame(g, (dev_frame){.kind = fn ? DEV_FN : DEV_BARRIER, .fn = fn, .arg = arg});
}

void rill_graph_pop_device(rill_graph *g)
{
    if (g->devices.n) rill__free(g->devices.items[--g->devices.n]);
}

void rill_graph_push_colocate_with(rill_graph *g, rill_node *op)
{
    if (!op) rill__graph_fail(g, RILL_INVALID_ARGUMENT, "colocate_with: the node is empty");
    rill__vec_push(&g->colocate, op);
}

void rill_graph_pop_colocate_with(rill_graph *g)
{
    if (g->colocate.n) g->colocate.n--;
}

/* The requested device of a new node: device scopes from the innermost outwards, each filling
 * only fields still unset (tf.device nesting), stopping at a barrier; inside colocate_with the
 * colocated node's request instead. */
static bool node_device(rill_graph *g, rill_node *n, rill_status *s)
{
    if (g->colocate.n) {
        rill_node *c = g->colocate.items[g->colocate.n - 1];
        if (c) {
            n->colocate_with = c->colocate_with ? c->colocate_with : c;
            n->requested_device = rill__strdup(c->requested_device);
            return true;
        }
    }
    rill_device_name cur = {0};
    for (int i = g->devices.n - 1; i >= 0; i--) {
        dev_frame *f = g->devices.items[i];
        if (f->kind == DEV_BARRIER) break;
        rill_device_name outer = f->spec;
        if (f->kind == DEV_FN) {
            /* A device function sees the device chosen so far (TF passes the op whose device
             * field the inner scopes already set). */
            char sofar[256];
            rill__free(n->requested_device);
            n->requested_device = rill__strdup(rill_device_name_str(&cur, sofar, sizeof sofar));
            const char *spec = f->fn(f->arg, n);
            if (!spec) continue;
            if (!rill_device_name_parse(spec, &outer, s)) return false;
        }
        cur = rill_device_name_merge_scope(&outer, &cur);
    }
    char buf[256];
    rill__free(n->requested_device);
    n->requested_device = rill__strdup(rill_device_name_str(&cur, buf, sizeof buf));
    return true;
}

void rill_graph_push_variable_scope(rill_graph *g, const char *scope, bool reuse)
{
    var_scope *outer = g->var_scopes.n ? g->var_scopes.items[g->var_scopes.n - 1] : NULL;
    var_scope *v = rill__calloc(1, sizeof *v);
    RILL_CHECK_ALLOC(v);
    v->prefix = rill__asprintf("%s%s/", outer ? outer->prefix : "", scope);
    v->reuse = reuse || (outer && outer->reuse);
    rill__vec_push(&g->var_scopes, v);
    rill_graph_push_name_scope(g, scope);
}

void rill_graph_pop_variable_scope(rill_graph *g)
{
    if (!g->var_scopes.n) return;
    var_scope *v = g->var_scopes.items[--g->var_scopes.n];
    rill__free(v->prefix);
    rill__free(v);
    rill_graph_pop_name_scope(g);
}

const char *rill_graph_name_scope(const rill_graph *g)
{
    return scope_prefix(g);
}

const char *rill__graph_scope_prefix(const rill_graph *g)
{
    return scope_prefix(g);
}

const char *rill__graph_var_scope(const rill_graph *g, bool *reuse)
{
    var_scope *v = g->var_scopes.n ? g->var_scopes.items[g->var_scopes.n - 1] : NULL;
    if (reuse) *reuse = v && v->reuse;
    return v ? v->prefix : "";
}

/* --- attributes --- */

const rill__attr *rill__node_attr(const rill_node *n, const char *name)
{
    for (int i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

/* Attributes some op or kernel reads without checking the kind (rill__node_attr then ->v.s,
 * ->v.shape, ...). */
static const struct {
    const char *name;
    rill__attr_kind kind;
} UNCHECKED_ATTRS[] = {
    {"padding", RILL__ATTR_STRING},     {"data_format", RILL__ATTR_STRING},
    {"activation", RILL__ATTR_STRING},  {"tag", RILL__ATTR_STRING},
    {"shared_name", RILL__ATTR_STRING}, {"tensor_name", RILL__ATTR_STRING},
    {"send_job", RILL__ATTR_STRING},    {"recv_job", RILL__ATTR_STRING},
    {"strides", RILL__ATTR_INTS},       {"ksize", RILL__ATTR_INTS},
    {"dilations", RILL__ATTR_INTS},     {"axes", RILL__ATTR_INTS},
    {"shapes", RILL__ATTR_INTS},        {"dtypes", RILL__ATTR_INTS},
    {"shape", RILL__ATTR_SHAPE},        {"value", RILL__ATTR_TENSOR},
    {"names", RILL__ATTR_TENSOR},
};

bool rill__attr_kind_ok(const char *name, rill__attr_kind kind, rill__attr_kind *want)
{
    for (size_t i = 0; i < sizeof UNCHECKED_ATTRS / sizeof *UNCHECKED_ATTRS; i++)
        if (strcmp(UNCHECKED_ATTRS[i].name, name) == 0) {
            if (want) *want = UNCHECKED_ATTRS[i].kind;
            return UNCHECKED_ATTRS[i].kind == kind;
        }
    return true;
}

int64_t rill__attr_int(const rill_node *n, const char *name, int64_t def)
{
    const rill__attr *a = rill__node_attr(n, name);
    return a && a->kind == RILL__ATTR_INT ? a->v.i : def;
}

double rill__attr_float(const rill_node *n, const char *name, double def)
{
    const rill__attr *a = rill__node_attr(n, name);
    return a && a->kind == RILL__ATTR_FLOAT ? a->v.f : def;
}

bool rill__attr_bool(const rill_node *n, const char *name, bool def)
{
    const rill__attr *a = rill__node_attr(n, name);
    return a && a->kind == RILL__ATTR_BOOL ? a->v.b : def;
}

rill_dtype rill__attr_type(const rill_node *n, const char *name, rill_dtype def)
{
    const rill__attr *a = rill__node_attr(n, name);
    return a && a->kind == RILL__ATTR_TYPE ? a->v.type : def;
}

rill_dtype rill__node_kernel_dtype(const rill_node *n)
{
    if (n->op->type_attr) return rill__attr_type(n, n->op->type_attr, RILL_DT_INVALID);
    if (n->ninputs > 0) return rill__in_dtype(n, 0);
    if (n->noutputs > 0) return n->out_dtypes[0];
    return RILL_DT_INVALID;
}

/* --- node creation --- */

static void copy_attrs(rill_node *n, const rill__attr *attrs, int nattrs)
{
    n->nattrs = nattrs;
    if (!nattrs) return;
    n->attrs = rill__malloc((size_t)nattrs * sizeof *n->attrs);
    RILL_CHECK_ALLOC(n->attrs);
    for (int i = 0; i < nattrs; i++) {
        rill__attr a = attrs[i];
        if (a.kind == RILL__ATTR_TENSOR) rill_tensor_ref(a.v.tensor);
        if (a.kind == RILL__ATTR_STRING) a.v.s = rill__strdup(a.v.s);
        if (a.kind == RILL__ATTR_INTS) {
            int64_t *v = rill__malloc((size_t)(a.v.ints.n ? a.v.ints.n : 1) * sizeof *v);
            RILL_CHECK_ALLOC(v);
            if (a.v.ints.n) memcpy(v, a.v.ints.v, (size_t)a.v.ints.n * sizeof *v);
            a.v.ints.v = v;
        }
        n->attrs[i] = a;
    }
}

static void add_control(rill_node *n, rill_node *dep)
{
    for (int i = 0; i < n->ncontrol; i++)
        if (n->control_inputs[i] == dep) return;
    if (n->ncontrol == n->ccap) {
        int cap = n->ccap ? n->ccap * 2 : 4;
        rill_node **c = rill__realloc(n->control_inputs, (size_t)cap * sizeof *c);
        RILL_CHECK_ALLOC(c);
        n->control_inputs = c;
        n->ccap = cap;
    }
    n->control_inputs[n->ncontrol++] = dep;
}

static void derive_seeds(rill_graph *g, rill_node *n)
{
    /* TF's get_seed: graph seed + op seed; op seed alone pairs with a default graph seed. */
    if (!rill__node_attr(n, "seed")) return; /* not a random op: no seeds, nothing counted */
    int64_t op_seed = rill__attr_int(n, "seed", 0);
    if (rill__node_attr(n, "seed2")) { /* TF's (seed, seed2) as its Python derived them */
        n->seed = op_seed;
        n->seed2 = rill__attr_int(n, "seed2", 0);
        return;
    }
    if (g->has_seed) {
        /* TF 2.x's compat.v1 get_seed counts the ops that took the graph's seed (0, 1, ...);
         * TF 1.x used the graph's last op id, which rill's graphs, built of other nodes, do not
         * reproduce. */
        n->seed = g->seed;
        n->seed2 = op_seed ? op_seed : g->last_op_seed++;
        if (n->seed == 0 && n->seed2 == 0) n->seed2 = INT32_MAX; /* (0, 0) is "no seed" */
    } else if (op_seed) {
        n->seed = 87654321;
        n->seed2 = op_seed;
    } else {
        n->seed = n->seed2 = 0; /* nondeterministic */
    }
}

rill_node *rill__node_create(rill_graph *g, const char *op_type, const char *name,
                             const rill_output *inputs, int ninputs, const rill__attr *attrs,
                             int nattrs)
{
    if (!rill_status_ok(g->status)) return NULL;
    const rill__op_def *op = rill__op_lookup(op_type);
    if (!op) {
        rill__graph_fail(g, RILL_NOT_FOUND, "Op type not registered '%s'", op_type);
        return NULL;
    }
    for (int i = 0; i < ninputs; i++) {
        if (!inputs[i].node) {
            rill__graph_fail(g, RILL_INVALID_ARGUMENT,
                             "Input %d of a new %s node is empty (an earlier call failed?)", i,
                             op_type);
            return NULL;
        }
        if (inputs[i].node->graph != g) {
            rill__graph_fail(g, RILL_INVALID_ARGUMENT,
                             "Input %d of a new %s node ('%s') belongs to another graph", i,
                             op_type, inputs[i].node->name);
            return NULL;
        }
        if (inputs[i].index < 0 || inputs[i].index >= inputs[i].node->noutputs) {
            rill__graph_fail(g, RILL_OUT_OF_RANGE,
                             "Input %d of a new %s node refers to output %d of '%s', which has "
                             "%d outputs",
                             i, op_type, inputs[i].index, inputs[i].node->name,
                             inputs[i].node->noutputs);
            return NULL;
        }
    }
    if (ninputs < op->min_inputs || (op->max_inputs >= 0 && ninputs > op->max_inputs)) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT, "%s takes %d to %d inputs, got %d", op_type,
                         op->min_inputs, op->max_inputs, ninputs);
        return NULL;
    }
    /* A name ending in '/' is exact and absolute (a scope's own name, as TF's
     * name_scope(...) as name): no prefix, no suffix, and it must be free. */
    size_t nlen = name ? strlen(name) : 0;
    bool exact = nlen > 1 && name[nlen - 1] == '/';
    char *exact_name = exact ? rill__strndup(name, nlen - 1) : NULL;
    if (name && !valid_name(exact ? exact_name : name)) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT, "'%s' is not a valid node name", name);
        rill__free(exact_name);
        return NULL;
    }
    if (exact && rill_graph_find_node(g, exact_name)) {
        rill__graph_fail(g, RILL_ALREADY_EXISTS, "Duplicate node name in graph: '%s'", exact_name);
        rill__free(exact_name);
        return NULL;
    }
    for (int i = 0; i < ninputs; i++) {
        if (!rill__bit32(op->ref_inputs, i)) continue;
        if (!rill__is_variable(inputs[i])) {
            rill__graph_fail(g, RILL_INVALID_ARGUMENT,
                             "Input %d of %s must be a variable, got '%s' (%s)", i, op_type,
                             inputs[i].node->name, inputs[i].node->op->name);
            rill__free(exact_name);
            return NULL;
        }
    }

    rill_node *n = rill__calloc(1, sizeof *n);
    RILL_CHECK_ALLOC(n);
    n->graph = g;
    n->op = op;
    n->ninputs = ninputs;
    if (ninputs) {
        n->inputs = rill__malloc((size_t)ninputs * sizeof *n->inputs);
        RILL_CHECK_ALLOC(n->inputs);
        memcpy(n->inputs, inputs, (size_t)ninputs * sizeof *inputs);
    }
    copy_attrs(n, attrs, nattrs);
    /* An op with noutputs < 0 takes its count from the attribute num_outputs. */
    n->noutputs = op->noutputs;
    if (op->noutputs < 0) {
        int64_t k = rill__attr_int(n, "num_outputs", -1);
        n->noutputs = k >= 0 && k <= (1 << 20) ? (int)k : 0;
    }
    n->out_dtypes = rill__calloc((size_t)(n->noutputs ? n->noutputs : 1), sizeof *n->out_dtypes);
    n->out_shapes = rill__calloc((size_t)(n->noutputs ? n->noutputs : 1), sizeof *n->out_shapes);
    RILL_CHECK_ALLOC(n->out_dtypes);
    RILL_CHECK_ALLOC(n->out_shapes);
    for (int i = 0; i < n->noutputs; i++) n->out_shapes[i] = rill_shape_unknown();
    /* A provisional name for error messages from the shape function. */
    char *base = exact ? exact_name
                       : rill__asprintf("%s%s", scope_prefix(g), name ? name : op->default_name);
    n->name = base;

    rill_status *s = rill_status_new();
    if (op->shape) op->shape(n, s);
    if (!rill_status_ok(s)) {
        rill_status_copy(g->status, s);
        rill_status_free(s);
        node_free(n);
        return NULL;
    }
    if (exact) {
        n->name = base;
    } else {
        n->name = unique_name(g, base);
        rill__free(base);
    }
    /* Device scopes and device functions see the node with its final name. */
    if (!node_device(g, n, s)) {
        rill_status_copy(g->status, s);
        rill_status_free(s);
        node_free(n);
        return NULL;
    }
    rill_status_free(s);
    /* Control-dependency scopes, innermost first until a clearing frame. */
    for (int i = g->ctrl.n - 1; i >= 0; i--) {
        ctrl_frame *f = g->ctrl.items[i];
        for (int k = 0; k < f->n; k++) add_control(n, f->deps[k]);
        if (f->clear) break;
    }
    derive_seeds(g, n);
    n->id = g->nodes.n;
    rill__vec_push(&g->nodes, n);
    rill__strmap_put(&g->by_name, n->name, n);
    return n;
}

/* --- lookup and accessors --- */

rill_node *rill_graph_find_node(const rill_graph *g, const char *name)
{
    return rill__strmap_get(&g->by_name, name);
}

rill_output rill_graph_find_output(const rill_graph *g, const char *name, rill_status *s)
{
    rill_output none = {NULL, 0};
    const char *colon = strrchr(name, ':');
    char *op = colon ? rill__strndup(name, (size_t)(colon - name)) : rill__strdup(name);
    long idx = 0;
    if (colon) {
        char *end;
        idx = strtol(colon + 1, &end, 10);
        if (end == colon + 1 || *end || idx < 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "The name '%s' looks like a Tensor name, but is not a valid one. "
                            "Tensor names must be of the form \"<op_name>:<output_index>\".",
                            name);
            rill__free(op);
            return none;
        }
    }
    rill_node *n = rill_graph_find_node(g, op);
    if (!n) {
        rill_status_set(s, RILL_NOT_FOUND,
                        "The name '%s' refers to a Tensor which does not exist. The operation, "
                        "'%s', does not exist in the graph.",
                        name, op);
        rill__free(op);
        return none;
    }
    rill__free(op);
    if (idx >= n->noutputs) {
        rill_status_set(s, RILL_NOT_FOUND,
                        "The name '%s' refers to a Tensor which does not exist. The operation, "
                        "'%s', exists but only has %d outputs.",
                        name, n->name, n->noutputs);
        return none;
    }
    rill_status_clear(s);
    return (rill_output){n, (int)idx};
}

int rill_graph_num_nodes(const rill_graph *g)
{
    return g->nodes.n;
}

rill_node *rill_graph_node(const rill_graph *g, int i)
{
    return i >= 0 && i < g->nodes.n ? g->nodes.items[i] : NULL;
}

static collection *find_collection(const rill_graph *g, const char *key)
{
    for (int i = 0; i < g->collections.n; i++) {
        collection *c = g->collections.items[i];
        if (strcmp(c->key, key) == 0) return c;
    }
    return NULL;
}

void rill_graph_add_to_collection(rill_graph *g, const char *key, rill_node *n)
{
    if (!n) return;
    collection *c = find_collection(g, key);
    if (!c) {
        c = rill__calloc(1, sizeof *c);
        RILL_CHECK_ALLOC(c);
        c->key = rill__strdup(key);
        rill__vec_push(&g->collections, c);
    }
    rill__vec_push(&c->members, n);
}

void rill_graph_clear_collection(rill_graph *g, const char *key)
{
    collection *c = find_collection(g, key);
    if (c) c->members.n = 0;
}

int rill_graph_get_collection(const rill_graph *g, const char *key, rill_node **out, int cap)
{
    collection *c = find_collection(g, key);
    if (!c) return 0;
    for (int i = 0; i < c->members.n && i < cap; i++) out[i] = c->members.items[i];
    return c->members.n;
}

const char *rill_node_name(const rill_node *n)
{
    return n->name;
}

const char *rill_node_op_type(const rill_node *n)
{
    return n->op->name;
}

const char *rill_node_requested_device(const rill_node *n)
{
    return n->requested_device;
}

rill_node *rill_node_colocation(const rill_node *n)
{
    return n->colocate_with;
}

void rill_node_colocate_with(rill_node *n, rill_node *other)
{
    if (!n || !other) return;
    if (n->graph != other->graph) {
        rill__graph_fail(n->graph, RILL_INVALID_ARGUMENT,
                         "Cannot colocate '%s' with '%s': different graphs", n->name, other->name);
        return;
    }
    n->colocate_with = other->colocate_with ? other->colocate_with : other;
}

int rill_node_num_inputs(const rill_node *n)
{
    return n->ninputs;
}

rill_output rill_node_input(const rill_node *n, int i)
{
    return i >= 0 && i < n->ninputs ? n->inputs[i] : (rill_output){NULL, 0};
}

int rill_node_num_control_inputs(const rill_node *n)
{
    return n->ncontrol;
}

rill_node *rill_node_control_input(const rill_node *n, int i)
{
    return i >= 0 && i < n->ncontrol ? n->control_inputs[i] : NULL;
}

int rill_node_num_outputs(const rill_node *n)
{
    return n->noutputs;
}

rill_dtype rill_node_output_dtype(const rill_node *n, int i)
{
    return i >= 0 && i < n->noutputs ? n->out_dtypes[i] : RILL_DT_INVALID;
}

rill_shape rill_node_output_shape(const rill_node *n, int i)
{
    return i >= 0 && i < n->noutputs ? n->out_shapes[i] : rill_shape_unknown();
}

rill_graph *rill_node_graph(const rill_node *n)
{
    return n->graph;
}

void rill_node_add_control_input(rill_node *n, rill_node *dep)
{
    if (!n || !dep) return;
    if (n->graph != dep->graph) {
        rill__graph_fail(n->graph, RILL_INVALID_ARGUMENT,
                         "Cannot add control input '%s' to '%s': different graphs", dep->name,
                         n->name);
        return;
    }
    add_control(n, dep);
}

rill_output rill_node_output(rill_node *n, int i)
{
    return (rill_output){n, n ? i : 0};
}

rill_dtype rill_output_dtype(rill_output o)
{
    return o.node ? rill_node_output_dtype(o.node, o.index) : RILL_DT_INVALID;
}

rill_shape rill_output_shape(rill_output o)
{
    return o.node ? rill_node_output_shape(o.node, o.index) : rill_shape_unknown();
}

rill_dtype rill__in_dtype(const rill_node *n, int i)
{
    return rill_output_dtype(n->inputs[i]);
}

rill_shape rill__in_shape(const rill_node *n, int i)
{
    return rill_output_shape(n->inputs[i]);
}

const char *rill__node_desc(const rill_node *n, char *buf, size_t len)
{
    snprintf(buf, len, "'%s' (op: '%s')", n->name, n->op->name);
    return buf;
}

bool rill__is_variable(rill_output o)
{
    return o.node && strcmp(o.node->op->name, "VariableV2") == 0 && o.index == 0;
}

void rill__consumers_build(const rill_graph *g, rill__consumers *c)
{
    int nn = g->nodes.n;
    c->start = rill__calloc((size_t)nn + 2, sizeof *c->start);
    RILL_CHECK_ALLOC(c->start);
    int total = 0;
    for (int i = 0; i < nn; i++) {
        rill_node *n = g->nodes.items[i];
        for (int k = 0; k < n->ninputs; k++) c->start[n->inputs[k].node->id + 1]++;
        total += n->ninputs;
    }
    for (int i = 0; i < nn; i++) c->start[i + 1] += c->start[i];
    c->node = rill__malloc((size_t)(total ? total : 1) * sizeof *c->node);
    c->out_index = rill__malloc((size_t)(total ? total : 1) * sizeof *c->out_index);
    c->in_index = rill__malloc((size_t)(total ? total : 1) * sizeof *c->in_index);
    int *fill = rill__calloc((size_t)nn + 1, sizeof *fill);
    RILL_CHECK_ALLOC(c->node);
    RILL_CHECK_ALLOC(c->out_index);
    RILL_CHECK_ALLOC(c->in_index);
    RILL_CHECK_ALLOC(fill);
    for (int i = 0; i < nn; i++) {
        rill_node *n = g->nodes.items[i];
        for (int k = 0; k < n->ninputs; k++) {
            int p = n->inputs[k].node->id;
            int at = c->start[p] + fill[p]++;
            c->node[at] = n;
            c->out_index[at] = n->inputs[k].index;
            c->in_index[at] = k;
        }
    }
    rill__free(fill);
}

void rill__consumers_free(rill__consumers *c)
{
    rill__free(c->start);
    rill__free(c->node);
    rill__free(c->out_index);
    rill__free(c->in_index);
}
