#!/usr/bin/env bash
# Installs what is missing, builds, and runs the bundled example twice:
# op by op, then with the xlac plugin preloaded (clustered and fused).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --run
echo "== configuring (cmake -S . -B build)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
echo "== building (a few minutes the first time)"
cmake --build build -j"$(nproc)"
echo "== op by op: build/bin/xlac-run examples/fused_sum.xg --seed 0"
build/bin/xlac-run examples/fused_sum.xg --seed 0 --print-outputs --iterations 5 --warmup 1
echo "== clustered: LD_PRELOAD=build/lib/libxlac.so XLAC_AUTO_JIT=2"
LD_PRELOAD=build/lib/libxlac.so XLAC_AUTO_JIT=2 XLAC_FLAGS=--stats \
    build/bin/xlac-run examples/fused_sum.xg --seed 0 --print-outputs --iterations 5 --warmup 1 \
    --log-device-placement
