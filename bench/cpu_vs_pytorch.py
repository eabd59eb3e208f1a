#!/usr/bin/env python3
"""Mantissa against PyTorch on the CPU, one table from one run: Mantissa fp32, mixed-fp16 and
mixed-bf16 (bench/engine_throughput) beside PyTorch fp32 and bf16 autocast
(bench/peers/torch_cpu_throughput.py, which sets PyTorch up at its best itself), per model,
measured on the same machine in alternated rounds (Mantissa, PyTorch, Mantissa, PyTorch, ...),
with the CPU they ran on.

    python3 bench/cpu_vs_pytorch.py --build build --threads 2 --steps 300 --rounds 5 \
        --presets mlp,cnn,vgg-small,resnet-small,vit-tiny,char-gpt
    python3 bench/cpu_vs_pytorch.py --presets vit-tiny --modes mixed-bf16 --rounds 5   # one cell

One run of a cell is not a claim: on a shared or throttling machine single cells moved by up
to 20% between runs, so every ratio is taken within a round (its two sides share the machine's
state of the moment) and printed as the median over the rounds with the lowest and highest
round beside it. Ratios above 1 favour Mantissa. "own fp32" compares a Mantissa mode with
Mantissa's fp32. Rates are in each model's unit: tokens/s for a language model (samples/s
times the context: a char-gpt sample is 128 tokens), images/s for an image model, else
samples/s. Run it on an otherwise idle machine: a second busy process halves both sides
unevenly."""
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


MANTISSA_MODES = ("fp32", "mixed-fp16", "mixed-bf16")


def peer_modes(modes):
    """PyTorch's modes that the Mantissa modes are compared with."""
    wanted = []
    if "fp32" in modes:
        wanted.append("fp32")
    if "mixed-bf16" in modes:
        wanted.append("bf16-autocast")
    return wanted


