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
    case RILL_FLOAT:
        return 4;
    case RILL_DOUBLE:
        return 8;
    case RILL_INT32:
        return 4;
    case RILL_INT64:
        return 8;
    case RILL_BOOL:
        return 1;
    case RILL_HALF:
    case RILL_BFLOAT16:
    case RILL_INT16:
    case RILL_UINT16:
        return 2;
    case RILL_INT8:
    case RILL_UINT8:
        return 1;
    default:
        return 0;
    }
}

const char *rill_dtype_name(rill_dtype t)
{
    switch (t) {
    case RILL_FLOAT:
        return "float";
    case RILL_DOUBLE:
        return "double";
    case RILL_INT32:
        return "int32";
    case RILL_INT64:
        return "int64";
    case RILL_BOOL:
        return "bool";
    case RILL_HALF:
        return "half";
    case RILL_STRING:
        return "string";
    case RILL_INT8:
        return "int8";
    case RILL_INT16:
        return "int16";
    case RILL_UINT8:
        return "uint8";
    case RILL_UINT16:
        return "uint16";
    case RILL_BFLOAT16:
        return "bfloat16";
    default:
        return "invalid";
    }
}

bool rill_dtype_is_valid(rill_dtype t)
{
    return t == RILL_STRING || rill_dtype_size(t) != 0;
}

bool rill_dtype_is_float(rill_dtype t)
{
    return t == RILL_FLOAT || t == RILL_DOUBLE || t == RILL_HALF || t == RILL_BFLOAT16;
}

bool rill_dtype_is_integer(rill_dtype t)
{
    return t == RILL_INT8 || t == RILL_INT16 || t == RILL_INT32 || t == RILL_INT64 ||
           t == RILL_UINT8 || t == RILL_UINT16;
}

/* --- bfloat16 (round to nearest even, as TF's float -> bfloat16 Cast) --- */

rill_bfloat16 rill_bfloat16_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (rill_bfloat16)((x >> 16) | 0x40u); /* NaN */
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (rill_bfloat16)(x >> 16);
}

float rill_bfloat16_to_float(rill_bfloat16 h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
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
    bool overflow = false;
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] == 0) return 0;
        if (!overflow) overflow = __builtin_mul_overflow(n, s->dims[i], &n);
    }
    return overflow ? -1 : n;
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
            off +=
                (size_t)snprintf(buf + off, n - off, "%s%lld", i ? "," : "", (long long)s->dims[i]);
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
    b->dev = NULL;
    b->dev_free = NULL;
    b->parent = NULL;
    b->foreign = false;
    b->release = NULL;
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
    if (b->parent) {
        rill__buffer_unref(b->parent);
    } else if (b->foreign) {
        if (b->release) b->release(b->release_ctx);
    } else if (b->dtype == RILL_STRING) {
        rill__tstring *ss = b->data;
        for (int64_t i = 0; i < b->nstrings; i++) rill__free(ss[i].ptr);
        rill__free(b->data);
    } else if (b->dev) {
        b->dev_free(b->dev, b->data, b->size);
    } else {
        rill__aligned_free(b->data, b->size);
    }
    rill__free(b);
}

rill__buffer *rill__buffer_adopt(void *data, size_t size)
{
    rill__buffer *b = rill__calloc(1, sizeof *b);
    RILL_CHECK_ALLOC(b);
    atomic_init(&b->refs, 1);
    b->data = data;
    b->size = size;
    b->dtype = RILL_INT32; /* plain bytes: anything but RILL_STRING */
    return b;
}

rill_tensor *rill__tensor_view(rill__buffer *parent, size_t off, rill_dtype t, const rill_shape *s)
{
    rill__buffer *b = rill__calloc(1, sizeof *b);
    RILL_CHECK_ALLOC(b);
    atomic_init(&b->refs, 1);
    atomic_fetch_add(&parent->refs, 1);
    b->parent = parent;
    b->data = (char *)parent->data + off;
    b->size = (size_t)rill_shape_num_elements(s) * rill_dtype_size(t);
    b->dtype = t;
    return rill__tensor_wrap(t, s, b);
}

/* --- tensors --- */

