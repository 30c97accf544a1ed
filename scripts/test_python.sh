#!/usr/bin/env bash
# Tests the Python package as a user gets it: builds the wheel (python -m build, which runs
# CMake on this repository through scikit-build-core and puts libxlac_executor.so and
# libxlac.so inside the package), installs it into a fresh venv (python/.venv-test, made
# anew each time) with numpy, pytest, onnx and onnxruntime, and runs python/tests against
# the installed package (XLAC_TEST_INSTALLED=1: a test checks that `import xlac` is the
# installed one and finds its libraries with no environment variable; XLAC_TEST_WHEEL: the
# wheel, whose bundled libraries test_wheel.py checks). Ends with pytest's summary line
# ("N passed in S s").
# The builder venv (python/.venv-build: build, scikit-build-core) and CMake's build folder
# (python/build/) are kept between runs, so a second run rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
pip_q=(-m pip install -q --disable-pip-version-check)
if [ ! -x python/.venv-build/bin/python ]; then
    "$py" -m venv python/.venv-build
    python/.venv-build/bin/python "${pip_q[@]}" build scikit-build-core
fi
rm -rf python/dist
echo "== python: building the wheel (CMake, see python/build.log)" >&2
python/.venv-build/bin/python -m build --wheel --no-isolation -o python/dist python >python/build.log 2>&1 ||
    { tail -30 python/build.log >&2; exit 1; }
rm -rf python/.venv-test
"$py" -m venv python/.venv-test
python/.venv-test/bin/python "${pip_q[@]}" pytest python/dist/xlac-*.whl
# for the differential tests against onnxruntime and the ModelProto tests; they skip without them
python/.venv-test/bin/python "${pip_q[@]}" onnx onnxruntime ||
    echo "test_python: onnx/onnxruntime not installed: the ONNX tests are skipped" >&2
# from a folder outside the source tree, so that `import xlac` can only be the installed package
cd python/tests
wheel=$(ls "$PWD"/../dist/xlac-*.whl)
env -u XLAC_LIB_DIR -u LD_PRELOAD -u XLAC_AUTO_JIT -u XLAC_FLAGS XLAC_TEST_INSTALLED=1 XLAC_TEST_WHEEL="$wheel" \
    ../.venv-test/bin/python -m pytest -q -p no:cacheprovider . "$@"
