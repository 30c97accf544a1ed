"""Models with symbolic input dims whose shapes are computed at run time
(Shape, Gather/Concat/Unsqueeze over shapes, Range, ConstantOfShape, Trilu,
Expand, Reshape to a computed shape, Equal/Where and mask arithmetic), as
exporters write attention. Writes tests/data/onnx/symbolic_*.onnx and, for
three input sizes, its inputs and onnxruntime's outputs
(symbolic_attention.sK.inJ.npy / .outJ.npy). Run in tests/onnx/.venv."""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "onnx")
SIZES = [(1, 3), (2, 5), (3, 8)]
N = helper.make_node
F = TensorProto.FLOAT


def c(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def attention():
    nodes = [
        N("Shape", ["x"], ["sh"], name="shape"),
        N("Gather", ["sh", "i0"], ["b"], name="batch", axis=0),
        N("Gather", ["sh", "i1"], ["s"], name="seq", axis=0),
        N("Unsqueeze", ["b", "ax0"], ["b1"], name="b1"),
        N("Unsqueeze", ["s", "ax0"], ["s1"], name="s1"),
        N("Concat", ["b1", "s1", "heads"], ["split_shape"], name="split_shape", axis=0),
        N("Reshape", ["x", "split_shape"], ["r"], name="split_heads"),
        N("Transpose", ["r"], ["q"], name="q", perm=[0, 2, 1, 3]),
        N("Transpose", ["r"], ["kt"], name="kt", perm=[0, 2, 3, 1]),
        N("MatMul", ["q", "kt"], ["scores"], name="scores"),
        N("Cast", ["mask"], ["mf"], name="mask_f", to=TensorProto.FLOAT),
        N("Unsqueeze", ["mf", "ax12"], ["m4"], name="mask_4d"),
        N("Sub", ["one", "m4"], ["inv"], name="inv"),
        N("Mul", ["inv", "neg"], ["pad"], name="pad_bias"),
        N("Concat", ["s1", "s1"], ["ss"], name="ss", axis=0),
        N("ConstantOfShape", ["ss"], ["ones"], name="ones",
          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
        N("Trilu", ["ones"], ["tri"], name="tri", upper=0),
        N("Equal", ["tri", "zero"], ["future"], name="future"),
        N("Where", ["future", "neg", "zero"], ["causal"], name="causal"),
        N("Add", ["scores", "pad"], ["s2"], name="add_pad"),
        N("Add", ["s2", "causal"], ["s3"], name="add_causal"),
        N("Softmax", ["s3"], ["p"], name="softmax", axis=-1),
        N("Transpose", ["r"], ["v"], name="v", perm=[0, 2, 1, 3]),
        N("MatMul", ["p", "v"], ["o"], name="pv"),
        N("Transpose", ["o"], ["o2"], name="merge_t", perm=[0, 2, 1, 3]),
        N("Concat", ["b1", "s1", "hidden"], ["merge_shape"], name="merge_shape", axis=0),
        N("Reshape", ["o2", "merge_shape"], ["y0"], name="merge_heads"),
        N("Range", ["zero_i", "s", "one_i"], ["pos"], name="positions"),
        N("Cast", ["pos"], ["posf"], name="pos_f", to=TensorProto.FLOAT),
        N("Unsqueeze", ["posf", "ax02"], ["pos3"], name="pos3"),
        N("Concat", ["b1", "s1", "hid1"], ["exp_shape"], name="exp_shape", axis=0),
        N("Expand", ["pos3", "exp_shape"], ["posb"], name="pos_b"),
        N("Mul", ["posb", "tenth"], ["posc"], name="pos_scale"),
        N("Size", ["x"], ["n"], name="size"),
        N("Cast", ["n"], ["nf"], name="size_f", to=TensorProto.FLOAT),
        N("Add", ["y0", "posc"], ["y1"], name="add_pos"),
        N("Div", ["y1", "nf"], ["y"], name="per_size"),
    ]
    inits = [c("i0", np.int64(0)), c("i1", np.int64(1)), c("ax0", np.array([0], np.int64)),
             c("ax12", np.array([1, 2], np.int64)), c("ax02", np.array([0, 2], np.int64)),
             c("heads", np.array([2, 4], np.int64)), c("hidden", np.array([8], np.int64)),
             c("hid1", np.array([1], np.int64)), c("one", np.float32(1)), c("neg", np.float32(-1e4)),
             c("zero", np.float32(0)), c("zero_i", np.int64(0)), c("one_i", np.int64(1)),
             c("tenth", np.float32(0.1))]
    g = helper.make_graph(
        nodes, "symbolic_attention",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8]),
         helper.make_tensor_value_info("mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 8])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def main():
    m = attention()
    onnx.checker.check_model(m)
    path = os.path.join(OUT, "symbolic_attention.onnx")
    onnx.save(m, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(23)
    for k, (b, s) in enumerate(SIZES):
        x = rng.uniform(-1, 1, (b, s, 8)).astype(np.float32)
        mask = np.ones((b, s), np.int64)
        mask[0, s - 1:] = 0
        (y,) = sess.run(None, {"x": x, "mask": mask})
        for j, a in enumerate([x, mask]):
            np.save(os.path.join(OUT, "symbolic_attention.s%d.in%d.npy" % (k, j)), a)
        np.save(os.path.join(OUT, "symbolic_attention.s%d.out0.npy" % k), y)




def index_ops():
    """GatherND (constant and fed indices, negative ones) and CumSum (each attribute), with
    onnxruntime's outputs: index_ops.inJ.npy / index_ops.outJ.npy."""
    nodes = [N("GatherND", ["x", "ci"], ["g0"], name="gnd_const"),
             N("GatherND", ["x", "fi"], ["g1"], name="gnd_fed"),
             N("CumSum", ["x", "ax1"], ["c0"], name="cumsum"),
             N("CumSum", ["x", "ax0"], ["c1"], name="cumsum_rev_excl", exclusive=1, reverse=1),
             N("CumSum", ["m", "axm"], ["c2"], name="cumsum_int")]
    inits = [c("ci", np.array([[0, 1], [-1, 2]], np.int64)), c("ax1", np.int64(1)),
             c("ax0", np.int32(0)), c("axm", np.int64(-1))]
    g = helper.make_graph(
        nodes, "index_ops",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 2]),
         helper.make_tensor_value_info("fi", TensorProto.INT64, [2, 1, 3]),
         helper.make_tensor_value_info("m", TensorProto.INT64, [2, 6])],
        [helper.make_tensor_value_info(n, t, None) for n, t in
         [("g0", F), ("g1", F), ("c0", F), ("c1", F), ("c2", TensorProto.INT64)]],
        inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    path = os.path.join(OUT, "index_ops.onnx")
    onnx.save(m, path)
    rng = np.random.default_rng(5)
    ins = [rng.uniform(-1, 1, (3, 4, 2)).astype(np.float32),
           np.array([[[2, -1, 1]], [[0, 3, 0]]], np.int64), rng.integers(0, 2, (2, 6)).astype(np.int64)]
    outs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
        None, {"x": ins[0], "fi": ins[1], "m": ins[2]})
    for j, a in enumerate(ins):
        np.save(os.path.join(OUT, "index_ops.in%d.npy" % j), a)
    for j, a in enumerate(outs):
        np.save(os.path.join(OUT, "index_ops.out%d.npy" % j), a)




