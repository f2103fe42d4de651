/* test_rpc.c - the worker service's tensor encoding (rpc.c): string tensors in the meta and
 * numeric ones in the payload, round trips of every kind mixed in one message (the numeric ones
 * still land aligned, and equal), and hostile metas and payloads through rill__mread_tensor:
 * truncated at every length, huge counts and lengths, ranks above 8, negative dims, bad dtypes
 * and random mutations. The reader must never crash and must fail with r.bad. */
#include "distributed/rpc.h"

#include "distributed/graph_codec.h"
#include "distributed/master.h"
#include "distributed/transport.h"
#include "distributed/wire.h"
#include "net.h"
#include "test.h"

#include <rill/rill.h>

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* --- a message of tensors, as server.c and master.c build and read it ---------------------- */

typedef struct msg {
    rill__mbuf meta;
    uint8_t *payload; /* rill__aligned_alloc'd, NULL when empty */
    uint64_t payload_len;
} msg;

static bool encode(rill_tensor *const *ts, int n, msg *out, rill_status *s)
{
    memset(out, 0, sizeof *out);
    rill__mbuf_u32(&out->meta, (uint32_t)n);
    for (int i = 0; i < n; i++)
        if (!rill__mbuf_tensor(&out->meta, ts[i], s)) return false;
    struct iovec iov[16];
    rill__mbuf blob = {0};
    int niov = rill__payload_iovecs(ts, n, iov, 16, &blob);
    for (int i = 0; i < niov; i++) out->payload_len += iov[i].iov_len;
    if (out->payload_len) {
        out->payload = rill__aligned_alloc(out->payload_len);
        size_t off = 0;
        for (int i = 0; i < niov; i++) {
            memcpy(out->payload + off, iov[i].iov_base, iov[i].iov_len);
            off += iov[i].iov_len;
        }
    }
    rill__mbuf_free(&blob);
    return true;
}

static void msg_free(msg *m)
{
    rill__mbuf_free(&m->meta);
    if (m->payload) rill__aligned_free(m->payload, m->payload_len);
}

/* Decodes meta[0..meta_len) with the payload (adopted when non-empty, as the receivers do):
 * up to cap tensors into out; returns how many were read, -1 when the reader failed (then every
 * tensor read is freed and r.bad was set), or -2 when it failed without setting r.bad. */
static int decode(const uint8_t *meta, size_t meta_len, const uint8_t *payload,
                  uint64_t payload_len, rill_tensor **out, int cap)
{
    rill_status *s = rill_status_new();
    rill__buffer *pay = NULL;
    if (payload_len) {
        void *copy = rill__aligned_alloc(payload_len);
        memcpy(copy, payload, payload_len);
        pay = rill__buffer_adopt(copy, payload_len);
    }
    rill__mread r = {.p = meta, .n = meta_len};
    uint32_t n = rill__mread_u32(&r);
    int got = 0, rc = 0;
    uint64_t off = 0;
    for (uint32_t i = 0; !r.bad && i < n; i++) {
        rill_tensor *t = rill__mread_tensor(&r, pay, payload_len, &off, s);
        if (!t) {
            rc = r.bad ? -1 : -2;
            break;
        }
        if (got < cap)
            out[got++] = t;
        else
            rill_tensor_free(t);
    }
    if (r.bad && rc == 0) rc = -1;
    if (rc < 0) {
        for (int i = 0; i < got; i++) rill_tensor_free(out[i]);
        got = rc;
    }
    rill__buffer_unref(pay);
    rill_status_free(s);
    return got;
}

static rill_tensor *strings(const int64_t *dims, int rank, const char *const *v, const size_t *len)
{
    rill_tensor *t = rill_tensor_new(RILL_STRING, dims, rank);
    for (int64_t i = 0; i < rill_tensor_num_elements(t); i++)
        rill_tensor_set_string(t, i, v[i], len ? len[i] : strlen(v[i]));
    return t;
}

static rill_tensor *numeric(rill_dtype dt, const int64_t *dims, int rank, int seed)
{
    rill_tensor *t = rill_tensor_new(dt, dims, rank);
    uint8_t *p = rill_tensor_data(t);
    for (size_t i = 0; i < rill_tensor_nbytes(t); i++) p[i] = (uint8_t)(seed * 29 + (int)i * 13);
    if (dt == RILL_BOOL)
        for (size_t i = 0; i < rill_tensor_nbytes(t); i++) p[i] &= 1;
    return t;
}

