/* onednn_conv.c - float convolutions through oneDNN's convolution primitives.
 *
 * im2col + GEMM (cpu_conv.c) writes every patch out, KH*KW times the input, and reads it back;
 * oneDNN's convolution kernels (brgconv/jit, chosen by CPU features like its GEMM) never form
 * them, and ran the CNN's 5x5 convolutions at 110-130 GFLOP/s on one core here against ~60 for
 * the patches' GEMM. The activations stay NHWC (oneDNN reads and writes them in place); the
 * filter is reordered from HWIO into the blocked layout the primitive asks for, once per call
 * and shard (a few hundred KiB at most), and the filter gradient back.
 *
 * Threads: as in gemm.c, oneDNN's own (OpenMP) threads are never used. The batch is cut into
 * one shard per intra-op thread, each run by one oneDNN call on its thread with a scratchpad of
 * its own (so one primitive can run on several threads at once); the filter gradients of the
 * shards are added in shard order.
 *
 * Primitives are made once per shape (JIT code, a few ms) and kept, up to CACHE_MAX; past that a
 * call makes its own and drops them. A primitive whose implementation is oneDNN's reference code
 * (a CPU without SSE4.1, or a window its kernels do not take) is not used: the caller's im2col
 * path is faster than that. */
#include "onednn_conv.h"

#include "gemm.h"

#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Shapes kept at once (each a few primitives: the step's, the evaluation's, the last batch's). */
#define CACHE_MAX 256
/* Multiply-adds below which another shard costs more than it saves. */
#define SHARD_MIN_MACS ((int64_t)1 << 22)
/* The most shards of one call (more threads than this share them). */
#define MAX_SHARDS 64

typedef struct conv_key {
    int kind;
    int bias, relu;
    int64_t n, ih, iw, c, f, kh, kw, sh, sw, dh, dw, oh, ow, pt, pl;
} conv_key;

typedef struct conv_prim {
    struct conv_prim *next;
    conv_key key;
    bool usable;
    dnnl_primitive_t prim;
    /* weights: the layout the primitive takes; bias: [1, f, 1, 1], a binary post-op's operand */
    dnnl_memory_desc_t src, dst, bias, weights;
    dnnl_memory_desc_t hwio;
    dnnl_primitive_t reorder; /* hwio -> weights (reads the filter) or back (filter gradient) */
    size_t weights_bytes, scratch_bytes, reorder_scratch_bytes;
    dnnl_memory_desc_t scratch, reorder_scratch;
    char impl[64];
} conv_prim;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static conv_prim *cache;
static int cached;
static dnnl_engine_t engine;
static bool engine_ok;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
/* Streams are cheap but not to be shared by concurrent calls: a stack of free ones. */
#define STREAMS_MAX 64
static dnnl_stream_t streams[STREAMS_MAX];
static int nstreams;

static void make_engine(void)
{
    rill__onednn_one_thread();
    engine_ok = dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success;
}

static dnnl_stream_t take_stream(void)
{
    dnnl_stream_t s = NULL;
    pthread_mutex_lock(&mu);
    if (nstreams > 0) s = streams[--nstreams];
    pthread_mutex_unlock(&mu);
    if (!s && dnnl_stream_create(&s, engine, dnnl_stream_default_flags) != dnnl_success) s = NULL;
    return s;
}

static void give_stream(dnnl_stream_t s)
{
    pthread_mutex_lock(&mu);
    if (nstreams < STREAMS_MAX) {
        streams[nstreams++] = s;
        s = NULL;
    }
    pthread_mutex_unlock(&mu);
    if (s) dnnl_stream_destroy(s);
}

static void prim_free(conv_prim *p)
{
    if (!p) return;
    if (p->prim) dnnl_primitive_destroy(p->prim);
    if (p->reorder) dnnl_primitive_destroy(p->reorder);
    rill__free(p);
}

/* The scratchpad a primitive desc asks for (user mode: one per shard). */
static size_t scratch_of(const_dnnl_primitive_desc_t pd, dnnl_memory_desc_t *md)
{
    const dnnl_memory_desc_t *q = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (!q) {
        memset(md, 0, sizeof *md);
        return 0;
    }
    *md = *q;
    return dnnl_memory_desc_get_size(q);
}

