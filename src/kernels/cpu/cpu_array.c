/* cpu_array.c - CPU kernels for constants, placeholders, shape manipulation and slicing.
 *
 * Identity, Reshape and ExpandDims alias their input's buffer (no copy); Const hands out its
 * value by reference. StridedSlice copies what it reads (runs of the innermost dim with one
 * memcpy each when its stride is 1); StridedSliceGrad writes dy into zeros the same way. */
#include "cpu_kernels.h"

#include <string.h>

static void const_kernel(rill__kctx *ctx)
{
    rill__kctx_set_output(ctx, 0, rill_tensor_ref(rill__node_attr(ctx->node, "value")->v.tensor));
}

static void placeholder_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    const rill__attr *sh = rill__node_attr(n, "shape");
    char buf[96];
    if (sh && sh->v.shape.rank >= 0)
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "You must feed a value for placeholder tensor '%s' with dtype %s and "
                        "shape %s",
                        n->name, rill_dtype_name(n->out_dtypes[0]),
                        rill_shape_str(&sh->v.shape, buf, sizeof buf));
    else
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "You must feed a value for placeholder tensor '%s' with dtype %s", n->name,
                        rill_dtype_name(n->out_dtypes[0]));
}

void rill__cpu_identity(rill__kctx *ctx)
{
    rill__kctx_set_output(ctx, 0, rill_tensor_ref(ctx->inputs[0]));
}

static void noop_kernel(rill__kctx *ctx)
{
    (void)ctx;
}

/* A view of in with another shape, sharing the buffer. */
static void set_view(rill__kctx *ctx, const rill_tensor *in, const rill_shape *s)
{
    rill_tensor *cached = ctx->recycle ? ctx->recycle[0] : NULL;
    /* Reuse last step's header when it already points at this buffer and nobody holds it. */
    if (cached && cached->buf == in->buf && atomic_load(&cached->refs) == 1) {
        rill__tensor_set_shape(cached, s);
        rill__kctx_set_output(ctx, 0, rill_tensor_ref(cached));
        return;
    }
    atomic_fetch_add(&in->buf->refs, 1);
    rill_tensor *v = rill__tensor_wrap(in->dtype, s, in->buf);
    if (ctx->recycle) rill__recycle_set(&ctx->recycle[0], v);
    rill__kctx_set_output(ctx, 0, v);
}

void rill__cpu_reshape(rill__kctx *ctx)
{
    const rill_tensor *in = ctx->inputs[0], *sh = ctx->inputs[1];
    if (sh->shape.rank != 1 || sh->numel > RILL_MAX_DIMS) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Reshape: the shape must be a vector of at most %d sizes", RILL_MAX_DIMS);
        return;
    }
    rill_shape out = {.rank = (int)sh->numel};
    int unknown = -1;
    int64_t prod = 1;
    for (int i = 0; i < out.rank; i++) {
        out.dims[i] = rill_tensor_get_int64(sh, i);
        if (out.dims[i] == -1 && unknown < 0) {
            unknown = i;
        } else if (out.dims[i] < 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Reshape: size %d is %lld", i,
                            (long long)out.dims[i]);
            return;
        } else if (out.dims[i] > 0 && prod > INT64_MAX / out.dims[i]) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Reshape: the shape's sizes multiply past what an int64 holds");
            return;
        } else {
            prod *= out.dims[i];
        }
    }
    if (unknown >= 0) {
        if (prod == 0 || in->numel % prod) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                            "Input to reshape is a tensor with %lld values, which cannot be "
                            "reshaped with a -1 and the other sizes multiplying to %lld",
                            (long long)in->numel, (long long)prod);
            return;
        }
        out.dims[unknown] = in->numel / prod;
        prod *= out.dims[unknown];
    }
    if (prod != in->numel) {
        char b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Input to reshape is a tensor with %lld values, but the requested shape "
                        "%s has %lld",
                        (long long)in->numel, rill_shape_str(&out, b, sizeof b), (long long)prod);
        return;
    }
    set_view(ctx, in, &out);
}

void rill__cpu_expand_dims(rill__kctx *ctx)
{
    const rill_tensor *in = ctx->inputs[0];
    int64_t axis = rill__attr_int(ctx->node, "axis", 0);
    int rank = in->shape.rank;
    if (axis < 0) axis += rank + 1;
    if (axis < 0 || axis > rank || rank + 1 > RILL_MAX_DIMS) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "ExpandDims: axis out of range for rank %d",
                        rank);
        return;
    }
    rill_shape out = {.rank = rank + 1};
    for (int i = 0, j = 0; i < out.rank; i++) out.dims[i] = i == axis ? 1 : in->shape.dims[j++];
    set_view(ctx, in, &out);
}

