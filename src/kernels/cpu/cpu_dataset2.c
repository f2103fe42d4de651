/* cpu_dataset2.c - tf.data's later transformations (ops in graph/ops_dataset2.c), over the
 * objects of cpu_dataset.c (cpu_dataset.h; the design is written there).
 *
 *   - Concatenate: the first input's elements, then the second's.
 *   - FlatMap / Interleave: each input element, through the function, gives a dataset (its
 *     handle); TF's InterleaveDatasetOp's order: up to cycle_length open iterators, block_length
 *     elements from each in turn, an exhausted one replaced by the next input element's dataset
 *     in its slot. FlatMap is cycle 1, block 1. The element's component count is the op's
 *     n_components attr (every produced dataset must have it).
 *   - Window: TF's WindowDatasetOp: windows of size elements (stride apart in the input) starting
 *     shift apart; each component of a window is a dataset of that component's tensors.
 *   - PaddedBatch: as batch, each component padded to its padded shape (-1: the batch's largest)
 *     with its padding value.
 *   - Scan keeps its state per iterator; Reduce and DatasetToSingleElement read a dataset whole
 *     in the kernel; DatasetCardinality is TF's (INFINITE -1, UNKNOWN -2).
 *   - Cache: the first iterator that reaches the end fills the dataset's cache (memory) or its
 *     file (filename + ".rill-cache", written to a temporary name and renamed when complete);
 *     later iterators read that. A complete file is read by any later dataset of that name. */
#include "cpu_dataset.h"
#include "philox.h"

#include <float.h>
#include <glob.h>
#include <math.h>
#include <stdlib.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static bool set_err(dctx *c, rill_code code, const char *msg)
{
    rill_status_set(c->s, code, "%s", msg);
    return false;
}

/* ------------------------------------------------------------- concatenate ---- */

static bool concat_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    over_it *it = (over_it *)b;
    for (;;) {
        if (it->count >= 2) {
            *end = true;
            return true;
        }
        if (!rill__ds_in_next(it, (int)it->count, c, out, end)) return false;
        if (!*end) return true;
        it->count++;
    }
}

static const dit_vt concat_it_vt = {concat_next, rill__ds_over_it_free};

static dit *concat_make(dset *b, dctx *c)
{
    over_it *it = rill__ds_over_it_new((over_ds *)b, &concat_it_vt, c, 0);
    if (!it) return NULL;
    if (it->in[0]->ncomp != it->in[1]->ncomp) {
        rill_status_set(c->s, RILL_INVALID_ARGUMENT,
                        "ConcatenateDataset '%s': the datasets have %d and %d components",
                        it->d->name, it->in[0]->ncomp, it->in[1]->ncomp);
        rill__ds_over_it_free(&it->base);
        return NULL;
    }
    it->base.ncomp = it->in[0]->ncomp;
    return &it->base;
}

static int64_t concat_card(dset *b)
{
    over_ds *d = (over_ds *)b;
    int64_t n1 = rill__ds_card(d->in[0]), n2 = rill__ds_card(d->in[1]);
    if (n1 == RILL_DS_INFINITE || n2 == RILL_DS_INFINITE) return RILL_DS_INFINITE;
    if (n1 == RILL_DS_UNKNOWN || n2 == RILL_DS_UNKNOWN) return RILL_DS_UNKNOWN;
    return n1 + n2;
}

static const dset_vt concat_vt = {concat_make, rill__ds_over_free, concat_card};

static void concat_kernel(rill__kctx *ctx)
{
    over_ds *d = rill__ds_over_new(ctx, 2);
    if (!d) return;
    rill__ds_dset_register(&d->base, &concat_vt);
    rill__ds_set_handle(ctx, &d->base);
}

/* ------------------------------------------------------ flat_map, interleave ---- */

typedef struct il_ds {
    over_ds o; /* a: cycle_length, b: block_length, fn */
    int ncomp; /* of the produced datasets */
} il_ds;

typedef struct il_it {
    over_it o; /* in[0]: the input */
    dit **cur; /* cycle_length slots */
    int64_t ci, bi, nopen;
    bool end_input;
} il_it;

static void il_it_free(dit *b)
{
    il_it *it = (il_it *)b;
    for (int64_t i = 0; it->cur && i < it->o.d->a; i++) rill__ds_dit_free(it->cur[i]);
    rill__free(it->cur);
    rill__ds_over_it_free(b);
}

/* The dataset the function makes of the next input element, as an iterator in slot ci. */
static bool il_open(il_it *it, dctx *c)
{
    il_ds *d = (il_ds *)it->o.d;
    int nin = it->o.in[0]->ncomp;
    rill_tensor *el[64], **e = nin <= 64 ? el : rill__calloc((size_t)nin, sizeof *e);
    RILL_CHECK_ALLOC(e);
    bool ok = rill__ds_in_next(&it->o, 0, c, e, &it->end_input);
    if (ok && !it->end_input) {
        rill_tensor *h = NULL;
        ok = rill__ds_fn_call(d->o.fn, c, d->o.cap, e, nin, &h);
        rill__ds_free_elems(e, nin);
        if (ok) {
            dset *ds = rill__ds_lookup(h);
            rill_tensor_free(h);
            if (!ds) {
                rill_status_set(c->s, RILL_INVALID_ARGUMENT,
                                "the function of %s must return a dataset", d->o.fn->op);
                ok = false;
            } else {
                dit *sub = rill__ds_dset_make(ds, c);
                rill__ds_dset_unref(ds);
                if (!sub) {
                    ok = false;
                } else if (sub->ncomp != d->ncomp) {
                    rill_status_set(c->s, RILL_INVALID_ARGUMENT,
                                    "the function of %s returned a dataset of %d components, "
                                    "expected %d",
                                    d->o.fn->op, sub->ncomp, d->ncomp);
                    rill__ds_dit_free(sub);
                    ok = false;
                } else {
                    it->cur[it->ci] = sub;
                    it->nopen++;
                }
            }
        }
    }
    if (e != el) rill__free(e);
    return ok;
}

static void il_advance(il_it *it)
{
    it->bi = 0;
    it->ci = (it->ci + 1) % it->o.d->a;
}

static bool il_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    il_it *it = (il_it *)b;
    while (!it->end_input || it->nopen > 0) {
        dit *sub = it->cur[it->ci];
        if (sub) {
            bool e = false;
            if (!sub->vt->next(sub, c, out, &e)) return false;
            if (!e) {
                if (++it->bi == it->o.d->b) il_advance(it);
                *end = false;
                return true;
            }
            rill__ds_dit_free(sub);
            it->cur[it->ci] = NULL;
            it->nopen--;
            il_advance(it);
        } else if (!it->end_input) {
            if (!il_open(it, c)) return false;
        } else {
            il_advance(it);
        }
    }
    *end = true;
    return true;
}

static const dit_vt il_it_vt = {il_next, il_it_free};

static dit *il_make(dset *b, dctx *c)
{
    il_ds *d = (il_ds *)b;
    il_it *it = (il_it *)rill__ds_over_it_new(&d->o, &il_it_vt, c, sizeof(il_it));
    if (!it) return NULL;
    it->cur = rill__calloc((size_t)d->o.a, sizeof *it->cur);
    RILL_CHECK_ALLOC(it->cur);
    it->o.base.ncomp = d->ncomp;
    return &it->o.base;
}

static const dset_vt il_vt = {il_make, rill__ds_over_free, NULL};

static void interleave_kernel(rill__kctx *ctx)
{
    bool flat = strcmp(ctx->node->op->name, "FlatMapDataset") == 0;
    int64_t cycle = flat ? 1 : rill__ds_in_i64(ctx, 1), block = flat ? 1 : rill__ds_in_i64(ctx, 2);
    if (cycle <= 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "cycle_length must be greater than zero.");
        return;
    }
    if (block <= 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "block_length must be greater than zero.");
        return;
    }
    int64_t nc = rill__attr_int(rill__ds_user_node(ctx), "n_components", -1);
    if (nc < 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s needs its element's component count (attr n_components)",
                        ctx->node->op->name);
        return;
    }
    fn_obj *f = rill__ds_node_fn(ctx);
    if (!f) return;
    if (f->nouts != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "the function of %s must return a dataset",
                        f->op);
        rill__ds_fn_unref(f);
        return;
    }
    il_ds *d = (il_ds *)rill__ds_over_new_sized(ctx, 1, sizeof(il_ds));
    if (!d) {
        rill__ds_fn_unref(f);
        return;
    }
    d->o.fn = f;
    d->o.a = cycle;
    d->o.b = block;
    d->ncomp = (int)nc;
    rill__ds_take_captures(ctx, &d->o, f);
    rill__ds_dset_register(&d->o.base, &il_vt);
    rill__ds_set_handle(ctx, &d->o.base);
}

/* ------------------------------------------------------------------ unbatch ---- */

/* buf: the current element (ncomp; nbuf 1 while held), cap its rows, count the next row. */
static bool unbatch_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    over_it *it = (over_it *)b;
    int nc = b->ncomp;
    while (it->nbuf == 0 || it->count >= it->cap) {
        if (it->nbuf) {
            rill__ds_free_elems(it->buf, nc);
            it->nbuf = 0;
        }
        if (!rill__ds_in_next(it, 0, c, it->buf, end)) return false;
        if (*end) return true;
        it->nbuf = 1;
        it->count = 0;
        for (int k = 0; k < nc; k++) {
            const rill_tensor *t = it->buf[k];
            if (t->shape.rank < 1)
                return set_err(c, RILL_INVALID_ARGUMENT,
                               "Input element must have a non-scalar value in each component.");
            if (k && t->shape.dims[0] != it->cap)
                return set_err(c, RILL_INVALID_ARGUMENT,
                               "Input element must have the same batch size in each component.");
            it->cap = t->shape.dims[0];
        }
    }
    for (int k = 0; k < nc; k++) out[k] = rill__ds_slice_row(it->buf[k], it->count);
    it->count++;
    *end = false;
    return true;
}

