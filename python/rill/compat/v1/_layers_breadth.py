"""More tf.layers (TF 1.x's legacy layers): Conv1D, MaxPooling1D, AveragePooling1D,
SeparableConv1D, SeparableConv2D and their functions, over tf.nn (conv1d, pools on an inserted
height of 1, separable_conv2d). Variables are TF's one to one: kernel and bias;
depthwise_kernel, pointwise_kernel and bias for the separable ones, in the layer's scope
("conv1d/kernel:0", "separable_conv2d/depthwise_kernel:0"), so checkpoints map between the two.
Imported into tf.layers by layers.py."""
import sys as _sys

import numpy as _np

from . import layers as _layers

__all__ = ["Conv1D", "MaxPooling1D", "AveragePooling1D", "SeparableConv1D", "SeparableConv2D",
           "conv1d", "max_pooling1d", "average_pooling1d", "separable_conv1d",
           "separable_conv2d"]


def _tf():
    return _sys.modules[__package__]


def _one(v, what):
    if isinstance(v, (int, _np.integer)):
        return (int(v),)
    v = tuple(int(x) for x in v)
    if len(v) != 1:
        raise ValueError(f"The `{what}` argument must be a tuple of 1 integers. Received: {v}")
    return v


def _padding1d(p):
    p = str(p).lower()
    return "CAUSAL" if p == "causal" else _layers._padding(p)


def _causal_pad(x, k, dilation):
    """Left padding of (k - 1) * dilation steps: Conv1D's padding='causal'."""
    tf = _tf()
    return tf.pad(x, [[0, 0], [(k - 1) * dilation, 0], [0, 0]])


def _rank_check(layer, input_shape, ndim):
    dims = input_shape.as_list() if input_shape.ndims is not None else None
    if not dims or len(dims) != ndim:
        raise ValueError(f"Input 0 of layer {layer.name} is incompatible with the layer: "
                         f"expected ndim={ndim}, found ndim={len(dims) if dims else None}. Full "
                         f"shape received: {input_shape}")
    if dims[-1] is None:
        raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
    return dims[-1]


class Conv1D(_layers.Layer):
    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.filters = int(filters)
        self.kernel_size = _one(kernel_size, "kernel_size")
        self.strides = _one(strides, "strides")
        self.padding = _padding1d(padding)
        self.data_format = _layers._data_format(data_format)
        self.dilation_rate = _one(dilation_rate, "dilation_rate")
        if self.dilation_rate != (1,) and self.strides != (1,):
            raise ValueError("`strides > 1` not supported in conjunction with "
                             "`dilation_rate > 1`")
        self.activation, self.use_bias = activation, use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.kernel = self.bias = None

    def build(self, input_shape):
        tf = _tf()
        cin = _rank_check(self, input_shape, 3)
        self.kernel = self.add_weight("kernel", [self.kernel_size[0], cin, self.filters],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", [self.filters],
                                        initializer=self.bias_initializer or
                                        tf.zeros_initializer(),
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def call(self, inputs):
        tf = _tf()
        padding = self.padding
        if padding == "CAUSAL":
            inputs = _causal_pad(inputs, self.kernel_size[0], self.dilation_rate[0])
            padding = "VALID"
        out = tf.nn.conv1d(inputs, self.kernel, self.strides[0], padding,
                           dilations=self.dilation_rate[0])
        if self.use_bias:
            out = tf.nn.bias_add(out, self.bias)
        return _layers._activation(self.activation, out)


class _Pooling1D(_layers.Layer):
    _kind = None

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if strides is None:
            raise ValueError("Argument `strides` must not be None.")
        self.pool_size = _one(pool_size, "pool_size")
        self.strides = _one(strides, "strides")
        self.padding = _layers._padding(padding)
        self.data_format = _layers._data_format(data_format)

    def call(self, inputs):
        tf = _tf()
        fn = tf.nn.max_pool1d if self._kind == "max" else tf.nn.avg_pool1d
        return fn(inputs, self.pool_size[0], self.strides[0], self.padding)


class MaxPooling1D(_Pooling1D):
    _kind = "max"


class AveragePooling1D(_Pooling1D):
    _kind = "avg"


class _SeparableConv(_layers.Layer):
    _rank = None

    def __init__(self, filters, kernel_size, strides, padding="valid",
                 data_format="channels_last", dilation_rate=1, depth_multiplier=1,
                 activation=None, use_bias=True, depthwise_initializer=None,
                 pointwise_initializer=None, bias_initializer=None, depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        tup = _one if self._rank == 1 else _layers._pair
        self.filters = int(filters)
        self.kernel_size = tup(kernel_size, "kernel_size")
        self.strides = tup(strides, "strides")
        self.padding = _padding1d(padding) if self._rank == 1 else _layers._padding(padding)
        self.data_format = _layers._data_format(data_format)
        self.dilation_rate = tup(dilation_rate, "dilation_rate")
        if any(d != 1 for d in self.dilation_rate) and any(s != 1 for s in self.strides):
            raise ValueError("`strides > 1` not supported in conjunction with "
                             "`dilation_rate > 1`")
        self.depth_multiplier = int(depth_multiplier)
        self.activation, self.use_bias = activation, use_bias
        self.depthwise_initializer = depthwise_initializer
        self.pointwise_initializer = pointwise_initializer
        self.bias_initializer = bias_initializer
        self.depthwise_regularizer = depthwise_regularizer
        self.pointwise_regularizer = pointwise_regularizer
        self.bias_regularizer = bias_regularizer
        self.depthwise_constraint = depthwise_constraint
        self.pointwise_constraint = pointwise_constraint
        self.bias_constraint = bias_constraint
        self.depthwise_kernel = self.pointwise_kernel = self.bias = None

    def build(self, input_shape):
        tf = _tf()
        cin = _rank_check(self, input_shape, self._rank + 2)
        k, m = list(self.kernel_size), self.depth_multiplier
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", k + [cin, m], initializer=self.depthwise_initializer,
            regularizer=self.depthwise_regularizer, constraint=self.depthwise_constraint)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", [1] * self._rank + [cin * m, self.filters],
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", [self.filters],
                                        initializer=self.bias_initializer or
                                        tf.zeros_initializer(),
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def call(self, inputs):
        tf = _tf()
        dw, pw = self.depthwise_kernel.value(), self.pointwise_kernel.value()
        padding, strides, rate = self.padding, list(self.strides), list(self.dilation_rate)
        if self._rank == 1:
            if padding == "CAUSAL":
                inputs = _causal_pad(inputs, self.kernel_size[0], rate[0])
                padding = "VALID"
            x = tf.expand_dims(inputs, 1)
            dw, pw = tf.expand_dims(dw, 0), tf.expand_dims(pw, 0)
            strides, rate = strides * 2, [1] + rate  # TF's (1,) + strides * 2
        else:
            x = inputs
        out = tf.nn.separable_conv2d(x, dw, pw, strides=[1, *strides, 1], padding=padding,
                                     rate=rate)
        if self._rank == 1:
            out = tf.squeeze(out, [1])
        if self.use_bias:
            out = tf.nn.bias_add(out, self.bias)
        return _layers._activation(self.activation, out)


class SeparableConv1D(_SeparableConv):
    _rank = 1

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, depth_multiplier=1, **kwargs):
        super().__init__(filters, kernel_size, strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         depth_multiplier=depth_multiplier, **kwargs)