/* Makes the primitives of key k; usable stays false when oneDNN has only its reference code for
 * it, or refuses it. */
static conv_prim *prim_make(const conv_key *k)
{
    conv_prim *p = rill__calloc(1, sizeof *p);
    RILL_CHECK_ALLOC(p);
    p->key = *k;
    rill__onednn_one_thread();
    dnnl_dims_t sd = {k->n, k->c, k->ih, k->iw}, wd = {k->f, k->c, k->kh, k->kw},
                dd = {k->n, k->f, k->oh, k->ow}, bd = {1, k->f, 1, 1};
    dnnl_dims_t strides = {k->sh, k->sw}, dil = {k->dh - 1, k->dw - 1}, pl = {k->pt, k->pl};
    /* The far padding that makes oneDNN's output size TF's (never negative: VALID's leftover
     * rows are simply not reached). */
    int64_t pb = (k->oh - 1) * k->sh + (k->kh - 1) * k->dh + 1 - k->ih - k->pt;
    int64_t pr = (k->ow - 1) * k->sw + (k->kw - 1) * k->dw + 1 - k->iw - k->pl;
    dnnl_dims_t padr = {pb > 0 ? pb : 0, pr > 0 ? pr : 0};
    dnnl_memory_desc_t any;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    dnnl_primitive_desc_t hint = NULL, pd = NULL, rpd = NULL;
    bool ok =
        dnnl_memory_desc_init_by_tag(&p->src, 4, sd, dnnl_f32, dnnl_nhwc) == dnnl_success &&
        dnnl_memory_desc_init_by_tag(&p->dst, 4, dd, dnnl_f32, dnnl_nhwc) == dnnl_success &&
        dnnl_memory_desc_init_by_tag(&p->hwio, 4, wd, dnnl_f32, dnnl_hwio) == dnnl_success &&
        dnnl_memory_desc_init_by_tag(&any, 4, wd, dnnl_f32, dnnl_format_tag_any) == dnnl_success &&
        dnnl_memory_desc_init_by_tag(&p->bias, 4, bd, dnnl_f32, dnnl_nhwc) == dnnl_success &&
        dnnl_primitive_attr_create(&attr) == dnnl_success &&
        dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
    /* The bias is a binary add after the sum is finished, not the primitive's bias argument:
     * some kernels (jit:avx2) start their sums from the bias, which rounds differently from
     * BiasAdd's conv + b; a post-op adds it to the finished sum, as BiasAdd does, on every ISA. */
    if (ok && k->bias) {
        ok = dnnl_post_ops_create(&ops) == dnnl_success &&
             dnnl_post_ops_append_binary(ops, dnnl_binary_add, &p->bias) == dnnl_success &&
             (!k->relu || dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f) ==
                              dnnl_success) &&
             dnnl_primitive_attr_set_post_ops(attr, ops) == dnnl_success;
    }
    /* The forward desc: the primitive itself, or the hint the backward ones need. */
    dnnl_convolution_desc_t fd, bd_;
    if (ok)
        ok = dnnl_dilated_convolution_forward_desc_init(
                 &fd, dnnl_forward_training, dnnl_convolution_direct, &p->src, &any, NULL, &p->dst,
                 strides, dil, pl, padr) == dnnl_success;
    if (ok && k->kind == RILL__CONV_FORWARD) {
        ok = dnnl_primitive_desc_create(&pd, &fd, attr, engine, NULL) == dnnl_success;
    } else if (ok) {
        ok = dnnl_primitive_desc_create(&hint, &fd, NULL, engine, NULL) == dnnl_success;
        if (ok && k->kind == RILL__CONV_BACK_INPUT)
            ok = dnnl_dilated_convolution_backward_data_desc_init(&bd_, dnnl_convolution_direct,
                                                                  &p->src, &any, &p->dst, strides,
                                                                  dil, pl, padr) == dnnl_success;
        else if (ok)
            ok = dnnl_dilated_convolution_backward_weights_desc_init(
                     &bd_, dnnl_convolution_direct, &p->src, &any, NULL, &p->dst, strides, dil, pl,
                     padr) == dnnl_success;
        if (ok) ok = dnnl_primitive_desc_create(&pd, &bd_, attr, engine, hint) == dnnl_success;
    }
    const char *impl = NULL;
    if (ok) ok = dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success;
    if (ok) {
        snprintf(p->impl, sizeof p->impl, "%s", impl);
        ok = strstr(impl, "ref") == NULL; /* reference loops: im2col is faster */
    }
    if (ok) {
        const dnnl_memory_desc_t *w = dnnl_primitive_desc_query_md(
            pd,
            k->kind == RILL__CONV_BACK_FILTER ? dnnl_query_diff_weights_md : dnnl_query_weights_md,
            0);
        ok = w != NULL;
        if (ok) p->weights = *w, p->weights_bytes = dnnl_memory_desc_get_size(w);
        p->scratch_bytes = scratch_of(pd, &p->scratch);
        if (ok) ok = dnnl_primitive_create(&p->prim, pd) == dnnl_success;
    }
    if (ok && !dnnl_memory_desc_equal(&p->weights, &p->hwio)) {
        bool back = k->kind == RILL__CONV_BACK_FILTER;
        dnnl_primitive_attr_t rattr = NULL;
        ok = dnnl_primitive_attr_create(&rattr) == dnnl_success &&
             dnnl_primitive_attr_set_scratchpad_mode(rattr, dnnl_scratchpad_mode_user) ==
                 dnnl_success &&
             dnnl_reorder_primitive_desc_create(&rpd, back ? &p->weights : &p->hwio, engine,
                                                back ? &p->hwio : &p->weights, engine,
                                                rattr) == dnnl_success;
        if (rattr) dnnl_primitive_attr_destroy(rattr);
        if (ok) {
            p->reorder_scratch_bytes = scratch_of(rpd, &p->reorder_scratch);
            ok = dnnl_primitive_create(&p->reorder, rpd) == dnnl_success;
        }
    }
    p->usable = ok;
    static const char *const kinds[] = {"forward", "backward input", "backward filter"};
    rill__log(RILL_LOG_DEBUG,
              "oneDNN convolution %s, %lld images of %lldx%lldx%lld, %lldx%lld filter to %lld "
              "channels: %s%s",
              kinds[k->kind], (long long)k->n, (long long)k->ih, (long long)k->iw, (long long)k->c,
              (long long)k->kh, (long long)k->kw, (long long)k->f, p->impl[0] ? p->impl : "refused",
              ok ? "" : " (not used: im2col instead)");
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (hint) dnnl_primitive_desc_destroy(hint);
    if (ops) dnnl_post_ops_destroy(ops);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return p;
}

