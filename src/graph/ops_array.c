/* ops_array.c - op definitions, builders and gradients for constants, placeholders and shape
 * manipulation: Const, Placeholder, Identity, NoOp, Reshape, ExpandDims, Cast, Fill, ZerosLike,
 * OnesLike, Shape. */
#include "graph_internal.h"

#include <string.h>

/* --- shape functions --- */

static void const_shape(rill_node *n, rill_status *s)
{
    const rill__attr *v = rill__node_attr(n, "value");
    if (!v || v->kind != RILL__ATTR_TENSOR || !v->v.tensor) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Const '%s' needs a value tensor", n->name);
        return;
    }
    n->out_dtypes[0] = v->v.tensor->dtype;
    n->out_shapes[0] = v->v.tensor->shape;
}

static void placeholder_shape(rill_node *n, rill_status *s)
{
    rill_dtype t = rill__attr_type(n, "dtype", RILL_DT_INVALID);
    if (!rill_dtype_is_valid(t)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Placeholder '%s' has an invalid dtype", n->name);
        return;
    }
    const rill__attr *sh = rill__node_attr(n, "shape");
    n->out_dtypes[0] = t;
    n->out_shapes[0] = sh ? sh->v.shape : rill_shape_unknown();
}

/* PlaceholderWithDefault(input): the input, unless fed; its shape is the shape attr, which the
 * input's must fit (a feed may have any shape the attr allows). */
static void placeholder_with_default_shape(rill_node *n, rill_status *s)
{
    const rill__attr *sh = rill__node_attr(n, "shape");
    rill_shape in = rill__in_shape(n, 0), want = sh ? sh->v.shape : rill_shape_unknown();
    bool ok = want.rank < 0 || in.rank < 0 || in.rank == want.rank;
    for (int d = 0; ok && want.rank >= 0 && d < in.rank; d++)
        ok = want.dims[d] < 0 || in.dims[d] < 0 || want.dims[d] == in.dims[d];
    if (!ok) {
        char a[96], b[96];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Shapes must be equal rank, and dimensions must match for '%s' (op: "
                        "'PlaceholderWithDefault'): the default's shape %s is not compatible "
                        "with the requested shape %s",
                        n->name, rill_shape_str(&in, a, sizeof a), rill_shape_str(&want, b, sizeof b));
        return;
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = want;
}

static void same_as_input_shape(rill_node *n, rill_status *s)
{
    (void)s;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static void noop_shape(rill_node *n, rill_status *s)
{
    (void)n;
    (void)s;
}

/* Resolves a -1 in dims against the input's element count where known. */
static bool reshape_dims(const rill_node *n, const rill_shape *in, rill_shape *out, rill_status *s)
{
    int unknown = -1;
    int64_t prod = 1;
    for (int i = 0; i < out->rank; i++) {
        if (out->dims[i] == -1) {
            if (unknown >= 0) {
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "Reshape '%s': only one input size may be -1, not both %d and %d",
                                n->name, unknown, i);
                return false;
            }
            unknown = i;
        } else if (out->dims[i] > 0 && prod > INT64_MAX / out->dims[i]) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Reshape '%s': the shape's sizes multiply past what an int64 holds",
                            n->name);
            return false;
        } else {
            prod *= out->dims[i];
        }
    }
    int64_t numel = rill_shape_num_elements(in);
    if (numel < 0) return true;
    char a[96], b[96];
    if (unknown >= 0) {
        if (prod == 0 || numel % prod != 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Reshape '%s': cannot reshape a tensor with %lld elements to shape %s",
                            n->name, (long long)numel, rill_shape_str(out, a, sizeof a));
            return false;
        }
        out->dims[unknown] = numel / prod;
    } else if (prod != numel) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Cannot reshape a tensor with %lld elements to shape %s (%lld elements) "
                        "for '%s' (op: 'Reshape') with input shapes: %s",
                        (long long)numel, rill_shape_str(out, a, sizeof a), (long long)prod,
                        n->name, rill_shape_str(in, b, sizeof b));
        return false;
    }
    return true;
}

