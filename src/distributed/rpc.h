/* rpc.h - the worker service's messages (what a session's master asks a task's server) and the
 * helpers that write and read their meta. Every reader treats the bytes as hostile.
 *
 * Requests (meta starts with u32 op):
 *   GET_DEVICES                       -> u32 n, n x {str name, str type, str kernel_key}
 *   REGISTER  (payload: graph codec)  -> u64 handle
 *   RUN       u64 handle, u64 step_owner, u64 step_id, tensors(feeds: str name each),
 *             u32 nfetch {str}, u32 ntarget {str}
 *                                     -> tensors(fetches)
 *   DEREGISTER u64 handle             -> (empty)
 *   CANCEL    u64 owner               -> (empty): cancels the running steps of owner's graphs
 *   TENSOR    u64 step_owner, u64 step_id, str tensor_name, tensor_desc (payload: its bytes)
 *                                     -> (empty): into the task's rendezvous (rendezvous.c)
 *   ABORT     u64 step_owner, u64 step_id -> (empty): the step failed somewhere: drop its
 *             tensors, fail its waiting receives
 *   STATUS    u64 step_owner, u64 step_id (0: any of owner's)
 *                                     -> u32 n, n x {str what, u32 ntasks, u32 named,
 *                                        named x str task}: what the blocking ops of that step
 *             wait for on the task (rill__resource_mgr_waits) and the tasks they wait on; asked
 *             by a master whose step has waited a while (the stall reports)
 *   FINISHED  str job, u32 task_index -> (empty): that training task ("worker" or "chief" job)
 *             is done with the ps tasks (rill_server_report_finished); a ps's join returns once
 *             every training task of its cluster has said so and been answered
   REGISTER_CLIENT u64 owner, u32 flags (1: allow_soft_placement, 2: log_device_placement),
 *             u64 operation_timeout_ms, u32 inter_op_threads, u32 intra_op_threads,
 *             u32 nfilters {str device_filter} (payload: graph codec, the client's whole graph)
 *                                     -> u64 handle: a session on the server's own target
 *             (its master places the graph over the cluster); RUN then runs it with feeds,
 *             step_owner 0 and step_id the run's timeout in ms (0: none), and fetches come
 *             back as for a partition (client.c). A client's connection, which names no task
 *             of the cluster, may send only REGISTER_CLIENT, RUN, DEREGISTER and CANCEL
 * REGISTER's meta carries u64 owner after the op: the id of the master that registers.
 * "tensors" = u32 n, n x {str name (requests only), tensor_desc}; the bytes of the n tensors
 * follow each other in the payload. */
#ifndef RILL_DISTRIBUTED_RPC_H
#define RILL_DISTRIBUTED_RPC_H

#include "../core/core.h"
#include "../core/pb.h"

#include <sys/uio.h>

enum {
    RILL__RPC_GET_DEVICES = 1,
    RILL__RPC_REGISTER = 2,
    RILL__RPC_RUN = 3,
    RILL__RPC_DEREGISTER = 4,
    RILL__RPC_CANCEL = 5,
    RILL__RPC_TENSOR = 6,
    RILL__RPC_ABORT = 7,
    RILL__RPC_STATUS = 8,
    RILL__RPC_FINISHED = 9,
    RILL__RPC_REGISTER_CLIENT = 10
};

typedef rill__pbw rill__mbuf; /* the core's growable byte buffer */
void rill__mbuf_put(rill__mbuf *m, const void *d, size_t n);
void rill__mbuf_u32(rill__mbuf *m, uint32_t v);
void rill__mbuf_u64(rill__mbuf *m, uint64_t v);
void rill__mbuf_str(rill__mbuf *m, const char *s);
/* Tensors in a payload start at multiples of RILL__RPC_ALIGN, so a receiver can use them in
 * place (views of the payload) with every element aligned. */
#define RILL__RPC_ALIGN 64
/* A tensor's descriptor into the meta (host, numeric tensors only). */
bool rill__mbuf_tensor(rill__mbuf *m, const rill_tensor *t, rill_status *s);
/* The payload of n tensors as iovecs (at most cap, padding between them); when more would be
 * needed, the bytes are gathered into blob and one iovec points at it. Returns the count. */
int rill__payload_iovecs(rill_tensor *const *ts, int n, struct iovec *iov, int cap,
                         rill__mbuf *blob);
void rill__mbuf_free(rill__mbuf *m);

typedef struct rill__mread {
    const uint8_t *p;
    size_t n, off;
    bool bad;
} rill__mread;
uint32_t rill__mread_u32(rill__mread *r);
uint64_t rill__mread_u64(rill__mread *r);
/* A new NUL-terminated copy (caller frees), NULL when bad. At most 4 KiB. */
char *rill__mread_str(rill__mread *r);
/* Reads a descriptor and takes its bytes from payload at *off (advanced): a new host tensor
 * viewing the payload in place (no copy) — payload is the adopted block of the message, or NULL
 * (or a block adopted from NULL) when it came without one: then only empty numeric tensors can
 * be read, each a new tensor of its own. */
rill_tensor *rill__mread_tensor(rill__mread *r, rill__buffer *payload, uint64_t payload_len,
                                uint64_t *off, rill_status *s);

#endif
