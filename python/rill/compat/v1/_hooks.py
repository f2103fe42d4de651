"""TF's standard SessionRunHooks (tf.train.*Hook), over rill's sessions, Saver and event files,
with TF's arguments, checks, log lines and files: StopAtStepHook, CheckpointSaverHook (with
CheckpointSaverListener), SummarySaverHook, StepCounterHook, LoggingTensorHook, NanTensorHook,
FinalOpsHook, FeedFnHook, GlobalStepWaiterHook, ProfilerHook's timer (SecondOrStepTimer)."""
import logging
import os
import time

import numpy as np

from ._monitored import SessionRunArgs, SessionRunHook

__all__ = ["SecondOrStepTimer", "StopAtStepHook", "CheckpointSaverListener",
           "CheckpointSaverHook", "SummarySaverHook", "StepCounterHook", "LoggingTensorHook",
           "NanTensorHook", "NanLossDuringTrainingError", "FinalOpsHook", "FeedFnHook",
           "GlobalStepWaiterHook"]


def _tf():
    import rill.compat.v1 as tf
    return tf


def _log():
    return logging.getLogger("tensorflow")


def _global_step_tensor(hook_name):
    tf = _tf()
    gs = tf.train.get_global_step()
    if gs is None:
        raise RuntimeError(f"Global step should be created to use {hook_name}.")
    return tf.convert_to_tensor(gs)


def _as_tensor(x):
    tf = _tf()
    if isinstance(x, str):  # a name; without ":N" its first output, as TF's hooks take it
        return tf.get_default_graph().get_tensor_by_name(x if ":" in x else x + ":0")
    return x


class SecondOrStepTimer:
    """Triggers every every_secs seconds or every every_steps steps (exactly one of them)."""

    def __init__(self, every_secs=None, every_steps=None):
        if (every_steps is None) == (every_secs is None):
            raise ValueError("Either every_secs or every_steps should be provided, but not both.")
        if (every_steps is not None and every_steps <= 0) or \
                (every_secs is not None and every_secs <= 0):
            raise ValueError("Either every_secs or every_steps should be a positive number.")
        self._every_secs, self._every_steps = every_secs, every_steps
        self.reset()

    def reset(self):
        self._last_triggered_step = None
        self._last_triggered_time = None

    def should_trigger_for_step(self, step):
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None:
            return time.time() >= self._last_triggered_time + self._every_secs
        return step >= self._last_triggered_step + self._every_steps

    def update_last_triggered_step(self, step):
        now = time.time()
        if self._last_triggered_time is None:
            elapsed = (None, None)
        else:
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time, self._last_triggered_step = now, step
        return elapsed

    def last_triggered_step(self):
        return self._last_triggered_step


class StopAtStepHook(SessionRunHook):
    """Requests stop once the global step reaches last_step (or num_steps more than at the
    session's start)."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps, self._last_step = num_steps, last_step

    def begin(self):
        self._gs = _global_step_tensor("StopAtStepHook")

    def after_create_session(self, session, coord):
        if self._last_step is None:
            self._last_step = int(session.run(self._gs)) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._gs)

    def after_run(self, run_context, run_values):
        if int(run_values.results) + 1 >= self._last_step:
            # what was fetched may be stale: read the step again before stopping
            if int(run_context.session.run(self._gs)) >= self._last_step:
                run_context.request_stop()


class CheckpointSaverListener:
    """Called around the CheckpointSaverHook's saves; after_save returning True stops."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


def _writer(output_dir):
    return _tf().summary.FileWriterCache.get(output_dir)


class CheckpointSaverHook(SessionRunHook):
    """Saves checkpoint_dir/checkpoint_basename-STEP every save_secs or save_steps (exactly one),
    at the session's start (the state it begins from) and at the end; writes graph.pbtxt and
    the graph into the directory's event file, and a SessionLog CHECKPOINT for each save."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None,
                 save_graph_def=True):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver, self._scaffold = saver, scaffold
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])
        self._save_graph_def = save_graph_def

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        tf = _tf()
        savers = tf.get_collection(tf.GraphKeys.SAVERS)
        if not savers:
            raise RuntimeError("No items in collection {}. Please add a saver to the collection "
                               "or provide a saver or scaffold.".format(tf.GraphKeys.SAVERS))
        if len(savers) > 1:
            raise RuntimeError("More than one item in collection {}. Please indicate which one "
                               "to use by passing it to the constructor.".format(
                                   tf.GraphKeys.SAVERS))
        self._saver = savers[0]
        return savers[0]

    def begin(self):
        self._summary_writer = _writer(self._checkpoint_dir)
        self._gs = _global_step_tensor("CheckpointSaverHook")
        for lst in self._listeners:
            lst.begin()

    def after_create_session(self, session, coord):
        tf = _tf()
        step = int(session.run(self._gs))
        if self._save_graph_def:
            g = tf.get_default_graph()
            tf.train.write_graph(g, self._checkpoint_dir, "graph.pbtxt")
            self._summary_writer.add_graph(g)
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context):
        return SessionRunArgs(self._gs)

    def after_run(self, run_context, run_values):
        stale = int(run_values.results)
        if self._timer.should_trigger_for_step(stale + 1):
            step = int(run_context.session.run(self._gs))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session):
        step = int(session.run(self._gs))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for lst in self._listeners:
            lst.end(session, step)

    def _save(self, session, step):
        tf = _tf()
        _log().info("Saving checkpoints for %d into %s.", step, self._save_path)
        for lst in self._listeners:
            lst.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=step)
        self._summary_writer.add_session_log(
            tf.SessionLog(status=tf.SessionLog.CHECKPOINT, checkpoint_path=self._save_path), step)
        stop = False
        for lst in self._listeners:
            if lst.after_save(session, step):
                _log().info("A CheckpointSaverListener requested that training be stopped. "
                            "listener: %s", lst)
                stop = True
        return stop


class SummarySaverHook(SessionRunHook):
    """Writes summary_op (or the scaffold's) every save_steps or save_secs into output_dir (or
    summary_writer), and a SessionLog START first."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None,
                 scaffold=None, summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op, self._scaffold = summary_op, scaffold
        self._summary_writer, self._output_dir = summary_writer, output_dir
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = _writer(self._output_dir)
        self._next_step = None
        self._gs = _global_step_tensor("SummarySaverHook")

    def _ops(self):
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return None
        return list(op) if isinstance(op, (list, tuple)) else [op]

    def before_run(self, run_context):
        self._request_summary = self._next_step is None or \
            self._timer.should_trigger_for_step(self._next_step)
        requests = {"global_step": self._gs}
        if self._request_summary and self._ops() is not None:
            requests["summary"] = self._ops()
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values):
        tf = _tf()
        if not self._summary_writer:
            return
        step = int(run_values.results["global_step"]) + 1
        if self._next_step is None or self._request_summary:
            step = int(run_context.session.run(self._gs))
        if self._next_step is None:
            self._summary_writer.add_session_log(tf.SessionLog(status=tf.SessionLog.START), step)
        if self._request_summary:
            self._timer.update_last_triggered_step(step)
            for s in run_values.results.get("summary", ()):
                self._summary_writer.add_summary(s, step)
        self._next_step = step + 1

    def end(self, session=None):
        if self._summary_writer:
            self._summary_writer.flush()