rill_tensor *rill__tensor_wrap(rill_dtype t, const rill_shape *s, rill__buffer *b)
{
    rill_tensor *x = rill__malloc(sizeof *x);
    RILL_CHECK_ALLOC(x);
    atomic_init(&x->refs, 1);
    atomic_init(&x->recycle_refs, 0);
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
    int64_t numel = rill_shape_num_elements(&s);
    if (numel < 0) return NULL; /* more elements than int64_t counts */
    return rill__tensor_wrap(t, &s, rill__buffer_new(t, numel));
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

rill_tensor *rill_tensor_new_borrowed(rill_dtype t, const int64_t *dims, int rank, void *data,
                                      void (*release)(void *ctx), void *ctx)
{
    if (!rill_dtype_is_valid(t) || t == RILL_STRING || rank < 0 || rank > RILL_MAX_DIMS ||
        (rank > 0 && !dims))
        return NULL;
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0) return NULL;
    size_t align = rill_dtype_size(t);
    rill_shape sh = rill_shape_make(rank, dims);
    int64_t numel = rill_shape_num_elements(&sh);
    if (numel > 0 && (!data || (uintptr_t)data % align != 0)) return NULL;
    rill__buffer *b = rill__calloc(1, sizeof *b);
    RILL_CHECK_ALLOC(b);
    atomic_init(&b->refs, 1);
    b->data = data;
    b->size = (size_t)numel * align;
    b->dtype = t;
    b->foreign = true;
    b->release = release;
    b->release_ctx = ctx;
    return rill__tensor_wrap(t, &sh, b);
}

bool rill_tensor_is_exclusive(const rill_tensor *t)
{
    if (!t || t->buf->foreign || (t->buf->parent && t->buf->parent->foreign)) return false;
    int others = atomic_load_explicit(&t->refs, memory_order_acquire) -
                 atomic_load_explicit(&t->recycle_refs, memory_order_acquire);
    return others == 1 && atomic_load_explicit(&t->buf->refs, memory_order_acquire) == 1;
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
    case RILL_FLOAT:
        return ((const float *)d)[i];
    case RILL_DOUBLE:
        return ((const double *)d)[i];
    case RILL_INT32:
        return ((const int32_t *)d)[i];
    case RILL_INT64:
        return (double)((const int64_t *)d)[i];
    case RILL_BOOL:
        return ((const uint8_t *)d)[i] ? 1.0 : 0.0;
    case RILL_HALF:
        return rill_half_to_float(((const rill_half *)d)[i]);
    case RILL_BFLOAT16:
        return rill_bfloat16_to_float(((const rill_bfloat16 *)d)[i]);
    case RILL_INT8:
        return ((const int8_t *)d)[i];
    case RILL_INT16:
        return ((const int16_t *)d)[i];
    case RILL_UINT8:
        return ((const uint8_t *)d)[i];
    case RILL_UINT16:
        return ((const uint16_t *)d)[i];
    default:
        return NAN;
    }
}

