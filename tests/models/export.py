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


# ---------------------------------------------------------------- the families of issue 34
# Each is a Family: its module, its inputs per shape, its symbolic dims, and what follows the export
# (fp16 conversion) or what its runner needs (tolerances, a decode loop).


class Family:
    """build() -> module; inputs(k, shape) -> feed; shapes: three per dynamic export (the fixed
    export takes shapes[1] three times); axes: input -> {axis: dim name} (dynamic exports);
    dims: dim name -> (min, max, multiple) for the dynamo exporter; post(model) -> model after the
    export; tol: (rtol, atol) for run_exports.py; exporters: those that apply; baked: the script
    export bakes its traced shapes (onnxruntime runs it only there), so all three shapes are the
    traced one; outputs: output names; loop: the decode loop's steps (decode_loop)."""

    def __init__(self, build, inputs, shapes, axes, dims=None, post=None, tol=None, outputs=("y",),
                 exporters=("dynamo", "script"), baked=False, loop=None, example=None):
        self.example = example  # the dynamo export's example shape when not shapes[1]
        self.build, self.inputs, self.shapes, self.axes = build, inputs, shapes, axes
        self.dims, self.post, self.tol, self.outputs = dims or {}, post, tol, list(outputs)
        self.exporters, self.baked, self.loop = exporters, baked, loop


KV = dict(vocab=64, hidden=32, layers=2,  # two layers: Step's forward names their four inputs
          heads=4, kv_heads=2, ffn=64)
KV_HD = KV["hidden"] // KV["heads"]


def kv_decoder():
    """One step of a Qwen2-style decoder with its KV cache: the past keys and values in, the logits
    and the present keys and values (past + the new tokens) out."""
    from transformers import DynamicCache, Qwen2Config, Qwen2ForCausalLM
    c = Qwen2Config(vocab_size=KV["vocab"], hidden_size=KV["hidden"], num_hidden_layers=KV["layers"],
                    num_attention_heads=KV["heads"], num_key_value_heads=KV["kv_heads"],
                    intermediate_size=KV["ffn"], max_position_embeddings=128, tie_word_embeddings=False,
                    attn_implementation="eager")  # sdpa's is_causal over a symbolic length does not export
    layers = KV["layers"]

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = Qwen2ForCausalLM(c)

        def forward(self, input_ids, attention_mask, position_ids, past_key_0, past_value_0, past_key_1,
                    past_value_1):
            past = (past_key_0, past_value_0, past_key_1, past_value_1)
            cache = DynamicCache([(past[2 * i], past[2 * i + 1]) for i in range(layers)], config=c)
            out = self.m(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                         past_key_values=cache, use_cache=True)
            res = [out.logits]
            for i in range(layers):
                res += [out.past_key_values.layers[i].keys, out.past_key_values.layers[i].values]
            return tuple(res)
    return Step()


def kv_names(prefix):
    return ["%s_%s_%d" % (prefix, kv, i) for i in range(KV["layers"]) for kv in ("key", "value")]


def kv_inputs(k, shape, ids=None):
    """(batch, new tokens, past length); the last row's first position masked (left padding)."""
    b, s, past = shape
    g = np.random.default_rng(300 + k)
    mask = np.ones((b, past + s), np.int64)
    if b > 1:
        mask[-1, 0] = 0
    f = {"input_ids": g.integers(1, KV["vocab"], (b, s)).astype(np.int64) if ids is None else ids,
         "attention_mask": mask, "position_ids": np.tile(np.arange(past, past + s, dtype=np.int64), (b, 1))}
    for n in kv_names("past"):
        f[n] = g.standard_normal((b, KV["kv_heads"], past, KV_HD)).astype(np.float32)
    return f


KV_AXES = dict({"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total"},
                "position_ids": {0: "batch", 1: "sequence"}}, **{n: {0: "batch", 2: "past"} for n in kv_names("past")})
KV_STEPS = 20  # the decode loop's steps after its first (run_decode.py)


