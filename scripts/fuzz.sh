#!/usr/bin/env bash
# Runs the fuzz targets of tests/fuzz (built with clang, ASan+UBSan, in
# build-fuzz/), one at a time, each for a fixed time, under nice:
#
#   scripts/fuzz.sh --seconds 15            every target 15 s (the CI slice)
#   scripts/fuzz.sh --minutes 20            a campaign: every target 20 min
#   scripts/fuzz.sh --minutes 60 xg disk    a long campaign of two targets
#
# Targets: xg (.xg parser + shape inference + writer round trip), npy,
# flags (XLAC_AUTO_JIT / XLAC_FLAGS), disk (the disk-cache file parser),
# onnx (the ONNX importer on a model, and the same bytes as a TensorProto),
# onnx_ext (a model and its external data file written into a private
# folder, beside a symbolic link out of it and a FIFO, loaded by path),
# graph (the structure-aware graph fuzzer xlac-graphfuzz: random graphs and
# mutations of them, each run by xlac-run op by op and clustered, outputs
# compared; not libFuzzer, the same ASan+UBSan build; a failing graph is
# kept with its reason in build-fuzz/crashes/graph/: copy the .xg to
# tests/data/fuzz/graph/, which test_graph_fuzz replays).
# onnx and onnx_ext mutate models by structure (tests/fuzz/onnx_mutate*.c:
# attribute values and kinds, tensors, declared shapes, names, wiring, op
# types and domains, opsets, If/Loop nesting) three times in four, and by
# bytes otherwise and whenever a model does not unpack.
# Seeds come from the repo (examples, bench graphs, tests/data, tests/fuzz/
# seeds: tests/fuzz/make_onnx_seeds.py writes issue 31's hostile models,
# and a few small real exports of tests/models/exports); the growing corpus
# lives in build-fuzz/corpus/TARGET. A crash leaves its input in
# build-fuzz/crashes/TARGET/: copy it to tests/data/fuzz/TARGET/ so that
# test_fuzz_replay keeps it fixed.
# Prints one line per target: "fuzz TARGET: N executions in S s, K crashes"
# (N as libFuzzer's final stats count them), appends the same with the date
# and commit to build-fuzz/campaigns.log, and exits 1 if any target crashed.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=30
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds=$2; shift 2 ;;
        --minutes) seconds=$(($2 * 60)); shift 2 ;;
        -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
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

# Small real exports (self-contained TorchScript exports of tests/models) that seed onnx.
exports=tests/models/exports
onnx_exports="$exports/upsample.fixed.script/model.onnx $exports/upsample.dynamic.script/model.onnx
    $exports/regnet.fixed.script/model.onnx $exports/squeezenet.dynamic.script/model.onnx
    $exports/densenet.fixed.script/model.onnx $exports/distilbert.fixed.script/model.onnx"

# seeds TARGET: the repo folders and files that seed it
seeds() {
    case "$1" in
        xg) echo examples bench/graphs tests/data/parse tests/data/fuzz/xg ;;
        npy) echo examples/feeds/b8 examples/feeds/b32 tests/data/fuzz/npy ;;
        flags) echo tests/fuzz/seeds/flags tests/data/fuzz/flags ;;
        disk) echo tests/fuzz/seeds/disk tests/data/fuzz/disk ;;
        onnx) echo tests/data/onnx tests/data/fuzz/onnx tests/fuzz/seeds/onnx $onnx_exports ;;
        onnx_ext) echo tests/fuzz/seeds/onnx_ext tests/data/fuzz/onnx_ext ;;
    esac
}

commit=$(git rev-parse --short=10 HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- 2>/dev/null || commit="$commit+changes" # a run on uncommitted code says so
crashed=0
for t in "${targets[@]}"; do
    corpus=$dir/corpus/$t crashes=$dir/crashes/$t
    mkdir -p "$corpus" "$crashes"
    for s in $(seeds "$t"); do # libFuzzer reads folders only: copy the seed files in
        if [ -f "$s" ]; then # a file: named by its path (the exports are all model.onnx)
            cp -n "$s" "$corpus/$(echo "$s" | tr / _)"
        else
            find "$s" -maxdepth 1 -type f ! -name '*.md' -exec cp -n {} "$corpus/" \; 2>/dev/null
        fi
    done
    max_len=65536
    [ "$t" = onnx ] && max_len=262144 # the 20,000-deep seed (234 KB) and the exports, whole
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
        -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" >"$log" 2>&1
    rc=$?
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    found=$(find "$crashes" -type f ! -name 'slow-unit-*' ! -name '*.why' | wc -l) # a slow unit is reported, not a crash
    line=$(printf 'fuzz %-6s %10s executions in %ds, %d crash(es) in %s' "$t:" "${execs:-?}" $((SECONDS - start)) \
        "$found" "$crashes")
    echo "$line"
    echo "$(date -u +%Y-%m-%dT%H:%MZ) $commit $line (asked: ${seconds}s)" >>"$dir/campaigns.log"
    if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ]; then
        crashed=1
        grep -a -E "ERROR|SUMMARY|runtime error|failed" "$log" | head -n 10 | sed 's/^/    /'
    fi
done
exit "$crashed"
