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
DEC_LENS = [4, 3, 7]  # decoder sequence lengths of the encoder-decoder exports
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


class AudioHidden(Hidden):
    """A transformers speech encoder's last_hidden_state."""

    def forward(self, input_features):
        return self.m(input_features=input_features).last_hidden_state


class Seq2SeqHidden(Hidden):
    """An encoder-decoder's decoder last_hidden_state, without a cache (one full decoder pass)."""

    def forward(self, input_ids, attention_mask, decoder_input_ids):
        return self.m(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids,
                      use_cache=False).last_hidden_state


class Speech2SeqHidden(Hidden):
    """Whisper's decoder last_hidden_state over its encoder's output, without a cache. The decoder's
    mask is all ones, as generation passes it (without one and without a cache, transformers looks
    for packed sequences with torch.diff, which the TorchScript exporter cannot write)."""

    def forward(self, input_features, decoder_input_ids):
        return self.m(input_features=input_features, decoder_input_ids=decoder_input_ids,
                      decoder_attention_mask=torch.ones_like(decoder_input_ids), use_cache=False).last_hidden_state


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


def audio_inputs(b, mels_frames, seed):
    """Log-mel features [batch, n_mels, frames], in the range Whisper's feature extractor writes."""
    g = np.random.default_rng(seed)
    return {"input_features": g.uniform(-1, 1.5, (b,) + mels_frames).astype(np.float32)}


def decoder_inputs(b, t, vocab, seed):
    g = np.random.default_rng(seed + 50)
    return {"decoder_input_ids": g.integers(1, vocab, (b, t)).astype(np.int64)}


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


def t5():
    """T5 whole: encoder, decoder with cross-attention, relative position buckets of both."""
    from transformers import T5Config, T5Model
    c = T5Config(vocab_size=100, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=2)
    return Seq2SeqHidden(T5Model(c)), "seq2seq", 100


WHISPER = dict(vocab_size=100, num_mel_bins=16, d_model=32, encoder_layers=2, encoder_attention_heads=2,
               decoder_layers=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
               max_source_positions=16, max_target_positions=32, pad_token_id=0, bos_token_id=1,
               eos_token_id=2, decoder_start_token_id=1)
WHISPER_FEATURES = (16, 32)  # (n_mels, frames): Whisper's frames are 2 * max_source_positions, never other


def whisper():
    """Whisper's encoder: two Conv1d with GELU over log-mel features, then transformer layers."""
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    return AudioHidden(WhisperEncoder(WhisperConfig(**WHISPER))), "audio", WHISPER_FEATURES


def whisper_decoder():
    """Whisper whole (WhisperModel): the encoder, then the decoder with cross-attention over it."""
    from transformers import WhisperConfig, WhisperModel
    return Speech2SeqHidden(WhisperModel(WhisperConfig(**WHISPER))), "speech2seq", WHISPER_FEATURES


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


def bart():
    from transformers import BartConfig, BartModel
    c = BartConfig(vocab_size=100, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                   decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64)
    return Hidden(BartModel(c)), "text", 100


def clip_text():
    from transformers import CLIPTextConfig, CLIPTextModel
    c = CLIPTextConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=2, max_position_embeddings=64)
    return Hidden(CLIPTextModel(c)), "text", 100


def clip_vision():
    from transformers import CLIPVisionConfig, CLIPVisionModel
    c = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                         image_size=32, patch_size=8)
    return ImageHidden(CLIPVisionModel(c)), "image", 32


def mobilenet_v3():
    from torchvision.models import mobilenet_v3_small
    return mobilenet_v3_small(width_mult=0.25, num_classes=10), "image", 32


def efficientnet():
    from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf
    setting, last = _efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.3)
    return EfficientNet(setting, 0.2, num_classes=10, last_channel=last), "image", 32


def convnext():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    return ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], num_classes=10), "image", 32


def regnet():
    from torchvision.models.regnet import BlockParams, RegNet
    p = BlockParams.from_init_params(depth=2, w_0=8, w_a=8.0, w_m=2.0, group_width=8)
    return RegNet(p, num_classes=10, stem_width=8), "image", 32