class SeparableConv2D(_SeparableConv):
    _rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), depth_multiplier=1,
                 **kwargs):
        super().__init__(filters, kernel_size, strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         depth_multiplier=depth_multiplier, **kwargs)


def conv1d(inputs, filters, kernel_size, strides=1, padding="valid",
           data_format="channels_last", dilation_rate=1, activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    return Conv1D(filters, kernel_size, strides=strides, padding=padding,
                  data_format=data_format, dilation_rate=dilation_rate, activation=activation,
                  use_bias=use_bias, kernel_initializer=kernel_initializer,
                  bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                  bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                  kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                  trainable=trainable, name=name, _scope=name, _reuse=reuse)(inputs)


def max_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    return MaxPooling1D(pool_size, strides, padding=padding, data_format=data_format, name=name,
                        _scope=name)(inputs)


def average_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    return AveragePooling1D(pool_size, strides, padding=padding, data_format=data_format,
                            name=name, _scope=name)(inputs)


def _separable(cls, inputs, filters, kernel_size, strides, padding, data_format, dilation_rate,
               depth_multiplier, activation, use_bias, depthwise_initializer,
               pointwise_initializer, bias_initializer, depthwise_regularizer,
               pointwise_regularizer, bias_regularizer, activity_regularizer,
               depthwise_constraint, pointwise_constraint, bias_constraint, trainable, name,
               reuse):
    return cls(filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
               dilation_rate=dilation_rate, depth_multiplier=depth_multiplier,
               activation=activation, use_bias=use_bias,
               depthwise_initializer=depthwise_initializer,
               pointwise_initializer=pointwise_initializer, bias_initializer=bias_initializer,
               depthwise_regularizer=depthwise_regularizer,
               pointwise_regularizer=pointwise_regularizer, bias_regularizer=bias_regularizer,
               activity_regularizer=activity_regularizer,
               depthwise_constraint=depthwise_constraint,
               pointwise_constraint=pointwise_constraint, bias_constraint=bias_constraint,
               trainable=trainable, name=name, _scope=name, _reuse=reuse)(inputs)


def separable_conv1d(inputs, filters, kernel_size, strides=1, padding="valid",
                     data_format="channels_last", dilation_rate=1, depth_multiplier=1,
                     activation=None, use_bias=True, depthwise_initializer=None,
                     pointwise_initializer=None, bias_initializer=None,
                     depthwise_regularizer=None, pointwise_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                     pointwise_constraint=None, bias_constraint=None, trainable=True, name=None,
                     reuse=None):
    return _separable(SeparableConv1D, inputs, filters, kernel_size, strides, padding,
                      data_format, dilation_rate, depth_multiplier, activation, use_bias,
                      depthwise_initializer, pointwise_initializer, bias_initializer,
                      depthwise_regularizer, pointwise_regularizer, bias_regularizer,
                      activity_regularizer, depthwise_constraint, pointwise_constraint,
                      bias_constraint, trainable, name, reuse)


def separable_conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                     data_format="channels_last", dilation_rate=(1, 1), depth_multiplier=1,
                     activation=None, use_bias=True, depthwise_initializer=None,
                     pointwise_initializer=None, bias_initializer=None,
                     depthwise_regularizer=None, pointwise_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                     pointwise_constraint=None, bias_constraint=None, trainable=True, name=None,
                     reuse=None):
    return _separable(SeparableConv2D, inputs, filters, kernel_size, strides, padding,
                      data_format, dilation_rate, depth_multiplier, activation, use_bias,
                      depthwise_initializer, pointwise_initializer, bias_initializer,
                      depthwise_regularizer, pointwise_regularizer, bias_regularizer,
                      activity_regularizer, depthwise_constraint, pointwise_constraint,
                      bias_constraint, trainable, name, reuse)
