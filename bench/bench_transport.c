/* bench_transport.c - rill's TCP transport against raw TCP, measured in the same run on
 * 127.0.0.1 with TCP_NODELAY on both sides:
 *   - round-trip latency of a small request (8-byte meta) through a rill channel and server,
 *     vs a blocking 8-byte ping-pong between two plain sockets;
 *   - bandwidth of 64 MiB payloads: rill push (request payload), pull (response payload into
 *     the caller's buffer) and push+pull, vs a raw 64 MiB write/read with a 1-byte ack;
 *   - each for plain frames, authenticated frames (a cluster secret: a Poly1305 MAC per frame)
 *     and encrypted ones (ChaCha20 too), so the cost of each is a ratio in the same run.
 * Usage: bench_transport [round_trips] [reps_64MiB]   (defaults 20000 and 10; ~10-20 s). */
#include "distributed/transport.h"

#include "core/core.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BIG ((size_t)64 << 20)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static void nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static bool full(int fd, void *buf, size_t n, bool rd)
{
    uint8_t *p = buf;
    while (n) {
        ssize_t k = rd ? recv(fd, p, n, 0) : send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) return false;
        p += k, n -= (size_t)k;
    }
    return true;
}

/* --- raw TCP peer: mode 0 echoes 8-byte pings; mode 1 reads 64 MiB messages and acks ----- */
typedef struct raw_peer {
    int lfd, mode, count;
    uint8_t *buf;
} raw_peer;

static void *raw_main(void *arg)
{
    raw_peer *p = arg;
    int fd = accept(p->lfd, NULL, NULL);
    nodelay(fd);
    uint8_t b[8];
    for (int i = 0; i < p->count; i++) {
        if (p->mode == 0) {
            if (!full(fd, b, 8, true) || !full(fd, b, 8, false)) break;
        } else {
            if (!full(fd, p->buf, BIG, true) || !full(fd, b, 1, false)) break;
        }
    }
    close(fd);
    return NULL;
}

static int raw_pair(raw_peer *p, pthread_t *t)
{
    p->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(p->lfd, (struct sockaddr *)&a, sizeof a);
    listen(p->lfd, 4);
    socklen_t len = sizeof a;
    getsockname(p->lfd, (struct sockaddr *)&a, &len);
    pthread_create(t, NULL, raw_main, p);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    connect(fd, (struct sockaddr *)&a, sizeof a);
    nodelay(fd);
    return fd;
}

/* --- rill server: "pull" answers with the 64 MiB buffer, anything else with the meta ------ */
static uint8_t *g_pull_src;

static void handler(void *arg, rill__tcp_request *req, rill__tcp_response *resp)
{
    (void)arg;
    if (req->meta_len == 4 && memcmp(req->meta, "pull", 4) == 0) {
        struct iovec iov = {g_pull_src, BIG};
        rill__tcp_response_set_payload(resp, &iov, 1, NULL, NULL);
        return;
    }
    rill__tcp_response_set_meta(resp, req->meta, req->meta_len);
}

