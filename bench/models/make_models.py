#!/usr/bin/env python3
"""Writes the bench's ONNX models from code, with random weights (no downloads).

The graphs are built node by node with onnx.helper in the shape PyTorch's
exporter (torch.onnx.export, opset 17) writes them: weights as initializers
already transposed for MatMul, GELU as Div/Erf/Add/Mul/Mul, attention as
Reshape/Transpose/MatMul/Div/Add/Softmax, LayerNormalization as one op,
BatchNormalization in inference form, shapes of Reshape as int64 constants.

  mlp.onnx      4 layers, 1024 wide, GELU, batch 256
  encoder.onnx  BERT-style: 4 layers, hidden 384, 6 heads, sequence 128, batch 8
  resnet.onnx   one stage of two basic blocks (3x3 conv, BatchNorm, ReLU), 64 channels, 56x56, batch 8

usage: make_models.py OUT_DIR [--only NAME...]
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class Builder:
    """Accumulates nodes and initializers; names follow the exporter's '/block/Op' style."""

    def __init__(self, seed):
        self.nodes, self.inits = [], []
        self.rng = np.random.default_rng(seed)
        self.count = 0

    def weight(self, name, shape, scale=None):
        fan_in = shape[0] if len(shape) == 2 else int(np.prod(shape[1:]))
        scale = scale if scale is not None else 1.0 / np.sqrt(fan_in)
        w = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(w, name))
        return name

    def const(self, name, value):
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type, inputs, name, **attrs):
        out = name + "_output_0"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=name, **attrs))
        return out

    def linear(self, x, n_in, n_out, prefix):
        w = self.weight(prefix + ".weight", [n_in, n_out])
        b = self.weight(prefix + ".bias", [n_out], scale=0.02)
        y = self.op("MatMul", [x, w], "/%s/MatMul" % prefix)
        return self.op("Add", [b, y], "/%s/Add" % prefix)

    def gelu(self, x, prefix):
        sqrt2 = self.const(prefix + "/Constant", np.float32(np.sqrt(2.0)))
        one = self.const(prefix + "/Constant_1", np.float32(1.0))
        half = self.const(prefix + "/Constant_2", np.float32(0.5))
        d = self.op("Div", [x, sqrt2], prefix + "/Div")
        e = self.op("Erf", [d], prefix + "/Erf")
        a = self.op("Add", [e, one], prefix + "/Add")
        m = self.op("Mul", [x, a], prefix + "/Mul")
        return self.op("Mul", [m, half], prefix + "/Mul_1")

    def layer_norm(self, x, n, prefix):
        g = self.const(prefix + ".weight", (1.0 + 0.1 * self.rng.standard_normal(n)).astype(np.float32))
        b = self.const(prefix + ".bias", (0.1 * self.rng.standard_normal(n)).astype(np.float32))
        return self.op("LayerNormalization", [x, g, b], "/%s/LayerNormalization" % prefix,
                       axis=-1, epsilon=1e-12)

    def model(self, inputs, outputs, name):
        g = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="xlac-bench")
        onnx.checker.check_model(m)
        return m


def mlp(batch=256, width=1024, layers=4):
    b = Builder(1)
    x = "input"
    for i in range(layers):
        x = b.linear(x, width, width, "layers.%d" % i)
        if i + 1 < layers:
            x = b.gelu(x, "/act%d" % i)
    b.nodes[-1].output[0] = "output"
    return b.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, width])],
                   [helper.make_tensor_value_info("output", TensorProto.FLOAT, [batch, width])], "mlp")


