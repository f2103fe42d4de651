/* cpu_shape.c - CPU kernels of the shape ops (src/graph/ops_shape.c), any dtype, strings too.
 *
 * Transpose, Tile, Pad, MirrorPad, ReverseV2 and BroadcastTo follow one index map
 * (rill__map, array_plan.h): each result element reads one input element or the pad value;
 * TileGrad and MirrorPadGrad run the same map backwards, adding dy into dx. ConcatV2 and Pack
 * write their inputs as row blocks of the result, Split, SplitV, Unpack and ConcatGrad cut the
 * input into row blocks (rill__blocks). Squeeze, StopGradient and PreventGradient share the
 * input's buffer. Every check is the graph layer's shape rule applied to the real shapes
 * (ops_shape.h), so a shape learnt at run time fails with the build-time text, but for
 * ConcatV2 and Pack, which use TF's run-time texts. cl_shape.c reuses the maps and blocks. */
#include "../array_plan.h"
#include "../../graph/ops_shape.h"
#include "cpu_kernels.h"

#include <string.h>

/* --- the index map --- */

int64_t rill__map_src(const rill__map *m, int64_t i)
{
    int64_t off = m->base;
    for (int d = m->rank - 1; d >= 0; d--) {
        int64_t n = m->count[d], q = i / n, c = i - q * n - m->lo[d], in = m->in[d];
        i = q;
        switch (m->mode[d]) {
        case RILL__MAP_PAD:
            if (c < 0 || c >= in) return -1;
            break;
        case RILL__MAP_REFLECT:
            c = c < 0 ? -c : c >= in ? 2 * in - 2 - c : c;
            break;
        case RILL__MAP_SYMMETRIC:
            c = c < 0 ? -c - 1 : c >= in ? 2 * in - 1 - c : c;
            break;
        case RILL__MAP_TILE:
            c %= in;
            break;
        default:
            break;
        }
        off += c * m->step[d];
    }
    return off;
}

bool rill__check_map(rill__kctx *ctx, const rill_tensor *x, const rill_tensor *dy, rill__map *m,
                     rill_shape *out)
{
    const rill_node *n = ctx->node;
    rill_status *s = rill__scratch_status();
    if (!rill__shape_op_out(n, x->shape, out, s)) {
        rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
        return false;
    }
    if (dy && !rill_shape_equal(&dy->shape, out)) {
        char a[96], b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s: dy has shape %s, the forward result %s",
                        n->op->name, rill_shape_str(&dy->shape, a, sizeof a),
                        rill_shape_str(out, b, sizeof b));
        return false;
    }
    const char *op = n->op->name;
    int r = x->shape.rank;
    int64_t istr[RILL_MAX_DIMS], st = 1;
    for (int d = r - 1; d >= 0; d--) {
        istr[d] = st;
        st *= x->shape.dims[d];
    }
    memset(m, 0, sizeof *m);
    m->rank = out->rank;
    m->n = rill_shape_num_elements(out);
    for (int d = 0; d < out->rank; d++) m->count[d] = out->dims[d];
    int k;
    if (strcmp(op, "Transpose") == 0) {
        const int64_t *perm = rill__ints_attr(n, "perm", &k);
        for (int d = 0; d < r; d++) {
            int p = perm ? (int)perm[d] : r - 1 - d;
            m->in[d] = x->shape.dims[p];
            m->step[d] = istr[p];
        }
    } else if (strncmp(op, "Tile", 4) == 0) {
        for (int d = 0; d < r; d++) {
            m->in[d] = x->shape.dims[d];
            m->step[d] = istr[d];
            m->mode[d] = RILL__MAP_TILE;
        }
    } else if (strcmp(op, "Pad") == 0 || strncmp(op, "MirrorPad", 9) == 0) {
        const int64_t *p = rill__ints_attr(n, "paddings", &k);
        const rill__attr *ma = rill__node_attr(n, "mode");
        int mode = op[0] == 'P' ? RILL__MAP_PAD
                   : ma && ma->kind == RILL__ATTR_STRING && !strcmp(ma->v.s, "SYMMETRIC")
                       ? RILL__MAP_SYMMETRIC
                       : RILL__MAP_REFLECT;
        for (int d = 0; d < r; d++) {
            m->in[d] = x->shape.dims[d];
            m->step[d] = istr[d];
            m->lo[d] = p[2 * d];
            m->mode[d] = mode;
        }
    } else if (strcmp(op, "ReverseV2") == 0) {
        const int64_t *ax = rill__ints_attr(n, "axis", &k);
        for (int d = 0; d < r; d++) {
            m->in[d] = x->shape.dims[d];
            m->step[d] = istr[d];
        }
        for (int i = 0; i < k; i++) {
            int d = (int)(ax[i] < 0 ? ax[i] + r : ax[i]);
            if (x->shape.dims[d] > 0) m->base += (x->shape.dims[d] - 1) * istr[d];
            m->step[d] = -istr[d];
        }
    } else { /* BroadcastTo */
        for (int d = 0; d < out->rank; d++) {
            int j = d - (out->rank - r);
            m->in[d] = out->dims[d];
            m->step[d] = j < 0 || x->shape.dims[j] == 1 ? 0 : istr[j];
        }
    }
    return true;
}

