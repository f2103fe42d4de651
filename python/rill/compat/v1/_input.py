"""tf.train's queue-based input: Coordinator, QueueRunner, add_queue_runner,
start_queue_runners, and the producers and batchers built of queues and queue runners
(limit_epochs, input_producer, string_input_producer, range_input_producer,
slice_input_producer, batch, shuffle_batch), with TF's op and queue names and the
QUEUE_RUNNERS collection.

Queue-runner threads are daemon threads (as start_queue_runners makes them), and a session
still running them when the program ends is closed at exit, which cancels their steps: a
program that never stops its runners exits cleanly."""
import atexit
import contextlib
import logging
import sys
import threading
import time
import weakref

from . import _local_variables as _lv
from ._queues import FIFOQueue, RandomShuffleQueue

__all__ = []


def _tf():
    import rill.compat.v1 as tf
    return tf


# --- Coordinator ---

class Coordinator:
    """Threads stop together: any may request_stop (with an exception, which join re-raises);
    join waits for the registered threads, stop_grace_period_secs after a stop request."""

    def __init__(self, clean_stop_exception_types=None):
        tf = _tf()
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (tf.errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None
        self._joined = False
        self._registered_threads = set()

    def _filter_exception(self, ex):
        if isinstance(ex, tuple):
            ex2 = ex[1]
        else:
            ex2 = ex
        if isinstance(ex2, self._clean_stop_exception_types):
            return None
        return ex

    def request_stop(self, ex=None):
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined:
                if isinstance(ex, tuple):
                    _, ex_instance, _ = ex
                else:
                    ex_instance = ex
                if ex_instance is not None:
                    logging.getLogger("tensorflow").error(
                        "Coordinator: error reported after join: %r", ex_instance)
                    raise ex_instance
            if ex and self._exc_info_to_raise is None:
                if isinstance(ex, tuple):
                    self._exc_info_to_raise = ex
                else:
                    cur = sys.exc_info()
                    if cur[1] is ex:
                        self._exc_info_to_raise = cur
                    else:
                        self._exc_info_to_raise = (type(ex), ex, ex.__traceback__)
                if (len(self._exc_info_to_raise) != 3 or not self._exc_info_to_raise[0]
                        or not self._exc_info_to_raise[1]):
                    raise ValueError(f"ex must be a tuple or sys.exc_info must return the "
                                     f"current exception: {self._exc_info_to_raise}")
            self._stop_event.set()

    def clear_stop(self):
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            if self._stop_event.is_set():
                self._stop_event.clear()

    def should_stop(self):
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        try:
            yield
        except BaseException:  # noqa: B902 (TF's: any exception stops the threads)
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout=None):
        return self._stop_event.wait(timeout)

    def register_thread(self, thread):
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        with self._lock:
            if threads is None:
                threads = self._registered_threads
            else:
                threads = self._registered_threads.union(set(threads))
            threads = list(threads)
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        stragglers = []
        if any(t.is_alive() for t in threads):
            deadline = time.time() + stop_grace_period_secs
            while any(t.is_alive() for t in threads) and time.time() < deadline:
                time.sleep(0.01)
            stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise:
                _, ex, tb = self._exc_info_to_raise
                raise ex.with_traceback(tb)
        if stragglers:
            if ignore_live_threads:
                logging.getLogger("tensorflow").info(
                    "Coordinator stopped with threads still running: %s", " ".join(stragglers))
            else:
                raise RuntimeError("Coordinator stopped with threads still running: %s"
                                   % " ".join(stragglers))

    @property
    def joined(self):
        return self._joined

    def raise_requested_exception(self):
        with self._lock:
            if self._exc_info_to_raise:
                _, ex, tb = self._exc_info_to_raise
                raise ex.with_traceback(tb)


# Sessions queue runners run on: closed at exit (cancelling their steps) while the runner
# threads can still take the GIL, so that the interpreter never finalises under them.
_RUNNING_SESSIONS = weakref.WeakSet()


@atexit.register
def _close_running_sessions():
    for sess in list(_RUNNING_SESSIONS):
        try:
            sess.close()
        except Exception:
            pass


# --- QueueRunner ---

