/* ops_conv3d.c - op definitions and gradients of the 3-D windowed ops, NDHWC, float and double:
 * Conv3D, Conv3DBackpropInputV2, Conv3DBackpropFilterV2, MaxPool3D, AvgPool3D, MaxPool3DGrad and
 * AvgPool3DGrad, plus their window geometry (rill__window3d_init).
 *
 * Attributes are TensorFlow's: strides, ksize and dilations are int lists of 5 in NDHWC order,
 * padding "SAME" or "VALID", data_format "NDHWC" (NCDHW, which TensorFlow's CPU runs for the pools
 * only, is UNIMPLEMENTED here: the Python front end transposes to NDHWC around these ops). The
 * geometry of each spatial dimension is the 2-D ops' (rill__window_dim, ops_conv.c), and so are
 * the padding check and the size inputs (rill__size_input: input_sizes, filter_sizes and
 * orig_input_shape, int32 [5], static when a Const or a Shape node). The shape functions check
 * the attrs once, with TensorFlow's texts and error classes; the kernels (cpu_conv3d.c,
 * cl_conv3d.c) check only what depends on run-time shapes (kernels/window3d.c). */
#include "graph_internal.h"

#include <string.h>

static const int64_t ones5[5] = {1, 1, 1, 1, 1};

/* --- attributes --- */

/* The int list attr `name` as 5 values; ones when absent and optional. */
static bool attr5(const rill_node *n, const char *name, const char *what, bool required, int64_t *v,
                  rill_status *s)
{
    const rill__attr *a = rill__node_attr(n, name);
    if (!a && !required) {
        memcpy(v, ones5, sizeof ones5);
        return true;
    }
    if (!a || a->kind != RILL__ATTR_INTS || a->v.ints.n != 5) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s requires the %s attribute to contain 5 values, but got: %d",
                        n->op->name, what, a && a->kind == RILL__ATTR_INTS ? a->v.ints.n : 0);
        return false;
    }
    memcpy(v, a->v.ints.v, 5 * sizeof *v);
    return true;
}

static bool check_data_format(const rill_node *n, rill_status *s)
{
    const rill__attr *df = rill__node_attr(n, "data_format");
    const char *f = df && df->kind == RILL__ATTR_STRING ? df->v.s : "NDHWC";
    if (strcmp(f, "NDHWC") == 0) return true;
    if (strcmp(f, "NCDHW") == 0)
        rill_status_set(s, RILL_UNIMPLEMENTED,
                        "%s: rill's kernels take NDHWC data only: data_format NCDHW is "
                        "transposed by tf.nn's functions (node '%s')",
                        n->op->name, n->name);
    else
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Attr 'data_format' of '%s' Op passed string '%s' not in: \"NDHWC\", "
                        "\"NCDHW\".",
                        n->op->name, f);
    return false;
}

/* padding, data_format, strides, and dilations (convolutions) or ksize (pools). */
static bool check_attrs(const rill_node *n, bool conv, rill_status *s)
{
    if (!rill__check_padding(n, s) || !check_data_format(n, s)) return false;
    int64_t st[5], x[5];
    if (!attr5(n, "strides", "stride", true, st, s)) return false;
    for (int i = 1; i < 4; i++)
        if (st[i] < 1) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "Stride must be > 0, but got %lld",
                            (long long)st[i]);
            return false;
        }
    if (conv) {
        if (!attr5(n, "dilations", "dilation", false, x, s)) return false;
        if (st[0] != 1 || st[4] != 1) {
            rill_status_set(s, RILL_UNIMPLEMENTED,
                            "Current implementation does not yet support strides in the batch "
                            "and depth dimensions. (node '%s')",
                            n->name);
            return false;
        }
        for (int i = 1; i < 4; i++)
            if (x[i] < 1) {
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "Dilation rate must be >= 1, but got %lld", (long long)x[i]);
                return false;
            }
        if (x[0] != 1 || x[4] != 1) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Current implementation does not yet support dilations rates in the "
                            "batch and depth dimensions. (node '%s')",
                            n->name);
            return false;
        }
        return true;
    }
    if (!attr5(n, "ksize", "ksize", true, x, s)) return false;
    if (x[0] != 1 || st[0] != 1 || x[4] != 1 || st[4] != 1) {
        rill_status_set(s, RILL_UNIMPLEMENTED,
                        "Pooling is not yet supported on the %s dimension. (node '%s')",
                        x[0] != 1 || st[0] != 1 ? "batch" : "depth", n->name);
        return false;
    }
    for (int i = 1; i < 4; i++)
        if (x[i] < 1) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Sliding window ksize for dimension %d was zero. (node '%s')", i,
                            n->name);
            return false;
        }
    return true;
}

