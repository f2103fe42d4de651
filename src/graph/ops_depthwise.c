/* ops_depthwise.c - op definitions, builders and gradients of DepthwiseConv2dNative and its two
 * backprops, DepthwiseConv2dNativeBackpropInput and DepthwiseConv2dNativeBackpropFilter (NHWC).
 *
 * DepthwiseConv2dNative(input [N, H, W, C], filter [KH, KW, C, M]) gives [N, OH, OW, C * M]:
 * channel c of the input is convolved with the M filters filter[:, :, c, :], output channel
 * c * M + m. The attrs are Conv2D's (strides, padding SAME or VALID, data_format NHWC,
 * dilations; rill__window_init's geometry); TensorFlow's checks and texts: strides of 1 on the
 * batch and depth dimensions (rows and columns may differ, as TF 2.15 allows). The backprops take
 * their output's shape as an int32 [4] input, static when it is a Const or a Shape node (as in
 * ops_conv.c). Kernels: src/kernels/cpu/cpu_depthwise.c. */
#include "graph_internal.h"

#include <string.h>

static bool ints4(const rill_node *n, const char *name, bool required, int64_t *v, rill_status *s)
{
    const rill__attr *a = rill__node_attr(n, name);
    if (!a && !required) {
        for (int i = 0; i < 4; i++) v[i] = 1;
        return true;
    }
    if (!a || a->kind != RILL__ATTR_INTS || a->v.ints.n != 4) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s requires the %s attribute to contain 4 values, but got: %d",
                        n->op->name, name, a && a->kind == RILL__ATTR_INTS ? a->v.ints.n : 0);
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
    const rill__attr *df = rill__node_attr(n, "data_format");
    if (df && (df->kind != RILL__ATTR_STRING || strcmp(df->v.s, "NHWC") != 0)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Invalid data format string: %s (node '%s')",
                        df->kind == RILL__ATTR_STRING ? df->v.s : "?", n->name);
        return false;
    }
    int64_t st[4], d[4];
    if (!ints4(n, "strides", true, st, s) || !ints4(n, "dilations", false, d, s)) return false;
    if (st[0] != 1 || st[3] != 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Current implementation does not yet support strides in the batch and "
                        "depth dimensions. (node '%s')",
                        n->name);
        return false;
    }
    if (d[0] != 1 || d[3] != 1 || d[1] < 1 || d[2] < 1 || st[1] < 1 || st[2] < 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s: strides and dilations must be positive, and dilations 1 in the "
                        "batch and depth dimensions (node '%s')",
                        n->op->name, n->name);
        return false;
    }
    return true;
}

static void dims4(const rill_node *n, int i, int64_t *d)
{
    rill_shape sh = rill__in_shape(n, i);
    for (int k = 0; k < 4; k++) d[k] = sh.rank == 4 ? sh.dims[k] : -1;
}

/* The size held by int32 [4] input i: static when a Const or a Shape node. */
static bool size_input(const rill_node *n, int i, const char *param, int64_t *d, rill_status *s)
{
    if (rill__in_dtype(n, i) != RILL_INT32) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input '%s' of '%s' Op has type %s that does not match expected type of "
                        "int32.",
                        param, n->op->name, rill_dtype_name(rill__in_dtype(n, i)));
        return false;
    }
    rill_shape vs = rill__in_shape(n, i);
    if (vs.rank >= 0 && (vs.rank != 1 || (vs.dims[0] >= 0 && vs.dims[0] != 4))) {
        char b[96];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s: %s must be a vector of 4 sizes, got shape %s (node '%s')", n->op->name,
                        param, rill_shape_str(&vs, b, sizeof b), n->name);
        return false;
    }
    for (int k = 0; k < 4; k++) d[k] = -1;
    rill_output so = n->inputs[i];
    if (strcmp(so.node->op->name, "Const") == 0) {
        const rill_tensor *t = rill__node_attr(so.node, "value")->v.tensor;
        for (int k = 0; k < 4; k++) d[k] = rill_tensor_get_int64(t, k);
    } else if (strcmp(so.node->op->name, "Shape") == 0) {
        rill_shape src = rill__in_shape(so.node, 0);
        if (src.rank == 4) memcpy(d, src.dims, 4 * sizeof *d);
    }
    return true;
}

static bool merge(const rill_node *n, int64_t *a, int64_t b, rill_status *s)
{
    return rill__merge_dim(n, *a, b, a, s);
}

