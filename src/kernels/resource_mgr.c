/* resource_mgr.c - the resource manager (TF's ResourceMgr, which sits beside OpKernel):
 * variables by name, and the other resources kernels keep (queues, accumulators) by kind and
 * name. A local session owns one; a server owns one for its whole life, shared by every session
 * on it. Kernels reach it through their context (rill__kctx.rm). */
#include "kernel.h"

typedef struct resource {
    void *obj;
    void (*free_fn)(void *);
} resource;

struct rill__resource_mgr {
    pthread_mutex_t mu;
    rill__strmap vars;
    rill__vec all;
    rill__strmap others; /* "<kind>\n<name>" -> resource */
    rill__vec all_others;
};

void *rill__resource_lookup(rill__resource_mgr *rm, const char *kind, const char *name,
                            void *(*create)(void *arg), void *arg, void (*free_fn)(void *))
{
    /* A key on the stack: kernels look their resources up every step. */
    char buf[256], *key = buf;
    if ((size_t)snprintf(buf, sizeof buf, "%s\n%s", kind, name) >= sizeof buf)
        key = rill__asprintf("%s\n%s", kind, name);
    pthread_mutex_lock(&rm->mu);
    resource *r = rill__strmap_get(&rm->others, key);
    if (!r) {
        void *obj = create(arg);
        if (obj) {
            r = rill__calloc(1, sizeof *r);
            RILL_CHECK_ALLOC(r);
            r->obj = obj;
            r->free_fn = free_fn;
            rill__strmap_put(&rm->others, key, r);
            rill__vec_push(&rm->all_others, r);
        }
    }
    pthread_mutex_unlock(&rm->mu);
    if (key != buf) rill__free(key);
    return r ? r->obj : NULL;
}

rill__resource_mgr *rill__resource_mgr_new(void)
{
    rill__resource_mgr *rm = rill__calloc(1, sizeof *rm);
    RILL_CHECK_ALLOC(rm);
    pthread_mutex_init(&rm->mu, NULL);
    return rm;
}

void rill__resource_mgr_free(rill__resource_mgr *rm)
{
    if (!rm) return;
    for (int i = 0; i < rm->all.n; i++) {
        rill__var *v = rm->all.items[i];
        rill_tensor_free(v->value);
        rill__free(v->name);
        pthread_mutex_destroy(&v->mu);
        rill__free(v);
    }
    rill__vec_free(&rm->all);
    rill__strmap_free(&rm->vars);
    for (int i = 0; i < rm->all_others.n; i++) {
        resource *r = rm->all_others.items[i];
        if (r->free_fn) r->free_fn(r->obj);
        rill__free(r);
    }
    rill__vec_free(&rm->all_others);
    rill__strmap_free(&rm->others);
    pthread_mutex_destroy(&rm->mu);
    rill__free(rm);
}

rill__var *rill__resource_mgr_var(rill__resource_mgr *rm, const char *name, rill_dtype t,
                                  const rill_shape *shape, rill_status *s)
{
    pthread_mutex_lock(&rm->mu);
    rill__var *v = rill__strmap_get(&rm->vars, name);
    if (v) {
        pthread_mutex_unlock(&rm->mu);
        if (v->dtype != t || !rill_shape_equal(&v->shape, shape)) {
            char a[64], b[64];
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Variable '%s' exists with dtype %s and shape %s; requested dtype %s "
                            "and shape %s",
                            name, rill_dtype_name(v->dtype), rill_shape_str(&v->shape, a, sizeof a),
                            rill_dtype_name(t), rill_shape_str(shape, b, sizeof b));
            return NULL;
        }
        return v;
    }
    v = rill__calloc(1, sizeof *v);
    RILL_CHECK_ALLOC(v);
    pthread_mutex_init(&v->mu, NULL);
    v->name = rill__strdup(name);
    v->dtype = t;
    v->shape = *shape;
    rill__strmap_put(&rm->vars, name, v);
    rill__vec_push(&rm->all, v);
    pthread_mutex_unlock(&rm->mu);
    return v;
}
