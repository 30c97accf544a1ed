"""What GetCapability takes and leaves (plugin/ort_ep/capability.c), on small models built with the
onnx helper, through onnxruntime with xlac's execution provider (XLAC_AUTO_JIT=2) against plain
onnxruntime: each case names how many fused nodes onnxruntime's profile must show, and its
outputs must agree with plain onnxruntime's at every feed.

- moves_only: Cast, Reshape, Transpose: a cluster with no arithmetic stays with onnxruntime (0);
- arithmetic: Cast, Mul, Add, Tanh: one fused node;
- shared_shapes: two groups on either side of an If (which onnxruntime keeps) that both reshape
  to a shape computed from a symbolic dim (shape arithmetic onnxruntime computes, shared by the
  two): each is built per signature of its input shapes and those values, at two batch sizes (2);
- linear: two MatMul + Add on [2, 3, 4] (onnxruntime's basic level makes each Reshape, Gemm,
  Reshape, which the EP writes back as MatMul + Add for xlac), one followed by Relu, one by a
  Reshape to four dims and a Transpose (that Gemm is not undone): two fused nodes, at two feeds;
- convolution: Conv, Relu, Add, Tanh (one cluster of xlac's pass whose one product is the Conv):
  left to onnxruntime, which runs convolution networks faster (0);
- patch_embedding: a Conv then three MatMul + Tanh (convolutions a quarter of the products, as a
  ViT's patch embedding is a few percent of its): taken (1);
- weights: MatMul + Add + Relu with a 128 KiB weight (bigger than what the EP writes into the model
  xlac imports: the fused node's graph holds a copy of it as a constant, plugin/ort_ep/onnxpb.c);
  a session of it is run and dropped, then one of the same graph with other weights, then the
  first model again in a new session (whose compiled program the process-wide cache still holds,
  with the constants of the first session's graph): each agrees with plain onnxruntime (1 fused
  node each);
- debug_once: with the provider option flags "--clustering_debug" (the arithmetic case alone), the
  clustering summary is printed once: GetCapability's, not again by the fused node's session.

All cases run in one child process (a crash fails them all). Closing line:

    ort ep rules: N passed, N failed

Usage: python tests/ort_ep/test_rules.py --lib LIB
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

EP = "XlacExecutionProvider"


def graph_model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "rules", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def moves_only():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.DOUBLE, [4, 6])
    nodes = [helper.make_node("Cast", ["x"], ["c"], to=TensorProto.DOUBLE),
             helper.make_node("Reshape", ["c", "shape"], ["r"]),
             helper.make_node("Transpose", ["r"], ["y"], perm=[1, 0])]
    shape = numpy_helper.from_array(np.array([6, 4], np.int64), "shape")
    feeds = [{"x": np.random.RandomState(0).randn(2, 3, 4).astype(np.float32)}]
    return graph_model(nodes, [x], [y], [shape]), feeds, 0


def arithmetic():
    x = helper.make_tensor_value_info("x", TensorProto.INT32, [3, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5])
    nodes = [helper.make_node("Cast", ["x"], ["c"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["c", "c"], ["m"]),
             helper.make_node("Add", ["m", "c"], ["a"]),
             helper.make_node("Tanh", ["a"], ["y"])]
    feeds = [{"x": np.arange(15, dtype=np.int32).reshape(3, 5) - 7}]
    return graph_model(nodes, [x], [y]), feeds, 1


def shared_shapes():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "k"])
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    branch = lambda op: helper.make_graph(  # noqa: E731
        [helper.make_node(op, ["a"], ["b"])], op, [], [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)])
    # [k, n] and [n, k] from x's shape: onnxruntime cannot rewrite them as constants with 0 and -1 (as it
    # does a shape that keeps each dim in its place), so it computes them and both groups read them
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Gather", ["s", "one"], ["k"], axis=0),
             helper.make_node("Concat", ["k", "n"], ["swapped"], axis=0),
             helper.make_node("Concat", ["n", "k"], ["back"], axis=0),
             helper.make_node("Tanh", ["x"], ["t"]),
             helper.make_node("Reshape", ["t", "swapped"], ["r"]),
             helper.make_node("Mul", ["r", "r"], ["a"]),
             helper.make_node("If", ["cond"], ["i"], then_branch=branch("Neg"), else_branch=branch("Identity")),
             helper.make_node("Reshape", ["i", "back"], ["q"]),
             helper.make_node("Exp", ["q"], ["e"]),
             helper.make_node("Add", ["e", "q"], ["y"])]
    inits = [numpy_helper.from_array(np.array([0], np.int64), "zero"),
             numpy_helper.from_array(np.array([1], np.int64), "one")]
    rng = np.random.RandomState(1)
    feeds = [{"x": rng.randn(n, k).astype(np.float32), "cond": np.array(c)}
             for n, k, c in ((2, 3, True), (4, 5, False), (2, 3, False))]
    return graph_model(nodes, [x, cond], [y], inits), feeds, 2


def linear():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])  # static: onnxruntime makes the Gemm
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    rng = np.random.RandomState(2)
    inits = [numpy_helper.from_array(rng.randn(4, 5).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.randn(5).astype(np.float32), "b1"),
             numpy_helper.from_array(rng.randn(4, 6).astype(np.float32), "w2"),
             numpy_helper.from_array(rng.randn(6).astype(np.float32), "b2"),
             numpy_helper.from_array(np.array([0, 3, 2, 3], np.int64), "heads")]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["y"]),
             helper.make_node("MatMul", ["x", "w2"], ["m2"]), helper.make_node("Add", ["m2", "b2"], ["a2"]),
             helper.make_node("Reshape", ["a2", "heads"], ["h"]),
             helper.make_node("Transpose", ["h"], ["t"], perm=[0, 2, 1, 3]),
             helper.make_node("Tanh", ["t"], ["z"])]
    feeds = [{"x": rng.randn(2, 3, 4).astype(np.float32)} for _ in range(2)]
    return graph_model(nodes, [x], [y, z], inits), feeds, 2


def convolution():
    rng = np.random.RandomState(3)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    inits = [numpy_helper.from_array(rng.randn(4, 3, 3, 3).astype(np.float32), "w"),
             numpy_helper.from_array(rng.randn(1, 4, 1, 1).astype(np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Add", ["r", "b"], ["a"]),
             helper.make_node("Tanh", ["a"], ["y"])]
    feeds = [{"x": rng.randn(1, 3, 8, 8).astype(np.float32)}]
    return graph_model(nodes, [x], [y], inits), feeds, 0


def patch_embedding():
    rng = np.random.RandomState(4)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 8])
    inits = [numpy_helper.from_array(rng.randn(4, 3, 2, 2).astype(np.float32), "w")]
    inits += [numpy_helper.from_array((0.3 * rng.randn(4 if k == 0 else 8, 8)).astype(np.float32), "m%d" % k)
              for k in range(3)]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], strides=[2, 2]),
             helper.make_node("Transpose", ["c"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("MatMul", ["t", "m0"], ["h0"]), helper.make_node("Tanh", ["h0"], ["a0"]),
             helper.make_node("MatMul", ["a0", "m1"], ["h1"]), helper.make_node("Tanh", ["h1"], ["a1"]),
             helper.make_node("MatMul", ["a1", "m2"], ["h2"]), helper.make_node("Tanh", ["h2"], ["y"])]
    feeds = [{"x": rng.randn(1, 3, 8, 8).astype(np.float32)}]
    return graph_model(nodes, [x], [y], inits), feeds, 1


CASES = {"moves_only": moves_only, "arithmetic": arithmetic, "shared_shapes": shared_shapes, "linear": linear,
         "convolution": convolution, "patch_embedding": patch_embedding}
DEBUG_CASE = "arithmetic"
SUMMARY = "xlac clustering summary"


def weights_model(seed):
    rng = np.random.RandomState(seed)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 128])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 256])
    inits = [numpy_helper.from_array(rng.randn(128, 256).astype(np.float32), "w"),
             numpy_helper.from_array(rng.randn(256).astype(np.float32), "b")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    return graph_model(nodes, [x], [y], inits)


def weights_case(ort, tmp):
    """Why the weights case fails (None: it passed), and the fused nodes of its last session."""
    import gc
    paths = []
    for seed in (5, 6):
        paths.append(os.path.join(tmp, "weights%d.onnx" % seed))
        with open(paths[-1], "wb") as f:
            f.write(weights_model(seed).SerializeToString())
    feed = {"x": np.random.RandomState(7).randn(1, 64, 128).astype(np.float32)}
    n = 0
    for k, path in enumerate((paths[0], paths[1], paths[0])):
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feed)[0]
        so = ort.SessionOptions()
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(tmp, "weights%d" % k)
        so.add_provider_for_devices([d for d in ort.get_ep_devices() if d.ep_name == EP], {})
        sess = ort.InferenceSession(path, sess_options=so)
        got = sess.run(None, feed)[0]
        if not np.allclose(want, got, rtol=1e-5, atol=1e-5):
            return "session %d: max |diff| %g" % (k, np.abs(want - got).max()), 0
        n = fused_nodes(sess)
        if n != 1:
            return "session %d: %d fused nodes, want 1" % (k, n), n
        del sess
        gc.collect()
    return None, n


def fused_nodes(sess):
    with open(sess.end_profiling()) as f:
        events = json.load(f)
    return len({e["name"] for e in events if e.get("cat") == "Node" and e.get("args", {}).get("provider") == EP})


def child(lib):
    """In this process: every case, plain and with the EP; one JSON line per case."""
    import onnxruntime as ort
    ort.register_execution_provider_library(EP, lib)
    tmp = tempfile.mkdtemp(prefix="xlac-ortep-rules-")
    for name, make in CASES.items():
        model, feeds, want_fused = make()
        path = os.path.join(tmp, name + ".onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        plain = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        so = ort.SessionOptions()
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(tmp, name)
        flags = {"flags": "--clustering_debug"} if name == DEBUG_CASE else {}
        so.add_provider_for_devices([d for d in ort.get_ep_devices() if d.ep_name == EP], flags)
        sess = ort.InferenceSession(path, sess_options=so)
        why = None
        for k, feed in enumerate(feeds):
            want, got = plain.run(None, feed), sess.run(None, feed)
            for w, g in zip(want, got):
                if w.shape != g.shape or not np.allclose(w, g, rtol=1e-5, atol=1e-6):
                    why = why or "feed %d: got %s, want %s" % (k, g.ravel()[:4], w.ravel()[:4])
        n = fused_nodes(sess)
        if not why and n != want_fused:
            why = "%d fused nodes, want %d" % (n, want_fused)
        print(json.dumps({"case": name, "why": why, "fused": n}), flush=True)
    why, n = weights_case(ort, tmp)
    print(json.dumps({"case": "weights", "why": why, "fused": n}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    lib = os.path.abspath(args.lib)
    if args.child:
        return child(lib)
    env = dict(os.environ, XLAC_AUTO_JIT="2", OMP_NUM_THREADS="1")
    p = subprocess.run([sys.executable, "-W", "ignore", __file__, "--child", "--lib", lib], env=env,
                       capture_output=True, text=True, timeout=600)
    seen = {}
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            seen[r["case"]] = r
    passed = failed = 0
    results = []
    for name in list(CASES) + ["weights"]:
        r = seen.get(name)
        why = r["why"] if r else "not run (exit %d): %s" % (p.returncode, p.stderr.strip()[-600:])
        results.append((name, why, "%d fused nodes" % r["fused"] if r else ""))
    summaries = p.stderr.count(SUMMARY)
    results.append(("debug_once", None if summaries == 1 else "%d clustering summaries, want 1" % summaries,
                    "1 clustering summary"))
    for name, why, detail in results:
        print("%s %s: %s" % ("ok    " if not why else "FAILED", name, why or detail))
        passed += not why
        failed += bool(why)
    print("ort ep rules: %d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
