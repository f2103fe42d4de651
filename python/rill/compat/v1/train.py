"""tf.train: servers (this part of issue 11: the in-process local server)."""
import atexit
import sys
import weakref

from ... import _rill
from ._monitored import SessionRunHook

# This process's servers by target, so that a Supervisor whose sessions ran on one can tell the
# ps tasks, when it stops, that this worker finished (docs/LAUNCHING.md, "When the job ends").
_SERVERS = weakref.WeakValueDictionary()


class ClusterSpec:
    """tf.train.ClusterSpec: {job: [address, ...]} or {job: {task_index: address}}."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        self._spec = {}
        for job, tasks in dict(cluster).items():
            if isinstance(tasks, dict):
                self._spec[job] = {int(i): str(a) for i, a in tasks.items()}
            else:
                self._spec[job] = {i: str(a) for i, a in enumerate(tasks)}

    @property
    def jobs(self):
        return list(self._spec)

    def as_dict(self):
        out = {}
        for job, tasks in self._spec.items():
            if sorted(tasks) == list(range(len(tasks))):
                out[job] = [tasks[i] for i in range(len(tasks))]
            else:
                out[job] = dict(tasks)
        return out

    def num_tasks(self, job_name):
        if job_name not in self._spec:
            raise ValueError(f"No such job in cluster: {job_name!r}")
        return len(self._spec[job_name])

    def task_indices(self, job_name):
        return sorted(self._spec[job_name])

    def task_address(self, job_name, task_index):
        try:
            return self._spec[job_name][task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name):
        tasks = self._spec[job_name]
        return [tasks.get(i) for i in range(max(tasks) + 1)] if tasks else []

    def __bool__(self):
        return bool(self._spec)

    def __repr__(self):
        return f"ClusterSpec({self.as_dict()!r})"


class Server:
    """tf.train.Server: this process's task of a cluster (or create_local_server()'s one-task
    cluster); its target is what tf.Session(target) connects to."""

    def __init__(self, server_or_cluster, job_name=None, task_index=None, protocol=None,
                 config=None, start=True, cluster_secret_file=None, encrypt=False, run_id=None):
        """TF's arguments, and rill's: cluster_secret_file (default: the file
        RILL_CLUSTER_SECRET_FILE names) makes every connection prove the cluster's secret and
        authenticates every frame; encrypt=True encrypts them too; run_id is the id the tasks of
        one job share (default: RILL_JOB_ID or the launcher's job id; docs/SECURITY.md)."""
        self._job = job_name
        if isinstance(server_or_cluster, _rill.Server):
            self._srv = server_or_cluster
            _SERVERS[self._srv.target] = self
            return
        cluster = ClusterSpec(server_or_cluster)
        if job_name is None:
            if len(cluster.jobs) != 1:
                raise ValueError("Must specify an explicit `job_name`.")
            job_name = cluster.jobs[0]
        if task_index is None:
            idx = cluster.task_indices(job_name)
            if len(idx) != 1:
                raise ValueError("Must specify an explicit `task_index`.")
            task_index = idx[0]
        self._job = job_name
        self._srv = _rill.Server.new(cluster._spec, job_name, int(task_index),
                                     cluster_secret_file=cluster_secret_file, encrypt=encrypt,
                                     run_id=run_id)
        _SERVERS[self._srv.target] = self

    @staticmethod
    def create_local_server(config=None, start=True):
        return Server(_rill.Server.create_local())

    @property
    def target(self):
        return self._srv.target

    def start(self):
        pass

    def join(self):
        """Blocks, as TF's does, until SIGTERM or SIGINT or, unless RILL_PS_JOIN_FOREVER=1, until
        every worker of the cluster finished (their Supervisors said so when they stopped); then
        the process ends cleanly (exit 0) instead of returning, so that a ps task never falls
        through into code after join()."""
        self._srv.join()
        raise SystemExit(0)

    def _report_finished(self):
        """A worker is done with the ps tasks: tell them (so that they exit once all are)."""
        if self._job not in ("worker", "chief"):
            return
        try:
            self._srv.report_finished()
        except Exception as e:  # training succeeded; the ps tasks will not end by themselves
            print(f"warning: {e}", file=sys.stderr)


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker",
                          merge_devices=True, cluster=None, ps_ops=None, ps_strategy=None):
    """tf.train.replica_device_setter: variables (and the other ps_ops) round-robin over the ps
    tasks, every other op on worker_device; a device an inner context already gave an op is
    kept (merge_devices)."""
    if cluster is not None:
        cluster = ClusterSpec(cluster)
        ps_tasks = cluster.num_tasks("ps") if "ps" in cluster.jobs else 0
    if ps_tasks == 0:
        return None
    ps_ops = list(ps_ops) if ps_ops else ["Variable", "VariableV2", "AutoReloadVariable",
                                          "MutableHashTable", "MutableHashTableV2",
                                          "MutableHashTableOfTensors",
                                          "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                                          "MutableDenseHashTableV2", "VarHandleOp"]
    next_task = [0]

    def choose(op):
        if merge_devices and op.device:
            return op.device
        if op.type in ps_ops:
            if ps_strategy is not None:
                task = ps_strategy(op)
            else:
                task = next_task[0] % ps_tasks
                next_task[0] += 1
            return f"{ps_device}/task:{task}"
        return worker_device

    return choose


# --- optimizers (rill's C optimizers: slots, gated gradients, colocation are theirs) ---

def _v1():
    """rill.compat.v1 itself (imported late: it imports this module)."""
    import rill.compat.v1 as tf
    return tf


def _pair_out(x):
    return None if x is None else x._out


class Optimizer:
    def __init__(self, kind, learning_rate, a=0.0, b=0.0, eps=0.0, nesterov=False, name=None):
        tf = _v1()
        self._tf = tf
        self._lr_tensor = None
        if isinstance(learning_rate, (tf.Tensor, tf.Variable)):
            self._lr_tensor, learning_rate = learning_rate, 0.0
        self._opt = _rill.Optimizer(kind, float(learning_rate), float(a), float(b), float(eps),
                                    bool(nesterov))
        self._name = name

    def compute_gradients(self, loss, var_list=None, **kwargs):
        tf = self._tf
        g = loss.graph
        if self._lr_tensor is not None:
            self._opt.set_learning_rate_tensor(g._g, self._lr_tensor._out)
        vl = None if var_list is None else [v._out for v in var_list]
        pairs = self._opt.compute_gradients(g._g, tf.convert_to_tensor(loss)._out, vl)
        out = []
        for grad, (vop, _) in pairs:
            gt = None if grad is None else g._wrap(grad[0]).outputs[grad[1]]
            out.append((gt, tf._as_variable(g, vop)))
        return out

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        tf = self._tf
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        g = grads_and_vars[0][1].graph
        if self._lr_tensor is not None:
            self._opt.set_learning_rate_tensor(g._g, self._lr_tensor._out)
        pairs = [(_pair_out(gr), v._out) for gr, v in grads_and_vars]
        step = None if global_step is None else tf.convert_to_tensor(global_step)._out
        # tf.control_dependencies around apply_gradients/minimize holds for every op it adds
        # (the UPDATE_OPS idiom of batch normalization), as in TF
        deps = [o._op for c in g._control_stack for o in c]
        if deps:
            g._g.push_control_dependencies(deps)
        try:
            return g._wrap(self._opt.apply_gradients(g._g, pairs, step, name))
        finally:
            if deps:
                g._g.pop_control_dependencies()

    def minimize(self, loss, global_step=None, var_list=None, name=None, **kwargs):
        gv = self.compute_gradients(loss, var_list=var_list)
        if not any(gr is not None for gr, _ in gv):
            raise ValueError("No gradients provided for any variable, check your graph for ops "
                             "that do not support gradients, between variables "
                             f"{[v.name for _, v in gv]} and loss {loss!r}.")
        return self.apply_gradients(gv, global_step=global_step, name=name)


class GradientDescentOptimizer(Optimizer):
    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__("sgd", learning_rate, name=name)


class MomentumOptimizer(Optimizer):
    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__("momentum", learning_rate, momentum, nesterov=use_nesterov, name=name)


class AdamOptimizer(Optimizer):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
                 use_locking=False, name="Adam"):
        super().__init__("adam", learning_rate, beta1, beta2, epsilon, name=name)


