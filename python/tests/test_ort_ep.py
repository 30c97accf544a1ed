"""xlac inside onnxruntime (xlac.ort, plugin/ort_ep, docs/onnxruntime-ep.md): the package's convention,
the no-code-change switch on an unchanged script, explicit providers, the profile, --stats and
--summary, an onnxruntime too old and a compiler that fails. The onnxruntime is the test venv's (the
newest on PyPI in scripts/test_python.sh); tests/ort_ep/run.sh runs the oldest supported one."""
import ctypes
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import xlac.ort  # noqa: E402

EP = "XlacExecutionProvider"
too_old = tuple(int(p) for p in ort.__version__.split(".")[:2]) < (1, 23)
pytestmark = pytest.mark.skipif(too_old, reason="onnxruntime %s has no plugin EPs" % ort.__version__)


@pytest.fixture
def model(tmp_path):
    """x[N,16] -> MatMul W -> Add B -> Mul 0.5 -> Tanh -> Relu -> y: one cluster at level 2."""
    rng = np.random.RandomState(0)
    inits = [numpy_helper.from_array(rng.randn(16, 8).astype(np.float32), "W"),
             numpy_helper.from_array(rng.randn(8).astype(np.float32), "B"),
             numpy_helper.from_array(np.array(0.5, np.float32), "c")]
    nodes = [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "B"], ["a"]),
             helper.make_node("Mul", ["a", "c"], ["h"]), helper.make_node("Tanh", ["h"], ["t"]),
             helper.make_node("Relu", ["t"], ["y"])]
    g = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = str(tmp_path / "small.onnx")
    onnx.save(m, path)
    return path


FEED = np.random.RandomState(2).randn(4, 16).astype(np.float32)

# an onnxruntime program as users write it: nothing of xlac in it
SCRIPT = """
import json, sys
import numpy as np
import onnxruntime as ort
x = np.random.RandomState(2).randn(4, 16).astype(np.float32)
so = ort.SessionOptions()
so.enable_profiling = True
so.profile_file_prefix = sys.argv[2]
s = ort.InferenceSession(sys.argv[1], sess_options=so)
y = s.run(None, {"x": x})[0]
events = json.load(open(s.end_profiling()))
nodes = sorted({e["args"]["provider"] for e in events if e.get("cat") == "Node"})
print(json.dumps({"providers": s.get_providers(), "node_providers": nodes, "sum": float(y.astype(np.float64).sum()),
                  "xlac_imported": "xlac" in sys.modules}))
"""


def run_script(tmp_path, model, env_extra, script=SCRIPT):
    """Runs the unchanged script in a child: installed, the wheel's .pth hooks it; else the hook is imported
    first (the .pth's one line), from the source tree."""
    path = tmp_path / "user_program.py"
    path.write_text(script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLAC_") or k == "XLAC_LIB_DIR"}
    env.update(env_extra)
    args = [sys.executable, str(path), model, str(tmp_path / "prof")]
    if not os.environ.get("XLAC_TEST_INSTALLED"):
        here = os.path.dirname(os.path.abspath(xlac.__file__))
        env["PYTHONPATH"] = os.path.dirname(here) + os.pathsep + env.get("PYTHONPATH", "")
        args = [sys.executable, "-c", "import _xlac_ort_hook, runpy, sys; sys.argv = sys.argv[1:]; "
                "runpy.run_path(sys.argv[0], run_name='__main__')"] + args[1:]
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def plain(model):
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": FEED})[0]


def test_convention():
    assert xlac.ort.get_ep_names() == [EP]
    assert os.path.basename(xlac.ort.get_library_path()) == "libxlac_ort_ep.so"
    assert os.path.exists(xlac.ort.get_library_path())


@pytest.mark.skipif(not os.environ.get("XLAC_TEST_INSTALLED"), reason="the wheel installs the hook")
def test_the_wheel_installs_the_import_hook():
    import site
    found = [d for d in site.getsitepackages() if os.path.exists(os.path.join(d, "xlac_ort.pth"))]
    assert found, site.getsitepackages()


def test_switch_on_an_unchanged_script(tmp_path, model):
    want = float(plain(model).astype(np.float64).sum())
    out, err = run_script(tmp_path, model, {"XLAC_AUTO_JIT": "2", "XLAC_FLAGS": "--stats"})
    assert out["providers"][:2] == [EP, "CPUExecutionProvider"], out
    assert EP in out["node_providers"], out  # onnxruntime's profiler shows the fused node under xlac's EP
    assert abs(out["sum"] - want) <= 1e-4 * max(1.0, abs(want))
    assert "xlac: stats clusters=1 launches=1" in err, err


def test_switch_off_does_nothing(tmp_path, model):
    out, err = run_script(tmp_path, model, {})
    assert out["providers"] == ["CPUExecutionProvider"], out
    assert not out["xlac_imported"] and "xlac" not in err


def test_a_named_provider_is_left_alone(tmp_path, model):
    script = SCRIPT.replace("sess_options=so)", "sess_options=so, providers=['CPUExecutionProvider'])")
    out, _ = run_script(tmp_path, model, {"XLAC_AUTO_JIT": "2"}, script)
    assert out["providers"] == ["CPUExecutionProvider"], out


def test_providers_by_name_and_by_devices(model):
    assert xlac.ort.install(ort)
    s = ort.InferenceSession(model, providers=[EP, "CPUExecutionProvider"])
    assert s.get_providers()[0] == EP
    np.testing.assert_allclose(s.run(None, {"x": FEED})[0], plain(model), rtol=1e-5, atol=1e-6)
    so = ort.SessionOptions()
    so.add_provider_for_devices(xlac.ort.get_ep_devices(ort), {"flags": "--auto_jit=1"})
    s = ort.InferenceSession(model, sess_options=so)
    assert s.get_providers()[0] == EP
    np.testing.assert_allclose(s.run(None, {"x": FEED})[0], plain(model), rtol=1e-5, atol=1e-6)


def test_the_hook_quiets_onnxruntimes_spinning_threads_unless_the_program_chose(model):
    spin = "session.intra_op.allow_spinning"
    assert xlac.ort.install(ort)
    so = ort.SessionOptions()
    s = ort.InferenceSession(model, sess_options=so)  # names no provider: the hook adds the EP
    assert s.get_providers()[0] == EP and so.get_session_config_entry(spin) == "0"
    so = ort.SessionOptions()
    so.add_session_config_entry(spin, "1")
    ort.InferenceSession(model, sess_options=so)
    assert so.get_session_config_entry(spin) == "1"  # the program's own choice is kept
    so = ort.SessionOptions()
    ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])
    with pytest.raises(Exception):  # no EP, no change
        so.get_session_config_entry(spin)


