/* cpu_string.c - CPU kernels of the string ops of src/graph/ops_string.c: StringJoin, AsString,
 * StringToNumber, Substr, StringStrip, RegexReplace, EncodeBase64, DecodeBase64, DecodeRaw,
 * DecodeCSV and ReduceJoin, with TF's semantics and texts.
 *
 * Differences from TF, documented: RegexReplace matches with POSIX extended regular
 * expressions (<regex.h>), which agree with RE2 on the common syntax (literals, classes,
 * [...], anchors, alternation, groups, *, +, ?, {m,n}) but not on RE2's extensions (\d, \w,
 * \s, non-greedy quantifiers, (?i) flags), and match leftmost-longest rather than RE2's
 * leftmost-first; the rewrite takes RE2's \0..\9 and \\. */
#include "../kernel.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing byte buffer. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 64;
        while (c < b->n + n + 1) c *= 2;
        b->p = rill__realloc(b->p, c);
        RILL_CHECK_ALLOC(b->p);
        b->cap = c;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static const char *str_at(const rill_tensor *t, int64_t i, size_t *len)
{
    return rill_tensor_get_string(t, i, len);
}

static rill_tensor *out_like(rill__kctx *ctx, rill_dtype dt, const rill_tensor *in)
{
    rill_tensor *o = rill_tensor_new(dt, in->shape.dims, in->shape.rank);
    RILL_CHECK_ALLOC(o);
    (void)ctx;
    return o;
}

/* --- StringJoin --- */

static void string_join_kernel(rill__kctx *ctx)
{
    const rill__attr *a = rill__node_attr(ctx->node, "separator");
    const char *sep = a && a->kind == RILL__ATTR_STRING ? a->v.s : "";
    size_t seplen = strlen(sep);
    int n = rill_node_num_inputs(ctx->node);
    const rill_tensor *shape_of = NULL;
    for (int i = 0; i < n; i++) {
        const rill_tensor *t = ctx->inputs[i];
        if (t->shape.rank == 0) continue;
        if (!shape_of) {
            shape_of = t;
        } else if (!rill_shape_equal(&shape_of->shape, &t->shape)) {
            char x[96], y[96];
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Inputs must be scalars or have the same shape; %s vs %s",
                            rill_shape_str(&shape_of->shape, x, sizeof x),
                            rill_shape_str(&t->shape, y, sizeof y));
            return;
        }
    }
    if (!shape_of) shape_of = ctx->inputs[0];
    rill_tensor *o = out_like(ctx, RILL_STRING, shape_of);
    sbuf b = {0};
    for (int64_t e = 0; e < o->numel; e++) {
        b.n = 0;
        for (int i = 0; i < n; i++) {
            const rill_tensor *t = ctx->inputs[i];
            size_t len;
            const char *s = str_at(t, t->shape.rank == 0 ? 0 : e, &len);
            if (i) sb_put(&b, sep, seplen);
            sb_put(&b, s, len);
        }
        rill_tensor_set_string(o, e, b.p ? b.p : "", b.n);
    }
    rill__free(b.p);
    rill__kctx_set_output(ctx, 0, o);
}

/* --- AsString --- */