/* dst[di] = src[si], whatever the dtype. */
static void copy_elem(rill_tensor *dst, int64_t di, const rill_tensor *src, int64_t si)
{
    if (src->dtype == RILL_STRING) {
        size_t len;
        const char *p = rill_tensor_get_string(src, si, &len);
        rill_tensor_set_string(dst, di, p, len);
        return;
    }
    size_t es = rill_dtype_size(src->dtype);
    memcpy((char *)dst->buf->data + (size_t)di * es, (const char *)src->buf->data + (size_t)si * es,
           es);
}

static void map_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    rill__map m;
    rill_shape os;
    if (!rill__check_map(ctx, x, NULL, &m, &os)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &os);
    if (!y) return;
    char pad[16] = {0};
    if (x->dtype != RILL_STRING) {
        double v = rill__attr_float(ctx->node, "constant_values", 0);
        rill__convert(x->dtype, pad, RILL_DOUBLE, &v, 1);
    }
    size_t es = rill_dtype_size(x->dtype);
    int r = m.rank - 1;
    if (x->dtype != RILL_STRING && r >= 0 && m.mode[r] == RILL__MAP_DIRECT && m.lo[r] == 0 &&
        m.count[r] == m.in[r] && m.step[r] == 1 && m.count[r] > 1) {
        /* the innermost dimension is copied as it is (a Transpose that keeps it, a Tile or a
         * Pad of outer dimensions): one map lookup and one memcpy per row */
        int64_t w = m.count[r];
        for (int64_t i = 0; i < m.n; i += w) {
            int64_t src = rill__map_src(&m, i);
            char *dst = (char *)y->buf->data + (size_t)i * es;
            if (src >= 0) {
                memcpy(dst, (const char *)x->buf->data + (size_t)src * es, (size_t)w * es);
            } else { /* a row of an outer dimension's padding */
                for (int64_t k = 0; k < w; k++) memcpy(dst + (size_t)k * es, pad, es);
            }
        }
        return;
    }
    for (int64_t i = 0; i < m.n; i++) {
        int64_t src = rill__map_src(&m, i);
        if (src >= 0)
            copy_elem(y, i, x, src);
        else if (x->dtype == RILL_STRING)
            rill_tensor_set_string(y, i, "", 0);
        else
            memcpy((char *)y->buf->data + (size_t)i * es, pad, es);
    }
}

/* TileGrad(x, dy), MirrorPadGrad(x, dy): dx[src(i)] += dy[i]. */
static void map_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *dy = ctx->inputs[1];
    rill__map m;
    rill_shape os;
    if (!rill__check_map(ctx, x, dy, &m, &os)) return;
    if (x->dtype == RILL_STRING || x->dtype == RILL_BOOL) {
        rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "%s of a %s tensor", ctx->node->op->name,
                        rill_dtype_name(x->dtype));
        return;
    }
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!dx) return;
    double *acc = rill__calloc((size_t)(x->numel ? x->numel : 1), sizeof *acc);
    RILL_CHECK_ALLOC(acc);
    for (int64_t i = 0; i < m.n; i++) {
        int64_t src = rill__map_src(&m, i);
        if (src >= 0) acc[src] += rill_tensor_get_double(dy, i);
    }
    rill__convert(x->dtype, dx->buf->data, RILL_DOUBLE, acc, x->numel);
    rill__free(acc);
}

/* --- row blocks --- */

void rill__blocks_free(rill__blocks *b)
{
    rill__free(b->width);
    rill__free(b->col);
    rill__free(b->shapes);
    memset(b, 0, sizeof *b);
}

