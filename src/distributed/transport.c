/* transport.c - the channel interface and rill's TCP transport (design in transport.h).
 *
 * Client: one blocking socket per channel, owned by whichever thread calls. Deadlines ride on
 * SO_RCVTIMEO/SO_SNDTIMEO, re-armed only when the time left drifts from what is armed, so a
 * steady stream of calls costs one sendmsg and (for small replies) one recv each: the same
 * syscalls as a raw blocking ping-pong. Replies are read through a 16 KiB buffer (header, meta
 * and a small payload in one recv); big payloads bypass it and land in their destination.
 *
 * Server: one thread, one epoll set, level-triggered. Each connection is a small state machine:
 * HANDSHAKE (only a HANDSHAKE frame of bounded size is accepted, before the handshake deadline)
 * then READY (REQUEST, PUSH and HEARTBEAT frames). Reading goes header -> meta -> (reserve) ->
 * payload -> (tag); a frame's sizes are checked before anything is allocated, and its payload's
 * memory is taken only once the meta says what the request is (payload_limit, max_buffered). While a response is being written the
 * connection stops reading (back-pressure) and waits for EPOLLOUT. Deadlines are kept per
 * connection and swept only when the earliest one is due, so idle connections cost nothing.
 */
#include "distributed/transport.h"

#include "core/core.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define NONCE_BYTES        32
#define TAG_BYTES          crypto_onetimeauth_BYTES /* a frame's MAC (Poly1305) */
#define RBUF_SIZE          16384
#define MAX_RESP_IOV       16
#define HANDSHAKE_MAX_META 512
#define BIG_PAYLOAD        (64u << 10) /* payloads from here up count against max_buffered */
#define TRIM_IDLE_S        10.0        /* cached blocks unused this long are given back */
#define STREAM_MAC         (256u << 10) /* authenticated payloads from here up: MAC'd in pieces */
#define MAC_PIECE          (1u << 20)   /* as they are sent and received */

/* Handshake flags. CHALLENGE: the server requires a secret / encryption; HANDSHAKE: the client
 * asks for encryption; HANDSHAKE_OK: the connection is encrypted. */
#define HS_SECRET  1u
#define HS_ENCRYPT 2u

static const rill__tcp_options default_options = {
    .handshake_timeout_s = 2.0,
    .io_timeout_s = 60.0,
    .idle_timeout_s = 600.0,
    .max_connections = 256,
    .max_per_task = 64,
    .max_handshaking = 64,
    .max_payload = RILL__WIRE_DEFAULT_MAX_PAYLOAD,
    .max_buffered = UINT64_C(1) << 30,
};

static rill__tcp_options resolve_options(const rill__tcp_options *o)
{
    rill__tcp_options r = default_options;
    if (!o) return r;
    r.secret = o->secret;
    r.secret_len = o->secret ? o->secret_len : 0;
    r.encrypt = o->encrypt;
    r.identity = o->identity;
    r.admit = o->admit;
    r.payload_limit = o->payload_limit;
    r.arg = o->arg;
    if (o->handshake_timeout_s > 0) r.handshake_timeout_s = o->handshake_timeout_s;
    if (o->io_timeout_s > 0) r.io_timeout_s = o->io_timeout_s;
    if (o->idle_timeout_s > 0) r.idle_timeout_s = o->idle_timeout_s;
    if (o->max_connections > 0) r.max_connections = o->max_connections;
    if (o->max_per_task > 0) r.max_per_task = o->max_per_task;
    if (o->max_handshaking > 0) r.max_handshaking = o->max_handshaking;
    if (o->max_payload > 0) r.max_payload = o->max_payload;
    if (o->max_buffered > 0) r.max_buffered = o->max_buffered;
    return r;
}

static bool sodium_ready(rill_status *s)
{
    if (sodium_init() < 0) {
        rill_status_set(s, RILL_INTERNAL, "libsodium failed to initialise");
        return false;
    }
    return true;
}

/* The HMAC key is a hash of the secret, so secrets of any length work. */
static void derive_key(const void *secret, size_t len, uint8_t key[crypto_auth_KEYBYTES])
{
    crypto_generichash(key, crypto_auth_KEYBYTES, secret, len, NULL, 0);
}

/* A handshake proof: HMAC-SHA512-256 under key of label || a || b || c. */
static void proof(const uint8_t key[crypto_auth_KEYBYTES], const char *label, const uint8_t *a,
                  size_t alen, const uint8_t *b, size_t blen, const uint8_t *c, size_t clen,
                  uint8_t tag[crypto_auth_BYTES])
{
    crypto_auth_hmacsha512256_state st;
    crypto_auth_hmacsha512256_init(&st, key, crypto_auth_KEYBYTES);
    crypto_auth_hmacsha512256_update(&st, (const uint8_t *)label, strlen(label) + 1);
    crypto_auth_hmacsha512256_update(&st, a, alen);
    crypto_auth_hmacsha512256_update(&st, b, blen);
    crypto_auth_hmacsha512256_update(&st, c, clen);
    crypto_auth_hmacsha512256_final(&st, tag);
    sodium_memzero(&st, sizeof st);
}

/* After an authenticated handshake each direction of a connection has its own key, derived
 * from the secret and both ends' nonces, and a frame counter. A frame's MAC is Poly1305 under a
 * one-time key that ChaCha20 draws from the direction's key and the frame's number (the
 * construction of RFC 8439's ChaCha20-Poly1305), over the header, meta and payload as sent;
 * with encryption, meta and payload are first ChaCha20-encrypted under the same key and number
 * (encrypt-then-MAC). The numbers make a replayed, dropped or reordered frame fail its MAC. The
 * MAC is computed as the bytes pass (a payload is never held to be checked), and the frame is
 * acted on only once its MAC is checked. */
typedef struct frame_keys {
    bool on;      /* frames carry MACs */
    bool encrypt; /* and are encrypted */
    uint8_t ksend[32], krecv[32];
    uint64_t nsend, nrecv;
    crypto_onetimeauth_state mac; /* of the frame being received */
} frame_keys;

static void link_keys(frame_keys *l, const uint8_t key[crypto_auth_KEYBYTES], const uint8_t sn[NONCE_BYTES],
                      const uint8_t cn[NONCE_BYTES], bool client, bool encrypt)
{
    uint8_t both[2 * NONCE_BYTES];
    memcpy(both, sn, NONCE_BYTES);
    memcpy(both + NONCE_BYTES, cn, NONCE_BYTES);
    uint8_t c2s[32], s2c[32];
    crypto_generichash_state st;
    crypto_generichash_init(&st, key, crypto_auth_KEYBYTES, 32);
    crypto_generichash_update(&st, (const uint8_t *)"rill c2s", 8);
    crypto_generichash_update(&st, both, sizeof both);
    crypto_generichash_final(&st, c2s, 32);
    crypto_generichash_init(&st, key, crypto_auth_KEYBYTES, 32);
    crypto_generichash_update(&st, (const uint8_t *)"rill s2c", 8);
    crypto_generichash_update(&st, both, sizeof both);
    crypto_generichash_final(&st, s2c, 32);
    memcpy(l->ksend, client ? c2s : s2c, 32);
    memcpy(l->krecv, client ? s2c : c2s, 32);
    sodium_memzero(c2s, 32);
    sodium_memzero(s2c, 32);
    l->on = true;
    l->encrypt = encrypt;
    l->nsend = l->nrecv = 0;
}

static void frame_nonce(uint64_t n, uint32_t part, uint8_t out[crypto_stream_chacha20_ietf_NONCEBYTES])
{
    rill__put_u64(out, n);
    rill__put_u32(out + 8, part);
}

/* Part 0 keys the MAC; parts 1 and 2 encrypt the meta and the payload. */
static void mac_begin(crypto_onetimeauth_state *st, const uint8_t key[32], uint64_t n)
{
    uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES], otk[crypto_onetimeauth_KEYBYTES];
    frame_nonce(n, 0, nonce);
    crypto_stream_chacha20_ietf(otk, sizeof otk, nonce, key);
    crypto_onetimeauth_init(st, otk);
    sodium_memzero(otk, sizeof otk);
}

static void crypt_part(uint8_t *dst, const uint8_t *src, size_t len, const uint8_t key[32],
                       uint64_t n, uint32_t part)
{
    uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES];
    frame_nonce(n, part, nonce);
    crypto_stream_chacha20_ietf_xor_ic(dst, src, len, nonce, 0, key);
}

/* The sending half of a frame with MAC (and encryption): encrypts meta into meta_out (may be
 * meta) and the payload pieces into one buffer *bounce (rill__aligned_alloc'd; NULL when not
 * encrypting or empty), and writes the tag. */
static void seal_frame(frame_keys *l, const uint8_t header[RILL__WIRE_HEADER_SIZE], const void *meta,
                       uint8_t *meta_out, uint32_t meta_len, const struct iovec *payload,
                       int npayload, uint64_t payload_len, uint8_t **bounce,
                       uint8_t tag[TAG_BYTES])
{
    crypto_onetimeauth_state st;
    mac_begin(&st, l->ksend, l->nsend);
    crypto_onetimeauth_update(&st, header, RILL__WIRE_HEADER_SIZE);
    *bounce = NULL;
    if (l->encrypt) {
        if (meta_len) crypt_part(meta_out, meta, meta_len, l->ksend, l->nsend, 1);
        crypto_onetimeauth_update(&st, meta_out, meta_len);
        if (payload_len) {
            uint8_t *b = rill__aligned_alloc(payload_len);
            RILL_CHECK_ALLOC(b);
            size_t off = 0;
            for (int i = 0; i < npayload; i++) {
                memcpy(b + off, payload[i].iov_base, payload[i].iov_len);
                off += payload[i].iov_len;
            }
            crypt_part(b, b, payload_len, l->ksend, l->nsend, 2);
            crypto_onetimeauth_update(&st, b, payload_len);
            *bounce = b;
        }
    } else {
        crypto_onetimeauth_update(&st, meta, meta_len);
        for (int i = 0; i < npayload; i++)
            crypto_onetimeauth_update(&st, payload[i].iov_base, payload[i].iov_len);
    }
    crypto_onetimeauth_final(&st, tag);
    l->nsend++;
}

/* The receiving half: mac_begin(&l->mac, l->krecv, l->nrecv) and updates as bytes came, then
 * this checks the tag and decrypts meta and payload in place. */
static bool open_frame(frame_keys *l, const uint8_t tag[TAG_BYTES], uint8_t *meta, uint32_t meta_len,
                       uint8_t *payload, uint64_t payload_len)
{
    uint8_t want[TAG_BYTES];
    crypto_onetimeauth_final(&l->mac, want);
    bool ok = sodium_memcmp(want, tag, TAG_BYTES) == 0;
    if (ok && l->encrypt) {
        if (meta_len) crypt_part(meta, meta, meta_len, l->krecv, l->nrecv, 1);
        if (payload_len) crypt_part(payload, payload, payload_len, l->krecv, l->nrecv, 2);
    }
    l->nrecv++;
    return ok;
}

