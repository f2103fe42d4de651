/* tensor.c - dtypes, shapes, ref-counted buffers and tensors.
 *
 * A tensor is a small header (dtype, shape, element count) over a buffer. Headers and buffers are
 * counted separately so that views (Reshape, Identity) share a buffer without copying; an update
 * in place is allowed only when both counts are one (rill__tensor_exclusive). */
#include "core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --- dtypes --- */

size_t rill_dtype_size(rill_dtype t)
{
    switch (t) {
    case RILL_FLOAT: return 4;
    case RILL_DOUBLE: return 8;
    case RILL_INT32: return 4;
    case RILL_INT64: return 8;
    case RILL_BOOL: return 1;
    case RILL_HALF: return 2;
    default: return 0;
    }
}

const char *rill_dtype_name(rill_dtype t)
{
    switch (t) {
    case RILL_FLOAT: return "float";
    case RILL_DOUBLE: return "double";
    case RILL_INT32: return "int32";
    case RILL_INT64: return "int64";
    case RILL_BOOL: return "bool";
    case RILL_HALF: return "half";
    case RILL_STRING: return "string";
    default: return "invalid";
    }
}

bool rill_dtype_is_valid(rill_dtype t)
{
    return t == RILL_STRING || rill_dtype_size(t) != 0;
}

bool rill_dtype_is_float(rill_dtype t)
{
    return t == RILL_FLOAT || t == RILL_DOUBLE || t == RILL_HALF;
}

/* --- half precision (round to nearest even) --- */

rill_half rill_half_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (exp == 0xff) return (rill_half)(sign | 0x7c00u | (man ? 0x200u : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 0x1f) return (rill_half)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return (rill_half)sign;
        man |= 0x800000u;
        int shift = 14 - e;
        uint32_t h = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (rill_half)(sign | h);
    }
    uint32_t h = sign | ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (rill_half)h;
}

float rill_half_to_float(rill_half h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        if (man == 0) {
            x = sign;
        } else {
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400u));
            x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 0x1f) {
        x = sign | 0x7f800000u | (man << 13);
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* --- shapes --- */

rill_shape rill_shape_unknown(void)
{
    rill_shape s = {.rank = -1};
    return s;
}

rill_shape rill_shape_scalar(void)
{
    rill_shape s = {.rank = 0};
    return s;
}

rill_shape rill_shape_vector(int64_t n)
{
    rill_shape s = {.rank = 1, .dims = {n}};
    return s;
}

rill_shape rill_shape_matrix(int64_t rows, int64_t cols)
{
    rill_shape s = {.rank = 2, .dims = {rows, cols}};
    return s;
}

rill_shape rill_shape_make(int rank, const int64_t *dims)
{
    rill_shape s = {.rank = rank};
    if (rank < 0 || rank > RILL_MAX_DIMS) return rill_shape_unknown();
    for (int i = 0; i < rank; i++) s.dims[i] = dims[i] < 0 ? -1 : dims[i];
    return s;
}

bool rill_shape_is_fully_defined(const rill_shape *s)
{
    if (s->rank < 0) return false;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] < 0) return false;
    return true;
}

int64_t rill_shape_num_elements(const rill_shape *s)
{
    if (!rill_shape_is_fully_defined(s)) return -1;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) n *= s->dims[i];
    return n;
}

bool rill_shape_equal(const rill_shape *a, const rill_shape *b)
{
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

const char *rill_shape_str(const rill_shape *s, char *buf, size_t n)
{
    if (n == 0) return buf;
    if (s->rank < 0) {
        snprintf(buf, n, "<unknown>");
        return buf;
    }
    size_t off = 0;
    off += (size_t)snprintf(buf + off, off < n ? n - off : 0, "[");
    for (int i = 0; i < s->rank && off < n; i++) {
        if (s->dims[i] < 0)
            off += (size_t)snprintf(buf + off, n - off, "%s?", i ? "," : "");
        else
            off += (size_t)snprintf(buf + off, n - off, "%s%lld", i ? "," : "",
                                    (long long)s->dims[i]);
    }
    if (off < n) snprintf(buf + off, n - off, "]");
    return buf;
}

/* --- buffers --- */

rill__buffer *rill__buffer_new(rill_dtype t, int64_t numel)
{
    rill__buffer *b = rill__malloc(sizeof *b);
    RILL_CHECK_ALLOC(b);
    atomic_init(&b->refs, 1);
    b->device = 0;
    b->dtype = t;
    b->nstrings = 0;
    if (t == RILL_STRING) {
        b->size = (size_t)numel * sizeof(rill__tstring);
        b->data = rill__calloc((size_t)(numel ? numel : 1), sizeof(rill__tstring));
        b->nstrings = numel;
    } else {
        b->size = (size_t)numel * rill_dtype_size(t);
        b->data = rill__aligned_alloc(b->size);
    }
    RILL_CHECK_ALLOC(b->data);
    return b;
}

void rill__buffer_unref(rill__buffer *b)
{
    if (!b) return;
    if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) return;
    if (b->dtype == RILL_STRING) {
        rill__tstring *ss = b->data;
        for (int64_t i = 0; i < b->nstrings; i++) rill__free(ss[i].ptr);
        rill__free(b->data);
    } else {
        rill__aligned_free(b->data, b->size);
    }
    rill__free(b);
}

