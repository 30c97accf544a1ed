"""Proves the onnxruntime entries the EP reads a graph with (plugin/ort_ep/ort_api.def) against the
installed onnxruntime: a model with every kind of attribute, initializers of several types and a
graph input with symbolic dims is given to onnxruntime (optimizations off, so that its graph is the
model's), the EP writes what it read (XLAC_FLAGS=--clustering_debug: DIR/ort_graph_0.onnx) and
this compares it, node by node, value by value, with the onnx package's reading of the model. A
wrong position in the table reads the wrong thing, or crashes this process: either fails here. The
status, key-value and version entries are probed by the library itself when it loads (ep.c).
Closing line: "ort ep abi: N checks passed". Usage: python tests/ort_ep/test_abi.py --lib LIB
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

EP = "XlacExecutionProvider"


def model():
    rng = np.random.RandomState(0)
    inits = [numpy_helper.from_array(rng.randn(6, 5).astype(np.float32), "W"),
             numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "pads"),
             numpy_helper.from_array(np.array([1], np.int64), "axes"),
             numpy_helper.from_array(rng.randn(5).astype(np.float64), "d64"),
             numpy_helper.from_array(np.array(2.5, np.float16), "h")]
    nodes = [
        helper.make_node("Gemm", ["x", "W"], ["g"], name="gemm", alpha=0.25, transB=0),
        helper.make_node("Transpose", ["g"], ["t"], name="transpose", perm=[1, 0]),
        helper.make_node("Pad", ["t", "pads"], ["p"], name="pad", mode="reflect"),
        helper.make_node("ReduceSum", ["p", "axes"], ["r"], name="reduce", keepdims=1),
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("ConstantOfShape", ["s"], ["c"], name="cos",
                         value=numpy_helper.from_array(np.array([3.5], np.float32))),
        helper.make_node("Cast", ["c"], ["c64"], name="cast", to=TensorProto.DOUBLE),
        helper.make_node("LeakyRelu", ["x"], ["l"], name="leaky", alpha=0.125),
        helper.make_node("Cast", ["h"], ["h32"], name="cast_h", to=TensorProto.FLOAT),
        helper.make_node("Mul", ["l", "h32"], ["lh"], name="mul"),
        helper.make_node("Split", ["lh"], ["s0", "s1"], name="split", axis=1, num_outputs=2),
        helper.make_node("Add", ["s0", "s1"], ["y2"], name="add"),
        helper.make_node("Identity", ["d64"], ["d"], name="ident"),
    ]
    g = helper.make_graph(nodes, "abi", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6])],
                          [helper.make_tensor_value_info("r", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("c64", TensorProto.DOUBLE, None),
                           helper.make_tensor_value_info("y2", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("d", TensorProto.DOUBLE, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    return m


def child(path, lib):
    import onnxruntime as ort
    ort.register_execution_provider_library(EP, lib)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.add_provider_for_devices([d for d in ort.get_ep_devices() if d.ep_name == EP], {})
    ort.InferenceSession(path, sess_options=so)


def attr_value(a):
    v = helper.get_attribute_value(a)
    if isinstance(v, onnx.TensorProto):
        return ("tensor", numpy_helper.to_array(v).tolist(), v.data_type)
    return v


def check(orig, got):
    checks = 0
    nodes = list(orig.graph.node)
    assert len(got.graph.node) == len(nodes), (len(got.graph.node), len(nodes))
    names = {}  # the dump's value name -> the model's

    def same(dumped, real):
        assert names.setdefault(dumped, real) == real, (dumped, names[dumped], real)

    by_name = {g.doc_string: g for g in got.graph.node}
    for o in nodes:
        g = by_name[o.name]
        assert (g.op_type, g.domain or "", g.doc_string) == (o.op_type, o.domain or "", o.name), (g, o)
        assert len(g.input) == len(o.input) and len(g.output) == len(o.output), o.name
        for a, b in zip(list(g.input) + list(g.output), list(o.input) + list(o.output)):
            same(a, b)
        ga = {a.name: (a.type, attr_value(a)) for a in g.attribute}
        oa = {a.name: (a.type, attr_value(a)) for a in o.attribute}
        for name, (kind, value) in ga.items():  # onnxruntime fills in the schema's defaults
            if name not in oa:
                d = onnx.defs.get_schema(o.op_type, 18, o.domain).attributes[name].default_value
                oa[name] = (d.type, attr_value(d))
        assert ga == oa, (o.name, ga, oa)
        checks += 3 + len(oa)
    inits = {i.name: i for i in orig.graph.initializer}
    for i in got.graph.initializer:
        want = inits[names[i.name]]
        np.testing.assert_array_equal(numpy_helper.to_array(i), numpy_helper.to_array(want))
        assert i.data_type == want.data_type and list(i.dims) == list(want.dims), i.name
        checks += 1
    real_inputs = {v.name: v for v in orig.graph.input}
    for v in got.graph.input:
        want = real_inputs[names[v.name]]
        assert v.type == want.type, (v, want)  # element type, dims, the symbolic dim's name
        checks += 1
    assert sorted(names[v.name] for v in got.graph.output) == sorted(v.name for v in orig.graph.output)
    return checks + 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, os.path.abspath(args.lib))
    tmp = tempfile.mkdtemp(prefix="xlac-abi-")
    path = os.path.join(tmp, "abi.onnx")
    onnx.save(model(), path)
    env = dict(os.environ, XLAC_AUTO_JIT="2", XLAC_FLAGS="--clustering_debug", XLAC_DUMP_GRAPH_PREFIX=tmp)
    p = subprocess.run([sys.executable, __file__, "--lib", args.lib, "--child", path], env=env,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        print(p.stderr[-3000:])
        print("ort ep abi: FAILED (the session with the EP exited %d)" % p.returncode)
        return 1
    got = onnx.load(os.path.join(tmp, "ort_graph_0.onnx"))
    n = check(model(), got)
    print("ort ep abi: %d checks passed" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
