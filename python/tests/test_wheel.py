"""The wheel runs on a clean machine: it carries every shared library it needs except the
base ones every Linux has (glibc's, libstdc++, libgcc_s), and a run, op by op and clustered,
loads nothing else from the machine. scripts/test_python.sh sets XLAC_TEST_INSTALLED=1 and
XLAC_TEST_WHEEL (the wheel it installed); without them these tests skip.

A machine with the system's copies of oneDNN, OpenBLAS and libgomp would hide a library that
is missing from the wheel, so the run test reads /proc/self/maps: each object the run mapped
must come from the package's folder, not from wherever the machine has it."""
import json
import os
import struct
import subprocess
import sys
import zipfile

import pytest

INSTALLED = pytest.mark.skipif(not os.environ.get("XLAC_TEST_INSTALLED"), reason="run by scripts/test_python.sh")

# the manylinux policy's libraries that stay the machine's (python/bundle_libs.cmake keeps them out)
BASE = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "ld-linux-x86-64.so.2",
        "libstdc++.so.6", "libgcc_s.so.1"}


def elf_names(data):
    """(SONAME or None, [NEEDED...]) of a 64-bit little-endian ELF shared object's bytes."""
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not a 64-bit little-endian ELF"
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads, dynamic = [], None
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1:  # PT_LOAD
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == 2:  # PT_DYNAMIC
            dynamic = (p_offset, p_filesz)
    entries = []
    for k in range(dynamic[0], dynamic[0] + dynamic[1], 16):
        tag, val = struct.unpack_from("<qQ", data, k)
        if tag == 0:  # DT_NULL
            break
        entries.append((tag, val))
    strtab_vaddr = next(v for t, v in entries if t == 5)  # DT_STRTAB, an address: to a file offset
    strtab = next(off + strtab_vaddr - va for va, off, size in loads if va <= strtab_vaddr < va + size)

    def text(o):
        return data[strtab + o:data.index(b"\0", strtab + o)].decode()

    soname = next((text(v) for t, v in entries if t == 14), None)  # DT_SONAME
    return soname, [text(v) for t, v in entries if t == 1]  # DT_NEEDED


@INSTALLED
def test_the_wheel_carries_every_library_it_needs_and_no_base_one():
    """Every NEEDED of every library in the wheel is in the wheel's xlac/lib or a base library; the
    bundled ones are named by their SONAME, and the load order file lists them leaves first."""
    with zipfile.ZipFile(os.environ["XLAC_TEST_WHEEL"]) as whl:
        libs = {os.path.basename(n): whl.read(n) for n in whl.namelist()
                if n.startswith("xlac/lib/") and ".so" in os.path.basename(n)}
        order = whl.read("xlac/lib/bundled.txt").decode().split() if "xlac/lib/bundled.txt" in whl.namelist() else None
    assert {"libxlac_executor.so", "libxlac.so"} <= set(libs)
    # the executor's own (oneDNN, OpenBLAS, protobuf-c, OpenMP) and theirs (gfortran, quadmath), the plugin's xxHash
    for name in ("libdnnl.so.2", "libopenblas.so.0", "libgfortran.so.5", "libquadmath.so.0", "libprotobuf-c.so.1",
                 "libgomp.so.1", "libxxhash.so.0"):
        assert name in libs, "%s is not in the wheel: %s" % (name, sorted(libs))
    assert not BASE & set(libs), "a base library is bundled: %s" % sorted(BASE & set(libs))
    needs = {}
    for name, data in libs.items():
        soname, needed = elf_names(data)
        missing = [n for n in needed if n not in libs and n not in BASE]
        assert not missing, "%s needs %s, neither in the wheel nor a base library" % (name, missing)
        needs[name] = needed
        if not name.startswith("libxlac"):
            assert soname == name, "%s is bundled under another name than its SONAME %s" % (name, soname)
    bundled = sorted(n for n in libs if not n.startswith("libxlac"))
    assert order is not None and sorted(order) == bundled, "xlac/lib/bundled.txt: %s" % order
    for i, name in enumerate(order):  # leaves first: each one's bundled dependencies come before it
        later = [n for n in needs[name] if n in order[i + 1:]]
        assert not later, "bundled.txt lists %s before its dependencies %s" % (name, later)


