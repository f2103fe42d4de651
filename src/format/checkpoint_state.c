/* checkpoint_state.c - the `checkpoint` state file of a training directory (reference §9.2):
 * writing and parsing it, latest_checkpoint and checkpoint_exists.
 *
 * The file is a CheckpointState in protobuf text format, one field per line:
 *
 *     model_checkpoint_path: "model.ckpt-300"
 *     all_model_checkpoint_paths: "model.ckpt-200"
 *     all_model_checkpoint_paths: "model.ckpt-300"
 *     all_model_checkpoint_timestamps: 1700000000.5
 *     last_preserved_timestamp: 1699990000.25
 *
 * Strings are C-escaped; doubles are written as Python prints them (shortest digits that read
 * back exactly), which is what TF's Python writer produces. The parser takes the whole text
 * format these fields can be written in (any whitespace, comments, optional colons, adjacent
 * string literals, single quotes, list syntax, octal and hex escapes), as TF's text_format.Merge
 * does; anything else makes the file "ignored", as TF ignores it. */
#include "checkpoint.h"

#include "../core/core.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_FILE "checkpoint"
/* A state file lists a handful of paths; anything this big is not one. */
#define MAX_STATE_BYTES (64u << 20)

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static void sb_putn(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        b->p = rill__realloc(b->p, cap);
        RILL_CHECK_ALLOC(b->p);
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_puts(sbuf *b, const char *s)
{
    sb_putn(b, s, strlen(s));
}

/* --- writing --- */

/* Protobuf's CEscape: the named escapes, other control and non-ASCII bytes in octal. */
static void put_escaped(sbuf *b, const char *s)
{
    sb_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char tmp[8];
        switch (*p) {
        case '\n':
            sb_puts(b, "\\n");
            break;
        case '\r':
            sb_puts(b, "\\r");
            break;
        case '\t':
            sb_puts(b, "\\t");
            break;
        case '"':
            sb_puts(b, "\\\"");
            break;
        case '\'':
            sb_puts(b, "\\'");
            break;
        case '\\':
            sb_puts(b, "\\\\");
            break;
        default:
            if (*p < 0x20 || *p >= 0x7f) {
                snprintf(tmp, sizeof tmp, "\\%03o", *p);
                sb_puts(b, tmp);
            } else {
                sb_putn(b, (const char *)p, 1);
            }
        }
    }
    sb_puts(b, "\"");
}

/* Python's repr of a float: the shortest digits that read back exactly, positional from 1e-4 to
 * below 1e16 (always with a fraction: "1700000000.0"), scientific otherwise ("1e-05"). */
