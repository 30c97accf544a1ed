"""Writes the small ONNX models of tests/test_onnx.c into tests/data/onnx/.

Run from the repository root with the venv of run_node_tests.sh:
    tests/onnx/.venv/bin/python tests/onnx/make_test_models.py
Every mapped op gets a tiny model NAME.onnx with its inputs
(NAME.in0.npy, ...) and the outputs numpy computes for it
(NAME.out0.npy, ..., from onnx.reference, a numpy implementation);
ops.txt lists them. The other files cover opset variants (an attribute in an
old opset, an input in a new one), dim_param, external data, .pb feeds and
unsupported nodes. The outputs are committed; rerunning rewrites them.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "onnx")
rng = np.random.default_rng(7)
F = TensorProto.FLOAT


def x(*shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return rng.uniform(lo, hi, shape).astype(dtype)


def model(nodes, inputs, outputs, opset=17, inits=()):
    vin = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in inputs]
    vout = [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in outputs]
    g = helper.make_graph(nodes, "g", vin, vout, [numpy_helper.from_array(a, n) for n, a in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def save(name, m, inputs, expect=None):
    onnx.save(m, os.path.join(OUT, name + ".onnx"))
    feeds = dict(inputs)
    outs = expect(*[a for _, a in inputs]) if expect else ReferenceEvaluator(m).run(None, feeds)
    for k, (_, a) in enumerate(inputs):
        np.save(os.path.join(OUT, "%s.in%d.npy" % (name, k)), a)
    for k, a in enumerate(outs):
        np.save(os.path.join(OUT, "%s.out%d.npy" % (name, k)), np.array(a, order="C"))
    return len(inputs), len(outs)


def op(name, op_type, inputs, attrs=None, opset=17, n_out=1, inits=(), expect=None):
    names = [n for n, _ in inputs] + [n for n, _ in inits]
    outs = ["y%d" % k for k in range(n_out)]
    node = helper.make_node(op_type, names, outs, name="n_" + name, **(attrs or {}))
    return name, save(name, model([node], inputs, outs, opset, inits), inputs, expect)


def softmax_flat(a, axis=1):
    """Softmax before opset 13: over the trailing axes flattened (onnx.reference has only 13's)."""
    f = a.reshape(int(np.prod(a.shape[:axis])), -1)
    e = np.exp(f - f.max(1, keepdims=True))
    return [(e / e.sum(1, keepdims=True)).reshape(a.shape)]


def lrn(a, size=3, alpha=1e-4, beta=0.75, bias=1.0):
    """LRN as the spec says (onnx.reference's loops over the batch dim, not the channels)."""
    sq = np.zeros_like(a)
    lo, hi = (size - 1) // 2, (size - 1) - (size - 1) // 2
    for c in range(a.shape[1]):
        sq[:, c] = (a[:, max(0, c - lo):min(a.shape[1], c + hi + 1)] ** 2).sum(1)
    return [(a / (bias + alpha / size * sq) ** beta).astype(a.dtype)]


def unary_ops():
    pos = x(3, 4, lo=0.1, hi=3.0)
    ops = [op("Neg", "Neg", [("a", x(3, 4))]), op("Abs", "Abs", [("a", x(3, 4))]),
           op("Exp", "Exp", [("a", x(3, 4))]), op("Log", "Log", [("a", pos)]),
           op("Sqrt", "Sqrt", [("a", pos)]), op("Tanh", "Tanh", [("a", x(3, 4))]),
           op("Sigmoid", "Sigmoid", [("a", x(3, 4))]), op("Relu", "Relu", [("a", x(3, 4))]),
           op("Erf", "Erf", [("a", x(3, 4))]), op("Sin", "Sin", [("a", x(3, 4))]),
           op("Cos", "Cos", [("a", x(3, 4))]), op("Floor", "Floor", [("a", x(3, 4))]),
           op("Ceil", "Ceil", [("a", x(3, 4))]), op("Reciprocal", "Reciprocal", [("a", pos)]),
           op("LeakyRelu", "LeakyRelu", [("a", x(3, 4))], {"alpha": 0.2}),
           op("Elu", "Elu", [("a", x(3, 4))], {"alpha": 0.7}),
           op("Selu", "Selu", [("a", x(3, 4))]), op("Celu", "Celu", [("a", x(3, 4))]),
           op("HardSigmoid", "HardSigmoid", [("a", x(3, 4))], {"alpha": 0.3, "beta": 0.4}),
           op("HardSwish", "HardSwish", [("a", x(3, 4, lo=-4, hi=4))]),
           op("Softsign", "Softsign", [("a", x(3, 4))]), op("Softplus", "Softplus", [("a", x(3, 4))]),
           op("Mish", "Mish", [("a", x(3, 4))], opset=18), op("Sign", "Sign", [("a", x(3, 4))]),
           op("ThresholdedRelu", "ThresholdedRelu", [("a", x(3, 4))], {"alpha": 0.5}),
           op("Shrink", "Shrink", [("a", x(3, 4))], {"bias": 0.1, "lambd": 0.6}),
           op("Tan", "Tan", [("a", x(3, 4, lo=-1, hi=1))]), op("Sinh", "Sinh", [("a", x(3, 4))]),
           op("Cosh", "Cosh", [("a", x(3, 4))]), op("Asinh", "Asinh", [("a", x(3, 4))]),
           op("Acosh", "Acosh", [("a", x(3, 4, lo=1.1, hi=4))]),
           op("Atanh", "Atanh", [("a", x(3, 4, lo=-0.9, hi=0.9))]),
           op("Round", "Round", [("a", np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.4, 2.6, -2.6], np.float32))]),
           op("Gelu", "Gelu", [("a", x(3, 4))], opset=20),
           op("GeluTanh", "Gelu", [("a", x(3, 4))], {"approximate": "tanh"}, opset=20),
           op("IsNaN", "IsNaN", [("a", np.array([1, np.nan, 2], np.float32))]),
           op("IsInf", "IsInf", [("a", np.array([1, np.inf, -np.inf], np.float32))]),
           op("Not", "Not", [("a", np.array([True, False]))]),
           op("Identity", "Identity", [("a", x(2, 3))]), op("Dropout", "Dropout", [("a", x(2, 3))]),
           op("Cast", "Cast", [("a", x(2, 3))], {"to": TensorProto.INT32}),
           op("CastLike", "CastLike", [("a", x(2, 3)), ("b", np.array([1.0], np.float64))])]
    return ops