static void as_string_kernel(rill__kctx *ctx)
{
    const rill_node *nd = ctx->node;
    const rill_tensor *in = ctx->inputs[0];
    int64_t precision = rill__attr_int(nd, "precision", -1),
            width = rill__attr_int(nd, "width", -1);
    bool scientific = rill__attr_bool(nd, "scientific", false),
         shortest = rill__attr_bool(nd, "shortest", false);
    const rill__attr *fa = rill__node_attr(nd, "fill");
    const char *fill = fa && fa->kind == RILL__ATTR_STRING ? fa->v.s : "";
    rill_dtype t = in->dtype;
    bool is_float = t == RILL_FLOAT || t == RILL_DOUBLE || t == RILL_HALF || t == RILL_BFLOAT16;
    if (strlen(fill) > 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Fill string must be one or fewer characters");
        return;
    }
    if (scientific && shortest) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Cannot select both scientific and shortest notation");
        return;
    }
    if ((scientific || shortest) && !is_float) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "scientific and shortest format not supported for datatype %s",
                        rill_dtype_name(t));
        return;
    }
    if (precision > -1 && !is_float) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "precision not supported for datatype %s",
                        rill_dtype_name(t));
        return;
    }
    char fmt[64];
    int k = snprintf(fmt, sizeof fmt, "%%");
    if (*fill) {
        if (!strchr(" +-0#", *fill)) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Fill argument not supported: \"%s\"",
                            fill);
            return;
        }
        k += snprintf(fmt + k, sizeof fmt - (size_t)k, "%s", fill);
    }
    if (width > -1) k += snprintf(fmt + k, sizeof fmt - (size_t)k, "%lld", (long long)width);
    if (precision > -1)
        k += snprintf(fmt + k, sizeof fmt - (size_t)k, ".%lld", (long long)precision);
    if (is_float)
        snprintf(fmt + k, sizeof fmt - (size_t)k, "%s", shortest ? "g" : scientific ? "e" : "f");
    else if (t == RILL_BOOL)
        snprintf(fmt + k, sizeof fmt - (size_t)k, "s");
    else
        snprintf(fmt + k, sizeof fmt - (size_t)k, "%s", "lld");
    rill_tensor *o = out_like(ctx, RILL_STRING, in);
    char buf[512];
    for (int64_t i = 0; i < in->numel; i++) {
        double v = rill_tensor_get_double(in, i);
        int len;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        if (is_float)
            len = snprintf(buf, sizeof buf, fmt, v);
        else if (t == RILL_BOOL)
            len = snprintf(buf, sizeof buf, fmt, v != 0 ? "true" : "false");
        else if (t == RILL_INT64)
            len = snprintf(buf, sizeof buf, fmt, (long long)((const int64_t *)in->buf->data)[i]);
        else
            len = snprintf(buf, sizeof buf, fmt, (long long)v);
#pragma GCC diagnostic pop
        if (len < 0) len = 0;
        if ((size_t)len >= sizeof buf) len = (int)sizeof buf - 1;
        rill_tensor_set_string(o, i, buf, (size_t)len);
    }
    rill__kctx_set_output(ctx, 0, o);
}

/* --- StringToNumber --- */

static void string_to_number_kernel(rill__kctx *ctx)
{
    const rill_tensor *in = ctx->inputs[0];
    rill_dtype t = rill__attr_type(ctx->node, "out_type", RILL_FLOAT);
    rill_tensor *o = out_like(ctx, t, in);
    for (int64_t i = 0; i < in->numel; i++) {
        size_t len;
        const char *s0 = str_at(in, i, &len);
        char *s = rill__strndup(s0, len);
        char *p = s, *end;
        while (*p && isspace((unsigned char)*p)) p++;
        size_t m = strlen(p);
        while (m && isspace((unsigned char)p[m - 1])) p[--m] = 0;
        bool ok = *p != 0;
        errno = 0;
        if (ok && (t == RILL_FLOAT || t == RILL_DOUBLE)) {
            double v = t == RILL_FLOAT ? (double)strtof(p, &end) : strtod(p, &end);
            ok = *end == 0;
            if (ok && errno == ERANGE && v != 0 && !isinf(v)) errno = 0;
            if (t == RILL_FLOAT)
                ((float *)o->buf->data)[i] = (float)v;
            else
                ((double *)o->buf->data)[i] = v;
        } else if (ok) {
            long long v = strtoll(p, &end, 10);
            ok = *end == 0 && errno != ERANGE &&
                 (t == RILL_INT64 || (v >= INT32_MIN && v <= INT32_MAX));
            if (t == RILL_INT32)
                ((int32_t *)o->buf->data)[i] = (int32_t)v;
            else
                ((int64_t *)o->buf->data)[i] = v;
        }
        if (!ok) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "StringToNumberOp could not correctly convert string: %s", s);
            rill__free(s);
            rill_tensor_free(o);
            return;
        }
        rill__free(s);
    }
    rill__kctx_set_output(ctx, 0, o);
}

/* --- Substr --- */

