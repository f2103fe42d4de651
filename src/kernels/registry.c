/* registry.c - the kernel registry and the kernel-context helpers.
 *
 * Kernels are registered in static tables, one per kernel file and backend, terminated by an
 * entry with a NULL op. Lookup is by (op, device type, dtype); an entry with dtype
 * RILL_DT_INVALID serves every dtype. The tables are indexed by op name on first use. */
#include "kernel.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>

extern const rill__kernel_def rill__cpu_kernels_array[];
extern const rill__kernel_def rill__cpu_kernels_math[];
extern const rill__kernel_def rill__cpu_kernels_nn[];
extern const rill__kernel_def rill__cpu_kernels_state[];
extern const rill__kernel_def rill__cpu_kernels_summary[];
extern const rill__kernel_def rill__generic_kernels[];
extern const rill__kernel_def rill__control_flow_kernels[];
extern const rill__kernel_def rill__cpu_kernels_tensor_array[];
extern const rill__kernel_def rill__cpu_kernels_data_flow[];
extern const rill__kernel_def rill__cpu_kernels_io[];
extern const rill__kernel_def rill__cpu_kernels_fused[];
extern const rill__kernel_def rill__cpu_kernels_select[];
extern const rill__kernel_def rill__cpu_kernels_conv[];
extern const rill__kernel_def rill__cpu_kernels_dataset[];
extern const rill__kernel_def rill__cpu_kernels_dataset2[];
extern const rill__kernel_def rill__cpu_kernels_reduce[];
extern const rill__kernel_def rill__cpu_kernels_shape[];
extern const rill__kernel_def rill__cpu_kernels_elementwise[];
extern const rill__kernel_def rill__cpu_kernels_apply[];
extern const rill__kernel_def rill__cpu_kernels_loss[];
extern const rill__kernel_def rill__cpu_kernels_norm[];
extern const rill__kernel_def rill__cpu_kernels_depthwise[];
extern const rill__kernel_def rill__cpu_kernels_pool_half[];
extern const rill__kernel_def rill__cpu_kernels_index[];
extern const rill__kernel_def rill__cpu_kernels_sparse_apply[];
extern const rill__kernel_def rill__cpu_kernels_queue[];
extern const rill__kernel_def rill__cpu_kernels_random[];
extern const rill__kernel_def rill__cpu_kernels_image[];
extern const rill__kernel_def rill__cpu_kernels_image_codec[];
extern const rill__kernel_def rill__cpu_kernels_pool_argmax[];
extern const rill__kernel_def rill__cpu_kernels_dilation[];
extern const rill__kernel_def rill__cpu_kernels_segment[];
extern const rill__kernel_def rill__cpu_kernels_search[];
extern const rill__kernel_def rill__cpu_kernels_permute[];
extern const rill__kernel_def rill__cpu_kernels_linalg[];
extern const rill__kernel_def rill__cpu_kernels_sparse[];
extern const rill__kernel_def rill__cpu_kernels_conv3d[];
extern const rill__kernel_def rill__cpu_kernels_adagrad_da[];
extern const rill__kernel_def rill__cpu_kernels_string[];
extern const rill__kernel_def rill__cpu_kernels_check[];
#ifdef RILL_HAVE_OPENCL
extern const rill__kernel_def rill__opencl_kernels_math[];
extern const rill__kernel_def rill__opencl_kernels_nn[];
extern const rill__kernel_def rill__opencl_kernels_state[];
extern const rill__kernel_def rill__opencl_kernels_conv[];
extern const rill__kernel_def rill__opencl_kernels_select[];
extern const rill__kernel_def rill__opencl_kernels_array[];
extern const rill__kernel_def rill__opencl_kernels_apply[];
extern const rill__kernel_def rill__opencl_kernels_loss[];
extern const rill__kernel_def rill__opencl_kernels_norm[];
extern const rill__kernel_def rill__opencl_kernels_depthwise[];
extern const rill__kernel_def rill__opencl_kernels_index[];
extern const rill__kernel_def rill__opencl_kernels_sparse_apply[];
extern const rill__kernel_def rill__opencl_kernels_elementwise[];
extern const rill__kernel_def rill__opencl_kernels_reduce[];
extern const rill__kernel_def rill__opencl_kernels_shape[];
extern const rill__kernel_def rill__opencl_kernels_permute[];
extern const rill__kernel_def rill__opencl_kernels_conv3d[];
#endif