static const dit_vt unbatch_it_vt = {unbatch_next, rill__ds_over_it_free};

static dit *unbatch_make(dset *b, dctx *c)
{
    over_it *it = rill__ds_over_it_new((over_ds *)b, &unbatch_it_vt, c, 0);
    if (!it) return NULL;
    it->buf = rill__calloc((size_t)it->base.ncomp, sizeof *it->buf);
    RILL_CHECK_ALLOC(it->buf);
    return &it->base;
}

static const dset_vt unbatch_vt = {unbatch_make, rill__ds_over_free, NULL};

static void unbatch_kernel(rill__kctx *ctx)
{
    over_ds *d = rill__ds_over_new(ctx, 1);
    if (!d) return;
    rill__ds_dset_register(&d->base, &unbatch_vt);
    rill__ds_set_handle(ctx, &d->base);
}

/* -------------------------------------------------------------------- shard ---- */

static bool shard_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    over_it *it = (over_it *)b;
    for (;;) {
        if (!rill__ds_in_next(it, 0, c, out, end)) return false;
        if (*end) return true;
        if (it->count++ % it->d->a == it->d->b) return true;
        rill__ds_free_elems(out, b->ncomp);
    }
}

static const dit_vt shard_it_vt = {shard_next, rill__ds_over_it_free};

static dit *shard_make(dset *b, dctx *c)
{
    over_it *it = rill__ds_over_it_new((over_ds *)b, &shard_it_vt, c, 0);
    return it ? &it->base : NULL;
}

static int64_t shard_card(dset *b)
{
    over_ds *d = (over_ds *)b;
    int64_t n = rill__ds_card(d->in[0]);
    if (n == RILL_DS_INFINITE || n == RILL_DS_UNKNOWN) return n;
    return n / d->a + (d->b < n % d->a ? 1 : 0);
}

static const dset_vt shard_vt = {shard_make, rill__ds_over_free, shard_card};

static void shard_kernel(rill__kctx *ctx)
{
    int64_t n = rill__ds_in_i64(ctx, 1), i = rill__ds_in_i64(ctx, 2);
    if (n <= 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Number of shards must be greater than zero (currently num_shards = "
                        "%lld).",
                        (long long)n);
        return;
    }
    if (i < 0 || i >= n) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Index must be between 0 and %lld (currently index = %lld).",
                        (long long)(n - 1), (long long)i);
        return;
    }
    over_ds *d = rill__ds_over_new(ctx, 1);
    if (!d) return;
    d->a = n;
    d->b = i;
    rill__ds_dset_register(&d->base, &shard_vt);
    rill__ds_set_handle(ctx, &d->base);
}

/* --------------------------------------------------------------- take_while ---- */

static bool take_while_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    over_it *it = (over_it *)b;
    int nc = b->ncomp;
    if (it->done) {
        *end = true;
        return true;
    }
    if (!rill__ds_in_next(it, 0, c, out, end)) return false;
    if (*end) return true;
    rill_tensor *keep = NULL;
    if (!rill__ds_fn_call(it->d->fn, c, it->d->cap, out, nc, &keep)) {
        rill__ds_free_elems(out, nc);
        return false;
    }
    bool scalar = keep->numel == 1 && keep->dtype == RILL_BOOL;
    bool k = scalar && *(const bool *)rill_tensor_data(keep);
    rill_tensor_free(keep);
    if (!scalar) {
        rill__ds_free_elems(out, nc);
        return set_err(c, RILL_INVALID_ARGUMENT, "`predicate` must returns a scalar bool tensor.");
    }
    if (!k) {
        rill__ds_free_elems(out, nc);
        it->done = true;
        *end = true;
    }
    return true;
}

static const dit_vt take_while_it_vt = {take_while_next, rill__ds_over_it_free};

static dit *take_while_make(dset *b, dctx *c)
{
    over_it *it = rill__ds_over_it_new((over_ds *)b, &take_while_it_vt, c, 0);
    return it ? &it->base : NULL;
}

static const dset_vt take_while_vt = {take_while_make, rill__ds_over_free, NULL};

static void take_while_kernel(rill__kctx *ctx)
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
    rill__ds_dset_register(&d->base, &take_while_vt);
    rill__ds_set_handle(ctx, &d->base);
}

/* ------------------------------------------------------------------- unique ---- */

/* The values seen: a hash set of the elements (dtype, shape and bytes, or strings). */
typedef struct uniq_it {
    over_it o;
    rill_tensor **seen; /* open addressing, cap a power of two */
    uint64_t *hash;
    int64_t n, cap;
} uniq_it;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t tensor_hash(const rill_tensor *t)
{
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv(h, &t->dtype, sizeof t->dtype);
    h = fnv(h, t->shape.dims, (size_t)t->shape.rank * sizeof *t->shape.dims);
    if (t->dtype != RILL_STRING) return fnv(h, rill_tensor_data(t), rill_tensor_nbytes(t));
    for (int64_t i = 0; i < t->numel; i++) {
        size_t len;
        const char *s = rill_tensor_get_string(t, i, &len);
        h = fnv(fnv(h, &len, sizeof len), s, len);
    }
    return h;
}

static bool tensor_same(const rill_tensor *a, const rill_tensor *b)
{
    if (a->dtype != b->dtype || !rill_shape_equal(&a->shape, &b->shape)) return false;
    if (a->dtype != RILL_STRING)
        return memcmp(rill_tensor_data(a), rill_tensor_data(b), rill_tensor_nbytes(a)) == 0;
    for (int64_t i = 0; i < a->numel; i++) {
        size_t la, lb;
        const char *sa = rill_tensor_get_string(a, i, &la), *sb = rill_tensor_get_string(b, i, &lb);
        if (la != lb || memcmp(sa, sb, la) != 0) return false;
    }
    return true;
}

/* Adds t (a reference the set takes) unless present: true when added. */
static bool uniq_add(uniq_it *u, rill_tensor *t)
{
    if (2 * (u->n + 1) > u->cap) {
        int64_t nc = u->cap ? 2 * u->cap : 64;
        rill_tensor **s = rill__calloc((size_t)nc, sizeof *s);
        uint64_t *h = rill__calloc((size_t)nc, sizeof *h);
        RILL_CHECK_ALLOC(s);
        RILL_CHECK_ALLOC(h);
        for (int64_t i = 0; i < u->cap; i++) {
            if (!u->seen[i]) continue;
            int64_t j = (int64_t)(u->hash[i] & (uint64_t)(nc - 1));
            while (s[j]) j = (j + 1) & (nc - 1);
            s[j] = u->seen[i];
            h[j] = u->hash[i];
        }
        rill__free(u->seen);
        rill__free(u->hash);
        u->seen = s;
        u->hash = h;
        u->cap = nc;
    }
    uint64_t hv = tensor_hash(t);
    int64_t j = (int64_t)(hv & (uint64_t)(u->cap - 1));
    for (; u->seen[j]; j = (j + 1) & (u->cap - 1))
        if (u->hash[j] == hv && tensor_same(u->seen[j], t)) {
            rill_tensor_free(t);
            return false;
        }
    u->seen[j] = t;
    u->hash[j] = hv;
    u->n++;
    return true;
}

static bool uniq_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    uniq_it *u = (uniq_it *)b;
    for (;;) {
        if (!rill__ds_in_next(&u->o, 0, c, out, end)) return false;
        if (*end) return true;
        if (uniq_add(u, rill_tensor_ref(out[0]))) return true;
        rill__ds_free_elems(out, 1);
    }
}

static void uniq_free(dit *b)
{
    uniq_it *u = (uniq_it *)b;
    for (int64_t i = 0; i < u->cap; i++) rill_tensor_free(u->seen[i]);
    rill__free(u->seen);
    rill__free(u->hash);
    rill__ds_over_it_free(b);
}

static const dit_vt uniq_it_vt = {uniq_next, uniq_free};

static dit *uniq_make(dset *b, dctx *c)
{
    over_it *it = rill__ds_over_it_new((over_ds *)b, &uniq_it_vt, c, sizeof(uniq_it));
    if (!it) return NULL;
    if (it->base.ncomp != 1) {
        rill_status_set(c->s, RILL_INVALID_ARGUMENT,
                        "UniqueDataset only supports inputs with a single component.");
        uniq_free(&it->base);
        return NULL;
    }
    return &it->base;
}

static const dset_vt uniq_vt = {uniq_make, rill__ds_over_free, NULL};

/* ------------------------------------------------------------ ignore_errors ---- */

static bool ignore_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    over_it *it = (over_it *)b;
    for (;;) {
        rill_status *s = rill_status_new();
        dctx c2 = *c;
        c2.s = s;
        bool ok = rill__ds_in_next(it, 0, &c2, out, end);
        rill_code code = rill_status_code(s);
        if (ok || code == RILL_CANCELLED || code == RILL_DEADLINE_EXCEEDED) {
            if (!ok) rill_status_copy(c->s, s);
            rill_status_free(s);
            return ok;
        }
        rill_status_free(s);
    }
}

static const dit_vt ignore_it_vt = {ignore_next, rill__ds_over_it_free};

static dit *ignore_make(dset *b, dctx *c)
{
    over_it *it = rill__ds_over_it_new((over_ds *)b, &ignore_it_vt, c, 0);
    return it ? &it->base : NULL;
}

static const dset_vt ignore_vt = {ignore_make, rill__ds_over_free, NULL};

