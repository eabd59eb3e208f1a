#!/usr/bin/env python3
"""Mantissa against PyTorch on the CPU, one table from one run (issue 16): Mantissa fp32,
mixed-fp16 and mixed-bf16 (bench/engine_throughput) beside PyTorch fp32 and bf16 autocast
(bench/peers/torch_cpu_throughput.py, which sets PyTorch up at its best itself), per model,
measured back to back on the same machine, with the CPU they ran on.

    python3 bench/cpu_vs_pytorch.py --build build --threads 2 --steps 300 \
        --models mlp,cnn,vgg-small,resnet-small

Ratios above 1 favour Mantissa. "own fp32" is the speedup of a Mantissa mode over Mantissa's
fp32. Rates are in each model's unit: tokens/s for a language model (samples/s times the
context: a char-gpt sample is 128 tokens), images/s for an image model, else samples/s.
Run it on an otherwise idle machine: a second busy process halves both sides unevenly."""
import argparse
import json
import os
import pathlib
import re
from statistics import median
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PEER_PYTHON = "/usr/bin/python3"  # Debian's python3-torch lives there, whatever python3 is first on PATH


def table_rows(text):
    """The rows of the first markdown table in `text`, as lists of cells."""
    rows = []
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| ---"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows[1:] if rows else []


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr}{result.stdout}")
    return result.stdout


def rate_unit(model):
    """(unit, samples-to-unit factor) for a preset: tokens/s for a language model."""
    spec = json.loads((ROOT / "resources" / "presets" / f"{model}.json").read_text())["model"]
    if spec["layers"] and spec["layers"][0]["type"] == "token_embedding":
        return "tokens/s", spec["input"][0]
    return ("images/s" if len(spec["input"]) == 3 else "samples/s"), 1


def cpu_description():
    text = run(["lscpu"])
    model = re.search(r"^Model name:\s*(.+)$", text, re.M)
    flags = re.search(r"^Flags:\s*(.+)$", text, re.M)
    wanted = [f for f in (flags.group(1).split() if flags else [])
              if f in ("avx2", "fma", "f16c") or f.startswith("avx512") or f.startswith("amx")]
    return f"{model.group(1).strip() if model else 'unknown CPU'}; flags: {' '.join(wanted)}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--models", default="mlp,cnn,vgg-small,resnet-small")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure every model this many times, Mantissa and PyTorch alternating, and report "
                             "the median of each rate and of each round's ratio (a round's two sides share the "
                             "machine's state of the moment; single cells moved by up to 20%% between runs)")
    args = parser.parse_args()

    # Both sides spin between parallel regions (libgomp's default, which PyTorch keeps): the
    # bench wants an idle machine, and Mantissa would otherwise wait passively whenever the
    # load left by the previous cell reaches the core count (openmp_wait_policy), which is
    # 1.2x to 1.5x slower and made back-to-back cells disagree by up to 20%.
    os.environ.setdefault("OMP_WAIT_POLICY", "active")
    engine = str(ROOT / args.build / "bin" / "engine_throughput")
    peer = str(ROOT / "bench" / "peers" / "torch_cpu_throughput.py")
    print(f"CPU: {cpu_description()}; {args.threads} threads, {args.steps} timed steps per cell; "
          f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']} for both")
    header_printed = False
    rows = []
    for model in args.models.split(","):
        rounds = []
        for _ in range(max(1, args.rounds)):
            ours = run([engine, "--device", "cpu", "--threads", str(args.threads), "--steps", str(args.steps),
                        "--warmup", str(args.warmup), "--models", model, "--modes", "fp32,mixed-fp16,mixed-bf16"])
            theirs = run([PEER_PYTHON, peer, "--threads", str(args.threads), "--steps", str(args.steps),
                          "--warmup", str(args.warmup), "--models", model])
            if not header_printed:
                for line in ours.splitlines()[:5]:
                    if line.startswith(("backend:", "GEMM peak", "kernels:", "fp16:")):
                        print("Mantissa " + line if not line.startswith("fp16:") else "         " + line)
                print("PyTorch " + theirs.splitlines()[0])
                header_printed = True
            unit, factor = rate_unit(model)
            m = {r[2]: r for r in table_rows(ours)}
            p = {r[2]: float(r[3]) * factor for r in table_rows(theirs)}
            rate = {mode: float(m[mode][3]) * factor for mode in m}
            rounds.append((rate, p, {mode: m[mode][9] for mode in m}, {mode: m[mode][10] for mode in m}))
        rows.append((model, unit, rounds))
        print(f"  measured {model}", file=sys.stderr, flush=True)

    print()
    print("| model | unit | Mantissa fp32 | PyTorch fp32 | fp32 ratio | Mantissa mixed-fp16 | vs own fp32 "
          "| Mantissa mixed-bf16 | PyTorch bf16 autocast | bf16 ratio | vs own fp32 | % of GEMM peak (fp32 / bf16) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for model, unit, rounds in rows:
        rate = {mode: median([r[0][mode] for r in rounds]) for mode in rounds[0][0]}
        p = {mode: median([r[1][mode] for r in rounds]) for mode in rounds[0][1]}
        ratio = lambda f: median([f(r[0], r[1]) for r in rounds])  # noqa: E731 (median of each round's ratio)
        path, peak = rounds[-1][2], rounds[-1][3]
        print(f"| {model} | {unit} | {rate['fp32']:.0f} | {p['fp32']:.0f} "
              f"| {ratio(lambda o, t: o['fp32'] / t['fp32']):.2f}x "
              f"| {rate['mixed-fp16']:.0f} ({path['mixed-fp16']}) "
              f"| {ratio(lambda o, t: o['mixed-fp16'] / o['fp32']):.2f}x "
              f"| {rate['mixed-bf16']:.0f} ({path['mixed-bf16']}) | {p['bf16-autocast']:.0f} "
              f"| {ratio(lambda o, t: o['mixed-bf16'] / t['bf16-autocast']):.2f}x "
              f"| {ratio(lambda o, t: o['mixed-bf16'] / o['fp32']):.2f}x "
              f"| {peak['fp32']} / {peak['mixed-bf16']} |")
    if args.rounds > 1:
        print(f"\nMedians over {args.rounds} rounds (rates: median rate; ratios: median of each round's ratio).")
    print("\nRates per second in each row's unit; ratios above 1 favour Mantissa.")


if __name__ == "__main__":
    main()
