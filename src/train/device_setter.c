/* device_setter.c - tf.train.replica_device_setter (reference §6): a device function that puts
 * every variable on a parameter-server task and everything else on the worker device.
 *
 * Variables go to ps tasks in creation order, round-robin by default (TF's behaviour), or to the
 * task holding the fewest bytes so far (RILL_PS_GREEDY_BY_BYTES): round-robin is known to
 * overload one ps when variable sizes differ (a big embedding and its small bias land on tasks
 * in turn regardless of size). Fields the node already has (from inner device scopes) win. */
#include <rill/device_name.h>
#include <rill/train.h>

#include "../graph/graph_internal.h"

#include <string.h>

struct rill_replica_device_setter {
    int ps_tasks;
    rill_device_name ps, worker;
    bool merge_devices;
    rill_ps_strategy strategy;
    int next;
    int64_t *bytes; /* per ps task */
    char out[RILL_DEVICE_NAME_MAX];
};

rill_replica_device_setter *rill_replica_device_setter_new(int ps_tasks, const char *ps_device,
                                                           const char *worker_device,
                                                           bool merge_devices,
                                                           rill_ps_strategy strategy,
                                                           rill_status *s)
{
    if (ps_tasks <= 0) {
        rill_status_clear(s);
        return NULL; /* TF returns None: pushing NULL is a barrier */
    }
    rill_replica_device_setter *r = rill__calloc(1, sizeof *r);
    RILL_CHECK_ALLOC(r);
    r->ps_tasks = ps_tasks;
    r->merge_devices = merge_devices;
    r->strategy = strategy;
    r->bytes = rill__calloc((size_t)ps_tasks, sizeof *r->bytes);
    RILL_CHECK_ALLOC(r->bytes);
    if (!rill_device_name_parse(ps_device ? ps_device : "/job:ps", &r->ps, s) ||
        !rill_device_name_parse(worker_device ? worker_device : "/job:worker", &r->worker, s)) {
        rill_replica_device_setter_free(r);
        return NULL;
    }
    if (!merge_devices)
        rill__log(RILL_LOG_WARNING,
                  "DEPRECATION: It is recommended to set merge_devices=true in "
                  "replica_device_setter");
    return r;
}

void rill_replica_device_setter_free(rill_replica_device_setter *r)
{
    if (!r) return;
    rill__free(r->bytes);
    rill__free(r);
}

int64_t rill_replica_device_setter_task_bytes(const rill_replica_device_setter *r, int task)
{
    return r && task >= 0 && task < r->ps_tasks ? r->bytes[task] : -1;
}

static int pick_task(rill_replica_device_setter *r, const rill_node *n)
{
    int64_t size = 0;
    const rill__attr *sh = rill__node_attr(n, "shape");
    if (sh) size = rill_shape_num_elements(&sh->v.shape) * (int64_t)rill_dtype_size(n->out_dtypes[0]);
    int task;
    if (r->strategy == RILL_PS_GREEDY_BY_BYTES) {
        task = 0;
        for (int t = 1; t < r->ps_tasks; t++)
            if (r->bytes[t] < r->bytes[task]) task = t;
    } else {
        task = r->next;
        r->next = (r->next + 1) % r->ps_tasks;
    }
    r->bytes[task] += size > 0 ? size : 0;
    return task;
}

const char *rill_replica_device_setter_fn(void *arg, const rill_node *n)
{
    rill_replica_device_setter *r = arg;
    rill_device_name current;
    if (!rill_device_name_parse(rill_node_requested_device(n), &current, NULL))
        memset(&current, 0, sizeof current);
    bool has_device = rill_node_requested_device(n)[0] != 0;
    if (!r->merge_devices && has_device) return rill_node_requested_device(n);
    rill_device_name spec;
    if (strcmp(rill_node_op_type(n), "VariableV2") == 0) {
        spec = r->ps;
        if (spec.has_job && (!current.has_job || strcmp(current.job, spec.job) == 0)) {
            spec.task = pick_task(r, n);
            spec.has_task = true;
        }
    } else {
        spec = r->worker;
    }
    rill_device_name_merge_override(&spec, &current);
    return rill_device_name_str(&spec, r->out, sizeof r->out);
}
