#!/usr/bin/env python3
"""xlac benchmark harness (run it through bench/run.sh).

For each workload in bench/graphs/ it times, in one run and on the same
data: xlac-run op by op, xlac-run with the plugin (clustered and fused),
and the peers (numpy, numexpr, jax.jit, TensorFlow auto-clustering). Runs of
op-by-op and clustered alternate; each xlac run reports the median of its
timed iterations (warm-up excluded) and the harness takes the median over
rounds. Input sets are rotated between rounds (two sets, different seeds),
so a small working set cannot stay warm across rounds. The memory roofline
is measured in the same run with xlac-stream (a multithreaded copy, bytes
read plus written), and each workload's minimum bytes over its time is
reported as a fraction of it.

Writes bench/RESULTS.md and bench/results.svg, prints the table last."""

import argparse
import datetime
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import latency
import models
import peers

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

WORKLOADS = ["fused_sum", "gelu", "softmax_rows", "layernorm_rows", "column_sum",
             "mlp_block", "adam_step", "dynamic_batch", "transformer_block",
             "attention_small", "attention_large", "act_chain", "softmax_small", "softmax_16x1024"]
ELEMENTWISE_OR_ROW = {"fused_sum", "gelu", "softmax_rows", "layernorm_rows", "adam_step",
                      "act_chain", "softmax_small", "softmax_16x1024"}
DYNAMIC_BATCHES = [64, 96, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768,
                   896, 1024, 1280, 1536, 1792, 2048, 4096]
STATIC_BATCH = 4096


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def parse_inputs(path):
    """[(name, dtype, dims)] from the graph's input lines."""
    out = []
    for line in open(path):
        m = re.match(r"\s*input\s+(\w+)\s*:\s*(\w+)\[([^\]]*)\]", line)
        if m:
            dims = [d.strip() for d in m.group(3).split(",") if d.strip()]
            out.append((m.group(1), m.group(2), dims))
    return out


def parse_output_count(path):
    return sum(1 for line in open(path) if re.match(r"\s*output\s+\w+", line))


# inputs that must be non-negative (Adam's second moment)
NON_NEGATIVE = {"v"}


def make_inputs(spec, seed, batch=None):
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, dtype, dims in spec:
        shape = [batch if d == "?" else int(d) for d in dims]
        lo = 0.0 if name in NON_NEGATIVE else -1.0
        arrays[name] = rng.uniform(lo, 1.0, size=shape).astype(np.float32)
    return arrays


def save_inputs(arrays, folder):
    os.makedirs(folder, exist_ok=True)
    for k, v in arrays.items():
        np.save(os.path.join(folder, k + ".npy"), v)
    return folder


def output_bytes(name, arrays):
    fn = peers.np_workloads(np)[name]
    out = fn(arrays)
    outs = out if isinstance(out, tuple) else (out,)
    return sum(np.asarray(o).nbytes for o in outs)


class Xlac:
    def __init__(self, build, cache_dir):
        self.run_bin = os.path.join(build, "bin", "xlac-run")
        self.plugin = os.path.join(build, "lib", "libxlac.so")
        self.cache_dir = cache_dir

    def env(self, clustered, extra_flags=""):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        if clustered:
            env["LD_PRELOAD"] = self.plugin
            env["XLAC_AUTO_JIT"] = "2"
            env["XLAC_FLAGS"] = ("--stats --cache_dir=%s %s" % (self.cache_dir, extra_flags)).strip()
        return env

    def run(self, graph, feeds, clustered, iterations, warmup, extra_flags="", extra_args=()):
        """One process: returns (median_ms, stats dict, wall seconds); without iterations,
        a single untimed run (median_ms None)."""
        cmd = [self.run_bin, graph] + list(extra_args)
        if iterations:
            cmd += ["--iterations", str(iterations), "--warmup", str(warmup)]
        for f in feeds:
            cmd += ["--feed", f]
        if not feeds:  # random inputs only when asked for (xlac-run refuses an unfed input)
            cmd += ["--seed", "0"]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, env=self.env(clustered, extra_flags), capture_output=True,
                           text=True, timeout=1800)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), p.returncode,
                                                       (p.stderr or p.stdout)[-2000:]))
        m = re.search(r"time median_ms=([\d.]+) min_ms=([\d.]+)", p.stdout)
        if not m and not iterations:
            m = ["", "nan"]
        elif not m:
            raise RuntimeError("no time line in xlac-run output:\n" + p.stdout[-1000:])
        stats = {}
        for s in re.finditer(r"xlac: (?:stats|timing) (.*)", p.stderr):
            for kv in s.group(1).split():
                k, _, v = kv.partition("=")
                try:
                    stats[k] = float(v)
                except ValueError:
                    stats[k] = v
        self.last_stdout = p.stdout
        return float(m.group(1)), stats, wall


