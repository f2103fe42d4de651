/* test_flags.c - rill_flags: every parse form, defaults, help output, each error text, and the
 * exit codes of rill_flags_parse_or_exit_code. stdout and stderr are captured through a
 * temporary file put under the real file descriptor, so the text checked is the text a user sees.
 */
#include "../test.h"

#include <rill/flags.h>

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* --- capturing a stream --- */

typedef struct capture {
    FILE *stream;
    FILE *tmp;
    int saved_fd;
} capture;

static capture capture_begin(FILE *stream)
{
    capture c = {stream, tmpfile(), -1};
    if (!c.tmp) return c;
    fflush(stream);
    c.saved_fd = dup(fileno(stream));
    dup2(fileno(c.tmp), fileno(stream));
    return c;
}

/* Restores the stream and returns what was written to it (caller frees). */
static char *capture_end(capture c)
{
    if (!c.tmp) return NULL;
    fflush(c.stream);
    dup2(c.saved_fd, fileno(c.stream));
    close(c.saved_fd);
    long n = ftell(c.tmp);
    char *text = malloc(n > 0 ? (size_t)n + 1 : 1);
    rewind(c.tmp);
    size_t got = n > 0 ? fread(text, 1, (size_t)n, c.tmp) : 0;
    text[got] = 0;
    fclose(c.tmp);
    return text;
}

/* --- a flag set like a training program's --- */

typedef struct vars {
    double lr;
    int64_t steps;
    bool verbose;
    bool shuffle;
    const char *data_dir;
    const char *name;
} vars;

static rill_flags *make_flags(vars *v)
{
    rill_flags *f = rill_flags_new("train_mnist", "Trains a small classifier on Fashion-MNIST.");
    rill_flags_define_float(f, "learning_rate", &v->lr, 0.01, "Step size for SGD.");
    rill_flags_define_int(f, "max_steps", &v->steps, 1000, "Number of steps to run.");
    rill_flags_define_bool(f, "verbose", &v->verbose, false, "Log every step.");
    rill_flags_define_bool(f, "shuffle", &v->shuffle, true, "Shuffle the data\nevery epoch.");
    rill_flags_define_string(f, "data_dir", &v->data_dir, "/tmp/data", "Where the data lives.");
    rill_flags_define_string(f, "name", &v->name, NULL, "Run name.");
    return f;
}

/* Parses a NULL-terminated list of arguments (argv[0] is added). */
#define PARSE(f, s, ...) parse_list((f), (s), (const char *[]){"train_mnist", __VA_ARGS__, NULL})

static rill_flags_result parse_list(rill_flags *f, rill_status *s, const char **args)
{
    int argc = 0;
    while (args[argc]) argc++;
    return rill_flags_parse(f, argc, (char **)args, s);
}

static void test_defaults(void)
{
    vars v = {
        .lr = -1, .steps = -1, .verbose = true, .shuffle = false, .data_dir = "x", .name = "y"};
    rill_flags *f = make_flags(&v);
    CHECK_NEAR(v.lr, 0.01, 0);
    CHECK_EQ_INT(v.steps, 1000);
    CHECK(v.verbose == false);
    CHECK(v.shuffle == true);
    CHECK_EQ_STR(v.data_dir, "/tmp/data");
    CHECK(v.name == NULL);

    rill_status *s = rill_status_new();
    CHECK_EQ_INT(rill_flags_parse(f, 1, (char *[]){"train_mnist", NULL}, s), RILL_FLAGS_OK);
    CHECK_EQ_INT(rill_status_code(s), RILL_OK);
    CHECK_EQ_INT(rill_flags_parse(f, 0, NULL, s), RILL_FLAGS_OK);
    CHECK_NEAR(v.lr, 0.01, 0);
    CHECK_EQ_STR(v.data_dir, "/tmp/data");
    rill_status_free(s);
    rill_flags_free(f);
    rill_flags_free(NULL);
}

