/* flags.c - command-line flags, as tf.app.flags (absl.flags).
 *
 * A rill_flags object is a list of flag definitions kept in definition order (the order help
 * prints them in). Each flag binds one user variable, set to the default when it is defined.
 *
 * Parsing is two-phase. argv is first read into per-flag pending values; only when the whole
 * command line is good are they written to the user variables, so a failed parse leaves every
 * variable as it was. The scan does not stop at the first error: "--help" anywhere before "--"
 * still prints the help, since the user asked for it.
 *
 * Forms accepted, with one or two leading dashes as absl does: "--name=value", "--name value",
 * "--bool", "--nobool", "--bool=true|false|1|0|t|f|yes|no", "--help", "-h". A flag given twice
 * keeps the last value. "--" ends the flags; anything after it is a positional argument, which
 * rill programs do not take.
 *
 * The define calls return nothing, so a definition mistake (NULL variable, bad or duplicate name)
 * is kept on the object and returned by the next parse, like graph building's sticky status.
 */
#include "../core/core.h"

#include <rill/flags.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum flag_type { FLAG_FLOAT, FLAG_INT, FLAG_BOOL, FLAG_STRING } flag_type;

typedef union flag_value {
    double f;
    int64_t i;
    bool b;
    char *s; /* owned by the flag; may be NULL for a string default */
} flag_value;

typedef struct flag {
    char *name;
    char *help;
    flag_type type;
    void *var; /* double *, int64_t *, bool * or const char ** */
    flag_value def;
    int64_t min, max; /* int flags: the values accepted */
    char *value; /* string flags: the committed parsed value, owned; *var may point here */
    bool pending_set;
    flag_value pending; /* pending.s is owned until committed or dropped */
} flag;

struct rill_flags {
    char *program;
    char *description;
    flag *flags;
    int n, cap;
    char *define_error; /* first definition mistake, reported by parse */
};

static const char *const type_names[] = {"float", "int", "bool", "string"};
static const char *const type_expected[] = {"a float", "an integer", "a boolean (true or false)",
                                            "a string"};

rill_flags *rill_flags_new(const char *program, const char *description)
{
    rill_flags *f = rill__calloc(1, sizeof *f);
    RILL_CHECK_ALLOC(f);
    f->program = program ? rill__strdup(program) : NULL;
    f->description = description ? rill__strdup(description) : NULL;
    return f;
}

static void drop_pending(flag *fl)
{
    if (fl->type == FLAG_STRING) rill__free(fl->pending.s);
    fl->pending.s = NULL;
    fl->pending_set = false;
}

void rill_flags_free(rill_flags *f)
{
    if (!f) return;
    for (int i = 0; i < f->n; i++) {
        flag *fl = &f->flags[i];
        drop_pending(fl);
        if (fl->type == FLAG_STRING) rill__free(fl->def.s);
        rill__free(fl->value);
        rill__free(fl->name);
        rill__free(fl->help);
    }
    rill__free(f->flags);
    rill__free(f->define_error);
    rill__free(f->program);
    rill__free(f->description);
    rill__free(f);
}

static flag *find_flag(const rill_flags *f, const char *name, size_t len)
{
    for (int i = 0; i < f->n; i++)
        if (strlen(f->flags[i].name) == len && memcmp(f->flags[i].name, name, len) == 0)
            return &f->flags[i];
    return NULL;
}

/* A name is letters, digits, '_', '-' and '.', not starting with '-'. "help" and "h" are taken by
 * the help flag. */
static const char *bad_name_reason(const char *name)
{
    if (!name || !*name) return "is empty";
    if (name[0] == '-') return "starts with '-' (give the name without dashes)";
    for (const char *p = name; *p; p++) {
        unsigned char c = (unsigned char)*p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.';
        if (!ok) return "has a character other than letters, digits, '_', '-' and '.'";
    }
    if (strcmp(name, "help") == 0 || strcmp(name, "h") == 0) return "is reserved for the help flag";
    return NULL;
}

static flag *define(rill_flags *f, const char *name, flag_type type, void *var, const char *help)
{
    if (!f || f->define_error) return NULL;
    const char *why = bad_name_reason(name);
    if (why) {
        f->define_error = rill__asprintf("Cannot define %s flag '%s': the name %s",
                                         type_names[type], name ? name : "(null)", why);
        return NULL;
    }
    if (!var) {
        f->define_error = rill__asprintf("Cannot define %s flag '%s': its variable is NULL",
                                         type_names[type], name);
        return NULL;
    }
    if (find_flag(f, name, strlen(name))) {
        f->define_error = rill__asprintf("Flag --%s is defined twice", name);
        return NULL;
    }
    if (f->n == f->cap) {
        int cap = f->cap ? f->cap * 2 : 16;
        flag *grown = rill__realloc(f->flags, (size_t)cap * sizeof *grown);
        RILL_CHECK_ALLOC(grown);
        f->flags = grown;
        f->cap = cap;
    }
    flag *fl = &f->flags[f->n++];
    memset(fl, 0, sizeof *fl);
    fl->name = rill__strdup(name);
    fl->help = rill__strdup(help ? help : "");
    fl->type = type;
    fl->var = var;
    return fl;
}

