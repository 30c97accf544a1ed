#!/usr/bin/env bash
# Installs the Debian packages xlac needs, when they are missing.
# As root it runs apt-get; otherwise it prints the exact command to run.
set -euo pipefail
need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
# clang + libclang-rt-14-dev: the libFuzzer targets (scripts/fuzz.sh) and --asan-clang; libomp-14-dev: OpenMP for clang
# protobuf-c: the ONNX importer's parser (executor/frontends/onnx/onnx.proto)
# libdnnl-dev: oneDNN, the CPU engine of convolutions and f32 products (executor/devices/cpu/dnnl_*.c)
# OpenMPI: xlac-run as one rank of an MPI job, and tests/test_distributed (docs/distributed.md)
for p in cmake gcc g++ make pkg-config libcriterion-dev uthash-dev libopenblas-dev libxxhash-dev graphviz \
    clang libclang-rt-14-dev libomp-14-dev python3 python3-venv protobuf-c-compiler libprotobuf-c-dev \
    libopenmpi-dev openmpi-bin libdnnl-dev; do
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