static bool same(const rill_tensor *a, const rill_tensor *b)
{
    if (rill_tensor_dtype(a) != rill_tensor_dtype(b) || rill_tensor_rank(a) != rill_tensor_rank(b))
        return false;
    for (int i = 0; i < rill_tensor_rank(a); i++)
        if (rill_tensor_dim(a, i) != rill_tensor_dim(b, i)) return false;
    if (rill_tensor_dtype(a) == RILL_STRING) {
        for (int64_t i = 0; i < rill_tensor_num_elements(a); i++) {
            size_t la, lb;
            const char *pa = rill_tensor_get_string(a, i, &la),
                       *pb = rill_tensor_get_string(b, i, &lb);
            if (la != lb || (la && memcmp(pa, pb, la) != 0)) return false;
        }
        return true;
    }
    size_t n = rill_tensor_nbytes(a);
    return n == rill_tensor_nbytes(b) &&
           (n == 0 || memcmp(rill_tensor_data(a), rill_tensor_data(b), n) == 0);
}

/* Encodes ts, decodes them and checks every tensor equal and every numeric one 64-byte aligned. */
static void roundtrip(rill_tensor *const *ts, int n, const char *what)
{
    rill_status *s = rill_status_new();
    msg m;
    if (!CHECK(encode(ts, n, &m, s))) {
        fprintf(stderr, "  %s: %s\n", what, rill_status_message(s));
        msg_free(&m);
        rill_status_free(s);
        return;
    }
    rill_tensor *out[64];
    int got = decode(m.meta.p, m.meta.n, m.payload, m.payload_len, out, 64);
    if (!CHECK_EQ_INT(got, n)) fprintf(stderr, "  %s\n", what);
    for (int i = 0; i < got && i < n; i++) {
        if (!CHECK(same(ts[i], out[i]))) fprintf(stderr, "  %s: tensor %d differs\n", what, i);
        if (rill_tensor_dtype(out[i]) != RILL_STRING && rill_tensor_nbytes(out[i]) > 0)
            CHECK((uintptr_t)rill_tensor_data(out[i]) % RILL__RPC_ALIGN == 0);
    }
    for (int i = 0; i < got; i++) rill_tensor_free(out[i]);
    msg_free(&m);
    rill_status_free(s);
}

/* --- round trips ----------------------------------------------------------------------------- */

static void test_string_roundtrips(void)
{
    rill_tensor *scalar = rill_tensor_scalar_string("Hello, distributed rill!");
    roundtrip(&scalar, 1, "scalar string");

    const char *v[] = {"", "a", "", "bcd", ""};
    rill_tensor *vec = strings((int64_t[]){5}, 1, v, NULL);
    roundtrip(&vec, 1, "vector with empty strings");

    /* NUL bytes inside, and every byte value */
    char all[256];
    for (int i = 0; i < 256; i++) all[i] = (char)i;
    const char *nv[] = {"a\0b", "\0\0\0", all, "tail\0"};
    size_t nl[] = {3, 3, 256, 5};
    rill_tensor *nul = strings((int64_t[]){2, 2}, 2, nv, nl);
    roundtrip(&nul, 1, "strings with NUL bytes");

    rill_tensor *empty0 = rill_tensor_new(RILL_STRING, (int64_t[]){0}, 1);
    rill_tensor *empty2 = rill_tensor_new(RILL_STRING, (int64_t[]){2, 0}, 2);
    rill_tensor *empties[] = {empty0, empty2};
    roundtrip(empties, 2, "string tensors with no elements");

    /* a rank-8 string tensor */
    int64_t d8[8] = {1, 2, 1, 1, 2, 1, 1, 2};
    const char *e8[8] = {"0", "1", "2", "3", "4", "5", "6", "7"};
    rill_tensor *r8 = strings(d8, 8, e8, NULL);
    roundtrip(&r8, 1, "rank 8 strings");

    rill_tensor_free(scalar);
    rill_tensor_free(vec);
    rill_tensor_free(nul);
    rill_tensor_free(empty0);
    rill_tensor_free(empty2);
    rill_tensor_free(r8);
}

/* Strings between numeric tensors of odd sizes: the numeric ones still start aligned in the
 * payload and come back equal, in their order. */
