"""tf.metrics: streaming metrics as TF 1.x builds them. Each returns (value, update_op): the
update op adds a batch into local variables (LOCAL_VARIABLES and METRIC_VARIABLES, named as
TF's: "accuracy/total:0", "accuracy/count:0", "auc/true_positives:0", ...) and returns the
metric over everything added so far; value reads the variables. tf.local_variables_initializer
resets them.

Comparisons are composed of rill's ops (a > b as 1 - [min(a, b) == a]; a nonzero test as
1 - [a == 0]; TF's div_no_nan(a, b) for b >= 0 as a / (b + [b == 0]) * (1 - [b == 0])), which
are exact for the finite values metrics see."""
from . import _local_variables as _lv

__all__ = []  # tf.metrics.<name>, not tf.<name>


def _tf():
    import rill.compat.v1 as tf
    return tf


def _f32(x):
    tf = _tf()
    x = tf.convert_to_tensor(x)
    return x if x.dtype == tf.float32 else tf.cast(x, tf.float32)


def _is(x):
    """1.0 where x is true (bool) or nonzero, else 0.0: TF's cast to bool, as float32."""
    tf = _tf()
    x = tf.convert_to_tensor(x)
    if x.dtype == tf.bool:
        return tf.cast(x, tf.float32)
    return 1.0 - tf.cast(tf.equal(x, tf.zeros_like(x)), tf.float32)


def _gt(a, b):
    """1.0 where a > b (broadcast), else 0.0."""
    tf = _tf()
    return 1.0 - tf.cast(tf.equal(tf.minimum(a, b), a), tf.float32)


def _div_no_nan(a, b, name=None):
    """a / b, 0 where b == 0 (b >= 0)."""
    tf = _tf()
    z = tf.cast(tf.equal(b, tf.zeros_like(b)), tf.float32)
    return tf.multiply(tf.truediv(a, b + z), 1.0 - z, name=name)


def _squeeze_last(x, target_rank):
    """x without a trailing dimension of 1 when its rank is target_rank + 1 (TF's
    _remove_squeezable_dimensions)."""
    tf = _tf()
    dims = x.shape.dims
    if dims is None or len(dims) != target_rank + 1 or dims[-1] != 1:
        return x
    new = [-1 if d is None else d for d in dims[:-1]]
    if new.count(-1) > 1:
        return x
    return tf.reshape(x, new)


def _align(predictions, labels):
    """predictions and labels with a squeezable trailing 1 removed from the longer, and checked
    compatible as TF checks them."""
    pr, lr = predictions.shape.ndims, labels.shape.ndims
    if pr is not None and lr is not None:
        if pr == lr + 1:
            predictions = _squeeze_last(predictions, lr)
        elif lr == pr + 1:
            labels = _squeeze_last(labels, pr)
        pd, ld = predictions.shape.dims, labels.shape.dims
        if len(pd) == len(ld) and any(a is not None and b is not None and a != b
                                      for a, b in zip(pd, ld)):
            raise ValueError(f"Shapes {predictions.shape.as_list()} and "
                             f"{labels.shape.as_list()} are incompatible")
    return predictions, labels


def _weights_like(weights, values):
    """weights (float32) broadcast to values' shape; ones when None."""
    tf = _tf()
    ones = tf.ones_like(values)
    if weights is None:
        return ones
    w = _f32(weights)
    if w.shape.ndims is not None and values.shape.ndims is not None \
            and w.shape.ndims == values.shape.ndims + 1:
        w = _squeeze_last(w, values.shape.ndims)
    return tf.multiply(w, ones)


def _assign_add(var, delta, name="AssignAdd"):
    g = _tf().get_default_graph()
    return g._make("AssignAdd", name, (var._value, delta)).outputs[0]


def _finish(value, update_op, metrics_collections, updates_collections):
    _lv.add_to_collections(metrics_collections, value)
    _lv.add_to_collections(updates_collections, update_op)
    return value, update_op


def _scope(name, default):
    return _tf().name_scope(name if name is not None else default)


# --- mean and what is made of it ---

