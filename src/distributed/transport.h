/* transport.h - channels between rill tasks, and the TCP transport behind them.
 *
 * A channel is a small vtable (call, close) so that a shared-memory or RDMA channel can join
 * later without changing its callers. The TCP implementation follows the design brief's shape:
 *
 *  - client: the caller blocks on its own socket (no hand-off to another thread; a hand-off
 *    costs ~12 us here, a raw TCP round trip ~29 us); TCP_NODELAY; the request is sent with one
 *    sendmsg from the caller's iovecs (no copy); the reply payload is received straight into a
 *    buffer the caller names. Every wait has a deadline, and every error names the peer.
 *  - server: one epoll thread; each accepted connection first completes a handshake within a
 *    handshake deadline, or is closed. Requests run inline on the epoll thread; payloads are
 *    received straight into a buffer the handler may keep; responses go out with
 *    writev/sendmsg from the handler's buffers. Idle connections sleep in epoll and cost no CPU;
 *    garbage closes the connection, never the server.
 *
 * Handshake (wire version 2): on accept the server sends CHALLENGE (meta: u32 flags, bit 0 = a
 * secret is required, bit 1 = encryption is; then its 32-byte nonce sn). The client answers
 * HANDSHAKE (meta: u32 version, u32 flags (bit 1: encrypt), its nonce cn, the cluster id (32),
 * the run id (16), u16 length + task name; then, with a secret, proof = HMAC-SHA512-256 under
 * key = BLAKE2b-256(secret) of "rill-client" || sn || all of that). The server checks it, asks
 * `admit` (cluster, task, run) and the per-task cap, and answers HANDSHAKE_OK (meta: u32 flags
 * (bit 1: encrypted), its run id, then with a secret its own proof of "rill-server" || cn ||
 * the whole HANDSHAKE meta || that) or ERROR, and closes. With a secret every later frame is
 * followed by a 16-byte Poly1305 tag (frame_keys in transport.c). Only then are REQUEST, PUSH
 * and HEARTBEAT frames served. A connection that has started a frame must finish it within
 * io_timeout_s (a slow-loris guard); between frames it may idle for idle_timeout_s.
 */
#ifndef RILL_DISTRIBUTED_TRANSPORT_H
#define RILL_DISTRIBUTED_TRANSPORT_H

#include "distributed/wire.h"

#include <rill/status.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Who the client of a connection is, as its handshake says (and, with a secret, proves). */
typedef struct rill__identity {
    uint8_t cluster[32]; /* BLAKE2b-256 of the cluster spec; all zero: none */
    uint8_t run[16];     /* the run (job) id the tasks share; all zero: not known yet */
    char task[128];      /* "/job:worker/task:1"; "": none */
} rill__identity;

typedef struct rill__tcp_request rill__tcp_request;

/* Server: whether the client of a handshake may connect. Fills run with the server's own run id
 * (all zero when it has none); false refuses the client, with why's code and message sent to it
 * and logged (rate-limited). Runs on the server's thread. */
typedef bool (*rill__tcp_admit)(void *arg, const rill__identity *client, uint8_t run[16],
                                rill_status *why);
/* Server: the largest payload req (meta, meta_len and task set; payload not yet read) may carry.
 * A bigger one is read and dropped, never stored, and answered with RESOURCE_EXHAUSTED. */
typedef uint64_t (*rill__tcp_payload_limit)(void *arg, const rill__tcp_request *req);

/* Options for both ends; zeroed fields take the defaults in brackets. */
typedef struct rill__tcp_options {
    const void *secret;         /* shared cluster secret (borrowed), NULL: none [NULL] */
    size_t secret_len;          /* bytes of secret */
    bool encrypt;               /* encrypt every frame after the handshake (needs a secret); a
                                 * connection is encrypted when either end asks [false] */
    rill__identity identity;    /* client: who it is, sent in the handshake [all zero] */
    rill__tcp_admit admit;      /* server: who may connect [NULL: any client] */
    rill__tcp_payload_limit payload_limit; /* server: per request [NULL: max_payload] */
    void *arg;                  /* server: admit's and payload_limit's argument */
    double handshake_timeout_s; /* server: an accepted connection must authenticate within [2] */
    double io_timeout_s;        /* server: a started frame / pending response must finish [60] */
    double idle_timeout_s;      /* server: a connection with no frame for this long, and none in
                                 * flight, is closed [600] (clients drop pooled connections idle
                                 * for RILL__TCP_POOL_IDLE_S first) */
    int max_connections;        /* server: more are refused at once [256] */
    int max_per_task;           /* server: connections one client task may hold [64] */
    int max_handshaking;        /* server: connections still in their handshake; a new one
                                 * past it closes the oldest [64] */
    uint64_t max_payload;       /* largest payload accepted [RILL__WIRE_DEFAULT_MAX_PAYLOAD] */
    uint64_t max_buffered;      /* server: payload bytes of frames being received, over every
                                 * connection; a frame past it waits (its connection is not
                                 * read) until others are served [1 GiB] */
} rill__tcp_options;

