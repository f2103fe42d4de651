/* rill/cluster.h - cluster specs, task addresses, and finding out which task this process is.
 *
 * A cluster spec maps job names ("ps", "worker", "chief", ...) to their tasks, each a task index
 * and a "host:port" address, as TensorFlow's tf.train.ClusterSpec does. Jobs are kept sorted by
 * name (the order TF's ClusterDef uses); tasks within a job are kept sorted by index. A job built
 * from a list has indices 0..n-1; rill_cluster_spec_add_task also allows the sparse indices of
 * TF's dict form ({"worker": {1: "h:2222"}}).
 *
 * A task config names one task of a cluster: (cluster, job_name, task_index). The resolvers
 * below build one from wherever the launcher put that information: the seed's command-line flags,
 * the TF_CONFIG environment variable Kubernetes/Kubeflow's TFJob sets, Slurm's environment
 * (srun), or the rank variables of mpirun (Open MPI, MPICH/PMI). docs/LAUNCHING.md shows each.
 *
 * Every function borrows its pointer arguments for the call only unless the comment says
 * otherwise. rill_status arguments may be NULL when the caller does not want the message.
 */
#ifndef RILL_CLUSTER_H
#define RILL_CLUSTER_H

#include <rill/status.h>

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- addresses --- */

/* Room for the longest host an address may have (253 characters of RFC 1123 name, or a
 * bracketed IPv6 literal), NUL included. */
#define RILL_HOST_MAX 256

/* Parses "host:port" into host (without brackets for IPv6; caller's buffer of host_len bytes,
 * may be NULL to only check) and *port (may be NULL). The host is an RFC 1123 name (labels of
 * letters, digits and '-', not starting or ending with '-', at most 63 characters each, 253 in
 * all; dotted IPv4 qualifies) or a bracketed IPv6 literal "[::1]"; the port is 1..65535 in
 * decimal, or 0 as well when allow_port0 (the local server, whose OS picks the port). On failure
 * returns false and sets s to INVALID_ARGUMENT naming the address:
 *   `Could not parse port for local server from "<addr>"` (allow_port0, bad port),
 *   `Could not parse port from "<addr>": expected a port in 1..65535`,
 *   `Could not parse host from "<addr>": <reason>`. */
bool rill_address_parse(const char *addr, bool allow_port0, char *host, size_t host_len, int *port,
                        rill_status *s);

/* --- cluster specs --- */

typedef struct rill_cluster_spec rill_cluster_spec;

/* A new empty cluster. Caller frees with rill_cluster_spec_free. Never NULL. */
rill_cluster_spec *rill_cluster_spec_new(void);
/* Frees a cluster; NULL is a no-op. */
void rill_cluster_spec_free(rill_cluster_spec *c);
/* A deep copy; caller frees. NULL gives NULL. */
rill_cluster_spec *rill_cluster_spec_copy(const rill_cluster_spec *c);

/* Adds job `job` with tasks 0..n-1 at addrs[0..n-1] (copied). The job name is a letter followed
 * by letters, digits or '_' (at most 63 characters) and must not be defined yet; every address
 * must pass rill_address_parse without port 0. n == 0 adds a job with no tasks. On failure
 * returns false, leaves c unchanged and sets s to INVALID_ARGUMENT, e.g.
 * `Job "ps" is already defined in cluster` or `Invalid address "h" for task 0 of job "ps": ...`. */
bool rill_cluster_spec_add_job(rill_cluster_spec *c, const char *job, const char *const *addrs,
                               int n, rill_status *s);

/* Adds one task with an explicit index (TF's sparse dict form), creating the job if needed.
 * Fails as add_job does, and with `Task <i> is already defined in job "<job>"` or a negative
 * index. */
bool rill_cluster_spec_add_task(rill_cluster_spec *c, const char *job, int task_index,
                                const char *addr, rill_status *s);

/* The cluster of the seed's flags: {"ps": split(ps_hosts, ','), "worker": split(worker_hosts,
 * ',')}. An empty or NULL string gives no tasks, and the job is then left out entirely (the seed
 * would make a task with an empty address). An empty entry ("a,,b") or an invalid address is
 * INVALID_ARGUMENT naming the flag and the entry. Caller frees; NULL on failure. */
rill_cluster_spec *rill_cluster_spec_from_hosts(const char *ps_hosts, const char *worker_hosts,
                                                rill_status *s);

/* The cluster of the seed's create_local_server: {"local": ["localhost:0"]}, the only way to get
 * port 0 into a cluster. Caller frees. */
