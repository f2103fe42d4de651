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

__all__ = ["Dataset", "Iterator", "make_one_shot_iterator", "make_initializable_iterator",
           "Options", "ThreadingOptions", "NumpyIterator", "DatasetSpec", "AUTOTUNE",
           "INFINITE_CARDINALITY",
           "UNKNOWN_CARDINALITY", "TextLineDataset", "TFRecordDataset",
           "FixedLengthRecordDataset"]

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2


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


_UNSET = object()
# outer ops a function's body reads itself (the body session shares the variables)
_NOT_CAPTURED = {"Const", "VariableV2", "Variable", "VarHandleOp"}


def _flat_dtype(t):
    """The dtype of a flat component: a dataset (DatasetSpec) travels as its int64 handle."""
    return _int64 if isinstance(t, DatasetSpec) else t


def _struct_sig(x):
    if isinstance(x, dict):
        return ("d", tuple((k, _struct_sig(x[k])) for k in sorted(x)))
    if isinstance(x, tuple):
        return ("t", tuple(_struct_sig(e) for e in x))
    return None


def _relax(a, b):
    """The most specific shape compatible with both (TF's most_specific_compatible_shape)."""
    tf = _v1()
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return tf.TensorShape(None)
    return tf.TensorShape([x if x == y else None for x, y in zip(a._dims, b._dims)])


def _same_shape(a, b):
    return a._dims == b._dims


def _flatten_up_to(structure, value):
    """value's leaves at structure's leaves (a shape may be a list: it is a leaf there)."""
    if structure is None:
        return [value]
    if isinstance(structure, dict):
        return [y for k in sorted(structure) for y in _flatten_up_to(structure[k], value[k])]
    if not isinstance(value, (tuple, list)) or len(value) != len(structure):
        raise ValueError("The two structures don't have the same nested structure.")
    return [y for s, v in zip(structure, value) for y in _flatten_up_to(s, v)]


def _wrap_outputs(outs, types):
    return [Dataset._of_spec(o, t) if isinstance(t, DatasetSpec) else o
            for o, t in zip(outs, types)]


def _placeholder_upstream(t):
    """The first Placeholder op that t depends on, or None."""
    seen, stack = set(), [t.op]
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type in ("Placeholder", "PlaceholderWithDefault"):
            return op
        stack.extend(x.op for x in op.inputs)
        stack.extend(op.control_inputs)
    return None


class TensorSpec:
    """tf.TensorSpec as tf.data's element_spec gives it: a shape, a dtype and a name."""

    def __init__(self, shape, dtype=None, name=None):
        from .dtypes import float32
        tf = _v1()
        self._shape = shape if isinstance(shape, tf.TensorShape) else tf.TensorShape(shape)
        self._dtype = _as_dtype(dtype if dtype is not None else float32)
        self._name = name

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    name = property(lambda self: self._name)

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and self._dtype == other._dtype and \
            self._shape._dims == other._shape._dims and self._name == other._name

    def __hash__(self):
        return hash((self._dtype, None if self._shape._dims is None else tuple(self._shape._dims)))

    def is_compatible_with(self, other):
        return self._dtype == other.dtype and self._shape.is_compatible_with(other.shape)

    def __repr__(self):
        return f"TensorSpec(shape={_shape_repr(self._shape)}, dtype=tf.{self._dtype.name}, " \
               f"name={self._name!r})"


def _shape_repr(s):
    if s.ndims is None:
        return "<unknown>"
    return "(" + ", ".join("None" if d is None else str(d) for d in s._dims) + \
        ("," if s.ndims == 1 else "") + ")"


class DatasetSpec:
    """tf.data.DatasetSpec: the type of a dataset-valued component (window's)."""

    def __init__(self, element_spec, dataset_shape=()):
        tf = _v1()
        flat = _flatten(element_spec)
        self._structure = _map_struct(lambda _: None, element_spec) \
            if _is_struct(element_spec) else None
        self._types = [e if isinstance(e, DatasetSpec) else e.dtype for e in flat]
        self._shapes = [tf.TensorShape([]) if isinstance(e, DatasetSpec) else e.shape
                        for e in flat]
        self._dataset_shape = tf.TensorShape(dataset_shape)

    @staticmethod
    def _make(structure, types, shapes):
        d = DatasetSpec.__new__(DatasetSpec)
        d._structure, d._types, d._shapes = structure, list(types), list(shapes)
        d._dataset_shape = _v1().TensorShape([])
        return d

    @property
    def element_spec(self):
        flat = [t if isinstance(t, DatasetSpec) else TensorSpec(s, t)
                for t, s in zip(self._types, self._shapes)]
        return flat[0] if self._structure is None else _pack(self._structure, flat)

    def __eq__(self, other):
        return isinstance(other, DatasetSpec) and self.element_spec == other.element_spec

    def __hash__(self):
        return hash(repr(self))

    @property
    def name(self):
        return "variant"

    def __repr__(self):
        return f"DatasetSpec({self.element_spec!r}, TensorShape([]))"


