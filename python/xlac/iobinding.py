"""IOBinding: onnxruntime's binding of inputs and outputs to buffers, on the CPU.

bind_output(name, "cpu", 0, element_type, shape, buffer_ptr) makes the run
write output `name` into the caller's preallocated buffer (its dtype and
shape must be those the run produces); bind_output(name) lets the run
allocate it. After run_with_iobinding, copy_outputs_to_cpu() gives the
outputs as arrays (a bound buffer's array is a view of that buffer).
"""
import ctypes

import numpy as np

from . import errors
from .options import _refused


# ONNX TensorProto.DataType -> numpy (ortvalue_from_numpy_with_onnx_type)
_ONNX_TYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
               7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}
_TYPE_NAMES = {np.dtype(np.float32): "tensor(float)", np.dtype(np.float64): "tensor(double)",
               np.dtype(np.float16): "tensor(float16)", np.dtype(np.int8): "tensor(int8)",
               np.dtype(np.int16): "tensor(int16)", np.dtype(np.int32): "tensor(int32)",
               np.dtype(np.int64): "tensor(int64)", np.dtype(np.uint8): "tensor(uint8)",
               np.dtype(np.uint16): "tensor(uint16)", np.dtype(np.uint32): "tensor(uint32)",
               np.dtype(np.uint64): "tensor(uint64)", np.dtype(np.bool_): "tensor(bool)"}


def _host(device_type, device_id, what):
    if str(device_type).lower() != "cpu" or int(device_id) != 0:
        raise errors.XlacUnsupportedError("%s on %s:%s is not supported: xlac's OrtValue is a host array "
                                          "('cpu', 0)" % (what, device_type, device_id))


class _Capsule:
    """A bare DLPack capsule as an object np.from_dlpack takes (a host tensor)."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


class OrtValue:
    """onnxruntime's OrtValue on the CPU: a numpy array (shared, not copied, as onnxruntime shares a
    CPU array), with onnxruntime's methods; DLPack both ways (from_dlpack, to_dlpack, __dlpack__)."""

    def __init__(self, array):
        self._array = array

    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type="cpu", device_id=0, vendor_id=-1):
        _host(device_type, device_id, "OrtValue.ortvalue_from_numpy")
        return OrtValue(np.require(numpy_obj, requirements="C"))  # keeps a 0-d array 0-d

    @staticmethod
    def ortvalue_from_numpy_with_onnx_type(data, onnx_element_type):
        if onnx_element_type not in _ONNX_TYPES:
            raise errors.XlacUnsupportedError("ortvalue_from_numpy_with_onnx_type: ONNX element type %r is "
                                              "not supported (xlac takes %s)" % (
                                                  onnx_element_type, sorted(_ONNX_TYPES)))
        arr = np.require(data, requirements="C")
        want = np.dtype(_ONNX_TYPES[onnx_element_type])
        return OrtValue(arr if arr.dtype == want else arr.view(want))

    @staticmethod
    def ortvalue_from_shape_and_type(shape, element_type, device_type="cpu", device_id=0, vendor_id=-1):
        _host(device_type, device_id, "OrtValue.ortvalue_from_shape_and_type")
        return OrtValue(np.empty([int(d) for d in shape], dtype=np.dtype(element_type)))

    @staticmethod
    def from_dlpack(data, is_bool_tensor=False):
        """An OrtValue sharing a DLPack tensor's memory (an object with __dlpack__, or a capsule)."""
        obj = data if hasattr(data, "__dlpack__") else _Capsule(data)
        arr = np.from_dlpack(obj)
        return OrtValue(arr.view(np.bool_) if is_bool_tensor and arr.dtype == np.uint8 else arr)

    def to_dlpack(self):
        return self._array.__dlpack__()

    def __dlpack__(self, stream=None, **kwargs):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)

    def numpy(self):
        return self._array

    def shape(self):
        return list(self._array.shape)

    def data_ptr(self):
        return self._array.ctypes.data

    def data_type(self):
        return _TYPE_NAMES.get(self._array.dtype, "tensor(%s)" % self._array.dtype.name)

    def element_type(self):
        return self._array.dtype.type

    def tensor_size_in_bytes(self):
        return int(self._array.nbytes)

    def device_name(self):
        return "cpu"

    def has_value(self):
        return True

    def is_tensor(self):
        return True

    def is_sparse_tensor(self):
        return False

    def is_tensor_sequence(self):
        return False

    def update_inplace(self, np_arr):
        """Copies np_arr (the same shape and dtype) into the value's memory."""
        src = np.asarray(np_arr)
        if src.shape != self._array.shape or src.dtype != self._array.dtype:
            raise errors.XlacUsageError("update_inplace: %s %s into an OrtValue of %s %s" % (
                src.dtype, list(src.shape), self._array.dtype, list(self._array.shape)))
        np.copyto(self._array, src)

    as_sparse_tensor = _refused("as_sparse_tensor", "xlac has no sparse tensors")
    @staticmethod
    def ort_value_from_sparse_tensor(*args, **kwargs):
        raise errors.XlacUnsupportedError("OrtValue.ort_value_from_sparse_tensor is not supported: xlac has "
                                          "no sparse tensors")


