/* ops_dilation.c - op definitions and gradient of Dilation2D (grayscale morphological dilation,
 * NHWC, float and double) and its backprops Dilation2DBackpropInput and
 * Dilation2DBackpropFilter, TensorFlow's ops.
 *
 * Dilation2D(input [N, H, W, C], filter [FH, FW, C]) gives [N, OH, OW, C]:
 *   out[b, y, x, c] = max over (i, j) of input[b, y*s0 + i*r0 - pt, x*s1 + j*r1 - pl, c]
 *                                       + filter[i, j, c]
 * over the taps inside the input. Attrs strides and rates (4 ints, 1 on batch and depth),
 * padding SAME or VALID; the output size is conv2d's with the effective filter size
 * (F - 1) * r + 1. The backprops take (input, filter, out_backprop) and route each gradient to
 * the tap that attained the maximum (the first one in row-major order on ties), as TF's CPU
 * kernels; they have no gradient, as in TF. tf.nn.erosion2d is composed from Dilation2D in
 * Python. Kernels: src/kernels/cpu/cpu_dilation.c. */
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

static bool check_attrs(const rill_node *n, rill_status *s)
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
    int64_t st[4], r[4];
    if (!ints4(n, "strides", "stride", st, s) || !ints4(n, "rates", "rates", r, s)) return false;
    if (st[0] != 1 || st[3] != 1) {
        rill_status_set(s, RILL_UNIMPLEMENTED,
                        "Current implementation does not yet support strides in the batch and "
                        "depth dimensions. (node '%s')",
                        n->name);
        return false;
    }
    if (r[0] != 1 || r[3] != 1) {
        rill_status_set(s, RILL_UNIMPLEMENTED,
                        "Current implementation does not yet support rates in the batch and "
                        "depth dimensions. (node '%s')",
                        n->name);
        return false;
    }
    for (int i = 1; i < 3; i++)
        if (st[i] < 1 || r[i] < 1) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "%s must be > 0, but got %lld (node '%s')",
                            st[i] < 1 ? "Stride" : "Rate", (long long)(st[i] < 1 ? st[i] : r[i]),
                            n->name);
            return false;
        }
    return true;
}

static void dims(const rill_node *n, int i, int rank, int64_t *d)
{
    rill_shape sh = rill__in_shape(n, i);
    for (int k = 0; k < rank; k++) d[k] = sh.rank == rank ? sh.dims[k] : -1;
}

/* Checks input 0 and 1 and computes the output dims od[4]. */
static bool forward_dims(rill_node *n, int64_t *od, rill_status *s)
{
    if (!rill__check_float(n, 0, "input", false, s) ||
        !rill__check_same_dtype(n, 1, "filter", 0, "input", s) ||
        !rill__check_rank(n, 0, 4, false, s) || !rill__check_rank(n, 1, 3, false, s) ||
        !check_attrs(n, s))
        return false;
    int64_t in[4], f[3], pad;
    dims(n, 0, 4, in);
    dims(n, 1, 3, f);
    if (!rill__merge_dim(n, in[3], f[2], &od[3], s)) return false;
    const int64_t *st = rill__node_attr(n, "strides")->v.ints.v;
    const int64_t *r = rill__node_attr(n, "rates")->v.ints.v;
    bool same = strcmp(rill__node_attr(n, "padding")->v.s, "SAME") == 0;
    od[0] = in[0];
    for (int i = 0; i < 2; i++) {
        if (f[i] < 0) {
            od[1 + i] = -1;
            continue;
        }
        char err[256];
        if (!rill__window_dim(in[1 + i], f[i], r[1 + i], st[1 + i], same, &od[1 + i], &pad, err,
                              sizeof err)) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "%s for '%s' (op: '%s')", err, n->name,
                            n->op->name);
            return false;
        }
    }
    return true;
}

static void dilation_shape(rill_node *n, rill_status *s)
{
    int64_t od[4];
    if (!forward_dims(n, od, s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_make(4, od);
}

static void backprop_shape(rill_node *n, rill_status *s)
{
    int64_t od[4], dy[4];
    if (!forward_dims(n, od, s) || !rill__check_same_dtype(n, 2, "out_backprop", 0, "input", s) ||
        !rill__check_rank(n, 2, 4, false, s))
        return;
    dims(n, 2, 4, dy);
    int64_t unused;
    for (int i = 0; i < 4; i++)
        if (!rill__merge_dim(n, od[i], dy[i], &unused, s)) return;
    bool input = strcmp(n->op->name, "Dilation2DBackpropInput") == 0;
    rill_shape sh = rill__in_shape(n, input ? 0 : 1);
    if (sh.rank < 0) {
        int64_t u[4] = {-1, -1, -1, -1};
        sh = rill_shape_make(input ? 4 : 3, u);
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = sh;
}

static rill_output make(rill_graph *g, const char *op, const rill_output *in, const rill_node *like)
{
    static const char *const names[] = {"strides", "rates", "padding"};
    rill__attr a[4];
    int na = 0;
    for (int i = 0; i < 3; i++) {
        const rill__attr *x = rill__node_attr(like, names[i]);
        if (x) a[na++] = *x;
    }
    a[na++] = RILL__A_TYPE("T", rill_output_dtype(in[0]));
    return (rill_output){rill__node_create(g, op, NULL, in, 3, a, na), 0};
}

static void dilation_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {n->inputs[0], n->inputs[1], dy[0]};
    dx[0] = make(g, "Dilation2DBackpropInput", in, n);
    dx[1] = make(g, "Dilation2DBackpropFilter", in, n);
}

const rill__op_def rill__ops_dilation[] = {
    {.name = "Dilation2D",
     .default_name = "Dilation2D",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .type_attr = "T",
     .shape = dilation_shape,
     .grad = dilation_grad},
    {.name = "Dilation2DBackpropInput",
     .default_name = "Dilation2DBackpropInput",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .type_attr = "T",
     .shape = backprop_shape},
    {.name = "Dilation2DBackpropFilter",
     .default_name = "Dilation2DBackpropFilter",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .type_attr = "T",
     .shape = backprop_shape},
    {0},
};
