/* rpc.c - meta writers and hostile-input readers for the worker service (see rpc.h). */
#include "rpc.h"

#include "wire.h"

#include <string.h>

void rill__mbuf_put(rill__mbuf *m, const void *d, size_t n)
{
    rill__pbw_raw(m, d, n);
}

void rill__mbuf_u32(rill__mbuf *m, uint32_t v)
{
    rill__mbuf_put(m, &v, 4);
}

void rill__mbuf_u64(rill__mbuf *m, uint64_t v)
{
    rill__mbuf_put(m, &v, 8);
}

void rill__mbuf_str(rill__mbuf *m, const char *s)
{
    size_t n = strlen(s);
    rill__mbuf_u32(m, (uint32_t)n);
    rill__mbuf_put(m, s, n);
}

/* String tensors (checkpoint entries, summaries: small) travel in the meta: the descriptor,
 * then u32 length and bytes per element. Numeric ones go in the payload. */
#define MAX_STRING_META (1u << 19)

bool rill__mbuf_tensor(rill__mbuf *m, const rill_tensor *t, rill_status *s)
{
    if (t->buf->dev) {
        rill_status_set(s, RILL_UNIMPLEMENTED,
                        "only tensors in host memory cross between tasks (got one on a device)");
        return false;
    }
    uint8_t buf[8 + 8 * RILL_MAX_DIMS];
    uint32_t hdr[2] = {(uint32_t)t->dtype, (uint32_t)t->shape.rank};
    if (t->dtype == RILL_STRING) {
        size_t total = 0;
        for (int64_t i = 0; i < t->numel; i++) {
            size_t len = 0;
            rill_tensor_get_string(t, i, &len);
            total += 4 + len;
        }
        if (total > MAX_STRING_META) {
            rill_status_set(s, RILL_UNIMPLEMENTED,
                            "a string tensor of %zu bytes is too big to cross between tasks "
                            "(at most %u)",
                            total, MAX_STRING_META);
            return false;
        }
        memcpy(buf, hdr, 8);
        memcpy(buf + 8, t->shape.dims, 8 * (size_t)t->shape.rank);
        rill__mbuf_put(m, buf, 8 + 8 * (size_t)t->shape.rank);
        for (int64_t i = 0; i < t->numel; i++) {
            size_t len = 0;
            const char *p = rill_tensor_get_string(t, i, &len);
            rill__mbuf_u32(m, (uint32_t)len);
            rill__mbuf_put(m, p, len);
        }
        return true;
    }
    rill__tensor_desc d = {.dtype = t->dtype, .rank = t->shape.rank};
    memcpy(d.dims, t->shape.dims, sizeof(int64_t) * (size_t)t->shape.rank);
    size_t n = rill__tensor_desc_encode(&d, buf, sizeof buf);
    rill__mbuf_put(m, buf, n);
    return true;
}

static const uint8_t zeros[RILL__RPC_ALIGN];

int rill__payload_iovecs(rill_tensor *const *ts, int n, struct iovec *iov, int cap,
                         rill__mbuf *blob)
{
    int k = 0;
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        if (ts[i]->dtype == RILL_STRING) continue; /* in the meta */
        size_t pad = (RILL__RPC_ALIGN - off % RILL__RPC_ALIGN) % RILL__RPC_ALIGN;
        size_t len = rill_tensor_nbytes(ts[i]);
        if (pad && k < cap) iov[k] = (struct iovec){(void *)zeros, pad};
        if (pad) k++;
        if (k < cap) iov[k] = (struct iovec){ts[i]->buf->data, len};
        k++;
        off += pad + len;
    }
    if (k <= cap) return k;
    /* Too many pieces for one writev: gather them (same layout). */
    off = 0;
    for (int i = 0; i < n; i++) {
        if (ts[i]->dtype == RILL_STRING) continue;
        size_t pad = (RILL__RPC_ALIGN - off % RILL__RPC_ALIGN) % RILL__RPC_ALIGN;
        rill__mbuf_put(blob, zeros, pad);
        rill__mbuf_put(blob, ts[i]->buf->data, rill_tensor_nbytes(ts[i]));
        off += pad + rill_tensor_nbytes(ts[i]);
    }
    iov[0] = (struct iovec){blob->p, blob->n};
    return 1;
}

void rill__mbuf_free(rill__mbuf *m)
{
    rill__pbw_free(m);
}

static bool take(rill__mread *r, void *d, size_t n)
{
    if (r->bad || n > r->n - r->off) {
        r->bad = true;
        return false;
    }
    memcpy(d, r->p + r->off, n);
    r->off += n;
    return true;
}

uint32_t rill__mread_u32(rill__mread *r)
{
    uint32_t v = 0;
    take(r, &v, 4);
    return v;
}