static void test_mixed_roundtrip(void)
{
    const char *v[] = {"ckpt/entry\0x", "", "w"};
    size_t vl[] = {12, 0, 1};
    rill_tensor *ts[] = {
        numeric(RILL_FLOAT, (int64_t[]){3}, 1, 1),
        rill_tensor_scalar_string("global_step"),
        numeric(RILL_INT64, (int64_t[]){2, 2}, 2, 2),
        strings((int64_t[]){3}, 1, v, vl),
        numeric(RILL_BOOL, (int64_t[]){5}, 1, 3),
        numeric(RILL_DOUBLE, (int64_t[]){5}, 1, 4),
        rill_tensor_scalar_string(""),
        numeric(RILL_HALF, (int64_t[]){3}, 1, 5),
        numeric(RILL_INT32, NULL, 0, 6),
        rill_tensor_new(RILL_FLOAT, (int64_t[]){0}, 1),
        numeric(RILL_FLOAT, (int64_t[]){7, 3}, 2, 7),
    };
    int n = (int)(sizeof ts / sizeof ts[0]);
    roundtrip(ts, n, "mixed strings and numbers");

    /* more than 16 payload pieces: the payload is gathered into one block, same layout */
    rill_tensor *many[40];
    for (int i = 0; i < 40; i++)
        many[i] = i % 3 == 1 ? rill_tensor_scalar_string(i % 2 ? "odd" : "")
                             : numeric(i % 2 ? RILL_INT32 : RILL_BOOL, (int64_t[]){i + 1}, 1, i);
    roundtrip(many, 40, "40 tensors, gathered payload");
    for (int i = 0; i < 40; i++) rill_tensor_free(many[i]);

    /* only strings and empty tensors: no payload at all (as a reply without payload) */
    rill_tensor *nopay[] = {ts[1], ts[9], ts[3]};
    roundtrip(nopay, 3, "strings and an empty numeric tensor, no payload");
    rill_tensor *only_empty = ts[9];
    roundtrip(&only_empty, 1, "an empty numeric tensor alone");
    for (int i = 0; i < n; i++) rill_tensor_free(ts[i]);
}

static void test_string_too_big(void)
{
    rill_status *s = rill_status_new();
    rill_tensor *t = rill_tensor_new(RILL_STRING, (int64_t[]){2}, 1);
    char *big = malloc(300 * 1024);
    memset(big, 'x', 300 * 1024);
    rill_tensor_set_string(t, 0, big, 300 * 1024);
    rill_tensor_set_string(t, 1, big, 300 * 1024);
    rill__mbuf m = {0};
    CHECK(!rill__mbuf_tensor(&m, t, s));
    CHECK_EQ_INT(rill_status_code(s), RILL_UNIMPLEMENTED);
    CHECK_STR_CONTAINS(rill_status_message(s), "too big to cross between tasks");
    rill__mbuf_free(&m);
    free(big);
    rill_tensor_free(t);
    rill_status_free(s);
}

/* --- hostile inputs -------------------------------------------------------------------------- */

/* The meta of one tensor header: u32 count 1, then dtype, rank, dims. */
static size_t one_header(uint8_t *buf, uint32_t dtype, uint32_t rank, const int64_t *dims,
                         int ndims)
{
    size_t k = 0;
    rill__put_u32(buf + k, 1), k += 4;
    rill__put_u32(buf + k, dtype), k += 4;
    rill__put_u32(buf + k, rank), k += 4;
    for (int i = 0; i < ndims; i++) rill__put_u64(buf + k, (uint64_t)dims[i]), k += 8;
    return k;
}

static void expect_bad(const uint8_t *meta, size_t n, uint64_t payload_len, const char *what)
{
    uint8_t *pay = payload_len ? calloc(1, payload_len) : NULL;
    rill_tensor *out[4];
    int got = decode(meta, n, pay, payload_len, out, 4);
    if (!CHECK_EQ_INT(got, -1)) fprintf(stderr, "  %s\n", what);
    for (int i = 0; i < got; i++) rill_tensor_free(out[i]);
    free(pay);
}