/* --- geometry --- */

bool rill__window3d_init(const rill_node *n, const int64_t *in, const int64_t *k, rill__window3d *w,
                         char *err, size_t errlen)
{
    const rill__attr *sa = rill__node_attr(n, "strides"), *da = rill__node_attr(n, "dilations");
    const int64_t *st = sa ? sa->v.ints.v : ones5, *d = da ? da->v.ints.v : ones5;
    const rill__attr *pa = rill__node_attr(n, "padding");
    bool same = pa && strcmp(pa->v.s, "SAME") == 0;
    memset(w, 0, sizeof *w);
    w->n = in[0], w->c = in[4];
    for (int i = 0; i < 3; i++) {
        w->in[i] = in[i + 1], w->k[i] = k[i], w->s[i] = st[i + 1], w->d[i] = d[i + 1];
        if (!rill__window_dim(w->in[i], k[i], w->d[i], w->s[i], same, &w->out[i], &w->pad[i], err,
                              errlen))
            return false;
    }
    return true;
}

/* Input i's dims as 5 (unknown: -1s). */
static void dims5(const rill_node *n, int i, int64_t *d)
{
    rill_shape sh = rill__in_shape(n, i);
    for (int k = 0; k < 5; k++) d[k] = sh.rank == 5 ? sh.dims[k] : -1;
}

/* The output spatial dims out[3] of the window k[3] over dims in[5] of n, with TensorFlow's
 * shape-function text for a VALID window larger than its input. */
static bool window_out(rill_node *n, const int64_t *in, const int64_t *k, int64_t *out,
                       rill_status *s)
{
    const rill__attr *pa = rill__node_attr(n, "padding");
    const rill__attr *da = rill__node_attr(n, "dilations");
    bool valid = strcmp(pa->v.s, "VALID") == 0;
    for (int i = 0; i < 3; i++) {
        int64_t eff = k[i] < 0 ? -1 : (k[i] - 1) * (da ? da->v.ints.v[i + 1] : 1) + 1;
        if (valid && in[i + 1] >= 0 && eff > in[i + 1]) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Negative dimension size caused by subtracting %lld from %lld for "
                            "'%s' (op: '%s')",
                            (long long)eff, (long long)in[i + 1], n->name, n->op->name);
            return false;
        }
    }
    rill__window3d w;
    char err[256];
    if (!rill__window3d_init(n, in, k, &w, err, sizeof err)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s for '%s' (op: '%s')", err, n->name,
                        n->op->name);
        return false;
    }
    memcpy(out, w.out, sizeof w.out);
    return true;
}

/* The input's channels c against the filter's in_depth fc (TensorFlow's texts: grouped
 * convolutions, where c is a multiple of fc, are not run on the CPU). */
static bool check_depth(const rill_node *n, int64_t c, int64_t fc, rill_status *s)
{
    if (c < 0 || fc < 0 || c == fc) return true;
    if (fc == 0 || c % fc != 0)
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Depth of input (%lld) is not a multiple of input depth of filter (%lld) "
                        "for '%s' (op: '%s')",
                        (long long)c, (long long)fc, n->name, n->op->name);
    else
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s: input and filter must have the same depth: %lld vs %lld (node '%s')",
                        n->op->name, (long long)c, (long long)fc, n->name);
    return false;
}

/* --- shape functions --- */

static void conv3d_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_float(n, 0, "input", false, s) ||
        !rill__check_same_dtype(n, 1, "filter", 0, "input", s) ||
        !rill__check_rank(n, 0, 5, false, s) || !rill__check_rank(n, 1, 5, false, s) ||
        !check_attrs(n, true, s))
        return;
    int64_t in[5], f[5], o[3];
    dims5(n, 0, in);
    dims5(n, 1, f);
    if (!check_depth(n, in[4], f[3], s) || !window_out(n, in, f, o, s)) return;
    int64_t od[5] = {in[0], o[0], o[1], o[2], f[4]};
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_make(5, od);
}

