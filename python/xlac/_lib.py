"""Finds and loads the C libraries, declares the C API's signatures, and
loads the plugin (libxlac.so) into this process when a session first asks
for clustering.

Libraries: $XLAC_LIB_DIR when set (a build to test), else the package's own
lib/ folder (pip installs them there, built by CMake through
scikit-build-core, with the third-party libraries they need beside them:
_load_bundled), else build/lib of the source tree this file is in.

The plugin is loaded once and configured per session: the process's
configuration is XLAC_AUTO_JIT and XLAC_FLAGS as the environment has them
(normally unset: op by op), and each session hands the plugin its own
(`--auto_jit=N` and its flags), see session.py.
"""
import ctypes
import os
import subprocess
import sys
import threading

import numpy as np

from . import _log, errors

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
    "xe_capi_open_with": (_I, [_S, _S, _S, _S, _I, ctypes.POINTER(_P), _S, _SZ]),
    "xe_capi_open_pinned": (_I, [_S, _S, _S, _S, _I, _I, ctypes.POINTER(_I), ctypes.POINTER(_S),
                                 ctypes.POINTER(_I64), ctypes.POINTER(_P), _S, _SZ]),
    "xe_capi_run_into": (_I, [_P, ctypes.POINTER(_P), ctypes.POINTER(_I), ctypes.POINTER(_I),
                              ctypes.POINTER(_I64), ctypes.POINTER(_P), _S, _SZ]),
    "xe_capi_tensor_dtype": (_I, [_P]),
    "xe_capi_tensor_rank": (_I, [_P]),
    "xe_capi_tensor_dim": (_I64, [_P, _I]),
    "xe_capi_tensor_data": (_P, [_P]),
    "xe_capi_tensor_nbytes": (_SZ, [_P]),
    "xe_capi_tensor_exclusive": (_I, [_P]),
    "xe_capi_write_graph": (_I, [_P, _S, _S, _SZ]),
    "xe_capi_end_profiling": (_I, [_P, _S, _SZ]),
    "xe_capi_devices": (_I, [_P]),
}

# numpy dtype of each xlac dtype name; numpy has no bfloat16: bf16 is ml_dtypes.bfloat16 where
# ml_dtypes is installed (onnx and jax bring it), else its bits as np.uint16
_NUMPY = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32,
          "i64": np.int64, "bool": np.bool_, "u8": np.uint8, "i8": np.int8, "i16": np.int16,
          "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "bf16": np.uint16,
          # float8: its bits without ml_dtypes; i4 i2 u4 u2: one value per byte, as xlac holds them
          "f8e4m3fn": np.uint8, "f8e4m3fnuz": np.uint8, "f8e5m2": np.uint8, "f8e5m2fnuz": np.uint8,
          "i4": np.int8, "u4": np.uint8, "i2": np.int8, "u2": np.uint8, "f4e2m1": np.uint8, "f8e8m0": np.uint8}
try:
    import ml_dtypes
    _NUMPY["bf16"] = ml_dtypes.bfloat16
    _NUMPY.update({"f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
                   "f8e5m2": ml_dtypes.float8_e5m2, "f8e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
                   "f4e2m1": ml_dtypes.float4_e2m1fn, "f8e8m0": ml_dtypes.float8_e8m0fnu})
except ImportError:  # pragma: no cover - depends on the environment
    pass

_lock = threading.Lock()
_exe = None     # the loaded libxlac_executor.so
_plugin = None  # the loaded libxlac.so
_attached = False  # its log comes to _log.py


def lib_dir():
    """Where the C libraries are: $XLAC_LIB_DIR, else the package's lib/, else the source tree's build/lib."""
    env = os.environ.get("XLAC_LIB_DIR")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    inside = os.path.join(here, "lib")
    if os.path.exists(os.path.join(inside, "libxlac_executor.so")):
        return inside
    return os.path.join(os.path.dirname(os.path.dirname(here)), "build", "lib")


def _path(name):
    p = os.path.join(lib_dir(), name)
    if not os.path.exists(p):
        raise errors.XlacIOError(
            "%s not found in %s: install the package with pip (pip install ./python builds them), "
            "or build them (cmake -B build && cmake --build build), or set XLAC_LIB_DIR to their folder" % (name, lib_dir()))
    return p


def _load_bundled(folder):
    """
    Loads the third-party libraries a wheel carries in its lib/ (python/bundle_libs.cmake put
    them there: oneDNN, OpenBLAS, libgomp, ... and their own dependencies), by full path, with
    RTLD_GLOBAL, in bundled.txt's order: leaves first (libquadmath before libgfortran before
    libopenblas). Our libraries find them through their RUNPATH $ORIGIN, but RUNPATH is not
    transitive: libopenblas's own libgfortran, or libdnnl's libOpenCL, would be searched for
    in the machine's folders only. Once loaded, a library answers every later lookup of its
    SONAME (the name it is bundled under) in the process: libopenblas's libgfortran, and a
    compiled cluster's libgomp, are then these copies. No bundled.txt (a build tree, or
    XLAC_LIB_DIR): the machine's libraries, as the build linked them.
    """
    order = os.path.join(folder, "bundled.txt")
    if not os.path.exists(order):
        return
    with open(order, encoding="utf-8") as f:
        for name in f.read().split():
            ctypes.CDLL(os.path.join(folder, name), mode=ctypes.RTLD_GLOBAL)


