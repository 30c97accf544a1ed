"""The same computations as bench/graphs/*.xg, for the peers a user would
otherwise reach for: numpy, numexpr, jax.jit (XLA CPU) and TensorFlow with
XLA auto-clustering. Each builder takes the input arrays (a dict of numpy
arrays, named as in the graph) and returns a zero-argument callable that
runs the computation once and waits for its result.

A peer that cannot be imported is reported as missing by the harness."""

import os

SQRT_2_OVER_PI = 0.7978845608028654


# ---- numpy ---------------------------------------------------------------

def np_workloads(np):
    def gelu(x):
        return 0.5 * x * (1.0 + np.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))

    def softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def act_chain(x):
        g = 0.5 * x * (1.0 + _erf(np)(x * np.float32(0.7071067811865476)))
        return 1.0 / (1.0 + np.exp(-g)) * np.tanh(x) + g

    def layernorm(x, g, b):
        mu = x.mean(axis=1, keepdims=True)
        c = x - mu
        var = (c * c).mean(axis=1, keepdims=True)
        return c / np.sqrt(var + np.float32(1e-5)) * g + b

    def transformer(a):
        h = layernorm(a["x"], a["g1"], a["be1"])
        q, k, v = h @ a["wq"], h @ a["wk"], h @ a["wv"]
        p = softmax((q @ k.T) * np.float32(0.04419417382415922))
        x1 = a["x"] + (p @ v) @ a["wo"]
        h2 = layernorm(x1, a["g2"], a["be2"])
        return x1 + gelu(h2 @ a["w1"]) @ a["w2"]

    def attention(a):
        sc = np.matmul(a["q"], np.swapaxes(a["k"], -1, -2)) * np.float32(0.125) + a["mask"]
        e = np.exp(sc - sc.max(axis=-1, keepdims=True))
        return np.matmul(e / e.sum(axis=-1, keepdims=True), a["v"])

    f32 = np.float32
    return {
        "fused_sum": lambda a: (a["x"] + a["y"] * a["z"]).sum(),
        "dynamic_batch": lambda a: (a["x"] + a["y"] * a["z"]).sum(),
        "gelu": lambda a: gelu(a["x"]),
        "softmax_rows": lambda a: softmax(a["x"]),
        "layernorm_rows": lambda a: layernorm(a["x"], a["gamma"], a["beta"]),
        "column_sum": lambda a: (a["x"] * a["y"]).sum(axis=0),
        "mlp_block": lambda a: gelu(a["x"] @ a["w1"] + a["b1"]) @ a["w2"] + a["b2"] + a["x"],
        "adam_step": lambda a: _adam(np, a, f32),
        "transformer_block": transformer,
        "attention_small": attention,
        "attention_large": attention,
        "act_chain": lambda a: act_chain(a["x"]),
        "softmax_small": lambda a: softmax(a["x"]),
        "softmax_16x1024": lambda a: softmax(a["x"]),
    }


def _erf(np):
    """erf for numpy (which has none): scipy's, jax's through the shim, or A&S 7.1.26 (1.5e-7)."""
    if hasattr(np, "erf"):
        return np.erf
    try:
        from scipy.special import erf
        return erf
    except ImportError:
        def erf(x):
            a = np.abs(x)
            t = 1.0 / (1.0 + 0.3275911 * a)
            p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
            return np.sign(x) * (1.0 - p * np.exp(-a * a))
        return erf


def _adam(xp, a, f32):
    m = f32(0.9) * a["m"] + f32(0.1) * a["g"]
    v = f32(0.999) * a["v"] + f32(0.001) * (a["g"] * a["g"])
    p = a["p"] - f32(0.001) * (m / (xp.sqrt(v) + f32(1e-8)))
    return p, m, v


def build_numpy(name, arrays):
    import numpy as np
    fn = np_workloads(np)[name]
    return lambda: fn(arrays)


# ---- numexpr -------------------------------------------------------------

