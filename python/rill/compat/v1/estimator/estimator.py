"""tf.estimator.Estimator over rill: each train/evaluate/predict call builds a fresh graph from
input_fn and model_fn, restores the latest checkpoint of model_dir (or initialises), and runs
the loop TF's MonitoredTrainingSession runs with the Estimator's default hooks: checkpoints
model.ckpt-N (at the start, every save_checkpoints_steps or _secs, and at the end), summaries
(the loss, global_step/sec) every save_summary_steps into model_dir, and TF's INFO log lines
("loss = 0.5, step = 1") every log_step_count_steps, through the Python logger "tensorflow"
(TF 1.x's tf.logging: shown once its level is INFO). Evaluation writes its metrics into
model_dir/eval (eval_<name>). The loop ends at steps/max_steps or when the input ends
(OutOfRangeError).

Hooks are TF's SessionRunHook protocol (begin, after_create_session, before_run returning
SessionRunArgs or None, after_run, end), duck-typed."""
import collections
import inspect
import logging
import os
import sys
import tempfile
import time

import numpy as np


__all__ = ["Estimator", "EstimatorSpec", "ModeKeys", "RunConfig"]


def _tf():
    import rill.compat.v1 as tf
    return tf


def _logger():
    log = logging.getLogger("tensorflow")
    if not log.handlers:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("%(levelname)s:tensorflow:%(message)s"))
        log.addHandler(h)
        log.propagate = False
        if log.level == logging.NOTSET:
            log.setLevel(logging.WARNING)  # TF 1.x's default verbosity
    return log


def _info(msg, *args):
    _logger().info(msg, *args)


class ModeKeys:
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


class RunConfig:
    """What the Estimator's loop does when: checkpoints (every save_checkpoints_secs, 600 by
    default, or save_checkpoints_steps; not both), summaries, logs, the graph seed."""

    _UNSET = object()

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=_UNSET, save_checkpoints_secs=_UNSET,
                 session_config=None, keep_checkpoint_max=5,
                 keep_checkpoint_every_n_hours=10000, log_step_count_steps=100,
                 train_distribute=None, device_fn=None, protocol=None, eval_distribute=None,
                 experimental_distribute=None, experimental_max_worker_delay_secs=None,
                 session_creation_timeout_secs=7200):
        steps = None if save_checkpoints_steps is self._UNSET else save_checkpoints_steps
        secs = None if save_checkpoints_secs is self._UNSET else save_checkpoints_secs
        if steps is not None and secs is not None:
            raise ValueError("Can not provide both save_checkpoints_steps and "
                             "save_checkpoints_secs.")
        if steps is None and secs is None and save_checkpoints_secs is self._UNSET:
            secs = 600
        self._model_dir = None if model_dir is None else os.fspath(model_dir)
        self._tf_random_seed = tf_random_seed
        self._save_summary_steps = save_summary_steps
        self._save_checkpoints_steps = steps
        self._save_checkpoints_secs = secs
        self._session_config = session_config
        self._keep_checkpoint_max = keep_checkpoint_max
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._log_step_count_steps = log_step_count_steps
        self._device_fn = device_fn

    model_dir = property(lambda self: self._model_dir)
    tf_random_seed = property(lambda self: self._tf_random_seed)
    save_summary_steps = property(lambda self: self._save_summary_steps)
    save_checkpoints_steps = property(lambda self: self._save_checkpoints_steps)
    save_checkpoints_secs = property(lambda self: self._save_checkpoints_secs)
    session_config = property(lambda self: self._session_config)
    keep_checkpoint_max = property(lambda self: self._keep_checkpoint_max)
    keep_checkpoint_every_n_hours = property(lambda self: self._keep_checkpoint_every_n_hours)
    log_step_count_steps = property(lambda self: self._log_step_count_steps)
    device_fn = property(lambda self: self._device_fn)
    is_chief = property(lambda self: True)
    num_ps_replicas = property(lambda self: 0)
    num_worker_replicas = property(lambda self: 1)
    task_type = property(lambda self: "worker")
    task_id = property(lambda self: 0)
    master = property(lambda self: "")

    def replace(self, **kwargs):
        new = RunConfig.__new__(RunConfig)
        new.__dict__.update(self.__dict__)
        for k, v in kwargs.items():
            if not hasattr(self, "_" + k):
                raise ValueError(f"Replacing {k} is not supported. Allowed properties are "
                                 "model_dir, tf_random_seed, save_summary_steps, "
                                 "save_checkpoints_steps, save_checkpoints_secs, "
                                 "session_config, keep_checkpoint_max, "
                                 "keep_checkpoint_every_n_hours, log_step_count_steps.")
            setattr(new, "_" + k, v)
        if new._save_checkpoints_steps is not None and new._save_checkpoints_secs is not None:
            raise ValueError("Can not provide both save_checkpoints_steps and "
                             "save_checkpoints_secs.")
        return new


