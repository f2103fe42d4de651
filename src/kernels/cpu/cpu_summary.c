/* cpu_summary.c - CPU kernels of ScalarSummary, HistogramSummary and MergeSummary.
 *
 * Each writes a serialized `Summary` proto (core/framework/summary.proto) into a DT_STRING
 * scalar, by hand with the wire-format helpers of core/pb.h. Serialization follows proto3 as
 * TensorFlow's C++ does, so that rill's bytes equal TF's for the same input: scalar fields
 * holding zero are left out, fields go in number order, the oneof value is always written.
 *
 * The histogram is TF's (core/lib/histogram/histogram.cc): bucket limits grow by 10% from
 * 1e-12 to 1e20, mirrored for negatives, with 0 and ±DBL_MAX; a value goes into the first
 * bucket whose limit exceeds it. When encoded, each run of empty buckets collapses into one
 * entry carrying the run's last limit, so non-empty buckets keep their empty neighbours. */
#include "cpu_kernels.h"

#include "../../core/pb.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

/* --- Summary encoding --- */

/* A proto3 double field: left out when it is +0.0 (bit pattern zero), as protobuf does. */
static void put_double(rill__pbw *w, int field, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    if (bits) rill__pbw_double(w, field, v);
}

/* Summary{value: Value{tag, <field>: payload}} where payload is already encoded. */
static void put_summary_value(rill__pbw *summary, const char *tag, const rill__pbw *value_body)
{
    rill__pbw value = {0};
    if (*tag) rill__pbw_string(&value, 1, tag);
    rill__pbw_raw(&value, value_body->p, value_body->n);
    rill__pbw_message(summary, 1, &value);
    rill__pbw_free(&value);
}

/* The node's output 0: a string scalar holding bytes. */
static void set_string_output(rill__kctx *ctx, const rill__pbw *bytes)
{
    rill_shape scalar = rill_shape_scalar();
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_STRING, &scalar);
    if (!out) return;
    if (rill_tensor_set_string(out, 0, bytes->n ? (const char *)bytes->p : "", bytes->n) != 0)
        rill__kctx_fail(ctx, RILL_INTERNAL, "could not store a summary of %zu bytes", bytes->n);
}

static const char *node_tag(const rill__kctx *ctx)
{
    const rill__attr *a = rill__node_attr(ctx->node, "tag");
    return a ? a->v.s : ctx->node->name;
}

/* --- ScalarSummary --- */

static void scalar_summary_kernel(rill__kctx *ctx)
{
    const rill_tensor *v = ctx->inputs[0];
    if (rill_tensor_rank(v) != 0) {
        char buf[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "tags and values not the same shape: [] != %s (tag '%s')",
                        rill_shape_str(rill_tensor_shape(v), buf, sizeof buf), node_tag(ctx));
        return;
    }
    rill__pbw body = {0}, summary = {0};
    rill__pbw_float(&body, 2, (float)rill_tensor_get_double(v, 0)); /* simple_value */
    put_summary_value(&summary, node_tag(ctx), &body);
    set_string_output(ctx, &summary);
    rill__pbw_free(&body);
    rill__pbw_free(&summary);
}

/* --- HistogramSummary --- */

#define MAX_LIMITS 2048
static double limits[MAX_LIMITS];
static int nlimits;
static pthread_once_t limits_once = PTHREAD_ONCE_INIT;

static void init_limits(void)
{
    double pos[MAX_LIMITS / 2];
    int npos = 0;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) pos[npos++] = v;
    pos[npos++] = DBL_MAX;
    for (int i = npos - 1; i >= 0; i--) limits[nlimits++] = -pos[i];
    limits[nlimits++] = 0.0;
    for (int i = 0; i < npos; i++) limits[nlimits++] = pos[i];
}

typedef struct histogram {
    double min, max, num, sum, sum_squares;
    double buckets[MAX_LIMITS];
} histogram;

static void histogram_clear(histogram *h)
{
    memset(h, 0, sizeof *h);
    h->min = DBL_MAX;
    h->max = -DBL_MAX;
}

/* The first limit above v (std::upper_bound); DBL_MAX itself stays in the last bucket. */
static int bucket_of(double v)
{
    int lo = 0, hi = nlimits;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (limits[mid] > v)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo < nlimits ? lo : nlimits - 1;
}

static void histogram_add(histogram *h, double v)
{
    h->buckets[bucket_of(v)] += 1.0;
    if (h->min > v) h->min = v;
    if (h->max < v) h->max = v;
    h->num += 1.0;
    h->sum += v;
    h->sum_squares += v * v;
}

/* HistogramProto with empty-bucket runs collapsed (EncodeToProto without zero buckets). */
static void histogram_encode(const histogram *h, rill__pbw *out)
{
    double *lim = rill__malloc((size_t)nlimits * sizeof *lim);
    double *cnt = rill__malloc((size_t)nlimits * sizeof *cnt);
    RILL_CHECK_ALLOC(lim);
    RILL_CHECK_ALLOC(cnt);
    size_t n = 0;
    for (int i = 0; i < nlimits;) {
        double end = limits[i], count = h->buckets[i];
        i++;
        if (count <= 0.0) {
            while (i < nlimits && h->buckets[i] <= 0.0) {
                end = limits[i];
                count = h->buckets[i];
                i++;
            }
        }
        lim[n] = end;
        cnt[n++] = count;
    }
    put_double(out, 1, h->min);
    put_double(out, 2, h->max);
    put_double(out, 3, h->num);
    put_double(out, 4, h->sum);
    put_double(out, 5, h->sum_squares);
    rill__pbw_packed_doubles(out, 6, lim, n);
    rill__pbw_packed_doubles(out, 7, cnt, n);
    rill__free(lim);
    rill__free(cnt);
}

