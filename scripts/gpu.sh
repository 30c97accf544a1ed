#!/usr/bin/env bash
# The GPU run, in one command: on a machine with nvcc and a CUDA GPU but no
# package registry it installs the Debian packages brought along in .gpu-debs/
# (made beforehand by `scripts/gpu.sh --fetch` on a machine with apt), builds a
# Release tree (build-gpu/), runs every GPU test (test_gpu_ops, test_nvrtc's
# GPU tests, the GPU e2e tests of test_plugin_e2e, test_cli's GPU case), a slice of the committed
# real exports on the device (tests/models/run_exports.py --device gpu), then the GPU bench
# (bench/gpu_bench.py: every bench graph op by op and clustered with
# --device gpu, the device copy roofline of bench/gpu_stream.cu, torch.compile
# and jax.jit on the device where installed) and writes bench/RESULTS-gpu.md.
# Every step's log goes to one folder: $OUT if set, else build-gpu/logs.
# Without a CUDA device it stops after the build with `skipped: no CUDA
# device` and exits 0. See docs/gpu.md.
#   scripts/gpu.sh --fetch    download the .deb files into .gpu-debs/ (needs apt)
#   (XLAC_GPU_EXTRACT=1: use the .debs even where the packages are installed, to test them;
#    XLAC_GPU_BUILD_TIMEOUT: seconds for the build, default 300; XLAC_GPU_BENCH=0: no bench)
#   scripts/gpu.sh [--system] build, test, bench (--system: dpkg -i the .debs
#                             as root instead of extracting them into a prefix)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
debs=${XLAC_GPU_DEBS:-$root/.gpu-debs}
build=${XLAC_GPU_BUILD:-$root/build-gpu}
start=$SECONDS
# What the build needs (scripts/deps.sh's list: oneDNN, the CPU engine; protobuf-c for ONNX
# import; pkg-config).
wanted=(libcriterion-dev uthash-dev libdnnl-dev libopenblas-dev libxxhash-dev libprotobuf-c-dev
    protobuf-c-compiler pkgconf)
# A CUDA image has these already; bringing them along could break it.
base=" libc6 libc6-dev libc-dev-bin linux-libc-dev libgcc-s1 libstdc++6 gcc-12-base zlib1g
 zlib1g-dev libssl3 libssl-dev libffi8 libffi-dev libcrypt1 libcrypt-dev libgomp1 libkrb5-3
 libkrb5support0 libk5crypto3 libgssapi-krb5-2 libcom-err2 libkeyutils1 libtirpc3 libtirpc-dev
 libtirpc-common libnsl2 libnsl-dev rpcsvc-proto libpcre2-dev libpcre2-posix3 libpcre2-16-0
 libpcre2-32-0 libquadmath0 libgit2-dev libssh2-1-dev libmbedtls-dev libhttp-parser-dev "

# The first choice of each dependency group of package $1 (virtual: its first provider).
deps_of() {
    apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
        --no-enhances "$1" 2>/dev/null | awk '
        /^ [ |][A-Za-z]+: / { if (!alt) { name = $2; pick = name; want = 1 } else want = 0
                                 alt = ($1 ~ /^\|/); if (want) print name; next }
        /^    / { if (want && pick ~ /^</) { print $1; want = 0 } }' | grep -v '^<'
}

