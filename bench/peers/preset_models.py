"""The built-in presets (resources/presets/*.json) as PyTorch models, for the peers of
bench/engine_throughput: the same layers with the engine's defaults and semantics (pool
stride defaults to the kernel, average pooling excludes the padding, GELU is the erf form,
residual projections are bias-free 1x1 convolutions or linears), the same optimizer, and the
engine's count of forward FLOPs per sample (Layer::flopsPerSample: a multiply-add is two)."""
import json
import math
import pathlib

import torch
import torch.nn as nn

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


def _layer(spec, shape):
    """One layer spec for a per-sample input shape: (modules, output shape, forward FLOPs)."""
    kind = spec["type"]
    numel = math.prod(shape)
    if kind == "flatten":
        return [nn.Flatten()], [numel], 0
    if kind in ACTIVATIONS:
        return [ACTIVATIONS[kind]()], shape, 0
    if kind == "linear":
        units = spec["units"]
        modules = [nn.Linear(shape[0], units, bias=spec.get("bias", True))]
        flops = 2 * shape[0] * units
        shape = [units]
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
        body, out, flops = _sequential(spec["layers"], shape)
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


def _sequential(specs, shape):
    modules, flops = [], 0
    for spec in specs:
        layer_modules, shape, layer_flops = _layer(spec, shape)
        modules += layer_modules
        flops += layer_flops
    return nn.Sequential(*modules), shape, flops


def build_model(preset):
    """(model, forward FLOPs per sample) for a preset as load_preset returns it."""
    model, shape, flops = _sequential(preset["model"]["layers"], list(preset["model"]["input"]))
    classes = preset["model"].get("classes", 10)
    if shape != [classes]:
        raise ValueError(f"{preset['name']}: the model produces {shape}, not [{classes}]")
    return model, flops


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
