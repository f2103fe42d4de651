/* cpu_segment.c - CPU kernels for src/graph/ops_segment.c: the sorted and unsorted segment
 * reductions (mean, max, min, prod) and their gradient, the TensorScatter ops and the max/min
 * one's gradient, and the in-place ScatterNd* / ScatterMul / Div / Max / Min on variables.
 *
 * Values are combined in double for the floating dtypes (float, double, half) and in int64 for
 * the integer ones, then stored in the tensor's dtype. Empty segments get TF's defaults: 0 for
 * the sorted ops; for the unsorted ones the dtype's lowest value (max), highest (min) or 1
 * (prod). Every index is checked before anything is written, with TF's texts. On an OpenCL
 * device these kernels serve with their tensors in host memory. */
#include "cpu_kernels.h"
#include "cpu_rows.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { SEG_MEAN = 0, SEG_MAX = 1, SEG_MIN = 2, SEG_PROD = 3 };
enum { OP_UPDATE, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAX, OP_MIN };

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

static bool check_numeric(rill__kctx *ctx, rill_dtype t)
{
    if (is_float(t) || t == RILL_INT32 || t == RILL_INT64) return true;
    rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "%s does not support %s", ctx->node->op->name,
                    rill_dtype_name(t));
    return false;
}

/* Element access in double (floating dtypes) or int64 (integers). */
static double get_d(const rill_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case RILL_FLOAT:
        return ((const float *)t->buf->data)[i];
    case RILL_DOUBLE:
        return ((const double *)t->buf->data)[i];
    case RILL_HALF:
        return rill_half_to_float(((const rill_half *)t->buf->data)[i]);
    default:
        return (double)rill_tensor_get_int64(t, i);
    }
}

static void set_d(rill_tensor *t, int64_t i, double v)
{
    switch (t->dtype) {
    case RILL_FLOAT:
        ((float *)t->buf->data)[i] = (float)v;
        break;
    case RILL_DOUBLE:
        ((double *)t->buf->data)[i] = v;
        break;
    case RILL_HALF:
        ((rill_half *)t->buf->data)[i] = rill_half_from_float((float)v);
        break;
    default:
        break;
    }
}

static int64_t get_i(const rill_tensor *t, int64_t i)
{
    return t->dtype == RILL_INT32 ? ((const int32_t *)t->buf->data)[i]
                                  : ((const int64_t *)t->buf->data)[i];
}

static void set_i(rill_tensor *t, int64_t i, int64_t v)
{
    if (t->dtype == RILL_INT32)
        ((int32_t *)t->buf->data)[i] = (int32_t)v;
    else
        ((int64_t *)t->buf->data)[i] = v;
}

static double combine_d(int op, double a, double b)
{
    switch (op) {
    case SEG_MAX:
        return b > a ? b : a;
    case SEG_MIN:
        return b < a ? b : a;
    case SEG_PROD:
        return a * b;
    default:
        return a + b;
    }
}

static int64_t combine_i(int op, int64_t a, int64_t b)
{
    switch (op) {
    case SEG_MAX:
        return b > a ? b : a;
    case SEG_MIN:
        return b < a ? b : a;
    case SEG_PROD:
        return (int64_t)((uint64_t)a * (uint64_t)b);
    default:
        return (int64_t)((uint64_t)a + (uint64_t)b);
    }
}

/* The unsorted ops' value of an empty segment (TF: Eigen's lowest / highest, or 1). */
static double empty_d(int op, rill_dtype t)
{
    double big = t == RILL_FLOAT ? FLT_MAX : t == RILL_HALF ? 65504.0 : DBL_MAX;
    return op == SEG_MAX ? -big : op == SEG_MIN ? big : 1;
}

static int64_t empty_i(int op, rill_dtype t)
{
    int64_t hi = t == RILL_INT32 ? INT32_MAX : INT64_MAX,
            lo = t == RILL_INT32 ? INT32_MIN : INT64_MIN;
    return op == SEG_MAX ? lo : op == SEG_MIN ? hi : 1;
}

static int op_code(const char *name)
{
    if (strstr(name, "Mean")) return SEG_MEAN;
    if (strstr(name, "Max")) return SEG_MAX;
    if (strstr(name, "Min")) return SEG_MIN;
    return SEG_PROD;
}

