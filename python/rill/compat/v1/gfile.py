"""tf.gfile (and tf.io.gfile's names, in ``io_gfile``): TF's file API over the local filesystem.

The answers and errors are those of TF 2.x's tf.compat.v1.gfile on local paths: failures raise
tf.errors classes (NotFoundError, AlreadyExistsError, FailedPreconditionError,
PermissionDeniedError, ...) chosen by errno as TF chooses them, with TF's texts (``PATH; No such
file or directory``, ``Could not find directory PATH``, ``file already exists``); GFile opens its
file lazily, at the first read or write (a missing file fails there, not in the constructor; a
file opened for writing and never written is not created), gives ``str`` in text modes and
``bytes`` in binary ones, takes ``str`` or ``bytes`` to write in any mode, and reopens from the
start when read after close(). Other filesystems (``gs://``, ``hdfs://``, ...) are refused with
TF's UnimplementedError text; ``file://`` is the local one.

Differences from TF (docs/PYTHON.md): ``Exists`` answers True for a V2 checkpoint prefix (see
its docstring); ListDirectory, Glob and Walk list names sorted (TF: in the filesystem's order);
``GFile.read(n)`` in text mode reads n bytes and completes a UTF-8 character that they cut
(TF fails to decode it); ``Copy`` of a file onto itself with overwrite=True leaves it as it is
(TF empties it); ``Copy`` from a directory raises FailedPreconditionError (TF:
InvalidArgumentError)."""
import errno as _errno
import fnmatch as _fnmatch
import os as _os
import shutil as _shutil
import stat as _stat
import sys as _sys
import types as _types

from .errors import (AlreadyExistsError, CancelledError, DeadlineExceededError,  # noqa: F401
                     FailedPreconditionError, InvalidArgumentError, NotFoundError, OutOfRangeError,
                     PermissionDeniedError, ResourceExhaustedError, UnavailableError,
                     UnimplementedError, UnknownError)

__all__ = ["Copy", "DeleteRecursively", "Exists", "FastGFile", "GFile", "Glob", "IsDirectory",
           "ListDirectory", "MakeDirs", "MkDir", "Open", "Remove", "Rename", "Stat", "Walk"]


def _error(cls, message):
    # keyword arguments: rill's errors take (message, ...), TF's take (node_def, op, message)
    return cls(node_def=None, op=None, message=message)


# errno -> class, as TensorFlow's ErrnoToCode (tensorflow/tsl/platform/errors.cc)
_ERRNO = {}
for _cls, _names in (
        (NotFoundError, "ENOENT ENODEV ENXIO ESRCH"),
        (AlreadyExistsError, "EEXIST"),
        (PermissionDeniedError, "EACCES EPERM EROFS"),
        (FailedPreconditionError, "ENOTDIR EISDIR ENOTEMPTY EBUSY ETXTBSY EBADF ECHILD EISCONN "
                                  "ENOTCONN EPIPE ENOTSOCK ESHUTDOWN EDEADLK ENOLCK"),
        (InvalidArgumentError, "EINVAL ENAMETOOLONG E2BIG EDESTADDRREQ EDOM EFAULT EILSEQ "
                               "ENOPROTOOPT ENOSTR ENOTBLK ENOTTY EPROTOTYPE ESPIPE"),
        (ResourceExhaustedError, "ENOSPC EMFILE EMLINK ENFILE ENOBUFS ENODATA ENOMEM ENOSR "
                                 "EUSERS EDQUOT EFBIG"),
        (OutOfRangeError, "ERANGE EOVERFLOW"),
        (UnavailableError, "EAGAIN ECONNREFUSED ECONNABORTED ECONNRESET EINTR EHOSTDOWN "
                           "EHOSTUNREACH ENETDOWN ENETRESET ENETUNREACH ENOLINK"),
        (DeadlineExceededError, "ETIMEDOUT ETIME"),
        (UnimplementedError, "ENOSYS ENOTSUP EAFNOSUPPORT EPFNOSUPPORT EPROTONOSUPPORT "
                             "ESOCKTNOSUPPORT EXDEV"),
        (CancelledError, "ECANCELED")):
    for _n in _names.split():
        if hasattr(_errno, _n):
            _ERRNO.setdefault(getattr(_errno, _n), _cls)