def build_numexpr(name, arrays):
    """numexpr evaluates elementwise expressions (and a final sum) in one
    multithreaded pass; matmuls and row reductions stay numpy, as a numexpr
    user would write them."""
    import numexpr as ne
    import numpy as np
    a = arrays
    gelu_of = "0.5 * {v} * (1 + tanh(0.7978845608028654 * ({v} + 0.044715 * {v} * {v} * {v})))".format
    gelu = gelu_of(v="h")

    def layernorm(x, g, b):
        mu = x.mean(axis=1, keepdims=True)
        c = ne.evaluate("x - mu")
        var = ne.evaluate("c * c").mean(axis=1, keepdims=True)
        return ne.evaluate("c / sqrt(var + 1e-5) * g + b")

    def softmax(x):
        mx = x.max(axis=-1, keepdims=True)
        e = ne.evaluate("exp(x - mx)")
        s = e.sum(axis=-1, keepdims=True)
        return ne.evaluate("e / s")

    def transformer():
        h = layernorm(a["x"], a["g1"], a["be1"])
        q, k, v = h @ a["wq"], h @ a["wk"], h @ a["wv"]
        sc = q @ k.T
        p = softmax(ne.evaluate("sc * 0.04419417382415922"))
        x = a["x"]
        o = (p @ v) @ a["wo"]
        x1 = ne.evaluate("x + o")
        h = layernorm(x1, a["g2"], a["be2"]) @ a["w1"]
        f = ne.evaluate(gelu) @ a["w2"]
        return ne.evaluate("x1 + f")

    def mlp():
        h = a["x"] @ a["w1"] + a["b1"]
        f = ne.evaluate(gelu) @ a["w2"]
        b2, x = a["b2"], a["x"]
        return ne.evaluate("f + b2 + x")

    def adam():
        p, g, m, v = a["p"], a["g"], a["m"], a["v"]
        m2 = ne.evaluate("0.9 * m + 0.1 * g")
        v2 = ne.evaluate("0.999 * v + 0.001 * g * g")
        return ne.evaluate("p - 0.001 * (m2 / (sqrt(v2) + 1e-8))"), m2, v2

    table = {
        "fused_sum": lambda: ne.evaluate("sum(x + y * z)", local_dict=a),
        "dynamic_batch": lambda: ne.evaluate("sum(x + y * z)", local_dict=a),
        "gelu": lambda: ne.evaluate(gelu_of(v="x"), local_dict=a),
        "softmax_rows": lambda: softmax(a["x"]),
        "layernorm_rows": lambda: layernorm(a["x"], a["gamma"], a["beta"]),
        "column_sum": lambda: ne.evaluate("x * y", local_dict=a).sum(axis=0),
        "mlp_block": mlp,
        "adam_step": adam,
        "transformer_block": transformer,
        "attention_small": lambda np=np: np_workloads(np)["attention_small"](a),  # matmuls, rows: numpy
        "attention_large": lambda np=np: np_workloads(np)["attention_large"](a),
        "softmax_small": lambda: softmax(a["x"]),
        "softmax_16x1024": lambda: softmax(a["x"]),
    }  # no act_chain: numexpr has no erf (reported missing)
    del np
    return table[name]


# ---- jax.jit -------------------------------------------------------------

def build_jax(name, arrays):
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_platforms", "cpu")
    fn = jax.jit(np_workloads(_JnpShim(jnp))[name])
    dev = {k: jax.device_put(v) for k, v in arrays.items()}

    def run():
        out = fn(dev)
        jax.block_until_ready(out)
        return out
    return run


class _JnpShim:
    """numpy-like namespace over jax.numpy (float32 constants included)."""

    def __init__(self, jnp):
        self._jnp = jnp
        self.float32 = jnp.float32

    def __getattr__(self, k):
        if k == "erf":
            from jax.scipy.special import erf
            return erf
        return getattr(self._jnp, k)


# ---- TensorFlow with XLA auto-clustering ----------------------------------

def tf_workloads(tf):
    rs = tf.reduce_sum
    f32 = lambda v: tf.constant(v, tf.float32)

    def gelu(x):
        return f32(0.5) * x * (f32(1.0) + tf.tanh(f32(SQRT_2_OVER_PI) * (x + f32(0.044715) * x * x * x)))

    def softmax(x):
        e = tf.exp(x - tf.reduce_max(x, axis=-1, keepdims=True))
        return e / rs(e, axis=-1, keepdims=True)

    def act_chain(x):
        g = f32(0.5) * x * (f32(1.0) + tf.math.erf(x * f32(0.7071067811865476)))
        return tf.sigmoid(g) * tf.tanh(x) + g

    def layernorm(x, g, b):
        c = x - tf.reduce_mean(x, axis=1, keepdims=True)
        var = tf.reduce_mean(c * c, axis=1, keepdims=True)
        return c * tf.math.rsqrt(var + f32(1e-5)) * g + b

    def transformer(a):
        h = layernorm(a["x"], a["g1"], a["be1"])
        q, k, v = h @ a["wq"], h @ a["wk"], h @ a["wv"]
        p = softmax(tf.matmul(q, k, transpose_b=True) * f32(0.04419417382415922))
        x1 = a["x"] + (p @ v) @ a["wo"]
        h2 = layernorm(x1, a["g2"], a["be2"])
        return x1 + gelu(h2 @ a["w1"]) @ a["w2"]

    def attention(a):
        sc = tf.matmul(a["q"], a["k"], transpose_b=True) * f32(0.125) + a["mask"]
        e = tf.exp(sc - tf.reduce_max(sc, axis=-1, keepdims=True))
        return tf.matmul(e / rs(e, axis=-1, keepdims=True), a["v"])

    return {
        "fused_sum": lambda a: rs(a["x"] + a["y"] * a["z"]),
        "dynamic_batch": lambda a: rs(a["x"] + a["y"] * a["z"]),
        "gelu": lambda a: gelu(a["x"]),
        "softmax_rows": lambda a: softmax(a["x"]),
        "layernorm_rows": lambda a: layernorm(a["x"], a["gamma"], a["beta"]),
        "column_sum": lambda a: rs(a["x"] * a["y"], axis=0),
        "mlp_block": lambda a: gelu(a["x"] @ a["w1"] + a["b1"]) @ a["w2"] + a["b2"] + a["x"],
        "adam_step": lambda a: _adam(tf, a, f32),
        "transformer_block": transformer,
        "attention_small": attention,
        "attention_large": attention,
        "act_chain": lambda a: act_chain(a["x"]),
        "softmax_small": lambda a: softmax(a["x"]),
        "softmax_16x1024": lambda a: softmax(a["x"]),
    }


