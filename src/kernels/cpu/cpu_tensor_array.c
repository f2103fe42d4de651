/* cpu_tensor_array.c - the kernels of TF's TensorArray ops (graph/ops_tensor_array.c).
 *
 * TensorArrayV3 makes a new array each time it runs (an array lives for one step, as in TF) and
 * outputs its handle: an int64 scalar holding the array's id, whose memory is the array's own
 * (the array goes when the last reference to its handle does). The other ops find the array by
 * id in a process-wide registry, so a handle that names no live array (a forged or stale value)
 * is an error, never a wild pointer. Elements are tensors referenced, not copied, when written
 * and read; gather, stack and concat copy into one new tensor. Errors are TF's texts.
 * TensorArrayGradV3 gives an array its gradient array (same size; writes to one index add up),
 * which the forward array holds. */
#include "cpu_kernels.h"

#include <string.h>

typedef struct tarray {
    int64_t id; /* first: the handle's memory */
    pthread_mutex_t mu;
    char name[128]; /* tensor_array_name, else the node's name (messages) */
    rill_dtype dtype;
    rill_shape element_shape; /* known so far (from the attribute, then from the first write) */
    bool dynamic_size, clear_after_read, identical_shapes;
    int64_t size, cap;
    rill_tensor **elems; /* NULL: not written */
    unsigned char *cleared;
    int refs;            /* the handle's, and each op's while it runs */
    struct tarray *next; /* the registry */
    bool aggregate;      /* a gradient array: a second write to an index adds to it */
    struct tarray *grad; /* this array's gradient array (TensorArrayGradV3), held */
    char grad_source[64];
} tarray;

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static tarray *registry;
static int64_t next_id = 1;

static void ta_unref(tarray *a)
{
    pthread_mutex_lock(&registry_mu);
    bool last = --a->refs == 0;
    if (last)
        for (tarray **p = &registry; *p; p = &(*p)->next)
            if (*p == a) {
                *p = a->next;
                break;
            }
    pthread_mutex_unlock(&registry_mu);
    if (!last) return;
    if (a->grad) ta_unref(a->grad);
    for (int64_t i = 0; i < a->size; i++) rill_tensor_free(a->elems[i]);
    rill__free(a->elems);
    rill__free(a->cleared);
    pthread_mutex_destroy(&a->mu);
    rill__free(a);
}

static void release_handle(void *p)
{
    ta_unref(p);
}

static tarray *lookup_any(rill__kctx *ctx);

/* The array input 0 names (a reference the caller drops with ta_unref), or NULL (ctx failed);
 * an op that reads (its dtype attribute) must read the array's dtype. */
static tarray *lookup(rill__kctx *ctx)
{
    tarray *a = lookup_any(ctx);
    rill_dtype want = rill__attr_type(ctx->node, "dtype", RILL_DT_INVALID);
    if (a && want != RILL_DT_INVALID && want != a->dtype &&
        strcmp(ctx->node->op->name, "TensorArrayV3") != 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "TensorArray dtype is %s but Op requested dtype %s.",
                        rill_dtype_name(a->dtype), rill_dtype_name(want));
        ta_unref(a);
        return NULL;
    }
    return a;
}

static tarray *lookup_any(rill__kctx *ctx)
{
    int64_t id = *(const int64_t *)rill_tensor_data(ctx->inputs[0]);
    pthread_mutex_lock(&registry_mu);
    tarray *a = registry;
    while (a && a->id != id) a = a->next;
    if (a) a->refs++;
    pthread_mutex_unlock(&registry_mu);
    if (!a)
        rill__kctx_fail(ctx, RILL_NOT_FOUND,
                        "Resource does not exist: TensorArray handle %lld names no TensorArray "
                        "of this step",
                        (long long)id);
    return a;
}

