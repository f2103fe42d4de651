"""tf.train's helpers as TF 1.x has them: ExponentialMovingAverage (TF's slot names, so that a
checkpoint of the averages maps one to one), global_step and assert_global_step, the checkpoint
state file (CheckpointState, generate_checkpoint_state_proto, update_checkpoint_state) and the
checkpoint file helpers (checkpoint_exists, get_checkpoint_mtimes, remove_checkpoint,
checkpoints_iterator), init_from_checkpoint (a variable's initializer becomes a restore from a
checkpoint TF or rill wrote), SaverDef, basic_train_loop, LooperThread and write_graph (a
GraphDef, binary or text, as TensorBoard's graph view gets it from FileWriter.add_graph).
Imported into tf.train by train.py."""
import glob as _glob
import logging as _logging
import math as _math
import os as _os
import threading as _threading
import time as _time

__all__ = ["ExponentialMovingAverage", "global_step", "assert_global_step", "CheckpointState",
           "generate_checkpoint_state_proto", "update_checkpoint_state", "checkpoint_exists",
           "get_checkpoint_mtimes", "remove_checkpoint", "checkpoints_iterator",
           "init_from_checkpoint", "SaverDef", "basic_train_loop", "LooperThread",
           "write_graph"]

_log = _logging.getLogger("tensorflow")


def _tf():
    import rill.compat.v1 as tf
    return tf


# --- text and binary protobuf encoding (what TF's text_format and SerializeToString write) ---

def _escape(s, as_utf8=False):
    """text_format's CEscape of s's UTF-8 bytes (as_utf8=False: bytes >= 0x80 as octal)."""
    out = []
    if as_utf8 and isinstance(s, str):
        return "".join(c if ord(c) >= 0x80 else _escape(c) for c in s)
    for b in s.encode("utf-8") if isinstance(s, str) else bytes(s):
        c = chr(b)
        if c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif c in "\"'\\":
            out.append("\\" + c)
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append("\\%03o" % b)
    return "".join(out)


def _unescape(s):
    out, i = bytearray(), 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        n = s[i + 1]
        if n in "01234567":
            j = i + 1
            while j < len(s) and j < i + 4 and s[j] in "01234567":
                j += 1
            out.append(int(s[i + 1:j], 8))
            i = j
            continue
        out += {"n": b"\n", "r": b"\r", "t": b"\t"}.get(n, n.encode("utf-8"))
        i += 2
    return out.decode("utf-8")


def _fmt_double(x):
    """A double as protobuf's text format prints it (shortest round trip, no trailing .0)."""
    x = float(x)
    if _math.isnan(x):
        return "nan"
    if _math.isinf(x):
        return "inf" if x > 0 else "-inf"
    r = repr(x)
    return r[:-2] if r.endswith(".0") else r


def _varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field_bytes(num, data):
    data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return _varint(num << 3 | 2) + _varint(len(data)) + data


def _field_varint(num, v):
    return _varint(num << 3) + _varint(int(v))


# --- ExponentialMovingAverage ---

def _key(x):
    return ("v", x._op._op) if isinstance(x, _tf().Variable) else ("t", x._out)


def _unique(g, name):
    if g._g.find(name) is None:
        return name
    i = 1
    while g._g.find(f"{name}_{i}") is not None:
        i += 1
    return f"{name}_{i}"


def _at_root(g):
    """A context: the name scope is the root (TF's init_scope) and no control dependencies."""
    import contextlib

    @contextlib.contextmanager
    def ctx():
        g._g.push_name_scope("/")
        try:
            with g.control_dependencies(None):
                yield
        finally:
            g._g.pop_name_scope()
    return ctx()


def _new_variable(g, name, initial_value, device=None):
    """A non-trainable global variable of exactly that (unique) name, created at the root."""
    tf = _tf()
    import contextlib
    with _at_root(g), (g.device(device) if device else contextlib.nullcontext()):
        return tf.Variable(initial_value, trainable=False, name=_unique(g, name))