static void substr_kernel(rill__kctx *ctx)
{
    const rill_tensor *in = ctx->inputs[0], *pos = ctx->inputs[1], *len = ctx->inputs[2];
    bool scalar = pos->shape.rank == 0;
    if (!rill_shape_equal(&pos->shape, &len->shape) ||
        (!scalar && !rill_shape_equal(&pos->shape, &in->shape))) {
        char a[96], b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "pos and len must be scalars or have the input's shape: %s vs %s",
                        rill_shape_str(&pos->shape, a, sizeof a),
                        rill_shape_str(&in->shape, b, sizeof b));
        return;
    }
    rill_tensor *o = out_like(ctx, RILL_STRING, in);
    for (int64_t i = 0; i < in->numel; i++) {
        size_t n;
        const char *s = str_at(in, i, &n);
        int64_t p = (int64_t)rill_tensor_get_double(pos, scalar ? 0 : i),
                l = (int64_t)rill_tensor_get_double(len, scalar ? 0 : i);
        int64_t sn = (int64_t)n;
        if (p > sn || p < -sn) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "pos %lld out of range for string b'%.*s' at index %lld", (long long)p,
                            (int)n, s, (long long)i);
            rill_tensor_free(o);
            return;
        }
        if (p < 0) p += sn;
        if (l < 0) l = 0;
        if (l > sn - p) l = sn - p;
        rill_tensor_set_string(o, i, s + p, (size_t)l);
    }
    rill__kctx_set_output(ctx, 0, o);
}

/* --- StringStrip --- */

static void string_strip_kernel(rill__kctx *ctx)
{
    const rill_tensor *in = ctx->inputs[0];
    rill_tensor *o = out_like(ctx, RILL_STRING, in);
    for (int64_t i = 0; i < in->numel; i++) {
        size_t n;
        const char *s = str_at(in, i, &n);
        size_t a = 0;
        while (a < n && isspace((unsigned char)s[a])) a++;
        while (n > a && isspace((unsigned char)s[n - 1])) n--;
        rill_tensor_set_string(o, i, s + a, n - a);
    }
    rill__kctx_set_output(ctx, 0, o);
}

/* --- RegexReplace --- */

static void regex_replace_kernel(rill__kctx *ctx)
{
    const rill_tensor *in = ctx->inputs[0];
    size_t plen, rlen;
    const char *pat0 = str_at(ctx->inputs[1], 0, &plen);
    const char *rw = str_at(ctx->inputs[2], 0, &rlen);
    bool global = rill__attr_bool(ctx->node, "replace_global", true);
    char *pat = rill__strndup(pat0, plen);
    regex_t re;
    int rc = regcomp(&re, pat, REG_EXTENDED);
    if (rc != 0) {
        char msg[256];
        regerror(rc, &re, msg, sizeof msg);
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Invalid pattern: %s, error: %s", pat, msg);
        rill__free(pat);
        return;
    }
    rill__free(pat);
    for (size_t k = 0; k < rlen; k++)
        if (rw[k] == '\\') {
            char c = k + 1 < rlen ? rw[k + 1] : 0;
            if (!(c == '\\' || (c >= '0' && c <= '9' && (size_t)(c - '0') <= re.re_nsub))) {
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Invalid rewrite pattern: %.*s",
                                (int)rlen, rw);
                regfree(&re);
                return;
            }
            k++;
        }
    rill_tensor *o = out_like(ctx, RILL_STRING, in);
    sbuf b = {0};
    regmatch_t m[10];
    for (int64_t i = 0; i < in->numel; i++) {
        size_t n;
        const char *s0 = str_at(in, i, &n);
        char *s = rill__strndup(s0, n); /* regexec reads up to a NUL */
        b.n = 0;
        size_t at = 0;
        bool first = true;
        while (at <= n && (global || first)) {
            int flags = at > 0 ? REG_NOTBOL : 0;
            if (regexec(&re, s + at, 10, m, flags) != 0) break;
            first = false;
            size_t ms = at + (size_t)m[0].rm_so, me = at + (size_t)m[0].rm_eo;
            sb_put(&b, s + at, ms - at);
            for (size_t k = 0; k < rlen; k++) {
                if (rw[k] != '\\') {
                    sb_put(&b, rw + k, 1);
                    continue;
                }
                char c = rw[++k];
                if (c == '\\') {
                    sb_put(&b, "\\", 1);
                } else {
                    regmatch_t g = m[c - '0'];
                    if (g.rm_so >= 0) sb_put(&b, s + at + g.rm_so, (size_t)(g.rm_eo - g.rm_so));
                }
            }
            if (me == ms) { /* an empty match: copy one byte and go on past it */
                if (ms < n) sb_put(&b, s + ms, 1);
                at = ms + 1;
            } else {
                at = me;
            }
        }
        if (at < n) sb_put(&b, s + at, n - at);
        rill_tensor_set_string(o, i, b.p ? b.p : "", b.n);
        rill__free(s);
    }
    rill__free(b.p);
    regfree(&re);
    rill__kctx_set_output(ctx, 0, o);
}

