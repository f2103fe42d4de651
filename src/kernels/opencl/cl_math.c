/* cl_math.c - OpenCL kernels (being written). */
#include "../kernel.h"
#include "../../device/opencl/opencl.h"

const char rill__cl_source_math[] = "\n";

const rill__kernel_def rill__opencl_kernels_math[] = {
    {0},
};
