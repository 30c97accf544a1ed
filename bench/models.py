"""The models part of the benchmark: ONNX models a user would run (written
by bench/models/make_models.py from code, random weights), each timed op by
op and clustered through xlac-run, and in onnxruntime (CPU execution
provider, default graph optimizations, the same thread count) in the same
run. Every xlac output is compared with onnxruntime's on the same inputs;
a disagreement beyond the tolerance fails the bench rather than printing a
time for a wrong answer."""

import os
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["mlp", "encoder", "resnet"]
# relative L2 error of each output against onnxruntime's, and the worst element
REL_TOL, ABS_TOL = 1e-4, 1e-3


def make_models(folder, names):
    subprocess.run([sys.executable, os.path.join(HERE, "models", "make_models.py"), folder,
                    "--only"] + names, check=True, stdout=subprocess.DEVNULL)


def ort_session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def model_inputs(sess, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in sess.get_inputs():
        if "mask" in i.name:  # an additive attention mask: 0 to attend, -10000 for the last 8 keys
            m = np.zeros(i.shape, np.float32)
            m[..., -8:] = -10000.0
            feeds[i.name] = m
        else:
            feeds[i.name] = rng.uniform(-1.0, 1.0, size=i.shape).astype(np.float32)
    return feeds


def agree(name, got, want):
    got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got64.shape != want64.shape:
        raise RuntimeError("%s: shape %s, onnxruntime %s" % (name, got64.shape, want64.shape))
    if not np.all(np.isfinite(got64)):
        raise RuntimeError("%s: non-finite values" % name)
    rel = np.linalg.norm(got64 - want64) / max(np.linalg.norm(want64), 1e-30)
    worst = float(np.max(np.abs(got64 - want64))) if got64.size else 0.0
    if rel > REL_TOL or worst > ABS_TOL * max(1.0, float(np.max(np.abs(want64)))):
        raise RuntimeError("%s disagrees with onnxruntime: relative error %.3g, max abs %.3g" %
                           (name, rel, worst))
    return rel


def check_outputs(sess, feeds, out_dir, label):
    want = sess.run(None, feeds)
    worst = 0.0
    for info, w in zip(sess.get_outputs(), want):
        got = np.load(os.path.join(out_dir, info.name + ".npy"))
        worst = max(worst, agree("%s output %s" % (label, info.name), got, w))
    return worst


def bench_model(name, args, xlac, tmp, log):
    folder = os.path.join(tmp, "models")
    path = os.path.join(folder, name + ".onnx")
    threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))
    sess = ort_session(path, threads)
    feeds = model_inputs(sess, 11)
    feed_dir = os.path.join(tmp, "model-feeds", name)
    os.makedirs(feed_dir, exist_ok=True)
    for k, v in feeds.items():
        np.save(os.path.join(feed_dir, k + ".npy"), v)
    row = {"name": name}
    errs = []
    for clustered in (False, True):  # correctness first, once each way
        out = os.path.join(tmp, "model-out", name, "cl" if clustered else "op")
        xlac.run(path, [feed_dir], clustered, 1, 0, extra_args=["--save-outputs", out])
        errs.append(check_outputs(sess, feeds, out, "%s (%s)" % (name, "clustered" if clustered
                                                                 else "op by op")))
    row["err"] = max(errs)
    op, cl, ort_ms = [], [], []
    for r in range(args.rounds):
        op.append(xlac.run(path, [feed_dir], False, args.iterations, args.warmup)[0])
        ms, stats, _ = xlac.run(path, [feed_dir], True, args.iterations, args.warmup)
        cl.append(ms)
        row["stats"] = stats
        ort_ms.append(time_ort(sess, feeds, args.iterations, args.warmup))
    row["op_ms"], row["cl_ms"], row["ort_ms"] = (statistics.median(op), statistics.median(cl),
                                                 statistics.median(ort_ms))
    log("   op %.2f ms, xlac %.2f ms, onnxruntime %.2f ms" % (row["op_ms"], row["cl_ms"], row["ort_ms"]))
    return row


def time_ort(sess, feeds, iterations, warmup):
    import time
    for _ in range(warmup):
        sess.run(None, feeds)
    ts = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def bench_models(names, args, xlac, tmp, log):
    make_models(os.path.join(tmp, "models"), names)
    rows = []
    for name in names:
        log("== model %s" % name)
        try:
            rows.append(bench_model(name, args, xlac, tmp, log))
        except Exception as e:  # reported in the table, never dropped
            log("   %s failed: %s" % (name, e))
            rows.append({"name": name, "error": str(e).splitlines()[0][:200]})
    return rows


def models_table(rows):
    def f(v, spec="%.2f"):
        return spec % v if isinstance(v, (int, float)) and v == v else "—"
    lines = ["| model | op ms | xlac ms | speed-up | onnxruntime ms | xlac vs onnxruntime | clusters | "
             "rel. error vs onnxruntime |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append("| %s | failed: %s | | | | | | |" % (r["name"], r["error"].replace("|", "/")))
            continue
        lines.append("| %s | %s | %s | %sx | %s | %sx | %s | %s |" % (
            r["name"], f(r["op_ms"]), f(r["cl_ms"]), f(r["op_ms"] / r["cl_ms"]), f(r["ort_ms"]),
            f(r["ort_ms"] / r["cl_ms"]), f(r["stats"].get("clusters"), "%.0f"), f(r["err"], "%.1e")))
    return "\n".join(lines)
