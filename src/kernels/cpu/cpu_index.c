/* cpu_index.c - CPU kernels for the indexing ops of src/graph/ops_index.c: GatherV2,
 * IndexedSlicesToDense, GatherNd, ScatterNd, Where, InTopKV2, TopKV2 (and its gradient),
 * Unique, UnsortedSegmentSum, SegmentSum, ScatterUpdate / ScatterAdd / ScatterSub, and the
 * candidate samplers with ComputeAccidentalHits.
 *
 * Every index is checked before anything is written, with TensorFlow's texts
 * ("indices[1,0] = 7 is not in [0, 5)"). Rows are moved with memcpy and summed with
 * rill__rows_add (cpu_rows.h), so every numeric dtype works and duplicates accumulate. Small
 * int inputs (axis, k, shapes, num_segments) live in host memory; on an OpenCL device these
 * kernels serve too, with every tensor in host memory (cl_index.c has the GPU GatherV2). */
#include "cpu_kernels.h"
#include "cpu_rows.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t prod(const rill_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++) p *= s->dims[d];
    return p;
}

static char *elem(const rill_tensor *t, int64_t i)
{
    return (char *)t->buf->data + (size_t)i * rill_dtype_size(t->dtype);
}

static bool check_add_dtype(rill__kctx *ctx, rill_dtype t)
{
    if (t == RILL_FLOAT || t == RILL_DOUBLE || t == RILL_HALF || t == RILL_INT32 || t == RILL_INT64)
        return true;
    rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "%s does not support %s", ctx->node->op->name,
                    rill_dtype_name(t));
    return false;
}

/* Checks every index of ix is in [0, limit) (negatives allowed when drop_negatives); TF's
 * text names the first bad one. */
static bool check_indices(rill__kctx *ctx, const rill_tensor *ix, int64_t limit,
                          bool drop_negatives, const char *what)
{
    for (int64_t i = 0; i < ix->numel; i++) {
        int64_t v = rill__index_at(ix, i);
        if ((v >= 0 && v < limit) || (v < 0 && drop_negatives)) continue;
        char pos[128];
        rill__index_pos(&ix->shape, i, pos, sizeof pos);
        if (strcmp(what, "segment_ids") == 0)
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "segment_ids%s = %lld is out of range [0, %lld)", pos, (long long)v,
                            (long long)limit);
        else
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s%s = %lld is not in [0, %lld)", what,
                            pos, (long long)v, (long long)limit);
        return false;
    }
    return true;
}

/* --- GatherV2 --- */

static void gather_kernel(rill__kctx *ctx)
{
    const rill_tensor *p = ctx->inputs[0], *ix = ctx->inputs[1];
    int64_t axis = ctx->node->ninputs > 2 ? rill__index_at(ctx->inputs[2], 0)
                                          : rill__attr_int(ctx->node, "axis", 0);
    bool drop = rill__attr_bool(ctx->node, "drop_negatives", false);
    int r = p->shape.rank;
    if (axis < -r || axis >= r) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Expected axis in the range [%d, %d), but got %lld", -r, r,
                        (long long)axis);
        return;
    }
    if (axis < 0) axis += r;
    int a = (int)axis;
    if (r - 1 + ix->shape.rank > RILL_MAX_DIMS) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "GatherV2: the result has more than %d dims",
                        RILL_MAX_DIMS);
        return;
    }
    rill_shape os = {.rank = 0};
    for (int d = 0; d < a; d++) os.dims[os.rank++] = p->shape.dims[d];
    for (int d = 0; d < ix->shape.rank; d++) os.dims[os.rank++] = ix->shape.dims[d];
    for (int d = a + 1; d < r; d++) os.dims[os.rank++] = p->shape.dims[d];
    int64_t outer = prod(&p->shape, 0, a), lim = p->shape.dims[a];
    int64_t inner = prod(&p->shape, a + 1, r), n = ix->numel;
    if (!check_indices(ctx, ix, lim, drop, "indices")) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, p->dtype, &os);
    if (!y) return;
    if (p->dtype == RILL_STRING) { /* strings are not flat: copied one by one */
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < n; i++) {
                int64_t v = rill__index_at(ix, i);
                for (int64_t e = 0; e < inner; e++) {
                    size_t len = 0;
                    const char *str =
                        v < 0 ? "" : rill_tensor_get_string(p, (o * lim + v) * inner + e, &len);
                    rill_tensor_set_string(y, (o * n + i) * inner + e, str ? str : "", len);
                }
            }
        return;
    }
    size_t row = (size_t)inner * rill_dtype_size(p->dtype);
    char *yd = y->buf->data;
    const char *pd = p->buf->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < n; i++) {
            int64_t v = rill__index_at(ix, i);
            char *dst = yd + (size_t)(o * n + i) * row;
            if (v < 0)
                memset(dst, 0, row);
            else
                memcpy(dst, pd + (size_t)(o * lim + v) * row, row);
        }
}

