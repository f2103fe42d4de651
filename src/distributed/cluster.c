/* cluster.c - cluster specs and task addresses (rill/cluster.h).
 *
 * A cluster is a small sorted array of jobs, each a sorted array of (index, address) tasks:
 * clusters have a handful of jobs and at most thousands of tasks, are built once at start-up and
 * then only read, so sorted arrays with linear or binary lookups beat any cleverer structure.
 * Every address is validated when it enters a cluster, so the server and transport that read
 * them later can trust their syntax.
 */
#include <rill/cluster.h>

#include "core/core.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct cluster_task {
    int index;
    char *addr;
} cluster_task;

typedef struct cluster_job {
    char *name;
    int n, cap;
    cluster_task *tasks; /* sorted by index */
} cluster_job;

struct rill_cluster_spec {
    int n, cap;
    cluster_job *jobs; /* sorted by name */
};

/* --- addresses --- */

static bool valid_hostname(const char *h, size_t n, const char **why)
{
    if (n == 0) {
        *why = "the host is empty";
        return false;
    }
    if (n > 253) {
        *why = "the host is longer than 253 characters";
        return false;
    }
    size_t label = 0;
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        if (c == '.') {
            if (label == 0 || h[i - 1] == '-') {
                *why = "a host name label is empty or ends with '-'";
                return false;
            }
            label = 0;
            continue;
        }
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && c != '-') {
            *why = "a host name may hold only letters, digits, '-' and '.'";
            return false;
        }
        if (c == '-' && label == 0) {
            *why = "a host name label starts with '-'";
            return false;
        }
        if (++label > 63) {
            *why = "a host name label is longer than 63 characters";
            return false;
        }
    }
    if (label == 0 || h[n - 1] == '-') {
        *why = "a host name label is empty or ends with '-'";
        return false;
    }
    return true;
}

bool rill_address_parse(const char *addr, bool allow_port0, char *host, size_t host_len, int *port,
                        rill_status *s)
{
    if (!addr) addr = "";
    const char *why = NULL;
    const char *colon = strrchr(addr, ':');
    const char *h = addr;
    size_t hn;
    char tmp[RILL_HOST_MAX];
    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        if (!close || close[1] != ':') {
            why = "an IPv6 address is written \"[addr]:port\"";
            goto bad_host;
        }
        colon = close + 1;
        h = addr + 1;
        hn = (size_t)(close - h);
        struct in6_addr a6;
        if (hn == 0 || hn >= sizeof tmp) {
            why = "not an IPv6 address";
            goto bad_host;
        }
        memcpy(tmp, h, hn);
        tmp[hn] = '\0';
        if (inet_pton(AF_INET6, tmp, &a6) != 1) {
            why = "not an IPv6 address";
            goto bad_host;
        }
    } else {
        if (!colon) goto bad_port;
        hn = (size_t)(colon - addr);
        if (memchr(addr, ':', hn)) {
            why = "an IPv6 address must be in brackets, as \"[::1]:2222\"";
            goto bad_host;
        }
        if (!valid_hostname(addr, hn, &why)) goto bad_host;
    }
    /* The port: 1 to 5 decimal digits, no sign, no spaces. */
    const char *p = colon + 1;
    size_t pn = strlen(p);
    if (pn == 0 || pn > 5) goto bad_port;
    long v = 0;
    for (size_t i = 0; i < pn; i++) {
        if (p[i] < '0' || p[i] > '9') goto bad_port;
        v = v * 10 + (p[i] - '0');
    }
    if (v > 65535 || (v == 0 && !allow_port0)) goto bad_port;
    if (host && host_len > 0) {
        size_t k = hn < host_len - 1 ? hn : host_len - 1;
        memcpy(host, h, k);
        host[k] = '\0';
    }
    if (port) *port = (int)v;
    return true;
bad_port:
    if (allow_port0)
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Could not parse port for local server from \"%s\"", addr);
    else
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Could not parse port from \"%s\": expected host:port with a port in "
                        "1..65535",
                        addr);
    return false;
