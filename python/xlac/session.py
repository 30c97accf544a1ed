"""InferenceSession: onnxruntime's InferenceSession over the C API (capi.h).

One configuration per session: each session hands the plugin its own
auto_jit level and flags (SessionOptions.graph_optimization_level, its
config entries, or xlac's keywords), so sessions with different settings
share one process, its thread pool and the compilation cache.

run() may be called from several threads at once: the C runs overlap (the
executor only reads the session's graph; a graph holding a random op runs
one call at a time so that each draws the next numbers), and close() waits
for the calls in progress before it frees the session.

Inputs that are C-contiguous numpy arrays of the declared dtype are handed
to C as they are (wrapped, not copied); others are made contiguous first. A
result whose buffer nothing else holds becomes a numpy array without a copy;
the others (an input returned as is, a constant) are copied.
"""
import ctypes
import os
import tempfile
import threading
import time

import numpy as np

from . import _lib, _log, _meta, _onnx_out, _profile, errors
from . import hints as hints_mod
from .iobinding import IOBinding, OrtValue
from .options import RunOptions, SessionOptions, _refused, auto_jit_of

# onnxruntime's type strings
_ORT_TYPE = {"f32": "tensor(float)", "f64": "tensor(double)", "f16": "tensor(float16)",
             "i32": "tensor(int32)", "i64": "tensor(int64)", "bool": "tensor(bool)",
             "u8": "tensor(uint8)", "i8": "tensor(int8)", "i16": "tensor(int16)",
             "u16": "tensor(uint16)", "u32": "tensor(uint32)", "u64": "tensor(uint64)",
             "bf16": "tensor(bfloat16)", "f8e4m3fn": "tensor(float8e4m3fn)",
             "f8e4m3fnuz": "tensor(float8e4m3fnuz)", "f8e5m2": "tensor(float8e5m2)",
             "f8e5m2fnuz": "tensor(float8e5m2fnuz)", "f8e8m0": "tensor(float8e8m0)",
             "f4e2m1": "tensor(float4e2m1)", "i4": "tensor(int4)", "u4": "tensor(uint4)",
             "i2": "tensor(int2)", "u2": "tensor(uint2)"}
_CPU, _CUDA = "CPUExecutionProvider", "CUDAExecutionProvider"
_BYTES_NAME = "<model bytes>"


class NodeArg:
    """One input or output: onnxruntime's .name, .type ("tensor(float)"), .shape (an int per known
    dim; an unknown one is the ONNX model's dim_param, 'batch', or None without one); xlac's .dtype
    (numpy) and .xlac_type ("f32")."""

    def __init__(self, name, dtype_name, shape):
        self.name = name
        self.xlac_type = dtype_name
        self.type = _ORT_TYPE[dtype_name]
        self.dtype = _lib.numpy_dtype(dtype_name)
        self.shape = shape

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


class _Owned:
    """Keeps a C tensor alive while the numpy array built on it lives."""

    def __init__(self, lib, handle, ptr, dtype, shape):
        self._lib, self._handle = lib, handle
        self.__array_interface__ = {"data": (ptr, False), "shape": tuple(shape),
                                    "typestr": dtype.str, "version": 3}

    def __del__(self):
        self._lib.xe_capi_tensor_free(self._handle)


def _provider_list(providers, provider_options):
    """[(name, options)] of onnxruntime's providers (names or (name, options) pairs) and its
    provider_options (one dict per provider, or None)."""
    if provider_options is not None:
        if providers is None or len(provider_options) != len(providers):
            raise errors.XlacUsageError("provider_options must have one dict per provider (%d providers, "
                                        "%d dicts)" % (len(providers or ()), len(provider_options)))
    out = []
    for k, p in enumerate(providers):
        name, opts = (p if isinstance(p, (tuple, list)) else (p, {}))
        opts = dict(opts or {})
        if provider_options is not None:
            opts.update(provider_options[k] or {})
        out.append((name, opts))
    return out


