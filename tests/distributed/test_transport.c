/* test_transport.c - the TCP transport over real sockets on 127.0.0.1: round trips small and
 * large, concurrent clients, the handshake with and without a secret, hostile bytes against a
 * live server, the handshake and I/O deadlines, the connection limit, port-in-use and restart,
 * and a peer process that crashes (SIGKILL) or hangs (SIGSTOP). Timing is only ever an upper
 * bound with a generous margin. */
#include "distributed/transport.h"

#include "core/core.h"
#include "net.h"
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024 * 1024)

/* --- an echo server: the reply carries the request's meta and payload back ------------------ */

typedef struct held {
    void *p;
    uint64_t n;
} held;

static void release_held(void *arg)
{
    held *h = arg;
    rill__aligned_free(h->p, h->n);
    free(h);
}

static atomic_int served; /* requests the echo handler saw */

static void echo_handler(void *arg, rill__tcp_request *req, rill__tcp_response *resp)
{
    (void)arg;
    atomic_fetch_add(&served, 1);
    if (req->meta_len == 5 && memcmp(req->meta, "error", 5) == 0) {
        rill__tcp_response_set_error(resp, RILL_NOT_FOUND, "no variable named 'w' on this task");
        return;
    }
    rill__tcp_response_set_meta(resp, req->meta, req->meta_len);
    if (req->payload) {
        /* Keep the received buffer and send it back from where it landed: no copy. */
        held *h = malloc(sizeof *h);
        h->p = req->payload;
        h->n = req->payload_len;
        req->payload = NULL;
        struct iovec iov = {h->p, (size_t)h->n};
        rill__tcp_response_set_payload(resp, &iov, 1, release_held, h);
    }
}

static rill__tcp_server *start_server(const rill__tcp_options *o, char *addr, size_t cap)
{
    rill_status *s = rill_status_new();
    rill__tcp_server *srv = rill__tcp_server_new("127.0.0.1:0", o, echo_handler, NULL, s);
    if (!CHECK(srv != NULL))
        fprintf(stderr, "  %s\n", rill_status_message(s));
    else
        snprintf(addr, cap, "127.0.0.1:%d", rill__tcp_server_port(srv));
    rill_status_free(s);
    return srv;
}

static bool echo_ok(rill__channel *ch, const char *meta)
{
    rill_status *s = rill_status_new();
    rill__reply r = {0};
    bool ok = rill__channel_call(ch, RILL__MSG_REQUEST, meta, (uint32_t)strlen(meta), NULL, 0, &r,
                                 20, s) &&
              r.meta_len == strlen(meta) && memcmp(r.meta, meta, r.meta_len) == 0;
    if (!ok) fprintf(stderr, "  echo failed: %s\n", rill_status_message(s));
    rill_status_free(s);
    return ok;
}

static double now(void)
{
    return rill__now_seconds();
}

static int raw_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

static bool recv_exact(int fd, void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n) {
        ssize_t k = recv(fd, p, n, 0);
        if (k <= 0) return false;
        p += k, n -= (size_t)k;
    }
    return true;
}

/* Reads until EOF or error; true when the peer closed within the socket's 10 s timeout. */
static bool wait_closed(int fd)
{
    uint8_t buf[256];
    for (;;) {
        ssize_t k = recv(fd, buf, sizeof buf, 0);
        if (k == 0) return true;
        if (k < 0) return errno == ECONNRESET;
    }
}

/* A raw client that completes the no-secret handshake. */
static int raw_handshaked(int port)
{
    int fd = raw_connect(port);
    if (fd < 0) return -1;
    /* HANDSHAKE meta: version, flags, the client's nonce, cluster and run ids, an empty task
     * name; HANDSHAKE_OK's: flags and the server's run id. */
    uint8_t ch[RILL__WIRE_HEADER_SIZE + 36], hs[RILL__WIRE_HEADER_SIZE + 90] = {0},
        ok[RILL__WIRE_HEADER_SIZE + 20];
    rill__frame_header h = {.version = RILL__WIRE_VERSION, .type = RILL__MSG_HANDSHAKE, .meta_len = 90};
    rill__frame_header_encode(&h, hs);
    rill__put_u32(hs + RILL__WIRE_HEADER_SIZE, RILL__WIRE_VERSION);
    if (!recv_exact(fd, ch, sizeof ch) || send(fd, hs, sizeof hs, MSG_NOSIGNAL) != sizeof hs ||
        !recv_exact(fd, ok, sizeof ok) || ok[5] != RILL__MSG_HANDSHAKE_OK) {
        close(fd);
        return -1;
    }
    return fd;
}

/* --- tests ----------------------------------------------------------------------------------- */

static void test_roundtrip_small(void)
{
    char addr[64];
    rill__tcp_server *srv = start_server(NULL, addr, sizeof addr);
    if (!srv) return;
    rill_status *s = rill_status_new();
    rill__channel *ch = rill__tcp_connect(addr, NULL, 10, s);
    if (!CHECK(ch != NULL)) goto out;
    CHECK_EQ_STR(rill__channel_peer(ch), addr);
    char a[] = "abc", b[] = "defgh";
    struct iovec iov[2] = {{a, 3}, {b, 5}};
    for (int i = 0; i < 100; i++) {
        rill__reply r = {0};
        CHECK(rill__channel_call(ch, RILL__MSG_REQUEST, "meta", 4, iov, 2, &r, 10, s));
        CHECK_EQ_INT(r.type, RILL__MSG_RESPONSE);
        CHECK(r.meta_len == 4 && memcmp(r.meta, "meta", 4) == 0);
        CHECK(r.payload_len == 8 && r.payload_owned && memcmp(r.payload, "abcdefgh", 8) == 0);
        if (r.payload_owned) rill__aligned_free(r.payload, r.payload_len);
    }
    /* into the caller's buffer */
    char dst[16] = {0};
    rill__reply r = {.payload_dst = dst, .payload_cap = sizeof dst};
    CHECK(rill__channel_call(ch, RILL__MSG_REQUEST, NULL, 0, iov, 2, &r, 10, s));
    CHECK(r.payload == dst && !r.payload_owned && memcmp(dst, "abcdefgh", 8) == 0);
    /* empty request */
    CHECK(rill__channel_call(ch, RILL__MSG_REQUEST, NULL, 0, NULL, 0, &r, 10, s));
    CHECK(r.meta_len == 0 && r.payload_len == 0);
    CHECK(rill__channel_ping(ch, 10, s));
    /* a handler error comes back with its code; the channel stays usable */
    CHECK(!rill__channel_call(ch, RILL__MSG_REQUEST, "error", 5, NULL, 0, &r, 10, s));
    CHECK_EQ_INT(rill_status_code(s), RILL_NOT_FOUND);
    CHECK_STR_CONTAINS(rill_status_message(s), "no variable named 'w'");
    CHECK(echo_ok(ch, "after error"));
    /* misuse */
    CHECK(!rill__channel_call(ch, RILL__MSG_RESPONSE, NULL, 0, NULL, 0, &r, 10, s));
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);
    CHECK(echo_ok(ch, "still fine"));
    rill__channel_close(ch);
out:
    rill_status_free(s);
    rill__tcp_server_free(srv);
}

static void test_roundtrip_large(void)
{
    char addr[64];
    rill__tcp_server *srv = start_server(NULL, addr, sizeof addr);
    if (!srv) return;
    rill_status *s = rill_status_new();
    rill__channel *ch = rill__tcp_connect(addr, NULL, 10, s);
    size_t n = 64 * MIB;
    uint8_t *src = malloc(n), *dst = malloc(n);
    for (size_t i = 0; i < n; i++) src[i] = (uint8_t)(i * 2654435761u >> 13);
    if (!CHECK(ch != NULL)) goto out;
    for (int rep = 0; rep < 2; rep++) {
        memset(dst, 0, n);
        /* split in uneven pieces to exercise partial writes across iovecs */
        struct iovec iov[3] = {
            {src, 1000}, {src + 1000, n / 2}, {src + 1000 + n / 2, n / 2 - 1000}};
        rill__reply r = {.payload_dst = dst, .payload_cap = n};
        CHECK(rill__channel_call(ch, RILL__MSG_REQUEST, "big", 3, iov, 3, &r, 60, s));
        CHECK(r.payload == dst && r.payload_len == n);
        CHECK(memcmp(src, dst, n) == 0);
    }
    /* too big for the destination: the channel allocates */
    struct iovec iov = {src, n};
    rill__reply r = {.payload_dst = dst, .payload_cap = 10};
    CHECK(rill__channel_call(ch, RILL__MSG_REQUEST, NULL, 0, &iov, 1, &r, 60, s));
    CHECK(r.payload_owned && r.payload_len == n && memcmp(r.payload, src, n) == 0);
    if (r.payload_owned) rill__aligned_free(r.payload, r.payload_len);
    rill__channel_close(ch);
out:
    free(src);
    free(dst);
    rill_status_free(s);
    rill__tcp_server_free(srv);
}

