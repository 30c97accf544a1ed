"""Writes the QDQ models of tests/test_qdq.c into tests/data/onnx/qdq/, with onnxruntime's outputs.

Run from the repository root with the venv of tests/models (onnx, onnxruntime, numpy):
    tests/models/.venv/bin/python tests/onnx/make_qdq_models.py
Two models are quantized by onnxruntime's own quantizer (quantize_static, QDQ format, as a user
quantizes a float model): a MatMul/Add/Relu block (per tensor, u8 activations, i8 weights) and
a Conv block with per-channel weights. The others are written by hand with onnx.helper in the
forms of each opset: QuantizeLinear/DequantizeLinear of opset 10 (per tensor), 13 (per axis),
19 and 21 (i16, u16). Each NAME.onnx comes with NAME.inK.npy and onnxruntime's outputs
NAME.outK.npy (graph optimisations off, so that Q and DQ run as written, not as fused int8
kernels); list.txt names them with their input and output counts. The outputs are committed so
that CI needs neither torch nor onnxruntime; rerunning rewrites them.
"""
import os
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "onnx", "qdq")
rng = np.random.default_rng(11)
F = TensorProto.FLOAT


def run_ort(path, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def save(name, path, feeds, listing):
    m = onnx.load(path)
    onnx.save(m, os.path.join(OUT, name + ".onnx"))
    outs = run_ort(os.path.join(OUT, name + ".onnx"), feeds)
    for k, i in enumerate(m.graph.input):
        np.save(os.path.join(OUT, "%s.in%d.npy" % (name, k)), feeds[i.name])
    for k, o in enumerate(outs):
        np.save(os.path.join(OUT, "%s.out%d.npy" % (name, k)), o)
    listing.append("%s %d %d" % (name, len(m.graph.input), len(outs)))


class Reader(CalibrationDataReader):
    def __init__(self, name, shape, n=8):
        self.data = iter([{name: rng.uniform(-1, 1, shape).astype(np.float32)} for _ in range(n)])

    def get_next(self):
        return next(self.data, None)


def float_model(nodes, inputs, outputs, inits, opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(a, n) for n, a in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def quantized(name, m, shape, per_channel, listing, tmp):
    fp = os.path.join(tmp, name + "_f32.onnx")
    qp = os.path.join(tmp, name + ".onnx")
    onnx.save(m, fp)
    quantize_static(fp, qp, Reader("x", shape), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    save(name, qp, {"x": rng.uniform(-1, 1, shape).astype(np.float32)}, listing)


def matmul_block(listing, tmp):
    w = rng.uniform(-0.5, 0.5, (16, 8)).astype(np.float32)
    b = rng.uniform(-0.2, 0.2, (8,)).astype(np.float32)
    m = float_model([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
                     helper.make_node("Relu", ["a"], ["y"])],
                    [helper.make_tensor_value_info("x", F, [4, 16])], [helper.make_tensor_value_info("y", F, [4, 8])],
                    [("w", w), ("b", b)])
    quantized("qdq_matmul_per_tensor", m, (4, 16), False, listing, tmp)


def conv_block(listing, tmp):
    w = rng.uniform(-0.5, 0.5, (4, 3, 3, 3)).astype(np.float32)
    w[2] *= 0.1  # channels of different ranges: per channel scales differ
    b = rng.uniform(-0.2, 0.2, (4,)).astype(np.float32)
    m = float_model([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                     helper.make_node("Relu", ["c"], ["y"])],
                    [helper.make_tensor_value_info("x", F, [1, 3, 8, 8])],
                    [helper.make_tensor_value_info("y", F, [1, 4, 8, 8])], [("w", w), ("b", b)])
    quantized("qdq_conv_per_channel", m, (1, 3, 8, 8), True, listing, tmp)


def by_hand(name, opset, qtype, per_axis, listing, tmp):
    """x -> QuantizeLinear -> DequantizeLinear -> y, and the quantized values as a second output."""
    np_t = helper.tensor_dtype_to_np_dtype(qtype)
    shape = (2, 3, 4)
    if per_axis:
        scale = np.array([0.02, 0.05, 0.11], np.float32)
        zp = np.array([0, 3, -2] if np.issubdtype(np_t, np.signedinteger) else [128, 100, 7], np_t)
    else:
        scale, zp = np.array(0.03, np.float32), np.array(-5 if np.issubdtype(np_t, np.signedinteger) else 120, np_t)
    attrs = {"axis": 1} if per_axis else {}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], **attrs),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], **attrs)]
    m = float_model(nodes, [helper.make_tensor_value_info("x", F, list(shape))],
                    [helper.make_tensor_value_info("y", F, list(shape)),
                     helper.make_tensor_value_info("q", qtype, list(shape))],
                    [("s", scale), ("z", zp)], opset=opset)
    p = os.path.join(tmp, name + ".onnx")
    onnx.save(m, p)
    x = rng.uniform(-6, 6, shape).astype(np.float32)
    x.flat[:6] = [0.5 * 0.03, 1.5 * 0.03, 2.5 * 0.03, -0.5 * 0.03, 1e6, -1e6]  # ties to even, saturation
    save(name, p, {"x": x}, listing)


