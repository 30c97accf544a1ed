"""A slice of the onnx package's backend node tests through onnxruntime with xlac's execution
provider (XLAC_AUTO_JIT=2), against plain onnxruntime on the same inputs: same dtypes and shapes,
NaN where it has NaN, values within a tolerance per dtype. The slice: every case whose model is a
function's expansion (several nodes: clusters form) of every (SLICE/4)-th case, and every SLICE-th
case. A case plain
onnxruntime cannot run is skipped. Cases run in groups, one process each (a crash fails its
group). Closing line:

    ort ep node tests: N passed, N failed, N skipped (N with fused nodes)

Usage: python tests/ort_ep/run_node_tests.py --lib LIB [--filter REGEX] [--slice N] [--jobs N]
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings

import numpy as np

EP = "XlacExecutionProvider"
TOL = {np.float16: (1e-2, 1e-3), np.float32: (1e-4, 1e-5), np.float64: (1e-7, 1e-12)}
GROUP = 40


def cases(args):
    warnings.simplefilter("ignore")
    from onnx.backend.test.case.node import collect_testcases
    all_cases = sorted(collect_testcases(None), key=lambda c: c.name)
    out = []
    for k, c in enumerate(all_cases):
        if not re.search(args.filter, c.name):
            continue
        if k % args.slice == 0 or ("_expanded" in c.name and k % (args.slice // 4 or 1) == 0):
            out.append(c.name)
    return out


def close(got, want):
    if got.dtype != want.dtype or got.shape != want.shape:
        return "got %s %s, want %s %s" % (got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.kind != "f":
        return None if np.array_equal(got, want) else "values differ"
    rtol, atol = TOL.get(want.dtype.type, (1e-4, 1e-5))
    if (np.isnan(got) != np.isnan(want)).any():
        return "NaN differs"
    g, w = np.nan_to_num(got.astype(np.float64)), np.nan_to_num(want.astype(np.float64))
    return None if np.allclose(g, w, rtol=rtol, atol=atol) else "max |diff| %.3g" % np.abs(g - w).max()


def run_group(names, lib):
    """In this process: each named case, plain and with the EP; one JSON line per case."""
    warnings.simplefilter("ignore")
    import onnxruntime as ort
    from onnx.backend.test.case.node import collect_testcases
    by_name = {c.name: c for c in collect_testcases(None)}
    ort.register_execution_provider_library(EP, lib)
    devices = [d for d in ort.get_ep_devices() if d.ep_name == EP]
    tmp = tempfile.mkdtemp(prefix="xlac-ortep-node-")
    for name in names:
        c = by_name[name]
        bytes_ = c.model.SerializeToString()
        try:
            plain = ort.InferenceSession(bytes_, providers=["CPUExecutionProvider"])
            feeds = [dict(zip([i.name for i in plain.get_inputs()], inputs)) for inputs, _ in c.data_sets]
            wants = [plain.run(None, f) for f in feeds]
            if not all(isinstance(w, np.ndarray) for want in wants for w in want):
                raise ValueError("an output that is not a tensor")
        except Exception as e:  # noqa: BLE001 (onnxruntime cannot run it: not ours to judge)
            print(json.dumps({"case": name, "skip": str(e)[:200]}), flush=True)
            continue
        so = ort.SessionOptions()
        so.add_provider_for_devices(devices, {})
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(tmp, "p")
        try:
            sess = ort.InferenceSession(bytes_, sess_options=so)
            why = None
            for f, want in zip(feeds, wants):
                for g, w in zip(sess.run(None, f), want):
                    why = why or close(np.asarray(g), np.asarray(w))
            prof = sess.end_profiling()
            with open(prof) as fp:
                fused = any(e.get("args", {}).get("provider") == EP for e in json.load(fp) if e.get("cat") == "Node")
            os.remove(prof)
        except Exception as e:  # noqa: BLE001
            why, fused = "error: %s" % str(e)[:300], False
        print(json.dumps({"case": name, "fail": why, "fused": fused}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--filter", default="")
    ap.add_argument("--slice", type=int, default=12)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--group", help=argparse.SUPPRESS)
    args = ap.parse_args()
    lib = os.path.abspath(args.lib)
    if args.group:
        return run_group(args.group.split(","), lib)
    names = cases(args)
    groups = [names[k:k + GROUP] for k in range(0, len(names), GROUP)]
    env = dict(os.environ, XLAC_AUTO_JIT="2", OMP_NUM_THREADS="1")

    def run(group):
        p = subprocess.run([sys.executable, __file__, "--lib", lib, "--group", ",".join(group)], env=env,
                           capture_output=True, text=True, timeout=900)
        done = {}
        for line in p.stdout.splitlines():
            if line.startswith("{"):
                r = json.loads(line)
                done[r["case"]] = r
        for n in group:
            if n not in done:
                done[n] = {"case": n, "fail": "the group's process exited %d: %s" % (p.returncode, p.stderr[-300:]),
                           "fused": False}
                break  # the rest of the group after the crash are not judged
        return [done[n] for n in group if n in done]

    passed = failed = skipped = fused = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for results in pool.map(run, groups):
            for r in results:
                if "skip" in r:
                    skipped += 1
                    continue
                ok = r["fail"] is None
                passed += ok
                failed += not ok
                fused += r["fused"]
                print("%s %s%s" % ("ok    " if ok else "FAILED", r["case"], "" if ok else ": " + r["fail"]), flush=True)
    print("ort ep node tests: %d passed, %d failed, %d skipped (%d with fused nodes)" % (passed, failed, skipped, fused))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
