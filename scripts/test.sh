#!/usr/bin/env bash
# Builds and runs every test: a plain build (with CUDA when the toolkit is
# there) and, unless --quick, a CPU-only AddressSanitizer+UBSan build.
# Ends with one line "tests: N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh || exit 1
jobs=$(nproc)
quick=0
[ "${1:-}" = "--quick" ] && quick=1
passed=0 failed=0 skipped=0
failed_names=()

# run_suite BUILD_DIR LABEL [cmake args...]
run_suite() {
    local dir=$1 label=$2
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
}

run_suite build "plain" -DCMAKE_BUILD_TYPE=RelWithDebInfo
# ONNX's own node tests through the plain build, op by op and clustered: its failures
# count as failed tests (its own closing line gives its passed and skipped cases).
if [ -x build/bin/xlac-run ]; then
    echo "== onnx node tests (tests/onnx/run_node_tests.sh)"
    start=$SECONDS
    onnx_log=build/test-logs/onnx_node_tests.log
    tests/onnx/run_node_tests.sh --build build --jobs "$jobs" --list-failures >"$onnx_log" 2>&1
    line=$(grep -a "^onnx node tests:" "$onnx_log" | tail -n 1)
    echo "${line:-onnx node tests: did not finish}  ($((SECONDS - start))s)"
    o_f=$(sed -n 's/.* \([0-9]*\) failed.*/\1/p' <<<"$line")
    [ -z "$line" ] && o_f=1
    failed=$((failed + ${o_f:-0}))
    if [ "${o_f:-0}" -ne 0 ]; then
        failed_names+=("onnx-node-tests")
        grep -a "^FAILED" "$onnx_log" | head -n 40 | sed 's/^/    /'
    fi
fi
if [ "$quick" -eq 0 ]; then
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
        LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp" \
        run_suite build-asan "asan" -DXLAC_SANITIZE=ON -DXLAC_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug
fi
if [ ${#failed_names[@]} -gt 0 ]; then
    echo "failing: ${failed_names[*]}"
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
