#!/usr/bin/env bash
# Builds and runs every test: a plain build (with CUDA when the toolkit is
# there), the Python package's pytest suite against its installed wheel (scripts/test_python.sh),
# ONNX's node tests and light models (tests/onnx/run_node_tests.sh, through a
# CPU-only Release build in build-onnx), the real exports (tests/models/run_exports.sh,
# same build) and, unless --quick, CPU-only AddressSanitizer+UBSan
# builds with gcc (build-asan) and with clang (build-asan-clang: adds
# -fsanitize=pointer-overflow, which GCC's UBSan misses, and clang's own OpenMP),
# the threaded scenario (tsan_threads) in a ThreadSanitizer build, and a 30 s
# libFuzzer run per fuzz target (scripts/fuzz.sh --seconds 15).
# --asan-gcc / --asan-clang: only that sanitizer build. --no-fuzz / --no-tsan skip those parts.
# scripts/check_sizes.sh (STYLE.md's size rules), scripts/check_layers.sh (docs/architecture.md's
# layers: no circle, no upward arrow) and scripts/check_format.sh (.clang-format) count as one test each;
# README.md's shell blocks are run on the plain build (scripts/check_readme.py), each one a test.
# Ends with one line "tests: N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh || exit 1
jobs=$(nproc)
quick=0 asan_ccs="gcc clang" fuzz=1 tsan=1
for a in "$@"; do
    case "$a" in
        --quick) quick=1 ;;
        --asan-gcc) asan_ccs=gcc ;;
        --asan-clang) asan_ccs=clang ;;
        --no-fuzz) fuzz=0 ;;
        --no-tsan) tsan=0 ;;
    esac
done
passed=0 failed=0 skipped=0
failed_names=()

# run_suite BUILD_DIR LABEL [cmake args...]
run_suite() {
    local dir=$1 label=$2
    local start_suite=$SECONDS
    shift 2
    echo "== $label: configure and build ($dir)"
    if ! cmake -S . -B "$dir" "$@" >"$dir.configure.log" 2>&1; then
        cat "$dir.configure.log"; failed=$((failed + 1)); failed_names+=("$label:configure"); return
    fi
    if ! cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1; then
        tail -n 60 "$dir.build.log"; failed=$((failed + 1)); failed_names+=("$label:build"); return
    fi
    mkdir -p "$dir/test-logs"
    for t in "$dir"/bin/test_*; do
        [ -x "$t" ] || continue
        local name log
        t=$(realpath "$t")
        name=$(basename "$t")
        log="$dir/test-logs/$name.log"
        local start=$SECONDS
        ( cd "$dir" && timeout 900 "$t" --jobs="$jobs" --verbose --short-filename ) >"$log" 2>&1
        local rc=$?
        # Criterion: "Synthesis: Tested: T | Passing: P | Failing: F | Crashing: C"
        local syn t_ p_ f_ c_ s_
        syn=$(grep -a "Synthesis:" "$log" | tail -n 1)
        t_=$(sed -n 's/.*Tested: \([0-9]*\).*/\1/p' <<<"$syn"); t_=${t_:-0}
        p_=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$syn"); p_=${p_:-0}
        f_=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$syn"); f_=${f_:-0}
        c_=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$syn"); c_=${c_:-0}
        s_=$(grep -ac "^\[SKIP\]" "$log")
        passed=$((passed + p_)); skipped=$((skipped + s_))
        local bad=$((f_ + c_))
        if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
        failed=$((failed + bad))
        printf '%-28s %4d passed %3d failed %3d skipped  (%ds)\n' "$label/$name" "$p_" "$bad" "$s_" $((SECONDS - start))
        grep -a "^\[SKIP\]" "$log" | sed 's/^/    /' | head -n 5
        if [ "$bad" -ne 0 ]; then
            failed_names+=("$label/$name")
            grep -a -E "FAIL|CRASH|error|Assertion|ERROR|runtime error" "$log" | head -n 40 | sed 's/^/    /'
        fi
        : "$t_"
    done
    echo "== $label: $((SECONDS - start_suite)) s"
}

