#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz (built with clang, ASan+UBSan,
# in build-fuzz/), one at a time, each for a fixed time:
#
#   scripts/fuzz.sh --seconds 30            every target 30 s (the CI slice)
#   scripts/fuzz.sh --minutes 60 xg disk    a long campaign of two targets
#
# Targets: xg (.xg parser + shape inference + writer round trip), npy,
# flags (XLAC_AUTO_JIT / XLAC_FLAGS), disk (the disk-cache file parser),
# onnx (the ONNX importer on a model, and the same bytes as a TensorProto),
# onnx_ext (a model and its external data file written into a private
# folder, beside a symbolic link out of it and a FIFO, loaded by path;
# seeds: small real exports, tests/fuzz/make_ext_seeds.py),
# graph (the structure-aware graph fuzzer xlac-graphfuzz: random graphs and
# mutations of them, each run by xlac-run op by op and clustered, outputs
# compared; not libFuzzer, the same ASan+UBSan build; a failing graph is
# kept with its reason in build-fuzz/crashes/graph/: copy the .xg to
# tests/data/fuzz/graph/, which test_graph_fuzz replays).
# Seeds come from the repo (examples, bench graphs, tests/data,
# tests/fuzz/seeds); the growing corpus lives in build-fuzz/corpus/TARGET.
# A crash leaves its input in build-fuzz/crashes/TARGET/: copy it to
# tests/data/fuzz/TARGET/ so that test_fuzz_replay keeps it fixed.
# Prints one line per target: "fuzz TARGET: N executions in S s, K crashes";
# exits 1 if any target crashed.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=30
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds=$2; shift 2 ;;
        --minutes) seconds=$(($2 * 60)); shift 2 ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        *) targets+=("$1"); shift ;;
    esac
done
[ ${#targets[@]} -eq 0 ] && targets=(xg npy flags disk onnx onnx_ext graph)
dir=build-fuzz
if ! CC=clang cmake -S . -B "$dir" -DXLAC_FUZZ=ON -DXLAC_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        >"$dir.configure.log" 2>&1; then
    cat "$dir.configure.log"; exit 1
fi
build_targets=()
for t in "${targets[@]}"; do
    if [ "$t" = graph ]; then build_targets+=(xlac-graphfuzz xlac-run xlac); else build_targets+=("fuzz_$t"); fi
done
if ! nice cmake --build "$dir" -j"$(nproc)" --target "${build_targets[@]}" >"$dir.build.log" 2>&1; then
    tail -n 40 "$dir.build.log"; exit 1
fi

# seeds TARGET: the repo folders and files that seed it
seeds() {
    case "$1" in
        xg) echo examples bench/graphs tests/data/parse tests/data/fuzz/xg ;;
        npy) echo examples/feeds/b8 examples/feeds/b32 tests/data/fuzz/npy ;;
        flags) echo tests/fuzz/seeds/flags tests/data/fuzz/flags ;;
        disk) echo tests/fuzz/seeds/disk tests/data/fuzz/disk ;;
        onnx) echo tests/data/onnx tests/data/fuzz/onnx ;;
        onnx_ext) echo tests/fuzz/seeds/onnx_ext tests/data/fuzz/onnx_ext ;;
    esac
}

crashed=0
for t in "${targets[@]}"; do
    corpus=$dir/corpus/$t crashes=$dir/crashes/$t
    mkdir -p "$corpus" "$crashes"
    for s in $(seeds "$t"); do # libFuzzer reads folders only: copy the seed files in
        find "$s" -maxdepth 1 -type f ! -name '*.md' -exec cp -n {} "$corpus/" \; 2>/dev/null
    done
    dict=()
    [ -f "tests/fuzz/$t.dict" ] && dict=("-dict=tests/fuzz/$t.dict")
    log=$dir/fuzz_$t.log
    start=$SECONDS
    if [ "$t" = graph ]; then # each case runs xlac-run twice; its seeds are the generator's
        from=$(( $(date +%s) % 1000000 * 1000 )) # another stretch of cases each campaign
        ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
            UBSAN_OPTIONS=print_stacktrace=1 nice "$dir/bin/xlac-graphfuzz" --seconds "$seconds" --from "$from" \
            --keep "$crashes" --work "$dir/graph-work" >"$log" 2>&1
        rc=$?
    else
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        nice "$dir/bin/fuzz_$t" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" >"$log" 2>&1
    rc=$?
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    found=$(find "$crashes" -type f ! -name 'slow-unit-*' ! -name '*.why' | wc -l) # a slow unit is reported, not a crash
    printf 'fuzz %-6s %10s executions in %ds, %d crash(es) in %s\n' "$t:" "${execs:-?}" $((SECONDS - start)) \
        "$found" "$crashes"
    if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ]; then
        crashed=1
        grep -a -E "ERROR|SUMMARY|runtime error|failed" "$log" | head -n 10 | sed 's/^/    /'
    fi
done
exit "$crashed"
