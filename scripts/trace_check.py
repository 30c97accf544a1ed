#!/usr/bin/env python3
"""Checks a trace written by `xlac-run --trace` or XLAC_FLAGS=--trace (Chrome
trace-event JSON) and prints what it holds as one JSON line:

    {"runs": 3, "launches": 6, "compiles": 2, "disk_loads": 0, "fallbacks": 2,
     "ops": 10, "tracks": ["main", "xlac compile"]}

Exit status 1, with the reason on stderr, when the file is not valid JSON or
breaks a rule a reader relies on:
  - every complete event ("ph":"X") has a name, a category, ts, dur >= 0, pid, tid;
  - every cluster launch lies inside a run on the same track;
  - every fallback lies inside a launch of its cluster on the same track, with a reason;
  - every compile and disk load is a slice of its own, with cluster, target,
    compiler, ms and cache key, either inside a launch of its cluster on the
    same track (compiled in place) or on a track named "xlac compile" (in the
    background).
Usage: trace_check.py FILE.json
"""
import json
import sys

EPS = 0.01  # microseconds: timestamps are written with 3 decimals


def fail(msg):
    sys.stderr.write("trace_check: %s\n" % msg)
    sys.exit(1)


def inside(a, b):
    return (a["tid"] == b["tid"] and a["ts"] >= b["ts"] - EPS
            and a["ts"] + a["dur"] <= b["ts"] + b["dur"] + EPS)


def check_event(e):
    for k in ("name", "cat", "ts", "dur", "pid", "tid"):
        if k not in e:
            fail("event without %s: %r" % (k, e))
    if e["dur"] < 0:
        fail("negative duration: %r" % e)


def main(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as err:
        fail("%s: not valid JSON: %s" % (path, err))
    events = doc.get("traceEvents")
    if not isinstance(events, list):
        fail("no traceEvents list")
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    xs = [e for e in events if e.get("ph") == "X"]
    for e in xs:
        check_event(e)
    by = lambda cat: [e for e in xs if e["cat"] == cat]
    runs, launches = by("run"), by("cluster launch")
    for l in launches:
        if not any(inside(l, r) for r in runs):
            fail("launch %s at %.3f is in no run" % (l["name"], l["ts"]))
        for k in ("cluster", "signature", "cache", "ops"):
            if k not in l.get("args", {}):
                fail("launch %s has no %s" % (l["name"], k))
    for fb in by("fallback"):
        if not fb.get("args", {}).get("reason"):
            fail("fallback %s has no reason" % fb["name"])
        if not any(inside(fb, l) and l["args"]["cluster"] == fb["args"]["cluster"] for l in launches):
            fail("fallback %s at %.3f is in no launch of its cluster" % (fb["name"], fb["ts"]))
    compiles = by("compile") + by("disk")
    for c in compiles:
        a = c.get("args", {})
        for k in ("cluster", "target", "compiler", "ms", "cache_key"):
            if k not in a:
                fail("compile %s has no %s" % (c["name"], k))
        own = any(inside(c, l) and l["args"]["cluster"] == a["cluster"] for l in launches)
        if not own and names.get(c["tid"]) != "xlac compile":
            fail("compile %s is neither inside a launch of %s nor on a compile thread"
                 % (c["name"], a["cluster"]))
    ops = [e for e in xs if e["cat"] not in ("run", "cluster launch", "fallback", "compile", "disk")]
    print(json.dumps({"runs": len(runs), "launches": len(launches), "compiles": len(by("compile")),
                      "disk_loads": len(by("disk")), "fallbacks": len(by("fallback")),
                      "ops": len(ops), "tracks": sorted(set(names.values()))}, sort_keys=True))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        fail("usage: trace_check.py FILE.json")
    main(sys.argv[1])