class QueueRunner:
    """Threads that run enqueue ops in a loop: one per op, until the queue is closed
    (OutOfRangeError: the last thread runs close_op), the session is closed, or the coordinator
    stops them (cancel_op then closes the queue, cancelling pending enqueues). Other errors go
    to the coordinator (or are raised from the thread without one)."""

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None, queue_runner_def=None, import_scope=None):
        tf = _tf()
        if queue_runner_def is not None:
            raise ValueError("rill has no QueueRunnerDef protos: pass queue and enqueue_ops")
        if enqueue_ops is None and isinstance(queue, tf.Operation):
            # what SyncReplicasOptimizer's chief queue runner is: one op run in a loop
            queue, enqueue_ops = None, [queue]
        if not enqueue_ops:
            raise ValueError("Must provide enqueue_ops.")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        if queue is not None:
            self._close_op = close_op if close_op is not None else queue.close()
            self._cancel_op = cancel_op if cancel_op is not None else \
                queue.close(cancel_pending_enqueues=True)
        else:
            self._close_op, self._cancel_op = close_op, cancel_op
        self._queue_closed_exception_types = tuple(
            queue_closed_exception_types or (tf.errors.OutOfRangeError,))
        self._lock = threading.Lock()
        self._runs_per_session = weakref.WeakKeyDictionary()
        self._exceptions_raised = []

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: list(self._enqueue_ops))
    close_op = property(lambda self: self._close_op)
    cancel_op = property(lambda self: self._cancel_op)
    queue_closed_exception_types = property(lambda self: self._queue_closed_exception_types)
    exceptions_raised = property(lambda self: list(self._exceptions_raised))

    @property
    def op(self):
        """The first enqueue op (what a Supervisor's C queue-runner thread runs)."""
        return self._enqueue_ops[0]

    @property
    def name(self):
        return self._queue.name if self._queue is not None else self._enqueue_ops[0].name

    def _run(self, sess, enqueue_op, coord=None):
        tf = _tf()
        decremented = False
        try:
            while True:
                if coord and coord.should_stop():
                    break
                try:
                    self._enqueue(sess, enqueue_op)
                except self._queue_closed_exception_types:
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        if self._runs_per_session[sess] == 0 and self._close_op is not None:
                            try:
                                sess.run(self._close_op)
                            except Exception as e:
                                logging.getLogger("tensorflow").info(
                                    "Ignored exception: %s", e)
                    return
        except (tf.errors.CancelledError, RuntimeError) as e:
            # the session was closed under the thread (or the coordinator's cancel_op ran)
            if isinstance(e, RuntimeError) and "closed Session" not in str(e):
                self._report(e, coord)
        except Exception as e:
            self._report(e, coord)
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _enqueue(self, sess, enqueue_op):
        sess.run(enqueue_op)

    def _report(self, e, coord):
        if coord:
            coord.request_stop(e)
        else:
            logging.getLogger("tensorflow").error("Exception in QueueRunner: %s", e)
            with self._lock:
                self._exceptions_raised.append(e)
            raise e

    def _close_on_stop(self, sess, cancel_op, coord):
        coord.wait_for_stop()
        if cancel_op is None:
            return
        try:
            sess.run(cancel_op)
        except Exception as e:
            logging.getLogger("tensorflow").debug("Ignored exception: %s", e)

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []  # already running in this session
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord),
                                    name=f"QueueRunnerThread-{self.name}-{op.name}-{i}")
                   for i, op in enumerate(self._enqueue_ops)]
        if coord:
            threads.append(threading.Thread(target=self._close_on_stop,
                                            args=(sess, self._cancel_op, coord),
                                            name=f"QueueRunnerThread-{self.name}-close_on_stop"))
        _RUNNING_SESSIONS.add(sess)
        for t in threads:
            if coord:
                coord.register_thread(t)
            if daemon:
                t.daemon = True
            if start:
                t.start()
        return threads


class _FeedingQueueRunner(QueueRunner):
    """A QueueRunner whose enqueue op i is run with feed_fns[i]() as its feed_dict; a feed_fn
    raising OutOfRangeError ends its thread as a closed queue does (the last one closes the
    queue). What tf.estimator.inputs.numpy_input_fn fills its queue with, as TF's does."""

    def __init__(self, queue, enqueue_ops, feed_fns):
        super().__init__(queue, enqueue_ops)
        self._feed_fns = list(feed_fns)
        self._feed_lock = threading.Lock()

    def _enqueue(self, sess, enqueue_op):
        i = self._enqueue_ops.index(enqueue_op)
        with self._feed_lock:
            fd = self._feed_fns[i]()
        sess.run(enqueue_op, feed_dict=fd)


