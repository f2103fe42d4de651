"""More of tf.nn (TF 1.x, tensorflow.compat.v1 of TF 2.15), composed in Python as TF's own Python
composes them: the 1-D and rank-dispatching pools and convolutions (avg_pool1d, max_pool_v2,
pool, conv1d, convolution, conv_transpose, ...) over Conv2D / MaxPool / AvgPool on an inserted
height of 1, the explicit conv2d and depthwise backprops, atrous convolutions (dilations),
crelu, silu, zero_fraction, the moments helpers (sufficient_statistics, normalize_moments,
weighted_moments), log_poisson_loss and batch_norm_with_global_normalization.

Rank-5 inputs (3-D convolutions and pools) go to ._nn3d_ops, imported when first needed.
rill's windowed ops run NHWC only: a channels-first data_format reaches the C op, which raises
TF's InvalidArgumentError ("Invalid data format string")."""
import collections as _collections
import sys as _sys

import numpy as _np

__all__ = ["avg_pool1d", "avg_pool2d", "avg_pool_v2", "max_pool1d", "max_pool2d", "max_pool_v2",
           "pool", "conv1d", "conv1d_transpose", "convolution", "conv_transpose",
           "conv2d_backprop_filter", "conv2d_backprop_input", "depthwise_conv2d_backprop_filter",
           "depthwise_conv2d_backprop_input", "depthwise_conv2d_native_backprop_filter",
           "depthwise_conv2d_native_backprop_input", "atrous_conv2d", "atrous_conv2d_transpose",
           "crelu", "relu_layer", "silu", "swish", "zero_fraction", "compute_average_loss",
           "scale_regularization_loss", "sufficient_statistics", "normalize_moments",
           "weighted_moments", "log_poisson_loss", "batch_norm_with_global_normalization",
           "max_pool_with_argmax", "dilation2d", "erosion2d", "all_candidate_sampler",
           "collapse_repeated"]
# top-level tf names (wired into tf by _install)
_TOP = ["conv2d_backprop_filter_v2", "conv2d_backprop_input_v2"]


def _tf():
    return _sys.modules[__package__]


def _g():
    return _tf().get_default_graph()


def _t(x, dtype=None):
    return _tf().convert_to_tensor(x, dtype=dtype)


def _nn():
    from . import nn
    return nn


def _nn3d(name):
    from . import _nn3d_ops
    return getattr(_nn3d_ops, name)


def _spatial(v, n, what, channels_last=True):
    """TF's _get_sequence: an int or 1, n or n + 2 ints -> the n + 2 list (1 on batch and
    channels)."""
    if v is None:
        v = 1
    if isinstance(v, int):
        v = [v]
    v = [int(x) for x in v]
    if len(v) == 1:
        v = v * n
    if len(v) == n:
        return [1] + v + [1] if channels_last else [1, 1] + v
    if len(v) == n + 2:
        return v
    raise ValueError(f"{what} should be of length 1, {n} or {n + 2}. Received: "
                     f"{what}={v} of length {len(v)}")


def _rank(x, what="input"):
    nd = x.shape.ndims
    if nd is None:
        raise ValueError(f"{what} must have a known rank")
    return nd


# --- pools ---

def _pool1d(type, input, ksize, strides, padding, data_format, name, scope):
    tf = _tf()
    if data_format not in (None, "NWC", "NCW", "NHWC", "NCHW"):
        raise ValueError("`data_format` must be 'NWC' or 'NCW'. Received: "
                         f"data_format={data_format}")
    df = "NHWC" if data_format in (None, "NWC", "NHWC") else "NCHW"
    with tf.name_scope(name or scope):
        x = tf.expand_dims(_t(input), 1 if df == "NHWC" else 2)
        k = [1, 1] + _spatial(ksize, 1, "ksize")[1:] if df == "NHWC" else None
        s = [1, 1] + _spatial(strides, 1, "strides")[1:] if df == "NHWC" else None
        if df != "NHWC":
            k = [1, 1, 1] + _spatial(ksize, 1, "ksize", False)[2:]
            s = [1, 1, 1] + _spatial(strides, 1, "strides", False)[2:]
        r = _nn()._pool(type, x, k, s, padding, df, None, None)
        return tf.squeeze(r, [1 if df == "NHWC" else 2])


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):
    return _pool1d("AvgPool", input, ksize, strides, padding, data_format, name, "AvgPool1D")


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):
    return _pool1d("MaxPool", input, ksize, strides, padding, data_format, name, "MaxPool1d")