static bool fail_from(rill__kctx *ctx, rill_status *s)
{
    rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
    return false;
}

static int64_t prod(const rill_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++) p *= s->dims[d];
    return p;
}

bool rill__check_blocks(rill__kctx *ctx, rill__blocks *b)
{
    const rill_node *n = ctx->node;
    const char *op = n->op->name;
    rill_status *s = rill__scratch_status();
    bool join = strcmp(op, "ConcatV2") == 0 || strcmp(op, "Pack") == 0;
    bool grad = strcmp(op, "ConcatGrad") == 0, unpack = strcmp(op, "Unpack") == 0;
    int k = join ? n->ninputs : n->noutputs;
    memset(b, 0, sizeof *b);
    b->n = k;
    b->width = rill__malloc((size_t)k * sizeof *b->width);
    b->col = rill__malloc((size_t)k * sizeof *b->col);
    b->shapes = rill__malloc((size_t)k * sizeof *b->shapes);
    RILL_CHECK_ALLOC(b->width && b->col && b->shapes);
    int64_t axis = rill__attr_int(n, "axis", 0);
    int ax;
    if (strcmp(op, "ConcatV2") == 0) {
        for (int i = 0; i < k; i++) b->shapes[i] = ctx->inputs[i]->shape;
        if (!rill__concat_rule(n, b->shapes, k, axis, true, &b->whole, s)) goto fail;
        ax = (int)(axis < 0 ? axis + b->whole.rank : axis);
    } else if (strcmp(op, "Pack") == 0) {
        rill_shape x0 = ctx->inputs[0]->shape;
        for (int i = 1; i < k; i++)
            if (!rill_shape_equal(&ctx->inputs[i]->shape, &x0)) {
                char a[96], c[96];
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                                "Shapes of all inputs must match: values[0].shape = %s != "
                                "values[%d].shape = %s",
                                rill_shape_str(&x0, a, sizeof a), i,
                                rill_shape_str(&ctx->inputs[i]->shape, c, sizeof c));
                goto out;
            }
        if (axis < -(x0.rank + 1) || axis > x0.rank || x0.rank + 1 > RILL_MAX_DIMS) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Invalid axis: %lld; must be in [%d,%d)",
                            (long long)axis, -(x0.rank + 1), x0.rank + 1);
            goto out;
        }
        ax = (int)(axis < 0 ? axis + x0.rank + 1 : axis);
        b->whole.rank = x0.rank + 1;
        for (int d = 0, j = 0; d < b->whole.rank; d++)
            b->whole.dims[d] = d == ax ? k : x0.dims[j++];
        for (int i = 0; i < k; i++) {
            b->shapes[i] = b->whole;
            b->shapes[i].dims[ax] = 1;
        }
    } else {
        rill_shape *like = NULL;
        if (grad) {
            like = rill__malloc((size_t)k * sizeof *like);
            RILL_CHECK_ALLOC(like);
            for (int i = 0; i < k; i++) like[i] = ctx->inputs[i + 1]->shape;
        }
        b->whole = ctx->inputs[0]->shape;
        bool ok = rill__split_rule(n, b->whole, like, k, b->shapes, s);
        rill__free(like);
        if (!ok) goto fail;
        ax = (int)(axis < 0 ? axis + b->whole.rank : axis);
        for (int i = 0; grad && i < k; i++)
            if (!rill_shape_equal(&ctx->inputs[i + 1]->shape, &b->shapes[i])) {
                char a[96], c[96];
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                                "ConcatGrad: the gradient %s does not hold input %d's shape %s",
                                rill_shape_str(&b->whole, a, sizeof a), i,
                                rill_shape_str(&ctx->inputs[i + 1]->shape, c, sizeof c));
                goto out;
            }
    }
    b->outer = prod(&b->whole, 0, ax);
    b->total = 0;
    for (int i = 0; i < k; i++) {
        b->col[i] = b->total;
        b->width[i] = prod(&b->shapes[i], ax, b->shapes[i].rank);
        b->total += b->width[i];
    }
    if (unpack)
        for (int i = 0; i < k; i++) {
            rill_shape *p = &b->shapes[i];
            for (int d = ax; d + 1 < p->rank; d++) p->dims[d] = p->dims[d + 1];
            p->rank--;
        }
    return true;
fail:
    fail_from(ctx, s);