class _OptionsBase:
    _FIELDS = {}

    def __init__(self):
        object.__setattr__(self, "_values", {})

    def __getattr__(self, name):
        fields = type(self)._FIELDS
        if name in fields:
            v = self._values.get(name)
            if v is None and isinstance(fields[name], type):
                v = fields[name]()
                self._values[name] = v
            return v
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        if name not in type(self)._FIELDS:
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        self._values[name] = value

    def __eq__(self, other):
        return type(self) is type(other) and {k: v for k, v in self._values.items()
                                              if v is not None} == \
            {k: v for k, v in other._values.items() if v is not None}

    def __ne__(self, other):
        return not self == other

    def _merged(self, other):
        out = type(self)()
        for k, f in type(self)._FIELDS.items():
            a, b = self._values.get(k), other._values.get(k)
            if isinstance(f, type):
                if a is not None or b is not None:
                    out._values[k] = (a or f())._merged(b or f())
            else:
                out._values[k] = b if b is not None else a
        return out


class ThreadingOptions(_OptionsBase):
    """tf.data.ThreadingOptions (rill's iterators run on the session's threads; these are
    recorded)."""
    _FIELDS = {"max_intra_op_parallelism": None, "private_threadpool_size": None}


class _OptimizationOptions(_OptionsBase):
    _FIELDS = {k: None for k in ("apply_default_optimizations", "filter_fusion",
                                 "filter_parallelization", "inject_prefetch",
                                 "map_and_batch_fusion",
                                 "map_and_filter_fusion", "map_fusion", "map_parallelization",
                                 "noop_elimination", "parallel_batch", "shuffle_and_repeat_fusion",
                                 "warm_start")}


class _AutotuneOptions(_OptionsBase):
    _FIELDS = {"enabled": None, "cpu_budget": None, "ram_budget": None,
               "autotune_algorithm": None}


class _DistributeOptions(_OptionsBase):
    _FIELDS = {"auto_shard_policy": None, "num_devices": None}


class Options(_OptionsBase):
    """tf.data.Options: a dataset's options (with_options / options() merge them as TF does; a
    later value wins). rill runs every pipeline deterministically, which all of TF's settings
    allow, so none of them changes the elements."""
    _FIELDS = {"autotune": _AutotuneOptions, "deterministic": None,
               "experimental_deterministic": None, "experimental_distribute": _DistributeOptions,
               "experimental_external_state_policy": None,
               "experimental_optimization": _OptimizationOptions, "experimental_slack": None,
               "experimental_symbolic_checkpoint": None, "experimental_threading": None,
               "experimental_warm_start": None, "threading": ThreadingOptions}

    def merge(self, options):
        return self._merged(options)


