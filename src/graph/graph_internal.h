/* graph_internal.h - the graph layer's internals: nodes, attributes and the op registry.
 *
 * An op definition (rill__op_def) holds what is true of an op whatever device runs it: its
 * arity, which inputs must be variable references, its shape function (dtype and shape inference
 * plus validation at build time), its gradient function, and whether it is stateful. Kernels
 * live in the kernels layer, keyed by (op, device type, dtype).
 *
 * Builders create nodes with rill__node_create, which checks the sticky status, names the node
 * inside the current scopes, runs the shape function and records any error on the graph. */
#ifndef RILL_GRAPH_INTERNAL_H
#define RILL_GRAPH_INTERNAL_H

#include <rill/graph.h>
#include <rill/ops.h>
#include <rill/train.h>

#include "../core/core.h"

typedef enum rill__attr_kind {
    RILL__ATTR_INT,
    RILL__ATTR_FLOAT,
    RILL__ATTR_BOOL,
    RILL__ATTR_TYPE,
    RILL__ATTR_SHAPE,
    RILL__ATTR_TENSOR,
    RILL__ATTR_STRING,
    RILL__ATTR_INTS,
} rill__attr_kind;

typedef struct rill__attr {
    const char *name; /* static string */
    rill__attr_kind kind;
    union {
        int64_t i;
        double f;
        bool b;
        rill_dtype type;
        rill_shape shape;
        rill_tensor *tensor; /* borrowed by the builder, referenced by the node */
        const char *s;       /* copied by the node */
        struct {
            int n;
            const int64_t *v; /* copied by the node */
        } ints;
    } v;
} rill__attr;

#define RILL__A_INT(nm, x)   ((rill__attr){.name = (nm), .kind = RILL__ATTR_INT, .v.i = (x)})
#define RILL__A_FLOAT(nm, x) ((rill__attr){.name = (nm), .kind = RILL__ATTR_FLOAT, .v.f = (x)})
#define RILL__A_BOOL(nm, x)  ((rill__attr){.name = (nm), .kind = RILL__ATTR_BOOL, .v.b = (x)})
#define RILL__A_TYPE(nm, x)  ((rill__attr){.name = (nm), .kind = RILL__ATTR_TYPE, .v.type = (x)})
#define RILL__A_SHAPE(nm, x) ((rill__attr){.name = (nm), .kind = RILL__ATTR_SHAPE, .v.shape = (x)})
#define RILL__A_TENSOR(nm, x)                                                                      \
    ((rill__attr){.name = (nm), .kind = RILL__ATTR_TENSOR, .v.tensor = (x)})
#define RILL__A_STRING(nm, x) ((rill__attr){.name = (nm), .kind = RILL__ATTR_STRING, .v.s = (x)})
#define RILL__A_INTS(nm, cnt, arr)                                                                 \
    ((rill__attr){.name = (nm), .kind = RILL__ATTR_INTS, .v.ints = {(cnt), (arr)}})

typedef struct rill__op_def rill__op_def;

struct rill_node {
    rill_graph *graph;
    int id;
    char *name;
    const rill__op_def *op;
    rill_output *inputs;
    int ninputs;
    rill_node **control_inputs;
    int ncontrol, ccap;
    int noutputs;
    rill_dtype *out_dtypes;
    rill_shape *out_shapes;
    rill__attr *attrs;
    int nattrs;
    char *requested_device;
    int64_t seed, seed2;           /* derived at build time for random ops */
    rill_node *initializer;        /* VariableV2: its initializer Assign */
    rill_node *colocate_with;      /* explicit colocation group ("loc:@<name>"), or NULL */
    struct rill__device *assigned; /* execution graphs: the device a clone runs on */
    rill_node *origin;             /* execution graphs: the user's node this clones, or NULL */
};

/* Gradient function: dy[i] is the gradient flowing into output i ({NULL,0} when none);
 * write dx[i] for each input ({NULL,0} for none). Build nodes with the public builders. */
typedef void (*rill__grad_fn)(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx);

/* Shape function: validate inputs and attrs; set n->out_dtypes[i] and n->out_shapes[i] for
 * i < n->noutputs. On error set s (the message should name the node) and return. */
typedef void (*rill__shape_fn)(rill_node *n, rill_status *s);

