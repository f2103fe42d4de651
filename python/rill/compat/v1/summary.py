"""tf.summary: scalar, histogram and merge_all make rill's summary ops (their bytes are
TensorFlow's Summary protos); FileWriter writes TensorBoard's event files (rill's C writer).
tf.Summary and tf.SessionLog are the small protos programs build by hand for FileWriter."""
import atexit as _atexit
import struct as _struct
import threading as _threading
import weakref as _weakref

from ... import _rill


def _tf():
    import rill.compat.v1 as tf
    return tf


def scalar(name, tensor, collections=None, family=None):
    tf = _tf()
    g = tf.get_default_graph()
    return g._wrap(g._g.summary("scalar", name, tf.convert_to_tensor(tensor)._out)).outputs[0]


def histogram(name, values, collections=None, family=None):
    tf = _tf()
    g = tf.get_default_graph()
    return g._wrap(g._g.summary("histogram", name, tf.convert_to_tensor(values)._out)).outputs[0]


def merge_all(key="summaries", scope=None, name=None):
    tf = _tf()
    g = tf.get_default_graph()
    r = g._g.summary_merge_all(name)
    return None if r is None else g._wrap(r).outputs[0]


# --- the protos a program builds by hand: tf.Summary(value=[tf.Summary.Value(...)]) ---

def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field_bytes(field, data):
    return _varint(field << 3 | 2) + _varint(len(data)) + data


class Summary:
    """tf.Summary with simple_value values (what programs write by hand; histograms and images
    come from the summary ops). SerializeToString gives the Summary proto's bytes."""

    class Value:
        def __init__(self, tag="", simple_value=None, **kwargs):
            if kwargs:
                raise TypeError("rill's tf.Summary.Value takes tag and simple_value; got "
                                + ", ".join(sorted(kwargs)))
            self.tag = tag
            self.simple_value = 0.0 if simple_value is None else float(simple_value)

        def SerializeToString(self):
            return (_field_bytes(1, self.tag.encode("utf-8"))
                    + _varint(2 << 3 | 5) + _struct.pack("<f", self.simple_value))

    def __init__(self, value=()):
        self.value = list(value)

    def SerializeToString(self):
        return b"".join(_field_bytes(1, v.SerializeToString()) for v in self.value)


class SessionLog:
    """tf.SessionLog(status=SessionLog.START | STOP | CHECKPOINT, checkpoint_path=...)."""
    STATUS_UNSPECIFIED, START, STOP, CHECKPOINT = 0, 1, 2, 3

    def __init__(self, status=0, checkpoint_path="", msg=""):
        self.status, self.checkpoint_path, self.msg = status, checkpoint_path, msg


_open_writers = _weakref.WeakSet()


@_atexit.register
def _flush_at_exit():
    for w in list(_open_writers):
        w.close()


class FileWriter:
    """tf.summary.FileWriter(logdir, graph=None, max_queue=10, flush_secs=120,
    filename_suffix=None): an event file TensorBoard reads. Events are buffered and written every
    flush_secs by a background thread (as TF's), at flush(), close() and at exit; max_queue is
    accepted and not needed (adding never blocks)."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, filename_suffix=None,
                 session=None, graph_def=None):
        self._logdir = str(logdir)
        self._suffix = filename_suffix
        self._flush_secs = float(flush_secs)
        self._w = None
        self._closed = True
        self.reopen()
        if graph is not None:
            self.add_graph(graph)

    def get_logdir(self):
        return self._logdir

    def reopen(self):
        """Opens a new event file after close(); no-op while open."""
        if not self._closed:
            return
        self._w = _rill.SummaryWriter(self._logdir, self._suffix)
        self._closed = False
        self._stop = _threading.Event()
        self._thread = _threading.Thread(target=self._flusher, name="FileWriter flush",
                                         args=(self._w, self._stop, self._flush_secs),
                                         daemon=True)
        self._thread.start()
        _open_writers.add(self)

    @staticmethod
    def _flusher(w, stop, secs):
        while not stop.wait(secs):
            try:
                w.flush()
            except Exception:  # closed meanwhile, or a full disk: the next flush says so
                pass

    def _check(self):
        if self._closed:
            raise RuntimeError("FileWriter is closed; call reopen() first")

    def add_summary(self, summary, global_step=None):
        """summary: the bytes a summary op returns from sess.run, or a tf.Summary."""
        self._check()
        if hasattr(summary, "SerializeToString"):
            summary = summary.SerializeToString()
        self._w.add_summary(summary, -1 if global_step is None else int(global_step))

    def add_session_log(self, session_log, global_step=None):
        self._check()
        self._w.add_session_log(int(session_log.status), session_log.checkpoint_path or None,
                                -1 if global_step is None else int(global_step))

    def add_graph(self, graph, global_step=None, graph_def=None):
        """The graph for TensorBoard's graph tab (a GraphDef: names, ops, inputs, devices and
        output shapes)."""
        self._check()
        tf = _tf()
        if isinstance(graph, tf.Graph):
            graph = graph._g
        self._w.add_graph(graph)

    def flush(self):
        self._check()
        self._w.flush()

    def close(self):
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._thread.join()
        self._w.close()
        _open_writers.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FileWriterCache:
    """tf.summary.FileWriterCache: one FileWriter per directory, shared by whoever writes there
    (the hooks of a MonitoredTrainingSession)."""
    _cache = {}
    _lock = _threading.Lock()

    @staticmethod
    def get(logdir):
        with FileWriterCache._lock:
            w = FileWriterCache._cache.get(str(logdir))
            if w is None or w._closed:
                w = FileWriterCache._cache[str(logdir)] = FileWriter(logdir)
            return w

    @staticmethod
    def clear():
        with FileWriterCache._lock:
            for w in FileWriterCache._cache.values():
                w.close()
            FileWriterCache._cache.clear()
