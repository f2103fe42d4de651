/* philox.h - TF's Philox4x32-10 stream (see cpu_random.c's comment) for the kernels that draw
 * from it: the random ops (cpu_random.c) and RandomDataset (cpu_dataset2.c). */
#ifndef RILL_KERNELS_CPU_PHILOX_H
#define RILL_KERNELS_CPU_PHILOX_H

#include <stdint.h>

typedef struct philox {
    uint32_t key[2];
    uint32_t ctr[4];
} philox;

static inline void philox_init(philox *p, uint64_t seed, uint64_t seed2)
{
    p->key[0] = (uint32_t)seed;
    p->key[1] = (uint32_t)(seed >> 32);
    p->ctr[0] = p->ctr[1] = 0;
    p->ctr[2] = (uint32_t)seed2;
    p->ctr[3] = (uint32_t)(seed2 >> 32);
}

/* Moves the 128-bit counter on by n. */
static inline void philox_skip(philox *p, uint64_t n)
{
    uint64_t lo = ((uint64_t)p->ctr[1] << 32 | p->ctr[0]);
    uint64_t nlo = lo + n;
    p->ctr[0] = (uint32_t)nlo;
    p->ctr[1] = (uint32_t)(nlo >> 32);
    if (nlo < lo && ++p->ctr[2] == 0) ++p->ctr[3];
}

/* The block at the counter, then the counter moves on by one. */
static inline void philox_next(philox *p, uint32_t out[4])
{
    uint32_t c0 = p->ctr[0], c1 = p->ctr[1], c2 = p->ctr[2], c3 = p->ctr[3];
    uint32_t k0 = p->key[0], k1 = p->key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t m0 = (uint64_t)0xD2511F53u * c0, m1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(m1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(m0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)m1;
        c3 = (uint32_t)m0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
    philox_skip(p, 1);
}

/* uint32s one at a time from successive blocks (TF's SingleSampleAdapter). */
typedef struct single {
    philox *p;
    uint32_t buf[4];
    int used;
} single;

static inline uint32_t single_next(single *s)
{
    if (s->used == 4) {
        philox_next(s->p, s->buf);
        s->used = 0;
    }
    return s->buf[s->used++];
}

#endif