typedef struct client_arg {
    const char *addr;
    int id, ok;
} client_arg;

static void *client_main(void *p)
{
    client_arg *a = p;
    rill_status *s = rill_status_new();
    rill__channel *ch = rill__tcp_connect(a->addr, NULL, 30, s);
    if (ch) {
        uint64_t buf[64], back[64];
        for (int i = 0; i < 300; i++) {
            for (int k = 0; k < 64; k++) buf[k] = (uint64_t)a->id << 32 | (uint64_t)(i * 64 + k);
            struct iovec iov = {buf, sizeof buf};
            rill__reply r = {.payload_dst = back, .payload_cap = sizeof back};
            char meta[32];
            int ml = snprintf(meta, sizeof meta, "c%d-%d", a->id, i);
            if (rill__channel_call(ch, RILL__MSG_REQUEST, meta, (uint32_t)ml, &iov, 1, &r, 30, s) &&
                r.meta_len == (uint32_t)ml && memcmp(r.meta, meta, (size_t)ml) == 0 &&
                r.payload_len == sizeof buf && memcmp(back, buf, sizeof buf) == 0)
                a->ok++;
        }
        rill__channel_close(ch);
    }
    rill_status_free(s);
    return NULL;
}

static void test_concurrent_clients(void)
{
    char addr[64];
    rill__tcp_server *srv = start_server(NULL, addr, sizeof addr);
    if (!srv) return;
    enum { N = 16 };
    pthread_t t[N];
    client_arg a[N];
    for (int i = 0; i < N; i++) {
        a[i] = (client_arg){addr, i, 0};
        pthread_create(&t[i], NULL, client_main, &a[i]);
    }
    int total = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        total += a[i].ok;
    }
    CHECK_EQ_INT(total, N * 300);
    rill__tcp_server_free(srv);
}

