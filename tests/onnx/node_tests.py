"""Runs the onnx package's backend node tests through xlac-run.

Each case (onnx.backend.test.case.node.collect_testcases) is written in ONNX's
test_data_set layout into a temporary folder (model.onnx,
test_data_set_N/input_K.pb and output_K.pb), run with `xlac-run --feed` op by
op and then clustered (LD_PRELOAD=libxlac.so XLAC_AUTO_JIT=2), and its saved
outputs are compared with the expected ones: same dtype, same shape, NaN
exactly where expected, values within a tolerance per dtype (and at least the
case's own rtol/atol). A case the importer refuses as unsupported (exit 2 with
"cannot import the model: N unsupported, 0 invalid") is skipped; any other
failure (wrong values, a crash, any other error) is a failed test.
--list-unsupported prints each skipped case with the op it tests and why it
was refused (`UNSUPPORTED NAME (OP): REASON`), which tests/onnx/node_table.py
turns into docs/onnx.md's tables.
"""
import argparse
import collections
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case.node import collect_testcases

from light_models import RTOL, ATOL, light_models, run_light

TOL = {np.float16: (1e-2, 1e-3), np.float32: (1e-4, 1e-5), np.float64: (1e-7, 1e-12)}
BF16_TOL = (2e-2, 1e-3)  # bfloat16: 8 bits of mantissa (eps 2^-8), a few roundings in a composition
UNSUPPORTED = re.compile(r"cannot import the model: (\d+) unsupported, 0 invalid")


def sanitize(name):
    """The name xlac gives an ONNX value (executor/frontends/onnx/build.c: ox_sanitize)."""
    s = re.sub(r"[^A-Za-z0-9_.]", "_", name)
    return "_" + s if not s or s[0].isdigit() or s[0] == "." else s


def op_of(case, op_types):
    """The ONNX op a case tests: the longest op type its name starts with."""
    key = case.name[len("test_"):].replace("_", "").lower()
    best = ""
    for op in op_types:
        if key.startswith(op.lower()) and len(op) > len(best):
            best = op
    if not best:
        best = case.model.graph.node[0].op_type if case.model.graph.node else "?"
    return best


def write_case(case, folder):
    onnx.save(case.model, os.path.join(folder, "model.onnx"))
    for n, (inputs, outputs) in enumerate(case.data_sets):
        d = os.path.join(folder, "test_data_set_%d" % n)
        os.makedirs(d)
        for k, x in enumerate(inputs):
            name = case.model.graph.input[k].name if k < len(case.model.graph.input) else ""
            if isinstance(x, onnx.TensorProto):
                t = onnx.TensorProto()
                t.CopyFrom(x)
                t.name = name
            elif isinstance(x, (np.ndarray, np.generic)):
                t = numpy_helper.from_array(np.asarray(x), name)
            else:
                return False  # sequences, optionals: not tensors
            with open(os.path.join(d, "input_%d.pb" % k), "wb") as f:
                f.write(t.SerializeToString())
    return True


def as_array(x):
    """An expected output as a numpy array (None when it is not a tensor)."""
    if isinstance(x, onnx.TensorProto):
        try:
            return numpy_helper.to_array(x)
        except Exception:  # dtypes numpy lacks (float8, ...): never imported anyway
            return None
    return np.asarray(x) if isinstance(x, (np.ndarray, np.generic)) else None


# the sub-byte integers (ml_dtypes) and the numpy type xlac writes them as, one value per byte
SUBBYTE = {"int4": np.int8, "uint4": np.uint8, "int2": np.int8, "uint2": np.uint8}


def same_float8(got, want):
    """Why two float8 arrays of one kind differ (None when they do not): bit for bit, a NaN
    matching any NaN."""
    gn, wn = np.isnan(got.astype(np.float32)), np.isnan(want.astype(np.float32))
    ok = (got.view(np.uint8) == want.view(np.uint8)) | (gn & wn)
    if ok.all():
        return None
    i = tuple(np.argwhere(~ok)[0])
    return "at %s got %r (0x%02x), expected %r (0x%02x)" % (
        i, got[i], got.view(np.uint8)[i], want[i], want.view(np.uint8)[i])