def _assign_op(g, type, scope_name, var, value_fn):
    """An Assign/AssignSub/AssignAdd op named scope_name (made unique), its operands built by
    value_fn under that name scope, as TF's `state_ops.assign_sub(..., name=scope)`."""
    full = _unique(g, g._g.name_scope() + scope_name)
    g._g.push_name_scope(full + "/")
    try:
        value = value_fn()
    finally:
        g._g.pop_name_scope()
    g._g.push_name_scope("/")
    try:
        return g._make(type, full, (var.value(), value)).outputs[0]
    finally:
        g._g.pop_name_scope()


class ExponentialMovingAverage:
    """tf.train.ExponentialMovingAverage: shadow = shadow - (1 - decay) * (shadow - variable),
    decay = min(decay, (1 + num_updates) / (10 + num_updates)) with num_updates. The shadow of a
    variable is the slot "<var>/ExponentialMovingAverage" initialised with the variable's
    initial value; that of a tensor starts at zero (zero_debias: debiased as TF's, with its
    "<avg>/biased" and "<avg>/local_step" variables)."""

    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages = {}

    @property
    def name(self):
        return self._name

    def apply(self, var_list=None):
        tf = _tf()
        g = tf.get_default_graph()
        if var_list is None:
            var_list = tf.trainable_variables()
        var_list = list(var_list)
        zero_debias_true = set()
        for var in var_list:
            if var.dtype.base_dtype not in (tf.bfloat16, tf.float16, tf.float32, tf.float64):
                raise TypeError("The variables must be half, float, or double: %s" % var.name)
            k = _key(var)
            if k in self._averages:
                continue
            if isinstance(var, tf.Variable):
                init = var.initializer
                initial = init.inputs[1] if init is not None else var.value()
                avg = _new_variable(g, var.op.name + "/" + self._name, initial, var.device)
                tf.add_to_collection(tf.GraphKeys.MOVING_AVERAGE_VARIABLES, var)
            else:
                dims = var.shape.dims
                if dims is None or any(d is None for d in dims):
                    raise ValueError("Shape of a new variable (%s) must be fully defined, but "
                                     "instead was %s." % (var.op.name + "/" + self._name,
                                                          var.shape))
                with _at_root(g):
                    zeros = tf.zeros([int(d) for d in dims], dtype=var.dtype.base_dtype,
                                     name=_unique(g, var.op.name + "/" + self._name + "/Initializer/zeros"))
                avg = _new_variable(g, var.op.name + "/" + self._name, zeros)
                if self._zero_debias:
                    zero_debias_true.add(_key(avg))
            self._averages[k] = avg
        # the scope as an absolute prefix, so that the group can take its name (TF's
        # group(name=scope))
        scope = _unique(g, g._g.name_scope() + self._name) + "/"
        g._g.push_name_scope(scope)
        try:
            decay = tf.convert_to_tensor(self._decay, dtype=tf.float32, name="decay")
            if self._num_updates is not None:
                num_updates = tf.cast(self._num_updates, tf.float32, name="num_updates")
                decay = tf.minimum(decay, (1.0 + num_updates) / (10.0 + num_updates))
            updates = []
            for var in var_list:
                avg = self._averages[_key(var)]
                updates.append(_assign_moving_average(g, avg, var, decay,
                                                      _key(avg) in zero_debias_true))
        finally:
            g._g.pop_name_scope()
        g._g.push_name_scope("/")
        try:  # the group takes the scope's own name, as TF's group(name=scope)
            return g._make("NoOp", scope.rstrip("/"), (), control_inputs=[u.op for u in updates])
        finally:
            g._g.pop_name_scope()

    def average(self, var):
        return self._averages.get(_key(var), None)

    def average_name(self, var):
        avg = self._averages.get(_key(var))
        if avg is not None:
            return avg.op.name
        return _unique(_tf().get_default_graph(), var.name[:-len(":0")] + "/" + self._name)

    def variables_to_restore(self, moving_avg_variables=None):
        tf = _tf()
        name_map = {}
        if moving_avg_variables is None:
            moving_avg_variables = tf.trainable_variables()
            moving_avg_variables += tf.moving_average_variables()
        seen = {}
        for v in moving_avg_variables:
            seen[_key(v)] = v
        for v in seen.values():
            name_map[self.average_name(v)] = v
        names = set(v.name for v in seen.values())
        for v in tf.global_variables():
            if v.name not in names and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map


