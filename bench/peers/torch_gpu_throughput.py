#!/usr/bin/env python3
"""PyTorch reference for `engine_throughput --device cuda`: the same preset models
(preset_models.py builds them from resources/presets), batch sizes and optimizers, trained
on random data of the presets' input shape, timing training steps only, in the table shape
bench/gpu/run_on_device.sh prints for Mantissa:

    | workload | precision | samples/s | achieved TFLOP/s | peak memory (MiB) |

    python3 bench/peers/torch_gpu_throughput.py [--models mlp,cnn,wide-mlp,resnet-small]
        [--modes fp32,mixed-fp16,mixed-bf16] [--steps 60] [--warmup 10] [--device cuda:0]

fp32 runs with TF32 off (cuBLAS and cuDNN), as Mantissa's fp32 is true fp32; --tf32 allows it.
mixed-fp16 is torch.autocast(float16) with a GradScaler, mixed-bf16 torch.autocast(bfloat16).
Each step copies its batch from pinned host memory, as Mantissa's Trainer uploads each batch.
Achieved TFLOP/s counts a training step as three forward passes of the engine's FLOP count.
--device cpu runs fp32 and mixed-bf16 on the CPU (a smoke test of this script without a GPU)."""
import argparse
import contextlib
import time

import torch
import torch.nn as nn

from preset_models import batch_size, build_model, build_optimizer, load_preset

MODES = ("fp32", "mixed-fp16", "mixed-bf16")
AUTOCAST_TYPES = {"fp32": None, "mixed-fp16": torch.float16, "mixed-bf16": torch.bfloat16}
HOST_BATCHES = 4  # distinct batches cycled through, so no step reuses the previous one's memory


def measure(preset, mode, device, warmup, steps):
    """(samples/s, peak bytes or None) of `steps` timed training steps after `warmup`."""
    torch.manual_seed(42)
    batch = batch_size(preset)
    model, _ = build_model(preset)
    model = model.to(device)
    optimizer = build_optimizer(preset, model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    on_gpu = device.type == "cuda"
    shape = [batch] + list(preset["model"]["input"])
    inputs = [torch.randn(shape) for _ in range(HOST_BATCHES)]
    labels = [torch.randint(0, preset["model"].get("classes", 10), (batch,)) for _ in range(HOST_BATCHES)]
    if on_gpu:
        inputs = [x.pin_memory() for x in inputs]
        labels = [y.pin_memory() for y in labels]
    dtype = AUTOCAST_TYPES[mode]
    scaler = torch.cuda.amp.GradScaler() if mode == "mixed-fp16" else None

    def autocast():
        if dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=device.type, dtype=dtype)

    def step(i):
        x = inputs[i % HOST_BATCHES].to(device, non_blocking=True)
        y = labels[i % HOST_BATCHES].to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            loss = loss_fn(model(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()

    for i in range(warmup):
        step(i)
    if on_gpu:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    start = time.perf_counter()
    for i in range(steps):
        step(i)
    if on_gpu:
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated(device) if on_gpu else None
    return batch * steps / seconds, peak


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="mlp,cnn,wide-mlp,resnet-small")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tf32", action="store_true", help="let fp32 matmuls and convolutions use TF32")
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"torch {torch.__version__} sees no CUDA device; try --device cpu")
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.backends.cudnn.benchmark = True
    modes = [m for m in args.modes.split(",") if m]
    for mode in modes:
        if mode not in MODES:
            raise SystemExit(f"unknown precision {mode!r}; expected one of {', '.join(MODES)}")

    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"PyTorch {torch.__version__} on {where}; {args.steps} timed steps after {args.warmup} warm-up steps")
    print()
    print("| workload | precision | samples/s | achieved TFLOP/s | peak memory (MiB) |")
    print("| --- | --- | --- | --- | --- |")
    for name in [m for m in args.models.split(",") if m]:
        preset = load_preset(name)
        _, forward_flops = build_model(preset)
        for mode in modes:
            if device.type == "cpu" and mode == "mixed-fp16":
                print(f"| {name} | {mode} | n/a (fp16 autocast needs a GPU) | - | - |", flush=True)
                continue
            rate, peak = measure(preset, mode, device, args.warmup, args.steps)
            memory = f"{peak / 2**20:.1f}" if peak is not None else "-"
            print(f"| {name} | {mode} | {rate:.0f} | {3 * forward_flops * rate * 1e-12:.3f} | {memory} |", flush=True)


if __name__ == "__main__":
    main()
