/* cpu_check.c - the kernels of the checks and logging ops (src/graph/ops_check.c), on the host.
 *
 * Tensors are summarised as TensorFlow's Tensor::SummarizeValue does: the first `summarize`
 * elements in nested brackets with "..." where elements were left out (Assert, Print), or, in
 * tf.print's style (StringFormat), numpy-like with the first and last `summarize` elements of
 * every dimension. Elements print as TF's StrCat does: floats with the fewest of 6/9 (doubles
 * 15/17) significant digits that read back the same, strings C-escaped (in quotes for tf.print's
 * tensors). */
#include "../kernel.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A growing string. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t len)
{
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + len + 1) cap *= 2;
        char *q = rill__realloc(b->p, cap);
        RILL_CHECK_ALLOC(q);
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = 0;
}

static void sb_str(sbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

/* absl::CEscape: \n \r \t \" \' \\ and other bytes outside printable ASCII as octal. */
static void sb_cescape(sbuf *b, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[8];
        switch (c) {
        case '\n':
            sb_str(b, "\\n");
            break;
        case '\r':
            sb_str(b, "\\r");
            break;
        case '\t':
            sb_str(b, "\\t");
            break;
        case '\"':
            sb_str(b, "\\\"");
            break;
        case '\'':
            sb_str(b, "\\'");
            break;
        case '\\':
            sb_str(b, "\\\\");
            break;
        default:
            if (c < 0x20 || c >= 0x7f) {
                snprintf(e, sizeof e, "\\%03o", c);
                sb_str(b, e);
            } else {
                sb_add(b, (const char *)&c, 1);
            }
        }
    }
}

static void sb_float(sbuf *b, double v, bool dbl)
{
    char e[64];
    if (isnan(v)) {
        sb_str(b, "nan");
        return;
    }
    if (isinf(v)) {
        sb_str(b, v < 0 ? "-inf" : "inf");
        return;
    }
    if (dbl) {
        snprintf(e, sizeof e, "%.*g", DBL_DIG, v);
        if (strtod(e, NULL) != v) snprintf(e, sizeof e, "%.*g", DBL_DIG + 2, v);
    } else {
        float f = (float)v;
        snprintf(e, sizeof e, "%.*g", FLT_DIG, (double)f);
        if (strtof(e, NULL) != f) snprintf(e, sizeof e, "%.*g", FLT_DIG + 3, (double)f);
    }
    sb_str(b, e);
}

/* Element i of t, as TF's PrintOneElement (quoted: tf.print's strings). */
static void sb_elem(sbuf *b, const rill_tensor *t, int64_t i, bool quoted)
{
    const void *d = rill_tensor_data(t);
    char e[32];
    switch (t->dtype) {
    case RILL_STRING: {
        size_t len = 0;
        const char *s = rill_tensor_get_string(t, i, &len);
        if (quoted) sb_str(b, "\"");
        sb_cescape(b, s ? s : "", s ? len : 0);
        if (quoted) sb_str(b, "\"");
        return;
    }
    case RILL_FLOAT:
        sb_float(b, ((const float *)d)[i], false);
        return;
    case RILL_DOUBLE:
        sb_float(b, ((const double *)d)[i], true);
        return;
    case RILL_HALF:
        sb_float(b, rill_half_to_float(((const rill_half *)d)[i]), false);
        return;
    case RILL_BOOL:
        sb_str(b, ((const bool *)d)[i] ? "1" : "0");
        return;
    default: {
        double v = 0;
        rill__convert(RILL_DOUBLE, &v, t->dtype,
                      (const char *)d + i * (int64_t)rill_dtype_size(t->dtype), 1);
        if (t->dtype == RILL_INT64)
            snprintf(e, sizeof e, "%lld", (long long)((const int64_t *)d)[i]);
        else
            snprintf(e, sizeof e, "%.0f", v);
        sb_str(b, e);
    }
    }
}

