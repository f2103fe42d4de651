/* ops_summary.c - the summary ops of TF1's tf.summary: ScalarSummary, HistogramSummary and
 * MergeSummary, their shape functions and builders (kernels in kernels/cpu/cpu_summary.c).
 *
 * In TensorFlow the tag is a string input (a Const named "<tag>/tags"); here it is the node's
 * string attribute "tag", which is what that Const always holds. The builders follow
 * python/summary/summary.py: the name is cleaned, a name scope is opened with it, and the node
 * takes the scope's own name, so node name and tag agree ("train/cost", "cost_1"). Every
 * summary op joins the "summaries" collection that merge_all reads. Summaries are not
 * differentiable and not stateful. */
#include "graph_internal.h"

#include <rill/summary.h>

#include <string.h>

/* The dtypes a summary can hold: TF's realnumbertypes, as far as rill has them. */
static bool summary_dtype(rill_dtype t)
{
    return t == RILL_FLOAT || t == RILL_DOUBLE || t == RILL_INT32 || t == RILL_INT64 ||
           t == RILL_HALF;
}

static bool check_summary_dtype(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, 0);
    if (summary_dtype(t)) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Value for attr 'T' of %s is not in the list of allowed values: float, "
                    "double, int32, int64, half; NodeDef: '%s' (op: '%s')",
                    rill_dtype_name(t), n->name, n->op->name);
    return false;
}

static void string_scalar_output(rill_node *n)
{
    n->out_dtypes[0] = RILL_STRING;
    n->out_shapes[0] = rill_shape_scalar();
}

static void scalar_summary_shape(rill_node *n, rill_status *s)
{
    if (!check_summary_dtype(n, s)) return;
    /* TF checks this in the kernel; a known shape lets it fail at build time already. */
    rill_shape sh = rill__in_shape(n, 0);
    if (sh.rank > 0) {
        char buf[96];
        /* The tag, or the node's name where it was built without one (as the kernel does). */
        const rill__attr *tag = rill__node_attr(n, "tag");
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "tags and values not the same shape: [] != %s (tag '%s')",
                        rill_shape_str(&sh, buf, sizeof buf), tag ? tag->v.s : n->name);
        return;
    }
    string_scalar_output(n);
}

static void histogram_summary_shape(rill_node *n, rill_status *s)
{
    if (check_summary_dtype(n, s)) string_scalar_output(n);
}

static void merge_summary_shape(rill_node *n, rill_status *s)
{
    for (int i = 0; i < n->ninputs; i++) {
        rill_dtype t = rill__in_dtype(n, i);
        if (t != RILL_STRING) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Input 'inputs' of 'MergeSummary' Op has type %s that does not match "
                            "expected type of string (input %d of '%s').",
                            rill_dtype_name(t), i, n->name);
            return;
        }
    }
    string_scalar_output(n);
}

const rill__op_def rill__ops_summary[] = {
    {.name = "ScalarSummary",
     .default_name = "ScalarSummary",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = scalar_summary_shape},
    {.name = "HistogramSummary",
     .default_name = "HistogramSummary",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = histogram_summary_shape},
    {.name = "MergeSummary",
     .default_name = "MergeSummary",
     .min_inputs = 1,
     .max_inputs = -1,
     .noutputs = 1,
     .shape = merge_summary_shape},
    {0},
};

/* --- builders --- */

/* TF's clean_tag: characters outside [A-Za-z0-9_./-] become '_', leading slashes go. Returns a
 * new string (caller frees). */
static char *clean_tag(const char *name)
{
    while (*name == '/') name++;
    char *t = rill__strdup(name);
    for (char *p = t; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == '-' || c == '/';
        if (!ok) *p = '_';
    }
    return t;
}

/* One summary node: name scope from the cleaned name, node named exactly after the scope,
 * tag attribute = that name, then the "summaries" collection. */
static rill_output summary_node(rill_graph *g, const char *op, const char *name, rill_output in)
{
    if (!rill_graph_ok(g)) return (rill_output){NULL, 0};
    if (!name || !*name) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT, "%s: a summary needs a name", op);
        return (rill_output){NULL, 0};
    }
    char *tag = clean_tag(name);
    if (strcmp(tag, name) != 0)
        rill__log(RILL_LOG_INFO, "Summary name %s is illegal; using %s instead.", name, tag);
    rill_node *n = NULL;
    if (!*tag) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT, "%s: summary name '%s' is empty once cleaned",
                         op, name);
        goto out;
    }
    rill_graph_push_name_scope(g, tag);
    char *scope = rill__strdup(rill__graph_scope_prefix(g)); /* "train/cost/" */
    rill_graph_pop_name_scope(g);
    size_t len = strlen(scope);
    if (len < 2) { /* "/": the root scope has no name to take */
        rill__graph_fail(g, RILL_INVALID_ARGUMENT, "'%s' is not a valid summary name", name);
        rill__free(scope);
        goto out;
    }
    char *node_tag = rill__strndup(scope, len - 1);
    rill__attr attr = RILL__A_STRING("tag", node_tag);
    n = rill__node_create(g, op, scope, &in, 1, &attr, 1);
    rill__free(node_tag);
    rill__free(scope);
    if (n) rill_graph_add_to_collection(g, RILL_SUMMARIES_COLLECTION, n);
out:
    rill__free(tag);
    return (rill_output){n, 0};
}

rill_output rill_summary_scalar(rill_graph *g, const char *name, rill_output value)
{
    return summary_node(g, "ScalarSummary", name, value);
}

rill_output rill_summary_histogram(rill_graph *g, const char *name, rill_output values)
{
    return summary_node(g, "HistogramSummary", name, values);
}

rill_output rill_summary_merge(rill_graph *g, const rill_output *inputs, int n, const char *name)
{
    if (!rill_graph_ok(g)) return (rill_output){NULL, 0};
    if (n < 1 || !inputs) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT,
                         "List argument 'inputs' to 'MergeSummary' Op with length %d shorter "
                         "than minimum length 1.",
                         n < 0 ? 0 : n);
        return (rill_output){NULL, 0};
    }
    /* tf.summary.merge: name_scope(name, "Merge") then merge_summary(name=name). */
    rill_graph_push_name_scope(g, name ? name : "Merge");
    rill_node *node = rill__node_create(g, "MergeSummary", name, inputs, n, NULL, 0);
    rill_graph_pop_name_scope(g);
    return (rill_output){node, 0};
}

rill_output rill_summary_merge_all(rill_graph *g, const char *name)
{
    if (!rill_graph_ok(g)) return (rill_output){NULL, 0};
    int n = rill_graph_get_collection(g, RILL_SUMMARIES_COLLECTION, NULL, 0);
    if (n == 0) return (rill_output){NULL, 0};
    rill_node **nodes = rill__malloc((size_t)n * sizeof *nodes);
    rill_output *ins = rill__malloc((size_t)n * sizeof *ins);
    RILL_CHECK_ALLOC(nodes);
    RILL_CHECK_ALLOC(ins);
    rill_graph_get_collection(g, RILL_SUMMARIES_COLLECTION, nodes, n);
    for (int i = 0; i < n; i++) ins[i] = (rill_output){nodes[i], 0};
    rill_output out = rill_summary_merge(g, ins, n, name);
    rill__free(ins);
    rill__free(nodes);
    return out;
}