static const rill__kernel_def *const *tables(void)
{
    static const rill__kernel_def *const t[] = {
        rill__cpu_kernels_array,
        rill__cpu_kernels_math,
        rill__cpu_kernels_nn,
        rill__cpu_kernels_state,
        rill__cpu_kernels_summary,
        rill__generic_kernels,
        rill__control_flow_kernels,
        rill__cpu_kernels_tensor_array,
        rill__cpu_kernels_data_flow,
        rill__cpu_kernels_io,
        rill__cpu_kernels_fused,
        rill__cpu_kernels_select,
        rill__cpu_kernels_conv,
        rill__cpu_kernels_dataset,
        rill__cpu_kernels_elementwise,
        rill__cpu_kernels_apply,
        rill__cpu_kernels_loss,
        rill__cpu_kernels_norm,
        rill__cpu_kernels_depthwise,
        rill__cpu_kernels_pool_half,
        rill__cpu_kernels_index,
        rill__cpu_kernels_sparse_apply,
        rill__cpu_kernels_queue,
        rill__cpu_kernels_random,
        rill__cpu_kernels_image,
        rill__cpu_kernels_image_codec,
        rill__cpu_kernels_conv3d,
#ifdef RILL_HAVE_OPENCL
        rill__opencl_kernels_math,
        rill__opencl_kernels_nn,
        rill__opencl_kernels_state,
        rill__opencl_kernels_conv,
        rill__opencl_kernels_select,
        rill__opencl_kernels_array,
        rill__opencl_kernels_apply,
        rill__opencl_kernels_loss,
        rill__opencl_kernels_norm,
        rill__opencl_kernels_depthwise,
        rill__opencl_kernels_index,
        rill__opencl_kernels_sparse_apply,
        rill__opencl_kernels_elementwise,
        rill__opencl_kernels_reduce,
        rill__opencl_kernels_shape,
        rill__opencl_kernels_permute,
        rill__opencl_kernels_conv3d,
#endif
        rill__cpu_kernels_reduce,
        rill__cpu_kernels_shape,
        rill__cpu_kernels_pool_argmax,
        rill__cpu_kernels_dilation,
        rill__cpu_kernels_segment,
        rill__cpu_kernels_search,
        rill__cpu_kernels_permute,
        rill__cpu_kernels_linalg,
        rill__cpu_kernels_sparse,
        rill__cpu_kernels_adagrad_da,
        rill__cpu_kernels_string,
        rill__cpu_kernels_dataset2,
        rill__cpu_kernels_check,
        NULL,
    };
    return t;
}

static _Atomic(const rill__function_runner *) function_runner;

void rill__function_runner_set(const rill__function_runner *r)
{
    atomic_store(&function_runner, r);
}

const rill__function_runner *rill__function_runner_get(void)
{
    return atomic_load(&function_runner);
}

const rill__kernel_def *rill__kernel_lookup(const char *op, const char *device_type,
                                            rill_dtype dtype)
{
    const rill__kernel_def *any = NULL;
    for (const rill__kernel_def *const *t = tables(); *t; t++)
        for (const rill__kernel_def *k = *t; k->op; k++) {
            if (strcmp(k->op, op) != 0 || strcmp(k->device_type, device_type) != 0) continue;
            if (k->dtype == dtype) return k;
            if (k->dtype == RILL_DT_INVALID) any = k;
        }
    return any;
}

static const char *tf_dtype_name(rill_dtype t)
{
    switch (t) {
    case RILL_FLOAT:
        return "DT_FLOAT";
    case RILL_DOUBLE:
        return "DT_DOUBLE";
    case RILL_INT32:
        return "DT_INT32";
    case RILL_INT64:
        return "DT_INT64";
    case RILL_BOOL:
        return "DT_BOOL";
    case RILL_HALF:
        return "DT_HALF";
    case RILL_STRING:
        return "DT_STRING";
    case RILL_INT8:
        return "DT_INT8";
    case RILL_INT16:
        return "DT_INT16";
    case RILL_UINT8:
        return "DT_UINT8";
    case RILL_UINT16:
        return "DT_UINT16";
    case RILL_BFLOAT16:
        return "DT_BFLOAT16";
    default:
        return "DT_INVALID";
    }
}

char *rill__kernels_registered_for(const char *op)
{
    size_t cap = 256, off = 0;
    char *buf = rill__malloc(cap);
    RILL_CHECK_ALLOC(buf);
    buf[0] = 0;
    for (const rill__kernel_def *const *t = tables(); *t; t++)
        for (const rill__kernel_def *k = *t; k->op; k++) {
            if (strcmp(k->op, op) != 0) continue;
            char line[160];
            int n = k->dtype == RILL_DT_INVALID
                        ? snprintf(line, sizeof line, "  device='%s'\n", k->device_type)
                        : snprintf(line, sizeof line, "  device='%s'; T in [%s]\n", k->device_type,
                                   tf_dtype_name(k->dtype));
            size_t len = n < 0 ? 0 : (size_t)n >= sizeof line ? sizeof line - 1 : (size_t)n;
            while (off + len + 1 > cap) {
                cap *= 2;
                buf = rill__realloc(buf, cap);
                RILL_CHECK_ALLOC(buf);
            }
            memcpy(buf + off, line, len + 1);
            off += len;
        }
    if (!off) {
        rill__free(buf);
        return rill__strdup("  <no registered kernels>\n");
    }
    return buf;
}

