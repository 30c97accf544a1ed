#!/bin/sh
# Checks the layering of docs/architecture.md over executor/ cluster/ codegen/
# plugin/ (*.c *.h *.cu *.cuh), from the tree's #includes and calls: which
# file defines each exported function or variable (and each inline function
# of a header), which files name it. It fails, naming the files, on
#   - a circle: files that reach each other through calls or includes;
#   - an upward arrow: a file that calls into or includes a file of a higher
#     layer than its own.
# The layers, bottom up (a file may use its own layer and the ones below):
#   ir < devices < runtime < frontends < cluster < codegen < plugin < tools
# executor/include/ (the public headers) belongs to no layer: it declares what
# every layer offers. Files generated at build time (the device registry,
# gen/xe_devices.c; the code generator's target table, gen/xg_targets.c) are
# not read: they are where the build names the devices and targets it has.
#
# It also lists, without failing, the files outside a backend's folders
# (executor/devices/NAME/, codegen/targets/NAME/) that test which device or
# target they run on (XE_DEV_* or XG_TARGET_* compared, switched on or used
# as an array size).
#
# The reading is a heuristic fitted to the repository's style: comments and
# strings are skipped, a definition is a name followed by '(' ... ')' '{' at
# file level, names after '.' or '->' are members, and function-like macros
# that paste names with ## are expanded where the same file calls them.
#
#   scripts/check_layers.sh [-v]      -v: also print every arrow between files
set -eu
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PYTHON'
import os
import re
import sys
from collections import defaultdict

ROOTS = ["executor", "cluster", "codegen", "plugin"]
LAYERS = [  # bottom up: (name, path prefix)
    ("ir", "executor/ir/"),
    ("devices", "executor/devices/"),
    ("runtime", "executor/runtime/"),
    ("frontends", "executor/frontends/"),
    ("cluster", "cluster/"),
    ("codegen", "codegen/"),
    ("plugin", "plugin/"),
    ("tools", "executor/tools/"),
]
PUBLIC = "executor/include/"
BACKEND_DIRS = ("executor/devices/", "codegen/targets/")
HEADERS = (".h", ".cuh")
VERBOSE = "-v" in sys.argv[1:]

SKIP = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
DIRECTIVE = re.compile(r'^[ \t]*#(?:[^\n]*\\\n)*[^\n]*', re.M)
IDENT = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
MEMBER = re.compile(r'(?:->|\.)\s*[A-Za-z_][A-Za-z0-9_]*')
PASTE_MACRO = re.compile(r'^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)', re.M)
KEYWORDS = set("if for while switch return sizeof do else case defined".split())
TYPES = set("void char short int long float double signed unsigned bool xe_f16".split())


def blank(m):
    s = m.group(0)
    if s[0] in "\"'":
        return s[0] * 2
    return re.sub(r'[^\n]', ' ', s)


def layer_of(path):
    for k, (name, prefix) in enumerate(LAYERS):
        if path.startswith(prefix):
            return k
    return None


def product_files():
    out = []
    for root in ROOTS:
        for d, dirs, names in os.walk(root):
            dirs.sort()
            out += [os.path.join(d, n) for n in sorted(names) if n.endswith((".c", ".cu") + HEADERS)]
    return out


def top_level_heads(text):
    """(head, body or None) of each file-level declaration; extern "C" { } is no scope."""
    heads, depth, start, open_at = [], 0, 0, 0
    for i, c in enumerate(text):
        if c == '{':
            head = text[start:i]
            if depth == 0 and re.search(r'\bextern\s*""\s*$', head):
                start = i + 1
                continue
            if depth == 0:
                heads.append([head, ""])
                open_at = i
            depth += 1
        elif c == '}':
            if depth == 0:  # the close of an extern "C" block
                start = i + 1
                continue
            depth -= 1
            if depth == 0:
                heads[-1][1] = text[open_at:i + 1]
                start = i + 1
        elif c == ';' and depth == 0:
            heads.append([text[start:i], None])
            start = i + 1
    return heads


def is_function(head):
    h = " ".join(head.split())
    m = re.match(r'^(.*?)\b([A-Za-z_]\w*)\s*\(', h)
    return bool(m) and "=" not in h.split("(")[0] and m.group(2) not in KEYWORDS


def function_bodies(text):
    """The bodies of a header's inline functions (what a header calls)."""
    return "\n".join(b for h, b in top_level_heads(text) if b and is_function(h))


def definitions(text, header):
    """Names this file defines for others: exported functions and variables (a header: inline functions)."""
    names = set()
    for head, body in top_level_heads(DIRECTIVE.sub(blank, text)):
        h = " ".join(head.split())
        if not h or h.startswith(("typedef", "extern")):
            continue
        words = IDENT.findall(h.split("(")[0].split("=")[0])
        static = "static" in words
        m = re.match(r'^(.*?)\b([A-Za-z_]\w*)\s*\(', h)
        if body is not None and m and "=" not in h.split("(")[0]:
            if m.group(2) not in KEYWORDS and (header or not static):
                names.add(m.group(2))
        elif not header and not static and ("=" in h or "(" not in h):
            ws = IDENT.findall(re.sub(r'\[[^\]]*\]', '', h.split("=")[0]))
            if len(ws) >= 2 and ws[0] not in ("struct", "union", "enum") and ws[-1] not in ("struct", "union", "enum"):
                names.add(ws[-1])
    return {n for n in names if n != "main" and n not in TYPES and not n.startswith("__") and not re.match(r'^[A-Z0-9_]+$', n)}


def split_args(s):
    args, depth, cur = [], 0, ""
    for c in s:
        if c == ',' and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        depth += c in "([{"
        depth -= c in ")]}"
        cur += c
    args.append(cur.strip())
    return args


