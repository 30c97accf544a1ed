"""Writes the hostile seeds of the onnx and onnx_ext fuzz targets (tests/fuzz/targets.c).

Run from anywhere with any python3 (the standard library only: the models
are written with a few lines of protobuf encoding, as tests/support/pb.c
does in C):
    python3 tests/fuzz/make_onnx_seeds.py
tests/fuzz/seeds/onnx/ gets the models of issue 31, each a reproduction of
a defect a hostile model author found, and a few more in the same vein:
  - nest-if-4000.onnx: If nodes whose then_branch holds the next If, 4,000
    deep (protobuf-c unpacks recursively: a stack overflow without a limit);
  - nest-loop-20000.onnx: Loop bodies nested 20,000 deep, the innermost
    field truncated (protobuf-c refuses it, and the wire scan that says
    where, executor/frontends/onnx/diag.c, walks all of it);
  - nest-if-30.onnx, nest-if-100.onnx: valid If chains, each condition a
    constant, deep enough to reach the importer's own recursion;
  - attention-zero-kv-heads.onnx: Attention (opset 23), k and v [1,0,4,8];
  - split-num-outputs-0.onnx: Split with num_outputs = 0;
  - output-unnamed-initializer-empty.onnx: a graph output with no name and
    an initializer named "";
  - nul-names.onnx: Neg(x) -> "t\\0a", Exp(x) -> "t\\0b", Sub of the two;
  - gather-elements-7.onnx, gather-elements-minus-9.onnx: indices 7 and -9
    on an axis of 4 (ONNX: an error);
  - conv-huge-pad.onnx: a Conv with pads of 2^62;
  - hostile-names.onnx: node, value and graph names with quotes, newlines,
    "*/", "..", "/", "$()" and 4 KB of one letter.
Real exports seed the targets too: scripts/fuzz.sh takes a few small ones
straight from tests/models/exports/ (self-contained TorchScript exports);
this script adds upsample.fixed (a dynamo export whose weights are in
model.onnx.data) with the weights inlined (seeds/onnx/) and packed with its
data file as the onnx_ext target reads it (seeds/onnx_ext/).
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SEEDS = os.path.join(HERE, "seeds", "onnx")
EXT_SEEDS = os.path.join(HERE, "seeds", "onnx_ext")
EXPORTS = os.path.join(ROOT, "tests", "models", "exports")

FLOAT, BOOL, INT64 = 1, 9, 7  # TensorProto.DataType
A_FLOAT, A_INT, A_STRING, A_TENSOR, A_GRAPH, A_INTS = 1, 2, 3, 4, 5, 7  # AttributeProto.AttributeType


# ---- protobuf wire format ------------------------------------------------------------------

def varint(v):
    v &= (1 << 64) - 1  # a negative int64 is its two's complement, ten bytes
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def f_int(num, v):
    return varint(num << 3) + varint(v)


def f_bytes(num, b):
    if isinstance(b, str):
        b = b.encode("utf-8", "surrogatepass")
    return varint(num << 3 | 2) + varint(len(b)) + b


def f_float(num, v):
    return varint(num << 3 | 5) + struct.pack("<f", v)


# ---- ONNX messages (field numbers from executor/frontends/onnx/onnx.proto) ---------------------------

def tensor(name, dtype, dims, raw):
    return b"".join(f_int(1, d) for d in dims) + f_int(2, dtype) + \
        (f_bytes(8, name) if name is not None else b"") + f_bytes(9, raw)


def floats(*v):
    return struct.pack("<%df" % len(v), *v)


def int64s(*v):
    return struct.pack("<%dq" % len(v), *v)


def value_info(name, elem=FLOAT, dims=None):
    """A ValueInfoProto; name None leaves the field out, dims None the shape."""
    t = f_int(1, elem)
    if dims is not None:
        t += f_bytes(2, b"".join(f_bytes(1, f_bytes(2, d) if isinstance(d, str) else f_int(1, d))
                                 for d in dims))
    return (f_bytes(1, name) if name is not None else b"") + f_bytes(2, f_bytes(1, t))


def attr(name, value):
    """An AttributeProto; its kind follows value's Python type (bytes: a graph, ('t', b): a tensor)."""
    a = f_bytes(1, name)
    if isinstance(value, tuple) and value[0] == "t":
        return a + f_int(20, A_TENSOR) + f_bytes(5, value[1])
    if isinstance(value, tuple) and value[0] == "g":
        return a + f_int(20, A_GRAPH) + f_bytes(6, value[1])
    if isinstance(value, list):
        return a + f_int(20, A_INTS) + b"".join(f_int(8, v) for v in value)
    if isinstance(value, float):
        return a + f_int(20, A_FLOAT) + f_float(2, value)
    if isinstance(value, str):
        return a + f_int(20, A_STRING) + f_bytes(4, value)
    return a + f_int(20, A_INT) + f_int(3, value)