def time_callable(fn, iterations, warmup):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def check_close(name, got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
    if not np.isfinite(err) or err > 1e-3:
        raise RuntimeError("%s disagrees with numpy: relative error %.3g" % (name, err))


def peer_times(name, sets, iterations, warmup, skip):
    results = {}
    want = peers.np_workloads(np)[name](sets[0])
    want = want[0] if isinstance(want, tuple) else want
    for peer, builder in peers.PEERS.items():
        if peer in skip:
            results[peer] = ("missing", "skipped by --skip-peers")
            continue
        try:
            runs = [builder(name, s) for s in sets]
            out = runs[0]()
            out = out[0] if isinstance(out, (tuple, list)) else out
            check_close(peer, out, want)
            ts = [time_callable(r, iterations, warmup) for r in runs]
            results[peer] = ("ok", statistics.median(ts))
        except Exception as e:  # a peer that cannot run is reported, never dropped
            results[peer] = ("missing", "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:120]
                                                    if str(e) else ""))
    return results


def measure_copy(build):
    p = subprocess.run([os.path.join(build, "bin", "xlac-stream"), str(64 << 20), "15"],
                       capture_output=True, text=True, check=True)
    return float(re.search(r"copy_gbs=([\d.]+)", p.stdout).group(1))


def machine_info():
    cpu = platform.processor() or "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cc = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout.splitlines()
    gpu = "none"
    if shutil.which("nvidia-smi"):
        q = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                           capture_output=True, text=True)
        if q.returncode == 0 and q.stdout.strip():
            gpu = q.stdout.strip().splitlines()[0]
    return {"cpu": cpu, "cores": os.cpu_count(), "cc": cc[0] if cc else "?", "gpu": gpu,
            "python": platform.python_version()}


def summarize(row, op, cl, stats, copy_gbs):
    """Medians over rounds, the speed-up and the fraction of the copy roofline, into row."""
    row["op_ms"] = statistics.median(op)
    row["cl_ms"] = statistics.median(cl)
    row["stats"] = stats
    row["speedup"] = row["op_ms"] / row["cl_ms"]
    row["roof"] = row["bytes"] / (row["cl_ms"] * 1e-3) / 1e9 / copy_gbs


def bench_workload(name, args, xlac, copy_gbs, tmp):
    graph = os.path.join(HERE, "graphs", name + ".xg")
    spec = parse_inputs(graph)
    row = {"name": name}
    if name == "dynamic_batch":
        feeds = [save_inputs(make_inputs(spec, 100 + i, b), os.path.join(tmp, name, "b%d" % b))
                 for i, b in enumerate(DYNAMIC_BATCHES)]
        sets = [make_inputs(spec, 1, STATIC_BATCH)]
        static_feed = [save_inputs(sets[0], os.path.join(tmp, name, "static"))]
    else:
        sets = [make_inputs(spec, s) for s in (1, 2)]
        feeds = [save_inputs(s, os.path.join(tmp, name, "set%d" % i)) for i, s in enumerate(sets)]
    in_bytes = sum(a.nbytes for a in sets[0].values())
    row["bytes"] = in_bytes + output_bytes(name, sets[0])

    op, cl, stats = [], [], {}
    if name == "dynamic_batch":
        # one process fed 20 batch sizes: counts compiles; time per run at the static size
        _, stats, _ = xlac.run(graph, feeds, True, 1, 0)
        row["dyn_compiles"] = stats.get("compiles", float("nan"))
        row["dyn_clusters"] = stats.get("clusters", float("nan"))
        for r in range(args.rounds):
            op.append(xlac.run(graph, static_feed, False, args.iterations, args.warmup)[0])
            cl.append(xlac.run(graph, static_feed, True, args.iterations, args.warmup)[0])
        # the static size last, after 19 other sizes in the same process
        xlac.run(graph, feeds, True, args.iterations, args.warmup)
        m = re.search(r"time feed=\S*b%d median_ms=([\d.]+)" % STATIC_BATCH, xlac.last_stdout)
        row["dyn_ms"] = float(m.group(1)) if m else float("nan")
    else:
        for r in range(args.rounds):
            f = [feeds[r % len(feeds)]]
            op.append(xlac.run(graph, f, False, args.iterations, args.warmup)[0])
            ms, stats, _ = xlac.run(graph, f, True, args.iterations, args.warmup)
            cl.append(ms)
    summarize(row, op, cl, stats, copy_gbs)
    row["peers"] = peer_times(name, sets, args.iterations, args.warmup, args.skip_peers)
    return row