class AdagradOptimizer(Optimizer):
    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        super().__init__("adagrad", learning_rate, initial_accumulator_value, name=name)


def get_global_step(graph=None):
    tf = _v1()
    g = graph or tf.get_default_graph()
    for r in g._g.collection("global_step"):
        return tf._as_variable(g, r)
    try:
        op = g.get_operation_by_name("global_step")
    except KeyError:
        return None
    return tf._as_variable(g, op._op)


def get_or_create_global_step(graph=None):
    """The graph's global step: an existing one (the "global_step" collection, or a variable
    named global_step), else a new int64 scalar variable as TF makes it."""
    tf = _v1()
    g = graph or tf.get_default_graph()
    step = get_global_step(g)
    if step is None:
        step = tf._as_variable(g, g._g.get_or_create_global_step())
    return step


create_global_step = get_or_create_global_step


# --- checkpoints ---

class Saver:
    """tf.train.Saver over rill's (TensorFlow's V2 checkpoint format)."""

    def __init__(self, var_list=None, max_to_keep=5, keep_checkpoint_every_n_hours=10000.0,
                 name=None, **kwargs):
        tf = _v1()
        self._graph = tf.get_default_graph()
        keys = None
        if isinstance(var_list, dict):
            # {checkpoint name: variable}, as TF's: each variable saved under its key
            keys = [str(k) for k in var_list]
            var_list = list(var_list.values())
        vl = None if var_list is None else [v._out for v in var_list]
        self._saver = _rill.Saver(self._graph._g, vl, int(max_to_keep or 0),
                                  float(keep_checkpoint_every_n_hours), keys)
        self._max_to_keep = int(max_to_keep or 0)
        self._keep_hours = float(keep_checkpoint_every_n_hours)
        scope = "save"
        for op in reversed(self._graph.get_operations()):
            if op.type == "BundleMergeIndex":
                scope = op.name.rsplit("/", 1)[0]
                break
        self._scope = scope

    def as_saver_def(self):
        """A SaverDef naming rill's save graph: the prefix placeholder, the save tensor (the
        prefix once the index is written) and the restore op."""
        from ._train_helpers import SaverDef
        return SaverDef(filename_tensor_name=self._scope + "/filename:0",
                        save_tensor_name=self._scope + "/merge_index:0",
                        restore_op_name=self._scope + "/restore_all",
                        max_to_keep=self._max_to_keep, sharded=False,
                        keep_checkpoint_every_n_hours=self._keep_hours, version=2)

    @property
    def saver_def(self):
        return self.as_saver_def()

    def save(self, sess, save_path, global_step=None, **kwargs):
        tf = _v1()
        step = -1
        if isinstance(global_step, (tf.Tensor, tf.Variable)):
            step = int(sess.run(global_step))
        elif global_step is not None:
            step = int(global_step)
        try:
            return self._saver.save(sess._sess, save_path, step)
        except tf.errors.NotFoundError as e:
            if "doesn't exist, can't save" in e.message:
                raise ValueError(e.message) from None  # TF's Saver.save raises ValueError here
            raise

    def restore(self, sess, save_path):
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        self._saver.restore(sess._sess, save_path)

    @property
    def last_checkpoints(self):
        return self._saver.last_checkpoints()


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The CheckpointState of checkpoint_dir's "checkpoint" file (latest_filename), relative
    paths joined to checkpoint_dir; None when there is none (or it cannot be read), as TF's."""
    import os
    from ._train_helpers import CheckpointState
    path = os.path.join(checkpoint_dir, latest_filename or "checkpoint")
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except OSError:
        return None
    ckpt = CheckpointState._parse(text)
    if not ckpt.model_checkpoint_path:
        raise ValueError("Invalid checkpoint state loaded from " + checkpoint_dir)
    if not os.path.isabs(ckpt.model_checkpoint_path):
        ckpt.model_checkpoint_path = os.path.join(checkpoint_dir, ckpt.model_checkpoint_path)
    ckpt.all_model_checkpoint_paths = [p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)
                                       for p in ckpt.all_model_checkpoint_paths]
    return ckpt


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    if latest_filename is None:
        return _rill.latest_checkpoint(checkpoint_dir)
    import glob
    ckpt = get_checkpoint_state(checkpoint_dir, latest_filename)
    if ckpt and ckpt.model_checkpoint_path:
        p = ckpt.model_checkpoint_path
        if glob.glob(glob.escape(p) + ".index") or glob.glob(glob.escape(p)):
            return p
    return None


