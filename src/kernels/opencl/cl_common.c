/* cl_common.c - OpenCL C shared by every kernel source: fp64 enabling, and the index structs and
 * helpers for broadcasting, gathering and reducing over strided tensors.
 *
 * See cl_kernels.h for the T / ACC / LD / ST macros the program is built with.
 * The structs are passed to kernels by value; their host mirrors (cl_math.c) lay them out the
 * same way: two 4-byte ints (or one and padding) first, then arrays of 8-byte longs.
 *
 *   bcast_t   an output of `rank` dims and, per dim, the element stride of up to two operands
 *             (0 on broadcast dims). bcast_offsets maps an output index to both offsets.
 *   reduce_t  an output of nkeep dims (strides into the input) and nred reduced dims (strides
 *             into the input): reduce_base gives the input offset of an output element's first
 *             summand, reduce_offset the offset of its j-th summand relative to that base.
 * Hosts drop size-1 dims and merge contiguous ones first, so the loops are short. */
#include "cl_kernels.h"

const char rill__cl_source_common[] =
    "#ifdef cl_khr_fp64\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    "#define MAXD 8\n"
    "typedef struct { int rank; long dims[MAXD]; long a_strides[MAXD]; long b_strides[MAXD]; } "
    "bcast_t;\n"
    "typedef struct { int nkeep; int nred; long keep_dims[MAXD]; long keep_strides[MAXD];\n"
    "                 long red_dims[MAXD]; long red_strides[MAXD]; } reduce_t;\n"
    "\n"
    "/* The offsets into a and b of output element i. */\n"
    "void bcast_offsets(const bcast_t *bc, long i, long *ia, long *ib) {\n"
    "    long a = 0, b = 0;\n"
    "    for (int d = bc->rank - 1; d >= 0; d--) {\n"
    "        long n = bc->dims[d], q = i / n, k = i - q * n;\n"
    "        a += k * bc->a_strides[d];\n"
    "        b += k * bc->b_strides[d];\n"
    "        i = q;\n"
    "    }\n"
    "    *ia = a;\n"
    "    *ib = b;\n"
    "}\n"
    "\n"
    "/* The input offset of output element i's first summand. */\n"
    "long reduce_base(const reduce_t *r, long i) {\n"
    "    long off = 0;\n"
    "    for (int d = r->nkeep - 1; d >= 0; d--) {\n"
    "        long n = r->keep_dims[d], q = i / n;\n"
    "        off += (i - q * n) * r->keep_strides[d];\n"
    "        i = q;\n"
    "    }\n"
    "    return off;\n"
    "}\n"
    "\n"
    "/* The offset of summand j relative to reduce_base. */\n"
    "long reduce_offset(const reduce_t *r, long j) {\n"
    "    if (r->nred == 1) return j * r->red_strides[0];\n"
    "    long off = 0;\n"
    "    for (int d = r->nred - 1; d >= 0; d--) {\n"
    "        long n = r->red_dims[d], q = j / n;\n"
    "        off += (j - q * n) * r->red_strides[d];\n"
    "        j = q;\n"
    "    }\n"
    "    return off;\n"
    "}\n";
