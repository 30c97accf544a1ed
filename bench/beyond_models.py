#!/usr/bin/env python3
"""Beyond the real-models bench (issue 37): what users run besides f32 transformers and convnets,
timed in xlac and its peers in one run. Run it through `bench/run.sh --beyond`.

Families (torch modules with random weights, configs in code, nothing downloaded; no torchvision):
- int8, dynamic: the real-models BERT (the same module and export as bench/real_models.py's `bert`,
  so its f32 row there is the counterpart), quantized by onnxruntime.quantization.quantize_dynamic
  (QInt8 weights: DynamicQuantizeLinear + MatMulInteger);
- int8, static: a small ResNet (ResNet-10-shaped, BasicBlocks, 64x64 images), quantized by
  quantize_static (QDQ, uint8 activations, int8 weights per channel, MinMax over a few calibration
  batches; quant_pre_process first), with the f32 row of the same net beside it; the same
  quantization in QOperator format (QLinearConv, and onnxruntime's com.microsoft QLinearAdd and
  QLinearGlobalAveragePool), and the ResNet through quantize_dynamic (ConvInteger);
- fp16: the same BERT and ResNet converted by onnxruntime.transformers.float16's
  convert_float_to_float16(keep_io_types=True);
- an LSTM + GRU text classifier, a diffusion-style UNet (GroupNorm, SiLU, timestep embedding,
  self-attention at the lowest resolution), DeBERTa-v2, Wav2Vec2 (1 s of 16 kHz audio), SegFormer
  (a segmentation net, MiT-b0-shaped), and one KV-cache decode step of a Qwen2-style decoder (GQA,
  past length PAST, logits and the present keys and values as outputs);
each at batch 1 and 8 (one fixed-shape export per batch, cached under bench/out/beyond/), exported by
`torch.onnx.export(..., dynamo=True)` as real_models.py does, falling back to the TorchScript
exporter (dynamo=False) where that fails; the table says which one each model needed.

Per model and batch: correctness first, then timing, exactly as real_models.py does (its Runtimes'
timing: alternating rounds, each runtime timed for at least --min-seconds a round, the median over
rounds of each round's median ms; the same thread count everywhere). onnxruntime is the reference:
f32 models within real_models.py's bounds (OpenVINO's default precision, bf16 where the CPU has it,
within its loose bound); int8 and fp16 models within the format's own error, as
bench/quantized_probe.py bounds it: max |runtime - onnxruntime| / max |onnxruntime| <= max(2e-2,
max |onnxruntime(int8 or fp16) - onnxruntime(f32)| / max |onnxruntime(f32)|), every output checked;
an int8 model's runtime also passes within that bound of the QDQ reference (onnxruntime with graph
optimizations off: node by node), since without VNNI onnxruntime's fused kernels saturate.
Runtimes: xlac op by op, xlac clustered (LD_PRELOAD=libxlac.so XLAC_AUTO_JIT=2), onnxruntime,
OpenVINO with the f32 hint and, on the int8 models, with its default (its int8 path; on every model
with --ov-default-all),
torch.compile where it runs the model (f32 models, and fp16 ones as module.half(); the ONNX int8
models have no torch counterpart). A model a runtime cannot import or run is a cell that says
FAILED, with its first error line in the row and below the table, never a crash of the bench.

Writes its own section of bench/RESULTS.md (replaced on each run; --results elsewhere) with the ISA
and the machine's load, and prints it.

    bench/run.sh --beyond [--only bert_int8,decode] [--batches 1,8] [--rounds 5] [--tiny]
"""

import argparse
import contextlib
import hashlib
import inspect
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import real_models as rm  # noqa: E402  (its timing, checks and helpers; not edited here)
from bench import Xlac  # noqa: E402

HEADING = "## Beyond the bench: quantized, half-precision, recurrent and conv-heavy models"
RUNTIMES = ["xlac_op", "xlac_cl", "ort", "ov_f32", "ov_default", "torch_compile"]
LABELS = dict(rm.LABELS)
FORMAT_FLOOR = 2e-2   # quantized_probe.py's floor of the int8/fp16 bound (max abs / max |ref|)
PAST = 16             # the decode step's past length

# sizes; --tiny shrinks them for smoke tests (a separate export cache key)
FULL = dict(seq=128, vocab=8192, image=64, cnn_widths=(32, 64, 128, 256), lstm_seq=32, lstm_hidden=128,
            unet_image=32, unet_ch=64, deberta_layers=2, wav_samples=16000, wav_conv=128, seg_image=128,
            dec_layers=4, dec_hidden=256, dec_heads=4, dec_kv_heads=2, dec_ffn=688, hidden=256, layers=4)
TINY = dict(seq=16, vocab=512, image=32, cnn_widths=(8, 16, 16, 32), lstm_seq=8, lstm_hidden=16,
            unet_image=16, unet_ch=16, deberta_layers=1, wav_samples=3200, wav_conv=16, seg_image=32,
            dec_layers=1, dec_hidden=64, dec_heads=4, dec_kv_heads=2, dec_ffn=128, hidden=64, layers=1)
S = dict(FULL)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- models, configs in code

def bert(torch):
    """real_models.py's BERT (at full size the same module, seed and export)."""
    if S == FULL:
        return rm.make_module(torch, "bert")[0]
    from transformers import BertConfig, BertModel
    c = BertConfig(vocab_size=S["vocab"], hidden_size=S["hidden"], num_hidden_layers=S["layers"],
                   num_attention_heads=4, intermediate_size=4 * S["hidden"], max_position_embeddings=S["seq"])
    return rm._hidden(torch)(BertModel(c, add_pooling_layer=False), "text")


