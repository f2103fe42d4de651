/* resource_mgr.c - the resource manager (TF's ResourceMgr, which sits beside OpKernel):
 * variables by name, and the other resources kernels keep (queues, accumulators) by kind and
 * name. A local session owns one; a server owns one for its whole life, shared by every session
 * on it. Kernels reach it through their context (rill__kctx.rm).
 *
 * It also holds what the kernels of a server's task know of their cluster (its tasks' names,
 * the stall report interval) and the registry of the waits its blocking kernels are in, which
 * the server reads when a master asks what its step waits for. Locks: mu (the maps) and
 * cluster_mu are leaves; waits_mu is held while a wait's describe runs, which may take a
 * resource's own lock and then cluster_mu, never mu (rill__resource_each lets go of mu first). */
#include "kernel.h"

#include <string.h>

typedef struct resource {
    void *obj;
    void (*free_fn)(void *);
    char *kind;
} resource;

struct rill__resource_mgr {
    pthread_mutex_t mu;
    rill__strmap vars;
    rill__vec all;
    rill__strmap others; /* "<kind>\n<name>" -> resource */
    rill__vec all_others;
    pthread_mutex_t cluster_mu;
    char **tasks; /* the cluster's tasks, "/job:J/task:T" */
    int ntasks;
    rill__vec finished; /* the training tasks that reported they finished (char *) */
    double stall_report_s;
    pthread_mutex_t waits_mu;
    rill__wait *waits;
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
            r->kind = rill__strdup(kind);
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
    pthread_mutex_init(&rm->cluster_mu, NULL);
    pthread_mutex_init(&rm->waits_mu, NULL);
    rm->stall_report_s = 5;
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
        rill__free(r->kind);
        rill__free(r);
    }
    rill__vec_free(&rm->all_others);
    rill__strmap_free(&rm->others);
    for (int i = 0; i < rm->ntasks; i++) rill__free(rm->tasks[i]);
    rill__free(rm->tasks);
    pthread_mutex_destroy(&rm->mu);
    for (int i = 0; i < rm->finished.n; i++) rill__free(rm->finished.items[i]);
    rill__vec_free(&rm->finished);
    pthread_mutex_destroy(&rm->cluster_mu);
    pthread_mutex_destroy(&rm->waits_mu);
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

void rill__resource_each(rill__resource_mgr *rm, const char *kind, void (*fn)(void *arg, void *obj),
                         void *arg)
{
    rill__vec found = {0};
    pthread_mutex_lock(&rm->mu);
    for (int i = 0; i < rm->all_others.n; i++) {
        resource *r = rm->all_others.items[i];
        if (strcmp(r->kind, kind) == 0) rill__vec_push(&found, r->obj);
    }
    pthread_mutex_unlock(&rm->mu);
    for (int i = 0; i < found.n; i++) fn(arg, found.items[i]);
    rill__vec_free(&found);
}

/* --- the cluster --- */

void rill__resource_mgr_set_cluster(rill__resource_mgr *rm, const char *const *tasks, int n,
                                    double stall_report_s)
{
    pthread_mutex_lock(&rm->cluster_mu);
    for (int i = 0; i < rm->ntasks; i++) rill__free(rm->tasks[i]);
    rill__free(rm->tasks);
    rm->tasks = rill__calloc((size_t)n + 1, sizeof *rm->tasks);
    RILL_CHECK_ALLOC(rm->tasks);
    for (int i = 0; i < n; i++) rm->tasks[i] = rill__strdup(tasks[i]);
    rm->ntasks = n;
    rm->stall_report_s = stall_report_s == 0 ? 5 : stall_report_s;
    pthread_mutex_unlock(&rm->cluster_mu);
}

void rill__resource_mgr_each_task(rill__resource_mgr *rm, void (*fn)(void *arg, const char *task),
                                  void *arg)
{
    /* fn runs outside cluster_mu, on a copy: it may ask rill__resource_mgr_is_finished */
    pthread_mutex_lock(&rm->cluster_mu);
    int n = rm->ntasks;
    char **copy = rill__calloc((size_t)n + 1, sizeof *copy);
    RILL_CHECK_ALLOC(copy);
    for (int i = 0; i < n; i++) copy[i] = rill__strdup(rm->tasks[i]);
    pthread_mutex_unlock(&rm->cluster_mu);
    for (int i = 0; i < n; i++) {
        fn(arg, copy[i]);
        rill__free(copy[i]);
    }
    rill__free(copy);
}

void rill__resource_mgr_task_finished(rill__resource_mgr *rm, const char *task)
{
    pthread_mutex_lock(&rm->cluster_mu);
    bool known = false;
    for (int i = 0; i < rm->finished.n && !known; i++)
        known = strcmp(rm->finished.items[i], task) == 0;
    if (!known) rill__vec_push(&rm->finished, rill__strdup(task));
    pthread_mutex_unlock(&rm->cluster_mu);
}

bool rill__resource_mgr_is_finished(rill__resource_mgr *rm, const char *task)
{
    pthread_mutex_lock(&rm->cluster_mu);
    bool found = false;
    for (int i = 0; i < rm->finished.n && !found; i++)
        found = strcmp(rm->finished.items[i], task) == 0;
    pthread_mutex_unlock(&rm->cluster_mu);
    return found;
}

double rill__resource_mgr_stall_report_s(rill__resource_mgr *rm)
{
    pthread_mutex_lock(&rm->cluster_mu);
    double v = rm->stall_report_s;
    pthread_mutex_unlock(&rm->cluster_mu);
    return v;
}

/* --- the waits --- */

void rill__resource_mgr_wait_begin(rill__resource_mgr *rm, rill__wait *w)
{
    pthread_mutex_lock(&rm->waits_mu);
    w->prev = NULL;
    w->next = rm->waits;
    if (rm->waits) rm->waits->prev = w;
    rm->waits = w;
    pthread_mutex_unlock(&rm->waits_mu);
}

void rill__resource_mgr_wait_end(rill__resource_mgr *rm, rill__wait *w)
{
    pthread_mutex_lock(&rm->waits_mu);
    if (w->prev)
        w->prev->next = w->next;
    else
        rm->waits = w->next;
    if (w->next) w->next->prev = w->prev;
    w->prev = w->next = NULL;
    pthread_mutex_unlock(&rm->waits_mu);
}

int rill__resource_mgr_waits(rill__resource_mgr *rm, uint64_t owner, uint64_t step,
                             rill__wait_report *out, int cap)
{
    int n = 0;
    pthread_mutex_lock(&rm->waits_mu);
    for (rill__wait *w = rm->waits; w; w = w->next) {
        if (w->owner != owner || (step && w->step != step)) continue;
        if (n < cap) {
            memset(&out[n], 0, sizeof out[n]);
            w->describe(w->arg, &out[n]);
        }
        n++;
    }
    pthread_mutex_unlock(&rm->waits_mu);
    return n;
}
