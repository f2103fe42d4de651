"""tf.contrib.layers: fully_connected ("fully_connected/weights", ".../biases"), conv2d
("Conv/weights"), max_pool2d, avg_pool2d, dropout (keep_prob, is_training), flatten, batch_norm,
the xavier and variance-scaling initializers, l1/l2/sum regularizers and apply_regularization,
over tf.layers and tf.get_variable. Weights and biases join MODEL_VARIABLES, as contrib's model
variables do."""
import sys as _sys

from .. import initializers as _init

__all__ = ["fully_connected", "conv2d", "convolution2d", "max_pool2d", "avg_pool2d", "dropout",
           "flatten", "batch_norm", "xavier_initializer", "xavier_initializer_conv2d",
           "variance_scaling_initializer", "l1_regularizer", "l2_regularizer",
           "l1_l2_regularizer", "sum_regularizer", "apply_regularization", "linear"]


def _tf():
    return _sys.modules["rill.compat.v1"]


def xavier_initializer(uniform=True, seed=None, dtype=None):
    return _init.ContribVarianceScaling(1.0, "FAN_AVG", uniform, seed, dtype)


xavier_initializer_conv2d = xavier_initializer


def variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None,
                                 dtype=None):
    return _init.ContribVarianceScaling(factor, mode, uniform, seed, dtype)


def _check_scale(scale):
    import numbers
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale}")
        return scale == 0.
    return False


def l2_regularizer(scale, scope=None):
    """scale * sum(w ** 2) / 2 (TF's l2_loss)."""
    if _check_scale(scale):
        return lambda _: None

    def l2(weights):
        tf = _tf()
        with tf.name_scope(scope or "l2_regularizer"):
            return tf.multiply(tf.convert_to_tensor(scale, dtype=weights.dtype),
                               tf.multiply(tf.reduce_sum(tf.square(weights)), 0.5), name="value")
    return l2


def l1_regularizer(scale, scope=None):
    if _check_scale(scale):
        return lambda _: None

    def l1(weights):
        tf = _tf()
        with tf.name_scope(scope or "l1_regularizer"):
            w = tf.convert_to_tensor(weights)
            return tf.multiply(tf.convert_to_tensor(scale, dtype=w.dtype),
                               tf.reduce_sum(tf.maximum(w, tf.negative(w))), name="value")
    return l1


def sum_regularizer(regularizer_list, scope=None):
    regs = [r for r in regularizer_list if r is not None]
    if not regs:
        return None

    def total(weights):
        tf = _tf()
        with tf.name_scope(scope or "sum_regularizer"):
            ps = [p for p in (r(weights) for r in regs) if p is not None]
            return tf.add_n(ps) if ps else None
    return total


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope)


def apply_regularization(regularizer, weights_list=None):
    tf = _tf()
    if not weights_list:
        weights_list = tf.get_collection("weights")
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with tf.name_scope("get_regularization_penalty"):
        penalties = [p for p in (regularizer(w) for w in weights_list) if p is not None]
        summed = tf.add_n(penalties) if penalties else tf.constant(0.0)
    tf.add_to_collection("regularization_losses", summed)
    return summed


def _model_variable(name, shape, initializer, regularizer, trainable, collections):
    tf = _tf()
    colls = ["variables", "model_variables"] + list(collections or [])
    return tf.get_variable(name, shape, initializer=initializer, regularizer=regularizer,
                           trainable=trainable, collections=colls)


def _collect(outputs_collections, value):
    if outputs_collections:
        _tf().add_to_collections(outputs_collections, value)
    return value


def _default(init, fallback):
    return fallback() if init is _DEFAULT else init


_DEFAULT = object()


def fully_connected(inputs, num_outputs, activation_fn=_DEFAULT, normalizer_fn=None,
                    normalizer_params=None, weights_initializer=_DEFAULT,
                    weights_regularizer=None, biases_initializer=_DEFAULT,
                    biases_regularizer=None, reuse=None, variables_collections=None,
                    outputs_collections=None, trainable=True, scope=None):
    tf = _tf()
    activation_fn = tf.nn.relu if activation_fn is _DEFAULT else activation_fn
    with tf.variable_scope(scope, default_name="fully_connected", reuse=reuse):
        x = tf.convert_to_tensor(inputs)
        n_in = x.shape.as_list()[-1]
        w = _model_variable("weights", [n_in, int(num_outputs)],
                            _default(weights_initializer, xavier_initializer),
                            weights_regularizer, trainable, variables_collections)
        out = tf.matmul(x, w)
        if normalizer_fn is not None:
            out = normalizer_fn(out, **(normalizer_params or {}))
        else:
            binit = _default(biases_initializer, tf.zeros_initializer)
            if binit is not None:
                b = _model_variable("biases", [int(num_outputs)], binit, biases_regularizer,
                                    trainable, variables_collections)
                out = tf.nn.bias_add(out, b)
        if activation_fn is not None:
            out = activation_fn(out)
        return _collect(outputs_collections, out)


