/* device_name.c - parsing, printing, merging and matching device names (rill/device_name.h).
 *
 * The parser follows TensorFlow's C++ one (DeviceNameUtils::ParseFullName): a loop that, on each
 * pass, consumes one component whose prefix it recognises ("/job:", "/replica:", "/task:",
 * "/device:", legacy "/cpu:" "/CPU:" "/gpu:" "/GPU:") and fails when none matches. That one rule
 * gives both "components in any order, the last one wins" and "trailing junk is an error": after a
 * value the next byte must start another component or end the string, so "/task:1x" and
 * "/job:ps/" fail on the pass that cannot match "x" or "/". Input is treated as hostile: every
 * read stays inside the NUL-terminated string, names longer than the struct's buffers and numbers
 * above INT_MAX are errors, characters are classified by explicit ASCII ranges (no <ctype.h>,
 * whose behaviour depends on the locale and on the sign of char), and the result is built in a
 * local copy so a failed parse leaves the caller's struct as it was.
 *
 * The struct is public and may be filled in by hand, so nothing here trusts its strings to be
 * terminated: every read of job or type is bounded by the array (the last byte always counts as
 * the terminator).
 *
 * The two merges differ on purpose. Scope merge (nested tf.device) is an override where the inner
 * scope wins field by field. Colocation merge (TF's MergeDevNames) must find one device for a
 * whole group, so a disagreement is an error, except that soft placement may drop the device
 * type or id and let the placer choose.
 */
#include <rill/device_name.h>

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* --- bounded strings in the struct --- */

/* Length of a name field, never reading past the array; the last byte counts as the NUL. */
static size_t field_len(const char *field, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap && field[n] != '\0') n++;
    return n;
}

static bool field_eq(const char *a, const char *b, size_t cap)
{
    size_t na = field_len(a, cap), nb = field_len(b, cap);
    return na == nb && memcmp(a, b, na) == 0;
}

static void field_copy(char *dst, const char *src, size_t cap)
{
    size_t n = field_len(src, cap);
    memmove(dst, src, n);
    memset(dst + n, 0, cap - n);
}

#define FIELD_LEN(f)         field_len((f), sizeof(f))
#define FIELD_EQ(a, b)       field_eq((a), (b), sizeof(a))
#define FIELD_COPY(dst, src) field_copy((dst), (src), sizeof(dst))

/* --- the parser's pieces; each advances *p only on success --- */

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_name_char(char c)
{
    return is_alpha(c) || is_digit(c) || c == '_';
}

static bool consume_prefix(const char **p, const char *prefix)
{
    size_t n = strlen(prefix);
    /* strncmp stops at the first difference, so it never reads past the end of *p. */
    if (strncmp(*p, prefix, n) != 0) return false;
    *p += n;
    return true;
}

static bool consume_wildcard(const char **p)
{
    if (**p != '*') return false;
    (*p)++;
    return true;
}

/* A letter, then letters, digits or '_'; must fit in cap bytes with its NUL. */
static bool consume_name(const char **p, char *dst, size_t cap)
{
    const char *s = *p;
    if (!is_alpha(s[0])) return false;
    size_t n = 1;
    while (is_name_char(s[n])) {
        n++;
        if (n >= cap) return false; /* stop reading as soon as it cannot fit */
    }
    memcpy(dst, s, n);
    memset(dst + n, 0, cap - n);
    *p = s + n;
    return true;
}