def binary_ops():
    a, b = x(2, 3, 4), x(3, 4)
    i, j = rng.integers(-9, 9, (2, 5)).astype(np.int32), rng.integers(1, 5, (2, 5)).astype(np.int32)
    t, f = np.array([True, False, True]), np.array([True, True, False])
    ops = [op(n, n, [("a", a), ("b", b)]) for n in ("Add", "Sub", "Mul", "Div", "Equal", "Less",
                                                     "LessOrEqual", "Greater", "GreaterOrEqual")]
    ops += [op("DivInt", "Div", [("a", i), ("b", j * np.sign(i + 0.5).astype(np.int32))]),
            op("Mod", "Mod", [("a", i), ("b", j)]),
            op("Pow", "Pow", [("a", x(3, 4, lo=0.5, hi=2)), ("b", x(3, 4))]),
            op("And", "And", [("a", t), ("b", f)]), op("Or", "Or", [("a", t), ("b", f)]),
            op("Xor", "Xor", [("a", t), ("b", f)]),
            op("Max", "Max", [("a", a), ("b", b), ("c", x(4))]), op("Min", "Min", [("a", a), ("b", b)]),
            op("Sum", "Sum", [("a", a), ("b", b), ("c", x(4))]), op("Mean", "Mean", [("a", a), ("b", b)]),
            op("Where", "Where", [("c", np.array([True, False, True])), ("a", x(2, 3)), ("b", x(3))]),
            op("PRelu", "PRelu", [("a", x(2, 3)), ("s", x(3))]),
            op("Clip", "Clip", [("a", x(3, 4))], inits=[("lo", np.float32(-0.5)), ("hi", np.float32(0.7))]),
            op("Clip9", "Clip", [("a", x(3, 4))], {"min": -0.5, "max": 0.7}, opset=9)]
    return ops


