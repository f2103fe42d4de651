/* resolve.c - which task is this process? The launch resolvers of rill/cluster.h.
 *
 * Each resolver reads one launcher's information (the seed's flags, Kubernetes' TF_CONFIG,
 * Slurm's SLURM_* variables, mpirun's rank variables), builds a cluster spec, and then applies
 * the same rule tf.train.Server applies to (cluster, job_name, task_index) in finish(). Slurm and
 * MPI only number their processes, so those ranks are mapped to jobs here: the first num_ps ranks
 * are "ps" tasks and the rest "worker" tasks, each listening on a port counted up from a base.
 * Every value read from the environment is parsed strictly; a malformed one is reported with the
 * variable's name and value rather than guessed at.
 */
#include <rill/cluster.h>

#include "core/core.h"
#include "distributed/json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_RANKS 65536

void rill_string_array_free(char **strings, int n)
{
    if (!strings) return;
    for (int i = 0; i < n; i++) rill__free(strings[i]);
    rill__free(strings);
}

void rill_task_config_clear(rill_task_config *cfg)
{
    if (!cfg) return;
    rill_cluster_spec_free(cfg->cluster);
    memset(cfg, 0, sizeof *cfg);
}

/* Parses a whole string of decimal digits (no sign, no spaces, at most 9 digits). */
static bool parse_uint(const char *str, size_t n, long *out)
{
    if (n == 0 || n > 9) return false;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (str[i] < '0' || str[i] > '9') return false;
        v = v * 10 + (str[i] - '0');
    }
    *out = v;
    return true;
}

/* Reads an integer environment variable in [lo, hi]: 0 when unset, 1 when read, -1 (with s set)
 * when malformed. */
static int env_int(const char *name, long lo, long hi, int *out, rill_status *s)
{
    const char *v = getenv(name);
    if (!v) return 0;
    long x;
    if (!parse_uint(v, strlen(v), &x) || x < lo || x > hi) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Invalid value for environment variable %s: \"%s\" (expected an integer "
                        "in %ld..%ld)",
                        name, v, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 1;
}

/* --- host lists --- */

typedef struct strlist {
    char **items;
    int n, cap;
} strlist;

static void strlist_push(strlist *l, char *str)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->items = rill__realloc(l->items, (size_t)l->cap * sizeof *l->items);
        RILL_CHECK_ALLOC(l->items);
    }
    l->items[l->n++] = str;
}

/* Expands one comma-free-at-top-level item; returns a reason on failure. */
static const char *expand_item(const char *item, size_t n, strlist *out, int depth)
{
    const char *open = memchr(item, '[', n);
    if (!open) {
        if (memchr(item, ']', n)) return "']' without '['";
        if (n == 0) return "an empty host name";
        if (out->n >= MAX_RANKS) return "more than 65536 hosts";
        char *h = rill__strndup(item, n);
        RILL_CHECK_ALLOC(h);
        strlist_push(out, h);
        return NULL;
    }
    if (depth >= 8) return "more than 8 bracket groups in one name";
    size_t pre = (size_t)(open - item);
    const char *close = memchr(open, ']', n - pre);
    if (!close) return "'[' without ']'";
    const char *in = open + 1;
    size_t in_n = (size_t)(close - in);
    if (memchr(in, '[', in_n)) return "nested '['";
    if (in_n == 0) return "empty brackets";
    const char *rest = close + 1;
    size_t rest_n = n - (size_t)(rest - item);
    char *buf = rill__malloc(n + 32);
    RILL_CHECK_ALLOC(buf);
    const char *why = NULL;
    const char *r = in;
    while (!why) {
        const char *end = memchr(r, ',', (size_t)(close - r));
        if (!end) end = close;
        const char *dash = memchr(r, '-', (size_t)(end - r));
        long lo, hi;
        size_t lo_n = dash ? (size_t)(dash - r) : (size_t)(end - r);
        if (!parse_uint(r, lo_n, &lo)) {
            why = "a range bound is not a number of at most 9 digits";
            break;
        }
        hi = lo;
        if (dash && !parse_uint(dash + 1, (size_t)(end - dash - 1), &hi)) {
            why = "a range bound is not a number of at most 9 digits";
            break;
        }
        if (hi < lo) {
            why = "a range runs backwards";
            break;
        }
        for (long v = lo; v <= hi && !why; v++) {
            if (out->n >= MAX_RANKS) {
                why = "more than 65536 hosts";
                break;
            }
            memcpy(buf, item, pre);
            int k = snprintf(buf + pre, 32, "%0*ld", (int)lo_n, v);
            memcpy(buf + pre + (size_t)k, rest, rest_n);
            why = expand_item(buf, pre + (size_t)k + rest_n, out, depth + 1);
        }
        if (end == close) break;
        r = end + 1;
    }
    rill__free(buf);
    return why;
}

