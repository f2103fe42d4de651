/* cl_common.c - OpenCL C shared by every kernel source: index helpers for broadcasting.
 * See src/device/opencl/opencl.h for the T / ACC / LD / ST macros the program is built with. */
#include "../../device/opencl/opencl.h"

const char rill__cl_source_common[] =
    "#define MAXD 8\n"
    "typedef struct { int rank; long dims[MAXD]; long a_strides[MAXD]; long b_strides[MAXD]; } "
    "bcast_t;\n";
