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

from . import _lib, _meta, errors
from .iobinding import IOBinding
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
    """One input or output: onnxruntime's .name, .type ("tensor(float)"), .shape (None where a dim
    is unknown); xlac's .dtype (numpy) and .xlac_type ("f32")."""

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


def _device_of(providers, device):
    """The xlac device of onnxruntime's providers list (names or (name, options) pairs)."""
    if providers is None:
        return device
    names = []
    for p in providers:
        name, opts = (p if isinstance(p, (tuple, list)) else (p, {}))
        if name not in (_CPU, _CUDA):
            raise errors.XlacUsageError("provider %r is not available in xlac (it has %s and %s)"
                                        % (name, _CUDA, _CPU))
        if opts and set(opts) - {"device_id"} or str(opts.get("device_id", 0)) != "0":
            raise errors.XlacUsageError("provider options %r of %s are not supported (xlac uses "
                                        "device 0)" % (opts, name))
        names.append(name)
    if not names:
        raise errors.XlacUsageError("providers=[]: name at least one of %s, %s" % (_CUDA, _CPU))
    if _CUDA in names:
        return "auto" if _CPU in names else "gpu"
    return "cpu"


class _Model:
    """Where the model comes from: a path, or bytes written to a private temporary file."""

    def __init__(self, path_or_bytes):
        self.data, self.tmp = None, None
        if hasattr(path_or_bytes, "SerializeToString"):  # onnx.ModelProto
            path_or_bytes = path_or_bytes.SerializeToString()
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self.data = bytes(path_or_bytes)
            if not self.data:
                raise errors.XlacUsageError("the model's bytes are empty")
            fd, self.tmp = tempfile.mkstemp(suffix=".model")
            with os.fdopen(fd, "wb") as f:
                f.write(self.data)
            self.path, self.name = self.tmp, _BYTES_NAME
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            self.path = self.name = os.fspath(path_or_bytes)
        else:
            raise errors.XlacUsageError("InferenceSession takes a path, the model's bytes or an "
                                        "onnx.ModelProto, not %s" % type(path_or_bytes).__name__)

    def message(self, text):
        """A C message about the model, with the temporary file's name replaced (no bytes quoted)."""
        return text.replace(self.tmp, _BYTES_NAME) if self.tmp else text

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
        if kwargs.get("disabled_optimizers") or provider_options:
            raise errors.XlacUsageError("disabled_optimizers and provider_options are not supported "
                                        "(xlac: SessionOptions.add_session_config_entry('xlac.NAME', v))")
        so = sess_options if sess_options is not None else SessionOptions()
        if not isinstance(so, SessionOptions):
            raise errors.XlacUsageError("sess_options must be an xlac.SessionOptions")
        self._options = so
        self._auto_jit = kwargs.get("auto_jit", auto_jit_of(so.graph_optimization_level))
        if self._auto_jit not in (0, 1, 2):
            raise errors.XlacUsageError("auto_jit=%r: expected 0, 1 or 2" % (self._auto_jit,))
        flags = " ".join(w for w in (so.xlac_flags(), kwargs.get("flags") or "") if w)
        device = _device_of(providers, kwargs.get("device", "cpu"))
        self._lib = _lib.executor()
        self._dtypes = _lib.dtype_names()
        self._model = _Model(path_or_bytes)
        try:
            self._open(flags, device)
        finally:
            self._model.remove()
        self._inputs = [self._arg(0, i) for i in range(self._lib.xe_capi_count(self._handle, 0))]
        self._outputs = [self._arg(1, i) for i in range(self._lib.xe_capi_count(self._handle, 1))]
        if so.optimized_model_filepath:
            self._write_graph(so.optimized_model_filepath)

    def _open(self, flags, device):
        so = self._options
        # flags load the plugin even op by op: they are checked, and never silently dropped
        plugin = _lib.ensure_plugin(self._auto_jit or (1 if flags else 0))
        config = _lib.session_config(self._auto_jit, flags) if plugin else None
        self._profile = None
        if so.enable_profiling:
            self._profile = os.path.abspath("%s_%s.json" % (
                so.profile_file_prefix, time.strftime("%Y-%m-%d_%H-%M-%S")))
        self._start_ns = time.time_ns()
        err = ctypes.create_string_buffer(8192)
        h = ctypes.c_void_p()
        code = self._lib.xe_capi_open_with(
            self._model.path.encode(), device.encode(), config.encode() if config else None,
            self._profile.encode() if self._profile else None, 1 if so.log_severity_level == 0 else 0,
            ctypes.byref(h), err, len(err))
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
        err = ctypes.create_string_buffer(4096)
        code = self._lib.xe_capi_write_graph(self._handle, os.fspath(path).encode(), err, len(err))
        if code != 0:
            self._raise(code, err.value.decode(errors="replace"))

    def _arg(self, io, i):
        lib, h = self._lib, self._handle
        dims = [lib.xe_capi_dim(h, io, i, d) for d in range(lib.xe_capi_rank(h, io, i))]
        return NodeArg(lib.xe_capi_name(h, io, i).decode(),
                       self._dtypes[lib.xe_capi_dtype(h, io, i)],
                       [d if d >= 0 else None for d in dims])

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
                with open(self._model.path, "rb") as f:
                    data = f.read()
            self._meta = _meta.read(data, self._model.path)
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
        """Stops recording; returns the Chrome trace's path ('' when profiling is off)."""
        if not self._profile:
            return ""
        err = ctypes.create_string_buffer(4096)
        with self._cv:
            code = self._lib.xe_capi_end_profiling(self._check_open(), err, len(err))
        if code != 0:
            self._raise(code, err.value.decode(errors="replace"))
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
            x = np.asarray(x, dtype=a.dtype) if not isinstance(x, np.ndarray) else x
            if x.dtype != a.dtype:
                raise errors.XlacUsageError("input %s: expected dtype %s (%s), got %s" % (
                    a.name, a.dtype, a.xlac_type, x.dtype))
            arrays.append(np.ascontiguousarray(x))
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

    run_with_ort_values = _refused("run_with_ort_values", "xlac has no OrtValue: use run()")
    run_with_ortvaluevector = _refused("run_with_ortvaluevector", "xlac has no OrtValue: use run()")
    set_providers = _refused("set_providers", "providers are fixed when the session is made: make a "
                                              "new session")
    disable_fallback = _refused("disable_fallback", "xlac never moves a session to another provider")
    enable_fallback = _refused("enable_fallback", "xlac never moves a session to another provider")
    get_tuning_results = _refused("get_tuning_results", "xlac has no kernel tuning results")
    set_tuning_results = _refused("set_tuning_results", "xlac has no kernel tuning results")
    create_ortvalue_from_shape_and_type = _refused("create_ortvalue_from_shape_and_type",
                                                   "xlac has no OrtValue")
    for _name in ("get_input_epdevices", "get_input_memory_infos", "get_output_memory_infos",
                  "get_provider_graph_assignment_info", "set_ep_dynamic_options",
                  "release_captured_graph"):
        locals()[_name] = _refused(_name, "xlac has no execution-provider devices or captured graphs")
    del _name
