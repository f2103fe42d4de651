"""tf.data (TF 1.x graph mode): input pipelines as dataset and iterator ops that rill's runtime
runs in C (src/kernels/cpu/cpu_dataset.c), not a Python loop.

A Dataset is a dataset-handle tensor plus the structure of its elements (nested tuples, dicts
and namedtuples of components; a list is one tensor, as in TF) with each component's dtype and
shape. map and filter trace the Python function once into the same graph, under a name scope,
with a placeholder per component: the MapDataset op names those placeholders and the function's
outputs, and its kernel runs that subgraph per element with a cached plan. Numpy arrays become
constants of the graph, as TF embeds them."""
import collections as _collections

import numpy as _np

from . import errors  # noqa: F401
from .dtypes import as_dtype as _as_dtype, int64 as _int64, bool as _bool

__all__ = ["Dataset", "Iterator", "make_one_shot_iterator", "make_initializable_iterator"]


def _v1():
    import sys
    return sys.modules[__package__]


# --- nested structures (TF's nest, for what datasets hold) ---

def _is_struct(x):
    return isinstance(x, (tuple, dict))


def _flatten(x):
    if isinstance(x, dict):
        return [y for k in sorted(x) for y in _flatten(x[k])]
    if isinstance(x, tuple):
        return [y for e in x for y in _flatten(e)]
    return [x]


def _pack(template, flat):
    it = iter(flat)

    def build(t):
        if isinstance(t, dict):
            vals = {k: build(t[k]) for k in sorted(t)}
            return type(t)((k, vals[k]) for k in t) if not isinstance(t, _collections.OrderedDict) \
                else _collections.OrderedDict((k, vals[k]) for k in t)
        if isinstance(t, tuple):
            items = [build(e) for e in t]
            return type(t)(*items) if hasattr(t, "_fields") else tuple(items)
        return next(it)

    return build(template)


def _map_struct(fn, x):
    return _pack(x, [fn(v) for v in _flatten(x)])


def _shape_spec(shape):
    """[rank, dims...] for output_shapes (rank -1: unknown; dim -1: unknown)."""
    if shape.ndims is None:
        return [-1]
    return [shape.ndims] + [-1 if d is None else int(d) for d in shape._dims]


def _const64(v, name):
    """An int64 scalar argument: a tensor (cast when another integer type) or a constant."""
    tf = _v1()
    if isinstance(v, (tf.Tensor, tf.Variable)):
        return v if v.dtype == _int64 else tf.cast(v, _int64, name=name)
    return tf.constant(int(v), dtype=_int64, name=name)


