"""optimized_model_filepath ending in .onnx: the graph as it runs, as an ONNX model.

Every statement of the graph xlac runs (its .xg text, xe_capi_write_graph)
becomes one ONNX node of xlac's domain, com.xlac: op_type is xlac's op
(`xlac_launch` for a cluster, `matmul`, `const`, ...), inputs and output the
values it reads and defines, the attribute `xg_attrs` its attributes as .xg
writes them, and for a cluster the attribute `body`, its body as .xg text.
The graph's inputs and outputs keep their names, element types and dims
(the model's dim_param names for symbolic ones), so any ONNX viewer shows
the clusters and the ops left out of them with their edges.

xlac reads the file back (InferenceSession(path), read_back below turns it
into the same .xg text); onnxruntime cannot run it (it has no com.xlac ops),
and neither, yet, can xlac-run or the C API (their ONNX importer does not
know the domain).

The protobuf is written here, with numpy as the only dependency.
"""
from . import errors

DOMAIN = "com.xlac"
# xlac dtype -> ONNX TensorProto.DataType
_ELEM = {"f32": 1, "u8": 2, "i8": 3, "u16": 4, "i16": 5, "i32": 6, "i64": 7, "bool": 9, "f16": 10,
         "f64": 11, "u32": 12, "u64": 13, "bf16": 16}
_XG = {v: k for k, v in _ELEM.items()}


# ---- protobuf ---------------------------------------------------------------------------

def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _int(field, n):
    return _varint(field << 3) + _varint(n)


def _bytes(field, data):
    data = data.encode() if isinstance(data, str) else data
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _string_attr(name, text):
    return _bytes(1, name) + _bytes(4, text) + _int(20, 3)  # AttributeProto: name, s, type STRING


def _value_info(arg):
    """ValueInfoProto of a NodeArg: name, tensor type (elem type, dims: value or dim_param)."""
    dims = b""
    for d in arg.shape:
        dims += _bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d) if d else b"")
    tensor = _int(1, _ELEM.get(arg.xlac_type, 0)) + _bytes(2, dims)
    return _bytes(1, arg.name) + _bytes(2, _bytes(1, tensor))


# ---- .xg statements ----------------------------------------------------------------------

def _split_top(text):
    """text split at the commas outside quotes, brackets and parentheses."""
    parts, depth, quote, cur, esc = [], 0, False, "", False
    for ch in text:
        if quote:
            cur += ch
            esc, quote = (not esc and ch == "\\"), quote and (esc or ch != '"')
            continue
        if ch == '"':
            quote = True
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _statement(line):
    """(name, op, args, attrs text, opens a body) of 'name = op(a, b, k=v) {'."""
    name, _, rest = line.partition("=")
    op, _, inner = rest.strip().partition("(")
    opens = inner.rstrip().endswith("{")
    inner = inner.rstrip().rstrip("{").rstrip()
    if not inner.endswith(")"):
        raise ValueError(line)
    items = _split_top(inner[:-1])
    args = [a for a in items if "=" not in a.split("(")[0]]
    attrs = [a for a in items if "=" in a.split("(")[0]]
    return name.strip(), op.strip(), args, ", ".join(attrs), opens


def _nodes(text):
    """The ONNX nodes of a .xg graph's statements (inputs and outputs are the graph's)."""
    lines = text.splitlines()
    nodes, i = [], 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line.startswith(("#", "xlac.graph", "input ", "output ")):
            continue
        if "=" not in line.split("(")[0]:
            raise errors.XlacUnsupportedError("optimized_model_filepath .onnx: the statement %r cannot be "
                                              "written as an ONNX node: write .xg" % line[:80])
        name, op, args, attrs, opens = _statement(line)
        body, depth = [], 1 if opens else 0
        while depth:
            inner = lines[i]
            i += 1
            depth += inner.rstrip().endswith("{") - (inner.strip() == "}")
            if depth:
                body.append(inner[2:] if inner.startswith("  ") else inner)
        node = b"".join(_bytes(1, a) for a in args) + _bytes(2, name) + _bytes(3, name) + _bytes(4, op)
        node += _bytes(7, DOMAIN) + _bytes(5, _string_attr("xg_attrs", attrs))
        if opens:
            node += _bytes(5, _string_attr("body", "\n".join(body) + "\n"))
        nodes.append(node)
    return nodes


class _Arg:
    def __init__(self, name, like):
        self.name, self.xlac_type, self.shape = name, like.xlac_type, like.shape


