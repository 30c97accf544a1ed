#!/usr/bin/env bash
# The benchmark: builds a Release tree (build-bench/), sets up the peers in a
# git-ignored virtual environment (bench/.venv: numpy, numexpr, jax, TensorFlow
# from PyPI; a peer that fails to install is reported missing, not skipped),
# runs bench/bench.py and writes bench/RESULTS.md and bench/results.svg.
# Arguments are passed to bench.py (--rounds, --iterations, --only, ...); `--latency only`
# runs the first-run and compile-latency part alone (bench/latency.py) and replaces its
# section of RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j"$(nproc)" --target xlac-run xlac xlac-compile xlac-stream >/dev/null
venv=bench/.venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
fi
for pkg in numpy numexpr "jax[cpu]" tensorflow-cpu onnx onnxruntime; do
    mod=${pkg%%[*}; mod=${mod%-cpu}
    "$venv/bin/python" -c "import $mod" 2>/dev/null ||
        "$venv/bin/pip" install -q "$pkg" || echo "bench: could not install $pkg (reported missing)" >&2
done
# OpenBLAS settings of this workplace slow numpy's BLAS; unset them for the peers only.
exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$venv/bin/python" bench/bench.py "$@"
