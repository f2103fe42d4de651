"""TF 1.x's random functions (tf.random_normal, tf.truncated_normal, tf.random_uniform,
tf.multinomial, tf.random_shuffle, tf.set_random_seed and the tf.random
namespace) over rill's C random ops (src/graph/ops_random.c).

Each function builds what TF's Python builds: the same consts under the same name scope, the
standard draw (RandomStandardNormal, RandomUniform, TruncatedNormal) and then `* stddev + mean`
or `* (max - min) + min` in the output dtype. The op carries TF's (seed, seed2) attrs, derived as
TF's random_seed.get_seed derives them:
  - graph seed and op seed: (graph seed, op seed);
  - op seed only: (DEFAULT_GRAPH_SEED = 87654321, op seed);
  - graph seed only: (graph seed, id of the last op in the graph), where the id is the graph's
    op count. TF counts its own ops: a graph built by the same calls in the same order has the
    same count in rill whenever rill builds the same nodes (these functions do), so the streams
    agree; a graph whose earlier parts rill builds with other nodes derives other seeds;
  - neither: (0, 0), which the kernel seeds from the OS (nondeterministic);
and (0, 0) from explicit seeds becomes (0, 2**31 - 1) as in TF. Both are taken modulo 2**31 - 1.
rill's CPU kernels reproduce TF's Philox stream for a given (seed, seed2), so a seeded
tf.random_normal gives TF's values (a Multinomial batch big enough for TF to split over threads
excepted)."""
import sys as _sys

import numpy as _np

__all__ = ["random_normal", "truncated_normal", "random_uniform", "multinomial", "random_shuffle",
           "set_random_seed", "get_seed", "random"]

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


def _tf():
    return _sys.modules[__package__]


def _g():
    return _tf().get_default_graph()


def set_random_seed(seed):
    """tf.set_random_seed: the default graph's seed (None clears it). Random ops made after it
    without a seed of their own derive one from it (see the module comment); rill's C builders
    (initializers) derive theirs from the C graph's seed, which this sets too."""
    g = _g()
    g.seed = None if seed is None else int(seed)
    if seed is not None:
        g._g.set_seed(int(seed))


def get_seed(op_seed):
    """TF's random_seed.get_seed: the (seed, seed2) an op with op seed op_seed gets. With only
    the graph's seed, seed2 counts the ops that took it (0, 1, ...): the C graph keeps that count
    (rill's C initializers share it), so this reads (graph seed, None) and leaves it to C."""
    g = _g()
    global_seed = getattr(g, "seed", None)
    if global_seed is not None:
        if op_seed is None:
            return (int(global_seed) % _MAXINT32, None)
        seeds = (int(global_seed) % _MAXINT32, int(op_seed) % _MAXINT32)
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, int(op_seed) % _MAXINT32)
    else:
        seeds = (None, None)
    if seeds == (0, 0):
        return (0, _MAXINT32)
    return seeds


def _is_int(dt):
    return _np.issubdtype(dt.as_numpy_dtype, _np.integer)


def _seed_attrs(seed):
    s1, s2 = get_seed(seed)
    if s1 is not None and s2 is None:
        return {"seed": ("int", 0)}  # the C graph derives (graph seed, its count)
    return {"seed": ("int", s1 or 0), "seed2": ("int", s2 or 0)}


def _shape_tensor(shape):
    tf = _tf()
    if isinstance(shape, (tf.Tensor, tf.Variable)):
        return tf.convert_to_tensor(shape)
    if isinstance(shape, tf.TensorShape):
        shape = shape.as_list()
    return tf.constant(_np.asarray(list(shape) if not _np.isscalar(shape) else [shape],
                                   dtype=_np.int32).reshape(-1), name="shape")


def _scoped_name(t):
    # "random_normal_1/shape" -> "random_normal_1": the unique scope the ops went into, which
    # TF gives the last op as its name
    n = t.op.name
    return n.rsplit("/", 1)[0] + "/" if "/" in n else None


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None, name=None):
    tf = _tf()
    dt = tf.as_dtype(dtype or tf.float32)
    with _g().name_scope(name or "random_normal"):
        shape_t = _shape_tensor(shape)
        mean_t = tf.convert_to_tensor(mean, dtype=dt, name="mean")
        stddev_t = tf.convert_to_tensor(stddev, dtype=dt, name="stddev")
        attrs = {"dtype": ("type", dt.enum), "T": ("type", shape_t.dtype.enum)}
        attrs.update(_seed_attrs(seed))
        rnd = _g()._make("RandomStandardNormal", "RandomStandardNormal", (shape_t,),
                         attrs).outputs[0]
        mul = tf.multiply(rnd, stddev_t, name="mul")
    return tf.add(mul, mean_t, name=_scoped_name(shape_t))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None, name=None):
    tf = _tf()
    dt = tf.as_dtype(dtype or tf.float32)
    with _g().name_scope(name or "truncated_normal"):
        shape_t = _shape_tensor(shape)
        mean_t = tf.convert_to_tensor(mean, dtype=dt, name="mean")
        stddev_t = tf.convert_to_tensor(stddev, dtype=dt, name="stddev")
        attrs = {"dtype": ("type", dt.enum), "T": ("type", shape_t.dtype.enum)}
        attrs.update(_seed_attrs(seed))
        rnd = _g()._make("TruncatedNormal", "TruncatedNormal", (shape_t,), attrs).outputs[0]
        mul = tf.multiply(rnd, stddev_t, name="mul")
    return tf.add(mul, mean_t, name=_scoped_name(shape_t))