def _mean(values, weights, name):
    """(total/count value, update op) in the current scope (TF's mean's body)."""
    tf = _tf()
    values = _f32(values)
    total = _lv._local_variable([], tf.float32, "total")
    count = _lv._local_variable([], tf.float32, "count")
    if weights is None:
        num_values = tf.reduce_sum(tf.ones_like(values))
    else:
        w = _weights_like(weights, values)
        values = tf.multiply(values, w)
        num_values = tf.reduce_sum(w)
    update_total = _assign_add(total, tf.reduce_sum(values))
    # TF orders the count after values; a control edge from a fed Placeholder is a
    # duplicate-node error in rill's runtime (reported), and orders nothing anyway
    deps = [] if values.op.type == "Placeholder" else [values]
    with tf.control_dependencies(deps):
        update_count = _assign_add(count, num_values)
    value = _div_no_nan(total._value, tf.maximum(count._value, 0.0), name="value")
    update_op = _div_no_nan(update_total, tf.maximum(update_count, 0.0), name="update_op")
    return value, update_op


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of every value added: local variables mean/total and mean/count."""
    with _scope(name, "mean"):
        v, u = _mean(values, weights, name)
    return _finish(v, u, metrics_collections, updates_collections)


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The (weighted) fraction of predictions equal to labels."""
    tf = _tf()
    with _scope(name, "accuracy"):
        labels = tf.convert_to_tensor(labels)
        predictions = tf.convert_to_tensor(predictions)
        predictions, labels = _align(predictions, labels)
        if labels.dtype != predictions.dtype:
            predictions = tf.cast(predictions, labels.dtype)
        is_correct = tf.cast(tf.equal(predictions, labels), tf.float32)
        v, u = _mean(is_correct, weights, name)
    return _finish(v, u, metrics_collections, updates_collections)


def _errors(labels, predictions, kind):
    tf = _tf()
    labels, predictions = _f32(labels), _f32(predictions)
    predictions, labels = _align(predictions, labels)
    d = tf.subtract(predictions, labels)
    if kind == "squared":
        return tf.square(d)
    return tf.maximum(d, tf.negative(d))


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    with _scope(name, "mean_squared_error"):
        v, u = _mean(_errors(labels, predictions, "squared"), weights, name)
    return _finish(v, u, metrics_collections, updates_collections)


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    with _scope(name, "mean_absolute_error"):
        v, u = _mean(_errors(labels, predictions, "absolute"), weights, name)
    return _finish(v, u, metrics_collections, updates_collections)


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    tf = _tf()
    with _scope(name, "root_mean_squared_error"):
        mse, update_mse = _mean(_errors(labels, predictions, "squared"), weights, name)
        v = tf.sqrt(mse)
        u = tf.sqrt(update_mse)
    return _finish(v, u, metrics_collections, updates_collections)


# --- counts of a condition ---

def _conditions(labels, predictions, weights):
    """(label is true, prediction is true, weights), float32, aligned."""
    tf = _tf()
    labels, predictions = tf.convert_to_tensor(labels), tf.convert_to_tensor(predictions)
    predictions, labels = _align(predictions, labels)
    lab, pred = _is(labels), _is(predictions)
    return lab, pred, _weights_like(weights, pred)


def _count(cond, w):
    """A local variable count adding sum(cond * w): (value, update op)."""
    tf = _tf()
    count = _lv._local_variable([], tf.float32, "count")
    update = _assign_add(count, tf.reduce_sum(tf.multiply(cond, w)))
    return tf.identity(count._value), update


def _count_metric(labels, predictions, weights, metrics_collections, updates_collections,
                  name, default, which):
    with _scope(name, default):
        lab, pred, w = _conditions(labels, predictions, weights)
        v, u = _count(which(lab, pred), w)
    return _finish(v, u, metrics_collections, updates_collections)


def true_positives(labels, predictions, weights=None, metrics_collections=None,
                   updates_collections=None, name=None):
    return _count_metric(labels, predictions, weights, metrics_collections,
                         updates_collections, name, "true_positives", lambda l, p: l * p)


def false_positives(labels, predictions, weights=None, metrics_collections=None,
                    updates_collections=None, name=None):
    return _count_metric(labels, predictions, weights, metrics_collections,
                         updates_collections, name, "false_positives",
                         lambda l, p: (1.0 - l) * p)


def true_negatives(labels, predictions, weights=None, metrics_collections=None,
                   updates_collections=None, name=None):
    return _count_metric(labels, predictions, weights, metrics_collections,
                         updates_collections, name, "true_negatives",
                         lambda l, p: (1.0 - l) * (1.0 - p))


def false_negatives(labels, predictions, weights=None, metrics_collections=None,
                    updates_collections=None, name=None):
    return _count_metric(labels, predictions, weights, metrics_collections,
                         updates_collections, name, "false_negatives",
                         lambda l, p: l * (1.0 - p))


def _ratio_metric(labels, predictions, weights, metrics_collections, updates_collections,
                  name, default, other_name, other):
    """tp / (tp + other) (0 when both are 0), over the variables
    <default>/true_positives/count and <default>/<other_name>/count."""
    tf = _tf()
    with _scope(name, default):
        lab, pred, w = _conditions(labels, predictions, weights)
        with tf.name_scope("true_positives"):
            tp, tp_up = _count(lab * pred, w)
        with tf.name_scope(other_name):
            o, o_up = _count(other(lab, pred), w)
        v = _div_no_nan(tp, tp + o, name="value")
        u = _div_no_nan(tp_up, tp_up + o_up, name="update_op")
    return _finish(v, u, metrics_collections, updates_collections)


def precision(labels, predictions, weights=None, metrics_collections=None,
              updates_collections=None, name=None):
    """true_positives / (true_positives + false_positives) of the boolean (nonzero)
    predictions against the labels."""
    return _ratio_metric(labels, predictions, weights, metrics_collections,
                         updates_collections, name, "precision", "false_positives",
                         lambda l, p: (1.0 - l) * p)


