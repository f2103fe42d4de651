"""TF 1.x's element-wise math functions over the ops of rill's src/graph/ops_elementwise.c
(tf.pow, tf.abs, tf.floordiv, tf.less, tf.logical_and, tf.where, tf.nn.elu, ...), the tf.math
namespace, and what the Tensor operators (**, %, //, <, &, ~, abs()) call.

Each function makes the C op by type name (shapes, dtypes and error texts are the C library's)
under TF's default op name. Python numbers next to a tensor take the tensor's dtype, as TF's
operators convert them."""
import sys as _sys
import types as _types

from ._ops import _binary, _g, _out, _t, _tf

_UNARY = {
    # python name: (op type, default name)
    "abs": ("Abs", "Abs"), "sign": ("Sign", "Sign"), "rsqrt": ("Rsqrt", "Rsqrt"),
    "reciprocal": ("Reciprocal", "Reciprocal"), "round": ("Round", "Round"),
    "rint": ("Rint", "Rint"), "floor": ("Floor", "Floor"), "ceil": ("Ceil", "Ceil"),
    "log1p": ("Log1p", "Log1p"), "expm1": ("Expm1", "Expm1"), "erf": ("Erf", "Erf"),
    "erfc": ("Erfc", "Erfc"), "sin": ("Sin", "Sin"), "cos": ("Cos", "Cos"), "tan": ("Tan", "Tan"),
    "asin": ("Asin", "Asin"), "acos": ("Acos", "Acos"), "atan": ("Atan", "Atan"),
    "sinh": ("Sinh", "Sinh"), "cosh": ("Cosh", "Cosh"), "asinh": ("Asinh", "Asinh"),
    "acosh": ("Acosh", "Acosh"), "atanh": ("Atanh", "Atanh"), "lgamma": ("Lgamma", "Lgamma"),
    "digamma": ("Digamma", "Digamma"), "is_nan": ("IsNan", "IsNan"),
    "is_inf": ("IsInf", "IsInf"), "is_finite": ("IsFinite", "IsFinite"),
    "logical_not": ("LogicalNot", "LogicalNot"), "softplus": ("Softplus", "Softplus"),
    "softsign": ("Softsign", "Softsign"), "elu": ("Elu", "Elu"), "selu": ("Selu", "Selu"),
    "relu6": ("Relu6", "Relu6"),
}

_BINARY = {
    "pow": ("Pow", "Pow"), "floordiv": ("FloorDiv", "floordiv"),
    "floor_div": ("FloorDiv", "FloorDiv"), "floormod": ("FloorMod", "FloorMod"),
    "mod": ("FloorMod", "FloorMod"), "truncatediv": ("TruncateDiv", "TruncateDiv"),
    "truncatemod": ("TruncateMod", "TruncateMod"), "realdiv": ("RealDiv", "RealDiv"),
    "squared_difference": ("SquaredDifference", "SquaredDifference"),
    "atan2": ("Atan2", "Atan2"), "xdivy": ("Xdivy", "Xdivy"), "xlogy": ("Xlogy", "Xlogy"),
    "less": ("Less", "Less"), "less_equal": ("LessEqual", "LessEqual"),
    "greater": ("Greater", "Greater"), "greater_equal": ("GreaterEqual", "GreaterEqual"),
    "not_equal": ("NotEqual", "NotEqual"), "logical_and": ("LogicalAnd", "LogicalAnd"),
    "logical_or": ("LogicalOr", "LogicalOr"), "polygamma": ("Polygamma", "Polygamma"),
}


def _make_unary(op, default):
    def f(x, name=None):
        return _out(_g()._make(op, name or default, (_t(x),)))
    return f


def _make_binary(op, default):
    def f(x, y, name=None):
        return _binary(op, default, x, y, name)
    return f