def _assign_moving_average(g, variable, value, decay, zero_debias):
    """TF's assign_moving_average(variable, value, decay, zero_debias): the update op takes
    the name of its scope "AssignMovingAvg" (made unique)."""
    tf = _tf()
    dt = variable.dtype.base_dtype
    full = _unique(g, g._g.name_scope() + "AssignMovingAvg")
    g._g.push_name_scope(full + "/")
    try:
        one_minus = tf.subtract(1.0, decay, name="decay")
        if one_minus.dtype != dt:
            one_minus = tf.cast(one_minus, dt)
        value = tf.convert_to_tensor(value)
        if not zero_debias:
            kind = "AssignSub"
            operand = tf.multiply(tf.subtract(variable.value(), value), one_minus)
        else:
            base = variable.op.name
            biased = _new_variable(g, base + "/biased", tf.zeros(variable.shape.as_list(), dt))
            local_step = _new_variable(g, base + "/local_step", tf.zeros([], dt))
            update_biased = _assign_op(
                g, "AssignSub", "AssignSub", biased,
                lambda: tf.multiply(tf.subtract(biased.value(), value), one_minus))
            update_step = _assign_op(g, "AssignAdd", "AssignAdd", local_step,
                                     lambda: tf.constant(1, dtype=dt))
            one = tf.constant(1, dtype=dt)
            bias_factor = tf.subtract(one, tf.pow(tf.subtract(one, one_minus), update_step))
            kind = "Assign"
            operand = tf.truediv(update_biased, bias_factor)
    finally:
        g._g.pop_name_scope()
    g._g.push_name_scope("/")
    try:
        return g._make(kind, full, (variable.value(), operand)).outputs[0]
    finally:
        g._g.pop_name_scope()


# --- the global step ---

def global_step(sess, global_step_tensor):
    return int(sess.run(global_step_tensor))


def assert_global_step(global_step_tensor):
    tf = _tf()
    if not isinstance(global_step_tensor, (tf.Variable, tf.Tensor)):
        raise TypeError('Existing "global_step" must be a Variable or Tensor: %s.' %
                        global_step_tensor)
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError('Existing "global_step" does not have integer type: %s' %
                        global_step_tensor.dtype)
    shape = global_step_tensor.get_shape()
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError('Existing "global_step" is not scalar: %s' % shape)


# --- the checkpoint state file ---