/* Clients close pooled connections idle this long rather than use them: the server's idle
 * deadline (idle_timeout_s) is longer, so a pooled connection is never one the server closed. */
#define RILL__TCP_POOL_IDLE_S 300.0

/* ---------------------------------------------------------------- channel interface --- */

/* A reply to one call. Set payload_dst/payload_cap before the call to receive the payload
 * straight into your buffer (used when the payload fits); otherwise the channel allocates it
 * with rill__aligned_alloc and sets payload_owned: the caller then frees it with
 * rill__aligned_free(payload, payload_len). meta is owned by the channel and valid until the
 * next call on it or its close. */
typedef struct rill__reply {
    void *payload_dst;    /* in: optional destination */
    uint64_t payload_cap; /* in: its size */
    int type;             /* out: RILL__MSG_RESPONSE or RILL__MSG_HEARTBEAT_ACK */
    const uint8_t *meta;  /* out */
    uint32_t meta_len;    /* out */
    void *payload;        /* out: payload_dst or an owned buffer; NULL when payload_len is 0 */
    uint64_t payload_len; /* out */
    bool payload_owned;   /* out: caller must rill__aligned_free(payload, payload_len) */
} rill__reply;

typedef struct rill__channel rill__channel;

typedef struct rill__channel_vtable {
    /* See rill__channel_call. */
    bool (*call)(rill__channel *ch, int type, const void *meta, uint32_t meta_len,
                 const struct iovec *payload, int npayload, rill__reply *reply, double deadline_s,
                 rill_status *s);
    /* Closes and frees the channel. */
    void (*close)(rill__channel *ch);
} rill__channel_vtable;

struct rill__channel {
    const rill__channel_vtable *vt;
};

/* Sends one message of `type` (RILL__MSG_REQUEST or RILL__MSG_HEARTBEAT) with meta (borrowed,
 * <= RILL__WIRE_MAX_META) and a payload gathered from npayload iovecs (borrowed, sent without a
 * copy), and waits at most deadline_s seconds (<= 0: no deadline) for the reply. A remote
 * ERROR frame becomes s with the remote code and message. Transport failures: UNAVAILABLE when
 * the peer closed or reset, DEADLINE_EXCEEDED when it did not answer in time, DATA_LOSS when it
 * sent garbage; each names the peer, and each leaves the channel broken (later calls fail with
 * UNAVAILABLE; reconnect). One thread at a time per channel. */
bool rill__channel_call(rill__channel *ch, int type, const void *meta, uint32_t meta_len,
                        const struct iovec *payload, int npayload, rill__reply *reply,
                        double deadline_s, rill_status *s);
/* Sends one PUSH message (meta and payload as for a call) and returns once it is written: the
 * peer serves it and answers nothing, so a failure there is only logged there. For tensors
 * pushed into another task's rendezvous. TCP channels only. */
bool rill__channel_push(rill__channel *ch, const void *meta, uint32_t meta_len,
                        const struct iovec *payload, int npayload, double deadline_s,
                        rill_status *s);
/* A call in two halves, for a caller with other work meanwhile: rill__channel_send writes a
 * REQUEST (as rill__channel_call does) and returns; rill__channel_reply waits for its reply
 * (the same outcomes as rill__channel_call). One call at a time per channel. */
bool rill__channel_send(rill__channel *ch, const void *meta, uint32_t meta_len,
                        const struct iovec *payload, int npayload, double deadline_s,
                        rill_status *s);
bool rill__channel_reply(rill__channel *ch, rill__reply *reply, double deadline_s, rill_status *s);
/* Whether reading ch would not block (bytes came, the peer closed, or the channel broke),
 * waiting at most timeout_ms (0: a look). */
bool rill__channel_readable(rill__channel *ch, int timeout_ms);
/* The socket to poll(2) for ch's reply; -1 when one is already buffered (read it now). */
int rill__channel_fd(const rill__channel *ch);
/* A heartbeat round trip: true when the peer answered within deadline_s. */
bool rill__channel_ping(rill__channel *ch, double deadline_s, rill_status *s);
/* Closes and frees ch; NULL is a no-op. */
void rill__channel_close(rill__channel *ch);

/* ---------------------------------------------------------------- TCP client --- */

/* Connects to "host:port" ("[v6addr]:port" for IPv6 literals), performs the handshake with the
 * options' secret, and returns a channel, or NULL with s set: UNAVAILABLE naming the address when
 * the connection is refused or lost, DEADLINE_EXCEEDED when connect + handshake took longer than
 * deadline_s (<= 0: no deadline), UNAUTHENTICATED when the server refused the secret,
 * FAILED_PRECONDITION on a wire version mismatch. opts may be NULL. */
