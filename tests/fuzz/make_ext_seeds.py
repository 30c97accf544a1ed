"""Writes the seeds of the onnx_ext fuzz target (tests/fuzz/targets.c, xf_onnx_ext).

Run from the repository root with the venv of tests/onnx/run_node_tests.sh:
    tests/onnx/.venv/bin/python tests/fuzz/make_ext_seeds.py
Each seed is a small real export whose weights are in an external data file,
packed as the target reads it: the model's length (4 bytes, little endian),
the model, then the data file's bytes (the target writes them under every
name a model may give, in a private folder, and loads the model by path).
The models: an MLP (MatMul, Add, Relu, Gemm), a convolution with BatchNorm,
a LayerNorm, an embedding Gather, each with all weights external in one
file; and hostile variants of the MLP whose location leaves the folder
(a symbolic link, "..", an absolute path), names a FIFO, or whose offset is
" 12". tests/fuzz/seeds/onnx_ext/ gets the models, tests/data/fuzz/onnx_ext/
the hostile ones and the MLP, replayed by test_fuzz_replay in every build
(scripts/fuzz.sh seeds the target from both). Total well under 1 MB.
"""
import os
import struct
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = os.path.join(HERE, "seeds", "onnx_ext")
REPLAY = os.path.join(HERE, "..", "data", "fuzz", "onnx_ext")
rng = np.random.default_rng(11)
F = TensorProto.FLOAT


def w(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def model(nodes, x_shape, inits, opset=17):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, x_shape)],
                          [helper.make_tensor_value_info("y", F, None)],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def mlp():
    return model([helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm"),
                  helper.make_node("Add", ["h", "b1"], ["a"], name="add"),
                  helper.make_node("Relu", ["a"], ["r"], name="relu"),
                  helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], name="gemm", transB=1)],
                 [2, 8], [("w1", w(8, 16)), ("b1", w(16)), ("w2", w(4, 16)), ("b2", w(4))])


def conv():
    return model([helper.make_node("Conv", ["x", "k", "kb"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                  helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
                  helper.make_node("Relu", ["n"], ["y"], name="relu")],
                 [1, 3, 8, 8], [("k", w(4, 3, 3, 3)), ("kb", w(4)), ("s", w(4)), ("b", w(4)), ("m", w(4)),
                                ("v", np.abs(w(4)) + 0.5)])


def layernorm():
    return model([helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], name="ln", axis=-1)],
                 [2, 5, 16], [("g", w(16)), ("b", w(16))])


def embedding():
    g = helper.make_graph([helper.make_node("Gather", ["e", "x"], ["y"], name="embed", axis=0)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.INT64, [2, 3])],
                          [helper.make_tensor_value_info("y", F, None)], [numpy_helper.from_array(w(32, 8), "e")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def export(m, location):
    """The model saved with every weight in one external file: (model bytes, data bytes)."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.dirname(os.path.join(d, location)), exist_ok=True)
        onnx.save_model(m, os.path.join(d, "model.onnx"), save_as_external_data=True,
                        all_tensors_to_one_file=True, location=location, size_threshold=0)
        with open(os.path.join(d, "model.onnx"), "rb") as f:
            mb = f.read()
        with open(os.path.join(d, location), "rb") as f:
            db = f.read()
    return mb, db


def retarget(mb, key, value, which=0):
    """The model with external_data key of initializer `which` set to value."""
    m = onnx.ModelProto()
    m.ParseFromString(mb)
    for e in m.graph.initializer[which].external_data:
        if e.key == key:
            e.value = value
    return m.SerializeToString()


def pack(mb, db):
    return struct.pack("<I", len(mb)) + mb + db


def main():
    os.makedirs(SEEDS, exist_ok=True)
    os.makedirs(REPLAY, exist_ok=True)
    seeds = {}
    for name, m, loc in [("mlp", mlp(), "model.onnx.data"), ("conv", conv(), "weights.bin"),
                         ("layernorm", layernorm(), "external.weights.bin"), ("embedding", embedding(), "sub/w.bin")]:
        mb, db = export(m, loc)
        seeds[name] = pack(mb, db)
        if name == "mlp":
            seeds["mlp_link"] = pack(retarget(mb, "location", "link.bin"), db)
            seeds["mlp_dotdot"] = pack(retarget(mb, "location", "../model.onnx.data"), db)
            seeds["mlp_absolute"] = pack(retarget(mb, "location", "/etc/passwd"), db)
            seeds["mlp_fifo"] = pack(retarget(mb, "location", "fifo.bin"), db)
            seeds["mlp_offset_space"] = pack(retarget(mb, "offset", " 12", 1), db)
    for name, data in seeds.items():  # the models are seeds; the hostile ones (and the MLP) replayed
        for folder in ([SEEDS] if "_" not in name else []) + ([REPLAY] if "_" in name or name == "mlp" else []):
            with open(os.path.join(folder, name + ".bin"), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