/* One or more decimal digits, at most INT_MAX. No sign, so negative numbers fail here. */
static bool consume_number(const char **p, int *out)
{
    const char *s = *p;
    if (!is_digit(*s)) return false;
    int v = 0;
    for (; is_digit(*s); s++) {
        int d = *s - '0';
        if (v > (INT_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    *p = s;
    return true;
}

/* "*" unsets the field; otherwise a number is required. */
static bool consume_optional_number(const char **p, bool *has, int *val)
{
    if (consume_wildcard(p)) {
        *has = false;
        *val = 0;
        return true;
    }
    *has = true;
    return consume_number(p, val);
}

static bool consume_optional_name(const char **p, bool *has, char *dst, size_t cap)
{
    if (consume_wildcard(p)) {
        *has = false;
        memset(dst, 0, cap);
        return true;
    }
    *has = true;
    return consume_name(p, dst, cap);
}

static bool malformed(const char *spec, rill_status *s)
{
    rill_status_set(s, RILL_INVALID_ARGUMENT, "Malformed device specification '%s'", spec);
    return false;
}

static bool parse_full(const char *spec, rill_device_name *n)
{
    memset(n, 0, sizeof *n);
    if (strcmp(spec, "/") == 0) return true;
    const char *p = spec;
    while (*p != '\0') {
        if (consume_prefix(&p, "/job:")) {
            if (!consume_optional_name(&p, &n->has_job, n->job, sizeof n->job)) return false;
        } else if (consume_prefix(&p, "/replica:")) {
            if (!consume_optional_number(&p, &n->has_replica, &n->replica)) return false;
        } else if (consume_prefix(&p, "/task:")) {
            if (!consume_optional_number(&p, &n->has_task, &n->task)) return false;
        } else if (consume_prefix(&p, "/device:")) {
            /* The whole device component is replaced: "/device:GPU" after "/device:GPU:1"
             * leaves the id unset, as TF does. */
            if (!consume_optional_name(&p, &n->has_type, n->type, sizeof n->type)) return false;
            if (consume_prefix(&p, ":")) {
                if (!consume_optional_number(&p, &n->has_id, &n->id)) return false;
            } else {
                n->has_id = false;
                n->id = 0;
            }
        } else if (consume_prefix(&p, "/cpu:") || consume_prefix(&p, "/CPU:")) {
            n->has_type = true;
            FIELD_COPY(n->type, "CPU");
            if (!consume_optional_number(&p, &n->has_id, &n->id)) return false;
        } else if (consume_prefix(&p, "/gpu:") || consume_prefix(&p, "/GPU:")) {
            n->has_type = true;
            FIELD_COPY(n->type, "GPU");
            if (!consume_optional_number(&p, &n->has_id, &n->id)) return false;
        } else {
            return false;
        }
    }
    return true;
}

bool rill_device_name_parse(const char *spec, rill_device_name *out, rill_status *s)
{
    if (!spec) spec = "";
    rill_device_name n;
    if (!parse_full(spec, &n)) return malformed(spec, s);
    if (out) *out = n;
    return true;
}

bool rill_device_name_parse_local(const char *spec, rill_device_name *out, rill_status *s)
{
    if (!spec) spec = "";
    rill_device_name n;
    memset(&n, 0, sizeof n);
    const char *p = spec;
    if (!consume_name(&p, n.type, sizeof n.type) || !consume_prefix(&p, ":") ||
        !consume_number(&p, &n.id) || *p != '\0')
        return malformed(spec, s);
    n.has_type = true;
    n.has_id = true;
    if (out) *out = n;
    return true;
}

/* --- printing --- */

typedef struct out_buf {
    char *buf;
    size_t len, pos; /* pos < len always; buf[pos] is the NUL */
} out_buf;

static void out_add(out_buf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void out_add(out_buf *o, const char *fmt, ...)
{
    size_t room = o->len - o->pos;
    if (room <= 1) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(o->buf + o->pos, room, fmt, ap);
    va_end(ap);
    if (k < 0) {
        o->buf[o->pos] = '\0';
        return;
    }
    o->pos += (size_t)k < room ? (size_t)k : room - 1;
}

const char *rill_device_name_str(const rill_device_name *n, char *buf, size_t len)
{
    if (!buf || len == 0) return buf;
    buf[0] = '\0';
    if (!n) return buf;
    out_buf o = {buf, len, 0};
    if (n->has_job) out_add(&o, "/job:%.*s", (int)FIELD_LEN(n->job), n->job);
    if (n->has_replica) out_add(&o, "/replica:%d", n->replica);
    if (n->has_task) out_add(&o, "/task:%d", n->task);
    if (n->has_type && n->has_id)
        out_add(&o, "/device:%.*s:%d", (int)FIELD_LEN(n->type), n->type, n->id);
    else if (n->has_type)
        out_add(&o, "/device:%.*s:*", (int)FIELD_LEN(n->type), n->type);
    else if (n->has_id)
        out_add(&o, "/device:*:%d", n->id);
    return buf;
}

const char *rill_device_full_name(const char *job, int replica, int task, const char *type, int id,
                                  char *buf, size_t len)
{
    if (!buf || len == 0) return buf;
    buf[0] = '\0';
    out_buf o = {buf, len, 0};
    out_add(&o, "/job:%s/replica:%d/task:%d/device:%s:%d", job ? job : "", replica, task,
            type ? type : "", id);
    return buf;
}

/* --- merging --- */

void rill_device_name_merge_override(rill_device_name *target, const rill_device_name *other)
{
    if (other->has_job) {
        target->has_job = true;
        FIELD_COPY(target->job, other->job);
    }
    if (other->has_replica) {
        target->has_replica = true;
        target->replica = other->replica;
    }
    if (other->has_task) {
        target->has_task = true;
        target->task = other->task;
    }
    if (other->has_type) {
        target->has_type = true;
        FIELD_COPY(target->type, other->type);
    }
    if (other->has_id) {
        target->has_id = true;
        target->id = other->id;
    }
}

rill_device_name rill_device_name_merge_scope(const rill_device_name *outer,
                                              const rill_device_name *inner)
{
    rill_device_name r = *outer;
    rill_device_name_merge_override(&r, inner);
    return r;
}

static bool merge_error(rill_status *s, const char *what, const rill_device_name *a,
                        const rill_device_name *b)
{
    char sa[RILL_DEVICE_NAME_MAX], sb[RILL_DEVICE_NAME_MAX];
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Cannot merge devices with incompatible %s: '%s' and '%s'", what,
                    rill_device_name_str(a, sa, sizeof sa), rill_device_name_str(b, sb, sizeof sb));
    return false;
}

bool rill_device_name_merge(rill_device_name *target, const rill_device_name *other,
                            bool allow_soft_placement, rill_status *s)
{
    /* Built in a copy so that an error leaves *target untouched; the message still shows the
     * copy as merged so far, which is what TF prints. */
    rill_device_name t = *target;
    if (other->has_job) {
        if (t.has_job && !FIELD_EQ(t.job, other->job)) return merge_error(s, "jobs", &t, other);
        t.has_job = true;
        FIELD_COPY(t.job, other->job);
    }
    if (other->has_replica) {
        if (t.has_replica && t.replica != other->replica)
            return merge_error(s, "replicas", &t, other);
        t.has_replica = true;
        t.replica = other->replica;
    }
    if (other->has_task) {
        if (t.has_task && t.task != other->task) return merge_error(s, "tasks", &t, other);
        t.has_task = true;
        t.task = other->task;
    }
    if (other->has_type) {
        if (t.has_type && !FIELD_EQ(t.type, other->type)) {
            if (!allow_soft_placement) return merge_error(s, "types", &t, other);
            /* Neither type wins; the placer picks one. An id without its type means nothing,
             * so the merge ends here and other's id is not taken. */
            rill_device_name_clear_type(&t);
            *target = t;
            return true;
        }
        t.has_type = true;
        FIELD_COPY(t.type, other->type);
    }
    if (other->has_id) {
        if (t.has_id && t.id != other->id) {
            if (!allow_soft_placement) return merge_error(s, "ids", &t, other);
            t.has_id = false;
            t.id = 0;
        } else {
            t.has_id = true;
            t.id = other->id;
        }
    }
    *target = t;
    return true;
}

/* --- matching --- */

bool rill_device_name_is_specification(const rill_device_name *a, const rill_device_name *b)
{
    if (a->has_job && (!b->has_job || !FIELD_EQ(a->job, b->job))) return false;
    if (a->has_replica && (!b->has_replica || a->replica != b->replica)) return false;
    if (a->has_task && (!b->has_task || a->task != b->task)) return false;
    if (a->has_type && (!b->has_type || !FIELD_EQ(a->type, b->type))) return false;
    if (a->has_id && (!b->has_id || a->id != b->id)) return false;
    return true;
}

bool rill_device_name_is_fully_specified(const rill_device_name *n)
{
    return n->has_job && n->has_replica && n->has_task && n->has_type && n->has_id;
}

bool rill_device_name_matches(const rill_device_name *pattern, const rill_device_name *name)
{
    return rill_device_name_is_fully_specified(name) &&
           rill_device_name_is_specification(pattern, name);
}

void rill_device_name_clear_type(rill_device_name *n)
{
    n->has_type = false;
    memset(n->type, 0, sizeof n->type);
    n->has_id = false;
    n->id = 0;
}