class EstimatorSpec(collections.namedtuple(
        "EstimatorSpec", ["mode", "predictions", "loss", "train_op", "eval_metric_ops",
                          "export_outputs", "training_chief_hooks", "training_hooks",
                          "scaffold", "evaluation_hooks", "prediction_hooks"])):
    """What model_fn returns: TRAIN needs loss and train_op, EVAL loss, PREDICT predictions.
    export_outputs and scaffold are accepted (rill exports no SavedModel)."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_chief_hooks=None, training_hooks=None,
                scaffold=None, evaluation_hooks=None, prediction_hooks=None):
        tf = _tf()
        if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
            raise ValueError(f"mode={mode} unrecognized.")
        if mode == ModeKeys.TRAIN and train_op is None:
            raise ValueError("Missing train_op.")
        if mode != ModeKeys.PREDICT and loss is None:
            raise ValueError("Missing loss.")
        if loss is not None:
            loss = tf.convert_to_tensor(loss)
            if loss.shape.ndims not in (None, 0) and \
                    not (loss.shape.ndims == 1 and loss.shape[0] == 1):
                raise ValueError(f"Loss must be scalar, given: {loss!r}")
        if mode == ModeKeys.PREDICT and predictions is None:
            raise ValueError("Missing predictions.")
        if predictions is None:
            predictions = {}
        if isinstance(predictions, dict):
            for k, v in predictions.items():
                if not isinstance(v, (tf.Tensor, tf.Variable)):
                    raise TypeError(f"predictions[{k}] must be Tensor, given: {v!r}")
        elif not isinstance(predictions, (tf.Tensor, tf.Variable)):
            raise TypeError(f"predictions must be Tensor or dict of string to Tensor, given: "
                            f"{predictions!r}")
        eval_metric_ops = dict(eval_metric_ops or {})
        for k, v in eval_metric_ops.items():
            if not isinstance(v, tuple) or len(v) != 2:
                raise TypeError(f"Values of eval_metric_ops must be (metric_value, update_op) "
                                f"tuples, given: {v} for key: {k}")
        return super().__new__(cls, mode, predictions, loss, train_op, eval_metric_ops,
                               export_outputs, tuple(training_chief_hooks or ()),
                               tuple(training_hooks or ()), scaffold,
                               tuple(evaluation_hooks or ()), tuple(prediction_hooks or ()))


class _RunContext:
    """TF's SessionRunContext."""

    def __init__(self, original_args, session):
        self.original_args = original_args
        self.session = session
        self._stop = False

    def request_stop(self):
        self._stop = True

    @property
    def stop_requested(self):
        return self._stop


class _RunValues(collections.namedtuple("SessionRunValues",
                                        ["results", "options", "run_metadata"])):
    pass