bool rill_slurm_hostlist_expand(const char *list, char ***hosts, int *n, rill_status *s)
{
    strlist out = {0};
    const char *why = NULL;
    if (!list || !*list) why = "the list is empty";
    if (!why && strlen(list) > 65536) why = "the list is longer than 65536 characters";
    const char *p = list;
    while (!why) {
        /* An item ends at a comma outside brackets. */
        const char *e = p;
        int in = 0;
        while (*e && (in || *e != ',')) {
            if (*e == '[') in = 1;
            if (*e == ']') in = 0;
            e++;
        }
        why = expand_item(p, (size_t)(e - p), &out, 0);
        if (!*e) break;
        p = e + 1;
    }
    if (why) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Invalid Slurm host list \"%s\": %s",
                        list ? list : "(null)", why);
        rill_string_array_free(out.items, out.n);
        return false;
    }
    *hosts = out.items;
    *n = out.n;
    return true;
}

bool rill_slurm_tasks_per_node_expand(const char *spec, int **counts, int *n, rill_status *s)
{
    int *out = NULL, cnt = 0, cap = 0;
    const char *why = NULL;
    const char *p = spec ? spec : "";
    if (!*p) why = "it is empty";
    while (!why) {
        const char *e = strchr(p, ',');
        if (!e) e = p + strlen(p);
        const char *paren = memchr(p, '(', (size_t)(e - p));
        long tasks, times = 1;
        if (!parse_uint(p, paren ? (size_t)(paren - p) : (size_t)(e - p), &tasks) || tasks < 1 ||
            tasks > MAX_RANKS) {
            why = "expected entries N or N(xM) with N in 1..65536";
            break;
        }
        if (paren) {
            if (e - paren < 4 || paren[1] != 'x' || e[-1] != ')' ||
                !parse_uint(paren + 2, (size_t)(e - paren - 3), &times) || times < 1 ||
                times > MAX_RANKS) {
                why = "expected entries N or N(xM) with M in 1..65536";
                break;
            }
        }
        if (cnt + times > MAX_RANKS) {
            why = "more than 65536 nodes";
            break;
        }
        while (cap < cnt + times) cap = cap ? cap * 2 : 8;
        out = rill__realloc(out, (size_t)cap * sizeof *out);
        RILL_CHECK_ALLOC(out);
        for (long i = 0; i < times; i++) out[cnt++] = (int)tasks;
        if (!*e) break;
        p = e + 1;
    }
    if (why) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Invalid Slurm tasks per node \"%s\": %s",
                        spec ? spec : "(null)", why);
        rill__free(out);
        return false;
    }
    *counts = out;
    *n = cnt;
    return true;
}

/* --- the common end of every resolver --- */

