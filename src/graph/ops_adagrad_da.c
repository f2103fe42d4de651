/* ops_adagrad_da.c - op definitions of TF's Adagrad dual averaging updates: ApplyAdagradDA and
 * SparseApplyAdagradDA (training_ops.cc), which tf.train.AdagradDAOptimizer builds.
 *
 * ApplyAdagradDA(var, gradient_accumulator, gradient_squared_accumulator, grad, lr, l1, l2,
 * global_step): the first three are reference inputs of one float dtype and shape, grad has
 * that shape, lr, l1 and l2 are scalars of the variable's dtype and global_step an int64
 * scalar. SparseApplyAdagradDA takes indices ([N], int32 or int64) right after grad ([N,
 * var.shape[1:]...]). The output is the updated variable (TF's "out", the ref). Kernels:
 * src/kernels/cpu/cpu_adagrad_da.c (host only). */
#include "graph_internal.h"

#include <string.h>

static const char *const names[] = {"var", "gradient_accumulator", "gradient_squared_accumulator",
                                    "grad"};
static const char *const scalars[] = {"lr", "l1", "l2", "global_step"};

static bool check_dtype(const rill_node *n, int i, rill_dtype want, const char *what,
                        rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, i);
    if (t == want) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Input '%s' of '%s' Op has type %s that does not match type %s of argument "
                    "'var'.",
                    what, n->op->name, rill_dtype_name(t), rill_dtype_name(want));
    return false;
}

/* Input i has the variable's shape where both are known (TF's MergeShapes text). */
static bool check_like_var(const rill_node *n, int i, rill_status *s)
{
    if (!check_dtype(n, i, rill__in_dtype(n, 0), names[i], s)) return false;
    rill_shape vs = rill__in_shape(n, 0), xs = rill__in_shape(n, i);
    if (xs.rank < 0 || vs.rank < 0) return true;
    bool ok = xs.rank == vs.rank;
    for (int d = 0; ok && d < vs.rank; d++)
        if (xs.dims[d] >= 0 && vs.dims[d] >= 0 && xs.dims[d] != vs.dims[d]) ok = false;
    if (ok) return true;
    char a[96], b[96];
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Shapes must be equal rank, and dimensions must match for '%s' (op: '%s') "
                    "with input shapes: %s, %s (input '%s').",
                    n->name, n->op->name, rill_shape_str(&vs, a, sizeof a),
                    rill_shape_str(&xs, b, sizeof b), names[i]);
    return false;
}

static bool check_scalar(const rill_node *n, int i, int k, rill_status *s)
{
    if (k == 3 && rill__in_dtype(n, i) != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input 'global_step' of '%s' Op has type %s that does not match expected "
                        "type of int64.",
                        n->op->name, rill_dtype_name(rill__in_dtype(n, i)));
        return false;
    }
    if (k < 3 && !check_dtype(n, i, rill__in_dtype(n, 0), scalars[k], s)) return false;
    rill_shape sh = rill__in_shape(n, i);
    if (sh.rank <= 0) return true;
    char b[96];
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Shape must be rank 0 but is rank %d for '%s' (op: '%s') with input shape %s "
                    "(input '%s').",
                    sh.rank, n->name, n->op->name, rill_shape_str(&sh, b, sizeof b), scalars[k]);
    return false;
}

static bool check_var(const rill_node *n, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, 0);
    if (t == RILL_FLOAT || t == RILL_DOUBLE) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Value passed to parameter 'var' has DataType %s not in list of allowed "
                    "values: float32, float64 (node '%s', op '%s')",
                    rill_dtype_name(t), n->name, n->op->name);
    return false;
}

static void done(rill_node *n)
{
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static void apply_shape(rill_node *n, rill_status *s)
{
    if (!check_var(n, s)) return;
    for (int i = 1; i < 4; i++)
        if (!check_like_var(n, i, s)) return;
    for (int k = 0; k < 4; k++)
        if (!check_scalar(n, 4 + k, k, s)) return;
    done(n);
}

static void sparse_shape(rill_node *n, rill_status *s)
{
    if (!check_var(n, s)) return;
    for (int i = 1; i < 3; i++)
        if (!check_like_var(n, i, s)) return;
    if (!check_dtype(n, 3, rill__in_dtype(n, 0), "grad", s)) return;
    rill_dtype it = rill__in_dtype(n, 4);
    if (it != RILL_INT32 && it != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value passed to parameter 'indices' has DataType %s not in list of "
                        "allowed values: int32, int64",
                        rill_dtype_name(it));
        return;
    }
    rill_shape v = rill__in_shape(n, 0), g = rill__in_shape(n, 3), ix = rill__in_shape(n, 4);
    char a[96], b[96];
    if (ix.rank >= 0 && ix.rank != 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank 1 but is rank %d for '%s' (op: '%s') with input "
                        "shape %s (input 'indices').",
                        ix.rank, n->name, n->op->name, rill_shape_str(&ix, a, sizeof a));
        return;
    }
    if (v.rank >= 0 && g.rank >= 0) {
        bool ok = v.rank >= 1 && g.rank == v.rank;
        for (int d = 1; ok && d < v.rank; d++)
            if (g.dims[d] >= 0 && v.dims[d] >= 0 && g.dims[d] != v.dims[d]) ok = false;
        if (!ok) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Shapes must be equal rank, and dimensions must match after the "
                            "first for '%s' (op: '%s') with input shapes: %s, %s (inputs 'var' "
                            "and 'grad').",
                            n->name, n->op->name, rill_shape_str(&v, a, sizeof a),
                            rill_shape_str(&g, b, sizeof b));
            return;
        }
        if (ix.rank == 1 && g.dims[0] >= 0 && ix.dims[0] >= 0 && g.dims[0] != ix.dims[0]) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Dimensions must be equal, but are %lld and %lld for '%s' (op: "
                            "'%s') (inputs 'grad' and 'indices').",
                            (long long)g.dims[0], (long long)ix.dims[0], n->name, n->op->name);
            return;
        }
    }
    for (int k = 0; k < 4; k++)
        if (!check_scalar(n, 5 + k, k, s)) return;
    done(n);
}

const rill__op_def rill__ops_adagrad_da[] = {
    {.name = "ApplyAdagradDA",
     .default_name = "ApplyAdagradDA",
     .min_inputs = 8,
     .max_inputs = 8,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 0x7,
     .shape = apply_shape},
    {.name = "SparseApplyAdagradDA",
     .default_name = "SparseApplyAdagradDA",
     .min_inputs = 9,
     .max_inputs = 9,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 0x7,
     .shape = sparse_shape},
    {0},
};