class CheckpointState:
    """The CheckpointState message of the "checkpoint" file: str() is its text format."""

    def __init__(self, model_checkpoint_path="", all_model_checkpoint_paths=None,
                 all_model_checkpoint_timestamps=None, last_preserved_timestamp=None):
        self.model_checkpoint_path = model_checkpoint_path or ""
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths or [])
        self.all_model_checkpoint_timestamps = [float(t) for t in
                                                all_model_checkpoint_timestamps or []]
        self.last_preserved_timestamp = float(last_preserved_timestamp or 0.0)

    def __str__(self):
        """The text format as str() of TF's message prints it (UTF-8 as is)."""
        return self._text(True)

    def _text(self, as_utf8):
        """as_utf8=False: what text_format.MessageToString writes (TF's "checkpoint" file)."""
        lines = []
        if self.model_checkpoint_path:
            lines.append('model_checkpoint_path: "%s"' % _escape(self.model_checkpoint_path,
                                                                 as_utf8))
        lines += ['all_model_checkpoint_paths: "%s"' % _escape(p, as_utf8)
                  for p in self.all_model_checkpoint_paths]
        lines += ["all_model_checkpoint_timestamps: %s" % _fmt_double(t)
                  for t in self.all_model_checkpoint_timestamps]
        if self.last_preserved_timestamp:
            lines.append("last_preserved_timestamp: %s" %
                         _fmt_double(self.last_preserved_timestamp))
        return "".join(line + "\n" for line in lines)

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, CheckpointState) and str(self) == str(other)

    def SerializeToString(self):
        out = b""
        if self.model_checkpoint_path:
            out += _field_bytes(1, self.model_checkpoint_path)
        for p in self.all_model_checkpoint_paths:
            out += _field_bytes(2, p)
        if self.all_model_checkpoint_timestamps:
            import struct
            out += _field_bytes(3, b"".join(struct.pack("<d", t) for t in
                                            self.all_model_checkpoint_timestamps))
        if self.last_preserved_timestamp:
            import struct
            out += _varint(4 << 3 | 1) + struct.pack("<d", self.last_preserved_timestamp)
        return out

    @classmethod
    def _parse(cls, text):
        """The text format back (what update_checkpoint_state and TF's Saver write)."""
        import re
        st = cls()
        for line in text.splitlines():
            m = re.match(r'\s*(\w+)\s*:\s*(.*?)\s*$', line)
            if not m:
                continue
            k, v = m.groups()
            if v.startswith('"') and v.endswith('"'):
                v = _unescape(v[1:-1])
            if k == "model_checkpoint_path":
                st.model_checkpoint_path = v
            elif k == "all_model_checkpoint_paths":
                st.all_model_checkpoint_paths.append(v)
            elif k == "all_model_checkpoint_timestamps":
                st.all_model_checkpoint_timestamps.append(float(v))
            elif k == "last_preserved_timestamp":
                st.last_preserved_timestamp = float(v)
        return st


def generate_checkpoint_state_proto(save_dir, model_checkpoint_path,
                                    all_model_checkpoint_paths=None,
                                    all_model_checkpoint_timestamps=None,
                                    last_preserved_timestamp=None):
    if all_model_checkpoint_paths is None:
        all_model_checkpoint_paths = []
    if (not all_model_checkpoint_paths or
            all_model_checkpoint_paths[-1] != model_checkpoint_path):
        _log.info("%s is not in all_model_checkpoint_paths. Manually adding it.",
                  model_checkpoint_path)
        all_model_checkpoint_paths.append(model_checkpoint_path)
    if (all_model_checkpoint_timestamps and
            len(all_model_checkpoint_timestamps) != len(all_model_checkpoint_paths)):
        raise ValueError(("Checkpoint timestamps, if provided, must match checkpoint paths (got "
                          "paths %s and timestamps %s)")
                         % (all_model_checkpoint_paths, all_model_checkpoint_timestamps))
    if not _os.path.isabs(save_dir):
        if not _os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = _os.path.relpath(model_checkpoint_path, save_dir)
        for i, p in enumerate(all_model_checkpoint_paths):
            if not _os.path.isabs(p):
                all_model_checkpoint_paths[i] = _os.path.relpath(p, save_dir)
    return CheckpointState(model_checkpoint_path=model_checkpoint_path,
                           all_model_checkpoint_paths=all_model_checkpoint_paths,
                           all_model_checkpoint_timestamps=all_model_checkpoint_timestamps,
                           last_preserved_timestamp=last_preserved_timestamp)