int64_t rill_tensor_get_int64(const rill_tensor *t, int64_t i)
{
    const void *d = t->buf->data;
    switch (t->dtype) {
    case RILL_INT32:
        return ((const int32_t *)d)[i];
    case RILL_INT64:
        return ((const int64_t *)d)[i];
    case RILL_BOOL:
        return ((const uint8_t *)d)[i] != 0;
    case RILL_INT8:
        return ((const int8_t *)d)[i];
    case RILL_INT16:
        return ((const int16_t *)d)[i];
    case RILL_UINT8:
        return ((const uint8_t *)d)[i];
    case RILL_UINT16:
        return ((const uint16_t *)d)[i];
    default: {
        /* A float out of int64's range (or NaN) must not reach the cast: that is undefined. */
        double v = rill_tensor_get_double(t, i);
        if (!(v == v)) return 0;
        if (v >= 9223372036854775807.0) return INT64_MAX;
        if (v <= -9223372036854775808.0) return INT64_MIN;
        return (int64_t)v;
    }
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

/* --- printing, as numpy 2's str() does it ---
 *
 * An array prints as numpy's array_str with default options: every element formatted alike
 * (floats aligned on the decimal point with up to 8 fractional digits, or all in scientific
 * notation when the magnitudes call for it; integers and bools right-aligned), rows wrapped at
 * 75 columns, nested dimensions on new lines indented under their bracket ("[[1. 2.]\n [3.
 * 4.]]"), and arrays above 1000 elements summarised with "..." around 3 edge items per axis.
 * A rank-0 tensor prints as the scalar would ("2.0", "7", "True"). */

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static void sb_putn(sbuf *b, const char *s, size_t len)
{
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (b->n + len + 1 > cap) cap *= 2;
        char *p = rill__realloc(b->p, cap);
        RILL_CHECK_ALLOC(p);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = 0;
}

static void sb_puts(sbuf *b, const char *s)
{
    sb_putn(b, s, strlen(s));
}

static void sb_pad(sbuf *b, char c, int count)
{
    for (int i = 0; i < count; i++) sb_putn(b, &c, 1);
}

/* True when the decimal string s reads back as v in dtype t (numpy's "unique" digits). */
static bool round_trips(rill_dtype t, double v, const char *s)
{
    double r = strtod(s, NULL);
    switch (t) {
    case RILL_FLOAT:
        return (float)r == (float)v;
    case RILL_HALF:
        return rill_half_from_float((float)r) == rill_half_from_float((float)v);
    case RILL_BFLOAT16:
        return rill_bfloat16_from_float((float)r) == rill_bfloat16_from_float((float)v);
    default:
        return r == v;
    }
}

/* The fewest fractional digits (at most maxp, trailing zeros trimmed) that identify v, in
 * positional ("%f") or scientific ("%e") notation. */
static int unique_digits(rill_dtype t, double v, bool sci, int maxp)
{
    char tmp[400];
    for (int p = 0; p < maxp; p++) {
        snprintf(tmp, sizeof tmp, sci ? "%.*e" : "%.*f", p, v);
        if (round_trips(t, v, tmp)) return p;
    }
    snprintf(tmp, sizeof tmp, sci ? "%.*e" : "%.*f", maxp, v);
    char *dot = strchr(tmp, '.');
    if (!dot) return 0;
    char *end = sci ? strchr(dot, 'e') : dot + strlen(dot);
    int p = (int)(end - dot - 1);
    while (p > 0 && dot[p] == '0') p--;
    return p;
}

/* int64 elements are read exactly (a double would round above 2^53). */
static long long get_int(const rill_tensor *t, int64_t i)
{
    if (t->dtype == RILL_INT64) return (long long)((const int64_t *)t->buf->data)[i];
    return (long long)rill_tensor_get_double(t, i);
}

/* How every element of one array is formatted (numpy's FloatingFormat and friends). */
typedef struct elem_fmt {
    const rill_tensor *t;
    bool summarize;
    bool sci; /* floats: scientific notation */
    int prec; /* floats: fractional digits (scientific: exactly; positional: at most) */
    int exp_digits;
    int pad_left;  /* floats: width of the integer part */
    int pad_right; /* floats: width of the fractional part (scientific: with the exponent) */
    int width;     /* integers and bools: field width */
} elem_fmt;

/* Whether element i shows when the array is summarised (edge items of every axis). */
static bool shown(const elem_fmt *f, int64_t i)
{
    if (!f->summarize) return true;
    const rill_shape *s = &f->t->shape;
    for (int d = s->rank - 1; d >= 0; d--) {
        int64_t k = i % s->dims[d];
        i /= s->dims[d];
        if (s->dims[d] > 6 && k >= 3 && k < s->dims[d] - 3) return false;
    }
    return true;
}

static void split_sci(const char *s, int *int_len, int *exp_val)
{
    const char *e = strchr(s, 'e');
    const char *dot = strchr(s, '.');
    *int_len = (int)((dot && dot < e ? dot : e) - s);
    *exp_val = atoi(e + 1);
}

static void fill_format(elem_fmt *f)
{
    const rill_tensor *t = f->t;
    char tmp[400];
    if (t->dtype == RILL_BOOL) {
        f->width = 5; /* " True" lines up with "False" */
        return;
    }
    if (!rill_dtype_is_float(t->dtype)) {
        for (int64_t i = 0; i < t->numel; i++) {
            if (!shown(f, i)) continue;
            int w = snprintf(tmp, sizeof tmp, "%lld", get_int(t, i));
            if (w > f->width) f->width = w;
        }
        return;
    }
    double maxv = 0, minv = INFINITY;
    bool any_finite = false, any_nonfinite = false, neg_inf = false;
    for (int64_t i = 0; i < t->numel; i++) {
        if (!shown(f, i)) continue;
        double v = rill_tensor_get_double(t, i);
        if (!isfinite(v)) {
            any_nonfinite = true;
            if (isinf(v) && v < 0) neg_inf = true;
            continue;
        }
        any_finite = true;
        double a = fabs(v);
        if (a == 0) continue;
        if (a > maxv) maxv = a;
        if (a < minv) minv = a;
    }
    if (any_finite) {
        /* numpy 2's cutoff: no more integer digits than the dtype holds (1e3 for half, 1e6
         * for float, 1e8 for double). */
        double cutoff = t->dtype == RILL_HALF ? 1e3 : t->dtype == RILL_FLOAT ? 1e6 : 1e8;
        f->sci = minv != INFINITY && (maxv >= cutoff || minv < 1e-4 || maxv / minv > 1e3);
        for (int64_t i = 0; i < t->numel; i++) {
            if (!shown(f, i)) continue;
            double v = rill_tensor_get_double(t, i);
            if (!isfinite(v)) continue;
            int p = unique_digits(t->dtype, v, f->sci, 8);
            if (p > f->prec) f->prec = p;
        }
        f->exp_digits = 2;
        for (int64_t i = 0; i < t->numel; i++) {
            if (!shown(f, i)) continue;
            double v = rill_tensor_get_double(t, i);
            if (!isfinite(v)) continue;
            int int_len;
            if (f->sci) {
                int e;
                snprintf(tmp, sizeof tmp, "%.*e", f->prec, v);
                split_sci(tmp, &int_len, &e);
                int ed = snprintf(tmp, sizeof tmp, "%d", e < 0 ? -e : e);
                if (ed > f->exp_digits) f->exp_digits = ed;
            } else {
                int p = unique_digits(t->dtype, v, false, 8);
                snprintf(tmp, sizeof tmp, "%.*f", p, v);
                char *dot = strchr(tmp, '.');
                int_len = dot ? (int)(dot - tmp) : (int)strlen(tmp);
            }
            if (int_len > f->pad_left) f->pad_left = int_len;
        }
        f->pad_right = f->sci ? f->exp_digits + 2 + f->prec : f->prec;
    }
    if (any_nonfinite) {
        int offset = f->pad_right + 1;
        int inflen = 3 + (neg_inf ? 1 : 0);
        if (3 - offset > f->pad_left) f->pad_left = 3 - offset;
        if (inflen - offset > f->pad_left) f->pad_left = inflen - offset;
    }
}

static void put_elem(sbuf *b, const elem_fmt *f, int64_t i)
{
    const rill_tensor *t = f->t;
    char tmp[400];
    if (t->dtype == RILL_STRING) {
        size_t len;
        const char *s = rill_tensor_get_string(t, i, &len);
        sb_puts(b, "b'");
        sb_putn(b, s, len);
        sb_puts(b, "'");
        return;
    }
    if (t->dtype == RILL_BOOL) {
        const char *s = ((const uint8_t *)t->buf->data)[i] ? "True" : "False";
        sb_pad(b, ' ', f->width - (int)strlen(s));
        sb_puts(b, s);
        return;
    }
    if (!rill_dtype_is_float(t->dtype)) {
        int w = snprintf(tmp, sizeof tmp, "%lld", get_int(t, i));
        sb_pad(b, ' ', f->width - w);
        sb_puts(b, tmp);
        return;
    }
    double v = rill_tensor_get_double(t, i);
    if (!isfinite(v)) {
        const char *s = isnan(v) ? "nan" : v < 0 ? "-inf" : "inf";
        sb_pad(b, ' ', f->pad_left + f->pad_right + 1 - (int)strlen(s));
        sb_puts(b, s);
        return;
    }
    if (f->sci) {
        int int_len, e;
        snprintf(tmp, sizeof tmp, "%.*e", f->prec, v);
        split_sci(tmp, &int_len, &e);
        sb_pad(b, ' ', f->pad_left - int_len);
        sb_putn(b, tmp, (size_t)(strchr(tmp, 'e') - tmp));
        if (f->prec == 0) sb_puts(b, ".");
        snprintf(tmp, sizeof tmp, "e%c%0*d", e < 0 ? '-' : '+', f->exp_digits, e < 0 ? -e : e);
        sb_puts(b, tmp);
        return;
    }
    int p = unique_digits(t->dtype, v, false, 8);
    snprintf(tmp, sizeof tmp, "%.*f", p, v);
    char *dot = strchr(tmp, '.');
    int int_len = dot ? (int)(dot - tmp) : (int)strlen(tmp);
    if (!dot) strcat(tmp, ".");
    sb_pad(b, ' ', f->pad_left - int_len);
    sb_puts(b, tmp);
    sb_pad(b, ' ', f->pad_right - p);
}

/* numpy's str of a scalar: shortest digits, "2.0", "1e-05", "1e+16" (scientific from 1e3 for
 * half, 1e6 for float, 1e16 for double, as numpy 2 does). */
static void put_scalar(sbuf *b, const rill_tensor *t)
{
    char tmp[400];
    if (!rill_dtype_is_float(t->dtype)) {
        elem_fmt f = {.t = t};
        put_elem(b, &f, 0);
        return;
    }
    double v = rill_tensor_get_double(t, 0);
    if (!isfinite(v)) {
        sb_puts(b, isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
        return;
    }
    double a = fabs(v);
    double cutoff = t->dtype == RILL_HALF ? 1e3 : t->dtype == RILL_FLOAT ? 1e6 : 1e16;
    bool sci = a >= cutoff || (a != 0 && a < 1e-4);
    int p = unique_digits(t->dtype, v, sci, 40);
    snprintf(tmp, sizeof tmp, sci ? "%.*e" : "%.*f", p, v);
    sb_puts(b, tmp);
    if (!sci && p == 0) sb_puts(b, ".0");
}

static void put_words_row(sbuf *b, const elem_fmt *f, int64_t base, int64_t dim, int rank)
{
    /* numpy's _extendLine: a word that would pass the width starts a new line indented under
     * the bracket, unless the line holds nothing but the indent. */
    const int elem_width = 75 - rank;
    int line = rank; /* the brackets (or indent) before the first element */
    bool summary = f->summarize && dim > 6;
    sbuf w = {0};
    for (int64_t k = 0; k < dim; k++) {
        if (summary && k >= 3 && k < dim - 3) {
            if (k != 3) continue;
            w.n = 0;
            sb_puts(&w, "...");
        } else {
            w.n = 0;
            put_elem(&w, f, base + k);
        }
        if (line + (int)w.n > elem_width && line > rank) {
            while (b->n && b->p[b->n - 1] == ' ') b->p[--b->n] = 0;
            sb_puts(b, "\n");
            sb_pad(b, ' ', rank);
            line = rank;
        }
        sb_putn(b, w.p, w.n);
        line += (int)w.n;
        if (k + 1 < dim) {
            sb_puts(b, " ");
            line++;
        }
    }
    rill__free(w.p);
}

static void put_axis(sbuf *b, const elem_fmt *f, int axis, int64_t base)
{
    const rill_shape *s = &f->t->shape;
    int rank = s->rank;
    int64_t dim = s->dims[axis];
    sb_puts(b, "[");
    if (axis == rank - 1) {
        put_words_row(b, f, base, dim, rank);
    } else {
        int64_t stride = 1;
        for (int d = axis + 1; d < rank; d++) stride *= s->dims[d];
        bool summary = f->summarize && dim > 6;
        for (int64_t k = 0; k < dim; k++) {
            if (summary && k >= 3 && k < dim - 3) {
                if (k != 3) continue;
                sb_puts(b, "...");
            } else {
                put_axis(b, f, axis + 1, base + k * stride);
            }
            if (k + 1 < dim) {
                sb_pad(b, '\n', rank - axis - 1);
                sb_pad(b, ' ', axis + 1);
            }
        }
    }
    sb_puts(b, "]");
}

const char *rill_tensor_str(const rill_tensor *t, char *buf, size_t n)
{
    if (!n) return buf;
    buf[0] = 0;
    if (!t) return buf;
    sbuf b = {0};
    if (t->shape.rank == 0) {
        put_scalar(&b, t);
    } else if (t->numel == 0) {
        sb_puts(&b, "[]");
    } else {
        elem_fmt f = {.t = t, .summarize = t->numel > 1000};
        fill_format(&f);
        put_axis(&b, &f, 0, 0);
    }
    size_t len = b.n < n - 1 ? b.n : n - 1;
    if (len) memcpy(buf, b.p, len);
    buf[len] = 0;
    rill__free(b.p);
    return buf;
}