def _pool2d(type, input, ksize, strides, padding, data_format, name):
    cl = data_format is None or not data_format.startswith("NC")
    return _nn()._pool(type, _t(input), _spatial(ksize, 2, "ksize", cl),
                       _spatial(strides, 2, "strides", cl), padding, data_format or "NHWC",
                       name, None)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    return _pool2d("AvgPool", input, ksize, strides, padding, data_format, name)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    return _pool2d("MaxPool", input, ksize, strides, padding, data_format, name)


def _pool_v2(kind, input, ksize, strides, padding, data_format, name):
    x = _t(input)
    n = _rank(x) - 2 if x.shape.ndims is not None else (len(ksize) - 2 if isinstance(
        ksize, (list, tuple)) else None)
    if n not in (1, 2, 3):
        raise ValueError(f"`input.shape.rank` must be 3, 4 or 5. Received: input.shape={x.shape} "
                         f"of rank {x.shape.ndims}")
    if n == 1:
        fn = avg_pool1d if kind == "avg" else max_pool1d
        return fn(x, ksize, strides, padding, data_format or "NWC", name)
    if n == 2:
        fn = avg_pool2d if kind == "avg" else max_pool2d
        return fn(x, ksize, strides, padding, data_format or "NHWC", name)
    fn = _nn3d("avg_pool3d" if kind == "avg" else "max_pool3d")
    cl = data_format is None or not data_format.startswith("NC")
    return fn(x, _spatial(ksize, 3, "ksize", cl), _spatial(strides, 3, "strides", cl), padding,
              data_format or "NDHWC", name)


def avg_pool_v2(input, ksize, strides, padding, data_format=None, name=None):
    return _pool_v2("avg", input, ksize, strides, padding, data_format, name)


def max_pool_v2(input, ksize, strides, padding, data_format=None, name=None):
    return _pool_v2("max", input, ksize, strides, padding, data_format, name)


def pool(input, window_shape, pooling_type, padding, dilation_rate=None, strides=None, name=None,
         data_format=None, dilations=None):
    """tf.nn.pool (v1 signature): MAX or AVG pooling over 1, 2 or 3 spatial dimensions."""
    if dilation_rate is not None and dilations is not None:
        raise ValueError("Cannot specify both 'dilation_rate' and 'dilations'.")
    dilation_rate = dilation_rate if dilation_rate is not None else dilations
    x = _t(input)
    window_shape = [int(w) for w in _np.atleast_1d(window_shape)]
    n = len(window_shape)
    if n < 1 or n > 3:
        raise ValueError(f"It is required that 1 <= num_spatial_dims <= 3, got {n}.")
    if x.shape.ndims is not None and x.shape.ndims != n + 2:
        raise ValueError(f"input tensor must have rank {n + 2}, got {x.shape.ndims}")
    strides = [1] * n if strides is None else [int(s) for s in _np.atleast_1d(strides)]
    rate = [1] * n if dilation_rate is None else [int(r) for r in _np.atleast_1d(dilation_rate)]
    if len(strides) != n:
        raise ValueError(f"len(strides) ({len(strides)}) must equal num_spatial_dims ({n})")
    if len(rate) != n:
        raise ValueError(f"len(dilation_rate) ({len(rate)}) must equal num_spatial_dims ({n})")
    if any(r < 1 for r in rate):
        raise ValueError("all values of dilation_rate must be positive")
    if any(s < 1 for s in strides):
        raise ValueError("all values of strides must be positive")
    if any(r > 1 for r in rate) and any(s > 1 for s in strides):
        raise ValueError("strides > window_shape not supported due to inconsistent behavior "
                         "with dilation_rate > 1")
    if any(r > 1 for r in rate):
        raise ValueError("rill's tf.nn.pool supports dilation_rate 1 only (no space_to_batch "
                         f"pooling), got dilation_rate={rate}")
    if pooling_type not in ("MAX", "AVG"):
        raise ValueError(f"Invalid pooling_type: {pooling_type}")
    if n == 3:
        fn = _nn3d("max_pool3d" if pooling_type == "MAX" else "avg_pool3d")
        cl = data_format is None or not data_format.startswith("NC")
        return fn(x, _spatial(window_shape, 3, "ksize", cl), _spatial(strides, 3, "strides", cl),
                  padding, data_format or "NDHWC", name)
    kind = "max" if pooling_type == "MAX" else "avg"
    return _pool_v2(kind, x, window_shape, strides, padding, data_format,
                    name or ("max_pool" if kind == "max" else "avg_pool"))


