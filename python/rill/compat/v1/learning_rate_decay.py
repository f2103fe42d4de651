"""tf.train's learning-rate schedules (TF 1.x's exponential_decay, piecewise_constant,
polynomial_decay, inverse_time_decay, natural_exp_decay, cosine_decay) on TF's ops (Pow, Floor,
Ceil, Cos; piecewise_constant's choice, a case of conds in TF, as a chain of Select since rill
has no cond) and attached to tf.train."""
import math as _math
import sys as _sys

__all__ = ["exponential_decay", "piecewise_constant", "polynomial_decay", "inverse_time_decay",
           "natural_exp_decay", "cosine_decay"]


def _tf():
    return _sys.modules[__package__]


def _f(x):
    tf = _tf()
    x = tf.convert_to_tensor(x) if not isinstance(x, (int, float)) else tf.constant(float(x))
    return tf.cast(x, tf.float32)


def _step(global_step):
    if global_step is None:
        raise ValueError("global_step is required for this decay schedule.")
    return _f(global_step)


def _floor_nonneg(x):
    return _tf().floor(x)


def _pow(base, p):
    return _tf().pow(base, p)


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * decay_rate ** (global_step / decay_steps) (floored when staircase)."""
    tf = _tf()
    with tf.name_scope(name or "ExponentialDecay"):
        lr = _f(learning_rate)
        p = tf.truediv(_step(global_step), _f(decay_steps))
        if staircase:
            p = _floor_nonneg(p)
        return tf.multiply(lr, _pow(_f(decay_rate), p))


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    tf = _tf()
    with tf.name_scope(name or "NaturalExpDecay"):
        p = tf.truediv(_step(global_step), _f(decay_steps))
        if staircase:
            p = _floor_nonneg(p)
        return tf.multiply(_f(learning_rate), tf.exp(tf.negative(tf.multiply(_f(decay_rate), p))))


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                       name=None):
    tf = _tf()
    with tf.name_scope(name or "InverseTimeDecay"):
        p = tf.truediv(_step(global_step), _f(decay_steps))
        if staircase:
            p = _floor_nonneg(p)
        return tf.truediv(_f(learning_rate), tf.add(1.0, tf.multiply(_f(decay_rate), p)))


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    tf = _tf()
    with tf.name_scope(name or "PolynomialDecay"):
        lr, end = _f(learning_rate), _f(end_learning_rate)
        step, steps = _step(global_step), _f(decay_steps)
        if cycle:
            # TF: decay_steps * (1 at step 0, else ceil(step / decay_steps)); step >= 0
            mult = tf.maximum(tf.ceil(tf.truediv(step, steps)), 1.0)
            steps = tf.multiply(steps, mult)
        else:
            step = tf.minimum(step, steps)
        p = tf.truediv(step, steps)
        return tf.add(tf.multiply(tf.subtract(lr, end), _pow(tf.subtract(1.0, p), _f(power))),
                      end)


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    tf = _tf()
    with tf.name_scope(name or "CosineDecay"):
        lr = _f(learning_rate)
        step = tf.minimum(_step(global_step), _f(decay_steps))
        done = tf.truediv(step, _f(decay_steps))
        cosine = tf.multiply(0.5, tf.add(1.0, tf.cos(tf.multiply(_math.pi, done))))
        decayed = tf.add(tf.multiply(1.0 - alpha, cosine), alpha)
        return tf.multiply(lr, decayed)


def piecewise_constant(x, boundaries, values, name=None):
    """values[i] where boundaries[i-1] < x <= boundaries[i] (TF's rule): a Select per
    boundary, from the last value down."""
    tf = _tf()
    if len(values) != len(boundaries) + 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with tf.name_scope(name or "PiecewiseConstant"):
        xf = _f(x)
        out = _f(values[-1])
        for b, v in reversed(list(zip(boundaries, values[:-1]))):
            out = tf.where(tf.less_equal(xf, _f(b)), _f(v), out)
        return out


def _install(train):
    for n in __all__:
        setattr(train, n, globals()[n])
