"""Random configurations of GridSample, RoiAlign, MaxUnpool and DeformConv (the ops of
ops/sample.c): xlac-run against onnx's reference evaluator, beyond the few configurations the
node tests hold (every mode and padding, grids far outside [-1, 1], regions upside down, offset
groups, strides, dilations). Prints each difference and the count.

    tests/onnx/.venv/bin/python tests/onnx/check_sampling_ops.py grid|roi|unpool|deform [SEED [N]]

xlac-run is build-rel's (XLAC_RUN overrides it). A configuration the reference cannot run (a
reflection over one pixel with align_corners divides by zero there) is skipped and counted.
"""
import os, subprocess, sys, tempfile
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
from onnx.reference import ReferenceEvaluator

XR = os.environ.get("XLAC_RUN", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build-rel", "bin", "xlac-run"))
rng = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
DT = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64,
      np.float16: TensorProto.FLOAT16}

def run(node, inputs, opset, rtol=1e-4, atol=1e-5):
    ins = [helper.make_tensor_value_info(n, DT[v.dtype.type], v.shape) for n, v in inputs.items()]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output]
    g = helper.make_graph([node], "g", ins, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    try:
        want = ReferenceEvaluator(m).run(None, inputs)[0]
    except Exception as e:
        return "refskip"
    with tempfile.TemporaryDirectory() as d:
        onnx.save(m, os.path.join(d, "m.onnx"))
        os.makedirs(os.path.join(d, "in"))
        for k, (n, v) in enumerate(inputs.items()):
            with open(os.path.join(d, "in", "input_%d.pb" % k), "wb") as f:
                f.write(numpy_helper.from_array(v, n).SerializeToString())
        p = subprocess.run([XR, os.path.join(d, "m.onnx"), "--device", "cpu", "--feed",
                            os.path.join(d, "in"), "--save-outputs", os.path.join(d, "out")],
                           capture_output=True, text=True)
        if p.returncode:
            return "xlac error: " + p.stderr[-400:]
        got = np.load(os.path.join(d, "out", node.output[0] + ".npy"))
    if got.shape != want.shape:
        return "shape %s vs %s" % (got.shape, want.shape)
    ok = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if not ok.all():
        i = tuple(np.argwhere(~ok)[0])
        return "at %s got %r want %r" % (i, got[i], want[i])
    return None

def grid_sample():
    nd = rng.choice([2, 3])
    mode = rng.choice(["linear", "nearest", "cubic"])
    pad = rng.choice(["zeros", "border", "reflection"])
    ac = int(rng.integers(0, 2))
    dt = rng.choice([np.float32, np.float64])
    sp = [int(rng.integers(1, 6)) for _ in range(nd)]
    osp = [int(rng.integers(1, 5)) for _ in range(nd)]
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    X = rng.standard_normal([n, c] + sp).astype(dt)
    G = (rng.standard_normal([n] + osp + [nd]) * 1.5).astype(dt)
    if rng.random() < 0.3:  # exact half-steps
        G = (np.round(G * 4) / 4).astype(dt)
    node = helper.make_node("GridSample", ["X", "G"], ["Y"], mode=mode, padding_mode=pad,
                            align_corners=ac)
    return "GridSample %s %s ac=%d %s sp=%s" % (mode, pad, ac, dt.__name__, sp), run(node, {"X": X, "G": G}, 22)

def roi_align():
    mode = rng.choice(["avg", "max"])
    ct = rng.choice(["half_pixel", "output_half_pixel"])
    n, c, h, w = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(2, 9)), int(rng.integers(2, 9))
    r = int(rng.integers(1, 4))
    X = rng.standard_normal([n, c, h, w]).astype(np.float32)
    x1 = rng.uniform(-2, w, r); y1 = rng.uniform(-2, h, r)
    rois = np.stack([x1, y1, x1 + rng.uniform(-1, w, r), y1 + rng.uniform(-1, h, r)], 1).astype(np.float32)
    bi = rng.integers(0, n, r).astype(np.int64)
    node = helper.make_node("RoiAlign", ["X", "rois", "bi"], ["Y"], mode=mode,
                            coordinate_transformation_mode=ct,
                            output_height=int(rng.integers(1, 4)), output_width=int(rng.integers(1, 4)),
                            sampling_ratio=int(rng.integers(0, 3)), spatial_scale=float(rng.choice([1.0, 0.5, 2.0])))
    return "RoiAlign %s %s" % (mode, ct), run(node, {"X": X, "rois": rois, "bi": bi}, 22)