def shape_ops():
    a = x(2, 3, 4)
    i64 = lambda *v: np.array(v, np.int64)
    return [op("Reshape", "Reshape", [("a", a)], inits=[("s", i64(4, 0, -1))]),
            op("Flatten", "Flatten", [("a", a)], {"axis": 2}),
            op("Squeeze", "Squeeze", [("a", x(2, 1, 3))], inits=[("ax", i64(1))]),
            op("Squeeze11", "Squeeze", [("a", x(2, 1, 3))], {"axes": [1]}, opset=11),
            op("Unsqueeze", "Unsqueeze", [("a", x(2, 3))], inits=[("ax", i64(0, 3))]),
            op("Unsqueeze11", "Unsqueeze", [("a", x(2, 3))], {"axes": [0, 3]}, opset=11),
            op("Transpose", "Transpose", [("a", a)], {"perm": [2, 0, 1]}),
            op("Concat", "Concat", [("a", a), ("b", x(2, 1, 4))], {"axis": 1}),
            op("Split", "Split", [("a", x(2, 6))], {"axis": 1}, n_out=3),
            op("Split13", "Split", [("a", x(2, 6))], {"axis": 1}, n_out=2, inits=[("s", i64(2, 4))]),
            op("Split11", "Split", [("a", x(2, 6))], {"axis": 1, "split": [1, 5]}, opset=11, n_out=2),
            op("Slice", "Slice", [("a", a)], inits=[("st", i64(1, -3)), ("en", i64(3, 100)), ("ax", i64(1, 2))]),
            op("Slice9", "Slice", [("a", a)], {"starts": [1], "ends": [3], "axes": [1]}, opset=9),
            op("Expand", "Expand", [("a", x(3, 1))], inits=[("s", i64(2, 3, 4))]),
            op("Tile", "Tile", [("a", x(2, 3))], inits=[("r", i64(2, 2))]),
            op("Shape", "Shape", [("a", a)]), op("Size", "Size", [("a", a)]),
            op("ConstantOfShape", "ConstantOfShape", [], {"value": numpy_helper.from_array(np.array([3], np.int32))},
               inits=[("s", i64(2, 3))]),
            op("Range", "Range", [], inits=[("s", np.float32(1)), ("l", np.float32(5)), ("d", np.float32(1.5))]),
            op("EyeLike", "EyeLike", [("a", x(3, 4))], {"k": 1}),
            op("Gather", "Gather", [("a", x(5, 3))], {"axis": 0}, inits=[("i", i64(4, 0, -1))]),
            op("Pad", "Pad", [("a", x(2, 3))], inits=[("p", i64(1, 0, 0, 2)), ("v", np.float32(0.5))]),
            op("Trilu", "Trilu", [("a", x(4, 5))], {"upper": 0}),
            op("Constant", "Constant", [], {"value": numpy_helper.from_array(x(2, 2))}),
            op("SliceSteps", "Slice", [("a", x(5, 6))],
               inits=[("st", i64(4, 0)), ("en", i64(-6, 6)), ("ax", i64(0, 1)), ("sp", i64(-2, 2))]),
            op("PadReflect", "Pad", [("a", x(3, 4))], {"mode": "reflect"}, inits=[("p", i64(1, 2, 2, 1))]),
            op("PadEdge", "Pad", [("a", x(3, 4))], {"mode": "edge"}, inits=[("p", i64(0, 3, 2, 0))]),
            op("GatherElements", "GatherElements", [("a", x(3, 4))], {"axis": 1},
               inits=[("i", np.array([[0, 3], [-1, 1], [2, 2]], np.int64))]),
            op("DepthToSpace", "DepthToSpace", [("a", x(1, 8, 2, 3))], {"blocksize": 2, "mode": "CRD"}),
            op("SpaceToDepth", "SpaceToDepth", [("a", x(1, 2, 4, 6))], {"blocksize": 2}),
            op("OneHot", "OneHot", [("i", np.array([[0, 2], [-1, 5]], np.int64))], {"axis": 1},
               inits=[("d", np.int64(4)), ("v", np.array([0.5, 3.0], np.float32))])]


def reduce_ops():
    a = x(2, 3, 4, lo=0.1, hi=2)
    i64 = lambda *v: np.array(v, np.int64)
    ops = [op(n, n, [("a", a)], {"keepdims": 0}, opset=18, inits=[("ax", i64(1))])
           for n in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                     "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")]
    ops += [op("ReduceSum11", "ReduceSum", [("a", a)], {"axes": [0, 2]}, opset=11),
            op("ReduceMean13", "ReduceMean", [("a", a)], {"axes": [-1]}, opset=13),
            op("ArgMax", "ArgMax", [("a", a)], {"axis": 1}), op("ArgMin", "ArgMin", [("a", a)], {"axis": 2, "keepdims": 0})]
    return ops