static void unary_kernel(rill__kctx *ctx)
{
    bool uniq = strcmp(ctx->node->op->name, "UniqueDataset") == 0;
    over_ds *d = rill__ds_over_new(ctx, 1);
    if (!d) return;
    rill__ds_dset_register(&d->base, uniq ? &uniq_vt : &ignore_vt);
    rill__ds_set_handle(ctx, &d->base);
}

/* --------------------------------------------------------------------- scan ---- */

typedef struct scan_ds {
    over_ds o;
    rill_tensor **init;
    int nstate;
} scan_ds;

typedef struct scan_it {
    over_it o;
    rill_tensor **state;
} scan_it;

static void scan_ds_free(dset *b)
{
    scan_ds *d = (scan_ds *)b;
    rill__ds_free_elems(d->init, d->nstate);
    rill__free(d->init);
    rill__ds_over_free(b);
}

static void scan_it_free(dit *b)
{
    scan_it *it = (scan_it *)b;
    rill__ds_free_elems(it->state, ((scan_ds *)it->o.d)->nstate);
    rill__free(it->state);
    rill__ds_over_it_free(b);
}

/* One step of f over (state, element): the new state replaces state, the rest goes to out. */
static bool scan_step(fn_obj *f, dctx *c, rill_tensor *const *cap, rill_tensor **state, int ns,
                      rill_tensor **el, int ne, rill_tensor **out)
{
    int nargs = ns + ne, nouts = f->nouts;
    rill_tensor *a[64], **args = nargs <= 64 ? a : rill__calloc((size_t)nargs, sizeof *args);
    rill_tensor *r[64], **res = nouts <= 64 ? r : rill__calloc((size_t)nouts, sizeof *res);
    RILL_CHECK_ALLOC(args);
    RILL_CHECK_ALLOC(res);
    memcpy(args, state, (size_t)ns * sizeof *args);
    memcpy(args + ns, el, (size_t)ne * sizeof *args);
    bool ok = rill__ds_fn_call(f, c, cap, args, nargs, res);
    if (ok) {
        for (int i = 0; i < ns; i++) {
            if (res[i]->dtype != state[i]->dtype) {
                rill_status_set(c->s, RILL_INVALID_ARGUMENT,
                                "The element types for the new state must match the initial "
                                "state. Expected %s; got %s (%s)",
                                rill_dtype_name(state[i]->dtype), rill_dtype_name(res[i]->dtype),
                                f->op);
                ok = false;
                break;
            }
        }
        if (ok) {
            rill__ds_free_elems(state, ns);
            memcpy(state, res, (size_t)ns * sizeof *res);
            if (out)
                memcpy(out, res + ns, (size_t)(nouts - ns) * sizeof *out);
            else
                rill__ds_free_elems(res + ns, nouts - ns);
        } else {
            rill__ds_free_elems(res, nouts);
        }
    }
    if (args != a) rill__free(args);
    if (res != r) rill__free(res);
    return ok;
}

static bool scan_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    scan_it *it = (scan_it *)b;
    scan_ds *d = (scan_ds *)it->o.d;
    int ne = it->o.in[0]->ncomp;
    rill_tensor *el[64], **e = ne <= 64 ? el : rill__calloc((size_t)ne, sizeof *e);
    RILL_CHECK_ALLOC(e);
    bool ok = rill__ds_in_next(&it->o, 0, c, e, end);
    if (ok && !*end) {
        ok = scan_step(d->o.fn, c, d->o.cap, it->state, d->nstate, e, ne, out);
        rill__ds_free_elems(e, ne);
    }
    if (e != el) rill__free(e);
    return ok;
}

static const dit_vt scan_it_vt = {scan_next, scan_it_free};

static dit *scan_make(dset *b, dctx *c)
{
    scan_ds *d = (scan_ds *)b;
    scan_it *it = (scan_it *)rill__ds_over_it_new(&d->o, &scan_it_vt, c, sizeof(scan_it));
    if (!it) return NULL;
    it->state = rill__calloc((size_t)(d->nstate ? d->nstate : 1), sizeof *it->state);
    RILL_CHECK_ALLOC(it->state);
    for (int i = 0; i < d->nstate; i++) it->state[i] = rill_tensor_ref(d->init[i]);
    it->o.base.ncomp = d->o.fn->nouts - d->nstate;
    return &it->o.base;
}

static const dset_vt scan_vt = {scan_make, scan_ds_free, rill__ds_card_in0};

/* The function of Scan/Reduce and its state count (attr n_state): NULL with ctx failed. */
static fn_obj *state_fn(rill__kctx *ctx, int *ns)
{
    fn_obj *f = rill__ds_node_fn(ctx);
    if (!f) return NULL;
    int64_t n = rill__attr_int(rill__ds_user_node(ctx), "n_state", -1);
    if (n < 0 || n > f->nouts || 1 + n + f->ncaps > ctx->node->ninputs) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s needs n_state (%lld): its initial state's count, at most the "
                        "function's %d outputs, after the dataset in its inputs",
                        f->op, (long long)n, f->nouts);
        rill__ds_fn_unref(f);
        return NULL;
    }
    *ns = (int)n;
    return f;
}

static void scan_kernel(rill__kctx *ctx)
{
    int ns;
    fn_obj *f = state_fn(ctx, &ns);
    if (!f) return;
    scan_ds *d = (scan_ds *)rill__ds_over_new_sized(ctx, 1, sizeof(scan_ds));
    if (!d) {
        rill__ds_fn_unref(f);
        return;
    }
    d->o.fn = f;
    d->nstate = ns;
    d->init = rill__calloc((size_t)(ns ? ns : 1), sizeof *d->init);
    RILL_CHECK_ALLOC(d->init);
    for (int i = 0; i < ns; i++) d->init[i] = rill_tensor_ref(ctx->inputs[1 + i]);
    rill__ds_take_captures(ctx, &d->o, f);
    rill__ds_dset_register(&d->o.base, &scan_vt);
    rill__ds_set_handle(ctx, &d->o.base);
}

/* ------------------------------------------- reading a dataset in a kernel ---- */

/* An iterator over input 0's dataset for the kernel (NULL: ctx failed). */
static dit *kernel_iter(rill__kctx *ctx, dctx *c, rill_status *s)
{
    rill__ds_dctx_of(ctx, c, s, ctx->node->name);
    dset *d = rill__ds_input_dset(ctx, 0);
    if (!d) return NULL;
    dit *it = rill__ds_dset_make(d, c);
    rill__ds_dset_unref(d);
    if (!it) rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
    return it;
}

static void reduce_kernel(rill__kctx *ctx)
{
    int ns;
    fn_obj *f = state_fn(ctx, &ns);
    if (!f) return;
    int nout = ctx->node->noutputs;
    rill_status *s = rill_status_new();
    dctx c;
    dit *it = NULL;
    rill_tensor **state = rill__calloc((size_t)ns + 1, sizeof *state);
    RILL_CHECK_ALLOC(state);
    if (nout != ns || f->nouts != ns) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s: the function returns %d values and the node has %d outputs for a "
                        "state of %d",
                        f->op, f->nouts, nout, ns);
        goto done;
    }
    it = kernel_iter(ctx, &c, s);
    if (!it) goto done;
    for (int i = 0; i < ns; i++) state[i] = rill_tensor_ref(ctx->inputs[1 + i]);
    rill_tensor *const *cap = ctx->inputs + ctx->node->ninputs - f->ncaps;
    int ne = it->ncomp;
    rill_tensor **e = rill__calloc((size_t)ne + 1, sizeof *e);
    RILL_CHECK_ALLOC(e);
    for (;;) {
        bool end = false;
        if (!it->vt->next(it, &c, e, &end)) break;
        if (end) {
            for (int i = 0; i < ns; i++) {
                rill__kctx_set_output(ctx, i, state[i]);
                state[i] = NULL;
            }
            break;
        }
        bool ok = scan_step(f, &c, cap, state, ns, e, ne, NULL);
        rill__ds_free_elems(e, ne);
        if (!ok) break;
    }
    rill__free(e);
    if (!rill_status_ok(s)) rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
done:
    rill__ds_free_elems(state, ns);
    rill__free(state);
    rill__ds_dit_free(it);
    rill_status_free(s);
    rill__ds_fn_unref(f);
}

static void single_kernel(rill__kctx *ctx)
{
    int nc = ctx->node->noutputs;
    rill_status *s = rill_status_new();
    dctx c;
    dit *it = kernel_iter(ctx, &c, s);
    if (it && it->ncomp != nc)
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "the dataset has %d components, DatasetToSingleElement %d outputs",
                        it->ncomp, nc);
    if (it && rill__kctx_ok(ctx)) {
        rill_tensor **e = rill__calloc((size_t)nc * 2, sizeof *e);
        RILL_CHECK_ALLOC(e);
        bool end = false;
        if (!it->vt->next(it, &c, e, &end)) {
            rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
        } else if (end) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Dataset was empty.");
        } else {
            bool end2 = false;
            if (!it->vt->next(it, &c, e + nc, &end2)) {
                rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
            } else if (!end2) {
                rill__ds_free_elems(e + nc, nc);
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Dataset had more than one element.");
            }
            for (int i = 0; i < nc; i++) {
                if (rill__kctx_ok(ctx)) {
                    rill__kctx_set_output(ctx, i, e[i]);
                    e[i] = NULL;
                }
            }
            rill__ds_free_elems(e, nc);
        }
        rill__free(e);
    }
    rill__ds_dit_free(it);
    rill_status_free(s);
}

