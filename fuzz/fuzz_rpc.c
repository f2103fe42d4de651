/* fuzz_rpc.c - the worker service's messages (distributed/rpc.h): every request a task's server
 * decodes, sent to a real server over loopback, and the replies a master decodes, read with
 * rpc.h's readers as master.c reads them.
 *
 * One server (rill_server_create_local) and one connection serve the whole run; a graph is
 * registered at start (x, y = x + x, s, t = Identity(s), n = NoOp) so that RUN requests reach
 * its feeds and fetches. Input: a selector byte, a u16 meta length, the meta, then the payload.
 * The selector names the request: 0 sends the meta as it is (op included); 1-7 put the op in
 * front (RUN also the registered graph's handle, which the input could never guess, and
 * REGISTER the owner, the payload being the graph codec's bytes); 8 and 9 read the meta and
 * payload as the reply to GET_DEVICES and to RUN. The server must answer every request with a
 * RESPONSE or an ERROR and keep the connection: a request that kills it is a bug. What a
 * request leaves behind is cleared (a registered graph is deregistered, pushed tensors are
 * aborted), so that inputs do not pile up state. */
#include "fuzz.h"

#include "core/core.h"
#include "distributed/graph_codec.h"
#include "distributed/master.h"
#include "distributed/rpc.h"
#include "distributed/transport.h"

#include <rill/rill.h>

#define OWNER 0x5eedu

static rill_server *server;
static rill__channel *channel;
static uint64_t graph_handle;

/* Sends one request; true for a RESPONSE (its meta copied into *reply when given), false for
 * an ERROR. */
static bool call(const rill__mbuf *meta, const uint8_t *payload, size_t plen, rill__mbuf *reply)
{
    rill_status *s = rill_status_new();
    struct iovec iov = {(void *)payload, plen};
    rill__reply rep = {0};
    bool ok = rill__channel_call(channel, RILL__MSG_REQUEST, meta->p, (uint32_t)meta->n, &iov,
                                 plen ? 1 : 0, &rep, 30, s);
    if (!ok && rill__channel_fd(channel) < 0) {
        fprintf(stderr, "the server dropped the connection: %s\n", rill_status_message(s));
        FUZZ_ASSERT(!"a request broke the connection");
    }
    if (ok && reply) rill__mbuf_put(reply, rep.meta, rep.meta_len);
    if (rep.payload_owned) rill__aligned_free(rep.payload, rep.payload_len);
    rill_status_free(s);
    return ok;
}

static uint64_t register_graph(const uint8_t *bytes, size_t len)
{
    rill__mbuf q = {0}, rep = {0};
    rill__mbuf_u32(&q, RILL__RPC_REGISTER);
    rill__mbuf_u64(&q, OWNER);
    uint64_t h = 0;
    if (call(&q, bytes, len, &rep) && rep.n == 8) memcpy(&h, rep.p, 8);
    rill__mbuf_free(&q);
    rill__mbuf_free(&rep);
    return h;
}

static void deregister(uint64_t h)
{
    rill__mbuf q = {0};
    rill__mbuf_u32(&q, RILL__RPC_DEREGISTER);
    rill__mbuf_u64(&q, h);
    call(&q, NULL, 0, NULL);
    rill__mbuf_free(&q);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_quiet();
    rill_status *s = rill_status_new();
    server = rill_server_create_local(s);
    FUZZ_ASSERT(server != NULL);
    const char *target = rill_server_target(server); /* "rill://host:port" */
    /* The client is the cluster's one task ("local"), as far as the server can tell: only a
     * task of its cluster gets past the handshake. */
    const char *addr = target + strlen("rill://");
    rill_cluster_spec *spec = rill_cluster_spec_new();
    rill_cluster_spec_add_job(spec, "local", &addr, 1, NULL);
    rill__tcp_options o = {.identity = rill__cluster_identity(spec, "local", 0)};
    memset(o.identity.run, 0, sizeof o.identity.run); /* the server's run, whatever it is */
    rill_cluster_spec_free(spec);
    channel = rill__tcp_connect(addr, &o, 30, s);
    FUZZ_ASSERT(channel != NULL);

    rill_graph *g = rill_graph_new();
    rill_output x = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "x");
    rill_add(g, x, x, "y");
    rill_output str = rill_placeholder(g, RILL_STRING, rill_shape_unknown(), "s");
    rill_identity(g, str, "t");
    rill_no_op(g, "n");
    FUZZ_ASSERT(rill_graph_ok(g));
    uint8_t *bytes;
    size_t len;
    FUZZ_ASSERT(rill__graph_encode(g, &bytes, &len, s));
    graph_handle = register_graph(bytes, len);
    FUZZ_ASSERT(graph_handle != 0);
    rill__free(bytes);
    rill_graph_free(g);
    rill_status_free(s);
    return 0;
}

