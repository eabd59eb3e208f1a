#!/usr/bin/env python3
"""A preset against the same model exported to ONNX and imported back: training speed of the
two in alternated rounds, one table. The exported graph holds the preset's layers as ONNX nodes
(Gemm, Conv, BatchNormalization, pools, Add; for a transformer LayerNormalization, MatMul,
Softmax, the reshapes and transposes of the heads and GELU's erf form), which the import
compiles into the engine's layers and graph ops; what the table shows is what importing costs a
model, not a different model.

    python3 bench/onnx_export_speed.py --build build --presets mlp,cnn,resnet-small --rounds 5 --steps 60
    python3 bench/onnx_export_speed.py --build build --presets vit-tiny,char-gpt --rounds 5 --steps 60

Each round trains the preset and then the exported file for the same steps on synthetic data
(the preset's shape; a language model's own text data, since its inputs are token ids), single
precision and threads as given, and takes the ratio of their
samples per second (mantissa-cli train's summary). Printed: the median ratio over the rounds
with the lowest and highest round; above 1 the imported model is faster. Run it on an otherwise
idle machine."""
import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile


ROOT = pathlib.Path(__file__).resolve().parent.parent


def data_for(preset):
    """Synthetic data, except for a model of token ids, which trains on its own text."""
    spec = json.loads((ROOT / "resources" / "presets" / f"{preset}.json").read_text())
    return "text" if spec["data"]["dataset"] == "text" else "synthetic"


def train(cli, target, db, args, data):
    source = ["--preset", target] if not target.endswith(".onnx") else [target]
    command = [cli, "train", *source, "--data", data, "--max-steps", str(args.steps),
               "--precision", args.precision, "--threads", str(args.threads), "--db", db]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.splitlines()[-1])


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--presets", default="mlp,cnn,resnet-small")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", default="fp32")
    args = parser.parse_args()
    cli = str(pathlib.Path(args.build) / "bin" / "mantissa-cli")
    work = tempfile.mkdtemp(prefix="onnx-export-speed-")
    db = os.path.join(work, "runs.sqlite")
    print(f"CPU: {cpu_name()}; {args.threads} threads; {args.steps} steps per run; {args.precision}; "
          f"{args.rounds} rounds alternating the preset and its exported file")
    print()
    print("| preset | preset samples/s | imported samples/s | imported vs preset |")
    print("| --- | --- | --- | --- |")
    for preset in args.presets.split(","):
        data = data_for(preset)
        first = train(cli, preset, db, argparse.Namespace(**{**vars(args), "steps": 2}), data)
        exported = os.path.join(work, preset + ".onnx")
        result = subprocess.run([cli, "export-model", str(first["run_id"]), "-o", exported, "--db", db],
                                capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"export-model {preset} failed:\n{result.stderr}")
        rates = {"preset": [], "imported": []}
        ratios = []
        for _ in range(args.rounds):
            own = train(cli, preset, db, args, data)["samples_per_s"]
            imported = train(cli, exported, db, args, data)["samples_per_s"]
            rates["preset"].append(own)
            rates["imported"].append(imported)
            ratios.append(imported / own)
        print(f"| {preset} | {statistics.median(rates['preset']):.0f} | {statistics.median(rates['imported']):.0f} | "
              f"{statistics.median(ratios):.2f}x [{min(ratios):.2f}-{max(ratios):.2f}] |")


if __name__ == "__main__":
    main()