def _os_error(e, path):
    """The tf.errors exception for an OSError on path: TF's ``PATH; strerror``."""
    if e.errno is None:
        return _error(UnknownError, f"{path}; {e}")
    return _error(_ERRNO.get(e.errno, UnknownError), f"{path}; {_os.strerror(e.errno)}")


def _path(p):
    """A local path as str, from str, bytes or os.PathLike; other schemes are refused as TF
    refuses a filesystem it has no implementation of."""
    p = _os.fspath(p)
    if isinstance(p, bytes):
        p = p.decode("utf-8")
    scheme, sep, rest = p.partition("://")
    if sep and "/" not in scheme:
        if scheme == "file":
            return rest
        raise _error(UnimplementedError, f"File system scheme '{scheme}' not implemented "
                                         f"(file: '{p}')")
    return p


def _is_checkpoint_prefix(p):
    head, tail = _os.path.split(p)
    return bool(tail) and _os.path.isfile(p + ".index")


def Exists(filename):
    """Whether filename exists (a file or a directory).

    One difference from TensorFlow, decided for rill (issue 11, item 4): a path that is neither
    a file nor a directory is also reported to exist when ``filename + ".index"`` is a file,
    that is when it is the prefix of a V2 checkpoint bundle (``model.ckpt-100`` for
    ``model.ckpt-100.index`` and ``model.ckpt-100.data-00000-of-00001``). TensorFlow >= 0.12
    answers False for such a prefix, so TF 0.x programs that test
    ``tf.gfile.Exists(ckpt.model_checkpoint_path)`` before restoring silently skip the
    restore on TF; on rill they restore. Nothing else changes: only the ``.index`` of a
    checkpoint bundle counts, only for this v1 name (``io_gfile.exists``, tf.io.gfile's, is
    TensorFlow's plain answer)."""
    p = _path(filename)
    return _os.path.exists(p) or _is_checkpoint_prefix(p)


def _exists_plain(path):
    return _os.path.exists(_path(path))


def IsDirectory(dirname):
    """Whether dirname is a directory."""
    return _os.path.isdir(_path(dirname))


def ListDirectory(dirname):
    """The names (not paths) in directory dirname, without '.' and '..'; NotFoundError if it
    is not a directory."""
    p = _path(dirname)
    if not _os.path.isdir(p):
        raise _error(NotFoundError, f"Could not find directory {p}")
    try:
        return sorted(_os.listdir(p))
    except OSError as e:
        raise _os_error(e, p) from None


