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


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                         nn.Linear(1024, 10))


def cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 256), nn.ReLU(), nn.Linear(256, 10))


def measure(make, batch, warmup, steps):
    torch.manual_seed(42)
    model = make()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
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
    for name, make in (("mlp", mlp), ("cnn", cnn)):
        print(f"| {name} | 128 | {measure(make, 128, args.warmup, args.steps):.0f} |", flush=True)


if __name__ == "__main__":
    main()