/* Rows [from, to) of d, all in segment `seg` of y: y[seg] = their reduction. */
static void reduce_rows(const rill_tensor *d, rill_tensor *y, int op, int64_t seg, int64_t from,
                        int64_t to, int64_t inner)
{
    for (int64_t j = 0; j < inner; j++) {
        if (is_float(d->dtype)) {
            double a = get_d(d, from * inner + j);
            for (int64_t r = from + 1; r < to; r++) a = combine_d(op, a, get_d(d, r * inner + j));
            if (op == SEG_MEAN) a /= (double)(to - from);
            set_d(y, seg * inner + j, a);
        } else {
            int64_t a = get_i(d, from * inner + j);
            for (int64_t r = from + 1; r < to; r++) a = combine_i(op, a, get_i(d, r * inner + j));
            if (op == SEG_MEAN) a /= (to - from);
            set_i(y, seg * inner + j, a);
        }
    }
}

/* --- SegmentMean / Max / Min / Prod: TF's SegmentReductionOp, checks in its order --- */

static void segment_kernel(rill__kctx *ctx)
{
    const rill_tensor *d = ctx->inputs[0], *ids = ctx->inputs[1];
    int op = op_code(ctx->node->op->name);
    if (!check_numeric(ctx, d->dtype)) return;
    if (ids->shape.rank != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "segment_ids should be a vector.");
        return;
    }
    int64_t n = ids->numel;
    if (d->shape.rank < 1 || n != d->shape.dims[0]) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "segment_ids should be the same size as dimension 0 of input.");
        return;
    }
    int64_t rows = n ? rill__index_at(ids, n - 1) + 1 : 0;
    if (rows < 0) rows = 0;
    for (int64_t start = 0, end = 1; start < n; end++) {
        int64_t cur = rill__index_at(ids, start);
        if (end < n) {
            int64_t next = rill__index_at(ids, end);
            if (next == cur) continue;
            if (next < cur) {
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "segment ids are not increasing");
                return;
            }
        }
        if (cur < 0 || cur >= rows) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Segment id %lld out of range [0, %lld), possibly because "
                            "'segment_ids' input is not sorted.",
                            (long long)cur, (long long)rows);
            return;
        }
        start = end;
    }
    rill_shape os = d->shape;
    os.dims[0] = rows;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, d->dtype, &os);
    if (!y) return;
    int64_t inner = prod(&d->shape, 1, d->shape.rank);
    memset(y->buf->data, 0, rill_tensor_nbytes(y));
    if (op == SEG_PROD)
        for (int64_t i = 0; i < y->numel; i++) {
            if (is_float(y->dtype))
                set_d(y, i, 1);
            else
                set_i(y, i, 1);
        }
    for (int64_t start = 0, end = 1; start < n; end++) {
        if (end < n && rill__index_at(ids, end) == rill__index_at(ids, start)) continue;
        reduce_rows(d, y, op, rill__index_at(ids, start), start, end, inner);
        start = end;
    }
}

/* --- UnsortedSegmentMax / Min / Prod --- */