/* Applies tf.train.Server's rule to (cluster, job, index) and fills *out; takes cluster. */
static bool finish(rill_cluster_spec *cluster, const char *job, int index, const char *source,
                   const char *what, rill_task_config *out, rill_status *s)
{
    rill_status *why = rill_status_new();
    bool ok = false;
    if (!job || !*job) {
        if (rill_cluster_spec_num_jobs(cluster) != 1) {
            rill_status_set(why, RILL_INVALID_ARGUMENT, "Must specify an explicit `job_name`.");
            goto done;
        }
        job = rill_cluster_spec_job_name(cluster, 0);
    }
    int ntasks = rill_cluster_spec_num_tasks(cluster, job, why);
    if (ntasks < 0) goto done;
    if (index < 0) {
        if (ntasks != 1) {
            rill_status_set(why, RILL_INVALID_ARGUMENT, "Must specify an explicit `task_index`.");
            goto done;
        }
        index = rill_cluster_spec_task_index(cluster, job, 0);
    }
    if (!rill_cluster_spec_task_address(cluster, job, index, why)) goto done;
    ok = true;
done:
    if (!ok) {
        if (what)
            rill_status_set(s, RILL_INVALID_ARGUMENT, "%s: %s", what, rill_status_message(why));
        else
            rill_status_set(s, RILL_INVALID_ARGUMENT, "%s", rill_status_message(why));
        rill_cluster_spec_free(cluster);
    } else {
        rill_status_clear(s);
        rill_task_config_clear(out);
        out->cluster = cluster;
        snprintf(out->job_name, sizeof out->job_name, "%s", job);
        out->task_index = index;
        out->source = source;
    }
    rill_status_free(why);
    return ok;
}

bool rill_task_config_from_flags(const char *ps_hosts, const char *worker_hosts,
                                 const char *job_name, int task_index, rill_task_config *out,
                                 rill_status *s)
{
    if ((!ps_hosts || !*ps_hosts) && (!worker_hosts || !*worker_hosts)) return false;
    rill_cluster_spec *c = rill_cluster_spec_from_hosts(ps_hosts, worker_hosts, s);
    if (!c) return true;
    finish(c, job_name, task_index, "flags", NULL, out, s);
    return true;
}

/* --- TF_CONFIG --- */

static bool tf_config_cluster(const rill__json *cl, rill_cluster_spec *c, rill_status *why)
{
    char addr_err[64];
    for (int j = 0; j < cl->count; j++) {
        const char *job = cl->keys[j];
        const rill__json *tasks = cl->items[j];
        if (tasks->type == RILL__JSON_ARRAY) {
            if (tasks->count == 0 && !rill_cluster_spec_add_job(c, job, NULL, 0, why)) return false;
            for (int t = 0; t < tasks->count; t++) {
                const rill__json *a = tasks->items[t];
                if (a->type != RILL__JSON_STRING) {
                    snprintf(addr_err, sizeof addr_err, "%s", rill__json_type_name(a->type));
                    rill_status_set(why, RILL_INVALID_ARGUMENT,
                                    "cluster.%s[%d] is a %s, expected a \"host:port\" string", job,
                                    t, addr_err);
                    return false;
                }
                if (!rill_cluster_spec_add_task(c, job, t, a->string, why)) return false;
            }
        } else if (tasks->type == RILL__JSON_OBJECT) {
            if (tasks->count == 0 && !rill_cluster_spec_add_job(c, job, NULL, 0, why)) return false;
            for (int t = 0; t < tasks->count; t++) {
                const char *k = tasks->keys[t];
                const rill__json *a = tasks->items[t];
                long idx;
                if (!parse_uint(k, strlen(k), &idx)) {
                    rill_status_set(why, RILL_INVALID_ARGUMENT,
                                    "cluster.%s has task index \"%s\", expected a number", job, k);
                    return false;
                }
                if (a->type != RILL__JSON_STRING) {
                    rill_status_set(why, RILL_INVALID_ARGUMENT,
                                    "cluster.%s[\"%s\"] is a %s, expected a \"host:port\" string",
                                    job, k, rill__json_type_name(a->type));
                    return false;
                }
                if (!rill_cluster_spec_add_task(c, job, (int)idx, a->string, why)) return false;
            }
        } else {
            rill_status_set(why, RILL_INVALID_ARGUMENT,
                            "cluster.%s is a %s, expected a list of \"host:port\" strings", job,
                            rill__json_type_name(tasks->type));
            return false;
        }
    }
    return true;
}