/* --- EncodeBase64 / DecodeBase64 (web-safe: - and _) --- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void encode_base64_kernel(rill__kctx *ctx)
{
    const rill_tensor *in = ctx->inputs[0];
    bool pad = rill__attr_bool(ctx->node, "pad", false);
    rill_tensor *o = out_like(ctx, RILL_STRING, in);
    sbuf b = {0};
    for (int64_t i = 0; i < in->numel; i++) {
        size_t n;
        const unsigned char *s = (const unsigned char *)str_at(in, i, &n);
        b.n = 0;
        for (size_t k = 0; k < n; k += 3) {
            uint32_t v = (uint32_t)s[k] << 16;
            if (k + 1 < n) v |= (uint32_t)s[k + 1] << 8;
            if (k + 2 < n) v |= s[k + 2];
            char q[4] = {b64[v >> 18 & 63], b64[v >> 12 & 63], b64[v >> 6 & 63], b64[v & 63]};
            size_t keep = n - k >= 3 ? 4 : n - k + 1;
            sb_put(&b, q, keep);
            if (pad && keep < 4) sb_put(&b, "==", 4 - keep);
        }
        rill_tensor_set_string(o, i, b.p ? b.p : "", b.n);
    }
    rill__free(b.p);
    rill__kctx_set_output(ctx, 0, o);
}

static int b64_val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
}

static void decode_base64_kernel(rill__kctx *ctx)
{
    const rill_tensor *in = ctx->inputs[0];
    rill_tensor *o = out_like(ctx, RILL_STRING, in);
    sbuf b = {0};
    for (int64_t i = 0; i < in->numel; i++) {
        size_t n;
        const unsigned char *s = (const unsigned char *)str_at(in, i, &n);
        /* padding: up to two '=' at the end of a multiple of 4 */
        size_t m = n;
        if (m % 4 == 0 && m >= 1 && s[m - 1] == '=') m--;
        if (n % 4 == 0 && m >= 1 && m == n - 1 && s[m - 1] == '=') m--;
        const char *err = m % 4 == 1 ? "Base64 string length cannot be 1 modulo 4." : NULL;
        b.n = 0;
        uint32_t acc = 0;
        int bits = 0;
        for (size_t k = 0; !err && k < m; k++) {
            int v = b64_val(s[k]);
            if (v < 0) {
                err = "Invalid character found in base64.";
                break;
            }
            acc = acc << 6 | (uint32_t)v;
            bits += 6;
            if (bits >= 8) {
                bits -= 8;
                char c = (char)(acc >> bits & 0xFF);
                sb_put(&b, &c, 1);
            }
        }
        if (err) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "%s", err);
            rill__free(b.p);
            rill_tensor_free(o);
            return;
        }
        rill_tensor_set_string(o, i, b.p ? b.p : "", b.n);
    }
    rill__free(b.p);
    rill__kctx_set_output(ctx, 0, o);
}

/* --- DecodeRaw --- */

