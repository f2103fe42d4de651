/* wire.c - encoding and hostile-input decoding of rill's frame header, tensor descriptors and
 * error meta (layout in wire.h). */
#include "distributed/wire.h"

#include <string.h>

const char *rill__msg_type_name(int type)
{
    switch (type) {
    case RILL__MSG_CHALLENGE:
        return "CHALLENGE";
    case RILL__MSG_HANDSHAKE:
        return "HANDSHAKE";
    case RILL__MSG_HANDSHAKE_OK:
        return "HANDSHAKE_OK";
    case RILL__MSG_REQUEST:
        return "REQUEST";
    case RILL__MSG_RESPONSE:
        return "RESPONSE";
    case RILL__MSG_ERROR:
        return "ERROR";
    case RILL__MSG_HEARTBEAT:
        return "HEARTBEAT";
    case RILL__MSG_HEARTBEAT_ACK:
        return "HEARTBEAT_ACK";
    case RILL__MSG_PUSH:
        return "PUSH";
    default:
        return "UNKNOWN";
    }
}

void rill__frame_header_encode(const rill__frame_header *h, uint8_t out[RILL__WIRE_HEADER_SIZE])
{
    memcpy(out, RILL__WIRE_MAGIC, 4);
    out[4] = h->version;
    out[5] = h->type;
    rill__put_u16(out + 6, h->flags);
    rill__put_u64(out + 8, h->request_id);
    rill__put_u32(out + 16, h->meta_len);
    rill__put_u32(out + 20, 0);
    rill__put_u64(out + 24, h->payload_len);
}

bool rill__frame_header_decode(const uint8_t in[RILL__WIRE_HEADER_SIZE], uint64_t max_payload,
                               rill__frame_header *h, rill_status *s)
{
    if (memcmp(in, RILL__WIRE_MAGIC, 4) != 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "bad frame magic %02x %02x %02x %02x (expected \"RILL\"): the peer does "
                        "not speak rill's wire protocol",
                        in[0], in[1], in[2], in[3]);
        return false;
    }
    h->version = in[4];
    h->type = in[5];
    h->flags = rill__get_u16(in + 6);
    h->request_id = rill__get_u64(in + 8);
    h->meta_len = rill__get_u32(in + 16);
    uint32_t reserved = rill__get_u32(in + 20);
    h->payload_len = rill__get_u64(in + 24);
    if (h->version != RILL__WIRE_VERSION) {
        rill_status_set(s, RILL_FAILED_PRECONDITION,
                        "wire protocol version mismatch: the peer speaks version %u, this build "
                        "speaks version %u",
                        (unsigned)h->version, (unsigned)RILL__WIRE_VERSION);
        return false;
    }
    if (h->type < 1 || h->type > RILL__MSG_TYPE_MAX) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "unknown frame type %u", (unsigned)h->type);
        return false;
    }
    if (h->flags != 0 || reserved != 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "frame flags 0x%04x / reserved 0x%08x must be zero in version %u",
                        (unsigned)h->flags, (unsigned)reserved, (unsigned)RILL__WIRE_VERSION);
        return false;
    }
    if (h->meta_len > RILL__WIRE_MAX_META) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "frame meta length %u exceeds the limit of %u",
                        (unsigned)h->meta_len, (unsigned)RILL__WIRE_MAX_META);
        return false;
    }
    if (h->payload_len > max_payload) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "frame payload length %llu exceeds the limit of %llu bytes",
                        (unsigned long long)h->payload_len, (unsigned long long)max_payload);
        return false;
    }
    return true;
}

size_t rill__tensor_desc_size(const rill__tensor_desc *d)
{
    return 8 + 8 * (size_t)(d->rank < 0 ? 0 : d->rank);
}

size_t rill__tensor_desc_encode(const rill__tensor_desc *d, uint8_t *out, size_t cap)
{
    if (d->rank < 0 || d->rank > RILL_MAX_DIMS) return 0;
    size_t n = rill__tensor_desc_size(d);
    if (cap < n) return 0;
    rill__put_u32(out, (uint32_t)d->dtype);
    rill__put_u32(out + 4, (uint32_t)d->rank);
    for (int i = 0; i < d->rank; i++) rill__put_u64(out + 8 + 8 * i, (uint64_t)d->dims[i]);
    return n;
}

bool rill__tensor_desc_decode(const uint8_t *in, size_t len, uint64_t payload_len,
                              rill__tensor_desc *d, size_t *used, rill_status *s)
{
    if (len < 8) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "tensor descriptor truncated: %zu bytes, at least 8 expected", len);
        return false;
    }
    uint32_t dtype = rill__get_u32(in), rank = rill__get_u32(in + 4);
    size_t esize = dtype <= 64 && rill_dtype_is_valid((rill_dtype)dtype)
                       ? rill_dtype_size((rill_dtype)dtype)
                       : 0;
    if (esize == 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "tensor descriptor has dtype %u, expected a fixed-size rill dtype",
                        (unsigned)dtype);
        return false;
    }
    if (rank > RILL_MAX_DIMS) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "tensor descriptor has rank %u, at most %d supported", (unsigned)rank,
                        RILL_MAX_DIMS);
        return false;
    }
    size_t need = 8 + 8 * (size_t)rank;
    if (len < need) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "tensor descriptor truncated: rank %u needs %zu bytes, got %zu",
                        (unsigned)rank, need, len);
        return false;
    }
    d->dtype = (rill_dtype)dtype;
    d->rank = (int)rank;
    uint64_t count = 1;
    bool overflow = false;
    for (uint32_t i = 0; i < rank; i++) {
        uint64_t v = rill__get_u64(in + 8 + 8 * i);
        if (v > (uint64_t)INT64_MAX) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "tensor descriptor dim %u is negative (%lld)",
                            (unsigned)i, (long long)(int64_t)v);
            return false;
        }
        d->dims[i] = (int64_t)v;
        /* A zero dim counts as one here: an empty tensor whose other dims multiply past int64
         * would overflow the strides and broadcast shapes that kernels compute from them. */
        uint64_t f = v ? v : 1;
        if (!overflow && count > UINT64_MAX / f) overflow = true;
        if (!overflow) count *= f;
    }
    if (overflow || count > (uint64_t)INT64_MAX || count > UINT64_MAX / esize) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "tensor descriptor's element count overflows (rank %u)", (unsigned)rank);
        return false;
    }
    for (uint32_t i = 0; i < rank; i++)
        if (d->dims[i] == 0) count = 0;
    if (count * esize != payload_len) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "tensor descriptor says %llu elements of %s (%llu bytes), the payload "
                        "holds %llu bytes",
                        (unsigned long long)count, rill_dtype_name(d->dtype),
                        (unsigned long long)(count * esize), (unsigned long long)payload_len);
        return false;
    }
    if (used) *used = need;
    return true;
}

size_t rill__error_meta_encode(rill_code code, const char *msg, uint8_t *out, size_t cap)
{
    if (cap < 4) return 0;
    rill__put_u32(out, (uint32_t)code);
    size_t n = msg ? strlen(msg) : 0;
    if (n > cap - 4) n = cap - 4;
    if (n) memcpy(out + 4, msg, n);
    return 4 + n;
}

bool rill__error_meta_decode(const uint8_t *in, size_t len, rill_code *code, const char **msg,
                             size_t *msg_len)
{
    if (len < 4) return false;
    uint32_t c = rill__get_u32(in);
    *code = c >= 1 && c <= RILL_UNAUTHENTICATED ? (rill_code)c : RILL_UNKNOWN;
    *msg = (const char *)in + 4;
    *msg_len = len - 4;
    return true;
}