static void cardinality_kernel(rill__kctx *ctx)
{
    dset *d = rill__ds_input_dset(ctx, 0);
    if (!d) return;
    rill_tensor *t = rill_tensor_scalar_int64(rill__ds_card(d));
    RILL_CHECK_ALLOC(t);
    rill__ds_dset_unref(d);
    rill__kctx_set_output(ctx, 0, t);
}

/* ------------------------------------------------------------------- window ---- */

/* A dataset of n elements of ncomp tensors (a window's component, group_by_window's group). */
typedef struct list_ds {
    dset base;
    rill_tensor **t;
    int64_t n;
    int ncomp;
} list_ds;

typedef struct list_it {
    dit base;
    list_ds *d;
    int64_t i;
} list_it;

static bool list_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    (void)c;
    list_it *it = (list_it *)b;
    int nc = it->d->ncomp;
    *end = it->i >= it->d->n;
    if (*end) return true;
    for (int k = 0; k < nc; k++) out[k] = rill_tensor_ref(it->d->t[it->i * nc + k]);
    it->i++;
    return true;
}

static void list_it_free(dit *b)
{
    list_it *it = (list_it *)b;
    rill__ds_dset_unref(&it->d->base);
    rill__free(it);
}

static const dit_vt list_it_vt = {list_next, list_it_free};

static dit *list_make(dset *b, dctx *c)
{
    (void)c;
    list_it *it = rill__calloc(1, sizeof *it);
    RILL_CHECK_ALLOC(it);
    it->base = (dit){&list_it_vt, ((list_ds *)b)->ncomp};
    it->d = (list_ds *)b;
    atomic_fetch_add(&b->refs, 1);
    return &it->base;
}

static void list_free(dset *b)
{
    list_ds *d = (list_ds *)b;
    rill__ds_free_elems(d->t, (int)(d->n * d->ncomp));
    rill__free(d->t);
    rill__free(d);
}

static int64_t list_card(dset *b)
{
    return ((list_ds *)b)->n;
}

static const dset_vt list_vt = {list_make, list_free, list_card};

typedef struct win_ds {
    over_ds o;
    int64_t size, shift, stride;
    bool drop;
} win_ds;

/* buf: nbuf buffered elements (alloc of them), in_end once the input ended */
static bool win_pull(over_it *it, dctx *c, int nc)
{
    if (it->nbuf == it->alloc) {
        it->alloc = it->alloc ? 2 * it->alloc : 8;
        it->buf = rill__realloc(it->buf, (size_t)(it->alloc * nc) * sizeof *it->buf);
        RILL_CHECK_ALLOC(it->buf);
    }
    if (!rill__ds_in_next(it, 0, c, it->buf + it->nbuf * nc, &it->in_end)) return false;
    if (!it->in_end) it->nbuf++;
    return true;
}

static bool win_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    over_it *it = (over_it *)b;
    win_ds *d = (win_ds *)it->d;
    int nc = it->in[0]->ncomp;
    if (it->nbuf == 0 && it->in_end) {
        *end = true;
        return true;
    }
    int64_t target = (d->size - 1) * d->stride + 1;
    while (!it->in_end && it->nbuf < target)
        if (!win_pull(it, c, nc)) return false;
    if (it->nbuf == 0 || (d->drop && it->nbuf < target)) {
        *end = true;
        return true;
    }
    int64_t n = 1 + (it->nbuf - 1) / d->stride;
    for (int k = 0; k < nc; k++) {
        list_ds *l = rill__calloc(1, sizeof *l);
        RILL_CHECK_ALLOC(l);
        l->t = rill__calloc((size_t)n, sizeof *l->t);
        RILL_CHECK_ALLOC(l->t);
        l->n = n;
        l->ncomp = 1;
        for (int64_t i = 0; i < n; i++) l->t[i] = rill_tensor_ref(it->buf[i * d->stride * nc + k]);
        rill__ds_dset_register(&l->base, &list_vt);
        out[k] = rill__ds_handle_tensor(&l->base);
    }
    if (d->shift >= it->nbuf) {
        for (int64_t i = it->nbuf; !it->in_end && i < d->shift; i++) {
            rill_tensor *tmp[64], **e = nc <= 64 ? tmp : rill__calloc((size_t)nc, sizeof *e);
            RILL_CHECK_ALLOC(e);
            bool ok = rill__ds_in_next(it, 0, c, e, &it->in_end);
            if (ok && !it->in_end) rill__ds_free_elems(e, nc);
            if (e != tmp) rill__free(e);
            if (!ok) {
                rill__ds_free_elems(out, nc);
                return false;
            }
        }
        rill__ds_free_elems(it->buf, (int)(it->nbuf * nc));
        it->nbuf = 0;
    } else {
        rill__ds_free_elems(it->buf, (int)(d->shift * nc));
        memmove(it->buf, it->buf + d->shift * nc,
                (size_t)((it->nbuf - d->shift) * nc) * sizeof *it->buf);
        it->nbuf -= d->shift;
    }
    *end = false;
    return true;
}

static const dit_vt win_it_vt = {win_next, rill__ds_over_it_free};

static dit *win_make(dset *b, dctx *c)
{
    over_it *it = rill__ds_over_it_new((over_ds *)b, &win_it_vt, c, 0);
    return it ? &it->base : NULL;
}

static int64_t win_card(dset *b)
{
    win_ds *d = (win_ds *)b;
    int64_t n = rill__ds_card(d->o.in[0]);
    if (n == RILL_DS_INFINITE || n == RILL_DS_UNKNOWN) return n;
    if (d->drop) {
        int64_t rest = n - ((d->size - 1) * d->stride + 1);
        return rest < 0 ? 0 : rest / d->shift + 1;
    }
    return n / d->shift + (n % d->shift == 0 ? 0 : 1);
}

static const dset_vt win_vt = {win_make, rill__ds_over_free, win_card};

static void window_kernel(rill__kctx *ctx)
{
    static const char *const what[] = {"size", "shift", "stride"};
    int64_t v[3];
    for (int i = 0; i < 3; i++) {
        v[i] = rill__ds_in_i64(ctx, 1 + i);
        if (v[i] <= 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Window %s must be greater than zero, but got %lld.", what[i],
                            (long long)v[i]);
            return;
        }
    }
    win_ds *d = (win_ds *)rill__ds_over_new_sized(ctx, 1, sizeof(win_ds));
    if (!d) return;
    d->size = v[0];
    d->shift = v[1];
    d->stride = v[2];
    d->drop = *(const bool *)rill_tensor_data(ctx->inputs[4]);
    rill__ds_dset_register(&d->o.base, &win_vt);
    rill__ds_set_handle(ctx, &d->o.base);
}

/* ------------------------------------------------------------- padded_batch ---- */

typedef struct pb_ds {
    over_ds o; /* a: batch size, b: drop_remainder */
    int n;
    rill_tensor **shape, **pad; /* per component: the padded shape, the padding value */
} pb_ds;

static void pb_ds_free(dset *b)
{
    pb_ds *d = (pb_ds *)b;
    rill__ds_free_elems(d->shape, d->n);
    rill__ds_free_elems(d->pad, d->n);
    rill__free(d->shape);
    rill__free(d->pad);
    rill__ds_over_free(b);
}

/* Copies src into the corner of dst (row j of the batch; dst's dims [n, D...] >= src's). */
static void pad_copy(rill_tensor *dst, int64_t j, const rill_tensor *src)
{
    int r = src->shape.rank;
    size_t es = rill_dtype_size(src->dtype);
    int64_t per = 1;
    for (int i = 1; i <= r; i++) per *= dst->shape.dims[i];
    if (src->numel == 0) return;
    int64_t row = r ? src->shape.dims[r - 1] : 1;
    int64_t nrows = src->numel / row;
    int64_t idx[RILL_MAX_DIMS] = {0};
    for (int64_t q = 0; q < nrows; q++) {
        int64_t off = 0; /* the row's start in dst's element */
        for (int i = 0; i + 1 < r; i++) off = (off + idx[i]) * dst->shape.dims[i + 2];
        off += j * per;
        if (src->dtype == RILL_STRING) {
            for (int64_t k = 0; k < row; k++) {
                size_t len;
                const char *s = rill_tensor_get_string(src, q * row + k, &len);
                rill_tensor_set_string(dst, off + k, s, len);
            }
        } else {
            memcpy((char *)rill_tensor_data(dst) + (size_t)off * es,
                   (const char *)rill_tensor_data(src) + (size_t)(q * row) * es, (size_t)row * es);
        }
        for (int i = r - 2; i >= 0; i--) { /* the next row's index */
            if (++idx[i] < src->shape.dims[i]) break;
            idx[i] = 0;
        }
    }
}

