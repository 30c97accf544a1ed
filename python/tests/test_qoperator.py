"""Quantized models in operator form: ONNX's QLinearConv and ConvInteger
(executor/frontends/onnx/ops/qlinear_conv.c), what onnxruntime's quantize_static writes with
QuantFormat.QOperator and quantize_dynamic for every Conv, and the com.microsoft ops QOperator
models carry around them, QLinearAdd, QLinearMul, QLinearGlobalAveragePool and QGemm
(ops/qlinear_ms.c), each within one quantization step of onnxruntime's kernel.

QLinearConv follows its QDQ form (DequantizeLinear of x, w and B, Conv, QuantizeLinear), the QDQ
path's numbers: every output within one quantization step of onnxruntime's QLinearConv kernel and
of the QDQ form run by onnxruntime with its optimizations off, nearly all of them equal. With VNNI
it is one quant_conv2d step; elsewhere the f32 composition. ConvInteger is exact: equal to an
int64 numpy reference and to onnxruntime, whether one f32 convolution holds the sums exactly, the
weights are split in two for it, or they are not constant (f64). Skipped without onnx and
onnxruntime."""
import ctypes
import json

import numpy as np
import pytest

import xlac
from xlac import _lib

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402  (after the skips)

pytestmark = pytest.mark.skipif(not hasattr(_lib.executor(), "xe_load_graph"),
                                reason="ONNX import is not in this build (no xe_load_graph)")


def int8_engine():
    f = _lib.executor().xe_cpu_int8_engine
    f.restype = ctypes.c_bool
    return bool(f())


INT8 = int8_engine()


