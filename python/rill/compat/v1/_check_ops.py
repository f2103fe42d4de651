"""TF 1.x's checks and logging (check_ops, logging_ops, numerics): tf.Assert, tf.Print, tf.print,
tf.check_numerics, tf.ensure_shape and the tf.assert_* family, over the C ops of
src/graph/ops_check.c.

As in TF's graph mode, a binary assertion whose inputs both fold to constants (get_static_value)
is decided when it is built: a failed one raises errors.InvalidArgumentError there; a rank or
dtype check that the static shape decides raises ValueError / TypeError or returns a no-op.
Everything else becomes an Assert op that fails the step with "assertion failed: [...]"."""
import collections as _collections
import contextlib as _contextlib
import logging as _pylogging
import os as _os
import pprint as _pprint
import random as _random
import sys as _sys

import numpy as _np

__all__ = ["Assert", "Print", "check_numerics", "verify_tensor_all_finite",
           "add_check_numerics_ops", "ensure_shape", "assert_equal", "assert_none_equal",
           "assert_less", "assert_less_equal", "assert_greater", "assert_greater_equal",
           "assert_near", "assert_negative", "assert_positive", "assert_non_negative",
           "assert_non_positive", "assert_integer", "assert_type", "assert_rank",
           "assert_rank_at_least", "assert_rank_in", "assert_scalar", "assert_same_float_dtype",
           "assert_proper_iterable", "is_numeric_tensor", "is_non_decreasing",
           "is_strictly_increasing"]


def _tf():
    return _sys.modules[__package__]


def _g():
    return _tf().get_default_graph()


def _t(x, dtype=None, name=None):
    return _tf().convert_to_tensor(x, dtype=dtype, name=name)


@_contextlib.contextmanager
def _scope(name, default):
    with _tf().name_scope(name if name else default) as s:
        yield s


# --- the ops ---

def _data_tensor(x, i):
    tf = _tf()
    if isinstance(x, (tf.Tensor, tf.Variable)):
        return _t(x)
    return _t(x, name=f"data_{i}")


def Assert(condition, data, summarize=None, name=None):
    """tf.Assert: an op that fails the step (InvalidArgumentError "assertion failed: [d0] [d1]
    ...") when condition is false, summarizing each data tensor to `summarize` entries (3)."""
    with _scope(name, "Assert"):
        condition = _t(condition, name="Condition")
        xs = [_data_tensor(x, i) for i, x in enumerate(data)]
        return _g()._make("Assert", "Assert", [condition] + xs,
                          {"summarize": ("int", 3 if summarize is None else int(summarize))})


def Print(input_, data, message=None, first_n=None, summarize=None, name=None):
    """tf.Print (deprecated in TF for tf.print): input_, and on each of its first first_n runs
    (all when None or negative) message and the data list written to stderr."""
    x = _t(input_)
    xs = [_data_tensor(d, i) for i, d in enumerate(data)]
    attrs = {"message": ("string", message or ""),
             "first_n": ("int", -1 if first_n is None else int(first_n)),
             "summarize": ("int", 3 if summarize is None else int(summarize))}
    return _g()._make("Print", name or "Print", [x] + xs, attrs).outputs[0]


def _flatten(x):
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _flatten(x[k])]
    if isinstance(x, (list, tuple)):
        return [v for e in x for v in _flatten(e)]
    return [x]


def _pack(structure, flat):
    it = iter(flat)

    def go(x):
        if isinstance(x, dict):
            vals = {k: go(x[k]) for k in sorted(x)}
            return type(x)((k, vals[k]) for k in x)
        if isinstance(x, (list, tuple)):
            vals = [go(e) for e in x]
            if hasattr(x, "_fields"):
                return type(x)(*vals)
            return type(x)(vals)
        return next(it)
    return go(structure)


def _is_tf(x):
    tf = _tf()
    return isinstance(x, (tf.Tensor, tf.Variable))