static bool pb_component(pb_ds *d, dctx *c, int k, rill_tensor **el, int64_t n, int nc,
                         rill_tensor **out)
{
    const rill_tensor *ps = d->shape[k];
    int r = (int)ps->numel;
    const int64_t *want = rill_tensor_data(ps);
    int64_t dims[RILL_MAX_DIMS + 1];
    dims[0] = n;
    if (r >= RILL_MAX_DIMS) return set_err(c, RILL_INVALID_ARGUMENT, "padded shape rank too big");
    for (int i = 0; i < r; i++) dims[i + 1] = want[i] >= 0 ? want[i] : 0;
    for (int64_t j = 0; j < n; j++) {
        const rill_tensor *t = el[j * nc + k];
        if (t->shape.rank != r) {
            rill_status_set(c->s, RILL_INVALID_ARGUMENT,
                            "All elements in a batch must have the same rank as the padded shape "
                            "for component%d: expected rank %d but got element with rank %d",
                            k, r, t->shape.rank);
            return false;
        }
        if (t->dtype != d->pad[k]->dtype) {
            rill_status_set(c->s, RILL_INVALID_ARGUMENT,
                            "Mismatched type between padding value %d and input elements %d", k, k);
            return false;
        }
        for (int i = 0; i < r; i++) {
            if (want[i] >= 0 && t->shape.dims[i] > want[i])
                return set_err(c, RILL_INVALID_ARGUMENT,
                               "Attempted to pad to a smaller size than the input element.");
            if (want[i] < 0 && t->shape.dims[i] > dims[i + 1]) dims[i + 1] = t->shape.dims[i];
        }
    }
    rill_tensor *o = rill_tensor_new(d->pad[k]->dtype, dims, r + 1);
    RILL_CHECK_ALLOC(o);
    const rill_tensor *pv = d->pad[k];
    if (pv->dtype == RILL_STRING) {
        size_t len;
        const char *s = rill_tensor_get_string(pv, 0, &len);
        for (int64_t q = 0; q < o->numel; q++) rill_tensor_set_string(o, q, s, len);
    } else {
        size_t es = rill_dtype_size(pv->dtype);
        char *p = rill_tensor_data(o);
        for (int64_t q = 0; q < o->numel; q++) memcpy(p + (size_t)q * es, rill_tensor_data(pv), es);
    }
    for (int64_t j = 0; j < n; j++) pad_copy(o, j, el[j * nc + k]);
    out[k] = o;
    return true;
}

static bool pb_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    over_it *it = (over_it *)b;
    pb_ds *d = (pb_ds *)it->d;
    int nc = b->ncomp;
    int64_t bs = d->o.a;
    if (it->done) {
        *end = true;
        return true;
    }
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
    if (!ok || n == 0 || (n < bs && d->o.b)) {
        rill__ds_free_elems(el, (int)(n * nc));
        *end = ok;
        return ok;
    }
    for (int k = 0; k < nc && ok; k++) ok = pb_component(d, c, k, el, n, nc, out);
    if (!ok)
        for (int k = 0; k < nc; k++) {
            rill_tensor_free(out[k]);
            out[k] = NULL;
        }
    rill__ds_free_elems(el, (int)(n * nc));
    *end = false;
    return ok;
}

static const dit_vt pb_it_vt = {pb_next, rill__ds_over_it_free};

static dit *pb_make(dset *b, dctx *c)
{
    pb_ds *d = (pb_ds *)b;
    over_it *it = rill__ds_over_it_new(&d->o, &pb_it_vt, c, 0);
    if (!it) return NULL;
    if (it->base.ncomp != d->n) {
        rill_status_set(c->s, RILL_INVALID_ARGUMENT,
                        "Number of padded shapes (%d) must match the number of components in the "
                        "input dataset's elements (%d)",
                        d->n, it->base.ncomp);
        rill__ds_over_it_free(&it->base);
        return NULL;
    }
    it->buf = rill__calloc((size_t)(d->o.a * d->n), sizeof *it->buf);
    RILL_CHECK_ALLOC(it->buf);
    return &it->base;
}

static const dset_vt pb_vt = {pb_make, pb_ds_free, rill__ds_batch_card};

static void padded_batch_kernel(rill__kctx *ctx)
{
    int64_t bs = rill__ds_in_i64(ctx, 1);
    if (bs <= 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Batch size must be greater than zero.");
        return;
    }
    int n = (ctx->node->ninputs - 3) / 2;
    for (int k = 0; k < n; k++)
        if (ctx->inputs[2 + k]->shape.rank != 1 || ctx->inputs[2 + n + k]->numel != 1) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "padded_shapes[%d] must be a vector and padding_values[%d] a scalar", k,
                            k);
            return;
        }
    pb_ds *d = (pb_ds *)rill__ds_over_new_sized(ctx, 1, sizeof(pb_ds));
    if (!d) return;
    d->o.a = bs;
    d->o.b = *(const bool *)rill_tensor_data(ctx->inputs[ctx->node->ninputs - 1]);
    d->n = n;
    d->shape = rill__calloc((size_t)n, sizeof *d->shape);
    d->pad = rill__calloc((size_t)n, sizeof *d->pad);
    RILL_CHECK_ALLOC(d->shape);
    RILL_CHECK_ALLOC(d->pad);
    for (int k = 0; k < n; k++) {
        d->shape[k] = rill_tensor_ref(ctx->inputs[2 + k]);
        d->pad[k] = rill_tensor_ref(ctx->inputs[2 + n + k]);
    }
    rill__ds_dset_register(&d->o.base, &pb_vt);
    rill__ds_set_handle(ctx, &d->o.base);
}

/* ------------------------------------------------ directed interleave (choose) ---- */

typedef struct dir_it {
    over_it o; /* in[0]: the selector; in[1..]: the data */
    bool *gone;
    int active;
} dir_it;

static bool dir_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    dir_it *it = (dir_it *)b;
    int nd = it->o.nin - 1;
    for (;;) {
        rill_tensor *sel = NULL;
        bool e = false;
        if (it->active == 0) {
            *end = true;
            return true;
        }
        if (!rill__ds_in_next(&it->o, 0, c, &sel, &e)) return false;
        if (e) {
            *end = true;
            return true;
        }
        if (sel->dtype != RILL_INT64 || sel->numel != 1) {
            rill_tensor_free(sel);
            return set_err(c, RILL_INVALID_ARGUMENT,
                           "The selector dataset must produce scalar int64 elements.");
        }
        int64_t i = rill_tensor_get_int64(sel, 0);
        rill_tensor_free(sel);
        if (i < 0 || i >= nd) {
            rill_status_set(c->s, RILL_INVALID_ARGUMENT, "Selector index out of range: %lld >= %d",
                            (long long)i, nd);
            return false;
        }
        if (it->gone[i]) continue;
        if (!rill__ds_in_next(&it->o, 1 + (int)i, c, out, &e)) return false;
        if (!e) {
            *end = false;
            return true;
        }
        if (it->o.d->b) {
            *end = true;
            return true;
        }
        it->gone[i] = true;
        it->active--;
    }
}

static void dir_free(dit *b)
{
    rill__free(((dir_it *)b)->gone);
    rill__ds_over_it_free(b);
}

static const dit_vt dir_it_vt = {dir_next, dir_free};

static dit *dir_make(dset *b, dctx *c)
{
    over_ds *d = (over_ds *)b;
    dir_it *it = (dir_it *)rill__ds_over_it_new(d, &dir_it_vt, c, sizeof(dir_it));
    if (!it) return NULL;
    int nd = d->nin - 1;
    it->gone = rill__calloc((size_t)nd, sizeof *it->gone);
    RILL_CHECK_ALLOC(it->gone);
    it->active = nd;
    it->o.base.ncomp = it->o.in[1]->ncomp;
    for (int i = 2; i <= nd; i++)
        if (it->o.in[i]->ncomp != it->o.base.ncomp) {
            rill_status_set(c->s, RILL_INVALID_ARGUMENT,
                            "DirectedInterleaveDataset '%s': the data inputs' elements differ in "
                            "their component counts",
                            d->name);
            dir_free(&it->o.base);
            return NULL;
        }
    return &it->o.base;
}

static int64_t dir_card(dset *b)
{
    over_ds *d = (over_ds *)b;
    for (int i = 1; i < d->nin; i++)
        if (rill__ds_card(d->in[i]) == RILL_DS_INFINITE) return RILL_DS_INFINITE;
    return RILL_DS_UNKNOWN;
}

static const dset_vt dir_vt = {dir_make, rill__ds_over_free, dir_card};

static void directed_kernel(rill__kctx *ctx)
{
    over_ds *d = rill__ds_over_new(ctx, ctx->node->ninputs);
    if (!d) return;
    d->b = rill__attr_bool(rill__ds_user_node(ctx), "stop_on_empty_dataset", false);
    rill__ds_dset_register(&d->base, &dir_vt);
    rill__ds_set_handle(ctx, &d->base);
}

/* -------------------------------------------------------------------- cache ---- */

typedef struct cache_ds {
    over_ds o;
    pthread_mutex_t mu;
    char *file;          /* NULL: in memory */
    rill_tensor **elems; /* complete: n elements of ncomp */
    int64_t n;
    int ncomp;
    bool complete;
} cache_ds;

typedef struct cache_it {
    over_it o;       /* reading the input (writer), or nin 0 (reader) */
    rill_tensor **w; /* the writer's elements so far (memory) */
    int64_t nw, aw;
    FILE *fw, *fr; /* the file being written / read */
    char *tmp;
    int64_t i; /* reader: the next element */
} cache_it;

static void cache_ds_free(dset *b)
{
    cache_ds *d = (cache_ds *)b;
    rill__ds_free_elems(d->elems, (int)(d->n * d->ncomp));
    rill__free(d->elems);
    rill__free(d->file);
    pthread_mutex_destroy(&d->mu);
    rill__ds_over_free(b);
}

static void cache_it_free(dit *b)
{
    cache_it *it = (cache_it *)b;
    rill__ds_free_elems(it->w, (int)(it->nw * b->ncomp));
    rill__free(it->w);
    if (it->fw) {
        fclose(it->fw);
        remove(it->tmp);
    }
    if (it->fr) fclose(it->fr);
    rill__free(it->tmp);
    rill__ds_over_it_free(b);
}

/* The file's framing: "RILLCACHE1", ncomp (int32); per element per component: dtype, rank
 * (int32), dims (int64), then the values (numbers: their bytes; strings: uint64 length and
 * bytes each); after the last element, a component count of -1. */
static bool put(FILE *f, const void *p, size_t n)
{
    return fwrite(p, 1, n, f) == n;
}

static bool get(FILE *f, void *p, size_t n)
{
    return fread(p, 1, n, f) == n;
}

