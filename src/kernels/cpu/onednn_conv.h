/* onednn_conv.h - float convolutions through oneDNN's convolution primitives (onednn_conv.c).
 *
 * x and dy are NHWC, the filter (and its gradient) TF's HWIO, all dense. The batch is split over
 * pool, one oneDNN call per shard on one thread each, as gemm.c does for products. */
#ifndef RILL_KERNELS_CPU_ONEDNN_CONV_H
#define RILL_KERNELS_CPU_ONEDNN_CONV_H

#include "../../core/core.h"
#include "../../graph/graph_internal.h"

#include <stdbool.h>
#include <stddef.h>

typedef enum rill__conv_kind {
    RILL__CONV_FORWARD,     /* out[N, OH, OW, F] = conv(x, filter) (+ bias[F], then Relu) */
    RILL__CONV_BACK_INPUT,  /* out[N, IH, IW, C] from filter and dy */
    RILL__CONV_BACK_FILTER, /* out[KH, KW, C, F] from x and dy */
} rill__conv_kind;

typedef struct rill__conv_args {
    const float *x, *filter, *dy, *bias; /* those the kind reads; bias may be NULL */
    bool relu;                           /* forward with bias only */
    float *out;
} rill__conv_args;

/* 1: done. 0: oneDNN has no tuned kernel for this window on this CPU (only its reference code),
 * or a size is 0; nothing was written and the caller computes it another way. -1: oneDNN failed
 * while running it; err says how. */
int rill__onednn_conv(rill__threadpool *pool, rill__conv_kind kind, const rill__window *w,
                      const rill__conv_args *a, char *err, size_t errlen);

/* "oneDNN 2.6.3 primitives in float, ...": for rill_runtime_info. */
const char *rill__conv_info(void);

#endif