rill_cluster_spec *rill_cluster_spec_local(void);

/* Number of jobs. */
int rill_cluster_spec_num_jobs(const rill_cluster_spec *c);
/* The name of job i (0 <= i < num_jobs, in name order), borrowed from c; NULL when out of range. */
const char *rill_cluster_spec_job_name(const rill_cluster_spec *c, int i);
/* True when the job is defined (even with no tasks). */
bool rill_cluster_spec_has_job(const rill_cluster_spec *c, const char *job);
/* Number of tasks defined in job (for a sparse job, the number of indices given, as TF's
 * num_tasks); -1 with NOT_FOUND `Job "<job>" was not defined in cluster` when there is no such
 * job. */
int rill_cluster_spec_num_tasks(const rill_cluster_spec *c, const char *job, rill_status *s);
/* The index of the i-th task of job in index order (i itself for a dense job; TF's
 * task_indices); -1 when the job or i does not exist. */
int rill_cluster_spec_task_index(const rill_cluster_spec *c, const char *job, int i);
/* The address of task `task` of job, borrowed from c (valid until c is freed or changed), or
 * NULL with NOT_FOUND `Job "<job>" was not defined in cluster` or
 * `Task <task> was not defined in job "<job>"`. */
const char *rill_cluster_spec_task_address(const rill_cluster_spec *c, const char *job, int task,
                                           rill_status *s);

/* Writes the cluster as JSON, jobs in name order: {"ps": ["h:1"], "worker": ["h:2", "h:3"]}, a
 * job with indices 0..n-1 as a list and a sparse one as an object {"1": "h:2"}. Writes at most
 * len bytes into buf (caller owns; may be NULL when len is 0), always NUL-terminated when
 * len > 0, and returns the length of the whole string as snprintf does. */
size_t rill_cluster_spec_to_string(const rill_cluster_spec *c, char *buf, size_t len);

/* --- Slurm host lists (public because a launcher script of one's own may want them) --- */

/* Expands a Slurm host list such as "node[01-03,07],gpu-a[1-2]" into the hosts in order
 * ("node01", "node02", "node03", "node07", "gpu-a1", "gpu-a2"); a range keeps the zero padding
 * of its lower bound, and several bracket groups in one name multiply out left to right
 * ("r[1-2]n[1-2]" gives r1n1, r1n2, r2n1, r2n2). On success *hosts is a new array of *n new
 * strings that the caller frees with rill_string_array_free. At most 65536 hosts; a malformed
 * list is INVALID_ARGUMENT naming it. */
bool rill_slurm_hostlist_expand(const char *list, char ***hosts, int *n, rill_status *s);

/* Expands Slurm's tasks-per-node syntax, "2(x3),1" giving {2, 2, 2, 1}. *counts is a new array
 * the caller frees with free(); at most 65536 entries, each 1..65536; malformed is
 * INVALID_ARGUMENT naming it. */
bool rill_slurm_tasks_per_node_expand(const char *spec, int **counts, int *n, rill_status *s);

/* Frees an array of n strings made by this header's functions; NULL is a no-op. */
void rill_string_array_free(char **strings, int n);

/* --- task configs and launch resolvers --- */

#define RILL_JOB_NAME_MAX 64

/* One task of a cluster. Zero-initialize it before the first resolve; the resolvers fill every
 * field on success (freeing any cluster it held) and leave it unchanged otherwise. */
typedef struct rill_task_config {
    rill_cluster_spec *cluster;       /* owned by the config; rill_task_config_clear frees it */
    char job_name[RILL_JOB_NAME_MAX]; /* this task's job */
    int task_index;                   /* this task's index in that job */
    const char *source;               /* static: "flags", "TF_CONFIG", "slurm" or "mpi" */
} rill_task_config;

/* Frees the cluster and zeroes the config; NULL is a no-op. */
void rill_task_config_clear(rill_task_config *cfg);

/* Every resolver returns true when its launcher's information is present; then s says whether
 * it could be used (OK: *out filled) or was malformed (INVALID_ARGUMENT naming the flag or
 * environment variable and its value; *out unchanged). It returns false, with s OK and *out
 * unchanged, when the information is absent. */

/* From the seed's flags. Present when ps_hosts or worker_hosts is non-empty. job_name NULL or ""
 * and task_index < 0 mean "not given": as tf.train.Server, the job may be left out only when the
 * cluster has one job (else `Must specify an explicit `job_name`.`) and the index only when that
 * job has one task (else `Must specify an explicit `task_index`.`). An unknown job or index
 * fails with the NOT_FOUND texts of rill_cluster_spec_task_address, but as INVALID_ARGUMENT. */