def node(op, inputs, outputs, name=None, domain=None, **attrs):
    return b"".join(f_bytes(1, i) for i in inputs) + b"".join(f_bytes(2, o) for o in outputs) + \
        (f_bytes(3, name) if name is not None else b"") + f_bytes(4, op) + \
        (f_bytes(7, domain) if domain is not None else b"") + \
        b"".join(f_bytes(5, attr(k, v)) for k, v in attrs.items())


def graph(nodes, inputs=(), outputs=(), inits=(), name="g"):
    return b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, name) + \
        b"".join(f_bytes(5, t) for t in inits) + b"".join(f_bytes(11, v) for v in inputs) + \
        b"".join(f_bytes(12, v) for v in outputs)


def model(g, opset=17, ir=8):
    return f_int(1, ir) + f_bytes(8, f_bytes(1, "") + f_int(2, opset)) + \
        f_bytes(2, "xlac-seeds") + f_bytes(7, g)


def const_bool(out, v=True):
    return node("Constant", [], [out], value=("t", tensor(None, BOOL, [], bytes([v]))))


# ---- the hostile models ----------------------------------------------------------------------

def nest_if(depth, minimal):
    """If chains: each then_branch holds the next If; the innermost graph makes y by Neg(x).
    minimal: no per-level condition or output (smaller; protobuf-c's recursion is all it reaches)."""
    g = graph([node("Neg", ["x"], ["y"])], outputs=[value_info("y")], name="leaf")
    for _ in range(depth):
        if minimal:
            g = f_bytes(1, f_bytes(4, "If") + f_bytes(5, f_bytes(1, "then_branch") + f_bytes(6, g)))
        else:
            g = graph([const_bool("c"), node("If", ["c"], ["y"], then_branch=("g", g), else_branch=("g", g[:0]))],
                      outputs=[value_info("y")])
    top = graph([node("Identity", ["x"], ["x0"])], [value_info("x", dims=[2])], [value_info("y", dims=[2])])
    return model(top + g if minimal else graph(
        [const_bool("c0"), node("If", ["c0"], ["y"], then_branch=("g", g), else_branch=("g", g))],
        [value_info("x", dims=[2])], [value_info("y", dims=[2])]))


def nest_loop_truncated(depth):
    """Loop bodies nested depth deep (node.attribute.g, the least bytes a level), and the
    innermost graph ends in a truncated field tag, so that protobuf-c refuses the file."""
    g = b"\x0a"  # field 1 (node), length-delimited, its length missing
    for _ in range(depth):
        g = f_bytes(1, f_bytes(5, f_bytes(6, g)))
    return model(f_bytes(1, f_bytes(4, "Loop") + f_bytes(5, f_bytes(1, "body") + f_int(20, A_GRAPH) +
                                                    f_bytes(6, g))))


def attention_zero_kv_heads():
    ins = [value_info("q", dims=[1, 2, 4, 8]), value_info("k", dims=[1, 0, 4, 8]), value_info("v", dims=[1, 0, 4, 8])]
    return model(graph([node("Attention", ["q", "k", "v"], ["y"], name="attn")], ins, [value_info("y")]), opset=23)


def split_num_outputs_0():
    return model(graph([node("Split", ["x"], ["a", "b"], name="split", axis=0, num_outputs=0)],
                       [value_info("x", dims=[4])], [value_info("a"), value_info("b")]), opset=18)


def output_unnamed_initializer_empty():
    return model(graph([node("Neg", ["x"], ["y"])], [value_info("x", dims=[2])], [value_info(None, dims=[2])],
                       [tensor("", FLOAT, [2], floats(1, 2))]))


def nul_names():
    return model(graph([node("Neg", ["x"], ["t\0a"]), node("Exp", ["x"], ["t\0b"]), node("Sub", ["t\0a", "t\0b"], ["y"])],
                       [value_info("x", dims=[3])], [value_info("y", dims=[3])]))


def gather_elements(index):
    return model(graph([node("GatherElements", ["data", "idx"], ["y"], name="ge", axis=0)],
                       [value_info("data", dims=[4])], [value_info("y")],
                       [tensor("idx", INT64, [2], int64s(index, 0))]), opset=13)


