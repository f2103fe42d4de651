/* ops_sparse_apply.c - the optimizers' row-wise updates for sparse gradients: SparseApplyMomentum,
 * SparseApplyAdagrad (TensorFlow's ops, same inputs in the same order) and _SparseApplyAdam
 * (TF has no such op: its AdamOptimizer._apply_sparse decays all of m and v densely, adds the
 * gradient rows into them with scatter_add and then updates every row of var; this op does the
 * same in one kernel, under one lock), and the sparse twins of ops_apply.c's updates:
 * SparseApplyRMSProp, SparseApplyCenteredRMSProp, SparseApplyAdadelta, SparseApplyFtrl,
 * SparseApplyFtrlV2, SparseApplyProximalAdagrad and SparseApplyProximalGradientDescent (TF's
 * inputs in TF's order: the dense op's with indices right after grad).
 *
 * grad is [N, var.shape[1:]...] for indices [N]; rows with the same index are summed first, as
 * TF's Optimizer._apply_sparse_duplicate_indices does, so a repeated index counts once with
 * the sum of its rows. Gradient descent needs no op of its own: it is ScatterSub(var, indices,
 * lr * grad), as TF's GradientDescentOptimizer._apply_sparse. src/train/optimizers.c builds
 * these (its apply_sparse) when a gradient comes from IndexedSlicesToDense (ops_index.c). */
#include "graph_internal.h"

#include <string.h>

static bool check_scalar_like_var(rill_node *n, int i, const char *what, rill_status *s)
{
    rill_shape sh = rill__in_shape(n, i);
    if (rill__in_dtype(n, i) != rill__in_dtype(n, 0)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input '%s' of '%s' Op has type %s that does not match type %s of "
                        "argument 'var'.",
                        what, n->op->name, rill_dtype_name(rill__in_dtype(n, i)),
                        rill_dtype_name(rill__in_dtype(n, 0)));
        return false;
    }
    if (sh.rank > 0 && rill_shape_num_elements(&sh) != 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s must be a scalar: %s for '%s'", what,
                        n->op->name, n->name);
        return false;
    }
    return true;
}

/* Slot input i (accum, m, v) has var's dtype and shape. */
static bool check_slot(rill_node *n, int i, const char *what, rill_status *s)
{
    rill_shape vs = rill__in_shape(n, 0), xs = rill__in_shape(n, i);
    if (rill__in_dtype(n, i) != rill__in_dtype(n, 0) || !rill_shape_equal(&vs, &xs)) {
        char a[96], b[96];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "var and %s do not have the same shape or dtype: %s %s vs %s %s for '%s'",
                        what, rill_dtype_name(rill__in_dtype(n, 0)),
                        rill_shape_str(&vs, a, sizeof a), rill_dtype_name(rill__in_dtype(n, i)),
                        rill_shape_str(&xs, b, sizeof b), n->name);
        return false;
    }
    return true;
}

/* grad (input gi) is [N, var.shape[1:]] for indices (input ii) [N]. */
static bool check_grad_indices(rill_node *n, int gi, int ii, rill_status *s)
{
    rill_dtype it = rill__in_dtype(n, ii);
    if (it != RILL_INT32 && it != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value passed to parameter 'indices' has DataType %s not in list of "
                        "allowed values: int32, int64",
                        rill_dtype_name(it));
        return false;
    }
    if (rill__in_dtype(n, gi) != rill__in_dtype(n, 0)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input 'grad' of '%s' Op has type %s that does not match type %s of "
                        "argument 'var'.",
                        n->op->name, rill_dtype_name(rill__in_dtype(n, gi)),
                        rill_dtype_name(rill__in_dtype(n, 0)));
        return false;
    }
    rill_shape v = rill__in_shape(n, 0), g = rill__in_shape(n, gi), ix = rill__in_shape(n, ii);
    if (ix.rank >= 0 && ix.rank != 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "indices must be one-dimensional");
        return false;
    }
    if (v.rank < 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "var must be at least 1 dimensional");
        return false;
    }
    if (g.rank >= 0) {
        if (g.rank != v.rank) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "var and grad must have the same rank");
            return false;
        }
        for (int d = 1; d < v.rank; d++)
            if (g.dims[d] >= 0 && g.dims[d] != v.dims[d]) {
                rill_status_set(s, RILL_INVALID_ARGUMENT, "var and grad must match in dimension %d",
                                d);
                return false;
            }
        if (ix.rank == 1 && g.dims[0] >= 0 && ix.dims[0] >= 0 && g.dims[0] != ix.dims[0]) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "grad must be the same size as indices in the first dimension.");
            return false;
        }
    }
    return true;
}

static bool check_float_var(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, 0);
    if (t == RILL_FLOAT || t == RILL_DOUBLE) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT, "%s '%s': var must be float32 or float64, got %s",
                    n->op->name, n->name, rill_dtype_name(t));
    return false;
}