def build_tensorflow(name, arrays):
    os.environ.setdefault("TF_XLA_FLAGS", "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    fn = tf.function(tf_workloads(tf)[name])
    dev = {k: tf.constant(v) for k, v in arrays.items()}

    def run():
        out = fn(dev)
        if isinstance(out, tuple):
            return [o.numpy() for o in out]
        return out.numpy()
    return run


PEERS = {
    "numpy": build_numpy,
    "numexpr": build_numexpr,
    "jax.jit": build_jax,
    "tf-autojit": build_tensorflow,
}



# ---- GPU peers (scripts/gpu.sh): torch.compile and jax.jit on the device ----

def torch_workloads(torch):
    def gelu(x):
        return 0.5 * x * (1.0 + torch.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))

    def softmax(x):
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)

    def act_chain(x):
        g = 0.5 * x * (1.0 + torch.erf(x * 0.7071067811865476))
        return torch.sigmoid(g) * torch.tanh(x) + g

    def layernorm(x, g, b):
        mu = x.mean(dim=1, keepdim=True)
        c = x - mu
        var = (c * c).mean(dim=1, keepdim=True)
        return c / torch.sqrt(var + 1e-5) * g + b

    def transformer(a):
        h = layernorm(a["x"], a["g1"], a["be1"])
        q, k, v = h @ a["wq"], h @ a["wk"], h @ a["wv"]
        p = softmax((q @ k.T) * 0.04419417382415922)
        x1 = a["x"] + (p @ v) @ a["wo"]
        h2 = layernorm(x1, a["g2"], a["be2"])
        return x1 + gelu(h2 @ a["w1"]) @ a["w2"]

    def attention(a):
        sc = a["q"] @ a["k"].transpose(-1, -2) * 0.125 + a["mask"]
        e = torch.exp(sc - sc.amax(dim=-1, keepdim=True))
        return (e / e.sum(dim=-1, keepdim=True)) @ a["v"]

    return {
        "fused_sum": lambda a: (a["x"] + a["y"] * a["z"]).sum(),
        "dynamic_batch": lambda a: (a["x"] + a["y"] * a["z"]).sum(),
        "gelu": lambda a: gelu(a["x"]),
        "softmax_rows": lambda a: softmax(a["x"]),
        "layernorm_rows": lambda a: layernorm(a["x"], a["gamma"], a["beta"]),
        "column_sum": lambda a: (a["x"] * a["y"]).sum(dim=0),
        "mlp_block": lambda a: gelu(a["x"] @ a["w1"] + a["b1"]) @ a["w2"] + a["b2"] + a["x"],
        "adam_step": lambda a: _adam(torch, a, float),
        "transformer_block": transformer,
        "attention_small": attention,
        "attention_large": attention,
        "act_chain": lambda a: act_chain(a["x"]),
        "softmax_small": lambda a: softmax(a["x"]),
        "softmax_16x1024": lambda a: softmax(a["x"]),
    }


def build_torch_gpu(name, arrays):
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    fn = torch.compile(torch_workloads(torch)[name])
    dev = {k: torch.from_numpy(v).cuda() for k, v in arrays.items()}

    def run():
        out = fn(dev)
        torch.cuda.synchronize()
        return out  # left on the device: the harness copies it back once, to check it
    return run


def build_jax_gpu(name, arrays):
    import jax
    import jax.numpy as jnp
    gpus = jax.devices("gpu")  # raises where jax has no GPU backend
    fn = jax.jit(np_workloads(_JnpShim(jnp))[name])
    dev = {k: jax.device_put(v, gpus[0]) for k, v in arrays.items()}

    def run():
        out = fn(dev)
        jax.block_until_ready(out)
        return out
    return run


GPU_PEERS = {
    "torch.compile": build_torch_gpu,
    "jax.jit-gpu": build_jax_gpu,
}
