#!/usr/bin/env python3
"""The real-models bench (issue 26): models people run, exported by torch's default
exporter, timed in xlac and its peers in one run. Run it through `bench/run.sh --real`.

Models (random weights, configs in code, nothing downloaded): transformers BERT, GPT-2, ViT,
T5 encoder and Whisper encoder at small-but-real sizes (see MODELS), torchvision ResNet-18,
ResNet-50, MobileNetV2, EfficientNet-B0 and ConvNeXt-T at 224x224; batch 1 and batch 8, one
fixed-shape export per batch by `torch.onnx.export(..., dynamo=True)`, cached under
bench/out/real/ (keyed by the torch version; delete the folder to export again).

Per model and batch, in this order:
1. correctness: onnxruntime's outputs are the reference; xlac op by op, xlac clustered,
   onnxruntime with xlac's execution provider (plugin/ort_ep: build's lib/libxlac_ort_ep.so,
   registered in this process with XLAC_AUTO_JIT=2 and a disk cache of its own),
   OpenVINO (f32 hint and its default precision) and torch.compile are each compared with them
   (relative L2 error and max abs, as bench/models.py does; OpenVINO's default precision, bf16
   on CPUs that have it, with a looser bound). A runtime that disagrees is not timed: its cell
   says `WRONG` and the run ends with exit status 1 after writing the table.
2. timing, in rounds; within a round the runtimes alternate (xlac op by op, xlac clustered,
   onnxruntime, onnxruntime + xlac EP, OpenVINO f32, OpenVINO default, torch.compile), each timed for at least
   --min-seconds; the table gives the median over rounds of each round's median ms.
3. first run (xlac clustered): the wall clock of one xlac-run process with an empty xlac disk
   cache (cold) and with the cache it filled (warm), the process's load (an op-by-op process's
   wall clock minus its one run) and the steady-state ms, so that "cold <= 1.5 s; warm <= 1.1 x
   (steady + load)" can be read off.

The same thread count everywhere (--threads, default the CPU count): OMP_NUM_THREADS for
xlac-run (and oneDNN and OpenBLAS in it), onnxruntime's intra_op_num_threads (with the EP too;
its fused nodes run on an OpenMP team of OMP_NUM_THREADS, set in this process), OpenVINO's
INFERENCE_NUM_THREADS, torch.set_num_threads. The machine's f32 peak is measured in the same
run by bench/peak.c (one 2048^3 oneDNN sgemm, best of 10), and each model's conv and product
FLOPs are counted from its ONNX graph (Conv: 2*N*Cout*Hout*Wout*(Cin/groups)*kh*kw; MatMul and
Gemm: 2*M*N*K times the batch dims), giving GFLOP/s and the fraction of the peak.

Writes its own section of bench/RESULTS.md (replaced on each run; --results elsewhere) and
bench/models.svg (--svg), prints the table last.

    bench/run.sh --real [--only resnet18,gpt2] [--batches 1,8] [--rounds 5] [--min-seconds 1]
"""

import argparse
import contextlib
import datetime
import hashlib
import inspect
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from bench import Xlac  # noqa: E402

HEADING = "## Real models (torch exports)"
REL_TOL, ABS_TOL = 1e-4, 1e-3          # f32 runtimes against onnxruntime (bench/models.py's)
LOOSE_REL_TOL, LOOSE_ABS_TOL = 5e-2, 1e-1  # OpenVINO's default precision (bf16 here)
RUNTIMES = ["xlac_op", "xlac_cl", "ort", "ort_ep", "ov_f32", "ov_default", "torch_compile"]
LABELS = {"xlac_op": "xlac op by op", "xlac_cl": "xlac clustered", "ort": "onnxruntime",
          "ort_ep": "onnxruntime + xlac EP",
          "ov_f32": "OpenVINO f32", "ov_default": "OpenVINO default", "torch_compile": "torch.compile"}
COLD_TARGET_S, WARM_TARGET = 1.5, 1.1
ORT_EP = "XlacExecutionProvider"
SEQ = 128        # tokens of the text models
VOCAB = 8192     # vocabulary of the text models (the embedding is a gather; its size does not matter)
IMAGE = 224


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- models, configs in code

def _hidden(torch):
    class Hidden(torch.nn.Module):
        """A transformers model's last_hidden_state as a plain tensor output."""

        def __init__(self, m, kind):
            super().__init__()
            self.m, self.kind = m, kind

        def forward(self, *args):
            if self.kind == "text":
                return self.m(input_ids=args[0], attention_mask=args[1]).last_hidden_state
            if self.kind == "image":
                return self.m(pixel_values=args[0]).last_hidden_state
            return self.m(input_features=args[0]).last_hidden_state
    return Hidden