/* TF's PrintOneDim: the first `limit` elements in row-major order, in nested brackets. */
static void print_dim(sbuf *b, const rill_tensor *t, int dim, int64_t limit, int64_t *idx)
{
    if (*idx >= limit) return;
    int rank = t->shape.rank;
    int64_t count = t->shape.dims[dim];
    if (dim == rank - 1) {
        for (int64_t i = 0; i < count; i++) {
            if (*idx >= limit) {
                if (dim != 0) sb_str(b, "...");
                return;
            }
            if (i > 0) sb_str(b, " ");
            sb_elem(b, t, (*idx)++, false);
        }
        return;
    }
    for (int64_t i = 0; i < count; i++) {
        bool open = false;
        if (*idx < limit) {
            sb_str(b, "[");
            open = true;
        }
        print_dim(b, t, dim + 1, limit, idx);
        if (*idx < limit || open) sb_str(b, "]");
    }
}

/* Tensor::SummarizeValue(max_entries, print_v2 = false). */
static void summarize(sbuf *b, const rill_tensor *t, int64_t max_entries)
{
    int64_t n = t->numel;
    int64_t limit = max_entries < 0 || max_entries > n ? n : max_entries;
    if (t->shape.rank == 0) {
        for (int64_t i = 0; i < limit; i++) {
            if (i > 0) sb_str(b, " ");
            sb_elem(b, t, i, false);
        }
    } else {
        int64_t idx = 0;
        print_dim(b, t, 0, limit, &idx);
    }
    if (n > limit) sb_str(b, "...");
}

static void dim_spacing(sbuf *b, int dim, int rank)
{
    if (dim == rank - 1) {
        sb_str(b, " ");
        return;
    }
    for (int j = 0; j < rank - dim - 1; j++) sb_str(b, "\n");
    for (int j = 0; j <= dim; j++) sb_str(b, " ");
}

/* TF's PrintOneDimV2: the first and last `ends` entries of every dimension. */
static void print_dim_v2(sbuf *b, const rill_tensor *t, int dim, int64_t ends, int64_t base)
{
    int rank = t->shape.rank;
    if (dim == rank) {
        sb_elem(b, t, base, true);
        return;
    }
    sb_str(b, "[");
    int64_t count = t->shape.dims[dim];
    int64_t start_of_end = ends > count - ends ? ends : count - ends;
    int64_t per = 1;
    for (int i = dim + 1; i < rank; i++) per *= t->shape.dims[i];
    for (int64_t i = 0; i < ends && i < count; i++) {
        if (i > 0) dim_spacing(b, dim, rank);
        print_dim_v2(b, t, dim + 1, ends, base + per * i);
    }
    if (count > 2 * ends) {
        dim_spacing(b, dim, rank);
        sb_str(b, "...");
    }
    for (int64_t i = start_of_end; i < count; i++) {
        dim_spacing(b, dim, rank);
        print_dim_v2(b, t, dim + 1, ends, base + per * i);
    }
    sb_str(b, "]");
}

/* Tensor::SummarizeValue(max_entries, print_v2 = true). */
static void summarize_v2(sbuf *b, const rill_tensor *t, int64_t max_entries)
{
    int64_t n = t->numel;
    int64_t limit = max_entries < 0 || max_entries > n ? n : max_entries;
    if (t->shape.rank == 0) {
        for (int64_t i = 0; i < limit; i++) {
            if (i > 0) sb_str(b, " ");
            sb_elem(b, t, i, true);
        }
        if (n > limit) sb_str(b, "...");
        return;
    }
    print_dim_v2(b, t, 0, limit, 0);
}

static const char *attr_str(const rill_node *n, const char *name, const char *def)
{
    const rill__attr *a = rill__node_attr(n, name);
    return a && a->kind == RILL__ATTR_STRING ? a->v.s : def;
}

