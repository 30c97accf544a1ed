#!/usr/bin/env python3
"""The latency part of the benchmark: how long a user waits before the first outputs.

1. Compile time per cluster, both compilers: every cluster of the bench graphs (and, listed
   apart, of the ONNX models) compiled ahead of time by `xlac-compile --target c` (the system
   cc) and `--target cuda --arch sm_90` (NVRTC to a cubin: needs no GPU), all graphs in one
   process per round, as a long-running host compiles them (the first includes NVRTC's start-up).
   Per cluster, the median over the rounds; then the median and the max over the clusters.

2. First run, per bench graph and ONNX model: the wall clock of one `xlac-run` process with the
   plugin, from its start to its exit after the outputs (one run, inputs from .npy files):
   - cold: an empty xlac disk cache (every cluster compiled; the OS page cache is warm);
   - warm: the cache the cold run filled (nothing compiled);
   - steady: one clustered run in steady state (median of timed iterations after warm-up);
   - load: what the same process costs besides its run (start, parse or import, reading the
     inputs, exit), taken from an op-by-op process: its wall clock minus its one timed run;
   - and, for scale, how much longer an op-by-op first run takes than its steady state (fresh
     buffers faulted in, thread pools started): a first run pays that without any xlac.
   The warm first run should be within 1.1x of steady + load: whatever the plugin adds to a
   first run with a warm cache (its start, clustering, the disk-cache lookups and loads) fits
   in that 10 %.

Run alone: `bench/latency.py --build build-bench` (prints the section, and with --results
replaces its section in RESULTS.md); bench.py runs it as part of the whole bench."""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

GRAPHS = ["fused_sum", "gelu", "softmax_rows", "layernorm_rows", "column_sum", "mlp_block",
          "adam_step", "transformer_block"]  # dynamic_batch has unknown dims: no ahead-of-time compile
MODELS = ["mlp", "encoder", "resnet"]
HEADING = "## First run and compile latency"
WARM_TARGET = 1.1


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def clean_env():
    env = dict(os.environ)
    for k in list(env):
        if k == "LD_PRELOAD" or k.startswith("XLAC_"):
            env.pop(k)
    return env


def compile_times(build, paths, target):
    """{(file, cluster): ms} of one xlac-compile process over every path."""
    out = tempfile.mkdtemp(prefix="xlac-lat-aot-")
    try:
        cmd = [os.path.join(build, "bin", "xlac-compile")] + paths + ["--target", target, "--out", out]
        if target == "cuda":
            cmd += ["--arch", "sm_90"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=clean_env())
        if p.returncode != 0:
            log("xlac-compile --target %s failed: %s" % (target, p.stderr.strip()[-500:]))
        what = "NVRTC to cubin" if target == "cuda" else "cc"
        times = {}
        for m in re.finditer(r"xlac-compile: (\S+): (\S+) .*?\(%s ([0-9.]+) ms\)" % what, p.stdout):
            times[(os.path.basename(m.group(1)), m.group(2))] = float(m.group(3))
        return times
    finally:
        shutil.rmtree(out, ignore_errors=True)


def compile_figures(build, paths, rounds):
    """Per compiler: the per-cluster medians over rounds, then their median and max."""
    fig = {}
    for target, name in (("c", "cc"), ("cuda", "nvrtc")):
        per = {}
        for _ in range(rounds):
            for k, v in compile_times(build, paths, target).items():
                per.setdefault(k, []).append(v)
        meds = {k: statistics.median(v) for k, v in per.items()}
        fig[name] = meds
    return fig


def summary(meds, keep):
    vals = [v for k, v in meds.items() if keep(k)]
    return (statistics.median(vals), max(vals), len(vals)) if vals else (float("nan"),) * 2 + (0,)


def graph_inputs(build, path, folder, seed):
    """Random .npy inputs for a graph or model (its input declarations read from its .xg text)."""
    xg = path
    if path.endswith(".onnx"):
        xg = os.path.join(folder, "model.xg")
        subprocess.run([os.path.join(build, "bin", "xlac-run"), path, "--to-xg", xg], check=True,
                       capture_output=True, env=clean_env())
    rng = np.random.default_rng(seed)
    feed = os.path.join(folder, "feed")
    os.makedirs(feed, exist_ok=True)
    for line in open(xg):
        m = re.match(r"\s*input\s+(\S+)\s*:\s*(\w+)\[([^\]]*)\]", line)
        if m:
            dims = [int(d) for d in m.group(3).split(",") if d.strip()]
            dt = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}[m.group(2)]
            a = rng.uniform(-1.0, 1.0, size=dims).astype(dt)
            np.save(os.path.join(feed, m.group(1) + ".npy"), a)
    return feed


