/* cpu_permute.h - what the CPU kernels of Roll and ReverseSequence (cpu_permute.c) share with
 * their OpenCL twins (opencl/cl_permute.c): the run-time checks and Roll's shifts. */
#ifndef RILL_KERNELS_CPU_PERMUTE_H
#define RILL_KERNELS_CPU_PERMUTE_H

#include "../kernel.h"

/* The node's shape rule (rill__permute_check) on the real shapes; len: ReverseSequence's
 * lengths, NULL for Roll. False with ctx failed. */
bool rill__permute_check_run(rill__kctx *ctx, const rill_tensor *x, const rill_tensor *len);
/* ReverseSequence's lengths (a host tensor): one per batch entry, each in [0, seq dim]. */
bool rill__reverse_sequence_lengths_ok(rill__kctx *ctx, const rill_tensor *x,
                                       const rill_tensor *len);
/* Roll's net shift per dim of x, each in [0, dim). */
void rill__roll_shifts(const rill_node *n, const rill_shape *x, int64_t *sh);

#endif
