/* rill/server.h - servers of a cluster (tf.train.Server).
 *
 * Every task of a cluster runs a server: it binds its own address from the cluster spec, owns the
 * task's devices and variables for its whole life, and runs the graph partitions that sessions
 * register with it. A session whose options name a server's target (rill_session_options_set_
 * target) places its graph over every task's devices, cuts it per task, registers each remote
 * piece with its task and runs steps across the cluster over rill's TCP transport.
 *
 * Jobs that end: a training task (of the "worker" or "chief" job) that is done calls
 * rill_server_report_finished, which tells every "ps" task; a ps's rill_server_join returns once
 * every training task of its cluster spec has, so that a launcher's job (mpirun, srun, sbatch)
 * ends when training does. Only that call counts: a task that crashes or fails never reports, and
 * the ps then serves on until it is stopped. A report stays counted for the server's life: a task
 * restarted after it reported is not waited for again (set join_forever where tasks come back
 * after finishing). join_forever keeps TensorFlow's behaviour: serve until stopped. */
#ifndef RILL_SERVER_H
#define RILL_SERVER_H

#include <rill/cluster.h>
#include <rill/session.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rill_server rill_server;

typedef struct rill_server_options {
    /* Shared cluster secret: connections must prove they know it (NULL: the file named by
     * RILL_CLUSTER_SECRET_FILE if that is set, else none: then anyone who can reach the port
     * is trusted, as TensorFlow's servers trust). Borrowed. */
    const char *secret;
    /* How long a session waits for another task to come up before UNAVAILABLE [60 s]; a log
     * line names the task every few seconds meanwhile. */
    double connect_deadline_s;
    /* How long one remote step may take before DEADLINE_EXCEEDED names the task [300 s]. */
    double step_deadline_s;
    /* A connection idle this long gets a heartbeat before its next call, answered within
     * min(5 s, step deadline), so a peer that hung meanwhile is found at once [10 s]. */
    double heartbeat_idle_s;
    /* The run (job) this task belongs to: the tasks of one run share it, and a task of another
     * run (another job on the same ports, an earlier run still serving) is refused with an
     * error that says so. NULL: RILL_JOB_ID, else the launcher's job id (SLURM_JOB_ID, then
     * PMIX_NAMESPACE / OMPI_MCA_ess_base_jobid under mpirun), else the chief makes a random one
     * that the ps tasks adopt and the other workers learn from the chief (then a restarted
     * chief must be given the same run id to rejoin; docs/SECURITY.md). Borrowed. */
    const char *run_id;
    /* For a chief with no run id from the above: a file that keeps the random run id it makes
     * (written, mode 0600, when missing; read when there), so that the chief restarted rejoins
     * its run, e.g. "<logdir>/rill_run_id". NULL: none. Borrowed. */
    const char *run_id_file;
    /* Encrypt every frame (ChaCha20, under keys drawn from the secret): needs a secret; a
     * connection is encrypted when either end asks [false: authenticated, not encrypted]. */
    bool encrypt;
    /* The largest payload a request may carry: a graph to register, a step's feeds, and a pushed
     * tensor of unknown shape; a pushed tensor of known shape may carry only its size [1 GiB]. */
    uint64_t max_payload;
    /* A step that has waited this long on another task asks it what for, and logs the answer
     * (a sync step waiting for a worker's gradients names the worker and whether it answers),
     * again at this interval; a blocking op waiting here logs what it waits for as often.
     * [5 s; < 0: never ask] */
    double stall_report_s;
    /* rill_server_join serves until rill_server_stop or a signal, whatever the training tasks
     * report (TensorFlow's server.join()) [false: also returns once every "worker" and "chief"
     * task of the cluster reported it finished; RILL_PS_JOIN_FOREVER=1 in the environment sets
     * it too]. */
    bool join_forever;
} rill_server_options;

/* Reads a cluster secret from a file (as `rill-keygen FILE` writes one): its first line, at
 * least 32 characters. A new string (free() it), or NULL with s set: NOT_FOUND naming the file,
 * INVALID_ARGUMENT when the secret is too short. */
char *rill_cluster_secret_read(const char *path, rill_status *s);

/* Starts the server of task task_index of job in cluster (copied) on that task's address. opts
 * may be NULL. TF's errors for a missing job or task; "address ... is already in use". */
rill_server *rill_server_new(const rill_cluster_spec *cluster, const char *job, int task_index,
                             const rill_server_options *opts, rill_status *s);
/* tf.train.Server.create_local_server: a one-task cluster {"local": ["localhost:0"]} on a free
 * port. */
rill_server *rill_server_create_local(rill_status *s);
/* "rill://127.0.0.1:<port>": what a session's target names. Borrowed. */
const char *rill_server_target(const rill_server *srv);
const char *rill_server_job(const rill_server *srv);
int rill_server_task_index(const rill_server *srv);
/* Blocks until rill_server_stop, SIGTERM or SIGINT, or (unless join_forever) until every
 * training task of the cluster ("worker" and "chief" jobs) reported it finished, logging which;
 * returns RILL_OK. A cluster without training tasks only stops. */
rill_code rill_server_join(rill_server *srv, rill_status *s);
/* Tells every "ps" task of the cluster that this task (of the "worker" or "chief" job) finished
 * training: call it once the task needs the ps tasks no more (after its sessions are freed; the
 * chief after rill_supervisor_stop wrote the last checkpoint). Waits for each ps's answer, at
 * most min(connect deadline, 10 s) each. RILL_OK when every ps answered; else UNAVAILABLE (or
 * the ps's error) naming the ps tasks that were not told, the others having been told.
 * INVALID_ARGUMENT on a task of another job. Reporting again is harmless. */
rill_code rill_server_report_finished(rill_server *srv, rill_status *s);
/* How many distinct training tasks reported to this server that they finished, and in *total
 * (may be NULL) how many the cluster has. Safe from any thread. */
int rill_server_finished_tasks(rill_server *srv, int *total);
/* Asks join to return (safe from any thread and from a signal handler). */
void rill_server_stop(rill_server *srv);
/* Stops serving and frees. Sessions on it must be freed first. NULL is a no-op. */
void rill_server_free(rill_server *srv);

/* Sessions on a server: the target string of an in-process server ("" or NULL: a local session).
 * A target no server of this process answers is an INVALID_ARGUMENT at rill_session_new. */
void rill_session_options_set_target(rill_session_options *o, const char *target);

#ifdef __cplusplus
}
#endif
#endif
