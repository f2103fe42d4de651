/* cpu_dataset.c - tf.data in C: the dataset objects, their iterators, and the kernels of the
 * dataset and iterator ops (graph/ops_dataset.c).
 *
 * Design (also docs/ARCHITECTURE.md, "Input pipelines"):
 *   - A dataset is an immutable, reference-counted object (dset) made by a dataset kernel from
 *     its inputs: the input datasets and the op's arguments. The op's output, the dataset
 *     handle, is an int64 scalar tensor borrowing the dataset's `handle` field, whose release
 *     drops the tensor's reference (TF's DT_VARIANT holding a DatasetBase). A kernel reading a
 *     handle finds the dataset in the registry of live datasets by that field's address, so a
 *     fed or forged int64 is refused, never dereferenced.
 *   - An iterator state (dit) walks one dataset once; datasets of datasets (Map, Batch, Repeat,
 *     ...) make their inputs' iterators. next() gives the element's components (new references)
 *     or the end of sequence; an error goes to the caller's status.
 *   - The iterator ops keep an iterator resource (kind "iterator", named by the handle string)
 *     in the session's resource manager: MakeIterator (re)starts it over a dataset;
 *     OneShotIterator starts it on its first run only; IteratorGetNext takes the next element
 *     under the resource's lock, OUT_OF_RANGE "End of sequence" at the end.
 *   - Functions (MapDataset, FilterDataset): the body is a subgraph of the user's graph (its
 *     placeholders f_args, its outputs f_outputs). The kernel keeps, in its per-session state,
 *     one function object: a session on the user's graph sharing the outer session's resource
 *     manager (its variables), without threads of its own, whose plan for (args -> outputs) is
 *     made once and cached; each element is one run of it, under the step's deadline.
 *   - PrefetchDataset's iterator runs a producer thread filling a bounded buffer; GetNext waits
 *     for an element in 50 ms slices checking the step's deadline and the session's
 *     cancellation, and its error names the iterator. The producer stops and is joined when the
 *     iterator is dropped (re-initialised, or the resource manager freed).
 *   - Shuffle: buffer_size elements are held; each next picks one uniformly (xoshiro seeded from
 *     the node's seed pair, as random ops are) and refills its slot. With
 *     reshuffle_each_iteration each iterator of one dataset (each epoch under Repeat) gets the
 *     next seed of the dataset's sequence; a re-initialised iterator (a new dataset) starts the
 *     sequence again. The order is not TF's (TF uses Philox); the seeds' determinism is. */
#include "cpu_dataset.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ the objects --- */

static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static dset *live;
static int64_t live_ids;

void rill__ds_dset_unref(dset *d)
{
    if (!d || atomic_fetch_sub(&d->refs, 1) != 1) return;
    pthread_mutex_lock(&live_mu);
    if (d->prev)
        d->prev->next = d->next;
    else
        live = d->next;
    if (d->next) d->next->prev = d->prev;
    pthread_mutex_unlock(&live_mu);
    d->vt->free(d);
}

static void dset_release(void *p)
{
    rill__ds_dset_unref(p);
}

void rill__ds_dset_register(dset *d, const dset_vt *vt)
{
    atomic_init(&d->refs, 1);
    d->vt = vt;
    pthread_mutex_lock(&live_mu);
    d->handle = ++live_ids;
    d->next = live;
    if (live) live->prev = d;
    live = d;
    pthread_mutex_unlock(&live_mu);
}

rill_tensor *rill__ds_handle_tensor(dset *d)
{
    rill_tensor *t = rill_tensor_new_borrowed(RILL_INT64, NULL, 0, &d->handle, dset_release, d);
    RILL_CHECK_ALLOC(t);
    return t;
}

/* Output 0 of ctx becomes d's handle (the tensor takes the caller's reference). */
void rill__ds_set_handle(rill__kctx *ctx, dset *d)
{
    rill__kctx_set_output(ctx, 0, rill__ds_handle_tensor(d));
}

/* The dataset whose handle t is (by its buffer's address: a fed or forged int64 is none). */
dset *rill__ds_lookup(const rill_tensor *t)
{
    if (!t || t->dtype != RILL_INT64 || t->numel != 1) return NULL;
    const void *p = rill_tensor_data(t);
    dset *found = NULL;
    pthread_mutex_lock(&live_mu);
    for (dset *d = live; d; d = d->next)
        if ((const void *)&d->handle == p) {
            atomic_fetch_add(&d->refs, 1);
            found = d;
            break;
        }
    pthread_mutex_unlock(&live_mu);
    return found;
}

/* The dataset behind input i (a new reference), or NULL with ctx failed. */
dset *rill__ds_input_dset(rill__kctx *ctx, int i)
{
    dset *found = rill__ds_lookup(ctx->inputs[i]);
    if (!found)
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "input %d of %s is not a dataset (a dataset handle comes from a dataset "
                        "op of this process)",
                        i, ctx->node->op->name);
    return found;
}

int64_t rill__ds_in_i64(const rill__kctx *ctx, int i)
{
    return rill_tensor_get_int64(ctx->inputs[i], 0);
}

void rill__ds_free_elems(rill_tensor **e, int n)
{
    for (int i = 0; i < n; i++) {
        rill_tensor_free(e[i]);
        e[i] = NULL;
    }
}

void rill__ds_dctx_of(rill__kctx *ctx, dctx *c, rill_status *s, const char *iterator)
{
    *c = (dctx){s, ctx->deadline, ctx->timeout_ms, ctx->cancel, ctx->cancel_gen, iterator};
}

/* ------------------------------------------------------- tensors and slices ---- */

typedef struct comps_ds {
    dset base;
    int n;
    rill_tensor **t;
    bool slices; /* TensorSliceDataset (else TensorDataset: one element) */
    int64_t len;
} comps_ds;

typedef struct comps_it {
    dit base;
    comps_ds *d;
    int64_t i;
} comps_it;

static void comps_free(dset *b)
{
    comps_ds *d = (comps_ds *)b;
    rill__ds_free_elems(d->t, d->n);
    rill__free(d->t);
    rill__free(d);
}

/* Row i of t (rank >= 1): a view of its buffer, or a copy for strings. */
rill_tensor *rill__ds_slice_row(const rill_tensor *t, int64_t i)
{
    rill_shape s = rill_shape_make(t->shape.rank - 1, t->shape.dims + 1);
    int64_t per = rill_shape_num_elements(&s);
    if (t->dtype != RILL_STRING)
        return rill__tensor_view(t->buf, (size_t)(i * per) * rill_dtype_size(t->dtype), t->dtype,
                                 &s);
    rill_tensor *r = rill_tensor_new_shape(RILL_STRING, &s);
    RILL_CHECK_ALLOC(r);
    for (int64_t k = 0; k < per; k++) {
        size_t len;
        const char *str = rill_tensor_get_string(t, i * per + k, &len);
        rill_tensor_set_string(r, k, str, len);
    }
    return r;
}

