/* cpu_search.c - CPU kernels for src/graph/ops_search.c: ListDiff, InvertPermutation,
 * LowerBound / UpperBound, Bincount, DynamicPartition, DynamicStitch (and
 * ParallelDynamicStitch, the same kernel: later inputs win where indices repeat; rows no index
 * names are zeros) and UnravelIndex, with TF's error texts. Host-only: on an OpenCL device they
 * serve with their tensors in host memory. */
#include "cpu_kernels.h"
#include "cpu_rows.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int64_t prod(const rill_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++) p *= s->dims[d];
    return p;
}

static bool is_float(rill_dtype t)
{
    return t == RILL_FLOAT || t == RILL_DOUBLE || t == RILL_HALF;
}

static bool check_real(rill__kctx *ctx, rill_dtype t)
{
    if (is_float(t) || t == RILL_INT32 || t == RILL_INT64 || t == RILL_BOOL) return true;
    rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "%s does not support %s", ctx->node->op->name,
                    rill_dtype_name(t));
    return false;
}

/* A comparable double of element i (integers above 2^53 lose bits; the int64 path of compare()
 * is exact). */
static double val(const rill_tensor *t, int64_t i)
{
    return rill_tensor_get_double(t, i);
}

/* -1, 0, 1: a[i] against b[j] (same dtype). */
static int compare(const rill_tensor *a, int64_t i, const rill_tensor *b, int64_t j)
{
    if (a->dtype == RILL_INT64) {
        int64_t x = ((const int64_t *)a->buf->data)[i], y = ((const int64_t *)b->buf->data)[j];
        return x < y ? -1 : x > y;
    }
    double x = val(a, i), y = val(b, j);
    return x < y ? -1 : x > y ? 1 : x == y ? 0 : 2; /* 2: unordered (NaN) */
}

static void set_index(rill_tensor *t, int64_t i, int64_t v)
{
    if (t->dtype == RILL_INT32)
        ((int32_t *)t->buf->data)[i] = (int32_t)v;
    else
        ((int64_t *)t->buf->data)[i] = v;
}

/* --- ListDiff: x's elements not in y, in x's order, with their positions --- */

static uint64_t hash_key(const rill_tensor *t, int64_t i)
{
    uint64_t k;
    if (t->dtype == RILL_INT64) {
        k = (uint64_t)((const int64_t *)t->buf->data)[i];
    } else {
        double v = val(t, i);
        if (v == 0) v = 0; /* -0 == 0 */
        memcpy(&k, &v, sizeof k);
    }
    return (k * 0x9E3779B97F4A7C15ull) >> 17;
}

static void list_diff_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *y = ctx->inputs[1];
    if (!check_real(ctx, x->dtype)) return;
    if (x->shape.rank != 1 || y->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "x should be a 1D vector.");
        return;
    }
    int64_t cap = 16;
    while (cap < 2 * y->numel) cap *= 2;
    int64_t *slot = rill__malloc((size_t)cap * sizeof *slot);
    uint8_t *keep = rill__malloc((size_t)(x->numel ? x->numel : 1));
    RILL_CHECK_ALLOC(slot && keep);
    for (int64_t i = 0; i < cap; i++) slot[i] = -1;
    for (int64_t j = 0; j < y->numel; j++) {
        int64_t s = (int64_t)(hash_key(y, j) & (uint64_t)(cap - 1));
        while (slot[s] >= 0 && compare(y, slot[s], y, j) != 0) s = (s + 1) & (cap - 1);
        if (slot[s] < 0) slot[s] = j;
    }
    int64_t cnt = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t s = (int64_t)(hash_key(x, i) & (uint64_t)(cap - 1));
        while (slot[s] >= 0 && compare(y, slot[s], x, i) != 0) s = (s + 1) & (cap - 1);
        keep[i] = slot[s] < 0;
        cnt += keep[i];
    }
    rill_shape os = rill_shape_vector(cnt);
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    rill_tensor *idx = out ? rill__kctx_alloc_output(
                                 ctx, 1, rill__attr_type(ctx->node, "out_idx", RILL_INT32), &os)
                           : NULL;
    size_t es = rill_dtype_size(x->dtype);
    for (int64_t i = 0, o = 0; idx && i < x->numel; i++) {
        if (!keep[i]) continue;
        memcpy((char *)out->buf->data + (size_t)o * es, (const char *)x->buf->data + (size_t)i * es,
               es);
        set_index(idx, o++, i);
    }
    rill__free(slot);
    rill__free(keep);
}

