/* pb.c - protobuf wire format helpers (see pb.h). */
#include "pb.h"

#include "core.h"

#include <string.h>

static void grow(rill__pbw *w, size_t more)
{
    if (w->n + more <= w->cap) return;
    size_t cap = w->cap ? w->cap : 64;
    while (cap < w->n + more) cap *= 2;
    uint8_t *p = rill__realloc(w->p, cap);
    RILL_CHECK_ALLOC(p);
    w->p = p;
    w->cap = cap;
}

void rill__pbw_raw(rill__pbw *w, const void *data, size_t n)
{
    if (!n) return;
    grow(w, n);
    memcpy(w->p + w->n, data, n);
    w->n += n;
}

void rill__pbw_varint_raw(rill__pbw *w, uint64_t v)
{
    grow(w, 10);
    while (v >= 0x80) {
        w->p[w->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    w->p[w->n++] = (uint8_t)v;
}

static void tag(rill__pbw *w, int field, int wire)
{
    rill__pbw_varint_raw(w, ((uint64_t)field << 3) | (uint64_t)wire);
}

void rill__pbw_varint(rill__pbw *w, int field, uint64_t v)
{
    tag(w, field, RILL__PB_VARINT);
    rill__pbw_varint_raw(w, v);
}

void rill__pbw_sint(rill__pbw *w, int field, int64_t v)
{
    rill__pbw_varint(w, field, (uint64_t)v);
}

void rill__pbw_fixed32(rill__pbw *w, int field, uint32_t v)
{
    tag(w, field, RILL__PB_FIXED32);
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    rill__pbw_raw(w, b, 4);
}

void rill__pbw_fixed64(rill__pbw *w, int field, uint64_t v)
{
    tag(w, field, RILL__PB_FIXED64);
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
    rill__pbw_raw(w, b, 8);
}

void rill__pbw_float(rill__pbw *w, int field, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    rill__pbw_fixed32(w, field, u);
}

void rill__pbw_double(rill__pbw *w, int field, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    rill__pbw_fixed64(w, field, u);
}

void rill__pbw_bytes(rill__pbw *w, int field, const void *data, size_t n)
{
    tag(w, field, RILL__PB_BYTES);
    rill__pbw_varint_raw(w, n);
    rill__pbw_raw(w, data, n);
}

void rill__pbw_string(rill__pbw *w, int field, const char *s)
{
    rill__pbw_bytes(w, field, s, strlen(s));
}

void rill__pbw_message(rill__pbw *w, int field, const rill__pbw *sub)
{
    rill__pbw_bytes(w, field, sub->p, sub->n);
}

void rill__pbw_packed_doubles(rill__pbw *w, int field, const double *v, size_t n)
{
    tag(w, field, RILL__PB_BYTES);
    rill__pbw_varint_raw(w, n * 8);
    grow(w, n * 8);
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, &v[i], 8);
        for (int k = 0; k < 8; k++) w->p[w->n++] = (uint8_t)(u >> (8 * k));
    }
}

void rill__pbw_free(rill__pbw *w)
{
    rill__free(w->p);
    *w = (rill__pbw){0};
}

uint64_t rill__pbr_varint_raw(rill__pbr *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->bad || r->pos >= r->n) break;
        uint8_t b = r->p[r->pos++];
        if (shift == 63 && b > 1) break; /* more than 64 bits */
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    r->bad = true;
    return 0;
}

static uint64_t fixed(rill__pbr *r, int bytes)
{
    if (r->bad || r->n - r->pos < (size_t)bytes) {
        r->bad = true;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)r->p[r->pos + (size_t)i] << (8 * i);
    r->pos += (size_t)bytes;
    return v;
}

bool rill__pbr_next(rill__pbr *r, rill__pbfield *f)
{
    if (r->bad || r->pos >= r->n) return false;
    uint64_t t = rill__pbr_varint_raw(r);
    *f = (rill__pbfield){0};
    f->field = (int)(t >> 3);
    f->wire = (int)(t & 7);
    if (r->bad || t >> 3 == 0 || t >> 3 >= (1u << 29)) {
        r->bad = true;
        return false;
    }
    switch (f->wire) {
    case RILL__PB_VARINT: f->u = rill__pbr_varint_raw(r); break;
    case RILL__PB_FIXED64: f->u = fixed(r, 8); break;
    case RILL__PB_FIXED32: f->u = fixed(r, 4); break;
    case RILL__PB_BYTES: {
        uint64_t len = rill__pbr_varint_raw(r);
        if (r->bad || len > r->n - r->pos) {
            r->bad = true;
            return false;
        }
        f->b = r->p + r->pos;
        f->blen = (size_t)len;
        r->pos += (size_t)len;
        break;
    }
    default: r->bad = true; return false;
    }
    return !r->bad;
}

bool rill__pb_doubles(const rill__pbfield *f, double **v, size_t *n, size_t *cap)
{
    size_t add = f->wire == RILL__PB_BYTES ? f->blen / 8 : 1;
    if (f->wire == RILL__PB_BYTES ? f->blen % 8 != 0 : f->wire != RILL__PB_FIXED64) return false;
    if (*n + add > *cap) {
        size_t c = *cap ? *cap : 16;
        while (c < *n + add) c *= 2;
        double *p = rill__realloc(*v, c * sizeof *p);
        RILL_CHECK_ALLOC(p);
        *v = p;
        *cap = c;
    }
    if (f->wire == RILL__PB_FIXED64) {
        (*v)[(*n)++] = rill__pb_as_double(f);
        return true;
    }
    for (size_t i = 0; i < add; i++) {
        uint64_t u = 0;
        for (int k = 0; k < 8; k++) u |= (uint64_t)f->b[i * 8 + (size_t)k] << (8 * k);
        memcpy(&(*v)[(*n)++], &u, 8);
    }
    return true;
}
