/* pb.h - the protobuf wire format, by hand, for the few TensorFlow messages rill reads and
 * writes in files (checkpoint bundle header and entries, event files, summaries).
 *
 * The messages are small and flat, so a writer that appends fields to a growable buffer and a
 * bounded reader that walks fields one at a time serve them without generated code or an
 * intermediate object tree. The reader treats its input as hostile: every length is checked
 * against what is left, and a malformed byte string sets `bad` instead of reading past it. */
#ifndef RILL_CORE_PB_H
#define RILL_CORE_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { RILL__PB_VARINT = 0, RILL__PB_FIXED64 = 1, RILL__PB_BYTES = 2, RILL__PB_FIXED32 = 5 };

/* --- writing --- */
typedef struct rill__pbw {
    uint8_t *p;
    size_t n, cap;
} rill__pbw;

void rill__pbw_raw(rill__pbw *w, const void *data, size_t n);
void rill__pbw_varint_raw(rill__pbw *w, uint64_t v); /* a bare varint, no tag */
void rill__pbw_varint(rill__pbw *w, int field, uint64_t v);
void rill__pbw_sint(rill__pbw *w, int field, int64_t v); /* int32/int64 (two's complement) */
void rill__pbw_fixed32(rill__pbw *w, int field, uint32_t v);
void rill__pbw_fixed64(rill__pbw *w, int field, uint64_t v);
void rill__pbw_float(rill__pbw *w, int field, float v);
void rill__pbw_double(rill__pbw *w, int field, double v);
void rill__pbw_bytes(rill__pbw *w, int field, const void *data, size_t n);
void rill__pbw_string(rill__pbw *w, int field, const char *s);
/* A nested message: the bytes of sub as one length-delimited field. */
void rill__pbw_message(rill__pbw *w, int field, const rill__pbw *sub);
/* Packed repeated doubles. */
void rill__pbw_packed_doubles(rill__pbw *w, int field, const double *v, size_t n);
void rill__pbw_free(rill__pbw *w);

/* --- reading --- */
typedef struct rill__pbr {
    const uint8_t *p;
    size_t n, pos;
    bool bad; /* set on any malformed input; every later read returns zeros */
} rill__pbr;

typedef struct rill__pbfield {
    int field;
    int wire;         /* RILL__PB_* */
    uint64_t u;       /* VARINT, FIXED32 and FIXED64 values */
    const uint8_t *b; /* BYTES: borrowed from the input */
    size_t blen;
} rill__pbfield;

static inline rill__pbr rill__pbr_make(const void *p, size_t n)
{
    return (rill__pbr){(const uint8_t *)p, n, 0, false};
}
/* The next field; false at the end of the input or when it is malformed (then r->bad). Wire
 * types 3 and 4 (groups) and field numbers outside [1, 2^29) are malformed. */
bool rill__pbr_next(rill__pbr *r, rill__pbfield *f);
uint64_t rill__pbr_varint_raw(rill__pbr *r);
/* Field values reinterpreted. */
static inline float rill__pb_as_float(const rill__pbfield *f)
{
    union { uint32_t u; float f; } x = {(uint32_t)f->u};
    return x.f;
}
static inline double rill__pb_as_double(const rill__pbfield *f)
{
    union { uint64_t u; double d; } x = {f->u};
    return x.d;
}
/* Packed or unpacked repeated doubles: appends to *v (grown with rill__realloc); false when
 * malformed. */
bool rill__pb_doubles(const rill__pbfield *f, double **v, size_t *n, size_t *cap);

#endif
