/* cpu.c - the CPU's features (CPUID and XGETBV on x86-64) and the choice of instruction set for
 * the vector loops. See cpu.h. */
#include "cpu.h"

#include "core.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define RILL_CPU_X86 1
#endif

static rill__cpu_features features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

#ifdef RILL_CPU_X86
static unsigned long long xgetbv0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}
#endif

static void detect(void)
{
    rill__cpu_features *f = &features;
    snprintf(f->vendor, sizeof f->vendor, "unknown");
    snprintf(f->model, sizeof f->model, "unknown");
#ifdef RILL_CPU_X86
    unsigned a, b, c, d, max_leaf;
    if (!__get_cpuid(0, &max_leaf, &b, &c, &d)) return;
    memcpy(f->vendor, &b, 4);
    memcpy(f->vendor + 4, &d, 4);
    memcpy(f->vendor + 8, &c, 4);
    f->vendor[12] = 0;
    __cpuid(1, a, b, c, d);
    f->sse42 = c & (1u << 20);
    f->pclmul = c & (1u << 1);
    f->popcnt = c & (1u << 23);
    f->fma = c & (1u << 12);
    f->f16c = c & (1u << 29);
    bool avx = c & (1u << 28), osxsave = c & (1u << 27);
    unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
    f->os_avx = (xcr0 & 0x6) == 0x6;                   /* SSE and AVX state */
    f->os_avx512 = f->os_avx && (xcr0 & 0xe0) == 0xe0; /* opmask, ZMM0-15 high, ZMM16-31 */
    f->os_amx = (xcr0 & 0x60000) == 0x60000;           /* XTILECFG, XTILEDATA */
    f->avx = avx && f->os_avx;
    if (!f->avx) f->fma = f->f16c = false;
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f->avx2 = f->avx && (b & (1u << 5));
        f->bmi2 = b & (1u << 8);
        f->avx512f = f->os_avx512 && (b & (1u << 16));
        f->avx512dq = f->avx512f && (b & (1u << 17));
        f->avx512bw = f->avx512f && (b & (1u << 30));
        f->avx512vl = f->avx512f && (b & (1u << 31));
        f->avx512vnni = f->avx512f && (c & (1u << 11));
        f->avx512fp16 = f->avx512f && (d & (1u << 23));
        /* AMX counts when the OS saves tile state (XCR0); Linux also wants each process to ask
         * for it (arch_prctl ARCH_REQ_XCOMP_PERM), which whoever uses AMX does. */
        f->amx_bf16 = f->os_amx && (d & (1u << 22));
        f->amx_tile = f->os_amx && (d & (1u << 24));
        f->amx_int8 = f->os_amx && (d & (1u << 25));
        if (a >= 1) { /* subleaf 0's EAX: the highest subleaf */
            __cpuid_count(7, 1, a, b, c, d);
            f->avx512bf16 = f->avx512f && (a & (1u << 5));
        }
    }
    unsigned ext;
    __cpuid(0x80000000, ext, b, c, d);
    if (ext >= 0x80000004) {
        unsigned brand[12];
        for (unsigned i = 0; i < 3; i++)
            __cpuid(0x80000002 + i, brand[4 * i], brand[4 * i + 1], brand[4 * i + 2],
                    brand[4 * i + 3]);
        char s[49];
        memcpy(s, brand, 48);
        s[48] = 0;
        const char *p = s;
        while (*p == ' ') p++;
        size_t n = strlen(p);
        while (n && p[n - 1] == ' ') n--;
        if (n) snprintf(f->model, sizeof f->model, "%.*s", (int)n, p);
    }
#endif
}

const rill__cpu_features *rill__cpu(void)
{
    pthread_once(&features_once, detect);
    return &features;
}

void rill__cpu_feature_list(char *buf, size_t len)
{
    const rill__cpu_features *f = rill__cpu();
    const struct {
        bool on;
        const char *name;
    } all[] = {
        {f->sse42, "sse4.2"},
        {f->pclmul, "pclmul"},
        {f->popcnt, "popcnt"},
        {f->avx, "avx"},
        {f->avx2, "avx2"},
        {f->fma, "fma"},
        {f->f16c, "f16c"},
        {f->bmi2, "bmi2"},
        {f->avx512f, "avx512f"},
        {f->avx512bw, "avx512bw"},
        {f->avx512dq, "avx512dq"},
        {f->avx512vl, "avx512vl"},
        {f->avx512vnni, "avx512vnni"},
        {f->avx512bf16, "avx512bf16"},
        {f->avx512fp16, "avx512fp16"},
        {f->amx_tile, "amx-tile"},
        {f->amx_bf16, "amx-bf16"},
        {f->amx_int8, "amx-int8"},
    };
    size_t k = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i].on && k < len) {
            int w = snprintf(buf + k, len - k, "%s%s", k ? " " : "", all[i].name);
            if (w > 0) k += (size_t)w;
        }
    if (!k) snprintf(buf, len, "(none beyond the architecture's baseline)");
}

const char *rill__isa_name(rill__isa isa)
{
    static const char *const names[RILL__ISA_COUNT] = {"generic", "avx2", "avx512"};
    return isa >= 0 && isa < RILL__ISA_COUNT ? names[isa] : "?";
}

bool rill__isa_usable(rill__isa isa)
{
    const rill__cpu_features *f = rill__cpu();
    bool built = false, runs = false;
    switch (isa) {
    case RILL__ISA_GENERIC:
        return true;
    case RILL__ISA_AVX2:
#ifdef RILL_HAVE_ISA_AVX2
        built = true;
#endif
        runs = f->avx2 && f->fma && f->f16c;
        break;
    case RILL__ISA_AVX512:
#ifdef RILL_HAVE_ISA_AVX512
        built = true;
#endif
        runs =
            f->avx512f && f->avx512bw && f->avx512dq && f->avx512vl && f->avx2 && f->fma && f->f16c;
        break;
    default:
        break;
    }
    return built && runs;
}

static rill__isa chosen;
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    rill__isa best = RILL__ISA_GENERIC;
    for (int i = RILL__ISA_COUNT - 1; i > 0; i--)
        if (rill__isa_usable((rill__isa)i)) {
            best = (rill__isa)i;
            break;
        }
    chosen = best;
    const char *want = getenv("RILL_ISA");
    if (!want || !*want) return;
    for (int i = 0; i < RILL__ISA_COUNT; i++)
        if (strcmp(want, rill__isa_name((rill__isa)i)) == 0) {
            if (rill__isa_usable((rill__isa)i))
                chosen = (rill__isa)i;
            else
                rill__log(RILL_LOG_WARNING,
                          "RILL_ISA=%s: this CPU or this build cannot run it; using %s", want,
                          rill__isa_name(best));
            return;
        }
    rill__log(RILL_LOG_WARNING, "RILL_ISA=%s is not one of generic, avx2, avx512; using %s", want,
              rill__isa_name(best));
}

rill__isa rill__isa_chosen(void)
{
    pthread_once(&chosen_once, choose);
    return chosen;
}
