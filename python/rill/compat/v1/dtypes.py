"""TF's DType objects over rill's dtype numbers (which are TF's DataType values)."""
import builtins as _builtins

import numpy as _np


class DType:
    def __init__(self, enum, name, np_type):
        self._enum, self._name, self._np = enum, name, np_type

    @property
    def enum(self):
        return self._enum

    @property
    def name(self):
        return self._name

    @property
    def as_numpy_dtype(self):
        return self._np

    @property
    def is_floating(self):
        return self._enum in (1, 2, 19)

    @property
    def base_dtype(self):
        return self

    def __eq__(self, other):
        try:
            return self._enum == as_dtype(other)._enum
        except TypeError:
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._enum

    def __repr__(self):
        return f"tf.{self._name}"


float32 = DType(1, "float32", _np.float32)
float64 = DType(2, "float64", _np.float64)
int32 = DType(3, "int32", _np.int32)
string = DType(7, "string", _np.object_)
int64 = DType(9, "int64", _np.int64)
bool = DType(10, "bool", _np.bool_)
float16 = DType(19, "float16", _np.float16)
half = float16
double = float64

_ALL = [float32, float64, int32, string, int64, bool, float16]
_BY_ENUM = {d.enum: d for d in _ALL}
_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME.update({"float": float32, "double": float64, "half": float16, "int": int32})


def as_dtype(x):
    """A DType from a DType, its name ("float32", or TF 0.x's "float"), a rill/TF enum number or
    a numpy dtype."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str):
        if x in _BY_NAME:
            return _BY_NAME[x]
        raise TypeError(f"Cannot convert value {x!r} to a TensorFlow DType.")
    if isinstance(x, int) and not isinstance(x, _builtins.bool):
        if x in _BY_ENUM:
            return _BY_ENUM[x]
        raise TypeError(f"Cannot convert value {x!r} to a TensorFlow DType.")
    try:
        npd = _np.dtype(x)
    except TypeError:
        raise TypeError(f"Cannot convert value {x!r} to a TensorFlow DType.") from None
    for d in _ALL:
        if d is not string and _np.dtype(d.as_numpy_dtype) == npd:
            return d
    if npd.kind in "USO":
        return string
    raise TypeError(f"Cannot convert value {x!r} to a TensorFlow DType.")