/* --- IndexedSlicesToDense --- */

/* The shape an int vector host tensor holds; false (ctx failed) when a dim is negative. */
static bool shape_of_tensor(rill__kctx *ctx, const rill_tensor *t, rill_shape *s)
{
    if (t->shape.rank != 1 || t->numel > RILL_MAX_DIMS) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "%s: the shape must be a vector of at most %d "
                        "dims",
                        ctx->node->op->name, RILL_MAX_DIMS);
        return false;
    }
    s->rank = (int)t->numel;
    for (int d = 0; d < s->rank; d++) {
        s->dims[d] = rill__index_at(t, d);
        if (s->dims[d] < 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: shape[%d] = %lld must be >= 0",
                            ctx->node->op->name, d, (long long)s->dims[d]);
            return false;
        }
    }
    return true;
}

static void slices_to_dense_kernel(rill__kctx *ctx)
{
    const rill_tensor *v = ctx->inputs[0], *ix = ctx->inputs[1];
    rill_shape ds;
    if (!shape_of_tensor(ctx, ctx->inputs[2], &ds) || !check_add_dtype(ctx, v->dtype)) return;
    int64_t axis = rill__attr_int(ctx->node, "axis", 0);
    if (axis < 0) axis += ds.rank;
    if (axis < 0 || axis >= ds.rank) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "IndexedSlicesToDense: axis %lld is not in [0, %d)", (long long)axis,
                        ds.rank);
        return;
    }
    int a = (int)axis;
    int64_t outer = prod(&ds, 0, a), lim = ds.dims[a], inner = prod(&ds, a + 1, ds.rank);
    int64_t n = ix->numel;
    if (v->numel != outer * n * inner) {
        char b1[96], b2[96], b3[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "IndexedSlicesToDense: values.shape %s does not match indices.shape %s "
                        "in dense shape %s",
                        rill_shape_str(&v->shape, b1, sizeof b1),
                        rill_shape_str(&ix->shape, b2, sizeof b2),
                        rill_shape_str(&ds, b3, sizeof b3));
        return;
    }
    bool drop = rill__attr_bool(ctx->node, "drop_negatives", false);
    if (!check_indices(ctx, ix, lim, drop, "indices")) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, v->dtype, &ds);
    if (!y) return;
    memset(y->buf->data, 0, rill_tensor_nbytes(y));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < n; i++) {
            int64_t k = rill__index_at(ix, i);
            if (k < 0) continue;
            rill__rows_add(v->dtype, elem(y, (o * lim + k) * inner), elem(v, (o * n + i) * inner),
                           inner, 1);
        }
}

/* --- GatherNd, ScatterNd --- */

/* The element offset of index tuple t (k coordinates) into shape s, or -1 (ctx failed, TF's
 * text) when it is out of range. */
static int64_t nd_offset(rill__kctx *ctx, const rill_tensor *ix, int64_t t, int64_t k,
                         const rill_shape *s, bool gather)
{
    int64_t off = 0;
    bool ok = true;
    for (int64_t j = 0; j < k; j++) {
        int64_t c = rill__index_at(ix, t * k + j);
        if (c < 0 || c >= s->dims[j]) ok = false;
        off = off * s->dims[j] + c;
    }
    if (ok) return off * prod(s, (int)k, s->rank);
    char pos[128], tup[256], sh[96];
    rill_shape outer = ix->shape;
    outer.rank--;
    rill__index_pos(&outer, t, pos, sizeof pos);
    size_t o = 0;
    for (int64_t j = 0; j < k && o + 24 < sizeof tup; j++)
        o += (size_t)snprintf(tup + o, sizeof tup - o, "%s%lld", j ? ", " : "",
                              (long long)rill__index_at(ix, t * k + j));
    tup[o] = 0;
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "indices%s = [%s] does not index into %s %s",
                    outer.rank ? pos : "[0]", tup, gather ? "param shape" : "shape",
                    rill_shape_str(s, sh, sizeof sh));
    return -1;
}

