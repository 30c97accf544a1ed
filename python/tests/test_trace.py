"""The timeline and the summary from a Python session: XLAC_FLAGS="--trace=FILE
--summary=FILE" (the process's flags, not a session's) write Chrome
trace-event JSON and the summary when the process exits (a subprocess).
The trace is checked by scripts/trace_check.py, as the C tests do."""
import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GRAPH = """
input x: f32[8,64]
input y: f32[8,64]
t0 = mul(x, y)
t1 = add(t0, x)
e  = tanh(t1)
output e
"""

SESSION = textwrap.dedent("""
    import sys, numpy as np, xlac
    path, flags = sys.argv[1], sys.argv[2]
    sess = xlac.InferenceSession(path, auto_jit=2, flags=flags)
    x, y = (np.ones((8, 64), np.float32) for _ in range(2))
    for _ in range(3):
        sess.run(None, {"x": x, "y": y})
""")


def test_trace_and_summary_from_python(graph, tmp_path):
    trace, summary = str(tmp_path / "t.json"), str(tmp_path / "s.json")
    flags = "--disk_cache=0 --trace=%s --summary=%s" % (trace, summary)
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "XLAC_AUTO_JIT", "XLAC_FLAGS", "XLAC_DUMP_GRAPH_PREFIX")}
    env["XLAC_FLAGS"] = flags  # the trace, the summary and the cache are the process's
    r = subprocess.run([sys.executable, "-c", SESSION, graph(GRAPH), ""], env=env,
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    check = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "trace_check.py"), trace],
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr
    counts = json.loads(check.stdout)
    assert counts["launches"] == 3 and counts["compiles"] == 1, counts
    s = json.load(open(summary))
    (c,) = s["clusters"]
    assert c["launches"] == 3 and c["cache_hits"] == 2 and c["compiled"] == 1, c
    assert s["stats"]["compiles"] == 1, s