def spread(values):
    """'median [min-max]' of ratios, or '-' when there are none."""
    if not values:
        return "-"
    return f"{median(values):.2f}x [{min(values):.2f}-{max(values):.2f}]"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--models", "--presets", dest="models", default="mlp,cnn,vgg-small,resnet-small",
                        help="presets to measure, comma-separated")
    parser.add_argument("--modes", default=",".join(MANTISSA_MODES),
                        help="Mantissa modes to measure, comma-separated; PyTorch runs fp32 when fp32 is among "
                             "them and bf16 autocast when mixed-bf16 is")
    parser.add_argument("--rounds", type=int, default=5,
                        help="measure every preset this many times, Mantissa and PyTorch alternating, and report "
                             "each rate's median and each ratio's median with the range over the rounds (a "
                             "round's two sides share the machine's state of the moment; single cells moved by "
                             "up to 20%% between runs)")
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MANTISSA_MODES]
    if unknown or not modes:
        sys.exit(f"--modes: unknown mode {', '.join(unknown) or '(none)'}; expected some of {', '.join(MANTISSA_MODES)}")
    if args.rounds < 1:
        sys.exit("--rounds: at least 1")
    theirs_modes = peer_modes(modes)

    # Both sides spin between parallel regions (libgomp's default, which PyTorch keeps): the
    # bench wants an idle machine, and Mantissa would otherwise wait passively whenever the
    # load left by the previous cell reaches the core count (openmp_wait_policy), which is
    # 1.2x to 1.5x slower and made back-to-back cells disagree by up to 20%.
    os.environ.setdefault("OMP_WAIT_POLICY", "active")
    engine = str(ROOT / args.build / "bin" / "engine_throughput")
    peer = str(ROOT / "bench" / "peers" / "torch_cpu_throughput.py")
    print(f"CPU: {cpu_description()}; {args.threads} threads, {args.steps} timed steps per cell, "
          f"{args.rounds} rounds alternating Mantissa and PyTorch; "
          f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']} for both")
    header_printed = False
    rows = []
    for model in args.models.split(","):
        unit, factor = rate_unit(model)
        rounds = []  # per round: (Mantissa rate by mode, PyTorch rate by mode, Mantissa kernel path and % of peak)
        for _ in range(args.rounds):
            ours = run([engine, "--device", "cpu", "--threads", str(args.threads), "--steps", str(args.steps),
                        "--warmup", str(args.warmup), "--models", model, "--modes", ",".join(modes)])
            theirs = run([PEER_PYTHON, peer, "--threads", str(args.threads), "--steps", str(args.steps),
                          "--warmup", str(args.warmup), "--models", model,
                          "--modes", ",".join(theirs_modes)]) if theirs_modes else ""
            if not header_printed:
                for line in ours.splitlines()[:5]:
                    if line.startswith(("backend:", "GEMM peak", "kernels:", "fp16:")):
                        print("Mantissa " + line if not line.startswith("fp16:") else "         " + line)
                if theirs:
                    print(theirs.splitlines()[0])  # "PyTorch 1.13 ..., 2 threads; OpenBLAS core ..."
                header_printed = True
            m = {r[2]: r for r in table_rows(ours)}
            rate = {mode: float(m[mode][3]) * factor for mode in m}
            p = {r[2]: float(r[3]) * factor for r in table_rows(theirs)} if theirs else {}
            rounds.append((rate, p, {mode: (m[mode][9], m[mode][10]) for mode in m}))
        rows.append((model, unit, rounds))
        print(f"  measured {model}", file=sys.stderr, flush=True)

    # Each ratio is taken within a round, then summarised over the rounds.
    ratios = {
        "fp32 vs PyTorch fp32": lambda o, t: o["fp32"] / t["fp32"],
        "mixed-bf16 vs PyTorch bf16 autocast": lambda o, t: o["mixed-bf16"] / t["bf16-autocast"],
        "mixed-bf16 speedup over own fp32": lambda o, t: o["mixed-bf16"] / o["fp32"],
        "PyTorch bf16 autocast speedup over its fp32": lambda o, t: t["bf16-autocast"] / t["fp32"],
        "mixed-fp16 time vs own fp32": lambda o, t: o["fp32"] / o["mixed-fp16"],
    }
    needs = {
        "fp32 vs PyTorch fp32": {"fp32"},
        "mixed-bf16 vs PyTorch bf16 autocast": {"mixed-bf16"},
        "mixed-bf16 speedup over own fp32": {"fp32", "mixed-bf16"},
        "PyTorch bf16 autocast speedup over its fp32": {"fp32", "mixed-bf16"},
        "mixed-fp16 time vs own fp32": {"fp32", "mixed-fp16"},
    }
    shown = [name for name in ratios if needs[name] <= set(modes)]

    print()
    rate_columns = [f"Mantissa {mode}" for mode in modes] + [f"PyTorch {mode}" for mode in theirs_modes]
    print("| model | unit | " + " | ".join(rate_columns + shown) + " | kernels (% of GEMM peak) |")
    print("| --- | --- | " + " | ".join("---" for _ in rate_columns + shown) + " | --- |")
    for model, unit, rounds in rows:
        cells = [f"{median([r[0][mode] for r in rounds]):.0f}" for mode in modes]
        cells += [f"{median([r[1][mode] for r in rounds]):.0f}" for mode in theirs_modes]
        cells += [spread([ratios[name](r[0], r[1]) for r in rounds]) for name in shown]
        paths = ", ".join(f"{mode}: {rounds[-1][2][mode][0]} ({rounds[-1][2][mode][1]})" for mode in modes)
        print(f"| {model} | {unit} | " + " | ".join(cells) + f" | {paths} |")
    print(f"\nRates: median over {args.rounds} rounds, per second in each row's unit. Ratios: median of each "
          f"round's ratio [lowest-highest round]; above 1 favours Mantissa, except \"time vs own fp32\", where "
          f"below 1 is faster than fp32.")


if __name__ == "__main__":
    main()
