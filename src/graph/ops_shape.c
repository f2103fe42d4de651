/* ops_shape.c - op definitions, shape rules and gradients of the shape-manipulation ops:
 * ConcatV2, Pack, Unpack, Split, SplitV, Transpose, Tile, Pad, MirrorPad, Squeeze, ReverseV2,
 * BroadcastTo, StopGradient, PreventGradient, Range, OneHot, Size, Rank, and the gradient
 * helpers ConcatGrad, TileGrad and MirrorPadGrad.
 *
 * As everywhere in rill, what TensorFlow takes as a constant tensor input (axis, perm,
 * multiples, paddings, size_splits, the target shape) is an attribute here: the front ends
 * always know it when they build the op, and then the shape function knows the result's shape.
 * The rules live in functions the kernels call again on the real shapes (ops_shape.h), so a
 * shape learnt only at run time fails with the same text.
 *
 * Gradients: ConcatV2 -> ConcatGrad (dy cut into the inputs' shapes), Pack <-> Unpack, Split and
 * SplitV -> ConcatV2, Transpose -> the inverse perm, Tile -> TileGrad (the sum over the tiles),
 * Pad -> StridedSlice, MirrorPad -> MirrorPadGrad (mirrored parts folded back), Squeeze ->
 * Reshape, ReverseV2 -> ReverseV2, BroadcastTo -> SumToShape; the helpers have gradients too
 * (each is linear in dy), so second derivatives work. StopGradient has none; PreventGradient
 * fails the gradient with TF's text. */
#include "ops_shape.h"

#include <math.h>
#include <string.h>

const int64_t *rill__ints_attr(const rill_node *n, const char *name, int *cnt)
{
    const rill__attr *a = rill__node_attr(n, name);
    if (!a || a->kind != RILL__ATTR_INTS) {
        *cnt = 0;
        return NULL;
    }
    *cnt = a->v.ints.n;
    return a->v.ints.v;
}

static const char *shapes_str(const rill_node *n, char *buf, size_t len)
{
    return rill__input_shapes(n, buf, len);
}

/* --- the rules of the one-input ops --- */

static bool transpose_out(const rill_node *n, rill_shape in, rill_shape *out, rill_status *s)
{
    int k;
    const int64_t *perm = rill__ints_attr(n, "perm", &k);
    if (in.rank < 0) {
        *out = rill_shape_unknown();
        if (perm) {
            out->rank = k;
            for (int i = 0; i < k; i++) out->dims[i] = -1;
        }
        return true;
    }
    if (!perm) {
        out->rank = in.rank;
        for (int i = 0; i < in.rank; i++) out->dims[i] = in.dims[in.rank - 1 - i];
        return true;
    }
    char sh[256];
    if (k != in.rank) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Dimension must be %d but is %d for '%s' (op: 'Transpose') with input "
                        "shapes: %s, [%d].",
                        in.rank, k, n->name, shapes_str(n, sh, sizeof sh), k);
        return false;
    }
    bool seen[RILL_MAX_DIMS] = {false};
    for (int i = 0; i < k; i++) {
        if (perm[i] < 0 || perm[i] >= k) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "perm[%d] = %lld is out of range [0 .. %d)",
                            i, (long long)perm[i], k);
            return false;
        }
        seen[perm[i]] = true;
    }
    for (int i = 0; i < k; i++)
        if (!seen[i]) {
            char list[128];
            size_t off = 0;
            for (int j = 0; j < k; j++)
                off += (size_t)snprintf(list + off, sizeof list - off, "%s%lld", j ? "," : "",
                                        (long long)perm[j]);
            rill_status_set(s, RILL_INVALID_ARGUMENT, "%d is missing from {%s}.", i, list);
            return false;
        }
    out->rank = k;
    for (int i = 0; i < k; i++) out->dims[i] = in.dims[perm[i]];
    return true;
}

static bool tile_out(const rill_node *n, rill_shape in, rill_shape *out, rill_status *s)
{
    int k;
    const int64_t *m = rill__ints_attr(n, "multiples", &k);
    if (!m) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s '%s' needs the attr multiples (ints)",
                        n->op->name, n->name);
        return false;
    }
    for (int i = 0; i < k; i++)
        if (m[i] < 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "Expected multiples[%d] >= 0, but got %lld",
                            i, (long long)m[i]);
            return false;
        }
    if (in.rank < 0) {
        out->rank = k;
        for (int i = 0; i < k; i++) out->dims[i] = -1;
        return true;
    }
    if (k != in.rank) {
        char sh[256];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank %d but is rank %d for '%s' (op: '%s') with input "
                        "shapes: %s, [%d].",
                        in.rank, k, n->name, n->op->name, shapes_str(n, sh, sizeof sh), k);
        return false;
    }
    out->rank = k;
    for (int i = 0; i < k; i++) out->dims[i] = in.dims[i] < 0 ? -1 : in.dims[i] * m[i];
    return true;
}