bool rill_task_config_from_flags(const char *ps_hosts, const char *worker_hosts,
                                 const char *job_name, int task_index, rill_task_config *out,
                                 rill_status *s);

/* From a TF_CONFIG JSON text: {"cluster": {"<job>": ["host:port", ...] or {"<index>":
 * "host:port", ...}, ...}, "task": {"type": "<job>", "index": <n>}, "environment": "..."}.
 * Present when the text is non-blank and has a non-empty "cluster" (TF runs locally otherwise).
 * "task" may be left out under the same rules as the flags; "index" defaults to 0 and may be a
 * number or a decimal string, as TF's int(...) allows; other keys are ignored. */
bool rill_task_config_from_tf_config_json(const char *json, rill_task_config *out, rill_status *s);
/* The same from the TF_CONFIG environment variable (absent when unset). */
bool rill_task_config_from_tf_config(rill_task_config *out, rill_status *s);

/* From Slurm's environment: present when SLURM_PROCID is set. Reads SLURM_PROCID, SLURM_NTASKS,
 * SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST) and SLURM_STEP_TASKS_PER_NODE (else
 * SLURM_TASKS_PER_NODE; when neither is set, ranks are spread as evenly as possible, the first
 * nodes taking one more). Ranks go to nodes as SLURM_DISTRIBUTION says: block (unset, "*":
 * filling nodes in order), cyclic (round-robin over the nodes with room) or plane=<size> (blocks
 * of size round-robin; the size also from SLURM_DIST_PLANESIZE); socket and core methods after
 * ':' and ",Pack"/",NoPack" do not move ranks between nodes. Any other value (arbitrary too) is
 * an INVALID_ARGUMENT naming SLURM_DISTRIBUTION. Where SLURMD_NODENAME and SLURM_LOCALID say
 * where Slurm started this task, a layout that disagrees is an error, not wrong hosts. Rank r
 * on a node is at host:(base_port + r's offset among that node's ranks). The first num_ps ranks
 * are "ps" tasks, the rest "worker" tasks. num_ps < 0 reads RILL_NUM_PS (default 1);
 * base_port <= 0 reads RILL_BASE_PORT (default 2222). */
bool rill_task_config_from_slurm(int num_ps, int base_port, rill_task_config *out, rill_status *s);

/* From mpirun's environment: present when OMPI_COMM_WORLD_RANK (Open MPI) or PMI_RANK (MPICH,
 * Intel MPI) is set; the size comes from OMPI_COMM_WORLD_SIZE or PMI_SIZE, and the local rank
 * (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID), when set, is checked. MPI gives no host list to
 * every rank, so hosts come from RILL_HOSTS: comma-separated entries "host" or "host:slots", each
 * giving the next `slots` ranks (default 1) that host, totalling the world size; unset, every
 * rank is on 127.0.0.1. Rank r listens on base_port + r. num_ps and base_port as for Slurm. */
bool rill_task_config_from_mpi(int num_ps, int base_port, rill_task_config *out, rill_status *s);

/* Options for rill_task_config_resolve; start from RILL_LAUNCH_OPTIONS_INIT (nothing given,
 * defaults from the environment), then set what the command line gave. */
typedef struct rill_launch_options {
    const char *ps_hosts;     /* the seed's --ps_hosts; NULL or "" = not given */
    const char *worker_hosts; /* the seed's --worker_hosts */
    const char *job_name;     /* --job_name; NULL or "" = not given */
    int task_index;           /* --task_index; < 0 = not given */
    int num_ps;               /* Slurm/MPI: ranks that are PS tasks; < 0 = RILL_NUM_PS or 1 */
    int base_port;            /* Slurm/MPI: first port; <= 0 = RILL_BASE_PORT or 2222 */
} rill_launch_options;

#define RILL_LAUNCH_OPTIONS_INIT                                                                   \
    {                                                                                              \
        NULL, NULL, NULL, -1, -1, 0                                                                \
    }

/* Tries the flags, then TF_CONFIG, then Slurm, then MPI; the first source present decides (its
 * error is final: a malformed TF_CONFIG is not silently skipped for Slurm). Returns true when a
 * source was present, with out->source naming it, and s as for the single resolvers; false with
 * s OK when none was (a single-process run). opts may be NULL (nothing given, num_ps and
 * base_port from the environment). */
bool rill_task_config_resolve(const rill_launch_options *opts, rill_task_config *out,
                              rill_status *s);

#ifdef __cplusplus
}
#endif
#endif