def max_unpool():
    k = int(rng.integers(1, 4))
    ks = [int(rng.integers(1, 4)) for _ in range(k)]
    st = [int(rng.integers(1, 3)) for _ in range(k)]
    x = rng.standard_normal([1, 2] + [int(rng.integers(1, 4)) for _ in range(k)]).astype(np.float32)
    inferred = [1, 2] + [(x.shape[d + 2] - 1) * st[d] + ks[d] for d in range(k)]
    idx = rng.integers(0, int(np.prod(inferred)), x.shape).astype(np.int64)
    inputs = {"X": x, "I": idx}
    ins = ["X", "I"]
    if rng.random() < 0.5:
        inputs["S"] = np.array(inferred[:2] + [v + int(rng.integers(0, 2)) for v in inferred[2:]], np.int64)
        ins.append("S")
    node = helper.make_node("MaxUnpool", ins, ["Y"], kernel_shape=ks, strides=st)
    return "MaxUnpool %s %s" % (ks, st), run(node, inputs, 22)

def deform_conv():
    g = int(rng.integers(1, 3)); og = int(rng.integers(1, 3))
    c = g * og * int(rng.integers(1, 3)); m = g * int(rng.integers(1, 3))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    h, w = int(rng.integers(kh + 1, 7)), int(rng.integers(kw + 1, 7))
    s = [int(rng.integers(1, 3)) for _ in range(2)]; dl = [int(rng.integers(1, 3)) for _ in range(2)]
    p = [int(rng.integers(0, 2)) for _ in range(4)]
    oh = (h + p[0] + p[2] - ((kh - 1) * dl[0] + 1)) // s[0] + 1
    ow = (w + p[1] + p[3] - ((kw - 1) * dl[1] + 1)) // s[1] + 1
    if oh < 1 or ow < 1:
        return "DeformConv skip", None
    dt = rng.choice([np.float32, np.float64])
    inputs = {"X": rng.standard_normal([2, c, h, w]).astype(dt),
              "W": rng.standard_normal([m, c // g, kh, kw]).astype(dt),
              "O": (rng.standard_normal([2, og * kh * kw * 2, oh, ow]) * 2).astype(dt)}
    ins = ["X", "W", "O"]
    if rng.random() < 0.5:
        inputs["B"] = rng.standard_normal([m]).astype(dt); ins.append("B")
    if rng.random() < 0.5:
        if len(ins) == 3: ins.append("")
        inputs["M"] = rng.standard_normal([2, og * kh * kw, oh, ow]).astype(dt); ins.append("M")
    node = helper.make_node("DeformConv", ins, ["Y"], kernel_shape=[kh, kw], strides=s,
                            dilations=dl, pads=p, group=g, offset_group=og)
    return "DeformConv g=%d og=%d k=%dx%d s=%s d=%s p=%s" % (g, og, kh, kw, s, dl, p), run(node, inputs, 22)

which = {"grid": grid_sample, "roi": roi_align, "unpool": max_unpool, "deform": deform_conv}[sys.argv[1]]
bad = skips = 0
for i in range(int(sys.argv[3]) if len(sys.argv) > 3 else 100):
    name, why = which()
    skips += why == "refskip"
    if why and why != "refskip":
        bad += 1
        print(name, "->", why)
print("failures:", bad, "reference skipped:", skips)
sys.exit(1 if bad else 0)
