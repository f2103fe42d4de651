/* server_internal.h - what the master (master.c) needs of the server (server.c). */
#ifndef RILL_DISTRIBUTED_SERVER_INTERNAL_H
#define RILL_DISTRIBUTED_SERVER_INTERNAL_H

#include <rill/server.h>

#include "../runtime/runtime.h"
#include "transport.h"

/* The in-process server answering target, or NULL. */
rill_server *rill__server_lookup(const char *target);
const rill_cluster_spec *rill__server_cluster(const rill_server *srv);
rill__resource_mgr *rill__server_rm(rill_server *srv);
const rill_server_options *rill__server_options(const rill_server *srv);
/* The transport options clients of this cluster use (its secret). */
void rill__server_client_options(const rill_server *srv, rill__tcp_options *o);
/* This task's devices, renamed "/job:J/replica:0/task:T/device:TYPE:N" into out (cap). */
int rill__server_devices(rill_server *srv, rill__device *out, int cap, rill_status *s);
/* "/device:TYPE:N" of a full device name (the part a task's own session places by). */
void rill__local_device_spec(const char *full, char *out, size_t len);

/* Registers the master's hooks with the runtime (master.c). */
void rill__master_register(void);

#endif
