"""A model whose shape computations need its symbolic dims is built per fed signature, and no size is
made up: the session's outputs keep the model's dim names (not a probe's 3s), an output that
declares no shape has its rank and no dims, and a graph that cannot be rewritten to serve every size
says so once, naming the node, where it used to compile per size in silence."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import xlac
from xlac import _lib

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402  (after the skips)

pytestmark = pytest.mark.skipif(not hasattr(_lib.executor(), "xe_load_graph"),
                                reason="ONNX import is not in this build (no xe_load_graph)")

EXPORTS = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "models", "exports")


def shape_model(path, op, out_shape):
    """y = op(x, k) where k is x's dim 1 (Shape, Gather): TopK (k = n, a structure that grows
    with n) or Tile (repeats [1, n]); x [batch, n]."""
    one = numpy_helper.from_array(np.array([1], np.int64), "one")
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["k"], axis=0)]
    if op == "TopK":
        nodes.append(helper.make_node("TopK", ["x", "k"], ["y", "i"], axis=1))
    else:
        nodes += [helper.make_node("Concat", ["one", "k"], ["r"], axis=0),
                  helper.make_node("Tile", ["x", "r"], ["t"]), helper.make_node("Relu", ["t"], ["y"])]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)
    g = helper.make_graph(nodes, "shapes",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "n"])],
                          [y], initializer=[one])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def test_outputs_keep_the_models_dim_names():
    for name, want in (("bert.dynamic", ["batch", "sequence", 32]),
                       ("kv_decoder.dynamic", ["batch", "sequence", 64])):
        path = os.path.join(EXPORTS, name, "model.onnx")
        ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = xlac.InferenceSession(path).get_outputs()[0].shape
        assert got == want == ref.get_outputs()[0].shape, (name, got)


@pytest.mark.parametrize("op", ["TopK", "Tile"])
def test_an_output_without_a_declared_shape_has_its_rank_and_no_sizes(tmp_path, op):
    path = shape_model(str(tmp_path / "m.onnx"), op, None)
    sess = xlac.InferenceSession(path)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert sess.get_outputs()[0].shape == [None, None]
    for n in (3, 5):
        x = np.random.default_rng(n).standard_normal((2, n)).astype(np.float32)
        (got,), (want,) = sess.run(["y"], {"x": x}), ref.run(["y"], {"x": x})
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


RUN = textwrap.dedent("""
    import sys, numpy as np, xlac
    sess = xlac.InferenceSession(sys.argv[1], auto_jit=2)
    for n in (3, 4, 5):
        sess.run(None, {"x": np.ones((2, n), np.float32)})
""")


def noted(path):
    env = {k: v for k, v in os.environ.items() if k not in ("XLAC_AUTO_JIT", "LD_PRELOAD")}
    env["XLAC_FLAGS"] = "--disk_cache=0"
    r = subprocess.run([sys.executable, "-c", RUN, path], env=env, capture_output=True, text=True,
                       timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    return [line for line in r.stderr.splitlines() if "keeps its sizes" in line]


def test_a_graph_that_keeps_its_sizes_says_so_once_naming_the_node(tmp_path):
    lines = noted(shape_model(str(tmp_path / "topk.onnx"), "TopK", ["batch", "n"]))
    assert len(lines) == 1, lines
    assert "at input shapes [2,3]" in lines[0] and "compile per size" in lines[0], lines[0]
    assert "structure depends on the sizes" in lines[0] or "node '" in lines[0], lines[0]


def test_a_graph_rewritten_for_every_size_says_nothing(tmp_path):
    assert noted(shape_model(str(tmp_path / "tile.onnx"), "Tile", ["batch", "n2"])) == []
