"""Reading back what training wrote, as TF 1.x's API does: tf.train.summary_iterator (the events
of an event file as Event-like objects) and tf.train.NewCheckpointReader / load_checkpoint /
list_variables / load_variable (a V2 checkpoint's tensors as numpy arrays). Over rill._readers
(python/rill/_readers.c), which reads with rill's C readers."""
import numpy as _np

from ... import _readers
from . import errors as _errors

__all__ = ["summary_iterator", "NewCheckpointReader", "load_checkpoint", "list_variables",
           "load_variable", "CheckpointReader"]

_readers.register_errors(_errors.BY_CODE)


class _Message:
    """A read-only protobuf-like message: fields as attributes, HasField for the set ones."""

    _fields = ()

    def __init__(self, **fields):
        self.__dict__.update(fields)
        self._set = {k for k, v in fields.items() if v is not None}

    def HasField(self, name):
        if name not in self._fields:
            raise ValueError(f'Protocol message has no non-repeated field "{name}".')
        return name in self._set

    def __repr__(self):
        body = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields if k in self._set)
        return f"{type(self).__name__}({body})"


class HistogramProto(_Message):
    _fields = ("min", "max", "num", "sum", "sum_squares")


class _Value(_Message):
    _fields = ("tag", "simple_value", "histo", "image", "audio", "tensor")


class _Summary(_Message):
    _fields = ()

    def __init__(self, value):
        super().__init__()
        self.value = value


class _SessionLog(_Message):
    _fields = ("status", "checkpoint_path", "msg")


class _Event(_Message):
    _fields = ("wall_time", "step", "file_version", "summary", "session_log", "graph_def")

    def WhichOneof(self, name):
        if name != "what":
            raise ValueError(f'Protocol message has no oneof "{name}" field.')
        for f in ("file_version", "graph_def", "summary", "session_log"):
            if f in self._set:
                return f
        return None


def _event(d):
    summary = session_log = file_version = None
    if d["kind"] == "summary":
        values = []
        for v in d["values"]:
            histo = simple = None
            if v["kind"] == "histo":
                histo = HistogramProto(min=v["min"], max=v["max"], num=v["num"], sum=v["sum"],
                                       sum_squares=v["sum_squares"])
            elif v["kind"] == "simple_value":
                simple = v["simple_value"]
            val = _Value(tag=v["tag"], simple_value=simple, histo=histo)
            val.simple_value = simple or 0.0
            val.histo = histo or HistogramProto(min=0.0, max=0.0, num=0.0, sum=0.0, sum_squares=0.0)
            val.histo._set = set() if histo is None else val.histo._set
            values.append(val)
        summary = _Summary(values)
    elif d["kind"] == "session_log":
        session_log = _SessionLog(status=d["session_log_status"],
                                  checkpoint_path=d["checkpoint_path"], msg=d["session_log_msg"])
    elif d["kind"] == "file_version":
        file_version = d["file_version"]
    ev = _Event(wall_time=d["wall_time"], step=d["step"], file_version=file_version,
                summary=summary, session_log=session_log)
    # unset fields read as protobuf's defaults (an empty message, "", 0), HasField stays false
    ev.file_version = file_version or ""
    ev.summary = summary or _Summary([])
    ev.session_log = session_log or _SessionLog(status=0, checkpoint_path="", msg="")
    return ev


def summary_iterator(path):
    """The events of the event file at path, in order (tf.compat.v1.train.summary_iterator).
    A corrupt record raises DataLossError naming the file and offset."""
    r = _readers.EventReader(str(path))
    while True:
        d = r.next()
        if d is None:
            return
        yield _event(d)


# TF's DataType numbers -> numpy dtypes
_NP = {1: _np.float32, 2: _np.float64, 3: _np.int32, 4: _np.uint8, 5: _np.int16, 6: _np.int8,
       9: _np.int64, 10: _np.bool_, 17: _np.uint16, 19: _np.float16, 22: _np.uint32,
       23: _np.uint64}


def _dtype(num):
    from . import dtypes
    try:
        return dtypes.as_dtype(num)
    except (TypeError, ValueError, KeyError):
        return num


class CheckpointReader:
    """tf.train.NewCheckpointReader(prefix): a checkpoint's tensors by name."""

    def __init__(self, filepattern):
        self._r = _readers.CheckpointReader(str(filepattern))
        self._entries = {n: (t, s) for n, t, s in self._r.entries()}

    def get_variable_to_shape_map(self):
        return {n: list(s) if s is not None else None for n, (t, s) in self._entries.items()}

    def get_variable_to_dtype_map(self):
        return {n: _dtype(t) for n, (t, s) in self._entries.items()}

    def has_tensor(self, name):
        return name in self._entries

    def get_tensor(self, name):
        dt, shape, data = self._r.get(name)
        if isinstance(data, list):
            return _np.array(data, dtype=object).reshape(shape)
        if dt not in _NP:
            raise _errors.UnimplementedError(
                f"Tensor {name!r} has a dtype (DataType {dt}) numpy cannot hold")
        return _np.frombuffer(data, dtype=_NP[dt]).reshape(shape).copy()

    def debug_string(self):
        return "".join(f"{n} ({_dtype(t)}) {list(s)}\n".encode()
                       for n, (t, s) in sorted(self._entries.items()))


def NewCheckpointReader(filepattern):
    return CheckpointReader(filepattern)


def load_checkpoint(ckpt_dir_or_file):
    """A CheckpointReader for a checkpoint prefix or the latest checkpoint of a directory."""
    return CheckpointReader(ckpt_dir_or_file)


def list_variables(ckpt_dir_or_file):
    reader = load_checkpoint(ckpt_dir_or_file)
    return sorted(reader.get_variable_to_shape_map().items())


def load_variable(ckpt_dir_or_file, name):
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)