def model(nodes, inits, inputs, outputs, opset=13):
    g = helper.make_graph(nodes, "q", inputs, outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def ort_run(m, feeds, optimized=True):
    so = ort.SessionOptions()
    if not optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def xlac_run(m, feeds, tmp_path, auto_jit=0):
    so = xlac.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    sess = xlac.InferenceSession(m.SerializeToString(), so, auto_jit=auto_jit)
    out = sess.run(None, feeds)
    events = json.load(open(sess.end_profiling()))
    ops = [e["args"].get("op_name") for e in events if e.get("cat") == "Node"]
    return out, [o for o in ops if o != "const"]


def qlinear_case(seed, act, per_channel, bias, group=1, stride=1, pad=1, k=3, c=8, m=16):
    """One QLinearConv of x [2, c, 11, 11] (act) by i8 weights, and its QDQ form."""
    rng = np.random.default_rng(seed)
    xz = np.array(131 if act == np.uint8 else -3, act)
    w = rng.integers(-127, 128, (m, c // group, k, k)).astype(np.int8)
    ws = rng.uniform(2e-3, 1e-2, m if per_channel else 1).astype(np.float32)
    ws = ws if per_channel else ws.reshape(())
    wz = np.zeros(ws.shape, np.int8)
    xs, ys = np.float32(0.0213), np.float32(0.0517)
    yz = np.array(7 if act == np.uint8 else -5, act)
    inits = {"xs": np.array(xs), "xz": xz, "w": w, "ws": ws, "wz": wz, "ys": np.array(ys), "yz": yz}
    ins = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    if bias:
        inits["B"] = rng.integers(-3000, 3000, m).astype(np.int32)
        ins.append("B")
    attrs = dict(group=group, strides=[stride] * 2, pads=[pad] * 4, kernel_shape=[k, k])
    vin = [helper.make_tensor_value_info("x", TensorProto.UINT8 if act == np.uint8 else TensorProto.INT8,
                                         [2, c, 11, 11])]
    vout = [helper.make_tensor_value_info("y", TensorProto.UINT8 if act == np.uint8 else TensorProto.INT8, None)]
    op = model([helper.make_node("QLinearConv", ins, ["y"], **attrs)], inits, vin, vout)
    # the QDQ form, with onnxruntime's optimizations off: the reference in real arithmetic
    axis = {"axis": 0} if per_channel else {}
    qnodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xd"]),
              helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], **axis)]
    cin = ["xd", "wd"]
    if bias:
        inits["bs"] = (xs * ws).astype(np.float32)
        inits["bz"] = np.zeros(inits["bs"].shape, np.int32)
        qnodes.append(helper.make_node("DequantizeLinear", ["B", "bs", "bz"], ["bd"], **axis))
        cin.append("bd")
    qnodes += [helper.make_node("Conv", cin, ["yf"], **attrs),
               helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"])]
    qdq = model(qnodes, inits, vin, vout)
    lo, hi = (0, 256) if act == np.uint8 else (-128, 128)
    x = rng.integers(lo, hi, (2, c, 11, 11)).astype(act)
    return op, qdq, {"x": x}


@pytest.mark.parametrize("act", [np.uint8, np.int8], ids=["u8", "i8"])
@pytest.mark.parametrize("per_channel", [True, False], ids=["per_channel", "per_tensor"])
@pytest.mark.parametrize("shape", [dict(), dict(group=4, stride=2), dict(k=1, pad=0)],
                         ids=["3x3", "grouped_strided", "1x1"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
def test_qlinear_conv_within_a_step(act, per_channel, shape, bias, tmp_path):
    op, qdq, f = qlinear_case(3, act, per_channel, bias, **shape)
    got, ops = xlac_run(op, f, tmp_path)
    assert got[0].dtype == act
    if INT8:
        assert ops == ["quant_conv2d"], ops
    else:
        assert "conv2d" in ops and "quant_conv2d" not in ops, ops
    for want in (ort_run(op, f)[0], ort_run(qdq, f, optimized=False)[0]):
        d = np.abs(got[0].astype(np.int32) - want.astype(np.int32))
        assert d.max() <= 1, d.max()
        assert np.mean(d == 0) >= 0.97, np.mean(d == 0)
    # not all saturated: the case measures something
    assert len(np.unique(got[0])) > 20


def test_qlinear_conv_u8_weights_compose(tmp_path):
    """u8 weights with a zero point (older quantizers): the f32 composition, within a step."""
    op, _, f = qlinear_case(5, np.uint8, True, True)
    inits = {i.name: numpy_helper.to_array(i) for i in op.graph.initializer}
    w = inits["w"].astype(np.int32) + 128
    inits["w"] = w.astype(np.uint8)
    inits["wz"] = np.full(inits["ws"].shape, 128, np.uint8)
    g = op.graph
    m2 = model(list(g.node), inits, list(g.input), list(g.output))
    got, ops = xlac_run(m2, f, tmp_path)
    assert "quant_conv2d" not in ops and "conv2d" in ops, ops
    d = np.abs(got[0].astype(np.int32) - ort_run(m2, f)[0].astype(np.int32))
    assert d.max() <= 1 and np.mean(d == 0) >= 0.97


def conv_int_reference(x, w, xz, wz, pad, stride=1):
    """ConvInteger in int64: (x - xz) padded with zeros, by (w - wz[m])."""
    xc = np.pad(x.astype(np.int64) - np.int64(xz), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    wz = np.asarray(wz, np.int64).reshape(-1, 1, 1, 1) if np.ndim(wz) else np.int64(wz)
    wc = w.astype(np.int64) - wz
    win = np.lib.stride_tricks.sliding_window_view(xc, wc.shape[2:], axis=(2, 3))[:, :, ::stride, ::stride]
    return np.einsum("nchwij,mcij->nmhw", win, wc)


def conv_integer_model(w, wz, xz_input=False, w_input=False, pad=1, xz=None):
    c = w.shape[1]
    wt = TensorProto.UINT8 if w.dtype == np.uint8 else TensorProto.INT8
    inits, vin = {}, [helper.make_tensor_value_info("x", TensorProto.UINT8, [2, c, 9, 9])]
    if w_input:
        vin.append(helper.make_tensor_value_info("w", wt, list(w.shape)))
    else:
        inits["w"] = w
    if xz_input:
        vin.append(helper.make_tensor_value_info("xz", TensorProto.UINT8, []))
    else:
        inits["xz"] = np.array(xz, np.uint8)
    inits["wz"] = wz
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[pad] * 4,
                            kernel_shape=list(w.shape[2:]))
    return model([node], inits, vin, [helper.make_tensor_value_info("y", TensorProto.INT32, None)], opset=10)


def past_one_f32(w, wz):
    """Whether 255 sum |w - wz| over some output channel passes 2^24: one f32 conv may round."""
    wz = np.asarray(wz, np.int64).reshape(-1, 1, 1, 1) if np.ndim(wz) else np.int64(wz)
    return (255 * np.abs(w.astype(np.int64) - wz).sum(axis=(1, 2, 3))).max() > 2 ** 24


def test_a_per_channel_scale_of_another_length_is_refused():
    """w_scale of M + 1 elements for M output channels: an error naming it, not a broadcast."""
    op, _, _ = qlinear_case(3, np.uint8, True, True)
    inits = {i.name: numpy_helper.to_array(i) for i in op.graph.initializer}
    inits["ws"] = np.concatenate([inits["ws"], inits["ws"][:1]])
    g = op.graph
    bad = model(list(g.node), inits, list(g.input), list(g.output))
    with pytest.raises(xlac.errors.XlacError,
                       match=r"w's scale and zero point has \d+ elements but the input's axis 0 has"):
        xlac.InferenceSession(bad.SerializeToString())


@pytest.mark.parametrize("case", ["one_f32", "split", "u8_per_channel", "f64", "runtime_zero_point"])
def test_conv_integer_exact(case, tmp_path):
    """Sums past 2^24 (x near 255, weights of one sign) where the case says so: there some
    outputs are integers no f32 holds, so one f32 convolution could not give them."""
    rng = np.random.default_rng(11)
    c = 4 if case == "one_f32" else 160
    if case == "u8_per_channel":
        w = rng.integers(200, 256, (8, c, 3, 3)).astype(np.uint8)
        wz = rng.integers(0, 20, 8).astype(np.uint8)
    elif case == "one_f32":
        w, wz = rng.integers(-128, 128, (8, c, 3, 3)).astype(np.int8), np.array(0, np.int8)
    else:
        w = rng.integers(100, 128, (8, c, 3, 3)).astype(np.int8)
        wz = np.array(0 if case != "f64" else -3, np.int8)
    assert past_one_f32(w, wz) == (case != "one_f32")
    x = rng.integers(200, 256, (2, c, 9, 9)).astype(np.uint8)
    xz = np.uint8(3)
    m = conv_integer_model(w, wz, xz_input=case == "runtime_zero_point", w_input=case == "f64", xz=xz)
    f = {"x": x}
    if case == "runtime_zero_point":
        f["xz"] = np.array(xz, np.uint8)
    if case == "f64":
        f["w"] = w
    got, ops = xlac_run(m, f, tmp_path)
    want = conv_int_reference(x, w, xz, wz, 1)
    if case != "one_f32":
        assert (want.astype(np.float32).astype(np.int64) != want).any()
    assert got[0].dtype == np.int32
    np.testing.assert_array_equal(got[0], want)
    if case != "u8_per_channel":  # onnxruntime takes one w_zero_point only
        np.testing.assert_array_equal(got[0], ort_run(m, f)[0])
    assert ops.count("conv2d") == {"one_f32": 1, "f64": 1}.get(case, 2), ops


def small_cnn(seed=0):
    """An f32 CNN as an exporter writes it: conv-relu, strided conv-relu, residual add, pool."""
    rng = np.random.default_rng(seed)
    inits = {"w1": rng.normal(0, 0.2, (16, 3, 3, 3)).astype(np.float32), "b1": rng.normal(0, 0.1, 16).astype(np.float32),
             "w2": rng.normal(0, 0.1, (16, 16, 3, 3)).astype(np.float32), "b2": rng.normal(0, 0.1, 16).astype(np.float32),
             "w3": rng.normal(0, 0.1, (16, 16, 1, 1)).astype(np.float32), "b3": rng.normal(0, 0.1, 16).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1] * 4),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1] * 4, strides=[2, 2]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"]),
             helper.make_node("Add", ["c3", "r2"], ["s"]),
             helper.make_node("GlobalAveragePool", ["s"], ["y"])]
    return model(nodes, inits, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16, 16])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])