void rill_flags_define_float(rill_flags *f, const char *name, double *var, double def,
                             const char *help)
{
    flag *fl = define(f, name, FLAG_FLOAT, var, help);
    if (!fl) return;
    fl->def.f = def;
    *var = def;
}

void rill_flags_define_int_range(rill_flags *f, const char *name, int64_t *var, int64_t def,
                                 int64_t min, int64_t max, const char *help)
{
    if (f && !f->define_error && (min > max || def < min || def > max)) {
        f->define_error = rill__asprintf("Cannot define int flag '%s': its default %" PRId64
                                         " is not in its range [%" PRId64 ", %" PRId64 "]",
                                         name ? name : "(null)", def, min, max);
        return;
    }
    flag *fl = define(f, name, FLAG_INT, var, help);
    if (!fl) return;
    fl->def.i = def;
    fl->min = min;
    fl->max = max;
    *var = def;
}

void rill_flags_define_int(rill_flags *f, const char *name, int64_t *var, int64_t def,
                           const char *help)
{
    rill_flags_define_int_range(f, name, var, def, INT64_MIN, INT64_MAX, help);
}

void rill_flags_define_bool(rill_flags *f, const char *name, bool *var, bool def, const char *help)
{
    flag *fl = define(f, name, FLAG_BOOL, var, help);
    if (!fl) return;
    fl->def.b = def;
    *var = def;
}

void rill_flags_define_string(rill_flags *f, const char *name, const char **var, const char *def,
                              const char *help)
{
    flag *fl = define(f, name, FLAG_STRING, var, help);
    if (!fl) return;
    fl->def.s = def ? rill__strdup(def) : NULL;
    *var = fl->def.s;
}

/* --- value parsing: the whole text must be the value, nothing before or after --- */

static bool parse_int(const char *text, int64_t *out, const char **why)
{
    *why = NULL;
    /* strtoll skips leading space and accepts "" as 0; neither is a number here. */
    if (!*text || !(text[0] == '-' || text[0] == '+' || (text[0] >= '0' && text[0] <= '9')))
        return false;
    const char *digits = text + (text[0] == '-' || text[0] == '+');
    bool hex = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
    if (hex && !((digits[2] >= '0' && digits[2] <= '9') || (digits[2] >= 'a' && digits[2] <= 'f') ||
                 (digits[2] >= 'A' && digits[2] <= 'F')))
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, hex ? 16 : 10);
    if (end == text || *end) return false;
    if (errno == ERANGE) {
        *why = "out of range for a 64-bit integer";
        return false;
    }
    *out = (int64_t)v;
    return true;
}

static bool parse_float(const char *text, double *out, const char **why)
{
    *why = NULL;
    if (!*text || !(text[0] == '-' || text[0] == '+' || text[0] == '.' ||
                    (text[0] >= '0' && text[0] <= '9') || text[0] == 'i' || text[0] == 'I'))
        return false; /* also keeps out leading space and "nan" */
    errno = 0;
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end) return false;
    if (isnan(v)) {
        *why = "NaN is not allowed";
        return false;
    }
    /* Overflow is an error; underflow to a subnormal or zero is the nearest value, so keep it. */
    if (errno == ERANGE && isinf(v)) {
        *why = "out of range for a double";
        return false;
    }
    *out = v;
    return true;
}

static bool parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = {"true", "t", "1", "yes", "y"};
    static const char *const no[] = {"false", "f", "0", "no", "n"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(text, yes[i]) == 0) return (*out = true), true;
        if (strcasecmp(text, no[i]) == 0) return (*out = false), true;
    }
    return false;
}