/* --- tensors --- */

rill_tensor *rill__tensor_wrap(rill_dtype t, const rill_shape *s, rill__buffer *b)
{
    rill_tensor *x = rill__malloc(sizeof *x);
    RILL_CHECK_ALLOC(x);
    atomic_init(&x->refs, 1);
    x->dtype = t;
    x->shape = *s;
    x->numel = rill_shape_num_elements(s);
    x->buf = b;
    return x;
}

void rill__tensor_set_shape(rill_tensor *t, const rill_shape *s)
{
    t->shape = *s;
    t->numel = rill_shape_num_elements(s);
}

rill_tensor *rill_tensor_new(rill_dtype t, const int64_t *dims, int rank)
{
    if (!rill_dtype_is_valid(t) || rank < 0 || rank > RILL_MAX_DIMS || (rank > 0 && !dims))
        return NULL;
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0) return NULL;
    rill_shape s = rill_shape_make(rank, dims);
    return rill__tensor_wrap(t, &s, rill__buffer_new(t, rill_shape_num_elements(&s)));
}

rill_tensor *rill_tensor_new_shape(rill_dtype t, const rill_shape *s)
{
    if (!rill_shape_is_fully_defined(s)) return NULL;
    return rill_tensor_new(t, s->dims, s->rank);
}

rill_tensor *rill_tensor_from_data(rill_dtype t, const int64_t *dims, int rank, const void *data)
{
    if (t == RILL_STRING) return NULL;
    rill_tensor *x = rill_tensor_new(t, dims, rank);
    if (x && data) memcpy(x->buf->data, data, rill_tensor_nbytes(x));
    return x;
}

rill_tensor *rill_tensor_scalar_float(float v)
{
    return rill_tensor_from_data(RILL_FLOAT, NULL, 0, &v);
}

rill_tensor *rill_tensor_scalar_double(double v)
{
    return rill_tensor_from_data(RILL_DOUBLE, NULL, 0, &v);
}

rill_tensor *rill_tensor_scalar_int32(int32_t v)
{
    return rill_tensor_from_data(RILL_INT32, NULL, 0, &v);
}

rill_tensor *rill_tensor_scalar_int64(int64_t v)
{
    return rill_tensor_from_data(RILL_INT64, NULL, 0, &v);
}

rill_tensor *rill_tensor_scalar_string(const char *s)
{
    rill_tensor *x = rill_tensor_new(RILL_STRING, NULL, 0);
    rill_tensor_set_string(x, 0, s, strlen(s));
    return x;
}

rill_tensor *rill_tensor_ref(rill_tensor *t)
{
    if (t) atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return t;
}

void rill_tensor_free(rill_tensor *t)
{
    if (!t) return;
    if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1) return;
    rill__buffer_unref(t->buf);
    rill__free(t);
}

rill_dtype rill_tensor_dtype(const rill_tensor *t)
{
    return t->dtype;
}

const rill_shape *rill_tensor_shape(const rill_tensor *t)
{
    return &t->shape;
}

int rill_tensor_rank(const rill_tensor *t)
{
    return t->shape.rank;
}

int64_t rill_tensor_dim(const rill_tensor *t, int i)
{
    return i >= 0 && i < t->shape.rank ? t->shape.dims[i] : -1;
}

int64_t rill_tensor_num_elements(const rill_tensor *t)
{
    return t->numel;
}

size_t rill_tensor_nbytes(const rill_tensor *t)
{
    if (t->dtype == RILL_STRING) return (size_t)t->numel * sizeof(rill__tstring);
    return (size_t)t->numel * rill_dtype_size(t->dtype);
}