def densenet():
    from torchvision.models.densenet import DenseNet
    return DenseNet(growth_rate=8, block_config=(2, 2), num_init_features=16, bn_size=2, num_classes=10), "image", 32


def vgg():
    """VGG's feature layers (torchvision's make_layers) with a small head (VGG's own weighs 400 MB)."""
    from torchvision.models.vgg import make_layers
    nn = torch.nn
    return nn.Sequential(make_layers([8, "M", 16, "M", 32, 32, "M"], batch_norm=True), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(32, 10)), "image", 32


def squeezenet():
    """SqueezeNet 1.1's layout of torchvision's Fire modules at small widths (its own weighs 3 MB)."""
    from torchvision.models.squeezenet import Fire
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(3, 16, 3, 2), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True), Fire(16, 4, 8, 8),
                         Fire(16, 4, 8, 8), nn.MaxPool2d(3, 2, ceil_mode=True), Fire(16, 8, 16, 16),
                         nn.Dropout(0.5), nn.Conv2d(32, 10, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten()), "image", 32


def shufflenet():
    from torchvision.models.shufflenetv2 import ShuffleNetV2
    return ShuffleNetV2([2, 2, 2], [8, 16, 32, 64, 128], num_classes=10), "image", 32


def swin():
    from torchvision.models.swin_transformer import SwinTransformer
    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=[4, 4],
                           num_classes=10), "image", 32


def tv_vit():
    from torchvision.models.vision_transformer import VisionTransformer
    return VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                             num_classes=10), "image", 32


def timm_vit():
    import timm
    return timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8, embed_dim=32,
                             depth=2, num_heads=2, num_classes=10), "image", 32


def timm_convnext():
    import timm
    return timm.create_model("convnext_atto", pretrained=False, dims=(8, 16, 32, 64), depths=(1, 1, 1, 1),
                             num_classes=10), "image", 32


def timm_resnet():
    import timm
    from timm.models.resnet import BasicBlock, ResNet
    return ResNet(BasicBlock, [1, 1, 1, 1], channels=(8, 16, 32, 64), num_classes=10), "image", 32


def timm_efficientnet():
    from timm.models.efficientnet import _gen_efficientnet
    return _gen_efficientnet("efficientnet_b0", channel_multiplier=0.25, depth_multiplier=0.3, pretrained=False,
                             num_classes=10), "image", 32