static bool comps_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    (void)c;
    comps_it *it = (comps_it *)b;
    comps_ds *d = it->d;
    if (it->i >= d->len) {
        *end = true;
        return true;
    }
    for (int k = 0; k < d->n; k++)
        out[k] = d->slices ? rill__ds_slice_row(d->t[k], it->i) : rill_tensor_ref(d->t[k]);
    it->i++;
    *end = false;
    return true;
}

static void comps_it_free(dit *b)
{
    comps_it *it = (comps_it *)b;
    rill__ds_dset_unref(&it->d->base);
    rill__free(it);
}

static const dit_vt comps_it_vt = {comps_next, comps_it_free};

static dit *comps_make(dset *b, dctx *c)
{
    (void)c;
    comps_it *it = rill__calloc(1, sizeof *it);
    RILL_CHECK_ALLOC(it);
    it->base = (dit){&comps_it_vt, ((comps_ds *)b)->n};
    it->d = (comps_ds *)b;
    atomic_fetch_add(&b->refs, 1);
    return &it->base;
}

static int64_t comps_card(dset *b)
{
    return ((comps_ds *)b)->len;
}

static const dset_vt comps_vt = {comps_make, comps_free, comps_card};

static void comps_kernel(rill__kctx *ctx)
{
    bool slices = strcmp(ctx->node->op->name, "TensorSliceDataset") == 0;
    int n = ctx->node->ninputs;
    int64_t len = slices ? -1 : 1;
    for (int i = 0; slices && i < n; i++) {
        const rill_tensor *t = ctx->inputs[i];
        if (t->shape.rank < 1) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "component %d of TensorSliceDataset is a scalar: slices need rank "
                            ">= 1",
                            i);
            return;
        }
        if (len >= 0 && t->shape.dims[0] != len) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Dimensions %lld and %lld are not compatible: all components of "
                            "TensorSliceDataset must have the same size in dimension 0",
                            (long long)len, (long long)t->shape.dims[0]);
            return;
        }
        len = t->shape.dims[0];
    }
    comps_ds *d = rill__calloc(1, sizeof *d);
    RILL_CHECK_ALLOC(d);
    d->n = n;
    d->slices = slices;
    d->len = len;
    d->t = rill__calloc((size_t)n, sizeof *d->t);
    RILL_CHECK_ALLOC(d->t);
    for (int i = 0; i < n; i++) d->t[i] = rill_tensor_ref(ctx->inputs[i]);
    rill__ds_dset_register(&d->base, &comps_vt);
    rill__ds_set_handle(ctx, &d->base);
}

/* ------------------------------------------------------------------- range ---- */

typedef struct range_ds {
    dset base;
    int64_t start, stop, step;
} range_ds;

typedef struct range_it {
    dit base;
    int64_t cur, stop, step;
} range_it;

static bool range_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    (void)c;
    range_it *it = (range_it *)b;
    if (it->step > 0 ? it->cur >= it->stop : it->cur <= it->stop) {
        *end = true;
        return true;
    }
    out[0] = rill_tensor_scalar_int64(it->cur);
    RILL_CHECK_ALLOC(out[0]);
    it->cur += it->step;
    *end = false;
    return true;
}

void rill__ds_plain_it_free(dit *b)
{
    rill__free(b);
}

static const dit_vt range_it_vt = {range_next, rill__ds_plain_it_free};

static dit *range_make(dset *b, dctx *c)
{
    (void)c;
    range_ds *d = (range_ds *)b;
    range_it *it = rill__calloc(1, sizeof *it);
    RILL_CHECK_ALLOC(it);
    *it = (range_it){{&range_it_vt, 1}, d->start, d->stop, d->step};
    return &it->base;
}

void rill__ds_plain_ds_free(dset *b)
{
    rill__free(b);
}

static int64_t range_card(dset *b)
{
    range_ds *d = (range_ds *)b;
    /* as TF: the count of start + k * step before stop */
    if (d->step > 0) return d->stop > d->start ? (d->stop - d->start - 1) / d->step + 1 : 0;
    return d->start > d->stop ? (d->start - d->stop - 1) / -d->step + 1 : 0;
}

static const dset_vt range_vt = {range_make, rill__ds_plain_ds_free, range_card};

static void range_kernel(rill__kctx *ctx)
{
    int64_t step = rill__ds_in_i64(ctx, 2);
    if (step == 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "step must be a non-zero integer.");
        return;
    }
    range_ds *d = rill__calloc(1, sizeof *d);
    RILL_CHECK_ALLOC(d);
    d->start = rill__ds_in_i64(ctx, 0);
    d->stop = rill__ds_in_i64(ctx, 1);
    d->step = step;
    rill__ds_dset_register(&d->base, &range_vt);
    rill__ds_set_handle(ctx, &d->base);
}

/* ---------------------------------------------------- one input (and zip) ---- */

void rill__ds_over_free(dset *b)
{
    over_ds *d = (over_ds *)b;
    for (int i = 0; i < d->nin; i++) rill__ds_dset_unref(d->in[i]);
    rill__free(d->in);
    if (d->fn) rill__ds_fn_unref(d->fn);
    rill__ds_free_elems(d->cap, d->ncap);
    rill__free(d->cap);
    rill__free(d);
}

over_ds *rill__ds_over_new(rill__kctx *ctx, int nin)
{
    return rill__ds_over_new_sized(ctx, nin, 0);
}

over_ds *rill__ds_over_new_sized(rill__kctx *ctx, int nin, size_t size)
{
    over_ds *d = rill__calloc(1, size > sizeof *d ? size : sizeof *d);
    RILL_CHECK_ALLOC(d);
    d->in = rill__calloc((size_t)nin, sizeof *d->in);
    RILL_CHECK_ALLOC(d->in);
    for (int i = 0; i < nin; i++) {
        d->in[i] = rill__ds_input_dset(ctx, i);
        if (!d->in[i]) {
            d->nin = i;
            rill__ds_over_free(&d->base);
            return NULL;
        }
    }
    d->nin = nin;
    d->name = ctx->node->name;
    return d;
}

int64_t rill__ds_card(dset *d)
{
    return d->vt->card ? d->vt->card(d) : RILL_DS_UNKNOWN;
}

/* The input's (map, shuffle, prefetch, cache: one element per element). */
int64_t rill__ds_card_in0(dset *b)
{
    return rill__ds_card(((over_ds *)b)->in[0]);
}