static bool pad_out(const rill_node *n, rill_shape in, rill_shape *out, rill_status *s)
{
    int k;
    const int64_t *p = rill__ints_attr(n, "paddings", &k);
    bool mirror = strstr(n->op->name, "MirrorPad") != NULL;
    if (!p || k % 2) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s '%s' needs the attr paddings: 2 ints (before, after) per dim",
                        n->op->name, n->name);
        return false;
    }
    int r = k / 2;
    for (int i = 0; i < k; i++)
        if (p[i] < 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "Paddings must be non-negative: %lld %lld",
                            (long long)p[i & ~1], (long long)p[i | 1]);
            return false;
        }
    bool symmetric = false;
    if (mirror) {
        const rill__attr *mode = rill__node_attr(n, "mode");
        const char *ms = mode && mode->kind == RILL__ATTR_STRING ? mode->v.s : "";
        if (strcmp(ms, "SYMMETRIC") == 0)
            symmetric = true;
        else if (strcmp(ms, "REFLECT") != 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Value for attr 'mode' of \"%s\" is not in the list of allowed "
                            "values: \"REFLECT\", \"SYMMETRIC\"",
                            ms);
            return false;
        }
    }
    if (in.rank < 0) {
        out->rank = r;
        for (int i = 0; i < r; i++) out->dims[i] = -1;
        return true;
    }
    if (r != in.rank) {
        char sh[96];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "The first dimension of paddings must be the rank of inputs[%d,2] %s", r,
                        rill_shape_str(&in, sh, sizeof sh));
        return false;
    }
    out->rank = r;
    for (int i = 0; i < r; i++) {
        int64_t d = in.dims[i];
        if (mirror && d >= 0) {
            int64_t lim = symmetric ? d : d - 1;
            if (p[2 * i] > lim || p[2 * i + 1] > lim) {
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                symmetric ? "paddings must be no greater than the dimension "
                                            "size: %lld, %lld greater than %lld"
                                          : "paddings must be less than the dimension size: "
                                            "%lld, %lld not less than %lld",
                                (long long)p[2 * i], (long long)p[2 * i + 1], (long long)d);
                return false;
            }
        }
        out->dims[i] = d < 0 ? -1 : d + p[2 * i] + p[2 * i + 1];
    }
    return true;
}

static bool reverse_out(const rill_node *n, rill_shape in, rill_shape *out, rill_status *s)
{
    int k;
    const int64_t *ax = rill__ints_attr(n, "axis", &k);
    *out = in;
    if (in.rank < 0) return true;
    bool seen[RILL_MAX_DIMS] = {false};
    for (int i = 0; i < k; i++) {
        int64_t a = ax[i];
        if (a < -in.rank || a >= in.rank) {
            char sh[256];
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "'axis'[%d] = %lld is out of valid range [0, %d for '%s' (op: "
                            "'ReverseV2') with input shapes: %s, [%d].",
                            i, (long long)a, in.rank - 1, n->name, shapes_str(n, sh, sizeof sh), k);
            return false;
        }
        if (a < 0) a += in.rank;
        if (seen[a]) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "axis %lld specified more than once.",
                            (long long)a);
            return false;
        }
        seen[a] = true;
    }
    return true;
}

static bool broadcast_to_out(const rill_node *n, rill_shape in, rill_shape *out, rill_status *s)
{
    const rill__attr *a = rill__node_attr(n, "shape");
    if (!a || a->kind != RILL__ATTR_SHAPE || a->v.shape.rank < 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "BroadcastTo '%s' needs the attr shape", n->name);
        return false;
    }
    rill_shape t = a->v.shape;
    *out = t;
    if (in.rank < 0) return true;
    char x[96], y[96];
    if (in.rank > t.rank) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Rank of input (%d) must be no greater than rank of output shape (%d). "
                        "for '%s' (op: 'BroadcastTo') with input shapes: %s, [%d].",
                        in.rank, t.rank, n->name, rill_shape_str(&in, x, sizeof x), t.rank);
        return false;
    }
    for (int i = 0; i < in.rank; i++) {
        int64_t di = in.dims[in.rank - 1 - i], dt = t.dims[t.rank - 1 - i];
        if (di >= 0 && di != 1 && di != dt) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Dimensions must be equal, but are %lld and %lld for '%s' (op: "
                            "'BroadcastTo') with input shapes: %s, [%d]. (target shape %s)",
                            (long long)di, (long long)dt, n->name, rill_shape_str(&in, x, sizeof x),
                            t.rank, rill_shape_str(&t, y, sizeof y));
            return false;
        }
    }
    return true;
}