static void test_hostile_headers(void)
{
    uint8_t buf[4096];
    size_t n;
    for (int dt = 0; dt < 2; dt++) {
        uint32_t dtype = dt ? RILL_FLOAT : RILL_STRING;
        uint64_t pl = dt ? 4096 : 0;
        /* rank above 8, with and without the dims present */
        int64_t d9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
        n = one_header(buf, dtype, 9, d9, 9);
        expect_bad(buf, n, pl, "rank 9");
        n = one_header(buf, dtype, 0xFFFFFFFFu, NULL, 0);
        expect_bad(buf, n, pl, "rank 2^32-1");
        n = one_header(buf, dtype, 0x80000000u, d9, 2);
        expect_bad(buf, n, pl, "rank 2^31");
        /* negative dims */
        n = one_header(buf, dtype, 1, (int64_t[]){-1}, 1);
        expect_bad(buf, n, pl, "dim -1");
        n = one_header(buf, dtype, 2, (int64_t[]){2, INT64_MIN}, 2);
        expect_bad(buf, n, pl, "dim INT64_MIN");
        /* huge counts */
        n = one_header(buf, dtype, 1, (int64_t[]){INT64_MAX}, 1);
        expect_bad(buf, n, pl, "dim INT64_MAX");
        n = one_header(buf, dtype, 2, (int64_t[]){1LL << 32, 1LL << 32}, 2);
        expect_bad(buf, n, pl, "2^64 elements");
        n = one_header(buf, dtype, 3, (int64_t[]){1LL << 21, 1LL << 21, 1LL << 21}, 3);
        expect_bad(buf, n, pl, "2^63 elements");
        n = one_header(buf, dtype, 1, (int64_t[]){1LL << 18}, 1);
        expect_bad(buf, n, pl, "2^18 elements, little data");
        /* empty, but the other dims multiply past what a kernel can index: a RUN feeding
         * [0, 433791921152, 2199023255880] to an Add overflowed its broadcast strides (found
         * by fuzz/fuzz_rpc.c: UBSan, signed overflow in rill__bcast_init) */
        n = one_header(buf, dtype, 3, (int64_t[]){0, 433791921152LL, 2199023255880LL}, 3);
        expect_bad(buf, n, pl, "empty, 2^80 in the other dims");
        n = one_header(buf, dtype, 4, (int64_t[]){1LL << 21, 0, 1LL << 21, 1LL << 21}, 4);
        expect_bad(buf, n, pl, "empty, 2^63 in the other dims");
        /* a truncated header */
        n = one_header(buf, dtype, 2, (int64_t[]){1, 1}, 2);
        for (size_t len = 4; len < n; len++) expect_bad(buf, len, pl, "truncated header");
    }
    /* strings: empty, with the other dims past what a string tensor may hold */
    n = one_header(buf, RILL_STRING, 4, (int64_t[]){0, 1LL << 19, 1LL << 19, 1LL << 19}, 4);
    expect_bad(buf, n, 0, "empty strings, 2^57 in the other dims");
    /* strings: an element longer than the meta, and lengths near 2^32 */
    uint32_t lens[] = {1, 100, 0x7FFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFCu};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        n = one_header(buf, RILL_STRING, 1, (int64_t[]){2}, 1);
        rill__put_u32(buf + n, 0), n += 4; /* element 0: empty */
        rill__put_u32(buf + n, lens[i]), n += 4;
        expect_bad(buf, n, 0, "string length past the meta");
    }
    /* strings: more elements than the meta can hold lengths for */
    n = one_header(buf, RILL_STRING, 1, (int64_t[]){3}, 1);
    rill__put_u32(buf + n, 0), n += 4;
    rill__put_u32(buf + n, 0), n += 4;
    expect_bad(buf, n, 0, "three elements, two lengths");
    /* numeric: bad dtypes */
    uint32_t dts[] = {0, 8, 64, 65, 1000, 0x7FFFFFFFu, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        n = one_header(buf, dts[i], 1, (int64_t[]){1}, 1);
        expect_bad(buf, n, 4096, "bad dtype");
    }
    /* numeric: more bytes than the payload holds, or no payload at all */
    n = one_header(buf, RILL_FLOAT, 1, (int64_t[]){1025}, 1);
    expect_bad(buf, n, 4096, "past the payload");
    n = one_header(buf, RILL_FLOAT, 1, (int64_t[]){1}, 1);
    expect_bad(buf, n, 0, "numeric, no payload");
    n = one_header(buf, RILL_DOUBLE, 2, (int64_t[]){1LL << 61, 8}, 2);
    expect_bad(buf, n, 4096, "byte size overflows");
    /* a count larger than the tensors present */
    n = one_header(buf, RILL_STRING, 0, NULL, 0);
    rill__put_u32(buf + n, 2), n += 4;
    memcpy(buf + n, "ab", 2), n += 2;
    rill__put_u32(buf, 2);
    expect_bad(buf, n, 0, "count 2, one tensor");
    rill__put_u32(buf, 0xFFFFFFFFu);
    expect_bad(buf, n, 0, "count 2^32-1, one tensor");
}

