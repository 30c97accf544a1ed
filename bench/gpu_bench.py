#!/usr/bin/env python3
"""xlac GPU benchmark (run it through scripts/gpu.sh).

For each workload in bench/graphs/ it times, in one run and on the same data:
xlac-run op by op with --device gpu, xlac-run with the plugin (clusters on
XLA_GPU:0, compiled through NVRTC) with --device gpu, and the GPU peers
(torch.compile and jax.jit on the device) where those are installed. The
device copy roofline is measured in the same run with xlac-gpu-stream, and
each workload's minimum bytes over its clustered time is reported as a
fraction of it. Writes bench/RESULTS-gpu.md (or --results) and prints the
table. Stops starting new workloads once --budget seconds have passed."""

import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import bench
import peers

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def to_numpy(out):
    out = out[0] if isinstance(out, (tuple, list)) else out
    return out.cpu().numpy() if hasattr(out, "cpu") else np.asarray(out)


def gpu_peer_times(name, sets, iterations, warmup):
    results = {}
    want = peers.np_workloads(np)[name](sets[0])
    want = want[0] if isinstance(want, tuple) else want
    for peer, builder in peers.GPU_PEERS.items():
        try:
            runs = [builder(name, s) for s in sets]
            bench.check_close(peer, to_numpy(runs[0]()), want)
            ts = [bench.time_callable(r, iterations, warmup) for r in runs]
            results[peer] = ("ok", statistics.median(ts))
        except Exception as e:  # a peer that cannot run is reported, never dropped
            msg = str(e).splitlines()[0][:120] if str(e) else ""
            results[peer] = ("missing", "%s: %s" % (type(e).__name__, msg))
    return results


def bench_workload(name, args, xlac, copy_gbs, tmp):
    graph = os.path.join(HERE, "graphs", name + ".xg")
    spec = bench.parse_inputs(graph)
    batch = bench.STATIC_BATCH if name == "dynamic_batch" else None
    sets = [bench.make_inputs(spec, s, batch) for s in (1, 2)]
    feeds = [bench.save_inputs(s, os.path.join(tmp, name, "set%d" % i)) for i, s in enumerate(sets)]
    row = {"name": name}
    row["bytes"] = sum(a.nbytes for a in sets[0].values()) + bench.output_bytes(name, sets[0])
    gpu = ["--device", "gpu", "--inputs-on-device", "--outputs-on-device"] # no host copies timed
    op, cl, stats = [], [], {}
    for r in range(args.rounds):
        f = [feeds[r % len(feeds)]]
        op.append(xlac.run(graph, f, False, args.iterations, args.warmup, extra_args=gpu)[0])
        ms, stats, _ = xlac.run(graph, f, True, args.iterations, args.warmup,
                                extra_flags="--devices=gpu", extra_args=gpu)
        cl.append(ms)
    bench.summarize(row, op, cl, stats, copy_gbs)
    row["peers"] = gpu_peer_times(name, sets, args.iterations, args.warmup)
    return row


def measure_copy(tool):
    p = subprocess.run([tool], capture_output=True, text=True, check=True)
    m = re.search(r"copy_gbs=([\d.]+).*device=(.*)", p.stdout)
    return float(m.group(1)), m.group(2).strip()


def table(rows, copy_gbs):
    names = list(peers.GPU_PEERS)
    head = "| workload | op by op ms | clustered ms | clustered / op | % copy roofline | " + \
        " | ".join("%s ms" % n for n in names) + " |"
    out = [head, "|" + " --- |" * (5 + len(names))]
    for r in rows:
        cells = [r["name"], "%.3f" % r["op_ms"], "%.3f" % r["cl_ms"], "%.2f×" % r["speedup"],
                 "%.0f %%" % (100 * r["roof"])]
        for n in names:
            st, v = r["peers"][n]
            cells.append("%.3f" % v if st == "ok" else "missing")
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out.append("Device copy roofline: %.1f GB/s (read + written)." % copy_gbs)
    return "\n".join(out)


def write_results(rows, copy_gbs, device, args, skipped, path):
    md = ["# xlac GPU benchmark", "",
          "Written by `scripts/gpu.sh` (bench/gpu_bench.py) on %s UTC." %
          datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"),
          "Device: %s. Rounds %d, iterations %d, warm-up %d; xlac times are the median of "
          "each process's timed iterations, then the median over rounds." %
          (device, args.rounds, args.iterations, args.warmup), "", table(rows, copy_gbs), ""]
    missing = [(r["name"], n, v) for r in rows for n, (st, v) in r["peers"].items() if st != "ok"]
    if missing:
        md += ["Peers missing:", ""] + ["- %s, %s: %s" % m for m in missing] + [""]
    if skipped:
        md += ["Not run (time budget of %d s spent) or failed: %s." % (args.budget, ", ".join(skipped)), ""]
    with open(path, "w") as fh:
        fh.write("\n".join(md))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build-gpu"))
    ap.add_argument("--stream", default=None, help="xlac-gpu-stream binary")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget", type=int, default=240, help="seconds before no new workload")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS-gpu.md"))
    args = ap.parse_args()
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="xlac-gpu-bench-")
    copy_gbs, device = measure_copy(args.stream or os.path.join(args.build, "bin", "xlac-gpu-stream"))
    bench.log("device copy roofline: %.1f GB/s on %s" % (copy_gbs, device))
    xlac = bench.Xlac(args.build, os.path.join(tmp, "cache"))
    rows, skipped = [], []
    for name in args.only or bench.WORKLOADS:
        if time.monotonic() - t0 > args.budget:
            skipped.append(name)
            continue
        bench.log("== %s" % name)
        try:
            rows.append(bench_workload(name, args, xlac, copy_gbs, tmp))
        except Exception as e:  # one failing workload must not lose the others' numbers
            bench.log("   %s failed: %s" % (name, e))
            skipped.append("%s (failed: %s)" % (name, str(e).splitlines()[0][:100]))
            continue
        bench.log("   op %.3f ms, xlac %.3f ms, %.2fx" % (rows[-1]["op_ms"], rows[-1]["cl_ms"],
                                                      rows[-1]["speedup"]))
    write_results(rows, copy_gbs, device, args, skipped, args.results)
    print(table(rows, copy_gbs))
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
