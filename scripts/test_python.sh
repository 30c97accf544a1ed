#!/usr/bin/env bash
# Tests the Python package (python/): makes a git-ignored venv (python/.venv),
# installs numpy, pytest (onnx and onnxruntime when it can) and the package
# into it, runs pytest on python/tests
# and ends with pytest's summary line ("N passed in S s").
# The C libraries come from $XLAC_LIB_DIR, else build/lib, which is built here
# (targets xlac_executor and xlac) when it lacks them.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
venv=python/.venv
lib=${XLAC_LIB_DIR:-$PWD/build/lib}
if [ ! -e "$lib/libxlac_executor.so" ] || [ ! -e "$lib/libxlac.so" ]; then
    [ -z "${XLAC_LIB_DIR:-}" ] || { echo "test_python: no libraries in XLAC_LIB_DIR=$lib" >&2; exit 1; }
    echo "== python: building the C libraries into build/" >&2
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >build.configure.log 2>&1
    cmake --build build -j"$(nproc)" --target xlac_executor xlac >build.python.log 2>&1
fi
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check numpy pytest setuptools wheel
# for the differential test against onnxruntime (python/tests/test_onnx.py); it skips without them
"$venv/bin/python" -m pip install -q --disable-pip-version-check onnx onnxruntime ||
    echo "test_python: onnx/onnxruntime not installed: the ONNX differential test is skipped" >&2
# --no-build-isolation: use the venv's setuptools (no download at build time)
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
    --force-reinstall --no-deps ./python
export XLAC_LIB_DIR=$lib
# from the repo root, so that `import xlac` finds the installed package, not python/xlac
"$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests "$@"