bool rill_task_config_from_tf_config_json(const char *json, rill_task_config *out, rill_status *s)
{
    if (!json) return false;
    size_t len = strlen(json);
    bool blank = true;
    for (size_t i = 0; i < len && blank; i++)
        blank = json[i] == ' ' || json[i] == '\t' || json[i] == '\n' || json[i] == '\r';
    if (blank) return false;

    rill_status *why = rill_status_new();
    rill_cluster_spec *c = NULL;
    bool present = true;
    char what[320];
    snprintf(what, sizeof what, "Invalid TF_CONFIG '%.*s%s'", len > 256 ? 256 : (int)len, json,
             len > 256 ? "..." : "");
    rill__json *root = rill__json_parse(json, len, why);
    if (!root) goto fail;
    if (root->type != RILL__JSON_OBJECT) {
        rill_status_set(why, RILL_INVALID_ARGUMENT, "expected a JSON object, got a %s",
                        rill__json_type_name(root->type));
        goto fail;
    }
    const rill__json *cl = rill__json_get(root, "cluster");
    if (!cl || (cl->type == RILL__JSON_OBJECT && cl->count == 0)) {
        present = false; /* TF runs locally: no cluster given */
        goto done;
    }
    if (cl->type != RILL__JSON_OBJECT) {
        rill_status_set(why, RILL_INVALID_ARGUMENT, "\"cluster\" is a %s, expected an object",
                        rill__json_type_name(cl->type));
        goto fail;
    }
    c = rill_cluster_spec_new();
    if (!tf_config_cluster(cl, c, why)) goto fail;

    const char *job = NULL;
    int index = -1;
    const rill__json *task = rill__json_get(root, "task");
    if (task && task->type != RILL__JSON_OBJECT) {
        rill_status_set(why, RILL_INVALID_ARGUMENT, "\"task\" is a %s, expected an object",
                        rill__json_type_name(task->type));
        goto fail;
    }
    if (task) {
        const rill__json *type = rill__json_get(task, "type");
        const rill__json *ix = rill__json_get(task, "index");
        if (type && type->type != RILL__JSON_STRING) {
            rill_status_set(why, RILL_INVALID_ARGUMENT, "task.type is a %s, expected a string",
                            rill__json_type_name(type->type));
            goto fail;
        }
        if (type) job = type->string;
        long v;
        if (!ix) {
            index = 0; /* TF's RunConfig: int(task.get('index', 0)) */
        } else if (ix->type == RILL__JSON_NUMBER && ix->is_int && ix->integer >= 0 &&
                   ix->integer < MAX_RANKS) {
            index = (int)ix->integer;
        } else if (ix->type == RILL__JSON_STRING && parse_uint(ix->string, ix->length, &v) &&
                   v < MAX_RANKS) {
            index = (int)v;
        } else {
            rill_status_set(why, RILL_INVALID_ARGUMENT,
                            "task.index must be an integer in 0..%d (a number or a decimal "
                            "string)",
                            MAX_RANKS - 1);
            goto fail;
        }
        if (!job) index = ix ? index : -1;
    }
    char job_buf[RILL_JOB_NAME_MAX + 1];
    if (job) snprintf(job_buf, sizeof job_buf, "%s", job); /* a long name fails in finish() */
    rill__json_free(root);
    rill_status_free(why);
    finish(c, job ? job_buf : NULL, index, "TF_CONFIG", what, out, s);
    return true;
fail:
    rill_status_set(s, RILL_INVALID_ARGUMENT, "%s: %s", what, rill_status_message(why));
done:
    rill_cluster_spec_free(c);
    rill__json_free(root);
    rill_status_free(why);
    return present;
}

bool rill_task_config_from_tf_config(rill_task_config *out, rill_status *s)
{
    return rill_task_config_from_tf_config_json(getenv("TF_CONFIG"), out, s);
}

/* --- Slurm and MPI: ranks to jobs --- */

/* num_ps and base_port from the arguments or RILL_NUM_PS / RILL_BASE_PORT. */
static bool rank_defaults(int *num_ps, int *base_port, rill_status *s)
{
    if (*num_ps < 0) {
        *num_ps = 1;
        if (env_int("RILL_NUM_PS", 0, MAX_RANKS, num_ps, s) < 0) return false;
    }
    if (*base_port <= 0) {
        *base_port = 2222;
        if (env_int("RILL_BASE_PORT", 1, 65535, base_port, s) < 0) return false;
    }
    return true;
}

/* Builds the ps/worker cluster of `size` ranks, rank r at hosts[r]:ports[r], and finishes with
 * this rank. Host validity is checked here so the error names the variable it came from. */