def pasted_names(raw, body_text):
    """Names that function-like macros with ## make where this file calls them."""
    out = set()
    for m in PASTE_MACRO.finditer(raw):
        name, params, body = m.group(1), [p.strip() for p in m.group(2).split(",")], m.group(3)
        if "##" not in body:
            continue
        body = SKIP.sub(blank, body.replace("\\\n", " "))
        for call in re.finditer(r'\b' + name + r'\s*\(([^()]*)\)', body_text):
            args = split_args(call.group(1))
            if len(args) != len(params):
                continue
            text = body
            for p, a in zip(params, args):
                text = re.sub(r'\b' + re.escape(p) + r'\b', a, text)
            out |= set(IDENT.findall(re.sub(r'\s*##\s*', '', text)))
    return out


def read_tree():
    files = product_files()
    raw = {f: open(f, errors="replace").read() for f in files}
    code = {f: SKIP.sub(blank, raw[f]) for f in files}
    definer = defaultdict(set)
    for f in files:
        for n in definitions(code[f], f.endswith(HEADERS)):
            definer[n].add(f)
    twice = {n: sorted(fs) for n, fs in definer.items() if len(fs) > 1}
    uses = {}
    for f in files:
        body = re.sub(r'^[ \t]*#[ \t]*include[^\n]*', '', code[f], flags=re.M)
        if f.endswith(HEADERS):
            body = function_bodies(DIRECTIVE.sub(blank, body))
        names = set(IDENT.findall(MEMBER.sub(' ', body))) | pasted_names(raw[f], body)
        uses[f] = names
    return files, raw, definer, twice, uses


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def resolve(inc, src, by_suffix):
    here = os.path.normpath(os.path.join(os.path.dirname(src), inc))
    if here in by_suffix.get(os.path.basename(inc), ()):
        return here
    found = [p for p in by_suffix.get(os.path.basename(inc), ()) if p.endswith("/" + inc)]
    return found[0] if len(found) == 1 else None


def arrows(files, raw, definer, twice, uses):
    by_suffix = defaultdict(list)
    for f in files:
        by_suffix[os.path.basename(f)].append(f)
    edge = defaultdict(lambda: defaultdict(set))
    for f in files:
        for n in uses[f]:
            if n in twice:
                continue
            for d in definer.get(n, ()):
                if d != f:
                    edge[f][d].add(n)
        for inc in INCLUDE.findall(raw[f]):
            to = resolve(inc, f, by_suffix)
            if to and to != f and stem(to) != stem(f):  # a file and its own header are one unit
                edge[f][to].add("#include")
    return edge


def circles(files, edge):
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in files:
        if root in index:
            continue
        work = [(root, iter(sorted(edge[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edge[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def names_of(s, k=4):
    s = sorted(s)
    return ", ".join(s[:k]) + (", ..." if len(s) > k else "")


TESTS = re.compile(r'[=!]=\s*(XE_DEV_(?:CPU|GPU|EXTRA)|XG_TARGET_(?:C|CUDA))\b'
                   r'|\b(XE_DEV_(?:CPU|GPU|EXTRA)|XG_TARGET_(?:C|CUDA))\s*[=!]='
                   r'|\bcase\s+(XE_DEV_(?:CPU|GPU|EXTRA)|XG_TARGET_(?:C|CUDA))\b'
                   r'|\[\s*(XE_DEV_(?:CPU|GPU|EXTRA)|XG_TARGET_(?:C|CUDA))\s*\+\s*1\s*\]')


def device_tests(files, raw):
    out = []
    for f in files:
        if f.startswith(BACKEND_DIRS[0]) or f.startswith(BACKEND_DIRS[1]) or f.startswith(PUBLIC):
            continue
        lines = SKIP.sub(blank, raw[f]).split("\n")
        hits = [str(i + 1) for i, l in enumerate(lines) if TESTS.search(l) and not l.lstrip().startswith("#")]
        if hits:
            out.append((f, hits))
    return out


def main():
    files, raw, definer, twice, uses = read_tree()
    edge = arrows(files, raw, definer, twice, uses)
    bad = 0
    for comp in circles(files, edge):
        bad += 1
        print("circle: " + " <-> ".join(comp))
        for a in comp:
            for b in comp:
                if b in edge[a]:
                    print("    %s -> %s (%s)" % (a, b, names_of(edge[a][b])))
    n_arrows = 0
    for a in files:
        for b in sorted(edge[a]):
            n_arrows += 1
            la, lb = layer_of(a), layer_of(b)
            if VERBOSE:
                print("arrow: %s -> %s (%s)" % (a, b, names_of(edge[a][b])))
            if la is not None and lb is not None and lb > la:
                bad += 1
                print("upward: %s (%s) -> %s (%s): %s" % (a, LAYERS[la][0], b, LAYERS[lb][0], names_of(edge[a][b])))
    outside = [f for f in files if layer_of(f) is None and not f.startswith(PUBLIC)]
    for f in outside:
        bad += 1
        print("no layer: %s (add its folder to LAYERS)" % f)
    for n, fs in sorted(twice.items()):
        print("note: %s is defined in %s: its callers are not followed" % (n, " and ".join(fs)))
    tests = device_tests(files, raw)
    print("device or target tests outside a backend's folders (report only): %d files" % len(tests))
    for f, hits in tests:
        print("    %s: line %s" % (f, ", ".join(hits)))
    order = " < ".join(name for name, _ in LAYERS)
    if bad:
        print("check_layers: %d problems (layers %s)" % (bad, order))
        return 1
    print("check_layers: %d files, %d arrows, no circle, none upward (%s)" % (len(files), n_arrows, order))
    return 0


sys.exit(main())
PYTHON