def _output_stream_name(output_stream):
    if isinstance(output_stream, str) and output_stream.startswith("file://"):
        return output_stream
    from . import logging as tf_logging
    table = [(_sys.stdout, "stdout"), (_sys.stderr, "stderr"),
             (tf_logging.INFO, "log(info)"), (tf_logging.info, "log(info)"),
             (tf_logging.WARN, "log(warning)"), (tf_logging.warning, "log(warning)"),
             (tf_logging.warn, "log(warning)"), (tf_logging.ERROR, "log(error)"),
             (tf_logging.error, "log(error)"), (_pylogging.info, "log(info)"),
             (_pylogging.warning, "log(warning)"), (_pylogging.warn, "log(warning)"),
             (_pylogging.error, "log(error)")]
    for k, v in table:
        if output_stream is k:
            return v
    for k, v in ((_pylogging.INFO, "log(info)"), (_pylogging.WARNING, "log(warning)"),
                 (_pylogging.ERROR, "log(error)")):
        if isinstance(output_stream, int) and output_stream == k:
            return v
    raise ValueError("Unsupported output stream, logging level, or file." + str(output_stream) +
                     ". Supported streams are sys.stdout, sys.stderr, tf.logging.info, "
                     "tf.logging.warning, tf.logging.error. File needs to be in the form of "
                     "'file://<filepath>'.")


def print(*inputs, **kwargs):  # noqa: A001  (tf.print)
    """tf.print: a PrintV2 op that writes the inputs (tensors summarized as numpy does, to
    `summarize` entries at each end of every dimension, Python values as pprint does), joined by
    sep and followed by end, to output_stream (sys.stderr; sys.stdout, a tf.logging level or
    "file://<path>")."""
    output_stream = kwargs.pop("output_stream", _sys.stderr)
    name = kwargs.pop("name", None)
    summarize = kwargs.pop("summarize", 3)
    sep = kwargs.pop("sep", " ")
    end = kwargs.pop("end", _os.linesep)
    if kwargs:
        raise ValueError("Unrecognized keyword arguments for tf.print: %s" % kwargs)
    stream = _output_stream_name(output_stream)
    tf = _tf()
    if (len(inputs) == 1 and _is_tf(inputs[0]) and inputs[0].shape.ndims == 0
            and inputs[0].dtype == tf.string):
        formatted = _t(inputs[0])
    else:
        ordered = [_collections.OrderedDict(sorted(x.items()))
                   if isinstance(x, _collections.OrderedDict) else x for x in inputs]
        free = [_pack(x, ["" if _is_tf(v) else v for v in _flatten(x)]) for x in ordered]
        free_template = " ".join(_pprint.pformat(x) for x in free)
        placeholder = "{}"
        rng = _random.Random(5)
        while placeholder in free_template:
            placeholder = placeholder + str(rng.randint(0, 9))
        tensors, templates = [], []
        for x in inputs:
            phs = []
            for v in _flatten(x):
                if _is_tf(v):
                    tensors.append(_t(v))
                    phs.append(placeholder)
                else:
                    phs.append(v)
            templates.append(x if isinstance(x, str) else _pprint.pformat(_pack(x, phs)))
        template = sep.join(templates).replace("'" + placeholder + "'", placeholder)
        formatted = _g()._make("StringFormat", (name + "_format") if name else "StringFormat",
                               tensors, {"template": ("string", template),
                                         "placeholder": ("string", placeholder),
                                         "summarize": ("int", int(summarize))}).outputs[0]
    return _g()._make("PrintV2", name or "PrintV2", (formatted,),
                      {"output_stream": ("string", stream), "end": ("string", end)})


def check_numerics(tensor, message, name=None):
    """tf.check_numerics: tensor, failing the step with "<message> : Tensor had NaN values" (Inf,
    Inf and NaN) when it has any."""
    return _g()._make("CheckNumerics", name or "CheckNumerics", (_t(tensor),),
                      {"message": ("string", message)}).outputs[0]


def _with_dependencies(deps, x, name=None):
    tf = _tf()
    with _scope(name, "control_dependency"):
        with tf.control_dependencies(deps):
            return tf.identity(x, name="control_dependency" if name is None else name)


def verify_tensor_all_finite(t=None, msg=None, name=None, x=None, message=None):
    """tf.verify_tensor_all_finite: t, once check_numerics(t, msg) passed."""
    x = t if x is None else x
    message = msg if message is None else message
    with _scope(name, "VerifyFinite"):
        x = _t(x, name="x")
        check = check_numerics(x, message=message)
        tf = _tf()
        with tf.control_dependencies([check]):
            return tf.identity(x, name="control_dependency")


