/* rill/flags.h - command-line flags, as tf.app.flags.
 *
 * Define flags with a default and a help text, then parse argv: "--name=value", "--name value",
 * "--bool_flag" and "--nobool_flag" are accepted; "--help" prints every flag with its help and
 * default. An unknown flag or a bad value is an INVALID_ARGUMENT naming the flag.
 */
#ifndef RILL_FLAGS_H
#define RILL_FLAGS_H

#include <rill/status.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rill_flags rill_flags;

/* program is used in the usage line (borrowed string, copied). */
rill_flags *rill_flags_new(const char *program, const char *description);
void rill_flags_free(rill_flags *f);

/* Each define binds a variable that parse writes; the variable is set to the default now.
 * name and help are copied. Strings: *var points into storage owned by f. */
void rill_flags_define_float(rill_flags *f, const char *name, double *var, double def,
                             const char *help);
/* Int flags take any 64-bit value ("9223372036854775808" is an error, not a wrap); a value that
 * will be used as a narrower type (an int task index) wants a range instead: */
void rill_flags_define_int(rill_flags *f, const char *name, int64_t *var, int64_t def,
                           const char *help);
/* An int flag that accepts only values in [min, max] ("Invalid value '4294967296' for flag
 * --task_index: expected an integer in [0, 2147483647]"); help shows the range. A default
 * outside it is a definition error, reported by the next parse. */
void rill_flags_define_int_range(rill_flags *f, const char *name, int64_t *var, int64_t def,
                                 int64_t min, int64_t max, const char *help);
void rill_flags_define_bool(rill_flags *f, const char *name, bool *var, bool def, const char *help);
void rill_flags_define_string(rill_flags *f, const char *name, const char **var, const char *def,
                              const char *help);

typedef enum rill_flags_result {
    RILL_FLAGS_OK = 0,   /* parsed; run the program */
    RILL_FLAGS_HELP = 1, /* --help was given and the help was printed; exit 0 */
    RILL_FLAGS_ERROR = 2 /* s holds the error; exit non-zero */
} rill_flags_result;

/* Parses argv[1..argc-1]. Positional arguments are an error. Help goes to stdout. */
rill_flags_result rill_flags_parse(rill_flags *f, int argc, char **argv, rill_status *s);
/* Writes the help text to stream (a FILE *). */
void rill_flags_print_help(const rill_flags *f, void *stream);
/* The usual main() prologue: parse, print the error and usage hint on failure. Returns -1 to go
 * on, else the exit code main should return (0 after --help, 2 after an error). */
int rill_flags_parse_or_exit_code(rill_flags *f, int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
