/* ops_slice.c - StridedSlice (Python's x[1:, ::2, 0, tf.newaxis, ...]) and its gradient,
 * StridedSliceGrad.
 *
 * TensorFlow's semantics, with begin, end and strides as int-list attributes (TF takes them as
 * tensors; rill's front ends always know them when they build the op, and the shape function
 * then knows the output's shape). The masks are TF's: bit i of begin_mask / end_mask ignores
 * begin[i] / end[i] (the widest range for the stride's sign), ellipsis_mask marks the one entry
 * standing for every dimension not otherwise named, new_axis_mask inserts a dimension of 1,
 * shrink_axis_mask takes index begin[i] and drops the dimension. Without an ellipsis, one is
 * implied at the end.
 *
 * rill__strided_slice_plan turns the spec and an input shape into, per input dimension, the
 * first index, the stride and the count (the "processing shape"), and the output shape; the
 * shape function, the CPU kernels and the OpenCL kernels all use it, so the three agree by
 * construction. StridedSliceGrad(x, dy) is zeros shaped like x with dy written where the slice
 * read (x is an input for its shape only). */
#include "graph_internal.h"

#include <string.h>

#define MAX_SPEC 16

typedef struct spec {
    int k;
    const int64_t *begin, *end, *strides;
    int64_t begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_mask;
} spec;

static bool read_spec(const rill_node *n, spec *sp, rill_status *s)
{
    const rill__attr *b = rill__node_attr(n, "begin"), *e = rill__node_attr(n, "end"),
                     *st = rill__node_attr(n, "strides");
    if (!b || !e || !st || b->kind != RILL__ATTR_INTS || e->kind != RILL__ATTR_INTS ||
        st->kind != RILL__ATTR_INTS) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%s '%s' needs begin, end and strides as int lists", n->op->name, n->name);
        return false;
    }
    if (b->v.ints.n != e->v.ints.n || b->v.ints.n != st->v.ints.n) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Expected begin, end, and strides to be 1D equal size tensors, but got "
                        "shapes [%d], [%d], and [%d] instead.",
                        b->v.ints.n, e->v.ints.n, st->v.ints.n);
        return false;
    }
    if (b->v.ints.n > MAX_SPEC) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s '%s': at most %d slice entries, got %d",
                        n->op->name, n->name, MAX_SPEC, b->v.ints.n);
        return false;
    }
    sp->k = b->v.ints.n;
    sp->begin = b->v.ints.v;
    sp->end = e->v.ints.v;
    sp->strides = st->v.ints.v;
    sp->begin_mask = rill__attr_int(n, "begin_mask", 0);
    sp->end_mask = rill__attr_int(n, "end_mask", 0);
    sp->ellipsis_mask = rill__attr_int(n, "ellipsis_mask", 0);
    sp->new_axis_mask = rill__attr_int(n, "new_axis_mask", 0);
    sp->shrink_mask = rill__attr_int(n, "shrink_axis_mask", 0);
    int64_t live = sp->k ? (int64_t)((1u << sp->k) - 1) : 0;
    int64_t ell = sp->ellipsis_mask & live;
    if (ell & (ell - 1)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Multiple ellipses in slice spec not allowed");
        return false;
    }
    return true;
}

/* One dimension of size d (-1: unknown) sliced as begin:end:stride with the masks. */
static bool plan_dim(const spec *sp, int i, int64_t d, int dim, int64_t *first, int64_t *stride,
                     int64_t *count, rill_status *s)
{
    int64_t st = sp->strides[i];
    if (st == 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "strides[%d] must be non-zero", i);
        return false;
    }
    if (sp->shrink_mask & (1 << i)) {
        int64_t b = sp->begin[i];
        if (d >= 0) {
            if (b < 0) b += d;
            if (b < 0 || b >= d) {
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "slice index %lld of dimension %d out of bounds.",
                                (long long)sp->begin[i], dim);
                return false;
            }
        }
        *first = b;
        *stride = 1;
        *count = 1;
        return true;
    }
    *stride = st;
    if (d < 0) {
        *first = 0;
        *count = -1;
        return true;
    }
    int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? d : d - 1;
    int64_t b = sp->begin[i], e = sp->end[i];
    if (sp->begin_mask & (1 << i)) {
        b = st > 0 ? lo : hi;
    } else {
        if (b < 0) b += d;
        b = b < lo ? lo : b > hi ? hi : b;
    }
    if (sp->end_mask & (1 << i)) {
        e = st > 0 ? hi : lo;
    } else {
        if (e < 0) e += d;
        e = e < lo ? lo : e > hi ? hi : e;
    }
    int64_t span = e - b;
    *first = b;
    if (span == 0 || (span > 0) != (st > 0))
        *count = 0;
    else
        *count = span / st + (span % st != 0);
    return true;
}