static void gather_nd_kernel(rill__kctx *ctx)
{
    const rill_tensor *p = ctx->inputs[0], *ix = ctx->inputs[1];
    if (ix->shape.rank < 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "indices must be at least a vector");
        return;
    }
    int64_t k = ix->shape.dims[ix->shape.rank - 1];
    if (k > p->shape.rank) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "index innermost dimension length must be <= params rank; saw: %lld vs. "
                        "%d",
                        (long long)k, p->shape.rank);
        return;
    }
    rill_shape os = {.rank = 0};
    for (int d = 0; d < ix->shape.rank - 1; d++) os.dims[os.rank++] = ix->shape.dims[d];
    for (int d = (int)k; d < p->shape.rank; d++) os.dims[os.rank++] = p->shape.dims[d];
    int64_t m = k ? ix->numel / k : prod(&ix->shape, 0, ix->shape.rank - 1);
    int64_t slice = prod(&p->shape, (int)k, p->shape.rank);
    int64_t *offs = rill__malloc((size_t)(m ? m : 1) * sizeof *offs);
    RILL_CHECK_ALLOC(offs);
    for (int64_t t = 0; t < m; t++)
        if ((offs[t] = nd_offset(ctx, ix, t, k, &p->shape, true)) < 0) goto done;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, p->dtype, &os);
    if (!y) goto done;
    size_t row = (size_t)slice * rill_dtype_size(p->dtype);
    for (int64_t t = 0; t < m; t++) memcpy(elem(y, t * slice), elem(p, offs[t]), row);
done:
    rill__free(offs);
}

static void scatter_nd_kernel(rill__kctx *ctx)
{
    const rill_tensor *ix = ctx->inputs[0], *u = ctx->inputs[1];
    rill_shape s;
    if (!shape_of_tensor(ctx, ctx->inputs[2], &s) || !check_add_dtype(ctx, u->dtype)) return;
    if (ix->shape.rank < 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "indices must be at least a vector");
        return;
    }
    int64_t k = ix->shape.dims[ix->shape.rank - 1];
    int64_t m = k ? ix->numel / k : prod(&ix->shape, 0, ix->shape.rank - 1);
    if (k > s.rank || u->numel != m * prod(&s, (int)(k <= s.rank ? k : 0), s.rank)) {
        char a[96], b[96], c[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Dimensions mismatch: updates.shape must be indices.shape[:-1] + "
                        "shape[indices.shape[-1]:]; got indices.shape %s, updates.shape %s, "
                        "shape %s",
                        rill_shape_str(&ix->shape, a, sizeof a),
                        rill_shape_str(&u->shape, b, sizeof b), rill_shape_str(&s, c, sizeof c));
        return;
    }
    int64_t slice = prod(&s, (int)k, s.rank);
    int64_t *offs = rill__malloc((size_t)(m ? m : 1) * sizeof *offs);
    RILL_CHECK_ALLOC(offs);
    for (int64_t t = 0; t < m; t++)
        if ((offs[t] = nd_offset(ctx, ix, t, k, &s, false)) < 0) goto done;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, u->dtype, &s);
    if (!y) goto done;
    memset(y->buf->data, 0, rill_tensor_nbytes(y));
    for (int64_t t = 0; t < m; t++)
        rill__rows_add(u->dtype, elem(y, offs[t]), elem(u, t * slice), slice, 1);
done:
    rill__free(offs);
}

/* --- Where --- */

static bool nonzero(const rill_tensor *x, int64_t i)
{
    if (x->dtype == RILL_BOOL) return ((const uint8_t *)x->buf->data)[i] != 0;
    if (x->dtype == RILL_INT64) return ((const int64_t *)x->buf->data)[i] != 0;
    return rill_tensor_get_double(x, i) != 0;
}

