#!/usr/bin/python3
"""Exports a small PyTorch CNN for 28x28 grey images (Fashion-MNIST) to ONNX, in training mode.

    /usr/bin/python3 examples/onnx/fashion_cnn.py fashion-cnn.onnx

Then train it in three precisions and compare them (docs/onnx.md, "From PyTorch to a comparison"):

    build/bin/mantissa-cli compare fashion-cnn.onnx --precisions fp32,mixed-bf16,mxfp8 --epochs 1

The weights are PyTorch's default initialisation for seed 0. Training mode (batch normalisation
with batch statistics, dropout kept) and no constant folding give the graph Mantissa trains; the
batch dimension is left dynamic, so the run's batch size applies.
"""
import sys

import torch
import torch.nn as nn


class FashionCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(64 * 7 * 7, 128),
            nn.ReLU(),
            nn.Dropout(0.25),
            nn.Linear(128, 10),
        )

    def forward(self, image):
        return self.classifier(self.features(image))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fashion_cnn.py OUT.onnx")
    torch.manual_seed(0)
    model = FashionCnn().train()
    torch.onnx.export(
        model,
        torch.zeros(1, 1, 28, 28),
        sys.argv[1],
        opset_version=17,
        training=torch.onnx.TrainingMode.TRAINING,
        do_constant_folding=False,
        input_names=["image"],
        output_names=["logits"],
        dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
    )
    print(f"wrote {sys.argv[1]}")


if __name__ == "__main__":
    main()
