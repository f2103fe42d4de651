/* graph_codec.h - graphs to bytes and back: a partition registered with the task that runs it,
 * or a client's whole graph registered with the master of the task it names (client.c). The
 * decoder treats every byte as hostile: bounded counts and lengths, checked indices, attribute
 * names the op definitions use or, bounded in number, names shaped like one (of the kind the
 * ops read them as, rill__attr_kind_ok), and a graph that fails to rebuild (unknown op, bad
 * shapes) is an error, never a crash. Format (little-endian):
 *   "RGPH" u32 version=2, u32 nnodes, then per node:
 *     str name, str op, str device, u32 ninputs {u32 node, u32 output}*, u32 ncontrol {u32 node}*,
 *     u32 nattrs {str name, u8 kind, value}*, i64 seed, i64 seed2,
 *     u32 colocate_with (1 + node, 0: none), u32 initializer (1 + node, 0: none)
 *   str = u32 length + bytes; a control input may point at a later node (the executor checks
 *   cycles); a data input must point at an earlier one. */
#ifndef RILL_DISTRIBUTED_GRAPH_CODEC_H
#define RILL_DISTRIBUTED_GRAPH_CODEC_H

#include "../graph/graph_internal.h"

/* Appends the encoding of g to a new buffer (*out, *len; caller frees with rill__free). Each
 * node's device is its assigned device's name, else its requested device. */
bool rill__graph_encode(const rill_graph *g, uint8_t **out, size_t *len, rill_status *s);
/* Rebuilds a graph from bytes. devices (optional) receives a new array of nnodes device-name
 * strings (free each and the array with rill__free). NULL with s set (DATA_LOSS for malformed
 * bytes, or the build error) on failure. */
rill_graph *rill__graph_decode(const uint8_t *buf, size_t len, char ***devices, rill_status *s);

#endif
