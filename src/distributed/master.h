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
} rill__local_task;

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