def _cpu(device_type, device_id):
    if str(device_type).lower() != "cpu" or int(device_id) != 0:
        raise errors.XlacUsageError("IOBinding: device %s:%s is not supported (xlac binds host "
                                    "buffers: 'cpu', 0)" % (device_type, device_id))


class IOBinding:
    def __init__(self, session):
        self._session = session
        self._inputs, self._outputs, self._results = {}, {}, []

    def bind_cpu_input(self, name, arr_on_cpu):
        self._inputs[name] = np.asarray(arr_on_cpu)

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        _cpu(device_type, device_id)
        dtype = np.dtype(element_type)
        n = int(np.prod(shape)) if len(shape) else 1
        buf = (ctypes.c_char * (n * dtype.itemsize)).from_address(buffer_ptr)
        self._inputs[name] = np.frombuffer(buf, dtype=dtype).reshape(shape)

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None,
                    buffer_ptr=None):
        _cpu(device_type, device_id)
        if name not in {o.name for o in self._session.get_outputs()}:
            raise errors.XlacUsageError("the graph has no output named %s" % name)
        if buffer_ptr is None:
            self._outputs[name] = None
            return
        if element_type is None or shape is None:
            raise errors.XlacUsageError("bind_output(%s, buffer_ptr=...) needs element_type and shape" % name)
        dtype, shape = np.dtype(element_type), tuple(int(d) for d in shape)
        n = int(np.prod(shape)) if shape else 1
        buf = (ctypes.c_char * (n * dtype.itemsize)).from_address(buffer_ptr)
        self._outputs[name] = np.frombuffer(buf, dtype=dtype).reshape(shape)

    def clear_binding_inputs(self):
        self._inputs = {}

    def clear_binding_outputs(self):
        self._outputs, self._results = {}, []

    def synchronize_inputs(self):
        """Nothing to wait for: host buffers."""

    def synchronize_outputs(self):
        """Nothing to wait for: the run wrote host buffers before it returned."""

    def _run(self, run_options):
        names = list(self._outputs)
        results = self._session.run(names, self._inputs, run_options)
        out = []
        for name, r in zip(names, results):
            dest = self._outputs[name]
            if dest is None:
                out.append(r)
                continue
            if dest.dtype != r.dtype or dest.shape != r.shape:
                raise errors.XlacUsageError("output %s is %s %s, its bound buffer %s %s" % (
                    name, r.dtype, list(r.shape), dest.dtype, list(dest.shape)))
            np.copyto(dest, r)
            out.append(dest)
        self._results = out

    def copy_outputs_to_cpu(self):
        return list(self._results)

    def get_outputs(self):
        return [OrtValue(a) for a in self._results]

    def bind_ortvalue_input(self, name, ortvalue):
        self._inputs[name] = ortvalue.numpy()

    def bind_ortvalue_output(self, name, ortvalue):
        """The run writes output name into ortvalue's array (its dtype and shape must be the output's)."""
        if name not in {o.name for o in self._session.get_outputs()}:
            raise errors.XlacUsageError("the graph has no output named %s" % name)
        self._outputs[name] = ortvalue.numpy()

    def get_outputs_as_ortvaluevector(self):
        return self.get_outputs()