def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                            latest_filename=None, all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp=None):
    """Writes the "checkpoint" file (latest_filename) of save_dir atomically, as TF does."""
    filename = _os.path.join(save_dir, latest_filename or "checkpoint")
    ckpt = generate_checkpoint_state_proto(
        save_dir, model_checkpoint_path,
        all_model_checkpoint_paths=all_model_checkpoint_paths,
        all_model_checkpoint_timestamps=all_model_checkpoint_timestamps,
        last_preserved_timestamp=last_preserved_timestamp)
    if filename == ckpt.model_checkpoint_path:
        raise RuntimeError("Save path '%s' conflicts with path used for checkpoint state.  "
                           "Please use a different save path." % model_checkpoint_path)
    tmp = "%s.tmp%x" % (filename, _threading.get_ident() ^ _os.getpid())
    try:
        with open(tmp, "w") as f:
            f.write(ckpt._text(False))
        _os.replace(tmp, filename)
    except OSError as e:
        tf = _tf()
        try:
            _os.unlink(tmp)
        except OSError:
            pass
        cls = tf.errors.NotFoundError if e.errno == 2 else tf.errors.PermissionDeniedError \
            if e.errno == 13 else tf.errors.UnknownError
        raise cls(None, None, "%s; %s" % (filename, e.strerror)) from None


def _matching(pattern):
    from . import gfile
    try:
        return gfile.Glob(pattern)
    except Exception:
        return sorted(_glob.glob(pattern))


def checkpoint_exists(checkpoint_prefix):
    return bool(_matching(checkpoint_prefix + ".index") or _matching(checkpoint_prefix))


def get_checkpoint_mtimes(checkpoint_prefixes):
    mtimes = []
    for prefix in checkpoint_prefixes:
        for pathname in (prefix + ".index", prefix):
            names = _matching(pathname)
            if names:
                mtimes.append(_os.stat(names[0]).st_mtime_ns / 1e9)
                break
    return mtimes


def remove_checkpoint(checkpoint_prefix, checkpoint_format_version=2, meta_graph_suffix="meta"):
    """Deletes a checkpoint's files: <prefix>.meta, and .index and .data-* (V2) or the prefix
    itself (V1)."""
    def delete(spec):
        for p in _matching(spec):
            try:
                _os.remove(p)
            except FileNotFoundError:
                _log.warning("Hit NotFoundError when deleting '%s', possibly because another "
                             "process/thread is also deleting/moving the same file", p)

    base = checkpoint_prefix
    import re
    base = re.sub(r"-[\d\?]+-of-\d+$", "", base)
    delete(base + "." + meta_graph_suffix)
    if checkpoint_format_version == 2:
        delete(checkpoint_prefix + ".index")
        delete(checkpoint_prefix + ".data-?????-of-?????")
    else:
        delete(checkpoint_prefix)


def _latest(checkpoint_dir):
    from .train import latest_checkpoint
    return latest_checkpoint(checkpoint_dir)


def _wait_for_new_checkpoint(checkpoint_dir, last_checkpoint=None, seconds_to_sleep=1,
                             timeout=None):
    _log.info("Waiting for new checkpoint at %s", checkpoint_dir)
    stop_time = _time.time() + timeout if timeout is not None else None
    while True:
        path = _latest(checkpoint_dir)
        if path is None or path == last_checkpoint:
            if stop_time is not None and _time.time() + seconds_to_sleep > stop_time:
                return None
            _time.sleep(seconds_to_sleep)
        else:
            _log.info("Found new checkpoint at %s", path)
            return path


def checkpoints_iterator(checkpoint_dir, min_interval_secs=0, timeout=None, timeout_fn=None):
    """Yields each new latest checkpoint of checkpoint_dir; after timeout seconds without one it
    ends (or asks timeout_fn whether to)."""
    checkpoint_path = None
    while True:
        new = _wait_for_new_checkpoint(checkpoint_dir, checkpoint_path, timeout=timeout)
        if new is None:
            if not timeout_fn:
                _log.info("Timed-out waiting for a checkpoint.")
                return
            if timeout_fn():
                return
            continue
        start = _time.time()
        checkpoint_path = new
        yield checkpoint_path
        wait = start + min_interval_secs - _time.time()
        if wait > 0:
            _time.sleep(wait)


# --- init_from_checkpoint ---