# --- convolutions ---

def _conv2d(x, f, strides, padding, dilations, data_format, name):
    return _nn().conv2d(x, f, strides, padding, data_format=data_format or "NHWC",
                        dilations=dilations, name=name)


def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format=None, name=None, input=None, dilations=None):
    """Conv2D over [N, 1, W, C] and a [1, KW, C, F] filter, squeezed back (TF's conv1d)."""
    tf = _tf()
    value = value if value is not None else input
    if data_format not in (None, "NWC", "NHWC", "NCW", "NCHW"):
        raise ValueError(f"`data_format` must be 'NWC' or 'NCW'. Received: "
                         f"data_format={data_format}")
    cl = data_format in (None, "NWC", "NHWC")
    with tf.name_scope(name or "conv1d"):
        x = tf.expand_dims(_t(value), 1 if cl else 2)
        f = tf.expand_dims(_t(filters, x.dtype), 0)
        st = _spatial(stride, 1, "stride", cl)
        dl = _spatial(dilations, 1, "dilations", cl)
        st = [1, 1] + st[1:] if cl else [1, 1, 1] + st[2:]
        dl = [1, 1] + dl[1:] if cl else [1, 1, 1] + dl[2:]
        r = _conv2d(x, f, st, padding, dl, "NHWC" if cl else "NCHW", None)
        return tf.squeeze(r, [1 if cl else 2])


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NWC",
                     dilations=None, name=None):
    tf = _tf()
    if data_format not in ("NWC", "NCW"):
        raise ValueError(f"`data_format` must be 'NWC' or 'NCW'. Received: "
                         f"data_format={data_format}")
    cl = data_format == "NWC"
    with tf.name_scope(name or "conv1d_transpose"):
        x = tf.expand_dims(_t(input), 1 if cl else 2)
        f = tf.expand_dims(_t(filters, x.dtype), 0)
        osh = _t(output_shape, tf.int32)
        osh = tf.concat([osh[:1], [1], osh[1:]] if cl else [osh[:2], [1], osh[2:]], 0)
        st = _spatial(strides, 1, "strides", cl)
        dl = _spatial(dilations, 1, "dilations", cl)
        st = [1, 1] + st[1:] if cl else [1, 1, 1] + st[2:]
        dl = [1, 1] + dl[1:] if cl else [1, 1, 1] + dl[2:]
        r = _nn().conv2d_transpose(x, f, osh, st, padding, data_format="NHWC" if cl else "NCHW",
                                   dilations=dl)
        return tf.squeeze(r, [1 if cl else 2])


def convolution(input, filter=None, padding=None, strides=None, dilation_rate=None, name=None,
                data_format=None, filters=None, dilations=None):
    """tf.nn.convolution (v1 signature): conv1d, conv2d or conv3d by the filter's rank."""
    filter = filter if filter is not None else filters
    if dilation_rate is not None and dilations is not None:
        raise ValueError("Cannot specify both 'dilation_rate' and 'dilations'.")
    dilation_rate = dilation_rate if dilation_rate is not None else dilations
    x = _t(input)
    f = _t(filter, x.dtype)
    nd = f.shape.ndims if f.shape.ndims is not None else x.shape.ndims
    if nd is None:
        raise ValueError("rank of input or filter must be known")
    n = nd - 2
    if n < 1 or n > 3:
        raise ValueError(f"`input` and `filter` must have rank at least 3 and at most 5. "
                         f"Received: input.shape={x.shape} with rank {x.shape.ndims}, "
                         f"filter.shape={f.shape} with rank {f.shape.ndims}")
    if x.shape.ndims is not None and x.shape.ndims != n + 2:
        raise ValueError(f"`input.shape.rank` must be {n + 2}. Received: input.shape={x.shape} "
                         f"with rank {x.shape.ndims}")
    strides = [1] * n if strides is None else [int(s) for s in _np.atleast_1d(strides)]
    rate = [1] * n if dilation_rate is None else [int(r) for r in _np.atleast_1d(dilation_rate)]
    if len(strides) != n or len(rate) != n:
        raise ValueError(f"len(strides)={len(strides)} and len(dilation_rate)={len(rate)} must "
                         f"equal the number of spatial dimensions, {n}")
    if any(r > 1 for r in rate) and any(s > 1 for s in strides):
        raise ValueError("`strides > 1` not supported in conjunction with `dilation_rate > 1`. "
                         f"Received: strides={strides} and dilation_rate={rate}")
    name = name or "convolution"
    if n == 1:
        return conv1d(x, f, strides, padding, data_format=data_format, name=name, dilations=rate)
    if n == 2:
        cl = data_format is None or not data_format.startswith("NC")
        return _conv2d(x, f, _spatial(strides, 2, "strides", cl),
                       padding, _spatial(rate, 2, "dilations", cl), data_format, name)
    cl = data_format is None or not data_format.startswith("NC")
    return _nn3d("conv3d")(x, f, _spatial(strides, 3, "strides", cl), padding,
                           data_format=data_format or "NDHWC",
                           dilations=_spatial(rate, 3, "dilations", cl), name=name)