static bool squeeze_out(const rill_node *n, rill_shape in, rill_shape *out, rill_status *s)
{
    int k;
    const int64_t *sd = rill__ints_attr(n, "squeeze_dims", &k);
    if (in.rank < 0) {
        *out = rill_shape_unknown();
        return true;
    }
    bool drop[RILL_MAX_DIMS] = {false};
    char sh[256];
    for (int i = 0; i < k; i++) {
        int64_t a = sd[i];
        if (a < -in.rank || a >= in.rank) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "squeeze_dims[%d] not in [%d,%d). for '%s' (op: 'Squeeze') with input "
                            "shapes: %s.",
                            i, -in.rank, in.rank, n->name, shapes_str(n, sh, sizeof sh));
            return false;
        }
        if (a < 0) a += in.rank;
        if (in.dims[a] >= 0 && in.dims[a] != 1) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Can not squeeze dim[%lld], expected a dimension of 1, got %lld for "
                            "'%s' (op: 'Squeeze') with input shapes: %s.",
                            (long long)a, (long long)in.dims[a], n->name,
                            shapes_str(n, sh, sizeof sh));
            return false;
        }
        drop[a] = true;
    }
    out->rank = 0;
    for (int i = 0; i < in.rank; i++) {
        if (k == 0 && in.dims[i] < 0) {
            *out = rill_shape_unknown();
            return true;
        }
        if (k ? !drop[i] : in.dims[i] != 1) out->dims[out->rank++] = in.dims[i];
    }
    return true;
}

bool rill__shape_op_out(const rill_node *n, rill_shape in, rill_shape *out, rill_status *s)
{
    const char *op = n->op->name;
    if (strcmp(op, "Transpose") == 0) return transpose_out(n, in, out, s);
    if (strncmp(op, "Tile", 4) == 0) return tile_out(n, in, out, s);
    if (strcmp(op, "Pad") == 0 || strncmp(op, "MirrorPad", 9) == 0) return pad_out(n, in, out, s);
    if (strcmp(op, "ReverseV2") == 0) return reverse_out(n, in, out, s);
    if (strcmp(op, "BroadcastTo") == 0) return broadcast_to_out(n, in, out, s);
    if (strcmp(op, "Squeeze") == 0) return squeeze_out(n, in, out, s);
    rill_status_set(s, RILL_INTERNAL, "rill__shape_op_out: no rule for %s", op);
    return false;
}