static bool write_tensor(FILE *f, const rill_tensor *t)
{
    int32_t h[2] = {(int32_t)t->dtype, t->shape.rank};
    bool ok =
        put(f, h, sizeof h) && put(f, t->shape.dims, (size_t)t->shape.rank * sizeof *t->shape.dims);
    if (t->dtype != RILL_STRING) return ok && put(f, rill_tensor_data(t), rill_tensor_nbytes(t));
    for (int64_t i = 0; ok && i < t->numel; i++) {
        size_t len;
        const char *s = rill_tensor_get_string(t, i, &len);
        uint64_t l = len;
        ok = put(f, &l, sizeof l) && put(f, s, len);
    }
    return ok;
}

static rill_tensor *read_tensor(FILE *f)
{
    int32_t h[2];
    int64_t dims[RILL_MAX_DIMS];
    if (!get(f, h, sizeof h) || h[1] < 0 || h[1] > RILL_MAX_DIMS ||
        !rill_dtype_is_valid((rill_dtype)h[0]) || !get(f, dims, (size_t)h[1] * sizeof *dims))
        return NULL;
    for (int i = 0; i < h[1]; i++)
        if (dims[i] < 0) return NULL;
    rill_tensor *t = rill_tensor_new((rill_dtype)h[0], dims, h[1]);
    if (!t) return NULL;
    bool ok = true;
    if (t->dtype != RILL_STRING) {
        ok = get(f, rill_tensor_data(t), rill_tensor_nbytes(t));
    } else {
        for (int64_t i = 0; ok && i < t->numel; i++) {
            uint64_t l;
            ok = get(f, &l, sizeof l) && l < ((uint64_t)1 << 40);
            char *s = ok ? rill__malloc(l ? l : 1) : NULL;
            ok = ok && s && get(f, s, l);
            if (ok) rill_tensor_set_string(t, i, s, l);
            rill__free(s);
        }
    }
    if (!ok) {
        rill_tensor_free(t);
        return NULL;
    }
    return t;
}

static bool cache_file_err(dctx *c, const char *what, const char *file)
{
    rill_status_set(c->s, RILL_DATA_LOSS, "%s the cache file %s", what, file);
    return false;
}

static bool cache_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    cache_it *it = (cache_it *)b;
    cache_ds *d = (cache_ds *)it->o.d;
    int nc = b->ncomp;
    if (it->fr) { /* reading the file */
        int32_t k;
        if (!get(it->fr, &k, sizeof k)) return cache_file_err(c, "Truncated", d->file);
        if (k == -1) {
            *end = true;
            return true;
        }
        if (k != nc) return cache_file_err(c, "Corrupt", d->file);
        for (int i = 0; i < nc; i++) {
            out[i] = read_tensor(it->fr);
            if (!out[i]) {
                rill__ds_free_elems(out, i);
                return cache_file_err(c, "Truncated or corrupt", d->file);
            }
        }
        *end = false;
        return true;
    }
    if (it->o.nin == 0) { /* reading the memory cache */
        *end = it->i >= d->n;
        if (*end) return true;
        for (int i = 0; i < nc; i++) out[i] = rill_tensor_ref(d->elems[it->i * nc + i]);
        it->i++;
        return true;
    }
    if (!rill__ds_in_next(&it->o, 0, c, out, end)) return false;
    if (!*end) {
        if (it->fw) {
            int32_t k = nc;
            bool ok = put(it->fw, &k, sizeof k);
            for (int i = 0; ok && i < nc; i++) ok = write_tensor(it->fw, out[i]);
            if (!ok) {
                rill__ds_free_elems(out, nc);
                return cache_file_err(c, "Failed to write", it->tmp);
            }
        } else {
            if (it->nw == it->aw) {
                it->aw = it->aw ? 2 * it->aw : 16;
                it->w = rill__realloc(it->w, (size_t)(it->aw * nc) * sizeof *it->w);
                RILL_CHECK_ALLOC(it->w);
            }
            for (int i = 0; i < nc; i++) it->w[it->nw * nc + i] = rill_tensor_ref(out[i]);
            it->nw++;
        }
        return true;
    }
    /* the end: the cache is complete */
    if (it->fw) {
        int32_t k = -1;
        bool ok = put(it->fw, &k, sizeof k);
        ok = fclose(it->fw) == 0 && ok;
        it->fw = NULL;
        if (!ok || rename(it->tmp, d->file) != 0) {
            remove(it->tmp);
            return cache_file_err(c, "Failed to write", d->file);
        }
        return true;
    }
    pthread_mutex_lock(&d->mu);
    if (!d->complete) {
        d->complete = true;
        d->elems = it->w;
        d->n = it->nw;
        d->ncomp = nc;
        it->w = NULL;
        it->nw = 0;
    }
    pthread_mutex_unlock(&d->mu);
    return true;
}

static const dit_vt cache_it_vt = {cache_next, cache_it_free};

static dit *cache_make(dset *b, dctx *c)
{
    cache_ds *d = (cache_ds *)b;
    if (d->file) {
        FILE *f = fopen(d->file, "rb");
        if (f) { /* a complete cache: read it (the input is not run) */
            char magic[10];
            int32_t k;
            if (!get(f, magic, sizeof magic) || memcmp(magic, "RILLCACHE1", 10) != 0 ||
                !get(f, &k, sizeof k) || k < 0) {
                fclose(f);
                cache_file_err(c, "Not a cache:", d->file);
                return NULL;
            }
            cache_it *it = rill__calloc(1, sizeof *it);
            RILL_CHECK_ALLOC(it);
            it->o.base = (dit){&cache_it_vt, k};
            it->o.d = &d->o;
            atomic_fetch_add(&b->refs, 1);
            it->fr = f;
            return &it->o.base;
        }
    } else {
        pthread_mutex_lock(&d->mu);
        bool complete = d->complete;
        pthread_mutex_unlock(&d->mu);
        if (complete) {
            cache_it *it = rill__calloc(1, sizeof *it);
            RILL_CHECK_ALLOC(it);
            it->o.base = (dit){&cache_it_vt, d->ncomp};
            it->o.d = &d->o;
            atomic_fetch_add(&b->refs, 1);
            return &it->o.base;
        }
    }
    cache_it *it = (cache_it *)rill__ds_over_it_new(&d->o, &cache_it_vt, c, sizeof(cache_it));
    if (!it) return NULL;
    if (d->file) {
        static atomic_int seq;
        it->tmp = rill__asprintf("%s.tmp-%d-%d", d->file, (int)getpid(), atomic_fetch_add(&seq, 1));
        it->fw = fopen(it->tmp, "wb");
        int32_t k = it->o.base.ncomp;
        if (!it->fw || !put(it->fw, "RILLCACHE1", 10) || !put(it->fw, &k, sizeof k)) {
            rill_status_set(c->s, RILL_NOT_FOUND, "Failed to create the cache file %s", it->tmp);
            cache_it_free(&it->o.base);
            return NULL;
        }
    }
    return &it->o.base;
}

static const dset_vt cache_vt = {cache_make, cache_ds_free, rill__ds_card_in0};

static void cache_kernel(rill__kctx *ctx)
{
    size_t len;
    const char *fn = rill_tensor_get_string(ctx->inputs[1], 0, &len);
    cache_ds *d = (cache_ds *)rill__ds_over_new_sized(ctx, 1, sizeof(cache_ds));
    if (!d) return;
    pthread_mutex_init(&d->mu, NULL);
    if (len) d->file = rill__asprintf("%.*s.rill-cache", (int)len, fn);
    rill__ds_dset_register(&d->o.base, &cache_vt);
    rill__ds_set_handle(ctx, &d->o.base);
}

/* ---------------------------------------------------------- group_by_window ---- */

/* TF's GroupByWindowDataset: each element goes to the group of key_func's key (int64); a group
 * of window_size_func(key) elements is flushed through reduce_func(key, dataset of them), whose
 * dataset's elements are the output; at the input's end the groups left are flushed in
 * ascending key order (TF's std::map). */
typedef struct gbw_fns {
    fn_obj *key, *reduce, *wsize;
} gbw_fns;

static void gbw_fns_free(void *p)
{
    gbw_fns *f = p;
    rill__ds_fn_unref(f->key);
    rill__ds_fn_unref(f->reduce);
    rill__ds_fn_unref(f->wsize);
    rill__free(f);
}

typedef struct gbw_ds {
    over_ds o;
    fn_obj *key, *reduce, *wsize;
    rill_tensor **cap; /* key's, reduce's, then wsize's captures */
    int ncap;
    int ncomp; /* of reduce_func's datasets */
} gbw_ds;

typedef struct group {
    int64_t key, size;
    rill_tensor **t; /* n elements of ncomp */
    int64_t n, cap;
} group;

typedef struct gbw_it {
    over_it o;
    group *g; /* sorted by key */
    int64_t ng, capg;
    int64_t *wkeys, *wsizes; /* the window sizes known */
    int64_t nw, capw;
    dit *cur;
    bool end_input;
} gbw_it;

static void gbw_ds_free(dset *b)
{
    gbw_ds *d = (gbw_ds *)b;
    rill__ds_fn_unref(d->key);
    rill__ds_fn_unref(d->reduce);
    rill__ds_fn_unref(d->wsize);
    rill__ds_free_elems(d->cap, d->ncap);
    rill__free(d->cap);
    rill__ds_over_free(b);
}

static void gbw_it_free(dit *b)
{
    gbw_it *it = (gbw_it *)b;
    int nc = it->o.in[0] ? it->o.in[0]->ncomp : 0;
    for (int64_t i = 0; i < it->ng; i++) {
        rill__ds_free_elems(it->g[i].t, (int)(it->g[i].n * nc));
        rill__free(it->g[i].t);
    }
    rill__free(it->g);
    rill__free(it->wkeys);
    rill__free(it->wsizes);
    rill__ds_dit_free(it->cur);
    rill__ds_over_it_free(b);
}