static void link_wipe(frame_keys *l)
{
    sodium_memzero(l, sizeof *l);
}

/* Splits "host:port" or "[v6]:port" into its parts. */
static bool split_address(const char *address, char *host, size_t hcap, char *port, size_t pcap,
                          rill_status *s)
{
    const char *colon = NULL, *h = address, *hend;
    if (!address) address = "";
    if (address[0] == '[') {
        const char *close = strchr(address, ']');
        if (close && close[1] == ':') {
            h = address + 1;
            hend = close;
            colon = close + 1;
        } else {
            hend = NULL;
        }
    } else {
        colon = strrchr(address, ':');
        hend = colon;
    }
    if (!colon || !hend || hend == h || (size_t)(hend - h) >= hcap || !colon[1] ||
        strlen(colon + 1) >= pcap || strspn(colon + 1, "0123456789") != strlen(colon + 1)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "bad address '%s': expected host:port, e.g. 127.0.0.1:2222", address);
        return false;
    }
    memcpy(host, h, (size_t)(hend - h));
    host[hend - h] = 0;
    strcpy(port, colon + 1);
    return true;
}

static void format_peer(const struct sockaddr *sa, socklen_t len, char *out, size_t cap)
{
    char h[NI_MAXHOST], p[NI_MAXSERV];
    if (getnameinfo(sa, len, h, sizeof h, p, sizeof p, NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(out, cap, "?");
        return;
    }
    snprintf(out, cap, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", h, p);
}

/* ============================================================== channel interface === */

bool rill__channel_call(rill__channel *ch, int type, const void *meta, uint32_t meta_len,
                        const struct iovec *payload, int npayload, rill__reply *reply,
                        double deadline_s, rill_status *s)
{
    return ch->vt->call(ch, type, meta, meta_len, payload, npayload, reply, deadline_s, s);
}

bool rill__channel_ping(rill__channel *ch, double deadline_s, rill_status *s)
{
    rill__reply r = {0};
    bool ok = rill__channel_call(ch, RILL__MSG_HEARTBEAT, NULL, 0, NULL, 0, &r, deadline_s, s);
    if (r.payload_owned) rill__aligned_free(r.payload, r.payload_len);
    return ok;
}

void rill__channel_close(rill__channel *ch)
{
    if (ch) ch->vt->close(ch);
}

/* ================================================================= TCP client === */

typedef struct tcp_channel {
    rill__channel base;
    int fd;
    bool broken;
    char peer[256];
    uint64_t next_id;
    int pending_type;    /* the request sent and not yet answered (rill__channel_send); 0: none */
    uint64_t max_payload;
    double armed_s; /* SO_RCVTIMEO/SO_SNDTIMEO now set; 0: none */
    frame_keys lk;        /* MACs (and encryption) after an authenticated handshake */
    uint8_t peer_run[16];
    uint8_t *meta;
    uint32_t meta_cap;
    size_t rpos, rlen;
    uint8_t rbuf[RBUF_SIZE];
} tcp_channel;

const char *rill__channel_peer(const rill__channel *ch);

static void deadline_error(tcp_channel *c, double deadline_s, rill_status *s)
{
    rill_status_set(s, RILL_DEADLINE_EXCEEDED, "peer %s did not answer within %g s", c->peer,
                    deadline_s);
}

static bool set_timeouts(int fd, double secs)
{
    struct timeval tv = {0, 0};
    if (secs > 0) {
        tv.tv_sec = (time_t)secs;
        tv.tv_usec = (suseconds_t)((secs - (double)tv.tv_sec) * 1e6);
        if (tv.tv_sec == 0 && tv.tv_usec == 0) tv.tv_usec = 1;
    }
    return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 &&
           setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0;
}

/* Makes the socket's timeouts end no later than t_end (within 2% of the deadline, 50 ms at
 * most), touching them only when they drift; false with DEADLINE_EXCEEDED once t_end passed. */
static bool arm(tcp_channel *c, double t_end, double deadline_s, rill_status *s)
{
    if (deadline_s <= 0) {
        if (c->armed_s != 0 && set_timeouts(c->fd, 0)) c->armed_s = 0;
        return true;
    }
    double left = t_end - rill__now_seconds();
    if (left <= 0) {
        deadline_error(c, deadline_s, s);
        return false;
    }
    double tol = fmin(0.02 * deadline_s, 0.05);
    if (c->armed_s == 0 || c->armed_s > left + tol || c->armed_s < 0.5 * left) {
        if (set_timeouts(c->fd, left)) c->armed_s = left;
    }
    return true;
}

static void io_error(tcp_channel *c, int err, bool sending, rill_status *s)
{
    if (err == 0)
        rill_status_set(s, RILL_UNAVAILABLE, "peer %s closed the connection", c->peer);
    else if (err == ECONNRESET || err == EPIPE)
        rill_status_set(s, RILL_UNAVAILABLE,
                        "connection to peer %s was reset (the peer crashed or closed it)", c->peer);
    else
        rill_status_set(s, RILL_UNAVAILABLE, "%s peer %s failed: %s",
                        sending ? "sending to" : "receiving from", c->peer, strerror(err));
}

/* Reads exactly n bytes into dst, through the buffer for small reads. */
static bool cl_read(tcp_channel *c, void *dst, size_t n, double t_end, double deadline_s,
                    rill_status *s)
{
    uint8_t *d = dst;
    while (n > 0) {
        if (c->rpos < c->rlen) {
            size_t k = c->rlen - c->rpos < n ? c->rlen - c->rpos : n;
            memcpy(d, c->rbuf + c->rpos, k);
            c->rpos += k, d += k, n -= k;
            continue;
        }
        if (!arm(c, t_end, deadline_s, s)) return false;
        bool direct = n >= RBUF_SIZE;
        ssize_t k = direct ? recv(c->fd, d, n, 0) : recv(c->fd, c->rbuf, RBUF_SIZE, 0);
        if (k > 0) {
            if (direct) {
                d += k, n -= (size_t)k;
            } else {
                c->rpos = 0, c->rlen = (size_t)k;
            }
            continue;
        }
        if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        io_error(c, k == 0 ? 0 : errno, false, s);
        return false;
    }
    return true;
}

static bool cl_write(tcp_channel *c, struct iovec *iov, int n, double t_end, double deadline_s,
                     rill_status *s)
{
    int i = 0;
    while (i < n) {
        if (iov[i].iov_len == 0) {
            i++;
            continue;
        }
        if (!arm(c, t_end, deadline_s, s)) return false;
        struct msghdr mh = {.msg_iov = iov + i, .msg_iovlen = (size_t)(n - i)};
        ssize_t k = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            io_error(c, errno, true, s);
            return false;
        }
        size_t left = (size_t)k;
        while (i < n && left >= iov[i].iov_len) left -= iov[i++].iov_len;
        if (left) {
            iov[i].iov_base = (uint8_t *)iov[i].iov_base + left;
            iov[i].iov_len -= left;
        }
    }
    return true;
}

/* Reads one frame header + meta; the payload is left to the caller. */
static bool cl_read_head(tcp_channel *c, rill__frame_header *h, double t_end, double deadline_s,
                         rill_status *s)
{
    uint8_t raw[RILL__WIRE_HEADER_SIZE];
    if (!cl_read(c, raw, sizeof raw, t_end, deadline_s, s)) return false;
    rill_status *e = rill_status_new();
    bool ok = rill__frame_header_decode(raw, c->max_payload, h, e);
    if (!ok)
        rill_status_set(s,
                        rill_status_code(e) == RILL_FAILED_PRECONDITION ? RILL_FAILED_PRECONDITION
                                                                        : RILL_DATA_LOSS,
                        "peer %s sent a bad frame: %s", c->peer, rill_status_message(e));
    rill_status_free(e);
    if (!ok) return false;
    if (h->meta_len > c->meta_cap) {
        uint8_t *m = rill__realloc(c->meta, h->meta_len);
        RILL_CHECK_ALLOC(m);
        c->meta = m;
        c->meta_cap = h->meta_len;
    }
    if (!cl_read(c, c->meta, h->meta_len, t_end, deadline_s, s)) return false;
    if (c->lk.on) {
        mac_begin(&c->lk.mac, c->lk.krecv, c->lk.nrecv);
        crypto_onetimeauth_update(&c->lk.mac, raw, sizeof raw);
        crypto_onetimeauth_update(&c->lk.mac, c->meta, h->meta_len);
    }
    return true;
}

/* Reads a frame's payload into dst, MAC'd piece by piece as it lands on an authenticated
 * connection (while the peer sends the next). */
static bool cl_read_payload(tcp_channel *c, uint8_t *dst, uint64_t n, double t_end,
                            double deadline_s, rill_status *s)
{
    if (!c->lk.on) return cl_read(c, dst, n, t_end, deadline_s, s);
    for (uint64_t off = 0; off < n; off += MAC_PIECE) {
        size_t k = n - off < MAC_PIECE ? (size_t)(n - off) : MAC_PIECE;
        if (!cl_read(c, dst + off, k, t_end, deadline_s, s)) return false;
        crypto_onetimeauth_update(&c->lk.mac, dst + off, k);
    }
    return true;
}

/* Ends a frame cl_read_head began, whose payload (if any) cl_read_payload read into payload:
 * reads and checks its MAC and decrypts it, on an authenticated connection. */
static bool cl_read_tail(tcp_channel *c, const rill__frame_header *h, void *payload,
                         double t_end, double deadline_s, rill_status *s)
{
    if (!c->lk.on) return true;
    uint8_t tag[TAG_BYTES];
    if (!cl_read(c, tag, sizeof tag, t_end, deadline_s, s)) return false;
    if (!open_frame(&c->lk, tag, c->meta, h->meta_len, payload, h->payload_len)) {
        rill_status_set(s, RILL_DATA_LOSS,
                        "a frame from peer %s failed its MAC check: the connection was tampered "
                        "with, or the peer is not the task it proved to be",
                        c->peer);
        return false;
    }
    return true;
}

static void remote_error(tcp_channel *c, const rill__frame_header *h, bool in_handshake,
                         rill_status *s)
{
    rill_code code;
    const char *msg;
    size_t len;
    if (!rill__error_meta_decode(c->meta, h->meta_len, &code, &msg, &len)) {
        rill_status_set(s, RILL_DATA_LOSS, "peer %s sent a malformed error frame", c->peer);
        return;
    }
    if (len > 65536) len = 65536;
    if (in_handshake)
        rill_status_set(s, code, "peer %s refused the connection: %.*s", c->peer, (int)len, msg);
    else
        rill_status_set(s, code, "%.*s", (int)len, msg);
}

/* An authenticated frame with a big payload: header and meta, then the payload in pieces, each
 * MAC'd once it is sent (the MAC overlaps the peer's reading), then the tag. */
static bool write_streamed(tcp_channel *c, const uint8_t raw[RILL__WIRE_HEADER_SIZE],
                           const void *meta, uint32_t meta_len, const struct iovec *payload,
                           int npayload, double t_end, double deadline_s, rill_status *s)
{
    crypto_onetimeauth_state st;
    mac_begin(&st, c->lk.ksend, c->lk.nsend++);
    crypto_onetimeauth_update(&st, raw, RILL__WIRE_HEADER_SIZE);
    crypto_onetimeauth_update(&st, meta, meta_len);
    struct iovec head[2] = {{(void *)raw, RILL__WIRE_HEADER_SIZE}, {(void *)meta, meta_len}};
    if (!cl_write(c, head, 2, t_end, deadline_s, s)) return false;
    for (int i = 0; i < npayload; i++) {
        const uint8_t *p = payload[i].iov_base;
        for (size_t off = 0; off < payload[i].iov_len; off += MAC_PIECE) {
            size_t k = payload[i].iov_len - off < MAC_PIECE ? payload[i].iov_len - off : MAC_PIECE;
            struct iovec piece = {(void *)(p + off), k};
            if (!cl_write(c, &piece, 1, t_end, deadline_s, s)) return false;
            crypto_onetimeauth_update(&st, p + off, k);
        }
    }
    uint8_t tag[TAG_BYTES];
    crypto_onetimeauth_final(&st, tag);
    struct iovec t = {tag, sizeof tag};
    return cl_write(c, &t, 1, t_end, deadline_s, s);
}

/* Writes one frame of type with meta and the payload's pieces within deadline_s; a failure
 * breaks the channel. */
static bool write_frame(tcp_channel *c, int type, const void *meta, uint32_t meta_len,
                        const struct iovec *payload, int npayload, double deadline_s,
                        rill_status *s)
{
    double t_end = deadline_s > 0 ? rill__now_seconds() + deadline_s : 0;
    rill__frame_header h = {.version = RILL__WIRE_VERSION,
                            .type = (uint8_t)type,
                            .request_id = ++c->next_id,
                            .meta_len = meta_len};
    struct iovec small[19], *iov = small;
    if (npayload + 3 > 19) {
        iov = rill__malloc(sizeof *iov * (size_t)(npayload + 3));
        RILL_CHECK_ALLOC(iov);
    }
    for (int i = 0; i < npayload; i++) {
        iov[2 + i] = payload[i];
        h.payload_len += payload[i].iov_len;
    }
    uint8_t raw[RILL__WIRE_HEADER_SIZE];
    rill__frame_header_encode(&h, raw);
    iov[0] = (struct iovec){raw, sizeof raw};
    iov[1] = (struct iovec){(void *)meta, meta_len};
    int n = npayload + 2;
    uint8_t tag[TAG_BYTES], *sealed_meta = NULL, *bounce = NULL;
    if (c->lk.on && !c->lk.encrypt && h.payload_len >= STREAM_MAC) {
        bool ok = write_streamed(c, raw, meta, meta_len, payload, npayload, t_end, deadline_s, s);
        if (iov != small) rill__free(iov);
        if (!ok) c->broken = true;
        return ok;
    }
    if (c->lk.on) {
        if (c->lk.encrypt && meta_len) {
            sealed_meta = rill__malloc(meta_len);
            RILL_CHECK_ALLOC(sealed_meta);
            iov[1].iov_base = sealed_meta;
        }
        seal_frame(&c->lk, raw, meta, sealed_meta, meta_len, payload, npayload, h.payload_len,
                   &bounce, tag);
        if (bounce) {
            iov[2] = (struct iovec){bounce, (size_t)h.payload_len};
            n = 3;
        }
        iov[n++] = (struct iovec){tag, sizeof tag};
    }
    bool ok = cl_write(c, iov, n, t_end, deadline_s, s);
    if (bounce) rill__aligned_free(bounce, h.payload_len);
    rill__free(sealed_meta);
    if (iov != small) rill__free(iov);
    if (!ok) c->broken = true;
    return ok;
}

/* Writes one PUSH frame (no answer comes) within deadline_s. */
static bool tcp_push(tcp_channel *c, const void *meta, uint32_t meta_len,
                     const struct iovec *payload, int npayload, double deadline_s, rill_status *s)
{
    if (c->broken) {
        rill_status_set(s, RILL_UNAVAILABLE,
                        "the connection to peer %s broke on an earlier error; reconnect", c->peer);
        return false;
    }
    if (meta_len > RILL__WIRE_MAX_META || npayload < 0 || npayload > 16 || (meta_len && !meta)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "bad push to peer %s", c->peer);
        return false;
    }
    return write_frame(c, RILL__MSG_PUSH, meta, meta_len, payload, npayload, deadline_s, s);
}