static void done(rill_node *n)
{
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static void sparse_momentum_shape(rill_node *n, rill_status *s)
{
    /* var, accum, lr, grad, indices, momentum */
    if (!check_float_var(n, s) || !check_slot(n, 1, "accum", s) ||
        !check_scalar_like_var(n, 2, "lr", s) || !check_grad_indices(n, 3, 4, s) ||
        !check_scalar_like_var(n, 5, "momentum", s))
        return;
    done(n);
}

static void sparse_adagrad_shape(rill_node *n, rill_status *s)
{
    /* var, accum, lr, grad, indices */
    if (!check_float_var(n, s) || !check_slot(n, 1, "accum", s) ||
        !check_scalar_like_var(n, 2, "lr", s) || !check_grad_indices(n, 3, 4, s))
        return;
    done(n);
}

static void sparse_adam_shape(rill_node *n, rill_status *s)
{
    /* var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, indices */
    static const char *const names[] = {"var", "m",     "v",     "beta1_power", "beta2_power",
                                        "lr",  "beta1", "beta2", "epsilon"};
    if (!check_float_var(n, s) || !check_slot(n, 1, "m", s) || !check_slot(n, 2, "v", s)) return;
    for (int i = 3; i <= 8; i++)
        if (!check_scalar_like_var(n, i, names[i], s)) return;
    if (!check_grad_indices(n, 9, 10, s)) return;
    done(n);
}

/* The sparse twins of ops_apply.c's updates: inputs by name; bit i of scalars set: input i is a
 * hyper-parameter; gi/ii: the places of grad and indices. */
typedef struct sparse_spec {
    const char *op;
    int n, gi, ii;
    const char *names[10];
    uint32_t scalars;
} sparse_spec;

static const sparse_spec specs[] = {
    {"SparseApplyRMSProp",
     9,
     7,
     8,
     {"var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad", "indices"},
     0x78},
    {"SparseApplyCenteredRMSProp",
     10,
     8,
     9,
     {"var", "mg", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad", "indices"},
     0xF0},
    {"SparseApplyAdadelta",
     8,
     6,
     7,
     {"var", "accum", "accum_update", "lr", "rho", "epsilon", "grad", "indices"},
     0x38},
    {"SparseApplyFtrl",
     9,
     3,
     4,
     {"var", "accum", "linear", "grad", "indices", "lr", "l1", "l2", "lr_power"},
     0x1E0},
    {"SparseApplyFtrlV2",
     10,
     3,
     4,
     {"var", "accum", "linear", "grad", "indices", "lr", "l1", "l2", "l2_shrinkage", "lr_power"},
     0x3E0},
    {"SparseApplyProximalAdagrad",
     7,
     5,
     6,
     {"var", "accum", "lr", "l1", "l2", "grad", "indices"},
     0x1C},
    {"SparseApplyProximalGradientDescent",
     6,
     4,
     5,
     {"var", "alpha", "l1", "l2", "grad", "indices"},
     0x0E},
};

static void sparse_spec_shape(rill_node *n, rill_status *s)
{
    const sparse_spec *sp = NULL;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        if (strcmp(specs[i].op, n->op->name) == 0) sp = &specs[i];
    if (!check_float_var(n, s)) return;
    for (int i = 1; i < sp->n; i++) {
        if (i == sp->gi || i == sp->ii) continue;
        bool ok = sp->scalars >> i & 1 ? check_scalar_like_var(n, i, sp->names[i], s)
                                       : check_slot(n, i, sp->names[i], s);
        if (!ok) return;
    }
    if (!check_grad_indices(n, sp->gi, sp->ii, s)) return;
    done(n);
}

#define SPARSE_OP(NAME, NIN, REFS)                                                                 \
    {                                                                                              \
        .name = NAME, .default_name = NAME, .min_inputs = NIN, .max_inputs = NIN, .noutputs = 1,   \
        .stateful = true, .ref_inputs = REFS, .shape = sparse_spec_shape                           \
    }

const rill__op_def rill__ops_sparse_apply[] = {
    {.name = "SparseApplyMomentum",
     .default_name = "SparseApplyMomentum",
     .min_inputs = 6,
     .max_inputs = 6,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 3,
     .shape = sparse_momentum_shape},
    {.name = "SparseApplyAdagrad",
     .default_name = "SparseApplyAdagrad",
     .min_inputs = 5,
     .max_inputs = 5,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 3,
     .shape = sparse_adagrad_shape},
    {.name = "_SparseApplyAdam",
     .default_name = "SparseApplyAdam",
     .min_inputs = 11,
     .max_inputs = 11,
     .noutputs = 1,
     .stateful = true,
     .ref_inputs = 7,
     .shape = sparse_adam_shape},
    SPARSE_OP("SparseApplyRMSProp", 9, 0x7),
    SPARSE_OP("SparseApplyCenteredRMSProp", 10, 0xF),
    SPARSE_OP("SparseApplyAdadelta", 8, 0x7),
    SPARSE_OP("SparseApplyFtrl", 9, 0x7),
    SPARSE_OP("SparseApplyFtrlV2", 10, 0x7),
    SPARSE_OP("SparseApplyProximalAdagrad", 7, 0x3),
    SPARSE_OP("SparseApplyProximalGradientDescent", 6, 0x1),
    {0},
};
