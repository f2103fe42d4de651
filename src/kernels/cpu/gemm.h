/* gemm.h - the CPU's matrix products (gemm.c): C[m, n] = op(A) op(B), row-major, op a transpose
 * when ta/tb; lda, ldb, ldc are the row strides of A, B, C as stored. Split by rows of C over
 * pool (NULL: on the calling thread). */
#ifndef RILL_KERNELS_CPU_GEMM_H
#define RILL_KERNELS_CPU_GEMM_H

#include "../../core/core.h"

#include <stdbool.h>
#include <stdint.h>

/* False when oneDNN refused the call (bad sizes; it never runs out of memory here). */
bool rill__gemm_f32(rill__threadpool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                    int64_t ldc);
/* The same, then each row of C += bias[n] and, when relu, max(C, 0): MatMul + BiasAdd (+ Relu)
 * in one pass, giving the bits the three ops give one after another. */
bool rill__gemm_f32_bias(rill__threadpool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                         const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                         int64_t ldc, const float *bias, bool relu);
void rill__gemm_f64(rill__threadpool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                    const double *a, int64_t lda, const double *b, int64_t ldb, double *c,
                    int64_t ldc);
/* Makes oneDNN run its next calls on this thread alone (its OpenMP threads unused): every call
 * into oneDNN, primitive creation included, comes after this on the thread that makes it. */
void rill__onednn_one_thread(void);
/* "oneDNN 2.6.3 (dnnl_sgemm), isa avx512_core_bf16, on rill's intra-op threads". */
const char *rill__gemm_info(void);

#endif