static void one_input_shape(rill_node *n, rill_status *s)
{
    rill_shape out;
    if (!rill__shape_op_out(n, rill__in_shape(n, 0), &out, s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = out;
}

/* TileGrad(x, dy), MirrorPadGrad(x, dy): x's shape; dy must fit the forward result. */
static void map_grad_shape(rill_node *n, rill_status *s)
{
    rill_shape fwd;
    if (!rill__shape_op_out(n, rill__in_shape(n, 0), &fwd, s)) return;
    if (!rill__check_same_dtype(n, 1, "dy", 0, "x", s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

/* --- concatenation and splitting --- */

bool rill__concat_rule(const rill_node *n, const rill_shape *shapes, int k, int64_t axis,
                       bool runtime, rill_shape *out, rill_status *s)
{
    char sh[512], a[96], b[96];
    int rank = -1, first = -1;
    for (int i = 0; i < k; i++)
        if (shapes[i].rank >= 0) {
            if (rank < 0) {
                rank = shapes[i].rank, first = i;
            } else if (shapes[i].rank != rank) {
                if (runtime)
                    rill_status_set(s, RILL_INVALID_ARGUMENT,
                                    "ConcatOp : Ranks of all input tensors should match: "
                                    "shape[%d] = %s vs. shape[%d] = %s",
                                    first, rill_shape_str(&shapes[first], a, sizeof a), i,
                                    rill_shape_str(&shapes[i], b, sizeof b));
                else
                    rill_status_set(s, RILL_INVALID_ARGUMENT,
                                    "Shape must be rank %d but is rank %d for '%s' (op: '%s') "
                                    "with input shapes: %s.",
                                    rank, shapes[i].rank, n->name, n->op->name,
                                    shapes_str(n, sh, sizeof sh));
                return false;
            }
        }
    if (rank < 0) {
        *out = rill_shape_unknown();
        return true;
    }
    if (axis < -rank || axis >= rank) {
        if (runtime || axis < -rank)
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "ConcatOp : Expected concatenating dimensions in the range [%d, %d), "
                            "but got %lld",
                            -rank, rank, (long long)axis);
        else
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Shape must be at least rank %lld but is rank %d for '%s' (op: '%s') "
                            "with input shapes: %s.",
                            (long long)axis + 1, rank, n->name, n->op->name,
                            shapes_str(n, sh, sizeof sh));
        return false;
    }
    if (axis < 0) axis += rank;
    *out = shapes[first];
    out->dims[axis] = 0;
    for (int i = 0; i < k; i++) {
        if (shapes[i].rank < 0) {
            out->dims[axis] = -1;
            continue;
        }
        for (int d = 0; d < rank; d++) {
            int64_t x = out->dims[d], y = shapes[i].dims[d];
            if (d == axis) {
                out->dims[d] = x < 0 || y < 0 ? -1 : x + y;
            } else if (x < 0) {
                out->dims[d] = y;
            } else if (y >= 0 && x != y) {
                if (runtime) {
                    rill_status_set(s, RILL_INVALID_ARGUMENT,
                                    "ConcatOp : Dimensions of inputs should match: shape[%d] = "
                                    "%s vs. shape[%d] = %s",
                                    first, rill_shape_str(&shapes[first], a, sizeof a), i,
                                    rill_shape_str(&shapes[i], b, sizeof b));
                } else {
                    /* TF names the dim and the shapes with the concatenated axis removed */
                    rill_shape p = {.rank = rank - 1}, q = {.rank = rank - 1};
                    for (int e = 0, j = 0; e < rank; e++)
                        if (e != axis) {
                            p.dims[j] = e == d ? x : out->dims[e];
                            q.dims[j++] = shapes[i].dims[e];
                        }
                    rill_status_set(s, RILL_INVALID_ARGUMENT,
                                    "Dimension %d in both shapes must be equal, but are %lld and "
                                    "%lld. Shapes are %s and %s. for '%s' (op: '%s') with input "
                                    "shapes: %s.",
                                    d < axis ? d : d - 1, (long long)x, (long long)y,
                                    rill_shape_str(&p, a, sizeof a),
                                    rill_shape_str(&q, b, sizeof b), n->name, n->op->name,
                                    shapes_str(n, sh, sizeof sh));
                }
                return false;
            }
        }
    }
    return true;
}

static bool same_dtypes(rill_node *n, int from, rill_status *s)
{
    for (int i = from + 1; i < n->ninputs; i++)
        if (!rill__check_same_dtype(n, i, "values", from, "values", s)) return false;
    return true;
}

static void concat_shape(rill_node *n, rill_status *s)
{
    if (!same_dtypes(n, 0, s)) return;
    rill_shape *sh = rill__malloc((size_t)n->ninputs * sizeof *sh);
    RILL_CHECK_ALLOC(sh);
    for (int i = 0; i < n->ninputs; i++) sh[i] = rill__in_shape(n, i);
    rill_shape out;
    if (rill__concat_rule(n, sh, n->ninputs, rill__attr_int(n, "axis", 0), false, &out, s)) {
        n->out_dtypes[0] = rill__in_dtype(n, 0);
        n->out_shapes[0] = out;
    }
    rill__free(sh);
}

static void pack_shape(rill_node *n, rill_status *s)
{
    if (!same_dtypes(n, 0, s)) return;
    rill_shape m = rill_shape_unknown();
    char sh[512], a[96], b[96];
    for (int i = 0; i < n->ninputs; i++) {
        rill_shape x = rill__in_shape(n, i);
        if (x.rank < 0) continue;
        if (m.rank < 0) {
            m = x;
            continue;
        }
        if (x.rank != m.rank) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Shapes must be equal rank, but are %d and %d\n\tFrom merging shape "
                            "0 with other shapes. for '%s' (op: 'Pack') with input shapes: %s.",
                            m.rank, x.rank, n->name, shapes_str(n, sh, sizeof sh));
            return;
        }
        for (int d = 0; d < m.rank; d++) {
            if (m.dims[d] < 0) {
                m.dims[d] = x.dims[d];
            } else if (x.dims[d] >= 0 && x.dims[d] != m.dims[d]) {
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "Dimension %d in both shapes must be equal, but are %lld and "
                                "%lld. Shapes are %s and %s.\n\tFrom merging shape 0 with other "
                                "shapes. for '%s' (op: 'Pack') with input shapes: %s.",
                                d, (long long)m.dims[d], (long long)x.dims[d],
                                rill_shape_str(&m, a, sizeof a), rill_shape_str(&x, b, sizeof b),
                                n->name, shapes_str(n, sh, sizeof sh));
                return;
            }
        }
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    if (m.rank < 0) {
        n->out_shapes[0] = rill_shape_unknown();
        return;
    }
    int64_t axis = rill__attr_int(n, "axis", 0);
    if (axis < -(m.rank + 1) || axis > m.rank || m.rank + 1 > RILL_MAX_DIMS) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Invalid axis: %lld; must be in [%d,%d)",
                        (long long)axis, -(m.rank + 1), m.rank + 1);
        return;
    }
    if (axis < 0) axis += m.rank + 1;
    rill_shape out = {.rank = m.rank + 1};
    for (int d = 0, j = 0; d < out.rank; d++) out.dims[d] = d == axis ? n->ninputs : m.dims[j++];
    n->out_shapes[0] = out;
}

