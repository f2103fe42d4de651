/* ops_conv.c - op definitions, builders and gradients for the windowed ops, NHWC, float and
 * double: Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter, MaxPool, AvgPool, MaxPoolGrad and
 * AvgPoolGrad, plus the window geometry their kernels share (rill__window_init).
 *
 * Attributes are TensorFlow's: strides, ksize and dilations are int lists (RILL__ATTR_INTS) of 4
 * in NHWC order, padding is the string "SAME" or "VALID", data_format the string "NHWC" (the only
 * layout rill runs), T the element type (the kernel's dtype: input 0 of the backprops is int32).
 * The shape functions check the attrs once, with TensorFlow's texts; the
 * kernels trust them and check only what depends on run-time shapes. The size inputs of the
 * backprop ops (input_sizes, filter_sizes, orig_input_shape: int32 [4]) give a static output
 * shape when they are a Const or a Shape node, as Reshape's shape input does. */
#include "window_geom.h"
#include "graph_internal.h"

#include <string.h>

/* --- error helpers (TensorFlow's texts): the shared ones are in op_checks.c --- */

static bool check_int32(const rill_node *n, int i, const char *param, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, i);
    if (t == RILL_INT32) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Input '%s' of '%s' Op has type %s that does not match expected type of "
                    "int32.",
                    param, n->op->name, rill_dtype_name(t));
    return false;
}

/* --- attributes --- */

/* The int list attr `name` as 4 values; def (or NULL: absent is an error) when absent. */
static bool attr4(const rill_node *n, const char *name, const char *what, const int64_t *def,
                  int64_t *v, rill_status *s)
{
    const rill__attr *a = rill__node_attr(n, name);
    if (!a && def) {
        memcpy(v, def, 4 * sizeof *v);
        return true;
    }
    if (!a || a->kind != RILL__ATTR_INTS || a->v.ints.n != 4) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s requires the %s attribute to contain 4 values, but got: %d",
                        n->op->name, what, a && a->kind == RILL__ATTR_INTS ? a->v.ints.n : 0);
        return false;
    }
    memcpy(v, a->v.ints.v, 4 * sizeof *v);
    return true;
}

static const int64_t ones4[4] = {1, 1, 1, 1};

bool rill__check_padding(const rill_node *n, rill_status *s)
{
    const rill__attr *p = rill__node_attr(n, "padding");
    const char *ps = p && p->kind == RILL__ATTR_STRING ? p->v.s : "";
    if (strcmp(ps, "SAME") == 0 || strcmp(ps, "VALID") == 0) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Value for attr 'padding' of \"%s\" is not in the list of allowed "
                    "values: \"SAME\", \"VALID\" (node '%s', op '%s')",
                    ps, n->name, n->op->name);
    return false;
}

