/* window_geom.h - the output size and leading padding of one spatial dimension of a windowed op
 * (TensorFlow's GetWindowedOutputSize): shared by the op definitions and kernels of
 * MaxPoolWithArgmax (ops_pool_argmax.c) and Dilation2D (ops_dilation.c), whose attrs
 * (ksize/strides, or strides/rates) rill__window_init does not read. */
#ifndef RILL_WINDOW_GEOM_H
#define RILL_WINDOW_GEOM_H

#include <stdbool.h>
#include <stdint.h>

/* in: input size (-1 unknown), k: window size, s: stride, r: rate (dilation). Sets *out (-1
 * when in is unknown) and *pad (padding before). False when the output would be negative. */
static inline bool rill__window_dim(int64_t in, int64_t k, int64_t s, int64_t r, bool same,
                                    int64_t *out, int64_t *pad)
{
    int64_t eff = (k - 1) * r + 1;
    *pad = 0;
    if (in < 0) {
        *out = -1;
        return true;
    }
    if (same) {
        *out = (in + s - 1) / s;
        int64_t total = (*out - 1) * s + eff - in;
        *pad = total > 0 ? total / 2 : 0;
        return true;
    }
    if (in < eff) {
        *out = (in - eff + s) / s; /* TF's text reports this (negative) size */
        return false;
    }
    *out = (in - eff) / s + 1;
    return true;
}

#endif
