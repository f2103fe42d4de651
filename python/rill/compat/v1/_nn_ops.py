"""tf.nn's losses and normalisations over the C ops of src/graph/ops_loss.c and ops_norm.c
(L2Loss, LogSoftmax, SigmoidCrossEntropyWithLogits, LRN, FusedBatchNormV3) and functions TF
composes in Python (moments, batch_normalization, l2_normalize, weighted_cross_entropy_with_logits),
plus conv2d_transpose over Conv2DBackpropInput. Imported into tf.nn by nn.py.

sigmoid_cross_entropy_with_logits makes rill's fused SigmoidCrossEntropyWithLogits op (TF
composes it from Relu, Abs, Exp, Log1p and Select: same values, the same gradient)."""
import sys as _sys

import numpy as _np

__all__ = ["l2_loss", "log_softmax", "sigmoid_cross_entropy_with_logits",
           "weighted_cross_entropy_with_logits", "lrn", "local_response_normalization",
           "moments", "batch_normalization", "fused_batch_norm", "l2_normalize",
           "conv2d_transpose", "depthwise_conv2d_native", "depthwise_conv2d", "separable_conv2d"]


def _tf():
    return _sys.modules[__package__]


def _g():
    return _tf().get_default_graph()


def _t(x, dtype=None):
    return _tf().convert_to_tensor(x, dtype=dtype)


def _compatible(a, b):
    """Whether two static shapes can be the same (unknown rank or dims match anything)."""
    if a.ndims is None or b.ndims is None:
        return True
    return a.ndims == b.ndims and all(p is None or q is None or p == q
                                      for p, q in zip(a.as_list(), b.as_list()))


def l2_loss(t, name=None):
    x = _t(t)
    return _g()._make("L2Loss", name or "L2Loss", (x,)).outputs[0]


def log_softmax(logits, axis=None, name=None, dim=None):
    axis = axis if axis is not None else dim
    from .nn import _on_axis
    return _on_axis(_t(logits), axis,
                    lambda x: _g()._make("LogSoftmax", name or "LogSoftmax", (x,)).outputs[0])


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    if _sentinel is not None:
        raise ValueError("Only call `sigmoid_cross_entropy_with_logits` with named arguments "
                         f"(labels=..., logits=..., ...), got {_sentinel!r}")
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")
    lg = _t(logits)
    lb = _t(labels, lg.dtype)
    if not _compatible(lg.shape, lb.shape):
        raise ValueError(f"logits and labels must have the same shape ({lg.shape} vs {lb.shape})")
    return _g()._make("SigmoidCrossEntropyWithLogits", name or "logistic_loss",
                      (lg, lb)).outputs[0]


def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None, name=None,
                                       targets=None):
    """(1 - z) x + l (log(1 + e^-|x|) + max(-x, 0)), l = 1 + (pos_weight - 1) z, TF's stable
    form; the bracket is softplus(x) - x = SigmoidCrossEntropyWithLogits(x, 0) - x."""
    tf = _tf()
    labels = labels if labels is not None else targets
    if labels is None or logits is None or pos_weight is None:
        raise ValueError("labels, logits and pos_weight must be provided.")
    x = _t(logits)
    z = _t(labels, x.dtype)
    if not _compatible(x.shape, z.shape):
        raise ValueError(f"logits and targets must have the same shape ({x.shape} vs {z.shape})")
    pw = _t(pos_weight, x.dtype)
    softplus = _g()._make("SigmoidCrossEntropyWithLogits", "softplus",
                          (x, tf.zeros_like(x))).outputs[0]
    log_weight = tf.add(1.0, tf.multiply(tf.subtract(pw, 1.0), z))
    return tf.add(tf.multiply(tf.subtract(1.0, z), x),
                  tf.multiply(log_weight, tf.subtract(softplus, x)), name=name or "logistic_loss")


def lrn(input, depth_radius=5, bias=1, alpha=1, beta=0.5, name=None):
    x = _t(input)
    attrs = {"depth_radius": ("int", int(depth_radius)), "bias": ("float", float(bias)),
             "alpha": ("float", float(alpha)), "beta": ("float", float(beta)),
             "T": _tf()._attr_type(x.dtype)}
    return _g()._make("LRN", name or "LRN", (x,), attrs).outputs[0]


local_response_normalization = lrn


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """mean and variance over axes: mean(x), mean((x - mean)^2) (TF stops the gradient through
    the inner mean; its gradient term is zero anyway, as sum(x - mean) is)."""
    tf = _tf()
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'.")
    keep = bool(keepdims if keepdims is not None else keep_dims)
    x = _t(x)
    axes = [int(a) for a in _np.atleast_1d(axes)]
    with tf.name_scope(name or "moments"):
        m = tf.reduce_mean(x, axes, keepdims=True, name="mean")
        v = tf.reduce_mean(tf.square(tf.subtract(x, m)), axes, keepdims=keep, name="variance")
        if not keep:
            m = tf.reduce_mean(x, axes, keepdims=False, name="mean")
    return m, v


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """x * inv + (offset - mean * inv), inv = scale / sqrt(variance + epsilon): TF's formula."""
    tf = _tf()
    x = _t(x)
    inv = tf.div(1.0, tf.sqrt(tf.add(_t(variance, x.dtype), variance_epsilon)))
    if scale is not None:
        inv = tf.multiply(inv, _t(scale, x.dtype))
    shift = tf.multiply(_t(mean, x.dtype), inv)
    shift = tf.subtract(_t(offset, x.dtype), shift) if offset is not None else tf.subtract(0.0, shift)
    return tf.add(tf.multiply(x, inv), shift, name=name or "batchnorm")