rill_tensor *rill__kctx_alloc_output(rill__kctx *ctx, int i, rill_dtype t, const rill_shape *s)
{
    int64_t numel = rill_shape_num_elements(s);
    if (numel < 0) { /* a shape from a tensor whose size int64 cannot hold */
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "a tensor of shape %s has more elements than an int64 counts",
                        rill_shape_str(s, (char[96]){0}, 96));
        return NULL;
    }
    rill__device *dev = ctx->device;
    if (!dev || rill__bit32(ctx->host_memory_outputs, i) || t == RILL_STRING) dev = NULL;
    if (dev && !dev->ops) dev = NULL; /* CPU:0: host memory */
    rill_tensor *c = ctx->recycle ? ctx->recycle[i] : NULL;
    rill_tensor *out;
    bool fits = c && c->dtype == t && c->numel == numel && t != RILL_STRING && c->buf->dev == dev &&
                rill__tensor_exclusive(c);
    rill_tensor *c2 = !fits && ctx->recycle2 ? ctx->recycle2[i] : NULL;
    if (c2 && c2->dtype == t && c2->numel == numel && t != RILL_STRING && c2->buf->dev == dev &&
        rill__tensor_exclusive(c2)) {
        /* the last output is still held (a loop variable): the one before is free */
        ctx->recycle2[i] = c;
        ctx->recycle[i] = c = c2;
        fits = true;
    }
    if (fits) {
        c->shape = *s; /* (numel is the same) */
        out = rill_tensor_ref(c);
    } else {
        rill__buffer *b = rill__buffer_new_on(dev, t, numel);
        if (!b) {
            rill__kctx_fail(ctx, RILL_RESOURCE_EXHAUSTED,
                            "OOM when allocating tensor with shape %s and type %s on %s",
                            rill_shape_str(s, (char[96]){0}, 96), rill_dtype_name(t),
                            dev ? dev->name : "the host");
            return NULL;
        }
        out = rill__tensor_wrap(t, s, b);
        if (ctx->recycle2) rill__recycle_set(&ctx->recycle2[i], ctx->recycle[i]);
        if (ctx->recycle) rill__recycle_set(&ctx->recycle[i], out);
    }
    rill_tensor_free(ctx->outputs[i]);
    ctx->outputs[i] = out;
    return out;
}

void rill__kctx_set_output(rill__kctx *ctx, int i, rill_tensor *t)
{
    rill_tensor_free(ctx->outputs[i]);
    ctx->outputs[i] = t;
}

void rill__kctx_fail(rill__kctx *ctx, rill_code code, const char *fmt, ...)
{
    if (ctx->status) return;
    ctx->status = rill_status_new();
    va_list ap;
    va_start(ap, fmt);
    rill_status_setv(ctx->status, code, fmt, ap);
    va_end(ap);
}

static void rng_free(void *p)
{
    rill__free(p);
}

rill__rng *rill__kctx_rng(rill__kctx *ctx)
{
    if (!*ctx->state) {
        rill__rng *r = rill__malloc(sizeof *r);
        RILL_CHECK_ALLOC(r);
        const rill_node *n = ctx->node;
        uint64_t seed = (n->seed || n->seed2)
                            ? (uint64_t)n->seed * 0x9e3779b97f4a7c15ull ^ (uint64_t)n->seed2
                            : rill__random_seed();
        rill__rng_seed(r, seed);
        *ctx->state = r;
    }
    return *ctx->state;
}

/* Registered as the state_free of every kernel that uses rill__kctx_rng. */
void rill__kctx_rng_free(void *p)
{
    rng_free(p);
}

bool rill__bcast_init(rill__bcast *bc, const rill_shape *a, const rill_shape *b)
{
    /* One shape on both sides (a loop counter's i + 1, most of a model's ops): no broadcast to
     * work out, and no zeroing of the whole struct (it showed in a loop iteration's profile). */
    if (a->rank == b->rank && a->rank >= 0 &&
        memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) == 0) {
        int64_t n = 1;
        for (int i = a->rank - 1; i >= 0; i--) {
            bc->out_dims[i] = a->dims[i];
            bc->a_strides[i] = bc->b_strides[i] = a->dims[i] == 1 ? 0 : n;
            n *= a->dims[i];
        }
        bc->out = *a;
        bc->rank = a->rank;
        bc->same = true;
        bc->a_scalar = bc->b_scalar = n == 1;
        return true;
    }
    memset(bc, 0, sizeof *bc);
    int rank = a->rank > b->rank ? a->rank : b->rank;
    bc->rank = rank;
    int64_t sa = 1, sb = 1;
    int64_t as[RILL_MAX_DIMS], bs[RILL_MAX_DIMS];
    for (int i = rank - 1; i >= 0; i--) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) return false;
        int64_t d = da > db ? da : db;
        if (da == 0 || db == 0) d = 0;
        bc->out_dims[i] = d;
        as[i] = da == 1 ? 0 : sa;
        bs[i] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
    }
    memcpy(bc->a_strides, as, sizeof(int64_t) * (size_t)rank);
    memcpy(bc->b_strides, bs, sizeof(int64_t) * (size_t)rank);
    bc->out = rill_shape_make(rank, bc->out_dims);
    int64_t on = rill_shape_num_elements(&bc->out);
    bc->same = rill_shape_num_elements(a) == on && rill_shape_num_elements(b) == on &&
               a->rank == rank && b->rank == rank;
    bc->a_scalar = rill_shape_num_elements(a) == 1;
    bc->b_scalar = rill_shape_num_elements(b) == 1;
    return true;
}
