#!/usr/bin/env python3
"""The worked example of docs/onnx.md stays true: examples/onnx/fashion_cnn.py exports a model
that `mantissa-cli inspect` reads whole and `train` trains under a recipe, naming the GEMMs it
keeps. Usage: example_model_test.py PYTHON3 MANTISSA_CLI EXAMPLE_SCRIPT WORK_DIR"""
import os
import shutil
import subprocess
import sys

python3, cli, script, work = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
model = os.path.join(work, "fashion-cnn.onnx")
failures = []


def run(*command):
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def expect(condition, what, result):
    if not condition:
        failures.append(f"{what}\n  exit {result.returncode}\n  stdout: {result.stdout[-2000:]}\n  stderr: {result.stderr[-2000:]}")


result = run(python3, script, model)
expect(result.returncode == 0 and os.path.exists(model), "the example script writes the model", result)

result = run(cli, "inspect", model)
expect(result.returncode == 0, "inspect exits 0", result)
expect("13 nodes, 10 parameter tensors, 421738 parameters, 8.4823 M FLOPs per sample" in result.stdout,
       "the totals docs/onnx.md quotes", result)
expect("NO" not in result.stdout.split(), "every node supported", result)

result = run(cli, "train", model, "--data", "synthetic", "--precision", "mxfp4", "--max-steps", "2",
             "--db", os.path.join(work, "runs.sqlite"))
expect(result.returncode == 0, "two steps of mxfp4 train", result)
expect("mxfp4: 2 of 4 GEMMs quantised; kept unquantised: /features/features.0/Conv (keep_first_last: the first GEMM), "
       "/classifier/classifier.4/Gemm (keep_first_last: the last GEMM)" in result.stderr + result.stdout,
       "the recipe line docs/onnx.md quotes", result)

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("the example model exports, inspects and trains as docs/onnx.md says")
