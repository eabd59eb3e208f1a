#!/usr/bin/env python3
"""Exports the PyTorch reference models to ONNX with one batch of reference numbers.

For each model NAME it writes, into the output folder:
  NAME.onnx  the model, exported for training (TrainingMode.TRAINING, no constant folding),
  NAME.npz   input, labels, logits, loss and grad/<initializer name> for every parameter, and
             logits64 and grad64/<initializer name>: the same batch run in float64,
  NAME.reference/KEY.pb  each of those arrays as an onnx.TensorProto,
  NAME.json  the export's facts: opset, input shape, batch, parameter count, and the map from
             each ONNX initializer name to the torch parameter it holds.
Random weights from fixed seeds; nothing is downloaded. Usage: make_fixtures.py OUT_DIR [NAME...]
"""
import copy
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn as nn
import torchvision

BATCH = 4
CLASSES = 10


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3 * 8 * 8, 64)
        self.fc2 = nn.Linear(64, 32)
        self.head = nn.Linear(32, CLASSES)

    def forward(self, x):
        x = torch.flatten(x, 1)
        x = torch.relu(self.fc1(x))
        x = torch.tanh(self.fc2(x))
        return self.head(x)


class CausalTransformer(nn.Module):
    """A GPT-style language model: token and position embeddings, causal encoder layers, a head
    tied to the token embedding (one initializer feeding two ops)."""

    def __init__(self, vocab=50, width=32, heads=4, layers=2, context=16):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(context, width)
        layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=64, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.head_scale = width**-0.5  # logits of order one, so that the loss starts near log(vocab)

    def forward(self, tokens):
        length = tokens.shape[1]
        steps = torch.arange(length, device=tokens.device)
        # True above the diagonal: a position sees only itself and the ones before it.
        mask = steps.unsqueeze(0) > steps.unsqueeze(1)
        x = self.tokens(tokens) + self.positions(steps).unsqueeze(0)
        x = self.encoder(x, mask=mask)
        return (self.norm(x) @ self.tokens.weight.t()) * self.head_scale


class Decoder(nn.Module):
    """An upsampling decoder's transposed convolutions and a masked_fill: ConvTranspose with
    groups, a stride, padding and output_padding, then one dilated and without bias; Where on a
    constant mask (a bool buffer, an initializer of the file) with a constant and with both of its
    value inputs computed."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, stride=2, padding=1)  # 8x8 -> 4x4
        self.up1 = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1, groups=2)  # -> 8x8
        self.up2 = nn.ConvTranspose2d(6, 4, 3, stride=2, padding=2, output_padding=1, dilation=2, bias=False)  # 16x16
        self.register_buffer("mask", torch.ones(16, 16).triu(1).bool())
        self.head = nn.Linear(4 * 16 * 16, CLASSES)

    def forward(self, x):
        x = torch.relu(self.down(x))
        x = torch.tanh(self.up1(x))
        x = self.up2(x)
        x = torch.where(self.mask, x, torch.sigmoid(x))
        x = x.masked_fill(self.mask.t(), 0.0)
        return self.head(torch.flatten(x, 1))


class SequenceCnn(nn.Module):
    """The 1-D forms, which run on the 2-D kernels as images of height 1: Conv1d grouped, strided,
    padded and dilated, MaxPool1d padded, ConvTranspose1d strided with output_padding, and
    AvgPool1d padded (without counting the padding: PyTorch exports count_include_pad=True in 1-D
    as a Pad node before the pool)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 3, stride=2, padding=2, dilation=2, groups=2)  # 24 -> 11
        self.pool = nn.MaxPool1d(3, stride=2, padding=1)  # -> 6
        self.up = nn.ConvTranspose1d(8, 6, 3, stride=2, padding=1, output_padding=1)  # -> 12
        self.average = nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False)  # -> 6
        self.head = nn.Linear(6 * 6, CLASSES)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv(x)))
        x = self.average(torch.tanh(self.up(x)))
        return self.head(torch.flatten(x, 1))


def vision_transformer():
    model = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                                 hidden_dim=64, mlp_dim=128, num_classes=CLASSES)
    # torchvision starts the head and the class token at zero, which would leave every gradient
    # but the head's zero: a reference that checks nothing upstream.
    model.heads.head.reset_parameters()
    nn.init.normal_(model.class_token, std=0.02)
    return model


# name: (constructor, per-sample input shape, token vocabulary (None: images), opset, dynamic batch)
MODELS = {
    "mlp": (Mlp, (3, 8, 8), None, 13, False),
    "resnet18": (lambda: torchvision.models.resnet18(num_classes=CLASSES), (3, 32, 32), None, 13, False),
    # Its classifier's dropout at 0: torch's reference batch would otherwise carry a random mask
    # that no other implementation draws (the Dropout node is exported all the same). 64x64, not
    # 32x32: at 32 its last five stages are 1x1 pixels, whose batch norms over four values
    # amplify fp32's rounding until it flips ReLU6's gradient masks (where a value lies within
    # 5e-3 of 0), and one flip there changes every gradient upstream by a fifth.
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(num_classes=CLASSES, dropout=0.0), (3, 64, 64), None, 15,
                     False),
    "vit": (vision_transformer, (3, 32, 32), None, 17, True),
    "decoder": (Decoder, (3, 8, 8), None, 17, False),
    "sequence_cnn": (SequenceCnn, (4, 24), None, 17, False),
    "causal_transformer": (CausalTransformer, (16,), 50, 17, True),
}