static void where_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    if (x->dtype == RILL_STRING) {
        rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "Where does not support string");
        return;
    }
    int64_t cnt = 0;
    for (int64_t i = 0; i < x->numel; i++) cnt += nonzero(x, i);
    int r = x->shape.rank;
    rill_shape os = rill_shape_matrix(cnt, r);
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, RILL_INT64, &os);
    if (!y) return;
    int64_t *o = y->buf->data;
    for (int64_t i = 0; i < x->numel; i++) {
        if (!nonzero(x, i)) continue;
        int64_t f = i;
        for (int d = r - 1; d >= 0; d--) {
            o[d] = f % x->shape.dims[d];
            f /= x->shape.dims[d];
        }
        o += r;
    }
}

/* --- InTopKV2 --- */

static void in_top_k_kernel(rill__kctx *ctx)
{
    const rill_tensor *p = ctx->inputs[0], *t = ctx->inputs[1];
    int64_t k = rill__index_at(ctx->inputs[2], 0);
    if (p->shape.rank != 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "predictions must be 2-dimensional");
        return;
    }
    if (t->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "targets must be 1-dimensional");
        return;
    }
    int64_t b = p->shape.dims[0], c = p->shape.dims[1];
    if (t->shape.dims[0] != b) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "First dimension of predictions %lld must match length of targets %lld",
                        (long long)b, (long long)t->shape.dims[0]);
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, RILL_BOOL, &t->shape);
    if (!y) return;
    const float *pd = p->buf->data;
    uint8_t *o = y->buf->data;
    for (int64_t i = 0; i < b; i++) {
        int64_t tg = rill__index_at(t, i);
        bool in = tg >= 0 && tg < c && isfinite(pd[i * c + tg]);
        if (in) {
            float tp = pd[i * c + tg];
            int64_t more = 0;
            for (int64_t j = 0; j < c && more < k; j++)
                if (pd[i * c + j] > tp) more++;
            in = more < k;
        }
        o[i] = in;
    }
}

/* --- TopKV2 and its gradient --- */

/* Stable merge sort of idx[0..n) by v descending (ties keep the lower index first). */
static void sort_desc(int32_t *idx, int32_t *tmp, int64_t n, const double *v)
{
    if (n < 2) return;
    int64_t h = n / 2;
    sort_desc(idx, tmp, h, v);
    sort_desc(idx + h, tmp, n - h, v);
    int64_t a = 0, b = h, o = 0;
    while (a < h && b < n) {
        double va = v[idx[a]], vb = v[idx[b]];
        /* NaN sorts first, as TF's (greater-than with NaN largest) */
        bool take_b = (isnan(vb) && !isnan(va)) || vb > va;
        tmp[o++] = take_b ? idx[b++] : idx[a++];
    }
    while (a < h) tmp[o++] = idx[a++];
    while (b < n) tmp[o++] = idx[b++];
    memcpy(idx, tmp, (size_t)n * sizeof *idx);
}

static void top_k_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    int64_t k = rill__index_at(ctx->inputs[1], 0);
    if (k < 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Need k >= 0, got %lld", (long long)k);
        return;
    }
    if (x->shape.rank < 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "input must be >= 1-D, got shape []");
        return;
    }
    int64_t c = x->shape.dims[x->shape.rank - 1];
    if (c < k) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "input must have at least k columns. Had %lld, needed %lld", (long long)c,
                        (long long)k);
        return;
    }
    if (c > INT32_MAX) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "TopKV2: last dimension above int32");
        return;
    }
    rill_shape os = x->shape;
    os.dims[os.rank - 1] = k;
    rill_tensor *vals = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    rill_tensor *inds = rill__kctx_alloc_output(ctx, 1, RILL_INT32, &os);
    if (!vals || !inds) return;
    int64_t rows = c ? x->numel / c : 0;
    double *v = rill__malloc((size_t)(c ? c : 1) * sizeof *v);
    int32_t *idx = rill__malloc((size_t)(c ? c : 1) * sizeof *idx);
    int32_t *tmp = rill__malloc((size_t)(c ? c : 1) * sizeof *tmp);
    RILL_CHECK_ALLOC(v && idx && tmp);
    size_t es = rill_dtype_size(x->dtype);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < c; j++) {
            v[j] = rill_tensor_get_double(x, r * c + j);
            idx[j] = (int32_t)j;
        }
        sort_desc(idx, tmp, c, v);
        for (int64_t j = 0; j < k; j++) {
            ((int32_t *)inds->buf->data)[r * k + j] = idx[j];
            memcpy(elem(vals, r * k + j), elem(x, r * c + idx[j]), es);
        }
    }
    rill__free(v);
    rill__free(idx);
    rill__free(tmp);
}