def executor():
    """libxlac_executor.so, loaded once (RTLD_GLOBAL: the plugin and generated code share it)."""
    global _exe
    with _lock:
        if _exe is None:
            # as xlac-run does: OpenMP threads spin briefly between regions, then sleep (long
            # spins collapse on a busy machine), and OpenBLAS starts no pool of its own; libgomp
            # and OpenBLAS read these when they load, just below
            if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
                os.environ["GOMP_SPINCOUNT"] = "10000"
                os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
            path = _path("libxlac_executor.so")
            _load_bundled(os.path.dirname(path))
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
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


def _check_env(plugin):
    """
    The plugin's constructor ends the process on a bad XLAC_AUTO_JIT, XLAC_FLAGS or XLAC_LOG in the
    environment (exit 2) or on --help (exit 0): try it in a child first, so that here a bad value is
    an exception, and --help prints the flags (to stdout, as the plugin does) and is then left out
    of the XLAC_FLAGS the plugin reads here (returned: the words to load it with, or None to load
    it with the environment as it is). (LD_LIBRARY_PATH: the child finds a wheel's bundled
    libraries there, as _load_bundled does here.)
    """
    env = dict(os.environ, LD_LIBRARY_PATH=lib_dir() + os.pathsep + os.environ.get("LD_LIBRARY_PATH", ""))
    code = "import ctypes, sys; ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)"
    r = subprocess.run([sys.executable, "-c", code, plugin], env=env, capture_output=True,
                       text=True, check=False)
    if r.returncode == 0 and r.stdout:  # --help
        sys.stdout.write(r.stdout)
        sys.stdout.flush()
        return " ".join(w for w in os.environ.get("XLAC_FLAGS", "").split() if w not in ("--help", "--help=1",
                                                                                         "--help=true"))
    if r.returncode != 0:
        text = (r.stderr.strip() or "exit status %d" % r.returncode)
        if text.startswith("xlac: error: "):
            text = text[len("xlac: error: "):]
        raise errors.XlacUsageError("the environment's XLAC_AUTO_JIT=%r XLAC_FLAGS=%r XLAC_LOG=%r: %s" % (
            os.environ.get("XLAC_AUTO_JIT", ""), os.environ.get("XLAC_FLAGS", ""),
            os.environ.get("XLAC_LOG", ""), text))
    return None


def _load_plugin(path):
    """Loads libxlac.so; flags: the XLAC_FLAGS it is to read, when not the environment's (--help left
    out), set around the load and restored."""
    flags = _check_env(path)
    if flags is None:
        return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    saved = os.environ.get("XLAC_FLAGS")
    os.environ["XLAC_FLAGS"] = flags
    try:
        return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    finally:
        os.environ["XLAC_FLAGS"] = saved


def plugin_path():
    return _path("libxlac.so")


def session_config(auto_jit, flags):
    """The text a session hands the plugin: XLAC_FLAGS words over the process's configuration."""
    return " ".join(["--auto_jit=%d" % int(auto_jit)] + (flags or "").split())


def ensure_plugin(auto_jit):
    """
    Loads libxlac.so once, when a session first asks for auto_jit > 0 or gives flags (or finds it
    preloaded);
    returns whether it is loaded. Each session then hands it its own configuration.
    """
    global _plugin, _attached
    executor()
    with _lock:
        if _plugin is None:
            _plugin = _preloaded()
        if _plugin is None and auto_jit > 0:
            _plugin = _declare_plugin(_load_plugin(_path("libxlac.so")))
            _log.attach(_plugin)
        elif _plugin is not None and not _attached:
            _log.attach(_plugin)
        _attached = _plugin is not None
        return _plugin is not None


def _preloaded():
    """The plugin when the process already has it (LD_PRELOAD, or loaded by another copy)."""
    try:
        lib = ctypes.CDLL("libxlac.so", mode=ctypes.RTLD_GLOBAL | os.RTLD_NOLOAD)
    except OSError:
        return None
    return _declare_plugin(lib)


def _declare_plugin(lib):
    lib.xlac_stats_text.restype = _SZ
    lib.xlac_stats_text.argtypes = [_S, _SZ]
    return lib


def has_gpu():
    """Whether the executor finds a CUDA device (False in a build without CUDA)."""
    fn = executor().xe_gpu_available
    fn.restype, fn.argtypes = ctypes.c_bool, []
    return bool(fn())


def set_threads(n):
    """The calling thread's OpenMP team size for what it runs (0: leave as it is)."""
    if n <= 0:
        return
    lib = executor()
    for name in ("omp_set_num_threads", "openblas_set_num_threads"):
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype, fn.argtypes = None, [_I]
            fn(int(n))


def stats_text():
    """The plugin's --stats lines, or None when it is not loaded."""
    if _plugin is None:
        return None
    buf = ctypes.create_string_buffer(4096)
    _plugin.xlac_stats_text(buf, len(buf))
    return buf.value.decode()
