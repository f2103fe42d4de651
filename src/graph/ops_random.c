/* ops_random.c - the random ops: RandomStandardNormal, RandomUniform, TruncatedNormal (TF's, with
 * a shape input) and rill's RandomNormal (a "shape" attr and the mean and stddev as attrs "a" and
 * "b"; the other three take attrs a and b too, and a shape attr when they have no shape input),
 * RandomUniformInt, Multinomial and RandomShuffle.
 *
 * Every one is stateful and seeded as TensorFlow's: the node's (seed, seed2) come from
 * derive_seeds in graph.c (attrs "seed" and "seed2" as TF's Python sets them, or rill's C
 * builders' op seed combined with the graph's). The CPU kernels (src/kernels/cpu/cpu_random.c)
 * reproduce TF's Philox streams for a given (seed, seed2). */
#include "graph_internal.h"

#include <string.h>

/* The output shape of a random op: the "shape" attr, or input 0 (an int32/int64 vector; a Const
 * gives a static shape, anything else a rank at most). */
static bool random_out_shape(rill_node *n, int shape_input, rill_shape *out, rill_status *s)
{
    if (n->ninputs <= shape_input) {
        const rill__attr *sh = rill__node_attr(n, "shape");
        if (!sh || sh->kind != RILL__ATTR_SHAPE || !rill_shape_is_fully_defined(&sh->v.shape)) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "%s '%s' needs a fully defined shape (a shape input or attr)",
                            n->op->name, n->name);
            return false;
        }
        *out = sh->v.shape;
        return true;
    }
    rill_dtype st = rill__in_dtype(n, shape_input);
    if (st != RILL_INT32 && st != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'T' of %s is not in the list of allowed values: int32, "
                        "int64\n\t; NodeDef: {{node %s}}",
                        rill_dtype_name(st), n->name);
        return false;
    }
    if (!rill__check_rank(n, shape_input, 1, false, s)) return false;
    rill_output so = n->inputs[shape_input];
    if (strcmp(so.node->op->name, "Const") == 0) {
        const rill_tensor *t = rill__node_attr(so.node, "value")->v.tensor;
        if (t->numel > RILL_MAX_DIMS) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "%s '%s': rank %lld is above %d", n->op->name,
                            n->name, (long long)t->numel, RILL_MAX_DIMS);
            return false;
        }
        *out = (rill_shape){.rank = (int)t->numel};
        for (int i = 0; i < out->rank; i++) {
            out->dims[i] = rill_tensor_get_int64(t, i);
            if (out->dims[i] < 0) {
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "Dimension %d must be >= 0, got %lld for '%s' (op: '%s')", i,
                                (long long)out->dims[i], n->name, n->op->name);
                return false;
            }
        }
        return true;
    }
    rill_shape ss = rill__in_shape(n, shape_input);
    *out = (rill_shape){.rank = ss.rank >= 0 && ss.dims[0] >= 0 ? (int)ss.dims[0] : -1};
    if (out->rank > RILL_MAX_DIMS) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s '%s': rank %d is above %d", n->op->name,
                        n->name, out->rank, RILL_MAX_DIMS);
        return false;
    }
    for (int i = 0; i < out->rank; i++) out->dims[i] = -1;
    return true;
}

/* RandomStandardNormal, RandomUniform, TruncatedNormal, RandomNormal: a float dtype attr. */
static void random_float_shape(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__attr_type(n, "dtype", RILL_DT_INVALID);
    if (t != RILL_FLOAT && t != RILL_DOUBLE && t != RILL_HALF) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'dtype' of %s is not in the list of allowed values: half, "
                        "float, double\n\t; NodeDef: {{node %s}}",
                        rill_dtype_name(t), n->name);
        return;
    }
    if (!random_out_shape(n, 0, &n->out_shapes[0], s)) return;
    n->out_dtypes[0] = t;
}

static bool check_scalar(rill_node *n, int i, rill_status *s)
{
    return rill__check_rank(n, i, 0, false, s);
}

/* RandomUniformInt(shape, minval, maxval): the bounds' dtype (int32 or int64) is the output's. */
static void random_int_shape(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, 1);
    if (t != RILL_INT32 && t != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'Tout' of %s is not in the list of allowed values: int32, "
                        "int64\n\t; NodeDef: {{node %s}}",
                        rill_dtype_name(t), n->name);
        return;
    }
    if (!rill__check_same_dtype(n, 2, "maxval", 1, "minval", s)) return;
    if (!check_scalar(n, 1, s) || !check_scalar(n, 2, s)) return;
    if (!random_out_shape(n, 0, &n->out_shapes[0], s)) return;
    n->out_dtypes[0] = t;
}

/* Multinomial(logits [batch, classes], num_samples int32 scalar) -> [batch, num_samples]. */
static void multinomial_shape(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, 0);
    if (t != RILL_FLOAT && t != RILL_DOUBLE && t != RILL_HALF) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'T' of %s is not in the list of allowed values: half, "
                        "float, double\n\t; NodeDef: {{node %s}}",
                        rill_dtype_name(t), n->name);
        return;
    }
    if (rill__in_dtype(n, 1) != RILL_INT32) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input 'num_samples' of 'Multinomial' Op has type %s that does not match "
                        "expected type of int32.",
                        rill_dtype_name(rill__in_dtype(n, 1)));
        return;
    }
    rill_dtype ot = rill__attr_type(n, "output_dtype", RILL_INT64);
    if (ot != RILL_INT32 && ot != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'output_dtype' of %s is not in the list of allowed "
                        "values: int32, int64\n\t; NodeDef: {{node %s}}",
                        rill_dtype_name(ot), n->name);
        return;
    }
    if (!rill__check_rank(n, 0, 2, false, s) || !check_scalar(n, 1, s)) return;
    rill_shape ls = rill__in_shape(n, 0);
    int64_t ns = -1;
    rill_output no = n->inputs[1];
    if (strcmp(no.node->op->name, "Const") == 0) {
        ns = rill_tensor_get_int64(rill__node_attr(no.node, "value")->v.tensor, 0);
        if (ns < 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "num_samples should be nonnegative, got %lld",
                            (long long)ns);
            return;
        }
    }
    n->out_dtypes[0] = ot;
    n->out_shapes[0] = (rill_shape){.rank = 2, .dims = {ls.rank == 2 ? ls.dims[0] : -1, ns}};
}

static void shuffle_shape(rill_node *n, rill_status *s)
{
    (void)s;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

#define RANDOM_FLOAT(nm, dn)                                                                       \
    {                                                                                              \
        .name = nm, .default_name = dn, .min_inputs = 0, .max_inputs = 1, .noutputs = 1,           \
        .stateful = true, .shape = random_float_shape, .type_attr = "dtype"                        \
    }

const rill__op_def rill__ops_random[] = {
    RANDOM_FLOAT("RandomNormal", "random_normal"),
    RANDOM_FLOAT("RandomStandardNormal", "RandomStandardNormal"),
    RANDOM_FLOAT("TruncatedNormal", "truncated_normal"),
    RANDOM_FLOAT("RandomUniform", "random_uniform"),
    {.name = "RandomUniformInt",
     .default_name = "RandomUniformInt",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .stateful = true,
     .shape = random_int_shape},
    {.name = "Multinomial",
     .default_name = "Multinomial",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .stateful = true,
     .shape = multinomial_shape},
    {.name = "RandomShuffle",
     .default_name = "RandomShuffle",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .stateful = true,
     .shape = shuffle_shape},
    {0},
};