static bool grow(tarray *a, int64_t n)
{
    if (n <= a->cap) {
        if (n > a->size) a->size = n;
        return true;
    }
    int64_t cap = a->cap ? a->cap : 8;
    while (cap < n) cap *= 2;
    rill_tensor **e = rill__realloc(a->elems, (size_t)cap * sizeof *e);
    unsigned char *c = rill__realloc(a->cleared, (size_t)cap);
    RILL_CHECK_ALLOC(e);
    RILL_CHECK_ALLOC(c);
    memset(e + a->cap, 0, (size_t)(cap - a->cap) * sizeof *e);
    memset(c + a->cap, 0, (size_t)(cap - a->cap));
    a->elems = e;
    a->cleared = c;
    a->cap = cap;
    a->size = n;
    return true;
}

static void ta_new(rill__kctx *ctx)
{
    int32_t size = *(const int32_t *)rill_tensor_data(ctx->inputs[0]);
    const rill_node *n = ctx->node;
    if (size < 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Size should be >= 0.");
        return;
    }
    rill_dtype t = rill__attr_type(n, "dtype", RILL_DT_INVALID);
    if (t == RILL_STRING || t == RILL_DT_INVALID) {
        rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "TensorArray of %s is not supported",
                        rill_dtype_name(t));
        return;
    }
    tarray *a = rill__calloc(1, sizeof *a);
    RILL_CHECK_ALLOC(a);
    pthread_mutex_init(&a->mu, NULL);
    a->dtype = t;
    const rill__attr *es = rill__node_attr(n, "element_shape");
    a->element_shape = es && es->kind == RILL__ATTR_SHAPE ? es->v.shape : rill_shape_unknown();
    a->dynamic_size = rill__attr_bool(n, "dynamic_size", false);
    a->clear_after_read = rill__attr_bool(n, "clear_after_read", true);
    a->identical_shapes = rill__attr_bool(n, "identical_element_shapes", false);
    a->refs = 1;
    const rill__attr *tn = rill__node_attr(n, "tensor_array_name");
    snprintf(a->name, sizeof a->name, "%s",
             tn && tn->kind == RILL__ATTR_STRING && tn->v.s[0] ? tn->v.s : n->name);
    grow(a, size);
    a->size = size;
    pthread_mutex_lock(&registry_mu);
    a->id = next_id++;
    a->next = registry;
    registry = a;
    pthread_mutex_unlock(&registry_mu);
    rill_tensor *h = rill_tensor_new_borrowed(RILL_INT64, NULL, 0, &a->id, release_handle, a);
    rill__kctx_set_output(ctx, 0, h);
    rill_tensor *flow = rill__kctx_alloc_output(ctx, 1, RILL_FLOAT, &(rill_shape){.rank = 0});
    if (flow) *(float *)rill_tensor_data(flow) = 0;
}

static void set_flow(rill__kctx *ctx, int i)
{
    rill__kctx_set_output(ctx, i, rill_tensor_ref(ctx->inputs[ctx->node->ninputs - 1]));
}

/* Shape compatibility with the array's known element shape (which a first write fixes). */
static bool shape_fits(rill__kctx *ctx, tarray *a, const rill_shape *s, int64_t index)
{
    const rill_shape *e = &a->element_shape;
    bool ok = e->rank < 0 || e->rank == s->rank;
    for (int d = 0; ok && e->rank >= 0 && d < e->rank; d++)
        ok = e->dims[d] < 0 || e->dims[d] == s->dims[d];
    if (!ok) {
        char x[96], y[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Could not write to TensorArray index %lld because the value shape is %s "
                        "which is incompatible with the TensorArray's inferred element shape: %s "
                        "(consider setting infer_shape=False).",
                        (long long)index, rill_shape_str(s, x, sizeof x), rill_shape_str(e, y, sizeof y));
        return false;
    }
    if (a->identical_shapes) a->element_shape = *s;
    return true;
}