dit *rill__ds_dset_make(dset *d, dctx *c)
{
    return d->vt->make(d, c);
}

void rill__ds_dit_free(dit *it)
{
    if (it) it->vt->free(it);
}

void rill__ds_over_it_free(dit *b)
{
    over_it *it = (over_it *)b;
    for (int i = 0; i < it->nin; i++) rill__ds_dit_free(it->in[i]);
    rill__free(it->in);
    if (it->buf) rill__ds_free_elems(it->buf, (int)(it->nbuf * it->base.ncomp));
    rill__free(it->buf);
    rill__ds_dset_unref(&it->d->base);
    rill__free(it);
}

over_it *rill__ds_over_it_new(over_ds *d, const dit_vt *vt, dctx *c, size_t size)
{
    over_it *it = rill__calloc(1, size > sizeof *it ? size : sizeof *it);
    RILL_CHECK_ALLOC(it);
    it->d = d;
    atomic_fetch_add(&d->base.refs, 1);
    it->in = rill__calloc((size_t)d->nin, sizeof *it->in);
    RILL_CHECK_ALLOC(it->in);
    it->base.vt = vt;
    int ncomp = 0;
    for (int i = 0; i < d->nin; i++) {
        it->in[i] = rill__ds_dset_make(d->in[i], c);
        if (!it->in[i]) {
            it->base.vt = vt;
            it->nin = i;
            rill__ds_over_it_free(&it->base);
            return NULL;
        }
        ncomp += it->in[i]->ncomp;
        it->nin = i + 1;
    }
    it->base.ncomp = ncomp;
    return it;
}

bool rill__ds_in_next(over_it *it, int i, dctx *c, rill_tensor **out, bool *end)
{
    return it->in[i]->vt->next(it->in[i], c, out, end);
}

/* zip */
static bool zip_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    over_it *it = (over_it *)b;
    int at = 0;
    for (int i = 0; i < it->nin; i++) {
        bool e = false;
        if (!rill__ds_in_next(it, i, c, out + at, &e)) {
            rill__ds_free_elems(out, at);
            return false;
        }
        if (e) {
            rill__ds_free_elems(out, at);
            *end = true;
            return true;
        }
        at += it->in[i]->ncomp;
    }
    *end = false;
    return true;
}

static const dit_vt zip_it_vt = {zip_next, rill__ds_over_it_free};

static dit *zip_make(dset *b, dctx *c)
{
    over_it *it = rill__ds_over_it_new((over_ds *)b, &zip_it_vt, c, 0);
    return it ? &it->base : NULL;
}

static int64_t zip_card(dset *b)
{
    over_ds *d = (over_ds *)b;
    int64_t r = RILL_DS_INFINITE;
    for (int i = 0; i < d->nin; i++) {
        int64_t n = rill__ds_card(d->in[i]);
        if (n == RILL_DS_UNKNOWN) return n;
        if (n != RILL_DS_INFINITE && (r == RILL_DS_INFINITE || n < r)) r = n;
    }
    return r;
}

static const dset_vt zip_vt = {zip_make, rill__ds_over_free, zip_card};

static void zip_kernel(rill__kctx *ctx)
{
    over_ds *d = rill__ds_over_new(ctx, ctx->node->ninputs);
    if (!d) return;
    rill__ds_dset_register(&d->base, &zip_vt);
    rill__ds_set_handle(ctx, &d->base);
}

/* take, skip */
static bool take_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    over_it *it = (over_it *)b;
    if (it->d->a >= 0 && it->count >= it->d->a) {
        *end = true;
        return true;
    }
    if (!rill__ds_in_next(it, 0, c, out, end)) return false;
    if (!*end) it->count++;
    return true;
}

static bool skip_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    over_it *it = (over_it *)b;
    while (it->d->a < 0 || it->count < it->d->a) {
        if (!rill__ds_in_next(it, 0, c, out, end)) return false;
        if (*end) return true;
        rill__ds_free_elems(out, b->ncomp);
        it->count++;
    }
    return rill__ds_in_next(it, 0, c, out, end);
}

static const dit_vt take_it_vt = {take_next, rill__ds_over_it_free};
static const dit_vt skip_it_vt = {skip_next, rill__ds_over_it_free};

static dit *take_make(dset *b, dctx *c)
{
    over_it *it = rill__ds_over_it_new((over_ds *)b, &take_it_vt, c, 0);
    return it ? &it->base : NULL;
}

static dit *skip_make(dset *b, dctx *c)
{
    over_it *it = rill__ds_over_it_new((over_ds *)b, &skip_it_vt, c, 0);
    return it ? &it->base : NULL;
}

static int64_t take_card(dset *b)
{
    over_ds *d = (over_ds *)b;
    int64_t n = rill__ds_card(d->in[0]);
    if (n == RILL_DS_UNKNOWN) return n;
    if (d->a < 0) return n;
    if (n == RILL_DS_INFINITE) return d->a;
    return n < d->a ? n : d->a;
}

static int64_t skip_card(dset *b)
{
    over_ds *d = (over_ds *)b;
    int64_t n = rill__ds_card(d->in[0]);
    if (n == RILL_DS_UNKNOWN || n == RILL_DS_INFINITE) return n;
    if (d->a < 0) return 0;
    return n > d->a ? n - d->a : 0;
}

static const dset_vt take_vt = {take_make, rill__ds_over_free, take_card};
static const dset_vt skip_vt = {skip_make, rill__ds_over_free, skip_card};

/* repeat: a new input iterator per epoch; an epoch that gives nothing ends it (as TF: an
 * endless repeat of an empty dataset is empty). */
static bool repeat_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    over_it *it = (over_it *)b;
    int64_t count = it->d->a;
    for (;;) {
        if (it->done || count == 0) {
            *end = true;
            return true;
        }
        if (!rill__ds_in_next(it, 0, c, out, end)) return false;
        if (!*end) {
            it->started = true;
            return true;
        }
        it->count++;
        if ((count > 0 && it->count >= count) || !it->started) {
            it->done = true;
            continue;
        }
        it->started = false;
        rill__ds_dit_free(it->in[0]);
        it->in[0] = rill__ds_dset_make(it->d->in[0], c);
        if (!it->in[0]) {
            it->nin = 0;
            it->done = true;
            return false;
        }
    }
}

static const dit_vt repeat_it_vt = {repeat_next, rill__ds_over_it_free};

static dit *repeat_make(dset *b, dctx *c)
{
    over_it *it = rill__ds_over_it_new((over_ds *)b, &repeat_it_vt, c, 0);
    return it ? &it->base : NULL;
}