/* --- InvertPermutation --- */

static void invert_permutation_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    if (x->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "invert_permutation expects a 1D vector.");
        return;
    }
    int64_t n = x->numel;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!y) return;
    for (int64_t i = 0; i < n; i++) set_index(y, i, -1);
    for (int64_t i = 0; i < n; i++) {
        int64_t d = rill__index_at(x, i);
        if (d < 0 || d >= n) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%lld is not between 0 and %lld",
                            (long long)d, (long long)n);
            return;
        }
        if (rill__index_at(y, d) != -1) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%lld is duplicated in the input.",
                            (long long)d);
            return;
        }
        set_index(y, d, i);
    }
}

/* --- LowerBound, UpperBound: per row, binary searches of values in sorted_inputs --- */

static void bound_kernel(rill__kctx *ctx)
{
    const rill_tensor *a = ctx->inputs[0], *v = ctx->inputs[1];
    bool upper = strcmp(ctx->node->op->name, "UpperBound") == 0;
    if (!check_real(ctx, a->dtype)) return;
    if (a->shape.rank != 2 || v->shape.rank != 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: sorted_inputs and values must be 2-D",
                        ctx->node->op->name);
        return;
    }
    if (a->shape.dims[0] != v->shape.dims[0]) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Leading dim_size of both tensors must match.");
        return;
    }
    rill_dtype ot = rill__attr_type(ctx->node, "out_type", RILL_INT32);
    int64_t b = a->shape.dims[0], na = a->shape.dims[1], nv = v->shape.dims[1];
    if (ot == RILL_INT32 && na >= INT32_MAX) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "trailing dim_size must less than INT_MAX for int32 output type, was %lld",
                        (long long)na);
        return;
    }
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, ot, &v->shape);
    if (!y) return;
    for (int64_t r = 0; r < b; r++)
        for (int64_t j = 0; j < nv; j++) {
            int64_t lo = 0, hi = na, q = r * nv + j;
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                int c = compare(a, r * na + mid, v, q); /* a[mid] vs value */
                /* lower: first a >= v (a < v moves right); upper: first a > v */
                bool right = upper ? (c == -1 || c == 0) : c == -1;
                if (right)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            set_index(y, q, lo);
        }
}

/* --- Bincount(arr, size, weights): counts (or summed weights) of arr's values below size --- */

static void bincount_kernel(rill__kctx *ctx)
{
    const rill_tensor *arr = ctx->inputs[0], *w = ctx->inputs[2];
    int64_t size = rill__index_at(ctx->inputs[1], 0);
    if (size < 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "size (%lld) must be non-negative",
                        (long long)size);
        return;
    }
    bool weighted = w->numel > 0;
    if (weighted && !rill_shape_equal(&w->shape, &arr->shape)) {
        char a[96], b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Input indices and weights must have the same shape: %s vs %s",
                        rill_shape_str(&arr->shape, a, sizeof a),
                        rill_shape_str(&w->shape, b, sizeof b));
        return;
    }
    for (int64_t i = 0; i < arr->numel; i++)
        if (rill__index_at(arr, i) < 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Input arr must be non-negative!");
            return;
        }
    rill_shape os = rill_shape_vector(size);
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, w->dtype, &os);
    if (!y) return;
    memset(y->buf->data, 0, rill_tensor_nbytes(y));
    for (int64_t i = 0; i < arr->numel; i++) {
        int64_t k = rill__index_at(arr, i);
        if (k >= size) continue;
        switch (w->dtype) {
        case RILL_FLOAT:
            ((float *)y->buf->data)[k] += weighted ? ((const float *)w->buf->data)[i] : 1.0f;
            break;
        case RILL_DOUBLE:
            ((double *)y->buf->data)[k] += weighted ? ((const double *)w->buf->data)[i] : 1.0;
            break;
        case RILL_INT32:
            ((int32_t *)y->buf->data)[k] += weighted ? ((const int32_t *)w->buf->data)[i] : 1;
            break;
        default:
            ((int64_t *)y->buf->data)[k] += weighted ? ((const int64_t *)w->buf->data)[i] : 1;
            break;
        }
    }
}

