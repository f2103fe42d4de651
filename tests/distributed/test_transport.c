/* test_transport.c - the TCP transport over real sockets on 127.0.0.1: round trips small and
 * large, concurrent clients, the handshake with and without a secret, hostile bytes against a
 * live server, the handshake and I/O deadlines, the connection limit, port-in-use and restart,
 * and a peer process that crashes (SIGKILL) or hangs (SIGSTOP). Timing is only ever an upper
 * bound with a generous margin. */
#include "distributed/transport.h"

#include "core/core.h"
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
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

static void echo_handler(void *arg, rill__tcp_request *req, rill__tcp_response *resp)
{
    (void)arg;
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

/* A free loopback port that nothing listens on. */
static int dead_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(fd, (struct sockaddr *)&a, sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
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
    uint8_t ch[RILL__WIRE_HEADER_SIZE + 36], hs[RILL__WIRE_HEADER_SIZE + 4],
        ok[RILL__WIRE_HEADER_SIZE];
    rill__frame_header h = {.version = 1, .type = RILL__MSG_HANDSHAKE, .meta_len = 4};
    rill__frame_header_encode(&h, hs);
    rill__put_u32(hs + RILL__WIRE_HEADER_SIZE, 1);
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
        rill__frame_header h = {.version = 1, .type = RILL__MSG_REQUEST, .request_id = 1};
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
        .version = 1, .type = RILL__MSG_REQUEST, .request_id = 9, .meta_len = 8, .payload_len = 16};
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
            if (rill__rng_next(&rng) % 2) memcpy(buf, "RILL\x01", n < 5 ? n : 5);
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
        send(fd, "RILL\x01", 5, MSG_NOSIGNAL);
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
    snprintf(addr, sizeof addr, "127.0.0.1:%d", dead_port());
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
    TEST_MAIN_END();
}
