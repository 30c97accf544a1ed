"""Writes docs/onnx.md's node test tables from the output of

    tests/onnx/run_node_tests.sh --list-unsupported --list-failures > node-tests.txt

(the per-op table, the UNSUPPORTED lines and the closing lines it prints):
the closing lines, a table per ONNX op (cases, passed op by op and
clustered, failed, refused), and the refused cases grouped by reason,
each reason with its count, the ops whose cases it refuses and the cases
by name. A reason is the importer's message for the first node it
refused, with the node's op type apart ("LSTM: op is not supported"
groups under "op is not supported"), or its message about a graph input
or the model. The tables go between the two marker lines in docs/onnx.md
(--write), or to stdout. Needs only Python; rerun it whenever the counts
change (new ops, new dtypes):

    python3 tests/onnx/node_table.py node-tests.txt [--write]
"""
import argparse
import collections
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "..", "docs", "onnx.md")
BEGIN = "<!-- node tests: begin (written by tests/onnx/node_table.py; do not edit by hand) -->"
END = "<!-- node tests: end -->"
ROW = re.compile(r"^\| (\S+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$")
REFUSED = re.compile(r"^UNSUPPORTED (\S+) \((\S+)\): (.*)$")
NODE_REASON = re.compile(r"^([A-Za-z][\w.]*): (.*)$")  # "Op: message" (a graph input's has a space)
CLOSING = re.compile(r"^onnx (node tests run|node tests|light models): ")


def parse(lines):
    """(per-op rows {op: [cases, op by op, clustered, failed, refused]}, [(case, op, reason)], closing)."""
    rows, refused, closing = {}, [], []
    in_ops = False
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith("| ONNX op |"):
            in_ops = True
            continue
        m = ROW.match(line)
        if in_ops and m:
            rows[m.group(1)] = [int(x) for x in m.groups()[1:]]
            continue
        if not line.startswith("| ---"):
            in_ops = False
        m = REFUSED.match(line)
        if m:
            refused.append(m.groups())
        elif CLOSING.match(line):
            closing.append(line)
    return rows, refused, closing


def reason_class(reason):
    """The reason without the refused node's op type and without value names ("input 1 (pads,
    'X_pads')" reads "input 1 (pads)"): (class, the node's op or None)."""
    m = NODE_REASON.match(reason)
    cls, op = (m.group(2), m.group(1)) if m else (reason, None)
    return re.sub(r"\((\w+), '[^']*'\)", r"(\1)", cls), op


def op_table(rows):
    out = ["| ONNX op | cases | passed op by op | passed clustered | failed | refused |",
           "| --- | ---: | ---: | ---: | ---: | ---: |"]
    out += ["| %s | %d | %d | %d | %d | %d |" % (op, *r) for op, r in sorted(rows.items())]
    total = [sum(r[k] for r in rows.values()) for k in range(5)]
    out.append("| **all %d ops** | %d | %d | %d | %d | %d |" % (len(rows), *total))
    return out


def reason_tables(refused):
    groups = collections.defaultdict(list)  # class -> [(case, tested op, node op)]
    for case, op, reason in refused:
        cls, node_op = reason_class(reason)
        groups[cls].append((case, op, node_op))
    order = sorted(groups, key=lambda c: (-len(groups[c]), c))
    out = ["| reason | cases | ops whose cases it refuses (the refused node's op, where another) |",
           "| --- | ---: | --- |"]
    for cls in order:
        ops = collections.Counter()
        for _, op, node_op in groups[cls]:
            ops[op if not node_op or node_op == op else "%s (%s)" % (op, node_op)] += 1
        cell = ", ".join("%s%s" % (o, "" if n == 1 else " x%d" % n) for o, n in sorted(ops.items()))
        out.append("| %s | %d | %s |" % (cls.replace("|", "/"), len(groups[cls]), cell))
    out += ["", "The refused cases by name, per reason:", ""]
    for cls in order:
        names = sorted(case for case, _, _ in groups[cls])
        out.append("- *%s* (%d): %s" % (cls.replace("*", "\\*"), len(names), ", ".join(names)))
    return out


def render(rows, refused, closing):
    out = [BEGIN, "", "The closing lines of the run these tables come from:", "", "```"] + closing + ["```", ""]
    out += ["Per ONNX op (the op a case tests is the longest op name its test name starts with;",
            "`_expanded` cases count under their op, though they run its function body; `test_constant_pad*`",
            "count under Constant):", ""]
    out += op_table(rows)
    none = sorted(op for op, r in rows.items() if r[1] == 0 and r[2] == 0 and r[3] == 0)
    out += ["", "No case of these %d ops imports: %s." % (len(none), ", ".join(none)), ""]
    out += ["The %d refused cases, grouped by reason (the importer's message for the first node it refused; a "
            "case is refused by name, never run with a guess):" % len(refused), ""]
    out += reason_tables(refused)
    out += ["", END]
    return "\n".join(out) + "\n"


def write_doc(text):
    with open(DOC) as f:
        doc = f.read()
    a, b = doc.find(BEGIN), doc.find(END)
    if a < 0 or b < a:
        sys.exit("node_table: %s lacks the marker lines %r and %r" % (DOC, BEGIN, END))
    with open(DOC, "w") as f:
        rest = doc[b + len(END):]
        f.write(doc[:a] + text + (rest[1:] if rest.startswith("\n") else rest))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output", nargs="?", help="run_node_tests.sh's output (default: stdin)")
    ap.add_argument("--write", action="store_true", help="replace the tables in docs/onnx.md")
    a = ap.parse_args()
    with (open(a.output) if a.output else sys.stdin) as f:
        rows, refused, closing = parse(f)
    if not rows or not closing:
        sys.exit("node_table: no per-op table or closing line in the output (run with --list-unsupported)")
    refused_count = sum(r[4] for r in rows.values())
    if refused_count and not refused:
        sys.exit("node_table: %d cases refused but no UNSUPPORTED lines: run with --list-unsupported"
                 % refused_count)
    text = render(rows, refused, closing)
    if a.write:
        write_doc(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