def wav2vec2():
    """Wav2Vec2's feature encoder (three strided Conv1d, GroupNorm) and transformer layers with the
    grouped positional convolution, over raw samples."""
    from transformers import Wav2Vec2Config, Wav2Vec2Model
    c = Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                       conv_dim=(16, 16, 16), conv_kernel=(10, 3, 3), conv_stride=(5, 2, 2),
                       num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, mask_time_prob=0.0,
                       do_stable_layer_norm=False, feat_extract_norm="group")

    class Wav(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = Wav2Vec2Model(c)

        def forward(self, input_values):
            return self.m(input_values=input_values).last_hidden_state
    return Wav()


def wav_inputs(k, shape):
    return {"input_values": np.random.default_rng(400 + k).standard_normal(shape).astype(np.float32)}


def unet():
    """A diffusion-style UNet on a 4-channel latent (bench/beyond_models.py's, narrower): ResBlocks
    with GroupNorm, SiLU and the timestep embedding, two stride-2 downs, self-attention at the lowest
    resolution, skip concatenations, nearest upsampling."""
    nn = torch.nn
    F = torch.nn.functional
    ch, temb = 16, 32

    class Res(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.n1, self.c1 = nn.GroupNorm(4, cin), nn.Conv2d(cin, cout, 3, padding=1)
            self.t = nn.Linear(temb, cout)
            self.n2, self.c2 = nn.GroupNorm(4, cout), nn.Conv2d(cout, cout, 3, padding=1)
            self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

        def forward(self, x, t):
            h = self.c1(F.silu(self.n1(x))) + self.t(t)[:, :, None, None]
            return self.skip(x) + self.c2(F.silu(self.n2(h)))

    class Attn(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.n, self.qkv, self.o = nn.GroupNorm(4, c), nn.Conv2d(c, 3 * c, 1), nn.Conv2d(c, c, 1)
            self.heads = 2

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
            self.d1, self.d2 = Res(ch, ch), Res(ch, 2 * ch)
            self.down1, self.down2 = nn.Conv2d(ch, ch, 3, 2, 1), nn.Conv2d(2 * ch, 2 * ch, 3, 2, 1)
            self.mid, self.attn = Res(2 * ch, 2 * ch), Attn(2 * ch)
            self.u2, self.u1 = Res(4 * ch, 2 * ch), Res(3 * ch, ch)
            self.out_n, self.out = nn.GroupNorm(4, ch), nn.Conv2d(ch, 4, 3, padding=1)

        def forward(self, sample, timestep):
            half = ch // 2
            f = torch.exp(-torch.arange(half, dtype=torch.float32) * (9.210340371976184 / half))
            e = timestep[:, None] * f[None]
            t = self.t2(F.silu(self.t1(torch.cat([torch.sin(e), torch.cos(e)], dim=1))))
            h1 = self.d1(self.inp(sample), t)  # ch, full size
            h2 = self.d2(self.down1(h1), t)  # 2ch, 1/2
            m = self.attn(self.mid(self.down2(h2), t))  # 2ch, 1/4
            u = F.interpolate(m, scale_factor=2.0, mode="nearest")
            u = self.u2(torch.cat([u, h2], 1), t)
            u = F.interpolate(u, scale_factor=2.0, mode="nearest")
            return self.out(F.silu(self.out_n(self.u1(torch.cat([u, h1], 1), t))))
    return UNet()


def unet_inputs(k, shape):
    g = np.random.default_rng(500 + k)
    return {"sample": g.standard_normal(shape).astype(np.float32),
            "timestep": g.uniform(0, 1000, (shape[0],)).astype(np.float32)}


def fp16(keep_io):
    def post(m):
        from onnxruntime.transformers.float16 import convert_float_to_float16
        return convert_float_to_float16(m, keep_io_types=keep_io)
    return post


def half_inputs(inputs, keep_io):
    """inputs(k, shape) with its float arrays in f16 when the model's inputs are (keep_io_types=False)."""
    def f(k, shape):
        d = inputs(k, shape)
        return d if keep_io else {n: a.astype(np.float16) if a.dtype == np.float32 else a for n, a in d.items()}
    return f


def fp16_bert():
    return bert()[0]


def fp16_text(k, shape):
    return text_inputs(shape[0], shape[1], 100, 600 + k)


def fp16_image(k, shape):
    return image_inputs(shape[0], shape[2], 700 + k)


def baked():
    """nn.TransformerEncoder (three layers): torch's TorchScript exporter writes its attention's
    reshapes with the traced batch and sequence as constants, though dynamic_axes names them."""
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=2, dim_feedforward=64, dropout=0.0, batch_first=True)
    return nn.Sequential(nn.Linear(8, 32), nn.TransformerEncoder(layer, 3, enable_nested_tensor=False))


def baked_inputs(k, shape):
    return {"x": np.random.default_rng(800 + k).standard_normal(shape).astype(np.float32)}


@torch.jit.script
def recurrence(u, w, b):
    """h_t = tanh(u_t + W h_(t-1) + b) over the sequence, as a loop (TorchScript: ONNX Loop, its trip
    count the sequence length), then a branch on the length (ONNX If)."""
    h = torch.zeros_like(u[:, 0])
    outs = []
    for i in range(u.size(1)):
        h = torch.tanh(u[:, i] + torch.nn.functional.linear(h, w, b))
        outs.append(h)
    y = torch.stack(outs, 1)
    if u.size(1) > 6:
        y = y * 0.5
    else:
        y = y + 1.0
    return y


class Recurrence(torch.nn.Module):
    """A Linear, then the scripted recurrence over its output."""

    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Linear(8, 16)
        self.rec = torch.nn.Linear(16, 16)

    def forward(self, x):
        return recurrence(self.inp(x), self.rec.weight, self.rec.bias)


class Branch(torch.nn.Module):
    """The dynamo form: torch.cond on the data (ONNX If with a condition computed at run time), and
    a recurrence unrolled by the exporter."""

    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Linear(8, 16)
        self.rec = torch.nn.Linear(16, 16)

    def forward(self, x):
        u = self.inp(x)
        h = torch.tanh(u[:, 0])
        h = torch.tanh(u[:, 1] + self.rec(h))
        return torch.cond(u.sum() > 0, lambda a: a * 0.5, lambda a: a + 1.0, (h,))


def control():
    return Recurrence()


def control_dynamo():
    return Branch()


def control_inputs(k, shape):
    g = np.random.default_rng(900 + k)
    x = g.standard_normal(shape).astype(np.float32)
    return {"x": x if k != 1 else x - 1.0}  # a negative sum somewhere: both branches taken


class Detector(torch.nn.Module):
    """SSD-style: a small conv backbone, per-anchor box offsets and scores on its feature map (stride
    8), boxes decoded against anchors made from the feature map's size, then torchvision's nms (ONNX
    NonMaxSuppression) at IoU 0.3; outputs the kept boxes and scores, best first."""

    def __init__(self, stride=8):
        super().__init__()
        nn = torch.nn
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 16, 3, 2, 1), nn.ReLU(),
                                      nn.Conv2d(16, 16, 3, 2, 1), nn.ReLU())
        self.stride = stride
        self.box = nn.Conv2d(16, 8, 3, 1, 1)  # two anchors a cell, four offsets each
        self.cls = nn.Conv2d(16, 2, 3, 1, 1)
        self.register_buffer("wh", torch.tensor([[1.0, 1.0], [2.0, 1.0]]) * stride * 1.5)

    def forward(self, pixel_values):
        import torchvision
        f = self.backbone(pixel_values)
        h, w = f.shape[2], f.shape[3]
        cy = (torch.arange(h, dtype=torch.float32) + 0.5) * self.stride
        cx = (torch.arange(w, dtype=torch.float32) + 0.5) * self.stride
        ctr0 = torch.stack([cx[None, :].expand(h, w), cy[:, None].expand(h, w)], -1).reshape(-1, 1, 2)
        centers = ctr0.expand(-1, 2, 2).reshape(-1, 2)
        sizes = self.wh[None].expand(h * w, 2, 2).reshape(-1, 2)
        d = self.box(f)[0].permute(1, 2, 0).reshape(-1, 4)
        s = torch.sigmoid(self.cls(f)[0].permute(1, 2, 0).reshape(-1))
        ctr = centers + d[:, :2] * sizes * 0.1
        wh = sizes * torch.exp(d[:, 2:] * 0.2)
        boxes = torch.cat([ctr - wh / 2, ctr + wh / 2], 1)
        keep = torchvision.ops.nms(boxes, s, 0.3)
        return boxes[keep], s[keep]


