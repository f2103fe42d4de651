/* ops_string.c - TF's string ops: StringJoin, AsString, StringToNumber, Substr, StringStrip,
 * RegexReplace, EncodeBase64, DecodeBase64, DecodeRaw, DecodeCSV and ReduceJoin, with TF's
 * attrs, defaults and texts (MatchingFiles is tf.data's: ops_dataset2.c). Kernels: src/kernels/cpu/cpu_string.c (host only: strings live in host memory).
 * None has a gradient (TF's are NotDifferentiable or take strings). */
#include "graph_internal.h"

#include <string.h>

static bool want_dtype(rill_node *n, int i, rill_dtype t, const char *arg, rill_status *s)
{
    if (rill__in_dtype(n, i) == t) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Input '%s' of '%s' Op has type %s that does not match expected type of %s.",
                    arg, n->op->name, rill_dtype_name(rill__in_dtype(n, i)), rill_dtype_name(t));
    return false;
}

static void same_as_input(rill_node *n, rill_dtype t)
{
    n->out_dtypes[0] = t;
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static void string_unary_shape(rill_node *n, rill_status *s)
{
    if (!want_dtype(n, 0, RILL_STRING, "input", s)) return;
    same_as_input(n, RILL_STRING);
}

static void string_join_shape(rill_node *n, rill_status *s)
{
    rill_shape out = {.rank = 0};
    bool known = true;
    for (int i = 0; i < n->ninputs; i++) {
        if (!want_dtype(n, i, RILL_STRING, "inputs", s)) return;
        rill_shape x = rill__in_shape(n, i);
        if (x.rank < 0) {
            known = false;
            continue;
        }
        if (x.rank == 0) continue;
        if (out.rank == 0) {
            out = x;
            continue;
        }
        bool ok = out.rank == x.rank;
        for (int d = 0; ok && d < x.rank; d++)
            if (!rill__merge_dim(n, out.dims[d], x.dims[d], &out.dims[d], s)) return;
        if (!ok) {
            char a[96], b[96];
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Inputs must be scalars or have the same shape; %s vs %s for '%s'",
                            rill_shape_str(&out, a, sizeof a), rill_shape_str(&x, b, sizeof b),
                            n->name);
            return;
        }
    }
    n->out_dtypes[0] = RILL_STRING;
    n->out_shapes[0] = known || out.rank > 0 ? out : (rill_shape){.rank = -1};
}

static void as_string_shape(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, 0);
    if (t == RILL_STRING) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'T' of string is not in the list of allowed values: "
                        "float, double, int32, uint8, int16, int8, int64, bfloat16, half, bool");
        return;
    }
    same_as_input(n, RILL_STRING);
}

static void string_to_number_shape(rill_node *n, rill_status *s)
{
    if (!want_dtype(n, 0, RILL_STRING, "string_tensor", s)) return;
    rill_dtype t = rill__attr_type(n, "out_type", RILL_FLOAT);
    if (t != RILL_FLOAT && t != RILL_DOUBLE && t != RILL_INT32 && t != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'out_type' of %s is not in the list of allowed values: "
                        "float, double, int32, int64",
                        rill_dtype_name(t));
        return;
    }
    same_as_input(n, t);
}

static void substr_shape(rill_node *n, rill_status *s)
{
    if (!want_dtype(n, 0, RILL_STRING, "input", s)) return;
    rill_dtype t = rill__in_dtype(n, 1);
    if (t != RILL_INT32 && t != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'T' of %s is not in the list of allowed values: int32, "
                        "int64",
                        rill_dtype_name(t));
        return;
    }
    if (!want_dtype(n, 2, t, "len", s)) return;
    rill_shape p = rill__in_shape(n, 1), l = rill__in_shape(n, 2);
    if (p.rank >= 0 && l.rank >= 0 && !rill_shape_equal(&p, &l)) {
        char a[96], b[96];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shapes must be equal rank, but are %d and %d for '%s' (op: 'Substr') "
                        "with input shapes: %s, %s.",
                        p.rank, l.rank, n->name, rill_shape_str(&p, a, sizeof a),
                        rill_shape_str(&l, b, sizeof b));
        return;
    }
    const char *unit = NULL;
    const rill__attr *u = rill__node_attr(n, "unit");
    if (u && u->kind == RILL__ATTR_STRING) unit = u->v.s;
    if (unit && strcmp(unit, "BYTE") != 0) {
        rill_status_set(s, RILL_UNIMPLEMENTED,
                        "Substr: unit '%s' is not supported by rill (only \"BYTE\")", unit);
        return;
    }
    same_as_input(n, RILL_STRING);
}

static void regex_replace_shape(rill_node *n, rill_status *s)
{
    if (!want_dtype(n, 0, RILL_STRING, "input", s) ||
        !want_dtype(n, 1, RILL_STRING, "pattern", s) ||
        !want_dtype(n, 2, RILL_STRING, "rewrite", s) || !rill__check_rank(n, 1, 0, false, s) ||
        !rill__check_rank(n, 2, 0, false, s))
        return;
    same_as_input(n, RILL_STRING);
}

