/* op_builder.c - any op by its type name (rill_op_builder_*, TF's TF_NewOperation): what the
 * Python front end builds graphs with.
 *
 * The builder collects inputs and attributes, then makes the node through rill__node_create,
 * as every typed builder does, so scopes, devices, control dependencies, shape inference and
 * TF's error texts are the same. Two things the typed builders never need:
 *   - attribute names come from the caller, but a node keeps its attrs' name pointers (they are
 *     static strings in C builders): names are interned here, once per distinct name, for the
 *     life of the process (a few dozen in all: TF's attr names);
 *   - some attributes are read by the ops without a kind check (padding as a string, strides as
 *     ints: rill__attr_kind_ok); one of those set with another kind is refused with an error,
 *     never handed to a shape function. Every other attribute is read through the typed getters
 *     (rill__attr_int and friends), which ignore a wrong kind as absent. */
#include "graph_internal.h"

#include <pthread.h>
#include <string.h>

static const char *const KIND_NAMES[] = {
    [RILL__ATTR_INT] = "int",     [RILL__ATTR_FLOAT] = "float",  [RILL__ATTR_BOOL] = "bool",
    [RILL__ATTR_TYPE] = "type",   [RILL__ATTR_SHAPE] = "shape",  [RILL__ATTR_TENSOR] = "tensor",
    [RILL__ATTR_STRING] = "string", [RILL__ATTR_INTS] = "list(int)",
};

/* Interned attribute names: a list that only grows, under a lock. */
typedef struct interned {
    struct interned *next;
    char name[];
} interned;

static pthread_mutex_t intern_mu = PTHREAD_MUTEX_INITIALIZER;
static interned *names;

static int nnames;

const char *rill__attr_intern(const char *s, bool bounded)
{
    pthread_mutex_lock(&intern_mu);
    interned *p = names;
    while (p && strcmp(p->name, s) != 0) p = p->next;
    if (!p && bounded && nnames >= RILL__MAX_INTERNED_ATTRS) {
        pthread_mutex_unlock(&intern_mu);
        return NULL;
    }
    if (!p) {
        nnames++;
        size_t n = strlen(s) + 1;
        p = rill__malloc(sizeof *p + n);
        RILL_CHECK_ALLOC(p);
        memcpy(p->name, s, n);
        p->next = names;
        names = p;
    }
    pthread_mutex_unlock(&intern_mu);
    return p->name;
}

struct rill_op_builder {
    rill_graph *g;
    char *op, *name;
    rill__vec inputs; /* rill_output * */
    rill__attr *attrs;
    int nattrs, cap;
    char err[256]; /* the first misuse, reported at finish */
};

rill_op_builder *rill_op_builder_new(rill_graph *g, const char *op_type, const char *name)
{
    rill_op_builder *b = rill__calloc(1, sizeof *b);
    RILL_CHECK_ALLOC(b);
    b->g = g;
    b->op = rill__strdup(op_type ? op_type : "");
    b->name = name ? rill__strdup(name) : NULL;
    return b;
}

void rill_op_builder_add_input(rill_op_builder *b, rill_output in)
{
    rill_output *o = rill__malloc(sizeof *o);
    RILL_CHECK_ALLOC(o);
    *o = in;
    rill__vec_push(&b->inputs, o);
}

/* The slot for attr `name` (replacing an earlier value of the same name), or NULL when the
 * kind is wrong for a known attribute (the error kept for finish). */
static rill__attr *slot(rill_op_builder *b, const char *name, rill__attr_kind kind)
{
    rill__attr_kind want;
    if (!rill__attr_kind_ok(name, kind, &want)) {
        if (!b->err[0])
            snprintf(b->err, sizeof b->err,
                     "Attr '%s' of op '%s' (node '%s') has value of type '%s' when '%s' expected",
                     name, b->op, b->name ? b->name : b->op, KIND_NAMES[kind], KIND_NAMES[want]);
        return NULL;
    }
    const char *nm = rill__attr_intern(name, false);
    for (int i = 0; i < b->nattrs; i++)
        if (b->attrs[i].name == nm) {
            rill__attr *a = &b->attrs[i];
            if (a->kind == RILL__ATTR_STRING) rill__free((char *)a->v.s);
            if (a->kind == RILL__ATTR_INTS) rill__free((int64_t *)a->v.ints.v);
            if (a->kind == RILL__ATTR_TENSOR) rill_tensor_free(a->v.tensor);
            memset(a, 0, sizeof *a);
            a->name = nm, a->kind = kind;
            return a;
        }
    if (b->nattrs == b->cap) {
        int cap = b->cap ? 2 * b->cap : 8;
        rill__attr *na = rill__realloc(b->attrs, (size_t)cap * sizeof *na);
        RILL_CHECK_ALLOC(na);
        b->attrs = na, b->cap = cap;
    }
    rill__attr *a = &b->attrs[b->nattrs++];
    memset(a, 0, sizeof *a);
    a->name = nm, a->kind = kind;
    return a;
}

