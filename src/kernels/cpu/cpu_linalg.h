/* cpu_linalg.h - what the CPU kernels of the matrix ops (cpu_linalg.c) share with their OpenCL
 * twins (opencl/cl_permute.c: MatrixBandPart): the run-time checks. */
#ifndef RILL_KERNELS_CPU_LINALG_H
#define RILL_KERNELS_CPU_LINALG_H

#include "../kernel.h"

/* MatrixBandPart on x: its inner dims and the node's band (TF's texts when num_lower exceeds
 * the rows or num_upper the columns). False with ctx failed. */
bool rill__band_part_check(rill__kctx *ctx, const rill_tensor *x, int64_t *rows, int64_t *cols,
                           int64_t *lo, int64_t *up);

#endif