RUN = r"""
import ctypes, enum, hashlib, json, os, random, re, subprocess, sys, tempfile, threading, time
import numpy as np
np.random.default_rng(0)  # python's and numpy's own modules are mapped before the baseline
try:
    import ml_dtypes  # numpy's bfloat16, which xlac imports where it is installed
except ImportError:
    pass


def mapped():
    with open("/proc/self/maps") as f:
        return {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}


before = mapped()
import xlac
g = sys.argv[1]
rng = np.random.default_rng(0)
f = {k: rng.standard_normal((8, 64)).astype(np.float32) for k in "xyz"}
want = np.exp(f["x"] + f["y"] * f["z"]).sum(1)
plain = xlac.InferenceSession(g, auto_jit=0).run(None, f)[0]
jit = xlac.InferenceSession(g, auto_jit=2).run(None, f)[0]
import _ctypes  # in python's lib-dynload
own = [os.path.dirname(np.__file__) + d for d in ("/", ".libs/")]
own += [os.path.dirname(_ctypes.__file__) + "/"] if getattr(_ctypes, "__file__", None) else []
print(json.dumps({"new": sorted(mapped() - before), "lib": os.path.join(os.path.dirname(xlac.__file__), "lib"), "own": own,
                  "err_plain": float(np.max(np.abs(plain - want) / np.abs(want))),
                  "err_jit": float(np.max(np.abs(jit - want) / np.abs(want))), "stats": xlac.stats()}))
"""

FUSED = """
input x: f32[?,64]
input y: f32[?,64]
input z: f32[?,64]
t0 = mul(y, z)
t1 = add(x, t0)
e  = exp(t1)
s  = reduce_sum(e, axes=[1], keepdims=false)
output s
"""


def is_elf(path):
    """Whether a mapped path is a shared object (not [heap], a memfd, a data file); a deleted one counts."""
    if not path.startswith("/") or path.startswith(("/dev/", "/memfd:")):
        return False
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return True


def run_model(graph, tmp_path, drop=(), **env_over):
    """Runs RUN in a child with TMPDIR and the disk cache in tmp_path; its JSON, TMPDIR, its stderr."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    gone = ("LD_PRELOAD", "LD_LIBRARY_PATH", "XLAC_AUTO_JIT") + tuple(drop)
    env = {k: v for k, v in os.environ.items() if k not in gone}
    env.update(TMPDIR=str(tmp), XLAC_FLAGS="--cache_dir=" + str(tmp_path / "cache"), **env_over)
    r = subprocess.run([sys.executable, "-c", RUN, graph(FUSED)], env=env, capture_output=True, text=True,
                       timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["err_plain"] < 1e-5 and out["err_jit"] < 1e-5, out
    return out, str(tmp), r.stderr


@INSTALLED
def test_a_run_loads_no_library_from_the_machine_but_the_base_ones(graph, tmp_path):
    """Op by op and clustered: every shared object mapped after `import numpy` is the package's
    own (xlac/lib), a base library, a compiled cluster (TMPDIR/xlac-so-*), or a module of
    numpy's or python's that the run imported late."""
    out, tmp, _ = run_model(graph, tmp_path)
    assert out["stats"]["clusters"] >= 1 and out["stats"]["fallbacks"] == 0, out["stats"]
    lib = out["lib"]
    stray, ours, kernels = [], set(), 0
    for path in out["new"]:
        path = path.replace(" (deleted)", "")
        if os.path.dirname(path) == lib:
            ours.add(os.path.basename(path))
        elif os.path.dirname(path) == tmp and os.path.basename(path).startswith("xlac-so-"):
            kernels += 1
        elif is_elf(path) and os.path.basename(path) not in BASE and not path.startswith(tuple(out["own"])):
            stray.append(path)
    assert not stray, "loaded from the machine, not the package: %s" % stray
    assert kernels >= 1, out["new"]  # the clustered run's code, compiled and loaded
    assert {"libxlac_executor.so", "libxlac.so", "libdnnl.so.2", "libopenblas.so.0", "libgomp.so.1"} <= ours, ours


@INSTALLED
def test_without_a_compiler_clusters_fall_back_to_op_by_op_loudly(graph, tmp_path):
    """A machine without cc (none in PATH): the clustered session still runs, its clusters op by
    op with the right results, and says why on stderr."""
    (tmp_path / "bin").mkdir()
    out, _, err = run_model(graph, tmp_path, drop=("CC",), PATH=str(tmp_path / "bin"))
    assert out["stats"]["clusters"] >= 1 and out["stats"]["fallbacks"] >= 1, out["stats"]
    assert "cc failed (could not run: No such file or directory)" in err and "running it op by op" in err, err