/* padding, data_format, strides (and, for Conv2D, dilations; for pools, ksize). */
static bool check_window_attrs(const rill_node *n, bool conv, rill_status *s)
{
    if (!rill__check_padding(n, s)) return false;
    const rill__attr *df = rill__node_attr(n, "data_format");
    if (df && (df->kind != RILL__ATTR_STRING || strcmp(df->v.s, "NHWC") != 0)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Invalid data format string: %s (node '%s')",
                        df->kind == RILL__ATTR_STRING ? df->v.s : "?", n->name);
        return false;
    }
    int64_t st[4], k[4];
    if (!attr4(n, "strides", "stride", NULL, st, s)) return false;
    if (conv) {
        if (st[0] != 1 || st[3] != 1) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Current implementation does not yet support strides in the batch "
                            "and depth dimensions. (node '%s')",
                            n->name);
            return false;
        }
        int64_t d[4];
        if (!attr4(n, "dilations", "dilation", ones4, d, s)) return false;
        if (d[0] != 1 || d[3] != 1) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Current implementation does not yet support dilations in the batch "
                            "and depth dimensions. (node '%s')",
                            n->name);
            return false;
        }
        for (int i = 1; i < 3; i++)
            if (d[i] < 1 || st[i] < 1) {
                rill_status_set(s, RILL_INVALID_ARGUMENT, "%s must be > 0, but got %lld",
                                d[i] < 1 ? "Dilation rate" : "Stride",
                                (long long)(d[i] < 1 ? d[i] : st[i]));
                return false;
            }
        return true;
    }
    if (!attr4(n, "ksize", "ksize", NULL, k, s)) return false;
    if (k[0] != 1 || st[0] != 1) {
        rill_status_set(s, RILL_UNIMPLEMENTED,
                        "Pooling is not yet supported on the batch dimension. (node '%s')",
                        n->name);
        return false;
    }
    if (k[3] != 1 || st[3] != 1) {
        rill_status_set(s, RILL_UNIMPLEMENTED,
                        "Depthwise pooling is not yet supported by rill (ksize and strides on the "
                        "depth dimension must be 1). (node '%s')",
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
    return true;
}

/* --- geometry --- */

/* TF's GetWindowedOutputSizeVerbose; in < 0 (unknown) gives -1. */
bool rill__window_dim(int64_t in, int64_t k, int64_t d, int64_t stride, bool same, int64_t *out,
                      int64_t *pad, char *err, size_t errlen)
{
    if (rill__window_size(in, k, stride, d, same, out, pad)) return true;
    snprintf(err, errlen,
             "Computed output size would be negative: %lld [input_size: %lld, "
             "effective_filter_size: %lld, stride: %lld]",
             (long long)*out, (long long)in, (long long)((k - 1) * d + 1), (long long)stride);
    return false;
}

bool rill__window_init(const rill_node *n, const int64_t *in, int64_t kh, int64_t kw,
                       rill__window *w, char *err, size_t errlen)
{
    int64_t st[4], d[4];
    const rill__attr *sa = rill__node_attr(n, "strides"), *da = rill__node_attr(n, "dilations");
    memcpy(st, sa ? sa->v.ints.v : ones4, sizeof st);
    memcpy(d, da ? da->v.ints.v : ones4, sizeof d);
    const rill__attr *pa = rill__node_attr(n, "padding");
    bool same = pa && strcmp(pa->v.s, "SAME") == 0;
    memset(w, 0, sizeof *w);
    w->n = in[0], w->ih = in[1], w->iw = in[2], w->c = in[3];
    w->kh = kh, w->kw = kw;
    w->sh = st[1], w->sw = st[2], w->dh = d[1], w->dw = d[2];
    return rill__window_dim(w->ih, kh, w->dh, w->sh, same, &w->oh, &w->pt, err, errlen) &&
           rill__window_dim(w->iw, kw, w->dw, w->sw, same, &w->ow, &w->pl, err, errlen);
}

/* Input i's dims as 4 (unknown: -1s). */
static void dims4(const rill_node *n, int i, int64_t *d)
{
    rill_shape sh = rill__in_shape(n, i);
    for (int k = 0; k < 4; k++) d[k] = sh.rank == 4 ? sh.dims[k] : -1;
}

/* The output spatial dims of the window over input i of n (kh, kw known or -1). */
static bool window_out(rill_node *n, const int64_t *in, int64_t kh, int64_t kw, int64_t *oh,
                       int64_t *ow, rill_status *s)
{
    rill__window w;
    char err[256];
    if (!rill__window_init(n, in, kh, kw, &w, err, sizeof err)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s for '%s' (op: '%s')", err, n->name,
                        n->op->name);
        return false;
    }
    *oh = w.oh, *ow = w.ow;
    return true;
}

bool rill__size_input(const rill_node *n, int i, const char *param, int rank, rill_shape *out,
                      rill_status *s)
{
    if (!check_int32(n, i, param, s)) return false;
    rill_shape vs = rill__in_shape(n, i);
    if (vs.rank >= 0 && (vs.rank != 1 || (vs.dims[0] >= 0 && vs.dims[0] != rank))) {
        char b[96];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s: %s must be a vector of %d sizes, got shape %s (node '%s')",
                        n->op->name, param, rank, rill_shape_str(&vs, b, sizeof b), n->name);
        return false;
    }
    int64_t d[RILL_MAX_DIMS];
    for (int k = 0; k < rank; k++) d[k] = -1;
    rill_output so = n->inputs[i];
    if (strcmp(so.node->op->name, "Const") == 0) {
        const rill_tensor *t = rill__node_attr(so.node, "value")->v.tensor;
        for (int k = 0; k < rank; k++) {
            d[k] = rill_tensor_get_int64(t, k);
            if (d[k] < 0) {
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "%s: %s[%d] = %lld must be >= 0 (node '%s')", n->op->name, param, k,
                                (long long)d[k], n->name);
                return false;
            }
        }
    } else if (strcmp(so.node->op->name, "Shape") == 0) {
        rill_shape src = rill__in_shape(so.node, 0);
        if (src.rank == rank) memcpy(d, src.dims, (size_t)rank * sizeof *d);
    }
    *out = rill_shape_make(rank, d);
    return true;
}

/* --- shape functions --- */

