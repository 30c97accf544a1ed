#!/usr/bin/env bash
# Weak scaling of data-parallel training under MPI: bench/graphs/dp_train_step.xg
# (1024 rows per rank, 256 -> 512 -> 64 MLP, gradients all_reduce(mean)) on
# 1, 2 and 4 ranks (mpirun --oversubscribe), op by op and clustered
# (libxlac.so, XLAC_AUTO_JIT=2), one OpenMP and BLAS thread per rank.
# Reports the time per step (median over rounds of xlac-run's median of
# --iterations steps) and the share of the step spent in collectives
# (xlac-run's `time collectives_ms=.. share=..` line of rank 0: time inside
# MPI calls, waiting for the slowest rank included). Writes bench/SCALING.md
# and puts it into bench/RESULTS.md (bench.py appends SCALING.md when it
# rewrites RESULTS.md).
#   bench/scaling.sh [--build DIR] [--rounds N] [--iterations N]
# Caveat: with 2 cores, 4 ranks share 2 cores: the 4-rank line measures
# oversubscription as much as scaling.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build rounds=3 iterations=20
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    *) echo "usage: bench/scaling.sh [--build DIR] [--rounds N] [--iterations N]" >&2; exit 2 ;;
    esac
done
command -v mpirun >/dev/null || { echo "bench/scaling.sh: no mpirun (scripts/deps.sh installs openmpi-bin)" >&2; exit 1; }
[ -x "$build/bin/xlac-run" ] && [ -f "$build/lib/libxlac.so" ] ||
    { echo "bench/scaling.sh: build $build first (xlac-run and xlac)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
graph=bench/graphs/dp_train_step.xg
cache=$(mktemp -d /tmp/xlac-scaling-XXXXXX)
trap 'rm -rf "$cache"' EXIT

# One run: prints "STEP_MS COLLECTIVE_MS SHARE".
one() {
    local mode=$1 n=$2 plugin=()
    [ "$mode" = xlac ] && plugin=(-x "LD_PRELOAD=$PWD/$build/lib/libxlac.so" -x XLAC_AUTO_JIT=2
                                  -x "XLAC_FLAGS=--cache_dir=$cache")
    mpirun --oversubscribe -n "$n" -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 "${plugin[@]}" \
        "$build/bin/xlac-run" "$graph" --seed 0 --warmup 3 --iterations "$iterations" 2>/dev/null |
        awk '/^time collectives_ms=/ { split($2, c, "="); split($3, s, "=") }
             /^time median_ms=/ { split($2, m, "=") }
             END { print m[2], c[2], s[2] }'
}

load() { cut -d' ' -f1 /proc/loadavg; }
load0=$(load)
declare -A runs
for ((r = 0; r < rounds; r++)); do
    for n in 1 2 4; do
        for mode in op xlac; do # interleaved: the machine's load moves
            runs[$mode.$n]+="$(one "$mode" "$n");"
        done
    done
done

median() { tr ';' '\n' | awk -v k="$1" 'NF { print $k }' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
{
    echo "## Weak scaling over MPI ranks (CPU, written by bench/scaling.sh)"
    echo
    echo "Written on $(date -u +%Y-%m-%d). \`$graph\`: 1024 rows per rank, so the global batch grows with the"
    echo "ranks; one OpenMP/BLAS thread per rank; medians over $rounds rounds of the median of $iterations steps"
    echo "after 3 warm-up steps. *collectives* is the mean time per step rank 0 spends inside MPI, waiting"
    echo "for the slowest rank included. Load average (1 min) at start and end: $load0 and $(load)."
    echo "**Caveat: this machine has 2 cores**: 4 ranks share them (mpirun"
    echo "--oversubscribe), so the 4-rank line measures oversubscription, not scaling; ideal weak scaling"
    echo "keeps the step time flat."
    echo
    echo "| ranks | op ms/step | op collectives ms (share) | xlac ms/step | xlac collectives ms (share) |"
    echo "|---|---|---|---|---|"
    for n in 1 2 4; do
        printf '| %d | %s | %s (%s) | %s | %s (%s) |\n' "$n" \
            "$(echo "${runs[op.$n]}" | median 1)" "$(echo "${runs[op.$n]}" | median 2)" \
            "$(echo "${runs[op.$n]}" | median 3)" "$(echo "${runs[xlac.$n]}" | median 1)" \
            "$(echo "${runs[xlac.$n]}" | median 2)" "$(echo "${runs[xlac.$n]}" | median 3)"
    done
} > bench/SCALING.md
cat bench/SCALING.md
# The section in RESULTS.md: replaced in place, else put before the list of missing peers.
python3 - <<'PY'
import re
res = open("bench/RESULTS.md").read()
sec = open("bench/SCALING.md").read().rstrip() + "\n"
head = "## Weak scaling over MPI ranks"
if head in res:
    i = res.index(head)
    m = re.search(r"^(## |Missing peers and why:)", res[i + len(head):], re.M)
    j = i + len(head) + m.start() if m else len(res)
    res = res[:i] + sec + ("\n" if m else "") + res[j:]
elif "Missing peers and why:" in res:
    i = res.index("Missing peers and why:")
    res = res[:i] + sec + "\n" + res[i:]
else:
    res = res.rstrip() + "\n\n" + sec
open("bench/RESULTS.md", "w").write(res)
PY
