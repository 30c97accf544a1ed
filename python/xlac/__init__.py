"""xlac for Python: run .xg graphs op by op, or clustered and compiled in this
process, with onnxruntime's calling convention.

    import numpy as np, xlac
    sess = xlac.InferenceSession("graph.xg", auto_jit=2)
    (s,) = sess.run(None, {"x": x, "y": y, "z": z})
    print(xlac.stats())

See docs/python.md.
"""
import re

from . import _lib
from .errors import (XlacCompileError, XlacDeviceError, XlacError, XlacGraphError,
                     XlacIOError, XlacMemoryError, XlacParseError, XlacRuntimeError,
                     XlacUnsupportedError, XlacUsageError)
from .session import InferenceSession, NodeArg

__version__ = "0.1.0"

__all__ = ["InferenceSession", "NodeArg", "stats", "XlacError", "XlacUsageError",
           "XlacParseError", "XlacGraphError", "XlacIOError", "XlacMemoryError",
           "XlacUnsupportedError", "XlacDeviceError", "XlacRuntimeError", "XlacCompileError"]


def stats():
    """
    The plugin's counters in this process, as --stats prints them: a dict with clusters,
    launches, compiles, cache_hits, disk_hits, fallbacks (ints), compile_ms and
    disk_load_ms (floats). Empty when no session asked for auto_jit > 0 (no plugin loaded).
    """
    text = _lib.stats_text()
    if text is None:
        return {}
    out = {}
    for key, value in re.findall(r"(\w+)=([-0-9.]+)", text):
        out[key] = float(value) if "." in value or key.endswith("_ms") else int(value)
    return out
