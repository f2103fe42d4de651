/* rill-inspect-checkpoint.c - what TF's inspect_checkpoint tool shows, for V2 checkpoints
 * written by TensorFlow or rill.
 *
 *   rill-inspect-checkpoint logs/model.ckpt-100        one "name (DT_FLOAT) [2,3]" per tensor
 *   rill-inspect-checkpoint logs --tensor_name=w       the value of w (numpy's format)
 *   rill-inspect-checkpoint logs --all_tensors         every name and value
 *   rill-inspect-checkpoint logs --all_tensor_names    every name
 *
 * A directory means its latest checkpoint. Arrays above 1000 elements are summarised with "...",
 * as numpy prints them. Errors go to stderr with exit status 1. */
#include <rill/checkpoint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct options {
    const char *file_name, *tensor_name;
    bool all_tensors, all_tensor_names;
} options;

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [--file_name=]PREFIX_OR_DIR [--tensor_name=NAME] [--all_tensors] "
            "[--all_tensor_names]\n"
            "Lists the tensors of a TensorFlow V2 checkpoint, or prints their values.\n"
            "  --file_name=P         the checkpoint prefix (logs/model.ckpt-100) or a directory\n"
            "                        (its latest checkpoint); may be given without the flag\n"
            "  --tensor_name=NAME    print this tensor's value\n"
            "  --all_tensors         print every tensor's name and value\n"
            "  --all_tensor_names    print every tensor's name\n",
            prog);
}

/* TF's DataType names (the numbers are rill's dtypes, and TF's). */
static const char *dtype_name(int t, char *buf, size_t n)
{
    static const char *const names[] = {
        "DT_INVALID",    "DT_FLOAT",  "DT_DOUBLE",    "DT_INT32",   "DT_UINT8",   "DT_INT16",
        "DT_INT8",       "DT_STRING", "DT_COMPLEX64", "DT_INT64",   "DT_BOOL",    "DT_QINT8",
        "DT_QUINT8",     "DT_QINT32", "DT_BFLOAT16",  "DT_QINT16",  "DT_QUINT16", "DT_UINT16",
        "DT_COMPLEX128", "DT_HALF",   "DT_RESOURCE",  "DT_VARIANT", "DT_UINT32",  "DT_UINT64"};
    if (t >= 0 && t < (int)(sizeof names / sizeof names[0])) return names[t];
    snprintf(buf, n, "DT_%d", t);
    return buf;
}

static int parse_args(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout, argv[0]);
            exit(0);
        } else if (strncmp(a, "--file_name=", 12) == 0) {
            o->file_name = a + 12;
        } else if (strncmp(a, "--tensor_name=", 14) == 0) {
            o->tensor_name = a + 14;
        } else if (strcmp(a, "--all_tensors") == 0 || strcmp(a, "--all_tensors=true") == 0) {
            o->all_tensors = true;
        } else if (strcmp(a, "--all_tensor_names") == 0 ||
                   strcmp(a, "--all_tensor_names=true") == 0) {
            o->all_tensor_names = true;
        } else if (strncmp(a, "--", 2) == 0 || o->file_name) {
            fprintf(stderr, "%s: unknown or repeated argument '%s'\n", argv[0], a);
            return 1;
        } else {
            o->file_name = a;
        }
    }
    if (!o->file_name || !o->file_name[0]) {
        usage(stderr, argv[0]);
        return 1;
    }
    return 0;
}

/* How many elements numpy's str shows: all up to 1000, else 3 at each end of every axis. */
static int64_t shown_elements(const rill_tensor *t)
{
    int64_t n = rill_tensor_num_elements(t);
    if (n <= 1000) return n;
    int64_t shown = 1;
    for (int d = 0; d < rill_tensor_rank(t); d++)
        shown *= rill_tensor_dim(t, d) < 6 ? rill_tensor_dim(t, d) : 6;
    return shown;
}

/* numpy's str of the value, into a buffer sized for it. */
static void print_value(const rill_tensor *t)
{
    int64_t n = rill_tensor_num_elements(t);
    size_t cap = 256 + (size_t)shown_elements(t) * (64 + 4 * RILL_MAX_DIMS);
    if (rill_tensor_dtype(t) == RILL_STRING)
        for (int64_t i = 0; i < n; i++) {
            size_t len;
            rill_tensor_get_string(t, i, &len);
            cap += len + 8;
        }
    char *buf = malloc(cap);
    if (!buf) {
        fprintf(stderr, "out of memory printing a tensor of %lld elements\n", (long long)n);
        return;
    }
    printf("%s\n", rill_tensor_str(t, buf, cap));
    free(buf);
}

static int print_tensor(const char *prog, rill_checkpoint_reader *r, const char *name,
                        rill_status *s)
{
    rill_tensor *t = rill_checkpoint_reader_get_tensor(r, name, s);
    if (!t) {
        fflush(stdout);
        fprintf(stderr, "%s: %s\n", prog, rill_status_message(s));
        return 1;
    }
    printf("tensor_name:  %s\n", name);
    print_value(t);
    rill_tensor_free(t);
    return 0;
}

static void list_tensors(const rill_checkpoint_reader *r)
{
    for (int i = 0; i < rill_checkpoint_reader_num_tensors(r); i++) {
        char dt[32], shape[256];
        rill_shape sh = rill_checkpoint_reader_shape(r, i);
        printf("%s (%s) %s\n", rill_checkpoint_reader_name(r, i),
               dtype_name(rill_checkpoint_reader_dtype(r, i), dt, sizeof dt),
               rill_shape_str(&sh, shape, sizeof shape));
    }
}

int main(int argc, char **argv)
{
    options o = {0};
    if (parse_args(argc, argv, &o) != 0) return 1;
    rill_status *s = rill_status_new();
    rill_checkpoint_reader *r = rill_checkpoint_reader_new(o.file_name, s);
    int rc = 0;
    if (!r) {
        fprintf(stderr, "%s: %s\n", argv[0], rill_status_message(s));
        rc = 1;
    } else if (o.all_tensors || o.all_tensor_names) {
        /* A tensor that cannot be read is reported and the others still shown. */
        for (int i = 0; i < rill_checkpoint_reader_num_tensors(r); i++) {
            const char *name = rill_checkpoint_reader_name(r, i);
            if (o.all_tensors)
                rc |= print_tensor(argv[0], r, name, s);
            else
                printf("tensor_name:  %s\n", name);
        }
    } else if (o.tensor_name) {
        rc = print_tensor(argv[0], r, o.tensor_name, s);
    } else {
        list_tensors(r);
    }
    rill_checkpoint_reader_free(r);
    rill_status_free(s);
    return rc;
}