def conv_transpose(input, filters, output_shape, strides, padding="SAME", data_format=None,
                   dilations=None, name=None):
    tf = _tf()
    osh = output_shape
    if isinstance(osh, tf.Tensor):
        n = osh.shape.as_list()[0] - 2 if osh.shape.ndims == 1 and osh.shape.as_list()[0] else None
    else:
        n = len(osh) - 2
    if n is None:
        f = _t(filters)
        n = f.shape.ndims - 2 if f.shape.ndims is not None else None
    if n not in (1, 2, 3):
        raise ValueError("`output_shape` must be of length 3, 4 or 5. Received: "
                         f"output_shape={output_shape} of length {n + 2 if n else None}.")
    name = name or "conv_transpose"
    if n == 1:
        return conv1d_transpose(input, filters, output_shape, strides, padding,
                                data_format or "NWC", dilations, name)
    if n == 2:
        return _nn().conv2d_transpose(input, filters, output_shape, strides, padding,
                                      data_format=data_format or "NHWC", name=name,
                                      dilations=dilations)
    return _nn3d("conv3d_transpose")(input, filters, output_shape, strides, padding=padding,
                                     data_format=data_format or "NDHWC", name=name,
                                     dilations=dilations)


def _explicit(explicit_paddings, padding):
    if explicit_paddings:
        raise ValueError("rill's convolutions take padding 'SAME' or 'VALID' only, not "
                         f"EXPLICIT paddings (explicit_paddings={list(explicit_paddings)})")


def _window(x, strides, padding, data_format, dilations):
    nn = _nn()
    attrs = nn._window_attrs(x, strides, padding, data_format)
    attrs["dilations"] = ("ints", nn._four(dilations if dilations is not None else 1,
                                           "dilations"))
    return attrs


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,
                           use_cudnn_on_gpu=True, data_format="NHWC", dilations=[1, 1, 1, 1],
                           name=None, explicit_paddings=[]):
    _explicit(explicit_paddings, padding)
    tf = _tf()
    x = _t(input)
    return _g()._make("Conv2DBackpropFilter", name or "Conv2DBackpropFilter",
                      (x, _t(filter_sizes, tf.int32), _t(out_backprop, x.dtype)),
                      _window(x, strides, padding, data_format, dilations)).outputs[0]


def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None, strides=None,
                          padding=None, use_cudnn_on_gpu=True, data_format="NHWC",
                          dilations=[1, 1, 1, 1], name=None, filters=None, explicit_paddings=[]):
    _explicit(explicit_paddings, padding)
    tf = _tf()
    filter = filter if filter is not None else filters
    f = _t(filter)
    return _g()._make("Conv2DBackpropInput", name or "Conv2DBackpropInput",
                      (_t(input_sizes, tf.int32), f, _t(out_backprop, f.dtype)),
                      _window(f, strides, padding, data_format, dilations)).outputs[0]


def conv2d_backprop_filter_v2(input, filter, out_backprop, strides, padding,
                              use_cudnn_on_gpu=True, explicit_paddings=[], data_format="NHWC",
                              dilations=[1, 1, 1, 1], name=None):
    """tf.conv2d_backprop_filter_v2: the filter's shape from the filter tensor itself."""
    tf = _tf()
    with tf.name_scope(name or "Conv2DBackpropFilterV2"):
        return conv2d_backprop_filter(input, tf.shape(_t(filter)), out_backprop, strides, padding,
                                      data_format=data_format, dilations=dilations,
                                      explicit_paddings=explicit_paddings)


def conv2d_backprop_input_v2(input, filter, out_backprop, strides, padding, use_cudnn_on_gpu=True,
                             explicit_paddings=[], data_format="NHWC", dilations=[1, 1, 1, 1],
                             name=None):
    """tf.conv2d_backprop_input_v2: the input's shape from the input tensor itself."""
    tf = _tf()
    with tf.name_scope(name or "Conv2DBackpropInputV2"):
        return conv2d_backprop_input(tf.shape(_t(input)), filter, out_backprop, strides, padding,
                                     data_format=data_format, dilations=dilations,
                                     explicit_paddings=explicit_paddings)


