/* json.c - the hostile-input JSON reader behind json.h.
 *
 * A recursive-descent parser over (text, len) with an explicit cursor; every read checks the
 * cursor against len first, so a truncated or unterminated input ends in an error, never in a
 * read past the buffer. Depth is bounded before recursing and the node count before allocating,
 * so neither the stack nor the heap grows with a hostile input beyond those bounds. Strings are
 * decoded into a buffer the size of the raw string (decoding never grows text), validating UTF-8
 * byte by byte as it goes.
 */
#include "distributed/json.h"

#include "core/core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const unsigned char *p;
    size_t len, pos;
    int nodes;
    rill_status *s;
    bool failed;
} parser;

static void fail(parser *ps, const char *why)
{
    if (ps->failed) return;
    ps->failed = true;
    rill_status_set(ps->s, RILL_INVALID_ARGUMENT, "Invalid JSON at byte %zu: %s", ps->pos, why);
}

static void skip_ws(parser *ps)
{
    while (ps->pos < ps->len) {
        unsigned char c = ps->p[ps->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        ps->pos++;
    }
}

static bool at_end(const parser *ps)
{
    return ps->pos >= ps->len;
}

static rill__json *new_node(parser *ps, rill__json_type t)
{
    if (ps->nodes >= RILL__JSON_MAX_NODES) {
        fail(ps, "too many values");
        return NULL;
    }
    ps->nodes++;
    rill__json *v = rill__calloc(1, sizeof *v);
    RILL_CHECK_ALLOC(v);
    v->type = t;
    return v;
}

static bool match_word(parser *ps, const char *w)
{
    size_t n = strlen(w);
    if (ps->len - ps->pos < n || memcmp(ps->p + ps->pos, w, n) != 0) return false;
    ps->pos += n;
    return true;
}

static int hex4(parser *ps)
{
    if (ps->len - ps->pos < 4) return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = ps->p[ps->pos + (size_t)i];
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return -1;
        v = v * 16 + d;
    }
    ps->pos += 4;
    return v;
}

