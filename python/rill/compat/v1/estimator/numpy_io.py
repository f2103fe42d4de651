"""tf.estimator.inputs.numpy_input_fn: as TF's, the input_fn puts the arrays' rows into a
queue (a RandomShuffleQueue of queue_capacity, min_after_dequeue = capacity / 4, when shuffle;
else a FIFOQueue) from num_threads queue-runner threads that feed batch_size rows at a time
through placeholders, and returns dequeue_up_to(batch_size) of it: num_epochs passes over the
rows, the last batch may be short, and the end of the data is the queue's OutOfRangeError
("FIFOQueue '_1_enqueue_input/fifo_queue' is closed and has insufficient elements ...").
The queue runner joins QUEUE_RUNNERS: an Estimator starts it, and so does
tf.train.start_queue_runners."""
import collections

import numpy as np

__all__ = ["numpy_input_fn"]

_TARGET_KEY = "__target_key__"


def _tf():
    import rill.compat.v1 as tf
    return tf


class _Feeder:
    """The batches of one input_fn call: next_feed() is the next step's {placeholder: rows}."""

    def __init__(self, arrays, placeholders, batch_size, num_epochs, shuffle, seed):
        self._arrays = arrays
        self._placeholders = placeholders
        self._n = len(next(iter(arrays.values())))
        self._batch_size = batch_size
        self._num_epochs = num_epochs
        self._shuffle = shuffle
        self._rng = np.random.RandomState(seed)
        self._epoch = 0
        self._order = np.zeros(0, dtype=np.int64)
        self._pos = 0

    def _refill(self):
        if self._num_epochs is not None and self._epoch >= self._num_epochs:
            return False
        order = np.arange(self._n)
        if self._shuffle:
            self._rng.shuffle(order)
        self._order = np.concatenate([self._order[self._pos:], order])
        self._pos = 0
        self._epoch += 1
        return True

    def next_feed(self):
        while len(self._order) - self._pos < self._batch_size and self._n and self._refill():
            pass
        idx = self._order[self._pos:self._pos + self._batch_size]
        if len(idx) == 0:
            tf = _tf()
            raise tf.errors.OutOfRangeError("numpy_input_fn: the rows of every epoch are "
                                            "enqueued")
        self._pos += len(idx)
        return {self._placeholders[k]: a[idx] for k, a in self._arrays.items()}


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000,
                   num_threads=1):
    """An input_fn returning (features, labels) batches of the numpy arrays x (an array or a dict
    of them) and y (an array, a dict of them, or None)."""
    if not isinstance(shuffle, bool):
        raise ValueError("shuffle must be provided and explicitly set as boolean (it is "
                         f"recommended to set it as True for training); got {shuffle}")
    if not isinstance(x, (dict, np.ndarray)):
        raise TypeError(f"x must be a dict or array; got {type(x).__name__}")
    if isinstance(x, dict) and not x:
        raise ValueError("x cannot be an empty dict")
    if num_epochs is not None and int(num_epochs) <= 0:
        raise ValueError(f"num_epochs must be > 0 or None; got {num_epochs}")
    if int(batch_size) <= 0:
        raise ValueError(f"batch_size must be > 0; got {batch_size}")
    if int(num_threads) <= 0:
        raise ValueError(f"num_threads must be > 0; got {num_threads}")

    def input_fn():
        tf = _tf()
        ordered = collections.OrderedDict(sorted(x.items())) if isinstance(x, dict) else \
            collections.OrderedDict([("__x__", x)])
        if y is None:
            target = None
        elif isinstance(y, dict):
            if not y:
                raise ValueError("y cannot be empty dict, use None instead.")
            overlap = set(y) & set(ordered)
            if overlap:
                raise ValueError(f"{sorted(overlap)} duplicate keys are found in both x and y: "
                                 f"keys of x {sorted(ordered)}, keys of y {sorted(y)}.")
            target = collections.OrderedDict(sorted(y.items()))
        else:
            target = collections.OrderedDict([(_TARGET_KEY, y)])
        arrays = collections.OrderedDict((k, np.asarray(v)) for k, v in ordered.items())
        if target is not None:
            arrays.update((k, np.asarray(v)) for k, v in target.items())
        lengths = {k: len(v) for k, v in arrays.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError("Length of tensors in x and y is mismatched. All elements in x and "
                             "y must have the same length.\n"
                             + "\n".join(f"{k} has length {n}" for k, n in lengths.items()))
        g = tf.get_default_graph()
        from .._input import _FeedingQueueRunner, add_queue_runner
        phs = collections.OrderedDict()
        with tf.name_scope("enqueue_input"):
            for k, a in arrays.items():
                name = {"__x__": "x", _TARGET_KEY: "y"}.get(k, k)
                phs[k] = tf.placeholder(tf.as_dtype(a.dtype), [None] + list(a.shape[1:]),
                                        name="placeholder_" + name)
            dtypes = [phs[k].dtype for k in phs]
            shapes = [list(arrays[k].shape[1:]) for k in phs]
            seed = getattr(g, "_seed", None)
            if shuffle:
                q = tf.RandomShuffleQueue(int(queue_capacity),
                                          max(int(queue_capacity) // 4, 1), dtypes,
                                          shapes=shapes, seed=seed)
            else:
                q = tf.FIFOQueue(int(queue_capacity), dtypes, shapes=shapes)
            feeder = _Feeder(arrays, phs, int(batch_size), None if num_epochs is None
                             else int(num_epochs), shuffle, seed)
            threads = int(num_threads) if shuffle else 1  # TF: one thread keeps the order
            enqueue_ops = [q.enqueue_many([phs[k] for k in phs]) for _ in range(threads)]
            add_queue_runner(_FeedingQueueRunner(q, enqueue_ops, [feeder.next_feed] * threads))
        out = q.dequeue_up_to(int(batch_size))
        out = dict(zip(phs, out if isinstance(out, list) else [out]))
        features = out["__x__"] if "__x__" in out else {k: out[k] for k in ordered}
        if target is None:
            return features
        if _TARGET_KEY in target:
            return features, out[_TARGET_KEY]
        return features, {k: out[k] for k in target}

    return input_fn
