"""Symbolic dims pinned at load, as onnxruntime's free dimension overrides: by name (dim_param) and
by denotation, the session's declared inputs then concrete, a fed array of another size refused,
and every pin that names nothing in the model (or contradicts a declared dim) an error at load."""
import numpy as np
import pytest

import xlac
from xlac import _lib

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402  (after the skips)

pytestmark = pytest.mark.skipif(not hasattr(_lib.executor(), "xe_load_graph"),
                                reason="ONNX import is not in this build (no xe_load_graph)")


def model(path):
    """y = relu(x @ w) + s; x [batch, seq, 8] (batch denoted DATA_BATCH), s [batch, seq, 4]."""
    w = np.random.default_rng(3).standard_normal((8, 4)).astype(np.float32)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])
    x.type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Relu", ["xw"], ["r"]),
         helper.make_node("Add", ["r", "s"], ["y"])], "pins",
        [x, helper.make_tensor_value_info("s", TensorProto.FLOAT, ["batch", "seq", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 4])],
        initializer=[numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def feed(batch, seq):
    rng = np.random.default_rng(batch * 10 + seq)
    return {"x": rng.standard_normal((batch, seq, 8)).astype(np.float32),
            "s": rng.standard_normal((batch, seq, 4)).astype(np.float32)}


def both(path, pins):
    """An xlac and an onnxruntime session with the same overrides: (kind, name, value)."""
    so, oo = xlac.SessionOptions(), ort.SessionOptions()
    for kind, name, value in pins:
        getattr(so, "add_free_dimension_override_by_" + kind)(name, value)
        getattr(oo, "add_free_dimension_override_by_" + kind)(name, value)
    return (xlac.InferenceSession(path, so),
            ort.InferenceSession(path, oo, providers=["CPUExecutionProvider"]))


@pytest.mark.parametrize("pins,shape", [
    ([("name", "batch", 3), ("name", "seq", 5)], [3, 5, 8]),
    ([("denotation", "DATA_BATCH", 2), ("name", "seq", 6)], [2, 6, 8]),
])
def test_pinned_dims_are_known_and_match_onnxruntime(tmp_path, pins, shape):
    path = model(str(tmp_path / "m.onnx"))
    sess, ref = both(path, pins)
    assert sess.get_inputs()[0].shape == shape
    f = feed(shape[0], shape[1])
    (y,), (want,) = sess.run(None, f), ref.run(None, f)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_partly_pinned_leaves_the_rest_symbolic(tmp_path):
    path = model(str(tmp_path / "m.onnx"))
    sess, ref = both(path, [("name", "batch", 2)])
    assert sess.get_inputs()[0].shape[0] == 2 and sess.get_inputs()[0].shape[2] == 8
    for seq in (3, 7):
        f = feed(2, seq)
        np.testing.assert_allclose(sess.run(None, f)[0], ref.run(None, f)[0], rtol=1e-5, atol=1e-6)


def test_a_feed_of_another_size_is_refused(tmp_path):
    path = model(str(tmp_path / "m.onnx"))
    sess, _ = both(path, [("name", "batch", 3), ("name", "seq", 5)])
    with pytest.raises(xlac.XlacError) as e:
        sess.run(None, feed(4, 5))
    assert "x" in str(e.value)


def test_every_pin_that_names_nothing_is_listed(tmp_path):
    path = model(str(tmp_path / "m.onnx"))
    so = xlac.SessionOptions()
    so.add_free_dimension_override_by_name("batsh", 2)
    so.add_free_dimension_override_by_denotation("DATA_CHANNEL", 4)
    with pytest.raises(xlac.XlacError) as e:
        xlac.InferenceSession(path, so)
    text = str(e.value)
    assert "'batsh' names no dim" in text and "'DATA_CHANNEL' names no dim" in text, text


def test_bad_values_are_refused_when_set():
    so = xlac.SessionOptions()
    for bad in (-1, 2.5, True, "3"):
        with pytest.raises(xlac.XlacUsageError):
            so.add_free_dimension_override_by_name("batch", bad)
    with pytest.raises(xlac.XlacUsageError):
        so.add_free_dimension_override_by_denotation("", 1)