static void unsorted_segment_kernel(rill__kctx *ctx)
{
    const rill_tensor *d = ctx->inputs[0], *ids = ctx->inputs[1];
    int64_t k = rill__index_at(ctx->inputs[2], 0);
    int op = op_code(ctx->node->op->name);
    if (!check_numeric(ctx, d->dtype) || !rill__ids_prefix_ok(ctx, d, ids)) return;
    if (k < 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Input num_segments == %lld must not be negative.", (long long)k);
        return;
    }
    for (int64_t i = 0; i < ids->numel; i++) {
        int64_t s = rill__index_at(ids, i);
        if (s < k) continue;
        char pos[128];
        rill__index_pos(&ids->shape, i, pos, sizeof pos);
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "segment_ids%s = %lld is out of range [0, %lld)", pos, (long long)s,
                        (long long)k);
        return;
    }
    rill_shape os = {.rank = 1, .dims = {k}};
    for (int i = ids->shape.rank; i < d->shape.rank; i++) os.dims[os.rank++] = d->shape.dims[i];
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, d->dtype, &os);
    if (!y) return;
    int64_t inner = prod(&d->shape, ids->shape.rank, d->shape.rank);
    bool fl = is_float(d->dtype);
    for (int64_t i = 0; i < y->numel; i++) {
        if (fl)
            set_d(y, i, empty_d(op, d->dtype));
        else
            set_i(y, i, empty_i(op, d->dtype));
    }
    /* float results are accumulated in double, then stored */
    double *acc = NULL;
    if (fl) {
        acc = rill__malloc((size_t)(y->numel ? y->numel : 1) * sizeof *acc);
        RILL_CHECK_ALLOC(acc);
        for (int64_t i = 0; i < y->numel; i++) acc[i] = empty_d(op, d->dtype);
    }
    for (int64_t i = 0; i < ids->numel; i++) {
        int64_t s = rill__index_at(ids, i);
        if (s < 0) continue;
        for (int64_t j = 0; j < inner; j++) {
            int64_t o = s * inner + j, x = i * inner + j;
            if (fl)
                acc[o] = combine_d(op, acc[o], get_d(d, x));
            else
                set_i(y, o, combine_i(op, get_i(y, o), get_i(d, x)));
        }
    }
    if (fl)
        for (int64_t i = 0; i < y->numel; i++) set_d(y, i, acc[i]);
    rill__free(acc);
}

/* --- _SegmentReduceGrad(data, ids, y, dy): TF's _SegmentMeanGrad, _SegmentMinOrMaxGrad,
 * _SegmentProdGrad and their unsorted forms, in one pass per statistic --- */

static void segment_reduce_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *d = ctx->inputs[0], *ids = ctx->inputs[1], *y = ctx->inputs[2];
    const rill_tensor *dy = ctx->inputs[3];
    int op = (int)rill__attr_int(ctx->node, "reduce", SEG_MEAN);
    int64_t nid = ids->numel, inner = nid ? d->numel / nid : 0;
    int64_t rows = y->shape.rank ? y->shape.dims[0] : 0, nout = rows * inner;
    if (dy->numel != y->numel || (nid && d->numel != nid * inner) || (rows && y->numel != nout)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "_SegmentReduceGrad: data, segment_ids, output and gradient disagree");
        return;
    }
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, d->dtype, &d->shape);
    if (!dx) return;
    double *cnt = rill__calloc((size_t)(nout ? nout : 1), sizeof *cnt);
    double *nzp = rill__malloc((size_t)(nout ? nout : 1) * sizeof *nzp);
    RILL_CHECK_ALLOC(cnt && nzp);
    for (int64_t o = 0; o < nout; o++) nzp[o] = 1;
    /* pass 1: per output element, how many rows share it (mean), equal it (max, min), or are
     * zero, with the product of the others (prod) */
    for (int64_t i = 0; i < nid; i++) {
        int64_t s = rill__index_at(ids, i);
        if (s < 0 || s >= rows) continue;
        for (int64_t j = 0; j < inner; j++) {
            int64_t o = s * inner + j;
            double x = get_d(d, i * inner + j);
            if (op == SEG_MEAN)
                cnt[o] += 1;
            else if (op == SEG_PROD) {
                if (x == 0)
                    cnt[o] += 1;
                else
                    nzp[o] *= x;
            } else if (x == get_d(y, o))
                cnt[o] += 1;
        }
    }
    for (int64_t i = 0; i < nid; i++) {
        int64_t s = rill__index_at(ids, i);
        for (int64_t j = 0; j < inner; j++) {
            int64_t x = i * inner + j;
            if (s < 0 || s >= rows) {
                set_d(dx, x, 0);
                continue;
            }
            int64_t o = s * inner + j;
            double g = get_d(dy, o), v = get_d(d, x), r = 0;
            if (op == SEG_MEAN)
                r = g / cnt[o];
            else if (op == SEG_PROD) {
                if (cnt[o] > 1)
                    r = 0;
                else if (v == 0)
                    r = g * nzp[o];
                else
                    r = g * (get_d(y, o) / v);
            } else if (v == get_d(y, o))
                r = g / cnt[o];
            set_d(dx, x, r);
        }
    }
    rill__free(cnt);
    rill__free(nzp);
}

/* --- N-d indices --- */

/* The element offset of index tuple t (k coordinates) into shape s, or -1 (ctx failed, TF's
 * text) when it is out of range. */
