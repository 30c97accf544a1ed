#!/usr/bin/env python3
"""onnxruntime alone against onnxruntime with xlac's execution provider, on the committed real
exports (tests/models/exports): per model, one feed (--shape, default s0), both sessions in this
process, the EP's outputs checked against plain onnxruntime's first (|got - want| <= 1e-4 +
1e-3 |want|; a model that disagrees is reported and not timed), then rounds in which the two
modes alternate, each timed for at least --min-seconds; the result is the median over rounds of
each round's median ms. The same thread count for both (--threads: onnxruntime's
intra_op_num_threads and OMP_NUM_THREADS, which the EP's fused nodes run with; inter-op 1).
The load average is printed at the start and the end: the numbers are only as quiet as the
machine was.

With --profile, each mode is also run under onnxruntime's profiler (20 runs): the µs a run of each
of the EP's fused nodes, beside the plain session's µs a run of all the nodes the EP took (those
the EP session's profile does not show) and of what it left to onnxruntime.

    python bench/ort_ep_bench.py --lib build-onnx/lib/libxlac_ort_ep.so [--models bert.fixed,gpt2.fixed]
        [--threads 2] [--rounds 5] [--min-seconds 0.5] [--flags "--min_cluster_size=3"] [--json FILE]

It needs onnxruntime (1.23 or newer) and numpy: tests/ort_ep/.venv (made by tests/ort_ep/run.sh)
has them. The EP reads XLAC_AUTO_JIT (2 unless set) and XLAC_FLAGS when the library is
registered, so this script sets them first (its own disk cache under a temporary folder unless
XLAC_FLAGS names one; the first check run fills it, so the timed runs are warm), and, as the
Python package's xlac.ort.get_library_path() does before libgomp loads, GOMP_SPINCOUNT=10000
unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set, and OPENBLAS_NUM_THREADS=1 unless set.
"""
import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXPORTS = os.path.join(ROOT, "tests", "models", "exports")
EP = "XlacExecutionProvider"
DEFAULT_MODELS = "bert.fixed,gpt2.fixed,gpt2.dynamic,vit.fixed,resnet.fixed,mobilenet_v2.fixed"
RTOL, ATOL = 1e-3, 1e-4


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def load_feed(np, model_dir, shape):
    d = os.path.join(model_dir, shape)
    return {f[:-4]: np.load(os.path.join(d, f)) for f in sorted(os.listdir(d)) if f.endswith(".npy")}


def agree(np, want, got):
    """None when every output agrees, else why not."""
    for k, (w, g) in enumerate(zip(want, got)):
        if w.shape != g.shape:
            return "output %d: shape %s, want %s" % (k, g.shape, w.shape)
        if w.dtype.kind in "fc":
            d = np.abs(g.astype(np.float64) - w.astype(np.float64))
            if not np.all(np.isfinite(d) | (np.isnan(g) & np.isnan(w))) or \
                    (np.nan_to_num(d) > ATOL + RTOL * np.abs(np.nan_to_num(w))).any():
                return "output %d: max |diff| %.3g" % (k, np.nanmax(d))
        elif not np.array_equal(w, g):
            return "output %d: values differ" % k
    return None


def session(ort, path, threads, ep, flags, profile=None, spin=None):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    if spin is not None:  # onnxruntime's own pool threads spinning between ops (its default: 1)
        so.add_session_config_entry("session.intra_op.allow_spinning", spin)
    if profile:
        so.enable_profiling = True
        so.profile_file_prefix = profile
    if ep:
        devices = [d for d in ort.get_ep_devices() if d.ep_name == EP]
        so.add_provider_for_devices(devices, {"flags": flags} if flags else {})
        return ort.InferenceSession(path, sess_options=so)
    return ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])


