/* ops_pool_argmax.c - op definitions and gradient of MaxPoolWithArgmax and its backprop
 * MaxPoolGradWithArgmax (NHWC, float and double), TensorFlow's ops.
 *
 * MaxPoolWithArgmax(input [N, H, W, C]) gives (output [N, OH, OW, C], argmax of the same
 * shape, Targmax int64 by default): argmax holds the flattened index of each maximum,
 * (y * W + x) * C + c, or ((b * H + y) * W + x) * C + c with include_batch_in_index; ties go to
 * the first in the window (row-major), as TF's CPU kernel. Attrs ksize, strides (4 ints, 1 on
 * batch and depth), padding SAME or VALID. MaxPoolGradWithArgmax(input, grad, argmax) adds each
 * grad element at its argmax (the gradient of output 0). Its own gradient is
 * MaxPoolGradGradWithArgmax, a gather of the incoming gradient at argmax (defined here too).
 * Kernels: src/kernels/cpu/cpu_pool_argmax.c. */
#include "graph_internal.h"

#include <string.h>

static bool ints4(const rill_node *n, const char *name, const char *what, int64_t *v,
                  rill_status *s)
{
    const rill__attr *a = rill__node_attr(n, name);
    if (!a || a->kind != RILL__ATTR_INTS || a->v.ints.n != 4) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s requires the %s attribute to contain 4 values, but got: %d",
                        n->op->name, what, a && a->kind == RILL__ATTR_INTS ? a->v.ints.n : 0);
        return false;
    }
    memcpy(v, a->v.ints.v, 4 * sizeof *v);
    return true;
}

/* The attrs: ksize, strides, padding, Targmax, include_batch_in_index. */
static bool check_attrs(const rill_node *n, int64_t *k, int64_t *st, bool *same, rill_status *s)
{
    const rill__attr *p = rill__node_attr(n, "padding");
    const char *ps = p && p->kind == RILL__ATTR_STRING ? p->v.s : "";
    if (strcmp(ps, "SAME") != 0 && strcmp(ps, "VALID") != 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'padding' of \"%s\" is not in the list of allowed "
                        "values: \"SAME\", \"VALID\" (node '%s', op '%s')",
                        ps, n->name, n->op->name);
        return false;
    }
    *same = strcmp(ps, "SAME") == 0;
    if (!ints4(n, "ksize", "ksize", k, s) || !ints4(n, "strides", "stride", st, s)) return false;
    if (k[0] != 1 || st[0] != 1 || k[3] != 1 || st[3] != 1) {
        rill_status_set(s, RILL_UNIMPLEMENTED,
                        "Pooling is not yet supported on the batch or depth dimension. (node "
                        "'%s')",
                        n->name);
        return false;
    }
    for (int i = 1; i < 3; i++)
        if (k[i] < 1 || st[i] < 1) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Sliding window %s for dimension %d must be > 0, but got %lld",
                            k[i] < 1 ? "ksize" : "stride", i, (long long)(k[i] < 1 ? k[i] : st[i]));
            return false;
        }
    rill_dtype ta = rill__attr_type(n, "Targmax", RILL_INT64);
    if (ta != RILL_INT32 && ta != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'Targmax' of %s is not in the list of allowed values: "
                        "int32, int64 (node '%s')",
                        rill_dtype_name(ta), n->name);
        return false;
    }
    return true;
}

static void dims4(const rill_node *n, int i, int64_t *d)
{
    rill_shape sh = rill__in_shape(n, i);
    for (int k = 0; k < 4; k++) d[k] = sh.rank == 4 ? sh.dims[k] : -1;
}

static void argmax_shape(rill_node *n, rill_status *s)
{
    int64_t k[4], st[4], in[4], pt, pl;
    bool same;
    if (!rill__check_float(n, 0, "input", false, s) || !rill__check_rank(n, 0, 4, false, s) ||
        !check_attrs(n, k, st, &same, s))
        return;
    dims4(n, 0, in);
    int64_t od[4] = {in[0], 0, 0, in[3]};
    char err[256];
    if (!rill__window_dim(in[1], k[1], 1, st[1], same, &od[1], &pt, err, sizeof err) ||
        !rill__window_dim(in[2], k[2], 1, st[2], same, &od[2], &pl, err, sizeof err)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s for '%s' (op: '%s')", err, n->name,
                        n->op->name);
        return;
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_make(4, od);
    n->out_dtypes[1] = rill__attr_type(n, "Targmax", RILL_INT64);
    n->out_shapes[1] = rill_shape_make(4, od);
}