bad_host:
    rill_status_set(s, RILL_INVALID_ARGUMENT, "Could not parse host from \"%s\": %s", addr, why);
    return false;
}

/* --- cluster specs --- */

static bool valid_job_name(const char *job)
{
    if (!job) return false;
    size_t n = strlen(job);
    if (n == 0 || n >= RILL_JOB_NAME_MAX) return false;
    if (!((job[0] >= 'a' && job[0] <= 'z') || (job[0] >= 'A' && job[0] <= 'Z'))) return false;
    for (size_t i = 1; i < n; i++) {
        char c = job[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return false;
    }
    return true;
}

rill_cluster_spec *rill_cluster_spec_new(void)
{
    rill_cluster_spec *c = rill__calloc(1, sizeof *c);
    RILL_CHECK_ALLOC(c);
    return c;
}

void rill_cluster_spec_free(rill_cluster_spec *c)
{
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        for (int t = 0; t < c->jobs[i].n; t++) rill__free(c->jobs[i].tasks[t].addr);
        rill__free(c->jobs[i].tasks);
        rill__free(c->jobs[i].name);
    }
    rill__free(c->jobs);
    rill__free(c);
}

rill_cluster_spec *rill_cluster_spec_copy(const rill_cluster_spec *c)
{
    if (!c) return NULL;
    rill_cluster_spec *d = rill_cluster_spec_new();
    d->n = d->cap = c->n;
    if (c->n) {
        d->jobs = rill__calloc((size_t)c->n, sizeof *d->jobs);
        RILL_CHECK_ALLOC(d->jobs);
    }
    for (int i = 0; i < c->n; i++) {
        const cluster_job *src = &c->jobs[i];
        cluster_job *dst = &d->jobs[i];
        dst->name = rill__strdup(src->name);
        RILL_CHECK_ALLOC(dst->name);
        dst->n = dst->cap = src->n;
        if (src->n) {
            dst->tasks = rill__malloc((size_t)src->n * sizeof *dst->tasks);
            RILL_CHECK_ALLOC(dst->tasks);
        }
        for (int t = 0; t < src->n; t++) {
            dst->tasks[t].index = src->tasks[t].index;
            dst->tasks[t].addr = rill__strdup(src->tasks[t].addr);
            RILL_CHECK_ALLOC(dst->tasks[t].addr);
        }
    }
    return d;
}

static cluster_job *find_job(const rill_cluster_spec *c, const char *job)
{
    if (!c || !job) return NULL;
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->jobs[i].name, job) == 0) return &c->jobs[i];
    return NULL;
}

/* Inserts an empty job in name order; the name must be valid and new. */
static cluster_job *insert_job(rill_cluster_spec *c, const char *job)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 4;
        c->jobs = rill__realloc(c->jobs, (size_t)c->cap * sizeof *c->jobs);
        RILL_CHECK_ALLOC(c->jobs);
    }
    int at = 0;
    while (at < c->n && strcmp(c->jobs[at].name, job) < 0) at++;
    memmove(&c->jobs[at + 1], &c->jobs[at], (size_t)(c->n - at) * sizeof *c->jobs);
    c->n++;
    cluster_job *j = &c->jobs[at];
    memset(j, 0, sizeof *j);
    j->name = rill__strdup(job);
    RILL_CHECK_ALLOC(j->name);
    return j;
}

