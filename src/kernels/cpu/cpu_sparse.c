/* cpu_sparse.c - CPU kernels of SparseToDense, CTCGreedyDecoder and the unigram candidate
 * samplers (src/graph/ops_sparse.c), with TF's run-time checks and texts.
 *
 * The samplers follow TF's range_sampler.cc: FixedUnigramSampler's weights are the unigrams
 * (or a vocab file's last comma-separated column, one line a word, empty lines skipped) raised
 * to distortion, the first num_reserved_ids ids weighing 0, only the ids of this shard kept
 * (id % num_shards == shard; the reserved ones counted into the ids as TF does); the weights
 * must number range_max. UnigramSampler (learned) starts with every weight 1 and adds 1 to the
 * weight of each true class after each step's draw. Probabilities are float and expected counts
 * TF's ExpectedCountHelper in float, so both are TF's to the bit; the draws are rill's stream,
 * not TF's Philox (the distribution is the same). */
#include "cpu_kernels.h"
#include "cpu_rows.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- SparseToDense --- */

/* "[0,5]": row i of the indices (num_dims of them). */
static const char *index_str(const rill_tensor *ix, int64_t i, int64_t nd, char *buf, size_t len)
{
    size_t p = 0;
    p += (size_t)snprintf(buf + p, len - p, "[");
    for (int64_t d = 0; d < nd && p < len; d++)
        p += (size_t)snprintf(buf + p, len - p, "%s%lld", d ? "," : "",
                              (long long)rill__index_at(ix, i * nd + d));
    if (p < len) snprintf(buf + p, len - p, "]");
    return buf;
}

static const char *shape_vec_str(const int64_t *v, int64_t nd, char *buf, size_t len)
{
    size_t p = 0;
    p += (size_t)snprintf(buf + p, len - p, "[");
    for (int64_t d = 0; d < nd && p < len; d++)
        p += (size_t)snprintf(buf + p, len - p, "%s%lld", d ? "," : "", (long long)v[d]);
    if (p < len) snprintf(buf + p, len - p, "]");
    return buf;
}

static void sparse_to_dense_kernel(rill__kctx *ctx)
{
    const rill_tensor *ix = ctx->inputs[0], *os = ctx->inputs[1], *vals = ctx->inputs[2],
                      *def = ctx->inputs[3];
    char a[256], b[256];
    if (ix->shape.rank > 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "sparse_indices should be a scalar, vector, or matrix, got shape %s",
                        rill_shape_str(&ix->shape, a, sizeof a));
        return;
    }
    if (os->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "output_shape should be a vector, got shape %s",
                        rill_shape_str(&os->shape, a, sizeof a));
        return;
    }
    int64_t num_elems = ix->shape.rank > 0 ? ix->shape.dims[0] : 1;
    int64_t nd = ix->shape.rank > 1 ? ix->shape.dims[1] : 1;
    if (!(vals->shape.rank == 0 || (vals->shape.rank == 1 && vals->numel == num_elems))) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "sparse_values has incorrect shape %s, should be [] or [%lld]",
                        rill_shape_str(&vals->shape, a, sizeof a), (long long)num_elems);
        return;
    }
    if (def->shape.rank != 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "default_value should be a scalar.");
        return;
    }
    if (os->numel != nd) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "output_shape has incorrect number of elements: %lld should be: %lld",
                        (long long)os->numel, (long long)nd);
        return;
    }
    if (nd > RILL_MAX_DIMS) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "SparseToDense: more than %d dims",
                        RILL_MAX_DIMS);
        return;
    }
    int64_t dims[RILL_MAX_DIMS];
    for (int64_t d = 0; d < nd; d++) {
        dims[d] = rill__index_at(os, d);
        if (dims[d] < 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Dimension %lld must be >= 0 in output_shape, got %lld", (long long)d,
                            (long long)dims[d]);
            return;
        }
    }
    if (rill__attr_bool(ctx->node, "validate_indices", true)) {
        for (int64_t i = 0; i < num_elems; i++) {
            bool valid = true, different = i == 0, increasing = true;
            for (int64_t d = 0; d < nd; d++) {
                int64_t v = rill__index_at(ix, i * nd + d);
                if (v < 0 || v >= dims[d]) valid = false;
                if (i > 0) {
                    int64_t diff = v - rill__index_at(ix, (i - 1) * nd + d);
                    if (diff > 0) different = true;
                    if (!different && diff < 0) increasing = false;
                }
            }
            const char *what = !valid        ? "out of bounds"
                               : !increasing ? "out of order"
                               : !different  ? "repeated"
                                             : NULL;
            if (!what) continue;
            index_str(ix, i, nd, a, sizeof a);
            if (!valid)
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                                "indices[%lld] = %s is out of bounds: need 0 <= index < %s",
                                (long long)i, a, shape_vec_str(dims, nd, b, sizeof b));
            else if (!increasing)
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                                "indices[%lld] = %s is out of order. Many sparse ops require "
                                "sorted indices.\n    Use `tf.sparse.reorder` to create a "
                                "correctly ordered copy.\n\n",
                                (long long)i, a);
            else
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "indices[%lld] = %s is repeated",
                                (long long)i, a);
            return;
        }
    }
    rill_shape out_shape = rill_shape_make((int)nd, dims);
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, vals->dtype, &out_shape);
    if (!out) return;
    size_t es = rill_dtype_size(vals->dtype);
    char *o = out->buf->data;
    const char *dv = def->buf->data, *vv = vals->buf->data;
    for (int64_t k = 0; k < out->numel; k++) memcpy(o + (size_t)k * es, dv, es);
    for (int64_t i = 0; i < num_elems; i++) {
        int64_t off = 0;
        bool ok = true;
        for (int64_t d = 0; d < nd; d++) {
            int64_t v = rill__index_at(ix, i * nd + d);
            if (v < 0 || v >= dims[d]) ok = false;
            off = off * dims[d] + v;
        }
        if (!ok) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Indices are not valid (out of bounds).  Shape: %s",
                            shape_vec_str(dims, nd, b, sizeof b));
            return;
        }
        memcpy(o + (size_t)off * es, vv + (vals->shape.rank ? (size_t)i * es : 0), es);
    }
}

