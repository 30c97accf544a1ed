"""InferenceSession: onnxruntime's calling convention over the C API (capi.h).

Inputs that are C-contiguous numpy arrays of the declared dtype are handed
to C as they are (wrapped, not copied); others are made contiguous first. A
result whose buffer nothing else holds becomes a numpy array without a copy;
the others (an input returned as is, a constant) are copied.
"""
import ctypes
import threading

import numpy as np

from . import _lib, errors

# onnxruntime's type strings
_ORT_TYPE = {"f32": "tensor(float)", "f64": "tensor(double)", "f16": "tensor(float16)",
             "i32": "tensor(int32)", "i64": "tensor(int64)", "bool": "tensor(bool)"}


class NodeArg:
    """One input or output: .name, .type ("tensor(float)"), .dtype (numpy), .shape."""

    def __init__(self, name, dtype_name, shape):
        self.name = name
        self.xlac_type = dtype_name
        self.type = _ORT_TYPE[dtype_name]
        self.dtype = _lib.numpy_dtype(dtype_name)
        self.shape = shape  # a list; None where a dim is unknown

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


class InferenceSession:
    """
    A graph loaded and made ready to run.

    path: a .xg file (.onnx once the ONNX importer is in the build).
    auto_jit: 0 op by op; 1 or 2 cluster and compile in this process (loads libxlac.so,
      whose configuration is fixed once per process). flags: XLAC_FLAGS text.
    device: "cpu", "gpu" (an error without one) or "auto".
    """

    def __init__(self, path, auto_jit=0, flags="", device="cpu"):
        if auto_jit not in (0, 1, 2):
            raise errors.XlacUsageError("auto_jit=%r: expected 0, 1 or 2" % (auto_jit,))
        self._lib = _lib.executor()
        self._handle = None
        self._lock = threading.Lock()
        _lib.ensure_plugin(auto_jit, flags)
        self._dtypes = _lib.dtype_names()
        err = ctypes.create_string_buffer(4096)
        h = ctypes.c_void_p()
        code = self._lib.xe_capi_open(str(path).encode(), str(device).encode(),
                                      ctypes.byref(h), err, len(err))
        if code != 0:
            _lib.raise_for(code, err.value.decode(errors="replace"))
        self._handle = h
        self._inputs = [self._arg(0, i) for i in range(self._lib.xe_capi_count(h, 0))]
        self._outputs = [self._arg(1, i) for i in range(self._lib.xe_capi_count(h, 1))]

    def _arg(self, io, i):
        lib, h = self._lib, self._handle
        dims = [lib.xe_capi_dim(h, io, i, d) for d in range(lib.xe_capi_rank(h, io, i))]
        return NodeArg(lib.xe_capi_name(h, io, i).decode(),
                       self._dtypes[lib.xe_capi_dtype(h, io, i)],
                       [d if d >= 0 else None for d in dims])

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def close(self):
        """Frees the session now (also done when it is collected)."""
        if self._handle is not None:
            self._lib.xe_capi_close(self._handle)
            self._handle = None

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

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

    def run(self, output_names, input_feed, run_options=None):
        """Runs once; returns the outputs named (all when output_names is None) as ndarrays."""
        del run_options  # onnxruntime's argument, accepted and ignored
        names = [o.name for o in self._outputs]
        for n in output_names or ():
            if n not in names:
                raise errors.XlacUsageError("the graph has no output named %s (outputs: %s)" % (
                    n, ", ".join(names)))
        arrays = self._feed(input_feed)
        codes = [self._dtypes.index(a.xlac_type) for a in self._inputs]
        data = (ctypes.c_void_p * max(1, len(arrays)))(*[x.ctypes.data for x in arrays])
        dtypes = (ctypes.c_int * max(1, len(arrays)))(*codes)
        ranks = (ctypes.c_int * max(1, len(arrays)))(*[x.ndim for x in arrays])
        flat = [d for x in arrays for d in x.shape]
        dims = (ctypes.c_int64 * max(1, len(flat)))(*flat)
        err = ctypes.create_string_buffer(4096)
        with self._lock:
            if self._handle is None:
                raise errors.XlacUsageError("the session is closed")
            rc = self._lib.xe_capi_run(self._handle, data, dtypes, ranks, dims, err, len(err))
            if rc != 0:
                _lib.raise_for(rc, err.value.decode(errors="replace"))
            try:
                results = [self._result(i) for i in range(len(names))]
            finally:
                self._lib.xe_capi_clear(self._handle)
        by_name = dict(zip(names, results))
        return [by_name[n] for n in output_names] if output_names else results

    def _result(self, i):
        """Output i of the last run as an ndarray: taken over when possible, else copied."""
        lib, h = self._lib, self._handle
        dtype = _lib.numpy_dtype(self._dtypes[lib.xe_capi_result_dtype(h, i)])
        shape = [lib.xe_capi_result_dim(h, i, d) for d in range(lib.xe_capi_result_rank(h, i))]
        ptr, nbytes = lib.xe_capi_result_data(h, i), lib.xe_capi_result_nbytes(h, i)
        if not nbytes:
            return np.empty(shape, dtype=dtype)
        taken = lib.xe_capi_result_take(h, i)
        if taken:
            return np.asarray(_Owned(lib, taken, ptr, dtype, shape))
        out = np.empty(shape, dtype=dtype)
        ctypes.memmove(out.ctypes.data, ptr, nbytes)
        return out