static int64_t repeat_card(dset *b)
{
    over_ds *d = (over_ds *)b;
    int64_t n = rill__ds_card(d->in[0]);
    if (n == RILL_DS_UNKNOWN || n == RILL_DS_INFINITE) return n;
    if (d->a < 0) return n == 0 ? 0 : RILL_DS_INFINITE;
    return n * d->a;
}

static const dset_vt repeat_vt = {repeat_make, rill__ds_over_free, repeat_card};

static void count_kernel(rill__kctx *ctx)
{
    const char *op = ctx->node->op->name;
    over_ds *d = rill__ds_over_new(ctx, 1);
    if (!d) return;
    d->a = rill__ds_in_i64(ctx, 1);
    if (d->a < -1) d->a = -1;
    rill__ds_dset_register(&d->base, strcmp(op, "TakeDataset") == 0   ? &take_vt
                                     : strcmp(op, "SkipDataset") == 0 ? &skip_vt
                                                                      : &repeat_vt);
    rill__ds_set_handle(ctx, &d->base);
}

/* ------------------------------------------------------------------- batch ---- */

static bool batch_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    over_it *it = (over_it *)b;
    int nc = b->ncomp;
    int64_t bs = it->d->a;
    if (it->done) {
        *end = true;
        return true;
    }
    /* The elements, in the iterator's scratch array (made once: a 2 KiB calloc per batch made
     * glibc consolidate the freed elements' chunks every batch). */
    rill_tensor **el = it->buf;
    int64_t n = 0;
    bool ok = true;
    while (n < bs) {
        bool e = false;
        if (!rill__ds_in_next(it, 0, c, el + n * nc, &e)) {
            ok = false;
            break;
        }
        if (e) {
            it->done = true;
            break;
        }
        n++;
    }
    if (!ok || n == 0 || (n < bs && it->d->b)) {
        rill__ds_free_elems(el, (int)(n * nc));
        *end = ok;
        return ok;
    }
    for (int k = 0; k < nc && ok; k++) {
        const rill_tensor *f = el[k];
        for (int64_t j = 1; j < n; j++) {
            const rill_tensor *t = el[j * nc + k];
            if (t->dtype != f->dtype || !rill_shape_equal(&t->shape, &f->shape)) {
                char a[64], bb[64];
                rill_status_set(c->s, RILL_INVALID_ARGUMENT,
                                "Cannot batch tensors with different shapes in component %d. "
                                "First element had shape %s and element %lld had shape %s.",
                                k, rill_shape_str(&f->shape, a, sizeof a), (long long)j,
                                rill_shape_str(&t->shape, bb, sizeof bb));
                ok = false;
                break;
            }
        }
        if (!ok) break;
        if (f->shape.rank >= RILL_MAX_DIMS) {
            rill_status_set(c->s, RILL_INVALID_ARGUMENT,
                            "Cannot batch component %d: rank %d is rill's limit", k, f->shape.rank);
            ok = false;
            break;
        }
        int64_t dims[RILL_MAX_DIMS];
        dims[0] = n;
        memcpy(dims + 1, f->shape.dims, (size_t)f->shape.rank * sizeof *dims);
        rill_tensor *o = rill_tensor_new(f->dtype, dims, f->shape.rank + 1);
        RILL_CHECK_ALLOC(o);
        if (f->dtype == RILL_STRING) {
            for (int64_t j = 0; j < n; j++)
                for (int64_t q = 0; q < f->numel; q++) {
                    size_t len;
                    const char *s = rill_tensor_get_string(el[j * nc + k], q, &len);
                    rill_tensor_set_string(o, j * f->numel + q, s, len);
                }
        } else {
            size_t bytes = rill_tensor_nbytes(f);
            char *dst = rill_tensor_data(o);
            for (int64_t j = 0; j < n; j++)
                memcpy(dst + (size_t)j * bytes, rill_tensor_data(el[j * nc + k]), bytes);
        }
        out[k] = o;
    }
    if (!ok)
        for (int k = 0; k < nc; k++) {
            rill_tensor_free(out[k]);
            out[k] = NULL;
        }
    rill__ds_free_elems(el, (int)(n * nc));
    *end = false;
    return ok;
}

static const dit_vt batch_it_vt = {batch_next, rill__ds_over_it_free};

static dit *batch_make(dset *b, dctx *c)
{
    over_it *it = rill__ds_over_it_new((over_ds *)b, &batch_it_vt, c, 0);
    if (!it) return NULL;
    /* buf: batch_next's scratch for one batch's elements (nbuf stays 0: none are held) */
    it->buf = rill__calloc((size_t)(((over_ds *)b)->a * it->base.ncomp), sizeof *it->buf);
    RILL_CHECK_ALLOC(it->buf);
    return &it->base;
}

int64_t rill__ds_batch_card(dset *b)
{
    over_ds *d = (over_ds *)b;
    int64_t n = rill__ds_card(d->in[0]);
    if (n == RILL_DS_UNKNOWN || n == RILL_DS_INFINITE) return n;
    return n / d->a + (n % d->a == 0 || d->b ? 0 : 1);
}

static const dset_vt batch_vt = {batch_make, rill__ds_over_free, rill__ds_batch_card};

static void batch_kernel(rill__kctx *ctx)
{
    int64_t bs = rill__ds_in_i64(ctx, 1);
    if (bs <= 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Batch size must be greater than zero.");
        return;
    }
    over_ds *d = rill__ds_over_new(ctx, 1);
    if (!d) return;
    d->a = bs;
    d->b = *(const bool *)rill_tensor_data(ctx->inputs[2]);
    rill__ds_dset_register(&d->base, &batch_vt);
    rill__ds_set_handle(ctx, &d->base);
}

/* ----------------------------------------------------------------- shuffle ---- */

static bool shuffle_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    over_it *it = (over_it *)b;
    int nc = b->ncomp;
    while (!it->in_end && it->nbuf < it->cap) {
        if (it->nbuf == it->alloc) { /* the buffer grows as it fills */
            int64_t grow = it->alloc * 2 < it->cap ? it->alloc * 2 : it->cap;
            it->buf = rill__realloc(it->buf, (size_t)(grow * nc) * sizeof *it->buf);
            RILL_CHECK_ALLOC(it->buf);
            it->alloc = grow;
        }
        if (!rill__ds_in_next(it, 0, c, it->buf + it->nbuf * nc, &it->in_end)) return false;
        if (!it->in_end) it->nbuf++;
    }
    if (it->nbuf == 0) {
        *end = true;
        return true;
    }
    int64_t i = (int64_t)(rill__rng_next(&it->rng) % (uint64_t)it->nbuf);
    memcpy(out, it->buf + i * nc, (size_t)nc * sizeof *out);
    it->nbuf--;
    memmove(it->buf + i * nc, it->buf + it->nbuf * nc, (size_t)nc * sizeof *out);
    *end = false;
    return true;
}