/* Every truncation of a valid mixed message fails cleanly; so does every shorter payload. */
static void test_truncations(void)
{
    rill_status *s = rill_status_new();
    const char *v[] = {"ab\0c", "", "xyz"};
    size_t vl[] = {4, 0, 3};
    rill_tensor *ts[] = {
        numeric(RILL_FLOAT, (int64_t[]){3}, 1, 1),       strings((int64_t[]){3}, 1, v, vl),
        numeric(RILL_INT64, (int64_t[]){2, 3}, 2, 2),    rill_tensor_scalar_string("tail"),
        rill_tensor_new(RILL_STRING, (int64_t[]){0}, 1),
    };
    int nt = 5;
    msg m;
    if (CHECK(encode(ts, nt, &m, s))) {
        rill_tensor *out[8];
        CHECK_EQ_INT(decode(m.meta.p, m.meta.n, m.payload, m.payload_len, out, 8), nt);
        for (int i = 0; i < nt; i++) rill_tensor_free(out[i]);
        int clean = 0;
        for (size_t len = 0; len < m.meta.n; len++) {
            uint8_t *cut = malloc(len ? len : 1); /* exactly len bytes: ASan sees any overread */
            memcpy(cut, m.meta.p, len);
            int got = decode(cut, len, m.payload, m.payload_len, out, 8);
            clean += got == -1;
            for (int i = 0; i < got; i++) rill_tensor_free(out[i]);
            free(cut);
        }
        CHECK_EQ_INT(clean, (int)m.meta.n);
        /* the payload cut short: the numeric tensors no longer fit */
        int pclean = 0;
        for (uint64_t plen = 0; plen < m.payload_len; plen++) {
            int got = decode(m.meta.p, m.meta.n, m.payload, plen, out, 8);
            pclean += got == -1;
            for (int i = 0; i < got; i++) rill_tensor_free(out[i]);
        }
        CHECK_EQ_INT(pclean, (int)m.payload_len);
    }
    msg_free(&m);
    for (int i = 0; i < nt; i++) rill_tensor_free(ts[i]);
    rill_status_free(s);
}

/* Random mutations of a valid message: never a crash; whatever decodes is readable in full. */
static void test_fuzz(void)
{
    rill_status *s = rill_status_new();
    const char *v[] = {"alpha", "", "gamma\0", "d"};
    size_t vl[] = {5, 0, 6, 1};
    rill_tensor *ts[] = {
        strings((int64_t[]){2, 2}, 2, v, vl),
        numeric(RILL_FLOAT, (int64_t[]){5}, 1, 1),
        rill_tensor_scalar_string("x"),
        numeric(RILL_INT32, (int64_t[]){2, 3}, 2, 2),
    };
    msg m;
    rill__rng rng;
    rill__rng_seed(&rng, 99);
    int decoded = 0, failed = 0, unclean = 0;
    if (CHECK(encode(ts, 4, &m, s))) {
        for (int it = 0; it < 30000; it++) {
            size_t len = m.meta.n;
            if (rill__rng_next(&rng) % 4 == 0) len = rill__rng_next(&rng) % (m.meta.n + 1);
            uint8_t *mut = malloc(len ? len : 1);
            memcpy(mut, m.meta.p, len);
            int flips = 1 + (int)(rill__rng_next(&rng) % 4);
            for (int f = 0; len && f < flips; f++) {
                size_t at = rill__rng_next(&rng) % len;
                if (rill__rng_next(&rng) % 2)
                    mut[at] ^= (uint8_t)(1u << (rill__rng_next(&rng) % 8));
                else
                    mut[at] = (uint8_t)rill__rng_next(&rng);
            }
            rill_tensor *out[16];
            int got = decode(mut, len, m.payload, m.payload_len, out, 16);
            if (got >= 0) {
                decoded++;
                /* touch every byte, so ASan would see a view past the payload */
                unsigned sum = 0;
                for (int i = 0; i < got; i++) {
                    if (rill_tensor_dtype(out[i]) == RILL_STRING) {
                        for (int64_t e = 0; e < rill_tensor_num_elements(out[i]); e++) {
                            size_t sl;
                            const char *p = rill_tensor_get_string(out[i], e, &sl);
                            for (size_t b = 0; b < sl; b++) sum += (uint8_t)p[b];
                        }
                    } else {
                        const uint8_t *p = rill_tensor_data(out[i]);
                        for (size_t b = 0; b < rill_tensor_nbytes(out[i]); b++) sum += p[b];
                    }
                    rill_tensor_free(out[i]);
                }
                (void)sum;
            } else {
                failed++;
                unclean += got == -2;
            }
            free(mut);
        }
    }
    printf("fuzz: %d decoded, %d rejected\n", decoded, failed);
    CHECK(decoded > 0 && failed > 0);
    CHECK_EQ_INT(unclean, 0);
    msg_free(&m);
    for (int i = 0; i < 4; i++) rill_tensor_free(ts[i]);
    rill_status_free(s);
}

static rill__channel *connect_as(const char *addr, const rill__identity *id, rill_status *s)
{
    rill__tcp_options o = {0};
    if (id) o.identity = *id;
    return rill__tcp_connect(addr, &o, 5, s);
}