def detector():
    return Detector()


def detector_inputs(k, shape):
    return {"pixel_values": np.random.default_rng(1000 + k).uniform(-1, 1, shape).astype(np.float32)}


FAMILIES = {
    "kv_decoder": Family(kv_decoder, kv_inputs, [(1, 1, 5), (2, 1, 8), (3, 1, 3)], KV_AXES,
                         dims={"batch": (1, 8, 1), "sequence": (1, 32, 1), "past": (1, 64, 1)},
                         outputs=["logits"] + kv_names("present"), loop=KV_STEPS, example=(2, 2, 8)),
    "wav2vec2": Family(wav2vec2, wav_inputs, [(1, 200), (2, 333), (3, 480)], {"input_values": {0: "batch", 1: "samples"}},
                       dims={"batch": (1, 8, 1), "samples": (100, 4000, 1)}),
    "unet": Family(unet, unet_inputs, [(1, 4, 8, 8), (2, 4, 12, 16), (3, 4, 16, 12)],
                   {"sample": {0: "batch", 2: "height", 3: "width"}, "timestep": {0: "batch"}},
                   dims={"batch": (1, 8, 1), "height": (4, 64, 4), "width": (4, 64, 4)}),
    "baked": Family(baked, baked_inputs, [(1, 6, 8), (2, 16, 8), (3, 9, 8)], {"x": {0: "batch", 1: "sequence"}},
                    dims={"batch": (1, 8, 1), "sequence": (2, 32, 1)}, baked=True),
    "control": Family(control, control_inputs, [(1, 4, 8), (2, 7, 8), (3, 9, 8)], {"x": {0: "batch", 1: "sequence"}},
                      exporters=("script",)),
    "control_cond": Family(control_dynamo, control_inputs, [(1, 4, 8), (2, 7, 8), (3, 9, 8)],
                           {"x": {0: "batch", 1: "sequence"}}, dims={"batch": (1, 8, 1), "sequence": (2, 32, 1)},
                           exporters=("dynamo",)),
    "detector": Family(detector, detector_inputs, [(1, 3, 32, 32), (1, 3, 48, 32), (1, 3, 32, 64)],
                       {"pixel_values": {2: "height", 3: "width"}},
                       dims={"height": (16, 128, 8), "width": (16, 128, 8)}, outputs=["boxes", "scores"]),
}
for keep_io in (False, True):
    tag = "io32" if keep_io else "io16"
    FAMILIES["fp16_resnet_" + tag] = Family(
        lambda: resnet()[0], half_inputs(fp16_image, keep_io), [(1, 3, 32, 32), (2, 3, 32, 32), (3, 3, 32, 32)],
        {"pixel_values": {0: "batch"}}, dims={"batch": (1, 16, 1)}, post=fp16(keep_io), tol=(2e-2, 2e-2))
    FAMILIES["fp16_bert_" + tag] = Family(
        fp16_bert, fp16_text, SEQ_SHAPES, {n: {0: "batch", 1: "sequence"} for n in ("input_ids", "attention_mask")},
        dims={"batch": (1, 16, 1), "sequence": (1, 48, 1)}, post=fp16(keep_io), tol=(2e-2, 2e-2))


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