static bool rank_cluster(int size, int rank, char **hosts, const int *ports, int num_ps,
                         const char *host_var, const char *source, rill_task_config *out,
                         rill_status *s)
{
    if (num_ps >= size) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "%d parameter-server ranks (RILL_NUM_PS) leave no worker among the %d "
                        "ranks",
                        num_ps, size);
        return false;
    }
    rill_cluster_spec *c = rill_cluster_spec_new();
    rill_status *why = rill_status_new();
    bool ok = true;
    for (int r = 0; r < size && ok; r++) {
        if (ports[r] > 65535) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Rank %d would listen on port %d, past 65535: lower RILL_BASE_PORT", r,
                            ports[r]);
            ok = false;
            break;
        }
        bool v6 = strchr(hosts[r], ':') != NULL && hosts[r][0] != '[';
        char *addr = rill__asprintf(v6 ? "[%s]:%d" : "%s:%d", hosts[r], ports[r]);
        RILL_CHECK_ALLOC(addr);
        const char *job = r < num_ps ? "ps" : "worker";
        int index = r < num_ps ? r : r - num_ps;
        if (!rill_cluster_spec_add_task(c, job, index, addr, why)) {
            rill_status_set(s, RILL_INVALID_ARGUMENT, "Invalid host \"%s\" for rank %d from %s: %s",
                            hosts[r], r, host_var, rill_status_message(why));
            ok = false;
        }
        rill__free(addr);
    }
    rill_status_free(why);
    if (!ok) {
        rill_cluster_spec_free(c);
        return false;
    }
    return finish(c, rank < num_ps ? "ps" : "worker", rank < num_ps ? rank : rank - num_ps, source,
                  NULL, out, s);
}

/* How Slurm deals a step's ranks to its nodes (SLURM_DISTRIBUTION's first method): in blocks of
 * `deal` ranks, round-robin over the nodes that still have room: cyclic deals 1, plane=P deals
 * P, block deals a node's whole share (INT32_MAX). 0 with s set when the value is not one rill can
 * lay out. Unset or empty: block, Slurm's default (with no more tasks than nodes, where Slurm
 * defaults to cyclic, both give every node one rank). The socket and core methods after ':' and a
 * ",Pack"/",NoPack" bind tasks within a node or change how many a node gets, which
 * SLURM_STEP_TASKS_PER_NODE already says: they do not move ranks between nodes. */
static int slurm_deal(rill_status *s)
{
    const char *v = getenv("SLURM_DISTRIBUTION");
    if (!v || !*v) return INT32_MAX;
    size_t n = strcspn(v, ":,=");
    long plane = 0;
    if ((n == 5 && strncasecmp(v, "block", 5) == 0) || (n == 1 && v[0] == '*')) return INT32_MAX;
    if (n == 6 && strncasecmp(v, "cyclic", 6) == 0) return 1;
    if (n == 5 && strncasecmp(v, "plane", 5) == 0) {
        /* plane=P (as -m takes it), or SLURM_DIST_PLANESIZE (as srun hands it to its tasks) */
        if (v[5] == '=') {
            if (parse_uint(v + 6, strcspn(v + 6, ":,"), &plane) && plane >= 1) return (int)plane;
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Invalid value for environment variable SLURM_DISTRIBUTION: \"%s\" "
                            "(the plane size is not a positive integer)",
                            v);
            return 0;
        }
        const char *size = getenv("SLURM_DIST_PLANESIZE");
        if (size && parse_uint(size, strlen(size), &plane) && plane >= 1) return (int)plane;
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "SLURM_DISTRIBUTION=\"%s\" has no plane size: SLURM_DIST_PLANESIZE is "
                        "%s%s%s (expected a positive integer)",
                        v, size ? "\"" : "", size ? size : "unset", size ? "\"" : "");
        return 0;
    }
    if (n == 9 && strncasecmp(v, "arbitrary", 9) == 0)
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "SLURM_DISTRIBUTION=\"%s\" is not supported: which node each task runs on "
                        "comes from SLURM_HOSTFILE, which rill does not read; use block, cyclic or "
                        "plane=<size>, or give the cluster with --ps_hosts/--worker_hosts or "
                        "TF_CONFIG",
                        v);
    else
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Invalid value for environment variable SLURM_DISTRIBUTION: \"%s\" (rill "
                        "lays out block, cyclic and plane=<size>, with any :<socket>:<core> "
                        "methods and ,Pack or ,NoPack after them)",
                        v);
    return 0;
}

