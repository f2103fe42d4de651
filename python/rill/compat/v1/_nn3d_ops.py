"""tf.nn's 3-D convolutions and pools (TF 1.x): conv3d, conv3d_backprop_filter (=
conv3d_backprop_filter_v2), conv3d_transpose, max_pool3d and avg_pool3d, over the C library's
Conv3D, Conv3DBackpropInputV2, Conv3DBackpropFilterV2, MaxPool3D and AvgPool3D
(src/graph/ops_conv3d.c; their gradients are there too). Imported into tf.nn by nn.py.

The C kernels take NDHWC data. data_format="NCDHW" (which TensorFlow's CPU kernels take for the
pools but refuse for the convolutions) is a Transpose to NDHWC, the op with its strides, ksize and dilations
reordered, and a Transpose back: the same values and gradients as NDHWC, transposed."""
import sys as _sys

import numpy as _np

__all__ = ["conv3d", "conv3d_backprop_filter", "conv3d_backprop_filter_v2", "conv3d_transpose",
           "max_pool3d", "avg_pool3d"]

_TO_NDHWC = [0, 2, 3, 4, 1]
_TO_NCDHW = [0, 4, 1, 2, 3]


def _tf():
    return _sys.modules[__package__]


def _g():
    return _tf().get_default_graph()


def _t(x, dtype=None):
    return _tf().convert_to_tensor(x, dtype=dtype)


def _format(data_format):
    if isinstance(data_format, bytes):
        data_format = data_format.decode()
    df = "NDHWC" if data_format is None else str(data_format)
    if df not in ("NDHWC", "NCDHW"):
        raise ValueError(f"Attr 'data_format' passed string '{df}' not in: \"NDHWC\", "
                         "\"NCDHW\".")
    return df


def _list5(v, what, op):
    """An attr list as the generated op wrappers take it: a list or tuple (TF's TypeError
    otherwise); its length is checked by the C shape function."""
    if not isinstance(v, (list, tuple, _np.ndarray)):
        raise TypeError(f"Expected list for '{what}' argument to '{op}' Op, not {v!r}.")
    return [int(x) for x in v]


def _sequence(v, what, df):
    """TF's _get_sequence for the pools (nn_ops.py): an int or 1, 3 or 5 values -> 5, in
    data_format's order (1s on the batch and channel dimensions)."""
    if isinstance(v, (int, _np.integer)):
        v = [int(v)] * 3
    v = [int(x) for x in v]
    if len(v) == 1:
        v = v * 3
    if len(v) == 3:
        return [1, *v, 1] if df == "NDHWC" else [1, 1, *v]
    if len(v) == 5:
        return v
    raise ValueError(f"{what} should be of length 1, 3 or 5. Received: {what}={v} of length "
                     f"{len(v)}")


def _to_ndhwc(v, df):
    """An NCDHW-ordered attr list in NDHWC order (unchanged for NDHWC)."""
    return v if df == "NDHWC" or len(v) != 5 else [v[i] for i in _TO_NDHWC]


def _padding(padding):
    if isinstance(padding, bytes):
        padding = padding.decode()
    return padding if padding is not None else ""


def _attrs(x, strides, padding, op, df, extra_name, extra):
    tf = _tf()
    a = {"strides": ("ints", _to_ndhwc(strides, df)), "padding": ("string", _padding(padding)),
         "data_format": ("string", "NDHWC"), "T": tf._attr_type(x.dtype)}
    if extra_name:
        a[extra_name] = ("ints", _to_ndhwc(extra, df))
    return a


def _in(x, df):
    return x if df == "NDHWC" else _tf().transpose(x, _TO_NDHWC)


def _out(y, df):
    return y if df == "NDHWC" else _tf().transpose(y, _TO_NCDHW)