static void test_forms(void)
{
    vars v;
    rill_flags *f = make_flags(&v);
    rill_status *s = rill_status_new();

    CHECK_EQ_INT(PARSE(f, s, "--learning_rate=0.5", "--max_steps=20", "--verbose", "--noshuffle",
                       "--data_dir=/d", "--name=run1"),
                 RILL_FLAGS_OK);
    CHECK_EQ_INT(rill_status_code(s), RILL_OK);
    CHECK_NEAR(v.lr, 0.5, 0);
    CHECK_EQ_INT(v.steps, 20);
    CHECK(v.verbose);
    CHECK(!v.shuffle);
    CHECK_EQ_STR(v.data_dir, "/d");
    CHECK_EQ_STR(v.name, "run1");

    /* "--name value", negative numbers as the value, single dash as absl allows. */
    CHECK_EQ_INT(PARSE(f, s, "--learning_rate", "-2.5e-3", "--max_steps", "-7", "--data_dir", "/e",
                       "-name", "x", "-verbose=false", "--shuffle"),
                 RILL_FLAGS_OK);
    CHECK_NEAR(v.lr, -2.5e-3, 0);
    CHECK_EQ_INT(v.steps, -7);
    CHECK_EQ_STR(v.data_dir, "/e");
    CHECK_EQ_STR(v.name, "x");
    CHECK(!v.verbose);
    CHECK(v.shuffle);

    /* Every boolean spelling. */
    const char *truthy[] = {"--verbose=true", "--verbose=1", "--verbose=TRUE", "--verbose=t",
                            "--verbose=yes"};
    const char *falsy[] = {"--verbose=false", "--verbose=0", "--verbose=False", "--verbose=f",
                           "--verbose=no"};
    for (size_t i = 0; i < sizeof truthy / sizeof truthy[0]; i++) {
        v.verbose = false;
        CHECK_EQ_INT(PARSE(f, s, truthy[i]), RILL_FLAGS_OK);
        CHECK(v.verbose);
        CHECK_EQ_INT(PARSE(f, s, falsy[i]), RILL_FLAGS_OK);
        CHECK(!v.verbose);
    }

    /* Last wins, strings included; values with '=' and empty strings are kept whole. */
    CHECK_EQ_INT(PARSE(f, s, "--max_steps=1", "--max_steps=2", "--name=a", "--name", "b=c",
                       "--data_dir=", "--verbose", "--noverbose"),
                 RILL_FLAGS_OK);
    CHECK_EQ_INT(v.steps, 2);
    CHECK_EQ_STR(v.name, "b=c");
    CHECK_EQ_STR(v.data_dir, "");
    CHECK(!v.verbose);

    /* Integers: hex, signs, the int64 limits. Floats: exponents, inf, underflow to zero. */
    CHECK_EQ_INT(PARSE(f, s, "--max_steps=0x10"), RILL_FLAGS_OK);
    CHECK_EQ_INT(v.steps, 16);
    CHECK_EQ_INT(PARSE(f, s, "--max_steps=+08"), RILL_FLAGS_OK);
    CHECK_EQ_INT(v.steps, 8);
    CHECK_EQ_INT(PARSE(f, s, "--max_steps=-9223372036854775808"), RILL_FLAGS_OK);
    CHECK(v.steps == INT64_MIN);
    CHECK_EQ_INT(PARSE(f, s, "--max_steps=9223372036854775807"), RILL_FLAGS_OK);
    CHECK(v.steps == INT64_MAX);
    CHECK_EQ_INT(PARSE(f, s, "--learning_rate=1e3"), RILL_FLAGS_OK);
    CHECK_NEAR(v.lr, 1000, 0);
    CHECK_EQ_INT(PARSE(f, s, "--learning_rate=.25"), RILL_FLAGS_OK);
    CHECK_NEAR(v.lr, 0.25, 0);
    CHECK_EQ_INT(PARSE(f, s, "--learning_rate=-inf"), RILL_FLAGS_OK);
    CHECK(isinf(v.lr) && v.lr < 0);
    CHECK_EQ_INT(PARSE(f, s, "--learning_rate=1e-400"), RILL_FLAGS_OK);
    CHECK_NEAR(v.lr, 0, 0);

    /* "--" ends the flags; with nothing after it, that is fine. */
    CHECK_EQ_INT(PARSE(f, s, "--max_steps=3", "--"), RILL_FLAGS_OK);
    CHECK_EQ_INT(v.steps, 3);

    rill_status_free(s);
    rill_flags_free(f);
}