static const dit_vt shuffle_it_vt = {shuffle_next, rill__ds_over_it_free};

static dit *shuffle_make(dset *b, dctx *c)
{
    over_ds *d = (over_ds *)b;
    over_it *it = rill__ds_over_it_new(d, &shuffle_it_vt, c, 0);
    if (!it) return NULL;
    int64_t epoch = d->reshuffle ? atomic_fetch_add(&d->epoch, 1) : 0;
    uint64_t seed = (uint64_t)d->seed * 0x9E3779B97F4A7C15ull ^ (uint64_t)d->seed2;
    rill__rng_seed(&it->rng, seed + (uint64_t)epoch * 0xD1B54A32D192ED03ull);
    /* A buffer_size far beyond the data costs nothing: the buffer grows as it fills. */
    it->cap = d->a;
    it->alloc = it->cap < 1024 ? it->cap : 1024;
    it->buf = rill__calloc((size_t)(it->alloc * it->base.ncomp), sizeof *it->buf);
    RILL_CHECK_ALLOC(it->buf);
    return &it->base;
}

static const dset_vt shuffle_vt = {shuffle_make, rill__ds_over_free, rill__ds_card_in0};

static void shuffle_kernel(rill__kctx *ctx)
{
    int64_t bs = rill__ds_in_i64(ctx, 1);
    if (bs <= 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "buffer_size must be greater than zero.");
        return;
    }
    over_ds *d = rill__ds_over_new(ctx, 1);
    if (!d) return;
    d->a = bs;
    d->seed = ctx->node->seed;
    d->seed2 = ctx->node->seed2;
    if (d->seed == 0 && d->seed2 == 0) d->seed = (int64_t)rill__random_seed();
    d->reshuffle = rill__attr_bool(ctx->node, "reshuffle_each_iteration", true);
    atomic_init(&d->epoch, 0);
    rill__ds_dset_register(&d->base, &shuffle_vt);
    rill__ds_set_handle(ctx, &d->base);
}

/* ---------------------------------------------------------------- functions ---- */

void rill__ds_fn_unref(fn_obj *f)
{
    if (!f || atomic_fetch_sub(&f->refs, 1) != 1) return;
    const rill__function_runner *fr = rill__function_runner_get();
    if (f->runner && fr) fr->close(f->runner);
    pthread_mutex_destroy(&f->mu);
    rill__free(f->args);
    rill__free(f->outs);
    rill__free(f->op);
    rill__free(f);
}

void rill__ds_fn_state_free(void *p)
{
    rill__ds_fn_unref(p);
}

const rill_node *rill__ds_user_node(const rill__kctx *ctx)
{
    return ctx->node->origin ? ctx->node->origin : ctx->node;
}

/* The names in string tensor attr `attr` of n as outputs of g ("x" is "x:0"). */
static bool fn_outputs(rill__kctx *ctx, const rill_node *n, rill_graph *g, const char *attr,
                       rill_output **out, int *nout)
{
    const rill__attr *a = rill__node_attr(n, attr);
    const rill_tensor *t = a->v.tensor;
    int k = (int)rill_tensor_num_elements(t);
    *out = rill__calloc((size_t)(k ? k : 1), sizeof **out);
    RILL_CHECK_ALLOC(*out);
    *nout = k;
    rill_status *s = rill_status_new();
    for (int i = 0; i < k; i++) {
        size_t len;
        const char *nm = rill_tensor_get_string(t, i, &len);
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)len, nm);
        (*out)[i] = rill_graph_find_output(g, buf, s);
        if (!rill_status_ok(s)) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "the function of %s '%s' names %s '%s', which is not in its graph: %s",
                            n->op->name, n->name, attr, buf, rill_status_message(s));
            rill_status_free(s);
            return false;
        }
    }
    rill_status_free(s);
    return true;
}

/* The node's function (kept in its per-session state: one per node and session). */
fn_obj *rill__ds_node_fn(rill__kctx *ctx)
{
    if (*ctx->state) {
        fn_obj *f = *ctx->state;
        atomic_fetch_add(&f->refs, 1);
        return f;
    }
    fn_obj *f = rill__ds_fn_new(ctx, "f");
    if (!f) return NULL;
    *ctx->state = f;
    atomic_fetch_add(&f->refs, 1);
    return f;
}

/* The node's function named by attrs <prefix>_args, <prefix>_outputs (and <prefix>_captures). */
fn_obj *rill__ds_fn_new(rill__kctx *ctx, const char *prefix)
{
    char an[64], on[64], cn[64];
    snprintf(an, sizeof an, "%s_args", prefix);
    snprintf(on, sizeof on, "%s_outputs", prefix);
    snprintf(cn, sizeof cn, "%s_captures", prefix);
    const rill_node *n = rill__ds_user_node(ctx);
    fn_obj *f = rill__calloc(1, sizeof *f);
    RILL_CHECK_ALLOC(f);
    atomic_init(&f->refs, 1);
    pthread_mutex_init(&f->mu, NULL);
    f->g = n->graph;
    f->rm = ctx->rm;
    f->op = rill__asprintf("%s '%s'", n->op->name, n->name);
    if (!fn_outputs(ctx, n, f->g, an, &f->args, &f->nargs) ||
        !fn_outputs(ctx, n, f->g, on, &f->outs, &f->nouts)) {
        rill__ds_fn_unref(f);
        return NULL;
    }
    const rill__attr *ca = rill__node_attr(n, cn);
    if (ca && ca->kind == RILL__ATTR_TENSOR && rill_tensor_dtype(ca->v.tensor) == RILL_STRING &&
        rill_tensor_num_elements(ca->v.tensor) > 0) {
        /* the captured tensors are fed after the arguments: args holds both */
        rill_output *caps;
        int ncaps;
        if (!fn_outputs(ctx, n, f->g, cn, &caps, &ncaps)) {
            rill__free(caps);
            rill__ds_fn_unref(f);
            return NULL;
        }
        f->args = rill__realloc(f->args, (size_t)(f->nargs + ncaps) * sizeof *f->args);
        RILL_CHECK_ALLOC(f->args);
        memcpy(f->args + f->nargs, caps, (size_t)ncaps * sizeof *caps);
        rill__free(caps);
        f->ncaps = ncaps;
    }
    if (ctx->node->ninputs < f->ncaps + 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s captures %d tensors but has %d inputs",
                        f->op, f->ncaps, ctx->node->ninputs);
        rill__ds_fn_unref(f);
        return NULL;
    }
    if (strcmp(n->op->name, "FilterDataset") == 0 &&
        (f->nouts != 1 || rill_output_dtype(f->outs[0]) != RILL_BOOL)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "`predicate` return type must be convertible to a scalar boolean tensor. "
                        "(%s returns %d values)",
                        f->op, f->nouts);
        rill__ds_fn_unref(f);
        return NULL;
    }
    return f;
}

