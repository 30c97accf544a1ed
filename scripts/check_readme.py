#!/usr/bin/env python3
"""Runs every ```sh block of README.md, so that a wrong command or path fails CI.

Each block runs in bash (set -eo pipefail) in a scratch folder that holds
the repository's folders as symbolic links (build, examples, tests, ...), so
what the commands write (out/, aot/, dumps/, trace.json) stays out of the
tree, with a private disk cache (XDG_CACHE_HOME). A block that cannot run
here is marked on the line before it with
    <!-- readme-test: skip (why) -->
and counted, never silently left out; a block marked
    <!-- readme-test: in-tree -->
runs in the repository itself (the build: CMake's cache names its source
folder). Blocks of other languages (```python)
are not run. The build (build/) must exist: scripts/test.sh runs this after
its plain build.

Ends with one line: "readme: N passed, N failed, N skipped".
Usage: scripts/check_readme.py [README] [--timeout S]   (S per block, default 300)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = re.compile(r"<!--\s*readme-test:\s*skip\s*\((.+)\)\s*-->")
IN_TREE = re.compile(r"<!--\s*readme-test:\s*in-tree\s*-->")


def blocks(text):
    """(line number, code, skip reason or None, in the tree) of each ```sh block."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            start, body = i + 1, []
            prev = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
            m = SKIP.search(prev)
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            out.append((start, "\n".join(body) + "\n", m.group(1) if m else None, bool(IN_TREE.search(prev))))
        i += 1
    return out


def scratch():
    d = tempfile.mkdtemp(prefix="xlac-readme-")
    for name in os.listdir(ROOT):
        if not name.startswith("."):
            os.symlink(os.path.join(ROOT, name), os.path.join(d, name))
    return d


def main(argv):
    readme = os.path.join(ROOT, "README.md")
    timeout = 300
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--timeout":
            timeout = int(args.pop(0))
        else:
            readme = a
    with open(readme, encoding="utf-8") as f:
        found = blocks(f.read())
    passed = failed = skipped = 0
    work = scratch()
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "XLAC_AUTO_JIT", "XLAC_FLAGS", "XLAC_LOG", "XLAC_DUMP_TO")}
    env["XDG_CACHE_HOME"] = os.path.join(work, ".cache")
    try:
        for line, code, why, in_tree in found:
            if why is not None:
                skipped += 1
                print("SKIPPED README.md:%d: %s" % (line, why))
                continue
            t0 = time.time()
            try:
                r = subprocess.run(["bash", "-eo", "pipefail", "-c", code], cwd=ROOT if in_tree else work, env=env, timeout=timeout,
                                   capture_output=True, text=True, check=False)
                rc, out = r.returncode, r.stdout + r.stderr
            except subprocess.TimeoutExpired as e:
                rc, out = 124, "timed out after %d s\n%s" % (timeout, e.stdout or "")
            if rc == 0:
                passed += 1
                print("ok      README.md:%d (%.1f s)" % (line, time.time() - t0))
            else:
                failed += 1
                print("FAILED  README.md:%d: exit status %d\n%s\n%s" % (
                    line, rc, "".join("    $ " + c + "\n" for c in code.splitlines()),
                    "".join("    " + o + "\n" for o in out.splitlines()[-20:])))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("readme: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