/* --- CTCGreedyDecoder --- */

static void ctc_greedy_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *len = ctx->inputs[1];
    char a[96];
    if (x->shape.rank != 3) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "inputs is not a 3-Tensor");
        return;
    }
    if (len->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "sequence_length is not a vector");
        return;
    }
    int64_t T = x->shape.dims[0], B = x->shape.dims[1], C = x->shape.dims[2];
    if (len->numel != B) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "len(sequence_length) != batch_size.  len(sequence_length):  %lld "
                        "batch_size: %lld",
                        (long long)len->numel, (long long)B);
        return;
    }
    const int32_t *L = len->buf->data;
    for (int64_t b = 0; b < B; b++)
        if (L[b] > T) {
            rill__kctx_fail(ctx, RILL_FAILED_PRECONDITION, "sequence_length(%lld) <= %lld",
                            (long long)b, (long long)T);
            return;
        }
    if (C == 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "num_classes cannot be 0. inputs shape: %s",
                        rill_shape_str(&x->shape, a, sizeof a));
        return;
    }
    int64_t blank = rill__attr_int(ctx->node, "blank_index", -1);
    if (blank < 0) blank += C;
    if (blank < 0 || blank >= C) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "blank_index expected to be between %lld and "
                        "%lld but was %lld",
                        (long long)-C, (long long)(C - 1),
                        (long long)rill__attr_int(ctx->node, "blank_index", -1));
        return;
    }
    bool merge = rill__attr_bool(ctx->node, "merge_repeated", true);
    bool dbl = x->dtype == RILL_DOUBLE;
    /* the decoded labels, batch after batch (at most T each) */
    int64_t *lab = rill__malloc((size_t)(B * T > 0 ? B * T : 1) * sizeof *lab);
    int64_t *cnt = rill__calloc((size_t)(B > 0 ? B : 1), sizeof *cnt);
    double *lp = rill__malloc((size_t)(B > 0 ? B : 1) * sizeof *lp);
    RILL_CHECK_ALLOC(lab && cnt && lp);
    int64_t total = 0, maxlen = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t prev = blank;
        double sum = 0;
        for (int64_t t = 0; t < L[b]; t++) {
            int64_t best = 0;
            double bv = 0;
            for (int64_t c = 0; c < C; c++) {
                int64_t k = (t * B + b) * C + c;
                double v =
                    dbl ? ((const double *)x->buf->data)[k] : ((const float *)x->buf->data)[k];
                if (c == 0 || v > bv) best = c, bv = v;
            }
            sum -= bv;
            if (best != blank && !(merge && best == prev)) lab[b * T + cnt[b]++] = best;
            prev = best;
        }
        lp[b] = sum;
        total += cnt[b];
        if (cnt[b] > maxlen) maxlen = cnt[b];
    }
    rill_shape is = rill_shape_make(2, (int64_t[]){total, 2}), vs = rill_shape_vector(total),
               ss = rill_shape_vector(2), ls = rill_shape_make(2, (int64_t[]){B, 1});
    rill_tensor *oi = rill__kctx_alloc_output(ctx, 0, RILL_INT64, &is);
    rill_tensor *ov = rill__kctx_alloc_output(ctx, 1, RILL_INT64, &vs);
    rill_tensor *os = rill__kctx_alloc_output(ctx, 2, RILL_INT64, &ss);
    rill_tensor *ol = rill__kctx_alloc_output(ctx, 3, x->dtype, &ls);
    if (oi && ov && os && ol) {
        int64_t *pi = oi->buf->data, *pv = ov->buf->data, *ps = os->buf->data, k = 0;
        for (int64_t b = 0; b < B; b++) {
            for (int64_t j = 0; j < cnt[b]; j++, k++) {
                pi[2 * k] = b;
                pi[2 * k + 1] = j;
                pv[k] = lab[b * T + j];
            }
            if (dbl)
                ((double *)ol->buf->data)[b] = lp[b];
            else
                ((float *)ol->buf->data)[b] = (float)lp[b];
        }
        ps[0] = B;
        ps[1] = maxlen;
    }
    rill__free(lab);
    rill__free(cnt);
    rill__free(lp);
}