/* A DEREGISTER (op 0) or RUN (op 1: of no fetch, or op 2: fetching "seven:0") of handle h; true
 * when it was served, false with s set. */
static bool use_handle(rill__channel *ch, int op, uint64_t h, rill_status *s)
{
    rill__mbuf q = {0};
    rill__mbuf_u32(&q, op ? RILL__RPC_RUN : RILL__RPC_DEREGISTER);
    rill__mbuf_u64(&q, h);
    if (op) {
        rill__mbuf_u64(&q, 1);
        rill__mbuf_u64(&q, h);
        rill__mbuf_u32(&q, 0);
        rill__mbuf_u32(&q, op == 2);
        if (op == 2) rill__mbuf_str(&q, "seven:0");
        rill__mbuf_u32(&q, 0);
    }
    rill__reply rep = {0};
    bool ok = rill__channel_call(ch, RILL__MSG_REQUEST, q.p, (uint32_t)q.n, NULL, 0, &rep, 5, s);
    if (rep.payload_owned) rill__aligned_free(rep.payload, rep.payload_len);
    rill__mbuf_free(&q);
    return ok;
}

static long rss_kb(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    if (f) fclose(f);
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static bool recv_all(int fd, void *p, size_t n)
{
    for (uint8_t *b = p; n;) {
        ssize_t k = recv(fd, b, n, 0);
        if (k <= 0) return false;
        b += k, n -= (size_t)k;
    }
    return true;
}

/* A raw socket through the handshake as task `id` (no secret); -1 on failure. */
static int raw_member(const char *addr, const rill__identity *id)
{
    int port = atoi(strchr(addr, ':') + 1);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    uint8_t ch[RILL__WIRE_HEADER_SIZE + 36], hs[RILL__WIRE_HEADER_SIZE + 90 + 128] = {0};
    size_t tl = strlen(id->task);
    rill__frame_header h = {.version = RILL__WIRE_VERSION, .type = RILL__MSG_HANDSHAKE,
                            .meta_len = (uint32_t)(90 + tl)};
    rill__frame_header_encode(&h, hs);
    uint8_t *m = hs + RILL__WIRE_HEADER_SIZE;
    rill__put_u32(m, RILL__WIRE_VERSION);
    memcpy(m + 40, id->cluster, 32);
    memcpy(m + 72, id->run, 16);
    rill__put_u16(m + 88, (uint16_t)tl);
    memcpy(m + 90, id->task, tl);
    uint8_t ok[RILL__WIRE_HEADER_SIZE + 20];
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 || !recv_all(fd, ch, sizeof ch) ||
        send(fd, hs, RILL__WIRE_HEADER_SIZE + 90 + tl, MSG_NOSIGNAL) < 0 ||
        !recv_all(fd, ok, sizeof ok) || ok[5] != RILL__MSG_HANDSHAKE_OK) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Row 1 of issue 13: a stranger that completed the (secret-less) handshake sent DEREGISTER for
 * handles 1..200 (they were sequential) and both workers of a cluster died. Now a client that
 * names no task of the cluster is refused at its handshake, whoever it says it is otherwise
 * (another cluster, a task the cluster does not have, another run); a member guessing handles
 * finds none; and a handle is usable only by the task that registered it, not another member
 * that knows it. The cluster's session goes on throughout. */
static void test_strangers_and_handles(void)
{
    rill_status *s = rill_status_new();
    char ps[32], wk[32], other[32];
    snprintf(ps, sizeof ps, "127.0.0.1:%d", test_free_port());
    snprintf(wk, sizeof wk, "127.0.0.1:%d", test_free_port());
    snprintf(other, sizeof other, "127.0.0.1:%d", test_free_port());
    rill_cluster_spec *c = rill_cluster_spec_from_hosts(ps, wk, s);
    rill_cluster_spec *c2 = rill_cluster_spec_from_hosts(ps, other, s);
    rill_server *sp = c ? rill_server_new(c, "ps", 0, NULL, s) : NULL;
    rill_server *sw = sp ? rill_server_new(c, "worker", 0, NULL, s) : NULL;
    rill_graph *g = rill_graph_new();
    rill_graph_push_device(g, "/job:ps/task:0");
    rill_output v = rill_variable(g, RILL_FLOAT, rill_shape_scalar(), rill_constant_initializer(1),
                                  false, "v");
    rill_output up = rill_assign_add(g, v, rill_const_float(g, 1, NULL), "up");
    rill_graph_pop_device(g);
    rill_node *init = rill_global_variables_initializer(g, NULL);
    rill_session_options *o = rill_session_options_new();
    rill_session *sess = NULL;
    if (CHECK(sw != NULL)) {
        rill_session_options_set_target(o, rill_server_target(sw));
        sess = rill_session_new(g, o, s);
    }
    rill_tensor *t = NULL;
    if (CHECK(sess && rill_session_run_targets(sess, &init, 1, s) == RILL_OK) &&
        CHECK(rill_session_run(sess, NULL, NULL, 0, &up, &t, 1, NULL, 0, s) == RILL_OK)) {
        rill_tensor_free(t);
        t = NULL;
        /* Strangers are refused before any request. */
        CHECK(connect_as(ps, NULL, s) == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_PERMISSION_DENIED);
        CHECK_STR_CONTAINS(rill_status_message(s), "only tasks of this cluster");
        rill__identity foreign = rill__cluster_identity(c2, "worker", 0);
        CHECK(connect_as(ps, &foreign, s) == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_FAILED_PRECONDITION);
        CHECK_STR_CONTAINS(rill_status_message(s), "is a task of another cluster");
        rill__identity nosuch = rill__cluster_identity(c, "worker", 0);
        snprintf(nosuch.task, sizeof nosuch.task, "/job:worker/replica:0/task:7");
        CHECK(connect_as(ps, &nosuch, s) == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_PERMISSION_DENIED);
        CHECK_STR_CONTAINS(rill_status_message(s), "names no task of this cluster");
        rill__identity rerun = rill__cluster_identity(c, "worker", 0); /* a fresh random run */
        CHECK(connect_as(ps, &rerun, s) == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_FAILED_PRECONDITION);
        CHECK_STR_CONTAINS(rill_status_message(s), "belongs to another run of this cluster");

        /* A member (the ps task itself, say) guessing handles finds none of them. */
        rill__identity member = rill__cluster_identity(c, "ps", 0);
        rill__channel *ch = connect_as(ps, &member, s);
        CHECK(ch != NULL);
        int refused = 0;
        for (uint64_t h = 1; ch && h <= 200; h++) {
            for (int op = 0; op < 2; op++) {
                if (!use_handle(ch, op, h, s) && op && rill_status_code(s) == RILL_NOT_FOUND)
                    refused++;
                rill_status_clear(s);
            }
        }
        rill__channel_close(ch);
        CHECK_EQ_INT(refused, 200); /* no guessed handle ran */

        /* A graph registered by one member is not another's to run or drop, even by handle. */
        rill_graph *g2 = rill_graph_new();
        rill_const_float(g2, 7, "seven");
        uint8_t *bytes = NULL;
        size_t len = 0;
        uint64_t handle = 0;
        rill__channel *owner = connect_as(ps, &member, s);
        rill__identity wid = rill__cluster_identity(c, "ps", 0);
        snprintf(wid.task, sizeof wid.task, "/job:worker/replica:0/task:0");
        rill__channel *thief = connect_as(ps, &wid, s);
        if (CHECK(owner && thief && rill__graph_encode(g2, &bytes, &len, s))) {
            rill__mbuf q = {0};
            rill__mbuf_u32(&q, RILL__RPC_REGISTER);
            rill__mbuf_u64(&q, 42);
            struct iovec iov = {bytes, len};
            rill__reply rep = {0};
            if (CHECK(rill__channel_call(owner, RILL__MSG_REQUEST, q.p, (uint32_t)q.n, &iov, 1,
                                         &rep, 5, s))) {
                rill__mread r = {.p = rep.meta, .n = rep.meta_len};
                handle = rill__mread_u64(&r);
            }
            rill__mbuf_free(&q);
            CHECK(handle != 0);
            CHECK(!use_handle(thief, 0, handle, s)); /* DEREGISTER: refused */
            CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
            CHECK(!use_handle(thief, 2, handle, s)); /* RUN: not found for it */
            CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
            rill_status_clear(s);
            if (!CHECK(use_handle(owner, 2, handle, s))) /* still there for its owner */
                fprintf(stderr, "  %s\n", rill_status_message(s));
            CHECK(use_handle(owner, 0, handle, s));
            CHECK(!use_handle(owner, 2, handle, s)); /* and gone once it dropped it */
            CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
        }
        free(bytes);
        rill__channel_close(owner);
        rill__channel_close(thief);
        rill_graph_free(g2);

        /* Row 4: a peer announced 16 frames of 4 GiB (68 GB of address space reserved), and
         * 256 MiB it sent stayed in RSS. Now a frame past max_payload (1 GiB) closes the
         * connection at its header, and a TENSOR push past what the graphs receive (a scalar
         * here) is read and dropped, never stored. */
        long rss0 = rss_kb();
        for (int i = 0; i < 16; i++) {
            int fd = raw_member(ps, &member);
            uint8_t f[RILL__WIRE_HEADER_SIZE + 4] = {0};
            rill__frame_header h = {.version = RILL__WIRE_VERSION, .type = RILL__MSG_PUSH,
                                    .meta_len = 4, .payload_len = UINT64_C(4) << 30};
            rill__frame_header_encode(&h, f);
            rill__put_u32(f + RILL__WIRE_HEADER_SIZE, RILL__RPC_TENSOR);
            char b;
            CHECK(fd >= 0 && send(fd, f, sizeof f, MSG_NOSIGNAL) == (ssize_t)sizeof f &&
                  recv(fd, &b, 1, 0) <= 0); /* closed */
            if (fd >= 0) close(fd);
        }
        int fd = raw_member(ps, &member);
        uint8_t f[RILL__WIRE_HEADER_SIZE + 4] = {0};
        uint64_t big = UINT64_C(256) << 20;
        rill__frame_header h = {.version = RILL__WIRE_VERSION, .type = RILL__MSG_REQUEST,
                                .meta_len = 4, .payload_len = big};
        rill__frame_header_encode(&h, f);
        rill__put_u32(f + RILL__WIRE_HEADER_SIZE, RILL__RPC_TENSOR);
        uint8_t *junk = calloc(1, 1 << 20);
        bool sent = fd >= 0 && send(fd, f, sizeof f, MSG_NOSIGNAL) == (ssize_t)sizeof f;
        for (uint64_t k = 0; sent && k < big; k += 1 << 20)
            sent = send(fd, junk, 1 << 20, MSG_NOSIGNAL) == 1 << 20;
        free(junk);
        uint8_t eh[RILL__WIRE_HEADER_SIZE];
        rill__frame_header reply;
        CHECK(sent && recv_all(fd, eh, sizeof eh) &&
              rill__frame_header_decode(eh, 1 << 20, &reply, s) && reply.type == RILL__MSG_ERROR);
        if (fd >= 0) close(fd);
        long grew = rss_kb() - rss0;
        if (!CHECK(grew < 64 * 1024)) fprintf(stderr, "  RSS grew by %ld KiB\n", grew);

        bool still = rill_session_run(sess, NULL, NULL, 0, &up, &t, 1, NULL, 0, s) == RILL_OK;
        if (!CHECK(still)) fprintf(stderr, "  %s\n", rill_status_message(s));
        else CHECK(*(float *)rill_tensor_data(t) == 3);
        rill_tensor_free(t);
    }
    rill_session_free(sess);
    rill_session_options_free(o);
    rill_graph_free(g);
    rill_server_free(sw);
    rill_server_free(sp);
    rill_cluster_spec_free(c);
    rill_cluster_spec_free(c2);
    rill_status_free(s);
}

/* A RUN request without a payload reaches the reader as a block adopted from NULL (server.c
 * adopts whatever came); an empty tensor read from it must still have data of its own, not a
 * view at NULL + 0 (found by fuzz/fuzz_rpc.c: UBSan, "applying zero offset to null pointer" in
 * rill__tensor_view). */
static void test_empty_without_payload(void)
{
    rill_status *s = rill_status_new();
    rill_tensor *empty = rill_tensor_new(RILL_FLOAT, (int64_t[]){0, 3}, 2);
    rill__mbuf meta = {0};
    rill__mbuf_u32(&meta, 1);
    CHECK(rill__mbuf_tensor(&meta, empty, s));
    rill__buffer *none = rill__buffer_adopt(NULL, 0);
    rill__mread r = {.p = meta.p, .n = meta.n};
    rill__mread_u32(&r);
    uint64_t off = 0;
    rill_tensor *t = rill__mread_tensor(&r, none, 0, &off, s);
    if (CHECK(t != NULL)) {
        CHECK(!r.bad && off == 0);
        CHECK_EQ_INT(rill_tensor_num_elements(t), 0);
        CHECK_EQ_INT(rill_tensor_dim(t, 1), 3);
        CHECK(rill_tensor_data(t) != NULL);
    }
    rill_tensor_free(t);
    rill__buffer_unref(none);
    rill__mbuf_free(&meta);
    rill_tensor_free(empty);
    rill_status_free(s);
}

int main(void)
{
    test_strangers_and_handles();
    test_empty_without_payload();
    test_string_roundtrips();
    test_mixed_roundtrip();
    test_string_too_big();
    test_hostile_headers();
    test_truncations();
    test_fuzz();
    TEST_MAIN_END();
}