/* Rank r's node (node_of[r]) and its place among that node's ranks (local[r]), counts[i] ranks
 * on node i, dealt `deal` at a time (slurm_deal). As Slurm's step layout whenever no node has
 * more tasks than CPUs; an oversubscribed cyclic or plane step may differ, which the caller's
 * check against SLURMD_NODENAME and SLURM_LOCALID finds. */
static void slurm_layout(const int *counts, int nhosts, int size, int deal, int *node_of,
                         int *local)
{
    int *placed = rill__calloc((size_t)nhosts + 1, sizeof *placed);
    RILL_CHECK_ALLOC(placed);
    for (int r = 0; r < size;)
        for (int i = 0; i < nhosts && r < size; i++)
            for (int k = 0; k < deal && placed[i] < counts[i] && r < size; k++, r++) {
                node_of[r] = i;
                local[r] = placed[i]++;
            }
    rill__free(placed);
}

bool rill_task_config_from_slurm(int num_ps, int base_port, rill_task_config *out, rill_status *s)
{
    if (!getenv("SLURM_PROCID")) return false;
    int rank = 0, size = 0, nhosts = 0, ncounts = 0;
    char **hosts = NULL, **rank_hosts = NULL;
    int *counts = NULL, *ports = NULL, *node_of = NULL, *local = NULL;
    const char *size_var = getenv("SLURM_NTASKS") ? "SLURM_NTASKS" : "SLURM_NPROCS";
    if (env_int("SLURM_PROCID", 0, MAX_RANKS - 1, &rank, s) < 0) goto done;
    int got = env_int(size_var, 1, MAX_RANKS, &size, s);
    if (got < 0) goto done;
    if (got == 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "SLURM_PROCID is set (\"%s\") but SLURM_NTASKS is not: start the tasks "
                        "with srun",
                        getenv("SLURM_PROCID"));
        goto done;
    }
    if (rank >= size) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Invalid value for environment variable SLURM_PROCID: \"%d\" is not below "
                        "%s=%d",
                        rank, size_var, size);
        goto done;
    }
    const char *list_var = getenv("SLURM_STEP_NODELIST")  ? "SLURM_STEP_NODELIST"
                           : getenv("SLURM_JOB_NODELIST") ? "SLURM_JOB_NODELIST"
                                                          : "SLURM_NODELIST";
    const char *list = getenv(list_var);
    if (!list) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "SLURM_PROCID is set but none of SLURM_STEP_NODELIST, SLURM_JOB_NODELIST "
                        "and SLURM_NODELIST is");
        goto done;
    }
    rill_status *why = rill_status_new();
    bool ok = rill_slurm_hostlist_expand(list, &hosts, &nhosts, why);
    if (!ok)
        rill_status_set(s, RILL_INVALID_ARGUMENT, "Invalid value for environment variable %s: %s",
                        list_var, rill_status_message(why));
    const char *tpn_var =
        getenv("SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
    const char *tpn = getenv(tpn_var);
    if (ok && tpn) {
        ok = rill_slurm_tasks_per_node_expand(tpn, &counts, &ncounts, why);
        if (!ok)
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Invalid value for environment variable %s: %s", tpn_var,
                            rill_status_message(why));
    }
    rill_status_free(why);
    if (!ok) goto done;
    if (tpn) {
        long sum = 0;
        for (int i = 0; i < ncounts; i++) sum += counts[i];
        if (ncounts != nhosts || sum != size) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "%s=\"%s\" gives %d nodes and %ld tasks, but %s=\"%s\" has %d nodes "
                            "and %s=%d tasks",
                            tpn_var, tpn, ncounts, sum, list_var, list, nhosts, size_var, size);
            goto done;
        }
    } else {
        /* Spread as evenly as possible, the first nodes taking one more. */
        counts = rill__malloc((size_t)nhosts * sizeof *counts);
        RILL_CHECK_ALLOC(counts);
        for (int i = 0; i < nhosts; i++) counts[i] = size / nhosts + (i < size % nhosts);
    }
    int deal = slurm_deal(s);
    if (!deal) goto done;
    rank_hosts = rill__malloc((size_t)size * sizeof *rank_hosts);
    ports = rill__malloc((size_t)size * sizeof *ports);
    node_of = rill__malloc((size_t)size * sizeof *node_of);
    local = rill__malloc((size_t)size * sizeof *local);
    RILL_CHECK_ALLOC(rank_hosts);
    RILL_CHECK_ALLOC(ports);
    RILL_CHECK_ALLOC(node_of);
    RILL_CHECK_ALLOC(local);
    if (!rank_defaults(&num_ps, &base_port, s)) goto done;
    slurm_layout(counts, nhosts, size, deal, node_of, local);
    for (int r = 0; r < size; r++) {
        rank_hosts[r] = hosts[node_of[r]];
        ports[r] = base_port + local[r];
    }
    /* Where Slurm says it started this task, the layout must agree: otherwise the other ranks'
     * addresses would be wrong too, silently. Every rank checks itself, so a layout rill got
     * wrong fails on the ranks it misplaces instead of giving them wrong hosts. */
    const char *node_name = getenv("SLURMD_NODENAME");
    int local_id = -1;
    if (env_int("SLURM_LOCALID", 0, MAX_RANKS - 1, &local_id, s) < 0) goto done;
    if ((node_name && *node_name && strcmp(node_name, rank_hosts[rank]) != 0) ||
        (local_id >= 0 && local_id != local[rank])) {
        const char *dist = getenv("SLURM_DISTRIBUTION");
        char said[64] = "?", per_node[300] = "spread evenly (no tasks per node given)";
        if (local_id >= 0) snprintf(said, sizeof said, "%d", local_id);
        if (tpn) snprintf(per_node, sizeof per_node, "%s=\"%s\"", tpn_var, tpn);
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Slurm started this task (SLURM_PROCID=%d) on \"%s\" (SLURMD_NODENAME) as "
                        "its local task %s (SLURM_LOCALID), but SLURM_DISTRIBUTION=\"%s\" with %s "
                        "over %s=\"%s\" puts rank %d on \"%s\" as local task %d: a task layout "
                        "rill cannot compute (a node with more tasks than CPUs?); give the cluster "
                        "with --ps_hosts/--worker_hosts or TF_CONFIG",
                        rank, node_name && *node_name ? node_name : "?", said,
                        dist && *dist ? dist : "block", per_node, list_var, list, rank,
                        rank_hosts[rank], local[rank]);
        goto done;
    }
    rank_cluster(size, rank, rank_hosts, ports, num_ps, list_var, "slurm", out, s);
