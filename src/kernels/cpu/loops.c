/* loops.c - picks the table of vector loops for this CPU (see loops.h). */
#include "loops.h"

#include <stdatomic.h>

extern const rill__loops rill__loops_generic;
#ifdef RILL_HAVE_ISA_AVX2
extern const rill__loops rill__loops_avx2;
#endif
#ifdef RILL_HAVE_ISA_AVX512
extern const rill__loops rill__loops_avx512;
#endif

const rill__loops *rill__loops_for(rill__isa isa)
{
    if (!rill__isa_usable(isa)) return NULL;
    switch (isa) {
#ifdef RILL_HAVE_ISA_AVX2
    case RILL__ISA_AVX2:
        return &rill__loops_avx2;
#endif
#ifdef RILL_HAVE_ISA_AVX512
    case RILL__ISA_AVX512:
        return &rill__loops_avx512;
#endif
    case RILL__ISA_GENERIC:
        return &rill__loops_generic;
    default:
        return NULL;
    }
}

static _Atomic(const rill__loops *) chosen;

const rill__loops *rill__loops_get(void)
{
    const rill__loops *l = atomic_load_explicit(&chosen, memory_order_acquire);
    if (l) return l;
    l = rill__loops_for(rill__isa_chosen());
    if (!l) l = &rill__loops_generic;
    atomic_store_explicit(&chosen, l, memory_order_release);
    return l;
}