/* The cached primitives of k, made when new; *owned set when the cache is full and the caller
 * must free them. */
static conv_prim *prim_get(const conv_key *k, bool *owned)
{
    *owned = false;
    pthread_mutex_lock(&mu);
    conv_prim *p = cache;
    while (p && memcmp(&p->key, k, sizeof *k) != 0) p = p->next;
    if (!p) {
        p = prim_make(k);
        if (cached < CACHE_MAX) {
            p->next = cache, cache = p, cached++;
        } else {
            *owned = true;
        }
    }
    pthread_mutex_unlock(&mu);
    return p;
}

typedef struct conv_job {
    rill__conv_kind kind;
    const rill__window *w;
    const rill__conv_args *a;
    conv_prim *prim[2]; /* shards 0..nshards-2, and the last */
    int64_t per, nshards;
    float **partial; /* filter gradient: shard s > 0 writes partial[s] */
    _Atomic dnnl_status_t failed;
} conv_job;

static dnnl_memory_t mem(const dnnl_memory_desc_t *md, const void *p)
{
    dnnl_memory_t m = NULL;
    if (dnnl_memory_create(&m, md, engine, (void *)p) != dnnl_success) m = NULL;
    return m;
}

/* Runs prim (with its args, scratchpad appended) and frees the memories. */
static dnnl_status_t exec(dnnl_primitive_t prim, dnnl_stream_t s, dnnl_exec_arg_t *args, int n)
{
    dnnl_status_t st = dnnl_success;
    for (int i = 0; i < n; i++)
        if (!args[i].memory) st = dnnl_out_of_memory;
    if (st == dnnl_success) st = dnnl_primitive_execute(prim, s, n, args);
    if (st == dnnl_success) st = dnnl_stream_wait(s);
    for (int i = 0; i < n; i++)
        if (args[i].memory) dnnl_memory_destroy(args[i].memory);
    return st;
}