def nvrtc_times(args, tmp):
    """NVRTC time to a cubin for sm_90 per cluster (xlac-compile: needs no GPU), every graph in
    one process, as a long-running host would compile them (the first includes NVRTC's start-up)."""
    tool = os.path.join(args.build, "bin", "xlac-compile")
    graphs = [os.path.join(HERE, "graphs", name + ".xg") for name in WORKLOADS
              if name != "dynamic_batch"]  # unknown dims: nothing to compile ahead of time
    p = subprocess.run([tool] + graphs + ["--target", "cuda", "--arch", "sm_90", "--out",
                       os.path.join(tmp, "aot")], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        log("xlac-compile --target cuda failed: %s" % p.stderr.strip())
    return [float(m.group(1)) for m in re.finditer(r"NVRTC to cubin ([0-9.]+) ms", p.stdout)]


def compile_figures(args, xlac, tmp):
    """Compile time per cluster (cold cache), disk-cache load, dispatch overhead."""
    fig = {}
    cold = os.path.join(tmp, "cold-cache")
    times = []
    for name in WORKLOADS:
        graph = os.path.join(HERE, "graphs", name + ".xg")
        spec = parse_inputs(graph)
        batch = STATIC_BATCH if name == "dynamic_batch" else None
        feed = save_inputs(make_inputs(spec, 7, batch), os.path.join(tmp, "cf", name))
        shutil.rmtree(cold, ignore_errors=True)
        x = Xlac(args.build, cold)
        _, st, wall_cold = x.run(graph, [feed], True, 1, 0)
        if st.get("compiles"):
            times.append(st["compile_ms"] / st["compiles"])
        _, st2, _ = x.run(graph, [feed], True, 1, 0)
        if st2.get("disk_hits"):
            fig.setdefault("disk_load_ms", []).append(st2["disk_load_ms"] / st2["disk_hits"])
    fig["compile_ms_median"] = statistics.median(times) if times else float("nan")
    fig["compile_ms_max"] = max(times) if times else float("nan")
    nvrtc = nvrtc_times(args, tmp)
    fig["nvrtc_ms_median"] = statistics.median(nvrtc) if nvrtc else float("nan")
    fig["nvrtc_ms_max"] = max(nvrtc) if nvrtc else float("nan")
    if fig.get("disk_load_ms"):
        fig["disk_load_ms"] = statistics.median(fig["disk_load_ms"])
    # dispatch: a tiny cluster, many iterations; per-launch host time
    tiny = os.path.join(tmp, "tiny.xg")
    with open(tiny, "w") as f:
        f.write("xlac.graph v1\ninput x: f32[4]\ninput y: f32[4]\n"
                "a = mul(x, y)\nb = add(a, x)\nc = exp(b)\noutput c\n")
    cl = xlac.run(tiny, [], True, 2000, 100)[0]
    op = xlac.run(tiny, [], False, 2000, 100)[0]
    fig["dispatch_us"] = cl * 1e3
    fig["opbyop_tiny_us"] = op * 1e3
    return fig


def fmt(v, spec="%.2f"):
    return spec % v if isinstance(v, (int, float)) and v == v else "—"


def table(rows, copy_gbs):
    peer_names = list(peers.PEERS)
    head = ["workload", "op ms", "xlac ms", "speed-up", "% roofline"] + \
           ["%s ms" % p for p in peer_names] + ["xlac vs best peer"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["name"], fmt(r["op_ms"], "%.3f"), fmt(r["cl_ms"], "%.3f"),
                 fmt(r["speedup"]) + "x", fmt(100 * r["roof"], "%.0f") + "%"]
        best = None
        for p in peer_names:
            status, v = r["peers"][p]
            if status == "ok":
                cells.append(fmt(v, "%.3f"))
                best = v if best is None else min(best, v)
            else:
                cells.append("missing")
        cells.append(fmt(best / r["cl_ms"]) + "x" if best else "—")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def svg_plot(rows, path):
    """Two bar groups per workload: speed-up over op by op, fraction of roofline."""
    w, h, left, top, bar = 900, 60 + 34 * len(rows), 170, 40, 12
    maxs = max([r["speedup"] for r in rows] + [1.0])
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (w, h),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="20" font-size="14">xlac: speed-up over op by op (blue, scale '
           'max %.1fx) and fraction of the copy roofline (orange, 0-100%%)</text>' % maxs]
    span = (w - left - 120) / 2
    for i, r in enumerate(rows):
        y = top + i * 34
        out.append('<text x="10" y="%d">%s</text>' % (y + 14, r["name"]))
        sw = span * r["speedup"] / maxs
        out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="#3b6fb6"/>' %
                   (left, y, sw, bar))
        out.append('<text x="%.1f" y="%d">%.2fx</text>' % (left + sw + 4, y + 10, r["speedup"]))
        rw = span * min(r["roof"], 1.2)
        out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="#e8893a"/>' %
                   (left, y + bar + 2, rw, bar))
        out.append('<text x="%.1f" y="%d">%.0f%%</text>' % (left + rw + 4, y + bar + 12,
                                                            100 * r["roof"]))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


