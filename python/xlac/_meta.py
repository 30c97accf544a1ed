"""get_modelmeta()'s fields, read from an ONNX ModelProto's top-level fields with a
small protobuf reader (no onnx package needed): producer_name (2), domain (4),
model_version (5), doc_string (6), graph (7: name 2, doc_string 10) and
metadata_props (14: key 1, value 2). A .xg graph has the file's name as its
graph name and "xlac" as its producer."""
import os


class ModelMetadata:
    """onnxruntime.ModelMetadata's fields."""

    def __init__(self, producer_name="", graph_name="", domain="", description="",
                 graph_description="", version=0, custom_metadata_map=None):
        self.producer_name, self.graph_name, self.domain = producer_name, graph_name, domain
        self.description, self.graph_description, self.version = description, graph_description, version
        self.custom_metadata_map = dict(custom_metadata_map or {})

    def __repr__(self):
        return "ModelMetadata(producer_name=%r, graph_name=%r, version=%r)" % (
            self.producer_name, self.graph_name, self.version)


def _varint(b, i):
    x, shift = 0, 0
    while True:
        if i >= len(b):
            raise ValueError("truncated varint")
        c = b[i]
        i += 1
        x |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return x, i


def _fields(b, wanted):
    """(number, value) of the fields numbered in wanted: varints as ints, others as bytes."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        if num in wanted:
            yield num, v


def _text(v):
    return bytes(v).decode("utf-8", errors="replace")


def read(data, path):
    """The metadata of a model: data, its bytes (or None for a .xg file at path)."""
    if data is None or data.lstrip().startswith(b"xlac.graph") or data.lstrip().startswith(b"#"):
        return ModelMetadata(producer_name="xlac",
                             graph_name=os.path.splitext(os.path.basename(path or "graph"))[0])
    m = ModelMetadata()
    try:
        for num, v in _fields(memoryview(data), {2, 4, 5, 6, 7, 14}):
            if num == 2:
                m.producer_name = _text(v)
            elif num == 4:
                m.domain = _text(v)
            elif num == 5:
                m.version = v
            elif num == 6:
                m.description = _text(v)
            elif num == 7:
                for gnum, gv in _fields(v, {2, 10}):
                    if gnum == 2:
                        m.graph_name = _text(gv)
                    else:
                        m.graph_description = _text(gv)
            else:
                kv = dict(_fields(v, {1, 2}))
                m.custom_metadata_map[_text(kv.get(1, b""))] = _text(kv.get(2, b""))
    except (ValueError, IndexError):
        pass  # the C loader already accepted the model; a field it skips stays empty
    return m


def _dims(value_info):
    """(name, [dim_param or None per dim]) of a ValueInfoProto (name 1, type 2: tensor_type 1:
    shape 2: dim 1: dim_value 1, dim_param 2)."""
    name, dims = "", []
    for num, v in _fields(value_info, {1, 2}):
        if num == 1:
            name = _text(v)
            continue
        for _, tensor in _fields(v, {1}):
            for _, shape in _fields(tensor, {2}):
                for _, dim in _fields(shape, {1}):
                    params = [_text(p) for n, p in _fields(dim, {2}) if n == 2]
                    dims.append(params[0] if params and params[0] else None)
    return name, dims


def _symbolic_of(view):
    inputs, outputs = {}, {}
    for num, graph in _fields(view, {7}):
        for gnum, vi in _fields(graph, {11, 12}):
            name, dims = _dims(vi)
            (inputs if gnum == 11 else outputs)[name] = dims
    return inputs, outputs


def symbolic_dims(data, path):
    """
    ({input name: [dim_param or None]}, {output name: ...}) of an ONNX model (its bytes, or the file
    at path, mapped, not read: the weights are skipped); ({}, {}) for a .xg graph or what this
    reader cannot follow (the C loader has accepted the model: a name it lacks stays None).
    """
    import mmap
    try:
        if data is None:
            with open(path, "rb") as f:
                head = f.read(4096)
        else:
            head = data[:4096]
        if not head or head.lstrip().startswith((b"xlac.graph", b"#")):
            return {}, {}
        if data is not None:
            return _symbolic_of(memoryview(data))
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return {}, {}
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                view = memoryview(m)
                try:
                    return _symbolic_of(view)
                finally:
                    view.release()
    except (ValueError, IndexError, OSError, BufferError):
        return {}, {}