static void conv2d_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_float(n, 0, "input", false, s) ||
        !rill__check_same_dtype(n, 1, "filter", 0, "input", s) ||
        !rill__check_rank(n, 0, 4, false, s) || !rill__check_rank(n, 1, 4, false, s) ||
        !check_window_attrs(n, true, s))
        return;
    int64_t in[4], f[4], depth, oh, ow;
    dims4(n, 0, in);
    dims4(n, 1, f);
    if (!rill__merge_dim(n, in[3], f[2], &depth, s) || !window_out(n, in, f[0], f[1], &oh, &ow, s))
        return;
    int64_t od[4] = {in[0], oh, ow, f[3]};
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_make(4, od);
}

/* Conv2DBackpropInput(input_sizes, filter, out_backprop): dx of the input's shape. */
static void conv2d_bp_input_shape(rill_node *n, rill_status *s)
{
    rill_shape out;
    if (!rill__check_float(n, 1, "filter", false, s) ||
        !rill__check_same_dtype(n, 2, "out_backprop", 1, "filter", s) ||
        !rill__check_rank(n, 1, 4, false, s) || !rill__check_rank(n, 2, 4, false, s) ||
        !check_window_attrs(n, true, s) || !rill__size_input(n, 0, "input_sizes", 4, &out, s))
        return;
    int64_t f[4], dy[4], unused;
    dims4(n, 1, f);
    dims4(n, 2, dy);
    if (!rill__merge_dim(n, out.dims[3], f[2], &out.dims[3], s) ||
        !rill__merge_dim(n, dy[3], f[3], &unused, s))
        return;
    n->out_dtypes[0] = rill__in_dtype(n, 1);
    n->out_shapes[0] = out;
}

/* Conv2DBackpropFilter(input, filter_sizes, out_backprop): dw of the filter's shape. */
static void conv2d_bp_filter_shape(rill_node *n, rill_status *s)
{
    rill_shape out;
    if (!rill__check_float(n, 0, "input", false, s) ||
        !rill__check_same_dtype(n, 2, "out_backprop", 0, "input", s) ||
        !rill__check_rank(n, 0, 4, false, s) || !rill__check_rank(n, 2, 4, false, s) ||
        !check_window_attrs(n, true, s) || !rill__size_input(n, 1, "filter_sizes", 4, &out, s))
        return;
    int64_t in[4], dy[4];
    dims4(n, 0, in);
    dims4(n, 2, dy);
    if (!rill__merge_dim(n, in[3], out.dims[2], &out.dims[2], s) ||
        !rill__merge_dim(n, dy[3], out.dims[3], &out.dims[3], s))
        return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = out;
}

static void pool_shape(rill_node *n, rill_status *s)
{
    /* AvgPool also takes half (cpu_pool_half.c); MaxPool float and double. */
    bool half = strcmp(n->op->name, "AvgPool") == 0;
    if (!rill__check_float(n, 0, "input", half, s) || !rill__check_rank(n, 0, 4, false, s) ||
        !check_window_attrs(n, false, s))
        return;
    int64_t in[4], oh, ow;
    dims4(n, 0, in);
    const int64_t *k = rill__node_attr(n, "ksize")->v.ints.v;
    if (!window_out(n, in, k[1], k[2], &oh, &ow, s)) return;
    int64_t od[4] = {in[0], oh, ow, in[3]};
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_make(4, od);
}

/* MaxPoolGrad(orig_input, orig_output, grad): dx of orig_input's shape. */
static void max_pool_grad_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_float(n, 0, "orig_input", false, s) ||
        !rill__check_same_dtype(n, 1, "orig_output", 0, "orig_input", s) ||
        !rill__check_same_dtype(n, 2, "grad", 0, "orig_input", s) ||
        !rill__check_rank(n, 0, 4, false, s) || !rill__check_rank(n, 1, 4, false, s) ||
        !rill__check_rank(n, 2, 4, false, s) || !check_window_attrs(n, false, s))
        return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
    if (n->out_shapes[0].rank < 0)
        n->out_shapes[0] = rill_shape_make(4, (int64_t[4]){-1, -1, -1, -1});
}