def scatter_ops():
    """ScatterND (rows, elements, add, negative indices) and ScatterElements (each axis, add) with
    onnxruntime's outputs: scatter_ops.inJ.npy / scatter_ops.outJ.npy."""
    nodes = [N("ScatterND", ["x", "ri", "ru"], ["s0"], name="snd_rows"),
             N("ScatterND", ["x", "ei", "eu"], ["s1"], name="snd_elems", reduction="add"),
             N("ScatterElements", ["x", "ai", "au"], ["s2"], name="se_axis1", axis=1),
             N("ScatterElements", ["m", "mi", "mu"], ["s3"], name="se_int_axis0", axis=0, reduction="add")]
    inits = [c("ri", np.array([[2], [-3]], np.int64)), c("ei", np.array([[0, 1, 1], [3, 2, 0]], np.int64)),
             c("eu", np.array([5.0, -7.0], np.float32)), c("ai", np.array([[[1, 0]], [[2, 2]], [[0, 3]], [[3, 1]]], np.int64)),
             c("mi", np.array([[1, 0, 2]], np.int64)), c("mu", np.array([[10, 20, 30]], np.int64))]
    g = helper.make_graph(
        nodes, "scatter_ops",
        [helper.make_tensor_value_info("x", F, [4, 4, 2]), helper.make_tensor_value_info("ru", F, [2, 4, 2]),
         helper.make_tensor_value_info("au", F, [4, 1, 2]), helper.make_tensor_value_info("m", TensorProto.INT64, [3, 3])],
        [helper.make_tensor_value_info(n, t, None) for n, t in
         [("s0", F), ("s1", F), ("s2", F), ("s3", TensorProto.INT64)]], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    path = os.path.join(OUT, "scatter_ops.onnx")
    onnx.save(m, path)
    rng = np.random.default_rng(6)
    ins = [rng.uniform(-1, 1, (4, 4, 2)).astype(np.float32), rng.uniform(-1, 1, (2, 4, 2)).astype(np.float32),
           rng.uniform(-1, 1, (4, 1, 2)).astype(np.float32), rng.integers(0, 9, (3, 3)).astype(np.int64)]
    outs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
        None, {"x": ins[0], "ru": ins[1], "au": ins[2], "m": ins[3]})
    for j, a in enumerate(ins):
        np.save(os.path.join(OUT, "scatter_ops.in%d.npy" % j), a)
    for j, a in enumerate(outs):
        np.save(os.path.join(OUT, "scatter_ops.out%d.npy" % j), a)




