"""xlac for Python: run ONNX models and .xg graphs op by op, or clustered and
compiled in this process, with onnxruntime's API.

    import numpy as np, xlac
    sess = xlac.InferenceSession("model.onnx")           # clustered: ORT_ENABLE_ALL
    (y,) = sess.run(None, {"x": x})
    print(xlac.stats())

See docs/python.md.
"""
import re

from . import _lib
from .errors import (XlacCompileError, XlacDeviceError, XlacError, XlacGraphError,
                     XlacIOError, XlacMemoryError, XlacParseError, XlacRuntimeError,
                     XlacUnsupportedError, XlacUsageError)
from ._meta import ModelMetadata
from .iobinding import IOBinding, OrtValue
from .options import (ExecutionMode, ExecutionOrder, GraphOptimizationLevel, RunOptions,
                      SessionOptions)
from .session import InferenceSession, NodeArg

__version__ = "0.1.0"

__all__ = ["InferenceSession", "NodeArg", "SessionOptions", "RunOptions", "GraphOptimizationLevel",
           "ExecutionMode", "ExecutionOrder", "IOBinding", "OrtValue", "ModelMetadata",
           "get_available_providers", "get_device", "stats", "XlacError", "XlacUsageError",
           "XlacParseError", "XlacGraphError", "XlacIOError", "XlacMemoryError",
           "XlacUnsupportedError", "XlacDeviceError", "XlacRuntimeError", "XlacCompileError"]


def get_available_providers():
    """onnxruntime's list: CUDAExecutionProvider first when this build has CUDA and finds a GPU."""
    return (["CUDAExecutionProvider"] if _lib.has_gpu() else []) + ["CPUExecutionProvider"]


def get_device():
    return "GPU" if _lib.has_gpu() else "CPU"


def stats():
    """
    The plugin's counters in this process, as --stats prints them: a dict with clusters,
    launches, compiles, cache_hits, disk_hits, fallbacks (ints), compile_ms and
    disk_load_ms (floats). Empty when no session asked for clustering (no plugin loaded).
    """
    text = _lib.stats_text()
    if text is None:
        return {}
    out = {}
    for key, value in re.findall(r"(\w+)=([-0-9.]+)", text):
        out[key] = float(value) if "." in value or key.endswith("_ms") else int(value)
    return out