int main(int argc, char **argv)
{
    int rtts = argc > 1 ? atoi(argv[1]) : 20000, reps = argc > 2 ? atoi(argv[2]) : 10;
    if (rtts < 100) rtts = 100;
    if (reps < 2) reps = 2;
    signal(SIGPIPE, SIG_IGN);
    double *lat = malloc(sizeof(double) * (size_t)rtts);
    uint8_t *src = rill__aligned_alloc(BIG), *dst = rill__aligned_alloc(BIG);
    g_pull_src = src;
    memset(src, 0x5A, BIG);
    memset(dst, 0, BIG);
    int warm = 1000;

    /* raw ping-pong */
    raw_peer rp = {.mode = 0, .count = rtts + warm};
    pthread_t rt;
    int fd = raw_pair(&rp, &rt);
    uint8_t b[8] = {0};
    for (int i = 0; i < rtts + warm; i++) {
        double t0 = rill__now_seconds();
        full(fd, b, 8, false);
        full(fd, b, 8, true);
        if (i >= warm) lat[i - warm] = rill__now_seconds() - t0;
    }
    double raw_rtt = median(lat, rtts) * 1e6;
    close(fd);
    pthread_join(rt, NULL);
    close(rp.lfd);

    /* raw 64 MiB */
    raw_peer bp = {.mode = 1, .count = reps + 1, .buf = dst};
    fd = raw_pair(&bp, &rt);
    double raw_best = 1e9, raw_sum = 0;
    for (int i = 0; i < reps + 1; i++) {
        double t0 = rill__now_seconds();
        full(fd, src, BIG, false);
        full(fd, b, 1, true);
        double t = rill__now_seconds() - t0;
        if (i == 0) continue; /* first touch of the receive buffer */
        raw_sum += t;
        if (t < raw_best) raw_best = t;
    }
    close(fd);
    pthread_join(rt, NULL);
    close(bp.lfd);
    double raw_gbps = (double)BIG * reps / raw_sum / 1e9;

    /* rill three ways: plain frames, authenticated (a secret: per-frame MACs), encrypted */
    static const char *const modes[] = {"plain", "mac", "encrypted"};
    double plain_rtt = 0, plain_pp = 0;
    for (int m = 0; m < 3; m++) {
        rill__tcp_options o = {.secret = m ? "bench secret of thirty-two chars!" : NULL,
                               .secret_len = m ? 33 : 0, .encrypt = m == 2};
        rill_status *s = rill_status_new();
        rill__tcp_server *srv = rill__tcp_server_new("127.0.0.1:0", &o, handler, NULL, s);
        if (!srv) {
            fprintf(stderr, "bench_transport: %s\n", rill_status_message(s));
            return 1;
        }
        char addr[64];
        snprintf(addr, sizeof addr, "127.0.0.1:%d", rill__tcp_server_port(srv));
        rill__channel *ch = rill__tcp_connect(addr, &o, 10, s);
        if (!ch) {
            fprintf(stderr, "bench_transport: %s\n", rill_status_message(s));
            return 1;
        }
        for (int i = 0; i < rtts + warm; i++) {
            rill__reply r = {0};
            double t0 = rill__now_seconds();
            if (!rill__channel_call(ch, RILL__MSG_REQUEST, "8bytes!!", 8, NULL, 0, &r, 10, s)) {
                fprintf(stderr, "bench_transport: %s\n", rill_status_message(s));
                return 1;
            }
            if (i >= warm) lat[i - warm] = rill__now_seconds() - t0;
        }
        double rill_rtt = median(lat, rtts) * 1e6;
        if (m == 0) plain_rtt = rill_rtt;
        printf("%s frames: round trip, 8 bytes: rill %.1f us, raw TCP %.1f us, ratio %.2fx "
               "(%.2fx plain)\n",
               modes[m], rill_rtt, raw_rtt, rill_rtt / raw_rtt, rill_rtt / plain_rtt);
        printf("RESULT transport=rill frames=%s op=rtt_8B us=%.2f\n", modes[m], rill_rtt);
        printf("RESULT transport=rill frames=%s op=rtt_ratio_vs_raw x=%.3f\n", modes[m],
               rill_rtt / raw_rtt);
        double push_sum = 0, pull_sum = 0;
        for (int i = 0; i < reps + 1; i++) {
            struct iovec iov = {src, BIG};
            rill__reply r = {0};
            double t0 = rill__now_seconds();
            bool ok = rill__channel_call(ch, RILL__MSG_REQUEST, "push", 4, &iov, 1, &r, 60, s);
            double t1 = rill__now_seconds();
            rill__reply q = {.payload_dst = dst, .payload_cap = BIG};
            ok = ok && rill__channel_call(ch, RILL__MSG_REQUEST, "pull", 4, NULL, 0, &q, 60, s);
            double t2 = rill__now_seconds();
            if (!ok) {
                fprintf(stderr, "bench_transport: %s\n", rill_status_message(s));
                return 1;
            }
            if (i == 0) continue;
            push_sum += t1 - t0;
            pull_sum += t2 - t1;
        }
        double push_gbps = (double)BIG * reps / push_sum / 1e9;
        double pull_gbps = (double)BIG * reps / pull_sum / 1e9;
        double pp_gbps = 2.0 * BIG * reps / (push_sum + pull_sum) / 1e9;
        if (m == 0) plain_pp = pp_gbps;
        printf("%s frames, 64 MiB: raw TCP %.2f GB/s; rill push %.2f GB/s (%.0f%%), pull %.2f "
               "GB/s (%.0f%%), push+pull %.2f GB/s (%.0f%% of raw, %.0f%% of plain)\n",
               modes[m], raw_gbps, push_gbps, 100 * push_gbps / raw_gbps, pull_gbps,
               100 * pull_gbps / raw_gbps, pp_gbps, 100 * pp_gbps / raw_gbps,
               100 * pp_gbps / plain_pp);
        printf("RESULT transport=rill frames=%s op=push_64MiB gbps=%.3f\n", modes[m], push_gbps);
        printf("RESULT transport=rill frames=%s op=pull_64MiB gbps=%.3f\n", modes[m], pull_gbps);
        printf("RESULT transport=rill frames=%s op=push_pull_64MiB gbps=%.3f fraction_of_raw=%.3f "
               "fraction_of_plain=%.3f\n",
               modes[m], pp_gbps, pp_gbps / raw_gbps, pp_gbps / plain_pp);
        rill__channel_close(ch);
        rill__tcp_server_free(srv);
        rill_status_free(s);
    }
    printf("RESULT transport=raw_tcp op=rtt_8B us=%.2f\n", raw_rtt);
    printf("RESULT transport=raw_tcp op=write_64MiB gbps=%.3f\n", raw_gbps);
    rill__aligned_free(src, BIG);
    rill__aligned_free(dst, BIG);
    free(lat);
    return 0;
}