# Top-level packages and the runtime closure of their dependencies (a -dev package's
# -dev dependencies only for the packages asked for), less the base system.
closure() {
    local -A seen=()
    local queue=("${wanted[@]}") top=" ${wanted[*]} " p d
    while [ ${#queue[@]} -gt 0 ]; do
        p=${queue[0]}; queue=("${queue[@]:1}")
        [ -n "${seen[$p]:-}" ] && continue
        seen[$p]=1; echo "$p"
        for d in $(deps_of "$p"); do
            [[ $base == *" $d "* ]] && continue
            [[ $d == *-dev && $top != *" $p "* ]] && continue
            queue+=("$d")
        done
    done
}

fetch() {
    command -v apt-get >/dev/null || { echo "gpu.sh --fetch: needs apt-get" >&2; exit 1; }
    mkdir -p "$debs"
    local list
    list=$(closure | sort -u) || exit 1
    echo "gpu.sh: fetching $(echo $list | wc -w) packages into $debs"
    (cd "$debs" && rm -f ./*.deb && apt-get download $list) || exit 1
    echo "$list" >"$debs/packages.txt"
    slim_debs
    du -sh "$debs"
}

# The device call carries the tree and these files in 64 MiB: repack each .deb without static
# libraries (the build links the shared ones), documentation and manual pages.
slim_debs() {
    local f tmp
    for f in "$debs"/*.deb; do
        tmp=$(mktemp -d) || return 1
        dpkg-deb -R "$f" "$tmp/p" || { rm -rf "$tmp"; return 1; }
        find "$tmp/p" \( -name '*.a' -o -path '*/usr/share/doc/*' -o -path '*/usr/share/man/*' \) \
            -not -type d -delete
        dpkg-deb -Zxz -b "$tmp/p" "$f" >/dev/null || { rm -rf "$tmp"; return 1; }
        rm -rf "$tmp"
    done
}

have_build_deps() {
    command -v pkg-config >/dev/null && pkg-config --exists openblas libxxhash criterion &&
        [ -f /usr/include/uthash.h ] && [ -f /usr/include/dnnl.h ]
}

# Extract every .deb into $debs/root and point the compiler, pkg-config and loader there.
extract_debs() {
    local pre=$debs/root f arch=x86_64-linux-gnu
    mkdir -p "$pre"
    for f in "$debs"/*.deb; do dpkg-deb -x "$f" "$pre" || return 1; done
    # The build links shared libraries: a .pc's Requires.private (criterion's libffi, libgit2, …)
    # names -dev packages not brought along, and pkg-config would refuse the module for them.
    find "$pre" -name '*.pc' -exec sed -i -e "s|=/usr|=$pre/usr|" -e '/^Requires.private:/d' {} +
    for f in "$pre"/usr/lib/$arch/openblas-*/*.so*; do
        [ -e "$pre/usr/lib/$arch/$(basename "$f")" ] || ln -s "$f" "$pre/usr/lib/$arch/"
    done
    ls "$pre"/usr/include/$arch/openblas-*/cblas.h >/dev/null 2>&1 &&
        ln -sf "$pre"/usr/include/$arch/openblas-*/*.h "$pre/usr/include/"
    export PATH=$pre/usr/bin:$PATH
    export PKG_CONFIG_PATH=$pre/usr/lib/$arch/pkgconfig:$(echo "$pre"/usr/lib/$arch/openblas-*/pkgconfig | tr " " :):$pre/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    export CPATH=$pre/usr/include:$pre/usr/include/$arch${CPATH:+:$CPATH}
    export LIBRARY_PATH=$pre/usr/lib/$arch${LIBRARY_PATH:+:$LIBRARY_PATH}
    export LD_LIBRARY_PATH=$pre/usr/lib/$arch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    # CMake's find_path/find_library (dnnl.h, libdnnl.so) search its prefixes, not CPATH.
    export CMAKE_PREFIX_PATH=$pre/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
    export CMAKE_LIBRARY_ARCHITECTURE=$arch
}

install_deps() {
    if [ -z "${XLAC_GPU_EXTRACT:-}" ] && have_build_deps; then echo "installed already"; return 0; fi
    ls "$debs"/*.deb >/dev/null 2>&1 || {
        echo "build packages missing and no .deb files in $debs: run scripts/gpu.sh --fetch first"
        return 1
    }
    if [ "$system" = 1 ] && [ "$(id -u)" -eq 0 ]; then dpkg -i "$debs"/*.deb; else extract_debs; fi
}

failed=()
# step NAME TIMEOUT CMD...: runs CMD with its output in $logs/NAME.log, records a failure.
# A shell function runs in this shell (what it exports stays), its commands bound themselves.
step() {
    local name=$1 limit=$2 rc; shift 2
    echo "== $name ($((SECONDS - start)) s)"
    if [ "$(type -t "$1")" = function ]; then
        "$@" >"$logs/$name.log" 2>&1; rc=$?
    else
        timeout "$limit" "$@" >"$logs/$name.log" 2>&1; rc=$?
    fi
    if [ $rc -ne 0 ]; then
        failed+=("$name (exit $rc)")
        tail -n 15 "$logs/$name.log"
    fi
    return $rc
}

build_tree() {
    local conf
    conf=$(cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DXLAC_CUDA=ON 2>&1)
    local rc=$?
    echo "$conf"
    [ $rc -eq 0 ] || return 1
    grep -q 'GPU kernels and NVRTC enabled' <<<"$conf" || { echo "CUDA toolkit not found by CMake"; return 1; }
    timeout "${XLAC_GPU_BUILD_TIMEOUT:-300}" cmake --build "$build" -j"$(nproc)" --target xlac-run xlac xlac-compile test_gpu_ops \
        test_nvrtc test_plugin_e2e test_cli || return 1
    nvcc -O3 -o "$build/bin/xlac-gpu-stream" "$root/bench/gpu_stream.cu"
}

run_tests() {
    local j=--jobs=$(nproc)
    step test_gpu_ops 150 "$build/bin/test_gpu_ops" $j
    step test_nvrtc_gpu 150 "$build/bin/test_nvrtc" $j --filter 'nvrtc/gpu_*'
    step test_plugin_e2e_gpu 60 "$build/bin/test_plugin_e2e" $j --filter 'e2e/gpu_*'
    step test_cli_gpu 60 "$build/bin/test_cli" --filter 'cli/device_gpu_*'
}

system=0
case "${1:-}" in
--fetch) fetch; exit $? ;;
--system) system=1 ;;
"") ;;
*) sed -n 2,20p "$0"; exit 2 ;;
esac
logs=${OUT:-$build/logs}
mkdir -p "$logs" "$build"
step deps 120 install_deps && step build 300 build_tree || {
    echo "gpu.sh: failed: ${failed[*]} (logs in $logs)"; exit 1; }
if ! "$build/bin/xlac-gpu-stream" --probe >"$logs/probe.log" 2>&1; then
    echo "skipped: $(head -n 1 "$logs/probe.log")"
    exit 0
fi
echo "device: $(cat "$logs/probe.log")"
nvidia-smi >"$logs/nvidia-smi.log" 2>&1
run_tests
# A slice of the committed real exports (tests/models/exports) on the device, op by op and
# clustered for XLA_GPU:0, against onnxruntime's outputs: transformers with symbolic dims, convnets
# fixed. Bounded; a model not reached in time counts as a failed step, its cases unprinted.
step exports_gpu 120 python3 "$root/tests/models/run_exports.py" --build "$build" --device gpu \
    --jobs 8 --filter '^((bert|gpt2|llama|t5|whisper)\.dynamic|(vit|resnet|mobilenet_v2|efficientnet|convnext)\.fixed)$'
grep -a '^real exports:' "$logs/exports_gpu.log"
if [ "${XLAC_GPU_BENCH:-1}" = 0 ]; then
    echo "gpu.sh: done in $((SECONDS - start)) s, bench skipped (XLAC_GPU_BENCH=0); logs in $logs"
    [ ${#failed[@]} -eq 0 ] || { echo "gpu.sh: failed: ${failed[*]}"; exit 1; }
    exit 0
fi
left=$((470 - (SECONDS - start)))
[ $left -gt 30 ] || left=30
step bench $left env PYTHONUNBUFFERED=1 python3 "$root/bench/gpu_bench.py" --build "$build" \
    --budget $((left - 90)) --results "$root/bench/RESULTS-gpu.md"
[ -f "$root/bench/RESULTS-gpu.md" ] && cp "$root/bench/RESULTS-gpu.md" "$logs/"
cat "$logs/bench.log" 2>/dev/null | tail -n 20
echo "gpu.sh: done in $((SECONDS - start)) s; logs in $logs"
[ ${#failed[@]} -eq 0 ] || { echo "gpu.sh: failed: ${failed[*]}"; exit 1; }