uint64_t rill__mread_u64(rill__mread *r)
{
    uint64_t v = 0;
    take(r, &v, 8);
    return v;
}

char *rill__mread_str(rill__mread *r)
{
    uint32_t n = rill__mread_u32(r);
    if (r->bad || n > 4096 || n > r->n - r->off) {
        r->bad = true;
        return NULL;
    }
    const char *p = (const char *)r->p + r->off;
    if (memchr(p, 0, n)) {
        r->bad = true;
        return NULL;
    }
    r->off += n;
    return rill__strndup(p, n);
}

static rill_tensor *read_strings(rill__mread *r)
{
    uint32_t hdr[2];
    if (!take(r, hdr, 8) || hdr[1] > RILL_MAX_DIMS) {
        r->bad = true;
        return NULL;
    }
    /* span: the dims' product with zeros counted as ones, bounded even for an empty tensor
     * (see rill__tensor_desc_decode). */
    int64_t dims[RILL_MAX_DIMS], numel = 1, span = 1;
    for (uint32_t i = 0; i < hdr[1]; i++) {
        if (!take(r, &dims[i], 8) || dims[i] < 0 || dims[i] > (int64_t)MAX_STRING_META ||
            (span *= dims[i] ? dims[i] : 1) > (int64_t)MAX_STRING_META) {
            r->bad = true;
            return NULL;
        }
        numel *= dims[i];
    }
    if ((uint64_t)numel * 4 > r->n - r->off) { /* each element needs at least its length */
        r->bad = true;
        return NULL;
    }
    rill_tensor *t = rill_tensor_new(RILL_STRING, dims, (int)hdr[1]);
    RILL_CHECK_ALLOC(t);
    for (int64_t i = 0; i < numel; i++) {
        uint32_t len = rill__mread_u32(r);
        if (r->bad || len > r->n - r->off) {
            r->bad = true;
            rill_tensor_free(t);
            return NULL;
        }
        rill_tensor_set_string(t, i, (const char *)r->p + r->off, len);
        r->off += len;
    }
    return t;
}

rill_tensor *rill__mread_tensor(rill__mread *r, rill__buffer *payload, uint64_t payload_len,
                                uint64_t *off, rill_status *s)
{
    if (r->bad) return NULL;
    if (r->n - r->off >= 8 && rill__get_u32(r->p + r->off) == RILL_STRING) return read_strings(r);
    /* A block of no bytes (a message without a payload, adopted) is no block: a view of it
     * would be a tensor without data. */
    if (payload && !payload->data) payload = NULL;
    /* Each tensor starts at the next aligned offset (see rill__payload_iovecs). */
    uint64_t aligned = (*off + RILL__RPC_ALIGN - 1) / RILL__RPC_ALIGN * RILL__RPC_ALIGN;
    if (aligned > payload_len) {
        r->bad = true;
        return NULL;
    }
    *off = aligned;
    /* The descriptor says how many bytes; check them against what is left of the payload. */
    rill__tensor_desc d;
    size_t used = 0;
    uint64_t left = payload_len - *off;
    /* Decode once without a payload check to learn the size, then check it fits. */
    int64_t numel = 1;
    uint32_t dtype = 0, rank = 0;
    if (r->n - r->off < 8) {
        r->bad = true;
        return NULL;
    }
    memcpy(&dtype, r->p + r->off, 4);
    memcpy(&rank, r->p + r->off + 4, 4);
    if (rank > RILL_MAX_DIMS || r->n - r->off < 8 + 8 * (size_t)rank) {
        r->bad = true;
        return NULL;
    }
    for (uint32_t i = 0; i < rank; i++) {
        int64_t dim;
        memcpy(&dim, r->p + r->off + 8 + 8 * i, 8);
        if (dim < 0 || (dim && numel > INT64_MAX / dim)) {
            r->bad = true;
            return NULL;
        }
        numel *= dim;
    }
    size_t es = rill_dtype_size((rill_dtype)dtype);
    if (es == 0 || (uint64_t)numel > UINT64_MAX / es || (uint64_t)numel * es > left ||
        (!payload && numel != 0)) {
        r->bad = true;
        return NULL;
    }
    if (!rill__tensor_desc_decode(r->p + r->off, r->n - r->off, (uint64_t)numel * es, &d, &used,
                                  s)) {
        r->bad = true;
        return NULL;
    }
    r->off += used;
    rill_shape sh = rill_shape_make(d.rank, d.dims);
    /* A message holding only empty tensors and strings may come without a payload block. */
    rill_tensor *t = payload ? rill__tensor_view(payload, (size_t)*off, d.dtype, &sh)
                             : rill_tensor_new_shape(d.dtype, &sh);
    *off += (uint64_t)numel * es;
    return t;
}