REAL_MODELS_HEADING = "## Real models (torch exports)"


def kept_section(path, heading):
    """The section of the old results file that starts at heading, or None."""
    old = open(path).read() if os.path.exists(path) else ""
    start = old.find(heading)
    if start < 0:
        return None
    end = old.find("\n## ", start + len(heading))
    end2 = old.find("\nMissing peers and why:", start)
    ends = [e for e in (end, end2) if e >= 0]
    return old[start:min(ends)] if ends else old[start:]


def write_results(rows, model_rows, fig, info, copy_gbs, args, path, latency_md=None):
    today = datetime.date.today().isoformat()
    md = ["# Benchmark results", "",
          "Written by `bench/run.sh` on %s. Machine: %s, %d cores; compiler: %s; GPU: %s." %
          (today, info["cpu"], info["cores"], info["cc"], info["gpu"]), "",
          "Copy roofline (xlac-stream, 256 MiB read + 256 MiB written, OpenMP): **%.1f GB/s**." %
          copy_gbs, "",
          "Times are medians over %d rounds (op by op and clustered alternating, input sets "
          "rotated), each the median of %d timed iterations after %d warm-up runs. Peers run "
          "in-process on the same data." % (args.rounds, args.iterations, args.warmup), "",
          table(rows, copy_gbs), "",
          "![speed-up and roofline](results.svg)", ""]
    if model_rows:
        md += ["## Models (ONNX)", "",
               "Models from `bench/models/make_models.py` (random weights), run op by op and "
               "clustered by `xlac-run model.onnx`, and in onnxruntime %s (CPU execution provider, "
               "default graph optimizations, %s threads) on the same inputs; same rounds and "
               "iterations as above. Every xlac output is checked against onnxruntime's before "
               "it is timed." % (info.get("ort", "?"), info.get("threads", "?")), "",
               models.models_table(model_rows), ""]
    md += [
          "## Compile side", "",
          "| figure | value | target |", "|---|---|---|",
          "| cc compile per cluster, median (cold cache, whole JIT path) | %s ms | |" %
          fmt(fig.get("compile_ms_median"), "%.1f"),
          "| cc compile per cluster, max | %s ms | |" % fmt(fig.get("compile_ms_max"), "%.1f"),
          "| NVRTC to an sm_90 cubin per cluster, median (xlac-compile, all graphs in one process) | %s ms | ≤ 60 ms |" %
          fmt(fig.get("nvrtc_ms_median"), "%.1f"),
          "| NVRTC per cluster, max | %s ms | |" % fmt(fig.get("nvrtc_ms_max"), "%.1f"),
          "| disk-cache load per module (read, check, dlopen) | %s ms | ≤ 2 ms |" %
          fmt(fig.get("disk_load_ms"), "%.2f"),
          "| cache-hit run of a tiny 3-op cluster, per launch | %s µs | ≤ 5 µs |" %
          fmt(fig.get("dispatch_us"), "%.1f"),
          "| the same graph op by op, per run | %s µs | |" % fmt(fig.get("opbyop_tiny_us"), "%.1f")]
    for r in rows:
        if r["name"] == "dynamic_batch":
            md.append("| dynamic_batch: compiles for %d batch sizes (clusters) | %s (%s) | ≤ 3 per cluster |"
                      % (len(DYNAMIC_BATCHES), fmt(r.get("dyn_compiles"), "%.0f"),
                         fmt(r.get("dyn_clusters"), "%.0f")))
            md.append("| dynamic_batch: time at batch %d after 19 other sizes vs static | %s ms vs %s ms | within 10%% |"
                      % (STATIC_BATCH, fmt(r.get("dyn_ms"), "%.3f"), fmt(r["cl_ms"], "%.3f")))
    if latency_md:
        md += ["", latency_md.rstrip()]
    notes = os.path.join(HERE, "NOTES.md")
    if os.path.exists(notes):  # the hand-written analysis of missed targets
        md += ["", open(notes).read().rstrip()]
    scaling = os.path.join(HERE, "SCALING.md")
    if os.path.exists(scaling):  # bench/scaling.sh's weak-scaling section (MPI ranks)
        md += ["", open(scaling).read().rstrip()]
    real = kept_section(path, REAL_MODELS_HEADING)
    if real:  # bench/real_models.py's section (bench/run.sh --real), kept until that bench runs again
        md += ["", real.rstrip()]
    md += ["", "Missing peers and why:", ""]
    missing = ["- %s / %s: %s" % (r["name"], p, v) for r in rows
               for p, (status, v) in r["peers"].items() if status != "ok"]
    md += missing or ["- none: every peer ran every workload"]
    with open(path, "w") as f:
        f.write("\n".join(md) + "\n")
    return "\n".join(md)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--models", nargs="*", default=None,
                    help="ONNX models to run (default: %s; none with --only unless named)"
                    % " ".join(models.MODELS))
    ap.add_argument("--skip-peers", nargs="*", default=[])
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"))
    ap.add_argument("--latency", choices=["on", "off", "only"], default="on",
                    help="the first-run and compile-latency section (bench/latency.py); only: that "
                    "section alone, replaced in the results file")
    args = ap.parse_args()
    if args.latency == "only":
        return latency.main_in_bench(args)
    info = machine_info()
    tmp = tempfile.mkdtemp(prefix="xlac-bench-")
    try:
        copy_gbs = measure_copy(args.build)
        log("copy roofline: %.1f GB/s" % copy_gbs)
        xlac = Xlac(args.build, os.path.join(tmp, "cache"))
        rows = []
        model_names = args.models if args.models is not None else \
            ([] if args.only else models.MODELS)
        for name in WORKLOADS if args.only is None else args.only:
            log("== %s" % name)
            rows.append(bench_workload(name, args, xlac, copy_gbs, tmp))
            log("   op %.3f ms, xlac %.3f ms, %.2fx" % (rows[-1]["op_ms"], rows[-1]["cl_ms"],
                                                         rows[-1]["speedup"]))
        model_rows = models.bench_models(model_names, args, xlac, tmp, log) if model_names else []
        try:
            import onnxruntime
            info["ort"] = onnxruntime.__version__
        except ImportError:
            info["ort"] = "missing"
        info["threads"] = os.environ.get("OMP_NUM_THREADS", str(os.cpu_count()))
        fig = compile_figures(args, xlac, tmp) if rows else {}
        lat = None
        if args.latency == "on" and rows:
            lat = latency.markdown(latency.run(args.build, tmp, args.rounds, args.iterations, args.warmup,
                                               model_names))
        svg_plot(rows, os.path.join(os.path.dirname(args.results), "results.svg"))
        write_results(rows, model_rows, fig, info, copy_gbs, args, args.results, lat)
        print(table(rows, copy_gbs))
        if model_rows:
            print(models.models_table(model_rows))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