/* Converts n elements between any two numeric dtypes (and bool) as TF's Cast does on x86-64:
 * integers convert exactly or wrap modulo the target's width (static_cast); a float to an
 * integer truncates toward zero, and one out of int32's range (or NaN) gives int32's minimum
 * before narrowing (cvttss2si; int64: int64's minimum); anything to bool is != 0 (NaN: true);
 * floats convert through double (exact for every value but int64's past 2^53, which go
 * through an int64 path). */
static bool int_src(rill_dtype t)
{
    return rill_dtype_is_integer(t) || t == RILL_BOOL;
}

static int64_t get_i64(rill_dtype t, const void *src, int64_t i)
{
    switch (t) {
    case RILL_INT8: return ((const int8_t *)src)[i];
    case RILL_INT16: return ((const int16_t *)src)[i];
    case RILL_INT32: return ((const int32_t *)src)[i];
    case RILL_INT64: return ((const int64_t *)src)[i];
    case RILL_UINT8: return ((const uint8_t *)src)[i];
    case RILL_UINT16: return ((const uint16_t *)src)[i];
    case RILL_BOOL: return ((const uint8_t *)src)[i] != 0;
    default: return 0;
    }
}

static double get_f64(rill_dtype t, const void *src, int64_t i)
{
    switch (t) {
    case RILL_FLOAT: return ((const float *)src)[i];
    case RILL_DOUBLE: return ((const double *)src)[i];
    case RILL_HALF: return rill_half_to_float(((const rill_half *)src)[i]);
    case RILL_BFLOAT16: return rill_bfloat16_to_float(((const rill_bfloat16 *)src)[i]);
    default: return (double)get_i64(t, src, i);
    }
}

static void put_i64(rill_dtype t, void *dst, int64_t i, int64_t v)
{
    uint64_t u = (uint64_t)v;
    switch (t) {
    case RILL_INT8: ((int8_t *)dst)[i] = (int8_t)(uint8_t)u; break;
    case RILL_INT16: ((int16_t *)dst)[i] = (int16_t)(uint16_t)u; break;
    case RILL_INT32: ((int32_t *)dst)[i] = (int32_t)(uint32_t)u; break;
    case RILL_INT64: ((int64_t *)dst)[i] = v; break;
    case RILL_UINT8: ((uint8_t *)dst)[i] = (uint8_t)u; break;
    case RILL_UINT16: ((uint16_t *)dst)[i] = (uint16_t)u; break;
    case RILL_BOOL: ((uint8_t *)dst)[i] = v != 0; break;
    case RILL_FLOAT: ((float *)dst)[i] = (float)v; break;
    case RILL_DOUBLE: ((double *)dst)[i] = (double)v; break;
    case RILL_HALF: ((rill_half *)dst)[i] = rill_half_from_float((float)v); break;
    case RILL_BFLOAT16: ((rill_bfloat16 *)dst)[i] = rill_bfloat16_from_float((float)v); break;
    default: break;
    }
}

static void put_f64(rill_dtype t, void *dst, int64_t i, double v)
{
    switch (t) {
    case RILL_FLOAT: ((float *)dst)[i] = (float)v; break;
    case RILL_DOUBLE: ((double *)dst)[i] = v; break;
    case RILL_HALF: ((rill_half *)dst)[i] = rill_half_from_float((float)v); break;
    case RILL_BFLOAT16: ((rill_bfloat16 *)dst)[i] = rill_bfloat16_from_float((float)v); break;
    case RILL_BOOL: ((uint8_t *)dst)[i] = v != 0; break;
    case RILL_INT64:
        ((int64_t *)dst)[i] =
            v == v && v > -9223372036854777856.0 && v < 9223372036854775808.0 ? (int64_t)v
                                                                               : INT64_MIN;
        break;
    default: /* the 32-bit truncation, then narrowed */
        put_i64(t, dst, i, v == v && v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN);
        break;
    }
}

void rill__convert(rill_dtype to, void *dst, rill_dtype from, const void *src, int64_t n)
{
    if (to == from) {
        memcpy(dst, src, (size_t)n * rill_dtype_size(to));
        return;
    }
    if (to == RILL_FLOAT && from == RILL_DOUBLE) {
        for (int64_t i = 0; i < n; i++) ((float *)dst)[i] = (float)((const double *)src)[i];
        return;
    }
    if (to == RILL_DOUBLE && from == RILL_FLOAT) {
        for (int64_t i = 0; i < n; i++) ((double *)dst)[i] = ((const float *)src)[i];
        return;
    }
    if (int_src(from))
        for (int64_t i = 0; i < n; i++) put_i64(to, dst, i, get_i64(from, src, i));
    else
        for (int64_t i = 0; i < n; i++) put_f64(to, dst, i, get_f64(from, src, i));
}