static int find_task(const cluster_job *j, int index)
{
    int lo = 0, hi = j->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (j->tasks[mid].index == index) return mid;
        if (j->tasks[mid].index < index)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static void insert_task(cluster_job *j, int index, const char *addr)
{
    if (j->n == j->cap) {
        j->cap = j->cap ? j->cap * 2 : 4;
        j->tasks = rill__realloc(j->tasks, (size_t)j->cap * sizeof *j->tasks);
        RILL_CHECK_ALLOC(j->tasks);
    }
    int at = j->n;
    while (at > 0 && j->tasks[at - 1].index > index) at--;
    memmove(&j->tasks[at + 1], &j->tasks[at], (size_t)(j->n - at) * sizeof *j->tasks);
    j->tasks[at].index = index;
    j->tasks[at].addr = rill__strdup(addr);
    RILL_CHECK_ALLOC(j->tasks[at].addr);
    j->n++;
}

static bool check_job_name(const char *job, rill_status *s)
{
    if (valid_job_name(job)) return true;
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Invalid job name \"%s\": expected a letter followed by letters, digits or "
                    "'_', at most %d characters",
                    job ? job : "(null)", RILL_JOB_NAME_MAX - 1);
    return false;
}

static bool check_task_address(const char *job, int index, const char *addr, bool allow_port0,
                               rill_status *s)
{
    rill_status *why = rill_status_new();
    bool ok = rill_address_parse(addr, allow_port0, NULL, 0, NULL, why);
    if (!ok)
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Invalid address for task %d of job \"%s\": %s",
                        index, job, rill_status_message(why));
    rill_status_free(why);
    return ok;
}

bool rill_cluster_spec_add_job(rill_cluster_spec *c, const char *job, const char *const *addrs,
                               int n, rill_status *s)
{
    if (!check_job_name(job, s)) return false;
    if (find_job(c, job)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Job \"%s\" is already defined in cluster", job);
        return false;
    }
    if (n < 0 || (n > 0 && !addrs)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Job \"%s\" given %d task addresses", job, n);
        return false;
    }
    for (int i = 0; i < n; i++)
        if (!check_task_address(job, i, addrs[i], false, s)) return false;
    cluster_job *j = insert_job(c, job);
    for (int i = 0; i < n; i++) insert_task(j, i, addrs[i]);
    return true;
}

static bool add_task(rill_cluster_spec *c, const char *job, int task_index, const char *addr,
                     bool allow_port0, rill_status *s)
{
    if (!check_job_name(job, s)) return false;
    if (task_index < 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Invalid task index %d for job \"%s\"",
                        task_index, job);
        return false;
    }
    if (!check_task_address(job, task_index, addr, allow_port0, s)) return false;
    cluster_job *j = find_job(c, job);
    if (j && find_task(j, task_index) >= 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Task %d is already defined in job \"%s\"",
                        task_index, job);
        return false;
    }
    if (!j) j = insert_job(c, job);
    insert_task(j, task_index, addr);
    return true;
}

bool rill_cluster_spec_add_task(rill_cluster_spec *c, const char *job, int task_index,
                                const char *addr, rill_status *s)
{
    return add_task(c, job, task_index, addr, false, s);
}

rill_cluster_spec *rill_cluster_spec_local(void)
{
    rill_cluster_spec *c = rill_cluster_spec_new();
    add_task(c, "local", 0, "localhost:0", true, NULL);
    return c;
}

/* Adds job with the comma-separated hosts of flag; an empty list adds nothing. */
static bool add_host_list(rill_cluster_spec *c, const char *job, const char *flag, const char *list,
                          rill_status *s)
{
    if (!list || !*list) return true;
    bool ok = true;
    int index = 0;
    const char *p = list;
    rill_status *why = rill_status_new();
    cluster_job *j = insert_job(c, job);
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char *entry = rill__strndup(p, n);
        RILL_CHECK_ALLOC(entry);
        if (n == 0 || !rill_address_parse(entry, false, NULL, 0, NULL, why)) {
            if (n == 0)
                rill_status_set(s, RILL_INVALID_ARGUMENT, "Invalid --%s \"%s\": entry %d is empty",
                                flag, list, index);
            else
                rill_status_set(s, RILL_INVALID_ARGUMENT, "Invalid --%s \"%s\": entry %d: %s", flag,
                                list, index, rill_status_message(why));
            rill__free(entry);
            ok = false;
            break;
        }
        insert_task(j, index++, entry);
        rill__free(entry);
        if (!comma) break;
        p = comma + 1;
    }
    rill_status_free(why);
    return ok;
}