out:
    rill__blocks_free(b);
    return false;
}

/* Copies len elements from src[si..] to dst[di..]. */
static void copy_run(rill_tensor *dst, int64_t di, const rill_tensor *src, int64_t si, int64_t len)
{
    if (src->dtype == RILL_STRING) {
        for (int64_t j = 0; j < len; j++) copy_elem(dst, di + j, src, si + j);
        return;
    }
    size_t es = rill_dtype_size(src->dtype);
    memcpy((char *)dst->buf->data + (size_t)di * es, (const char *)src->buf->data + (size_t)si * es,
           (size_t)len * es);
}

static void join_kernel(rill__kctx *ctx)
{
    rill__blocks b;
    if (!rill__check_blocks(ctx, &b)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, ctx->inputs[0]->dtype, &b.whole);
    for (int i = 0; y && i < b.n; i++)
        for (int64_t r = 0; r < b.outer; r++)
            copy_run(y, r * b.total + b.col[i], ctx->inputs[i], r * b.width[i], b.width[i]);
    rill__blocks_free(&b);
}

static void split_kernel(rill__kctx *ctx)
{
    rill__blocks b;
    if (!rill__check_blocks(ctx, &b)) return;
    const rill_tensor *x = ctx->inputs[0];
    for (int i = 0; i < b.n; i++) {
        rill_tensor *y = rill__kctx_alloc_output(ctx, i, x->dtype, &b.shapes[i]);
        if (!y) break;
        for (int64_t r = 0; r < b.outer; r++)
            copy_run(y, r * b.width[i], x, r * b.total + b.col[i], b.width[i]);
    }
    rill__blocks_free(&b);
}

/* --- views and the rest --- */

static void squeeze_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    rill_shape out;
    rill_status *s = rill__scratch_status();
    if (!rill__shape_op_out(ctx->node, x->shape, &out, s)) {
        fail_from(ctx, s);
        return;
    }
    atomic_fetch_add(&x->buf->refs, 1);
    rill__kctx_set_output(ctx, 0, rill__tensor_wrap(x->dtype, &out, x->buf));
}

static void range_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    double v[3];
    bool known;
    for (int i = 0; i < n->ninputs; i++)
        if (ctx->inputs[i]->numel != 1) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s must be a scalar, not shape %s",
                            i == 0   ? "start"
                            : i == 1 ? "limit"
                                     : "delta",
                            "of rank > 0");
            return;
        }
    rill__range_values(n, (const rill_tensor *const *)ctx->inputs, v, &known);
    int64_t count;
    rill_status *s = rill__scratch_status();
    if (!rill__range_count(n, v, &count, s)) {
        fail_from(ctx, s);
        return;
    }
    rill_dtype t = rill__attr_type(n, "Tidx", RILL_INT32);
    rill_shape os = rill_shape_vector(count);
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, t, &os);
    if (!y) return;
    for (int64_t i = 0; i < count; i++) {
        if (t == RILL_INT64)
            ((int64_t *)y->buf->data)[i] = (int64_t)v[0] + i * (int64_t)v[2];
        else if (t == RILL_INT32)
            ((int32_t *)y->buf->data)[i] = (int32_t)((int64_t)v[0] + i * (int64_t)v[2]);
        else if (t == RILL_FLOAT)
            ((float *)y->buf->data)[i] = (float)(v[0] + (double)i * v[2]);
        else
            ((double *)y->buf->data)[i] = v[0] + (double)i * v[2];
    }
}

static void one_hot_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    const rill_tensor *x = ctx->inputs[0];
    int64_t depth = rill__attr_int(n, "depth", -1), axis = rill__attr_int(n, "axis", -1);
    int r = x->shape.rank;
    if (depth < 0 || axis < -1 || axis > r || r + 1 > RILL_MAX_DIMS) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "OneHot: depth %lld must be >= 0 and axis %lld in [-1, %d]",
                        (long long)depth, (long long)axis, r);
        return;
    }
    if (axis < 0) axis = r;
    rill_shape os = {.rank = r + 1};
    for (int d = 0, j = 0; d < os.rank; d++) os.dims[d] = d == axis ? depth : x->shape.dims[j++];
    rill_dtype t = rill__attr_type(n, "T", RILL_FLOAT);
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, t, &os);
    if (!y) return;
    double onv = rill__attr_float(n, "on_value", 1), offv = rill__attr_float(n, "off_value", 0);
    char on[16], off[16];
    rill__convert(t, on, RILL_DOUBLE, &onv, 1);
    rill__convert(t, off, RILL_DOUBLE, &offv, 1);
    size_t es = rill_dtype_size(t);
    int64_t suffix = prod(&x->shape, (int)axis, r), outer = suffix ? x->numel / suffix : 0;
    for (int64_t p = 0; p < outer; p++)
        for (int64_t j = 0; j < depth; j++)
            for (int64_t q = 0; q < suffix; q++) {
                int64_t id = rill_tensor_get_int64(x, p * suffix + q);
                memcpy((char *)y->buf->data + (size_t)((p * depth + j) * suffix + q) * es,
                       id == j ? on : off, es);
            }
}