# The Python package (scripts/test_python.sh): its wheel built and installed in a fresh venv;
# pytest's last line ("20 passed, 1 failed, 2 skipped in 3.1s") counts into the totals.
run_python() {
    local log=build/test-logs/python.log start=$SECONDS
    mkdir -p build/test-logs
    echo "== python: venv, package and pytest"
    timeout 900 scripts/test_python.sh >"$log" 2>&1
    local rc=$? line p_ f_ e_ s_
    line=$(tail -n 1 "$log")
    p_=$(grep -o '[0-9]* passed' <<<"$line" | cut -d' ' -f1); p_=${p_:-0}
    f_=$(grep -o '[0-9]* failed' <<<"$line" | cut -d' ' -f1); f_=${f_:-0}
    e_=$(grep -oE '[0-9]+ errors?' <<<"$line" | cut -d' ' -f1); e_=${e_:-0}
    s_=$(grep -o '[0-9]* skipped' <<<"$line" | cut -d' ' -f1); s_=${s_:-0}
    local bad=$((f_ + e_))
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
    passed=$((passed + p_)); failed=$((failed + bad)); skipped=$((skipped + s_))
    printf '%-28s %4d passed %3d failed %3d skipped  (%ds)\n' "python/pytest" "$p_" "$bad" "$s_" $((SECONDS - start))
    if [ "$bad" -ne 0 ]; then
        failed_names+=("python/pytest")
        grep -a -E "FAILED|ERROR|Error" "$log" | head -n 40 | sed 's/^/    /'
    fi
}

# One of the tree's checks as one test: its name, its script, and what of its log to show when it
# fails. A script that exits 77 could not check (a tool missing) and counts as skipped.
run_check() {
    local name=$1 script=$2 filter=$3 log=build/test-logs/$1.log rc
    mkdir -p build/test-logs
    "$script" >"$log" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
        printf '%-28s %4d passed %3d failed %3d skipped\n' "$name" 1 0 0
    elif [ "$rc" -eq 77 ]; then
        skipped=$((skipped + 1))
        printf '%-28s %4d passed %3d failed %3d skipped  (%s)\n' "$name" 0 0 1 "$(tail -n 1 "$log")"
    else
        failed=$((failed + 1)); failed_names+=("$name")
        printf '%-28s %4d passed %3d failed %3d skipped\n' "$name" 0 1 0
        grep -v -E "$filter" "$log" | head -n 40 | sed 's/^/    /'
    fi
}

# README.md's shell blocks (scripts/check_readme.py), on the plain build: a wrong command or path fails;
# its closing line "readme: N passed, N failed, N skipped" counts into the totals. At most 15 minutes.
run_readme() {
    local log=build/test-logs/readme.log start=$SECONDS line p_ f_ s_
    mkdir -p build/test-logs
    timeout 900 scripts/check_readme.py --timeout 300 >"$log" 2>&1
    local rc=$?
    line=$(grep -a "^readme:" "$log" | tail -n 1)
    p_=$(sed -n 's/^readme: \([0-9]*\) passed.*/\1/p' <<<"$line")
    f_=$(sed -n 's/.* \([0-9]*\) failed.*/\1/p' <<<"$line")
    s_=$(sed -n 's/.* \([0-9]*\) skipped.*/\1/p' <<<"$line")
    if [ -z "$line" ] || { [ "$rc" -ne 0 ] && [ "${f_:-0}" -eq 0 ]; }; then f_=1; fi
    passed=$((passed + ${p_:-0})); failed=$((failed + ${f_:-0})); skipped=$((skipped + ${s_:-0}))
    printf '%-28s %4d passed %3d failed %3d skipped  (%ds)\n' "readme" "${p_:-0}" "${f_:-0}" "${s_:-0}" $((SECONDS - start))
    if [ "${f_:-0}" -ne 0 ]; then
        failed_names+=("readme")
        grep -a -A 12 "^FAILED" "$log" | head -n 40 | sed 's/^/    /'
    fi
}