def _checkpoint_file(ckpt_dir_or_file):
    ckpt_dir_or_file = _os.fspath(ckpt_dir_or_file)
    if _os.path.isdir(ckpt_dir_or_file):
        return _latest(ckpt_dir_or_file)
    return ckpt_dir_or_file


def _set_checkpoint_initializer(var, ckpt_file, tensor_name):
    """var's initializer becomes an Assign of the tensor read from the checkpoint (an op of the
    variable's task's CPU named "checkpoint_initializer"), as TF's."""
    tf = _tf()
    g = var.graph
    dt = var.dtype.base_dtype
    dims = [int(d) for d in var.shape.dims]
    dev = var.device
    cpu = (dev.split("/device:")[0] + "/device:CPU:0") if dev else "/device:CPU:0"
    with _at_root(g), g.device(cpu):
        fname = tf.constant(ckpt_file, dtype=tf.string,
                            name=_unique(g, "checkpoint_initializer/prefix"))
        names = __import__("numpy").array([tensor_name.encode("utf-8")], dtype=object)
        restore = g._make("BundleRestoreShard", _unique(g, "checkpoint_initializer"), (fname,),
                          {"names": ("tensor", (names, tf.string.as_datatype_enum)),
                           "dtypes": ("ints", [dt.as_datatype_enum]),
                           "shapes": ("ints", [len(dims)] + dims),
                           "num_outputs": ("int", 1)})
        init = g._make("Assign", _unique(g, var.op.name + "/checkpoint_initializer"),
                       (var.value(), restore.outputs[0]))
    g._g.set_variable_initializer(var._out, init._op)


def init_from_checkpoint(ckpt_dir_or_file, assignment_map):
    """Overrides the initializers of the variables assignment_map names with reads of the
    checkpoint's tensors (TF's rules: {ckpt name: variable or variable name} or
    {"ckpt_scope/": "scope/"}). Names are looked up among the graph's global variables."""
    tf = _tf()
    from .train_io import load_checkpoint
    ckpt_file = _checkpoint_file(ckpt_dir_or_file)
    reader = load_checkpoint(ckpt_file)
    variable_map = reader.get_variable_to_shape_map()
    items = assignment_map.items() if hasattr(assignment_map, "items") else assignment_map
    store_vars = {v.op.name: v for v in tf.global_variables()}
    for tensor_name_in_ckpt, current in sorted(items, key=lambda p: p[0]):
        if isinstance(current, tf.Variable):
            var = current
        else:
            var = store_vars.get(current)
        if var is not None:
            if tensor_name_in_ckpt not in variable_map:
                raise ValueError("Tensor %s is not found in %s checkpoint %s" % (
                    tensor_name_in_ckpt, ckpt_dir_or_file, variable_map))
            if not var.get_shape().is_compatible_with(
                    tf.TensorShape(variable_map[tensor_name_in_ckpt])):
                raise ValueError(
                    "Shape of variable %s (%s) doesn't match with shape of tensor %s (%s) from "
                    "checkpoint reader." % (var.name, str(var.get_shape()), tensor_name_in_ckpt,
                                            str(variable_map[tensor_name_in_ckpt])))
            _set_checkpoint_initializer(var, ckpt_file, tensor_name_in_ckpt)
            continue
        scopes = ""
        if "/" in current:
            scopes = current[:current.rindex("/")]
        if not tensor_name_in_ckpt.endswith("/"):
            raise ValueError(
                "Assignment map with scope only name {} should map to scope only {}. Should be "
                "'scope/': 'other_scope/'.".format(scopes, tensor_name_in_ckpt))
        scope_variables = sorted(n for n in store_vars
                                 if not scopes or n.startswith(scopes + "/"))
        for var_name in scope_variables:
            full = var_name[len(scopes):]
            if current != "/":
                full = full[1:]
            if tensor_name_in_ckpt != "/":
                full = tensor_name_in_ckpt + full
            if full.endswith("/"):
                full = full[:-1]
            if full not in variable_map:
                raise ValueError("Tensor %s (%s in %s) is not found in %s checkpoint" % (
                    full, var_name[len(scopes) + 1:], tensor_name_in_ckpt, ckpt_dir_or_file))
            _set_checkpoint_initializer(store_vars[var_name], ckpt_file, full)


