#!/usr/bin/env bash
# ONNX conformance: runs the onnx package's backend node tests through
# xlac-run, op by op and clustered (LD_PRELOAD=libxlac.so XLAC_AUTO_JIT=2),
# and prints a table per ONNX op and the closing line
#   onnx node tests: N passed, N failed, N skipped
# (skipped: the importer refused the model as unsupported, exit 2).
# Usage: tests/onnx/run_node_tests.sh [--build DIR] [--filter REGEX] [--jobs N] [--list-failures]
# The light CNNs (onnx/backend/test/data/light, tests/onnx/light_models.py) run
# too, as cases test_light_NAME (against onnxruntime), with their own closing line
#   onnx light models: N passed, N failed, N skipped
# The venv (tests/onnx/.venv, git-ignored) is created on first use.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=$here/.venv
# ml_dtypes (onnx's reference computes Cast with it) is held below 0.7: 0.7.0 (December 2026) turned
# an out-of-range float -> int4/uint4/int2/uint2 cast from wrapping into 0, and the node tests' expected
# values with it (24 Cast/CastLike cases); ONNX leaves those values undefined, xlac wraps as before.
if [ ! -x "$venv/bin/python" ] ||
    ! "$venv/bin/python" -c "import onnx, numpy, onnxruntime, ml_dtypes; assert ml_dtypes.__version__ < '0.7'" 2>/dev/null; then
    echo "onnx node tests: creating $venv (pip install onnx onnxruntime numpy 'ml_dtypes<0.7')" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q onnx onnxruntime numpy 'ml_dtypes<0.7'
fi
exec "$venv/bin/python" -W ignore "$here/node_tests.py" --root "$root" "$@"