static void decode_raw_kernel(rill__kctx *ctx)
{
    const rill_tensor *in = ctx->inputs[0];
    rill_dtype t = rill__attr_type(ctx->node, "out_type", RILL_FLOAT);
    bool little = rill__attr_bool(ctx->node, "little_endian", true);
    size_t es = rill_dtype_size(t), first = 0;
    for (int64_t i = 0; i < in->numel; i++) {
        size_t n;
        str_at(in, i, &n);
        if (i == 0) first = n;
        if (n % es != 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Input to DecodeRaw has length %zu that is not a multiple of %zu, the "
                            "size of %s",
                            n, es, rill_dtype_name(t));
            return;
        }
        if (n != first) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "DecodeRaw requires input strings to all be the same size, but "
                            "element %lld has size %zu != %zu",
                            (long long)i, first, n); /* TF's order of the sizes */
            return;
        }
    }
    if (in->shape.rank >= RILL_MAX_DIMS) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "DecodeRaw: input of rank %d is too large",
                        in->shape.rank);
        return;
    }
    int64_t dims[RILL_MAX_DIMS];
    for (int d = 0; d < in->shape.rank; d++) dims[d] = in->shape.dims[d];
    int64_t per = (int64_t)(first / es);
    dims[in->shape.rank] = per;
    rill_tensor *o = rill_tensor_new(t, dims, in->shape.rank + 1);
    RILL_CHECK_ALLOC(o);
    unsigned char *dst = o->buf->data;
    const uint16_t probe = 1;
    bool host_little = *(const unsigned char *)&probe == 1;
    for (int64_t i = 0; i < in->numel; i++) {
        size_t n;
        const char *s = str_at(in, i, &n);
        unsigned char *d = dst + (size_t)i * first;
        memcpy(d, s, n);
        if (little != host_little && es > 1)
            for (size_t e = 0; e < n; e += es)
                for (size_t a = 0, z = es - 1; a < z; a++, z--) {
                    unsigned char c = d[e + a];
                    d[e + a] = d[e + z];
                    d[e + z] = c;
                }
    }
    rill__kctx_set_output(ctx, 0, o);
}

/* --- ReduceJoin --- */

static void reduce_join_kernel(rill__kctx *ctx)
{
    const rill_tensor *in = ctx->inputs[0], *ix = ctx->inputs[1];
    const rill__attr *a = rill__node_attr(ctx->node, "separator");
    const char *sep = a && a->kind == RILL__ATTR_STRING ? a->v.s : "";
    size_t seplen = strlen(sep);
    bool keep = rill__attr_bool(ctx->node, "keep_dims", false);
    int r = in->shape.rank;
    bool red[RILL_MAX_DIMS] = {0};
    int order[RILL_MAX_DIMS], norder = 0;
    for (int64_t i = 0; i < ix->numel; i++) {
        int64_t d = ((const int32_t *)ix->buf->data)[i];
        if (d < -r || d >= r) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Invalid reduction dimension %lld for input with %d dimensions",
                            (long long)d, r);
            return;
        }
        if (d < 0) d += r;
        if (red[d]) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Duplicate reduction dimension %lld",
                            (long long)d);
            return;
        }
        red[d] = true;
        order[norder++] = (int)d;
    }
    int64_t odims[RILL_MAX_DIMS], kdims[RILL_MAX_DIMS], strides[RILL_MAX_DIMS];
    int orank = 0, nk = 0, nr = 0;
    int kept_ax[RILL_MAX_DIMS], red_ax[RILL_MAX_DIMS];
    int64_t st = 1;
    for (int d = r - 1; d >= 0; d--) {
        strides[d] = st;
        st *= in->shape.dims[d];
    }
    for (int d = 0; d < r; d++) {
        if (red[d]) {
            if (keep) odims[orank++] = 1;
        } else {
            kept_ax[nk] = d;
            kdims[nk++] = in->shape.dims[d];
            odims[orank++] = in->shape.dims[d];
        }
    }
    /* TF's order: the first axis listed is joined first (varies fastest) */
    for (int k = 0; k < norder; k++) red_ax[nr++] = order[k];
    rill_tensor *o = rill_tensor_new(RILL_STRING, odims, orank);
    RILL_CHECK_ALLOC(o);
    int64_t nred = 1;
    for (int k = 0; k < nr; k++) nred *= in->shape.dims[red_ax[k]];
    sbuf b = {0};
    for (int64_t oi = 0; oi < o->numel; oi++) {
        /* the input offset of this output's kept coordinates */
        int64_t base = 0, rem = oi;
        for (int k = nk - 1; k >= 0; k--) {
            int64_t c = kdims[k] ? rem % kdims[k] : 0;
            rem = kdims[k] ? rem / kdims[k] : 0;
            base += c * strides[kept_ax[k]];
        }
        b.n = 0;
        for (int64_t ri = 0; ri < nred; ri++) {
            int64_t off = base, rr = ri;
            for (int k = 0; k < nr; k++) {
                int64_t dd = in->shape.dims[red_ax[k]];
                off += (rr % dd) * strides[red_ax[k]];
                rr /= dd;
            }
            size_t n;
            const char *s = str_at(in, off, &n);
            if (ri) sb_put(&b, sep, seplen);
            sb_put(&b, s, n);
        }
        rill_tensor_set_string(o, oi, b.p ? b.p : "", b.n);
    }
    rill__free(b.p);
    rill__kctx_set_output(ctx, 0, o);
}

