/* ops_permute.c - op definitions, shape rules and gradients of two ops that move elements
 * within their dims: Roll (tf.roll) and ReverseSequence (tf.reverse_sequence).
 *
 * As elsewhere in rill, Roll's shift and axis (TF: constant tensor inputs) are ints attrs.
 * ReverseSequence takes seq_lengths as its second input (int32 or int64, one per batch entry)
 * with TF's attrs seq_dim and batch_dim. Both keep the input's shape. The rules here are
 * rill__permute_check, which the kernels (kernels/cpu/cpu_permute.c) apply again to the real
 * shapes.
 *
 * Gradients: Roll -> Roll by the negated shifts; ReverseSequence -> ReverseSequence of dy with
 * the same lengths (each is its own inverse); seq_lengths gets none. */
#include "ops_permute.h"

#include "ops_shape.h"

#include <stdio.h>
#include <string.h>

bool rill__permute_check(const rill_node *n, rill_shape x, rill_shape len, rill_status *s)
{
    char sh[256];
    if (strcmp(n->op->name, "Roll") == 0) {
        int ns, na;
        const int64_t *shift = rill__ints_attr(n, "shift", &ns);
        const int64_t *axis = rill__ints_attr(n, "axis", &na);
        if (!shift || !axis) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Roll '%s' needs the attrs shift and axis (ints)", n->name);
            return false;
        }
        if (ns != na) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Dimension 0 in both shapes must be equal, but are %d and %d. Shapes "
                            "are [%d] and [%d]. for '%s' (op: 'Roll') with input shapes: %s, "
                            "[%d], [%d].",
                            ns, na, ns, na, n->name, rill_shape_str(&x, sh, sizeof sh), ns, na);
            return false;
        }
        if (x.rank == 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "input must be 1-D or higher");
            return false;
        }
        for (int i = 0; x.rank > 0 && i < na; i++)
            if (axis[i] < -x.rank || axis[i] >= x.rank) {
                rill_status_set(s, RILL_INVALID_ARGUMENT, "axis %lld is out of range",
                                (long long)axis[i]);
                return false;
            }
        return true;
    }
    int64_t sd = rill__attr_int(n, "seq_dim", -1), bd = rill__attr_int(n, "batch_dim", 0);
    rill_shape l = len;
    if (l.rank >= 0 && l.rank != 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shape must be rank 1 but is rank %d for '%s' (op: 'ReverseSequence') "
                        "with input shapes: %s.",
                        l.rank, n->name, rill__input_shapes(n, sh, sizeof sh));
        return false;
    }
    if (sd == bd) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "seq_dim and batch_dim must not be the same: both %lld for '%s' (op: "
                        "'ReverseSequence')",
                        (long long)sd, n->name);
        return false;
    }
    if (sd < 0 || bd < 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "seq_dim and batch_dim must be >= 0, got %lld and %lld for '%s' (op: "
                        "'ReverseSequence')",
                        (long long)sd, (long long)bd, n->name);
        return false;
    }
    if (x.rank < 0) return true;
    if (sd >= x.rank || bd >= x.rank) {
        bool seq = sd >= x.rank;
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s must be < input rank: %lld vs. %d for '%s' (op: 'ReverseSequence') "
                        "with input shapes: %s.",
                        seq ? "seq_dim" : "batch_dim", (long long)(seq ? sd : bd), x.rank, n->name,
                        rill__input_shapes(n, sh, sizeof sh));
        return false;
    }
    if (l.rank == 1 && l.dims[0] >= 0 && x.dims[bd] >= 0 && l.dims[0] != x.dims[bd]) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Dimensions must be equal, but are %lld and %lld for '%s' (op: "
                        "'ReverseSequence') with input shapes: %s.",
                        (long long)x.dims[bd], (long long)l.dims[0], n->name,
                        rill__input_shapes(n, sh, sizeof sh));
        return false;
    }
    return true;
}

static void permute_shape(rill_node *n, rill_status *s)
{
    bool rs = n->ninputs == 2;
    if (rs) {
        rill_dtype lt = rill__in_dtype(n, 1);
        if (lt != RILL_INT32 && lt != RILL_INT64) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Value for attr 'Tlen' of %s is not in the list of allowed values: "
                            "int32, int64; NodeDef: {{node %s}}",
                            rill_dtype_name(lt), n->name);
            return;
        }
    }
    rill_shape x = rill__in_shape(n, 0);
    if (!rill__permute_check(n, x, rs ? rill__in_shape(n, 1) : rill_shape_vector(-1), s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = x;
}

static void roll_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    int ns, na;
    const int64_t *shift = rill__ints_attr(n, "shift", &ns);
    const int64_t *axis = rill__ints_attr(n, "axis", &na);
    int64_t neg[RILL_MAX_DIMS * 4];
    if (ns > (int)(sizeof neg / sizeof neg[0])) {
        rill__graph_fail(g, RILL_UNIMPLEMENTED, "Roll '%s': too many shifts for its gradient",
                         n->name);
        return;
    }
    for (int i = 0; i < ns; i++) neg[i] = -shift[i];
    rill__attr a[] = {RILL__A_INTS("shift", ns, neg), RILL__A_INTS("axis", na, axis)};
    dx[0] = (rill_output){rill__node_create(g, "Roll", NULL, dy, 1, a, 2), 0};
}

static void reverse_sequence_grad(rill_graph *g, rill_node *n, const rill_output *dy,
                                  rill_output *dx)
{
    rill_output in[] = {dy[0], n->inputs[1]};
    dx[0] =
        (rill_output){rill__node_create(g, "ReverseSequence", NULL, in, 2, n->attrs, n->nattrs), 0};
}

const rill__op_def rill__ops_permute[] = {
    {.name = "Roll",
     .default_name = "Roll",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = permute_shape,
     .grad = roll_grad},
    {.name = "ReverseSequence",
     .default_name = "ReverseSequence",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = permute_shape,
     .grad = reverse_sequence_grad},
    {0},
};