def fused_batch_norm(x, scale, offset=None, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None,
                     exponential_avg_factor=1.0):
    """(y, batch_mean, batch_variance) of FusedBatchNormV3; mean and variance default to empty
    (training), offset to zeros. TF raises epsilon below 1.001e-5 to that."""
    tf = _tf()
    if (not is_training or exponential_avg_factor != 1.0) and (mean is None or variance is None):
        raise ValueError("Both 'mean' and 'variance' must be a 1D tensor when is_training is "
                         "False or exponential_avg_factor != 1.0.")
    x = _t(x)
    u = tf.float64 if x.dtype == tf.float64 else tf.float32
    scale = _t(scale, u)
    if offset is None:
        offset = tf.zeros_like(scale)
    if mean is None:
        mean = tf.constant([], dtype=u)
    if variance is None:
        variance = tf.constant([], dtype=u)
    epsilon = epsilon if epsilon > 1.001e-5 else 1.001e-5
    attrs = {"epsilon": ("float", float(epsilon)),
             "exponential_avg_factor": ("float", float(exponential_avg_factor)),
             "data_format": ("string", data_format), "is_training": ("bool", bool(is_training)),
             "T": tf._attr_type(x.dtype), "U": tf._attr_type(u)}
    op = _g()._make("FusedBatchNormV3", name or "FusedBatchNormV3",
                    (x, scale, _t(offset, u), _t(mean, u), _t(variance, u)), attrs)
    return op.outputs[0], op.outputs[1], op.outputs[2]


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x^2, axis), epsilon))."""
    tf = _tf()
    axis = axis if axis is not None else dim
    x = _t(x)
    sq = tf.reduce_sum(tf.square(x), axis, keepdims=True)
    return tf.div(x, tf.sqrt(tf.maximum(sq, _t(epsilon, x.dtype))), name=name or "l2_normalize")


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None, padding="SAME",
                     data_format="NHWC", name=None, input=None, filters=None, dilations=None):
    """Conv2DBackpropInput(output_shape, filter, value): the gradient of conv2d, as TF's."""
    from . import nn as _nn
    tf = _tf()
    value = value if value is not None else input
    filter = filter if filter is not None else filters
    x = _t(value)
    f = _t(filter, x.dtype)
    osh = _t(output_shape, tf.int32)
    if osh.shape.ndims is not None and osh.shape.as_list() != [4]:
        raise ValueError(f"output_shape must have shape (4,), got {osh.shape.as_list()}")
    attrs = _nn._window_attrs(x, strides, padding, data_format)
    attrs["dilations"] = ("ints", _nn._four(dilations if dilations is not None else 1,
                                            "dilations"))
    return _g()._make("Conv2DBackpropInput", name or "conv2d_transpose", (osh, f, x),
                      attrs).outputs[0]


def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC",
                            dilations=[1, 1, 1, 1], name=None):
    """DepthwiseConv2dNative(input, filter): attrs strides, padding, data_format, dilations, T."""
    from . import nn as _nn
    x = _t(input)
    f = _t(filter, x.dtype)
    attrs = _nn._window_attrs(x, strides, padding, data_format)
    attrs["dilations"] = ("ints", _nn._four(dilations if dilations is not None else 1,
                                            "dilations"))
    return _g()._make("DepthwiseConv2dNative", name or "DepthwiseConv2dNative", (x, f),
                      attrs).outputs[0]


def _rate(rate, dilations, strides):
    rate = rate if rate is not None else dilations
    if rate is None:
        return [1, 1]
    rate = [int(r) for r in _np.atleast_1d(rate)]
    rate = rate * 2 if len(rate) == 1 else rate
    if any(r != 1 for r in rate) and any(int(s) != 1 for s in list(strides)[1:3]):
        raise ValueError("strides > window_shape not supported due to inconsistent behavior "
                         "with rate > 1 (rate and strides cannot both be > 1)")
    return rate


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None, data_format=None,
                     dilations=None):
    """tf.nn.depthwise_conv2d: DepthwiseConv2dNative with the rate as its dilations (TF builds
    the same values through space_to_batch); the op is named "depthwise" by default."""
    r = _rate(rate, dilations, strides)
    return depthwise_conv2d_native(input, filter, strides, padding,
                                   data_format=data_format or "NHWC",
                                   dilations=[1, r[0], r[1], 1], name=name or "depthwise")


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding, rate=None,
                     name=None, data_format=None, dilations=None):
    """A depthwise convolution, then a 1x1 Conv2D (VALID) mixing the channels, as TF's."""
    from . import nn as _nn
    tf = _tf()
    pw = _t(pointwise_filter)
    if pw.shape.ndims is not None:
        d = pw.shape.as_list()
        if d[0] is not None and d[1] is not None and (d[0] != 1 or d[1] != 1):
            raise ValueError(f"Dimensions must be equal, but are {d[0]} and 1 (pointwise "
                             "filter's height must be 1)")
    with tf.name_scope(name or "separable_conv2d"):
        dw = depthwise_conv2d(input, depthwise_filter, strides, padding, rate=rate,
                              name="depthwise", data_format=data_format, dilations=dilations)
    return _nn.conv2d(dw, pw, [1, 1, 1, 1], "VALID", data_format=data_format or "NHWC",
                      name=name or "separable_conv2d")
