"""The built-in presets (resources/presets/*.json) as PyTorch models, for the peers of
bench/engine_throughput: the same layers with the engine's defaults and semantics (pool
stride defaults to the kernel, average pooling excludes the padding, GELU is the erf form,
residual projections are bias-free 1x1 convolutions or linears), the same optimizer, and the
engine's count of forward FLOPs per sample (Layer::flopsPerSample: a multiply-add is two).

Transformer layers follow engine/model/layers: a token embedding looks up [B, T] integer ids;
the learned positional table is added; a patch embedding is a strided convolution whose
output becomes tokens [B, N, D]; layer and RMS norms (gain and bias, epsilon 1e-5) normalise
each token's features; attention has separate Q, K, V and output projections with bias,
scores QK^T/sqrt(d), the causal mask and a softmax (under autocast the softmax runs in fp32,
as the engine's default "softmax": "fp32"); the MLP is linear, GELU (erf), linear; the block
is pre-norm, x + attn(norm1(x)) then x + mlp(norm2(x)), hidden width 4 x width unless
"units" says otherwise; a "tied" head multiplies by the token embedding's table. Weights start
from PyTorch's own initialisations: the peers time steps, they do not compare trajectories."""
import json
import math
import pathlib

import torch
import torch.nn as nn
import torch.nn.functional as F

PRESET_DIR = pathlib.Path(__file__).resolve().parents[2] / "resources" / "presets"

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}


def load_preset(name):
    path = PRESET_DIR / f"{name}.json"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in PRESET_DIR.glob("*.json")))
        raise SystemExit(f"unknown preset {name!r}; known: {known}")
    return json.loads(path.read_text())


class Residual(nn.Module):
    def __init__(self, body, shortcut):
        super().__init__()
        self.body = body
        self.shortcut = shortcut

    def forward(self, x):
        return self.body(x) + self.shortcut(x)


class TokenEmbedding(nn.Module):
    """[B, T] integer ids to [B, T, D]."""

    def __init__(self, vocabulary, width):
        super().__init__()
        self.table = nn.Embedding(vocabulary, width)

    def forward(self, ids):
        return self.table(ids)


class PositionalEmbedding(nn.Module):
    """Adds a learned vector per position; the table may hold more positions than the input."""

    def __init__(self, length, width):
        super().__init__()
        self.table = nn.Parameter(torch.randn(length, width) * 0.02)

    def forward(self, x):
        return x + self.table[: x.shape[1]]


class PatchEmbedding(nn.Module):
    """[B, C, H, W] to tokens [B, (H/k)(W/k), D] by a k x k convolution of stride k."""

    def __init__(self, channels, width, kernel, bias):
        super().__init__()
        self.projection = nn.Conv2d(channels, width, kernel, stride=kernel, bias=bias)

    def forward(self, x):
        return self.projection(x).flatten(2).transpose(1, 2)


class RmsNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * gain + bias over the last axis (torch 1.13 has no nn.RMSNorm)."""

    def __init__(self, width, eps, bias):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(width))
        self.bias = nn.Parameter(torch.zeros(width)) if bias else None

    def forward(self, x):
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.gain
        return y + self.bias if self.bias is not None else y


class Attention(nn.Module):
    """Multi-head self-attention as engine/model/layers/attention.cpp computes it."""

    def __init__(self, width, heads, causal, dropout, bias):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.query = nn.Linear(width, width, bias=bias)
        self.key = nn.Linear(width, width, bias=bias)
        self.value = nn.Linear(width, width, bias=bias)
        self.output = nn.Linear(width, width, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        batch, tokens, width = x.shape
        head_dim = width // self.heads

        def split(t):
            return t.view(batch, tokens, self.heads, head_dim).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim))
        if self.causal:
            mask = torch.ones(tokens, tokens, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        probs = self.dropout(torch.softmax(scores, dim=-1))
        return self.output((probs @ v).transpose(1, 2).reshape(batch, tokens, width))


def _mlp(width, hidden, bias):
    return nn.Sequential(nn.Linear(width, hidden, bias=bias), nn.GELU(), nn.Linear(hidden, width, bias=bias))


class TransformerBlock(nn.Module):
    """Pre-norm: x + attention(norm1(x)), then x + mlp(norm2(x))."""

    def __init__(self, width, heads, hidden, causal, norm, eps, dropout):
        super().__init__()
        self.norm1 = _norm(norm, width, eps, True)
        self.attention = Attention(width, heads, causal, dropout, True)
        self.norm2 = _norm(norm, width, eps, True)
        self.mlp = _mlp(width, hidden, True)

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TiedHead(nn.Module):
    """A linear output head computing with the token embedding's table ([vocabulary, width])."""

    def __init__(self, embedding, bias):
        super().__init__()
        self.embedding = embedding  # shared: parameters() lists its table once
        self.bias = nn.Parameter(torch.zeros(embedding.table.num_embeddings)) if bias else None

    def forward(self, x):
        return F.linear(x, self.embedding.table.weight, self.bias)