static int64_t nd_offset(rill__kctx *ctx, const rill_tensor *ix, int64_t t, int64_t k,
                         const rill_shape *s)
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
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "indices%s = [%s] does not index into shape %s",
                    outer.rank ? pos : "[0]", tup, rill_shape_str(s, sh, sizeof sh));
    return -1;
}

/* The offsets of ix's index tuples into s (caller frees), with *m their count and *slice the
 * elements each addresses; NULL (ctx failed) when updates u do not fit or an index is out of
 * range. */
static int64_t *nd_offsets(rill__kctx *ctx, const rill_tensor *ix, const rill_tensor *u,
                           const rill_shape *s, int64_t *m, int64_t *slice)
{
    if (ix->shape.rank < 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Indices shape must have rank at least one.");
        return NULL;
    }
    int64_t k = ix->shape.dims[ix->shape.rank - 1];
    *m = k ? ix->numel / k : prod(&ix->shape, 0, ix->shape.rank - 1);
    if (k > s->rank || u->numel != *m * prod(s, (int)(k <= s->rank ? k : 0), s->rank)) {
        char a[96], b[96], c[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Dimensions mismatch: updates.shape must be indices.shape[:-1] + "
                        "shape[indices.shape[-1]:]; got indices.shape %s, updates.shape %s, "
                        "shape %s",
                        rill_shape_str(&ix->shape, a, sizeof a),
                        rill_shape_str(&u->shape, b, sizeof b), rill_shape_str(s, c, sizeof c));
        return NULL;
    }
    *slice = prod(s, (int)k, s->rank);
    int64_t *offs = rill__malloc((size_t)(*m ? *m : 1) * sizeof *offs);
    RILL_CHECK_ALLOC(offs);
    for (int64_t t = 0; t < *m; t++)
        if ((offs[t] = nd_offset(ctx, ix, t, k, s)) < 0) {
            rill__free(offs);
            return NULL;
        }
    return offs;
}

/* dst[i] = dst[i] op src[j] for elements of tensors of the same numeric dtype. False (ctx failed)
 * on an integer division by zero. */
static bool apply_one(rill__kctx *ctx, int op, rill_tensor *dst, int64_t i, const rill_tensor *src,
                      int64_t j)
{
    if (is_float(dst->dtype)) {
        double a = get_d(dst, i), b = get_d(src, j), r = b;
        switch (op) {
        case OP_ADD:
            r = a + b;
            break;
        case OP_SUB:
            r = a - b;
            break;
        case OP_MUL:
            r = a * b;
            break;
        case OP_DIV:
            r = a / b;
            break;
        case OP_MAX:
            r = b > a ? b : a;
            break;
        case OP_MIN:
            r = b < a ? b : a;
            break;
        default:
            break;
        }
        set_d(dst, i, r);
        return true;
    }
    int64_t a = get_i(dst, i), b = get_i(src, j), r = b;
    switch (op) {
    case OP_ADD:
        r = (int64_t)((uint64_t)a + (uint64_t)b);
        break;
    case OP_SUB:
        r = (int64_t)((uint64_t)a - (uint64_t)b);
        break;
    case OP_MUL:
        r = (int64_t)((uint64_t)a * (uint64_t)b);
        break;
    case OP_DIV:
        if (b == 0 || (b == -1 && a == INT64_MIN)) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Integer division by zero");
            return false;
        }
        r = a / b;
        break;
    case OP_MAX:
        r = b > a ? b : a;
        break;
    case OP_MIN:
        r = b < a ? b : a;
        break;
    default:
        break;
    }
    set_i(dst, i, r);
    return true;
}

static int scatter_op(const char *name)
{
    static const char *const ends[] = {"Update", "Add", "Sub", "Mul", "Div", "Max", "Min"};
    size_t n = strlen(name);
    for (int i = 0; i < 7; i++) {
        size_t e = strlen(ends[i]);
        if (n >= e && strcmp(name + n - e, ends[i]) == 0) return i;
    }
    return OP_UPDATE;
}

/* --- TensorScatterUpdate / Add / Sub / Max / Min --- */