static void reshape_shape(rill_node *n, rill_status *s)
{
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    rill_shape in = rill__in_shape(n, 0);
    rill_dtype st = rill__in_dtype(n, 1);
    if (st != RILL_INT32 && st != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Reshape '%s': the shape input must be int32 or int64, got %s", n->name,
                        rill_dtype_name(st));
        return;
    }
    /* A constant shape gives a static result; otherwise only the rank may be known. */
    rill_output so = n->inputs[1];
    rill_shape sshape = rill__in_shape(n, 1);
    if (sshape.rank > 1) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Reshape '%s': the shape input must be a vector",
                        n->name);
        return;
    }
    if (strcmp(so.node->op->name, "Const") == 0) {
        const rill_tensor *t = rill__node_attr(so.node, "value")->v.tensor;
        if (t->numel > RILL_MAX_DIMS) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "Reshape '%s': rank %lld is above %d",
                            n->name, (long long)t->numel, RILL_MAX_DIMS);
            return;
        }
        rill_shape out = {.rank = (int)t->numel};
        for (int i = 0; i < out.rank; i++) {
            out.dims[i] = rill_tensor_get_int64(t, i);
            if (out.dims[i] < -1) {
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "Reshape '%s': size %d is %lld; sizes must be >= -1", n->name, i,
                                (long long)out.dims[i]);
                return;
            }
        }
        if (!reshape_dims(n, &in, &out, s)) return;
        n->out_shapes[0] = out;
    } else if (strcmp(so.node->op->name, "Shape") == 0) {
        n->out_shapes[0] = rill__in_shape(so.node, 0);
    } else if (sshape.rank == 1 && sshape.dims[0] >= 0 && sshape.dims[0] <= RILL_MAX_DIMS) {
        rill_shape out = {.rank = (int)sshape.dims[0]};
        for (int i = 0; i < out.rank; i++) out.dims[i] = -1;
        n->out_shapes[0] = out;
    } else {
        n->out_shapes[0] = rill_shape_unknown();
    }
}

static void expand_dims_shape(rill_node *n, rill_status *s)
{
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    rill_shape in = rill__in_shape(n, 0);
    int64_t axis = rill__attr_int(n, "axis", 0);
    if (in.rank < 0) {
        n->out_shapes[0] = rill_shape_unknown();
        return;
    }
    if (axis < -(in.rank + 1) || axis > in.rank || in.rank + 1 > RILL_MAX_DIMS) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "ExpandDims '%s': axis %lld is out of range for rank %d", n->name,
                        (long long)axis, in.rank);
        return;
    }
    if (axis < 0) axis += in.rank + 1;
    rill_shape out = {.rank = in.rank + 1};
    for (int i = 0, j = 0; i < out.rank; i++) out.dims[i] = i == axis ? 1 : in.dims[j++];
    n->out_shapes[0] = out;
}

static void cast_shape(rill_node *n, rill_status *s)
{
    rill_dtype to = rill__attr_type(n, "DstT", RILL_DT_INVALID);
    rill_dtype from = rill__in_dtype(n, 0);
    if (to == RILL_STRING || from == RILL_STRING || !rill_dtype_is_valid(to)) {
        rill_status_set(s, RILL_UNIMPLEMENTED, "Cast '%s': cast %s to %s is not supported", n->name,
                        rill_dtype_name(from), rill_dtype_name(to));
        return;
    }
    n->out_dtypes[0] = to;
    n->out_shapes[0] = rill__in_shape(n, 0);
}

static void fill_shape(rill_node *n, rill_status *s)
{
    rill_dtype dt = rill__in_dtype(n, 0);
    if (dt != RILL_INT32 && dt != RILL_INT64) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Fill '%s': dims must be int32 or int64, got %s",
                        n->name, rill_dtype_name(dt));
        return;
    }
    rill_shape vs = rill__in_shape(n, 1);
    if (vs.rank > 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Fill '%s': value must be a scalar", n->name);
        return;
    }
    n->out_dtypes[0] = rill__in_dtype(n, 1);
    rill_output d = n->inputs[0];
    if (strcmp(d.node->op->name, "Const") == 0) {
        const rill_tensor *t = rill__node_attr(d.node, "value")->v.tensor;
        if (t->numel > RILL_MAX_DIMS) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "Fill '%s': rank above %d", n->name,
                            RILL_MAX_DIMS);
            return;
        }
        rill_shape out = {.rank = (int)t->numel};
        for (int i = 0; i < out.rank; i++) {
            out.dims[i] = rill_tensor_get_int64(t, i);
            if (out.dims[i] < 0) {
                rill_status_set(s, RILL_INVALID_ARGUMENT, "Fill '%s': dims[%d] = %lld < 0", n->name,
                                i, (long long)out.dims[i]);
                return;
            }
        }
        n->out_shapes[0] = out;
    } else if (strcmp(d.node->op->name, "Shape") == 0) {
        n->out_shapes[0] = rill__in_shape(d.node, 0);
    } else if (strcmp(d.node->op->name, "Pack") == 0 && d.node->ninputs <= RILL_MAX_DIMS) {
        /* tf.stack([batch, 128]): the constant dims are known (TF's partial shape). */
        rill_shape out = {.rank = d.node->ninputs};
        for (int i = 0; i < out.rank; i++) {
            rill_node *e = d.node->inputs[i].node;
            const rill__attr *v = strcmp(e->op->name, "Const") == 0 ? rill__node_attr(e, "value")
                                                                    : NULL;
            out.dims[i] = v && v->v.tensor->numel == 1 ? rill_tensor_get_int64(v->v.tensor, 0) : -1;
            if (out.dims[i] < -1) out.dims[i] = -1;
        }
        n->out_shapes[0] = out;
    } else {
        rill_shape ds = rill__in_shape(n, 0);
        if (ds.rank == 1 && ds.dims[0] >= 0 && ds.dims[0] <= RILL_MAX_DIMS) {
            rill_shape out = {.rank = (int)ds.dims[0]};
            for (int i = 0; i < out.rank; i++) out.dims[i] = -1;
            n->out_shapes[0] = out;
        } else {
            n->out_shapes[0] = rill_shape_unknown();
        }
    }
}

