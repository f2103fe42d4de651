#include "cl_kernels.h"

const char rill__cl_source_norm[] = "";

const rill__kernel_def rill__opencl_kernels_norm[] = {
    {0},
};