static void size_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    bool rank = strcmp(ctx->node->op->name, "Rank") == 0;
    rill_dtype t = rank ? RILL_INT32 : rill__attr_type(ctx->node, "out_type", RILL_INT32);
    rill_shape os = rill_shape_scalar();
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, t, &os);
    if (!y) return;
    int64_t v = rank ? x->shape.rank : x->numel;
    if (t == RILL_INT32)
        *(int32_t *)y->buf->data = (int32_t)v;
    else
        *(int64_t *)y->buf->data = v;
}

#define ANY RILL_DT_INVALID
#define ALL (~0u)
#define K(op_, fn_)                                                                                \
    {                                                                                              \
        .op = op_, .device_type = "CPU", .dtype = ANY, .fn = fn_                                   \
    }
#define KH(op_, fn_, hin, hout)                                                                    \
    {                                                                                              \
        .op = op_, .device_type = "OPENCL", .dtype = ANY, .fn = fn_, .host_memory_inputs = hin,    \
        .host_memory_outputs = hout                                                                \
    }
const rill__kernel_def rill__cpu_kernels_shape[] = {
    K("ConcatV2", join_kernel),
    K("Pack", join_kernel),
    K("Unpack", split_kernel),
    K("Split", split_kernel),
    K("SplitV", split_kernel),
    K("ConcatGrad", split_kernel),
    K("Transpose", map_kernel),
    K("Tile", map_kernel),
    K("Pad", map_kernel),
    K("MirrorPad", map_kernel),
    K("ReverseV2", map_kernel),
    K("BroadcastTo", map_kernel),
    K("TileGrad", map_grad_kernel),
    K("MirrorPadGrad", map_grad_kernel),
    K("Squeeze", squeeze_kernel),
    K("StopGradient", rill__cpu_identity),
    K("PreventGradient", rill__cpu_identity),
    {.op = "Range",
     .device_type = "CPU",
     .dtype = ANY,
     .fn = range_kernel,
     .host_memory_inputs = ALL},
    K("OneHot", one_hot_kernel),
    K("Size", size_kernel),
    K("Rank", size_kernel),
#ifdef RILL_HAVE_OPENCL
    /* Any dtype on an OpenCL device: cl_shape.c's float, double and half kernels win; the
     * rest move their data in host memory. Views and metadata read no data. */
    KH("ConcatV2", join_kernel, ALL, ALL),
    KH("Pack", join_kernel, ALL, ALL),
    KH("Unpack", split_kernel, ALL, ALL),
    KH("Split", split_kernel, ALL, ALL),
    KH("SplitV", split_kernel, ALL, ALL),
    KH("ConcatGrad", split_kernel, ALL, ALL),
    KH("Transpose", map_kernel, ALL, ALL),
    KH("Tile", map_kernel, ALL, ALL),
    KH("Pad", map_kernel, ALL, ALL),
    KH("MirrorPad", map_kernel, ALL, ALL),
    KH("ReverseV2", map_kernel, ALL, ALL),
    KH("BroadcastTo", map_kernel, ALL, ALL),
    KH("TileGrad", map_grad_kernel, ALL, ALL),
    KH("MirrorPadGrad", map_grad_kernel, ALL, ALL),
    KH("Squeeze", squeeze_kernel, 0, 0),
    KH("StopGradient", rill__cpu_identity, 0, 0),
    KH("PreventGradient", rill__cpu_identity, 0, 0),
    KH("Range", range_kernel, ALL, ALL),
    KH("OneHot", one_hot_kernel, ALL, ALL),
    KH("Size", size_kernel, 0, ALL),
    KH("Rank", size_kernel, 0, ALL),
#endif
    {0},
};