# --- synchronous training ---

class SyncReplicasOptimizer:
    """tf.train.SyncReplicasOptimizer over rill's (accumulators, a token queue, the chief's
    queue runner). TF 0.x's `replica_id` (the seed passes it) is accepted and ignored, with one
    deprecation line."""

    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None, variable_averages=None,
                 variables_to_average=None, use_locking=False, name="sync_replicas",
                 replica_id=None, **kwargs):
        if replica_id is not None:
            import warnings
            warnings.warn("SyncReplicasOptimizer(replica_id=...) is TF 0.x's: ignored (every "
                          "worker is a replica; the chief is the one whose Supervisor is_chief)",
                          DeprecationWarning, stacklevel=2)
        self._opt = opt
        self._sync = _rill.SyncReplicas(opt._opt, int(replicas_to_aggregate),
                                        int(total_num_replicas or 0))
        self._graph = None
        self._chief_qr = None
        tf = _v1()
        _SYNC_OPTIMIZERS.append(self)
        self._tf = tf

    def compute_gradients(self, *args, **kwargs):
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        tf = self._tf
        grads_and_vars = list(grads_and_vars)
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        g = grads_and_vars[0][1].graph
        self._graph = g
        pairs = [(None if gr is None else gr._out, v._out) for gr, v in grads_and_vars]
        step = tf.convert_to_tensor(global_step)._out
        return g._wrap(self._sync.apply_gradients(g._g, pairs, step, name))

    def minimize(self, loss, global_step=None, var_list=None, name=None, **kwargs):
        return self.apply_gradients(self.compute_gradients(loss, var_list=var_list),
                                    global_step=global_step, name=name)

    def _op(self, which, *a):
        if self._graph is None:
            raise ValueError("apply_gradients must be called before this")
        return self._graph._wrap(self._sync.op(self._graph._g, which, *a))

    def get_init_tokens_op(self, num_tokens=-1):
        return self._op("init_tokens", int(num_tokens))

    def get_chief_queue_runner(self):
        if self._chief_qr is None:
            self._chief_qr = QueueRunner(self._op("chief_queue_runner"))
        return self._chief_qr

    @property
    def chief_init_op(self):
        return self._op("chief_init")

    @property
    def local_step_init_op(self):
        return self._op("local_step_init")

    def make_session_run_hook(self, is_chief, num_tokens=-1):
        """The hook a MonitoredTrainingSession runs this optimizer's init ops with: the local
        init op (the chief's chief_init_op, the others' local_step_init_op) once the global
        variables are ready, then on the chief the initial tokens and the chief's queue
        runner, on a thread its coordinator stops."""
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)

    @property
    def ready_for_local_init_op(self):
        """TF's: the global variables not yet initialised (a string tensor), which a Supervisor
        given it as ready_for_local_init_op waits to be empty before its local init op."""
        if self._graph is None:
            raise ValueError("apply_gradients must be called before this")
        if getattr(self, "_rfli", None) is None:
            tf = self._tf
            with self._graph.as_default():
                self._rfli = tf.report_uninitialized_variables(tf.global_variables())
        return self._rfli


