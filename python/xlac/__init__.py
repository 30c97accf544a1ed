"""xlac for Python: run ONNX models and .xg graphs op by op, or clustered and
compiled in this process, with onnxruntime's API.

    import numpy as np, xlac
    sess = xlac.InferenceSession("model.onnx")           # clustered: ORT_ENABLE_ALL
    (y,) = sess.run(None, {"x": x})
    print(xlac.stats())

See docs/python.md.
"""
import atexit
import os
import re
import sys

from . import _lib, _log, hints
from .errors import (XlacCompileError, XlacDeviceError, XlacError, XlacGraphError,
                     XlacIOError, XlacMemoryError, XlacParseError, XlacRuntimeError,
                     XlacUnsupportedError, XlacUsageError)
from ._meta import ModelMetadata
from .iobinding import IOBinding, OrtValue
from .options import (ExecutionMode, ExecutionOrder, GraphOptimizationLevel, RunOptions,
                      SessionOptions)
from .session import InferenceSession, NodeArg
from ._ort_members import (OrtAllocatorType, OrtDeviceMemoryType, OrtDeviceVendorId,
                           OrtMemoryInfoDeviceType, OrtMemType, OrtSparseFormat)
from . import _ort_members
from .hints import set_strict

__version__ = "0.1.0"
version = __version__
package_name = "xlac"
cuda_version = ""

# onnxruntime's names xlac refuses: each raises XlacUnsupportedError saying why (_ort_members.py)
globals().update(_ort_members.refused_members())
atexit.register(_log.detach)

__all__ = ["InferenceSession", "NodeArg", "SessionOptions", "RunOptions", "GraphOptimizationLevel",
           "ExecutionMode", "ExecutionOrder", "IOBinding", "OrtValue", "ModelMetadata",
           "get_available_providers", "get_all_providers", "get_device", "get_version_string",
           "get_build_info", "set_default_logger_severity", "set_default_logger_callback",
           "set_strict", "preload_library", "stats", "XlacError", "XlacUsageError",
           "XlacParseError", "XlacGraphError", "XlacIOError", "XlacMemoryError",
           "XlacUnsupportedError", "XlacDeviceError", "XlacRuntimeError", "XlacCompileError"]


def get_available_providers():
    """onnxruntime's list: CUDAExecutionProvider first when this build has CUDA and finds a GPU."""
    return (["CUDAExecutionProvider"] if _lib.has_gpu() else []) + ["CPUExecutionProvider"]


def get_all_providers():
    """The providers xlac knows (onnxruntime lists every provider it was written for)."""
    return ["CUDAExecutionProvider", "CPUExecutionProvider"]


def get_device():
    return "GPU" if _lib.has_gpu() else "CPU"


def get_version_string():
    return __version__


def get_build_info():
    return "xlac %s, libraries in %s, devices: %s" % (__version__, _lib.lib_dir(), get_device())


def has_collective_ops():
    """False: xlac's collectives are its own graph ops, not onnxruntime's (docs/distributed.md)."""
    return False


def print_debug_info():
    print("xlac %s (%s)" % (__version__, os.path.dirname(os.path.abspath(__file__))))
    print("libraries: %s" % _lib.lib_dir())
    print("available providers: %s" % ", ".join(get_available_providers()))


def set_default_logger_severity(severity):
    """onnxruntime's 0 verbose, 1 info, 2 warning, 3 error, 4 fatal: the process's log level (the
    xlac logger's and the plugin's, as XLAC_LOG=debug|info|warning|error sets it)."""
    _log.set_severity(severity, "set_default_logger_severity")


def set_default_logger_callback(callback, severity=2):
    """Every xlac line to callback(severity, category, logid, code_location, message) instead of
    stderr, at severity's level; None restores stderr (the level stays)."""
    if callback is not None:
        _log.set_severity(severity, "set_default_logger_callback(severity)")
    _log.set_callback(callback)


def set_default_logger_verbosity(level):
    hints.one(None, "set_default_logger_verbosity", level, "xlac has no verbose log levels beyond debug")


def set_seed(seed):
    hints.one(None, "set_seed", seed, "xlac's random ops take their seeds from the graph")


def set_global_thread_pool_sizes(intra_op_num_threads=0, inter_op_num_threads=0):
    hints.one(None, "set_global_thread_pool_sizes", (intra_op_num_threads, inter_op_num_threads),
              "xlac runs on one OpenMP pool: set SessionOptions.intra_op_num_threads per session")


def preload_dlls(cuda=True, cudnn=True, msvc=True, directory=None):
    hints.one(None, "preload_dlls", (cuda, cudnn, msvc, directory),
              "xlac's CUDA device loads the libraries it needs itself")


def disable_telemetry_events():
    """Nothing to do: xlac sends no telemetry."""


def enable_telemetry_events():
    hints.one(None, "enable_telemetry_events", True, "xlac sends no telemetry")


def preload_library():
    """The path of the preload library, libxlac.so (LD_PRELOAD=... XLAC_AUTO_JIT=2 any-program)."""
    return _lib.plugin_path()


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