/* --- the replies, as master.c reads them --- */

static void read_devices_reply(const uint8_t *meta, size_t n)
{
    rill__mread r = {.p = meta, .n = n};
    uint32_t count = rill__mread_u32(&r);
    for (uint32_t i = 0; i < count && i < 64 && !r.bad; i++) {
        char *name = rill__mread_str(&r), *type = rill__mread_str(&r), *key = rill__mread_str(&r);
        FUZZ_ASSERT(r.bad || (name && type && key));
        FUZZ_ASSERT(r.off <= r.n);
        rill__free(name);
        rill__free(type);
        rill__free(key);
    }
}

static void read_run_reply(const uint8_t *meta, size_t n, const uint8_t *payload, size_t plen)
{
    rill__mread r = {.p = meta, .n = n};
    uint32_t count = rill__mread_u32(&r);
    rill__buffer *pay = NULL;
    if (plen) {
        void *block = rill__aligned_alloc(plen);
        memcpy(block, payload, plen);
        pay = rill__buffer_adopt(block, plen);
    }
    rill_status *s = rill_status_new();
    uint64_t off = 0;
    for (uint32_t i = 0; i < count && i < 4096 && !r.bad; i++) {
        rill_tensor *t = rill__mread_tensor(&r, pay, plen, &off, s);
        if (!t) {
            FUZZ_ASSERT(r.bad);
            break;
        }
        FUZZ_ASSERT(off <= plen && r.off <= r.n);
        unsigned sum = 0;
        if (rill_tensor_dtype(t) == RILL_STRING) {
            for (int64_t e = 0; e < rill_tensor_num_elements(t); e++) {
                size_t len;
                const char *b = rill_tensor_get_string(t, e, &len);
                for (size_t k = 0; k < len; k++) sum += (uint8_t)b[k];
            }
        } else {
            const uint8_t *b = rill_tensor_data(t);
            for (size_t k = 0; k < rill_tensor_nbytes(t); k++) sum += b[k];
        }
        (void)sum;
        rill_tensor_free(t);
    }
    rill__buffer_unref(pay);
    rill_status_free(s);
}

/* --- the requests, to the server --- */

static uint64_t get_u64(const uint8_t *p, size_t n, size_t at)
{
    uint64_t v = 0;
    if (n >= at + 8) memcpy(&v, p + at, 8);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in in = {data, size};
    int which = fuzz_u8(&in) % 10;
    size_t mlen, plen;
    const uint8_t *meta = fuzz_bytes(&in, fuzz_u16(&in), &mlen);
    const uint8_t *payload = fuzz_bytes(&in, in.n, &plen);
    if (which >= 8) {
        /* A reply's meta, in a block of exactly its size. */
        uint8_t *copy = malloc(mlen ? mlen : 1);
        if (!copy) abort();
        memcpy(copy, meta, mlen);
        if (which == 8)
            read_devices_reply(copy, mlen);
        else
            read_run_reply(copy, mlen, payload, plen);
        free(copy);
        return 0;
    }
    rill__mbuf q = {0}, rep = {0};
    if (which != 0) rill__mbuf_u32(&q, (uint32_t)which);
    if (which == RILL__RPC_RUN) rill__mbuf_u64(&q, graph_handle);
    if (which == RILL__RPC_REGISTER) rill__mbuf_u64(&q, OWNER + 1);
    rill__mbuf_put(&q, meta, mlen);
    bool ok = call(&q, payload, plen, &rep);
    uint32_t op = q.n >= 4 ? rill__get_u32(q.p) : 0;
    /* Leave nothing behind: a graph registered, tensors pushed for a step. */
    if (ok && (op == RILL__RPC_REGISTER || op == RILL__RPC_REGISTER_CLIENT) && rep.n == 8)
        deregister(get_u64(rep.p, rep.n, 0));
    if (op == RILL__RPC_TENSOR) {
        rill__mbuf a = {0};
        rill__mbuf_u32(&a, RILL__RPC_ABORT);
        rill__mbuf_u64(&a, get_u64(q.p, q.n, 4));
        rill__mbuf_u64(&a, get_u64(q.p, q.n, 12));
        call(&a, NULL, 0, NULL);
        rill__mbuf_free(&a);
    }
    rill__mbuf_free(&q);
    rill__mbuf_free(&rep);
    return 0;
}
