/* cpu_apply.h - the element-wise optimizer updates of cpu_apply.c, shared with the sparse
 * updates of cpu_sparse_apply.c (which run them over the rows an IndexedSlices names). */
#ifndef RILL_CPU_APPLY_H
#define RILL_CPU_APPLY_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
    RILL__K_RMSPROP,
    RILL__K_CENTERED_RMSPROP,
    RILL__K_ADADELTA,
    RILL__K_FTRL,
    RILL__K_FTRL_V2,
    RILL__K_PROXIMAL_ADAGRAD,
    RILL__K_PROXIMAL_GD
} rill__apply_kind;

/* Updates n elements of var s[0] and its slots s[1..] (float, or double when f64) by gradient g
 * with the hyper-parameters h in the dense op's input order (TF's training_ops.cc functors). */
void rill__cpu_apply_elems(rill__apply_kind kind, bool f64, void *const s[4], const void *g,
                           const double h[5], int64_t n);

#endif
