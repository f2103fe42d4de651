"""tf.FIFOQueue and tf.RandomShuffleQueue (TF's data_flow_ops) over rill's queue ops
(src/graph/ops_queue.c): the queue op outputs a handle (queue_ref) that every method's op takes;
ops are named as TF names them ("fifo_queue_enqueue", "fifo_queue_DequeueMany", ...)."""
from . import _local_variables as _lv

__all__ = ["QueueBase", "FIFOQueue", "RandomShuffleQueue"]

_DEFAULT_GRAPH_SEED = 87654321


def _tf():
    import rill.compat.v1 as tf
    return tf


def _as_shape(s):
    tf = _tf()
    if isinstance(s, tf.TensorShape):
        return s.dims
    if s is None:
        return None
    if isinstance(s, int):
        return [s]
    return [None if d is None else int(d) for d in s]


def _encode_shapes(shapes):
    out = []
    for s in shapes:
        if s is None:
            out.append(-1)
            continue
        out.append(len(s))
        out.extend(-1 if d is None else int(d) for d in s)
    return out


def _get_seed(seed):
    """TF's random_seed.get_seed for an op: (seed1, seed2)."""
    g = _tf().get_default_graph()
    gs = getattr(g, "_seed", None)
    if gs is not None:
        if seed is None:
            g._queue_seed_count = getattr(g, "_queue_seed_count", 0) + 1
            seed = g._queue_seed_count
        seeds = (gs, seed)
    elif seed is not None:
        seeds = (_DEFAULT_GRAPH_SEED, seed)
    else:
        seeds = (0, 0)
    if seeds == (0, 0) and (gs is not None or seed is not None):
        seeds = (0, 2**31 - 1)
    return seeds


class QueueBase:
    """A queue of tuples of tensors (dtypes; shapes, when given, fix each component's)."""

    def __init__(self, dtypes, shapes, names, queue_ref):
        self._dtypes = dtypes
        self._shapes = shapes
        self._names = names
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name
        self._base = self._name.rsplit("/", 1)[-1]  # what the ops' default names start with

    @property
    def queue_ref(self):
        return self._queue_ref

    @property
    def name(self):
        return self._name

    @property
    def dtypes(self):
        return list(self._dtypes)

    @property
    def shapes(self):
        tf = _tf()
        return [tf.TensorShape(s) for s in self._shapes]

    @property
    def names(self):
        return self._names

    def _attrs(self):
        return {"component_types": ("ints", [d.enum for d in self._dtypes]),
                "shapes": ("ints", _encode_shapes(self._shapes)
                           if all(s is not None for s in self._shapes) else [])}

    def _components(self, vals, many):
        tf = _tf()
        if self._names is not None:
            if not isinstance(vals, dict):
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names) != sorted(vals):
                raise ValueError(f"Keys in dictionary to enqueue do not match names of Queue. "
                                 f"Dictionary: {sorted(vals)}, Queue: {sorted(self._names)}")
            vals = [vals[k] for k in self._names]
        elif isinstance(vals, dict):
            raise ValueError("Queue must have names to enqueue a dictionary")
        if not isinstance(vals, (list, tuple)):
            vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(f"Expected {len(self._dtypes)} components for queue "
                             f"{self._name}, got {len(vals)}")
        out = []
        for i, (v, dt) in enumerate(zip(vals, self._dtypes)):
            t = tf.convert_to_tensor(v, dtype=dt, name=f"component_{i}")
            s = self._shapes[i]
            got = t.shape.dims
            if s is not None and got is not None:
                el = got[1:] if many else got
                if many and not got:
                    raise ValueError(f"Shape {t.shape} must have rank at least 1")
                if len(el) != len(s) or any(a is not None and b is not None and a != b
                                            for a, b in zip(el, s)):
                    raise ValueError(f"Shapes {tuple(el)} and {tuple(s)} are incompatible")
            out.append(t)
        return out

    def _op(self, type, default, inputs, name, attrs=None, control_inputs=()):
        g = self._queue_ref.graph
        return g._make(type, name or default, [self._queue_ref] + list(inputs), attrs or {},
                       control_inputs=control_inputs)

    def enqueue(self, vals, name=None):
        with self._queue_ref.graph.as_default():
            comps = self._components(vals, False)
            return self._op("QueueEnqueueV2", f"{self._base}_enqueue", comps, name,
                            {"Tcomponents": ("ints", [c.dtype.enum for c in comps])})

    def enqueue_many(self, vals, name=None):
        with self._queue_ref.graph.as_default():
            comps = self._components(vals, True)
            return self._op("QueueEnqueueManyV2", f"{self._base}_EnqueueMany", comps, name,
                            {"Tcomponents": ("ints", [c.dtype.enum for c in comps])})

    def _result(self, op):
        outs = op.outputs
        if self._names is not None:
            return dict(zip(self._names, outs))
        return outs[0] if len(outs) == 1 else list(outs)

    def _dequeue(self, type, default, n, name):
        tf = _tf()
        g = self._queue_ref.graph
        with g.as_default():
            inputs = [] if n is None else [tf.convert_to_tensor(n, dtype=tf.int32, name="n")]
            attrs = self._attrs()
            attrs["num_outputs"] = ("int", len(self._dtypes))
            return self._result(self._op(type, default, inputs, name, attrs))

    def dequeue(self, name=None):
        return self._dequeue("QueueDequeueV2", f"{self._base}_Dequeue", None, name)

    def dequeue_many(self, n, name=None):
        return self._dequeue("QueueDequeueManyV2", f"{self._base}_DequeueMany", n, name)

    def dequeue_up_to(self, n, name=None):
        return self._dequeue("QueueDequeueUpToV2", f"{self._base}_DequeueUpTo", n, name)

    def close(self, cancel_pending_enqueues=False, name=None):
        return self._op("QueueCloseV2", f"{self._base}_Close", [], name,
                        {"cancel_pending_enqueues": ("bool", bool(cancel_pending_enqueues))})

    def size(self, name=None):
        return self._op("QueueSizeV2", f"{self._base}_Size", [], name).outputs[0]

    def is_closed(self, name=None):
        raise TypeError("rill's queues have no is_closed op; run close() and catch the "
                        "OutOfRangeError of a dequeue")