/* The node's last f->ncaps inputs, the function's captured values, held by d. */
void rill__ds_take_captures(rill__kctx *ctx, over_ds *d, const fn_obj *f)
{
    if (!f->ncaps) return;
    d->cap = rill__calloc((size_t)f->ncaps, sizeof *d->cap);
    RILL_CHECK_ALLOC(d->cap);
    d->ncap = f->ncaps;
    int first = ctx->node->ninputs - f->ncaps;
    for (int i = 0; i < f->ncaps; i++) d->cap[i] = rill_tensor_ref(ctx->inputs[first + i]);
}

/* Runs f on in (nargs tensors, borrowed) and the captured values cap (f->ncaps); out gets nouts
 * new references. */
bool rill__ds_fn_call(fn_obj *f, dctx *c, rill_tensor *const *cap, rill_tensor *const *in, int nin,
                      rill_tensor **out)
{
    if (nin != f->nargs) {
        rill_status_set(c->s, RILL_INVALID_ARGUMENT,
                        "the function of %s takes %d arguments, the element has %d components",
                        f->op, f->nargs, nin);
        return false;
    }
    const rill__function_runner *fr = rill__function_runner_get();
    if (!fr) {
        rill_status_set(c->s, RILL_INTERNAL, "%s: no runtime to run its function", f->op);
        return false;
    }
    pthread_mutex_lock(&f->mu);
    if (!f->runner) f->runner = fr->open(f->g, f->rm, c->s);
    void *h = f->runner;
    pthread_mutex_unlock(&f->mu);
    if (!h) return false;
    rill_tensor *feed[64], **fe = (rill_tensor **)in;
    int nfeed = nin + f->ncaps;
    if (f->ncaps) {
        fe = nfeed <= 64 ? feed : rill__calloc((size_t)nfeed, sizeof *fe);
        RILL_CHECK_ALLOC(fe);
        memcpy(fe, in, (size_t)nin * sizeof *fe);
        memcpy(fe + nin, cap, (size_t)f->ncaps * sizeof *fe);
    }
    rill_status *s = rill_status_new();
    rill_code code =
        fr->run(h, c->deadline, c->timeout_ms, f->args, fe, nfeed, f->outs, out, f->nouts, s);
    if (fe != in && fe != feed) rill__free(fe);
    if (code != RILL_OK)
        rill_status_set(c->s, code, "%s (in the function of %s)", rill_status_message(s), f->op);
    rill_status_free(s);
    return code == RILL_OK;
}

static bool map_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    over_it *it = (over_it *)b;
    fn_obj *f = it->d->fn;
    int nin = it->in[0]->ncomp;
    rill_tensor *el[64], **e = nin <= 64 ? el : rill__calloc((size_t)nin, sizeof *e);
    RILL_CHECK_ALLOC(e);
    bool ok = rill__ds_in_next(it, 0, c, e, end);
    if (ok && !*end) {
        ok = rill__ds_fn_call(f, c, it->d->cap, e, nin, out);
        rill__ds_free_elems(e, nin);
    }
    if (e != el) rill__free(e);
    return ok;
}

static bool filter_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    over_it *it = (over_it *)b;
    fn_obj *f = it->d->fn;
    int nc = b->ncomp;
    for (;;) {
        if (!rill__ds_in_next(it, 0, c, out, end)) return false;
        if (*end) return true;
        rill_tensor *keep = NULL;
        if (!rill__ds_fn_call(f, c, it->d->cap, out, nc, &keep)) {
            rill__ds_free_elems(out, nc);
            return false;
        }
        bool k = keep->numel == 1 && *(const bool *)rill_tensor_data(keep);
        bool scalar = keep->numel == 1;
        rill_tensor_free(keep);
        if (!scalar) {
            rill__ds_free_elems(out, nc);
            rill_status_set(c->s, RILL_INVALID_ARGUMENT,
                            "Filter predicate `f` must return a scalar bool. (%s)", f->op);
            return false;
        }
        if (k) return true;
        rill__ds_free_elems(out, nc);
    }
}

static const dit_vt map_it_vt = {map_next, rill__ds_over_it_free};
static const dit_vt filter_it_vt = {filter_next, rill__ds_over_it_free};

static dit *map_make(dset *b, dctx *c)
{
    over_ds *d = (over_ds *)b;
    over_it *it = rill__ds_over_it_new(d, &map_it_vt, c, 0);
    if (!it) return NULL;
    it->base.ncomp = d->fn->nouts;
    return &it->base;
}

static dit *filter_make(dset *b, dctx *c)
{
    over_it *it = rill__ds_over_it_new((over_ds *)b, &filter_it_vt, c, 0);
    return it ? &it->base : NULL;
}

/* TF 1.x's map does not preserve the cardinality (preserve_cardinality false: unknown) */
static const dset_vt map_vt = {map_make, rill__ds_over_free, NULL};
static const dset_vt map_card_vt = {map_make, rill__ds_over_free, rill__ds_card_in0};
static const dset_vt filter_vt = {filter_make, rill__ds_over_free, NULL};

static void map_kernel(rill__kctx *ctx)
{
    fn_obj *f = rill__ds_node_fn(ctx);
    if (!f) return;
    over_ds *d = rill__ds_over_new(ctx, 1);
    if (!d) {
        rill__ds_fn_unref(f);
        return;
    }
    d->fn = f;
    rill__ds_take_captures(ctx, d, f);
    bool filter = strcmp(ctx->node->op->name, "FilterDataset") == 0;
    rill__ds_dset_register(&d->base,
                           filter ? &filter_vt
                           : rill__attr_bool(rill__ds_user_node(ctx), "preserve_cardinality", false)
                               ? &map_card_vt
                               : &map_vt);
    rill__ds_set_handle(ctx, &d->base);
}

/* ---------------------------------------------------------------- prefetch ---- */

typedef struct pf_item {
    rill_tensor **t; /* ncomp; NULL for the end or an error */
    rill_status *err;
} pf_item;

typedef struct pf_it {
    dit base;
    over_ds *d;
    dit *in;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool started, stop, finished; /* finished: the producer pushed the end or an error */
    pf_item *q;
    int64_t head, n, cap;
} pf_it;

