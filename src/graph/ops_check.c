/* ops_check.c - the checks and logging ops of TF's Python check_ops and logging_ops: Assert,
 * Print, StringFormat and PrintV2 (tf.print), CheckNumerics, EnsureShape, plus the graph
 * utilities that need an op of their own: IdentityN, IsVariableInitialized, GuaranteeConst and
 * Timestamp.
 *
 * Their kernels (src/kernels/cpu/cpu_check.c) run on the host. Assert and the print ops are
 * stateful (never pruned as duplicates, never folded): what they do is their effect. The
 * identities (Print, CheckNumerics, EnsureShape, IdentityN) hand the gradient straight through,
 * CheckNumerics checking it on the way as TF's _CheckNumericsGrad does. */
#include "graph_internal.h"

#include <string.h>

static const char *attr_str(const rill_node *n, const char *name, const char *def)
{
    const rill__attr *a = rill__node_attr(n, name);
    return a && a->kind == RILL__ATTR_STRING ? a->v.s : def;
}

static void same_as_input0(rill_node *n)
{
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static void pass_through_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    (void)g;
    for (int i = 0; i < n->noutputs && i < n->ninputs; i++) dx[i] = dy[i];
}

/* Assert(condition, data...): no outputs; the kernel fails the step when condition is false. */
static void assert_shape(rill_node *n, rill_status *s)
{
    if (rill__in_dtype(n, 0) != RILL_BOOL) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input 'condition' of 'Assert' Op has type %s that does not match "
                        "expected type of bool.",
                        rill_dtype_name(rill__in_dtype(n, 0)));
    }
}

/* Print(input, data...): input, logged with its data list. */
static void print_shape(rill_node *n, rill_status *s)
{
    (void)s;
    same_as_input0(n);
}

/* StringFormat(inputs...): one string scalar, the template with each placeholder replaced by
 * the next input's summary. */
static int count_placeholders(const char *tmpl, const char *ph)
{
    size_t pl = strlen(ph);
    int k = 0;
    if (pl == 0) return 0;
    for (const char *p = strstr(tmpl, ph); p; p = strstr(p + pl, ph)) k++;
    return k;
}

static void string_format_shape(rill_node *n, rill_status *s)
{
    const char *ph = attr_str(n, "placeholder", "{}");
    if (!*ph) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "StringFormat '%s': placeholder is empty",
                        n->name);
        return;
    }
    int k = count_placeholders(attr_str(n, "template", "%s"), ph);
    if (k != n->ninputs) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "num placeholders in template and num inputs must match: %d vs. %d", k,
                        n->ninputs);
        return;
    }
    n->out_dtypes[0] = RILL_STRING;
    n->out_shapes[0] = rill_shape_scalar();
}

/* PrintV2(input): writes the string scalar input, then end, to output_stream. */
static void print_v2_shape(rill_node *n, rill_status *s)
{
    rill_shape sh = rill__in_shape(n, 0);
    if (rill__in_dtype(n, 0) != RILL_STRING) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input 'input' of 'PrintV2' Op has type %s that does not match expected "
                        "type of string.",
                        rill_dtype_name(rill__in_dtype(n, 0)));
        return;
    }
    if (sh.rank > 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank 0 but is rank %d for '%s' (op: 'PrintV2')", sh.rank,
                        n->name);
        return;
    }
    const char *os = attr_str(n, "output_stream", "stderr");
    static const char *const known[] = {"stdout", "stderr", "log(info)", "log(warning)",
                                        "log(error)"};
    bool ok = strncmp(os, "file://", 7) == 0 && os[7];
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) ok = ok || strcmp(os, known[i]) == 0;
    if (!ok)
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Unknown output stream: %s, Valid streams are: stdout, stderr, "
                        "log(info), log(warning), log(error), file://<filename>.",
                        os);
}

/* CheckNumerics(tensor): tensor, after checking that it holds no NaN or Inf. */
static void check_numerics_shape(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, 0);
    if (t != RILL_FLOAT && t != RILL_DOUBLE && t != RILL_HALF && t != RILL_BFLOAT16) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'T' of %s is not in the list of allowed values: bfloat16, "
                        "half, float, double\n\t; NodeDef: {{node %s}}",
                        rill_dtype_name(t), n->name);
        return;
    }
    same_as_input0(n);
}

static void check_numerics_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    char *msg = rill__asprintf("Not a number (NaN) or infinity (Inf) values detected in "
                               "gradient. %s",
                               attr_str(n, "message", ""));
    rill__attr a[] = {RILL__A_STRING("message", msg)};
    rill_node *c = rill__node_create(g, "CheckNumerics", NULL, dy, 1, a, 1);
    rill__free(msg);
    dx[0] = (rill_output){c, 0};
}