def recall(labels, predictions, weights=None, metrics_collections=None,
           updates_collections=None, name=None):
    """true_positives / (true_positives + false_negatives)."""
    return _ratio_metric(labels, predictions, weights, metrics_collections,
                         updates_collections, name, "recall", "false_negatives",
                         lambda l, p: l * (1.0 - p))


# --- AUC ---

_AUC_KEPSILON = 1e-7
_AUC_EPSILON = 1.0e-6


def _auc_thresholds(num_thresholds):
    if num_thresholds < 2:
        raise ValueError("num_thresholds must be > 1.")
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - _AUC_KEPSILON] + inner + [1.0 + _AUC_KEPSILON]


def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
        updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal",
        thresholds=None):
    """The area under the ROC or PR curve from counts at num_thresholds thresholds (TF's
    layout: -1e-7, i/(n-1) for i in 1..n-2, 1+1e-7), summed by summation_method
    ('trapezoidal', 'careful_interpolation', 'minoring', 'majoring')."""
    tf = _tf()
    if curve not in ("ROC", "PR"):
        raise ValueError(f"curve must be either ROC or PR, {curve} unknown")
    if summation_method not in ("trapezoidal", "careful_interpolation", "minoring",
                                "majoring"):
        raise ValueError(f"Invalid summation_method: {summation_method}")
    if thresholds is not None:
        thr = [0.0 - _AUC_KEPSILON] + [float(t) for t in thresholds] + [1.0 + _AUC_KEPSILON]
        num_thresholds = len(thr)
    else:
        thr = _auc_thresholds(num_thresholds)
    n = num_thresholds
    with _scope(name, "auc"):
        labels, predictions = tf.convert_to_tensor(labels), tf.convert_to_tensor(predictions)
        predictions, labels = _align(_f32(predictions), labels)
        lab = tf.reshape(_is(labels), [1, -1])
        pred = tf.reshape(predictions, [1, -1])
        w = tf.reshape(_weights_like(weights, predictions), [1, -1])
        t = tf.constant([[x] for x in thr], dtype=tf.float32)
        pos = _gt(pred, t)  # [n, N]
        neg = 1.0 - pos
        made = {}
        for key, cond in (("true_positives", lab * pos), ("false_negatives", lab * neg),
                          ("true_negatives", (1.0 - lab) * neg),
                          ("false_positives", (1.0 - lab) * pos)):
            var = _lv._local_variable([n], tf.float32, key)
            made[key] = (var._value,
                         _assign_add(var, tf.reduce_sum(tf.multiply(cond, w), axis=1)))

        def compute(tp, fn, tn, fp, out_name):
            if curve == "PR" and summation_method == "careful_interpolation":
                return _interpolate_pr_auc(tp, fp, fn, n, out_name)
            rec = tf.truediv(tp + _AUC_EPSILON, tp + fn + _AUC_EPSILON)
            if curve == "ROC":
                x, y = tf.truediv(fp, fp + tn + _AUC_EPSILON), rec
            else:
                x, y = rec, tf.truediv(tp + _AUC_EPSILON, tp + fp + _AUC_EPSILON)
            dx = x[:n - 1] - x[1:]
            if summation_method == "minoring":
                h = tf.minimum(y[:n - 1], y[1:])
            elif summation_method == "majoring":
                h = tf.maximum(y[:n - 1], y[1:])
            else:
                h = (y[:n - 1] + y[1:]) / 2.0
            return tf.reduce_sum(tf.multiply(dx, h), name=out_name)

        keys = ("true_positives", "false_negatives", "true_negatives", "false_positives")
        value = compute(*[made[k][0] for k in keys], "value")
        update_op = compute(*[made[k][1] for k in keys], "update_op")
    return _finish(value, update_op, metrics_collections, updates_collections)


def _interpolate_pr_auc(tp, fp, fn, n, out_name):
    """TF's careful interpolation of the PR curve (Davis & Goadrich 2006) between thresholds."""
    tf = _tf()
    with tf.name_scope("interpolate_pr_auc"):
        dtp = tp[:n - 1] - tp[1:]
        p = tp + fp
        prec_slope = _div_no_nan(dtp, tf.maximum(p[:n - 1] - p[1:], 0.0))
        intercept = tp[1:] - tf.multiply(prec_slope, p[1:])
        both = _gt(p[:n - 1], 0.0) * _gt(p[1:], 0.0)
        ratio = _div_no_nan(p[:n - 1], tf.maximum(p[1:], 0.0))
        safe_p_ratio = both * ratio + (1.0 - both)
        return tf.reduce_sum(_div_no_nan(prec_slope * (dtp + intercept * tf.log(safe_p_ratio)),
                                         tf.maximum(tp[1:] + fn[1:], 0.0)), name=out_name)