def compare(case, got_dir, expected):
    for k, want in enumerate(expected):
        name = sanitize(case.model.graph.output[k].name)
        if case.model.graph.output[k].type.HasField("sequence_type") and isinstance(want, list):
            # a sequence of n tensors is xlac's n outputs NAME.0 .. NAME.n-1 (docs/onnx.md)
            if os.path.exists(os.path.join(got_dir, "%s.%d.npy" % (name, len(want)))):
                return "output %s: more than the %d elements expected" % (name, len(want))
            parts = [("%s.%d" % (name, e), w) for e, w in enumerate(want)]
        else:
            parts = [(name, want)]
        for part, w in parts:
            why = compare_one(case, got_dir, part, w, k)
            if why:
                return why
    return None


def compare_one(case, got_dir, name, want, k):
    """Why graph output `name` (saved as NAME.npy) differs from want (None when it does not)."""
    want = as_array(want)
    path = os.path.join(got_dir, name + ".npy")
    if want is None:
        return "expected output %d is not a tensor" % k
    if not os.path.exists(path):
        return "output %s was not written" % name
    got = np.load(path)
    if want.dtype.name == "bfloat16" and got.dtype.str in ("|V2", "<V2"):
        got = got.view(want.dtype)  # xlac writes bf16 as '<V2' (numpy has no bfloat16)
    if want.dtype.name.startswith(("float8", "float4")) and got.dtype.str in ("|V1", "<V1"):
        got = got.view(want.dtype)  # xlac writes float8 and float4 as '|V1' (the bits)
    if want.dtype.name in SUBBYTE and got.dtype == SUBBYTE[want.dtype.name]:
        want = want.astype(got.dtype)  # xlac writes i4 i2 as '|i1', u4 u2 as '|u1' (a value per byte)
    if got.dtype != want.dtype:
        return "output %s: dtype %s, expected %s" % (name, got.dtype, want.dtype)
    if got.shape != want.shape:
        return "output %s: shape %s, expected %s" % (name, got.shape, want.shape)
    if want.dtype.name.startswith(("float8", "float4")):
        why = same_float8(got, want)
        if why:
            return "output %s: %s" % (name, why)
        return None
    tol = TOL.get(want.dtype.type, (1e-4, 1e-5))
    if want.dtype.name == "bfloat16":
        got, want, tol = got.astype(np.float32), want.astype(np.float32), BF16_TOL
    if want.dtype.kind == "f":
        rtol, atol = tol
        rtol, atol = max(rtol, case.rtol), max(atol, case.atol)
        if not np.array_equal(np.isnan(got), np.isnan(want)):
            return "output %s: NaN where none is expected, or none where one is" % name
        ok = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        if not ok.all():
            i = np.argwhere(~ok)[0]
            return "output %s: at %s got %r, expected %r" % (name, tuple(i), got[tuple(i)], want[tuple(i)])
    elif not np.array_equal(got, want):
        return "output %s: values differ" % name
    return None


NODE_LINE = re.compile(r"^node (?:'.*'|with output '.*') \((\S+), domain ([^,]+), opset \d+\): (.*)$")


def refusal(stderr, model):
    """Why the importer refused a model, from its first error line with the model's path and the
    node's or value's name left out (so that equal reasons read equal): "Op: message" for a node
    ("domain.Op" outside ai.onnx), "graph input: message", "initializer: message"."""
    for line in stderr.splitlines():
        if not line.startswith(model + ": ") or "cannot import the model" in line:
            continue
        line = line[len(model) + 2:]
        m = NODE_LINE.match(line)
        if m:
            op, domain, msg = m.groups()
            msg = re.sub(r"\S*/model\.onnx: ", "", msg)  # a later stage's message names the file
            return "%s%s: %s" % ("" if domain == "ai.onnx" else domain + ".", op, msg)
        return re.sub(r"^(graph input|graph output|initializer) '[^']*'", r"\1", line)
    lines = stderr.strip().splitlines()
    return lines[-1].replace(model, "model.onnx") if lines else "no message"


def run_one(args, case, clustered, folder, n):
    out = os.path.join(folder, "out_%s_%d" % ("c" if clustered else "o", n))
    cmd = [args.xlac_run, os.path.join(folder, "model.onnx"), "--device", "cpu",
           "--feed", os.path.join(folder, "test_data_set_%d" % n), "--save-outputs", out]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if clustered:
        env.update(LD_PRELOAD=args.libxlac, XLAC_AUTO_JIT="2")
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "timeout", "timed out after 120 s"
    if p.returncode == 2 and UNSUPPORTED.search(p.stderr) and not clustered:
        return "unsupported", refusal(p.stderr, cmd[1])
    if p.returncode != 0:
        return "fail", "exit %d: %s" % (p.returncode, p.stderr.strip()[-600:])
    why = compare(case, out, case.data_sets[n][1])
    return ("fail", why) if why else ("pass", "")