static void top_k_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *ix = ctx->inputs[1], *dv = ctx->inputs[2];
    if (!check_add_dtype(ctx, x->dtype)) return;
    int64_t c = x->shape.rank ? x->shape.dims[x->shape.rank - 1] : 1;
    int64_t k = ix->shape.rank ? ix->shape.dims[ix->shape.rank - 1] : 1;
    int64_t rows = c ? x->numel / c : 0;
    if (ix->numel != rows * k || dv->numel != ix->numel) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "_TopKGrad: indices and dvalues do not match x");
        return;
    }
    if (!check_indices(ctx, ix, c, false, "indices")) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y) return;
    memset(y->buf->data, 0, rill_tensor_nbytes(y));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < k; j++)
            rill__rows_add(x->dtype, elem(y, r * c + rill__index_at(ix, r * k + j)),
                           elem(dv, r * k + j), 1, 1);
}

/* --- Unique --- */

/* The bits of element i, with -0.0 as 0.0 (they compare equal, as in TF's hash map). */
static uint64_t key_of(const rill_tensor *x, int64_t i)
{
    uint64_t k = 0;
    switch (x->dtype) {
    case RILL_FLOAT: {
        float f = ((const float *)x->buf->data)[i];
        if (f == 0) f = 0;
        uint32_t b;
        memcpy(&b, &f, 4);
        return b;
    }
    case RILL_DOUBLE: {
        double d = ((const double *)x->buf->data)[i];
        if (d == 0) d = 0;
        memcpy(&k, &d, 8);
        return k;
    }
    default:
        memcpy(&k, elem(x, i), rill_dtype_size(x->dtype));
        return k;
    }
}

static void unique_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    if (x->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "unique expects a 1D vector.");
        return;
    }
    if (x->dtype == RILL_STRING || rill_dtype_size(x->dtype) > 8) {
        rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "Unique does not support %s",
                        rill_dtype_name(x->dtype));
        return;
    }
    int64_t n = x->numel, cap = 16;
    while (cap < 2 * n) cap *= 2;
    int64_t *slot = rill__malloc((size_t)cap * sizeof *slot); /* first position, or -1 */
    int64_t *uid = rill__malloc((size_t)cap * sizeof *uid);   /* unique number of that slot */
    int64_t *first = rill__malloc((size_t)(n ? n : 1) * sizeof *first);
    RILL_CHECK_ALLOC(slot && uid && first);
    for (int64_t i = 0; i < cap; i++) slot[i] = -1;
    rill_dtype it = rill__attr_type(ctx->node, "out_idx", RILL_INT32);
    rill_tensor *idx = rill__kctx_alloc_output(ctx, 1, it, &x->shape);
    int64_t nu = 0;
    for (int64_t i = 0; idx && i < n; i++) {
        uint64_t key = key_of(x, i);
        uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> 17;
        int64_t s = (int64_t)(h & (uint64_t)(cap - 1));
        while (slot[s] >= 0 && key_of(x, slot[s]) != key) s = (s + 1) & (cap - 1);
        if (slot[s] < 0) {
            slot[s] = i;
            uid[s] = nu;
            first[nu++] = i;
        }
        if (it == RILL_INT32)
            ((int32_t *)idx->buf->data)[i] = (int32_t)uid[s];
        else
            ((int64_t *)idx->buf->data)[i] = uid[s];
    }
    rill_shape ys = rill_shape_vector(nu);
    rill_tensor *y = idx ? rill__kctx_alloc_output(ctx, 0, x->dtype, &ys) : NULL;
    size_t es = rill_dtype_size(x->dtype);
    for (int64_t j = 0; y && j < nu; j++) memcpy(elem(y, j), elem(x, first[j]), es);
    rill__free(slot);
    rill__free(uid);
    rill__free(first);
}

/* --- segment sums --- */