# --- SaverDef ---

class SaverDef:
    """tf.train.SaverDef: the names a Saver's graph uses (filename placeholder, save tensor,
    restore op) and its options; str() is the text format, SerializeToString the binary."""

    class CheckpointFormatVersion:
        LEGACY = 0
        V1 = 1
        V2 = 2

    LEGACY, V1, V2 = 0, 1, 2

    def __init__(self, filename_tensor_name="", save_tensor_name="", restore_op_name="",
                 max_to_keep=0, sharded=False, keep_checkpoint_every_n_hours=0.0, version=0):
        self.filename_tensor_name = filename_tensor_name
        self.save_tensor_name = save_tensor_name
        self.restore_op_name = restore_op_name
        self.max_to_keep = int(max_to_keep)
        self.sharded = bool(sharded)
        self.keep_checkpoint_every_n_hours = float(keep_checkpoint_every_n_hours)
        self.version = int(version)

    def _fields(self):
        return [("filename_tensor_name", self.filename_tensor_name, "s"),
                ("save_tensor_name", self.save_tensor_name, "s"),
                ("restore_op_name", self.restore_op_name, "s"),
                ("max_to_keep", self.max_to_keep, "i"), ("sharded", self.sharded, "b"),
                ("keep_checkpoint_every_n_hours", self.keep_checkpoint_every_n_hours, "f"),
                ("version", self.version, "e")]

    def __str__(self):
        out = []
        names = {0: "LEGACY", 1: "V1", 2: "V2"}
        for k, v, kind in self._fields():
            if not v:
                continue
            if kind == "s":
                out.append('%s: "%s"' % (k, _escape(v)))
            elif kind == "b":
                out.append("%s: true" % k)
            elif kind == "f":
                out.append("%s: %s" % (k, _fmt_double(v)))
            elif kind == "e":
                out.append("%s: %s" % (k, names.get(v, str(v))))
            else:
                out.append("%s: %d" % (k, v))
        return "".join(line + "\n" for line in out)

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, SaverDef) and self._fields() == other._fields()

    def SerializeToString(self):
        import struct
        out = b""
        for num, (k, v, kind) in enumerate(self._fields(), 1):
            if not v:
                continue
            if kind == "s":
                out += _field_bytes(num, v)
            elif kind == "f":
                out += _varint(num << 3 | 5) + struct.pack("<f", v)
            else:
                out += _field_varint(num, int(v))
        return out


# --- loops ---

def basic_train_loop(supervisor, train_step_fn, args=None, kwargs=None, master=""):
    """Calls train_step_fn(session, *args, **kwargs) until the supervisor should stop, in a
    managed session (again after an AbortedError, as TF's)."""
    tf = _tf()
    args = [] if args is None else args
    kwargs = {} if kwargs is None else kwargs
    should_retry = True
    while should_retry:
        try:
            should_retry = False
            with supervisor.managed_session(master) as sess:
                while not supervisor.should_stop():
                    train_step_fn(sess, *args, **kwargs)
        except tf.errors.AbortedError:
            should_retry = True


class LooperThread(_threading.Thread):
    """A daemon thread that runs run_loop (target(*args, **kwargs)) every timer_interval_secs
    (None: back to back) until its Coordinator stops."""

    def __init__(self, coord, timer_interval_secs, target=None, args=None, kwargs=None):
        from ._input import Coordinator
        if not isinstance(coord, Coordinator):
            raise ValueError("'coord' argument must be a Coordinator: %s" % coord)
        super().__init__()
        self.daemon = True
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._target = target
        if self._target:
            self._args = args or ()
            self._kwargs = kwargs or {}
        elif args or kwargs:
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        self._coord.register_thread(self)

    @staticmethod
    def loop(coord, timer_interval_secs, target, args=None, kwargs=None):
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args,
                              kwargs=kwargs)
        looper.start()
        return looper

    def run(self):
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_timer_time = _time.time()
                while not self._coord.wait_for_stop(next_timer_time - _time.time()):
                    next_timer_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self):
        pass

    def stop_loop(self):
        pass

    def run_loop(self):
        if self._target:
            self._target(*self._args, **self._kwargs)


