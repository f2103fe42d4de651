#include "../kernel.h"

const rill__kernel_def rill__cpu_kernels_norm[] = {
    {0},
};
