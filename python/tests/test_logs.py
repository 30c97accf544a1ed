"""xlac's log in Python (xlac/_log.py): the plugin's lines reach the logger 'xlac' (to stderr when
the program configured no logging, into its handlers when it did), at the process's level
(XLAC_LOG, set_default_logger_severity, a session's log_severity_level); XLAC_FLAGS=--help prints
the flags and the program goes on."""
import logging
import os
import subprocess
import sys

import numpy as np

import xlac

CHILD = r"""
import logging, sys
import numpy as np
if sys.argv[2] == "logging":
    logging.basicConfig(format="%(name)s|%(levelname)s|%(message)s", level=logging.DEBUG)
import xlac
sess = xlac.InferenceSession(sys.argv[1])
print("result", float(sess.run(None, {"x": np.ones((4, 8), np.float32)})[0].sum()))
"""

GRAPH = """
input x: f32[?,8]
a = mul(x, x)
b = tanh(a)
s = reduce_sum(b, axes=[1], keepdims=false)
output s
"""


def child(graph, tmp_path, how="", **env):
    e = {k: v for k, v in os.environ.items() if k not in ("XLAC_AUTO_JIT", "XLAC_FLAGS", "LD_PRELOAD", "XLAC_LOG")}
    e.setdefault("XLAC_FLAGS", "--cache_dir=" + str(tmp_path / "cache"))
    e.update(env)
    r = subprocess.run([sys.executable, "-c", CHILD, graph(GRAPH), how], capture_output=True, text=True,
                       timeout=300, env=e, check=False)
    assert r.returncode == 0, r.stderr
    assert "result 4" in r.stdout or "result" in r.stdout, r.stdout
    return r


def test_info_lines_of_a_cold_compile_reach_stderr_through_a_pipe(graph, tmp_path):
    r = child(graph, tmp_path, XLAC_LOG="info")
    assert "xlac: info: compiled cluster_0 (3 ops, c) in " in r.stderr, r.stderr
    assert "\r" not in r.stderr  # no progress line off a terminal
    r = child(graph, tmp_path, XLAC_LOG="info")
    assert "xlac: info: loaded cluster_0 (3 ops) from the disk cache in " in r.stderr, r.stderr
    r = child(graph, tmp_path)
    assert "xlac:" not in r.stderr, r.stderr


def test_a_program_that_configured_logging_gets_the_lines_there(graph, tmp_path):
    r = child(graph, tmp_path, "logging", XLAC_LOG="info")
    assert "xlac|INFO|compiled cluster_0 (3 ops, c) in " in r.stderr, r.stderr
    assert "xlac: info:" not in r.stderr, r.stderr


def test_xlac_flags_help_prints_the_flags_and_the_program_goes_on(graph, tmp_path):
    r = child(graph, tmp_path, XLAC_FLAGS="--help")
    assert "--min_cluster_size" in r.stdout and "XLAC_LOG=LEVEL" in r.stdout, r.stdout
    assert "result" in r.stdout


def test_set_default_logger_severity_brings_the_info_lines(graph, caplog):
    xlac.set_default_logger_severity(1)
    try:
        with caplog.at_level(logging.INFO, logger="xlac"):
            sess = xlac.InferenceSession(graph(GRAPH.replace("tanh", "exp")), auto_jit=1)
            sess.run(None, {"x": np.ones((3, 8), np.float32)})
    finally:
        xlac.set_default_logger_severity(2)
    lines = [r.getMessage() for r in caplog.records if r.name == "xlac"]
    assert any(" cluster_0 (3 ops" in m and (m.startswith("compiled") or m.startswith("loaded"))
               for m in lines), lines