def _norm(kind, width, eps, bias):
    if kind == "rmsnorm":
        return RmsNorm(width, eps, bias)
    return nn.LayerNorm(width, eps=eps, elementwise_affine=True) if bias else _bias_free_layer_norm(width, eps)


def _bias_free_layer_norm(width, eps):
    norm = nn.LayerNorm(width, eps=eps)
    norm.bias.requires_grad_(False)
    return norm


def _norm_flops(kind, values):
    return (7 if kind == "layernorm" else 5) * values


def _attention_flops(tokens, width):
    return 4 * 2 * tokens * width * width + 4 * tokens * tokens * width


def _sliding(extent, kernel, stride, pad):
    return (extent + 2 * pad - kernel) // stride + 1


def _projection(shape_in, shape_out):
    """The bias-free layer mapping a residual block's input to its body's output shape."""
    if len(shape_in) == 1:
        return nn.Linear(shape_in[0], shape_out[0], bias=False), 2 * shape_in[0] * shape_out[0]
    for stride in range(1, max(shape_in[1], shape_in[2]) + 1):
        if ((shape_in[1] - 1) // stride + 1, (shape_in[2] - 1) // stride + 1) == tuple(shape_out[1:]):
            conv = nn.Conv2d(shape_in[0], shape_out[0], 1, stride=stride, bias=False)
            return conv, 2 * shape_out[0] * shape_out[1] * shape_out[2] * shape_in[0]
    raise ValueError(f"no strided 1x1 projection maps {shape_in} to {shape_out}")


def _transformer_layer(spec, shape, context):
    """The transformer layers (docs/config.md "Transformer layers"), or None for another kind."""
    kind = spec["type"]
    numel = math.prod(shape)
    eps = spec.get("epsilon", 1e-5)
    if kind == "token_embedding":
        embedding = TokenEmbedding(spec["vocabulary"], spec["units"])
        context.setdefault("embedding", embedding)
        return [embedding], shape + [spec["units"]], 0
    if kind == "positional_embedding":
        return [PositionalEmbedding(spec.get("length", 0) or shape[0], shape[1])], shape, numel
    if kind == "patch_embedding":
        kernel, units = spec.get("kernel", 3), spec["units"]
        tokens = (shape[1] // kernel) * (shape[2] // kernel)
        module = PatchEmbedding(shape[0], units, kernel, spec.get("bias", True))
        return [module], [tokens, units], 2 * tokens * shape[0] * kernel * kernel * units
    if kind in ("layernorm", "rmsnorm"):
        return [_norm(kind, shape[-1], eps, spec.get("bias", True))], shape, _norm_flops(kind, numel)
    tokens = shape[0] if len(shape) == 2 else 1
    if kind == "attention":
        module = Attention(shape[1], spec.get("heads", 1), spec.get("causal", False),
                           spec.get("attention_dropout", 0.0), spec.get("bias", True))
        return [module], shape, _attention_flops(shape[0], shape[1])
    if kind == "mlp":
        width, hidden = shape[-1], spec["units"]
        return [_mlp(width, hidden, spec.get("bias", True))], shape, 4 * tokens * width * hidden
    if kind == "transformer":
        width = shape[1]
        hidden = spec.get("units", 0) or 4 * width
        norm = spec.get("norm", "layernorm")
        block = TransformerBlock(width, spec.get("heads", 1), hidden, spec.get("causal", False), norm, eps,
                                 spec.get("attention_dropout", 0.0))
        flops = 2 * _norm_flops(norm, numel) + _attention_flops(tokens, width) + 4 * tokens * width * hidden + 2 * numel
        return [block], shape, flops
    if kind == "linear" and spec.get("tied", False):
        embedding = context["embedding"]
        units = embedding.table.num_embeddings
        return [TiedHead(embedding, spec.get("bias", True))], shape[:-1] + [units], 2 * tokens * shape[-1] * units
    return None


def _layer(spec, shape, context):
    """One layer spec for a per-sample input shape: (modules, output shape, forward FLOPs).
    `context` carries what later layers refer to (the token embedding a tied head shares)."""
    transformer = _transformer_layer(spec, shape, context)
    if transformer is not None:
        return transformer
    kind = spec["type"]
    numel = math.prod(shape)
    if kind == "flatten":
        return [nn.Flatten()], [numel], 0
    if kind in ACTIVATIONS:
        return [ACTIVATIONS[kind]()], shape, 0
    if kind == "linear":
        # On tokens [T, D] a linear maps each token's features alike.
        units = spec["units"]
        modules = [nn.Linear(shape[-1], units, bias=spec.get("bias", True))]
        flops = 2 * numel * units
        shape = shape[:-1] + [units]
    elif kind == "conv2d":
        kernel, pad = spec.get("kernel", 3), spec.get("padding", 0)
        stride = spec.get("stride", 0) or 1
        out = [spec["filters"], _sliding(shape[1], kernel, stride, pad), _sliding(shape[2], kernel, stride, pad)]
        modules = [nn.Conv2d(shape[0], out[0], kernel, stride=stride, padding=pad, bias=spec.get("bias", True))]
        flops = 2 * math.prod(out) * shape[0] * kernel * kernel
        shape = out
    elif kind == "batchnorm":
        norm = nn.BatchNorm1d if len(shape) == 1 else nn.BatchNorm2d
        return [norm(shape[0], eps=spec.get("epsilon", 1e-5), momentum=spec.get("momentum", 0.1))], shape, 2 * numel
    elif kind in ("maxpool", "avgpool"):
        kernel, pad = spec.get("kernel", 3), spec.get("padding", 0)
        stride = spec.get("stride", 0) or kernel
        out = [shape[0], _sliding(shape[1], kernel, stride, pad), _sliding(shape[2], kernel, stride, pad)]
        if kind == "maxpool":
            pool = nn.MaxPool2d(kernel, stride=stride, padding=pad)
        else:
            pool = nn.AvgPool2d(kernel, stride=stride, padding=pad, count_include_pad=False)
        return [pool], out, math.prod(out) * kernel * kernel
    elif kind == "dropout":
        return [nn.Dropout(spec.get("rate", 0.5))], shape, numel
    elif kind == "residual":
        body, out, flops = _sequential(spec["layers"], shape, context)
        if spec.get("shortcut", "identity") == "identity":
            shortcut = nn.Identity()
        else:
            shortcut, projection_flops = _projection(shape, out)
            flops += projection_flops
        return [Residual(body, shortcut)], out, flops + math.prod(out)
    else:
        raise ValueError(f"layer type {kind!r} has no PyTorch equivalent here")
    activation = spec.get("activation", "")
    if activation:
        modules.append(ACTIVATIONS[activation]())
    return modules, shape, flops


def _sequential(specs, shape, context):
    modules, flops = [], 0
    for spec in specs:
        layer_modules, shape, layer_flops = _layer(spec, shape, context)
        modules += layer_modules
        flops += layer_flops
    return nn.Sequential(*modules), shape, flops


def build_model(preset):
    """(model, forward FLOPs per sample) for a preset as load_preset returns it."""
    model, shape, flops = _sequential(preset["model"]["layers"], list(preset["model"]["input"]), {})
    classes = preset["model"].get("classes", 10)
    expected = [preset["model"]["input"][0], classes] if is_language_model(preset) else [classes]
    if shape != expected:
        raise ValueError(f"{preset['name']}: the model produces {shape}, not {expected}")
    return model, flops


def is_language_model(preset):
    """A model over token ids: its input is [sequence length], its output one prediction per token."""
    layers = preset["model"]["layers"]
    return bool(layers) and layers[0]["type"] == "token_embedding"


def build_optimizer(preset, parameters):
    spec = preset.get("optimizer", {})
    kind, lr, decay = spec.get("type", "sgd"), spec.get("lr", 0.05), spec.get("weight_decay", 0.0)
    if kind == "sgd":
        return torch.optim.SGD(parameters, lr=lr, momentum=spec.get("momentum", 0.9),
                               nesterov=spec.get("nesterov", False), weight_decay=decay)
    betas = (spec.get("beta1", 0.9), spec.get("beta2", 0.999))
    adam = torch.optim.AdamW if kind == "adamw" else torch.optim.Adam
    return adam(parameters, lr=lr, betas=betas, eps=spec.get("epsilon", 1e-8), weight_decay=decay)


def batch_size(preset):
    return preset.get("training", {}).get("batch_size", 128)
