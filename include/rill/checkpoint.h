/* rill/checkpoint.h - reading TensorFlow V2 checkpoints and the `checkpoint` state file.
 *
 * The read side of tf.train.load_checkpoint / NewCheckpointReader, get_checkpoint_state,
 * latest_checkpoint and checkpoint_exists. A checkpoint is a prefix ("logs/model.ckpt-100")
 * naming "<prefix>.index" (a LevelDB table of tensor names, dtypes, shapes and where each tensor
 * lies) and "<prefix>.data-NNNNN-of-NNNNN" (the bytes). Files written by TensorFlow and by rill
 * read alike. Files are untrusted: damage is reported as DATA_LOSS naming the file, never a
 * crash.
 */
#ifndef RILL_CHECKPOINT_H
#define RILL_CHECKPOINT_H

#include <rill/status.h>
#include <rill/tensor.h>

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rill_checkpoint_reader rill_checkpoint_reader;

/* Opens a checkpoint: a prefix, or a directory (its latest checkpoint, from its `checkpoint`
 * file). The index is read and checked at once and every data file opened. NOT_FOUND when
 * nothing is there; DATA_LOSS naming the file for a damaged index or a missing data file;
 * UNIMPLEMENTED for a V1 checkpoint. Caller frees with rill_checkpoint_reader_free. */
rill_checkpoint_reader *rill_checkpoint_reader_new(const char *prefix_or_dir, rill_status *s);
/* Closes the files and frees; NULL is a no-op. */
void rill_checkpoint_reader_free(rill_checkpoint_reader *r);
/* The checkpoint prefix that was opened (borrowed). */
const char *rill_checkpoint_reader_prefix(const rill_checkpoint_reader *r);
/* The tensors, sorted by name (bytewise). Partitioned variables' slice entries are not listed. */
int rill_checkpoint_reader_num_tensors(const rill_checkpoint_reader *r);
/* Name (borrowed), dtype (TF's DataType number, possibly one rill lacks) and shape of tensor i;
 * NULL, RILL_DT_INVALID and unknown rank for i out of range. */
const char *rill_checkpoint_reader_name(const rill_checkpoint_reader *r, int i);
rill_dtype rill_checkpoint_reader_dtype(const rill_checkpoint_reader *r, int i);
rill_shape rill_checkpoint_reader_shape(const rill_checkpoint_reader *r, int i);
/* The index of name, or -1. */
int rill_checkpoint_reader_find(const rill_checkpoint_reader *r, const char *name);
/* A new host tensor holding the stored value (read straight into its buffer). NOT_FOUND "Key
 * <name> not found in checkpoint"; DATA_LOSS naming the data file on a checksum mismatch, short
 * read or malformed string data; UNIMPLEMENTED for dtypes rill lacks and partitioned variables.
 * Safe to call from several threads at once. Caller frees. */
rill_tensor *rill_checkpoint_reader_get_tensor(rill_checkpoint_reader *r, const char *name,
                                               rill_status *s);

/* The `checkpoint` file of a directory (CheckpointState). */
typedef struct rill_checkpoint_state {
    char *model_checkpoint_path; /* relative paths are joined onto the directory, as TF does */
    char **all_model_checkpoint_paths; /* oldest first */
    int num_all_model_checkpoint_paths;
    double *all_model_checkpoint_timestamps;
    int num_timestamps;
    double last_preserved_timestamp;
} rill_checkpoint_state;

/* Reads <dir>/checkpoint. NULL with s OK when it is missing, or when it cannot be read or parsed
 * (then a warning "<file>: Checkpoint ignored" is logged); INVALID_ARGUMENT "Invalid checkpoint
 * state loaded from <dir>" when model_checkpoint_path is empty. Caller frees. */
rill_checkpoint_state *rill_get_checkpoint_state(const char *dir, rill_status *s);
/* NULL is a no-op. */
void rill_checkpoint_state_free(rill_checkpoint_state *st);
/* Writes the latest checkpoint's prefix of dir into buf (n bytes) and returns true when its
 * "<prefix>.index" (or V1 "<prefix>") exists; false otherwise, logging "Couldn't match files for
 * checkpoint <prefix>" when the state names a checkpoint that is not there. */
bool rill_latest_checkpoint(const char *dir, char *buf, size_t n);
/* True when "<prefix>.index" or "<prefix>" exists. */
bool rill_checkpoint_exists(const char *prefix);

#ifdef __cplusplus
}
#endif
#endif
