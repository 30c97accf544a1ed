"""Exports small configurations (random weights, configs in code) of real
architectures to ONNX, as a user of torch's exporters would, into
tests/models/exports/NAME/: model.onnx (and model.onnx.data when the
exporter writes one), and per input shape K (three of them) sK/INPUT.npy
and sK/out/OUTPUT.npy with onnxruntime's outputs. NAME is ARCH.fixed (one
shape, three different inputs) or ARCH.dynamic (symbolic batch and
sequence or batch dims, three shapes). Run in the git-ignored venv
tests/models/.venv (pip install torch torchvision transformers timm onnx
onnxruntime onnxscript); nothing is downloaded at run time. The exports are
committed, so CI needs no torch (run_exports.py runs them).

    tests/models/.venv/bin/python tests/models/export.py [--only REGEX] [--exporter dynamo|script]
"""
import argparse
import os
import re
import shutil
import sys
import traceback

import numpy as np
import onnxruntime as ort
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exports")
SEQ_SHAPES = [(1, 8), (2, 5), (3, 12)]  # (batch, sequence) of the dynamic exports
IMG_BATCHES = [1, 2, 3]


def sanitize(name):
    s = re.sub(r"[^A-Za-z0-9_.]", "_", name)
    return "_" + s if not s or s[0].isdigit() or s[0] == "." else s


class Hidden(torch.nn.Module):
    """A transformers text model's last_hidden_state as a plain tensor output."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask):
        return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class ImageHidden(Hidden):
    """A transformers vision model's last_hidden_state."""

    def forward(self, pixel_values):
        return self.m(pixel_values=pixel_values).last_hidden_state


def text_inputs(b, s, vocab, seed):
    g = np.random.default_rng(seed)
    ids = g.integers(1, vocab, (b, s)).astype(np.int64)
    mask = np.ones((b, s), np.int64)
    if s > 2:
        mask[-1, s - 2:] = 0  # padding at the end of the last row
    return {"input_ids": ids, "attention_mask": mask}


def image_inputs(b, size, seed):
    g = np.random.default_rng(seed)
    return {"pixel_values": g.uniform(-1, 1, (b, 3, size, size)).astype(np.float32)}


def bert():
    from transformers import BertConfig, BertModel
    c = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=64, max_position_embeddings=64, type_vocab_size=2)
    return Hidden(BertModel(c, add_pooling_layer=False)), "text", 100


def gpt2():
    from transformers import GPT2Config, GPT2Model
    c = GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=2, n_positions=64)
    return Hidden(GPT2Model(c)), "text", 100


def t5_encoder():
    from transformers import T5Config, T5EncoderModel
    c = T5Config(vocab_size=100, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2)
    return Hidden(T5EncoderModel(c)), "text", 100


def llama():
    from transformers import LlamaConfig, LlamaModel
    c = LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                    num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    return Hidden(LlamaModel(c)), "text", 100


def distilbert():
    from transformers import DistilBertConfig, DistilBertModel
    c = DistilBertConfig(vocab_size=100, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                         max_position_embeddings=64)
    return Hidden(DistilBertModel(c)), "text", 100


def roberta():
    from transformers import RobertaConfig, RobertaModel
    c = RobertaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=72)
    return Hidden(RobertaModel(c, add_pooling_layer=False)), "text", 100


def vit():
    from transformers import ViTConfig, ViTModel
    c = ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=2, intermediate_size=64)
    return ImageHidden(ViTModel(c, add_pooling_layer=False)), "image", 32


def resnet():
    """A ResNet of torchvision's BasicBlocks at small widths (resnet18's own widths weigh 45 MB)."""
    from torchvision.models.resnet import BasicBlock
    nn = torch.nn

    def down(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 1, 2, bias=False), nn.BatchNorm2d(o))

    m = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                      nn.MaxPool2d(3, 2, 1), BasicBlock(16, 16), BasicBlock(16, 32, 2, down(16, 32)),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    return m, "image", 32


def mobilenet_v2():
    from torchvision.models import mobilenet_v2 as mv2
    return mv2(width_mult=0.25, num_classes=10), "image", 32


ARCHS = {"bert": bert, "gpt2": gpt2, "t5_encoder": t5_encoder, "llama": llama,
         "distilbert": distilbert, "roberta": roberta, "vit": vit, "resnet": resnet,
         "mobilenet_v2": mobilenet_v2}


def feeds(kind, arg, dynamic):
    if kind == "text":
        shapes = SEQ_SHAPES if dynamic else [SEQ_SHAPES[1]] * 3
        return [text_inputs(b, s, arg, 100 + k) for k, (b, s) in enumerate(shapes)]
    batches = IMG_BATCHES if dynamic else [2] * 3
    return [image_inputs(b, arg, 100 + k) for k, b in enumerate(batches)]


def export(model, example, path, dynamic, exporter):
    names = list(example)
    args = tuple(torch.from_numpy(example[n]) for n in names)
    kw = {"input_names": names, "output_names": ["y"]}
    if exporter == "dynamo":
        if dynamic:
            dims = {0: torch.export.Dim("batch", max=16)}
            if names[0] != "pixel_values":
                dims[1] = torch.export.Dim("sequence", max=48)
            kw["dynamic_shapes"] = tuple(dict(dims) for _ in names)
        torch.onnx.export(model, args, path, dynamo=True, **kw)
    else:
        if dynamic:
            axes = {0: "batch"} if names[0] == "pixel_values" else {0: "batch", 1: "sequence"}
            kw["dynamic_axes"] = {n: axes for n in names}
        torch.onnx.export(model, args, path, dynamo=False, opset_version=17, **kw)


def one(arch, dynamic, exporter):
    name = "%s.%s%s" % (arch, "dynamic" if dynamic else "fixed", "" if exporter == "dynamo" else ".script")
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    torch.manual_seed(0)
    model, kind, arg = ARCHS[arch]()
    model.eval()
    fs = feeds(kind, arg, dynamic)
    path = os.path.join(d, "model.onnx")
    with torch.no_grad():
        export(model, fs[0], path, dynamic, exporter)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outs = [o.name for o in sess.get_outputs()]
    for k, f in enumerate(fs):
        sd = os.path.join(d, "s%d" % k)
        os.makedirs(os.path.join(sd, "out"))
        for n, a in f.items():
            np.save(os.path.join(sd, n + ".npy"), a)
        for n, a in zip(outs, sess.run(None, f)):
            np.save(os.path.join(sd, "out", sanitize(n) + ".npy"), np.asarray(a))
    return name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--exporter", default="dynamo", choices=["dynamo", "script"])
    a = ap.parse_args()
    ok, bad = [], []
    for arch in ARCHS:
        for dynamic in (False, True):
            tag = "%s %s" % (arch, "dynamic" if dynamic else "fixed")
            if a.only and not re.search(a.only, tag):
                continue
            try:
                ok.append(one(arch, dynamic, a.exporter))
                print("exported", ok[-1], flush=True)
            except Exception:
                traceback.print_exc()
                bad.append(tag)
                print("FAILED export", tag, flush=True)
    print("exports: %d written, %d failed %s" % (len(ok), len(bad), bad))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