/* Writes t at index (a->mu held). */
static bool write_one(rill__kctx *ctx, tarray *a, int64_t index, rill_tensor *t)
{
    if (t->dtype != a->dtype) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "TensorArray dtype is %s but Op is trying to write dtype %s",
                        rill_dtype_name(a->dtype), rill_dtype_name(t->dtype));
        return false;
    }
    if (index < 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Tried to write to index %lld but it is negative",
                        (long long)index);
        return false;
    }
    if (index >= a->size) {
        if (!a->dynamic_size) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Tried to write to index %lld but array is not resizeable and size "
                            "is: %lld",
                            (long long)index, (long long)a->size);
            return false;
        }
        grow(a, index + 1);
    }
    if (a->aggregate && a->elems[index]) {
        /* a gradient array sums what is written to one index */
        rill_tensor *old = a->elems[index];
        if (!rill_shape_equal(&old->shape, &t->shape) ||
            (t->dtype != RILL_FLOAT && t->dtype != RILL_DOUBLE)) {
            char x[96], y[96];
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Could not aggregate to TensorArray index %lld: shapes %s and %s (or "
                            "dtype %s) do not add up",
                            (long long)index, rill_shape_str(&old->shape, x, sizeof x),
                            rill_shape_str(&t->shape, y, sizeof y), rill_dtype_name(t->dtype));
            return false;
        }
        rill_tensor *sum = rill_tensor_new_shape(t->dtype, &t->shape);
        if (t->dtype == RILL_FLOAT) {
            const float *p = rill_tensor_data(old), *q = rill_tensor_data(t);
            float *o = rill_tensor_data(sum);
            for (int64_t i = 0; i < t->numel; i++) o[i] = p[i] + q[i];
        } else {
            const double *p = rill_tensor_data(old), *q = rill_tensor_data(t);
            double *o = rill_tensor_data(sum);
            for (int64_t i = 0; i < t->numel; i++) o[i] = p[i] + q[i];
        }
        rill_tensor_free(old);
        a->elems[index] = sum;
        return true;
    }
    if (a->elems[index] || a->cleared[index]) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Could not write to TensorArray index %lld because it has already been "
                        "written to.",
                        (long long)index);
        return false;
    }
    if (!shape_fits(ctx, a, &t->shape, index)) return false;
    a->elems[index] = rill_tensor_ref(t);
    return true;
}

/* The element at index for reading (a->mu held); NULL (ctx failed) when it cannot be read. */
static rill_tensor *read_one(rill__kctx *ctx, tarray *a, int64_t index)
{
    if (index < 0 || index >= a->size) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Tried to read from index %lld but array size is: %lld", (long long)index,
                        (long long)a->size);
        return NULL;
    }
    if (a->cleared[index]) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Could not read index %lld twice because it was cleared after a previous "
                        "read (perhaps try setting clear_after_read = false?)",
                        (long long)index);
        return NULL;
    }
    rill_tensor *t = a->elems[index];
    if (!t) {
        /* TF: zeros when the element shape is fully known, else this error */
        int64_t ne = rill_shape_num_elements(&a->element_shape);
        if (a->element_shape.rank >= 0 && ne >= 0) {
            bool known = true;
            for (int d = 0; d < a->element_shape.rank; d++) known = known && a->element_shape.dims[d] >= 0;
            if (known) {
                rill_tensor *z = rill_tensor_new_shape(a->dtype, &a->element_shape);
                memset(rill_tensor_data(z), 0, rill_tensor_nbytes(z));
                return z;
            }
        }
        char x[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "TensorArray %s: Could not read from TensorArray index %lld.  Furthermore, "
                        "the element shape is not fully defined: %s.  It is possible you are "
                        "working with a resizeable TensorArray and stop_gradients is not allowing "
                        "the gradients to be written.  If you set the full element_shape property "
                        "on the forward TensorArray, the proper all-zeros tensor will be returned "
                        "instead of incurring this error.",
                        a->name, (long long)index,
                        a->element_shape.rank < 0 ? "<unknown>"
                                                  : rill_shape_str(&a->element_shape, x, sizeof x));
        return NULL;
    }
    if (a->clear_after_read) {
        a->elems[index] = NULL;
        a->cleared[index] = 1;
        return t; /* the array's reference moves to the reader */
    }
    return rill_tensor_ref(t);
}

static void ta_write(rill__kctx *ctx)
{
    tarray *a = lookup(ctx);
    if (!a) return;
    int32_t index = *(const int32_t *)rill_tensor_data(ctx->inputs[1]);
    pthread_mutex_lock(&a->mu);
    bool ok = write_one(ctx, a, index, ctx->inputs[2]);
    pthread_mutex_unlock(&a->mu);
    if (ok) set_flow(ctx, 0);
    ta_unref(a);
}