def depthwise_conv2d_native_backprop_filter(input, filter_sizes, out_backprop, strides, padding,
                                            data_format="NHWC", dilations=[1, 1, 1, 1],
                                            name=None):
    tf = _tf()
    x = _t(input)
    return _g()._make("DepthwiseConv2dNativeBackpropFilter",
                      name or "DepthwiseConv2dNativeBackpropFilter",
                      (x, _t(filter_sizes, tf.int32), _t(out_backprop, x.dtype)),
                      _window(x, strides, padding, data_format, dilations)).outputs[0]


def depthwise_conv2d_native_backprop_input(input_sizes, filter, out_backprop, strides, padding,
                                           data_format="NHWC", dilations=[1, 1, 1, 1], name=None):
    tf = _tf()
    f = _t(filter)
    return _g()._make("DepthwiseConv2dNativeBackpropInput",
                      name or "DepthwiseConv2dNativeBackpropInput",
                      (_t(input_sizes, tf.int32), f, _t(out_backprop, f.dtype)),
                      _window(f, strides, padding, data_format, dilations)).outputs[0]


depthwise_conv2d_backprop_filter = depthwise_conv2d_native_backprop_filter
depthwise_conv2d_backprop_input = depthwise_conv2d_native_backprop_input


def _check_rate(rate):
    if isinstance(rate, _tf().Tensor):
        raise TypeError("rill's atrous convolutions need the rate as a Python int")
    rate = int(rate)
    if rate < 1:
        raise ValueError(f"rate {rate} cannot be less than one")
    return rate


def atrous_conv2d(value, filters, rate, padding, name=None):
    """Conv2D with dilations [1, rate, rate, 1] (TF builds it with space_to_batch: the same
    values)."""
    rate = _check_rate(rate)
    return convolution(value, filters, padding, dilation_rate=[rate, rate], name=name)


def atrous_conv2d_transpose(value, filters, output_shape, rate, padding, name=None):
    """The transpose of atrous_conv2d: Conv2DBackpropInput with dilations [1, rate, rate, 1]."""
    tf = _tf()
    rate = _check_rate(rate)
    x = _t(value)
    f = _t(filters, x.dtype)
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be either VALID or SAME: {padding}")
    xs, fs = x.shape.as_list() if x.shape.ndims else None, f.shape.as_list() if f.shape.ndims \
        else None
    if xs and fs and xs[3] is not None and fs[3] is not None and xs[3] != fs[3]:
        raise ValueError(f"value's input channels does not match filters' input channels, "
                         f"{xs[3]} != {fs[3]}")
    osh = _t(output_shape, tf.int32)
    if osh.shape.ndims is not None and osh.shape.as_list() != [4]:
        raise ValueError(f"output_shape must have shape (4,), got {osh.shape.as_list()}")
    with tf.name_scope(name or "atrous_conv2d_transpose"):
        return _nn().conv2d_transpose(x, f, osh, [1, 1, 1, 1], padding,
                                      dilations=[1, rate, rate, 1])


# --- activations ---

def crelu(features, name=None, axis=-1):
    tf = _tf()
    with tf.name_scope(name or "CRelu"):
        x = _t(features)
        c = tf.concat([x, tf.negative(x)], axis)
        return _nn().relu(c)


def relu_layer(x, weights, biases, name=None):
    tf = _tf()
    with tf.name_scope(name or "relu_layer") as sc:
        x = _t(x)
        xw = _nn().bias_add(tf.matmul(x, _t(weights, x.dtype)), _t(biases, x.dtype))
        return _nn().relu(xw, name=sc)


def silu(features, beta=1.0):
    """features * sigmoid(beta * features)."""
    tf = _tf()
    with tf.name_scope("swish"):
        x = _t(features)
        b = _t(beta, x.dtype)
        return tf.multiply(x, tf.sigmoid(tf.multiply(b, x)))


swish = silu


def zero_fraction(value, name=None):
    """The fraction of zeros in value, a float32 scalar: 1 - count_nonzero / size."""
    tf = _tf()
    with tf.name_scope(name or "zero_fraction"):
        x = _t(value)
        size = tf.cast(tf.size(x, out_type=tf.int64), tf.float32)
        nz = tf.cast(tf.count_nonzero(x, dtype=tf.int64), tf.float32)
        return tf.subtract(1.0, tf.div(nz, size), name="fraction")


