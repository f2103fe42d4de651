/* fuzz_slurm.c - the Slurm launcher's parsers (distributed/resolve.c): the compressed host list
 * (rill_slurm_hostlist_expand), tasks per node (rill_slurm_tasks_per_node_expand) and the
 * resolver that reads them from Slurm's environment (rill_task_config_from_slurm), with the
 * "host:port" address parser (distributed/cluster.c) and the seed's --ps_hosts/--worker_hosts
 * lists that a resolved task ends up in.
 *
 * Input: NUL-separated strings: the node list, the tasks per node, SLURM_PROCID, SLURM_NTASKS,
 * RILL_NUM_PS, then an address list. An empty tasks-per-node string leaves the variable unset.
 * What the expanders return is checked against their contract (counts within bounds, every host
 * non-empty and free of brackets and commas); a resolved task's address is in its cluster. */
#include "fuzz.h"

#include <rill/cluster.h>
#include <rill/status.h>

static void fuzz_hostlist(const char *list, rill_status *s)
{
    char **hosts = NULL;
    int n = -1;
    if (!rill_slurm_hostlist_expand(list, &hosts, &n, s)) {
        FUZZ_ASSERT(rill_status_code(s) == RILL_INVALID_ARGUMENT && n == -1);
        return;
    }
    FUZZ_ASSERT(n >= 1 && n <= 65536);
    for (int i = 0; i < n; i++) {
        FUZZ_ASSERT(hosts[i] && hosts[i][0]);
        FUZZ_ASSERT(strpbrk(hosts[i], "[],") == NULL);
    }
    rill_string_array_free(hosts, n);
}

static void fuzz_tasks_per_node(const char *spec, rill_status *s)
{
    int *counts = NULL, n = -1;
    if (!rill_slurm_tasks_per_node_expand(spec, &counts, &n, s)) {
        FUZZ_ASSERT(rill_status_code(s) == RILL_INVALID_ARGUMENT && n == -1);
        return;
    }
    FUZZ_ASSERT(n >= 1 && n <= 65536);
    for (int i = 0; i < n; i++) FUZZ_ASSERT(counts[i] >= 1 && counts[i] <= 65536);
    free(counts);
}

static void fuzz_resolver(const char *list, const char *tpn, const char *procid, const char *ntasks,
                          const char *num_ps, rill_status *s)
{
    setenv("SLURM_JOB_NODELIST", list, 1);
    if (*tpn)
        setenv("SLURM_TASKS_PER_NODE", tpn, 1);
    else
        unsetenv("SLURM_TASKS_PER_NODE");
    setenv("SLURM_PROCID", procid, 1);
    setenv("SLURM_NTASKS", ntasks, 1);
    setenv("RILL_NUM_PS", num_ps, 1);
    rill_task_config cfg = {0};
    FUZZ_ASSERT(rill_task_config_from_slurm(-1, 0, &cfg, s));
    if (rill_status_ok(s)) {
        FUZZ_ASSERT(cfg.cluster && strcmp(cfg.source, "slurm") == 0);
        FUZZ_ASSERT(strcmp(cfg.job_name, "ps") == 0 || strcmp(cfg.job_name, "worker") == 0);
        FUZZ_ASSERT(rill_cluster_spec_task_address(cfg.cluster, cfg.job_name, cfg.task_index, s));
    } else {
        FUZZ_ASSERT(rill_status_code(s) == RILL_INVALID_ARGUMENT && cfg.cluster == NULL);
    }
    rill_task_config_clear(&cfg);
}

static void fuzz_addresses(const char *list, rill_status *s)
{
    for (int port0 = 0; port0 < 2; port0++) {
        char host[RILL_HOST_MAX];
        int port = -1;
        if (rill_address_parse(list, port0, host, sizeof host, &port, s)) {
            FUZZ_ASSERT(strnlen(host, sizeof host) < sizeof host && host[0]);
            FUZZ_ASSERT(port >= (port0 ? 0 : 1) && port <= 65535);
        }
    }
    rill_task_config cfg = {0};
    if (rill_task_config_from_flags(list, "localhost:2223", "worker", 0, &cfg, s) &&
        rill_status_ok(s))
        FUZZ_ASSERT(cfg.cluster && rill_cluster_spec_num_tasks(cfg.cluster, "worker", s) == 1);
    rill_task_config_clear(&cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in in = {data, size};
    char *list = fuzz_next_str(&in), *tpn = fuzz_next_str(&in), *procid = fuzz_next_str(&in);
    char *ntasks = fuzz_next_str(&in), *num_ps = fuzz_next_str(&in), *addrs = fuzz_next_str(&in);
    rill_status *s = rill_status_new();
    fuzz_hostlist(list, s);
    fuzz_tasks_per_node(tpn, s);
    fuzz_resolver(list, tpn, procid, ntasks, num_ps, s);
    fuzz_addresses(addrs, s);
    rill_status_free(s);
    free(list), free(tpn), free(procid), free(ntasks), free(num_ps), free(addrs);
    return 0;
}