class Upsampler(torch.nn.Module):
    """A decoder's upsampling as segmentation and detection heads write it: nearest, bilinear and
    bicubic interpolation (ONNX Resize) between convolutions, and a skip connection."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.down = nn.Conv2d(3, 8, 3, 2, 1)
        self.mid = nn.Conv2d(8, 8, 3, 1, 1)
        self.out = nn.Conv2d(8, 4, 1)

    def forward(self, pixel_values):
        f = torch.nn.functional
        x = torch.relu(self.down(pixel_values))  # 16x16
        y = f.interpolate(x, scale_factor=2, mode="nearest")  # 32x32
        y = torch.relu(self.mid(y)) + f.interpolate(x, size=(32, 32), mode="bilinear", align_corners=False)
        y = f.interpolate(self.out(y), scale_factor=0.5, mode="bicubic", align_corners=True)
        return f.interpolate(y, scale_factor=1.5, mode="bilinear", align_corners=True)


def upsample():
    return Upsampler(), "image", 32


ARCHS = {"bert": bert, "gpt2": gpt2, "t5_encoder": t5_encoder, "llama": llama,
         "distilbert": distilbert, "roberta": roberta, "vit": vit, "resnet": resnet,
         "mobilenet_v2": mobilenet_v2, "bart": bart, "clip_text": clip_text, "clip_vision": clip_vision,
         "mobilenet_v3": mobilenet_v3, "efficientnet": efficientnet, "convnext": convnext, "regnet": regnet,
         "densenet": densenet, "vgg": vgg, "squeezenet": squeezenet, "shufflenet": shufflenet, "swin": swin,
         "tv_vit": tv_vit, "timm_vit": timm_vit, "timm_convnext": timm_convnext, "timm_resnet": timm_resnet,
         "timm_efficientnet": timm_efficientnet, "upsample": upsample, "t5": t5, "whisper": whisper,
         "whisper_decoder": whisper_decoder}


def feeds(kind, arg, dynamic):
    if kind in ("text", "seq2seq"):
        shapes = SEQ_SHAPES if dynamic else [SEQ_SHAPES[1]] * 3
        fs = [text_inputs(b, s, arg, 100 + k) for k, (b, s) in enumerate(shapes)]
        if kind == "seq2seq":
            lens = DEC_LENS if dynamic else [DEC_LENS[1]] * 3
            for k, (f, (b, _)) in enumerate(zip(fs, shapes)):
                f.update(decoder_inputs(b, lens[k], arg, 100 + k))
        return fs
    batches = IMG_BATCHES if dynamic else [2] * 3
    if kind == "image":
        return [image_inputs(b, arg, 100 + k) for k, b in enumerate(batches)]
    fs = [audio_inputs(b, arg, 100 + k) for k, b in enumerate(batches)]
    if kind == "speech2seq":
        lens = DEC_LENS if dynamic else [DEC_LENS[1]] * 3
        for k, (f, b) in enumerate(zip(fs, batches)):
            f.update(decoder_inputs(b, lens[k], WHISPER["vocab_size"], 100 + k))
    return fs


# The symbolic dims of each input of the dynamic exports: pixel and audio inputs have a symbolic
# batch only (Whisper's frames are fixed by its positions; images by their positions or heads).
DYN_AXES = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
            "decoder_input_ids": {0: "batch", 1: "decoder_sequence"}, "pixel_values": {0: "batch"},
            "input_features": {0: "batch"}}


def export(model, example, path, dynamic, exporter):
    names = list(example)
    args = tuple(torch.from_numpy(example[n]) for n in names)
    kw = {"input_names": names, "output_names": ["y"]}
    if exporter == "dynamo":
        if dynamic:
            dims = {d: torch.export.Dim(d, max=16 if d == "batch" else 48)
                    for n in names for d in DYN_AXES[n].values()}
            kw["dynamic_shapes"] = tuple({a: dims[d] for a, d in DYN_AXES[n].items()} for n in names)
        torch.onnx.export(model, args, path, dynamo=True, **kw)
    else:
        if dynamic:
            kw["dynamic_axes"] = {n: DYN_AXES[n] for n in names}
        torch.onnx.export(model, args, path, dynamo=False, opset_version=17, **kw)


def one(arch, dynamic, exporter):
    torch.backends.mha.set_fastpath_enabled(False)  # nn.MultiheadAttention's fused op has no ONNX form
    name = "%s.%s%s" % (arch, "dynamic" if dynamic else "fixed", "" if exporter == "dynamo" else ".script")
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    torch.manual_seed(0)
    model, kind, arg = ARCHS[arch]()
    model.eval()
    fs = feeds(kind, arg, dynamic)
    path = os.path.join(d, "model.onnx")
    with torch.no_grad():  # batch 2 as the example: torch specialises dims of size 1
        export(model, fs[1], path, dynamic, exporter)
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
    ap.add_argument("--exporter", default="dynamo", choices=["dynamo", "script", "both"])
    a = ap.parse_args()
    ok, bad = [], []
    exporters = ["dynamo", "script"] if a.exporter == "both" else [a.exporter]
    for arch in ARCHS:
        for dynamic in (False, True):
            for exporter in exporters:
                tag = "%s %s %s" % (arch, "dynamic" if dynamic else "fixed", exporter)
                if a.only and not re.search(a.only, tag):
                    continue
                try:
                    ok.append(one(arch, dynamic, exporter))
                    print("exported", ok[-1], flush=True)
                except Exception:
                    traceback.print_exc()
                    bad.append(tag)
                    print("FAILED export", tag, flush=True)
    print("exports: %d written, %d failed %s" % (len(ok), len(bad), bad))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