bool rill__channel_push(rill__channel *ch, const void *meta, uint32_t meta_len,
                        const struct iovec *payload, int npayload, double deadline_s,
                        rill_status *s)
{
    return tcp_push((tcp_channel *)ch, meta, meta_len, payload, npayload, deadline_s, s);
}

/* The first half of a call: writes the request. */
static bool tcp_send(tcp_channel *c, int type, const void *meta, uint32_t meta_len,
                     const struct iovec *payload, int npayload, double deadline_s, rill_status *s)
{
    if (c->broken) {
        rill_status_set(s, RILL_UNAVAILABLE,
                        "the connection to peer %s broke on an earlier error; reconnect", c->peer);
        return false;
    }
    if ((type != RILL__MSG_REQUEST && type != RILL__MSG_HEARTBEAT) ||
        meta_len > RILL__WIRE_MAX_META || npayload < 0 || npayload > 1000 || (meta_len && !meta)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "bad call to peer %s: type %d, meta %u bytes, %d payload pieces", c->peer,
                        type, (unsigned)meta_len, npayload);
        return false;
    }
    if (c->pending_type) {
        rill_status_set(s, RILL_INTERNAL, "a call to peer %s is still waiting for its reply",
                        c->peer);
        return false;
    }
    if (!write_frame(c, type, meta, meta_len, payload, npayload, deadline_s, s)) return false;
    c->pending_type = type;
    return true;
}

/* The second half: waits until t_end (0: no end; deadline_s names it in errors) for the reply
 * to the request tcp_send wrote. */
static bool tcp_reply(tcp_channel *c, rill__reply *reply, double t_end, double deadline_s,
                      rill_status *s)
{
    reply->type = 0;
    reply->meta = NULL;
    reply->meta_len = 0;
    reply->payload = NULL;
    reply->payload_len = 0;
    reply->payload_owned = false;
    int type = c->pending_type;
    if (!type) {
        rill_status_set(s, RILL_INTERNAL, "no call to peer %s waits for a reply", c->peer);
        return false;
    }
    c->pending_type = 0;
    rill__frame_header rh, h = {.request_id = c->next_id};
    if (!cl_read_head(c, &rh, t_end, deadline_s, s)) goto broken;
    int want = type == RILL__MSG_REQUEST ? RILL__MSG_RESPONSE : RILL__MSG_HEARTBEAT_ACK;
    if ((rh.type != want && rh.type != RILL__MSG_ERROR) || rh.request_id != h.request_id ||
        (rh.type == RILL__MSG_ERROR && rh.payload_len != 0)) {
        rill_status_set(s, RILL_DATA_LOSS,
                        "peer %s answered request %llu with a %s frame for request %llu", c->peer,
                        (unsigned long long)h.request_id, rill__msg_type_name(rh.type),
                        (unsigned long long)rh.request_id);
        goto broken;
    }
    if (rh.type == RILL__MSG_ERROR) {
        if (!cl_read_tail(c, &rh, NULL, t_end, deadline_s, s)) goto broken;
        remote_error(c, &rh, false, s);
        return false;
    }
    reply->type = rh.type;
    reply->meta = c->meta;
    reply->meta_len = rh.meta_len;
    reply->payload_len = rh.payload_len;
    if (rh.payload_len == 0) {
        if (!cl_read_tail(c, &rh, NULL, t_end, deadline_s, s)) goto broken;
        return true;
    }
    if (reply->payload_dst && rh.payload_len <= reply->payload_cap) {
        reply->payload = reply->payload_dst;
    } else {
        if (rh.payload_len > SIZE_MAX || !(reply->payload = rill__aligned_alloc(rh.payload_len))) {
            rill_status_set(s, RILL_RESOURCE_EXHAUSTED,
                            "cannot allocate %llu bytes for the reply of peer %s",
                            (unsigned long long)rh.payload_len, c->peer);
            reply->payload_len = 0;
            goto broken;
        }
        reply->payload_owned = true;
    }
    if (!cl_read_payload(c, reply->payload, rh.payload_len, t_end, deadline_s, s) ||
        !cl_read_tail(c, &rh, reply->payload, t_end, deadline_s, s)) {
        if (reply->payload_owned) rill__aligned_free(reply->payload, rh.payload_len);
        reply->payload = NULL;
        reply->payload_len = 0;
        reply->payload_owned = false;
        goto broken;
    }
    return true;
broken:
    c->broken = true;
    return false;
}

static bool tcp_call(rill__channel *ch, int type, const void *meta, uint32_t meta_len,
                     const struct iovec *payload, int npayload, rill__reply *reply,
                     double deadline_s, rill_status *s)
{
    tcp_channel *c = (tcp_channel *)ch;
    double t_end = deadline_s > 0 ? rill__now_seconds() + deadline_s : 0;
    if (!tcp_send(c, type, meta, meta_len, payload, npayload, deadline_s, s)) {
        *reply = (rill__reply){.payload_dst = reply->payload_dst, .payload_cap = reply->payload_cap};
        return false;
    }
    return tcp_reply(c, reply, t_end, deadline_s, s);
}

bool rill__channel_send(rill__channel *ch, const void *meta, uint32_t meta_len,
                        const struct iovec *payload, int npayload, double deadline_s,
                        rill_status *s)
{
    return tcp_send((tcp_channel *)ch, RILL__MSG_REQUEST, meta, meta_len, payload, npayload,
                    deadline_s, s);
}

bool rill__channel_reply(rill__channel *ch, rill__reply *reply, double deadline_s, rill_status *s)
{
    double t_end = deadline_s > 0 ? rill__now_seconds() + deadline_s : 0;
    return tcp_reply((tcp_channel *)ch, reply, t_end, deadline_s, s);
}

bool rill__channel_readable(rill__channel *ch, int timeout_ms)
{
    tcp_channel *c = (tcp_channel *)ch;
    if (c->rpos < c->rlen || c->broken) return true;
    struct pollfd p = {.fd = c->fd, .events = POLLIN | POLLRDHUP};
    return poll(&p, 1, timeout_ms) > 0;
}

int rill__channel_fd(const rill__channel *ch)
{
    const tcp_channel *c = (const tcp_channel *)ch;
    return c->rpos < c->rlen || c->broken ? -1 : c->fd;
}

static void tcp_close(rill__channel *ch)
{
    tcp_channel *c = (tcp_channel *)ch;
    if (c->fd >= 0) close(c->fd);
    link_wipe(&c->lk);
    rill__free(c->meta);
    rill__free(c);
}

static const rill__channel_vtable tcp_vtable = {tcp_call, tcp_close};

