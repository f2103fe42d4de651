"""TF's DType objects over rill's dtype numbers (which are TF's DataType values)."""
import builtins as _builtins

import numpy as _np


class DType:
    """A dtype; DType(enum) makes the one with TF's DataType number enum, as tf.DType does."""

    def __init__(self, enum, name=None, np_type=None):
        if name is None:
            known = _BY_ENUM.get(enum) if isinstance(enum, int) else None
            if known is None:
                raise TypeError(f"types_pb2.DataType {enum!r} is not a valid DataType")
            name, np_type = known.name, known.as_numpy_dtype
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
        return self._enum in (1, 2, 14, 19)

    @property
    def is_integer(self):
        return self._enum in (3, 4, 5, 6, 9, 17)

    @property
    def is_unsigned(self):
        return self._enum in (4, 17)

    @property
    def is_bool(self):
        return self._enum == 10

    @property
    def is_complex(self):
        return False

    @property
    def is_quantized(self):
        return False

    @property
    def is_numpy_compatible(self):
        return self._enum != 14 or self._np is not None

    @property
    def as_datatype_enum(self):
        return self._enum

    @property
    def real_dtype(self):
        return self

    @property
    def size(self):
        return {1: 4, 2: 8, 3: 4, 4: 1, 5: 2, 6: 1, 7: 1, 9: 8, 10: 1, 14: 2, 17: 2,
                19: 2}[self._enum]

    @property
    def min(self):
        """The smallest value of the dtype (TF's DType.min)."""
        if self._enum in (7, 10):
            raise TypeError(f"Cannot find minimum value of {self._name}.")
        if self._enum == 14:
            return float(-3.3895313892515355e38)
        if self.is_floating:
            return _np.finfo(self._np).min
        return _np.iinfo(self._np).min

    @property
    def max(self):
        """The largest value of the dtype (TF's DType.max)."""
        if self._enum in (7, 10):
            raise TypeError(f"Cannot find maximum value of {self._name}.")
        if self._enum == 14:
            return float(3.3895313892515355e38)
        if self.is_floating:
            return _np.finfo(self._np).max
        return _np.iinfo(self._np).max

    def is_compatible_with(self, other):
        return self == other

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


_BY_ENUM = {}
float32 = DType(1, "float32", _np.float32)
float64 = DType(2, "float64", _np.float64)
int32 = DType(3, "int32", _np.int32)
string = DType(7, "string", _np.object_)
int64 = DType(9, "int64", _np.int64)
bool = DType(10, "bool", _np.bool_)
float16 = DType(19, "float16", _np.float16)
int8 = DType(6, "int8", _np.int8)
int16 = DType(5, "int16", _np.int16)
uint8 = DType(4, "uint8", _np.uint8)
uint16 = DType(17, "uint16", _np.uint16)
try:  # TF's bfloat16 numpy type (ml_dtypes); feeding and fetching bfloat16 is refused anyway
    from ml_dtypes import bfloat16 as _np_bfloat16
except ImportError:  # pragma: no cover
    _np_bfloat16 = None
bfloat16 = DType(14, "bfloat16", _np_bfloat16)
half = float16
double = float64

_ALL = [float32, float64, int32, string, int64, bool, float16, int8, int16, uint8, uint16,
        bfloat16]
_BY_ENUM.update({d.enum: d for d in _ALL})
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
        if d is not string and d.as_numpy_dtype is not None and \
                _np.dtype(d.as_numpy_dtype) == npd:
            return d
    if npd.kind in "USO":
        return string
    raise TypeError(f"Cannot convert value {x!r} to a TensorFlow DType.")
