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


class OrtValue:
    """The little of onnxruntime's OrtValue that get_outputs() users read: an array on the CPU."""

    def __init__(self, array):
        self._array = array

    def numpy(self):
        return self._array

    def shape(self):
        return list(self._array.shape)

    def data_ptr(self):
        return self._array.ctypes.data

    def device_name(self):
        return "cpu"

    def is_tensor(self):
        return True


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

    bind_ortvalue_input = _refused("bind_ortvalue_input", "xlac has no OrtValue: bind_cpu_input")
    bind_ortvalue_output = _refused("bind_ortvalue_output", "xlac has no OrtValue: bind_output")
    get_outputs_as_ortvaluevector = _refused("get_outputs_as_ortvaluevector", "xlac has no OrtValue")