rill_cluster_spec *rill_cluster_spec_from_hosts(const char *ps_hosts, const char *worker_hosts,
                                                rill_status *s)
{
    rill_cluster_spec *c = rill_cluster_spec_new();
    if (!add_host_list(c, "ps", "ps_hosts", ps_hosts, s) ||
        !add_host_list(c, "worker", "worker_hosts", worker_hosts, s)) {
        rill_cluster_spec_free(c);
        return NULL;
    }
    return c;
}

int rill_cluster_spec_num_jobs(const rill_cluster_spec *c)
{
    return c ? c->n : 0;
}

const char *rill_cluster_spec_job_name(const rill_cluster_spec *c, int i)
{
    if (!c || i < 0 || i >= c->n) return NULL;
    return c->jobs[i].name;
}

bool rill_cluster_spec_has_job(const rill_cluster_spec *c, const char *job)
{
    return find_job(c, job) != NULL;
}

int rill_cluster_spec_num_tasks(const rill_cluster_spec *c, const char *job, rill_status *s)
{
    const cluster_job *j = find_job(c, job);
    if (!j) {
        rill_status_set(s, RILL_NOT_FOUND, "Job \"%s\" was not defined in cluster",
                        job ? job : "(null)");
        return -1;
    }
    return j->n;
}

int rill_cluster_spec_task_index(const rill_cluster_spec *c, const char *job, int i)
{
    const cluster_job *j = find_job(c, job);
    if (!j || i < 0 || i >= j->n) return -1;
    return j->tasks[i].index;
}

const char *rill_cluster_spec_task_address(const rill_cluster_spec *c, const char *job, int task,
                                           rill_status *s)
{
    const cluster_job *j = find_job(c, job);
    if (!j) {
        rill_status_set(s, RILL_NOT_FOUND, "Job \"%s\" was not defined in cluster",
                        job ? job : "(null)");
        return NULL;
    }
    int t = find_task(j, task);
    if (t < 0) {
        rill_status_set(s, RILL_NOT_FOUND, "Task %d was not defined in job \"%s\"", task, job);
        return NULL;
    }
    return j->tasks[t].addr;
}

/* snprintf-style appender: counts every byte, writes what fits. */
typedef struct sbuf {
    char *buf;
    size_t len, used;
} sbuf;

static void put(sbuf *b, const char *str)
{
    size_t n = strlen(str);
    if (b->used < b->len) {
        size_t room = b->len - b->used - 1;
        size_t k = n < room ? n : room;
        memcpy(b->buf + b->used, str, k);
        b->buf[b->used + k] = '\0';
    }
    b->used += n;
}

size_t rill_cluster_spec_to_string(const rill_cluster_spec *c, char *buf, size_t len)
{
    sbuf b = {.buf = buf, .len = buf ? len : 0};
    if (b.len) buf[0] = '\0';
    put(&b, "{");
    for (int i = 0; c && i < c->n; i++) {
        const cluster_job *j = &c->jobs[i];
        bool dense = true;
        for (int t = 0; t < j->n; t++) dense = dense && j->tasks[t].index == t;
        put(&b, i ? ", \"" : "\"");
        put(&b, j->name); /* names and addresses never need JSON escapes (validated) */
        put(&b, dense ? "\": [" : "\": {");
        for (int t = 0; t < j->n; t++) {
            char idx[24];
            if (t) put(&b, ", ");
            if (!dense) {
                snprintf(idx, sizeof idx, "\"%d\": ", j->tasks[t].index);
                put(&b, idx);
            }
            put(&b, "\"");
            put(&b, j->tasks[t].addr);
            put(&b, "\"");
        }
        put(&b, dense ? "]" : "}");
    }
    put(&b, "}");
    return b.used;
}