static void tensor_scatter_kernel(rill__kctx *ctx)
{
    const rill_tensor *t = ctx->inputs[0], *ix = ctx->inputs[1], *u = ctx->inputs[2];
    int op = scatter_op(ctx->node->op->name);
    if (op != OP_UPDATE && !check_numeric(ctx, t->dtype)) return;
    int64_t m, slice;
    int64_t *offs = nd_offsets(ctx, ix, u, &t->shape, &m, &slice);
    if (!offs) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, t->dtype, &t->shape);
    if (y) {
        memcpy(y->buf->data, t->buf->data, rill_tensor_nbytes(t));
        size_t es = rill_dtype_size(t->dtype);
        for (int64_t i = 0; i < m; i++) {
            if (op == OP_UPDATE) {
                memcpy((char *)y->buf->data + (size_t)offs[i] * es,
                       (const char *)u->buf->data + (size_t)(i * slice) * es, (size_t)slice * es);
                continue;
            }
            for (int64_t j = 0; j < slice; j++)
                apply_one(ctx, op, y, offs[i] + j, u, i * slice + j);
        }
    }
    rill__free(offs);
}

/* _TensorScatterMinMaxGrad(x, indices, updates, out, dy): TF's _TensorScatterMinOrMaxGrad. The
 * gradient is split among x and the updates that equal the output. */
static void tensor_scatter_minmax_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *ix = ctx->inputs[1], *u = ctx->inputs[2];
    const rill_tensor *out = ctx->inputs[3], *dy = ctx->inputs[4];
    int64_t m, slice;
    int64_t *offs = nd_offsets(ctx, ix, u, &x->shape, &m, &slice);
    if (!offs) return;
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    rill_tensor *du = dx ? rill__kctx_alloc_output(ctx, 1, x->dtype, &u->shape) : NULL;
    double *ind = rill__calloc((size_t)(x->numel ? x->numel : 1), sizeof *ind);
    RILL_CHECK_ALLOC(ind);
    if (!du) goto done;
    for (int64_t i = 0; i < x->numel; i++) ind[i] = get_d(x, i) == get_d(out, i);
    for (int64_t t = 0; t < m; t++)
        for (int64_t j = 0; j < slice; j++)
            ind[offs[t] + j] += get_d(u, t * slice + j) == get_d(out, offs[t] + j);
    for (int64_t i = 0; i < x->numel; i++)
        set_d(dx, i, get_d(dy, i) * (get_d(x, i) == get_d(out, i)) / ind[i]);
    for (int64_t t = 0; t < m; t++)
        for (int64_t j = 0; j < slice; j++) {
            int64_t o = offs[t] + j;
            double yi = get_d(u, t * slice + j) == get_d(out, o);
            set_d(du, t * slice + j, get_d(dy, o) / ind[o] * yi);
        }
done:
    rill__free(ind);
    rill__free(offs);
}

/* --- in-place scatters on variables --- */

static void scatter_nd_ref_kernel(rill__kctx *ctx)
{
    rill__var *v = ctx->vars[0];
    const rill_tensor *ix = ctx->inputs[1], *u = ctx->inputs[2];
    int op = scatter_op(ctx->node->op->name);
    if (op != OP_UPDATE && !check_numeric(ctx, u->dtype)) return;
    int64_t m, slice;
    int64_t *offs = nd_offsets(ctx, ix, u, &v->shape, &m, &slice);
    if (!offs) return;
    pthread_mutex_lock(&v->mu);
    rill_tensor *t = rill__var_writable(ctx, v);
    if (t) {
        for (int64_t i = 0; i < m; i++) {
            if (op == OP_UPDATE) {
                size_t es = rill_dtype_size(t->dtype);
                memcpy((char *)t->buf->data + (size_t)offs[i] * es,
                       (const char *)u->buf->data + (size_t)(i * slice) * es, (size_t)slice * es);
                continue;
            }
            for (int64_t j = 0; j < slice; j++)
                apply_one(ctx, op, t, offs[i] + j, u, i * slice + j);
        }
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(t));
    }
    pthread_mutex_unlock(&v->mu);
    rill__free(offs);
}