def bert(torch):
    from transformers import BertConfig, BertModel
    c = BertConfig(vocab_size=VOCAB, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                   intermediate_size=1024, max_position_embeddings=SEQ)
    return _hidden(torch)(BertModel(c, add_pooling_layer=False), "text"), "text"


def gpt2(torch):
    from transformers import GPT2Config, GPT2Model
    c = GPT2Config(vocab_size=VOCAB, n_embd=256, n_layer=4, n_head=4, n_positions=SEQ,
                   bos_token_id=0, eos_token_id=0)
    return _hidden(torch)(GPT2Model(c), "text"), "text"


def vit(torch):
    from transformers import ViTConfig, ViTModel
    c = ViTConfig(image_size=IMAGE, patch_size=16, hidden_size=192, num_hidden_layers=4,
                  num_attention_heads=3, intermediate_size=768)
    return _hidden(torch)(ViTModel(c, add_pooling_layer=False), "image"), "image"


def t5_encoder(torch):
    from transformers import T5Config, T5EncoderModel
    c = T5Config(vocab_size=VOCAB, d_model=256, d_kv=64, d_ff=1024, num_layers=4, num_heads=4)
    return _hidden(torch)(T5EncoderModel(c), "text"), "text"


WHISPER_FRAMES = 500  # 5 s of audio (the encoder's input is 2 x max_source_positions frames)


