#!/bin/sh
# Checks the size rules of STYLE.md over executor/ cluster/ codegen/ plugin/
# (*.c *.h *.cu *.cuh): a file of at most MAX_FILE (800) lines, a function
# of at most MAX_FN (60) lines, signature to closing brace. Prints each
# offender as FILE:LINE NAME LENGTH (NAME "(file)" for a whole file) and
# exits 1 if there is one.
#
# A function is found by a heuristic that fits the clang-format style of
# the repository: its signature starts at column 0 with a name and a '('
# (continuation lines indented), its body opens with '{' at the end of
# the signature or on a line of its own at column 0, and it ends at the
# next '}' at column 0. Initialized tables ("... = {") are not functions.
#
#   scripts/check_sizes.sh [DIR...]     default: executor cluster codegen plugin
set -eu
cd "$(dirname "$0")/.."
MAX_FILE=${MAX_FILE:-800}
MAX_FN=${MAX_FN:-60}
[ $# -gt 0 ] || set -- executor cluster codegen plugin

files=$(find "$@" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
[ -n "$files" ] || exit 0

# shellcheck disable=SC2086
awk -v max_file="$MAX_FILE" -v max_fn="$MAX_FN" '
function name_of(sig,    s) {
    s = sig
    sub(/\(.*/, "", s)
    sub(/.*[^A-Za-z0-9_]/, "", s)
    return s
}
function finish_file() {
    if (file != "" && lines > max_file) {
        printf "%s:1 (file) %d\n", file, lines
        bad = 1
    }
}
FNR == 1 { finish_file(); file = FILENAME; lines = 0; sig = 0; in_fn = 0 }
{ lines++ }
in_fn {
    if ($0 ~ /^}/) {
        len = FNR - start + 1
        if (len > max_fn) {
            printf "%s:%d %s %d\n", file, start, fname, len
            bad = 1
        }
        in_fn = 0
    }
    next
}
/^[A-Za-z_]/ {
    sig = 0
    if ($0 ~ /\(/ && $0 !~ /^[^(]*=/ && $0 !~ /;[ \t]*$/ && $0 !~ /^(typedef|return|else|if|for|while|do)[^A-Za-z0-9_]/) {
        sig = FNR
        sigtext = $0
        if ($0 ~ /\{[ \t]*$/) { in_fn = 1; start = sig; fname = name_of(sigtext); sig = 0 }
    }
    next
}
/^\{/ {
    if (sig) { in_fn = 1; start = sig; fname = name_of(sigtext) }
    sig = 0
    next
}
/;[ \t]*$/ && sig && $0 !~ /^[ \t]/ { sig = 0 }
END { finish_file(); exit bad }
' $files