static void assert_kernel(rill__kctx *ctx)
{
    const rill_tensor *c = ctx->inputs[0];
    if (c->shape.rank > 0 && c->numel != 1) {
        char sh[128];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "In[0] should be a scalar: %s",
                        rill_shape_str(&c->shape, sh, sizeof sh));
        return;
    }
    if (((const bool *)rill_tensor_data(c))[0]) return;
    int64_t n = rill__attr_int(ctx->node, "summarize", 3);
    sbuf b = {0};
    sb_str(&b, "assertion failed: ");
    for (int i = 1; i < ctx->node->ninputs; i++) {
        sb_str(&b, "[");
        summarize(&b, ctx->inputs[i], n);
        sb_str(&b, "]");
        if (i < ctx->node->ninputs - 1) sb_str(&b, " ");
    }
    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s", b.p);
    rill__free(b.p);
}

/* Print: the count of logs so far lives in the node's state. */
static void print_kernel(rill__kctx *ctx)
{
    int64_t first_n = rill__attr_int(ctx->node, "first_n", -1);
    rill__kctx_set_output(ctx, 0, rill_tensor_ref(ctx->inputs[0]));
    if (first_n >= 0) {
        if (!*ctx->state) {
            *ctx->state = rill__calloc(1, sizeof(int64_t));
            RILL_CHECK_ALLOC(*ctx->state);
        }
        int64_t *count = *ctx->state;
        if (*count >= first_n) return;
        ++*count;
    }
    int64_t n = rill__attr_int(ctx->node, "summarize", 3);
    sbuf b = {0};
    sb_str(&b, attr_str(ctx->node, "message", ""));
    for (int i = 1; i < ctx->node->ninputs; i++) {
        sb_str(&b, "[");
        summarize(&b, ctx->inputs[i], n);
        sb_str(&b, "]");
    }
    sb_str(&b, "\n");
    fputs(b.p, stderr);
    fflush(stderr);
    rill__free(b.p);
}

static void string_format_kernel(rill__kctx *ctx)
{
    const char *tmpl = attr_str(ctx->node, "template", "%s");
    const char *ph = attr_str(ctx->node, "placeholder", "{}");
    int64_t n = rill__attr_int(ctx->node, "summarize", 3);
    size_t pl = strlen(ph);
    sbuf b = {0};
    sb_str(&b, "");
    const char *p = tmpl;
    for (int i = 0; i < ctx->node->ninputs; i++) {
        const char *q = strstr(p, ph);
        if (!q) break; /* the shape function counted them */
        sb_add(&b, p, (size_t)(q - p));
        summarize_v2(&b, ctx->inputs[i], n);
        p = q + pl;
    }
    sb_str(&b, p);
    rill_shape sc = rill_shape_scalar();
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_STRING, &sc);
    if (out) rill_tensor_set_string(out, 0, b.p, b.n);
    rill__free(b.p);
}

static void print_v2_kernel(rill__kctx *ctx)
{
    const char *os = attr_str(ctx->node, "output_stream", "stderr");
    const char *end = attr_str(ctx->node, "end", "\n");
    size_t len = 0;
    const char *s = rill_tensor_get_string(ctx->inputs[0], 0, &len);
    if (strncmp(os, "file://", 7) == 0) {
        FILE *f = fopen(os + 7, "a");
        if (!f) {
            rill__kctx_fail(ctx, RILL_NOT_FOUND, "Could not open file %s for writing", os + 7);
            return;
        }
        fwrite(s, 1, len, f);
        fputs(end, f);
        fclose(f);
        return;
    }
    /* stdout, or stderr (the log levels too: TF logs to stderr) */
    FILE *f = strcmp(os, "stdout") == 0 ? stdout : stderr;
    fwrite(s, 1, len, f);
    fputs(end, f);
    fflush(f);
}