class Runner:
    def __init__(self, build):
        self.bin = os.path.join(build, "bin", "xlac-run")
        self.plugin = os.path.join(build, "lib", "libxlac.so")

    def run(self, path, feed, cache, iterations=1, warmup=0, clustered=True):
        """(wall ms of the whole process, its reported median run ms, stats)."""
        env = clean_env()
        if clustered:
            env.update(LD_PRELOAD=self.plugin, XLAC_AUTO_JIT="2",
                       XLAC_FLAGS="--stats --cache_dir=%s" % cache)
        cmd = [self.bin, path, "--feed", feed, "--iterations", str(iterations), "--warmup", str(warmup)]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
        wall = (time.perf_counter() - t0) * 1e3
        if p.returncode != 0:
            raise RuntimeError("%s failed: %s" % (" ".join(cmd), (p.stderr or p.stdout)[-500:]))
        m = re.search(r"time median_ms=([\d.]+)", p.stdout)
        stats = dict(kv.split("=", 1) for s in re.findall(r"xlac: (?:stats|timing) (.*)", p.stderr)
                     for kv in s.split() if "=" in kv)
        return wall, float(m.group(1)), stats


def first_runs(runner, name, path, tmp, rounds, iterations, warmup):
    """Medians over rounds of cold, warm, steady and load (ms), and the warm run's compiles."""
    folder = os.path.join(tmp, "first", name)
    os.makedirs(folder, exist_ok=True)
    feed = graph_inputs(os.path.dirname(os.path.dirname(runner.bin)), path, folder, 5)
    cold, warm, load, steady, op_first, compiles = [], [], [], [], [], 0
    for r in range(rounds):
        cache = os.path.join(folder, "cache%d" % r)
        shutil.rmtree(cache, ignore_errors=True)
        cold.append(runner.run(path, feed, cache)[0])
        w, _, st = runner.run(path, feed, cache)
        warm.append(w)
        compiles = max(compiles, int(float(st.get("compiles", 0))))
        ow, oms, _ = runner.run(path, feed, cache, clustered=False)
        load.append(ow - oms)
        steady.append(runner.run(path, feed, cache, iterations, warmup)[1])
        op_first.append(oms - runner.run(path, feed, cache, iterations, warmup, clustered=False)[1])
        shutil.rmtree(cache, ignore_errors=True)
    row = {"name": name, "cold": statistics.median(cold), "warm": statistics.median(warm),
           "load": statistics.median(load), "steady": statistics.median(steady), "warm_compiles": compiles,
           "op_first": statistics.median(op_first)}
    row["ratio"] = row["warm"] / (row["steady"] + row["load"])
    log("   %s: cold %.0f ms, warm %.0f ms, steady %.1f + load %.0f ms: %.2fx" %
        (name, row["cold"], row["warm"], row["steady"], row["load"], row["ratio"]))
    return row


def fmt(v, spec="%.1f"):
    return spec % v if isinstance(v, (int, float)) and v == v else "—"