/* --- DynamicPartition --- */

static void dynamic_partition_kernel(rill__kctx *ctx)
{
    const rill_tensor *d = ctx->inputs[0], *p = ctx->inputs[1];
    int np = ctx->node->noutputs;
    bool ok = p->shape.rank <= d->shape.rank;
    for (int i = 0; ok && i < p->shape.rank; i++) ok = p->shape.dims[i] == d->shape.dims[i];
    if (!ok) {
        char a[96], b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "data.shape must start with partitions.shape, got data.shape = %s, "
                        "partitions.shape = %s",
                        rill_shape_str(&d->shape, a, sizeof a),
                        rill_shape_str(&p->shape, b, sizeof b));
        return;
    }
    int64_t *cnt = rill__calloc((size_t)np, sizeof *cnt);
    RILL_CHECK_ALLOC(cnt);
    for (int64_t i = 0; i < p->numel; i++) {
        int64_t k = rill__index_at(p, i);
        if (k < 0 || k >= np) {
            char pos[128];
            rill__index_pos(&p->shape, i, pos, sizeof pos);
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "partitions%s = %lld is not in [0, %d)",
                            pos, (long long)k, np);
            rill__free(cnt);
            return;
        }
        cnt[k]++;
    }
    int64_t inner = prod(&d->shape, p->shape.rank, d->shape.rank);
    size_t row = (size_t)inner * rill_dtype_size(d->dtype);
    rill_tensor **outs = rill__malloc((size_t)np * sizeof *outs);
    RILL_CHECK_ALLOC(outs);
    for (int k = 0; k < np; k++) {
        rill_shape os = {.rank = 1, .dims = {cnt[k]}};
        for (int j = p->shape.rank; j < d->shape.rank; j++) os.dims[os.rank++] = d->shape.dims[j];
        outs[k] = rill__kctx_alloc_output(ctx, k, d->dtype, &os);
        if (!outs[k]) goto done;
        cnt[k] = 0;
    }
    for (int64_t i = 0; i < p->numel; i++) {
        int64_t k = rill__index_at(p, i);
        memcpy((char *)outs[k]->buf->data + (size_t)cnt[k]++ * row,
               (const char *)d->buf->data + (size_t)i * row, row);
    }
done:
    rill__free(outs);
    rill__free(cnt);
}

/* --- DynamicStitch, ParallelDynamicStitch --- */