def whisper_encoder(torch):
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    c = WhisperConfig(num_mel_bins=80, d_model=256, encoder_layers=4, encoder_attention_heads=4,
                      encoder_ffn_dim=1024, max_source_positions=WHISPER_FRAMES // 2)
    return _hidden(torch)(WhisperEncoder(c), "audio"), "audio"


def _vision(fn):
    def make(torch):
        import torchvision.models as tvm
        return calibrated(torch, getattr(tvm, fn)(weights=None)), "image"
    return make


def calibrated(torch, m):
    """BatchNorm's running statistics set to those of random images, as training would leave
    them: with the initial ones (mean 0, variance 1) the activations of a randomly initialised
    net shrink layer by layer (EfficientNet's outputs were about 1e-20), which would time
    denormal arithmetic and make the comparison meaningless."""
    bns = [b for b in m.modules() if isinstance(b, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return m
    for b in bns:
        b.reset_running_stats()
        b.momentum = None  # a cumulative average over the calibration batches
    g = torch.Generator().manual_seed(1)
    m.train()
    with torch.no_grad():
        for _ in range(2):
            m(torch.rand(4, 3, IMAGE, IMAGE, generator=g) * 2 - 1)
    return m


MODELS = {
    "bert": (bert, "BERT (4 layers, 256 wide, 4 heads, 128 tokens)"),
    "gpt2": (gpt2, "GPT-2 (4 layers, 256 wide, 4 heads, 128 tokens)"),
    "vit": (vit, "ViT (4 layers, 192 wide, 3 heads, 224², patch 16)"),
    "t5_encoder": (t5_encoder, "T5 encoder (4 layers, 256 wide, 4 heads, 128 tokens)"),
    "whisper_encoder": (whisper_encoder, "Whisper encoder (4 layers, 256 wide, 80 mels x 500 frames)"),
    "resnet18": (_vision("resnet18"), "ResNet-18 (224²)"),
    "resnet50": (_vision("resnet50"), "ResNet-50 (224²)"),
    "mobilenet_v2": (_vision("mobilenet_v2"), "MobileNetV2 (224²)"),
    "efficientnet_b0": (_vision("efficientnet_b0"), "EfficientNet-B0 (224²)"),
    "convnext_tiny": (_vision("convnext_tiny"), "ConvNeXt-T (224²)"),
}
TRANSFORMERS = {"bert", "gpt2", "vit", "t5_encoder", "whisper_encoder"}


def config_key(name):
    """A short hash of the model's code and sizes: a changed config exports again."""
    fn = MODELS[name][0]
    src = inspect.getsource(fn) + MODELS[name][1] + repr((SEQ, VOCAB, IMAGE, WHISPER_FRAMES))
    src += "".join(inspect.getsource(f) for f in (_hidden, calibrated, make_inputs))
    return hashlib.sha1(src.encode()).hexdigest()[:8]


def make_module(torch, name):
    torch.manual_seed(0)  # the same random weights in every process: the cached export matches
    m, kind = MODELS[name][0](torch)
    return m.eval(), kind


def make_inputs(kind, batch, seed=11):
    g = np.random.default_rng(seed)
    if kind == "text":
        mask = np.ones((batch, SEQ), np.int64)
        mask[-1, SEQ - 16:] = 0  # padding at the end of the last row
        return {"input_ids": g.integers(1, VOCAB, (batch, SEQ)).astype(np.int64), "attention_mask": mask}
    if kind == "audio":
        return {"input_features": g.uniform(-1, 1, (batch, 80, WHISPER_FRAMES)).astype(np.float32)}
    return {"pixel_values": g.uniform(-1, 1, (batch, 3, IMAGE, IMAGE)).astype(np.float32)}


def export(torch, name, batch, folder):
    """folder/model.onnx (+ .data) and folder/feed/*.npy; reused when already there."""
    path = os.path.join(folder, "model.onnx")
    feed = os.path.join(folder, "feed")
    module, kind = make_module(torch, name)
    inputs = make_inputs(kind, batch)
    if not os.path.exists(path):
        tmp = folder + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        args = tuple(torch.from_numpy(v) for v in inputs.values())
        t0 = time.perf_counter()
        with torch.no_grad(), contextlib.redirect_stdout(sys.stderr):  # its progress lines
            torch.onnx.export(module, args, os.path.join(tmp, "model.onnx"), dynamo=True,
                              input_names=list(inputs), output_names=["y"])
        os.makedirs(os.path.join(tmp, "feed"))
        for k, v in inputs.items():
            np.save(os.path.join(tmp, "feed", k + ".npy"), v)
        shutil.rmtree(folder, ignore_errors=True)
        os.rename(tmp, folder)
        log("   exported %s batch %d in %.1f s" % (name, batch, time.perf_counter() - t0))
    return module, inputs, path, feed


# ---------------------------------------------------------------- FLOPs from the ONNX graph

def count_flops(path):
    """(conv FLOPs, product FLOPs, ops whose shapes were unknown) of the model at path."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    m = onnx.shape_inference.infer_shapes(m)
    g = m.graph
    shapes = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
            shapes[vi.name] = dims
    for init in g.initializer:
        shapes[init.name] = list(init.dims)
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    shapes[n.output[0]] = list(a.t.dims)

    def known(name):
        s = shapes.get(name)
        return s if s is not None and all(d is not None for d in s) else None

    conv = prod = 0
    unknown = []
    for n in g.node:
        if n.op_type == "Conv":
            w, y = known(n.input[1]), known(n.output[0])
            if w is None or y is None:
                unknown.append(n.name)
                continue
            conv += 2 * math.prod(y) * math.prod(w[1:])  # N*Cout*Hout*Wout x (Cin/groups)*kh*kw
        elif n.op_type in ("MatMul", "Gemm"):
            a, y = known(n.input[0]), known(n.output[0])
            if a is None or y is None:
                unknown.append(n.name)
                continue
            k = a[-1]
            if n.op_type == "Gemm" and any(at.name == "transA" and at.i for at in n.attribute):
                k = a[0]
            if len(a) == 1:
                k = a[0]
            prod += 2 * math.prod(y) * k  # batch dims x M x N x K
    return conv, prod, unknown


# ---------------------------------------------------------------- correctness

def compare(want, got, rel_tol=REL_TOL, abs_tol=ABS_TOL):
    """(relative L2 error, max abs error, None or why it fails)."""
    got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got64.shape != want64.shape:
        return float("nan"), float("nan"), "shape %s, onnxruntime %s" % (got64.shape, want64.shape)
    if not np.all(np.isfinite(got64)):
        return float("nan"), float("nan"), "non-finite values"
    rel = float(np.linalg.norm(got64 - want64) / max(np.linalg.norm(want64), 1e-30))
    worst = float(np.max(np.abs(got64 - want64))) if got64.size else 0.0
    scale = max(1.0, float(np.max(np.abs(want64))) if want64.size else 1.0)
    why = None
    if rel > rel_tol or worst > abs_tol * scale:
        why = "relative L2 error %.3g (bound %.0e), max abs %.3g (bound %.3g)" % (
            rel, rel_tol, worst, abs_tol * scale)
    return rel, worst, why


# ---------------------------------------------------------------- runtimes

def error_line(e):
    """The last line of an exception, leaving out the plugin's statistics lines
    (`xlac: stats ...`, `xlac: timing ...`) that end xlac-run's stderr."""
    lines = [ln.strip() for ln in str(e).strip().splitlines()
             if ln.strip() and not ln.startswith(("xlac: stats", "xlac: timing"))] or ["?"]
    return lines[-1][:300]


class Runtimes:
    """Every runtime of one model and batch, each as prepare / check / time."""

    def __init__(self, args, xlac, torch, module, inputs, path, feed, work):
        self.args, self.xlac, self.torch = args, xlac, torch
        self.module, self.inputs, self.path, self.feed, self.work = module, inputs, path, feed, work
        self.threads = args.threads
        self.est_ms = {}
        self.first_call_s = None

    # -- onnxruntime, the reference
    def ort_session(self):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        self.ort = ort.InferenceSession(self.path, so, providers=["CPUExecutionProvider"])
        return lambda: self.ort.run(None, self.inputs)[0]

    # -- onnxruntime with xlac's execution provider, in this process
    def ort_ep_session(self):
        import onnxruntime as ort
        register_ort_ep(ort, self.args)
        so = ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        # what xlac.ort's import hook does for a session it adds the EP to: onnxruntime's intra-op
        # threads do not spin on the cores the fused nodes' OpenMP team runs on
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        so.add_provider_for_devices([d for d in ort.get_ep_devices() if d.ep_name == ORT_EP], {})
        self.ort_ep = ort.InferenceSession(self.path, so)
        return lambda: self.ort_ep.run(None, self.inputs)[0]

    # -- OpenVINO
    def ov_model(self, precision):
        import openvino as ov
        core = ov.Core()
        cfg = {"INFERENCE_NUM_THREADS": self.threads, "PERFORMANCE_HINT": "LATENCY"}
        if precision:
            cfg["INFERENCE_PRECISION_HINT"] = precision
        compiled = core.compile_model(self.path, "CPU", cfg)
        req = compiled.create_infer_request()
        names = [i.get_any_name() for i in compiled.inputs]
        feeds = {n: self.inputs[n] for n in names}

        def run():
            req.infer(feeds)
            return np.array(req.get_output_tensor(0).data, copy=True)
        return run

    # -- torch.compile on the module that was exported
    def torch_compiled(self):
        torch = self.torch
        torch.set_num_threads(self.threads)
        import torch._inductor.config as icfg
        icfg.freezing = True
        torch._dynamo.reset()
        fn = torch.compile(self.module)
        args = tuple(torch.from_numpy(v) for v in self.inputs.values())

        def run():
            with torch.no_grad():
                return fn(*args).numpy()
        t0 = time.perf_counter()
        run()
        self.first_call_s = time.perf_counter() - t0
        return run

    # -- xlac through xlac-run, a process per measurement
    def xlac_run(self, clustered, iterations, warmup, save=None):
        extra = ["--save-outputs", save] if save else []
        ms, stats, wall = self.xlac.run(self.path, [self.feed], clustered, iterations, warmup,
                                        extra_args=extra)
        return ms, stats, wall

    def check(self, want):
        """{runtime: (rel, max abs, why or None)} and the in-process callables that passed."""
        res, calls = {}, {}
        for key in RUNTIMES:
            if key not in self.args.runtimes:
                continue
            try:
                if key in ("xlac_op", "xlac_cl"):
                    out = os.path.join(self.work, key)
                    ms, stats, _ = self.xlac_run(key == "xlac_cl", 1, 1, save=out)
                    self.est_ms[key] = ms
                    if key == "xlac_cl":
                        self.cl_stats = stats
                    got = np.load(os.path.join(out, "y.npy"))
                    loose = False
                else:
                    fn = {"ort": self.ort_session, "ort_ep": self.ort_ep_session,
                          "ov_f32": lambda: self.ov_model("f32"),
                          "ov_default": lambda: self.ov_model(None),
                          "torch_compile": self.torch_compiled}[key]()
                    got = fn()
                    calls[key] = fn
                    loose = key == "ov_default"
                    if key == "ort":
                        res[key] = (0.0, 0.0, None)
                        continue
                rel, worst, why = compare(want, got, *((LOOSE_REL_TOL, LOOSE_ABS_TOL) if loose else ()))
            except Exception as e:  # a runtime that cannot run the model fails its cell, loudly
                rel, worst, why = float("nan"), float("nan"), "%s: %s" % (type(e).__name__, error_line(e))
            res[key] = (rel, worst, why)
            if why:
                log("   !!! %s DISAGREES or FAILED: %s" % (LABELS[key], why))
                calls.pop(key, None)
            else:
                log("   %s agrees: relative L2 %.2g, max abs %.2g" % (LABELS[key], rel, worst))
        return res, calls

    def time_in_process(self, fn):
        """Median ms of fn over at least min_seconds (and at least 3 calls), after 2 warm-ups."""
        fn()
        fn()
        ts, t_end = [], time.perf_counter() + self.args.min_seconds
        while len(ts) < 3 or time.perf_counter() < t_end:
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts)

    def time_xlac(self, key):
        est = max(self.est_ms.get(key, 1.0), 1e-3)
        iterations = max(3, int(math.ceil(self.args.min_seconds * 1e3 / est)))
        return self.xlac_run(key == "xlac_cl", iterations, 2)[0]


def register_ort_ep(ort, args):
    """Registers build's libxlac_ort_ep.so with onnxruntime once per process. The EP reads XLAC_AUTO_JIT
    and XLAC_FLAGS when it is registered, and libgomp and OpenBLAS read theirs when it loads them: they
    are set for that call alone (level 2, its own disk cache under the bench's temporary folder; as
    xlac.ort.get_library_path() does, GOMP_SPINCOUNT=10000 unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is
    set, and OPENBLAS_NUM_THREADS=1), so that the xlac-run processes started later see the environment
    as it was."""
    if getattr(args, "ort_ep_registered", False):
        return
    lib = os.path.join(args.build, "lib", "libxlac_ort_ep.so")
    if not os.path.exists(lib):
        raise RuntimeError("%s not built (cmake --build %s --target xlac_ort_ep)" % (lib, args.build))
    saved = {k: os.environ.get(k) for k in ("XLAC_AUTO_JIT", "XLAC_FLAGS", "GOMP_SPINCOUNT", "OPENBLAS_NUM_THREADS")}
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = "10000"
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ["XLAC_AUTO_JIT"] = "2"
    os.environ["XLAC_FLAGS"] = "--cache_dir=%s" % os.path.join(args.tmp, "ort-ep-cache")
    try:
        ort.register_execution_provider_library(ORT_EP, lib)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    args.ort_ep_registered = True


def first_run(xlac, path, feed, tmp):
    """Cold and warm first runs (process wall seconds), the process load and the steady ms."""
    cache = os.path.join(tmp, "first-cache")
    shutil.rmtree(cache, ignore_errors=True)
    saved = xlac.cache_dir
    try:
        xlac.cache_dir = cache
        cold = xlac.run(path, [feed], True, 1, 0)[2]
        warm_ms, stats, warm = xlac.run(path, [feed], True, 1, 0)
        op_ms, _, op_wall = xlac.run(path, [feed], False, 1, 0)
        return {"cold_s": cold, "warm_s": warm, "load_ms": op_wall * 1e3 - op_ms,
                "warm_compiles": stats.get("compiles", float("nan"))}
    finally:
        xlac.cache_dir = saved
        shutil.rmtree(cache, ignore_errors=True)


# ---------------------------------------------------------------- one model, one batch

def bench_one(torch, name, batch, args, xlac, tmp):
    row = {"name": name, "batch": batch, "label": MODELS[name][1], "ms": {}, "check": {}}
    folder = os.path.join(args.cache, "%s.b%d.%s" % (name, batch, config_key(name)))
    module, inputs, path, feed = export(torch, name, batch, folder)
    row["conv_flops"], row["prod_flops"], unknown = count_flops(path)
    if unknown:
        log("   FLOPs: %d ops with unknown shapes not counted (%s ...)" % (len(unknown), unknown[0]))
    row["flops_unknown"] = len(unknown)
    work = os.path.join(tmp, "%s.b%d" % (name, batch))
    os.makedirs(work, exist_ok=True)
    xlac.cache_dir = os.path.join(work, "cache")
    rt = Runtimes(args, xlac, torch, module, inputs, path, feed, work)
    want = rt.ort_session()()
    row["out_max"] = float(np.max(np.abs(want)))
    log("   onnxruntime output %s, max |y| %.3g" % (list(want.shape), row["out_max"]))
    row["check"], calls = rt.check(want)
    row["first_call_s"] = rt.first_call_s
    row["clusters"] = getattr(rt, "cl_stats", {}).get("clusters")
    good = [k for k in RUNTIMES if k in row["check"] and not row["check"][k][2]]
    per = {k: [] for k in good}
    for r in range(args.rounds):
        for k in good:  # alternate the runtimes within each round
            time.sleep(args.pause)  # let the previous runtime's spinning threads go idle
            per[k].append(rt.time_xlac(k) if k.startswith("xlac") else rt.time_in_process(calls[k]))
        log("   round %d: %s" % (r + 1, ", ".join("%s %.2f" % (k, per[k][-1]) for k in good)))
    row["ms"] = {k: statistics.median(v) for k, v in per.items() if v}  # none with --rounds 0
    if "xlac_cl" in good and not args.no_first_run and args.rounds:
        firsts = [first_run(xlac, path, feed, work) for _ in range(max(1, min(args.rounds, 3)))]
        for k in ("cold_s", "warm_s", "load_ms"):
            row[k] = statistics.median(f[k] for f in firsts)
        row["warm_compiles"] = max(f["warm_compiles"] for f in firsts)
        log("   first run: cold %.2f s, warm %.2f s, load %.0f ms" % (row["cold_s"], row["warm_s"],
                                                                     row["load_ms"]))
    del calls, rt
    return row


# ---------------------------------------------------------------- report

def fmt(v, spec="%.2f"):
    return spec % v if isinstance(v, (int, float)) and v == v else "—"


def cell(row, k):
    why = row["check"].get(k, (0, 0, "not run"))[2]
    if why == "not run":
        return "—"
    if why:
        return "**WRONG**" if "relative" in why or "shape" in why or "non-finite" in why else "**FAILED**"
    return fmt(row["ms"].get(k))


def table(rows, peak):
    """Two tables: the times, then FLOPs, fraction of peak and the first run."""
    times = ["| model | batch | %s | clustered / onnxruntime | xlac EP / onnxruntime | clustered / op by op | "
             "clusters | worst rel. error |" % " | ".join(LABELS[k] + " ms" for k in RUNTIMES),
             "|" + "---|" * (len(RUNTIMES) + 7)]
    other = ["| model | batch | GFLOP conv + product | GFLOP/s clustered (% of peak) | "
             "GFLOP/s onnxruntime (% of peak) | first run cold s | first run warm s | steady + load ms | "
             "warm / (steady + load) | compiles in the warm run | torch.compile first call s |",
             "|" + "---|" * 11]
    for r in rows:
        if "error" in r:
            times.append("| %s | %d | failed: %s |%s" % (r["name"], r["batch"], r["error"].replace("|", "/"),
                                                        " |" * (len(RUNTIMES) + 4)))
            continue
        ms = r["ms"]
        gflop = (r["conv_flops"] + r["prod_flops"]) * 1e-9

        def rate(k):
            if k not in ms or not gflop:
                return "—"
            g = gflop / (ms[k] * 1e-3)
            return "%.1f (%.0f%%)" % (g, 100 * g / peak) if peak == peak and peak else "%.1f" % g
        ratio = lambda a, b: fmt(ms[b] / ms[a]) + "x" if a in ms and b in ms else "—"
        steady_load = ms["xlac_cl"] + r["load_ms"] if "xlac_cl" in ms and "load_ms" in r else float("nan")
        warm_ratio = r["warm_s"] * 1e3 / steady_load if "warm_s" in r else float("nan")
        cold_flag = " (over)" if r.get("cold_s", 0) > COLD_TARGET_S else ""
        warm_flag = " (over)" if warm_ratio > WARM_TARGET else ""
        rels = [v[0] for k, v in r["check"].items() if k != "ov_default" and v[0] == v[0]]
        times.append("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
            r["label"], r["batch"], " | ".join(cell(r, k) for k in RUNTIMES),
            ratio("xlac_cl", "ort"), ratio("ort_ep", "ort"), ratio("xlac_cl", "xlac_op"),
            fmt(r.get("clusters"), "%.0f"),
            fmt(max(rels) if rels else float("nan"), "%.1e")))
        other.append("| %s | %d | %s + %s%s | %s | %s | %s%s | %s | %s | %s%s | %s | %s |" % (
            r["label"], r["batch"], fmt(r["conv_flops"] * 1e-9), fmt(r["prod_flops"] * 1e-9),
            " (%d ops of unknown shape left out)" % r["flops_unknown"] if r["flops_unknown"] else "",
            rate("xlac_cl"), rate("ort"), fmt(r.get("cold_s")), cold_flag, fmt(r.get("warm_s")),
            fmt(steady_load, "%.0f"), fmt(warm_ratio), warm_flag, fmt(r.get("warm_compiles"), "%.0f"),
            fmt(r.get("first_call_s"), "%.1f")))
    return "\n".join(times) + "\n\n" + "\n".join(other)


def failures(rows):
    out = []
    for r in rows:
        if "error" in r:
            out.append("- %s batch %d: %s" % (r["name"], r["batch"], r["error"]))
            continue
        for k, (_, _, why) in r["check"].items():
            if why:
                out.append("- %s batch %d, %s: %s" % (r["name"], r["batch"], LABELS[k], why))
    return out


def markdown(rows, info, args):
    md = [HEADING, "",
          "Written by `%s` on %s, commit %s. Machine: %s, %d CPUs; load average %.2f at the start and "
          "%.2f at the end. %d threads for every runtime. Versions: %s." % (
              info["command"], info["date"], info["commit"], info["cpu"], os.cpu_count() or 0,
              info["load"][0], info["load"][1], args.threads, info["versions"]), "",
          "f32 peak, measured in this run (bench/peak.c: oneDNN `dnnl_sgemm` %s, best of 10, %d threads): "
          "**%.1f GFLOP/s**." % ("x".join(["2048"] * 3), args.threads, info["peak"]), "",
          "Models exported by `torch.onnx.export(..., dynamo=True)` (torch's default exporter) from "
          "transformers and torchvision architectures with random weights, one fixed-shape export per "
          "batch. Times are medians over %d rounds (runtimes alternating within a round) of each "
          "round's median ms over at least %.2g s. Every runtime's output is checked against "
          "onnxruntime's before it is timed (relative L2 ≤ %.0e; OpenVINO's default precision, bf16 on "
          "this CPU, ≤ %.0e); **WRONG** marks a disagreement, **FAILED** a runtime that could not run "
          "the model, and neither is timed. onnxruntime: CPU execution provider, default graph "
          "optimizations. OpenVINO: `PERFORMANCE_HINT=LATENCY`, `INFERENCE_PRECISION_HINT=f32` and, "
          "apart, its default precision. torch.compile: default mode, "
          "`torch._inductor.config.freezing = True`, on the torch module that was exported, timed "
          "after warm-up (its first call in its own column). xlac: `xlac-run` op by op, and clustered "
          "with `LD_PRELOAD=libxlac.so XLAC_AUTO_JIT=2` (warm disk cache). onnxruntime + xlac EP: the same "
          "onnxruntime with `XlacExecutionProvider` (libxlac_ort_ep.so, XLAC_AUTO_JIT=2, in the bench's "
          "process; its fused nodes run on an OpenMP team of the same thread count, and "
          "`session.intra_op.allow_spinning=0`, as xlac.ort's import hook sets it, so that onnxruntime's "
          "threads do not spin on the team's cores; timed warm; target "
          "≥ 1.0× onnxruntime on every model, ≥ 1.15× on transformers at batch 1). GFLOP counts convolutions "
          "and products from the ONNX graph. First run: one clustered `xlac-run` process, wall clock "
          "from start to exit, with an empty xlac cache (cold) and the cache it filled (warm); load: an "
          "op-by-op process's wall clock minus its one run. Targets: clustered ≥ 1.0× onnxruntime "
          "(≥ 1.2× on transformers), ≥ 70 %% of peak on ResNet, GPT-2, BERT, ViT at batch 8, cold ≤ %.1f s, "
          "warm ≤ %.1f × (steady + load)." % (args.rounds, args.min_seconds, REL_TOL, LOOSE_REL_TOL,
                                              COLD_TARGET_S, WARM_TARGET), "",
          table(rows, info["peak"]), "",
          "![real models: speed against onnxruntime](models.svg)", ""]
    bad = failures(rows)
    md += ["Disagreements and failures:", ""] + (bad or ["- none: every runtime agreed with onnxruntime"])
    return "\n".join(md) + "\n"


def replace_section(path, text):
    old = open(path).read() if os.path.exists(path) else ""
    start = old.find(HEADING)
    if start < 0:
        new = old.rstrip() + "\n\n" + text
    else:
        ends = [e for e in (old.find("\n## ", start + len(HEADING)),
                            old.find("\nMissing peers and why:", start)) if e >= 0]  # bench.py's tail
        end = min(ends) if ends else -1
        new = old[:start] + text + ("\n" + old[end + 1:] if end >= 0 else "")
    with open(path, "w") as f:
        f.write(new)


SVG_COLORS = {"xlac_op": "#9bb7de", "xlac_cl": "#3b6fb6", "ort_ep": "#b63b8f", "ov_f32": "#e8893a",
              "ov_default": "#f3c08f",
              "torch_compile": "#5aa25a"}


def svg_plot(rows, path):
    """Per model and batch, each runtime's speed relative to onnxruntime (ORT ms / its ms)."""
    keys = [k for k in RUNTIMES if k != "ort"]
    rows = [r for r in rows if "error" not in r and "ort" in r["ms"]]
    bar, gap, left, top = 7, 10, 250, 60
    h = top + len(rows) * (len(keys) * bar + gap) + 30
    w = 900
    vals = [r["ms"]["ort"] / r["ms"][k] for r in rows for k in keys if k in r["ms"]]
    vmax = max(vals + [1.5])
    scale = (w - left - 60) / vmax
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="11">' % (w, h), '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="18" font-size="14">Real models: speed relative to onnxruntime '
           '(onnxruntime ms / runtime ms; right of the line is faster)</text>']
    x = 10
    for k in keys:
        out.append('<rect x="%d" y="30" width="10" height="10" fill="%s"/><text x="%d" y="39">%s</text>' %
                   (x, SVG_COLORS[k], x + 14, LABELS[k]))
        x += 30 + 7 * len(LABELS[k])
    y = top
    for r in rows:
        out.append('<text x="10" y="%d">%s, batch %d</text>' % (y + len(keys) * bar // 2 + 4,
                                                              r["label"].split(" (")[0], r["batch"]))
        for i, k in enumerate(keys):
            if k in r["ms"]:
                v = r["ms"]["ort"] / r["ms"][k]
                out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>' %
                           (left, y + i * bar, v * scale, bar - 1, SVG_COLORS[k]))
                if k in ("xlac_cl", "ort_ep"):
                    out.append('<text x="%.1f" y="%d" font-size="9">%.2fx</text>' %
                               (left + v * scale + 3, y + i * bar + bar - 1, v))
        y += len(keys) * bar + gap
    out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black" stroke-dasharray="4,3"/>' %
               (left + scale, top - 6, left + scale, y))
    out.append('<text x="%.1f" y="%d">1.0x</text>' % (left + scale - 8, y + 14))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