const char *rill__channel_peer(const rill__channel *ch)
{
    return ch && ch->vt == &tcp_vtable ? ((const tcp_channel *)ch)->peer : "";
}

const uint8_t *rill__channel_peer_run(const rill__channel *ch)
{
    static const uint8_t none[16];
    return ch && ch->vt == &tcp_vtable ? ((const tcp_channel *)ch)->peer_run : none;
}

/* Non-blocking connect bounded by t_end; returns a connected blocking fd or -1 with s set. */
static int connect_one(const struct addrinfo *ai, const char *address, double t_end,
                       double deadline_s, rill_status *s)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        rill_status_set(s, RILL_UNAVAILABLE, "could not connect to %s: %s", address,
                        strerror(errno));
        return -1;
    }
    int err = 0;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            err = errno;
            goto fail;
        }
        for (;;) {
            int ms = -1;
            if (deadline_s > 0) {
                double left = t_end - rill__now_seconds();
                if (left <= 0) {
                    rill_status_set(s, RILL_DEADLINE_EXCEEDED,
                                    "could not connect to %s within %g s", address, deadline_s);
                    close(fd);
                    return -1;
                }
                ms = (int)ceil(left * 1000);
            }
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int r = poll(&p, 1, ms);
            if (r < 0 && errno == EINTR) continue;
            if (r > 0) break;
            if (r < 0) {
                err = errno;
                goto fail;
            }
        }
        socklen_t len = sizeof err;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        if (err) goto fail;
    }
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
fail:
    rill_status_set(s, RILL_UNAVAILABLE, "could not connect to %s: %s", address, strerror(err));
    close(fd);
    return -1;
}

/* The handshake's HANDSHAKE meta: u32 version, u32 flags, the client's nonce, the cluster id, the
 * run id, u16 length + the task name, then (with a secret) the client's proof over the server's
 * nonce and everything before it. Returns its length. */
static uint32_t hello_meta(const rill__tcp_options *o, const uint8_t cn[NONCE_BYTES],
                           uint8_t out[HANDSHAKE_MAX_META])
{
    const rill__identity *id = &o->identity;
    size_t tlen = strnlen(id->task, sizeof id->task - 1);
    uint8_t *p = out;
    rill__put_u32(p, RILL__WIRE_VERSION);
    rill__put_u32(p + 4, o->encrypt ? HS_ENCRYPT : 0);
    memcpy(p + 8, cn, NONCE_BYTES);
    memcpy(p + 8 + NONCE_BYTES, id->cluster, 32);
    memcpy(p + 40 + NONCE_BYTES, id->run, 16);
    rill__put_u16(p + 56 + NONCE_BYTES, (uint16_t)tlen);
    memcpy(p + 58 + NONCE_BYTES, id->task, tlen);
    return (uint32_t)(58 + NONCE_BYTES + tlen);
}

static bool client_handshake(tcp_channel *c, const rill__tcp_options *o, double t_end,
                             double deadline_s, rill_status *s)
{
    rill__frame_header h;
    if (!cl_read_head(c, &h, t_end, deadline_s, s)) return false;
    if (h.type == RILL__MSG_ERROR) {
        remote_error(c, &h, true, s);
        return false;
    }
    if (h.type != RILL__MSG_CHALLENGE || h.meta_len != 4 + NONCE_BYTES || h.payload_len != 0) {
        rill_status_set(s, RILL_DATA_LOSS,
                        "peer %s opened with a bad %s frame instead of CHALLENGE", c->peer,
                        rill__msg_type_name(h.type));
        return false;
    }
    uint32_t flags = rill__get_u32(c->meta);
    uint8_t sn[NONCE_BYTES], cn[NONCE_BYTES];
    memcpy(sn, c->meta + 4, NONCE_BYTES);
    if ((flags & HS_SECRET) && !o->secret) {
        rill_status_set(s, RILL_UNAUTHENTICATED,
                        "peer %s requires a cluster secret and this task was given none", c->peer);
        return false;
    }
    randombytes_buf(cn, sizeof cn);
    uint8_t meta[HANDSHAKE_MAX_META], key[crypto_auth_KEYBYTES];
    uint32_t mlen = hello_meta(o, cn, meta);
    if (o->secret) {
        derive_key(o->secret, o->secret_len, key);
        proof(key, "rill-client", sn, NONCE_BYTES, meta, mlen, NULL, 0, meta + mlen);
        mlen += crypto_auth_BYTES;
    }
    rill__frame_header out = {.version = RILL__WIRE_VERSION,
                              .type = RILL__MSG_HANDSHAKE,
                              .request_id = 0,
                              .meta_len = mlen};
    uint8_t raw[RILL__WIRE_HEADER_SIZE];
    rill__frame_header_encode(&out, raw);
    struct iovec iov[2] = {{raw, sizeof raw}, {meta, mlen}};
    bool ok = cl_write(c, iov, 2, t_end, deadline_s, s) && cl_read_head(c, &h, t_end, deadline_s, s);
    if (ok && h.type == RILL__MSG_ERROR) {
        remote_error(c, &h, true, s);
        ok = false;
    } else if (ok) {
        /* HANDSHAKE_OK: u32 flags, the server's run id, then (with a secret) its proof over the
         * client's nonce, the whole HANDSHAKE meta and everything before the proof. */
        uint32_t want = 4 + 16 + (o->secret ? crypto_auth_BYTES : 0);
        if (o->secret && h.type == RILL__MSG_HANDSHAKE_OK && h.meta_len == 20) {
            rill_status_set(s, RILL_UNAUTHENTICATED,
                            "peer %s did not prove it knows the cluster secret: it is not a task "
                            "of this cluster (an impostor on its address?)",
                            c->peer);
            ok = false;
        } else if (h.type != RILL__MSG_HANDSHAKE_OK || h.meta_len != want || h.payload_len != 0) {
            rill_status_set(s, RILL_DATA_LOSS, "peer %s answered the handshake with a bad %s frame",
                            c->peer, rill__msg_type_name(h.type));
            ok = false;
        }
    }
    if (ok && o->secret) {
        uint8_t tag[crypto_auth_BYTES];
        proof(key, "rill-server", cn, NONCE_BYTES, meta, mlen, c->meta, 20, tag);
        if (sodium_memcmp(tag, c->meta + 20, sizeof tag) != 0) {
            rill_status_set(s, RILL_UNAUTHENTICATED,
                            "peer %s did not prove it knows the cluster secret: it is not a task "
                            "of this cluster (an impostor on its address?)",
                            c->peer);
            ok = false;
        } else {
            link_keys(&c->lk, key, sn, cn, true, (rill__get_u32(c->meta) & HS_ENCRYPT) != 0);
        }
    }
    if (ok) memcpy(c->peer_run, c->meta + 4, 16);
    if (o->secret) sodium_memzero(key, sizeof key);
    return ok;
}

rill__channel *rill__tcp_connect(const char *address, const rill__tcp_options *opts,
                                 double deadline_s, rill_status *s)
{
    rill__tcp_options o = resolve_options(opts);
    char host[256], port[16];
    if (!sodium_ready(s) || !split_address(address, host, sizeof host, port, sizeof port, s))
        return NULL;
    double t_end = deadline_s > 0 ? rill__now_seconds() + deadline_s : 0;
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0) {
        rill_status_set(s, RILL_UNAVAILABLE, "could not resolve %s: %s", address,
                        gai_strerror(gai));
        return NULL;
    }
    int fd = -1;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
        fd = connect_one(ai, address, t_end, deadline_s, s);
    freeaddrinfo(res);
    if (fd < 0) return NULL;
    if (o.encrypt && !o.secret) {
        close(fd);
        rill_status_set(s, RILL_INVALID_ARGUMENT, "encryption needs a cluster secret");
        return NULL;
    }
    tcp_channel *c = rill__calloc(1, sizeof *c);
    RILL_CHECK_ALLOC(c);
    c->base.vt = &tcp_vtable;
    c->fd = fd;
    c->max_payload = o.max_payload;
    snprintf(c->peer, sizeof c->peer, "%s", address);
    if (!client_handshake(c, &o, t_end, deadline_s, s)) {
        tcp_close(&c->base);
        return NULL;
    }
    rill_status_clear(s);
    return &c->base;
}

/* ================================================================= TCP server === */

enum { CONN_HANDSHAKE, CONN_READY };
/* STAGE_RESERVE: the meta is in, the payload's memory not yet had (max_buffered); STAGE_TAG:
 * the frame's MAC. */
enum { STAGE_HEADER, STAGE_META, STAGE_RESERVE, STAGE_PAYLOAD, STAGE_TAG };

typedef struct conn {
    int fd;
    int state;
    int slot;
    double deadline;     /* 0: none */
    const char *waiting; /* what the deadline is for: "handshake", "I/O", "idle" */
    double born;
    char peer[64];
    char task[128]; /* the client task its handshake named */
    uint8_t nonce[NONCE_BYTES];
    frame_keys lk;
    bool discard;      /* the payload is over the request's limit: read and dropped */
    uint64_t reserved; /* payload bytes counted in the server's buffered */
    uint8_t tag[TAG_BYTES];
    size_t tag_got;
    /* reading */
    int stage;
    uint8_t hdr[RILL__WIRE_HEADER_SIZE];
    size_t hdr_got;
    rill__frame_header h;
    uint8_t *meta;
    uint32_t meta_cap;
    size_t meta_got;
    uint8_t *payload;
    uint64_t payload_got;
    /* writing */
    bool writing;
    uint8_t whdr[RILL__WIRE_HEADER_SIZE];
    uint8_t *wmeta;
    uint32_t wmeta_cap;
    struct iovec wiov[MAX_RESP_IOV + 3];
    int wiov_n, wiov_i;
    uint8_t wtag[TAG_BYTES];
    uint8_t *wbounce; /* the encrypted payload being written */
    uint64_t wbounce_len;
    /* A big authenticated payload is MAC'd as it is sent (the MAC of what went out overlaps
     * the peer's reading it); the tag, wiov[wtag_at], goes once the last byte did. */
    bool wmac_on;
    int wtag_at;
    crypto_onetimeauth_state wmac;
    void (*wdone)(void *);
    void *wdone_arg;
    struct rill__tcp_deferred *pending; /* a deferred request in flight: read nothing more */
    bool rdhup_only; /* meanwhile the client sent bytes: interest narrowed to its hang-up */
    size_t rpos, rlen;
    uint8_t rbuf[RBUF_SIZE];
} conn;

