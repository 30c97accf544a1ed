"""The package under test is the installed one (scripts/test_python.sh sets XLAC_TEST_INSTALLED=1):
its C libraries are inside it and found with no environment variable."""
import os
import subprocess
import sys

import pytest

import xlac
from xlac import _lib


INSTALLED = pytest.mark.skipif(not os.environ.get("XLAC_TEST_INSTALLED"), reason="run by scripts/test_python.sh")


@INSTALLED
def test_the_installed_package_finds_its_own_libraries():
    here = os.path.dirname(os.path.abspath(xlac.__file__))
    assert "site-packages" in here, here
    assert "XLAC_LIB_DIR" not in os.environ
    assert _lib.lib_dir() == os.path.join(here, "lib")
    for name in ("libxlac_executor.so", "libxlac.so"):
        assert os.path.exists(os.path.join(here, "lib", name)), name
    assert xlac.InferenceSession is not None and _lib.executor() is not None


def tool(name):
    return os.path.join(os.path.dirname(sys.executable), name)


def clean_env(**over):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "LD_LIBRARY_PATH", "XLAC_AUTO_JIT",
                                                            "XLAC_FLAGS", "XLAC_LIB_DIR")}
    env.update(over)
    return env


@INSTALLED
def test_the_wheel_carries_the_command_line_tools():
    """pip install ./python gives xlac-run and xlac-compile (console scripts over xlac/bin) and
    `python -m xlac run|compile`, with no build tree and no environment variable."""
    for argv in ([tool("xlac-run"), "--help"], [tool("xlac-compile"), "--help"],
                 [sys.executable, "-m", "xlac", "run", "--help"]):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=clean_env(), check=False)
        assert r.returncode == 0, (argv, r.stderr)
        assert "usage" in (r.stdout + r.stderr).lower(), (argv, r.stdout, r.stderr)
    here = os.path.dirname(os.path.abspath(xlac.__file__))
    assert os.access(os.path.join(here, "bin", "xlac-run"), os.X_OK)


@INSTALLED
def test_the_plugin_path_with_the_wheels_preload_library(graph, tmp_path):
    """LD_PRELOAD=$(python -c 'import xlac; print(xlac.preload_library())') XLAC_AUTO_JIT=2 xlac-run ...:
    clustered and compiled, the stats line says so."""
    lib = xlac.preload_library()
    assert lib == os.path.join(os.path.dirname(os.path.abspath(xlac.__file__)), "lib", "libxlac.so")
    g = graph("input x: f32[64,64]\ninput y: f32[64,64]\nt = mul(x, y)\nu = add(t, x)\n"
              "s = reduce_sum(u, axes=[0,1], keepdims=false)\noutput s\n")
    env = clean_env(LD_PRELOAD=lib, XLAC_AUTO_JIT="2", XLAC_FLAGS="--stats --cache_dir=" + str(tmp_path / "c"),
                    XLAC_LOG="info")
    r = subprocess.run([tool("xlac-run"), g, "--seed", "0"], capture_output=True, text=True, timeout=300,
                       env=env, check=False)
    assert r.returncode == 0, r.stderr
    assert "xlac: stats clusters=1 " in r.stderr and " compiles=1 " in r.stderr, r.stderr
    assert "xlac: info: compiled cluster_0 (3 ops, c)" in r.stderr, r.stderr
    r = subprocess.run([tool("xlac-compile"), g, "--target", "c", "--out", str(tmp_path / "aot")],
                       capture_output=True, text=True, timeout=300, env=clean_env(), check=False)
    assert r.returncode == 0, r.stderr
