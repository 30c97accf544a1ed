"""Settings xlac has no use for: accepted as hints, each with one warning naming it.

onnxruntime programs carry settings for onnxruntime's own machinery (thread
pools between ops, memory arenas, session config entries, provider options).
xlac accepts them so that such a program runs as it is, and says once per
process, for each setting and value, that it has no effect and why
(logger "xlac", warning level: log_severity_level 3 or 4 silences it).

Strict mode refuses them instead (XlacUsageError naming every one): turn it
on with xlac.set_strict(True), or XLAC_STRICT=1 in the environment (read
once, here, when xlac is imported).
"""
import enum
import os
import threading

from . import errors
from ._log import LOGGER

_STRICT_WORDS = {"": False, "0": False, "1": True}
_strict = os.environ.get("XLAC_STRICT", "") == "1"
_strict_error = None if os.environ.get("XLAC_STRICT", "") in _STRICT_WORDS else \
    "XLAC_STRICT=%s: expected 0 or 1" % os.environ.get("XLAC_STRICT")
_said = set()
_lock = threading.Lock()

STRICT_HOW = "strict mode refuses it: xlac.set_strict(True) or XLAC_STRICT=1"


def set_strict(on=True):
    """Strict mode: settings xlac has no use for are refused (XlacUsageError), not warned about."""
    global _strict
    _strict = bool(on)


def is_strict():
    if _strict_error:
        raise errors.XlacUsageError(_strict_error)
    return _strict


def accept(hints, where):
    """
    hints: [(name, value, why)], settings xlac has no use for, of one object (where: "SessionOptions",
    "RunOptions"; None: the names say where). Strict: one XlacUsageError naming them all. Else one warning for each that this
    process has not warned about with this value yet.
    """
    if not hints:
        return
    if is_strict():
        raise errors.XlacUsageError("strict mode (xlac.set_strict): %s" % "; ".join(
            "%s=%s has no effect in xlac: %s" % (_label(where, n), _show(v), why) for n, v, why in hints))
    for name, value, why in hints:
        key = (_label(where, name), repr(value))
        with _lock:
            if key in _said:
                continue
            _said.add(key)
        LOGGER.warning("%s=%s is accepted as a hint and has no effect: %s (%s)",
                       _label(where, name), _show(value), why, STRICT_HOW)


def _show(value):
    return value.name if isinstance(value, enum.Enum) else repr(value)


def _label(where, name):
    return "%s.%s" % (where, name) if where else name


def one(where, name, value, why):
    accept([(name, value, why)], where)