def test_a_bad_flag_in_the_provider_options_is_named(model, capfd):
    """The EP refuses the session's words; onnxruntime's Python falls back to its CPU EP and says why."""
    assert xlac.ort.install(ort)
    so = ort.SessionOptions()
    so.add_provider_for_devices(xlac.ort.get_ep_devices(ort), {"flags": "--no_such_flag"})
    try:
        s = ort.InferenceSession(model, sess_options=so)
        assert s.get_providers() == ["CPUExecutionProvider"]
    except Exception as e:  # an onnxruntime that does not fall back raises it
        assert "no_such_flag" in str(e)
        return
    assert "unknown flag '--no_such_flag'" in capfd.readouterr().out


def test_summary_and_a_failing_compiler(tmp_path, model):
    """CC=/bin/false: the cluster runs xlac's per-op kernels after one warning; the result is right."""
    want = float(plain(model).astype(np.float64).sum())
    summary = tmp_path / "summary.json"
    out, err = run_script(tmp_path, model, {"XLAC_AUTO_JIT": "2", "CC": "/bin/false",
                                            "XLAC_FLAGS": "--stats --disk_cache=0 --summary=%s" % summary})
    assert abs(out["sum"] - want) <= 1e-4 * max(1.0, abs(want))
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1, err
    assert "fallbacks=1" in err, err
    j = json.loads(summary.read_text())
    assert j, j


def test_too_old_an_onnxruntime_for_the_hook(tmp_path, model):
    """A fake onnxruntime 1.22 first on the path: the hook warns once and the program runs."""
    fake = tmp_path / "fake" / "onnxruntime"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(textwrap.dedent("""
        __version__ = "1.22.0"
        class InferenceSession:
            def __init__(self, path, sess_options=None, providers=None, **kw):
                self.providers = providers or ["CPUExecutionProvider"]
    """))
    script = "import onnxruntime as ort\nprint(ort.InferenceSession('m').providers)\n"
    path = tmp_path / "old.py"
    path.write_text(script)
    env = dict(os.environ, XLAC_AUTO_JIT="2", PYTHONPATH=str(tmp_path / "fake") + os.pathsep +
               os.path.dirname(os.path.dirname(os.path.abspath(xlac.__file__))))
    p = subprocess.run([sys.executable, "-c", "import _xlac_ort_hook, runpy; runpy.run_path(%r)" % str(path)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "['CPUExecutionProvider']" in p.stdout
    assert "onnxruntime 1.22.0 is older than 1.23" in p.stderr, p.stderr


def test_too_old_an_onnxruntime_for_the_library():
    """CreateEpFactories handed an OrtApiBase that has no C API 23 (onnxruntime 1.22): a status naming both."""
    lib = ctypes.CDLL(xlac.ort.get_library_path())
    messages = []
    create_status = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)(
        lambda code, msg: messages.append((code, msg.decode())) or 1)
    table = (ctypes.c_void_p * 1)(ctypes.cast(create_status, ctypes.c_void_p))
    get_api = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32)(
        lambda v: ctypes.addressof(table) if v < 23 else None)
    text = ctypes.create_string_buffer(b"1.22.0")
    version = ctypes.CFUNCTYPE(ctypes.c_void_p)(lambda: ctypes.addressof(text))
    base = (ctypes.c_void_p * 2)(ctypes.cast(get_api, ctypes.c_void_p), ctypes.cast(version, ctypes.c_void_p))
    factories = (ctypes.c_void_p * 4)()
    n = ctypes.c_size_t(7)
    lib.CreateEpFactories.restype = ctypes.c_void_p
    status = lib.CreateEpFactories(b"x", base, None, factories, ctypes.c_size_t(4), ctypes.byref(n))
    assert status == 1 and n.value == 0
    assert messages and "needs onnxruntime 1.23 or newer" in messages[0][1] and "1.22.0" in messages[0][1]


def test_beside_xlac_inference_session(model):
    """Both hosts in one process: each runs its own clusters (the EP's pass never takes xlac's sessions)."""
    import xlac
    assert xlac.ort.install(ort)
    s = ort.InferenceSession(model, providers=[EP, "CPUExecutionProvider"])
    mine = xlac.InferenceSession(model)  # clustered in this process by libxlac.so
    want = plain(model)
    np.testing.assert_allclose(s.run(None, {"x": FEED})[0], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mine.run(None, {"x": FEED})[0], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s.run(None, {"x": FEED})[0], want, rtol=1e-5, atol=1e-6)
    assert xlac.stats().get("launches", 0) >= 1