bool rill__split_rule(const rill_node *n, rill_shape in, const rill_shape *like, int k,
                      rill_shape *outs, rill_status *s)
{
    const char *op = n->op->name;
    bool unpack = strcmp(op, "Unpack") == 0;
    int64_t axis = rill__attr_int(n, "axis", 0);
    char sh[512];
    if (in.rank < 0) {
        for (int i = 0; i < k; i++) outs[i] = like ? like[i] : rill_shape_unknown();
        return true;
    }
    if (axis < -in.rank || axis >= in.rank) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s '%s': axis %lld is out of range for a tensor of rank %d (expected "
                        "[%d, %d))",
                        op, n->name, (long long)axis, in.rank, -in.rank, in.rank);
        return false;
    }
    if (axis < 0) axis += in.rank;
    int64_t d = in.dims[axis];
    for (int i = 0; i < k; i++) outs[i] = in;
    if (unpack || strcmp(op, "Split") == 0) {
        if (d >= 0 && (unpack ? d != k : k == 0 || d % k != 0)) {
            if (unpack)
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "Dimension must be %d but is %lld for '%s' (op: 'Unpack') with "
                                "input shapes: %s.",
                                k, (long long)d, n->name, shapes_str(n, sh, sizeof sh));
            else
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "Dimension size must be evenly divisible by %d but is %lld for "
                                "'%s' (op: 'Split') with input shapes: %s.",
                                k, (long long)d, n->name, shapes_str(n, sh, sizeof sh));
            return false;
        }
        for (int i = 0; i < k; i++) outs[i].dims[axis] = d < 0 ? -1 : unpack ? 1 : d / k;
        return true;
    }
    if (like) { /* ConcatGrad: the inputs' sizes along the axis */
        int64_t sum = 0;
        bool known = true;
        for (int i = 0; i < k; i++) {
            int64_t li = like[i].rank == in.rank ? like[i].dims[axis] : -1;
            outs[i].dims[axis] = li;
            if (li < 0)
                known = false;
            else
                sum += li;
        }
        if (known && d >= 0 && sum != d) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "ConcatGrad '%s': the gradient has %lld along axis %lld, the inputs "
                            "%lld",
                            n->name, (long long)d, (long long)axis, (long long)sum);
            return false;
        }
        return true;
    }
    int m;
    const int64_t *sz = rill__ints_attr(n, "size_splits", &m);
    if (m != k) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "SplitV '%s': size_splits has %d sizes for %d outputs", n->name, m, k);
        return false;
    }
    int neg = -1;
    int64_t sum = 0;
    char list[256];
    size_t off = 0;
    for (int i = 0; i < m; i++) {
        off += (size_t)snprintf(list + off, off < sizeof list ? sizeof list - off : 0, "%s%lld",
                                i ? "," : "", (long long)sz[i]);
        if (off >= sizeof list) off = sizeof list - 1;
    }
    for (int i = 0; i < m; i++) {
        if (sz[i] == -1) {
            if (neg >= 0) {
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "size_splits can only have one -1 for '%s' (op: 'SplitV') with "
                                "input shapes: %s.",
                                n->name, shapes_str(n, sh, sizeof sh));
                return false;
            }
            neg = i;
        } else if (sz[i] < 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "SplitV '%s': size_splits[%d] = %lld; sizes must be >= -1", n->name, i,
                            (long long)sz[i]);
            return false;
        } else {
            sum += sz[i];
        }
    }
    for (int i = 0; i < m; i++) outs[i].dims[axis] = sz[i];
    if (d < 0) return true;
    if ((neg < 0 && sum != d) || (neg >= 0 && sum > d)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "can't split axis of size %lld into pieces of size [%s] for '%s' (op: "
                        "'SplitV') with input shapes: %s.",
                        (long long)d, list, n->name, shapes_str(n, sh, sizeof sh));
        return false;
    }
    if (neg >= 0) outs[neg].dims[axis] = d - sum;
    return true;
}

static void split_shape(rill_node *n, rill_status *s)
{
    const char *op = n->op->name;
    bool grad = strcmp(op, "ConcatGrad") == 0, unpack = strcmp(op, "Unpack") == 0;
    int k = n->noutputs;
    int64_t want = rill__attr_int(n, unpack ? "num" : "num_split", k);
    if (grad) want = n->ninputs - 1;
    if (k < 1 || want != k) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s '%s': num_outputs (%d) must be %lld and at least 1", op, n->name, k,
                        (long long)want);
        return;
    }
    rill_shape *like = NULL, *outs = rill__malloc((size_t)k * sizeof *outs);
    RILL_CHECK_ALLOC(outs);
    if (grad) {
        like = rill__malloc((size_t)k * sizeof *like);
        RILL_CHECK_ALLOC(like);
        for (int i = 0; i < k; i++) like[i] = rill__in_shape(n, i + 1);
    }
    rill_shape in = rill__in_shape(n, 0);
    if (rill__split_rule(n, in, like, k, outs, s)) {
        int64_t axis = rill__attr_int(n, "axis", 0);
        for (int i = 0; i < k; i++) {
            n->out_dtypes[i] = rill__in_dtype(n, 0);
            n->out_shapes[i] = outs[i];
            if (unpack && outs[i].rank > 0) { /* drop the axis */
                int a = (int)(axis < 0 ? axis + outs[i].rank : axis);
                for (int d = a; d + 1 < outs[i].rank; d++) outs[i].dims[d] = outs[i].dims[d + 1];
                outs[i].rank--;
                n->out_shapes[i] = outs[i];
            }
        }
    }
    rill__free(like);
    rill__free(outs);
}