def add_queue_runner(qr, collection=_lv.QUEUE_RUNNERS):
    _lv.add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True,
                        collection=_lv.QUEUE_RUNNERS):
    """Starts the threads of every queue runner of the collection in sess; returns them."""
    tf = _tf()
    if sess is None:
        sess = tf.get_default_session()
        if not sess:
            raise ValueError("Cannot start queue runners: No default session is registered. "
                             "Use `with sess.as_default()` or pass an explicit session to "
                             "tf.start_queue_runners(sess=sess)")
    if not isinstance(sess, tf.Session):
        raise TypeError(f"sess must be a `tf.Session` object. Given class: {type(sess)}")
    with sess.graph.as_default():
        threads = []
        for qr in _lv.get_collection(collection):
            threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads


# --- producers ---

def limit_epochs(tensor, num_epochs=None, name=None):
    """tensor, num_epochs times, then OutOfRangeError ("Reached limit of N"): each run counts
    up a local int64 variable "epochs" (CountUpTo)."""
    tf = _tf()
    if num_epochs is None:
        return tf.convert_to_tensor(tensor)
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    g = tf.get_default_graph()
    with tf.name_scope(name if name is not None else "limit_epochs"):
        epochs = _lv._local_variable([], tf.int64, "epochs", 0, collections=())
        counter = g._make("CountUpTo", "CountUpTo", (epochs._value,),
                          {"limit": ("int", int(num_epochs))})
        with g.control_dependencies([counter]):
            return tf.identity(tensor, name="limit_epochs" if name is None else name)


def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True, seed=None,
                   capacity=32, shared_name=None, summary_name=None, name=None,
                   cancel_op=None):
    """The rows of input_tensor into a FIFOQueue (shuffled per epoch when shuffle), num_epochs
    times, by a QueueRunner of the QUEUE_RUNNERS collection; returns the queue."""
    tf = _tf()
    with tf.name_scope(name if name is not None else "input_producer"):
        input_tensor = tf.convert_to_tensor(input_tensor, name="input_tensor")
        dims = input_tensor.shape.dims
        element_shape = (dims[1:] if element_shape is None else _dims(element_shape))
        if element_shape is None or any(d is None for d in element_shape):
            raise ValueError("Either `input_tensor` must have a fully defined shape "
                             "or `element_shape` must be specified")
        if shuffle:
            input_tensor = _random_shuffle(input_tensor, seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = FIFOQueue(capacity=capacity, dtypes=[input_tensor.dtype], shapes=[element_shape],
                      shared_name=shared_name, name="fifo_queue")
        enq = q.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(q, [enq], cancel_op=cancel_op))
        if summary_name is not None:
            size = tf.cast(q.size(), tf.float32) * (1.0 / capacity)
            tf.summary.scalar(summary_name, size)
        return q


def _dims(s):
    tf = _tf()
    return s.dims if isinstance(s, tf.TensorShape) else list(s)


def _random_shuffle(t, seed):
    """t's rows in a random order each run (TF's RandomShuffle): a RandomShuffleQueue the rows
    go into and come out of in one step, whole."""
    tf = _tf()
    n = t.shape.dims[0] if t.shape.dims else None
    if n is None:
        raise ValueError("rill's input producers need the number of input rows at build time")
    el = t.shape.dims[1:]
    q = RandomShuffleQueue(capacity=max(n, 1), min_after_dequeue=0, dtypes=[t.dtype],
                           shapes=[el], seed=seed, name="random_shuffle_rows")
    enq = q.enqueue_many([t])
    g = tf.get_default_graph()
    with g.control_dependencies([enq]):
        return q.dequeue_many(n)


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None, capacity=32,
                          shared_name=None, name=None, cancel_op=None):
    tf = _tf()
    with tf.name_scope(name if name is not None else "input_producer"):
        string_tensor = tf.convert_to_tensor(string_tensor, dtype=tf.string)
        return input_producer(string_tensor, [], num_epochs, shuffle, seed, capacity,
                              shared_name, "fraction_of_%d_full" % capacity, "", cancel_op)


