/* test_wire.c - the frame header, tensor descriptor and error meta codecs, including every
 * rejection and a fuzz run of random and mutated bytes through each decoder. */
#include "distributed/wire.h"

#include "core/core.h"
#include "test.h"

#include <stdlib.h>

static rill__frame_header good_header(void)
{
    return (rill__frame_header){.version = RILL__WIRE_VERSION,
                                .type = RILL__MSG_REQUEST,
                                .request_id = 0x0102030405060708ull,
                                .meta_len = 40,
                                .payload_len = 1ull << 33};
}

static void test_header_roundtrip(void)
{
    rill_status *s = rill_status_new();
    rill__frame_header h = good_header(), d;
    uint8_t raw[RILL__WIRE_HEADER_SIZE];
    rill__frame_header_encode(&h, raw);
    CHECK(memcmp(raw, "RILL", 4) == 0);
    CHECK_EQ_INT(raw[8], 0x08); /* little-endian request id */
    CHECK(rill__frame_header_decode(raw, UINT64_MAX, &d, s));
    CHECK_EQ_INT(d.version, RILL__WIRE_VERSION);
    CHECK_EQ_INT(d.type, RILL__MSG_REQUEST);
    CHECK(d.request_id == h.request_id);
    CHECK_EQ_INT(d.meta_len, 40);
    CHECK(d.payload_len == h.payload_len);
    rill_status_free(s);
}

static void expect_reject(const uint8_t raw[RILL__WIRE_HEADER_SIZE], uint64_t max, rill_code code,
                          const char *needle)
{
    rill_status *s = rill_status_new();
    rill__frame_header d;
    CHECK(!rill__frame_header_decode(raw, max, &d, s));
    CHECK_EQ_INT(rill_status_code(s), code);
    CHECK_STR_CONTAINS(rill_status_message(s), needle);
    rill_status_free(s);
}

static void test_header_rejects(void)
{
    rill__frame_header h = good_header();
    uint8_t raw[RILL__WIRE_HEADER_SIZE], bad[RILL__WIRE_HEADER_SIZE];
    rill__frame_header_encode(&h, raw);

    memcpy(bad, raw, sizeof bad);
    bad[0] = 'X';
    expect_reject(bad, UINT64_MAX, RILL_INVALID_ARGUMENT, "magic");
    memset(bad, 0xFF, sizeof bad);
    expect_reject(bad, UINT64_MAX, RILL_INVALID_ARGUMENT, "magic");

    memcpy(bad, raw, sizeof bad);
    bad[4] = 3;
    expect_reject(bad, UINT64_MAX, RILL_FAILED_PRECONDITION,
                  "peer speaks version 3, this build speaks version 2");

    memcpy(bad, raw, sizeof bad);
    bad[5] = 0;
    expect_reject(bad, UINT64_MAX, RILL_INVALID_ARGUMENT, "unknown frame type 0");
    bad[5] = 99;
    expect_reject(bad, UINT64_MAX, RILL_INVALID_ARGUMENT, "unknown frame type 99");

    memcpy(bad, raw, sizeof bad);
    bad[6] = 1;
    expect_reject(bad, UINT64_MAX, RILL_INVALID_ARGUMENT, "must be zero");
    memcpy(bad, raw, sizeof bad);
    bad[22] = 1;
    expect_reject(bad, UINT64_MAX, RILL_INVALID_ARGUMENT, "must be zero");

    h.meta_len = RILL__WIRE_MAX_META + 1;
    rill__frame_header_encode(&h, bad);
    expect_reject(bad, UINT64_MAX, RILL_INVALID_ARGUMENT, "meta length 1048577 exceeds");

    h = good_header();
    rill__frame_header_encode(&h, bad);
    expect_reject(bad, 1000, RILL_INVALID_ARGUMENT,
                  "payload length 8589934592 exceeds the limit of 1000");
}