static void unsorted_segment_sum_kernel(rill__kctx *ctx)
{
    const rill_tensor *d = ctx->inputs[0], *ids = ctx->inputs[1];
    int64_t k = rill__index_at(ctx->inputs[2], 0);
    if (!check_add_dtype(ctx, d->dtype) || !rill__ids_prefix_ok(ctx, d, ids)) return;
    if (k < 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Input num_segments == %lld must not be negative.", (long long)k);
        return;
    }
    if (!check_indices(ctx, ids, k, true, "segment_ids")) return;
    rill_shape os = {.rank = 1, .dims = {k}};
    for (int i = ids->shape.rank; i < d->shape.rank; i++) os.dims[os.rank++] = d->shape.dims[i];
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, d->dtype, &os);
    if (!y) return;
    memset(y->buf->data, 0, rill_tensor_nbytes(y));
    int64_t inner = prod(&d->shape, ids->shape.rank, d->shape.rank);
    for (int64_t i = 0; i < ids->numel; i++) {
        int64_t s = rill__index_at(ids, i);
        if (s >= 0) rill__rows_add(d->dtype, elem(y, s * inner), elem(d, i * inner), inner, 1);
    }
}

static void segment_sum_kernel(rill__kctx *ctx)
{
    const rill_tensor *d = ctx->inputs[0], *ids = ctx->inputs[1];
    if (!check_add_dtype(ctx, d->dtype)) return;
    if (ids->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "segment_ids should be a vector.");
        return;
    }
    if (d->shape.rank < 1 || ids->numel != d->shape.dims[0]) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "segment_ids should be the same size as dimension 0 of input.");
        return;
    }
    int64_t last = -1;
    for (int64_t i = 0; i < ids->numel; i++) {
        int64_t s = rill__index_at(ids, i);
        if (s < 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "segment ids must be >= 0");
            return;
        }
        if (s < last) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "segment ids are not increasing");
            return;
        }
        last = s;
    }
    rill_shape os = d->shape;
    os.dims[0] = last + 1;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, d->dtype, &os);
    if (!y) return;
    memset(y->buf->data, 0, rill_tensor_nbytes(y));
    int64_t inner = prod(&d->shape, 1, d->shape.rank);
    for (int64_t i = 0; i < ids->numel; i++)
        rill__rows_add(d->dtype, elem(y, rill__index_at(ids, i) * inner), elem(d, i * inner), inner,
                       1);
}

/* --- ScatterUpdate, ScatterAdd, ScatterSub --- */

static void scatter_kernel(rill__kctx *ctx, int sign)
{
    rill__var *v = ctx->vars[0];
    const rill_tensor *ix = ctx->inputs[1], *u = ctx->inputs[2];
    if (sign && !check_add_dtype(ctx, u->dtype)) return;
    if (v->shape.rank < 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: the variable must be at least a vector",
                        ctx->node->op->name);
        return;
    }
    int64_t inner = prod(&v->shape, 1, v->shape.rank);
    bool scalar = u->shape.rank == 0;
    if (!scalar && u->numel != ix->numel * inner) {
        char a[96], b[96], c[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Must have updates.shape = indices.shape + params.shape[1:] or "
                        "updates.shape = [], got updates.shape %s, indices.shape %s, "
                        "params.shape %s",
                        rill_shape_str(&u->shape, a, sizeof a),
                        rill_shape_str(&ix->shape, b, sizeof b),
                        rill_shape_str(&v->shape, c, sizeof c));
        return;
    }
    if (!check_indices(ctx, ix, v->shape.dims[0], false, "indices")) return;
    pthread_mutex_lock(&v->mu);
    rill_tensor *t = rill__var_writable(ctx, v);
    if (t) {
        size_t es = rill_dtype_size(t->dtype);
        for (int64_t i = 0; i < ix->numel; i++) {
            char *dst = elem(t, rill__index_at(ix, i) * inner);
            if (!scalar) {
                rill__rows_add(t->dtype, dst, elem(u, i * inner), inner, sign);
                continue;
            }
            for (int64_t j = 0; j < inner; j++)
                rill__rows_add(t->dtype, dst + (size_t)j * es, u->buf->data, 1, sign);
        }
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(t));
    }
    pthread_mutex_unlock(&v->mu);
}

static void scatter_update_kernel(rill__kctx *ctx)
{
    scatter_kernel(ctx, 0);
}

