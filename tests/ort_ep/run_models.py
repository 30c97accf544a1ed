"""The committed real exports (tests/models/exports) through onnxruntime with
xlac's execution provider (libxlac_ort_ep.so, XLAC_AUTO_JIT=2), each at its
three input shapes in one session, against onnxruntime's committed outputs
(|got - want| <= ATOL + RTOL * |want|, NaN matched), and checked, not
assumed, to have run xlac: onnxruntime's own profile must show at least
one node of XlacExecutionProvider for each model, or, for a convolution
network, the EP's --clustering_debug lines must say that it left its clusters
to onnxruntime as a convolution network's (docs/onnxruntime-ep.md). An export
whose file 'ep_expected_failure' holds a line of the EP's log is a known
failure: it passes only while no fused node runs and the log says that line
(wav2vec2.dynamic: a Reshape of two unknown dims, which the EP cannot build at
load). Each export's file 'tolerance' ("RTOL ATOL") replaces the default.
One model per process (a crash is that model's failure). The closing line is

    ort ep real exports: N passed, N failed

Usage: python tests/ort_ep/run_models.py --lib build/lib/libxlac_ort_ep.so [--filter REGEX] [--jobs N]
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTS = os.path.join(HERE, "..", "models", "exports")
sys.path.insert(0, os.path.join(HERE, "..", "models"))
from run_exports import ATOL, RTOL, tolerance  # noqa: E402  (the same defaults and tolerance files)
EP = "XlacExecutionProvider"

def compare(want_dir, got, rtol=RTOL, atol=ATOL):
    """None when every output agrees, else why not."""
    for f in sorted(os.listdir(want_dir)):
        want, name = np.load(os.path.join(want_dir, f)), f[:-4]
        if name not in got:
            return "output %s missing" % name
        g = got[name]
        if g.shape != want.shape or g.dtype != want.dtype:
            return "%s: got %s %s, want %s %s" % (name, g.dtype, g.shape, want.dtype, want.shape)
        if want.dtype.kind in "fc":
            g, w = g.astype(np.float64), want.astype(np.float64)
            if (np.isnan(g) != np.isnan(w)).any():
                return "%s: NaN where onnxruntime has none" % name
            d = np.abs(np.nan_to_num(g) - np.nan_to_num(w))
            if (d > atol + rtol * np.abs(np.nan_to_num(w))).any():
                return "%s: max |diff| %.3g" % (name, d.max())
        elif not np.array_equal(g, want):
            return "%s: values differ" % name
    return None


def one(model_dir, lib):
    """Runs one export in this process; prints one JSON line."""
    import onnxruntime as ort
    ort.register_execution_provider_library(EP, lib)
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(prefix="xlac-ortep-"), "p")
    so.intra_op_num_threads = 1
    so.add_provider_for_devices([d for d in ort.get_ep_devices() if d.ep_name == EP], {})
    sess = ort.InferenceSession(os.path.join(model_dir, "model.onnx"), sess_options=so)
    names = [o.name for o in sess.get_outputs()]
    results = []
    for s in sorted(x for x in os.listdir(model_dir) if re.fullmatch(r"s\d+", x)):
        feed = {f[:-4]: np.load(os.path.join(model_dir, s, f))
                for f in os.listdir(os.path.join(model_dir, s)) if f.endswith(".npy")}
        got = dict(zip(names, sess.run(None, feed)))
        results.append((s, compare(os.path.join(model_dir, s, "out"), got, *tolerance(model_dir))))
    prof = sess.end_profiling()
    with open(prof) as f:
        events = json.load(f)
    ep_nodes = {e["name"] for e in events if e.get("cat") == "Node" and e.get("args", {}).get("provider") == EP}
    print(json.dumps({"shapes": results, "ep_nodes": len(ep_nodes)}))


def run_model(args, name):
    d = os.path.join(args.exports, name)
    env = dict(os.environ, XLAC_AUTO_JIT="2", OMP_NUM_THREADS="1", XLAC_FLAGS="--clustering_debug")
    try:
        p = subprocess.run([sys.executable, "-W", "ignore", __file__, "--one", d, "--lib", args.lib],
                           env=env, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return [(name, False, "timed out")]
    last = p.stdout.strip().splitlines()[-1:] if p.returncode == 0 else []
    if not last:
        return [(name, False, "exit %d: %s" % (p.returncode, p.stderr.strip()[-800:]))]
    r = json.loads(last[0])
    cases = [("%s/%s" % (name, s), why is None, why or "ok") for s, why in r["shapes"]]
    convs = p.stderr.count("left to onnxruntime: a convolution network")
    known = os.path.join(d, "ep_expected_failure")  # why the EP takes nothing, as its log says it
    if os.path.exists(known):
        with open(known) as f:
            why = f.read().strip()
        seen = r["ep_nodes"] == 0 and why in p.stderr
        cases.append(("%s/ep" % name, seen, "known: 0 fused nodes, %s" % why if seen else
                      "ep_expected_failure says '%s', but %d fused nodes ran (or the log says "
                      "otherwise)" % (why, r["ep_nodes"])))
    elif r["ep_nodes"] > 0 or convs == 0:
        cases.append(("%s/ep" % name, r["ep_nodes"] > 0, "%d fused nodes ran on %s" % (r["ep_nodes"], EP)))
    else:  # the EP's clustering ran and left only clusters with a convolution, each said so
        cases.append(("%s/ep" % name, True, "0 fused nodes: %d convolution-network clusters left to "
                      "onnxruntime" % convs))
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--exports", default=EXPORTS)
    ap.add_argument("--filter", default="")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.lib = os.path.abspath(args.lib)
    if args.one:
        return one(args.one, args.lib)
    names = sorted(n for n in os.listdir(args.exports) if re.search(args.filter, n)
                   and os.path.exists(os.path.join(args.exports, n, "model.onnx")))
    passed = failed = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for cases in pool.map(lambda n: run_model(args, n), names):
            for case, ok, detail in cases:
                print("%s %s: %s" % ("ok    " if ok else "FAILED", case, detail), flush=True)
                passed += ok
                failed += not ok
    print("ort ep real exports: %d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