/* The values are copies: changing or freeing argv afterwards changes nothing. */
static void test_string_ownership(void)
{
    const char *out = NULL;
    rill_flags *f = rill_flags_new("p", NULL);
    rill_flags_define_string(f, "out", &out, "def", "");
    char *arg = strdup("--out=/some/where");
    char *argv[] = {"p", arg, NULL};
    rill_status *s = rill_status_new();
    CHECK_EQ_INT(rill_flags_parse(f, 2, argv, s), RILL_FLAGS_OK);
    memset(arg, 'x', strlen(arg));
    free(arg);
    CHECK_EQ_STR(out, "/some/where");
    rill_status_free(s);
    rill_flags_free(f);
}

static bool vars_equal(const vars *a, const vars *b)
{
    return a->lr == b->lr && a->steps == b->steps && a->verbose == b->verbose &&
           a->shuffle == b->shuffle && a->data_dir == b->data_dir && a->name == b->name;
}

/* Parses one bad command line and checks the error text; the variables must not move. */
#define CHECK_PARSE_ERROR(f, v, s, expected, ...)                                                  \
    do {                                                                                           \
        vars before_ = *(v);                                                                       \
        CHECK_EQ_INT(PARSE(f, s, __VA_ARGS__), RILL_FLAGS_ERROR);                                  \
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);                                  \
        CHECK_EQ_STR(rill_status_message(s), expected);                                            \
        CHECK(vars_equal(&before_, (v)));                                                          \
    } while (0)

