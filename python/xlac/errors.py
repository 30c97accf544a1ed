"""Exceptions: one class per xe_code, each carrying the C library's message."""


class XlacError(Exception):
    """Any error reported by xlac; .code is the C xe_code, str() the C message."""

    code = None

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code


class XlacUsageError(XlacError, ValueError):
    """Bad argument, flag or feed (wrong name, dtype or shape)."""


class XlacParseError(XlacError):
    """Malformed graph text; the message starts with FILE:LINE:COL."""


class XlacGraphError(XlacError):
    """A well-formed graph that is invalid (shapes, dtypes, names)."""


class XlacIOError(XlacError, OSError):
    """A file could not be read or written."""


class XlacMemoryError(XlacError, MemoryError):
    """An allocation failed."""


class XlacUnsupportedError(XlacError):
    """Op, dtype or device combination not implemented."""


class XlacDeviceError(XlacError):
    """CUDA runtime or driver error (or no GPU for device="gpu")."""


class XlacRuntimeError(XlacError, RuntimeError):
    """Any other failure while running a graph."""


class XlacCompileError(XlacError):
    """Generated code failed to compile or load."""


# xe_code_name(code) -> class; the codes themselves come from the C library.
BY_NAME = {
    "usage error": XlacUsageError,
    "parse error": XlacParseError,
    "graph error": XlacGraphError,
    "I/O error": XlacIOError,
    "out of memory": XlacMemoryError,
    "unsupported": XlacUnsupportedError,
    "device error": XlacDeviceError,
    "runtime error": XlacRuntimeError,
    "compile error": XlacCompileError,
}