static void scatter_ref_kernel(rill__kctx *ctx)
{
    rill__var *v = ctx->vars[0];
    const rill_tensor *ix = ctx->inputs[1], *u = ctx->inputs[2];
    int op = scatter_op(ctx->node->op->name);
    if (!check_numeric(ctx, u->dtype)) return;
    if (v->shape.rank < 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: the variable must be at least a vector",
                        ctx->node->op->name);
        return;
    }
    int64_t inner = prod(&v->shape, 1, v->shape.rank), lim = v->shape.dims[0];
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
    for (int64_t i = 0; i < ix->numel; i++) {
        int64_t k = rill__index_at(ix, i);
        if (k >= 0 && k < lim) continue;
        char pos[128];
        rill__index_pos(&ix->shape, i, pos, sizeof pos);
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "indices%s = %lld is not in [0, %lld)", pos,
                        (long long)k, (long long)lim);
        return;
    }
    pthread_mutex_lock(&v->mu);
    rill_tensor *t = rill__var_writable(ctx, v);
    bool ok = t != NULL;
    for (int64_t i = 0; ok && i < ix->numel; i++) {
        int64_t base = rill__index_at(ix, i) * inner;
        for (int64_t j = 0; ok && j < inner; j++)
            ok = apply_one(ctx, op, t, base + j, u, scalar ? 0 : i * inner + j);
    }
    if (ok) rill__kctx_set_output(ctx, 0, rill_tensor_ref(t));
    pthread_mutex_unlock(&v->mu);
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

const rill__kernel_def rill__cpu_kernels_segment[] = {
    CPU_K("SegmentMean", segment_kernel, 0),
    CPU_K("SegmentMax", segment_kernel, 0),
    CPU_K("SegmentMin", segment_kernel, 0),
    CPU_K("SegmentProd", segment_kernel, 0),
    CPU_K("UnsortedSegmentMax", unsorted_segment_kernel, 1u << 2),
    CPU_K("UnsortedSegmentMin", unsorted_segment_kernel, 1u << 2),
    CPU_K("UnsortedSegmentProd", unsorted_segment_kernel, 1u << 2),
    CPU_K("_SegmentReduceGrad", segment_reduce_grad_kernel, 0),
    CPU_K("TensorScatterUpdate", tensor_scatter_kernel, 0),
    CPU_K("TensorScatterAdd", tensor_scatter_kernel, 0),
    CPU_K("TensorScatterSub", tensor_scatter_kernel, 0),
    CPU_K("TensorScatterMax", tensor_scatter_kernel, 0),
    CPU_K("TensorScatterMin", tensor_scatter_kernel, 0),
    CPU_K("_TensorScatterMinMaxGrad", tensor_scatter_minmax_grad_kernel, 0),
    CPU_K("ScatterNdUpdate", scatter_nd_ref_kernel, 0),
    CPU_K("ScatterNdAdd", scatter_nd_ref_kernel, 0),
    CPU_K("ScatterNdSub", scatter_nd_ref_kernel, 0),
    CPU_K("ScatterMul", scatter_ref_kernel, 0),
    CPU_K("ScatterDiv", scatter_ref_kernel, 0),
    CPU_K("ScatterMax", scatter_ref_kernel, 0),
    CPU_K("ScatterMin", scatter_ref_kernel, 0),
#ifdef RILL_HAVE_OPENCL
    /* host-memory fallbacks on a GPU (the variable scatters are not here: variables live on the
     * device, and these updates run where the variable is only on the CPU) */
    CL_K("SegmentMean", segment_kernel),
    CL_K("SegmentMax", segment_kernel),
    CL_K("SegmentMin", segment_kernel),
    CL_K("SegmentProd", segment_kernel),
    CL_K("UnsortedSegmentMax", unsorted_segment_kernel),
    CL_K("UnsortedSegmentMin", unsorted_segment_kernel),
    CL_K("UnsortedSegmentProd", unsorted_segment_kernel),
    CL_K("_SegmentReduceGrad", segment_reduce_grad_kernel),
    CL_K("TensorScatterUpdate", tensor_scatter_kernel),
    CL_K("TensorScatterAdd", tensor_scatter_kernel),
    CL_K("TensorScatterSub", tensor_scatter_kernel),
    CL_K("TensorScatterMax", tensor_scatter_kernel),
    CL_K("TensorScatterMin", tensor_scatter_kernel),
    CL_K("_TensorScatterMinMaxGrad", tensor_scatter_minmax_grad_kernel),
#endif
    {0},
};
