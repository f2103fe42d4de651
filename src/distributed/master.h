/* master.h - the tasks of this process as the master (master.c) sees them, and what their
 * servers take from the master.
 *
 * The dependency goes one way, server -> master: a server (server.c) describes its task in a
 * rill__local_task it embeds, publishes it with rill__master_add_task once it serves and
 * withdraws it with rill__master_remove_task before it goes. A session whose target names a
 * published task is run by the master on it; the master never calls the server. */
#ifndef RILL_DISTRIBUTED_MASTER_H
#define RILL_DISTRIBUTED_MASTER_H

#include <rill/server.h>

#include "../runtime/runtime.h"
#include "transport.h"

/* A task served by this process. Its server fills it, owns everything it points to, and keeps
 * it unchanged while sessions may name its target (rill_server_create_local swaps in the cluster
 * with the bound port before its caller learns the target). */
typedef struct rill__local_task {
    char target[300]; /* "rill://host:port": what sessions name to run on this task */
    char job[64];     /* the task's job and index within it */
    int index;
    rill_cluster_spec *cluster; /* the whole cluster */
    rill__resource_mgr *rm;     /* the task's variables and resources, for the server's life */
    rill_server_options opts;   /* deadlines filled in; opts.secret the server's copy, or NULL */
    /* Who the task is on the wire (rill__local_task_identity_init): the cluster's hash, this
     * task's name and the run's id, which a task learns (under id_mu) when it has none of its
     * own: the ps tasks adopt the first their clients name, the other tasks ask the chief. */
    pthread_mutex_t id_mu;
    rill__identity id;
    bool run_known;
    bool chief;
    char chief_name[RILL_JOB_NAME_MAX + 32];
    const char *chief_addr;   /* in cluster */
    char run_from[160];       /* where the run id came from, for errors */
    /* The most one step's pushed tensors to the pieces this task's master runs itself take
     * (rill__graph_recv_bytes, the largest so far): what the server lets a TENSOR carry. */
    atomic_uint_fast64_t own_recv;
} rill__local_task;

/* Bytes that g's _RemoteRecvs take in one step, from their shapes; UINT64_MAX when a shape is
 * not fully known. What a server lets a push for g carry. */
uint64_t rill__graph_recv_bytes(const rill_graph *g);

/* Fills t->id from the cluster, job and index, and the run id from opts.run_id, RILL_JOB_ID, the
 * launcher's job (SLURM_JOB_ID, PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid), or, for the chief
 * only, a random one. */
void rill__local_task_identity_init(rill__local_task *t);
/* Who task job:index of cluster c says it is on the wire (its run id as far as it knows it
 * alone: the options' and the environment's, or a new random one for the chief). */
rill__identity rill__cluster_identity(const rill_cluster_spec *c, const char *job, int index);
/* The server's side: whether a client naming `client` may connect (rill__tcp_admit). */
bool rill__local_task_admit(void *t, const rill__identity *client, uint8_t run[16],
                            rill_status *why);
/* Connects to another task of t's cluster at addr with t's secret and identity; a task that does
 * not know its run yet learns it from the chief first. NULL with s set as rill__tcp_connect. */
rill__channel *rill__local_task_connect(rill__local_task *t, const char *addr, double deadline_s,
                                        rill_status *s);

/* One connection attempt within attempt_s: a channel, or NULL with s set. */
typedef rill__channel *(*rill__dial_fn)(void *arg, double attempt_s, rill_status *s);
/* dial(arg) until it connects, retrying while the peer is down, full or slow (a refusal for who
 * the caller is, secret or cluster, is final and returned as it is) for up to deadline_s, with a
 * log line "waiting for <what>: <why>" every 5 s; then UNAVAILABLE "<what> did not come up
 * within <deadline_s> s: <the last attempt's error>". */
rill__channel *rill__connect_retrying(const char *what, double deadline_s, rill__dial_fn dial,
                                      void *arg, rill_status *s);

/* Sends CANCEL for owner's steps on ch (a connection of the caller's own, within 5 s; the
 * answer is not waited on for errors) and closes ch. NULL ch: nothing. */
void rill__send_cancel(rill__channel *ch, uint64_t owner);

/* --- a session on another process's server (client.c) --- */

/* What a client that is no task of a cluster names itself in its handshake: "client:" and who
 * it is. A server admits it without a cluster (with the secret, when the server has one) and
 * lets it only run sessions (rpc.h, REGISTER_CLIENT). */
#define RILL__CLIENT_PREFIX "client:"
bool rill__is_client_identity(const char *task);

/* A session whose graph runs on the master of the server at target ("grpc://host:port",
 * "rill://host:port"), from a process that need serve nothing. The same hooks as a master's. */
typedef struct rill__client rill__client;
rill__client *rill__client_open(const char *target, rill_graph *g, const rill_session_options *o,
                                rill_status *s);
rill_code rill__client_run(rill__client *c, rill__deadline d, const rill_output *feeds,
                           rill_tensor *const *feed_values, int nfeeds, const rill_output *fetches,
                           rill_tensor **fetch_values, int nfetches, rill_node *const *targets,
                           int ntargets, rill_status *s);
void rill__client_cancel(rill__client *c);
void rill__client_close(rill__client *c);
/* The "host:port" of a "grpc://" or "rill://" target (borrowed from it), or NULL. */
const char *rill__target_address(const char *target);

/* Publishes t (borrowed until rill__master_remove_task) so that sessions naming t->target are
 * run by the master, and registers the master's session hooks with the runtime. */
void rill__master_add_task(rill__local_task *t);
/* Withdraws t; sessions can no longer be opened on it. A no-op for a task not published. */
void rill__master_remove_task(rill__local_task *t);

/* The task's rendezvous of pushed tensors (rendezvous.c), made in t->rm on first call. */
typedef struct rill__rendezvous rill__rendezvous;
rill__rendezvous *rill__rendezvous_install(rill__local_task *t);
/* Hands ts[i] (the caller's references; set to NULL) to the step's _RemoteRecv of keys[i] (a
 * key kept is taken over: set to NULL); dropped when the step was aborted. The receives that
 * were waiting run on this thread, after the rendezvous let go of its lock. */
void rill__rendezvous_put(rill__rendezvous *rv, uint64_t owner, uint64_t step, char **keys,
                          rill_tensor **ts, int n);
/* The step failed: its tensors are freed, its receives fail, later tensors for it are dropped. */
void rill__rendezvous_abort(rill__rendezvous *rv, uint64_t owner, uint64_t step);
/* Has the parked nodes of step (owner, step) look again (0: any owner, any step): for their
 * deadline, a cancellation. */
void rill__rendezvous_wake_step(rill__rendezvous *rv, uint64_t owner, uint64_t step);

/* The transport options clients of t's cluster use (its secret, borrowed from t). */
void rill__local_task_client_options(const rill__local_task *t, rill__tcp_options *o);
/* This process's devices, renamed "/job:J/replica:0/task:T/device:TYPE:N" for task t, into out
 * (at most cap); -1 with s set when the devices cannot be listed. */
int rill__local_task_devices(const rill__local_task *t, rill__device *out, int cap, rill_status *s);
/* "/device:TYPE:N" of a full device name (the part a task's own session places by); "" when
 * full does not parse. */
void rill__local_device_spec(const char *full, char *out, size_t len);

#endif
