"""TF 1.x's string ops over rill's C ops (src/graph/ops_string.c, kernels in
src/kernels/cpu/cpu_string.c): tf.as_string, string_join, string_to_number, substr,
string_strip, reduce_join, regex_replace, encode_base64, decode_base64, decode_raw and
matching_files, with their tf.strings and tf.io names.

regex_replace uses POSIX extended regular expressions, not RE2: the common syntax agrees,
RE2's extensions (\\d, \\w, \\s, non-greedy quantifiers, (?i)) do not, and POSIX matches
leftmost-longest where RE2 matches leftmost-first (see cpu_string.c)."""
import types as _types

from ._ops import _g, _out, _t, _tf

__all__ = ["as_string", "string_join", "string_to_number", "substr", "string_strip",
           "reduce_join", "regex_replace", "encode_base64", "decode_base64", "decode_raw",
           "matching_files", "decode_csv"]


def _s(x):
    return _t(x, dtype=_tf().string)


def _op(type, name, inputs, attrs=None):
    return _out(_g()._make(type, name or type, tuple(inputs), attrs or {}))


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="",
              name=None):
    return _op("AsString", name, [_t(input)],
               {"precision": ("int", int(precision)), "scientific": ("bool", bool(scientific)),
                "shortest": ("bool", bool(shortest)), "width": ("int", int(width)),
                "fill": ("string", str(fill))})


def string_join(inputs, separator="", name=None):
    return _op("StringJoin", name, [_s(x) for x in inputs],
               {"separator": ("string", str(separator))})


def string_to_number(string_tensor=None, out_type=None, name=None, input=None):
    tf = _tf()
    if input is not None:
        if string_tensor is not None:
            raise ValueError("Cannot specify both 'string_tensor' and 'input'.")
        string_tensor = input
    if string_tensor is None:
        raise ValueError("Must specify 'string_tensor' or 'input'.")
    return _op("StringToNumber", name, [_s(string_tensor)],
               {"out_type": tf._attr_type(out_type or tf.float32)})


def substr(input, pos, len, name=None, unit="BYTE"):
    tf = _tf()
    pos = _t(pos)
    if pos.dtype not in (tf.int32, tf.int64):
        pos = tf.cast(pos, tf.int32)
    return _op("Substr", name, [_s(input), pos, _t(len, dtype=pos.dtype)],
               {"unit": ("string", str(unit))})


def string_strip(input, name=None):
    return _op("StringStrip", name, [_s(input)])


def reduce_join(inputs, axis=None, keep_dims=None, separator="", name=None,
                reduction_indices=None, keepdims=None):
    """The strings joined along axis (None: every axis, innermost first, so row-major order);
    TF's rule: the first axis listed is joined first."""
    tf = _tf()
    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'.")
    keep = keepdims if keepdims is not None else bool(keep_dims)
    if axis is not None and reduction_indices is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_indices'.")
    axis = axis if axis is not None else reduction_indices
    x = _s(inputs)
    if axis is None:
        rank = x.shape.ndims
        if rank is None:
            raise ValueError("reduce_join with axis=None needs an input of known rank")
        axis = list(range(rank - 1, -1, -1))
    if isinstance(axis, int):
        axis = [axis]
    axis_t = axis if isinstance(axis, tf.Tensor) else tf.constant(list(axis), dtype=tf.int32,
                                                                   shape=[len(list(axis))])
    return _op("ReduceJoin", name, [x, axis_t],
               {"keep_dims": ("bool", keep), "separator": ("string", str(separator))})


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):
    return _op("RegexReplace", name, [_s(input), _s(pattern), _s(rewrite)],
               {"replace_global": ("bool", bool(replace_global))})


def encode_base64(input, pad=False, name=None):
    return _op("EncodeBase64", name, [_s(input)], {"pad": ("bool", bool(pad))})


def decode_base64(input, name=None):
    return _op("DecodeBase64", name, [_s(input)])


def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):
    tf = _tf()
    if bytes is not None:
        if input_bytes is not None:
            raise ValueError("Cannot specify both 'input_bytes' and 'bytes'.")
        input_bytes = bytes
    if input_bytes is None:
        raise ValueError("Must specify 'input_bytes' or 'bytes'.")
    if out_type is None:
        raise TypeError("decode_raw() missing required argument 'out_type'")
    return _op("DecodeRaw", name, [_s(input_bytes)],
               {"out_type": tf._attr_type(out_type),
                "little_endian": ("bool", bool(little_endian))})


def matching_files(pattern, name=None):
    return _op("MatchingFiles", name, [_s(pattern)])


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None,
               na_value="", select_cols=None):
    """The columns of CSV records (RFC 4180 quoting when use_quote_delim): one tensor per
    record_defaults entry, of its dtype; an empty field (or na_value) takes the default, and is
    an error for an empty default."""
    tf = _tf()
    if select_cols is not None:
        raise tf.errors.UnimplementedError(
            None, None, "decode_csv: select_cols is not supported by rill; select the columns "
                        "of the full result instead")
    defaults = []
    for d in record_defaults:
        d = d if isinstance(d, tf.Tensor) else tf.convert_to_tensor(d)
        defaults.append(d)
    if not defaults:
        raise ValueError("record_defaults must not be empty")
    op = _g()._make("DecodeCSV", name or "DecodeCSV", tuple([_s(records)] + defaults),
                    {"field_delim": ("string", str(field_delim)),
                     "use_quote_delim": ("bool", bool(use_quote_delim)),
                     "na_value": ("string", str(na_value)),
                     "num_outputs": ("int", len(defaults))})
    return list(op.outputs)


def _install(tf):
    """tf.strings and the tf.io names."""
    strings = _types.SimpleNamespace(
        as_string=as_string, join=string_join, to_number=string_to_number, substr=substr,
        strip=string_strip, reduce_join=reduce_join, regex_replace=regex_replace)
    old = getattr(tf, "strings", None)
    if old is not None:
        for k, v in vars(strings).items():
            setattr(old, k, v)
    else:
        tf.strings = strings
    for n in ("encode_base64", "decode_base64", "decode_raw", "matching_files", "decode_csv"):
        setattr(tf.io, n, globals()[n])
    tf.io.write_graph = tf.train.write_graph  # tf.io.write_graph (_train_helpers.py)