void rill__cpu_cast(rill__kctx *ctx)
{
    const rill_tensor *in = ctx->inputs[0];
    rill_dtype to = rill__attr_type(ctx->node, "DstT", RILL_FLOAT);
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, to, &in->shape);
    rill__convert(to, out->buf->data, in->dtype, in->buf->data, in->numel);
}

/* Writes the scalar v (given as a dtype-typed element) n times. */
static void fill_elems(void *dst, rill_dtype t, const void *v, int64_t n)
{
    size_t es = rill_dtype_size(t);
    if (es == 4) {
        uint32_t x;
        memcpy(&x, v, 4);
        for (int64_t i = 0; i < n; i++) ((uint32_t *)dst)[i] = x;
    } else if (es == 8) {
        uint64_t x;
        memcpy(&x, v, 8);
        for (int64_t i = 0; i < n; i++) ((uint64_t *)dst)[i] = x;
    } else {
        for (int64_t i = 0; i < n; i++) memcpy((char *)dst + (size_t)i * es, v, es);
    }
}

void rill__cpu_fill(rill__kctx *ctx)
{
    const rill_tensor *dims = ctx->inputs[0], *val = ctx->inputs[1];
    if (dims->shape.rank != 1 || dims->numel > RILL_MAX_DIMS || val->numel != 1) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "Fill: dims must be a vector of at most %d sizes and value a scalar",
                        RILL_MAX_DIMS);
        return;
    }
    rill_shape s = {.rank = (int)dims->numel};
    for (int i = 0; i < s.rank; i++) {
        s.dims[i] = rill_tensor_get_int64(dims, i);
        if (s.dims[i] < 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Fill: dims[%d] = %lld must be >= 0", i,
                            (long long)s.dims[i]);
            return;
        }
    }
    if (val->dtype == RILL_STRING) {
        rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "Fill: string values are not supported");
        return;
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, val->dtype, &s);
    if (!out) return;
    fill_elems(out->buf->data, val->dtype, val->buf->data, out->numel);
}

static void fill_like(rill__kctx *ctx, double v)
{
    const rill_tensor *in = ctx->inputs[0];
    if (in->dtype == RILL_STRING) {
        rill__kctx_fail(ctx, RILL_UNIMPLEMENTED, "%s of a string tensor", ctx->node->op->name);
        return;
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, in->dtype, &in->shape);
    char one[8];
    rill__convert(in->dtype, one, RILL_DOUBLE, &v, 1);
    fill_elems(out->buf->data, in->dtype, one, out->numel);
}

void rill__cpu_zeros_like(rill__kctx *ctx)
{
    fill_like(ctx, 0.0);
}

void rill__cpu_ones_like(rill__kctx *ctx)
{
    fill_like(ctx, 1.0);
}

void rill__cpu_shape(rill__kctx *ctx)
{
    const rill_tensor *in = ctx->inputs[0];
    rill_dtype t = rill__attr_type(ctx->node, "out_type", RILL_INT32);
    rill_shape s = rill_shape_vector(in->shape.rank);
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, t, &s);
    for (int i = 0; i < in->shape.rank; i++) {
        if (t == RILL_INT32)
            ((int32_t *)out->buf->data)[i] = (int32_t)in->shape.dims[i];
        else
            ((int64_t *)out->buf->data)[i] = in->shape.dims[i];
    }
}

/* --- StridedSlice --- */

/* Calls fn(arg, o, i, len) for each run: result elements [o, o + len) are input elements i,
 * i + step, ... of the innermost dim (len 1 runs for strings, whose elements are not bytes). */
typedef void (*slice_run_fn)(void *arg, int64_t o, int64_t i, int64_t len, int64_t step);

static void walk_slice(const rill__slice *w, slice_run_fn fn, void *arg)
{
    if (w->n == 0) return;
    if (w->rank == 0) {
        fn(arg, 0, w->base, 1, 1);
        return;
    }
    int r = w->rank;
    int64_t idx[RILL_MAX_DIMS] = {0}, off = w->base, inner = w->count[r - 1];
    for (int64_t o = 0; o < w->n; o += inner) {
        fn(arg, o, off, inner, w->step[r - 1]);
        int d = r - 2;
        for (; d >= 0; d--) {
            off += w->step[d];
            if (++idx[d] < w->count[d]) break;
            off -= w->step[d] * w->count[d];
            idx[d] = 0;
        }
        if (d < 0) break;
    }
}

typedef struct slice_copy {
    char *dst;
    const char *src;
    size_t es;
    bool scatter; /* dst is the input-shaped one (StridedSliceGrad) */
    rill_tensor *dt;
    const rill_tensor *st; /* strings */
} slice_copy;