def _call_with(fn, available):
    """fn(**the arguments it names of available), TF's model_fn/input_fn introspection."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(**available)
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return fn(**available)
    return fn(**{k: v for k, v in available.items() if k in params})


class Estimator:
    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None):
        if not callable(model_fn):
            raise ValueError("model_fn must be provided to Estimator.")
        try:
            names = inspect.signature(model_fn).parameters
        except (TypeError, ValueError):
            names = {}
        if names and "features" not in names:
            raise ValueError(f"model_fn ({model_fn}) must include features argument.")
        if config is None:
            config = RunConfig()
        elif not isinstance(config, RunConfig):
            raise ValueError(f"config must be an instance of `RunConfig`, but provided "
                             f"{config}.")
        if model_dir is not None and config.model_dir is not None and \
                os.fspath(model_dir) != config.model_dir:
            raise ValueError("`model_dir` are set both in constructor and `RunConfig`, but "
                             f"with different values. In constructor: '{model_dir}', in "
                             f"`RunConfig`: '{config.model_dir}' ")
        model_dir = os.fspath(model_dir) if model_dir is not None else config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp()
            logging.getLogger("tensorflow").warning(
                "Using temporary folder as model directory: %s", model_dir)
            _logger()
        self._model_dir = model_dir
        self._config = config.replace(model_dir=model_dir)
        self._params = dict(params or {})
        self._model_fn = model_fn
        self._warm_start_from = warm_start_from
        _info("Using config: %s", {k.lstrip("_"): v for k, v in vars(self._config).items()})

    model_dir = property(lambda self: self._model_dir)
    config = property(lambda self: self._config)
    params = property(lambda self: dict(self._params))
    model_fn = property(lambda self: self._model_fn)

    # --- checkpoints ---

    def latest_checkpoint(self):
        return _tf().train.latest_checkpoint(self._model_dir)

    # --- graph building ---

    def _build(self, input_fn, mode):
        tf = _tf()
        if self._config.tf_random_seed is not None:
            tf.set_random_seed(self._config.tf_random_seed)
        global_step = tf.train.get_or_create_global_step()
        result = _call_with(input_fn, {"mode": mode, "params": self._params,
                                       "config": self._config})
        if isinstance(result, (tuple, list)):
            if len(result) != 2:
                raise ValueError("input_fn should return (features, labels) as a len 2 tuple.")
            features, labels = result
        else:
            features, labels = result, None
        spec = _call_with(self._model_fn, {"features": features, "labels": labels,
                                           "mode": mode, "params": self._params,
                                           "config": self._config})
        if not isinstance(spec, EstimatorSpec):
            raise ValueError(f"model_fn should return an EstimatorSpec. Given: {spec}")
        return spec, global_step

    def _session(self, g, saver, ckpt):
        tf = _tf()
        sess = tf.Session(graph=g, config=self._config.session_config)
        with g.as_default():
            if ckpt:
                _info("Restoring parameters from %s", ckpt)
                saver.restore(sess, ckpt)
            else:
                sess.run(tf.global_variables_initializer())
            sess.run(tf.local_variables_initializer())
        return sess

    @staticmethod
    def _start_input(sess):
        """The graph's queue runners (the input_fn's queues), on daemon threads."""
        tf = _tf()
        coord = tf.train.Coordinator()
        return coord, tf.train.start_queue_runners(sess, coord)

    @staticmethod
    def _stop_input(coord, threads):
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10, ignore_live_threads=True)

    @staticmethod
    def _run(sess, g, fetches):
        return sess.run(fetches)

    # --- train ---

    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        tf = _tf()
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        ckpt = self.latest_checkpoint()
        if max_steps is not None and ckpt is not None:
            done = int(ckpt.rsplit("-", 1)[-1]) if "-" in os.path.basename(ckpt) else 0
            if done >= max_steps:
                _info("Skipping training since max_steps has already saved.")
                return self
        hooks = list(hooks or [])
        g = tf.Graph()
        with g.as_default():
            spec, global_step = self._build(input_fn, ModeKeys.TRAIN)
            hooks += list(spec.training_hooks) + list(spec.training_chief_hooks)
            loss_summary = tf.summary.scalar("loss", spec.loss)
            summary_op = tf.summary.merge_all()
            saver = tf.train.Saver(max_to_keep=self._config.keep_checkpoint_max,
                                   keep_checkpoint_every_n_hours=self._config
                                   .keep_checkpoint_every_n_hours)
            del loss_summary
            for h in hooks:
                if hasattr(h, "begin"):
                    h.begin()
        _info("Create CheckpointSaverHook.")
        _info("Graph was finalized.")
        os.makedirs(self._model_dir, exist_ok=True)
        sess = self._session(g, saver, ckpt)
        writer = tf.summary.FileWriter(self._model_dir, graph=g)
        prefix = os.path.join(self._model_dir, "model.ckpt")
        coord, threads = self._start_input(sess)
        try:
            for h in hooks:
                if hasattr(h, "after_create_session"):
                    h.after_create_session(sess, None)
            step = int(sess.run(global_step))
            last_step = step + steps if steps is not None else max_steps

            def save(at):
                _info("Saving checkpoints for %d into %s.", at, prefix)
                path = saver.save(sess, prefix, global_step=at)
                for lst in saving_listeners or []:
                    if hasattr(lst, "after_save"):
                        lst.after_save(sess, at)
                return path

            save(step)
            saved_at, saved_time = step, time.time()
            cfg = self._config
            log_every = cfg.log_step_count_steps
            sum_every = cfg.save_summary_steps
            rate_step, rate_time = step, time.time()
            log_time = time.time()
            loss = None
            first = True
            while last_step is None or step < last_step:
                fetches = {"train_op": spec.train_op, "loss": spec.loss, "step": global_step}
                want_summary = bool(sum_every) and summary_op is not None and \
                    (first or (step + 1) % sum_every == 0)
                if want_summary:
                    fetches["summary"] = summary_op
                extra = []
                ctx = _RunContext(fetches, sess)
                for h in hooks:
                    args = h.before_run(ctx) if hasattr(h, "before_run") else None
                    extra.append(getattr(args, "fetches", None))
                for i, e in enumerate(extra):
                    if e is not None:
                        fetches[("hook", i)] = e
                try:
                    out = self._run(sess, g, fetches)
                except tf.errors.OutOfRangeError:
                    break
                loss = out["loss"]
                step = int(sess.run(global_step))
                for i, h in enumerate(hooks):
                    if hasattr(h, "after_run"):
                        h.after_run(ctx, _RunValues(out.get(("hook", i)), None, None))
                if "summary" in out:
                    writer.add_summary(out["summary"], step)
                if log_every and (first or step % log_every == 0):
                    now = time.time()
                    if first:
                        _info("loss = %s, step = %d", loss, step)
                    else:
                        _info("loss = %s, step = %d (%.3f sec)", loss, step, now - log_time)
                        rate = (step - rate_step) / max(now - rate_time, 1e-9)
                        _info("global_step/sec: %g", rate)
                        writer.add_summary(tf.Summary(value=[tf.Summary.Value(
                            tag="global_step/sec", simple_value=float(rate))]), step)
                        rate_step, rate_time = step, now
                    log_time = now
                first = False
                if cfg.save_checkpoints_steps and step - saved_at >= cfg.save_checkpoints_steps:
                    save(step)
                    saved_at, saved_time = step, time.time()
                elif cfg.save_checkpoints_secs and \
                        time.time() - saved_time >= cfg.save_checkpoints_secs:
                    save(step)
                    saved_at, saved_time = step, time.time()
                if ctx.stop_requested:
                    break
            if saved_at != step:
                save(step)
            for h in hooks:
                if hasattr(h, "end"):
                    h.end(sess)
            if loss is not None:
                _info("Loss for final step: %s.", loss)
        finally:
            self._stop_input(coord, threads)
            writer.close()
            sess.close()
        return self

    # --- evaluate ---

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        tf = _tf()
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        ckpt = checkpoint_path or self.latest_checkpoint()
        hooks = list(hooks or [])
        g = tf.Graph()
        with g.as_default():
            spec, global_step = self._build(input_fn, ModeKeys.EVAL)
            metrics = dict(spec.eval_metric_ops)
            if "loss" not in metrics:
                metrics["loss"] = tf.metrics.mean(spec.loss)
            hooks += list(spec.evaluation_hooks)
            saver = tf.train.Saver()
            for h in hooks:
                if hasattr(h, "begin"):
                    h.begin()
        if ckpt is None:
            _info("Could not find trained model in model_dir: %s, running initialization to "
                  "evaluate.", self._model_dir)
        _info("Starting evaluation at %s", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        sess = self._session(g, saver, ckpt)
        coord, threads = self._start_input(sess)
        try:
            for h in hooks:
                if hasattr(h, "after_create_session"):
                    h.after_create_session(sess, None)
            updates = [u for _, u in metrics.values()]
            n = 0
            while steps is None or n < steps:
                try:
                    self._run(sess, g, updates)
                except tf.errors.OutOfRangeError:
                    break
                n += 1
                if steps is not None:
                    _info("Evaluation [%d/%d]", n, steps)
            keys = sorted(metrics)
            vals = sess.run([metrics[k][0] for k in keys] + [global_step])
            results = {k: v for k, v in zip(keys, vals[:-1])}
            results["global_step"] = vals[-1]
            for h in hooks:
                if hasattr(h, "end"):
                    h.end(sess)
        finally:
            self._stop_input(coord, threads)
            sess.close()
        _info("Finished evaluation at %s", time.strftime("%Y-%m-%d-%H:%M:%S", time.gmtime()))
        _info("Saving dict for global step %d: %s", results["global_step"],
              ", ".join(f"{k} = {str(results[k])}" for k in sorted(results)))
        eval_dir = os.path.join(self._model_dir, "eval" if not name else "eval_" + name)
        os.makedirs(eval_dir, exist_ok=True)
        with tf.summary.FileWriter(eval_dir) as w:
            vals = [tf.Summary.Value(tag=k, simple_value=float(v))
                    for k, v in sorted(results.items())
                    if k != "global_step" and np.ndim(v) == 0]
            w.add_summary(tf.Summary(value=vals), int(results["global_step"]))
        return results

    # --- predict ---

    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        tf = _tf()
        ckpt = checkpoint_path or self.latest_checkpoint()
        if ckpt is None:
            _info("Could not find trained model in model_dir: %s, running initialization to "
                  "predict.", self._model_dir)
        g = tf.Graph()
        with g.as_default():
            spec, _ = self._build(input_fn, ModeKeys.PREDICT)
            preds = spec.predictions
            single = not isinstance(preds, dict)
            if not single and predict_keys is not None:
                keys = [predict_keys] if isinstance(predict_keys, str) else list(predict_keys)
                missing = [k for k in keys if k not in preds]
                if missing:
                    raise ValueError(f"Expected to run at least one output from {list(preds)}, "
                                     f"provided {keys}.")
                preds = {k: preds[k] for k in keys}
            saver = tf.train.Saver()
        sess = self._session(g, saver, ckpt)
        coord, threads = self._start_input(sess)
        try:
            while True:
                try:
                    out = self._run(sess, g, preds)
                except tf.errors.OutOfRangeError:
                    return
                if not yield_single_examples:
                    yield out
                    continue
                if single:
                    for row in out:
                        yield row
                    continue
                n = {len(v) for v in out.values() if np.ndim(v) > 0}
                if len(n) != 1:
                    raise ValueError("Batch length of predictions should be same. "
                                     f"{ {k: np.shape(v) for k, v in out.items()} }")
                for i in range(n.pop()):
                    yield {k: v[i] for k, v in out.items()}
        finally:
            self._stop_input(coord, threads)
            sess.close()
