#!/usr/bin/env bash
# The benchmark: builds a Release tree (build-bench/), sets up the peers in a
# git-ignored virtual environment (bench/.venv: numpy, numexpr, jax, TensorFlow
# from PyPI; a peer that fails to install is reported missing, not skipped),
# runs bench/bench.py and writes bench/RESULTS.md and bench/results.svg.
# Arguments are passed to bench.py (--rounds, --iterations, --only, ...); `--latency only`
# runs the first-run and compile-latency part alone (bench/latency.py) and replaces its
# section of RESULTS.md.
# `--real` runs the real-models bench instead (bench/real_models.py: torch exports of
# transformers and torchvision models against onnxruntime, onnxruntime with xlac's execution
# provider (build-bench's libxlac_ort_ep.so), OpenVINO and torch.compile); it
# adds onnxscript, openvino, torch, torchvision and transformers to the venv (torch from PyPI
# is a few GB), or uses the interpreter given by `--python PATH` (a venv that has them).
# `--beyond` runs bench/beyond_models.py the same way (int8 and fp16 models, LSTM/GRU, UNet,
# DeBERTa, Wav2Vec2, SegFormer, a KV-cache decode step; the same venv less torchvision; no downloads).
set -euo pipefail
cd "$(dirname "$0")/.."
real=0 beyond=0 python=
args=()
while [ $# -gt 0 ]; do
    case $1 in
        --real) real=1 ;;
        --beyond) beyond=1 ;;
        --python) python=$2; shift ;;
        --python=*) python=${1#--python=} ;;
        *) args+=("$1") ;;
    esac
    shift
done
set -- ${args[@]+"${args[@]}"}
scripts/deps.sh
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j"$(nproc)" --target xlac-run xlac xlac-compile xlac-stream xlac_ort_ep >/dev/null
venv=bench/.venv
if [ "$beyond" = 1 ] && [ -n "$python" ]; then
    exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE HF_HUB_OFFLINE=1 "$python" bench/beyond_models.py \
        --command "bench/run.sh --beyond --python $python $*" "$@"
fi
if [ "$real" = 1 ] && [ -n "$python" ]; then
    exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$python" bench/real_models.py \
        --command "bench/run.sh --real --python $python $*" "$@"
fi
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
fi
if [ "$real" = 1 ]; then
    for pkg in numpy onnx onnxscript onnxruntime openvino torch torchvision transformers; do
        "$venv/bin/python" -c "import $pkg" 2>/dev/null || "$venv/bin/pip" install -q "$pkg"
    done
    exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$venv/bin/python" bench/real_models.py \
        --command "bench/run.sh --real $*" "$@"
fi
if [ "$beyond" = 1 ]; then
    for pkg in numpy onnx onnxscript onnxruntime openvino torch transformers; do
        "$venv/bin/python" -c "import $pkg" 2>/dev/null || "$venv/bin/pip" install -q "$pkg"
    done
    exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE HF_HUB_OFFLINE=1 "$venv/bin/python" bench/beyond_models.py \
        --command "bench/run.sh --beyond $*" "$@"
fi
for pkg in numpy numexpr "jax[cpu]" tensorflow-cpu onnx onnxruntime; do
    mod=${pkg%%[*}; mod=${mod%-cpu}
    "$venv/bin/python" -c "import $mod" 2>/dev/null ||
        "$venv/bin/pip" install -q "$pkg" || echo "bench: could not install $pkg (reported missing)" >&2
done
# OpenBLAS settings of this workplace slow numpy's BLAS; unset them for the peers only.
exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$venv/bin/python" bench/bench.py "$@"
