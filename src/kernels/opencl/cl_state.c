/* cl_state.c - OpenCL kernels (being written). */
#include "../kernel.h"
#include "../../device/opencl/opencl.h"

const char rill__cl_source_state[] = "\n";

const rill__kernel_def rill__opencl_kernels_state[] = {
    {0},
};