def _merge_options(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a.merge(b)


class Dataset:
    """tf.data.Dataset: build with the static constructors, chain the transformations, iterate
    with make_one_shot_iterator() or make_initializable_iterator()."""

    def __init__(self, variant, structure, types, shapes):
        self._variant = variant
        self._structure = structure  # the element's nesting, components as None
        self._types = types          # flat DTypes
        self._shapes = shapes        # flat TensorShapes
        self._options = None

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
        attrs = dict(attrs or {})
        caps = attrs.pop("_captures", [])
        op = tf.get_default_graph()._make(type, type, [self._variant] + list(args) + caps, attrs)
        structure = self._structure if structure is None else structure
        out = Dataset(op.outputs[0], None if structure is _SCALAR else structure,
                      self._types if types is None else types,
                      self._shapes if shapes is None else shapes)
        out._options = self._options
        return out

    def _trace(self, fn, kind, types=None, shapes=None, structure=_UNSET, split=True):
        """Traces fn over the element (or over the given flat types / shapes / structure) into
        the graph: (attrs naming the body, output tensors, output structure, the result). The
        outer tensors the body reads (but constants and variables) are its captures: the op
        takes them as its last inputs (attrs["_captures"]) and the body is fed their values."""
        tf = _v1()
        g = tf.get_default_graph()
        types = self._types if types is None else types
        shapes = self._shapes if shapes is None else shapes
        structure = self._structure if structure is _UNSET else structure
        before = {op.name for op in g.get_operations()}
        with g.control_dependencies(None), g.name_scope(f"{kind}_fn"):
            args = [tf.placeholder(_flat_dtype(t), [] if isinstance(t, DatasetSpec) else s._dims,
                                   name=f"arg{i}")
                    for i, (t, s) in enumerate(zip(types, shapes))]
            vals = [Dataset._of_spec(a, t) if isinstance(t, DatasetSpec) else a
                    for a, t in zip(args, types)]
            element = vals[0] if structure is None else _pack(structure, vals)
            if split and isinstance(element, tuple) and not hasattr(element, "_fields"):
                result = fn(*element)
            else:
                result = fn(element)
            if isinstance(result, list):
                result = tuple(result)
            flat = []
            for i, r in enumerate(_flatten(result)):
                if isinstance(r, Dataset):
                    r = r._variant
                r = tf.convert_to_tensor(r)
                flat.append(g._make("Identity", f"output_{i}", (r,),
                                    {"T": ("type", r.dtype.enum)}).outputs[0])
        caps, seen = [], set()
        for op in g.get_operations():
            if op.name in before:
                continue
            for t in op.inputs:
                if t.op.name in before and t.op.type not in _NOT_CAPTURED and t.name not in seen:
                    seen.add(t.name)
                    caps.append(t)
        attrs = {"f_args": ("tensor", (_np.array([a.op.name for a in args], dtype=object), 7)),
                 "f_outputs": ("tensor", (_np.array([o.name for o in flat], dtype=object), 7))}
        if caps:
            attrs["f_captures"] = ("tensor", (_np.array([c.name for c in caps], dtype=object), 7))
        attrs["_captures"] = caps
        return attrs, flat, _map_struct(lambda _: None, result), result

    def map(self, map_func, num_parallel_calls=None):
        attrs, outs, structure, _ = self._trace(map_func, "map")
        return self._unary("MapDataset", [], [o.dtype for o in outs], [o.shape for o in outs],
                           structure if _is_struct(structure) else _SCALAR, attrs)

    def filter(self, predicate):
        attrs, outs, _, _ = self._trace(predicate, "filter")
        if len(outs) != 1 or outs[0].dtype != _bool or outs[0].shape.ndims not in (None, 0):
            raise ValueError("`predicate` return type must be convertible to a scalar boolean "
                             "tensor.")
        return self._unary("FilterDataset", [], attrs=attrs)

    def batch(self, batch_size, drop_remainder=False):
        tf = _v1()
        bs = _const64(batch_size, "batch_size")
        dr = tf.constant(bool(drop_remainder), dtype=_bool, name="drop_remainder")
        lead = int(batch_size) if drop_remainder and not isinstance(
            batch_size, (tf.Tensor, tf.Variable)) else None
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

    # -- more transformations (kernels in src/kernels/cpu/cpu_dataset2.c) --

    @staticmethod
    def _of_spec(variant, spec):
        d = Dataset(variant, spec._structure, spec._types, spec._shapes)
        return d

    def concatenate(self, dataset):
        if not isinstance(dataset, Dataset):
            raise TypeError(f"Invalid `dataset`. `dataset` must be a `tf.data.Dataset`, got "
                            f"{type(dataset).__name__}.")
        if (_struct_sig(self._structure) != _struct_sig(dataset._structure) or
                len(self._types) != len(dataset._types) or
                any(_flat_dtype(a) != _flat_dtype(b) for a, b in zip(self._types, dataset._types))):
            raise TypeError(f"Incompatible dataset elements:\n  {self.element_spec} vs. "
                            f"  {dataset.element_spec}")
        tf = _v1()
        op = tf.get_default_graph()._make("ConcatenateDataset", "ConcatenateDataset",
                                          [self._variant, dataset._variant])
        shapes = [_relax(a, b) for a, b in zip(self._shapes, dataset._shapes)]
        out = Dataset(op.outputs[0], self._structure, self._types, shapes)
        out._options = _merge_options(self._options, dataset._options)
        return out

    def enumerate(self, start=0):
        max_value = _np.iinfo(_np.int64).max
        return Dataset.zip((Dataset.range(start, max_value), self))

    def _dataset_fn(self, map_func, kind):
        attrs, outs, _, result = self._trace(map_func, kind)
        if not isinstance(result, Dataset):
            raise TypeError(f"The `map_func` argument must return a `Dataset` object. Got "
                            f"{type(result)!r}.")
        attrs["n_components"] = ("int", len(result._types))
        return attrs, result

    def flat_map(self, map_func):
        attrs, r = self._dataset_fn(map_func, "flat_map")
        return self._unary("FlatMapDataset", [], r._types, r._shapes,
                           _SCALAR if r._structure is None else r._structure, attrs)

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None):
        # num_parallel_calls: TF's parallel interleave; its deterministic order is this one
        # (rill's is always deterministic, which deterministic=False allows).
        import os
        if cycle_length is None or (not isinstance(cycle_length, _v1().Tensor) and
                                    int(cycle_length) == AUTOTUNE):
            cycle_length = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
                else os.cpu_count() or 1
        attrs, r = self._dataset_fn(map_func, "interleave")
        return self._unary("InterleaveDataset",
                           [_const64(cycle_length, "cycle_length"),
                            _const64(1 if block_length is None else block_length,
                                     "block_length")],
                           r._types, r._shapes,
                           _SCALAR if r._structure is None else r._structure, attrs)

    def unbatch(self):
        tf = _v1()
        shapes = []
        for s in self._shapes:
            if s.ndims == 0:
                raise ValueError("Cannot unbatch an input with scalar components.")
            shapes.append(tf.TensorShape(None) if s.ndims is None else tf.TensorShape(s._dims[1:]))
        return self._unary("UnbatchDataset", [], shapes=shapes)

    def shard(self, num_shards, index):
        return self._unary("ShardDataset", [_const64(num_shards, "num_shards"),
                                            _const64(index, "index")],
                           attrs={"require_non_empty": ("bool", False)})

    def cache(self, filename=""):
        tf = _v1()
        if not isinstance(filename, tf.Tensor):
            filename = tf.constant(str(filename), name="filename")
        return self._unary("CacheDataset", [filename])

    def take_while(self, predicate):
        attrs, outs, _, _ = self._trace(predicate, "take_while")
        if len(outs) != 1 or outs[0].dtype != _bool or outs[0].shape.ndims not in (None, 0):
            raise ValueError("`predicate` return type must be convertible to a scalar boolean "
                             "tensor. Was " + (f"{outs[0].dtype}" if outs else "()") + ".")
        return self._unary("TakeWhileDataset", [], attrs=attrs)

    def unique(self):
        from .dtypes import int32, string
        for t in self._types:
            if t not in (int32, _int64, string):
                raise TypeError(f"`tf.data.Dataset.unique` does not support type {t} -- only "
                                f"`tf.int32`, `tf.int64`, and `tf.string` are supported.")
        return self._unary("UniqueDataset", [])

    def ignore_errors(self, log_warning=False):
        return self._unary("IgnoreErrorsDataset", [])

    def _state_trace(self, initial_state, fn, kind, scan):
        """Traces fn(state, element) -> new state (and, for scan, an output) until the state's
        shapes are a fixed point, as TF does: (attrs, init tensors, state structure, outs)."""
        tf = _v1()
        with tf.name_scope("initial_state"):
            init = [v if isinstance(v, tf.Tensor) else
                    tf.convert_to_tensor(v, dtype=_as_dtype(_np.asarray(v).dtype))
                    if isinstance(v, (_np.ndarray, _np.generic)) else tf.convert_to_tensor(v)
                    for v in _flatten(initial_state)]
        sstruct = _map_struct(lambda _: None, initial_state)
        ns = len(init)
        sshapes = [t.shape for t in init]
        el_struct = self._structure

        def call(pair):
            st, el = pair
            if isinstance(el, tuple) and not hasattr(el, "_fields"):
                return fn(st, *el)
            return fn(st, el)

        for _ in range(4):
            attrs, outs, ostruct, result = self._trace(
                call, kind, [t.dtype for t in init] + list(self._types),
                sshapes + list(self._shapes), (sstruct, el_struct), split=False)
            if scan:
                if not isinstance(result, tuple) or len(result) != 2:
                    raise TypeError("The scan function must return a pair comprising the new "
                                    "state and the output value.")
                new_state = result[0]
            else:
                new_state = result
            nflat = len(_flatten(new_state))
            if nflat != ns or _struct_sig(_map_struct(lambda _: None, new_state)) != \
                    _struct_sig(sstruct):
                raise TypeError(f"The element structure for the new state must match the "
                                f"initial state. Expected {initial_state}; got {new_state}.")
            for a, b in zip(init, outs[:ns]):
                if a.dtype != b.dtype:
                    raise TypeError(f"The element types for the new state must match the "
                                    f"initial state. Expected {[t.dtype for t in init]}; got "
                                    f"{[t.dtype for t in outs[:ns]]}.")
            relaxed = [_relax(a, b.shape) for a, b in zip(sshapes, outs[:ns])]
            if all(_same_shape(a, b) for a, b in zip(relaxed, sshapes)):
                break
            sshapes = relaxed
        attrs["n_state"] = ("int", ns)
        return attrs, init, sstruct, outs, ostruct, sshapes

    def scan(self, initial_state, scan_func):
        attrs, init, sstruct, outs, ostruct, _ = self._state_trace(
            initial_state, scan_func, "scan", True)
        ns = len(init)
        rest = outs[ns:]
        ostruct = ostruct[1]
        return self._unary("ScanDataset", init, [o.dtype for o in rest], [o.shape for o in rest],
                           ostruct if _is_struct(ostruct) else _SCALAR, attrs)

    def reduce(self, initial_state, reduce_func):
        tf = _v1()
        attrs, init, sstruct, outs, _, sshapes = self._state_trace(
            initial_state, reduce_func, "reduce", False)
        caps = attrs.pop("_captures")
        spec = [v for s in sshapes for v in _shape_spec(s)]
        attrs.update({"output_types": ("ints", [t.dtype.enum for t in init]),
                      "output_shapes": ("tensor", (_np.array(spec, dtype=_np.int64), 9)),
                      "num_outputs": ("int", len(init))})
        op = tf.get_default_graph()._make("ReduceDataset", "ReduceDataset",
                                          [self._variant] + init + caps, attrs)
        return _pack(initial_state, op.outputs) if _is_struct(initial_state) else op.outputs[0]

    def get_single_element(self):
        tf = _v1()
        spec = [v for s in self._shapes for v in _shape_spec(s)]
        attrs = {"output_types": ("ints", [_flat_dtype(t).enum for t in self._types]),
                 "output_shapes": ("tensor", (_np.array(spec, dtype=_np.int64), 9)),
                 "num_outputs": ("int", len(self._types))}
        op = tf.get_default_graph()._make("DatasetToSingleElement", "DatasetToSingleElement",
                                          [self._variant], attrs)
        return self._nest(_wrap_outputs(op.outputs, self._types))

    def window(self, size, shift=None, stride=1, drop_remainder=False):
        tf = _v1()
        ins = [_const64(size, "size"), _const64(size if shift is None else shift, "shift"),
               _const64(stride, "stride"),
               tf.constant(bool(drop_remainder), dtype=_bool, name="drop_remainder")]
        types = [DatasetSpec._make(None, [t], [s]) for t, s in zip(self._types, self._shapes)]
        return self._unary("WindowDataset", ins, types, [tf.TensorShape([])] * len(types))

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False):
        tf = _v1()
        if padded_shapes is None:
            flat_ps = [tf.TensorShape(None) if s.ndims is None else
                       tf.TensorShape([None] * s.ndims) for s in self._shapes]
            for s in self._shapes:
                if s.ndims is None:
                    raise ValueError("You must provide `padded_shapes` argument because component "
                                     "0 has unknown rank.")
        else:
            flat_ps = _flatten_up_to(self._structure, padded_shapes)
        if len(flat_ps) != len(self._types):
            raise ValueError("The two structures don't have the same number of elements.")
        shape_ins, out_shapes = [], []
        with tf.name_scope("padded_shapes"):
            for i, (ps, s) in enumerate(zip(flat_ps, self._shapes)):
                if isinstance(ps, tf.Tensor):
                    t = ps if ps.dtype == _int64 else tf.cast(ps, _int64)
                    out_shapes.append(tf.TensorShape(None))
                else:
                    ps = ps if isinstance(ps, tf.TensorShape) else tf.TensorShape(
                        [None if d is None or (isinstance(d, int) and d < 0) else d
                         for d in ps])
                    if ps.ndims is None:
                        raise ValueError("Padded shape must have a known rank.")
                    if not ps.is_compatible_with(s) and s.ndims is not None and \
                            s.ndims == ps.ndims:
                        raise ValueError(f"The padded shape {ps} is not compatible with the "
                                         f"shape {s} of the corresponding input component.")
                    if s.ndims is not None and s.ndims != ps.ndims:
                        raise ValueError(f"The padded shape {ps} is not compatible with the "
                                         f"shape {s} of the corresponding input component.")
                    t = tf.constant(_np.array([-1 if d is None else d for d in ps._dims],
                                              dtype=_np.int64), name=f"padded_shape_{i}")
                    out_shapes.append(ps)
                shape_ins.append(t)
        with tf.name_scope("padding_values"):
            if padding_values is None:
                flat_pv = [None] * len(self._types)
            else:
                flat_pv = _flatten_up_to(self._structure, padding_values)
            pads = []
            for i, (v, t) in enumerate(zip(flat_pv, self._types)):
                if v is None:
                    v = "" if t.name == "string" else 0
                if isinstance(v, tf.Tensor):
                    if v.dtype != t:
                        raise TypeError(f"Padding value {v} has dtype {v.dtype}, expected {t}.")
                    pads.append(v)
                else:
                    pads.append(tf.constant(v, dtype=t, name=f"padding_value_{i}"))
        bs = _const64(batch_size, "batch_size")
        dr = tf.constant(bool(drop_remainder), dtype=_bool, name="drop_remainder")
        lead = int(batch_size) if drop_remainder and not isinstance(batch_size, tf.Tensor) \
            else None
        shapes = [tf.TensorShape(None) if s.ndims is None else tf.TensorShape([lead] + s._dims)
                  for s in out_shapes]
        return self._unary("PaddedBatchDatasetV2", [bs] + shape_ins + pads + [dr], shapes=shapes,
                           attrs={"N": ("int", len(self._types))})

    @staticmethod
    def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
        tf = _v1()
        datasets = list(datasets)
        if not datasets:
            raise ValueError("Invalid `datasets`. `datasets` should not be empty.")
        if not isinstance(choice_dataset, Dataset) or len(choice_dataset._types) != 1 or \
                choice_dataset._types[0] != _int64 or \
                choice_dataset._shapes[0].ndims not in (None, 0):
            spec = choice_dataset.element_spec if isinstance(choice_dataset, Dataset) \
                else choice_dataset
            raise TypeError(f"Invalid `choice_dataset`. Elements of `choice_dataset` must be "
                            f"scalar `tf.int64` tensors. Got {spec}.")
        first = datasets[0]
        shapes = list(first._shapes)
        for d in datasets[1:]:
            if _struct_sig(d._structure) != _struct_sig(first._structure) or \
                    [_flat_dtype(t) for t in d._types] != [_flat_dtype(t) for t in first._types]:
                raise TypeError(f"Incompatible dataset elements:\n  {first.element_spec} vs. "
                                f"  {d.element_spec}")
            shapes = [_relax(a, b) for a, b in zip(shapes, d._shapes)]
        op = tf.get_default_graph()._make(
            "DirectedInterleaveDataset", "DirectedInterleaveDataset",
            [choice_dataset._variant] + [d._variant for d in datasets],
            {"stop_on_empty_dataset": ("bool", bool(stop_on_empty_dataset))})
        return Dataset(op.outputs[0], first._structure, first._types, shapes)

    @staticmethod
    def counter(start=0, step=1, dtype=_int64):
        tf = _v1()
        with tf.name_scope("counter"):
            start = tf.convert_to_tensor(start, dtype=dtype, name="start")
            step = tf.convert_to_tensor(step, dtype=dtype, name="step")
            return Dataset.from_tensors(0).repeat(None).scan(
                start, lambda state, _: (state + step, state))

    def apply(self, transformation_func):
        dataset = transformation_func(self)
        if not isinstance(dataset, Dataset):
            raise TypeError(f"`transformation_func` must return a `tf.data.Dataset` object. "
                            f"Got {type(dataset)}.")
        return dataset

    def cardinality(self):
        tf = _v1()
        return tf.get_default_graph()._make("DatasetCardinality", "DatasetCardinality",
                                            [self._variant]).outputs[0]

    def options(self):
        o = Options()
        if self._options is not None:
            o = o.merge(self._options)
        return o

    def with_options(self, options):
        if not isinstance(options, Options):
            raise TypeError(f"Invalid `options`. `options` should be `tf.data.Options`, got "
                            f"{type(options).__name__}.")
        out = Dataset(self._variant, self._structure, self._types, self._shapes)
        out._options = _merge_options(self._options, options)
        return out

    def filter_with_legacy_function(self, predicate):
        return self.filter(predicate)

    def map_with_legacy_function(self, map_func, num_parallel_calls=None, deterministic=None):
        return self.map(map_func)

    def __iter__(self):
        raise RuntimeError("`tf.data.Dataset` only supports Python-style iteration in eager mode "
                           "or within tf.function.")

    def as_numpy_iterator(self):
        raise RuntimeError("`tf.data.Dataset.as_numpy_iterator()` is only supported in eager "
                           "mode.")

    @property
    def element_spec(self):
        return self._nest([t if isinstance(t, DatasetSpec) else TensorSpec(s, t)
                           for t, s in zip(self._types, self._shapes)])

    @staticmethod
    def random(seed=None, rerandomize_each_iteration=None):
        if rerandomize_each_iteration:
            raise ValueError("rerandomize_each_iteration=True is not supported by rill's "
                             "Dataset.random (TF 1 supports it only for repeat-based epochs)")
        tf = _v1()
        from ._random_ops import _seed_attrs
        op = tf.get_default_graph()._make("RandomDataset", "RandomDataset", (),
                                          _seed_attrs(seed))
        return Dataset(op.outputs[0], None, [_int64], [tf.TensorShape([])])

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None):
        tf = _v1()
        with tf.name_scope("list_files"):
            if shuffle is None:
                shuffle = True
            if not isinstance(file_pattern, tf.Tensor):
                file_pattern = tf.convert_to_tensor(file_pattern, name="file_pattern")
            matching = tf.get_default_graph()._make(
                "MatchingFiles", "MatchingFiles", [file_pattern],
                {"require_match": ("bool", True)}).outputs[0]
            ds = Dataset.from_tensor_slices(matching)
            if shuffle:
                n = tf.maximum(tf.cast(tf.size(matching), _int64), tf.constant(1, _int64))
                ds = ds.shuffle(n, seed=seed)
            return ds

    def rebatch(self, batch_size, drop_remainder=False):
        if isinstance(batch_size, (list, tuple)) or (
                isinstance(batch_size, _np.ndarray) and batch_size.ndim > 0):
            raise ValueError("rill's rebatch takes one batch_size (a list of batch sizes is not "
                             "supported)")
        # TF: "functionally equivalent to unbatch().batch(N)"
        return self.unbatch().batch(batch_size, drop_remainder)

    def group_by_window(self, key_func, reduce_func, window_size=None, window_size_func=None):
        tf = _v1()
        if (window_size is not None) == (window_size_func is not None):
            if window_size is None:
                raise ValueError("Either the `window_size` argument or the `window_size_func` "
                                 "argument must be specified.")
            raise ValueError("Either the `window_size` argument or the `window_size_func` "
                             "argument must be specified, but not both.")
        if window_size is not None:
            size = window_size

            def window_size_func(_):
                return _const64(size, "window_size")

        def renamed(attrs, prefix):
            caps = attrs.pop("_captures")
            out = {}
            for k, v in attrs.items():
                out[k.replace("f_", prefix + "_", 1)] = v
            return out, caps

        ka, kouts, _, _ = self._trace(key_func, "key_func")
        if len(kouts) != 1 or kouts[0].dtype != _int64 or kouts[0].shape.ndims not in (None, 0):
            raise ValueError("`key_func` must return a single tf.int64 scalar tensor. Got "
                             f"type={[o.dtype for o in kouts]} and shape="
                             f"{[o.shape for o in kouts]}.")
        spec = DatasetSpec._make(self._structure, self._types, self._shapes)
        ra, _, _, r = self._trace(reduce_func, "reduce_func", [_int64, spec],
                                  [tf.TensorShape([]), tf.TensorShape([])], (None, None))
        if not isinstance(r, Dataset):
            raise TypeError(f"`reduce_func` must return a `Dataset` object. Got {type(r)!r}.")
        wa, wouts, _, _ = self._trace(window_size_func, "window_size_func", [_int64],
                                      [tf.TensorShape([])], None)
        if len(wouts) != 1 or wouts[0].dtype != _int64 or wouts[0].shape.ndims not in (None, 0):
            raise ValueError("`window_size_func` must return a single tf.int64 scalar tensor.")
        attrs, caps = {}, []
        for a, p in ((ka, "key"), (ra, "reduce"), (wa, "wsize")):
            at, c = renamed(a, p)
            attrs.update(at)
            caps += c
        attrs["n_components"] = ("int", len(r._types))
        attrs["_captures"] = caps
        return self._unary("GroupByWindowDataset", [], r._types, r._shapes,
                           _SCALAR if r._structure is None else r._structure, attrs)

    def bucket_by_sequence_length(self, element_length_func, bucket_boundaries,
                                  bucket_batch_sizes, padded_shapes=None, padding_values=None,
                                  pad_to_bucket_boundary=False, no_padding=False,
                                  drop_remainder=False):
        tf = _v1()
        if len(bucket_batch_sizes) != len(bucket_boundaries) + 1:
            raise ValueError(f"`len(bucket_batch_sizes)` must equal `len(bucket_boundaries) + 1`"
                             f" but `len(bucket_batch_sizes)={len(bucket_batch_sizes)}` and "
                             f"`len(bucket_boundaries)={len(bucket_boundaries)}`.")
        if pad_to_bucket_boundary:
            raise ValueError("rill's bucket_by_sequence_length does not support "
                             "pad_to_bucket_boundary=True")
        sizes = [int(b) for b in bucket_batch_sizes]
        bounds = [int(b) for b in bucket_boundaries]
        lo = [_np.iinfo(_np.int32).min] + bounds
        hi = bounds + [_np.iinfo(_np.int32).max]

        def element_to_bucket_id(*args):
            # TF: the first bucket i with lo[i] <= length < hi[i]
            n = tf.cast(element_length_func(*args), _int64)
            bucket = tf.constant(len(lo), _int64)
            for i in reversed(range(len(lo))):
                inside = tf.logical_and(tf.less_equal(tf.constant(lo[i], _int64), n),
                                        tf.less(n, tf.constant(hi[i], _int64)))
                bucket = tf.where(inside, tf.constant(i, _int64), bucket)
            return bucket

        def window_size_fn(bucket_id):
            return tf.gather(tf.constant(sizes, _int64), bucket_id)

        def batching_fn(bucket_id, grouped):
            batch_size = window_size_fn(bucket_id)
            if no_padding:
                return grouped.batch(batch_size, drop_remainder=drop_remainder)
            shapes = padded_shapes
            if shapes is None:
                shapes = grouped.output_shapes
            return grouped.padded_batch(batch_size, shapes, padding_values,
                                        drop_remainder=drop_remainder)

        return self.group_by_window(element_to_bucket_id, batching_fn,
                                    window_size_func=window_size_fn)

    @staticmethod
    def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                             rerandomize_each_iteration=None):
        """TF's composition: a selector of stateless multinomial draws keyed by pairs of
        Dataset.random(seed), through choose_from_datasets' DirectedInterleave."""
        tf = _v1()
        datasets = list(datasets)
        if not datasets:
            raise ValueError("Invalid `datasets`. `datasets` should not be empty.")

        def multinomial(logits, seed_pair):
            return tf.squeeze(tf.get_default_graph()._make(
                "StatelessMultinomial", "StatelessMultinomial",
                [logits, tf.constant(1, name="num_samples"), seed_pair],
                {"T": ("type", logits.dtype.enum), "Tseed": ("type", _int64.enum),
                 "output_dtype": ("type", _int64.enum)}).outputs[0], axis=[0, 1])

        if isinstance(weights, Dataset):
            logits_ds = weights.map(lambda *p: tf.log(tf.stack(list(p)) if len(p) > 1 else p[0],
                                                      name="logits"))
            selector = Dataset.zip((logits_ds, Dataset.random(
                seed, rerandomize_each_iteration).batch(2))).map(
                    lambda l, s: multinomial(tf.expand_dims(l, 0) if l.shape.ndims == 1 else l,
                                             s))
        else:
            if weights is None:
                logits = tf.constant([[1.0] * len(datasets)], name="logits")
            else:
                if isinstance(weights, tf.Tensor):
                    if not weights.shape.is_compatible_with([len(datasets)]):
                        raise ValueError(f"Invalid `weights`. The shape of `weights` should be "
                                         f"compatible with `[len(datasets)]` but is "
                                         f"{weights.shape}.")
                else:
                    if len(datasets) != len(weights):
                        raise ValueError(f"Invalid `weights`. `weights` should have the same "
                                         f"length as `datasets` but got `len(weights)="
                                         f"{len(weights)}` vs. `len(datasets)={len(datasets)}`.")
                    kept = [(d, w) for d, w in zip(datasets, weights) if w > 0]
                    datasets, weights = ([d for d, _ in kept], [w for _, w in kept]) if kept \
                        else ([datasets[0].take(0)], [1.0])
                    weights = tf.convert_to_tensor(
                        _np.asarray(weights, dtype=_np.asarray(weights).dtype
                                    if _np.asarray(weights).dtype == _np.float64
                                    else _np.float32), name="weights")
                if weights.dtype.name not in ("float32", "float64"):
                    raise TypeError(f"Invalid `weights`. `weights` type must be either "
                                    f"`tf.float32` or `tf.float64` but is {weights.dtype}.")
                logits = tf.expand_dims(tf.log(weights, name="logits"), 0)
            if len(datasets) == 1:
                return datasets[0]
            selector = Dataset.random(seed, rerandomize_each_iteration).batch(2).map(
                lambda s: multinomial(logits, s))
        return Dataset.choose_from_datasets(datasets, selector, stop_on_empty_dataset)

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
        p = _placeholder_upstream(self._variant)
        if p is not None:
            raise ValueError("Failed to create a one-shot iterator for a dataset. "
                             "`Dataset.make_one_shot_iterator()` does not support datasets that "
                             "capture stateful objects, such as a `Variable` or `LookupTable`. In "
                             "these cases, use `Dataset.make_initializable_iterator()`. (Original "
                             f"error: Cannot capture a placeholder (name:{p.name}, "
                             f"type:{p.type}) by value.)")
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


