#!/bin/sh
# Checks that the product code is as .clang-format writes it: every *.c and
# *.h under executor/ cluster/ codegen/ plugin/, except the two headers whose
# text is embedded verbatim in every generated program (executor/ir/scalar.h,
# scalar_narrow.h: the golden emit set hashes that text, so a reflow of them
# would change every program). Prints each file that differs with the first
# lines of its diff and exits 1 if there is one.
#
#   scripts/check_format.sh          check (CI, scripts/test.sh); exit 77 when it cannot
#   scripts/check_format.sh --fix    rewrite the files in place
set -eu
cd "$(dirname "$0")/.."
# Another clang-format major version writes other text: that is no finding, so it is a skip (77).
command -v clang-format >/dev/null || { echo "skipped: clang-format not found (scripts/deps.sh)"; exit 77; }
ver=$(clang-format --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
[ "$ver" = 14 ] || { echo "skipped: clang-format $ver, the tree is formatted by 14"; exit 77; }
files=$(find executor cluster codegen plugin -type f \( -name '*.c' -o -name '*.h' \) \
    ! -path executor/ir/scalar.h ! -path executor/ir/scalar_narrow.h | sort)
if [ "${1:-}" = --fix ]; then
    # shellcheck disable=SC2086
    clang-format -i $files
    exit 0
fi
bad=0
for f in $files; do
    if ! clang-format "$f" | cmp -s - "$f"; then
        echo "check_format: $f is not formatted (scripts/check_format.sh --fix):"
        clang-format "$f" | diff -u "$f" - | sed -n '3,12p'
        bad=$((bad + 1))
    fi
done
n=$(echo "$files" | wc -l)
if [ "$bad" -ne 0 ]; then
    echo "check_format: $bad of $n files differ from .clang-format"
    exit 1
fi
echo "check_format: $n files as .clang-format writes them"