def time_ms(fn, min_seconds):
    """Median ms of fn over at least min_seconds (and at least 3 calls), after 2 warm-ups."""
    fn()
    fn()
    ts, end = [], time.perf_counter() + min_seconds
    while len(ts) < 3 or time.perf_counter() < end:
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def node_times(prof_path, skip):
    """{node name: median µs a run} of one profile's kernel-time events, the first `skip` runs left out."""
    with open(prof_path) as f:
        events = json.load(f)
    durs = {}
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            durs.setdefault(e["name"][:-len("_kernel_time")], []).append(e.get("dur", 0))
    return {n: statistics.median(d[skip:] or d) for n, d in durs.items()}


def captured_stderr(fn):
    """fn()'s result and what was written to file descriptor 2 meanwhile (the EP writes there)."""
    with tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            r = fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return r, tmp.read().decode(errors="replace")


def profile_groups(ort, path, feed, args, runs=30):
    """Per fused node: its nodes (onnxruntime's names and op types, from the EP's --clustering_debug lines),
    its median µs a run, and the plain session's median µs a run of those same nodes."""
    tmp = tempfile.mkdtemp(prefix="xlac-ortep-prof-")
    plain = session(ort, path, args.threads, False, None, os.path.join(tmp, "plain"), args.ort_spin)
    flags = (args.flags + " --clustering_debug").strip()
    ep, text = captured_stderr(lambda: session(ort, path, args.threads, True, flags, os.path.join(tmp, "ep"),
                                               args.ort_spin))
    groups = {}
    for m in re.finditer(r"fused node (\d+) \(group \d+, \d+ nodes\):(.*)", text):
        groups[int(m.group(1))] = re.findall(r" (\S+)\((\w+)\)", m.group(2))
    for s in (plain, ep):
        for _ in range(runs + 2):
            s.run(None, feed)
    plain_us = node_times(plain.end_profiling(), 2)
    ep_us = node_times(ep.end_profiling(), 2)
    out = []
    for name, us in ep_us.items():
        m = re.match(EP + r"_.*_(\d+)$", name)
        if not m or int(m.group(1)) not in groups:
            continue
        nodes = groups[int(m.group(1))]
        ops = {}
        for _, op in nodes:
            ops[op] = ops.get(op, 0) + 1
        out.append({"fused": int(m.group(1)), "nodes": len(nodes), "ops": ops, "ep_us": us,
                    "plain_us": sum(plain_us.get(n, 0) for n, _ in nodes)})
    return sorted(out, key=lambda r: r["fused"])


def encoder_export(np, args):
    """A BERT-shaped f32 encoder at a real size (bench/quantized_probe.py's, built with the onnx helper:
    --encoder layers, hidden 384, 6 heads, 128 tokens, batch 1) as an export folder: model.onnx, s0/x.npy."""
    import onnx
    from quantized_probe import encoder
    d = os.path.join(tempfile.mkdtemp(prefix="xlac-ortep-enc-"), "encoder_%dx384" % args.encoder)
    os.makedirs(os.path.join(d, "s0"))
    rng = np.random.default_rng(0)
    onnx.save(encoder(args.encoder, 384, 6, 128, 1, 4 * 384, rng), os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "s0", "x.npy"), rng.standard_normal((1, 128, 384)).astype(np.float32))
    return d