/* --- unigram samplers --- */

typedef struct unigram {
    rill__rng rng;
    bool learned;
    int64_t range;
    float *w;     /* weights (fixed: TF's float weights; learned: integer counts) */
    float total;  /* fixed: TF's float sum */
    int64_t *fen; /* learned: a Fenwick tree over the integer weights */
    int64_t itotal;
    double *cum; /* fixed: cumulative weights for the draw */
} unigram;

static void unigram_free(void *p)
{
    unigram *u = p;
    if (!u) return;
    rill__free(u->w);
    rill__free(u->fen);
    rill__free(u->cum);
    rill__free(u);
}

static void fen_add(unigram *u, int64_t i, int64_t d)
{
    for (int64_t k = i + 1; k <= u->range; k += k & -k) u->fen[k - 1] += d;
    u->itotal += d;
}

/* The id whose cumulative weight range holds target (0 <= target < itotal). */
static int64_t fen_find(const unigram *u, int64_t target)
{
    int64_t pos = 0, step = 1;
    while (step * 2 <= u->range) step *= 2;
    for (; step; step /= 2)
        if (pos + step <= u->range && u->fen[pos + step - 1] <= target) {
            pos += step;
            target -= u->fen[pos - 1];
        }
    return pos;
}

/* Appends weight w for word id (TF's LoadFromUnigrams / LoadFromFile body). */
static bool push_weight(unigram *u, int64_t *nw, int64_t cap, float w)
{
    if (*nw >= cap) return false;
    u->w[(*nw)++] = w;
    return true;
}