/* A scalar int64 result of f, or false with c->s set (TF's message). */
static bool scalar_i64(fn_obj *f, dctx *c, rill_tensor *const *cap, rill_tensor *const *in, int nin,
                       const char *what, int64_t *v)
{
    rill_tensor *r = NULL;
    if (!rill__ds_fn_call(f, c, cap, in, nin, &r)) return false;
    bool ok = r->dtype == RILL_INT64 && r->numel == 1;
    if (ok) *v = rill_tensor_get_int64(r, 0);
    rill_tensor_free(r);
    if (!ok) rill_status_set(c->s, RILL_INVALID_ARGUMENT, "`%s` must return a scalar int64.", what);
    return ok;
}

/* Group i becomes the current iterator: reduce_func(key, its dataset); the group is dropped. */
static bool gbw_flush(gbw_it *it, dctx *c, int64_t i)
{
    gbw_ds *d = (gbw_ds *)it->o.d;
    group g = it->g[i];
    memmove(it->g + i, it->g + i + 1, (size_t)(it->ng - i - 1) * sizeof *it->g);
    it->ng--;
    list_ds *l = rill__calloc(1, sizeof *l);
    RILL_CHECK_ALLOC(l);
    l->t = g.t;
    l->n = g.n;
    l->ncomp = it->o.in[0]->ncomp;
    rill__ds_dset_register(&l->base, &list_vt);
    rill_tensor *args[2] = {rill_tensor_scalar_int64(g.key), rill__ds_handle_tensor(&l->base)};
    RILL_CHECK_ALLOC(args[0]);
    rill_tensor *h = NULL;
    bool ok = rill__ds_fn_call(d->reduce, c, d->cap + d->key->ncaps, args, 2, &h);
    rill__ds_free_elems(args, 2);
    if (!ok) return false;
    dset *ds = rill__ds_lookup(h);
    rill_tensor_free(h);
    if (!ds) return set_err(c, RILL_INVALID_ARGUMENT, "`reduce_func` must return a dataset");
    it->cur = rill__ds_dset_make(ds, c);
    rill__ds_dset_unref(ds);
    if (!it->cur) return false;
    if (it->cur->ncomp != d->ncomp) {
        rill__ds_dit_free(it->cur);
        it->cur = NULL;
        return set_err(c, RILL_INVALID_ARGUMENT,
                       "`reduce_func` returned a dataset of another component count");
    }
    return true;
}

/* The element el (nc tensors, taken) into its group; *full: the group's index when it filled. */
static bool gbw_add(gbw_it *it, dctx *c, rill_tensor **el, int nc, int64_t *full)
{
    gbw_ds *d = (gbw_ds *)it->o.d;
    int64_t key;
    *full = -1;
    if (!scalar_i64(d->key, c, d->cap, el, nc, "key_func", &key)) return false;
    int64_t w = 0;
    int64_t k = 0;
    for (; k < it->nw && it->wkeys[k] != key; k++) {
    }
    if (k < it->nw) {
        w = it->wsizes[k];
    } else {
        rill_tensor *kt = rill_tensor_scalar_int64(key);
        RILL_CHECK_ALLOC(kt);
        bool ok = scalar_i64(d->wsize, c, d->cap + d->key->ncaps + d->reduce->ncaps, &kt, 1,
                             "window_size_func", &w);
        rill_tensor_free(kt);
        if (!ok) return false;
        if (w <= 0) {
            rill_status_set(c->s, RILL_INVALID_ARGUMENT,
                            "Window size must be greater than zero, but got %lld.", (long long)w);
            return false;
        }
        if (it->nw == it->capw) {
            it->capw = it->capw ? 2 * it->capw : 8;
            it->wkeys = rill__realloc(it->wkeys, (size_t)it->capw * sizeof *it->wkeys);
            it->wsizes = rill__realloc(it->wsizes, (size_t)it->capw * sizeof *it->wsizes);
            RILL_CHECK_ALLOC(it->wkeys);
            RILL_CHECK_ALLOC(it->wsizes);
        }
        it->wkeys[it->nw] = key;
        it->wsizes[it->nw++] = w;
    }
    int64_t i = 0;
    while (i < it->ng && it->g[i].key < key) i++;
    if (i == it->ng || it->g[i].key != key) {
        if (it->ng == it->capg) {
            it->capg = it->capg ? 2 * it->capg : 8;
            it->g = rill__realloc(it->g, (size_t)it->capg * sizeof *it->g);
            RILL_CHECK_ALLOC(it->g);
        }
        memmove(it->g + i + 1, it->g + i, (size_t)(it->ng - i) * sizeof *it->g);
        it->g[i] = (group){key, w, NULL, 0, 0};
        it->ng++;
    }
    group *g = &it->g[i];
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 4;
        g->t = rill__realloc(g->t, (size_t)(g->cap * nc) * sizeof *g->t);
        RILL_CHECK_ALLOC(g->t);
    }
    memcpy(g->t + g->n * nc, el, (size_t)nc * sizeof *el);
    g->n++;
    if (g->n == g->size) *full = i;
    return true;
}

static bool gbw_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    gbw_it *it = (gbw_it *)b;
    int nc = it->o.in[0]->ncomp;
    rill_tensor *el[64], **e = nc <= 64 ? el : rill__calloc((size_t)nc, sizeof *e);
    RILL_CHECK_ALLOC(e);
    bool ok = true;
    do {
        if (it->cur) {
            bool ge = false;
            if (!(ok = it->cur->vt->next(it->cur, c, out, &ge))) break;
            if (!ge) {
                *end = false;
                break;
            }
            rill__ds_dit_free(it->cur);
            it->cur = NULL;
        }
        while (!it->end_input) {
            if (!(ok = rill__ds_in_next(&it->o, 0, c, e, &it->end_input))) break;
            if (it->end_input) break;
            int64_t full;
            if (!(ok = gbw_add(it, c, e, nc, &full))) {
                rill__ds_free_elems(e, nc);
                break;
            }
            if (full >= 0) {
                ok = gbw_flush(it, c, full);
                break;
            }
        }
        if (!ok) break;
        if (it->end_input && !it->cur && it->ng > 0 && !(ok = gbw_flush(it, c, 0))) break;
        *end = true;
    } while (it->cur || !it->end_input);
    if (e != el) rill__free(e);
    return ok;
}

static const dit_vt gbw_it_vt = {gbw_next, gbw_it_free};

static dit *gbw_make(dset *b, dctx *c)
{
    gbw_ds *d = (gbw_ds *)b;
    gbw_it *it = (gbw_it *)rill__ds_over_it_new(&d->o, &gbw_it_vt, c, sizeof(gbw_it));
    if (!it) return NULL;
    it->o.base.ncomp = d->ncomp;
    return &it->o.base;
}

static const dset_vt gbw_vt = {gbw_make, gbw_ds_free, NULL};

static void group_by_window_kernel(rill__kctx *ctx)
{
    gbw_fns *fs = *ctx->state;
    if (!fs) {
        fs = rill__calloc(1, sizeof *fs);
        RILL_CHECK_ALLOC(fs);
        fs->key = rill__ds_fn_new(ctx, "key");
        fs->reduce = fs->key ? rill__ds_fn_new(ctx, "reduce") : NULL;
        fs->wsize = fs->reduce ? rill__ds_fn_new(ctx, "wsize") : NULL;
        if (!fs->wsize) {
            gbw_fns_free(fs);
            return;
        }
        *ctx->state = fs;
    }
    int ncap = fs->key->ncaps + fs->reduce->ncaps + fs->wsize->ncaps;
    int64_t nc = rill__attr_int(rill__ds_user_node(ctx), "n_components", -1);
    if (nc < 1 || ctx->node->ninputs != 1 + ncap || fs->key->nouts != 1 || fs->reduce->nouts != 1 ||
        fs->wsize->nouts != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "GroupByWindowDataset needs n_components and functions of one result "
                        "each, and takes the input dataset then the %d captured tensors",
                        ncap);
        return;
    }
    gbw_ds *d = (gbw_ds *)rill__ds_over_new_sized(ctx, 1, sizeof(gbw_ds));
    if (!d) return;
    d->key = fs->key;
    d->reduce = fs->reduce;
    d->wsize = fs->wsize;
    atomic_fetch_add(&d->key->refs, 1);
    atomic_fetch_add(&d->reduce->refs, 1);
    atomic_fetch_add(&d->wsize->refs, 1);
    d->ncomp = (int)nc;
    d->ncap = ncap;
    d->cap = rill__calloc((size_t)(ncap ? ncap : 1), sizeof *d->cap);
    RILL_CHECK_ALLOC(d->cap);
    for (int i = 0; i < ncap; i++) d->cap[i] = rill_tensor_ref(ctx->inputs[1 + i]);
    rill__ds_dset_register(&d->o.base, &gbw_vt);
    rill__ds_set_handle(ctx, &d->o.base);
}

/* ------------------------------------------------------------------- random ---- */

/* TF's RandomDataset: the uint32s of Philox(seed, seed2) one by one, as int64s; endless. */
typedef struct rand_ds {
    dset base;
    uint64_t seed, seed2;
} rand_ds;

typedef struct rand_it {
    dit base;
    philox p;
    single s;
} rand_it;

static bool rand_next(dit *b, dctx *c, rill_tensor **out, bool *end)
{
    (void)c;
    rand_it *it = (rand_it *)b;
    out[0] = rill_tensor_scalar_int64((int64_t)single_next(&it->s));
    RILL_CHECK_ALLOC(out[0]);
    *end = false;
    return true;
}