/* --- DecodeCSV --- */

/* The fields of one record (TF's ExtractFields): *nf set; false with ctx failed. Fields are
 * copies in fields[] (caller frees each and the array). */
static bool csv_fields(rill__kctx *ctx, const char *s, size_t n, char delim, bool quotes,
                       int64_t rec, char ***fields, size_t **lens, int *nf)
{
    sbuf f = {0};
    int cap = 8, k = 0;
    char **fs = rill__malloc((size_t)cap * sizeof *fs);
    size_t *ls = rill__malloc((size_t)cap * sizeof *ls);
    RILL_CHECK_ALLOC(fs && ls);
    size_t i = 0;
    bool ok = true;
    for (;;) {
        f.n = 0;
        if (quotes && i < n && s[i] == '"') {
            i++;
            for (;;) {
                if (i >= n) {
                    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                                    "Quoted field has to end with quote followed by delim or "
                                    "end");
                    ok = false;
                    break;
                }
                if (s[i] == '"') {
                    if (i + 1 < n && s[i + 1] == '"') {
                        sb_put(&f, "\"", 1);
                        i += 2;
                        continue;
                    }
                    if (i + 1 < n && s[i + 1] != delim) {
                        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                                        "Quote inside a string has to be escaped by another quote");
                        ok = false;
                    }
                    i++;
                    break;
                }
                sb_put(&f, s + i, 1);
                i++;
            }
        } else {
            while (i < n && s[i] != delim) {
                if ((quotes && s[i] == '"') || s[i] == '\n' || s[i] == '\r') {
                    rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                                    "Unquoted fields cannot have quotes/CRLFs inside");
                    ok = false;
                    break;
                }
                sb_put(&f, s + i, 1);
                i++;
            }
        }
        if (!ok) break;
        if (k == cap) {
            cap *= 2;
            fs = rill__realloc(fs, (size_t)cap * sizeof *fs);
            ls = rill__realloc(ls, (size_t)cap * sizeof *ls);
            RILL_CHECK_ALLOC(fs && ls);
        }
        fs[k] = rill__strndup(f.p ? f.p : "", f.n);
        ls[k++] = f.n;
        if (i >= n) break;
        i++; /* the delimiter: another field follows (maybe empty) */
        if (i == n) {
            f.n = 0;
            if (k == cap) {
                cap *= 2;
                fs = rill__realloc(fs, (size_t)cap * sizeof *fs);
                ls = rill__realloc(ls, (size_t)cap * sizeof *ls);
                RILL_CHECK_ALLOC(fs && ls);
            }
            fs[k] = rill__strdup("");
            ls[k++] = 0;
            break;
        }
    }
    (void)rec;
    rill__free(f.p);
    if (!ok) {
        for (int j = 0; j < k; j++) rill__free(fs[j]);
        rill__free(fs);
        rill__free(ls);
        return false;
    }
    *fields = fs;
    *lens = ls;
    *nf = k;
    return true;
}