# ---------------------------------------------------------------- machine

def measure_peak(args, tmp):
    """GFLOP/s of bench/peak.c, or NaN (said loudly) when it cannot be built or run."""
    try:
        return run_peak(args, tmp)
    except (OSError, subprocess.CalledProcessError, AttributeError) as e:
        log("!!! no f32 peak (bench/peak.c needs cc and libdnnl-dev): %s" % e)
        return float("nan")


def run_peak(args, tmp):
    exe = os.path.join(tmp, "peak")
    subprocess.run(["cc", "-O3", "-fopenmp", os.path.join(HERE, "peak.c"), "-o", exe, "-ldnnl"], check=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    p = subprocess.run([exe, "2048", "2048", "2048", "10"], capture_output=True, text=True, env=env, check=True)
    return float(re.search(r"gflops=([\d.]+)", p.stdout).group(1))


def machine_info(args, torch):
    cpu = platform.processor() or "?"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    vers = ["torch %s" % torch.__version__]
    for mod in ("torchvision", "transformers", "onnx", "onnxscript", "onnxruntime", "openvino"):
        try:
            vers.append("%s %s" % (mod, __import__(mod).__version__))
        except Exception:
            vers.append("%s missing" % mod)
    return {"cpu": cpu, "commit": commit + (" (with local changes)" if dirty else ""),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "versions": ", ".join(vers), "command": args.command}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--only", default=",".join(MODELS), help="models, comma-separated: %s" % ",".join(MODELS))
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--rounds", type=int, default=5, help="0: export and check the outputs only")
    ap.add_argument("--min-seconds", type=float, default=1.0,
                    help="each runtime is timed for at least this long per round")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1)))
    ap.add_argument("--runtimes", default=",".join(RUNTIMES), help="default: all of %s" % ",".join(RUNTIMES))
    ap.add_argument("--pause", type=float, default=0.2, help="seconds of rest before each runtime's timing")
    ap.add_argument("--no-first-run", action="store_true", help="skip the cold and warm first runs")
    ap.add_argument("--cache", default=os.path.join(HERE, "out", "real"),
                    help="export cache (a folder per torch version inside)")
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"),
                    help="the markdown file whose '%s' section is replaced" % HEADING)
    ap.add_argument("--svg", default=None, help="the plot (default: models.svg beside --results)")
    ap.add_argument("--command", default="bench/run.sh --real " + " ".join(sys.argv[1:]),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n]
    for n in names:
        if n not in MODELS:
            ap.error("unknown model %s (known: %s)" % (n, ", ".join(MODELS)))
    batches = [int(b) for b in args.batches.split(",") if b]
    args.runtimes = set(args.runtimes.split(",")) | {"ort"}
    args.svg = args.svg or os.path.join(os.path.dirname(os.path.abspath(args.results)), "models.svg")
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[v] = str(args.threads)

    import torch
    torch.set_num_threads(args.threads)
    torch.backends.mha.set_fastpath_enabled(False)
    args.cache = os.path.join(args.cache, "torch-" + torch.__version__.replace("+", "_"))
    info = machine_info(args, torch)
    load0 = os.getloadavg()[0]
    tmp = tempfile.mkdtemp(prefix="xlac-real-")
    args.tmp = tmp
    rows = []
    try:
        info["peak"] = measure_peak(args, tmp)
        log("f32 peak (oneDNN sgemm 2048^3, %d threads): %.1f GFLOP/s" % (args.threads, info["peak"]))
        xlac = Xlac(args.build, os.path.join(tmp, "cache"))
        for name in names:
            for b in batches:
                log("== %s batch %d" % (name, b))
                t0 = time.perf_counter()
                try:
                    rows.append(bench_one(torch, name, b, args, xlac, tmp))
                except Exception as e:  # reported in the table, never dropped
                    log("   !!! %s batch %d failed: %s" % (name, b, e))
                    rows.append({"name": name, "batch": b, "error": error_line(e)[:200]})
                log("   (%.0f s)" % (time.perf_counter() - t0))
        info["load"] = (load0, os.getloadavg()[0])
        text = markdown(rows, info, args)
        replace_section(args.results, text)
        svg_plot(rows, args.svg)
        print(text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    bad = failures(rows)
    if bad:
        log("real models: %d disagreement(s) or failure(s):\n%s" % (len(bad), "\n".join(bad)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