rill__channel *rill__tcp_connect(const char *address, const rill__tcp_options *opts,
                                 double deadline_s, rill_status *s);
/* The "host:port" a TCP channel talks to (borrowed); "" for other channels. */
const char *rill__channel_peer(const rill__channel *ch);
/* The run id the server named in its handshake (16 bytes, all zero when it has none). */
const uint8_t *rill__channel_peer_run(const rill__channel *ch);

/* ---------------------------------------------------------------- TCP server --- */

/* One request as the handler sees it. meta is borrowed for the call. payload is the server's
 * buffer (rill__aligned_alloc'd, 64-byte aligned); a handler that keeps it sets req->payload to
 * NULL and later frees it with rill__aligned_free(payload, payload_len). */
struct rill__tcp_request {
    uint64_t request_id;
    const uint8_t *meta;
    uint32_t meta_len;
    void *payload;
    uint64_t payload_len;
    const char *peer; /* "host:port" of the client, borrowed */
    const char *task; /* the client task its handshake named ("" if none), borrowed */
};

typedef struct rill__tcp_response rill__tcp_response;

/* The response's meta (copied; <= RILL__WIRE_MAX_META, longer is an INTERNAL error). */
void rill__tcp_response_set_meta(rill__tcp_response *r, const void *meta, uint32_t meta_len);
/* The response's payload, gathered from up to 16 iovecs that stay borrowed until done(done_arg)
 * runs on the server thread, after the bytes were sent or the connection dropped (done may be
 * NULL; it runs exactly once if given, even when this call fails). */
void rill__tcp_response_set_payload(rill__tcp_response *r, const struct iovec *iov, int n,
                                    void (*done)(void *arg), void *done_arg);
/* Answers with an ERROR frame instead (the meta and payload set are dropped). */
void rill__tcp_response_set_error(rill__tcp_response *r, rill_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A request taken off the server's thread: the handler returns at once, the connection reads
 * nothing more meanwhile, and the response goes out when rill__tcp_deferred_finish is called
 * from any thread. If the client hangs up first, on_hangup(arg) runs once on the server thread
 * (so that the work can be cancelled) and the response, when it comes, is dropped. Used for
 * requests that may block (a queue dequeue, an accumulator take). on_release(arg) runs on the
 * server thread once the response was sent or dropped: after it, on_hangup is never called. */
typedef struct rill__tcp_deferred rill__tcp_deferred;
rill__tcp_deferred *rill__tcp_response_defer(rill__tcp_response *r, void (*on_hangup)(void *arg),
                                             void (*on_release)(void *arg), void *arg);
/* The response to fill (set_meta, set_payload, set_error) before finishing. */
rill__tcp_response *rill__tcp_deferred_response(rill__tcp_deferred *d);
/* Hands the response to the server thread, which sends it; d is freed there. Every deferred
 * request must be finished before rill__tcp_server_free. */
void rill__tcp_deferred_finish(rill__tcp_deferred *d);
/* Whether the calling thread is a TCP server's own (it runs the handlers): such a thread must
 * never wait for another task's server, which may be waiting for this one. */
bool rill__tcp_on_server_thread(void);

/* Serves one REQUEST, inline on the server's thread: it must not block for long, since every
 * other connection waits meanwhile (defer what may block). Leaving the response untouched answers an empty RESPONSE. */
typedef void (*rill__tcp_handler)(void *arg, rill__tcp_request *req, rill__tcp_response *resp);

typedef struct rill__tcp_server rill__tcp_server;

/* Binds "host:port" (port 0: any free port, see rill__tcp_server_port) with SO_REUSEADDR, and
 * starts the server thread. Returns NULL with s set when the address is bad or in use
 * ("Could not start server: address 127.0.0.1:2222 is already in use"). opts may be NULL;
 * opts->secret is copied. handler and arg are borrowed for the server's life. */
rill__tcp_server *rill__tcp_server_new(const char *address, const rill__tcp_options *opts,
                                       rill__tcp_handler handler, void *arg, rill_status *s);
/* The bound port. */
int rill__tcp_server_port(const rill__tcp_server *srv);
/* Number of open connections (accepted, not yet closed). */
int rill__tcp_server_connections(rill__tcp_server *srv);
/* Payload bytes now reserved for frames being received (max_buffered counts these). */
uint64_t rill__tcp_server_buffered(rill__tcp_server *srv);
/* Stops the thread, closes every connection and the port, and frees; NULL is a no-op. */
void rill__tcp_server_free(rill__tcp_server *srv);

#endif