static void test_errors(void)
{
    vars v;
    rill_flags *f = make_flags(&v);
    rill_status *s = rill_status_new();

    CHECK_PARSE_ERROR(f, &v, s, "Unknown command line flag 'foo'", "--foo=1");
    CHECK_PARSE_ERROR(f, &v, s, "Unknown command line flag 'foo'", "--foo");
    CHECK_PARSE_ERROR(f, &v, s,
                      "Unknown command line flag 'learnig_rate'. Did you mean --learning_rate?",
                      "--learnig_rate=0.1");
    CHECK_PARSE_ERROR(f, &v, s, "Invalid value 'abc' for flag --learning_rate: expected a float",
                      "--learning_rate=abc");
    /* Trailing garbage, empty, spaces, NaN and overflow are all bad floats. */
    CHECK_PARSE_ERROR(f, &v, s, "Invalid value '0.5x' for flag --learning_rate: expected a float",
                      "--learning_rate=0.5x");
    CHECK_PARSE_ERROR(f, &v, s, "Invalid value '' for flag --learning_rate: expected a float",
                      "--learning_rate=");
    CHECK_PARSE_ERROR(f, &v, s, "Invalid value ' 1' for flag --learning_rate: expected a float",
                      "--learning_rate", " 1");
    CHECK_PARSE_ERROR(f, &v, s, "Invalid value '1 ' for flag --learning_rate: expected a float",
                      "--learning_rate=1 ");
    CHECK_PARSE_ERROR(f, &v, s, "Invalid value 'nan' for flag --learning_rate: expected a float",
                      "--learning_rate=nan");
    CHECK_PARSE_ERROR(f, &v, s,
                      "Invalid value '-nan' for flag --learning_rate: expected a float (NaN is "
                      "not allowed)",
                      "--learning_rate=-nan");
    CHECK_PARSE_ERROR(f, &v, s,
                      "Invalid value '1e999' for flag --learning_rate: expected a float (out of "
                      "range for a double)",
                      "--learning_rate=1e999");
    /* Ints: garbage, fractions, exponents, empty, NaN, overflow, a bare "0x". */
    CHECK_PARSE_ERROR(f, &v, s, "Invalid value '12abc' for flag --max_steps: expected an integer",
                      "--max_steps=12abc");
    CHECK_PARSE_ERROR(f, &v, s, "Invalid value '1.5' for flag --max_steps: expected an integer",
                      "--max_steps=1.5");
    CHECK_PARSE_ERROR(f, &v, s, "Invalid value '1e3' for flag --max_steps: expected an integer",
                      "--max_steps=1e3");
    CHECK_PARSE_ERROR(f, &v, s, "Invalid value '' for flag --max_steps: expected an integer",
                      "--max_steps=");
    CHECK_PARSE_ERROR(f, &v, s, "Invalid value 'nan' for flag --max_steps: expected an integer",
                      "--max_steps=nan");
    CHECK_PARSE_ERROR(f, &v, s, "Invalid value '0x' for flag --max_steps: expected an integer",
                      "--max_steps=0x");
    CHECK_PARSE_ERROR(f, &v, s, "Invalid value ' 5' for flag --max_steps: expected an integer",
                      "--max_steps= 5");
    CHECK_PARSE_ERROR(f, &v, s,
                      "Invalid value '9223372036854775808' for flag --max_steps: expected an "
                      "integer (out of range for a 64-bit integer)",
                      "--max_steps=9223372036854775808");
    CHECK_PARSE_ERROR(f, &v, s,
                      "Invalid value 'maybe' for flag --verbose: expected a boolean (true or "
                      "false)",
                      "--verbose=maybe");
    CHECK_PARSE_ERROR(f, &v, s,
                      "Flag --max_steps needs a value (an integer): use --max_steps=VALUE",
                      "--max_steps");
    CHECK_PARSE_ERROR(f, &v, s, "Flag --noverbose does not take a value; use --verbose=true",
                      "--noverbose=true");
    CHECK_PARSE_ERROR(f, &v, s,
                      "Flag --max_steps takes an integer, so --nomax_steps is not allowed (only "
                      "bool flags have a --no form)",
                      "--nomax_steps");
    CHECK_PARSE_ERROR(f, &v, s,
                      "Unexpected positional argument 'data.txt' (this program takes only flags)",
                      "--max_steps=5", "data.txt");
    /* A bool does not take the next argument as its value. */
    CHECK_PARSE_ERROR(f, &v, s,
                      "Unexpected positional argument 'false' (this program takes only flags)",
                      "--verbose", "false");
    CHECK_PARSE_ERROR(f, &v, s,
                      "Unexpected positional argument '--verbose' (this program takes only flags)",
                      "--", "--verbose");
    CHECK_PARSE_ERROR(f, &v, s,
                      "Unexpected positional argument '-' (this program takes only flags)", "-");
    CHECK_PARSE_ERROR(f, &v, s, "Malformed flag '--=3': the name is empty", "--=3");
    CHECK_PARSE_ERROR(f, &v, s, "Flag --help does not take a value", "--help=1");
    /* The first error is the one reported, and good flags before it are not applied. */
    CHECK_PARSE_ERROR(f, &v, s, "Unknown command line flag 'a'", "--max_steps=9", "--a",
                      "--learning_rate=x");

    /* A NULL status is allowed: the result alone says what happened. */
    CHECK_EQ_INT(PARSE(f, NULL, "--foo"), RILL_FLAGS_ERROR);
    CHECK_EQ_INT(rill_flags_parse(NULL, 0, NULL, s), RILL_FLAGS_ERROR);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);

    rill_status_free(s);
    rill_flags_free(f);
}

static void test_define_errors(void)
{
    rill_status *s = rill_status_new();
    int64_t a = 0, b = 0;
    bool h = false;

    rill_flags *f = rill_flags_new("p", NULL);
    rill_flags_define_int(f, "steps", &a, 1, "");
    rill_flags_define_int(f, "steps", &b, 2, "");
    CHECK_EQ_INT(rill_flags_parse(f, 1, (char *[]){"p", NULL}, s), RILL_FLAGS_ERROR);
    CHECK_EQ_STR(rill_status_message(s), "Flag --steps is defined twice");
    rill_flags_free(f);

    f = rill_flags_new("p", NULL);
    rill_flags_define_bool(f, "help", &h, false, "");
    CHECK_EQ_INT(rill_flags_parse(f, 1, (char *[]){"p", NULL}, s), RILL_FLAGS_ERROR);
    CHECK_EQ_STR(rill_status_message(s),
                 "Cannot define bool flag 'help': the name is reserved for the help flag");
    rill_flags_free(f);

    f = rill_flags_new("p", NULL);
    rill_flags_define_float(f, "lr", NULL, 0.1, "");
    CHECK_EQ_INT(rill_flags_parse(f, 1, (char *[]){"p", NULL}, s), RILL_FLAGS_ERROR);
    CHECK_EQ_STR(rill_status_message(s), "Cannot define float flag 'lr': its variable is NULL");
    rill_flags_free(f);

    f = rill_flags_new("p", NULL);
    rill_flags_define_int(f, "--steps", &a, 1, "");
    CHECK_EQ_INT(rill_flags_parse(f, 1, (char *[]){"p", NULL}, s), RILL_FLAGS_ERROR);
    CHECK_STR_CONTAINS(rill_status_message(s), "starts with '-'");
    rill_flags_free(f);

    f = rill_flags_new("p", NULL);
    rill_flags_define_int(f, "a b", &a, 1, "");
    CHECK_EQ_INT(rill_flags_parse(f, 1, (char *[]){"p", NULL}, s), RILL_FLAGS_ERROR);
    CHECK_STR_CONTAINS(rill_status_message(s), "'a b'");
    rill_flags_free(f);

    /* Defines on NULL are no-ops. */
    rill_flags_define_int(NULL, "x", &a, 1, "");
    rill_status_free(s);
}