class NumpyIterator:
    """tf.data.NumpyIterator: iterates a dataset as numpy values, which TF does in eager mode
    only; in graph mode (rill's) making one raises TF's RuntimeError, as iter(dataset) does."""

    def __init__(self, dataset):
        self._iterator = iter(dataset)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._iterator)


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
        types = [t if isinstance(t, DatasetSpec) else _as_dtype(t)
                 for t in _flatten(output_types)]
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
                                              "output_types": ("ints", [_flat_dtype(t).enum for t in self._types]),
                                              "output_shapes": ("tensor", (_np.array(spec, dtype=_np.int64), 9)),
                                              "num_outputs": ("int", len(self._types))})
        outs = _wrap_outputs(op.outputs, self._types)
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
    INFINITE_CARDINALITY = INFINITE_CARDINALITY
    UNKNOWN_CARDINALITY = UNKNOWN_CARDINALITY
    Options = Options
    ThreadingOptions = ThreadingOptions
    DatasetSpec = DatasetSpec

    @staticmethod
    def cardinality(dataset):
        return dataset.cardinality()

    @staticmethod
    def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
        return Dataset.choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset)

    @staticmethod
    def Counter(start=0, step=1, dtype=_int64):  # noqa: N802
        return Dataset.counter(start, step, dtype)

    @staticmethod
    def get_single_element(dataset):
        return dataset.get_single_element()

    @staticmethod
    def enumerate_dataset(start=0):
        return lambda dataset: dataset.enumerate(start)

    @staticmethod
    def unbatch():
        return lambda dataset: dataset.unbatch()

    @staticmethod
    def unique():
        return lambda dataset: dataset.unique()

    @staticmethod
    def ignore_errors(log_warning=False):
        return lambda dataset: dataset.ignore_errors(log_warning)

    @staticmethod
    def take_while(predicate):
        return lambda dataset: dataset.take_while(predicate)

    @staticmethod
    def scan(initial_state, scan_func):
        return lambda dataset: dataset.scan(initial_state, scan_func)