/* Conv3DBackpropInputV2(input_sizes, filter, out_backprop): dx of the input's shape. */
static void conv3d_bp_input_shape(rill_node *n, rill_status *s)
{
    rill_shape out;
    if (!rill__check_float(n, 1, "filter", false, s) ||
        !rill__check_same_dtype(n, 2, "out_backprop", 1, "filter", s) ||
        !rill__check_rank(n, 1, 5, false, s) || !rill__check_rank(n, 2, 5, false, s) ||
        !check_attrs(n, true, s) || !rill__size_input(n, 0, "input_sizes", 5, &out, s))
        return;
    int64_t f[5], dy[5], unused;
    dims5(n, 1, f);
    dims5(n, 2, dy);
    if (!check_depth(n, out.dims[4], f[3], s) || !rill__merge_dim(n, dy[4], f[4], &unused, s))
        return;
    if (out.dims[4] < 0) out.dims[4] = f[3];
    n->out_dtypes[0] = rill__in_dtype(n, 1);
    n->out_shapes[0] = out;
}

/* Conv3DBackpropFilterV2(input, filter_sizes, out_backprop): dw of the filter's shape. */
static void conv3d_bp_filter_shape(rill_node *n, rill_status *s)
{
    rill_shape out;
    if (!rill__check_float(n, 0, "input", false, s) ||
        !rill__check_same_dtype(n, 2, "out_backprop", 0, "input", s) ||
        !rill__check_rank(n, 0, 5, false, s) || !rill__check_rank(n, 2, 5, false, s) ||
        !check_attrs(n, true, s) || !rill__size_input(n, 1, "filter_sizes", 5, &out, s))
        return;
    int64_t in[5], dy[5];
    dims5(n, 0, in);
    dims5(n, 2, dy);
    if (!check_depth(n, in[4], out.dims[3], s) ||
        !rill__merge_dim(n, dy[4], out.dims[4], &out.dims[4], s))
        return;
    if (out.dims[3] < 0) out.dims[3] = in[4];
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = out;
}

static void pool3d_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_float(n, 0, "input", false, s) || !rill__check_rank(n, 0, 5, false, s) ||
        !check_attrs(n, false, s))
        return;
    int64_t in[5], o[3];
    dims5(n, 0, in);
    const int64_t *k = rill__node_attr(n, "ksize")->v.ints.v + 1;
    if (!window_out(n, in, k, o, s)) return;
    int64_t od[5] = {in[0], o[0], o[1], o[2], in[4]};
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_make(5, od);
}

/* MaxPool3DGrad(orig_input, orig_output, grad): dx of orig_input's shape. */
static void max_pool3d_grad_shape(rill_node *n, rill_status *s)
{
    if (!rill__check_float(n, 0, "orig_input", false, s) ||
        !rill__check_same_dtype(n, 1, "orig_output", 0, "orig_input", s) ||
        !rill__check_same_dtype(n, 2, "grad", 0, "orig_input", s) ||
        !rill__check_rank(n, 0, 5, false, s) || !rill__check_rank(n, 1, 5, false, s) ||
        !rill__check_rank(n, 2, 5, false, s) || !check_attrs(n, false, s))
        return;
    int64_t in[5];
    dims5(n, 0, in);
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill_shape_make(5, in);
}

/* AvgPool3DGrad(orig_input_shape, grad). */
static void avg_pool3d_grad_shape(rill_node *n, rill_status *s)
{
    rill_shape out;
    if (!rill__check_float(n, 1, "grad", false, s) || !rill__check_rank(n, 1, 5, false, s) ||
        !check_attrs(n, false, s) || !rill__size_input(n, 0, "orig_input_shape", 5, &out, s))
        return;
    int64_t dy[5];
    dims5(n, 1, dy);
    if (!rill__merge_dim(n, out.dims[4], dy[4], &out.dims[4], s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 1);
    n->out_shapes[0] = out;
}

/* --- gradients --- */

/* op over in[0..nin) with like's window attrs and T of the last input. */
static rill_output make(rill_graph *g, const char *op, const rill_output *in, int nin,
                        const rill_node *like)
{
    static const char *const names[] = {"strides", "padding", "data_format", "dilations", "ksize"};
    rill__attr a[6];
    int na = 0;
    for (int i = 0; i < 5; i++) {
        const rill__attr *x = rill__node_attr(like, names[i]);
        if (x) a[na++] = *x;
    }
    a[na++] = RILL__A_TYPE("T", rill_output_dtype(in[nin - 1]));
    return (rill_output){rill__node_create(g, op, NULL, in, nin, a, na), 0};
}

/* Conv3D(x, w): dx = Conv3DBackpropInputV2(shape(x), w, dy), dw = Conv3DBackpropFilterV2(x,
 * shape(w), dy). */
static void conv3d_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output x = n->inputs[0], w = n->inputs[1];
    rill_output bi[] = {rill_shape_of(g, x, NULL), w, dy[0]};
    rill_output bf[] = {x, rill_shape_of(g, w, NULL), dy[0]};
    dx[0] = make(g, "Conv3DBackpropInputV2", bi, 3, n);
    dx[1] = make(g, "Conv3DBackpropFilterV2", bf, 3, n);
}