def markdown(res):
    cf = res["compile"]
    is_graph = lambda k: k[0].endswith(".xg")
    is_model = lambda k: k[0].endswith(".onnx")
    md = [HEADING, "",
          "From `bench/latency.py` (%d rounds; per cluster the median over rounds). Compile: "
          "`xlac-compile` over all bench graphs in one process (the first cluster includes the "
          "compiler's start-up), the compiler alone. First run: one `xlac-run` process with the "
          "plugin from start to exit after its outputs; cold: empty xlac disk cache; warm: the "
          "cache the cold run filled; steady: one clustered run in steady state; load: an "
          "op-by-op process's wall clock minus its run (start, parse or import, inputs, exit); the last "
          "column: how much longer an op-by-op first run is than its steady state (fresh buffers, "
          "thread pools), a first-run cost that is not xlac's. "
          "Target: warm ≤ %.1f × (steady + load). Load average of the machine (%d CPUs) at the start "
          "and the end of this part: %.1f and %.1f." % (res["rounds"], WARM_TARGET, os.cpu_count() or 0,
                                                         res["load"][0], res["load"][1]), "",
          "| compile per cluster | clusters | median ms | max ms | target |", "|---|---|---|---|---|"]
    for comp, label, tgt in (("cc", "cc (C, -O3)", "median ≤ 60 ms"),
                             ("nvrtc", "NVRTC to an sm_90 cubin", "median ≤ 60, max ≤ 150 ms")):
        med, mx, n = summary(cf[comp], is_graph)
        md.append("| %s, bench graphs | %d | %s | %s | %s |" % (label, n, fmt(med), fmt(mx), tgt))
        med, mx, n = summary(cf[comp], is_model)
        if n:
            md.append("| %s, ONNX models | %d | %s | %s | |" % (label, n, fmt(med), fmt(mx)))
    md += ["", "| cluster | cc ms | NVRTC ms |", "|---|---|---|"]
    for k in sorted(set(cf["cc"]) | set(cf["nvrtc"]), key=lambda k: (is_model(k), k)):
        md.append("| %s %s | %s | %s |" % (k[0], k[1], fmt(cf["cc"].get(k)), fmt(cf["nvrtc"].get(k))))
    md += ["", "| workload | first run, cold ms | first run, warm ms | steady run ms | load ms | "
           "warm / (steady + load) | compiles in the warm run | op by op: first run - steady run, ms |",
           "|---|---|---|---|---|---|---|---|"]
    for r in res["first"]:
        if "error" in r:
            md.append("| %s | failed: %s | | | | | | |" % (r["name"], r["error"]))
            continue
        ok = "" if r["ratio"] <= WARM_TARGET else " (over %.1f)" % WARM_TARGET
        md.append("| %s | %s | %s | %s | %s | %sx%s | %d | %s |" % (
            r["name"], fmt(r["cold"], "%.0f"), fmt(r["warm"], "%.0f"), fmt(r["steady"], "%.2f"),
            fmt(r["load"], "%.0f"), fmt(r["ratio"], "%.2f"), ok, r["warm_compiles"], fmt(r["op_first"], "%.0f")))
    return "\n".join(md) + "\n"


def run(build, tmp, rounds=3, iterations=10, warmup=2, models=None, model_dir=None):
    """The whole latency section's data: compile figures and first runs."""
    models = MODELS if models is None else models
    graphs = [os.path.join(HERE, "graphs", g + ".xg") for g in GRAPHS]
    model_paths = []
    if models:
        model_dir = model_dir or os.path.join(tmp, "latency-models")
        try:
            subprocess.run([sys.executable, os.path.join(HERE, "models", "make_models.py"), model_dir,
                            "--only"] + models, check=True, stdout=subprocess.DEVNULL)
            model_paths = [os.path.join(model_dir, m + ".onnx") for m in models]
        except (subprocess.CalledProcessError, OSError) as e:
            log("latency: no ONNX models (%s)" % e)
    log("== latency: compile per cluster")
    load0 = os.getloadavg()[0]
    res = {"rounds": rounds, "compile": compile_figures(build, graphs + model_paths, rounds), "first": []}
    runner = Runner(build)
    for path in graphs + model_paths:
        name = os.path.basename(path)
        log("== latency: first run of %s" % name)
        try:
            res["first"].append(first_runs(runner, name, path, tmp, rounds, iterations, warmup))
        except Exception as e:  # reported in the table, never dropped
            res["first"].append({"name": name, "error": str(e).splitlines()[0][:160]})
    res["load"] = (load0, os.getloadavg()[0])
    return res


def replace_section(path, text):
    """Replaces (or appends) the latency section of RESULTS.md."""
    old = open(path).read() if os.path.exists(path) else ""
    start = old.find(HEADING)
    if start < 0:
        new = old.rstrip() + "\n\n" + text
    else:
        end = old.find("\n## ", start + len(HEADING))
        new = old[:start] + text + ("\n" + old[end + 1:] if end >= 0 else "")
    with open(path, "w") as f:
        f.write(new)


def main_in_bench(args):
    """bench.py --latency only: this section alone, replaced in args.results."""
    tmp = tempfile.mkdtemp(prefix="xlac-latency-")
    try:
        text = markdown(run(args.build, tmp, args.rounds, args.iterations, args.warmup, args.models))
        print(text)
        replace_section(args.results, text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build-bench"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--models", nargs="*", default=None, help="default: %s" % " ".join(MODELS))
    ap.add_argument("--results", default=None, help="replace the section in this RESULTS.md")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="xlac-latency-")
    try:
        text = markdown(run(args.build, tmp, args.rounds, args.iterations, args.warmup, args.models))
        print(text)
        if args.results:
            replace_section(args.results, text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
