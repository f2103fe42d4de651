/* cpu_io.c - the kernels of the saver's ops (graph/ops_io.c): a ps task writes its data shard,
 * the chief writes the index, any task reads a tensor back. The entries a shard wrote travel
 * to the chief as a string of protobuf fields (name, dtype, dims, shard, offset, size, crc, and
 * the count of NaN/Inf elements the writer found, which the index does not store); the merge
 * also says which tensors held such values, so the saver knows without reading anything. */
#include "cpu_kernels.h"

#include "../../core/pb.h"
#include "../../format/checkpoint.h"

#include <string.h>

static const char *prefix_of(rill__kctx *ctx, int i)
{
    size_t len;
    const char *p = rill_tensor_get_string(ctx->inputs[i], 0, &len);
    if (!p || len == 0 || strlen(p) != len) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "the checkpoint prefix is empty or malformed");
        return NULL;
    }
    return p;
}

static void encode_entries(rill__pbw *w, const rill__bundle_entry *e, int n)
{
    for (int i = 0; i < n; i++) {
        rill__pbw m = {0};
        rill__pbw_string(&m, 1, e[i].name);
        rill__pbw_varint(&m, 2, (uint64_t)e[i].dtype);
        rill__pbw_varint(&m, 3, (uint64_t)e[i].shape.rank);
        for (int d = 0; d < e[i].shape.rank; d++) rill__pbw_sint(&m, 4, e[i].shape.dims[d]);
        rill__pbw_varint(&m, 5, (uint64_t)e[i].shard);
        rill__pbw_sint(&m, 6, e[i].offset);
        rill__pbw_sint(&m, 7, e[i].size);
        rill__pbw_fixed32(&m, 8, e[i].crc);
        if (e[i].nonfinite) rill__pbw_sint(&m, 9, e[i].nonfinite);
        rill__pbw_message(w, 1, &m);
        rill__pbw_free(&m);
    }
}

/* Appends the entries in b to *e (grown); false when malformed. */
static bool decode_entries(const uint8_t *b, size_t n, rill__bundle_entry **e, int *ne, int *cap)
{
    rill__pbr r = rill__pbr_make(b, n);
    rill__pbfield f;
    while (rill__pbr_next(&r, &f)) {
        if (f.field != 1 || f.wire != RILL__PB_BYTES) continue;
        if (*ne == *cap) {
            *cap = *cap ? *cap * 2 : 16;
            *e = rill__realloc(*e, (size_t)*cap * sizeof **e);
            RILL_CHECK_ALLOC(*e);
        }
        rill__bundle_entry x = {0};
        int dims = 0;
        rill__pbr m = rill__pbr_make(f.b, f.blen);
        rill__pbfield g;
        while (rill__pbr_next(&m, &g)) {
            switch (g.field) {
            case 1:
                rill__free(x.name);
                x.name = rill__strndup((const char *)g.b, g.blen);
                break;
            case 2: x.dtype = (rill_dtype)g.u; break;
            case 3: x.shape.rank = (int)(g.u > RILL_MAX_DIMS ? RILL_MAX_DIMS + 1 : g.u); break;
            case 4:
                if (dims < RILL_MAX_DIMS) x.shape.dims[dims] = (int64_t)g.u;
                dims++;
                break;
            case 5: x.shard = (int)g.u; break;
            case 6: x.offset = (int64_t)g.u; break;
            case 7: x.size = (int64_t)g.u; break;
            case 8: x.crc = (uint32_t)g.u; break;
            case 9:
                x.nonfinite = (int64_t)g.u;
                break;
            default: break;
            }
        }
        if (m.bad || !x.name || x.shape.rank > RILL_MAX_DIMS || dims != x.shape.rank) {
            rill__free(x.name);
            return false;
        }
        (*e)[(*ne)++] = x;
    }
    return !r.bad;
}

static void save_shard_kernel(rill__kctx *ctx)
{
    const char *prefix = prefix_of(ctx, 0);
    if (!prefix) return;
    const rill_tensor *names = rill__node_attr(ctx->node, "names")->v.tensor;
    int n = ctx->node->ninputs - 1;
    const char **nm = rill__calloc((size_t)n + 1, sizeof *nm);
    rill__bundle_entry *e = rill__calloc((size_t)n + 1, sizeof *e);
    RILL_CHECK_ALLOC(nm);
    RILL_CHECK_ALLOC(e);
    for (int i = 0; i < n; i++) nm[i] = rill_tensor_get_string(names, i, NULL);
    rill_status *s = rill_status_new();
    int shard = (int)rill__attr_int(ctx->node, "shard", 0);
    int nshards = (int)rill__attr_int(ctx->node, "num_shards", 1);
    if (rill__bundle_write_data(prefix, shard, nshards, nm, ctx->inputs + 1, n, e, s)) {
        rill__pbw w = {0};
        encode_entries(&w, e, n);
        rill_tensor *out = rill_tensor_new(RILL_STRING, NULL, 0);
        RILL_CHECK_ALLOC(out);
        rill_tensor_set_string(out, 0, (const char *)w.p, w.n);
        rill__pbw_free(&w);
        rill__kctx_set_output(ctx, 0, out);
    } else {
        rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
    }
    rill__bundle_entries_free(e, n);
    rill__free(e);
    rill__free(nm);
    rill_status_free(s);
}

/* "weight (3 of 10 values), biase (1 of 1 values)": the tensors holding NaN or Inf, in the
 * index's order; "" when every value is finite. */