static void scatter_add_kernel(rill__kctx *ctx)
{
    scatter_kernel(ctx, 1);
}

static void scatter_sub_kernel(rill__kctx *ctx)
{
    scatter_kernel(ctx, -1);
}

/* --- candidate samplers (TF's RangeSampler: LogUniformSampler, UniformSampler) --- */

typedef struct sampler {
    bool log_uniform;
    int64_t range;
    double log_range;
} sampler;

static int64_t sample(const sampler *s, rill__rng *r)
{
    if (s->log_uniform) {
        int64_t v = (int64_t)exp(rill__rng_uniform(r) * s->log_range) - 1;
        return v < 0 ? 0 : v >= s->range ? s->range - 1 : v;
    }
    int64_t v = (int64_t)(rill__rng_uniform(r) * (double)s->range);
    return v >= s->range ? s->range - 1 : v;
}

static double probability(const sampler *s, int64_t v)
{
    if (v < 0 || v >= s->range) return 0;
    if (s->log_uniform) return log((v + 2.0) / (v + 1.0)) / s->log_range;
    return 1.0 / (double)s->range;
}

/* TF's ExpectedCountHelper. */
static double expected_count(double p, int64_t batch, int64_t tries)
{
    if (tries == batch) return p * (double)batch;
    return -expm1((double)tries * log1p(-p));
}

static void sampler_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    const rill_tensor *tc = ctx->inputs[0];
    int64_t num_true = rill__attr_int(n, "num_true", 1);
    int64_t ns = rill__attr_int(n, "num_sampled", 1);
    bool uniq = rill__attr_bool(n, "unique", false);
    sampler s = {.log_uniform = strcmp(n->op->name, "LogUniformCandidateSampler") == 0,
                 .range = rill__attr_int(n, "range_max", 1)};
    s.log_range = log((double)s.range + 1);
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
    rill_shape ss = rill_shape_vector(ns);
    rill_tensor *cand = rill__kctx_alloc_output(ctx, 0, RILL_INT64, &ss);
    rill_tensor *tex = rill__kctx_alloc_output(ctx, 1, RILL_FLOAT, &tc->shape);
    rill_tensor *sex = rill__kctx_alloc_output(ctx, 2, RILL_FLOAT, &ss);
    if (!cand || !tex || !sex) return;
    rill__rng *r = rill__kctx_rng(ctx);
    int64_t *c = cand->buf->data, tries = 0;
    if (uniq) {
        /* rejection: draw until ns distinct values (a bitmap of the range seen so far) */
        uint8_t *seen = rill__calloc((size_t)(s.range + 7) / 8, 1);
        RILL_CHECK_ALLOC(seen);
        for (int64_t i = 0; i < ns;) {
            tries++;
            int64_t v = sample(&s, r);
            if (seen[v >> 3] & (1u << (v & 7))) continue;
            seen[v >> 3] |= (uint8_t)(1u << (v & 7));
            c[i++] = v;
        }
        rill__free(seen);
    } else {
        for (int64_t i = 0; i < ns; i++) c[i] = sample(&s, r);
        tries = ns;
    }
    float *se = sex->buf->data, *te = tex->buf->data;
    for (int64_t i = 0; i < ns; i++)
        se[i] = (float)expected_count(probability(&s, c[i]), ns, tries);
    for (int64_t i = 0; i < tc->numel; i++)
        te[i] = (float)expected_count(probability(&s, rill__index_at(tc, i)), ns, tries);
}

static void accidental_hits_kernel(rill__kctx *ctx)
{
    const rill_tensor *tc = ctx->inputs[0], *sc = ctx->inputs[1];
    int64_t num_true = rill__attr_int(ctx->node, "num_true", 1);
    if (tc->shape.rank != 2 || tc->shape.dims[1] != num_true) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "true_classes must be a matrix with num_true (%lld) columns",
                        (long long)num_true);
        return;
    }
    if (sc->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "sampled_candidates must be a vector");
        return;
    }
    const int64_t *t = tc->buf->data, *s = sc->buf->data;
    int64_t rows = tc->shape.dims[0], ns = sc->numel, hits = 0;
    for (int pass = 0; pass < 2; pass++) {
        rill_tensor *oi = NULL, *oid = NULL, *ow = NULL;
        if (pass) {
            rill_shape hs = rill_shape_vector(hits);
            oi = rill__kctx_alloc_output(ctx, 0, RILL_INT32, &hs);
            oid = rill__kctx_alloc_output(ctx, 1, RILL_INT64, &hs);
            ow = rill__kctx_alloc_output(ctx, 2, RILL_FLOAT, &hs);
            if (!oi || !oid || !ow) return;
        }
        int64_t h = 0;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t k = 0; k < num_true; k++)
                for (int64_t j = 0; j < ns; j++) {
                    if (t[i * num_true + k] != s[j]) continue;
                    if (pass) {
                        ((int32_t *)oi->buf->data)[h] = (int32_t)i;
                        ((int64_t *)oid->buf->data)[h] = j;
                        ((float *)ow->buf->data)[h] = -FLT_MAX;
                    }
                    h++;
                }
        hits = h;
    }
}

