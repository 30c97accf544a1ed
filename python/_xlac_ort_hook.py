"""xlac's switch for onnxruntime programs, with no change to them: imported at
interpreter start by xlac_ort.pth (the wheel installs both in site-packages).
It does nothing unless XLAC_AUTO_JIT is 1 or 2; then, when the program imports
onnxruntime, xlac.ort.install registers XlacExecutionProvider and puts it ahead
of the CPU EP in every InferenceSession that names no provider. Kept apart
from the xlac package so that starting an interpreter imports nothing more.
"""
import os
import sys


class _OnnxruntimeFinder:
    """A meta path finder that lets onnxruntime load as usual, then installs the EP into it."""

    def find_spec(self, name, path=None, target=None):
        if name != "onnxruntime":
            return None
        import importlib.util
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        sys.meta_path.remove(self)  # once is enough
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            try:
                from xlac import ort as xlac_ort
                xlac_ort.install(module)
            except Exception as e:  # never stop the program's import of onnxruntime
                print("xlac: warning: XlacExecutionProvider not installed: %s" % e, file=sys.stderr)

        spec.loader.exec_module = exec_module
        return spec


if os.environ.get("XLAC_AUTO_JIT", "").strip() in ("1", "2") and "onnxruntime" not in sys.modules:
    sys.meta_path.insert(0, _OnnxruntimeFinder())