def run_case(args, case):
    """(status, detail, op_by_op_passed, clustered_passed); status: pass, fail, unsupported."""
    folder = tempfile.mkdtemp(prefix="xlac-onnx-", dir=args.tmp)
    try:
        if not write_case(case, folder):
            return "unsupported", "inputs that are not tensors", False, False
        results = {}
        for clustered in (False, True):
            for n in range(len(case.data_sets)):
                st, why = run_one(args, case, clustered, folder, n)
                if st != "pass":
                    if st == "unsupported":
                        return "unsupported", why, False, False
                    return "fail", ("clustered: " if clustered else "op by op: ") + why, \
                        results.get(False, False), False
            results[clustered] = True
        return "pass", "", True, True
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--build", default=None, help="build folder (default ROOT/build)")
    ap.add_argument("--filter", default=None, help="only cases whose name matches REGEX")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--list-failures", action="store_true")
    ap.add_argument("--list-unsupported", action="store_true")
    args = ap.parse_args()
    build = args.build or os.path.join(args.root, "build")
    args.xlac_run = os.path.join(build, "bin", "xlac-run")
    args.libxlac = os.path.join(build, "lib", "libxlac.so")
    for f in (args.xlac_run, args.libxlac):
        if not os.path.exists(f):
            sys.exit("onnx node tests: %s is missing: build first" % f)
    args.tmp = tempfile.mkdtemp(prefix="xlac-onnx-node-")
    cases = [c for c in collect_testcases(None) if c.kind == "node"]
    if args.filter:
        cases = [c for c in cases if re.search(args.filter, c.name)]
    op_types = {s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain in ("", "ai.onnx")}
    rows = collections.defaultdict(lambda: [0, 0, 0, 0, 0])  # cases, op by op, clustered, failed, unsupported
    failures, unsupported = [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futs = {pool.submit(run_case, args, c): c for c in cases}
        for fut in concurrent.futures.as_completed(futs):
            c = futs[fut]
            st, why, op_ok, cl_ok = fut.result()
            row = rows[op_of(c, op_types)]
            row[0] += 1
            row[1] += op_ok
            row[2] += cl_ok
            row[3] += st == "fail"
            row[4] += st == "unsupported"
            if st == "fail":
                failures.append((c.name, why))
            elif st == "unsupported":
                unsupported.append((c.name, op_of(c, op_types), why))
    light = run_all_light(args)
    shutil.rmtree(args.tmp, ignore_errors=True)
    print("| ONNX op | cases | passed op by op | passed clustered | failed | unsupported |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for op in sorted(rows):
        r = rows[op]
        print("| %s | %d | %d | %d | %d | %d |" % (op, *r))
    if args.list_failures:
        for name, why in sorted(failures):
            print("FAILED %s: %s" % (name, why))
    if args.list_unsupported:
        for name, op, why in sorted(unsupported):  # tests/onnx/node_table.py reads these lines
            print("UNSUPPORTED %s (%s): %s" % (name, op, why))
    passed = sum(r[2] for r in rows.values())
    print("onnx node tests run: %d cases of onnx %s" % (len(cases), onnx.__version__))
    print("onnx node tests: %d passed, %d failed, %d skipped" % (passed, len(failures), len(unsupported)))
    print_light(light)
    return 1 if failures or any(st == "fail" for _, st, _ in light) else 0


def run_all_light(args):
    """[(name, status, detail)] of the light models the filter selects, one at a time (big)."""
    return [(name, *run_light(args, name, path, sanitize)[:2])
            for name, path in light_models(args.filter)]


def print_light(light):
    if not light:
        return
    print("\n| light model (vs onnxruntime, rtol %g atol %g) | result | detail |" % (RTOL, ATOL))
    print("| --- | --- | --- |")
    for name, st, why in light:
        print("| %s | %s | %s |" % (name[len("test_light_"):], st, why.replace("|", "/")[:300]))
    n = {k: sum(st == k for _, st, _ in light) for k in ("pass", "fail", "unsupported")}
    print("onnx light models: %d passed, %d failed, %d skipped" % (n["pass"], n["fail"], n["unsupported"]))


if __name__ == "__main__":
    sys.exit(main())