def range_input_producer(limit, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    tf = _tf()
    with tf.name_scope(name if name is not None else "input_producer"):
        rng = tf.constant(list(range(int(limit))), dtype=tf.int32)
        return input_producer(rng, [], num_epochs, shuffle, seed, capacity, shared_name,
                              "fraction_of_%d_full" % capacity, "")


def slice_input_producer(tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """One row of each tensor of tensor_list at a time (the same row of all), num_epochs passes
    over the rows, shuffled per epoch when shuffle."""
    tf = _tf()
    with tf.name_scope(name if name is not None else "input_producer"):
        tensor_list = [tf.convert_to_tensor(t) for t in tensor_list]
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        n = tensor_list[0].shape.dims[0] if tensor_list[0].shape.dims else None
        for t in tensor_list[1:]:
            m = t.shape.dims[0] if t.shape.dims else None
            if n is not None and m is not None and n != m:
                raise ValueError(f"Dimension 0 in both shapes must be equal, but are {n} and "
                                 f"{m}.")
        if shuffle:
            rows = _shuffle_together(tensor_list, seed)
        else:
            rows = tensor_list
        rows = [limit_epochs(r, num_epochs) for r in rows[:1]] + rows[1:] \
            if num_epochs is not None else rows
        q = FIFOQueue(capacity, [r.dtype for r in rows], shapes=[r.shape.dims[1:] for r in rows],
                      shared_name=shared_name, name="fifo_queue")
        enq = q.enqueue_many(rows)
        add_queue_runner(QueueRunner(q, [enq]))
        out = q.dequeue()
        return out if isinstance(out, list) else [out]


def _shuffle_together(tensors, seed):
    """The rows of every tensor in one random order per run."""
    tf = _tf()
    n = tensors[0].shape.dims[0]
    q = RandomShuffleQueue(capacity=max(n, 1), min_after_dequeue=0,
                           dtypes=[t.dtype for t in tensors],
                           shapes=[t.shape.dims[1:] for t in tensors], seed=seed,
                           name="random_shuffle_rows")
    enq = q.enqueue_many(tensors)
    with tf.get_default_graph().control_dependencies([enq]):
        out = q.dequeue_many(n)
    return out if isinstance(out, list) else [out]


# --- batching ---

def _flatten(tensors):
    if isinstance(tensors, dict):
        keys = sorted(tensors)
        return keys, [tensors[k] for k in keys]
    if isinstance(tensors, (list, tuple)):
        return None, list(tensors)
    return "single", [tensors]


def _restore(keys, outs):
    if keys == "single":
        return outs[0]
    if keys is None:
        return outs
    return dict(zip(keys, outs))


def _keep(keep_input, enqueue_many):
    """TF's _validate_keep_input: a scalar, or with enqueue_many a vector, bool tensor."""
    tf = _tf()
    keep_input = tf.convert_to_tensor(keep_input)
    nd = keep_input.shape.ndims
    if nd is None:
        raise ValueError("`keep_input` dimensions must be known at graph construction.")
    if not enqueue_many and nd == 1:
        raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`.")
    if nd > 1:
        raise ValueError("`keep_input` must be 0 or 1 dimensions.")
    return keep_input


def _kept_rows(tensors, keep_input, enqueue_many):
    """The rows to enqueue (always an enqueue_many): the examples keep_input keeps, in order
    (TF: dynamic_partition for a vector keep_input, a cond around the enqueue for a scalar)."""
    tf = _tf()
    if not enqueue_many:
        tensors = [tf.expand_dims(t, 0) for t in tensors]
        keep_input = tf.reshape(keep_input, [1])
    idx = tf.reshape(tf.where(keep_input), [-1])
    return [tf.gather(t, idx) for t in tensors]


def _batch(queue_cls, tensors, batch_size, num_threads, enqueue_many, shapes,
           allow_smaller_final_batch, scope, default, keep_input=None, join=False, **qargs):
    """batch, shuffle_batch and their _join and maybe_ forms: one queue; per tensor list one
    enqueue op (num_threads copies of it unless join), run by one QueueRunner."""
    tf = _tf()
    with tf.name_scope(scope if scope is not None else default):
        if join:
            lists = list(tensors)
            if not lists:
                raise ValueError("Expected at least one tensor in batch_join().")
        else:
            lists = [tensors]
        keys, _ = _flatten(lists[0])
        flats = [[tf.convert_to_tensor(t) for t in _flatten(tl)[1]] for tl in lists]
        types = [t.dtype for t in flats[0]]
        for fl in flats[1:]:
            if [t.dtype for t in fl] != types:
                raise TypeError("Expected types to be consistent: %s vs. %s." %
                                (", ".join(x.name for x in types),
                                 ", ".join(t.dtype.name for t in fl)))
        flat = flats[0]
        if keep_input is not None:
            keep_input = _keep(keep_input, enqueue_many)
        if shapes is None:
            shapes = [t.shape.dims[1:] if enqueue_many else t.shape.dims for t in flat]
        shapes = [_dims(s) for s in shapes]
        for s in shapes:
            if s is None or any(d is None for d in s):
                raise ValueError(f"All shapes must be fully defined: {shapes}")
        q = queue_cls(dtypes=types, shapes=shapes, **qargs)
        enqs = []
        for fl in flats:
            if keep_input is not None:
                enqs.append(q.enqueue_many(_kept_rows(fl, keep_input, enqueue_many)))
            else:
                enqs.append(q.enqueue_many(fl) if enqueue_many else q.enqueue(fl))
        add_queue_runner(QueueRunner(q, enqs if join else enqs * int(num_threads)))
        cap = qargs["capacity"]
        extra = qargs.get("min_after_dequeue", 0)
        frac = tf.cast(tf.maximum(0, q.size() - extra), tf.float32) * (1.0 / (cap - extra)) \
            if cap > extra else None
        if frac is not None:
            tf.summary.scalar(("fraction_over_%d_of_%d_full" % (extra, cap - extra)) if extra
                              else "fraction_of_%d_full" % cap, frac)
        out = q.dequeue_up_to(batch_size) if allow_smaller_final_batch else \
            q.dequeue_many(batch_size)
        out = out if isinstance(out, list) else [out]
        return _restore(keys, out)


def _no_pad(dynamic_pad):
    if dynamic_pad:
        raise ValueError("dynamic_pad=True needs a PaddingFIFOQueue, which rill does not have")


def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
          dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    _no_pad(dynamic_pad)
    return _batch(FIFOQueue, tensors, batch_size, num_threads, enqueue_many, shapes,
                  allow_smaller_final_batch, name, "batch", capacity=capacity,
                  shared_name=shared_name, name="fifo_queue")


def maybe_batch(tensors, keep_input, batch_size, num_threads=1, capacity=32, enqueue_many=False,
                shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
                shared_name=None, name=None):
    _no_pad(dynamic_pad)
    return _batch(FIFOQueue, tensors, batch_size, num_threads, enqueue_many, shapes,
                  allow_smaller_final_batch, name, "batch", keep_input=keep_input,
                  capacity=capacity, shared_name=shared_name, name="fifo_queue")


def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None,
               dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    _no_pad(dynamic_pad)
    return _batch(FIFOQueue, tensors_list, batch_size, 1, enqueue_many, shapes,
                  allow_smaller_final_batch, name, "batch_join", join=True, capacity=capacity,
                  shared_name=shared_name, name="fifo_queue")


def maybe_batch_join(tensors_list, keep_input, batch_size, capacity=32, enqueue_many=False,
                     shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
                     shared_name=None, name=None):
    _no_pad(dynamic_pad)
    return _batch(FIFOQueue, tensors_list, batch_size, 1, enqueue_many, shapes,
                  allow_smaller_final_batch, name, "batch_join", keep_input=keep_input,
                  join=True, capacity=capacity, shared_name=shared_name, name="fifo_queue")


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None,
                  enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                  shared_name=None, name=None):
    return _batch(RandomShuffleQueue, tensors, batch_size, num_threads, enqueue_many, shapes,
                  allow_smaller_final_batch, name, "shuffle_batch", capacity=capacity,
                  min_after_dequeue=min_after_dequeue, seed=seed, shared_name=shared_name,
                  name="random_shuffle_queue")


def maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                        num_threads=1, seed=None, enqueue_many=False, shapes=None,
                        allow_smaller_final_batch=False, shared_name=None, name=None):
    return _batch(RandomShuffleQueue, tensors, batch_size, num_threads, enqueue_many, shapes,
                  allow_smaller_final_batch, name, "shuffle_batch", keep_input=keep_input,
                  capacity=capacity, min_after_dequeue=min_after_dequeue, seed=seed,
                  shared_name=shared_name, name="random_shuffle_queue")


def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None,
                       enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                       shared_name=None, name=None):
    return _batch(RandomShuffleQueue, tensors_list, batch_size, 1, enqueue_many, shapes,
                  allow_smaller_final_batch, name, "shuffle_batch_join", join=True,
                  capacity=capacity, min_after_dequeue=min_after_dequeue, seed=seed,
                  shared_name=shared_name, name="random_shuffle_queue")


def maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, keep_input,
                             seed=None, enqueue_many=False, shapes=None,
                             allow_smaller_final_batch=False, shared_name=None, name=None):
    return _batch(RandomShuffleQueue, tensors_list, batch_size, 1, enqueue_many, shapes,
                  allow_smaller_final_batch, name, "shuffle_batch_join", keep_input=keep_input,
                  join=True, capacity=capacity, min_after_dequeue=min_after_dequeue, seed=seed,
                  shared_name=shared_name, name="random_shuffle_queue")
