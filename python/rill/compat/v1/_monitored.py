"""tf.train.MonitoredTrainingSession and what it is made of: the hook protocol (SessionRunHook,
SessionRunArgs, SessionRunContext, SessionRunValues), Scaffold, the session creators, and
MonitoredSession / SingularMonitoredSession, with TF's standard hooks (_hooks.py).

The sessions themselves are prepared by rill's C Supervisor in its prepare-only mode
(src/train/supervisor.c): the chief restores the latest checkpoint of checkpoint_dir or runs the
scaffold's init op (going on from a live model on the ps tasks that is not older than the
checkpoint, as rill's Supervisor does), the others wait until ready_for_local_init_op and the
ready op hold (polling every half second, where TF waits 30 s between polls), and the local
init op runs; the hooks write checkpoints and summaries. A step that fails with AbortedError or
UnavailableError (a ps restarted) closes the session, makes a new one and runs the step again,
as TF's recoverable session does."""
import collections
import logging

from ... import _rill

__all__ = ["SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues",
           "Scaffold", "SessionCreator", "ChiefSessionCreator", "WorkerSessionCreator",
           "MonitoredSession", "SingularMonitoredSession", "MonitoredTrainingSession"]

USE_DEFAULT = object()


def _tf():
    import rill.compat.v1 as tf
    return tf


def _log():
    return logging.getLogger("tensorflow")


# --- the hook protocol ---

class SessionRunHook:
    """tf.train.SessionRunHook: extend MonitoredSession.run() (every method optional)."""

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass

    def end(self, session):
        pass


class SessionRunArgs(collections.namedtuple("SessionRunArgs",
                                            ["fetches", "feed_dict", "options"])):
    """What a hook's before_run adds to the run: fetches (any structure sess.run takes), a
    feed_dict, RunOptions."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunContext:
    """tf.train.SessionRunContext: the run's original arguments and session; a hook calls
    request_stop() to end the loop after this run."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    original_args = property(lambda self: self._original_args)
    session = property(lambda self: self._session)
    stop_requested = property(lambda self: self._stop_requested)

    def request_stop(self):
        self._stop_requested = True


class SessionRunValues(collections.namedtuple("SessionRunValues",
                                              ["results", "options", "run_metadata"])):
    """What after_run receives: the results of the hook's own fetches."""


# --- Scaffold ---

