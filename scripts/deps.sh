#!/usr/bin/env bash
# Installs the Debian packages xlac needs, when they are missing.
# As root it runs apt-get; otherwise it prints the exact command to run.
#   scripts/deps.sh --run   what building and running xlac needs (the CLI, the plugin, the Python wheel)
#   scripts/deps.sh         that and what developing it needs: the tests, sanitizers, fuzzers, MPI
set -euo pipefail
# to build and run: a C compiler and CMake; OpenBLAS and oneDNN (libdnnl-dev: convolutions and f32
# products, executor/devices/cpu/dnnl_*.c); xxHash and uthash; protobuf-c (the ONNX importer's parser,
# executor/frontends/onnx/onnx.proto); python3-venv for the Python package
run=(cmake gcc make pkg-config uthash-dev libopenblas-dev libxxhash-dev protobuf-c-compiler libprotobuf-c-dev
     libdnnl-dev python3 python3-venv)
# to develop: Criterion (the tests), g++ (test_cuda_emu), Graphviz (tests of the .dot dumps), clang-format
# (scripts/check_format.sh);
# clang + libclang-rt-14-dev: the libFuzzer targets (scripts/fuzz.sh) and --asan-clang; libomp-14-dev:
# OpenMP for clang; OpenMPI: xlac-run as one rank of an MPI job, and tests/test_distributed
dev=(g++ libcriterion-dev graphviz clang clang-format libclang-rt-14-dev libomp-14-dev libopenmpi-dev openmpi-bin)
case "${1:-}" in
    --run) want=("${run[@]}") ;;
    "") want=("${run[@]}" "${dev[@]}") ;;
    *) echo "usage: scripts/deps.sh [--run]" >&2; exit 2 ;;
esac
need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in "${want[@]}"; do
    have_pkg "$p" || need+=("$p")
done
if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "xlac: installing ${need[*]}" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
else
    echo "xlac: missing packages; run: sudo apt-get install ${need[*]}" >&2
    exit 1
fi
