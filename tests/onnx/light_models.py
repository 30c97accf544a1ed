"""The onnx package's light CNNs (onnx/backend/test/data/light/*.onnx: ResNet-50,
DenseNet-121, Inception v1 and v2, ShuffleNet, SqueezeNet, VGG-19, AlexNet,
ZFNet-512, with generated weights) through xlac-run, op by op and clustered,
against onnxruntime on the same random image (seed 0, uniform [0, 1)).

Every output is compared, and the logits before the closing Softmax too (added
as an output: with the generated weights the softmax itself is near uniform).
Where the logits are so large (over ~8e4) that one f32 rounding of a logit
moves a probability by more than 1%, the Softmax output is ill-conditioned and
only the logits are compared (the detail says so).
Agreement: |xlac - ort| <= ATOL + RTOL * |ort| everywhere, and no NaN. The
models are deep f32 networks whose outputs (softmax probabilities or logits)
add rounding over dozens of layers, so the tolerance is looser than a single
op's.
"""
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

RTOL, ATOL = 1e-3, 1e-4
UNSUPPORTED = re.compile(r"cannot import the model: (\d+) unsupported, 0 invalid")


def light_dir():
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def light_models(pattern):
    """(name, path) of each light model whose name (test_light_X) matches pattern."""
    d = light_dir()
    if not os.path.isdir(d):
        return []
    out = []
    for f in sorted(os.listdir(d)):
        if f.endswith(".onnx"):
            name = "test_" + f[:-len(".onnx")]
            if not pattern or re.search(pattern, name):
                out.append((name, os.path.join(d, f)))
    return out


def with_logits(path, folder):
    """The model with the last node's first input (the logits before the closing
    Softmax: the light models' random weights make the softmax uniform) as an
    extra output; its path in folder."""
    m = onnx.shape_inference.infer_shapes(onnx.load(path))
    last = m.graph.node[-1].input[0]
    if all(o.name != last for o in m.graph.output):
        vi = [v for v in m.graph.value_info if v.name == last]
        m.graph.output.append(vi[0] if vi else onnx.helper.make_empty_tensor_value_info(last))
    out = os.path.join(folder, "model.onnx")
    onnx.save(m, out)
    return out, last, m.graph.node[-1].output[0]


def reference(path, folder):
    """Writes the random image as input_0.pb; returns ort's outputs by name."""
    import onnxruntime as ort
    m = onnx.load(path)
    inits = {i.name for i in m.graph.initializer}
    inp = [i for i in m.graph.input if i.name not in inits][0]
    shape = [d.dim_value if d.dim_value > 0 else 1 for d in inp.type.tensor_type.shape.dim]
    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    os.makedirs(os.path.join(folder, "feed"))
    with open(os.path.join(folder, "feed", "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, inp.name).SerializeToString())
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    res = s.run(None, {inp.name: x})
    return {o.name: r for o, r in zip(s.get_outputs(), res)}


def compare(want, out_dir, sanitize):
    worst = 0.0
    for name, w in want.items():
        p = os.path.join(out_dir, sanitize(name) + ".npy")
        if not os.path.exists(p):
            return "output %s was not written" % name, worst
        g = np.load(p)
        if g.shape != w.shape:
            return "output %s: shape %s, expected %s" % (name, g.shape, w.shape), worst
        if np.isnan(g).any():
            return "output %s: NaN" % name, worst
        err = np.abs(g.astype(np.float64) - w) - RTOL * np.abs(w)
        worst = max(worst, float(np.abs(g.astype(np.float64) - w).max() / max(np.abs(w).max(), 1e-30)))
        if (err > ATOL).any():
            i = tuple(np.argwhere(err > ATOL)[0])
            return "output %s: at %s got %r, onnxruntime %r" % (name, i, g[i], w[i]), worst
    return None, worst


def run_light(args, name, path, sanitize):
    """(status, detail, op_ok, clustered_ok); status: pass, fail, unsupported."""
    folder = tempfile.mkdtemp(prefix="xlac-light-", dir=args.tmp)
    try:
        path, logits, probs = with_logits(path, folder)
        want = reference(path, folder)
        note = ""
        if np.abs(want[logits]).max() * np.finfo(np.float32).eps > 0.01 and probs in want:
            # one rounding of a logit this big moves a probability by more than 1%
            note = "; %s not compared (logits up to %.2g)" % (probs, np.abs(want[logits]).max())
            del want[probs]
        ok = {}
        for clustered in (False, True):
            out = os.path.join(folder, "out_%d" % clustered)
            cmd = [args.xlac_run, path, "--device", "cpu", "--feed", os.path.join(folder, "feed"),
                   "--save-outputs", out]
            env = dict(os.environ, OMP_NUM_THREADS="1")
            if clustered:
                env.update(LD_PRELOAD=args.libxlac, XLAC_AUTO_JIT="2")
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
            how = "clustered: " if clustered else "op by op: "
            if p.returncode == 2 and UNSUPPORTED.search(p.stderr) and not clustered:
                return "unsupported", p.stderr.strip().splitlines()[-1], False, False
            if p.returncode != 0:
                return "fail", how + "exit %d: %s" % (p.returncode, p.stderr.strip()[-600:]), \
                    ok.get(False, False), False
            why, worst = compare(want, out, sanitize)
            if why:
                return "fail", how + why, ok.get(False, False), False
            ok[clustered] = worst
        return "pass", "max |xlac - ort| / max |ort|: op by op %.2g, clustered %.2g%s" % (ok[False], ok[True], note), True, True
    except subprocess.TimeoutExpired:
        return "fail", "timed out", False, False
    finally:
        shutil.rmtree(folder, ignore_errors=True)