_SYNC_OPTIMIZERS = []


class _SyncReplicasOptimizerHook(SessionRunHook):
    """SyncReplicasOptimizer.make_session_run_hook's (TF's _SyncReplicasOptimizerHook)."""

    def __init__(self, opt, is_chief, num_tokens):
        self._opt, self._is_chief, self._num_tokens = opt, is_chief, num_tokens

    def begin(self):
        o = self._opt
        if o._graph is None:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before "
                             "using the hook.")
        if self._is_chief:
            self._local_init_op = o.chief_init_op
            self._q_runner = o.get_chief_queue_runner()
            self._init_tokens_op = o.get_init_tokens_op(self._num_tokens)
        else:
            self._local_init_op = o.local_step_init_op
            self._q_runner = self._init_tokens_op = None
        self._ready_for_local_init_op = o.ready_for_local_init_op

    def after_create_session(self, session, coord):
        names = session.run(self._ready_for_local_init_op)
        if len(names):
            raise RuntimeError(
                "Init operations did not make model ready for SyncReplicasOptimizer local_init. "
                "Init op: %s, error: Variables not initialized: %s" % (
                    self._local_init_op.name,
                    ", ".join(n.decode() if isinstance(n, bytes) else str(n) for n in names)))
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)
_LIVE_SUPERVISORS = weakref.WeakSet()