static void ta_read(rill__kctx *ctx)
{
    tarray *a = lookup(ctx);
    if (!a) return;
    int32_t index = *(const int32_t *)rill_tensor_data(ctx->inputs[1]);
    pthread_mutex_lock(&a->mu);
    rill_tensor *t = read_one(ctx, a, index);
    pthread_mutex_unlock(&a->mu);
    if (t) rill__kctx_set_output(ctx, 0, t);
    ta_unref(a);
}

/* Copies elements into one tensor [n] + element shape (n elements at idx, or all when NULL). */
static void gather_into(rill__kctx *ctx, tarray *a, const int32_t *idx, int64_t n)
{
    rill_tensor **got = rill__calloc((size_t)(n ? n : 1), sizeof *got);
    RILL_CHECK_ALLOC(got);
    pthread_mutex_lock(&a->mu);
    for (int64_t i = 0; i < n; i++) {
        got[i] = read_one(ctx, a, idx ? idx[i] : i);
        if (!got[i]) break;
        if (i > 0 && !rill_shape_equal(&got[i]->shape, &got[0]->shape)) {
            char x[96], y[96];
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "TensorArray has inconsistent shapes.  Index 0 has shape: %s but "
                            "index %lld has shape: %s",
                            rill_shape_str(&got[0]->shape, x, sizeof x), (long long)i,
                            rill_shape_str(&got[i]->shape, y, sizeof y));
            break;
        }
    }
    rill_shape e = n > 0 && got[0] ? got[0]->shape : a->element_shape;
    pthread_mutex_unlock(&a->mu);
    if (rill__kctx_ok(ctx) && e.rank < 0) e = (rill_shape){.rank = 0};
    if (rill__kctx_ok(ctx) && e.rank + 1 > RILL_MAX_DIMS)
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "TensorArray elements have too many dims");
    if (rill__kctx_ok(ctx)) {
        for (int d = 0; d < e.rank; d++)
            if (e.dims[d] < 0) e.dims[d] = 0; /* no element, unknown dims: empty */
        rill_shape o = {.rank = e.rank + 1};
        o.dims[0] = n;
        memcpy(o.dims + 1, e.dims, (size_t)e.rank * sizeof *e.dims);
        rill_tensor *out = rill__kctx_alloc_output(ctx, 0, a->dtype, &o);
        if (out) {
            size_t each = rill_tensor_nbytes(out) / (size_t)(n ? n : 1);
            char *dst = rill_tensor_data(out);
            for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * each, rill_tensor_data(got[i]), each);
        }
    }
    for (int64_t i = 0; i < n; i++) rill_tensor_free(got[i]);
    rill__free(got);
}

static void ta_gather(rill__kctx *ctx)
{
    tarray *a = lookup(ctx);
    if (!a) return;
    const rill_tensor *ind = ctx->inputs[1];
    gather_into(ctx, a, rill_tensor_data(ind), ind->numel);
    ta_unref(a);
}

/* Element i of value along axis 0, rows [begin, begin + len), as a new tensor. */
static rill_tensor *rows(const rill_tensor *v, int64_t begin, int64_t len)
{
    rill_shape s = v->shape;
    int64_t per = s.dims[0] ? v->numel / s.dims[0] : 0;
    s.dims[0] = len;
    rill_tensor *t = rill_tensor_new_shape(v->dtype, &s);
    size_t es = rill_dtype_size(v->dtype);
    memcpy(rill_tensor_data(t), (const char *)rill_tensor_data(v) + (size_t)(begin * per) * es,
           (size_t)(len * per) * es);
    return t;
}

