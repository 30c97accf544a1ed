#!/usr/bin/env python3
"""Where a run's time goes, from a trace written by `xlac-run --trace`
(op by op, or clustered with LD_PRELOAD=libxlac.so XLAC_AUTO_JIT=2).

Per kind of work, the mean milliseconds per run over the runs after the
first (warm-up and compiles excluded) and its share of the run:
  - op by op: each op type (`conv2d`, `matmul`, `add`, ...);
  - clustered: each kind of compiled step (`conv2d`, `matmul`, `fused
    attention`, `loop`, `row`, ...: the `cluster step` slices), the ops run
    per op outside clusters by type, `cluster overhead` (a launch's time
    outside its steps: the cache lookup, buffers, the launch itself) and
    `other` (a run's time outside every op and launch).
Prints a markdown table; --top N keeps the N largest rows.
Usage: bench/trace_profile.py TRACE.json [--top N] [--title TEXT]"""
import argparse
import collections
import json


def inside(e, r):
    return r["ts"] <= e["ts"] and e["ts"] + e.get("dur", 0) <= r["ts"] + r["dur"] + 1


def profile(events):
    runs = sorted((e for e in events if e.get("cat") == "run" and e.get("ph") == "X"), key=lambda e: e["ts"])
    timed = runs[1:] if len(runs) > 1 else runs
    spans = [e for e in events if e.get("ph") == "X" and e.get("cat") not in ("run", "const")]
    total = collections.Counter()
    run_ms = 0.0
    for r in timed:
        run_ms += r["dur"]
        mine = [e for e in spans if e.get("tid") == r.get("tid") and inside(e, r)]
        launches = [e for e in mine if e["cat"] == "cluster launch"]
        covered = 0.0
        for e in mine:
            cat = e["cat"]
            if cat == "cluster step":
                total[e["args"].get("kind", "?")] += e["dur"]
            elif cat == "cluster launch":
                steps = sum(s["dur"] for s in mine if s["cat"] == "cluster step" and inside(s, e))
                ops = sum(s["dur"] for s in mine if s["cat"] not in ("cluster step", "cluster launch",
                                                                    "compile", "disk", "fallback")
                          and inside(s, e))
                total["cluster overhead"] += max(e["dur"] - steps - ops, 0)
                covered += e["dur"]
            elif cat not in ("compile", "disk", "fallback"):
                if not any(inside(e, l) for l in launches):
                    covered += e["dur"]
                total[cat] += e["dur"]
        total["other"] += max(r["dur"] - covered, 0)
    n = max(len(timed), 1)
    return {k: v / n / 1000 for k, v in total.items()}, run_ms / n / 1000, n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--title", default=None)
    a = ap.parse_args()
    t = json.load(open(a.trace))
    events = t["traceEvents"] if isinstance(t, dict) else t
    per, run_ms, n = profile(events)
    print("%s: %.2f ms per run (mean of %d runs after the first)" % (a.title or a.trace, run_ms, n))
    print("")
    print("| kind | ms per run | share |")
    print("| --- | --- | --- |")
    for k, v in sorted(per.items(), key=lambda kv: -kv[1])[:a.top]:
        if v >= 0.005:
            print("| %s | %.2f | %.0f %% |" % (k, v, 100 * v / run_ms if run_ms else 0))


if __name__ == "__main__":
    main()