static size_t put_utf8(unsigned char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the valid UTF-8 sequence starting at p[0] (at most avail bytes), or 0. */
static size_t utf8_seq(const unsigned char *p, size_t avail)
{
    unsigned char c = p[0];
    size_t n;
    unsigned cp, min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (avail < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

/* Parses a string at the cursor (which is on the opening quote). Returns a new NUL-terminated
 * string and its length, or NULL after fail(). */
static char *parse_string_raw(parser *ps, size_t *out_len)
{
    ps->pos++; /* opening quote */
    /* Find the closing quote first to size the buffer: decoding never makes text longer. */
    size_t end = ps->pos;
    while (end < ps->len && ps->p[end] != '"') end += ps->p[end] == '\\' ? 2 : 1;
    if (end >= ps->len) {
        fail(ps, "unterminated string");
        return NULL;
    }
    unsigned char *out = rill__malloc(end - ps->pos + 1);
    RILL_CHECK_ALLOC(out);
    size_t n = 0;
    while (ps->pos < end) {
        unsigned char c = ps->p[ps->pos];
        if (c < 0x20) {
            fail(ps, "unescaped control character in string");
            goto error;
        }
        if (c != '\\') {
            size_t k = utf8_seq(ps->p + ps->pos, end - ps->pos);
            if (k == 0) {
                fail(ps, "invalid UTF-8 in string");
                goto error;
            }
            memcpy(out + n, ps->p + ps->pos, k);
            n += k;
            ps->pos += k;
            continue;
        }
        ps->pos++;
        c = ps->p[ps->pos]; /* in bounds: the scan above stepped over escapes in pairs */
        ps->pos++;
        switch (c) {
        case '"':
            out[n++] = '"';
            break;
        case '\\':
            out[n++] = '\\';
            break;
        case '/':
            out[n++] = '/';
            break;
        case 'b':
            out[n++] = '\b';
            break;
        case 'f':
            out[n++] = '\f';
            break;
        case 'n':
            out[n++] = '\n';
            break;
        case 'r':
            out[n++] = '\r';
            break;
        case 't':
            out[n++] = '\t';
            break;
        case 'u': {
            int hi = hex4(ps);
            if (hi < 0) {
                fail(ps, "expected 4 hex digits after \\u");
                goto error;
            }
            unsigned cp = (unsigned)hi;
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                fail(ps, "unpaired low surrogate escape");
                goto error;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (!match_word(ps, "\\u")) {
                    fail(ps, "unpaired high surrogate escape");
                    goto error;
                }
                int lo = hex4(ps);
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    fail(ps, "unpaired high surrogate escape");
                    goto error;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((unsigned)lo - 0xDC00);
            }
            if (cp == 0) {
                fail(ps, "\\u0000 is not allowed in a string");
                goto error;
            }
            if (ps->pos > end) { /* an escape that ran over the closing quote */
                fail(ps, "malformed escape");
                goto error;
            }
            n += put_utf8(out + n, cp);
            break;
        }
        default:
            ps->pos--;
            fail(ps, "invalid escape in string");
            goto error;
        }
    }
    ps->pos = end + 1;
    out[n] = '\0';
    *out_len = n;
    return (char *)out;
error:
    rill__free(out);
    return NULL;
}

static rill__json *parse_number(parser *ps)
{
    size_t start = ps->pos;
    bool integral = true;
    if (ps->pos < ps->len && ps->p[ps->pos] == '-') ps->pos++;
    if (at_end(ps)) goto bad;
    if (ps->p[ps->pos] == '0') {
        ps->pos++;
    } else if (ps->p[ps->pos] >= '1' && ps->p[ps->pos] <= '9') {
        while (ps->pos < ps->len && ps->p[ps->pos] >= '0' && ps->p[ps->pos] <= '9') ps->pos++;
    } else {
        goto bad;
    }
    if (ps->pos < ps->len && ps->p[ps->pos] == '.') {
        integral = false;
        ps->pos++;
        if (at_end(ps) || ps->p[ps->pos] < '0' || ps->p[ps->pos] > '9') goto bad;
        while (ps->pos < ps->len && ps->p[ps->pos] >= '0' && ps->p[ps->pos] <= '9') ps->pos++;
    }
    if (ps->pos < ps->len && (ps->p[ps->pos] == 'e' || ps->p[ps->pos] == 'E')) {
        integral = false;
        ps->pos++;
        if (ps->pos < ps->len && (ps->p[ps->pos] == '+' || ps->p[ps->pos] == '-')) ps->pos++;
        if (at_end(ps) || ps->p[ps->pos] < '0' || ps->p[ps->pos] > '9') goto bad;
        while (ps->pos < ps->len && ps->p[ps->pos] >= '0' && ps->p[ps->pos] <= '9') ps->pos++;
    }
    size_t n = ps->pos - start;
    if (n > 64) {
        ps->pos = start;
        fail(ps, "number too long");
        return NULL;
    }
    char buf[72];
    memcpy(buf, ps->p + start, n);
    buf[n] = '\0';
    rill__json *v = new_node(ps, RILL__JSON_NUMBER);
    if (!v) return NULL;
    v->number = strtod(buf, NULL);
    if (integral) {
        char *e;
        errno = 0;
        long long i = strtoll(buf, &e, 10);
        if (errno == 0 && *e == '\0') {
            v->is_int = true;
            v->integer = i;
        }
    }
    return v;
bad:
    fail(ps, "malformed number");
    return NULL;
}

static rill__json *parse_value(parser *ps, int depth);

static rill__json *parse_container(parser *ps, int depth, bool object)
{
    unsigned char close = object ? '}' : ']';
    if (depth >= RILL__JSON_MAX_DEPTH) {
        fail(ps, "nesting deeper than 32 levels");
        return NULL;
    }
    rill__json *v = new_node(ps, object ? RILL__JSON_OBJECT : RILL__JSON_ARRAY);
    if (!v) return NULL;
    ps->pos++; /* opening bracket */
    skip_ws(ps);
    if (ps->pos < ps->len && ps->p[ps->pos] == close) {
        ps->pos++;
        return v;
    }
    int cap = 0;
    for (;;) {
        char *key = NULL;
        size_t key_len = 0;
        skip_ws(ps);
        if (object) {
            if (at_end(ps) || ps->p[ps->pos] != '"') {
                fail(ps, "expected a string key");
                goto error;
            }
            if (v->count >= RILL__JSON_MAX_MEMBERS) {
                fail(ps, "too many members in one object");
                goto error;
            }
            size_t key_pos = ps->pos;
            key = parse_string_raw(ps, &key_len);
            if (!key) goto error;
            if (rill__json_get(v, key)) {
                ps->pos = key_pos;
                fail(ps, "duplicate key in object");
                rill__free(key);
                goto error;
            }
            skip_ws(ps);
            if (at_end(ps) || ps->p[ps->pos] != ':') {
                fail(ps, "expected ':' after key");
                rill__free(key);
                goto error;
            }
            ps->pos++;
        }
        rill__json *item = parse_value(ps, depth + 1);
        if (!item) {
            rill__free(key);
            goto error;
        }
        if (v->count == cap) {
            cap = cap ? cap * 2 : 4;
            v->items = rill__realloc(v->items, (size_t)cap * sizeof *v->items);
            RILL_CHECK_ALLOC(v->items);
            if (object) {
                v->keys = rill__realloc(v->keys, (size_t)cap * sizeof *v->keys);
                RILL_CHECK_ALLOC(v->keys);
            }
        }
        v->items[v->count] = item;
        if (object) v->keys[v->count] = key;
        v->count++;
        skip_ws(ps);
        if (at_end(ps)) {
            fail(ps, object ? "unterminated object" : "unterminated array");
            goto error;
        }
        if (ps->p[ps->pos] == ',') {
            ps->pos++;
            continue;
        }
        if (ps->p[ps->pos] == close) {
            ps->pos++;
            return v;
        }
        fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
        goto error;
    }
error:
    rill__json_free(v);
    return NULL;
}

static rill__json *parse_value(parser *ps, int depth)
{
    skip_ws(ps);
    if (at_end(ps)) {
        fail(ps, "expected a value");
        return NULL;
    }
    unsigned char c = ps->p[ps->pos];
    rill__json *v;
    switch (c) {
    case '{':
        return parse_container(ps, depth, true);
    case '[':
        return parse_container(ps, depth, false);
    case '"': {
        size_t n;
        char *str = parse_string_raw(ps, &n);
        if (!str) return NULL;
        v = new_node(ps, RILL__JSON_STRING);
        if (!v) {
            rill__free(str);
            return NULL;
        }
        v->string = str;
        v->length = n;
        return v;
    }
    case 't':
    case 'f':
        if (match_word(ps, c == 't' ? "true" : "false")) {
            v = new_node(ps, RILL__JSON_BOOL);
            if (v) v->boolean = c == 't';
            return v;
        }
        break;
    case 'n':
        if (match_word(ps, "null")) return new_node(ps, RILL__JSON_NULL);
        break;
    default:
        if (c == '-' || (c >= '0' && c <= '9')) return parse_number(ps);
        break;
    }
    fail(ps, "expected a value");
    return NULL;
}

rill__json *rill__json_parse(const char *text, size_t len, rill_status *s)
{
    parser ps = {.p = (const unsigned char *)text, .len = len, .s = s};
    if (!text) len = ps.len = 0;
    if (len > RILL__JSON_MAX_INPUT) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Invalid JSON: %zu bytes is more than the %u allowed", len,
                        RILL__JSON_MAX_INPUT);
        return NULL;
    }
    rill__json *v = parse_value(&ps, 0);
    if (!v) return NULL;
    skip_ws(&ps);
    if (!at_end(&ps)) {
        fail(&ps, "unexpected text after the value");
        rill__json_free(v);
        return NULL;
    }
    return v;
}

void rill__json_free(rill__json *v)
{
    if (!v) return;
    for (int i = 0; i < v->count; i++) {
        rill__json_free(v->items[i]);
        if (v->keys) rill__free(v->keys[i]);
    }
    rill__free(v->items);
    rill__free(v->keys);
    rill__free(v->string);
    rill__free(v);
}

const rill__json *rill__json_get(const rill__json *obj, const char *key)
{
    if (!obj || obj->type != RILL__JSON_OBJECT || !key) return NULL;
    for (int i = 0; i < obj->count; i++)
        if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
    return NULL;
}

const char *rill__json_type_name(rill__json_type t)
{
    switch (t) {
    case RILL__JSON_NULL:
        return "null";
    case RILL__JSON_BOOL:
        return "boolean";
    case RILL__JSON_NUMBER:
        return "number";
    case RILL__JSON_STRING:
        return "string";
    case RILL__JSON_ARRAY:
        return "array";
    case RILL__JSON_OBJECT:
        return "object";
    }
    return "unknown";
}