static void shape_shape(rill_node *n, rill_status *s)
{
    (void)s;
    rill_shape in = rill__in_shape(n, 0);
    n->out_dtypes[0] = rill__attr_type(n, "out_type", RILL_INT32);
    n->out_shapes[0] = rill_shape_vector(in.rank);
}

/* --- gradients --- */

static void identity_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    (void)g;
    (void)n;
    dx[0] = dy[0];
}

static void reshape_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = rill_reshape_to(g, dy[0], rill_shape_of(g, n->inputs[0], NULL), NULL);
}

static void expand_dims_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    dx[0] = rill_reshape_to(g, dy[0], rill_shape_of(g, n->inputs[0], NULL), NULL);
}

static void cast_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_dtype from = rill__in_dtype(n, 0);
    if (rill_dtype_is_float(from) && rill_dtype_is_float(n->out_dtypes[0]))
        dx[0] = rill_cast(g, dy[0], from, NULL);
}

const rill__op_def rill__ops_array[] = {
    {.name = "Const",
     .default_name = "Const",
     .shape = const_shape,
     .noutputs = 1,
     .type_attr = "dtype"},
    {.name = "Placeholder",
     .default_name = "Placeholder",
     .shape = placeholder_shape,
     .noutputs = 1,
     .type_attr = "dtype"},
    {.name = "PlaceholderWithDefault",
     .default_name = "PlaceholderWithDefault",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = placeholder_with_default_shape},
    {.name = "Identity",
     .default_name = "Identity",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = same_as_input_shape,
     .grad = identity_grad},
    {.name = "NoOp", .default_name = "NoOp", .shape = noop_shape},
    {.name = "Reshape",
     .default_name = "Reshape",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = reshape_shape,
     .grad = reshape_grad},
    {.name = "ExpandDims",
     .default_name = "ExpandDims",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = expand_dims_shape,
     .grad = expand_dims_grad},
    {.name = "Cast",
     .default_name = "Cast",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = cast_shape,
     .grad = cast_grad},
    {.name = "Fill",
     .default_name = "Fill",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = fill_shape,
     .type_attr = "T"},
    {.name = "ZerosLike",
     .default_name = "zeros_like",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = same_as_input_shape},
    {.name = "OnesLike",
     .default_name = "ones_like",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = same_as_input_shape},
    {.name = "Shape",
     .default_name = "Shape",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = shape_shape},
    {0},
};

/* --- builders --- */

static rill_output out0(rill_node *n)
{
    return (rill_output){n, 0};
}

rill_output rill_const(rill_graph *g, rill_tensor *value, const char *name)
{
    if (!value) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT, "rill_const: value is NULL");
        return (rill_output){NULL, 0};
    }
    rill__attr a[] = {RILL__A_TENSOR("value", value), RILL__A_TYPE("dtype", value->dtype)};
    return out0(rill__node_create(g, "Const", name, NULL, 0, a, 2));
}

rill_output rill_const_scalar(rill_graph *g, rill_dtype t, double v, const char *name)
{
    rill_tensor *x = rill_tensor_new(t, NULL, 0);
    if (!x || t == RILL_STRING) {
        rill_tensor_free(x);
        rill__graph_fail(g, RILL_INVALID_ARGUMENT, "rill_const_scalar: bad dtype %d", (int)t);
        return (rill_output){NULL, 0};
    }
    void *d = rill_tensor_data(x);
    switch (t) {
    case RILL_FLOAT:
        *(float *)d = (float)v;
        break;
    case RILL_DOUBLE:
        *(double *)d = v;
        break;
    case RILL_INT32:
        *(int32_t *)d = (int32_t)v;
        break;
    case RILL_INT64:
        *(int64_t *)d = (int64_t)v;
        break;
    case RILL_BOOL:
        *(uint8_t *)d = v != 0;
        break;
    case RILL_HALF:
        *(rill_half *)d = rill_half_from_float((float)v);
        break;
    case RILL_BFLOAT16:
        *(rill_bfloat16 *)d = rill_bfloat16_from_float((float)v);
        break;
    case RILL_INT8:
        *(int8_t *)d = (int8_t)v;
        break;
    case RILL_INT16:
        *(int16_t *)d = (int16_t)v;
        break;
    case RILL_UINT8:
        *(uint8_t *)d = (uint8_t)v;
        break;
    case RILL_UINT16:
        *(uint16_t *)d = (uint16_t)v;
        break;
    default:
        break;
    }
    rill_output o = rill_const(g, x, name);
    rill_tensor_free(x);
    return o;
}