_mod = _sys.modules[__name__]
for _n, (_op, _d) in _UNARY.items():
    _f = _make_unary(_op, _d)
    _f.__name__ = _f.__qualname__ = _n
    _f.__doc__ = f"tf.{_n}: the {_op} op, element-wise."
    setattr(_mod, _n, _f)
for _n, (_op, _d) in _BINARY.items():
    _f = _make_binary(_op, _d)
    _f.__name__ = _f.__qualname__ = _n
    _f.__doc__ = f"tf.{_n}(x, y): the {_op} op, element-wise with numpy broadcasting."
    setattr(_mod, _n, _f)
del _f, _n, _op, _d

# TF's argument names for the ones that do not take (x, y)
_atan2 = atan2  # noqa: F821


def atan2(y, x, name=None):  # noqa: F811
    return _atan2(y, x, name)


_polygamma = polygamma  # noqa: F821


def polygamma(a, x, name=None):  # noqa: F811
    return _polygamma(a, x, name)


def _features_fn(op):
    def f(features, name=None):
        return _out(_g()._make(op, name or op, (_t(features),)))
    f.__name__ = f.__qualname__ = _UNARY_NN[op]
    f.__doc__ = f"tf.nn.{_UNARY_NN[op]}(features): the {op} op."
    return f


_UNARY_NN = {"Elu": "elu", "Selu": "selu", "Relu6": "relu6", "Softplus": "softplus",
             "Softsign": "softsign"}
elu, selu, relu6, softplus, softsign = (_features_fn(o) for o in _UNARY_NN)


def leaky_relu(features, alpha=0.2, name=None):
    x = _t(features)
    return _out(_g()._make("LeakyRelu", name or "LeakyRelu", (x,),
                           {"alpha": ("float", float(alpha))}))


def logical_xor(x, y, name="LogicalXor"):
    """(x | y) & ~(x & y), as TF composes it."""
    a = logical_or(x, y)  # noqa: F821
    b = logical_not(logical_and(x, y))  # noqa: F821
    return logical_and(a, b, name=name)  # noqa: F821


def _select(type, condition, x, y, name):
    tf = _tf()
    c = _t(condition)
    if isinstance(x, tf.Variable):
        x = x.value()
    if isinstance(y, tf.Variable):
        y = y.value()
    if isinstance(x, tf.Tensor) and not isinstance(y, tf.Tensor):
        y = _t(y, x.dtype)
    elif isinstance(y, tf.Tensor) and not isinstance(x, tf.Tensor):
        x = _t(x, y.dtype)
    else:
        x, y = _t(x), _t(y)
    return _out(_g()._make(type, name or type, (c, x, y)))


def where(condition, x=None, y=None, name=None):
    """TF 1.x tf.where: Select(condition, x, y) (condition the same shape as x, or a vector as
    long as x's first dimension); with neither x nor y, the coordinates of the true elements
    (the Where op)."""
    if x is None and y is None:
        return _out(_g()._make("Where", name or "Where", (_t(condition),)))
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return _select("Select", condition, x, y, name)


def where_v2(condition, x=None, y=None, name=None):
    """tf.where_v2: SelectV2, which broadcasts condition, x and y together."""
    if x is None and y is None:
        return _out(_g()._make("Where", name or "Where", (_t(condition),)))
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return _select("SelectV2", condition, x, y, name)


def truediv(x, y, name=None):
    """x / y as TF's `/`: floats divide (RealDiv, rill's Div); int8, int16, uint8 and uint16 are
    cast to float32 first, int32 and int64 to float64."""
    tf = _tf()
    if isinstance(x, tf.Variable):
        x = x.value()
    if isinstance(y, tf.Variable):
        y = y.value()
    if isinstance(x, tf.Tensor) and not isinstance(y, tf.Tensor):
        y = _t(y, x.dtype)
    elif isinstance(y, tf.Tensor) and not isinstance(x, tf.Tensor):
        x = _t(x, y.dtype)
    else:
        x, y = _t(x), _t(y)
    if x.dtype != y.dtype:
        raise TypeError(f"x and y must have the same dtype, got {x.dtype!r} != {y.dtype!r}")
    to = {"int8": tf.float32, "int16": tf.float32, "uint8": tf.float32, "uint16": tf.float32,
          "int32": tf.float64, "int64": tf.float64}.get(x.dtype.name)
    if to is not None:
        x, y = tf.cast(x, to), tf.cast(y, to)
    return _out(_g()._make("Div", name or "truediv", (x, y)))