def conv3d(input, filter=None, strides=None, padding=None, data_format="NDHWC",
           dilations=[1, 1, 1, 1, 1], name=None, filters=None):
    """Conv3D(input, filter): input [N, D, H, W, C], filter [KD, KH, KW, C, F]."""
    filter = filter if filter is not None else filters
    df = _format(data_format)
    x = _t(input)
    f = _t(filter, x.dtype)
    attrs = _attrs(x, _list5(strides, "strides", "conv3d"), padding, "Conv3D", df, "dilations",
                   _list5(dilations if dilations is not None else [1] * 5, "dilations",
                          "conv3d"))
    if df == "NDHWC":
        return _g()._make("Conv3D", name or "Conv3D", (x, f), attrs).outputs[0]
    with _tf().name_scope(name, "Conv3D"):
        y = _g()._make("Conv3D", "Conv3D", (_in(x, df), f), attrs).outputs[0]
        return _out(y, df)


def conv3d_backprop_filter_v2(input, filter_sizes, out_backprop, strides, padding,
                              data_format="NDHWC", dilations=[1, 1, 1, 1, 1], name=None):
    """Conv3DBackpropFilterV2(input, filter_sizes, out_backprop): the filter's gradient."""
    df = _format(data_format)
    x = _t(input)
    dy = _t(out_backprop, x.dtype)
    sizes = _t(filter_sizes, _tf().int32)
    attrs = _attrs(x, _list5(strides, "strides", "conv3d_backprop_filter_v2"), padding,
                   "Conv3DBackpropFilterV2", df, "dilations",
                   _list5(dilations if dilations is not None else [1] * 5, "dilations",
                          "conv3d_backprop_filter_v2"))
    if df == "NDHWC":
        return _g()._make("Conv3DBackpropFilterV2", name or "Conv3DBackpropFilterV2",
                          (x, sizes, dy), attrs).outputs[0]
    with _tf().name_scope(name, "Conv3DBackpropFilterV2"):
        return _g()._make("Conv3DBackpropFilterV2", "Conv3DBackpropFilterV2",
                          (_in(x, df), sizes, _in(dy, df)), attrs).outputs[0]


conv3d_backprop_filter = conv3d_backprop_filter_v2


def conv3d_transpose(value, filter=None, output_shape=None, strides=None, padding="SAME",
                     data_format="NDHWC", name=None, input=None, filters=None, dilations=None):
    """Conv3DBackpropInputV2(output_shape, filter, value): the gradient of conv3d. filter is
    [KD, KH, KW, output_channels, in_channels]."""
    tf = _tf()
    value = value if value is not None else input
    filter = filter if filter is not None else filters
    df = _format(data_format)
    x = _t(value)
    f = _t(filter, x.dtype)
    osh = _t(output_shape, tf.int32)
    if osh.shape.ndims is not None and osh.shape.as_list() != [5]:
        raise ValueError(f"output_shape must have shape (5,), got {osh.shape.as_list()}")
    strides = _list5(strides, "strides", "conv3d_transpose")
    dil = _list5(dilations if dilations is not None else [1] * 5, "dilations",
                 "conv3d_transpose")
    attrs = _attrs(x, strides, padding, "Conv3DBackpropInputV2", df, "dilations", dil)
    if df == "NDHWC":
        return _g()._make("Conv3DBackpropInputV2", name or "conv3d_transpose", (osh, f, x),
                          attrs).outputs[0]
    with tf.name_scope(name, "conv3d_transpose"):
        osh = tf.gather(osh, _TO_NDHWC)
        y = _g()._make("Conv3DBackpropInputV2", "conv3d_transpose", (osh, f, _in(x, df)),
                       attrs).outputs[0]
        return _out(y, df)


def _pool(op, input, ksize, strides, padding, data_format, name):
    df = _format(data_format)
    x = _t(input)
    attrs = _attrs(x, _sequence(strides, "strides", df), padding, op, df, "ksize",
                   _sequence(ksize, "ksize", df))
    if df == "NDHWC":
        return _g()._make(op, name or op, (x,), attrs).outputs[0]
    with _tf().name_scope(name, op):
        return _out(_g()._make(op, op, (_in(x, df),), attrs).outputs[0], df)


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):
    """MaxPool3D: the maximum of each ksize window (ksize, strides: an int or 1, 3 or 5)."""
    return _pool("MaxPool3D", input, ksize, strides, padding, data_format, name)


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):
    """AvgPool3D: the mean of each window's in-bounds elements (SAME's padding not counted)."""
    return _pool("AvgPool3D", input, ksize, strides, padding, data_format, name)
