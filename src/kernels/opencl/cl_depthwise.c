#include "cl_kernels.h"

const char rill__cl_source_depthwise[] = "";

const rill__kernel_def rill__opencl_kernels_depthwise[] = {
    {0},
};