static void ta_scatter(rill__kctx *ctx)
{
    tarray *a = lookup(ctx);
    if (!a) return;
    const rill_tensor *ind = ctx->inputs[1], *v = ctx->inputs[2];
    if (v->shape.rank < 1 || v->shape.dims[0] != ind->numel) {
        char x[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Expected len(indices) == values.shape[0], but saw: %lld vs. %s",
                        (long long)ind->numel, rill_shape_str(&v->shape, x, sizeof x));
    }
    const int32_t *idx = rill_tensor_data(ind);
    pthread_mutex_lock(&a->mu);
    for (int64_t i = 0; rill__kctx_ok(ctx) && i < ind->numel; i++) {
        rill_tensor *row = rows(v, i, 1);
        rill_shape es = row->shape;
        es.rank--;
        memmove(es.dims, es.dims + 1, (size_t)es.rank * sizeof *es.dims);
        rill__tensor_set_shape(row, &es);
        write_one(ctx, a, idx[i], row);
        rill_tensor_free(row);
    }
    pthread_mutex_unlock(&a->mu);
    if (rill__kctx_ok(ctx)) set_flow(ctx, 0);
    ta_unref(a);
}

static void ta_concat(rill__kctx *ctx)
{
    tarray *a = lookup(ctx);
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    int64_t n = a->size, total = 0;
    rill_tensor **got = rill__calloc((size_t)(n ? n : 1), sizeof *got);
    RILL_CHECK_ALLOC(got);
    for (int64_t i = 0; i < n && rill__kctx_ok(ctx); i++) {
        got[i] = read_one(ctx, a, i);
        if (!got[i]) break;
        if (got[i]->shape.rank < 1) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Concat saw a scalar shape at index %lld but requires at least vectors",
                            (long long)i);
            break;
        }
        bool same = got[i]->shape.rank == got[0]->shape.rank;
        for (int d = 1; same && d < got[i]->shape.rank; d++)
            same = got[i]->shape.dims[d] == got[0]->shape.dims[d];
        if (!same) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "TensorArray has inconsistent shapes: index %lld differs from index "
                            "0 beyond dimension 0",
                            (long long)i);
            break;
        }
        total += got[i]->shape.dims[0];
    }
    pthread_mutex_unlock(&a->mu);
    if (rill__kctx_ok(ctx)) {
        rill_shape o = n ? got[0]->shape : (rill_shape){.rank = 1};
        o.dims[0] = total;
        rill_tensor *out = rill__kctx_alloc_output(ctx, 0, a->dtype, &o);
        rill_tensor *len = rill__kctx_alloc_output(ctx, 1, RILL_INT64, &(rill_shape){1, {n}});
        if (out && len) {
            char *dst = rill_tensor_data(out);
            for (int64_t i = 0; i < n; i++) {
                size_t b = rill_tensor_nbytes(got[i]);
                memcpy(dst, rill_tensor_data(got[i]), b);
                dst += b;
                ((int64_t *)rill_tensor_data(len))[i] = got[i]->shape.dims[0];
            }
        }
    }
    for (int64_t i = 0; i < n; i++) rill_tensor_free(got[i]);
    rill__free(got);
    ta_unref(a);
}

static void ta_split(rill__kctx *ctx)
{
    tarray *a = lookup(ctx);
    if (!a) return;
    const rill_tensor *v = ctx->inputs[1], *lens = ctx->inputs[2];
    const int64_t *l = rill_tensor_data(lens);
    int64_t sum = 0;
    for (int64_t i = 0; i < lens->numel; i++) sum += l[i] < 0 ? 0 : l[i];
    if (v->shape.rank < 1 || sum != v->shape.dims[0]) {
        char x[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Expected sum of lengths to be equal to values.shape[0], but sum of "
                        "lengths is %lld and value's shape is: %s",
                        (long long)sum, rill_shape_str(&v->shape, x, sizeof x));
    }
    pthread_mutex_lock(&a->mu);
    for (int64_t i = 0, at = 0; rill__kctx_ok(ctx) && i < lens->numel; at += l[i], i++) {
        if (l[i] < 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "lengths[%lld] is negative", (long long)i);
            break;
        }
        rill_tensor *row = rows(v, at, l[i]);
        write_one(ctx, a, i, row);
        rill_tensor_free(row);
    }
    pthread_mutex_unlock(&a->mu);
    if (rill__kctx_ok(ctx)) set_flow(ctx, 0);
    ta_unref(a);
}