done:
    rill_string_array_free(hosts, nhosts);
    rill__free(rank_hosts);
    rill__free(ports);
    rill__free(node_of);
    rill__free(local);
    rill__free(counts);
    return true;
}

bool rill_task_config_from_mpi(int num_ps, int base_port, rill_task_config *out, rill_status *s)
{
    const char *rank_var, *size_var, *local_var;
    if (getenv("OMPI_COMM_WORLD_RANK")) {
        rank_var = "OMPI_COMM_WORLD_RANK";
        size_var = "OMPI_COMM_WORLD_SIZE";
        local_var = "OMPI_COMM_WORLD_LOCAL_RANK";
    } else if (getenv("PMI_RANK")) {
        rank_var = "PMI_RANK";
        size_var = "PMI_SIZE";
        local_var = "MPI_LOCALRANKID";
    } else {
        return false;
    }
    int rank = 0, size = 0, local = 0, nhosts = 0;
    char **hosts = NULL, **rank_hosts = NULL;
    int *ports = NULL;
    if (env_int(rank_var, 0, MAX_RANKS - 1, &rank, s) < 0) goto done;
    int got = env_int(size_var, 1, MAX_RANKS, &size, s);
    if (got < 0) goto done;
    if (got == 0) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s is set (\"%s\") but %s is not", rank_var,
                        getenv(rank_var), size_var);
        goto done;
    }
    if (rank >= size) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Invalid value for environment variable %s: \"%d\" is not below %s=%d",
                        rank_var, rank, size_var, size);
        goto done;
    }
    if (env_int(local_var, 0, size - 1, &local, s) < 0) goto done;
    if (!rank_defaults(&num_ps, &base_port, s)) goto done;

    rank_hosts = rill__malloc((size_t)size * sizeof *rank_hosts);
    ports = rill__malloc((size_t)size * sizeof *ports);
    RILL_CHECK_ALLOC(rank_hosts);
    RILL_CHECK_ALLOC(ports);
    const char *list = getenv("RILL_HOSTS");
    if (!list) {
        for (int r = 0; r < size; r++) rank_hosts[r] = "127.0.0.1";
    } else {
        /* Entries "host" or "host:slots" ("[v6]" or "[v6]:slots"), one rank per slot. */
        hosts = rill__calloc((size_t)size, sizeof *hosts);
        RILL_CHECK_ALLOC(hosts);
        const char *p = list, *why = NULL;
        int r = 0;
        while (!why) {
            const char *e = strchr(p, ',');
            if (!e) e = p + strlen(p);
            const char *host_end = e;
            if (*p == '[') {
                const char *close = memchr(p, ']', (size_t)(e - p));
                host_end = close ? close + 1 : e;
                if (!close) why = "an IPv6 host has no ']'";
            } else {
                const char *colon = memchr(p, ':', (size_t)(e - p));
                if (colon) host_end = colon;
            }
            long slots = 1;
            if (!why && host_end < e &&
                (*host_end != ':' ||
                 !parse_uint(host_end + 1, (size_t)(e - host_end - 1), &slots) || slots < 1))
                why = "an entry's slot count is not a positive number";
            if (!why && host_end == p) why = "an entry is empty";
            if (!why && r + slots > size) why = "it lists more ranks than the world size";
            if (why) break;
            char *h = *p == '[' ? rill__strndup(p + 1, (size_t)(host_end - p - 2))
                                : rill__strndup(p, (size_t)(host_end - p));
            RILL_CHECK_ALLOC(h);
            hosts[nhosts++] = h;
            for (long k = 0; k < slots; k++) rank_hosts[r++] = h;
            if (!*e) break;
            p = e + 1;
        }
        if (!why && r != size) why = "it lists fewer ranks than the world size";
        if (why) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "Invalid value for environment variable RILL_HOSTS: \"%s\" (%s=%d): %s",
                            list, size_var, size, why);
            goto done;
        }
    }
    for (int r = 0; r < size; r++) ports[r] = base_port + r;
    rank_cluster(size, rank, rank_hosts, ports, num_ps, "RILL_HOSTS", "mpi", out, s);