class Scaffold:
    """tf.train.Scaffold: the ops a MonitoredSession needs to make the model ready; finalize()
    fills in TF's defaults (the graph's collections first, then new ops): init_op =
    global_variables_initializer, ready_op = report_uninitialized_variables() (global and
    local), ready_for_local_init_op = report_uninitialized_variables(global_variables()),
    local_init_op = local_variables_initializer + tables_initializer, summary_op = merge_all,
    saver = a Saver of every saveable variable."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None, saver=None,
                 copy_from_scaffold=None, local_init_feed_dict=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            pick = lambda mine, theirs: mine if mine is not None else theirs  # noqa: E731
            c = copy_from_scaffold
            init_op = pick(init_op, c.init_op)
            init_feed_dict = pick(init_feed_dict, c._init_feed_dict)
            init_fn = pick(init_fn, c._user_init_fn)
            ready_op = pick(ready_op, c.ready_op)
            ready_for_local_init_op = pick(ready_for_local_init_op, c.ready_for_local_init_op)
            local_init_op = pick(local_init_op, c.local_init_op)
            summary_op = pick(summary_op, c.summary_op)
            saver = pick(saver, c.saver)
        if init_feed_dict or local_init_feed_dict:
            raise ValueError("rill: Scaffold(init_feed_dict=..., local_init_feed_dict=...) is not "
                             "supported: the init ops run in C without feeds; give the "
                             "variables initial values that need none (or an init_fn)")
        self._init_op, self._init_feed_dict = init_op, init_feed_dict
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._ready_op, self._ready_for_local_init_op = ready_op, ready_for_local_init_op
        self._local_init_op, self._summary_op, self._saver = local_init_op, summary_op, saver
        self._finalized = False

    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    init_fn = property(lambda self: self._init_fn)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    local_init_feed_dict = property(lambda self: None)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)

    @staticmethod
    def get_or_default(arg_name, collection_key, default_constructor):
        """The first element of collection_key, else default_constructor() (added to it)."""
        tf = _tf()
        elems = tf.get_collection(collection_key)
        if elems:
            if len(elems) > 1:
                raise RuntimeError(f"More than one item in the collection \"{collection_key}\". "
                                   f"Please indicate which one to use by passing it to the "
                                   f"tf.Scaffold constructor as:  tf.Scaffold({arg_name}=item to "
                                   "use)")
            return elems[0]
        op = default_constructor()
        if op is not None:
            tf.add_to_collection(collection_key, op)
        return op

    def finalize(self):
        if self._finalized:
            return self
        tf = _tf()
        K = tf.GraphKeys
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default("init_op", K.INIT_OP,
                                                    tf.global_variables_initializer)
        if self._ready_op is None:
            self._ready_op = Scaffold.get_or_default("ready_op", K.READY_OP,
                                                     tf.report_uninitialized_variables)
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = Scaffold.get_or_default(
                "ready_for_local_init_op", K.READY_FOR_LOCAL_INIT_OP,
                lambda: tf.report_uninitialized_variables(tf.global_variables()))
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default(
                "local_init_op", K.LOCAL_INIT_OP,
                lambda: tf.group(tf.local_variables_initializer(), tf.tables_initializer()))
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default("summary_op", K.SUMMARY_OP,
                                                       tf.summary.merge_all)
        if self._saver is None:
            self._saver = Scaffold.get_or_default(
                "saver", K.SAVERS,
                lambda: tf.train.Saver(sharded=True, allow_empty=True)
                if tf.global_variables() else None)
        self._finalized = True
        return self


# --- session creators ---

class SessionCreator:
    """tf.train.SessionCreator: create_session() returns a ready tf.Session."""

    def create_session(self):
        raise NotImplementedError("create_session is not implemented for "
                                  f"{type(self).__name__}")


class _PreparedSessionCreator(SessionCreator):
    """The session of a prepare-only C Supervisor (module docstring)."""

    def __init__(self, is_chief, scaffold, master, config, checkpoint_dir, max_wait_secs):
        self._is_chief = is_chief
        self._scaffold = scaffold or Scaffold()
        self._master = master or ""
        self._config = config
        self._checkpoint_dir = checkpoint_dir
        self._max_wait_secs = max_wait_secs

    def _supervisor(self):
        tf = _tf()
        sc = self._scaffold.finalize()
        g = tf.get_default_graph()
        opts = {"is_chief": self._is_chief, "logdir": self._checkpoint_dir,
                "prepare_only": True, "save_model_secs": 0.0, "save_summaries_secs": 0.0,
                "recovery_wait_secs": 0.5, "max_wait_secs": float(self._max_wait_secs),
                "summary_op": False}
        for key in ("init_op", "local_init_op", "ready_op", "ready_for_local_init_op"):
            op = getattr(sc, key)
            if op is not None:
                opts[key] = (op.op if isinstance(op, tf.Tensor) else op)._op
        if sc.saver is None:
            opts["saver"] = False
        else:
            opts["saver"] = sc.saver._saver
        gs = tf.train.get_global_step(g)
        if gs is not None:
            opts["global_step"] = tf.convert_to_tensor(gs)._out
        return g, _rill.Supervisor(g._g, opts)

    def create_session(self):
        tf = _tf()
        g, sv = self._supervisor()
        config = self._config or tf.ConfigProto()
        restored = bool(self._checkpoint_dir) and self._scaffold.saver is not None and \
            tf.train.latest_checkpoint(self._checkpoint_dir) is not None
        rs = sv.prepare_or_wait_for_session(tf._session_options(config, self._master))
        sess = tf.Session._adopt(g, rs, config, None)  # rs keeps sv alive
        if self._is_chief and not restored and self._scaffold.init_fn is not None:
            self._scaffold.init_fn(sess)
        return sess


class ChiefSessionCreator(_PreparedSessionCreator):
    """tf.train.ChiefSessionCreator: restores the latest checkpoint of checkpoint_dir or
    initialises the model."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        if checkpoint_filename_with_path is not None:
            raise ValueError("rill: ChiefSessionCreator(checkpoint_filename_with_path=...) is not "
                             "supported; restore from a checkpoint_dir")
        super().__init__(True, scaffold, master, config, checkpoint_dir, 7200)


class WorkerSessionCreator(_PreparedSessionCreator):
    """tf.train.WorkerSessionCreator: waits (max_wait_secs) until the chief made the model
    ready, then runs the local init op."""

    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        super().__init__(False, scaffold, master, config, None, max_wait_secs)