class Images:
    def __init__(self):
        self.batches = iter([{"x": np.random.default_rng(i).uniform(-1, 1, (2, 3, 16, 16)).astype(np.float32)}
                             for i in range(4)])

    def get_next(self):
        return next(self.batches, None)


@pytest.mark.parametrize("fmt", ["qoperator_static", "dynamic"])
def test_quantizer_outputs(fmt, tmp_path):
    """A CNN through onnxruntime.quantization as a user runs it: quantize_static in QOperator
    format (QLinearConv, and onnxruntime's own com.microsoft ops where it has them: refused by
    name, or run) and quantize_dynamic (ConvInteger). Outputs within the quantization's error of
    onnxruntime's on the same model."""
    q = pytest.importorskip("onnxruntime.quantization")
    src, dst = tmp_path / "f32.onnx", tmp_path / "q.onnx"
    src.write_bytes(small_cnn().SerializeToString())
    if fmt == "dynamic":
        q.quantize_dynamic(str(src), str(dst), weight_type=q.QuantType.QInt8)
    else:
        q.quantize_static(str(src), str(dst), Images(), quant_format=q.QuantFormat.QOperator,
                          op_types_to_quantize=["Conv", "Relu"], per_channel=True,
                          weight_type=q.QuantType.QInt8, activation_type=q.QuantType.QUInt8)
    m = onnx.load(str(dst))
    kinds = {n.op_type for n in m.graph.node}
    assert ("ConvInteger" if fmt == "dynamic" else "QLinearConv") in kinds, kinds
    f = Images().get_next()
    want, = ort_run(m, f)
    got, ops = xlac_run(m, f, tmp_path)
    r = np.abs(want).max()
    assert r > 0 and np.isfinite(got[0]).all()
    assert np.abs(got[0] - want).max() <= 0.02 * r, (np.abs(got[0] - want).max(), r)
    if fmt == "qoperator_static" and INT8:
        assert "quant_conv2d" in ops, ops