def write(path, xg_text, inputs, outputs, version):
    """Writes the ONNX model of the .xg text xg_text (inputs, outputs: the session's NodeArgs, in the
    order of the text's input and output lines, whose names the ONNX graph takes)."""
    for a in list(inputs) + list(outputs):
        if a.xlac_type not in _ELEM:
            raise errors.XlacUnsupportedError("optimized_model_filepath .onnx: %s is %s, which this writer "
                                              "does not name in ONNX: write .xg" % (a.name, a.xlac_type))
    lines = [ln.strip() for ln in xg_text.splitlines() if not ln.startswith(" ")]
    in_names = [ln[6:].split(":")[0].strip() for ln in lines if ln.startswith("input ")]
    out_names = [ln[7:].strip() for ln in lines if ln.startswith("output ")]
    if len(in_names) != len(inputs) or len(out_names) != len(outputs):
        raise errors.XlacRuntimeError("optimized_model_filepath .onnx: the written graph has %d inputs and "
                                      "%d outputs, the session %d and %d" % (
                                          len(in_names), len(out_names), len(inputs), len(outputs)))
    graph = b"".join(_bytes(1, n) for n in _nodes(xg_text)) + _bytes(2, "xlac")
    graph += b"".join(_bytes(11, _value_info(_Arg(n, a))) for n, a in zip(in_names, inputs))
    graph += b"".join(_bytes(12, _value_info(_Arg(n, a))) for n, a in zip(out_names, outputs))
    model = _int(1, 8) + _bytes(2, "xlac") + _bytes(3, version) + _bytes(4, DOMAIN)
    model += _bytes(7, graph)
    model += _bytes(8, _bytes(1, "") + _int(2, 17)) + _bytes(8, _bytes(1, DOMAIN) + _int(2, 1))
    with open(path, "wb") as f:
        f.write(model)


# ---- reading it back -----------------------------------------------------------------------

def _text(v):
    return bytes(v).decode("utf-8")


def _type_text(type_proto, fields):
    elem, dims = 1, []
    for _, tensor in fields(type_proto, {1}):
        for num, v in fields(tensor, {1, 2}):
            if num == 1:
                elem = v
            else:
                for _, dim in fields(v, {1}):
                    got = dict(fields(dim, {1, 2}))
                    dims.append(str(got[1]) if 1 in got else "?")
    return "%s[%s]" % (_XG.get(elem, "f32"), ",".join(dims))


def read_back(data):
    """The .xg text of a model this module wrote (its bytes), or None when data is another model."""
    from ._meta import _fields
    try:
        top = list(_fields(data, {2, 4, 7}))
        graphs = [v for n, v in top if n == 7]
        if len(graphs) != 1 or [bytes(v) for n, v in top if n != 7] != [b"xlac", DOMAIN.encode()]:
            return None
        nodes, ins, outs = [], [], []
        for num, v in _fields(graphs[0], {1, 11, 12}):
            (nodes if num == 1 else ins if num == 11 else outs).append(v)
        lines = ["xlac.graph v1"]
        for vi in ins:
            f = dict(_fields(vi, {1, 2}))
            lines.append("input %s: %s" % (_text(f[1]), _type_text(f[2], _fields)))
        for node in nodes:
            args, out, op, domain, attrs = [], "", "", "", {}
            for num, v in _fields(node, {1, 2, 4, 5, 7}):
                if num == 1:
                    args.append(_text(v))
                elif num == 2:
                    out = _text(v)
                elif num == 4:
                    op = _text(v)
                elif num == 7:
                    domain = _text(v)
                else:
                    a = dict(_fields(v, {1, 4}))
                    attrs[_text(a[1])] = _text(a.get(4, b""))
            if domain != DOMAIN:
                return None
            inner = ", ".join(args + ([attrs["xg_attrs"]] if attrs.get("xg_attrs") else []))
            if "body" in attrs:
                body = "".join("  " + ln + "\n" for ln in attrs["body"].splitlines())
                lines.append("%s = %s(%s) {\n%s}" % (out, op, inner, body))
            else:
                lines.append("%s = %s(%s)" % (out, op, inner))
        lines += ["output %s" % _text(dict(_fields(vi, {1}))[1]) for vi in outs]
        return "\n".join(lines) + "\n"
    except (ValueError, IndexError, KeyError, UnicodeDecodeError):
        return None
