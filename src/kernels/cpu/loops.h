/* loops.h - the CPU kernels' vector loops, one table per instruction set, chosen at run time.
 *
 * loops_isa.c is compiled once per instruction set the build knows (generic, and on x86-64 also
 * avx2 and avx512: see CMakeLists.txt), each time with that set's compiler flags, and defines
 * the table rill__loops_<isa>. rill__loops_get() returns the one for rill__isa_chosen() (the
 * best the CPU runs, or a lower one asked for with RILL_ISA). Every version computes element by
 * element in the same order with the same operations (built with -ffp-contract=off, reductions
 * over a fixed number of partial sums), so all of them give the same bits, but for which NaN
 * comes out of NaN operands: a result never depends on the machine.
 *
 * Ranges are [b, e) element indices; n is a count. Pointers of one call never overlap unless
 * the kernel says so (y may equal x for the in-place maps). */
#ifndef RILL_KERNELS_CPU_LOOPS_H
#define RILL_KERNELS_CPU_LOOPS_H

#include "../../core/cpu.h"

#include <stdbool.h>
#include <stdint.h>

/* Binary ops and the operand forms they run on without broadcasting. */
enum { RILL__BIN_ADD, RILL__BIN_SUB, RILL__BIN_MUL, RILL__BIN_DIV, RILL__BIN_MAX, RILL__BIN_MIN };
enum { RILL__FORM_SAME, RILL__FORM_A_SCALAR, RILL__FORM_B_SCALAR };

/* clang-format would take T for a value here ("T * y"). */
/* clang-format off */
#define RILL__LOOPS_MEMBERS(T)                                                                     \
    /* o[i] = a[i] op b[i] over [b0, e0); form says which operand is one element. Maximum        \
     * propagates NaN from either side, as TF does. */                                             \
    void (*binary)(int op, int form, T *o, const T *a, const T *b, int64_t b0, int64_t e0);       \
    void (*relu)(T *y, const T *x, int64_t b, int64_t e);                                          \
    /* d = g where f > 0 (f: the features or Relu's output), else 0 */                             \
    void (*relu_grad)(T *d, const T *g, const T *f, int64_t b, int64_t e);                         \
    void (*sigmoid)(T *y, const T *x, int64_t b, int64_t e);                                       \
    void (*sigmoid_grad)(T *d, const T *y, const T *dy, int64_t b, int64_t e);                     \
    void (*tanh)(T *y, const T *x, int64_t b, int64_t e);                                          \
    void (*tanh_grad)(T *d, const T *y, const T *dy, int64_t b, int64_t e);                        \
    void (*add)(T *y, const T *x, const T *v, int64_t n);   /* y = x + v */                       \
    void (*accumulate)(T *acc, const T *x, int64_t n);      /* acc += x */                        \
    void (*scale)(T *y, T s, int64_t n);                    /* y *= s */                          \
    /* y = y + bias, then max(y, 0) when relu: BiasAdd (+ Relu) in place, the same bits. */       \
    void (*bias_act)(T *y, const T *bias, bool relu, int64_t n);                                   \
    /* For each of rows rows of n >= 1: y = e^(x - m), m the row's largest (max[r]), sum[r] the   \
     * row's sum of y. */                                                                          \
    void (*exp_shifted_rows)(T *y, const T *x, int64_t rows, int64_t n, T *max, T *sum);         \
    /* The sum of x[0..n) in double, over 16 partial sums (element i goes to partial i % 16, the  \
     * tail to a 17th): it may differ from one running sum in double's last bits. */              \
    double (*sum)(const T *x, int64_t n);                                                          \
    /* The optimizers' updates, in place. */                                                       \
    void (*sgd)(T *w, const T *d, T lr, int64_t n);                                                \
    void (*momentum)(T *w, T *acc, const T *g, T lr, T mom, bool nesterov, int64_t n);            \
    void (*adam)(T *w, T *m, T *v, const T *g, T beta1, T beta2, T eps, T lr, int64_t n);        \
    /* acc += g^2 (unless !update_slots), then w -= lr g / sqrt(acc). */                          \
    void (*adagrad)(T *w, T *acc, const T *g, T lr, bool update_slots, int64_t n);
/* clang-format on */

typedef struct rill__loops_f32 {
    RILL__LOOPS_MEMBERS(float)
} rill__loops_f32;
typedef struct rill__loops_f64 {
    RILL__LOOPS_MEMBERS(double)
} rill__loops_f64;

typedef struct rill__loops {
    const char *isa; /* "generic", "avx2", "avx512" */
    rill__loops_f32 f32;
    rill__loops_f64 f64;
} rill__loops;

/* The loops of rill__isa_chosen(). */
const rill__loops *rill__loops_get(void);
/* The loops of one instruction set, or NULL when the build or the CPU has not got it (tests run
 * each against the generic one). */
const rill__loops *rill__loops_for(rill__isa isa);

#endif