def ms_model(node, inits, inputs, out_type):
    g = helper.make_graph([node], "ms", inputs, [helper.make_tensor_value_info("y", out_type, None)],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    return m


def within_a_step(got, want, share=0.97):
    d = np.abs(got.astype(np.int32) - want.astype(np.int32))
    assert d.max() <= 1, d.max()
    assert np.mean(d == 0) >= share, np.mean(d == 0)
    assert len(np.unique(got)) > 10  # not all saturated


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("shapes", [((2, 16, 7, 7), (2, 16, 7, 7)), ((2, 16, 7, 7), (1, 16, 1, 1))],
                         ids=["same_shape", "broadcast"])
@pytest.mark.parametrize("act", [np.uint8, np.int8], ids=["u8", "i8"])
def test_qlinear_binary(op, shapes, act, tmp_path):
    rng = np.random.default_rng(2)
    tp = TensorProto.UINT8 if act == np.uint8 else TensorProto.INT8
    lo, hi = (0, 256) if act == np.uint8 else (-128, 128)
    z = (lambda v: np.array(v, act))
    inits = {"as": np.array(0.0517, np.float32), "az": z(131 if act == np.uint8 else 3),
             "bs": np.array(0.0213, np.float32), "bz": z(97 if act == np.uint8 else -7),
             "cs": np.array(0.0613 if op == "QLinearAdd" else 0.21, np.float32), "cz": z(120 if act == np.uint8 else -2)}
    node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"], domain="com.microsoft")
    m = ms_model(node, inits, [helper.make_tensor_value_info("a", tp, list(shapes[0])),
                               helper.make_tensor_value_info("b", tp, list(shapes[1]))], tp)
    f = {"a": rng.integers(lo, hi, shapes[0]).astype(act), "b": rng.integers(lo, hi, shapes[1]).astype(act)}
    got, ops = xlac_run(m, f, tmp_path)
    assert got[0].dtype == act
    if INT8 and op == "QLinearAdd" and shapes[0] == shapes[1]:
        assert ops == ["quant_add"], ops
    within_a_step(got[0], ort_run(m, f)[0])


@pytest.mark.parametrize("channels_last", [0, 1])
def test_qlinear_global_average_pool(channels_last, tmp_path):
    rng = np.random.default_rng(4)
    shape = (2, 7, 7, 24) if channels_last else (2, 24, 7, 7)
    inits = {"xs": np.array(0.0517, np.float32), "xz": np.array(131, np.uint8),
             "ys": np.array(0.0113, np.float32), "yz": np.array(128, np.uint8)}
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"],
                            domain="com.microsoft", channels_last=channels_last)
    m = ms_model(node, inits, [helper.make_tensor_value_info("x", TensorProto.UINT8, list(shape))], TensorProto.UINT8)
    # channels of their own levels, so that the means spread over the output range
    x = np.clip(rng.integers(-20, 21, shape) + rng.integers(60, 200, 24).reshape((1, 1, 1, 24) if channels_last else (1, 24, 1, 1)), 0, 255)
    f = {"x": x.astype(np.uint8)}
    got, _ = xlac_run(m, f, tmp_path)
    want, = ort_run(m, f)
    assert got[0].shape == want.shape
    within_a_step(got[0], want, share=0.9)


