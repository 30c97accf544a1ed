"""Convs between QDQ pairs, as onnxruntime's quantize_static writes them, which xlac imports as
quant_conv2d steps (executor/frontends/onnx/ops/qdq.c): the int8 convolution of the
quantized input and weights, rescaled per channel, and the next QuantizeLinear folded in when it
is the Conv's only reader; and the residual Add between QDQ pairs as one quant_add step, the
composition's arithmetic bit for bit.

Which numbers: xlac follows the QDQ reference (DequantizeLinear, Conv in real arithmetic,
QuantizeLinear), here onnxruntime with its optimizations off. The int8 sum is exact where the
reference's f32 convolution rounds, and the folded requantization rounds scale / y_scale first,
so a quantized value may land one step away where the reference lies within an ulp of a
rounding tie. The bound: every output within one quantization step of the reference at the
model's last scale, and the conv whose output is the model's (no requantization) within f32
rounding. onnxruntime's default session fuses the same pairs into its own int8 kernels and rounds
differently again; the difference between xlac and it, and between it and the reference, is
measured and bounded the same way. Skipped without onnx and onnxruntime."""
import ctypes
import json
import os
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


def int8_engine():
    """Whether this CPU's int8 kernels are the engine's (VNNI): only then does the importer build
    quant_conv2d and int8 products; elsewhere the QDQ pairs keep their f32 form."""
    f = _lib.executor().xe_cpu_int8_engine
    f.restype = ctypes.c_bool
    return bool(f())


INT8 = int8_engine()
# The share of outputs within f32 rounding of the reference. The int8 steps' sums are exact, so only
# the folded requantization's ties can flip a step; the f32 form (no VNNI) convolves in f32 on a
# different engine from onnxruntime's, and a flip in an early layer reaches many outputs.
EXACT_SHARE = 0.99 if INT8 else 0.8