@atexit.register
def _stop_supervisors_at_exit():
    """Before the interpreter tears down modules (in no useful order), every Supervisor the
    program did not stop is stopped, so none is freed after the server it runs on."""
    for sv in list(_LIVE_SUPERVISORS):
        sv._stop_at_exit()


# --- Supervisor ---

class Supervisor:
    """tf.train.Supervisor over rill's: the chief restores the latest checkpoint of logdir or
    initialises, the others wait for the model; checkpoints every save_model_secs and at stop().

    Beyond TF: a chief whose ps tasks hold a live model at a global step not older than the
    latest checkpoint's goes on from the live model (and logs both steps) instead of restoring
    over it; restore_over_live=True restores the checkpoint anyway, as TF does.

    A session it prepares for a graph with a SyncReplicasOptimizer also runs that optimizer's
    chief_init_op (chief) or local_step_init_op (the others), which TF ≥ 1.0 programs pass as
    local_init_op and TF 0.x's (the seed's) did not need.

    Tests and benchmarks can end an unchanged program's endless loop: with RILL_TRAIN_STEPS=N in
    the environment, a run on a session this Supervisor made raises OutOfRangeError once the
    global step reaches N, and leaving the session's `with` block treats that as a request to
    stop, as TF's managed_session treats OutOfRangeError (docs/PYTHON.md)."""

    def __init__(self, graph=None, ready_op=0, is_chief=True, init_op=0, init_feed_dict=None,
                 local_init_op=0, logdir=None, summary_op=0, saver=0, global_step=0,
                 save_summaries_secs=120, save_model_secs=600, recovery_wait_secs=30,
                 stop_grace_secs=120, checkpoint_basename="model.ckpt", session_manager=None,
                 summary_writer=0, init_fn=None, local_init_run_options=None,
                 restore_over_live=False, ready_for_local_init_op=0):
        tf = _v1()
        self._tf = tf
        self._graph = graph or tf.get_default_graph()
        self._is_chief = bool(is_chief)
        self._global_step = global_step if global_step not in (0, None) else get_global_step(self._graph)
        opts = {"is_chief": self._is_chief, "logdir": logdir,
                "save_model_secs": float(save_model_secs or 0),
                "save_summaries_secs": float(save_summaries_secs or 0),
                "recovery_wait_secs": min(float(recovery_wait_secs), 0.5),
                "restore_over_live": bool(restore_over_live)}
        # TF's USE_DEFAULT is 0 here; the ops may be Operations or Tensors (a ready op is a
        # string tensor: ready when it names no variable, as report_uninitialized_variables).
        for key, op in (("init_op", init_op), ("local_init_op", local_init_op),
                        ("ready_op", ready_op),
                        ("ready_for_local_init_op", ready_for_local_init_op)):
            if op not in (0, None):
                opts[key] = (op.op if isinstance(op, tf.Tensor) else op)._op
        if saver is None:
            opts["saver"] = False
        elif saver != 0:
            opts["saver"] = saver._saver
        if summary_op is None:
            opts["summary_op"] = False
        if self._global_step is not None:
            opts["global_step"] = tf.convert_to_tensor(self._global_step)._out
        self._sv = _rill.Supervisor(self._graph._g, opts)
        self._syncs = [o for o in _SYNC_OPTIMIZERS if o._graph is self._graph]
        self._stopped = False
        self._server = None
        _LIVE_SUPERVISORS.add(self)

    @property
    def is_chief(self):
        return self._is_chief

    @property
    def global_step(self):
        return self._global_step

    def prepare_or_wait_for_session(self, master="", config=None, wait_for_checkpoint=False,
                                    max_wait_secs=7200, start_standard_services=True):
        tf = self._tf
        config = config or tf.ConfigProto()
        opts = tf._session_options(config, master)
        self._master = master
        # kept to the end: stop() tells the ps tasks through it, also at exit
        self._server = _SERVERS.get(master if isinstance(master, str) else master.decode())
        sess = tf.Session._adopt(self._graph, self._sv.prepare_or_wait_for_session(opts), config,
                                 self)
        for o in self._syncs:
            sess.run(o.chief_init_op if self._is_chief else o.local_step_init_op)
        return sess

    def managed_session(self, master="", config=None, start_standard_services=True,
                        close_summary_writer=True):
        import contextlib

        @contextlib.contextmanager
        def _managed():
            sess = self.prepare_or_wait_for_session(master, config)
            try:
                yield sess
            except self._tf.errors.OutOfRangeError:
                pass
            finally:
                self.stop()
                sess.close()
        return _managed()

    def start_queue_runners(self, sess, queue_runners=None):
        """The queue runners (default: the QUEUE_RUNNERS collection): an op-only runner (the
        sync chief's) on the C Supervisor's thread, a queue's on daemon threads stopped with
        this Supervisor."""
        if queue_runners is None:
            from ._local_variables import QUEUE_RUNNERS, get_collection
            queue_runners = get_collection(QUEUE_RUNNERS, self._graph)
        threads = []
        for qr in queue_runners:
            if qr.queue is None:
                self._sv.start_queue_runner(sess._sess, qr.op._op)
                continue
            if getattr(self, "_coord", None) is None:
                self._coord = Coordinator()
            threads += qr.create_threads(sess, coord=self._coord, daemon=True, start=True)
        return threads

    def should_stop(self):
        return self._sv.should_stop()

    def request_stop(self, ex=None):
        if getattr(self, "_coord", None) is not None:
            self._coord.request_stop(ex)
        self._sv.request_stop()

    def stop(self, threads=None, close_summary_writer=True, ignore_live_threads=False):
        """Stops the services (the chief saves a last checkpoint); on a cluster this worker then
        tells the ps tasks it finished, so that they exit once every worker has."""
        self._stopped = True
        if getattr(self, "_coord", None) is not None:
            self._coord.request_stop()
        try:
            self._sv.stop()
        finally:
            if self._server is not None:
                self._server._report_finished()

    def _stop_at_exit(self):
        """A program that ends without sv.stop() (TF's mnist_replica.py returns from main):
        stopped as stop() would, once the Supervisor is dropped or the interpreter exits, so
        that the chief's last checkpoint is written on a live cluster and the ps tasks are
        told this worker finished. Errors are printed, not raised: the program is done."""
        if getattr(self, "_stopped", True):
            return
        try:
            self.stop()
        except Exception as e:  # noqa: BLE001
            print(f"rill: Supervisor stopped at exit: {e}", file=sys.stderr)

    def __del__(self):
        self._stop_at_exit()

    def summary_computed(self, sess, summary, global_step=None):
        step = -1 if global_step is None else int(global_step)
        self._sv.summary_computed(summary, step)