done:
    rill_string_array_free(hosts, nhosts);
    rill__free(rank_hosts);
    rill__free(ports);
    return true;
}

bool rill_task_config_resolve(const rill_launch_options *opts, rill_task_config *out,
                              rill_status *s)
{
    rill_launch_options none = RILL_LAUNCH_OPTIONS_INIT;
    if (!opts) opts = &none;
    rill_status_clear(s);
    if (rill_task_config_from_flags(opts->ps_hosts, opts->worker_hosts, opts->job_name,
                                    opts->task_index, out, s))
        return true;
    if (rill_task_config_from_tf_config(out, s)) return true;
    /* mpirun inside an sbatch script: every rank inherits the batch step's SLURM_PROCID (0),
     * which must not make every rank ps 0. Open MPI's variables, or MPICH Hydra's
     * (MPI_LOCALRANKID beside PMI_RANK), say mpirun started this process; srun's PMI sets
     * PMI_RANK alone, and Slurm's variables stay first there. */
    bool by_mpirun = getenv("OMPI_COMM_WORLD_RANK") || (getenv("PMI_RANK") && getenv("MPI_LOCALRANKID"));
    if (by_mpirun) return rill_task_config_from_mpi(opts->num_ps, opts->base_port, out, s);
    if (rill_task_config_from_slurm(opts->num_ps, opts->base_port, out, s)) return true;
    return rill_task_config_from_mpi(opts->num_ps, opts->base_port, out, s);
}
