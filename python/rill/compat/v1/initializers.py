"""TF 1.x's shape-dependent initializers: variance scaling (glorot/xavier, he, lecun),
uniform unit scaling, orthogonal, and tf.initializers.

Every variance-scaling initializer is, once the variable's shape is known, one of the
initializers rill's C library makes itself (uniform in [-limit, limit), a truncated normal, a
normal): _spec_for(shape, dtype) gives that (kind, a, b, seed) to get_variable. Called as TF's
initializers are, init(shape, dtype, partition_info) makes the random op and returns its tensor.
Orthogonal is computed at graph-build time and stored as a constant: the normal matrix TF's
random_normal draws (run once in a graph of its own with the variable's graph seed and the
initializer's seed, so a seeded one is TF's draw), then numpy's QR with TF's sign rule: a seeded
orthogonal initializer gives TF's values (to rounding; QR with that rule is unique)."""
import math as _math
import sys as _sys
import types as _types

import numpy as _np

__all__ = ["variance_scaling_initializer", "glorot_uniform_initializer",
           "glorot_normal_initializer", "uniform_unit_scaling_initializer",
           "orthogonal_initializer", "he_normal", "he_uniform", "lecun_normal", "lecun_uniform"]

# TF's truncated normal at stddev 1 has this stddev (the normal cut at +-2 stddev)
_TRUNC_STDDEV = .87962566103423978


def _tf():
    return _sys.modules[__package__]


def tensor_from_spec(spec, shape, dtype, name=None):
    """The tensor of a C initializer spec (kind, a, b, seed) for a shape: TF's op names."""
    tf = _tf()
    kind, a, b, seed = spec
    dt = tf.as_dtype(dtype)
    dims = [int(d) for d in shape]
    if kind in ("zeros", "ones", "constant"):
        v = 0.0 if kind == "zeros" else 1.0 if kind == "ones" else a
        return tf.constant(_np.full(dims, v, dtype=dt.as_numpy_dtype), dtype=dt,
                           name=name or kind if kind != "constant" else name or "Const")
    op = {"uniform": ("RandomUniform", "random_uniform"),
          "normal": ("RandomNormal", "random_normal"),
          "truncated_normal": ("TruncatedNormal", "truncated_normal")}[kind]
    attrs = {"dtype": tf._attr_type(dt), "shape": ("shape", dims), "a": ("float", float(a)),
             "b": ("float", float(b)), "seed": ("int", int(seed))}
    return tf.get_default_graph()._make(op[0], name or op[1], (), attrs).outputs[0]


class Initializer:
    """A TF initializer object: call it with (shape, dtype, partition_info) for a tensor."""
    dtype = None

    def _spec_for(self, shape, dtype):
        raise NotImplementedError  # every subclass here defines it

    def __call__(self, shape, dtype=None, partition_info=None):
        tf = _tf()
        dt = tf.as_dtype(dtype if dtype is not None else (self.dtype or tf.float32))
        return tensor_from_spec(self._spec_for(shape, dt), shape, dt)

    def get_config(self):
        return dict(self.__dict__)

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _fans(shape):
    shape = [int(d) for d in shape]
    if len(shape) < 1:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    if len(shape) == 2:
        return float(shape[0]), float(shape[1])
    receptive = float(_np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


class VarianceScaling(Initializer):
    """tf.compat.v1.variance_scaling_initializer: samples scaled by scale / n (n the fan_in,
    fan_out or their mean); "normal" is TF 1.x's truncated normal, as "truncated_normal";
    "untruncated_normal" a plain normal; "uniform" in [-sqrt(3 scale / n), sqrt(3 scale / n))."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=None):
        if scale <= 0.:
            raise ValueError("`scale` must be positive float.")
        if mode not in {"fan_in", "fan_out", "fan_avg"}:
            raise ValueError(f"Invalid `mode` argument: {mode}")
        distribution = distribution.lower()
        if distribution not in {"normal", "uniform", "truncated_normal", "untruncated_normal"}:
            raise ValueError(f"Invalid `distribution` argument: {distribution}")
        self.scale, self.mode, self.distribution = float(scale), mode, distribution
        self.seed = seed
        self.dtype = None if dtype is None else _tf().as_dtype(dtype)

    def _spec_for(self, shape, dtype):
        fan_in, fan_out = _fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.}[self.mode]
        scale = self.scale / max(1., n)
        seed = int(self.seed or 0)
        if self.distribution in ("normal", "truncated_normal"):
            return ("truncated_normal", 0.0, _math.sqrt(scale) / _TRUNC_STDDEV, seed)
        if self.distribution == "untruncated_normal":
            return ("normal", 0.0, _math.sqrt(scale), seed)
        limit = _math.sqrt(3.0 * scale)
        return ("uniform", -limit, limit, seed)


class GlorotUniform(VarianceScaling):
    def __init__(self, seed=None, dtype=None):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)


class GlorotNormal(VarianceScaling):
    def __init__(self, seed=None, dtype=None):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)


class UniformUnitScaling(Initializer):
    """tf.uniform_unit_scaling_initializer: uniform in +-sqrt(3 / prod(shape[:-1])) * factor."""

    def __init__(self, factor=1.0, seed=None, dtype=None):
        self.factor, self.seed = float(factor), seed
        self.dtype = None if dtype is None else _tf().as_dtype(dtype)

    def _spec_for(self, shape, dtype):
        input_size = 1.0
        for d in list(shape)[:-1]:
            input_size *= float(d)
        input_size = max(input_size, 1.0)
        m = _math.sqrt(3 / input_size) * self.factor
        return ("uniform", -m, m, int(self.seed or 0))


class ContribVarianceScaling(Initializer):
    """tf.contrib.layers.variance_scaling_initializer (and xavier_initializer): factor,
    mode 'FAN_IN' / 'FAN_OUT' / 'FAN_AVG', uniform or a truncated normal of stddev
    sqrt(1.3 factor / n), with contrib's fans (the last two dims times the rest)."""

    def __init__(self, factor=2.0, mode="FAN_IN", uniform=False, seed=None, dtype=None):
        if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
            raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")
        self.factor, self.mode, self.uniform, self.seed = float(factor), mode, uniform, seed
        self.dtype = None if dtype is None else _tf().as_dtype(dtype)
        if self.dtype is not None and not self.dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")

    def _spec_for(self, shape, dtype):
        shape = [int(d) for d in shape]
        if shape:
            fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1])
            fan_out = float(shape[-1])
        else:
            fan_in = fan_out = 1.0
        for d in shape[:-2]:
            fan_in *= d
            fan_out *= d
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[self.mode]
        seed = int(self.seed or 0)
        if self.uniform:
            limit = _math.sqrt(3.0 * self.factor / n)
            return ("uniform", -limit, limit, seed)
        return ("truncated_normal", 0.0, _math.sqrt(1.3 * self.factor / n), seed)


