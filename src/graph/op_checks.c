/* op_checks.c - the checks shape functions share, with TensorFlow's error texts: an input's
 * dtype and rank, two inputs' dtypes, two dims that must agree, segment ids against data, and
 * the "with input shapes: ..." list those texts end with. */
#include "graph_internal.h"

const char *rill__input_shapes(const rill_node *n, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < n->ninputs && off < len; i++) {
        char sb[96];
        rill_shape sh = rill__in_shape(n, i);
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
                                rill_shape_str(&sh, sb, sizeof sb));
    }
    return buf;
}

bool rill__check_float(const rill_node *n, int i, const char *param, bool half, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, i);
    if ((half && t == RILL_HALF) || t == RILL_FLOAT || t == RILL_DOUBLE) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Value passed to parameter '%s' has DataType %s not in list of allowed "
                    "values: %s (node '%s', op '%s')",
                    param, rill_dtype_name(t), half ? "half, float, double" : "float, double",
                    n->name, n->op->name);
    return false;
}

bool rill__check_index(const rill_node *n, int i, const char *param, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, i);
    if (rill__is_index_dtype(t)) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Value passed to parameter '%s' has DataType %s not in list of allowed "
                    "values: int32, int64",
                    param, rill_dtype_name(t));
    return false;
}

bool rill__check_ids_prefix(const rill_node *n, rill_status *s)
{
    rill_shape d = rill__in_shape(n, 0), ids = rill__in_shape(n, 1);
    if (d.rank < 0 || ids.rank < 0) return true;
    bool ok = ids.rank <= d.rank;
    for (int i = 0; ok && i < ids.rank; i++)
        if (d.dims[i] >= 0 && ids.dims[i] >= 0 && d.dims[i] != ids.dims[i]) ok = false;
    if (!ok) {
        char a[96], b[96];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "data.shape = %s does not start with segment_ids.shape = %s",
                        rill_shape_str(&d, a, sizeof a), rill_shape_str(&ids, b, sizeof b));
    }
    return ok;
}

bool rill__check_same_dtype(const rill_node *n, int i, const char *iname, int j, const char *jname,
                            rill_status *s)
{
    rill_dtype ti = rill__in_dtype(n, i), tj = rill__in_dtype(n, j);
    if (ti == tj) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Input '%s' of '%s' Op has type %s that does not match type %s of argument "
                    "'%s'.",
                    iname, n->op->name, rill_dtype_name(ti), rill_dtype_name(tj), jname);
    return false;
}

bool rill__check_rank(const rill_node *n, int i, int want, bool at_least, rill_status *s)
{
    int r = rill__in_shape(n, i).rank;
    if (r < 0 || r == want || (at_least && r > want)) return true;
    char shapes[512];
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Shape must be %srank %d but is rank %d for '%s' (op: '%s') with input "
                    "shapes: %s.",
                    at_least ? "at least " : "", want, r, n->name, n->op->name,
                    rill__input_shapes(n, shapes, sizeof shapes));
    return false;
}

bool rill__merge_dim(const rill_node *n, int64_t a, int64_t b, int64_t *out, rill_status *s)
{
    if (a >= 0 && b >= 0 && a != b) {
        char shapes[512];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Dimensions must be equal, but are %lld and %lld for '%s' (op: '%s') "
                        "with input shapes: %s.",
                        (long long)a, (long long)b, n->name, n->op->name,
                        rill__input_shapes(n, shapes, sizeof shapes));
        return false;
    }
    *out = a >= 0 ? a : b;
    return true;
}
