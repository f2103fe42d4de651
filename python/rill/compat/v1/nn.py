"""tf.nn (TF 1.x) over the ops rill's C library has: each function makes the C op by type name
with the inputs, in order, and the attrs the C builder (src/graph/ops_nn.c, ops_conv.c,
ops_state.c) passes. The losses, normalisations and depthwise convolutions (l2_loss, lrn,
moments, fused_batch_norm, depthwise_conv2d, conv2d_transpose, ...) are in _nn_ops.py."""
import sys as _sys

from ._ops import sigmoid, tanh  # noqa: F401  (tf.nn.sigmoid, tf.nn.tanh are tf.sigmoid, tf.tanh)
from ._math_ops import elu, leaky_relu, relu6, selu, softplus, softsign  # noqa: F401,E402
from ._embedding_ops import (compute_accidental_hits, embedding_lookup, in_top_k,  # noqa: F401
                             log_uniform_candidate_sampler, nce_loss, sampled_softmax_loss,
                             top_k, uniform_candidate_sampler)

__all__ = ["relu", "sigmoid", "tanh", "softmax", "bias_add", "xw_plus_b",
           "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
           "sparse_softmax_cross_entropy_with_logits", "conv2d", "max_pool", "avg_pool",
           "dropout"]


def _tf():
    return _sys.modules[__package__]


def _g():
    return _tf().get_default_graph()


def _t(x, dtype=None):
    return _tf().convert_to_tensor(x, dtype=dtype)


def relu(features, name=None):
    x = _t(features)
    return _g()._make("Relu", name or "Relu", (x,)).outputs[0]


def _on_axis(x, axis, fn):
    """fn (an op over the last axis) over axis of x: as TF does, the axis is swapped with the
    last one around fn."""
    nd = x.shape.ndims
    if axis is None or axis == -1 or (nd is not None and axis == nd - 1):
        return fn(x)
    if nd is None:
        raise ValueError(f"axis {axis} needs the rank of {x.name}, which is not known")
    a = axis % nd if -nd <= axis < nd else None
    if a is None:
        raise _tf().errors.InvalidArgumentError(
            None, None, f"Dimension {axis} must be >= {-nd} and < {nd}")
    perm = list(range(nd))
    perm[a], perm[-1] = perm[-1], perm[a]
    tf = _tf()
    return tf.transpose(fn(tf.transpose(x, perm)), perm)


def softmax(logits, axis=None, name=None, dim=None):
    axis = axis if axis is not None else dim
    return _on_axis(_t(logits), axis,
                    lambda x: _g()._make("Softmax", name or "Softmax", (x,)).outputs[0])


def bias_add(value, bias, data_format=None, name=None):
    v = _t(value)
    b = _t(bias, v.dtype)
    if data_format in ("NCHW", "NCDHW", "NC..."):  # the bias on dimension 1: moved last and back
        tf = _tf()
        nd = v.shape.ndims
        if nd is None or nd < 2:
            raise ValueError(f"bias_add with data_format {data_format} needs a known rank >= 2")
        to = [0] + list(range(2, nd)) + [1]
        back = [0, nd - 1] + list(range(1, nd - 1))
        y = _g()._make("BiasAdd", name or "BiasAdd", (tf.transpose(v, to), b)).outputs[0]
        return tf.transpose(y, back)
    if data_format not in (None, "NHWC", "N...C", "NDHWC"):
        raise ValueError(f"Unknown data_format: {data_format}")
    return _g()._make("BiasAdd", name or "BiasAdd", (v, b)).outputs[0]


def xw_plus_b(x, weights, biases, name=None):
    """matmul(x, weights) + biases: ops MatMul and BiasAdd (the BiasAdd named xw_plus_b)."""
    return bias_add(_tf().matmul(x, weights), biases, name=name or "xw_plus_b")


def _sentinel_check(fn, _sentinel, labels, logits):
    if _sentinel is not None:
        raise ValueError(f"Only call `{fn}` with named arguments (labels=..., logits=..., ...), "
                         f"got {_sentinel!r}")
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")


