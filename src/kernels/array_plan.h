/* array_plan.h - what the CPU and OpenCL kernels of the reductions and shape ops share
 * (src/kernels/cpu/cpu_reduce.c, cpu_shape.c, opencl/cl_reduce.c, cl_shape.c): the run-time
 * checks (the graph layer's shape rules, src/graph/ops_shape.c, applied to the tensors' real
 * shapes, so build time and run time say the same) and the index maps the data-movement
 * kernels follow. */
#ifndef RILL_KERNELS_ARRAY_PLAN_H
#define RILL_KERNELS_ARRAY_PLAN_H

#include "kernel.h"

/* Cumsum / Cumprod: x viewed as [outer, len, inner] around the attr axis. */
bool rill__check_scan(rill__kctx *ctx, const rill_tensor *x, int64_t *outer, int64_t *len,
                      int64_t *inner);

/* An index map: output element i (row-major over count[0..rank)) reads input element
 * rill__map_src(m, i), or the pad value where that is -1. Per output dim d the coordinate c is
 * shifted by -lo[d], then by mode: MAP_DIRECT as is, MAP_PAD outside [0, in[d]) reads the pad
 * value, MAP_REFLECT / MAP_SYMMETRIC mirror it back inside (numpy's reflect / symmetric),
 * MAP_TILE takes it modulo in[d]; the input offset is base + sum(c * step[d]) (step negative:
 * reversed, 0: broadcast). Transpose, Tile, Pad, MirrorPad, ReverseV2, BroadcastTo and the
 * gradients TileGrad and MirrorPadGrad (which add dy[i] into dx[src]) all run on one. */
enum { RILL__MAP_DIRECT, RILL__MAP_PAD, RILL__MAP_REFLECT, RILL__MAP_SYMMETRIC, RILL__MAP_TILE };
typedef struct rill__map {
    int rank;
    int64_t n, base;
    int64_t count[RILL_MAX_DIMS], in[RILL_MAX_DIMS], lo[RILL_MAX_DIMS], step[RILL_MAX_DIMS],
        mode[RILL_MAX_DIMS];
} rill__map;
int64_t rill__map_src(const rill__map *m, int64_t i);
/* The map of ctx's node (one of the ops above) over input x, checked (TF's texts on ctx); for
 * the gradients x is the forward input and dy must have the forward result's shape. */
bool rill__check_map(rill__kctx *ctx, const rill_tensor *x, const rill_tensor *dy, rill__map *m,
                     rill_shape *out);

/* Row blocks: ConcatV2 and Pack write, Split, SplitV, Unpack and ConcatGrad read, each piece k
 * as outer rows of width[k] elements, at column col[k] of rows of total elements. */
#define RILL__MAX_PIECES 1024
typedef struct rill__blocks {
    int n;
    int64_t outer, total;
    int64_t *width, *col; /* n each; free with rill__blocks_free */
    rill_shape *shapes;   /* the pieces' shapes */
    rill_shape whole;     /* the joined tensor's shape */
} rill__blocks;
/* ConcatV2 / Pack over ctx's inputs, Split / SplitV / Unpack / ConcatGrad over input 0 (the
 * gradient: the pieces take inputs 1.. shapes); false with ctx failed (TF's texts). */
bool rill__check_blocks(rill__kctx *ctx, rill__blocks *b);
void rill__blocks_free(rill__blocks *b);

#endif