def bench_model(ort, np, name, d, args):
    path = os.path.join(d, "model.onnx")
    feed = load_feed(np, d, args.shape)
    plain = session(ort, path, args.threads, False, None, spin=args.ort_spin)
    ep = session(ort, path, args.threads, True, args.flags, spin=args.ort_spin)
    want = plain.run(None, feed)
    t0 = time.perf_counter()
    got = ep.run(None, feed)
    first_s = time.perf_counter() - t0
    why = agree(np, want, got)
    row = {"model": name, "shape": args.shape, "first_run_s": first_s,
           "feed": {k: list(v.shape) for k, v in feed.items()}}
    if why:
        log("   !!! %s: the EP disagrees with onnxruntime: %s (not timed)" % (name, why))
        row["error"] = why
        return row
    per = {"ort": [], "ort_ep": []}
    for r in range(args.rounds):
        for key, s in (("ort", plain), ("ort_ep", ep)):
            time.sleep(args.pause)
            per[key].append(time_ms(lambda: s.run(None, feed), args.min_seconds))
        log("   %s round %d: onnxruntime %.3f ms, + xlac EP %.3f ms" % (name, r + 1, per["ort"][-1],
                                                                       per["ort_ep"][-1]))
    row.update({k: statistics.median(v) for k, v in per.items()})
    row["speedup"] = row["ort"] / row["ort_ep"]
    if args.profile:
        row["profile"] = profile_groups(ort, path, feed, args)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(ROOT, "build-onnx", "lib", "libxlac_ort_ep.so"))
    ap.add_argument("--exports", default=EXPORTS)
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--shape", default="s0", help="the feed folder of each export (s0, s1, s2)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-seconds", type=float, default=0.5)
    ap.add_argument("--pause", type=float, default=0.05, help="seconds between modes (threads go idle)")
    ap.add_argument("--flags", default="", help="the EP's provider option flags (XLAC_FLAGS words)")
    ap.add_argument("--ort-spin", choices=["0", "1"], help="session.intra_op.allow_spinning for both sessions")
    ap.add_argument("--profile", action="store_true", help="per fused node against the nodes it replaced")
    ap.add_argument("--encoder", type=int, default=0, metavar="LAYERS",
                    help="also a BERT-shaped f32 encoder of LAYERS layers at hidden 384, 128 tokens, batch 1")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = "10000"  # as xlac.ort.get_library_path() (and xlac-run) set it
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("XLAC_AUTO_JIT", "2")
    if "--cache_dir" not in os.environ.get("XLAC_FLAGS", ""):
        cache = tempfile.mkdtemp(prefix="xlac-ortep-bench-cache-")
        os.environ["XLAC_FLAGS"] = (os.environ.get("XLAC_FLAGS", "") + " --cache_dir=" + cache).strip()
    import numpy as np
    import onnxruntime as ort
    ort.register_execution_provider_library(EP, os.path.abspath(args.lib))
    load0 = os.getloadavg()
    log("ort_ep_bench: onnxruntime %s, %d threads, %d rounds of >= %.2g s, load average %.2f %.2f %.2f" % (
        ort.__version__, args.threads, args.rounds, args.min_seconds, *load0))
    rows = []
    dirs = [(m, os.path.join(args.exports, m)) for m in args.models.split(",") if m]
    if args.encoder:
        sys.path.insert(0, HERE)
        d = encoder_export(np, args)
        dirs.append((os.path.basename(d), d))
    for name, d in dirs:
        if not os.path.exists(os.path.join(d, "model.onnx")):
            log("   %s: no such export, skipped" % name)
            continue
        rows.append(bench_model(ort, np, name, d, args))
    load1 = os.getloadavg()
    print("| model | feed | onnxruntime ms | onnxruntime + xlac EP ms | speedup |")
    print("|---|---|---|---|---|")
    for r in rows:
        feed = ", ".join("%s %s" % (k, "x".join(map(str, v))) for k, v in r["feed"].items())
        if "error" in r:
            print("| %s | %s | WRONG: %s | | |" % (r["model"], feed, r["error"]))
            continue
        print("| %s | %s | %.3f | %.3f | %.2fx |" % (r["model"], feed, r["ort"], r["ort_ep"], r["speedup"]))
        for g in r.get("profile", []):
            ops = ", ".join("%s %d" % kv for kv in sorted(g["ops"].items(), key=lambda kv: -kv[1]))
            print("|   fused node %d: %d nodes (%s) | | plain %.1f µs | EP %.1f µs | %.2fx |" % (
                g["fused"], g["nodes"], ops, g["plain_us"], g["ep_us"], g["plain_us"] / max(g["ep_us"], 1e-9)))
    waits = ", ".join("%s=%s" % (k, os.environ[k]) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT") if k in os.environ)
    print("load average %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end; %d CPUs; %d threads; %s; "
          "XLAC_FLAGS=%s; provider flags %r" % (*load0, *load1, os.cpu_count() or 0, args.threads, waits,
                                                os.environ.get("XLAC_FLAGS", ""), args.flags))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "load": [load0, load1], "threads": args.threads}, f, indent=1)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