def linear(inputs, num_outputs, **kwargs):
    return fully_connected(inputs, num_outputs, activation_fn=None, **kwargs)


def conv2d(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None,
           rate=1, activation_fn=_DEFAULT, normalizer_fn=None, normalizer_params=None,
           weights_initializer=_DEFAULT, weights_regularizer=None, biases_initializer=_DEFAULT,
           biases_regularizer=None, reuse=None, variables_collections=None,
           outputs_collections=None, trainable=True, scope=None):
    tf = _tf()
    from ..layers import _data_format, _pair, _padding
    if data_format not in (None, "NHWC"):
        _data_format("channels_first")
    activation_fn = tf.nn.relu if activation_fn is _DEFAULT else activation_fn
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride, "stride")
    rh, rw = _pair(rate, "rate")
    with tf.variable_scope(scope, default_name="Conv", reuse=reuse):
        x = tf.convert_to_tensor(inputs)
        cin = x.shape.as_list()[-1]
        w = _model_variable("weights", [kh, kw, cin, int(num_outputs)],
                            _default(weights_initializer, xavier_initializer),
                            weights_regularizer, trainable, variables_collections)
        out = tf.nn.conv2d(x, w, strides=[1, sh, sw, 1], padding=_padding(padding),
                           dilations=[1, rh, rw, 1])
        if normalizer_fn is not None:
            out = normalizer_fn(out, **(normalizer_params or {}))
        else:
            binit = _default(biases_initializer, tf.zeros_initializer)
            if binit is not None:
                b = _model_variable("biases", [int(num_outputs)], binit, biases_regularizer,
                                    trainable, variables_collections)
                out = tf.nn.bias_add(out, b)
        if activation_fn is not None:
            out = activation_fn(out)
        return _collect(outputs_collections, out)


convolution2d = conv2d


def _pool(kind, inputs, kernel_size, stride, padding, data_format, outputs_collections, scope):
    tf = _tf()
    from ..layers import _pair, _padding
    if data_format not in (None, "NHWC"):
        raise ValueError("data_format='NCHW' is not supported by rill (NHWC only)")
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride, "stride")
    fn = tf.nn.max_pool if kind == "MaxPool2D" else tf.nn.avg_pool
    with tf.name_scope(scope or kind):
        out = fn(inputs, ksize=[1, kh, kw, 1], strides=[1, sh, sw, 1], padding=_padding(padding))
    return _collect(outputs_collections, out)


def max_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    return _pool("MaxPool2D", inputs, kernel_size, stride, padding, data_format,
                 outputs_collections, scope)


def avg_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    return _pool("AvgPool2D", inputs, kernel_size, stride, padding, data_format,
                 outputs_collections, scope)


def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True, outputs_collections=None,
            scope=None, seed=None):
    tf = _tf()
    from ..layers import _blend
    with tf.name_scope(scope or "Dropout"):
        x = tf.convert_to_tensor(inputs)
        out = _blend(is_training,
                     lambda: tf.nn.dropout(x, keep_prob=keep_prob, noise_shape=noise_shape,
                                           seed=seed),
                     lambda: x, x.dtype)
    return _collect(outputs_collections, out)


def flatten(inputs, outputs_collections=None, scope=None):
    tf = _tf()
    from ..layers import Flatten
    with tf.name_scope(scope or "Flatten"):
        out = Flatten.call(Flatten.__new__(Flatten), tf.convert_to_tensor(inputs))
    return _collect(outputs_collections, out)


def batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001, activation_fn=None,
               param_initializers=None, param_regularizers=None,
               updates_collections="update_ops", is_training=True, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               data_format="NHWC", zero_debias_moving_mean=False, scope=None, fused=None,
               renorm=False):
    tf = _tf()
    from ..layers import BatchNormalization
    if data_format != "NHWC":
        raise ValueError("data_format='NCHW' is not supported by rill (NHWC only)")
    if updates_collections is None:
        raise ValueError("rill's batch_norm needs updates_collections (in-place updates "
                         "are not supported); run tf.GraphKeys.UPDATE_OPS with the train op")
    pi = param_initializers or {}
    pr = param_regularizers or {}
    with tf.variable_scope(scope, default_name="BatchNorm", reuse=reuse) as sc:
        layer = BatchNormalization(momentum=decay, epsilon=epsilon, center=center, scale=scale,
                                   beta_initializer=pi.get("beta"),
                                   gamma_initializer=pi.get("gamma"),
                                   moving_mean_initializer=pi.get("moving_mean"),
                                   moving_variance_initializer=pi.get("moving_variance"),
                                   beta_regularizer=pr.get("beta"),
                                   gamma_regularizer=pr.get("gamma"), trainable=trainable,
                                   fused=fused, name=sc.name, _scope=sc, _reuse=reuse)
        out = layer(inputs, training=is_training)
        if updates_collections != "update_ops":
            for u in layer.updates:
                tf.add_to_collections(updates_collections, u)
        for v in layer.variables:
            tf.add_to_collection("model_variables", v)
        if activation_fn is not None:
            out = activation_fn(out)
    return _collect(outputs_collections, out)