static void put_double(sbuf *b, double v)
{
    char tmp[64];
    if (isnan(v) || isinf(v)) {
        sb_puts(b, isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
        return;
    }
    int p = 1;
    for (; p < 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
        if (strtod(tmp, NULL) == v) break;
    }
    snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
    int exp = atoi(strchr(tmp, 'e') + 1);
    if (exp >= -4 && exp < 16) {
        int decimals = p - 1 - exp > 0 ? p - 1 - exp : 0;
        snprintf(tmp, sizeof tmp, "%.*f", decimals, v);
        if (!strchr(tmp, '.')) strcat(tmp, ".0");
    }
    sb_puts(b, tmp);
}

/* Components of os.path.abspath(p): cwd joined when relative, ".", "" and ".." resolved. */
typedef struct comps {
    char *buf;
    char **v;
    int n;
} comps;

static void comps_make(comps *c, const char *p)
{
    char cwd[PATH_MAX];
    if (p[0] == '/')
        c->buf = rill__strdup(p);
    else
        c->buf = rill__asprintf("%s/%s", getcwd(cwd, sizeof cwd) ? cwd : "", p);
    c->v = rill__malloc((strlen(c->buf) / 2 + 2) * sizeof *c->v);
    RILL_CHECK_ALLOC(c->v);
    c->n = 0;
    char *save = NULL;
    for (char *t = strtok_r(c->buf, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (strcmp(t, ".") == 0) continue;
        if (strcmp(t, "..") == 0) {
            if (c->n > 0) c->n--;
            continue;
        }
        c->v[c->n++] = t;
    }
}

static void comps_free(comps *c)
{
    rill__free(c->buf);
    rill__free(c->v);
}

/* os.path.relpath(path, start). Caller frees. */
static char *relpath(const char *path, const char *start)
{
    comps a, b;
    comps_make(&a, path);
    comps_make(&b, start[0] ? start : ".");
    int common = 0;
    while (common < a.n && common < b.n && strcmp(a.v[common], b.v[common]) == 0) common++;
    sbuf out = {0};
    for (int i = common; i < b.n; i++) sb_puts(&out, out.n ? "/.." : "..");
    for (int i = common; i < a.n; i++) {
        if (out.n) sb_puts(&out, "/");
        sb_puts(&out, a.v[i]);
    }
    if (!out.n) sb_puts(&out, ".");
    comps_free(&a);
    comps_free(&b);
    return out.p;
}

/* A relative path as TF writes it for a relative directory: relative to that directory. */
static void put_path_field(sbuf *b, const char *field, const char *dir, const char *path)
{
    char *rel = dir[0] != '/' && path[0] != '/' ? relpath(path, dir) : NULL;
    sb_puts(b, field);
    sb_puts(b, ": ");
    put_escaped(b, rel ? rel : path);
    sb_puts(b, "\n");
    rill__free(rel);
}

static bool check_state_args(const char *dir, const char *model_path, const char *const *all_paths,
                             int n, rill_status *s)
{
    if (!dir || !model_path || !model_path[0] || n < 0 || (n > 0 && !all_paths)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Bad arguments to write the checkpoint state of %s", dir ? dir : "(null)");
        return false;
    }
    for (int i = 0; i < n; i++)
        if (!all_paths[i]) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "Checkpoint path %d to record in %s is NULL",
                            i, dir);
            return false;
        }
    char *file = rill__path_join(dir, STATE_FILE);
    bool clash = strcmp(file, model_path) == 0;
    if (clash)
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Save path '%s' conflicts with path used for checkpoint state.  Please "
                        "use a different save path.",
                        model_path);
    rill__free(file);
    return !clash;
}

bool rill__checkpoint_state_write(const char *dir, const char *model_path,
                                  const char *const *all_paths, const double *timestamps, int n,
                                  double last_preserved, rill_status *s)
{
    if (!check_state_args(dir, model_path, all_paths, n, s)) return false;
    sbuf text = {0};
    put_path_field(&text, "model_checkpoint_path", dir, model_path);
    for (int i = 0; i < n; i++)
        put_path_field(&text, "all_model_checkpoint_paths", dir, all_paths[i]);
    for (int i = 0; timestamps && i < n; i++) {
        sb_puts(&text, "all_model_checkpoint_timestamps: ");
        put_double(&text, timestamps[i]);
        sb_puts(&text, "\n");
    }
    if (last_preserved != 0) {
        sb_puts(&text, "last_preserved_timestamp: ");
        put_double(&text, last_preserved);
        sb_puts(&text, "\n");
    }
    char *path = rill__path_join(dir, STATE_FILE);
    rill__afile f;
    bool ok = rill__afile_open(&f, path, dir[0] ? dir : ".", s);
    if (ok && rill__afile_write(&f, text.p, text.n, s)) {
        ok = rill__afile_commit(&f, s);
    } else if (ok) {
        rill__afile_abort(&f);
        ok = false;
    }
    rill__free(path);
    rill__free(text.p);
    return ok;
}

/* --- parsing --- */

typedef struct lexer {
    const char *p, *end;
    const char *error; /* what went wrong first */
} lexer;

static void skip_space(lexer *lx)
{
    while (lx->p < lx->end) {
        if (isspace((unsigned char)*lx->p)) {
            lx->p++;
        } else if (*lx->p == '#') {
            while (lx->p < lx->end && *lx->p != '\n') lx->p++;
        } else {
            break;
        }
    }
}