def _device_of(providers, provider_options, device, hints):
    """
    The xlac device of onnxruntime's providers. A provider xlac does not have is left out with a
    warning, as onnxruntime does, and the CPU runs what is left (strict mode refuses it); options
    xlac has no use for go into hints; device_id other than 0 is an error (xlac uses device 0).
    """
    if providers is None:
        if provider_options:
            raise errors.XlacUsageError("provider_options without providers")
        return device
    names = []
    for name, opts in _provider_list(providers, provider_options):
        if name not in (_CPU, _CUDA):
            if hints_mod.is_strict():
                raise errors.XlacUsageError("provider %r is not available in xlac (it has %s and %s)"
                                            % (name, _CUDA, _CPU))
            _log.LOGGER.warning("provider %r is not available in xlac (it has %s and %s): left out, as "
                                "onnxruntime does", name, _CUDA, _CPU)
            continue
        if str(opts.pop("device_id", 0)) != "0":
            raise errors.XlacUsageError("provider options of %s: device_id other than 0 is not supported "
                                        "(xlac uses device 0)" % name)
        hints.extend(("provider option %s: %s" % (name, k), v, "xlac's %s has no such option" % name)
                     for k, v in sorted(opts.items()))
        names.append(name)
    if not names:
        if providers:
            _log.LOGGER.warning("no provider xlac has was named: running on %s", _CPU)
        return "cpu"
    if _CUDA in names:
        return "auto" if _CPU in names else "gpu"
    return "cpu"


_profile_lock = threading.Lock()
_profile_names = set()


def _profile_path(prefix):
    """PREFIX_DATE_TIME_MS_PID.json, unique in this process (a counter when two sessions start in one
    millisecond) and across processes (the pid): sessions sharing a prefix never share a file."""
    now = time.time()
    stem = "%s_%s_%03d_%d" % (prefix, time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(now)),
                              int(now * 1000) % 1000, os.getpid())
    with _profile_lock:
        name, k = stem, 1
        while name in _profile_names:
            name, k = "%s_%d" % (stem, k), k + 1
        _profile_names.add(name)
    return os.path.abspath(name + ".json")


class _Model:
    """Where the model comes from: a path, or bytes written to a private temporary file."""

    def __init__(self, path_or_bytes):
        self.data, self.tmp, self.source = None, None, None
        if hasattr(path_or_bytes, "SerializeToString"):  # onnx.ModelProto
            path_or_bytes = path_or_bytes.SerializeToString()
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self.data = bytes(path_or_bytes)
            if not self.data:
                raise errors.XlacUsageError("the model's bytes are empty")
            text = _onnx_out.read_back(self.data)
            fd, self.tmp = tempfile.mkstemp(suffix=".model")
            with os.fdopen(fd, "wb") as f:
                f.write(self.data if text is None else text.encode())
            self.path, self.name = self.tmp, _BYTES_NAME
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            self.path = self.name = self.source = os.fspath(path_or_bytes)
            self._read_back_file()
        else:
            raise errors.XlacUsageError("InferenceSession takes a path, the model's bytes or an "
                                        "onnx.ModelProto, not %s" % type(path_or_bytes).__name__)

    def _read_back_file(self):
        """An ONNX model xlac wrote (optimized_model_filepath .onnx): loaded as the .xg text it holds."""
        import mmap
        try:
            with open(self.path, "rb") as f:
                if os.fstat(f.fileno()).st_size == 0:
                    return
                with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                    text = _onnx_out.read_back(memoryview(m))
        except (OSError, ValueError, BufferError):
            return
        if text is not None:
            fd, self.tmp = tempfile.mkstemp(suffix=".xg")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            self.path = self.tmp

    def message(self, text):
        """A C message about the model, with the temporary file's name replaced (no bytes quoted)."""
        return text.replace(self.tmp, self.name) if self.tmp else text

    def remove(self):
        if self.tmp:
            os.unlink(self.tmp)
            self.tmp_removed, self.tmp = self.tmp, None


