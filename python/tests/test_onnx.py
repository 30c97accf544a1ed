"""Differential test against onnxruntime on an ONNX model, loaded by the
executor's content-sniffing loader (xe_load_graph, executor/frontends/onnx/); skipped
when onnx or onnxruntime cannot be installed, or the library predates it."""
import json
import subprocess
import sys

import numpy as np
import pytest

import xlac
from xlac import _lib

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402  (after the skips)

pytestmark = pytest.mark.skipif(not hasattr(_lib.executor(), "xe_load_graph"),
                                reason="ONNX import is not in this build (no xe_load_graph)")


def mlp_model(path):
    """y = softmax(relu(x @ w + b) * s), batch dim symbolic."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"]),
             helper.make_node("Add", ["xw", "b"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Mul", ["r", "s"], ["m"]),
             helper.make_node("Softmax", ["m"], ["y"], axis=-1)]
    g = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def feed(batch=5):
    rng = np.random.default_rng(batch)
    return {"x": rng.standard_normal((batch, 16)).astype(np.float32),
            "s": rng.standard_normal((batch, 8)).astype(np.float32)}


def test_onnx_op_by_op_matches_onnxruntime(tmp_path):
    path = mlp_model(str(tmp_path / "mlp.onnx"))
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    sess = xlac.InferenceSession(path)
    assert [i.name for i in sess.get_inputs()] == [i.name for i in ref.get_inputs()]
    assert sess.get_inputs()[0].shape in ([None, 16], ["batch", 16])
    for batch in (1, 5):
        f = feed(batch)
        np.testing.assert_allclose(sess.run(None, f)[0], ref.run(None, f)[0], rtol=1e-5,
                                   atol=1e-6)


CLUSTERED = r"""
import json, sys
import numpy as np, onnxruntime as ort, xlac
sess = xlac.InferenceSession(sys.argv[1], auto_jit=2)
ref = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
rng = np.random.default_rng(0)
f = {"x": rng.standard_normal((5, 16)).astype(np.float32),
     "s": rng.standard_normal((5, 8)).astype(np.float32)}
err = float(np.max(np.abs(sess.run(None, f)[0] - ref.run(None, f)[0])))
print(json.dumps({"err": err, "stats": xlac.stats()}))
"""


def test_onnx_clustered_matches_onnxruntime(tmp_path):
    path = mlp_model(str(tmp_path / "mlp.onnx"))
    r = subprocess.run([sys.executable, "-c", CLUSTERED, path], capture_output=True, text=True,
                       timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["err"] < 1e-5, out
    assert out["stats"]["clusters"] >= 1, out


def test_a_scalar_input_stays_0_d():
    """A 0-d array fed to an input of shape [] (a diffusion model's timestep, a zero point) runs
    as onnxruntime runs it; np.ascontiguousarray had made it [1], refused as the wrong shape.
    The same through OrtValue.ortvalue_from_numpy."""
    g = helper.make_graph([helper.make_node("Mul", ["a", "t"], ["y"])], "scalar",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [3]),
                           helper.make_tensor_value_info("t", TensorProto.FLOAT, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    sess = xlac.InferenceSession(m.SerializeToString())
    a = np.arange(3, dtype=np.float32)
    for t in (np.array(2.5, np.float32), np.float32(2.5), xlac.OrtValue.ortvalue_from_numpy(np.array(2.5, np.float32))):
        y, = sess.run(None, {"a": a, "t": t})
        np.testing.assert_array_equal(y, a * 2.5)
    with pytest.raises(xlac.errors.XlacUsageError, match=r"expected f32\[\], got f32\[1\]"):
        sess.run(None, {"a": a, "t": np.array([2.5], np.float32)})