/* --- the rest --- */

static void same_as_input_shape(rill_node *n, rill_status *s)
{
    (void)s;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static bool range_count(double start, double limit, double delta, bool integral, int64_t *count,
                        rill_status *s)
{
    if (delta == 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Requires delta != 0: %g", delta);
        return false;
    }
    if (delta > 0 && start > limit) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Requires start <= limit when delta > 0: %g/%g",
                        start, limit);
        return false;
    }
    if (delta < 0 && start < limit) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Requires start >= limit when delta < 0: %g/%g",
                        start, limit);
        return false;
    }
    double c = integral ? floor((fabs(limit - start) + fabs(delta) - 1) / fabs(delta))
                        : ceil(fabs((limit - start) / delta));
    *count = (int64_t)c;
    return true;
}

/* Range's start, limit and delta: attrs, or three scalar inputs (Consts: known now). */
bool rill__range_values(const rill_node *n, const rill_tensor *const *in, double *v, bool *known)
{
    static const char *const names[3] = {"start", "limit", "delta"};
    *known = true;
    for (int i = 0; i < 3; i++) {
        if (n->ninputs == 3) {
            const rill_tensor *t = in ? in[i] : NULL;
            if (!t && strcmp(n->inputs[i].node->op->name, "Const") == 0)
                t = rill__node_attr(n->inputs[i].node, "value")->v.tensor;
            if (!t || t->numel != 1) {
                *known = false;
                continue;
            }
            v[i] = rill_tensor_get_double(t, 0);
        } else {
            v[i] = rill__attr_float(n, names[i], i == 2 ? 1.0 : 0.0);
            if (i < 2 && !rill__node_attr(n, names[i])) *known = false;
        }
    }
    return *known;
}

bool rill__range_count(const rill_node *n, const double *v, int64_t *count, rill_status *s)
{
    rill_dtype t = rill__attr_type(n, "Tidx", RILL_INT32);
    return range_count(v[0], v[1], v[2], t == RILL_INT32 || t == RILL_INT64, count, s);
}

static void range_shape(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__attr_type(n, "Tidx", RILL_INT32);
    if (t != RILL_INT32 && t != RILL_INT64 && t != RILL_FLOAT && t != RILL_DOUBLE) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'Tidx' of %s is not in the list of allowed values: "
                        "float, double, int32, int64; NodeDef: '%s'",
                        rill_dtype_name(t), n->name);
        return;
    }
    if (n->ninputs != 0 && n->ninputs != 3) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Range '%s' takes start, limit and delta as attrs or as 3 inputs, got %d",
                        n->name, n->ninputs);
        return;
    }
    for (int i = 0; i < n->ninputs; i++)
        if (rill__in_shape(n, i).rank > 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "Range '%s': input %d must be a scalar",
                            n->name, i);
            return;
        }
    n->out_dtypes[0] = t;
    double v[3];
    bool known;
    int64_t count;
    if (!rill__range_values(n, NULL, v, &known)) {
        if (n->ninputs == 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "Range '%s' needs the attrs start and limit",
                            n->name);
            return;
        }
        n->out_shapes[0] = rill_shape_vector(-1);
        return;
    }
    if (!rill__range_count(n, v, &count, s)) return;
    n->out_shapes[0] = rill_shape_vector(count);
}

static void one_hot_shape(rill_node *n, rill_status *s)
{
    rill_dtype it = rill__in_dtype(n, 0);
    if (it != RILL_INT32 && it != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'TI' of %s is not in the list of allowed values: int32, "
                        "int64; NodeDef: '%s'",
                        rill_dtype_name(it), n->name);
        return;
    }
    int64_t depth = rill__attr_int(n, "depth", -1), axis = rill__attr_int(n, "axis", -1);
    char sh[256];
    if (depth < 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Dimension size, given by scalar input 1, must be non-negative but is "
                        "%lld for '%s' (op: 'OneHot') with input shapes: %s.",
                        (long long)depth, n->name, shapes_str(n, sh, sizeof sh));
        return;
    }
    rill_dtype t = rill__attr_type(n, "T", RILL_FLOAT);
    if (t == RILL_STRING || !rill_dtype_is_valid(t)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "OneHot '%s': dtype %s is not supported", n->name,
                        rill_dtype_name(t));
        return;
    }
    n->out_dtypes[0] = t;
    rill_shape in = rill__in_shape(n, 0);
    if (in.rank < 0) {
        n->out_shapes[0] = rill_shape_unknown();
        return;
    }
    if (axis < -1 || axis > in.rank || in.rank + 1 > RILL_MAX_DIMS) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Expected axis to be -1 or between [0, %d).  But received: %lld",
                        in.rank + 1, (long long)axis);
        return;
    }
    if (axis < 0) axis = in.rank;
    rill_shape out = {.rank = in.rank + 1};
    for (int d = 0, j = 0; d < out.rank; d++) out.dims[d] = d == axis ? depth : in.dims[j++];
    n->out_shapes[0] = out;
}

