"""tf.train's learning-rate schedules (TF 1.x's exponential_decay, piecewise_constant,
polynomial_decay, inverse_time_decay, natural_exp_decay, cosine_decay) on TF's ops (Pow, Floor,
Ceil, Cos; piecewise_constant's choice, a case of conds in TF, as a chain of Select since rill
has no cond) and attached to tf.train."""
import math as _math
import sys as _sys

__all__ = ["exponential_decay", "piecewise_constant", "polynomial_decay", "inverse_time_decay",
           "natural_exp_decay", "cosine_decay", "cosine_decay_restarts", "linear_cosine_decay",
           "noisy_linear_cosine_decay", "piecewise_constant_decay"]


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


piecewise_constant_decay = piecewise_constant


def _required(global_step, what):
    if global_step is None:
        raise ValueError("global_step is required for %s." % what)
    return _f(global_step)


def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0, m_mul=1.0,
                          alpha=0.0, name=None):
    """SGDR: cosine decay restarted every period, periods growing by t_mul and peaks by m_mul
    (TF's formula; its cond on t_mul == 1 is a Python branch for a number, a where for a
    tensor)."""
    tf = _tf()
    step = _required(global_step, "cosine decay restarts")
    with tf.name_scope(name or "SGDRDecay"):
        lr = tf.convert_to_tensor(learning_rate, name="initial_learning_rate")
        lr = tf.cast(lr, tf.float32)
        first = _f(first_decay_steps)
        alpha_t, tm, mm = _f(alpha), _f(t_mul), _f(m_mul)
        frac = tf.truediv(step, first)

        def plain():
            i = tf.floor(frac)
            return i, tf.subtract(frac, i)

        def geometric():
            i = tf.floor(tf.truediv(tf.log(tf.subtract(1.0, tf.multiply(frac,
                                                                        tf.subtract(1.0, tm)))),
                                    tf.log(tm)))
            sum_r = tf.truediv(tf.subtract(1.0, tf.pow(tm, i)), tf.subtract(1.0, tm))
            return i, tf.truediv(tf.subtract(frac, sum_r), tf.pow(tm, i))

        if isinstance(t_mul, (int, float)):
            i_restart, done = plain() if float(t_mul) == 1.0 else geometric()
        else:
            one = tf.equal(tm, 1.0)
            (i1, d1), (i2, d2) = plain(), geometric()
            i_restart, done = tf.where(one, i1, i2), tf.where(one, d1, d2)
        m_fac = tf.pow(mm, i_restart)
        cosine = tf.multiply(tf.multiply(0.5, m_fac),
                             tf.add(1.0, tf.cos(tf.multiply(_math.pi, done))))
        decayed = tf.add(tf.multiply(tf.subtract(1.0, alpha_t), cosine), alpha_t)
        return tf.multiply(lr, decayed)


def _linear_cosine(tf, step, decay_steps, num_periods):
    steps = _f(decay_steps)
    step = tf.minimum(step, steps)
    linear = tf.truediv(tf.subtract(steps, step), steps)
    fraction = tf.multiply(tf.multiply(2.0, _f(num_periods)), tf.truediv(step, steps))
    cosine = tf.multiply(0.5, tf.add(1.0, tf.cos(tf.multiply(_math.pi, fraction))))
    return step, linear, cosine


def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0,
                        beta=0.001, name=None):
    tf = _tf()
    step = _required(global_step, "linear cosine decay")
    with tf.name_scope(name or "LinearCosineDecay"):
        lr = _f(learning_rate)
        _, linear, cosine = _linear_cosine(tf, step, decay_steps, num_periods)
        return tf.multiply(lr, tf.add(tf.multiply(tf.add(_f(alpha), linear), cosine), _f(beta)))


def noisy_linear_cosine_decay(learning_rate, global_step, decay_steps, initial_variance=1.0,
                              variance_decay=0.55, num_periods=0.5, alpha=0.0, beta=0.001,
                              name=None):
    """linear_cosine_decay with N(0, initial_variance / (1 + step) ** variance_decay) noise on
    the linear part, drawn by a RandomStandardNormal per run (the graph seed's stream)."""
    tf = _tf()
    step = _required(global_step, "noisy linear cosine decay")
    with tf.name_scope(name or "NoisyLinearCosineDecay"):
        lr = _f(learning_rate)
        step, linear, cosine = _linear_cosine(tf, step, decay_steps, num_periods)
        variance = tf.truediv(_f(initial_variance),
                              tf.pow(tf.add(1.0, step), _f(variance_decay)))
        std = tf.sqrt(variance)
        noisy = tf.add(linear, tf.multiply(tf.random_normal([]), std))
        return tf.multiply(lr, tf.add(tf.multiply(tf.add(_f(alpha), noisy), cosine), _f(beta)))


def _install(train):
    for n in __all__:
        setattr(train, n, globals()[n])
