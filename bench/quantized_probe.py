#!/usr/bin/env python3
"""A quantized encoder without torch: onnxruntime against xlac on the same model, f32 and int8.

Builds a BERT-shaped encoder with the onnx helper (random weights, fixed seed): LAYERS layers of
self-attention (HEADS heads) and an erf-GELU MLP, hidden HIDDEN, SEQ tokens, batch BATCH. Quantizes
it with onnxruntime.quantization.quantize_dynamic (QInt8 weights: DynamicQuantizeLinear +
MatMulInteger, as users do) and converts it to fp16 (onnxruntime.transformers.float16's
convert_float_to_float16, keep_io_types), then times, alternating, median of ROUNDS rounds of ITER runs:
onnxruntime (CPUExecutionProvider, intra_op threads = --threads), xlac-run op by op, and xlac-run
clustered (LD_PRELOAD=libxlac.so XLAC_AUTO_JIT=2). Outputs are checked against onnxruntime first:
f32 within 2e-2 of its largest magnitude, int8 and fp16 within the format's own error (against
f32 in onnxruntime), since one quantized step flips with any upstream ulp.

  tests/onnx/.venv/bin/python bench/quantized_probe.py --build build [--threads 2] [--seq 128]

Prints one markdown table (ms, and onnxruntime / xlac) with the machine's ISA line.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic


def encoder(layers, hidden, heads, seq, batch, ffn, rng):
    nodes, inits = [], []

    def w(name, *shape, scale=0.05):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def c64(name, vals):
        inits.append(numpy_helper.from_array(np.array(vals, dtype=np.int64), name))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    hd = hidden // heads
    c64("split_shape", [batch, seq, heads, hd])
    c64("merge_shape", [batch, seq, hidden])
    inits.append(numpy_helper.from_array(np.array(1.0 / np.sqrt(hd), dtype=np.float32), "scale"))
    inits.append(numpy_helper.from_array(np.array(np.sqrt(0.5), dtype=np.float32), "rsqrt2"))
    inits.append(numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"))
    inits.append(numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"))
    x = "x"
    for l in range(layers):
        p = f"l{l}_"

        def heads_of(t, name, perm):
            r = node("Reshape", [t, "split_shape"], p + name + "_r")
            return node("Transpose", [r], p + name + "_t", perm=perm)

        q = node("Add", [node("MatMul", [x, w(p + "wq", hidden, hidden)], p + "q0"), w(p + "bq", hidden)], p + "q")
        k = node("Add", [node("MatMul", [x, w(p + "wk", hidden, hidden)], p + "k0"), w(p + "bk", hidden)], p + "k")
        v = node("Add", [node("MatMul", [x, w(p + "wv", hidden, hidden)], p + "v0"), w(p + "bv", hidden)], p + "v")
        qh, kh, vh = heads_of(q, "qh", [0, 2, 1, 3]), heads_of(k, "kh", [0, 2, 3, 1]), heads_of(v, "vh", [0, 2, 1, 3])
        s = node("Mul", [node("MatMul", [qh, kh], p + "s0"), "scale"], p + "s")
        a = node("Softmax", [s], p + "a", axis=-1)
        ctx = node("Transpose", [node("MatMul", [a, vh], p + "c0")], p + "c1", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, "merge_shape"], p + "c")
        o = node("Add", [node("MatMul", [ctx, w(p + "wo", hidden, hidden)], p + "o0"), w(p + "bo", hidden)], p + "o")
        h = node("LayerNormalization", [node("Add", [o, x], p + "res1"), w(p + "g1", hidden, scale=1.0),
                                        w(p + "b1", hidden)], p + "ln1", axis=-1)
        f = node("Add", [node("MatMul", [h, w(p + "w1", hidden, ffn)], p + "f0"), w(p + "bf1", ffn)], p + "f1")
        g = node("Mul", [node("Mul", [f, node("Add", [node("Erf", [node("Mul", [f, "rsqrt2"], p + "e0")], p + "e1"),
                                                        "one"], p + "e2")], p + "e3"), "half"], p + "gelu")
        f2 = node("Add", [node("MatMul", [g, w(p + "w2", ffn, hidden)], p + "f2"), w(p + "bf2", hidden)], p + "f3")
        x = node("LayerNormalization", [node("Add", [f2, h], p + "res2"), w(p + "g2", hidden, scale=1.0),
                                        w(p + "b2", hidden)], p + "ln2", axis=-1)
    graph = helper.make_graph(nodes, "encoder", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, hidden])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, seq, hidden])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def xlac_ms(args, model, feed_dir, clustered, out_dir=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLAC_") and k != "LD_PRELOAD"}
    if clustered:
        env.update(LD_PRELOAD=os.path.join(args.build, "lib/libxlac.so"), XLAC_AUTO_JIT="2")
    cmd = [os.path.join(args.build, "bin/xlac-run"), model, "--feed", feed_dir, "--threads", str(args.threads),
           "--warmup", "3", "--iterations", str(args.iter)]
    if out_dir:
        cmd += ["--save-outputs", out_dir]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"xlac-run failed ({r.returncode}): {r.stderr[-2000:]}")
    line = [l for l in (r.stdout + r.stderr).splitlines() if l.startswith("time median_ms=")][-1]
    return float(line.split()[1].split("=")[1])


def ort_ms(sess, feeds, iters):
    for _ in range(3):
        sess.run(None, feeds)
    t = []
    for _ in range(iters):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iter", type=int, default=20)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    tmp = tempfile.mkdtemp(prefix="xlac-qprobe-")
    f32 = os.path.join(tmp, "encoder_f32.onnx")
    q8 = os.path.join(tmp, "encoder_int8.onnx")
    onnx.save(encoder(args.layers, args.hidden, args.heads, args.seq, args.batch, 4 * args.hidden, rng), f32)
    quantize_dynamic(f32, q8, weight_type=QuantType.QInt8)
    f16 = os.path.join(tmp, "encoder_f16.onnx")
    from onnxruntime.transformers.float16 import convert_float_to_float16
    onnx.save(convert_float_to_float16(onnx.load(f32), keep_io_types=True), f16)
    x = rng.standard_normal((args.batch, args.seq, args.hidden)).astype(np.float32)
    feed_dir = os.path.join(tmp, "feed")
    os.makedirs(feed_dir)
    np.save(os.path.join(feed_dir, "x.npy"), x)
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    rows = []
    ref32 = None
    for name, path in (("f32", f32), ("int8 (quantize_dynamic)", q8), ("fp16 (convert_float_to_float16)", f16)):
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        ref = sess.run(None, {"x": x})[0]
        ref32 = ref if ref32 is None else ref32
        # int8 and fp16: a quantized value one step away flips with any upstream ulp (onnxruntime's own fused
        # and unfused sessions differ by several %), so the bound is the quantization's own error
        bound = max(2e-2, float(np.abs(ref - ref32).max() / np.abs(ref32).max()))
        for clustered in (False, True):
            out = os.path.join(tmp, f"out_{clustered}")
            xlac_ms(args, path, feed_dir, clustered, out)
            got = np.load(os.path.join(out, os.listdir(out)[0]))
            err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
            if not np.isfinite(err) or err > bound:
                sys.exit(f"{name}: xlac differs from onnxruntime by {err:.2e} (relative to max |ref|; "
                         f"bound {bound:.2e})")
            print(f"{name}, {'clustered' if clustered else 'op by op'}: {err:.2e} of max |ref| from "
                  f"onnxruntime (bound {bound:.2e})", file=sys.stderr)
        t = {"ort": [], "op": [], "cl": []}
        for _ in range(args.rounds):  # alternating
            t["ort"].append(ort_ms(sess, {"x": x}, args.iter))
            t["op"].append(xlac_ms(args, path, feed_dir, False))
            t["cl"].append(xlac_ms(args, path, feed_dir, True))
        m = {k: statistics.median(v) for k, v in t.items()}
        rows.append((name, m["ort"], m["op"], m["cl"]))
    flags = open("/proc/cpuinfo").read()
    isa = "AVX-512 VNNI" if "avx512_vnni" in flags else "AVX-512" if "avx512f" in flags else "AVX2"
    print(f"encoder {args.layers}x{args.hidden} ({args.heads} heads), batch {args.batch}, {args.seq} tokens, "
          f"{args.threads} threads, {isa}, onnxruntime {ort.__version__}; median of {args.rounds} alternating "
          f"rounds of {args.iter} runs, ms")
    print("| model | onnxruntime | xlac op by op | xlac clustered | onnxruntime / clustered |")
    print("| --- | --- | --- | --- | --- |")
    for name, o, p, c in rows:
        print(f"| {name} | {o:.2f} | {p:.2f} | {c:.2f} | {o / c:.2f}x |")


if __name__ == "__main__":
    main()