void rill_op_builder_set_int(rill_op_builder *b, const char *attr, int64_t v)
{
    rill__attr *a = slot(b, attr, RILL__ATTR_INT);
    if (a) a->v.i = v;
}

void rill_op_builder_set_float(rill_op_builder *b, const char *attr, double v)
{
    rill__attr *a = slot(b, attr, RILL__ATTR_FLOAT);
    if (a) a->v.f = v;
}

void rill_op_builder_set_bool(rill_op_builder *b, const char *attr, bool v)
{
    rill__attr *a = slot(b, attr, RILL__ATTR_BOOL);
    if (a) a->v.b = v;
}

void rill_op_builder_set_type(rill_op_builder *b, const char *attr, rill_dtype v)
{
    rill__attr *a = slot(b, attr, RILL__ATTR_TYPE);
    if (a) a->v.type = v;
}

void rill_op_builder_set_string(rill_op_builder *b, const char *attr, const char *v)
{
    rill__attr *a = slot(b, attr, RILL__ATTR_STRING);
    if (a) a->v.s = rill__strdup(v ? v : "");
}

void rill_op_builder_set_ints(rill_op_builder *b, const char *attr, const int64_t *v, int n)
{
    rill__attr *a = slot(b, attr, RILL__ATTR_INTS);
    if (!a) return;
    int64_t *c = rill__malloc((size_t)(n > 0 ? n : 1) * sizeof *c);
    RILL_CHECK_ALLOC(c);
    if (n > 0) memcpy(c, v, (size_t)n * sizeof *c);
    a->v.ints.n = n > 0 ? n : 0;
    a->v.ints.v = c;
}

void rill_op_builder_set_shape(rill_op_builder *b, const char *attr, rill_shape v)
{
    rill__attr *a = slot(b, attr, RILL__ATTR_SHAPE);
    if (a) a->v.shape = v;
}

void rill_op_builder_set_tensor(rill_op_builder *b, const char *attr, const rill_tensor *v)
{
    if (!v) {
        if (!b->err[0])
            snprintf(b->err, sizeof b->err, "Attr '%s' of op '%s': no tensor given", attr, b->op);
        return;
    }
    rill__attr *a = slot(b, attr, RILL__ATTR_TENSOR);
    if (a) a->v.tensor = rill_tensor_ref((rill_tensor *)v);
}

static void builder_free(rill_op_builder *b)
{
    for (int i = 0; i < b->nattrs; i++) {
        rill__attr *a = &b->attrs[i];
        if (a->kind == RILL__ATTR_STRING) rill__free((char *)a->v.s);
        if (a->kind == RILL__ATTR_INTS) rill__free((int64_t *)a->v.ints.v);
        if (a->kind == RILL__ATTR_TENSOR) rill_tensor_free(a->v.tensor);
    }
    for (int i = 0; i < b->inputs.n; i++) rill__free(b->inputs.items[i]);
    rill__vec_free(&b->inputs);
    rill__free(b->attrs);
    rill__free(b->op);
    rill__free(b->name);
    rill__free(b);
}

rill_node *rill_op_builder_finish(rill_op_builder *b)
{
    if (!b) return NULL;
    rill_node *n = NULL;
    if (b->err[0]) {
        rill__graph_fail(b->g, RILL_INVALID_ARGUMENT, "%s", b->err);
    } else if (!rill__op_lookup(b->op)) {
        rill__graph_fail(b->g, RILL_NOT_FOUND,
                         "Op type not registered '%s' in binary running rill", b->op);
    } else {
        int ni = b->inputs.n;
        rill_output *ins = rill__malloc((size_t)(ni > 0 ? ni : 1) * sizeof *ins);
        RILL_CHECK_ALLOC(ins);
        for (int i = 0; i < ni; i++) ins[i] = *(rill_output *)b->inputs.items[i];
        n = rill__node_create(b->g, b->op, b->name, ins, ni, b->attrs, b->nattrs);
        rill__free(ins);
    }
    builder_free(b);
    return n;
}

bool rill_op_exists(const char *op_type)
{
    return op_type && rill__op_lookup(op_type) != NULL;
}