/* Sets fl's pending value from text; on failure returns the error message (caller frees). */
static char *set_pending(flag *fl, const char *text)
{
    flag_value v = {0};
    const char *why = NULL;
    bool ok = true;
    switch (fl->type) {
    case FLAG_FLOAT:
        ok = parse_float(text, &v.f, &why);
        break;
    case FLAG_INT:
        ok = parse_int(text, &v.i, &why);
        if (ok && (v.i < fl->min || v.i > fl->max))
            return rill__asprintf("Invalid value '%s' for flag --%s: expected an integer in "
                                  "[%" PRId64 ", %" PRId64 "]",
                                  text, fl->name, fl->min, fl->max);
        break;
    case FLAG_BOOL:
        ok = parse_bool(text, &v.b);
        break;
    case FLAG_STRING:
        v.s = rill__strdup(text);
        break;
    }
    if (!ok)
        return rill__asprintf("Invalid value '%s' for flag --%s: expected %s%s%s%s", text, fl->name,
                              type_expected[fl->type], why ? " (" : "", why ? why : "",
                              why ? ")" : "");
    drop_pending(fl); /* a flag given twice: the last one wins */
    fl->pending = v;
    fl->pending_set = true;
    return NULL;
}

static void commit(rill_flags *f)
{
    for (int i = 0; i < f->n; i++) {
        flag *fl = &f->flags[i];
        if (!fl->pending_set) continue;
        switch (fl->type) {
        case FLAG_FLOAT:
            *(double *)fl->var = fl->pending.f;
            break;
        case FLAG_INT:
            *(int64_t *)fl->var = fl->pending.i;
            break;
        case FLAG_BOOL:
            *(bool *)fl->var = fl->pending.b;
            break;
        case FLAG_STRING:
            rill__free(fl->value);
            fl->value = fl->pending.s;
            fl->pending.s = NULL;
            *(const char **)fl->var = fl->value;
            break;
        }
        fl->pending_set = false;
    }
}

/* Levenshtein distance, capped: enough to suggest "--learning_rate" for "--learnig_rate". */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return (size_t)-1;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static char *unknown_flag_error(const rill_flags *f, const char *name)
{
    const flag *best = NULL;
    size_t best_d = (size_t)-1;
    for (int i = 0; i < f->n; i++) {
        size_t d = edit_distance(name, f->flags[i].name);
        if (d < best_d) best_d = d, best = &f->flags[i];
    }
    size_t len = strlen(name);
    if (best && best_d <= (len < 6 ? 1u : 2u))
        return rill__asprintf("Unknown command line flag '%s'. Did you mean --%s?", name,
                              best->name);
    return rill__asprintf("Unknown command line flag '%s'", name);
}

/* Reads one argument (and the next, for "--name value"). *consumed is the number of arguments
 * used; returns an error message (caller frees) or NULL. */
static char *parse_one(rill_flags *f, int argc, char **argv, int i, int *consumed, bool *help)
{
    const char *arg = argv[i];
    *consumed = 1;
    const char *body = arg + 1 + (arg[1] == '-');
    const char *eq = strchr(body, '=');
    size_t name_len = eq ? (size_t)(eq - body) : strlen(body);
    const char *value = eq ? eq + 1 : NULL;

    if ((name_len == 4 && memcmp(body, "help", 4) == 0) || (name_len == 1 && body[0] == 'h')) {
        if (value) return rill__asprintf("Flag --help does not take a value");
        *help = true;
        return NULL;
    }
    if (name_len == 0) return rill__asprintf("Malformed flag '%s': the name is empty", arg);

    flag *fl = find_flag(f, body, name_len);
    if (!fl && name_len > 2 && memcmp(body, "no", 2) == 0) {
        flag *neg = find_flag(f, body + 2, name_len - 2);
        if (neg && neg->type == FLAG_BOOL) {
            if (value)
                return rill__asprintf("Flag --no%s does not take a value; use --%s=%s", neg->name,
                                      neg->name, value);
            return set_pending(neg, "false");
        }
        if (neg)
            return rill__asprintf("Flag --%s takes %s, so --no%s is not allowed (only bool flags "
                                  "have a --no form)",
                                  neg->name, type_expected[neg->type], neg->name);
    }
    if (!fl) {
        char *name = rill__strndup(body, name_len);
        char *err = unknown_flag_error(f, name);
        rill__free(name);
        return err;
    }
    if (value) return set_pending(fl, value);
    if (fl->type == FLAG_BOOL) return set_pending(fl, "true");
    if (i + 1 >= argc || !argv[i + 1])
        return rill__asprintf("Flag --%s needs a value (%s): use --%s=VALUE", fl->name,
                              type_expected[fl->type], fl->name);
    *consumed = 2;
    return set_pending(fl, argv[i + 1]);
}

/* Without a name from rill_flags_new, the program is called what argv[0] says. */
static void learn_program_name(rill_flags *f, int argc, char **argv)
{
    if (f->program || argc < 1 || !argv || !argv[0] || !argv[0][0]) return;
    const char *slash = strrchr(argv[0], '/');
    f->program = rill__strdup(slash ? slash + 1 : argv[0]);
}

