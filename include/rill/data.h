/* rill/data.h - datasets: the IDX format of MNIST and Fashion-MNIST (gzipped or plain).
 *
 * An IDX file is a big-endian header (magic 0x00000803 for uint8 images [n,rows,cols],
 * 0x00000801 for uint8 labels [n]) followed by the bytes. Malformed or truncated files are
 * DATA_LOSS naming the file, never a crash.
 */
#ifndef RILL_DATA_H
#define RILL_DATA_H

#include <rill/status.h>
#include <rill/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reads an IDX file (".gz" or plain, detected by content) into a uint8 buffer held in a new
 * tensor: images as float32 [n, rows*cols] scaled to [0,1] (scale != 0) or labels as int32 [n].
 * Returns NULL with s set on failure. Caller frees. */
rill_tensor *rill_idx_read_images(const char *path, rill_status *s);
rill_tensor *rill_idx_read_labels(const char *path, rill_status *s);

/* Where Debian's dataset-fashion-mnist package puts the files. */
#define RILL_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

#ifdef __cplusplus
}
#endif
#endif