#define ANY RILL_DT_INVALID
#define ALL (~0u)
#define CPU_K(OP, FN, HOST_IN)                                                                     \
    {                                                                                              \
        .op = OP, .device_type = "CPU", .dtype = ANY, .fn = FN, .host_memory_inputs = HOST_IN      \
    }
#define CL_K(OP, FN)                                                                               \
    {                                                                                              \
        .op = OP, .device_type = "OPENCL", .dtype = ANY, .fn = FN, .host_memory_inputs = ALL,      \
        .host_memory_outputs = ALL                                                                 \
    }
#define SAMPLER(OP, DEV, HOST)                                                                     \
    {                                                                                              \
        .op = OP, .device_type = DEV, .dtype = ANY, .fn = sampler_kernel,                          \
        .state_free = rill__kctx_rng_free, .host_memory_inputs = HOST, .host_memory_outputs = HOST \
    }

const rill__kernel_def rill__cpu_kernels_index[] = {
    CPU_K("GatherV2", gather_kernel, 1u << 2),
    CPU_K("IndexedSlicesToDense", slices_to_dense_kernel, 1u << 2),
    CPU_K("GatherNd", gather_nd_kernel, 0),
    CPU_K("ScatterNd", scatter_nd_kernel, 1u << 2),
    CPU_K("Where", where_kernel, 0),
    CPU_K("InTopKV2", in_top_k_kernel, 1u << 2),
    CPU_K("TopKV2", top_k_kernel, 1u << 1),
    CPU_K("_TopKGrad", top_k_grad_kernel, 0),
    CPU_K("Unique", unique_kernel, 0),
    CPU_K("UnsortedSegmentSum", unsorted_segment_sum_kernel, 1u << 2),
    CPU_K("SegmentSum", segment_sum_kernel, 0),
    CPU_K("ScatterUpdate", scatter_update_kernel, 0),
    CPU_K("ScatterAdd", scatter_add_kernel, 0),
    CPU_K("ScatterSub", scatter_sub_kernel, 0),
    CPU_K("ComputeAccidentalHits", accidental_hits_kernel, 0),
    SAMPLER("LogUniformCandidateSampler", "CPU", 0),
    SAMPLER("UniformCandidateSampler", "CPU", 0),
#ifdef RILL_HAVE_OPENCL
    /* On a GPU every dtype but GatherV2's float, double and half (cl_index.c) runs here, with its
     * tensors in host memory. The scatters update variables, which live on the device: their
     * OpenCL kernels are in cl_sparse_apply.c. */
    CL_K("GatherV2", gather_kernel),
    CL_K("IndexedSlicesToDense", slices_to_dense_kernel),
    CL_K("GatherNd", gather_nd_kernel),
    CL_K("ScatterNd", scatter_nd_kernel),
    CL_K("Where", where_kernel),
    CL_K("InTopKV2", in_top_k_kernel),
    CL_K("TopKV2", top_k_kernel),
    CL_K("_TopKGrad", top_k_grad_kernel),
    CL_K("Unique", unique_kernel),
    CL_K("UnsortedSegmentSum", unsorted_segment_sum_kernel),
    CL_K("SegmentSum", segment_sum_kernel),
    CL_K("ComputeAccidentalHits", accidental_hits_kernel),
    SAMPLER("LogUniformCandidateSampler", "OPENCL", ALL),
    SAMPLER("UniformCandidateSampler", "OPENCL", ALL),
#endif
    {0},
};
