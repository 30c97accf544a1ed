"""The decode loops of the committed KV-cache exports (tests/models/exports/NAME/loop, written by
export.py's decode_loop): the first step's inputs, then KV_STEPS steps of one token each, the
present keys and values of a step fed back as the next one's past (xlac's own, not onnxruntime's),
the mask one longer and the position one on. Every step's logits are compared with onnxruntime's
(run_exports.py's bound), op by op and clustered (the Python package's session, auto_jit 2), each
in a process of its own; clustered, the plugin's compiles must stop growing after the first
SETTLE steps (a past one longer each step is a new input signature every step: the per-signature
graphs are generalised over the sizes, so the compiled programs serve them). Closing line

    decode loops: N passed, N failed

Needs numpy only (tests/onnx/.venv). Usage:
    python tests/models/run_decode.py --build DIR [--filter REGEX]
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

import run_exports

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
RTOL, ATOL = 1e-3, 1e-4
SETTLE = 3  # steps after which no compile may happen


def loop(d, clustered):
    """Runs the loop of export d in this process; prints one JSON line: per step, the worst
    difference or the failure, and the plugin's compile count after it."""
    import xlac
    so = xlac.SessionOptions()
    so.graph_optimization_level = (xlac.GraphOptimizationLevel.ORT_ENABLE_EXTENDED if clustered
                                   else xlac.GraphOptimizationLevel.ORT_DISABLE_ALL)
    sess = xlac.InferenceSession(os.path.join(d, "model.onnx"), so)
    first = os.path.join(d, "loop", "first")
    feed = {f[:-4]: np.load(os.path.join(first, f)) for f in sorted(os.listdir(first))}
    ids = np.load(os.path.join(d, "loop", "ids.npy"))
    want = np.load(os.path.join(d, "loop", "logits.npy"))
    outs = [o.name for o in sess.get_outputs()]
    past = sorted(n for n in feed if n.startswith("past_"))
    steps = []
    for k in range(len(want)):
        res = dict(zip(outs, sess.run(None, feed)))
        got, w = res["logits"].astype(np.float64), want[k].astype(np.float64)
        d_ = np.abs(got - w) if got.shape == w.shape else None
        why = ("logits %s, want %s" % (got.shape, w.shape) if d_ is None else
               "NaN where onnxruntime has none" if np.isnan(got).any() else None)
        if d_ is not None and not np.isnan(got).any() and (d_ > ATOL + RTOL * np.abs(w)).any():
            i = np.unravel_index(np.argmax(d_ - RTOL * np.abs(w)), d_.shape)
            why = "at %s got %.7g, want %.7g" % (i, got[i], w[i])
        steps.append({"why": why, "worst": None if d_ is None else float(d_.max() / max(np.abs(w).max(), 1e-30)),
                      "compiles": xlac.stats().get("compiles", 0)})
        if k + 1 == len(want):
            break
        feed = {"input_ids": ids[k], "attention_mask": np.concatenate(
                    [feed["attention_mask"], np.ones((ids.shape[1], 1), np.int64)], 1),
                "position_ids": feed["position_ids"][:, -1:] + 1}
        feed.update({p: res[p.replace("past_", "present_")] for p in past})
    print(json.dumps(steps))


def run(args, name):
    """[(case, ok, detail)] for one export's loop: op by op, then clustered."""
    d = os.path.join(args.exports, name)
    cases = []
    for clustered in (False, True):
        case = "%s/%s/loop" % (name, "clustered" if clustered else "op_by_op")
        env = dict(os.environ, OMP_NUM_THREADS="1", XLAC_LIB_DIR=os.path.abspath(os.path.join(args.build, "lib")),
                   PYTHONPATH=os.path.abspath(os.path.join(ROOT, "python")))
        env.pop("XLAC_AUTO_JIT", None)
        env["XLAC_FLAGS"] = "--disk_cache=0"  # every program this run needs is compiled, and counted
        p = subprocess.run([sys.executable, "-W", "ignore", __file__, "--one", d] + (["--clustered"] if clustered else []),
                           env=env, capture_output=True, text=True, timeout=900)
        if p.returncode != 0 or not p.stdout.strip():
            cases.append((case, False, "exit %d: %s" % (p.returncode, p.stderr.strip()[-800:])))
            continue
        steps = json.loads(p.stdout.strip().splitlines()[-1])
        bad = [(k, s["why"]) for k, s in enumerate(steps) if s["why"]]
        compiles = [s["compiles"] for s in steps]
        late = compiles[-1] - compiles[min(SETTLE, len(steps)) - 1]
        worst = max(s["worst"] or 0 for s in steps)
        if bad:
            cases.append((case, False, "step %d: %s" % bad[0]))
        elif clustered and (compiles[-1] == 0 or late):
            cases.append((case, False, "compiles per step %s: %s" % (
                compiles, "none (nothing clustered)" if compiles[-1] == 0 else
                "%d after step %d" % (late, SETTLE))))
        else:
            cases.append((case, True, "%d steps, max |xlac - ort| / max |ort| = %.2g%s" % (
                len(steps), worst, ", compiles per step %s" % compiles if clustered else "")))
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--exports", default=os.path.join(HERE, "exports"))
    ap.add_argument("--filter", default="")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--clustered", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        loop(args.one, args.clustered)
        return 0
    names = sorted(n for n in os.listdir(args.exports) if re.search(args.filter, n)
                   and os.path.isdir(os.path.join(args.exports, n, "loop")))
    passed = failed = known = 0
    for n in names:
        for case, ok, detail in run_exports.expect(os.path.join(args.exports, n, "loop"), run(args, n)):
            print("%s %s: %s" % (run_exports.LABEL[ok], case, detail), flush=True)
            passed += ok is True
            known += ok == "known"
            failed += not ok
    print("decode loops: %d passed, %d failed, %d known failures" % (passed, failed, known))
    return 0 if failed == 0 and passed else 1


if __name__ == "__main__":
    sys.exit(main())