# --- file readers (kernels in src/kernels/cpu/cpu_dataset_io.c) ---

def _filenames(filenames):
    tf = _v1()
    from .dtypes import string
    with tf.name_scope("filenames"):
        if not isinstance(filenames, tf.Tensor):
            filenames = tf.convert_to_tensor(filenames, dtype=string, name="filenames")
    if filenames.dtype != string:
        raise TypeError("The `filenames` argument must contain `tf.string` elements. Got a "
                        f"dataset of `{filenames.dtype!r}` elements.")
    if filenames.shape.ndims not in (None, 0, 1):
        raise TypeError("The `filenames` argument must contain `tf.string` elements of shape "
                        f"[] (i.e. scalars). Got a dataset of element shape {filenames.shape}.")
    return filenames


def _comp(compression_type):
    tf = _v1()
    if isinstance(compression_type, tf.Tensor):
        return compression_type
    return tf.constant("" if compression_type is None else str(compression_type),
                       name="compression_type")


class _Reader(Dataset):
    def _build(self, make, filenames, num_parallel_reads):
        """One op over all the files (TF's flat_map over them), or TF's deterministic parallel
        interleave of num_parallel_reads files, one record each in turn."""
        tf = _v1()
        filenames = _filenames(filenames)
        if num_parallel_reads is None:
            variant = make(filenames)
        else:
            import os
            n = num_parallel_reads
            if not isinstance(n, tf.Tensor) and int(n) == AUTOTUNE:
                n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
            files = Dataset.from_tensor_slices(tf.reshape(filenames, [-1]))
            variant = files.interleave(
                lambda f: Dataset(make(f), None, [_string()], [tf.TensorShape([])]),
                cycle_length=n, block_length=1)._variant
        Dataset.__init__(self, variant, None, [_string()], [tf.TensorShape([])])