def _normalize(dtypes, shapes, names):
    tf = _tf()
    if not isinstance(dtypes, (list, tuple)):
        dtypes = [dtypes]
    dtypes = [tf.as_dtype(d) for d in dtypes]
    if shapes is None:
        shapes = [None] * len(dtypes)
    else:
        if not isinstance(shapes, (list, tuple)) or (shapes and all(
                isinstance(d, int) or d is None for d in shapes) and len(dtypes) == 1
                and not isinstance(shapes[0], (list, tuple, tf.TensorShape))):
            shapes = [shapes]
        shapes = [_as_shape(s) for s in shapes]
        if len(shapes) != len(dtypes):
            raise ValueError("Queue shapes must have the same length as dtypes")
        for s in shapes:
            if s is None or any(d is None for d in s):
                raise ValueError(f"Queue shapes must have fully defined shapes; got "
                                 f"{tf.TensorShape(s)}")
    if names is not None:
        if isinstance(names, str):
            names = [names]
        names = list(names)
        if len(names) != len(dtypes):
            raise ValueError("Queue names must have the same length as dtypes")
    return dtypes, shapes, names


class FIFOQueue(QueueBase):
    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None,
                 name="fifo_queue"):
        tf = _tf()
        dtypes, shapes, names = _normalize(dtypes, shapes, names)
        g = tf.get_default_graph()
        attrs = {"capacity": ("int", int(capacity)), "shared_name": ("string", shared_name or ""),
                 "component_types": ("ints", [d.enum for d in dtypes]),
                 "shapes": ("ints", _encode_shapes(shapes) if shapes[0] is not None else [])}
        ref = g._make("FIFOQueueV2", name, (), attrs).outputs[0]
        super().__init__(dtypes, shapes, names, ref)


class RandomShuffleQueue(QueueBase):
    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None, seed=None,
                 shared_name=None, name="random_shuffle_queue"):
        tf = _tf()
        dtypes, shapes, names = _normalize(dtypes, shapes, names)
        seed1, seed2 = _get_seed(seed)
        g = tf.get_default_graph()
        attrs = {"capacity": ("int", int(capacity)),
                 "min_after_dequeue": ("int", int(min_after_dequeue)),
                 "seed": ("int", int(seed1)), "seed2": ("int", int(seed2)),
                 "shared_name": ("string", shared_name or ""),
                 "component_types": ("ints", [d.enum for d in dtypes]),
                 "shapes": ("ints", _encode_shapes(shapes) if shapes[0] is not None else [])}
        ref = g._make("RandomShuffleQueueV2", name, (), attrs).outputs[0]
        super().__init__(dtypes, shapes, names, ref)


del _lv