static void *pf_produce(void *arg)
{
    pf_it *it = arg;
    int nc = it->base.ncomp;
    for (;;) {
        pthread_mutex_lock(&it->mu);
        while (!it->stop && it->n >= it->cap) pthread_cond_wait(&it->cv, &it->mu);
        bool stop = it->stop;
        pthread_mutex_unlock(&it->mu);
        if (stop) return NULL;
        pf_item x = {rill__calloc((size_t)nc, sizeof *x.t), NULL};
        RILL_CHECK_ALLOC(x.t);
        rill_status *s = rill_status_new();
        dctx c = {s, 0, 0, NULL, 0, NULL};
        bool end = false;
        bool ok = it->in->vt->next(it->in, &c, x.t, &end);
        bool last = !ok || end;
        if (last) {
            rill__free(x.t);
            x.t = NULL;
        }
        if (!ok)
            x.err = s;
        else
            rill_status_free(s);
        pthread_mutex_lock(&it->mu);
        it->q[(it->head + it->n) % it->cap] = x;
        it->n++;
        if (last) it->finished = true;
        pthread_cond_broadcast(&it->cv);
        pthread_mutex_unlock(&it->mu);
        if (last) return NULL;
    }
}

static void pf_item_free(pf_item *x, int nc)
{
    if (x->t) rill__ds_free_elems(x->t, nc);
    rill__free(x->t);
    rill_status_free(x->err);
}

static void pf_free(dit *b)
{
    pf_it *it = (pf_it *)b;
    if (it->started) {
        pthread_mutex_lock(&it->mu);
        it->stop = true;
        pthread_cond_broadcast(&it->cv);
        pthread_mutex_unlock(&it->mu);
        pthread_join(it->thread, NULL);
    }
    for (int64_t i = 0; i < it->n; i++) pf_item_free(&it->q[(it->head + i) % it->cap], b->ncomp);
    rill__free(it->q);
    rill__ds_dit_free(it->in);
    pthread_mutex_destroy(&it->mu);
    pthread_cond_destroy(&it->cv);
    rill__ds_dset_unref(&it->d->base);
    rill__free(it);
}

static bool pf_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    pf_it *it = (pf_it *)b;
    pthread_mutex_lock(&it->mu);
    if (!it->started) {
        if (pthread_create(&it->thread, NULL, pf_produce, it) != 0) {
            pthread_mutex_unlock(&it->mu);
            rill_status_set(c->s, RILL_RESOURCE_EXHAUSTED,
                            "could not start the prefetch thread of iterator '%s'",
                            c->iterator ? c->iterator : "?");
            return false;
        }
        it->started = true;
    }
    while (it->n == 0) {
        if (it->finished) { /* the end (or error) was taken already */
            pthread_mutex_unlock(&it->mu);
            *end = true;
            return true;
        }
        const char *who = c->iterator ? c->iterator : "?";
        if (c->cancel && atomic_load(c->cancel) != c->cancel_gen) {
            pthread_mutex_unlock(&it->mu);
            rill_status_set(c->s, RILL_CANCELLED,
                            "GetNext() on iterator '%s' was cancelled while waiting for a "
                            "prefetched element (%s)",
                            who, it->d->name);
            return false;
        }
        if (c->deadline && rill__now_seconds() >= c->deadline) {
            pthread_mutex_unlock(&it->mu);
            rill_status_set(c->s, RILL_DEADLINE_EXCEEDED,
                            "Timed out waiting for notification: the step's %lld ms deadline "
                            "passed: GetNext() on iterator '%s' was waiting for a prefetched "
                            "element (%s)",
                            (long long)c->timeout_ms, who, it->d->name);
            return false;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long ns = ts.tv_nsec + 50L * 1000 * 1000;
        ts.tv_sec += ns / 1000000000L;
        ts.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&it->cv, &it->mu, &ts);
    }
    pf_item x = it->q[it->head];
    it->head = (it->head + 1) % it->cap;
    it->n--;
    pthread_cond_broadcast(&it->cv);
    pthread_mutex_unlock(&it->mu);
    bool ok = true;
    if (x.err) {
        rill_status_copy(c->s, x.err);
        ok = false;
    } else if (!x.t) {
        *end = true;
    } else {
        memcpy(out, x.t, (size_t)b->ncomp * sizeof *out);
        rill__free(x.t);
        x.t = NULL;
        *end = false;
    }
    pf_item_free(&x, b->ncomp);
    return ok;
}

static const dit_vt pf_it_vt = {pf_next, pf_free};

static dit *pf_make(dset *b, dctx *c)
{
    over_ds *d = (over_ds *)b;
    dit *in = rill__ds_dset_make(d->in[0], c);
    if (!in) return NULL;
    pf_it *it = rill__calloc(1, sizeof *it);
    RILL_CHECK_ALLOC(it);
    it->base = (dit){&pf_it_vt, in->ncomp};
    it->d = d;
    atomic_fetch_add(&b->refs, 1);
    it->in = in;
    pthread_mutex_init(&it->mu, NULL);
    pthread_cond_init(&it->cv, NULL);
    it->cap = d->a;
    it->q = rill__calloc((size_t)it->cap, sizeof *it->q);
    RILL_CHECK_ALLOC(it->q);
    return &it->base;
}

static const dset_vt pf_vt = {pf_make, rill__ds_over_free, rill__ds_card_in0};

static void prefetch_kernel(rill__kctx *ctx)
{
    int64_t bs = rill__ds_in_i64(ctx, 1);
    if (bs < -1 || bs == 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "buffer_size must be at least 1 or -1 (AUTOTUNE), got %lld", (long long)bs);
        return;
    }
    over_ds *d = rill__ds_over_new(ctx, 1);
    if (!d) return;
    d->a = bs < 0 ? 2 : bs; /* AUTOTUNE: double buffering */
    rill__ds_dset_register(&d->base, &pf_vt);
    rill__ds_set_handle(ctx, &d->base);
}

/* ---------------------------------------------------------------- iterators ---- */

typedef struct iter_res {
    pthread_mutex_t mu;
    char *name;
    dset *d;
    dit *it;
} iter_res;

static void *iter_res_new(void *arg)
{
    iter_res *r = rill__calloc(1, sizeof *r);
    RILL_CHECK_ALLOC(r);
    pthread_mutex_init(&r->mu, NULL);
    r->name = rill__strdup(arg);
    return r;
}

static void iter_res_free(void *p)
{
    iter_res *r = p;
    rill__ds_dit_free(r->it);
    rill__ds_dset_unref(r->d);
    pthread_mutex_destroy(&r->mu);
    rill__free(r->name);
    rill__free(r);
}

static iter_res *get_iter(rill__kctx *ctx, const char *name)
{
    if (!ctx->rm) {
        rill__kctx_fail(ctx, RILL_INTERNAL, "no resource manager for iterator '%s'", name);
        return NULL;
    }
    return rill__resource_lookup(ctx->rm, "iterator", name, iter_res_new, (void *)name,
                                 iter_res_free);
}