static void test_help(void)
{
    vars v;
    rill_flags *f = make_flags(&v);
    rill_status *s = rill_status_new();

    capture c = capture_begin(stdout);
    rill_flags_result r = PARSE(f, s, "--max_steps=5", "--help");
    char *out = capture_end(c);
    CHECK_EQ_INT(r, RILL_FLAGS_HELP);
    CHECK_EQ_INT(rill_status_code(s), RILL_OK);
    CHECK_EQ_INT(v.steps, 1000); /* help runs nothing, so nothing is applied */
    CHECK_STR_CONTAINS(out, "usage: train_mnist");
    CHECK_STR_CONTAINS(out, "Trains a small classifier on Fashion-MNIST.");
    CHECK_STR_CONTAINS(out, "  --learning_rate (float, default: 0.01)\n      Step size for SGD.\n");
    CHECK_STR_CONTAINS(out, "  --max_steps (int, default: 1000)\n      Number of steps to run.\n");
    CHECK_STR_CONTAINS(out, "  --[no]verbose (bool, default: false)\n      Log every step.\n");
    CHECK_STR_CONTAINS(out, "  --[no]shuffle (bool, default: true)\n"
                            "      Shuffle the data\n      every epoch.\n");
    CHECK_STR_CONTAINS(out, "  --data_dir (string, default: '/tmp/data')\n");
    CHECK_STR_CONTAINS(out, "  --name (string, default: none)\n      Run name.\n");
    CHECK_STR_CONTAINS(out, "--help");
    /* Definition order is help order. */
    CHECK(out && strstr(out, "--learning_rate") < strstr(out, "--max_steps"));
    CHECK(out && strstr(out, "--max_steps") < strstr(out, "--data_dir"));
    free(out);

    /* -h too, and help wins over an error elsewhere on the line. */
    c = capture_begin(stdout);
    r = PARSE(f, s, "--bogus", "-h");
    out = capture_end(c);
    CHECK_EQ_INT(r, RILL_FLAGS_HELP);
    CHECK_STR_CONTAINS(out, "--learning_rate");
    free(out);

    /* Straight to a stream, as a program might for its own "usage" path. */
    FILE *tmp = tmpfile();
    if (CHECK(tmp != NULL)) {
        rill_flags_print_help(f, tmp);
        long n = ftell(tmp);
        CHECK(n > 100);
        fclose(tmp);
    }

    /* Without a program name, argv[0]'s base name is used. */
    double x;
    rill_flags *g = rill_flags_new(NULL, NULL);
    rill_flags_define_float(g, "x", &x, 1e-7, "");
    c = capture_begin(stdout);
    r = rill_flags_parse(g, 2, (char *[]){"/usr/bin/mytool", "--help", NULL}, s);
    out = capture_end(c);
    CHECK_EQ_INT(r, RILL_FLAGS_HELP);
    CHECK_STR_CONTAINS(out, "usage: mytool [--flag=value ...]");
    CHECK_STR_CONTAINS(out, "--x (float, default: 1e-07)");
    free(out);
    rill_flags_free(g);

    rill_status_free(s);
    rill_flags_free(f);
}