static void size_shape(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__attr_type(n, "out_type", RILL_INT32);
    if (strcmp(n->op->name, "Rank") == 0) t = RILL_INT32;
    if (t != RILL_INT32 && t != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'out_type' of %s is not in the list of allowed values: "
                        "int32, int64; NodeDef: '%s'",
                        rill_dtype_name(t), n->name);
        return;
    }
    n->out_dtypes[0] = t;
    n->out_shapes[0] = rill_shape_scalar();
}

/* --- gradients --- */

static rill_output out0(rill_node *n)
{
    return (rill_output){n, 0};
}

/* The gradients of outputs 0..k of n, zeros where one has none. */
static rill_output *grads_or_zeros(rill_graph *g, rill_node *n, const rill_output *dy)
{
    rill_output *v = rill__malloc((size_t)n->noutputs * sizeof *v);
    RILL_CHECK_ALLOC(v);
    for (int i = 0; i < n->noutputs; i++)
        v[i] = dy[i].node ? dy[i] : rill_zeros_like(g, (rill_output){n, i}, NULL);
    return v;
}

static void concat_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    int k = n->ninputs;
    rill_output *in = rill__malloc((size_t)(k + 1) * sizeof *in);
    RILL_CHECK_ALLOC(in);
    in[0] = dy[0];
    for (int i = 0; i < k; i++) in[i + 1] = n->inputs[i];
    rill__attr a[] = {RILL__A_INT("axis", rill__attr_int(n, "axis", 0)),
                      RILL__A_INT("num_outputs", k)};
    rill_node *cg = rill__node_create(g, "ConcatGrad", NULL, in, k + 1, a, 2);
    rill__free(in);
    for (int i = 0; cg && i < k; i++) dx[i] = (rill_output){cg, i};
}

/* ConcatV2 of the outputs' gradients along the node's axis (Split, SplitV, ConcatGrad). */
static rill_output concat_of(rill_graph *g, rill_node *n, const rill_output *dy)
{
    rill_output *v = grads_or_zeros(g, n, dy);
    rill__attr a[] = {RILL__A_INT("axis", rill__attr_int(n, "axis", 0))};
    rill_output r = n->noutputs == 1
                        ? v[0]
                        : out0(rill__node_create(g, "ConcatV2", NULL, v, n->noutputs, a, 1));
    rill__free(v);
    return r;
}

static void split_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = concat_of(g, n, dy);
}

static void concat_grad_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = concat_of(g, n, dy);
}

static void pack_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    int k = n->ninputs;
    rill__attr a[] = {RILL__A_INT("axis", rill__attr_int(n, "axis", 0)), RILL__A_INT("num", k),
                      RILL__A_INT("num_outputs", k)};
    rill_node *u = rill__node_create(g, "Unpack", NULL, dy, 1, a, 3);
    for (int i = 0; u && i < k; i++) dx[i] = (rill_output){u, i};
}

static void unpack_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output *v = grads_or_zeros(g, n, dy);
    rill__attr a[] = {RILL__A_INT("axis", rill__attr_int(n, "axis", 0))};
    dx[0] = out0(rill__node_create(g, "Pack", NULL, v, n->noutputs, a, 1));
    rill__free(v);
}

static void transpose_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    int k;
    const int64_t *perm = rill__ints_attr(n, "perm", &k);
    int64_t inv[RILL_MAX_DIMS];
    rill__attr a[1];
    int na = 0;
    if (perm && k <= RILL_MAX_DIMS) {
        for (int i = 0; i < k; i++) inv[perm[i]] = i;
        a[na++] = RILL__A_INTS("perm", k, inv);
    }
    dx[0] = out0(rill__node_create(g, "Transpose", NULL, dy, 1, a, na));
}

/* The same op (or its forward twin) on other inputs with n's attrs. */
static rill_output like(rill_graph *g, const rill_node *n, const char *op, const rill_output *in,
                        int nin)
{
    return out0(rill__node_create(g, op, NULL, in, nin, n->attrs, n->nattrs));
}