struct rill__tcp_server {
    rill__tcp_options opts;
    uint8_t *secret_copy;
    uint8_t key[crypto_auth_KEYBYTES];
    rill__tcp_handler handler;
    void *arg;
    int listen_fd, epfd, wake_fd, spare_fd;
    int port;
    pthread_t thread;
    conn **conns;
    int nconns;
    atomic_int open_conns;
    double next_deadline; /* 0: none */
    long refused; /* connections, handshakes and payloads refused since the last log line */
    double next_refusal_log;
    int nhandshaking;
    uint64_t buffered; /* payload bytes reserved by frames being received */
    atomic_uint_fast64_t buffered_seen; /* buffered, for other threads (tests) */
    int npaused;       /* connections waiting in STAGE_RESERVE */
    double next_trim;
    char address[256];
    int done_fd;                   /* eventfd: deferred responses are ready */
    bool done_here;                /* one was finished on the server's thread (no eventfd) */
    pthread_mutex_t done_mu;
    struct rill__tcp_deferred *done; /* finished deferred requests, to send */
};

struct rill__tcp_response {
    conn *c;          /* NULL for a deferred response, which keeps its own meta */
    rill__tcp_server *srv;
    uint64_t request_id;
    uint8_t *own_meta;
    bool deferred;
    uint32_t meta_len;
    struct iovec iov[MAX_RESP_IOV];
    int niov;
    void (*done)(void *);
    void *done_arg;
    rill_code err;
    char *errmsg;
};

struct rill__tcp_deferred {
    rill__tcp_server *srv;
    conn *c; /* NULL once the client hung up (server thread only) */
    uint64_t request_id;
    rill__tcp_response resp;
    void (*on_hangup)(void *);
    void (*on_release)(void *);
    void *arg;
    struct rill__tcp_deferred *next;
};

static void ensure_wmeta(conn *c, uint32_t n)
{
    if (n <= c->wmeta_cap) return;
    uint8_t *m = rill__realloc(c->wmeta, n);
    RILL_CHECK_ALLOC(m);
    c->wmeta = m;
    c->wmeta_cap = n;
}

void rill__tcp_response_set_meta(rill__tcp_response *r, const void *meta, uint32_t meta_len)
{
    if (meta_len > RILL__WIRE_MAX_META) {
        rill__tcp_response_set_error(r, RILL_INTERNAL, "response meta of %u bytes exceeds %u",
                                     (unsigned)meta_len, (unsigned)RILL__WIRE_MAX_META);
        return;
    }
    uint8_t *dst;
    if (r->c) {
        ensure_wmeta(r->c, meta_len);
        dst = r->c->wmeta;
    } else {
        dst = rill__realloc(r->own_meta, meta_len ? meta_len : 1);
        RILL_CHECK_ALLOC(dst);
        r->own_meta = dst;
    }
    if (meta_len) memcpy(dst, meta, meta_len);
    r->meta_len = meta_len;
}

void rill__tcp_response_set_payload(rill__tcp_response *r, const struct iovec *iov, int n,
                                    void (*done)(void *arg), void *done_arg)
{
    if (r->done) r->done(r->done_arg); /* a replaced payload is released at once */
    r->done = done;
    r->done_arg = done_arg;
    r->niov = 0;
    if (n < 0 || n > MAX_RESP_IOV) {
        rill__tcp_response_set_error(r, RILL_INTERNAL, "response payload in %d pieces, at most %d",
                                     n, MAX_RESP_IOV);
        return;
    }
    for (int i = 0; i < n; i++) r->iov[i] = iov[i];
    r->niov = n;
}

void rill__tcp_response_set_error(rill__tcp_response *r, rill_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char buf[4096];
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    rill__free(r->errmsg);
    r->errmsg = rill__strdup(buf);
    r->err = code == RILL_OK ? RILL_UNKNOWN : code;
}

static void srv_set_deadline(rill__tcp_server *srv, conn *c, double d, const char *what)
{
    c->deadline = d;
    c->waiting = what;
    if (d > 0 && (srv->next_deadline == 0 || d < srv->next_deadline)) srv->next_deadline = d;
}

/* Between frames: the connection is closed if it sends none for idle_timeout_s. */
static void srv_idle(rill__tcp_server *srv, conn *c)
{
    srv_set_deadline(srv, c, rill__now_seconds() + srv->opts.idle_timeout_s, "idle");
}

static void unreserve(rill__tcp_server *srv, conn *c);

static void conn_free(rill__tcp_server *srv, conn *c)
{
    if (c->pending) c->pending->c = NULL; /* its response will be dropped */
    close(c->fd);
    if (c->wdone) c->wdone(c->wdone_arg);
    if (c->wbounce) rill__aligned_free(c->wbounce, c->wbounce_len);
    if (c->payload) rill__aligned_free(c->payload, c->h.payload_len);
    if (c->state == CONN_HANDSHAKE) srv->nhandshaking--;
    if (c->stage == STAGE_RESERVE) srv->npaused--;
    unreserve(srv, c);
    link_wipe(&c->lk);
    rill__free(c->meta);
    rill__free(c->wmeta);
    int last = --srv->nconns;
    srv->conns[c->slot] = srv->conns[last];
    srv->conns[c->slot]->slot = c->slot;
    srv->conns[last] = NULL;
    atomic_fetch_sub(&srv->open_conns, 1);
    rill__free(c);
}

static void conn_interest(rill__tcp_server *srv, conn *c, uint32_t ev)
{
    struct epoll_event e = {.events = ev, .data.ptr = c};
    epoll_ctl(srv->epfd, EPOLL_CTL_MOD, c->fd, &e);
}

/* Writes what it can; returns false when the connection must close. */
static bool conn_flush(rill__tcp_server *srv, conn *c)
{
    while (c->wiov_i < c->wiov_n) {
        if (c->wmac_on && c->wiov_i == c->wtag_at) { /* every payload byte is out */
            crypto_onetimeauth_final(&c->wmac, c->wtag);
            c->wmac_on = false;
        }
        if (c->wiov[c->wiov_i].iov_len == 0) {
            c->wiov_i++;
            continue;
        }
        int end = c->wmac_on ? c->wtag_at : c->wiov_n;
        struct msghdr mh = {.msg_iov = c->wiov + c->wiov_i, .msg_iovlen = (size_t)(end - c->wiov_i)};
        ssize_t k = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (!c->writing) {
                    c->writing = true;
                    conn_interest(srv, c, EPOLLOUT);
                    srv_set_deadline(srv, c, rill__now_seconds() + srv->opts.io_timeout_s, "I/O");
                }
                return true;
            }
            return false;
        }
        size_t left = (size_t)k;
        while (c->wiov_i < c->wiov_n && left >= c->wiov[c->wiov_i].iov_len) {
            if (c->wmac_on && c->wiov_i >= 2)
                crypto_onetimeauth_update(&c->wmac, c->wiov[c->wiov_i].iov_base,
                                          c->wiov[c->wiov_i].iov_len);
            left -= c->wiov[c->wiov_i++].iov_len;
        }
        if (left) {
            if (c->wmac_on && c->wiov_i >= 2)
                crypto_onetimeauth_update(&c->wmac, c->wiov[c->wiov_i].iov_base, left);
            c->wiov[c->wiov_i].iov_base = (uint8_t *)c->wiov[c->wiov_i].iov_base + left;
            c->wiov[c->wiov_i].iov_len -= left;
        }
    }
    if (c->wdone) {
        void (*done)(void *) = c->wdone;
        c->wdone = NULL;
        done(c->wdone_arg);
    }
    if (c->wbounce) {
        rill__aligned_free(c->wbounce, c->wbounce_len);
        c->wbounce = NULL;
    }
    if (c->writing) {
        c->writing = false;
        srv_idle(srv, c);
        conn_interest(srv, c, EPOLLIN);
    }
    return true;
}

/* Queues a frame (header + wmeta[0..meta_len) + payload iovecs) and starts writing it. */
static bool conn_send(rill__tcp_server *srv, conn *c, int type, uint64_t id, uint32_t meta_len,
                      const struct iovec *iov, int niov, void (*done)(void *), void *done_arg)
{
    rill__frame_header h = {.version = RILL__WIRE_VERSION,
                            .type = (uint8_t)type,
                            .request_id = id,
                            .meta_len = meta_len};
    for (int i = 0; i < niov; i++) {
        c->wiov[2 + i] = iov[i];
        h.payload_len += iov[i].iov_len;
    }
    rill__frame_header_encode(&h, c->whdr);
    c->wiov[0] = (struct iovec){c->whdr, sizeof c->whdr};
    c->wiov[1] = (struct iovec){c->wmeta, meta_len};
    c->wiov_n = niov + 2;
    c->wiov_i = 0;
    c->wdone = done;
    c->wdone_arg = done_arg;
    if (c->lk.on && !c->lk.encrypt && h.payload_len >= STREAM_MAC) {
        mac_begin(&c->wmac, c->lk.ksend, c->lk.nsend++);
        crypto_onetimeauth_update(&c->wmac, c->whdr, sizeof c->whdr);
        crypto_onetimeauth_update(&c->wmac, c->wmeta, meta_len);
        c->wmac_on = true;
        c->wtag_at = c->wiov_n;
        c->wiov[c->wiov_n++] = (struct iovec){c->wtag, sizeof c->wtag};
    } else if (c->lk.on) {
        uint8_t *bounce;
        seal_frame(&c->lk, c->whdr, c->wmeta, c->wmeta, meta_len, iov, niov, h.payload_len,
                   &bounce, c->wtag);
        if (bounce) { /* the caller's buffers are no longer needed */
            c->wbounce = bounce;
            c->wbounce_len = h.payload_len;
            c->wiov[2] = (struct iovec){bounce, (size_t)h.payload_len};
            c->wiov_n = 3;
            c->wdone = NULL;
            if (done) done(done_arg);
        }
        c->wiov[c->wiov_n++] = (struct iovec){c->wtag, sizeof c->wtag};
    }
    return conn_flush(srv, c);
}

static bool conn_send_error(rill__tcp_server *srv, conn *c, uint64_t id, rill_code code,
                            const char *msg)
{
    size_t n = strlen(msg) + 4;
    if (n > 65536) n = 65536;
    ensure_wmeta(c, (uint32_t)n);
    size_t len = rill__error_meta_encode(code, msg, c->wmeta, n);
    return conn_send(srv, c, RILL__MSG_ERROR, id, (uint32_t)len, NULL, 0, NULL, NULL);
}

rill__tcp_deferred *rill__tcp_response_defer(rill__tcp_response *r, void (*on_hangup)(void *),
                                             void (*on_release)(void *), void *arg)
{
    rill__tcp_deferred *d = rill__calloc(1, sizeof *d);
    RILL_CHECK_ALLOC(d);
    d->c = r->c;
    d->srv = r->srv;
    d->request_id = r->request_id;
    d->on_hangup = on_hangup;
    d->on_release = on_release;
    d->arg = arg;
    d->resp.deferred = true;
    r->deferred = true;
    r->c->pending = d;
    return d;
}

rill__tcp_response *rill__tcp_deferred_response(rill__tcp_deferred *d)
{
    return &d->resp;
}

/* The server whose thread this is (srv_main), or NULL. */
static __thread rill__tcp_server *tl_server;

bool rill__tcp_on_server_thread(void)
{
    return tl_server != NULL;
}

