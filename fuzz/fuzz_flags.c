/* fuzz_flags.c - the command-line flag parser (train/flags.c, rill/flags.h).
 *
 * Input: a byte saying how many extra flags to define (0-3, each named by the next string and
 * typed by its length), then NUL-separated strings: those names, then argv[1..]. The seed's own
 * flags are always defined. What flags.c promises is checked: a parse that fails or prints the
 * help leaves every variable as it was; a parse that succeeds gives every string flag a
 * terminated value; parsing the same argv again gives the same answer and the same values. */
#include "fuzz.h"

#include <rill/flags.h>
#include <rill/status.h>

#define MAX_ARGS 64

typedef struct vars {
    double rate, extra_f;
    int64_t steps, task, extra_i;
    bool sync, extra_b;
    const char *ps_hosts, *job, *extra_s;
} vars;

static rill_flags *define(vars *v, char **names, int nnames)
{
    rill_flags *f = rill_flags_new("fuzz_flags", "The seed's flags, and the input's.");
    rill_flags_define_float(f, "learning_rate", &v->rate, 0.01, "Learning rate.");
    rill_flags_define_int(f, "train_steps", &v->steps, 1000, "Steps to train.");
    rill_flags_define_int(f, "task_index", &v->task, 0, "Index of task within the job.");
    rill_flags_define_bool(f, "issync", &v->sync, false, "Synchronous training.");
    rill_flags_define_string(f, "ps_hosts", &v->ps_hosts, "localhost:2222", "Comma-separated.");
    rill_flags_define_string(f, "job_name", &v->job, NULL, "ps or worker.");
    for (int i = 0; i < nnames; i++) {
        switch (strlen(names[i]) % 4) {
        case 0:
            rill_flags_define_float(f, names[i], &v->extra_f, -1.5, names[i]);
            break;
        case 1:
            rill_flags_define_int(f, names[i], &v->extra_i, -7, names[i]);
            break;
        case 2:
            rill_flags_define_bool(f, names[i], &v->extra_b, true, names[i]);
            break;
        default:
            rill_flags_define_string(f, names[i], &v->extra_s, names[i], names[i]);
            break;
        }
    }
    return f;
}

/* The variables' values, comparable after the strings' storage changed. */
typedef struct snapshot {
    vars v;
    char *ps_hosts, *job, *extra_s;
} snapshot;

static char *dup_or_null(const char *s)
{
    return s ? fuzz_strndup((const uint8_t *)s, strlen(s)) : NULL;
}

static snapshot take(const vars *v)
{
    return (snapshot){*v, dup_or_null(v->ps_hosts), dup_or_null(v->job), dup_or_null(v->extra_s)};
}

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static bool same(const snapshot *a, const snapshot *b)
{
    const vars *x = &a->v, *y = &b->v;
    return memcmp(&x->rate, &y->rate, sizeof x->rate) == 0 &&
           memcmp(&x->extra_f, &y->extra_f, sizeof x->extra_f) == 0 && x->steps == y->steps &&
           x->task == y->task && x->extra_i == y->extra_i && x->sync == y->sync &&
           x->extra_b == y->extra_b && same_str(a->ps_hosts, b->ps_hosts) &&
           same_str(a->job, b->job) && same_str(a->extra_s, b->extra_s);
}

static void drop(snapshot *s)
{
    free(s->ps_hosts);
    free(s->job);
    free(s->extra_s);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* --help prints there. */
    if (!freopen("/dev/null", "w", stdout)) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in in = {data, size};
    int nnames = fuzz_u8(&in) % 4;
    char *names[3];
    for (int i = 0; i < nnames; i++) names[i] = fuzz_next_str(&in);
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    argv[argc++] = fuzz_strndup((const uint8_t *)"fuzz_flags", 10);
    while (in.n && argc < MAX_ARGS) argv[argc++] = fuzz_next_str(&in);
    argv[argc] = NULL;

    vars v = {0};
    rill_flags *f = define(&v, names, nnames);
    rill_status *s = rill_status_new();
    snapshot before = take(&v);
    rill_flags_result r = rill_flags_parse(f, argc, argv, s);
    snapshot after = take(&v);
    if (r == RILL_FLAGS_OK) {
        FUZZ_ASSERT(rill_status_ok(s));
        FUZZ_ASSERT(v.ps_hosts != NULL);
    } else {
        FUZZ_ASSERT(r == RILL_FLAGS_HELP || r == RILL_FLAGS_ERROR);
        FUZZ_ASSERT(r == RILL_FLAGS_HELP ? rill_status_ok(s)
                                         : rill_status_code(s) == RILL_INVALID_ARGUMENT);
        FUZZ_ASSERT(same(&before, &after));
    }
    /* The same command line again: the same answer, the same values. */
    if (r != RILL_FLAGS_HELP) {
        FUZZ_ASSERT(rill_flags_parse(f, argc, argv, s) == r);
        snapshot again = take(&v);
        FUZZ_ASSERT(same(&after, &again));
        drop(&again);
    }
    rill_flags_print_help(f, stdout);
    drop(&before);
    drop(&after);
    rill_status_free(s);
    rill_flags_free(f);
    for (int i = 0; i < argc; i++) free(argv[i]);
    for (int i = 0; i < nnames; i++) free(names[i]);
    return 0;
}