def add_check_numerics_ops():
    """tf.add_check_numerics_ops: a CheckNumerics on every half/float/double output in the
    graph (each after the one before), grouped into one op."""
    tf = _tf()
    check = []
    for op in _g().get_operations():
        for out in op.outputs:
            if out.dtype in (tf.float16, tf.float32, tf.float64):
                message = op.name + ":" + str(out.value_index)
                with tf.control_dependencies(check):
                    check = [check_numerics(out, message=message)]
    return tf.group(*check)


def ensure_shape(x, shape, name=None):
    """tf.ensure_shape: x, whose shape must be compatible with shape (a ValueError now where the
    static shape already disagrees, an InvalidArgumentError at run time otherwise)."""
    tf = _tf()
    if not isinstance(shape, tf.TensorShape):
        shape = tf.TensorShape(shape)
    dims = None if shape.ndims is None else [None if d is None else int(d) for d in shape._dims]
    try:
        return _g()._make("EnsureShape", name or "EnsureShape", (_t(x),),
                          {"shape": ("shape", dims)}).outputs[0]
    except tf.errors.InvalidArgumentError as e:
        raise ValueError(e.message) from None


# --- tf.assert_*: TF's check_ops, graph mode ---

def _message_prefix(message):
    return "%s.  " % message if message else ""


def _static(x):
    from ._graph_utils import get_static_value
    return get_static_value(x)


def _assert_static(condition, data):
    if not condition:
        tf = _tf()
        strs = []
        for x in data:
            if not isinstance(x, tf.Tensor):
                strs.append(str(x))
                continue
            v = _static(x)
            strs.append(str(v) if v is not None else str(x))
        raise tf.errors.InvalidArgumentError(message="\n".join(strs))


def _binary_assert(sym, opname, op_func, static_func, x, y, data, summarize, message, name):
    tf = _tf()
    with _scope(name, opname):
        x = _t(x, name="x")
        y = _t(y, name="y")
        if data is None:
            data = ["Condition x %s y did not hold element-wise:" % sym,
                    "x (%s) = " % x.name, x, "y (%s) = " % y.name, y]
        if message is not None:
            data = [message] + list(data)
        condition = tf.reduce_all(op_func(x, y))
        xs, ys = _static(x), _static(y)
        if xs is not None and ys is not None:
            _assert_static(_np.all(static_func(xs, ys)), data)
        return Assert(condition, data, summarize=summarize)


def assert_equal(x, y, data=None, summarize=None, message=None, name=None):
    if x is y:
        with _scope(name, "assert_equal"):
            return _tf().no_op()
    return _binary_assert("==", "assert_equal", _tf().equal, _np.equal, x, y, data, summarize,
                          message, name)