class Dataset:
    """tf.data.Dataset: build with the static constructors, chain the transformations, iterate
    with make_one_shot_iterator() or make_initializable_iterator()."""

    def __init__(self, variant, structure, types, shapes):
        self._variant = variant
        self._structure = structure  # the element's nesting, components as None
        self._types = types          # flat DTypes
        self._shapes = shapes        # flat TensorShapes

    # -- making datasets --

    @staticmethod
    def _components(tensors, slices):
        tf = _v1()
        flat = []
        for i, t in enumerate(_flatten(tensors)):
            if not isinstance(t, (tf.Tensor, tf.Variable)):
                t = tf.convert_to_tensor(t, name=f"component_{i}")
            elif isinstance(t, tf.Variable):
                t = t.value()
            flat.append(t)
        shapes = []
        for t in flat:
            s = t.shape
            if slices:
                if s.ndims == 0:
                    raise ValueError("Unbatching a tensor is only supported for rank >= 1")
                s = tf.TensorShape(None if s.ndims is None else s._dims[1:])
            shapes.append(s)
        if slices:
            d0 = {t.shape._dims[0] for t in flat if t.shape.ndims and t.shape._dims[0] is not None}
            if len(d0) > 1:
                a, b = sorted(d0)[:2]
                raise ValueError(f"Dimensions {a} and {b} are not compatible")
        return flat, shapes

    @staticmethod
    def from_tensor_slices(tensors):
        tf = _v1()
        with tf.name_scope("tensors"):
            flat, shapes = Dataset._components(tensors, True)
        op = tf.get_default_graph()._make("TensorSliceDataset", "TensorSliceDataset", flat)
        return Dataset(op.outputs[0], _map_struct(lambda _: None, tensors),
                       [t.dtype for t in flat], shapes)

    @staticmethod
    def from_tensors(tensors):
        tf = _v1()
        with tf.name_scope("tensors"):
            flat, shapes = Dataset._components(tensors, False)
        op = tf.get_default_graph()._make("TensorDataset", "TensorDataset", flat)
        return Dataset(op.outputs[0], _map_struct(lambda _: None, tensors),
                       [t.dtype for t in flat], shapes)

    @staticmethod
    def range(*args):
        tf = _v1()
        if not 1 <= len(args) <= 3:
            raise ValueError("Invalid arguments to RangeDataset: %s" % (args,))
        start, stop, step = (0, args[0], 1) if len(args) == 1 else \
            (args[0], args[1], 1) if len(args) == 2 else args
        ins = [_const64(start, "start"), _const64(stop, "stop"), _const64(step, "step")]
        op = tf.get_default_graph()._make("RangeDataset", "RangeDataset", ins)
        return Dataset(op.outputs[0], None, [_int64], [tf.TensorShape([])])

    @staticmethod
    def zip(datasets):
        tf = _v1()
        flat = _flatten(datasets)
        for d in flat:
            if not isinstance(d, Dataset):
                raise TypeError("The argument to `Dataset.zip()` must be a (nested) structure "
                                f"of `Dataset` objects, got {type(d).__name__}.")
        op = tf.get_default_graph()._make("ZipDataset", "ZipDataset", [d._variant for d in flat])
        structure = _pack(datasets, [d._structure for d in flat])
        return Dataset(op.outputs[0], structure, [t for d in flat for t in d._types],
                       [s for d in flat for s in d._shapes])

    # -- transformations --

    def _unary(self, type, args, types=None, shapes=None, structure=None, attrs=None):
        tf = _v1()
        op = tf.get_default_graph()._make(type, type, [self._variant] + list(args), attrs)
        structure = self._structure if structure is None else structure
        return Dataset(op.outputs[0], None if structure is _SCALAR else structure,
                       self._types if types is None else types,
                       self._shapes if shapes is None else shapes)

    def _trace(self, fn, kind):
        """Traces fn over the element into the graph: (attrs naming the body, output tensors,
        output structure)."""
        tf = _v1()
        g = tf.get_default_graph()
        with g.control_dependencies(None), g.name_scope(f"{kind}_fn"):
            args = [tf.placeholder(t, s._dims, name=f"arg{i}")
                    for i, (t, s) in enumerate(zip(self._types, self._shapes))]
            element = args[0] if self._structure is None else _pack(self._structure, args)
            if isinstance(element, tuple) and not hasattr(element, "_fields"):
                result = fn(*element)
            else:
                result = fn(element)
            if isinstance(result, list):
                result = tuple(result)
            flat = []
            for i, r in enumerate(_flatten(result)):
                r = tf.convert_to_tensor(r)
                flat.append(g._make("Identity", f"output_{i}", (r,),
                                    {"T": ("type", r.dtype.enum)}).outputs[0])
        attrs = {"f_args": ("tensor", (_np.array([a.op.name for a in args], dtype=object), 7)),
                 "f_outputs": ("tensor", (_np.array([o.name for o in flat], dtype=object), 7))}
        return attrs, flat, _map_struct(lambda _: None, result)

    def map(self, map_func, num_parallel_calls=None):
        attrs, outs, structure = self._trace(map_func, "map")
        return self._unary("MapDataset", [], [o.dtype for o in outs], [o.shape for o in outs],
                           structure if _is_struct(structure) else _SCALAR, attrs)

    def filter(self, predicate):
        attrs, outs, _ = self._trace(predicate, "filter")
        if len(outs) != 1 or outs[0].dtype != _bool or outs[0].shape.ndims not in (None, 0):
            raise ValueError("`predicate` return type must be convertible to a scalar boolean "
                             "tensor.")
        return self._unary("FilterDataset", [], attrs=attrs)

    def batch(self, batch_size, drop_remainder=False):
        tf = _v1()
        bs = _const64(batch_size, "batch_size")
        dr = tf.constant(bool(drop_remainder), dtype=_bool, name="drop_remainder")
        lead = int(batch_size) if drop_remainder else None
        shapes = [tf.TensorShape(None) if s.ndims is None else tf.TensorShape([lead] + s._dims)
                  for s in self._shapes]
        return self._unary("BatchDatasetV2", [bs, dr], shapes=shapes)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        attrs = {"reshuffle_each_iteration": ("bool", reshuffle_each_iteration is not False)}
        # seeded as a random op (TF's get_seed: the graph seed applies when the op has none)
        from ._random_ops import _seed_attrs
        if seed is not None or getattr(_v1().get_default_graph(), "seed", None) is not None:
            attrs.update(_seed_attrs(seed))
        return self._unary("ShuffleDataset", [_const64(buffer_size, "buffer_size")],
                           attrs=attrs)

    def repeat(self, count=None):
        return self._unary("RepeatDataset", [_const64(-1 if count is None else count, "count")])

    def prefetch(self, buffer_size):
        return self._unary("PrefetchDataset", [_const64(buffer_size, "buffer_size")])

    def take(self, count):
        return self._unary("TakeDataset", [_const64(count, "count")])

    def skip(self, count):
        return self._unary("SkipDataset", [_const64(count, "count")])

    # -- TF 1.x properties --

    @property
    def output_types(self):
        return self._nest(self._types)

    @property
    def output_shapes(self):
        return self._nest(self._shapes)

    @property
    def output_classes(self):
        tf = _v1()
        return self._nest([tf.Tensor] * len(self._types))

    def _nest(self, flat):
        return flat[0] if self._structure is None else _pack(self._structure, flat)

    # -- iterators --

    def make_one_shot_iterator(self):
        tf = _v1()
        op = tf.get_default_graph()._make("OneShotIterator", "OneShotIterator", [self._variant])
        return Iterator(op.outputs[0], None, self._structure, self._types, self._shapes)

    def make_initializable_iterator(self, shared_name=None):
        it = Iterator.from_structure(self.output_types, self.output_shapes,
                                     shared_name=shared_name)
        it._structure = self._structure
        it._initializer = it.make_initializer(self)
        return it

    def __repr__(self):
        return f"<DatasetV1 shapes: {self.output_shapes}, types: {self.output_types}>"