static void test_secret(void)
{
    char addr[64];
    rill__tcp_options o = {.secret = "correct horse", .secret_len = 13};
    rill__tcp_server *srv = start_server(&o, addr, sizeof addr);
    if (!srv) return;
    rill_status *s = rill_status_new();
    rill__channel *ch = rill__tcp_connect(addr, &o, 10, s);
    CHECK(ch != NULL);
    if (ch) CHECK(echo_ok(ch, "authenticated"));

    rill__tcp_options wrong = {.secret = "battery staple", .secret_len = 14};
    CHECK(rill__tcp_connect(addr, &wrong, 10, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_UNAUTHENTICATED);
    CHECK_STR_CONTAINS(rill_status_message(s), addr);
    CHECK_STR_CONTAINS(rill_status_message(s), "cluster secret");

    rill__tcp_options prefix = {.secret = "correct horse", .secret_len = 12};
    CHECK(rill__tcp_connect(addr, &prefix, 10, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_UNAUTHENTICATED);

    CHECK(rill__tcp_connect(addr, NULL, 10, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_UNAUTHENTICATED);
    CHECK_STR_CONTAINS(rill_status_message(s), "requires a cluster secret");

    /* a raw client that skips the proof and sends a request is dropped, never served */
    int fd = raw_connect(rill__tcp_server_port(srv));
    if (CHECK(fd >= 0)) {
        uint8_t frame[RILL__WIRE_HEADER_SIZE];
        rill__frame_header h = {.version = RILL__WIRE_VERSION, .type = RILL__MSG_REQUEST, .request_id = 1};
        rill__frame_header_encode(&h, frame);
        send(fd, frame, sizeof frame, MSG_NOSIGNAL);
        CHECK(wait_closed(fd));
        close(fd);
    }
    if (ch) CHECK(echo_ok(ch, "still served"));
    rill__channel_close(ch);
    rill_status_free(s);
    rill__tcp_server_free(srv);
}

/* Thousands of hostile connections; a good client is served throughout. */
static void test_hostile_bytes(void)
{
    char addr[64];
    rill__tcp_options o = {.max_payload = 64 * MIB, .handshake_timeout_s = 5, .io_timeout_s = 5};
    rill__tcp_server *srv = start_server(&o, addr, sizeof addr);
    if (!srv) return;
    int port = rill__tcp_server_port(srv);
    rill_status *s = rill_status_new();
    rill__channel *good = rill__tcp_connect(addr, NULL, 10, s);
    if (!CHECK(good != NULL)) goto out;
    rill__rng rng;
    rill__rng_seed(&rng, 777);
    uint8_t valid[RILL__WIRE_HEADER_SIZE + 8 + 16];
    rill__frame_header vh = {
        .version = RILL__WIRE_VERSION, .type = RILL__MSG_REQUEST, .request_id = 9, .meta_len = 8, .payload_len = 16};
    rill__frame_header_encode(&vh, valid);
    memcpy(valid + RILL__WIRE_HEADER_SIZE, "metameta0123456789abcdef", 24);
    int served_ok = 0, rounds = 0, connected = 0;
    for (int it = 0; it < 3000; it++) {
        int kind = it % 6;
        int fd = kind >= 3 ? raw_handshaked(port) : raw_connect(port);
        if (fd < 0) continue;
        connected++;
        uint8_t buf[600];
        size_t n;
        if (kind == 0) { /* 16 bytes of 0xFF */
            memset(buf, 0xFF, 16);
            n = 16;
        } else if (kind == 1 || kind == 4) { /* random bytes */
            n = 1 + rill__rng_next(&rng) % sizeof buf;
            for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)rill__rng_next(&rng);
            if (rill__rng_next(&rng) % 2) memcpy(buf, "RILL\x02", n < 5 ? n : 5);
        } else if (kind == 2 || kind == 5) { /* a mutated valid frame, maybe truncated */
            memcpy(buf, valid, sizeof valid);
            int flips = 1 + (int)(rill__rng_next(&rng) % 3);
            for (int f = 0; f < flips; f++)
                buf[rill__rng_next(&rng) % RILL__WIRE_HEADER_SIZE] ^=
                    (uint8_t)(1u << (rill__rng_next(&rng) % 8));
            n = rill__rng_next(&rng) % 2 ? sizeof valid : rill__rng_next(&rng) % sizeof valid;
        } else { /* kind 3: a truncated header after a valid handshake */
            memcpy(buf, valid, sizeof valid);
            n = rill__rng_next(&rng) % RILL__WIRE_HEADER_SIZE;
        }
        send(fd, buf, n, MSG_NOSIGNAL);
        close(fd);
        if (it % 100 == 99) {
            rounds++;
            served_ok += echo_ok(good, "still here");
        }
    }
    CHECK(connected > 2900);
    CHECK_EQ_INT(served_ok, rounds);
    /* a fresh client is still accepted and served */
    rill__channel *fresh = rill__tcp_connect(addr, NULL, 10, s);
    if (CHECK(fresh != NULL)) CHECK(echo_ok(fresh, "fresh"));
    rill__channel_close(fresh);
    /* and the hostile connections are all gone again */
    double t0 = now();
    while (rill__tcp_server_connections(srv) > 1 && now() - t0 < 20) usleep(10000);
    CHECK_EQ_INT(rill__tcp_server_connections(srv), 1);
    rill__channel_close(good);
out:
    rill_status_free(s);
    rill__tcp_server_free(srv);
}

static void test_deadlines_close_silent_connections(void)
{
    char addr[64];
    rill__tcp_options o = {.handshake_timeout_s = 1.0, .io_timeout_s = 0.5};
    rill__tcp_server *srv = start_server(&o, addr, sizeof addr);
    if (!srv) return;
    int port = rill__tcp_server_port(srv);
    /* silent after connecting: closed at the handshake deadline */
    int fd = raw_connect(port);
    if (CHECK(fd >= 0)) {
        double t0 = now();
        CHECK(wait_closed(fd));
        CHECK(now() - t0 < 9);
        close(fd);
    }
    /* half a header after the handshake: closed at the I/O deadline */
    fd = raw_handshaked(port);
    if (CHECK(fd >= 0)) {
        send(fd, "RILL\x02", 5, MSG_NOSIGNAL);
        double t0 = now();
        CHECK(wait_closed(fd));
        CHECK(now() - t0 < 9);
        close(fd);
    }
    /* an authenticated connection idle between frames is kept */
    rill_status *s = rill_status_new();
    rill__channel *ch = rill__tcp_connect(addr, NULL, 10, s);
    if (CHECK(ch != NULL)) {
        usleep(1500 * 1000);
        CHECK(echo_ok(ch, "idle but alive"));
    }
    rill__channel_close(ch);
    rill_status_free(s);
    rill__tcp_server_free(srv);
}

static void test_connection_limit(void)
{
    char addr[64];
    rill__tcp_options o = {.max_connections = 4};
    rill__tcp_server *srv = start_server(&o, addr, sizeof addr);
    if (!srv) return;
    rill_status *s = rill_status_new();
    rill__channel *ch[4];
    for (int i = 0; i < 4; i++) {
        ch[i] = rill__tcp_connect(addr, NULL, 10, s);
        CHECK(ch[i] != NULL);
    }
    rill__channel *extra = rill__tcp_connect(addr, NULL, 10, s);
    CHECK(extra == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_UNAVAILABLE);
    CHECK_STR_CONTAINS(rill_status_message(s), addr);
    /* It says why: a full server was silent, and a restarted worker found only "did not come
     * up" while the ps was up. */
    CHECK_STR_CONTAINS(rill_status_message(s), "is full: 4 connections open (max_connections 4)");
    for (int i = 0; i < 4; i++)
        if (ch[i]) CHECK(echo_ok(ch[i], "within the limit"));
    rill__channel_close(ch[0]);
    double t0 = now();
    while (rill__tcp_server_connections(srv) > 3 && now() - t0 < 20) usleep(5000);
    extra = rill__tcp_connect(addr, NULL, 10, s);
    if (CHECK(extra != NULL)) CHECK(echo_ok(extra, "room again"));
    rill__channel_close(extra);
    for (int i = 1; i < 4; i++) rill__channel_close(ch[i]);
    rill_status_free(s);
    rill__tcp_server_free(srv);
}

static void test_port_in_use_and_restart(void)
{
    char addr[64];
    rill__tcp_server *srv = start_server(NULL, addr, sizeof addr);
    if (!srv) return;
    rill_status *s = rill_status_new();
    CHECK(rill__tcp_server_new(addr, NULL, echo_handler, NULL, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_UNAVAILABLE);
    char want[128];
    snprintf(want, sizeof want, "Could not start server: address %s is already in use", addr);
    CHECK_STR_CONTAINS(rill_status_message(s), want);

    rill__channel *ch = rill__tcp_connect(addr, NULL, 10, s);
    CHECK(ch != NULL && echo_ok(ch, "before restart"));
    /* the server closes first, so its side of the connection sits in TIME_WAIT */
    rill__tcp_server_free(srv);
    srv = rill__tcp_server_new(addr, NULL, echo_handler, NULL, s);
    if (!CHECK(srv != NULL)) fprintf(stderr, "  %s\n", rill_status_message(s));
    if (ch) {
        rill__reply r = {0};
        CHECK(!rill__channel_call(ch, RILL__MSG_REQUEST, "x", 1, NULL, 0, &r, 10, s));
        CHECK_EQ_INT(rill_status_code(s), RILL_UNAVAILABLE);
        CHECK_STR_CONTAINS(rill_status_message(s), addr);
        /* broken for good: reconnect */
        CHECK(!rill__channel_call(ch, RILL__MSG_REQUEST, "x", 1, NULL, 0, &r, 10, s));
        CHECK_STR_CONTAINS(rill_status_message(s), "reconnect");
    }
    rill__channel_close(ch);
    ch = rill__tcp_connect(addr, NULL, 10, s);
    if (CHECK(ch != NULL)) CHECK(echo_ok(ch, "after restart"));
    rill__channel_close(ch);
    rill_status_free(s);
    rill__tcp_server_free(srv);
}

static void test_refused_and_silent_listener(void)
{
    rill_status *s = rill_status_new();
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", test_free_port());
    CHECK(rill__tcp_connect(addr, NULL, 10, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_UNAVAILABLE);
    CHECK_STR_CONTAINS(rill_status_message(s), addr);
    CHECK_STR_CONTAINS(rill_status_message(s), "refused");

    CHECK(rill__tcp_connect("no-port-here", NULL, 10, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_INVALID_ARGUMENT);

    /* a listener that never speaks: the kernel accepts, nobody answers */
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(lfd, (struct sockaddr *)&a, sizeof a);
    listen(lfd, 8);
    socklen_t len = sizeof a;
    getsockname(lfd, (struct sockaddr *)&a, &len);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(a.sin_port));
    double t0 = now();
    CHECK(rill__tcp_connect(addr, NULL, 0.5, s) == NULL);
    CHECK(now() - t0 < 9);
    CHECK_EQ_INT(rill_status_code(s), RILL_DEADLINE_EXCEEDED);
    char want[128];
    snprintf(want, sizeof want, "peer %s did not answer within 0.5 s", addr);
    CHECK_STR_CONTAINS(rill_status_message(s), want);
    close(lfd);
    rill_status_free(s);
}

/* A server in a child process, so it can be stopped and killed. Returns its pid. */
static pid_t fork_server(int *port)
{
    int p[2];
    if (pipe(p) != 0) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        rill_status *s = rill_status_new();
        rill__tcp_server *srv = rill__tcp_server_new("127.0.0.1:0", NULL, echo_handler, NULL, s);
        int pt = srv ? rill__tcp_server_port(srv) : -1;
        if (write(p[1], &pt, sizeof pt) != sizeof pt) _exit(1);
        for (;;) pause();
    }
    close(p[1]);
    *port = -1;
    if (read(p[0], port, sizeof *port) != sizeof *port) *port = -1;
    close(p[0]);
    return pid;
}

static void test_peer_hangs_then_crashes(void)
{
    int port;
    pid_t pid = fork_server(&port);
    if (!CHECK(pid > 0 && port > 0)) return;
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    rill_status *s = rill_status_new();
    rill__channel *a = rill__tcp_connect(addr, NULL, 10, s);
    rill__channel *b = rill__tcp_connect(addr, NULL, 10, s);
    if (!CHECK(a && b)) goto out;
    CHECK(echo_ok(a, "alive"));
    CHECK(echo_ok(b, "alive"));

    /* hung: alive but silent */
    kill(pid, SIGSTOP);
    int st = 0;
    /* SIGSTOP lands asynchronously: wait until the child is really stopped */
    CHECK(waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st));
    rill__reply r = {0};
    double t0 = now();
    CHECK(!rill__channel_call(a, RILL__MSG_REQUEST, "x", 1, NULL, 0, &r, 1, s));
    double took = now() - t0;
    CHECK_EQ_INT(rill_status_code(s), RILL_DEADLINE_EXCEEDED);
    char want[128];
    snprintf(want, sizeof want, "peer %s did not answer within 1 s", addr);
    CHECK_STR_CONTAINS(rill_status_message(s), want);
    CHECK(took >= 0.9 && took < 9);
    t0 = now();
    CHECK(!rill__channel_ping(b, 0.5, s));
    CHECK_EQ_INT(rill_status_code(s), RILL_DEADLINE_EXCEEDED);
    CHECK(now() - t0 < 9);
    CHECK(rill__tcp_connect(addr, NULL, 0.5, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_DEADLINE_EXCEEDED);
    kill(pid, SIGCONT);

    /* crashed: a fresh channel to the live server, then SIGKILL */
    rill__channel *c = rill__tcp_connect(addr, NULL, 10, s);
    if (CHECK(c != NULL)) CHECK(echo_ok(c, "alive again"));
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    pid = -1;
    if (c) {
        t0 = now();
        CHECK(!rill__channel_call(c, RILL__MSG_REQUEST, "x", 1, NULL, 0, &r, 10, s));
        CHECK_EQ_INT(rill_status_code(s), RILL_UNAVAILABLE);
        CHECK_STR_CONTAINS(rill_status_message(s), addr);
        CHECK(now() - t0 < 9);
    }
    rill__channel_close(c);
    CHECK(rill__tcp_connect(addr, NULL, 10, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_UNAVAILABLE);
    CHECK_STR_CONTAINS(rill_status_message(s), addr);
out:
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    rill__channel_close(a);
    rill__channel_close(b);
    rill_status_free(s);
}

/* --- deferred responses ---------------------------------------------------------------------
 * A handler that defers ("hold:<k>") parks its request in token k; the test finishes it from
 * other threads. Each token counts its hang-up, release and payload-done callbacks, so "exactly
 * once" is checked per request. "now:<k>" defers and finishes inside the handler itself;
 * "sleep:<ms>" keeps the server thread busy inline, so that events pile up behind it. */

#define MAX_HELD 256

typedef struct dtoken {
    rill__tcp_deferred *d; /* set by the handler, under the context's lock */
    atomic_int hangups, releases, payload_done, hangup_after_release;
    uint8_t *bytes; /* the payload the answer is sent from */
    size_t nbytes;
} dtoken;

typedef struct dctx {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    dtoken tok[MAX_HELD];
    atomic_int sleeping;
} dctx;

static void tok_hangup(void *arg)
{
    dtoken *t = arg;
    if (atomic_load(&t->releases) > 0) atomic_fetch_add(&t->hangup_after_release, 1);
    atomic_fetch_add(&t->hangups, 1);
}

static void tok_release(void *arg)
{
    atomic_fetch_add(&((dtoken *)arg)->releases, 1);
}

static void tok_payload_done(void *arg)
{
    atomic_fetch_add(&((dtoken *)arg)->payload_done, 1);
}

static uint8_t pattern(int k, size_t i)
{
    return (uint8_t)(k * 131 + (int)(i * 7) + (int)(i >> 12));
}

/* Fills token k's deferred response with meta "answer:<k>" and n pattern bytes in two pieces
 * (done counted), and finishes it. Any thread. */
static void answer(dtoken *t, int k, size_t n)
{
    rill__tcp_response *r = rill__tcp_deferred_response(t->d);
    char meta[32];
    int ml = snprintf(meta, sizeof meta, "answer:%d", k);
    rill__tcp_response_set_meta(r, meta, (uint32_t)ml);
    free(t->bytes);
    t->bytes = malloc(n ? n : 1);
    t->nbytes = n;
    for (size_t i = 0; i < n; i++) t->bytes[i] = pattern(k, i);
    struct iovec iov[2] = {{t->bytes, n / 3}, {t->bytes + n / 3, n - n / 3}};
    rill__tcp_response_set_payload(r, iov, 2, tok_payload_done, t);
    rill__tcp_deferred_finish(t->d);
}

static void deferring_handler(void *arg, rill__tcp_request *req, rill__tcp_response *resp)
{
    dctx *x = arg;
    char m[32] = {0};
    memcpy(m, req->meta, req->meta_len < sizeof m - 1 ? req->meta_len : sizeof m - 1);
    int k, ms;
    if (sscanf(m, "hold:%d", &k) == 1 && k >= 0 && k < MAX_HELD) {
        rill__tcp_deferred *d = rill__tcp_response_defer(resp, tok_hangup, tok_release, &x->tok[k]);
        pthread_mutex_lock(&x->mu);
        x->tok[k].d = d;
        pthread_cond_broadcast(&x->cv);
        pthread_mutex_unlock(&x->mu);
        return;
    }
    if (sscanf(m, "now:%d", &k) == 1 && k >= 0 && k < MAX_HELD) {
        x->tok[k].d = rill__tcp_response_defer(resp, tok_hangup, tok_release, &x->tok[k]);
        answer(&x->tok[k], k, 1000);
        return;
    }
    if (sscanf(m, "sleep:%d", &ms) == 1) {
        atomic_store(&x->sleeping, 1);
        usleep((useconds_t)ms * 1000);
        rill__tcp_response_set_meta(resp, "slept", 5);
        return;
    }
    echo_handler(NULL, req, resp);
}

static dctx *dctx_new(void)
{
    dctx *x = calloc(1, sizeof *x);
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    return x;
}

static void dctx_free(dctx *x)
{
    for (int i = 0; i < MAX_HELD; i++) free(x->tok[i].bytes);
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    free(x);
}

static rill__tcp_server *start_deferring(dctx *x, char *addr, size_t cap)
{
    rill_status *s = rill_status_new();
    rill__tcp_server *srv = rill__tcp_server_new("127.0.0.1:0", NULL, deferring_handler, x, s);
    if (!CHECK(srv != NULL))
        fprintf(stderr, "  %s\n", rill_status_message(s));
    else
        snprintf(addr, cap, "127.0.0.1:%d", rill__tcp_server_port(srv));
    rill_status_free(s);
    return srv;
}

/* Token k's deferred request, once the handler parked it (at most 20 s); NULL if it never came. */
static rill__tcp_deferred *wait_held(dctx *x, int k)
{
    double t_end = now() + 20;
    pthread_mutex_lock(&x->mu);
    while (!x->tok[k].d && now() < t_end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&x->cv, &x->mu, &ts);
    }
    rill__tcp_deferred *d = x->tok[k].d;
    pthread_mutex_unlock(&x->mu);
    return d;
}

/* Waits (at most 20 s) until *v reaches want; true when it did. */
static bool wait_count(atomic_int *v, int want)
{
    double t_end = now() + 20;
    while (atomic_load(v) < want && now() < t_end) usleep(1000);
    return atomic_load(v) >= want;
}

/* A call of "hold:<k>" whose answer must be "answer:<k>" with n pattern bytes. */
static bool call_held(rill__channel *ch, int k, size_t n, double deadline, rill_status *s)
{
    char meta[32];
    int ml = snprintf(meta, sizeof meta, "hold:%d", k);
    rill__reply r = {0};
    if (!rill__channel_call(ch, RILL__MSG_REQUEST, meta, (uint32_t)ml, NULL, 0, &r, deadline, s))
        return false;
    char want[32];
    int wl = snprintf(want, sizeof want, "answer:%d", k);
    bool ok =
        r.meta_len == (uint32_t)wl && memcmp(r.meta, want, (size_t)wl) == 0 && r.payload_len == n;
    for (size_t i = 0; ok && i < n; i++) ok = ((uint8_t *)r.payload)[i] == pattern(k, i);
    if (r.payload_owned) rill__aligned_free(r.payload, r.payload_len);
    if (!ok) rill_status_set(s, RILL_DATA_LOSS, "wrong answer to hold:%d", k);
    return ok;
}

/* A raw client (handshake done) that has sent one REQUEST with meta m; -1 on failure. */
static int raw_request(int port, const char *m)
{
    int fd = raw_handshaked(port);
    if (fd < 0) return -1;
    uint8_t frame[RILL__WIRE_HEADER_SIZE + 64];
    size_t ml = strlen(m);
    rill__frame_header h = {
        .version = RILL__WIRE_VERSION, .type = RILL__MSG_REQUEST, .request_id = 1, .meta_len = (uint32_t)ml};
    rill__frame_header_encode(&h, frame);
    memcpy(frame + RILL__WIRE_HEADER_SIZE, m, ml);
    if (send(fd, frame, RILL__WIRE_HEADER_SIZE + ml, MSG_NOSIGNAL) !=
        (ssize_t)(RILL__WIRE_HEADER_SIZE + ml)) {
        close(fd);
        return -1;
    }
    return fd;
}

typedef struct held_call {
    rill__channel *ch;
    int k;
    size_t n;
    double deadline;
    bool ok;
    rill_code code;
    char msg[256];
} held_call;

static void *held_call_main(void *p)
{
    held_call *c = p;
    rill_status *s = rill_status_new();
    c->ok = call_held(c->ch, c->k, c->n, c->deadline, s);
    c->code = rill_status_code(s);
    snprintf(c->msg, sizeof c->msg, "%s", rill_status_message(s));
    rill_status_free(s);
    return NULL;
}

typedef struct finisher {
    dctx *x;
    int k;
    size_t n;
    int delay_ms;
} finisher;

static void *finisher_main(void *p)
{
    finisher *f = p;
    if (wait_held(f->x, f->k)) {
        usleep((useconds_t)f->delay_ms * 1000);
        answer(&f->x->tok[f->k], f->k, f->n);
    }
    return NULL;
}

/* (a) Answered from another thread after a delay: the right meta and payload, the payload's
 * done callback and on_release once each, no hang-up; the connection then serves again. */
static void test_deferred_answer(void)
{
    dctx *x = dctx_new();
    char addr[64];
    rill__tcp_server *srv = start_deferring(x, addr, sizeof addr);
    if (!srv) goto out;
    rill_status *s = rill_status_new();
    rill__channel *ch = rill__tcp_connect(addr, NULL, 10, s);
    if (CHECK(ch != NULL)) {
        size_t sizes[3] = {100, 0, 8 * MIB}; /* small, empty, big enough to need EPOLLOUT */
        for (int k = 0; k < 3; k++) {
            finisher f = {x, k, sizes[k], 50};
            pthread_t th;
            pthread_create(&th, NULL, finisher_main, &f);
            if (!CHECK(call_held(ch, k, sizes[k], 20, s)))
                fprintf(stderr, "  hold:%d: %s\n", k, rill_status_message(s));
            pthread_join(th, NULL);
            CHECK(echo_ok(ch, "served again after a deferred answer"));
        }
        /* deferred and finished inside the handler, on the server thread itself */
        rill__reply r = {0};
        CHECK(rill__channel_call(ch, RILL__MSG_REQUEST, "now:3", 5, NULL, 0, &r, 20, s));
        CHECK(r.meta_len == 8 && memcmp(r.meta, "answer:3", 8) == 0 && r.payload_len == 1000);
        if (r.payload_owned) rill__aligned_free(r.payload, r.payload_len);
        CHECK(rill__channel_ping(ch, 10, s));
        for (int k = 0; k < 4; k++) {
            CHECK(wait_count(&x->tok[k].releases, 1));
            CHECK(wait_count(&x->tok[k].payload_done, 1));
        }
        usleep(20 * 1000); /* a second call of either would show now */
        for (int k = 0; k < 4; k++) {
            CHECK_EQ_INT(atomic_load(&x->tok[k].releases), 1);
            CHECK_EQ_INT(atomic_load(&x->tok[k].payload_done), 1);
            CHECK_EQ_INT(atomic_load(&x->tok[k].hangups), 0);
        }
    }
    rill__channel_close(ch);
    rill_status_free(s);
    rill__tcp_server_free(srv);
out:
    dctx_free(x);
}

/* (b) While one connection's request is deferred, every other connection is served inline, and
 * new ones are accepted. */
static void test_deferred_others_served(void)
{
    dctx *x = dctx_new();
    char addr[64];
    rill__tcp_server *srv = start_deferring(x, addr, sizeof addr);
    if (!srv) goto out;
    rill_status *s = rill_status_new();
    rill__channel *a = rill__tcp_connect(addr, NULL, 10, s),
                  *b = rill__tcp_connect(addr, NULL, 10, s);
    if (CHECK(a && b)) {
        held_call hc = {.ch = a, .k = 0, .n = 4096, .deadline = 30};
        pthread_t th;
        pthread_create(&th, NULL, held_call_main, &hc);
        if (CHECK(wait_held(x, 0) != NULL)) {
            int ok = 0;
            for (int i = 0; i < 50; i++) ok += echo_ok(b, "while a is deferred");
            CHECK_EQ_INT(ok, 50);
            CHECK(rill__channel_ping(b, 10, s));
            rill__channel *c = rill__tcp_connect(addr, NULL, 10, s);
            if (CHECK(c != NULL)) CHECK(echo_ok(c, "a new connection meanwhile"));
            rill__channel_close(c);
            CHECK_EQ_INT(atomic_load(&x->tok[0].releases), 0);
            answer(&x->tok[0], 0, 4096);
        }
        pthread_join(th, NULL);
        CHECK(hc.ok);
        if (!hc.ok) fprintf(stderr, "  %s\n", hc.msg);
        CHECK(echo_ok(a, "a is served again"));
        CHECK(wait_count(&x->tok[0].releases, 1));
    }
    rill__channel_close(a);
    rill__channel_close(b);
    rill_status_free(s);
    rill__tcp_server_free(srv);
out:
    dctx_free(x);
}

/* (c) A deferred error arrives as the remote code and message; a payload set before the error
 * is released exactly once; the channel stays usable. */
static void test_deferred_error(void)
{
    dctx *x = dctx_new();
    char addr[64];
    rill__tcp_server *srv = start_deferring(x, addr, sizeof addr);
    if (!srv) goto out;
    rill_status *s = rill_status_new();
    rill__channel *ch = rill__tcp_connect(addr, NULL, 10, s);
    if (CHECK(ch != NULL)) {
        held_call hc = {.ch = ch, .k = 0, .deadline = 30};
        pthread_t th;
        pthread_create(&th, NULL, held_call_main, &hc);
        rill__tcp_deferred *d = wait_held(x, 0);
        if (CHECK(d != NULL)) {
            rill__tcp_response *r = rill__tcp_deferred_response(d);
            static char bytes[64];
            struct iovec iov = {bytes, sizeof bytes};
            rill__tcp_response_set_meta(r, "dropped", 7);
            rill__tcp_response_set_payload(r, &iov, 1, tok_payload_done, &x->tok[0]);
            rill__tcp_response_set_error(r, RILL_NOT_FOUND, "deferred: no queue named '%s'", "q7");
            rill__tcp_deferred_finish(d);
        }
        pthread_join(th, NULL);
        CHECK(!hc.ok);
        CHECK_EQ_INT(hc.code, RILL_NOT_FOUND);
        CHECK_STR_CONTAINS(hc.msg, "deferred: no queue named 'q7'");
        CHECK(echo_ok(ch, "after a deferred error"));
        CHECK(wait_count(&x->tok[0].releases, 1));
        CHECK(wait_count(&x->tok[0].payload_done, 1));
        usleep(20 * 1000);
        CHECK_EQ_INT(atomic_load(&x->tok[0].payload_done), 1);
        CHECK_EQ_INT(atomic_load(&x->tok[0].releases), 1);
        CHECK_EQ_INT(atomic_load(&x->tok[0].hangups), 0);
    }
    rill__channel_close(ch);
    rill_status_free(s);
    rill__tcp_server_free(srv);
out:
    dctx_free(x);
}

/* (d) The client goes away while its request is deferred: on_hangup once on the server, the
 * connection is closed, the server keeps serving, and the later finish is dropped (payload done
 * and on_release once each, no second hang-up). */
static void test_deferred_hangup(void)
{
    dctx *x = dctx_new();
    char addr[64];
    rill__tcp_server *srv = start_deferring(x, addr, sizeof addr);
    if (!srv) goto out;
    int port = rill__tcp_server_port(srv);
    rill_status *s = rill_status_new();
    /* a channel whose call times out and which is then closed */
    rill__channel *ch = rill__tcp_connect(addr, NULL, 10, s);
    if (CHECK(ch != NULL)) {
        CHECK(!call_held(ch, 0, 0, 0.3, s));
        CHECK_EQ_INT(rill_status_code(s), RILL_DEADLINE_EXCEEDED);
        rill__channel_close(ch);
        CHECK(wait_count(&x->tok[0].hangups, 1));
        CHECK_EQ_INT(atomic_load(&x->tok[0].releases), 0);
    }
    /* a raw client that sends its request and closes at once */
    int fd = raw_request(port, "hold:1");
    if (CHECK(fd >= 0) && CHECK(wait_held(x, 1) != NULL)) {
        close(fd);
        CHECK(wait_count(&x->tok[1].hangups, 1));
    } else if (fd >= 0) {
        close(fd);
    }
    double t0 = now();
    while (rill__tcp_server_connections(srv) > 0 && now() - t0 < 20) usleep(5000);
    CHECK_EQ_INT(rill__tcp_server_connections(srv), 0);
    /* the server is healthy */
    rill__channel *c2 = rill__tcp_connect(addr, NULL, 10, s);
    if (CHECK(c2 != NULL)) CHECK(echo_ok(c2, "after hang-ups"));
    /* the late answers go nowhere */
    for (int k = 0; k < 2; k++) {
        if (!x->tok[k].d) continue;
        answer(&x->tok[k], k, k == 0 ? 2 * MIB : 10);
        CHECK(wait_count(&x->tok[k].releases, 1));
        CHECK(wait_count(&x->tok[k].payload_done, 1));
    }
    if (c2) CHECK(echo_ok(c2, "after the dropped answers"));
    usleep(20 * 1000);
    for (int k = 0; k < 2; k++) {
        CHECK_EQ_INT(atomic_load(&x->tok[k].hangups), 1);
        CHECK_EQ_INT(atomic_load(&x->tok[k].releases), 1);
        CHECK_EQ_INT(atomic_load(&x->tok[k].payload_done), 1);
        CHECK_EQ_INT(atomic_load(&x->tok[k].hangup_after_release), 0);
    }
    rill__channel_close(c2);
    rill_status_free(s);
    rill__tcp_server_free(srv);
out:
    dctx_free(x);
}

/* (e) Many deferred requests on many connections at once, finished in random order by several
 * threads, round after round. */
enum { MANY_CONNS = 24, MANY_ROUNDS = 4 };

static size_t many_size(int k)
{
    return k % 7 == 0 ? (size_t)MIB + (size_t)k : (size_t)(k * 37 % 5000);
}

typedef struct many_client {
    const char *addr;
    int i, ok;
    char msg[256];
} many_client;

static void *many_client_main(void *p)
{
    many_client *c = p;
    rill_status *s = rill_status_new();
    rill__channel *ch = rill__tcp_connect(c->addr, NULL, 30, s);
    for (int r = 0; ch && r < MANY_ROUNDS; r++) {
        int k = r * MANY_CONNS + c->i;
        if (call_held(ch, k, many_size(k), 60, s))
            c->ok++;
        else
            snprintf(c->msg, sizeof c->msg, "%s", rill_status_message(s));
    }
    if (!ch) snprintf(c->msg, sizeof c->msg, "%s", rill_status_message(s));
    rill__channel_close(ch);
    rill_status_free(s);
    return NULL;
}

typedef struct many_finisher {
    dctx *x;
    const int *order;
    int from, step, n;
} many_finisher;

static void *many_finisher_main(void *p)
{
    many_finisher *f = p;
    for (int j = f->from; j < f->n; j += f->step) {
        int k = f->order[j];
        answer(&f->x->tok[k], k, many_size(k));
    }
    return NULL;
}

static void test_deferred_many(void)
{
    dctx *x = dctx_new();
    char addr[64];
    rill__tcp_server *srv = start_deferring(x, addr, sizeof addr);
    if (!srv) goto out;
    pthread_t th[MANY_CONNS];
    many_client c[MANY_CONNS];
    for (int i = 0; i < MANY_CONNS; i++) {
        c[i] = (many_client){.addr = addr, .i = i};
        pthread_create(&th[i], NULL, many_client_main, &c[i]);
    }
    rill__rng rng;
    rill__rng_seed(&rng, 4242);
    bool all_held = true;
    for (int r = 0; r < MANY_ROUNDS && all_held; r++) {
        int order[MANY_CONNS];
        for (int i = 0; i < MANY_CONNS; i++) {
            order[i] = r * MANY_CONNS + i;
            if (!wait_held(x, order[i])) all_held = false;
        }
        if (!CHECK(all_held)) break;
        for (int i = MANY_CONNS - 1; i > 0; i--) {
            int j = (int)(rill__rng_next(&rng) % (uint64_t)(i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        enum { NF = 4 };
        pthread_t ft[NF];
        many_finisher mf[NF];
        for (int f = 0; f < NF; f++) {
            mf[f] = (many_finisher){x, order, f, NF, MANY_CONNS};
            pthread_create(&ft[f], NULL, many_finisher_main, &mf[f]);
        }
        for (int f = 0; f < NF; f++) pthread_join(ft[f], NULL);
    }
    int total = 0;
    for (int i = 0; i < MANY_CONNS; i++) {
        pthread_join(th[i], NULL);
        total += c[i].ok;
        if (c[i].ok != MANY_ROUNDS) fprintf(stderr, "  client %d: %s\n", i, c[i].msg);
    }
    CHECK_EQ_INT(total, MANY_CONNS * MANY_ROUNDS);
    int released = 0, done = 0, hung = 0;
    for (int k = 0; k < MANY_CONNS * MANY_ROUNDS; k++) {
        wait_count(&x->tok[k].releases, 1);
        wait_count(&x->tok[k].payload_done, 1);
    }
    for (int k = 0; k < MANY_CONNS * MANY_ROUNDS; k++) {
        released += atomic_load(&x->tok[k].releases) == 1;
        done += atomic_load(&x->tok[k].payload_done) == 1;
        hung += atomic_load(&x->tok[k].hangups);
    }
    CHECK_EQ_INT(released, MANY_CONNS * MANY_ROUNDS);
    CHECK_EQ_INT(done, MANY_CONNS * MANY_ROUNDS);
    CHECK_EQ_INT(hung, 0);
    rill__tcp_server_free(srv);
out:
    dctx_free(x);
}

/* (f) Freeing the server once every deferred request was finished: answers finished but not yet
 * sent, answers already sent, and answers whose client had hung up are each released exactly
 * once, by the time rill__tcp_server_free returns. */
static void test_deferred_then_server_free(void)
{
    dctx *x = dctx_new();
    char addr[64];
    rill__tcp_server *srv = start_deferring(x, addr, sizeof addr);
    if (!srv) goto out;
    int port = rill__tcp_server_port(srv);
    rill_status *s = rill_status_new();
    /* 0: answered and received */
    rill__channel *ch = rill__tcp_connect(addr, NULL, 10, s);
    if (CHECK(ch != NULL)) {
        finisher f = {x, 0, 300, 0};
        pthread_t th;
        pthread_create(&th, NULL, finisher_main, &f);
        CHECK(call_held(ch, 0, 300, 20, s));
        pthread_join(th, NULL);
    }
    /* 1: the client hung up, then the answer came */
    int fd1 = raw_request(port, "hold:1");
    if (CHECK(fd1 >= 0) && CHECK(wait_held(x, 1) != NULL)) {
        close(fd1);
        fd1 = -1;
        CHECK(wait_count(&x->tok[1].hangups, 1));
        answer(&x->tok[1], 1, 50);
    }
    if (fd1 >= 0) close(fd1);
    /* 2, 3: finished just before the free, maybe never sent (one of them big) */
    int fd2 = raw_request(port, "hold:2"), fd3 = raw_request(port, "hold:3");
    bool h2 = fd2 >= 0 && wait_held(x, 2), h3 = fd3 >= 0 && wait_held(x, 3);
    CHECK(h2 && h3);
    if (h2) answer(&x->tok[2], 2, 4 * MIB);
    if (h3) answer(&x->tok[3], 3, 10);
    rill__tcp_server_free(srv);
    for (int k = 0; k < 4; k++) {
        if (!x->tok[k].d) continue;
        CHECK_EQ_INT(atomic_load(&x->tok[k].releases), 1);
        CHECK_EQ_INT(atomic_load(&x->tok[k].payload_done), 1);
        CHECK_EQ_INT(atomic_load(&x->tok[k].hangups), k == 1);
    }
    if (fd2 >= 0) close(fd2);
    if (fd3 >= 0) close(fd3);
    rill__channel_close(ch);
    rill_status_free(s);
out:
    dctx_free(x);
}

/* An answer finished while its client hangs up, both noticed by the server thread in one batch
 * of events (it was busy serving an inline request meanwhile): no use of a freed connection,
 * release once, and the server goes on serving. Repeated with the two events in both orders. */
typedef struct sleeper {
    const char *addr;
    bool ok;
} sleeper;

static void *sleeper_main(void *p)
{
    sleeper *z = p;
    rill_status *s = rill_status_new();
    rill__channel *ch = rill__tcp_connect(z->addr, NULL, 10, s);
    rill__reply r = {0};
    z->ok = ch && rill__channel_call(ch, RILL__MSG_REQUEST, "sleep:300", 9, NULL, 0, &r, 20, s) &&
            r.meta_len == 5 && memcmp(r.meta, "slept", 5) == 0;
    rill__channel_close(ch);
    rill_status_free(s);
    return NULL;
}

static void test_deferred_finish_races_hangup(void)
{
    dctx *x = dctx_new();
    char addr[64];
    rill__tcp_server *srv = start_deferring(x, addr, sizeof addr);
    if (!srv) goto out;
    int port = rill__tcp_server_port(srv);
    for (int round = 0; round < 6; round++) {
        int k = round;
        char m[32];
        snprintf(m, sizeof m, "hold:%d", k);
        int fd = raw_request(port, m);
        if (!CHECK(fd >= 0) || !CHECK(wait_held(x, k) != NULL)) {
            if (fd >= 0) close(fd);
            continue;
        }
        atomic_store(&x->sleeping, 0);
        sleeper z = {addr, false};
        pthread_t th;
        pthread_create(&th, NULL, sleeper_main, &z);
        double t0 = now();
        while (!atomic_load(&x->sleeping) && now() - t0 < 20) usleep(1000);
        /* the server thread sleeps in the handler: both events wait for it */
        if (round % 2 == 0) {
            answer(&x->tok[k], k, 100);
            close(fd);
        } else {
            close(fd);
            usleep(10 * 1000);
            answer(&x->tok[k], k, 100);
        }
        pthread_join(th, NULL);
        CHECK(z.ok);
        CHECK(wait_count(&x->tok[k].releases, 1));
        CHECK_EQ_INT(atomic_load(&x->tok[k].payload_done), 1);
        CHECK(atomic_load(&x->tok[k].hangups) <= 1);
        CHECK_EQ_INT(atomic_load(&x->tok[k].hangup_after_release), 0);
    }
    rill_status *s = rill_status_new();
    rill__channel *ch = rill__tcp_connect(addr, NULL, 10, s);
    if (CHECK(ch != NULL)) CHECK(echo_ok(ch, "after the races"));
    rill__channel_close(ch);
    rill_status_free(s);
    rill__tcp_server_free(srv);
out:
    dctx_free(x);
}


/* --- trust: issue 13 ------------------------------------------------------------------------ */

/* A TCP proxy between a client and a server that records what the client sends and can flip
 * one byte of it (at offset flip_at, counted from the client's first byte; -1: none). */
typedef struct proxy {
    int listen_fd, port, target_port;
    long flip_at;
    uint8_t *rec; /* the client's bytes, as sent (before any flip) */
    size_t nrec, cap;
    pthread_t th;
} proxy;

static void *proxy_main(void *arg)
{
    proxy *p = arg;
    int c = accept(p->listen_fd, NULL, NULL);
    int s = c >= 0 ? raw_connect(p->target_port) : -1;
    long off = 0;
    while (c >= 0 && s >= 0) {
        struct pollfd f[2] = {{.fd = c, .events = POLLIN}, {.fd = s, .events = POLLIN}};
        if (poll(f, 2, 10000) <= 0) break;
        uint8_t buf[65536];
        if (f[0].revents) {
            ssize_t k = recv(c, buf, sizeof buf, 0);
            if (k <= 0) break;
            if (p->nrec + (size_t)k <= p->cap) memcpy(p->rec + p->nrec, buf, (size_t)k);
            p->nrec += (size_t)k;
            if (p->flip_at >= off && p->flip_at < off + k) buf[p->flip_at - off] ^= 0x10;
            off += k;
            if (send(s, buf, (size_t)k, MSG_NOSIGNAL) != k) break;
        }
        if (f[1].revents) {
            ssize_t k = recv(s, buf, sizeof buf, 0);
            if (k <= 0) break;
            if (send(c, buf, (size_t)k, MSG_NOSIGNAL) != k) break;
        }
    }
    if (c >= 0) close(c);
    if (s >= 0) close(s);
    return NULL;
}

static bool proxy_start(proxy *p, int target_port, long flip_at)
{
    memset(p, 0, sizeof *p);
    p->target_port = target_port;
    p->flip_at = flip_at;
    p->cap = 1 << 20;
    p->rec = malloc(p->cap);
    p->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(p->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(p->listen_fd, 4) != 0 ||
        getsockname(p->listen_fd, (struct sockaddr *)&a, &len) != 0)
        return false;
    p->port = ntohs(a.sin_port);
    return pthread_create(&p->th, NULL, proxy_main, p) == 0;
}

/* Stops the proxy; what it recorded stays until free(p->rec). */
static void proxy_stop(proxy *p)
{
    shutdown(p->listen_fd, SHUT_RDWR);
    close(p->listen_fd);
    pthread_join(p->th, NULL);
}

static bool contains(const uint8_t *hay, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(hay + i, needle, k) == 0) return true;
    return false;
}

/* Both ends prove the secret: a member refuses an impostor server (one without the secret, or
 * with another) on its peer's address before it sends any request. */
static void test_server_proves_itself(void)
{
    char addr[64];
    rill__tcp_options member = {.secret = "correct horse battery staple", .secret_len = 28};
    rill__tcp_options impostor = {0};
    rill__tcp_server *srv = start_server(&impostor, addr, sizeof addr);
    if (!srv) return;
    rill_status *s = rill_status_new();
    int before = atomic_load(&served);
    CHECK(rill__tcp_connect(addr, &member, 10, s) == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_UNAUTHENTICATED);
    CHECK_STR_CONTAINS(rill_status_message(s), "did not prove it knows the cluster secret");
    CHECK_STR_CONTAINS(rill_status_message(s), addr);
    rill__tcp_server_free(srv);
    rill__tcp_options other = {.secret = "another secret of many characters", .secret_len = 33};
    srv = start_server(&other, addr, sizeof addr);
    if (srv) {
        CHECK(rill__tcp_connect(addr, &member, 10, s) == NULL);
        CHECK_EQ_INT(rill_status_code(s), RILL_UNAUTHENTICATED);
    }
    CHECK_EQ_INT(atomic_load(&served), before); /* nothing was asked of either */
    rill__tcp_server_free(srv);
    rill_status_free(s);
}

/* A recorded handshake (and the requests after it) replayed on a new connection is refused
 * before anything is served: the server's nonce differs each time. */
static void test_replayed_handshake(void)
{
    char addr[64];
    rill__tcp_options o = {.secret = "correct horse battery staple", .secret_len = 28};
    rill__tcp_server *srv = start_server(&o, addr, sizeof addr);
    if (!srv) return;
    proxy p;
    rill_status *s = rill_status_new();
    if (CHECK(proxy_start(&p, rill__tcp_server_port(srv), -1))) {
        char via[64];
        snprintf(via, sizeof via, "127.0.0.1:%d", p.port);
        rill__channel *ch = rill__tcp_connect(via, &o, 10, s);
        if (CHECK(ch != NULL)) CHECK(echo_ok(ch, "recorded request"));
        rill__channel_close(ch);
        proxy_stop(&p);
        int before = atomic_load(&served);
        int fd = raw_connect(rill__tcp_server_port(srv));
        uint8_t challenge[RILL__WIRE_HEADER_SIZE + 36];
        if (CHECK(fd >= 0) && CHECK(recv_exact(fd, challenge, sizeof challenge))) {
            send(fd, p.rec, p.nrec, MSG_NOSIGNAL);
            uint8_t h[RILL__WIRE_HEADER_SIZE];
            rill__frame_header fh;
            CHECK(recv_exact(fd, h, sizeof h) && rill__frame_header_decode(h, 1 << 20, &fh, s) &&
                  fh.type == RILL__MSG_ERROR);
            CHECK(wait_closed(fd));
        }
        if (fd >= 0) close(fd);
        CHECK_EQ_INT(atomic_load(&served), before);
        free(p.rec);
    }
    rill_status_free(s);
    rill__tcp_server_free(srv);
}

/* After the handshake every frame carries a MAC: a byte changed in flight (a hijacked
 * connection) closes the connection, and the request is not served. With encryption the bytes
 * on the wire do not show the meta, and round trips small and large still work. */
static void test_frames_authenticated(void)
{
    char addr[64];
    for (int enc = 0; enc < 2; enc++) {
        rill__tcp_options o = {.secret = "correct horse battery staple", .secret_len = 28,
                               .encrypt = enc == 1};
        rill__tcp_server *srv = start_server(&o, addr, sizeof addr);
        if (!srv) return;
        rill_status *s = rill_status_new();
        /* The client's handshake: header, 90 bytes of meta, its 32-byte proof. */
        long hs = RILL__WIRE_HEADER_SIZE + 90 + 32;
        proxy p;
        if (CHECK(proxy_start(&p, rill__tcp_server_port(srv), hs + RILL__WIRE_HEADER_SIZE + 3))) {
            char via[64];
            snprintf(via, sizeof via, "127.0.0.1:%d", p.port);
            int before = atomic_load(&served);
            rill__channel *ch = rill__tcp_connect(via, &o, 10, s);
            if (CHECK(ch != NULL)) {
                rill__reply r = {0};
                CHECK(!rill__channel_call(ch, RILL__MSG_REQUEST, "tampered", 8, NULL, 0, &r, 10, s));
                CHECK_EQ_INT(rill_status_code(s), RILL_UNAVAILABLE); /* the server hung up */
            }
            rill__channel_close(ch);
            proxy_stop(&p);
            free(p.rec);
            CHECK_EQ_INT(atomic_load(&served), before);
        }
        /* Untampered: served; the meta is visible on the wire only without encryption. */
        if (CHECK(proxy_start(&p, rill__tcp_server_port(srv), -1))) {
            char via[64];
            snprintf(via, sizeof via, "127.0.0.1:%d", p.port);
            rill__channel *ch = rill__tcp_connect(via, &o, 10, s);
            if (CHECK(ch != NULL)) {
                CHECK(echo_ok(ch, "a secret-looking meta"));
                size_t n = 3 * MIB + 5;
                uint8_t *big = malloc(n);
                for (size_t i = 0; i < n; i++) big[i] = (uint8_t)(i * 7 + 1);
                struct iovec iov = {big, n};
                rill__reply r = {0};
                CHECK(rill__channel_call(ch, RILL__MSG_REQUEST, "big", 3, &iov, 1, &r, 20, s));
                CHECK(r.payload_len == n && memcmp(r.payload, big, n) == 0);
                if (r.payload_owned) rill__aligned_free(r.payload, r.payload_len);
                free(big);
            }
            rill__channel_close(ch);
            proxy_stop(&p);
            CHECK(contains(p.rec, p.nrec < p.cap ? p.nrec : p.cap, "a secret-looking meta") == !enc);
            free(p.rec);
        }
        rill_status_free(s);
        rill__tcp_server_free(srv);
    }
}

/* Bounded resources per peer: connections idle past idle_timeout_s are closed; one client task
 * holds at most max_per_task connections; connections that never finish their handshake cannot
 * keep a real client out (the oldest makes room). */
static void test_bounded_connections(void)
{
    char addr[64];
    rill__tcp_options o = {.idle_timeout_s = 0.5, .max_per_task = 3, .max_handshaking = 4,
                           .handshake_timeout_s = 30};
    rill__tcp_server *srv = start_server(&o, addr, sizeof addr);
    if (!srv) return;
    rill_status *s = rill_status_new();
    rill__tcp_options me = {0};
    snprintf(me.identity.task, sizeof me.identity.task, "/job:worker/replica:0/task:1");
    rill__channel *ch[4];
    for (int i = 0; i < 3; i++) CHECK((ch[i] = rill__tcp_connect(addr, &me, 10, s)) != NULL);
    ch[3] = rill__tcp_connect(addr, &me, 10, s);
    CHECK(ch[3] == NULL);
    CHECK_EQ_INT(rill_status_code(s), RILL_RESOURCE_EXHAUSTED);
    CHECK_STR_CONTAINS(rill_status_message(s), "already holds 3 connections");
    /* Idle past the deadline: closed by the server (a pool never uses such a one). */
    double t0 = now();
    while (rill__tcp_server_connections(srv) > 0 && now() - t0 < 20) usleep(20000);
    CHECK_EQ_INT(rill__tcp_server_connections(srv), 0);
    for (int i = 0; i < 3; i++) rill__channel_close(ch[i]);
    /* Ten silent connections mid-handshake; a client still gets in, again and again. */
    int fds[10];
    for (int i = 0; i < 10; i++) fds[i] = raw_connect(rill__tcp_server_port(srv));
    for (int k = 0; k < 3; k++) {
        rill__channel *c = rill__tcp_connect(addr, &me, 10, s);
        if (CHECK(c != NULL)) CHECK(echo_ok(c, "in despite the silent ones"));
        rill__channel_close(c);
    }
    for (int i = 0; i < 10; i++)
        if (fds[i] >= 0) close(fds[i]);
    rill_status_free(s);
    rill__tcp_server_free(srv);
}

static uint64_t limit_1k(void *arg, const rill__tcp_request *req)
{
    (void)arg;
    return req->meta_len == 5 && memcmp(req->meta, "large", 5) == 0 ? UINT64_MAX : 1024;
}

/* Payloads: one over the request's limit is read and dropped, never stored or served, and
 * answered with an error that says so (the connection goes on); frames announced and not sent
 * reserve at most max_buffered between them: the next waits, unread, until one is done. */
static void test_bounded_payloads(void)
{
    char addr[64];
    rill__tcp_options o = {.payload_limit = limit_1k, .max_buffered = 48 * MIB,
                           .io_timeout_s = 30};
    rill__tcp_server *srv = start_server(&o, addr, sizeof addr);
    if (!srv) return;
    rill_status *s = rill_status_new();
    rill__channel *ch = rill__tcp_connect(addr, NULL, 10, s);
    if (CHECK(ch != NULL)) {
        int before = atomic_load(&served);
        size_t n = 2 * MIB;
        uint8_t *big = calloc(1, n);
        struct iovec iov = {big, n};
        rill__reply r = {0};
        CHECK(!rill__channel_call(ch, RILL__MSG_REQUEST, "small", 5, &iov, 1, &r, 20, s));
        CHECK_EQ_INT(rill_status_code(s), RILL_RESOURCE_EXHAUSTED);
        CHECK_STR_CONTAINS(rill_status_message(s), "2097152-byte payload");
        CHECK_EQ_INT(atomic_load(&served), before);
        CHECK(echo_ok(ch, "the connection goes on"));
        free(big);
    }
    /* Two raw clients announce 40 MiB each and send a little: only one is given memory. */
    int fd[2];
    for (int i = 0; i < 2; i++) {
        fd[i] = raw_handshaked(rill__tcp_server_port(srv));
        uint8_t f[RILL__WIRE_HEADER_SIZE + 5 + 4096] = {0};
        rill__frame_header h = {.version = RILL__WIRE_VERSION, .type = RILL__MSG_REQUEST,
                                .request_id = 1, .meta_len = 5, .payload_len = 40 * MIB};
        rill__frame_header_encode(&h, f);
        memcpy(f + RILL__WIRE_HEADER_SIZE, "large", 5);
        CHECK(fd[i] >= 0 && send(fd[i], f, sizeof f, MSG_NOSIGNAL) == (ssize_t)sizeof f);
    }
    double t0 = now();
    while (rill__tcp_server_buffered(srv) == 0 && now() - t0 < 10) usleep(5000);
    usleep(100000);
    CHECK(rill__tcp_server_buffered(srv) == 40 * MIB); /* not 80 */
    close(fd[0]);
    t0 = now();
    while (rill__tcp_server_buffered(srv) != 0 && now() - t0 < 10) usleep(5000);
    close(fd[1]);
    t0 = now();
    while (rill__tcp_server_buffered(srv) != 0 && now() - t0 < 10) usleep(5000);
    CHECK(rill__tcp_server_buffered(srv) == 0);
    if (ch) CHECK(echo_ok(ch, "still served"));
    rill__channel_close(ch);
    rill_status_free(s);
    rill__tcp_server_free(srv);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    /* fork before this process has any threads */
    test_peer_hangs_then_crashes();
    test_refused_and_silent_listener();
    test_roundtrip_small();
    test_roundtrip_large();
    test_concurrent_clients();
    test_secret();
    test_deadlines_close_silent_connections();
    test_connection_limit();
    test_port_in_use_and_restart();
    test_hostile_bytes();
    test_deferred_answer();
    test_deferred_others_served();
    test_deferred_error();
    test_deferred_hangup();
    test_deferred_many();
    test_deferred_then_server_free();
    test_deferred_finish_races_hangup();
    test_server_proves_itself();
    test_replayed_handshake();
    test_frames_authenticated();
    test_bounded_connections();
    test_bounded_payloads();
    TEST_MAIN_END();
}