static bool accept(lexer *lx, char c)
{
    skip_space(lx);
    if (lx->p < lx->end && *lx->p == c) {
        lx->p++;
        return true;
    }
    return false;
}

static bool fail(lexer *lx, const char *what)
{
    if (!lx->error) lx->error = what;
    return false;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One escape after the backslash; appends the byte. */
static bool unescape_one(lexer *lx, sbuf *out)
{
    static const char from[] = "ntrabfv\\'\"?", to[] = "\n\t\r\a\b\f\v\\'\"?";
    if (lx->p >= lx->end) return fail(lx, "a string ends in a backslash");
    char c = *lx->p++;
    const char *k = strchr(from, c);
    if (k && c) {
        sb_putn(out, &to[k - from], 1);
        return true;
    }
    int v = 0;
    if (c >= '0' && c <= '7') {
        v = c - '0';
        for (int i = 0; i < 2 && lx->p < lx->end && *lx->p >= '0' && *lx->p <= '7'; i++)
            v = v * 8 + (*lx->p++ - '0');
    } else if (c == 'x' || c == 'X') {
        int digits = 0;
        for (; digits < 2 && lx->p < lx->end && hex_value(*lx->p) >= 0; digits++)
            v = v * 16 + hex_value(*lx->p++);
        if (!digits) return fail(lx, "\\x without hex digits");
    } else {
        return fail(lx, "an unknown escape in a string");
    }
    if (v > 255) return fail(lx, "an octal escape above \\377");
    char byte = (char)v;
    sb_putn(out, &byte, 1);
    return true;
}

/* One or more adjacent quoted strings, concatenated. Caller frees *out. */
static bool parse_string(lexer *lx, char **out)
{
    sbuf b = {0};
    sb_puts(&b, "");
    bool any = false;
    for (skip_space(lx); lx->p < lx->end && (*lx->p == '"' || *lx->p == '\''); skip_space(lx)) {
        char quote = *lx->p++;
        any = true;
        while (lx->p < lx->end && *lx->p != quote && *lx->p != '\n') {
            if (*lx->p != '\\')
                sb_putn(&b, lx->p++, 1);
            else if (lx->p++, !unescape_one(lx, &b))
                break;
        }
        if (lx->error || lx->p >= lx->end || *lx->p != quote) {
            fail(lx, "an unterminated string");
            break;
        }
        lx->p++;
    }
    if (!any) fail(lx, "a string was expected");
    if (!lx->error && strlen(b.p) != b.n) fail(lx, "a path holds a NUL byte");
    if (lx->error) {
        rill__free(b.p);
        return false;
    }
    *out = b.p;
    return true;
}

static bool parse_double(lexer *lx, double *v)
{
    skip_space(lx);
    char tmp[64];
    size_t n = 0;
    while (lx->p < lx->end && n + 1 < sizeof tmp &&
           (isalnum((unsigned char)*lx->p) || *lx->p == '.' || *lx->p == '-' || *lx->p == '+'))
        tmp[n++] = *lx->p++;
    tmp[n] = '\0';
    if (n > 1 && (tmp[n - 1] == 'f' || tmp[n - 1] == 'F') && !strchr(tmp, 'n') && !strchr(tmp, 'N'))
        tmp[--n] = '\0'; /* "1.5f"; "inf" keeps its f */
    char *end;
    *v = strtod(tmp, &end);
    if (n == 0 || *end != '\0') return fail(lx, "a number was expected");
    return true;
}

typedef struct state_acc {
    rill_checkpoint_state *st;
    int paths_cap, ts_cap;
} state_acc;

static void push_path(state_acc *a, char *p)
{
    rill_checkpoint_state *st = a->st;
    if (st->num_all_model_checkpoint_paths == a->paths_cap) {
        a->paths_cap = a->paths_cap ? a->paths_cap * 2 : 8;
        st->all_model_checkpoint_paths =
            rill__realloc(st->all_model_checkpoint_paths, (size_t)a->paths_cap * sizeof(char *));
        RILL_CHECK_ALLOC(st->all_model_checkpoint_paths);
    }
    st->all_model_checkpoint_paths[st->num_all_model_checkpoint_paths++] = p;
}

static void push_timestamp(state_acc *a, double v)
{
    rill_checkpoint_state *st = a->st;
    if (st->num_timestamps == a->ts_cap) {
        a->ts_cap = a->ts_cap ? a->ts_cap * 2 : 8;
        st->all_model_checkpoint_timestamps =
            rill__realloc(st->all_model_checkpoint_timestamps, (size_t)a->ts_cap * sizeof(double));
        RILL_CHECK_ALLOC(st->all_model_checkpoint_timestamps);
    }
    st->all_model_checkpoint_timestamps[st->num_timestamps++] = v;
}

enum { F_MODEL, F_PATHS, F_TIMES, F_LAST };

/* One value of field f. */
static bool parse_value(lexer *lx, int f, state_acc *a)
{
    if (f == F_MODEL || f == F_PATHS) {
        char *str;
        if (!parse_string(lx, &str)) return false;
        if (f == F_PATHS) {
            push_path(a, str);
        } else {
            rill__free(a->st->model_checkpoint_path);
            a->st->model_checkpoint_path = str;
        }
        return true;
    }
    double v;
    if (!parse_double(lx, &v)) return false;
    if (f == F_TIMES)
        push_timestamp(a, v);
    else
        a->st->last_preserved_timestamp = v;
    return true;
}

static int field_of(lexer *lx)
{
    static const char *const names[] = {"model_checkpoint_path", "all_model_checkpoint_paths",
                                        "all_model_checkpoint_timestamps",
                                        "last_preserved_timestamp"};
    const char *start = lx->p;
    while (lx->p < lx->end && (isalnum((unsigned char)*lx->p) || *lx->p == '_')) lx->p++;
    size_t n = (size_t)(lx->p - start);
    for (int i = 0; i < 4; i++)
        if (n == strlen(names[i]) && strncmp(start, names[i], n) == 0) return i;
    fail(lx, n ? "an unknown field" : "a field name was expected");
    return -1;
}

/* field [:] value | field [:] [v, v, ...] (lists only for the repeated fields) */
static bool parse_field(lexer *lx, state_acc *a)
{
    int f = field_of(lx);
    if (f < 0) return false;
    accept(lx, ':');
    if (!accept(lx, '[')) return parse_value(lx, f, a);
    if (f != F_PATHS && f != F_TIMES) return fail(lx, "a list for a singular field");
    if (accept(lx, ']')) return true;
    do {
        if (!parse_value(lx, f, a)) return false;
    } while (accept(lx, ','));
    return accept(lx, ']') || fail(lx, "an unterminated list");
}

static bool parse_state(const char *text, size_t n, rill_checkpoint_state *st, const char **err)
{
    lexer lx = {text, text + n, NULL};
    state_acc a = {.st = st};
    for (skip_space(&lx); lx.p < lx.end; skip_space(&lx)) {
        if (!parse_field(&lx, &a)) break;
        if (!accept(&lx, ';')) accept(&lx, ',');
    }
    *err = lx.error;
    return !lx.error;
}

/* --- reading --- */

void rill_checkpoint_state_free(rill_checkpoint_state *st)
{
    if (!st) return;
    rill__free(st->model_checkpoint_path);
    for (int i = 0; i < st->num_all_model_checkpoint_paths; i++)
        rill__free(st->all_model_checkpoint_paths[i]);
    rill__free(st->all_model_checkpoint_paths);
    rill__free(st->all_model_checkpoint_timestamps);
    rill__free(st);
}

/* The file's text; NULL when missing (*missing) or unreadable (a warning says why). */
static char *read_state_file(const char *path, size_t *n, bool *missing)
{
    *missing = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *missing = errno == ENOENT || errno == ENOTDIR;
        if (!*missing) rill__log(RILL_LOG_WARNING, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_STATE_BYTES) {
        rill__log(RILL_LOG_WARNING, "%s: not a regular file of a plausible size", path);
        goto out;
    }
    buf = rill__malloc((size_t)st.st_size + 1);
    RILL_CHECK_ALLOC(buf);
    ssize_t got = 0;
    while (got < (ssize_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)(st.st_size - got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            rill__log(RILL_LOG_WARNING, "%s: %s", path, strerror(errno));
            rill__free(buf);
            buf = NULL;
            goto out;
        }
        if (r == 0) break; /* it shrank; judge what is there */
        got += r;
    }
    buf[got] = '\0';
    *n = (size_t)got;
out:
    close(fd);
    return buf;
}

static void join_paths(rill_checkpoint_state *st, const char *dir)
{
    char *p = rill__path_join(dir, st->model_checkpoint_path);
    rill__free(st->model_checkpoint_path);
    st->model_checkpoint_path = p;
    for (int i = 0; i < st->num_all_model_checkpoint_paths; i++) {
        p = rill__path_join(dir, st->all_model_checkpoint_paths[i]);
        rill__free(st->all_model_checkpoint_paths[i]);
        st->all_model_checkpoint_paths[i] = p;
    }
}

rill_checkpoint_state *rill_get_checkpoint_state(const char *dir, rill_status *s)
{
    rill_status_clear(s);
    if (!dir) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "No checkpoint directory given");
        return NULL;
    }
    char *path = rill__path_join(dir, STATE_FILE);
    size_t n = 0;
    bool missing;
    char *text = read_state_file(path, &n, &missing);
    rill_checkpoint_state *st = NULL;
    if (!text) {
        if (!missing) rill__log(RILL_LOG_WARNING, "%s: Checkpoint ignored", path);
        goto out;
    }
    st = rill__calloc(1, sizeof *st);
    RILL_CHECK_ALLOC(st);
    const char *err = NULL;
    if (!parse_state(text, n, st, &err)) {
        rill__log(RILL_LOG_WARNING, "%s: cannot parse the checkpoint state: %s", path, err);
        rill__log(RILL_LOG_WARNING, "%s: Checkpoint ignored", path);
        rill_checkpoint_state_free(st);
        st = NULL;
    } else if (!st->model_checkpoint_path || !st->model_checkpoint_path[0]) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Invalid checkpoint state loaded from %s", dir);
        rill_checkpoint_state_free(st);
        st = NULL;
    } else {
        join_paths(st, dir);
    }
