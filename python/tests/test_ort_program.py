"""The same onnxruntime program (programs/ort_program.py, every setting of issue 36 in it) runs on
onnxruntime and, with only its import line swapped, on xlac: the same outputs, the same symbolic input
shapes, one warning naming each setting xlac has no use for (none at severity 3), and the model it
wrote for optimized_model_filepath (an ONNX model of xlac's domain) runs again on xlac."""
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import xlac  # noqa: E402

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs", "ort_program.py")


def run(tmp_path, use_xlac, severity):
    text = open(PROGRAM).read()
    if use_xlac:
        assert text.count("import onnxruntime as ort\n") == 1
        text = text.replace("import onnxruntime as ort\n", "import xlac as ort\n")
    folder = tmp_path / ("xlac" if use_xlac else "ort") / str(severity)
    folder.mkdir(parents=True)
    (folder / "program.py").write_text(text)
    env = {k: v for k, v in os.environ.items() if k not in ("XLAC_AUTO_JIT", "XLAC_FLAGS", "LD_PRELOAD")}
    env["XLAC_FLAGS"] = "--cache_dir=" + str(tmp_path / "cache")
    r = subprocess.run([sys.executable, str(folder / "program.py"), str(folder), str(severity)],
                       capture_output=True, text=True, timeout=300, env=env, check=False)
    assert r.returncode == 0, r.stderr
    return r, np.load(folder / "result.npz"), folder


def test_the_program_runs_on_xlac_with_only_the_import_swapped(tmp_path):
    r_ort, want, _ = run(tmp_path, False, 2)
    r_x, got, folder = run(tmp_path, True, 2)
    for k in ("y", "s", "y2"):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-4)
    inputs = [ln for ln in r_x.stdout.splitlines() if ln.startswith("inputs")]
    assert inputs == [ln for ln in r_ort.stdout.splitlines() if ln.startswith("inputs")], r_x.stdout
    assert "['batch', 64]" in inputs[0]
    for name in ("inter_op_num_threads=4", "execution_mode", "enable_cpu_mem_arena=True",
                 "enable_mem_pattern=True", "session.intra_op.allow_spinning", "NoSuchExecutionProvider"):
        assert r_x.stderr.count(name) == 1, (name, r_x.stderr)
    assert "optimized True" in r_x.stdout
    # the profile, read as onnxruntime's: the same lines from both runtimes
    prof = [ln for ln in r_ort.stdout.splitlines() if ln.startswith("profile")]
    assert prof == ["profile runs 2 providers ['CPUExecutionProvider']"], r_ort.stdout
    assert [ln for ln in r_x.stdout.splitlines() if ln.startswith("profile")] == prof, r_x.stdout
    # the optimized model is ONNX, its clusters nodes of xlac's domain, and xlac runs it again
    onnx = pytest.importorskip("onnx")
    m = onnx.load(str(folder / "opt.onnx"))
    assert {n.domain for n in m.graph.node} == {"com.xlac"}
    assert any(n.op_type == "xlac_launch" for n in m.graph.node), [n.op_type for n in m.graph.node]
    sess = xlac.InferenceSession(str(folder / "opt.onnx"))
    assert sess.get_inputs()[0].shape == ["batch", 64]
    x = np.random.default_rng(1).standard_normal((3, 64)).astype(np.float32)
    plain = xlac.InferenceSession(str(folder / "model.onnx"), auto_jit=0)
    for a, b in zip(sess.run(None, {"x": x}), plain.run(None, {"x": x})):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_severity_3_silences_xlac(tmp_path):
    r_x, _, _ = run(tmp_path, True, 3)
    assert "xlac: warning" not in r_x.stderr and "hint" not in r_x.stderr, r_x.stderr