/* AvgPoolGrad(orig_input_shape, grad). */
static void avg_pool_grad_shape(rill_node *n, rill_status *s)
{
    rill_shape out;
    if (!rill__check_float(n, 1, "grad", true, s) || !rill__check_rank(n, 1, 4, false, s) ||
        !check_window_attrs(n, false, s) || !rill__size_input(n, 0, "orig_input_shape", 4, &out, s))
        return;
    int64_t dy[4];
    dims4(n, 1, dy);
    if (!rill__merge_dim(n, out.dims[3], dy[3], &out.dims[3], s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 1);
    n->out_shapes[0] = out;
}

/* --- building --- */

static rill_output out0(rill_node *n)
{
    return (rill_output){n, 0};
}

/* The window attrs of n (strides, padding, data_format, and dilations or ksize when it has
 * them) into a; returns the count. */
static int copy_window_attrs(const rill_node *n, rill__attr *a)
{
    static const char *const names[] = {"strides", "padding", "data_format", "dilations", "ksize"};
    int na = 0;
    for (int i = 0; i < 5; i++) {
        const rill__attr *x = rill__node_attr(n, names[i]);
        if (x) a[na++] = *x;
    }
    return na;
}

static rill_output make(rill_graph *g, const char *op, const rill_output *in, int nin,
                        const rill_node *like, const char *name)
{
    rill__attr a[6];
    int na = copy_window_attrs(like, a);
    a[na++] = RILL__A_TYPE("T", rill_output_dtype(in[nin - 1]));
    return out0(rill__node_create(g, op, name, in, nin, a, na));
}

/* Builds op with strides, padding, data_format "NHWC" and one more int list (dilations, ksize;
 * NULL: none). */
static rill_output build(rill_graph *g, const char *op, const rill_output *in, int nin,
                         const int *strides, const char *padding, const char *extra_name,
                         const int *extra, const char *name)
{
    int64_t st[4] = {0}, ex[4] = {0};
    for (int i = 0; i < 4; i++) {
        st[i] = strides ? strides[i] : 0;
        ex[i] = extra ? extra[i] : 0;
    }
    rill__attr a[5] = {RILL__A_INTS("strides", strides ? 4 : 0, st),
                       RILL__A_STRING("padding", padding ? padding : ""),
                       RILL__A_STRING("data_format", "NHWC"),
                       RILL__A_TYPE("T", rill_output_dtype(in[nin - 1]))};
    int na = 4;
    if (extra) a[na++] = RILL__A_INTS(extra_name, 4, ex);
    return out0(rill__node_create(g, op, name, in, nin, a, na));
}

/* --- gradients --- */

/* Conv2D(x, w): dx = Conv2DBackpropInput(shape(x), w, dy), dw = Conv2DBackpropFilter(x,
 * shape(w), dy). */
static void conv2d_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output x = n->inputs[0], w = n->inputs[1];
    rill_output bi[] = {rill_shape_of(g, x, NULL), w, dy[0]};
    rill_output bf[] = {x, rill_shape_of(g, w, NULL), dy[0]};
    dx[0] = make(g, "Conv2DBackpropInput", bi, 3, n, NULL);
    dx[1] = make(g, "Conv2DBackpropFilter", bf, 3, n, NULL);
}

/* Conv2DBackpropInput(sizes, w, d) is linear in w and in d: d/dw = Conv2DBackpropFilter(dy,
 * shape(w), d), d/dd = Conv2D(dy, w). */
static void conv2d_bp_input_grad(rill_graph *g, rill_node *n, const rill_output *dy,
                                 rill_output *dx)
{
    rill_output w = n->inputs[1], d = n->inputs[2];
    rill_output bf[] = {dy[0], rill_shape_of(g, w, NULL), d};
    rill_output c[] = {dy[0], w};
    dx[0] = (rill_output){NULL, 0};
    dx[1] = make(g, "Conv2DBackpropFilter", bf, 3, n, NULL);
    dx[2] = make(g, "Conv2D", c, 2, n, NULL);
}

/* Conv2DBackpropFilter(x, sizes, d): d/dx = Conv2DBackpropInput(shape(x), dy, d), d/dd =
 * Conv2D(x, dy). */
static void conv2d_bp_filter_grad(rill_graph *g, rill_node *n, const rill_output *dy,
                                  rill_output *dx)
{
    rill_output x = n->inputs[0], d = n->inputs[2];
    rill_output bi[] = {rill_shape_of(g, x, NULL), dy[0], d};
    rill_output c[] = {x, dy[0]};
    dx[0] = make(g, "Conv2DBackpropInput", bi, 3, n, NULL);
    dx[1] = (rill_output){NULL, 0};
    dx[2] = make(g, "Conv2D", c, 2, n, NULL);
}

static void max_pool_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {n->inputs[0], out0(n), dy[0]};
    dx[0] = make(g, "MaxPoolGrad", in, 3, n, NULL);
}