void rill__tcp_deferred_finish(rill__tcp_deferred *d)
{
    rill__tcp_server *srv = d->srv;
    pthread_mutex_lock(&srv->done_mu);
    d->next = srv->done;
    srv->done = d;
    pthread_mutex_unlock(&srv->done_mu);
    /* On the server's own thread (a part of a step ended where its tensor arrived) the loop
     * sends it before it waits again; from another thread the eventfd wakes it. */
    if (tl_server == srv) {
        srv->done_here = true;
        return;
    }
    uint64_t one = 1;
    ssize_t w = write(srv->done_fd, &one, sizeof one);
    (void)w;
}

static void deferred_free(rill__tcp_deferred *d)
{
    if (d->resp.done) d->resp.done(d->resp.done_arg);
    if (d->on_release) d->on_release(d->arg);
    rill__free(d->resp.errmsg);
    rill__free(d->resp.own_meta);
    rill__free(d);
}

static bool conn_pump(rill__tcp_server *srv, conn *c);

/* Sends what finished deferred requests answered (server thread); from_fd: the eventfd said so
 * (reset it). */
static void srv_send_deferred(rill__tcp_server *srv, bool from_fd)
{
    srv->done_here = false;
    if (from_fd) {
        uint64_t v;
        ssize_t r = read(srv->done_fd, &v, sizeof v);
        (void)r;
    }
    pthread_mutex_lock(&srv->done_mu);
    rill__tcp_deferred *d = srv->done;
    srv->done = NULL;
    pthread_mutex_unlock(&srv->done_mu);
    while (d) {
        rill__tcp_deferred *next = d->next;
        conn *c = d->c;
        if (c) {
            c->pending = NULL;
            if (c->rdhup_only) conn_interest(srv, c, EPOLLIN);
            c->rdhup_only = false;
            rill__tcp_response *rs = &d->resp;
            bool ok;
            if (rs->err != RILL_OK) {
                ok = conn_send_error(srv, c, d->request_id, rs->err, rs->errmsg);
            } else {
                ensure_wmeta(c, rs->meta_len);
                if (rs->meta_len) memcpy(c->wmeta, rs->own_meta, rs->meta_len);
                ok = conn_send(srv, c, RILL__MSG_RESPONSE, d->request_id, rs->meta_len, rs->iov,
                               rs->niov, rs->done, rs->done_arg);
                rs->done = NULL; /* the connection runs it once sent */
            }
            if (ok) ok = conn_pump(srv, c);
            if (!ok) conn_free(srv, c);
        }
        deferred_free(d);
        d = next;
    }
}

static void conn_hangup_pending(rill__tcp_server *srv, conn *c);

/* An event on a connection whose request is deferred: a hang-up (EOF reads as EPOLLIN too), or
 * bytes the client sent meanwhile, which stay unread: then only a hang-up is watched for. */
static void pending_event(rill__tcp_server *srv, conn *c, uint32_t events)
{
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        conn_hangup_pending(srv, c);
        return;
    }
    char b;
    ssize_t k = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        conn_hangup_pending(srv, c);
    } else if (k > 0 && !c->rdhup_only) {
        c->rdhup_only = true;
        conn_interest(srv, c, EPOLLRDHUP);
    }
}

/* The client of a connection with a deferred request in flight hung up (server thread). */
static void conn_hangup_pending(rill__tcp_server *srv, conn *c)
{
    rill__tcp_deferred *d = c->pending;
    c->pending = NULL;
    d->c = NULL;
    if (d->on_hangup) d->on_hangup(d->arg);
    rill__log(RILL_LOG_DEBUG, "server %s: %s hung up while its request was in flight",
              srv->address, c->peer);
    conn_free(srv, c);
}

static bool serve_request(rill__tcp_server *srv, conn *c)
{
    rill__tcp_request req = {.request_id = c->h.request_id,
                             .meta = c->meta,
                             .meta_len = c->h.meta_len,
                             .payload = c->payload,
                             .payload_len = c->h.payload_len,
                             .peer = c->peer,
                             .task = c->task};
    rill__tcp_response resp = {.c = c, .srv = srv, .request_id = req.request_id};
    c->payload = NULL; /* the request owns it now */
    srv->handler(srv->arg, &req, &resp);
    if (req.payload) rill__aligned_free(req.payload, req.payload_len);
    if (c->h.type == RILL__MSG_PUSH) { /* one-way: whatever the handler said stays here */
        if (resp.err != RILL_OK)
            rill__log(RILL_LOG_WARNING, "server %s: a push from %s failed: %s", srv->address,
                      c->peer, resp.errmsg ? resp.errmsg : "");
        if (resp.done) resp.done(resp.done_arg);
        rill__free(resp.errmsg);
        return !resp.deferred;
    }
    if (resp.deferred) {
        /* Answered later; meanwhile only a hang-up is of interest (the interest stays EPOLLIN,
         * which a hang-up also raises: see pending_event, no epoll_ctl per request). */
        if (resp.done) resp.done(resp.done_arg);
        rill__free(resp.errmsg);
        srv_set_deadline(srv, c, 0, NULL);
        return true;
    }
    if (resp.err != RILL_OK) {
        if (resp.done) resp.done(resp.done_arg);
        bool ok = conn_send_error(srv, c, req.request_id, resp.err, resp.errmsg);
        rill__free(resp.errmsg);
        return ok;
    }
    return conn_send(srv, c, RILL__MSG_RESPONSE, req.request_id, resp.meta_len, resp.iov, resp.niov,
                     resp.done, resp.done_arg);
}

/* Logs a refusal (a connection, a handshake, a payload) at most once every 5 s, with the
 * number refused since the last line: a flood cannot flood the log. */
static void srv_refusal(rill__tcp_server *srv, const char *msg)
{
    srv->refused++;
    double now = rill__now_seconds();
    if (now >= srv->next_refusal_log) {
        rill__log(RILL_LOG_WARNING, "server %s: %s (%ld refusals since the last line like this)",
                  srv->address, msg, srv->refused);
        srv->refused = 0;
        srv->next_refusal_log = now + 5;
    }
}

/* A refused handshake: told why, and logged. */
static void refuse_handshake(rill__tcp_server *srv, conn *c, rill_code code, const char *msg)
{
    conn_send_error(srv, c, 0, code, msg);
    char line[1200];
    snprintf(line, sizeof line, "refused %s: %s", c->peer, msg);
    srv_refusal(srv, line);
}

/* HANDSHAKE meta (hello_meta): checked, proved, admitted; then HANDSHAKE_OK, with the server's
 * proof when there is a secret, and from then on every frame carries a MAC. */
static bool serve_handshake(rill__tcp_server *srv, conn *c)
{
    const uint8_t *m = c->meta;
    uint32_t len = c->h.meta_len;
    if (len < 4 || rill__get_u32(m) != RILL__WIRE_VERSION) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "wire protocol version mismatch in the handshake: this server speaks version %d",
                 RILL__WIRE_VERSION);
        refuse_handshake(srv, c, RILL_FAILED_PRECONDITION, msg);
        return false;
    }
    uint32_t body = 58 + NONCE_BYTES, tlen = len >= body ? rill__get_u16(m + body - 2) : 0;
    /* A client with a secret proves it even to a server without one (which ignores it). */
    uint32_t want = body + tlen + (srv->secret_copy ? crypto_auth_BYTES : 0);
    if (!srv->secret_copy && len == want + crypto_auth_BYTES) want = len;
    if (len < body || tlen >= sizeof c->task || len != want) {
        if (srv->secret_copy && len == body + tlen) {
            refuse_handshake(srv, c, RILL_UNAUTHENTICATED,
                             "the client did not prove it knows the cluster secret");
        } else {
            refuse_handshake(srv, c, RILL_INVALID_ARGUMENT, "malformed handshake");
        }
        return false;
    }
    if (srv->secret_copy) {
        uint8_t tag[crypto_auth_BYTES];
        proof(srv->key, "rill-client", c->nonce, NONCE_BYTES, m, body + tlen, NULL, 0, tag);
        if (sodium_memcmp(tag, m + body + tlen, sizeof tag) != 0) {
            refuse_handshake(srv, c, RILL_UNAUTHENTICATED,
                             "the client did not prove it knows the cluster secret");
            return false;
        }
    }
    rill__identity id = {0};
    memcpy(id.cluster, m + 8 + NONCE_BYTES, 32);
    memcpy(id.run, m + 40 + NONCE_BYTES, 16);
    memcpy(id.task, m + body, tlen);
    if (memchr(id.task, 0, tlen)) {
        refuse_handshake(srv, c, RILL_INVALID_ARGUMENT, "malformed handshake");
        return false;
    }
    uint8_t ok_meta[4 + 16 + crypto_auth_BYTES] = {0};
    if (srv->opts.admit) {
        rill_status *why = rill__scratch_status();
        if (!srv->opts.admit(srv->opts.arg, &id, ok_meta + 4, why)) {
            refuse_handshake(srv, c, rill_status_code(why), rill_status_message(why));
            return false;
        }
    }
    int held = 0;
    for (int i = 0; i < srv->nconns && id.task[0]; i++)
        held += srv->conns[i]->state == CONN_READY && strcmp(srv->conns[i]->task, id.task) == 0;
    if (id.task[0] && held >= srv->opts.max_per_task) {
        char msg[600];
        snprintf(msg, sizeof msg,
                 "task %s already holds %d connections to server %s (max_per_task %d)", id.task,
                 held, srv->address, srv->opts.max_per_task);
        refuse_handshake(srv, c, RILL_RESOURCE_EXHAUSTED, msg);
        return false;
    }
    bool encrypt = srv->secret_copy && (srv->opts.encrypt || (rill__get_u32(m + 4) & HS_ENCRYPT));
    rill__put_u32(ok_meta, encrypt ? HS_ENCRYPT : 0);
    uint32_t ok_len = 20;
    if (srv->secret_copy) {
        proof(srv->key, "rill-server", m + 8, NONCE_BYTES, m, len, ok_meta, 20, ok_meta + 20);
        ok_len += crypto_auth_BYTES;
    }
    memcpy(c->task, id.task, tlen + 1);
    c->state = CONN_READY;
    srv->nhandshaking--;
    srv_idle(srv, c);
    ensure_wmeta(c, ok_len);
    memcpy(c->wmeta, ok_meta, ok_len);
    bool sent = conn_send(srv, c, RILL__MSG_HANDSHAKE_OK, 0, ok_len, NULL, 0, NULL, NULL);
    if (srv->secret_copy) link_keys(&c->lk, srv->key, c->nonce, m + 8, false, encrypt);
    return sent;
}