static const dit_vt rand_it_vt = {rand_next, rill__ds_plain_it_free};

static dit *rand_make(dset *b, dctx *c)
{
    (void)c;
    rand_ds *d = (rand_ds *)b;
    rand_it *it = rill__calloc(1, sizeof *it);
    RILL_CHECK_ALLOC(it);
    it->base = (dit){&rand_it_vt, 1};
    philox_init(&it->p, d->seed, d->seed2);
    it->s = (single){&it->p, {0}, 4};
    return &it->base;
}

static int64_t rand_card(dset *b)
{
    (void)b;
    return RILL_DS_INFINITE;
}

static const dset_vt rand_vt = {rand_make, rill__ds_plain_ds_free, rand_card};

static void random_kernel(rill__kctx *ctx)
{
    rand_ds *d = rill__calloc(1, sizeof *d);
    RILL_CHECK_ALLOC(d);
    d->seed = (uint64_t)ctx->node->seed;
    d->seed2 = (uint64_t)ctx->node->seed2;
    if (d->seed == 0 && d->seed2 == 0) { /* TF's RandomSeeds: (0, 0) draws both */
        d->seed = rill__random_seed();
        d->seed2 = rill__random_seed();
    }
    rill__ds_dset_register(&d->base, &rand_vt);
    rill__ds_set_handle(ctx, &d->base);
}

/* ---------------------------------------------- stateless multinomial (sample) ---- */

/* TF's StatelessMultinomial (CPU, one shard), as sample_from_datasets draws its selector: the key
 * and counter derived from the seed pair by one Philox block (TF's GenerateKey), then per row
 * one double per sample (two uint32s, TF's Uint64ToDouble) times the row's total, found in the
 * cumulative exp(logits - max) over the finite logits (upper bound). */
static double u64_to_double(uint32_t x0, uint32_t x1)
{
    uint64_t v = ((uint64_t)(x0 & 0xfffffu) << 32 | x1) | ((uint64_t)1023 << 52);
    double d;
    memcpy(&d, &v, sizeof d);
    return d - 1.0;
}

static void stateless_multinomial_kernel(rill__kctx *ctx)
{
    const rill_tensor *lg = ctx->inputs[0], *ns = ctx->inputs[1], *sd = ctx->inputs[2];
    if (lg->shape.rank != 2 || (lg->dtype != RILL_FLOAT && lg->dtype != RILL_DOUBLE)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "logits should be a matrix of floats");
        return;
    }
    if (sd->numel != 2 || sd->dtype != RILL_INT64) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "seed must have shape [2], not %lld elements",
                        (long long)sd->numel);
        return;
    }
    int64_t n = ns->dtype == RILL_INT32 ? *(const int32_t *)rill_tensor_data(ns)
                                        : rill_tensor_get_int64(ns, 0);
    int64_t rows = lg->shape.dims[0], k = lg->shape.dims[1];
    if (n < 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "num_samples should be nonnegative, got %lld",
                        (long long)n);
        return;
    }
    if (k <= 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "num_classes should be positive, got %lld",
                        (long long)k);
        return;
    }
    uint64_t s0 = (uint64_t)rill_tensor_get_int64(sd, 0),
             s1 = (uint64_t)rill_tensor_get_int64(sd, 1);
    philox p = {{0x3ec8f720u, 0x02461e29u},
                {(uint32_t)s0, (uint32_t)(s0 >> 32), (uint32_t)s1, (uint32_t)(s1 >> 32)}};
    uint32_t mix[4];
    philox_next(&p, mix);
    p = (philox){{mix[0], mix[1]}, {0, 0, mix[2], mix[3]}};
    single sg = {&p, {0}, 4};
    int64_t dims[2] = {rows, n};
    rill_tensor *o = rill_tensor_new(RILL_INT64, dims, 2);
    RILL_CHECK_ALLOC(o);
    int64_t *out = rill_tensor_data(o);
    double *cdf = rill__malloc((size_t)k * sizeof *cdf);
    RILL_CHECK_ALLOC(cdf);
    for (int64_t b = 0; b < rows; b++) {
        double mx = -DBL_MAX;
        for (int64_t j = 0; j < k; j++) {
            double v = lg->dtype == RILL_FLOAT ? ((const float *)rill_tensor_data(lg))[b * k + j]
                                               : ((const double *)rill_tensor_data(lg))[b * k + j];
            cdf[j] = v;
            if (isfinite(v) && v > mx) mx = v;
        }
        double total = 0;
        for (int64_t j = 0; j < k; j++) {
            if (isfinite(cdf[j])) total += exp(cdf[j] - mx);
            cdf[j] = total;
        }
        for (int64_t j = 0; j < n; j++) {
            uint32_t x0 = single_next(&sg), x1 = single_next(&sg);
            double find = u64_to_double(x0, x1) * total;
            int64_t lo = 0, hi = k; /* the first cdf > find */
            while (lo < hi) {
                int64_t m = (lo + hi) / 2;
                if (cdf[m] > find)
                    hi = m;
                else
                    lo = m + 1;
            }
            out[b * n + j] = lo;
        }
    }
    rill__free(cdf);
    rill__kctx_set_output(ctx, 0, o);
}

/* ----------------------------------------------------------- matching files ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* TF's MatchingFiles (tf.matching_files, tf.io.matching_files, and list_files' source): every
 * pattern's matches, sorted. With require_match (list_files), none is TF's failed assertion. */
static void matching_files_kernel(rill__kctx *ctx)
{
    const rill_tensor *pt = ctx->inputs[0];
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (int64_t i = 0; i < pt->numel; i++) {
        size_t len;
        const char *p = rill_tensor_get_string(pt, i, &len);
        char *pat = rill__asprintf("%.*s", (int)len, p);
        glob_t g;
        int rc = glob(pat, GLOB_NOSORT, NULL, &g);
        rill__free(pat);
        if (rc == 0)
            for (size_t k = 0; k < g.gl_pathc; k++) {
                if (n == cap) {
                    cap = cap ? 2 * cap : 16;
                    names = rill__realloc(names, cap * sizeof *names);
                    RILL_CHECK_ALLOC(names);
                }
                names[n++] = rill__strdup(g.gl_pathv[k]);
            }
        if (rc == 0 || rc == GLOB_NOMATCH) globfree(&g);
        if (rc != 0 && rc != GLOB_NOMATCH) {
            rill__kctx_fail(ctx, RILL_UNKNOWN, "%.*s: could not read the directories", (int)len,
                            p);
            for (size_t k = 0; k < n; k++) rill__free(names[k]);
            rill__free(names);
            return;
        }
    }
    if (n) qsort(names, n, sizeof *names, cmp_str);
    if (!n && rill__attr_bool(rill__ds_user_node(ctx), "require_match", false)) {
        char pats[512] = "";
        size_t at = 0;
        for (int64_t i = 0; i < pt->numel && at + 1 < sizeof pats; i++) {
            size_t len;
            const char *p = rill_tensor_get_string(pt, i, &len);
            at +=
                (size_t)snprintf(pats + at, sizeof pats - at, "%s%.*s", i ? ", " : "", (int)len, p);
        }
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "assertion failed: [No files matched pattern: %s]", pats);
        return;
    }
    int64_t dim = (int64_t)n;
    rill_tensor *o = rill_tensor_new(RILL_STRING, &dim, 1);
    RILL_CHECK_ALLOC(o);
    for (size_t k = 0; k < n; k++) {
        rill_tensor_set_string(o, (int64_t)k, names[k], strlen(names[k]));
        rill__free(names[k]);
    }
    rill__free(names);
    rill__kctx_set_output(ctx, 0, o);
}

/* ------------------------------------------------------------------ kernels ---- */

#define K(op_, fn_)                                                                                \
    {                                                                                              \
        .op = op_, .device_type = "CPU", .dtype = RILL_DT_INVALID, .fn = fn_                       \
    }
#define KF(op_, fn_)                                                                               \
    {                                                                                              \
        .op = op_, .device_type = "CPU", .dtype = RILL_DT_INVALID, .fn = fn_,                      \
        .state_free = rill__ds_fn_state_free                                                       \
    }

const rill__kernel_def rill__cpu_kernels_dataset2[] = {
    K("ConcatenateDataset", concat_kernel),
    KF("FlatMapDataset", interleave_kernel),
    KF("InterleaveDataset", interleave_kernel),
    K("UnbatchDataset", unbatch_kernel),
    K("ShardDataset", shard_kernel),
    KF("TakeWhileDataset", take_while_kernel),
    K("UniqueDataset", unary_kernel),
    K("IgnoreErrorsDataset", unary_kernel),
    K("CacheDataset", cache_kernel),
    KF("ScanDataset", scan_kernel),
    K("WindowDataset", window_kernel),
    K("PaddedBatchDatasetV2", padded_batch_kernel),
    K("DirectedInterleaveDataset", directed_kernel),
    KF("ReduceDataset", reduce_kernel),
    K("DatasetToSingleElement", single_kernel),
    K("DatasetCardinality", cardinality_kernel),
    K("RandomDataset", random_kernel),
    K("MatchingFiles", matching_files_kernel),
    K("StatelessMultinomial", stateless_multinomial_kernel),
    {.op = "GroupByWindowDataset",
     .device_type = "CPU",
     .dtype = RILL_DT_INVALID,
     .fn = group_by_window_kernel,
     .state_free = gbw_fns_free},
    K("TextLineDataset", rill__ds_reader_kernel),
    K("TFRecordDataset", rill__ds_reader_kernel),
    K("FixedLengthRecordDatasetV2", rill__ds_reader_kernel),
    {0},
};