struct rill__op_def {
    const char *name;           /* "Add" */
    const char *default_name;   /* node name when the builder gets NULL ("add") */
    int min_inputs, max_inputs; /* max -1: variadic */
    int noutputs;               /* -1: as many as the attribute num_outputs says */
    bool stateful;              /* never pruned as duplicate, never constant-folded */
    bool blocking;              /* may wait on other steps (queues, accumulators): a server runs a
                                 * graph holding one off its transport thread */
    bool waits_for_peer;        /* waits for another task (_RemoteRecv for a tensor, _RemoteSend for
                                 * the wire): its kernel parks instead of blocking (rill__kctx_park),
                                 * so that nothing else of the step waits behind it (what the peer
                                 * waits for may be here) */
    uint32_t ref_inputs;        /* bit i: input i must be a Variable output (updated in place) */
    rill__shape_fn shape;
    rill__grad_fn grad;    /* NULL: not differentiable (gradient stops) */
    const char *type_attr; /* attr holding the kernel's dtype ("T", "dtype"); NULL: input 0's */
};

/* Bit k of a 32-bit mask of inputs or outputs (ref_inputs, host_memory_*): false for k >= 32
 * (a variadic op's later inputs are never references or host memory). */
static inline bool rill__bit32(uint32_t mask, int k)
{
    return k >= 0 && k < 32 && ((mask >> k) & 1u);
}

/* The registry of op definitions. */
const rill__op_def *rill__op_lookup(const char *name);
/* Calls fn on every registered op (in table order; fn may be NULL); returns how many. */
int rill__op_each(void (*fn)(const rill__op_def *def, void *arg), void *arg);

/* Creates a node (see the file comment). Returns NULL when the graph already has an error or
 * this node fails; then the graph's status holds why. attrs are copied. */
rill_node *rill__node_create(rill_graph *g, const char *op_type, const char *name,
                             const rill_output *inputs, int ninputs, const rill__attr *attrs,
                             int nattrs);