out:
    rill__free(text);
    rill__free(path);
    return st;
}

bool rill_checkpoint_exists(const char *prefix)
{
    if (!prefix || !prefix[0]) return false;
    char *index = rill__bundle_index_path(prefix);
    bool yes = rill__file_exists(index) || rill__file_exists(prefix);
    rill__free(index);
    return yes;
}

char *rill__latest_checkpoint(const char *dir)
{
    rill_status *s = rill_status_new();
    rill_checkpoint_state *st = rill_get_checkpoint_state(dir, s);
    char *found = NULL;
    if (!rill_status_ok(s))
        rill__log(RILL_LOG_WARNING, "%s", rill_status_message(s));
    else if (st && rill_checkpoint_exists(st->model_checkpoint_path))
        found = rill__strdup(st->model_checkpoint_path);
    else if (st)
        rill__log(RILL_LOG_ERROR, "Couldn't match files for checkpoint %s",
                  st->model_checkpoint_path);
    rill_checkpoint_state_free(st);
    rill_status_free(s);
    return found;
}

bool rill_latest_checkpoint(const char *dir, char *buf, size_t n)
{
    char *p = dir ? rill__latest_checkpoint(dir) : NULL;
    bool fits = p && strlen(p) < n;
    if (fits) memcpy(buf, p, strlen(p) + 1);
    if (p && !fits)
        rill__log(RILL_LOG_WARNING, "latest checkpoint %s does not fit a buffer of %zu bytes", p,
                  n);
    rill__free(p);
    return fits;
}