divide = truediv


def _nn_names():
    return {"elu": elu, "selu": selu, "relu6": relu6, "leaky_relu": leaky_relu,  # noqa: F821
            "softplus": softplus, "softsign": softsign}  # noqa: F821


__all__ = sorted(list(_UNARY) + list(_BINARY) + [
    "leaky_relu", "logical_xor", "where", "where_v2", "truediv", "divide", "math"])
# the functions tf.nn has (python/rill/compat/v1/nn.py takes them from here) are not top-level
# names in TF 1.x: tf.elu does not exist
for _n in ("elu", "selu", "relu6", "leaky_relu", "softplus", "softsign", "polygamma"):
    __all__.remove(_n)
__all__ += ["polygamma"]  # tf.polygamma exists
del _n

_MATH_EXISTING = [
    "add", "subtract", "multiply", "divide", "truediv", "negative", "exp", "log", "sqrt",
    "square", "maximum", "minimum", "add_n", "sigmoid", "tanh", "equal", "reduce_sum",
    "reduce_mean", "argmax", "cast",
    # other modules' (_array_ops, _embedding_ops, _nn_ops): tf.math.X is tf.X where tf.X exists
    "reduce_max", "reduce_min", "reduce_prod", "reduce_any", "reduce_all", "reduce_logsumexp",
    "argmin", "cumsum", "cumprod", "count_nonzero", "top_k", "in_top_k", "segment_sum",
    "unsorted_segment_sum", "segment_mean", "unsorted_segment_mean", "l2_normalize",
    "log_softmax", "softmax", "reduce_euclidean_norm", "accumulate_n", "scalar_mul",
    "reduce_std", "reduce_variance", "bincount", "confusion_matrix", "log_sigmoid",
    "sigmoid_cross_entropy_with_logits"]


class _MathNamespace(_types.SimpleNamespace):
    """tf.math: the element-wise functions here and the package's existing math functions
    (looked up when first used, so that later modules' names count too)."""

    def __getattr__(self, name):
        tf = _tf()
        if name in _MATH_EXISTING and hasattr(tf, name):
            return getattr(tf, name)
        if name in _MATH_EXISTING and hasattr(tf.nn, name):
            return getattr(tf.nn, name)
        raise AttributeError(f"module 'tf.math' has no attribute {name!r}")


math = _MathNamespace(**{n: getattr(_mod, n) for n in list(_UNARY) + list(_BINARY)},
                      leaky_relu=leaky_relu, logical_xor=logical_xor, truediv=truediv,
                      divide=truediv, neg=lambda x, name=None: _tf().negative(x, name=name))


# --- what the Tensor operators call (TF's binary_op_wrapper names) ---

def _op_pow(x, y):
    return _binary("Pow", "pow", x, y, None)


def _op_rpow(x, y):
    return _binary("Pow", "pow", y, x, None)


def _op_mod(x, y):
    return _binary("FloorMod", "mod", x, y, None)


def _op_rmod(x, y):
    return _binary("FloorMod", "mod", y, x, None)


def _op_floordiv(x, y):
    return _binary("FloorDiv", "floordiv", x, y, None)


def _op_rfloordiv(x, y):
    return _binary("FloorDiv", "floordiv", y, x, None)


def _op_and(x, y):
    return _binary("LogicalAnd", "and", x, y, None)


def _op_or(x, y):
    return _binary("LogicalOr", "or", x, y, None)


def _op_xor(x, y):
    return logical_xor(x, y, name="xor")