/* Records an error on the graph (first error wins). */
void rill__graph_fail(rill_graph *g, rill_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
rill_status *rill__graph_status_mut(rill_graph *g);

/* Attribute lookup (NULL when absent) and typed getters with defaults. */
const rill__attr *rill__node_attr(const rill_node *n, const char *name);
/* Whether an attribute `name` may have `kind`. Some ops read an attribute without checking its
 * kind (padding as a string, strides as ints, shape as a shape); the builders that take
 * attributes from outside (the op builder, the graph codec) refuse those with any other kind,
 * setting *want to the kind expected. Every other attribute is read through the typed getters
 * below, which ignore a wrong kind as absent, so any kind is fine for it. */
bool rill__attr_kind_ok(const char *name, rill__attr_kind kind, rill__attr_kind *want);
/* name as a string that lives as long as the process (one per distinct name: attribute names
 * must be static, rill__attr). bounded: NULL once RILL__MAX_INTERNED_ATTRS names are interned
 * (names from the wire: a peer cannot grow the table without end). */
#define RILL__MAX_INTERNED_ATTRS 4096
const char *rill__attr_intern(const char *name, bool bounded);
int64_t rill__attr_int(const rill_node *n, const char *name, int64_t def);
double rill__attr_float(const rill_node *n, const char *name, double def);
bool rill__attr_bool(const rill_node *n, const char *name, bool def);
rill_dtype rill__attr_type(const rill_node *n, const char *name, rill_dtype def);
/* The dtype a kernel is chosen by: the op's type_attr or input 0's dtype or output 0's. */
rill_dtype rill__node_kernel_dtype(const rill_node *n);

/* A StridedSlice spec applied to a shape (ops_slice.c): per input dim, the first index read,
 * the stride and the count (-1 where the input dim is unknown); out is the result's shape
 * (shrunk dims gone, new axes in). rank -1: the input's rank is unknown. When the input's shape
 * is fully defined, the walk the kernels take over a row-major input: step[d] elements per
 * index of dim d, base the first element read, n the result's element count. */
typedef struct rill__slice {
    int rank;
    int64_t first[RILL_MAX_DIMS], stride[RILL_MAX_DIMS], count[RILL_MAX_DIMS];
    rill_shape out;
    int64_t step[RILL_MAX_DIMS], base, n;
} rill__slice;
bool rill__strided_slice_plan(const rill_node *n, rill_shape in, rill__slice *sl, rill_status *s);

/* Shape-function helpers. */
rill_dtype rill__in_dtype(const rill_node *n, int i);
static inline bool rill__is_index_dtype(rill_dtype t)
{
    return t == RILL_INT32 || t == RILL_INT64;
}
/* Output 0 of n. */
static inline rill_output rill__out0(rill_node *n)
{
    return (rill_output){n, 0};
}
/* The candidate samplers' shape function (ops_index.c): true_classes [batch, num_true] int64. */
void rill__sampler_shape(rill_node *n, rill_status *s);

/* --- the checks shape functions share (op_checks.c), with TensorFlow's texts; each sets s and
 * returns false when the check fails. Unknown ranks and dims pass. --- */
/* "[2,3], [4]": every input shape, as the texts list them after "with input shapes:". */
const char *rill__input_shapes(const rill_node *n, char *buf, size_t len);
/* Input i is float or double (or half, when half). */
bool rill__check_float(const rill_node *n, int i, const char *param, bool half, rill_status *s);
/* Input i is int32 or int64 (an index). */
bool rill__check_index(const rill_node *n, int i, const char *param, rill_status *s);
/* Input 1 (segment_ids) has a shape that starts input 0's (data's). */
bool rill__check_ids_prefix(const rill_node *n, rill_status *s);
/* Input i has input j's dtype. */
bool rill__check_same_dtype(const rill_node *n, int i, const char *iname, int j, const char *jname,
                            rill_status *s);
/* Input i's rank is want (at least want when at_least). */
bool rill__check_rank(const rill_node *n, int i, int want, bool at_least, rill_status *s);
/* *out = the known one of two dims; false when both are known and differ. */
bool rill__merge_dim(const rill_node *n, int64_t a, int64_t b, int64_t *out, rill_status *s);
rill_shape rill__in_shape(const rill_node *n, int i);
/* numpy broadcasting of two shapes; false (s set, TF's text) when incompatible. */
bool rill__broadcast_shapes(const rill_node *n, const rill_shape *a, const rill_shape *b,
                            rill_shape *out, rill_status *s);
/* Describes a node for errors: "'add' (op: 'Add')". */
const char *rill__node_desc(const rill_node *n, char *buf, size_t len);

/* A while loop's members (loops.c): depth[id] > 0 for what the Enters of loop `frame` reach
 * along data and control edges before its Exits leave it (1: the loop's own nodes, its Exits
 * included; an inner loop's one deeper). depth has room for every node. False (s set) on a node
 * reached at two depths. */
bool rill__loop_members(rill_graph *g, const char *frame, int *depth, rill_status *s);
/* A node's frame_name attribute ("" when none). */
const char *rill__frame_name(const rill_node *n);

/* The gradient of a while loop (gradients_loop.c), asked by rill__gradients at the loop's last
 * Exit: dy gives an Exit's summed gradient ({NULL}: none), give hands back the gradient of an
 * outside tensor the loop reads (an initial value or a constant Enter's input), mark flags each
 * Exit of the loop as done. False (the graph failed) on a loop it cannot differentiate. */
typedef struct rill__while_grad_cb {
    rill_output (*dy)(void *arg, rill_node *exit);
    void (*give)(void *arg, rill_output x, rill_output dx);
    void (*mark)(void *arg, rill_node *exit);
    void *arg;
} rill__while_grad_cb;
bool rill__while_grad(rill_graph *g, rill_node *exit, const rill__while_grad_cb *cb);

/* Variables: the Variable node of an output, or NULL. */
bool rill__is_variable(rill_output o);

/* rill_gradients with TF's gate_gradients: when an op's gradient function hands gradients back
 * to more than one input, each comes out of an Identity that waits for all of them (TF's
 * control_flow_ops.tuple; Optimizer.compute_gradients' default GATE_OP). */
bool rill__gradients(rill_graph *g, const rill_output *ys, int ny, const rill_output *xs, int nx,
                     const rill_output *grad_ys, rill_output *dx, bool gate_gradients);
/* rill__gradients walking only the nodes with only[id] set (id < nonly): a while loop's body,
 * whose gradient must not flow on into the loop's own Switches. */
bool rill__gradients_within(rill_graph *g, const rill_output *ys, int ny, const rill_output *xs,
                            int nx, const rill_output *grad_ys, rill_output *dx,
                            bool gate_gradients, const char *only, int nonly);

/* The graph's gradient override (rill_graph_set_gradient_override), NULL when none. */
rill_gradient_override_fn rill__graph_gradient_override(const rill_graph *g, void **arg);

/* The current name scope prefix ("a/b/" or ""), borrowed until the scope is popped. */
const char *rill__graph_scope_prefix(const rill_graph *g);
/* The current variable scope prefix ("outer/inner/" or "") and whether it reuses. */
const char *rill__graph_var_scope(const rill_graph *g, bool *reuse);

/* Builds a scalar constant of dtype t. */
rill_output rill__scalar_like(rill_graph *g, rill_dtype t, double v);

/* Nodes that consume each node's outputs (for gradients). Caller frees with rill__free. */
typedef struct rill__consumers {
    int *start;       /* per node id: first index into edges; size nnodes+1 */
    rill_node **node; /* consumer node per edge */
    int *out_index;   /* which output of the producer */
    int *in_index;    /* which input of the consumer */
} rill__consumers;
void rill__consumers_build(const rill_graph *g, rill__consumers *c);
void rill__consumers_free(rill__consumers *c);

/* Windowed ops (ops_conv.c: Conv2D, its two backprops, MaxPool, AvgPool and their gradients),
 * NHWC: the geometry of one window sliding over an input, as TensorFlow's
 * GetWindowedOutputSizeVerbose computes it. SAME pads pad_total = max(0, (out-1)*stride + eff -
 * in) with pad_total/2 before (top, left) and the rest after; VALID pads nothing. */
typedef struct rill__window {
    int64_t n, ih, iw, c; /* input [N, H, W, C] */
    int64_t kh, kw;       /* window (filter rows and columns, or ksize[1..2]) */
    int64_t f;            /* Conv2D: output channels; pools: c */
    int64_t sh, sw, dh, dw;
    int64_t oh, ow;
    int64_t pt, pl; /* padding before: top, left */
} rill__window;
/* Fills w for node n's strides, dilations (1s when absent) and padding attrs (checked when the
 * node was built) over input dims in[4] and window kh x kw; f is left 0. False with err set (TF's
 * text) when an output size would be negative. */
bool rill__window_init(const rill_node *n, const int64_t *in, int64_t kh, int64_t kw,
                       rill__window *w, char *err, size_t errlen);
/* One spatial dimension of that geometry (every windowed op's, 2-D and 3-D): the output size
 * *out and the padding before *pad of a window of k taps dilated by d at stride over in
 * elements (in < 0, unknown: *out = -1). False with err set (TF's text) when *out < 0. */
bool rill__window_dim(int64_t in, int64_t k, int64_t d, int64_t stride, bool same, int64_t *out,
                      int64_t *pad, char *err, size_t errlen);
/* The padding attr is "SAME" or "VALID" (TF's text when not). */
bool rill__check_padding(const rill_node *n, rill_status *s);
/* The shape held by size input i of n (int32 [rank]: input_sizes, filter_sizes,
 * orig_input_shape), static where it is a Const or a Shape node, else unknown dims. */
bool rill__size_input(const rill_node *n, int i, const char *param, int rank, rill_shape *out,
                      rill_status *s);

/* The 3-D windowed ops (ops_conv3d.c: Conv3D, its backprops, MaxPool3D, AvgPool3D and their
 * gradients), NDHWC: the same geometry per spatial dimension (rill__window_dim), in order
 * depth, height, width. */
typedef struct rill__window3d {
    int64_t n, c, f; /* batch, input channels, output channels (pools: c) */
    int64_t in[3], k[3], s[3], d[3], out[3], pad[3];
} rill__window3d;
/* Fills w for node n's strides, dilations and padding attrs over input dims in[5] (NDHWC) and
 * window k[3]; f is left 0. False with err set (TF's text) when an output size is negative. */
bool rill__window3d_init(const rill_node *n, const int64_t *in, const int64_t *k, rill__window3d *w,
                         char *err, size_t errlen);


/* _FusedElementwise's program (runtime/fuse_elementwise.c writes it, kernels/cpu/cpu_fused.c
 * runs it, ops_nn.c reads its outputs' shapes from it), all int64 in the "program" attr:
 *   [H, nvalues, ninput_values, ninstructions, noutputs,
 *    ninput_values x (value, input, column offset, kind: 0 rows, 1 a scalar, 2 a shape the
 *                     group's must equal, value -1),
 *    ninstructions x (code, dst, a, b),
 *    noutputs x (nparts, value of each part)]
 * Every value is a row of H floats (a scalar input: one float); an output of k parts is their
 * concatenation along the last axis. The binary codes keep loops.h's RILL__BIN_* order. */
enum {
    RILL__EW_ADD, RILL__EW_SUB, RILL__EW_MUL, RILL__EW_DIV, RILL__EW_MAX, RILL__EW_MIN,
    RILL__EW_SIGMOID, RILL__EW_TANH, RILL__EW_RELU,
    RILL__EW_SIGMOID_GRAD, RILL__EW_TANH_GRAD, RILL__EW_RELU_GRAD,
    RILL__EW_COPY,       /* dst = a */
    RILL__EW_ACCUMULATE, /* dst += a */
    RILL__EW_VIEW,       /* dst is a itself (a Split's output: a column view of its input) */
};
#define RILL__EW_HEADER 5

#endif