def residual_block(listing, tmp):
    """Conv + x -> Relu, quantized: the Add between QDQ pairs that xlac makes one quant_add."""
    w = rng.uniform(-0.5, 0.5, (4, 4, 3, 3)).astype(np.float32)
    b = rng.uniform(-0.2, 0.2, (4,)).astype(np.float32)
    m = float_model([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                     helper.make_node("Add", ["c", "x"], ["a"]), helper.make_node("Relu", ["a"], ["y"])],
                    [helper.make_tensor_value_info("x", F, [1, 4, 8, 8])],
                    [helper.make_tensor_value_info("y", F, [1, 4, 8, 8])], [("w", w), ("b", b)])
    quantized("qdq_residual_per_channel", m, (1, 4, 8, 8), True, listing, tmp)


def add_by_hand(name, a, b, y, listing, tmp):
    """Q(Add(DQ(Q(x, a)), DQ(Q(x, b))), y) over one input x; a, b, y: (scale, zero point, dtype).
    Outputs: the quantized sum, its DequantizeLinear, and DQ(Q(x, a)) (a second reader)."""
    shape = (2, 3, 4, 5)
    inits, nodes = [], []
    for tag, (s, z, t) in (("a", a), ("b", b), ("y", y)):
        inits += [("s" + tag, np.array(s, np.float32)), ("z" + tag, np.array(z, t))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "sa", "za"], ["qa"]),
             helper.make_node("QuantizeLinear", ["x", "sb", "zb"], ["qb"]),
             helper.make_node("DequantizeLinear", ["qa", "sa", "za"], ["da"]),
             helper.make_node("DequantizeLinear", ["qb", "sb", "zb"], ["db"]),
             helper.make_node("Add", ["da", "db"], ["s"]),
             helper.make_node("QuantizeLinear", ["s", "sy", "zy"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "sy", "zy"], ["y"]),
             helper.make_node("DequantizeLinear", ["qa", "sa", "za"], ["da2"])]
    qtype = helper.np_dtype_to_tensor_dtype(np.dtype(y[2]))
    m = float_model(nodes, [helper.make_tensor_value_info("x", F, list(shape))],
                    [helper.make_tensor_value_info("q", qtype, list(shape)),
                     helper.make_tensor_value_info("y", F, list(shape)),
                     helper.make_tensor_value_info("da2", F, list(shape))], inits, opset=13)
    p = os.path.join(tmp, name + ".onnx")
    onnx.save(m, p)
    x = rng.uniform(-40, 40, shape).astype(np.float32)
    x.flat[:4] = [1e6, -1e6, 0.25, -0.25]  # saturation at both ends, and halves
    save(name, p, {"x": x}, listing)


def add_captured(listing, tmp):
    """An Add between QDQ pairs whose sum an If branch also reads by name (a subgraph's capture):
    not the QuantizeLinear's alone, so it must stay an f32 Add."""
    shape = [2, 3, 4]
    s, z = np.array(0.05, np.float32), np.array(128, np.uint8)
    branch = helper.make_graph([helper.make_node("Identity", ["s"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", F, shape)])
    other = helper.make_graph([helper.make_node("Neg", ["s"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", F, shape)])
    nodes = [helper.make_node("QuantizeLinear", ["x", "s0", "z0"], ["qa"]),
             helper.make_node("DequantizeLinear", ["qa", "s0", "z0"], ["da"]),
             helper.make_node("DequantizeLinear", ["qa", "s0", "z0"], ["db"]),
             helper.make_node("Add", ["da", "db"], ["s"]),
             helper.make_node("QuantizeLinear", ["s", "s0", "z0"], ["q"]),
             helper.make_node("If", ["c"], ["w"], then_branch=branch, else_branch=other)]
    m = float_model(nodes, [helper.make_tensor_value_info("x", F, shape)],
                    [helper.make_tensor_value_info("q", TensorProto.UINT8, shape),
                     helper.make_tensor_value_info("w", F, shape)],
                    [("s0", s), ("z0", z), ("c", np.array(True))], opset=13)
    p = os.path.join(tmp, "qdq_add_captured.onnx")
    onnx.save(m, p)
    save("qdq_add_captured", p, {"x": rng.uniform(-3, 3, shape).astype(np.float32)}, listing)


def main():
    os.makedirs(OUT, exist_ok=True)
    listing = []
    with tempfile.TemporaryDirectory() as tmp:
        matmul_block(listing, tmp)
        conv_block(listing, tmp)
        by_hand("qdq_opset10_u8", 10, TensorProto.UINT8, False, listing, tmp)
        by_hand("qdq_opset13_i8_axis", 13, TensorProto.INT8, True, listing, tmp)
        by_hand("qdq_opset19_u8_axis", 19, TensorProto.UINT8, True, listing, tmp)
        by_hand("qdq_opset21_i16", 21, TensorProto.INT16, False, listing, tmp)
        by_hand("qdq_opset21_u16_axis", 21, TensorProto.UINT16, True, listing, tmp)
        residual_block(listing, tmp)
        # exact scales: sums of halves over y's 0.5, so a rounding tie wherever (qa - 128) is odd
        add_by_hand("qdq_add_u8_ties", (0.25, 128, np.uint8), (0.5, -3, np.int8), (0.5, 10, np.uint8),
                    listing, tmp)
        add_by_hand("qdq_add_i8", (0.137, -7, np.int8), (0.21, 5, np.int8), (0.291, -5, np.int8),
                    listing, tmp)
        add_captured(listing, tmp)
    with open(os.path.join(OUT, "list.txt"), "w") as f:
        f.write("# NAME INPUTS OUTPUTS: NAME.onnx, NAME.inK.npy, onnxruntime's NAME.outK.npy (make_qdq_models.py)\n")
        f.write("\n".join(listing) + "\n")


if __name__ == "__main__":
    main()