/* Validates a complete header against the connection's state; false: drop the connection. */
static bool accept_header(rill__tcp_server *srv, conn *c)
{
    rill_status *e = rill__scratch_status();
    if (!rill__frame_header_decode(c->hdr, srv->opts.max_payload, &c->h, e)) {
        rill__log(RILL_LOG_DEBUG, "server %s: dropped %s: %s", srv->address, c->peer,
                  rill_status_message(e));
        return false;
    }
    bool ok;
    if (c->state == CONN_HANDSHAKE)
        ok = c->h.type == RILL__MSG_HANDSHAKE && c->h.meta_len <= HANDSHAKE_MAX_META &&
             c->h.payload_len == 0;
    else if (c->h.type == RILL__MSG_HEARTBEAT)
        ok = c->h.meta_len == 0 && c->h.payload_len == 0;
    else
        ok = c->h.type == RILL__MSG_REQUEST || c->h.type == RILL__MSG_PUSH;
    if (!ok) {
        rill__log(RILL_LOG_DEBUG, "server %s: dropped %s: unexpected %s frame", srv->address,
                  c->peer, rill__msg_type_name(c->h.type));
        return false;
    }
    if (c->h.meta_len > c->meta_cap) {
        uint8_t *m = rill__realloc(c->meta, c->h.meta_len);
        RILL_CHECK_ALLOC(m);
        c->meta = m;
        c->meta_cap = c->h.meta_len;
    }
    if (c->lk.on) {
        mac_begin(&c->lk.mac, c->lk.krecv, c->lk.nrecv);
        crypto_onetimeauth_update(&c->lk.mac, c->hdr, sizeof c->hdr);
    }
    return true;
}

static void unreserve(rill__tcp_server *srv, conn *c)
{
    srv->buffered -= c->reserved;
    c->reserved = 0;
    atomic_store(&srv->buffered_seen, srv->buffered);
}

/* The meta is in: decides what becomes of the payload. Over the request's limit it is read and
 * dropped (the request is answered with an error); otherwise its memory is taken, a big one
 * only while the server's buffered bytes stay within max_buffered: else the connection waits
 * in STAGE_RESERVE, unread. Allocation gives address space; memory is committed as the bytes
 * land. False: drop the connection. */
static bool reserve_payload(rill__tcp_server *srv, conn *c)
{
    uint64_t n = c->h.payload_len;
    if (c->stage == STAGE_META) {
        if (c->lk.on) crypto_onetimeauth_update(&c->lk.mac, c->meta, c->h.meta_len);
        c->discard = false;
        if (n > 0 && srv->opts.payload_limit && c->state == CONN_READY) {
            /* The limit reads the meta: decrypt a copy to ask it. */
            rill__tcp_request req = {.request_id = c->h.request_id,
                                     .meta = c->meta,
                                     .meta_len = c->h.meta_len,
                                     .payload_len = n,
                                     .peer = c->peer,
                                     .task = c->task};
            uint8_t *plain = NULL;
            if (c->lk.encrypt && c->h.meta_len) {
                plain = rill__malloc(c->h.meta_len);
                RILL_CHECK_ALLOC(plain);
                crypt_part(plain, c->meta, c->h.meta_len, c->lk.krecv, c->lk.nrecv, 1);
                req.meta = plain;
            }
            c->discard = n > srv->opts.payload_limit(srv->opts.arg, &req);
            rill__free(plain);
        }
        c->stage = STAGE_RESERVE;
        srv->npaused++;
    }
    if (n > 0 && !c->discard) {
        bool big = n >= BIG_PAYLOAD;
        if (big && srv->buffered + n > srv->opts.max_buffered && srv->buffered > 0) {
            conn_interest(srv, c, EPOLLRDHUP); /* read nothing; a hang-up still frees it */
            return true;
        }
        c->payload = n <= SIZE_MAX ? rill__aligned_alloc(n) : NULL;
        if (!c->payload) {
            rill__log(RILL_LOG_WARNING, "server %s: cannot allocate %llu bytes for %s's request",
                      srv->address, (unsigned long long)n, c->peer);
            return false;
        }
        if (big) {
            c->reserved = n;
            srv->buffered += n;
            atomic_store(&srv->buffered_seen, srv->buffered);
        }
    }
    if (c->stage == STAGE_RESERVE) srv->npaused--;
    if (c->discard) {
        char msg[400];
        snprintf(msg, sizeof msg,
                 "dropping a %llu-byte payload from %s (%s): more than that request may carry",
                 (unsigned long long)n, c->peer, c->task[0] ? c->task : "no task");
        srv_refusal(srv, msg);
    }
    c->stage = STAGE_PAYLOAD;
    return true;
}

/* Frames waiting for memory look again (buffered went down). */
static void resume_paused(rill__tcp_server *srv)
{
    for (int i = 0; i < srv->nconns && srv->npaused > 0; i++) {
        conn *c = srv->conns[i];
        if (c->stage != STAGE_RESERVE || c->pending || c->writing) continue;
        if (srv->buffered + c->h.payload_len > srv->opts.max_buffered && srv->buffered > 0)
            continue;
        conn_interest(srv, c, EPOLLIN); /* the rest of the payload is unread: an event comes */
    }
}

static bool frame_done(rill__tcp_server *srv, conn *c)
{
    c->stage = STAGE_HEADER;
    c->hdr_got = c->meta_got = c->tag_got = 0;
    c->payload_got = 0;
    if (c->lk.on && !open_frame(&c->lk, c->tag, c->meta, c->h.meta_len, c->payload,
                                c->discard ? 0 : c->h.payload_len)) {
        rill__log(RILL_LOG_WARNING,
                  "server %s: closed %s (%s): a frame failed its MAC check (tampering, or not "
                  "the task it proved to be)",
                  srv->address, c->peer, c->task);
        return false;
    }
    bool released = c->reserved > 0;
    unreserve(srv, c);
    if (released && srv->npaused) resume_paused(srv);
    if (c->state == CONN_HANDSHAKE) return serve_handshake(srv, c);
    srv_idle(srv, c);
    if (c->h.type == RILL__MSG_HEARTBEAT)
        return conn_send(srv, c, RILL__MSG_HEARTBEAT_ACK, c->h.request_id, 0, NULL, 0, NULL, NULL);
    if (c->discard) {
        c->discard = false;
        char what[64];
        snprintf(what, sizeof what, "%s", c->h.type == RILL__MSG_PUSH ? "push" : "request");
        if (c->h.type == RILL__MSG_PUSH) return true; /* logged when it was refused */
        char msg[512];
        snprintf(msg, sizeof msg,
                 "server %s refused a %s with a %llu-byte payload: more than it accepts for "
                 "that request (set by the tensors its graphs receive, and max_payload)",
                 srv->address, what, (unsigned long long)c->h.payload_len);
        return conn_send_error(srv, c, c->h.request_id, RILL_RESOURCE_EXHAUSTED, msg);
    }
    return serve_request(srv, c);
}

static size_t take(conn *c, void *dst, size_t n)
{
    size_t k = c->rlen - c->rpos < n ? c->rlen - c->rpos : n;
    memcpy(dst, c->rbuf + c->rpos, k);
    c->rpos += k;
    return k;
}

/* Payload bytes that arrived: MAC'd as they pass; kept, or dropped for a discarded payload. */
static void payload_bytes(conn *c, const uint8_t *p, size_t k)
{
    if (c->lk.on) crypto_onetimeauth_update(&c->lk.mac, p, k);
    c->payload_got += k;
}

/* Reads and serves frames until the socket has no more bytes or a response is pending.
 * Returns false when the connection must close. */
static bool conn_pump(rill__tcp_server *srv, conn *c)
{
    /* A read that got less than it asked for drained the socket: the next bytes bring another
     * (level-triggered) event, so no read that would only say EAGAIN. */
    bool drained = false;
    for (;;) {
        if (c->writing || c->pending) return true;
        if (c->stage == STAGE_RESERVE) {
            if (!reserve_payload(srv, c)) return false;
            if (c->stage == STAGE_RESERVE) return true; /* still waiting for memory */
            conn_interest(srv, c, EPOLLIN);
        }
        if (c->stage == STAGE_PAYLOAD && c->payload_got == c->h.payload_len) {
            c->stage = STAGE_TAG;
            if (!c->lk.on) {
                if (!frame_done(srv, c)) return false;
                continue;
            }
        }
        bool have = c->rpos < c->rlen;
        if (!have && drained) return true;
        if (!have) {
            /* A big payload bypasses the buffer. */
            if (c->stage == STAGE_PAYLOAD && !c->discard &&
                c->h.payload_len - c->payload_got >= RBUF_SIZE) {
                size_t want = (size_t)(c->h.payload_len - c->payload_got);
                uint8_t *dst = c->payload + c->payload_got;
                ssize_t k = recv(c->fd, dst, want, MSG_DONTWAIT);
                if (k > 0) {
                    payload_bytes(c, dst, (size_t)k);
                    drained = (size_t)k < want;
                    continue;
                }
                if (k < 0 && errno == EINTR) continue;
                return k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
            }
            ssize_t k = recv(c->fd, c->rbuf, RBUF_SIZE, MSG_DONTWAIT);
            if (k > 0) {
                c->rpos = 0;
                c->rlen = (size_t)k;
                drained = (size_t)k < RBUF_SIZE;
                continue;
            }
            if (k < 0 && errno == EINTR) continue;
            return k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
        }
        switch (c->stage) {
        case STAGE_HEADER:
            if (c->hdr_got == 0 && c->state == CONN_READY)
                srv_set_deadline(srv, c, rill__now_seconds() + srv->opts.io_timeout_s, "I/O");
            c->hdr_got += take(c, c->hdr + c->hdr_got, sizeof c->hdr - c->hdr_got);
            if (c->hdr_got < sizeof c->hdr) break;
            if (!accept_header(srv, c)) return false;
            c->stage = STAGE_META;
            /* fall through */
        case STAGE_META:
            c->meta_got += take(c, c->meta + c->meta_got, c->h.meta_len - c->meta_got);
            if (c->meta_got < c->h.meta_len) break;
            if (!reserve_payload(srv, c)) return false;
            break; /* the loop goes on from the payload (or waits for memory) */
        case STAGE_PAYLOAD: {
            size_t want = (size_t)(c->h.payload_len - c->payload_got);
            size_t k = c->rlen - c->rpos < want ? c->rlen - c->rpos : want;
            const uint8_t *src = c->rbuf + c->rpos;
            if (!c->discard) memcpy(c->payload + c->payload_got, src, k);
            c->rpos += k;
            payload_bytes(c, c->discard ? src : c->payload + c->payload_got, k);
            break;
        }
        case STAGE_TAG:
            c->tag_got += take(c, c->tag + c->tag_got, sizeof c->tag - c->tag_got);
            if (c->tag_got == sizeof c->tag && !frame_done(srv, c)) return false;
            break;
        }
    }
}

/* A connection past max_connections: told why in an ERROR frame (its handshake reports it),
 * then closed; the refusals are logged, at most one line every 5 s. */