static void decode_csv_kernel(rill__kctx *ctx)
{
    const rill_node *nd = ctx->node;
    const rill_tensor *rec = ctx->inputs[0];
    int ncol = rill_node_num_inputs(nd) - 1;
    const rill__attr *da = rill__node_attr(nd, "field_delim"),
                     *na = rill__node_attr(nd, "na_value");
    char delim = da && da->kind == RILL__ATTR_STRING && da->v.s[0] ? da->v.s[0] : ',';
    const char *na_value = na && na->kind == RILL__ATTR_STRING ? na->v.s : "";
    bool quotes = rill__attr_bool(nd, "use_quote_delim", true);
    for (int c = 0; c < ncol; c++) {
        const rill_tensor *d = ctx->inputs[1 + c];
        if (d->numel > 1) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "There should only be 1 default per field but field %d has %lld", c,
                            (long long)d->numel);
            return;
        }
    }
    rill_tensor **outs = rill__calloc((size_t)ncol, sizeof *outs);
    RILL_CHECK_ALLOC(outs);
    for (int c = 0; c < ncol; c++) {
        outs[c] = rill_tensor_new(ctx->inputs[1 + c]->dtype, rec->shape.dims, rec->shape.rank);
        RILL_CHECK_ALLOC(outs[c]);
    }
    bool ok = true;
    for (int64_t r = 0; ok && r < rec->numel; r++) {
        size_t n;
        const char *s = str_at(rec, r, &n);
        char **fs = NULL;
        size_t *ls = NULL;
        int nf = 0;
        if (!csv_fields(ctx, s, n, delim, quotes, r, &fs, &ls, &nf)) {
            ok = false;
            break;
        }
        if (nf != ncol) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Expect %d fields but have %d in record %lld", ncol, nf, (long long)r);
            ok = false;
        }
        for (int c = 0; ok && c < ncol; c++) {
            const rill_tensor *d = ctx->inputs[1 + c];
            rill_dtype t = d->dtype;
            bool empty = ls[c] == 0 || (*na_value && strcmp(fs[c], na_value) == 0);
            if (empty && d->numel == 0) {
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                                "Field %d is required but missing in record %lld!", c,
                                (long long)r);
                ok = false;
                break;
            }
            if (t == RILL_STRING) {
                size_t dl = 0;
                const char *dv = empty ? str_at(d, 0, &dl) : fs[c];
                rill_tensor_set_string(outs[c], r, dv, empty ? dl : ls[c]);
                continue;
            }
            void *dst = outs[c]->buf->data;
            if (empty) {
                memcpy((char *)dst + (size_t)r * rill_dtype_size(t), d->buf->data,
                       rill_dtype_size(t));
                continue;
            }
            char *end;
            errno = 0;
            const char *what = t == RILL_FLOAT    ? "float"
                               : t == RILL_DOUBLE ? "double"
                               : t == RILL_INT32  ? "int32"
                                                  : "int64";
            bool good;
            if (t == RILL_FLOAT || t == RILL_DOUBLE) {
                double v = t == RILL_FLOAT ? (double)strtof(fs[c], &end) : strtod(fs[c], &end);
                good = *end == 0 && end != fs[c];
                if (t == RILL_FLOAT)
                    ((float *)dst)[r] = (float)v;
                else
                    ((double *)dst)[r] = v;
            } else {
                long long v = strtoll(fs[c], &end, 10);
                good = *end == 0 && end != fs[c] && errno != ERANGE &&
                       (t == RILL_INT64 || (v >= INT32_MIN && v <= INT32_MAX));
                if (t == RILL_INT32)
                    ((int32_t *)dst)[r] = (int32_t)v;
                else
                    ((int64_t *)dst)[r] = v;
            }
            if (!good) {
                rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                                "Field %d in record %lld is not a valid %s: %s", c, (long long)r,
                                what, fs[c]);
                ok = false;
            }
        }
        for (int j = 0; j < nf; j++) rill__free(fs[j]);
        rill__free(fs);
        rill__free(ls);
    }
    for (int c = 0; c < ncol; c++) {
        if (ok)
            rill__kctx_set_output(ctx, c, outs[c]);
        else
            rill_tensor_free(outs[c]);
    }
    rill__free(outs);
}

#define SK(OP, FN)                                                                                 \
    {                                                                                              \
        .op = OP, .device_type = "CPU", .fn = FN                                                   \
    }

const rill__kernel_def rill__cpu_kernels_string[] = {
    SK("StringJoin", string_join_kernel),
    SK("AsString", as_string_kernel),
    SK("StringToNumber", string_to_number_kernel),
    SK("Substr", substr_kernel),
    SK("StringStrip", string_strip_kernel),
    SK("RegexReplace", regex_replace_kernel),
    SK("EncodeBase64", encode_base64_kernel),
    SK("DecodeBase64", decode_base64_kernel),
    SK("DecodeRaw", decode_raw_kernel),
    SK("ReduceJoin", reduce_join_kernel),
    SK("DecodeCSV", decode_csv_kernel),
    {0},
};