static rill_tensor *nonfinite_report(const rill__bundle_entry *e, int n)
{
    rill__pbw w = {0};
    for (int i = 0; i < n; i++) {
        if (!e[i].nonfinite) continue;
        int64_t numel = 1;
        for (int d = 0; d < e[i].shape.rank; d++) numel *= e[i].shape.dims[d];
        char part[400];
        int k = snprintf(part, sizeof part, "%s%.300s (%lld of %lld values)", w.n ? ", " : "",
                         e[i].name, (long long)e[i].nonfinite, (long long)numel);
        rill__pbw_raw(&w, part, (size_t)k < sizeof part ? (size_t)k : sizeof part - 1);
    }
    rill_tensor *t = rill_tensor_new(RILL_STRING, NULL, 0);
    RILL_CHECK_ALLOC(t);
    rill_tensor_set_string(t, 0, w.n ? (const char *)w.p : "", w.n);
    rill__pbw_free(&w);
    return t;
}

static void merge_index_kernel(rill__kctx *ctx)
{
    const char *prefix = prefix_of(ctx, 0);
    if (!prefix) return;
    rill__bundle_entry *e = NULL;
    int ne = 0, cap = 0;
    bool ok = true;
    for (int i = 1; i < ctx->node->ninputs && ok; i++) {
        size_t len;
        const char *b = rill_tensor_get_string(ctx->inputs[i], 0, &len);
        ok = b && decode_entries((const uint8_t *)b, len, &e, &ne, &cap);
    }
    rill_status *s = rill_status_new();
    if (!ok)
        rill__kctx_fail(ctx, RILL_DATA_LOSS, "malformed shard entries for checkpoint %s", prefix);
    else if (!rill__bundle_write_index(prefix, (int)rill__attr_int(ctx->node, "num_shards", 1), e,
                                       ne, s))
        rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
    else {
        rill__kctx_set_output(ctx, 0, rill_tensor_scalar_string(prefix));
        rill__kctx_set_output(ctx, 1, nonfinite_report(e, ne));
    }
    rill__bundle_entries_free(e, ne);
    rill__free(e);
    rill_status_free(s);
}

typedef struct restore_job {
    rill__kctx *ctx;
    rill_checkpoint_reader *r;
    const char *prefix;
    rill_tensor **out;
    rill_status **err; /* per tensor, NULL when it read well */
} restore_job;

static void restore_range(void *arg, int64_t begin, int64_t end)
{
    restore_job *j = arg;
    const rill_node *n = j->ctx->node;
    const rill_tensor *names = rill__node_attr(n, "names")->v.tensor;
    for (int64_t i = begin; i < end; i++) {
        const char *name = rill_tensor_get_string(names, i, NULL);
        rill_status *s = rill_status_new();
        rill_tensor *t = rill_checkpoint_reader_get_tensor(j->r, name, s);
        if (t && (rill_tensor_dtype(t) != n->out_dtypes[i] ||
                  !rill_shape_equal(&t->shape, &n->out_shapes[i]))) {
            char a[96], b[96];
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "%s in checkpoint %s is %s %s; the variable is %s %s", name, j->prefix,
                            rill_dtype_name(rill_tensor_dtype(t)),
                            rill_shape_str(&t->shape, a, sizeof a),
                            rill_dtype_name(n->out_dtypes[i]),
                            rill_shape_str(&n->out_shapes[i], b, sizeof b));
            rill_tensor_free(t);
            t = NULL;
        }
        j->out[i] = t;
        if (t) rill_status_free(s);
        else j->err[i] = s;
    }
}

/* Reads every tensor of the shard (in parallel on the intra-op pool), then outputs all of them
 * or, if any failed, none. */
static void restore_shard_kernel(rill__kctx *ctx)
{
    const char *prefix = prefix_of(ctx, 0);
    if (!prefix) return;
    int n = ctx->node->noutputs;
    rill_status *s = rill_status_new();
    restore_job j = {ctx, rill_checkpoint_reader_new(prefix, s), prefix,
                     rill__calloc((size_t)n + 1, sizeof(rill_tensor *)),
                     rill__calloc((size_t)n + 1, sizeof(rill_status *))};
    RILL_CHECK_ALLOC(j.out);
    RILL_CHECK_ALLOC(j.err);
    if (!j.r) {
        rill__kctx_fail(ctx, rill_status_code(s), "%s", rill_status_message(s));
    } else {
        rill__parallel_for(ctx->pool, n, 1, restore_range, &j);
        int bad = -1;
        for (int i = 0; i < n && bad < 0; i++)
            if (j.err[i]) bad = i;
        if (bad >= 0)
            rill__kctx_fail(ctx, rill_status_code(j.err[bad]), "%s",
                            rill_status_message(j.err[bad]));
        for (int i = 0; i < n; i++) {
            if (bad < 0) rill__kctx_set_output(ctx, i, j.out[i]);
            else rill_tensor_free(j.out[i]);
            rill_status_free(j.err[i]);
        }
    }
    rill_checkpoint_reader_free(j.r);
    rill__free(j.out);
    rill__free(j.err);
    rill_status_free(s);
}

const rill__kernel_def rill__cpu_kernels_io[] = {
    {.op = "BundleSaveShard", .device_type = "CPU", .fn = save_shard_kernel},
    {.op = "BundleMergeIndex", .device_type = "CPU", .fn = merge_index_kernel},
    {.op = "BundleRestoreShard", .device_type = "CPU", .fn = restore_shard_kernel},
    {0},
};