static void decode_raw_shape(rill_node *n, rill_status *s)
{
    if (!want_dtype(n, 0, RILL_STRING, "bytes", s)) return;
    rill_dtype t = rill__attr_type(n, "out_type", RILL_DT_INVALID);
    if (t == RILL_STRING || rill_dtype_size(t) == 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'out_type' of %s is not in the list of allowed values: "
                        "half, float, double, int32, uint16, uint8, int16, int8, int64, bool",
                        rill_dtype_name(t));
        return;
    }
    rill_shape x = rill__in_shape(n, 0);
    n->out_dtypes[0] = t;
    if (x.rank < 0 || x.rank >= RILL_MAX_DIMS) {
        n->out_shapes[0] = (rill_shape){.rank = -1};
        return;
    }
    x.dims[x.rank++] = -1;
    n->out_shapes[0] = x;
}

static void reduce_join_shape(rill_node *n, rill_status *s)
{
    if (!want_dtype(n, 0, RILL_STRING, "inputs", s) ||
        !want_dtype(n, 1, RILL_INT32, "reduction_indices", s))
        return;
    n->out_dtypes[0] = RILL_STRING;
    n->out_shapes[0] = (rill_shape){.rank = -1};
    rill_shape x = rill__in_shape(n, 0);
    const rill_node *ix = n->inputs[1].node;
    const rill__attr *v =
        ix && strcmp(ix->op->name, "Const") == 0 ? rill__node_attr(ix, "value") : NULL;
    if (x.rank < 0 || !v || v->kind != RILL__ATTR_TENSOR) return;
    const rill_tensor *t = v->v.tensor;
    bool red[RILL_MAX_DIMS] = {0};
    for (int64_t i = 0; i < t->numel; i++) {
        int64_t a = (int64_t)rill_tensor_get_double(t, i);
        if (a < -x.rank || a >= x.rank) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Invalid reduction dimension %lld for input with %d dimensions",
                            (long long)a, x.rank);
            return;
        }
        red[a < 0 ? a + x.rank : a] = true;
    }
    bool keep = rill__attr_bool(n, "keep_dims", false);
    rill_shape out = {.rank = 0};
    for (int d = 0; d < x.rank; d++) {
        if (!red[d])
            out.dims[out.rank++] = x.dims[d];
        else if (keep)
            out.dims[out.rank++] = 1;
    }
    n->out_shapes[0] = out;
}

/* DecodeCSV(records, record_defaults...): one output per default (num_outputs of them), each
 * shaped like records, of its default's dtype. */
static void decode_csv_shape(rill_node *n, rill_status *s)
{
    if (!want_dtype(n, 0, RILL_STRING, "records", s)) return;
    if (n->ninputs - 1 != n->noutputs || n->noutputs < 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "DecodeCSV '%s': %d record_defaults for %d outputs (num_outputs)", n->name,
                        n->ninputs - 1, n->noutputs);
        return;
    }
    const rill__attr *d = rill__node_attr(n, "field_delim");
    if (d && d->kind == RILL__ATTR_STRING && strlen(d->v.s) != 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "field_delim should be only 1 char");
        return;
    }
    for (int i = 1; i < n->ninputs; i++) {
        rill_dtype t = rill__in_dtype(n, i);
        if (t != RILL_FLOAT && t != RILL_DOUBLE && t != RILL_INT32 && t != RILL_INT64 &&
            t != RILL_STRING) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Value for attr 'OUT_TYPE' of %s is not in the list of allowed "
                            "values: float, double, int32, int64, string",
                            rill_dtype_name(t));
            return;
        }
        rill_shape x = rill__in_shape(n, i);
        if (x.rank > 1) {
            char b[96];
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Shape must be at most rank 1 but is rank %d for '%s' (op: "
                            "'DecodeCSV') with input shape %s (record_defaults %d).",
                            x.rank, n->name, rill_shape_str(&x, b, sizeof b), i - 1);
            return;
        }
        n->out_dtypes[i - 1] = t;
        n->out_shapes[i - 1] = rill__in_shape(n, 0);
    }
}

#define STRING_OP(NAME, NIN, SHAPE)                                                                \
    {                                                                                              \
        .name = NAME, .default_name = NAME, .min_inputs = NIN, .max_inputs = NIN, .noutputs = 1,   \
        .shape = SHAPE                                                                             \
    }

const rill__op_def rill__ops_string[] = {
    {.name = "StringJoin",
     .default_name = "StringJoin",
     .min_inputs = 1,
     .max_inputs = -1,
     .noutputs = 1,
     .shape = string_join_shape},
    STRING_OP("AsString", 1, as_string_shape),
    STRING_OP("StringToNumber", 1, string_to_number_shape),
    STRING_OP("Substr", 3, substr_shape),
    STRING_OP("StringStrip", 1, string_unary_shape),
    STRING_OP("RegexReplace", 3, regex_replace_shape),
    STRING_OP("EncodeBase64", 1, string_unary_shape),
    STRING_OP("DecodeBase64", 1, string_unary_shape),
    STRING_OP("DecodeRaw", 1, decode_raw_shape),
    STRING_OP("ReduceJoin", 2, reduce_join_shape),
    {.name = "DecodeCSV",
     .default_name = "DecodeCSV",
     .min_inputs = 2,
     .max_inputs = -1,
     .noutputs = -1,
     .shape = decode_csv_shape},
    {0},
};