# --- losses and moments ---

def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """sum(per_example_loss * sample_weight) / global_batch_size (default: the batch size; rill
    runs one replica)."""
    tf = _tf()
    x = _t(per_example_loss)
    if x.dtype not in (tf.float16, tf.float32, tf.float64, tf.bfloat16):
        raise TypeError(f"per_example_loss must be a float tensor, got {x.dtype.name}")
    with tf.name_scope("average_loss"):
        if sample_weight is not None:
            x = tf.multiply(x, _t(sample_weight, x.dtype))
        if x.shape.ndims == 0:
            raise ValueError("Invalid value passed for `per_example_loss`. Expected a tensor "
                             "with at least rank 1. Received per_example_loss with rank 0.")
        if global_batch_size is None:
            bs = tf.cast(tf.shape(x)[0], x.dtype)
        else:
            if isinstance(global_batch_size, (int, float)) and global_batch_size <= 0:
                raise ValueError("global_batch_size must be positive. Got "
                                 f"{global_batch_size}.")
            bs = _t(global_batch_size)
            if bs.dtype != x.dtype:
                bs = tf.cast(bs, x.dtype)
        return tf.div(tf.reduce_sum(x), bs)


def scale_regularization_loss(regularization_loss):
    """The sum of regularization_loss (a tensor or a list of them), over one replica."""
    tf = _tf()
    if isinstance(regularization_loss, (list, tuple)):
        regularization_loss = tf.add_n(list(regularization_loss))
    return tf.reduce_sum(_t(regularization_loss))


def _keep(keep_dims, keepdims):
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'.")
    return bool(keepdims if keepdims is not None else keep_dims)


def _axes(axes):
    return [int(a) for a in _np.atleast_1d(axes)]


def sufficient_statistics(x, axes, shift=None, keep_dims=None, name=None, keepdims=None):
    """(count, sum(x - shift), sum((x - shift)^2), shift) over axes."""
    tf = _tf()
    keep = _keep(keep_dims, keepdims)
    axes = _axes(axes)
    with tf.name_scope(name or "sufficient_statistics"):
        x = _t(x)
        dims = x.shape.as_list() if x.shape.ndims is not None else None
        if dims is not None and all(dims[a] is not None for a in axes):
            count = tf.constant(float(_np.prod([dims[a] for a in axes])), x.dtype, name="count")
        else:
            sh = tf.cast(tf.shape(x), x.dtype)
            count = tf.reduce_prod(tf.gather(sh, axes), name="count")
        if shift is not None:
            shift = _t(shift, x.dtype)
            d = tf.subtract(x, shift)
            m_ss = tf.reduce_sum(d, axes, keepdims=keep, name="mean_ss")
            v_ss = tf.reduce_sum(tf.squared_difference(x, shift), axes, keepdims=keep,
                                 name="var_ss")
        else:
            m_ss = tf.reduce_sum(x, axes, keepdims=keep, name="mean_ss")
            v_ss = tf.reduce_sum(tf.square(x), axes, keepdims=keep, name="var_ss")
    return count, m_ss, v_ss, shift


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    tf = _tf()
    with tf.name_scope(name or "normalize"):
        mean_ss = _t(mean_ss)
        divisor = tf.reciprocal(_t(counts, mean_ss.dtype), name="divisor")
        shifted_mean = tf.multiply(mean_ss, divisor, name="shifted_mean")
        if shift is not None:
            mean = tf.add(shifted_mean, _t(shift, mean_ss.dtype), name="mean")
        else:
            mean = shifted_mean
        variance = tf.subtract(tf.multiply(_t(variance_ss, mean_ss.dtype), divisor),
                               tf.square(shifted_mean), name="variance")
    return mean, variance