def conv_huge_pad():
    p = 1 << 62
    return model(graph([node("Conv", ["x", "w"], ["y"], name="conv", pads=[p, 0, p, 0])],
                       [value_info("x", dims=[1, 1, 4, 4])], [value_info("y")],
                       [tensor("w", FLOAT, [1, 1, 3, 3], floats(*[0.5] * 9))]))


def hostile_names():
    names = ["q\"uote'", "line\nbreak", "*/\n#include <stdlib.h>\n/*", "../../escaped", "/abs/path", "$(id)`id`;x",
             "a" * 4096]
    nodes, prev = [], "x"
    for i, n in enumerate(names):
        nodes.append(node("Relu" if i % 2 else "Neg", [prev], [n], name=names[-1 - i]))
        prev = n
    nodes.append(node("Identity", [prev], ["y"], name=""))
    return model(graph(nodes, [value_info("x", dims=["$(n)", 2])], [value_info("y")], name="*/ g \"\n"))


# ---- real exports ------------------------------------------------------------------------

def fields(buf):
    """The (number, wire type, value) of each field of one message (value: int or bytes)."""
    pos, out = 0, []
    while pos < len(buf):
        tag, pos = read_varint(buf, pos)
        num, wt = tag >> 3, tag & 7
        if wt == 0:
            v, pos = read_varint(buf, pos)
        elif wt == 2:
            n, pos = read_varint(buf, pos)
            v, pos = buf[pos:pos + n], pos + n
        else:
            size = 8 if wt == 1 else 4
            v, pos = buf[pos:pos + size], pos + size
        out.append((num, wt, v))
    return out


def read_varint(buf, pos):
    v = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, pos


def write(fs):
    out = bytearray()
    for num, wt, v in fs:
        out += varint(num << 3 | wt)
        out += varint(v) if wt == 0 else (varint(len(v)) + v if wt == 2 else v)
    return bytes(out)


def inline_tensor(t, data):
    """A TensorProto whose external data (offset, length in data) becomes raw_data."""
    fs = fields(t)
    ext = {}
    for num, _, v in fs:
        if num == 13:
            kv = dict((k, bytes(x).decode()) for k, _, x in fields(v))
            ext[kv.get(1)] = kv.get(2)
    if not ext:
        return t
    off, n = int(ext.get("offset", "0")), int(ext.get("length", str(len(data))))
    return write([f for f in fs if f[0] not in (9, 13, 14)] + [(9, 2, data[off:off + n])])


def inline_export(name):
    """tests/models/exports/NAME: (the model with its weights inlined, the model and data as they are)."""
    with open(os.path.join(EXPORTS, name, "model.onnx"), "rb") as f:
        mb = f.read()
    with open(os.path.join(EXPORTS, name, "model.onnx.data"), "rb") as f:
        db = f.read()
    top = []
    for num, wt, v in fields(mb):
        if num == 7:
            v = write([(n, w, inline_tensor(x, db) if n == 5 else x) for n, w, x in fields(v)])
        top.append((num, wt, v))
    return write(top), mb, db


def main():
    os.makedirs(SEEDS, exist_ok=True)
    os.makedirs(EXT_SEEDS, exist_ok=True)
    seeds = {
        "nest-if-4000.onnx": nest_if(4000, True),
        "nest-loop-20000.onnx": nest_loop_truncated(20000),
        "nest-if-30.onnx": nest_if(30, False),
        "nest-if-100.onnx": nest_if(100, False),
        "attention-zero-kv-heads.onnx": attention_zero_kv_heads(),
        "split-num-outputs-0.onnx": split_num_outputs_0(),
        "output-unnamed-initializer-empty.onnx": output_unnamed_initializer_empty(),
        "nul-names.onnx": nul_names(),
        "gather-elements-7.onnx": gather_elements(7),
        "gather-elements-minus-9.onnx": gather_elements(-9),
        "conv-huge-pad.onnx": conv_huge_pad(),
        "hostile-names.onnx": hostile_names(),
    }
    inlined, mb, db = inline_export("upsample.fixed")
    seeds["upsample-fixed-inlined.onnx"] = inlined
    for name, data in seeds.items():
        with open(os.path.join(SEEDS, name), "wb") as f:
            f.write(data)
    with open(os.path.join(EXT_SEEDS, "upsample-fixed.bin"), "wb") as f:
        f.write(struct.pack("<I", len(mb)) + mb + db)


if __name__ == "__main__":
    main()
