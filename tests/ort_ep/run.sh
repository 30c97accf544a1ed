#!/usr/bin/env bash
# xlac's onnxruntime execution provider (plugin/ort_ep) against a real onnxruntime from PyPI: the
# oldest release it supports (1.23.2, in tests/ort_ep/.venv, git-ignored, made on first use; the
# Python package's tests run the newest, scripts/test_python.sh):
#   test_abi.py          the table entries the EP reads graphs with, against the onnx package
#   run_models.py        the real exports (tests/models/exports, torch.onnx.export's; --all: also
#                        the TorchScript exporter's .script ones), each checked to run fused nodes
#   run_node_tests.py    a slice of ONNX's node tests against plain onnxruntime
# Each prints its closing line ("ort ep ...: N passed, N failed"). Usage:
#   tests/ort_ep/run.sh [--build DIR] [--all] [--jobs N]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../../build jobs=2 filter='^(?!.*\.script$)'
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build=$2; shift ;;
        --jobs) jobs=$2; shift ;;
        --all) filter='' ;;
    esac
    shift
done
lib=$build/lib/libxlac_ort_ep.so
[ -f "$lib" ] || { echo "ort ep: $lib not built (cmake --build $build --target xlac_ort_ep)"; exit 1; }
venv=$here/.venv ort=${XLAC_TEST_ORT_VERSION:-1.23.2}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import onnx, numpy, onnxruntime" 2>/dev/null; then
    echo "ort ep: creating $venv (pip install onnxruntime==$ort onnx numpy)" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "onnxruntime==$ort" onnx numpy
fi
py="$venv/bin/python -W ignore"
status=0
$py "$here/test_abi.py" --lib "$lib" || status=1
$py "$here/run_models.py" --lib "$lib" --jobs "$jobs" --filter "$filter" || status=1
$py "$here/run_node_tests.py" --lib "$lib" --jobs "$jobs" --slice 24 || status=1
exit $status