/* The filter (or its gradient) from one layout to the other with p's reorder. */
static dnnl_status_t reorder(const conv_prim *p, dnnl_stream_t s, const dnnl_memory_desc_t *from,
                             const void *src, const dnnl_memory_desc_t *to, void *dst,
                             void *scratch)
{
    dnnl_exec_arg_t ra[3] = {{DNNL_ARG_FROM, mem(from, src)}, {DNNL_ARG_TO, mem(to, dst)}};
    int n = 2;
    if (p->reorder_scratch_bytes)
        ra[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, mem(&p->reorder_scratch, scratch)};
    return exec(p->reorder, s, ra, n);
}

/* Blocks of the cache allocator (rill__aligned_alloc) so a step gets its pages back. */
static void *block(size_t bytes)
{
    void *p = rill__aligned_alloc(bytes ? bytes : 64);
    RILL_CHECK_ALLOC(p);
    return p;
}

static dnnl_status_t run_shard(const conv_job *j, int64_t s)
{
    const rill__window *w = j->w;
    const rill__conv_args *a = j->a;
    const conv_prim *p = j->prim[s == j->nshards - 1];
    int64_t b0 = s * j->per;
    const float *x = a->x ? a->x + b0 * w->ih * w->iw * w->c : NULL;
    const float *dy = a->dy ? a->dy + b0 * w->oh * w->ow * w->f : NULL;
    float *out = a->out;
    if (j->kind == RILL__CONV_FORWARD) out += b0 * w->oh * w->ow * w->f;
    if (j->kind == RILL__CONV_BACK_INPUT) out += b0 * w->ih * w->iw * w->c;
    if (j->kind == RILL__CONV_BACK_FILTER && s > 0) out = j->partial[s];
    rill__onednn_one_thread();
    dnnl_stream_t st = take_stream();
    if (!st) return dnnl_out_of_memory;
    size_t sb =
        p->scratch_bytes > p->reorder_scratch_bytes ? p->scratch_bytes : p->reorder_scratch_bytes;
    void *scratch = sb ? block(sb) : NULL;
    void *wts = p->reorder ? block(p->weights_bytes) : NULL;
    dnnl_status_t r = dnnl_success;
    /* The filter into the primitive's layout. */
    if (p->reorder && j->kind != RILL__CONV_BACK_FILTER) {
        r = reorder(p, st, &p->hwio, a->filter, &p->weights, wts, scratch);
    }
    const void *filt = wts ? wts : a->filter;
    if (r == dnnl_success) {
        dnnl_exec_arg_t args[5];
        int n = 0;
        switch (j->kind) {
        case RILL__CONV_FORWARD:
            args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, mem(&p->src, x)};
            args[n++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, mem(&p->weights, filt)};
            if (p->key.bias)
                args[n++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                                              mem(&p->bias, a->bias)};
            args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DST, mem(&p->dst, out)};
            break;
        case RILL__CONV_BACK_INPUT:
            args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, mem(&p->dst, dy)};
            args[n++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, mem(&p->weights, filt)};
            args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, mem(&p->src, out)};
            break;
        case RILL__CONV_BACK_FILTER:
            args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, mem(&p->src, x)};
            args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, mem(&p->dst, dy)};
            args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_WEIGHTS, mem(&p->weights, wts ? wts : out)};
            break;
        }
        if (p->scratch_bytes)
            args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, mem(&p->scratch, scratch)};
        r = exec(p->prim, st, args, n);
    }
    /* The filter gradient back to HWIO. */
    if (r == dnnl_success && p->reorder && j->kind == RILL__CONV_BACK_FILTER) {
        r = reorder(p, st, &p->weights, wts, &p->hwio, out, scratch);
    }
    if (wts) rill__aligned_free(wts, p->weights_bytes);
    if (scratch) rill__aligned_free(scratch, sb);
    give_stream(st);
    return r;
}