/* Builds the fixed sampler's weights; false with ctx failed. */
static bool fixed_init(rill__kctx *ctx, unigram *u)
{
    const rill_node *n = ctx->node;
    const rill__attr *va = rill__node_attr(n, "vocab_file"), *ua = rill__node_attr(n, "unigrams");
    const char *vocab = va && va->kind == RILL__ATTR_STRING ? va->v.s : "";
    const rill_tensor *uni = ua && ua->kind == RILL__ATTR_TENSOR ? ua->v.tensor : NULL;
    bool have_uni = uni && uni->numel > 0;
    if (!*vocab && !have_uni) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Must provide either vocab_file or unigrams.");
        return false;
    }
    if (*vocab && have_uni) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Must only provide one of vocab_file and unigrams.");
        return false;
    }
    float distortion = (float)rill__attr_float(n, "distortion", 1.0);
    int64_t reserved = rill__attr_int(n, "num_reserved_ids", 0);
    int64_t shards = rill__attr_int(n, "num_shards", 1), shard = rill__attr_int(n, "shard", 0);
    /* every weight would fit in reserved + the unigrams' (or lines') count */
    int64_t cap = reserved + (have_uni ? uni->numel : 0), nw = 0;
    FILE *f = NULL;
    if (*vocab) {
        f = fopen(vocab, "r");
        if (!f) {
            rill__kctx_fail(ctx, errno == ENOENT ? RILL_NOT_FOUND : RILL_INVALID_ARGUMENT, "%s; %s",
                            vocab, strerror(errno));
            return false;
        }
        int ch, lines = 1;
        while ((ch = fgetc(f)) != EOF) lines += ch == '\n';
        rewind(f);
        cap += lines;
    }
    u->w = rill__malloc((size_t)(cap > 0 ? cap : 1) * sizeof *u->w);
    RILL_CHECK_ALLOC(u->w);
    for (int64_t id = 0; id < reserved; id++)
        if (id % shards == shard) push_weight(u, &nw, cap, 0.0f);
    int64_t word = nw;
    u->total = 0;
    if (have_uni) {
        for (int64_t k = 0; k < uni->numel; k++, word++) {
            if (word % shards != shard) continue;
            float w = (float)pow((double)(float)rill_tensor_get_double(uni, k), (double)distortion);
            u->total += w;
            push_weight(u, &nw, cap, w);
        }
    } else {
        char *line = NULL;
        size_t lcap = 0;
        ssize_t got;
        bool ok = true;
        while (ok && (got = getline(&line, &lcap, f)) >= 0) {
            while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
            if (got == 0) continue;
            if (word % shards == shard) {
                const char *last = strrchr(line, ',');
                last = last ? last + 1 : line;
                char *end;
                errno = 0;
                float w = strtof(last, &end);
                while (*end == ' ' || *end == '\t') end++;
                if (end == last || *end || errno) {
                    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                                    "Wrong vocabulary format at line: %s", line);
                    ok = false;
                    break;
                }
                w = (float)pow((double)w, (double)distortion);
                u->total += w;
                push_weight(u, &nw, cap, w);
            }
            word++;
        }
        free(line);
        fclose(f);
        if (!ok) return false;
    }
    if (nw != u->range) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "range is %lld must be equal to weights size  %lld", (long long)u->range,
                        (long long)nw);
        return false;
    }
    u->cum = rill__malloc((size_t)u->range * sizeof *u->cum);
    RILL_CHECK_ALLOC(u->cum);
    double c = 0;
    for (int64_t k = 0; k < u->range; k++) u->cum[k] = c += u->w[k];
    if (!(c > 0)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "FixedUnigramCandidateSampler: the weights sum to %g; some must be "
                        "positive",
                        c);
        return false;
    }
    return true;
}

static unigram *unigram_state(rill__kctx *ctx)
{
    if (*ctx->state) return *ctx->state;
    const rill_node *n = ctx->node;
    unigram *u = rill__calloc(1, sizeof *u);
    RILL_CHECK_ALLOC(u);
    uint64_t seed = (n->seed || n->seed2)
                        ? (uint64_t)n->seed * 0x9e3779b97f4a7c15ull ^ (uint64_t)n->seed2
                        : rill__random_seed();
    rill__rng_seed(&u->rng, seed);
    u->range = rill__attr_int(n, "range_max", 1);
    u->learned = strcmp(n->op->name, "LearnedUnigramCandidateSampler") == 0;
    if (u->learned) {
        u->w = rill__malloc((size_t)u->range * sizeof *u->w);
        u->fen = rill__calloc((size_t)u->range, sizeof *u->fen);
        RILL_CHECK_ALLOC(u->w && u->fen);
        for (int64_t k = 0; k < u->range; k++) {
            u->w[k] = 1;
            fen_add(u, k, 1);
        }
    } else if (!fixed_init(ctx, u)) {
        unigram_free(u);
        return NULL;
    }
    *ctx->state = u;
    return u;
}

static int64_t unigram_sample(unigram *u)
{
    double r = rill__rng_uniform(&u->rng);
    if (u->learned) {
        int64_t t = (int64_t)(r * (double)u->itotal);
        return fen_find(u, t < u->itotal ? t : u->itotal - 1);
    }
    double target = r * u->cum[u->range - 1];
    int64_t lo = 0, hi = u->range - 1;
    while (lo < hi) { /* the first id whose cumulative weight exceeds target */
        int64_t mid = lo + (hi - lo) / 2;
        if (u->cum[mid] > target)
            hi = mid;
        else
            lo = mid + 1;
    }
    while (lo > 0 && u->w[lo] == 0) lo--; /* never a zero weight (rounding at the top) */
    return lo;
}

/* TF's Probability: float. */
static float unigram_prob(const unigram *u, int64_t v)
{
    if (v < 0 || v >= u->range) return 0.0f;
    if (u->learned) return u->w[v] / (float)u->itotal;
    return u->w[v] / u->total;
}

