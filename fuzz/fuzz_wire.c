/* fuzz_wire.c - the wire protocol's decoders (distributed/wire.c): the frame header, the tensor
 * descriptor and the error meta, each on the same hostile bytes.
 *
 * What each accepts must hold up: a header within its bounds that encodes back to the same 32
 * bytes, a descriptor whose dims multiply out to the payload length it was checked against and
 * that encodes back to the bytes it used, an error meta whose message is the rest of the input.
 * The descriptor is tried against a payload length from the input and against the one its own
 * dims give (wrapping as unsigned arithmetic does), so the decoder's accepting path is reached
 * as often as its rejections. */
#include "fuzz.h"

#include "distributed/wire.h"

#include <rill/status.h>

static void fuzz_header(const uint8_t *p, size_t n, rill_status *s)
{
    if (n < RILL__WIRE_HEADER_SIZE) return;
    const uint64_t limits[] = {0, 1u << 20, RILL__WIRE_DEFAULT_MAX_PAYLOAD, UINT64_MAX};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        rill__frame_header h;
        if (!rill__frame_header_decode(p, limits[i], &h, s)) {
            FUZZ_ASSERT(rill_status_code(s) != RILL_OK);
            continue;
        }
        FUZZ_ASSERT(h.version == RILL__WIRE_VERSION);
        FUZZ_ASSERT(h.type >= 1 && h.type <= RILL__MSG_TYPE_MAX);
        FUZZ_ASSERT(h.flags == 0);
        FUZZ_ASSERT(h.meta_len <= RILL__WIRE_MAX_META);
        FUZZ_ASSERT(h.payload_len <= limits[i]);
        uint8_t again[RILL__WIRE_HEADER_SIZE];
        rill__frame_header_encode(&h, again);
        FUZZ_ASSERT(memcmp(again, p, sizeof again) == 0);
        FUZZ_ASSERT(strcmp(rill__msg_type_name(h.type), "UNKNOWN") != 0);
    }
}

/* The payload length the descriptor at p would describe, computed without any check. */
static uint64_t desc_claims(const uint8_t *p, size_t n)
{
    if (n < 8) return 0;
    uint32_t dtype = rill__get_u32(p), rank = rill__get_u32(p + 4);
    uint64_t count = 1;
    for (uint32_t i = 0; i < rank && i < RILL_MAX_DIMS && 16 + 8 * (size_t)i <= n; i++)
        count *= rill__get_u64(p + 8 + 8 * i);
    size_t es = dtype <= 64 && rill_dtype_is_valid((rill_dtype)dtype)
                    ? rill_dtype_size((rill_dtype)dtype)
                    : 1;
    return count * es;
}

static void fuzz_desc(const uint8_t *p, size_t n, uint64_t payload_len, rill_status *s)
{
    rill__tensor_desc d;
    size_t used = 0;
    if (!rill__tensor_desc_decode(p, n, payload_len, &d, &used, s)) {
        FUZZ_ASSERT(rill_status_code(s) == RILL_INVALID_ARGUMENT);
        return;
    }
    FUZZ_ASSERT(d.rank >= 0 && d.rank <= RILL_MAX_DIMS);
    FUZZ_ASSERT(used == rill__tensor_desc_size(&d) && used <= n);
    size_t es = rill_dtype_size(d.dtype);
    FUZZ_ASSERT(es > 0);
    uint64_t count = 1;
    for (int i = 0; i < d.rank; i++) {
        FUZZ_ASSERT(d.dims[i] >= 0);
        count *= (uint64_t)d.dims[i];
    }
    FUZZ_ASSERT(count * es == payload_len);
    uint8_t again[8 + 8 * RILL_MAX_DIMS];
    FUZZ_ASSERT(rill__tensor_desc_encode(&d, again, sizeof again) == used);
    FUZZ_ASSERT(memcmp(again, p, used) == 0);
}

static void fuzz_error_meta(const uint8_t *p, size_t n)
{
    rill_code code;
    const char *msg;
    size_t len;
    if (!rill__error_meta_decode(p, n, &code, &msg, &len)) {
        FUZZ_ASSERT(n < 4);
        return;
    }
    FUZZ_ASSERT(code > RILL_OK && code <= RILL_UNAUTHENTICATED);
    FUZZ_ASSERT(msg == (const char *)p + 4 && len == n - 4);
    /* What the transport does with it: the message into a status, at most as long as it came. */
    rill_status *s = rill_status_new();
    rill_status_set(s, code, "%.*s", (int)(len < 4096 ? len : 4096), msg);
    rill_status_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exactly sized copy: ASan sees any read past the input. */
    uint8_t *p = malloc(size ? size : 1);
    if (!p) abort();
    memcpy(p, data, size);
    rill_status *s = rill_status_new();
    fuzz_header(p, size, s);
    fuzz_desc(p, size, desc_claims(p, size), s);
    fuzz_desc(p, size, size >= 8 ? rill__get_u64(p + size - 8) : 0, s);
    fuzz_error_meta(p, size);
    rill_status_free(s);
    free(p);
    return 0;
}
