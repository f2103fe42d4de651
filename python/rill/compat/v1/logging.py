"""tf.logging (TF 1.x) over Python's logging: the logger "tensorflow", written to stderr as TF's
absl-style "INFO:tensorflow:message" lines, WARN by default."""
import logging as _logging
import sys as _sys

__all__ = ["DEBUG", "INFO", "WARN", "ERROR", "FATAL", "set_verbosity", "get_verbosity", "debug",
           "info", "warn", "warning", "error", "fatal", "log", "log_every_n", "log_first_n",
           "log_if", "vlog", "flush", "TaskLevelStatusMessage"]

DEBUG, INFO, WARN, ERROR, FATAL = (_logging.DEBUG, _logging.INFO, _logging.WARN, _logging.ERROR,
                                   _logging.FATAL)

_logger = _logging.getLogger("tensorflow")
if not _logger.handlers:
    _h = _logging.StreamHandler(_sys.stderr)
    _h.setFormatter(_logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    _logger.addHandler(_h)
    _logger.propagate = False
    _logger.setLevel(WARN)


def get_logger():
    return _logger


def set_verbosity(v):
    _logger.setLevel(v)


def get_verbosity():
    return _logger.getEffectiveLevel()


def log(level, msg, *args, **kwargs):
    _logger.log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs):
    _logger.debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs):
    _logger.info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs):
    _logger.warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs):
    _logger.error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs):
    _logger.fatal(msg, *args, **kwargs)


def vlog(level, msg, *args, **kwargs):
    _logger.log(level, msg, *args, **kwargs)


def flush():
    for h in _logger.handlers:
        h.flush()


_counts = {}


def _caller_key():
    f = _sys._getframe(2)
    return (f.f_code.co_filename, f.f_lineno)


def log_every_n(level, msg, n, *args):
    """Logs the 1st, (n+1)th, (2n+1)th ... time this line runs."""
    key = _caller_key()
    c = _counts.get(key, 0)
    _counts[key] = c + 1
    if c % max(int(n), 1) == 0:
        _logger.log(level, msg, *args)


def log_first_n(level, msg, n, *args):
    key = _caller_key()
    c = _counts.get(key, 0)
    _counts[key] = c + 1
    if c < n:
        _logger.log(level, msg, *args)


def log_if(level, msg, condition, *args):
    if condition:
        _logger.log(level, msg, *args)


def TaskLevelStatusMessage(msg):
    error(msg)