static void test_exit_codes(void)
{
    vars v;
    rill_flags *f = make_flags(&v);

    CHECK_EQ_INT(rill_flags_parse_or_exit_code(f, 2, (char *[]){"x", "--max_steps=4", NULL}), -1);
    CHECK_EQ_INT(v.steps, 4);

    capture c = capture_begin(stdout);
    int code = rill_flags_parse_or_exit_code(f, 2, (char *[]){"x", "--help", NULL});
    char *out = capture_end(c);
    CHECK_EQ_INT(code, 0);
    CHECK_STR_CONTAINS(out, "--max_steps");
    free(out);

    c = capture_begin(stderr);
    code = rill_flags_parse_or_exit_code(f, 2, (char *[]){"x", "--foo=1", NULL});
    char *err = capture_end(c);
    CHECK_EQ_INT(code, 2);
    CHECK_EQ_STR(
        err, "train_mnist: Unknown command line flag 'foo'\nTry --help for the list of flags.\n");
    free(err);

    c = capture_begin(stderr);
    code = rill_flags_parse_or_exit_code(f, 3, (char *[]){"x", "--learning_rate", "abc", NULL});
    err = capture_end(c);
    CHECK_EQ_INT(code, 2);
    CHECK_STR_CONTAINS(err, "Invalid value 'abc' for flag --learning_rate: expected a float");
    free(err);

    rill_flags_free(f);
}

/* Ranged ints: a value used as an int (a task index) must not wrap: 4294967296 is refused with
 * the range, not taken as 0; the bounds themselves are fine; the help shows the range; a
 * default outside the range is a definition error. */
static void test_int_range(void)
{
    rill_status *s = rill_status_new();
    int64_t task = -7, big = -7;
    rill_flags *f = rill_flags_new("worker", NULL);
    rill_flags_define_int_range(f, "task_index", &task, 0, 0, INT32_MAX, "Index of the task.");
    rill_flags_define_int(f, "steps", &big, 1, "Any 64-bit value.");
    CHECK_EQ_INT(task, 0);
    const char *bad[] = {"4294967296", "2147483648", "-1", "-4294967296"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char arg[64], want[160];
        snprintf(arg, sizeof arg, "--task_index=%s", bad[i]);
        snprintf(want, sizeof want,
                 "Invalid value '%s' for flag --task_index: expected an integer in [0, "
                 "2147483647]",
                 bad[i]);
        CHECK_EQ_INT(PARSE(f, s, arg), RILL_FLAGS_ERROR);
        CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
        CHECK_EQ_STR(rill_status_message(s), want);
        CHECK_EQ_INT(task, 0); /* unchanged */
    }
    CHECK_EQ_INT(PARSE(f, s, "--task_index=2147483647"), RILL_FLAGS_OK);
    CHECK_EQ_INT(task, INT32_MAX);
    CHECK_EQ_INT(PARSE(f, s, "--task_index", "0"), RILL_FLAGS_OK);
    CHECK_EQ_INT(task, 0);
    /* A plain int flag takes the whole 64-bit range. */
    CHECK_EQ_INT(PARSE(f, s, "--steps=4294967296"), RILL_FLAGS_OK);
    CHECK_EQ_INT(big, INT64_C(4294967296));
    capture c = capture_begin(stdout);
    rill_flags_print_help(f, stdout);
    char *help = capture_end(c);
    CHECK_STR_CONTAINS(help, "  --task_index (int in [0, 2147483647], default: 0)\n");
    CHECK_STR_CONTAINS(help, "  --steps (int, default: 1)\n");
    free(help);
    rill_flags_free(f);

    int64_t x = 0;
    f = rill_flags_new("p", NULL);
    rill_flags_define_int_range(f, "n", &x, 5, 0, 3, "");
    CHECK_EQ_INT(PARSE(f, s, "--n=1"), RILL_FLAGS_ERROR);
    CHECK_EQ_STR(rill_status_message(s),
                 "Cannot define int flag 'n': its default 5 is not in its range [0, 3]");
    rill_flags_free(f);
    rill_status_free(s);
}

int main(void)
{
    test_defaults();
    test_forms();
    test_string_ownership();
    test_errors();
    test_define_errors();
    test_help();
    test_exit_codes();
    test_int_range();
    TEST_MAIN_END();
}
