/* window3d.h - the run-time checks of the 3-D windowed ops (window3d.c). */
#ifndef RILL_KERNELS_WINDOW3D_H
#define RILL_KERNELS_WINDOW3D_H

#include "kernel.h"

typedef enum rill__window3d_kind {
    RILL__W3_CONV,      /* Conv3D(input, filter) */
    RILL__W3_BP_INPUT,  /* Conv3DBackpropInputV2(input_sizes, filter, out_backprop) */
    RILL__W3_BP_FILTER, /* Conv3DBackpropFilterV2(input, filter_sizes, out_backprop) */
    RILL__W3_POOL,      /* MaxPool3D, AvgPool3D(input) */
    RILL__W3_MAX_GRAD,  /* MaxPool3DGrad(orig_input, orig_output, grad) */
    RILL__W3_AVG_GRAD,  /* AvgPool3DGrad(orig_input_shape, grad) */
} rill__window3d_kind;

/* Checks ctx's inputs for an op of that kind (the size inputs read from host memory) and fills
 * w; false with ctx failed (TensorFlow's text) otherwise. */
bool rill__check_window3d_op(rill__kctx *ctx, rill__window3d_kind kind, rill__window3d *w);

#endif
