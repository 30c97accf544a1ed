"""Runs the committed real exports (tests/models/exports/NAME, written by
export.py) through xlac-run, op by op and clustered (LD_PRELOAD=libxlac.so
XLAC_AUTO_JIT=2), each at its three input shapes in one process (--feed
sK, three times), and compares every output with onnxruntime's committed
one: |xlac - ort| <= ATOL + RTOL * |ort| (an export's file 'tolerance' may
say its own), no NaN. One case per model, mode and shape, and per mode one
for an export's decode loop (run_decode.py: a KV-cache decoder step after
step, its cache fed back, compiles bounded); a case that fails as the
export's expected_failure file says is a known failure. The closing line is

    real exports: N passed, N failed, N known failures

With --device gpu both modes run on the CUDA device (the plugin clusters
for XLA_GPU:0 with --devices=gpu); scripts/gpu.sh runs a slice of them so.
Needs only numpy (tests/onnx/.venv). Usage:
    python tests/models/run_exports.py --build DIR [--filter REGEX] [--device cpu|gpu]
                                       [--jobs N] [--keep]
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RTOL, ATOL = 1e-3, 1e-4


def compare(want_dir, got_dir, rtol=RTOL, atol=ATOL):
    """None when every output agrees, else why not; and the worst relative difference."""
    worst = 0.0
    for f in sorted(os.listdir(want_dir)):
        want = np.load(os.path.join(want_dir, f))
        p = os.path.join(got_dir, f)
        if not os.path.exists(p):
            return "output %s was not written" % f[:-4], worst
        got = np.load(p)
        if got.shape != want.shape or got.dtype != want.dtype:
            return "%s: got %s %s, want %s %s" % (f[:-4], got.dtype, got.shape, want.dtype, want.shape), worst
        if want.dtype.kind in "fc":
            g, w = got.astype(np.float64), want.astype(np.float64)
            if np.isnan(g).any() != np.isnan(w).any():
                return "%s: NaN where onnxruntime has none" % f[:-4], worst
            d = np.abs(g - w)
            if (d > atol + rtol * np.abs(w)).any():
                i = np.unravel_index(np.argmax(d - rtol * np.abs(w)), d.shape)
                return "%s: at %s got %.7g, want %.7g" % (f[:-4], i, g[i], w[i]), worst
            worst = max(worst, float(d.max() / max(np.abs(w).max(), 1e-30)))
        elif not np.array_equal(got, want):
            return "%s: values differ" % f[:-4], worst
    return None, worst


def tolerance(d):
    """(rtol, atol): the export's own (its file 'tolerance', "RTOL ATOL": the fp16 exports, whose
    onnxruntime rounds differently) or the default."""
    p = os.path.join(d, "tolerance")
    if not os.path.exists(p):
        return RTOL, ATOL
    with open(p) as f:
        r, a = f.read().split()
    return float(r), float(a)


def run_model(args, name, tmp):
    """[(case, ok, detail)] for one export: per mode, per shape."""
    d = os.path.join(args.exports, name)
    tol = tolerance(d)
    shapes = sorted(s for s in os.listdir(d) if re.fullmatch(r"s\d+", s))
    cases = []
    for clustered in (False, True):
        mode = "clustered" if clustered else "op_by_op"
        out = os.path.join(tmp, name, mode)
        feeds = []
        for s in shapes:
            feed = os.path.join(tmp, name, "feed_" + s)
            os.makedirs(feed, exist_ok=True)
            for f in os.listdir(os.path.join(d, s)):
                if f.endswith(".npy"):
                    shutil.copy(os.path.join(d, s, f), feed)
            feeds += ["--feed", feed]
        cmd = [args.xlac_run, os.path.join(d, "model.onnx"), "--device", args.device,
               "--save-outputs", out] + feeds
        env = dict(os.environ, OMP_NUM_THREADS="1")
        if clustered:
            env.update(LD_PRELOAD=args.libxlac, XLAC_AUTO_JIT="2")
            if args.device == "gpu":
                env["XLAC_FLAGS"] = "--devices=gpu"
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        for k, s in enumerate(shapes):
            case = "%s/%s/%s" % (name, mode, s)
            if p.returncode != 0:
                cases.append((case, False, "exit %d: %s" % (p.returncode, p.stderr.strip()[-800:])))
                continue
            got = os.path.join(out, str(k)) if len(shapes) > 1 else out
            why, worst = compare(os.path.join(d, s, "out"), got, *tol)
            cases.append((case, why is None, why or "max |xlac - ort| / max |ort| = %.2g" % worst))
    return cases


LABEL = {True: "ok    ", False: "FAILED", "known": "known "}


def expect(d, cases):
    """cases with those that fail as d/expected_failure (every case) or d/expected_failure.MODE
    (op_by_op or clustered cases) says, its first line a text the failure names and the rest why,
    marked "known"; one that passes, or fails otherwise, stays a failure."""
    out = []
    for case, ok, detail in cases:
        mode = case.split("/")[1]
        p = [q for q in (os.path.join(d, "expected_failure." + mode), os.path.join(d, "expected_failure"))
             if os.path.exists(q)]
        if not p:
            out.append((case, ok, detail))
            continue
        with open(p[0]) as f:
            text, why = (f.read().split("\n", 1) + [""])[:2]
        if ok:
            out.append((case, False, "passes, but %s says it fails (%s): remove the file" % (p[0], text)))
        else:
            out.append((case, "known" if text in detail else False,
                        why.strip() if text in detail else detail))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--exports", default=os.path.join(HERE, "exports"))
    ap.add_argument("--filter", default="")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--jobs", type=int, default=1, help="models run at once")
    ap.add_argument("--keep", action="store_true", help="keep the outputs folder")
    args = ap.parse_args()
    args.xlac_run = os.path.abspath(os.path.join(args.build, "bin", "xlac-run"))
    args.libxlac = os.path.abspath(os.path.join(args.build, "lib", "libxlac.so"))
    names = sorted(n for n in os.listdir(args.exports) if re.search(args.filter, n)
                   and os.path.exists(os.path.join(args.exports, n, "model.onnx")))
    tmp = tempfile.mkdtemp(prefix="xlac-exports-")
    passed = failed = known = 0
    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            for name, cases in zip(names, pool.map(lambda n: run_model(args, n, tmp), names)):
                for case, ok, detail in expect(os.path.join(args.exports, name), cases):
                    print("%s %s: %s" % (LABEL[ok], case, detail), flush=True)
                    passed += ok is True
                    known += ok == "known"
                    failed += not ok
        import run_decode  # the KV-cache exports' decode loops (run_decode.py), counted here too
        for name in names if args.device == "cpu" else []:
            if os.path.isdir(os.path.join(args.exports, name, "loop")):
                for case, ok, detail in expect(os.path.join(args.exports, name, "loop"), run_decode.run(args, name)):
                    print("%s %s: %s" % (LABEL[ok], case, detail), flush=True)
                    passed += ok is True
                    known += ok == "known"
                    failed += not ok
    finally:
        if args.keep:
            print("outputs kept in", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("real exports: %d passed, %d failed, %d known failures" % (passed, failed, known))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