class StepCounterHook(SessionRunHook):
    """Logs and writes '<global step>/sec' every every_n_steps or every_n_secs."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None,
                 summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer, self._output_dir = summary_writer, output_dir

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = _writer(self._output_dir)
        self._gs = _global_step_tensor("StepCounterHook")
        self._summary_tag = self._gs.op.name + "/sec"

    def before_run(self, run_context):
        return SessionRunArgs(self._gs)

    def after_run(self, run_context, run_values):
        tf = _tf()
        stale = int(run_values.results)
        if not self._timer.should_trigger_for_step(stale + 1):
            return
        step = int(run_context.session.run(self._gs))
        if not self._timer.should_trigger_for_step(step):
            return
        elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(step)
        if elapsed_time is None or elapsed_time <= 0:
            return
        rate = elapsed_steps / elapsed_time
        if self._summary_writer is not None:
            self._summary_writer.add_summary(tf.Summary(value=[tf.Summary.Value(
                tag=self._summary_tag, simple_value=float(rate))]), step)
        _log().info("%s: %g", self._summary_tag, rate)


class LoggingTensorHook(SessionRunHook):
    """Logs the values of tensors (a dict tag -> tensor or name, or a list) every every_n_iter
    local steps or every_n_secs, and/or at the end: 'tag = value, ...'."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False,
                 formatter=None):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs "
                             "must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, dict):
            self._tag_order = [getattr(t, "name", t) for t in tensors]
            tensors = {getattr(t, "name", t): t for t in tensors}
        else:
            self._tag_order = sorted(tensors)
        self._tensors = tensors
        self._formatter = formatter
        self._log_at_end = at_end
        self._timer = None if only_log_at_end else \
            SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)

    def begin(self):
        self._iter_count = 0
        self._current = {tag: _as_tensor(t) for tag, t in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = self._timer is not None and \
            self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current) if self._should_trigger else None

    def _log_tensors(self, values):
        with np.printoptions(suppress=True):
            if self._formatter:
                _log().info(self._formatter(values))
                return
            stats = ["%s = %s" % (tag, values[tag]) for tag in self._tag_order]
            elapsed = None
            if self._timer is not None:
                elapsed, _ = self._timer.update_last_triggered_step(self._iter_count)
            if elapsed is not None:
                _log().info("%s (%.3f sec)", ", ".join(stats), elapsed)
            else:
                _log().info("%s", ", ".join(stats))

    def after_run(self, run_context, run_values):
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            self._log_tensors(session.run(self._current))


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self):
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Stops training (fail_on_nan_loss: raises NanLossDuringTrainingError) when loss is NaN."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss_tensor, self._fail_on_nan_loss = loss_tensor, fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results):
            msg = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                _log().error(msg)
                raise NanLossDuringTrainingError
            _log().warning(msg)
            run_context.request_stop()


class FinalOpsHook(SessionRunHook):
    """Runs final_ops (with final_ops_feed_dict) at the end; final_ops_values has the results."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops, self._final_ops_feed_dict = final_ops, final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session):
        if self._final_ops is not None:
            self._final_ops_values = session.run(self._final_ops,
                                                 feed_dict=self._final_ops_feed_dict)


class FeedFnHook(SessionRunHook):
    """Feeds feed_fn()'s dict into every run."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class GlobalStepWaiterHook(SessionRunHook):
    """Holds this worker's first run until the global step reaches wait_until_step (so that
    it starts on a model the others already moved)."""

    def __init__(self, wait_until_step):
        self._wait_until_step = wait_until_step

    def begin(self):
        self._worker_is_started = False
        self._gs = _global_step_tensor("_GlobalStepWaiterHook")

    def before_run(self, run_context):
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        _log().info("Waiting for global step %d before starting training.",
                    self._wait_until_step)
        last_logged = 0
        while True:
            step = int(run_context.session.run(self._gs))
            if step >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if step - last_logged > 1000:
                _log().info("Waiting for global step %d before starting training. Current step "
                            "is %d.", self._wait_until_step, step)
                last_logged = step
            time.sleep(0.5)