def nn_ops():
    c = 3
    return [op("MatMul", "MatMul", [("a", x(2, 3, 4)), ("b", x(4, 5))]),
            op("Gemm", "Gemm", [("a", x(4, 3)), ("b", x(5, 4)), ("c", x(5))],
               {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}),
            op("Softmax", "Softmax", [("a", x(2, 3, 4))], {"axis": 1}),
            op("Softmax11", "Softmax", [("a", x(2, 3, 4))], {"axis": 1}, opset=11, expect=softmax_flat),
            op("LogSoftmax", "LogSoftmax", [("a", x(2, 3, 4))]),
            op("Hardmax", "Hardmax", [("a", x(2, 3, 4))]),
            op("LayerNormalization", "LayerNormalization", [("a", x(2, 3, 4)), ("s", x(4)), ("b", x(4))], n_out=3),
            op("BatchNormalization", "BatchNormalization",
               [("a", x(2, c, 4, 5)), ("s", x(c)), ("b", x(c)), ("m", x(c)), ("v", x(c, lo=0.5, hi=2))]),
            op("InstanceNormalization", "InstanceNormalization", [("a", x(2, c, 4, 5)), ("s", x(c)), ("b", x(c))]),
            op("GlobalAveragePool", "GlobalAveragePool", [("a", x(2, c, 4, 5))]),
            op("GlobalMaxPool", "GlobalMaxPool", [("a", x(2, c, 4, 5))]),
            op("LpNormalization", "LpNormalization", [("a", x(2, 3, 4))], {"axis": 1}),
            op("MeanVarianceNormalization", "MeanVarianceNormalization", [("a", x(2, 3, 4, 5))]),
            op("LRN", "LRN", [("a", x(2, 5, 3, 3))], {"size": 3}, expect=lrn),
            op("RMSNormalization", "RMSNormalization", [("a", x(2, 3, 4)), ("s", x(4))], opset=23),
            op("NegativeLogLikelihoodLoss", "NegativeLogLikelihoodLoss",
               [("a", x(3, 5)), ("t", np.array([0, 4, 2], np.int64)), ("w", x(5, lo=0.5, hi=1))], opset=22),
            op("SoftmaxCrossEntropyLoss", "SoftmaxCrossEntropyLoss",
               [("a", x(3, 5, 2)), ("t", np.array([[0, 4], [2, 1], [3, 3]], np.int64))],
               {"reduction": "sum", "ignore_index": 3}, opset=22, n_out=2),
            op("Attention", "Attention", [("q", x(2, 3, 4, 8)), ("k", x(2, 3, 5, 8)), ("v", x(2, 3, 5, 8))],
               {"is_causal": 1}, opset=23),
            op("AttentionGQA", "Attention", [("q", x(2, 4, 16)), ("k", x(2, 5, 8)), ("v", x(2, 5, 8))],
               {"q_num_heads": 4, "kv_num_heads": 2}, opset=23),
            op("ArgMaxLast", "ArgMax", [("a", np.array([[1, 3, 3], [2, 2, 0]], np.float32))],
               {"axis": 1, "select_last_index": 1})]


def conv_pool_ops():
    a = x(2, 4, 7, 6)
    return [op("Conv", "Conv", [("a", a), ("w", x(6, 2, 3, 2)), ("b", x(6))],
               {"group": 2, "pads": [1, 0, 2, 1], "strides": [2, 1], "dilations": [1, 2]}),
            op("ConvSameUpper", "Conv", [("a", a), ("w", x(3, 4, 3, 3))],
               {"auto_pad": "SAME_UPPER", "strides": [2, 2], "kernel_shape": [3, 3]}),
            op("ConvSameLower", "Conv", [("a", a), ("w", x(3, 4, 2, 2))], {"auto_pad": "SAME_LOWER"}),
            op("ConvDepthwise", "Conv", [("a", a), ("w", x(4, 1, 3, 3))], {"group": 4, "pads": [1, 1, 1, 1]}),
            op("MaxPool", "MaxPool", [("a", a)],
               {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1], "ceil_mode": 1}),
            op("MaxPoolDilated", "MaxPool", [("a", a)], {"kernel_shape": [2, 2], "dilations": [2, 2]}),
            op("AveragePool", "AveragePool", [("a", a)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
            op("AveragePoolIncludePad", "AveragePool", [("a", a)],
               {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2], "count_include_pad": 1}),
            op("AveragePoolSameLower", "AveragePool", [("a", a)],
               {"kernel_shape": [2, 3], "strides": [2, 2], "auto_pad": "SAME_LOWER"}),
            op("GatherRuntime", "Gather", [("a", x(5, 3)), ("i", np.array([[4, 0], [-1, 2]], np.int64))],
               {"axis": 0}),
            op("DropoutMask", "Dropout", [("a", x(2, 3))], n_out=2),
            dynamic("PadDynamic", "Pad", x(2, 3), {"mode": "constant"},
                    [("p", np.array([1, 0, 0, 2], np.int64)), ("v", np.array(1.5, np.float32))]),
            dynamic("TileDynamic", "Tile", x(2, 3), {}, [("r", np.array([2, 3], np.int64))])]


