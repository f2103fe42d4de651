/* window_geom.h - the output size and leading padding of one spatial dimension of a windowed op
 * (TensorFlow's GetWindowedOutputSize): the one copy of that arithmetic, for the op definitions
 * (convolutions and pools of every rank through ops_conv.c's rill__window_dim, MaxPoolWithArgmax,
 * Dilation2D) and for the kernels that recompute their geometry. */
#ifndef RILL_WINDOW_GEOM_H
#define RILL_WINDOW_GEOM_H

#include <stdbool.h>
#include <stdint.h>

/* in: input size (-1 unknown, as is k = -1), k: window size, s: stride, r: rate (dilation).
 * Sets *out (-1 when unknown) and *pad (the padding before). False when the output size would
 * be negative (VALID with a window wider than the input plus a stride); *out then holds that
 * size, which TF's text reports. ops_conv.c's rill__window_dim adds the text. */
static inline bool rill__window_size(int64_t in, int64_t k, int64_t s, int64_t r, bool same,
                                     int64_t *out, int64_t *pad)
{
    int64_t eff = (k - 1) * r + 1;
    *pad = 0;
    if (in < 0 || k < 0) {
        *out = -1;
        return true;
    }
    if (same) {
        *out = (in + s - 1) / s;
        int64_t need = (*out - 1) * s + eff - in;
        *pad = need > 0 ? need / 2 : 0;
    } else {
        *out = (in - eff + s) / s;
    }
    return *out >= 0;
}

#endif