static void shards_range(void *arg, int64_t b, int64_t e)
{
    conv_job *j = arg;
    for (int64_t s = b; s < e; s++) {
        dnnl_status_t r = run_shard(j, s);
        if (r != dnnl_success) j->failed = r; /* any failure; which one does not matter */
    }
}

int rill__onednn_conv(rill__threadpool *pool, rill__conv_kind kind, const rill__window *w,
                      const rill__conv_args *a, char *err, size_t errlen)
{
    if (w->n <= 0 || w->c <= 0 || w->f <= 0 || w->kh <= 0 || w->kw <= 0 || w->oh <= 0 || w->ow <= 0)
        return 0;
    pthread_once(&engine_once, make_engine);
    if (!engine_ok) return 0;
    /* One shard per thread, each with enough work to pay for itself. */
    int64_t macs = w->oh * w->ow * w->f * w->kh * w->kw * w->c; /* per image */
    int64_t min_images = SHARD_MIN_MACS / (macs > 0 ? macs : 1);
    if (min_images < 1) min_images = 1;
    int64_t workers = pool ? rill__threadpool_size(pool) + 1 : 1;
    if (workers > MAX_SHARDS) workers = MAX_SHARDS;
    int64_t nshards = w->n / min_images;
    if (nshards > workers) nshards = workers;
    if (nshards < 1) nshards = 1;
    int64_t per = (w->n + nshards - 1) / nshards;
    nshards = (w->n + per - 1) / per; /* none empty */
    conv_job j = {.kind = kind, .w = w, .a = a, .per = per, .nshards = nshards};
    bool owned[2] = {false, false};
    conv_key k = {0};
    k.kind = (int)kind, k.bias = kind == RILL__CONV_FORWARD && a->bias, k.relu = k.bias && a->relu;
    k.ih = w->ih, k.iw = w->iw, k.c = w->c, k.f = w->f, k.kh = w->kh, k.kw = w->kw;
    k.sh = w->sh, k.sw = w->sw, k.dh = w->dh, k.dw = w->dw, k.oh = w->oh, k.ow = w->ow;
    k.pt = w->pt, k.pl = w->pl;
    k.n = per;
    j.prim[0] = prim_get(&k, &owned[0]);
    k.n = w->n - per * (nshards - 1);
    j.prim[1] = k.n == per ? j.prim[0] : prim_get(&k, &owned[1]);
    int rc = 0;
    if (j.prim[0]->usable && j.prim[1]->usable) {
        float *parts[MAX_SHARDS];
        size_t wb = (size_t)(w->kh * w->kw * w->c * w->f) * sizeof(float);
        j.partial = parts;
        if (kind == RILL__CONV_BACK_FILTER)
            for (int64_t s = 1; s < nshards; s++) parts[s] = block(wb);
        if (nshards > 1)
            rill__parallel_for(pool, nshards, 1, shards_range, &j);
        else
            shards_range(&j, 0, 1);
        if (kind == RILL__CONV_BACK_FILTER) {
            int64_t n = w->kh * w->kw * w->c * w->f;
            for (int64_t s = 1; s < nshards; s++) {
                const float *restrict q = parts[s];
                float *restrict o = a->out;
                if (!j.failed)
                    for (int64_t i = 0; i < n; i++) o[i] += q[i];
                rill__aligned_free(parts[s], wb);
            }
        }
        rc = 1;
        if (j.failed) {
            snprintf(err, errlen, "oneDNN's convolution (%s) failed: status %d", j.prim[0]->impl,
                     (int)j.failed);
            rc = -1;
        }
    }
    if (owned[1]) prim_free(j.prim[1]);
    if (owned[0]) prim_free(j.prim[0]);
    return rc;
}

static char info[160];
static pthread_once_t info_once = PTHREAD_ONCE_INIT;

static void make_info(void)
{
    const dnnl_version_t *v = dnnl_version();
    snprintf(info, sizeof info,
             "oneDNN %d.%d.%d primitives in float, split by images (kernel per shape: "
             "RILL_LOG_LEVEL=0 logs it); double by im2col",
             v->major, v->minor, v->patch);
}

const char *rill__conv_info(void)
{
    pthread_once(&info_once, make_info);
    return info;
}