def weighted_moments(x, axes, frequency_weights, name=None, keep_dims=None, keepdims=None):
    """The frequency-weighted mean and variance over axes (TF's formula)."""
    tf = _tf()
    keep = _keep(keep_dims, keepdims)
    axes = _axes(axes)
    with tf.name_scope(name or "weighted_moments"):
        x = _t(x)
        w = _t(frequency_weights, x.dtype)
        wsum = tf.reduce_sum(tf.multiply(w, x), axes, keepdims=True)
        bw = tf.add(w, tf.zeros_like(x))
        sw = tf.reduce_sum(bw, axes, keepdims=True)
        divisor = tf.reciprocal(sw)
        mean = tf.multiply(wsum, divisor)
        dist = tf.reduce_sum(tf.multiply(bw, tf.squared_difference(x, mean)), axes,
                             keepdims=True)
        var = tf.multiply(dist, divisor)
        if not keep:
            mean = tf.squeeze(mean, axes)
            var = tf.squeeze(var, axes)
    return mean, var


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """exp(log_input) - log_input * targets (+ Stirling's approximation of log(targets!) where
    targets > 1, with compute_full_loss)."""
    tf = _tf()
    with tf.name_scope(name or "log_poisson_loss"):
        li = _t(log_input)
        z = _t(targets, li.dtype)
        a, b = li.shape, z.shape
        if a.ndims is not None and b.ndims is not None and not (
                a.ndims == b.ndims and all(p is None or q is None or p == q
                                           for p, q in zip(a.as_list(), b.as_list()))):
            raise ValueError(f"log_input and targets must have the same shape ({a} vs {b})")
        result = tf.subtract(tf.exp(li), tf.multiply(li, z))
        if compute_full_loss:
            zeros = tf.zeros_like(z)
            ones = tf.ones_like(z)
            stirling = tf.add(tf.subtract(tf.multiply(z, tf.log(z)), z),
                              tf.multiply(0.5, tf.log(tf.multiply(2 * _np.pi, z))))
            cond = tf.logical_and(tf.greater_equal(z, zeros), tf.less_equal(z, ones))
            result = tf.add(result, tf.where(cond, zeros, stirling))
        return result


def batch_norm_with_global_normalization(t=None, m=None, v=None, beta=None, gamma=None,
                                         variance_epsilon=None, scale_after_normalization=None,
                                         name=None, input=None, mean=None, variance=None):
    """batch_normalization(t, m, v, beta, gamma if scale_after_normalization else None, eps)."""
    t = t if t is not None else input
    m = m if m is not None else mean
    v = v if v is not None else variance
    return _nn().batch_normalization(t, m, v, beta, gamma if scale_after_normalization else None,
                                     variance_epsilon,
                                     name=name or "BatchNormWithGlobalNormalization")


# --- C ops: MaxPoolWithArgmax (ops_pool_argmax.c), Dilation2D (ops_dilation.c) ---

MaxPoolWithArgmax = _collections.namedtuple("MaxPoolWithArgmax", ["output", "argmax"])


def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC", Targmax=None,
                         name=None, output_dtype=None, include_batch_in_index=False):
    """(output, argmax) of MaxPoolWithArgmax: argmax the flat index of each maximum
    ((y * W + x) * C + c, the batch too with include_batch_in_index)."""
    tf = _tf()
    if data_format != "NHWC":
        raise ValueError("Data formats other than 'NHWC' are not yet supported")
    if Targmax is not None and output_dtype is not None:
        raise ValueError("Cannot specify both 'output_dtype' and 'Targmax'.")
    ta = tf.as_dtype(Targmax or output_dtype or tf.int64)
    x = _t(input)
    nn = _nn()
    attrs = {"ksize": ("ints", nn._four(ksize, "ksize")),
             "strides": ("ints", nn._four(strides, "strides")),
             "padding": ("string", padding.decode() if isinstance(padding, bytes) else padding),
             "Targmax": tf._attr_type(ta),
             "include_batch_in_index": ("bool", bool(include_batch_in_index)),
             "T": tf._attr_type(x.dtype)}
    op = _g()._make("MaxPoolWithArgmax", name or "MaxPoolWithArgmax", (x,), attrs)
    return MaxPoolWithArgmax(op.outputs[0], op.outputs[1])


def _ints4(v, what):
    v = [int(a) for a in v]
    if len(v) != 4:
        raise ValueError(f"Dilation2D requires the {what} attribute to contain 4 values, but "
                         f"got: {len(v)}")
    return v


def _dilation(x, f, strides, rates, padding, name):
    tf = _tf()
    return _g()._make("Dilation2D", name or "Dilation2D", (x, _t(f, x.dtype)), {
        "strides": ("ints", _ints4(strides, "stride")), "rates": ("ints", _ints4(rates, "rates")),
        "padding": ("string", padding.decode() if isinstance(padding, bytes) else padding),
        "T": tf._attr_type(x.dtype)}).outputs[0]