static void refuse_full(rill__tcp_server *srv, int fd, const struct sockaddr *sa, socklen_t len)
{
    char peer[128], why[256], msg[600];
    format_peer(sa, len, peer, sizeof peer);
    snprintf(why, sizeof why, "is full: %d connections open (max_connections %d); refused %s",
             srv->nconns, srv->opts.max_connections, peer);
    snprintf(msg, sizeof msg, "server %s %s", srv->address, why);
    uint8_t meta[600], raw[RILL__WIRE_HEADER_SIZE];
    size_t n = rill__error_meta_encode(RILL_UNAVAILABLE, msg, meta, sizeof meta);
    rill__frame_header h = {.version = RILL__WIRE_VERSION,
                            .type = RILL__MSG_ERROR,
                            .meta_len = (uint32_t)n};
    rill__frame_header_encode(&h, raw);
    struct iovec iov[2] = {{raw, sizeof raw}, {meta, n}};
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
    ssize_t w = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)w;
    close(fd);
    srv_refusal(srv, why);
}

static void srv_accept(rill__tcp_server *srv)
{
    for (;;) {
        struct sockaddr_storage sa;
        socklen_t len = sizeof sa;
        int fd =
            accept4(srv->listen_fd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if ((errno == EMFILE || errno == ENFILE) && srv->spare_fd >= 0) {
                /* Out of descriptors: accept with the spare one and close at once, so the
                 * listener does not spin on a connection it cannot take. */
                close(srv->spare_fd);
                fd = accept(srv->listen_fd, NULL, NULL);
                if (fd >= 0) close(fd);
                srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                continue;
            }
            return;
        }
        if (srv->nhandshaking >= srv->opts.max_handshaking) {
            /* Connections that have not proved anything yet make room for a new one: the
             * oldest goes, so a flood of them cannot keep a task of the cluster out. */
            conn *oldest = NULL;
            for (int i = 0; i < srv->nconns; i++)
                if (srv->conns[i]->state == CONN_HANDSHAKE &&
                    (!oldest || srv->conns[i]->born < oldest->born))
                    oldest = srv->conns[i];
            if (oldest) {
                srv_refusal(srv, "closed the oldest connection still in its handshake "
                                 "(max_handshaking) to take a new one");
                conn_free(srv, oldest);
            }
        }
        if (srv->nconns >= srv->opts.max_connections) {
            refuse_full(srv, fd, (struct sockaddr *)&sa, len);
            continue;
        }
        conn *c = rill__calloc(1, sizeof *c);
        RILL_CHECK_ALLOC(c);
        c->fd = fd;
        format_peer((struct sockaddr *)&sa, len, c->peer, sizeof c->peer);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->slot = srv->nconns++;
        c->born = rill__now_seconds();
        srv->nhandshaking++;
        srv->conns[c->slot] = c;
        atomic_fetch_add(&srv->open_conns, 1);
        struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &e) != 0) {
            conn_free(srv, c);
            continue;
        }
        srv_set_deadline(srv, c, c->born + srv->opts.handshake_timeout_s, "handshake");
        randombytes_buf(c->nonce, NONCE_BYTES);
        ensure_wmeta(c, 4 + NONCE_BYTES);
        rill__put_u32(c->wmeta, srv->secret_copy ? HS_SECRET | (srv->opts.encrypt ? HS_ENCRYPT : 0)
                                                 : 0u);
        memcpy(c->wmeta + 4, c->nonce, NONCE_BYTES);
        if (!conn_send(srv, c, RILL__MSG_CHALLENGE, 0, 4 + NONCE_BYTES, NULL, 0, NULL, NULL))
            conn_free(srv, c);
    }
}

static void srv_sweep(rill__tcp_server *srv, double now)
{
    double next = 0;
    for (int i = 0; i < srv->nconns;) {
        conn *c = srv->conns[i];
        if (c->deadline > 0 && c->deadline <= now) {
            rill__log(RILL_LOG_DEBUG, "server %s: closed %s (%s): %s deadline passed",
                      srv->address, c->peer, c->task[0] ? c->task : "no task",
                      c->waiting ? c->waiting : "I/O");
            conn_free(srv, c); /* moves the last connection into slot i */
            continue;
        }
        if (c->deadline > 0 && (next == 0 || c->deadline < next)) next = c->deadline;
        i++;
    }
    srv->next_deadline = next;
}

static void *srv_main(void *arg)
{
    rill__tcp_server *srv = arg;
    tl_server = srv;
    struct epoll_event ev[64];
    for (;;) {
        int ms = -1;
        double t = rill__now_seconds();
        if (srv->next_deadline > 0) {
            double left = srv->next_deadline - t;
            ms = left <= 0 ? 0 : (int)ceil(left * 1000);
        }
        /* Every few seconds the block cache gives back what no step took again. */
        if (t >= srv->next_trim) {
            rill__aligned_release_idle(TRIM_IDLE_S);
            srv->next_trim = t + TRIM_IDLE_S / 2;
        }
        int tms = (int)ceil((srv->next_trim - t) * 1000);
        if (ms < 0 || tms < ms) ms = tms < 0 ? 0 : tms;
        int n = epoll_wait(srv->epfd, ev, 64, ms);
        if (n < 0 && errno != EINTR) break;
        /* Deferred answers go out after the batch: sending one may free its connection, whose
         * own event may still be later in ev[]. */
        bool deferred_ready = false;
        for (int i = 0; i < n; i++) {
            void *p = ev[i].data.ptr;
            if (p == &srv->wake_fd) {
                if (deferred_ready || srv->done_here) srv_send_deferred(srv, deferred_ready);
                return NULL;
            }
            if (p == &srv->done_fd) {
                deferred_ready = true;
                continue;
            }
            if (p == &srv->listen_fd) {
                srv_accept(srv);
                continue;
            }
            conn *c = p;
            bool ok = true;
            if (c->pending) {
                pending_event(srv, c, ev[i].events);
                continue;
            }
            if (c->stage == STAGE_RESERVE && (ev[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
                conn_free(srv, c); /* hung up while waiting for memory */
                continue;
            }
            if (c->writing) {
                if (ev[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) ok = conn_flush(srv, c);
                if (ok && !c->writing) ok = conn_pump(srv, c);
            } else {
                ok = conn_pump(srv, c);
            }
            if (!ok) conn_free(srv, c);
        }
        if (deferred_ready) srv_send_deferred(srv, true);
        while (srv->done_here) srv_send_deferred(srv, false);
        if (srv->next_deadline > 0) {
            double now = rill__now_seconds();
            if (now >= srv->next_deadline) srv_sweep(srv, now);
        }
    }
    return NULL;
}

rill__tcp_server *rill__tcp_server_new(const char *address, const rill__tcp_options *opts,
                                       rill__tcp_handler handler, void *arg, rill_status *s)
{
    char host[256], port[16];
    if (!sodium_ready(s) || !split_address(address, host, sizeof host, port, sizeof port, s))
        return NULL;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | AI_PASSIVE};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Could not start server: cannot resolve %s: %s",
                        address, gai_strerror(gai));
        return NULL;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 1024) != 0) err = errno;
    }
    freeaddrinfo(res);
    if (err) {
        if (fd >= 0) close(fd);
        if (err == EADDRINUSE)
            rill_status_set(s, RILL_UNAVAILABLE,
                            "Could not start server: address %s is already in use", address);
        else
            rill_status_set(s, RILL_UNAVAILABLE, "Could not start server on %s: %s", address,
                            strerror(err));
        return NULL;
    }
    rill__tcp_server *srv = rill__calloc(1, sizeof *srv);
    RILL_CHECK_ALLOC(srv);
    srv->opts = resolve_options(opts);
    if (srv->opts.encrypt && !srv->opts.secret) {
        close(fd);
        rill__free(srv);
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Could not start server on %s: encryption needs a cluster secret", address);
        return NULL;
    }
    if (srv->opts.secret) {
        srv->secret_copy = rill__malloc(srv->opts.secret_len + 1);
        RILL_CHECK_ALLOC(srv->secret_copy);
        memcpy(srv->secret_copy, srv->opts.secret, srv->opts.secret_len);
        srv->opts.secret = srv->secret_copy;
        derive_key(srv->secret_copy, srv->opts.secret_len, srv->key);
    }
    srv->handler = handler;
    srv->arg = arg;
    srv->listen_fd = fd;
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &len);
    srv->port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                               : ((struct sockaddr_in *)&sa)->sin_port);
    if (strcmp(port, "0") == 0) /* name the port actually bound */
        snprintf(srv->address, sizeof srv->address, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host,
                 srv->port);
    else
        snprintf(srv->address, sizeof srv->address, "%s", address);
    srv->conns = rill__calloc((size_t)srv->opts.max_connections, sizeof *srv->conns);
    RILL_CHECK_ALLOC(srv->conns);
    srv->epfd = epoll_create1(EPOLL_CLOEXEC);
    srv->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    srv->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    pthread_mutex_init(&srv->done_mu, NULL);
    struct epoll_event ed = {.events = EPOLLIN, .data.ptr = &srv->done_fd};
    if (srv->done_fd >= 0) epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->done_fd, &ed);
    struct epoll_event el = {.events = EPOLLIN, .data.ptr = &srv->listen_fd};
    struct epoll_event ew = {.events = EPOLLIN, .data.ptr = &srv->wake_fd};
    if (srv->epfd < 0 || srv->wake_fd < 0 || epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &el) != 0 ||
        epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->wake_fd, &ew) != 0 ||
        pthread_create(&srv->thread, NULL, srv_main, srv) != 0) {
        rill_status_set(s, RILL_INTERNAL, "Could not start server on %s: %s", address,
                        strerror(errno));
        if (srv->epfd >= 0) close(srv->epfd);
        if (srv->wake_fd >= 0) close(srv->wake_fd);
        if (srv->spare_fd >= 0) close(srv->spare_fd);
        close(fd);
        rill__free(srv->secret_copy);
        rill__free(srv->conns);
        rill__free(srv);
        return NULL;
    }
    return srv;
}

int rill__tcp_server_port(const rill__tcp_server *srv)
{
    return srv->port;
}

int rill__tcp_server_connections(rill__tcp_server *srv)
{
    return atomic_load(&srv->open_conns);
}

uint64_t rill__tcp_server_buffered(rill__tcp_server *srv)
{
    return atomic_load(&srv->buffered_seen);
}

void rill__tcp_server_free(rill__tcp_server *srv)
{
    if (!srv) return;
    uint64_t one = 1;
    ssize_t w = write(srv->wake_fd, &one, sizeof one);
    (void)w;
    pthread_join(srv->thread, NULL);
    while (srv->nconns > 0) conn_free(srv, srv->conns[srv->nconns - 1]);
    for (rill__tcp_deferred *d = srv->done; d;) { /* finished but never sent */
        rill__tcp_deferred *next = d->next;
        deferred_free(d);
        d = next;
    }
    pthread_mutex_destroy(&srv->done_mu);
    if (srv->done_fd >= 0) close(srv->done_fd);
    close(srv->listen_fd);
    close(srv->epfd);
    close(srv->wake_fd);
    if (srv->spare_fd >= 0) close(srv->spare_fd);
    if (srv->secret_copy) {
        sodium_memzero(srv->secret_copy, srv->opts.secret_len);
        rill__free(srv->secret_copy);
    }
    sodium_memzero(srv->key, sizeof srv->key);
    rill__free(srv->conns);
    rill__free(srv);
}