static void tile_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {n->inputs[0], dy[0]};
    dx[0] = like(g, n, "TileGrad", in, 2);
}

static void tile_grad_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[1] = like(g, n, "Tile", dy, 1);
}

static void pad_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    int k;
    const int64_t *p = rill__ints_attr(n, "paddings", &k);
    int r = k / 2;
    int64_t b[RILL_MAX_DIMS], e[RILL_MAX_DIMS], st[RILL_MAX_DIMS];
    rill_slice_masks m = {0};
    for (int i = 0; i < r && i < RILL_MAX_DIMS; i++) {
        b[i] = p[2 * i];
        e[i] = -p[2 * i + 1];
        st[i] = 1;
        if (p[2 * i + 1] == 0) m.end |= 1 << i;
    }
    dx[0] = rill_strided_slice(g, dy[0], b, e, st, r, &m, NULL);
}

static void mirror_pad_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {n->inputs[0], dy[0]};
    dx[0] = like(g, n, "MirrorPadGrad", in, 2);
}

static void mirror_pad_grad_grad(rill_graph *g, rill_node *n, const rill_output *dy,
                                 rill_output *dx)
{
    dx[1] = like(g, n, "MirrorPad", dy, 1);
}

static void squeeze_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = rill_reshape_to(g, dy[0], rill_shape_of(g, n->inputs[0], NULL), NULL);
}

static void reverse_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = like(g, n, "ReverseV2", dy, 1);
}

static void broadcast_to_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {dy[0], rill_shape_of(g, n->inputs[0], NULL)};
    dx[0] = out0(rill__node_create(g, "SumToShape", NULL, in, 2, NULL, 0));
}

static void prevent_gradient_grad(rill_graph *g, rill_node *n, const rill_output *dy,
                                  rill_output *dx)
{
    (void)dy;
    (void)dx;
    const rill__attr *m = rill__node_attr(n, "message");
    rill__graph_fail(g, RILL_INVALID_ARGUMENT, "Gradient explicitly disabled. Reason: %s.",
                     m && m->kind == RILL__ATTR_STRING ? m->v.s : "");
}

#define ONE(nm, dn, gr)                                                                            \
    {                                                                                              \
        .name = nm, .default_name = dn, .min_inputs = 1, .max_inputs = 1, .noutputs = 1,           \
        .shape = one_input_shape, .grad = gr                                                       \
    }
#define SPLIT(nm, dn, mn, mx, gr)                                                                  \
    {                                                                                              \
        .name = nm, .default_name = dn, .min_inputs = mn, .max_inputs = mx, .noutputs = -1,        \
        .shape = split_shape, .grad = gr                                                           \
    }
const rill__op_def rill__ops_shape[] = {
    {.name = "ConcatV2",
     .default_name = "concat",
     .min_inputs = 1,
     .max_inputs = -1,
     .noutputs = 1,
     .shape = concat_shape,
     .grad = concat_grad},
    {.name = "Pack",
     .default_name = "stack",
     .min_inputs = 1,
     .max_inputs = -1,
     .noutputs = 1,
     .shape = pack_shape,
     .grad = pack_grad},
    SPLIT("Unpack", "unstack", 1, 1, unpack_grad),
    SPLIT("Split", "split", 1, 1, split_grad),
    SPLIT("SplitV", "split", 1, 1, split_grad),
    SPLIT("ConcatGrad", "ConcatGrad", 2, -1, concat_grad_grad),
    ONE("Transpose", "transpose", transpose_grad),
    ONE("Tile", "Tile", tile_grad),
    ONE("Pad", "Pad", pad_grad),
    ONE("MirrorPad", "MirrorPad", mirror_pad_grad),
    ONE("Squeeze", "Squeeze", squeeze_grad),
    ONE("ReverseV2", "ReverseV2", reverse_grad),
    ONE("BroadcastTo", "BroadcastTo", broadcast_to_grad),
    {.name = "TileGrad",
     .default_name = "TileGrad",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = map_grad_shape,
     .grad = tile_grad_grad},
    {.name = "MirrorPadGrad",
     .default_name = "MirrorPadGrad",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = map_grad_shape,
     .grad = mirror_pad_grad_grad},
    {.name = "StopGradient",
     .default_name = "StopGradient",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = same_as_input_shape},
    {.name = "PreventGradient",
     .default_name = "PreventGradient",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = same_as_input_shape,
     .grad = prevent_gradient_grad},
    {.name = "Range",
     .default_name = "range",
     .min_inputs = 0,
     .max_inputs = 3,
     .noutputs = 1,
     .shape = range_shape,
     .type_attr = "Tidx"},
    {.name = "OneHot",
     .default_name = "one_hot",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = one_hot_shape,
     .type_attr = "T"},
    {.name = "Size",
     .default_name = "Size",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = size_shape},
    {.name = "Rank",
     .default_name = "Rank",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = size_shape},
    {0},
};
