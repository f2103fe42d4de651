/* cpu_nn.c - CPU kernels for neural-network ops (being written). */
#include "../kernel.h"

const rill__kernel_def rill__cpu_kernels_nn[] = {
    {0},
};