def tiny_cnn():
    """Conv+BatchNorm+Relu, depthwise Conv+BatchNorm+Clip(0,6), 1x1 Conv+BatchNorm, residual Add,
    SiLU, GlobalAveragePool, Gemm: a network in small, one cluster at XLAC_AUTO_JIT=2."""
    inits, nodes = [], []

    def init(n, a):
        inits.append((n, a))
        return n

    def conv_bn(x, ci, co, k, name, group=1, stride=1):
        w = init(name + "w", x_(co, ci // group, k, k))
        nodes.append(helper.make_node("Conv", [x, w], [name], name=name, pads=[k // 2] * 4, group=group,
                                      strides=[stride] * 2))
        ps = [init(name + s, a) for s, a in (("g", x_(co, lo=0.5, hi=1.5)), ("b", x_(co)), ("m", x_(co)),
                                            ("v", x_(co, lo=0.5, hi=1.5)))]
        nodes.append(helper.make_node("BatchNormalization", [name] + ps, [name + "bn"], name=name + "bn"))
        return name + "bn"

    x_ = lambda *s, lo=-0.5, hi=0.5: x(*s, lo=lo, hi=hi)
    nodes.append(helper.make_node("Relu", [conv_bn("a", 3, 16, 3, "c1", stride=2)], ["r1"], name="r1"))
    lo, hi = init("lo", np.array(0, np.float32)), init("hi", np.array(6, np.float32))
    nodes.append(helper.make_node("Clip", [conv_bn("r1", 16, 16, 3, "c2", group=16), lo, hi], ["r2"], name="r2"))
    nodes += [helper.make_node("Add", [conv_bn("r2", 16, 16, 1, "c3"), "r1"], ["s"], name="s"),
              helper.make_node("Sigmoid", ["s"], ["sg"], name="sg"),
              helper.make_node("Mul", ["s", "sg"], ["sw"], name="sw"),
              helper.make_node("GlobalAveragePool", ["sw"], ["gp"], name="gp"),
              helper.make_node("Flatten", ["gp"], ["fl"], name="fl"),
              helper.make_node("Gemm", ["fl", init("fw", x_(10, 16)), init("fb", x_(10))], ["y0"], name="fc",
                               transB=1)]
    a = x(2, 3, 16, 16, lo=-1.0, hi=1.0)
    return "TinyCNN", save("TinyCNN", model(nodes, [("a", a)], ["y0"], 17, inits), [("a", a)])


def engine_ops():
    """1-D and 3-D Conv, BatchNormalization folded into a Conv, Pow by a small integer (its own
    random stream, so that these models do not change the ones above)."""
    global rng
    saved, rng = rng, np.random.default_rng(26)
    bn = [("w", x(6, 4, 3, 3)), ("cb", x(6)), ("g", x(6)), ("be", x(6)), ("m", x(6)),
          ("v", x(6, lo=0.5, hi=2.0))]
    bn_nodes = [helper.make_node("Conv", ["a", "w", "cb"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                helper.make_node("BatchNormalization", ["c", "g", "be", "m", "v"], ["y0"], name="bn",
                                 epsilon=1e-3)]
    pw = [helper.make_node("Pow", ["a", "three"], ["y0"], name="cube"),
          helper.make_node("Pow", ["a", "two"], ["y1"], name="square")]
    a_pw = x(3, 5)
    tr = [helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 2, 1]),
          helper.make_node("MatMul", ["q", "kt"], ["y0"], name="qk")]
    q, k = x(2, 5, 8), x(2, 7, 8)
    rows = [op("Conv1D", "Conv", [("a", x(2, 4, 11))], {"group": 2, "pads": [1, 2], "strides": [2]},
               inits=[("w", x(6, 2, 3)), ("b", x(6))]),
            op("Conv1DDilated", "Conv", [("a", x(1, 8, 20))], {"pads": [2, 2], "dilations": [2]},
               inits=[("w", x(16, 8, 3))]),
            op("Conv3D", "Conv", [("a", x(2, 4, 5, 6, 7))],
               {"group": 2, "pads": [1, 0, 1, 0, 2, 1], "strides": [2, 1, 2], "dilations": [1, 2, 1]},
               inits=[("w", x(6, 2, 3, 2, 3)), ("b", x(6))]),
            op("Conv3DSame", "Conv", [("a", x(1, 3, 4, 5, 5))], {"auto_pad": "SAME_UPPER"},
               inits=[("w", x(4, 3, 2, 3, 3))]),
            ("ConvBatchNorm", save("ConvBatchNorm", model(bn_nodes, [("a", x(2, 4, 6, 5))], ["y0"], 17, bn),
                                   [("a", x(2, 4, 6, 5))])),
            ("PowSmall", save("PowSmall", model(pw, [("a", a_pw)], ["y0", "y1"], 17,
                                                [("three", np.array(3.0, np.float32)),
                                                 ("two", np.array([2.0], np.float32))]),
                              [("a", a_pw)])),
            ("MatMulTransposed", save("MatMulTransposed", model(tr, [("q", q), ("k", k)], ["y0"]),
                                      [("q", q), ("k", k)])),
            tiny_cnn()]
    rng = saved
    return rows


def dynamic(name, op_type, a, attrs, inits):
    """A one-node model whose input a has a dim_param first dim (its size from the feed)."""
    node = helper.make_node(op_type, ["a"] + [n for n, _ in inits], ["y0"], name="n_" + name, **attrs)
    m = model([node], [], ["y0"], 18, inits)
    m.graph.input.insert(0, helper.make_tensor_value_info("a", F, ["n"] + list(a.shape[1:])))
    return name, save(name, m, [("a", a)])


def special_models():
    # dim_param: a batch of any size
    m = model([helper.make_node("Relu", ["x"], ["h"], name="relu"),
               helper.make_node("ReduceSum", ["h", "ax"], ["y"], name="sum", keepdims=0)],
              [], ["y"], 13, [("ax", np.array([1], np.int64))])
    m.graph.input.append(helper.make_tensor_value_info("x", F, ["batch", 3]))
    onnx.save(m, os.path.join(OUT, "dynamic.onnx"))
    # external data: the weight lives in weights.bin
    w = x(4, 3)
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [("x", x(2, 4))], ["y"], 17,
              [("w", w)])
    onnx.save_model(m, os.path.join(OUT, "external.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="external.weights.bin", size_threshold=0)
    np.save(os.path.join(OUT, "external.w.npy"), w)
    m = onnx.load(os.path.join(OUT, "external.onnx"), load_external_data=False)
    for e in m.graph.initializer[0].external_data:
        if e.key == "location":
            e.value = "../external.weights.bin"
    onnx.save(m, os.path.join(OUT, "external_escape.onnx"))
    # .pb feeds in ONNX's test_data_set layout
    d = os.path.join(OUT, "pbfeed")
    os.makedirs(d, exist_ok=True)
    a = x(2, 3)
    with open(os.path.join(d, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(a, "a").SerializeToString())
    np.save(os.path.join(OUT, "pbfeed.expected.npy"), np.exp(a))
    onnx.save(model([helper.make_node("Exp", ["a"], ["y"], name="e")], [("a", a)], ["y"]),
              os.path.join(OUT, "pbfeed.onnx"))
    # three unsupported nodes, each for another reason, and a supported one
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="fine"),
             helper.make_node("Conv", ["v", "w"], ["c"], name="conv_1"),  # 4-D: beyond 3-D
             helper.make_node("Cast", ["x"], ["am"], name="cast_c64", to=TensorProto.COMPLEX64),
             helper.make_node("Custom", ["x"], ["z"], name="custom_op", domain="com.example"),
             helper.make_node("Add", ["c", "z"], ["y"], name="after")]
    v = np.resize(x(1, 1, 4), (1, 1, 4, 4, 4, 4))  # as many draws as before: later data stays
    m = model(nodes, [("x", x(1, 1, 4, 4)), ("v", v)], ["y", "am"], 17,
              [("w", np.resize(x(1, 1, 3), (1, 1, 3, 3, 3, 3)))])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    onnx.save(m, os.path.join(OUT, "unsupported.onnx"))


def invalid_models():
    """Ops whose attributes make no sense: each must be an error naming its node, not an empty result."""
    ints = lambda n, v: (n, np.array(v, np.int64))
    onnx.save(model([helper.make_node("Range", ["s", "l", "d"], ["y"], name="range_zero_delta")], [], ["y"], 17,
                    [ints("s", 0), ints("l", 10), ints("d", 0)]), os.path.join(OUT, "invalid_range.onnx"))
    onnx.save(model([helper.make_node("Pad", ["x", "p"], ["y"], name="pad_too_much")], [("x", x(2, 3))], ["y"], 17,
                    [ints("p", [0, -2, 0, -2])]), os.path.join(OUT, "invalid_pad.onnx"))


def rough_edge_models():
    """The error messages' regression models (tests/test_rough_edges.c); no random data."""
    # an unsupported dtype behind an unsupported op: both listed (value_info types 'v')
    nodes = [helper.make_node("TfIdfVectorizer", ["x"], ["v"], name="tfidf"),
             helper.make_node("Cast", ["v"], ["c"], name="cast_behind", to=TensorProto.STRING),
             helper.make_node("Relu", ["v"], ["r"], name="relu_behind")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [4, 8, 2])],
                          [helper.make_tensor_value_info(o, F, None) for o in ("c", "r")],
                          value_info=[helper.make_tensor_value_info("v", F, [4, 8, 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, os.path.join(OUT, "unsupported_behind.onnx"))
    # a node in a foreign domain, imported at opset 3 of that domain
    g = helper.make_graph([helper.make_node("Foo", ["x"], ["y"], name="foo", domain="com.example")], "g",
                          [helper.make_tensor_value_info("x", F, [2])], [helper.make_tensor_value_info("y", F, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 3)])
    m.ir_version = 8
    onnx.save(m, os.path.join(OUT, "foreign_opset.onnx"))
    # an opset beyond 32 bits
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                          [helper.make_tensor_value_info("x", F, [2])], [helper.make_tensor_value_info("y", F, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 1099511627776)])
    m.ir_version = 8
    onnx.save(m, os.path.join(OUT, "huge_opset.onnx"))
    # an output that is an input passed through (named x, as the input), and another
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                          [helper.make_tensor_value_info("x", F, [2, 3])],
                          [helper.make_tensor_value_info("x", F, [2, 3]), helper.make_tensor_value_info("y", F, [2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, os.path.join(OUT, "output_is_input.onnx"))


def ort_outputs(m, inputs):
    """The outputs onnxruntime computes (for what onnx.reference leaves out: sequence_lens)."""
    import onnxruntime as ort
    typed = onnx.ModelProto()
    typed.CopyFrom(m)
    for o in typed.graph.output:
        o.type.tensor_type.elem_type = F  # float outputs only; onnxruntime wants a type
    sess = ort.InferenceSession(typed.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, dict(inputs))


def recurrent_ops():
    """ConvTranspose, RNN, GRU, LSTM and CumProd beyond the onnx node tests: groups with dilations and
    output_padding, output_shape, 3-D, SAME_LOWER; linear_before_reset with clip, peepholes both ways
    with initial states, sequence_lens, Relu and batch-first, custom activations."""
    def rnn_relu_batch_first(X, W, R, h0):
        """numpy's: H = relu(X_t W^T + H R^T), layout 1 (onnx.reference has no Relu, onnxruntime no layout 1)."""
        h, ys = h0[:, 0], []
        for t in range(X.shape[1]):
            h = np.maximum(X[:, t] @ W[0].T + h @ R[0].T, 0)
            ys.append(h)
        return [np.stack(ys, 1)[:, :, None], h[:, None]]

    def group_norm_18(a, s, b):
        """numpy's: GroupNormalization-18, scale and bias per group."""
        g = a.reshape(a.shape[0], 3, -1)
        y = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-3)
        return [(y * s[:, None] + b[:, None]).reshape(a.shape).astype(np.float32)]

    def node_model(name, op_type, ins, outs, attrs, opset=17, use_ort=False, expect=None):
        node = helper.make_node(op_type, [n for n, _ in ins], outs, name="n_" + name, **attrs)
        real = [(n, a) for n, a in ins if n]
        m = model([node], real, [o for o in outs if o], opset)
        n_out = len([o for o in outs if o])
        expect = (lambda *a: ort_outputs(m, real)) if use_ort else expect
        return name, save(name, m, real, expect)

    half = lambda *s: x(*s, lo=-0.7, hi=0.7)
    return [
        node_model("ConvTransposeGroupDil", "ConvTranspose", [("a", x(2, 4, 5, 6)), ("w", x(4, 3, 3, 2)), ("b", x(6))],
                   ["y0"], {"group": 2, "strides": [2, 3], "dilations": [2, 1], "pads": [1, 0, 2, 1],
                            "output_padding": [1, 2]}, use_ort=True),
        node_model("ConvTranspose1DOutShape", "ConvTranspose", [("a", x(1, 3, 7)), ("w", x(3, 2, 4))],
                   ["y0"], {"strides": [2], "output_shape": [17]}, use_ort=True),
        node_model("ConvTranspose3D", "ConvTranspose", [("a", x(1, 2, 3, 4, 3)), ("w", x(2, 2, 2, 3, 2))],
                   ["y0"], {"strides": [2, 1, 2], "pads": [1, 0, 0, 0, 1, 1]}, use_ort=True),
        node_model("ConvTransposeSameLower", "ConvTranspose", [("a", x(1, 2, 5, 5)), ("w", x(2, 1, 3, 3))],
                   ["y0"], {"strides": [2, 2], "auto_pad": "SAME_LOWER", "group": 2}, use_ort=True),
        node_model("GRULbrClip", "GRU", [("X", x(4, 3, 5)), ("W", x(1, 18, 5)), ("R", half(1, 18, 6)),
                                         ("B", x(1, 36)), ("", None), ("h0", x(1, 3, 6))],
                   ["y0", "y1"], {"hidden_size": 6, "linear_before_reset": 1, "clip": 1.5}, use_ort=True),
        node_model("GRUReverseActs", "GRU", [("X", x(3, 2, 3)), ("W", half(1, 12, 3)), ("R", half(1, 12, 4))],
                   ["y0", "y1"], {"hidden_size": 4, "direction": "reverse",
                                  "activations": ["Sigmoid", "Relu"]}, use_ort=True),
        node_model("LSTMBidiPeep", "LSTM", [("X", x(5, 2, 3)), ("W", half(2, 16, 3)), ("R", half(2, 16, 4)),
                                            ("B", half(2, 32)), ("", None), ("h0", x(2, 2, 4)),
                                            ("c0", x(2, 2, 4)), ("P", half(2, 12))],
                   ["y0", "y1", "y2"], {"hidden_size": 4, "direction": "bidirectional"}, use_ort=True),
        node_model("LSTMSeqLens", "LSTM", [("X", x(4, 3, 2)), ("W", half(1, 12, 2)), ("R", half(1, 12, 3)),
                                           ("", None), ("lens", np.array([4, 2, 1], np.int32))],
                   ["y0", "y1", "y2"], {"hidden_size": 3}, use_ort=True),
        node_model("RNNReluBatchFirst", "RNN", [("X", x(3, 4, 2)), ("W", half(1, 5, 2)), ("R", half(1, 5, 5)),
                                                ("", None), ("", None), ("h0", x(3, 1, 5))],
                   ["y0", "y1"], {"hidden_size": 5, "layout": 1, "activations": ["Relu"]}, opset=14,
                   expect=rnn_relu_batch_first),
        node_model("AvgPool3DPadsCeil", "AveragePool", [("a", x(2, 3, 7, 6, 5))], ["y0"],
                   {"kernel_shape": [3, 2, 3], "strides": [2, 2, 2], "pads": [1, 0, 2, 1, 1, 0],
                    "ceil_mode": 1, "count_include_pad": 0}, opset=19, use_ort=True),
        node_model("MaxPool3DDilated", "MaxPool", [("a", x(1, 2, 8, 7, 6))], ["y0"],
                   {"kernel_shape": [2, 3, 2], "dilations": [2, 1, 2], "pads": [1, 1, 0, 0, 1, 1]},
                   opset=19, use_ort=True),
        node_model("LpPool1DPads", "LpPool", [("a", x(2, 3, 9))], ["y0"],
                   {"kernel_shape": [3], "p": 3, "pads": [1, 2], "strides": [2]}, opset=19, use_ort=True),
        node_model("GroupNorm18", "GroupNormalization", [("a", x(2, 6, 3, 2)), ("s", x(3)), ("b", x(3))], ["y0"],
                   {"num_groups": 3, "epsilon": 1e-3}, opset=18, expect=group_norm_18),
        op("Col2ImStrideGap", "Col2Im", [("a", x(2, 8, 6))], {"strides": [3, 2], "pads": [1, 0, 0, 1]},
           opset=18, inits=[("image", np.array([5, 6], np.int64)), ("block", np.array([2, 2], np.int64))]),
        op("CumProd", "CumProd", [("a", x(3, 4))], {"exclusive": 1, "reverse": 1}, opset=26,
           inits=[("axis", np.array(1, np.int64))]),
    ]


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = unary_ops() + binary_ops() + shape_ops() + reduce_ops() + nn_ops()
    special_models()
    rows += conv_pool_ops()  # last: the random data of the models above stays as it was
    rows += engine_ops()
    invalid_models()  # after those, for the same reason
    rough_edge_models()
    rows += [("index_ops", (3, 5)), ("scatter_ops", (4, 4)), ("select_ops", (1, 6))]  # make_symbolic_models.py's
    rows += recurrent_ops()  # last again: the data above stays as it was
    with open(os.path.join(OUT, "ops.txt"), "w") as f:
        f.write("# NAME INPUTS OUTPUTS: NAME.onnx, NAME.inK.npy, NAME.outK.npy (make_test_models.py)\n")
        for name, (n_in, n_out) in rows:
            f.write("%s %d %d\n" % (name, n_in, n_out))


if __name__ == "__main__":
    main()