/* Conv3DBackpropInputV2(sizes, w, d) is linear in w and in d. */
static void conv3d_bp_input_grad(rill_graph *g, rill_node *n, const rill_output *dy,
                                 rill_output *dx)
{
    rill_output w = n->inputs[1], d = n->inputs[2];
    rill_output bf[] = {dy[0], rill_shape_of(g, w, NULL), d};
    rill_output c[] = {dy[0], w};
    dx[0] = (rill_output){NULL, 0};
    dx[1] = make(g, "Conv3DBackpropFilterV2", bf, 3, n);
    dx[2] = make(g, "Conv3D", c, 2, n);
}

/* Conv3DBackpropFilterV2(x, sizes, d) is linear in x and in d. */
static void conv3d_bp_filter_grad(rill_graph *g, rill_node *n, const rill_output *dy,
                                  rill_output *dx)
{
    rill_output x = n->inputs[0], d = n->inputs[2];
    rill_output bi[] = {rill_shape_of(g, x, NULL), dy[0], d};
    rill_output c[] = {x, dy[0]};
    dx[0] = make(g, "Conv3DBackpropInputV2", bi, 3, n);
    dx[1] = (rill_output){NULL, 0};
    dx[2] = make(g, "Conv3D", c, 2, n);
}

static void max_pool3d_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {n->inputs[0], {n, 0}, dy[0]};
    dx[0] = make(g, "MaxPool3DGrad", in, 3, n);
}

static void avg_pool3d_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_output in[] = {rill_shape_of(g, n->inputs[0], NULL), dy[0]};
    dx[0] = make(g, "AvgPool3DGrad", in, 2, n);
}

/* AvgPool3DGrad is linear in its gradient input: its gradient is AvgPool3D of dy. */
static void avg_pool3d_grad_grad(rill_graph *g, rill_node *n, const rill_output *dy,
                                 rill_output *dx)
{
    dx[0] = (rill_output){NULL, 0};
    dx[1] = make(g, "AvgPool3D", dy, 1, n);
}

const rill__op_def rill__ops_conv3d[] = {
    {.name = "Conv3D",
     .default_name = "Conv3D",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .type_attr = "T",
     .shape = conv3d_shape,
     .grad = conv3d_grad},
    {.name = "Conv3DBackpropInputV2",
     .default_name = "Conv3DBackpropInputV2",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .type_attr = "T",
     .shape = conv3d_bp_input_shape,
     .grad = conv3d_bp_input_grad},
    {.name = "Conv3DBackpropFilterV2",
     .default_name = "Conv3DBackpropFilterV2",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .type_attr = "T",
     .shape = conv3d_bp_filter_shape,
     .grad = conv3d_bp_filter_grad},
    {.name = "MaxPool3D",
     .default_name = "MaxPool3D",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .type_attr = "T",
     .shape = pool3d_shape,
     .grad = max_pool3d_grad},
    {.name = "AvgPool3D",
     .default_name = "AvgPool3D",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .type_attr = "T",
     .shape = pool3d_shape,
     .grad = avg_pool3d_grad},
    {.name = "MaxPool3DGrad",
     .default_name = "MaxPool3DGrad",
     .min_inputs = 3,
     .max_inputs = 3,
     .noutputs = 1,
     .type_attr = "T",
     .shape = max_pool3d_grad_shape},
    {.name = "AvgPool3DGrad",
     .default_name = "AvgPool3DGrad",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .type_attr = "T",
     .shape = avg_pool3d_grad_shape,
     .grad = avg_pool3d_grad_grad},
    {0},
};
