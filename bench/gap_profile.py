#!/usr/bin/env python3
"""Where xlac's gap to onnxruntime is, per model: the same model and feed run
clustered by xlac (`xlac-run --trace` with the plugin, summed per kind of
compiled step by trace_profile.py) and by onnxruntime with its profiler on
(summed per op type), both after warm-up, on the same threads.

Each model folder holds model.onnx (and its .data) and feed/NAME.npy, as
bench/real_models.py caches them (bench/out/real/<torch>/<model>.b<batch>.<hash>).
Per model it prints one table: the heavy part (products and convolutions,
fused attention included on xlac's side, Conv/MatMul/Gemm/Attention and
their fused forms on onnxruntime's), the rest, and each side's largest
rows, in ms per run.

Usage (in a venv with numpy and onnxruntime):
    bench/gap_profile.py MODEL_DIR... [--build build] [--iterations 10] [--threads 2]
"""
import argparse
import collections
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_profile  # noqa: E402

XLAC_HEAVY = ("matmul", "conv2d", "fused attention")
ORT_HEAVY = ("Conv", "FusedConv", "NhwcFusedConv", "QLinearConv", "MatMul", "FusedMatMul", "Gemm",
             "Attention", "MultiHeadAttention", "MatMulNBits", "ConvTranspose")


def xlac_profile(build, model, feed, iterations, threads, tmp):
    trace = os.path.join(tmp, "xlac.json")
    env = dict(os.environ, LD_PRELOAD=os.path.join(build, "lib", "libxlac.so"), XLAC_AUTO_JIT="2")
    cmd = [os.path.join(build, "bin", "xlac-run"), model, "--feed", feed, "--iterations", str(iterations),
           "--warmup", "2", "--threads", str(threads), "--trace", trace]
    subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    t = json.load(open(trace))
    per, run_ms, _ = trace_profile.profile(t["traceEvents"] if isinstance(t, dict) else t)
    return per, run_ms


def ort_profile(model, feed, iterations, threads, tmp):
    import onnxruntime as ort
    o = ort.SessionOptions()
    o.intra_op_num_threads = threads
    o.enable_profiling = True
    o.profile_file_prefix = os.path.join(tmp, "ort")
    s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
    feeds = {os.path.splitext(os.path.basename(f))[0]: np.load(f) for f in glob.glob(os.path.join(feed, "*.npy"))}
    for _ in range(2 + iterations):
        s.run(None, feeds)
    events = json.load(open(s.end_profiling()))
    runs = sorted((e for e in events if e.get("name") == "model_run"), key=lambda e: e["ts"])[2:]
    per = collections.Counter()
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        if any(r["ts"] <= e["ts"] <= r["ts"] + r["dur"] for r in runs):
            per[e["args"].get("op_name", "?")] += e["dur"]
    n = max(len(runs), 1)
    return {k: v / n / 1000 for k, v in per.items()}, sum(r["dur"] for r in runs) / n / 1000


def split(per, heavy):
    h = sum(v for k, v in per.items() if k in heavy)
    return h, sum(per.values()) - h


def top(per, total, n):
    rows = sorted(per.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join("%s %.2f (%.0f %%)" % (k, v, 100 * v / total if total else 0) for k, v in rows if v >= 0.005)


def report(name, xp, xms, op, oms, n):
    xh, xr = split(xp, XLAC_HEAVY)
    oh, orest = split(op, ORT_HEAVY)
    print("### %s" % name)
    print("")
    print("| | xlac clustered | onnxruntime | xlac / onnxruntime |")
    print("| --- | --- | --- | --- |")
    print("| run, ms | %.2f | %.2f | %.2f |" % (xms, oms, xms / oms if oms else float("nan")))
    print("| products and convolutions, ms | %.2f | %.2f | %.2f |" % (xh, oh, xh / oh if oh else float("nan")))
    print("| everything else, ms | %.2f | %.2f | %.2f |" % (xms - xh, oms - oh,
                                                          (xms - xh) / (oms - oh) if oms > oh else float("nan")))
    print("")
    print("- xlac: %s" % top(xp, xms, n))
    print("- onnxruntime: %s" % top(op, oms, n))
    print("")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--build", default="build")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--top", type=int, default=6)
    a = ap.parse_args()
    for d in a.models:
        model, feed = os.path.join(d, "model.onnx"), os.path.join(d, "feed")
        with tempfile.TemporaryDirectory() as tmp:
            xp, xms = xlac_profile(a.build, model, feed, a.iterations, a.threads, tmp)
            op, oms = ort_profile(model, feed, a.iterations, a.threads, tmp)
        report(os.path.basename(os.path.normpath(d)), xp, xms, op, oms, a.top)


if __name__ == "__main__":
    main()