/* TF's ExpectedCountHelper, in float as TF's. */
static float expected(float p, int64_t batch, int64_t tries)
{
    if (tries == batch) return p * (float)batch;
    return -expm1f((float)tries * log1pf(-p));
}

static void unigram_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    const rill_tensor *tc = ctx->inputs[0];
    int64_t num_true = rill__attr_int(n, "num_true", 1);
    int64_t ns = rill__attr_int(n, "num_sampled", 1);
    bool uniq = rill__attr_bool(n, "unique", false);
    if (tc->shape.rank != 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "true_classes must be a matrix");
        return;
    }
    if (tc->shape.dims[1] != num_true) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "true_classes must have num_true columns, expected: %lld was: %lld",
                        (long long)num_true, (long long)tc->shape.dims[1]);
        return;
    }
    unigram *u = unigram_state(ctx);
    if (!u) return;
    if (uniq) {
        int64_t positive = 0;
        for (int64_t k = 0; k < u->range; k++) positive += u->w[k] > 0;
        if (ns > positive) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "%s: unique sampling of %lld candidates from %lld ids of positive "
                            "weight never ends",
                            n->op->name, (long long)ns, (long long)positive);
            return;
        }
    }
    rill_shape ss = rill_shape_vector(ns);
    rill_tensor *cand = rill__kctx_alloc_output(ctx, 0, RILL_INT64, &ss);
    rill_tensor *tex = rill__kctx_alloc_output(ctx, 1, RILL_FLOAT, &tc->shape);
    rill_tensor *sex = rill__kctx_alloc_output(ctx, 2, RILL_FLOAT, &ss);
    if (!cand || !tex || !sex) return;
    int64_t *c = cand->buf->data, tries = 0;
    if (uniq) {
        uint8_t *seen = rill__calloc((size_t)(u->range + 7) / 8, 1);
        RILL_CHECK_ALLOC(seen);
        for (int64_t i = 0; i < ns;) {
            tries++;
            int64_t v = unigram_sample(u);
            if (seen[v >> 3] & (1u << (v & 7))) continue;
            seen[v >> 3] |= (uint8_t)(1u << (v & 7));
            c[i++] = v;
        }
        rill__free(seen);
    } else {
        for (int64_t i = 0; i < ns; i++) c[i] = unigram_sample(u);
        tries = ns;
    }
    float *se = sex->buf->data, *te = tex->buf->data;
    for (int64_t i = 0; i < ns; i++) se[i] = expected(unigram_prob(u, c[i]), ns, tries);
    for (int64_t i = 0; i < tc->numel; i++)
        te[i] = expected(unigram_prob(u, rill__index_at(tc, i)), ns, tries);
    if (u->learned) /* TF's UnigramSampler::Update, after the draw */
        for (int64_t i = 0; i < tc->numel; i++) {
            int64_t v = rill__index_at(tc, i);
            if (v < 0 || v >= u->range) continue;
            u->w[v] += 1;
            fen_add(u, v, 1);
        }
}

#define ANY RILL_DT_INVALID
#define ALL (~0u)
#define SK(OP, DEV, FN, HOST, FREE)                                                                \
    {                                                                                              \
        .op = OP, .device_type = DEV, .dtype = ANY, .fn = FN, .state_free = FREE,                  \
        .host_memory_inputs = HOST, .host_memory_outputs = HOST                                    \
    }

const rill__kernel_def rill__cpu_kernels_sparse[] = {
    SK("SparseToDense", "CPU", sparse_to_dense_kernel, 1u << 1, NULL),
    SK("CTCGreedyDecoder", "CPU", ctc_greedy_kernel, 0, NULL),
    SK("FixedUnigramCandidateSampler", "CPU", unigram_kernel, 0, unigram_free),
    SK("LearnedUnigramCandidateSampler", "CPU", unigram_kernel, 0, unigram_free),
#ifdef RILL_HAVE_OPENCL
    /* on a GPU they run on the host (no arithmetic worth a device kernel) */
    SK("SparseToDense", "OPENCL", sparse_to_dense_kernel, ALL, NULL),
    SK("CTCGreedyDecoder", "OPENCL", ctc_greedy_kernel, ALL, NULL),
    SK("FixedUnigramCandidateSampler", "OPENCL", unigram_kernel, ALL, unigram_free),
    SK("LearnedUnigramCandidateSampler", "OPENCL", unigram_kernel, ALL, unigram_free),
#endif
    {0},
};
