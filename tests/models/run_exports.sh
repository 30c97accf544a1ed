#!/usr/bin/env bash
# The committed real exports (tests/models/exports, written by export.py)
# through xlac-run, op by op and clustered, at their three input shapes,
# against onnxruntime's committed outputs; closing line
#   real exports: N passed, N failed, N known failures
# Usage: tests/models/run_exports.sh [--build DIR] [--filter REGEX] [--keep]
# Needs numpy only: it uses tests/onnx/.venv (created here when missing, as
# tests/onnx/run_node_tests.sh does); torch is needed only to export again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=$here/../onnx/.venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import numpy" 2>/dev/null; then
    echo "real exports: creating $venv (pip install onnx onnxruntime numpy)" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q onnx onnxruntime numpy
fi
exec "$venv/bin/python" -W ignore "$here/run_exports.py" "$@"
