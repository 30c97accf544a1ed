"""The member walk: every public member of onnxruntime's Python module is in xlac's table
(xlac/_ort_members.py) and behaves as its class says: supported, mapped or hint -> xlac has it
(an attribute takes onnxruntime's default value without an error); unsupported -> using it raises
XlacUnsupportedError. A name onnxruntime adds fails here until it is classified."""
import inspect

import numpy as np
import pytest

import xlac
from xlac import _ort_members as T

ort = pytest.importorskip("onnxruntime")

KINDS = {T.SUPPORTED, T.MAPPED, T.HINT, T.UNSUPPORTED}


def public(obj):
    return sorted(n for n in dir(obj) if not n.startswith("_"))


def module_members():
    """onnxruntime's own names: its submodules and the modules it imported are not members, nor is
    a name its import left at None."""
    return [n for n in public(ort) if not inspect.ismodule(getattr(ort, n)) and getattr(ort, n) is not None]


def test_every_module_member_is_classified():
    missing = [n for n in module_members() if n not in T.MODULE]
    assert not missing, "onnxruntime names not in xlac/_ort_members.py MODULE: %s" % missing
    assert all(kind in KINDS for kind, _ in T.MODULE.values())


@pytest.mark.parametrize("name", module_members())
def test_module_member_behaves_as_classified(name):
    kind, why = T.MODULE[name]
    assert hasattr(xlac, name), name
    obj = getattr(xlac, name)
    if kind != T.UNSUPPORTED:
        if inspect.isclass(getattr(ort, name)) and hasattr(getattr(ort, name), "__members__"):
            # an enum: the same members, the same values
            want = {k: int(v) for k, v in getattr(ort, name).__members__.items()}
            got = {k: int(v) for k, v in obj.__members__.items()}
            assert got == want, name
        return
    with pytest.raises(xlac.XlacUnsupportedError, match=name):
        obj()
    assert why in str(pytest.raises(xlac.XlacUnsupportedError, obj).value)


CLASS_NAMES = ["InferenceSession", "SessionOptions", "RunOptions", "OrtValue", "IOBinding", "NodeArg",
               "ModelMetadata"]


def xlac_instance(cls, tmp_path):
    """An instance of xlac's class named cls (members set in __init__ are then visible)."""
    if cls == "InferenceSession" or cls == "IOBinding":
        p = tmp_path / "g.xg"
        p.write_text("xlac.graph v1\ninput x: f32[2]\ny = neg(x)\noutput y\n")
        sess = xlac.InferenceSession(str(p), auto_jit=0)
        return sess if cls == "InferenceSession" else sess.io_binding()
    if cls == "OrtValue":
        return xlac.OrtValue.ortvalue_from_numpy(np.zeros(2, np.float32))
    if cls == "NodeArg":
        return xlac.NodeArg("x", "f32", [2])
    return getattr(xlac, cls)()


@pytest.mark.parametrize("cls", CLASS_NAMES)
def test_class_members_are_classified_and_behave(cls, tmp_path):
    table = T.CLASSES[cls]
    names = public(getattr(ort, cls))
    missing = [n for n in names if n not in table]
    assert not missing, "onnxruntime's %s members not in xlac/_ort_members.py CLASSES: %s" % (cls, missing)
    obj = xlac_instance(cls, tmp_path)
    ort_defaults = getattr(ort, cls)() if cls in ("SessionOptions", "RunOptions") else None
    for name in names:
        kind, _ = table[name]
        if kind == T.UNSUPPORTED:
            with pytest.raises(xlac.XlacUnsupportedError, match=name):
                getattr(obj, name)()
            continue
        assert hasattr(obj, name), "%s.%s is %s but xlac has no such member" % (cls, name, kind)
        if ort_defaults is not None and not callable(getattr(ort_defaults, name)):
            value = getattr(ort_defaults, name)
            setattr(obj, name, int(value) if hasattr(value, "__members__") or type(value).__name__ in (
                "ExecutionMode", "ExecutionOrder", "GraphOptimizationLevel") else value)


def test_every_enum_member_is_there():
    for name in ("GraphOptimizationLevel", "ExecutionMode", "ExecutionOrder"):
        want = {k: int(v) for k, v in getattr(ort, name).__members__.items()}
        assert {k: int(v) for k, v in getattr(xlac, name).__members__.items()} == want, name


def test_ortvalue_from_numpy_and_dlpack(tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = xlac.OrtValue.ortvalue_from_numpy(a)
    assert v.shape() == [2, 3] and v.data_type() == "tensor(float)" and v.element_type() is np.float32
    assert np.shares_memory(v.numpy(), a) and v.device_name() == "cpu"
    w = xlac.OrtValue.from_dlpack(v.to_dlpack())
    assert np.shares_memory(w.numpy(), a)
    assert np.shares_memory(np.from_dlpack(v), a)
    v.update_inplace(np.ones((2, 3), np.float32))
    assert a.sum() == 6
    with pytest.raises(xlac.XlacUnsupportedError, match="cuda"):
        xlac.OrtValue.ortvalue_from_numpy(a, "cuda", 0)
    p = tmp_path / "g.xg"
    p.write_text("xlac.graph v1\ninput x: f32[2,3]\ny = neg(x)\noutput y\n")
    sess = xlac.InferenceSession(str(p), auto_jit=0)
    (out,) = sess.run_with_ort_values(None, {"x": v})
    np.testing.assert_array_equal(out.numpy(), -np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(sess.run(None, {"x": v})[0], -np.ones((2, 3), np.float32))


def test_module_functions():
    assert xlac.get_version_string() == xlac.__version__ == xlac.version
    assert "CPUExecutionProvider" in xlac.get_available_providers()
    assert xlac.get_all_providers()[-1] == "CPUExecutionProvider"
    xlac.disable_telemetry_events()
    seen = []
    xlac.set_default_logger_callback(lambda *a: seen.append(a), 2)
    try:
        xlac.set_seed(1234)  # a hint: one warning, to the callback
    finally:
        xlac.set_default_logger_callback(None)
    assert seen and seen[0][0] == 2 and "set_seed" in seen[0][4], seen
    with pytest.raises(xlac.XlacUsageError, match="set_default_logger_severity"):
        xlac.set_default_logger_severity(9)