static void copy_run(void *arg, int64_t o, int64_t i, int64_t len, int64_t step)
{
    const slice_copy *c = arg;
    int64_t *from = c->scatter ? &o : &i, *to = c->scatter ? &i : &o;
    int64_t fstep = c->scatter ? 1 : step, tstep = c->scatter ? step : 1;
    if (c->st) {
        for (int64_t k = 0; k < len; k++) {
            size_t n;
            const char *p = rill_tensor_get_string(c->st, *from + k * fstep, &n);
            rill_tensor_set_string(c->dt, *to + k * tstep, p, n);
        }
        return;
    }
    if (step == 1) {
        memcpy(c->dst + (size_t)*to * c->es, c->src + (size_t)*from * c->es, (size_t)len * c->es);
        return;
    }
    for (int64_t k = 0; k < len; k++)
        memcpy(c->dst + (size_t)(*to + k * tstep) * c->es,
               c->src + (size_t)(*from + k * fstep) * c->es, c->es);
}

static void strided_slice_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    rill__slice w;
    if (!rill__check_strided_slice(ctx, x, NULL, &w)) return;
    rill_tensor *y = rill__kctx_alloc_output(ctx, 0, x->dtype, &w.out);
    if (!y) return;
    bool str = x->dtype == RILL_STRING;
    slice_copy c = {.dst = y->buf->data, .src = x->buf->data, .es = rill_dtype_size(x->dtype),
                    .dt = y, .st = str ? x : NULL};
    walk_slice(&w, copy_run, &c);
}

static void strided_slice_grad_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0], *dy = ctx->inputs[1];
    rill__slice w;
    if (!rill__check_strided_slice(ctx, x, dy, &w)) return;
    rill_tensor *dx = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!dx) return;
    bool str = x->dtype == RILL_STRING;
    if (!str) memset(dx->buf->data, 0, rill_tensor_nbytes(dx));
    slice_copy c = {.dst = dx->buf->data, .src = dy->buf->data, .es = rill_dtype_size(x->dtype),
                    .scatter = true, .dt = dx, .st = str ? dy : NULL};
    if (str)
        for (int64_t i = 0; i < dx->numel; i++) rill_tensor_set_string(dx, i, "", 0);
    walk_slice(&w, copy_run, &c);
}

#define ANY RILL_DT_INVALID
const rill__kernel_def rill__cpu_kernels_array[] = {
    {.op = "Const", .device_type = "CPU", .dtype = ANY, .fn = const_kernel, .constant = true},
    {.op = "Placeholder", .device_type = "CPU", .dtype = ANY, .fn = placeholder_kernel},
    {.op = "Identity", .device_type = "CPU", .dtype = ANY, .fn = rill__cpu_identity,
     .forwards = true},
    {.op = "PlaceholderWithDefault", .device_type = "CPU", .dtype = ANY, .fn = rill__cpu_identity},
    {.op = "NoOp", .device_type = "CPU", .dtype = ANY, .fn = noop_kernel},
    {.op = "Reshape",
     .device_type = "CPU",
     .dtype = ANY,
     .fn = rill__cpu_reshape,
     .host_memory_inputs = 2},
    {.op = "ExpandDims", .device_type = "CPU", .dtype = ANY, .fn = rill__cpu_expand_dims},
    {.op = "Cast", .device_type = "CPU", .dtype = ANY, .fn = rill__cpu_cast},
    {.op = "Fill",
     .device_type = "CPU",
     .dtype = ANY,
     .fn = rill__cpu_fill,
     .host_memory_inputs = 1},
    {.op = "StridedSlice", .device_type = "CPU", .dtype = ANY, .fn = strided_slice_kernel},
    {.op = "StridedSliceGrad",
     .device_type = "CPU",
     .dtype = ANY,
     .fn = strided_slice_grad_kernel},
#ifdef RILL_HAVE_OPENCL
    /* Any dtype the device does not hold, in host memory (cl_array.c has float, double, half). */
    {.op = "StridedSlice",
     .device_type = "OPENCL",
     .dtype = ANY,
     .fn = strided_slice_kernel,
     .host_memory_inputs = ~0u,
     .host_memory_outputs = ~0u},
    {.op = "StridedSliceGrad",
     .device_type = "OPENCL",
     .dtype = ANY,
     .fn = strided_slice_grad_kernel,
     .host_memory_inputs = ~0u,
     .host_memory_outputs = ~0u},
#endif
    {.op = "ZerosLike", .device_type = "CPU", .dtype = ANY, .fn = rill__cpu_zeros_like},
    {.op = "OnesLike", .device_type = "CPU", .dtype = ANY, .fn = rill__cpu_ones_like},
    {.op = "Shape",
     .device_type = "CPU",
     .dtype = ANY,
     .fn = rill__cpu_shape,
     .host_memory_outputs = 1},
    {0},
};