def initializer_to_parameter(model_proto, module):
    """Maps each initializer holding a torch parameter to that parameter's name: by name when the
    exporter kept it, else by the unique parameter with the same values."""
    parameters = dict(module.named_parameters())
    mapping = {}
    for init in model_proto.graph.initializer:
        if init.name in parameters:
            mapping[init.name] = init.name
            continue
        values = numpy_helper.to_array(init)
        matches = [n for n, p in parameters.items()
                   if tuple(p.shape) == values.shape and np.array_equal(p.detach().numpy(), values)]
        if len(matches) == 1:
            mapping[init.name] = matches[0]
    return mapping


def export(name, out_dir):
    make, sample_shape, vocab, opset, dynamic_batch = MODELS[name]
    torch.manual_seed(1234)
    model = make()
    model.train()
    generator = torch.Generator().manual_seed(99)
    if vocab is None:
        x = torch.randn((BATCH,) + sample_shape, generator=generator)
        labels = torch.randint(0, CLASSES, (BATCH,), generator=generator)
    else:
        x = torch.randint(0, vocab, (BATCH,) + sample_shape, generator=generator)
        labels = torch.randint(0, vocab, (BATCH,) + sample_shape, generator=generator)

    # Exporting runs the model once, which moves batch-norm running statistics: take the
    # reference numbers from the weights as they were.
    state = copy.deepcopy(model.state_dict())
    onnx_path = os.path.join(out_dir, name + ".onnx")
    dynamic_axes = {"input": {0: "batch"}, "logits": {0: "batch"}} if dynamic_batch else None
    torch.onnx.export(model, (x,), onnx_path, input_names=["input"], output_names=["logits"], opset_version=opset,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False, dynamic_axes=dynamic_axes)
    model.load_state_dict(state)
    # The same batch in float64, taken as the truth that both fp32 results (PyTorch's and the
    # engine's) are measured against: some of these networks are conditioned so that fp32's
    # rounding alone moves a gradient by 1e-4 of its largest element, or a gradient that is 0 in
    # exact arithmetic (a bias a later batch norm cancels) is all rounding.
    model64 = copy.deepcopy(model).double()

    model.zero_grad()
    logits = model(x)
    loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
    loss.backward()

    proto = onnx.load(onnx_path)
    mapping = initializer_to_parameter(proto, model)
    parameters = dict(model.named_parameters())
    unmapped = sorted(set(parameters) - set(mapping.values()))
    if unmapped:
        raise SystemExit(f"{name}: no ONNX initializer holds the torch parameters {unmapped}")
    for parameter_name, parameter in parameters.items():
        if not parameter.grad.abs().max() > 0:
            raise SystemExit(f"{name}: the gradient of {parameter_name} is zero, a reference that checks nothing")
    arrays = {"input": x.numpy(), "labels": labels.numpy(), "logits": logits.detach().numpy(),
              "loss": np.array(loss.item(), dtype=np.float32)}
    for init_name, parameter_name in mapping.items():
        arrays["grad/" + init_name] = parameters[parameter_name].grad.numpy()
    logits64 = model64(x.double() if vocab is None else x)
    nn.functional.cross_entropy(logits64.reshape(-1, logits64.shape[-1]), labels.reshape(-1)).backward()
    arrays["logits64"] = logits64.detach().numpy()
    parameters64 = dict(model64.named_parameters())
    for init_name, parameter_name in mapping.items():
        arrays["grad64/" + init_name] = parameters64[parameter_name].grad.numpy()
    np.savez(os.path.join(out_dir, name + ".npz"), **arrays)
    # The same arrays as TensorProto files (NAME.reference/KEY.pb), which the C++ tests read with
    # the reader ONNX's own test data needs, rather than a reader of numpy's format.
    for key, array in arrays.items():
        path = os.path.join(out_dir, name + ".reference", key + ".pb")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(array), key).SerializeToString())
    facts = {
        "opset": opset,
        "batch": BATCH,
        "sample_shape": list(sample_shape),
        "dynamic_batch": dynamic_batch,
        "parameter_tensors": len(parameters),
        "parameter_elements": sum(p.numel() for p in parameters.values()),
        "initializer_to_parameter": mapping,
        "loss": loss.item(),
        "logits_shape": list(logits.shape),
    }
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(facts, f, indent=1, sort_keys=True)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    for name in sys.argv[2:] or MODELS:
        export(name, out_dir)


if __name__ == "__main__":
    main()
