/* wire.h - rill's wire protocol: a fixed 32-byte little-endian frame header, then `meta_len`
 * bytes of metadata, then `payload_len` bytes of payload (tensor bytes, never re-encoded).
 *
 *   offset size field
 *        0    4 magic "RILL"
 *        4    1 version (RILL__WIRE_VERSION)
 *        5    1 type (rill__msg_type)
 *        6    2 flags (reserved, must be 0)
 *        8    8 request id (echoed by the response)
 *       16    4 meta length   (<= RILL__WIRE_MAX_META)
 *       20    4 reserved, must be 0
 *       24    8 payload length (<= the receiver's configured maximum)
 *
 * The meta-then-payload split is ps-lite's shape (a small header the receiver parses, then raw
 * bytes it receives straight into their destination). Every decoder here treats its input as
 * hostile: sizes are bounded before anything is allocated, counts are checked, reserved bits
 * must be zero, and no byte string makes it crash (tests/distributed/test_wire.c fuzzes it).
 *
 * The tensor descriptor is the meta of a tensor-carrying message: dtype (u32), rank (u32), then
 * rank dims (i64), all little-endian; its decoder checks the dims against the payload length.
 */
#ifndef RILL_DISTRIBUTED_WIRE_H
#define RILL_DISTRIBUTED_WIRE_H

#include <rill/status.h>
#include <rill/tensor.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RILL__WIRE_MAGIC       "RILL"
#define RILL__WIRE_VERSION     2
#define RILL__WIRE_HEADER_SIZE 32
/* Meta is small by construction (descriptors, names, error text). */
#define RILL__WIRE_MAX_META (1u << 20)
/* Default payload bound; receivers may configure a smaller or larger one. */
#define RILL__WIRE_DEFAULT_MAX_PAYLOAD (UINT64_C(4) << 30)

typedef enum rill__msg_type {
    RILL__MSG_CHALLENGE = 1,     /* server -> client on accept: meta = rill__handshake meta */
    RILL__MSG_HANDSHAKE = 2,     /* client -> server: meta = version + HMAC proof */
    RILL__MSG_HANDSHAKE_OK = 3,  /* server -> client: handshake accepted */
    RILL__MSG_REQUEST = 4,       /* client -> server: served by the handler */
    RILL__MSG_RESPONSE = 5,      /* server -> client: the handler's answer */
    RILL__MSG_ERROR = 6,         /* either way: meta = u32 code + message text */
    RILL__MSG_HEARTBEAT = 7,     /* client -> server: answered by the transport itself */
    RILL__MSG_HEARTBEAT_ACK = 8, /* server -> client */
    RILL__MSG_PUSH = 9,          /* client -> server: served by the handler, never answered */
} rill__msg_type;
#define RILL__MSG_TYPE_MAX 9

typedef struct rill__frame_header {
    uint8_t version;
    uint8_t type;
    uint16_t flags;
    uint64_t request_id;
    uint32_t meta_len;
    uint64_t payload_len;
} rill__frame_header;

/* "REQUEST", "RESPONSE", ...; "UNKNOWN" for other values. */
const char *rill__msg_type_name(int type);

/* Writes h into out[RILL__WIRE_HEADER_SIZE] (version and magic are written as given/fixed). */
void rill__frame_header_encode(const rill__frame_header *h, uint8_t out[RILL__WIRE_HEADER_SIZE]);

/* Parses and validates 32 hostile bytes: magic, version (a mismatch says both versions), type,
 * zero flags and reserved bits, meta_len <= RILL__WIRE_MAX_META, payload_len <= max_payload.
 * On failure sets s (INVALID_ARGUMENT, or FAILED_PRECONDITION for a version mismatch) with a
 * message naming the field, and returns false; h is then unspecified. */
bool rill__frame_header_decode(const uint8_t in[RILL__WIRE_HEADER_SIZE], uint64_t max_payload,
                               rill__frame_header *h, rill_status *s);

/* A tensor's description carried in the meta. */
typedef struct rill__tensor_desc {
    rill_dtype dtype;
    int rank;
    int64_t dims[RILL_MAX_DIMS];
} rill__tensor_desc;

/* Bytes the encoded descriptor takes: 8 + 8 * rank. */
size_t rill__tensor_desc_size(const rill__tensor_desc *d);

/* Encodes d into out (cap bytes); returns the bytes written, or 0 when cap is too small or d is
 * invalid (rank outside [0, RILL_MAX_DIMS]). */
size_t rill__tensor_desc_encode(const rill__tensor_desc *d, uint8_t *out, size_t cap);

/* Parses a descriptor from the first len hostile bytes of in and checks it fully: a known
 * fixed-size dtype, 0 <= rank <= RILL_MAX_DIMS, dims >= 0, the element count and byte size do
 * not overflow (zero dims counted as ones: the other dims of an empty tensor must multiply
 * within int64_t too, as kernels form strides from them), and the byte size equals
 * payload_len. Writes the bytes consumed to *used (may be
 * NULL). Returns false and sets s (INVALID_ARGUMENT) otherwise. */
bool rill__tensor_desc_decode(const uint8_t *in, size_t len, uint64_t payload_len,
                              rill__tensor_desc *d, size_t *used, rill_status *s);

/* Error meta: u32 code then the message bytes (no terminator). Returns bytes written into out
 * (cap >= 4; the message is truncated to fit). */
size_t rill__error_meta_encode(rill_code code, const char *msg, uint8_t *out, size_t cap);
/* Parses error meta into code (out-of-range or OK codes become RILL_UNKNOWN) and a borrowed
 * message pointer/length. Returns false when len < 4. */
bool rill__error_meta_decode(const uint8_t *in, size_t len, rill_code *code, const char **msg,
                             size_t *msg_len);

/* Little-endian helpers. */
static inline void rill__put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void rill__put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void rill__put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t rill__get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t rill__get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static inline uint64_t rill__get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

#endif