_SCALAR = object()  # a map's result that is one tensor


DatasetV1 = Dataset


class Iterator:
    """tf.data.Iterator (TF 1.x): get_next() gives the element's structure of tensors; an
    initializable one has .initializer (and make_initializer for from_structure's)."""

    def __init__(self, handle, initializer, structure, types, shapes):
        self._handle = handle
        self._initializer = initializer
        self._structure = structure
        self._types = list(types)
        self._shapes = list(shapes)

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None, output_classes=None):
        tf = _v1()
        types = [_as_dtype(t) for t in _flatten(output_types)]
        if output_shapes is None:
            shapes = [tf.TensorShape(None)] * len(types)
        else:
            template = output_types if _is_struct(output_types) else None
            sflat = _flatten(output_shapes) if template is not None else [output_shapes]
            shapes = [s if isinstance(s, tf.TensorShape) else tf.TensorShape(s) for s in sflat]
        attrs = {"shared_name": ("string", shared_name)} if shared_name else None
        op = tf.get_default_graph()._make("IteratorV2", "Iterator", (), attrs)
        structure = _map_struct(lambda _: None, output_types) if _is_struct(output_types) else None
        return Iterator(op.outputs[0], None, structure, types, shapes)

    @property
    def initializer(self):
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    def make_initializer(self, dataset, name=None):
        tf = _v1()
        if len(dataset._types) != len(self._types) or any(
                a != b for a, b in zip(dataset._types, self._types)):
            raise TypeError(f"Expected output types {self.output_types} but got dataset with "
                            f"output types {dataset.output_types}.")
        return tf.get_default_graph()._make("MakeIterator", name or "MakeIterator",
                                            [dataset._variant, self._handle])

    def get_next(self, name=None):
        tf = _v1()
        spec = [v for s in self._shapes for v in _shape_spec(s)]
        op = tf.get_default_graph()._make("IteratorGetNext", name or "IteratorGetNext",
                                          [self._handle], {
                                              "output_types": ("ints", [t.enum for t in self._types]),
                                              "output_shapes": ("tensor", (_np.array(spec, dtype=_np.int64), 9)),
                                              "num_outputs": ("int", len(self._types))})
        outs = op.outputs
        return outs[0] if self._structure is None else _pack(self._structure, outs)

    @property
    def output_types(self):
        return self._types[0] if self._structure is None else _pack(self._structure, self._types)

    @property
    def output_shapes(self):
        return self._shapes[0] if self._structure is None else _pack(self._structure, self._shapes)

    @property
    def output_classes(self):
        tf = _v1()
        flat = [tf.Tensor] * len(self._types)
        return flat[0] if self._structure is None else _pack(self._structure, flat)


def make_one_shot_iterator(dataset):
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset, shared_name=None):
    return dataset.make_initializable_iterator(shared_name)


def get_output_types(dataset):
    return dataset.output_types


def get_output_shapes(dataset):
    return dataset.output_shapes


def get_output_classes(dataset):
    return dataset.output_classes


class experimental:  # noqa: N801  (tf.data.experimental)
    AUTOTUNE = -1