class Orthogonal:
    """tf.orthogonal_initializer(gain, seed): an orthogonal matrix (rows or columns
    orthonormal) of the shape flattened to (prod(shape[:-1]), shape[-1]), times gain."""

    def __init__(self, gain=1.0, seed=None, dtype=None):
        self.gain, self.seed = float(gain), seed
        self.dtype = None if dtype is None else _tf().as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        tf = _tf()
        shape = [int(d) for d in shape]
        if len(shape) < 2:
            raise ValueError("The tensor to initialize must be at least two-dimensional")
        dt = tf.as_dtype(dtype if dtype is not None else (self.dtype or tf.float32))
        rows, cols = int(_np.prod(shape[:-1])), shape[-1]
        a = _normal_draw((max(rows, cols), min(rows, cols)), dt, self.seed)
        q, r = _np.linalg.qr(a.astype(_np.float64))
        q *= _np.sign(_np.diag(r))
        if rows < cols:
            q = q.T
        return tf.constant((self.gain * q).reshape(shape).astype(dt.as_numpy_dtype), dtype=dt)


def _normal_draw(shape, dtype, seed):
    """What tf.random_normal(shape, dtype, seed=seed) draws first in the default graph (its graph
    seed), drawn by a graph and session of their own."""
    tf = _tf()
    g = tf.Graph()
    graph_seed = getattr(tf.get_default_graph(), "seed", None)
    with g.as_default():
        if graph_seed is not None:
            tf.set_random_seed(graph_seed)
        t = tf.random_normal(list(shape), dtype=dtype, seed=seed)
        with tf.Session(graph=g) as s:
            return s.run(t)


def variance_scaling_initializer(scale=1.0, mode="fan_in", distribution="truncated_normal",
                                 seed=None, dtype=None):
    return VarianceScaling(scale, mode, distribution, seed, dtype)


def glorot_uniform_initializer(seed=None, dtype=None):
    return GlorotUniform(seed, dtype)


def glorot_normal_initializer(seed=None, dtype=None):
    return GlorotNormal(seed, dtype)


def uniform_unit_scaling_initializer(factor=1.0, seed=None, dtype=None):
    return UniformUnitScaling(factor, seed, dtype)


def orthogonal_initializer(gain=1.0, seed=None, dtype=None):
    return Orthogonal(gain, seed, dtype)


def he_normal(seed=None):
    return VarianceScaling(2., "fan_in", "truncated_normal", seed)


def he_uniform(seed=None):
    return VarianceScaling(2., "fan_in", "uniform", seed)


def lecun_normal(seed=None):
    return VarianceScaling(1., "fan_in", "truncated_normal", seed)


def lecun_uniform(seed=None):
    return VarianceScaling(1., "fan_in", "uniform", seed)


def _namespace():
    """tf.initializers: the initializers by their short names, and the variable-initializer
    groups."""
    tf = _tf()
    return _types.SimpleNamespace(
        zeros=tf.zeros_initializer, ones=tf.ones_initializer,
        constant=tf.constant_initializer, random_uniform=tf.random_uniform_initializer,
        random_normal=tf.random_normal_initializer,
        truncated_normal=tf.truncated_normal_initializer,
        uniform_unit_scaling=uniform_unit_scaling_initializer,
        variance_scaling=variance_scaling_initializer,
        glorot_uniform=glorot_uniform_initializer, glorot_normal=glorot_normal_initializer,
        orthogonal=orthogonal_initializer, he_normal=he_normal, he_uniform=he_uniform,
        lecun_normal=lecun_normal, lecun_uniform=lecun_uniform,
        global_variables=tf.global_variables_initializer,
        local_variables=tf.local_variables_initializer,
        variables=tf.variables_initializer, tables_initializer=tf.tables_initializer)