def dilation2d(input, filter=None, strides=None, rates=None, padding=None, name=None,
               filters=None, dilations=None):
    """Grayscale morphological dilation: Dilation2D(input [N, H, W, C], filter [FH, FW, C])."""
    filter = filter if filter is not None else filters
    rates = rates if rates is not None else dilations
    return _dilation(_t(input), filter, strides, rates, padding, name)


def erosion2d(value, kernel, strides, rates, padding, name=None):
    """-dilation2d(-value, reverse(kernel, [0, 1])), as TF composes it."""
    tf = _tf()
    with tf.name_scope(name or "erosion2d") as sc:
        x = _t(value)
        k = tf.reverse_v2(_t(kernel, x.dtype), [0, 1])
        return tf.negative(_dilation(tf.negative(x), k, strides, rates, padding, None),
                           name=sc)


def all_candidate_sampler(true_classes, num_true, num_sampled, unique, seed=None, name=None):
    """All classes 0 .. num_sampled - 1 (int64), every expected count 1 (TF's
    AllCandidateSampler, deterministic: seed and unique do not change it)."""
    from ._embedding_ops import CandidateSampler
    tf = _tf()
    if isinstance(true_classes, (tf.Tensor, tf.Variable)):
        tc = _t(true_classes)
        if tc.dtype != tf.int64:
            raise TypeError(f"Value passed to parameter 'true_classes' has DataType "
                            f"{tc.dtype.name} not in list of allowed values: int64")
    else:
        tc = _t(_np.asarray(true_classes, _np.int64))
    if tc.shape.ndims is not None and tc.shape.ndims != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {tc.shape.ndims} for "
                         "'AllCandidateSampler' (op: 'AllCandidateSampler')")
    n = int(num_sampled)
    if n < 1:
        raise ValueError(f"num_sampled must be >= 1, got {n}")
    with tf.name_scope(name or "AllCandidateSampler"):
        sampled = tf.constant(_np.arange(n, dtype=_np.int64), name="sampled_candidates")
        true_exp = tf.ones_like(tf.cast(tc, tf.float32), name="true_expected_count")
        sampled_exp = tf.constant(_np.ones(n, _np.float32), name="sampled_expected_count")
    return CandidateSampler(sampled, true_exp, sampled_exp)


def collapse_repeated(labels, seq_length, name=None):
    """(labels with each run of repeats merged into one, the new lengths), left-aligned and
    zero-padded to the longest new length: TF's composition (masks, Where, ScatterNd)."""
    tf = _tf()
    with tf.name_scope(name or "collapse_repeated_labels"):
        labels = _t(labels)
        seq_length = _t(seq_length)
        first = tf.equal(labels[:, :1], labels[:, :1])  # all true
        label_mask = tf.concat([first, tf.not_equal(labels[:, 1:], labels[:, :-1])], axis=1)
        # positions 0 .. T - 1 (T = labels' second dimension) as an exclusive cumsum of ones
        pos = tf.expand_dims(tf.cumsum(tf.ones_like(labels[0], dtype=tf.int32), exclusive=True),
                             0)

        def seq_mask(lengths):
            return tf.less(pos, tf.expand_dims(tf.cast(lengths, tf.int32), 1))

        label_mask = tf.logical_and(label_mask, seq_mask(seq_length))
        new_len = tf.reduce_sum(tf.cast(label_mask, tf.int32), axis=1)
        new_maxlen = tf.reduce_max(new_len)
        flat_labels = tf.reshape(labels, [-1])
        flat_label_mask = tf.reshape(label_mask, [-1])
        flat_idx_mask = tf.reshape(seq_mask(new_len), [-1])
        keep = tf.reshape(tf.where(flat_idx_mask), [-1, 1])  # int64 coordinates
        vals = tf.gather(flat_labels, tf.reshape(tf.where(flat_label_mask), [-1]))
        flat = tf.scatter_nd(keep, vals, tf.cast(tf.reshape(tf.size(flat_idx_mask), [1]),
                                                 tf.int64))
        batch = tf.shape(labels)[0]
        cols = tf.reshape(tf.where(tf.less(pos[0], new_maxlen)), [-1])  # 0 .. new_maxlen - 1
        out = tf.gather(tf.reshape(flat, tf.stack([batch, -1])), cols, axis=1)
        return out, tf.cast(new_len, seq_length.dtype)


def _install(tf):
    import types
    for n in _TOP:
        setattr(tf, n, globals()[n])
    space = getattr(tf, "random", None)
    if space is None:
        space = types.SimpleNamespace()
        tf.random = space
    space.all_candidate_sampler = all_candidate_sampler  # tf.random.all_candidate_sampler