rill_output rill_const_float(rill_graph *g, float v, const char *name)
{
    return rill_const_scalar(g, RILL_FLOAT, v, name);
}

rill_output rill__scalar_like(rill_graph *g, rill_dtype t, double v)
{
    return rill_const_scalar(g, t, v, NULL);
}

rill_output rill_const_floats(rill_graph *g, const float *data, const int64_t *dims, int rank,
                              const char *name)
{
    rill_tensor *x = rill_tensor_from_data(RILL_FLOAT, dims, rank, data);
    if (!x) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT, "rill_const_floats: invalid shape");
        return (rill_output){NULL, 0};
    }
    rill_output o = rill_const(g, x, name);
    rill_tensor_free(x);
    return o;
}

rill_output rill_placeholder(rill_graph *g, rill_dtype t, rill_shape shape, const char *name)
{
    rill__attr a[] = {RILL__A_TYPE("dtype", t), RILL__A_SHAPE("shape", shape)};
    return out0(rill__node_create(g, "Placeholder", name, NULL, 0, a, 2));
}

rill_output rill_identity(rill_graph *g, rill_output x, const char *name)
{
    return out0(rill__node_create(g, "Identity", name, &x, 1, NULL, 0));
}

rill_node *rill_no_op(rill_graph *g, const char *name)
{
    return rill__node_create(g, "NoOp", name, NULL, 0, NULL, 0);
}

rill_node *rill_group(rill_graph *g, rill_node *const *deps, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!deps[i]) {
            rill__graph_fail(g, RILL_INVALID_ARGUMENT,
                             "group: member %d is empty (an earlier call failed?)", i);
            return NULL;
        }
    rill_node *op = rill__node_create(g, "NoOp", name ? name : "group_deps", NULL, 0, NULL, 0);
    for (int i = 0; op && i < n; i++) rill_node_add_control_input(op, deps[i]);
    return op;
}

rill_output rill_reshape_to(rill_graph *g, rill_output x, rill_output shape, const char *name)
{
    rill_output in[] = {x, shape};
    return out0(rill__node_create(g, "Reshape", name, in, 2, NULL, 0));
}

rill_output rill_reshape(rill_graph *g, rill_output x, const int64_t *dims, int rank,
                         const char *name)
{
    if (!rill_graph_ok(g)) return (rill_output){NULL, 0};
    if (rank < 0 || rank > RILL_MAX_DIMS) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT, "Reshape: rank %d is out of range", rank);
        return (rill_output){NULL, 0};
    }
    int64_t r = rank;
    rill_tensor *t = rill_tensor_from_data(RILL_INT64, &r, 1, dims);
    rill_output shape = rill_const(g, t, NULL);
    rill_tensor_free(t);
    return rill_reshape_to(g, x, shape, name);
}

rill_output rill_expand_dims(rill_graph *g, rill_output x, int axis, const char *name)
{
    rill__attr a[] = {RILL__A_INT("axis", axis)};
    return out0(rill__node_create(g, "ExpandDims", name, &x, 1, a, 1));
}

rill_output rill_cast(rill_graph *g, rill_output x, rill_dtype to, const char *name)
{
    rill__attr a[] = {RILL__A_TYPE("DstT", to)};
    return out0(rill__node_create(g, "Cast", name, &x, 1, a, 1));
}

rill_output rill_fill(rill_graph *g, rill_output dims, rill_output value, const char *name)
{
    rill__attr a[] = {RILL__A_TYPE("T", rill_output_dtype(value))};
    rill_output in[] = {dims, value};
    return out0(rill__node_create(g, "Fill", name, in, 2, a, 1));
}

rill_output rill_zeros_like(rill_graph *g, rill_output x, const char *name)
{
    return out0(rill__node_create(g, "ZerosLike", name, &x, 1, NULL, 0));
}

rill_output rill_ones_like(rill_graph *g, rill_output x, const char *name)
{
    return out0(rill__node_create(g, "OnesLike", name, &x, 1, NULL, 0));
}

rill_output rill_shape_of(rill_graph *g, rill_output x, const char *name)
{
    rill__attr a[] = {RILL__A_TYPE("out_type", RILL_INT32)};
    return out0(rill__node_create(g, "Shape", name, &x, 1, a, 1));
}
