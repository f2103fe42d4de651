"""tf.losses (TF 1.x's, tf.compat.v1.losses) composed from the C library's ops, each loss added
to the LOSSES collection (or loss_collection) as TF's.

compute_weighted_loss reduces as TF 1.x: SUM_BY_NONZERO_WEIGHTS by default (the weighted sum
over the number of elements whose weight is not 0), SUM, MEAN (over the sum of the broadcast
weights), SUM_OVER_BATCH_SIZE (over the element count) or NONE. TF's div_no_nan is total /
max(count, tiny): the count is 0 only when every weight is, and the total is then 0 too.
The ops are TF's: Abs for absolute_difference and huber_loss, SigmoidCrossEntropyWithLogits
for sigmoid_cross_entropy."""
import sys as _sys

__all__ = ["Reduction", "compute_weighted_loss", "absolute_difference", "mean_squared_error",
           "huber_loss", "log_loss", "hinge_loss", "cosine_distance", "sigmoid_cross_entropy",
           "softmax_cross_entropy", "sparse_softmax_cross_entropy", "add_loss", "get_losses",
           "get_regularization_losses", "get_regularization_loss", "get_total_loss"]


def _tf():
    return _sys.modules[__package__]


class Reduction:
    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}.")


def _abs(x):
    return _tf().abs(x)


def _safe_div(total, count):
    tf = _tf()
    return tf.truediv(total, tf.maximum(count, 1e-30))


def _num_present(losses, weights):
    tf = _tf()
    present = tf.subtract(1.0, tf.cast(tf.equal(weights, 0.0), losses.dtype))
    return tf.reduce_sum(tf.multiply(present, tf.ones_like(losses)))


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection="losses",
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    tf = _tf()
    Reduction.validate(reduction)
    with tf.name_scope(scope or "weighted_loss"):
        losses = tf.convert_to_tensor(losses)
        dt = losses.dtype
        losses = tf.cast(losses, tf.float32)
        weights = tf.cast(tf.convert_to_tensor(weights, dtype=None if isinstance(
            weights, (tf.Tensor, tf.Variable)) else tf.float32), tf.float32)
        weighted = tf.multiply(losses, weights)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            loss = tf.reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                loss = _safe_div(loss, tf.reduce_sum(tf.multiply(tf.ones_like(losses), weights)))
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _safe_div(loss, _num_present(losses, weights))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_div(loss, tf.reduce_sum(tf.ones_like(losses)))
        loss = tf.cast(loss, dt)
        add_loss(loss, loss_collection)
        return loss


def _pair(labels, predictions):
    tf = _tf()
    if labels is None:
        raise ValueError("labels must not be None.")
    if predictions is None:
        raise ValueError("predictions must not be None.")
    predictions = tf.cast(tf.convert_to_tensor(predictions), tf.float32)
    labels = tf.cast(tf.convert_to_tensor(labels), tf.float32)
    if predictions.shape.ndims is not None and labels.shape.ndims is not None:
        p, l = predictions.shape.as_list(), labels.shape.as_list()
        if len(p) == len(l) and any(a is not None and b is not None and a != b
                                    for a, b in zip(p, l)):
            raise ValueError(f"Shapes {tuple(p)} and {tuple(l)} are incompatible")
    return labels, predictions


def absolute_difference(labels, predictions, weights=1.0, scope=None, loss_collection="losses",
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    tf = _tf()
    with tf.name_scope(scope or "absolute_difference"):
        labels, predictions = _pair(labels, predictions)
        losses = _abs(tf.subtract(predictions, labels))
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def mean_squared_error(labels, predictions, weights=1.0, scope=None, loss_collection="losses",
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    tf = _tf()
    with tf.name_scope(scope or "mean_squared_error"):
        labels, predictions = _pair(labels, predictions)
        losses = tf.square(tf.subtract(predictions, labels))
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection="losses", reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    tf = _tf()
    with tf.name_scope(scope or "huber_loss"):
        labels, predictions = _pair(labels, predictions)
        abs_error = _abs(tf.subtract(predictions, labels))
        quadratic = tf.minimum(abs_error, float(delta))
        linear = tf.subtract(abs_error, quadratic)
        losses = tf.add(tf.multiply(0.5, tf.square(quadratic)), tf.multiply(float(delta), linear))
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection="losses", reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    tf = _tf()
    with tf.name_scope(scope or "log_loss"):
        labels, predictions = _pair(labels, predictions)
        losses = tf.subtract(
            tf.negative(tf.multiply(labels, tf.log(predictions + epsilon))),
            tf.multiply(tf.subtract(1.0, labels), tf.log(1.0 - predictions + epsilon)))
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection="losses",
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    tf = _tf()
    with tf.name_scope(scope or "hinge_loss"):
        labels, logits = _pair(labels, logits)
        signs = tf.subtract(tf.multiply(2.0, labels), 1.0)
        losses = tf.nn.relu(tf.subtract(1.0, tf.multiply(signs, logits)))
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection="losses", reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
                    dim=None):
    tf = _tf()
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'")
        axis = dim
    if axis is None:
        raise ValueError("You must specify 'axis'.")
    with tf.name_scope(scope or "cosine_distance_loss"):
        labels, predictions = _pair(labels, predictions)
        radial = tf.multiply(predictions, labels)
        losses = tf.subtract(1.0, tf.reduce_sum(radial, axis=[axis], keepdims=True))
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def _sigmoid_xent(labels, logits):
    """TF's sigmoid_cross_entropy_with_logits (the op)."""
    return _tf().nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection="losses",
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    tf = _tf()
    with tf.name_scope(scope or "sigmoid_cross_entropy_loss"):
        logits = tf.convert_to_tensor(logits)
        labels = tf.cast(tf.convert_to_tensor(multi_class_labels), logits.dtype)
        if label_smoothing > 0:
            labels = labels * (1.0 - label_smoothing) + 0.5 * label_smoothing
        losses = _sigmoid_xent(labels, logits)
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection="losses", reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    tf = _tf()
    with tf.name_scope(scope or "softmax_cross_entropy_loss"):
        logits = tf.convert_to_tensor(logits)
        labels = tf.cast(tf.convert_to_tensor(onehot_labels), logits.dtype)
        if label_smoothing > 0:
            n = labels.shape.as_list()[-1]
            if n is None:
                raise ValueError("rill's softmax_cross_entropy with label_smoothing needs the "
                                 "class count known")
            labels = labels * (1.0 - label_smoothing) + label_smoothing / n
        losses = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                            name="xentropy")
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection="losses",
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    tf = _tf()
    with tf.name_scope(scope or "sparse_softmax_cross_entropy_loss"):
        losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                                name="xentropy")
        return compute_weighted_loss(losses, weights, None, loss_collection, reduction)


def add_loss(loss, loss_collection="losses"):
    if loss_collection:
        _tf().add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection="losses"):
    return _tf().get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    return _tf().get_collection("regularization_losses", scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    tf = _tf()
    losses = get_regularization_losses(scope)
    if losses:
        return tf.add_n(losses, name=name)
    return tf.constant(0.0)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    tf = _tf()
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope=scope)
    return tf.add_n(losses, name=name)