static const char *iter_name(const rill__kctx *ctx)
{
    const rill_node *n = rill__ds_user_node(ctx);
    const rill__attr *a = rill__node_attr(n, "shared_name");
    return a && a->kind == RILL__ATTR_STRING && a->v.s && a->v.s[0] ? a->v.s : n->name;
}

static void name_out(rill__kctx *ctx, const char *name)
{
    rill_tensor *t = rill_tensor_scalar_string(name);
    RILL_CHECK_ALLOC(t);
    rill__kctx_set_output(ctx, 0, t);
}

/* (Re)starts r over d (a reference the call takes), under r->mu. */
static bool iter_start(rill__kctx *ctx, iter_res *r, dset *d)
{
    rill_status *s = rill_status_new();
    dctx c;
    rill__ds_dctx_of(ctx, &c, s, r->name);
    dit *it = rill__ds_dset_make(d, &c);
    if (!it) {
        rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
        rill_status_free(s);
        rill__ds_dset_unref(d);
        return false;
    }
    rill_status_free(s);
    rill__ds_dit_free(r->it);
    rill__ds_dset_unref(r->d);
    r->it = it;
    r->d = d;
    return true;
}

static void iterator_kernel(rill__kctx *ctx)
{
    const char *name = iter_name(ctx);
    if (get_iter(ctx, name)) name_out(ctx, name);
}

static void one_shot_kernel(rill__kctx *ctx)
{
    const char *name = iter_name(ctx);
    iter_res *r = get_iter(ctx, name);
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    if (!r->d) {
        dset *d = rill__ds_input_dset(ctx, 0);
        if (!d || !iter_start(ctx, r, d)) {
            pthread_mutex_unlock(&r->mu);
            return;
        }
    }
    pthread_mutex_unlock(&r->mu);
    name_out(ctx, name);
}

static const char *handle_name(rill__kctx *ctx, int i)
{
    const rill_tensor *t = ctx->inputs[i];
    if (t->dtype != RILL_STRING || t->numel != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "an iterator handle is a string scalar");
        return NULL;
    }
    return rill_tensor_get_string(t, 0, NULL);
}

static void make_iterator_kernel(rill__kctx *ctx)
{
    const char *name = handle_name(ctx, 1);
    if (!name) return;
    iter_res *r = get_iter(ctx, name);
    if (!r) return;
    dset *d = rill__ds_input_dset(ctx, 0);
    if (!d) return;
    pthread_mutex_lock(&r->mu);
    iter_start(ctx, r, d);
    pthread_mutex_unlock(&r->mu);
}

static void get_next_kernel(rill__kctx *ctx)
{
    const char *name = handle_name(ctx, 0);
    if (!name) return;
    iter_res *r = get_iter(ctx, name);
    if (!r) return;
    int nc = ctx->node->noutputs;
    pthread_mutex_lock(&r->mu);
    if (!r->it) {
        pthread_mutex_unlock(&r->mu);
        rill__kctx_fail(ctx, RILL_FAILED_PRECONDITION,
                        "GetNext() failed because the iterator has not been initialized. Ensure "
                        "that you have run the initializer operation for this iterator before "
                        "getting the next element.");
        return;
    }
    if (r->it->ncomp != nc) {
        pthread_mutex_unlock(&r->mu);
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Number of components does not match: iterator '%s' gives %d, GetNext "
                        "expects %d",
                        name, r->it->ncomp, nc);
        return;
    }
    rill_tensor *el[64], **e = nc <= 64 ? el : rill__calloc((size_t)nc, sizeof *e);
    RILL_CHECK_ALLOC(e);
    rill_status *s = rill_status_new();
    dctx c;
    rill__ds_dctx_of(ctx, &c, s, name);
    bool end = false;
    bool ok = r->it->vt->next(r->it, &c, e, &end);
    pthread_mutex_unlock(&r->mu);
    if (!ok) {
        rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
    } else if (end) {
        rill__kctx_fail(ctx, RILL_OUT_OF_RANGE, "End of sequence");
    } else {
        for (int i = 0; i < nc; i++) {
            rill_dtype want = ctx->node->out_dtypes[i];
            const rill_shape *ws = &ctx->node->out_shapes[i];
            bool shape_ok = ws->rank < 0 || ws->rank == e[i]->shape.rank;
            for (int k = 0; shape_ok && ws->rank > 0 && k < ws->rank; k++)
                shape_ok = ws->dims[k] < 0 || ws->dims[k] == e[i]->shape.dims[k];
            if (e[i]->dtype != want || !shape_ok) {
                char a[64], b[64];
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                                "Component %d of iterator '%s' is %s %s, GetNext expects %s %s", i,
                                name, rill_dtype_name(e[i]->dtype),
                                rill_shape_str(&e[i]->shape, a, sizeof a), rill_dtype_name(want),
                                rill_shape_str(ws, b, sizeof b));
                break;
            }
        }
        for (int i = 0; i < nc; i++) {
            if (rill__kctx_ok(ctx))
                rill__kctx_set_output(ctx, i, e[i]);
            else
                rill_tensor_free(e[i]);
        }
    }
    rill_status_free(s);
    if (e != el) rill__free(e);
}

#define K(op_, fn_)                                                                                \
    {                                                                                              \
        .op = op_, .device_type = "CPU", .dtype = RILL_DT_INVALID, .fn = fn_                       \
    }

const rill__kernel_def rill__cpu_kernels_dataset[] = {
    K("TensorSliceDataset", comps_kernel),
    K("TensorDataset", comps_kernel),
    K("RangeDataset", range_kernel),
    K("ZipDataset", zip_kernel),
    {.op = "MapDataset",
     .device_type = "CPU",
     .dtype = RILL_DT_INVALID,
     .fn = map_kernel,
     .state_free = rill__ds_fn_state_free},
    {.op = "FilterDataset",
     .device_type = "CPU",
     .dtype = RILL_DT_INVALID,
     .fn = map_kernel,
     .state_free = rill__ds_fn_state_free},
    K("BatchDatasetV2", batch_kernel),
    K("ShuffleDataset", shuffle_kernel),
    K("RepeatDataset", count_kernel),
    K("TakeDataset", count_kernel),
    K("SkipDataset", count_kernel),
    K("PrefetchDataset", prefetch_kernel),
    K("IteratorV2", iterator_kernel),
    K("OneShotIterator", one_shot_kernel),
    K("MakeIterator", make_iterator_kernel),
    K("IteratorGetNext", get_next_kernel),
    {0},
};