def MakeDirs(dirname):
    """Makes dirname and its missing parents; nothing if it is a directory already.
    FailedPreconditionError when a component is a file."""
    p = _path(dirname)
    try:
        _os.makedirs(p, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        q = "/" if p.startswith("/") else ""
        for part in p.split("/"):
            if not part:
                continue
            q = _os.path.join(q, part) if q else part
            if _os.path.exists(q) and not _os.path.isdir(q):
                raise _error(FailedPreconditionError, f"{q} is not a directory") from None
        raise _error(FailedPreconditionError, f"{p} is not a directory") from None
    except OSError as e:
        raise _os_error(e, p) from None


def MkDir(dirname):
    """Makes directory dirname, whose parent must exist (NotFoundError otherwise). As TF 2.x's
    tf.compat.v1.gfile.MkDir, an existing path is not an error."""
    p = _path(dirname)
    try:
        _os.mkdir(p)
    except FileExistsError:
        pass
    except OSError as e:
        raise _os_error(e, p) from None


def Remove(filename):
    """Deletes file filename: NotFoundError if missing, FailedPreconditionError for a
    directory."""
    p = _path(filename)
    try:
        _os.remove(p)
    except OSError as e:
        raise _os_error(e, p) from None


def DeleteRecursively(dirname):
    """Deletes dirname and everything under it (or the file dirname); NotFoundError if
    missing."""
    p = _path(dirname)
    if not _os.path.lexists(p):
        raise _error(NotFoundError, f"{p} not found")
    try:
        if _os.path.isdir(p) and not _os.path.islink(p):
            _shutil.rmtree(p)
        else:
            _os.remove(p)
    except OSError as e:
        raise _os_error(e, getattr(e, "filename", None) or p) from None


def Rename(oldname, newname, overwrite=False):
    """Renames (moves) oldname to newname; AlreadyExistsError if newname exists and not
    overwrite."""
    o, n = _path(oldname), _path(newname)
    if not overwrite and _os.path.exists(n):
        raise _error(AlreadyExistsError, "file already exists")
    try:
        _os.rename(o, n)
    except OSError as e:
        raise _os_error(e, o) from None


def Copy(oldpath, newpath, overwrite=False):
    """Copies file oldpath to newpath; AlreadyExistsError if newpath exists and not
    overwrite."""
    o, n = _path(oldpath), _path(newpath)
    if not overwrite and _os.path.exists(n):
        raise _error(AlreadyExistsError, "file already exists")
    try:
        _shutil.copyfile(o, n)
    except _shutil.SameFileError:
        pass
    except OSError as e:
        raise _os_error(e, n if e.filename == n else o) from None


def _has_magic(s):
    return any(c in s for c in "*?[")


def Glob(filename):
    """The paths that match pattern filename (``*``, ``?``, ``[...]`` within one path component,
    as TF's GetMatchingPaths: a leading dot is matched too), sorted; a pattern without wildcards
    gives itself if it exists. A relative pattern whose first component has a wildcard gives
    paths that start with ``./``, as TF's."""
    pattern = _path(filename)
    if not _has_magic(pattern):
        return [pattern] if _os.path.exists(pattern) else []
    parts = pattern.split("/")
    i = next(k for k, part in enumerate(parts) if _has_magic(part))
    base = "/".join(parts[:i]) or ("/" if pattern.startswith("/") else ".")
    if not _os.path.isdir(base):
        return []
    found = [base]
    for k, part in enumerate(parts[i:]):
        last = k == len(parts) - i - 1
        nxt = []
        for d in found:
            if not part:  # a trailing or doubled slash: directories only
                if _os.path.isdir(d):
                    nxt.append(d + "/" if last else d)
                continue
            if not _has_magic(part):
                c = _os.path.join(d, part)
                if _os.path.lexists(c):
                    nxt.append(c)
                continue
            try:
                names = _os.listdir(d)
            except OSError:
                continue
            for name in names:
                if _fnmatch.fnmatchcase(name, part):
                    nxt.append(d.rstrip("/") + "/" + name if d != "/" else "/" + name)
        found = nxt
    return sorted(found)


class FileStatistics:
    """What Stat returns: length (bytes), mtime_nsec, is_directory."""

    def __init__(self, length=None, mtime_nsec=None, is_directory=None):
        self.length = length
        self.mtime_nsec = mtime_nsec
        self.is_directory = is_directory

    def __repr__(self):
        return (f"FileStatistics(length={self.length}, mtime_nsec={self.mtime_nsec}, "
                f"is_directory={self.is_directory})")


def Stat(filename):
    """FileStatistics of filename; NotFoundError if missing."""
    p = _path(filename)
    try:
        st = _os.stat(p)
    except OSError as e:
        raise _os_error(e, p) from None
    return FileStatistics(st.st_size, st.st_mtime_ns, _stat.S_ISDIR(st.st_mode))


def _walk(top, topdown, onerror):
    top = _path(top)
    try:
        listing = ListDirectory(top)
    except NotFoundError as err:
        if onerror:
            onerror(err)
        return
    files, subdirs = [], []
    for item in listing:
        (subdirs if _os.path.isdir(_os.path.join(top, item)) else files).append(item)
    here = (top, subdirs, files)
    if topdown:
        yield here
    for subdir in subdirs:
        yield from _walk(_os.path.join(top, subdir), topdown, onerror)
    if not topdown:
        yield here


def Walk(top, in_order=True):
    """Yields (dirname, subdirectory names, file names) for top and every directory under it,
    top-down when in_order (the subdirectory list may be pruned in place), else bottom-up;
    nothing when top is not a directory."""
    return _walk(top, in_order, None)


_MODES = ("r", "w", "a", "r+", "w+", "a+")


class GFile:
    """A file, as TF's GFile (tf.gfile.GFile, tf.gfile.Open, tf.io.gfile.GFile)."""

    def __init__(self, name, mode="r"):
        self._name = name
        self._path = _path(name)
        self._mode = mode
        self._binary = "b" in mode
        m = mode.replace("b", "")
        if m not in _MODES:
            raise _error(InvalidArgumentError,
                         "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'")
        self._readable = m[0] == "r" or "+" in m
        self._writable = m[0] in "wa" or "+" in m
        self._pymode = {"r": "rb", "w": "wb", "a": "ab", "r+": "r+b", "w+": "w+b",
                        "a+": "a+b"}[m]
        self._f = None

    @property
    def name(self):
        return self._name

    @property
    def mode(self):
        return self._mode

    def _file(self):
        if self._f is None:
            try:
                self._f = open(self._path, self._pymode)
            except OSError as e:
                raise _os_error(e, self._path) from None
        return self._f

    def _for_reading(self):
        if not self._readable:
            raise _error(PermissionDeniedError, "File isn't open for reading")
        return self._file()

    def _out(self, data):
        return data if self._binary else data.decode("utf-8")

    def _complete_utf8(self, f, data):
        # text mode: a read of n bytes that ends inside a character reads the rest of it
        if self._binary or not data:
            return data
        k = len(data) - 1  # the last lead byte: back over at most 3 continuation bytes
        while k > 0 and len(data) - k < 4 and (data[k] & 0xC0) == 0x80:
            k -= 1
        lead = data[k]
        if lead < 0xC0:  # ASCII, or no lead byte in view
            return data
        need = 4 if lead >= 0xF0 else 3 if lead >= 0xE0 else 2
        missing = need - (len(data) - k)
        return data + f.read(missing) if missing > 0 else data

    def read(self, n=-1):
        """Reads n bytes (all if n is -1 or None): str in text mode, bytes in binary."""
        f = self._for_reading()
        if n is None or n < 0:
            return self._out(f.read())
        return self._out(self._complete_utf8(f, f.read(n)))

    def readline(self):
        return self._out(self._for_reading().readline())

    def readlines(self):
        return [self._out(line) for line in self._for_reading().readlines()]

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def write(self, file_content):
        """Writes str (as UTF-8) or bytes, in any mode."""
        if not self._writable:
            raise _error(PermissionDeniedError, "File isn't open for writing")
        if isinstance(file_content, str):
            data = file_content.encode("utf-8")
        elif isinstance(file_content, (bytes, bytearray, memoryview)):
            data = bytes(file_content)
        else:
            raise TypeError(f"Expected binary or unicode string, got {file_content!r}")
        self._file().write(data)

    def tell(self):
        return self._file().tell()

    def seek(self, offset=None, whence=0, position=None):
        """Moves to offset (bytes) from the start (whence 0), the current position (1) or the
        end (2); position is TF's deprecated name for offset."""
        if position is not None:
            if offset is not None:
                raise TypeError("seek() got multiple values for argument 'offset'")
            offset = position
        self._file().seek(0 if offset is None else offset, whence)

    def size(self):
        if self._f is not None and self._writable:
            self._f.flush()
        return Stat(self._path).length

    def flush(self):
        if self._writable:
            self._file().flush()

    def close(self):
        if self._f is not None:
            f, self._f = self._f, None
            f.close()

    def seekable(self):
        return True

    def readable(self):
        return self._readable

    def writable(self):
        return self._writable

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return f"<tf.gfile.GFile name={self._name!r} mode={self._mode!r}>"


Open = GFile

_fast_warned = []


class FastGFile(GFile):
    """Deprecated in TF for GFile, which it is (one warning line per process)."""

    def __init__(self, name, mode="r"):
        if not _fast_warned:
            _fast_warned.append(True)
            _sys.stderr.write("WARNING: tf.gfile.FastGFile is deprecated and will be removed in "
                              "a future version: use tf.gfile.GFile.\n")
        super().__init__(name, mode)


# tf.io.gfile's names (TF >= 1.13), for a tf.io namespace: tf.io.gfile = gfile.io_gfile

def _join(path, *paths):
    return _os.path.join(path, *paths)


def _walk_v2(top, topdown=True, onerror=None):
    return _walk(top, topdown, onerror)


io_gfile = _types.ModuleType("rill.compat.v1.io.gfile", "tf.io.gfile: TF 2.x's names for "
                             "tf.gfile (exists is TensorFlow's plain answer).")
for _k, _v in {"GFile": GFile, "copy": Copy, "exists": _exists_plain, "glob": Glob,
               "isdir": IsDirectory, "join": _join, "listdir": ListDirectory,
               "makedirs": MakeDirs, "mkdir": MkDir, "remove": Remove, "rename": Rename,
               "rmtree": DeleteRecursively, "stat": Stat, "walk": _walk_v2,
               "get_registered_schemes": lambda: ["", "file"]}.items():
    setattr(io_gfile, _k, _v)
del _k, _v, _cls, _names, _n