void *rill_tensor_data(const rill_tensor *t)
{
    return t->buf->data;
}

int rill_tensor_set_string(rill_tensor *t, int64_t i, const char *s, size_t len)
{
    if (t->dtype != RILL_STRING || i < 0 || i >= t->numel) return -1;
    rill__tstring *ss = t->buf->data;
    rill__free(ss[i].ptr);
    ss[i].ptr = rill__strndup(s, len);
    ss[i].len = len;
    return 0;
}

const char *rill_tensor_get_string(const rill_tensor *t, int64_t i, size_t *len)
{
    if (t->dtype != RILL_STRING || i < 0 || i >= t->numel) {
        if (len) *len = 0;
        return NULL;
    }
    const rill__tstring *ss = t->buf->data;
    if (len) *len = ss[i].len;
    return ss[i].ptr ? ss[i].ptr : "";
}

double rill_tensor_get_double(const rill_tensor *t, int64_t i)
{
    const void *d = t->buf->data;
    switch (t->dtype) {
    case RILL_FLOAT: return ((const float *)d)[i];
    case RILL_DOUBLE: return ((const double *)d)[i];
    case RILL_INT32: return ((const int32_t *)d)[i];
    case RILL_INT64: return (double)((const int64_t *)d)[i];
    case RILL_BOOL: return ((const uint8_t *)d)[i] ? 1.0 : 0.0;
    case RILL_HALF: return rill_half_to_float(((const rill_half *)d)[i]);
    default: return NAN;
    }
}

rill_tensor *rill_tensor_copy(const rill_tensor *t)
{
    rill_tensor *c = rill_tensor_new(t->dtype, t->shape.dims, t->shape.rank);
    if (t->dtype == RILL_STRING) {
        for (int64_t i = 0; i < t->numel; i++) {
            size_t len;
            const char *s = rill_tensor_get_string(t, i, &len);
            rill_tensor_set_string(c, i, s, len);
        }
    } else {
        memcpy(c->buf->data, t->buf->data, rill_tensor_nbytes(t));
    }
    return c;
}

/* numpy-like printing: floats as "2." or "0.5", nested brackets per dimension. */
static size_t put_elem(const rill_tensor *t, int64_t i, char *buf, size_t n)
{
    char tmp[64];
    if (t->dtype == RILL_STRING) {
        size_t len;
        const char *s = rill_tensor_get_string(t, i, &len);
        return (size_t)snprintf(buf, n, "b'%.*s'", (int)len, s);
    }
    if (t->dtype == RILL_BOOL) return (size_t)snprintf(buf, n, "%s", ((const uint8_t *)t->buf->data)[i] ? "True" : "False");
    double v = rill_tensor_get_double(t, i);
    if (!rill_dtype_is_float(t->dtype)) return (size_t)snprintf(buf, n, "%lld", (long long)v);
    if (v == floor(v) && fabs(v) < 1e16) {
        snprintf(tmp, sizeof tmp, "%.0f.", v);
    } else {
        snprintf(tmp, sizeof tmp, "%.8g", v);
    }
    return (size_t)snprintf(buf, n, "%s", tmp);
}

const char *rill_tensor_str(const rill_tensor *t, char *buf, size_t n)
{
    if (!n) return buf;
    buf[0] = 0;
    size_t off = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (off < n) off += (size_t)snprintf(buf + off, n - off, __VA_ARGS__);                     \
    } while (0)
    int rank = t->shape.rank;
    if (rank == 0) {
        if (t->numel) off += put_elem(t, 0, buf, n);
        return buf;
    }
    int64_t idx[RILL_MAX_DIMS] = {0};
    for (int d = 0; d < rank; d++) PUT("[");
    for (int64_t i = 0; i < t->numel; i++) {
        if (off < n) off += put_elem(t, i, buf + off, n - off);
        int d = rank - 1;
        int closed = 0;
        while (d >= 0 && ++idx[d] == t->shape.dims[d]) {
            idx[d] = 0;
            PUT("]");
            closed++;
            d--;
        }
        if (i + 1 < t->numel) {
            if (closed == 0) {
                PUT(" ");
            } else {
                PUT("\n");
                for (int k = 0; k < closed; k++) PUT("[");
            }
        }
    }
    if (t->numel == 0)
        for (int d = 0; d < rank; d++) PUT("]");
#undef PUT
    return buf;
}