def random_uniform(shape, minval=0, maxval=None, dtype=None, seed=None, name=None):
    tf = _tf()
    dt = tf.as_dtype(dtype or tf.float32)
    if dt not in (tf.float16, tf.float32, tf.float64, tf.int32, tf.int64):
        raise ValueError(f"Invalid dtype {dt!r}")
    if maxval is None:
        if _is_int(dt):
            raise ValueError(f"Must specify maxval for integer dtype {dt!r}")
        maxval = 1
    with _g().name_scope(name or "random_uniform"):
        shape_t = _shape_tensor(shape)
        # TF skips the bounds for the [0, 1) floats it draws anyway
        min_zero = type(minval) is int and minval == 0
        max_one = type(maxval) is int and maxval == 1
        if not min_zero or not max_one or _is_int(dt):
            minval = tf.convert_to_tensor(minval, dtype=dt, name="min")
            maxval = tf.convert_to_tensor(maxval, dtype=dt, name="max")
        scope = _scoped_name(shape_t)
        if _is_int(dt):
            attrs = {"Tout": ("type", dt.enum), "T": ("type", shape_t.dtype.enum)}
            attrs.update(_seed_attrs(seed))
            r = _g()._make("RandomUniformInt", scope or "RandomUniformInt",
                           (shape_t, minval, maxval), attrs)
            return r.outputs[0]
        attrs = {"dtype": ("type", dt.enum), "T": ("type", shape_t.dtype.enum)}
        attrs.update(_seed_attrs(seed))
        rnd = _g()._make("RandomUniform", "RandomUniform", (shape_t,), attrs).outputs[0]
        if min_zero:
            if max_one:
                return rnd
            return tf.multiply(rnd, maxval, name="Mul")
        rng = tf.subtract(maxval, minval, name="sub")
        mul = tf.multiply(rnd, rng, name="mul")
    return tf.add(mul, minval, name=scope)


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None):
    tf = _tf()
    with _g().name_scope(name or "multinomial"):
        logits = tf.convert_to_tensor(logits, name="logits")
        ns = tf.convert_to_tensor(num_samples, dtype=tf.int32, name="num_samples")
        attrs = {"T": ("type", logits.dtype.enum),
                 "output_dtype": ("type", tf.as_dtype(output_dtype or tf.int64).enum)}
        attrs.update(_seed_attrs(seed))
        return _g()._make("Multinomial", "Multinomial", (logits, ns), attrs).outputs[0]


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    return multinomial(logits, num_samples, seed=seed, name=name or "categorical",
                       output_dtype=dtype)


def random_shuffle(value, seed=None, name=None):
    tf = _tf()
    value = tf.convert_to_tensor(value, name="value")
    attrs = {"T": ("type", value.dtype.enum)}
    attrs.update(_seed_attrs(seed))
    return _g()._make("RandomShuffle", name or "RandomShuffle", (value,), attrs).outputs[0]


def _normal2(shape, mean=0.0, stddev=1.0, dtype=None, seed=None, name=None):
    return random_normal(shape, mean, stddev, dtype, seed, name)


def _uniform2(shape, minval=0, maxval=None, dtype=None, seed=None, name=None):
    return random_uniform(shape, minval, maxval, dtype, seed, name)


def _truncated2(shape, mean=0.0, stddev=1.0, dtype=None, seed=None, name=None):
    return truncated_normal(shape, mean, stddev, dtype, seed, name)


class _RandomModule:
    """tf.random: TF 1.15's names for the same functions."""

    normal = staticmethod(_normal2)
    uniform = staticmethod(_uniform2)
    truncated_normal = staticmethod(_truncated2)
    shuffle = staticmethod(random_shuffle)
    categorical = staticmethod(categorical)
    multinomial = staticmethod(multinomial)
    set_random_seed = staticmethod(set_random_seed)
    get_seed = staticmethod(get_seed)
    DEFAULT_GRAPH_SEED = DEFAULT_GRAPH_SEED

    @staticmethod
    def set_seed(seed):
        set_random_seed(seed)


random = _RandomModule()
