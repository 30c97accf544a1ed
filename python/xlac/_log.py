"""xlac's log in Python: the logger "xlac", at one level for the process.

Every message xlac gives in Python goes to logging.getLogger("xlac"): the
package's own (a setting accepted as a hint, a provider that falls back) and
the C plugin's (a cluster that failed to compile, and at info one line per
compile and per fallback), which reach it through a callback the plugin
calls instead of writing to stderr (xlac_log_configure, plugin/log.c).

The level is the process's, as onnxruntime's default logger's is:
  - XLAC_LOG=error|warning|info|debug, the variable the plugin reads
    (plugin/flags.c); the package reads it once, here, for its own
    messages before the plugin is loaded;
  - xlac.set_default_logger_severity(n) and a session's
    SessionOptions.log_severity_level (n >= 0, from that session's creation
    on): onnxruntime's severities 0 verbose, 1 info, 2 warning, 3 error,
    4 fatal are debug, info, warning, error, and error without even xlac's
    error lines.
A program that configured logging (a handler on the root logger) gets the
lines there; otherwise they are written to stderr as the C library writes
them ("xlac: warning: ...").
"""
import ctypes
import logging
import os
import sys
import threading

LOGGER = logging.getLogger("xlac")

# logging level -> the plugin's level (plugin/log.c: 0 error, 1 warning, 2 info, 3 debug)
_WORDS = {"error": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG}
_C_LEVEL = {logging.CRITICAL: 0, logging.ERROR: 0, logging.WARNING: 1, logging.INFO: 2, logging.DEBUG: 3}
_FROM_C = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO, 3: logging.DEBUG}
# onnxruntime's severities
SEVERITY = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR, 4: logging.CRITICAL}

_lock = threading.Lock()
_plugin = None     # the loaded libxlac.so, once attach() was called
_sink = None       # the ctypes callback the plugin calls (kept alive here)
_callback = None   # set_default_logger_callback's function, or None
_env_error = None  # a bad XLAC_LOG: raised by check_env()


class _Stderr(logging.Handler):
    """'xlac: LEVEL: message' on stderr, as the C library writes it, unless the program
    configured logging itself (a handler on the root logger)."""

    def emit(self, record):
        if logging.getLogger().handlers:
            return
        try:
            name = "error" if record.levelno >= logging.ERROR else record.levelname.lower()
            sys.stderr.write("xlac: %s: %s\n" % (name, record.getMessage()))
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - a log line must never fail the program
            self.handleError(record)


class _Callback(logging.Handler):
    """set_default_logger_callback's function: callback(severity, category, logid, code_location, message)."""

    def emit(self, record):
        cb = _callback
        if cb is None:
            return
        severity = {logging.DEBUG: 0, logging.INFO: 1, logging.WARNING: 2, logging.ERROR: 3}.get(
            record.levelno, 4 if record.levelno > logging.ERROR else 0)
        cb(severity, "xlac", getattr(record, "logid", ""), "", record.getMessage())


def _initial_level():
    global _env_error
    word = os.environ.get("XLAC_LOG", "")
    if not word:
        return logging.WARNING
    if word not in _WORDS:
        _env_error = "XLAC_LOG=%s: expected error, warning, info or debug" % word
        return logging.WARNING
    return _WORDS[word]


LOGGER.setLevel(_initial_level())
LOGGER.propagate = True
_STDERR = _Stderr()
LOGGER.addHandler(_STDERR)


def check_env():
    """Raises XlacUsageError for a bad XLAC_LOG (the plugin would refuse it too)."""
    if _env_error:
        from . import errors
        raise errors.XlacUsageError(_env_error)


def level():
    return LOGGER.level


def set_level(lv):
    """The process's level: the logger's and the plugin's."""
    with _lock:
        LOGGER.setLevel(lv)
        _push()


def set_severity(severity, what):
    """onnxruntime's severity 0..4 as the process's level; what names the setting in an error."""
    if isinstance(severity, bool) or not isinstance(severity, int) or severity not in SEVERITY:
        from . import errors
        raise errors.XlacUsageError("%s=%r: expected 0 (verbose), 1 (info), 2 (warning), 3 (error) or "
                                    "4 (fatal)" % (what, severity))
    set_level(SEVERITY[severity])


def set_callback(fn):
    """Routes every line to fn(severity, category, logid, code_location, message) instead of stderr."""
    global _callback
    with _lock:
        _callback = fn
        if fn is None:
            for h in [h for h in LOGGER.handlers if isinstance(h, _Callback)]:
                LOGGER.removeHandler(h)
            if _STDERR not in LOGGER.handlers:
                LOGGER.addHandler(_STDERR)
        else:
            if _STDERR in LOGGER.handlers:
                LOGGER.removeHandler(_STDERR)
            if not any(isinstance(h, _Callback) for h in LOGGER.handlers):
                LOGGER.addHandler(_Callback())


def _from_c(c_level, text):
    try:
        LOGGER.log(_FROM_C.get(c_level, logging.WARNING), "%s", text.decode("utf-8", errors="replace"))
    except Exception:  # noqa: BLE001 - never raise into C
        pass


_SINK_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p)


def _push():
    """Under _lock: the plugin's level follows the logger's."""
    if _plugin is not None:
        _plugin.xlac_log_configure(_C_LEVEL.get(LOGGER.level, 1 if LOGGER.level > 20 else 3), _sink)


def attach(plugin):
    """The plugin is loaded: its lines come here, at the process's level. Where XLAC_LOG was set
    the plugin has read it (at the same level as here, unless a severity was set since)."""
    global _plugin, _sink
    fn = getattr(plugin, "xlac_log_configure", None)
    if fn is None:  # an older plugin: it writes to stderr itself
        return
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_int, _SINK_TYPE]
    with _lock:
        _sink = _SINK_TYPE(_from_c)
        _plugin = plugin
        _push()


def detach():
    """At exit: the plugin writes to stderr again (Python may be gone when its destructor runs)."""
    global _plugin
    with _lock:
        if _plugin is not None:
            _plugin.xlac_log_configure(-1, _SINK_TYPE())
        _plugin = None