# Reading back event files and checkpoints (tf.train.summary_iterator, NewCheckpointReader, ...)
from .train_io import (NewCheckpointReader, list_variables, load_checkpoint,  # noqa: E402,F401
                       load_variable, summary_iterator)
from ._optimizers import *  # noqa: E402,F401,F403  (RMSProp, Adadelta, Ftrl, Proximal*)
from ._train_helpers import *  # noqa: E402,F401,F403  (ExponentialMovingAverage, SaverDef, ...)

# --- queue-based input (_input.py): Coordinator, QueueRunner, producers, batching ---
from ._input import (Coordinator, QueueRunner, add_queue_runner, batch,  # noqa: E402,F401
                     batch_join, maybe_batch, maybe_batch_join, maybe_shuffle_batch,
                     maybe_shuffle_batch_join, shuffle_batch_join, input_producer, limit_epochs, range_input_producer, shuffle_batch,
                     slice_input_producer, start_queue_runners, string_input_producer)
from ._local_variables import QUEUE_RUNNERS as _QUEUE_RUNNERS  # noqa: E402,F401

import types as _types  # noqa: E402

# tf.train.queue_runner (TF's module of the same three names)
queue_runner = _types.SimpleNamespace(QueueRunner=QueueRunner, add_queue_runner=add_queue_runner,
                                      start_queue_runners=start_queue_runners)

# --- MonitoredTrainingSession, the hook protocol and TF's standard hooks ---
from ._monitored import (ChiefSessionCreator, MonitoredSession,  # noqa: E402,F401
                         MonitoredTrainingSession, Scaffold, SessionCreator, SessionRunArgs,
                         SessionRunContext, SessionRunHook, SessionRunValues,
                         SingularMonitoredSession, WorkerSessionCreator)
from ._hooks import (CheckpointSaverHook, CheckpointSaverListener,  # noqa: E402,F401
                     FeedFnHook, FinalOpsHook, GlobalStepWaiterHook, LoggingTensorHook,
                     NanLossDuringTrainingError, NanTensorHook, SecondOrStepTimer,
                     StepCounterHook, StopAtStepHook, SummarySaverHook)