bool rill__strided_slice_plan(const rill_node *n, rill_shape in, rill__slice *sl, rill_status *s)
{
    spec sp;
    if (!read_spec(n, &sp, s)) return false;
    memset(sl, 0, sizeof *sl);
    if (in.rank < 0) {
        sl->rank = -1;
        sl->out = rill_shape_unknown();
        return true;
    }
    int r = in.rank, j = 0, o = 0;
    bool saw_ellipsis = false;
    for (int i = 0; i <= sp.k; i++) {
        bool implied = i == sp.k; /* the ellipsis at the end, when the spec has none */
        if (implied && saw_ellipsis) break;
        if (implied || (sp.ellipsis_mask & (1 << i))) {
            saw_ellipsis = true;
            int after = 0;
            for (int t = i + 1; t < sp.k; t++)
                if (!(sp.new_axis_mask & (1 << t))) after++;
            int full = r - j - after;
            if (full < 0) {
                rill_status_set(s, RILL_INVALID_ARGUMENT,
                                "Index out of range using input dim %d; input has only %d dims", r,
                                r);
                return false;
            }
            for (int m = 0; m < full; m++, j++) {
                sl->first[j] = 0;
                sl->stride[j] = 1;
                sl->count[j] = in.dims[j];
                if (o == RILL_MAX_DIMS) goto too_many;
                sl->out.dims[o++] = in.dims[j];
            }
            continue;
        }
        if (sp.new_axis_mask & (1 << i)) {
            if (o == RILL_MAX_DIMS) goto too_many;
            sl->out.dims[o++] = 1;
            continue;
        }
        if (j >= r) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Index out of range using input dim %d; input has only %d dims", j, r);
            return false;
        }
        if (!plan_dim(&sp, i, in.dims[j], j, &sl->first[j], &sl->stride[j], &sl->count[j], s))
            return false;
        if (!(sp.shrink_mask & (1 << i))) {
            if (o == RILL_MAX_DIMS) goto too_many;
            sl->out.dims[o++] = sl->count[j];
        }
        j++;
    }
    sl->rank = r;
    sl->out.rank = o;
    if (rill_shape_is_fully_defined(&in)) {
        int64_t elems = 1;
        sl->n = 1;
        for (int d = r - 1; d >= 0; d--) {
            sl->step[d] = sl->stride[d] * elems;
            sl->base += sl->first[d] * elems;
            sl->n *= sl->count[d];
            elems *= in.dims[d];
        }
    }
    return true;
too_many:
    rill_status_set(s, RILL_INVALID_ARGUMENT, "%s '%s': the result would have more than %d dims",
                    n->op->name, n->name, RILL_MAX_DIMS);
    return false;
}

static void strided_slice_shape(rill_node *n, rill_status *s)
{
    rill__slice sl;
    if (!rill__strided_slice_plan(n, rill__in_shape(n, 0), &sl, s)) return;
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = sl.out;
}

static void strided_slice_grad_shape(rill_node *n, rill_status *s)
{
    rill__slice sl;
    if (!rill__strided_slice_plan(n, rill__in_shape(n, 0), &sl, s)) return;
    if (rill__in_dtype(n, 1) != rill__in_dtype(n, 0)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "StridedSliceGrad '%s': dy is %s, the sliced tensor %s", n->name,
                        rill_dtype_name(rill__in_dtype(n, 1)), rill_dtype_name(rill__in_dtype(n, 0)));
        return;
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = rill__in_shape(n, 0);
}

/* The slice's attributes, to build its gradient (or the gradient's) with. */
static int copy_attrs(const rill_node *n, rill__attr *a)
{
    static const char *const names[] = {"begin",         "end",           "strides",
                                        "begin_mask",    "end_mask",      "ellipsis_mask",
                                        "new_axis_mask", "shrink_axis_mask"};
    int na = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const rill__attr *x = rill__node_attr(n, names[i]);
        if (x) a[na++] = *x;
    }
    return na;
}

static void strided_slice_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill__attr a[8];
    int na = copy_attrs(n, a);
    rill_output in[] = {n->inputs[0], dy[0]};
    dx[0] = (rill_output){rill__node_create(g, "StridedSliceGrad", NULL, in, 2, a, na), 0};
}

/* d(StridedSliceGrad)/d(dy) is the slice of the incoming gradient; x only gives the shape. */
static void strided_slice_grad_grad(rill_graph *g, rill_node *n, const rill_output *dy,
                                    rill_output *dx)
{
    rill__attr a[8];
    int na = copy_attrs(n, a);
    dx[0] = (rill_output){NULL, 0};
    dx[1] = (rill_output){rill__node_create(g, "StridedSlice", NULL, dy, 1, a, na), 0};
}

const rill__op_def rill__ops_slice[] = {
    {.name = "StridedSlice",
     .default_name = "strided_slice",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .shape = strided_slice_shape,
     .grad = strided_slice_grad},
    {.name = "StridedSliceGrad",
     .default_name = "StridedSliceGrad",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = strided_slice_grad_shape,
     .grad = strided_slice_grad_grad},
    {0},
};

rill_output rill_strided_slice(rill_graph *g, rill_output x, const int64_t *begin,
                               const int64_t *end, const int64_t *strides, int n,
                               const rill_slice_masks *masks, const char *name)
{
    if (n < 0 || n > MAX_SPEC || (n > 0 && (!begin || !end || !strides))) {
        rill__graph_fail(g, RILL_INVALID_ARGUMENT,
                         "rill_strided_slice: %d entries (0..%d, with begin, end and strides)", n,
                         MAX_SPEC);
        return (rill_output){NULL, 0};
    }
    rill_slice_masks m = masks ? *masks : (rill_slice_masks){0};
    rill__attr a[] = {RILL__A_INTS("begin", n, begin),
                      RILL__A_INTS("end", n, end),
                      RILL__A_INTS("strides", n, strides),
                      RILL__A_INT("begin_mask", m.begin),
                      RILL__A_INT("end_mask", m.end),
                      RILL__A_INT("ellipsis_mask", m.ellipsis),
                      RILL__A_INT("new_axis_mask", m.new_axis),
                      RILL__A_INT("shrink_axis_mask", m.shrink_axis)};
    return (rill_output){rill__node_create(g, "StridedSlice", name, &x, 1, a, 8), 0};
}
