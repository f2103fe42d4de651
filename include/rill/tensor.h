/* rill/tensor.h - dtypes, shapes and tensors.
 *
 * A tensor is a dtype, a shape and a reference-counted buffer. Tensors are shared by reference:
 * rill_tensor_ref adds a holder, rill_tensor_free drops one. Buffers know their device (host for
 * now: device 0); a later backend allocates device buffers behind the same handle.
 * dtype numbers are TensorFlow's DataType values so checkpoints can carry them unchanged.
 */
#ifndef RILL_TENSOR_H
#define RILL_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rill_dtype {
    RILL_DT_INVALID = 0,
    RILL_FLOAT = 1,
    RILL_DOUBLE = 2,
    RILL_INT32 = 3,
    RILL_UINT8 = 4,
    RILL_INT16 = 5,
    RILL_INT8 = 6,
    RILL_STRING = 7,
    RILL_INT64 = 9,
    RILL_BOOL = 10,
    RILL_BFLOAT16 = 14,
    RILL_UINT16 = 17,
    RILL_HALF = 19,
} rill_dtype;

/* IEEE binary16 storage. */
typedef uint16_t rill_half;
rill_half rill_half_from_float(float f);
float rill_half_to_float(rill_half h);
/* bfloat16 storage: a float's top 16 bits (from float rounds to nearest even; NaN stays NaN). */
typedef uint16_t rill_bfloat16;
rill_bfloat16 rill_bfloat16_from_float(float f);
float rill_bfloat16_to_float(rill_bfloat16 h);

#define RILL_MAX_DIMS 8

/* A shape as graph building knows it: rank -1 means unknown rank, a dim of -1 an unknown size. */
typedef struct rill_shape {
    int rank;
    int64_t dims[RILL_MAX_DIMS];
} rill_shape;

rill_shape rill_shape_unknown(void);
rill_shape rill_shape_scalar(void);
rill_shape rill_shape_vector(int64_t n);
rill_shape rill_shape_matrix(int64_t rows, int64_t cols);
/* rank <= RILL_MAX_DIMS; dims may hold -1. A rank above the limit yields unknown rank. */
rill_shape rill_shape_make(int rank, const int64_t *dims);
bool rill_shape_is_fully_defined(const rill_shape *s);
/* Product of dims: 0 when any is 0, -1 when any is unknown or the product does not fit in an
 * int64_t. */
int64_t rill_shape_num_elements(const rill_shape *s);
bool rill_shape_equal(const rill_shape *a, const rill_shape *b);
/* Writes "[2,3]", "[?,3]", "[]" or "<unknown>" into buf (always NUL-terminated). */
const char *rill_shape_str(const rill_shape *s, char *buf, size_t n);

/* Bytes per element; 0 for RILL_STRING and invalid dtypes (strings are not flat). */
size_t rill_dtype_size(rill_dtype t);
/* "float", "double", "int32", "int64", "bool", "half", "string", "int8", "int16", "uint8",
 * "uint16", "bfloat16": the names TF prints. */
const char *rill_dtype_name(rill_dtype t);
bool rill_dtype_is_valid(rill_dtype t);
bool rill_dtype_is_float(rill_dtype t); /* float, double, half, bfloat16 */
/* int8, int16, int32, int64, uint8, uint16 */
bool rill_dtype_is_integer(rill_dtype t);

typedef struct rill_tensor rill_tensor;

/* A new tensor with uninitialised contents (string elements are empty). Returns NULL for an
 * invalid dtype, a negative dim, a rank above RILL_MAX_DIMS or more elements than an int64_t
 * counts. Caller frees. */
rill_tensor *rill_tensor_new(rill_dtype t, const int64_t *dims, int rank);
/* Same, with the shape given as a rill_shape (must be fully defined). */
rill_tensor *rill_tensor_new_shape(rill_dtype t, const rill_shape *s);
/* A new tensor filled from data (numel elements copied). Caller frees. */
rill_tensor *rill_tensor_from_data(rill_dtype t, const int64_t *dims, int rank, const void *data);
/* A host tensor over memory the caller owns, without a copy (a numpy array's, an mmap'd file's):
 * rill reads it and never writes it (updates that would be in place copy first; a variable
 * assigned from it gets a copy) and never frees it; release(ctx) runs once, when the last
 * reference goes, on whichever thread drops it (release may be NULL). data must be aligned to
 * the dtype's size and hold numel elements; the caller must not change them while a step that
 * was fed the tensor runs. NULL for RILL_STRING, a bad shape or misaligned data. Caller frees. */
rill_tensor *rill_tensor_new_borrowed(rill_dtype t, const int64_t *dims, int rank, void *data,
                                      void (*release)(void *ctx), void *ctx);
/* True when the caller's reference is the only one to t and its memory, which is rill's: writing
 * into it changes nothing anyone else sees. False for a variable's current value, a constant's
 * value, anything borrowed, or a tensor shared with another holder. */
bool rill_tensor_is_exclusive(const rill_tensor *t);
/* Scalars. Caller frees. */
rill_tensor *rill_tensor_scalar_float(float v);
rill_tensor *rill_tensor_scalar_double(double v);
rill_tensor *rill_tensor_scalar_int32(int32_t v);
rill_tensor *rill_tensor_scalar_int64(int64_t v);
rill_tensor *rill_tensor_scalar_string(const char *s);
/* Adds a holder; returns t. */
rill_tensor *rill_tensor_ref(rill_tensor *t);
/* Drops a holder; the last one frees. NULL is a no-op. */
void rill_tensor_free(rill_tensor *t);

rill_dtype rill_tensor_dtype(const rill_tensor *t);
const rill_shape *rill_tensor_shape(const rill_tensor *t);
int rill_tensor_rank(const rill_tensor *t);
int64_t rill_tensor_dim(const rill_tensor *t, int i);
int64_t rill_tensor_num_elements(const rill_tensor *t);
size_t rill_tensor_nbytes(const rill_tensor *t);
/* Host pointer to the elements (for RILL_STRING: nothing to read directly; use the accessors).
 * Borrowed. */
void *rill_tensor_data(const rill_tensor *t);
/* String elements. set copies len bytes; get returns a borrowed pointer and its length. */
int rill_tensor_set_string(rill_tensor *t, int64_t i, const char *s, size_t len);
const char *rill_tensor_get_string(const rill_tensor *t, int64_t i, size_t *len);
/* Element i converted to double (any numeric dtype). */
double rill_tensor_get_double(const rill_tensor *t, int64_t i);
/* Element i as an int64: exact for the integer dtypes (an int64 past 2^53 stays itself), a
 * float one truncated and saturated at int64's range (NaN: 0). For shapes and indices that came
 * from a tensor. */
int64_t rill_tensor_get_int64(const rill_tensor *t, int64_t i);
/* A deep copy with its own buffer. Caller frees. */
rill_tensor *rill_tensor_copy(const rill_tensor *t);
/* Prints like numpy: "[2. 4. 6.]". Writes at most n bytes, NUL-terminated; returns buf. */
const char *rill_tensor_str(const rill_tensor *t, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