# --- write_graph ---

def _shape_text(dims, indent):
    pad = " " * indent
    if dims is None:
        return [pad + "unknown_rank: true"]
    out = []
    for d in dims:
        out.append(pad + "dim {")
        if d is None:
            out.append(pad + "  size: -1")
        elif d:
            out.append(pad + "  size: %d" % d)
        out.append(pad + "}")
    return out


def _shape_proto(dims):
    if dims is None:
        return _field_varint(3, 1)
    out = b""
    for d in dims:
        size = -1 if d is None else int(d)
        out += _field_bytes(2, _field_varint(1, size) if size else b"")
    return out


def _node_fields(op):
    ins = []
    for t in op.inputs:
        ins.append(t.op.name if t.value_index == 0 else "%s:%d" % (t.op.name, t.value_index))
    ins += ["^" + c.name for c in op.control_inputs]
    shapes = [t.shape.dims if t.shape.dims is None else [None if d is None else int(d)
                                                         for d in t.shape.dims]
              for t in op.outputs]
    return op.name, op.type, ins, op.device, shapes


def _graph_def_bytes(ops):
    out = b""
    for op in ops:
        name, type, ins, device, shapes = _node_fields(op)
        node = _field_bytes(1, name) + _field_bytes(2, type)
        for i in ins:
            node += _field_bytes(3, i)
        if device:
            node += _field_bytes(4, device)
        if shapes:
            lst = b"".join(_field_bytes(7, _shape_proto(s)) for s in shapes)
            entry = _field_bytes(1, "_output_shapes") + _field_bytes(2, _field_bytes(1, lst))
            node += _field_bytes(5, entry)
        out += _field_bytes(1, node)
    return out


def _graph_def_text(ops):
    lines = []
    for op in ops:
        name, type, ins, device, shapes = _node_fields(op)
        lines.append("node {")
        lines.append('  name: "%s"' % _escape(name))
        lines.append('  op: "%s"' % _escape(type))
        lines += ['  input: "%s"' % _escape(i) for i in ins]
        if device:
            lines.append('  device: "%s"' % _escape(device))
        if shapes:
            lines += ["  attr {", '    key: "_output_shapes"', "    value {", "      list {"]
            for s in shapes:
                lines.append("        shape {")
                lines += _shape_text(s, 10)
                lines.append("        }")
            lines += ["      }", "    }", "  }"]
        lines.append("}")
    return "".join(line + "\n" for line in lines)


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """Writes the graph as a GraphDef (text format when as_text, else binary) to logdir/name
    and returns that path: every node's name, op, inputs ("^name" for control inputs), device
    and "_output_shapes", what FileWriter.add_graph gives TensorBoard (rill's other attrs are
    not TF's AttrValues and stay out)."""
    tf = _tf()
    g = graph_or_graph_def
    if isinstance(g, tf.Graph):
        ops = g.get_operations()
    elif hasattr(g, "get_operations"):
        ops = g.get_operations()
    else:
        raise TypeError("write_graph: graph_or_graph_def must be a tf.Graph, got %r" % (g,))
    logdir = _os.fspath(logdir)
    if not _os.path.isdir(logdir):
        _os.makedirs(logdir, exist_ok=True)
    path = _os.path.join(logdir, name)
    tmp = path + ".tmp%x" % _os.getpid()
    if as_text:
        with open(tmp, "w") as f:
            f.write(_graph_def_text(ops))
    else:
        with open(tmp, "wb") as f:
            f.write(_graph_def_bytes(ops))
    _os.replace(tmp, path)
    return path