def assert_none_equal(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert("!=", "assert_none_equal", _tf().not_equal, _np.not_equal, x, y, data,
                          summarize, message, name)


def assert_less(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert("<", "assert_less", _tf().less, _np.less, x, y, data, summarize,
                          message, name)


def assert_less_equal(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert("<=", "assert_less_equal", _tf().less_equal, _np.less_equal, x, y,
                          data, summarize, message, name)


def assert_greater(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert(">", "assert_greater", _tf().greater, _np.greater, x, y, data,
                          summarize, message, name)


def assert_greater_equal(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert(">=", "assert_greater_equal", _tf().greater_equal, _np.greater_equal,
                          x, y, data, summarize, message, name)


def _unary_sign(opname, sym, compare, x, data, summarize, message, name):
    message = _message_prefix(message)
    with _scope(name, opname):
        x = _t(x, name="x")
        if data is None:
            data = [message, "Condition x %s 0 did not hold element-wise:" % sym,
                    "x (%s) = " % x.name, x]
        zero = _t(0, dtype=x.dtype)
        return compare(x, zero, data=data, summarize=summarize)


def assert_negative(x, data=None, summarize=None, message=None, name=None):
    return _unary_sign("assert_negative", "<", assert_less, x, data, summarize, message, name)


def assert_positive(x, data=None, summarize=None, message=None, name=None):
    message = _message_prefix(message)
    with _scope(name, "assert_positive"):
        x = _t(x, name="x")
        if data is None:
            data = [message, "Condition x > 0 did not hold element-wise:",
                    "x (%s) = " % x.name, x]
        zero = _t(0, dtype=x.dtype)
        return assert_less(zero, x, data=data, summarize=summarize)


def assert_non_negative(x, data=None, summarize=None, message=None, name=None):
    message = _message_prefix(message)
    with _scope(name, "assert_non_negative"):
        x = _t(x, name="x")
        if data is None:
            data = [message, "Condition x >= 0 did not hold element-wise:",
                    "x (%s) = " % x.name, x]
        zero = _t(0, dtype=x.dtype)
        return assert_less_equal(zero, x, data=data, summarize=summarize)


def assert_non_positive(x, data=None, summarize=None, message=None, name=None):
    return _unary_sign("assert_non_positive", "<=", assert_less_equal, x, data, summarize,
                       message, name)


def assert_near(x, y, rtol=None, atol=None, data=None, summarize=None, message=None, name=None):
    tf = _tf()
    message = _message_prefix(message)
    with _scope(name, "assert_near"):
        x = _t(x, name="x")
        y = _t(y, name="y", dtype=x.dtype)
        eps = _np.finfo(x.dtype.as_numpy_dtype).eps
        rtol = 10 * eps if rtol is None else rtol
        atol = 10 * eps if atol is None else atol
        rtol = _t(rtol, name="rtol", dtype=x.dtype)
        atol = _t(atol, name="atol", dtype=x.dtype)
        if data is None:
            data = [message,
                    "x and y not equal to tolerance rtol = %s, atol = %s" % (
                        _tensor_str(rtol), _tensor_str(atol)),
                    "x (%s) = " % x.name, x, "y (%s) = " % y.name, y]
        tol = atol + rtol * tf.abs(y)
        diff = tf.abs(x - y)
        condition = tf.reduce_all(tf.less(diff, tol))
        return Assert(condition, data, summarize=summarize)


def _tensor_str(t):
    # str() of a TF graph tensor, as TF's messages embed it
    return 'Tensor("%s", shape=%s, dtype=%s)' % (t.name, t.shape, t.dtype.name)


def assert_integer(x, message=None, name=None):
    with _scope(name, "assert_integer"):
        x = _t(x, name="x")
        if not x.dtype.is_integer:
            raise TypeError('%sExpected "x" to be integer type.  Found: %s of dtype %s' % (
                _message_prefix(message), x.name, x.dtype))
        return _tf().no_op("statically_determined_was_integer")


def assert_type(tensor, tf_type, message=None, name=None):
    tf = _tf()
    tf_type = tf.as_dtype(tf_type)
    with _scope(name, "assert_type"):
        tensor = _t(tensor, name="tensor")
        if tensor.dtype != tf_type:
            raise TypeError(f"{_message_prefix(message)}{getattr(tensor, 'name', 'tensor')}"
                            f" must be of type {tf_type!r}; got {tensor.dtype!r}")
        return tf.no_op("statically_determined_correct_type")


def _rank_check(x, ranks, static_ok, dynamic, data, summarize):
    tf = _tf()
    for r in ranks:
        assert_type(r, tf.int32)
    statics = [_static(r) for r in ranks]
    if not any(s is None for s in statics):
        for s in statics:
            if _np.ndim(s) != 0:
                raise ValueError("Rank must be a scalar.")
        xr = x.shape.ndims
        if xr is not None:
            if not static_ok(xr, [int(s) for s in statics]):
                raise ValueError("Static rank condition failed", xr,
                                 statics[0] if len(statics) == 1 else tuple(statics))
            return tf.no_op(name="static_checks_determined_all_ok")
    condition = dynamic(tf.rank(x), ranks)
    for r, s in zip(ranks, statics):
        if s is None:
            check = assert_rank(r, 0, data=["Rank must be a scalar. Received rank: ", r])
            condition = _with_dependencies([check], condition)
    return Assert(condition, data, summarize=summarize)


def _assert_rank_kind(kind, opname, x, ranks, data, summarize, message, name, static_ok,
                      dynamic, what):
    tf = _tf()
    with _scope(name, opname):
        x = _t(x, name="x")
        ranks = [_t(r, name="rank") for r in ranks]
        message = _message_prefix(message)
        if data is None:
            data = [message, "Tensor %s must have rank%s" % (x.name, what)] + list(ranks) + [
                "Received shape: ", tf.shape(x)]
        try:
            return _rank_check(x, ranks, static_ok, dynamic, data, summarize)
        except ValueError as e:
            if e.args[0] == "Static rank condition failed":
                given = e.args[2]
                given = "%d" % given if kind != "in" else str(given)
                raise ValueError("%sTensor %s must have rank%s %s.  Received rank %d, shape %s"
                                 % (message, x.name, what, given, e.args[1], x.shape)) from None
            raise


def assert_rank(x, rank, data=None, summarize=None, message=None, name=None):
    tf = _tf()
    return _assert_rank_kind("eq", "assert_rank", x, [rank], data, summarize, message, name,
                             lambda a, g: a == g[0], lambda r, gs: tf.equal(r, gs[0]), "")


def assert_rank_at_least(x, rank, data=None, summarize=None, message=None, name=None):
    tf = _tf()
    return _assert_rank_kind("ge", "assert_rank_at_least", x, [rank], data, summarize, message,
                             name, lambda a, g: a >= g[0],
                             lambda r, gs: tf.greater_equal(r, gs[0]), " at least")


def assert_rank_in(x, ranks, data=None, summarize=None, message=None, name=None):
    tf = _tf()

    def dynamic(r, gs):
        if not gs:
            return _t(False)
        res = tf.equal(gs[0], r)
        for g in gs[1:]:
            res = tf.logical_or(res, tf.equal(g, r))
        return res
    return _assert_rank_kind("in", "assert_rank_in", x, list(ranks), data, summarize, message,
                             name, lambda a, g: a in g, dynamic, " in")


def assert_scalar(tensor, name=None, message=None):
    with _scope(name, "assert_scalar"):
        tensor = _t(tensor)
        message = _message_prefix(message)
        if tensor.shape.ndims != 0:
            raise ValueError("%sExpected scalar shape for %s, saw shape: %s."
                             % (message, tensor.name, tensor.shape))
        return tensor


def assert_same_float_dtype(tensors=None, dtype=None):
    tf = _tf()
    if tensors:
        expected = dtype
        first = None
        for item in tensors:
            if item is None:
                continue
            t = item.dtype.base_dtype
            if not expected:
                expected = t
                first = item.name if hasattr(item, "name") else str(item)
            elif expected != t:
                raise ValueError("%s, type=%s, must be of the same type (%s)%s." % (
                    item.name if hasattr(item, "name") else str(item), t, expected,
                    (" as %s" % first) if first and dtype is None else ""))
        dtype = expected
    if not dtype:
        dtype = tf.float32
    elif not tf.as_dtype(dtype).is_floating:
        raise ValueError("Expected floating point type, got %s." % dtype)
    return dtype


def assert_proper_iterable(values):
    tf = _tf()
    if isinstance(values, (tf.Tensor, _np.ndarray, bytes, str)):
        raise TypeError('Expected argument "values" to be a "proper" iterable.  Found: %s'
                        % type(values))
    if not hasattr(values, "__iter__"):
        raise TypeError('Expected argument "values" to be iterable.  Found: %s' % type(values))


def is_numeric_tensor(tensor):
    tf = _tf()
    numeric = {tf.float16, tf.float32, tf.float64, tf.bfloat16, tf.int8, tf.int16, tf.int32,
               tf.int64, tf.uint8, tf.uint16}
    return isinstance(tensor, tf.Tensor) and tensor.dtype in numeric



def _monotonic_diff(x):
    tf = _tf()
    x = tf.reshape(x, [-1])
    if not is_numeric_tensor(x):
        raise TypeError("Expected x to be numeric, instead found: %s" % x)
    # x[1:] - x[:-1]: empty when x has fewer than 2 elements (TF: a cond to the same end)
    return x[1:] - x[:-1]


def is_non_decreasing(x, name=None):
    """tf.is_non_decreasing: a bool scalar, whether x (flattened) never decreases."""
    tf = _tf()
    with _scope(name, "is_non_decreasing"):
        diff = _monotonic_diff(x)
        return tf.reduce_all(tf.less_equal(_t(0, dtype=diff.dtype), diff))


def is_strictly_increasing(x, name=None):
    """tf.is_strictly_increasing: a bool scalar, whether x (flattened) always increases."""
    tf = _tf()
    with _scope(name, "is_strictly_increasing"):
        diff = _monotonic_diff(x)
        return tf.reduce_all(tf.less(_t(0, dtype=diff.dtype), diff))