class Net:
    """A small QDQ graph built node by node: x f32 [N, C, H, W] quantized once, then convs."""

    def __init__(self, seed, act_type=np.uint8):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.act = [], [], act_type
        self.n = 0

    def const(self, name, value):
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def quantize(self, x, scale, zero):
        """Q -> DQ of value x (scale and zero point per tensor); the dequantized name."""
        self.n += 1
        s = self.const("s%d" % self.n, np.array(scale, np.float32))
        z = self.const("z%d" % self.n, np.array(zero, self.act))
        self.nodes += [helper.make_node("QuantizeLinear", [x, s, z], ["q%d" % self.n]),
                       helper.make_node("DequantizeLinear", ["q%d" % self.n, s, z], ["d%d" % self.n])]
        return "d%d" % self.n

    def conv(self, x, c, m, k, x_scale, group=1, stride=1, pad=1, bias=True, per_channel=True):
        """Conv of dequantized x by DQ(i8 weights), bias DQ(i32, x_scale * w_scale)."""
        self.n += 1
        i = self.n
        w = self.rng.integers(-127, 128, (m, c // group, k, k)).astype(np.int8)
        ws = self.rng.uniform(2e-3, 1e-2, m if per_channel else 1).astype(np.float32)
        wz = np.zeros(ws.shape, np.int8)
        axis = {"axis": 0} if per_channel else {}
        wsc = ws if per_channel else ws.reshape(())
        self.nodes.append(helper.make_node(
            "DequantizeLinear", [self.const("w%d" % i, w), self.const("ws%d" % i, wsc),
                                 self.const("wz%d" % i, wz if per_channel else wz.reshape(()))],
            ["wd%d" % i], **axis))
        ins = [x, "wd%d" % i]
        if bias:
            bs = (np.float32(x_scale) * ws).astype(np.float32)
            b = self.rng.integers(-3000, 3000, m).astype(np.int32)
            self.nodes.append(helper.make_node(
                "DequantizeLinear", [self.const("b%d" % i, b),
                                     self.const("bs%d" % i, bs if per_channel else bs.reshape(())),
                                     self.const("bz%d" % i, np.zeros(bs.shape if per_channel else (), np.int32))],
                ["bd%d" % i], axis=0))
            ins.append("bd%d" % i)
        self.nodes.append(helper.make_node("Conv", ins, ["y%d" % i], group=group, strides=[stride] * 2,
                                           pads=[pad] * 4, kernel_shape=[k, k]))
        return "y%d" % i

    def model(self, x_shape, outs):
        g = helper.make_graph(self.nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
                              self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m


def resnet_block(seed, act=np.uint8, per_channel=True):
    """conv -> Q/DQ -> grouped strided conv -> Q/DQ -> conv, a residual add, and a last conv whose
    f32 output is the model's: four quant_conv2d, three with the QuantizeLinear folded in."""
    n = Net(seed, act)
    z = 128 if act == np.uint8 else 0
    # scales of no simple ratio to each other, as calibration gives them: with 0.05 and 0.06, a
    # sum of two dequantized values divided by the next scale lands on a tie one time in six
    x = n.quantize("x", 0.0213, z)
    a = n.quantize(n.conv(x, 8, 16, 3, 0.0213, per_channel=per_channel), 0.0517, 3 if act == np.uint8 else -2)
    b = n.quantize(n.conv(a, 16, 16, 3, 0.0517, group=4, stride=2), 0.0489, z)
    c = n.quantize(n.conv(b, 16, 16, 1, 0.0489, pad=0, bias=False), 0.0531, z)
    s = n.quantize(_add(n, b, c), 0.0613, z)
    return n.model([2, 8, 12, 12], [n.conv(s, 16, 4, 3, 0.0613)]), 0.0613


def _add(n, a, b):
    n.nodes.append(helper.make_node("Add", [a, b], ["sum"]))
    return "sum"


def ort_run(m, feeds, optimized):
    so = ort.SessionOptions()
    if not optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def xlac_run(m, feeds, tmp_path=None, auto_jit=0):
    so = xlac.SessionOptions()
    if tmp_path is not None:
        so.enable_profiling = True
        so.profile_file_prefix = str(tmp_path / "prof")
    sess = xlac.InferenceSession(m.SerializeToString(), so, auto_jit=auto_jit)
    out = sess.run(None, feeds)
    ops = None
    if tmp_path is not None:
        events = json.load(open(sess.end_profiling()))
        ops = [e["args"].get("op_name") for e in events if e.get("cat") == "Node"]
    return out, ops


def feeds_of(seed, shape=(2, 8, 12, 12)):
    return {"x": np.random.default_rng(seed).uniform(-2.5, 2.5, shape).astype(np.float32)}


@pytest.mark.parametrize("act", [np.uint8, np.int8], ids=["u8", "i8"])
@pytest.mark.parametrize("per_channel", [True, False], ids=["per_channel", "per_tensor"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_against_the_qdq_reference(act, per_channel, seed, tmp_path):
    m, step = resnet_block(seed, act, per_channel)
    f = feeds_of(seed)
    ref, = ort_run(m, f, optimized=False)
    got, ops = xlac_run(m, f, tmp_path)
    if INT8:
        assert ops.count("quant_add") == 1, ops  # the residual add
        assert ops.count("quant_conv2d") == 4, ops
        assert "conv2d" not in ops, ops
    else:
        assert ops.count("conv2d") == 4 and "quant_conv2d" not in ops, ops
    err = np.abs(got[0] - ref).max()
    # the last conv's input may be a step off (one scale of 0.06) where the reference lies on a
    # tie: its effect is bounded by the conv's largest weight sum, far above f32 rounding, so the
    # bound is stated on that input's step through the weights, and most elements are exact
    assert np.isfinite(got[0]).all()
    assert err <= 0.02 * np.abs(ref).max() + 1e-6, (err, np.abs(ref).max())
    assert np.mean(np.abs(got[0] - ref) <= 1e-4 * np.abs(ref).max() + 1e-6) >= EXACT_SHARE


def test_f32_output_within_rounding():
    """One conv whose output is the model's: the exact int8 sum against the f32 reference."""
    n = Net(5)
    x = n.quantize("x", 0.03, 128)
    y = n.conv(x, 8, 12, 3, 0.03)
    m = n.model([1, 8, 10, 10], [y])
    f = feeds_of(5, (1, 8, 10, 10))
    ref, = ort_run(m, f, optimized=False)
    got, _ = xlac_run(m, f)
    np.testing.assert_allclose(got[0], ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_against_onnxruntime_fused():
    """onnxruntime's own fused int8 kernels: xlac within the same bound of them as the reference
    is (both measured, both bounded by two output steps of the last conv's input scale)."""
    m, step = resnet_block(7)
    f = feeds_of(7)
    fused, = ort_run(m, f, optimized=True)
    ref, = ort_run(m, f, optimized=False)
    got, _ = xlac_run(m, f)
    r = np.abs(ref).max()
    off = np.abs(fused - ref).max()
    if off > 0.03 * r:
        # Without VNNI onnxruntime's u8 x s8 kernels saturate pairs of products in int16: on an
        # AMD EPYC with AVX2 only its fused output was 0.21 of the range off the reference, and
        # xlac's (the reference's f32 form there) as far from it. Nothing to say about xlac then;
        # test_against_the_qdq_reference holds it.
        pytest.skip("onnxruntime's fused int8 kernels are %.3g of the output's range off the QDQ "
                    "reference on this CPU" % (off / r))
    assert np.abs(got[0] - fused).max() <= 0.03 * r
    assert off <= 0.03 * r


def test_clustered_within_the_same_bound():
    """Clustered, the elementwise work between the convs (the residual add's DequantizeLinear,
    Add and QuantizeLinear) is generated code, whose f32 rounding may differ from the per-op
    kernels' by an ulp; at a rounding tie that is a quantization step, which the next convs carry.
    So clustered is held to the reference's bound, not to op by op's bits."""
    for seed in range(3):
        m, _ = resnet_block(seed)
        f = feeds_of(seed)
        ref, = ort_run(m, f, optimized=False)
        got, _ = xlac_run(m, f, auto_jit=2)
        r = np.abs(ref).max()
        assert np.isfinite(got[0]).all()
        assert np.abs(got[0] - ref).max() <= 0.02 * r + 1e-6
        assert np.mean(np.abs(got[0] - ref) <= 1e-4 * r + 1e-6) >= EXACT_SHARE


def test_quantize_with_another_reader_is_kept():
    """A QuantizeLinear that a graph output also reads is not folded: the conv gives f32 and the
    QuantizeLinear runs; both outputs match the reference."""
    n = Net(9)
    x = n.quantize("x", 0.02, 128)
    y = n.conv(x, 8, 8, 3, 0.02)
    d = n.quantize(y, 0.05, 0)
    m = n.model([1, 8, 9, 9], [d, y])
    f = feeds_of(9, (1, 8, 9, 9))
    ref = ort_run(m, f, optimized=False)
    got, ops = xlac_run(m, f, tmp_path=None)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-4, atol=1e-4 * np.abs(ref[1]).max())
    assert np.abs(got[0] - ref[0]).max() <= 0.05 + 1e-6  # at most one step of 0.05


def test_not_that_form_stays_f32():
    """A Conv of a DequantizeLinear of float weights (no int8 constant) is an f32 conv2d."""
    n = Net(11)
    x = n.quantize("x", 0.02, 128)
    n.nodes.append(helper.make_node("Conv", [x, n.const("wf", np.ones((4, 8, 3, 3), np.float32))], ["y"],
                                    pads=[1] * 4))
    m = n.model([1, 8, 6, 6], ["y"])
    f = feeds_of(11, (1, 8, 6, 6))
    ref, = ort_run(m, f, optimized=False)
    got, _ = xlac_run(m, f)
    np.testing.assert_allclose(got[0], ref, rtol=1e-4, atol=1e-4)


AVX2_SCRIPT = """
import sys, numpy as np, xlac
m, x, y = sys.argv[1:]
np.save(y, xlac.InferenceSession(open(m, "rb").read(), auto_jit=0).run(None, {"x": np.load(x)})[0])
"""


def test_f32_form_without_vnni(tmp_path):
    """oneDNN held to AVX2 (its u8 x s8 pairs saturate in int16 there): the importer keeps the QDQ
    pairs in f32 (the kernel's exact loop is tests/test_quant_conv.c's), within the same bound."""
    m, _ = resnet_block(4)
    f = feeds_of(4)
    (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
    np.save(tmp_path / "x.npy", f["x"])
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2")
    subprocess.run([sys.executable, "-c", AVX2_SCRIPT, str(tmp_path / "m.onnx"), str(tmp_path / "x.npy"),
                    str(tmp_path / "y.npy")], env=env, check=True)
    got = np.load(tmp_path / "y.npy")
    ref, = ort_run(m, f, optimized=False)
    r = np.abs(ref).max()
    assert np.abs(got - ref).max() <= 0.02 * r + 1e-6
    assert np.mean(np.abs(got - ref) <= 1e-4 * r + 1e-6) >= 0.8  # the f32 form's share


def qdq_matmuls(seed, act=np.uint8, zero=128, per_column=True, K=32):
    """x [2, 7, K] -> Q/DQ -> MatMul(DQ(W [K, 24], per column)) + b -> Q/DQ -> MatMul(DQ(W2 [24,
    16], per tensor)): two int8 products, the second's input quantized by the model."""
    n = Net(seed, act)
    x = n.quantize("x", 0.0213, zero)
    ins = []
    for i, (k, m, pc) in enumerate([(K, 24, per_column), (24, 16, False)]):
        w = n.rng.integers(-127, 128, (k, m)).astype(np.int8)
        ws = n.rng.uniform(2e-3, 1e-2, m if pc else 1).astype(np.float32)
        wsc, wz = (ws, np.zeros(m, np.int8)) if pc else (ws.reshape(()), np.zeros((), np.int8))
        n.nodes.append(helper.make_node("DequantizeLinear", [n.const("mw%d" % i, w), n.const("mws%d" % i, wsc),
                                                             n.const("mwz%d" % i, wz)], ["mwd%d" % i],
                                        **({"axis": 1} if pc else {})))
        n.nodes.append(helper.make_node("MatMul", [x, "mwd%d" % i], ["mm%d" % i]))
        if i == 0:
            n.nodes.append(helper.make_node("Add", ["mm0", n.const("mb", n.rng.uniform(-1, 1, m).astype(np.float32))],
                                            ["mm0b"]))
            x = n.quantize("mm0b", 0.0517, zero)
    g = helper.make_graph(n.nodes, "qdqmm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 7, K])],
                          [helper.make_tensor_value_info("mm1", TensorProto.FLOAT, None)], n.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("act,zero", [(np.uint8, 128), (np.uint8, 0), (np.int8, -5)], ids=["u8", "u8_zp0", "i8"])
@pytest.mark.parametrize("per_column", [True, False], ids=["per_column", "per_tensor"])
@pytest.mark.parametrize("auto_jit", [0, 2], ids=["op_by_op", "clustered"])
def test_matmul_against_the_qdq_reference(act, zero, per_column, auto_jit, tmp_path):
    """Both MatMuls are int8 products (an i32 matmul in the profile, no f32 one), within f32
    rounding of the reference on 99 % of outputs and a step of the middle scale at most."""
    m = qdq_matmuls(1, act, zero, per_column)
    f = {"x": np.random.default_rng(2).uniform(-2.5, 2.5, (2, 7, 32)).astype(np.float32)}
    ref, = ort_run(m, f, optimized=False)
    so = xlac.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    sess = xlac.InferenceSession(m.SerializeToString(), so, auto_jit=auto_jit)
    got = sess.run(None, f)[0]
    if auto_jit == 0:
        events = json.load(open(sess.end_profiling()))
        types = [e["args"].get("type", "") for e in events if e.get("cat") == "Node"
                 and e["args"].get("op_name") == "matmul"]
        want = "i32" if INT8 else "f32"
        assert len(types) == 2 and all(t.startswith(want) for t in types), types
    r = np.abs(ref).max()
    assert np.isfinite(got).all()
    assert np.abs(got - ref).max() <= 0.02 * r + 1e-6
    assert np.mean(np.abs(got - ref) <= 1e-4 * r + 1e-6) >= EXACT_SHARE


def test_matmul_symbolic_rows_and_other_readers():
    """A symbolic batch runs at two sizes; a DequantizeLinear that a graph output also reads stays."""
    m = qdq_matmuls(3)
    m.graph.output.append(helper.make_tensor_value_info("d1", TensorProto.FLOAT, None))
    sess = xlac.InferenceSession(m.SerializeToString(), auto_jit=0)
    for rows in (1, 5):
        f = {"x": np.random.default_rng(rows).uniform(-2, 2, (rows, 7, 32)).astype(np.float32)}
        ref = ort_run(m, f, optimized=False)
        got = sess.run(None, f)
        np.testing.assert_array_equal(got[1], ref[1])
        r = np.abs(ref[0]).max()
        assert np.abs(got[0] - ref[0]).max() <= 0.02 * r + 1e-6


@pytest.mark.parametrize("trans_b,per_row", [(1, True), (1, False), (0, True)], ids=["transB_per_row", "transB_per_tensor", "plain_per_column"])
def test_gemm_against_the_qdq_reference(trans_b, per_row, tmp_path):
    """A classifier head as quantize_static writes it: Gemm(DQ(q), DQ(W), DQ(bias i32)), W [N, K]
    with transB (per row, axis 0) or [K, N] (per column, axis 1): an i32 product in the profile."""
    n = Net(21)
    x = n.quantize("x", 0.0213, 128)
    K, N = 40, 12
    w = n.rng.integers(-127, 128, (N, K) if trans_b else (K, N)).astype(np.int8)
    ws = n.rng.uniform(2e-3, 1e-2, N if per_row else 1).astype(np.float32)
    axis = {"axis": 0 if trans_b else 1} if per_row else {}
    wz = np.zeros(ws.shape if per_row else (), np.int8)
    n.nodes.append(helper.make_node("DequantizeLinear", [n.const("gw", w), n.const("gws", ws if per_row else ws.reshape(())),
                                                         n.const("gwz", wz)], ["gwd"], **axis))
    bs = (np.float32(0.0213) * ws).astype(np.float32)
    n.nodes.append(helper.make_node("DequantizeLinear", [n.const("gb", n.rng.integers(-2000, 2000, N).astype(np.int32)),
                                                         n.const("gbs", bs if per_row else bs.reshape(())),
                                                         n.const("gbz", np.zeros(bs.shape if per_row else (), np.int32))],
                                    ["gbd"], axis=0))
    n.nodes.append(helper.make_node("Gemm", [x, "gwd", "gbd"], ["y"], transB=trans_b))
    g = helper.make_graph(n.nodes, "qdqgemm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], n.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    f = {"x": np.random.default_rng(4).uniform(-2.5, 2.5, (3, K)).astype(np.float32)}
    ref, = ort_run(m, f, optimized=False)
    so = xlac.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    sess = xlac.InferenceSession(m.SerializeToString(), so, auto_jit=0)
    got = sess.run(None, f)[0]
    events = json.load(open(sess.end_profiling()))
    types = [e["args"].get("type", "") for e in events if e.get("cat") == "Node"
             and e["args"].get("op_name") == "matmul"]
    assert len(types) == 1 and types[0].startswith("i32" if INT8 else "f32"), types
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


@pytest.mark.parametrize("act,zero", [(np.uint8, 128), (np.int8, -3)], ids=["u8", "i8"])
def test_dequantize_reads_the_quantizers_f32_value(act, zero, tmp_path):
    """x -> QuantizeLinear -> DequantizeLinear -> Relu, and the quantized value also an output:
    the DequantizeLinear reads the quantizer's rounded and clamped f32 value (ops/quant.c), so
    op by op only the output's cast is left, and the result is the QDQ definition's, NaN
    included (the cast makes it 0), ties to even and saturation at both ends."""
    scale = np.float32(0.25)
    onnx_dt = TensorProto.UINT8 if act == np.uint8 else TensorProto.INT8
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node("Relu", ["d"], ["y"])]
    inits = [numpy_helper.from_array(np.array(scale), "s"), numpy_helper.from_array(np.array(zero, act), "z")]
    g = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8]),
                           helper.make_tensor_value_info("q", onnx_dt, [2, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    x = np.array([[0.125, 0.375, -0.125, -0.375, 1e9, -1e9, np.nan, 0.0],
                  [np.inf, -np.inf, 3.3, -7.7, 31.875, -32.125, 0.62, -0.0]], np.float32)
    info = np.iinfo(act)
    q = np.clip(np.rint(x / scale) + zero, info.min, info.max)
    q = np.where(np.isnan(q), 0, q).astype(act)  # the cast of NaN: 0
    want = np.maximum((q.astype(np.float32) - np.float32(zero)) * scale, 0)
    (y, qo), ops = xlac_run(m, {"x": x}, tmp_path)
    np.testing.assert_array_equal(qo, q)
    np.testing.assert_array_equal(y, want)
    assert ops.count("cast") == 1, ops  # the output q's; none back to f32 for the DequantizeLinear
    assert "round" in ops, ops
