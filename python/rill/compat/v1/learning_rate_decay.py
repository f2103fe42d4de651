"""tf.train's learning-rate schedules (TF 1.x's exponential_decay, piecewise_constant,
polynomial_decay, inverse_time_decay, natural_exp_decay, cosine_decay), composed from the C
library's ops and attached to tf.train.

rill has no Pow, Floor, Cos or Select yet: rate ** p is exp(log(rate) * p) (rate > 0, as every
schedule's is), floor(p) of a nonnegative p a Cast to int64 and back, cos(x) on [0, pi]
1 - 2 sin^2(x / 2) with sin by its series, and piecewise_constant selects with 0/1 masks from
Equal and Minimum. Switch each to the real op when it lands."""
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
    tf = _tf()
    return tf.cast(tf.cast(x, tf.int64), tf.float32)


def _pow(base, p):
    tf = _tf()
    return tf.exp(tf.multiply(tf.log(base), p))


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
            # TF: decay_steps * ceil(step / decay_steps), 1 at step 0; ceil(x) = -floor(-x) is
            # floor(x) + (x > floor(x)) for x >= 0
            q = tf.truediv(step, steps)
            fl = _floor_nonneg(q)
            up = tf.subtract(1.0, tf.cast(tf.equal(q, fl), tf.float32))
            mult = tf.maximum(tf.add(fl, up), 1.0)
            steps = tf.multiply(steps, mult)
        else:
            step = tf.minimum(step, steps)
        frac = tf.subtract(1.0, tf.truediv(step, steps))
        # (frac ** power) with frac in [0, 1]: exp(power * log(frac)), 0 at frac = 0
        powed = _pow(tf.maximum(frac, 1e-30), _f(power))
        return tf.add(tf.multiply(tf.subtract(lr, end), powed), end)


def _cos_0_pi(x):
    """cos(x) for x in [0, pi]: cos(x) = 1 - 2 sin^2(x/2) with sin by its series on [0, pi/2]
    (9 terms: below float32's precision)."""
    tf = _tf()
    h = tf.multiply(0.5, x)
    h2 = tf.square(h)
    term, s = h, h
    for k in range(1, 9):
        term = tf.multiply(term, tf.truediv(tf.negative(h2), float((2 * k) * (2 * k + 1))))
        s = tf.add(s, term)
    return tf.subtract(1.0, tf.multiply(2.0, tf.square(s)))


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    tf = _tf()
    with tf.name_scope(name or "CosineDecay"):
        lr = _f(learning_rate)
        step = tf.minimum(_step(global_step), _f(decay_steps))
        done = tf.truediv(step, _f(decay_steps))
        cosine = tf.multiply(0.5, tf.add(1.0, _cos_0_pi(tf.multiply(_math.pi, done))))
        decayed = tf.add(tf.multiply(1.0 - alpha, cosine), alpha)
        return tf.multiply(lr, decayed)


def piecewise_constant(x, boundaries, values, name=None):
    """values[i] where boundaries[i-1] < x <= boundaries[i] (TF's rule), as a sum of 0/1 masks:
    mask_i = [x > b_{i-1}] - [x > b_i], [x > b] = 1 - [min(x, b) == x]."""
    tf = _tf()
    if len(values) != len(boundaries) + 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with tf.name_scope(name or "PiecewiseConstant"):
        xf = _f(x)
        vals = [_f(v) for v in values]

        def above(b):
            b = _f(b)
            return tf.subtract(1.0, tf.cast(tf.equal(tf.minimum(xf, b), xf), tf.float32))

        gts = [above(b) for b in boundaries]
        out = tf.multiply(vals[0], tf.subtract(1.0, gts[0]))
        for i in range(1, len(values)):
            hi = gts[i] if i < len(boundaries) else 0.0
            out = tf.add(out, tf.multiply(vals[i], tf.subtract(gts[i - 1], hi)))
        return out


def _install(train):
    for n in __all__:
        setattr(train, n, globals()[n])
