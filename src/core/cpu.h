/* cpu.h - what the CPU can do, found once at run time, and the instruction set the library's
 * vector loops use.
 *
 * The library is compiled for the baseline of its architecture (any x86-64 CPU), never for the
 * build machine. Code that gains from newer instructions exists in several versions and picks
 * one here, at run time: CRC32C (SSE4.2's crc32 instruction or tables) and the kernels' vector
 * loops (src/kernels/cpu/loops_isa.c, compiled once per instruction set). RILL_ISA=generic, avx2
 * or avx512 asks for a lower set than the best one (tests run every version on one machine);
 * a set the CPU or the build lacks is refused with a warning and the best available used. */
#ifndef RILL_CORE_CPU_H
#define RILL_CORE_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rill__cpu_features {
    char vendor[16];
    char model[64]; /* the brand string ("AMD EPYC 9R14 96-Core Processor"), or "unknown" */
    bool sse42, pclmul, popcnt, avx, avx2, fma, f16c, bmi2;
    bool avx512f, avx512bw, avx512dq, avx512vl, avx512vnni, avx512bf16, avx512fp16;
    bool amx_tile, amx_bf16, amx_int8;
    bool os_avx, os_avx512, os_amx; /* the OS saves the registers (XCR0) */
} rill__cpu_features;

/* The features of the CPU this process runs on (found on first call; thread-safe). */
const rill__cpu_features *rill__cpu(void);

/* The instruction sets the vector loops are compiled for, in rising order. */
typedef enum { RILL__ISA_GENERIC, RILL__ISA_AVX2, RILL__ISA_AVX512, RILL__ISA_COUNT } rill__isa;
const char *rill__isa_name(rill__isa isa);
/* True when the library was built with a version for isa and this CPU (and OS) can run it. */
bool rill__isa_usable(rill__isa isa);
/* The set the vector loops use: the best usable one, or RILL_ISA's when that is lower. */
rill__isa rill__isa_chosen(void);

/* "sse4.2 avx avx2 fma ..." of the features found, into buf. */
void rill__cpu_feature_list(char *buf, size_t len);

/* CRC32C's code path: "sse4.2 crc32, 3 streams" or "slicing-by-8 tables". */
const char *rill__crc32c_path(void);
/* The table version, whatever the CPU (tests compare it with the chosen one). */
uint32_t rill__crc32c_tables(uint32_t crc, const void *data, size_t n);

#endif