class InferenceSession:
    """
    A model loaded and made ready to run, as onnxruntime.InferenceSession.

    path_or_bytes: a .onnx or .xg file, the model's bytes, or an onnx.ModelProto.
    sess_options: a SessionOptions (graph_optimization_level: ORT_DISABLE_ALL runs op by op,
      ORT_ENABLE_BASIC clusters fusible ops (auto_jit=1), EXTENDED/LAYOUT/ALL every compilable
      op (auto_jit=2); ALL is the default, as in onnxruntime).
    providers: ["CUDAExecutionProvider", "CPUExecutionProvider"] (GPU where there is one, else
      the CPU), ["CUDAExecutionProvider"] (a GPU or an error), ["CPUExecutionProvider"] (default).
    xlac's keywords: auto_jit=0|1|2 (over the options' level), flags="--name=value ..." (XLAC_FLAGS
      words, over the options' config entries), device="cpu"|"gpu"|"auto" (without providers).
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None,
                 **kwargs):
        self._handle = None
        self._cv = threading.Condition()
        self._active = 0
        self._closed = False
        unknown = set(kwargs) - {"auto_jit", "flags", "device", "disabled_optimizers"}
        if unknown:
            raise errors.XlacUsageError("InferenceSession: unknown keyword %s" % ", ".join(sorted(unknown)))
        so = sess_options if sess_options is not None else SessionOptions()
        if not isinstance(so, SessionOptions):
            raise errors.XlacUsageError("sess_options must be an xlac.SessionOptions")
        self._options = so
        _log.check_env()
        if so.log_severity_level >= 0:  # the process's level from here on (_log.py)
            _log.set_severity(so.log_severity_level, "SessionOptions.log_severity_level")
        hints = [("SessionOptions." + n, v, why) for n, v, why in so.hints()]
        if kwargs.get("disabled_optimizers"):
            hints.append(("InferenceSession(disabled_optimizers)", list(kwargs["disabled_optimizers"]),
                          "xlac has no onnxruntime graph optimizers (clustering: auto_jit, xlac.NAME entries)"))
        self._auto_jit = kwargs.get("auto_jit", auto_jit_of(so.graph_optimization_level))
        if self._auto_jit not in (0, 1, 2):
            raise errors.XlacUsageError("auto_jit=%r: expected 0, 1 or 2" % (self._auto_jit,))
        flags = " ".join(w for w in (so.xlac_flags(), kwargs.get("flags") or "") if w)
        device = _device_of(providers, provider_options, kwargs.get("device", "cpu"), hints)
        hints_mod.accept(hints, None)
        self._lib = _lib.executor()
        self._dtypes = _lib.dtype_names()
        self._model = _Model(path_or_bytes)
        try:
            self._open(flags, device)
            names = _meta.symbolic_dims(self._model.data, self._model.source)
        finally:
            self._model.remove()
        self._inputs = [self._arg(0, i, names[0]) for i in range(self._lib.xe_capi_count(self._handle, 0))]
        self._outputs = [self._arg(1, i, names[1]) for i in range(self._lib.xe_capi_count(self._handle, 1))]
        if so.optimized_model_filepath:
            self._write_graph(so.optimized_model_filepath)

    def _open(self, flags, device):
        so = self._options
        # flags load the plugin even op by op: they are checked, and never silently dropped
        plugin = _lib.ensure_plugin(self._auto_jit or (1 if flags else 0))
        config = _lib.session_config(self._auto_jit, flags) if plugin else None
        self._profile = self._trace = None
        if so.enable_profiling:  # xlac's Chrome trace beside the file end_profiling() returns
            self._profile = _profile_path(so.profile_file_prefix)
            self._trace = self._profile[: -len(".json")] + ".trace.json"
        self._start_ns = time.time_ns()
        err = ctypes.create_string_buffer(8192)
        h = ctypes.c_void_p()
        pins = so.dim_pins() if hasattr(so, "dim_pins") else []
        n = len(pins)
        kinds = (ctypes.c_int * (n + 1))(*[k for k, _, _ in pins])
        names = (ctypes.c_char_p * (n + 1))(*[name.encode() for _, name, _ in pins])
        values = (ctypes.c_int64 * (n + 1))(*[v for _, _, v in pins])
        code = self._lib.xe_capi_open_pinned(
            self._model.path.encode(), device.encode(), config.encode() if config else None,
            self._trace.encode() if self._trace else None, 1 if so.log_severity_level == 0 else 0,
            n, kinds, names, values, ctypes.byref(h), err, len(err))
        if code != 0:
            self._raise(code, self._model.message(err.value.decode(errors="replace")))
        self._handle = h
        self._config = config

    def _raise(self, code, text, run_options=None):
        for label in (self._options.logid, run_options.logid if run_options else ""):
            if label:
                text = "[%s] %s" % (label, text)
        _lib.raise_for(code, text)

    def _write_graph(self, path):
        """The graph as it runs: .xg text, or an ONNX model of xlac's domain (_onnx_out.py)."""
        path = os.fspath(path)
        onnx = path.endswith(".onnx")
        target = path
        if onnx:
            fd, target = tempfile.mkstemp(suffix=".xg")
            os.close(fd)
        try:
            err = ctypes.create_string_buffer(4096)
            code = self._lib.xe_capi_write_graph(self._handle, target.encode(), err, len(err))
            if code != 0:
                self._raise(code, err.value.decode(errors="replace"))
            if onnx:
                with open(target, encoding="utf-8") as f:
                    text = f.read()
                from . import __version__, _onnx_out
                _onnx_out.write(path, text, self._inputs, self._outputs, __version__)
        finally:
            if onnx:
                os.unlink(target)

    def _arg(self, io, i, symbolic):
        """NodeArg of input (io 0) or output (1) i; an unknown dim is the model's dim_param (symbolic:
        the ONNX model's, by name), else None."""
        lib, h = self._lib, self._handle
        name = lib.xe_capi_name(h, io, i).decode()
        dims = [lib.xe_capi_dim(h, io, i, d) for d in range(lib.xe_capi_rank(h, io, i))]
        params = symbolic.get(name, [])
        if len(params) != len(dims):
            params = [None] * len(dims)
        return NodeArg(name, self._dtypes[lib.xe_capi_dtype(h, io, i)],
                       [d if d >= 0 else params[k] for k, d in enumerate(dims)])

    # ---- what the session is --------------------------------------------------------

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_overridable_initializers(self):
        """None in xlac: initializers are the model's constants."""
        return []

    def get_modelmeta(self):
        if not hasattr(self, "_meta"):
            data = self._model.data
            if data is None:
                with open(self._model.source, "rb") as f:
                    data = f.read()
            self._meta = _meta.read(data, self._model.source)
        return self._meta

    def get_providers(self):
        """The providers the session's ops run on: CUDA when some op is placed on the GPU."""
        bits = self._lib.xe_capi_devices(self._check_open())
        return ([_CUDA] if bits & 2 else []) + [_CPU]

    def get_provider_options(self):
        return {p: {} for p in self.get_providers()}

    def get_session_options(self):
        return self._options

    def get_profiling_start_time_ns(self):
        return self._start_ns

    def end_profiling(self):
        """Stops recording; writes PREFIX_DATE_TIME_MS_PID.json in onnxruntime's profile schema
        (xlac/_profile.py) and returns its path ('' when profiling is off). xlac's own Chrome trace,
        with each cluster's steps and compiles, is beside it: the same name ending in .trace.json."""
        if not self._profile:
            return ""
        err = ctypes.create_string_buffer(4096)
        with self._cv:
            code = self._lib.xe_capi_end_profiling(self._check_open(), err, len(err))
        if code != 0:
            self._raise(code, err.value.decode(errors="replace"))
        _profile.write_ort_profile(self._trace, self._profile)
        return self._profile

    def io_binding(self):
        return IOBinding(self)

    # ---- running ----------------------------------------------------------------------

    def _check_open(self):
        if self._handle is None:
            raise errors.XlacUsageError("the session is closed")
        return self._handle

    def _feed(self, input_feed):
        """Arrays in input order, checked by name and dtype; contiguous without a copy."""
        unknown = set(input_feed) - {a.name for a in self._inputs}
        if unknown:
            raise errors.XlacUsageError("the graph has no input named %s (inputs: %s)" % (
                ", ".join(sorted(unknown)), ", ".join(a.name for a in self._inputs)))
        arrays = []
        for a in self._inputs:
            if a.name not in input_feed:
                raise errors.XlacUsageError("input %s (%s %s) is not fed" % (
                    a.name, a.xlac_type, a.shape))
            x = input_feed[a.name]
            x = x.numpy() if isinstance(x, OrtValue) else x
            x = np.asarray(x, dtype=a.dtype) if not isinstance(x, np.ndarray) else x
            if x.dtype != a.dtype:
                raise errors.XlacUsageError("input %s: expected dtype %s (%s), got %s" % (
                    a.name, a.dtype, a.xlac_type, x.dtype))
            arrays.append(np.require(x, requirements="C"))  # ascontiguousarray makes 0-d 1-d
        return arrays

    def _enter(self):
        """The handle, counted as in use until _leave (close waits for it)."""
        with self._cv:
            h = self._check_open()
            self._active += 1
            return h

    def _leave(self):
        with self._cv:
            self._active -= 1
            self._cv.notify_all()

    def _run_all(self, input_feed, run_options):
        """Every output of one run as ndarrays, in the graph's order."""
        if run_options is not None and not isinstance(run_options, RunOptions):
            raise errors.XlacUsageError("run_options must be an xlac.RunOptions")
        if run_options is not None:
            hints_mod.accept(run_options.hints(), "RunOptions")
        arrays = self._feed(input_feed)
        n = max(1, len(arrays))
        codes = [self._dtypes.index(a.xlac_type) for a in self._inputs]
        data = (ctypes.c_void_p * n)(*[x.ctypes.data for x in arrays])
        dtypes = (ctypes.c_int * n)(*codes)
        ranks = (ctypes.c_int * n)(*[x.ndim for x in arrays])
        flat = [d for x in arrays for d in x.shape]
        dims = (ctypes.c_int64 * max(1, len(flat)))(*flat)
        outs = (ctypes.c_void_p * max(1, len(self._outputs)))()
        err = ctypes.create_string_buffer(8192)
        h = self._enter()
        try:
            _lib.set_threads(self._options.intra_op_num_threads)
            rc = self._lib.xe_capi_run_into(h, data, dtypes, ranks, dims, outs, err, len(err))
        finally:
            self._leave()
        if rc != 0:
            self._raise(rc, err.value.decode(errors="replace"), run_options)
        results = []
        try:
            for i in range(len(self._outputs)):
                results.append(self._result(outs[i]))
                outs[i] = None
        finally:
            for i in range(len(self._outputs)):
                if outs[i]:
                    self._lib.xe_capi_tensor_free(outs[i])
        del arrays  # the inputs lived until the results were made (a result may alias one)
        return results

    def run(self, output_names, input_feed, run_options=None):
        """Runs once; returns the outputs named (all when output_names is None) as ndarrays."""
        names = [o.name for o in self._outputs]
        for n in output_names or ():
            if n not in names:
                raise errors.XlacUsageError("the graph has no output named %s (outputs: %s)" % (
                    n, ", ".join(names)))
        results = self._run_all(input_feed, run_options)
        by_name = dict(zip(names, results))
        return [by_name[n] for n in output_names] if output_names else results

    def run_async(self, output_names, input_feed, callback, user_data, run_options=None):
        """onnxruntime's run_async: runs in a new thread; callback(results, user_data, error_text)."""
        def work():
            try:
                out = self.run(output_names, input_feed, run_options)
            except errors.XlacError as e:
                callback(None, user_data, str(e))
            else:
                callback(out, user_data, "")
        threading.Thread(target=work, daemon=True).start()

    def run_with_iobinding(self, iobinding, run_options=None):
        iobinding._run(run_options)

    def _result(self, handle):
        """A C tensor handle as an ndarray: taken over when nothing else holds it, else copied."""
        lib = self._lib
        dtype = _lib.numpy_dtype(self._dtypes[lib.xe_capi_tensor_dtype(handle)])
        shape = [lib.xe_capi_tensor_dim(handle, d) for d in range(lib.xe_capi_tensor_rank(handle))]
        ptr, nbytes = lib.xe_capi_tensor_data(handle), lib.xe_capi_tensor_nbytes(handle)
        if nbytes and lib.xe_capi_tensor_exclusive(handle):
            arr = np.asarray(_Owned(lib, handle, ptr, dtype, shape))
            # typestr "<V2" for bfloat16: view it as the ml_dtypes type again (only then: a view
            # is another array, and the others' base stays the buffer's owner)
            return arr if arr.dtype == dtype else arr.view(dtype)
        out = np.empty(shape, dtype=dtype)
        if nbytes:
            ctypes.memmove(out.ctypes.data, ptr, nbytes)
        lib.xe_capi_tensor_free(handle)
        return out

    # ---- closing --------------------------------------------------------------------------

    def close(self):
        """Frees the session now, after the run() calls in progress (from other threads) end."""
        with self._cv:
            if self._handle is None:
                return
            self._closed = True
            h, self._handle = self._handle, None  # no new run starts
            while self._active:
                self._cv.wait()
        self._lib.xe_capi_close(h)

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """run() with OrtValue inputs (numpy arrays too) and outputs."""
        return [OrtValue(a) for a in self.run(output_names, input_dict_ort_values, run_options)]

    run_with_ortvaluevector = _refused("run_with_ortvaluevector", "onnxruntime's internal form: use "
                                                                  "run_with_ort_values()")
    set_providers = _refused("set_providers", "providers are fixed when the session is made: make a "
                                              "new session")
    def disable_fallback(self):
        """Nothing to do: xlac never moves a session to another provider."""

    def enable_fallback(self):
        """A hint: xlac never moves a session to another provider."""
        hints_mod.one("InferenceSession", "enable_fallback()", True,
                      "xlac never moves a session to another provider")
    get_tuning_results = _refused("get_tuning_results", "xlac has no kernel tuning results")
    set_tuning_results = _refused("set_tuning_results", "xlac has no kernel tuning results")
    create_ortvalue_from_shape_and_type = _refused("create_ortvalue_from_shape_and_type",
                                                   "use OrtValue.ortvalue_from_shape_and_type")
    for _name in ("get_input_epdevices", "get_input_memory_infos", "get_output_memory_infos",
                  "get_provider_graph_assignment_info", "set_ep_dynamic_options",
                  "release_captured_graph"):
        locals()[_name] = _refused(_name, "xlac has no execution-provider devices or captured graphs")
    del _name