def softmax_cross_entropy_with_logits_v2(_sentinel=None, labels=None, logits=None, dim=-1,
                                         name=None, axis=None):
    """The loss per example (output 0 of SoftmaxCrossEntropyWithLogits(logits, labels))."""
    _sentinel_check("softmax_cross_entropy_with_logits_v2", _sentinel, labels, logits)
    axis = axis if axis is not None else dim
    lg = _t(logits)
    lb = _t(labels)
    nd = lg.shape.ndims
    if axis != -1 and not (nd is not None and axis == nd - 1):  # TF moves the classes last
        if nd is None:
            raise ValueError(f"axis {axis} needs the rank of the logits, which is not known")
        a = axis % nd
        perm = [i for i in range(nd) if i != a] + [a]
        lg, lb = _tf().transpose(lg, perm), _tf().transpose(lb, perm)
    if lb.dtype != lg.dtype:  # TF's _v2 casts the labels to the logits' dtype
        lb = _tf().cast(lb, lg.dtype)
    nd = lg.shape.ndims
    if nd is not None and nd != 2:  # as TF: the outer dims flattened, the loss shaped back
        tf = _tf()
        dims = lg.shape.as_list()
        if nd == 0 or any(d is None for d in dims):
            raise ValueError(f"softmax_cross_entropy_with_logits over rank {nd} needs the "
                             f"logits' shape, which is {lg.shape}")
        lg, lb = tf.reshape(lg, [-1, dims[-1]]), tf.reshape(lb, [-1, dims[-1]])
        op = _g()._make("SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits",
                        (lg, lb))
        return tf.reshape(op.outputs[0], dims[:-1], name=name)
    op = _g()._make("SoftmaxCrossEntropyWithLogits", name or "SoftmaxCrossEntropyWithLogits",
                    (lg, lb))
    return op.outputs[0]


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                      name=None, axis=None):
    """TF 1.x's (deprecated) v1: as _v2 here. (TF's v1 also stops the gradient to labels; rill
    has no StopGradient op, and labels are in practice constants or placeholders.)"""
    _sentinel_check("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, dim=dim,
                                                name=name, axis=axis)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None):
    _sentinel_check("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    lg = _t(logits)
    lb = _t(labels)
    op = _g()._make("SparseSoftmaxCrossEntropyWithLogits",
                    name or "SparseSoftmaxCrossEntropyWithLogits", (lg, lb))
    return op.outputs[0]


def _four(v, what):
    """TF's ints-or-lists for strides/ksize/dilations: an int k -> [1, k, k, 1], [a, b] ->
    [1, a, b, 1], four ints as they are."""
    if v is None:
        raise ValueError(f"{what} must be given")
    if isinstance(v, int):
        return [1, v, v, 1]
    v = [int(x) for x in v]
    if len(v) == 1:
        return [1, v[0], v[0], 1]
    if len(v) == 2:
        return [1, v[0], v[1], 1]
    return v


def _window_attrs(x, strides, padding, data_format):
    tf = _tf()
    if isinstance(padding, bytes):
        padding = padding.decode()
    return {"strides": ("ints", _four(strides, "strides")),
            "padding": ("string", padding if padding is not None else ""),
            "data_format": ("string", data_format if data_format is not None else "NHWC"),
            "T": tf._attr_type(x.dtype)}


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,
           data_format="NHWC", dilations=[1, 1, 1, 1], name=None, filters=None):
    """Conv2D(input, filter) with attrs strides, padding, data_format, dilations and T."""
    if filter is None:
        filter = filters
    x = _t(input)
    f = _t(filter, x.dtype)
    attrs = _window_attrs(x, strides, padding, data_format)
    attrs["dilations"] = ("ints", _four(dilations if dilations is not None else 1, "dilations"))
    return _g()._make("Conv2D", name or "Conv2D", (x, f), attrs).outputs[0]


def _pool(type, value, ksize, strides, padding, data_format, name, input):
    x = _t(value if value is not None else input)
    attrs = _window_attrs(x, strides, padding, data_format)
    attrs["ksize"] = ("ints", _four(ksize, "ksize"))
    return _g()._make(type, name or type, (x,), attrs).outputs[0]


def max_pool(value=None, ksize=None, strides=None, padding=None, data_format="NHWC", name=None,
             input=None):
    return _pool("MaxPool", value, ksize, strides, padding, data_format, name, input)


def avg_pool(value=None, ksize=None, strides=None, padding=None, data_format="NHWC", name=None,
             input=None):
    return _pool("AvgPool", value, ksize, strides, padding, data_format, name, input)


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """TF 1.x's dropout: keeps each element with probability keep_prob (a float or a scalar
    tensor, rill's Dropout's second input) and scales it by 1 / keep_prob. rate = 1 - keep_prob
    is TF's later spelling."""
    tf = _tf()
    if keep_prob is not None and rate is not None:
        raise ValueError("Cannot specify both 'rate' and 'keep_prob'.")
    x = _t(x)
    if keep_prob is None:
        if rate is None:
            raise ValueError("One of 'keep_prob' or 'rate' must be given.")
        if isinstance(rate, (tf.Tensor, tf.Variable)):
            keep_prob = tf.subtract(1.0, _t(rate, x.dtype))
        else:
            keep_prob = 1.0 - float(rate)
    if not isinstance(keep_prob, (tf.Tensor, tf.Variable)):
        kp = float(keep_prob)
        if not 0 < kp <= 1:
            raise ValueError(f"keep_prob must be a scalar tensor or a float in the range (0, 1], "
                             f"got {kp:g}")
    kp = _t(keep_prob, x.dtype)
    if noise_shape is not None:  # TF's composition: one uniform draw per noise element, broadcast
        with tf.name_scope(name or "dropout"):
            dims = [x.shape[i] if d is None else d for i, d in enumerate(noise_shape)] \
                if not isinstance(noise_shape, tf.Tensor) else noise_shape
            u = tf.random_uniform(dims, seed=seed, dtype=x.dtype)
            rate_t = tf.subtract(_t(1.0, x.dtype), kp)
            keep = tf.cast(tf.greater_equal(u, rate_t), x.dtype)
            return tf.multiply(tf.multiply(x, tf.reciprocal(kp)), keep)
    op = _g()._make("Dropout", name or "dropout", (x, kp), {"seed": ("int", int(seed or 0))})
    return op.outputs[0]

from ._nn_ops import *  # noqa: E402,F401,F403  (l2_loss, lrn, moments, fused_batch_norm, ...)
from ._nn_breadth import *  # noqa: E402,F401,F403  (pools/convs by rank, backprops, moments helpers, ...)
from ._shape_ops import space_to_depth, depth_to_space, space_to_batch  # noqa: E402,F401
from ._nn3d_ops import *  # noqa: E402,F401,F403  (conv3d, conv3d_transpose, max_pool3d, ...)
from . import rnn_cell  # noqa: E402,F401  (tf.nn.rnn_cell)
from .rnn_cell import (static_rnn, static_bidirectional_rnn, dynamic_rnn,  # noqa: E402,F401
                       bidirectional_dynamic_rnn)