rill_flags_result rill_flags_parse(rill_flags *f, int argc, char **argv, rill_status *s)
{
    if (!f) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "rill_flags_parse: the flags object is NULL");
        return RILL_FLAGS_ERROR;
    }
    if (f->define_error) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s", f->define_error);
        return RILL_FLAGS_ERROR;
    }
    learn_program_name(f, argc, argv);
    char *error = NULL; /* the first error; later ones are dropped */
    bool help = false;
    bool flags_done = false;
    for (int i = 1; i < argc && argv; i++) {
        const char *arg = argv[i];
        if (!arg) continue;
        char *err = NULL;
        int consumed = 1;
        if (!flags_done && strcmp(arg, "--") == 0) {
            flags_done = true;
        } else if (flags_done || arg[0] != '-' || arg[1] == 0) {
            err = rill__asprintf("Unexpected positional argument '%s' (this program takes only "
                                 "flags)",
                                 arg);
        } else {
            err = parse_one(f, argc, argv, i, &consumed, &help);
        }
        if (err && !error)
            error = err;
        else
            rill__free(err);
        i += consumed - 1;
    }

    rill_flags_result result = RILL_FLAGS_OK;
    if (help) {
        rill_flags_print_help(f, stdout);
        fflush(stdout);
        result = RILL_FLAGS_HELP;
    } else if (error) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s", error);
        result = RILL_FLAGS_ERROR;
    }
    if (result == RILL_FLAGS_OK)
        commit(f);
    else
        for (int i = 0; i < f->n; i++) drop_pending(&f->flags[i]);
    if (result != RILL_FLAGS_ERROR) rill_status_clear(s);
    rill__free(error);
    return result;
}

/* The shortest "%.*g" that reads back as the same double: 0.1 prints as "0.1", not
 * "0.10000000000000001". */
static void format_double(double v, char *buf, size_t n)
{
    for (int prec = 6; prec <= 17; prec++) { /* %g below 6 digits turns 60 into 6e+01 */
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* Writes text with every line after the first indented. */
static void print_indented(FILE *out, const char *text, const char *indent)
{
    fputs(indent, out);
    for (const char *p = text; *p; p++) {
        fputc(*p, out);
        if (*p == '\n' && p[1]) fputs(indent, out);
    }
    fputc('\n', out);
}

void rill_flags_print_help(const rill_flags *f, void *stream)
{
    FILE *out = stream ? stream : stdout;
    if (!f) return;
    const char *prog = f->program ? f->program : "program";
    fprintf(out, "usage: %s [--flag=value ...]\n", prog);
    if (f->description && *f->description) {
        fputc('\n', out);
        print_indented(out, f->description, "");
    }
    fprintf(out, "\nflags:\n");
    for (int i = 0; i < f->n; i++) {
        const flag *fl = &f->flags[i];
        char def[64];
        switch (fl->type) {
        case FLAG_FLOAT:
            format_double(fl->def.f, def, sizeof def);
            break;
        case FLAG_INT:
            snprintf(def, sizeof def, "%" PRId64, fl->def.i);
            break;
        case FLAG_BOOL:
            snprintf(def, sizeof def, "%s", fl->def.b ? "true" : "false");
            break;
        case FLAG_STRING:
            def[0] = 0;
            break;
        }
        if (fl->type == FLAG_BOOL)
            fprintf(out, "  --[no]%s (bool, default: %s)\n", fl->name, def);
        else if (fl->type == FLAG_STRING && fl->def.s)
            fprintf(out, "  --%s (string, default: '%s')\n", fl->name, fl->def.s);
        else if (fl->type == FLAG_STRING)
            fprintf(out, "  --%s (string, default: none)\n", fl->name);
        else if (fl->type == FLAG_INT && (fl->min != INT64_MIN || fl->max != INT64_MAX))
            fprintf(out, "  --%s (int in [%" PRId64 ", %" PRId64 "], default: %s)\n", fl->name,
                    fl->min, fl->max, def);
        else
            fprintf(out, "  --%s (%s, default: %s)\n", fl->name, type_names[fl->type], def);
        if (*fl->help) print_indented(out, fl->help, "      ");
    }
    fprintf(out, "  --help, -h\n      Show this help and exit.\n");
}

int rill_flags_parse_or_exit_code(rill_flags *f, int argc, char **argv)
{
    rill_status *s = rill_status_new();
    rill_flags_result r = rill_flags_parse(f, argc, argv, s);
    int code = -1;
    if (r == RILL_FLAGS_HELP) {
        code = 0;
    } else if (r == RILL_FLAGS_ERROR) {
        fprintf(stderr, "%s: %s\nTry --help for the list of flags.\n",
                f && f->program ? f->program : "program", rill_status_message(s));
        fflush(stderr);
        code = 2;
    }
    rill_status_free(s);
    return code;
}