static void test_tensor_desc(void)
{
    rill_status *s = rill_status_new();
    rill__tensor_desc d = {.dtype = RILL_FLOAT, .rank = 3, .dims = {2, 3, 4}}, e;
    uint8_t buf[128];
    size_t n = rill__tensor_desc_encode(&d, buf, sizeof buf), used = 0;
    CHECK_EQ_INT(n, 8 + 24);
    CHECK_EQ_INT(rill__tensor_desc_size(&d), n);
    CHECK_EQ_INT(rill__tensor_desc_encode(&d, buf, n - 1), 0);
    CHECK(rill__tensor_desc_decode(buf, n, 96, &e, &used, s));
    CHECK_EQ_INT(used, n);
    CHECK_EQ_INT(e.dtype, RILL_FLOAT);
    CHECK_EQ_INT(e.rank, 3);
    CHECK_EQ_INT(e.dims[2], 4);

    /* wrong payload length */
    CHECK(!rill__tensor_desc_decode(buf, n, 95, &e, NULL, s));
    CHECK_STR_CONTAINS(rill_status_message(s),
                       "24 elements of float (96 bytes), the payload holds 95");
    /* truncated */
    CHECK(!rill__tensor_desc_decode(buf, n - 1, 96, &e, NULL, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "truncated");
    CHECK(!rill__tensor_desc_decode(buf, 7, 96, &e, NULL, s));
    /* scalar */
    rill__tensor_desc sc = {.dtype = RILL_DOUBLE, .rank = 0};
    n = rill__tensor_desc_encode(&sc, buf, sizeof buf);
    CHECK(rill__tensor_desc_decode(buf, n, 8, &e, NULL, s));
    CHECK_EQ_INT(e.rank, 0);
    /* bad dtype: string, invalid, huge */
    uint32_t bad_dtypes[] = {0, RILL_STRING, 8 /* complex64 */, 1000, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof bad_dtypes / sizeof *bad_dtypes; i++) {
        rill__put_u32(buf, bad_dtypes[i]);
        CHECK(!rill__tensor_desc_decode(buf, n, 8, &e, NULL, s));
        CHECK_STR_CONTAINS(rill_status_message(s), "dtype");
    }
    /* rank too large */
    rill__put_u32(buf, RILL_FLOAT);
    rill__put_u32(buf + 4, RILL_MAX_DIMS + 1);
    CHECK(!rill__tensor_desc_decode(buf, sizeof buf, 0, &e, NULL, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "rank 9");
    /* negative dim */
    d = (rill__tensor_desc){.dtype = RILL_INT32, .rank = 2, .dims = {4, -1}};
    n = rill__tensor_desc_encode(&d, buf, sizeof buf);
    CHECK(!rill__tensor_desc_decode(buf, n, 16, &e, NULL, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "negative");
    /* overflow of the element count and of the byte count */
    d = (rill__tensor_desc){.dtype = RILL_INT64, .rank = 3, .dims = {1ll << 40, 1ll << 40, 2}};
    n = rill__tensor_desc_encode(&d, buf, sizeof buf);
    CHECK(!rill__tensor_desc_decode(buf, n, 0, &e, NULL, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "overflows");
    d = (rill__tensor_desc){.dtype = RILL_INT64, .rank = 1, .dims = {1ll << 62}};
    n = rill__tensor_desc_encode(&d, buf, sizeof buf);
    CHECK(!rill__tensor_desc_decode(buf, n, 0, &e, NULL, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "overflows");
    /* a zero dim makes the tensor empty, but the other dims must still multiply within int64:
     * kernels form strides and broadcast shapes from them (an Add fed one such empty tensor
     * overflowed; found by fuzz/fuzz_rpc.c) */
    d = (rill__tensor_desc){.dtype = RILL_FLOAT, .rank = 3, .dims = {1ll << 20, 1ll << 20, 0}};
    n = rill__tensor_desc_encode(&d, buf, sizeof buf);
    CHECK(rill__tensor_desc_decode(buf, n, 0, &e, NULL, s));
    d = (rill__tensor_desc){.dtype = RILL_FLOAT, .rank = 3, .dims = {1ll << 40, 1ll << 40, 0}};
    n = rill__tensor_desc_encode(&d, buf, sizeof buf);
    CHECK(!rill__tensor_desc_decode(buf, n, 0, &e, NULL, s));
    CHECK_STR_CONTAINS(rill_status_message(s), "overflows");
    rill_status_free(s);
}

static void test_error_meta(void)
{
    uint8_t buf[64];
    size_t n = rill__error_meta_encode(RILL_NOT_FOUND, "variable w not found", buf, sizeof buf);
    rill_code code;
    const char *msg;
    size_t len;
    CHECK(rill__error_meta_decode(buf, n, &code, &msg, &len));
    CHECK_EQ_INT(code, RILL_NOT_FOUND);
    CHECK(len == 20 && memcmp(msg, "variable w not found", 20) == 0);
    n = rill__error_meta_encode(RILL_INTERNAL, "a long message that does not fit", buf, 10);
    CHECK_EQ_INT(n, 10);
    rill__put_u32(buf, 77);
    CHECK(rill__error_meta_decode(buf, 4, &code, &msg, &len));
    CHECK_EQ_INT(code, RILL_UNKNOWN);
    CHECK(!rill__error_meta_decode(buf, 3, &code, &msg, &len));
}

/* Random and mutated inputs: no decoder may crash (ASan/UBSan watch), and what a decoder
 * accepts must satisfy its bounds. */
static void test_fuzz(void)
{
    rill__rng rng;
    rill__rng_seed(&rng, 12345);
    rill_status *s = rill_status_new();
    uint8_t good[RILL__WIRE_HEADER_SIZE];
    rill__frame_header g = good_header();
    rill__frame_header_encode(&g, good);
    rill__tensor_desc td = {.dtype = RILL_HALF, .rank = 4, .dims = {3, 1, 7, 5}};
    uint8_t gdesc[80];
    size_t gn = rill__tensor_desc_encode(&td, gdesc, sizeof gdesc);
    int bad_accepts = 0, accepted = 0;
    for (int it = 0; it < 200000; it++) {
        uint8_t buf[80];
        int mode = it % 3;
        if (mode == 0) {
            for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)rill__rng_next(&rng);
        } else {
            memcpy(buf, mode == 1 ? good : gdesc, mode == 1 ? sizeof good : gn);
            int flips = 1 + (int)(rill__rng_next(&rng) % 4);
            for (int f = 0; f < flips; f++)
                buf[rill__rng_next(&rng) % (mode == 1 ? sizeof good : gn)] ^=
                    (uint8_t)(1u << (rill__rng_next(&rng) % 8));
        }
        rill__frame_header h;
        uint64_t max = 1u << 20;
        if (rill__frame_header_decode(buf, max, &h, s)) {
            accepted++;
            if (h.meta_len > RILL__WIRE_MAX_META || h.payload_len > max || h.version != RILL__WIRE_VERSION ||
                h.type < 1 || h.type > RILL__MSG_TYPE_MAX)
                bad_accepts++;
        }
        rill__tensor_desc d;
        size_t len = (size_t)(rill__rng_next(&rng) % (sizeof buf + 1)), used = 0;
        uint64_t plen = mode == 2 ? 210 : rill__rng_next(&rng) % 4096;
        if (rill__tensor_desc_decode(buf, len, plen, &d, &used, s)) {
            uint64_t count = 1;
            for (int i = 0; i < d.rank; i++) count *= (uint64_t)d.dims[i];
            if (used > len || d.rank > RILL_MAX_DIMS || count * rill_dtype_size(d.dtype) != plen)
                bad_accepts++;
        }
        rill_code code;
        const char *msg;
        size_t mlen;
        if (rill__error_meta_decode(buf, len, &code, &msg, &mlen) && mlen + 4 != len) bad_accepts++;
    }
    CHECK_EQ_INT(bad_accepts, 0);
    CHECK(accepted > 0); /* some mutations (e.g. of the request id) stay valid */
    rill_status_free(s);
}

int main(void)
{
    test_header_roundtrip();
    test_header_rejects();
    test_tensor_desc();
    test_error_meta();
    test_fuzz();
    TEST_MAIN_END();
}