static void depthwise_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_float(n, 0, "input", true, s) ||
        !rill__check_same_dtype(n, 1, "filter", 0, "input", s) ||
        !rill__check_rank(n, 0, 4, false, s) || !rill__check_rank(n, 1, 4, false, s) ||
        !check_attrs(n, s))
        return;
    int64_t in[4], f[4];
    dims4(n, 0, in);
    dims4(n, 1, f);
    if (!merge(n, &in[3], f[2], s)) return;
    rill__window w;
    char err[256];
    if (!rill__window_init(n, in, f[0], f[1], &w, err, sizeof err)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s for '%s' (op: '%s')", err, n->name,
                        n->op->name);
        return;
    }
    int64_t od[4] = {in[0], w.oh, w.ow, in[3] >= 0 && f[3] >= 0 ? in[3] * f[3] : -1};
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_make(4, od);
}

static void bp_input_shape(rill_node *n, rill_status *s)
{
    int64_t out[4], f[4];
    if (!rill__check_float(n, 1, "filter", true, s) ||
        !rill__check_same_dtype(n, 2, "out_backprop", 1, "filter", s) ||
        !rill__check_rank(n, 1, 4, false, s) || !rill__check_rank(n, 2, 4, false, s) ||
        !check_attrs(n, s) || !size_input(n, 0, "input_sizes", out, s))
        return;
    dims4(n, 1, f);
    if (!merge(n, &out[3], f[2], s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 1);
    n->out_shapes[0] = rill_shape_make(4, out);
}

static void bp_filter_shape(rill_node *n, rill_status *s)
{
    int64_t out[4], in[4];
    if (!rill__check_float(n, 0, "input", true, s) ||
        !rill__check_same_dtype(n, 2, "out_backprop", 0, "input", s) ||
        !rill__check_rank(n, 0, 4, false, s) || !rill__check_rank(n, 2, 4, false, s) ||
        !check_attrs(n, s) || !size_input(n, 1, "filter_sizes", out, s))
        return;
    dims4(n, 0, in);
    if (!merge(n, &out[2], in[3], s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_make(4, out);
}

/* --- gradients --- */

static rill_output make(rill_graph *g, const char *op, const rill_output *in, int nin,
                        const rill_node *like)
{
    static const char *const names[] = {"strides", "padding", "data_format", "dilations"};
    rill__attr a[5];
    int na = 0;
    for (int i = 0; i < 4; i++) {
        const rill__attr *x = rill__node_attr(like, names[i]);
        if (x) a[na++] = *x;
    }
    a[na++] = RILL__A_TYPE("T", rill_output_dtype(in[nin - 1]));
    return (rill_output){rill__node_create(g, op, NULL, in, nin, a, na), 0};
}

static void depthwise_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output x = n->inputs[0], w = n->inputs[1];
    rill_output bi[] = {rill_shape_of(g, x, NULL), w, dy[0]};
    rill_output bf[] = {x, rill_shape_of(g, w, NULL), dy[0]};
    dx[0] = make(g, "DepthwiseConv2dNativeBackpropInput", bi, 3, n);
    dx[1] = make(g, "DepthwiseConv2dNativeBackpropFilter", bf, 3, n);
}

/* BackpropInput(sizes, w, d) is linear in w and d: d/dw = BackpropFilter(dy, shape(w), d),
 * d/dd = Depthwise(dy, w). */
static void bp_input_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output w = n->inputs[1], d = n->inputs[2];
    rill_output bf[] = {dy[0], rill_shape_of(g, w, NULL), d};
    rill_output c[] = {dy[0], w};
    dx[0] = (rill_output){NULL, 0};
    dx[1] = make(g, "DepthwiseConv2dNativeBackpropFilter", bf, 3, n);
    dx[2] = make(g, "DepthwiseConv2dNative", c, 2, n);
}

/* BackpropFilter(x, sizes, d): d/dx = BackpropInput(shape(x), dy, d), d/dd = Depthwise(x, dy). */
static void bp_filter_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output x = n->inputs[0], d = n->inputs[2];
    rill_output bi[] = {rill_shape_of(g, x, NULL), dy[0], d};
    rill_output c[] = {x, dy[0]};
    dx[0] = make(g, "DepthwiseConv2dNativeBackpropInput", bi, 3, n);
    dx[1] = (rill_output){NULL, 0};
    dx[2] = make(g, "DepthwiseConv2dNative", c, 2, n);
}

const rill__op_def rill__ops_depthwise[] = {
    {.name = "DepthwiseConv2dNative",
     .default_name = "DepthwiseConv2dNative",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .type_attr = "T",
     .shape = depthwise_shape,
     .grad = depthwise_grad},
    {.name = "DepthwiseConv2dNativeBackpropInput",
     .default_name = "DepthwiseConv2dNativeBackpropInput",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .type_attr = "T",
     .shape = bp_input_shape,
     .grad = bp_input_grad},
    {.name = "DepthwiseConv2dNativeBackpropFilter",
     .default_name = "DepthwiseConv2dNativeBackpropFilter",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .type_attr = "T",
     .shape = bp_filter_shape,
     .grad = bp_filter_grad},
    {0},
};