static void avg_pool_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {rill_shape_of(g, n->inputs[0], NULL), dy[0]};
    dx[0] = make(g, "AvgPoolGrad", in, 2, n, NULL);
}

/* AvgPoolGrad is linear in its gradient input: its gradient is AvgPool of dy. */
static void avg_pool_grad_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = (rill_output){NULL, 0};
    dx[1] = make(g, "AvgPool", dy, 1, n, NULL);
}

const rill__op_def rill__ops_conv[] = {
    /* Only in execution graphs: the partitioner's Conv2D + BiasAdd (+ Relu, attr activation) on
     * the CPU (runtime/partition.c), with Conv2D's attrs; inputs (input, filter, bias). */
    {.name = "_FusedConv2D",
     .default_name = "_FusedConv2D",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .type_attr = "T",
     .shape = conv2d_shape},
    {.name = "Conv2D",
     .default_name = "Conv2D",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .type_attr = "T",
     .shape = conv2d_shape,
     .grad = conv2d_grad},
    {.name = "Conv2DBackpropInput",
     .default_name = "Conv2DBackpropInput",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .type_attr = "T",
     .shape = conv2d_bp_input_shape,
     .grad = conv2d_bp_input_grad},
    {.name = "Conv2DBackpropFilter",
     .default_name = "Conv2DBackpropFilter",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .type_attr = "T",
     .shape = conv2d_bp_filter_shape,
     .grad = conv2d_bp_filter_grad},
    {.name = "MaxPool",
     .default_name = "MaxPool",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .type_attr = "T",
     .shape = pool_shape,
     .grad = max_pool_grad},
    {.name = "AvgPool",
     .default_name = "AvgPool",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .type_attr = "T",
     .shape = pool_shape,
     .grad = avg_pool_grad},
    {.name = "MaxPoolGrad",
     .default_name = "MaxPoolGrad",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .type_attr = "T",
     .shape = max_pool_grad_shape},
    {.name = "AvgPoolGrad",
     .default_name = "AvgPoolGrad",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .type_attr = "T",
     .shape = avg_pool_grad_shape,
     .grad = avg_pool_grad_grad},
    {0},
};

/* --- public builders --- */

rill_output rill_conv2d(rill_graph *g, rill_output input, rill_output filter, const int strides[4],
                        const char *padding, const int *dilations, const char *name)
{
    rill_output in[] = {input, filter};
    return build(g, "Conv2D", in, 2, strides, padding, "dilations", dilations, name);
}

rill_output rill_conv2d_backprop_input(rill_graph *g, rill_output input_sizes, rill_output filter,
                                       rill_output out_backprop, const int strides[4],
                                       const char *padding, const int *dilations, const char *name)
{
    rill_output in[] = {input_sizes, filter, out_backprop};
    return build(g, "Conv2DBackpropInput", in, 3, strides, padding, "dilations", dilations, name);
}

rill_output rill_conv2d_backprop_filter(rill_graph *g, rill_output input, rill_output filter_sizes,
                                        rill_output out_backprop, const int strides[4],
                                        const char *padding, const int *dilations, const char *name)
{
    rill_output in[] = {input, filter_sizes, out_backprop};
    return build(g, "Conv2DBackpropFilter", in, 3, strides, padding, "dilations", dilations, name);
}

rill_output rill_max_pool(rill_graph *g, rill_output x, const int ksize[4], const int strides[4],
                          const char *padding, const char *name)
{
    return build(g, "MaxPool", &x, 1, strides, padding, "ksize", ksize, name);
}

rill_output rill_avg_pool(rill_graph *g, rill_output x, const int ksize[4], const int strides[4],
                          const char *padding, const char *name)
{
    return build(g, "AvgPool", &x, 1, strides, padding, "ksize", ksize, name);
}

rill_output rill_max_pool_grad(rill_graph *g, rill_output orig_input, rill_output orig_output,
                               rill_output grad, const int ksize[4], const int strides[4],
                               const char *padding, const char *name)
{
    rill_output in[] = {orig_input, orig_output, grad};
    return build(g, "MaxPoolGrad", in, 3, strides, padding, "ksize", ksize, name);
}

rill_output rill_avg_pool_grad(rill_graph *g, rill_output orig_input_shape, rill_output grad,
                               const int ksize[4], const int strides[4], const char *padding,
                               const char *name)
{
    rill_output in[] = {orig_input_shape, grad};
    return build(g, "AvgPoolGrad", in, 2, strides, padding, "ksize", ksize, name);
}
