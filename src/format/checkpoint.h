/* checkpoint.h - internal side of TensorFlow's V2 checkpoints (reference §9): writing the bundle
 * (data files and the SSTable index), the `checkpoint` state file, deleting old checkpoints, and
 * the small file helpers these share. The read side is public: rill/checkpoint.h. This is the
 * format layer (TF's file formats): it depends on core only, so the SaveV2/RestoreV2 kernels
 * (kernels/cpu/cpu_io.c), the Saver and the event files (train/) all build on it.
 *
 * Files:
 *   bundle.c            data files, the index table writer, delete, atomic files
 *   bundle_reader.c     rill_checkpoint_reader (index table parser, tensor reads)
 *   checkpoint_state.c  the `checkpoint` text file, latest_checkpoint, checkpoint_exists
 *
 * Every file is written under a temporary name in its directory, synced, renamed into place and
 * the directory synced, so a crash leaves either the old file or the new one, never half of one. */
#ifndef RILL_FORMAT_CHECKPOINT_H
#define RILL_FORMAT_CHECKPOINT_H

#include <rill/checkpoint.h>
#include <rill/status.h>
#include <rill/tensor.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Data files per bundle; no real save comes near this, so a header claiming more is damage. */
#define RILL__BUNDLE_MAX_SHARDS 100000

/* One tensor's record in the index (a BundleEntryProto). */
typedef struct rill__bundle_entry {
    char *name; /* owned */
    rill_dtype dtype;
    rill_shape shape;
    int shard;
    int64_t offset, size;
    uint32_t crc; /* masked crc32c of the stored bytes (BundleEntryProto field 6) */
    /* Elements that are NaN or +-Inf (float, double, half; 0 for other dtypes), counted by
     * rill__bundle_write_data as it writes them. Not part of the index: the saver uses it. */
    int64_t nonfinite;
} rill__bundle_entry;

/* Elements of n values of dtype t at p (host order) that are NaN or +-Inf: an exponent-bits
 * test on the integer image, so no floating-point operation runs (signalling NaNs raise
 * nothing) and the loop vectorises. 0 for dtypes that are not floating point. */
int64_t rill__count_nonfinite(rill_dtype t, const void *p, int64_t n);

/* Writes <prefix>.data-<shard:05d>-of-<nshards:05d> holding vals in order (numeric: raw
 * little-endian bytes; DT_STRING: varint lengths, the masked crc of the lengths, the bytes).
 * entries[i] receives each tensor's metadata (name copied; free with rill__bundle_entries_free,
 * also after a failure), with its count of non-finite elements. names and vals are borrowed.
 * INVALID_ARGUMENT for a non-host tensor, an empty name or bad arguments; file errors name the
 * file. */
bool rill__bundle_write_data(const char *prefix, int shard, int nshards, const char *const *names,
                             rill_tensor *const *vals, int n, rill__bundle_entry *entries,
                             rill_status *s);
/* Writes <prefix>.index, the LevelDB table of §9.3, for entries given in any order (borrowed).
 * Duplicate or empty names are INVALID_ARGUMENT. */
bool rill__bundle_write_index(const char *prefix, int nshards, const rill__bundle_entry *entries,
                              int n, rill_status *s);
/* The same two in a chosen byte order: numbers stored big-endian and the header saying BIG when
 * big_endian. Tests write foreign-endian bundles with these to check that readers swap. */
bool rill__bundle_write_data_order(const char *prefix, int shard, int nshards,
                                   const char *const *names, rill_tensor *const *vals, int n,
                                   rill__bundle_entry *entries, bool big_endian, rill_status *s);
bool rill__bundle_write_index_order(const char *prefix, int nshards,
                                    const rill__bundle_entry *entries, int n, bool big_endian,
                                    rill_status *s);
/* Frees the names, not the array. */
void rill__bundle_entries_free(rill__bundle_entry *e, int n);

/* Writes <dir>/checkpoint (§9.2): model_checkpoint_path, all_model_checkpoint_paths (oldest
 * first), all_model_checkpoint_timestamps (n of them, or none when timestamps is NULL),
 * last_preserved_timestamp (omitted when 0). Relative paths are written relative to dir when
 * dir is relative, as TF does; absolute ones unchanged. */
bool rill__checkpoint_state_write(const char *dir, const char *model_path,
                                  const char *const *all_paths, const double *timestamps, int n,
                                  double last_preserved, rill_status *s);
/* The latest checkpoint's prefix of dir, as rill_latest_checkpoint finds it; NULL when none.
 * Caller frees. */
char *rill__latest_checkpoint(const char *dir);
/* Deletes <prefix>.index, <prefix>.data-?????-of-????? and <prefix>.meta; missing files are
 * fine. */
void rill__checkpoint_delete(const char *prefix);

/* "<prefix>.index" and "<prefix>.data-00003-of-00008"; caller frees. */
char *rill__bundle_index_path(const char *prefix);
char *rill__bundle_data_path(const char *prefix, int shard, int nshards);

/* --- file helpers shared by the writers and readers --- */

/* Reverses the bytes of each width-byte element of p[0, nbytes) (endianness). */
void rill__swap_elements(uint8_t *p, size_t nbytes, size_t width);

/* TF's os.path.join(dir, path): path itself when absolute or dir empty. Caller frees. */
char *rill__path_join(const char *dir, const char *path);
/* The directory part of path ("." when none). Caller frees. */
char *rill__path_dirname(const char *path);
bool rill__file_exists(const char *path); /* anything but a directory */

/* A file written under a temporary name and renamed into place on commit. */
typedef struct rill__afile {
    int fd;
    char *path, *tmp;
    uint8_t *buf; /* writes are gathered here; big ones go straight to the file */
    size_t nbuf;
} rill__afile;
/* label names what is being saved in the message when the parent directory is missing
 * ("Parent directory of <label> doesn't exist, can't save."). */
bool rill__afile_open(rill__afile *f, const char *path, const char *label, rill_status *s);
bool rill__afile_write(rill__afile *f, const void *p, size_t n, rill_status *s);
/* Flushes, fsyncs, closes, renames onto path and fsyncs the directory. Frees f's resources
 * whether or not it succeeds. */
bool rill__afile_commit(rill__afile *f, rill_status *s);
/* Closes and removes the temporary file; a no-op after commit. */
void rill__afile_abort(rill__afile *f);

#endif