run_check check_sizes scripts/check_sizes.sh '^$'     # STYLE.md's sizes: files <= 800 lines, functions <= 60
run_check check_layers scripts/check_layers.sh '^    ' # docs/architecture.md's layers: no circle, no upward arrow
run_check check_format scripts/check_format.sh '^$'   # the product code as .clang-format writes it
run_suite build "plain" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXLAC_DEVICE_CPU_DEBUG=ON  # + the test device (test_device_debug)
run_readme
run_python
# ONNX's own node tests, op by op and clustered, through a CPU-only Release build of xlac-run and
# the plugin (a CPU-only build, so that no run of the ~3800 processes depends on how a CUDA build
# finds its libraries). Its failures count as failed tests; its own closing line gives passed and
# skipped cases.
run_onnx() {
    local start=$SECONDS log=build/test-logs/onnx_node_tests.log line o_f
    echo "== onnx node tests (tests/onnx/run_node_tests.sh, build-onnx: CPU only)"
    mkdir -p build/test-logs
    if ! { cmake -S . -B build-onnx -DXLAC_CUDA=OFF -DCMAKE_BUILD_TYPE=Release >build-onnx.configure.log 2>&1 &&
        cmake --build build-onnx -j"$jobs" --target xlac-run xlac xlac_ort_ep >build-onnx.build.log 2>&1; }; then
        tail -n 40 build-onnx.configure.log build-onnx.build.log; failed=$((failed + 1)); failed_names+=("onnx:build")
        return
    fi
    tests/onnx/run_node_tests.sh --build build-onnx --jobs "$jobs" --list-failures >"$log" 2>&1
    line=$(grep -a "^onnx node tests:" "$log" | tail -n 1)
    echo "${line:-onnx node tests: did not finish}  ($((SECONDS - start))s)"
    o_f=$(sed -n 's/.* \([0-9]*\) failed.*/\1/p' <<<"$line")
    [ -z "$line" ] && o_f=1
    line=$(grep -a "^onnx light models:" "$log" | tail -n 1)
    echo "${line:-onnx light models: none ran}"
    o_f=$((${o_f:-0} + $(sed -n 's/.* \([0-9]*\) failed.*/\1/p' <<<"$line" | grep . || echo 0)))
    failed=$((failed + ${o_f:-0}))
    if [ "${o_f:-0}" -ne 0 ]; then
        failed_names+=("onnx-node-tests")
        grep -a "^FAILED" "$log" | head -n 40 | sed 's/^/    /'
        tail -n 20 "$log" | sed 's/^/    /'
    fi
}
run_onnx
# Real exports (tests/models/exports: transformers, torchvision and timm architectures from both of
# torch's exporters, fixed and symbolic dims), op by op and clustered at three shapes each, through
# the same CPU-only build; its closing line "real exports: N passed, N failed, N known failures" counts into the totals (the decode loops of the KV-cache exports among them).
run_exports() {
    local start=$SECONDS log=build/test-logs/real_exports.log line p_ f_
    echo "== real exports (tests/models/run_exports.sh, build-onnx: CPU only)"
    [ -x build-onnx/bin/xlac-run ] || { echo "real exports: no build-onnx"; failed=$((failed + 1)); failed_names+=("real-exports"); return; }
    tests/models/run_exports.sh --build build-onnx >"$log" 2>&1
    line=$(grep -a "^real exports:" "$log" | tail -n 1)
    echo "${line:-real exports: did not finish}  ($((SECONDS - start))s)"
    p_=$(sed -n 's/^real exports: \([0-9]*\) passed.*/\1/p' <<<"$line")
    f_=$(sed -n 's/.* \([0-9]*\) failed.*/\1/p' <<<"$line")
    [ -z "$line" ] && f_=1
    passed=$((passed + ${p_:-0})); failed=$((failed + ${f_:-0}))
    if [ "${f_:-0}" -ne 0 ]; then
        failed_names+=("real-exports")
        grep -a "^FAILED" "$log" | head -n 40 | sed 's/^/    /'
    fi
}
run_exports
# xlac inside onnxruntime (tests/ort_ep/run.sh: the EP of build-onnx with onnxruntime 1.23.2 from PyPI): the
# ABI check, the real exports and a slice of ONNX's node tests; each closing line counts into the totals.
run_ort_ep() {
    local start=$SECONDS log=build/test-logs/ort_ep.log line p_ f_
    echo "== onnxruntime EP (tests/ort_ep/run.sh, build-onnx: CPU only)"
    tests/ort_ep/run.sh --build build-onnx --jobs "$jobs" >"$log" 2>&1
    for what in "ort ep abi" "ort ep real exports" "ort ep node tests"; do
        line=$(grep -a "^$what:" "$log" | tail -n 1)
        echo "${line:-$what: did not finish}"
        p_=$(sed -n 's/^[^:]*: \([0-9]*\) \(passed\|checks passed\).*/\1/p' <<<"$line")
        f_=$(sed -n 's/.* \([0-9]*\) failed.*/\1/p' <<<"$line")
        [ -z "$line" ] || grep -q "FAILED" <<<"$line" && f_=$((${f_:-0} + 1))
        [ "$what" = "ort ep abi" ] && [ -n "$p_" ] && p_=1
        passed=$((passed + ${p_:-0})); failed=$((failed + ${f_:-0}))
        [ "${f_:-0}" -ne 0 ] && failed_names+=("$what")
    done
    grep -a "^FAILED" "$log" | head -n 40 | sed 's/^/    /'
    echo "onnxruntime EP: $((SECONDS - start))s"
}
run_ort_ep
if [ "$quick" -eq 0 ]; then
    for asan_cc in $asan_ccs; do
        asan_dir=build-asan
        [ "$asan_cc" = clang ] && asan_dir=build-asan-clang
        CC=$asan_cc ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
            LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp" \
            run_suite "$asan_dir" "asan-$asan_cc" -DXLAC_SANITIZE=ON -DXLAC_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug
    done
    if [ "$tsan" -eq 1 ]; then
        # the threaded scenario of test_threads as a plain program (Criterion's arena cannot be
        # mapped beside TSan's shadow); libgomp is not instrumented: one OpenMP thread
        echo "== tsan: build-tsan, tsan_threads"
        start_tsan=$SECONDS
        if cmake -S . -B build-tsan -DXLAC_TSAN=ON -DXLAC_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
                >build-tsan.configure.log 2>&1 &&
            cmake --build build-tsan -j"$jobs" --target tsan_threads >build-tsan.build.log 2>&1 &&
            OMP_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/bin/tsan_threads \
                >build-tsan.run.log 2>&1; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1)); failed_names+=("tsan")
            tail -n 40 build-tsan.run.log build-tsan.build.log 2>/dev/null | sed 's/^/    /'
        fi
        grep -a "tsan_threads:" build-tsan.run.log 2>/dev/null
        echo "== tsan: $((SECONDS - start_tsan)) s"
    fi
    if [ "$fuzz" -eq 1 ]; then
        echo "== fuzz: 15 s per target"
        start_fuzz=$SECONDS
        if scripts/fuzz.sh --seconds 15; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1)); failed_names+=("fuzz")
        fi
        echo "== fuzz: $((SECONDS - start_fuzz)) s"
    fi
fi
if [ ${#failed_names[@]} -gt 0 ]; then
    echo "failing: ${failed_names[*]}"
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