@pytest.mark.parametrize("quantized_out", [True, False], ids=["u8_out", "f32_out"])
@pytest.mark.parametrize("trans_b", [1, 0])
@pytest.mark.parametrize("per_column", [True, False], ids=["per_column", "per_tensor"])
def test_qgemm(quantized_out, trans_b, per_column, tmp_path):
    rng = np.random.default_rng(6)
    M, K, N = 5, 64, 24
    w = rng.integers(-127, 128, (N, K) if trans_b else (K, N)).astype(np.int8)
    bs = rng.uniform(2e-3, 1e-2, N if per_column else 1).astype(np.float32)
    bs = bs if per_column else bs.reshape(())
    inits = {"as": np.array(0.0213, np.float32), "az": np.array(131, np.uint8), "w": w, "bs": bs,
             "bz": np.zeros(bs.shape, np.int8), "c": rng.integers(-3000, 3000, N).astype(np.int32)}
    ins = ["a", "as", "az", "w", "bs", "bz", "c"]
    if quantized_out:
        inits.update(ys=np.array(0.0517, np.float32), yz=np.array(128, np.uint8))
        ins += ["ys", "yz"]
    node = helper.make_node("QGemm", ins, ["y"], domain="com.microsoft", transB=trans_b, alpha=1.0)
    m = ms_model(node, inits, [helper.make_tensor_value_info("a", TensorProto.UINT8, [M, K])],
                 TensorProto.UINT8 if quantized_out else TensorProto.FLOAT)
    f = {"a": rng.integers(0, 256, (M, K)).astype(np.uint8)}
    got, _ = xlac_run(m, f, tmp_path)
    want, = ort_run(m, f)
    if quantized_out:
        within_a_step(got[0], want)
    else:
        assert got[0].dtype == np.float32
        np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_other_contrib_ops_are_refused_by_name():
    node = helper.make_node("FusedMatMul", ["a", "a"], ["y"], domain="com.microsoft")
    m = ms_model(node, {}, [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 2])], TensorProto.FLOAT)
    with pytest.raises(xlac.errors.XlacError, match=r"FusedMatMul.*contrib op is not supported "
                       r"\(of com.microsoft, xlac reads QLinearAdd, QLinearMul, "
                       r"QLinearGlobalAveragePool and QGemm\)"):
        xlac.InferenceSession(m.SerializeToString())
