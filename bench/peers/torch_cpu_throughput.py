#!/usr/bin/env python3
"""PyTorch reference for bench/engine_throughput: the same models (W1 mlp, W2 cnn), batch
128, SGD lr 0.05 momentum 0.9, on random 28x28 data, timing training steps only.

    /usr/bin/python3 bench/peers/torch_cpu_throughput.py --threads 2 --steps 60

Debian's python3-torch is the reference (scripts/setup installs it with
MANTISSA_SETUP_PEERS=1)."""
import argparse
import time

import torch
import torch.nn as nn

from preset_models import build_model, build_optimizer, load_preset


def measure(preset, batch, warmup, steps):
    torch.manual_seed(42)
    model, _ = build_model(preset)
    optimizer = build_optimizer(preset, model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()

    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return batch * steps / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads, fp32")
    print("| model | batch | samples/s |")
    print("| --- | --- | --- |")
    for name in ("mlp", "cnn"):
        print(f"| {name} | 128 | {measure(load_preset(name), 128, args.warmup, args.steps):.0f} |", flush=True)


if __name__ == "__main__":
    main()