static void check_numerics_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    const void *d = rill_tensor_data(x);
    bool nan = false, inf = false;
    for (int64_t i = 0; i < x->numel; i++) {
        double v = x->dtype == RILL_FLOAT    ? ((const float *)d)[i]
                   : x->dtype == RILL_DOUBLE ? ((const double *)d)[i]
                                             : 0.0;
        if (x->dtype != RILL_FLOAT && x->dtype != RILL_DOUBLE)
            rill__convert(RILL_DOUBLE, &v, x->dtype,
                          (const char *)d + i * (int64_t)rill_dtype_size(x->dtype), 1);
        nan = nan || isnan(v);
        inf = inf || isinf(v);
    }
    if (nan || inf) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s : Tensor had %s values",
                        attr_str(ctx->node, "message", ""),
                        nan && inf ? "Inf and NaN"
                        : nan      ? "NaN"
                                   : "Inf");
        return;
    }
    rill__kctx_set_output(ctx, 0, rill_tensor_ref(ctx->inputs[0]));
}

static void ensure_shape_kernel(rill__kctx *ctx)
{
    const rill__attr *a = rill__node_attr(ctx->node, "shape");
    rill_shape want = a && a->kind == RILL__ATTR_SHAPE ? a->v.shape : rill_shape_unknown();
    const rill_tensor *x = ctx->inputs[0];
    bool ok = want.rank < 0 || want.rank == x->shape.rank;
    for (int d = 0; ok && d < want.rank; d++)
        if (want.dims[d] >= 0 && want.dims[d] != x->shape.dims[d]) ok = false;
    if (!ok) {
        char b1[128], b2[128], in[300];
        rill_output src = ctx->node->inputs[0];
        const rill_node *o = src.node->origin ? src.node->origin : src.node;
        if (src.index)
            snprintf(in, sizeof in, "%s:%d", o->name, src.index);
        else
            snprintf(in, sizeof in, "%s", o->name);
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Shape of tensor %s %s is not compatible with expected shape %s.", in,
                        rill_shape_str(&x->shape, b1, sizeof b1),
                        rill_shape_str(&want, b2, sizeof b2));
        return;
    }
    rill__kctx_set_output(ctx, 0, rill_tensor_ref(ctx->inputs[0]));
}

static void identity_n_kernel(rill__kctx *ctx)
{
    for (int i = 0; i < ctx->node->ninputs; i++)
        rill__kctx_set_output(ctx, i, rill_tensor_ref(ctx->inputs[i]));
}

static void is_initialized_kernel(rill__kctx *ctx)
{
    rill__var *v = ctx->vars[0];
    pthread_mutex_lock(&v->mu);
    bool init = v->value != NULL;
    pthread_mutex_unlock(&v->mu);
    rill_shape sc = rill_shape_scalar();
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_BOOL, &sc);
    if (out) *(bool *)rill_tensor_data(out) = init;
}

static void guarantee_const_kernel(rill__kctx *ctx)
{
    rill__kctx_set_output(ctx, 0, rill_tensor_ref(ctx->inputs[0]));
}

static void timestamp_kernel(rill__kctx *ctx)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    rill_shape sc = rill_shape_scalar();
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, RILL_DOUBLE, &sc);
    if (out) *(double *)rill_tensor_data(out) = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define K(op_, fn_)                                                                                \
    {                                                                                              \
        .op = op_, .device_type = "CPU", .dtype = RILL_DT_INVALID, .fn = fn_                       \
    }

const rill__kernel_def rill__cpu_kernels_check[] = {
    K("Assert", assert_kernel),
    {.op = "Print",
     .device_type = "CPU",
     .dtype = RILL_DT_INVALID,
     .fn = print_kernel,
     .state_free = rill__free},
    K("StringFormat", string_format_kernel),
    K("PrintV2", print_v2_kernel),
    K("CheckNumerics", check_numerics_kernel),
    K("EnsureShape", ensure_shape_kernel),
    K("IdentityN", identity_n_kernel),
    K("IsVariableInitialized", is_initialized_kernel),
    K("GuaranteeConst", guarantee_const_kernel),
    K("Timestamp", timestamp_kernel),
    {0},
};