/* Adds every element; false (ctx failed) at the first NaN or infinity, as TF. */
static bool histogram_fill(rill__kctx *ctx, histogram *h, const rill_tensor *t)
{
    enum { CHUNK = 1024 };
    double vals[CHUNK];
    rill_dtype dt = rill_tensor_dtype(t);
    const char *src = rill_tensor_data(t);
    int64_t numel = rill_tensor_num_elements(t);
    size_t esize = rill_dtype_size(dt);
    for (int64_t off = 0; off < numel; off += CHUNK) {
        int64_t k = numel - off < CHUNK ? numel - off : CHUNK;
        rill__convert(RILL_DOUBLE, vals, dt, src + (size_t)off * esize, k);
        for (int64_t i = 0; i < k; i++) {
            if (isnan(vals[i]) || isinf(vals[i])) {
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s in summary histogram for: %s",
                                isnan(vals[i]) ? "Nan" : "Infinity", node_tag(ctx));
                return false;
            }
            histogram_add(h, vals[i]);
        }
    }
    return true;
}

static void histogram_summary_kernel(rill__kctx *ctx)
{
    pthread_once(&limits_once, init_limits);
    histogram *h = rill__malloc(sizeof *h);
    RILL_CHECK_ALLOC(h);
    histogram_clear(h);
    if (histogram_fill(ctx, h, ctx->inputs[0])) {
        rill__pbw histo = {0}, body = {0}, summary = {0};
        histogram_encode(h, &histo);
        rill__pbw_message(&body, 5, &histo); /* Value.histo */
        put_summary_value(&summary, node_tag(ctx), &body);
        set_string_output(ctx, &summary);
        rill__pbw_free(&histo);
        rill__pbw_free(&body);
        rill__pbw_free(&summary);
    }
    rill__free(h);
}

/* --- MergeSummary --- */

/* The tag of a serialized Summary.Value ("" when absent); false when it is malformed. */
static bool value_tag(const uint8_t *p, size_t n, const uint8_t **tag, size_t *tag_len)
{
    rill__pbr r = rill__pbr_make(p, n);
    rill__pbfield f;
    *tag = NULL;
    *tag_len = 0;
    while (rill__pbr_next(&r, &f))
        if (f.field == 1 && f.wire == RILL__PB_BYTES) {
            *tag = f.b;
            *tag_len = f.blen;
        }
    return !r.bad;
}

/* Appends the values of one serialized Summary to out; false (ctx failed) when it does not
 * parse or repeats a tag already in seen. */
static bool merge_one(rill__kctx *ctx, const char *bytes, size_t n, rill__strmap *seen,
                      rill__pbw *out)
{
    rill__pbr r = rill__pbr_make(bytes, n);
    rill__pbfield f;
    while (rill__pbr_next(&r, &f)) {
        if (f.field != 1 || f.wire != RILL__PB_BYTES) continue; /* unknown fields */
        const uint8_t *tag;
        size_t tag_len;
        if (!value_tag(f.b, f.blen, &tag, &tag_len)) break;
        if (tag_len) {
            char *key = rill__strndup((const char *)tag, tag_len);
            bool dup = rill__strmap_get(seen, key) != NULL;
            if (dup)
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                                "Duplicate tag %s found in summary inputs", key);
            else
                rill__strmap_put(seen, key, (void *)1);
            rill__free(key);
            if (dup) return false;
        }
        rill__pbw_bytes(out, 1, f.b, f.blen);
    }
    if (!r.bad) return true;
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Could not parse one of the summary inputs");
    return false;
}

static void merge_summary_kernel(rill__kctx *ctx)
{
    rill__strmap seen = {0};
    rill__pbw out = {0};
    bool ok = true;
    for (int i = 0; ok && i < ctx->node->ninputs; i++) {
        const rill_tensor *t = ctx->inputs[i];
        int64_t numel = rill_tensor_num_elements(t);
        for (int64_t j = 0; ok && j < numel; j++) {
            size_t len = 0;
            const char *s = rill_tensor_get_string(t, j, &len);
            ok = merge_one(ctx, s ? s : "", s ? len : 0, &seen, &out);
        }
    }
    if (ok) set_string_output(ctx, &out);
    rill__pbw_free(&out);
    rill__strmap_free(&seen);
}

#define CPU_KERNEL(name, t, f)                                                                     \
    {                                                                                              \
        .op = (name), .device_type = "CPU", .dtype = (t), .fn = (f)                                \
    }

const rill__kernel_def rill__cpu_kernels_summary[] = {
    CPU_KERNEL("ScalarSummary", RILL_FLOAT, scalar_summary_kernel),
    CPU_KERNEL("ScalarSummary", RILL_DOUBLE, scalar_summary_kernel),
    CPU_KERNEL("ScalarSummary", RILL_INT32, scalar_summary_kernel),
    CPU_KERNEL("ScalarSummary", RILL_INT64, scalar_summary_kernel),
    CPU_KERNEL("ScalarSummary", RILL_HALF, scalar_summary_kernel),
    CPU_KERNEL("HistogramSummary", RILL_FLOAT, histogram_summary_kernel),
    CPU_KERNEL("HistogramSummary", RILL_DOUBLE, histogram_summary_kernel),
    CPU_KERNEL("HistogramSummary", RILL_INT32, histogram_summary_kernel),
    CPU_KERNEL("HistogramSummary", RILL_INT64, histogram_summary_kernel),
    CPU_KERNEL("HistogramSummary", RILL_HALF, histogram_summary_kernel),
    CPU_KERNEL("MergeSummary", RILL_STRING, merge_summary_kernel),
    {0},
};
