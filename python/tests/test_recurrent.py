"""ONNX LSTM, GRU and RNN as xlac imports them (one `recurrent` node per layer: oneDNN's RNN
primitives in f32, the kernel's own loop in f64) against onnxruntime, and against ONNX's reference
evaluator where onnxruntime has no kernel (layout=1, f64 GRU and RNN): every cell, direction,
optional input, GRU's linear_before_reset and RNN's activations, and a sequence length that is
symbolic in the model. Skipped without onnx and onnxruntime."""
import itertools
import json

import numpy as np
import pytest

import xlac
from xlac import _lib

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402  (after the skips)
from onnx.reference import ReferenceEvaluator  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(_lib.executor(), "xe_load_graph"),
                                reason="ONNX import is not in this build (no xe_load_graph)")

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def layer(op, direction, bias, state, extra, layout=0, dt=np.float32, S=5, N=3, I=4, H=6,
          act=None, seed=0):
    """A one-node model of op and a feed for it: extra is LSTM's peepholes, GRU's
    linear_before_reset; S may be a dim name (symbolic), fed as 5."""
    rng = np.random.default_rng(seed)
    D, G = (2 if direction == "bidirectional" else 1), GATES[op]
    tt = TensorProto.DOUBLE if dt == np.float64 else TensorProto.FLOAT
    s_fed = 5 if isinstance(S, str) else S

    def rand(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(dt)

    inits = [numpy_helper.from_array(rand(D, G * H, I, scale=0.5), "W"),
             numpy_helper.from_array(rand(D, G * H, H, scale=0.5), "R")]
    ins, feeds = ["X", "W", "R"], {}
    x_shape = [N, S, I] if layout else [S, N, I]
    graph_in = [helper.make_tensor_value_info("X", tt, x_shape)]
    feeds["X"] = rand(*[s_fed if d == S else d for d in x_shape])
    if bias:
        inits.append(numpy_helper.from_array(rand(D, 2 * G * H), "B"))
    ins += ["B" if bias else "", ""]
    s_shape = [N, D, H] if layout else [D, N, H]
    for name in (["h0", "c0"] if op == "LSTM" else ["h0"]):
        if state:
            graph_in.append(helper.make_tensor_value_info(name, tt, s_shape))
            feeds[name] = rand(*s_shape)
        ins.append(name if state else "")
    if op == "LSTM" and extra:
        inits.append(numpy_helper.from_array(rand(D, 3 * H), "P"))
        ins.append("P")
    while ins[-1] == "":
        ins.pop()
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    attrs = dict(hidden_size=H, direction=direction, layout=layout)
    if op == "GRU":
        attrs["linear_before_reset"] = int(bool(extra))
    if act:
        attrs["activations"] = [act] * D
    g = helper.make_graph([helper.make_node(op, ins, outs, **attrs)], "layer", graph_in,
                          [helper.make_tensor_value_info(o, tt, None) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return m, feeds


def reference(m, feeds, layout, dt):
    if layout or dt == np.float64:
        return ReferenceEvaluator(m).run(None, feeds)
    return ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)


def check(m, feeds, layout, dt, clustered=False):
    want = reference(m, feeds, layout, dt)
    got = xlac.InferenceSession(m.SerializeToString(), auto_jit=2 if clustered else 0).run(None, feeds)
    tol = 1e-10 if dt == np.float64 else 2e-5
    for name, w, x in zip(["Y", "Y_h", "Y_c"], want, got):
        assert x.dtype == w.dtype and x.shape == w.shape, (name, x.dtype, x.shape, w.shape)
        assert np.isfinite(x).all()
        np.testing.assert_allclose(x, w, rtol=tol * 10, atol=tol, err_msg=name)


CASES = [(op, d, b, s, e) for op, d, b, s, e in itertools.product(
    GATES, ["forward", "reverse", "bidirectional"], [0, 1], [0, 1], [0, 1])
    if not (op == "RNN" and e)]


@pytest.mark.parametrize("op,direction,bias,state,extra", CASES)
def test_layer_matches_the_reference(op, direction, bias, state, extra):
    for layout, dt in [(0, np.float32), (1, np.float32), (0, np.float64)]:
        m, feeds = layer(op, direction, bias, state, extra, layout, dt)
        check(m, feeds, layout, dt)


@pytest.mark.parametrize("act", ["Tanh", "Relu", "Sigmoid"])
def test_rnn_activations(act):
    m, feeds = layer("RNN", "bidirectional", 1, 1, 0, act=act)
    check(m, feeds, 0, np.float32)


def test_clustered_session():
    m, feeds = layer("LSTM", "bidirectional", 1, 1, 1)
    check(m, feeds, 0, np.float32, clustered=True)


def test_symbolic_sequence_length():
    """A layer whose sequence length is a dim name imports (the unrolled import needed it known)
    and runs at each fed length."""
    m, _ = layer("GRU", "forward", 1, 0, 1, S="seq")
    sess = xlac.InferenceSession(m.SerializeToString())
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    for s in (1, 7, 40):
        f = {"X": rng.standard_normal((s, 3, 4)).astype(np.float32)}
        for w, x in zip(ref.run(None, f), sess.run(None, f)):
            assert x.shape == w.shape
            np.testing.assert_allclose(x, w, rtol=2e-4, atol=2e-5)


def test_one_node_per_layer(tmp_path):
    """The layer runs as one recurrent node: no per-step products."""
    m, feeds = layer("LSTM", "forward", 1, 1, 0, S=32)
    so = xlac.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    sess = xlac.InferenceSession(m.SerializeToString(), so, auto_jit=0)
    sess.run(None, feeds)
    events = json.load(open(sess.end_profiling()))
    ops = [e["args"].get("op_name") for e in events if e.get("cat") == "Node"]
    assert ops.count("recurrent") == 1, ops
    assert "matmul" not in ops and "sigmoid" not in ops, ops
