/* ops_apply.c - op definitions of the dense optimizer updates beyond ops_state.c's four:
 * ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdadelta, ApplyFtrl, ApplyFtrlV2,
 * ApplyProximalAdagrad and ApplyProximalGradientDescent.
 *
 * Each keeps TensorFlow's input order (training_ops.cc): the variable and its slots first, as
 * reference inputs, then the hyper-parameters as scalars and the gradient (whose place differs
 * from op to op: after the slots for Ftrl, last for the others). One table describes every
 * op's inputs, and one shape function checks them all against it: slots and the gradient must
 * have the variable's dtype and shape, hyper-parameters its dtype and one element. The output is
 * the updated variable (TF's "out", the ref). Kernels: src/kernels/cpu/cpu_apply.c and
 * src/kernels/opencl/cl_apply.c. */
#include "graph_internal.h"

#include <string.h>

/* An op's inputs: names in order; bit i of scalars set: input i is a hyper-parameter. */
typedef struct apply_spec {
    const char *op;
    int n;
    const char *names[10];
    uint32_t scalars;
} apply_spec;

static const apply_spec specs[] = {
    {"ApplyRMSProp", 8, {"var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad"}, 0x78},
    {"ApplyCenteredRMSProp",
     9,
     {"var", "mg", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad"},
     0xF0},
    {"ApplyAdadelta", 7, {"var", "accum", "accum_update", "lr", "rho", "epsilon", "grad"}, 0x38},
    {"ApplyFtrl", 8, {"var", "accum", "linear", "grad", "lr", "l1", "l2", "lr_power"}, 0xF0},
    {"ApplyFtrlV2",
     9,
     {"var", "accum", "linear", "grad", "lr", "l1", "l2", "l2_shrinkage", "lr_power"},
     0x1F0},
    {"ApplyProximalAdagrad", 6, {"var", "accum", "lr", "l1", "l2", "grad"}, 0x1C},
    {"ApplyProximalGradientDescent", 5, {"var", "alpha", "l1", "l2", "delta"}, 0x0E},
};

static const apply_spec *spec_of(const char *op)
{
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        if (strcmp(specs[i].op, op) == 0) return &specs[i];
    return NULL;
}

static bool check_dtype(const rill_node *n, int i, const char *what, rill_status *s)
{
    rill_dtype vt = rill__in_dtype(n, 0), t = rill__in_dtype(n, i);
    if (t == vt) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Input '%s' of '%s' Op has type %s that does not match type %s of argument "
                    "'var'.",
                    what, n->op->name, rill_dtype_name(t), rill_dtype_name(vt));
    return false;
}

/* Input i (a slot or the gradient) has the variable's shape where both are known. */
static bool check_like_var(const rill_node *n, int i, const char *what, rill_status *s)
{
    if (!check_dtype(n, i, what, s)) return false;
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
                    rill_shape_str(&xs, b, sizeof b), what);
    return false;
}

static bool check_scalar(const rill_node *n, int i, const char *what, rill_status *s)
{
    if (!check_dtype(n, i, what, s)) return false;
    rill_shape sh = rill__in_shape(n, i);
    if (sh.rank <= 0) return true;
    char b[96];
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Shape must be rank 0 but is rank %d for '%s' (op: '%s') with input shape %s "
                    "(input '%s').",
                    sh.rank, n->name, n->op->name, rill_shape_str(&sh, b, sizeof b), what);
    return false;
}

static void apply_shape(rill_node *n, rill_status *s)
{
    const apply_spec *sp = spec_of(n->op->name);
    rill_dtype t = rill__in_dtype(n, 0);
    if (t != RILL_FLOAT && t != RILL_DOUBLE && t != RILL_HALF) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value passed to parameter 'var' has DataType %s not in list of allowed "
                        "values: float16, float32, float64 (node '%s', op '%s')",
                        rill_dtype_name(t), n->name, n->op->name);
        return;
    }
    for (int i = 1; i < sp->n; i++) {
        bool ok = sp->scalars >> i & 1 ? check_scalar(n, i, sp->names[i], s)
                                       : check_like_var(n, i, sp->names[i], s);
        if (!ok) return;
    }
    n->out_dtypes[0] = t;
    n->out_shapes[0] = rill__in_shape(n, 0);
}

#define APPLY_OP(NAME, NIN, REFS)                                                                  \
    {                                                                                              \
        .name = NAME, .default_name = NAME, .min_inputs = NIN, .max_inputs = NIN, .noutputs = 1,   \
        .stateful = true, .ref_inputs = REFS, .shape = apply_shape                                 \
    }

const rill__op_def rill__ops_apply[] = {
    APPLY_OP("ApplyRMSProp", 8, 0x7),
    APPLY_OP("ApplyCenteredRMSProp", 9, 0xF),
    APPLY_OP("ApplyAdadelta", 7, 0x7),
    APPLY_OP("ApplyFtrl", 8, 0x7),
    APPLY_OP("ApplyFtrlV2", 9, 0x7),
    APPLY_OP("ApplyProximalAdagrad", 6, 0x3),
    APPLY_OP("ApplyProximalGradientDescent", 5, 0x1),
    {0},
};