def select_ops():
    """NonZero (its count depends on the data) feeding a Gather, and TopK (largest, smallest, each
    axis) with onnxruntime's outputs: select_ops.inJ.npy / select_ops.outJ.npy."""
    nodes = [N("Greater", ["x", "zero"], ["pos"], name="positive"),
             N("NonZero", ["pos"], ["nz"], name="nonzero"),
             N("Transpose", ["nz"], ["nzt"], name="nz_t", perm=[1, 0]),
             N("GatherND", ["x", "nzt"], ["picked"], name="picked"),
             N("ReduceSum", ["picked"], ["total"], name="total", keepdims=0),
             N("TopK", ["x", "k3"], ["v0", "i0"], name="top3"),
             N("TopK", ["x", "k2"], ["v1", "i1"], name="bottom2_axis0", axis=0, largest=0)]
    inits = [c("zero", np.float32(0)), c("k3", np.array([3], np.int64)), c("k2", np.array([2], np.int64))]
    g = helper.make_graph(
        nodes, "select_ops", [helper.make_tensor_value_info("x", F, [4, 5])],
        [helper.make_tensor_value_info(n, t, None) for n, t in
         [("nz", TensorProto.INT64), ("total", F), ("v0", F), ("i0", TensorProto.INT64), ("v1", F),
          ("i1", TensorProto.INT64)]], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    path = os.path.join(OUT, "select_ops.onnx")
    onnx.save(m, path)
    x = np.random.default_rng(8).uniform(-1, 1, (4, 5)).astype(np.float32)
    outs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.save(os.path.join(OUT, "select_ops.in0.npy"), x)
    for j, a in enumerate(outs):
        np.save(os.path.join(OUT, "select_ops.out%d.npy" % j), a)


if __name__ == "__main__":
    main()
    index_ops()
    scatter_ops()
    select_ops()