def text_inputs(batch, seed=11):
    if S == FULL:
        return rm.make_inputs("text", batch, seed)
    g = np.random.default_rng(seed)
    mask = np.ones((batch, S["seq"]), np.int64)
    mask[-1, S["seq"] - 4:] = 0
    return {"input_ids": g.integers(1, S["vocab"], (batch, S["seq"])).astype(np.int64), "attention_mask": mask}


def image_inputs(name, size, channels=3):
    return lambda batch, seed=11: {name: np.random.default_rng(seed).uniform(
        -1, 1, (batch, channels, size, size)).astype(np.float32)}


def calibrate_bn(torch, m, shape):
    """BatchNorm statistics of random inputs, as real_models.calibrated does (the initial ones
    shrink a random net's activations towards denormals)."""
    bns = [b for b in m.modules() if isinstance(b, torch.nn.modules.batchnorm._BatchNorm)]
    for b in bns:
        b.reset_running_stats()
        b.momentum = None
    g = torch.Generator().manual_seed(1)
    m.train()
    with torch.no_grad():
        for _ in range(2):
            m(torch.rand(*shape, generator=g) * 2 - 1)
    return m.eval()


def resnet(torch):
    """A ResNet-10-shaped net: a 3x3 stem, one BasicBlock per stage (stride 2 from the second),
    global average pool, a 10-way classifier."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    w = S["cnn_widths"]
    layers = [nn.Conv2d(3, w[0], 3, 1, 1, bias=False), nn.BatchNorm2d(w[0]), nn.ReLU()]
    cin = w[0]
    for i, c in enumerate(w):
        layers.append(Block(cin, c, 1 if i == 0 else 2))
        cin = c
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 10)]
    return calibrate_bn(torch, nn.Sequential(*layers), (4, 3, S["image"], S["image"]))


def lstm_gru(torch):
    """Embedding -> 1-layer LSTM -> 1-layer GRU -> a 10-way classifier on the last step."""
    nn = torch.nn
    h = S["lstm_hidden"]

    class Rnn(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(S["vocab"], h)
            self.lstm = nn.LSTM(h, h, batch_first=True)
            self.gru = nn.GRU(h, h, batch_first=True)
            self.fc = nn.Linear(h, 10)

        def forward(self, input_ids):
            y, _ = self.lstm(self.emb(input_ids))
            y, _ = self.gru(y)
            return self.fc(y[:, -1])
    return Rnn()


def lstm_inputs(batch, seed=11):
    return {"input_ids": np.random.default_rng(seed).integers(1, S["vocab"], (batch, S["lstm_seq"])).astype(np.int64)}


def unet(torch):
    """A diffusion-style UNet on a 4-channel latent: ResBlocks (GroupNorm, SiLU, conv, timestep
    embedding added), channel multipliers 1, 2, 2, self-attention at the lowest resolution, skip
    concatenations, nearest upsampling."""
    nn = torch.nn
    F = torch.nn.functional
    ch = S["unet_ch"]
    temb = 4 * ch

    class Res(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.n1, self.c1 = nn.GroupNorm(8, cin), nn.Conv2d(cin, cout, 3, padding=1)
            self.t = nn.Linear(temb, cout)
            self.n2, self.c2 = nn.GroupNorm(8, cout), nn.Conv2d(cout, cout, 3, padding=1)
            self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

        def forward(self, x, t):
            h = self.c1(F.silu(self.n1(x))) + self.t(t)[:, :, None, None]
            return self.skip(x) + self.c2(F.silu(self.n2(h)))

    class Attn(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.n, self.qkv, self.o = nn.GroupNorm(8, c), nn.Conv2d(c, 3 * c, 1), nn.Conv2d(c, c, 1)
            self.heads = 4

        def forward(self, x):
            b, c, hh, ww = x.shape
            q, k, v = self.qkv(self.n(x)).reshape(b, 3, self.heads, c // self.heads, hh * ww).unbind(1)
            a = torch.softmax(q.transpose(-1, -2) @ k * (c // self.heads) ** -0.5, dim=-1)
            return x + self.o((v @ a.transpose(-1, -2)).reshape(b, c, hh, ww))

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.t1, self.t2 = nn.Linear(ch, temb), nn.Linear(temb, temb)
            self.inp = nn.Conv2d(4, ch, 3, padding=1)
            self.d1, self.d2, self.d3 = Res(ch, ch), Res(ch, 2 * ch), Res(2 * ch, 2 * ch)
            self.down1, self.down2 = nn.Conv2d(ch, ch, 3, 2, 1), nn.Conv2d(2 * ch, 2 * ch, 3, 2, 1)
            self.mid1, self.mid_attn, self.mid2 = Res(2 * ch, 2 * ch), Attn(2 * ch), Res(2 * ch, 2 * ch)
            self.u3, self.u2, self.u1 = Res(4 * ch, 2 * ch), Res(4 * ch, 2 * ch), Res(3 * ch, ch)
            self.out_n, self.out = nn.GroupNorm(8, ch), nn.Conv2d(ch, 4, 3, padding=1)

        def forward(self, sample, timestep):
            half = ch // 2
            f = torch.exp(-torch.arange(half, dtype=torch.float32) * (9.210340371976184 / half))
            e = timestep[:, None] * f[None]
            t = self.t2(F.silu(self.t1(torch.cat([torch.sin(e), torch.cos(e)], dim=1))))
            h1 = self.d1(self.inp(sample), t)                      # ch, full
            h2 = self.d2(self.down1(h1), t)                        # 2ch, 1/2
            h3 = self.d3(self.down2(h2), t)                        # 2ch, 1/4
            m = self.mid2(self.mid_attn(self.mid1(h3, t)), t)
            u = self.u3(torch.cat([m, h3], 1), t)
            u = F.interpolate(u, scale_factor=2.0, mode="nearest")
            u = self.u2(torch.cat([u, h2], 1), t)
            u = F.interpolate(u, scale_factor=2.0, mode="nearest")
            u = self.u1(torch.cat([u, h1], 1), t)
            return self.out(F.silu(self.out_n(u)))
    return UNet()


def unet_inputs(batch, seed=11):
    g = np.random.default_rng(seed)
    return {"sample": g.standard_normal((batch, 4, S["unet_image"], S["unet_image"])).astype(np.float32),
            "timestep": g.uniform(0, 1000, (batch,)).astype(np.float32)}


def deberta(torch):
    from transformers import DebertaV2Config, DebertaV2Model
    c = DebertaV2Config(vocab_size=S["vocab"], hidden_size=S["hidden"], num_hidden_layers=S["deberta_layers"],
                        num_attention_heads=4, intermediate_size=4 * S["hidden"], max_position_embeddings=512,
                        relative_attention=True, position_buckets=64, max_relative_positions=-1,
                        pos_att_type=["p2c", "c2p"], norm_rel_ebd="layer_norm", share_att_key=True)
    return rm._hidden(torch)(DebertaV2Model(c), "text")


def wav2vec2(torch):
    from transformers import Wav2Vec2Config, Wav2Vec2Model
    c = Wav2Vec2Config(hidden_size=S["hidden"], num_hidden_layers=S["layers"], num_attention_heads=4,
                       intermediate_size=4 * S["hidden"], conv_dim=(S["wav_conv"],) * 7,
                       num_conv_pos_embeddings=32, num_conv_pos_embedding_groups=8,
                       mask_time_prob=0.0, do_stable_layer_norm=False, feat_extract_norm="group")

    class Wav(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = Wav2Vec2Model(c)

        def forward(self, input_values):
            return self.m(input_values=input_values).last_hidden_state
    return Wav()


def wav_inputs(batch, seed=11):
    return {"input_values": np.random.default_rng(seed).standard_normal((batch, S["wav_samples"])).astype(np.float32)}


def segformer(torch):
    from transformers import SegformerConfig, SegformerForSemanticSegmentation
    tiny = S != FULL
    c = SegformerConfig(num_channels=3, num_encoder_blocks=4, depths=[1] * 4 if tiny else [2, 2, 2, 2],
                        sr_ratios=[8, 4, 2, 1], hidden_sizes=[16, 16, 32, 32] if tiny else [32, 64, 160, 256],
                        num_attention_heads=[1, 2, 5, 8] if not tiny else [1, 1, 2, 2],
                        decoder_hidden_size=32 if tiny else 256, num_labels=19)

    class Seg(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = SegformerForSemanticSegmentation(c)

        def forward(self, pixel_values):
            return self.m(pixel_values=pixel_values).logits
    return calibrate_bn(torch, Seg(), (2, 3, S["seg_image"], S["seg_image"]))


def decoder(torch):
    """One decode step of a Qwen2-style decoder: the past keys and values in, the logits of one new
    token and the present keys and values out (a DynamicCache built inside from the inputs)."""
    from transformers import DynamicCache, Qwen2Config, Qwen2ForCausalLM
    c = Qwen2Config(vocab_size=S["vocab"], hidden_size=S["dec_hidden"], num_hidden_layers=S["dec_layers"],
                    num_attention_heads=S["dec_heads"], num_key_value_heads=S["dec_kv_heads"],
                    intermediate_size=S["dec_ffn"], max_position_embeddings=512, tie_word_embeddings=False)
    layers = S["dec_layers"]

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = Qwen2ForCausalLM(c)

        def forward(self, input_ids, attention_mask, position_ids, *past):
            cache = DynamicCache([(past[2 * i], past[2 * i + 1]) for i in range(layers)], config=c)
            out = self.m(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                         past_key_values=cache, use_cache=True)
            pkv = out.past_key_values
            res = [out.logits]
            for i in range(layers):
                res += [pkv.layers[i].keys, pkv.layers[i].values]
            return tuple(res)
    return Step()


def decoder_inputs(batch, seed=11):
    g = np.random.default_rng(seed)
    hd = S["dec_hidden"] // S["dec_heads"]
    mask = np.ones((batch, PAST + 1), np.int64)
    mask[-1, :3] = 0  # the last row left-padded
    feed = {"input_ids": g.integers(1, S["vocab"], (batch, 1)).astype(np.int64), "attention_mask": mask,
            "position_ids": np.full((batch, 1), PAST, np.int64)}
    for i in range(S["dec_layers"]):
        for kv in ("key", "value"):
            feed["past_%s_%d" % (kv, i)] = g.standard_normal((batch, S["dec_kv_heads"], PAST, hd)).astype(np.float32)
    return feed


def decoder_outputs():
    return ["logits"] + ["present_%s_%d" % (kv, i) for i in range(S["dec_layers"]) for kv in ("key", "value")]


# name: (module builder, inputs(batch), output names, label)
BASES = {
    "bert": (bert, text_inputs, lambda: ["y"],
             lambda: "BERT (%d layers, %d wide, 4 heads, %d tokens)" % (S["layers"], S["hidden"], S["seq"])),
    "resnet": (resnet, lambda b, seed=11: image_inputs("pixel_values", S["image"])(b, seed), lambda: ["y"],
               lambda: "ResNet-10 (%d², widths %s)" % (S["image"], "-".join(map(str, S["cnn_widths"])))),
    "lstm_gru": (lstm_gru, lstm_inputs, lambda: ["y"],
                 lambda: "LSTM + GRU classifier (%d wide, %d steps)" % (S["lstm_hidden"], S["lstm_seq"])),
    "unet": (unet, unet_inputs, lambda: ["y"],
             lambda: "UNet, diffusion-style (4x%d² latent, %d channels, attention at 1/4)" % (
                 S["unet_image"], S["unet_ch"])),
    "deberta": (deberta, text_inputs, lambda: ["y"],
                lambda: "DeBERTa-v2 (%d layers, %d wide, 4 heads, %d tokens)" % (
                    S["deberta_layers"], S["hidden"], S["seq"])),
    "wav2vec2": (wav2vec2, wav_inputs, lambda: ["y"],
                 lambda: "Wav2Vec2 (%d layers, %d wide, convs %d wide, %.1f s at 16 kHz)" % (
                     S["layers"], S["hidden"], S["wav_conv"], S["wav_samples"] / 16000)),
    "segformer": (segformer, lambda b, seed=11: image_inputs("pixel_values", S["seg_image"])(b, seed), lambda: ["y"],
                  lambda: "SegFormer (MiT-b0-shaped, %d², 19 classes)" % S["seg_image"]),
    "decode": (decoder, decoder_inputs, decoder_outputs,
               lambda: "Qwen2-style decode step (%d layers, %d wide, %d/%d heads, past %d)" % (
                   S["dec_layers"], S["dec_hidden"], S["dec_heads"], S["dec_kv_heads"], PAST)),
}

# row name: (base, format); the table's rows in this order
MODELS = {
    "bert_int8": ("bert", "int8_dynamic"),
    "resnet": ("resnet", "f32"),
    "resnet_int8": ("resnet", "int8_static"),
    "resnet_int8_qop": ("resnet", "int8_qoperator"),
    "resnet_int8_dyn": ("resnet", "int8_dynamic"),
    "bert_fp16": ("bert", "fp16"),
    "resnet_fp16": ("resnet", "fp16"),
    "lstm_gru": ("lstm_gru", "f32"),
    "unet": ("unet", "f32"),
    "deberta": ("deberta", "f32"),
    "wav2vec2": ("wav2vec2", "f32"),
    "segformer": ("segformer", "f32"),
    "decode": ("decode", "f32"),
}
FORMAT_LABELS = {"f32": "", "int8_dynamic": ", int8 `quantize_dynamic`", "int8_static": ", int8 `quantize_static` QDQ",
                 "int8_qoperator": ", int8 `quantize_static` QOperator",
                 "fp16": ", fp16"}


def config_key(base):
    fn, inputs, outputs, label = BASES[base]
    src = inspect.getsource(fn) + label() + repr(sorted(S.items())) + repr(PAST) + inspect.getsource(inputs)
    src += "".join(inspect.getsource(f) for f in (calibrate_bn, export, rm._hidden))
    return hashlib.sha1(src.encode()).hexdigest()[:8]


def make_module(torch, base):
    torch.manual_seed(0)
    return BASES[base][0](torch).eval()


# ---------------------------------------------------------------- export, quantization, fp16

def export(torch, module, inputs, names, path):
    """torch.onnx.export with dynamo=True, the TorchScript exporter where that fails; returns which."""
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    with torch.no_grad(), contextlib.redirect_stdout(sys.stderr):
        try:
            torch.onnx.export(module, args, path, dynamo=True, input_names=list(inputs), output_names=names)
            return "dynamo"
        except Exception as e:
            why = export_error(e)
            log("   dynamo export failed (%s); the TorchScript exporter instead" % why)
            for f in os.listdir(os.path.dirname(path)):
                os.remove(os.path.join(os.path.dirname(path), f))
            torch.onnx.export(module, args, path, dynamo=False, input_names=list(inputs), output_names=names,
                              opset_version=17)
            return "TorchScript (dynamo failed: %s)" % why


def export_error(e):
    """The first line of the innermost cause of a failed export (torch.onnx's own message only says
    which step failed and to read the stack trace)."""
    while e.__cause__ is not None or e.__context__ is not None:
        e = e.__cause__ or e.__context__
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()] or ["?"]
    return ("%s: %s" % (type(e).__name__, lines[0]))[:160]


def exported(torch, base, batch, cache):
    """(module, inputs, folder): folder/model.onnx (+ .data), folder/feed/*.npy, folder/exporter."""
    folder = os.path.join(cache, "%s.b%d.%s" % (base, batch, config_key(base)))
    module = make_module(torch, base)
    inputs = BASES[base][1](batch)
    if not os.path.exists(os.path.join(folder, "model.onnx")):
        tmp = folder + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(os.path.join(tmp, "onnx"))
        t0 = time.perf_counter()
        how = export(torch, module, inputs, BASES[base][2](), os.path.join(tmp, "onnx", "model.onnx"))
        for f in os.listdir(os.path.join(tmp, "onnx")):
            os.rename(os.path.join(tmp, "onnx", f), os.path.join(tmp, f))
        os.rmdir(os.path.join(tmp, "onnx"))
        os.makedirs(os.path.join(tmp, "feed"))
        for k, v in inputs.items():
            np.save(os.path.join(tmp, "feed", k + ".npy"), v)
        with open(os.path.join(tmp, "exporter"), "w") as f:
            f.write(how + "\n")
        shutil.rmtree(folder, ignore_errors=True)
        os.rename(tmp, folder)
        log("   exported %s batch %d in %.1f s (%s)" % (base, batch, time.perf_counter() - t0, how.split(" (")[0]))
    return module, inputs, folder


class Calibration:
    """quantize_static's calibration reader: CALIB_IMAGES seeded random images in batches of the
    model's own size (the same images, so batch 1 and batch 8 get the same scales)."""
    CALIB_IMAGES = 16

    def __init__(self, name, batch, size):
        imgs = np.random.default_rng(5).uniform(-1, 1, (self.CALIB_IMAGES, 3, size, size)).astype(np.float32)
        self.batches = [{name: imgs[i:i + batch]} for i in range(0, self.CALIB_IMAGES, batch)]

    def get_next(self):
        return self.batches.pop(0) if self.batches else None

    def rewind(self):
        pass


def derived(folder, fmt, inputs):
    """folder/model.<fmt>.onnx from folder/model.onnx, made once."""
    import onnx
    src = os.path.join(folder, "model.onnx")
    dst = os.path.join(folder, "model.%s.onnx" % fmt)
    if os.path.exists(dst):
        return dst
    t0 = time.perf_counter()
    tmp = dst + ".tmp.onnx"
    if fmt == "int8_dynamic":
        from onnxruntime.quantization import QuantType, quantize_dynamic
        quantize_dynamic(src, tmp, weight_type=QuantType.QInt8)
    elif fmt in ("int8_static", "int8_qoperator"):
        from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
        from onnxruntime.quantization.shape_inference import quant_pre_process
        pre = os.path.join(folder, "model.pre.onnx")
        try:
            quant_pre_process(src, pre)
        except Exception as e:  # the pre-processing is advice, not a requirement
            log("   quant_pre_process failed (%s); quantizing the export as it is" % rm.error_line(e))
            pre = src
        name, x = next(iter(inputs.items()))
        qf = QuantFormat.QDQ if fmt == "int8_static" else QuantFormat.QOperator
        quantize_static(pre, tmp, Calibration(name, x.shape[0], x.shape[-1]), quant_format=qf,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True,
                        calibrate_method=CalibrationMethod.MinMax)
    elif fmt == "fp16":
        from onnxruntime.transformers.float16 import convert_float_to_float16
        onnx.save(convert_float_to_float16(onnx.load(src), keep_io_types=True), tmp)
    else:
        raise ValueError(fmt)
    os.rename(tmp, dst)
    log("   %s made in %.1f s" % (fmt, time.perf_counter() - t0))
    return dst


# ---------------------------------------------------------------- runtimes

def format_error(want, got):
    """max |got - want| / max |want| over every output (quantized_probe.py's measure)."""
    worst = 0.0
    for w, g in zip(want, got):
        w64, g64 = np.asarray(w, np.float64), np.asarray(g, np.float64)
        if w64.shape != g64.shape:
            return float("inf")
        if not np.all(np.isfinite(g64)):
            return float("nan")
        worst = max(worst, float(np.max(np.abs(g64 - w64)) / max(float(np.max(np.abs(w64))), 1e-30)))
    return worst


class Runtimes(rm.Runtimes):
    """real_models.py's runtimes with every output checked, the format's bound for int8 and fp16
    models and torch.compile on a module of its own (None: no torch counterpart). Its timing
    (time_in_process, time_xlac) is real_models.py's, unchanged."""

    def __init__(self, args, xlac, torch, tc_module, inputs, path, feed, work, outputs, bound, ov_default=True):
        super().__init__(args, xlac, torch, tc_module, inputs, path, feed, work)
        self.outputs, self.bound, self.ov_default = outputs, bound, ov_default
        self.reference = None  # a quantized model's QDQ reference output (ort_session(reference=True))

    def ort_session(self, reference=False):
        """onnxruntime's default session; reference: with graph optimizations off, so that a QDQ model
        runs node by node (DequantizeLinear, the f32 op, QuantizeLinear), the format's reference
        semantics, instead of onnxruntime's fused int8 kernels."""
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        if reference:
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            return lambda: ort.InferenceSession(self.path, so, providers=["CPUExecutionProvider"]).run(
                self.outputs, self.inputs)
        self.ort = ort.InferenceSession(self.path, so, providers=["CPUExecutionProvider"])
        return lambda: self.ort.run(self.outputs, self.inputs)

    def ov_model(self, precision):
        import openvino as ov
        cfg = {"INFERENCE_NUM_THREADS": self.threads, "PERFORMANCE_HINT": "LATENCY"}
        if precision:
            cfg["INFERENCE_PRECISION_HINT"] = precision
        compiled = ov.Core().compile_model(self.path, "CPU", cfg)
        req = compiled.create_infer_request()
        feeds = {}
        for i in compiled.inputs:  # a port has several names (fp16 models: the input and its Cast's)
            name = [n for n in i.get_names() if n in self.inputs]
            if not name:
                raise KeyError("OpenVINO input %s is none of %s" % (sorted(i.get_names()), list(self.inputs)))
            feeds[name[0]] = self.inputs[name[0]]
        index = {}
        for k, o in enumerate(compiled.outputs):
            for n in o.get_names():
                index[n] = k
        order = [index[n] for n in self.outputs]

        def run():
            req.infer(feeds)
            return [np.array(req.get_output_tensor(k).data, copy=True) for k in order]
        return run

    def torch_compiled(self):
        if self.module is None:
            raise NotImplementedError("no torch counterpart of this ONNX model")
        torch = self.torch
        torch.set_num_threads(self.threads)
        import torch._inductor.config as icfg
        icfg.freezing = True
        torch._dynamo.reset()
        fn = torch.compile(self.module)
        args = tuple(torch.from_numpy(v) for v in self.inputs.values())

        def run():
            with torch.no_grad():
                out = fn(*args)
            return [o.float().numpy() for o in (out if isinstance(out, (tuple, list)) else (out,))]
        t0 = time.perf_counter()
        run()
        self.first_call_s = time.perf_counter() - t0
        return run

    def xlac_first_error(self, clustered):
        """xlac-run's first error line (and, for an import failure, its first node's), from a run of its
        own: bench.Xlac keeps only the end of stderr, where an import failure lists every node."""
        cmd = [self.xlac.run_bin, self.path, "--iterations", "1", "--warmup", "0", "--feed", self.feed]
        try:
            p = subprocess.run(cmd, env=self.xlac.env(clustered), capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.SubprocessError):
            return None
        lines = [ln.strip() for ln in p.stderr.splitlines()
                 if ln.strip() and not ln.startswith(("xlac: stats", "xlac: timing"))]
        if p.returncode == 0 or not lines:
            return None
        first = lines[0]
        if "cannot import" in first and len(lines) > 1:
            first += " — first: " + lines[1]
        return first[:400]

    def verdict(self, key, want, got):
        if self.bound is None:  # f32: real_models.py's bounds, every output
            loose = (rm.LOOSE_REL_TOL, rm.LOOSE_ABS_TOL) if key == "ov_default" else ()
            res = [rm.compare(w, g, *loose) for w, g in zip(want, got)]
            if len(got) != len(want):
                return float("nan"), float("nan"), "shape: %d outputs, onnxruntime %d" % (len(got), len(want))
            bad = [r for r in res if r[2]]
            return bad[0] if bad else max(res, key=lambda r: r[0])
        err = format_error(want, got)
        bound = max(self.bound, rm.LOOSE_REL_TOL) if key == "ov_default" else self.bound
        if err > bound and self.reference is not None and format_error(self.reference, got) <= bound:
            return err, err, None  # onnxruntime's fused kernels are the farther ones (see reference)
        why = None if err <= bound else (
            "relative max abs error %.3g (bound %.3g, the format's own error)" % (err, bound)
            if err == err and err != float("inf") else "non-finite values or shape mismatch")
        return err, err, why

    def check(self, want):
        res, calls = {}, {}
        for key in RUNTIMES:
            if key not in self.args.runtimes:
                continue
            if key == "ort":
                res[key] = (0.0, 0.0, None)
                calls[key] = self.ort_run
                continue
            try:
                if key == "torch_compile" and self.module is None or key == "ov_default" and not self.ov_default:
                    res[key] = (float("nan"), float("nan"), "not run")
                    continue
                if key in ("xlac_op", "xlac_cl"):
                    out = os.path.join(self.work, key)
                    ms, stats, _ = self.xlac_run(key == "xlac_cl", 1, 1, save=out)
                    self.est_ms[key] = ms
                    if key == "xlac_cl":
                        self.cl_stats = stats
                    got = [np.load(os.path.join(out, n + ".npy")) for n in self.outputs]
                else:
                    fn = {"ov_f32": lambda: self.ov_model("f32"), "ov_default": lambda: self.ov_model(None),
                          "torch_compile": self.torch_compiled}[key]()
                    got = fn()
                    calls[key] = fn
                r = self.verdict(key, want, got)
            except Exception as e:
                msg = (key.startswith("xlac") and self.xlac_first_error(key == "xlac_cl")) or first_line(e)
                msg = msg.replace(os.path.dirname(self.path) + "/", "")
                r = (float("nan"), float("nan"), "%s: %s" % (type(e).__name__, msg))
            res[key] = r
            if r[2]:
                log("   !!! %s DISAGREES or FAILED: %s" % (LABELS[key], r[2]))
                calls.pop(key, None)
            else:
                log("   %s agrees: error %.2g" % (LABELS[key], r[0]))
        return res, calls


def first_line(e):
    """The first line of an error that says something (xlac-run's 'error:' line where it has one,
    leaving out the plugin's statistics lines), as the brief of issue 37 asks."""
    lines = [ln.strip() for ln in str(e).strip().splitlines()
             if ln.strip() and not ln.startswith(("xlac: stats", "xlac: timing"))] or ["?"]
    for ln in lines[1:]:
        if "error" in ln.lower() or "unsupported" in ln.lower() or "not supported" in ln.lower():
            return ln[:300]
    return lines[-1 if len(lines) > 1 and " failed (" in lines[0] else 0][:300]


# ---------------------------------------------------------------- one model, one batch

def bench_one(torch, name, batch, args, xlac, tmp):
    base, fmt = MODELS[name]
    row = {"name": name, "batch": batch, "label": BASES[base][3]() + FORMAT_LABELS[fmt], "ms": {}, "check": {}}
    module, inputs, folder = exported(torch, base, batch, args.cache)
    row["exporter"] = open(os.path.join(folder, "exporter")).read().strip()
    outputs = BASES[base][2]()
    f32_path = os.path.join(folder, "model.onnx")
    path = f32_path if fmt == "f32" else derived(folder, fmt, inputs)
    feed = os.path.join(folder, "feed")
    work = os.path.join(tmp, "%s.b%d" % (name, batch))
    os.makedirs(work, exist_ok=True)
    xlac.cache_dir = os.path.join(work, "cache")
    bound = None
    if fmt != "f32":  # the format's own error: onnxruntime on it against onnxruntime on the f32 model
        ref32 = Runtimes(args, xlac, torch, None, inputs, f32_path, feed, work, outputs, None).ort_session()()
        refq = Runtimes(args, xlac, torch, None, inputs, path, feed, work, outputs, None).ort_session()()
        row["format_error"] = format_error(ref32, refq)
        bound = max(FORMAT_FLOOR, row["format_error"])
        log("   %s: onnxruntime's %s output is %.3g of max |y| from its f32 output (bound %.3g)" % (
            name, fmt, row["format_error"], bound))
    tc_module = module
    if fmt.startswith("int8"):
        tc_module = None
    elif fmt == "fp16":
        tc_module = Half(torch, module)
    rt = Runtimes(args, xlac, torch, tc_module, inputs, path, feed, work, outputs, bound,
                  ov_default=fmt.startswith("int8") or args.ov_default_all)
    if fmt.startswith("int8"):
        # Without VNNI onnxruntime's u8 x s8 kernels saturate pairs of products in int16, and its
        # output can sit farther from the QDQ reference than the format's own error: a runtime is
        # also accepted within the bound of that reference (onnxruntime node by node).
        rt.reference = rt.ort_session(reference=True)()
        row["reference_error"] = format_error(rt.reference, refq)
        log("   %s: onnxruntime's fused output is %.3g of max |y| from its QDQ reference (node by node)" % (
            name, row["reference_error"]))
    rt.ort_run = rt.ort_session()
    want = rt.ort_run()
    row["out_max"] = max(float(np.max(np.abs(w))) for w in want)
    log("   onnxruntime outputs %s, max |y| %.3g" % (", ".join(str(list(w.shape)) for w in want), row["out_max"]))
    row["check"], calls = rt.check(want)
    row["first_call_s"] = rt.first_call_s
    row["clusters"] = getattr(rt, "cl_stats", {}).get("clusters")
    good = [k for k in RUNTIMES if k in row["check"] and not row["check"][k][2]]
    per = {k: [] for k in good}
    for r in range(args.rounds):
        for k in good:  # alternate the runtimes within each round (real_models.py's bench_one)
            time.sleep(args.pause)
            per[k].append(rt.time_xlac(k) if k.startswith("xlac") else rt.time_in_process(calls[k]))
        log("   round %d: %s" % (r + 1, ", ".join("%s %.2f" % (k, per[k][-1]) for k in good)))
    row["ms"] = {k: statistics.median(v) for k, v in per.items() if v}
    del calls, rt
    return row


def Half(torch, module):
    """The f32 module in half precision with f32 inputs and outputs (keep_io_types' counterpart)."""
    class HalfModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = module.half()

        def forward(self, *args):
            out = self.m(*(a.half() if a.is_floating_point() else a for a in args))
            return tuple(o.float() for o in out) if isinstance(out, tuple) else out.float()
    return HalfModule().eval()


# ---------------------------------------------------------------- report

def isa():
    flags = set()
    for line in open("/proc/cpuinfo"):
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    names = [("avx512f", "AVX-512"), ("avx512_vnni", "AVX-512 VNNI"), ("avx_vnni", "AVX-VNNI"),
             ("avx512_bf16", "AVX-512 BF16"), ("amx_bf16", "AMX-BF16"), ("amx_int8", "AMX-INT8"),
             ("avx512_fp16", "AVX-512 FP16"), ("f16c", "F16C")]
    have = [n for f, n in names if f in flags]
    base = "AVX2" if "avx2" in flags else "no AVX2"
    return base + (" + " + ", ".join(have) if have else "")


def cell(row, k):
    why = row["check"].get(k, (0, 0, "not run"))[2]
    if why == "not run":
        return "—"
    if why:
        return "**WRONG**" if why.startswith(("relative", "non-finite", "shape")) else "**FAILED**"
    return rm.fmt(row["ms"].get(k))


def table(rows):
    out = ["| model | batch | exporter | %s | clustered / onnxruntime | clustered / op by op | clusters | "
           "worst error (bound) | torch.compile first call s | why not run |" % " | ".join(
               LABELS[k] + " ms" for k in RUNTIMES),
           "|" + "---|" * (len(RUNTIMES) + 9)]
    for r in rows:
        if "error" in r:
            out.append("| %s | %d | failed: %s |%s" % (r["name"], r["batch"], r["error"].replace("|", "/"),
                                                      " |" * (len(RUNTIMES) + 6)))
            continue
        ms = r["ms"]
        ratio = lambda a, b: rm.fmt(ms[b] / ms[a]) + "x" if a in ms and b in ms else "—"
        errs = [v[0] for k, v in r["check"].items() if k != "ov_default" and v[0] == v[0]]
        bound = max(FORMAT_FLOOR, r["format_error"]) if "format_error" in r else None
        err = rm.fmt(max(errs) if errs else float("nan"), "%.1e")
        err += " (%.1e, max abs)" % bound if bound is not None else " (rel. L2)"
        out.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["label"], r["batch"], r["exporter"].split(" (")[0], " | ".join(cell(r, k) for k in RUNTIMES),
            ratio("xlac_cl", "ort"), ratio("xlac_cl", "xlac_op"), rm.fmt(r.get("clusters"), "%.0f"), err,
            rm.fmt(r.get("first_call_s"), "%.1f"), why_not(r).replace("|", "/")))
    return "\n".join(out)


def why_not(row):
    """The row's failed cells, each runtime with its first error line (shortened), identical ones once."""
    seen = {}
    for k in RUNTIMES:
        why = row["check"].get(k, (0, 0, None))[2]
        if why and why != "not run":
            short = why
            if k.startswith("xlac") and "): " in why:  # the node's message, not its name
                m = re.search(r"cannot import the model: ([^—]*) —", why)
                short = ("%s; first: " % m.group(1).strip() if m else "") + why.rsplit("): ", 1)[-1]
            seen.setdefault(short[:140], []).append(LABELS[k])
    return "; ".join("%s: %s" % (" and ".join(ks), w) for w, ks in seen.items())


def failures(rows):
    out = []
    for r in rows:
        if "error" in r:
            out.append("- %s batch %d: %s" % (r["name"], r["batch"], r["error"]))
            continue
        if "(dynamo failed" in r["exporter"]:
            out.append("- %s batch %d, export: %s" % (r["name"], r["batch"], r["exporter"]))
        for k, (_, _, why) in r["check"].items():
            if why and why != "not run":
                out.append("- %s batch %d, %s: %s" % (r["name"], r["batch"], LABELS[k], why))
    return out


def markdown(rows, info, args):
    md = [HEADING, "",
          "Written by `%s` on %s, commit %s. Machine: %s, %d CPUs, ISA %s; load average %.2f at the start and "
          "%.2f at the end. %d threads for every runtime. Versions: %s." % (
              info["command"], info["date"], info["commit"], info["cpu"], os.cpu_count() or 0, info["isa"],
              info["load"][0], info["load"][1], args.threads, info["versions"]), "",
          "Torch modules with random weights (configs in bench/beyond_models.py, nothing downloaded), one "
          "fixed-shape export per batch (the exporter column: `dynamo` is `torch.onnx.export(..., dynamo=True)`, "
          "TorchScript its fallback). int8: onnxruntime.quantization's `quantize_dynamic` (QInt8 weights) on "
          "the real-models BERT (its f32 row is in the real-models table) and `quantize_static` (QDQ, uint8 "
          "activations, int8 per-channel weights, MinMax over %d images) on the ResNet; fp16: "
          "`convert_float_to_float16(keep_io_types=True)`. Times are medians over %d rounds (runtimes "
          "alternating within a round) of each round's median ms over at least %.2g s, as in the real-models "
          "table. Every runtime's outputs (all of them) are checked against onnxruntime's before it is timed: "
          "f32 models within relative L2 %.0e (OpenVINO's default precision, bf16 where the CPU has it, %.0e); "
          "int8 and fp16 models within the format's own error, max |runtime − onnxruntime| / max |onnxruntime| "
          "≤ max(%.0e, the same measure between onnxruntime on the int8 or fp16 model and on its f32 model), "
          "or an int8 model within that bound of its QDQ reference (onnxruntime with graph optimizations off: "
          "DequantizeLinear, the f32 op, QuantizeLinear, node by node; without VNNI onnxruntime's fused u8 x s8 "
          "kernels saturate pairs of products in int16 and can sit farther from it). "
          "**WRONG** marks a disagreement, **FAILED** a runtime that could not import or run the model (first "
          "error line below), — one not run; neither is timed. OpenVINO: `PERFORMANCE_HINT=LATENCY`, "
          "`INFERENCE_PRECISION_HINT=f32` and, apart, its default on the int8 models (its int8 path; %s). "
          "torch.compile: default mode, freezing on, on the torch module (fp16: `module.half()` with f32 "
          "inputs and outputs; the int8 ONNX models have no torch counterpart). xlac: `xlac-run` op by op, and "
          "clustered with `LD_PRELOAD=libxlac.so XLAC_AUTO_JIT=2`." % (
              Calibration.CALIB_IMAGES, args.rounds, args.min_seconds, rm.REL_TOL, rm.LOOSE_REL_TOL, FORMAT_FLOOR,
              "and on every model, by --ov-default-all" if args.ov_default_all else
              "on the others only with --ov-default-all"),
          "", table(rows), ""]
    bad = failures(rows)
    md += ["Disagreements and failures:", ""] + (bad or ["- none: every runtime agreed with onnxruntime"])
    return "\n".join(md) + "\n"


def replace_section(path, text):
    """real_models.replace_section with this section's heading."""
    old = open(path).read() if os.path.exists(path) else ""
    start = old.find(HEADING)
    if start < 0:
        new = old.rstrip() + "\n\n" + text
    else:
        ends = [e for e in (old.find("\n## ", start + len(HEADING)),
                            old.find("\nMissing peers and why:", start)) if e >= 0]
        end = min(ends) if ends else -1
        new = old[:start] + text + ("\n" + old[end + 1:] if end >= 0 else "")
    with open(path, "w") as f:
        f.write(new)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(rm.ROOT, "build-bench"))
    ap.add_argument("--only", default=",".join(MODELS), help="models, comma-separated: %s" % ",".join(MODELS))
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--rounds", type=int, default=5, help="0: export and check the outputs only")
    ap.add_argument("--min-seconds", type=float, default=1.0,
                    help="each runtime is timed for at least this long per round")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1)))
    ap.add_argument("--runtimes", default=",".join(RUNTIMES), help="default: all of %s" % ",".join(RUNTIMES))
    ap.add_argument("--pause", type=float, default=0.2, help="seconds of rest before each runtime's timing")
    ap.add_argument("--ov-default-all", action="store_true",
                    help="OpenVINO's default precision on every model (default: on the int8 ones only)")
    ap.add_argument("--tiny", action="store_true", help="tiny sizes, for smoke tests (their own export cache)")
    ap.add_argument("--cache", default=os.path.join(HERE, "out", "beyond"),
                    help="export cache (a folder per torch version inside)")
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"),
                    help="the markdown file whose '%s' section is replaced" % HEADING)
    ap.add_argument("--no-results", action="store_true", help="print the table only (smoke tests)")
    ap.add_argument("--command", default="bench/run.sh --beyond " + " ".join(sys.argv[1:]), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.tiny:
        S.update(TINY)
    names = [n for n in args.only.split(",") if n]
    for n in names:
        if n not in MODELS:
            ap.error("unknown model %s (known: %s)" % (n, ", ".join(MODELS)))
    batches = [int(b) for b in args.batches.split(",") if b]
    args.runtimes = set(args.runtimes.split(",")) | {"ort"}
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[v] = str(args.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch
    torch.set_num_threads(args.threads)
    torch.backends.mha.set_fastpath_enabled(False)
    args.cache = os.path.join(args.cache, "torch-" + torch.__version__.replace("+", "_") + ("-tiny" if args.tiny else ""))
    info = rm.machine_info(args, torch)
    info["isa"] = isa()
    load0 = os.getloadavg()[0]
    tmp = tempfile.mkdtemp(prefix="xlac-beyond-")
    rows = []
    t_all = time.perf_counter()
    try:
        xlac = Xlac(args.build, os.path.join(tmp, "cache"))
        for name in names:
            for b in batches:
                log("== %s batch %d" % (name, b))
                t0 = time.perf_counter()
                try:
                    rows.append(bench_one(torch, name, b, args, xlac, tmp))
                except Exception as e:  # reported in the table, never dropped
                    log("   !!! %s batch %d failed: %s" % (name, b, e))
                    rows.append({"name": name, "batch": b, "error": first_line(e)[:200]})
                log("   (%.0f s)" % (time.perf_counter() - t0))
        info["load"] = (load0, os.getloadavg()[0])
        text = markdown(rows, info, args)
        if not args.no_results:
            replace_section(args.results, text)
        print(text)
        log("beyond models: %.0f s in all" % (time.perf_counter() - t_all))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    bad = failures(rows)
    if bad:
        log("beyond models: %d disagreement(s) or failure(s):\n%s" % (len(bad), "\n".join(bad)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
