/* cpu_rows.h - what the row-wise CPU kernels share (cpu_index.c: gathers, scatters, segment sums;
 * cpu_sparse_apply.c: the sparse optimizer updates): adding a run of elements of any numeric
 * dtype into another, reading an int32/int64 index, checking segment ids against data, formatting
 * an index's position as TF's SliceDebugString does, and making a variable's value writable
 * (copy-on-write, as cpu_state.c's updates do). */
#ifndef RILL_KERNELS_CPU_ROWS_H
#define RILL_KERNELS_CPU_ROWS_H

#include "../kernel.h"

#include <stdio.h>
#include <string.h>

/* Element i of an int32 or int64 tensor. */
static inline int64_t rill__index_at(const rill_tensor *t, int64_t i)
{
    return t->dtype == RILL_INT32 ? ((const int32_t *)t->buf->data)[i]
                                  : ((const int64_t *)t->buf->data)[i];
}

/* segment_ids' shape starts data's: else false, and TF's text in ctx. */
static inline bool rill__ids_prefix_ok(rill__kctx *ctx, const rill_tensor *d,
                                       const rill_tensor *ids)
{
    bool ok = ids->shape.rank <= d->shape.rank;
    for (int i = 0; ok && i < ids->shape.rank; i++) ok = ids->shape.dims[i] == d->shape.dims[i];
    if (!ok) {
        char a[96], b[96];
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT,
                        "data.shape = %s does not start with segment_ids.shape = %s",
                        rill_shape_str(&d->shape, a, sizeof a),
                        rill_shape_str(&ids->shape, b, sizeof b));
    }
    return ok;
}

/* dst[0..n) += sign * src[0..n) (sign 0: dst = src), dtype t. False for a dtype without
 * arithmetic (strings, bool when adding). */
static inline bool rill__rows_add(rill_dtype t, void *dst, const void *src, int64_t n, int sign)
{
    if (sign == 0) {
        memcpy(dst, src, (size_t)n * rill_dtype_size(t));
        return true;
    }
#define RILL__ROWS_ADD(T)                                                                          \
    do {                                                                                           \
        T *d = dst;                                                                                \
        const T *s = src;                                                                          \
        if (sign > 0)                                                                              \
            for (int64_t i = 0; i < n; i++) d[i] = (T)(d[i] + s[i]);                               \
        else                                                                                       \
            for (int64_t i = 0; i < n; i++) d[i] = (T)(d[i] - s[i]);                               \
    } while (0)
    switch (t) {
    case RILL_FLOAT:
        RILL__ROWS_ADD(float);
        return true;
    case RILL_DOUBLE:
        RILL__ROWS_ADD(double);
        return true;
    case RILL_INT32:
        RILL__ROWS_ADD(int32_t);
        return true;
    case RILL_INT64:
        RILL__ROWS_ADD(int64_t);
        return true;
    case RILL_HALF: {
        rill_half *d = dst;
        const rill_half *s = src;
        for (int64_t i = 0; i < n; i++)
            d[i] = rill_half_from_float(rill_half_to_float(d[i]) +
                                        (float)sign * rill_half_to_float(s[i]));
        return true;
    }
    default:
        return false;
    }
#undef RILL__ROWS_ADD
}

/* "[1,0]": the coordinates of flat element i of shape s (TF's SliceDebugString). */
static inline const char *rill__index_pos(const rill_shape *s, int64_t i, char *buf, size_t len)
{
    int64_t c[RILL_MAX_DIMS];
    for (int d = s->rank - 1; d >= 0; d--) {
        int64_t n = s->dims[d] > 0 ? s->dims[d] : 1;
        c[d] = i % n;
        i /= n;
    }
    size_t o = 0;
    buf[o++] = '[';
    for (int d = 0; d < s->rank && o + 24 < len; d++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", d ? "," : "", (long long)c[d]);
    snprintf(buf + o, len - o, "]");
    return buf;
}

/* The value of variable v made writable (copied when anyone else holds it). Call with v's lock
 * held. NULL (ctx failed) when v is uninitialised. */
static inline rill_tensor *rill__var_writable(rill__kctx *ctx, rill__var *v)
{
    if (!v->value) {
        rill__kctx_fail(ctx, RILL_FAILED_PRECONDITION, "Attempting to use uninitialized value %s",
                        v->name);
        return NULL;
    }
    if (!rill__tensor_exclusive(v->value)) {
        rill_tensor *c = rill_tensor_copy(v->value);
        rill_tensor_free(v->value);
        v->value = c;
    }
    return v->value;
}

#endif