def _string():
    from .dtypes import string
    return string


class TextLineDataset(_Reader):
    """tf.data.TextLineDataset: the lines of text files."""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        tf = _v1()

        def make(f):
            return tf.get_default_graph()._make(
                "TextLineDataset", "TextLineDataset",
                [f, _comp(compression_type),
                 _const64(256 * 1024 if buffer_size is None else buffer_size, "buffer_size")]
            ).outputs[0]
        self._build(make, filenames, num_parallel_reads)


class TFRecordDataset(_Reader):
    """tf.data.TFRecordDataset: the records of TFRecord files (TF's framing and CRC32C)."""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        tf = _v1()

        def make(f):
            return tf.get_default_graph()._make(
                "TFRecordDataset", "TFRecordDataset",
                [f, _comp(compression_type),
                 _const64(256 * 1024 if buffer_size is None else buffer_size, "buffer_size")]
            ).outputs[0]
        self._build(make, filenames, num_parallel_reads)


class FixedLengthRecordDataset(_Reader):
    """tf.data.FixedLengthRecordDataset: fixed-length records of binary files."""

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None,
                 buffer_size=None, compression_type=None, num_parallel_reads=None):
        tf = _v1()

        def make(f):
            return tf.get_default_graph()._make(
                "FixedLengthRecordDatasetV2", "FixedLengthRecordDataset",
                [f, _const64(0 if header_bytes is None else header_bytes, "header_bytes"),
                 _const64(record_bytes, "record_bytes"),
                 _const64(0 if footer_bytes is None else footer_bytes, "footer_bytes"),
                 _const64(256 * 1024 if buffer_size is None else buffer_size, "buffer_size"),
                 _comp(compression_type)]).outputs[0]
        self._build(make, filenames, num_parallel_reads)
