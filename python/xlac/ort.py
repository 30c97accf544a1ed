"""xlac inside onnxruntime: its plugin execution provider, by the convention of
the onnxruntime-ep-* packages.

    import onnxruntime as ort, xlac.ort
    ort.register_execution_provider_library("XlacExecutionProvider", xlac.ort.get_library_path())
    so = ort.SessionOptions()
    so.add_provider_for_devices(xlac.ort.get_ep_devices(ort), {})   # or providers=[...] (see below)
    sess = ort.InferenceSession("model.onnx", sess_options=so)

or, with no change to the program, XLAC_AUTO_JIT=1 or 2 in its environment:
importing onnxruntime then registers the library and puts XlacExecutionProvider
ahead of the CPU EP in every InferenceSession that names no provider
(install(), called by the import hook _xlac_ort_hook, that the wheel's
xlac_ort.pth loads at interpreter start). XLAC_FLAGS configures it as it does
libxlac.so; a session's own words go in the provider option "flags".
See docs/onnxruntime-ep.md.
"""
import os
import sys
import threading
import warnings

from . import _lib

EP_NAME = "XlacExecutionProvider"
MIN_VERSION = (1, 23)

_lock = threading.Lock()
_installed = {}  # id(onnxruntime module) -> True once its InferenceSession is wrapped


def get_library_path():
    """The EP library's path (libxlac_ort_ep.so), with the libraries it needs loaded first."""
    _lib.executor()  # libxlac_executor.so and a wheel's bundled libraries, which the EP's RUNPATH cannot reach
    return _lib._path("libxlac_ort_ep.so")


def get_ep_names():
    return [EP_NAME]


def _version(ort):
    parts = []
    for p in ort.__version__.split(".")[:2]:
        digits = "".join(c for c in p if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def register(ort):
    """Registers the library with onnxruntime once; its OrtEpDevice list (empty when it cannot be)."""
    with _lock:
        if not any(d.ep_name == EP_NAME for d in ort.get_ep_devices()):
            ort.register_execution_provider_library(EP_NAME, get_library_path())
    return get_ep_devices(ort)


def get_ep_devices(ort):
    return [d for d in ort.get_ep_devices() if d.ep_name == EP_NAME]


def _split(providers, provider_options):
    """(xlac's options or None, the other providers and their options)."""
    ours, rest, rest_opts = None, [], []
    opts = list(provider_options) if provider_options else [{}] * len(providers)
    for p, o in zip(providers, opts):
        name, o = (p[0], dict(p[1])) if isinstance(p, (tuple, list)) else (p, dict(o or {}))
        if name == EP_NAME:
            ours = o
        else:
            rest.append(name)
            rest_opts.append(o)
    return ours, rest, rest_opts


def _with_xlac(ort, devices, sess_options, providers, provider_options):
    """The arguments of an InferenceSession with xlac's EP added where the program asks for it or names none."""
    if providers:
        ours, rest, rest_opts = _split(providers, provider_options)
        if ours is None or _version(ort) >= (1, 24):
            return sess_options, providers, provider_options  # no xlac, or onnxruntime takes it by name
    else:
        if sess_options is not None and sess_options.has_providers():
            return sess_options, providers, provider_options  # the program chose its devices
        ours, rest, rest_opts = {}, [], []
    if rest and rest != ["CPUExecutionProvider"]:
        warnings.warn("xlac: %s is not combined with %s on onnxruntime %s (by name from 1.24): "
                      "those providers run alone" % (EP_NAME, rest, ort.__version__))
        return sess_options, rest, rest_opts
    so = sess_options if sess_options is not None else ort.SessionOptions()
    quiet_intra_op_threads(so)
    so.add_provider_for_devices(devices, {k: str(v) for k, v in ours.items()})
    return so, None, None


SPINNING = "session.intra_op.allow_spinning"


def quiet_intra_op_threads(so):
    """
    Sets session.intra_op.allow_spinning to "0" in SessionOptions `so` unless the program set it:
    onnxruntime's intra-op threads otherwise spin after each of its kernels, on the cores the EP's
    fused nodes run their OpenMP team on. Measured on 2 cores, 2 threads (BERT 4x256 at batch 8):
    84 ms with spinning, 48 ms without, plain onnxruntime 50 ms; ResNet-18 at batch 1: 56 against
    23 ms (docs/onnxruntime-ep.md). True when it set it.
    """
    try:
        if so.get_session_config_entry(SPINNING) != "":
            return False  # the program's own choice
    except Exception:  # onnxruntime raises for an entry that is not set
        pass
    so.add_session_config_entry(SPINNING, "0")
    return True


def install(ort):
    """
    Registers the EP with onnxruntime module `ort` and wraps its InferenceSession, so that a
    session that names no provider (or names XlacExecutionProvider) runs with it. Once per
    module; warns and leaves onnxruntime as it is when it is too old or the library is refused.
    """
    with _lock:
        if _installed.get(id(ort)):
            return True
        _installed[id(ort)] = True
    if _version(ort) < MIN_VERSION or not hasattr(ort, "register_execution_provider_library"):
        print("xlac: warning: onnxruntime %s is older than %d.%d: %s not registered; onnxruntime runs "
              "the model as it is" % (ort.__version__, MIN_VERSION[0], MIN_VERSION[1], EP_NAME), file=sys.stderr)
        return False
    try:
        devices = register(ort)
    except Exception as e:  # the library refused this onnxruntime, or is missing: say so, run without it
        print("xlac: warning: %s not registered (%s); onnxruntime runs the model as it is" % (EP_NAME, e),
              file=sys.stderr)
        return False
    if not devices:
        return False
    original = ort.InferenceSession.__init__

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kw):
        sess_options, providers, provider_options = _with_xlac(ort, devices, sess_options, providers,
                                                               provider_options)
        original(self, path_or_bytes, sess_options, providers, provider_options, **kw)

    __init__.__wrapped__ = original
    ort.InferenceSession.__init__ = __init__
    return True


def auto_enabled(environ=os.environ):
    """Whether XLAC_AUTO_JIT asks for clustering (1 or 2): the import hook's switch."""
    return environ.get("XLAC_AUTO_JIT", "").strip() in ("1", "2")