# --- MonitoredSession ---

def _preemption_errors():
    tf = _tf()
    return (tf.errors.AbortedError, tf.errors.UnavailableError)


class _MonitoredSession:
    """What MonitoredSession and SingularMonitoredSession share (TF's _MonitoredSession)."""

    def __init__(self, session_creator, hooks, should_recover, stop_grace_period_secs=120):
        tf = _tf()
        self._hooks = list(hooks or [])
        for h in self._hooks:
            h.begin()
        self._creator = session_creator or ChiefSessionCreator()
        self._should_recover = should_recover
        self._grace = stop_grace_period_secs
        self._graph = tf.get_default_graph()
        self._sess = None
        self._coord = None
        self._threads = []
        self._should_stop = False
        self._closed = False
        self._create()

    def _create(self):
        tf = _tf()
        self._sess = self._creator.create_session()
        self._coord = tf.train.Coordinator(
            clean_stop_exception_types=(tf.errors.OutOfRangeError, StopIteration))
        self._threads = tf.train.start_queue_runners(self._sess, self._coord)
        for h in self._hooks:
            h.after_create_session(self._sess, self._coord)

    @property
    def graph(self):
        return self._graph

    def _tf_sess(self):
        return self._sess

    def should_stop(self):
        return self._closed or self._should_stop or (self._coord is not None and
                                                     self._coord.should_stop())

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._closed:
            raise RuntimeError("Session is already closed.")
        while True:
            try:
                return self._hooked_run(fetches, feed_dict, options, run_metadata)
            except _preemption_errors() as e:
                if not self._should_recover:
                    raise
                _log().info("An error was raised. This may be due to a preemption in a "
                            "connected worker or parameter server. The current session will "
                            "be closed and a new session will be created. This error may also "
                            "occur due to a gRPC failure caused by high memory or network "
                            "bandwidth usage in the parameter servers. If this error occurs "
                            "repeatedly, try increasing the number of parameter servers "
                            "assigned to the job. Error: %s", e)
                self._close_session()
                self._create()

    def _hooked_run(self, fetches, feed_dict, options, run_metadata):
        if self._should_stop:
            raise RuntimeError("Run called even after should_stop requested.")
        ctx = SessionRunContext(SessionRunArgs(fetches, feed_dict), self._sess)
        actual = {"caller": fetches}
        feeds = dict(feed_dict or {})
        user_keys = set(feeds)
        hook_fed = set()
        for i, h in enumerate(self._hooks):
            req = h.before_run(ctx)
            if req is None:
                continue
            if req.fetches is not None:
                actual[i] = req.fetches
            if req.feed_dict:
                for k, v in req.feed_dict.items():
                    if k in user_keys:
                        raise RuntimeError("Same tensor is fed by a SessionRunHook and user. "
                                           f"Conflict(s): {[k]}")
                    if k in hook_fed:
                        raise RuntimeError(f"Same tensor is fed by two hooks. Conflict(s): {[k]}")
                    hook_fed.add(k)
                    feeds[k] = v
            if req.options is not None and options is None:
                options = req.options
        out = self._sess.run(actual, feed_dict=feeds or None, options=options,
                             run_metadata=run_metadata)
        for i, h in enumerate(self._hooks):
            h.after_run(ctx, SessionRunValues(out.get(i), options, run_metadata))
        self._should_stop = self._should_stop or ctx.stop_requested
        return out["caller"]

    def run_step_fn(self, step_fn):
        """step_fn(step_context): step_context.session is this session's raw session,
        step_context.run_with_hooks runs through the hooks, request_stop() ends the loop."""
        outer = self

        class StepContext:
            def __init__(self):
                self.session = outer._sess

            def run_with_hooks(self, fetches, feed_dict=None, options=None, run_metadata=None):
                return outer._hooked_run(fetches, feed_dict, options, run_metadata)

            def request_stop(self):
                outer._should_stop = True

        return step_fn(StepContext())

    def _close_session(self):
        """Stops the coordinator's threads, then closes the session. A thread still in a step
        a second after the stop request (the sync chief's queue runner waiting for gradients
        that no worker will send, where TF's close hangs) is cancelled by closing the session
        under it; the others get stop_grace_period_secs."""
        import time
        tf = _tf()
        if self._coord is not None:
            self._coord.request_stop()
            end = time.time() + 1.0
            for t in self._threads:
                t.join(max(0.0, end - time.time()))
        if self._sess is not None:
            self._sess.close()
        self._sess = None
        if self._coord is not None:
            try:
                self._coord.join(self._threads, stop_grace_period_secs=self._grace,
                                 ignore_live_threads=True)
            except (tf.errors.OutOfRangeError, StopIteration, tf.errors.CancelledError):
                pass

    def _close_internal(self, exception_type=None):
        if self._closed:
            return
        try:
            if not exception_type and self._sess is not None:
                for h in self._hooks:
                    h.end(self._sess)
        finally:
            self._closed = True
            self._close_session()
            self._report_finished()

    def _report_finished(self):
        """On a cluster, a worker done with its MonitoredSession tells the ps tasks (which
        exit once every worker has, as after a Supervisor's stop())."""
        from . import train
        master = getattr(self._creator, "_master", "") or ""
        srv = train._SERVERS.get(master if isinstance(master, str) else master.decode())
        if srv is not None:
            srv._report_finished()

    def close(self):
        self._close_internal()

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        tf = _tf()
        if exception_type in (tf.errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None

    def __del__(self):
        # a program that never closes it (or leaves its with block by an exception of the
        # interpreter's exit) still stops its queue-runner threads and its session
        try:
            if not getattr(self, "_closed", True):
                self._close_internal(SystemExit)
        except Exception:  # noqa: BLE001
            pass


class MonitoredSession(_MonitoredSession):
    """tf.train.MonitoredSession(session_creator=None, hooks=None, stop_grace_period_secs=120):
    a session that runs hooks around each run, recovers from a ps restart, and stops on
    request (should_stop)."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        super().__init__(session_creator, hooks, True, stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """tf.train.SingularMonitoredSession: a chief's MonitoredSession without recovery, with
    raw_session()."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None, checkpoint_dir=None,
                 stop_grace_period_secs=120, checkpoint_filename_with_path=None):
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                      checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, False, stop_grace_period_secs)

    def raw_session(self):
        return self._sess


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None, scaffold=None,
                             hooks=None, chief_only_hooks=None, save_checkpoint_secs=USE_DEFAULT,
                             save_summaries_steps=USE_DEFAULT, save_summaries_secs=USE_DEFAULT,
                             config=None, stop_grace_period_secs=120, log_step_count_steps=100,
                             max_wait_secs=7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir=None):
    """tf.train.MonitoredTrainingSession: a MonitoredSession for training. The chief restores
    or initialises and runs, besides `hooks` and `chief_only_hooks`: a StepCounterHook
    (log_step_count_steps) and a SummarySaverHook (save_summaries_steps, default 100) into
    summary_dir (default checkpoint_dir), and a CheckpointSaverHook (save_checkpoint_secs,
    default 600, or save_checkpoint_steps) into checkpoint_dir. The others wait for the model
    and run `hooks` only."""
    from . import _hooks
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    scaffold = scaffold or Scaffold()
    if not is_chief:
        creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                       max_wait_secs=max_wait_secs)
        return MonitoredSession(session_creator=creator, hooks=list(hooks or []),
                                stop_grace_period_secs=stop_grace_period_secs)
    all_hooks = list(chief_only_hooks or []) + list(hooks or [])
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir,
                                  master=master, config=config)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(_hooks.StepCounterHook(output_dir=summary_dir,
                                                    every_n_steps=log_step_count_steps))
        if (save_summaries_steps and save_summaries_steps > 0) or \
                (save_summaries_secs and save_summaries_secs > 0):
            all_hooks.append(_hooks.SummarySaverHook(scaffold=scaffold,
                                                     save_steps=save_summaries_steps,
                                                     save_secs=save_summaries_secs,
                                                     output_dir=summary_dir))
    if checkpoint_dir:
        if (save_checkpoint_secs and save_checkpoint_secs > 0) or \
                (save_checkpoint_steps and save_checkpoint_steps > 0):
            all_hooks.append(_hooks.CheckpointSaverHook(checkpoint_dir,
                                                        save_steps=save_checkpoint_steps,
                                                        save_secs=save_checkpoint_secs,
                                                        scaffold=scaffold))
    return MonitoredSession(session_creator=creator, hooks=all_hooks,
                            stop_grace_period_secs=stop_grace_period_secs)