static void dynamic_stitch_kernel(rill__kctx *ctx)
{
    int k = ctx->node->ninputs / 2;
    const rill_tensor *ix0 = ctx->inputs[0], *d0 = ctx->inputs[k];
    int64_t rows = 0;
    for (int i = 0; i < k; i++) {
        const rill_tensor *ix = ctx->inputs[i], *d = ctx->inputs[k + i];
        bool ok = ix->shape.rank <= d->shape.rank;
        for (int j = 0; ok && j < ix->shape.rank; j++) ok = ix->shape.dims[j] == d->shape.dims[j];
        /* every data[i].shape[indices[i].rank:] is data[0]'s */
        ok = ok && d->shape.rank - ix->shape.rank == d0->shape.rank - ix0->shape.rank;
        for (int j = 0; ok && j < d->shape.rank - ix->shape.rank; j++)
            ok = d->shape.dims[ix->shape.rank + j] == d0->shape.dims[ix0->shape.rank + j];
        if (!ok) {
            char a[96], b[96];
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "data[%d].shape = %s does not start with indices[%d].shape = %s", i,
                            rill_shape_str(&d->shape, a, sizeof a), i,
                            rill_shape_str(&ix->shape, b, sizeof b));
            return;
        }
        for (int64_t j = 0; j < ix->numel; j++) {
            int64_t v = rill__index_at(ix, j);
            if (v < 0) {
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "indices[%d] is out of range", i);
                return;
            }
            if (v + 1 > rows) rows = v + 1;
        }
    }
    rill_shape os = {.rank = 1, .dims = {rows}};
    for (int j = ix0->shape.rank; j < d0->shape.rank; j++) os.dims[os.rank++] = d0->shape.dims[j];
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, d0->dtype, &os);
    if (!y) return;
    memset(y->buf->data, 0, rill_tensor_nbytes(y));
    size_t row = (size_t)prod(&os, 1, os.rank) * rill_dtype_size(d0->dtype);
    for (int i = 0; i < k; i++) {
        const rill_tensor *ix = ctx->inputs[i], *d = ctx->inputs[k + i];
        for (int64_t j = 0; j < ix->numel; j++)
            memcpy((char *)y->buf->data + (size_t)rill__index_at(ix, j) * row,
                   (const char *)d->buf->data + (size_t)j * row, row);
    }
}

/* --- UnravelIndex --- */

static void unravel_index_kernel(rill__kctx *ctx)
{
    const rill_tensor *ix = ctx->inputs[0], *dims = ctx->inputs[1];
    if (dims->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "The indices can only be 1-D, got %d-D",
                        dims->shape.rank);
        return;
    }
    int64_t nd = dims->numel, total = 1;
    for (int64_t i = 0; i < nd; i++) {
        int64_t v = rill__index_at(dims, i);
        if (v == 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Input dims cannot contain a dim of zero, but dims contains zero at "
                            "index %lld",
                            (long long)i);
            return;
        }
        if (v < 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Input dims cannot be negative. Got dim = %lld at index %lld",
                            (long long)v, (long long)i);
            return;
        }
        if (total > INT64_MAX / v) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Input dims product is causing integer overflow");
            return;
        }
        total *= v;
    }
    for (int64_t i = 0; i < ix->numel; i++) {
        int64_t v = rill__index_at(ix, i);
        if (v < 0 || v >= total) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "index is out of bound as with dims");
            return;
        }
    }
    int64_t n = ix->numel;
    rill_shape os = ix->shape.rank == 0 ? rill_shape_vector(nd) : rill_shape_matrix(nd, n);
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, ix->dtype, &os);
    if (!y) return;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = rill__index_at(ix, i);
        for (int64_t j = nd - 1; j >= 0; j--) {
            int64_t dj = rill__index_at(dims, j);
            set_index(y, j * n + i, v % dj);
            v /= dj;
        }
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

const rill__kernel_def rill__cpu_kernels_search[] = {
    CPU_K("ListDiff", list_diff_kernel, 0),
    CPU_K("InvertPermutation", invert_permutation_kernel, 0),
    CPU_K("LowerBound", bound_kernel, 0),
    CPU_K("UpperBound", bound_kernel, 0),
    CPU_K("Bincount", bincount_kernel, 1u << 1),
    CPU_K("DynamicPartition", dynamic_partition_kernel, 0),
    CPU_K("DynamicStitch", dynamic_stitch_kernel, 0),
    CPU_K("ParallelDynamicStitch", dynamic_stitch_kernel, 0),
    CPU_K("UnravelIndex", unravel_index_kernel, 0),
#ifdef RILL_HAVE_OPENCL
    CL_K("ListDiff", list_diff_kernel),
    CL_K("InvertPermutation", invert_permutation_kernel),
    CL_K("LowerBound", bound_kernel),
    CL_K("UpperBound", bound_kernel),
    CL_K("Bincount", bincount_kernel),
    CL_K("DynamicPartition", dynamic_partition_kernel),
    CL_K("DynamicStitch", dynamic_stitch_kernel),
    CL_K("ParallelDynamicStitch", dynamic_stitch_kernel),
    CL_K("UnravelIndex", unravel_index_kernel),
#endif
    {0},
};
