/* random.c - xoshiro256** seeded by splitmix64, normal deviates by Box-Muller, and CRC32C.
 *
 * Random ops keep one generator per op instance in the session, so a seeded op yields the same
 * sequence run after run, as TensorFlow's stateful random ops do. CRC32C serves the checkpoint
 * and event file formats. */
#include "core.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cpu.h"
#if defined(__x86_64__)
#include <nmmintrin.h>
#define RILL_CRC_HW 1
/* The SSE4.2 version is compiled for SSE4.2 whatever the build's baseline, and runs only where
 * the CPU has it (rill__crc32c picks at run time). */
#define CRC_HW __attribute__((target("sse4.2")))
#endif

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void rill__rng_seed(rill__rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t rill__rng_next(rill__rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rill__rng_uniform(rill__rng *r)
{
    return (double)(rill__rng_next(r) >> 11) * 0x1.0p-53;
}

double rill__rng_normal(rill__rng *r)
{
    double u1;
    do {
        u1 = rill__rng_uniform(r);
    } while (u1 <= 0.0);
    double u2 = rill__rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint64_t rill__random_seed(void)
{
    static atomic_uint_fast64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ ((uint64_t)getpid() << 16) ^
                 atomic_fetch_add(&counter, 0x9e3779b97f4a7c15ull);
    return splitmix64(&x);
}

/* --- CRC32C (Castagnoli, reflected polynomial 0x82F63B78) ---
 *
 * Where the CPU has SSE4.2 (checked at run time) the crc32 instruction does 8 bytes per step;
 * otherwise a slicing-by-8 table does. Both give the same result:
 * crc32c("123456789") = 0xE3069283. The pre- and post-inversion make
 * rill__crc32c(rill__crc32c(0, a), b) the CRC of a followed by b. */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

uint32_t rill__crc32c_tables(uint32_t crc, const void *data, size_t n)
{
    pthread_once(&crc_once, crc_init);
    const uint8_t *p = data;
    crc = ~crc;
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);
        crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
              crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^
              crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--) crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

#ifdef RILL_CRC_HW

/* The crc32 instruction has a latency of 3 cycles and a throughput of 1, so three independent
 * streams over three adjacent blocks run about three times as fast as one. The block CRCs are
 * then joined: in register form (no inversions) crc(A || B) = shift(crc(A), |B|) ^ crc0(B),
 * where shift multiplies by x^(8|B|) mod P; for the two fixed shifts used, that linear map is
 * four 256-entry tables, built once from the instruction itself. */
#define CRC_BLOCK 4096 /* bytes per stream per round */

static uint32_t shift_table[2][4][256]; /* [0]: by CRC_BLOCK bytes, [1]: by 2 * CRC_BLOCK */
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

CRC_HW static uint32_t shift_by_zeros(uint32_t c, size_t n)
{
    uint64_t r = c;
    for (size_t i = 0; i < n; i += 8) r = _mm_crc32_u64(r, 0);
    return (uint32_t)r;
}

static void shift_init(void)
{
    for (int k = 0; k < 2; k++) {
        uint32_t basis[32];
        for (int j = 0; j < 32; j++) basis[j] = shift_by_zeros(1u << j, (size_t)(k + 1) * CRC_BLOCK);
        for (int byte = 0; byte < 4; byte++)
            for (int b = 0; b < 256; b++) {
                uint32_t v = 0;
                for (int j = 0; j < 8; j++)
                    if (b & (1 << j)) v ^= basis[8 * byte + j];
                shift_table[k][byte][b] = v;
            }
    }
}

static inline uint32_t shift(int k, uint32_t c)
{
    return shift_table[k][0][c & 0xff] ^ shift_table[k][1][(c >> 8) & 0xff] ^
           shift_table[k][2][(c >> 16) & 0xff] ^ shift_table[k][3][c >> 24];
}

CRC_HW static uint32_t crc32c_sse42(uint32_t crc, const void *data, size_t n)
{
    const uint8_t *p = data;
    uint64_t c = ~crc;
    for (; n > 0 && ((uintptr_t)p & 7); n--) c = _mm_crc32_u8((uint32_t)c, *p++);
    if (n >= 3 * CRC_BLOCK) {
        pthread_once(&shift_once, shift_init);
        for (; n >= 3 * CRC_BLOCK; n -= 3 * CRC_BLOCK, p += 3 * CRC_BLOCK) {
            uint64_t c1 = 0, c2 = 0;
            const uint64_t *a = (const uint64_t *)p, *b = a + CRC_BLOCK / 8, *d = b + CRC_BLOCK / 8;
            for (int i = 0; i < CRC_BLOCK / 8; i++) {
                c = _mm_crc32_u64(c, a[i]);
                c1 = _mm_crc32_u64(c1, b[i]);
                c2 = _mm_crc32_u64(c2, d[i]);
            }
            c = shift(1, (uint32_t)c) ^ shift(0, (uint32_t)c1) ^ (uint32_t)c2;
        }
    }
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
    }
    for (; n > 0; n--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}

#endif

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);
static _Atomic(crc_fn) crc_impl;

static crc_fn crc_choose(void)
{
    crc_fn f = rill__crc32c_tables;
#ifdef RILL_CRC_HW
    if (rill__cpu()->sse42) f = crc32c_sse42;
#endif
    atomic_store_explicit(&crc_impl, f, memory_order_release);
    return f;
}

uint32_t rill__crc32c(uint32_t crc, const void *data, size_t n)
{
    crc_fn f = atomic_load_explicit(&crc_impl, memory_order_acquire);
    if (!f) f = crc_choose();
    return f(crc, data, n);
}

const char *rill__crc32c_path(void)
{
    crc_fn f = atomic_load_explicit(&crc_impl, memory_order_acquire);
    if (!f) f = crc_choose();
    return f == rill__crc32c_tables ? "slicing-by-8 tables" : "sse4.2 crc32 instruction, 3 streams";
}
