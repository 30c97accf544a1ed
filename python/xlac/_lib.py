"""Finds and loads the C libraries, declares the C API's signatures, and
loads the plugin (libxlac.so) into this process when a session asks for
clustering.

Libraries: $XLAC_LIB_DIR, else build/lib of the repository the package was
installed from. They are built with cmake, never by this package.
"""
import ctypes
import os
import subprocess
import sys
import threading

import numpy as np

from . import errors

_P = ctypes.c_void_p
_I = ctypes.c_int
_I64 = ctypes.c_int64
_S = ctypes.c_char_p
_SZ = ctypes.c_size_t

# name: (restype, argtypes) of every capi.h function used here
_SIGNATURES = {
    "xe_capi_open": (_I, [_S, _S, ctypes.POINTER(_P), _S, _SZ]),
    "xe_capi_close": (None, [_P]),
    "xe_capi_count": (_I, [_P, _I]),
    "xe_capi_name": (_S, [_P, _I, _I]),
    "xe_capi_dtype": (_I, [_P, _I, _I]),
    "xe_capi_rank": (_I, [_P, _I, _I]),
    "xe_capi_dim": (_I64, [_P, _I, _I, _I]),
    "xe_capi_run": (_I, [_P, ctypes.POINTER(_P), ctypes.POINTER(_I), ctypes.POINTER(_I),
                         ctypes.POINTER(_I64), _S, _SZ]),
    "xe_capi_result_dtype": (_I, [_P, _I]),
    "xe_capi_result_rank": (_I, [_P, _I]),
    "xe_capi_result_dim": (_I64, [_P, _I, _I]),
    "xe_capi_result_data": (_P, [_P, _I]),
    "xe_capi_result_nbytes": (_SZ, [_P, _I]),
    "xe_capi_result_take": (_P, [_P, _I]),
    "xe_capi_tensor_free": (None, [_P]),
    "xe_capi_clear": (None, [_P]),
    "xe_capi_dtype_count": (_I, []),
    "xe_capi_dtype_name": (_S, [_I]),
    "xe_capi_code_name": (_S, [_I]),
}

# numpy dtype of each xlac dtype name
_NUMPY = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32,
          "i64": np.int64, "bool": np.bool_}

_lock = threading.Lock()
_exe = None     # the loaded libxlac_executor.so
_plugin = None  # the loaded libxlac.so
_plugin_config = None  # (auto_jit, flags) it was loaded with


def lib_dir():
    """Where the C libraries are: $XLAC_LIB_DIR, else the repository's build/lib."""
    env = os.environ.get("XLAC_LIB_DIR")
    if env:
        return env
    try:
        from ._repo import REPO_ROOT
    except ImportError:  # running from the source tree, not installed
        REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(REPO_ROOT, "build", "lib")


def _path(name):
    p = os.path.join(lib_dir(), name)
    if not os.path.exists(p):
        raise errors.XlacIOError(
            "%s not found in %s: build the C libraries (cmake -B build && cmake --build build) "
            "or set XLAC_LIB_DIR to the folder that holds them" % (name, lib_dir()))
    return p


def executor():
    """libxlac_executor.so, loaded once (RTLD_GLOBAL: the plugin and generated code share it)."""
    global _exe
    with _lock:
        if _exe is None:
            # as xlac-run does: OpenMP threads that spin collapse on a busy machine; libgomp
            # reads this when it loads, just below
            os.environ.setdefault("OMP_WAIT_POLICY", "passive")
            lib = ctypes.CDLL(_path("libxlac_executor.so"), mode=ctypes.RTLD_GLOBAL)
            for name, (res, args) in _SIGNATURES.items():
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = res, args
            _exe = lib
        return _exe


def dtype_names():
    """xlac dtype code -> name ("f32", ...), from the C library."""
    lib = executor()
    return [lib.xe_capi_dtype_name(k).decode() for k in range(lib.xe_capi_dtype_count())]


def numpy_dtype(name):
    return np.dtype(_NUMPY[name])


def raise_for(code, message):
    """Raises the XlacError subclass of C code `code` with the C message."""
    name = executor().xe_capi_code_name(code).decode()
    raise errors.BY_NAME.get(name, errors.XlacError)(message, code)


def _check_flags(plugin, auto_jit, flags):
    """
    The plugin's constructor ends the process on a bad flag (exit 2) or on --help
    (exit 0): try it in a child first, so that here it is an exception.
    """
    env = dict(os.environ, XLAC_AUTO_JIT=str(auto_jit), XLAC_FLAGS=flags,
               LD_LIBRARY_PATH=lib_dir() + os.pathsep + os.environ.get("LD_LIBRARY_PATH", ""))
    code = "import ctypes, sys; ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)"
    r = subprocess.run([sys.executable, "-c", code, plugin], env=env, capture_output=True,
                       text=True, check=False)
    if r.returncode != 0 or r.stdout:
        text = (r.stderr.strip() or r.stdout.strip() or "exit status %d" % r.returncode)
        if text.startswith("xlac: error: "):
            text = text[len("xlac: error: "):]
        raise errors.XlacUsageError("XLAC_AUTO_JIT=%s XLAC_FLAGS=%r: %s" % (auto_jit, flags, text))


def _normalize(auto_jit, flags):
    return int(auto_jit), " ".join((flags or "").split())


def ensure_plugin(auto_jit, flags):
    """
    Loads libxlac.so with XLAC_AUTO_JIT=auto_jit and XLAC_FLAGS=flags (once per process:
    its constructor reads them at load); a later session must ask for the same.
    auto_jit=0 without the plugin loaded does nothing.
    """
    global _plugin, _plugin_config
    want = _normalize(auto_jit, flags)
    executor()
    with _lock:
        if _plugin is None:
            _plugin, _plugin_config = _preloaded()
        if _plugin is None and want[0] == 0:
            return
        if _plugin is not None:
            if want != _plugin_config:
                raise errors.XlacUsageError(
                    "libxlac.so is already loaded in this process with auto_jit=%d flags=%r; "
                    "a session cannot ask for auto_jit=%d flags=%r (the plugin is configured "
                    "once per process: use a subprocess)" % (*_plugin_config, *want))
            return
        _plugin, _plugin_config = _load_plugin(_path("libxlac.so"), want)


def _preloaded():
    """The plugin and its configuration when the process already has it (LD_PRELOAD)."""
    path = os.path.join(lib_dir(), "libxlac.so")
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL | os.RTLD_NOLOAD)
    except OSError:
        return None, None
    # it read the environment when the process started
    return _declare_plugin(lib), _normalize(os.environ.get("XLAC_AUTO_JIT") or 0,
                                            os.environ.get("XLAC_FLAGS", ""))


def _load_plugin(path, want):
    _check_flags(path, *want)
    saved = {k: os.environ.get(k) for k in ("XLAC_AUTO_JIT", "XLAC_FLAGS")}
    os.environ["XLAC_AUTO_JIT"], os.environ["XLAC_FLAGS"] = str(want[0]), want[1]
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    finally:  # read at load; do not leak into child processes
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return _declare_plugin(lib), want


def _declare_plugin(lib):
    lib.xlac_stats_text.restype = _SZ
    lib.xlac_stats_text.argtypes = [_S, _SZ]
    return lib


def plugin_config():
    """(auto_jit, flags) the plugin was loaded with, or None."""
    return _plugin_config


def stats_text():
    """The plugin's --stats lines, or None when it is not loaded."""
    if _plugin is None:
        return None
    buf = ctypes.create_string_buffer(4096)
    _plugin.xlac_stats_text(buf, len(buf))
    return buf.value.decode()