def attention(b, x, mask, batch, seq, hidden, heads, prefix):
    d = hidden // heads
    split = b.const(prefix + "/Constant_shape", np.array([batch, seq, heads, d], np.int64))
    merge = b.const(prefix + "/Constant_merge", np.array([batch, seq, hidden], np.int64))
    scale = b.const(prefix + "/Constant_scale", np.float32(np.sqrt(d)))

    def heads_of(name, perm):
        t = b.linear(x, hidden, hidden, "%s.%s" % (prefix.strip("/"), name))
        r = b.op("Reshape", [t, split], "%s/%s/Reshape" % (prefix, name))
        return b.op("Transpose", [r], "%s/%s/Transpose" % (prefix, name), perm=perm)

    q = heads_of("query", [0, 2, 1, 3])
    k = heads_of("key", [0, 2, 3, 1])
    v = heads_of("value", [0, 2, 1, 3])
    s = b.op("MatMul", [q, k], prefix + "/MatMul")
    s = b.op("Div", [s, scale], prefix + "/Div")
    s = b.op("Add", [s, mask], prefix + "/Add")
    p = b.op("Softmax", [s], prefix + "/Softmax", axis=-1)
    c = b.op("MatMul", [p, v], prefix + "/MatMul_1")
    c = b.op("Transpose", [c], prefix + "/Transpose", perm=[0, 2, 1, 3])
    c = b.op("Reshape", [c, merge], prefix + "/Reshape")
    return b.linear(c, hidden, hidden, prefix.strip("/") + ".output.dense")


def encoder(batch=8, seq=128, hidden=384, heads=6, layers=4):
    b = Builder(2)
    x, mask = "hidden_states", "attention_mask"
    for i in range(layers):
        p = "encoder.layer.%d" % i
        a = attention(b, x, mask, batch, seq, hidden, heads, "/%s/attention" % p)
        x = b.layer_norm(b.op("Add", [a, x], "/%s/attention/Add_res" % p), hidden, p + ".attention.LayerNorm")
        h = b.gelu(b.linear(x, hidden, 4 * hidden, p + ".intermediate.dense"), "/%s/intermediate/act" % p)
        o = b.linear(h, 4 * hidden, hidden, p + ".output.dense")
        x = b.layer_norm(b.op("Add", [o, x], "/%s/output/Add_res" % p), hidden, p + ".output.LayerNorm")
    b.nodes[-1].output[0] = "last_hidden_state"
    ins = [helper.make_tensor_value_info(x_, TensorProto.FLOAT, s) for x_, s in
           (("hidden_states", [batch, seq, hidden]), ("attention_mask", [batch, 1, 1, seq]))]
    out = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [batch, seq, hidden])]
    return b.model(ins, out, "encoder")


def conv_bn(b, x, c, prefix, relu):
    w = b.weight(prefix + ".conv.weight", [c, c, 3, 3])
    y = b.op("Conv", [x, w], "/%s/conv/Conv" % prefix, kernel_shape=[3, 3], pads=[1, 1, 1, 1],
             strides=[1, 1], dilations=[1, 1], group=1)
    bn = [b.const("%s.bn.%s" % (prefix, k), v.astype(np.float32)) for k, v in
          (("weight", 1.0 + 0.1 * b.rng.standard_normal(c)), ("bias", 0.1 * b.rng.standard_normal(c)),
           ("running_mean", 0.1 * b.rng.standard_normal(c)), ("running_var", 0.5 + b.rng.random(c)))]
    y = b.op("BatchNormalization", [y] + bn, "/%s/bn/BatchNormalization" % prefix, epsilon=1e-5)
    return b.op("Relu", [y], "/%s/relu/Relu" % prefix) if relu else y


def resnet(batch=8, c=64, hw=56, blocks=2):
    b = Builder(3)
    x = "input"
    for i in range(blocks):
        p = "layer1.%d" % i
        y = conv_bn(b, conv_bn(b, x, c, p + ".1", True), c, p + ".2", False)
        x = b.op("Relu", [b.op("Add", [y, x], "/%s/Add" % p)], "/%s/relu_out/Relu" % p)
    b.nodes[-1].output[0] = "output"
    shape = [batch, c, hw, hw]
    return b.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
                   [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)], "resnet")


MODELS = {"mlp": mlp, "encoder": encoder, "resnet": resnet}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--only", nargs="*", default=list(MODELS))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.only:
        path = os.path.join(args.out, name + ".onnx")
        onnx.save(MODELS[name](), path)
        print("wrote %s" % path)


if __name__ == "__main__":
    main()