/* EnsureShape(input): input, whose shape must be compatible with the attr shape (checked here
 * where known, in the kernel at run time); the output has the two merged. */
static void ensure_shape_shape(rill_node *n, rill_status *s)
{
    const rill__attr *a = rill__node_attr(n, "shape");
    rill_shape want = a && a->kind == RILL__ATTR_SHAPE ? a->v.shape : rill_shape_unknown();
    rill_shape in = rill__in_shape(n, 0);
    char b1[128], b2[128], b3[160];
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    if (in.rank < 0 || want.rank < 0) {
        n->out_shapes[0] = in.rank < 0 ? want : in;
        return;
    }
    if (in.rank != want.rank) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shapes must be equal rank, but are %d and %d for '%s' (op: "
                        "'EnsureShape') with input shapes: %s.",
                        want.rank, in.rank, n->name, rill__input_shapes(n, b3, sizeof b3));
        return;
    }
    rill_shape out = in;
    for (int d = 0; d < in.rank; d++) {
        if (want.dims[d] >= 0 && in.dims[d] >= 0 && want.dims[d] != in.dims[d]) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Dimension %d in both shapes must be equal, but are %lld and %lld. "
                            "Shapes are %s and %s. for '%s' (op: 'EnsureShape') with input "
                            "shapes: %s.",
                            d, (long long)want.dims[d], (long long)in.dims[d],
                            rill_shape_str(&want, b1, sizeof b1),
                            rill_shape_str(&in, b2, sizeof b2), n->name,
                            rill__input_shapes(n, b3, sizeof b3));
            return;
        }
        if (out.dims[d] < 0) out.dims[d] = want.dims[d];
    }
    n->out_shapes[0] = out;
}

/* IdentityN(inputs...): each input as the output of the same index (num_outputs of them). */
static void identity_n_shape(rill_node *n, rill_status *s)
{
    if (n->noutputs != n->ninputs) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "IdentityN '%s': num_outputs (%d) must be the number of inputs (%d)",
                        n->name, n->noutputs, n->ninputs);
        return;
    }
    for (int i = 0; i < n->ninputs; i++) {
        n->out_dtypes[i] = rill__in_dtype(n, i);
        n->out_shapes[i] = rill__in_shape(n, i);
    }
}

/* IsVariableInitialized(ref): a bool scalar, whether the variable holds a value. */
static void is_initialized_shape(rill_node *n, rill_status *s)
{
    (void)s;
    n->out_dtypes[0] = RILL_BOOL;
    n->out_shapes[0] = rill_shape_scalar();
}

/* Timestamp(): the seconds since the epoch, a double scalar. */
static void timestamp_shape(rill_node *n, rill_status *s)
{
    (void)s;
    n->out_dtypes[0] = RILL_DOUBLE;
    n->out_shapes[0] = rill_shape_scalar();
}

const rill__op_def rill__ops_check[] = {
    {.name = "Assert",
     .default_name = "Assert",
     .min_inputs = 1,
     .max_inputs = -1,
     .noutputs = 0,
     .stateful = true,
     .shape = assert_shape},
    {.name = "Print",
     .default_name = "Print",
     .min_inputs = 1,
     .max_inputs = -1,
     .noutputs = 1,
     .stateful = true,
     .shape = print_shape,
     .grad = pass_through_grad},
    {.name = "StringFormat",
     .default_name = "StringFormat",
     .min_inputs = 0,
     .max_inputs = -1,
     .noutputs = 1,
     .shape = string_format_shape},
    {.name = "PrintV2",
     .default_name = "PrintV2",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 0,
     .stateful = true,
     .shape = print_v2_shape},
    {.name = "CheckNumerics",
     .default_name = "CheckNumerics",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .stateful = true,
     .shape = check_numerics_shape,
     .grad = check_numerics_grad},
    {.name = "EnsureShape",
     .default_name = "EnsureShape",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = ensure_shape_shape,
     .grad = pass_through_grad},
    {.name = "IdentityN",
     .default_name = "IdentityN",
     .min_inputs = 1,
     .max_inputs = -1,
     .noutputs = -1,
     .shape = identity_n_shape,
     .grad = pass_through_grad},
    {.name = "IsVariableInitialized",
     .default_name = "IsVariableInitialized",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 1,
     .shape = is_initialized_shape},
    {.name = "GuaranteeConst",
     .default_name = "GuaranteeConst",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = print_shape},
    {.name = "Timestamp",
     .default_name = "Timestamp",
     .min_inputs = 0,
     .max_inputs = 0,
     .noutputs = 1,
     .stateful = true,
     .shape = timestamp_shape},
    {0},
};