def family_dims(fam, names):
    """The dynamo exporter's dynamic_shapes for fam's inputs: one Dim per dim name (a multiple of one
    where fam.dims says so), shared by the inputs that name it; a dim not in fam.dims is Dim.AUTO."""
    dims = {}
    for n in names:
        for d in fam.axes.get(n, {}).values():
            if d in dims:
                continue
            if d not in fam.dims:
                dims[d] = torch.export.Dim.AUTO
                continue
            lo, hi, m = fam.dims[d]
            dims[d] = torch.export.Dim(d, min=lo, max=hi) if m == 1 else m * torch.export.Dim(d + "_q", min=lo // m,
                                                                                               max=hi // m)
    return tuple({a: dims[d] for a, d in fam.axes.get(n, {}).items()} or None for n in names)


def export_family(fam, model, example, path, dynamic, exporter):
    names = list(example)
    args = tuple(torch.from_numpy(example[n]) for n in names)
    kw = {"input_names": names, "output_names": fam.outputs}
    if exporter == "dynamo":
        if dynamic:
            kw["dynamic_shapes"] = family_dims(fam, names)
        torch.onnx.export(model, args, path, dynamo=True, **kw)
    else:
        if dynamic:
            kw["dynamic_axes"] = {n: fam.axes[n] for n in names if n in fam.axes}
            kw["dynamic_axes"].update({o: {} for o in []})
        torch.onnx.export(model, args, path, dynamo=False, opset_version=17, **kw)
    if fam.post:
        import onnx
        m = fam.post(onnx.load(path))
        for f in os.listdir(os.path.dirname(path)):
            os.remove(os.path.join(os.path.dirname(path), f))
        onnx.save(m, path)


def decode_loop(fam, sess, d):
    """loop/: a decode loop of fam.loop steps after a first one (loop/first/*.npy), each feeding one
    token (loop/ids.npy [steps, batch, 1], teacher-forced) with the previous step's present keys and
    values as the past, the mask one longer and the position one on; loop/logits.npy has onnxruntime's
    logits of every step, the first included (run_decode.py does the same with xlac)."""
    ld = os.path.join(d, "loop")
    os.makedirs(os.path.join(ld, "first"))
    first = fam.inputs(7, (2, 1, 3))
    for n, a in first.items():
        np.save(os.path.join(ld, "first", n + ".npy"), a)
    ids = np.random.default_rng(77).integers(1, KV["vocab"], (fam.loop, 2, 1)).astype(np.int64)
    np.save(os.path.join(ld, "ids.npy"), ids)
    outs = [o.name for o in sess.get_outputs()]
    feed, logits = dict(first), []
    for k in range(fam.loop + 1):
        res = dict(zip(outs, sess.run(None, feed)))
        logits.append(res["logits"])
        if k == fam.loop:
            break
        feed = {"input_ids": ids[k], "attention_mask": np.concatenate([feed["attention_mask"],
                                                                       np.ones((2, 1), np.int64)], 1),
                "position_ids": feed["position_ids"][:, -1:] + 1}
        feed.update({p: res[q] for p, q in zip(kv_names("past"), kv_names("present"))})
    np.save(os.path.join(ld, "logits.npy"), np.stack(logits))


def one_family(arch, dynamic, exporter):
    fam = FAMILIES[arch]
    torch.backends.mha.set_fastpath_enabled(False)
    name = "%s.%s%s" % (arch, "dynamic" if dynamic else "fixed", "" if exporter == "dynamo" else ".script")
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    torch.manual_seed(0)
    model = fam.build().eval()
    baked = fam.baked and exporter == "script"
    shapes = fam.shapes if dynamic and not baked else [fam.shapes[1]] * 3
    fs = [fam.inputs(k, sh) for k, sh in enumerate(shapes)]
    path = os.path.join(d, "model.onnx")
    with torch.no_grad():
        example = fam.inputs(1, fam.example if fam.example and exporter == "dynamo" and dynamic else fam.shapes[1])
        if fam.post and not all(a.dtype != np.float16 for a in example.values()):
            example = {n: a.astype(np.float32) if a.dtype == np.float16 else a for n, a in example.items()}
        export_family(fam, model, example, path, dynamic, exporter)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outs = [o.name for o in sess.get_outputs()]
    for k, f in enumerate(fs):
        sd = os.path.join(d, "s%d" % k)
        os.makedirs(os.path.join(sd, "out"))
        for n, a in f.items():
            np.save(os.path.join(sd, n + ".npy"), a)
        for n, a in zip(outs, sess.run(None, f)):
            np.save(os.path.join(sd, "out", sanitize(n) + ".npy"), np.asarray(a))
    if fam.tol:
        with open(os.path.join(d, "tolerance"), "w") as t:
            t.write("%g %g\n" % fam.tol)
    if baked and dynamic:
        with open(os.path.join(d, "baked"), "w") as t:
            t.write("the TorchScript exporter baked the traced shape %s into the graph; onnxruntime runs it "
                    "only there\n" % (fam.shapes[1],))
    if fam.loop and dynamic:
        decode_loop(fam, sess, d)
    return name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--exporter", default="dynamo", choices=["dynamo", "script", "both"])
    a = ap.parse_args()
    ok, bad = [], []
    exporters = ["dynamo", "script"] if a.exporter == "both" else [a.exporter]
    for arch in list(ARCHS) + list(FAMILIES):
        for dynamic in (False, True):
            for exporter in exporters:
                tag = "%s %s %s" % (arch, "dynamic" if dynamic else "fixed", exporter)
                if a.only and not re.search(a.only, tag):
                    continue
                if arch in FAMILIES and exporter not in FAMILIES[arch].exporters:
                    continue
                try:
                    ok.append(one(arch, dynamic, exporter) if arch in ARCHS else one_family(arch, dynamic, exporter))
                    print("exported", ok[-1], flush=True)
                except Exception:
                    traceback.print_exc()
                    bad.append(tag)
                    print("FAILED export", tag, flush=True)
    print("exports: %d written, %d failed %s" % (len(ok), len(bad), bad))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