static void ta_size(rill__kctx *ctx)
{
    tarray *a = lookup(ctx);
    if (!a) return;
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_INT32, &(rill_shape){.rank = 0});
    pthread_mutex_lock(&a->mu);
    if (out) *(int32_t *)rill_tensor_data(out) = (int32_t)a->size;
    pthread_mutex_unlock(&a->mu);
    ta_unref(a);
}

static void ta_close(rill__kctx *ctx)
{
    tarray *a = lookup(ctx);
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    for (int64_t i = 0; i < a->size; i++) {
        rill_tensor_free(a->elems[i]);
        a->elems[i] = NULL;
    }
    pthread_mutex_unlock(&a->mu);
    ta_unref(a);
}

/* The gradient array of the array input 0 names (made on first use, as large as the array is
 * then), for `source`. */
static void ta_grad(rill__kctx *ctx)
{
    tarray *a = lookup_any(ctx);
    if (!a) return;
    const rill__attr *sa = rill__node_attr(ctx->node, "source");
    const char *src = sa && sa->kind == RILL__ATTR_STRING ? sa->v.s : "";
    pthread_mutex_lock(&a->mu);
    tarray *gr = a->grad;
    if (gr && strcmp(a->grad_source, src) != 0) {
        pthread_mutex_unlock(&a->mu);
        rill__kctx_fail(ctx, RILL_UNIMPLEMENTED,
                        "TensorArray %s already has a gradient array for source '%s', not '%s'",
                        a->name, a->grad_source, src);
        ta_unref(a);
        return;
    }
    if (!gr) {
        gr = rill__calloc(1, sizeof *gr);
        RILL_CHECK_ALLOC(gr);
        pthread_mutex_init(&gr->mu, NULL);
        gr->dtype = a->dtype;
        gr->element_shape = a->element_shape;
        gr->dynamic_size = a->dynamic_size;
        gr->clear_after_read = true;
        gr->aggregate = true;
        gr->refs = 1; /* the forward array's */
        snprintf(gr->name, sizeof gr->name, "%.100s@%.20s", a->name, src);
        grow(gr, a->size);
        gr->size = a->size;
        pthread_mutex_lock(&registry_mu);
        gr->id = next_id++;
        gr->next = registry;
        registry = gr;
        pthread_mutex_unlock(&registry_mu);
        a->grad = gr;
        snprintf(a->grad_source, sizeof a->grad_source, "%s", src);
    }
    pthread_mutex_lock(&registry_mu);
    gr->refs++; /* the handle's */
    pthread_mutex_unlock(&registry_mu);
    pthread_mutex_unlock(&a->mu);
    rill__kctx_set_output(ctx, 0, rill_tensor_new_borrowed(RILL_INT64, NULL, 0, &gr->id,
                                                           release_handle, gr));
    rill__kctx_set_output(ctx, 1, rill_tensor_ref(ctx->inputs[1]));
    ta_unref(a);
}

#define ANY RILL_DT_INVALID
const rill__kernel_def rill__cpu_kernels_tensor_array[] = {
    {.op = "TensorArrayGradV3", .device_type = "CPU", .dtype = ANY, .fn = ta_grad},
    {.op = "TensorArrayV3", .device_type = "CPU", .dtype = ANY, .fn = ta_new},
    {.op = "TensorArrayWriteV3", .device_type = "CPU", .dtype = ANY, .fn = ta_write},
    {.op = "TensorArrayReadV3", .device_type = "CPU", .dtype = ANY, .fn = ta_read},
    {.op = "TensorArrayGatherV3", .device_type = "CPU", .dtype = ANY, .fn = ta_gather},
    {.op = "TensorArrayScatterV3", .device_type = "CPU", .dtype = ANY, .fn = ta_scatter},
    {.op = "TensorArrayConcatV3", .device_type = "CPU", .dtype = ANY, .fn = ta_concat},
    {.op = "TensorArraySplitV3", .device_type = "CPU", .dtype = ANY, .fn = ta_split},
    {.op = "TensorArraySizeV3", .device_type = "CPU", .dtype = ANY, .fn = ta_size},
    {.op = "TensorArrayCloseV3", .device_type = "CPU", .dtype = ANY, .fn = ta_close},
    {0},
};