static bool check_argmax_input(const rill_node *n, int i, rill_status *s)
{
    rill_dtype want = rill__attr_type(n, "Targmax", RILL_INT64), got = rill__in_dtype(n, i);
    if (got == want) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Input 'argmax' of '%s' Op has type %s that does not match expected type of "
                    "%s.",
                    n->op->name, rill_dtype_name(got), rill_dtype_name(want));
    return false;
}

/* MaxPoolGradWithArgmax(input, grad, argmax): the input's shape. */
static void grad_shape(rill_node *n, rill_status *s)
{
    int64_t k[4], st[4];
    bool same;
    if (!rill__check_float(n, 0, "input", false, s) ||
        !rill__check_same_dtype(n, 1, "grad", 0, "input", s) ||
        !rill__check_rank(n, 0, 4, false, s) || !rill__check_rank(n, 1, 4, false, s) ||
        !rill__check_rank(n, 2, 4, false, s) || !check_attrs(n, k, st, &same, s) ||
        !check_argmax_input(n, 2, s))
        return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
    if (n->out_shapes[0].rank < 0)
        n->out_shapes[0] = rill_shape_make(4, (int64_t[4]){-1, -1, -1, -1});
}

/* MaxPoolGradGradWithArgmax(input, grad [input's shape], argmax): the argmax's shape. */
static void grad_grad_shape(rill_node *n, rill_status *s)
{
    int64_t k[4], st[4];
    bool same;
    if (!rill__check_float(n, 0, "input", false, s) ||
        !rill__check_same_dtype(n, 1, "grad", 0, "input", s) ||
        !rill__check_rank(n, 0, 4, false, s) || !rill__check_rank(n, 1, 4, false, s) ||
        !rill__check_rank(n, 2, 4, false, s) || !check_attrs(n, k, st, &same, s) ||
        !check_argmax_input(n, 2, s))
        return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 2);
    if (n->out_shapes[0].rank < 0)
        n->out_shapes[0] = rill_shape_make(4, (int64_t[4]){-1, -1, -1, -1});
}

/* --- gradients --- */

static rill_output make(rill_graph *g, const char *op, const rill_output *in, const rill_node *like)
{
    static const char *const names[] = {"ksize", "strides", "padding", "include_batch_in_index"};
    rill__attr a[6];
    int na = 0;
    for (int i = 0; i < 4; i++) {
        const rill__attr *x = rill__node_attr(like, names[i]);
        if (x) a[na++] = *x;
    }
    a[na++] = RILL__A_TYPE("Targmax", rill_output_dtype(in[2]));
    a[na++] = RILL__A_TYPE("T", rill_output_dtype(in[0]));
    return (rill_output){rill__node_create(g, op, NULL, in, 3, a, na), 0};
}

static void argmax_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    if (!dy[0].node) {
        dx[0] = (rill_output){NULL, 0};
        return;
    }
    rill_output in[] = {n->inputs[0], dy[0], {n, 1}};
    dx[0] = make(g, "MaxPoolGradWithArgmax", in, n);
}

/* MaxPoolGradWithArgmax is linear in grad: its gradient there gathers dy at argmax. */
static void grad_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {n->inputs[0], dy[0], n->inputs[2]};
    dx[0] = (rill_output){NULL, 0};
    dx[1] = make(g, "MaxPoolGradGradWithArgmax", in, n);
    dx[2] = (rill_output){NULL, 0};
}

/* MaxPoolGradGradWithArgmax is linear in grad: its gradient scatters dy back. */
static void grad_grad_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {n->inputs[0], dy[0], n->inputs[2]};
    dx[0] = (rill_output){NULL, 0};
    dx[1] = make(g, "MaxPoolGradWithArgmax", in, n);
    dx[2] = (rill_output){NULL, 0};
}

const rill__op_def rill__ops_pool_argmax[] = {
    {.name = "MaxPoolWithArgmax",
     .default_name = "MaxPoolWithArgmax",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 2,
     .type_attr = "T",
     .shape = argmax_shape,
     .grad = argmax_grad},
    {.name = "MaxPoolGradWithArgmax",
     .default_name = "MaxPoolGradWithArgmax",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .type_attr = "T",
     .shape = grad_shape,
     .grad = grad_grad},
    {.name = "MaxPoolGradGradWithArgmax",
     .default_name = "MaxPoolGradGradWithArgmax",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .type_attr = "T",
     .shape = grad_grad_shape,
     .grad = grad_grad_grad},
    {0},
};
