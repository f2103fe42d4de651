"""tf.layers' 3-D layers (TF 1.x): Conv3D, Conv3DTranspose, MaxPooling3D, AveragePooling3D and
their functions conv3d, conv3d_transpose, max_pooling3d, average_pooling3d, on layers.py's base
classes (the same scopes and variable names: "conv3d/kernel:0", "conv3d/bias:0") over tf.nn's
conv3d, Conv3DBackpropInputV2, max_pool3d and avg_pool3d (_nn3d_ops.py). Exported from
layers.py. channels_last (NDHWC) data only, as the 2-D layers."""
import sys as _sys

import numpy as _np

from . import layers as _layers

__all__ = ["Conv3D", "Conv3DTranspose", "MaxPooling3D", "AveragePooling3D", "conv3d",
           "conv3d_transpose", "max_pooling3d", "average_pooling3d"]


def _tf():
    return _sys.modules[__package__]


def _triple(v, what):
    if isinstance(v, (int, _np.integer)):
        return (int(v),) * 3
    v = tuple(int(x) for x in v)
    if len(v) != 3:
        raise ValueError(f"The `{what}` argument must be a tuple of 3 integers. Received: {v}")
    return v


class Conv3D(_layers.Conv2D):
    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1, 1), activation=None,
                 use_bias=True, kernel_initializer=None, bias_initializer=None,
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        _layers.Layer.__init__(self, trainable=trainable, name=name,
                               activity_regularizer=activity_regularizer, **kwargs)
        self.filters = int(filters)
        self.kernel_size = _triple(kernel_size, "kernel_size")
        self.strides = _triple(strides, "strides")
        self.padding = _layers._padding(padding)
        self.data_format = _layers._data_format(data_format)
        self.dilation_rate = _triple(dilation_rate, "dilation_rate")
        if self.dilation_rate != (1, 1, 1) and self.strides != (1, 1, 1):
            raise ValueError("`strides > 1` not supported in conjunction with "
                             "`dilation_rate > 1`")
        self.activation, self.use_bias = activation, use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.kernel = self.bias = None

    def _in_channels(self, input_shape):
        dims = input_shape.as_list() if input_shape.ndims is not None else None
        if not dims or len(dims) != 5:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected ndim=5, found ndim={len(dims) if dims else None}. Full "
                             f"shape received: {input_shape}")
        if dims[-1] is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found "
                             "`None`.")
        return dims[-1]

    def call(self, inputs):
        tf = _tf()
        out = tf.nn.conv3d(inputs, self.kernel, strides=[1, *self.strides, 1],
                           padding=self.padding, dilations=[1, *self.dilation_rate, 1])
        if self.use_bias:
            out = tf.nn.bias_add(out, self.bias)
        return _layers._activation(self.activation, out)


class Conv3DTranspose(Conv3D):
    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format="channels_last", activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         trainable=trainable, name=name, **kwargs)

    def _kernel_shape(self, cin):
        return list(self.kernel_size) + [self.filters, cin]

    def call(self, inputs):
        tf = _tf()
        n, d, h, w, _ = _layers._static_dims(inputs)
        out = [_layers._deconv_length(v, k, self.padding, s)
               for v, k, s in zip((d, h, w), self.kernel_size, self.strides)]
        if None in out:
            raise ValueError("rill's conv3d_transpose needs the input's depth, height and width "
                             f"known when the graph is built, got shape {[n, d, h, w]}")
        g = tf.get_default_graph()
        if n is not None:
            sizes = tf.constant([n, *out, self.filters], dtype=tf.int32)
        else:  # the batch from the input's shape: Shape * [1,0,0,0,0] + [0,d,h,w,c]
            sizes = tf.add(tf.multiply(tf.shape(inputs),
                                       tf.constant([1, 0, 0, 0, 0], dtype=tf.int32)),
                           tf.constant([0, *out, self.filters], dtype=tf.int32))
        attrs = {"strides": ("ints", [1, *self.strides, 1]),
                 "padding": ("string", self.padding), "data_format": ("string", "NDHWC"),
                 "dilations": ("ints", [1, 1, 1, 1, 1]), "T": tf._attr_type(inputs.dtype)}
        y = g._make("Conv3DBackpropInputV2", "conv3d_transpose",
                    (sizes, self.kernel.value(), inputs), attrs).outputs[0]
        if n is None:  # the static shape the sizes' arithmetic hid
            y = tf.reshape(y, [-1, *out, self.filters])
        if self.use_bias:
            y = tf.nn.bias_add(y, self.bias)
        return _layers._activation(self.activation, y)


class _Pooling3D(_layers.Layer):
    _op = None

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = _triple(pool_size, "pool_size")
        self.strides = _triple(strides if strides is not None else pool_size, "strides")
        self.padding = _layers._padding(padding)
        self.data_format = _layers._data_format(data_format)

    def call(self, inputs):
        tf = _tf()
        fn = tf.nn.max_pool3d if self._op == "MaxPool3D" else tf.nn.avg_pool3d
        return fn(inputs, ksize=[1, *self.pool_size, 1], strides=[1, *self.strides, 1],
                  padding=self.padding)


class MaxPooling3D(_Pooling3D):
    _op = "MaxPool3D"


class AveragePooling3D(_Pooling3D):
    _op = "AvgPool3D"


def conv3d(inputs, filters, kernel_size, strides=(1, 1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    layer = Conv3D(filters, kernel_size, strides=strides, padding=padding,
                   data_format=data_format, dilation_rate=dilation_rate, activation=activation,
                   use_bias=use_bias, kernel_initializer=kernel_initializer,
                   bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                   bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
                   kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                   trainable=trainable, name=name, _scope=name, _reuse=reuse)
    return layer(inputs)


def conv3d_transpose(inputs, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                     data_format="channels_last", activation=None, use_bias=True,
                     kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                     bias_constraint=None, trainable=True, name=None, reuse=None):
    layer = Conv3DTranspose(filters, kernel_size, strides=strides, padding=padding,
                            data_format=data_format, activation=activation, use_bias=use_bias,
                            kernel_initializer=kernel_initializer,
                            bias_initializer=bias_initializer,
                            kernel_regularizer=kernel_regularizer,
                            bias_regularizer=bias_regularizer,
                            activity_regularizer=activity_regularizer,
                            kernel_constraint=kernel_constraint,
                            bias_constraint=bias_constraint, trainable=trainable, name=name,
                            _scope=name, _reuse=reuse)
    return layer(inputs)


def max_pooling3d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    return MaxPooling3D(pool_size, strides, padding=padding, data_format=data_format,
                        name=name, _scope=name)(inputs)


def average_pooling3d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    return AveragePooling3D(pool_size, strides, padding=padding, data_format=data_format,
                            name=name, _scope=name)(inputs)

